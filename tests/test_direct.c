/* SPDX-License-Identifier: MIT */
/*
 * test_direct.c - the direct tier (docs/design.md, "Tiers") against a real
 * hotmapd (tests/harness.h): a granted file read from the client's own
 * mapping, with no round trip, and taken back when the file may change.
 *
 * What a user would notice: reads and views that return pread's bytes,
 * hm_stat without a round trip, promotion by heat, reads that go back
 * through the daemon when someone opens the file for writing, truncates
 * it or evicts it, views that survive a truncation without SIGBUS, many
 * threads reading one client at once, a forked child, and the program's
 * own SIGBUS handlers still getting the faults that are their own, each
 * once, however they chain to the library's handler.  The
 * contract tests of test_integration run through this tier too.
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
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/hotmap_admin.h"
#include "tests/harness.h"

#define KiB (1024u)
#define MiB (1024u * 1024u)
#define TEST_ALARM_S	120

static const struct harness_opts opts_default = { .backend = NULL };
static const struct harness_opts opts_off = { .extra = { "--direct-reads", "no", NULL } };
static const struct harness_opts opts_root = { .with_root = true };
static const struct harness_opts opts_path_fds = {
	.with_root = true, .extra = { "--path-descriptors", "yes", NULL } };

static int
setup(void **state)
{
	unsetenv("HOTMAP_SHM_SIZE");
	unsetenv("HOTMAP_DIRECT_AFTER");
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

/* A client that asks for direct reads, promoting after `after` reads. */
static hm_client *
connect_direct(const struct harness *h, int after)
{
	return harness_connect_direct(h, after, NULL);
}

/* The same with the copy policy's knobs, from the first read: a test of
 * what the mapping does, not of the policy's choice, fixes the way or the
 * bank so that a loaded machine's timings cannot change what it sees (the
 * policy's choices are tests/test_copy_policy.c's, driven with synthetic
 * costs). */
static hm_client *
connect_direct_policy(const struct harness *h, const char *policy)
{
	return harness_connect_direct(h, 0, policy);
}

static hm_file *
open_ok(hm_client *c, const char *path, int flags)
{
	hm_file *f = hm_open(c, path, flags);

	if (f == NULL)
		fail_msg("hm_open(%s, 0x%x): %s (\"%s\")", path, flags, strerror(errno),
			 hm_last_error());
	return f;
}

static void
make_file(const struct harness *h, const char *name, uint64_t size, uint64_t seed, char *path)
{
	harness_path(h, name, path);
	harness_write_file(path, size, seed);
}

/* --- promotion, reads, stat ------------------------------------------- */

