/* SPDX-License-Identifier: MIT */
/*
 * test_ops.c - what an operator configures, against a real hotmapd
 * (tests/harness.h): the memory budget (least recently used first, a
 * mapping with a reader never unmapped, the fallback to pread when every
 * mapping is read), idle unmapping, the cap on files kept, warm on first
 * cache, the limit of reads in flight per client, who may connect and
 * who may administer, what a client may reach by path or descriptor
 * (magic links, long paths, mounts beneath a root with cross-mounts), and
 * huge folios.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/hotmap_admin.h"
#include "proto/pagemap.h"
#include "tests/harness.h"

#define MiB (1024u * 1024u)

/* cmocka's skip, with the reason in the output */
#define skip_because(why)					\
	do {							\
		print_message("# skipped: %s\n", (why));	\
		skip();						\
	} while (0)

static int
setup(void **state)
{
	unsetenv("HOTMAP_SHM_SIZE");
	setenv("HOTMAP_POLL", "0", 1);
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

/* A file of 1 MiB named root/NAME, and its path in out. */
static void
make_file(struct harness *h, const char *name, uint64_t seed, char *out)
{
	char rel[64];

	snprintf(rel, sizeof rel, "root/%s", name);
	harness_path(h, rel, out);
	harness_write_file(out, MiB, seed);
}

/* Opens path, reads a range of it (checked against pread), and returns
 * the handle, or closes it when keep is false (NULL then). */
static hm_file *
use_file(hm_client *c, const char *path, bool keep)
{
	hm_file *f = hm_open(c, path, 0);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_non_null(f);
	assert_true(fd >= 0);
	assert_int_equal(harness_check_read(f, fd, 12345, 70000), 70000);
	close(fd);
	if (keep)
		return f;
	assert_int_equal(hm_close(f), 0);
	assert_int_equal(hm_ping(c, NULL), 0);	/* the daemon has closed it */
	return NULL;
}

struct listing {
	char paths[8][PATH_MAX];
	int backend[8];
	int n;
};

static void
list_add(const struct hm_file_info *info, void *arg)
{
	struct listing *l = arg;

	if (l->n < 8) {
		snprintf(l->paths[l->n], PATH_MAX, "%s", info->path);
		l->backend[l->n] = info->backend;
		l->n++;
	}
}

/* Whether the daemon has path cached (mapped, when mapped is true). */
static bool
cached(hm_client *admin, const char *path, bool mapped)
{
	struct listing l = { .n = 0 };
	int i;

	assert_int_equal(hm_files(admin, list_add, &l), 0);
	for (i = 0; i < l.n; i++)
		if (strcmp(l.paths[i], path) == 0)
			return !mapped || l.backend[i] == HM_BACKEND_MMAP;
	return false;
}

/* Room for two mappings of 1 MiB, not three. */
static const struct harness_opts opts_budget = {
	.extra = { "--max-mapped-bytes", "2200K", NULL },
};

/*
 * Three files through a budget for two: the least recently used one that
 * no handle reads is unmapped first.  Then, with every mapping read, a
 * new open gets pread (reason over-budget) and reads the same bytes, and
 * the mappings being read stay.
 */
static void
test_budget_lru_and_fallback(void **state)
{
	struct harness *h = *state;
	char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX], d[PATH_MAX];
	hm_client *admin = harness_connect(h), *cl = harness_connect(h);
	hm_file *fa, *fc, *fd_;
	struct hm_stat st;

	make_file(h, "a", 1, a);
	make_file(h, "b", 2, b);
	make_file(h, "c", 3, c);
	make_file(h, "d", 4, d);
	use_file(cl, a, false);
	use_file(cl, b, false);
	use_file(cl, a, false);		/* a is now more recent than b */
	assert_int_equal(harness_stat(admin, "evictions_lru"), 0);
	use_file(cl, c, false);		/* no room: b goes, not a */
	assert_int_equal(harness_stat(admin, "evictions_lru"), 1);
	assert_true(cached(admin, a, true));
	assert_false(cached(admin, b, false));
	assert_true(cached(admin, c, true));
	assert_true(harness_stat(admin, "mapped_bytes") <= 2200 * 1024);

	/* every mapping has a reader: d is served with pread */
	fa = use_file(cl, a, true);
	fc = use_file(cl, c, true);
	fd_ = use_file(cl, d, true);
	assert_int_equal(hm_stat(fd_, &st), 0);
	assert_int_equal(st.backend, HM_BACKEND_PREAD);
	assert_int_equal(st.reason, HM_REASON_OVER_BUDGET);
	assert_int_equal(harness_stat(admin, "budget_fallbacks"), 1);
	assert_int_equal(harness_stat(admin, "opens_over_budget"), 1);
	assert_int_equal(harness_stat(admin, "evictions_lru"), 1);
	/* the mappings being read are still there, and read right */
	assert_int_equal(hm_stat(fa, &st), 0);
	assert_int_equal(st.backend, HM_BACKEND_MMAP);
	assert_true(cached(admin, a, true));
	assert_true(cached(admin, c, true));
	hm_close(fa);
	hm_close(fc);
	hm_close(fd_);
	use_file(cl, a, false);
	hm_disconnect(cl);
	hm_disconnect(admin);
}

static const struct harness_opts opts_idle = {
	.extra = { "--idle-unmap", "1", NULL },
};

/* A file unused for a second is dropped; one with a reader is kept. */
static void
test_idle_unmap(void **state)
{
	struct harness *h = *state;
	char a[PATH_MAX], b[PATH_MAX];
	hm_client *admin = harness_connect(h), *cl = harness_connect(h);
	hm_file *fb;
	int i;

	make_file(h, "a", 5, a);
	make_file(h, "b", 6, b);
	use_file(cl, a, false);
	fb = use_file(cl, b, true);
	assert_int_equal(harness_stat(admin, "files"), 2);
	/* the sweep runs each second; idle means more than a second */
	for (i = 0; i < 400 && harness_stat(admin, "evictions_idle") == 0; i++)
		usleep(10000);
	assert_int_equal(harness_stat(admin, "evictions_idle"), 1);
	assert_int_equal(harness_stat(admin, "files"), 1);
	assert_false(cached(admin, a, false));
	assert_true(cached(admin, b, true));
	sleep(2);
	assert_true(cached(admin, b, true));	/* read by a handle: kept */
	{
		int fd = open(b, O_RDONLY | O_CLOEXEC);

		assert_true(fd >= 0);
		assert_int_equal(harness_check_read(fb, fd, 0, 4096), 4096);
		close(fd);
	}
	hm_close(fb);
	hm_disconnect(cl);
	hm_disconnect(admin);
}

