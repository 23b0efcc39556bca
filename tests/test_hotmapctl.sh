#!/bin/sh
# SPDX-License-Identifier: MIT
# test_hotmapctl.sh - hotmapctl against a real hotmapd, as a user runs it.
#
# Prints TAP.  make check sets HOTMAPD and HOTMAPCTL (absolute paths of the
# built programs); run by hand from the build directory, the paths below it
# are used.  Everything lives in one mktemp directory, removed at the end.

# strerror texts are matched below.
LC_ALL=C
export LC_ALL

HOTMAPD=${HOTMAPD:-daemon/hotmapd}
HOTMAPCTL=${HOTMAPCTL:-hotmapctl/hotmapctl}
# Absolute: one test runs hotmapctl from another directory.
case $HOTMAPD in /*) ;; *) HOTMAPD=$PWD/$HOTMAPD ;; esac
case $HOTMAPCTL in /*) ;; *) HOTMAPCTL=$PWD/$HOTMAPCTL ;; esac
PLAN=104

. "${TESTS_SRCDIR:-$(dirname "$0")}/tap.sh"

for prog in "$HOTMAPD" "$HOTMAPCTL"; do
	if [ ! -x "$prog" ]; then
		echo "1..$PLAN"
		echo "Bail out! $prog not found: set HOTMAPD and HOTMAPCTL, or run from the build directory"
		exit 1
	fi
done

dir=$(mktemp -d "${TMPDIR:-/tmp}/hotmapctl-test.XXXXXX") || exit 1
sock=$dir/sock
root=$dir/root
pid=
reader=
cleanup() {
	[ -n "$reader" ] && kill $reader 2>/dev/null
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

mkdir "$root" "$dir/outside" || exit 1
# 3 MiB and a few bytes: reads cross the daemon's 1 MiB frames and 256 KiB
# chunks.  Random bytes: every byte value, no line structure.
file=$root/data
size=$((3 * 1024 * 1024 + 77))
head -c "$size" /dev/urandom >"$file" || exit 1
: >"$root/empty"
head -c 1000 /dev/urandom >"$dir/outside/secret" || exit 1

ctl() {
	"$HOTMAPCTL" --socket "$sock" "$@"
}

echo "1..$PLAN"

"$HOTMAPD" --foreground --socket "$sock" --root "$root" -v >"$dir/hotmapd.log" 2>&1 &
pid=$!
wait_listening

# --- ping ------------------------------------------------------------------
version=$("$HOTMAPCTL" --version | sed -n 's/^hotmapctl \([^ ]*\) .*/\1/p')
out=$(ctl ping 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ -n "$version" ] &&
   printf '%s\n' "$out" | grep -q "^hotmapd $version pid $pid "; then
	ok "ping prints the daemon's version and pid"
else
	not_ok "ping prints the daemon's version and pid" "exit $rc, version '$version', output:" "$out"
fi

# --- read ------------------------------------------------------------------

# expect_range OFFSET LENGTH: the bytes of $file there, as dd would copy them.
expect_range() {
	tail -c +$(($1 + 1)) "$file" | head -c "$2"
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

mib=$((1024 * 1024))
for range in "0 1" "0 0" "1 4095" "4095 2" "100 5000" "$((mib - 3)) $((2 * mib))" \
	     "$((256 * 1024 - 1)) $((mib + 2))" "$((size - 10)) 100" "$((size - 1)) 1" \
	     "$size 10" "$((size + 4096)) 10" "0 $size"; do
	set -- $range
	expect_range "$1" "$2" >"$dir/expect"
	check_read "read $1 $2 equals the file's bytes there" "$file" "$1" "$2"
done

cp "$file" "$dir/expect"
check_read "read of the whole file equals the file" "$file"
check_read "read --backend mmap of the whole file" --backend mmap "$file"
check_read "read --backend pread of the whole file" --backend pread "$file"
check_read "read --backend auto of the whole file" --backend auto "$file"

expect_range 1234567 "$size" >"$dir/expect"
check_read "read from an offset to the end" "$file" 1234567

expect_range 1024 "$mib" >"$dir/expect"
check_read "read with K and M suffixes" "$file" 1K 1M
expect_range 4096 256 >"$dir/expect"
check_read "read with hex offset and length" "$file" 0x1000 0x100

: >"$dir/expect"
check_read "read of an empty file prints nothing" "$root/empty"
check_read "read --backend pread of an empty file prints nothing" --backend pread "$root/empty"

# --- open by path ------------------------------------------------------------
cp "$file" "$dir/expect"
check_read "read --by-path beneath --root" --by-path "$file"
check_read "read --by-path --backend pread beneath --root" --by-path --backend pread "$file"
(cd "$root" && "$HOTMAPCTL" --socket "$sock" read --by-path data) >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 0 ] && cmp -s "$dir/out" "$dir/expect"; then
	ok "read --by-path of a relative path from the caller's directory"
