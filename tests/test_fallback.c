/* SPDX-License-Identifier: MIT */
/*
 * test_fallback.c - HOTMAP_FALLBACK=local (hm_options.fallback): the
 * daemon as an accelerator, never a dependency, against a real hotmapd
 * (tests/harness.h) that is missing, starts late, dies under SIGKILL in
 * the middle of reads, or refuses the caller's uid.
 *
 * With no daemon at all every call keeps its contract, byte for byte
 * against pread(2) on a descriptor of the test's own: hm_pread,
 * hm_read_batch, hm_view_range, hm_view_batch, hm_stat (as fstat),
 * hm_warm, hm_open by path and by descriptor; what only the daemon does
 * (HM_O_PATH, hm_ping, the administrative calls) fails with ENOTCONN.  A
 * daemon that starts later gets the client and its files (hm_clients
 * counts them).  A daemon killed while threads read leaves them reading,
 * with no error and no wrong byte.  A forked child reads, whether its
 * parent was local or connected.  Without the option, hm_connect and the
 * reads fail as they always did.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/hotmap_admin.h"
#include "tests/harness.h"
#include "tests/readers.h"

#define KiB (1024u)
#define MiB (1024u * 1024u)
#define SIZE_A		(3 * MiB + 17)
#define SIZE_B		(1 * MiB + 4099)
#define THREADS		4
#define READS_AFTER	300	/* each thread's reads after the kill */
#define MOVE_WAIT_MS	20000	/* a bound on a wait, never a verdict on speed */
#define NOBODY		65534

static const struct harness_opts opts_default = { .backend = NULL };
static const struct harness_opts opts_allow_root = {
	.extra = { "--allow-uid", "0", NULL },
};

static int
setup(void **state)
{
	unsetenv("HOTMAP_FALLBACK");
	unsetenv("HOTMAP_RECONNECT_MS");
	*state = harness_start(*state);
	return 0;
}

static int
teardown(void **state)
{
	struct harness *h = *state;

	harness_stop(h);	/* after harness_kill, only cleans up */
	harness_free_buffers();
	unsetenv("HOTMAP_FALLBACK");
	return 0;
}

static bool
is_local(hm_file *f)
{
	struct hm_stat st;

	assert_int_equal(hm_stat(f, &st), 0);
	return strncmp(st.direct_text, "local:", 6) == 0;
}

/* Reads of f checked against fd: ranges at the start, across the end,
 * past it, empty, long. */
static void
check_reads(hm_file *f, int fd, uint64_t size)
{
	static const uint64_t offs[] = { 0, 1, 4095, 4096, 65537, MiB + 3 };
	static const size_t lens[] = { 0, 1, 100, 4096, 70000, 600 * KiB };
	size_t i, j;

	for (i = 0; i < sizeof offs / sizeof offs[0]; i++)
		for (j = 0; j < sizeof lens / sizeof lens[0]; j++)
			harness_check_read(f, fd, offs[i], lens[j]);
	harness_check_read(f, fd, size - 10, 100);	/* short at the end */
	harness_check_read(f, fd, size, 10);		/* 0 at the end */
	harness_check_read(f, fd, size + 4096, 10);	/* 0 past it */
}

/* hm_read_batch across two files, checked against their fds. */
static void
check_batch(hm_client *c, hm_file *a, int fda, hm_file *b, int fdb)
{
	struct hm_io io[6];
	static uint8_t got[6][70000], want[70000];
	size_t i;

	for (i = 0; i < 6; i++) {
		io[i] = (struct hm_io){ .file = i % 2 ? b : a, .offset = i * 300000 + i,
					.len = 1000 + i * 13000, .buf = got[i] };
	}
	io[5].offset = SIZE_B - 50;	/* short at b's end */
	assert_int_equal(hm_read_batch(c, io, 6), 0);
	for (i = 0; i < 6; i++) {
		ssize_t n = pread(i % 2 ? fdb : fda, want, io[i].len, (off_t)io[i].offset);

		assert_true(n >= 0);
		assert_int_equal(io[i].result, n);
		assert_memory_equal(got[i], want, (size_t)n);
	}
}

