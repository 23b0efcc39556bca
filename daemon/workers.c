/*
 * workers.c - see workers.h.
 *
 * Jobs go through two lists: todo (taken by workers, FIFO) and finished
 * (given back to the loop through an eventfd).  Both are guarded by one
 * mutex: a job costs two short critical sections, far below the cost of
 * the read it carries.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/workers.h"

/* How much nicer than the loop thread the workers are. */
#define WORKERS_NICE 10

struct workers {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct worker_job *todo_head, *todo_tail;
	struct worker_job *finished_head, *finished_tail;
	bool stopping;
	unsigned pending;	/* loop thread only */

	int efd;
	struct event *ev;
	pthread_t *threads;
	unsigned nthreads;
};

static void
push(struct worker_job **head, struct worker_job **tail, struct worker_job *job)
{
	job->next = NULL;
	if (*tail != NULL)
		(*tail)->next = job;
	else
		*head = job;
	*tail = job;
}

static void *
worker_main(void *arg)
{
	struct workers *w = arg;

	/*
	 * Below the event loop in the scheduler's eyes: a cold scan's copies
	 * then take the CPU the loop does not need, and a hot client's reads,
	 * answered on the loop, do not wait behind them.  (Linux: nice is per
	 * thread.)  Failure only costs that preference.
	 */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), WORKERS_NICE) < 0) {
		/* e.g. a seccomp filter: the worker runs at the loop's priority */
	}
	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct worker_job *job = w->todo_head;
		bool wake;

		if (job == NULL) {
			if (w->stopping)
				break;
			pthread_cond_wait(&w->cond, &w->lock);
			continue;
		}
		w->todo_head = job->next;
		if (w->todo_head == NULL)
			w->todo_tail = NULL;
		pthread_mutex_unlock(&w->lock);

		job->run(job);

		pthread_mutex_lock(&w->lock);
		/* one wake-up for a burst of completions */
		wake = w->finished_head == NULL;
		push(&w->finished_head, &w->finished_tail, job);
		if (wake) {
			uint64_t one = 1;

			if (write(w->efd, &one, sizeof one) < 0) {
				/* the counter cannot overflow: the loop
				 * reads it before every batch */
			}
		}
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* Completes every finished job; on the loop thread. */
static void
workers_complete(struct workers *w)
{
	struct worker_job *job;
	uint64_t count;

	if (read(w->efd, &count, sizeof count) < 0) {
		/* EAGAIN: nothing signalled since the last batch */
	}
	pthread_mutex_lock(&w->lock);
	job = w->finished_head;
	w->finished_head = w->finished_tail = NULL;
	pthread_mutex_unlock(&w->lock);
	while (job != NULL) {
		struct worker_job *next = job->next;

		w->pending--;
		job->done(job);	/* may free job */
		job = next;
	}
}

static void
workers_event_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	workers_complete(arg);
}

struct workers *
workers_new(struct event_base *base, unsigned n)
{
	struct workers *w;
	unsigned i;

	if (n == 0)
		n = 1;
	w = calloc(1, sizeof *w);
	if (w == NULL)
		return NULL;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	w->threads = calloc(n, sizeof *w->threads);
	if (w->efd < 0 || w->threads == NULL)
		goto fail;
	w->ev = event_new(base, w->efd, EV_READ | EV_PERSIST, workers_event_cb, w);
	if (w->ev == NULL || event_add(w->ev, NULL) < 0)
		goto fail;
	for (i = 0; i < n; i++) {
		int rc = pthread_create(&w->threads[i], NULL, worker_main, w);

		if (rc != 0) {
			errno = rc;
			goto fail;
		}
		w->nthreads++;
	}
	return w;
fail:
	workers_free(w);
	return NULL;
}

void
workers_free(struct workers *w)
{
	unsigned i;

	if (w == NULL)
		return;
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	/* workers drain the queue before they stop */
	for (i = 0; i < w->nthreads; i++)
		pthread_join(w->threads[i], NULL);
	/* Completions may submit more (the next chunk of a stream): with no
	 * thread left, run those here until nothing is left to do. */
	while (w->efd >= 0 && (w->finished_head != NULL || w->todo_head != NULL)) {
		struct worker_job *job = w->todo_head;

		w->todo_head = w->todo_tail = NULL;
		while (job != NULL) {
			struct worker_job *next = job->next;

			job->run(job);
			push(&w->finished_head, &w->finished_tail, job);
			job = next;
		}
		workers_complete(w);
	}
	if (w->ev != NULL)
		event_free(w->ev);
	if (w->efd >= 0)
		close(w->efd);
	free(w->threads);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

void
workers_submit(struct workers *w, struct worker_job *job)
{
	w->pending++;
	pthread_mutex_lock(&w->lock);
	push(&w->todo_head, &w->todo_tail, job);
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

unsigned
workers_pending(const struct workers *w)
{
	return w->pending;
}