static void
test_promoted_by_heat(void **state)
{
	const struct harness *h = *state;
	hm_client *c = connect_direct(h, 2);
	char path[PATH_MAX];
	uint64_t reads0, direct0;
	hm_file *f;
	int fd, i;

	make_file(h, "root/heat", 3 * MiB + 5, 1, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	f = open_ok(c, path, 0);
	{
		struct hm_stat st;

		assert_int_equal(hm_stat(f, &st), 0);
		assert_int_equal(st.direct, HM_DIRECT_GRANTED);
	}
	reads0 = harness_stat(c, "requests_read");
	direct0 = harness_stat(c, "direct_reads");
	/* two reads go through the daemon: a process that reads little
	 * never maps the file */
	assert_int_equal(harness_check_read(f, fd, 100, 5000), 5000);
	assert_int_equal(harness_check_read(f, fd, MiB, 70000), 70000);
	assert_int_equal(harness_stat(c, "requests_read"), reads0 + 2);
	/* then it is hot: no more round trips */
	for (i = 0; i < 50; i++)
		assert_int_equal(harness_check_read(f, fd, (uint64_t)i * 60001, 65536), 65536);
	assert_int_equal(harness_check_read(f, fd, 3 * MiB, 100), 5);
	assert_int_equal(harness_check_read(f, fd, 3 * MiB + 5, 100), 0);
	assert_int_equal(harness_check_read(f, fd, 4 * MiB, 100), 0);
	assert_int_equal(harness_stat(c, "requests_read"), reads0 + 2);
	assert_int_equal(harness_stat(c, "direct_reads"), direct0 + 53);
	assert_int_equal(hm_close(f), 0);
	close(fd);
	hm_disconnect(c);
}

struct listed {
	const char *path;
	struct hm_file_info info;
	int found;
};

static void
listed_cb(const struct hm_file_info *info, void *arg)
{
	struct listed *l = arg;

	if (strcmp(info->path, l->path) == 0) {
		l->info = *info;
		l->info.path = NULL;
		l->found++;
	}
}

/* The daemon sees what its clients read themselves, per file. */
static void
test_listed_per_file(void **state)
{
	const struct harness *h = *state;
	hm_client *c = connect_direct(h, 0);
	char path[PATH_MAX];
	struct listed l = { 0 };
	hm_file *f;
	int fd, i;

	make_file(h, "root/listed", 2 * MiB, 40, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	f = open_ok(c, path, HM_O_DIRECT);
	for (i = 0; i < 10; i++)
		assert_int_equal(harness_check_read(f, fd, (uint64_t)i * 100000, 10000), 10000);
	l.path = path;
	assert_int_equal(hm_files(c, listed_cb, &l), 0);
	assert_int_equal(l.found, 1);
	assert_int_equal(l.info.direct_handles, 1);
	assert_int_equal(l.info.direct_reads, 10);
	assert_int_equal(l.info.direct_bytes, 100000);
	assert_int_equal(l.info.bytes, 0);	/* none through the daemon */
	/* closed: the counts stay with the file, the grant goes */
	assert_int_equal(hm_close(f), 0);
	memset(&l.info, 0, sizeof l.info);
	l.found = 0;
	assert_int_equal(hm_files(c, listed_cb, &l), 0);
	assert_int_equal(l.info.direct_handles, 0);
	assert_int_equal(l.info.direct_reads, 10);
	close(fd);
	hm_disconnect(c);
}

struct me {
	pid_t pid;
	struct hm_client_info info;
	char name[64];
	int found;
};

static void
me_cb(const struct hm_client_info *info, void *arg)
{
	struct me *m = arg;

	if (info->pid == (uint32_t)m->pid && info->direct_grants > 0) {
		m->info = *info;
		snprintf(m->name, sizeof m->name, "%s", info->name);	/* valid in the call only */
		m->found++;
	}
}

/* ... and per client. */
static void
test_listed_per_client(void **state)
{
	const struct harness *h = *state;
	hm_client *c = connect_direct(h, 0);
	char path[PATH_MAX];
	struct me m = { .pid = getpid() };
	hm_file *f;
	int fd, i;

	make_file(h, "root/per-client", MiB, 41, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	f = open_ok(c, path, HM_O_DIRECT);
	for (i = 0; i < 7; i++)
		assert_int_equal(harness_check_read(f, fd, (uint64_t)i * 1000, 3000), 3000);
	assert_int_equal(hm_clients(c, me_cb, &m), 0);
	assert_int_equal(m.found, 1);
	assert_int_equal(m.info.handles, 1);
	assert_int_equal(m.info.direct_grants, 1);
	assert_int_equal(m.info.direct_reads, 7);
	assert_int_equal(m.info.direct_bytes, 21000);
	assert_int_equal(m.info.uid, getuid());
	assert_true(strstr(m.name, "test_direct") != NULL);
	assert_int_equal(hm_close(f), 0);
	close(fd);
	hm_disconnect(c);
}

static void
count_cb(const struct hm_client_info *info, void *arg)
{
	(void)info;
	(*(unsigned *)arg)++;
}

/* More clients than one reply can carry: every one is listed, a page at
 * a time. */
static void
test_clients_paged(void **state)
{
	const struct harness *h = *state;
	struct hm_options o = HM_OPTIONS_INIT;
	enum { N = 1100 };
	static char long_name[] = "a-program-whose-name-is-as-long-as-hello-keeps-sixty-three-char";
	hm_client **cs = calloc(N, sizeof *cs), *admin;
	char *saved_name;
	struct rlimit old, rl;
	unsigned listed = 0;
	int i;

	assert_non_null(cs);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	if (old.rlim_max != RLIM_INFINITY && old.rlim_max < N + 64) {
		free(cs);
		skip();	/* not enough descriptors for the clients */
	}
	rl = old;
	rl.rlim_cur = rl.rlim_max;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	o.shm_size = 0;	/* a socket each, nothing more */
	/* the longest name HELLO keeps: a page of 1,000 would not fit a frame */
	saved_name = program_invocation_short_name;
	program_invocation_short_name = long_name;
	for (i = 0; i < N; i++) {
		cs[i] = hm_connect_opts(h->sock, &o);
		if (cs[i] == NULL)
			fail_msg("client %d: %s (%s)", i, strerror(errno), hm_last_error());
	}
	program_invocation_short_name = saved_name;
	admin = harness_connect(h);
	assert_int_equal(hm_clients(admin, count_cb, &listed), 0);
	assert_int_equal(listed, N + 1);
	hm_disconnect(admin);
	for (i = 0; i < N; i++)
		hm_disconnect(cs[i]);
	free(cs);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
}

static void
test_stat_without_round_trip(void **state)
{
	const struct harness *h = *state;
	hm_client *c = connect_direct(h, 0);
	char path[PATH_MAX];
	struct hm_stat st;
	struct stat ref;
	uint64_t stats0;
	hm_file *f;
	int i;

	make_file(h, "root/stat", 777777, 2, path);
	assert_int_equal(stat(path, &ref), 0);
	f = open_ok(c, path, HM_O_DIRECT);
	stats0 = harness_stat(c, "requests_stat");
	for (i = 0; i < 100; i++) {
		assert_int_equal(hm_stat(f, &st), 0);
		assert_int_equal(st.size, 777777);
	}
	assert_int_equal(harness_stat(c, "requests_stat"), stats0);
	assert_int_equal(st.ino, ref.st_ino);
	assert_int_equal(st.dev, ref.st_dev);
	assert_int_equal(st.mode, ref.st_mode);
	assert_int_equal(st.backend, HM_BACKEND_MMAP);
	assert_int_equal(st.direct, HM_DIRECT_YES);
	assert_string_equal(st.direct_text, "");
	assert_int_equal(hm_close(f), 0);
	hm_disconnect(c);
}

/* A view of a direct file points into the file's mapping: zero copies. */
static void
test_view_in_place(void **state)
{
	const struct harness *h = *state;
	hm_client *c = connect_direct(h, 0);
	char path[PATH_MAX];
	struct hm_view v, w;
	uint8_t *ref = malloc(2 * MiB);
	hm_file *f;
	int fd;

	assert_non_null(ref);
	make_file(h, "root/view", 2 * MiB + 3, 3, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	f = open_ok(c, path, HM_O_DIRECT);
	assert_int_equal(hm_view_range(f, 4096, MiB, &v), 0);
	assert_int_equal(v.len, MiB);
	assert_int_equal(pread(fd, ref, MiB, 4096), MiB);
	assert_memory_equal(v.data, ref, MiB);
	assert_int_equal(hm_view_check(&v), 0);
	/* two views of the same bytes are the same bytes */
	assert_int_equal(hm_view_range(f, 4096 + 10, 100, &w), 0);
	assert_ptr_equal(w.data, (const uint8_t *)v.data + 10);
	hm_view_release(&w);
	/* short at the end, empty past it */
	assert_int_equal(hm_view_range(f, 2 * MiB, MiB, &w), 0);
	assert_int_equal(w.len, 3);
	hm_view_release(&w);
	assert_int_equal(hm_view_range(f, 3 * MiB, 10, &w), 0);
	assert_int_equal(w.len, 0);
	hm_view_release(&w);
	/* a view outlives its file and its client */
	assert_int_equal(hm_close(f), 0);
	hm_disconnect(c);
	assert_memory_equal(v.data, ref, MiB);
	hm_view_release(&v);
	close(fd);
	free(ref);
}

/* hm_view_batch: a granted file's ranges in place, another file's through
 * the daemon, errors per range. */
static void
test_view_batch(void **state)
{
	const struct harness *h = *state;
	hm_client *c = connect_direct(h, 0);
	char pa[PATH_MAX], pb[PATH_MAX];
	struct hm_view_io io[300];
	uint8_t *ref = malloc(64 * KiB);
	uint64_t rs = 5, reads0;
	hm_file *fa, *fb;
	int fda, fdb, wfd;
	size_t i;

	assert_non_null(ref);
	make_file(h, "root/vb-a", 5 * MiB + 1, 20, pa);
	make_file(h, "root/vb-b", 3 * MiB + 7, 21, pb);
	fda = open(pa, O_RDONLY | O_CLOEXEC);
	fdb = open(pb, O_RDONLY | O_CLOEXEC);
	fa = open_ok(c, pa, HM_O_DIRECT);
	wfd = open(pb, O_WRONLY | O_CLOEXEC);	/* b is written to: no grant */
	fb = open_ok(c, pb, HM_O_DIRECT);
	for (i = 0; i < 300; i++) {
		bool a = i % 3 != 0;

		io[i] = (struct hm_view_io){ .file = a ? fa : fb,
					     .offset = harness_rand(&rs) % ((a ? 5 : 3) * MiB),
					     .len = 1 + harness_rand(&rs) % (64 * KiB) };
	}
	io[7].offset = 5 * MiB - 10;	/* short at the end */
	io[8].offset = 9 * MiB;		/* past it: empty */
	io[9].file = NULL;		/* no file */
	io[10].offset = UINT64_MAX;	/* as pread: EINVAL */
	reads0 = harness_stat(c, "requests_read");
	assert_int_equal(hm_view_batch(c, io, 300), 0);
	/* b's 99 valid ranges are read through the daemon (one window and
	 * part of another: 256 at most at once); a's in place */
	assert_int_equal(harness_stat(c, "requests_read"), reads0 + 99);
	for (i = 0; i < 300; i++) {
		int fd = io[i].file == fa ? fda : fdb;
		ssize_t n;

		if (i == 9 || i == 10) {
			assert_int_equal(io[i].error, i == 9 ? EBADF : EINVAL);
			assert_null(io[i].view.data);
			continue;
		}
		assert_int_equal(io[i].error, 0);
		n = pread(fd, ref, io[i].len, (off_t)io[i].offset);
		assert_int_equal(io[i].view.len, n);
		if (n > 0)
			assert_memory_equal(io[i].view.data, ref, (size_t)n);
	}
	assert_int_equal(io[7].view.len, 11);
	assert_int_equal(io[8].view.len, 0);
	for (i = 0; i < 300; i++)
		hm_view_release(&io[i].view);
	assert_int_equal(hm_close(fa), 0);
	assert_int_equal(hm_close(fb), 0);
	close(wfd);
	close(fda);
	close(fdb);
	free(ref);
	hm_disconnect(c);
}

static long
minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* Reads every page of f directly; the minor faults that took. */
static long
read_every_page(hm_file *f, int fd, uint64_t size)
{
	long before = minor_faults();
	uint64_t off;

	for (off = 0; off < size; off += 4096)
		if (harness_check_read(f, fd, off, 100) != 100)
			fail_msg("read at %llu", (unsigned long long)off);
	return minor_faults() - before;
}

/* Whether this process maps path (a line of /proc/self/maps names it). */
static bool
process_maps(const char *path)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[PATH_MAX + 128];
	bool found = false;

	assert_non_null(f);
	while (!found && fgets(line, sizeof line, f) != NULL) {
		char *name = strchr(line, '/');

		if (name != NULL) {
			name[strcspn(name, "\n")] = '\0';
			found = strcmp(name, path) == 0;
		}
	}
	fclose(f);
	return found;
}

/* The process's last client gone, its idle mappings go with it: a closed
 * file's pages are not kept mapped (POSIX_FADV_DONTNEED could not drop
 * them, nor would a deleted file's blocks be freed); while a client
 * remains, a closed file's mapping is kept for the next open. */
static void
test_idle_mappings_released(void **state)
{
	const struct harness *h = *state;
	hm_client *c = connect_direct(h, 0), *d = connect_direct(h, 0);
	char path[PATH_MAX];
	hm_file *f;
	int fd;

	make_file(h, "root/released", 4 * MiB, 43, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	f = open_ok(c, path, HM_O_DIRECT);
	assert_int_equal(hm_warm(f, 0, 4 * MiB), 4 * MiB);
	harness_check_read(f, fd, 12345, 100000);
	assert_true(process_maps(path));
	assert_int_equal(hm_close(f), 0);
	hm_disconnect(c);
	/* d is still connected: kept, idle, for the next open */
	assert_true(process_maps(path));
	f = open_ok(d, path, HM_O_DIRECT);
	harness_check_read(f, fd, 4 * MiB - 5000, 8192);
	assert_int_equal(hm_close(f), 0);
	hm_disconnect(d);
	assert_false(process_maps(path));
	close(fd);
}

/* Resident pages (kB) of the mapping that holds addr, from smaps. */
static long
mapping_rss_kb(const void *addr)
{
	FILE *fp = fopen("/proc/self/smaps", "r");
	char line[512];
	bool in = false;
	long kb = -1;

	assert_non_null(fp);
	while (fgets(line, sizeof line, fp) != NULL) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, ':') != NULL &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
			continue;
		}
		if (in && sscanf(line, "Rss: %ld kB", &kb) == 1)
			break;
	}
	fclose(fp);
	return kb;
}

/* A process that opens the file again (each epoch, each connection)
 * finds the mapping it had, page tables and all.  Every read copies out
 * of the mapping (way=copy): which pages the policy would touch depends
 * on what reads cost at the time, and under load it may leave pages
 * untouched that the next open then touches.  The pages mapped are read
 * in the mapping's resident size: how many faults the first pass takes
 * is the kernel's (16 pages a fault with fault-around, or the whole 1 MiB
 * where the page cache holds the file in one large folio and the mapping
 * is placed so that one fault can map it all). */
static void
test_mapping_reused(void **state)
{
	const struct harness *h = *state;
	hm_client *c = connect_direct_policy(h, "way=copy"), *d;
	char path[PATH_MAX];
	long first, faults = 0, again, other, mapped, kept;
	const void *base;
	hm_file *f;
	int fd, pass;

	make_file(h, "root/reused", MiB, 42, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	f = open_ok(c, path, HM_O_DIRECT);
	first = read_every_page(f, fd, MiB);
	/* every page is mapped now: a pass more faults no more (a stray
	 * fault of the heap or stack may count: the process's counter is
	 * all there is) */
	for (pass = 0; pass < 20; pass++) {
		faults = read_every_page(f, fd, MiB);
		if (faults <= 2)
			break;
	}
	{
		struct hm_view v;

		assert_int_equal(hm_view_range(f, 0, 10, &v), 0);
		base = v.data;
		hm_view_release(&v);
	}
	mapped = mapping_rss_kb(base);
	assert_int_equal(hm_close(f), 0);
	f = open_ok(c, path, HM_O_DIRECT);
	{
		struct hm_view v;

		/* the very mapping it had, its pages mapped before any read */
		assert_int_equal(hm_view_range(f, 0, 10, &v), 0);
		assert_ptr_equal(v.data, base);
		hm_view_release(&v);
	}
	kept = mapping_rss_kb(base);
	again = read_every_page(f, fd, MiB);
	assert_int_equal(hm_close(f), 0);
	/* another connection of the process too */
	d = connect_direct_policy(h, "way=copy");
	f = open_ok(d, path, HM_O_DIRECT);
	other = read_every_page(f, fd, MiB);
	assert_int_equal(hm_close(f), 0);
	hm_disconnect(d);
	hm_disconnect(c);
	close(fd);
	print_message("faults on the first pass: %ld, the last: %ld; on reopening: %ld, on "
		      "another connection %ld; mapped %ld kB after the first pass, %ld kB on "
		      "reopening\n",
		      first, faults, again, other, mapped, kept);
	/* the first pass mapped the file's pages, faulting: the test sees it */
	assert_true(first >= 1);
	assert_true(mapped >= 1024);
	assert_true(kept >= 1024);
	assert_true(faults <= 2);
	/* the pages come mapped */
	assert_true(again <= 2);
	assert_true(other <= 2);
}

/* Small reads spread over a block of the file (2 MiB) make it hot: once
 * they have cost what building its page tables costs, the block is
 * populated in one go, and reads come out of it.  hm_warm populates at
 * once.  Every read returns pread's bytes, before and after, and after
 * the file is cut short. */
static void
test_block_populated(void **state)
{
	const struct harness *h = *state;
	/* a read adds a whole pread to the bank (3% by default), so that
	 * buys the tests before made, timed on a loaded machine, cannot
	 * keep it overdrawn through this test's reads */
	hm_client *c = connect_direct_policy(h, "allowance=1000");
	char path[PATH_MAX];
	const void *base;
	long rss0, rss1, rss2;
	hm_file *f;
	int fd, wfd, pass;
	uint64_t p;

	make_file(h, "root/blocks", 6 * MiB + 5, 77, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	f = open_ok(c, path, HM_O_DIRECT);
	{
		struct hm_view v;

		assert_int_equal(hm_view_range(f, 0, 10, &v), 0);
		base = v.data;
		hm_view_release(&v);
	}
	rss0 = mapping_rss_kb(base);
	/* each page of block 0 read once, a pass at a time: no page is read
	 * twice in a pass, so only the block's heat can map them; the
	 * process's bank (docs/direct-reads.md, rule 9) may be overdrawn by
	 * the tests before, and earns a pread a read here (allowance=1000):
	 * passes enough for it to allow the block */
	for (pass = 0; pass < 2048; pass++) {
		for (p = 0; p < 512; p += 8)
			assert_int_equal(harness_check_read(f, fd, (p + (uint64_t)pass % 8) * 4096 + 17, 3000),
					 3000);
		if (mapping_rss_kb(base) >= 2048)
			break;
	}
	rss1 = mapping_rss_kb(base);
	print_message("block 0 populated after %d reads; mapping resident: %ld kB before, %ld after\n",
		      (pass + 1) * 64, rss0, rss1);
	assert_true(rss0 < 1024);
	assert_true(rss1 >= 2048 && rss1 < 4096);
	/* hm_warm: blocks 1 and 2 at once (the range touches both) */
	assert_true(hm_warm(f, 2 * MiB + 100, 2 * MiB) > 0);
	rss2 = mapping_rss_kb(base);
	assert_true(rss2 >= 6144 - 4 && rss2 < 6144 + 1024);
	/* out of populated pages, byte for byte, and across the block edge */
	for (p = 0; p < 6 * MiB; p += 4096 * 33)
		assert_int_equal(harness_check_read(f, fd, p + 1000, 4096), 4096);
	assert_int_equal(harness_check_read(f, fd, 2 * MiB - 100, 200), 200);
	assert_int_equal(harness_check_read(f, fd, 4 * MiB - 2000, 100 * KiB), 100 * KiB);
	assert_int_equal(harness_check_read(f, fd, 6 * MiB - 10, 4096), 15);
	/* the file cut short: reads end at the new end, no SIGBUS */
	wfd = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(wfd >= 0);
	assert_int_equal(ftruncate(wfd, 3 * MiB), 0);
	close(wfd);
	assert_int_equal(harness_check_read(f, fd, 3 * MiB - 100, 4096), 100);
	assert_int_equal(harness_check_read(f, fd, 5 * MiB, 4096), 0);
	assert_int_equal(harness_check_read(f, fd, MiB, 4096), 4096);
	assert_int_equal(hm_close(f), 0);
	close(fd);
	hm_disconnect(c);
}

/* A view of 2 MiB or more has its page tables built when it is made (the
 * bytes are there to be read: one madvise, not a fault per page or per
 * huge page); a smaller one is left to fault as it is read. */
static void
test_view_populated(void **state)
{
	const struct harness *h = *state;
	hm_client *c = connect_direct(h, 0);
	char path[PATH_MAX];
	struct hm_view big, small, tiny;
	uint8_t *ref = malloc(4 * MiB);
	const void *base;
	long rss0, rss1, rss2;
	hm_file *f;
	int fd;

	make_file(h, "root/view-populated", 8 * MiB + 300, 81, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0 && ref != NULL);
	f = open_ok(c, path, HM_O_DIRECT);
	assert_int_equal(hm_view_range(f, 0, 10, &tiny), 0);
	base = tiny.data;
	rss0 = mapping_rss_kb(base);
	/* 4 MiB from byte 100: pages 0 to 1024, none of them touched here */
	assert_int_equal(hm_view_range(f, 100, 4 * MiB, &big), 0);
	assert_int_equal(big.len, 4 * MiB);
	assert_ptr_equal(big.data, (const uint8_t *)base + 100);
	rss1 = mapping_rss_kb(base);
	/* 64 KiB, two huge pages further: left alone */
	assert_int_equal(hm_view_range(f, 7 * MiB, 64 * KiB, &small), 0);
	rss2 = mapping_rss_kb(base);
	print_message("mapping resident: %ld kB, after a 4 MiB view %ld kB, after a 64 KiB view %ld kB\n",
		      rss0, rss1, rss2);
	assert_true(rss0 < 1024);
	/* the kernel may map the rest of a large folio the view ends in */
	assert_true(rss1 >= 4096 && rss1 <= 6144);
	assert_int_equal(rss2, rss1);
	/* the bytes, as pread has them */
	assert_int_equal(pread(fd, ref, 4 * MiB, 100), (ssize_t)(4 * MiB));
	assert_memory_equal(big.data, ref, 4 * MiB);
	assert_int_equal(pread(fd, ref, 64 * KiB, 7 * MiB), (ssize_t)(64 * KiB));
	assert_memory_equal(small.data, ref, 64 * KiB);
	assert_int_equal(hm_view_check(&big), 0);
	hm_view_release(&small);
	hm_view_release(&big);
	hm_view_release(&tiny);
	assert_int_equal(hm_close(f), 0);
	close(fd);
	free(ref);
	hm_disconnect(c);
}

static void
test_batch_promotes(void **state)
{
	const struct harness *h = *state;
	hm_client *c = connect_direct(h, 2);
	char path[PATH_MAX];
	struct hm_io io[8];
	uint8_t *buf = malloc(8 * 4096), *ref = malloc(4096);
	uint64_t reads0;
	hm_file *f;
	int fd, round, i;

	make_file(h, "root/batch-heat", MiB, 43, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	f = open_ok(c, path, 0);
	for (round = 0; round < 2; round++) {
		for (i = 0; i < 8; i++)
			io[i] = (struct hm_io){ .file = f, .offset = (uint64_t)(i * 3 + round) * 4096,
						.len = 4096, .buf = buf + i * 4096 };
		reads0 = harness_stat(c, "requests_read");
		assert_int_equal(hm_read_batch(c, io, 8), 0);
		for (i = 0; i < 8; i++) {
			assert_int_equal(io[i].result, 4096);
			assert_int_equal(pread(fd, ref, 4096, (off_t)io[i].offset), 4096);
			assert_memory_equal(io[i].buf, ref, 4096);
		}
		/* the first batch heats it past 2 reads: the second is read here */
		assert_int_equal(harness_stat(c, "requests_read") - reads0, round == 0 ? 8 : 0);
	}
	assert_int_equal(hm_close(f), 0);
	close(fd);
	free(buf);
	free(ref);
	hm_disconnect(c);
}

/* A process with few descriptors to spare opens many granted files: the
 * library keeps none of its own for them and reads them all the same. */
static void
test_many_files_few_descriptors(void **state)
{
	const struct harness *h = *state;
	hm_client *c = connect_direct(h, 0);
	struct rlimit old, low;
	hm_file *f[60];
	char path[PATH_MAX], name[64];
	int fd, i;

	make_file(h, "root/few", 256 * KiB, 44, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 64;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	for (i = 0; i < 60; i++) {
		snprintf(name, sizeof name, "root/few-%d", i);
		make_file(h, name, 64 * KiB, 45 + (uint64_t)i, path);
		f[i] = open_ok(c, path, 0);
	}
	for (i = 0; i < 60; i++) {
		uint8_t a[1000], b[1000];
		int rfd;

		snprintf(name, sizeof name, "root/few-%d", i);
		harness_path(h, name, path);
		rfd = open(path, O_RDONLY | O_CLOEXEC);
		assert_true(rfd >= 0);	/* descriptors were left to the program */
		assert_int_equal(hm_pread(f[i], a, sizeof a, 5000), sizeof a);
		assert_int_equal(hm_pread(f[i], a, sizeof a, 5000), sizeof a);
		assert_int_equal(pread(rfd, b, sizeof b, 5000), sizeof b);
		assert_memory_equal(a, b, sizeof a);
		close(rfd);
	}
	for (i = 0; i < 60; i++)
		assert_int_equal(hm_close(f[i]), 0);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	close(fd);
	hm_disconnect(c);
}

/* --- who gets no grant -------------------------------------------------- */

static void
expect_no_direct_reads(hm_client *c, hm_file *f, int fd)
{
	uint64_t reads0 = harness_stat(c, "requests_read");
	int i;

	for (i = 0; i < 5; i++)
		assert_int_equal(harness_check_read(f, fd, (uint64_t)i * 1000, 3000), 3000);
	assert_int_equal(harness_stat(c, "requests_read"), reads0 + 5);
}

static void
test_refused(void **state)
{
	const struct harness *h = *state;
	hm_client *c = connect_direct(h, 0);
	struct hm_options o = HM_OPTIONS_INIT;
	char path[PATH_MAX], pipe_path[PATH_MAX];
	uint64_t granted0;
	hm_client *plain;
	hm_file *f;
	int fd, wfd;

	make_file(h, "root/refused", MiB, 4, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	granted0 = harness_stat(c, "direct_granted");

	/* open for writing somewhere: no lease, no grant, and hm_stat says so */
	wfd = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(wfd >= 0);
	f = open_ok(c, path, HM_O_DIRECT);
	expect_no_direct_reads(c, f, fd);
	{
		struct hm_stat st;

		assert_int_equal(hm_stat(f, &st), 0);
		assert_int_equal(st.direct, HM_DIRECT_NO);
		assert_string_equal(st.direct_text, "the file is open for writing");
	}
	assert_int_equal(hm_close(f), 0);
	close(wfd);

	/* the client's own descriptor open for writing: the same */
	wfd = open(path, O_RDWR | O_CLOEXEC);
	f = hm_open_fd(c, wfd, HM_O_DIRECT);
	assert_non_null(f);
	expect_no_direct_reads(c, f, fd);
	assert_int_equal(hm_close(f), 0);
	close(wfd);

	/* HM_O_PREAD, and files that are not mapped */
	f = open_ok(c, path, HM_O_PREAD | HM_O_DIRECT);
	expect_no_direct_reads(c, f, fd);
	assert_int_equal(hm_close(f), 0);
	harness_path(h, "root/fifo", pipe_path);
	assert_int_equal(mkfifo(pipe_path, 0600), 0);
	f = open_ok(c, pipe_path, HM_O_DIRECT);
	assert_int_equal(hm_close(f), 0);

	/* a client that did not ask */
	o.direct = 0;
	plain = hm_connect_opts(h->sock, &o);
	assert_non_null(plain);
	f = open_ok(plain, path, HM_O_DIRECT);
	expect_no_direct_reads(plain, f, fd);
	assert_int_equal(hm_close(f), 0);
	hm_disconnect(plain);

	assert_int_equal(harness_stat(c, "direct_granted"), granted0);
	/* and once nobody writes, a grant */
	f = open_ok(c, path, HM_O_DIRECT);
	assert_int_equal(harness_stat(c, "direct_granted"), granted0 + 1);
	assert_int_equal(hm_close(f), 0);
	close(fd);
	hm_disconnect(c);
}

static void
test_switched_off(void **state)
{
	const struct harness *h = *state;
	hm_client *c = connect_direct(h, 0);
	char path[PATH_MAX];
	hm_file *f;
	int fd;

	make_file(h, "root/off", MiB, 5, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	f = open_ok(c, path, HM_O_DIRECT);
	expect_no_direct_reads(c, f, fd);
	assert_int_equal(harness_stat(c, "direct_granted"), 0);
	assert_int_equal(hm_close(f), 0);
	close(fd);
	hm_disconnect(c);
}

/* --- taken back ------------------------------------------------------- */

/* f reads directly now: a read costs no request. */
static void
expect_direct(hm_client *c, hm_file *f, int fd)
{
	uint64_t reads0 = harness_stat(c, "requests_read");

	assert_int_equal(harness_check_read(f, fd, 10, 4096), 4096);
	assert_int_equal(harness_stat(c, "requests_read"), reads0);
}

static void
test_revoked_by_writer(void **state)
{
	const struct harness *h = *state;
	hm_client *c = connect_direct(h, 0);
	char path[PATH_MAX];
	uint64_t revoked0;
	struct stat st;
	hm_file *f;
	int fd, wfd;

	make_file(h, "root/writer", 2 * MiB, 6, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	f = open_ok(c, path, HM_O_DIRECT);
	expect_direct(c, f, fd);
	revoked0 = harness_stat(c, "direct_revoked");
	/* the open waits in the kernel until the daemon has revoked */
	wfd = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(wfd >= 0);
	assert_int_equal(harness_stat(c, "direct_revoked"), revoked0 + 1);
	/* grown, rewritten, shrunk: every read as pread's, through the daemon */
	harness_rewrite(path, 2 * MiB, MiB, 7);
	assert_int_equal(harness_check_read(f, fd, 2 * MiB - 10, 100), 100);
	harness_rewrite(path, 5000, 1000, 8);
	assert_int_equal(harness_check_read(f, fd, 4000, 3000), 3000);
	assert_int_equal(ftruncate(wfd, 12345), 0);
	assert_int_equal(harness_check_read(f, fd, 0, MiB), 12345);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(hm_close(f), 0);
	close(wfd);
	close(fd);
	hm_disconnect(c);
}

static void
test_revoked_by_evict(void **state)
{
	const struct harness *h = *state;
	hm_client *c = connect_direct(h, 0);
	struct hm_evicted ev;
	char path[PATH_MAX];
	uint64_t reads0;
	hm_file *f;
	int fd;

	make_file(h, "root/evict", MiB, 9, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	f = open_ok(c, path, HM_O_DIRECT);
	expect_direct(c, f, fd);
	assert_int_equal(hm_evict(c, path, &ev), 0);
	assert_int_equal(harness_stat(c, "direct_revoked"), 1);
	reads0 = harness_stat(c, "requests_read");
	assert_int_equal(harness_check_read(f, fd, 0, MiB), MiB);
	assert_int_equal(harness_stat(c, "requests_read"), reads0 + 1);
	assert_int_equal(hm_close(f), 0);
	close(fd);
	hm_disconnect(c);
}

/* A view held while the file shrinks: touching it does not kill the
 * program; the lost part reads as zeros and hm_view_check says so. */
static void
test_view_survives_truncation(void **state)
{
	const struct harness *h = *state;
	hm_client *c = connect_direct(h, 0);
	char path[PATH_MAX];
	struct hm_view v;
	const volatile uint8_t *p;
	uint64_t sum = 0;
	hm_file *f;
	size_t i;

	make_file(h, "root/shrink", 4 * MiB, 10, path);
	f = open_ok(c, path, HM_O_DIRECT);
	assert_int_equal(hm_view_range(f, MiB, 2 * MiB, &v), 0);
	assert_int_equal(v.len, 2 * MiB);
	assert_int_equal(hm_view_check(&v), 0);
	assert_int_equal(truncate(path, MiB + 100), 0);
	assert_int_equal(hm_view_check(&v), -1);
	assert_int_equal(errno, ESTALE);
	p = v.data;
	for (i = 0; i < v.len; i++)
		sum += p[i];	/* past the end: no SIGBUS */
	for (i = 2 * 4096; i < v.len; i++)
		assert_int_equal(p[i], 0);
	assert_int_equal(hm_view_check(&v), -1);
	assert_int_equal(errno, EIO);
	(void)sum;
	hm_view_release(&v);
	assert_int_equal(hm_close(f), 0);
	hm_disconnect(c);
}

/* --- races -------------------------------------------------------------- */

#define RACE_SIZE	(2 * MiB)
#define RACE_SEED	11
#define RACE_THREADS	3

struct race {
	const struct harness *h;
	char path[PATH_MAX];
	hm_client *c;
	atomic_bool stop;
	atomic_int errors;
	char why[256];
	atomic_uint reads;
};

static void
race_fail(struct race *r, const char *fmt, ...)
{
	va_list ap;

	if (atomic_fetch_add(&r->errors, 1) > 0)
		return;
	va_start(ap, fmt);
	vsnprintf(r->why, sizeof r->why, fmt, ap);
	va_end(ap);
}

/* Where buf differs from ref, buf holds zeros: what the kernel hands a
 * reader racing a truncation that is being grown back, through pread as
 * through a mapping (docs/security.md, "Known limits"). */
static bool
only_zeros_differ(const uint8_t *buf, const uint8_t *ref, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (buf[i] != ref[i] && buf[i] != 0)
			return false;
	return true;
}

/* Every read returns the pattern's bytes, short only where the file may
 * have ended at some moment (between 0 and RACE_SIZE). */
static void *
race_reader(void *arg)
{
	struct race *r = arg;
	uint8_t *buf = malloc(256 * KiB), *ref = malloc(256 * KiB);
	uint64_t rs = (uint64_t)(uintptr_t)&rs;

	while (!atomic_load(&r->stop)) {
		hm_file *f = hm_open(r->c, r->path, HM_O_DIRECT);
		int i;

		if (f == NULL) {
			race_fail(r, "hm_open: %s", strerror(errno));
			break;
		}
		for (i = 0; i < 200; i++) {
			uint64_t off = harness_rand(&rs) % RACE_SIZE;
			size_t len = 1 + harness_rand(&rs) % (256 * KiB);
			ssize_t n = hm_pread(f, buf, len, off);

			if (n < 0 || (size_t)n > len) {
				race_fail(r, "hm_pread(%zu at %llu): %zd (%s)", len,
					  (unsigned long long)off, n, strerror(errno));
				break;
			}
			harness_fill(ref, (size_t)n, RACE_SEED, off);
			if (memcmp(buf, ref, (size_t)n) != 0 && !only_zeros_differ(buf, ref, (size_t)n)) {
				race_fail(r, "%zd bytes at %llu are not the file's", n,
					  (unsigned long long)off);
				break;
			}
			atomic_fetch_add(&r->reads, 1);
		}
		hm_close(f);
	}
	free(buf);
	free(ref);
	return NULL;
}

/* Truncates and grows the file back, with the same bytes, over and over:
 * the kind of change that turns a stale mapping into SIGBUS or zeros. */
static void
race_writer(const char *path, unsigned ms)
{
	int64_t end = harness_now_ms() + ms;
	uint64_t rs = 99;
	uint8_t *buf = malloc(RACE_SIZE);

	harness_fill(buf, RACE_SIZE, RACE_SEED, 0);
	while (harness_now_ms() < end) {
		int fd = open(path, O_WRONLY | O_CLOEXEC);
		uint64_t cut = harness_rand(&rs) % RACE_SIZE;

		ssize_t n;

		if (fd < 0) {
			fprintf(stderr, "# writer: open: %s\n", strerror(errno));
			_exit(2);
		}
		if (ftruncate(fd, (off_t)cut) < 0) {
			fprintf(stderr, "# writer: ftruncate: %s\n", strerror(errno));
			_exit(3);
		}
		n = pwrite(fd, buf + cut, RACE_SIZE - cut, (off_t)cut);
		if (n != (ssize_t)(RACE_SIZE - cut)) {
			fprintf(stderr, "# writer: pwrite: %zd, %s\n", n, strerror(errno));
			_exit(4);
		}
		close(fd);
		harness_sleep_ms(1);
	}
	_exit(0);
}

static void
test_truncation_race(void **state)
{
	struct race r = { .h = *state };
	pthread_t t[RACE_THREADS];
	int status, i;
	pid_t pid;

	make_file(r.h, "root/race", RACE_SIZE, RACE_SEED, r.path);
	r.c = connect_direct(r.h, 0);
	for (i = 0; i < RACE_THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, race_reader, &r), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		race_writer(r.path, 3000);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	atomic_store(&r.stop, true);
	for (i = 0; i < RACE_THREADS; i++)
		pthread_join(t[i], NULL);
	if (atomic_load(&r.errors) > 0)
		fail_msg("%d wrong reads; the first: %s", atomic_load(&r.errors), r.why);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("the writer ended with status 0x%x", status);
	assert_true(atomic_load(&r.reads) > 100);
	/* direct reads did happen, and grants were taken back */
	assert_true(harness_stat(r.c, "direct_reads") > 0);
	assert_true(harness_stat(r.c, "direct_revoked") > 0);
	hm_disconnect(r.c);
}

struct parallel {
	hm_file *f;
	int fd;
	atomic_int errors;
};

static void *
parallel_reader(void *arg)
{
	struct parallel *p = arg;
	uint8_t *buf = malloc(64 * KiB + HARNESS_SLACK), *ref = malloc(64 * KiB + HARNESS_SLACK);
	uint64_t rs = (uint64_t)(uintptr_t)&rs;
	char why[200];
	int i;

	for (i = 0; i < 20000; i++) {
		uint64_t off = harness_rand(&rs) % (8 * MiB);

		if (harness_compare_read(p->f, p->fd, off, 4096, buf, ref, NULL, why, sizeof why) < 0)
			atomic_fetch_add(&p->errors, 1);
	}
	free(buf);
	free(ref);
	return NULL;
}

/* Threads of one client read at once, none through the daemon. */
static void
test_threads_parallel(void **state)
{
	const struct harness *h = *state;
	hm_client *c = connect_direct(h, 0);
	struct parallel p = { 0 };
	char path[PATH_MAX];
	pthread_t t[4];
	uint64_t reads0, direct0;
	int i;

	make_file(h, "root/parallel", 8 * MiB, 12, path);
	p.fd = open(path, O_RDONLY | O_CLOEXEC);
	p.f = open_ok(c, path, HM_O_DIRECT);
	reads0 = harness_stat(c, "requests_read");
	direct0 = harness_stat(c, "direct_reads");
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, parallel_reader, &p), 0);
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(atomic_load(&p.errors), 0);
	assert_int_equal(harness_stat(c, "requests_read"), reads0);
	assert_int_equal(harness_stat(c, "direct_reads"), direct0 + 4 * 20000);
	assert_int_equal(hm_close(p.f), 0);
	close(p.fd);
	hm_disconnect(c);
}

/* A forked child reads the inherited file right, through a connection of
 * its own; the parent keeps reading directly. */
static void
test_fork(void **state)
{
	const struct harness *h = *state;
	hm_client *c = connect_direct(h, 0);
	uint8_t buf[8192], ref[8192];
	char path[PATH_MAX];
	int fd, status;
	hm_file *f;
	pid_t pid;

	make_file(h, "root/fork", 3 * MiB, 13, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	f = open_ok(c, path, HM_O_DIRECT);
	expect_direct(c, f, fd);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int i, bad = 0;

		alarm(30);
		for (i = 0; i < 100; i++) {
			uint64_t off = (uint64_t)i * 30011;

			if (hm_pread(f, buf, sizeof buf, off) != (ssize_t)sizeof buf ||
			    pread(fd, ref, sizeof ref, (off_t)off) != (ssize_t)sizeof ref ||
			    memcmp(buf, ref, sizeof buf) != 0)
				bad++;
		}
		hm_disconnect(c);
		_exit(bad == 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	expect_direct(c, f, fd);
	assert_int_equal(hm_close(f), 0);
	close(fd);
	hm_disconnect(c);
}

/* --- the program's own SIGBUS handler ---------------------------------- */

static sigjmp_buf app_jb;
static volatile sig_atomic_t app_faults;

static void
app_on_sigbus(int sig)
{
	(void)sig;
	app_faults++;
	siglongjmp(app_jb, 1);
}

static void
test_program_sigbus_chained(void **state)
{
	const struct harness *h = *state;
	struct sigaction sa = { .sa_handler = app_on_sigbus }, old;
	hm_client *c = connect_direct(h, 0);
	char path[PATH_MAX], mine[PATH_MAX];
	volatile uint8_t *p;
	hm_file *f;
	int fd;

	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGBUS, &sa, &old), 0);
	/* the library installs its handler over the program's */
	make_file(h, "root/chained", MiB, 14, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	f = open_ok(c, path, HM_O_DIRECT);
	expect_direct(c, f, fd);
	/* a fault of the program's own mapping reaches the program */
	make_file(h, "root/mine", 64 * KiB, 15, mine);
	{
		int mfd = open(mine, O_RDWR | O_CLOEXEC);

		p = mmap(NULL, 64 * KiB, PROT_READ, MAP_SHARED, mfd, 0);
		assert_true(p != MAP_FAILED);
		assert_int_equal(ftruncate(mfd, 0), 0);
		close(mfd);
	}
	if (sigsetjmp(app_jb, 1) == 0)
		(void)p[8192];
	assert_int_equal(app_faults, 1);
	munmap((void *)p, 64 * KiB);
	expect_direct(c, f, fd);
	assert_int_equal(hm_close(f), 0);
	close(fd);
	hm_disconnect(c);
	sigaction(SIGBUS, &old, NULL);
}

/*
 * A program that chains SIGBUS to the handler it found, installed between
 * two promotions: each promotion puts the library's handler in front of
 * whatever is there, so the program's handler and the library's each
 * found the other.  A fault of the program's own (a mapping of its own
 * cut short) must reach each of the program's handlers once and then the
 * default action: the program dies of SIGBUS, as it would without the
 * library.  Each case runs in a fresh process, this program run again
 * with --sigbus-child (sigbus_child): the library's handler is installed
 * once per process and keeps the handlers it found, so a process that
 * ran the other tests would bring theirs along.
 */
enum sigbus_mode {
	SIGBUS_CHAINED,		/* a handler installed between two promotions */
	SIGBUS_FIRST_TOO,	/* and one installed before the first */
	SIGBUS_GUARDED,		/* and faults the handler jumps out of first */
};
static const char *const sigbus_modes[] = { "chained", "first-too", "guarded" };

#define SIGBUS_SKIP	77	/* a child's status: no direct reads here */
#define SIGBUS_CHILD_ALARM_S 10
#define SIGBUS_DEEPER	24	/* frames deeper, the second guarded fault */

/* The child's handlers: each writes its letter to the pipe (the parent
 * counts them), then chains to the handler it found, as a program that
 * shares SIGBUS with others does. */
static int sigbus_out = -1;
static struct sigaction found_first, found_app;
static sigjmp_buf sigbus_jb;
static volatile sig_atomic_t sigbus_guarded, app_calls;

static void
chain_to(const struct sigaction *found, int sig, siginfo_t *si, void *uc)
{
	if ((found->sa_flags & SA_SIGINFO) && found->sa_sigaction != NULL) {
		found->sa_sigaction(sig, si, uc);
	} else if (found->sa_handler == SIG_DFL || found->sa_handler == SIG_IGN) {
		signal(sig, SIG_DFL);
		raise(sig);
	} else {
		found->sa_handler(sig);
	}
}

static void
first_on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)!write(sigbus_out, "F", 1);
	chain_to(&found_first, sig, si, uc);
}

static void
app_chain_on_sigbus(int sig, siginfo_t *si, void *uc)
{
	app_calls++;
	(void)!write(sigbus_out, "A", 1);
	if (sigbus_guarded) {
		/* a database's guard: the fault was expected, back to it */
		sigbus_guarded = 0;
		siglongjmp(sigbus_jb, 1);
	}
	chain_to(&found_app, sig, si, uc);
}

static void __attribute__((format(printf, 2, 3), noreturn))
child_fail(int status, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "# child %ld: ", (long)getpid());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	_exit(status);
}

static void
child_install(void (*fn)(int, siginfo_t *, void *), struct sigaction *found)
{
	struct sigaction sa = { .sa_sigaction = fn, .sa_flags = SA_SIGINFO };

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, found) < 0)
		child_fail(2, "sigaction: %s", strerror(errno));
}

/* A file of the child's own, mapped, then cut to nothing: reading the
 * mapping faults, and the fault is not the library's. */
static const volatile uint8_t *
child_own_mapping(const char *path)
{
	static uint8_t zeros[64 * 1024];
	void *p;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || write(fd, zeros, sizeof zeros) != (ssize_t)sizeof zeros)
		child_fail(2, "%s: %s", path, strerror(errno));
	p = mmap(NULL, sizeof zeros, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED || ftruncate(fd, 0) < 0)
		child_fail(2, "mmap, ftruncate: %s", strerror(errno));
	close(fd);
	return p;
}

/* Reads p[8192] (gone) depth frames deeper than its caller, the program's
 * handler jumping back: 0, or -1 when it did not fault. */
static __attribute__((noinline)) int
guarded_read(const volatile uint8_t *p, unsigned depth)
{
	volatile uint8_t pad[256];

	pad[0] = 0;
	if (depth > 0)
		return guarded_read(p, depth - 1) + pad[0];
	sigbus_guarded = 1;
	if (sigsetjmp(sigbus_jb, 1) == 0) {
		(void)p[8192];
		sigbus_guarded = 0;
		return -1;
	}
	return 0;
}

static hm_file *
child_open_direct(hm_client *c, const char *path)
{
	struct hm_stat st;
	hm_file *f = hm_open(c, path, HM_O_DIRECT);

	if (f == NULL)
		child_fail(2, "hm_open(%s): %s", path, strerror(errno));
	if (hm_stat(f, &st) < 0)
		child_fail(2, "hm_stat: %s", strerror(errno));
	if (st.direct != HM_DIRECT_YES)
		child_fail(SIGBUS_SKIP, "%s is not read directly here (%s)", path, st.direct_text);
	return f;
}

/* this program --sigbus-child MODE SOCKET DIR OUT-FD */
static int
sigbus_child(char **argv)
{
	const char *mode = argv[2], *dir = argv[4];
	struct hm_options o = HM_OPTIONS_INIT;
	char pa[PATH_MAX], pb[PATH_MAX], mine[PATH_MAX];
	const volatile uint8_t *p;
	struct sigaction cur;
	struct hm_view v;
	hm_client *c;
	hm_file *fa, *fb;
	uint64_t sum = 0;
	size_t i;
	int m;

	alarm(SIGBUS_CHILD_ALARM_S);
	sigbus_out = atoi(argv[5]);
	for (m = 0; m < 3 && strcmp(mode, sigbus_modes[m]) != 0; m++)
		;
	if (m == 3)
		child_fail(2, "no mode %s", mode);
	snprintf(pa, sizeof pa, "%s/sigbus-a", dir);
	snprintf(pb, sizeof pb, "%s/sigbus-b", dir);
	snprintf(mine, sizeof mine, "%s/sigbus-mine", dir);
	/* a program that starts with the default action (a sanitizer's
	 * handler, if it lets go of SIGBUS, would end the chain with its
	 * own report instead) */
	signal(SIGBUS, SIG_DFL);
	if (m == SIGBUS_FIRST_TOO)
		child_install(first_on_sigbus, &found_first);
	o.direct = 1;
	o.direct_after = 0;
	c = hm_connect_opts(argv[3], &o);
	if (c == NULL)
		child_fail(2, "hm_connect_opts: %s", strerror(errno));
	fa = child_open_direct(c, pa);
	/* the program's handler, installed after the first promotion:
	 * it finds the library's */
	child_install(app_chain_on_sigbus, &found_app);
	fb = child_open_direct(c, pb);
	if (sigaction(SIGBUS, NULL, &cur) < 0 || cur.sa_sigaction == app_chain_on_sigbus)
		child_fail(3, "the second promotion left the program's handler in front");

	/* the library's own faults stay the library's: a view of b cut
	 * short under it reads zeros, the program's handler never called */
	if (hm_view_range(fb, 0, 512 * 1024, &v) < 0 || v.len != 512 * 1024)
		child_fail(2, "hm_view_range: %s", strerror(errno));
	if (truncate(pb, 3 * 4096) < 0)
		child_fail(2, "truncate: %s", strerror(errno));
	for (i = 0; i < v.len; i += 4096)
		sum += ((const volatile uint8_t *)v.data)[i];
	if (hm_view_check(&v) != -1 || errno != EIO)
		child_fail(5, "hm_view_check after the truncation: not EIO");
	for (i = 3 * 4096; i < v.len; i += 4096)
		if (((const volatile uint8_t *)v.data)[i] != 0)
			child_fail(5, "the lost part of the view is not zeros");
	if (app_calls != 0)
		child_fail(5, "the library's fault reached the program's handler");
	hm_view_release(&v);
	(void)sum;
	(void)fa;

	p = child_own_mapping(mine);
	if (m == SIGBUS_GUARDED) {
		/* faults the program's guard catches, the second from deeper
		 * frames than the first (whose forward never returned) */
		if (guarded_read(p, 0) < 0 || guarded_read(p, SIGBUS_DEEPER) < 0)
			child_fail(6, "the guarded read did not fault");
		if (app_calls != 2)
			child_fail(6, "the program's guard saw %d faults of 2", (int)app_calls);
	}
	/* the program's own fault, unguarded: the last thing it does */
	(void)!write(sigbus_out, "R", 1);
	(void)p[8192];
	child_fail(7, "read a page past the end of a file and lived");
	return 7;
}

/* What the child's handlers wrote, counted, and how it ended. */
struct sigbus_run {
	size_t app, first, ready;
	int status;
};

/* Runs the child in mode m. */
static void
run_sigbus_child(const struct harness *h, enum sigbus_mode m, struct sigbus_run *run)
{
	char self[PATH_MAX], fdtext[16], pa[PATH_MAX], pb[PATH_MAX], buf[4096];
	int pfd[2];
	ssize_t r, i;
	pid_t pid;

	memset(run, 0, sizeof *run);
	assert_non_null(realpath("/proc/self/exe", self));
	make_file(h, "sigbus-a", MiB, 41, pa);
	make_file(h, "sigbus-b", MiB, 42, pb);
	assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
	/* never blocks a handler that runs away: what does not fit is lost */
	assert_int_equal(fcntl(pfd[1], F_SETFL, O_NONBLOCK), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *argv[] = { self, (char *)"--sigbus-child", (char *)sigbus_modes[m],
				 (char *)h->sock, (char *)h->dir, fdtext, NULL };
		int w = dup(pfd[1]);	/* without O_CLOEXEC */

		snprintf(fdtext, sizeof fdtext, "%d", w);
		execv(self, argv);
		_exit(127);
	}
	close(pfd[1]);
	/* read to the end: a handler that runs away writes until it dies */
	while ((r = read(pfd[0], buf, sizeof buf)) > 0) {
		for (i = 0; i < r; i++) {
			run->app += buf[i] == 'A';
			run->first += buf[i] == 'F';
			run->ready += buf[i] == 'R';
		}
	}
	close(pfd[0]);
	assert_int_equal(waitpid(pid, &run->status, 0), pid);
	if (WIFEXITED(run->status) && WEXITSTATUS(run->status) == SIGBUS_SKIP)
		skip();
}

/* The child died of SIGBUS at its last fault, having called the
 * program's handler app times and the first one first times. */
static void
expect_sigbus_death(const struct sigbus_run *run, size_t app, size_t first)
{
	int st = run->status;

	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGBUS)
		fail_msg("the program %s %d, not of SIGBUS; its handler was called %zu times, "
			 "the first one %zu", WIFSIGNALED(st) ? "died of signal" : "exited with",
			 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), run->app, run->first);
	if (run->ready != 1)
		fail_msg("the program died of SIGBUS before its own unguarded fault "
			 "(its handler was called %zu times)", run->app);
	if (run->app != app || run->first != first)
		fail_msg("the program's handler was called %zu times (want %zu), the first "
			 "one %zu (want %zu)", run->app, app, run->first, first);
}

