/* SPDX-License-Identifier: MIT */
/*
 * test_fork.c - a libhotmap client inherited across fork(2), as PyTorch's
 * DataLoader does with its workers, against a real hotmapd
 * (tests/harness.h).
 *
 * A parent holds a client with files open by path and by descriptor and a
 * view in its shared region, and a thread of its own reads through the
 * client while it forks, so that the client's lock is often held at the
 * moment of the fork.  Each child reads the inherited files with
 * hm_pread, hm_read_batch and hm_view_range, byte for byte as pread(2),
 * and checks that the view it inherited keeps the bytes it had at the
 * fork, although the parent has released it and reused its place in the
 * region by then.  The parent's reads, during and after, stay right.
 * Every child runs under alarm(2), so that a hang fails the test instead
 * of stalling it.  Once with polling (the ring) and once without.  And
 * fork(2) itself never waits for the daemon: not for a reconnect in
 * flight, nor for calls of every kind waiting on a stopped daemon.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/harness.h"

#define KiB (1024u)
#define MiB (1024u * 1024u)

#define CHILDREN	20
#define CHILD_ALARM_S	30	/* a child that hangs dies of SIGALRM */
#define TEST_ALARM_S	120	/* and so does a parent that hangs */
#define VIEW_LEN	(100 * KiB + 3)
#define VIEW_OFF	(1 * MiB + 5)
#define SIZE_A		(3 * MiB + 17)
#define SIZE_B		(2 * MiB + 1001)
#define BUF_MAX		(600 * KiB)

static const struct harness_opts opts_default = { .backend = NULL };

static int
setup(void **state)
{
	unsetenv("HOTMAP_SHM_SIZE");
	unsetenv("HOTMAP_SHM_THRESHOLD");
	unsetenv("HOTMAP_RECONNECT_MS");
	*state = harness_start(*state);
	return 0;
}

static int
teardown(void **state)
{
	unsetenv("HOTMAP_POLL");
	harness_free_buffers();
	harness_stop(*state);
	return 0;
}

/* What the parent has open when it forks. */
struct scene {
	struct harness *h;
	char pa[PATH_MAX], pb[PATH_MAX], pc[PATH_MAX];
	hm_client *c;
	hm_file *fa;		/* hm_open */
	hm_file *fb;		/* hm_open_fd(fdb) */
	int fda, fdb;		/* reference descriptors; fdb also fb's own */
	struct hm_view v;	/* of fa at VIEW_OFF, taken before the forks */
	uint8_t *vref;		/* its bytes, as pread gave them */
	/* The children's buffers, allocated before the forks, as the
	 * reader's are before its thread.  glibc's malloc is safe across
	 * fork; AddressSanitizer's (GCC 12) is not: its blocks past 128 KiB
	 * share one lock, and a child forked while the reader allocated its
	 * 600 KiB spun for ever on it, before its alarm was set, holding
	 * make check's pipe.  No thread allocates such a block in the fork
	 * window now but the library's view fallback (a region full); and
	 * a child's alarm is its first call, so a hang would fail, not
	 * hang. */
	uint8_t *cbuf, *cref;
};

/* The parent's reading thread: reads while the children fork and run. */
struct reader {
	struct scene *s;
	uint8_t *buf, *ref;	/* allocated before the thread (see scene) */
	atomic_bool stop;
	pthread_mutex_t pause;	/* held by the parent while it reuses the region */
	uint64_t reads;
	char why[256];		/* the first failure, "" while none */
};

/* Reads [off, off + len) of f through hm_pread, compared with pread(fd):
 * 0, or -1 with why. */
static int
check_pread(hm_file *f, int fd, uint64_t off, size_t len, uint8_t *buf, uint8_t *ref,
	    char *why, size_t whylen)
{
	return harness_compare_read(f, fd, off, len, buf, ref, NULL, why, whylen);
}

