#!/bin/sh
# SPDX-License-Identifier: MIT
# test_daemon_mode.sh - hotmapd as an operator runs it without systemd:
# detaching (a caller reading its output through a pipe gets it back at
# once), the pid file, the log file and syslog, dropping to another user,
# hotmapctl stop, and the exit statuses of bad command lines.
#
# Prints TAP.  make check sets HOTMAPD and HOTMAPCTL; run by hand from the
# build directory, the paths below it are used.  Everything lives in one
# mktemp directory, removed at the end; every daemon started is killed.
# Each start of a daemon runs under timeout(1): a daemon that holds on to
# its caller fails a test instead of hanging the suite.

# strerror texts are matched below.
LC_ALL=C
export LC_ALL

HOTMAPD=${HOTMAPD:-daemon/hotmapd}
HOTMAPCTL=${HOTMAPCTL:-hotmapctl/hotmapctl}
# Absolute: tests run hotmapd from other directories.
case $HOTMAPD in /*) ;; *) HOTMAPD=$PWD/$HOTMAPD ;; esac
case $HOTMAPCTL in /*) ;; *) HOTMAPCTL=$PWD/$HOTMAPCTL ;; esac
PLAN=30

. "${TESTS_SRCDIR:-$(dirname "$0")}/tap.sh"

echo "1..$PLAN"
for prog in "$HOTMAPD" "$HOTMAPCTL"; do
	[ -x "$prog" ] || bail "$prog not found: set HOTMAPD and HOTMAPCTL, or run from the build directory"
done
command -v timeout >/dev/null 2>&1 || bail "timeout(1) is needed"

dir=$(mktemp -d "${TMPDIR:-/tmp}/hotmapd-daemon-test.XXXXXX") || exit 1
sock=$dir/sock
pidfile=$dir/hotmapd.pid
logfile=$dir/hotmapd.log
pids=
cleanup() {
	for p in $pids; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

ctl() {
	"$HOTMAPCTL" --socket "$sock" "$@"
}

# daemon_pid [SOCKET]: the pid ping reports (and remembered for cleanup).
daemon_pid() {
	p=$("$HOTMAPCTL" --socket "${1:-$sock}" ping 2>/dev/null | sed -n 's/.* pid \([0-9]*\) .*/\1/p')
	[ -n "$p" ] && pids="$pids $p"
	echo "$p"
}

# gone PID: until the process PID no longer exists, or is a zombie no
# one reaps yet (5 s at most).
gone() {
	tries=0
	while kill -0 "$1" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; do
		tries=$((tries + 1))
		[ "$tries" -lt 50 ] || return 1
		sleep 0.1
	done
}

# --- detaching ------------------------------------------------------------------
# With stdout and stderr into a pipe, as `hotmapd | tail` has them: the
# pipe must close when hotmapd returns, not when the daemon dies.
timeout 20 sh -c '"$1" --socket "$2" --pid-file "$3" --log-file "$4" 2>&1 | cat' sh \
	"$HOTMAPD" "$sock" "$pidfile" "$logfile" >"$dir/out"
rc=$?
pid=$(daemon_pid)
if [ $rc -eq 0 ] && [ ! -s "$dir/out" ] && [ -n "$pid" ]; then
	ok "hotmapd | cat returns once the daemon listens, printing nothing"
else
	not_ok "hotmapd | cat returns once the daemon listens, printing nothing" \
		"exit $rc (124: timed out), pid '$pid'" "$(cat "$dir/out")"
	[ -n "$pid" ] || bail "no daemon to test further"
fi

if [ "$(cat "$pidfile" 2>/dev/null)" = "$pid" ]; then
	ok "the pid file holds the daemon's pid"
else
	not_ok "the pid file holds the daemon's pid" "pid file: '$(cat "$pidfile" 2>&1)', ping: $pid"
fi

