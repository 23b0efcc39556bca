/* SPDX-License-Identifier: MIT */
/*
 * test_storage.c - unit tests of the storage core (storage.h, guard.h):
 * backend choice and its fallbacks, descriptor checks, the entry cache,
 * and reads compared byte for byte with pread(2) while the file is
 * truncated, extended, rewritten or replaced.
 *
 * The memory budget (struct storage_limits): which idle entries go, in what
 * order, and that a mapping with a reader never does.
 *
 * Linked with -Wl,--wrap=mmap -Wl,--wrap=fstatfs: the wrappers below pass
 * through to the real calls unless a test arms a failure, a substitute
 * descriptor (to make a mapping fault on demand) or a fake f_type.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../daemon/storage/guard.h"
#include "../daemon/storage/storage.h"

/* --- linker wrappers -------------------------------------------------- */

void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __real_fstatfs(int fd, struct statfs *buf);
int __wrap_fstatfs(int fd, struct statfs *buf);
void *__real_malloc(size_t n);
void *__wrap_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);

/* A read as the daemon's workers make it: the read itself off the loop
 * (storage_read_detached), then its counts folded in on the loop
 * (storage_read_finish). */
static ssize_t worker_read(struct file_cache *cache, struct storage_handle *h,
			   void *dst, size_t len, uint64_t offset)
{
	struct storage_io io = { .nowait = false };
	ssize_t r;

	if (cache == NULL)
		return -EBADF;
	r = storage_read_detached(h, dst, len, offset, &io);
	storage_read_finish(cache, h, &io);
	return r;
}

/*
 * A failing allocator for the storage core (and this file; cmocka's own
 * allocations go through the shared C library, unwrapped): with
 * alloc_fail_after at n >= 0, the first n allocations succeed and every
 * later one fails, like a process out of memory; -1 never fails.
 */

static long alloc_fail_after = -1;
static unsigned alloc_failures;

static bool alloc_fails(void)
{
	if (alloc_fail_after < 0)
		return false;
	if (alloc_fail_after == 0) {
		alloc_failures++;
		return true;
	}
	alloc_fail_after--;
	return false;
}

void *__wrap_malloc(size_t n)
{
	if (alloc_fails()) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	if (alloc_fails()) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_calloc(n, size);
}

static struct {
	unsigned mmap_calls;
	int mmap_errno;		/* fail every mmap with this errno */
	int mmap_substitute_fd;	/* map this file instead (once) */
	unsigned fstatfs_calls;
	int fstatfs_errno;
	uint32_t fake_f_type;	/* 0: the real one */
} wrap;

static void wrap_reset(void)
{
	memset(&wrap, 0, sizeof(wrap));
	wrap.mmap_substitute_fd = -1;
}

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	wrap.mmap_calls++;
	if (wrap.mmap_errno != 0) {
		errno = wrap.mmap_errno;
		return MAP_FAILED;
	}
	if (wrap.mmap_substitute_fd >= 0) {
		fd = wrap.mmap_substitute_fd;
		wrap.mmap_substitute_fd = -1;
	}
	return __real_mmap(addr, len, prot, flags, fd, off);
}

int __wrap_fstatfs(int fd, struct statfs *buf)
{
	int r;

	wrap.fstatfs_calls++;
	if (wrap.fstatfs_errno != 0) {
		errno = wrap.fstatfs_errno;
		return -1;
	}
	r = __real_fstatfs(fd, buf);
	if (r == 0 && wrap.fake_f_type != 0)
		buf->f_type = wrap.fake_f_type;
	return r;
}

/* --- fixtures and helpers ------------------------------------------------ */

static char tmpdir[PATH_MAX];
static size_t ps;	/* page size */

struct fixture {
	struct file_cache *cache;
};

static int group_setup(void **state)
{
	const char *base = getenv("TMPDIR");

	(void)state;
	if (base == NULL || base[0] == '\0')
		base = "/tmp";
	if (snprintf(tmpdir, sizeof(tmpdir), "%s/test_storage.XXXXXX", base) >= (int)sizeof(tmpdir))
		return -1;
	if (mkdtemp(tmpdir) == NULL)
		return -1;
	ps = (size_t)sysconf(_SC_PAGESIZE);
	return 0;
}

static void clean_tmpdir(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *de;

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		(void)unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

static int group_teardown(void **state)
{
	(void)state;

	clean_tmpdir();
	return rmdir(tmpdir);
}

/*
 * file_cache_new() installs the SIGBUS guard, but cmocka puts its own
 * handler around each test body (and restores the previous one after):
 * a test that makes a copy fault calls guard_install() itself first.
 */
static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return -1;
	wrap_reset();
	f->cache = file_cache_new();
	if (f->cache == NULL) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	wrap_reset();
	file_cache_free(f->cache);
	free(f);
	clean_tmpdir();
	return 0;
}

static const char *tpath(const char *name)
{
	static char buf[4][PATH_MAX];
	static unsigned next;
	char *p = buf[next++ % 4];
	int n = snprintf(p, PATH_MAX, "%s/%s", tmpdir, name);

	assert_true(n > 0 && n < PATH_MAX);
	return p;
}

static void fill_pattern(unsigned char *b, size_t len, unsigned seed)
{
	/* Differs from byte to byte and from page to page. */
	for (size_t i = 0; i < len; i++)
		b[i] = (unsigned char)(i * 131u + (i >> 12) * 7u + seed * 29u + 1u);
}

/* Creates name with len pattern bytes; returns its path. */
static const char *make_file(const char *name, size_t len, unsigned seed)
{
	const char *p = tpath(name);
	unsigned char *b = malloc(len + 1);
	int fd;

	assert_non_null(b);
	fill_pattern(b, len, seed);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
	free(b);
	return p;
}

static int open_or_die(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC);

	assert_true(fd >= 0);
	return fd;
}

static bool fd_is_closed(int fd)
{
	return fcntl(fd, F_GETFD) < 0 && errno == EBADF;
}

/* The reference: pread looped until len or EOF, -errno on failure. */
static ssize_t ref_pread(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	if (len == 0) {
		ssize_t n = pread(fd, buf, 0, (off_t)off);

		return n < 0 ? -errno : 0;
	}
	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (done > 0)
				break;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/*
 * A read must give pread's answer byte for byte, and write nothing
 * into dst past its answer.  Returns the answer.
 */
static ssize_t check_read(struct file_cache *c, struct storage_handle *h,
			  int ref_fd, uint64_t off, size_t len)
{
	unsigned char *got = malloc(len + 64), *want = malloc(len + 64);
	ssize_t g, w;

	assert_non_null(got);
	assert_non_null(want);
	memset(got, 0xA5, len + 64);
	memset(want, 0x5A, len + 64);
	g = worker_read(c, h, got, len, off);
	w = ref_pread(ref_fd, want, len, off);
	assert_int_equal(g, w);
	if (g > 0)
		assert_memory_equal(got, want, (size_t)g);
	for (size_t i = g > 0 ? (size_t)g : 0; i < len + 64; i++)
		assert_int_equal(got[i], 0xA5);
	free(got);
	free(want);
	return g;
}

/* Reads at offsets and lengths around page and file boundaries. */
static void check_reads_around(struct file_cache *c, struct storage_handle *h,
			       int ref_fd, uint64_t size)
{
	const uint64_t offs[] = { 0, 1, ps - 1, ps, ps + 1, 2 * ps + 3,
				  size > 0 ? size - 1 : 0, size, size + 1, 2 * size + ps };
	const size_t lens[] = { 0, 1, 7, ps - 1, ps, ps + 1, 2 * ps + 5, (size_t)size, (size_t)size + ps };

	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
		for (size_t j = 0; j < sizeof(lens) / sizeof(lens[0]); j++)
			check_read(c, h, ref_fd, offs[i], lens[j]);
}

static struct storage_counters counters(struct file_cache *c)
{
	struct storage_counters ctr;

	file_cache_counters(c, &ctr);
	return ctr;
}

static struct storage_stat stat_of(struct storage_handle *h)
{
	struct storage_stat st;

	assert_int_equal(storage_stat(h, &st), 0);
	return st;
}

static int open_handle(struct file_cache *c, const char *path, enum storage_policy policy,
		       struct storage_handle *h)
{
	char err[256];
	int r = file_cache_open(c, open_or_die(path, O_RDONLY), policy, h, err, sizeof(err));

	if (r == 0)
		assert_string_equal(err, "");
	return r;
}

static void expect_backend(const struct storage_handle *h, enum storage_backend b,
			   enum storage_reason reason)
{
	assert_int_equal(h->backend, b);
	assert_int_equal(h->reason, reason);
}

/* Runs fn in a child; returns its wait status.  No core files. */
static int run_in_child(void (*fn)(void *), void *arg)
{
	struct rlimit no_core = { 0, 0 };
	int status;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* cmocka's handlers would carry on with the test run here. */
		(void)signal(SIGSEGV, SIG_DFL);
		(void)signal(SIGILL, SIG_DFL);
		(void)signal(SIGFPE, SIG_DFL);
		(void)signal(SIGBUS, SIG_DFL);
		(void)setrlimit(RLIMIT_CORE, &no_core);
		fn(arg);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

/* A read-only mapping of pages pages of a file truncated to keep pages;
 * the pages past keep fault. */
static unsigned char *map_truncated(const char *name, size_t pages, size_t keep, int *fdp)
{
	const char *p = make_file(name, pages * ps, 3);
	int fd = open_or_die(p, O_RDWR);
	unsigned char *m = mmap(NULL, pages * ps, PROT_READ, MAP_SHARED, fd, 0);

	assert_true(m != MAP_FAILED);
	assert_int_equal(ftruncate(fd, (off_t)(keep * ps)), 0);
	*fdp = fd;
	return m;
}

/* --- names ----------------------------------------------------------------- */

static void test_names(void **state)
{
	(void)state;

	assert_string_equal(storage_reason_name(STORAGE_REASON_LOCAL_FILE), "local-file");
	assert_string_equal(storage_reason_name(STORAGE_REASON_FORCED), "forced");
	assert_string_equal(storage_reason_name(STORAGE_REASON_NOT_REGULAR), "not-regular");
	assert_string_equal(storage_reason_name(STORAGE_REASON_EMPTY), "empty");
	assert_string_equal(storage_reason_name(STORAGE_REASON_NETWORK_FS), "network-fs");
	assert_string_equal(storage_reason_name(STORAGE_REASON_PSEUDO_FS), "pseudo-fs");
	assert_string_equal(storage_reason_name(STORAGE_REASON_MMAP_FAILED), "mmap-failed");
	assert_string_equal(storage_reason_name(STORAGE_REASON_TOO_LARGE), "too-large");
	assert_string_equal(storage_reason_name(STORAGE_REASON_OVER_BUDGET), "over-budget");
	/* Values travel on the wire. */
	assert_int_equal(STORAGE_REASON_OVER_BUDGET, 8);
	assert_int_equal(STORAGE_REASON__COUNT, 9);
	assert_string_equal(storage_reason_name(STORAGE_REASON__COUNT), "unknown");
	assert_string_equal(storage_reason_name((enum storage_reason)-1), "unknown");
	assert_string_equal(storage_backend_name(STORAGE_BACKEND_MMAP), "mmap");
	assert_string_equal(storage_backend_name(STORAGE_BACKEND_PREAD), "pread");
	assert_string_equal(storage_backend_name((enum storage_backend)0), "unknown");
	assert_string_equal(storage_backend_name((enum storage_backend)3), "unknown");
}

/* --- backend selection ----------------------------------------------------- */

static void test_auto_local_file_is_mmap(void **state)
{
	struct fixture *f = *state;
	size_t size = 3 * ps + 123;
	const char *p = make_file("local", size, 1);
	int ref = open_or_die(p, O_RDONLY);
	struct storage_handle h;
	struct storage_counters c0, c1;

	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h), 0);
	expect_backend(&h, STORAGE_BACKEND_MMAP, STORAGE_REASON_LOCAL_FILE);
	assert_int_equal(h.map_errno, 0);
	assert_int_equal(stat_of(&h).mapped_length, size);

	c0 = counters(f->cache);
	check_reads_around(f->cache, &h, ref, size);
	c1 = counters(f->cache);
	/* Every byte came out of the mapping. */
	assert_true(c1.bytes_mmap > c0.bytes_mmap);
	assert_int_equal(c1.bytes_pread, c0.bytes_pread);
	assert_int_equal(c1.sigbus_recoveries, 0);
	assert_int_equal(c1.opens_by_reason[STORAGE_REASON_LOCAL_FILE], 1);

	file_cache_close(f->cache, &h);
	assert_null(h.entry);
	close(ref);
}

