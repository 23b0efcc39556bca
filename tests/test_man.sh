#!/bin/sh
# Every man page is mandoc -Tlint clean at warning level (TAP).
srcdir=${TESTS_SRCDIR:-$(dirname "$0")}/..
pages="man/hotmapd.8 man/hotmapd.conf.5 man/hotmapctl.1 man/libhotmap.3"
set -- $pages
echo "1..$#"
if ! command -v mandoc >/dev/null 2>&1; then
	i=0
	for p in $pages; do i=$((i + 1)); echo "ok $i - $p # SKIP mandoc not installed"; done
	exit 0
fi
i=0
status=0
for p in $pages; do
	i=$((i + 1))
	# the mandoc.db notes are about this machine's index, not the page
	out=$(mandoc -Tlint -Wwarning "$srcdir/$p" 2>&1 | grep -v 'mandoc.db')
	if [ -z "$out" ]; then
		echo "ok $i - $p lints clean"
	else
		echo "not ok $i - $p"
		echo "$out" | sed 's/^/# /'
		status=1
	fi
done
exit $status
