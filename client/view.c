/* SPDX-License-Identifier: MIT */
/*
 * view.c - views (hm_view_range, hm_view_batch, hm_view_release,
 * hm_view_check): a file's bytes the caller reads where they lie.  A
 * granted file's view points into its mapping (the direct tier), a
 * network file's into hotmapd's copy of it when it has one; any other is
 * read into region blocks of its own, or, when the region has no
 * room (or there is none), over the socket into memory of its own.  A
 * view holds its blocks and a reference to the region until it is
 * released, even after a reconnect or hm_disconnect.
 *
 * Must not: hand out region blocks but through region.c; send a request
 * but through client_do_reads (read_op.c), as a user of the client
 * (client_with_retry).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_priv.h"

/* What a view keeps in struct hm_view's priv_ (copied in and out). */
enum view_kind {
	VIEW_EMPTY = 0,
	VIEW_REGION,		/* obj: the region, held, with blocks [off, off + len) */
	VIEW_HEAP,		/* obj: memory of its own, the bytes came over the socket */
	VIEW_DIRECT,		/* obj: the file's direct_map, held */
	VIEW_NETCOPY,		/* obj: hotmapd's copy of a network file, held */
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
	*op = (struct read_op){ .handle = v->f->handle, .offset = v->offset, .len = v->len,
				.file = v->f };
	if (v->f->handle == 0)
		return -ESTALE;	/* lost in a reconnect */
	op->shm = region_alloc(r, v->len, &op->shm_off) == 0;
	if (op->shm) {
		region_ref(r);	/* held across a reconnect; the view keeps it */
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

/* A network file's view (netfs.c): a pointer into hotmapd's copy when
 * the file has one, else read here with pread into memory of its own.
 * 0 with *v made, 1 when the daemon reads it instead, or -errno. */
static int
view_net(hm_file *f, uint64_t offset, size_t len, struct hm_view *v)
{
	struct view_priv p = { .kind = VIEW_NETCOPY };
	struct net_copy *ref;
	ssize_t n;

	if (net_copy_view(f, offset, len, &v->data, &v->len, &ref) == 0) {
		p.obj = ref;
		memcpy(v->priv_, &p, sizeof p);
		return 0;
	}
	p.kind = VIEW_HEAP;
	p.obj = malloc(len > 0 ? len : 1);
	if (p.obj == NULL)
		return -ENOMEM;
	n = net_read(f, p.obj, len, offset);
	if (n < 0) {
		free(p.obj);
		return n == DIRECT_MISS ? 1 : (int)n;
	}
	v->data = p.obj;
	v->len = (size_t)n;
	memcpy(v->priv_, &p, sizeof p);
	return 0;
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
	if (f->net && (rc = view_net(f, offset, len, v)) <= 0)
		return rc < 0 ? fail(-rc) : 0;
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
	OP_COUNT(f, &op);
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
	case VIEW_NETCOPY:
		net_copy_unref(p.obj);
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
		return 0;	/* its own bytes, or a sealed copy: they cannot change */
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
					.len = x->len, .file = x->file };
		if (op->handle == 0)
			op->len = 0;	/* lost in a reconnect: answered ESTALE below */
		op->shm = region_alloc(r, op->len, &op->shm_off) == 0;
		if (op->shm) {
			region_ref(r);
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
		OP_COUNT(x->file, op);
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
		} else if (x->file->net) {
			int r = view_net(x->file, x->offset, x->len, &x->view);

			if (r <= 0)
				x->error = -r;
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
