/* SPDX-License-Identifier: MIT */
/*
 * test_pipeline.c - HOTMAP_FALLBACK=local's pipelined connect and open
 * (client/pend.c) against a real hotmapd (tests/harness.h): hm_connect and
 * hm_open do not wait for the daemon's answers, the file is read here
 * until they are in, then moves to the direct tier.  The daemon is held
 * with SIGSTOP so that its answers come only when the test says: while
 * it is stopped, hm_connect and hm_open return and every byte read is
 * right (a library that waited for HELLO's answer would hang there, and
 * the test's alarm would end it).  Also: threads reading while the
 * answers arrive, a child forked before they did, a daemon that dies
 * before it answers (and one started again), a daemon that refuses the
 * uid, and a socket that accepts and never answers.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/hotmap_admin.h"
#include "tests/harness.h"
#include "tests/readers.h"

#define KiB (1024u)
#define MiB (1024u * 1024u)
#define SIZE_A		(3 * MiB + 17)
#define THREADS		4
#define MOVE_WAIT_MS	20000	/* a bound on a wait, never a verdict on speed */
#define WATCHDOG_S	60	/* a library that waits for a stopped daemon hangs */
#define NOBODY		65534

static const struct harness_opts opts_default = { .backend = NULL };
static const struct harness_opts opts_allow_root = {
	.extra = { "--allow-uid", "0", NULL },
};

static int
setup(void **state)
{
	unsetenv("HOTMAP_FALLBACK");
	*state = harness_start(*state);
	alarm(WATCHDOG_S);
	return 0;
}

static int
teardown(void **state)
{
	struct harness *h = *state;

	alarm(0);
	if (h->pid > 0)
		kill(h->pid, SIGCONT);
	harness_stop(h);
	harness_free_buffers();
	return 0;
}

static hm_client *
connect_local(const char *sock)
{
	struct hm_options o = HM_OPTIONS_INIT;
	hm_client *c;

	o.fallback = HM_FALLBACK_LOCAL;
	o.direct = 1;	/* the harness turns it off by default */
	c = hm_connect_opts(sock, &o);
	if (c == NULL)
		fail_msg("hm_connect_opts(fallback local): %s", strerror(errno));
	return c;
}

/* Where f is read now, as hm_read_stats says (it asks nobody). */
static int
where(hm_file *f)
{
	struct hm_read_stats st = { .size = sizeof st };

	assert_int_equal(hm_read_stats(f, &st), 0);
	return st.direct;
}

static void
check_reads(hm_file *f, int fd, uint64_t size)
{
	static const uint64_t offs[] = { 0, 1, 4095, 65537, MiB + 3 };
	static const size_t lens[] = { 0, 1, 4096, 70000, 600 * KiB };
	size_t i, j;

	for (i = 0; i < sizeof offs / sizeof offs[0]; i++)
		for (j = 0; j < sizeof lens / sizeof lens[0]; j++)
			harness_check_read(f, fd, offs[i], lens[j]);
	harness_check_read(f, fd, size - 10, 100);
	harness_check_read(f, fd, size + 4096, 10);
}

/* Reads of f, each checked, until the file is read from its mapping. */
static void
read_until_direct(hm_file *f, int fd)
{
	int64_t deadline = harness_now_ms() + MOVE_WAIT_MS;
	unsigned rounds = 0;

	while (where(f) != HM_DIRECT_YES) {
		if (harness_now_ms() > deadline)
			fail_msg("the file did not move to the direct tier in %d ms", MOVE_WAIT_MS);
		harness_check_read(f, fd, rounds * 4099u % SIZE_A, 5000);
		rounds++;
		harness_sleep_ms(1);
	}
}

