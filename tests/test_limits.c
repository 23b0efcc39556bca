/* SPDX-License-Identifier: MIT */
/*
 * test_limits.c - resource exhaustion against a real hotmapd
 * (tests/harness.h): the daemon out of descriptors, a client that opens
 * handles until it is refused, a client that never reads its replies, and
 * a flood of connections that say nothing.  In each, the misbehaving side
 * gets a clear refusal or waits, and everyone else is served as before.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/harness.h"

#define MiB (1024u * 1024u)

/* A test that hangs (a daemon that stopped answering) fails instead. */
#define TEST_WATCHDOG_S		120

static int
setup(void **state)
{
	unsetenv("HOTMAP_SHM_SIZE");
	unsetenv("HOTMAP_SHM_THRESHOLD");
	setenv("HOTMAP_POLL", "0", 1);	/* the machine's cores must not decide */
	alarm(TEST_WATCHDOG_S);
	*state = harness_start(*state);
	return 0;
}

static int
teardown(void **state)
{
	alarm(0);
	unsetenv("HOTMAP_POLL");
	harness_free_buffers();
	harness_stop(*state);
	return 0;
}

/* --- the daemon seen from /proc ------------------------------------------ */

/* harness_rss_anon_kib and harness_count_fds, which must succeed. */
static long
rss_anon_kib(pid_t pid)
{
	long kib = harness_rss_anon_kib(pid);

	assert_true(kib >= 0);
	return kib;
}

static int
open_fds(pid_t pid, int *maxfd)
{
	int n = harness_count_fds(pid, maxfd);

	assert_true(n >= 0);
	return n;
}

/* User plus system CPU time of pid, in clock ticks. */
static long
cpu_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long utime, stime;
	size_t n;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	f = fopen(path, "re");
	assert_non_null(f);
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* after "pid (comm) ": state is field 3, utime 14 and stime 15 */
	p = strrchr(buf, ')');
	assert_non_null(p);
	assert_int_equal(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
				&utime, &stime), 2);
	return (long)(utime + stime);
}

/* --- the raw wire --------------------------------------------------------- */

/* OPEN by descriptor on a greeted connection; the handle. */
static uint64_t
wire_open_fd(int sock, int fd, uint32_t id)
{
	struct wire_msg m = { .n = 0 };
	struct wire_header hdr;
	uint8_t reply[2048];
	uint64_t handle = 0;

	wire_string(&m, 2, "limits");
	assert_int_equal(wire_send_msg(sock, WIRE_OPEN, id, &m, fd), 0);
	assert_int_equal(wire_recv(sock, &hdr, reply, sizeof reply, 10000), 1);
	assert_int_equal(hdr.type, WIRE_OPEN_REPLY);
	assert_int_equal(wire_get_varint(reply, hdr.length, 1, &handle), 0);
	assert_true(handle > 0);
	return handle;
}

/* Appends a READ frame (socket transport) to out; its length. */
static size_t
frame_read(uint8_t *out, uint32_t id, uint64_t handle, uint64_t offset, uint64_t len)
{
	struct wire_msg m = { .n = 0 };
	struct wire_header hdr = { .type = WIRE_READ, .version = WIRE_VERSION, .id = id };

	wire_varint(&m, 1, handle);
	wire_varint(&m, 2, offset);
	wire_varint(&m, 3, len);
	hdr.length = (uint32_t)m.n;
	wire_put_header(out, &hdr);
	memcpy(out + WIRE_HEADER_SIZE, m.b, m.n);
	return WIRE_HEADER_SIZE + m.n;
}

/* HELLO sent, no reply waited for. */
static void
wire_send_hello(int sock)
{
	struct wire_msg m = { .n = 0 };

	wire_varint(&m, 1, WIRE_VERSION);
	wire_string(&m, 3, "limits");
	assert_int_equal(wire_send_msg(sock, WIRE_HELLO, 1, &m, -1), 0);
}

static void
expect_hello_reply(int sock, int timeout_ms)
{
	struct wire_header hdr;
	uint8_t reply[1024];
	int rc = wire_recv(sock, &hdr, reply, sizeof reply, timeout_ms);

	if (rc != 1)
		fail_msg("no HELLO_REPLY within %d ms: %s", timeout_ms,
			 rc == 0 ? "end of stream" : strerror(-rc));
	assert_int_equal(hdr.type, WIRE_HELLO_REPLY);
}

