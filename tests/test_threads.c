/* SPDX-License-Identifier: MIT */
/*
 * test_threads.c - one hm_client shared by several threads, against a real
 * hotmapd (tests/harness.h), with direct reads off so that every read goes
 * through the daemon.
 *
 * Threads run hm_pread, hm_read_batch, hm_view_range and hm_stat on the
 * same client at once, checked byte for byte against pread(2): over the
 * shared region, over the socket only (the READ_DATA frames of several
 * threads' reads interleave), and in polling mode (ring reads one call at
 * a time, frames alongside).  Then what only pipelining gives: with a
 * read stalled in the daemon (its file on a FUSE file system of ours,
 * tests/faultfs, stopped with SIGSTOP), another thread's reads on the same
 * client complete; with one lock per call they would wait for the stalled
 * one.  Then the daemon killed while several threads wait on the client:
 * every call returns an error, none hangs; and with the reconnect policy,
 * killed and restarted: every call succeeds.  Everything runs under
 * alarm(2), so that a hang fails instead of stalling.
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

#include "tests/faultfs_ctl.h"
#include "tests/harness.h"

#define KiB (1024u)
#define MiB (1024u * 1024u)

#define THREADS		4
#define ITERS		300	/* mixed calls per thread */
#define BATCH		16
#define TEST_ALARM_S	120
#define SIZE_A		(3 * MiB + 17)
#define SIZE_B		(1 * MiB + 4099)
#define SEED_A		11
#define SEED_B		12
#define BUF_MAX		(1536 * KiB)
#define SLOW_SIZE	(1 * MiB)
#define SLOW_SEED	21
#define SLOW_LEN	(64 * KiB)
#define STALL_WAIT_MS	10000	/* how long the other thread may take */

static const struct harness_opts opts_default = { .backend = NULL };

static int
setup(void **state)
{
	unsetenv("HOTMAP_SHM_SIZE");
	unsetenv("HOTMAP_SHM_THRESHOLD");
	unsetenv("HOTMAP_RECONNECT_MS");
	unsetenv("HOTMAP_POLL");
	*state = harness_start(*state);
	alarm(TEST_ALARM_S);
	return 0;
}

static int
teardown(void **state)
{
	alarm(0);
	harness_free_buffers();
	harness_stop(*state);
	return 0;
}

/* The files every thread reads, and the one client. */
struct scene {
	struct harness *h;
	hm_client *c;
	hm_file *f[2];
	int fd[2];
	uint64_t size[2];
};

static hm_client *
connect_with(const struct harness *h, int poll_mode, int64_t shm_size, int64_t reconnect_ms)
{
	struct hm_options o = HM_OPTIONS_INIT;
	hm_client *c;

	o.direct = 0;	/* every read through the daemon */
	o.poll = poll_mode;
	o.shm_size = shm_size;
	o.reconnect_ms = reconnect_ms;
	c = hm_connect_opts(h->sock, &o);
	assert_non_null(c);
	return c;
}

static void
scene_open(struct scene *s, struct harness *h, int poll_mode, int64_t shm_size,
	   int64_t reconnect_ms)
{
	char path[PATH_MAX];
	unsigned i;

	memset(s, 0, sizeof *s);
	s->h = h;
	s->size[0] = SIZE_A;
	s->size[1] = SIZE_B;
	s->c = connect_with(h, poll_mode, shm_size, reconnect_ms);
	for (i = 0; i < 2; i++) {
		harness_path(h, i == 0 ? "root/a" : "root/b", path);
		harness_write_file(path, s->size[i], i == 0 ? SEED_A : SEED_B);
		s->fd[i] = open(path, O_RDONLY | O_CLOEXEC);
		assert_true(s->fd[i] >= 0);
		s->f[i] = i == 0 ? hm_open(s->c, path, 0) : hm_open_fd(s->c, s->fd[i], 0);
		assert_non_null(s->f[i]);
	}
}

static void
scene_close(struct scene *s)
{
	unsigned i;

	for (i = 0; i < 2; i++) {
		if (s->f[i] != NULL)
			hm_close(s->f[i]);
		close(s->fd[i]);
	}
	hm_disconnect(s->c);
}

/* --- the threads' mixed calls, checked against pread -------------------- */