/* The same through a view, released again. */
static int
check_view(hm_file *f, int fd, uint64_t off, size_t len, uint8_t *ref, char *why, size_t whylen)
{
	struct hm_view v;
	ssize_t want = pread(fd, ref, len, (off_t)off);

	if (hm_view_range(f, off, len, &v) < 0) {
		snprintf(why, whylen, "hm_view_range(%llu, %zu): %s", (unsigned long long)off,
			 len, strerror(errno));
		return -1;
	}
	if (want < 0 || (ssize_t)v.len != want || memcmp(v.data, ref, v.len) != 0) {
		snprintf(why, whylen, "view of %zu at %llu: %zu bytes, pread %zd, bytes %s", len,
			 (unsigned long long)off, v.len, want,
			 (ssize_t)v.len == want ? "differ" : "-");
		hm_view_release(&v);
		return -1;
	}
	hm_view_release(&v);
	return 0;
}

static void *
reader_main(void *arg)
{
	struct reader *r = arg;
	struct scene *s = r->s;
	uint8_t *buf = r->buf, *ref = r->ref;
	uint64_t rng = 0x5eed;

	while (!atomic_load(&r->stop)) {
		static const size_t lens[] = { 100, 4096, 70000, 300 * KiB };
		size_t len = lens[harness_rand(&rng) % 4];
		uint64_t off = harness_rand(&rng) % SIZE_A;
		int rc;

		pthread_mutex_lock(&r->pause);
		rc = check_pread(s->fa, s->fda, off, len, buf, ref, r->why, sizeof r->why);
		if (rc == 0)
			rc = check_view(s->fb, s->fdb, off % SIZE_B, len, ref, r->why, sizeof r->why);
		pthread_mutex_unlock(&r->pause);
		if (rc < 0)
			break;
		r->reads++;
	}
	return NULL;
}

/*
 * What a child checks, in order; its exit status is the step that failed
 * (0: all passed).  A message goes to stderr first.
 */
enum child_step {
	STEP_GO = 1,		/* waiting for the parent's go */
	STEP_INHERITED_VIEW,	/* the view taken before the fork */
	STEP_PREAD,
	STEP_BATCH,
	STEP_VIEW,
	STEP_STAT,
	STEP_OPEN,		/* a file opened in the child */
	STEP_GRANDCHILD,	/* a child of the child, the same checks */
	STEP_INHERITED_VIEW_AGAIN,
	STEP_CLOSE,
};

static void
child_fail(unsigned idx, enum child_step step, const char *why)
{
	fprintf(stderr, "# child %u (pid %ld), step %d: %s\n", idx, (long)getpid(), (int)step,
		why);
	_exit((int)step);
}

