/*
 * endpoint.h - where a hotmapd listens by default on this platform, for
 * frame_default_socket() once $HOTMAP_SOCKET is not set.
 *
 * What it is for: the one platform-specific part of choosing the default
 * endpoint (a Unix socket path on Linux, a named pipe on Windows), so that
 * frame.c carries no #ifdef.  What it must not do: look at
 * $HOTMAP_SOCKET (frame.c does, the same on every platform), connect,
 * or log.  One file per platform implements it: endpoint_unix.c,
 * endpoint_win32.c.
 */
#ifndef HOTMAP_ENDPOINT_H
#define HOTMAP_ENDPOINT_H

#include <stddef.h>

/*
 * The platform's default endpoint into buf: 0, -ENOENT when none applies,
 * -ENAMETOOLONG when buf is too small.
 */
int endpoint_default(char *buf, size_t len);

#endif
