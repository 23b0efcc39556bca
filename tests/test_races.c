/* SPDX-License-Identifier: MIT */
/*
 * test_races.c - a writer shrinks a file and grows it back while 8 clients
 * read it through every backend and transport, against a real hotmapd
 * (tests/harness.h).
 *
 * The writer only ever truncates the file to a shorter length, then
 * writes its canonical bytes back (harness_fill: the byte at each offset
 * is the same whenever it exists).  At any instant the file is therefore a
 * prefix of the canonical content, and every read must return a prefix of
 * the range it asked for, byte for byte: shorter when the file was shorter
 * at some point of the read, never an error, never a crash, and never a
 * byte from anywhere else in the file.  One exception is explained by the
 * change itself, and pread(2) shows it too (a run with the pread backend
 * saw it): while a truncation cuts the file and the writer grows it back,
 * the kernel can hand a reader zeros for bytes being cut or rewritten (a
 * folio's tail zeroed by the truncation, a page of the regrowth not yet
 * written).  Reads whose only wrong bytes are zeros are counted and
 * reported; any other wrong byte fails.
 * HOTMAP_RACE_SECONDS sets the time (default 10).  (test_faults.c
 * truncates a mapped file that is not being rewritten: no zeros there.)
 *
 * And a reconnect while threads read a file directly: hotmapd is killed
 * and started again on the same socket, over and over, while 4 threads
 * read the file out of the client's own mapping (which needs no daemon,
 * so they go on through the gap); the reconnect reopens the file under
 * them.  Every byte is checked; no read may crash or return another
 * file's bytes, and reads go on after each reconnect.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/harness.h"

#define MiB (1024u * 1024u)
#define FILE_SIZE (4 * MiB)
#define SEED 77
#define READERS 8

struct race {
	struct harness *h;
	char path[PATH_MAX];
	atomic_bool stop;
	uint8_t *canon;		/* the file's bytes at full length */
};

struct reader {
	struct race *r;
	int index;
	pthread_t thread;
	hm_client *c;		/* connected by the test's own thread */
	hm_file *f;
	/* results */
	uint64_t reads, shorts, bytes, zeroed;
	int errors;		/* calls that failed */
	int wrong;		/* results that were not a prefix */
	char why[256];
};

/* Whether every byte of got that differs from want is a zero. */
static bool
only_zeros_differ(const uint8_t *got, const uint8_t *want, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (got[i] != want[i] && got[i] != 0)
			return false;
	return true;
}

static void *
reader_main(void *arg)
{
	struct reader *rd = arg;
	uint64_t rng = 1000 + (uint64_t)rd->index;
	uint8_t *buf = malloc(256 * 1024);
	hm_file *f = rd->f;

	if (buf == NULL)
		return NULL;
	while (!atomic_load(&rd->r->stop)) {
		uint64_t off = harness_rand(&rng) % FILE_SIZE;
		size_t len = 1 + (size_t)(harness_rand(&rng) % (256 * 1024));
		ssize_t n;

		/* not zeros: a read that wrote nothing must not pass for one
		 * that met the race's zeros */
		memset(buf, 0xa5, len);
		n = hm_pread(f, buf, len, off);

		rd->reads++;
		if (n < 0) {
			if (rd->errors++ == 0)
				snprintf(rd->why, sizeof rd->why, "%zu at %llu: %s (%s)", len,
					 (unsigned long long)off, strerror(errno), hm_last_error());
			continue;
		}
		if ((size_t)n <= len && off + (uint64_t)n <= FILE_SIZE &&
		    memcmp(buf, rd->r->canon + off, (size_t)n) != 0 &&
		    only_zeros_differ(buf, rd->r->canon + off, (size_t)n)) {
			rd->zeroed++;	/* zeros a racing truncation and regrowth left */
			continue;
		}
		if ((size_t)n > len || off + (uint64_t)n > FILE_SIZE ||
		    memcmp(buf, rd->r->canon + off, (size_t)n) != 0) {
			if (rd->wrong++ == 0) {
				size_t i = 0;

				while (i < (size_t)n && buf[i] == rd->r->canon[off + i])
					i++;
				size_t z = i, nz = 0, k;

				while (z < (size_t)n && buf[z] == 0)
					z++;
				for (k = 0; k < (size_t)n; k++)
					nz += buf[k] != rd->r->canon[off + k] && buf[k] != 0;
				snprintf(rd->why, sizeof rd->why,
					 "%zu at %llu gave %zd bytes, first wrong at +%zu (0x%02x, not 0x%02x); "
					 "zeros to +%zu (file offset %llu), %zu wrong bytes not zero",
					 len, (unsigned long long)off, n, i, i < (size_t)n ? buf[i] : 0,
					 i < (size_t)n ? rd->r->canon[off + i] : 0, z,
					 (unsigned long long)(off + z), nz);
			}
			continue;
		}
		if ((size_t)n < len)
			rd->shorts++;
		rd->bytes += (uint64_t)n;
	}
	free(buf);
	return NULL;
}

