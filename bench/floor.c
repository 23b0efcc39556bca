/* SPDX-License-Identifier: MIT */
/*
 * floor.c - the machine's own floors, measured in the same run as the
 * contenders: what no socket daemon, no shared-memory transport and no
 * copy can beat on this machine.
 *
 *   socket  a raw Unix stream socket ping-pong between two processes with
 *           hotmap's request and reply sizes (28-byte request; a 16-byte
 *           header per 256 KiB of data and a 19-byte end frame), one
 *           writev by the server and one recvmsg by the client per reply,
 *           no event loop, no protocol.  Batches are pipelined.
 *   shm     a raw two-process shared-memory handoff of 1 MiB chunks: the
 *           producer copies into one of 4 slots of a memfd, the consumer
 *           copies out into its own buffer; a byte on a pipe each way.
 *   memcpy  one thread copying out of a pre-faulted buffer.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"

#define SRC_MAX		(256u << 20)	/* source of the copies: larger than any cache */
#define SHM_SLOTS	4
#define SHM_SLOT	(1u << 20)
#define MAX_BATCH	256
#define FLOOR_MAX_LEN	(1u << 20)	/* the largest read of a floor */

static size_t
src_size(void)
{
	uint64_t s = bench.o.file_size;

	if (s > SRC_MAX)
		s = SRC_MAX;
	if (s < (16u << 20))
		s = 16u << 20;
	return (size_t)s;
}

static int
write_full(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int
read_full(int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n > 0) {
		ssize_t r = read(fd, p, n);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -ECONNRESET;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static pid_t
floor_fork(void)
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		bench_is_child = true;
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
	}
	return pid;
}

/* --- socket ping-pong ------------------------------------------------------ */

struct wire_request {
	uint64_t len;
	uint64_t off;
	uint8_t pad[WIRE_REQUEST_SIZE - 16];
};

struct sock_floor {
	int fd;
	pid_t pid;
	char *dst;
};

static void
sock_server(int fd)
{
	size_t size = src_size();
	char *src = page_buffer(size), hdr[WIRE_HEADER_SIZE] = { 0 }, end[WIRE_END_SIZE] = { 0 };
	struct iovec *iov = xcalloc(2 * (FLOOR_MAX_LEN / WIRE_CHUNK + 1) + 1, sizeof *iov);
	struct wire_request rq;

	for (;;) {
		size_t n = 0, done = 0, base;
		struct msghdr mh = { 0 };
		ssize_t w;

		if (read_full(fd, &rq, sizeof rq) < 0 || rq.len == 0 || rq.len > FLOOR_MAX_LEN)
			_exit(0);
		base = (size_t)(rq.off % (size - rq.len + 1));
		while (done < rq.len) {
			size_t k = rq.len - done < WIRE_CHUNK ? (size_t)rq.len - done : WIRE_CHUNK;

			iov[n].iov_base = hdr;
			iov[n++].iov_len = sizeof hdr;
			iov[n].iov_base = src + base + done;
			iov[n++].iov_len = k;
			done += k;
		}
		iov[n].iov_base = end;
		iov[n++].iov_len = sizeof end;
		mh.msg_iov = iov;
		mh.msg_iovlen = n;
		while (mh.msg_iovlen > 0) {
			w = sendmsg(fd, &mh, MSG_NOSIGNAL);
			if (w < 0) {
				if (errno == EINTR)
					continue;
				_exit(0);
			}
			/* advance past what was sent */
			while (mh.msg_iovlen > 0 && (size_t)w >= mh.msg_iov[0].iov_len) {
				w -= (ssize_t)mh.msg_iov[0].iov_len;
				mh.msg_iov++;
				mh.msg_iovlen--;
			}
			if (mh.msg_iovlen > 0) {
				mh.msg_iov[0].iov_base = (char *)mh.msg_iov[0].iov_base + w;
				mh.msg_iov[0].iov_len -= (size_t)w;
			}
		}
	}
}

