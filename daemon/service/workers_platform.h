/* SPDX-License-Identifier: MIT */
/*
 * workers_platform.h - the platform halves of the worker pool
 * (workers.h): how a worker thread wakes the event loop, and how it
 * steps aside for it.  workers_unix.c: an eventfd the loop watches, and
 * nice per thread; workers_win32.c: event_active() on the thread-safe
 * base (docs/windows.md, section 3), and SetThreadPriority.
 *
 * Must not: know jobs or queues (workers.c does).
 */
#ifndef HOTMAP_WORKERS_PLATFORM_H
#define HOTMAP_WORKERS_PLATFORM_H

struct event_base;
struct workers_wake;

/* cb(arg) runs on the loop thread after workers_wake_signal. */
struct workers_wake *workers_wake_new(struct event_base *base, void (*cb)(void *arg), void *arg);
/* From any thread: cb runs soon (once for several signals). */
void workers_wake_signal(struct workers_wake *k);
/* On the loop thread, before the finished jobs are taken: signals from
 * now on run cb again. */
void workers_wake_clear(struct workers_wake *k);
/* Takes NULL. */
void workers_wake_free(struct workers_wake *k);

/* The calling worker thread yields to the loop thread in the scheduler's
 * eyes (failure only costs that preference). */
void workers_lower_priority(void);

#endif