/* hm_view_range and hm_view_batch, checked against the fds. */
static void
check_views(hm_client *c, hm_file *a, int fda, hm_file *b, int fdb)
{
	static uint8_t want[300 * KiB];
	struct hm_view v;
	struct hm_view_io io[3];
	ssize_t n;
	size_t i;

	assert_int_equal(hm_view_range(a, 12345, sizeof want, &v), 0);
	n = pread(fda, want, sizeof want, 12345);
	assert_int_equal((ssize_t)v.len, n);
	assert_memory_equal(v.data, want, (size_t)n);
	assert_int_equal(hm_view_check(&v), 0);
	hm_view_release(&v);
	assert_int_equal(hm_view_range(b, SIZE_B - 7, 100, &v), 0);
	assert_int_equal(v.len, 7);
	hm_view_release(&v);
	for (i = 0; i < 3; i++)
		io[i] = (struct hm_view_io){ .file = i == 1 ? b : a, .offset = i * 500000 + 3,
					     .len = 4096 * (i + 1) + 5 };
	assert_int_equal(hm_view_batch(c, io, 3), 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(io[i].error, 0);
		n = pread(i == 1 ? fdb : fda, want, io[i].len, (off_t)io[i].offset);
		assert_int_equal((ssize_t)io[i].view.len, n);
		assert_memory_equal(io[i].view.data, want, (size_t)n);
		hm_view_release(&io[i].view);
	}
}

static void
noop_client(const struct hm_client_info *info, void *arg)
{
	(void)info;
	(void)arg;
}

