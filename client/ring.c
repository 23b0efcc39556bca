/* SPDX-License-Identifier: MIT */
/*
 * ring.c - polling mode (proto/ring.h): reads published as entries of the
 * submission ring at the start of the region, completions taken from the
 * completion ring, with a poll, then a sleep on the socket until the
 * daemon's RING_WAKE.
 *
 * One call at a time uses the ring (the caller holds ring_lock across
 * client_ring_reads); other threads' frames go on meanwhile, and its
 * sleep is a wait among theirs (wire_wait_ring): whichever thread reads
 * the socket counts the RING_WAKE and wakes it.
 *
 * Must not: write frames but RING_KICK; run without ring_lock; read the
 * socket but through wire.c; read a completion it cannot match to a chunk
 * it published (the client is then broken).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client/client_priv.h"
#include "proto/monotime.h"
#include "proto/ring.h"

/*
 * A ring read larger than this goes as several entries, each copied out
 * to the caller as soon as it and those before it are done, so that the
 * daemon's copy of one chunk overlaps ours of the previous one.  (The
 * daemon reads 256 KiB and more of a mapped file with pread.)
 */
#define CLIENT_RING_CHUNK	(256u * 1024u)

/* One ring entry: a chunk of a ring op. */
struct ring_chunk {
	size_t op;		/* index in ops */
	size_t off;		/* from the start of the op */
	size_t len;
	ssize_t result;
	bool done;
};

/* Ring progress of one call. */
struct ring_call {
	struct read_op *ops;
	size_t n;
	struct ring_chunk *chunks;
	size_t nchunks;
	uint32_t first_id;	/* of chunks[0]; chunk k has first_id + k */
	size_t *next;		/* per op: its first chunk not yet folded in */
	size_t *end;		/* per op: one past its last chunk */
	unsigned out;		/* chunks published, not yet completed */
	size_t left;		/* chunks not yet completed */
};

/*
 * Folds op's completed chunks in, in order: copies their bytes to the
 * caller's buffer (not for views), and stops at the first short or failed
 * one, so that the op ends as pread would: short at end of file, or with
 * the bytes before an error, or the error when no byte came.  The buffer
 * gets nothing past what the op returns.
 */
static void
ring_fold(hm_client *c, struct ring_call *rc, size_t i)
{
	struct read_op *op = &rc->ops[i];

	while (rc->next[i] < rc->end[i] && rc->chunks[rc->next[i]].done) {
		struct ring_chunk *k = &rc->chunks[rc->next[i]];

		if (k->result < 0) {
			if (op->got == 0)
				op->result = k->result;
			rc->next[i] = rc->end[i];
			break;
		}
		if (op->buf != NULL && k->result > 0)
			memcpy(op->buf + k->off, c->region->base + op->shm_off + k->off, (size_t)k->result);
		op->got += (size_t)k->result;
		op->result = (ssize_t)op->got;
		rc->next[i]++;
		if ((size_t)k->result < k->len)
			rc->next[i] = rc->end[i];	/* end of file */
	}
}

/* Takes the completions the daemon published: how many, or < 0 when they
 * make no sense (the client is then broken).  ring_lock held. */
static int
client_ring_consume(hm_client *c, struct ring_call *rc)
{
	uint8_t *base = c->region->base;
	uint32_t tail = hm_ring_load(base, HM_RING_CQ_TAIL);
	int got = 0;

	if (tail - c->cq_head > HM_RING_ENTRIES)
		return client_break(c, EPROTO);
	while (c->cq_head != tail) {
		struct hm_ring_cqe e;
		struct ring_chunk *k;
		uint32_t j;

		memcpy(&e, hm_ring_cqe(base, c->cq_head), sizeof e);
		j = e.id - rc->first_id;
		if (j >= rc->nchunks || rc->chunks[j].done || e.result > (int64_t)rc->chunks[j].len ||
		    e.result < -4095)
			return client_break(c, EPROTO);
		k = &rc->chunks[j];
		k->result = (ssize_t)e.result;
		k->done = true;
		c->cq_head++;
		rc->out--;
		rc->left--;
		got++;
		ring_fold(c, rc, k->op);
	}
	if (got > 0)
		hm_ring_store(base, HM_RING_CQ_HEAD, c->cq_head);
	return got;
}

/*
 * Waits for at least one completion: polls for poll_us, then says it
 * sleeps (client_idle), looks once more, and sleeps on the socket until
 * the daemon's RING_WAKE.  The daemon fences between publishing and
 * reading the flag, as we do between setting it and looking, so one of
 * the two always sees the other.  A wake counted after the count taken
 * before the flag was set ends the sleep: a late one of an earlier sleep
 * only makes the loop look again.  ring_lock held.
 */