else
	not_ok "read --by-path of a relative path from the caller's directory" "exit $rc" \
		"$(cat "$dir/err")"
fi

# expect_fail NAME STATUS PATTERN ARGS...: hotmapctl ARGS exits STATUS, prints
# nothing on stdout and "hotmapctl: ..." matching PATTERN on stderr.
expect_fail() {
	name=$1
	want=$2
	pattern=$3
	shift 3
	"$HOTMAPCTL" "$@" >"$dir/out" 2>"$dir/err"
	rc=$?
	if [ $rc -eq "$want" ] && [ ! -s "$dir/out" ] && grep -q "^hotmapctl: " "$dir/err" &&
	   grep -q -- "$pattern" "$dir/err"; then
		ok "$name"
	else
		not_ok "$name" "exit $rc (want $want), stderr (want /$pattern/):" "$(cat "$dir/err")" \
			"stdout: $(head -c 200 "$dir/out")"
	fi
}

expect_fail "read --by-path outside --root fails with exit 1" 1 "$dir/outside/secret.*not beneath" \
	--socket "$sock" read --by-path "$dir/outside/secret"
expect_fail "read --by-path escaping by .. fails with exit 1" 1 "not beneath" \
	--socket "$sock" read --by-path "$root/../outside/secret"
ln -s "$dir/outside/secret" "$root/link-out"
expect_fail "read --by-path of a symlink out of --root fails with exit 1" 1 "link-out" \
	--socket "$sock" read --by-path "$root/link-out"
expect_fail "read of a missing file fails with exit 1" 1 "$root/missing: No such file" \
	--socket "$sock" read "$root/missing"
expect_fail "read of a directory fails with exit 1" 1 "$root" \
	--socket "$sock" read "$root"
expect_fail "read --backend mmap of an empty file fails with exit 1" 1 "empty" \
	--socket "$sock" read --backend mmap "$root/empty"
expect_fail "no daemon on the socket: exit 1" 1 "$dir/nosock" \
	--socket "$dir/nosock" ping

# --- usage errors --------------------------------------------------------------
expect_fail "read without a path exits 2" 2 "usage" --socket "$sock" read
expect_fail "read with a negative offset exits 2" 2 "bad offset" --socket "$sock" read "$file" -5
expect_fail "read with a bad offset exits 2" 2 "bad offset" --socket "$sock" read "$file" abc
expect_fail "read with a bad length exits 2" 2 "bad length" --socket "$sock" read "$file" 0 10Q
expect_fail "read with a length that overflows exits 2" 2 "bad length" \
	--socket "$sock" read "$file" 0 99999999999999999999
expect_fail "read with too many arguments exits 2" 2 "usage" --socket "$sock" read "$file" 0 1 2
expect_fail "read --backend with an unknown backend exits 2" 2 "unknown backend" \
	--socket "$sock" read --backend bogus "$file"
# getopt words this one itself ("read: unrecognized option"): only the
# status and the option's name are checked.
"$HOTMAPCTL" --socket "$sock" read --bogus "$file" >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 2 ] && [ ! -s "$dir/out" ] && grep -q -- "--bogus" "$dir/err"; then
	ok "read with an unknown option exits 2"
else
	not_ok "read with an unknown option exits 2" "exit $rc" "$(cat "$dir/err")"
fi
expect_fail "ping with an argument exits 2" 2 "ping" --socket "$sock" ping extra
expect_fail "stats with an argument exits 2" 2 "stats" --socket "$sock" stats extra
expect_fail "an unknown command exits 2" 2 "unknown command 'frobnicate'" --socket "$sock" frobnicate

expect_fail "an unknown option before the command exits 2" 2 "unknown option '--bogus'" \
	--bogus --socket "$sock" ping
expect_fail "a flag given a value exits 2" 2 "'--json' takes no argument" \
	--socket "$sock" stats --json=yes
expect_fail "stats --json --prometheus exits 2" 2 "not both" --socket "$sock" stats -jP
expect_fail "an option without its value exits 2" 2 "'--sort' needs an argument" \
	--socket "$sock" files --sort

# --- the one parser: options after the command, --help everywhere ---------------
out=$("$HOTMAPCTL" ping --socket "$sock" 2>&1) &&
	out2=$("$HOTMAPCTL" ping -s "$sock" 2>&1)
rc=$?
if [ $rc -eq 0 ] && printf '%s\n' "$out" "$out2" | grep -c "^hotmapd $version pid $pid " | grep -qx 2; then
	ok "a global option after the command: ping --socket, ping -s"
else
	not_ok "a global option after the command: ping --socket, ping -s" "exit $rc" "$out" "$out2"
fi
ctl files -s path -j >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 0 ] && head -c 1 "$dir/out" | grep -q '\[' && [ ! -s "$dir/err" ]; then
	ok "a command's short option wins over the global one: files -s path -j"