static const struct harness_opts opts_default = { .backend = NULL };

/* --- the daemon out of descriptors --------------------------------------- */

#define EARLY_CLIENTS	4
#define WAITING		3

/*
 * Lowers hotmapd's descriptor limit (prlimit(2), soft and hard: it raises
 * its soft limit to the hard one at start) to the highest descriptor it
 * holds, then connects raw clients, each greeted, until one is not
 * accepted: the free descriptors below the highest are taken by those
 * answered (kept in accepted[], *nacc), and the last one waits in the
 * backlog while accept backs off.  Returns that one.
 */
static int
reach_descriptor_limit(struct harness *h, hm_client *admin, int *accepted, int cap, int *nacc)
{
	uint64_t backoffs0 = harness_stat(admin, "accept_backoffs");
	struct rlimit rl;
	int maxfd;

	open_fds(h->pid, &maxfd);
	rl.rlim_cur = rl.rlim_max = (rlim_t)maxfd + 1;
	assert_int_equal(prlimit(h->pid, RLIMIT_NOFILE, &rl, NULL), 0);
	*nacc = 0;
	for (;;) {
		int s = wire_connect(h);
		int64_t deadline = harness_now_ms() + 10000;
		struct wire_header hdr;
		uint8_t reply[1024];
		int rc;

		wire_send_hello(s);
		for (;;) {
			rc = wire_recv(s, &hdr, reply, sizeof reply, 50);
			if (rc == 1 || harness_stat(admin, "accept_backoffs") > backoffs0 ||
			    harness_now_ms() > deadline)
				break;
		}
		if (rc == 1) {
			assert_int_equal(hdr.type, WIRE_HELLO_REPLY);
			assert_true(*nacc < cap);
			accepted[(*nacc)++] = s;
			continue;
		}
		if (harness_stat(admin, "accept_backoffs") == backoffs0)
			fail_msg("a connection at the descriptor limit got neither an answer "
				 "nor an accept back-off in 10 s");
		return s;
	}
}

/*
 * hotmapd out of descriptors: connections past the limit wait in the
 * backlog, accept backs off (counted, logged, no spinning), the clients
 * already connected read as before, and once some leave the waiting ones
 * are answered and new clients served.
 */
static void
test_descriptor_limit(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX];
	hm_client *admin, *early[EARLY_CLIENTS], *late;
	hm_file *fa, *fe[EARLY_CLIENTS], *fl;
	struct hm_ping ping;
	int fd, i, nacc, waiting[WAITING], accepted[64];
	long t0, t1;
	int64_t w0, w1;

	harness_path(h, "data", path);
	harness_write_file(path, MiB, 101);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	admin = harness_connect(h);
	fa = hm_open(admin, path, 0);
	assert_non_null(fa);
	for (i = 0; i < EARLY_CLIENTS; i++) {
		early[i] = harness_connect(h);
		fe[i] = hm_open(early[i], path, 0);
		assert_non_null(fe[i]);
		assert_int_equal(harness_check_read(fe[i], fd, 1000, 5000), 5000);
	}
	assert_int_equal(harness_stat(admin, "accept_backoffs"), 0);

	waiting[0] = reach_descriptor_limit(h, admin, accepted, 64, &nacc);
	for (i = 1; i < WAITING; i++) {
		waiting[i] = wire_connect(h);	/* the backlog takes it */
		wire_send_hello(waiting[i]);
	}

	/* Meanwhile: the waiting get no answer, the daemon does not spin,
	 * and everyone connected reads as before. */
	t0 = cpu_ticks(h->pid);
	w0 = harness_now_ms();
	for (i = 0; i < WAITING; i++) {
		struct wire_header hdr;
		uint8_t reply[1024];

		assert_int_equal(wire_recv(waiting[i], &hdr, reply, sizeof reply, 500), -ETIMEDOUT);
	}
	assert_int_equal(harness_check_read(fa, fd, 0, MiB), MiB);
	for (i = 0; i < EARLY_CLIENTS; i++) {
		assert_int_equal(harness_check_read(fe[i], fd, 77777, 300000), 300000);
		assert_int_equal(hm_ping(early[i], &ping), 0);
		assert_int_equal(ping.pid, (uint32_t)h->pid);
	}
	t1 = cpu_ticks(h->pid);
	w1 = harness_now_ms();
	/* spinning on accept would take a whole core */
	if ((t1 - t0) * 1000 / sysconf(_SC_CLK_TCK) > (w1 - w0) / 2)
		fail_msg("hotmapd used %ld ticks of CPU in %lld ms while out of descriptors",
			 t1 - t0, (long long)(w1 - w0));
	assert_true(harness_stat(admin, "accept_backoffs") > 0);
	assert_true(harness_log_find(h, 0, "accept", "pausing new connections"));

	/* Room again: the waiting are answered at the next retry (a second),
	 * and, once they have left too, a new client is served. */
	for (i = 0; i < EARLY_CLIENTS; i++)
		hm_disconnect(early[i]);
	for (i = 0; i < nacc; i++)
		close(accepted[i]);
	for (i = 0; i < WAITING; i++)
		expect_hello_reply(waiting[i], 5000);
	for (i = 0; i < WAITING; i++)
		close(waiting[i]);
	harness_wait_stat(admin, "clients", 1);
	late = harness_connect(h);
	fl = hm_open(late, path, 0);
	if (fl == NULL)
		fail_msg("hm_open once descriptors are free again: %s (%s)", strerror(errno),
			 hm_last_error());
	assert_int_equal(harness_check_read(fl, fd, 4096, 100000), 100000);
	assert_int_equal(harness_check_read(fa, fd, 4096, 100000), 100000);
	hm_disconnect(late);
	hm_disconnect(admin);
	close(fd);
}

