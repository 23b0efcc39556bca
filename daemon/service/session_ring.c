/* SPDX-License-Identifier: MIT */
/*
 * session_ring.c - polling mode (see session_ring.h and proto/ring.h).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <event2/event.h>

#include "daemon/base/log.h"
#include "proto/monotime.h"
#include "daemon/transport/peer.h"
#include "daemon/service/server.h"
#include "daemon/service/session.h"
#include "daemon/service/session_state.h"
#include "daemon/service/session_ring.h"
#include "proto/ring.h"

static int session_ring_job_done(struct session *s, struct read_job *j);

/* A ring request: into the region, a completion in the ring. */
static const struct read_kind read_kind_ring = {
	.stepped = true, .warm = false, .op = SERVER_OP_READ, .done = session_ring_job_done,
};

/* Publishes one completion, inline or from a worker, and counts what
 * it served.  Space for it was reserved when its request was taken
 * (session_ring_poll), so the ring cannot be full here. */
static void
session_ring_complete(struct session *s, uint32_t id, ssize_t result)
{
	struct hm_ring_cqe *e;

	session_count_served(s, result, true);
	if (!s->ring || session_region_faulted(s, result))
		return;
	if (result < 0)
		stats_count_error(s->srv, (int)-result);	/* as an ERROR reply would be */
	e = hm_ring_cqe(s->shm, s->cq_tail);
	e->id = id;
	e->reserved = 0;
	e->result = result;
	s->cq_tail++;
	hm_ring_store(s->shm, HM_RING_CQ_TAIL, s->cq_tail);
}

/* After publishing completions: a client that said it sleeps gets one
 * RING_WAKE (it clears its flag before it sleeps again, so never more). */
static void
session_ring_notify(struct session *s)
{
	Hotmap__RingWake w = HOTMAP__RING_WAKE__INIT;

	if (!s->ring)
		return;
	hm_ring_fence();
	if (__atomic_exchange_n(hm_ring_word(s->shm, HM_RING_CLIENT_IDLE), 0, __ATOMIC_ACQ_REL) == 0)
		return;
	if (peer_send(s->peer, HM_MSG_RING_WAKE, 0, &w.base) < 0)
		log_warn("client %s: cannot queue a ring wake-up", peer_name(s->peer));
	/* written on the loop's next pass (we may be outside any callback) */
	peer_kick(s->peer);
}

/* One request from the ring, copied out of the region before it is
 * checked: the client may change the region at any time. */
static void
session_ring_read(struct session *s, const struct hm_ring_sqe *e)
{
	struct session_handle *sh = session_handle_get(s, e->handle);
	uint8_t *dst;
	ssize_t n;

	s->srv->counters.requests[HM_MSG_READ]++;
	s->srv->counters.reads_ring++;
	s->req_t0 = monotime_ns();
	if (sh == NULL) {
		session_ring_complete(s, e->id, -EBADF);
		return;
	}
	if (e->offset > INT64_MAX || e->length > (uint64_t)INT64_MAX - e->offset ||
	    e->shm_offset < HM_RING_BYTES || e->shm_offset > s->shm_size ||
	    e->length > s->shm_size - e->shm_offset) {
		session_ring_complete(s, e->id, -EINVAL);
		return;
	}
	session_count_read(s, sh);
	session_readahead(sh, e->offset, e->length);
	dst = s->shm + e->shm_offset;
	n = e->length > SESSION_INLINE_MAX ? -EAGAIN :
	    storage_read_nowait(s->srv->cache, &sh->h, dst, (size_t)e->length, e->offset);
	if (n > 0)
		s->pass_inline += (uint64_t)n;
	if (n == -EAGAIN) {
		if (session_submit(s, &read_kind_ring, e->id, &sh->h, e->offset, (size_t)e->length, dst) == 0) {
			s->ring_pending++;
			return;
		}
		n = -ENOMEM;
	}
	session_ring_complete(s, e->id, n);
	stats_record_latency(s->srv, SERVER_OP_READ, s->req_t0);
}

int
session_ring_poll(struct session *s)
{
	uint32_t tail, head, used;
	int taken = 0;

	if (!s->ring || s->dead)
		return 0;
	tail = hm_ring_load(s->shm, HM_RING_SQ_TAIL);
	if (tail - s->sq_head > HM_RING_ENTRIES)
		return -EPROTO;
	while (s->sq_head != tail) {
		struct hm_ring_sqe e;

		head = hm_ring_load(s->shm, HM_RING_CQ_HEAD);
		used = s->cq_tail - head;
		if (used > HM_RING_ENTRIES || used + s->ring_pending >= HM_RING_ENTRIES)
			break;	/* the client must consume completions first */
		if (s->inflight >= s->max_inflight || s->inflight_bytes >= s->max_inflight_bytes) {
			/* max-inflight, as for frames: the rest waits until a
			 * job is done (read_job_done polls again) */
			s->srv->counters.inflight_waits++;
			break;
		}
		memcpy(&e, hm_ring_sqe(s->shm, s->sq_head), sizeof e);
		s->sq_head++;
		session_ring_read(s, &e);
		taken++;
		/* its share of this pass: the rest after the loop has polled
		 * everyone else */
		if (taken >= PEER_PASS_FRAMES || s->pass_inline >= SESSION_INLINE_MAX) {
			static const struct timeval zero = { 0, 0 };

			s->pass_inline = 0;
			if (s->ev_ring_again != NULL)
				evtimer_add(s->ev_ring_again, &zero);
			break;
		}
	}
	if (taken > 0) {
		s->ring_active = true;
		hm_ring_store(s->shm, HM_RING_SQ_HEAD, s->sq_head);
		s->srv->ring_work += (uint64_t)taken;
		session_ring_notify(s);
	}
	return taken;
}

static void
session_ring_again_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;

	(void)fd;
	(void)what;
	if (session_ring_poll(s) < 0)
		peer_close_after_flush(s->peer, "its request ring runs past its end");
}

void
session_ring_start(struct session *s)
{
	s->ring = true;
	s->srv->ring_sessions++;
	s->ev_ring_again = evtimer_new(s->srv->base, session_ring_again_cb, s);
	/* While the loop does not poll, the client must kick. */
	hm_ring_store(s->shm, HM_RING_DAEMON_IDLE, s->srv->ring_polling ? 0 : 1);
}

void
session_ring_stop(struct session *s)
{
	if (s->ev_ring_again != NULL) {
		event_free(s->ev_ring_again);
		s->ev_ring_again = NULL;
	}
	if (s->ring) {
		s->srv->ring_sessions--;
		s->ring = false;
	}
}

/* A ring request the workers read is done. */
static int
session_ring_job_done(struct session *s, struct read_job *j)
{
	s->ring_pending--;
	session_ring_complete(s, j->id, j->result);
	session_ring_notify(s);
	/* requests left in the ring for max-inflight may go now */
	if (session_ring_poll(s) < 0)
		peer_close_after_flush(s->peer, "its request ring runs past its end");
	return 0;
}

int
session_ring_kick(struct session *s, uint32_t id, ProtobufCMessage *msg)
{
	(void)msg;
	if (!s->ring)
		return session_error(s, id, EINVAL, "RING_KICK: this connection has no ring");
	if (session_ring_poll(s) < 0) {
		peer_close_after_flush(s->peer, "its request ring runs past its end");
		return 0;
	}
	return 0;
}
