/*
 * peer.c - a client connection on libevent (see peer.h).
 *
 * Descriptor passing needs recvmsg, which bufferevents do not expose, so
 * the peer drives a plain read event and an output evbuffer itself.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "daemon/closer.h"
#include "daemon/peer.h"
#include "daemon/peer_fds.h"

#define PEER_READ_CHUNK		(64u * 1024u)
#define PEER_FLUSH_TIMEOUT_S	5

struct peer {
	struct event_base *base;
	int fd;
	struct event *ev_read;
	struct event *ev_write;
	struct event *ev_flush;		/* close_after_flush deadline */
	struct event *ev_kick;		/* peer_kick */
	struct event *ev_idle;		/* peer_set_idle_timeout */
	unsigned idle_s;
	struct event *ev_deadline;	/* peer_set_deadline */
	char deadline_why[64];
	struct evbuffer *in;
	struct evbuffer *out;
	const struct peer_ops *ops;
	void *arg;

	struct ucred cred;
	char name[64];

	struct peer_fds out_fds;	/* descriptors going with frames */
	int fds[PEER_MAX_FDS];		/* ring of unclaimed descriptors */
	unsigned fd_head;
	unsigned fd_count;

	bool paused;
	bool closing;			/* flushing, then closed */
	bool dead;			/* closed() is due */
	bool clean;			/* the client hung up itself */
	bool idle_closed;	/* closed by the idle timeout */
	char why[160];
};

static void peer_update_events(struct peer *p);
static void peer_write_now(struct peer *p);

static void
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
static void
peer_finish(struct peer *p)
{
	/* A closing peer whose replies are all written is done; why is set. */
	if (p->closing && evbuffer_get_length(p->out) == 0)
		p->dead = true;
	if (p->dead) {
		event_del(p->ev_read);
		event_del(p->ev_write);
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

	if (want_read != (event_pending(p->ev_read, EV_READ, NULL) != 0)) {
		if (want_read)
			event_add(p->ev_read, NULL);
		else
			event_del(p->ev_read);
	}
	if (want_write != (event_pending(p->ev_write, EV_WRITE, NULL) != 0)) {
		if (want_write)
			event_add(p->ev_write, NULL);
		else
			event_del(p->ev_write);
	}
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

/* SO_TYPE answers for a socket only, and never waits: unlike fstat, it
 * asks no file system (a FUSE server would answer a GETATTR). */
static bool
peer_is_socket(int fd)
{
	int type;
	socklen_t len = sizeof type;

	return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0;
}

static void
peer_take_cmsgs(struct peer *p, struct msghdr *msg)
{
	bool overflow = false;
	struct cmsghdr *cm;

	for (cm = CMSG_FIRSTHDR(msg); cm != NULL; cm = CMSG_NXTHDR(msg, cm)) {
		size_t n, i;
		int *fds;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		fds = (int *)CMSG_DATA(cm);
		for (i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, &fds[i], sizeof fd);
			if (p->fd_count == PEER_MAX_FDS) {
				closer_close(fd);
				overflow = true;
				continue;
			}
			if (peer_is_socket(fd)) {
				/* Never served (a socket is no file), and its
				 * close may linger: refused as it arrives, its
				 * place in the queue says so (-ENODEV). */
				closer_close(fd);
				fd = -ENODEV;
			}
			p->fds[(p->fd_head + p->fd_count) % PEER_MAX_FDS] = fd;
			p->fd_count++;
		}
	}
	/*
	 * MSG_CTRUNC: a descriptor came but could not be installed, because
	 * hotmapd is out of descriptors (or it was more than the control
	 * buffer holds, which the kernel closed).  That is not the client's
	 * fault: the request it came with gets -EMFILE in its place, and the
	 * connection goes on.
	 */
	if ((msg->msg_flags & MSG_CTRUNC) && !overflow) {
		if (p->fd_count == PEER_MAX_FDS) {
			overflow = true;
		} else {
			p->fds[(p->fd_head + p->fd_count) % PEER_MAX_FDS] = -EMFILE;
			p->fd_count++;
		}
	}
	if (overflow)
		peer_fail(p, "more than %d unclaimed descriptors", PEER_MAX_FDS);
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

static void
peer_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;
	union {
		char buf[CMSG_SPACE(sizeof(int) * PEER_MAX_FDS)];
		struct cmsghdr align;
	} control;
	struct evbuffer_iovec vec;
	struct msghdr msg;
	struct iovec iov;
	ssize_t n;

	(void)what;
	if (evbuffer_reserve_space(p->in, PEER_READ_CHUNK, &vec, 1) < 1) {
		peer_fail(p, "out of memory");
		goto out;
	}
	iov.iov_base = vec.iov_base;
	iov.iov_len = vec.iov_len;
	memset(&msg, 0, sizeof msg);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = control.buf;
	msg.msg_controllen = sizeof control.buf;
	n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			peer_fail(p, "read: %s", strerror(errno));
		goto out;
	}
	peer_take_cmsgs(p, &msg);
	if (n == 0) {
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
		goto out;
	}
	vec.iov_len = (size_t)n;
	evbuffer_commit_space(p->in, &vec, 1);
	if (p->idle_s > 0) {
		struct timeval tv = { (time_t)p->idle_s, 0 };

		evtimer_add(p->ev_idle, &tv);	/* re-arms */
	}
	peer_process(p);
	peer_write_now(p);
out:
	peer_finish(p);
}

