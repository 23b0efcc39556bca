/* SPDX-License-Identifier: MIT */
/*
 * peer_unix.c - the peer's transport half on a Unix stream socket (see
 * peer_priv.h): recvmsg with SCM_RIGHTS, EV_READ and EV_WRITE events,
 * evbuffer_write, descriptors sent with frames (peer_fds.h), and the
 * client's identity from SO_PEERCRED and SO_PEERGROUPS.
 *
 * Descriptor passing needs recvmsg, which bufferevents do not expose, so
 * the peer drives a plain read event and an output evbuffer itself.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "daemon/base/closer.h"
#include "daemon/transport/peer.h"
#include "daemon/transport/peer_fds.h"
#include "daemon/transport/peer_priv.h"

#define PEER_READ_CHUNK		(64u * 1024u)

struct peer_io {
	struct event *ev_read;
	struct event *ev_write;
	struct peer_fds out_fds;	/* descriptors going with frames */
	int fds[PEER_MAX_FDS];		/* ring of unclaimed descriptors */
	unsigned fd_head;
	unsigned fd_count;
};

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59	/* Linux 4.13; older headers lack it */
#endif

int
transport_peer_creds(int fd, uid_t *uid, gid_t *gid, gid_t *groups, size_t *ngroups)
{
	struct ucred cred;
	socklen_t len = sizeof cred;
	size_t room = *ngroups;

	*ngroups = 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	*uid = cred.uid;
	*gid = cred.gid;
	if (room > INT_MAX / sizeof *groups)
		room = INT_MAX / sizeof *groups;
	len = (socklen_t)(room * sizeof *groups);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, room > 0 ? groups : NULL, &len) < 0) {
		if (errno == ENOPROTOOPT)
			return 0;	/* the primary gid only */
		if (errno == ERANGE) {
			*ngroups = len / sizeof *groups;
			return -ERANGE;
		}
		return -errno;
	}
	*ngroups = len / sizeof *groups;
	return 0;
}

/*
 * uid, primary gid and groups (transport_peer_creds: two calls when the
 * groups do not fit 64), and the pid (SO_PEERCRED).
 */
int
peer_ident_of(hm_conn fd, struct peer_ident *id)
{
	struct ucred cred;
	socklen_t len = sizeof cred;
	gid_t small[64];
	size_t n = sizeof small / sizeof small[0];
	int rc;

	memset(id, 0, sizeof *id);
	id->uid = (uid_t)-1;
	id->gid = (gid_t)-1;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	rc = transport_peer_creds(fd, &id->uid, &id->gid, small, &n);
	if (rc == -ERANGE) {
		id->groups = calloc(n, sizeof *id->groups);
		if (id->groups == NULL)
			rc = -ENOMEM;
		else
			rc = transport_peer_creds(fd, &id->uid, &id->gid, id->groups, &n);
	} else if (rc == 0 && n > 0) {
		id->groups = calloc(n, sizeof *id->groups);
		if (id->groups == NULL)
			rc = -ENOMEM;
		else
			memcpy(id->groups, small, n * sizeof *small);
	}
	if (rc < 0) {
		peer_ident_clear(id);
		return rc;
	}
	id->ngroups = n;
	id->pid = cred.pid;
	id->superuser = id->uid == 0;
	snprintf(id->user, sizeof id->user, "uid %ld", (long)id->uid);
	id->known = true;
	return 0;
}

int
peer_ident_self(struct peer_ident *id)
{
	memset(id, 0, sizeof *id);
	id->known = true;
	id->pid = getpid();
	id->uid = geteuid();
	id->gid = getegid();
	id->superuser = id->uid == 0;
	snprintf(id->user, sizeof id->user, "uid %ld", (long)id->uid);
	return 0;
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
	struct peer_io *io = p->io;
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
			if (io->fd_count == PEER_MAX_FDS) {
				closer_close_socket(fd);	/* unchecked */
				overflow = true;
				continue;
			}
			if (peer_is_socket(fd)) {
				/* Never served (a socket is no file), and its
				 * close may linger: refused as it arrives, its
				 * place in the queue says so (-ENODEV). */
				closer_close_socket(fd);
				fd = -ENODEV;
			}
			io->fds[(io->fd_head + io->fd_count) % PEER_MAX_FDS] = fd;
			io->fd_count++;
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
		if (io->fd_count == PEER_MAX_FDS) {
			overflow = true;
		} else {
			io->fds[(io->fd_head + io->fd_count) % PEER_MAX_FDS] = -EMFILE;
			io->fd_count++;
		}
	}
	if (overflow)
		peer_fail(p, "more than %d unclaimed descriptors", PEER_MAX_FDS);
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
			peer_io_failed(p, "read", errno);
		goto out;
	}
	peer_take_cmsgs(p, &msg);
	if (n == 0) {
		peer_input_eof(p);
		goto out;
	}
	vec.iov_len = (size_t)n;
	evbuffer_commit_space(p->in, &vec, 1);
	peer_input(p);
