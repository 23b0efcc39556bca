/* SPDX-License-Identifier: MIT */
/*
 * monotime.h - the one clock of hotmapd and libhotmap: CLOCK_MONOTONIC,
 * in nanoseconds or microseconds.
 *
 * What it is for: every time the daemon measures (request latency,
 * uptime, idle entries, the loop's polling window, rate-limited logs) and
 * every time the library measures or waits by (the reconnect deadline,
 * polling mode's poll, what the direct tier's reads cost, the retries
 * without a daemon) is read here, so that all of them agree and none
 * steps with the wall clock.  Inline: the direct tier reads it on its
 * read path.  Both platforms have clock_gettime (mingw-w64's winpthreads
 * on Windows), so there is no platform half.
 *
 * What it must not do: depend on anything (the daemon's storage core and
 * the library both include it), do I/O, or give wall-clock time.
 */
#ifndef HOTMAP_PROTO_MONOTIME_H
#define HOTMAP_PROTO_MONOTIME_H

#include <stdint.h>
#include <time.h>

static inline uint64_t
monotime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t
monotime_us(void)
{
	return monotime_ns() / 1000u;
}

#endif
