/* SPDX-License-Identifier: MIT */
/*
 * loop.h - hotmapd's event loop driver: runs libevent, and while clients
 * use request rings (proto/ring.h) polls them for a bounded time after
 * each ring request, so that a stream of small reads costs no wake-ups.
 *
 * What it is for: deciding when to spin and when to sleep, and the order
 * of the last look before sleeping.  It knows the rings only through
 * struct loop_rings, which its caller (server.c) fills.
 *
 * What it must not do: serve requests or read a ring itself (poll_all
 * does, in session_ring.c), or know the server's or a session's layout.
 */
#ifndef HOTMAP_LOOP_H
#define HOTMAP_LOOP_H

#include <stdbool.h>
#include <stdint.h>

struct event_base;

/* The rings, as the loop sees them.  Every function takes arg. */
struct loop_rings {
	uint64_t (*work)(void *arg);	/* requests taken from rings, ever */
	unsigned (*sessions)(void *arg);	/* clients polling now */
	unsigned (*poll_us)(void *arg);	/* how long to poll after a request; 0: never */
	int (*poll_all)(void *arg);	/* serves what the rings hold; how many */
	void (*set_idle)(void *arg, bool idle);	/* tells every ring whether the loop sleeps */
	void *arg;
};

/* Runs until base is told to exit.  With poll_us 0, or while no ring has
 * had a request for poll_us, it blocks in libevent as usual, and ring
 * clients must kick it.  poll_us and the rings may change at any pass
 * (a reload, a client).  0, or -EIO. */
int loop_run(struct event_base *base, const struct loop_rings *rings);

#endif
