/* SPDX-License-Identifier: MIT */
/*
 * peer.c - a client connection on libevent (see peer.h): the portable
 * half.  Input buffering, the header checks, dispatch, the output queue
 * and the timers live here; moving bytes over the connection is the
 * transport's (peer_priv.h: peer_unix.c on a socket, transport_win32.c on
 * a named pipe).
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "daemon/transport/peer.h"
#include "daemon/transport/peer_priv.h"

#define PEER_FLUSH_TIMEOUT_S	5


static void peer_update_events(struct peer *p);
static void peer_write_now(struct peer *p);

void
peer_fail(struct peer *p, const char *fmt, ...)
{
	va_list ap;

	if (p->dead)
		return;
	p->dead = true;
	va_start(ap, fmt);
	vsnprintf(p->why, sizeof p->why, fmt, ap);
	va_end(ap);
}

/*
 * Every event callback ends here.  closed() frees the peer, so it is the
 * very last thing a callback does with it.
 */
void
peer_finish(struct peer *p)
{
	/* A closing peer whose replies are all written is done; why is set. */
	if (p->closing && evbuffer_get_length(p->out) == 0)
		p->dead = true;
	if (p->dead) {
		peer_io_stop(p);
		p->ops->closed(p, p->clean, p->why, p->arg);
		return;
	}
	peer_update_events(p);
}

static void
peer_update_events(struct peer *p)
{
	bool want_read = !p->closing && evbuffer_get_length(p->in) < PEER_INPUT_MAX;
	bool want_write = evbuffer_get_length(p->out) > 0;

	peer_io_update(p, want_read, want_write);
}

/* Goes on dispatching once the loop has polled the other clients: a
 * zero timeout runs after the next poll, where event_active would run
 * within this pass of the loop. */
static void
peer_yield(struct peer *p)
{
	static const struct timeval zero = { 0, 0 };

	evtimer_add(p->ev_kick, &zero);
}

/* Dispatches every complete frame while the peer may take more work, up
 * to its share of this pass of the loop. */
static void
peer_process(struct peer *p)
{
	unsigned frames = 0;

	while (!p->dead && !p->paused && !p->closing &&
	       evbuffer_get_length(p->out) < PEER_OUTPUT_HIGH) {
		uint8_t hb[HM_FRAME_HEADER_SIZE];
		struct peer_frame f;
		size_t need;
		uint8_t *buf;
		int r;

		if (evbuffer_get_length(p->in) < HM_FRAME_HEADER_SIZE)
			return;
		evbuffer_copyout(p->in, hb, sizeof hb);
		frame_header_decode(hb, &f.hdr);
		r = frame_header_check(&f.hdr);
		if (r == -EPROTO) {
			peer_send_error(p, f.hdr.id, EPROTONOSUPPORT,
					"protocol version %u is not supported; this daemon speaks %u",
					f.hdr.version, HM_PROTO_VERSION);
			peer_close_after_flush(p, "unsupported protocol version");
			return;
		}
		if (r == -EMSGSIZE) {
			peer_fail(p, "oversized frame (%u message bytes, %u raw bytes)",
				  f.hdr.length, f.hdr.raw_length);
			return;
		}
		/* Clients send requests only; raw bulk bytes flow to them. */
		if (r < 0 || f.hdr.raw_length != 0) {
			peer_fail(p, "malformed frame (type %u, flags 0x%x)",
				  f.hdr.type, f.hdr.flags);
			return;
		}
		need = HM_FRAME_HEADER_SIZE + f.hdr.length;
		if (evbuffer_get_length(p->in) < need)
			return;
		buf = evbuffer_pullup(p->in, (ev_ssize_t)need);
		if (buf == NULL) {
			peer_fail(p, "out of memory");
			return;
		}
		f.body = buf + HM_FRAME_HEADER_SIZE;
		r = p->ops->dispatch(p, &f, p->arg);
		evbuffer_drain(p->in, need);
		if (r < 0)
			peer_fail(p, "%s request: %s", frame_type_name(f.hdr.type), strerror(-r));
		if (++frames >= PEER_PASS_FRAMES ||
		    (p->ops->yield != NULL && p->ops->yield(p, p->arg))) {
			if (evbuffer_get_length(p->in) >= HM_FRAME_HEADER_SIZE)
				peer_yield(p);
			return;
		}
	}
}

