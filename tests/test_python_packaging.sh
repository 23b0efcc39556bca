#!/bin/sh
# SPDX-License-Identifier: MIT
# test_python_packaging.sh - the Python package (python/pyproject.toml,
# python/setup.py) as a user installs it (docs/python.md, "Installing"):
# libhotmap is installed (make install, into a DESTDIR), a fresh venv
# made with --system-site-packages builds and installs ./python offline
# with pip install --no-build-isolation against that libhotmap, found
# with pkg-config, and `import hotmap` from the venv reads a file through
# a hotmapd, byte for byte, with no LD_LIBRARY_PATH (the module's RUNPATH
# names pkg-config's library directory).  pip wheel makes a wheel, which
# installs into a second fresh venv (no build tools in it) and reads too.
#
# The DESTDIR install stands for one into a prefix (configure is not run
# again: a minute and more): pkg-config reads the installed libhotmap.pc
# with PKG_CONFIG_SYSROOT_DIR at the DESTDIR, so its flags name the
# DESTDIR's include and lib directories, as a prefix's would.  The build
# is of a copy of python/ (pip builds in the tree it is given, and
# distcheck's sources are read-only).
#
# TAP.  Skips (1..0 # SKIP) without python3-venv, python3-setuptools,
# python3-wheel, python3-dev or pkg-config, unless
# HOTMAP_REQUIRE_PYTHON_PACKAGING=1 (CI): then it fails.  No network:
# pip is run with --no-index and no configuration file.

LC_ALL=C
export LC_ALL
. "${TESTS_SRCDIR:-$(dirname "$0")}/tap.sh"
PLAN=11

