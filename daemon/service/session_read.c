/* SPDX-License-Identifier: MIT */
/*
 * session_read.c - READ and WARM on the socket: a read into the shared
 * region, a read of one frame, a stream of frames for a longer read, and
 * their completions, inline or from a worker (the kinds of job below).
 *
 * What it must not do: touch the handle table other than to look a handle
 * up (session_handle.c), or read the ring (session_ring.c).  A read
 * returns what pread(2) would: short only at end of file, and an error
 * after the first byte ends it short.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/closer.h"
#include "daemon/base/log.h"
#include "daemon/transport/peer.h"
#include "daemon/service/server.h"
#include "daemon/service/session.h"
#include "daemon/service/session_state.h"
#include "daemon/storage/storage.h"

static int session_stream(struct session *s);

static int read_region_done(struct session *s, struct read_job *j);
static int read_socket_done(struct session *s, struct read_job *j);
static int read_chunk_done(struct session *s, struct read_job *j);
static int read_warm_done(struct session *s, struct read_job *j);
static int read_warm_open_done(struct session *s, struct read_job *j);

/* The kinds of job the workers do for the socket's reads (the ring's
 * is in session_ring.c). */

/* READ into the shared region: one copy, one small reply. */
static const struct read_kind read_kind_region = {
	.stepped = true, .warm = false, .op = SERVER_OP_READ, .done = read_region_done,
};
/* READ of up to SESSION_READ_CHUNK: one frame of data. */
static const struct read_kind read_kind_socket = {
	.stepped = false, .warm = false, .op = SERVER_OP_READ, .done = read_socket_done,
};
/* The stream's next chunk: timed when the stream ends. */
static const struct read_kind read_kind_chunk = {
	.stepped = false, .warm = false, .op = -1, .done = read_chunk_done,
};
/* WARM: bring a range into memory, then reply. */
static const struct read_kind read_kind_warm = {
	.stepped = true, .warm = true, .op = SERVER_OP_WARM, .done = read_warm_done,
};
/* An open's warm: in the background, no reply. */
static const struct read_kind read_kind_warm_open = {
	.stepped = true, .warm = true, .op = -1, .done = read_warm_open_done,
};
/* The first open of a file: its chunks in memory read back into huge
 * folios (huge-folios), in the background, no reply. */
static const struct read_kind read_kind_fold_open = {
	.stepped = true, .warm = true, .fold_only = true, .op = -1, .done = read_warm_open_done,
};

/* The ERROR reply to a read that failed at offset with n (-errno). */
static int
session_read_error(struct session *s, uint32_t id, uint64_t offset, ssize_t n)
{
	return session_error(s, id, (int)-n, "read at offset %llu: %s",
			     (unsigned long long)offset, strerror((int)-n));
}

/* A read into the shared region is done, inline or by a worker: n bytes
 * are in the region (or -errno); one small reply. */
static int
session_region_done(struct session *s, uint32_t id, uint64_t offset, ssize_t n)
{
	Hotmap__ReadReply r = HOTMAP__READ_REPLY__INIT;

	if (session_region_faulted(s, n))
		return 0;
	if (n < 0)
		return session_read_error(s, id, offset, n);
	session_count_served(s, n, true);
	r.total = (uint64_t)n;
	return peer_send(s->peer, HM_MSG_READ_DATA, id, &r.base);
}

/* The last frame of a socket read: its total. */
static int
session_read_end(struct session *s, uint32_t id, uint64_t total)
{
	Hotmap__ReadReply r = HOTMAP__READ_REPLY__INIT;

	r.total = total;
	return peer_send(s->peer, HM_MSG_READ_DATA, id, &r.base);
}

/*
 * A one-frame socket read is done: n bytes, or -errno.  Inline, its data
 * frame is queued already (heap NULL); a worker's bytes are in *heap,
 * which is queued here, as is (the peer takes it).
 */