/* No daemon at all: every call, every byte. */
static void
test_no_daemon(void **state)
{
	struct harness *h = *state;
	char pa[PATH_MAX], pb[PATH_MAX], pc[PATH_MAX];
	struct hm_stat st;
	struct hm_read_stats rs = { .size = sizeof rs };
	struct hm_ping ping;
	struct stat sb;
	hm_client *c;
	hm_file *a, *b;
	int fda, fdb;

	harness_kill(h);	/* its socket stays: connect says ECONNREFUSED */
	harness_path(h, "a", pa);
	harness_path(h, "b", pb);
	harness_path(h, "missing", pc);
	harness_write_file(pa, SIZE_A, 1);
	harness_write_file(pb, SIZE_B, 2);
	fda = open(pa, O_RDONLY | O_CLOEXEC);
	fdb = open(pb, O_RDONLY | O_CLOEXEC);
	assert_true(fda >= 0 && fdb >= 0);

	c = harness_connect_local(h, HM_DEFAULT);
	a = hm_open(c, pa, 0);
	assert_non_null(a);
	b = hm_open_fd(c, fdb, HM_O_WARM);
	assert_non_null(b);
	check_reads(a, fda, SIZE_A);
	check_reads(b, fdb, SIZE_B);
	check_batch(c, a, fda, b, fdb);
	check_views(c, a, fda, b, fdb);

	/* hm_stat: fstat's, and where the file is read */
	assert_int_equal(hm_stat(a, &st), 0);
	assert_int_equal(fstat(fda, &sb), 0);
	assert_int_equal(st.size, SIZE_A);
	assert_int_equal(st.dev, (uint64_t)sb.st_dev);
	assert_int_equal(st.ino, (uint64_t)sb.st_ino);
	assert_int_equal(st.mode, sb.st_mode);
	assert_int_equal(st.mtime_ns, (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec);
	assert_int_equal(st.backend, HM_BACKEND_PREAD);
	assert_int_equal(st.direct, HM_DIRECT_NO);
	assert_true(is_local(a) && is_local(b));
	/* the file grows: hm_stat and the reads see it, as fstat and pread */
	harness_rewrite(pa, SIZE_A, 1000, 3);
	assert_int_equal(hm_stat(a, &st), 0);
	assert_int_equal(st.size, SIZE_A + 1000);
	harness_check_read(a, fda, SIZE_A - 500, 2000);

	/* hm_warm: the bytes of the range inside the file */
	assert_int_equal(hm_warm(b, 0, 4 * MiB), SIZE_B);
	assert_int_equal(hm_warm(b, SIZE_B - 10, 100), 10);
	assert_int_equal(hm_warm(b, SIZE_B + 1, 100), 0);

	/* counted as this process's own preads */
	assert_int_equal(hm_read_stats(a, &rs), 0);
	assert_int_equal(rs.daemon_reads, 0);
	assert_true(rs.pread_reads > 0);
	assert_int_equal(rs.direct, HM_DIRECT_NO);

	/* what needs the daemon: ENOTCONN; a missing file: ENOENT */
	errno = 0;
	assert_null(hm_open(c, pa, HM_O_PATH));
	assert_int_equal(errno, ENOTCONN);
	assert_int_equal(hm_ping(c, &ping), -1);
	assert_int_equal(errno, ENOTCONN);
	assert_int_equal(hm_clients(c, noop_client, NULL), -1);
	assert_int_equal(errno, ENOTCONN);
	assert_null(hm_open(c, pc, 0));
	assert_int_equal(errno, ENOENT);
	errno = 0;
	assert_null(hm_open_fd(c, 1000000, 0));
	assert_int_equal(errno, EBADF);

	assert_int_equal(hm_close(a), 0);
	assert_int_equal(hm_close(b), 0);
	hm_disconnect(c);
	/* the caller's descriptor is still the caller's */
	assert_true(fcntl(fdb, F_GETFD) >= 0);
	close(fda);
	close(fdb);
}

/* The environment: HOTMAP_FALLBACK=local, or a wrong value (EINVAL); an
 * hm_options of the size before fallback reads the environment. */
static void
test_env_and_old_options(void **state)
{
	struct harness *h = *state;
	struct hm_options o = HM_OPTIONS_INIT;
	hm_client *c;

	harness_kill(h);
	o.size = offsetof(struct hm_options, fallback);	/* built before it */
	errno = 0;
	assert_null(hm_connect_opts(h->sock, &o));
	assert_int_equal(errno, ECONNREFUSED);
	setenv("HOTMAP_FALLBACK", "local", 1);
	c = hm_connect_opts(h->sock, &o);
	assert_non_null(c);
	hm_disconnect(c);
	c = hm_connect(h->sock);
	assert_non_null(c);
	hm_disconnect(c);
	/* the option over the environment */
	o = (struct hm_options)HM_OPTIONS_INIT;
	o.fallback = HM_FALLBACK_NONE;
	assert_null(hm_connect_opts(h->sock, &o));
	assert_int_equal(errno, ECONNREFUSED);
	o.fallback = 2;
	assert_null(hm_connect_opts(h->sock, &o));
	assert_int_equal(errno, EINVAL);
	setenv("HOTMAP_FALLBACK", "lcoal", 1);
	assert_null(hm_connect(h->sock));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(hm_last_error(), "HOTMAP_FALLBACK"));
}

/* Without the option: hm_connect fails with no daemon, and a client
 * whose daemon is killed fails its reads, as before. */
static void
test_without_fallback(void **state)
{
	struct harness *h = *state;
	char pa[PATH_MAX];
	uint8_t buf[100];
	hm_client *c;
	hm_file *a;

	harness_path(h, "a", pa);
	harness_write_file(pa, SIZE_A, 1);
	c = harness_connect(h);
	a = hm_open(c, pa, HM_O_PREAD);
	assert_non_null(a);
	assert_int_equal(hm_pread(a, buf, sizeof buf, 0), sizeof buf);
	harness_kill(h);
	assert_int_equal(hm_pread(a, buf, sizeof buf, 0), -1);
	assert_null(hm_open(c, pa, 0));
	hm_disconnect(c);
	errno = 0;
	assert_null(hm_connect(h->sock));
	assert_int_equal(errno, ECONNREFUSED);
}