static void test_pipe_is_pread_not_regular(void **state)
{
	struct fixture *f = *state;
	struct storage_handle h, h2;
	char err[256], buf[16];
	int p[2], ref, dupfd;
	ssize_t n;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(write(p[1], "abc", 3), 3);
	ref = fcntl(p[0], F_DUPFD_CLOEXEC, 0);
	dupfd = fcntl(p[0], F_DUPFD_CLOEXEC, 0);
	assert_true(ref >= 0 && dupfd >= 0);

	assert_int_equal(file_cache_open(f->cache, p[0], STORAGE_POLICY_AUTO, &h, err, sizeof(err)), 0);
	expect_backend(&h, STORAGE_BACKEND_PREAD, STORAGE_REASON_NOT_REGULAR);
	/* pread(2) on a pipe is -ESPIPE, even for 0 bytes: so is ours. */
	check_read(f->cache, &h, ref, 0, 3);
	check_read(f->cache, &h, ref, 0, 0);
	assert_int_equal(worker_read(f->cache, &h, buf, sizeof(buf), 0), -ESPIPE);

	/* A stream is never shared: a second open gets its own entry. */
	assert_int_equal(file_cache_open(f->cache, dupfd, STORAGE_POLICY_AUTO, &h2, err, sizeof(err)), 0);
	assert_ptr_not_equal(h.entry, h2.entry);
	assert_int_equal(stat_of(&h).handles, 1);
	assert_int_equal(counters(f->cache).cache_hits, 0);
	assert_int_equal(counters(f->cache).entries, 2);
	file_cache_close(f->cache, &h2);
	file_cache_close(f->cache, &h);
	assert_int_equal(counters(f->cache).entries, 0);
	assert_true(fd_is_closed(p[0]));

	/* MMAP required on a pipe says why it cannot be. */
	dupfd = fcntl(ref, F_DUPFD_CLOEXEC, 0);
	assert_int_equal(file_cache_open(f->cache, dupfd, STORAGE_POLICY_MMAP, &h, err, sizeof(err)), -ENODEV);
	assert_non_null(strstr(err, "not a regular file"));
	assert_null(h.entry);
	assert_true(fd_is_closed(dupfd));
	assert_int_equal(counters(f->cache).entries, 0);

	/* The data is still in the pipe: nothing consumed it. */
	n = read(ref, buf, sizeof(buf));
	assert_int_equal(n, 3);
	close(ref);
	close(p[1]);
}

static void test_char_device_is_pread(void **state)
{
	struct fixture *f = *state;
	struct storage_handle h;
	int ref;

	ref = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (ref < 0)
		skip();
	assert_int_equal(open_handle(f->cache, "/dev/zero", STORAGE_POLICY_AUTO, &h), 0);
	expect_backend(&h, STORAGE_BACKEND_PREAD, STORAGE_REASON_NOT_REGULAR);
	assert_int_equal(check_read(f->cache, &h, ref, 12345, 3 * ps + 1), 3 * ps + 1);
	file_cache_close(f->cache, &h);
	close(ref);
}

static void test_empty_file(void **state)
{
	struct fixture *f = *state;
	const char *p = make_file("empty", 0, 0);
	int ref = open_or_die(p, O_RDONLY), w;
	struct storage_handle h, hm;
	char err[256];

	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h), 0);
	expect_backend(&h, STORAGE_BACKEND_PREAD, STORAGE_REASON_EMPTY);
	assert_int_equal(check_read(f->cache, &h, ref, 0, 100), 0);
	assert_int_equal(stat_of(&h).mapped_length, 0);

	assert_int_equal(file_cache_open(f->cache, open_or_die(p, O_RDONLY), STORAGE_POLICY_MMAP,
					 &hm, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "empty"));
	assert_null(hm.entry);
	assert_int_equal(counters(f->cache).mappings, 0);

	/* The empty-file handle reads what is written later, like pread. */
	w = open_or_die(p, O_WRONLY);
	assert_int_equal(write(w, "hello", 5), 5);
	close(w);
	assert_int_equal(check_read(f->cache, &h, ref, 0, 100), 5);
	file_cache_close(f->cache, &h);
	close(ref);
}

/*
 * What a file's grants read of each 2 MiB block (the OPEN reply's
 * block_reads, the copy policy's prior): a grant's reads over the file's
 * blocks, averaged half and half with the grants before; a grant that
 * read nothing left out; what a client claims capped, and kept for the
 * file, not the handle.
 */
static void test_block_reads(void **state)
{
	struct fixture *f = *state;
	const char *p = make_file("blocks", 5u * 1024 * 1024, 3);	/* 3 blocks */
	uint64_t size = 5u * 1024 * 1024;
	struct storage_handle h, h2;

	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h), 0);
	assert_int_equal(storage_block_reads(&h), 0);	/* none known */
	storage_note_block_reads(&h, 0, size);		/* read nothing */
	assert_int_equal(storage_block_reads(&h), 0);
	assert_int_equal(storage_block_reads_low(&h), 0);
	storage_note_block_reads(&h, 300, size);	/* 100 a block */
	assert_int_equal(storage_block_reads(&h), 100);
	assert_int_equal(storage_block_reads_low(&h), 100);
	storage_note_block_reads(&h, 0, size);
	assert_int_equal(storage_block_reads(&h), 100);
	storage_note_block_reads(&h, 60, size);		/* half way to 20 */
	assert_int_equal(storage_block_reads(&h), 60);
	/* the low mark falls at once, and climbs back half way */
	assert_int_equal(storage_block_reads_low(&h), 20);
	storage_note_block_reads(&h, 180, size);	/* 60 a block */
	assert_int_equal(storage_block_reads_low(&h), 40);
	assert_int_equal(storage_block_reads(&h), 60);
	storage_note_block_reads(&h, 2, size);		/* 2 of 3 blocks: below 1 */
	assert_int_equal(storage_block_reads(&h), 31);
	assert_int_equal(storage_block_reads_low(&h), 1);
	/* a client that claims 2^64 - 1 reads moves them half way to the
	 * cap */
	storage_note_block_reads(&h, UINT64_MAX, size);
	assert_int_equal(storage_block_reads(&h), (31 + STORAGE_BLOCK_READS_MAX + 1) / 2);
	assert_int_equal(storage_block_reads_low(&h), (1 + STORAGE_BLOCK_READS_MAX + 1) / 2);
	storage_note_block_reads(&h, UINT64_MAX, size);
	assert_true(storage_block_reads(&h) <= STORAGE_BLOCK_READS_MAX);
	assert_true(storage_block_reads_low(&h) <= STORAGE_BLOCK_READS_MAX);
	/* the file's, seen by every handle of it */
	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h2), 0);
	assert_int_equal(storage_block_reads(&h2), storage_block_reads(&h));
	assert_int_equal(storage_block_reads_low(&h2), storage_block_reads_low(&h));
	file_cache_close(f->cache, &h2);
	file_cache_close(f->cache, &h);
}

static void test_mmap_failure_falls_back(void **state)
{
	struct fixture *f = *state;
	size_t size = 2 * ps + 7;
	const char *p = make_file("mmapfail", size, 2);
	int ref = open_or_die(p, O_RDONLY);
	struct storage_handle h, h2, h3;
	char err[256];

	wrap.mmap_errno = ENOMEM;
	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h), 0);
	expect_backend(&h, STORAGE_BACKEND_PREAD, STORAGE_REASON_MMAP_FAILED);
	assert_int_equal(h.map_errno, ENOMEM);
	assert_int_equal(wrap.mmap_calls, 1);
	assert_int_equal(counters(f->cache).mappings, 0);
	assert_int_equal(counters(f->cache).opens_by_reason[STORAGE_REASON_MMAP_FAILED], 1);
	check_reads_around(f->cache, &h, ref, size);
	assert_int_equal(counters(f->cache).bytes_mmap, 0);

	/* The failure is remembered: the next open of the entry does not
	 * try again, even once mmap would work. */
	wrap.mmap_errno = 0;
	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h2), 0);
	expect_backend(&h2, STORAGE_BACKEND_PREAD, STORAGE_REASON_MMAP_FAILED);
	assert_int_equal(h2.map_errno, ENOMEM);
	assert_ptr_equal(h2.entry, h.entry);
	assert_int_equal(wrap.mmap_calls, 1);

	/* MMAP required gets mmap's own errno and a reason. */
	assert_int_equal(file_cache_open(f->cache, open_or_die(p, O_RDONLY), STORAGE_POLICY_MMAP,
					 &h3, err, sizeof(err)), -ENOMEM);
	assert_non_null(strstr(err, "mmap failed"));
	assert_null(h3.entry);
	assert_int_equal(wrap.mmap_calls, 1);
	assert_int_equal(stat_of(&h).handles, 2);

	file_cache_close(f->cache, &h);
	file_cache_close(f->cache, &h2);
	close(ref);
}

static void test_mmap_required_mmap_failure(void **state)
{
	struct fixture *f = *state;
	const char *p = make_file("mmapreq", ps, 4);
	struct storage_handle h;
	char err[256];
	int fd = open_or_die(p, O_RDONLY);

	wrap.mmap_errno = EPERM;
	assert_int_equal(file_cache_open(f->cache, fd, STORAGE_POLICY_MMAP, &h, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "mmap"));
	assert_null(h.entry);
	/* Consumed: it became the descriptor of the (cached) entry. */
	assert_int_equal(counters(f->cache).entries, 1);
	assert_int_equal(counters(f->cache).mappings, 0);

	wrap.mmap_errno = 0;
	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h), 0);
	expect_backend(&h, STORAGE_BACKEND_PREAD, STORAGE_REASON_MMAP_FAILED);
	assert_int_equal(h.map_errno, EPERM);
	assert_int_equal(wrap.mmap_calls, 1);
	file_cache_close(f->cache, &h);

	/* Without err, the same answer. */
	assert_int_equal(file_cache_open(f->cache, open_or_die(p, O_RDONLY), STORAGE_POLICY_MMAP,
					 &h, NULL, 0), -EPERM);
	fd = open_or_die(p, O_RDONLY);
	assert_int_equal(file_cache_open(f->cache, fd, STORAGE_POLICY_MMAP, &h, err, 1), -EPERM);
	assert_string_equal(err, "");
}

static const uint32_t network_magics[] = {
	0x6969, 0x517B, 0xFF534D42, 0xFE534D42, 0x01021997, 0x65735546, 0x0BD00BD0,
	0x00C36400, 0x5346414F, 0x6B414653, 0x01161970, 0x7461636f, 0x73757245, 0x564c,
};
static const uint32_t pseudo_magics[] = {
	0x9fa0, 0x62656572, 0x64626720, 0x74726163, 0x27e0eb, 0x63677270, 0x73636673,
	0x62656570, 0xcafe4a11, 0xde5e81e4, 0x6165676C,
};

static void test_network_fs_is_pread(void **state)
{
	struct fixture *f = *state;
	size_t size = 2 * ps + 11;
	struct storage_handle h, hm, ha;
	struct storage_counters c0;
	char name[64];
	int ref;

	for (size_t i = 0; i < sizeof(network_magics) / sizeof(network_magics[0]); i++) {
		const char *p;

		snprintf(name, sizeof(name), "net%zu", i);
		p = make_file(name, size, (unsigned)i);
		ref = open_or_die(p, O_RDONLY);
		wrap.fake_f_type = network_magics[i];

		assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h), 0);
		expect_backend(&h, STORAGE_BACKEND_PREAD, STORAGE_REASON_NETWORK_FS);
		assert_int_equal(stat_of(&h).mapped_length, 0);
		c0 = counters(f->cache);
		check_read(f->cache, &h, ref, 0, size);
		assert_int_equal(counters(f->cache).bytes_pread - c0.bytes_pread, size);
		assert_int_equal(counters(f->cache).bytes_mmap, c0.bytes_mmap);

		/* MMAP required on a network file system: allowed. */
		assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_MMAP, &hm), 0);
		expect_backend(&hm, STORAGE_BACKEND_MMAP, STORAGE_REASON_FORCED);
		/* FUSE's server sees who opens: its files are never shared */
		if (network_magics[i] == 0x65735546)
			assert_ptr_not_equal(hm.entry, h.entry);
		else
			assert_ptr_equal(hm.entry, h.entry);
		c0 = counters(f->cache);
		check_read(f->cache, &hm, ref, 1, size);
		assert_int_equal(counters(f->cache).bytes_mmap - c0.bytes_mmap, size - 1);

		/* AUTO stays pread although the entry is mapped now. */
		assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &ha), 0);
		expect_backend(&ha, STORAGE_BACKEND_PREAD, STORAGE_REASON_NETWORK_FS);

		file_cache_close(f->cache, &h);
		file_cache_close(f->cache, &hm);
		file_cache_close(f->cache, &ha);
		close(ref);
	}
	assert_int_equal(counters(f->cache).opens_by_reason[STORAGE_REASON_NETWORK_FS],
			 2 * (sizeof(network_magics) / sizeof(network_magics[0])));
}

