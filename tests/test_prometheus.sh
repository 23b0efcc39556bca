#!/bin/sh
# SPDX-License-Identifier: MIT
# test_prometheus.sh - hotmapctl stats --prometheus, as Prometheus's own
# checker sees it: `promtool check metrics` must accept it and say nothing
# (no lint either), and a few families must count what was done.
#
# Prints TAP.  Skipped when promtool (Debian: the prometheus package) is
# not installed, unless HOTMAP_REQUIRE_PROMTOOL=1, as CI sets it: then
# that is a failure.  make check sets HOTMAPD and HOTMAPCTL.

LC_ALL=C
export LC_ALL

HOTMAPD=${HOTMAPD:-daemon/hotmapd}
HOTMAPCTL=${HOTMAPCTL:-hotmapctl/hotmapctl}
PROMTOOL=${PROMTOOL:-promtool}
PLAN=10

. "${TESTS_SRCDIR:-$(dirname "$0")}/tap.sh"

if ! command -v "$PROMTOOL" >/dev/null 2>&1; then
	if [ "${HOTMAP_REQUIRE_PROMTOOL:-0}" = 1 ]; then
		echo "1..$PLAN"
		echo "Bail out! promtool is required (HOTMAP_REQUIRE_PROMTOOL=1) and not found"
		exit 1
	fi
	echo "1..0 # SKIP promtool not found (Debian: apt-get install prometheus)"
	exit 0
fi
for prog in "$HOTMAPD" "$HOTMAPCTL"; do
	if [ ! -x "$prog" ]; then
		echo "1..$PLAN"
		echo "Bail out! $prog not found: set HOTMAPD and HOTMAPCTL, or run from the build directory"
		exit 1
	fi
done

dir=$(mktemp -d "${TMPDIR:-/tmp}/hotmap-prom.XXXXXX") || exit 1
sock=$dir/sock
root=$dir/root
pid=
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

mkdir "$root" || exit 1
size=300001
head -c "$size" /dev/urandom >"$root/data" || exit 1

ctl() {
	"$HOTMAPCTL" --socket "$sock" "$@"
}

# sample FILE NAME: the value of the sample NAME (with its labels, as
# printed) in FILE; empty when there is none.
sample() {
	awk -v n="$2" '$1 == n { print $2; exit }' "$1"
}

echo "1..$PLAN"

"$HOTMAPD" --foreground --socket "$sock" --root "$root" -v >"$dir/hotmapd.log" 2>&1 &
pid=$!
wait_listening

ctl stats --prometheus >"$dir/before" 2>"$dir/err" || bail "stats --prometheus failed: $(cat "$dir/err")"
# opens and reads, so that the latency summaries are not empty: through
# the daemon (HOTMAP_DIRECT=0), whose counters this test reads
opens=3
i=0
while [ $i -lt $opens ]; do
	HOTMAP_DIRECT=0 ctl read "$root/data" >"$dir/copy" 2>"$dir/err" ||
		bail "read failed: $(cat "$dir/err")"
	cmp -s "$root/data" "$dir/copy" || bail "read gave other bytes than the file's"
	i=$((i + 1))
done
ctl stats --prometheus >"$dir/after" 2>"$dir/err"
rc=$?

# --- what promtool says ---------------------------------------------------------
out=$("$PROMTOOL" check metrics <"$dir/after" 2>&1)
prc=$?
if [ $rc -eq 0 ] && [ $prc -eq 0 ] && [ -z "$out" ]; then
	ok "promtool check metrics accepts stats --prometheus and says nothing"
else
	not_ok "promtool check metrics accepts stats --prometheus and says nothing" \
		"hotmapctl exit $rc, promtool exit $prc:" "$out" "$(cat "$dir/err")"
fi

# The check above must be able to fail: the same text without its HELP
# lines, and a counter named the old way, are each reported.
grep -v '^# HELP ' "$dir/after" >"$dir/nohelp"
out=$("$PROMTOOL" check metrics <"$dir/nohelp" 2>&1)
printf '# HELP hotmap_x_total x.\n# TYPE hotmap_x_total counter\nhotmap_x_total 1\n' >"$dir/old"
printf '# HELP hotmap_uptime_us x.\n# TYPE hotmap_uptime_us gauge\nhotmap_uptime_us 1\n' >>"$dir/old"
out2=$("$PROMTOOL" check metrics <"$dir/old" 2>&1)
if printf '%s\n' "$out" | grep -q "no help text" && printf '%s\n' "$out2" | grep -q "hotmap_uptime_us"; then
	ok "promtool reports what this test must catch: no HELP, units in the name"
else
	not_ok "promtool reports what this test must catch: no HELP, units in the name" \
		"without HELP:" "$out" "microseconds:" "$out2"
fi

# --- the families ------------------------------------------------------------------
helps=$(grep -c '^# HELP hotmap_' "$dir/after")
types=$(grep -c '^# TYPE hotmap_' "$dir/after")
bad=$(grep '^# TYPE ' "$dir/after" | grep -v ' \(counter\|gauge\|summary\)$')
if [ "$helps" -gt 20 ] && [ "$helps" = "$types" ] && [ -z "$bad" ] &&
   ! grep -q '_total_total\|_count_total\|_us\b\|_ns\b' "$dir/after"; then
	ok "every family has HELP and TYPE, typed, no doubled suffix or unit"