/* Whether the daemon lists a client of this process with handles files
 * open. */
struct find_client {
	unsigned handles;
	bool found;
};

static void
find_client_cb(const struct hm_client_info *info, void *arg)
{
	struct find_client *fc = arg;

	if (info->pid == (uint32_t)getpid() && info->handles == fc->handles)
		fc->found = true;
}

/* A daemon that starts in the middle of a run gets the client and its
 * files; the reads stay right throughout. */
static void
test_daemon_starts(void **state)
{
	struct harness *h = *state;
	char pa[PATH_MAX], pb[PATH_MAX];
	struct find_client fc = { .handles = 3 };
	char pg[PATH_MAX];
	hm_file *g;
	int fdg;
	int64_t deadline;
	hm_client *c, *admin;
	hm_file *a, *b;
	int fda, fdb;
	unsigned rounds = 0;

	harness_kill(h);
	harness_path(h, "a", pa);
	harness_path(h, "b", pb);
	harness_write_file(pa, SIZE_A, 1);
	harness_write_file(pb, SIZE_B, 2);
	fda = open(pa, O_RDONLY | O_CLOEXEC);
	fdb = open(pb, O_RDONLY | O_CLOEXEC);
	c = harness_connect_local(h, HM_DEFAULT);
	a = hm_open(c, pa, 0);
	b = hm_open_fd(c, fdb, 0);
	assert_true(a != NULL && b != NULL);
	check_reads(a, fda, SIZE_A);
	assert_true(is_local(a));
	/* deleted while local: the daemon gets the file read here */
	harness_path(h, "gone", pg);
	harness_write_file(pg, SIZE_B, 9);
	fdg = open(pg, O_RDONLY | O_CLOEXEC);
	g = hm_open(c, pg, 0);
	assert_non_null(g);
	assert_int_equal(unlink(pg), 0);
	harness_check_read(g, fdg, 100, 5000);
	harness_restart(h);
	deadline = harness_now_ms() + MOVE_WAIT_MS;
	while (is_local(a) || is_local(b)) {
		if (harness_now_ms() > deadline)
			fail_msg("the files did not move to the daemon in %d ms", MOVE_WAIT_MS);
		harness_check_read(a, fda, rounds * 4099 % SIZE_A, 5000);
		harness_check_read(b, fdb, rounds * 7001 % SIZE_B, 5000);
		rounds++;
		harness_sleep_ms(5);
	}
	admin = harness_connect(h);
	assert_int_equal(hm_clients(admin, find_client_cb, &fc), 0);
	assert_true(fc.found);
	hm_disconnect(admin);
	assert_false(is_local(g));
	check_reads(g, fdg, SIZE_B);
	assert_int_equal(hm_close(g), 0);
	close(fdg);
	fc.handles = 2;
	check_reads(a, fda, SIZE_A);
	check_reads(b, fdb, SIZE_B);
	check_batch(c, a, fda, b, fdb);
	check_views(c, a, fda, b, fdb);
	/* a daemon restarted before the client noticed: the files go to
	 * the new one at the next call, which reads right */
	harness_kill(h);
	harness_restart(h);
	check_reads(a, fda, SIZE_A);
	check_batch(c, a, fda, b, fdb);
	check_views(c, a, fda, b, fdb);
	assert_false(is_local(a));
	assert_false(is_local(b));
	fc.found = false;
	admin = harness_connect(h);
	assert_int_equal(hm_clients(admin, find_client_cb, &fc), 0);
	assert_true(fc.found);
	hm_disconnect(admin);
	hm_disconnect(c);
	close(fda);
	close(fdb);
}

/* --- SIGKILL while threads read ------------------------------------------ */

