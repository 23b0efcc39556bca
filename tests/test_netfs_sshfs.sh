#!/bin/sh
# SPDX-License-Identifier: MIT
# test_netfs_sshfs.sh - a file on a REAL sshfs under a real hotmapd (issue
# 30): an sshd started here on 127.0.0.1 (a free port, keys made for the
# run, a config file of its own) serves a directory, sshfs mounts it, and
# a file of random bytes is read through the mount.  tests/test_netfs
# covers the same ground with faultfs mounted under the subtype sshfs;
# this is the file system itself.
#
# What it asserts: hotmapctl stat says the file system is fuse.sshfs, a
# network one, read with pread; hotmapctl read (the library reads with
# pread in its own process) and hotmapctl read --by-path (the daemon
# opens the file and reads it) return the local copy's bytes at the
# start, across 1 MiB boundaries and past the end; and, when the Python
# binding is built, the library's client-side network path (File.stat's
# reason, read_stats: read with pread in the process, none through the
# daemon) with every byte right through pread, readinto, views and batches.
#
# Skips, saying why, without root, /dev/fuse, sshfs, sshd, ssh-keygen or
# fusermount, or when sshd does not start or the mount fails; with
# HOTMAP_REQUIRE_FUSE=1 (CI, whose contrib/dev/deps.sh installs sshfs and
# openssh-server, and which runs as root) each of those is a failure.
# Prints TAP; the plan comes at the end.  Everything lives in one mktemp
# directory; the mount is unmounted and sshd killed at exit, whatever failed.

LC_ALL=C
export LC_ALL

