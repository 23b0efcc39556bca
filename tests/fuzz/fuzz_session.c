/* SPDX-License-Identifier: MIT */
/*
 * fuzz_session.c - libFuzzer target: hotmapd's request handling, from the
 * bytes on the socket to the replies: the peer (framing, descriptor
 * passing, pausing), the handshake, and every request handler of
 * session.c, with a real server (file cache, worker threads) behind them.
 *
 * Each input is one client connection:
 *
 *   byte 0   which descriptors come with the first bytes (SCM_RIGHTS,
 *            FD_* below): a sealed memfd that HELLO may register as a
 *            shared region, files to OPEN by descriptor, and things that
 *            must be refused (an unsealed memfd, a directory, a pipe, a
 *            write-only descriptor, a socket)
 *   byte 1   MODE_* below; with MODE_RELOAD, its high nibble is the loop
 *            pass at which the server reloads its configuration
 *   with MODE_RING: 4 bytes (sq_tail, cq_head, client_idle, n) and n % 9
 *            submission entries of 40 bytes, written into the sealed
 *            memfd's rings before it is sent: requests in polling mode
 *   the rest what the client writes on the socket
 *
 * The client bytes go to one end of a socketpair whose other end is a
 * session; the replies are read and thrown away, the rings are polled as
 * the daemon's loop does, and the loop runs until the client has hung up
 * and the session and every job of it are gone.  Between inputs the file
 * cache is emptied, so that one input does not depend on the ones before.
 *
 * MODE_RELOAD reloads the configuration mid-session, as SIGHUP does, from
 * a file that tightens every reloadable key (pread backend, a 64 KiB
 * budget, one open file, warm populate, cross-mounts no, ...), and back to
 * the defaults once the input is done.
 *
 * Open by path works beneath one root: a scratch directory (small, big,
 * empty files, a subdirectory and symlinks in and out of it).  It is
 * configured as /proc/self/cwd while the scratch directory is the working
 * directory, so paths in the corpus read "/proc/self/cwd/small" wherever
 * the directory really is.
 *
 * HOTMAP_FUZZ_VERBOSE=1 shows the daemon's log (debug) on stderr.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/base/closer.h"
#include "daemon/config/conf.h"
#include "daemon/base/log.h"
#include "daemon/service/server.h"
#include "daemon/service/session.h"
#include "daemon/storage/storage.h"
#include "daemon/service/workers.h"
#include "proto/ring.h"
#include "tests/fuzz/fuzz.h"

/* Descriptors the first byte of an input may ask for, in this order. */
enum {
	FD_SHM_SEALED = 1 << 0,	/* memfd sealed at FUZZ_SHM_SIZE: a region HELLO takes */
	FD_SMALL = 1 << 1,	/* the small file, for OPEN by descriptor */
	FD_SHM_UNSEALED = 1 << 2,	/* a memfd HELLO must refuse */
	FD_DIR = 1 << 3,	/* a directory */
	FD_PIPE = 1 << 4,	/* a pipe's read end: not a file that maps */
	FD_BIG = 1 << 5,	/* the big file: reads streamed in chunks */
	FD_WRONLY = 1 << 6,	/* the small file, opened for writing only */
	FD_SOCKET = 1 << 7,	/* a socket: refused as it arrives */
};

/* The second byte. */
enum {
	MODE_RING = 1 << 0,	/* ring contents follow */
	MODE_COLD = 1 << 1,	/* the big file leaves the page cache: reads go to workers */
	MODE_RELOAD = 1 << 2,	/* reload to reload.conf at pass (byte 1 >> 4) */
};
#define RING_SQE_SIZE	40	/* bytes of one entry in the input */
_Static_assert(sizeof(struct hm_ring_sqe) == RING_SQE_SIZE, "an input entry is a struct hm_ring_sqe");

/* Room for the rings and some data behind them. */
#define FUZZ_SHM_SIZE	(4 * HM_RING_BYTES)
/* Larger than SESSION_READ_CHUNK, so that a whole read of it streams. */
#define FUZZ_BIG_SIZE	(600u * 1024u)
/* Loop passes an input may take before it is called a hang. */
#define FUZZ_MAX_PASSES	200000