/* A file a, opened by the test too (its descriptor returned). */
static int
make_file(const struct harness *h, char *path, uint64_t seed)
{
	int fd;

	harness_path(h, "a", path);
	harness_write_file(path, SIZE_A, seed);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

/* connect + open while the daemon cannot answer; the file is read here,
 * then moves to the direct tier once the answers are in, and hm_stat
 * says so. */
static void
test_pipelined_open(void **state)
{
	struct harness *h = *state;
	struct hm_read_stats rs = { .size = sizeof rs };
	static uint8_t got[2][6000], want[6000];
	struct hm_io io[2];
	struct hm_view v;
	struct hm_stat st;
	char pa[PATH_MAX];
	hm_client *c;
	hm_file *f, *g;
	int fd = make_file(h, pa, 3);

	assert_int_equal(kill(h->pid, SIGSTOP), 0);
	c = connect_local(h->sock);
	f = hm_open(c, pa, 0);
	assert_non_null(f);
	check_reads(f, fd, SIZE_A);
	assert_int_equal(hm_read_stats(f, &rs), 0);
	assert_true(rs.pread_reads > 0);
	assert_int_equal(rs.daemon_reads, 0);
	assert_int_not_equal(rs.direct, HM_DIRECT_YES);
	assert_int_equal(kill(h->pid, SIGCONT), 0);
	read_until_direct(f, fd);
	assert_int_equal(hm_stat(f, &st), 0);
	assert_int_equal(st.direct, HM_DIRECT_YES);
	assert_int_equal(st.size, SIZE_A);
	check_reads(f, fd, SIZE_A);
	assert_int_equal(hm_close(f), 0);
	/* connected: a file opened now does not wait either, by path or by
	 * descriptor, and moves once its answer is in */
	assert_int_equal(kill(h->pid, SIGSTOP), 0);
	f = hm_open(c, pa, 0);
	g = hm_open_fd(c, fd, 0);
	assert_true(f != NULL && g != NULL);
	check_reads(f, fd, SIZE_A);
	check_reads(g, fd, SIZE_A);
	assert_int_not_equal(where(f), HM_DIRECT_YES);
	io[0] = (struct hm_io){ .file = f, .offset = 777, .len = 5000, .buf = got[0] };
	io[1] = (struct hm_io){ .file = g, .offset = 777, .len = 6000, .buf = got[1] };
	assert_int_equal(hm_read_batch(c, io, 2), 0);
	assert_int_equal(io[0].result, 5000);
	assert_int_equal(io[1].result, 6000);
	assert_int_equal(pread(fd, want, 6000, 777), 6000);
	assert_memory_equal(got[0], want, 5000);
	assert_memory_equal(got[1], want, 6000);
	/* a view, in the region of the connected client */
	assert_int_equal(hm_view_range(g, 777, 6000, &v), 0);
	assert_int_equal(v.len, 6000);
	assert_memory_equal(v.data, want, 6000);
	hm_view_release(&v);
	assert_int_equal(kill(h->pid, SIGCONT), 0);
	read_until_direct(f, fd);
	read_until_direct(g, fd);
	check_reads(f, fd, SIZE_A);
	check_reads(g, fd, SIZE_A);
	hm_disconnect(c);
	close(fd);
}

/* hm_stat needs the daemon: it waits for the answers, and a file closed
 * before they came does not keep them from moving the others. */
static void
test_stat_waits(void **state)
{
	struct harness *h = *state;
	struct hm_stat st;
	char pa[PATH_MAX], pb[PATH_MAX];
	hm_client *c;
	hm_file *f, *g;
	int fd = make_file(h, pa, 4), fdb;

	harness_path(h, "b", pb);
	harness_write_file(pb, SIZE_A, 14);
	fdb = open(pb, O_RDONLY | O_CLOEXEC);
	assert_true(fdb >= 0);
	assert_int_equal(kill(h->pid, SIGSTOP), 0);
	c = connect_local(h->sock);
	g = hm_open(c, pb, 0);
	f = hm_open_fd(c, fd, 0);
	assert_true(f != NULL && g != NULL);
	harness_check_read(g, fdb, 100, 5000);
	assert_int_equal(hm_close(g), 0);	/* its OPEN still in flight */
	harness_check_read(f, fd, 100, 5000);
	assert_int_equal(kill(h->pid, SIGCONT), 0);
	assert_int_equal(hm_stat(f, &st), 0);
	assert_int_not_equal(strncmp(st.direct_text, "local:", 6), 0);
	assert_int_equal(st.direct, HM_DIRECT_YES);
	check_reads(f, fd, SIZE_A);
	hm_disconnect(c);
	close(fd);
	close(fdb);
}

/* Threads read while the answers arrive and the file moves. */
static void
test_threads_while_answers_come(void **state)
{
	struct harness *h = *state;
	static struct reader r[THREADS];
	atomic_bool stop = false;
	char pa[PATH_MAX];
	unsigned i, moved_at[THREADS];
	int64_t deadline;
	hm_client *c;
	hm_file *f;
	int fd = make_file(h, pa, 5);

	assert_int_equal(kill(h->pid, SIGSTOP), 0);
	c = connect_local(h->sock);
	f = hm_open(c, pa, 0);
	assert_non_null(f);
	for (i = 0; i < THREADS; i++) {
		r[i] = (struct reader){ .c = c, .f = f, .fd = fd, .size = SIZE_A, .id = i,
					.ways = 2, .stop = &stop };
		assert_int_equal(pthread_create(&r[i].t, NULL, reader_main, &r[i]), 0);
	}
	harness_sleep_ms(50);
	assert_int_equal(kill(h->pid, SIGCONT), 0);
	deadline = harness_now_ms() + MOVE_WAIT_MS;
	while (where(f) != HM_DIRECT_YES && harness_now_ms() < deadline)
		harness_sleep_ms(2);
	assert_int_equal(where(f), HM_DIRECT_YES);
	for (i = 0; i < THREADS; i++)
		moved_at[i] = atomic_load(&r[i].reads);
	for (i = 0; i < THREADS; i++)
		while (atomic_load(&r[i].reads) < moved_at[i] + 50 && !r[i].failed &&
		       harness_now_ms() < deadline + MOVE_WAIT_MS)
			harness_sleep_ms(2);
	readers_stop(r, THREADS, &stop);
	hm_disconnect(c);
	close(fd);
}

/* A child forked before the answers came reads right, and moves to the
 * daemon on a connection of its own. */
static void
test_fork_before_answers(void **state)
{
	struct harness *h = *state;
	char pa[PATH_MAX];
	hm_client *c;
	hm_file *f;
	int fd = make_file(h, pa, 6), status, pipefd[2];
	pid_t pid;

	assert_int_equal(kill(h->pid, SIGSTOP), 0);
	c = connect_local(h->sock);
	f = hm_open(c, pa, 0);
	assert_non_null(f);
	harness_check_read(f, fd, 7, 9000);
	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		static uint8_t buf[100 * KiB + HARNESS_SLACK], ref[100 * KiB + HARNESS_SLACK];
		struct hm_stat st;
		char why[256], go;
		uint64_t off;

		alarm(WATCHDOG_S);
		for (off = 0; off < SIZE_A + 1000; off += 99999)
			if (harness_compare_read(f, fd, off, 100 * KiB, buf, ref, NULL, why,
						 sizeof why) < 0)
				_exit(1);
		if (read(pipefd[0], &go, 1) != 1)	/* the daemon runs again */
			_exit(2);
		if (hm_stat(f, &st) < 0 || strncmp(st.direct_text, "local:", 6) == 0)
			_exit(3);
		for (off = 0; off < SIZE_A + 1000; off += 99999)
			if (harness_compare_read(f, fd, off, 100 * KiB, buf, ref, NULL, why,
						 sizeof why) < 0)
				_exit(4);
		_exit(0);
	}
	harness_check_read(f, fd, 100, 5000);
	assert_int_equal(kill(h->pid, SIGCONT), 0);
	assert_int_equal(write(pipefd[1], "g", 1), 1);
	read_until_direct(f, fd);
	check_reads(f, fd, SIZE_A);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(pipefd[0]);
	close(pipefd[1]);
	hm_disconnect(c);
	close(fd);
}