static void test_pseudo_fs_is_pread(void **state)
{
	struct fixture *f = *state;
	/* sysfs attributes claim 4096 bytes: a page-sized file. */
	size_t size = ps;
	struct storage_handle h, h2, h3;
	char name[64], err[256];
	int ref;

	for (size_t i = 0; i < sizeof(pseudo_magics) / sizeof(pseudo_magics[0]); i++) {
		const char *p;

		snprintf(name, sizeof(name), "pseudo%zu", i);
		p = make_file(name, size, (unsigned)i);
		ref = open_or_die(p, O_RDONLY);
		wrap.fake_f_type = pseudo_magics[i];

		assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h), 0);
		expect_backend(&h, STORAGE_BACKEND_PREAD, STORAGE_REASON_PSEUDO_FS);
		check_read(f->cache, &h, ref, 0, size + 10);

		/* Never shared between openers: the content may depend on
		 * the opener's credentials. */
		assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_PREAD, &h2), 0);
		expect_backend(&h2, STORAGE_BACKEND_PREAD, STORAGE_REASON_FORCED);
		assert_ptr_not_equal(h2.entry, h.entry);
		assert_int_equal(stat_of(&h).handles, 1);
		assert_int_equal(stat_of(&h2).handles, 1);

		assert_int_equal(file_cache_open(f->cache, open_or_die(p, O_RDONLY), STORAGE_POLICY_MMAP,
						 &h3, err, sizeof(err)), -ENODEV);
		assert_non_null(strstr(err, "pseudo file system"));
		assert_null(h3.entry);
		assert_int_equal(counters(f->cache).entries, 2);
		file_cache_close(f->cache, &h);
		file_cache_close(f->cache, &h2);
		/* Private entries go with their only handle. */
		assert_int_equal(counters(f->cache).entries, 0);
		close(ref);
	}
	assert_int_equal(counters(f->cache).cache_hits, 0);
	assert_int_equal(counters(f->cache).mappings, 0);
	assert_int_equal(wrap.mmap_calls, 0);
}

static void test_fstatfs_failure_fails_open(void **state)
{
	struct fixture *f = *state;
	const char *p = make_file("statfsfail", ps, 1);
	struct storage_handle h;
	char err[256];
	int fd = open_or_die(p, O_RDONLY);

	wrap.fstatfs_errno = EIO;
	assert_int_equal(file_cache_open(f->cache, fd, STORAGE_POLICY_AUTO, &h, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "fstatfs"));
	assert_true(fd_is_closed(fd));
	assert_int_equal(counters(f->cache).entries, 0);
}

static void test_policy_pread_forced(void **state)
{
	struct fixture *f = *state;
	size_t size = 2 * ps + 1;
	const char *p = make_file("forcedpread", size, 9);
	int ref = open_or_die(p, O_RDONLY);
	struct storage_handle h;
	char err[256];

	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_PREAD, &h), 0);
	expect_backend(&h, STORAGE_BACKEND_PREAD, STORAGE_REASON_FORCED);
	assert_int_equal(wrap.mmap_calls, 0);
	check_reads_around(f->cache, &h, ref, size);
	assert_int_equal(counters(f->cache).bytes_mmap, 0);
	{
		/* warming reads the file through, but serves no byte */
		struct storage_io io = { 0 };
		uint64_t before = counters(f->cache).bytes_pread;

		assert_int_equal(storage_warm_detached(&h, 0, size, &io), (ssize_t)size);
		storage_read_finish(f->cache, &h, &io);
		assert_int_equal(counters(f->cache).bytes_pread, before);
	}
	file_cache_close(f->cache, &h);

	assert_int_equal(file_cache_open(f->cache, open_or_die(p, O_RDONLY), (enum storage_policy)7,
					 &h, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "policy"));
	close(ref);
}

/* --- descriptor checks ----------------------------------------------------- */

static void test_refuses_unreadable_descriptors(void **state)
{
	struct fixture *f = *state;
	const char *p = make_file("secret", ps, 5);
	struct storage_handle h, cached;
	struct storage_counters c0;
	char err[256];
	int fd;

	/* Cache the file first: a refused descriptor must not reuse it. */
	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &cached), 0);
	c0 = counters(f->cache);

	fd = open_or_die(p, O_PATH);
	assert_int_equal(file_cache_open(f->cache, fd, STORAGE_POLICY_AUTO, &h, err, sizeof(err)), -EBADF);
	assert_non_null(strstr(err, "O_PATH"));
	assert_null(h.entry);
	assert_true(fd_is_closed(fd));

	fd = open_or_die(p, O_WRONLY);
	assert_int_equal(file_cache_open(f->cache, fd, STORAGE_POLICY_PREAD, &h, err, sizeof(err)), -EBADF);
	assert_non_null(strstr(err, "not open for reading"));
	assert_true(fd_is_closed(fd));

	fd = open_or_die(tmpdir, O_RDONLY | O_DIRECTORY);
	assert_int_equal(file_cache_open(f->cache, fd, STORAGE_POLICY_AUTO, &h, err, sizeof(err)), -EISDIR);
	assert_true(fd_is_closed(fd));

	assert_int_equal(file_cache_open(f->cache, -1, STORAGE_POLICY_AUTO, &h, err, sizeof(err)), -EBADF);

	/* O_RDWR is readable. */
	fd = open_or_die(p, O_RDWR);
	assert_int_equal(file_cache_open(f->cache, fd, STORAGE_POLICY_AUTO, &h, err, sizeof(err)), 0);
	assert_ptr_equal(h.entry, cached.entry);
	file_cache_close(f->cache, &h);

	assert_int_equal(counters(f->cache).cache_hits, c0.cache_hits + 1);
	assert_int_equal(counters(f->cache).entries, c0.entries);
	assert_int_equal(stat_of(&cached).handles, 1);
	file_cache_close(f->cache, &cached);
}

/* --- cache behaviour ----------------------------------------------------- */

static void test_entry_reuse(void **state)
{
	struct fixture *f = *state;
	size_t size = 4 * ps + 100;
	const char *p = make_file("reuse", size, 6);
	int ref = open_or_die(p, O_RDONLY), fd2, fd3;
	struct storage_handle h1, h2, h3;
	struct storage_counters c;
	char err[256];

	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h1), 0);
	c = counters(f->cache);
	assert_int_equal(c.cache_misses, 1);
	assert_int_equal(c.cache_hits, 0);
	assert_int_equal(c.entries, 1);
	assert_int_equal(c.mappings, 1);
	assert_int_equal(c.mapped_bytes, size);
	assert_int_equal(wrap.mmap_calls, 1);
	assert_true(h1.fresh);	/* this open made the entry */

	fd2 = open_or_die(p, O_RDONLY);
	assert_int_equal(file_cache_open(f->cache, fd2, STORAGE_POLICY_AUTO, &h2, err, sizeof(err)), 0);
	expect_backend(&h2, STORAGE_BACKEND_MMAP, STORAGE_REASON_LOCAL_FILE);
	/* The entry already had a descriptor: the passed one is closed. */
	assert_true(fd_is_closed(fd2));
	assert_ptr_equal(h2.entry, h1.entry);
	assert_false(h2.fresh);
	assert_int_equal(wrap.mmap_calls, 1);	/* same mapping */
	assert_int_equal(stat_of(&h1).handles, 2);
	c = counters(f->cache);
	assert_int_equal(c.cache_hits, 1);
	assert_int_equal(c.entries, 1);
	assert_int_equal(c.mappings, 1);
	assert_int_equal(c.mapped_bytes, size);
	check_read(f->cache, &h1, ref, 10, size);
	check_read(f->cache, &h2, ref, ps - 3, 2 * ps);

	/* Kept, mapped, after the last handle closes. */
	file_cache_close(f->cache, &h1);
	file_cache_close(f->cache, &h2);
	file_cache_close(f->cache, &h2);	/* twice: harmless */
	c = counters(f->cache);
	assert_int_equal(c.entries, 1);
	assert_int_equal(c.mappings, 1);

	fd3 = open_or_die(p, O_RDONLY);
	assert_int_equal(file_cache_open(f->cache, fd3, STORAGE_POLICY_AUTO, &h3, err, sizeof(err)), 0);
	assert_true(fd_is_closed(fd3));
	assert_int_equal(wrap.mmap_calls, 1);
	assert_int_equal(stat_of(&h3).handles, 1);
	assert_int_equal(stat_of(&h3).mapped_length, size);
	assert_int_equal(counters(f->cache).cache_hits, 2);
	assert_int_equal(counters(f->cache).opens_by_reason[STORAGE_REASON_LOCAL_FILE], 3);
	check_reads_around(f->cache, &h3, ref, size);
	file_cache_close(f->cache, &h3);
	close(ref);
}

static void test_capture_pread_on_mapped_entry(void **state)
{
	struct fixture *f = *state;
	size_t size = 2 * ps + 50;
	const char *p = make_file("capture1", size, 7);
	int ref = open_or_die(p, O_RDONLY);
	struct storage_handle hm, hp;
	struct storage_counters c0, c1;

	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &hm), 0);
	expect_backend(&hm, STORAGE_BACKEND_MMAP, STORAGE_REASON_LOCAL_FILE);
	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_PREAD, &hp), 0);
	expect_backend(&hp, STORAGE_BACKEND_PREAD, STORAGE_REASON_FORCED);
	assert_ptr_equal(hp.entry, hm.entry);
	assert_int_equal(stat_of(&hp).mapped_length, size);

	c0 = counters(f->cache);
	assert_int_equal(check_read(f->cache, &hp, ref, 0, size), size);
	c1 = counters(f->cache);
	assert_int_equal(c1.bytes_pread - c0.bytes_pread, size);
	assert_int_equal(c1.bytes_mmap, c0.bytes_mmap);

	assert_int_equal(check_read(f->cache, &hm, ref, 0, size), size);
	c0 = counters(f->cache);
	assert_int_equal(c0.bytes_mmap - c1.bytes_mmap, size);
	assert_int_equal(c0.bytes_pread, c1.bytes_pread);

	file_cache_close(f->cache, &hm);
	file_cache_close(f->cache, &hp);
	close(ref);
}

static void test_capture_mmap_after_pread(void **state)
{
	struct fixture *f = *state;
	size_t size = 3 * ps;
	const char *p = make_file("capture2", size, 8);
	int ref = open_or_die(p, O_RDONLY);
	struct storage_handle hp, hm, hf;
	struct storage_counters c0, c1;

	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_PREAD, &hp), 0);
	expect_backend(&hp, STORAGE_BACKEND_PREAD, STORAGE_REASON_FORCED);
	/* No mapping until a handle needs one. */
	assert_int_equal(stat_of(&hp).mapped_length, 0);
	assert_int_equal(counters(f->cache).mappings, 0);
	assert_int_equal(wrap.mmap_calls, 0);

	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &hm), 0);
	expect_backend(&hm, STORAGE_BACKEND_MMAP, STORAGE_REASON_LOCAL_FILE);
	assert_ptr_equal(hm.entry, hp.entry);
	assert_int_equal(stat_of(&hp).mapped_length, size);
	assert_int_equal(counters(f->cache).mappings, 1);
	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_MMAP, &hf), 0);
	expect_backend(&hf, STORAGE_BACKEND_MMAP, STORAGE_REASON_FORCED);
	assert_int_equal(wrap.mmap_calls, 1);

	/* The first handle keeps the backend it was opened with. */
	expect_backend(&hp, STORAGE_BACKEND_PREAD, STORAGE_REASON_FORCED);
	c0 = counters(f->cache);
	check_read(f->cache, &hp, ref, 5, size);
	c1 = counters(f->cache);
	assert_int_equal(c1.bytes_pread - c0.bytes_pread, size - 5);
	assert_int_equal(c1.bytes_mmap, c0.bytes_mmap);
	check_read(f->cache, &hf, ref, 5, size);
	assert_int_equal(counters(f->cache).bytes_mmap - c1.bytes_mmap, size - 5);

	file_cache_close(f->cache, &hp);
	file_cache_close(f->cache, &hm);
	file_cache_close(f->cache, &hf);
	close(ref);
}

static void test_stale_entry_replaced_while_old_handle_reads(void **state)
{
	struct fixture *f = *state;
	size_t size = 2 * ps + 100;
	const char *p = make_file("stale", size, 10);
	int ref = open_or_die(p, O_RDONLY), w = open_or_die(p, O_RDWR | O_APPEND);
	struct storage_handle h1, h2, h3;
	struct storage_counters c;
	unsigned char more[50];

	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h1), 0);
	memset(more, 'M', sizeof(more));
	assert_int_equal(write(w, more, sizeof(more)), (ssize_t)sizeof(more));

	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h2), 0);
	assert_ptr_not_equal(h2.entry, h1.entry);
	c = counters(f->cache);
	assert_int_equal(c.stale_replaced, 1);
	assert_int_equal(c.cache_misses, 2);
	assert_int_equal(c.cache_hits, 0);
	assert_int_equal(c.entries, 2);
	assert_int_equal(c.mappings, 2);
	assert_int_equal(c.mapped_bytes, size + (size + sizeof(more)));
	assert_int_equal(stat_of(&h1).mapped_length, size);
	assert_int_equal(stat_of(&h2).mapped_length, size + sizeof(more));

	/* The old handle reads the file as it is now, new bytes included. */
	assert_int_equal(check_read(f->cache, &h1, ref, 0, 2 * size), size + sizeof(more));
	check_reads_around(f->cache, &h1, ref, size + sizeof(more));
	check_reads_around(f->cache, &h2, ref, size + sizeof(more));

	/* A third open finds the new entry. */
	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h3), 0);
	assert_ptr_equal(h3.entry, h2.entry);

	/* The stale entry goes with its last handle. */
	file_cache_close(f->cache, &h1);
	c = counters(f->cache);
	assert_int_equal(c.entries, 1);
	assert_int_equal(c.mappings, 1);
	assert_int_equal(c.mapped_bytes, size + sizeof(more));
	check_read(f->cache, &h3, ref, 0, 2 * size);
	file_cache_close(f->cache, &h2);
	file_cache_close(f->cache, &h3);
	assert_int_equal(counters(f->cache).entries, 1);
	close(w);
	close(ref);
}