static int
session_socket_done(struct session *s, uint32_t id, uint64_t offset, ssize_t n, uint8_t **heap)
{
	int rc;

	if (n < 0)
		return session_read_error(s, id, offset, n);
	session_count_served(s, n, false);
	if (heap != NULL) {
		rc = peer_send_owned(s->peer, id, *heap, (size_t)n);
		*heap = NULL;
		if (rc < 0)
			return rc;
	}
	return session_read_end(s, id, (uint64_t)n);
}

struct session_fill {
	struct session *s;
	struct storage_handle *h;
	uint64_t offset;
};

/* Fills a reply frame in place, but only from the page cache. */
static ssize_t
session_fill(void *arg, void *dst, size_t len)
{
	struct session_fill *f = arg;

	return storage_read_nowait(f->s->srv->cache, f->h, dst, len, f->offset);
}

static int
session_stream_end(struct session *s)
{
	struct session_stream *st = &s->stream;
	int rc;

	st->active = false;
	stats_record_latency(s->srv, SERVER_OP_READ, st->t0);
	rc = session_read_end(s, st->id, st->total);
	session_update_pause(s);
	return rc;
}

/* Folds n more bytes of the stream in; true when the stream is over. */
static bool
session_stream_advance(struct session *s, ssize_t n, size_t chunk)
{
	struct session_stream *st = &s->stream;

	session_count_served(s, n, false);
	st->total += (uint64_t)n;
	st->offset += (uint64_t)n;
	st->remaining -= (uint64_t)n;
	return (size_t)n < chunk || st->remaining == 0;	/* end of file, or done */
}

/*
 * A chunk of the stream is done, inline or by a worker: n bytes queued
 * (or -errno) of the chunk asked for.  An error before the first byte is
 * an ERROR reply, an error after it ends the read short, as pread would;
 * so does a short chunk (end of file).  *more says the stream goes on.
 */
static int
session_stream_chunk_done(struct session *s, ssize_t n, size_t chunk, bool *more)
{
	struct session_stream *st = &s->stream;

	*more = false;
	if (n < 0 && st->total == 0) {
		st->active = false;
		session_update_pause(s);
		return session_read_error(s, st->id, st->offset, n);
	}
	if (n <= 0 || session_stream_advance(s, n, chunk))
		return session_stream_end(s);
	*more = true;
	return 0;
}

/*
 * Streams the active READ in chunks while the client takes them: once
 * PEER_OUTPUT_HIGH bytes wait, it stops, and the peer's drain goes on
 * (session_stream_resume).  A chunk not in the page cache goes to a
 * worker, and the stream waits for it.  A read ends short at EOF; an error before the first byte is an
 * ERROR reply, an error after it ends the read short, as pread would.
 */
static int
session_stream(struct session *s)
{
	struct session_stream *st = &s->stream;

	while (st->remaining > 0) {
		struct storage_handle *h = &s->handles[st->slot].h;
		struct session_fill f;
		size_t chunk;
		bool more;
		ssize_t n;
		int rc;

		if (st->waiting || peer_output_pending(s->peer) >= PEER_OUTPUT_HIGH)
			return 0;
		chunk = st->remaining < SESSION_READ_CHUNK ? (size_t)st->remaining : SESSION_READ_CHUNK;
		f = (struct session_fill){ s, h, st->offset };
		n = peer_send_raw(s->peer, st->id, chunk, session_fill, &f);
		if (n == -EAGAIN) {
			if (session_submit(s, &read_kind_chunk, st->id, h, st->offset, chunk, NULL) == 0) {
				st->waiting = true;
				return 0;
			}
			n = -ENOMEM;
		}
		rc = session_stream_chunk_done(s, n, chunk, &more);
		if (!more)
			return rc;
	}
	return session_stream_end(s);
}

/* The worker read the stream's next chunk (at st->offset, which waited
 * for it) into j->heap. */
static int
read_chunk_done(struct session *s, struct read_job *j)
{
	bool more = false;
	int rc = 0;

	s->stream.waiting = false;
	if (j->result > 0) {
		rc = peer_send_owned(s->peer, j->id, j->heap, (size_t)j->result);
		j->heap = NULL;
	}
	if (rc == 0)
		rc = session_stream_chunk_done(s, j->result, j->len, &more);
	if (rc == 0 && more)
		rc = session_stream(s);
	return rc;
}