/* Whether the input starts with a whole frame (left unanswered while the
 * peer was paused). */
static bool
peer_frame_complete(struct peer *p)
{
	uint8_t hb[HM_FRAME_HEADER_SIZE];
	struct hm_frame_header h;

	if (evbuffer_copyout(p->in, hb, sizeof hb) != (ev_ssize_t)sizeof hb)
		return false;
	frame_header_decode(hb, &h);
	return evbuffer_get_length(p->in) >= HM_FRAME_HEADER_SIZE + (size_t)h.length;
}

void
peer_input(struct peer *p)
{
	if (p->idle_s > 0) {
		struct timeval tv = { (time_t)p->idle_s, 0 };

		evtimer_add(p->ev_idle, &tv);	/* re-arms */
	}
	peer_process(p);
	peer_write_now(p);
}

void
peer_input_eof(struct peer *p)
{
	size_t left = evbuffer_get_length(p->in);

	/* Hanging up between frames is a normal goodbye; in the middle
	 * of one, the client sent a truncated frame. */
	if (left == 0 || peer_frame_complete(p)) {
		p->clean = true;
		peer_fail(p, "client closed the connection");
	} else {
		peer_fail(p, "truncated frame: the client closed the connection "
			  "with %zu bytes of a frame sent", left);
	}
}

/* A read or write on the connection failed with err.  A client that
 * closed its end (EPIPE, ECONNRESET) between frames said goodbye, even
 * with replies unread: hm_close does not wait for its reply, so a
 * short-lived process that closes a file and exits leaves one behind.
 * Only a frame cut in the middle is the client's fault. */
void
peer_io_failed(struct peer *p, const char *op, int err)
{
	size_t left = evbuffer_get_length(p->in);

	if ((err == EPIPE || err == ECONNRESET) && (left == 0 || peer_frame_complete(p))) {
		p->clean = true;
		peer_fail(p, "client closed the connection (%s: %s)", op, strerror(err));
		return;
	}
	peer_fail(p, "%s: %s", op, strerror(err));
}

/* Writes what the connection takes now, then lets paused work go on and
 * dispatches what waited for output room. */
void
peer_write(struct peer *p)
{
	int n = peer_io_write(p);

	if (n < 0) {
		peer_io_failed(p, "write", -n);
		return;
	}
	if (p->closing)
		return;	/* peer_finish closes once all is written */
	if (p->paused && evbuffer_get_length(p->out) < PEER_OUTPUT_LOW) {
		int r = p->ops->drain(p, p->arg);

		if (r < 0) {
			peer_fail(p, "streaming a reply: %s", strerror(-r));
			return;
		}
	}
	peer_process(p);
}

/*
 * After requests were dispatched: write their replies at once rather than
 * arm EV_WRITE and wait one more loop pass for it (two epoll_ctl and one
 * epoll_wait per request otherwise).  The socket has room almost always;
 * what it does not take waits for EV_WRITE.
 */
static void
peer_write_now(struct peer *p)
{
	if (!p->dead && evbuffer_get_length(p->out) > 0 && !peer_io_writing(p))
		peer_write(p);
}

static void
peer_flush_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;
	char why[sizeof p->why];

	(void)fd;
	(void)what;
	memcpy(why, p->why, sizeof why);
	peer_fail(p, "%s (replies not read within %d s)", why, PEER_FLUSH_TIMEOUT_S);
	peer_finish(p);
}

static void
peer_kick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;

	(void)fd;
	(void)what;
	peer_process(p);
	peer_write_now(p);
	peer_finish(p);
}

static void
peer_idle_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;
	struct timeval tv = { (time_t)p->idle_s, 0 };

	(void)fd;
	(void)what;
	/* a client waiting for its replies, or for work in flight, is not
	 * idle; a part of a frame it has not finished sending is no work */
	if (p->paused || evbuffer_get_length(p->out) > 0 ||
	    (p->ops->busy != NULL && p->ops->busy(p, p->arg))) {
		evtimer_add(p->ev_idle, &tv);
		return;
	}
	p->clean = true;
	p->idle_closed = true;
	peer_fail(p, "idle for %u s: closed", p->idle_s);
	peer_finish(p);
}

