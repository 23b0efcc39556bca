/* SPDX-License-Identifier: MIT */
/*
 * wire.c - libhotmap's frames on its socket: encoding and sending requests
 * (with a descriptor when one goes along), buffering what arrives, reading
 * the replies of calls in flight, handed by id to the call each belongs
 * to, and the ERROR with id 0 by which the daemon says why it refused the
 * connection.  (The thread's last error is error.c's.)
 *
 * Several threads' calls are in flight at once (see struct hm_client):
 * a call links a wire_wait, sends its frames under send_lock, then waits.
 * One waiter at a time is the reader; it reads frames without the lock
 * (in, start and end are its own while it reads), takes the lock to find
 * the frame's wait, and copies READ_DATA bytes into that op's buffer.
 * A wait stays linked until it is done, so the buffer the reader fills
 * is alive; only the reader fails waits while it reads (wait_fail_all).
 *
 * Once the stream is out of step (the daemon vanished, or sent something
 * that is not a frame), the client is broken (client_break): every later
 * call fails with the same errno without touching the socket.
 *
 * Must not: know about files, the region's allocation, the ring's slots or
 * the reconnect policy; hold the client's lock across a read or a write
 * of the socket.
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
#include "client/os.h"
#include "client/transport.h"

/* Marks the client broken with err (positive) and returns -err.  The
 * socket is shut down, so that a thread blocked reading or writing it
 * returns and fails the calls in flight.  With or without the lock. */
