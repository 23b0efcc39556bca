/* SPDX-License-Identifier: MIT */
/*
 * workers.c - see workers.h.
 *
 * Jobs go through two stages: todo (taken by workers) and finished (given
 * back to the loop through the platform's wake-up, workers_platform.h).  Todo is a queue per owner with
 * work waiting, and the queues in a round: a worker takes the first job
 * of the first queue, which then goes to the end of the round (or away,
 * when empty).  So an owner with a thousand jobs queued delays another's
 * first job by at most one job per worker.  Everything is guarded by one
 * mutex: a job costs two short critical sections, far below the cost of
 * the read it carries; finding an owner's queue walks the round, which is
 * as long as the owners with work waiting.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "daemon/service/workers.h"
#include "daemon/service/workers_platform.h"

/* The jobs of one owner waiting for a worker. */
struct owner_queue {
	unsigned long owner;
	struct worker_job *head, *tail;
	struct owner_queue *next;	/* in the round, or on the free list */
};

/* Jobs whose owner could get no queue (out of memory): taken in turn
 * like an owner's. */
#define OWNER_SPARE (~0ul)

struct workers {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct owner_queue *round_head, *round_tail;
	struct owner_queue *free_queues;
	struct owner_queue spare;	/* never freed */
	struct worker_job *finished_head, *finished_tail;
	bool stopping;
	unsigned pending;	/* loop thread only */

	struct event *wake;	/* workers_platform.h: runs workers_wake_cb */
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

/* The owner's queue in the round, made (and put last) if it has none.
 * Lock held. */
static struct owner_queue *
round_queue(struct workers *w, unsigned long owner)
{
	struct owner_queue *q;

	for (q = w->round_head; q != NULL; q = q->next)
		if (q->owner == owner)
			return q;
	q = w->free_queues;
	if (q != NULL)
		w->free_queues = q->next;
	else
		q = malloc(sizeof *q);
	if (q == NULL) {
		for (q = w->round_head; q != NULL && q != &w->spare; q = q->next)
			;
		if (q != NULL)
			return q;
		q = &w->spare;
		owner = OWNER_SPARE;
	}
	*q = (struct owner_queue){ .owner = owner };
	if (w->round_tail != NULL)
		w->round_tail->next = q;
	else
		w->round_head = q;
	w->round_tail = q;
	return q;
}

/* The next job in the round, or NULL.  Lock held. */
static struct worker_job *
round_take(struct workers *w)
{
	struct owner_queue *q = w->round_head;
	struct worker_job *job;

	if (q == NULL)
		return NULL;
	job = q->head;
	q->head = job->next;
	if (q->head == NULL)
		q->tail = NULL;
	/* this owner has had its turn */
	w->round_head = q->next;
	if (w->round_head == NULL)
		w->round_tail = NULL;
	q->next = NULL;
	if (q->head != NULL) {
		if (w->round_tail != NULL)
			w->round_tail->next = q;
		else
			w->round_head = q;
		w->round_tail = q;
	} else if (q != &w->spare) {
		q->next = w->free_queues;
		w->free_queues = q;
	}
	return job;
}

static void *
worker_main(void *arg)
{
	struct workers *w = arg;

	workers_lower_priority();
	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct worker_job *job = round_take(w);
		bool wake;

		if (job == NULL) {
			if (w->stopping)
				break;
			pthread_cond_wait(&w->cond, &w->lock);
			continue;
		}
		pthread_mutex_unlock(&w->lock);

		job->run(job);

		pthread_mutex_lock(&w->lock);
		/* one wake-up for a burst of completions */
		wake = w->finished_head == NULL;
		push(&w->finished_head, &w->finished_tail, job);
		if (wake)
			workers_wake_signal(w->wake);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* Completes every finished job; on the loop thread. */
static void
workers_complete(struct workers *w)
{
	struct worker_job *job;

	workers_wake_clear(w->wake);
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
workers_wake_cb(evutil_socket_t fd, short what, void *arg)
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
	w->wake = workers_wake_new(base, workers_wake_cb, w);
	w->threads = calloc(n, sizeof *w->threads);
	if (w->wake == NULL || w->threads == NULL)
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
	while (w->wake != NULL && (w->finished_head != NULL || w->round_head != NULL)) {
		struct worker_job *job;

		while ((job = round_take(w)) != NULL) {
			job->run(job);
			push(&w->finished_head, &w->finished_tail, job);
		}
		workers_complete(w);
	}
	while (w->free_queues != NULL) {
		struct owner_queue *q = w->free_queues;

		w->free_queues = q->next;
		free(q);
	}
	workers_wake_free(w->wake);
	free(w->threads);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

void
workers_submit(struct workers *w, struct worker_job *job)
{
	struct owner_queue *q;

	w->pending++;
	pthread_mutex_lock(&w->lock);
	q = round_queue(w, job->owner);
	push(&q->head, &q->tail, job);
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}