/* The daemon dies before it answers (killed while stopped): the reads
 * stay right, here; a daemon started again gets the file. */
static void
test_daemon_dies_before_answers(void **state)
{
	struct harness *h = *state;
	char pa[PATH_MAX];
	hm_client *c;
	hm_file *f;
	int fd = make_file(h, pa, 9);

	assert_int_equal(kill(h->pid, SIGSTOP), 0);
	c = connect_local(h->sock);
	f = hm_open(c, pa, 0);
	assert_non_null(f);
	harness_check_read(f, fd, 4096, 70000);
	harness_kill(h);
	check_reads(f, fd, SIZE_A);
	assert_int_not_equal(where(f), HM_DIRECT_YES);
	harness_restart(h);
	read_until_direct(f, fd);
	check_reads(f, fd, SIZE_A);
	hm_disconnect(c);
	close(fd);
}

/* As nobody, while the daemon is stopped: connect, open, read; then the
 * daemon refuses the uid and the client stays local.  The child's exit
 * status: 0, or where it failed. */
static void
test_refused_uid_pipelined(void **state)
{
	struct harness *h = *state;
	char pa[PATH_MAX];
	int fd, status, ready[2], go[2];
	struct pollfd p;
	pid_t pid;
	char b;

	if (geteuid() != 0)
		skip();	/* needs root: a second user to connect as */
	assert_int_equal(chmod(h->dir, 0755), 0);
	fd = make_file(h, pa, 7);
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(go), 0);
	assert_int_equal(kill(h->pid, SIGSTOP), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		static uint8_t got[70000], want[70000];
		struct hm_options o = HM_OPTIONS_INIT;
		struct hm_stat st;
		hm_client *c;
		hm_file *f;
		uint64_t off;

		alarm(WATCHDOG_S);
		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
			_exit(99);
		o.fallback = HM_FALLBACK_LOCAL;
		o.direct = 1;
		c = hm_connect_opts(h->sock, &o);
		f = c != NULL ? hm_open(c, pa, 0) : NULL;
		if (f == NULL)
			_exit(2);
		for (off = 0; off < SIZE_A + 70000; off += 65537) {
			ssize_t n = hm_pread(f, got, sizeof got, off);

			if (n != pread(fd, want, sizeof want, (off_t)off) ||
			    (n > 0 && memcmp(got, want, (size_t)n) != 0))
				_exit(3);
		}
		if (write(ready[1], "r", 1) != 1 || read(go[0], &b, 1) != 1)
			_exit(4);
		/* the refusal is read: local, and still right */
		if (hm_stat(f, &st) < 0 || strncmp(st.direct_text, "local:", 6) != 0)
			_exit(5);
		for (off = 0; off < SIZE_A + 70000; off += 65537) {
			ssize_t n = hm_pread(f, got, sizeof got, off);

			if (n != pread(fd, want, sizeof want, (off_t)off) ||
			    (n > 0 && memcmp(got, want, (size_t)n) != 0))
				_exit(6);
		}
		hm_disconnect(c);
		_exit(0);
	}
	/* the child connected and read while the daemon was stopped */
	p = (struct pollfd){ .fd = ready[0], .events = POLLIN };
	assert_int_equal(poll(&p, 1, (WATCHDOG_S - 10) * 1000), 1);
	assert_int_equal(read(ready[0], &b, 1), 1);
	assert_int_equal(kill(h->pid, SIGCONT), 0);
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(go[1]);
	close(fd);
}

