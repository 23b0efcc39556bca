/* SPDX-License-Identifier: MIT */
/*
 * region.c - the shared region and the views into it.
 *
 * A sealed memfd the daemon copies file bytes into, handed out first fit
 * in blocks of REGION_BLOCK (a bitmap under the region's own lock).  A
 * view holds its blocks and a reference to the region until it is
 * released, even after a reconnect or hm_disconnect; a view that finds no
 * room gets its bytes over the socket into memory of its own.
 *
 * Must not: touch the socket but through client_do_reads; free a region
 * with a reference left (a view may outlive its client).
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
#include <time.h>
#include <unistd.h>

#include "client/client_priv.h"
#include "proto/direct.h"

pthread_mutex_t regions_lock = PTHREAD_MUTEX_INITIALIZER;
struct hm_region *regions;

void
region_unref(struct hm_region *r)
{
	unsigned left;

	if (r == NULL)
		return;
	pthread_mutex_lock(&regions_lock);
	pthread_mutex_lock(&r->lock);
	left = --r->refs;
	pthread_mutex_unlock(&r->lock);
	if (left == 0) {
		if (r->prev != NULL)
			r->prev->next = r->next;
		else
			regions = r->next;
		if (r->next != NULL)
			r->next->prev = r->prev;
	}
	pthread_mutex_unlock(&regions_lock);
	if (left > 0)
		return;
	region_unmap(r);
	pthread_mutex_destroy(&r->lock);
	free(r->used);
	free(r);
}

bool
region_block_used(const struct hm_region *r, size_t i)
{
	return (r->used[i / 64] >> (i % 64)) & 1;
}

void
region_mark(struct hm_region *r, size_t first, size_t n, bool used)
{
	size_t i;

	for (i = first; i < first + n; i++) {
		if (used)
			r->used[i / 64] |= 1ull << (i % 64);
		else
			r->used[i / 64] &= ~(1ull << (i % 64));
	}
}

/* First fit: the offset of len free bytes (rounded up to blocks), or
 * -ENOSPC. */