else
	not_ok "a command's short option wins over the global one: files -s path -j" "exit $rc" \
		"$(cat "$dir/out" "$dir/err")"
fi
for cmd in ping stats top read files stat clients evict config warm stop; do
	"$HOTMAPCTL" "$cmd" --help >"$dir/out" 2>"$dir/err"
	rc=$?
	if [ $rc -eq 0 ] && [ ! -s "$dir/err" ] &&
	   head -n 1 "$dir/out" | grep -q "^Usage: hotmapctl \[--socket PATH\] $cmd\( \|\$\)" &&
	   grep -q -- "--help" "$dir/out" && grep -q "^Usage:" "$dir/out"; then
		ok "$cmd --help prints its usage and options and exits 0"
	else
		not_ok "$cmd --help prints its usage and options and exits 0" "exit $rc" \
			"$(cat "$dir/out" "$dir/err")"
	fi
done

"$HOTMAPCTL" --socket "$sock" >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "^Usage: hotmapctl" "$dir/err"; then
	ok "no command exits 2 with the usage"
else
	not_ok "no command exits 2 with the usage" "exit $rc" "$(cat "$dir/err")"
fi

# --- stats ---------------------------------------------------------------------
ctl stats >"$dir/out" 2>"$dir/err"
rc=$?
missing=
for key in version pid uptime_us clients handles bytes_served requests_read cache_hits \
	   cache_misses mappings; do
	grep -q "^$key  *[^ ]" "$dir/out" || missing="$missing $key"
done
if [ $rc -eq 0 ] && [ -z "$missing" ]; then
	ok "stats prints bytes_served, handles, clients and the rest"
else
	not_ok "stats prints bytes_served, handles, clients and the rest" "exit $rc, missing:$missing" \
		"$(cat "$dir/out" "$dir/err")"
fi
served=$(sed -n 's/^bytes_served  *//p' "$dir/out")
direct=$(sed -n 's/^direct_bytes  *//p' "$dir/out")
# Every read above was counted, served by the daemon or read directly by
# hotmapctl (its files are mapped at open): at least the whole file six
# times over.
if [ -n "$served" ] && [ -n "$direct" ] && [ $((served + direct)) -ge $((6 * size)) ]; then
	ok "stats counts the bytes served and read directly"
else
	not_ok "stats counts the bytes served and read directly" \
		"bytes_served '$served' + direct_bytes '$direct', want at least $((6 * size))"
fi
handles=$(sed -n 's/^handles  *//p' "$dir/out")
stats_pid=$(sed -n 's/^pid  *//p' "$dir/out")
if [ "$handles" = 0 ] && [ "$stats_pid" = "$pid" ]; then
	ok "stats: no handle left open by the reads, and the daemon's pid"
else
	not_ok "stats: no handle left open by the reads, and the daemon's pid" \
		"handles '$handles', pid '$stats_pid' (want 0, $pid)"
fi

# --- stats --json and --prometheus ------------------------------------------------
ctl stats --json >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 0 ] && head -n 1 "$dir/out" | grep -qx '{' && tail -n 1 "$dir/out" | grep -qx '}' &&
   grep -q '^  "bytes_served": [0-9][0-9]*,$' "$dir/out" && grep -q '^  "version": "' "$dir/out" &&
   { ! command -v python3 >/dev/null 2>&1 || python3 -m json.tool "$dir/out" >/dev/null 2>&1; }; then
	ok "stats --json prints one JSON object with every key"
else
	not_ok "stats --json prints one JSON object with every key" "exit $rc" "$(cat "$dir/out" "$dir/err")"
fi
ctl stats --prometheus >"$dir/out" 2>"$dir/err"
rc=$?
bad=$(grep -v -e '^# TYPE hotmap_[a-z0-9_]* \(counter\|gauge\|summary\)$' \
	-e '^# HELP hotmap_[a-z0-9_]* [^ ].*$' \
	-e '^hotmap_[a-z0-9_]*\({[a-z_]*="[^"]*"\(,[a-z_]*="[^"]*"\)*}\)\{0,1\} \([0-9][0-9.]*\|NaN\)$' \
	-e '^hotmap_info{version="[^"]*",.*} 1$' "$dir/out")
if [ $rc -eq 0 ] && [ -z "$bad" ] && grep -q '^hotmap_served_bytes_total [0-9]' "$dir/out" &&
   grep -q '^hotmap_clients [0-9]' "$dir/out"; then
	ok "stats --prometheus prints the text exposition format"
else
	not_ok "stats --prometheus prints the text exposition format" "exit $rc, bad lines:" "$bad" \
		"$(cat "$dir/err")"
fi