/* The reads of one (grand)child on the inherited client. */
static void
child_reads(struct scene *s, unsigned idx, uint8_t *buf, uint8_t *ref)
{
	static const size_t lens[] = { 1, 100, 4095, 4096, 65536, 300 * KiB, 513 * KiB };
	uint64_t rng = 0x1234 + idx;
	char why[256];
	size_t i;

	for (i = 0; i < 3 * sizeof lens / sizeof lens[0]; i++) {
		size_t len = lens[i % (sizeof lens / sizeof lens[0])];
		bool a = (i + idx) % 2 == 0;
		uint64_t off = harness_rand(&rng) % ((a ? SIZE_A : SIZE_B) + 10);

		if (check_pread(a ? s->fa : s->fb, a ? s->fda : s->fdb, off, len, buf, ref, why,
				sizeof why) < 0)
			child_fail(idx, STEP_PREAD, why);
	}
	if (check_pread(s->fa, s->fda, SIZE_A - 7, 4096, buf, ref, why, sizeof why) < 0)
		child_fail(idx, STEP_PREAD, why);

	{
		/* sizes around the threshold, across both files, one past EOF */
		enum { N = 8 };
		struct hm_io io[N];
		uint8_t *bufs[N];
		size_t k;

		for (k = 0; k < N; k++) {
			bool a = k % 2 == 0;

			bufs[k] = malloc(64 * KiB);
			if (bufs[k] == NULL)
				child_fail(idx, STEP_BATCH, "out of memory");
			io[k] = (struct hm_io){
				.file = a ? s->fa : s->fb,
				.offset = k == N - 1 ? SIZE_B + 1 : harness_rand(&rng) % SIZE_B,
				.len = k % 3 == 0 ? 200 : 64 * KiB - k,
				.buf = bufs[k],
			};
		}
		if (hm_read_batch(s->c, io, N) < 0) {
			snprintf(why, sizeof why, "hm_read_batch: %s", strerror(errno));
			child_fail(idx, STEP_BATCH, why);
		}
		for (k = 0; k < N; k++) {
			int fd = io[k].file == s->fa ? s->fda : s->fdb;
			ssize_t want = pread(fd, ref, io[k].len, (off_t)io[k].offset);

			if (io[k].result != want ||
			    (want > 0 && memcmp(bufs[k], ref, (size_t)want) != 0)) {
				snprintf(why, sizeof why, "io %zu: %zd, pread %zd", k, io[k].result,
					 want);
				child_fail(idx, STEP_BATCH, why);
			}
			free(bufs[k]);
		}
	}

	for (i = 0; i < 4; i++) {
		bool a = (i + idx) % 2 == 1;
		size_t len = i == 3 ? 513 * KiB : 3000 + 70000 * i;

		if (check_view(a ? s->fa : s->fb, a ? s->fda : s->fdb,
			       harness_rand(&rng) % (a ? SIZE_A : SIZE_B), len, ref, why,
			       sizeof why) < 0)
			child_fail(idx, STEP_VIEW, why);
	}

	{
		struct hm_stat st;

		if (hm_stat(s->fb, &st) < 0 || st.size != SIZE_B) {
			snprintf(why, sizeof why, "hm_stat: %s", strerror(errno));
			child_fail(idx, STEP_STAT, why);
		}
	}
}

static void
check_inherited_view(struct scene *s, unsigned idx, enum child_step step)
{
	if (s->v.len != VIEW_LEN || memcmp(s->v.data, s->vref, VIEW_LEN) != 0)
		child_fail(idx, step, "the view taken before the fork changed under the child");
}

static void
child_main(struct scene *s, unsigned idx, int go)
{
	uint8_t *buf = s->cbuf, *ref = s->cref;
	char why[256], b;
	hm_file *fc;
	int fdc, status;
	pid_t pid;

	alarm(CHILD_ALARM_S);
	if (read(go, &b, 1) != 1)
		child_fail(idx, STEP_GO, "no go from the parent");
	close(go);
	check_inherited_view(s, idx, STEP_INHERITED_VIEW);
	child_reads(s, idx, buf, ref);

	fc = hm_open(s->c, s->pc, 0);
	fdc = open(s->pc, O_RDONLY | O_CLOEXEC);
	if (fc == NULL || fdc < 0) {
		snprintf(why, sizeof why, "hm_open in the child: %s", strerror(errno));
		child_fail(idx, STEP_OPEN, why);
	}
	if (check_pread(fc, fdc, 17, 5000, buf, ref, why, sizeof why) < 0)
		child_fail(idx, STEP_OPEN, why);

	if (idx == 0) {
		/* the child's client, inherited once more */
		pid = fork();
		if (pid < 0)
			child_fail(idx, STEP_GRANDCHILD, strerror(errno));
		if (pid == 0) {
			check_inherited_view(s, 100 + idx, STEP_INHERITED_VIEW);
			child_reads(s, 100 + idx, buf, ref);
			if (check_pread(fc, fdc, 1, 9000, buf, ref, why, sizeof why) < 0)
				child_fail(100 + idx, STEP_OPEN, why);
			hm_disconnect(s->c);
			_exit(0);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			snprintf(why, sizeof why, "the grandchild ended with status 0x%x", status);
			child_fail(idx, STEP_GRANDCHILD, why);
		}
		/* and the child's own connection is still in step */
		child_reads(s, idx, buf, ref);
	}

	check_inherited_view(s, idx, STEP_INHERITED_VIEW_AGAIN);
	hm_view_release(&s->v);
	if (hm_close(fc) < 0 || hm_close(s->fa) < 0 || hm_close(s->fb) < 0) {
		snprintf(why, sizeof why, "hm_close: %s", strerror(errno));
		child_fail(idx, STEP_CLOSE, why);
	}
	if (hm_ping(s->c, NULL) < 0) {
		snprintf(why, sizeof why, "hm_ping: %s", strerror(errno));
		child_fail(idx, STEP_CLOSE, why);
	}
	hm_disconnect(s->c);
	_exit(0);
}

