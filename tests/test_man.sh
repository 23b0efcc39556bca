#!/bin/sh
# SPDX-License-Identifier: MIT
# Every man page is mandoc -Tlint clean at warning level (TAP).
srcdir=${TESTS_SRCDIR:-$(dirname "$0")}/..
# hotmapd.8 and hotmapd.conf.5 are made from their .in in the build tree
builddir=${TESTS_BUILDDIR:-$(dirname "$0")}/..
pages="man/hotmapd.8 man/hotmapd.conf.5 man/hotmapctl.1 man/libhotmap.3"
set -- $pages
echo "1..$(($# + 1))"

# hotmapctl(1) names every command and every option (long and short) that
# the command table gives: usage comes from the table, the page must follow.
if [ -z "$HOTMAPCTL" ] || [ ! -x "$HOTMAPCTL" ]; then
	echo "ok 1 - man/hotmapctl.1 names every command and option # SKIP HOTMAPCTL not set"
else
	missing=
	for cmd in $("$HOTMAPCTL" --help | sed -n 's/^  \([a-z][a-z]*\)\( .*\)\{0,1\}$/\1/p'); do
		grep -q "^\.\(It\|Nm\|Op\)\{0,1\}.*Cm $cmd\b" "$srcdir/man/hotmapctl.1" ||
			missing="$missing $cmd"
		for o in $("$HOTMAPCTL" "$cmd" --help | grep -o -- '^  -[a-zA-Z], --[a-z-]*\|^      --[a-z-]*'); do
			case $o in
			-?,) grep -q -- "Fl $(printf '%s' "$o" | cut -c2)\b" "$srcdir/man/hotmapctl.1" ||
				missing="$missing $cmd:${o%,}" ;;
			--*) grep -q -- "Fl -${o#--}\b" "$srcdir/man/hotmapctl.1" ||
				missing="$missing $cmd:$o" ;;
			esac
		done
	done
	if [ -z "$missing" ]; then
		echo "ok 1 - man/hotmapctl.1 names every command and option"
	else
		echo "not ok 1 - man/hotmapctl.1 names every command and option"
		echo "# missing:$missing"
		status=1
	fi
fi
if ! command -v mandoc >/dev/null 2>&1; then
	i=1
	for p in $pages; do i=$((i + 1)); echo "ok $i - $p # SKIP mandoc not installed"; done
	exit ${status:-0}
fi
i=1
status=${status:-0}
for p in $pages; do
	i=$((i + 1))
	# the mandoc.db notes are about this machine's index, not the page
	f=$builddir/$p
	[ -f "$f" ] || f=$srcdir/$p
	out=$(mandoc -Tlint -Wwarning "$f" 2>&1 | grep -v 'mandoc.db')
	if [ -z "$out" ]; then
		echo "ok $i - $p lints clean"
	else
		echo "not ok $i - $p"
		echo "$out" | sed 's/^/# /'
		status=1
	fi
done
exit $status