stat=$(cat "/proc/$pid/stat" 2>/dev/null)
# fields after the ")" of the name: state ppid pgrp session tty_nr
set -- ${stat##*) }
if [ "$(readlink "/proc/$pid/cwd")" = / ] && [ "$4" != "$pid" ] && [ "$5" = 0 ] &&
   [ "$(readlink "/proc/$pid/fd/0")" = /dev/null ] &&
   [ "$(readlink "/proc/$pid/fd/1")" = /dev/null ] &&
   [ "$(readlink "/proc/$pid/fd/2")" = /dev/null ]; then
	ok "the daemon works from /, has no terminal, is no session leader, its stdio is /dev/null"
else
	not_ok "the daemon works from /, has no terminal, is no session leader, its stdio is /dev/null" \
		"cwd $(readlink "/proc/$pid/cwd"), session $4, tty $5" \
		"fds: $(ls -l "/proc/$pid/fd" 2>&1 | head -n 6)"
fi

ts='[0-9]\{4\}-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]\.[0-9]\{3\}[-+][0-9][0-9]:[0-9][0-9]'
if grep -q "^$ts hotmapd\[$pid\]: notice: hotmapd .* ready on $sock" "$logfile"; then
	ok "the log file gets lines with ISO 8601 timestamps"
else
	not_ok "the log file gets lines with ISO 8601 timestamps" "$(cat "$logfile" 2>&1)"
fi

# logrotate: move the file away, SIGHUP, and the daemon writes a new one.
mv "$logfile" "$logfile.1"
kill -HUP "$pid"
tries=0
until grep -q "reload: configuration in use" "$logfile" 2>/dev/null; do
	tries=$((tries + 1))
	[ "$tries" -lt 100 ] || break
	sleep 0.1
done
if grep -q "^$ts hotmapd\[$pid\]: notice: reload: configuration in use" "$logfile" 2>/dev/null &&
   ! grep -q reload "$logfile.1"; then
	ok "SIGHUP reopens the log file, as logrotate needs"
else
	not_ok "SIGHUP reopens the log file, as logrotate needs" "new: $(cat "$logfile" 2>&1)" \
		"old: $(cat "$logfile.1")"
fi

timeout 20 "$HOTMAPD" --socket "$dir/sock2" --pid-file "$pidfile" >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "^hotmapd: error: pid-file $pidfile is held by a running hotmapd, pid $pid$" "$dir/err" &&
   [ ! -e "$dir/sock2" ] && [ "$(cat "$pidfile")" = "$pid" ]; then
	ok "a second hotmapd on the same pid file is refused, naming the first"
else
	not_ok "a second hotmapd on the same pid file is refused, naming the first" "exit $rc" \
		"$(cat "$dir/err")"
fi

# --- hotmapctl stop -------------------------------------------------------------
# Another user may not stop it (root only: setpriv makes one).
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
	chmod 755 "$dir"
	setpriv --reuid 1 --regid 1 --clear-groups "$HOTMAPCTL" --socket "$sock" stop \
		>"$dir/out" 2>"$dir/err"
	rc=$?
	chmod 700 "$dir"
	if [ $rc -eq 1 ] && grep -q "needs an administrator" "$dir/err" && [ ! -s "$dir/out" ] &&
	   ctl ping >/dev/null 2>&1; then
		ok "stop from a user who is not an administrator is refused; the daemon serves on"
	else
		not_ok "stop from a user who is not an administrator is refused; the daemon serves on" \
			"exit $rc" "$(cat "$dir/out" "$dir/err")"
	fi
else
	ok "stop from a user who is not an administrator is refused # SKIP needs root and setpriv"
fi

timeout 20 "$HOTMAPCTL" --socket "$sock" stop >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 0 ] && [ "$(cat "$dir/out")" = "hotmapd pid $pid stopped" ] && [ ! -s "$dir/err" ] &&
   ! ctl ping >/dev/null 2>&1; then
	ok "hotmapctl stop stops the daemon and waits until its socket refuses"
else
	not_ok "hotmapctl stop stops the daemon and waits until its socket refuses" "exit $rc" \
		"$(cat "$dir/out" "$dir/err")"
fi
if gone "$pid" && [ ! -e "$pidfile" ] && [ ! -e "$sock" ]; then
	ok "the daemon exits, removing its pid file and its socket"
else
	not_ok "the daemon exits, removing its pid file and its socket" "$(ls -l "$dir")"
fi
if grep -q "notice: STOP from pid [0-9]* uid $(id -u): shutting down" "$logfile"; then
	ok "the log says who stopped it"
else
	not_ok "the log says who stopped it" "$(cat "$logfile")"
fi

timeout 20 "$HOTMAPCTL" --socket "$sock" stop >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "^hotmapctl: " "$dir/err"; then
	ok "hotmapctl stop with no daemon fails"
else
	not_ok "hotmapctl stop with no daemon fails" "exit $rc" "$(cat "$dir/out" "$dir/err")"
fi

