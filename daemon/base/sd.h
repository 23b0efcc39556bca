/* SPDX-License-Identifier: MIT */
/*
 * sd.h - the sd-daemon calls hotmapd makes, or stubs without libsystemd.
 *
 * Call sites carry no #ifdef: without libsystemd, notify does nothing and
 * no socket is ever passed by the service manager.
 */
#ifndef HOTMAP_SD_H
#define HOTMAP_SD_H

#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#else
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#define SD_LISTEN_FDS_START 3

static inline int
sd_notify(int unset_environment, const char *state)
{
	(void)unset_environment;
	(void)state;
	return 0;
}

static inline int
sd_listen_fds(int unset_environment)
{
	(void)unset_environment;
	return 0;
}

static inline int
sd_watchdog_enabled(int unset_environment, uint64_t *usec)
{
	(void)unset_environment;
	(void)usec;
	return 0;
}

static inline int
sd_is_socket_unix(int fd, int type, int listening, const char *path, size_t length)
{
	(void)fd; (void)type; (void)listening; (void)path; (void)length;
	return -ENOSYS;
}
#endif

#endif