static int
setup(void **state)
{
	*state = harness_start(*state);
	return 0;
}

static int
teardown(void **state)
{
	unsetenv("HOTMAP_SHM_SIZE");
	unsetenv("HOTMAP_POLL");
	harness_stop(*state);
	return 0;
}

static const struct harness_opts opts_poll = {
	.extra = { "--poll-us", "20", NULL },
};

static const struct harness_opts opts_default = { .backend = NULL };

static void
test_truncate_race(void **state)
{
	struct race r = { .h = *state };
	struct reader rd[READERS];
	const char *secs = getenv("HOTMAP_RACE_SECONDS");
	uint64_t rng = 5;
	int64_t end;
	uint64_t rounds = 0, total_reads = 0, total_shorts = 0, total_zeroed = 0;
	hm_client *admin;
	int fd, i, errors = 0, wrong = 0;

	harness_path(r.h, "root/race", r.path);
	harness_write_file(r.path, FILE_SIZE, SEED);
	r.canon = malloc(FILE_SIZE);
	assert_non_null(r.canon);
	harness_fill(r.canon, FILE_SIZE, SEED, 0);
	fd = open(r.path, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);

	/* Reader i: backend by i % 3 (auto, which maps; mmap required;
	 * pread), transport by i / 3 (shared region, socket only, polling
	 * ring): 8 of the 9 pairs, all but pread through the ring.  The
	 * transport is chosen at connect, from the environment, so this
	 * thread connects them all. */
	for (i = 0; i < READERS; i++) {
		static const int flags[] = { 0, HM_O_MMAP, HM_O_PREAD };

		rd[i] = (struct reader){ .r = &r, .index = i };
		if (i / 3 == 1)
			setenv("HOTMAP_SHM_SIZE", "0", 1);
		else
			unsetenv("HOTMAP_SHM_SIZE");
		setenv("HOTMAP_POLL", i / 3 == 2 ? "1" : "0", 1);
		rd[i].c = harness_connect(r.h);
		rd[i].f = hm_open(rd[i].c, r.path, flags[i % 3]);
		assert_non_null(rd[i].f);
	}
	for (i = 0; i < READERS; i++)
		assert_int_equal(pthread_create(&rd[i].thread, NULL, reader_main, &rd[i]), 0);
	end = harness_now_ms() + 1000 * (int64_t)(secs != NULL ? atoi(secs) : 10);
	while (harness_now_ms() < end) {
		off_t len = (off_t)(harness_rand(&rng) % FILE_SIZE);
		off_t pos;

		assert_int_equal(ftruncate(fd, len), 0);
		for (pos = len; pos < (off_t)FILE_SIZE; pos += 256 * 1024) {
			size_t n = FILE_SIZE - (size_t)pos < 256 * 1024 ? FILE_SIZE - (size_t)pos :
									   256 * 1024;

			assert_int_equal(pwrite(fd, r.canon + pos, n, pos), (ssize_t)n);
		}
		rounds++;
		/* room for the readers: on 2 cores (and under a sanitizer)
		 * the writer would otherwise take them over */
		usleep(200);
	}
	atomic_store(&r.stop, true);
	for (i = 0; i < READERS; i++) {
		pthread_join(rd[i].thread, NULL);
		hm_close(rd[i].f);
		hm_disconnect(rd[i].c);
		total_reads += rd[i].reads;
		total_shorts += rd[i].shorts;
		total_zeroed += rd[i].zeroed;
		errors += rd[i].errors;
		wrong += rd[i].wrong;
		if (rd[i].errors > 0 || rd[i].wrong > 0)
			print_message("# reader %d: %d errors, %d wrong: %s\n", i, rd[i].errors,
				      rd[i].wrong, rd[i].why);
	}
	print_message("# %llu truncate-and-grow rounds; %llu reads, %llu of them short, "
		      "%llu with zeros from the race\n",
		      (unsigned long long)rounds, (unsigned long long)total_reads,
		      (unsigned long long)total_shorts, (unsigned long long)total_zeroed);
	print_message("# reads per reader:");
	for (i = 0; i < READERS; i++)
		print_message(" %llu", (unsigned long long)rd[i].reads);
	print_message("\n");
	/* the daemon is still well, and says what it recovered from */
	admin = harness_connect(r.h);
	print_message("# sigbus_recoveries %llu, stale_replaced %llu\n",
		      (unsigned long long)harness_stat(admin, "sigbus_recoveries"),
		      (unsigned long long)harness_stat(admin, "stale_replaced"));
	assert_int_equal(hm_ping(admin, NULL), 0);
	hm_disconnect(admin);
	close(fd);
	free(r.canon);
	assert_int_equal(errors, 0);
	assert_int_equal(wrong, 0);
	/* every reader, whatever its backend and transport, took part */
	for (i = 0; i < READERS; i++)
		if (rd[i].reads == 0)
			fail_msg("reader %d read nothing in the time", i);
	assert_true(total_reads > 100);
	/* the race is rare (a few reads in 10 s); zeros in many reads are a
	 * bug, not the race */
	if (total_zeroed * 100 > total_reads)
		fail_msg("%llu of %llu reads had zeros", (unsigned long long)total_zeroed,
			 (unsigned long long)total_reads);
	assert_true(rounds > 10);
}

