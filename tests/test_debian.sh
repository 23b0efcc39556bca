#!/bin/sh
# SPDX-License-Identifier: MIT
# test_debian.sh - the Debian packages (contrib/debian): built by
# contrib/debian/build-debs from the working tree, lintian clean, holding
# what they should, with only debhelper's maintainer scripts, and the
# daemon and hotmapctl from the unpacked packages serving a read, and
# python3-hotmap's module reading through that daemon.
#
# TAP.  Skips unless dpkg-buildpackage, debhelper, lintian, git and the
# Build-Depends are installed and the source tree is a git work tree;
# with HOTMAP_REQUIRE_DEB=1 (CI) their absence fails instead.  The package
# build takes a minute or two of CPU; make check is not run inside it.

LC_ALL=C
export LC_ALL
top=$(cd "${TESTS_SRCDIR:-$(dirname "$0")}/.." && pwd)
. "$top/tests/tap.sh"
PLAN=16

skip_all() {
	if [ "${HOTMAP_REQUIRE_DEB:-0}" = 1 ]; then
		echo "1..$PLAN"
		echo "Bail out! HOTMAP_REQUIRE_DEB=1 but $1"
		exit 1
	fi
	echo "1..0 # SKIP $1"
	exit 0
}

# CI's sanitizer pass: the packages build from the sources with their own
# configure, so a second build in the same run would tell nothing new
if [ "${HOTMAP_SKIP_DEB:-0}" = 1 ]; then
	echo "1..0 # SKIP HOTMAP_SKIP_DEB=1: the packages were built and checked already"
	exit 0
fi
for tool in dpkg-buildpackage dpkg-deb dpkg-checkbuilddeps dh lintian git; do
	command -v "$tool" >/dev/null 2>&1 ||
		skip_all "$tool is not installed (dpkg-dev, debhelper, lintian, git)"
done
# the tree's own checkout, not a directory inside another one (make
# distcheck unpacks the tarball beneath the checkout)
[ "$(git -C "$top" rev-parse --show-toplevel 2>/dev/null)" = "$(cd "$top" && pwd -P)" ] ||
	skip_all "the source tree is not a git work tree"
if ! out=$(cd "$top" && dpkg-checkbuilddeps contrib/debian/control 2>&1); then
	skip_all "$(printf '%s' "$out" | tr '\n' ' ')"
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/hotmap-debian.XXXXXX") || exit 1
pid=
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
out=$dir/out
root=$dir/root
mkdir "$root"

echo "1..$PLAN"

# --- the build ---------------------------------------------------------------
# the source package as well (native: a tarball of the tree); the working
# tree, so that make check tests the packaging being worked on; make
# check's own DEB_BUILD_OPTIONS, if any, are not the package build's
unset DEB_BUILD_OPTIONS
if "$top/contrib/debian/build-debs" --worktree --source "$out" >"$dir/build-debs.log" 2>&1; then
	ok "contrib/debian/build-debs builds the packages and lintian passes them"
else
	not_ok "contrib/debian/build-debs builds the packages and lintian passes them" \
		"$(tail -n 40 "$dir/build-debs.log")"
fi

