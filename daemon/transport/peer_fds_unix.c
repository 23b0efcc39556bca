/* SPDX-License-Identifier: MIT */
/*
 * peer_fds_unix.c - see peer_fds.h.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/base/closer.h"
#include "daemon/transport/peer_fds.h"

int
peer_fds_push(struct peer_fds *q, size_t at, int fd)
{
	if (q->n == PEER_OUT_FDS_MAX)
		return -EAGAIN;
	q->v[q->n].at = at;
	q->v[q->n].fd = fd;
	q->n++;
	return 0;
}

/* n bytes of output are gone: the queued frames start n bytes earlier. */
static void
peer_fds_advance(struct peer_fds *q, size_t n)
{
	unsigned i;

	for (i = 0; i < q->n; i++)
		q->v[i].at -= n;
}

static void
peer_fds_pop(struct peer_fds *q)
{
	q->n--;
	memmove(&q->v[0], &q->v[1], q->n * sizeof q->v[0]);
}

/* The frame's first byte, alone, with the descriptor: 1 sent, 0 full. */
static int
peer_fds_send_one(struct peer_fds *q, struct evbuffer *out, int sock)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct msghdr msg = { 0 };
	struct cmsghdr *cm;
	struct iovec iov;
	unsigned char first;
	ssize_t n;

	if (evbuffer_copyout(out, &first, 1) != 1)
		return -EPROTO;	/* the frame was queued, never written */
	iov.iov_base = &first;
	iov.iov_len = 1;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	memset(&ctl, 0, sizeof ctl);
	msg.msg_control = ctl.buf;
	msg.msg_controllen = sizeof ctl.buf;
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &q->v[0].fd, sizeof(int));
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	evbuffer_drain(out, 1);
	closer_close(q->v[0].fd);	/* the client has its own now */
	peer_fds_pop(q);
	peer_fds_advance(q, 1);
	return 1;
}

int
peer_fds_write(struct peer_fds *q, struct evbuffer *out, int sock)
{
	while (q->n > 0) {
		size_t at = q->v[0].at;
		int n;

		if (at == 0) {
			n = peer_fds_send_one(q, out, sock);
			if (n <= 0)
				return n;
			continue;
		}
		n = evbuffer_write_atmost(out, sock, (ev_ssize_t)at);
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -errno;
		if (n == 0)
			return 0;
		peer_fds_advance(q, (size_t)n);
		if ((size_t)n < at)
			return 0;	/* the socket took what it could */
	}
	return 1;
}

void
peer_fds_clear(struct peer_fds *q)
{
	while (q->n > 0) {
		closer_close(q->v[0].fd);
		peer_fds_pop(q);
	}
}