static void test_stale_same_size_rewrite(void **state)
{
	struct fixture *f = *state;
	size_t size = ps + 1;
	const char *p = make_file("samesize", size, 11);
	int ref = open_or_die(p, O_RDONLY), w = open_or_die(p, O_RDWR);
	struct storage_handle h1, h2;
	struct timespec ts[2] = { { .tv_sec = 1000000000, .tv_nsec = 0 },
				  { .tv_sec = 1000000000, .tv_nsec = 0 } };
	struct storage_counters c;

	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h1), 0);
	file_cache_close(f->cache, &h1);	/* cached, no handle */
	assert_int_equal(pwrite(w, "XYZ", 3, 10), 3);
	assert_int_equal(futimens(w, ts), 0);

	/* Changed while unreferenced: replaced and freed at once. */
	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h2), 0);
	c = counters(f->cache);
	assert_int_equal(c.stale_replaced, 1);
	assert_int_equal(c.entries, 1);
	assert_int_equal(c.mappings, 1);
	assert_int_equal(c.cache_hits, 0);
	assert_int_equal(wrap.mmap_calls, 2);
	assert_int_equal(stat_of(&h2).mtime_ns, INT64_C(1000000000) * 1000000000);
	check_read(f->cache, &h2, ref, 0, size);
	file_cache_close(f->cache, &h2);
	close(w);
	close(ref);
}

static void test_rename_replacement(void **state)
{
	struct fixture *f = *state;
	const char *p = make_file("renamed", 2 * ps, 12);
	const char *q = make_file("renamed.new", 3 * ps + 9, 13);
	int old_ref = open_or_die(p, O_RDONLY), new_ref;
	struct storage_handle h1, h2;

	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h1), 0);
	assert_int_equal(rename(q, p), 0);
	new_ref = open_or_die(p, O_RDONLY);
	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h2), 0);
	assert_ptr_not_equal(h1.entry, h2.entry);
	assert_int_equal(counters(f->cache).stale_replaced, 0);	/* another inode */

	/* The old handle keeps the old inode, the new one gets the new. */
	assert_int_equal(check_read(f->cache, &h1, old_ref, 0, 4 * ps), 2 * ps);
	assert_int_equal(check_read(f->cache, &h2, new_ref, 0, 4 * ps), 3 * ps + 9);
	check_reads_around(f->cache, &h1, old_ref, 2 * ps);

	/* The old inode has no name left: its entry does not outlive its
	 * last handle (it would pin the blocks); the new one stays cached. */
	assert_int_equal(counters(f->cache).entries, 2);
	file_cache_close(f->cache, &h1);
	assert_int_equal(counters(f->cache).entries, 1);
	assert_int_equal(counters(f->cache).mapped_bytes, 3 * ps + 9);
	file_cache_close(f->cache, &h2);
	assert_int_equal(counters(f->cache).entries, 1);
	close(old_ref);
	close(new_ref);
}

static void test_unlinked_file_not_kept(void **state)
{
	struct fixture *f = *state;
	const char *p = make_file("unlinked", 2 * ps, 21);
	int ref = open_or_die(p, O_RDONLY), fd = open_or_die(p, O_RDONLY);
	struct storage_handle h;

	assert_int_equal(file_cache_open(f->cache, fd, STORAGE_POLICY_AUTO, &h, NULL, 0), 0);
	assert_int_equal(unlink(p), 0);
	/* Still readable through the handle, like an open descriptor. */
	assert_int_equal(check_read(f->cache, &h, ref, 0, 3 * ps), 2 * ps);
	file_cache_close(f->cache, &h);
	assert_int_equal(counters(f->cache).entries, 0);
	assert_int_equal(counters(f->cache).mappings, 0);
	assert_int_equal(counters(f->cache).mapped_bytes, 0);
	assert_true(fd_is_closed(fd));
	close(ref);
}

static void test_hash_table_many_entries(void **state)
{
	struct fixture *f = *state;
	enum { N = 300 };
	struct storage_handle *h = calloc(N, sizeof(*h));
	int *refs = calloc(N, sizeof(*refs));
	char name[64];

	assert_non_null(h);
	assert_non_null(refs);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "many%d", i);
		refs[i] = open_or_die(make_file(name, 100 + (size_t)i, (unsigned)i), O_RDONLY);
		assert_int_equal(open_handle(f->cache, tpath(name), STORAGE_POLICY_AUTO, &h[i]), 0);
		file_cache_close(f->cache, &h[i]);
	}
	assert_int_equal(counters(f->cache).entries, N);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "many%d", i);
		assert_int_equal(open_handle(f->cache, tpath(name), STORAGE_POLICY_AUTO, &h[i]), 0);
		assert_int_equal(stat_of(&h[i]).handles, 1);
		assert_int_equal(check_read(f->cache, &h[i], refs[i], 0, 1000), 100 + i);
	}
	assert_int_equal(counters(f->cache).cache_hits, N);
	assert_int_equal(counters(f->cache).entries, N);
	for (int i = 0; i < N; i++) {
		file_cache_close(f->cache, &h[i]);
		close(refs[i]);
	}
	free(h);
	free(refs);
}

/* --- the read contract under change ----------------------------------------- */

static void test_truncated_file_old_handle(void **state)
{
	struct fixture *f = *state;
	size_t size = 3 * ps;
	const char *p = make_file("truncated", size, 14);
	int ref = open_or_die(p, O_RDONLY), w = open_or_die(p, O_RDWR);
	struct storage_handle h, h2;

	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h), 0);
	expect_backend(&h, STORAGE_BACKEND_MMAP, STORAGE_REASON_LOCAL_FILE);
	assert_int_equal(check_read(f->cache, &h, ref, 0, size), size);

	/* Pages 1 and 2 of the mapping now fault: short reads, no crash. */
	assert_int_equal(ftruncate(w, (off_t)ps), 0);
	assert_int_equal(check_read(f->cache, &h, ref, 0, size), ps);
	assert_int_equal(check_read(f->cache, &h, ref, ps - 10, 20), 10);
	assert_int_equal(check_read(f->cache, &h, ref, 2 * ps, 10), 0);
	check_reads_around(f->cache, &h, ref, size);

	/* Not on a page boundary: no zeros from the mapping's tail. */
	assert_int_equal(ftruncate(w, (off_t)(ps + 100)), 0);
	assert_int_equal(check_read(f->cache, &h, ref, 0, size), ps + 100);
	assert_int_equal(check_read(f->cache, &h, ref, ps + 50, ps), 50);
	assert_int_equal(ftruncate(w, 7), 0);
	assert_int_equal(check_read(f->cache, &h, ref, 0, size), 7);
	assert_int_equal(ftruncate(w, 0), 0);
	assert_int_equal(check_read(f->cache, &h, ref, 0, size), 0);

	/* Extended again: the hole reads as zeros, as pread says. */
	assert_int_equal(ftruncate(w, (off_t)size), 0);
	check_reads_around(f->cache, &h, ref, size);

	/* A new open sees a changed file. */
	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h2), 0);
	assert_ptr_not_equal(h2.entry, h.entry);
	assert_int_equal(counters(f->cache).stale_replaced, 1);
	check_reads_around(f->cache, &h2, ref, size);
	file_cache_close(f->cache, &h);
	file_cache_close(f->cache, &h2);
	close(w);
	close(ref);
}

static void test_extension_past_mapping(void **state)
{
	struct fixture *f = *state;
	size_t size = ps + 10, extra = 5000;
	const char *p = make_file("extended", size, 15);
	int ref = open_or_die(p, O_RDONLY), w = open_or_die(p, O_WRONLY | O_APPEND);
	unsigned char *more = malloc(extra);
	struct storage_handle h;
	struct storage_counters c0, c1;

	assert_non_null(more);
	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h), 0);
	expect_backend(&h, STORAGE_BACKEND_MMAP, STORAGE_REASON_LOCAL_FILE);
	fill_pattern(more, extra, 99);
	assert_int_equal(write(w, more, extra), (ssize_t)extra);

	c0 = counters(f->cache);
	assert_int_equal(check_read(f->cache, &h, ref, 0, 4 * ps), size + extra);
	c1 = counters(f->cache);
	assert_int_equal(c1.bytes_mmap - c0.bytes_mmap, size);
	assert_int_equal(c1.bytes_pread - c0.bytes_pread, extra);

	/* Across the end of the mapping, and wholly past it. */
	assert_int_equal(check_read(f->cache, &h, ref, ps, 100), 100);
	assert_int_equal(check_read(f->cache, &h, ref, size + 1, 10), 10);
	check_reads_around(f->cache, &h, ref, size + extra);
	assert_int_equal(stat_of(&h).mapped_length, size);
	assert_int_equal(stat_of(&h).size, size + extra);
	file_cache_close(f->cache, &h);
	free(more);
	close(w);
	close(ref);
}

/*
 * A read that straddles the mapping's end after the file grew, with
 * nowait (the event loop's first try): the whole answer or -EAGAIN, never
 * the mapped part alone as if the file ended there.  On tmpfs every
 * RWF_NOWAIT pread says EAGAIN; the file lives there when it can.
 */
static void test_nowait_straddle_not_short(void **state)
{
	struct fixture *f = *state;
	char p[PATH_MAX] = "/dev/shm/test_storage.XXXXXX";
	unsigned char got[16], want[16];
	struct storage_handle h;
	int fd = mkstemp(p), ref;
	ssize_t n;

	if (fd < 0) {
		snprintf(p, sizeof p, "%s", make_file("straddle", 2 * ps + 1, 7));
	} else {
		unsigned char *b = malloc(2 * ps + 1);

		assert_non_null(b);
		fill_pattern(b, 2 * ps + 1, 7);
		assert_int_equal(write(fd, b, 2 * ps + 1), (ssize_t)(2 * ps + 1));
		free(b);
		close(fd);
	}
	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_MMAP, &h), 0);
	fd = open_or_die(p, O_WRONLY | O_APPEND);
	assert_int_equal(write(fd, "grown", 5), 5);
	close(fd);
	ref = open_or_die(p, O_RDONLY);
	assert_int_equal(pread(ref, want, 2, (off_t)(2 * ps)), 2);
	n = storage_read_nowait(f->cache, &h, got, 2, 2 * ps);
	if (n != -EAGAIN) {
		assert_int_equal(n, 2);
		assert_memory_equal(got, want, 2);
	}
	assert_int_equal(worker_read(f->cache, &h, got, 2, 2 * ps), 2);
	assert_memory_equal(got, want, 2);
	file_cache_close(f->cache, &h);
	close(ref);
	if (strncmp(p, "/dev/shm/", 9) == 0)
		unlink(p);
}

static void test_rewrite_in_place_visible(void **state)
{
	struct fixture *f = *state;
	size_t size = 3 * ps;
	const char *p = make_file("rewrite", size, 16);
	int ref = open_or_die(p, O_RDONLY), w = open_or_die(p, O_RDWR);
	unsigned char z[100], got[100];
	struct storage_handle h;
	struct storage_counters c0;

	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h), 0);
	check_read(f->cache, &h, ref, 0, size);
	memset(z, 'Z', sizeof(z));
	assert_int_equal(pwrite(w, z, sizeof(z), (off_t)(ps - 50)), (ssize_t)sizeof(z));

	c0 = counters(f->cache);
	assert_int_equal(worker_read(f->cache, &h, got, sizeof(got), ps - 50), (ssize_t)sizeof(got));
	assert_memory_equal(got, z, sizeof(z));
	/* Served from the shared mapping, which sees the page cache. */
	assert_int_equal(counters(f->cache).bytes_mmap - c0.bytes_mmap, sizeof(got));
	check_reads_around(f->cache, &h, ref, size);
	file_cache_close(f->cache, &h);
	close(w);
	close(ref);
}

