/* SPDX-License-Identifier: MIT */
/*
 * read.c - hm_pread and hm_read_batch: a read in the client when the file
 * is granted (direct_unix.c), else one READ per range, through the region
 * when it has room or over the socket, several threads' reads in flight at
 * once (wire.c hands each reply to its call).
 *
 * Must not: hand out region blocks but through region.c; send a request
 * but through client_do_reads (read_op.c); send a range longer than half
 * the region through it whole (pread_split).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "client/client_priv.h"
#include "proto/hm_errno.h"

/* Runs ops[0..n) (n <= CLIENT_BATCH_WINDOW): reads of at least the
 * threshold go through the region when it has room, the rest over the
 * socket; region bytes are then copied to each op's buf.  A user. */
static int
client_run_reads(hm_client *c, struct read_op *ops, size_t n)
{
	size_t i;
	int rc;

	/* in polling mode, the ring beats a frame at any size */
	for (i = 0; i < n; i++)
		ops[i].shm = (c->ring || ops[i].len >= c->shm_threshold) &&
			     region_alloc(c->region, ops[i].len, &ops[i].shm_off) == 0;
	rc = client_do_reads(c, ops, n);
	for (i = 0; i < n; i++) {
		if (!ops[i].shm)
			continue;
		/* ring ops were copied out chunk by chunk as they completed */
		if (rc == 0 && ops[i].result > 0 && !ops[i].ring)
			memcpy(ops[i].buf, c->region->base + ops[i].shm_off, (size_t)ops[i].result);
		region_free(c->region, ops[i].shm_off, ops[i].len);
	}
	return rc;
}

struct pread_call {
	hm_file *f;
	struct read_op op;
};

static int
pread_run(hm_client *c, void *arg)
{
	struct pread_call *p = arg;

	p->op.handle = p->f->handle;
	p->op.file = p->f;
	return p->f->handle == 0 ? -ESTALE : client_run_reads(c, &p->op, 1);
}

/* The largest read that goes through c's region whole: half of it, so that
 * views holding blocks leave room; a longer read is split.  SIZE_MAX
 * without a region (every byte comes over the socket anyway). */
static size_t
pread_chunk(const hm_client *c, size_t len)
{
	size_t size = __atomic_load_n(&c->region_size, __ATOMIC_RELAXED), half;

	if (size == 0 || len < c->shm_threshold)
		return SIZE_MAX;
	half = size / 2 / REGION_BLOCK * REGION_BLOCK;
	return half > 0 ? half : SIZE_MAX;
}

/* A read longer than the region takes, in pieces that each go through
 * it: short only at the end of the file, as one read would be. */
static ssize_t
pread_split(hm_file *f, void *buf, size_t len, uint64_t offset)
{
	size_t done = 0;

	while (done < len) {
		struct pread_call p = { .f = f };
		size_t chunk = pread_chunk(f->c, len - done);
		int rc;

		p.op.offset = offset + done;
		p.op.len = len - done < chunk ? len - done : chunk;
		p.op.buf = (uint8_t *)buf + done;
		rc = client_with_retry(f->c, pread_run, &p);
		if (rc == 0 && p.op.result < 0)
			rc = (int)p.op.result;
		if (rc < 0) {
			if (done > 0)
				break;	/* as pread: what was read, then the error next time */
			return fail(-rc);
		}
		done += (size_t)p.op.result;
		OP_COUNT(f, &p.op);
		if ((size_t)p.op.result < p.op.len)
			break;	/* the end of the file */
	}
	direct_heat(f, (ssize_t)done);
	return (ssize_t)done;
}

/* hm_pread through the daemon: the region, the ring or the socket.  Out
 * of line: its read op (some 100 bytes, zeroed) is not the direct tier's
 * to pay for. */
static __attribute__((noinline)) ssize_t
pread_daemon(hm_file *f, void *buf, size_t len, uint64_t offset)
{
	struct pread_call p = { .f = f };
	struct read_op *op = &p.op;
	int rc;

	if (pread_chunk(f->c, len) < len)
		return pread_split(f, buf, len, offset);
	op->offset = offset;
	op->len = len;
	op->buf = buf;
	rc = client_with_retry(f->c, pread_run, &p);
	if (rc < 0)
		return fail(-rc);
	if (op->result < 0)
		return fail((int)-op->result);
	OP_COUNT(f, op);
	direct_heat(f, op->result);
	return op->result;
}

