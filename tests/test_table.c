/* SPDX-License-Identifier: MIT */
/*
 * test_table.c - the table of granted files (hotmapd.conf(5) direct-table,
 * docs/direct-reads.md "The table of granted files").
 *
 * The lookup itself (proto/direct.h) on tables made here: a file found at
 * its hash's entry or a probe after it, never under an odd generation or
 * a head it cannot read, and never a mix of two files' fields while a
 * writer thread republishes the entry as hotmapd does.  Then against a real hotmapd: a
 * file granted to one client is published; a process with the fallback
 * (HOTMAP_FALLBACK=local) that opens it reads it from its own mapping,
 * byte for byte, without connecting (hotmapd counts no new client); a
 * file not in the table, or a call only hotmapd answers, makes it
 * connect; a writer revokes the entry and the reader sees the file as
 * pread(2) does; files not every user may read are never published; a
 * table that others may write, or that no live hotmapd holds, is not
 * trusted; a forked child reads right; the linger gives entries back;
 * the table holds no more than a quarter of hotmapd's descriptors, nor
 * more than one user's share of entries for one user's grants, and the
 * files past either bound are read as any other; hotmapd removes the
 * table when it stops.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "proto/direct.h"
#include "tests/harness.h"

#define MiB (1024u * 1024u)
#define SIZE_A		(5 * MiB + 123)
#define WAIT_MS		20000	/* a bound on a wait, never a verdict on speed */

static const struct harness_opts opts_default = { .backend = NULL };
static const struct harness_opts opts_root = { .with_root = true };
static const struct harness_opts opts_linger1 = {
	.extra = { "--direct-table", "1", NULL },
};
static const struct harness_opts opts_off = {
	.extra = { "--direct-table", "0", NULL },
};
/* hotmapd's descriptors: a quarter of them (BOUND_ENTRIES) is as many
 * entries as its table may hold */
#define BOUND_NOFILE	160u
#define BOUND_ENTRIES	(BOUND_NOFILE / 4u)
static const struct harness_opts opts_bound = { .nofile = BOUND_NOFILE };
/* descriptors for more than one user's share of the table */
#define SHARE		1024u	/* daemon/service/direct_table.h: DIRECT_TABLE_PER_UID */
static const struct harness_opts opts_share = { .nofile = 8192 };

/* --- the lookup, on tables made here ------------------------------------ */

static uint8_t *
table_new(uint32_t n, size_t *len)
{
	uint8_t *t;
	struct hm_table_head *head;
	uint32_t i;

	*len = HM_TABLE_HEAD_BYTES + (size_t)n * HM_DIRECT_SLOT_BYTES;
	t = calloc(1, *len);
	assert_non_null(t);
	head = (struct hm_table_head *)t;
	head->magic = HM_TABLE_MAGIC;
	head->version = HM_TABLE_VERSION;
	head->entries = n;
	for (i = 0; i < n; i++)
		hm_table_entry(t, i)->gen = 1;
	return t;
}

static void
table_put(uint8_t *t, uint32_t i, uint64_t gen, uint64_t dev, uint64_t ino, uint64_t size)
{
	struct hm_direct_slot *e = hm_table_entry(t, i);

	e->gen = gen;
	e->dev = dev;
	e->ino = ino;
	e->size = size;
	e->mtime_ns = (int64_t)(size * 3);
}

static void
test_lookup(void **state)
{
	size_t len;
	uint8_t *t = table_new(64, &len);
	uint32_t n = hm_table_entries(t, len), k;
	uint64_t gen = 0, size = 0;
	int64_t mt = 0;

	(void)state;
	assert_int_equal(n, 64);
	k = hm_table_hash(7, 1234, n);
	/* at its hash's entry */
	table_put(t, k, 4, 7, 1234, 999);
	assert_non_null(hm_table_find(t, n, 7, 1234, &gen, &size, &mt));
	assert_int_equal(gen, 4);
	assert_int_equal(size, 999);
	assert_int_equal(mt, 999 * 3);
	/* another file, or the same inode on another device: not found */
	assert_null(hm_table_find(t, n, 7, 1235, &gen, &size, &mt));
	assert_null(hm_table_find(t, n, 8, 1234, &gen, &size, &mt));
	/* revoked: odd */
	table_put(t, k, 5, 7, 1234, 999);
	assert_null(hm_table_find(t, n, 7, 1234, &gen, &size, &mt));
	/* the last probe after its hash's entry, wrapping round */
	table_put(t, (k + HM_TABLE_PROBES - 1) & (n - 1), 10, 7, 1234, 5);
	assert_non_null(hm_table_find(t, n, 7, 1234, &gen, &size, &mt));
	assert_int_equal(gen, 10);
	assert_int_equal(size, 5);
	/* one further: never looked at */
	table_put(t, (k + HM_TABLE_PROBES - 1) & (n - 1), 11, 7, 1234, 5);
	table_put(t, (k + HM_TABLE_PROBES) & (n - 1), 12, 7, 1234, 5);
	assert_null(hm_table_find(t, n, 7, 1234, &gen, &size, &mt));
	free(t);
}

