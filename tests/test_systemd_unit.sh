#!/bin/sh
# SPDX-License-Identifier: MIT
# hotmapd.service and hotmapd.socket (TAP): systemd-analyze verifies them,
# the service's exposure (systemd-analyze security) stays at 2.5 or lower,
# its ExecStartPre= and ExecReload= check the file with ExecStart='s
# options and refuse a bad one, and hotmapd still serves inside what of
# the sandbox can be built without systemd as PID 1 (a network namespace
# of its own, another user, no capabilities, no new privileges, umask
# 0077), and under the unit's SystemCallFilter= (tests/seccomp_run, which
# kills where the unit answers EPERM, so that no refused call passes
# unseen) through a workload of every kind of request.
#
# Without systemd-analyze the unit checks skip, unless
# HOTMAP_REQUIRE_SYSTEMD=1 (CI), which makes them fail.
. "${TESTS_SRCDIR:-$(dirname "$0")}/tap.sh"

HOTMAPD=${HOTMAPD:-daemon/hotmapd}
HOTMAPCTL=${HOTMAPCTL:-hotmapctl/hotmapctl}
srcdir=${TESTS_SRCDIR:-$(dirname "$0")}/..
builddir=${TESTS_BUILDDIR:-$(dirname "$0")}/..
service=$builddir/contrib/systemd/hotmapd.service
socket_unit=$srcdir/contrib/systemd/hotmapd.socket
# 2.5 as systemd-analyze security --threshold= counts (tenths)
max_exposure=25

echo "1..7"
for f in "$service" "$socket_unit"; do
	[ -f "$f" ] || bail "$f not found: make it first (make check does)"
done
for prog in "$HOTMAPD" "$HOTMAPCTL"; do
	[ -x "$prog" ] || bail "$prog not found: set HOTMAPD and HOTMAPCTL, or run from the build directory"
done

dir=$(mktemp -d "${TMPDIR:-/tmp}/hotmap-unit.XXXXXX") || exit 1
pid=
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# The service's command lines without "Exec...=" (one per line).
unit_lines() {
	sed -n "s/^$1=//p" "$service"
}

have_analyze=no
command -v systemd-analyze >/dev/null 2>&1 && have_analyze=yes
skip_analyze() {
	if [ "${HOTMAP_REQUIRE_SYSTEMD:-0}" = 1 ]; then
		not_ok "$1" "systemd-analyze not found and HOTMAP_REQUIRE_SYSTEMD=1 (install systemd)"
	else
		ok "$1 # SKIP systemd-analyze not installed"
	fi
}