static void
run_fork(struct harness *h, bool poll)
{
	struct scene s = { .h = h };
	struct reader r = { .s = &s };
	pid_t pids[CHILDREN];
	uint8_t *ref;
	struct hm_view v2;
	const void *old;
	pthread_t t;
	int go[2], status, tries;
	unsigned i, failed = 0;

	alarm(TEST_ALARM_S);
	setenv("HOTMAP_POLL", poll ? "1" : "0", 1);
	harness_path(h, "root/a", s.pa);
	harness_path(h, "root/b", s.pb);
	harness_path(h, "root/c", s.pc);
	harness_write_file(s.pa, SIZE_A, 1);
	harness_write_file(s.pb, SIZE_B, 2);
	harness_write_file(s.pc, 20000, 3);
	s.fda = open(s.pa, O_RDONLY | O_CLOEXEC);
	s.fdb = open(s.pb, O_RDONLY | O_CLOEXEC);
	assert_true(s.fda >= 0 && s.fdb >= 0);
	s.c = harness_connect(h);
	s.fa = hm_open(s.c, s.pa, 0);
	s.fb = hm_open_fd(s.c, s.fdb, 0);
	assert_non_null(s.fa);
	assert_non_null(s.fb);
	s.vref = malloc(VIEW_LEN);
	ref = malloc(VIEW_LEN);
	assert_non_null(s.vref);
	assert_non_null(ref);
	assert_int_equal(pread(s.fda, s.vref, VIEW_LEN, VIEW_OFF), VIEW_LEN);
	assert_int_equal(hm_view_range(s.fa, VIEW_OFF, VIEW_LEN, &s.v), 0);
	assert_int_equal(s.v.len, VIEW_LEN);
	assert_memory_equal(s.v.data, s.vref, VIEW_LEN);
	assert_int_equal(harness_check_read(s.fb, s.fdb, 0, 300 * KiB), 300 * KiB);

	r.buf = malloc(BUF_MAX + HARNESS_SLACK);
	r.ref = malloc(BUF_MAX + HARNESS_SLACK);
	s.cbuf = malloc(BUF_MAX + HARNESS_SLACK);
	s.cref = malloc(BUF_MAX + HARNESS_SLACK);
	assert_true(r.buf != NULL && r.ref != NULL && s.cbuf != NULL && s.cref != NULL);
	assert_int_equal(pthread_mutex_init(&r.pause, NULL), 0);
	assert_int_equal(pthread_create(&t, NULL, reader_main, &r), 0);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	for (i = 0; i < CHILDREN; i++) {
		/* let the reader take the client's lock now and then */
		harness_sleep_ms(i % 4);
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			close(go[1]);
			child_main(&s, i, go[0]);
		}
	}
	close(go[0]);

	/* The parent gives the view back and has its place in the region
	 * filled with other bytes, before any child looks at its copy. */
	pthread_mutex_lock(&r.pause);
	old = s.v.data;
	hm_view_release(&s.v);
	for (tries = 0;; tries++) {
		assert_int_equal(hm_view_range(s.fb, 0, VIEW_LEN, &v2), 0);
		if (v2.data == old)
			break;
		hm_view_release(&v2);
		if (tries == 100)
			fail_msg("a view of the same size never got the released view's place");
	}
	assert_int_equal(pread(s.fdb, ref, VIEW_LEN, 0), VIEW_LEN);
	assert_memory_equal(v2.data, ref, VIEW_LEN);
	assert_memory_not_equal(v2.data, s.vref, VIEW_LEN);
	pthread_mutex_unlock(&r.pause);
	for (i = 0; i < CHILDREN; i++)
		assert_int_equal(write(go[1], "g", 1), 1);
	close(go[1]);

	/* while the children read, the parent does too */
	for (i = 0; i < 50; i++)
		harness_check_read(s.fa, s.fda, (i * 65537u) % SIZE_A, 1000 + i * 5000);

	for (i = 0; i < CHILDREN; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		if (WIFSIGNALED(status)) {
			print_error("child %u died of signal %d (%s)\n", i, WTERMSIG(status),
				    WTERMSIG(status) == SIGALRM ? "it hung" : strsignal(WTERMSIG(status)));
			failed++;
		} else if (WEXITSTATUS(status) != 0) {
			print_error("child %u failed at step %d\n", i, WEXITSTATUS(status));
			failed++;
		}
	}
	atomic_store(&r.stop, true);
	assert_int_equal(pthread_join(t, NULL), 0);
	if (r.why[0] != '\0')
		fail_msg("the parent's reading thread: %s", r.why);
	if (failed > 0)
		fail_msg("%u of %d children failed", failed, CHILDREN);
	print_message("# the parent's thread read %llu times meanwhile\n",
		      (unsigned long long)r.reads);

	/* the parent's view, files and connection are as they were */
	assert_memory_equal(v2.data, ref, VIEW_LEN);
	hm_view_release(&v2);
	assert_int_equal(harness_check_read(s.fa, s.fda, VIEW_OFF, VIEW_LEN), VIEW_LEN);
	assert_int_equal(harness_check_read(s.fb, s.fdb, SIZE_B - 10, 64 * KiB), 10);
	assert_int_equal(hm_ping(s.c, NULL), 0);
	assert_int_equal(hm_close(s.fa), 0);
	assert_int_equal(hm_close(s.fb), 0);
	hm_disconnect(s.c);
	close(s.fda);
	close(s.fdb);
	free(s.vref);
	free(ref);
	free(r.buf);
	free(r.ref);
	free(s.cbuf);
	free(s.cref);
	pthread_mutex_destroy(&r.pause);
	alarm(0);
}

