# SPDX-License-Identifier: MIT
# tap.sh - TAP, and waiting for hotmapd, for the shell tests; sourced:
#   . "${TESTS_SRCDIR:-$(dirname "$0")}/tap.sh"
#
# ok NAME; not_ok NAME [DETAIL...] (each detail a comment line); bail
# MESSAGE (ends the test; the end of $dir/hotmapd.log, when there is one,
# is shown); tap_finish (the exit status: 1 if any failed, with the end of
# the log).  n counts the tests, failed the failures.
#
# wait_listening: after "$HOTMAPD ... &" with pid=$!, returns once the
# daemon answers ctl ping (the script's own function, on $sock); bails if
# it exits first or does not listen within 30 s.

n=0
failed=0

ok() {
	n=$((n + 1))
	echo "ok $n - $1"
}

not_ok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $1"
	shift
	for line in "$@"; do
		printf '%s\n' "$line" | sed 's/^/# /'
	done
}

tap_log_tail() {
	[ -n "$dir" ] && [ -f "$dir/hotmapd.log" ] && tail -n 40 "$dir/hotmapd.log" | sed 's/^/# /'
}

bail() {
	echo "Bail out! $1"
	tap_log_tail
	exit 1
}

tap_finish() {
	if [ "$failed" -gt 0 ]; then
		echo "# $failed of $n failed; the end of hotmapd.log:"
		tap_log_tail
		exit 1
	fi
	exit 0
}

wait_listening() {
	tries=0
	until ctl ping >/dev/null 2>&1; do
		kill -0 "$pid" 2>/dev/null || { wait "$pid"; bail "hotmapd exited ($?) before listening"; }
		tries=$((tries + 1))
		[ "$tries" -lt 300 ] || bail "hotmapd did not listen on $sock within 30 s"
		sleep 0.1
	done
}
