#!/bin/sh
# SPDX-License-Identifier: MIT
# test_system_socket.sh - a user without a daemon of her own finds the
# system's, at /run/hotmap/hotmapd.sock, where the systemd socket unit and
# a root daemon listen; her own daemon, when she runs one, comes first.
#
# Prints TAP.  Needs root (a root daemon and a second user) and a mount
# namespace: the test puts a tmpfs of its own over /run/hotmap, so that
# neither a real system daemon nor this machine's /run is touched.

LC_ALL=C
export LC_ALL

HOTMAPD=${HOTMAPD:-daemon/hotmapd}
HOTMAPCTL=${HOTMAPCTL:-hotmapctl/hotmapctl}
case $HOTMAPD in /*) ;; *) HOTMAPD=$PWD/$HOTMAPD ;; esac
case $HOTMAPCTL in /*) ;; *) HOTMAPCTL=$PWD/$HOTMAPCTL ;; esac
export HOTMAPD HOTMAPCTL
PLAN=7

skip_all() {
	echo "1..0 # SKIP $1"
	exit 0
}

if [ -z "${HOTMAP_IN_NS:-}" ]; then
	[ "$(id -u)" -eq 0 ] || skip_all "needs root"
	command -v setpriv >/dev/null 2>&1 || skip_all "needs setpriv"
	command -v unshare >/dev/null 2>&1 || skip_all "needs unshare"
	unshare -m true 2>/dev/null || skip_all "no mount namespaces here"
	HOTMAP_IN_NS=1 exec unshare -m --propagation private sh "$0" "$@"
fi

. "${TESTS_SRCDIR:-$(dirname "$0")}/tap.sh"

mkdir -p /run/hotmap && mount -t tmpfs -o mode=0755 hotmap-test /run/hotmap ||
	skip_all "cannot mount a tmpfs over /run/hotmap"

dir=$(mktemp -d "${TMPDIR:-/tmp}/system-socket-test.XXXXXX") || exit 1
chmod 0755 "$dir"
pid=
own=
cleanup() {
	[ -n "$own" ] && kill -KILL "$own" 2>/dev/null
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

head -c 5000 /dev/urandom >"$dir/data" && chmod 0644 "$dir/data" || exit 1
# the user's runtime directory, as pam_systemd makes it
xdg=$dir/xdg
mkdir -m 0700 "$xdg" && chown 65534:65534 "$xdg" || exit 1

sock=/run/hotmap/hotmapd.sock
ctl() {
	"$HOTMAPCTL" --socket "$sock" "$@"
}
# as user 65534 with nothing set but her runtime directory
user_ctl() {
	setpriv --reuid 65534 --regid 65534 --clear-groups \
		env -u HOTMAP_SOCKET XDG_RUNTIME_DIR="$xdg" "$HOTMAPCTL" "$@"
}

echo "1..$PLAN"

out=$(user_ctl ping 2>&1)
st=$?
case $out in
*"no hotmapd at $xdg/hotmap/hotmapd.sock nor at $sock"*)
	[ $st -eq 1 ] && ok "no daemon anywhere: the error names both places" ||
		not_ok "no daemon anywhere: exit status $st, not 1" ;;
*) not_ok "no daemon anywhere: the error names both places" "$out" ;;
esac

"$HOTMAPD" --foreground --socket "$sock" >"$dir/hotmapd.log" 2>&1 &
pid=$!
wait_listening

out=$(user_ctl ping 2>&1)
case $out in
"hotmapd "*" pid $pid "*) ok "a user without a daemon of her own finds the system's" ;;
*) not_ok "a user without a daemon of her own finds the system's" "$out" ;;
esac

user_ctl read "$dir/data" 100 3000 >"$dir/got" 2>"$dir/err"
if dd if="$dir/data" bs=100 skip=1 count=30 2>/dev/null | cmp -s - "$dir/got"; then
	ok "the system daemon serves her a range byte for byte"
else
	not_ok "the system daemon serves her a range byte for byte" "$(cat "$dir/err")"
fi

out=$(setpriv --reuid 65534 --regid 65534 --clear-groups \
	env -u HOTMAP_SOCKET -u XDG_RUNTIME_DIR "$HOTMAPCTL" ping 2>&1)
case $out in
"hotmapd "*" pid $pid "*) ok "without XDG_RUNTIME_DIR too" ;;
*) not_ok "without XDG_RUNTIME_DIR too" "$out" ;;
esac

# her own daemon, once she runs one, comes first
mkdir -m 0700 "$xdg/hotmap" && chown 65534:65534 "$xdg/hotmap" || exit 1
setpriv --reuid 65534 --regid 65534 --clear-groups \
	"$HOTMAPD" --foreground --socket "$xdg/hotmap/hotmapd.sock" >"$dir/own.log" 2>&1 &
own=$!
tries=0
until [ -S "$xdg/hotmap/hotmapd.sock" ] || [ $tries -ge 300 ]; do
	sleep 0.1
	tries=$((tries + 1))
done
out=$(user_ctl ping 2>&1)
case $out in
"hotmapd "*" pid $own "*) ok "her own daemon comes before the system's" ;;
*) not_ok "her own daemon comes before the system's" "$out" ;;
esac

# a dead daemon of her own: the stale socket says so, not the system's
kill -KILL "$own"
wait "$own" 2>/dev/null
own=
out=$(user_ctl ping 2>&1)
case $out in
"hotmapd "*" pid $pid "*) ok "her daemon gone (its socket left behind): the system's answers" ;;
*) not_ok "her daemon gone (its socket left behind): the system's answers" "$out" ;;
esac

# HOTMAP_SOCKET is taken at its word: no second guess
out=$(setpriv --reuid 65534 --regid 65534 --clear-groups \
	env HOTMAP_SOCKET="$dir/none.sock" "$HOTMAPCTL" ping 2>&1)
case $out in
*"$dir/none.sock"*"No such file"*) ok "HOTMAP_SOCKET set: only that socket is tried" ;;
*) not_ok "HOTMAP_SOCKET set: only that socket is tried" "$out" ;;
esac

tap_finish