static void
test_fork_socket(void **state)
{
	run_fork(*state, false);
}

static void
test_fork_polling(void **state)
{
	run_fork(*state, true);
}

/*
 * A child that only closes what it inherited, and one that exits at once:
 * the parent's connection must not notice (no CLOSE of the parent's
 * handles sent on the parent's socket by the child).
 */
static void
test_fork_child_closes(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX];
	hm_client *c;
	hm_file *f;
	int fd, status;
	pid_t pid;

	setenv("HOTMAP_POLL", "0", 1);
	harness_path(h, "root/a", path);
	harness_write_file(path, 100000, 4);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	c = harness_connect(h);
	f = hm_open(c, path, 0);
	assert_non_null(f);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(CHILD_ALARM_S);
		if (hm_close(f) < 0)
			_exit(1);
		hm_disconnect(c);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(harness_check_read(f, fd, 10, 50000), 50000);
	assert_int_equal(harness_stat(c, "handles"), 1);
	assert_int_equal(hm_close(f), 0);
	hm_disconnect(c);
	close(fd);
}

/* A call that waits for the daemon to come back, in a thread of its own. */
struct waiter {
	hm_file *f;
	int fd;
	ssize_t n;
	int err;
	uint8_t buf[8192], ref[8192];
};

static void *
waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->n = hm_pread(w->f, w->buf, sizeof w->buf, 4096);
	w->err = errno;
	return NULL;
}