static void
wait_reads(struct reader *r, unsigned n, unsigned want)
{
	int64_t deadline = harness_now_ms() + MOVE_WAIT_MS * 3;
	unsigned i;

	for (i = 0; i < n; i++)
		while (atomic_load(&r[i].reads) < want && !r[i].failed) {
			if (harness_now_ms() > deadline)
				fail_msg("reader %u made %u reads", i, atomic_load(&r[i].reads));
			harness_sleep_ms(2);
		}
}

static void
kill_while_reading(struct harness *h, int direct)
{
	static struct reader r[THREADS];
	atomic_bool stop = false;
	char pa[PATH_MAX];
	unsigned i, before[THREADS];
	hm_client *c;
	hm_file *f, *g;
	struct hm_view v;
	uint8_t *ref;
	int fd;

	harness_path(h, "a", pa);
	harness_write_file(pa, SIZE_A, 7);
	fd = open(pa, O_RDONLY | O_CLOEXEC);
	c = harness_connect_local(h, direct);
	f = hm_open(c, pa, 0);
	assert_non_null(f);
	assert_false(is_local(f));
	assert_int_equal(hm_view_range(f, 4096, 100000, &v), 0);
	for (i = 0; i < THREADS; i++) {
		memset(&r[i], 0, sizeof r[i]);
		r[i] = (struct reader){ .c = c, .f = f, .fd = fd, .size = SIZE_A, .id = i,
					.ways = 3, .stop = &stop };
		assert_int_equal(pthread_create(&r[i].t, NULL, reader_main, &r[i]), 0);
	}
	wait_reads(r, THREADS, 50);
	harness_kill(h);
	for (i = 0; i < THREADS; i++)
		before[i] = atomic_load(&r[i].reads);
	for (i = 0; i < THREADS; i++)
		wait_reads(&r[i], 1, before[i] + READS_AFTER / 2);
	/* reads from the mapping need no daemon and notice nothing: an
	 * open does, and the file moves while the threads read */
	g = hm_open(c, pa, 0);
	assert_non_null(g);
	harness_check_read(g, fd, 4097, 100000);
	for (i = 0; i < THREADS; i++)
		wait_reads(&r[i], 1, before[i] + READS_AFTER);
	readers_stop(r, THREADS, &stop);
	assert_true(is_local(f));
	check_reads(f, fd, SIZE_A);
	/* a view taken before keeps its bytes; one into the mapping (its
	 * grant given up) says so */
	ref = malloc(v.len);
	assert_int_equal(pread(fd, ref, v.len, 4096), (ssize_t)v.len);
	assert_memory_equal(v.data, ref, v.len);
	free(ref);
	if (direct) {
		assert_int_equal(hm_view_check(&v), -1);
		assert_int_equal(errno, ESTALE);
	} else {
		assert_int_equal(hm_view_check(&v), 0);
	}
	hm_view_release(&v);
	hm_disconnect(c);
	close(fd);
}

static void
test_sigkill_direct(void **state)
{
	kill_while_reading(*state, 1);
}

static void
test_sigkill_through_daemon(void **state)
{
	kill_while_reading(*state, 0);
}

/* --- a daemon that refuses the uid --------------------------------------- */

/* In a child as nobody: 0 when the refused client reads locally, byte for
 * byte; 100 + errno when hm_connect failed. */
static int
nobody_reads(const struct harness *h, const char *path, int fallback)
{
	struct hm_options o = HM_OPTIONS_INIT;
	hm_client *c;
	hm_file *f;
	int fd, status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(60);
		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
			_exit(99);
		o.fallback = fallback;
		c = hm_connect_opts(h->sock, &o);
		if (c == NULL)
			_exit(100 + errno);
		f = hm_open(c, path, 0);
		fd = open(path, O_RDONLY);
		if (f == NULL || fd < 0)
			_exit(2);
		{
			static uint8_t got[70000], want[70000];
			uint64_t off;

			for (off = 0; off < SIZE_B + 70000; off += 65537) {
				ssize_t n = hm_pread(f, got, sizeof got, off);

				if (n != pread(fd, want, sizeof want, (off_t)off) ||
				    (n > 0 && memcmp(got, want, (size_t)n) != 0))
					_exit(3);
			}
		}
		if (!is_local(f))
			_exit(4);
		hm_disconnect(c);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_not_equal(WEXITSTATUS(status), 99);
	return WEXITSTATUS(status);
}

