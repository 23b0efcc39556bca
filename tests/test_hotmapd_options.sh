#!/bin/sh
# SPDX-License-Identifier: MIT
# hotmapd's command line: bad values are refused with exit 2 and a message
# naming the option, before anything is bound; --help and --version work.
# TAP.
hotmapd=${HOTMAPD:-$(dirname "$0")/../daemon/hotmapd}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hotmapd-options.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. "${TESTS_SRCDIR:-$(dirname "$0")}/tap.sh"

echo "1..11"
refuse() {
	"$hotmapd" --socket "$tmp/sock" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc -eq 2 ] && grep -q -- "^hotmapd: $1" "$tmp/err" && [ ! -e "$tmp/sock" ]; then
		ok "refused: $*"
	else
		not_ok "refused: $* (exit $rc)" "$(cat "$tmp/err")"
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
refuse --cross-mounts maybe
if "$hotmapd" --help | grep -q -- "--idle-timeout"; then ok "--help lists the options"
else not_ok "--help lists the options"; fi
if "$hotmapd" --version | grep -q "^hotmapd [0-9]"; then ok "--version"
else not_ok "--version"; fi
[ "$failed" -eq 0 ]
