/* SPDX-License-Identifier: MIT */
/*
 * trust_win32.h - the rule trust_win32.c applies to the process that
 * serves the pipe (docs/windows.md, "The pipe's trust"), apart from the
 * reading of its token, so that tests can hold it to every kind of
 * server a wine prefix cannot start (LocalService, a service, another
 * user).  Windows only; included by trust_win32.c and its test.
 */
#ifndef HOTMAP_CLIENT_TRUST_WIN32_H
#define HOTMAP_CLIENT_TRUST_WIN32_H

#include <stdbool.h>
#include <windows.h>

/*
 * The service SID of the service named hotmapd ("NT SERVICE\hotmapd"),
 * as the service control manager makes it for any service name:
 * S-1-5-80- and the SHA-1 of the name in upper case ("HOTMAPD" in
 * UTF-16LE) as five 32-bit little-endian sub-authorities (what
 * "sc.exe showsid hotmapd" prints).  tests/test_trust_win32.c derives it
 * again.  The SCM gives it to the service's process (as its user with the
 * virtual account NT SERVICE\hotmapd, or as a group when the service's
 * SID type is unrestricted or restricted); no other process can have it.
 */
#define TRUST_HOTMAPD_SERVICE_SID \
	"S-1-5-80-3652878595-2750286376-4102590143-982471292-3770242461"

/*
 * Whether a pipe server whose token's user is user and whose groups are
 * groups (NULL: unknown, none counted) is trusted by a caller whose own
 * user is me (NULL: unknown), with named the account HOTMAP_DAEMON_USER
 * names (NULL: none).  Trusted: LocalSystem; me; named; the hotmapd
 * service SID as the user or as an enabled group that is not for deny
 * only; and, when named is a service SID (S-1-5-80-...), named as such
 * a group.  LocalService, NetworkService or any other user without one
 * of these: no.
 */
bool trust_win32_server_ok(PSID user, const TOKEN_GROUPS *groups, PSID me, PSID named);

#endif