static void test_offset_overflow(void **state)
{
	struct fixture *f = *state;
	const char *p = make_file("overflow", ps, 17);
	int ref = open_or_die(p, O_RDONLY);
	struct storage_handle hm, hp;
	const struct {
		uint64_t off;
		size_t len;
	} cases[] = {
		{ UINT64_MAX, 1 },
		{ UINT64_MAX - 5, 10 },
		{ (uint64_t)INT64_MAX + 1, 0 },
		{ (uint64_t)INT64_MAX + 1, 10 },
		{ INT64_MAX, 1 },
		{ INT64_MAX - 5, 10 },
		{ INT64_MAX, 0 },
		{ INT64_MAX - 10, 10 },
		{ (uint64_t)ps, 10 },
	};
	char buf[16];

	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &hm), 0);
	expect_backend(&hm, STORAGE_BACKEND_MMAP, STORAGE_REASON_LOCAL_FILE);
	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_PREAD, &hp), 0);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		check_read(f->cache, &hm, ref, cases[i].off, cases[i].len);
		check_read(f->cache, &hp, ref, cases[i].off, cases[i].len);
	}
	/* What the interface promises, whatever this kernel says. */
	assert_int_equal(worker_read(f->cache, &hm, buf, 10, UINT64_MAX - 5), -EINVAL);
	assert_int_equal(worker_read(f->cache, &hp, buf, 10, UINT64_MAX - 5), -EINVAL);
	assert_int_equal(worker_read(f->cache, &hm, buf, 10, INT64_MAX - 5), -EINVAL);
	assert_int_equal(worker_read(f->cache, &hp, buf, 10, INT64_MAX - 5), -EINVAL);
	assert_int_equal(worker_read(f->cache, &hm, buf, 0, (uint64_t)INT64_MAX + 1), -EINVAL);
	assert_int_equal(worker_read(f->cache, &hm, buf, 0, INT64_MAX), 0);
	/* A length no buffer can have (pread would say EFAULT first). */
	assert_int_equal(worker_read(f->cache, &hm, buf, SIZE_MAX, 0), -EINVAL);
	assert_int_equal(worker_read(f->cache, &hp, buf, SIZE_MAX, 0), -EINVAL);
	assert_int_equal(worker_read(f->cache, &hm, buf, (size_t)INT64_MAX, 1), -EINVAL);
	assert_int_equal(worker_read(f->cache, NULL, buf, 1, 0), -EBADF);
	file_cache_close(f->cache, &hm);
	assert_int_equal(worker_read(f->cache, &hm, buf, 1, 0), -EBADF);
	file_cache_close(f->cache, &hp);
	close(ref);
}

static void test_procfs_read_in_full(void **state)
{
	struct fixture *f = *state;
	size_t cap = 1 << 16;
	unsigned char *got = malloc(cap), *want = malloc(cap);
	struct storage_handle h;
	char err[256];
	ssize_t n;
	int ref;

	assert_non_null(got);
	assert_non_null(want);
	ref = open("/proc/version", O_RDONLY | O_CLOEXEC);
	if (ref < 0) {
		free(got);
		free(want);
		skip();
	}
	assert_int_equal(open_handle(f->cache, "/proc/version", STORAGE_POLICY_AUTO, &h), 0);
	/* The real fstatfs: procfs is recognised, its st_size 0 ignored. */
	expect_backend(&h, STORAGE_BACKEND_PREAD, STORAGE_REASON_PSEUDO_FS);
	assert_int_equal(stat_of(&h).size, 0);
	n = check_read(f->cache, &h, ref, 0, cap);
	assert_true(n > 0);
	check_read(f->cache, &h, ref, 3, 10);
	file_cache_close(f->cache, &h);

	assert_int_equal(file_cache_open(f->cache, open_or_die("/proc/version", O_RDONLY),
					 STORAGE_POLICY_MMAP, &h, err, sizeof(err)), -ENODEV);

	/* Content that changes from read to read: in full, not clamped. */
	assert_int_equal(open_handle(f->cache, "/proc/self/status", STORAGE_POLICY_AUTO, &h), 0);
	expect_backend(&h, STORAGE_BACKEND_PREAD, STORAGE_REASON_PSEUDO_FS);
	memset(got, 0, cap);
	n = worker_read(f->cache, &h, got, cap - 1, 0);
	assert_true(n > 0);
	assert_memory_equal(got, "Name:", 5);
	assert_non_null(strstr((char *)got, "\nPid:"));
	assert_int_equal(got[n - 1], '\n');
	file_cache_close(f->cache, &h);
	free(got);
	free(want);
	close(ref);
}

static void test_storage_stat(void **state)
{
	struct fixture *f = *state;
	size_t size = 2 * ps + 3;
	const char *p = make_file("stat", size, 18);
	struct storage_handle h1, h2;
	struct storage_stat st;
	struct stat ref;

	assert_int_equal(stat(p, &ref), 0);
	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_PREAD, &h1), 0);
	st = stat_of(&h1);
	assert_int_equal(st.size, size);
	assert_int_equal(st.dev, ref.st_dev);
	assert_int_equal(st.ino, ref.st_ino);
	assert_int_equal(st.mode, ref.st_mode);
	assert_int_equal(st.mtime_ns, (int64_t)ref.st_mtim.tv_sec * 1000000000 + ref.st_mtim.tv_nsec);
	assert_int_equal(st.mapped_length, 0);
	assert_int_equal(st.handles, 1);

	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h2), 0);
	st = stat_of(&h1);
	assert_int_equal(st.mapped_length, size);
	assert_int_equal(st.handles, 2);
	file_cache_close(f->cache, &h2);
	assert_int_equal(stat_of(&h1).handles, 1);
	file_cache_close(f->cache, &h1);
	assert_int_equal(storage_stat(&h1, &st), -EBADF);
}

static void test_free_with_open_handles(void **state)
{
	struct fixture *f = *state;
	const char *p = make_file("freed", ps, 19);
	int fd1 = open_or_die(p, O_RDONLY), fd2, w = open_or_die(p, O_WRONLY | O_APPEND);
	struct storage_handle h1, h2, h3;
	int pp[2];

	assert_int_equal(file_cache_open(f->cache, fd1, STORAGE_POLICY_AUTO, &h1, NULL, 0), 0);
	assert_int_equal(write(w, "x", 1), 1);
	fd2 = open_or_die(p, O_RDONLY);
	assert_int_equal(file_cache_open(f->cache, fd2, STORAGE_POLICY_AUTO, &h2, NULL, 0), 0);
	assert_int_equal(pipe2(pp, O_CLOEXEC), 0);
	assert_int_equal(file_cache_open(f->cache, pp[0], STORAGE_POLICY_AUTO, &h3, NULL, 0), 0);
	assert_int_equal(counters(f->cache).entries, 3);	/* stale, cached, private */

	/* Every entry goes, referenced or not, with its descriptor (leaks
	 * of memory and mappings are the sanitizers' and valgrind's job). */
	f->cache = file_cache_free(f->cache);
	assert_null(f->cache);
	assert_true(fd_is_closed(fd1));
	assert_true(fd_is_closed(fd2));
	assert_true(fd_is_closed(pp[0]));
	assert_null(file_cache_free(NULL));
	close(pp[1]);
	close(w);
	f->cache = file_cache_new();
	assert_non_null(f->cache);
}

/* --- SIGBUS guard -------------------------------------------------------- */

static void test_guard_install(void **state)
{
	struct sigaction cur;

	(void)state;
	/* Also under ASan with default options: ASan owns SIGBUS unless
	 * told otherwise, and guard_install must take it over. */
	assert_int_equal(guard_install(), 0);
	assert_int_equal(guard_install(), 0);
	assert_int_equal(sigaction(SIGBUS, NULL, &cur), 0);
	assert_true(cur.sa_flags & SA_SIGINFO);
	assert_true(cur.sa_flags & SA_NODEFER);
}

static void test_guard_copy_faults(void **state)
{
	unsigned char *buf = malloc(3 * ps), *want = malloc(ps);
	unsigned char *m;
	sigset_t mask;
	int fd;

	(void)state;
	assert_non_null(buf);
	assert_non_null(want);
	assert_int_equal(guard_install(), 0);
	m = map_truncated("guardfault", 3, 1, &fd);

	assert_int_equal(guard_copy(buf, m + ps, ps), -EFAULT);
	assert_int_equal(guard_copy(buf, m + 2 * ps + 17, 1), -EFAULT);
	assert_int_equal(guard_copy(buf, m + ps - 10, 20), -EFAULT);
	assert_int_equal(guard_copy(buf, m, 3 * ps), -EFAULT);

	/* The page that is still in the file copies, and is right. */
	fill_pattern(want, ps, 3);
	memset(buf, 0, 3 * ps);
	assert_int_equal(guard_copy(buf, m, ps), 0);
	assert_memory_equal(buf, want, ps);
	assert_int_equal(guard_copy(buf, m, 0), 0);
	assert_int_equal(guard_copy(buf, m + ps, 0), 0);

	/* Recovery leaves no state behind: SIGBUS is not left blocked and
	 * the next faults and copies behave the same. */
	for (int i = 0; i < 200; i++) {
		assert_int_equal(guard_copy(buf, m + ps + (size_t)i, 8), -EFAULT);
		assert_int_equal(guard_copy(buf, m + i, 8), 0);
		assert_memory_equal(buf, want + i, 8);
	}
	assert_int_equal(pthread_sigmask(SIG_BLOCK, NULL, &mask), 0);
	assert_false(sigismember(&mask, SIGBUS));

	assert_int_equal(munmap(m, 3 * ps), 0);
	close(fd);
	free(buf);
	free(want);
}

struct guard_thread_arg {
	unsigned char *map;
	int failures;
};

static void *guard_thread(void *p)
{
	struct guard_thread_arg *a = p;
	unsigned char buf[64], want[64];

	fill_pattern(want, sizeof(want), 3);
	for (int i = 0; i < 500; i++) {
		if (guard_copy(buf, a->map + ps + (size_t)(i % 64), 32) != -EFAULT)
			a->failures++;
		if (guard_copy(buf, a->map, sizeof(buf)) != 0 || memcmp(buf, want, sizeof(buf)) != 0)
			a->failures++;
	}
	return NULL;
}

static void test_guard_copy_threads(void **state)
{
	struct guard_thread_arg a[4];
	pthread_t t[4];
	unsigned char *m;
	int fd;

	(void)state;
	assert_int_equal(guard_install(), 0);
	m = map_truncated("guardthreads", 2, 1, &fd);
	/* Each thread's faults are its own: concurrent recoveries. */
	for (int i = 0; i < 4; i++) {
		a[i] = (struct guard_thread_arg){ .map = m };
		assert_int_equal(pthread_create(&t[i], NULL, guard_thread, &a[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(a[i].failures, 0);
	}
	assert_int_equal(munmap(m, 2 * ps), 0);
	close(fd);
}

static void child_touch_unguarded(void *arg)
{
	volatile unsigned char *m = arg;

	if (guard_install() != 0)
		_exit(3);
	/* Beyond EOF, outside any guarded copy.  The value is used: valgrind
	 * drops loads whose value nobody uses. */
	_exit(4 + m[ps]);
}

static void child_raise_sigbus(void *arg)
{
	(void)arg;
	if (guard_install() != 0)
		_exit(3);
	(void)raise(SIGBUS);
	_exit(4);
}

/* A SIGBUS that no access raised (here: the kernel's early warning about
 * a poisoned page, forged with a fault address in a mapping) must kill,
 * not leave the process alive with its guard gone. */
static void child_async_sigbus(void *arg)
{
	siginfo_t si;

	if (guard_install() != 0)
		_exit(3);
	memset(&si, 0, sizeof(si));
	si.si_signo = SIGBUS;
	si.si_code = BUS_MCEERR_AO;
	si.si_addr = arg;
	/* To itself, a thread may queue a positive si_code. */
	if (syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), SIGBUS, &si) != 0)
		_exit(5);
	_exit(4);
}

static void test_sigbus_outside_guard_kills(void **state)
{
	unsigned char *m;
	int fd, status;

	(void)state;
	m = map_truncated("unguarded", 2, 1, &fd);
	status = run_in_child(child_touch_unguarded, m);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGBUS);

	status = run_in_child(child_raise_sigbus, NULL);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGBUS);

	/* And this process, with the guard installed, still recovers. */
	assert_int_equal(guard_install(), 0);
	assert_int_equal(guard_copy(&status, m + ps, sizeof(status)), -EFAULT);
	assert_int_equal(munmap(m, 2 * ps), 0);
	close(fd);
}

static bool under_valgrind(void)
{
	const char *preload = getenv("LD_PRELOAD");

	return preload != NULL && strstr(preload, "vgpreload") != NULL;
}

static void test_sigbus_not_from_an_access_kills(void **state)
{
	unsigned char *m;
	int fd, status;

	(void)state;
	/* valgrind takes a self-queued BUS_MCEERR_AO for a fault of its own
	 * and aborts with an internal error. */
	if (under_valgrind())
		skip();
	m = map_truncated("asyncbus", 2, 1, &fd);
	status = run_in_child(child_async_sigbus, m + ps);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGBUS);
	assert_int_equal(munmap(m, 2 * ps), 0);
	close(fd);
}

/*
 * A fault writing the destination (a client's shared region whose pages
 * are gone) is recovered too, and told apart from one in the source:
 * GUARD_EFAULT_DST.  The destination here is a writable shared mapping of
 * a file of two pages truncated to one, so that writing its second page
 * raises SIGBUS.  The mmap backend passes it up instead of retrying with
 * pread into the same place.  Checked in a child: without the recovery,
 * the fault kills the process.
 */
struct dst_fault_arg {
	struct file_cache *cache;
	const char *path;	/* a file of 2 pages, pattern 3 */
};

#define CHILD_CHECK(cond, code) do { if (!(cond)) _exit(code); } while (0)