struct worker {
	struct scene *s;
	unsigned idx;
	unsigned iters;		/* 0: until stop */
	atomic_bool *stop;
	uint64_t calls;
	int err;		/* the errno of the call that failed, if one did */
	char why[512];		/* the first wrong answer, "" while none */
	uint8_t *buf, *ref;
};

static int
check_view(hm_file *f, int fd, uint64_t off, size_t len, uint8_t *ref, char *why, size_t whylen)
{
	struct hm_view v;
	ssize_t want = pread(fd, ref, len, (off_t)off);

	if (hm_view_range(f, off, len, &v) < 0) {
		snprintf(why, whylen, "hm_view_range(%llu, %zu): %s", (unsigned long long)off, len,
			 strerror(errno));
		return -1;
	}
	if (want < 0 || (ssize_t)v.len != want || memcmp(v.data, ref, v.len) != 0) {
		snprintf(why, whylen, "view of %zu at %llu: %zu bytes, pread %zd", len,
			 (unsigned long long)off, v.len, want);
		hm_view_release(&v);
		return -1;
	}
	hm_view_release(&v);
	return 0;
}

static int
check_batch(struct scene *s, uint64_t *rng, uint8_t *buf, uint8_t *ref, char *why, size_t whylen)
{
	static const size_t lens[] = { 0, 1, 333, 4096, 9000, 70000 };
	struct hm_io io[BATCH];
	uint8_t *p = buf;
	unsigned k;

	for (k = 0; k < BATCH; k++) {
		unsigned i = (unsigned)(harness_rand(rng) % 2);

		io[k].file = s->f[i];
		io[k].len = lens[harness_rand(rng) % (sizeof lens / sizeof lens[0])];
		io[k].offset = harness_rand(rng) % (s->size[i] + 100);
		io[k].buf = p;
		io[k].result = -12345;
		p += io[k].len;
	}
	if (hm_read_batch(s->c, io, BATCH) < 0) {
		snprintf(why, whylen, "hm_read_batch: %s", strerror(errno));
		return -1;
	}
	for (k = 0; k < BATCH; k++) {
		unsigned i = io[k].file == s->f[0] ? 0 : 1;
		ssize_t want = pread(s->fd[i], ref, io[k].len, (off_t)io[k].offset);

		if (io[k].result != want || (want > 0 && memcmp(io[k].buf, ref, (size_t)want) != 0)) {
			snprintf(why, whylen, "batch io %u (%zu at %llu): %zd, pread %zd%s", k,
				 io[k].len, (unsigned long long)io[k].offset, io[k].result, want,
				 io[k].result == want ? ", bytes differ" : "");
			return -1;
		}
	}
	return 0;
}

static int
check_stat(struct scene *s, unsigned i, char *why, size_t whylen)
{
	struct hm_stat st;
	struct stat ref;

	if (hm_stat(s->f[i], &st) < 0) {
		snprintf(why, whylen, "hm_stat: %s", strerror(errno));
		return -1;
	}
	if (fstat(s->fd[i], &ref) < 0 || st.size != (uint64_t)ref.st_size ||
	    st.ino != (uint64_t)ref.st_ino) {
		snprintf(why, whylen, "hm_stat: size %llu ino %llu, fstat says otherwise",
			 (unsigned long long)st.size, (unsigned long long)st.ino);
		return -1;
	}
	return 0;
}