/*
 * A descriptor passed to hotmapd while it has none free cannot arrive
 * (recvmsg truncates the control data): an OPEN by descriptor then fails
 * with a clear error and the client stays connected; a HELLO whose shared
 * region cannot arrive is served over the socket.  Neither is a reason to
 * drop the client.
 */
static void
test_descriptor_passed_at_limit(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX];
	hm_client *admin, *cl, *spare, *late;
	hm_file *f, *g, *fl;
	struct hm_ping ping;
	int fd, i, nacc, waiting, accepted[64];

	harness_path(h, "data", path);
	harness_write_file(path, MiB, 505);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	admin = harness_connect(h);
	cl = harness_connect(h);
	spare = harness_connect(h);
	f = hm_open(cl, path, 0);
	assert_non_null(f);

	waiting = reach_descriptor_limit(h, admin, accepted, 64, &nacc);
	/* no descriptor free: an open by descriptor is refused, not dropped */
	g = hm_open(cl, path, 0);
	if (g != NULL)
		fail_msg("hm_open succeeded with hotmapd out of descriptors");
	if (errno != EMFILE && errno != ENFILE)
		fail_msg("hm_open with hotmapd out of descriptors: %s (\"%s\"), want EMFILE: "
			 "the client was dropped", strerror(errno), hm_last_error());
	assert_int_equal(hm_ping(cl, &ping), 0);
	assert_int_equal(harness_check_read(f, fd, 999, 70000), 70000);

	/* one descriptor free, taken by a new connection: its HELLO's region
	 * cannot arrive, and it is served without one */
	hm_disconnect(spare);
	expect_hello_reply(waiting, 5000);	/* the next retry took it */
	close(waiting);
	harness_wait_stat(admin, "clients", 2 + (uint64_t)nacc);
	late = hm_connect(h->sock);
	if (late == NULL)
		fail_msg("hm_connect with one descriptor free in hotmapd: %s (\"%s\")",
			 strerror(errno), hm_last_error());
	assert_int_equal(hm_ping(late, &ping), 0);
	hm_disconnect(late);
	harness_wait_stat(admin, "clients", 2 + (uint64_t)nacc);

	/* and with descriptors free again, the refused open succeeds */
	for (i = 0; i < nacc; i++)
		close(accepted[i]);
	harness_wait_stat(admin, "clients", 2);
	fl = hm_open(cl, path, 0);
	if (fl == NULL)
		fail_msg("hm_open once descriptors are free again: %s (%s)", strerror(errno),
			 hm_last_error());
	assert_int_equal(harness_check_read(fl, fd, 5, 100000), 100000);
	hm_disconnect(cl);
	hm_disconnect(admin);
	close(fd);
}

