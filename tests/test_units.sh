#!/bin/sh
# The systemd units: systemd-analyze verify clean (with ExecStart pointed at
# the hotmapd just built), and the settings hotmapd relies on are there.
# TAP.
srcdir=${TESTS_SRCDIR:-$(dirname "$0")}/..
hotmapd=${HOTMAPD:-$(dirname "$0")/../daemon/hotmapd}
case $hotmapd in /*) ;; *) hotmapd=$PWD/$hotmapd ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hotmap-units.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
n=0
status=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; shift; printf '%s\n' "$@" | sed 's/^/# /'; status=1; }

echo "1..4"
sed -e "s|@sbindir[@]|$(dirname "$hotmapd")|g" "$srcdir/contrib/systemd/hotmapd.service.in" \
	>"$tmp/hotmapd.service"
cp "$srcdir/contrib/systemd/hotmapd.socket" "$tmp/"

if command -v systemd-analyze >/dev/null 2>&1; then
	if out=$(cd "$tmp" && systemd-analyze verify --man=no ./hotmapd.socket ./hotmapd.service 2>&1) &&
	   [ -z "$out" ]; then
		ok "systemd-analyze verify: hotmapd.service and hotmapd.socket are clean"
	else
		not_ok "systemd-analyze verify: hotmapd.service and hotmapd.socket are clean" "$out"
	fi
else
	ok "systemd-analyze verify # SKIP systemd-analyze is not installed"
fi

missing=
for line in Type=notify 'ExecStart=.*/hotmapd --foreground' 'ExecReload=' WatchdogSec= \
	    DynamicUser=yes RuntimeDirectory=hotmap ProtectSystem=strict ProtectHome=read-only \
	    PrivateTmp=yes NoNewPrivileges=yes RestrictAddressFamilies=AF_UNIX \
	    MemoryDenyWriteExecute=yes SystemCallFilter=@system-service; do
	grep -q "^$line" "$tmp/hotmapd.service" || missing="$missing $line"
done
if [ -z "$missing" ]; then
	ok "hotmapd.service: notify, watchdog, reload, dedicated user and sandboxing"
else
	not_ok "hotmapd.service: notify, watchdog, reload, dedicated user and sandboxing" "missing:$missing"
fi

if grep -q '^ListenStream=/run/hotmap/hotmapd.sock$' "$tmp/hotmapd.socket"; then
	ok "hotmapd.socket listens where hotmapd looks by default as root"
else
	not_ok "hotmapd.socket listens where hotmapd looks by default as root"
fi
# Socket activation: hotmapd serves the socket it is given, and leaves it
# in place at exit (systemd owns it).
hotmapctl=${HOTMAPCTL:-$(dirname "$0")/../client/hotmapctl}
if command -v systemd-socket-activate >/dev/null 2>&1 && [ -x "$hotmapctl" ]; then
	sock=$tmp/activated.sock
	systemd-socket-activate -l "$sock" "$hotmapd" --foreground 2>"$tmp/log" &
	pid=$!
	i=0
	while [ ! -S "$sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	out=$("$hotmapctl" --socket "$sock" ping 2>&1)
	kill -TERM $pid 2>/dev/null
	wait $pid
	rc=$?
	if echo "$out" | grep -q "^hotmapd " && [ $rc -eq 0 ] && grep -q "the socket systemd passed" "$tmp/log"; then
		ok "socket activation: hotmapd serves the socket it is passed"
	else
		not_ok "socket activation: hotmapd serves the socket it is passed" "ping: $out" "exit $rc" \
			"$(cat "$tmp/log")"
	fi
else
	ok "socket activation # SKIP systemd-socket-activate is not installed"
fi
exit $status
