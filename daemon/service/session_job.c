/* SPDX-License-Identifier: MIT */
/*
 * session_job.c - the reads and warms a session hands to the workers
 * (workers.h), their steps, and their return to the loop thread, where
 * each job's kind (struct read_kind) answers it; and the pause that
 * max-inflight and an active stream put on the client's requests.
 *
 * What it must not do: know what a kind of job answers (its done
 * callback does, in session_read.c or session_ring.c), or read frames.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/storage/guard.h"
#include "daemon/base/log.h"
#include "proto/monotime.h"
#include "daemon/transport/peer.h"
#include "daemon/service/server.h"
#include "daemon/service/session.h"
#include "daemon/service/session_state.h"
#include "daemon/storage/storage.h"
#include "daemon/service/workers.h"

/* What a worker does for one job at a time: longer reads into the region
 * and warms run in steps this long, each going back to the end of its
 * owner's turn (workers.h), so that no client holds a worker long. */
#ifndef SESSION_STEP
#define SESSION_STEP		(8u * 1024u * 1024u)
#endif

/* Pauses the client's requests while a stream is active or too much of
 * its work is with the workers; resumes them once neither holds. */
void
session_update_pause(struct session *s)
{
	bool full = s->inflight >= s->max_inflight || s->inflight_bytes >= s->max_inflight_bytes;
	bool want = s->stream.active || full;

	if (want == s->paused)
		return;
	if (want && full)
		s->srv->counters.inflight_waits++;
	s->paused = want;
	peer_set_paused(s->peer, want);
	if (!want)
		peer_kick(s->peer);
}

static void read_job_run(struct worker_job *job);
static void read_job_done(struct worker_job *job);

static int
submit_job(struct session *s, const struct read_kind *kind, uint32_t id,
	   struct storage_handle *h, uint64_t offset, size_t len, uint8_t *dst,
	   struct storage_copy *copy, uint64_t slot)
{
	struct read_job *j = calloc(1, sizeof *j);

	if (j == NULL) {
		(void)storage_copy_end(s->srv->cache, h, copy);	/* nothing filled: freed */
		return -ENOMEM;
	}
	j->copy = copy;
	j->slot = slot;
	j->entry = h->entry;
	if (dst == NULL && !kind->warm) {
		j->heap = malloc(len > 0 ? len : 1);
		if (j->heap == NULL) {
			free(j);
			return -ENOMEM;
		}
		dst = j->heap;
	}
	j->job.run = read_job_run;
	j->job.done = read_job_done;
	j->job.owner = (unsigned long)peer_uid(s->peer);
	j->s = s;
	j->kind = kind;
	j->id = id;
	storage_handle_dup(h, &j->h);
	j->offset = offset;
	j->len = len;
	j->dst = dst;
	j->t0 = s->req_t0;
	j->fold = kind->warm && s->srv->cfg.huge_folios;
	if (kind->op >= 0)
		s->req_deferred = true;	/* timed when the worker is done */
	s->inflight++;
	/* a read holds its length (heap or region); a warm holds a step of
	 * a worker at a time */
	j->charge = !kind->warm ? len : len < SESSION_STEP ? len : SESSION_STEP;
	s->inflight_bytes += j->charge;
	s->srv->counters.inflight++;
	s->srv->counters.reads_offloaded++;
	workers_submit(s->srv->workers, &j->job);
	session_update_pause(s);
	return 0;
}

int
session_submit(struct session *s, const struct read_kind *kind, uint32_t id,
	       struct storage_handle *h, uint64_t offset, size_t len, uint8_t *dst)
{
	return submit_job(s, kind, id, h, offset, len, dst, NULL, 0);
}

int
session_submit_warm(struct session *s, const struct read_kind *kind, uint32_t id,
		    uint64_t slot, uint64_t offset, size_t len)
{
	struct storage_handle *h = &s->handles[slot - 1].h;
	struct storage_copy *copy = storage_copy_begin(s->srv->cache, h, offset, len,
						       (uint32_t)peer_uid(s->peer));

	return submit_job(s, kind, id, h, offset, len, NULL, copy, slot);
}