# --- 1: systemd-analyze verify ---------------------------------------------
# verify wants the commands to exist: the service points at the built
# hotmapd instead of sbindir's, in a copy that keeps its name.
exec_start=$(unit_lines ExecStart)
daemon_path=${exec_start%% *}
case $HOTMAPD in /*) built=$HOTMAPD ;; *) built=$PWD/$HOTMAPD ;; esac
mkdir "$dir/units" || exit 1
sed "s|$daemon_path |$built |" "$service" >"$dir/units/hotmapd.service" || exit 1
cp "$socket_unit" "$dir/units/hotmapd.socket" || exit 1
if [ $have_analyze = no ]; then
	skip_analyze "systemd-analyze verify: hotmapd.service and hotmapd.socket"
else
	out=$(cd "$dir/units" && systemd-analyze verify --man=no hotmapd.service hotmapd.socket 2>&1)
	rc=$?
	if [ $rc -eq 0 ] && [ -z "$out" ]; then
		ok "systemd-analyze verify: hotmapd.service and hotmapd.socket"
	else
		not_ok "systemd-analyze verify: hotmapd.service and hotmapd.socket" "exit $rc:" "$out"
	fi
fi

# --- 2: the exposure -------------------------------------------------------
if [ $have_analyze = no ]; then
	skip_analyze "systemd-analyze security: exposure at most 2.5"
else
	out=$(systemd-analyze security --offline=true --threshold=$max_exposure \
		"$dir/units/hotmapd.service" 2>&1)
	rc=$?
	level=$(printf '%s\n' "$out" | grep 'Overall exposure level')
	if [ $rc -eq 0 ] && [ -n "$level" ]; then
		ok "systemd-analyze security: exposure at most 2.5 (${level#*: })"
	else
		not_ok "systemd-analyze security: exposure at most 2.5" "exit $rc: $level" \
			"$(printf '%s\n' "$out" | grep '✗')"
	fi
fi

# --- 3: ExecStartPre= and ExecReload= check what ExecStart= will read --------
# Same hotmapd, same options: a check that passes then means the daemon
# (or its reload) takes the file.  Reload checks before the signal.
options=${exec_start#"$daemon_path"}
want="$daemon_path$options --check-config --quiet"
pre=$(unit_lines ExecStartPre)
reload_check=$(unit_lines ExecReload | sed -n 1p)
reload_signal=$(unit_lines ExecReload | sed -n 2p)
if [ "$pre" = "$want" ] && [ "$reload_check" = "$want" ] &&
   [ "$reload_signal" = '/bin/kill -HUP $MAINPID' ] &&
   grep -q '^Also=hotmapd.socket$' "$service"; then
	ok "ExecStartPre= and ExecReload= run --check-config with ExecStart='s options"
else
	not_ok "ExecStartPre= and ExecReload= run --check-config with ExecStart='s options" \
		"want: $want" "ExecStartPre=$pre" "ExecReload=$reload_check" "ExecReload=$reload_signal"
fi

# --- 4: that check is quiet for a good file and fails for a bad one ---------
# ExecStart='s options with the test's file (the unit reads the default).
printf 'max-inflight = 8\n' >"$dir/good.conf"
printf 'max-inflight = 0\nsokcet = /x\n' >"$dir/bad.conf"
# shellcheck disable=SC2086 # the options are words
"$HOTMAPD" $options --check-config --quiet --config "$dir/good.conf" >"$dir/out" 2>"$dir/err"
rc_good=$?
# shellcheck disable=SC2086
"$HOTMAPD" $options --check-config --quiet --config "$dir/bad.conf" >"$dir/bout" 2>"$dir/berr"
rc_bad=$?
if [ $rc_good -eq 0 ] && [ ! -s "$dir/out" ] && [ ! -s "$dir/err" ] &&
   [ $rc_bad -ne 0 ] && [ ! -s "$dir/bout" ] && [ "$(grep -c 'bad.conf:' "$dir/berr")" -eq 2 ]; then
	ok "the unit's check: silent for a good file, fails naming each error of a bad one"
else
	not_ok "the unit's check: silent for a good file, fails naming each error of a bad one" \
		"good: exit $rc_good, $(cat "$dir/out" "$dir/err")" "bad: exit $rc_bad, $(cat "$dir/bout" "$dir/berr")"
fi

# --- 5, 6: hotmapd inside what of the sandbox a test can build --------------
# PrivateNetwork=: a network namespace of its own (a socket on the file
# system is still reached from the host's); DynamicUser=: another user;
# NoNewPrivileges=, CapabilityBoundingSet=CAP_LEASE; UMask=0077.
# The client trusts a daemon of the user HOTMAP_DAEMON_USER names (the
# unit's DynamicUser is configure's --with-daemon-user).
sock=$dir/run/hotmapd.sock
ctl() {
	HOTMAP_DAEMON_USER=nobody "$HOTMAPCTL" --socket "$sock" "$@"
}
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null 2>&1 ||
   ! command -v unshare >/dev/null 2>&1 || ! unshare --net true 2>/dev/null; then
	ok "hotmapd serves from a network namespace of its own, as another user, without privileges # SKIP needs root, setpriv and unshare --net"
	ok "a file readable by that user is read through it # SKIP needs root, setpriv and unshare --net"
	sandbox=no
else
	sandbox=yes
fi
mkdir "$dir/run" "$dir/data" || exit 1
chown 65534:65534 "$dir/run" || exit 1
chmod 0755 "$dir"
head -c 100000 /dev/urandom >"$dir/data/file" || exit 1
chmod 0644 "$dir/data/file"
if [ $sandbox = yes ]; then
	# unshare and setpriv exec: $pid is hotmapd's
	(umask 077 && exec unshare --net setpriv --reuid 65534 --regid 65534 --clear-groups \
		--no-new-privs --bounding-set=-all,+lease \
		"$HOTMAPD" $options --socket "$sock" >"$dir/hotmapd.log" 2>&1) &
	pid=$!
	wait_listening
	mode=$(stat -c %a "$sock" 2>/dev/null)
	if ctl ping >/dev/null 2>&1 && [ "$mode" = 666 ] &&
	   grep -q '^NoNewPrivs:[[:space:]]*1' "/proc/$pid/status" &&
	   grep -q '^CapBnd:[[:space:]]*0*10000000$' "/proc/$pid/status" &&
	   [ "$(stat -c %u "/proc/$pid")" = 65534 ]; then
		ok "hotmapd serves from a network namespace of its own, as another user, without privileges"
	else
		not_ok "hotmapd serves from a network namespace of its own, as another user, without privileges" \
			"socket mode $mode (socket-mode is chmod-ed, whatever the umask)" \
			"$(grep '^NoNewPrivs\|^CapBnd\|^Uid' "/proc/$pid/status" 2>&1)"
	fi
	# hotmapctl read opens the file itself and passes the descriptor
	if ctl read "$dir/data/file" 0 100000 >"$dir/read" 2>"$dir/read.err" &&
	   cmp -s "$dir/read" "$dir/data/file"; then
		ok "a file readable by that user is read through it"
	else
		not_ok "a file readable by that user is read through it" "$(cat "$dir/read.err")"
	fi
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	pid=
fi

# --- 7: the unit's SystemCallFilter= ------------------------------------------
# The names it allows, groups expanded by systemd-analyze, in the unit's
# order: a first list allows, "~" takes away, a later list adds.
expand_calls() {
	for c in "$@"; do
		case $c in
		@*) expand_calls $(systemd-analyze syscall-filter "$c" | sed 1d |
				   sed -n 's/^ *\([@a-z0-9_-]*\).*/\1/p') ;;
		?*) echo "$c" ;;
		esac
	done
}
allowed_calls() {
	: >"$dir/calls"
	unit_lines SystemCallFilter | while read -r line; do
		case $line in
		"~"*)	expand_calls ${line#"~"} | sort -u >"$dir/take"
			grep -vxF -f "$dir/take" "$dir/calls" >"$dir/calls.new"
			mv "$dir/calls.new" "$dir/calls" ;;
		*)	expand_calls $line >>"$dir/calls" ;;
		esac
	done
	sort -u "$dir/calls"
}
seccomp_run=${TESTS_BUILDDIR:-$(dirname "$0")}/seccomp_run
filter_test="hotmapd serves every kind of request under the unit's SystemCallFilter="
if [ $have_analyze = no ]; then
	skip_analyze "$filter_test"
	tap_finish