/* --- a client that opens handles until refused ---------------------------- */

#define HANDLE_CAP	65536	/* SESSION_MAX_HANDLES, hotmapd(8) LIMITS */
#define OPEN_TRIES	100000

/*
 * One client opens the same small file over and over: the 65537th open
 * fails with EMFILE and a message naming the cap, the connection goes on
 * (earlier handles read, a closed slot can be opened again), the daemon
 * holds one descriptor for the file and not one per handle, others are
 * served, and the client's leaving frees every handle.
 */
static void
test_open_until_refused(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX];
	hm_client *admin, *greedy, *other;
	hm_file **f, *fo, *again;
	long rss0, rss1;
	int fd, fds0, fds1, n;

	harness_path(h, "small", path);
	harness_write_file(path, 8192, 202);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	admin = harness_connect(h);
	other = harness_connect(h);
	greedy = harness_connect(h);
	fo = hm_open(other, path, 0);
	assert_non_null(fo);
	fds0 = open_fds(h->pid, NULL);
	rss0 = rss_anon_kib(h->pid);

	f = calloc(OPEN_TRIES, sizeof *f);
	assert_non_null(f);
	for (n = 0; n < OPEN_TRIES; n++) {
		f[n] = hm_open(greedy, path, 0);
		if (f[n] == NULL)
			break;
	}
	if (n != HANDLE_CAP)
		fail_msg("open number %d failed (%s, \"%s\"); want the %dth to fail", n + 1,
			 n < OPEN_TRIES ? strerror(errno) : "none failed", hm_last_error(),
			 HANDLE_CAP + 1);
	assert_int_equal(errno, EMFILE);
	if (strstr(hm_last_error(), "65536") == NULL)
		fail_msg("the refusal does not name the cap: \"%s\"", hm_last_error());
	/* refused again, not disconnected */
	assert_null(hm_open(greedy, path, 0));
	assert_int_equal(errno, EMFILE);

	assert_int_equal(harness_stat(admin, "handles"), HANDLE_CAP + 1);
	fds1 = open_fds(h->pid, NULL);
	if (fds1 > fds0 + 16)
		fail_msg("hotmapd holds %d descriptors after %d opens of one file, %d before",
			 fds1, HANDLE_CAP, fds0);
	rss1 = rss_anon_kib(h->pid);
	if (rss1 - rss0 > 64 * 1024)
		fail_msg("hotmapd's RssAnon grew by %ld KiB for %d handles", rss1 - rss0,
			 HANDLE_CAP);

	/* the greedy client is still served, on its first and last handle */
	assert_int_equal(harness_check_read(f[0], fd, 100, 5000), 5000);
	assert_int_equal(harness_check_read(f[HANDLE_CAP - 1], fd, 0, 8192), 8192);
	/* a handle closed is a handle that can be opened again */
	assert_int_equal(hm_close(f[1234]), 0);
	again = hm_open(greedy, path, 0);
	if (again == NULL)
		fail_msg("open after a close at the cap: %s (%s)", strerror(errno), hm_last_error());
	assert_int_equal(harness_check_read(again, fd, 8000, 192), 192);
	/* and the others as ever */
	assert_int_equal(harness_check_read(fo, fd, 0, 8192), 8192);

	hm_disconnect(greedy);	/* frees the hm_files too */
	free(f);
	harness_wait_stat(admin, "handles", 1);
	assert_int_equal(harness_stat(admin, "clients"), 2);
	assert_int_equal(harness_check_read(fo, fd, 17, 4000), 4000);
	hm_disconnect(other);
	harness_wait_stat(admin, "handles", 0);
	hm_disconnect(admin);
	close(fd);
}

/* --- a client that never reads its replies -------------------------------- */

#define GREEDY_FILE	(64u * MiB)
#define GREEDY_READS	100000		/* of 1 MiB: far more than any buffer */
#define RSS_BOUND_KIB	(64 * 1024)

/*
 * Over the raw wire: HELLO, OPEN, then READs of 1 MiB written as fast as
 * the socket takes them and never a reply read.  The daemon stops taking
 * requests (the writer stalls long before the last), its anonymous memory
 * stays within RSS_BOUND_KIB of where it was, another client is served
 * meanwhile, and when the greedy one leaves all is as before.
 */