/* A writer republishing one entry as hotmapd does (direct_grant: odd,
 * a release fence, the fields, then even), between two files; readers
 * must find each file with its own size and time, never the other's. */
struct torn {
	uint8_t *t;
	uint32_t k;
	atomic_int stop;
	atomic_ulong published;	/* A's publications so far */
};

#define FILE_A_SIZE	1111u
#define FILE_B_SIZE	2222u

static void *
torn_writer(void *arg)
{
	struct torn *w = arg;
	struct hm_direct_slot *e = hm_table_entry(w->t, w->k);
	uint64_t gen = 1, i;

	for (i = 0; !atomic_load(&w->stop); i++) {
		bool a = i % 2 == 0;

		__atomic_store_n(&e->gen, gen, __ATOMIC_RELEASE);	/* odd */
		__atomic_thread_fence(__ATOMIC_RELEASE);
		__atomic_store_n(&e->dev, a ? 7 : 8, __ATOMIC_RELAXED);
		__atomic_store_n(&e->ino, a ? 100 : 200, __ATOMIC_RELAXED);
		__atomic_store_n(&e->size, a ? FILE_A_SIZE : FILE_B_SIZE, __ATOMIC_RELAXED);
		__atomic_store_n(&e->mtime_ns, a ? 5 : 6, __ATOMIC_RELAXED);
		__atomic_store_n(&e->gen, gen + 1, __ATOMIC_RELEASE);	/* even */
		gen += 2;
		if (a)
			atomic_fetch_add(&w->published, 1);
		for (volatile unsigned spin = 0; spin < 300; spin++)
			;	/* published a while, as entries are */
	}
	return NULL;
}

static void
test_lookup_under_writer(void **state)
{
	size_t len;
	struct torn w = { .t = table_new(64, &len) };
	uint64_t gen, size, found = 0;
	int64_t mt;
	pthread_t th;
	unsigned i;

	(void)state;
	/* both files hash somewhere: put them where A's lookup starts */
	w.k = hm_table_hash(7, 100, 64);
	atomic_init(&w.stop, 0);
	atomic_init(&w.published, 0);
	assert_int_equal(pthread_create(&th, NULL, torn_writer, &w), 0);
	/* until the writer has published a while, however it is scheduled
	 * (no clock: a count of its publications) */
	while (atomic_load(&w.published) < 1000)
		sched_yield();
	for (i = 0; i < 2000000 || (found == 0 && atomic_load(&w.published) < 100000000); i++) {
		if (hm_table_find(w.t, 64, 7, 100, &gen, &size, &mt) != NULL) {
			found++;
			assert_int_equal(gen % 2, 0);
			assert_int_equal(size, FILE_A_SIZE);
			assert_int_equal(mt, 5);
		}
	}
	atomic_store(&w.stop, 1);
	pthread_join(th, NULL);
	assert_true(found > 0);
	print_message("# %llu of 2000000 lookups found the file, each whole\n",
		      (unsigned long long)found);
	free(w.t);
}

static void
test_head_checked(void **state)
{
	size_t len;
	uint8_t *t = table_new(64, &len);
	struct hm_table_head *head = (struct hm_table_head *)t;

	(void)state;
	assert_int_equal(hm_table_entries(t, len), 64);
	assert_int_equal(hm_table_entries(t, len - 1), 0);	/* cut short */
	assert_int_equal(hm_table_entries(t, HM_TABLE_HEAD_BYTES - 1), 0);
	head->entries = 48;	/* not a power of two */
	assert_int_equal(hm_table_entries(t, len), 0);
	head->entries = 0;
	assert_int_equal(hm_table_entries(t, len), 0);
	head->entries = 64;
	head->version = HM_TABLE_VERSION + 1;
	assert_int_equal(hm_table_entries(t, len), 0);
	head->version = HM_TABLE_VERSION;
	head->magic ^= 1;
	assert_int_equal(hm_table_entries(t, len), 0);
	free(t);
}