out:
	peer_finish(p);
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


int
peer_io_write(struct peer *p)
{
	struct peer_io *io = p->io;
	int n = 0;

	if (io->out_fds.n > 0) {
		n = peer_fds_write(&io->out_fds, p->out, p->conn);
		if (n < 0)
			return n;
	}
	/* n 0: a descriptor's frame waits for room: nothing past it goes */
	if (io->out_fds.n == 0)
		n = evbuffer_write(p->out, p->conn);
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		return -errno;
	return 0;
}

bool
peer_io_writing(const struct peer *p)
{
	return event_pending(p->io->ev_write, EV_WRITE, NULL) != 0;
}

void
peer_io_update(struct peer *p, bool want_read, bool want_write)
{
	struct peer_io *io = p->io;

	if (want_read != (event_pending(io->ev_read, EV_READ, NULL) != 0)) {
		if (want_read)
			event_add(io->ev_read, NULL);
		else
			event_del(io->ev_read);
	}
	if (want_write != (event_pending(io->ev_write, EV_WRITE, NULL) != 0)) {
		if (want_write)
			event_add(io->ev_write, NULL);
		else
			event_del(io->ev_write);
	}
}

void
peer_io_stop(struct peer *p)
{
	event_del(p->io->ev_read);
	event_del(p->io->ev_write);
}

int
peer_io_new(struct peer *p)
{
	struct peer_io *io = calloc(1, sizeof *io);

	if (io == NULL)
		return -ENOMEM;
	p->io = io;
	io->ev_read = event_new(p->base, p->conn, EV_READ | EV_PERSIST, peer_read_cb, p);
	io->ev_write = event_new(p->base, p->conn, EV_WRITE | EV_PERSIST, peer_write_cb, p);
	if (io->ev_read == NULL || io->ev_write == NULL)
		return -ENOMEM;
	return 0;
}

void
peer_io_free(struct peer *p)
{
	struct peer_io *io = p->io;

	if (io != NULL) {
		if (io->ev_read != NULL)
			event_free(io->ev_read);
		if (io->ev_write != NULL)
			event_free(io->ev_write);
		peer_fds_clear(&io->out_fds);
		while (io->fd_count > 0) {
			int fd = peer_take_fd(p);

			closer_close(fd);	/* passed and never claimed */
		}
		free(io);
		p->io = NULL;
	}
	if (p->conn >= 0)
		close(p->conn);
	p->conn = HM_CONN_NONE;
}

int
peer_take_fd(struct peer *p)
{
	struct peer_io *io = p->io;
	int fd;

	if (io->fd_count == 0)
		return -EBADF;
	fd = io->fds[io->fd_head];
	io->fd_head = (io->fd_head + 1) % PEER_MAX_FDS;
	io->fd_count--;
	return fd;
}

int
peer_take_file(struct peer *p, uint64_t value, hm_fd *f)
{
	int fd = peer_take_fd(p);

	(void)value;	/* descriptors travel with the bytes here */
	if (fd < 0)
		return fd;
	*f = fd;
	return 0;
}

int
peer_send_fd(struct peer *p, uint16_t type, uint32_t id, const ProtobufCMessage *msg, hm_fd fd)
{
	size_t at = evbuffer_get_length(p->out);
	int rc;

	if (p->io->out_fds.n == PEER_OUT_FDS_MAX)
		return -EAGAIN;
	rc = peer_send(p, type, id, msg);
	if (rc < 0)
		return rc;
	return peer_fds_push(&p->io->out_fds, at, fd);
}

void
peer_refuse(hm_conn fd, int error, const char *why)
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