# the kinds come from the daemon with each key (StatsReply.Stat.kind);
# tests/test_prometheus.sh checks the rest with promtool
missing=
for want in "hotmap_pid gauge" "hotmap_clients gauge" "hotmap_uptime_seconds gauge" \
	    "hotmap_request_duration_seconds summary" "hotmap_opens_total counter" \
	    "hotmap_served_bytes_total counter" "hotmap_clients_total counter"; do
	grep -qx "# TYPE $want" "$dir/out" || missing="$missing '$want'"
done
if [ -z "$missing" ] && ! grep -q "untyped" "$dir/out"; then
	ok "stats --prometheus types each key as the daemon says"
else
	not_ok "stats --prometheus types each key as the daemon says" "missing:$missing" "$(cat "$dir/out")"
fi

# --- files -------------------------------------------------------------------------
ctl files >"$dir/out" 2>"$dir/err"
rc=$?
line=$(grep " $file\$" "$dir/out")
if [ $rc -eq 0 ] && head -n 1 "$dir/out" | grep -q "SIZE.*BACKEND.*RESIDENT.*HITS.*BYTES.*PATH" &&
   [ -n "$line" ] && [ "$(echo "$line" | awk '{print $1}')" = "$size" ] &&
   [ "$(echo "$line" | awk '{print $7}')" -ge "$size" ]; then
	ok "files lists the file read, its size and the bytes served from it"
else
	not_ok "files lists the file read, its size and the bytes served from it" "exit $rc" \
		"$(cat "$dir/out" "$dir/err")"
fi
ctl files --sort path --json >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 0 ] && grep -q "\"path\": \"$file\"" "$dir/out" &&
   { ! command -v python3 >/dev/null 2>&1 || python3 -m json.tool "$dir/out" >/dev/null 2>&1; }; then
	ok "files --sort path --json prints a JSON array of the files"
else
	not_ok "files --sort path --json prints a JSON array of the files" "exit $rc" \
		"$(cat "$dir/out" "$dir/err")"
fi
# A path may hold any byte but NUL: JSON stays JSON (hotmapctl(1) gives
# the rule: bytes that are not UTF-8 as \u00XX).
odd=$(printf 'odd\377\001"\\name\303\251')
printf 'x' >"$root/$odd"
ctl read "$root/$odd" >/dev/null 2>&1
ctl files --json >"$dir/out" 2>"$dir/err"
rc=$?
if ! command -v python3 >/dev/null 2>&1; then
	ok "files --json of a path with byte 0xff and a control character # SKIP python3 is not installed"
elif [ $rc -eq 0 ] && python3 -m json.tool "$dir/out" >/dev/null &&
   python3 - "$dir/out" "$root" <<'PY'
import json, sys
files = json.load(open(sys.argv[1], encoding="utf-8"))
want = sys.argv[2] + "/odd\u00ff\u0001\"\\name\u00e9"
assert want in [f["path"] for f in files], [f["path"] for f in files]
PY
then
	ok "files --json of a path with byte 0xff and a control character"
else
	not_ok "files --json of a path with byte 0xff and a control character" "exit $rc" \
		"$(cat -v "$dir/out" "$dir/err")"
fi
# --- clients -----------------------------------------------------------------------
ctl clients >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 0 ] && head -n 1 "$dir/out" | grep -q "PID.*UID.*HANDLES.*DIRECT.*BYTES.*NAME" &&
   grep -q " hotmapctl\$" "$dir/out"; then
	ok "clients lists the connected clients, this one included"
else
	not_ok "clients lists the connected clients, this one included" "exit $rc" \
		"$(cat "$dir/out" "$dir/err")"
fi
ctl clients --json >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 0 ] && grep -q '"name": "hotmapctl"' "$dir/out" &&
   { ! command -v python3 >/dev/null 2>&1 || python3 -m json.tool "$dir/out" >/dev/null 2>&1; }; then
	ok "clients --json prints a JSON array of the clients"
else
	not_ok "clients --json prints a JSON array of the clients" "exit $rc" \
		"$(cat "$dir/out" "$dir/err")"
fi
expect_fail "files --sort with an unknown key exits 2" 2 "unknown sort key" --socket "$sock" files --sort nope

# --- stats --reset -----------------------------------------------------------------
ctl stats --reset >"$dir/out" 2>"$dir/err"
rc=$?
before=$(sed -n 's/^bytes_served  *//p' "$dir/out")
files_before=$(sed -n 's/^files  *//p' "$dir/out")
ctl stats >"$dir/out2" 2>>"$dir/err"
after=$(sed -n 's/^bytes_served  *//p' "$dir/out2")
files_after=$(sed -n 's/^files  *//p' "$dir/out2")
if [ $rc -eq 0 ] && [ -n "$before" ] && [ "$before" -gt 0 ] && [ "$after" = 0 ] &&
   [ -n "$files_before" ] && [ "$files_before" = "$files_after" ] && [ "$files_after" -gt 0 ]; then
	ok "stats --reset shows the counters, then zeroes them but not the state"