static struct server srv;
static struct hm_config_args args;
static char root[512];
static bool root_made;
static int log_level;		/* 0, or LOG_DEBUG with HOTMAP_FUZZ_VERBOSE=1 */

static void
put_file(const char *name, size_t size)
{
	int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	uint8_t buf[4096];
	size_t i, done;

	check(fd >= 0);
	for (i = 0; i < sizeof buf; i++)
		buf[i] = (uint8_t)(i * 7 + 1);
	for (done = 0; done < size; done += i) {
		i = size - done < sizeof buf ? size - done : sizeof buf;
		check(write(fd, buf, i) == (ssize_t)i);
	}
	close(fd);
}

static void
remove_root(void)
{
	static const char *const names[] = {
		"small", "big", "empty", "dir/nested", "link", "up", "out", "fifo", "reload.conf",
	};
	char p[sizeof root + 32];
	size_t i;

	if (!root_made)
		return;
	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(p, sizeof p, "%s/%s", root, names[i]);
		unlink(p);
	}
	snprintf(p, sizeof p, "%s/dir", root);
	rmdir(p);
	rmdir(root);
}

/* The scratch directory; the working directory is left in it. */
static void
make_root(void)
{
	const char *tmp = getenv("TMPDIR");
	FILE *f;

	if (tmp == NULL || tmp[0] != '/' || strlen(tmp) > 400)
		tmp = "/tmp";
	snprintf(root, sizeof root, "%s/hotmap-fuzz-XXXXXX", tmp);
	check(mkdtemp(root) != NULL);
	root_made = true;
	atexit(remove_root);
	check(chdir(root) == 0);
	put_file("small", 4096);
	put_file("big", FUZZ_BIG_SIZE);
	put_file("empty", 0);
	check(mkdir("dir", 0755) == 0);
	put_file("dir/nested", 100);
	check(symlink("small", "link") == 0);
	check(symlink("..", "up") == 0);
	check(symlink("/etc/hostname", "out") == 0);
	check(mkfifo("fifo", 0644) == 0);
	f = fopen("reload.conf", "we");
	check(f != NULL);
	fputs("backend = pread\nmax-mapped-bytes = 64K\nmax-open-files = 1\nidle-unmap = 1\n"
	      "warm = populate\nnetwork-fs = mmap\ncross-mounts = no\n"
	      "max-inflight-bytes = 64K\nidle-timeout = 1\n", f);
	check(fclose(f) == 0);
}

/*
 * Reloads from path, as SIGHUP does.  The root is /proc/self/cwd, so the
 * working directory is the scratch directory while the roots are opened
 * again.
 */
static void
reload(const char *path)
{
	int back = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);

	check(back >= 0);
	check(chdir(root) == 0);
	args.path = path;
	check(server_reload(&srv, NULL) == 0);
	log_set_level(log_level);	/* the file's log level is not the fuzzer's */
	check(fchdir(back) == 0);
	close(back);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct hm_config_errors errs = { 0 };
	struct hm_config cfg;
	char err[256], sock[sizeof root + 16];
	const char *verbose = getenv("HOTMAP_FUZZ_VERBOSE");
	size_t i;
	int cwd, rc;

	(void)argc;
	(void)argv;
	/* a client that hangs up mid-reply costs an EPIPE, as in hotmapd */
	signal(SIGPIPE, SIG_IGN);
	log_level = verbose != NULL && verbose[0] == '1' ? LOG_DEBUG : 0;
	log_set_level(log_level);

	cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	check(cwd >= 0);
	make_root();
	snprintf(sock, sizeof sock, "%s/sock", root);	/* never bound */
	/* no file: the defaults, and only what is set here over them */
	args.path = "/dev/null";
	check(conf_args_add(&args, "socket", strdup(sock)) == 0);
	check(conf_args_add(&args, "root", "/proc/self/cwd") == 0);
	check(conf_args_add(&args, "workers", "2") == 0);
	check(conf_args_add(&args, "poll-us", "0") == 0);
	check(conf_args_add(&args, "max-inflight", "4") == 0);
	rc = conf_load(&cfg, &args, &errs);
	for (i = 0; i < errs.n; i++)
		fprintf(stderr, "fuzz_session: %s\n", errs.v[i]);
	check(rc == 0);
	conf_errors_clear(&errs);
	/* back where libFuzzer was started: it writes crash files there */
	check(fchdir(cwd) == 0);
	close(cwd);

	rc = server_init(&srv, &cfg, &args, err, sizeof err);
	if (rc < 0)
		fprintf(stderr, "fuzz_session: server_init: %s\n", err);
	check(rc == 0);
	/* SIGINT and SIGTERM are libFuzzer's: libevent gives them back */
	for (i = 0; i < sizeof srv.ev_signals / sizeof srv.ev_signals[0]; i++) {
		if (srv.ev_signals[i] != NULL) {
			event_free(srv.ev_signals[i]);
			srv.ev_signals[i] = NULL;
		}
	}
	return 0;
}