/* (The library forwarded to the program's handler, which called the
 * library's, which forwarded again: the program spun at 100% CPU until
 * its alarm, instead of dying of its fault.) */
static void
test_program_sigbus_chained_twice(void **state)
{
	struct sigbus_run run;

	run_sigbus_child(*state, SIGBUS_CHAINED, &run);
	expect_sigbus_death(&run, 1, 0);
}

/* The handler the program had before the first promotion gets the fault
 * too, after the one installed later: each once, as they chained. */
static void
test_program_sigbus_first_too(void **state)
{
	struct sigbus_run run;

	run_sigbus_child(*state, SIGBUS_FIRST_TOO, &run);
	expect_sigbus_death(&run, 1, 1);
}

/* A handler that jumps out of faults it expects (a database's guard)
 * leaves the library's forward unfinished: a later fault from deeper
 * frames is a new one, and reaches the program again. */
static void
test_program_sigbus_guarded(void **state)
{
	struct sigbus_run run;

	run_sigbus_child(*state, SIGBUS_GUARDED, &run);
	expect_sigbus_death(&run, 3, 0);
}

/* --- a lease broken by force ------------------------------------------- */

/*
 * The kernel breaks a lease by force when its holder does not let go in
 * time (/proc/sys/fs/lease-break-time): a daemon that is stopped, or too
 * busy, then cannot revoke, and the file shrinks under a grant that still
 * holds.  A view touching the lost pages gets zero pages (the mapping is
 * lost); a read must still return what pread(2) returns, never the
 * zeros.  The daemon is stopped for real here (SIGSTOP), and the break
 * time set to 1 s, which needs root.  The client runs in a child with an
 * alarm; the parent lets the daemon go on and puts the break time back
 * whatever happened to it.
 */
