/* SPDX-License-Identifier: MIT */
/*
 * closer_unix.c - closer_platform.h on POSIX: descriptors.
 */
#include "config.h"

#include <sys/socket.h>
#include <unistd.h>

#include "daemon/base/closer_platform.h"

bool
closer_fd_none(hm_fd fd)
{
	return fd < 0;
}

/* Makes a socket's close return at once: SO_LINGER {0, 0} (a reset in
 * place of a graceful end).  Nothing for other descriptors. */
void
closer_fd_prepare(hm_fd fd)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	/* ENOTSOCK for anything but a socket: nothing to do then. */
	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
}

void
closer_fd_close(hm_fd fd)
{
	(void)close(fd);
}