/* --- a reconnect while threads read directly ------------------------------- */

#define RECONNECT_READERS 4
#define RECONNECT_ROUNDS 12
#define RECONNECT_SEED 78

struct direct_reader {
	pthread_t thread;
	hm_file *f;
	const uint8_t *canon;
	unsigned index;
	atomic_bool *stop;
	atomic_uint ok;		/* reads that returned the right bytes */
	atomic_uint lost;	/* reads failed with a lost daemon's error */
	int wrong;		/* wrong bytes, or another error */
	char why[256];
};

/* The errors libhotmap(3) gives a call while its daemon is away (ERRORS:
 * ECONNRESET, EPIPE; ENOENT, ECONNREFUSED while none listens; ENOTCONN). */
static bool
daemon_lost_error(int err)
{
	return err == ECONNRESET || err == EPIPE || err == ENOENT || err == ECONNREFUSED ||
	       err == ENOTCONN;
}

static void *
direct_reader_main(void *arg)
{
	struct direct_reader *rd = arg;
	uint64_t rng = 2000 + rd->index;
	uint8_t *buf = malloc(256 * 1024);

	if (buf == NULL)
		return NULL;
	while (!atomic_load(rd->stop) && rd->wrong == 0) {
		uint64_t off = harness_rand(&rng) % FILE_SIZE;
		size_t len = 1 + (size_t)(harness_rand(&rng) % (256 * 1024));
		size_t want = len < FILE_SIZE - off ? len : (size_t)(FILE_SIZE - off);
		ssize_t n;

		memset(buf, 0xa5, len);
		n = hm_pread(rd->f, buf, len, off);
		if (n < 0 && daemon_lost_error(errno)) {
			atomic_fetch_add(&rd->lost, 1);
			continue;
		}
		if (n < 0) {
			snprintf(rd->why, sizeof rd->why, "%zu at %llu: %s (%s)", len,
				 (unsigned long long)off, strerror(errno), hm_last_error());
			rd->wrong = 1;
		} else if ((size_t)n != want || memcmp(buf, rd->canon + off, want) != 0) {
			size_t i = 0;

			while (i < (size_t)n && i < want && buf[i] == rd->canon[off + i])
				i++;
			snprintf(rd->why, sizeof rd->why,
				 "%zu at %llu gave %zd bytes (want %zu), first wrong at +%zu", len,
				 (unsigned long long)off, n, want, i);
			rd->wrong = 1;
		} else {
			atomic_fetch_add(&rd->ok, 1);
		}
	}
	free(buf);
	return NULL;
}

/* Waits until every reader has made more right reads than before[i]
 * (fails on a wrong one, or after a minute without one). */