static int
add_fd(int *fds, int *n, int fd)
{
	check(fd >= 0);
	fds[(*n)++] = fd;
	return fd;
}

/* The descriptors sel asks for, into fds (closed by the caller once
 * sent: the session gets its own copies). */
static int
make_fds(uint8_t sel, const uint8_t *ring, size_t ring_len, int *fds)
{
	char p[sizeof root + 16];
	int n = 0, fd, pv[2];

	if (sel & FD_SHM_SEALED) {
		fd = add_fd(fds, &n, memfd_create("fuzz-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING));
		check(ftruncate(fd, FUZZ_SHM_SIZE) == 0);
		check(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0);
		if (ring_len >= 4) {
			uint32_t w[3] = { ring[0], ring[1], ring[2] };

			check(pwrite(fd, &w[0], 4, HM_RING_SQ_TAIL) == 4);
			check(pwrite(fd, &w[1], 4, HM_RING_CQ_HEAD) == 4);
			check(pwrite(fd, &w[2], 4, HM_RING_CLIENT_IDLE) == 4);
			ring += 4;
			ring_len -= 4;
			for (unsigned i = 0; ring_len >= RING_SQE_SIZE; i++) {
				struct hm_ring_sqe e;

				memcpy(&e, ring, RING_SQE_SIZE);
				check(pwrite(fd, &e, sizeof e, HM_RING_SQE + i * sizeof e) ==
				      (ssize_t)sizeof e);
				ring += RING_SQE_SIZE;
				ring_len -= RING_SQE_SIZE;
			}
		}
	}
	if (sel & FD_SMALL) {
		snprintf(p, sizeof p, "%s/small", root);
		add_fd(fds, &n, open(p, O_RDONLY | O_CLOEXEC));
	}
	if (sel & FD_SHM_UNSEALED) {
		fd = add_fd(fds, &n, memfd_create("fuzz-shm", MFD_CLOEXEC));
		check(ftruncate(fd, FUZZ_SHM_SIZE) == 0);
	}
	if (sel & FD_DIR)
		add_fd(fds, &n, open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (sel & FD_PIPE) {
		check(pipe2(pv, O_CLOEXEC) == 0);
		add_fd(fds, &n, pv[0]);
		close(pv[1]);
	}
	if (sel & FD_BIG) {
		snprintf(p, sizeof p, "%s/big", root);
		add_fd(fds, &n, open(p, O_RDONLY | O_CLOEXEC));
	}
	if (sel & FD_WRONLY) {
		snprintf(p, sizeof p, "%s/small", root);
		add_fd(fds, &n, open(p, O_WRONLY | O_CLOEXEC));
	}
	if (sel & FD_SOCKET) {
		check(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pv) == 0);
		add_fd(fds, &n, pv[0]);
		close(pv[1]);
	}
	return n;
}

/* Writes the first bytes of the input with the descriptors. */
static ssize_t
send_with_fds(int sock, const uint8_t *data, size_t size, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} control;
	struct iovec iov = { (void *)data, size };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	if (nfds > 0) {
		memset(&control, 0, sizeof control);
		msg.msg_control = control.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	return sendmsg(sock, &msg, MSG_NOSIGNAL);
}

/* Reads and drops what the daemon wrote; true when it hung up. */
static bool
drain(int sock)
{
	uint8_t buf[65536];
	ssize_t n;

	for (;;) {
		n = recv(sock, buf, sizeof buf, MSG_DONTWAIT);
		if (n > 0)
			continue;
		if (n == 0)
			return true;
		check(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
		      errno == ECONNRESET);
		return errno == ECONNRESET;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct storage_evicted ev;
	int sv[2], fds[8], nfds = 0, i, passes;
	size_t off = 0;
	bool sent_fds = false, shut = false, reloaded = false;
	char conf[sizeof root + 16];
	const uint8_t *ring = NULL;
	size_t ring_len = 0;
	uint8_t sel, mode;

	if (size < 2)
		return 0;
	sel = data[0];
	mode = data[1];
	data += 2;
	size -= 2;
	if ((mode & MODE_RING) && size >= 4) {
		ring = data;
		ring_len = 4 + (size_t)(data[3] % 9) * RING_SQE_SIZE;
		if (ring_len > size)
			ring_len = size;
		data += ring_len;
		size -= ring_len;
	}
	if (mode & MODE_COLD) {
		char p[sizeof root + 16];
		int fd;

		snprintf(p, sizeof p, "%s/big", root);
		fd = open(p, O_RDONLY | O_CLOEXEC);
		check(fd >= 0);
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}

	check(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
	check(session_new(&srv, sv[0]) == 0);
	if (size > 0)
		nfds = make_fds(sel, ring, ring_len, fds);

	for (passes = 0;; passes++) {
		if (passes > FUZZ_MAX_PASSES) {
			fprintf(stderr, "fuzz_session: the session is still there after %d loop "
				"passes (%zu of %zu bytes written, %u jobs with the workers)\n",
				passes, off, size, (unsigned)srv.counters.inflight);
			abort();
		}
		while (off < size) {
			ssize_t n;

			if (!sent_fds) {
				n = send_with_fds(sv[1], data, size, fds, nfds);
				if (n > 0) {
					sent_fds = true;
					for (i = 0; i < nfds; i++)
						close(fds[i]);
				}
			} else {
				n = send(sv[1], data + off, size - off, MSG_NOSIGNAL);
			}
			if (n < 0) {
				/* EPIPE: the daemon hung up; the rest goes nowhere */
				check(errno == EAGAIN || errno == EWOULDBLOCK || errno == EPIPE ||
				      errno == ECONNRESET);
				if (errno == EPIPE || errno == ECONNRESET)
					off = size;
				break;
			}
			off += (size_t)n;
		}
		if (off == size && !shut) {
			/* the client is done: EOF after the last byte */
			shutdown(sv[1], SHUT_WR);
			shut = true;
		}
		if ((mode & MODE_RELOAD) && !reloaded && passes >= mode >> 4) {
			snprintf(conf, sizeof conf, "%s/reload.conf", root);
			reload(conf);
			reloaded = true;
		}
		/* as loop_run does between passes while clients poll */
		session_poll_rings(&srv);
		event_base_loop(srv.base, srv.counters.inflight > 0 && srv.sessions == NULL ?
				EVLOOP_ONCE : EVLOOP_NONBLOCK);
		drain(sv[1]);
		if (shut && srv.sessions == NULL && srv.counters.inflight == 0)
			break;
	}
	if (!sent_fds)
		for (i = 0; i < nfds; i++)
			close(fds[i]);
	close(sv[1]);
	if (reloaded)
		reload("/dev/null");	/* the defaults again */
	/* the next input starts from an empty cache */
	file_cache_evict(srv.cache, true, 0, 0, &ev);
	check(ev.busy == 0);
	/*
	 * Every descriptor the input passed is closed by the closer thread
	 * (closer.h) by now, or soon: none of these blocks.  Its queue bound
	 * (CLOSER_MAX_QUEUED) is far above the 8 descriptors an input passes,
	 * so a close on the caller's thread (an overflow) is a bug here.
	 */
	check(closer_drain(10000));
	check(closer_overflows() == 0);
	stats_reset(&srv);
	return 0;
}