static int
sock_setup(void **state)
{
	struct sock_floor *s;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	s = xcalloc(1, sizeof *s);
	s->pid = floor_fork();
	if (s->pid < 0) {
		close(sv[0]);
		close(sv[1]);
		free(s);
		return -errno;
	}
	if (s->pid == 0) {
		close(sv[0]);
		sock_server(sv[1]);
		_exit(0);
	}
	close(sv[1]);
	s->fd = sv[0];
	s->dst = page_buffer(FLOOR_MAX_LEN * 2);
	*state = s;
	return 0;
}

static void
sock_teardown(void *state)
{
	struct sock_floor *s = state;
	struct wire_request stop = { .len = 0 };

	/* An explicit stop: other children forked since may hold our end of
	 * the socket open, so the server would never see end of file. */
	(void)write_full(s->fd, &stop, sizeof stop);
	close(s->fd);
	waitpid(s->pid, NULL, 0);
	munmap(s->dst, FLOOR_MAX_LEN * 2);
	free(s);
}

/* One reply of len bytes into dst: one recvmsg for headers, data and end. */
static int
sock_recv_reply(struct sock_floor *s, char *dst, size_t len)
{
	static char hdr[WIRE_HEADER_SIZE], end[WIRE_END_SIZE];
	struct iovec iov[2 * (FLOOR_MAX_LEN / WIRE_CHUNK + 1) + 1];
	struct msghdr mh = { 0 };
	size_t n = 0, done = 0, want = 0;

	while (done < len) {
		size_t k = len - done < WIRE_CHUNK ? len - done : WIRE_CHUNK;

		iov[n].iov_base = hdr;
		iov[n++].iov_len = sizeof hdr;
		iov[n].iov_base = dst + done;
		iov[n++].iov_len = k;
		done += k;
		want += sizeof hdr + k;
	}
	iov[n].iov_base = end;
	iov[n++].iov_len = sizeof end;
	want += sizeof end;
	mh.msg_iov = iov;
	mh.msg_iovlen = n;
	while (want > 0) {
		ssize_t r = recvmsg(s->fd, &mh, MSG_WAITALL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r == 0 ? -ECONNRESET : -errno;
		want -= (size_t)r;
		while (mh.msg_iovlen > 0 && (size_t)r >= mh.msg_iov[0].iov_len) {
			r -= (ssize_t)mh.msg_iov[0].iov_len;
			mh.msg_iov++;
			mh.msg_iovlen--;
		}
		if (mh.msg_iovlen > 0) {
			mh.msg_iov[0].iov_base = (char *)mh.msg_iov[0].iov_base + r;
			mh.msg_iov[0].iov_len -= (size_t)r;
		}
	}
	return 0;
}

static int
sock_run(void *state, const uint64_t *offs, size_t n, size_t len, size_t batch, uint64_t total,
	 struct floor_result *res)
{
	struct sock_floor *s = state;
	struct wire_request rq[MAX_BATCH];
	size_t i, j, nops = offs != NULL ? n : (size_t)((total + len - 1) / len);
	double t0;
	int rc;

	if (len > FLOOR_MAX_LEN || batch == 0 || batch > MAX_BATCH)
		return -EINVAL;
	memset(rq, 0, sizeof rq);
	res->nlat = 0;
	t0 = now_s();
	for (i = 0; i < nops; i += batch) {
		size_t k = nops - i < batch ? nops - i : batch;
		double a = now_s();

		for (j = 0; j < k; j++) {
			rq[j].len = len;
			rq[j].off = offs != NULL ? offs[i + j] : (uint64_t)(i + j) * len;
		}
		rc = write_full(s->fd, rq, k * sizeof rq[0]);
		for (j = 0; rc == 0 && j < k; j++)
			rc = sock_recv_reply(s, s->dst + (j * len) % FLOOR_MAX_LEN, len);
		if (rc < 0)
			return rc;
		if (res->lat_us != NULL)
			res->lat_us[res->nlat++] = (now_s() - a) * 1e6;
	}
	res->elapsed_s = now_s() - t0;
	res->ops = nops;
	res->bytes = (uint64_t)nops * len;
	return 0;
}

/* --- shared-memory handoff --------------------------------------------------- */

struct shm_floor {
	pid_t pid;
	int req_fd, done_fd;	/* to the producer, from it */
	char *slots;
	char *dst;
};

static void
shm_producer(char *slots, int req_fd, int done_fd)
{
	size_t size = src_size(), pos = 0;
	char *src = page_buffer(size);
	unsigned char slot;

	while (read_full(req_fd, &slot, 1) == 0 && slot < SHM_SLOTS) {
		if (pos + SHM_SLOT > size)
			pos = 0;
		memcpy(slots + (size_t)slot * SHM_SLOT, src + pos, SHM_SLOT);
		pos += SHM_SLOT;
		if (write_full(done_fd, &slot, 1) < 0)
			break;
	}
	_exit(0);
}

static int
shm_setup(void **state)
{
	int req[2], done[2], mfd;
	struct shm_floor *s;
	void *p;

	mfd = memfd_create("hmbench-shm", MFD_CLOEXEC);
	if (mfd < 0)
		return -errno;
	if (ftruncate(mfd, (off_t)SHM_SLOTS * SHM_SLOT) < 0) {
		close(mfd);
		return -errno;
	}
	p = mmap(NULL, (size_t)SHM_SLOTS * SHM_SLOT, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		 mfd, 0);
	close(mfd);
	if (p == MAP_FAILED)
		return -errno;
	if (pipe2(req, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(done, O_CLOEXEC) < 0) {
		close(req[0]);
		close(req[1]);
		return -errno;
	}
	s = xcalloc(1, sizeof *s);
	s->slots = p;
	memset(s->slots, 0, (size_t)SHM_SLOTS * SHM_SLOT);
	s->pid = floor_fork();
	if (s->pid == 0) {
		close(req[1]);
		close(done[0]);
		shm_producer(s->slots, req[0], done[1]);
	}
	close(req[0]);
	close(done[1]);
	if (s->pid < 0) {
		close(req[1]);
		close(done[0]);
		free(s);
		return -EAGAIN;
	}
	s->req_fd = req[1];
	s->done_fd = done[0];
	s->dst = page_buffer(SHM_SLOT);
	*state = s;
	return 0;
}

static void
shm_teardown(void *state)
{
	struct shm_floor *s = state;
	unsigned char stop = 0xff;

	(void)write_full(s->req_fd, &stop, 1);
	close(s->req_fd);
	close(s->done_fd);
	waitpid(s->pid, NULL, 0);
	munmap(s->slots, (size_t)SHM_SLOTS * SHM_SLOT);
	munmap(s->dst, SHM_SLOT);
	free(s);
}

static int
shm_run(void *state, const uint64_t *offs, size_t n, size_t len, size_t batch, uint64_t total,
	struct floor_result *res)
{
	struct shm_floor *s = state;
	size_t chunks = (size_t)((total + SHM_SLOT - 1) / SHM_SLOT), asked = 0, got = 0;
	unsigned char slot;
	double t0;
	int rc;

	(void)n;
	(void)batch;
	if (offs != NULL || len != SHM_SLOT)
		return -EINVAL;
	res->nlat = 0;
	t0 = now_s();
	/* Keep every slot busy: the producer fills one while we copy another. */
	for (slot = 0; slot < SHM_SLOTS && asked < chunks; slot++, asked++) {
		rc = write_full(s->req_fd, &slot, 1);
		if (rc < 0)
			return rc;
	}
	while (got < chunks) {
		double a = now_s();

		rc = read_full(s->done_fd, &slot, 1);
		if (rc < 0)
			return rc;
		memcpy(s->dst, s->slots + (size_t)slot * SHM_SLOT, SHM_SLOT);
		got++;
		if (asked < chunks) {
			rc = write_full(s->req_fd, &slot, 1);
			if (rc < 0)
				return rc;
			asked++;
		}
		if (res->lat_us != NULL)
			res->lat_us[res->nlat++] = (now_s() - a) * 1e6;
	}
	res->elapsed_s = now_s() - t0;
	res->ops = chunks;
	res->bytes = (uint64_t)chunks * SHM_SLOT;
	return 0;
}

/* --- memcpy ------------------------------------------------------------------- */

struct copy_floor {
	char *src, *dst;
	size_t size;
};

static int
copy_setup(void **state)
{
	struct copy_floor *s = xcalloc(1, sizeof *s);

	s->size = src_size();
	s->src = page_buffer(s->size);
	s->dst = page_buffer(FLOOR_MAX_LEN * 2);
	*state = s;
	return 0;
}

static void
copy_teardown(void *state)
{
	struct copy_floor *s = state;

	munmap(s->src, s->size);
	munmap(s->dst, FLOOR_MAX_LEN * 2);
	free(s);
}

static int
copy_run(void *state, const uint64_t *offs, size_t n, size_t len, size_t batch, uint64_t total,
	 struct floor_result *res)
{
	struct copy_floor *s = state;
	size_t i, j, nops = offs != NULL ? n : (size_t)((total + len - 1) / len), pos = 0;
	double t0;

	if (len > FLOOR_MAX_LEN || len > s->size || batch == 0)
		return -EINVAL;
	/*
	 * A floor is the best case: touch the source first, untimed.  (On a
	 * VM with shadow paging, other processes' work between rounds can
	 * make a buffer that sat idle several times slower to read.)
	 */
	for (i = 0; i < s->size; i += 4096)
		__asm__ volatile("" : : "r"(((volatile const char *)s->src)[i]));
	res->nlat = 0;
	t0 = now_s();
	for (i = 0; i < nops; i += batch) {
		size_t k = nops - i < batch ? nops - i : batch;
		double a = now_s();

		for (j = 0; j < k; j++) {
			size_t from;

			if (offs != NULL) {
				from = (size_t)(offs[i + j] % (s->size - len + 1));
			} else {
				if (pos + len > s->size)
					pos = 0;
				from = pos;
				pos += len;
			}
			memcpy(s->dst + (j * len) % FLOOR_MAX_LEN, s->src + from, len);
		}
		if (res->lat_us != NULL)
			res->lat_us[res->nlat++] = (now_s() - a) * 1e6;
	}
	res->elapsed_s = now_s() - t0;
	res->ops = nops;
	res->bytes = (uint64_t)nops * len;
	/* keep the copies */
	__asm__ volatile("" : : "r"(s->dst) : "memory");
	return 0;
}

const struct floor_ops floors[] = {
	{
		.name = "floor-socket",
		.label = "raw Unix-socket ping-pong, hotmap's request and reply sizes (pipelined in batches)",
		.workloads = W_RAND | W_SEQ,
		.setup = sock_setup,
		.teardown = sock_teardown,
		.run = sock_run,
	},
	{
		.name = "floor-shm",
		.label = "raw two-process shared-memory handoff of 1 MiB chunks (copy in, copy out)",
		.workloads = W_SEQ,
		.setup = shm_setup,
		.teardown = shm_teardown,
		.run = shm_run,
	},
	{
		.name = "floor-memcpy",
		.label = "single-thread memcpy out of a pre-faulted buffer",
		.workloads = W_RAND | W_SEQ,
		.setup = copy_setup,
		.teardown = copy_teardown,
		.run = copy_run,
	},
};

const size_t nfloors = sizeof floors / sizeof floors[0];