/*
 * fork() while a call of another thread waits, with the client's lock
 * held, for the daemon to come back (the reconnect policy): the fork does
 * not wait for that call (which could take as long as the policy allows,
 * or for ever), the call completes in the parent, and the child, whose
 * copy of the client was in that call's hands, gets a connection of its
 * own and reads right.
 */
static void
test_fork_during_wait(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX], b;
	uint8_t buf[5000], ref[5000];
	struct waiter w;
	hm_client *c;
	pthread_t t;
	int64_t t0, took;
	int go[2], status;
	pid_t pid;

	alarm(TEST_ALARM_S);
	setenv("HOTMAP_POLL", "0", 1);
	harness_path(h, "root/a", path);
	harness_write_file(path, 100000, 5);
	memset(&w, 0, sizeof w);
	w.fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(w.fd >= 0);
	c = harness_connect(h);
	assert_int_equal(hm_set_reconnect(c, 20000), 0);
	w.f = hm_open(c, path, 0);
	assert_non_null(w.f);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);

	harness_kill(h);
	assert_int_equal(pthread_create(&t, NULL, waiter_main, &w), 0);
	harness_sleep_ms(300);	/* the waiter is in its reconnect loop */
	t0 = harness_now_ms();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(CHILD_ALARM_S);
		close(go[1]);
		if (read(go[0], &b, 1) != 1)
			_exit(1);
		if (hm_pread(w.f, buf, sizeof buf, 777) != (ssize_t)sizeof buf ||
		    pread(w.fd, ref, sizeof ref, 777) != (ssize_t)sizeof ref ||
		    memcmp(buf, ref, sizeof buf) != 0)
			_exit(2);
		if (hm_close(w.f) < 0)
			_exit(3);
		hm_disconnect(c);
		_exit(0);
	}
	took = harness_now_ms() - t0;
	close(go[0]);
	if (took > 2000)
		fail_msg("fork waited %lld ms for a call in flight", (long long)took);
	harness_restart(h);	/* which forks too */
	assert_int_equal(pthread_join(t, NULL), 0);
	if (w.n != (ssize_t)sizeof w.buf)
		fail_msg("the waiting call: %zd (%s)", w.n, strerror(w.err));
	assert_int_equal(pread(w.fd, w.ref, sizeof w.ref, 4096), sizeof w.ref);
	assert_memory_equal(w.buf, w.ref, sizeof w.buf);
	assert_int_equal(write(go[1], "g", 1), 1);
	close(go[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("the child ended with status 0x%x", status);
	assert_int_equal(harness_check_read(w.f, w.fd, 10, 50000), 50000);
	assert_int_equal(hm_close(w.f), 0);
	hm_disconnect(c);
	close(w.fd);
	alarm(0);
}

/*
 * fork() while the daemon is stopped (SIGSTOP: a debugger, a cgroup
 * freezer, a daemon being restarted) and threads of the process wait on
 * it in every kind of call: a read through the region, one over the
 * socket, an hm_open, an hm_ping, an hm_connect.  The fork handlers take
 * every client's short locks (fork.c); a call that held one while it
 * waited for the daemon would hold fork() up for as long as the daemon
 * stays stopped.  fork must return at once, in the parent and the child,
 * and the calls complete right once the daemon goes on.  The process
 * runs in a child of the test with an alarm, so that a fork that hangs
 * fails the test; the test lets the daemon go on whatever happened.
 */
#define STOPPED_ALARM_S	10
#define STOPPED_FORK_MS	1000	/* "at once", on a loaded machine */
#define STOPPED_BIG	(200 * KiB + 3)	/* through the region */
#define STOPPED_SMALL	100		/* over the socket */

struct stopped {
	struct harness *h;
	hm_client *c;
	hm_file *f;
	int fd;
	char pb[PATH_MAX];
	/* results, each set by its thread once its call returned */
	atomic_int returned;
	ssize_t big_n, small_n;
	uint8_t *big, *small;
	hm_file *opened;
	hm_client *connected;
	int ping_rc, ping2_rc;
	int big_err, small_err, open_err, connect_err, ping_err;
};

static void __attribute__((format(printf, 1, 2), noreturn))
stopped_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "# process %ld: ", (long)getpid());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	_exit(1);
}