else
	not_ok "stats --reset shows the counters, then zeroes them but not the state" \
		"exit $rc, bytes_served $before -> $after, files $files_before -> $files_after" \
		"$(cat "$dir/err")"
fi

# --- stat ----------------------------------------------------------------------------
# by a name the daemon does not have: a symlink, matched on dev and ino
ln -s "$file" "$dir/link-to-data"
ctl stat "$dir/link-to-data" >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 0 ] && grep -q "^$dir/link-to-data:\$" "$dir/out" &&
   grep -q "^  name in daemon  $file\$" "$dir/out" &&
   grep -q "^  size            $size (3.0 MiB)\$" "$dir/out" &&
   grep -q "^  backend         mmap\$" "$dir/out" &&
   grep -q "^  reason          " "$dir/out" &&
   grep -q "^  handles         0 " "$dir/out" &&
   grep -q "^  resident        [0-9]* ([0-9.]* [KMG]*i*B, [0-9]*%)\$" "$dir/out" &&
   [ ! -s "$dir/err" ]; then
	ok "stat FILE: backend, reason, size, handles, resident bytes, by identity"
else
	not_ok "stat FILE: backend, reason, size, handles, resident bytes, by identity" "exit $rc" \
		"$(cat "$dir/out" "$dir/err")"
fi
head -c 100 /dev/urandom >"$root/never-opened"
ctl stat "$root/never-opened" >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 1 ] && [ "$(cat "$dir/out")" = "$root/never-opened: not cached" ] && [ ! -s "$dir/err" ]; then
	ok "stat of a file the daemon has not cached says so and exits 1"
else
	not_ok "stat of a file the daemon has not cached says so and exits 1" "exit $rc" \
		"$(cat "$dir/out" "$dir/err")"
fi
expect_fail "stat of a missing file names it once and exits 1" 1 "^hotmapctl: $root/missing: No such file" \
	--socket "$sock" stat "$root/missing"
ctl stat --json "$file" >"$dir/out" 2>"$dir/err"
rc=$?
if ! command -v python3 >/dev/null 2>&1; then
	ok "stat --json: an array with the file's size and resident bytes # SKIP python3 is not installed"
elif [ $rc -eq 0 ] && python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))
assert len(a) == 1 and a[0]["path"] == sys.argv[2] and a[0]["size"] == int(sys.argv[3])
assert 0 < a[0]["resident_bytes"] <= a[0]["size"] and a[0]["backend"] == "mmap"
' "$dir/out" "$file" "$size"; then
	ok "stat --json: an array with the file's size and resident bytes"
else
	not_ok "stat --json: an array with the file's size and resident bytes" "exit $rc" \
		"$(cat "$dir/out" "$dir/err")"
fi

# --- evict ---------------------------------------------------------------------------
head -c 2888 /dev/urandom >"$root/small"
ctl warm --quiet "$root/small" >/dev/null 2>&1
ctl evict "$root/small" >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 0 ] && [ "$(cat "$dir/out")" = "$root/small: 1 dropped (2.8 KiB unmapped)" ]; then
	ok "evict of a small file prints its size, not 0.0 MiB"
else
	not_ok "evict of a small file prints its size, not 0.0 MiB" "exit $rc" "$(cat "$dir/out" "$dir/err")"
fi
ctl evict "$file" >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 0 ] && grep -q "^$file: 1 dropped" "$dir/out" &&
   ctl evict "$file" >"$dir/out2" 2>"$dir/err"; [ $? -eq 1 ] && grep -q "not cached" "$dir/err"; then
	ok "evict drops a cached file, and says so when it is not cached"
else
	not_ok "evict drops a cached file, and says so when it is not cached" "exit $rc" \
		"$(cat "$dir/out" "$dir/out2" "$dir/err")"
fi
expect_fail "evict without a path or --all exits 2" 2 "usage" --socket "$sock" evict

# --- config --------------------------------------------------------------------------
ctl config >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 0 ] && grep -q "^root  *= $root  *# command line$" "$dir/out" &&
   grep -q "^backend  *= auto  *# default$" "$dir/out" &&
   grep -q "^max-inflight  *= 32  *# default$" "$dir/out" &&
   grep -q "^# file: " "$dir/out"; then
	ok "config prints each value and where it came from"
else
	not_ok "config prints each value and where it came from" "exit $rc" \
		"$(cat "$dir/out" "$dir/err")"
fi
if grep -q "^workers  *= [1-9][0-9]*  *# default: auto$" "$dir/out" &&
   grep -q "^poll-us  *= [0-9][0-9]*  *# default: auto$" "$dir/out"; then
	ok "config shows the values in effect: workers = N, not auto"
else
	not_ok "config shows the values in effect: workers = N, not auto" \
		"$(grep -E "^(workers|poll-us) " "$dir/out")"
fi
ctl config --json >"$dir/out" 2>"$dir/err"
rc=$?
if ! command -v python3 >/dev/null 2>&1; then
	ok "config --json is JSON with every key, value and source # SKIP python3 is not installed"
