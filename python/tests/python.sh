#!/bin/sh
# SPDX-License-Identifier: MIT
# python.sh - the Python binding's tests (make check): the configured
# interpreter imports hotmap from the build tree (python/.libs, with
# libhotmap from client/.libs) and runs python/tests/test_hotmap.py and
# test_admin.py, each of which starts its own hotmapd.  Prints TAP
# (python/tests/tap.py).
B=${HOTMAP_PY_BUILDDIR:-$PWD}
S=${HOTMAP_PY_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
PYTHON=${PYTHON:-/usr/bin/python3}
HOTMAPD=${HOTMAPD:-$B/daemon/hotmapd}
PYTHONPATH=$B/python/.libs${PYTHONPATH:+:$PYTHONPATH}
LD_LIBRARY_PATH=$B/client/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# nothing written beside the sources (distcheck's are read-only)
PYTHONDONTWRITEBYTECODE=1
export PYTHON HOTMAPD PYTHONPATH LD_LIBRARY_PATH PYTHONDONTWRITEBYTECODE
if [ "${HOTMAP_PY_SANITIZERS:-no}" = yes ]; then
	# libhotmap was built with ASan and UBSan, the interpreter was not:
	# their runtimes must come first
	cc=${HOTMAP_PY_CC:-cc}
	LD_PRELOAD="$($cc -print-file-name=libasan.so) $($cc -print-file-name=libubsan.so)"
	ASAN_OPTIONS=detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}
	export LD_PRELOAD ASAN_OPTIONS
fi
exec "$PYTHON" -B "$S/python/tests/tap.py" "$S/python/tests/test_hotmap.py" \
	"$S/python/tests/test_admin.py"
