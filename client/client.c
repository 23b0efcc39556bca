/*
 * client.c - libhotmap (see hotmap.h and libhotmap(3)).
 *
 * Blocking I/O on one Unix stream socket per hm_client.  A mutex serialises
 * requests, so replies arrive in the order of the requests and a call reads
 * frames until the one with its id.  Read data is received straight into
 * the caller's buffer once the bytes already buffered are used up.
 *
 * Once the stream is out of step (the daemon vanished, or sent something
 * that is not a frame), the client is broken: every later call fails with
 * the same errno without touching the socket.
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
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "client/hotmap.h"
#include "proto/frame.h"

#define HM_EXPORT __attribute__((visibility("default")))

#define CLIENT_RECV_CHUNK	(64u * 1024u)
#define CLIENT_BUF_MAX		(HM_FRAME_HEADER_SIZE + HM_FRAME_MAX_MESSAGE + CLIENT_RECV_CHUNK)

struct hm_client {
	int fd;
	pthread_mutex_t lock;
	uint32_t next_id;
	int broken;		/* errno once out of step; 0 while healthy */
	uint8_t *in;		/* received, not yet consumed: in[start, end) */
	size_t start, end, cap;
	hm_file *files;		/* open files, for hm_disconnect */
};

struct hm_file {
	hm_client *c;
	uint64_t handle;
	hm_file *prev, *next;
};

static _Thread_local char last_error[512];

static void
set_last_error(const char *msg)
{
	snprintf(last_error, sizeof last_error, "%s", msg != NULL ? msg : "");
}

/* Marks the client broken with err (positive) and returns -err. */
static int
client_break(hm_client *c, int err)
{
	if (c->broken == 0)
		c->broken = err;
	return -err;
}

static int
client_send(hm_client *c, uint16_t type, uint32_t id, const ProtobufCMessage *msg, int pass_fd)
{
	uint8_t small[1024], *buf = small;
	size_t size = HM_FRAME_HEADER_SIZE + frame_message_size(msg);
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} control;
	struct msghdr mh;
	struct iovec iov;
	size_t off = 0;
	int n, rc = 0;

	if (size > sizeof small) {
		buf = malloc(size);
		if (buf == NULL)
			return -ENOMEM;
	}
	n = frame_encode(type, id, 0, msg, 0, buf, size);
	if (n < 0) {
		rc = n;
		goto out;
	}
	while (off < (size_t)n) {
		ssize_t w;

		iov.iov_base = buf + off;
		iov.iov_len = (size_t)n - off;
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
			rc = client_break(c, errno);
			goto out;
		}
		off += (size_t)w;
	}
out:
	if (buf != small)
		free(buf);
	return rc;
}

/* Makes at least need bytes available at c->in + c->start. */
static int
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
static int
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

/* Reads the next frame's header and message for request id.  An ERROR
 * reply becomes its negative errno (message in hm_last_error); *msg is set
 * otherwise, and raw bytes, if any, are left for the caller. */
static int
client_recv_frame(hm_client *c, uint32_t id, struct hm_frame_header *h, ProtobufCMessage **msg)
{
	int rc;

	*msg = NULL;
	rc = client_fill(c, HM_FRAME_HEADER_SIZE);
	if (rc < 0)
		return rc;
	frame_header_decode(c->in + c->start, h);
	if (frame_header_check(h) < 0 || h->id != id)
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
		return -err;
	}
	return 0;
}

/* One request and its one-frame reply of reply_type.  Lock held. */
static int
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
		return rc;
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

static int
fail(int err)
{
	errno = err;
	return -1;
}

static int
client_connect(hm_client *c, const char *socket_path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	Hotmap__Hello hello = HOTMAP__HELLO__INIT;
	ProtobufCMessage *reply;
	char path[sizeof sa.sun_path];
	int rc;

	if (socket_path == NULL) {
		rc = frame_default_socket(path, sizeof path);
		if (rc < 0)
			return rc;
		socket_path = path;
	}
	if (strlen(socket_path) >= sizeof sa.sun_path)
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -errno;
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		return -errno;
	hello.version = HM_PROTO_VERSION;
	hello.features = HM_FEATURES_ALL;
	hello.client_name = (char *)program_invocation_short_name;
	rc = client_call(c, HM_MSG_HELLO, &hello.base, -1, HM_MSG_HELLO_REPLY, &reply);
	if (rc < 0)
		return rc;
	rc = ((Hotmap__HelloReply *)reply)->version == HM_PROTO_VERSION ? 0 : -EPROTONOSUPPORT;
	protobuf_c_message_free_unpacked(reply, NULL);
	return rc;
}

