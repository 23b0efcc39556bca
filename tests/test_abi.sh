#!/bin/sh
# SPDX-License-Identifier: MIT
#
# test_abi.sh - libhotmap's ABI against the baseline in abi/ (TAP), with
# libabigail (Debian's abigail-tools): the policy of libhotmap(3), ABI.
#
#  1. the built library's soname is the baseline's: a soname that moved
#     needs the baseline made anew with it (make abi-baseline);
#  2. nothing a program built against the baseline uses changed: no
#     function removed, no public struct (hotmap.h, hotmap_admin.h) of
#     another size or layout.  Additions pass.  An incompatible change
#     fails until the soname moves (configure.ac, LIBHOTMAP_VERSION_INFO)
#     and the baseline with it;
#  3. a program built against 0.1.0 cannot run with this library by
#     mistake: 0.1.0's ABI (abi/libhotmap-0.1.0.abi) differs, and its
#     soname is another, so the dynamic loader refuses to load it.
#
# Without abidw and abidiff it skips, unless HOTMAP_REQUIRE_ABI=1 (CI).
. "${TESTS_SRCDIR:-$(dirname "$0")}/tap.sh"

srcdir=${TESTS_SRCDIR:-$(dirname "$0")}/..
builddir=${TESTS_BUILDDIR:-$(dirname "$0")}/..
abi=$srcdir/abi
lib=$builddir/client/.libs/libhotmap.so

skip_all() {
	if [ "${HOTMAP_REQUIRE_ABI:-0}" = 1 ]; then
		echo "Bail out! HOTMAP_REQUIRE_ABI=1 but $1"
		exit 1
	fi
	echo "1..0 # SKIP $1"
	exit 0
}

command -v abidw >/dev/null 2>&1 && command -v abidiff >/dev/null 2>&1 ||
	skip_all "abidw and abidiff not found (apt-get install abigail-tools)"
[ -f "$lib" ] || bail "$lib not found: run from a built tree"

dir=$(mktemp -d "${TMPDIR:-/tmp}/hotmap-abi.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
trap 'exit 1' HUP INT TERM

echo "1..3"
abidw --no-corpus-path --no-comp-dir-path "$lib" >"$dir/now.abi" 2>"$dir/err" ||
	bail "abidw $lib: $(cat "$dir/err")"
# The structs' sizes come from the debug information: without -g the
# comparison would see names only.
grep -q "class-decl name='hm_stat' size-in-bits=" "$dir/now.abi" ||
	skip_all "libhotmap was built without debug information (-g): nothing to compare"

soname() {
	sed -n "s/.*<abi-corpus [^>]*soname='\([^']*\)'.*/\1/p" "$1" | head -n 1
}
now=$(soname "$dir/now.abi")
base=$(soname "$abi/libhotmap.abi")

if [ "$now" = "$base" ]; then
	ok "the soname is the baseline's ($now)"
else
	not_ok "the soname is the baseline's" "built: $now, abi/libhotmap.abi: $base" \
		"a soname that moved takes a new baseline: make abi-baseline"
fi

abidiff --no-added-syms --suppressions "$abi/libhotmap.suppr" \
	"$abi/libhotmap.abi" "$dir/now.abi" >"$dir/diff" 2>&1
rc=$?
if [ $rc -eq 0 ]; then
	ok "no change a program built against the baseline would notice"
elif [ $((rc & 3)) -ne 0 ]; then
	not_ok "abidiff ran" "exit $rc" "$(cat "$dir/diff")"
else
	not_ok "no change a program built against the baseline would notice" \
		"abidiff says (exit $rc: 4 a change, 8 an incompatible one):" "$(cat "$dir/diff")" \
		"an incompatible change under $now: move the soname (configure.ac," \
		"LIBHOTMAP_VERSION_INFO, libhotmap(3) ABI), then make abi-baseline"
fi

old=$(soname "$abi/libhotmap-0.1.0.abi")
# struct hm_stat's size in bits, as the debug information says
stat_bits() {
	sed -n "s/.*class-decl name='hm_stat' size-in-bits='\([0-9]*\)'.*/\1/p" "$1" | head -n 1
}
old_bits=$(stat_bits "$abi/libhotmap-0.1.0.abi")
now_bits=$(stat_bits "$dir/now.abi")
abidiff --suppressions "$abi/libhotmap.suppr" \
	"$abi/libhotmap-0.1.0.abi" "$dir/now.abi" >"$dir/diff010" 2>&1
rc=$?
if [ $((rc & 12)) -ne 0 ] && [ -n "$old" ] && [ "$old" != "$now" ] &&
   [ -n "$old_bits" ] && [ "$old_bits" != "$now_bits" ]; then
	ok "a program built against 0.1.0 ($old) does not load this library ($now): hm_stat is $((now_bits / 8)) bytes, was $((old_bits / 8))"
else
	not_ok "a program built against 0.1.0 does not load this library" \
		"0.1.0: $old, hm_stat $old_bits bits; now: $now, $now_bits bits; abidiff exit $rc" \
		"$(head -n 20 "$dir/diff010")"
fi
tap_finish
