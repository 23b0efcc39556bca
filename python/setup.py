# SPDX-License-Identifier: MIT
"""The `hotmap` extension for pip (pyproject.toml holds the metadata).

The module's C files (SOURCES, below) are compiled against the libhotmap
that pkg-config finds (`pkg-config --cflags --libs libhotmap`: set
PKG_CONFIG_PATH to the lib/pkgconfig directory of a libhotmap installed
elsewhere than /usr; PKG_CONFIG names another pkg-config).  The module
is linked with a RUNPATH to the library directory pkg-config names,
unless that is one of the system's own (pkg-config leaves those out of
--libs): it then loads the libhotmap it was built against without
LD_LIBRARY_PATH.  hotmap.pyi, the type stub, is installed beside the
module, as make install does.
"""
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
# the module's C files, as Makefile.am's python_hotmap_la_SOURCES lists
# them, and the private header they share (MANIFEST.in puts it in the sdist)
SOURCES = ["hotmapmodule.c", "client.c", "batch.c", "admin.c", "file.c", "lifetime.c",
           "view.c", "split.c", "errors.c", "args.c"]
DEPENDS = ["hotmap_priv.h"]


def pkg_config(*args):
    """pkg-config's output for libhotmap, split as a shell would."""
    cmd = shlex.split(os.environ.get("PKG_CONFIG") or "pkg-config")
    if shutil.which(cmd[0]) is None:
        sys.exit("hotmap: %s not found: install pkg-config (apt-get install pkg-config) "
                 "to find libhotmap" % cmd[0])
    r = subprocess.run(cmd + list(args) + ["libhotmap"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    if r.returncode != 0:
        sys.exit("hotmap: pkg-config cannot find libhotmap: install it first (make install "
                 "from the hotmap tree, or apt-get install libhotmap-dev) and, when its "
                 "prefix is not /usr, set PKG_CONFIG_PATH=PREFIX/lib/pkgconfig "
                 "(PKG_CONFIG_PATH is %r); pkg-config said: %s"
                 % (os.environ.get("PKG_CONFIG_PATH", ""),
                    " ".join(r.stderr.split()) or "nothing"))
    return shlex.split(r.stdout)


def flags():
    """Extension() keywords from pkg-config's flags."""
    kw = {"include_dirs": [], "library_dirs": [], "libraries": [],
          "runtime_library_dirs": [], "extra_compile_args": [], "extra_link_args": []}
    for f in pkg_config("--cflags"):
        if f.startswith("-I"):
            kw["include_dirs"].append(f[2:])
        else:
            kw["extra_compile_args"].append(f)
    for f in pkg_config("--libs"):
        if f.startswith("-L"):
            kw["library_dirs"].append(f[2:])
            kw["runtime_library_dirs"].append(f[2:])
        elif f.startswith("-l"):
            kw["libraries"].append(f[2:])
        else:
            kw["extra_link_args"].append(f)
    # as Makefile.am builds it: only PyInit_hotmap is exported
    kw["extra_compile_args"] += ["-fno-strict-aliasing", "-fvisibility=hidden"]
    return kw


class BuildExt(build_ext):
    """build_ext, and hotmap.pyi beside the module."""

    def run(self):
        super().run()
        target = HERE if self.inplace else self.build_lib
        stub = os.path.join(HERE, "hotmap.pyi")
        if os.path.abspath(target) != HERE:
            self.mkpath(target)
            self.copy_file(stub, os.path.join(target, "hotmap.pyi"))

    def get_outputs(self):
        return super().get_outputs() + [os.path.join(self.build_lib, "hotmap.pyi")]


def need_wheel():
    """setuptools before 70.1 has no bdist_wheel of its own: pip's build
    without build isolation then needs the wheel package where the build
    runs, which a venv lacks unless it sees the system's."""
    try:
        import wheel  # noqa: F401
        return
    except ImportError:
        pass
    try:
        import setuptools.command.bdist_wheel  # noqa: F401
        return
    except ImportError:
        pass
    sys.exit("hotmap: building a wheel needs the wheel package, which this Python (%s) "
             "does not have: make the venv with python3 -m venv --system-site-packages "
             "and apt-get install python3-wheel, or install wheel into the venv "
             "(pip install --no-index /usr/share/python-wheels/wheel-*.whl, from "
             "Debian's python3-wheel-whl)" % sys.executable)


if {"bdist_wheel", "dist_info"} & set(sys.argv[1:]):
    need_wheel()

# pkg-config is asked only when something is built: `setup.py --version`
# and pip's metadata step need no libhotmap
building = not {"egg_info", "dist_info", "sdist", "--version", "--name"} & set(sys.argv[1:])
setup(
    # the extension module alone, no package: the tests/ directory beside
    # it is not part of the distribution
    packages=[],
    py_modules=[],
    ext_modules=[Extension("hotmap", sources=SOURCES, depends=DEPENDS,
                           **(flags() if building else {}))],
    cmdclass={"build_ext": BuildExt},
)
