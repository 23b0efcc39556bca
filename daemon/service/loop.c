/* SPDX-License-Identifier: MIT */
/*
 * loop.c - hotmapd's event loop driver (see loop.h).
 *
 * Polling: while a ring request came within the last poll_us, the loop
 * checks every ring in a tight loop, and libevent without blocking every
 * few microseconds (sockets, worker completions, timers, signals).  Then
 * it sleeps, and the order below makes that safe: set every ring's
 * daemon_idle, fence, look at the rings once more, and only then block.
 * A client publishes its request, fences, and kicks over the socket when
 * it sees daemon_idle; so either the last look finds the request or the
 * client sees the flag and its kick wakes the loop.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <time.h>

#include <event2/event.h>

#include "daemon/service/loop.h"
#include "proto/monotime.h"
#include "proto/ring.h"

/* Ring checks between two non-blocking passes of libevent. */
#define LOOP_SPINS_PER_PASS	64

static bool
loop_done(struct event_base *base)
{
	return event_base_got_break(base) || event_base_got_exit(base);
}

int
loop_run(struct event_base *base, const struct loop_rings *rings)
{
	void *arg = rings->arg;
	uint64_t seen = rings->work(arg), spin_until = 0;
	bool asleep = true;	/* rings say the loop sleeps (new ones too) */
	int i;

	while (!loop_done(base)) {
		/* poll_us and the rings may change at any pass (SIGHUP) */
		if (rings->poll_us(arg) > 0 && rings->sessions(arg) > 0 &&
		    monotime_ns() < spin_until) {
			if (asleep) {
				rings->set_idle(arg, false);
				asleep = false;
			}
			for (i = 0; i < LOOP_SPINS_PER_PASS; i++)
				if (rings->poll_all(arg) == 0)
					hm_ring_relax();
			if (event_base_loop(base, EVLOOP_NONBLOCK) < 0)
				return -EIO;
		} else {
			if (!asleep) {
				rings->set_idle(arg, true);
				asleep = true;
				hm_ring_fence();
				if (rings->poll_all(arg) > 0)
					goto again;
			}
			if (event_base_loop(base, EVLOOP_ONCE) < 0)
				return -EIO;
		}
again:
		if (rings->work(arg) != seen) {
			seen = rings->work(arg);
			spin_until = monotime_ns() + (uint64_t)rings->poll_us(arg) * 1000u;
		}
	}
	return 0;
}