static void
test_never_reads_replies(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX];
	hm_client *admin, *other;
	hm_file *fo;
	struct hm_ping ping;
	uint8_t *frames;
	size_t total = 0, off = 0;
	uint64_t handle;
	long rss0, rss, rss_max = 0;
	int64_t last_progress, stalled_ms = 0;
	int fd, sock, i;

	harness_path(h, "big", path);
	harness_write_file(path, GREEDY_FILE, 303);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	admin = harness_connect(h);
	other = harness_connect(h);
	fo = hm_open(other, path, 0);
	assert_non_null(fo);
	/* warm up the daemon's buffers with reads of the same size */
	for (i = 0; i < 4; i++)
		assert_int_equal(harness_check_read(fo, fd, (uint64_t)i * 7 * MiB, MiB), MiB);

	sock = wire_connect(h);
	wire_hello(sock);
	handle = wire_open_fd(sock, fd, 2);
	rss0 = rss_anon_kib(h->pid);

	frames = malloc((size_t)GREEDY_READS * (WIRE_HEADER_SIZE + 32));
	assert_non_null(frames);
	for (i = 0; i < GREEDY_READS; i++)
		total += frame_read(frames + total, (uint32_t)(10 + i), handle,
				    (uint64_t)(i % 64) * MiB, MiB);

	/* Write what the socket takes; a second with no progress means the
	 * daemon has stopped reading. */
	last_progress = harness_now_ms();
	while (off < total) {
		ssize_t w = send(sock, frames + off, total - off, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (w > 0) {
			off += (size_t)w;
			last_progress = harness_now_ms();
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			fail_msg("send: %s (the daemon dropped a client that only did not read)",
				 strerror(errno));
		rss = rss_anon_kib(h->pid);
		if (rss > rss_max)
			rss_max = rss;
		stalled_ms = harness_now_ms() - last_progress;
		if (stalled_ms > 1500)
			break;
		{
			struct pollfd pfd = { .fd = sock, .events = POLLOUT };

			poll(&pfd, 1, 100);
		}
	}
	if (off == total)
		fail_msg("hotmapd took all %d READs (%zu bytes) of a client that reads no reply",
			 GREEDY_READS, total);

	/* While it sits there: another client is served, memory is flat. */
	for (i = 0; i < 8; i++) {
		assert_int_equal(hm_ping(other, &ping), 0);
		assert_int_equal(harness_check_read(fo, fd, (uint64_t)i * 5 * MiB + 11, MiB), MiB);
		rss = rss_anon_kib(h->pid);
		if (rss > rss_max)
			rss_max = rss;
	}
	assert_int_equal(harness_check_read(fo, fd, 3 * MiB, 4 * MiB), 4 * MiB);
	harness_sleep_ms(500);
	rss = rss_anon_kib(h->pid);
	if (rss > rss_max)
		rss_max = rss;
	if (rss_max - rss0 > RSS_BOUND_KIB)
		fail_msg("hotmapd's RssAnon grew from %ld to %ld KiB for a client that reads "
			 "no reply (bound %d KiB above)", rss0, rss_max, RSS_BOUND_KIB);
	assert_int_equal(harness_stat(admin, "clients"), 3);

	close(sock);
	free(frames);
	harness_wait_stat(admin, "clients", 2);
	harness_wait_stat(admin, "handles", 1);
	assert_int_equal(hm_ping(other, &ping), 0);
	assert_int_equal(harness_check_read(fo, fd, 60 * MiB, 4 * MiB), 4 * MiB);
	hm_close(fo);
	hm_disconnect(other);
	hm_disconnect(admin);
	close(fd);
}

/* --- connection floods and slow clients ----------------------------------- */

#define FLOOD		50
#define PER_UID		8

static const struct harness_opts opts_flood = {
	.extra = { "--max-connections-per-uid=8", "--idle-timeout=1", NULL },
};

/* The next hm_connect is refused with EUSERS, naming the limit. */
static void
expect_users_refusal(struct harness *h)
{
	hm_client *c = hm_connect(h->sock);

	if (c != NULL)
		fail_msg("a connection past --max-connections-per-uid %d was served", PER_UID);
	assert_int_equal(errno, EUSERS);
	if (strstr(hm_last_error(), "max-connections-per-uid") == NULL)
		fail_msg("the refusal does not name the limit: \"%s\"", hm_last_error());
}

/*
 * FLOOD connections that never say a word.  The per-uid limit counts a
 * connection from accept, and applies at HELLO: while the flood is
 * connected, the user's next client is refused with EUSERS (all of them
 * are the same uid).  The idle timeout closes the silent ones within a
 * few seconds; then clients are served again, up to the limit.
 */
static void
test_flood_of_silent_connections(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX];
	hm_client *c[PER_UID];
	hm_file *f;
	int socks[FLOOD], fd, i;
	int64_t t0, took;

	harness_path(h, "data", path);
	harness_write_file(path, 200000, 404);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);

	t0 = harness_now_ms();
	for (i = 0; i < FLOOD; i++)
		socks[i] = wire_connect(h);
	/* (only while the idle timeout cannot yet have closed any) */
	if (harness_now_ms() - t0 < 500)
		expect_users_refusal(h);
	else
		print_message("# the flood took %lld ms: its refusal is not checked\n",
			      (long long)(harness_now_ms() - t0));
	for (i = 0; i < FLOOD; i++)
		wire_expect_eof(socks[i], 5000);
	took = harness_now_ms() - t0;
	if (took > 5000)
		fail_msg("the silent connections were closed only after %lld ms (--idle-timeout 1)",
			 (long long)took);
	for (i = 0; i < FLOOD; i++)
		close(socks[i]);

	/* served again, to the limit and no further */
	t0 = harness_now_ms();
	for (i = 0; i < PER_UID; i++)
		c[i] = harness_connect(h);
	if (harness_now_ms() - t0 < 500) {
		expect_users_refusal(h);
		assert_true(harness_stat(c[PER_UID - 1], "clients_refused") >= 1);
	} else {
		print_message("# %d connects took %lld ms: the refusal is not checked\n", PER_UID,
			      (long long)(harness_now_ms() - t0));
	}
	f = hm_open(c[PER_UID - 1], path, 0);
	assert_non_null(f);
	assert_int_equal(harness_check_read(f, fd, 1234, 100000), 100000);
	for (i = 0; i < PER_UID; i++)
		hm_disconnect(c[i]);
	close(fd);
}