HM_EXPORT hm_client *
hm_connect(const char *socket_path)
{
	hm_client *c;
	int rc;

	set_last_error(NULL);
	c = calloc(1, sizeof *c);
	if (c == NULL)
		return NULL;
	c->fd = -1;
	c->next_id = 1;
	pthread_mutex_init(&c->lock, NULL);
	rc = client_connect(c, socket_path);
	if (rc < 0) {
		hm_disconnect(c);
		errno = -rc;
		return NULL;
	}
	return c;
}

HM_EXPORT void
hm_disconnect(hm_client *c)
{
	int saved = errno;

	if (c == NULL)
		return;
	while (c->files != NULL) {
		hm_file *f = c->files;

		c->files = f->next;
		free(f);
	}
	if (c->fd >= 0)
		close(c->fd);	/* the daemon closes the handles with the session */
	pthread_mutex_destroy(&c->lock);
	free(c->in);
	free(c);
	errno = saved;
}

static int
open_locally(const char *path)
{
	/* O_NONBLOCK: opening a FIFO must not wait for a writer. */
	return open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
}

HM_EXPORT hm_file *
hm_open(hm_client *c, const char *path, int flags)
{
	Hotmap__Open req = HOTMAP__OPEN__INIT;
	ProtobufCMessage *reply = NULL;
	char abs[PATH_MAX];
	hm_file *f;
	int fd = -1, rc;

	set_last_error(NULL);
	if (c == NULL || path == NULL || (flags & ~(HM_O_MMAP | HM_O_PREAD | HM_O_PATH)) != 0 ||
	    (flags & (HM_O_MMAP | HM_O_PREAD)) == (HM_O_MMAP | HM_O_PREAD)) {
		errno = EINVAL;
		return NULL;
	}
	req.policy = flags & HM_O_MMAP ? 1 : flags & HM_O_PREAD ? 2 : 0;
	req.path = (char *)path;
	if (flags & HM_O_PATH) {
		req.by_path = true;
		if (path[0] != '/') {
			/* The daemon's working directory is not ours. */
			size_t len;

			if (getcwd(abs, sizeof abs) == NULL)
				return NULL;
			len = strlen(abs);
			if (snprintf(abs + len, sizeof abs - len, "/%s", path) >= (int)(sizeof abs - len)) {
				errno = ENAMETOOLONG;
				return NULL;
			}
			req.path = abs;
		}
	} else {
		fd = open_locally(path);
		if (fd < 0)
			return NULL;
	}
	f = calloc(1, sizeof *f);
	if (f == NULL) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	pthread_mutex_lock(&c->lock);
	rc = client_call(c, HM_MSG_OPEN, &req.base, fd, HM_MSG_OPEN_REPLY, &reply);
	if (rc == 0) {
		f->c = c;
		f->handle = ((Hotmap__OpenReply *)reply)->handle;
		f->next = c->files;
		if (f->next != NULL)
			f->next->prev = f;
		c->files = f;
		protobuf_c_message_free_unpacked(reply, NULL);
	}
	pthread_mutex_unlock(&c->lock);
	if (fd >= 0)
		close(fd);	/* the daemon has its own copy */
	if (rc < 0) {
		free(f);
		errno = -rc;
		return NULL;
	}
	return f;
}

/* The READ reply: READ_DATA frames with HM_FLAG_MORE carrying bytes, then
 * one without it carrying the total.  Lock held. */
static ssize_t
client_read(hm_client *c, uint64_t handle, uint8_t *buf, size_t len, uint64_t offset)
{
	Hotmap__Read req = HOTMAP__READ__INIT;
	struct hm_frame_header h;
	ProtobufCMessage *msg;
	size_t got = 0;
	uint32_t id;
	int rc;

	if (c->broken)
		return -c->broken;
	id = c->next_id++;
	req.handle = handle;
	req.offset = offset;
	req.length = len;
	rc = client_send(c, HM_MSG_READ, id, &req.base, -1);
	if (rc < 0)
		return rc;
	for (;;) {
		rc = client_recv_frame(c, id, &h, &msg);
		if (rc < 0)
			return rc;
		if (h.type != HM_MSG_READ_DATA || h.raw_length > len - got) {
			protobuf_c_message_free_unpacked(msg, NULL);
			return client_break(c, EPROTO);
		}
		if (h.flags & HM_FLAG_MORE) {
			protobuf_c_message_free_unpacked(msg, NULL);
			rc = client_recv_raw(c, buf + got, h.raw_length);
			if (rc < 0)
				return rc;
			got += h.raw_length;
			continue;
		}
		rc = ((Hotmap__ReadReply *)msg)->total == got && h.raw_length == 0 ? 0 : -EPROTO;
		protobuf_c_message_free_unpacked(msg, NULL);
		if (rc < 0)
			return client_break(c, EPROTO);
		return (ssize_t)got;
	}
}