/* --- against hotmapd ----------------------------------------------------- */

static int
setup(void **state)
{
	unsetenv("HOTMAP_FALLBACK");
	unsetenv("HOTMAP_TABLE");
	*state = harness_start(*state);
	return 0;
}

/* setup, or none (the test skips) where hotmapd's descriptor limit cannot
 * be had */
static int
setup_nofile(void **state)
{
	const struct harness_opts *o = *state;

	if (!harness_can_nofile(o->nofile)) {
		*state = NULL;
		return 0;
	}
	return setup(state);
}

static int
teardown(void **state)
{
	struct harness *h = *state;

	harness_stop(h);	/* after harness_kill, only cleans up */
	harness_free_buffers();
	unsetenv("HOTMAP_TABLE");
	return 0;
}

/* A file of size bytes at DIR/name, with mode. */
static void
make_file(const struct harness *h, const char *name, uint64_t size, mode_t mode, char *path)
{
	harness_path(h, name, path);
	harness_write_file(path, size, 42);
	assert_int_equal(chmod(path, mode), 0);
}

/* path granted to a direct client a (published if anyone may read it). */
static hm_file *
grant(hm_client *a, const char *path)
{
	hm_file *f = hm_open(a, path, HM_O_DIRECT);
	struct hm_stat st;
	char buf[16];

	assert_non_null(f);
	assert_int_equal(hm_pread(f, buf, sizeof buf, 0), sizeof buf);
	assert_int_equal(hm_stat(f, &st), 0);
	assert_true(st.direct_text[0] == '\0' || strstr(st.direct_text, "granted") != NULL);
	return f;
}

static bool
from_table(hm_file *f)
{
	struct hm_stat st;

	assert_int_equal(hm_stat(f, &st), 0);
	if (strstr(st.direct_text, "table of granted files") == NULL)
		return false;
	assert_int_equal(st.direct, HM_DIRECT_YES);
	assert_int_equal(st.backend, HM_BACKEND_MMAP);
	return true;
}

/* Reads of f checked against fd, byte for byte. */
static void
check_reads(hm_file *f, int fd, uint64_t size)
{
	static const uint64_t offs[] = { 0, 1, 4095, 4096, 65537, 2 * MiB - 1, 3 * MiB + 3 };
	static const size_t lens[] = { 0, 1, 100, 4096, 70000, 600 * 1024 };
	size_t i, j;

	for (i = 0; i < sizeof offs / sizeof offs[0]; i++)
		for (j = 0; j < sizeof lens / sizeof lens[0]; j++)
			harness_check_read(f, fd, offs[i], lens[j]);
	harness_check_read(f, fd, size - 10, 100);	/* short at the end */
	harness_check_read(f, fd, size, 10);		/* 0 at the end */
	harness_check_read(f, fd, size + 4096, 10);	/* 0 past it */
}

/*
 * What most tests start from: DIR/a (SIZE_A bytes, anyone may read it)
 * granted to a direct client a, which publishes it (publish); then a
 * client b with the fallback that opened it from the table
 * (open_published); fd the test's own descriptor of it.
 */
struct scene {
	hm_client *a, *b;
	hm_file *fa, *fb;
	char path[PATH_MAX];
	int fd;
};

static void
publish(const struct harness *h, struct scene *s)
{
	memset(s, 0, sizeof *s);
	s->a = harness_connect_direct(h, 0, NULL);
	make_file(h, "a", SIZE_A, 0644, s->path);
	s->fa = grant(s->a, s->path);
	s->fd = open(s->path, O_RDONLY);
	assert_true(s->fd >= 0);
}

static void
open_published(const struct harness *h, struct scene *s)
{
	s->b = harness_connect_local(h, 1);
	s->fb = hm_open(s->b, s->path, 0);
	assert_non_null(s->fb);
	assert_true(from_table(s->fb));
}