static void *
stopped_big(void *arg)
{
	struct stopped *s = arg;

	s->big_n = hm_pread(s->f, s->big, STOPPED_BIG, 12345);
	s->big_err = errno;
	atomic_fetch_add(&s->returned, 1);
	return NULL;
}

static void *
stopped_small(void *arg)
{
	struct stopped *s = arg;

	s->small_n = hm_pread(s->f, s->small, STOPPED_SMALL, 777);
	s->small_err = errno;
	atomic_fetch_add(&s->returned, 1);
	return NULL;
}

static void *
stopped_open(void *arg)
{
	struct stopped *s = arg;

	s->opened = hm_open(s->c, s->pb, 0);
	s->open_err = errno;
	atomic_fetch_add(&s->returned, 1);
	return NULL;
}

static void *
stopped_ping(void *arg)
{
	struct stopped *s = arg;

	s->ping_rc = hm_ping(s->c, NULL);
	s->ping_err = errno;
	atomic_fetch_add(&s->returned, 1);
	return NULL;
}

static void *
stopped_connect(void *arg)
{
	struct stopped *s = arg;
	struct hm_options o = HM_OPTIONS_INIT;

	o.direct = 0;
	s->connected = hm_connect_opts(s->h->sock, &o);
	s->connect_err = errno;
	if (s->connected != NULL)
		s->ping2_rc = hm_ping(s->connected, NULL);
	atomic_fetch_add(&s->returned, 1);
	return NULL;
}

static void
stopped_main(struct stopped *s, const char *pa)
{
	static void *(*const fns[])(void *) = {
		stopped_big, stopped_small, stopped_open, stopped_ping, stopped_connect,
	};
	enum { NT = sizeof fns / sizeof fns[0] };
	struct hm_options o = HM_OPTIONS_INIT;
	uint8_t *ref = malloc(STOPPED_BIG);
	pthread_t t[NT];
	int64_t t0, took;
	int i, status;
	pid_t pid;

	alarm(STOPPED_ALARM_S);
	s->big = malloc(STOPPED_BIG);
	s->small = malloc(STOPPED_SMALL);
	/* no direct reads: every read waits for the daemon */
	o.direct = 0;
	s->c = hm_connect_opts(s->h->sock, &o);
	if (s->c == NULL || ref == NULL || s->big == NULL || s->small == NULL)
		stopped_fail("hm_connect_opts: %s", strerror(errno));
	s->f = hm_open(s->c, pa, 0);
	s->fd = open(pa, O_RDONLY | O_CLOEXEC);
	if (s->f == NULL || s->fd < 0)
		stopped_fail("hm_open: %s", strerror(errno));

	if (kill(s->h->pid, SIGSTOP) < 0)
		stopped_fail("SIGSTOP: %s", strerror(errno));
	for (i = 0; i < NT; i++)
		if (pthread_create(&t[i], NULL, fns[i], s) != 0)
			stopped_fail("pthread_create");
	harness_sleep_ms(300);	/* each is in its call, waiting */
	if (atomic_load(&s->returned) != 0)
		stopped_fail("%d calls returned with the daemon stopped", atomic_load(&s->returned));

	t0 = harness_now_ms();
	pid = fork();
	if (pid < 0)
		stopped_fail("fork: %s", strerror(errno));
	if (pid == 0)
		_exit(harness_now_ms() - t0 < STOPPED_FORK_MS ? 0 : 1);
	took = harness_now_ms() - t0;
	if (waitpid(pid, &status, 0) != pid)
		stopped_fail("waitpid: %s", strerror(errno));
	fprintf(stderr, "# fork returned in %lld ms, the daemon stopped\n", (long long)took);
	if (took >= STOPPED_FORK_MS)
		stopped_fail("fork took %lld ms in the parent", (long long)took);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		stopped_fail("the child: status 0x%x (fork took %d ms or more there)", status,
			     STOPPED_FORK_MS);
	if (atomic_load(&s->returned) != 0)
		stopped_fail("a call returned before the daemon went on");

	if (kill(s->h->pid, SIGCONT) < 0)
		stopped_fail("SIGCONT: %s", strerror(errno));
	for (i = 0; i < NT; i++)
		pthread_join(t[i], NULL);
	if (s->big_n != pread(s->fd, ref, STOPPED_BIG, 12345) ||
	    memcmp(s->big, ref, STOPPED_BIG) != 0)
		stopped_fail("the read through the region: %zd (%s)", s->big_n,
			     strerror(s->big_err));
	if (s->small_n != pread(s->fd, ref, STOPPED_SMALL, 777) ||
	    memcmp(s->small, ref, STOPPED_SMALL) != 0)
		stopped_fail("the read over the socket: %zd (%s)", s->small_n,
			     strerror(s->small_err));
	if (s->opened == NULL)
		stopped_fail("hm_open: %s", strerror(s->open_err));
	if (s->ping_rc != 0)
		stopped_fail("hm_ping: %s", strerror(s->ping_err));
	if (s->connected == NULL || s->ping2_rc != 0)
		stopped_fail("hm_connect, then hm_ping: %s", strerror(s->connect_err));
	{
		char why[256];
		uint8_t *b = malloc(5000 + HARNESS_SLACK), *r = malloc(5000 + HARNESS_SLACK);
		int fdb = open(s->pb, O_RDONLY | O_CLOEXEC);

		if (b == NULL || r == NULL || fdb < 0 ||
		    harness_compare_read(s->opened, fdb, 3, 5000, b, r, NULL, why, sizeof why) < 0)
			stopped_fail("the file opened while the daemon was stopped: %s", why);
		close(fdb);
		free(b);
		free(r);
	}
	hm_close(s->opened);
	hm_close(s->f);
	hm_disconnect(s->connected);
	hm_disconnect(s->c);
	_exit(0);
}

