#!/bin/sh
# SPDX-License-Identifier: MIT
# make install (TAP), from the build tree make check runs in, into a
# DESTDIR: everything lands beneath the configured prefix (the systemd
# units too, unless the prefix is /usr), the units run the installed
# sbindir's hotmapd, the man pages and hotmapd --help name the
# configuration file at the configured sysconfdir, and the example
# configuration in docdir has every key with its default.  Then the same
# install by a user who is not root, into a directory of that user's:
# it succeeds, and everything it wrote is there.
#
# configure is not run again (a minute and more on a loaded machine): the
# unit directory's rule (configure.ac) is checked for the prefix this
# tree was configured with.
. "${TESTS_SRCDIR:-$(dirname "$0")}/tap.sh"

HOTMAPD=${HOTMAPD:-daemon/hotmapd}
builddir=${TESTS_BUILDDIR:-$(dirname "$0")}/..
MAKE=${MAKE:-make}
# A make of its own, not a part of the make check that runs this test.
mk() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "$MAKE" "$@"
}

[ -f "$builddir/Makefile" ] || bail "$builddir/Makefile not found: run from a configured build tree"
[ -x "$HOTMAPD" ] || bail "$HOTMAPD not found: set HOTMAPD, or run from the build directory"

dir=$(mktemp -d "${TMPDIR:-/tmp}/hotmap-install.XXXXXX") || exit 1
cleanup() {
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# A variable of the build's Makefile, as make install expands it.
makevar() {
	# shellcheck disable=SC2016 # $($*) is make's
	mk -s -C "$builddir" --no-print-directory --eval 'hm-print-%: ; @echo $($*)' "hm-print-$1" | tail -n 1
}
# Every file and link beneath $1, relative, sorted.
listing() {
	(cd "$1" && find . ! -type d | sed 's|^\./||' | LC_ALL=C sort)
}

echo "1..7"

prefix=$(makevar prefix)
sbindir=$(makevar sbindir)
sysconfdir=$(makevar sysconfdir)
mandir=$(makevar mandir)
docdir=$(makevar docdir)
unitdir_raw=$(sed -n 's/^systemdsystemunitdir = //p' "$builddir/Makefile")
unitdir=
[ -n "$unitdir_raw" ] && unitdir=$(makevar systemdsystemunitdir)
conf=$sysconfdir/hotmap/hotmapd.conf

# --- 1: the unit directory follows the prefix unless it is /usr -------------
case $prefix in
/usr | /usr/)
	want=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null)
	[ -n "$want" ] || want='(none)' ;;
*)
	want='${prefix}/lib/systemd/system' ;;
esac
# --with-systemdsystemunitdir overrides: then any absolute directory, or none
if grep -q -- "--with-systemdsystemunitdir" "$builddir/config.status" 2>/dev/null; then
	ok "the unit directory: --with-systemdsystemunitdir=${unitdir_raw:-no} given # SKIP the default rule is not in force"
elif [ "${unitdir_raw:-(none)}" = "$want" ]; then
	ok "the unit directory of prefix $prefix is $want"
else
	not_ok "the unit directory of prefix $prefix is $want" "Makefile: systemdsystemunitdir = $unitdir_raw"
fi

# --- 2: make install DESTDIR=: where everything lands -----------------------
dest=$dir/dest
if ! mk -C "$builddir" install DESTDIR="$dest" >"$dir/install.log" 2>&1; then
	not_ok "make install DESTDIR=: everything beneath the prefix" "$(tail -n 20 "$dir/install.log")"
else
	outside=$(listing "$dest" | grep -v "^${prefix#/}/" |
		{ if [ -n "$unitdir" ]; then grep -v "^${unitdir#/}/"; else cat; fi; })
	missing=
	for f in "$sbindir/hotmapd" "$mandir/man8/hotmapd.8" "$mandir/man5/hotmapd.conf.5" \
		 "$docdir/hotmapd.conf.example" ${unitdir:+"$unitdir/hotmapd.service"} \
		 ${unitdir:+"$unitdir/hotmapd.socket"}; do
		[ -f "$dest$f" ] || missing="$missing $f"
	done
	if [ -z "$outside$missing" ]; then
		ok "make install DESTDIR=: everything beneath the prefix${unitdir:+ and $unitdir}"
	else
		not_ok "make install DESTDIR=: everything beneath the prefix${unitdir:+ and $unitdir}" \
			"outside: $outside" "missing:$missing"
	fi
fi

# --- 3: the installed units run the installed hotmapd -----------------------
if [ -z "$unitdir" ]; then
	ok "the installed service runs $sbindir/hotmapd # SKIP no units installed"