static void child_dst_faults(void *p)
{
	struct dst_fault_arg *a = p;
	const char *dp = make_file("guarddst", 2 * ps, 4);
	int dfd = open(dp, O_RDWR | O_CLOEXEC), sfd;
	unsigned char *src, *wm, want[64];
	struct storage_handle h;

	CHILD_CHECK(guard_install() == 0, 3);
	CHILD_CHECK(dfd >= 0, 5);
	wm = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE, MAP_SHARED, dfd, 0);
	CHILD_CHECK(wm != MAP_FAILED, 6);
	CHILD_CHECK(ftruncate(dfd, (off_t)ps) == 0, 7);
	sfd = open(a->path, O_RDONLY | O_CLOEXEC);
	src = mmap(NULL, 2 * ps, PROT_READ, MAP_SHARED, sfd, 0);
	CHILD_CHECK(sfd >= 0 && src != MAP_FAILED, 8);
	fill_pattern(want, sizeof(want), 3);

	/* into the page that is gone, whole or in part, again and again */
	for (int i = 0; i < 100; i++) {
		CHILD_CHECK(guard_copy(wm + ps + (size_t)i, src, 32) == GUARD_EFAULT_DST, 10);
		CHILD_CHECK(guard_copy(wm + ps - 10, src, 20) == GUARD_EFAULT_DST, 11);
		/* the page that is still there takes the bytes */
		CHILD_CHECK(guard_copy(wm + i, src, 32) == 0, 12);
		CHILD_CHECK(memcmp(wm + i, want, 32) == 0, 13);
	}
	/* through the mmap backend: up, not retried with pread */
	CHILD_CHECK(open_handle(a->cache, a->path, STORAGE_POLICY_MMAP, &h) == 0, 15);
	CHILD_CHECK(worker_read(a->cache, &h, wm + ps - 8, 64, 0) == GUARD_EFAULT_DST, 16);
	CHILD_CHECK(worker_read(a->cache, &h, wm, 64, 0) == 64, 17);
	CHILD_CHECK(memcmp(wm, want, 64) == 0, 18);
	file_cache_close(a->cache, &h);
	_exit(0);
}

static void test_guard_copy_dst_faults(void **state)
{
	struct fixture *f = *state;
	char *src = strdup(make_file("guardsrc", 2 * ps, 3));
	struct dst_fault_arg a = { f->cache, src };
	unsigned char *m, buf[64];
	int fd, status;

	assert_non_null(src);

	status = run_in_child(child_dst_faults, &a);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("the child checking destination faults %s %d",
			 WIFEXITED(status) ? "failed check" : "died of signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	/* and a source fault stays -EFAULT, into a good destination */
	assert_int_equal(guard_install(), 0);
	m = map_truncated("guardsrcfault", 2, 1, &fd);
	assert_int_equal(guard_copy(buf, m + ps, sizeof(buf)), -EFAULT);
	assert_int_equal(munmap(m, 2 * ps), 0);
	close(fd);
	free(src);
}

/*
 * The recovery path of a read, made deterministic: the entry's
 * mapping is, unknown to it, of a copy of the file's first page, so that
 * the copy faults at the second page while the file still has three (as
 * when a page cannot be read).  The answer must still be pread's.
 */
static void test_sigbus_recovery_in_read(void **state)
{
	struct fixture *f = *state;
	size_t size = 3 * ps;
	const char *p = make_file("victim", size, 20);
	const char *q = make_file("victim.short", ps, 20);	/* same first page */
	int ref = open_or_die(p, O_RDONLY), sub = open_or_die(q, O_RDONLY);
	struct storage_handle h, h2;
	struct storage_counters c;

	assert_int_equal(guard_install(), 0);	/* see setup() */
	wrap.mmap_substitute_fd = sub;
	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h), 0);
	expect_backend(&h, STORAGE_BACKEND_MMAP, STORAGE_REASON_LOCAL_FILE);
	assert_int_equal(wrap.mmap_substitute_fd, -1);	/* used */

	assert_int_equal(check_read(f->cache, &h, ref, 0, size), size);
	c = counters(f->cache);
	assert_int_equal(c.sigbus_recoveries, 1);
	assert_int_equal(c.bytes_pread, size);
	assert_int_equal(c.bytes_mmap, 0);
	/* Within the good page: from the mapping, no fault. */
	assert_int_equal(check_read(f->cache, &h, ref, 5, ps - 5), ps - 5);
	assert_int_equal(counters(f->cache).sigbus_recoveries, 1);
	assert_int_equal(check_read(f->cache, &h, ref, 2 * ps + 1, 100), 100);
	assert_int_equal(counters(f->cache).sigbus_recoveries, 2);

	/* The faulted entry is out of the cache: a new open maps anew. */
	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h2), 0);
	assert_ptr_not_equal(h2.entry, h.entry);
	assert_int_equal(wrap.mmap_calls, 2);
	c = counters(f->cache);
	assert_int_equal(c.entries, 2);
	assert_int_equal(c.cache_hits, 0);
	check_reads_around(f->cache, &h2, ref, size);
	assert_int_equal(counters(f->cache).sigbus_recoveries, 2);

	/* The old handle keeps reading right until it closes. */
	check_reads_around(f->cache, &h, ref, size);
	file_cache_close(f->cache, &h);
	c = counters(f->cache);
	assert_int_equal(c.entries, 1);
	assert_int_equal(c.mappings, 1);
	assert_int_equal(c.mapped_bytes, size);
	file_cache_close(f->cache, &h2);
	close(sub);
	close(ref);
}

/* --- the memory budget ------------------------------------------------------ */

static void set_limits(struct file_cache *c, uint64_t max_mapped_bytes, uint64_t max_files,
		       uint64_t idle_unmap_ms)
{
	const struct storage_limits l = {
		.max_mapped_bytes = max_mapped_bytes,
		.max_files = max_files,
		.idle_unmap_ms = idle_unmap_ms,
	};

	file_cache_set_limits(c, &l);
}

struct find {
	char want[PATH_MAX];
	unsigned matches;
	struct storage_entry_info info;
};

static bool find_cb(const struct storage_entry_info *info, void *arg)
{
	struct find *fd = arg;

	if (strcmp(info->path, fd->want) == 0 && info->cached) {
		fd->matches++;
		fd->info = *info;
	}
	return true;
}

/* Whether the file at path has a cached entry (as file_cache_foreach
 * lists it); its listing in *out.  Changes nothing in the cache. */
static bool cached_entry(struct file_cache *c, const char *path, struct storage_entry_info *out)
{
	struct find fd = { .matches = 0 };

	assert_non_null(realpath(path, fd.want));
	file_cache_foreach(c, 0, find_cb, &fd);
	assert_true(fd.matches <= 1);
	if (out != NULL)
		*out = fd.info;
	return fd.matches == 1;
}

static bool is_cached(struct file_cache *c, const char *path)
{
	return cached_entry(c, path, NULL);
}

static uint64_t mapped_length_of(struct file_cache *c, const char *path)
{
	struct storage_entry_info info;

	assert_true(cached_entry(c, path, &info));
	return info.mapped_length;
}

/* Opens, reads a byte of and closes path: its entry becomes the most
 * recently used idle entry. */
static void touch(struct file_cache *c, const char *path, enum storage_policy policy)
{
	struct storage_handle h;
	char b;

	assert_int_equal(open_handle(c, path, policy, &h), 0);
	assert_int_equal(worker_read(c, &h, &b, 1, 0), 1);
	file_cache_close(c, &h);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void test_budget_defaults(void **state)
{
	struct fixture *f = *state;
	char name[64];

	/* No limit: every file is kept, and mapped. */
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "default%d", i);
		make_file(name, ps + (size_t)i, (unsigned)i);
		touch(f->cache, tpath(name), STORAGE_POLICY_AUTO);
	}
	file_cache_sweep(f->cache, UINT64_MAX);	/* idle_unmap_ms 0: never */
	assert_int_equal(counters(f->cache).entries, 40);
	assert_int_equal(counters(f->cache).mappings, 40);
	assert_int_equal(counters(f->cache).evictions_lru, 0);
	assert_int_equal(counters(f->cache).evictions_idle, 0);
	assert_int_equal(counters(f->cache).budget_fallbacks, 0);
}

/* Budget for two mappings, three files: the least recently used idle one
 * goes, and touching decides which that is. */
static void test_budget_lru_order(void **state)
{
	struct fixture *f = *state;
	size_t size = 2 * ps + 7;
	const char *a = make_file("lru-a", size, 31);
	const char *b = make_file("lru-b", size, 32);
	const char *c = make_file("lru-c", size, 33);
	int ref = open_or_die(c, O_RDONLY);
	struct storage_handle h;
	struct storage_counters c0;

	set_limits(f->cache, 2 * size, 0, 0);
	touch(f->cache, a, STORAGE_POLICY_AUTO);
	touch(f->cache, b, STORAGE_POLICY_AUTO);
	assert_int_equal(counters(f->cache).mapped_bytes, 2 * size);
	/* a again: a hit, same mapping, and now b is the least recent. */
	c0 = counters(f->cache);
	touch(f->cache, a, STORAGE_POLICY_AUTO);
	assert_int_equal(counters(f->cache).cache_hits, c0.cache_hits + 1);
	assert_int_equal(wrap.mmap_calls, 2);

	assert_int_equal(open_handle(f->cache, c, STORAGE_POLICY_AUTO, &h), 0);
	expect_backend(&h, STORAGE_BACKEND_MMAP, STORAGE_REASON_LOCAL_FILE);
	c0 = counters(f->cache);
	assert_int_equal(c0.evictions_lru, 1);
	assert_int_equal(c0.entries, 2);
	assert_int_equal(c0.mappings, 2);
	assert_int_equal(c0.mapped_bytes, 2 * size);
	assert_int_equal(c0.budget_fallbacks, 0);
	assert_true(is_cached(f->cache, a));
	assert_false(is_cached(f->cache, b));
	assert_int_equal(check_read(f->cache, &h, ref, 0, size + 10), size);
	assert_int_equal(counters(f->cache).bytes_mmap - c0.bytes_mmap, size);
	file_cache_close(f->cache, &h);

	/* Now a is the least recent (c closed after it): b back pushes a out. */
	touch(f->cache, b, STORAGE_POLICY_AUTO);
	assert_int_equal(counters(f->cache).evictions_lru, 2);
	assert_false(is_cached(f->cache, a));
	assert_true(is_cached(f->cache, b));
	assert_true(is_cached(f->cache, c));
	assert_int_equal(counters(f->cache).mapped_bytes, 2 * size);
	assert_int_equal(counters(f->cache).evictions, 0);	/* requests only */
	close(ref);
}

/* A budget full of readers: nothing is unmapped under them, the next AUTO
 * open reads with pread (over-budget), and reads stay pread's answer. */
static void test_budget_readers_keep_mappings(void **state)
{
	struct fixture *f = *state;
	size_t size = 3 * ps + 11;
	const char *a = make_file("busy-a", size, 41);
	const char *b = make_file("busy-b", size, 42);
	const char *c = make_file("busy-c", size, 43);
	int ref_a = open_or_die(a, O_RDONLY), ref_b = open_or_die(b, O_RDONLY);
	int ref_c = open_or_die(c, O_RDONLY);
	struct storage_handle ha, hb, job, hc;
	struct storage_counters c0, c1;
	struct storage_io io = { .nowait = false };
	unsigned char *buf = malloc(size), *want = malloc(size);

	assert_non_null(buf);
	assert_non_null(want);
	set_limits(f->cache, 2 * size, 0, 0);
	assert_int_equal(open_handle(f->cache, a, STORAGE_POLICY_AUTO, &ha), 0);
	assert_int_equal(open_handle(f->cache, b, STORAGE_POLICY_AUTO, &hb), 0);
	/* A worker's reference is a reader although the handle closed. */
	storage_handle_dup(&hb, &job);
	file_cache_close(f->cache, &hb);

	assert_int_equal(open_handle(f->cache, c, STORAGE_POLICY_AUTO, &hc), 0);
	expect_backend(&hc, STORAGE_BACKEND_PREAD, STORAGE_REASON_OVER_BUDGET);
	assert_int_equal(hc.map_errno, 0);
	c0 = counters(f->cache);
	assert_int_equal(c0.budget_fallbacks, 1);
	assert_int_equal(c0.opens_by_reason[STORAGE_REASON_OVER_BUDGET], 1);
	assert_int_equal(c0.evictions_lru, 0);
	assert_int_equal(c0.mappings, 2);
	assert_int_equal(c0.mapped_bytes, 2 * size);
	assert_int_equal(wrap.mmap_calls, 2);
	assert_int_equal(stat_of(&hc).mapped_length, 0);
	check_reads_around(f->cache, &hc, ref_c, size);
	c1 = counters(f->cache);
	assert_int_equal(c1.bytes_mmap, c0.bytes_mmap);
	assert_true(c1.bytes_pread > c0.bytes_pread);

	/* A lower budget does not unmap them either. */
	set_limits(f->cache, 1, 0, 0);
	c0 = counters(f->cache);
	assert_int_equal(c0.evictions_lru, 0);
	assert_int_equal(c0.mappings, 2);
	assert_int_equal(stat_of(&ha).mapped_length, size);
	assert_int_equal(stat_of(&job).mapped_length, size);
	check_read(f->cache, &ha, ref_a, 1, 2 * ps);
	assert_int_equal(storage_read_detached(&job, buf, size, 0, &io), (ssize_t)size);
	assert_int_equal(ref_pread(ref_b, want, size, 0), (ssize_t)size);
	assert_memory_equal(buf, want, size);
	assert_int_equal(io.bytes_mmap, size);
	storage_read_finish(f->cache, &job, &io);
	assert_int_equal(counters(f->cache).bytes_mmap - c0.bytes_mmap, 2 * ps + size);

	/* As readers close, the budget catches up: their entries go. */
	file_cache_close(f->cache, &ha);
	assert_int_equal(counters(f->cache).evictions_lru, 1);
	assert_int_equal(counters(f->cache).mappings, 1);
	assert_false(is_cached(f->cache, a));
	file_cache_close(f->cache, &job);
	assert_int_equal(counters(f->cache).evictions_lru, 2);
	assert_int_equal(counters(f->cache).mappings, 0);
	assert_int_equal(counters(f->cache).mapped_bytes, 0);
	/* The unmapped one is no mapped bytes: it stays. */
	file_cache_close(f->cache, &hc);
	assert_int_equal(counters(f->cache).entries, 1);
	assert_true(is_cached(f->cache, c));
	assert_int_equal(counters(f->cache).budget_fallbacks, 1);
	free(buf);
	free(want);
	close(ref_a);
	close(ref_b);
	close(ref_c);
}