#define LOST_SIZE	(4 * MiB)
#define LOST_CUT	(3 * MiB + 100007)	/* the new size */
#define LOST_VIEW	(3 * MiB)		/* a view of the last MiB */
#define LOST_ALARM_S	20
#define LEASE_BREAK_TIME "/proc/sys/fs/lease-break-time"

/* Reads across the new end of the file, and one before it. */
static const struct {
	uint64_t off;
	size_t len;
} lost_reads[] = {
	{ LOST_CUT - 1000, 8192 },
	{ LOST_CUT - 5, 1 },
	{ LOST_CUT + 3 * 4096, 4096 },
	{ LOST_VIEW, 60000 },
	{ LOST_CUT - 10007, 50000 },
	{ LOST_SIZE - 100, 100 },
};

/* Every read of lost_reads through f as pread(fd) gives it, rounds
 * times (a read of touched pages copies out of them, but one in a few
 * goes through pread to keep the costs measured). */
static void
lost_check_reads(hm_file *f, int fd, int rounds, uint8_t *buf, uint8_t *ref, const char *when)
{
	char why[256];
	size_t i;
	int r;

	for (r = 0; r < rounds; r++) {
		for (i = 0; i < sizeof lost_reads / sizeof lost_reads[0]; i++) {
			if (harness_compare_read(f, fd, lost_reads[i].off, lost_reads[i].len, buf,
						 ref, NULL, why, sizeof why) < 0)
				child_fail(5, "%s, round %d: %s", when, r, why);
		}
	}
}