static int
read_region_done(struct session *s, struct read_job *j)
{
	return session_region_done(s, j->id, j->offset, j->result);
}

static int
read_socket_done(struct session *s, struct read_job *j)
{
	return session_socket_done(s, j->id, j->offset, j->result, &j->heap);
}

/* A WARM's reply, with the copy of sh's network file when there is one
 * (storage.h, "Copies of network files") and sh has none yet. */
static int
session_warm_reply(struct session *s, uint32_t id, struct session_handle *sh, Hotmap__WarmReply *r,
		   int fd)
{
	int rc;

	if (fd >= 0) {
		r->copy = true;
		r->copy_size = sh->copy_size;
		rc = peer_send_fd(s->peer, HM_MSG_WARM_REPLY, id, &r->base, (hm_fd)(intptr_t)fd);
		if (rc != -EAGAIN) {
			if (rc < 0)
				closer_close((hm_fd)(intptr_t)fd);
			return rc;
		}
		closer_close((hm_fd)(intptr_t)fd);	/* too many in flight: read as before */
		sh->copy_size = 0;
		r->copy = false;
		r->copy_size = 0;
	}
	return peer_send(s->peer, HM_MSG_WARM_REPLY, id, &r->base);
}

static int
read_warm_done(struct session *s, struct read_job *j)
{
	Hotmap__WarmReply r = HOTMAP__WARM_REPLY__INIT;
	struct session_handle *sh = session_handle_get(s, j->slot);

	if (j->result < 0)
		return session_error(s, j->id, (int)-j->result, "warm: %s", strerror((int)-j->result));
	r.warmed = (uint64_t)j->result;
	/* the handle is still the one warmed: it reads the copy filled */
	if (sh != NULL && sh->h.entry == j->entry && sh->copy_size == 0)
		return session_warm_reply(s, j->id, sh, &r, session_copy_give(s, sh));
	return peer_send(s->peer, HM_MSG_WARM_REPLY, j->id, &r.base);
}

/* An open's warm runs in the background: a failure only costs the
 * warmth, and nobody waits for a reply. */
static int
read_warm_open_done(struct session *s, struct read_job *j)
{
	(void)s;
	(void)j;
	return 0;
}

/* A READ into the shared region: one copy, one small reply. */
static int
session_read_shm(struct session *s, uint32_t id, const Hotmap__Read *m, struct session_handle *sh)
{
	uint8_t *dst;
	ssize_t n;

	if (s->shm == NULL)
		return session_error(s, id, EINVAL, "read: no shared region was registered");
	if (m->shm_offset > s->shm_size || m->length > s->shm_size - m->shm_offset)
		return session_error(s, id, EINVAL,
				     "read: %llu bytes at %llu do not fit the %llu-byte shared region",
				     (unsigned long long)m->length, (unsigned long long)m->shm_offset,
				     (unsigned long long)s->shm_size);
	dst = s->shm + m->shm_offset;
	n = m->length > SESSION_INLINE_MAX ? -EAGAIN :
	    storage_read_nowait(s->srv->cache, &sh->h, dst, (size_t)m->length, m->offset);
	if (n > 0)
		s->pass_inline += (uint64_t)n;
	if (n == -EAGAIN &&
	    session_submit(s, &read_kind_region, id, &sh->h, m->offset, (size_t)m->length, dst) == 0)
		return 0;
	return session_region_done(s, id, m->offset, n == -EAGAIN ? -ENOMEM : n);
}