/* What is still open goes (a NULL client or file was let go already). */
static void
scene_end(struct scene *s)
{
	if (s->fb != NULL)
		assert_int_equal(hm_close(s->fb), 0);
	hm_disconnect(s->b);
	if (s->fa != NULL)
		(void)hm_close(s->fa);	/* its daemon may be gone: tests say so */
	hm_disconnect(s->a);
	close(s->fd);
}

static void
test_read_without_contact(void **state)
{
	struct harness *h = *state;
	struct scene s;
	char other[PATH_MAX];
	hm_file *fo;
	uint64_t clients;
	struct hm_io io;
	uint8_t buf[4096];

	publish(h, &s);
	make_file(h, "other", 100000, 0644, other);
	assert_int_equal(harness_stat(s.a, "direct_table_files"), 1);
	assert_int_equal(harness_stat(s.a, "direct_table_published"), 1);
	clients = harness_stat(s.a, "clients_total");
	open_published(h, &s);
	check_reads(s.fb, s.fd, SIZE_A);
	io = (struct hm_io){ .file = s.fb, .offset = 12345, .len = sizeof buf, .buf = buf };
	assert_int_equal(hm_read_batch(s.b, &io, 1), 0);
	assert_int_equal(io.result, sizeof buf);
	harness_check_read(s.fb, s.fd, 777777, 5000);
	/* read from b's own mapping: warmed (populated), copied, viewed */
	assert_int_equal(hm_warm(s.fb, 0, SIZE_A), SIZE_A);
	harness_check_read(s.fb, s.fd, 2 * MiB + 100, 4096);
	{
		struct hm_read_stats rs = { .size = sizeof rs };
		struct hm_view v;
		uint8_t want[5000];

		assert_int_equal(hm_view_range(s.fb, 4 * MiB + 1, sizeof want, &v), 0);
		assert_int_equal(v.len, sizeof want);
		assert_int_equal(pread(s.fd, want, sizeof want, 4 * MiB + 1), sizeof want);
		assert_memory_equal(v.data, want, sizeof want);
		hm_view_release(&v);
		assert_int_equal(hm_read_stats(s.fb, &rs), 0);
		assert_int_equal(rs.daemon_reads, 0);
		assert_true(rs.populates > 0);
		assert_true(rs.copy_reads > 0);
		assert_true(rs.view_reads > 0);
	}
	/* hotmapd never heard of b */
	assert_int_equal(harness_stat(s.a, "clients_total"), clients);

	/* a file not in the table: b asks hotmapd now */
	fo = hm_open(s.b, other, 0);
	assert_non_null(fo);
	assert_false(from_table(fo));
	harness_wait_stat(s.a, "clients_total", clients + 1);
	/* the table's file stays b's own */
	check_reads(s.fb, s.fd, SIZE_A);
	assert_true(from_table(s.fb));
	assert_int_equal(hm_close(fo), 0);
	scene_end(&s);
}

/* hm_ping needs hotmapd: a deferred client connects for it. */
static void
test_daemon_call_connects(void **state)
{
	struct harness *h = *state;
	struct hm_ping p;
	struct scene s;
	uint64_t clients;

	publish(h, &s);
	clients = harness_stat(s.a, "clients_total");
	open_published(h, &s);
	assert_int_equal(harness_stat(s.a, "clients_total"), clients);
	assert_int_equal(hm_ping(s.b, &p), 0);
	assert_int_equal(harness_stat(s.a, "clients_total"), clients + 1);
	assert_true(from_table(s.fb));
	scene_end(&s);
}

/* A writer revokes the entry (the lease breaks): the reader then sees the
 * file as pread(2) does, shrunk and rewritten. */
