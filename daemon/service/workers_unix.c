/* SPDX-License-Identifier: MIT */
/*
 * workers_unix.c - the worker pool's wake-up on Linux (see
 * workers_platform.h): an eventfd the event loop watches.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/service/workers_platform.h"

/* How much nicer than the loop thread the workers are. */
#define WORKERS_NICE 10

struct workers_wake {
	int efd;
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
	k->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (k->efd >= 0)
		k->ev = event_new(base, k->efd, EV_READ | EV_PERSIST, workers_wake_cb, k);
	if (k->ev == NULL || event_add(k->ev, NULL) < 0) {
		workers_wake_free(k);
		return NULL;
	}
	return k;
}

void
workers_wake_signal(struct workers_wake *k)
{
	uint64_t one = 1;

	if (write(k->efd, &one, sizeof one) < 0) {
		/* the counter cannot overflow: the loop reads it before
		 * every batch */
	}
}

void
workers_wake_clear(struct workers_wake *k)
{
	uint64_t count;

	if (read(k->efd, &count, sizeof count) < 0) {
		/* EAGAIN: nothing signalled since the last batch */
	}
}

void
workers_wake_free(struct workers_wake *k)
{
	if (k == NULL)
		return;
	if (k->ev != NULL)
		event_free(k->ev);
	if (k->efd >= 0)
		close(k->efd);
	free(k);
}

void
workers_lower_priority(void)
{
	/*
	 * Below the event loop in the scheduler's eyes: a cold scan's copies
	 * then take the CPU the loop does not need, and a hot client's reads,
	 * answered on the loop, do not wait behind them.  (Linux: nice is per
	 * thread.)
	 */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), WORKERS_NICE) < 0) {
		/* e.g. a seccomp filter: the worker runs at the loop's priority */
	}
}