int
session_read(struct session *s, uint32_t id, ProtobufCMessage *msg)
{
	Hotmap__Read *m = (Hotmap__Read *)msg;
	struct session_handle *sh = session_handle_get(s, m->handle);
	struct session_fill f;
	ssize_t n;

	if (sh == NULL)
		return session_error(s, id, EBADF, "read: no handle %llu", (unsigned long long)m->handle);
	/* pread(2) refuses offsets whose end does not fit in off_t. */
	if (m->offset > INT64_MAX || m->length > (uint64_t)INT64_MAX - m->offset)
		return session_error(s, id, EINVAL, "read: offset %llu + length %llu overflows",
				     (unsigned long long)m->offset, (unsigned long long)m->length);
	session_count_read(s, sh);
	session_readahead(sh, m->offset, m->length);
	if (m->to_shm)
		return session_read_shm(s, id, m, sh);
	if (m->length > SESSION_READ_CHUNK) {
		s->req_deferred = true;	/* timed at its end */
		s->stream = (struct session_stream){
			.active = true,
			.id = id,
			.t0 = s->req_t0,
			.slot = m->handle - 1,
			.offset = m->offset,
			.remaining = m->length,
		};
		session_update_pause(s);
		return session_stream(s);
	}
	/* One frame: in place when the page cache has it, else a worker.
	 * Even a read of nothing asks the file: pread(2) fails on a pipe. */
	f = (struct session_fill){ s, &sh->h, m->offset };
	n = m->length == 0 ? storage_read_nowait(s->srv->cache, &sh->h, NULL, 0, m->offset) :
			     peer_send_raw(s->peer, id, (size_t)m->length, session_fill, &f);
	if (n == -EAGAIN) {
		if (session_submit(s, &read_kind_socket, id, &sh->h, m->offset, (size_t)m->length, NULL) == 0)
			return 0;
		n = -ENOMEM;
	}
	return session_socket_done(s, id, m->offset, n, NULL);
}

int
session_warm(struct session *s, uint32_t id, ProtobufCMessage *msg)
{
	Hotmap__Warm *m = (Hotmap__Warm *)msg;
	struct session_handle *sh = session_handle_get(s, m->handle);
	uint64_t len = m->length;

	if (sh == NULL)
		return session_error(s, id, EBADF, "warm: no handle %llu", (unsigned long long)m->handle);
	if (m->offset > INT64_MAX)
		return session_error(s, id, EINVAL, "warm: offset %llu is too large",
				     (unsigned long long)m->offset);
	if (len > (uint64_t)INT64_MAX - m->offset)
		len = (uint64_t)INT64_MAX - m->offset;	/* "to the end" */
	/* read as any warm, a copy given or not: whether the client maps
	 * it, only the client knows (one that does answers hm_warm itself);
	 * a copy goes with the reply (read_warm_done) */
	if (s->srv->cfg.huge_folios)
		storage_fold_renew(&sh->h, m->offset, len);
	if (session_submit_warm(s, &read_kind_warm, id, m->handle, m->offset, (size_t)len) < 0)
		return session_error(s, id, ENOMEM, "warm: out of memory");
	s->srv->counters.warms++;
	return 0;
}

void
session_warm_open(struct session *s, uint32_t id, struct session_handle *sh, bool asked,
		  uint64_t size)
{
	uint64_t from;

	if (asked || (sh->h.fresh && s->srv->cfg.warm == HM_WARM_POPULATE)) {
		/* the whole file, behind the reply; a failure only costs the
		 * warmth */
		if (s->srv->cfg.huge_folios)
			storage_fold_renew(&sh->h, 0, UINT64_MAX);
		if (session_submit_warm(s, &read_kind_warm_open, id, (uint64_t)(sh - s->handles) + 1, 0,
					(size_t)INT64_MAX) == 0)
			s->srv->counters.warms++;
	} else if (sh->h.fresh && s->srv->cfg.warm == HM_WARM_WILLNEED) {
		/* first cached: the kernel reads it ahead, nothing waits */
		if (storage_willneed(&sh->h, 0, size) == 0)
			s->srv->counters.warms++;
	} else if (s->srv->cfg.huge_folios && storage_fold_start(&sh->h, &from)) {
		/* what of it is in memory, in huge folios, once (the warms
		 * above fold too) */
		if (session_submit(s, &read_kind_fold_open, id, &sh->h, from, (size_t)INT64_MAX,
				   NULL) < 0)
			storage_fold_end(&sh->h, 0, false);
	}
}

int
session_stream_resume(struct session *s)
{
	if (!s->stream.active || s->stream.waiting)
		return 0;
	return session_stream(s);
}