version=$(dpkg-parsechangelog -l "$top/contrib/debian/changelog" -S Version)
arch=$(dpkg-architecture -qDEB_HOST_ARCH 2>/dev/null || dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
missing=
for p in hotmapd libhotmap1 libhotmap-dev hotmap-tools python3-hotmap; do
	[ -f "$out/${p}_${version}_$arch.deb" ] || missing="$missing $p"
done
[ -f "$out/hotmap_$version.dsc" ] || missing="$missing hotmap_$version.dsc"
if [ -z "$missing" ]; then
	ok "the five packages: hotmapd, libhotmap1, libhotmap-dev, hotmap-tools, python3-hotmap, and the source"
else
	not_ok "the five packages: hotmapd, libhotmap1, libhotmap-dev, hotmap-tools, python3-hotmap, and the source" \
		"missing:$missing" "$(ls "$out" 2>&1)"
	bail "no packages to look into"
fi
deb() {
	echo "$out/${1}_${version}_$arch.deb"
}

tags=$(grep -E '^[EW]: ' "$out/lintian.log" 2>&1)
if [ -f "$out/lintian.log" ] && [ -z "$tags" ]; then
	ok "lintian: no error or warning beyond the overrides"
else
	not_ok "lintian: no error or warning beyond the overrides" "$tags"
fi

# --- contents ----------------------------------------------------------------
# has_files NAME PACKAGE PATH... : dpkg-deb -c PACKAGE lists every PATH
# (an extended regular expression, anchored, without the leading ./)
has_files() {
	name=$1
	list=$(dpkg-deb -c "$(deb "$2")" | awk '{ print $6 }' | sed 's|^\./||')
	shift 2
	lacking=
	for re; do
		printf '%s\n' "$list" | grep -Eq "^($re)\$" || lacking="$lacking $re"
	done
	if [ -z "$lacking" ]; then
		ok "$name"
	else
		not_ok "$name" "lacking:$lacking" "$list"
	fi
}
unitdir='(usr/)?lib/systemd/system'
has_files "hotmapd: the daemon, its units, man pages and example config" hotmapd \
	usr/sbin/hotmapd "$unitdir/hotmapd\\.service" "$unitdir/hotmapd\\.socket" \
	'usr/share/man/man8/hotmapd\.8\.gz' 'usr/share/man/man5/hotmapd\.conf\.5\.gz' \
	'usr/share/doc/hotmapd/examples/hotmapd\.conf(\.gz)?' usr/share/doc/hotmapd/copyright
has_files "libhotmap1: libhotmap.so.1 in the multiarch libdir" libhotmap1 \
	"usr/lib/$multiarch/libhotmap\\.so\\.1" "usr/lib/$multiarch/libhotmap\\.so\\.1\\.[0-9.]+"
has_files "libhotmap-dev: headers, the .so link, libhotmap.pc, libhotmap(3)" libhotmap-dev \
	'usr/include/hotmap\.h' 'usr/include/hotmap_admin\.h' \
	"usr/lib/$multiarch/libhotmap\\.so" "usr/lib/$multiarch/pkgconfig/libhotmap\\.pc" \
	'usr/share/man/man3/libhotmap\.3\.gz'
has_files "hotmap-tools: hotmapctl and hotmapctl(1)" hotmap-tools \
	usr/bin/hotmapctl 'usr/share/man/man1/hotmapctl\.1\.gz'
# the module under the name dh_python3 gives it (hotmap.cpython-3X-<multiarch>.so)
has_files "python3-hotmap: the module and hotmap.pyi in python3's dist-packages" python3-hotmap \
	"usr/lib/python3/dist-packages/hotmap\\.cpython-3[0-9]+-$multiarch\\.so" \
	'usr/lib/python3/dist-packages/hotmap\.pyi' usr/share/doc/python3-hotmap/copyright

# hotmap-tools depends on libhotmap1 (shlibs, from the symbols file), the
# -dev package on the same version of libhotmap1
tools_dep=$(dpkg-deb -f "$(deb hotmap-tools)" Depends)
dev_dep=$(dpkg-deb -f "$(deb libhotmap-dev)" Depends)
if printf '%s\n' "$tools_dep" | grep -q 'libhotmap1 (>= ' &&
   printf '%s\n' "$dev_dep" | grep -q "libhotmap1 (= $version)"; then
	ok "hotmap-tools and libhotmap-dev depend on libhotmap1"
else
	not_ok "hotmap-tools and libhotmap-dev depend on libhotmap1" \
		"hotmap-tools: $tools_dep" "libhotmap-dev: $dev_dep"
fi

# python3-hotmap depends on the library through shlibs and on python3 for
# the version its module is built for (dh_python3)
py_dep=$(dpkg-deb -f "$(deb python3-hotmap)" Depends)
if printf '%s\n' "$py_dep" | grep -q 'libhotmap1 (>= ' &&
   printf '%s\n' "$py_dep" | grep -q 'python3 (>= 3\.[0-9]*~)' &&
   printf '%s\n' "$py_dep" | grep -q 'python3 (<< 3\.[0-9]*)'; then
	ok "python3-hotmap depends on libhotmap1 and on its python3 version"
else
	not_ok "python3-hotmap depends on libhotmap1 and on its python3 version" "$py_dep"
fi

# --- maintainer scripts: debhelper's snippets and nothing else --------------
extra=
for p in hotmapd libhotmap1 libhotmap-dev hotmap-tools python3-hotmap; do
	dpkg-deb -e "$(deb "$p")" "$dir/control-$p"
	for s in preinst postinst prerm postrm config; do
		f=$dir/control-$p/$s
		[ -f "$f" ] || continue
		# outside the "# Automatically added by dh_..." sections, only
		# the shebang and set -e
		lines=$(awk '
			/^# Automatically added by dh_/ { inside = 1; next }
			/^# End automatically added section/ { inside = 0; next }
			!inside && !/^#!\/bin\/sh$/ && !/^set -e$/ && !/^$/ { print }
		' "$f")
		[ -z "$lines" ] || extra="$extra
$p $s: $lines"
	done
done
if [ -z "$extra" ]; then
	ok "maintainer scripts: only debhelper's snippets"
else
	not_ok "maintainer scripts: only debhelper's snippets" "$extra"
fi

# --- the unpacked packages at work --------------------------------------------
for p in hotmapd libhotmap1 libhotmap-dev hotmap-tools python3-hotmap; do
	dpkg-deb -x "$(deb "$p")" "$root" || bail "dpkg-deb -x $p failed"
done
LD_LIBRARY_PATH=$root/usr/lib/$multiarch${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
hotmapd=$root/usr/sbin/hotmapd
hotmapctl=$root/usr/bin/hotmapctl
example=$(ls "$root"/usr/share/doc/hotmapd/examples/hotmapd.conf* 2>/dev/null | head -n 1)
case $example in *.gz) gzip -dc "$example" >"$dir/hotmapd.conf" ;; *) cp "$example" "$dir/hotmapd.conf" ;; esac
if cout=$("$hotmapd" --check-config --config "$dir/hotmapd.conf" 2>&1); then
	ok "the example hotmapd.conf passes hotmapd --check-config"
else
	not_ok "the example hotmapd.conf passes hotmapd --check-config" "$cout"
fi

lib=$(ldd "$hotmapctl" 2>&1 | sed -n 's/^[[:space:]]*libhotmap\.so\.1 => \([^ ]*\).*/\1/p')
case $lib in
"$root"/*) ok "the packaged hotmapctl loads the packaged libhotmap.so.1" ;;
*) not_ok "the packaged hotmapctl loads the packaged libhotmap.so.1" "$(ldd "$hotmapctl" 2>&1)" ;;
esac

sock=$dir/sock
data=$dir/data
head -c $((1024 * 1024 + 333)) /dev/urandom >"$data" || exit 1
ctl() {
	"$hotmapctl" --socket "$sock" "$@"
}
"$hotmapd" --foreground --config "$dir/hotmapd.conf" --socket "$sock" --root "$dir" \
	>"$dir/hotmapd.log" 2>&1 &
pid=$!
wait_listening
if pout=$(ctl ping 2>&1) && printf '%s\n' "$pout" | grep -q "^hotmapd $version pid $pid "; then
	ok "the packaged hotmapd answers the packaged hotmapctl's ping"
else
	not_ok "the packaged hotmapd answers the packaged hotmapctl's ping" "$pout"
fi
if ctl read "$data" >"$dir/read" 2>"$dir/read.err" && cmp -s "$data" "$dir/read"; then
	ok "hotmapctl read through the packaged daemon: the file byte for byte"
else
	not_ok "hotmapctl read through the packaged daemon: the file byte for byte" \
		"$(wc -c <"$dir/read") bytes of $(wc -c <"$data")" "$(cat "$dir/read.err")"
fi
# Debian's python3 (the one the package is built for) imports the
# packaged module, which loads the packaged libhotmap, and reads the file
if pyout=$(PYTHONPATH=$root/usr/lib/python3/dist-packages PYTHONDONTWRITEBYTECODE=1 \
	/usr/bin/python3 - "$sock" "$data" "$dir/pyread" 2>&1 <<'EOF'
import sys
import hotmap
sock, path, out = sys.argv[1:4]
with hotmap.connect(sock) as c, c.open(path) as f, open(out, "wb") as o:
    o.write(f.pread(f.stat().size + 1, 0))
lib = [l.split()[-1] for l in open("/proc/self/maps") if "libhotmap.so" in l]
print("module", hotmap.__file__)
print("libhotmap", lib[0] if lib else "none")
EOF
) && cmp -s "$data" "$dir/pyread" &&
   printf '%s\n' "$pyout" | grep -q "^module $root/usr/lib/python3/dist-packages/" &&
   printf '%s\n' "$pyout" | grep -q "^libhotmap $root/"; then
	ok "python3-hotmap's module reads through the packaged daemon: the file byte for byte"
else
	not_ok "python3-hotmap's module reads through the packaged daemon: the file byte for byte" "$pyout"
fi
kill -TERM "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
pid=
tap_finish
