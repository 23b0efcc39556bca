#!/bin/sh
# SPDX-License-Identifier: MIT
# test_config_file.sh - hotmapd run from hotmapd.conf, as an administrator
# runs it: --check-config on good and bad files, the socket and roots from
# the file, socket-mode and socket-group applied, and SIGHUP reloading a
# changed file (a new root opens) or refusing a broken one (the old
# configuration goes on serving); hotmapctl reload doing the same and
# printing what changed or what was wrong.
#
# Prints TAP.  make check sets HOTMAPD and HOTMAPCTL; run by hand from the
# build directory, the paths below it are used.  Everything lives in one
# mktemp directory, removed at the end.

# strerror texts are matched below.
LC_ALL=C
export LC_ALL

HOTMAPD=${HOTMAPD:-daemon/hotmapd}
HOTMAPCTL=${HOTMAPCTL:-hotmapctl/hotmapctl}
PLAN=21

. "${TESTS_SRCDIR:-$(dirname "$0")}/tap.sh"

echo "1..$PLAN"
for prog in "$HOTMAPD" "$HOTMAPCTL"; do
	[ -x "$prog" ] || bail "$prog not found: set HOTMAPD and HOTMAPCTL, or run from the build directory"
done

dir=$(mktemp -d "${TMPDIR:-/tmp}/hotmapd-conf-test.XXXXXX") || exit 1
pid=
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

sock=$dir/sock
conf=$dir/hotmapd.conf
mkdir "$dir/old-root" "$dir/new-root" || exit 1
echo "under the old root" >"$dir/old-root/a"
echo "under the new root" >"$dir/new-root/b"
gid=$(id -g)

ctl() {
	"$HOTMAPCTL" --socket "$sock" "$@"
}

# wait_log PATTERN: until hotmapd.log has a line matching it (10 s at most).
wait_log() {
	tries=0
	until grep -q -- "$1" "$dir/hotmapd.log"; do
		tries=$((tries + 1))
		[ "$tries" -lt 100 ] || return 1
		sleep 0.1
	done
}

# read_ok NAME PATH WANT: hotmapctl read --by-path PATH prints WANT.
read_ok() {
	out=$(ctl read --by-path "$2" 2>&1)
	rc=$?
	if [ $rc -eq 0 ] && [ "$out" = "$3" ]; then
		ok "$1"
	else
		not_ok "$1" "exit $rc: $out"
	fi
}

# read_refused NAME PATH: hotmapctl read --by-path PATH fails (not beneath
# a root).
read_refused() {
	out=$(ctl read --by-path "$2" 2>&1)
	rc=$?
	if [ $rc -eq 1 ] && printf '%s\n' "$out" | grep -q "not beneath"; then
		ok "$1"
	else
		not_ok "$1" "exit $rc: $out"
	fi
}

cat >"$conf" <<EOF
# hotmapd.conf of test_config_file.sh
socket = $sock
socket-mode = 0640
socket-group = $gid
[hotmapd]
root = $dir/old-root
foreground = yes
log-level = info
EOF

# --- --check-config ----------------------------------------------------------
"$HOTMAPD" --check-config --config "$conf" >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 0 ] && grep -qx "configuration OK" "$dir/out" &&
   grep -qxF "socket = $sock  # $conf:2" "$dir/out" &&
   grep -qxF "root = $dir/old-root  # $conf:6" "$dir/out" &&
   grep -qxF "max-inflight = 32  # default" "$dir/out" && [ ! -s "$dir/err" ] && [ ! -e "$sock" ]; then
	ok "--check-config of a good file: exit 0, the values and where they come from"
else
	not_ok "--check-config of a good file: exit 0, the values and where they come from" \
		"exit $rc" "$(cat "$dir/out" "$dir/err")"
fi

"$HOTMAPD" --check-config --config "$conf" --max-inflight 5 -v >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 0 ] && grep -qxF "max-inflight = 5  # command line" "$dir/out" &&
   grep -qxF "log-level = debug  # command line" "$dir/out"; then
	ok "--check-config: the command line wins over the file"
else
	not_ok "--check-config: the command line wins over the file" "exit $rc" \
		"$(cat "$dir/out" "$dir/err")"
fi

bad=$dir/bad.conf
cat >"$bad" <<EOF
socket = $sock
sokcet = $dir/other
root = $dir/old-root
max-inflight = x
network-fs-chunk = 1K
EOF
"$HOTMAPD" --check-config --config "$bad" >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 2 ] && [ "$(wc -l <"$dir/err")" -eq 3 ] &&
   grep -qxF "hotmapd: $bad:2: unknown key 'sokcet'" "$dir/err" &&
   grep -qxF "hotmapd: $bad:4: max-inflight: not a number: 'x'" "$dir/err" &&
   grep -qF "hotmapd: $bad:5: network-fs-chunk: 1K is out of range" "$dir/err" &&
   ! grep -q "configuration OK" "$dir/out" && [ ! -e "$sock" ]; then
	ok "--check-config of a file with 3 errors: exit 2, all three with their lines"
else
	not_ok "--check-config of a file with 3 errors: exit 2, all three with their lines" \
		"exit $rc" "$(cat "$dir/out" "$dir/err")"
fi

"$HOTMAPD" --config "$bad" >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 2 ] && [ "$(wc -l <"$dir/err")" -eq 3 ] && [ ! -e "$sock" ]; then
	ok "hotmapd does not start from a file with errors (exit 2)"
else
	not_ok "hotmapd does not start from a file with errors (exit 2)" "exit $rc" "$(cat "$dir/err")"
fi

"$HOTMAPD" --check-config --config "$dir/missing.conf" >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 2 ] && grep -qF "hotmapd: $dir/missing.conf: No such file or directory" "$dir/err"; then
	ok "--config of a missing file is an error"
