/* SPDX-License-Identifier: MIT */
/*
 * workers_platform.h - the platform halves of the worker pool
 * (workers.h): how a worker thread wakes the event loop, and how it
 * steps aside for it.  The wake-up is an event of the loop's base that
 * runs the pool's callback on the loop thread; workers.c owns it, the
 * platform only says how it is made and signalled.  workers_unix.c: an
 * eventfd the loop watches, and nice per thread; workers_win32.c:
 * event_active() on the thread-safe base (docs/windows.md, section 3),
 * and SetThreadPriority.
 *
 * Must not: know jobs or queues (workers.c does).
 */
#ifndef HOTMAP_WORKERS_PLATFORM_H
#define HOTMAP_WORKERS_PLATFORM_H

#include <event2/event.h>

/* An event on base that runs cb(fd, what, arg) on the loop thread after
 * workers_wake_signal.  NULL on failure. */
struct event *workers_wake_new(struct event_base *base, event_callback_fn cb, void *arg);
/* From any thread: cb runs soon (once for several signals). */
void workers_wake_signal(struct event *wake);
/* On the loop thread, before the finished jobs are taken: signals from
 * now on run cb again. */
void workers_wake_clear(struct event *wake);
/* Takes NULL. */
void workers_wake_free(struct event *wake);

/* The calling worker thread yields to the loop thread in the scheduler's
 * eyes (failure only costs that preference). */
void workers_lower_priority(void);

#endif