elif [ $rc -eq 0 ] && python3 - "$dir/out" "$root" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
items = {i["key"]: i for i in d["items"]}
assert items["root"]["value"] == sys.argv[2], items["root"]
assert items["root"]["source"] == "command line"
assert items["socket-mode"] == {"key": "socket-mode", "value": "0666", "source": "default"}
assert "poll-us" in items and "file" in d
PY
then
	ok "config --json is JSON with every key, value and source"
else
	not_ok "config --json is JSON with every key, value and source" "exit $rc" \
		"$(cat "$dir/out" "$dir/err")"
fi
# Another user may read but not administer: a clear refusal (root only).
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
	chmod 755 "$dir"
	setpriv --reuid 65534 --regid 65534 --clear-groups "$HOTMAPCTL" --socket "$sock" stats \
		>"$dir/out" 2>"$dir/err"
	rc=$?
	chmod 700 "$dir"
	if [ $rc -eq 1 ] && grep -q "needs an administrator" "$dir/err"; then
		ok "stats from a user who is not an administrator is refused, saying why"
	else
		not_ok "stats from a user who is not an administrator is refused, saying why" \
			"exit $rc" "$(cat "$dir/out" "$dir/err")"
	fi
	chmod 755 "$dir"
	setpriv --reuid 65534 --regid 65534 --clear-groups "$HOTMAPCTL" --socket "$sock" \
		config --json >"$dir/out" 2>"$dir/err"
	rc=$?
	chmod 700 "$dir"
	if [ $rc -eq 1 ] && [ ! -s "$dir/out" ] && grep -q "needs an administrator" "$dir/err"; then
		ok "config --json refused prints no half of a JSON document"
	else
		not_ok "config --json refused prints no half of a JSON document" \
			"exit $rc" "$(cat "$dir/out" "$dir/err")"
	fi
else
	ok "stats from a user who is not an administrator is refused # SKIP needs root and setpriv"
	ok "config --json refused prints no half of a JSON document # SKIP needs root and setpriv"
fi

# --- warm ------------------------------------------------------------------------
ctl warm "$file" "$root/empty" >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 0 ] && grep -q "^$file: $size bytes warm" "$dir/out" &&
   grep -q "^$root/empty: 0 bytes warm" "$dir/out"; then
	ok "warm reports each file's bytes brought into memory"
else
	not_ok "warm reports each file's bytes brought into memory" "exit $rc" \
		"$(cat "$dir/out" "$dir/err")"
fi
ctl warm --quiet --backend pread "$file" >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 0 ] && [ ! -s "$dir/out" ] && [ ! -s "$dir/err" ]; then
	ok "warm --quiet --backend pread says nothing and succeeds"
else
	not_ok "warm --quiet --backend pread says nothing and succeeds" "exit $rc" \
		"$(cat "$dir/out" "$dir/err")"
fi
ctl warm "$file" "$dir/no-such-file" >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "^$file: $size bytes warm" "$dir/out" &&
   grep -q "^hotmapctl: $dir/no-such-file: No such file" "$dir/err"; then
	ok "warm goes on past a missing file and exits 1"
else
	not_ok "warm goes on past a missing file and exits 1" "exit $rc" "$(cat "$dir/out" "$dir/err")"
fi
expect_fail "warm without a path exits 2" 2 "usage" --socket "$sock" warm

# --- top -------------------------------------------------------------------------
expect_fail "top --interval 0 exits 2" 2 "bad interval" --socket "$sock" top --interval 0
expect_fail "top --interval abc exits 2" 2 "bad interval" --socket "$sock" top --interval abc
expect_fail "top --iterations 0 exits 2" 2 "bad iterations" --socket "$sock" top --iterations 0
expect_fail "top with an argument exits 2" 2 "usage" --socket "$sock" top extra

# Readers keep the daemon busy while top looks, each its own way: one
# through the daemon (HOTMAP_DIRECT=0), as top counts the daemon's
# requests; one with pread on its own descriptor, one copying from its
# mapping (the copy policy fixed, and its largest copy above the reads').
head -c 1048576 /dev/urandom >"$root/top-pread" || exit 1
head -c 1048576 /dev/urandom >"$root/top-copy" || exit 1
(while :; do HOTMAP_DIRECT=0 "$HOTMAPCTL" --socket "$sock" read "$file" >/dev/null 2>&1; done) &
reader=$!
(while :; do HOTMAP_COPY_POLICY=way=pread "$HOTMAPCTL" --socket "$sock" read "$root/top-pread" \
	>/dev/null 2>&1; done) &
reader="$reader $!"
(while :; do HOTMAP_COPY_POLICY=way=copy,copy_max=67108864 "$HOTMAPCTL" --socket "$sock" \
	read "$root/top-copy" >/dev/null 2>&1; done) &