HM_EXPORT ssize_t
hm_pread(hm_file *f, void *buf, size_t len, uint64_t offset)
{
	set_last_error(NULL);
	if (f == NULL || (buf == NULL && len > 0))
		return fail(EINVAL);
	/* As pread(2): the end of the range must fit in off_t. */
	if (check_range(len, offset) < 0)
		return fail(EINVAL);
	if (f->dm != NULL) {
		ssize_t n = direct_read(f, buf, len, offset);

		if (n != DIRECT_MISS)
			return n;
	}
	if (f->net) {
		ssize_t n = net_read(f, buf, len, offset);

		if (n != DIRECT_MISS)
			return n < 0 ? fail((int)-n) : n;
	}
	return pread_daemon(f, buf, len, offset);
}

/* One window of hm_read_batch: the valid ios io[map[0..m)]. */
struct batch_window {
	struct hm_io *io;
	const size_t *map;
	size_t m;
	struct read_op ops[CLIENT_BATCH_WINDOW];
	size_t asked[CLIENT_BATCH_WINDOW];	/* io index of ops[k] */
	size_t j;				/* ops asked for */
};

static int
batch_window_run(hm_client *c, void *arg)
{
	struct batch_window *w = arg;
	size_t k;

	/* (again) from the files' handles: a reconnect renews
	 * them, and a file it lost is not asked for */
	for (k = 0, w->j = 0; k < w->m; k++) {
		struct hm_io *x = &w->io[w->map[k]];

		if (x->file->handle == 0) {
			x->result = -ESTALE;
			continue;
		}
		w->ops[w->j] = (struct read_op){
			.handle = x->file->handle, .offset = x->offset,
			.len = x->len, .buf = x->buf, .file = x->file,
		};
		w->asked[w->j++] = w->map[k];
	}
	return client_run_reads(c, w->ops, w->j);
}

HM_EXPORT int
hm_read_batch(hm_client *c, struct hm_io *io, size_t n)
{
	struct batch_window w;	/* on the stack, as before: not zeroed */
	size_t map[CLIENT_BATCH_WINDOW];
	size_t i = 0, k, m;
	bool retried = false;
	unsigned gen;
	int rc = 0;

	set_last_error(NULL);
	if (c == NULL || (io == NULL && n > 0))
		return fail(EINVAL);
	w.io = io;
	w.map = map;
	w.j = 0;
	gen = client_enter(c);
	while (i < n && rc == 0) {
		/* one window of valid ios; the others get their error here */
		for (m = 0; i < n && m < CLIENT_BATCH_WINDOW; i++) {
			struct hm_io *x = &io[i];

			if (x->file == NULL || x->file->c != c)
				x->result = -EBADF;
			else if ((x->buf == NULL && x->len > 0) || check_range(x->len, x->offset) < 0)
				x->result = -EINVAL;
			else if (x->file->handle == 0)
				x->result = -ESTALE;	/* lost in a reconnect */
			else if (x->file->dm != NULL &&
				 (x->result = direct_read(x->file, x->buf, x->len, x->offset)) !=
				 DIRECT_MISS)
				;	/* read here: no round trip */
			else if (x->file->net && (x->result = net_read_entered(x->file, x->buf,
					x->len, x->offset)) != DIRECT_MISS)
				;	/* a network file: pread here */
			else
				map[m++] = i;
		}
		w.m = m;
		do
			rc = batch_window_run(c, &w);
		while (client_retry(c, rc, &retried, &gen));
		for (k = 0; k < w.j; k++) {
			io[w.asked[k]].result = rc < 0 ? rc : w.ops[k].result;
			if (rc == 0 && w.ops[k].result >= 0)
				OP_COUNT(io[w.asked[k]].file, &w.ops[k]);
		}
	}
	/* a connection that failed leaves the rest unanswered */
	for (; i < n; i++)
		io[i].result = rc;
	client_leave(c);
	/* what the daemon read counts towards making a granted file direct */
	for (k = 0; rc == 0 && k < n; k++)
		if (io[k].result >= 0 && io[k].file->direct_ok && io[k].file->dm == NULL)
			direct_heat(io[k].file, io[k].result);
	return rc < 0 ? fail(-rc) : 0;
}