static int
client_ring_wait(hm_client *c, struct ring_call *rc)
{
	uint8_t *base = c->region->base;
	uint64_t until = 0;
	unsigned spins = 0;
	uint32_t wakes;
	int got, err;

	for (;;) {
		got = client_ring_consume(c, rc);
		if (got != 0)
			return got < 0 ? got : 0;
		if (c->poll_us > 0 && (++spins % 64) != 0) {
			hm_ring_relax();
			continue;
		}
		if (c->poll_us > 0 && until == 0)
			until = monotime_us() + c->poll_us;
		if (c->poll_us > 0 && monotime_us() < until)
			continue;
		wakes = wire_ring_wakes(c);
		hm_ring_store(base, HM_RING_CLIENT_IDLE, 1);
		hm_ring_fence();
		got = client_ring_consume(c, rc);
		if (got != 0) {
			/* a RING_WAKE may still come: the next read skips it */
			hm_ring_store(base, HM_RING_CLIENT_IDLE, 0);
			return got < 0 ? got : 0;
		}
		err = wire_wait_ring(c, wakes);
		if (err < 0)
			return err;
		until = 0;
		spins = 0;
	}
}

/*
 * Runs the ring ops of ops[0..n): cuts them into chunks, publishes as many
 * as the ring holds, kicks the daemon if it said it sleeps, and takes
 * completions until every chunk is done.  Each op's result (and bytes,
 * when it has a buffer) is then in place.  ring_lock held, not the lock.
 */
int
client_ring_reads(hm_client *c, struct read_op *ops, size_t n)
{
	struct ring_call rc = { .ops = ops, .n = n };
	size_t i, j, next = 0;
	uint8_t *base;
	int err = 0;

	for (i = 0; i < n; i++)
		if (ops[i].ring)
			rc.nchunks += ops[i].len == 0 ? 1 :
				      (ops[i].len + CLIENT_RING_CHUNK - 1) / CLIENT_RING_CHUNK;
	if (rc.nchunks == 0)
		return 0;
	rc.chunks = calloc(rc.nchunks, sizeof *rc.chunks);
	rc.next = calloc(n, sizeof *rc.next);
	rc.end = calloc(n, sizeof *rc.end);
	if (rc.chunks == NULL || rc.next == NULL || rc.end == NULL) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0, j = 0; i < n; i++) {
		size_t off = 0;

		if (!ops[i].ring)
			continue;
		rc.next[i] = j;
		ops[i].got = 0;
		ops[i].result = 0;
		do {
			size_t len = ops[i].len - off < CLIENT_RING_CHUNK ? ops[i].len - off :
									    CLIENT_RING_CHUNK;

			rc.chunks[j++] = (struct ring_chunk){ .op = i, .off = off, .len = len };
			off += len;
		} while (off < ops[i].len);
		rc.end[i] = j;
	}
	pthread_mutex_lock(c->lock);
	rc.first_id = c->next_id;
	c->next_id += (uint32_t)rc.nchunks;
	pthread_mutex_unlock(c->lock);
	rc.left = rc.nchunks;
	base = c->region->base;
	while (rc.left > 0) {
		bool published = false;

		for (; next < rc.nchunks && rc.out < HM_RING_ENTRIES; next++) {
			const struct ring_chunk *k = &rc.chunks[next];
			struct hm_ring_sqe *e = hm_ring_sqe(base, c->sq_tail);

			e->handle = ops[k->op].handle;
			e->offset = ops[k->op].offset + k->off;
			e->length = k->len;
			e->shm_offset = ops[k->op].shm_off + k->off;
			e->id = rc.first_id + (uint32_t)next;
			e->reserved = 0;
			c->sq_tail++;
			rc.out++;
			published = true;
		}
		if (published) {
			hm_ring_store(base, HM_RING_SQ_TAIL, c->sq_tail);
			hm_ring_fence();
			if (hm_ring_load(base, HM_RING_DAEMON_IDLE) != 0) {
				Hotmap__RingKick kick = HOTMAP__RING_KICK__INIT;

				err = client_send(c, HM_MSG_RING_KICK, 0, &kick.base, -1);
				if (err < 0)
					goto out;
			}
		}
		err = client_ring_wait(c, &rc);
		if (err < 0)
			goto out;
	}
	for (i = 0; i < n; i++)
		if (ops[i].ring)
			ops[i].done = true;
out:
	free(rc.chunks);
	free(rc.next);
	free(rc.end);
	return err;
}