reader="$reader $!"
# windows of a second: a hotmapctl built with sanitizers, on a loaded
# machine, can take longer than a shorter window to start and read
sleep 0.5
ctl top --iterations 2 --interval 1 >"$dir/out" 2>"$dir/err" </dev/null
rc=$?
kill $reader 2>/dev/null
wait $reader 2>/dev/null
reader=
blocks=$(grep -c "^hotmapd $version pid $pid up .* at [0-9-]* [0-9:]*\$" "$dir/out")
if [ $rc -eq 0 ] && [ ! -s "$dir/err" ] && [ "$blocks" = 2 ] &&
   [ "$(grep -c '^requests/s ' "$dir/out")" = 2 ] &&
   [ "$(grep -c '^OP  *REQ/S  *P50_US  *P99_US$' "$dir/out")" = 2 ] &&
   [ "$(grep -c '^ *READ/S  *BYTES  *COPY/S  *PREAD/S  *DAEMON/S  *BLOCKS/S  PATH$' "$dir/out")" = 2 ] &&
   [ "$(grep -c '^$' "$dir/out")" = 1 ] && ! grep -q "$(printf '\033')" "$dir/out"; then
	ok "top --iterations 2 off a terminal prints two plain blocks"
else
	not_ok "top --iterations 2 off a terminal prints two plain blocks" "exit $rc, $blocks blocks" \
		"$(cat "$dir/out" "$dir/err")"
fi
# the busier of the two refreshes, for a reader slowed down (sanitizers)
total=$(awk '$1 == "requests/s" && $2 + 0 >= t + 0 { t = $2 } END { print t }' "$dir/out")
reads=$(awk '$1 == "read" && $2 + 0 >= r + 0 { r = $2 } END { print r }' "$dir/out")
if awk -v t="$total" -v r="$reads" 'BEGIN { exit !(t > 0 && r > 0) }' &&
   grep -q "^ *[0-9.]*[1-9][0-9.]* [KMG]iB  *[0-9.]* [KMG]iB\( *[0-9.]*M\{0,1\}\)\{4\}  $file\$" "$dir/out"; then
	ok "top shows the reader's requests/s, and its file among the hottest"
else
	not_ok "top shows the reader's requests/s, and its file among the hottest" \
		"requests/s '$total', read '$reads'" "$(cat "$dir/out")"
fi
# Each reader's file by its way: COPY/S, PREAD/S and DAEMON/S (fields 5
# to 7, after READ/S and BYTES, each a number and a unit) are 0.0 in
# both refreshes but for its own way, which is above 0 in the busier
# one; BLOCKS/S is 0.0 where nothing is mapped.
top_ways() {	# PATH FIELD: "zero" if 0.0 in both blocks, "some" if above in one
	awk -v p="$1" -v f="$2" '$NF == p { n++; if ($f + 0 > 0) s++; else if ($f != "0.0") bad++ }
		END { print (n != 2 || bad) ? "bad" : s ? "some" : "zero" }' "$dir/out"
}
ways="$(top_ways "$file" 5) $(top_ways "$file" 6) $(top_ways "$file" 7) $(top_ways "$file" 8)"
ways="$ways, $(top_ways "$root/top-pread" 5) $(top_ways "$root/top-pread" 6)"
ways="$ways $(top_ways "$root/top-pread" 7), $(top_ways "$root/top-copy" 5)"
ways="$ways $(top_ways "$root/top-copy" 6) $(top_ways "$root/top-copy" 7)"
if [ "$ways" = "zero zero some zero, zero some zero, some zero zero" ]; then
	ok "top shows each file's reads per second by way: copied, pread, through the daemon"
else
	not_ok "top shows each file's reads per second by way: copied, pread, through the daemon" \
		"daemon, pread, copy files: $ways" "$(cat "$dir/out")"
fi
# The daemon reports latency_* once it times requests: numbers then, a
# dash before.
p50=$(awk '$1 == "read" { p = $3 } END { print p }' "$dir/out")
if ctl stats | grep -q '^latency_read_p50_ns '; then
	want="a number"
	case $p50 in [0-9]*.[0-9]) good=yes ;; *) good= ;; esac
else
	want="-"
	if [ "$p50" = "-" ]; then good=yes; else good=; fi
fi
if [ -n "$good" ]; then
	ok "top's read latency is $want, as the daemon's stats have it"
else
	not_ok "top's read latency is $want, as the daemon's stats have it" "p50 '$p50'" \
		"$(cat "$dir/out")"
fi

# top_on_pty KEY: hotmapctl top on a pseudo-terminal, sent KEY (q, or
# intr for Ctrl-C) once it has drawn; prints "exit STATUS SECONDS" and
# "restored" if the terminal is then in canonical mode with echo again.
# What it drew goes to $dir/screen.
if command -v python3 >/dev/null 2>&1; then
	pty_tool=python3
	cat >"$dir/top-on-pty.py" <<'PY'
