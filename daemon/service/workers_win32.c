/* SPDX-License-Identifier: MIT */
/*
 * workers_win32.c - the worker pool's wake-up on Windows (see
 * workers_platform.h): event_active() on the loop's base, which is
 * thread-safe there (evthread_use_windows_threads, docs/windows.md,
 * section 3).
 */
#include "config.h"

#include <stdlib.h>

#include <windows.h>

#include <event2/event.h>

#include "daemon/service/workers_platform.h"

struct workers_wake {
	struct event *ev;
	void (*cb)(void *arg);
	void *arg;
};

static void
workers_wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct workers_wake *k = arg;

	(void)fd;
	(void)what;
	k->cb(k->arg);
}

struct workers_wake *
workers_wake_new(struct event_base *base, void (*cb)(void *arg), void *arg)
{
	struct workers_wake *k = calloc(1, sizeof *k);

	if (k == NULL)
		return NULL;
	k->cb = cb;
	k->arg = arg;
	k->ev = event_new(base, -1, 0, workers_wake_cb, k);
	if (k->ev == NULL) {
		free(k);
		return NULL;
	}
	return k;
}

void
workers_wake_signal(struct workers_wake *k)
{
	/* an event already active is not activated twice: one callback
	 * for a burst, which takes every finished job */
	event_active(k->ev, EV_READ, 0);
}

void
workers_wake_clear(struct workers_wake *k)
{
	(void)k;	/* nothing is counted: the callback ran */
}

void
workers_wake_free(struct workers_wake *k)
{
	if (k == NULL)
		return;
	event_free(k->ev);
	free(k);
}

void
workers_lower_priority(void)
{
	/* below the event loop's thread, as nice 10 on Linux */
	SetThreadPriority(GetCurrentThread(), THREAD_PRIORITY_BELOW_NORMAL);
}
