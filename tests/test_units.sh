#!/bin/sh
# SPDX-License-Identifier: MIT
# The systemd units: systemd-analyze verify clean (with ExecStart pointed at
# the hotmapd just built), and the settings hotmapd relies on are there.
# TAP.
srcdir=${TESTS_SRCDIR:-$(dirname "$0")}/..
hotmapd=${HOTMAPD:-$(dirname "$0")/../daemon/hotmapd}
case $hotmapd in /*) ;; *) hotmapd=$PWD/$hotmapd ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hotmap-units.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. "${TESTS_SRCDIR:-$(dirname "$0")}/tap.sh"

echo "1..6"
sed -e "s|@sbindir[@]|$(dirname "$hotmapd")|g" -e "s|@daemon_user[@]|hotmapd|g" \
	"$srcdir/contrib/systemd/hotmapd.service.in" \
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
hotmapctl=${HOTMAPCTL:-$(dirname "$0")/../hotmapctl/hotmapctl}
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
# Under socket activation the socket is the unit's: hotmapctl config shows
# the path and mode in force (not the file's), and the file's socket-mode
# that cannot apply is a notice.
if command -v systemd-socket-activate >/dev/null 2>&1 && [ -x "$hotmapctl" ]; then
	sock=$tmp/activated3.sock
	printf 'socket = %s/elsewhere.sock\nsocket-mode = 0600\n' "$tmp" >"$tmp/mode.conf"
	(umask 022; exec systemd-socket-activate -l "$sock" "$hotmapd" --foreground \
		--config "$tmp/mode.conf" 2>"$tmp/log3") &
	pid=$!
	i=0
	while [ ! -S "$sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	mode=$(stat -c %a "$sock")
	out=$("$hotmapctl" --socket "$sock" config 2>&1)
	kill -TERM $pid 2>/dev/null
	wait $pid
	if echo "$out" | grep -q "^socket  *= $sock  *# systemd socket" &&
	   echo "$out" | grep -q "^socket-mode  *= 0$mode  *# systemd socket" &&
	   grep -q "notice: .*mode.conf:2: socket-mode 0600 does not apply" "$tmp/log3" &&
	   grep -q "notice: .*mode.conf:1: socket .* does not apply" "$tmp/log3"; then
		ok "socket activation: config shows the socket in force, and what cannot apply is a notice"
	else
		not_ok "socket activation: config shows the socket in force, and what cannot apply is a notice" \
			"$out" "$(cat "$tmp/log3")"
	fi
else
	ok "socket activation config # SKIP systemd-socket-activate is not installed"
fi
# Under socket activation, as systemd runs it: READY=1 once it serves,
# RELOADING=1 (with MONOTONIC_USEC) then READY=1 around a SIGHUP reload,
# STOPPING=1 at SIGTERM, read from a NOTIFY_SOCKET of our own.
if command -v systemd-socket-activate >/dev/null 2>&1 && [ -x "$hotmapctl" ] &&
   command -v python3 >/dev/null 2>&1; then
	if python3 - "$tmp" "$hotmapd" "$hotmapctl" >"$tmp/notify.out" 2>&1 <<'PY'
import os, signal, socket, subprocess, sys, time
tmp, hotmapd, hotmapctl = sys.argv[1:4]
path, sock = tmp + "/notify", tmp + "/activated2.sock"
n = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
n.bind(path)
n.settimeout(10)
conf = tmp + "/hotmapd.conf"
open(conf, "w").write("log-level = info\n")
env = dict(os.environ, NOTIFY_SOCKET=path)
p = subprocess.Popen(["systemd-socket-activate", "-l", sock, "-E", "NOTIFY_SOCKET",
                      hotmapd, "--foreground", "--config", conf], env=env,
                     stderr=open(tmp + "/log2", "w"))
def expect(what):
    while True:
        msg = n.recv(4096).decode()
        print("got:", msg.replace("\n", " | "))
        if what in msg.split("\n"):
            return msg
# systemd-socket-activate starts hotmapd at the first connection
for _ in range(100):
    if os.path.exists(sock):
        break
    time.sleep(0.05)
out = subprocess.run([hotmapctl, "--socket", sock, "ping"], capture_output=True, text=True)
assert out.returncode == 0 and out.stdout.startswith("hotmapd "), out
expect("READY=1")
open(conf, "w").write("log-level = debug\n")
p.send_signal(signal.SIGHUP)
m = expect("RELOADING=1")
assert "MONOTONIC_USEC=" in m, m
expect("READY=1")
out = subprocess.run([hotmapctl, "--socket", sock, "config"], capture_output=True, text=True)
assert any(l.startswith("log-level") and "debug" in l for l in out.stdout.splitlines()), out
p.send_signal(signal.SIGTERM)
expect("STOPPING=1")
assert p.wait(10) == 0
PY
	then
		ok "socket activation: READY, RELOADING and READY around SIGHUP, STOPPING, via NOTIFY_SOCKET"
	else
		not_ok "socket activation: READY, RELOADING and READY around SIGHUP, STOPPING, via NOTIFY_SOCKET" \
			"$(cat "$tmp/notify.out" "$tmp/log2" 2>/dev/null)"
	fi
else
	ok "socket activation notifications # SKIP systemd-socket-activate or python3 is missing"
fi
[ "$failed" -eq 0 ]