static void
test_writer_revokes(void **state)
{
	struct harness *h = *state;
	struct hm_stat st;
	struct scene s;
	uint64_t revoked;
	int wfd;

	publish(h, &s);
	assert_int_equal(hm_close(s.fa), 0);	/* the table's lease lingers on */
	s.fa = NULL;
	open_published(h, &s);
	check_reads(s.fb, s.fd, SIZE_A);
	revoked = harness_stat(s.a, "direct_table_revoked");
	/* blocks until hotmapd let the lease go, after the entry went odd */
	wfd = open(s.path, O_WRONLY | O_TRUNC);
	assert_true(wfd >= 0);
	assert_int_equal(harness_stat(s.a, "direct_table_revoked"), revoked + 1);
	assert_int_equal(ftruncate(wfd, 3 * MiB + 5), 0);
	assert_int_equal(pwrite(wfd, "changed!", 8, 4096), 8);
	close(wfd);
	check_reads(s.fb, s.fd, 3 * MiB + 5);
	harness_check_read(s.fb, s.fd, 4090, 20);
	assert_int_equal(hm_stat(s.fb, &st), 0);
	assert_int_equal(st.direct, HM_DIRECT_NO);
	assert_int_equal(st.size, 3 * MiB + 5);
	assert_non_null(strstr(st.direct_text, "revoked"));
	harness_wait_stat(s.a, "direct_table_files", 0);	/* the sweep gave it back */
	scene_end(&s);
}

/* Only files every user may read are published. */
static void
test_private_file_not_published(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX];
	hm_client *a = harness_connect_direct(h, 0, NULL), *b;
	hm_file *fa, *fb;
	int fd;

	make_file(h, "private", SIZE_A, 0640, path);
	fa = grant(a, path);
	assert_int_equal(harness_stat(a, "direct_grants"), 1);
	assert_int_equal(harness_stat(a, "direct_table_files"), 0);
	b = harness_connect_local(h, 1);
	fb = hm_open(b, path, 0);
	assert_non_null(fb);
	assert_false(from_table(fb));
	fd = open(path, O_RDONLY);
	check_reads(fb, fd, SIZE_A);
	close(fd);
	hm_close(fb);
	hm_disconnect(b);
	hm_close(fa);
	hm_disconnect(a);
}

/* A file opened by a client b that must not take the table: not from it,
 * and b connects (hotmapd counts one client more). */
static void
expect_connects(const struct harness *h, struct scene *s, uint64_t clients)
{
	hm_client *b = harness_connect_local(h, 1);
	hm_file *fb = hm_open(b, s->path, 0);

	assert_non_null(fb);
	assert_false(from_table(fb));
	harness_wait_stat(s->a, "clients_total", clients);
	check_reads(fb, s->fd, SIZE_A);
	hm_close(fb);
	hm_disconnect(b);
}

/* A deferred client's open by path (HM_O_PATH): only hotmapd opens beneath
 * its roots, so the client connects for it, and the file reads right. */
static void
test_path_open_connects(void **state)
{
	struct harness *h = *state;
	char rpath[PATH_MAX];
	struct scene s;
	uint64_t clients;
	hm_file *fp;
	int fd;

	publish(h, &s);
	clients = harness_stat(s.a, "clients_total");
	open_published(h, &s);
	harness_path(h, "root/p", rpath);
	harness_write_file(rpath, 100000, 7);
	fp = hm_open(s.b, rpath, HM_O_PATH);
	assert_non_null(fp);
	assert_int_equal(harness_stat(s.a, "clients_total"), clients + 1);
	fd = open(rpath, O_RDONLY);
	assert_true(fd >= 0);
	harness_check_read(fp, fd, 0, 4096);
	harness_check_read(fp, fd, 99990, 100);	/* short at the end */
	close(fd);
	assert_true(from_table(s.fb));	/* the table's file stays b's own */
	check_reads(s.fb, s.fd, SIZE_A);
	assert_int_equal(hm_close(fp), 0);
	scene_end(&s);
}

/* A table others may write is not trusted; nor, with HOTMAP_TABLE=0, any. */
static void
test_untrusted_table(void **state)
{
	struct harness *h = *state;
	char table[PATH_MAX + 8];
	struct scene s;
	uint64_t clients;

	publish(h, &s);
	clients = harness_stat(s.a, "clients_total");
	snprintf(table, sizeof table, "%s%s", h->sock, HM_TABLE_SUFFIX);
	assert_int_equal(chmod(table, 0666), 0);
	expect_connects(h, &s, clients + 1);
	assert_int_equal(chmod(table, 0644), 0);
	setenv("HOTMAP_TABLE", "0", 1);
	expect_connects(h, &s, clients + 2);
	unsetenv("HOTMAP_TABLE");
	scene_end(&s);
}

/* A table no live hotmapd holds (it was killed) is not trusted: the
 * client reads locally, right. */