else
	not_ok "--config of a missing file is an error" "exit $rc" "$(cat "$dir/err")"
fi

# --- serving from the file ---------------------------------------------------------
# foreground = yes: the file keeps it in the foreground, where $! is it.
"$HOTMAPD" --config "$conf" >"$dir/hotmapd.log" 2>&1 &
pid=$!
wait_listening
ok "hotmapd listens on the socket the file names, in the foreground"

mode=$(stat -c %a "$sock")
group=$(stat -c %g "$sock")
if [ "$mode" = 640 ] && [ "$group" = "$gid" ]; then
	ok "socket-mode and socket-group are the socket's"
else
	not_ok "socket-mode and socket-group are the socket's" "mode $mode group $group (want 640 $gid)"
fi

read_ok "a file beneath the file's root opens by path" "$dir/old-root/a" "under the old root"
read_refused "a file beneath no root does not" "$dir/new-root/b"

# --- SIGHUP with a changed file -----------------------------------------------------
cat >"$conf" <<EOF
socket = $sock
socket-mode = 0600
root = $dir/new-root
foreground = yes
log-level = info
max-inflight = 16
EOF
kill -HUP "$pid"
if wait_log "reload: configuration in use from $conf"; then
	ok "SIGHUP reloads the file"
else
	not_ok "SIGHUP reloads the file" "$(tail -n 20 "$dir/hotmapd.log")"
fi
read_ok "after the reload, a file beneath the new root opens" "$dir/new-root/b" "under the new root"
read_refused "and the old root is gone" "$dir/old-root/a"
if grep -q "reload: socket-mode changed from '0640' to '0600': needs a restart" "$dir/hotmapd.log" &&
   grep -q "reload: socket-group changed .*needs a restart" "$dir/hotmapd.log" &&
   [ "$(stat -c %a "$sock")" = 640 ]; then
	ok "values that need a restart are logged and kept"
else
	not_ok "values that need a restart are logged and kept" "$(tail -n 20 "$dir/hotmapd.log")"
fi
if kill -0 "$pid" 2>/dev/null && ctl ping >/dev/null 2>&1 &&
   grep -q "reload: max-inflight = 16 (was 32)" "$dir/hotmapd.log"; then
	ok "the same daemon serves on, and logs what changed"
else
	not_ok "the same daemon serves on, and logs what changed" "$(tail -n 20 "$dir/hotmapd.log")"
fi

# --- SIGHUP with a broken file ------------------------------------------------------
cat >"$conf" <<EOF
socket = $sock
root = $dir/old-root
workers = many
this line is not a key
EOF
kill -HUP "$pid"
if wait_log "reload failed" &&
   grep -qF "reload: $conf:3: workers: not a number: 'many'" "$dir/hotmapd.log" &&
   grep -qF "reload: $conf:4: syntax error" "$dir/hotmapd.log"; then
	ok "SIGHUP with a broken file logs every error"
else
	not_ok "SIGHUP with a broken file logs every error" "$(tail -n 20 "$dir/hotmapd.log")"
fi
read_ok "the old configuration goes on serving" "$dir/new-root/b" "under the new root"
read_refused "and nothing of the broken file applies" "$dir/old-root/a"

# --- hotmapctl reload ---------------------------------------------------------------
cat >"$conf" <<EOF
socket = $sock
socket-mode = 0600
root = $dir/new-root
foreground = yes
log-level = info
max-inflight = 8
EOF
out=$(ctl reload 2>&1)
rc=$?
if [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -qx "max-inflight = 8 (was 16)" &&
   printf '%s\n' "$out" | grep -q "^kept: socket-mode changed from '0640' to '0600': needs a restart" &&
   printf '%s\n' "$out" | grep -qx "configuration in use from $conf"; then
	ok "hotmapctl reload reloads the file and prints what changed and what is kept"
else
	not_ok "hotmapctl reload reloads the file and prints what changed and what is kept" \
		"exit $rc:" "$out"
fi
cat >"$conf" <<EOF
socket = $sock
root = $dir/old-root
workers = many
this line is not a key
EOF
out=$(ctl reload 2>&1)
rc=$?
if [ $rc -eq 1 ] && printf '%s\n' "$out" | grep -qF "reload: $conf:3: workers: not a number: 'many'" &&
   printf '%s\n' "$out" | grep -qF "reload: $conf:4: syntax error" &&
   printf '%s\n' "$out" | grep -q "reload failed: the daemon keeps the configuration in use"; then
	ok "hotmapctl reload of a broken file prints every error and exits 1"
else
	not_ok "hotmapctl reload of a broken file prints every error and exits 1" "exit $rc:" "$out"
fi
if ctl config 2>/dev/null | grep -q "^max-inflight  *= 8 " &&
   [ "$(ctl read --by-path "$dir/new-root/b" 2>&1)" = "under the new root" ]; then
	ok "after it, the configuration the good reload put in force serves on"
else
	not_ok "after it, the configuration the good reload put in force serves on" \
		"$(ctl config 2>&1 | grep max-inflight)"
fi

# --- stop ---------------------------------------------------------------------------
kill -TERM "$pid"
wait "$pid"
rc=$?
pid=
if [ $rc -eq 0 ] && [ ! -e "$sock" ]; then
	ok "hotmapd exits 0 on SIGTERM and removes its socket"
else
	not_ok "hotmapd exits 0 on SIGTERM and removes its socket" "exit $rc" \
		"$(tail -n 20 "$dir/hotmapd.log")"
fi

if [ "$n" -ne "$PLAN" ]; then
	echo "# ran $n tests, planned $PLAN"
	exit 1
fi
tap_finish