HOTMAPD=${HOTMAPD:-daemon/hotmapd}
HOTMAPCTL=${HOTMAPCTL:-hotmapctl/hotmapctl}
case $HOTMAPD in /*) ;; *) HOTMAPD=$PWD/$HOTMAPD ;; esac
case $HOTMAPCTL in /*) ;; *) HOTMAPCTL=$PWD/$HOTMAPCTL ;; esac

. "${TESTS_SRCDIR:-$(dirname "$0")}/tap.sh"

dir=
hm_pid=
holder=
sshd_pid=
sshfs_pid=
fusermount=

# unavailable WHY: skip the whole test, or with HOTMAP_REQUIRE_FUSE=1 fail.
unavailable() {
	if [ "${HOTMAP_REQUIRE_FUSE:-0}" = 1 ]; then
		echo "Bail out! a real sshfs is required (HOTMAP_REQUIRE_FUSE=1): $1"
		for log in sshd.log sshfs.log; do
			[ -n "$dir" ] && [ -s "$dir/$log" ] &&
				{ echo "# the end of $log:"; tail -n 20 "$dir/$log" | sed 's/^/# /'; }
		done
		exit 1
	fi
	echo "1..0 # SKIP $1"
	echo "test_netfs_sshfs.sh: skipped: $1" >&2
	exit 0
}

for prog in "$HOTMAPD" "$HOTMAPCTL"; do
	if [ ! -x "$prog" ]; then
		echo "Bail out! $prog not found: set HOTMAPD and HOTMAPCTL, or run from the build directory"
		exit 1
	fi
done

# --- what the machine must have ---------------------------------------------
[ "$(id -u)" -eq 0 ] || unavailable "needs root (sshd logs in as root; the mount needs /dev/fuse)"
[ -c /dev/fuse ] || unavailable "no /dev/fuse"
command -v sshfs >/dev/null 2>&1 || unavailable "no sshfs (Debian: sshfs)"
command -v ssh >/dev/null 2>&1 || unavailable "no ssh (Debian: openssh-client)"
command -v ssh-keygen >/dev/null 2>&1 || unavailable "no ssh-keygen (Debian: openssh-client)"
# sshd re-executes itself: it must be named by an absolute path
sshd=$(command -v sshd 2>/dev/null || echo /usr/sbin/sshd)
case $sshd in /*) ;; *) sshd=/usr/sbin/sshd ;; esac
[ -x "$sshd" ] || unavailable "no sshd (Debian: openssh-server)"
fusermount=$(command -v fusermount3 2>/dev/null || command -v fusermount 2>/dev/null) ||
	unavailable "no fusermount3 (Debian: fuse3)"

dir=$(mktemp -d "${TMPDIR:-/tmp}/hotmap-sshfs.XXXXXX") || exit 1
sock=$dir/sock
srv=$dir/srv
mnt=$dir/mnt

# is_mounted: whether $mnt is a mount point now (field 5 of mountinfo)
is_mounted() {
	awk -v m="$mnt" '$5 == m { found = 1 } END { exit !found }' /proc/self/mountinfo
}

cleanup() {
	set +e
	[ -n "$holder" ] && kill "$holder" 2>/dev/null
	[ -n "$hm_pid" ] && kill -KILL "$hm_pid" 2>/dev/null && wait "$hm_pid" 2>/dev/null
	if is_mounted; then
		"$fusermount" -u "$mnt" 2>/dev/null || umount "$mnt" 2>/dev/null ||
			"$fusermount" -u -z "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
	fi
	[ -n "$sshfs_pid" ] && kill "$sshfs_pid" 2>/dev/null && wait "$sshfs_pid" 2>/dev/null
	[ -n "$sshd_pid" ] && kill "$sshd_pid" 2>/dev/null && wait "$sshd_pid" 2>/dev/null
	# never remove through a mount that is still there
	if is_mounted; then
		echo "# $mnt is still mounted; left $dir" >&2
	else
		rm -rf "$dir"
	fi
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

mkdir "$srv" "$mnt" "$dir/ssh" || exit 1
# 3 MiB and a few bytes of random bytes: reads cross the daemon's 1 MiB
# frames; every byte value, nothing repeats.  want is the local copy.
mib=$((1024 * 1024))
size=$((3 * mib + 4321))
head -c "$size" /dev/urandom >"$dir/want" || exit 1
cp "$dir/want" "$srv/data" || exit 1
# an mtime well in the past: hotmapd keeps no copy of a file changed within
# 2 s of copying it (sshfs's mtime has whole seconds: the racy timestamp)
touch -m -d @1700000000 "$srv/data" || exit 1
file=$mnt/data

# --- sshd on 127.0.0.1, keys made for this run --------------------------------
ssh-keygen -q -t ed25519 -N '' -f "$dir/ssh/host" >/dev/null || unavailable "ssh-keygen failed"
ssh-keygen -q -t ed25519 -N '' -f "$dir/ssh/user" >/dev/null || unavailable "ssh-keygen failed"
cp "$dir/ssh/user.pub" "$dir/ssh/authorized_keys"
# sshd's privilege separation directory (Debian's unit makes it; left in place)
[ -d /run/sshd ] || mkdir -p -m 0755 /run/sshd 2>/dev/null

# A port: sshd exits at once when it cannot bind one, so try a few.
port=
try=0
while [ $try -lt 10 ]; do
	p=$((20000 + ($$ * 7 + try * 4099) % 40000))
	cat >"$dir/ssh/sshd_config" <<EOF
ListenAddress 127.0.0.1
Port $p
HostKey $dir/ssh/host
AuthorizedKeysFile $dir/ssh/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $dir/sshd.pid
Subsystem sftp internal-sftp
EOF
	"$sshd" -D -e -f "$dir/ssh/sshd_config" >>"$dir/sshd.log" 2>&1 &
	sshd_pid=$!
	i=0
	while kill -0 "$sshd_pid" 2>/dev/null && [ $i -lt 100 ] &&
	      ! grep -q "Server listening on 127.0.0.1 port $p" "$dir/sshd.log"; do
		i=$((i + 1))
		sleep 0.1
	done
	if grep -q "Server listening on 127.0.0.1 port $p" "$dir/sshd.log" &&
	   kill -0 "$sshd_pid" 2>/dev/null; then
		port=$p
		break
	fi
	kill "$sshd_pid" 2>/dev/null
	wait "$sshd_pid" 2>/dev/null
	sshd_pid=
	try=$((try + 1))
done
[ -n "$port" ] || unavailable "sshd did not start: $(tail -n 1 "$dir/sshd.log")"

# --- sshfs: in the foreground, in the background (its pid is ours to kill) -----
# sshfs connects before it mounts: the mount appears once ssh is in, or
# sshfs exits; 60 s at most (a loaded CI machine), ssh's own connection 5 s.
sshfs -f -F /dev/null \
	-o "IdentityFile=$dir/ssh/user,port=$port" \
	-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
	-o BatchMode=yes -o ConnectTimeout=5 -o LogLevel=ERROR \
	"root@127.0.0.1:$srv" "$mnt" >"$dir/sshfs.log" 2>&1 </dev/null &
sshfs_pid=$!
i=0
until is_mounted; do
	kill -0 "$sshfs_pid" 2>/dev/null ||
		{ wait "$sshfs_pid"; sshfs_pid=; unavailable "sshfs could not mount: $(tail -n 1 "$dir/sshfs.log")"; }
	i=$((i + 1))
	[ $i -lt 600 ] || unavailable "sshfs did not mount within 60 s"
	sleep 0.1
done
mtype=$(awk -v m="$mnt" '$5 == m { for (i = 7; $i != "-"; i++); print $(i + 1) }' /proc/self/mountinfo)

# --- the checks ---------------------------------------------------------------
if [ "$mtype" = fuse.sshfs ] && timeout 60 cmp -s "$file" "$dir/want"; then
	ok "the file is on a real sshfs (fuse.sshfs) and reads as the local copy"
else
	not_ok "the file is on a real sshfs (fuse.sshfs) and reads as the local copy" \
		"mount type '$mtype'; cmp: $(timeout 60 cmp "$file" "$dir/want" 2>&1)"
fi

ctl() {
	timeout 60 "$HOTMAPCTL" --socket "$sock" "$@"
}

"$HOTMAPD" --foreground --socket "$sock" --root "$dir" -v >"$dir/hotmapd.log" 2>&1 &
hm_pid=$!
pid=$hm_pid
wait_listening

# expect_range OFFSET LENGTH: the local copy's bytes there, as dd would copy them.
expect_range() {
	tail -c +$(($1 + 1)) "$dir/want" | head -c "$2"
}

# check_read NAME ARGS... : hotmapctl read ARGS equals $dir/expect.
check_read() {
	name=$1
	shift
	ctl read "$@" >"$dir/out" 2>"$dir/err"
	rc=$?
	if [ $rc -eq 0 ] && [ ! -s "$dir/err" ] && cmp -s "$dir/out" "$dir/expect"; then
		ok "$name"
	else
		not_ok "$name" "exit $rc; $(wc -c <"$dir/out") bytes, want $(wc -c <"$dir/expect")" \
			"$(cat "$dir/err")"
	fi
}

for how in "" --by-path; do
	for range in "0 1" "0 65536" "$((mib - 3)) $((mib + 7))" "$((2 * mib - 100)) 200" \
		     "$((size - 10)) 100" "$size 10" "0 $size"; do
		set -- $range
		expect_range "$1" "$2" >"$dir/expect"
		check_read "read ${how:+$how }$1 $2 through sshfs equals the local copy there" \
			$how "$file" "$1" "$2"
	done
done

# stat: a file on a network file system is its client's alone and leaves
# the daemon at its last close, so a hotmapctl read holds it open: blocked
# writing into a FIFO that is opened here and not read.
mkfifo "$dir/hold" || exit 1
ctl read "$file" >"$dir/hold" 2>/dev/null &
holder=$!
exec 5<"$dir/hold"
i=0
while :; do
	ctl stat "$file" >"$dir/out" 2>"$dir/err"
	rc=$?
	grep -q "not cached" "$dir/out" || break
	i=$((i + 1))
	[ $i -lt 100 ] || break
	sleep 0.1
done
missing=
for line in "  backend         pread" "  reason          network-fs" \
	    "  file system     fuse.sshfs (network)" \
	    "  why             network file system (fuse.sshfs): read with pread, never mapped" \
	    "  private         yes: read through its client's descriptor, for that handle alone"; do
	grep -qxF "$line" "$dir/out" || missing="$missing
$line"
done
if [ $rc -eq 0 ] && [ -z "$missing" ]; then
	ok "stat says fuse.sshfs, a network file system, read with pread"
else
	not_ok "stat says fuse.sshfs, a network file system, read with pread" \
		"exit $rc; missing:$missing" "output:" "$(cat "$dir/out" "$dir/err")"
fi
exec 5<&-	# the holder's next write fails: it exits
wait "$holder" 2>/dev/null
holder=

# --- the library's client-side network path, through the Python binding ------
B=${HOTMAP_PY_BUILDDIR:-}
if [ -n "${PYTHON:-}" ] && [ -n "$B" ] && [ -f "$B/python/.libs/hotmap.so" ]; then
	PYTHONPATH=$B/python/.libs${PYTHONPATH:+:$PYTHONPATH}
	LD_LIBRARY_PATH=$B/client/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	PYTHONDONTWRITEBYTECODE=1
	export PYTHONPATH LD_LIBRARY_PATH PYTHONDONTWRITEBYTECODE
	if [ "${HOTMAP_PY_SANITIZERS:-no}" = yes ]; then
		# as python/tests/python.sh: the sanitizers' runtimes first
		cc=${HOTMAP_PY_CC:-cc}
		LD_PRELOAD="$($cc -print-file-name=libasan.so) $($cc -print-file-name=libubsan.so)"
		ASAN_OPTIONS=detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}
		export LD_PRELOAD ASAN_OPTIONS
	fi
	# Prints "ok NAME" or "not ok NAME: DETAIL", one a line.
	timeout 120 "$PYTHON" -B - "$sock" "$file" "$dir/want" >"$dir/py.out" 2>"$dir/py.err" <<'EOF'
import sys
import hotmap

sock, path, want_path = sys.argv[1:4]
with open(want_path, "rb") as w:
    want = w.read()
size = len(want)
MiB = 1024 * 1024
offs = [0, 4095, MiB - 3, 2 * MiB - 100, size - 100, size, size + 5]
LEN = 70000

def check(name, cond, detail=""):
    print(("ok " if cond else "not ok ") + name + ("" if cond else ": " + detail), flush=True)

with hotmap.connect(sock) as c:
    with c.open(path) as f:
        st = f.stat()
        text = "network-fs: network file system (fuse.sshfs): read with pread, never mapped"
        check("python: File.stat says a network file system, read with pread",
              st.backend == hotmap.BACKEND_PREAD and st.reason_text == text
              and st.mapped_length == 0 and st.direct == hotmap.DIRECT_NO and st.size == size,
              repr(st))
        bad = [o for o in offs if f.pread(LEN, o) != want[o:o + LEN]]
        check("python: pread at the start, across 1 MiB and past the end",
              not bad, "wrong at %r" % bad)
        whole = f.pread(size + 10, 0)
        check("python: pread of the whole file", whole == want,
              "%d bytes, %s" % (len(whole), "differ" if len(whole) == size else "short"))
        buf = bytearray(LEN)
        bad = []
        for o in offs:
            n = f.readinto(buf, o)
            if bytes(buf[:n]) != want[o:o + LEN]:
                bad.append(o)
        check("python: readinto at the same offsets", not bad, "wrong at %r" % bad)
        bad = []
        for o in offs:
            with f.view(o, LEN) as v:
                if bytes(v) != want[o:o + LEN]:
                    bad.append(o)
        check("python: views at the same offsets", not bad, "wrong at %r" % bad)
        got = c.read_batch([(f, o, LEN) for o in offs])
        bad = [o for o, g in zip(offs, got) if g != want[o:o + LEN]]
        check("python: read_batch at the same offsets", not bad, "wrong at %r" % bad)
        views = c.view_batch([(f, o, LEN) for o in offs])
        bad = [o for o, v in zip(offs, views) if bytes(v) != want[o:o + LEN]]
        for v in views:
            v.release()
        check("python: view_batch at the same offsets", not bad, "wrong at %r" % bad)
        f.warm()
        check("python: pread after warm", f.pread(size, 0) == want, "differ")
        rs = f.read_stats()
        check("python: read in the process with pread, none through the daemon",
              rs.pread_reads > 0 and rs.daemon_reads == 0, repr(rs))
    with c.open(path, hotmap.O_PATH) as f:
        whole = f.pread(size + 10, 0)
        rs = f.read_stats()
        # the warm above left hotmapd a copy in memory (network-copy-max):
        # an open by path, which has no descriptor here, maps it too
        check("python: opened by path (O_PATH), read from hotmapd's copy, right",
              whole == want and rs.copy_reads > 0 and rs.daemon_reads == 0
              and rs.pread_reads == 0,
              "%d bytes, %s, %r" % (len(whole), "right" if whole == want else "wrong", rs))
EOF
	rc=$?
	py=0
	while IFS= read -r line; do
		case $line in
		"ok "*) ok "${line#ok }"; py=$((py + 1)) ;;
		"not ok "*) not_ok "${line#not ok }"; py=$((py + 1)) ;;
		esac
	done <"$dir/py.out"
	if [ $rc -eq 0 ] && [ $py -eq 10 ]; then
		ok "python: every check ran"
	else
		not_ok "python: every check ran" "exit $rc, $py of 10 checks; stderr:" "$(tail -n 20 "$dir/py.err")"
	fi
else
	echo "ok $((n + 1)) # SKIP no Python binding in this build (make check sets PYTHON where configure built it)"
	n=$((n + 1))
fi

# --- hotmapd's copy in memory (network-copy-max) -----------------------------
# hotmapctl warm reads the file into a copy the daemon keeps; stat says so
# (the copy is listed with the file closed), and reads come from it, right.
ctl warm "$file" >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 0 ] && grep -qF "$size bytes warm (hotmapd's copy in memory)" "$dir/out"; then
	ok "warm makes hotmapd keep a copy in memory"
else
	not_ok "warm makes hotmapd keep a copy in memory" "exit $rc" "$(cat "$dir/out" "$dir/err")"
fi
ctl stat "$file" >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 0 ] && grep -q "^  why             network file system (fuse.sshfs): read from hotmapd's copy in memory (" "$dir/out"; then
	ok "stat says the file is read from hotmapd's copy"
else
	not_ok "stat says the file is read from hotmapd's copy" "exit $rc" "$(cat "$dir/out" "$dir/err")"
fi
for range in "0 1" "$((mib - 3)) $((mib + 7))" "$((size - 10)) 100" "0 $size"; do
	set -- $range
	expect_range "$1" "$2" >"$dir/expect"
	check_read "read $1 $2 from hotmapd's copy equals the local copy there" "$file" "$1" "$2"
done

echo "1..$n"
tap_finish