import os, pty, select, sys, termios, time
key, screen, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
pid, fd = pty.fork()
if pid == 0:
    os.execv(argv[0], argv)
out = b""
def pump(seconds):
    global out
    end = time.time() + seconds
    while time.time() < end:
        if select.select([fd], [], [], 0.05)[0]:
            try:
                data = os.read(fd, 65536)
            except OSError:
                return
            out += data
start = time.time()
while b"requests/s" not in out and time.time() < start + 10:
    pump(0.1)
pump(0.3)
# the master's termios are the terminal's: Ctrl-C is its VINTR character
os.write(fd, b"q" if key == "q" else termios.tcgetattr(fd)[6][termios.VINTR])
sent, status = time.time(), None
while status is None and time.time() < sent + 10:
    pump(0.05)
    done, st = os.waitpid(pid, os.WNOHANG)
    if done:
        status = os.waitstatus_to_exitcode(st)
took = time.time() - sent
pump(0.1)
lflag = termios.tcgetattr(fd)[3]
open(screen, "wb").write(out)
print("exit %s %.1f" % ("timeout" if status is None else status, took))
if lflag & termios.ICANON and lflag & termios.ECHO:
    print("restored")
PY
elif command -v script >/dev/null 2>&1; then
	pty_tool=script
else
	pty_tool=
fi
top_on_pty() {
	if [ "$pty_tool" = python3 ]; then
		python3 "$dir/top-on-pty.py" "$1" "$dir/screen" "$HOTMAPCTL" --socket "$sock" top --interval 0.2
		return
	fi
	# script(1) types what it reads into the terminal; the terminal's
	# mode after the end is not seen from here, only the screen.
	if [ "$1" = q ]; then k=q; else k=$(printf '\003'); fi
	(sleep 1; printf '%s' "$k"; sleep 3) >"$dir/keys.fifo" &
	typist=$!
	start=$(date +%s)
	timeout 10 script -qfec "'$HOTMAPCTL' --socket '$sock' top --interval 0.2" /dev/null \
		<"$dir/keys.fifo" >"$dir/screen" 2>&1
	st=$?
	echo "exit $st $(($(date +%s) - start - 1))"
	kill "$typist" 2>/dev/null
	wait "$typist" 2>/dev/null
	echo restored
}
[ "$pty_tool" = script ] && mkfifo "$dir/keys.fifo"

esc=$(printf '\033')
for key in q intr; do
	if [ $key = q ]; then
		name="top on a terminal quits on q, in time, and gives the terminal back"
	else
		name="top on a terminal stops on Ctrl-C, in time, and gives the terminal back"
	fi
	if [ -z "$pty_tool" ]; then
		ok "$name # SKIP neither python3 nor script(1) to make a pseudo-terminal"
		continue
	fi
	: >"$dir/screen"
	res=$(top_on_pty $key)
	set -- $res
	if [ "$1" = exit ] && [ "$2" = 0 ] && [ "${3%.*}" -le 3 ] &&
	   printf '%s\n' "$res" | grep -q '^restored$' && ! grep -q "hotmapctl:" "$dir/screen" &&
	   grep -q "requests/s" "$dir/screen" && grep -q "$esc\[?1049l" "$dir/screen"; then
		ok "$name"
	else
		not_ok "$name" "$res ($pty_tool)" "$(tr -d '\033' <"$dir/screen" | tail -c 600)"
	fi
done

# --- stop ------------------------------------------------------------------------
# A top watching when the daemon stops says so.
ctl top --interval 0.1 >"$dir/top.out" 2>"$dir/top.err" </dev/null &
top_pid=$!
tries=0
until grep -q '^requests/s' "$dir/top.out" || [ "$tries" -ge 100 ]; do
	tries=$((tries + 1))
	sleep 0.1
done
kill -TERM "$pid"
wait "$pid"
rc=$?
pid=
if [ $rc -eq 0 ]; then
	ok "hotmapd exits 0 on SIGTERM"
else
	not_ok "hotmapd exits 0 on SIGTERM" "exit $rc" "$(cat "$dir/hotmapd.log")"
fi
if [ ! -e "$sock" ]; then
	ok "hotmapd removed its socket"
else
	not_ok "hotmapd removed its socket"
fi
expect_fail "ping after the daemon stopped fails with exit 1" 1 "$sock" --socket "$sock" ping
wait "$top_pid"
rc=$?
if [ $rc -eq 1 ] && grep -q "^hotmapctl: top: hotmapd went away" "$dir/top.err"; then
	ok "top exits 1 when the daemon goes away, and says so"
else
	not_ok "top exits 1 when the daemon goes away, and says so" "exit $rc" "$(cat "$dir/top.err")"
fi

if [ "$n" -ne "$PLAN" ]; then
	echo "# ran $n tests, planned $PLAN"
	exit 1
fi
tap_finish
