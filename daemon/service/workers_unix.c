/* SPDX-License-Identifier: MIT */
/*
 * workers_unix.c - the worker pool's wake-up on Linux (see
 * workers_platform.h): an eventfd the event loop watches.
 */
#include "config.h"

#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon/service/workers_platform.h"

/* How much nicer than the loop thread the workers are. */
#define WORKERS_NICE 10

struct event *
workers_wake_new(struct event_base *base, event_callback_fn cb, void *arg)
{
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct event *ev;

	if (efd < 0)
		return NULL;
	ev = event_new(base, efd, EV_READ | EV_PERSIST, cb, arg);
	if (ev == NULL || event_add(ev, NULL) < 0) {
		if (ev != NULL)
			event_free(ev);
		close(efd);
		return NULL;
	}
	return ev;
}

void
workers_wake_signal(struct event *wake)
{
	uint64_t one = 1;

	if (write(event_get_fd(wake), &one, sizeof one) < 0) {
		/* the counter cannot overflow: the loop reads it before
		 * every batch */
	}
}

void
workers_wake_clear(struct event *wake)
{
	uint64_t count;

	if (read(event_get_fd(wake), &count, sizeof count) < 0) {
		/* EAGAIN: nothing signalled since the last batch */
	}
}

void
workers_wake_free(struct event *wake)
{
	evutil_socket_t efd;

	if (wake == NULL)
		return;
	efd = event_get_fd(wake);
	event_free(wake);
	close(efd);
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