struct lost_view {
	hm_file *f;
	struct hm_view v;
	int rc, err;
};

static void *
lost_view_main(void *arg)
{
	struct lost_view *lv = arg;

	lv->rc = hm_view_range(lv->f, LOST_CUT - 1000, 8192, &lv->v);
	lv->err = errno;
	return NULL;
}

static void
lost_child(const struct harness *h, const char *path, int lfd, const char *old)
{
	struct hm_options o = HM_OPTIONS_INIT;
	struct lost_view lv = { 0 };
	uint8_t *buf = malloc(64 * KiB + HARNESS_SLACK), *ref = malloc(64 * KiB + HARNESS_SLACK);
	const volatile uint8_t *p;
	struct hm_view v;
	struct hm_stat st;
	pthread_t t;
	int64_t t0;
	uint64_t sum = 0;
	ssize_t want;
	size_t i;
	hm_client *c;
	hm_file *f;
	int fd;

	alarm(LOST_ALARM_S);
	o.direct = 1;
	o.direct_after = 0;
	c = hm_connect_opts(h->sock, &o);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (c == NULL || fd < 0 || buf == NULL || ref == NULL)
		child_fail(2, "hm_connect_opts, open: %s", strerror(errno));
	f = hm_open(c, path, HM_O_DIRECT);
	if (f == NULL || hm_stat(f, &st) < 0)
		child_fail(2, "hm_open, hm_stat: %s", strerror(errno));
	if (st.direct != HM_DIRECT_YES)
		child_fail(SIGBUS_SKIP, "not read directly here (%s)", st.direct_text);
	/* every page touched, so that reads of them copy out of the mapping */
	if (hm_warm(f, 0, LOST_SIZE) < 0)
		child_fail(2, "hm_warm: %s", strerror(errno));
	lost_check_reads(f, fd, 3, buf, ref, "before the cut");
	if (hm_view_range(f, LOST_VIEW, LOST_SIZE - LOST_VIEW, &v) < 0 ||
	    v.len != LOST_SIZE - LOST_VIEW)
		child_fail(2, "hm_view_range: %s", strerror(errno));

	/* the daemon cannot revoke; the kernel breaks its lease after 1 s */
	if (kill(h->pid, SIGSTOP) < 0)
		child_fail(2, "SIGSTOP: %s", strerror(errno));
	if (pwrite(lfd, "1\n", 2, 0) != 2)
		child_fail(2, LEASE_BREAK_TIME ": %s", strerror(errno));
	t0 = harness_now_ms();
	if (truncate(path, LOST_CUT) < 0)
		child_fail(2, "truncate: %s", strerror(errno));
	fprintf(stderr, "# the truncation waited %lld ms for the lease\n",
		(long long)(harness_now_ms() - t0));
	(void)!pwrite(lfd, old, strlen(old), 0);
	if (hm_view_check(&v) != 0)
		child_fail(3, "the grant did not hold: hm_view_check %s", strerror(errno));

	/* the view touches the lost pages: zeros in their place */
	p = v.data;
	for (i = 0; i < v.len; i += 4096)
		sum += p[i];
	(void)sum;
	if (hm_view_check(&v) != -1 || errno != EIO)
		child_fail(4, "hm_view_check after touching the lost pages: not EIO");

	/* reads are pread's, not the zeros, with the daemon still stopped */
	lost_check_reads(f, fd, 100, buf, ref, "after the cut");

	/* a new view of the lost range waits for the daemon, which reads
	 * the file as it is now */
	lv.f = f;
	if (pthread_create(&t, NULL, lost_view_main, &lv) != 0)
		child_fail(2, "pthread_create");
	harness_sleep_ms(200);
	if (kill(h->pid, SIGCONT) < 0)
		child_fail(2, "SIGCONT: %s", strerror(errno));
	pthread_join(t, NULL);
	want = pread(fd, ref, 8192, LOST_CUT - 1000);
	if (lv.rc < 0)
		child_fail(6, "hm_view_range of the lost range: %s", strerror(lv.err));
	if ((ssize_t)lv.v.len != want || memcmp(lv.v.data, ref, lv.v.len) != 0)
		child_fail(6, "a view of the lost range: %zu bytes, pread %zd%s", lv.v.len, want,
			   (ssize_t)lv.v.len == want ? ", not its bytes" : "");
	hm_view_release(&lv.v);

	lost_check_reads(f, fd, 3, buf, ref, "with the daemon back");
	hm_view_release(&v);
	if (hm_close(f) < 0)
		child_fail(2, "hm_close: %s", strerror(errno));
	hm_disconnect(c);
	_exit(0);
}

