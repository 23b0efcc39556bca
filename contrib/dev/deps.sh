# Sourced by contrib/dev/quickstart and contrib/dev/test: installs, with
# apt-get, the Debian/Ubuntu packages hotmap needs to build and test that
# are not installed yet.  The tests need some that a minimal install
# lacks: procps (/bin/kill, which systemd-analyze verify wants for the
# unit's ExecReload) and util-linux (setpriv); prometheus has promtool,
# which checks stats --prometheus.
HOTMAP_DEPS="build-essential autoconf automake libtool pkg-config
	libevent-dev libprotobuf-c-dev protobuf-c-compiler libsystemd-dev libinih-dev
	libcmocka-dev mandoc systemd procps util-linux python3 python3-dev python3-numpy mypy
	clang libclang-rt-dev
	libfuse3-dev fuse3
	prometheus"

hotmap_install_deps() {
	missing=
	for p in $HOTMAP_DEPS; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
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
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
}

hotmap_build() {
	# $@: extra configure options
	[ -x configure ] || autoreconf -fi
	if [ ! -f Makefile ] || [ configure -nt config.status ]; then
		./configure --enable-werror "$@"
	fi
	make -j"$(nproc)"
}