fi
# names to numbers, from this machine's headers
if ! ${CC:-cc} -E -dM -include sys/syscall.h -x c /dev/null 2>/dev/null |
	sed -n 's/^#define __NR_\([a-z0-9_]*\) \([0-9][0-9]*\)$/\1 \2/p' >"$dir/numbers" ||
   [ ! -s "$dir/numbers" ] || [ ! -x "$seccomp_run" ]; then
	ok "$filter_test # SKIP no C preprocessor (CC) or no tests/seccomp_run"
	tap_finish
fi
# AddressSanitizer makes calls of its own (LeakSanitizer stops the world
# with ptrace at exit): the filter is for the daemon a package ships
if grep -q -a '__asan_init\|__ubsan_handle' "$HOTMAPD"; then
	ok "$filter_test # SKIP hotmapd is built with sanitizers, which make calls of their own"
	tap_finish
fi
allowed_calls >"$dir/allowed"
nrs=$(awk 'NR == FNR { ok[$1] = 1; next } ok[$1] { print $2 }' "$dir/allowed" "$dir/numbers" |
	paste -s -d, -)
sock=$dir/filtered.sock
head -c 3000000 /dev/urandom >"$dir/data/big" || exit 1
"$seccomp_run" "$nrs" "$HOTMAPD" $options --socket "$sock" --root "$dir/data" \
	--warm populate --workers 2 >"$dir/hotmapd.log" 2>&1 &
pid=$!
wait_listening
steps=
step() {
	name=$1
	shift
	"$@" >"$dir/step.out" 2>&1 || steps="$steps $name"
}
# ctl read FILE [ARG...]: the bytes read are FILE's (whole, without ARGs)
read_same() {
	f=$1
	shift
	ctl read "$@" "$f" >"$dir/read.out" || return 1
	[ $# -gt 0 ] || cmp -s "$dir/read.out" "$f"
}
step read-fd read_same "$dir/data/big"
step read-again read_same "$dir/data/big"
step read-by-path read_same "$dir/data/file" --by-path
step read-pread read_same "$dir/data/big" --backend pread
step warm ctl warm --quiet "$dir/data/big" "$dir/data/file"
step stats ctl stats
step files ctl files
step clients ctl clients
step config ctl config
step evict ctl evict --all
step reload kill -HUP "$pid"
sleep 0.3
step ping-after-reload ctl ping
kill -TERM "$pid" 2>/dev/null
wait "$pid"
rc=$?
pid=
if [ -z "$steps" ] && [ $rc -eq 0 ]; then
	ok "$filter_test"
else
	not_ok "$filter_test" "failed:$steps; hotmapd's exit status $rc (159: killed by SIGSYS, a call the filter refuses)" \
		"$(cat "$dir/step.out")"
fi
tap_finish