# Under socket activation the socket is systemd's: stop says so instead of
# waiting for it to go.
if command -v systemd-socket-activate >/dev/null 2>&1; then
	systemd-socket-activate -l "$dir/sa.sock" "$HOTMAPD" --foreground >"$dir/sa.log" 2>&1 &
	pid=$!
	pids="$pids $pid"
	tries=0
	until [ -S "$dir/sa.sock" ] || [ "$tries" -ge 100 ]; do
		tries=$((tries + 1))
		sleep 0.1
	done
	timeout 20 "$HOTMAPCTL" --socket "$dir/sa.sock" stop >"$dir/out" 2>"$dir/err"
	rc=$?
	if [ $rc -eq 0 ] && grep -q "^hotmapd pid $pid stopping; systemd keeps its socket" "$dir/out" &&
	   gone "$pid"; then
		ok "stop under socket activation: the daemon goes, the socket is systemd's"
	else
		not_ok "stop under socket activation: the daemon goes, the socket is systemd's" "exit $rc" \
			"$(cat "$dir/out" "$dir/err" "$dir/sa.log")"
	fi
else
	ok "stop under socket activation # SKIP systemd-socket-activate is not installed"
fi

# --- syslog ---------------------------------------------------------------------
# Without log-file a detached daemon logs to syslog, which may go nowhere
# here: what can be seen is that nothing reaches the caller and the daemon
# serves, reloads and stops.
timeout 20 sh -c '"$1" --socket "$2" -v 2>&1 | cat' sh "$HOTMAPD" "$sock" >"$dir/out"
rc=$?
pid=$(daemon_pid)
[ -n "$pid" ] && kill -HUP "$pid"
sleep 0.2
if [ $rc -eq 0 ] && [ -n "$pid" ] && ctl ping >/dev/null 2>&1 &&
   ! grep -qv "^hotmapd: info: configuration from" "$dir/out"; then
	ok "detached without log-file: syslog; nothing for the caller once ready, and it serves"
else
	not_ok "detached without log-file: syslog; nothing for the caller once ready, and it serves" \
		"exit $rc, pid '$pid'" "$(cat "$dir/out")"
fi
if [ -n "$pid" ] && timeout 20 "$HOTMAPCTL" --socket "$sock" stop >/dev/null 2>&1 && gone "$pid"; then
	ok "and it stops"
else
	not_ok "and it stops"
fi

# --- errors before readiness reach the caller ----------------------------------------
: >"$dir/file"
timeout 20 sh -c '"$1" --socket "$2" 2>&1 | cat' sh "$HOTMAPD" "$dir/file/sock" >"$dir/out"
rc=$?
if [ $rc -eq 0 ] && grep -q "^hotmapd: error: .*$dir/file" "$dir/out"; then
	ok "a daemon that cannot bind says why on the caller's stderr"
else
	not_ok "a daemon that cannot bind says why on the caller's stderr" "exit $rc" "$(cat "$dir/out")"
fi
timeout 20 "$HOTMAPD" --socket "$dir/file/sock" >/dev/null 2>&1
rc=$?
if [ $rc -eq 1 ]; then
	ok "and the caller exits 1"
else
	not_ok "and the caller exits 1" "exit $rc"
fi

# --- relative paths ----------------------------------------------------------------
mkdir "$dir/cwd"
(cd "$dir/cwd" && timeout 20 "$HOTMAPD" --socket rel.sock --pid-file rel.pid --log-file rel.log) \
	>"$dir/out" 2>&1
rc=$?
pid=$(daemon_pid "$dir/cwd/rel.sock")
if [ $rc -eq 0 ] && [ -n "$pid" ] && [ "$(cat "$dir/cwd/rel.pid" 2>/dev/null)" = "$pid" ] &&
   grep -q "ready on $dir/cwd/rel.sock" "$dir/cwd/rel.log"; then
	ok "relative paths on the command line are the caller's directory's"
else
	not_ok "relative paths on the command line are the caller's directory's" "exit $rc" \
		"$(cat "$dir/out")" "$(ls -l "$dir/cwd")"
fi
[ -n "$pid" ] && "$HOTMAPCTL" --socket "$dir/cwd/rel.sock" stop >/dev/null 2>&1

(cd "$dir" && HOTMAP_SOCKET=rel.sock timeout 20 "$HOTMAPD") >"$dir/out" 2>"$dir/err"
rc=$?
(cd "$dir" && HOTMAP_SOCKET=rel.sock timeout 20 "$HOTMAPD" --check-config) >"$dir/out" 2>"$dir/err2"
rc2=$?
if [ $rc -eq 2 ] && grep -q "socket: 'rel.sock' is a relative path" "$dir/err" &&
   [ ! -e "$dir/rel.sock" ] && [ $rc2 -eq 2 ] && cmp -s "$dir/err" "$dir/err2"; then
	ok "a relative socket from the environment is refused in daemon mode, --check-config too (exit 2)"