HOTMAPD=${HOTMAPD:-daemon/hotmapd}
HOTMAPCTL=${HOTMAPCTL:-hotmapctl/hotmapctl}
case $HOTMAPD in /*) ;; *) HOTMAPD=$PWD/$HOTMAPD ;; esac
case $HOTMAPCTL in /*) ;; *) HOTMAPCTL=$PWD/$HOTMAPCTL ;; esac
builddir=$(cd "${TESTS_BUILDDIR:-$(dirname "$0")}/.." && pwd)
srcdir=$(cd "${TESTS_SRCDIR:-$(dirname "$0")}/.." && pwd)
# Debian's python3, which configure also takes by default (make check
# exports the configured PYTHON)
PYTHON=${PYTHON:-/usr/bin/python3}
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
MAKE=${MAKE:-make}
mk() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "$MAKE" "$@"
}

skip_all() {
	if [ "${HOTMAP_REQUIRE_PYTHON_PACKAGING:-0}" = 1 ]; then
		echo "1..$PLAN"
		echo "Bail out! HOTMAP_REQUIRE_PYTHON_PACKAGING=1 but $1"
		exit 1
	fi
	echo "1..0 # SKIP $1"
	exit 0
}

[ -f "$builddir/Makefile" ] || bail "$builddir/Makefile not found: run from a configured build tree"
for prog in "$HOTMAPD" "$HOTMAPCTL"; do
	[ -x "$prog" ] || bail "$prog not found: set HOTMAPD and HOTMAPCTL, or run from the build directory"
done
command -v "$PYTHON" >/dev/null 2>&1 || skip_all "no $PYTHON (set PYTHON; apt-get install python3)"
missing=$("$PYTHON" - <<'EOF' 2>&1
import importlib.util, os, sysconfig
need = [("ensurepip", "python3-venv"), ("venv", "python3-venv"),
        ("setuptools", "python3-setuptools"), ("wheel", "python3-wheel")]
out = [pkg + " (no " + mod + ")" for mod, pkg in need if importlib.util.find_spec(mod) is None]
if not os.path.exists(os.path.join(sysconfig.get_path("include"), "Python.h")):
    out.append("python3-dev (no Python.h)")
print(", ".join(out))
EOF
) || skip_all "$PYTHON fails: $missing"
[ -z "$missing" ] || skip_all "$PYTHON lacks what pip's offline build needs: $missing"
command -v "$PKG_CONFIG" >/dev/null 2>&1 || skip_all "$PKG_CONFIG not found (apt-get install pkg-config)"

dir=$(mktemp -d "${TMPDIR:-/tmp}/hotmap-pypkg.XXXXXX") || exit 1
pid=
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# pip offline and on its own: no index, no configuration file, no cache,
# none of the caller's PIP_* settings (find-links and the like)
for v in $(env | sed -n 's/^\(PIP_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done
unset PYTHONPATH PYTHONHOME PYTHONUSERBASE VIRTUAL_ENV LD_LIBRARY_PATH PKG_CONFIG_SYSROOT_DIR
PIP_CONFIG_FILE=/dev/null PIP_NO_INDEX=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
PYTHONDONTWRITEBYTECODE=1 HOME=$dir
export PIP_CONFIG_FILE PIP_NO_INDEX PIP_NO_CACHE_DIR PIP_DISABLE_PIP_VERSION_CHECK
export PYTHONDONTWRITEBYTECODE HOME

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$srcdir/python/pyproject.toml")
pyver=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
file=$dir/root/data
mkdir "$dir/root" && head -c $((1024 * 1024 + 333)) /dev/urandom >"$file" || exit 1

echo "1..$PLAN"

# --- 1: libhotmap installed ------------------------------------------------
# Without the autotools build's own module: pip builds it here (and
# libtool's relink of that module in the build tree would race
# tests/test_install.sh's make install).
dest=$dir/dest
# shellcheck disable=SC2016 # $($*) is make's
libdir=$(mk -s -C "$builddir" --no-print-directory --eval 'hm-print-%: ; @echo $($*)' hm-print-libdir | tail -n 1)
if mk -C "$builddir" install DESTDIR="$dest" hotmap_python_LTLIBRARIES= hotmap_python_DATA= \
	>"$dir/install.log" 2>&1 && [ -f "$dest$libdir/pkgconfig/libhotmap.pc" ]; then
	ok "make install DESTDIR=: libhotmap, hotmap.h and libhotmap.pc"
else
	not_ok "make install DESTDIR=: libhotmap, hotmap.h and libhotmap.pc" "$(tail -n 20 "$dir/install.log")"
	bail "no libhotmap to build against"
fi
pcdir=$dest$libdir/pkgconfig

# --- the package's version is the release's --------------------------------
pkgver=$(sed -n 's/^version *= *"\([^"]*\)".*/\1/p' "$srcdir/python/pyproject.toml" | head -n 1)
pcver=$(sed -n 's/^Version: *//p' "$pcdir/libhotmap.pc" | head -n 1)
if [ -n "$pkgver" ] && [ "$pkgver" = "$pcver" ]; then
	ok "python/pyproject.toml's version is the release's ($pcver)"
else
	not_ok "python/pyproject.toml's version is the release's" "pyproject: '$pkgver', libhotmap.pc: '$pcver'"
fi

# --- 2: pkg-config finds it --------------------------------------------------
flags=$(PKG_CONFIG_PATH=$pcdir PKG_CONFIG_SYSROOT_DIR=$dest "$PKG_CONFIG" --cflags --libs libhotmap 2>&1)
if printf '%s\n' "$flags" | grep -q -- "-I$dest/" && printf '%s\n' "$flags" | grep -q -- "-L$dest$libdir"; then
	ok "pkg-config --cflags --libs libhotmap names the installed libhotmap"
else
	not_ok "pkg-config --cflags --libs libhotmap names the installed libhotmap" "$flags"
fi
PKG_CONFIG_SYSROOT_DIR=$dest
export PKG_CONFIG_SYSROOT_DIR