else
	bad=$(grep '^Exec' "$dest$unitdir/hotmapd.service" | grep -v "^Exec[A-Za-z]*=$sbindir/hotmapd \|^ExecReload=/bin/kill ")
	if [ -z "$bad" ] && grep -q "^ExecStart=$sbindir/hotmapd " "$dest$unitdir/hotmapd.service"; then
		ok "the installed service runs $sbindir/hotmapd"
	else
		not_ok "the installed service runs $sbindir/hotmapd" "$bad"
	fi
fi

# --- 4: man pages and --help name the configured file ------------------------
bad=
for page in "$mandir/man8/hotmapd.8" "$mandir/man5/hotmapd.conf.5"; do
	grep -q "$conf" "$dest$page" 2>/dev/null || bad="$bad $page: does not name $conf;"
	grep -q '@[a-z]*dir@' "$dest$page" 2>/dev/null && bad="$bad $page: unsubstituted;"
	if [ "$sysconfdir" != /etc ] && grep -q '\(^\|[[:space:]]\)/etc/hotmap' "$dest$page" 2>/dev/null; then
		bad="$bad $page: names /etc/hotmap;"
	fi
done
"$HOTMAPD" --help | grep -q "$conf" || bad="$bad hotmapd --help does not name $conf"
if [ -z "$bad" ]; then
	ok "the man pages and hotmapd --help name $conf"
else
	not_ok "the man pages and hotmapd --help name $conf" "$bad"
fi

# --- 5, 6: the example configuration ------------------------------------------
example=$dest$docdir/hotmapd.conf.example
keys=$("$HOTMAPD" --check-config --config /dev/null | sed -n 's/^\([a-z][a-z-]*\) = .*/\1/p')
missing=
for k in $keys; do
	grep -q "^#$k =" "$example" 2>/dev/null || missing="$missing $k"
done
if [ -n "$keys" ] && [ -z "$missing" ]; then
	ok "hotmapd.conf.example has every key ($(echo $keys | wc -w))"
else
	not_ok "hotmapd.conf.example has every key" "missing:$missing"
fi
# Uncommented, its values are the defaults (the socket aside: the example
# shows the system service's, the default depends on who runs hotmapd).
sed -n 's/^#\([a-z][a-z-]*\) = \(..*\)$/\1 = \2/p' "$example" >"$dir/example.conf"
"$HOTMAPD" --check-config --config "$dir/example.conf" >"$dir/check.out" 2>&1
rc=$?
sed -n 's/^\([a-z][a-z-]*\) = \(.*\)  # .*/\1 = \2/p' "$dir/check.out" | grep -v '^socket =' >"$dir/got"
"$HOTMAPD" --check-config --config /dev/null |
	sed -n 's/^\([a-z][a-z-]*\) = \(.*\)  # .*/\1 = \2/p' | grep -v '^socket =' >"$dir/defaults"
if [ $rc -eq 0 ] && [ -s "$dir/defaults" ] && cmp -s "$dir/got" "$dir/defaults" &&
   grep -q "^socket = /run/hotmap/hotmapd.sock  # " "$dir/check.out"; then
	ok "hotmapd.conf.example uncommented is a good file of the defaults"
else
	not_ok "hotmapd.conf.example uncommented is a good file of the defaults" "exit $rc" \
		"$(diff "$dir/defaults" "$dir/got")" "$(grep -v ' = ' "$dir/check.out")"
fi

# --- 7: by a user who is not root, into a directory of that user's -----------
# The user does not own this build tree, which a user who builds hotmap
# does: libtool's relink of the Python module (at install, into the build
# tree) is left out; the DESTDIR install above covers it.
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null 2>&1; then
	ok "make install by a user who is not root, into that user's directory # SKIP needs root and setpriv"
	tap_finish
fi
mine=$dir/nobody
mkdir "$mine" && chown 65534:65534 "$mine" && chmod 0755 "$dir" || exit 1
if setpriv --reuid 65534 --regid 65534 --clear-groups \
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL HOME="$mine" "$MAKE" -C "$builddir" install DESTDIR="$mine/dest" hotmap_python_LTLIBRARIES= \
	>"$dir/nobody.log" 2>&1; then
	outside=$(listing "$mine/dest" | grep -v "^${prefix#/}/" |
		{ if [ -n "$unitdir" ]; then grep -v "^${unitdir#/}/"; else cat; fi; })
	if [ -z "$outside" ] && [ -x "$mine/dest$sbindir/hotmapd" ]; then
		ok "make install by a user who is not root, into that user's directory"
	else
		not_ok "make install by a user who is not root, into that user's directory" "outside: $outside"
	fi
else
	not_ok "make install by a user who is not root, into that user's directory" \
		"$(grep -i 'denied\|error' "$dir/nobody.log" | head -n 10)"
fi
tap_finish