static void
wait_direct_reads(struct direct_reader *rd, const unsigned *before, unsigned more)
{
	int64_t deadline = harness_now_ms() + 60000;
	unsigned i;

	for (i = 0; i < RECONNECT_READERS; i++)
		while (atomic_load(&rd[i].ok) < before[i] + more && rd[i].wrong == 0) {
			if (harness_now_ms() > deadline)
				fail_msg("reader %u made no right read in a minute", i);
			harness_sleep_ms(1);
		}
}

static void
test_reconnect_direct(void **state)
{
	struct harness *h = *state;
	struct direct_reader rd[RECONNECT_READERS];
	atomic_bool stop = false;
	unsigned before[RECONNECT_READERS], i, round, lost = 0, ok = 0;
	char path[PATH_MAX], other[PATH_MAX];
	struct hm_options o = HM_OPTIONS_INIT;
	struct hm_stat st;
	uint8_t *canon;
	hm_client *c;
	hm_file *f, *g;
	int gfd;

	harness_path(h, "root/reconnect", path);
	harness_write_file(path, FILE_SIZE, RECONNECT_SEED);
	/* another file the client reads: its descriptors are the ones a
	 * closed descriptor number of the first file's could be reused by */
	harness_path(h, "root/reconnect-other", other);
	harness_write_file(other, FILE_SIZE, RECONNECT_SEED + 1);
	gfd = open(other, O_RDONLY | O_CLOEXEC);
	assert_true(gfd >= 0);
	canon = malloc(FILE_SIZE);
	assert_non_null(canon);
	harness_fill(canon, FILE_SIZE, RECONNECT_SEED, 0);
	o.direct = 1;		/* read granted files directly, */
	o.reconnect_ms = 30000;	/* and come back when the daemon does */
	c = hm_connect_opts(h->sock, &o);
	if (c == NULL)
		fail_msg("hm_connect_opts: %s", strerror(errno));
	f = hm_open(c, path, HM_O_DIRECT);
	assert_non_null(f);
	g = hm_open(c, other, 0);
	assert_non_null(g);
	assert_int_equal(hm_stat(f, &st), 0);
	if (st.direct != HM_DIRECT_YES)
		fail_msg("not read directly: direct %d (%s)", st.direct, st.direct_text);
	for (i = 0; i < RECONNECT_READERS; i++) {
		memset(&rd[i], 0, sizeof rd[i]);
		rd[i].f = f;
		rd[i].canon = canon;
		rd[i].index = i;
		rd[i].stop = &stop;
		assert_int_equal(pthread_create(&rd[i].thread, NULL, direct_reader_main, &rd[i]),
				 0);
	}
	for (round = 0; round < RECONNECT_ROUNDS; round++) {
		for (i = 0; i < RECONNECT_READERS; i++)
			before[i] = atomic_load(&rd[i].ok);
		wait_direct_reads(rd, before, 20);
		harness_kill(h);
		harness_restart(h);
		/* the ping finds the connection lost: the client reconnects
		 * and reopens f while the threads read it */
		if (hm_ping(c, NULL) < 0)
			fail_msg("round %u: ping: %s (%s)", round, strerror(errno), hm_last_error());
		assert_int_equal(hm_stat(f, &st), 0);
		assert_int_equal(st.direct, HM_DIRECT_YES);	/* granted again, mapped */
		harness_check_read(g, gfd, 4096, 100000);
	}
	/* reads go on after the last reconnect */
	for (i = 0; i < RECONNECT_READERS; i++)
		before[i] = atomic_load(&rd[i].ok);
	wait_direct_reads(rd, before, 50);
	atomic_store(&stop, true);
	for (i = 0; i < RECONNECT_READERS; i++) {
		pthread_join(rd[i].thread, NULL);
		ok += atomic_load(&rd[i].ok);
		lost += atomic_load(&rd[i].lost);
		if (rd[i].wrong)
			fail_msg("reader %u: %s", i, rd[i].why);
	}
	print_message("# %u reconnects; %u right reads, %u failed while the daemon was away\n",
		      RECONNECT_ROUNDS, ok, lost);
	hm_close(g);
	hm_close(f);
	hm_disconnect(c);
	close(gfd);
	free(canon);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate_setup_teardown(test_truncate_race, setup, teardown,
							 (void *)&opts_poll),
		cmocka_unit_test_prestate_setup_teardown(test_reconnect_direct, setup, teardown,
							 (void *)&opts_default),
	};

	return cmocka_run_group_tests_name("races", tests, NULL, NULL);
}