/*
 * A cached file no handle reads is freed as soon as it is deleted, or
 * replaced by rename, whenever that happens: a replaced 100 GB model must
 * not stay on disk.  One a handle reads can be named for evict after its
 * deletion (as files shows it), and goes at its last close.
 */
static void
test_deleted_files_freed(void **state)
{
	struct harness *h = *state;
	char a[PATH_MAX], b[PATH_MAX], c_[PATH_MAX], shown[PATH_MAX + 16];
	hm_client *admin = harness_connect(h), *cl = harness_connect(h);
	struct hm_evicted ev;
	hm_file *fc;
	int i;

	make_file(h, "del-a", 31, a);
	make_file(h, "del-b", 32, b);
	make_file(h, "del-c", 33, c_);
	use_file(cl, a, false);
	use_file(cl, a, false);	/* idle, read again, idle again: still watched */
	use_file(cl, b, false);
	fc = use_file(cl, c_, true);
	assert_int_equal(harness_stat(admin, "files"), 3);

	/* deleted while idle: dropped without a sweep or an evict */
	assert_int_equal(unlink(a), 0);
	for (i = 0; i < 300 && harness_stat(admin, "evictions_deleted") < 1; i++)
		usleep(10000);
	assert_int_equal(harness_stat(admin, "evictions_deleted"), 1);
	assert_int_equal(harness_stat(admin, "files"), 2);

	/* replaced by rename while idle: the old one goes too */
	harness_write_file(a, MiB, 34);
	assert_int_equal(rename(a, b), 0);
	for (i = 0; i < 300 && harness_stat(admin, "evictions_deleted") < 2; i++)
		usleep(10000);
	assert_int_equal(harness_stat(admin, "evictions_deleted"), 2);
	assert_int_equal(harness_stat(admin, "files"), 1);

	/* deleted under a reader: evict finds it by its name, busy */
	assert_int_equal(unlink(c_), 0);
	assert_int_equal(hm_evict(admin, c_, &ev), 0);
	assert_int_equal(ev.busy, 1);
	snprintf(shown, sizeof shown, "%s (deleted)", c_);
	assert_true(cached(admin, shown, false));
	assert_int_equal(hm_evict(admin, shown, &ev), 0);
	assert_int_equal(ev.busy, 1);
	assert_int_equal(hm_close(fc), 0);
	assert_int_equal(hm_ping(cl, NULL), 0);	/* the daemon has closed it */
	assert_int_equal(harness_stat(admin, "files"), 0);
	errno = 0;
	assert_int_equal(hm_evict(admin, c_, &ev), -1);
	assert_int_equal(errno, ENOENT);
	hm_disconnect(cl);
	hm_disconnect(admin);
}

static const struct harness_opts opts_two_files = {
	.extra = { "--max-open-files", "2", NULL },
};

/* At most two files kept: the oldest unused goes; open ones past the cap
 * are still served. */
static void
test_max_open_files(void **state)
{
	struct harness *h = *state;
	char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX];
	hm_client *admin = harness_connect(h), *cl = harness_connect(h);
	hm_file *f[3];

	make_file(h, "a", 7, a);
	make_file(h, "b", 8, b);
	make_file(h, "c", 9, c);
	use_file(cl, a, false);
	use_file(cl, b, false);
	use_file(cl, c, false);
	assert_int_equal(harness_stat(admin, "files"), 2);
	assert_false(cached(admin, a, false));
	assert_int_equal(harness_stat(admin, "evictions_lru"), 1);
	/* all three open at once: served, and the extra one is not kept */
	f[0] = use_file(cl, a, true);
	f[1] = use_file(cl, b, true);
	f[2] = use_file(cl, c, true);
	assert_true(harness_stat(admin, "files_over_budget") >= 1);
	hm_close(f[0]);
	hm_close(f[1]);
	hm_close(f[2]);
	/* hm_close does not wait: a call on the same client returns once
	 * the daemon has closed the handles */
	assert_int_equal(hm_ping(cl, NULL), 0);
	assert_true(harness_stat(admin, "files") <= 2);
	hm_disconnect(cl);
	hm_disconnect(admin);
}

static const struct harness_opts opts_warm_populate = {
	.extra = { "--warm", "populate", NULL },
};
static const struct harness_opts opts_warm_willneed = {
	.extra = { "--warm", "willneed", NULL },
};

/* warm: a file is warmed when first cached, not when opened again. */
static void
test_warm_on_first_cache(void **state)
{
	struct harness *h = *state;
	char a[PATH_MAX];
	hm_client *admin = harness_connect(h), *cl = harness_connect(h);

	make_file(h, "a", 10, a);
	assert_int_equal(harness_stat(admin, "warms"), 0);
	use_file(cl, a, false);
	harness_wait_stat(admin, "warms", 1);
	use_file(cl, a, false);
	sleep(1);
	assert_int_equal(harness_stat(admin, "warms"), 1);
	hm_disconnect(cl);
	hm_disconnect(admin);
}

/* Without warm, nothing is warmed behind the client's back. */
static void
test_warm_none(void **state)
{
	struct harness *h = *state;
	char a[PATH_MAX];
	hm_client *admin = harness_connect(h), *cl = harness_connect(h);

	make_file(h, "a", 11, a);
	use_file(cl, a, false);
	sleep(1);
	assert_int_equal(harness_stat(admin, "warms"), 0);
	hm_disconnect(cl);
	hm_disconnect(admin);
}

