#!/bin/sh
# SPDX-License-Identifier: MIT
# bench_smoke.sh - a smoke run of the benchmarks (bench/run --quick, nginx
# and charts skipped): fails if the bench fails or writes no results.  No
# timing is asserted.  TAP.
set -u

srcdir=$(cd "$(dirname "$0")/.." && pwd)
run=${BENCH_RUN:-$srcdir/bench/run}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_smoke.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "1..7"

if [ -z "${HMBENCH:-}" ] || [ ! -x "$HMBENCH" ]; then
	for t in 1 2 3 4 5 6 7; do
		echo "not ok $t - hmbench is not built (HMBENCH=${HMBENCH:-unset})"
	done
	exit 0
fi

# Not a timing assertion: a guard so that a hang fails instead of blocking
# make check.
guard=
command -v timeout >/dev/null 2>&1 && guard="timeout 600"

if $guard sh "$run" --quick --no-install --no-nginx --no-plot --results "$tmp/results" \
	>"$tmp/stdout" 2>"$tmp/stderr"; then
	echo "ok 1 - bench/run --quick exits 0"
else
	echo "not ok 1 - bench/run --quick failed"
	sed 's/^/# /' "$tmp/stderr" | tail -n 40
fi

csv=$tmp/results/results.csv
if [ -s "$csv" ] && [ -s "$tmp/results/results.json" ] && [ -s "$tmp/results/latency.csv" ]; then
	echo "ok 2 - results.csv, results.json and latency.csv written"
else
	echo "not ok 2 - results files missing or empty in $tmp/results"
fi

missing=
for w in rand4k seq1m train procs iso cache scale; do
	for c in pread hotmap; do
		grep -q "^$w,[^,]*,$c," "$csv" 2>/dev/null || missing="$missing $w/$c"
	done
done
if [ -z "$missing" ]; then
	echo "ok 3 - every workload has results for pread and hotmap"
else
	echo "not ok 3 - no results for:$missing"
fi

if grep -q "== rand4k" "$tmp/stdout" && grep -q "^# machine" "$tmp/stdout"; then
	echo "ok 4 - the table and how it was run are printed"
else
	echo "not ok 4 - no table on stdout"
	sed 's/^/# /' "$tmp/stdout" | tail -n 20
fi

# The A/A contender: pread run again as a contender of its own, in every
# in-process workload's table.
missing=
for w in rand4k seq1m dependent sample iso; do
	grep -q "^$w,[^,]*,pread-again," "$csv" 2>/dev/null || missing="$missing $w"
done
if [ -z "$missing" ]; then
	echo "ok 5 - pread-again (the A/A pair) has results in rand4k seq1m dependent sample iso"
else
	echo "not ok 5 - no pread-again results for:$missing"
fi

# --repeat: runs interleaved round by round, summarised per row (median
# ratio to pread and its IQR, pread-again's beside it), and repeat.csv.
rep=$tmp/repeat
if $guard "$HMBENCH" --quick --hotmapd "${HOTMAPD:-$srcdir/daemon/hotmapd}" --workloads rand4k \
	--contenders pread,pread-again,hotmap --batches 16 --repeat 2 --results "$rep" \
	>"$tmp/repeat.out" 2>"$tmp/repeat.err" &&
	grep -q "^  --repeat 2: 2 runs of 1 rounds" "$tmp/repeat.out" &&
	grep -Eq "^  single +hotmap +[0-9.]+ \[[0-9.]+-[0-9.]+\] +[0-9.]+ \[" "$tmp/repeat.out" &&
	grep -q "^rand4k,single,pread-again,2,1," "$rep/repeat.csv" &&
	grep -q "^rand4k,batch16,hotmap,2,1," "$rep/repeat.csv"; then
	echo "ok 6 - --repeat 2 prints and writes the per-run ratio summary"
else
	echo "not ok 6 - --repeat 2: no summary"
	sed 's/^/# /' "$tmp/repeat.err" "$tmp/repeat.out" | tail -n 30
fi

# Per row, the spread of the per-round ratios to pread ("rounds x"): with 2
# rounds, pread's own row shows its rounds against their median.
if grep -q "rounds x" "$tmp/repeat.out" &&
	grep -Eq "^  single +pread +.* 1\.00 \[[0-9.]+-[0-9.]+\]" "$tmp/repeat.out"; then
	echo "ok 7 - the table shows each row's spread of per-round ratios"
else
	echo "not ok 7 - no per-round ratio spread in the table"
fi