/* One mixed call: 0, or -1 with why (errno set when the call failed). */
static int
worker_call(struct worker *w, uint64_t *rng)
{
	static const size_t lens[] = { 1, 100, 4095, 4096, 65536, 300 * KiB, BUF_MAX };
	struct scene *s = w->s;
	unsigned i = (unsigned)(harness_rand(rng) % 2);
	size_t len = lens[harness_rand(rng) % (sizeof lens / sizeof lens[0])];
	uint64_t off = harness_rand(rng) % (s->size[i] + 10);

	errno = 0;
	switch (harness_rand(rng) % 4) {
	case 0:
		return harness_compare_read(s->f[i], s->fd[i], off, len, w->buf, w->ref, NULL,
					    w->why, sizeof w->why);
	case 1:
		return check_batch(s, rng, w->buf, w->ref, w->why, sizeof w->why);
	case 2:
		return check_view(s->f[i], s->fd[i], off, len, w->ref, w->why, sizeof w->why);
	default:
		return check_stat(s, i, w->why, sizeof w->why);
	}
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t rng = 0x7157 + w->idx;

	while (w->iters > 0 ? w->calls < w->iters : !atomic_load(w->stop)) {
		if (worker_call(w, &rng) < 0) {
			w->err = errno;
			break;
		}
		__atomic_add_fetch(&w->calls, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void
workers_alloc(struct worker *w, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		w[i].buf = malloc(BATCH * 70000 + BUF_MAX + HARNESS_SLACK);
		w[i].ref = malloc(BUF_MAX + HARNESS_SLACK);
		assert_non_null(w[i].buf);
		assert_non_null(w[i].ref);
	}
}

static void
workers_free(struct worker *w, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		free(w[i].buf);
		free(w[i].ref);
	}
}

/* THREADS threads, ITERS mixed calls each, on one client: all right. */
static void
run_mixed(struct harness *h, int poll_mode, int64_t shm_size)
{
	struct worker w[THREADS];
	pthread_t t[THREADS];
	struct scene s;
	unsigned i;

	scene_open(&s, h, poll_mode, shm_size, HM_DEFAULT);
	memset(w, 0, sizeof w);
	workers_alloc(w, THREADS);
	for (i = 0; i < THREADS; i++) {
		w[i].s = &s;
		w[i].idx = i;
		w[i].iters = ITERS;
		assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
	}
	for (i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	for (i = 0; i < THREADS; i++)
		if (w[i].why[0] != '\0')
			fail_msg("thread %u, call %llu: %s", i, (unsigned long long)w[i].calls,
				 w[i].why);
	workers_free(w, THREADS);
	scene_close(&s);
}

static void
test_threads_region(void **state)
{
	run_mixed(*state, 0, HM_DEFAULT);
}

/* No region: every byte over the socket, the threads' data frames
 * interleaved on it. */
static void
test_threads_socket(void **state)
{
	run_mixed(*state, 0, 0);
}

static void
test_threads_polling(void **state)
{
	run_mixed(*state, 1, HM_DEFAULT);
}

/* --- a read stalled in the daemon (faultfs stopped) ----------------------- */

/* A call stalled in the daemon, in a thread of its own: hm_warm of the
 * stopped file, whose worker waits for faultfs to answer its fstat.  (A
 * READ of it would stall the daemon's loop too, which asks the kernel for
 * the file's size, and so FUSE, before it hands the read to a worker.) */
struct stalled {
	hm_file *f;
	ssize_t n;
	int err;
	atomic_bool done;
};

static void *
stalled_main(void *arg)
{
	struct stalled *r = arg;

	r->n = hm_warm(r->f, 0, SLOW_SIZE);
	r->err = errno;
	atomic_store(&r->done, true);
	return NULL;
}

struct quick {
	struct worker w;
	atomic_bool done;
};

static void *
quick_main(void *arg)
{
	struct quick *q = arg;

	worker_main(&q->w);
	atomic_store(&q->done, true);
	return NULL;
}

/* Waits up to ms for *flag. */
static bool
wait_flag(atomic_bool *flag, unsigned ms)
{
	int64_t deadline = harness_now_ms() + ms;

	while (!atomic_load(flag)) {
		if (harness_now_ms() > deadline)
			return false;
		harness_sleep_ms(5);
	}
	return true;
}

/* SIGKILL to the daemon, while faultfs is stopped.  Should a request of
 * the daemon's have reached faultfs before it stopped all the same (one
 * sent before faultfs_freeze), the daemon cannot die until it is
 * answered: then faultfs runs again, and says so.  Its calls failed
 * either way: the daemon is gone. */
static void
kill_daemon_fuse_stopped(struct harness *h, struct faultfs *fs)
{
	int64_t deadline = harness_now_ms() + 5000;
	pid_t pid = h->pid;
	int status = 0;

	assert_int_equal(kill(pid, SIGKILL), 0);
	while (waitpid(pid, &status, WNOHANG) != pid) {
		if (harness_now_ms() > deadline && fs->stopped) {
			print_message("# hotmapd outlived SIGKILL by 5 s: a FUSE request "
				      "faultfs took before it stopped; faultfs runs again\n");
			faultfs_thaw(fs);
			assert_int_equal(waitpid(pid, &status, 0), pid);
			break;
		}
		harness_sleep_ms(10);
	}
	h->pid = 0;
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

/* The fixture of the stall tests: the scene, faultfs and its file open,
 * and faultfs stopped (SIGSTOP). */
struct stall {
	struct scene s;
	struct faultfs fs;
	hm_file *slow;
};

/* faultfs on DIR/fault serving "slow" (and "small", unused here); false,
 * said, when it cannot (FUSE unavailable: no read can be stalled).
 * faultfs_freeze (faultfs_ctl.c) returns once each of faultfs's threads
 * is stopped: see there why that matters. */
static bool
stall_open(struct stall *x, struct harness *h, int64_t reconnect_ms)
{
	char path[PATH_MAX + 8], why[512], arg[64];

	scene_open(&x->s, h, 0, HM_DEFAULT, reconnect_ms);
	snprintf(arg, sizeof arg, "slow:%u:%u", SLOW_SIZE, SLOW_SEED);
	if (faultfs_start(&x->fs, h->dir, NULL, arg, why, sizeof why) < 0) {
		print_message("# no FUSE (%s): no read can be stalled\n", why);
		return false;
	}
	faultfs_close_control(&x->fs);	/* it answered: the mount is up */
	snprintf(path, sizeof path, "%s/slow", x->fs.mnt);
	x->slow = hm_open(x->s.c, path, 0);
	assert_non_null(x->slow);
	if (faultfs_freeze(&x->fs, why, sizeof why) < 0)
		fail_msg("%s", why);
	return true;
}

/* faultfs running again (SIGCONT) if stopped, unmounted, and gone. */
static void
stall_close(struct stall *x)
{
	faultfs_unmount(&x->fs);
	faultfs_reap(&x->fs);
}

/*
 * The proof of pipelining: a call about the stopped file is in flight (the
 * daemon's worker waits for faultfs), and meanwhile another thread's
 * calls on the same client complete, right.  With the calls of a client
 * serialised, the second thread would wait for the first until faultfs
 * runs again.
 */
static void
test_threads_pipelined(void **state)
{
	struct harness *h = *state;
	struct stall x;
	struct stalled r;
	struct quick q;
	pthread_t ts, tq;
	uint8_t *slow_buf;
	bool quick_done;

	if (!stall_open(&x, h, HM_DEFAULT)) {
		scene_close(&x.s);
		skip();
	}
	memset(&r, 0, sizeof r);
	r.f = x.slow;
	assert_int_equal(pthread_create(&ts, NULL, stalled_main, &r), 0);
	harness_sleep_ms(300);
	if (atomic_load(&r.done))
		fail_msg("the warm of the stopped file did not stall: %zd (%s)", r.n,
			 strerror(r.err));

	memset(&q, 0, sizeof q);
	workers_alloc(&q.w, 1);
	q.w.s = &x.s;
	q.w.iters = 100;
	assert_int_equal(pthread_create(&tq, NULL, quick_main, &q), 0);
	quick_done = wait_flag(&q.done, STALL_WAIT_MS);
	if (quick_done && atomic_load(&r.done))
		fail_msg("the stalled call ended before the other thread: %zd (%s)", r.n,
			 strerror(r.err));

	faultfs_thaw(&x.fs);
	assert_int_equal(pthread_join(tq, NULL), 0);
	assert_int_equal(pthread_join(ts, NULL), 0);
	if (!quick_done)
		fail_msg("another thread's calls waited for the stalled one: "
			 "%llu of 100 done in %d ms (calls are serialised)",
			 (unsigned long long)q.w.calls, STALL_WAIT_MS);
	if (q.w.why[0] != '\0')
		fail_msg("the other thread, call %llu: %s", (unsigned long long)q.w.calls, q.w.why);
	if (r.n < 0)
		fail_msg("the stalled warm: %s", strerror(r.err));
	/* and the file, running again, reads right */
	slow_buf = malloc(2 * SLOW_LEN);
	assert_non_null(slow_buf);
	assert_int_equal(hm_pread(x.slow, slow_buf, SLOW_LEN, 4096), SLOW_LEN);
	harness_fill(slow_buf + SLOW_LEN, SLOW_LEN, SLOW_SEED, 4096);
	assert_memory_equal(slow_buf, slow_buf + SLOW_LEN, SLOW_LEN);
	free(slow_buf);
	workers_free(&q.w, 1);
	hm_close(x.slow);
	scene_close(&x.s);
	stall_close(&x);
}

/*
 * The daemon killed while several threads wait on the client (reads
 * stalled in it, when FUSE is there, and threads reading in a loop): every
 * call returns an error, none hangs; the client stays broken, and says so
 * at once.
 */
static void
test_threads_daemon_killed(void **state)
{
	struct harness *h = *state;
	struct stalled r[2];
	struct worker w[THREADS];
	pthread_t ts[2], t[THREADS];
	atomic_bool stop = false;
	struct stall x;
	bool stalls;
	uint8_t b[16];
	unsigned i;

	stalls = stall_open(&x, h, 0);
	memset(r, 0, sizeof r);
	for (i = 0; stalls && i < 2; i++) {
		r[i].f = x.slow;
		assert_int_equal(pthread_create(&ts[i], NULL, stalled_main, &r[i]), 0);
	}
	memset(w, 0, sizeof w);
	workers_alloc(w, THREADS);
	for (i = 0; i < THREADS; i++) {
		w[i].s = &x.s;
		w[i].idx = i;
		w[i].stop = &stop;
		assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
	}
	harness_sleep_ms(300);
	for (i = 0; stalls && i < 2; i++)
		if (atomic_load(&r[i].done))
			fail_msg("stalled call %u ended before the kill: %zd (%s)", i, r[i].n,
				 strerror(r[i].err));
	if (stalls)
		kill_daemon_fuse_stopped(h, &x.fs);
	else
		harness_kill(h);
	/* the threads' calls fail: they stop at the first error */
	for (i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	for (i = 0; stalls && i < 2; i++) {
		assert_int_equal(pthread_join(ts[i], NULL), 0);
		if (r[i].n != -1)
			fail_msg("stalled call %u after the kill: %zd", i, r[i].n);
	}
	for (i = 0; i < THREADS; i++) {
		if (w[i].why[0] == '\0')
			fail_msg("thread %u ended without a failed call", i);
		if (w[i].calls == 0)
			print_message("# thread %u: no call completed before the kill\n", i);
	}
	assert_int_equal(hm_pread(x.s.f[0], b, sizeof b, 0), -1);
	workers_free(w, THREADS);
	if (stalls) {
		stall_close(&x);
		hm_close(x.slow);
	}
	scene_close(&x.s);
}

/*
 * With the reconnect policy, the daemon killed and restarted while the
 * threads read: the calls in flight fail over to the new connection (one
 * thread reconnects, the others wait for it) and every call succeeds.
 */
static void
test_threads_reconnect(void **state)
{
	struct harness *h = *state;
	struct worker w[THREADS];
	pthread_t t[THREADS];
	atomic_bool stop = false;
	struct scene s;
	unsigned i, round;

	scene_open(&s, h, 0, HM_DEFAULT, 20000);
	memset(w, 0, sizeof w);
	workers_alloc(w, THREADS);
	for (i = 0; i < THREADS; i++) {
		w[i].s = &s;
		w[i].idx = i;
		w[i].stop = &stop;
		assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
	}
	for (round = 0; round < 3; round++) {
		/* Each thread completes two calls on the new connection
		 * before the next kill: a call runs once more after a lost
		 * connection, not twice, so a call in flight at one kill
		 * must not be in flight at the next. */
		uint64_t base[THREADS];

		for (i = 0; i < THREADS; i++)
			base[i] = __atomic_load_n(&w[i].calls, __ATOMIC_RELAXED);
		for (i = 0; i < THREADS; i++) {
			int64_t deadline = harness_now_ms() + 30000;

			while (__atomic_load_n(&w[i].calls, __ATOMIC_RELAXED) < base[i] + 2 &&
			       w[i].why[0] == '\0' && harness_now_ms() < deadline)
				harness_sleep_ms(10);
		}
		harness_kill(h);
		harness_sleep_ms(100);
		harness_restart(h);
	}
	harness_sleep_ms(200);
	atomic_store(&stop, true);
	for (i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	for (i = 0; i < THREADS; i++)
		if (w[i].why[0] != '\0')
			fail_msg("thread %u, call %llu: %s", i, (unsigned long long)w[i].calls,
				 w[i].why);
	workers_free(w, THREADS);
	scene_close(&s);
}

#define T(f) cmocka_unit_test_prestate_setup_teardown(f, setup, teardown, (void *)&opts_default)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_threads_region),
		T(test_threads_socket),
		T(test_threads_polling),
		T(test_threads_pipelined),
		T(test_threads_daemon_killed),
		T(test_threads_reconnect),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("threads", tests, NULL, NULL);
}