static void
test_lost_mapping_reads_as_pread(void **state)
{
	const struct harness *h = *state;
	char path[PATH_MAX], old[32];
	ssize_t n;
	int lfd, status;
	pid_t pid;

	if (geteuid() != 0) {
		print_message("# skipped: breaking a lease by force (%s) needs root\n",
			      LEASE_BREAK_TIME);
		skip();
	}
	lfd = open(LEASE_BREAK_TIME, O_RDWR | O_CLOEXEC);
	if (lfd < 0) {
		print_message("# skipped: %s: %s\n", LEASE_BREAK_TIME, strerror(errno));
		skip();
	}
	n = pread(lfd, old, sizeof old - 1, 0);
	assert_true(n > 0);
	old[n] = '\0';
	make_file(h, "root/lost", LOST_SIZE, 43, path);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		lost_child(h, path, lfd, old);
	/* whatever became of the child: the daemon goes on, the break time
	 * is what it was */
	n = waitpid(pid, &status, 0);
	kill(h->pid, SIGCONT);
	if (pwrite(lfd, old, strlen(old), 0) != (ssize_t)strlen(old))
		print_error("could not put back %s (%s): %s\n", LEASE_BREAK_TIME, old,
			    strerror(errno));
	close(lfd);
	assert_int_equal(n, pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == SIGBUS_SKIP)
		skip();
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("the child ended with status 0x%x (%s)", status,
			 WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "see above");
}

