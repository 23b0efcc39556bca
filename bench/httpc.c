/* SPDX-License-Identifier: MIT */
/*
 * httpc.c - a minimal HTTP/1.1 client for the nginx contender: Range GETs
 * on one keep-alive connection over a Unix socket, pipelined for batches;
 * and the nginx contender's hooks (a session is one connection).
 *
 * Built like libhotmap's read path so that the comparison is of the
 * servers, not the clients: blocking socket, headers parsed from a buffer,
 * bodies received straight into the caller's buffer once the buffered
 * bytes are used up.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "bench/bench.h"

#define HTTPC_BUF	(64u * 1024u)

struct httpc {
	int fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *buf;
	size_t start, end;
	char *req;
	size_t reqcap;
};

static int
httpc_dial(struct httpc *h)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memcpy(sa.sun_path, h->path, sizeof sa.sun_path);
	h->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (h->fd < 0)
		return -1;
	if (connect(h->fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int e = errno;

		close(h->fd);
		h->fd = -1;
		errno = e;
		return -1;
	}
	h->start = h->end = 0;
	return 0;
}

static void
httpc_hangup(struct httpc *h)
{
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
	h->start = h->end = 0;
}

struct httpc *
httpc_connect(const char *sock_path)
{
	struct httpc *h;

	if (strlen(sock_path) >= sizeof h->path) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	h = xcalloc(1, sizeof *h);
	snprintf(h->path, sizeof h->path, "%s", sock_path);
	h->buf = xmalloc(HTTPC_BUF);
	if (httpc_dial(h) < 0) {
		int e = errno;

		free(h->buf);
		free(h);
		errno = e;
		return NULL;
	}
	return h;
}

void
httpc_close(struct httpc *h)
{
	if (h == NULL)
		return;
	httpc_hangup(h);
	free(h->buf);
	free(h->req);
	free(h);
}

static int
httpc_fill(struct httpc *h)
{
	ssize_t r;

	if (h->start > 0 && h->end == HTTPC_BUF) {
		memmove(h->buf, h->buf + h->start, h->end - h->start);
		h->end -= h->start;
		h->start = 0;
	}
	if (h->end == HTTPC_BUF) {
		errno = EPROTO;	/* a header larger than the buffer */
		return -1;
	}
	do
		r = recv(h->fd, h->buf + h->end, HTTPC_BUF - h->end, 0);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		errno = ECONNRESET;
	if (r <= 0)
		return -1;
	h->end += (size_t)r;
	return 0;
}

/* Parses one response's head; the body is next in the stream. */
static int
httpc_head(struct httpc *h, int *status, uint64_t *length, bool *close_after)
{
	char *head, *eoh, *line;

	for (;;) {
		eoh = h->end > h->start ? memmem(h->buf + h->start, h->end - h->start, "\r\n\r\n", 4) : NULL;
		if (eoh != NULL)
			break;
		if (h->end == HTTPC_BUF && h->start > 0) {
			memmove(h->buf, h->buf + h->start, h->end - h->start);
			h->end -= h->start;
			h->start = 0;
		}
		if (httpc_fill(h) < 0)
			return -1;
	}
	head = h->buf + h->start;
	*eoh = '\0';
	h->start = (size_t)(eoh + 4 - h->buf);
	if (sscanf(head, "HTTP/1.%*d %d", status) != 1) {
		errno = EPROTO;
		return -1;
	}
	*length = UINT64_MAX;
	*close_after = false;
	for (line = strstr(head, "\r\n"); line != NULL; line = strstr(line, "\r\n")) {
		line += 2;
		if (strncasecmp(line, "Content-Length:", 15) == 0)
			*length = strtoull(line + 15, NULL, 10);
		else if (strncasecmp(line, "Connection:", 11) == 0 && strncasecmp(line + 11, " close", 6) == 0)
			*close_after = true;
	}
	return 0;
}