/* A socket that accepts and never answers: hm_connect and hm_open return,
 * the reads are right, hm_stat gives up waiting and says local. */
struct silent {
	int lfd;
	int conns[16];
	atomic_int n;
};

static void *
silent_main(void *arg)
{
	struct silent *s = arg;

	for (;;) {
		int fd = accept(s->lfd, NULL, NULL);

		if (fd < 0)
			return NULL;
		if (atomic_load(&s->n) < 16)
			s->conns[atomic_fetch_add(&s->n, 1)] = fd;	/* held, never read */
		else
			close(fd);
	}
}

static void
test_silent_socket(void **state)
{
	struct harness *h = *state;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	static struct silent s;
	struct hm_stat st;
	struct hm_ping ping;
	char pa[PATH_MAX];
	pthread_t t;
	hm_client *c;
	hm_file *f;
	int fd = make_file(h, pa, 8), i;

	harness_path(h, "silent.sock", sa.sun_path);
	s.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s.lfd >= 0);
	assert_int_equal(bind(s.lfd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(s.lfd, 16), 0);
	atomic_store(&s.n, 0);
	assert_int_equal(pthread_create(&t, NULL, silent_main, &s), 0);
	c = connect_local(sa.sun_path);
	f = hm_open(c, pa, 0);
	assert_non_null(f);
	check_reads(f, fd, SIZE_A);
	assert_int_equal(hm_stat(f, &st), 0);	/* waits, up to its bound */
	assert_int_equal(strncmp(st.direct_text, "local:", 6), 0);
	assert_int_equal(st.size, SIZE_A);
	check_reads(f, fd, SIZE_A);
	assert_int_equal(hm_ping(c, &ping), -1);
	assert_int_equal(errno, ENOTCONN);
	assert_int_equal(hm_close(f), 0);
	hm_disconnect(c);
	shutdown(s.lfd, SHUT_RDWR);
	close(s.lfd);
	pthread_join(t, NULL);
	for (i = 0; i < atomic_load(&s.n); i++)
		close(s.conns[i]);
	close(fd);
}

#define T(f, opts) cmocka_unit_test_prestate_setup_teardown(f, setup, teardown, (void *)&opts)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_pipelined_open, opts_default),
		T(test_stat_waits, opts_default),
		T(test_threads_while_answers_come, opts_default),
		T(test_fork_before_answers, opts_default),
		T(test_daemon_dies_before_answers, opts_default),
		T(test_refused_uid_pipelined, opts_allow_root),
		T(test_silent_socket, opts_default),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