# The sources as a user has them: a copy of python/ without the
# autotools build's outputs or an earlier pip build's
mkdir "$dir/src" && cp -R "$srcdir/python" "$dir/src/python" &&
	rm -rf "$dir/src/python/build" "$dir/src/python"/*.egg-info "$dir/src/python/.libs" || exit 1
clean_src() {
	rm -rf "$dir/src/python/build" "$dir/src/python"/*.egg-info
}

# The installed libhotmap built with --enable-sanitizers needs the ASan
# and UBSan runtimes first in the (uninstrumented) interpreter, as in
# python/tests/python.sh
run_py() {
	if readelf -d "$dest$libdir/libhotmap.so" 2>/dev/null | grep -q 'NEEDED.*libasan'; then
		cc=${HOTMAP_PY_CC:-cc}
		env LD_PRELOAD="$($cc -print-file-name=libasan.so) $($cc -print-file-name=libubsan.so)" \
			ASAN_OPTIONS=detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS} "$@"
	else
		"$@"
	fi
}

# --- 3: a fresh venv -----------------------------------------------------------
venv=$dir/venv
if "$PYTHON" -m venv --system-site-packages "$venv" >"$dir/venv.log" 2>&1 &&
   "$venv/bin/pip" --version >>"$dir/venv.log" 2>&1; then
	ok "python3 -m venv --system-site-packages: a venv with pip"
else
	not_ok "python3 -m venv --system-site-packages: a venv with pip" "$(cat "$dir/venv.log")"
	bail "no venv"
fi

# --- 4: without libhotmap, a clear message ---------------------------------
# (pkg-config's default path may hold a libhotmap.pc of /usr: an empty
# libdir directory in PKG_CONFIG_LIBDIR hides it)
mkdir "$dir/nopc"
if (cd "$dir/src" && PKG_CONFIG_LIBDIR=$dir/nopc PKG_CONFIG_PATH=$dir/nopc \
	"$venv/bin/pip" install --no-build-isolation ./python) >"$dir/nolib.log" 2>&1; then
	not_ok "without libhotmap for pkg-config, pip install fails" "it succeeded:" "$(tail -n 5 "$dir/nolib.log")"
elif grep -q "hotmap: pkg-config cannot find libhotmap: install it first" "$dir/nolib.log" &&
     grep -q "PKG_CONFIG_PATH=PREFIX/lib/pkgconfig" "$dir/nolib.log"; then
	ok "without libhotmap for pkg-config, pip install fails saying so and what to set"
else
	not_ok "without libhotmap for pkg-config, pip install fails saying so and what to set" \
		"$(tail -n 20 "$dir/nolib.log")"
fi
clean_src

# --- 5: pip install --no-build-isolation ./python ------------------------------
site=$venv/lib/python$pyver/site-packages
if (cd "$dir/src" && PKG_CONFIG_PATH=$pcdir \
	"$venv/bin/pip" install --no-build-isolation ./python) >"$dir/pip.log" 2>&1; then
	meta=$site/hotmap-$version.dist-info/METADATA
	so=$(ls "$site"/hotmap.cpython-*.so 2>/dev/null)
	if [ -n "$so" ] && [ -f "$site/hotmap.pyi" ] && grep -q "^Version: $version\$" "$meta" &&
	   grep -q '^License: MIT$' "$meta" &&
	   grep -q '^Classifier: License :: OSI Approved :: MIT License$' "$meta"; then
		ok "pip install --no-build-isolation ./python: hotmap $version (MIT), the module and hotmap.pyi in the venv"
	else
		not_ok "pip install --no-build-isolation ./python: hotmap $version (MIT), the module and hotmap.pyi in the venv" \
			"$(ls "$site")" "$(cat "$meta" 2>&1)"
	fi
else
	not_ok "pip install --no-build-isolation ./python" "$(tail -n 30 "$dir/pip.log")"
fi
clean_src

# --- the daemon ----------------------------------------------------------------
sock=$dir/sock
"$HOTMAPD" --foreground --socket "$sock" --root "$dir/root" >"$dir/hotmapd.log" 2>&1 &
pid=$!
ctl() {
	"$HOTMAPCTL" --socket "$sock" "$@"
}
wait_listening

# read_check PYTHON OUT: PYTHON imports hotmap and reads $file through the
# daemon with pread and readinto; the pread bytes go to OUT, and a line
# tells where the module and libhotmap were loaded from
read_check() {
	run_py "$1" - "$sock" "$file" "$2" <<'EOF'
import sys
import hotmap
sock, path, out = sys.argv[1:4]
with hotmap.connect(sock) as c, c.open(path) as f:
    size = f.stat().size
    data = f.pread(size + 4096, 0)
    buf = bytearray(size)
    n = f.readinto(buf, 0)
assert n == size and bytes(buf) == data, "readinto differs from pread"
with open(out, "wb") as o:
    o.write(data)
lib = [l.split()[-1] for l in open("/proc/self/maps") if "libhotmap.so" in l]
print("module", hotmap.__file__)
print("libhotmap", lib[0] if lib else "none")
EOF
}

# --- 6, 7: import hotmap from the venv, read a file -----------------------------
if out=$(read_check "$venv/bin/python" "$dir/read" 2>&1) && cmp -s "$file" "$dir/read"; then
	ok "the venv's python reads the file through hotmapd with hotmap, byte for byte"
else
	not_ok "the venv's python reads the file through hotmapd with hotmap, byte for byte" "$out"
fi
mod=$(printf '%s\n' "$out" | sed -n 's/^module //p')
lib=$(printf '%s\n' "$out" | sed -n 's/^libhotmap //p')
case $mod:$lib in
"$site"/*:"$dest$libdir"/*)
	ok "without LD_LIBRARY_PATH, the venv's module loads the installed libhotmap (RUNPATH)" ;;
*)
	not_ok "without LD_LIBRARY_PATH, the venv's module loads the installed libhotmap (RUNPATH)" \
		"module: $mod" "libhotmap: $lib" ;;
esac

# --- 8: pip wheel ---------------------------------------------------------------
whl=
if (cd "$dir/src" && PKG_CONFIG_PATH=$pcdir \
	"$venv/bin/pip" wheel --no-build-isolation -w "$dir/wheels" ./python) >"$dir/wheel.log" 2>&1; then
	for w in "$dir/wheels/hotmap-$version"-cp*-linux_*.whl; do
		[ -f "$w" ] && whl=$w
	done
	list=$("$PYTHON" -m zipfile -l "$whl" 2>&1)
	if [ -n "$whl" ] && printf '%s\n' "$list" | grep -q '^hotmap\.cpython-[^ ]*\.so ' &&
	   printf '%s\n' "$list" | grep -q '^hotmap\.pyi '; then
		ok "pip wheel --no-build-isolation ./python: $(basename "$whl") with the module and hotmap.pyi"
	else
		not_ok "pip wheel --no-build-isolation ./python: a wheel with the module and hotmap.pyi" \
			"$(ls "$dir/wheels" 2>&1)" "$list"
	fi
else
	not_ok "pip wheel --no-build-isolation ./python" "$(tail -n 30 "$dir/wheel.log")"
fi
clean_src

# --- 9: the wheel in a second fresh venv, without the build tools ---------------
venv2=$dir/venv2
if [ -z "$whl" ]; then
	ok "the wheel installs into a fresh venv and reads the file # SKIP no wheel was made"
elif "$PYTHON" -m venv "$venv2" >"$dir/venv2.log" 2>&1 &&
     "$venv2/bin/pip" install "$whl" >>"$dir/venv2.log" 2>&1 &&
     out=$(read_check "$venv2/bin/python" "$dir/read2" 2>&1) && cmp -s "$file" "$dir/read2"; then
	ok "the wheel installs into a fresh venv and reads the file, byte for byte"
else
	not_ok "the wheel installs into a fresh venv and reads the file, byte for byte" \
		"$(tail -n 20 "$dir/venv2.log")" "$out"
fi

# --- 10: pip uninstall ----------------------------------------------------------
"$venv/bin/pip" uninstall -y hotmap >"$dir/uninstall.log" 2>&1
rc=$?
left=
for f in "$site"/hotmap*; do
	[ -e "$f" ] && left="$left $(basename "$f")"
done
if [ $rc -eq 0 ] && [ -z "$left" ]; then
	ok "pip uninstall hotmap leaves nothing of it in the venv"
else
	not_ok "pip uninstall hotmap leaves nothing of it in the venv" "exit $rc, left:$left" \
		"$(cat "$dir/uninstall.log")"
fi

kill -TERM "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
pid=
tap_finish