static void
run_fork_daemon_stopped(struct harness *h, bool poll)
{
	struct stopped s = { .h = h };
	char pa[PATH_MAX];
	int status;
	pid_t pid, got;

	alarm(TEST_ALARM_S);
	setenv("HOTMAP_POLL", poll ? "1" : "0", 1);
	harness_path(h, "root/a", pa);
	harness_path(h, "root/b", s.pb);
	harness_write_file(pa, SIZE_A, 6);
	harness_write_file(s.pb, SIZE_B, 7);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		stopped_main(&s, pa);
	got = waitpid(pid, &status, 0);
	kill(h->pid, SIGCONT);	/* whatever became of the process */
	assert_int_equal(got, pid);
	if (WIFSIGNALED(status))
		fail_msg("the process died of signal %d (%s)", WTERMSIG(status),
			 WTERMSIG(status) == SIGALRM ? "it hung" : strsignal(WTERMSIG(status)));
	if (WEXITSTATUS(status) != 0)
		fail_msg("the process failed (see above)");
	alarm(0);
}

static void
test_fork_daemon_stopped(void **state)
{
	run_fork_daemon_stopped(*state, false);
}

static void
test_fork_daemon_stopped_polling(void **state)
{
	run_fork_daemon_stopped(*state, true);
}

#define T(f, opts) cmocka_unit_test_prestate_setup_teardown(f, setup, teardown, (void *)&opts)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_fork_socket, opts_default),
		T(test_fork_polling, opts_default),
		T(test_fork_child_closes, opts_default),
		T(test_fork_during_wait, opts_default),
		T(test_fork_daemon_stopped, opts_default),
		T(test_fork_daemon_stopped_polling, opts_default),
	};

	return cmocka_run_group_tests_name("fork", tests, NULL, NULL);
}