/* --- regions that cost less -------------------------------------------- */

/* A read longer than the region goes through it in pieces, not over the
 * socket. */
static void
test_large_read_split(void **state)
{
	const struct harness *h = *state;
	struct hm_options o = HM_OPTIONS_INIT;
	char path[PATH_MAX];
	uint64_t shm0, served0;
	hm_client *c;
	hm_file *f;
	int fd;

	o.direct = 0;
	o.shm_size = 256 * KiB;
	c = hm_connect_opts(h->sock, &o);
	assert_non_null(c);
	make_file(h, "root/split", 3 * MiB + 11, 30, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	f = open_ok(c, path, 0);
	shm0 = harness_stat(c, "bytes_shm");
	served0 = harness_stat(c, "bytes_served");
	assert_int_equal(harness_check_read(f, fd, 5, 3 * MiB), 3 * MiB);
	assert_int_equal(harness_check_read(f, fd, 2 * MiB, 2 * MiB), MiB + 11);
	assert_int_equal(harness_stat(c, "bytes_shm") - shm0, 4 * MiB + 11);
	assert_int_equal(harness_stat(c, "bytes_served") - served0, 4 * MiB + 11);
	assert_int_equal(hm_close(f), 0);
	close(fd);
	hm_disconnect(c);
}

/* Whether this system gives shared memory transparent huge pages. */
static bool
shmem_thp(void)
{
	char buf[128] = "";
	FILE *fp = fopen("/sys/kernel/mm/transparent_hugepage/shmem_enabled", "re");

	if (fp == NULL)
		return false;
	if (fgets(buf, sizeof buf, fp) == NULL)
		buf[0] = '\0';
	fclose(fp);
	return strstr(buf, "[always]") || strstr(buf, "[within_size]") ||
	       strstr(buf, "[advise]") || strstr(buf, "[force]");
}

/* Regions ask for huge pages where the system has them, and stats say
 * so; a small region does not. */
static void
test_region_huge_pages(void **state)
{
	const struct harness *h = *state;
	struct hm_options o = HM_OPTIONS_INIT;
	hm_client *big, *small;

	o.shm_size = 16 * MiB;
	big = hm_connect_opts(h->sock, &o);
	o.shm_size = 64 * KiB;
	small = hm_connect_opts(h->sock, &o);
	assert_non_null(big);
	assert_non_null(small);
	assert_int_equal(harness_stat(big, "regions_huge"), shmem_thp() ? 1 : 0);
	print_message("shared memory huge pages: %s\n", shmem_thp() ? "yes" : "no (shmem_enabled)");
	hm_disconnect(big);
	hm_disconnect(small);
}

/* --- options ------------------------------------------------------------ */

static void
test_options(void **state)
{
	const struct harness *h = *state;
	struct hm_options o = HM_OPTIONS_INIT;
	char path[PATH_MAX];
	hm_client *c;
	hm_file *f;
	int fd;

	/* a size the library does not know, values out of range */
	o.size = sizeof o + 8;
	assert_null(hm_connect_opts(h->sock, &o));
	assert_int_equal(errno, EINVAL);
	o = (struct hm_options)HM_OPTIONS_INIT;
	o.direct = 2;
	assert_null(hm_connect_opts(h->sock, &o));
	assert_int_equal(errno, EINVAL);
	o = (struct hm_options)HM_OPTIONS_INIT;
	o.poll_us = 1000000;
	assert_null(hm_connect_opts(h->sock, &o));
	assert_int_equal(errno, EINVAL);

	/* the option beats the environment, which is the default */
	make_file(h, "root/options", MiB, 16, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	setenv("HOTMAP_DIRECT", "0", 1);
	c = connect_direct(h, 0);
	f = open_ok(c, path, HM_O_DIRECT);
	expect_direct(c, f, fd);
	hm_close(f);
	hm_disconnect(c);
	c = hm_connect_opts(h->sock, NULL);
	assert_non_null(c);
	f = open_ok(c, path, HM_O_DIRECT);
	expect_no_direct_reads(c, f, fd);
	hm_close(f);
	hm_disconnect(c);
	/* no region: no slots, no grants, every read still right */
	o = (struct hm_options)HM_OPTIONS_INIT;
	o.direct = 1;
	o.shm_size = 0;
	c = hm_connect_opts(h->sock, &o);
	assert_non_null(c);
	f = open_ok(c, path, HM_O_DIRECT);
	expect_no_direct_reads(c, f, fd);
	hm_close(f);
	hm_disconnect(c);
	close(fd);
}

/* --- opens by path: a descriptor back only where configuration says ---- */

/* The descriptors open in this process. */
static int
count_own_fds(void)
{
	return harness_count_fds(getpid(), NULL);
}

/* path-descriptors no (the default): an open by path is read through the
 * daemon, and no descriptor reaches the client. */
static void
test_path_open_no_descriptor(void **state)
{
	const struct harness *h = *state;
	hm_client *c = connect_direct(h, 0);
	char path[PATH_MAX];
	struct hm_stat st;
	hm_file *f;
	int fd, fds0;

	make_file(h, "root/bypath", 3 * MiB + 5, 21, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	fds0 = count_own_fds();
	f = open_ok(c, path, HM_O_PATH | HM_O_DIRECT);
	assert_int_equal(count_own_fds(), fds0);
	assert_int_equal(hm_stat(f, &st), 0);
	assert_int_equal(st.direct, HM_DIRECT_NO);
	assert_non_null(strstr(st.direct_text, "path-descriptors is no"));
	expect_no_direct_reads(c, f, fd);
	assert_int_equal(hm_close(f), 0);
	close(fd);
	hm_disconnect(c);
}

/* path-descriptors yes: the reply brings a read-only descriptor, and the
 * file is read directly, byte for byte, with no round trip. */
static void
test_path_open_descriptor(void **state)
{
	const struct harness *h = *state;
	hm_client *c = connect_direct(h, 0);
	char path[PATH_MAX], other[PATH_MAX];
	uint64_t reads0;
	struct hm_stat st;
	hm_file *f, *g;
	int fd, ofd, fds0, i;

	make_file(h, "root/bypath", 3 * MiB + 5, 22, path);
	make_file(h, "root/bypath2", 100 * KiB + 1, 23, other);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ofd = open(other, O_RDONLY | O_CLOEXEC);
	fds0 = count_own_fds();
	f = open_ok(c, path, HM_O_PATH | HM_O_DIRECT);
	assert_int_equal(hm_stat(f, &st), 0);
	if (count_own_fds() != fds0 + 1)
		fail_msg("no descriptor: direct %d (%s)", st.direct, st.direct_text);
	assert_int_equal(st.direct, HM_DIRECT_YES);
	/* two in flight on one connection: each reply brings its own */
	g = open_ok(c, other, HM_O_PATH | HM_O_DIRECT);
	reads0 = harness_stat(c, "requests_read");
	for (i = 0; i < 40; i++) {
		uint64_t off = (uint64_t)i * 77777;

		assert_int_equal(harness_check_read(f, fd, off, 5000), 5000);
		assert_int_equal(harness_check_read(g, ofd, off % (100 * KiB), 3000),
				 off % (100 * KiB) + 3000 <= 100 * KiB + 1 ?
				 3000 : (int)(100 * KiB + 1 - off % (100 * KiB)));
	}
	/* past the end: short, as pread */
	assert_int_equal(harness_check_read(f, fd, 3 * MiB, 100), 5);
	assert_int_equal(harness_stat(c, "requests_read"), reads0);
	assert_int_equal(hm_close(g), 0);
	assert_int_equal(hm_close(f), 0);
	assert_int_equal(count_own_fds(), fds0);	/* closed with their handles */
	hm_disconnect(c);
	close(ofd);
	close(fd);
}

/* A client that did not ask for direct reads gets no descriptor either. */
static void
test_path_open_descriptor_not_asked(void **state)
{
	const struct harness *h = *state;
	struct hm_options o = HM_OPTIONS_INIT;
	char path[PATH_MAX];
	hm_client *c;
	hm_file *f;
	int fd, fds0;

	make_file(h, "root/bypath", MiB, 24, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	o.direct = 0;
	c = hm_connect_opts(h->sock, &o);
	assert_non_null(c);
	fds0 = count_own_fds();
	f = open_ok(c, path, HM_O_PATH);
	assert_int_equal(count_own_fds(), fds0);
	expect_no_direct_reads(c, f, fd);
	assert_int_equal(hm_close(f), 0);
	hm_disconnect(c);
	close(fd);
}

#define T(f, opts) cmocka_unit_test_prestate_setup_teardown(f, setup, teardown, (void *)&opts)

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		T(test_promoted_by_heat, opts_default),
		T(test_stat_without_round_trip, opts_default),
		T(test_listed_per_file, opts_default),
		T(test_listed_per_client, opts_default),
		T(test_clients_paged, opts_default),
		T(test_view_in_place, opts_default),
		T(test_view_batch, opts_default),
		T(test_mapping_reused, opts_default),
		T(test_idle_mappings_released, opts_default),
		T(test_block_populated, opts_default),
		T(test_view_populated, opts_default),
		T(test_batch_promotes, opts_default),
		T(test_many_files_few_descriptors, opts_default),
		T(test_refused, opts_default),
		T(test_switched_off, opts_off),
		T(test_revoked_by_writer, opts_default),
		T(test_revoked_by_evict, opts_default),
		T(test_view_survives_truncation, opts_default),
		T(test_truncation_race, opts_default),
		T(test_threads_parallel, opts_default),
		T(test_fork, opts_default),
		T(test_program_sigbus_chained, opts_default),
		T(test_program_sigbus_chained_twice, opts_default),
		T(test_program_sigbus_first_too, opts_default),
		T(test_program_sigbus_guarded, opts_default),
		T(test_lost_mapping_reads_as_pread, opts_default),
		T(test_options, opts_default),
		T(test_large_read_split, opts_default),
		T(test_region_huge_pages, opts_default),
		T(test_path_open_no_descriptor, opts_root),
		T(test_path_open_descriptor, opts_path_fds),
		T(test_path_open_descriptor_not_asked, opts_path_fds),
	};

	if (argc == 6 && strcmp(argv[1], "--sigbus-child") == 0)
		return sigbus_child(argv);
	return cmocka_run_group_tests_name("direct", tests, NULL, NULL);
}
