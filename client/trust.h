/* SPDX-License-Identifier: MIT */
/*
 * trust.h - whom libhotmap hands descriptors to.
 *
 * A client passes descriptors (the files it opens, the memfd of its shared
 * region) to whatever listens on the socket, and the socket's path may be
 * one another user can take (a directory in /tmp).  Before the first
 * descriptor goes out, the daemon's credentials (SO_PEERCRED, from the
 * kernel) must be root's, the caller's own effective uid, or those of the
 * daemon's user: HOTMAP_DAEMON_USER (a name or a numeric uid; empty: none)
 * or else the name configure was given (--with-daemon-user, "hotmapd" by
 * default, the name systemd gives hotmapd.service's DynamicUser), looked
 * up at each connect because a dynamic user exists only while it runs.
 *
 * What it must not do: log, or send anything on the socket.
 */
#ifndef HOTMAP_CLIENT_TRUST_H
#define HOTMAP_CLIENT_TRUST_H

#include <stddef.h>

#include "client/platform.h"

/* 0 if the peer of the connection conn (at path, for the message) may
 * receive descriptors; otherwise -EPERM, or -errno if its credentials
 * cannot be read, with the reason in why.  trust_unix.c (SO_PEERCRED) on
 * POSIX; trust_win32.c (the pipe server's process token) on Windows. */
int client_trust_daemon(hm_conn conn, const char *path, char *why, size_t whylen);
#ifndef _WIN32
/* The same rule for a file's owner (the table of granted files): 0 if uid
 * is root's, the caller's effective uid or the daemon user's; else
 * -EPERM, or -errno when the daemon user cannot be looked up. */
int client_trust_owner(unsigned uid);
#endif

#endif