static void
peer_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;

	(void)fd;
	(void)what;
	peer_fail(p, "%s", p->deadline_why);
	peer_finish(p);
}

void
peer_set_deadline(struct peer *p, unsigned seconds, const char *why)
{
	struct timeval tv = { (time_t)seconds, 0 };

	if (seconds == 0) {
		event_del(p->ev_deadline);
		return;
	}
	snprintf(p->deadline_why, sizeof p->deadline_why, "%s", why);
	evtimer_add(p->ev_deadline, &tv);
}

bool
peer_closed_idle(const struct peer *p)
{
	return p->idle_closed;
}

void
peer_set_idle_timeout(struct peer *p, unsigned seconds)
{
	struct timeval tv = { (time_t)seconds, 0 };

	p->idle_s = seconds;
	if (seconds == 0)
		event_del(p->ev_idle);
	else
		evtimer_add(p->ev_idle, &tv);
}

void
peer_kick(struct peer *p)
{
	event_active(p->ev_kick, EV_TIMEOUT, 0);
}

static void
peer_free_buffer(const void *data, size_t len, void *arg)
{
	(void)data;
	(void)len;
	free(arg);
}

int
peer_send_owned(struct peer *p, uint32_t id, uint8_t *buf, size_t len)
{
	size_t off = 0;

	while (off < len) {
		size_t n = len - off < HM_FRAME_MAX_RAW ? len - off : HM_FRAME_MAX_RAW;
		bool last = off + n == len;
		struct hm_frame_header h = {
			.length = 0,
			.raw_length = (uint32_t)n,
			.type = HM_MSG_READ_DATA,
			.version = HM_PROTO_VERSION,
			.flags = HM_FLAG_MORE,
			.id = id,
		};
		uint8_t hb[HM_FRAME_HEADER_SIZE];

		frame_header_encode(&h, hb);
		/* the buffer is freed with its last piece, which the evbuffer
		 * releases after all the others */
		if (evbuffer_add(p->out, hb, sizeof hb) < 0 ||
		    evbuffer_add_reference(p->out, buf + off, n, last ? peer_free_buffer : NULL,
					   last ? buf : NULL) < 0) {
			/* Pieces already queued refer to buf: then it
			 * leaks rather than dangles (the caller drops the
			 * peer on this error). */
			if (off == 0)
				free(buf);
			return -ENOMEM;
		}
		off += n;
	}
	if (len == 0)
		free(buf);
	return 0;
}

void
peer_ident_clear(struct peer_ident *id)
{
	free(id->groups);
	memset(id, 0, sizeof *id);
	id->uid = (uid_t)-1;
	id->gid = (gid_t)-1;
}

void
peer_ident_move(struct peer_ident *to, struct peer_ident *from)
{
	*to = *from;
	from->groups = NULL;
	peer_ident_clear(from);
}

struct peer *
peer_new(struct event_base *base, hm_conn conn, struct peer_ident *ident,
	    const struct peer_ops *ops, void *arg)
{
	struct peer *p;

	p = calloc(1, sizeof *p);
	if (p == NULL)
		return NULL;
	p->base = base;
	p->conn = conn;
	p->ops = ops;
	p->arg = arg;
	if (ident != NULL)
		peer_ident_move(&p->ident, ident);
	else if (peer_ident_of(conn, &p->ident) < 0)
		peer_ident_clear(&p->ident);
	if (p->ident.known)
		snprintf(p->name, sizeof p->name, "pid %ld %s", (long)p->ident.pid, p->ident.user);
	else
		snprintf(p->name, sizeof p->name, "pid 0 (client unknown)");
	p->in = evbuffer_new();
	p->out = evbuffer_new();
	p->ev_flush = evtimer_new(base, peer_flush_timeout_cb, p);
	p->ev_kick = event_new(base, -1, 0, peer_kick_cb, p);
	p->ev_idle = evtimer_new(base, peer_idle_cb, p);
	p->ev_deadline = evtimer_new(base, peer_deadline_cb, p);
	if (p->in == NULL || p->out == NULL || p->ev_flush == NULL || p->ev_kick == NULL ||
	    p->ev_idle == NULL || p->ev_deadline == NULL || peer_io_new(p) < 0) {
		p->conn = HM_CONN_NONE;	/* the caller still owns conn on failure */
		peer_free(p);
		return NULL;
	}
	peer_update_events(p);
	return p;
}

