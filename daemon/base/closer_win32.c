/* SPDX-License-Identifier: MIT */
/*
 * closer_win32.c - closer_platform.h on Windows: handles.  No socket
 * ever reaches the closer there (handles are pulled, and only disk files
 * are taken: transport_win32.c), so there is no linger to cut short; the
 * close of a file on a network share may still wait, which is what the
 * closer's thread is for.
 */
#include "config.h"

#include <windows.h>

#include "daemon/base/closer_platform.h"

bool
closer_fd_none(hm_fd fd)
{
	return fd == NULL || fd == HM_FD_INVALID;
}

void
closer_fd_prepare(hm_fd fd)
{
	(void)fd;
}

void
closer_fd_close(hm_fd fd)
{
	CloseHandle(fd);
}
