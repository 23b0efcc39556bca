/* SPDX-License-Identifier: MIT */
/*
 * endpoint.h - where a hotmapd listens by default on this platform (for
 * frame_default_socket() once $HOTMAP_SOCKET is not set), and whether
 * anyone listens at a given endpoint (for hotmapctl stop).
 *
 * What it is for: the platform-specific parts of naming an endpoint (a
 * Unix socket path on Linux, a named pipe on Windows) and of telling
 * whether anyone listens at one, so that frame.c and hotmapctl carry no
 * #ifdef.  What it must not do: look at $HOTMAP_SOCKET (frame.c does, the
 * same on every platform), speak the protocol, or log.  One file per
 * platform implements it: endpoint_unix.c, endpoint_win32.c.
 */
#ifndef HOTMAP_ENDPOINT_H
#define HOTMAP_ENDPOINT_H

#include <stddef.h>

/* The longest endpoint name with its NUL: sun_path's size on Linux. */
#define ENDPOINT_MAX	108

/*
 * The platform's default endpoint into buf: 0, -ENOENT when none applies,
 * -ENAMETOOLONG when buf is too small.
 */
int endpoint_default(char *buf, size_t len);

/*
 * The endpoint to try when the default one has no daemon: on POSIX the
 * system's socket (HM_SYSTEM_SOCKET, where the systemd socket unit and a
 * root daemon listen); NULL on Windows, where one pipe serves everyone.
 */
const char *endpoint_fallback(void);

/*
 * Whether something listens at path: 1 yes, 0 no (nothing there, or an
 * endpoint no one listens on), a negative errno when that cannot be told
 * (-ENAMETOOLONG for a name of ENDPOINT_MAX or more).  A daemon that
 * stopped accepting but still holds its endpoint counts as listening.
 */
int endpoint_listening(const char *path);

#endif
