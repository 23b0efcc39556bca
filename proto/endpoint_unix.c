/* SPDX-License-Identifier: MIT */
/*
 * endpoint_unix.c - the default endpoint on Linux and other POSIX systems
 * (see endpoint.h): the system's socket for root, else the user's own
 * under $XDG_RUNTIME_DIR; a connect() tells whether anyone listens.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/endpoint.h"
#include "proto/frame.h"

_Static_assert(sizeof(((struct sockaddr_un *)0)->sun_path) <= ENDPOINT_MAX,
	       "ENDPOINT_MAX holds every socket path");

const char *
endpoint_fallback(void)
{
	return HM_SYSTEM_SOCKET;
}

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

int
endpoint_listening(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, rc, e;

	if (strlen(path) >= sizeof sa.sun_path)
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A daemon that stopped accepting but still holds its socket takes
	 * the connection into its backlog: it is not gone yet. */
	rc = connect(fd, (const struct sockaddr *)&sa, sizeof sa);
	e = errno;
	close(fd);
	if (rc == 0)
		return 1;
	return e == ENOENT || e == ECONNREFUSED || e == ENOTDIR ? 0 : -e;
}
