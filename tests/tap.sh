# tap.sh - TAP for the shell tests, sourced by them:
#   . "${TESTS_SRCDIR:-$(dirname "$0")}/tap.sh"
#
# ok NAME; not_ok NAME [DETAIL...] (each detail a comment line); bail
# MESSAGE (ends the test; the end of $dir/hotmapd.log, when there is one,
# is shown); tap_finish (the exit status: 1 if any failed, with the end of
# the log).  n counts the tests, failed the failures.

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
