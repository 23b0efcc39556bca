/* SPDX-License-Identifier: MIT */
/*
 * monotime.h - hotmapd's one clock: CLOCK_MONOTONIC in nanoseconds.
 *
 * What it is for: every time the daemon measures (request latency, uptime,
 * idle entries, the loop's polling window, rate-limited logs) is read here,
 * so that all of them agree and none steps with the wall clock.
 *
 * What it must not do: depend on anything (the storage core includes it),
 * or give wall-clock time.  libhotmap keeps its own clock (client/clock.h):
 * it is a separate library and links none of the daemon.
 */
#ifndef HOTMAP_MONOTIME_H
#define HOTMAP_MONOTIME_H

#include <stdint.h>
#include <time.h>

static inline uint64_t
monotime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
