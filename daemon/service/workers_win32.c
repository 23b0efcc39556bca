/* SPDX-License-Identifier: MIT */
/*
 * workers_win32.c - the worker pool's wake-up on Windows (see
 * workers_platform.h): event_active() on the loop's base, which is
 * thread-safe there (evthread_use_windows_threads, docs/windows.md,
 * section 3).
 */
#include "config.h"

#include <windows.h>

#include "daemon/service/workers_platform.h"

struct event *
workers_wake_new(struct event_base *base, event_callback_fn cb, void *arg)
{
	/* never added: event_active() alone runs it */
	return event_new(base, -1, 0, cb, arg);
}

void
workers_wake_signal(struct event *wake)
{
	/* an event already active is not activated twice: one callback
	 * for a burst, which takes every finished job */
	event_active(wake, EV_READ, 0);
}

void
workers_wake_clear(struct event *wake)
{
	(void)wake;	/* nothing is counted: the callback ran */
}

void
workers_wake_free(struct event *wake)
{
	if (wake != NULL)
		event_free(wake);
}

void
workers_lower_priority(void)
{
	/* below the event loop's thread, as nice 10 on Linux */
	SetThreadPriority(GetCurrentThread(), THREAD_PRIORITY_BELOW_NORMAL);
}