int
session_copy_give(struct session *s, struct session_handle *sh)
{
	struct storage_copy_info info;
	int fd;

	if (!s->takes_copies)
		return -1;	/* an older client: it would close the descriptor */
	fd = storage_copy_get(s->srv->cache, &sh->h, &info, (uint32_t)peer_uid(s->peer));
	if (fd < 0)
		return -1;
	sh->copy_size = info.size;
	sh->copy_filled_ns = monotime_ns() - info.age_ms * 1000000u;
	return fd;
}

static void
read_job_run(struct worker_job *job)
{
	struct read_job *j = (struct read_job *)job;

	uint64_t left = j->len - j->done_bytes;
	size_t step = j->kind->stepped && left > SESSION_STEP ? SESSION_STEP : (size_t)left;

	j->io.nowait = false;
	j->io.fold = j->fold;
	j->io.fold_only = j->kind->fold_only;
	j->io.fold_first = j->done_bytes == 0;
	j->io.copy = j->copy;
	if (j->kind->warm)
		j->result = storage_warm_detached(&j->h, j->offset + j->done_bytes, step, &j->io);
	else
		j->result = storage_read_detached(&j->h, j->dst + j->done_bytes, step,
						  j->offset + j->done_bytes, &j->io);
}

/*
 * After a step, on the loop thread: true when the job goes back to the
 * workers for its next step (the step read all it asked for, and more is
 * left); else j->result is the whole job's: the bytes of every step (short
 * at end of file; an error after some bytes ends the read short, as
 * pread's would), or the first step's error.
 */
static bool
read_job_next_step(struct read_job *j)
{
	uint64_t left = j->len - j->done_bytes;
	size_t step = left > SESSION_STEP ? SESSION_STEP : (size_t)left;

	if (!j->kind->stepped)
		return false;
	/* a client gone, or the daemon stopping: no more steps; nor for
	 * background work on a file dropped from the cache (evicted) */
	if (!j->s->dead && !j->s->srv->stopping &&
	    (j->kind->op >= 0 || storage_cached(&j->h)) &&
	    j->result >= 0 && (size_t)j->result == step && left > step) {
		j->done_bytes += step;
		return true;
	}
	/* a fault writing the region is the client's, whatever came
	 * before it: it stays, and drops the client */
	if (j->result >= 0)
		j->result += (ssize_t)j->done_bytes;
	else if (j->done_bytes > 0 && j->result != GUARD_EFAULT_DST)
		j->result = (ssize_t)j->done_bytes;
	return false;
}

/* On the loop thread: the worker's read is done; its kind answers it. */
static void
read_job_done(struct worker_job *job)
{
	struct read_job *j = (struct read_job *)job;
	struct session *s = j->s;
	int rc;

	storage_read_finish(s->srv->cache, &j->h, &j->io);
	if (read_job_next_step(j)) {
		/* the next step, behind the other owners' jobs */
		j->io = (struct storage_io){ .nowait = false };
		workers_submit(s->srv->workers, &j->job);
		return;
	}
	if (j->copy != NULL) {
		/* the warm is done: its copy is kept (sealed) or freed */
		(void)storage_copy_end(s->srv->cache, &j->h, j->copy);
		j->copy = NULL;
	}
	if (j->kind->fold_only)
		storage_fold_end(&j->h, j->offset + (j->result > 0 ? (uint64_t)j->result : 0),
				 j->io.fold_cold);
	file_cache_close(s->srv->cache, &j->h);
	s->inflight--;
	s->inflight_bytes -= j->charge;
	s->srv->counters.inflight--;
	if (j->kind->op >= 0)
		stats_record_latency(s->srv, (enum server_op)j->kind->op, j->t0);
	if (s->dead) {
		free(j->heap);
		free(j);
		if (s->inflight == 0)
			session_destroy(s);
		return;
	}
	rc = j->kind->done(s, j);
	free(j->heap);
	free(j);
	if (rc < 0)
		log_warn("client %s: cannot queue a reply: %s", peer_name(s->peer), strerror(-rc));
	session_update_pause(s);
	/* there may be output to write, or input to dispatch, now */
	peer_kick(s->peer);
}