static void
test_dead_daemon_table(void **state)
{
	struct harness *h = *state;
	char table[PATH_MAX + 8];
	struct scene s;
	hm_file *fb;

	publish(h, &s);
	harness_kill(h);
	snprintf(table, sizeof table, "%s%s", h->sock, HM_TABLE_SUFFIX);
	assert_int_equal(access(table, F_OK), 0);	/* left behind */
	s.b = harness_connect_local(h, 1);
	fb = hm_open(s.b, s.path, 0);
	assert_non_null(fb);
	assert_false(from_table(fb));
	check_reads(fb, s.fd, SIZE_A);
	hm_close(fb);
	scene_end(&s);
}

/* hotmapd killed, then started again: the new daemon revokes the old
 * table, which a process still maps, and that process reads its file as
 * pread(2) does; what it opens after is not taken from the old table. */
static void
test_restart_revokes_old_table(void **state)
{
	struct harness *h = *state;
	struct hm_stat st;
	struct scene s;
	hm_file *fb2;

	publish(h, &s);
	open_published(h, &s);
	harness_kill(h);
	harness_restart(h);
	assert_int_equal(hm_stat(s.fb, &st), 0);
	assert_int_equal(st.direct, HM_DIRECT_NO);
	check_reads(s.fb, s.fd, SIZE_A);
	fb2 = hm_open(s.b, s.path, 0);	/* the old table: no lock holder now */
	assert_non_null(fb2);
	assert_false(from_table(fb2));
	check_reads(fb2, s.fd, SIZE_A);
	hm_close(fb2);
	scene_end(&s);
}

/* A child forked after the open reads right, and so does the parent. */
static void
test_fork(void **state)
{
	struct harness *h = *state;
	struct scene s;
	pid_t pid;
	int status;

	publish(h, &s);
	open_published(h, &s);
	harness_check_read(s.fb, s.fd, 100, 5000);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		static uint8_t got[300000 + HARNESS_SLACK], ref[300000 + HARNESS_SLACK];
		char why[256];
		int bad = harness_compare_read(s.fb, s.fd, 1 * MiB + 7, 300000, got, ref, NULL, why,
					       sizeof why) != 0 ||
			  harness_compare_read(s.fb, s.fd, SIZE_A - 5, 50, got, ref, NULL, why,
					       sizeof why) != 0;
		_exit(bad);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	check_reads(s.fb, s.fd, SIZE_A);
	scene_end(&s);
}

/* An entry is given back (and its lease let go) once it lingered. */
static void
test_linger(void **state)
{
	struct harness *h = *state;
	struct scene s;
	int wfd;

	publish(h, &s);
	assert_int_equal(harness_stat(s.a, "direct_table_files"), 1);
	assert_int_equal(hm_close(s.fa), 0);
	s.fa = NULL;
	harness_wait_stat(s.a, "direct_table_files", 0);
	/* given back by the linger, not by a writer; and its lease with it:
	 * a writer that may not wait is not refused */
	assert_int_equal(harness_stat(s.a, "direct_table_revoked"), 0);
	wfd = open(s.path, O_WRONLY | O_NONBLOCK);
	assert_true(wfd >= 0);
	close(wfd);
	scene_end(&s);
}

/* Files f0 .. f(n-1) of 4 KiB and more, that anyone may read, each granted
 * to the direct client a, read and closed: published, then lingering. */
static void
publish_many(const struct harness *h, hm_client *a, unsigned n)
{
	char path[PATH_MAX], name[32];
	unsigned i;

	for (i = 0; i < n; i++) {
		snprintf(name, sizeof name, "f%u", i);
		make_file(h, name, 4096 + i, 0644, path);
		assert_int_equal(hm_close(grant(a, path)), 0);
	}
}

/* How many of f0 .. f(n-1) a new client with the fallback opens from the
 * table (one client a file: an open not in the table connects it); every
 * file read byte for byte either way. */
static unsigned
count_from_table(const struct harness *h, unsigned n)
{
	char path[PATH_MAX], name[32];
	unsigned i, got = 0;

	for (i = 0; i < n; i++) {
		hm_client *b = harness_connect_local(h, 1);
		hm_file *f;
		int fd;

		snprintf(name, sizeof name, "f%u", i);
		harness_path(h, name, path);
		fd = open(path, O_RDONLY);
		assert_true(fd >= 0);
		f = hm_open(b, path, 0);
		assert_non_null(f);
		harness_check_read(f, fd, 0, 4096 + i);
		got += from_table(f);
		assert_int_equal(hm_close(f), 0);
		hm_disconnect(b);
		close(fd);
	}
	return got;
}