static void
test_refused_uid(void **state)
{
	struct harness *h = *state;
	char pb[PATH_MAX];

	if (geteuid() != 0)
		skip();	/* needs root: a second user to connect as */
	assert_int_equal(chmod(h->dir, 0755), 0);
	harness_path(h, "b", pb);
	harness_write_file(pb, SIZE_B, 5);
	/* without the option: refused, as before */
	assert_int_equal(nobody_reads(h, pb, HM_FALLBACK_NONE), 100 + EACCES);
	assert_int_equal(nobody_reads(h, pb, HM_FALLBACK_LOCAL), 0);
}

/* --- fork ---------------------------------------------------------------- */

/* A child of fork reads the inherited files, byte for byte; exit status
 * 0, or 1 with the reason on stderr. */
static void
fork_reads(hm_client *c, hm_file *a, int fda, hm_file *b, int fdb, bool child_local)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		static uint8_t buf[100 * KiB + HARNESS_SLACK], ref[100 * KiB + HARNESS_SLACK];
		char why[256];
		uint64_t off;
		struct hm_io io = { .file = b, .offset = 5, .len = 1000, .buf = buf };

		alarm(60);
		for (off = 0; off < SIZE_A + 1000; off += 99999)
			if (harness_compare_read(a, fda, off, 100 * KiB, buf, ref, NULL, why,
						 sizeof why) < 0 ||
			    harness_compare_read(b, fdb, off, 100 * KiB, buf, ref, NULL, why,
						 sizeof why) < 0) {
				fprintf(stderr, "# child: %s\n", why);
				_exit(1);
			}
		if (hm_read_batch(c, &io, 1) < 0 || io.result != 1000)
			_exit(2);
		if (is_local(a) != child_local)
			_exit(3);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void
test_fork(void **state)
{
	struct harness *h = *state;
	char pa[PATH_MAX], pb[PATH_MAX];
	hm_client *c;
	hm_file *a, *b;
	int fda, fdb;

	harness_path(h, "a", pa);
	harness_path(h, "b", pb);
	harness_write_file(pa, SIZE_A, 1);
	harness_write_file(pb, SIZE_B, 2);
	fda = open(pa, O_RDONLY | O_CLOEXEC);
	fdb = open(pb, O_RDONLY | O_CLOEXEC);
	c = harness_connect_local(h, HM_DEFAULT);
	a = hm_open(c, pa, 0);
	b = hm_open_fd(c, fdb, 0);
	assert_true(a != NULL && b != NULL);
	/* connected: the child connects afresh */
	assert_false(is_local(a));
	fork_reads(c, a, fda, b, fdb, false);
	harness_check_read(a, fda, 1000, 5000);
	/* connected, the daemon killed unnoticed: the child goes local */
	harness_kill(h);
	fork_reads(c, a, fda, b, fdb, true);
	/* local: the child reads on its copies of the descriptors */
	harness_check_read(a, fda, 1000, 5000);
	assert_true(is_local(a));
	fork_reads(c, a, fda, b, fdb, true);
	harness_check_read(a, fda, 1000, 5000);
	harness_check_read(b, fdb, 1000, 5000);
	hm_disconnect(c);
	close(fda);
	close(fdb);
}

#define T(f, opts) cmocka_unit_test_prestate_setup_teardown(f, setup, teardown, (void *)&opts)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_no_daemon, opts_default),
		T(test_env_and_old_options, opts_default),
		T(test_without_fallback, opts_default),
		T(test_daemon_starts, opts_default),
		T(test_sigkill_direct, opts_default),
		T(test_sigkill_through_daemon, opts_default),
		T(test_refused_uid, opts_allow_root),
		T(test_fork, opts_default),
	};

	alarm(600);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
