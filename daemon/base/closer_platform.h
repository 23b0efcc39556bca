/* SPDX-License-Identifier: MIT */
/*
 * closer_platform.h - what closer.c needs of the platform: whether a
 * value names nothing, making a close cheap before it is queued (a
 * socket's SO_LINGER {0, 0} on POSIX), and the close itself (close(2),
 * or CloseHandle).  closer_unix.c, closer_win32.c.
 */
#ifndef HOTMAP_CLOSER_PLATFORM_H
#define HOTMAP_CLOSER_PLATFORM_H

#include <stdbool.h>

#include "daemon/base/platform.h"	/* hm_fd */

bool closer_fd_none(hm_fd fd);
void closer_fd_prepare(hm_fd fd);
void closer_fd_close(hm_fd fd);

#endif