int
region_alloc(struct hm_region *r, size_t len, size_t *off)
{
	size_t need = len == 0 ? 1 : (len + REGION_BLOCK - 1) / REGION_BLOCK;
	size_t i, run = 0;
	int rc = -ENOSPC;

	if (r == NULL || need > r->nblocks)
		return -ENOSPC;
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->nblocks; i++) {
		run = region_block_used(r, i) ? 0 : run + 1;
		if (run == need) {
			region_mark(r, i + 1 - need, need, true);
			*off = (i + 1 - need) * REGION_BLOCK;
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}

void
region_free(struct hm_region *r, size_t off, size_t len)
{
	size_t need = len == 0 ? 1 : (len + REGION_BLOCK - 1) / REGION_BLOCK;

	pthread_mutex_lock(&r->lock);
	region_mark(r, off / REGION_BLOCK, need, false);
	pthread_mutex_unlock(&r->lock);
}

/* The region of size bytes and then slots direct-read slots (a whole
 * number of pages), mapped (region_map); what HELLO passes in *fd. */
struct hm_region *
region_new(size_t size, uint32_t slots, hm_osfile *fd)
{
	size_t table = (size_t)slots * HM_DIRECT_SLOT_BYTES;
	struct hm_region *r;

	*fd = HM_OSFILE_NONE;
	size = (size + REGION_BLOCK - 1) / REGION_BLOCK * REGION_BLOCK;
	r = calloc(1, sizeof *r);
	if (r == NULL)
		return NULL;
	r->size = size;
	r->nblocks = size / REGION_BLOCK;
	r->used = calloc((r->nblocks + 63) / 64, sizeof *r->used);
	if (r->used == NULL || region_map(r, table, slots, fd) < 0)
		goto fail;
	pthread_mutex_init(&r->lock, NULL);
	r->refs = 1;
	r->shared = true;
	pthread_mutex_lock(&regions_lock);
	r->next = regions;
	if (r->next != NULL)
		r->next->prev = r;
	regions = r;
	pthread_mutex_unlock(&regions_lock);
	return r;
fail:
	free(r->used);
	free(r);
	return NULL;
}

/* --- views --------------------------------------------------------------- */

/* What a view keeps in struct hm_view's priv_ (copied in and out). */
enum view_kind {
	VIEW_EMPTY = 0,
	VIEW_REGION,		/* obj: the region, held, with blocks [off, off + len) */
	VIEW_HEAP,		/* obj: memory of its own, the bytes came over the socket */
	VIEW_DIRECT,		/* obj: the file's direct_map, held */
};
struct view_priv {
	enum view_kind kind;
	void *obj;
	size_t off, len;
};
_Static_assert(sizeof(struct view_priv) <= sizeof(((struct hm_view *)0)->priv_),
	       "struct view_priv fits struct hm_view's priv_");

struct view_call {
	hm_file *f;
	uint64_t offset;
	size_t len;
	struct read_op op;
	struct hm_region *r;	/* the region op.shm_off is in */
};

/* Reads v->len bytes into a region block of their own or a buffer of the
 * view's; on failure gives both back.  A user of the client. */
static int
view_run(hm_client *c, void *arg)
{
	struct view_call *v = arg;
	struct read_op *op = &v->op;
	struct hm_region *r = c->region;
	int rc;

	v->r = r;
	*op = (struct read_op){ .handle = v->f->handle, .offset = v->offset, .len = v->len };
	if (v->f->handle == 0)
		return -ESTALE;	/* lost in a reconnect */
	op->shm = region_alloc(r, v->len, &op->shm_off) == 0;
	if (op->shm) {
		/* held across a reconnect; the view keeps it */
		pthread_mutex_lock(&r->lock);
		r->refs++;
		pthread_mutex_unlock(&r->lock);
	} else {
		/* No room in the region (or none): the bytes come
		 * over the socket into memory of the view's own. */
		op->buf = malloc(v->len > 0 ? v->len : 1);
		if (op->buf == NULL)
			return -ENOMEM;
	}
	rc = client_do_reads(c, op, 1);
	if (rc == 0 && op->result < 0)
		rc = (int)op->result;
	if (rc == 0)
		return 0;
	if (op->shm) {
		region_free(r, op->shm_off, v->len);
		region_unref(r);
	}
	free(op->buf);
	op->buf = NULL;
	return rc;
}

HM_EXPORT int
hm_view_range(hm_file *f, uint64_t offset, size_t len, struct hm_view *v)
{
	struct view_call call = { .f = f, .offset = offset, .len = len };
	struct view_priv p = { 0 };
	struct read_op op;
	struct hm_region *r;
	int rc;

	set_last_error(NULL);
	if (v != NULL)
		memset(v, 0, sizeof *v);
	if (f == NULL || v == NULL || check_range(len, offset) < 0)
		return fail(EINVAL);
	if (f->dm != NULL) {
		struct direct_map *m;

		/* a pointer into the file's mapping: no copy at all */
		if (direct_view(f, offset, len, &v->data, &v->len, &m) == 0) {
			p.kind = VIEW_DIRECT;
			p.obj = m;
			memcpy(v->priv_, &p, sizeof p);
			return 0;
		}
	}
	rc = client_with_retry(f->c, view_run, &call);
	if (rc < 0)
		return fail(-rc);
	op = call.op;
	r = call.r;
	if (op.shm) {
		p.kind = VIEW_REGION;
		p.obj = r;	/* the view outlives hm_disconnect */
		p.off = op.shm_off;
		p.len = len;
		v->data = r->base + op.shm_off;
	} else {
		p.kind = VIEW_HEAP;
		p.obj = op.buf;
		v->data = op.buf;
	}
	memcpy(v->priv_, &p, sizeof p);
	v->len = (size_t)op.result;
	direct_heat(f, op.result);
	return 0;
}

HM_EXPORT void
hm_view_release(struct hm_view *v)
{
	struct view_priv p;

	if (v == NULL)
		return;
	memcpy(&p, v->priv_, sizeof p);
	switch (p.kind) {
	case VIEW_REGION:
		region_free(p.obj, p.off, p.len);
		region_unref(p.obj);
		break;
	case VIEW_HEAP:
		free(p.obj);
		break;
	case VIEW_DIRECT:
		direct_map_unref(p.obj);
		break;
	case VIEW_EMPTY:
		break;
	}
	memset(v, 0, sizeof *v);
}

HM_EXPORT int
hm_view_check(const struct hm_view *v)
{
	struct view_priv p;
	int rc;

	if (v == NULL)
		return fail(EINVAL);
	memcpy(&p, v->priv_, sizeof p);
	if (p.kind != VIEW_DIRECT)
		return 0;	/* a copy: its bytes are its own */
	rc = direct_map_check(p.obj);
	return rc < 0 ? fail(-rc) : 0;
}


/* --- many views ---------------------------------------------------------- */

struct view_batch {
	struct hm_view_io *io;
	const size_t *map;	/* the ios of this window */
	size_t m;
	struct read_op ops[CLIENT_BATCH_WINDOW];
	struct hm_region *r;	/* the region the ops' shm_off are in */
};

/* Gives back what ops[0..m) hold (their region blocks, their buffers). */
static void
view_batch_undo(struct view_batch *w)
{
	size_t k;

	for (k = 0; k < w->m; k++) {
		struct read_op *op = &w->ops[k];

		if (op->shm) {
			region_free(w->r, op->shm_off, op->len);
			region_unref(w->r);
		}
		free(op->buf);
		op->buf = NULL;
		op->shm = false;
	}
}

/* One window: a region block (or a buffer) per view, one round of reads.
 * A user of the client. */
static int
view_batch_run(hm_client *c, void *arg)
{
	struct view_batch *w = arg;
	struct hm_region *r = c->region;
	size_t k;
	int rc;

	w->r = r;
	for (k = 0; k < w->m; k++) {
		struct hm_view_io *x = &w->io[w->map[k]];
		struct read_op *op = &w->ops[k];

		*op = (struct read_op){ .handle = x->file->handle, .offset = x->offset,
					.len = x->len };
		if (op->handle == 0)
			op->len = 0;	/* lost in a reconnect: answered ESTALE below */
		op->shm = region_alloc(r, op->len, &op->shm_off) == 0;
		if (op->shm) {
			pthread_mutex_lock(&r->lock);
			r->refs++;
			pthread_mutex_unlock(&r->lock);
		} else if ((op->buf = malloc(op->len > 0 ? op->len : 1)) == NULL) {
			w->m = k;
			view_batch_undo(w);
			return -ENOMEM;
		}
	}
	rc = client_do_reads(c, w->ops, w->m);
	if (rc < 0)
		view_batch_undo(w);
	return rc;
}

/* The views of a window, from its reads' results. */
static void
view_batch_fill(struct view_batch *w)
{
	size_t k;

	for (k = 0; k < w->m; k++) {
		struct hm_view_io *x = &w->io[w->map[k]];
		struct read_op *op = &w->ops[k];
		struct view_priv p = { 0 };

		if (x->file->handle == 0 || op->result < 0) {
			x->error = x->file->handle == 0 ? ESTALE : (int)-op->result;
			if (op->shm) {
				region_free(w->r, op->shm_off, op->len);
				region_unref(w->r);
			}
			free(op->buf);
			continue;
		}
		if (op->shm) {
			p.kind = VIEW_REGION;
			p.obj = w->r;
			p.off = op->shm_off;
			p.len = op->len;
			x->view.data = w->r->base + op->shm_off;
		} else {
			p.kind = VIEW_HEAP;
			p.obj = op->buf;
			x->view.data = op->buf;
		}
		memcpy(x->view.priv_, &p, sizeof p);
		x->view.len = (size_t)op->result;
		x->error = 0;
		direct_heat(x->file, op->result);
	}
}

HM_EXPORT int
hm_view_batch(hm_client *c, struct hm_view_io *io, size_t n)
{
	struct view_batch *w;
	size_t map[CLIENT_BATCH_WINDOW];
	size_t i = 0, m;
	int rc = 0;

	set_last_error(NULL);
	if (c == NULL || (io == NULL && n > 0))
		return fail(EINVAL);
	for (i = 0; i < n; i++) {
		memset(&io[i].view, 0, sizeof io[i].view);
		io[i].error = -1;	/* not answered yet */
	}
	/* granted files first: pointers into their mappings, no round trip */
	for (i = 0; i < n; i++) {
		struct hm_view_io *x = &io[i];
		struct direct_map *dm;
		struct view_priv p = { .kind = VIEW_DIRECT };

		if (x->file == NULL || x->file->c != c) {
			x->error = EBADF;
		} else if (check_range(x->len, x->offset) < 0) {
			x->error = EINVAL;
		} else if (x->file->dm != NULL &&
			   direct_view(x->file, x->offset, x->len, &x->view.data, &x->view.len,
				       &dm) == 0) {
			p.obj = dm;
			memcpy(x->view.priv_, &p, sizeof p);
			x->error = 0;
		}
	}
	w = malloc(sizeof *w);
	if (w == NULL)
		return fail(ENOMEM);
	w->io = io;
	w->map = map;
	for (i = 0; i < n && rc == 0;) {
		for (m = 0; i < n && m < CLIENT_BATCH_WINDOW; i++)
			if (io[i].error == -1)
				map[m++] = i;
		if (m == 0)
			break;
		w->m = m;
		rc = client_with_retry(c, view_batch_run, w);
		if (rc == 0)
			view_batch_fill(w);
	}
	free(w);
	for (i = 0; i < n; i++)
		if (io[i].error == -1)
			io[i].error = -rc;	/* the connection failed first */
	return rc < 0 ? fail(-rc) : 0;
}
