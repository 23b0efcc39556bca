#!/bin/sh
# hotmapd's command line: bad values are refused with exit 2 and a message
# naming the option, before anything is bound; --help and --version work.
# TAP.
hotmapd=${HOTMAPD:-$(dirname "$0")/../daemon/hotmapd}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hotmapd-options.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
n=0
status=0

echo "1..10"
refuse() {
	n=$((n + 1))
	"$hotmapd" --socket "$tmp/sock" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc -eq 2 ] && grep -q -- "^hotmapd: $1" "$tmp/err" && [ ! -e "$tmp/sock" ]; then
		echo "ok $n - refused: $*"
	else
		echo "not ok $n - refused: $* (exit $rc)"
		sed 's/^/# /' "$tmp/err"
		status=1
	fi
}
refuse --workers 0
refuse --workers 257
refuse --workers x
refuse --max-connections-per-uid 0
refuse --max-connections-per-uid 12abc
refuse --idle-timeout -1
refuse --idle-timeout ""
refuse --backend fast
n=$((n + 1))
if "$hotmapd" --help | grep -q -- "--idle-timeout"; then echo "ok $n - --help lists the options"
else echo "not ok $n - --help lists the options"; status=1; fi
n=$((n + 1))
if "$hotmapd" --version | grep -q "^hotmapd [0-9]"; then echo "ok $n - --version"
else echo "not ok $n - --version"; status=1; fi
exit $status