/* STORAGE_POLICY_MMAP past the budget: honoured and counted, after what
 * idle mappings can go; the overrun ends when its reader closes. */
static void test_budget_mmap_required_honoured(void **state)
{
	struct fixture *f = *state;
	size_t size = 2 * ps + 3;
	/* Five paths: more than tpath() keeps at once. */
	char a[PATH_MAX], b[PATH_MAX], e[PATH_MAX], big[PATH_MAX], g[PATH_MAX];
	int ref;
	struct storage_handle ha, hb, hbig, hg;
	char err[256];
	struct storage_counters c0;

	strcpy(a, make_file("req-a", size, 51));
	strcpy(b, make_file("req-b", size, 52));
	strcpy(e, make_file("req-e", size, 53));
	strcpy(big, make_file("req-big", 2 * size, 54));
	strcpy(g, make_file("req-g", size, 55));
	ref = open_or_die(big, O_RDONLY);
	set_limits(f->cache, 3 * size, 0, 0);
	assert_int_equal(open_handle(f->cache, a, STORAGE_POLICY_AUTO, &ha), 0);
	assert_int_equal(open_handle(f->cache, b, STORAGE_POLICY_AUTO, &hb), 0);
	touch(f->cache, e, STORAGE_POLICY_AUTO);
	assert_int_equal(counters(f->cache).mapped_bytes, 3 * size);

	/* The readers' 2 * size + 2 * size > 3 * size even without e: AUTO
	 * reads with pread, and drops nothing for it. */
	assert_int_equal(open_handle(f->cache, big, STORAGE_POLICY_AUTO, &hbig), 0);
	expect_backend(&hbig, STORAGE_BACKEND_PREAD, STORAGE_REASON_OVER_BUDGET);
	assert_int_equal(counters(f->cache).evictions_lru, 0);
	assert_true(is_cached(f->cache, e));
	file_cache_close(f->cache, &hbig);

	/* Required: honoured, on the same (unmapped) entry. */
	assert_int_equal(file_cache_open(f->cache, open_or_die(big, O_RDONLY), STORAGE_POLICY_MMAP,
					 &hbig, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	expect_backend(&hbig, STORAGE_BACKEND_MMAP, STORAGE_REASON_FORCED);
	assert_int_equal(stat_of(&hbig).mapped_length, 2 * size);
	c0 = counters(f->cache);
	assert_int_equal(c0.mapped_over_budget, 1);
	assert_int_equal(c0.budget_fallbacks, 1);
	assert_int_equal(c0.cache_hits, 1);
	assert_int_equal(c0.evictions_lru, 1);		/* e, the only idle mapping */
	assert_false(is_cached(f->cache, e));
	assert_int_equal(c0.mapped_bytes, 4 * size);
	assert_int_equal(check_read(f->cache, &hbig, ref, 0, 3 * size), 2 * size);
	assert_int_equal(counters(f->cache).bytes_mmap - c0.bytes_mmap, 2 * size);

	/* AUTO is not honoured past it. */
	assert_int_equal(open_handle(f->cache, g, STORAGE_POLICY_AUTO, &hg), 0);
	expect_backend(&hg, STORAGE_BACKEND_PREAD, STORAGE_REASON_OVER_BUDGET);
	assert_int_equal(counters(f->cache).budget_fallbacks, 2);
	assert_int_equal(counters(f->cache).mapped_over_budget, 1);

	/* Its reader gone, the overrun goes too (the only idle mapping). */
	file_cache_close(f->cache, &hbig);
	c0 = counters(f->cache);
	assert_int_equal(c0.evictions_lru, 2);
	assert_int_equal(c0.mapped_bytes, 2 * size);
	assert_false(is_cached(f->cache, big));
	file_cache_close(f->cache, &ha);
	file_cache_close(f->cache, &hb);
	file_cache_close(f->cache, &hg);
	assert_int_equal(counters(f->cache).evictions_lru, 2);	/* within budget */
	assert_int_equal(counters(f->cache).entries, 3);
	close(ref);
}

/* max_files: idle entries go least recently used first, mapped or not;
 * with every entry in use the open succeeds and the entry is not kept. */
static void test_budget_max_files(void **state)
{
	struct fixture *f = *state;
	size_t size = ps + 17;
	const char *a = make_file("files-a", size, 61);
	const char *b = make_file("files-b", size, 62);
	const char *c = make_file("files-c", size, 63);
	const char *d = make_file("files-d", size, 64);
	int ref = open_or_die(d, O_RDONLY), fd;
	struct storage_handle ha, hc, hd, hd2, hp;
	struct storage_counters c0;
	int pp[2];

	set_limits(f->cache, 0, 2, 0);
	touch(f->cache, a, STORAGE_POLICY_PREAD);	/* idle, not mapped */
	touch(f->cache, b, STORAGE_POLICY_AUTO);	/* idle, mapped */
	touch(f->cache, a, STORAGE_POLICY_PREAD);	/* b is the least recent */
	assert_int_equal(counters(f->cache).mappings, 1);
	assert_int_equal(open_handle(f->cache, c, STORAGE_POLICY_AUTO, &hc), 0);
	c0 = counters(f->cache);
	assert_int_equal(c0.evictions_lru, 1);
	assert_int_equal(c0.entries, 2);
	assert_int_equal(c0.mappings, 1);		/* b's went, c's came */
	assert_true(is_cached(f->cache, a));
	assert_false(is_cached(f->cache, b));

	/* Every entry in use. */
	assert_int_equal(open_handle(f->cache, a, STORAGE_POLICY_AUTO, &ha), 0);
	fd = open_or_die(d, O_RDONLY);
	assert_int_equal(file_cache_open(f->cache, fd, STORAGE_POLICY_AUTO, &hd, NULL, 0), 0);
	expect_backend(&hd, STORAGE_BACKEND_MMAP, STORAGE_REASON_LOCAL_FILE);
	c0 = counters(f->cache);
	assert_int_equal(c0.files_over_budget, 1);
	assert_int_equal(c0.evictions_lru, 1);
	assert_int_equal(c0.entries, 3);
	check_reads_around(f->cache, &hd, ref, size);
	/* A second open shares it; a private entry is not in the budget. */
	assert_int_equal(open_handle(f->cache, d, STORAGE_POLICY_AUTO, &hd2), 0);
	assert_ptr_equal(hd2.entry, hd.entry);
	assert_int_equal(pipe2(pp, O_CLOEXEC), 0);
	assert_int_equal(file_cache_open(f->cache, pp[0], STORAGE_POLICY_AUTO, &hp, NULL, 0), 0);
	assert_int_equal(counters(f->cache).files_over_budget, 1);
	file_cache_close(f->cache, &hp);
	close(pp[1]);

	/* Not kept after its last handle, though nothing else went. */
	file_cache_close(f->cache, &hd);
	assert_int_equal(counters(f->cache).entries, 3);	/* hd2 still reads it */
	file_cache_close(f->cache, &hd2);
	c0 = counters(f->cache);
	assert_int_equal(c0.entries, 2);
	assert_int_equal(c0.evictions_lru, 1);
	assert_false(is_cached(f->cache, d));

	/* The two in the budget stay when closed, then make room again. */
	file_cache_close(f->cache, &ha);
	file_cache_close(f->cache, &hc);
	assert_int_equal(counters(f->cache).entries, 2);
	touch(f->cache, d, STORAGE_POLICY_AUTO);
	c0 = counters(f->cache);
	assert_int_equal(c0.evictions_lru, 2);
	assert_int_equal(c0.files_over_budget, 1);
	assert_false(is_cached(f->cache, a));		/* closed before c */
	assert_true(is_cached(f->cache, c));
	assert_true(is_cached(f->cache, d));

	/* The least recently used goes though it has no mapping and a
	 * more recent one has. */
	touch(f->cache, a, STORAGE_POLICY_PREAD);	/* c goes */
	touch(f->cache, d, STORAGE_POLICY_AUTO);	/* a is the least recent */
	assert_int_equal(mapped_length_of(f->cache, a), 0);
	touch(f->cache, b, STORAGE_POLICY_AUTO);
	assert_int_equal(counters(f->cache).evictions_lru, 4);
	assert_false(is_cached(f->cache, a));
	assert_false(is_cached(f->cache, c));
	assert_true(is_cached(f->cache, d));
	assert_true(is_cached(f->cache, b));
	close(ref);
}

/* The sweep drops idle entries idle too long, and only those. */
static void test_idle_sweep(void **state)
{
	struct fixture *f = *state;
	size_t size = ps + 1;
	const char *a = make_file("idle-a", size, 71);
	const char *b = make_file("idle-b", size, 72);
	const char *c = make_file("idle-c", size, 73);
	struct storage_handle hc;
	uint64_t t_a, t_b, t_b_done;

	set_limits(f->cache, 0, 0, 10);
	/* c is held throughout: the oldest use of all, and never idle. */
	assert_int_equal(open_handle(f->cache, c, STORAGE_POLICY_AUTO, &hc), 0);
	touch(f->cache, a, STORAGE_POLICY_AUTO);		/* mapped list */
	t_a = file_cache_clock_ms();			/* a idle since <= t_a */
	sleep_ms(30);
	t_b = file_cache_clock_ms();			/* b idle since >= t_b */
	touch(f->cache, b, STORAGE_POLICY_PREAD);	/* unmapped list */
	t_b_done = file_cache_clock_ms();
	assert_true(t_b >= t_a + 30);

	/* Idle at most 10 ms at t_b + 10: b stays; a (>= 40 ms) goes. */
	file_cache_sweep(f->cache, t_b + 10);
	assert_int_equal(counters(f->cache).evictions_idle, 1);
	assert_false(is_cached(f->cache, a));
	assert_true(is_cached(f->cache, b));
	assert_true(is_cached(f->cache, c));
	file_cache_sweep(f->cache, t_b + 10);
	assert_int_equal(counters(f->cache).evictions_idle, 1);
	/* A now before the entries' last use drops nothing. */
	file_cache_sweep(f->cache, 0);
	assert_int_equal(counters(f->cache).evictions_idle, 1);

	file_cache_sweep(f->cache, t_b_done + 11);
	assert_int_equal(counters(f->cache).evictions_idle, 2);
	assert_false(is_cached(f->cache, b));
	assert_true(is_cached(f->cache, c));		/* a reader: never */
	assert_int_equal(stat_of(&hc).mapped_length, size);
	assert_int_equal(counters(f->cache).entries, 1);

	/* 0: never. */
	file_cache_close(f->cache, &hc);
	set_limits(f->cache, 0, 0, 0);
	file_cache_sweep(f->cache, UINT64_MAX);
	assert_int_equal(counters(f->cache).entries, 1);
	set_limits(f->cache, 0, 0, 10);
	file_cache_sweep(f->cache, UINT64_MAX);
	assert_int_equal(counters(f->cache).entries, 0);
	assert_int_equal(counters(f->cache).mappings, 0);
	assert_int_equal(counters(f->cache).evictions_idle, 3);
	assert_int_equal(counters(f->cache).evictions_lru, 0);
}

/* Lowered limits apply at once, as far as readers allow. */
static void test_set_limits_evicts_at_once(void **state)
{
	struct fixture *f = *state;
	size_t size = 2 * ps;
	const char *a = make_file("low-a", size, 81);
	const char *b = make_file("low-b", size, 82);
	const char *c = make_file("low-c", size, 83);
	const char *h = make_file("low-h", size, 84);
	int ref = open_or_die(h, O_RDONLY);
	struct storage_handle hh;
	struct storage_limits l = { 0 };
	struct storage_counters c0;

	assert_int_equal(open_handle(f->cache, h, STORAGE_POLICY_AUTO, &hh), 0);
	touch(f->cache, a, STORAGE_POLICY_AUTO);
	touch(f->cache, b, STORAGE_POLICY_AUTO);
	touch(f->cache, c, STORAGE_POLICY_AUTO);
	assert_int_equal(counters(f->cache).mapped_bytes, 4 * size);

	l.max_mapped_bytes = 2 * size;
	file_cache_set_limits(f->cache, &l);
	c0 = counters(f->cache);
	assert_int_equal(c0.evictions_lru, 2);
	assert_int_equal(c0.mapped_bytes, 2 * size);
	assert_false(is_cached(f->cache, a));
	assert_false(is_cached(f->cache, b));
	assert_true(is_cached(f->cache, c));

	l.max_files = 1;
	file_cache_set_limits(f->cache, &l);
	assert_int_equal(counters(f->cache).evictions_lru, 3);
	assert_false(is_cached(f->cache, c));
	assert_true(is_cached(f->cache, h));

	/* Below what the reader holds: it keeps its mapping. */
	l.max_mapped_bytes = 1;
	file_cache_set_limits(f->cache, &l);
	c0 = counters(f->cache);
	assert_int_equal(c0.evictions_lru, 3);
	assert_int_equal(c0.mapped_bytes, size);
	assert_int_equal(mapped_length_of(f->cache, h), size);
	check_read(f->cache, &hh, ref, 3, size);
	assert_int_equal(counters(f->cache).bytes_mmap - c0.bytes_mmap, size - 3);

	/* Raised again before it closes: it stays. */
	l = (struct storage_limits){ 0 };
	file_cache_set_limits(f->cache, &l);
	file_cache_close(f->cache, &hh);
	assert_int_equal(counters(f->cache).entries, 1);
	assert_int_equal(counters(f->cache).evictions_lru, 3);
	close(ref);
}

static void test_budget_counters_reset(void **state)
{
	struct fixture *f = *state;
	size_t size = ps + 9;
	const char *a = make_file("rst-a", size, 91);
	const char *b = make_file("rst-b", size, 92);
	const char *c = make_file("rst-c", size, 93);
	struct storage_handle ha, hb, hc;
	struct storage_evicted ev;
	struct storage_counters c0, c1;

	set_limits(f->cache, size, 1, 5);
	touch(f->cache, a, STORAGE_POLICY_AUTO);
	touch(f->cache, b, STORAGE_POLICY_AUTO);		/* a goes (lru) */
	assert_int_equal(open_handle(f->cache, b, STORAGE_POLICY_AUTO, &hb), 0);
	assert_int_equal(open_handle(f->cache, c, STORAGE_POLICY_AUTO, &hc), 0);	/* over both */
	expect_backend(&hc, STORAGE_BACKEND_PREAD, STORAGE_REASON_OVER_BUDGET);
	assert_int_equal(open_handle(f->cache, a, STORAGE_POLICY_MMAP, &ha), 0);	/* honoured */
	file_cache_close(f->cache, &hc);
	file_cache_close(f->cache, &ha);
	file_cache_close(f->cache, &hb);
	file_cache_sweep(f->cache, UINT64_MAX);		/* b goes (idle) */
	touch(f->cache, c, STORAGE_POLICY_AUTO);
	assert_int_equal(file_cache_evict(f->cache, true, 0, 0, &ev), 0);
	assert_int_equal(ev.files, 1);

	c0 = counters(f->cache);
	assert_int_equal(c0.evictions_lru, 1);
	assert_int_equal(c0.evictions_idle, 1);
	assert_int_equal(c0.evictions, 1);
	assert_int_equal(c0.budget_fallbacks, 1);
	assert_int_equal(c0.files_over_budget, 2);	/* c, then a */
	assert_int_equal(c0.mapped_over_budget, 1);
	assert_int_equal(c0.entries, 0);

	/* State survives a reset; counters do not, nor do limits change. */
	assert_int_equal(open_handle(f->cache, a, STORAGE_POLICY_AUTO, &ha), 0);
	c0 = counters(f->cache);
	file_cache_reset_counters(f->cache);
	c1 = counters(f->cache);
	assert_int_equal(c1.evictions_lru, 0);
	assert_int_equal(c1.evictions_idle, 0);
	assert_int_equal(c1.evictions, 0);
	assert_int_equal(c1.budget_fallbacks, 0);
	assert_int_equal(c1.files_over_budget, 0);
	assert_int_equal(c1.mapped_over_budget, 0);
	assert_int_equal(c1.opens_by_reason[STORAGE_REASON_OVER_BUDGET], 0);
	assert_int_equal(c1.entries, c0.entries);
	assert_int_equal(c1.mappings, c0.mappings);
	assert_int_equal(c1.mapped_bytes, c0.mapped_bytes);
	assert_int_equal(c1.mapped_bytes, size);

	/* And they count on from zero. */
	assert_int_equal(open_handle(f->cache, b, STORAGE_POLICY_AUTO, &hb), 0);
	expect_backend(&hb, STORAGE_BACKEND_PREAD, STORAGE_REASON_OVER_BUDGET);
	assert_int_equal(counters(f->cache).budget_fallbacks, 1);
	assert_int_equal(counters(f->cache).files_over_budget, 1);
	file_cache_close(f->cache, &hb);
	file_cache_close(f->cache, &ha);
}

/* network_fs_mmap: AUTO may map network files; open handles keep theirs. */
static void test_network_fs_mmap_limit(void **state)
{
	struct fixture *f = *state;
	size_t size = 2 * ps + 5;
	const char *p = make_file("netmap", size, 95);
	int ref = open_or_die(p, O_RDONLY);
	struct storage_limits l = { .network_fs_mmap = true };
	struct storage_handle h1, h2, h3;
	struct storage_counters c0;

	wrap.fake_f_type = 0x6969;	/* NFS */
	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h1), 0);
	expect_backend(&h1, STORAGE_BACKEND_PREAD, STORAGE_REASON_NETWORK_FS);
	assert_int_equal(counters(f->cache).mappings, 0);

	file_cache_set_limits(f->cache, &l);
	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h2), 0);
	expect_backend(&h2, STORAGE_BACKEND_MMAP, STORAGE_REASON_NETWORK_FS);
	assert_ptr_equal(h2.entry, h1.entry);
	assert_int_equal(counters(f->cache).mappings, 1);
	c0 = counters(f->cache);
	check_read(f->cache, &h2, ref, 1, size);
	assert_int_equal(counters(f->cache).bytes_mmap - c0.bytes_mmap, size - 1);

	l.network_fs_mmap = false;
	file_cache_set_limits(f->cache, &l);
	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h3), 0);
	expect_backend(&h3, STORAGE_BACKEND_PREAD, STORAGE_REASON_NETWORK_FS);
	/* h1 and h2 keep what they were given at open. */
	expect_backend(&h1, STORAGE_BACKEND_PREAD, STORAGE_REASON_NETWORK_FS);
	c0 = counters(f->cache);
	check_read(f->cache, &h2, ref, 0, size);
	check_read(f->cache, &h1, ref, 0, size);
	assert_int_equal(counters(f->cache).bytes_mmap - c0.bytes_mmap, size);
	assert_int_equal(counters(f->cache).bytes_pread - c0.bytes_pread, size);
	file_cache_close(f->cache, &h1);
	file_cache_close(f->cache, &h2);
	file_cache_close(f->cache, &h3);
	close(ref);
}