else
	not_ok "a relative socket from the environment is refused in daemon mode, --check-config too (exit 2)" \
		"exit $rc and $rc2" "$(cat "$dir/err" "$dir/err2")"
fi

# A reload of a broken file still reopens the log: logrotate's SIGHUP
# must not leave the daemon writing into the rotated file.
printf 'socket = %s\nlog-file = %s\n' "$sock" "$logfile.conf" >"$dir/good.conf"
timeout 20 "$HOTMAPD" --config "$dir/good.conf" >"$dir/out" 2>&1
pid=$(daemon_pid)
mv "$logfile.conf" "$logfile.conf.1"
echo "workers = lots" >>"$dir/good.conf"
[ -n "$pid" ] && kill -HUP "$pid"
tries=0
until grep -q "reload failed" "$logfile.conf" 2>/dev/null || [ "$tries" -ge 100 ]; do
	tries=$((tries + 1))
	sleep 0.1
done
if [ -n "$pid" ] && grep -q "error: reload: .*workers: not a number: 'lots'" "$logfile.conf" &&
   ctl ping >/dev/null 2>&1; then
	ok "a reload of a broken file reopens the log all the same, and serves on"
else
	not_ok "a reload of a broken file reopens the log all the same, and serves on" "pid '$pid'" \
		"$(cat "$dir/out" "$logfile.conf" 2>&1)"
fi
[ -n "$pid" ] && ctl stop >/dev/null 2>&1

# --- foreground with log-file ---------------------------------------------------------
"$HOTMAPD" --foreground --socket "$sock" --log-file "$logfile.fg" >"$dir/out" 2>"$dir/err" &
pid=$!
pids="$pids $pid"
wait_listening
if grep -q "^$ts hotmapd\[$pid\]: notice: hotmapd .* ready" "$logfile.fg" && [ ! -s "$dir/err" ]; then
	ok "in the foreground, log-file takes the log from stderr"
else
	not_ok "in the foreground, log-file takes the log from stderr" "$(cat "$dir/err")"
fi
kill "$pid"
wait "$pid"
rc=$?
if [ $rc -eq 0 ] && grep -q "SIGTERM: shutting down" "$logfile.fg"; then
	ok "and SIGTERM ends it (exit 0), logged there"
else
	not_ok "and SIGTERM ends it (exit 0), logged there" "exit $rc"
fi

# --- user and group -------------------------------------------------------------------
if [ "$(id -u)" -eq 0 ] && getent passwd nobody >/dev/null 2>&1; then
	nuid=$(id -u nobody)
	ngid=$(id -g nobody)
	timeout 20 "$HOTMAPD" --socket "$sock" --pid-file "$pidfile" --user nobody \
		>"$dir/out" 2>"$dir/err"
	rc=$?
	pid=$(daemon_pid)
	uids=$(sed -n 's/^Uid:[[:space:]]*//p' "/proc/$pid/status" 2>/dev/null | tr -s ' \t' '  ')
	gids=$(sed -n 's/^Gid:[[:space:]]*//p' "/proc/$pid/status" 2>/dev/null | tr -s ' \t' '  ')
	groups=$(sed -n 's/^Groups:[[:space:]]*//p' "/proc/$pid/status" 2>/dev/null | tr -d ' \t')
	if [ $rc -eq 0 ] && [ -n "$pid" ] && [ "$uids" = "$nuid $nuid $nuid $nuid" ] &&
	   [ "$gids" = "$ngid $ngid $ngid $ngid" ] && { [ -z "$groups" ] || [ "$groups" != 0 ]; } &&
	   [ "$(stat -c %u "/proc/$pid/fd")" = 0 ] &&
	   [ "$(cat "$pidfile")" = "$pid" ]; then
		ok "user nobody: every uid and gid is nobody's, /proc/PID/fd root's (not dumpable), the pid file written"
	else
		not_ok "user nobody: every uid and gid is nobody's, /proc/PID/fd root's (not dumpable), the pid file written" \
			"exit $rc, pid '$pid', Uid $uids, Gid $gids, Groups $groups" \
			"$(ls -ld "/proc/$pid/fd")" "$(cat "$dir/err")"
	fi
	# root is an administrator whoever hotmapd runs as
	if [ -n "$pid" ] && timeout 20 "$HOTMAPCTL" --socket "$sock" stop >/dev/null 2>&1 &&
	   gone "$pid" && [ ! -s "$pidfile" ]; then
		ok "and root stops it; the pid file it may no longer remove is emptied"
	else
		not_ok "and root stops it; the pid file it may no longer remove is emptied" \
			"$(ls -l "$dir")"
	fi
