/*
 * wire.c - libhotmap's frames on its socket: encoding and sending requests
 * (with a descriptor when one goes along), buffering what arrives, reading
 * a reply frame by id, and the ERROR with id 0 by which the daemon says
 * why it refused the connection.  The thread's last error lives here.
 *
 * Once the stream is out of step (the daemon vanished, or sent something
 * that is not a frame), the client is broken (client_break): every later
 * call fails with the same errno without touching the socket.
 *
 * Must not: know about files, the region's allocation, the ring's slots or
 * the reconnect policy; take the client's lock (callers hold it).
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
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "client/client_priv.h"

static _Thread_local char last_error[512];

void
set_last_error(const char *msg)
{
	snprintf(last_error, sizeof last_error, "%s", msg != NULL ? msg : "");
}

/* Marks the client broken with err (positive) and returns -err. */
int
client_break(hm_client *c, int err)
{
	if (c->broken == 0)
		c->broken = err;
	return -err;
}

/* Writes len bytes, the first sendmsg carrying pass_fd when >= 0. */
int
client_write(hm_client *c, const uint8_t *buf, size_t len, int pass_fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} control;
	struct msghdr mh;
	struct iovec iov;
	size_t off = 0;

	while (off < len) {
		ssize_t w;

		iov.iov_base = (void *)(buf + off);
		iov.iov_len = len - off;
		memset(&mh, 0, sizeof mh);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		if (pass_fd >= 0 && off == 0) {
			struct cmsghdr *cm;

			memset(&control, 0, sizeof control);
			mh.msg_control = control.buf;
			mh.msg_controllen = sizeof control.buf;
			cm = CMSG_FIRSTHDR(&mh);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
		}
		w = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return client_break(c, errno);
		}
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
	rc = n < 0 ? n : client_write(c, buf, (size_t)n, pass_fd);
	if (buf != small)
		free(buf);
	return rc;
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
		r = recv(c->fd, c->in + c->end, c->cap - c->end, 0);
		if (r == 0)
			return client_break(c, ECONNRESET);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return client_break(c, errno);
		}
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
	while (n > 0) {
		ssize_t r = recv(c->fd, dst, n, MSG_WAITALL);

		if (r == 0)
			return client_break(c, ECONNRESET);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return client_break(c, errno);
		}
		dst += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Reads the next frame's header and message, which must answer one of the
 * requests first_id .. first_id + count - 1 (h->id says which).  An ERROR
 * reply becomes its negative errno (message in hm_last_error); *msg is set
 * otherwise, and raw bytes, if any, are left for the caller. */
int
client_recv_frame_of(hm_client *c, uint32_t first_id, uint32_t count,
		     struct hm_frame_header *h, ProtobufCMessage **msg)
{
	int rc;

	*msg = NULL;
	for (;;) {
		rc = client_fill(c, HM_FRAME_HEADER_SIZE);
		if (rc < 0)
			return rc;
		frame_header_decode(c->in + c->start, h);
		/* a ring wake-up that came after its completions were seen */
		if (!c->ring || h->type != HM_MSG_RING_WAKE || h->length != 0 || h->raw_length != 0)
			break;
		c->start += HM_FRAME_HEADER_SIZE;
	}
	/* an ERROR with id 0 is about the connection (refused at accept) */
	if (frame_header_check(h) < 0 ||
	    (h->id - first_id >= count && !(h->id == 0 && h->type == HM_MSG_ERROR)))
		return client_break(c, EPROTO);
	rc = client_fill(c, HM_FRAME_HEADER_SIZE + h->length);
	if (rc < 0)
		return rc;
	rc = frame_decode(h, c->in + c->start + HM_FRAME_HEADER_SIZE, msg);
	c->start += HM_FRAME_HEADER_SIZE + h->length;
	if (rc < 0)
		return client_break(c, EPROTO);
	if (h->type == HM_MSG_ERROR) {
		Hotmap__Error *e = (Hotmap__Error *)*msg;
		int err = e->error > 0 ? e->error : EIO;

		set_last_error(e->message);
		protobuf_c_message_free_unpacked(*msg, NULL);
		*msg = NULL;
		return h->id == 0 ? client_break(c, err) : -err;
	}
	return 0;
}

/*
 * A request could not be sent (rc): if the daemon refused the connection
 * at accept, it said why in an ERROR with id 0 before it closed, and that
 * is the answer.  Otherwise rc.
 */
static int
client_send_failed(hm_client *c, int rc)
{
	struct hm_frame_header h = { .type = 0 };
	ProtobufCMessage *msg = NULL;
	int r;

	if (rc != -EPIPE && rc != -ECONNRESET)
		return rc;
	r = client_recv_frame_of(c, 0, 1, &h, &msg);
	if (msg != NULL)
		protobuf_c_message_free_unpacked(msg, NULL);
	return r < 0 && h.type == HM_MSG_ERROR && h.id == 0 ? r : rc;
}

static int
client_recv_frame(hm_client *c, uint32_t id, struct hm_frame_header *h, ProtobufCMessage **msg)
{
	return client_recv_frame_of(c, id, 1, h, msg);
}

/* One request and its one-frame reply of reply_type.  Lock held. */
int
client_call(hm_client *c, uint16_t type, const ProtobufCMessage *req, int pass_fd,
	    uint16_t reply_type, ProtobufCMessage **reply)
{
	struct hm_frame_header h;
	uint32_t id;
	int rc;

	*reply = NULL;
	if (c->broken)
		return -c->broken;
	id = c->next_id++;
	rc = client_send(c, type, id, req, pass_fd);
	if (rc < 0)
		return client_send_failed(c, rc);
	rc = client_recv_frame(c, id, &h, reply);
	if (rc < 0)
		return rc;
	if (h.type != reply_type) {
		protobuf_c_message_free_unpacked(*reply, NULL);
		*reply = NULL;
		return client_break(c, EPROTO);
	}
	return 0;
}

HM_EXPORT const char *
hm_last_error(void)
{
	return last_error;
}

