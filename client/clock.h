/* SPDX-License-Identifier: MIT */
/*
 * clock.h - libhotmap's one clock: CLOCK_MONOTONIC, in nanoseconds or
 * microseconds, as hotmapd's is daemon/base/monotime.h.
 *
 * What it is for: every time the library measures or waits by (the
 * reconnect deadline, polling mode's poll, what the direct tier's reads
 * cost) is read here, so that all of them agree and none steps with the
 * wall clock.  Inline, as the daemon's: the direct tier reads it on its
 * read path.  Both platforms have clock_gettime (mingw-w64's winpthreads
 * on Windows), so there is no platform half.
 *
 * What it must not do: depend on anything of the library, or give
 * wall-clock time.  It is not the daemon's header: libhotmap links none
 * of the daemon.
 */
#ifndef HOTMAP_CLIENT_CLOCK_H
#define HOTMAP_CLIENT_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

#endif