else
	not_ok "every family has HELP and TYPE, typed, no doubled suffix or unit" \
		"$helps HELP, $types TYPE; untyped: $bad"
fi

# Counters rise by what was done: opens, bytes, the timed opens.
o0=$(sample "$dir/before" 'hotmap_requests_total{type="open"}')
o1=$(sample "$dir/after" 'hotmap_requests_total{type="open"}')
if [ -n "$o0" ] && [ -n "$o1" ] && [ $((o1 - o0)) -eq $opens ]; then
	ok "hotmap_requests_total{type=\"open\"} rises by the opens made"
else
	not_ok "hotmap_requests_total{type=\"open\"} rises by the opens made" "before '$o0', after '$o1'"
fi
b0=$(sample "$dir/before" hotmap_served_bytes_total)
b1=$(sample "$dir/after" hotmap_served_bytes_total)
if [ -n "$b0" ] && [ -n "$b1" ] && [ $((b1 - b0)) -eq $((opens * size)) ]; then
	ok "hotmap_served_bytes_total rises by the bytes read"
else
	not_ok "hotmap_served_bytes_total rises by the bytes read" "before '$b0', after '$b1'"
fi
c0=$(sample "$dir/before" 'hotmap_request_duration_seconds_count{op="open"}')
c1=$(sample "$dir/after" 'hotmap_request_duration_seconds_count{op="open"}')
if grep -qx '# TYPE hotmap_request_duration_seconds summary' "$dir/after" &&
   [ -n "$c0" ] && [ -n "$c1" ] && [ $((c1 - c0)) -eq $opens ]; then
	ok "the open latency is a summary whose _count rises by the opens made"
else
	not_ok "the open latency is a summary whose _count rises by the opens made" \
		"before '$c0', after '$c1'" "$(grep request_duration "$dir/after")"
fi

# Seconds, not nanoseconds: an open takes more than 0 and (here) well under
# 10 s, and the quantiles are ordered; an operation never timed has NaN.
sum=$(sample "$dir/after" 'hotmap_request_duration_seconds_sum{op="open"}')
p50=$(sample "$dir/after" 'hotmap_request_duration_seconds{op="open",quantile="0.5"}')
p999=$(sample "$dir/after" 'hotmap_request_duration_seconds{op="open",quantile="0.999"}')
warm=$(sample "$dir/after" 'hotmap_request_duration_seconds{op="warm",quantile="0.5"}')
if [ -n "$sum" ] && [ -n "$p50" ] && [ -n "$p999" ] &&
   awk -v s="$sum" -v a="$p50" -v b="$p999" 'BEGIN { exit !(s > 0 && s < 10 && a > 0 && a <= b && b < 10) }' &&
   [ "$warm" = NaN ]; then
	ok "latencies are in seconds, quantiles ordered, NaN before the first"
else
	not_ok "latencies are in seconds, quantiles ordered, NaN before the first" \
		"sum '$sum', p50 '$p50', p999 '$p999', warm p50 '$warm'"
fi

up=$(sample "$dir/after" hotmap_uptime_seconds)
if [ -n "$up" ] && awk -v u="$up" 'BEGIN { exit !(u > 0 && u < 3600) }' &&
   [ "$(sample "$dir/after" hotmap_pid)" = "$pid" ] &&
   grep -q '^hotmap_info{version="[^"]*",libevent_version="[^"]*",protobuf_c_version="[^"]*"} 1$' "$dir/after"; then
	ok "uptime in seconds, the pid, and the versions as hotmap_info's labels"
else
	not_ok "uptime in seconds, the pid, and the versions as hotmap_info's labels" \
		"uptime '$up'" "$(grep 'hotmap_pid \|hotmap_info' "$dir/after")"
fi

# The ways direct reads were served: one family by way (not the family of
# all direct reads), and the populating time in seconds; all checked by
# promtool above.  Their values: tests/test_read_ways.c.
if [ "$(sample "$dir/after" 'hotmap_direct_reads_by_way_total{way="copy"}')" = 0 ] &&
   [ "$(sample "$dir/after" 'hotmap_direct_reads_by_way_total{way="pread"}')" = 0 ] &&
   grep -qx '# TYPE hotmap_direct_reads_by_way_total counter' "$dir/after" &&
   grep -qx '# TYPE hotmap_direct_populate_seconds_total counter' "$dir/after" &&
   grep -qx '# TYPE hotmap_direct_populated_blocks_total counter' "$dir/after" &&
   grep -qx '# TYPE hotmap_direct_probes_total counter' "$dir/after" &&
   grep -q '^hotmap_direct_reads_total 0$' "$dir/after"; then
	ok "direct reads by way, probes, populated blocks and their seconds are counters"
else
	not_ok "direct reads by way, probes, populated blocks and their seconds are counters" \
		"$(grep hotmap_direct_ "$dir/after")"
fi

# --prometheus and --json together are refused, in either order.
out=$(ctl stats -P -j 2>&1)
rc=$?
if [ $rc -eq 2 ] && printf '%s\n' "$out" | grep -q "not both"; then
	ok "stats -P -j exits 2: one format"
else
	not_ok "stats -P -j exits 2: one format" "exit $rc: $out"
fi

tap_finish