/* --- huge folios ------------------------------------------------------ */

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#define HUGE_FILE	(8u * MiB)

/* The huge page size files may be cached in, or 0 (and why). */
static size_t
huge_chunk(const char **why)
{
	unsigned long long v = 0;
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "re");

	if (f == NULL || fscanf(f, "%llu", &v) != 1 || v == 0 || HUGE_FILE % v != 0) {
		*why = "no transparent huge pages here";
		v = 0;
	}
	if (f != NULL)
		fclose(f);
	return (size_t)v;
}

/* How many of the file's chunks a fresh mapping of it in this process
 * maps with huge entries; -1 when the kernel cannot tell (no PAGEMAP_SCAN).
 * With fold, the file is first dropped from the page cache and read back
 * through a MADV_HUGEPAGE mapping, as hotmapd does: whether the kernel
 * gives this file huge folios at all. */
static int
huge_chunks_fold(const char *path, size_t chunk, bool fold)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	uint8_t *area, *p;
	int n = 0, r;
	size_t i;

	assert_true(fd >= 0 && pm >= 0);
	/* at an address aligned to the chunk: only there can an entry map it */
	area = mmap(NULL, HUGE_FILE + chunk, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(area != MAP_FAILED);
	p = (uint8_t *)(((uintptr_t)area + chunk - 1) & ~((uintptr_t)chunk - 1));
	assert_true(mmap(p, HUGE_FILE, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) == p);
	if (fold) {
		/* written back first: a dirty page is not dropped */
		assert_int_equal(fdatasync(fd), 0);
		assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
		(void)madvise(p, HUGE_FILE, MADV_HUGEPAGE);
	}
	assert_int_equal(madvise(p, HUGE_FILE, MADV_POPULATE_READ), 0);
	for (i = 0; i < HUGE_FILE / chunk; i++) {
		r = pagemap_all_huge(pm, p + i * chunk, chunk);
		if (r < 0) {
			n = -1;
			break;
		}
		n += r;
	}
	munmap(area, HUGE_FILE + chunk);
	close(pm);
	close(fd);
	return n;
}

static int
huge_chunks(const char *path, size_t chunk)
{
	return huge_chunks_fold(path, chunk, false);
}

/* Whether this kernel gives a file written as huge_file writes them huge
 * folios when asked as hotmapd asks: a file of its own in dir, folded. */
static bool
kernel_folds(const char *dir, size_t chunk)
{
	char control[PATH_MAX + 16];
	int n;

	snprintf(control, sizeof control, "%s/control", dir);
	harness_write_file(control, HUGE_FILE, 42);
	n = huge_chunks_fold(control, chunk, true);
	unlink(control);
	return n > 0;
}

/* The file of huge_file and its directory, gone. */
static void
huge_file_remove(const char *dir, const char *path)
{
	unlink(path);
	rmdir(dir);
}

/* A file of HUGE_FILE bytes written in 1 MiB calls (cached in folios of
 * 1 MiB at most), in a directory of its own on the build's disk (a tmpfs
 * has no page cache to fold): its path in out, or NULL and why. */
static const char *
huge_file(char *dir, size_t dirlen, char *out, const char **why)
{
	const char *base = getenv("TESTS_BUILDDIR");
	struct statfs sfs;
	int fd;

	snprintf(dir, dirlen, "%s/huge.XXXXXX", base != NULL ? base : ".");
	if (mkdtemp(dir) == NULL) {
		*why = "no directory of the build's to write in (TESTS_BUILDDIR)";
		return NULL;
	}
	if (statfs(dir, &sfs) == 0 && (sfs.f_type == 0x01021994 || sfs.f_type == 0x858458f6)) {
		rmdir(dir);
		*why = "the build directory is on tmpfs";
		return NULL;
	}
	snprintf(out, PATH_MAX, "%s/f", dir);
	harness_write_file(out, HUGE_FILE, 41);
	fd = open(out, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fdatasync(fd), 0);
	close(fd);
	return out;
}

/*
 * huge-folios: the first open of a file that is in memory has the daemon
 * read its chunks cached in small folios back into huge ones, in the
 * background, so that a process mapping the file afterwards (a client
 * reading it directly, or any program) maps each chunk with one entry;
 * the bytes read are the file's, during and after; a warm reads nothing
 * back twice.
 */
static void
test_huge_folios(void **state)
{
	struct harness *h = *state;
	const char *why = NULL;
	size_t chunk = huge_chunk(&why);
	char dir[PATH_MAX], path[PATH_MAX];
	hm_client *admin, *cl;
	hm_file *f;
	int fd, before, after;
	uint64_t off;

	if (chunk == 0 || huge_file(dir, sizeof dir, path, &why) == NULL)
		skip_because(why);
	before = huge_chunks(path, chunk);
	if (before < 0) {
		huge_file_remove(dir, path);
		skip_because("the kernel cannot tell a huge mapping (PAGEMAP_SCAN: Linux 6.7)");
	}
	admin = harness_connect(h);
	cl = harness_connect(h);
	f = hm_open(cl, path, 0);
	assert_non_null(f);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	/* read while the open's background pass goes through the file: no
	 * warm asked for it; every small chunk is read back, or tried */
	{
		int64_t deadline = harness_now_ms() + 10000;
		uint64_t want = HUGE_FILE / chunk - (uint64_t)before, folds, misses;

		do {
			for (off = 0; off < HUGE_FILE; off += 3 * MiB + 4096)
				harness_check_read(f, fd, off, 256 * 1024);
			folds = harness_stat(admin, "huge_folds");
			misses = harness_stat(admin, "huge_fold_misses");
			if (harness_now_ms() > deadline)
				fail_msg("huge folds %llu + misses %llu, want %llu", (unsigned long long)folds,
					 (unsigned long long)misses, (unsigned long long)want);
		} while (folds + misses < want);
		assert_int_equal(folds + misses, want);
		after = huge_chunks(path, chunk);
		if (folds == 0) {
			bool can;

			close(fd);
			hm_close(f);
			hm_disconnect(cl);
			hm_disconnect(admin);
			can = kernel_folds(dir, chunk);
			huge_file_remove(dir, path);
			if (can)
				fail_msg("hotmapd read no chunk back into a huge folio (%llu misses), "
					 "though the kernel gives such a file huge folios",
					 (unsigned long long)misses);
			skip_because("no chunk could be had in a huge folio (memory, or the kernel)");
		}
		/* each one read back is mapped huge now (a miss: no huge
		 * page could be had for it) */
		assert_int_equal(after, before + (int)folds);
	}
	assert_int_equal(hm_warm(f, 0, HUGE_FILE), HUGE_FILE);
	/* the bytes are the file's, through every tier the file is read by */
	for (off = 0; off < HUGE_FILE; off += 3 * MiB + 4096)
		harness_check_read(f, fd, off, 256 * 1024);
	harness_check_read(f, fd, 0, HUGE_FILE);
	/* once per chunk: another warm reads nothing back */
	{
		uint64_t folds = harness_stat(admin, "huge_folds");

		assert_int_equal(hm_warm(f, 0, HUGE_FILE), HUGE_FILE);
		assert_int_equal(harness_stat(admin, "huge_folds"), folds);
	}
	close(fd);
	hm_close(f);
	hm_disconnect(cl);
	hm_disconnect(admin);
	huge_file_remove(dir, path);
}