static int
httpc_body(struct httpc *h, char *dst, size_t n)
{
	size_t have = h->end - h->start;

	if (have > n)
		have = n;
	memcpy(dst, h->buf + h->start, have);
	h->start += have;
	dst += have;
	n -= have;
	if (h->start == h->end)
		h->start = h->end = 0;
	while (n > 0) {
		ssize_t r = recv(h->fd, dst, n, MSG_WAITALL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			errno = ECONNRESET;
		if (r <= 0)
			return -1;
		dst += r;
		n -= (size_t)r;
	}
	return 0;
}

static int
httpc_send(struct httpc *h, const struct http_range *r, size_t n)
{
	size_t need = 0, len = 0, off = 0, i;

	for (i = 0; i < n; i++)
		need += strlen(r[i].url) + 96;

	if (need > h->reqcap) {
		free(h->req);
		h->req = xmalloc(need);
		h->reqcap = need;
	}
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(h->req + len, h->reqcap - len,
					"GET %s HTTP/1.1\r\nHost: hmbench\r\nRange: bytes=%llu-%llu\r\n\r\n", r[i].url,
					(unsigned long long)r[i].off,
					(unsigned long long)(r[i].off + r[i].len - 1));
	while (off < len) {
		ssize_t w = send(h->fd, h->req + off, len - off, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		off += (size_t)w;
	}
	return 0;
}

ssize_t
httpc_get_ranges(struct httpc *h, const struct http_range *r, size_t n)
{
	size_t done = 0, i;
	ssize_t total = 0;
	int redials = 0;

	while (done < n) {
		bool closing = false;

		/* nginx closes a keep-alive connection after keepalive_requests
		 * or a timeout: dial again and send what is left. */
		if (h->fd < 0 && httpc_dial(h) < 0)
			return -1;
		if (httpc_send(h, r + done, n - done) < 0) {
			if ((errno == EPIPE || errno == ECONNRESET) && redials++ < 2) {
				httpc_hangup(h);
				continue;
			}
			return -1;
		}
		for (i = done; i < n && !closing; i++) {
			uint64_t length;
			int status;

			if (httpc_head(h, &status, &length, &closing) < 0) {
				if (i == done && errno == ECONNRESET && redials++ < 2) {
					httpc_hangup(h);
					break;
				}
				httpc_hangup(h);
				return -1;
			}
			if ((status != 206 && status != 200) || length != r[i].len) {
				httpc_hangup(h);
				errno = EPROTO;
				return -1;
			}
			if (httpc_body(h, r[i].buf, r[i].len) < 0) {
				httpc_hangup(h);
				return -1;
			}
			total += (ssize_t)r[i].len;
			done = i + 1;
		}
		if (closing)
			httpc_hangup(h);
	}
	return total;
}

/* --- the nginx contender's hooks (contender.c's table) ---------------------- */

#define NGINX_MAX_RANGES	256

struct url_file {
	struct httpc *h;
	uint64_t size;
	char url[PATH_MAX];
};

bool
nginx_available(const struct contender *c, char *why, size_t len)
{
	(void)c;
	if (bench.nginx_pid > 0)
		return true;
	snprintf(why, len, "%s", bench.o.nginx_skip != NULL ? bench.o.nginx_skip : "nginx is not running");
	return false;
}

void *
nginx_session_open(const struct contender *c)
{
	(void)c;
	return httpc_connect(bench.nginx_sock);
}

void
nginx_session_close(void *sp)
{
	httpc_close(sp);
}

void *
nginx_open(void *sp, const char *path, uint64_t size)
{
	size_t dl = strlen(bench.data_dir);
	struct url_file *f;

	/* nginx's root is the data directory. */
	if (strncmp(path, bench.data_dir, dl) != 0 || path[dl] != '/') {
		errno = EINVAL;
		return NULL;
	}
	f = xcalloc(1, sizeof *f);
	f->h = sp;
	f->size = size;
	snprintf(f->url, sizeof f->url, "%s", path + dl);
	return f;
}

/* Pipelined GETs on the session's one connection, across files. */
int
nginx_read_batch(void *sp, struct bench_range *r, size_t n)
{
	struct httpc *h = sp;
	struct http_range g[NGINX_MAX_RANGES];
	size_t i, k, done = 0;

	while (done < n) {
		k = n - done < NGINX_MAX_RANGES ? n - done : NGINX_MAX_RANGES;
		for (i = 0; i < k; i++) {
			struct url_file *f = r[done + i].file;

			/* A range past the end would be a 416: the workloads
			 * stay inside the file. */
			if (r[done + i].off >= f->size || r[done + i].len == 0 ||
			    r[done + i].len > f->size - r[done + i].off) {
				errno = EINVAL;
				return -1;
			}
			g[i] = (struct http_range){ f->url, r[done + i].off, r[done + i].len, r[done + i].buf };
		}
		if (httpc_get_ranges(h, g, k) < 0)
			return -1;
		done += k;
	}
	return 0;
}

ssize_t
nginx_read(void *fp, void *buf, size_t len, uint64_t off)
{
	struct url_file *f = fp;
	struct http_range g = { f->url, off, len, buf };

	if (off >= f->size || len == 0)
		return 0;
	if (g.len > f->size - off)
		g.len = (size_t)(f->size - off);
	if (httpc_get_ranges(f->h, &g, 1) < 0)
		return -1;
	return (ssize_t)g.len;
}

void
nginx_close(void *f)
{
	free(f);
}