void
peer_free(struct peer *p)
{
	if (p == NULL)
		return;
	/* the transport first: its events may refer to the buffers */
	peer_io_free(p);
	if (p->ev_flush != NULL)
		event_free(p->ev_flush);
	if (p->ev_kick != NULL)
		event_free(p->ev_kick);
	if (p->ev_idle != NULL)
		event_free(p->ev_idle);
	if (p->ev_deadline != NULL)
		event_free(p->ev_deadline);
	if (p->in != NULL)
		evbuffer_free(p->in);
	if (p->out != NULL)
		evbuffer_free(p->out);
	peer_ident_clear(&p->ident);
	free(p);
}

uid_t
peer_uid(const struct peer *p)
{
	return p->ident.uid;
}

pid_t
peer_pid(const struct peer *p)
{
	return p->ident.pid;
}

const struct peer_ident *
peer_ident(const struct peer *p)
{
	return &p->ident;
}

const char *
peer_name(const struct peer *p)
{
	return p->name;
}

int
peer_send(struct peer *p, uint16_t type, uint32_t id, const ProtobufCMessage *msg)
{
	size_t need = HM_FRAME_HEADER_SIZE + frame_message_size(msg);
	struct evbuffer_iovec vec;
	int n;

	if (evbuffer_reserve_space(p->out, (ev_ssize_t)need, &vec, 1) < 1)
		return -ENOMEM;
	n = frame_encode(type, id, 0, msg, 0, vec.iov_base, vec.iov_len);
	if (n < 0)
		return n;
	vec.iov_len = (size_t)n;
	if (evbuffer_commit_space(p->out, &vec, 1) < 0)
		return -ENOMEM;
	return 0;
}

int
peer_send_error(struct peer *p, uint32_t id, int error, const char *fmt, ...)
{
	Hotmap__Error e = HOTMAP__ERROR__INIT;
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	e.error = error;
	e.message = text;
	return peer_send(p, HM_MSG_ERROR, id, &e.base);
}

ssize_t
peer_send_raw(struct peer *p, uint32_t id, size_t len,
	      ssize_t (*fill)(void *arg, void *dst, size_t len), void *arg)
{
	Hotmap__ReadReply empty = HOTMAP__READ_REPLY__INIT;
	struct hm_frame_header h;
	struct evbuffer_iovec vec;
	ssize_t n;

	if (len > HM_FRAME_MAX_RAW)
		len = HM_FRAME_MAX_RAW;
	/* An empty ReadReply packs to zero bytes: the raw part follows the
	 * header directly. */
	if (frame_message_size(&empty.base) != 0)
		return -EINVAL;
	if (evbuffer_reserve_space(p->out, (ev_ssize_t)(HM_FRAME_HEADER_SIZE + len), &vec, 1) < 1)
		return -ENOMEM;
	n = fill(arg, (uint8_t *)vec.iov_base + HM_FRAME_HEADER_SIZE, len);
	if (n <= 0)
		return n;	/* reserved space not committed: nothing queued */
	h = (struct hm_frame_header){
		.length = 0,
		.raw_length = (uint32_t)n,
		.type = HM_MSG_READ_DATA,
		.version = HM_PROTO_VERSION,
		.flags = HM_FLAG_MORE,
		.id = id,
	};
	frame_header_encode(&h, vec.iov_base);
	vec.iov_len = HM_FRAME_HEADER_SIZE + (size_t)n;
	if (evbuffer_commit_space(p->out, &vec, 1) < 0)
		return -ENOMEM;
	return n;
}

size_t
peer_output_pending(const struct peer *p)
{
	return evbuffer_get_length(p->out);
}

void
peer_set_paused(struct peer *p, bool paused)
{
	p->paused = paused;
}

void
peer_close_after_flush(struct peer *p, const char *why)
{
	struct timeval tv = { PEER_FLUSH_TIMEOUT_S, 0 };

	if (p->closing || p->dead)
		return;
	p->closing = true;
	snprintf(p->why, sizeof p->why, "%s", why);
	evtimer_add(p->ev_flush, &tv);
}
