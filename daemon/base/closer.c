/* SPDX-License-Identifier: MIT */
/*
 * closer.c - see closer.h.
 *
 * One thread takes descriptors from a ring of CLOSER_MAX_QUEUED under one
 * mutex and closes them outside it.  A descriptor being closed counts as
 * pending until close(2) returns, so that closer_drain() means "every
 * descriptor handed over is closed".
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "daemon/base/closer.h"
#include "daemon/base/closer_platform.h"

static struct {
	pthread_mutex_t lock;
	pthread_cond_t work;	/* something queued, or stopping */
	pthread_cond_t idle;	/* the queue emptied, or the thread ended */
	hm_fd q[CLOSER_MAX_QUEUED];
	unsigned head, count;
	unsigned busy;		/* 1 while the thread is inside close() */
	bool waiting;		/* the thread sleeps on `work` */
	bool running;		/* closer_close queues */
	bool stopping;
	bool ended;		/* the thread returned */
	bool started;		/* a thread was ever started */
	unsigned long overflows;
	pthread_t thread;
} closer = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

static void *closer_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&closer.lock);
	for (;;) {
		hm_fd fd;

		while (closer.count == 0 && !closer.stopping) {
			closer.waiting = true;
			pthread_cond_wait(&closer.work, &closer.lock);
			closer.waiting = false;
		}
		if (closer.count == 0)
			break;	/* stopping, and everything is closed */
		fd = closer.q[closer.head];
		closer.head = (closer.head + 1) % CLOSER_MAX_QUEUED;
		closer.count--;
		closer.busy = 1;
		pthread_mutex_unlock(&closer.lock);
		closer_fd_close(fd);	/* EINTR: the descriptor is gone all the same */
		pthread_mutex_lock(&closer.lock);
		closer.busy = 0;
		if (closer.count == 0)
			pthread_cond_broadcast(&closer.idle);
	}
	closer.ended = true;
	pthread_cond_broadcast(&closer.idle);
	pthread_mutex_unlock(&closer.lock);
	return NULL;
}

int closer_start(void)
{
	pthread_condattr_t ca;
	int rc;

	pthread_mutex_lock(&closer.lock);
	if (closer.running) {
		pthread_mutex_unlock(&closer.lock);
		return 0;
	}
	if (closer.started && !closer.ended) {
		/* closer_stop gave up on a thread stuck in a close: it still
		 * waits on the conditions, which must not be made anew. */
		pthread_mutex_unlock(&closer.lock);
		return -EBUSY;
	}
	/* Waits are timed on CLOCK_MONOTONIC: a clock step must not make
	 * closer_stop wait for ever, nor give up at once. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&closer.work, &ca);
	pthread_cond_init(&closer.idle, &ca);
	pthread_condattr_destroy(&ca);
	closer.head = closer.count = closer.busy = 0;
	closer.stopping = closer.ended = false;
	rc = pthread_create(&closer.thread, NULL, closer_main, NULL);
	if (rc == 0)
		closer.running = closer.started = true;
	pthread_mutex_unlock(&closer.lock);
	return -rc;
}

/* Waits on closer.idle until done() or the deadline; lock held. */
static bool closer_wait(bool (*done)(void), unsigned timeout_ms)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (!done())
		if (pthread_cond_timedwait(&closer.idle, &closer.lock, &until) == ETIMEDOUT)
			return done();
	return true;
}

static bool closer_ended(void)
{
	return closer.ended;
}

static bool closer_empty(void)
{
	return closer.count == 0 && closer.busy == 0;
}

void closer_stop(unsigned timeout_ms)
{
	bool ended;

	pthread_mutex_lock(&closer.lock);
	if (!closer.running) {
		pthread_mutex_unlock(&closer.lock);
		return;
	}
	closer.stopping = true;
	pthread_cond_signal(&closer.work);
	ended = closer_wait(closer_ended, timeout_ms);
	/* From here on closes are inline; a thread stuck in a close that
	 * never returns still drains the queue if it ever does. */
	closer.running = false;
	pthread_mutex_unlock(&closer.lock);
	if (ended)
		pthread_join(closer.thread, NULL);
	else
		pthread_detach(closer.thread);
}

void closer_close_socket(hm_fd fd)
{
	if (closer_fd_none(fd))
		return;
	closer_fd_prepare(fd);
	closer_close(fd);
}

void closer_close_now(hm_fd fd)
{
	if (!closer_fd_none(fd))
		closer_fd_close(fd);
}

void closer_close(hm_fd fd)
{
	if (closer_fd_none(fd))
		return;
	pthread_mutex_lock(&closer.lock);
	if (closer.running && !closer.stopping && closer.count < CLOSER_MAX_QUEUED) {
		/*
		 * Wake the thread only when it sleeps (awake, it takes this
		 * descriptor before it sleeps again), and after the unlock:
		 * woken under the lock, it would run only to block on the
		 * lock the event loop still holds, a futex round each way on
		 * every OPEN and HELLO that hands a descriptor over.
		 */
		bool wake = closer.waiting;

		closer.q[(closer.head + closer.count) % CLOSER_MAX_QUEUED] = fd;
		closer.count++;
		closer.waiting = false;	/* one wake-up is enough */
		pthread_mutex_unlock(&closer.lock);
		if (wake)
			pthread_cond_signal(&closer.work);
		return;
	}
	if (closer.running)
		closer.overflows++;
	pthread_mutex_unlock(&closer.lock);
	/*
	 * The fallback: not started, stopped, or the queue is full (the
	 * thread is stuck in a close that does not return).  A socket's close
	 * is cheap by now (closer_close_socket); a file's flush may still
	 * wait here.
	 */
	closer_fd_close(fd);
}

unsigned long closer_overflows(void)
{
	unsigned long n;

	pthread_mutex_lock(&closer.lock);
	n = closer.overflows;
	pthread_mutex_unlock(&closer.lock);
	return n;
}

bool closer_drain(unsigned timeout_ms)
{
	bool done;

	pthread_mutex_lock(&closer.lock);
	done = !closer.running || closer_wait(closer_empty, timeout_ms);
	pthread_mutex_unlock(&closer.lock);
	return done;
}