else
	ok "user nobody # SKIP needs root and a user nobody"
	ok "and root stops it # SKIP needs root and a user nobody"
fi

if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
	set -- setpriv --reuid 65534 --regid 65534 --clear-groups "$HOTMAPD" --user root
else
	set -- "$HOTMAPD" --user root
fi
timeout 20 "$@" --socket "$dir/sock3" >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "^hotmapd: error: user: hotmapd runs as uid [0-9]*, not as root" "$dir/err" &&
   [ ! -e "$dir/sock3" ]; then
	ok "another user than our own, not as root: refused before anything is bound"
else
	not_ok "another user than our own, not as root: refused before anything is bound" "exit $rc" \
		"$(cat "$dir/err")"
fi

timeout 20 "$HOTMAPD" --socket "$sock" --user hotmap-no-such-user >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 2 ] && [ "$(cat "$dir/err")" = "hotmapd: --user: unknown user 'hotmap-no-such-user'" ]; then
	ok "an unknown user is a configuration error (exit 2)"
else
	not_ok "an unknown user is a configuration error (exit 2)" "exit $rc" "$(cat "$dir/err")"
fi

# --- the command line's exit statuses ----------------------------------------------------
timeout 20 "$HOTMAPD" --socket "$sock" --no-such-option >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 2 ] && [ ! -s "$dir/out" ] && [ "$(wc -l <"$dir/err")" -eq 2 ] &&
   [ "$(head -n 1 "$dir/err")" = "hotmapd: unknown option '--no-such-option'" ] &&
   [ "$(tail -n 1 "$dir/err")" = "Try 'hotmapd --help' for more information." ]; then
	ok "an unknown option: one line and a pointer to --help, exit 2"
else
	not_ok "an unknown option: one line and a pointer to --help, exit 2" "exit $rc" \
		"$(cat "$dir/err")"
fi
timeout 20 "$HOTMAPD" --socket >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 2 ] && [ "$(head -n 1 "$dir/err")" = "hotmapd: option '--socket' needs a value" ] &&
   [ "$(wc -l <"$dir/err")" -eq 2 ]; then
	ok "an option without its value: one line and a pointer, exit 2"
else
	not_ok "an option without its value: one line and a pointer, exit 2" "exit $rc" \
		"$(cat "$dir/err")"
fi

timeout 20 "$HOTMAPD" --socket "$sock" --workers 0 >/dev/null 2>&1
rc1=$?
timeout 20 "$HOTMAPD" --socket "$sock" --workers 0 --check-config >/dev/null 2>&1
rc2=$?
if [ $rc1 -eq 2 ] && [ $rc2 -eq 2 ]; then
	ok "a bad option value exits 2 with and without --check-config"
else
	not_ok "a bad option value exits 2 with and without --check-config" "$rc1 and $rc2"
fi
printf 'socket = %s\nworkers = lots\n' "$dir/sock4" >"$dir/bad.conf"
timeout 20 "$HOTMAPD" --config "$dir/bad.conf" >/dev/null 2>&1
rc1=$?
timeout 20 "$HOTMAPD" --config "$dir/bad.conf" --check-config >/dev/null 2>&1
rc2=$?
if [ $rc1 -eq 2 ] && [ $rc2 -eq 2 ] && [ ! -e "$dir/sock4" ]; then
	ok "a file with errors exits 2 with and without --check-config"
else
	not_ok "a file with errors exits 2 with and without --check-config" "$rc1 and $rc2"
fi
printf 'socket = %s\nlog-file = relative.log\n' "$sock" >"$dir/bad.conf"
timeout 20 "$HOTMAPD" --config "$dir/bad.conf" --check-config >/dev/null 2>"$dir/err"
rc=$?
if [ $rc -eq 2 ] && grep -qF "$dir/bad.conf:2: log-file: not an absolute path: 'relative.log'" "$dir/err"; then
	ok "a relative log-file in the file is an error, with its line"
else
	not_ok "a relative log-file in the file is an error, with its line" "exit $rc" "$(cat "$dir/err")"
fi

tap_finish