int
client_break(hm_client *c, int err)
{
	int none = 0;

	if (__atomic_compare_exchange_n(&c->broken, &none, err, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		transport_shutdown(c);
	return -err;
}

/* Whether a reply of type carries a descriptor: an open by path's
 * (path-descriptors), or hotmapd's copy of a network file with OPEN or
 * WARM (netfs.c). */
static bool
wire_carries_fd(uint16_t type, const ProtobufCMessage *msg)
{
	if (type == HM_MSG_OPEN_REPLY)
		return ((const Hotmap__OpenReply *)msg)->descriptor ||
		       ((const Hotmap__OpenReply *)msg)->copy;
	return type == HM_MSG_WARM_REPLY && ((const Hotmap__WarmReply *)msg)->copy;
}

/* Writes len bytes, the first write carrying pass_fd when >= 0. */
int
client_write(hm_client *c, const uint8_t *buf, size_t len, int pass_fd)
{
	size_t off = 0;

	while (off < len) {
		ssize_t w = transport_send(c, buf + off, len - off, off == 0 ? pass_fd : -1);

		if (w < 0)
			return client_break(c, (int)-w);
		off += (size_t)w;
	}
	return 0;
}

int
client_send(hm_client *c, uint16_t type, uint32_t id, const ProtobufCMessage *msg, int pass_fd)
{
	uint8_t small[1024], *buf = small;
	size_t size = HM_FRAME_HEADER_SIZE + frame_message_size(msg);
	int n, rc;

	if (size > sizeof small) {
		buf = malloc(size);
		if (buf == NULL)
			return -ENOMEM;
	}
	n = frame_encode(type, id, 0, msg, 0, buf, size);
	rc = n < 0 ? n : wire_send_frames(c, buf, (size_t)n, pass_fd);
	if (buf != small)
		free(buf);
	return rc;
}

/* The descriptor that came on the frame starting at stream byte at, or -1;
 * any from before it (unclaimed) are closed. */
static int
wire_take_fd(hm_client *c, uint64_t at)
{
	int fd = -1;

	while (c->rx_nfds > 0 && c->rx_fds[0].at <= at) {
		if (c->rx_fds[0].at == at)
			fd = c->rx_fds[0].fd;
		else
			close(c->rx_fds[0].fd);
		c->rx_nfds--;
		memmove(&c->rx_fds[0], &c->rx_fds[1], c->rx_nfds * sizeof c->rx_fds[0]);
	}
	return fd;
}

/* Makes at least need bytes available at c->in + c->start. */
int
client_fill(hm_client *c, size_t need)
{
	while (c->end - c->start < need) {
		ssize_t r;

		if (c->start > 0 && c->cap - c->start < need) {
			memmove(c->in, c->in + c->start, c->end - c->start);
			c->end -= c->start;
			c->start = 0;
		}
		if (c->cap - c->end < CLIENT_RECV_CHUNK && c->cap < CLIENT_BUF_MAX) {
			uint8_t *p = realloc(c->in, CLIENT_BUF_MAX);

			if (p == NULL)
				return -ENOMEM;
			c->in = p;
			c->cap = CLIENT_BUF_MAX;
		}
		r = transport_recv(c, c->in + c->end, c->cap - c->end);
		if (r == 0)
			return client_break(c, ECONNRESET);
		if (r < 0)
			return client_break(c, (int)-r);
		c->end += (size_t)r;
	}
	return 0;
}

/* Copies n raw bytes of the stream to dst: what is buffered, then the rest
 * straight from the socket. */
int
client_recv_raw(hm_client *c, uint8_t *dst, size_t n)
{
	size_t have = c->end - c->start;

	if (have > n)
		have = n;
	memcpy(dst, c->in + c->start, have);
	c->start += have;
	dst += have;
	n -= have;
	if (n > 0) {
		int rc = transport_recv_all(c, dst, n);

		if (rc < 0)
			return client_break(c, -rc);
	}
	return 0;
}

/* --- calls in flight ------------------------------------------------------ */

static bool
wait_done(const hm_client *c, const struct wire_wait *w)
{
	return w->err != 0 || (w->ring_wake ? c->ring_wakes != w->wakes : w->left == 0);
}

static void
wait_link(hm_client *c, struct wire_wait *w)
{
	w->prev = NULL;
	w->next = c->waits;
	if (w->next != NULL)
		w->next->prev = w;
	c->waits = w;
}

static void
wait_unlink(hm_client *c, struct wire_wait *w)
{
	if (w->prev != NULL)
		w->prev->next = w->next;
	else
		c->waits = w->next;
	if (w->next != NULL)
		w->next->prev = w->prev;
	w->prev = w->next = NULL;
}

/* The wait id belongs to, or NULL.  Lock held. */
static struct wire_wait *
wait_find(hm_client *c, uint32_t id)
{
	struct wire_wait *w;

	for (w = c->waits; w != NULL; w = w->next)
		if (!w->ring_wake && id - w->first_id < w->count)
			return w;
	return NULL;
}

/* The connection failed (c->broken): every wait not done yet fails with
 * it.  Lock held, and nobody reading into the waits' buffers. */
static void
wait_fail_all(hm_client *c, int err)
{
	struct wire_wait *w;

	for (w = c->waits; w != NULL; w = w->next) {
		if (wait_done(c, w))
			continue;
		w->err = err;
		pthread_cond_signal(&w->cond);
	}
}

/* The reader is done: another waiter, if any, takes the socket.  One
 * asleep: a call still sending looks for a reader once it waits, and a
 * signal to it would be lost while sleepers wait for ever.  Lock held. */
static void
wait_hand_off(hm_client *c)
{
	struct wire_wait *w;

	for (w = c->waits; w != NULL; w = w->next) {
		if (w->asleep && !wait_done(c, w)) {
			pthread_cond_signal(&w->cond);
			return;
		}
	}
}

/* A wait is done with a reply of its own: its owner wakes. */
static void
wait_answered(struct wire_wait *w)
{
	if (w->left > 0)
		w->left--;
	if (w->left == 0)
		pthread_cond_signal(&w->cond);
}

/* Whether id was posted (client_post); forgets it.  Lock held. */
static bool
posted_take(hm_client *c, uint32_t id)
{
	unsigned i;

	for (i = 0; i < c->nposted; i++) {
		if (c->posted[i] == id) {
			c->posted[i] = c->posted[--c->nposted];
			return true;
		}
	}
	return false;
}

/* An ERROR's errno and message (to w, or every wait when w is NULL). */
static int
error_of(hm_client *c, struct wire_wait *w, ProtobufCMessage *msg)
{
	Hotmap__Error *e = (Hotmap__Error *)msg;
	int err = e->error > 0 ? e->error : EIO;

	if (w != NULL)
		snprintf(w->why, sizeof w->why, "%s", e->message);
	else
		for (w = c->waits; w != NULL; w = w->next)
			snprintf(w->why, sizeof w->why, "%s", e->message);
	return err;
}

/*
 * Reads one frame and hands it to the wait its id belongs to: a reply
 * frame, an ERROR, or a READ_DATA whose bytes go straight into its op's
 * buffer; a RING_WAKE is counted.  The reading role held, the lock not.
 * 0, or -errno when the connection must break (a frame no wait asked
 * for is one).
 */
static int
wire_read_frame(hm_client *c)
{
	struct hm_frame_header h;
	ProtobufCMessage *msg = NULL;
	struct wire_wait *w;
	struct read_op *op;
	uint64_t total, frame_at;
	int rc, fd = -1;

	rc = client_fill(c, HM_FRAME_HEADER_SIZE);
	if (rc < 0)
		return rc;
	frame_header_decode(c->in + c->start, &h);
	if (c->ring && h.type == HM_MSG_RING_WAKE && h.length == 0 && h.raw_length == 0) {
		c->start += HM_FRAME_HEADER_SIZE;
		pthread_mutex_lock(c->lock);
		c->ring_wakes++;
		for (w = c->waits; w != NULL; w = w->next)
			if (w->ring_wake)
				pthread_cond_signal(&w->cond);
		pthread_mutex_unlock(c->lock);
		return 0;
	}
	if (frame_header_check(&h) < 0)
		return -EPROTO;
	rc = client_fill(c, HM_FRAME_HEADER_SIZE + h.length);
	if (rc < 0)
		return rc;
	frame_at = c->rx_end - (c->end - c->start);
	rc = frame_decode(&h, c->in + c->start + HM_FRAME_HEADER_SIZE, &msg);
	c->start += HM_FRAME_HEADER_SIZE + h.length;
	if (rc < 0)
		return -EPROTO;
	if (c->rx_nfds > 0)
		fd = wire_take_fd(c, frame_at);
	if (fd >= 0 && !wire_carries_fd(h.type, msg)) {
		close(fd);	/* not a frame that carries one */
		fd = -1;
	}

	pthread_mutex_lock(c->lock);
	/* an ERROR with id 0 is about the connection (refused at accept) */
	if (h.id == 0 && h.type == HM_MSG_ERROR) {
		rc = -error_of(c, NULL, msg);
		goto out;
	}
	w = wait_find(c, h.id);
	if (w == NULL) {
		/* a posted request's reply or ERROR: dropped; else nobody
		 * asked for it */
		rc = posted_take(c, h.id) && h.raw_length == 0 ? 0 : -EPROTO;
		goto out;
	}
	if (w->ops == NULL) {
		if (w->left == 0 || h.raw_length != 0) {
			rc = -EPROTO;
			goto out;
		}
		if (h.type == HM_MSG_ERROR) {
			w->result = -error_of(c, w, msg);
		} else {
			w->reply = msg;
			w->reply_type_got = h.type;
			w->reply_fd = fd;
			fd = -1;
			msg = NULL;
		}
		wait_answered(w);
		goto out;
	}
	/* a read: READ_DATA frames with HM_FLAG_MORE carrying bytes (socket
	 * reads), then one without it carrying the total; or ERROR */
	op = &w->ops[h.id - w->first_id];
	if (op->done || op->ring) {
		rc = -EPROTO;
		goto out;
	}
	if (h.type == HM_MSG_ERROR) {
		op->result = -error_of(c, w, msg);	/* the daemon's errno for this read */
		op->done = true;
		wait_answered(w);
		goto out;
	}
	if (h.type != HM_MSG_READ_DATA ||
	    (h.raw_length > 0 && (op->shm || h.raw_length > op->len - op->got))) {
		rc = -EPROTO;
		goto out;
	}
	if (h.flags & HM_FLAG_MORE) {
		/* The wait stays linked and its buffer valid until the op is
		 * done or the reader fails it: safe to fill without the lock. */
		pthread_mutex_unlock(c->lock);
		protobuf_c_message_free_unpacked(msg, NULL);
		rc = client_recv_raw(c, op->buf + op->got, h.raw_length);
		if (rc == 0)
			op->got += h.raw_length;
		return rc;
	}
	total = ((Hotmap__ReadReply *)msg)->total;
	if (h.raw_length != 0 || (op->shm ? total > op->len : total != op->got)) {
		rc = -EPROTO;
		goto out;
	}
	op->result = (ssize_t)total;
	op->done = true;
	wait_answered(w);
out:
	pthread_mutex_unlock(c->lock);
	if (msg != NULL)
		protobuf_c_message_free_unpacked(msg, NULL);
	if (fd >= 0)
		close(fd);
	return rc;
}

/*
 * Waits until w is done: as the reader, reading frames for every wait,
 * while no one else is; otherwise asleep until the reader answers w or
 * hands it the socket.  Lock held (released while it waits or reads).
 */
static void
wait_loop(hm_client *c, struct wire_wait *w)
{
	while (!wait_done(c, w)) {
		if (c->reading) {
			w->asleep = true;
			pthread_cond_wait(&w->cond, c->lock);
			w->asleep = false;
			continue;
		}
		if (c->broken) {
			wait_fail_all(c, c->broken);
			break;
		}
		c->reading = true;
		while (!wait_done(c, w)) {
			int rc;

			if (c->broken) {
				wait_fail_all(c, c->broken);
				break;
			}
			pthread_mutex_unlock(c->lock);
			rc = wire_read_frame(c);
			pthread_mutex_lock(c->lock);
			if (rc < 0)
				wait_fail_all(c, -client_break(c, -rc));
		}
		c->reading = false;
		wait_hand_off(c);
	}
}

/*
 * Starts a call: ids for ops[0..n) (or for one request, ops NULL and n
 * 1), of which left expect a reply; w waits for them from now on, so
 * that a reply read by another thread before this one waits finds it.
 * 0, or -errno (nothing started).
 */
int
wire_begin(hm_client *c, struct wire_wait *w, struct read_op *ops, uint32_t n, uint32_t left)
{
	uint32_t i;

	memset(w, 0, sizeof *w);
	w->reply_fd = -1;
	w->ops = ops;
	w->count = n;
	w->left = left;
	pthread_mutex_lock(c->lock);
	if (c->broken) {
		int err = c->broken;

		pthread_mutex_unlock(c->lock);
		return -err;
	}
	w->first_id = c->next_id;
	c->next_id += n;
	for (i = 0; ops != NULL && i < n; i++)
		ops[i].id = w->first_id + i;
	pthread_cond_init(&w->cond, NULL);
	wait_link(c, w);
	pthread_mutex_unlock(c->lock);
	return 0;
}

/* Writes a call's frames, whole: no other call's come between. */
int
wire_send_frames(hm_client *c, const uint8_t *buf, size_t len, int pass_fd)
{
	int rc;

	pthread_mutex_lock(&c->send_lock);
	rc = client_write(c, buf, len, pass_fd);
	pthread_mutex_unlock(&c->send_lock);
	return rc;
}

/*
 * A request could not be sent (rc): if the daemon refused the connection
 * at accept, it said why in an ERROR with id 0 before it closed, and that
 * is the answer (its message in why).  Otherwise rc.  The reading role
 * held.
 */
static int
wire_refused(hm_client *c, int rc, char *why, size_t whylen)
{
	struct hm_frame_header h;
	ProtobufCMessage *msg = NULL;
	int r = rc;

	if (client_fill(c, HM_FRAME_HEADER_SIZE) < 0)
		return rc;
	frame_header_decode(c->in + c->start, &h);
	if (h.id != 0 || h.type != HM_MSG_ERROR || frame_header_check(&h) < 0 ||
	    client_fill(c, HM_FRAME_HEADER_SIZE + h.length) < 0)
		return rc;
	if (frame_decode(&h, c->in + c->start + HM_FRAME_HEADER_SIZE, &msg) == 0) {
		Hotmap__Error *e = (Hotmap__Error *)msg;

		r = e->error > 0 ? -e->error : -EIO;
		snprintf(why, whylen, "%s", e->message);
		protobuf_c_message_free_unpacked(msg, NULL);
	}
	c->start += HM_FRAME_HEADER_SIZE + h.length;
	return r;
}

/*
 * Ends a call begun with wire_begin whose frames were sent with result rc:
 * waits for every reply w expects (unless nothing was sent), then stops
 * waiting.  0, or -errno: rc, or the connection's failure.  The daemon's
 * ERROR message, if any, becomes this thread's last error.
 */
int
wire_finish(hm_client *c, struct wire_wait *w, int rc)
{
	pthread_mutex_lock(c->lock);
	if (rc < 0 && c->broken == 0) {
		/* not a byte written (no memory): no reply will come */
		wait_unlink(c, w);
		goto out;
	}
	if ((rc == -EPIPE || rc == -ECONNRESET) && !c->reading) {
		c->reading = true;
		pthread_mutex_unlock(c->lock);
		rc = wire_refused(c, rc, w->why, sizeof w->why);
		pthread_mutex_lock(c->lock);
		c->reading = false;
		wait_fail_all(c, c->broken);
		wait_unlink(c, w);
		goto out;
	}
	wait_loop(c, w);
	wait_unlink(c, w);
	if (rc == 0 && w->err != 0)
		rc = -w->err;
out:
	pthread_mutex_unlock(c->lock);
	pthread_cond_destroy(&w->cond);
	if (rc < 0 && w->reply != NULL) {
		protobuf_c_message_free_unpacked(w->reply, NULL);
		w->reply = NULL;
	}
	if ((rc < 0 || w->result < 0) && w->reply_fd >= 0) {
		close(w->reply_fd);
		w->reply_fd = -1;
	}
	if (w->why[0] != '\0')
		set_last_error(w->why);
	return rc;
}

/* RING_WAKE frames read so far: a ring sleep waits for the next. */
uint32_t
wire_ring_wakes(hm_client *c)
{
	uint32_t n;

	pthread_mutex_lock(c->lock);
	n = c->ring_wakes;
	pthread_mutex_unlock(c->lock);
	return n;
}

/* Blocks until a RING_WAKE after the wakes-th (ring.c's sleep).  0, or
 * -errno when the connection failed. */
int
wire_wait_ring(hm_client *c, uint32_t wakes)
{
	struct wire_wait w;
	int rc = 0;

	memset(&w, 0, sizeof w);
	w.ring_wake = true;
	w.wakes = wakes;
	pthread_cond_init(&w.cond, NULL);
	pthread_mutex_lock(c->lock);
	if (c->broken) {
		rc = -c->broken;
	} else {
		wait_link(c, &w);
		wait_loop(c, &w);
		wait_unlink(c, &w);
		if (w.err != 0)
			rc = -w.err;
	}
	pthread_mutex_unlock(c->lock);
	pthread_cond_destroy(&w.cond);
	return rc;
}

/* Forgets every wait and the reader (a child's copy of the parent's
 * threads, or a connection begun anew).  Lock held. */
void
wire_reset(hm_client *c)
{
	c->waits = NULL;
	c->nposted = 0;
	c->reading = false;
	c->rx_end = 0;
	while (c->rx_nfds > 0)
		close(c->rx_fds[--c->rx_nfds].fd);
}

/* One request and its one-frame reply of reply_type.  Pipelined with
 * other threads' calls. */
int
client_call(hm_client *c, uint16_t type, const ProtobufCMessage *req, int pass_fd,
	    uint16_t reply_type, ProtobufCMessage **reply)
{
	int fd, rc;

	rc = client_call_fd(c, type, req, pass_fd, reply_type, reply, &fd);
	if (fd >= 0)
		close(fd);
	return rc;
}

/*
 * One request whose reply nobody waits for: sent, and its reply (or
 * ERROR) dropped by whichever call reads it.  For CLOSE, whose only
 * failures are the daemon's own (the handle is gone with it anyway): a
 * short-lived process saves the round trip, and the daemon still sees
 * every close in order with the connection's other requests.  With
 * CLIENT_POSTED_MAX replies unread, the request waits for its reply as
 * client_call's do.  0, or -errno when it could not be sent.
 */
int
client_post(hm_client *c, uint16_t type, const ProtobufCMessage *req, uint16_t reply_type)
{
	ProtobufCMessage *reply;
	uint32_t id;
	int rc;

	pthread_mutex_lock(c->lock);
	if (c->broken) {
		rc = -c->broken;
		pthread_mutex_unlock(c->lock);
		return rc;
	}
	if (c->nposted == CLIENT_POSTED_MAX) {
		pthread_mutex_unlock(c->lock);
		rc = client_call(c, type, req, -1, reply_type, &reply);
		if (rc == 0)
			protobuf_c_message_free_unpacked(reply, NULL);
		return rc;
	}
	id = c->next_id++;
	c->posted[c->nposted++] = id;
	pthread_mutex_unlock(c->lock);
	rc = client_send(c, type, id, req, -1);
	if (rc < 0) {
		pthread_mutex_lock(c->lock);
		(void)posted_take(c, id);
		pthread_mutex_unlock(c->lock);
	}
	return rc;
}

/*
 * The reply of a call begun with wire_begin, once wire_finish gave rc:
 * the one frame of reply_type (*reply, to free) and the descriptor that
 * came with it (*fd, or -1); or -errno (the daemon's, or the
 * connection's; a reply of another type breaks the connection).
 */
int
wire_reply(hm_client *c, struct wire_wait *w, int rc, uint16_t reply_type,
	   ProtobufCMessage **reply, int *fd)
{
	*reply = NULL;
	*fd = -1;
	if (rc < 0)
		return rc;
	if (w->result < 0)
		return w->result;
	if (w->reply_type_got != reply_type) {
		protobuf_c_message_free_unpacked(w->reply, NULL);
		if (w->reply_fd >= 0)
			close(w->reply_fd);
		w->reply = NULL;
		w->reply_fd = -1;
		return client_break(c, EPROTO);
	}
	/* the caller's now: a wait forgotten later frees nothing twice */
	*reply = w->reply;
	*fd = w->reply_fd;
	w->reply = NULL;
	w->reply_fd = -1;
	return 0;
}

int
client_call_fd(hm_client *c, uint16_t type, const ProtobufCMessage *req, int pass_fd,
	       uint16_t reply_type, ProtobufCMessage **reply, int *fd)
{
	struct wire_wait w;
	int rc;

	*reply = NULL;
	*fd = -1;
	rc = wire_begin(c, &w, NULL, 1, 1);
	if (rc < 0)
		return rc;
	rc = client_send(c, type, w.first_id, req, pass_fd);
	rc = wire_finish(c, &w, rc);
	return wire_reply(c, &w, rc, reply_type, reply, fd);
}

/* Whether w has its replies (or failed): wire_finish would not wait. */
bool
wire_answered(hm_client *c, const struct wire_wait *w)
{
	bool done;

	pthread_mutex_lock(c->lock);
	done = wait_done(c, w);
	pthread_mutex_unlock(c->lock);
	return done;
}

/*
 * The frames already here (buffered, or readable now) read and handed to
 * their waits, without waiting for more (HOTMAP_FALLBACK=local's
 * pipelined replies, pend.c): 0 when nothing whole is left to read, or
 * -errno once the connection failed.  Only frames without raw bytes
 * (replies to HELLO, OPEN and posted requests) are read whole here: a
 * READ_DATA with bytes that nobody waits for breaks the connection
 * before its bytes are read.  The caller is the only reader (exclusive).
 */
int
wire_take_ready(hm_client *c)
{
	for (;;) {
		size_t have = c->end - c->start;
		struct hm_frame_header h;
		int rc;

		if (c->broken)
			return -c->broken;
		if (have >= HM_FRAME_HEADER_SIZE) {
			frame_header_decode(c->in + c->start, &h);
			if (frame_header_check(&h) < 0 ||
			    have - HM_FRAME_HEADER_SIZE >= h.length) {
				rc = wire_read_frame(c);
				if (rc < 0)
					return client_break(c, -rc);
				continue;
			}
		}
		rc = transport_readable(c, 0);
		if (rc <= 0)
			return rc < 0 ? client_break(c, -rc) : 0;
		rc = client_fill(c, have + 1);	/* one recv: it does not wait */
		if (rc < 0)
			return rc;
	}
}