static const struct harness_opts opts_no_huge = {
	.extra = { "--huge-folios", "no", NULL },
};

/* huge-folios = no: a warm leaves the page cache as it is. */
static void
test_huge_folios_off(void **state)
{
	struct harness *h = *state;
	const char *why = NULL;
	size_t chunk = huge_chunk(&why);
	char dir[PATH_MAX], path[PATH_MAX];
	hm_client *admin, *cl;
	hm_file *f;
	int before;

	if (chunk == 0 || huge_file(dir, sizeof dir, path, &why) == NULL)
		skip_because(why);
	before = huge_chunks(path, chunk);
	if (before < 0 || !kernel_folds(dir, chunk)) {
		huge_file_remove(dir, path);
		skip_because("no huge folio could be had here: nothing for the switch to stop");
	}
	admin = harness_connect(h);
	cl = harness_connect(h);
	f = hm_open(cl, path, 0);
	assert_non_null(f);
	assert_int_equal(hm_warm(f, 0, HUGE_FILE), HUGE_FILE);
	assert_int_equal(harness_stat(admin, "huge_folds"), 0);
	assert_int_equal(harness_stat(admin, "huge_fold_misses"), 0);
	assert_int_equal(huge_chunks(path, chunk), before);
	hm_close(f);
	hm_disconnect(cl);
	hm_disconnect(admin);
	huge_file_remove(dir, path);
}

/* A file of huge_file's for a test of folds the kernel can make here, its
 * descriptor (fd), and once huge_case_open ran, a client's handle of it
 * and an admin client for the counters. */
struct huge_case {
	size_t chunk;
	char dir[PATH_MAX], path[PATH_MAX];
	int fd;
	hm_client *admin, *cl;
	hm_file *f;
};

/* Skips the test where no huge folio can be had. */
static void
huge_case_begin(struct huge_case *hc)
{
	const char *why = NULL;

	hc->chunk = huge_chunk(&why);
	if (hc->chunk == 0 || huge_file(hc->dir, sizeof hc->dir, hc->path, &why) == NULL)
		skip_because(why);
	if (huge_chunks(hc->path, hc->chunk) < 0 || !kernel_folds(hc->dir, hc->chunk)) {
		huge_file_remove(hc->dir, hc->path);
		skip_because("no huge folio could be had here");
	}
	hc->fd = open(hc->path, O_RDONLY | O_CLOEXEC);
	assert_true(hc->fd >= 0);
}

static void
huge_case_open(struct harness *h, struct huge_case *hc)
{
	hc->admin = harness_connect(h);
	hc->cl = harness_connect(h);
	hc->f = hm_open(hc->cl, hc->path, 0);
	assert_non_null(hc->f);
	/* the open's background pass over what is in memory (if the file
	 * is hot) is over, its counts in: else it may fold (or miss) the
	 * chunks beside the test's warm, and its counts land after the
	 * warm's reply, where they would be taken for the next warm's */
	harness_wait_stat(hc->admin, "reads_inflight", 0);
}

static void
huge_case_end(struct huge_case *hc)
{
	close(hc->fd);
	hm_close(hc->f);
	hm_disconnect(hc->cl);
	hm_disconnect(hc->admin);
	huge_file_remove(hc->dir, hc->path);
}

/*
 * A warm of a file not in memory reads its chunks in huge folios, not in
 * what the kernel's readahead would give them; and a warm looks at each
 * chunk again (one reclaimed since an earlier fold is read back): the
 * second warm finds every chunk huge and reads nothing.
 */
