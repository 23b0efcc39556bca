# SPDX-License-Identifier: MIT
# Sourced by contrib/dev/quickstart and contrib/dev/test: installs, with
# apt-get, the Debian/Ubuntu packages hotmap needs that are not installed
# yet.  HOTMAP_DEPS builds hotmap and runs it (the quickstart);
# HOTMAP_TEST_DEPS runs every test (contrib/dev/test, CI): procps
# (/bin/kill, which systemd-analyze verify wants for the unit's
# ExecReload) and util-linux (setpriv), which a minimal install lacks;
# systemd (systemd-analyze); libfuse3-dev and fuse3 (the fault tests'
# file system); clang (the fuzzers); prometheus has promtool, which checks
# stats --prometheus; kubernetes-client (kubectl), nodejs and npm check
# contrib/kubernetes (tests/test_kubernetes.sh); dpkg-dev, debhelper
# (with dh-autoreconf), dh-python (python3-hotmap's dh_python3) and
# lintian build and check the Debian packages
# (contrib/debian, tests/test_debian.sh); python3-venv, python3-setuptools
# and python3-wheel build the Python package with pip, offline, in a venv
# (tests/test_python_packaging.sh); sshfs, openssh-server and iproute2
# are bench/netfs's network file system (sshfs across two network
# namespaces).
HOTMAP_DEPS="build-essential autoconf automake libtool pkg-config
	libevent-dev libprotobuf-c-dev protobuf-c-compiler libsystemd-dev
	libcmocka-dev python3 python3-dev"
HOTMAP_TEST_DEPS="mandoc systemd procps util-linux python3-numpy mypy
	python3-venv python3-setuptools python3-wheel
	clang libclang-rt-dev
	libfuse3-dev fuse3 sshfs openssh-server iproute2
	prometheus kubernetes-client nodejs npm
	dpkg-dev debhelper dh-python lintian
	abigail-tools"

# hotmap_install_deps [--tests]: the build's packages, and with --tests
# the tests' too (and npm's modules for tests/test_kubernetes.sh).
hotmap_install_deps() {
	tests=
	[ "${1:-}" = --tests ] && tests=yes
	missing=
	for p in $HOTMAP_DEPS ${tests:+$HOTMAP_TEST_DEPS}; do
		# the command from elsewhere will do, and its package may conflict
		# with Debian's: cloud SDKs ship kubectl, NodeSource's nodejs npm
		case $p in
		kubernetes-client) c=kubectl ;; nodejs) c=node ;; npm) c=npm ;; *) c= ;;
		esac
		[ -n "$c" ] && command -v "$c" >/dev/null 2>&1 && continue
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing="$missing $p"
	done
	if [ -z "$missing" ]; then
		[ -z "$tests" ] || hotmap_install_npm
		return
	fi
	echo "Installing:$missing"
	sudo=
	if [ "$(id -u)" -ne 0 ]; then
		if ! command -v sudo >/dev/null 2>&1; then
			echo "Not root and no sudo: as root, run apt-get install$missing" >&2
			return 1
		fi
		sudo=sudo
	fi
	$sudo apt-get update -qq &&
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing ||
		return
	# configure again: it looks for some of them (libfuse3 builds the
	# fault tests' file system)
	[ ! -f configure ] || touch configure
	[ -z "$tests" ] || hotmap_install_npm
}

# npm's kubernetes-models and js-yaml, which tests/test_kubernetes.sh
# validates manifests with: outside the source tree, where the test looks
# (HOTMAP_K8S_MODULES names another node_modules directory).
hotmap_install_npm() {
	m=${HOTMAP_K8S_MODULES:-${XDG_CACHE_HOME:-$HOME/.cache}/hotmap/k8s-validate/node_modules}
	[ -d "$m/kubernetes-models" ] && [ -d "$m/js-yaml" ] && return 0
	echo "Installing with npm into $m: kubernetes-models js-yaml"
	mkdir -p "$m" &&
	npm install --prefix "$(dirname "$m")" --no-audit --no-fund --silent \
		kubernetes-models@4 js-yaml@4
}

hotmap_build() {
	# $@: extra configure options
	[ -x configure ] || autoreconf -fi
	if [ ! -f Makefile ] || [ configure -nt config.status ]; then
		./configure --enable-werror "$@"
	fi
	make -j"$(nproc)"
}