static void test_listing_resident_bytes(void **state)
{
	struct fixture *f = *state;
	size_t size = 3 * ps + 5;
	const char *p = make_file("resident", size, 97);
	int ref = open_or_die(p, O_RDONLY);
	struct storage_handle h;
	struct storage_entry_info info;

	assert_int_equal(open_handle(f->cache, p, STORAGE_POLICY_AUTO, &h), 0);
	/* Just written and read whole: every page is in memory. */
	assert_int_equal(check_read(f->cache, &h, ref, 0, size), size);
	assert_true(cached_entry(f->cache, p, &info));
	assert_int_equal(info.resident_pct, 100);
	assert_int_equal(info.resident_bytes, size);	/* not 4 whole pages */
	assert_int_equal(info.mapped_length, size);
	file_cache_close(f->cache, &h);
	close(ref);
}

static bool count_entry(const struct storage_entry_info *info, void *arg)
{
	(void)info;
	(*(unsigned *)arg)++;
	return true;
}

/*
 * Allocation failure at every point of a cache's life: made, 40 files
 * opened (enough to grow its table), read, listed, one evicted, closed,
 * freed.  With the n-th allocation and all later ones failing, for every
 * n until a run needs no failure: each call either works or says ENOMEM
 * (NULL from file_cache_new), consumes its descriptor, reads nothing
 * wrong, and leaks nothing (AddressSanitizer's leak check, in CI, fails
 * the run otherwise).
 */
static void test_allocation_failures(void **state)
{
	enum { NFILES = 40 };
	const char *paths[NFILES];
	unsigned char buf[256], ref[256];
	unsigned runs = 0, enomem = 0;
	long n;
	int i;

	(void)state;
	for (i = 0; i < NFILES; i++) {
		char name[32];

		snprintf(name, sizeof name, "alloc-%d", i);
		paths[i] = strdup(make_file(name, 3 * ps + (size_t)i, 60u + (unsigned)i));
		assert_non_null(paths[i]);
	}
	for (n = 0; ; n++) {
		struct storage_handle h[NFILES];
		struct storage_evicted ev;
		struct file_cache *c;
		unsigned listed = 0;
		bool opened[NFILES];
		int fd;

		runs++;
		alloc_failures = 0;
		alloc_fail_after = n;
		c = file_cache_new();
		if (c == NULL) {
			alloc_fail_after = -1;
			assert_true(alloc_failures > 0);
			continue;
		}
		for (i = 0; i < NFILES; i++) {
			int r;

			fd = open(paths[i], O_RDONLY | O_CLOEXEC);
			assert_true(fd >= 0);
			r = file_cache_open(c, fd, STORAGE_POLICY_AUTO, &h[i], NULL, 0);
			opened[i] = r == 0;
			if (r != 0) {
				assert_int_equal(r, -ENOMEM);
				enomem++;
			}
			/* consumed either way: kept by the entry or closed */
			if (!opened[i])
				assert_true(fd_is_closed(fd));
		}
		for (i = 0; i < NFILES; i++) {
			ssize_t r;
			int ref_fd;

			if (!opened[i])
				continue;
			r = worker_read(c, &h[i], buf, sizeof buf, ps - 7);
			ref_fd = open_or_die(paths[i], O_RDONLY);
			assert_int_equal(pread(ref_fd, ref, sizeof ref, ps - 7), (ssize_t)sizeof ref);
			close(ref_fd);
			assert_int_equal(r, (ssize_t)sizeof buf);
			assert_memory_equal(buf, ref, sizeof buf);
		}
		file_cache_foreach(c, 0, count_entry, &listed);
		for (i = 0; i < NFILES; i++)
			if (opened[i])
				file_cache_close(c, &h[i]);
		(void)file_cache_evict(c, true, 0, 0, &ev);
		alloc_fail_after = -1;
		file_cache_free(c);
		if (alloc_failures == 0)
			break;	/* nothing failed: every allocation point was tried */
	}
	print_message("# %u runs; %u opens refused with ENOMEM\n", runs, enomem);
	/* the cache, its table, the entries and their growth all allocate */
	assert_true(runs > NFILES);
	assert_true(enomem > 0);
	for (i = 0; i < NFILES; i++)
		free((void *)paths[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_names),
		T(test_allocation_failures),
		T(test_auto_local_file_is_mmap),
		T(test_pipe_is_pread_not_regular),
		T(test_char_device_is_pread),
		T(test_empty_file),
		T(test_block_reads),
		T(test_mmap_failure_falls_back),
		T(test_mmap_required_mmap_failure),
		T(test_network_fs_is_pread),
		T(test_pseudo_fs_is_pread),
		T(test_fstatfs_failure_fails_open),
		T(test_policy_pread_forced),
		T(test_refuses_unreadable_descriptors),
		T(test_entry_reuse),
		T(test_capture_pread_on_mapped_entry),
		T(test_capture_mmap_after_pread),
		T(test_stale_entry_replaced_while_old_handle_reads),
		T(test_stale_same_size_rewrite),
		T(test_rename_replacement),
		T(test_unlinked_file_not_kept),
		T(test_hash_table_many_entries),
		T(test_truncated_file_old_handle),
		T(test_extension_past_mapping),
		T(test_nowait_straddle_not_short),
		T(test_rewrite_in_place_visible),
		T(test_offset_overflow),
		T(test_procfs_read_in_full),
		T(test_storage_stat),
		T(test_free_with_open_handles),
		T(test_guard_install),
		T(test_guard_copy_faults),
		T(test_guard_copy_threads),
		T(test_guard_copy_dst_faults),
		T(test_sigbus_outside_guard_kills),
		T(test_sigbus_not_from_an_access_kills),
		T(test_sigbus_recovery_in_read),
		T(test_budget_defaults),
		T(test_budget_lru_order),
		T(test_budget_readers_keep_mappings),
		T(test_budget_mmap_required_honoured),
		T(test_budget_max_files),
		T(test_idle_sweep),
		T(test_set_limits_evicts_at_once),
		T(test_budget_counters_reset),
		T(test_network_fs_mmap_limit),
		T(test_listing_resident_bytes),
#undef T
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