static void
test_huge_folios_warm_cold(void **state)
{
	struct huge_case hc;
	uint64_t folds, misses;

	huge_case_begin(&hc);
	/* out of memory: written back at huge_file, nothing maps it now */
	assert_int_equal(posix_fadvise(hc.fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	huge_case_open(*state, &hc);
	assert_int_equal(hm_warm(hc.f, 0, HUGE_FILE), HUGE_FILE);
	folds = harness_stat(hc.admin, "huge_folds");
	misses = harness_stat(hc.admin, "huge_fold_misses");
	print_message("a warm of the cold file: %llu chunks read in huge, %llu not\n",
		      (unsigned long long)folds, (unsigned long long)misses);
	/* (the kernel's readahead of one chunk may read the next in huge
	 * too: then that one is found huge, and not counted) */
	if (folds == 0)	/* the kernel could, a moment ago (kernel_folds) */
		fail_msg("a warm of a cold file read no chunk in a huge folio (%llu misses)",
			 (unsigned long long)misses);
	assert_int_equal(huge_chunks(hc.path, hc.chunk), (int)(HUGE_FILE / hc.chunk - misses));
	harness_check_read(hc.f, hc.fd, 0, HUGE_FILE);
	harness_check_read(hc.f, hc.fd, 3 * MiB - 100, 200);
	/* looked at again, all huge: nothing read back */
	assert_int_equal(hm_warm(hc.f, 0, HUGE_FILE), HUGE_FILE);
	assert_int_equal(harness_stat(hc.admin, "huge_folds"), folds);
	huge_case_end(&hc);
}

/*
 * A chunk another process maps cannot be read back into a huge folio (a
 * miss); four in a row stop the folds for the file.  The next warm tries
 * again: once nothing maps the file, its chunks become huge.
 */
static void
test_huge_folios_retry(void **state)
{
	struct huge_case hc;
	uint64_t misses, folds;
	void *pin;

	huge_case_begin(&hc);
	/* in memory in small folios, every page mapped by this process */
	harness_write_file(hc.path, HUGE_FILE, 41);
	assert_int_equal(fdatasync(hc.fd), 0);
	pin = mmap(NULL, HUGE_FILE, PROT_READ, MAP_SHARED, hc.fd, 0);
	assert_true(pin != MAP_FAILED);
	assert_int_equal(madvise(pin, HUGE_FILE, MADV_POPULATE_READ), 0);
	if (huge_chunks(hc.path, hc.chunk) == (int)(HUGE_FILE / hc.chunk)) {
		munmap(pin, HUGE_FILE);
		close(hc.fd);
		huge_file_remove(hc.dir, hc.path);
		skip_because("the kernel wrote the file in huge folios: nothing to read back");
	}
	huge_case_open(*state, &hc);
	/* the open's pass missed every chunk it tried and stopped the file;
	 * the warm tries them again */
	misses = harness_stat(hc.admin, "huge_fold_misses");
	assert_int_equal(hm_warm(hc.f, 0, HUGE_FILE), HUGE_FILE);
	print_message("pinned: the open's pass missed %llu chunks, the warm %llu\n",
		      (unsigned long long)misses,
		      (unsigned long long)(harness_stat(hc.admin, "huge_fold_misses") - misses));
	assert_true(harness_stat(hc.admin, "huge_fold_misses") > misses);
	misses = harness_stat(hc.admin, "huge_fold_misses");
	folds = harness_stat(hc.admin, "huge_folds");
	assert_int_equal(folds, 0);
	harness_check_read(hc.f, hc.fd, 0, HUGE_FILE);
	/* let go of it: the next warm reads it back */
	munmap(pin, HUGE_FILE);
	assert_int_equal(hm_warm(hc.f, 0, HUGE_FILE), HUGE_FILE);
	print_message("unpinned: %llu folds, %llu misses\n",
		      (unsigned long long)harness_stat(hc.admin, "huge_folds"),
		      (unsigned long long)harness_stat(hc.admin, "huge_fold_misses"));
	assert_true(harness_stat(hc.admin, "huge_folds") > folds);
	assert_int_equal(huge_chunks(hc.path, hc.chunk),
			 (int)(HUGE_FILE / hc.chunk - (harness_stat(hc.admin, "huge_fold_misses") - misses)));
	harness_check_read(hc.f, hc.fd, 0, HUGE_FILE);
	huge_case_end(&hc);
}

static const struct harness_opts opts_inflight_1 = {
	.extra = { "--max-inflight", "1", NULL },
};

/* Reads of a FIFO always go to the workers: with one allowed in flight,
 * a batch of eight waits in turn, and each still gets its answer; through
 * frames or, with ring, through the polling ring. */
static void
run_fifo_batch(struct harness *h, bool want_waits, bool ring)
{
	char fifo[PATH_MAX];
	hm_client *admin = harness_connect(h), *cl;

	setenv("HOTMAP_POLL", ring ? "1" : "0", 1);
	cl = harness_connect(h);
	setenv("HOTMAP_POLL", "0", 1);
	if (ring)
		assert_int_equal(harness_stat(admin, "clients_polling"), 1);
	struct hm_io io[8];
	char buf[8][16];
	hm_file *f;
	int i;

	harness_path(h, "root/fifo", fifo);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	f = hm_open(cl, fifo, 0);
	assert_non_null(f);
	for (i = 0; i < 8; i++)
		io[i] = (struct hm_io){ .file = f, .offset = 0, .len = 10, .buf = buf[i] };
	assert_int_equal(hm_read_batch(cl, io, 8), 0);
	for (i = 0; i < 8; i++)
		assert_int_equal(io[i].result, -ESPIPE);	/* as pread(2) on a FIFO */
	if (want_waits)
		assert_true(harness_stat(admin, "inflight_waits") >= 1);
	else
		assert_int_equal(harness_stat(admin, "inflight_waits"), 0);
	assert_int_equal(harness_stat(admin, "reads_inflight"), 0);
	hm_close(f);
	hm_disconnect(cl);
	hm_disconnect(admin);
}

static void
test_max_inflight(void **state)
{
	run_fifo_batch(*state, true, false);
}

/* The same through the polling ring: max-inflight holds there too. */
static void
test_max_inflight_ring(void **state)
{
	run_fifo_batch(*state, true, true);
}

static void
test_inflight_default(void **state)
{
	run_fifo_batch(*state, false, false);
}

/* --- who may connect, who may administer ----------------------------------- */

#define NOBODY 65534

static void
stats_noop(const char *key, uint64_t value, const char *text, void *arg)
{
	(void)key;
	(void)value;
	(void)text;
	(void)arg;
}

/*
 * fn(h, c) in a child running as uid and gid 65534 (root only: the tests
 * skip otherwise), connected to the daemon; its return value is the
 * child's exit status.  100 + errno of hm_connect.
 */
static int
run_as_nobody(struct harness *h, int (*fn)(struct harness *h, hm_client *c))
{
	int status;
	pid_t pid;

	/* the daemon's directory must let another user reach the socket */
	assert_int_equal(chmod(h->dir, 0755), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		hm_client *c;
		int rc;

		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
			_exit(99);
		c = hm_connect(h->sock);
		if (c == NULL)
			_exit(100 + errno);
		rc = fn(h, c);
		hm_disconnect(c);
		_exit(rc);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_not_equal(WEXITSTATUS(status), 99);
	return WEXITSTATUS(status);
}

/* 0: stats answered; 10 + errno of hm_stats. */
static int
nobody_asks_stats(struct harness *h, hm_client *c)
{
	(void)h;
	return hm_stats(c, stats_noop, NULL) < 0 ? 10 + errno : 0;
}

static int
as_nobody(struct harness *h)
{
	return run_as_nobody(h, nobody_asks_stats);
}

static void
test_non_admin_refused(void **state)
{
	struct harness *h = *state;
	hm_client *c;

	if (geteuid() != 0)
		skip_because("needs root: a second user to connect as");
	assert_int_equal(as_nobody(h), 10 + EPERM);
	/* root still is */
	c = harness_connect(h);
	assert_int_equal(hm_stats(c, stats_noop, NULL), 0);
	hm_disconnect(c);
}

static const struct harness_opts opts_admin_nobody = {
	.extra = { "--admin-uid", "65534", NULL },
};

static void
test_admin_uid_admits(void **state)
{
	if (geteuid() != 0)
		skip_because("needs root: a second user to connect as");
	assert_int_equal(as_nobody(*state), 0);
}

static const struct harness_opts opts_allow_root = {
	.extra = { "--allow-uid", "0", NULL },
};

/* allow-uid: another user is refused at HELLO, with a reason, before it
 * can touch a file; the allowed one connects. */
static void
test_allow_uid_refuses(void **state)
{
	struct harness *h = *state;
	hm_client *c;

	if (geteuid() != 0)
		skip_because("needs root: a second user to connect as");
	assert_int_equal(as_nobody(h), 100 + EACCES);
	c = harness_connect(h);
	assert_int_equal(harness_stat(c, "clients_refused_policy"), 1);
	hm_disconnect(c);
	assert_true(harness_log_find(h, 0, "allow-uid", NULL));
}

/*
 * A file whose content depends on who opened it is read through the
 * client's own descriptor: a root daemon must not reopen /proc/kallsyms
 * as root (real kernel addresses) for a client that sees zeros, nor share
 * a root client's entry with it.  In a child as nobody, while root holds
 * the same file open through the daemon.  Exit status 0: what hotmap
 * served is what the child's own descriptor reads, on a handle of its own.
 */
static int
nobody_reads_kallsyms(struct harness *h, hm_client *c)
{
	char got[512], want[512];
	struct hm_stat st;
	hm_file *f;
	ssize_t n, m;
	int fd;

	(void)h;
	f = hm_open(c, "/proc/kallsyms", 0);
	if (f == NULL)
		return 50 + errno;
	fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	n = hm_pread(f, got, sizeof got, 0);
	m = pread(fd, want, sizeof want, 0);
	if (n <= 0 || n != m || memcmp(got, want, (size_t)n) != 0) {
		fprintf(stderr, "# nobody read through hotmap: %.40s\n"
			"# nobody read itself:        %.40s\n",
			n > 0 ? got : "", m > 0 ? want : "");
		return 1;
	}
	if (hm_stat(f, &st) < 0 || st.handles != 1)
		return 2;	/* shared with root's handle */
	hm_close(f);
	close(fd);
	return 0;
}

static void
test_pseudo_files_read_as_opener(void **state)
{
	struct harness *h = *state;
	char root_view[64] = "", nobody_view[64] = "";
	hm_client *c;
	hm_file *f;
	FILE *p;

	if (geteuid() != 0)
		skip_because("needs root: a second user to read as");
	if (access("/proc/kallsyms", R_OK) != 0)
		skip_because("no /proc/kallsyms");
	c = harness_connect(h);
	f = hm_open(c, "/proc/kallsyms", 0);	/* root's, held open meanwhile */
	assert_non_null(f);
	assert_true(hm_pread(f, root_view, sizeof root_view - 1, 0) > 0);
	p = popen("setpriv --reuid=65534 --regid=65534 --clear-groups "
		  "head -c 63 /proc/kallsyms 2>/dev/null", "r");
	if (p != NULL) {
		if (fread(nobody_view, 1, sizeof nobody_view - 1, p) == 0)
			nobody_view[0] = '\0';
		pclose(p);
	}
	if (nobody_view[0] != '\0' && strcmp(root_view, nobody_view) == 0)
		print_message("# note: nobody sees root's /proc/kallsyms here "
			      "(kptr_restrict); the handle is still checked private\n");
	assert_int_equal(run_as_nobody(h, nobody_reads_kallsyms), 0);
	hm_close(f);
	hm_disconnect(c);
}

/*
 * The flags a client sets on the descriptor it passed do not reach the
 * daemon's reads: the cached file reads through a description of its own.
 * O_DIRECT on a shared description would make every reader's unaligned
 * pread fail with EINVAL.
 */
static void
test_passed_fd_flags_private(void **state)
{
	struct harness *h = *state;
	struct wire_msg m = { .n = 0 };
	struct wire_header hdr;
	char path[PATH_MAX], probe[16];
	uint8_t reply[2048];
	uint64_t handle = 0;
	int fd, sock, fl;

	harness_path(h, "root/direct", path);
	harness_write_file(path, 100000, 21);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	sock = wire_connect(h);
	wire_hello(sock);
	wire_string(&m, 2, "direct");
	wire_varint(&m, 3, 2);	/* policy: pread, so reads use the descriptor */
	assert_int_equal(wire_send_msg(sock, WIRE_OPEN, 2, &m, fd), 0);
	assert_int_equal(wire_recv(sock, &hdr, reply, sizeof reply, 10000), 1);
	assert_int_equal(hdr.type, WIRE_OPEN_REPLY);
	wire_get_varint(reply, hdr.length, 1, &handle);
	assert_true(handle > 0);
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_DIRECT) < 0 ||
	    pread(fd, probe, 10, 1) >= 0 || errno != EINVAL) {
		close(sock);
		close(fd);
		skip_because("this file system ignores O_DIRECT or refuses it");
	}
	m.n = 0;
	wire_varint(&m, 1, handle);
	wire_varint(&m, 2, 1);
	wire_varint(&m, 3, 10);
	assert_int_equal(wire_send_msg(sock, WIRE_READ, 3, &m, -1), 0);
	assert_int_equal(wire_recv(sock, &hdr, reply, sizeof reply, 10000), 1);
	assert_int_equal(hdr.type, WIRE_READ_DATA);	/* not ERROR (EINVAL) */
	assert_int_equal(hdr.raw_length, 10);
	close(sock);
	close(fd);
}

/* --- access: paths and descriptors a client may try ----------------------- */

static const struct harness_opts opts_root = { .with_root = true };

static void
expect_path_refused(hm_client *c, const char *path, int want)
{
	errno = 0;
	if (hm_open(c, path, HM_O_PATH) != NULL)
		fail_msg("%s opened by path", path);
	if (errno != want)
		fail_msg("%s: errno %d (%s), want %d", path, errno, strerror(errno), want);
	assert_true(hm_last_error()[0] != '\0');
}

/*
 * Open by path: magic links and absolute symlinks inside a root are
 * refused; a path longer than PATH_MAX gets ENAMETOOLONG; a name that is
 * not UTF-8, and a deep path just under PATH_MAX, open and read right.
 */
static void
test_access_by_path(void **state)
{
	struct harness *h = *state;
	hm_client *c = harness_connect(h);
	char path[PATH_MAX], link[PATH_MAX], *longp;
	size_t n;
	hm_file *f;
	int fd, i;

	harness_path(h, "root/magic", link);
	assert_int_equal(symlink("/proc/self/fd/0", link), 0);
	expect_path_refused(c, link, EACCES);
	harness_path(h, "root/proc-root", link);
	assert_int_equal(symlink("/proc/self/root/etc/hostname", link), 0);
	expect_path_refused(c, link, EACCES);

	/* bytes, not text: a name that is not UTF-8 */
	harness_path(h, "root/\xff\xfe\x80name", path);
	harness_write_file(path, 10000, 41);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	f = hm_open(c, path, HM_O_PATH);
	assert_non_null(f);
	assert_int_equal(harness_check_read(f, fd, 0, 20000), 10000);
	hm_close(f);
	close(fd);

	/* deep, under PATH_MAX: 15 directories of 200 bytes */
	harness_path(h, "root", path);
	n = strlen(path);
	for (i = 0; i < 15; i++) {
		path[n++] = '/';
		memset(path + n, 'd', 200);
		n += 200;
		path[n] = '\0';
		assert_int_equal(mkdir(path, 0755), 0);
	}
	assert_true(n + 3 < PATH_MAX);
	memcpy(path + n, "/f", 3);
	harness_write_file(path, 5000, 42);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	f = hm_open(c, path, HM_O_PATH);
	assert_non_null(f);
	assert_int_equal(harness_check_read(f, fd, 100, 8000), 4900);
	hm_close(f);
	close(fd);

	/* longer than PATH_MAX: refused with a reason, the client goes on */
	longp = malloc(2 * PATH_MAX);
	assert_non_null(longp);
	harness_path(h, "root/", longp);
	n = strlen(longp);
	while (n < PATH_MAX + 100) {
		memcpy(longp + n, "x/", 2);
		n += 2;
	}
	memcpy(longp + n, "f", 2);
	expect_path_refused(c, longp, ENAMETOOLONG);
	free(longp);
	assert_int_equal(hm_ping(c, NULL), 0);
	hm_disconnect(c);
}

/* OPEN by descriptor on the raw wire: the ERROR's errno, 0 for OPEN_REPLY
 * (its handle in *handle). */
static int
wire_open_fd(int sock, uint32_t id, int fd, unsigned policy, uint64_t *handle)
{
	struct wire_msg m = { .n = 0 };
	struct wire_header hdr;
	uint8_t reply[2048];
	uint64_t v = 0;

	wire_string(&m, 2, "probe");
	wire_varint(&m, 3, policy);
	assert_int_equal(wire_send_msg(sock, WIRE_OPEN, id, &m, fd), 0);
	assert_int_equal(wire_recv(sock, &hdr, reply, sizeof reply, 10000), 1);
	assert_int_equal(hdr.id, id);
	if (hdr.type == WIRE_OPEN_REPLY) {
		wire_get_varint(reply, hdr.length, 1, handle);
		return 0;
	}
	assert_int_equal(hdr.type, WIRE_ERROR);
	wire_get_varint(reply, hdr.length, 1, &v);
	return (int)v;
}

/*
 * Open by descriptor: a descriptor not open for reading, an O_PATH one and
 * a directory are refused with their errno; a socket is refused as it
 * arrives (ENODEV), whatever the policy: it is no file, and its close may
 * linger (test_lingering_socket_passed); the connection goes on after
 * each.
 */
static void
test_access_by_descriptor(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX];
	uint64_t handle = 0;
	int sock, fd, sp[2];

	harness_path(h, "root/file", path);
	harness_write_file(path, 1000, 43);
	sock = wire_connect(h);
	wire_hello(sock);

	fd = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(wire_open_fd(sock, 2, fd, 0, &handle), EBADF);
	close(fd);
	fd = open(path, O_PATH | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(wire_open_fd(sock, 3, fd, 0, &handle), EBADF);
	close(fd);
	fd = open(h->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(wire_open_fd(sock, 4, fd, 0, &handle), EISDIR);
	close(fd);

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	assert_int_equal(wire_open_fd(sock, 5, sp[0], 1 /* mmap required */, &handle), ENODEV);
	assert_int_equal(wire_open_fd(sock, 6, sp[0], 0, &handle), ENODEV);
	assert_int_equal(wire_open_fd(sock, 7, sp[0], 2 /* pread */, &handle), ENODEV);
	close(sp[0]);
	close(sp[1]);

	/* still in step: a good descriptor opens */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(wire_open_fd(sock, 8, fd, 0, &handle), 0);
	close(fd);
	close(sock);
}

/*
 * Bind mounts and other file systems beneath a root.  The tests make their
 * mounts in a mount namespace of their own (set up before the daemon
 * starts, so it shares it), and take them down before the harness removes
 * its directory.
 */
static bool mounts_ok;

static int
setup_mounts(void **state)
{
	mounts_ok = geteuid() == 0 && unshare(CLONE_NEWNS) == 0 &&
		    mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0;
	return setup(state);
}

static void
unmount_all(struct harness *h)
{
	char path[PATH_MAX];

	harness_path(h, "root/bound", path);
	umount2(path, MNT_DETACH);
	harness_path(h, "root/tmpfs", path);
	umount2(path, MNT_DETACH);
}

static int
teardown_mounts(void **state)
{
	if (mounts_ok)
		unmount_all(*state);
	return teardown(state);
}

/*
 * root/bound: a bind mount of the harness's outside directory, which holds
 * secret (seed 31); root/tmpfs: a tmpfs holding file (seed 32); root/plain
 * and root/link, a symbolic link to bound/secret within the root.
 */
static void
make_mounts(struct harness *h)
{
	char path[PATH_MAX], target[PATH_MAX];

	if (!mounts_ok)
		skip_because("needs root and a mount namespace of its own");
	harness_path(h, "outside/secret", path);
	harness_write_file(path, 70000, 31);
	harness_path(h, "root/plain", path);
	harness_write_file(path, 70000, 33);
	harness_path(h, "root/bound", target);
	assert_int_equal(mkdir(target, 0755), 0);
	assert_int_equal(mount(h->outside, target, NULL, MS_BIND, NULL), 0);
	harness_path(h, "root/tmpfs", target);
	assert_int_equal(mkdir(target, 0755), 0);
	assert_int_equal(mount("hotmap-test", target, "tmpfs", 0, "size=1m"), 0);
	harness_path(h, "root/tmpfs/file", path);
	harness_write_file(path, 70000, 32);
	harness_path(h, "root/link", path);
	assert_int_equal(symlink("bound/secret", path), 0);
}

/* Reads name (beneath root/) by path and checks it against the file. */
static void
expect_path_reads(struct harness *h, hm_client *c, const char *name)
{
	char path[PATH_MAX];
	hm_file *f;
	int fd;

	harness_path(h, name, path);
	f = hm_open(c, path, HM_O_PATH);
	if (f == NULL)
		fail_msg("%s: %s", path, hm_last_error());
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(harness_check_read(f, fd, 1000, 60000), 60000);
	hm_close(f);
	close(fd);
}

static const struct harness_opts opts_no_cross = {
	.with_root = true,
	.extra = { "--cross-mounts", "no", NULL },
};

/* cross-mounts = no: no path leads onto another mount, whether it names
 * the mount point's files, goes through a symbolic link, or through a
 * tmpfs; the root's own files still read right. */
static void
test_cross_mounts_refused(void **state)
{
	static const char *const refused[] = {
		"root/bound/secret", "root/link", "root/tmpfs/file", "root/bound",
	};
	struct harness *h = *state;
	char path[PATH_MAX];
	hm_client *c;
	size_t i;

	make_mounts(h);
	c = harness_connect(h);
	for (i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		harness_path(h, refused[i], path);
		expect_path_refused(c, path, EACCES);
		assert_non_null(strstr(hm_last_error(), "cross-mounts"));
	}
	expect_path_reads(h, c, "root/plain");
	hm_disconnect(c);
}

/* The default follows mounts beneath a root, as hotmapd.conf(5) says. */
static void
test_cross_mounts_followed(void **state)
{
	struct harness *h = *state;
	hm_client *c;

	make_mounts(h);
	c = harness_connect(h);
	expect_path_reads(h, c, "root/bound/secret");
	expect_path_reads(h, c, "root/link");
	expect_path_reads(h, c, "root/tmpfs/file");
	expect_path_reads(h, c, "root/plain");
	hm_disconnect(c);
}

static const struct harness_opts opts_none = { .backend = NULL };

#define T(fn, o) cmocka_unit_test_prestate_setup_teardown(fn, setup, teardown, (void *)&(o))

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_budget_lru_and_fallback, opts_budget),
		T(test_idle_unmap, opts_idle),
		T(test_max_open_files, opts_two_files),
		T(test_warm_on_first_cache, opts_warm_populate),
		T(test_warm_on_first_cache, opts_warm_willneed),
		T(test_warm_none, opts_none),
		T(test_max_inflight, opts_inflight_1),
		T(test_max_inflight_ring, opts_inflight_1),
		T(test_inflight_default, opts_none),
		T(test_non_admin_refused, opts_none),
		T(test_admin_uid_admits, opts_admin_nobody),
		T(test_allow_uid_refuses, opts_allow_root),
		T(test_deleted_files_freed, opts_root),
		T(test_passed_fd_flags_private, opts_none),
		T(test_pseudo_files_read_as_opener, opts_none),
		T(test_access_by_path, opts_root),
		T(test_access_by_descriptor, opts_none),
		T(test_huge_folios, opts_none),
		T(test_huge_folios_off, opts_no_huge),
		T(test_huge_folios_warm_cold, opts_none),
		T(test_huge_folios_retry, opts_none),
		/* last: they leave the process in a mount namespace of its own */
		cmocka_unit_test_prestate_setup_teardown(test_cross_mounts_refused, setup_mounts,
							 teardown_mounts, (void *)&opts_no_cross),
		cmocka_unit_test_prestate_setup_teardown(test_cross_mounts_followed, setup_mounts,
							 teardown_mounts, (void *)&opts_root),
	};

	return cmocka_run_group_tests_name("ops", tests, NULL, NULL);
}
