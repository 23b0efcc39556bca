#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs each libFuzzer target for FUZZ_SECONDS (default 5) from its seed
# corpus, and prints TAP: one test per target, with the executions and
# coverage it reached.  make check runs it; make fuzz-long runs it with
# FUZZ_SECONDS=300 and FUZZ_KEEP=yes.
#
# The corpus in the source tree is only read.  What a run finds goes to
# tests/fuzz/work/<target>/ of the build tree (kept with FUZZ_KEEP=yes,
# for the next run to start from); a crash is written to
# tests/fuzz/crashes/ and its log is shown.  Add the crash input to
# tests/fuzz/corpus/<target>/ once fixed: it is then run every time.
#
# Environment (set by make): FUZZ_BUILDDIR, FUZZ_SRCDIR, FUZZ_NAMES, and
# FUZZ_ENABLED=yes when configure found clang with libFuzzer.  Without it
# the test skips, or fails with HOTMAP_REQUIRE_FUZZ=1 (as .ci/run sets).
set -u

: "${FUZZ_BUILDDIR:?}" "${FUZZ_SRCDIR:?}"
names=${FUZZ_NAMES:-frame config session}
seconds=${FUZZ_SECONDS:-5}

if [ "${FUZZ_ENABLED:-no}" != yes ]; then
	why="no clang with libFuzzer (-fsanitize=fuzzer): install clang and libclang-rt-dev, then configure again"
	if [ "${HOTMAP_REQUIRE_FUZZ:-0}" = 1 ]; then
		echo "Bail out! fuzzing is required (HOTMAP_REQUIRE_FUZZ=1): $why"
		exit 1
	fi
	echo "1..0 # SKIP $why"
	exit 0
fi

set -- $names
echo "1..$#"
# SIGBUS is the daemon's own (its guard recovers from truncated files);
# leaks are errors.
ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}handle_sigbus=1:detect_leaks=1:abort_on_error=1
UBSAN_OPTIONS=${UBSAN_OPTIONS:-}${UBSAN_OPTIONS:+:}print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS UBSAN_OPTIONS
mkdir -p "$FUZZ_BUILDDIR/crashes"
n=0
status=0
for name in "$@"; do
	n=$((n + 1))
	prog=$FUZZ_BUILDDIR/fuzz_$name
	log=$FUZZ_BUILDDIR/fuzz_$name.log
	work=$FUZZ_BUILDDIR/work/$name
	corpus=$FUZZ_SRCDIR/corpus/$name
	if [ ! -x "$prog" ]; then
		echo "not ok $n - fuzz_$name: $prog was not built (make fuzz)"
		status=1
		continue
	fi
	[ "${FUZZ_KEEP:-no}" = yes ] || rm -rf "$work"
	mkdir -p "$work"
	dict=
	[ -f "$FUZZ_SRCDIR/$name.dict" ] && dict=-dict=$FUZZ_SRCDIR/$name.dict
	# New inputs go to the first directory, the work one; the source
	# tree's corpus is only read.  -timeout: a single input running
	# longer is a hang, reported as a crash.
	"$prog" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -max_len=65536 \
		-print_final_stats=1 -artifact_prefix="$FUZZ_BUILDDIR/crashes/$name-" \
		$dict "$work" "$corpus" > "$log" 2>&1
	rc=$?
	# "#12345  DONE   cov: 812 ft: 2210 corp: 140/30Kb ..." and the stats
	done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	cov=$(echo "$done_line" | sed -n 's/.* cov: \([0-9]*\).* ft: \([0-9]*\).*/cov \1, ft \2/p')
	if [ $rc -eq 0 ] && [ -n "$done_line" ]; then
		echo "ok $n - fuzz_$name: ${execs:-?} executions in ${seconds} s (${cov:-no coverage line})"
	else
		echo "not ok $n - fuzz_$name: exit $rc after ${execs:-?} executions; the input is in $FUZZ_BUILDDIR/crashes/"
		sed -e 's/^/# /' "$log" | tail -n 80
		status=1
	fi
done
exit $status