/*
 * Slow clients: connections that send part of a frame and then nothing.
 * The idle timeout is for a client "that has sent nothing for seconds
 * while none of its replies or reads is pending" (hotmapd(8)): half a
 * frame is no reply or read pending, so they too are closed, and cannot
 * hold the user's connections forever.
 */
static void
test_slow_clients_closed(void **state)
{
	struct harness *h = *state;
	static const uint8_t half_header[8] = { 5, 0, 0, 0, 0, 0, 0, 0 };
	int socks[PER_UID], i;
	hm_client *c;
	struct hm_ping ping;

	for (i = 0; i < PER_UID; i++) {
		socks[i] = wire_connect(h);
		if (i % 2 == 0) {
			assert_int_equal(wire_send_bytes(socks[i], half_header, sizeof half_header), 0);
		} else {
			/* greeted, then half a request */
			wire_hello(socks[i]);
			assert_int_equal(wire_send_bytes(socks[i], half_header, sizeof half_header), 0);
		}
	}
	for (i = 0; i < PER_UID; i++)
		wire_expect_eof(socks[i], 5000);
	for (i = 0; i < PER_UID; i++)
		close(socks[i]);
	c = harness_connect(h);
	assert_int_equal(hm_ping(c, &ping), 0);
	hm_disconnect(c);
}

#define T(fn, o) cmocka_unit_test_prestate_setup_teardown(fn, setup, teardown, (void *)&(o))

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_descriptor_limit, opts_default),
		T(test_descriptor_passed_at_limit, opts_default),
		T(test_open_until_refused, opts_default),
		T(test_never_reads_replies, opts_default),
		T(test_flood_of_silent_connections, opts_flood),
		T(test_slow_clients_closed, opts_flood),
	};

	return cmocka_run_group_tests_name("limits", tests, NULL, NULL);
}
