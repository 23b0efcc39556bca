/*
 * endpoint_unix.c - the default endpoint on Linux and other POSIX systems
 * (see endpoint.h): the system's socket for root, else the user's own
 * under $XDG_RUNTIME_DIR.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "proto/endpoint.h"
#include "proto/frame.h"

int
endpoint_default(char *buf, size_t len)
{
	const char *xdg;
	int n;

	if (geteuid() == 0)
		n = snprintf(buf, len, "%s", HM_SYSTEM_SOCKET);
	else if ((xdg = getenv("XDG_RUNTIME_DIR")) != NULL && xdg[0] == '/')
		n = snprintf(buf, len, "%s/hotmap/hotmapd.sock", xdg);
	else
		return -ENOENT;
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}
