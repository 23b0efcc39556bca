/* SPDX-License-Identifier: MIT */
/*
 * transport_unix.c - libhotmap's connection on POSIX (see transport.h): a
 * Unix stream socket; descriptors go with a request's first byte and come
 * with a reply frame's first byte (SCM_RIGHTS).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include "client/transport.h"

int
transport_connect(hm_client *c, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(path) >= sizeof sa.sun_path)
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (c->conn >= 0)
		close(c->conn);
	c->conn = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->conn < 0)
		return -errno;
	if (connect(c->conn, (struct sockaddr *)&sa, sizeof sa) < 0)
		return -errno;
	return 0;
}

void
transport_close(hm_client *c)
{
	if (c->conn >= 0)
		close(c->conn);
	c->conn = HM_CONN_NONE;
}

void
transport_shutdown(hm_client *c)
{
	if (c->conn >= 0)
		shutdown(c->conn, SHUT_RDWR);
}

ssize_t
transport_send(hm_client *c, const uint8_t *buf, size_t len, int pass_fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} control;
	struct msghdr mh;
	struct iovec iov;
	ssize_t w;

	iov.iov_base = (void *)buf;
	iov.iov_len = len;
	memset(&mh, 0, sizeof mh);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (pass_fd >= 0) {
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
	do
		w = sendmsg(c->conn, &mh, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	return w < 0 ? -errno : w;
}

/*
 * recvmsg, keeping any descriptor that comes with the bytes: the kernel
 * ends a recvmsg with the segment that carried descriptors, and the daemon
 * sends one alone on a frame's first byte (daemon/transport/peer_fds.h), so it
 * belongs to the frame that starts at the last byte read.
 */
ssize_t
transport_recv(hm_client *c, uint8_t *buf, size_t len)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(4 * sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf };
	struct cmsghdr *cm;
	ssize_t r;

	do
		r = recvmsg(c->conn, &msg, MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return 0;
	c->rx_end += (uint64_t)r;
	for (cm = CMSG_FIRSTHDR(&msg); cm != NULL; cm = CMSG_NXTHDR(&msg, cm)) {
		size_t i, n;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
			if (i > 0 || c->rx_nfds == CLIENT_RX_FDS) {
				close(fd);	/* one a frame; none past the queue */
				continue;
			}
			c->rx_fds[c->rx_nfds].at = c->rx_end - 1;
			c->rx_fds[c->rx_nfds].fd = fd;
			c->rx_nfds++;
		}
	}
	return r;
}

int
transport_recv_all(hm_client *c, uint8_t *dst, size_t n)
{
	while (n > 0) {
		ssize_t r = recv(c->conn, dst, n, MSG_WAITALL);

		if (r == 0)
			return -ECONNRESET;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		c->rx_end += (uint64_t)r;
		dst += r;
		n -= (size_t)r;
	}
	return 0;
}

int
transport_readable(hm_client *c, unsigned ms)
{
	struct pollfd p = { .fd = c->conn, .events = POLLIN };
	int n = poll(&p, 1, ms > INT_MAX ? INT_MAX : (int)ms);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	return n > 0;
}

int
transport_attach(hm_osfile f, uint64_t *handle_value)
{
	(void)handle_value;
	return f;
}

uint64_t
transport_features(void)
{
	return HM_FEATURES_ALL;
}
