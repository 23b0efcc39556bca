/* SPDX-License-Identifier: MIT */
/*
 * workers.h - a small pool of threads for reads that may block: copies
 * that may fault on cold pages, preads that wait for the disk, files whose
 * reads may wait (devices, pipes).  The event loop never waits for them.
 *
 * A job's run() executes on a worker thread; its done() then executes on
 * the event loop's thread, in the order jobs finish.  Jobs are taken
 * fairly between owners (struct worker_job), first in first out within
 * one owner.  run() must touch
 * nothing the loop thread owns (see storage_read_detached).
 */
#ifndef HOTMAP_WORKERS_H
#define HOTMAP_WORKERS_H

struct event_base;
struct workers;

struct worker_job {
	void (*run)(struct worker_job *job);	/* on a worker thread */
	void (*done)(struct worker_job *job);	/* on the loop thread, after run */
	/*
	 * Whose work it is (a uid): the workers take the jobs of the owners
	 * with work waiting in turn, one job each, so that one owner's queue
	 * never makes another's wait behind all of it.  A long job should
	 * run in bounded steps, its done() submitting the next: each step
	 * goes to the back of its owner's turn.
	 */
	unsigned long owner;
	struct worker_job *next;		/* private to the pool */
};

/* n threads (at least 1).  NULL and errno on failure. */
struct workers *workers_new(struct event_base *base, unsigned n);
/* Runs what is queued, completes it (done() called), joins the threads.
 * Takes NULL. */
void workers_free(struct workers *w);
void workers_submit(struct workers *w, struct worker_job *job);

#endif