/* n files, each granted to one client and let go: the table takes `most`
 * of them (published more often when a file's probes all held this
 * user's live entries and one was given back for it: its own, never
 * another user's), and a client with the fallback reads every one, those
 * from the table and the rest as any other. */
static void
check_bound(struct harness *h, unsigned n, unsigned most)
{
	hm_client *a;

	if (h == NULL) {
		skip();
		return;
	}
	a = harness_connect_direct(h, 0, NULL);
	publish_many(h, a, n);
	assert_int_equal(harness_stat(a, "direct_table_files"), most);
	assert_true(harness_stat(a, "direct_table_published") >= most);
	assert_int_equal(count_from_table(h, n), most);
	hm_disconnect(a);
}

/* Each entry holds a descriptor of hotmapd's: the table holds no more than
 * a quarter of its limit. */
static void
test_descriptor_bound(void **state)
{
	check_bound(*state, BOUND_ENTRIES + 8, BOUND_ENTRIES);
}

/* One user's grants publish no more than its share of the table. */
static void
test_per_uid_share(void **state)
{
	check_bound(*state, SHARE + 6, SHARE);
}

/* direct-table 0: no table at all. */
static void
test_off(void **state)
{
	struct harness *h = *state;
	char table[PATH_MAX + 8];
	struct scene s;

	snprintf(table, sizeof table, "%s%s", h->sock, HM_TABLE_SUFFIX);
	assert_int_equal(access(table, F_OK), -1);
	publish(h, &s);
	assert_int_equal(harness_stat(s.a, "direct_table_files"), 0);
	scene_end(&s);
}

/* hotmapd removes its table when it stops. */
static void
test_removed_at_stop(void **state)
{
	struct harness *h = *state;
	char table[PATH_MAX + 8];

	snprintf(table, sizeof table, "%s%s", h->sock, HM_TABLE_SUFFIX);
	assert_int_equal(access(table, R_OK), 0);
	kill(h->pid, SIGTERM);
	assert_int_equal(waitpid(h->pid, NULL, 0), h->pid);
	h->pid = 0;
	assert_int_equal(access(table, F_OK), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup),
		cmocka_unit_test(test_head_checked),
		cmocka_unit_test(test_lookup_under_writer),
		cmocka_unit_test_prestate_setup_teardown(test_read_without_contact, setup, teardown,
						(void *)&opts_default),
		cmocka_unit_test_prestate_setup_teardown(test_daemon_call_connects, setup, teardown,
						(void *)&opts_default),
		cmocka_unit_test_prestate_setup_teardown(test_path_open_connects, setup, teardown,
						(void *)&opts_root),
		cmocka_unit_test_prestate_setup_teardown(test_writer_revokes, setup, teardown,
						(void *)&opts_default),
		cmocka_unit_test_prestate_setup_teardown(test_private_file_not_published, setup, teardown,
						(void *)&opts_default),
		cmocka_unit_test_prestate_setup_teardown(test_untrusted_table, setup, teardown,
						(void *)&opts_default),
		cmocka_unit_test_prestate_setup_teardown(test_dead_daemon_table, setup, teardown,
						(void *)&opts_default),
		cmocka_unit_test_prestate_setup_teardown(test_restart_revokes_old_table, setup, teardown,
							 (void *)&opts_default),
		cmocka_unit_test_prestate_setup_teardown(test_fork, setup, teardown, (void *)&opts_default),
		cmocka_unit_test_prestate_setup_teardown(test_linger, setup, teardown, (void *)&opts_linger1),
		cmocka_unit_test_prestate_setup_teardown(test_off, setup, teardown, (void *)&opts_off),
		cmocka_unit_test_prestate_setup_teardown(test_descriptor_bound, setup_nofile, teardown,
							 (void *)&opts_bound),
		cmocka_unit_test_prestate_setup_teardown(test_per_uid_share, setup_nofile, teardown,
							 (void *)&opts_share),
		cmocka_unit_test_prestate_setup_teardown(test_removed_at_stop, setup, teardown,
						(void *)&opts_default),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
