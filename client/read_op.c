/* SPDX-License-Identifier: MIT */
/*
 * read_op.c - a call's READs run (struct read_op): those over the socket
 * sent as frames in one write, those through the ring (polling mode)
 * published there, and the call waits until each has its result.  What
 * read.c and view.c both send through.
 *
 * Must not: hand out region blocks (the caller gives each op its place);
 * know about files or the reconnect policy; read the socket but through
 * wire.c, or the ring but through ring.c.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "client/client_priv.h"

/* Sends the READs of ops[0..n) (their ids given) in one write. */
static int
client_send_reads(hm_client *c, struct read_op *ops, size_t n, size_t framed)
{
	size_t cap, len = 0, i;
	uint8_t *buf;
	int rc;

	cap = framed * (HM_FRAME_HEADER_SIZE + 64);
	buf = malloc(cap);
	if (buf == NULL)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		Hotmap__Read req = HOTMAP__READ__INIT;
		int w;

		if (ops[i].ring || ops[i].local)
			continue;
		req.handle = ops[i].handle;
		req.offset = ops[i].offset;
		req.length = ops[i].len;
		req.to_shm = ops[i].shm;
		req.shm_offset = ops[i].shm_off;
		w = frame_encode(HM_MSG_READ, ops[i].id, 0, &req.base, 0, buf + len, cap - len);
		if (w < 0) {
			free(buf);
			return w;
		}
		len += (size_t)w;
	}
	rc = wire_send_frames(c, buf, len, -1);
	free(buf);
	return rc;
}

/*
 * Every op of ops[0..n) gets its result: those over the socket first, then
 * those through the ring.  The daemon answers reads as they complete, so
 * replies come in any order and the data frames of several may interleave
 * (with other threads' too: wire.c hands each to its op).  A reply is
 * READ_DATA frames with HM_FLAG_MORE carrying bytes (socket reads), then
 * one without it carrying the total; or ERROR, which sets that op's result
 * to -errno.  < 0 only when the connection failed.  A user.
 */
int
client_do_reads(hm_client *c, struct read_op *ops, size_t n)
{
	struct wire_wait w;
	size_t framed = 0, ringed = 0, i;
	int rc;

	if (n == 0)
		return 0;
	if (c->local)
		return fallback_reads(c, ops, n);	/* no daemon: read here */
	for (i = 0; i < n; i++) {
		ops[i].local = false;
		/* HOTMAP_FALLBACK=local: a file whose OPEN is not answered yet
		 * is read here (pend.c), into the op's place */
		if (ops[i].file != NULL && ops[i].file->handle == FALLBACK_HANDLE) {
			ops[i].ring = false;
			(void)fallback_reads(c, &ops[i], 1);
			continue;
		}
		ops[i].ring = c->ring && ops[i].shm;
		framed += !ops[i].ring;
		ringed += ops[i].ring;
		/* afresh: a call run again after a reconnect reuses its ops,
		 * and what the lost connection had delivered is void */
		ops[i].got = 0;
		ops[i].done = false;
		ops[i].result = 0;
	}
	rc = wire_begin(c, &w, ops, (uint32_t)n, (uint32_t)framed);
	if (rc < 0)
		return rc;
	if (framed > 0)
		rc = client_send_reads(c, ops, n, framed);
	rc = wire_finish(c, &w, rc);
	if (rc == 0 && ringed > 0) {
		/* polling mode: one call at a time on the ring */
		pthread_mutex_lock(&c->ring_lock);
		rc = client_ring_reads(c, ops, n);
		pthread_mutex_unlock(&c->ring_lock);
	}
	return rc;
}