HM_EXPORT ssize_t
hm_pread(hm_file *f, void *buf, size_t len, uint64_t offset)
{
	ssize_t n;

	set_last_error(NULL);
	if (f == NULL || (buf == NULL && len > 0))
		return fail(EINVAL);
	/* As pread(2): the end of the range must fit in off_t. */
	if (len > SSIZE_MAX || offset > INT64_MAX || len > (uint64_t)INT64_MAX - offset)
		return fail(EINVAL);
	pthread_mutex_lock(&f->c->lock);
	n = client_read(f->c, f->handle, buf, len, offset);
	pthread_mutex_unlock(&f->c->lock);
	if (n < 0)
		return fail((int)-n);
	return n;
}

HM_EXPORT int
hm_stat(hm_file *f, struct hm_stat *st)
{
	Hotmap__StatRequest req = HOTMAP__STAT_REQUEST__INIT;
	ProtobufCMessage *reply;
	Hotmap__StatReply *r;
	int rc;

	set_last_error(NULL);
	if (f == NULL || st == NULL)
		return fail(EINVAL);
	req.handle = f->handle;
	pthread_mutex_lock(&f->c->lock);
	rc = client_call(f->c, HM_MSG_STAT, &req.base, -1, HM_MSG_STAT_REPLY, &reply);
	pthread_mutex_unlock(&f->c->lock);
	if (rc < 0)
		return fail(-rc);
	r = (Hotmap__StatReply *)reply;
	memset(st, 0, sizeof *st);
	st->size = r->size;
	st->backend = (int)r->backend;
	st->reason = (int)r->reason;
	snprintf(st->reason_text, sizeof st->reason_text, "%s", r->reason_text);
	st->dev = r->dev;
	st->ino = r->ino;
	st->mtime_ns = r->mtime_ns;
	st->mode = r->mode;
	st->handles = r->handles;
	st->mapped_length = r->mapped_length;
	protobuf_c_message_free_unpacked(reply, NULL);
	return 0;
}

HM_EXPORT int
hm_close(hm_file *f)
{
	Hotmap__Close req = HOTMAP__CLOSE__INIT;
	ProtobufCMessage *reply;
	hm_client *c;
	int rc;

	set_last_error(NULL);
	if (f == NULL)
		return fail(EBADF);
	c = f->c;
	req.handle = f->handle;
	pthread_mutex_lock(&c->lock);
	rc = client_call(c, HM_MSG_CLOSE, &req.base, -1, HM_MSG_CLOSE_REPLY, &reply);
	if (rc == 0)
		protobuf_c_message_free_unpacked(reply, NULL);
	if (f->prev != NULL)
		f->prev->next = f->next;
	else
		c->files = f->next;
	if (f->next != NULL)
		f->next->prev = f->prev;
	pthread_mutex_unlock(&c->lock);
	free(f);
	return rc < 0 ? fail(-rc) : 0;
}

HM_EXPORT const char *
hm_version(void)
{
	return PACKAGE_VERSION;
}

HM_EXPORT const char *
hm_last_error(void)
{
	return last_error;
}

HM_EXPORT int
hm_ping(hm_client *c, struct hm_ping *out)
{
	Hotmap__Ping req = HOTMAP__PING__INIT;
	ProtobufCMessage *reply;
	Hotmap__PingReply *r;
	int rc;

	set_last_error(NULL);
	if (c == NULL)
		return fail(EINVAL);
	pthread_mutex_lock(&c->lock);
	rc = client_call(c, HM_MSG_PING, &req.base, -1, HM_MSG_PING_REPLY, &reply);
	pthread_mutex_unlock(&c->lock);
	if (rc < 0)
		return fail(-rc);
	r = (Hotmap__PingReply *)reply;
	if (out != NULL) {
		snprintf(out->server_version, sizeof out->server_version, "%s", r->server_version);
		out->uptime_us = r->uptime_us;
		out->pid = r->pid;
	}
	protobuf_c_message_free_unpacked(reply, NULL);
	return 0;
}

HM_EXPORT int
hm_stats(hm_client *c, void (*cb)(const char *key, uint64_t value, const char *text, void *arg),
	 void *arg)
{
	Hotmap__StatsRequest req = HOTMAP__STATS_REQUEST__INIT;
	ProtobufCMessage *reply;
	Hotmap__StatsReply *r;
	size_t i;
	int rc;

	set_last_error(NULL);
	if (c == NULL || cb == NULL)
		return fail(EINVAL);
	pthread_mutex_lock(&c->lock);
	rc = client_call(c, HM_MSG_STATS, &req.base, -1, HM_MSG_STATS_REPLY, &reply);
	pthread_mutex_unlock(&c->lock);
	if (rc < 0)
		return fail(-rc);
	r = (Hotmap__StatsReply *)reply;
	for (i = 0; i < r->n_stats; i++)
		cb(r->stats[i]->key, r->stats[i]->value, r->stats[i]->text, arg);
	protobuf_c_message_free_unpacked(reply, NULL);
	return 0;
}