/* Writes what the socket takes now, then lets paused work go on and
 * dispatches what waited for output room. */
static void
peer_write(struct peer *p)
{
	int n = 0;

	if (p->out_fds.n > 0) {
		n = peer_fds_write(&p->out_fds, p->out, p->fd);
		if (n < 0) {
			peer_fail(p, "write: %s", strerror(-n));
			return;
		}
	}
	/* n 0: a descriptor's frame waits for room: nothing past it goes */
	if (p->out_fds.n == 0)
		n = evbuffer_write(p->out, p->fd);
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
		peer_fail(p, "write: %s", strerror(errno));
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

static void
peer_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;

	(void)fd;
	(void)what;
	peer_write(p);
	peer_finish(p);
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
	if (!p->dead && evbuffer_get_length(p->out) > 0 &&
	    !event_pending(p->ev_write, EV_WRITE, NULL))
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

struct peer *
peer_new(struct event_base *base, int fd, const struct peer_ops *ops, void *arg)
{
	socklen_t len = sizeof(struct ucred);
	struct peer *p;

	p = calloc(1, sizeof *p);
	if (p == NULL)
		return NULL;
	p->base = base;
	p->fd = fd;
	p->ops = ops;
	p->arg = arg;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &p->cred, &len) < 0) {
		p->cred.pid = 0;
		p->cred.uid = (uid_t)-1;
		p->cred.gid = (gid_t)-1;
	}
	snprintf(p->name, sizeof p->name, "pid %ld uid %ld",
		 (long)p->cred.pid, (long)p->cred.uid);
	p->in = evbuffer_new();
	p->out = evbuffer_new();
	p->ev_read = event_new(base, fd, EV_READ | EV_PERSIST, peer_read_cb, p);
	p->ev_write = event_new(base, fd, EV_WRITE | EV_PERSIST, peer_write_cb, p);
	p->ev_flush = evtimer_new(base, peer_flush_timeout_cb, p);
	p->ev_kick = event_new(base, -1, 0, peer_kick_cb, p);
	p->ev_idle = evtimer_new(base, peer_idle_cb, p);
	p->ev_deadline = evtimer_new(base, peer_deadline_cb, p);
	if (p->in == NULL || p->out == NULL || p->ev_read == NULL || p->ev_write == NULL ||
	    p->ev_flush == NULL || p->ev_kick == NULL || p->ev_idle == NULL ||
	    p->ev_deadline == NULL) {
		p->fd = -1;	/* the caller still owns fd on failure */
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
	if (p->ev_read != NULL)
		event_free(p->ev_read);
	if (p->ev_write != NULL)
		event_free(p->ev_write);
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
	peer_fds_clear(&p->out_fds);
	while (p->fd_count > 0) {
		int fd = peer_take_fd(p);

		closer_close(fd);	/* passed and never claimed */
	}
	if (p->fd >= 0)
		close(p->fd);
	free(p);
}

uid_t
peer_uid(const struct peer *p)
{
	return p->cred.uid;
}

pid_t
peer_pid(const struct peer *p)
{
	return p->cred.pid;
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
peer_send_fd(struct peer *p, uint16_t type, uint32_t id, const ProtobufCMessage *msg, int fd)
{
	size_t at = evbuffer_get_length(p->out);
	int rc;

	if (p->out_fds.n == PEER_OUT_FDS_MAX)
		return -EAGAIN;
	rc = peer_send(p, type, id, msg);
	if (rc < 0)
		return rc;
	return peer_fds_push(&p->out_fds, at, fd);
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

void
peer_refuse(int fd, int error, const char *why)
{
	Hotmap__Error e = HOTMAP__ERROR__INIT;
	uint8_t frame[HM_FRAME_HEADER_SIZE + 256], sink[4096];
	char text[200];
	int n, i;

	snprintf(text, sizeof text, "%s", why);
	e.error = error;
	e.message = text;
	n = frame_encode(HM_MSG_ERROR, 0, 0, &e.base, 0, frame, sizeof frame);
	/* what the client sent already (its HELLO) is read first: a socket
	 * closed with unread input resets the connection, and the client
	 * would see that instead of the reason */
	for (i = 0; i < 16 && recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; i++)
		;
	/* a fresh connection's buffer has room: never blocks, never signals */
	if (n > 0 && send(fd, frame, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* the client is gone: nothing to tell */
	}
	close(fd);
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

int
peer_take_fd(struct peer *p)
{
	int fd;

	if (p->fd_count == 0)
		return -EBADF;
	fd = p->fds[p->fd_head];
	p->fd_head = (p->fd_head + 1) % PEER_MAX_FDS;
	p->fd_count--;
	return fd;
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
