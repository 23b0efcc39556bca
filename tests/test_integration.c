/* SPDX-License-Identifier: MIT */
/*
 * test_integration.c - libhotmap against a real hotmapd (tests/harness.h):
 * what a user of the library sees, checked byte for byte against pread(2)
 * on the same file.
 *
 * Every test gets a daemon of its own on a private socket (setup and
 * teardown), so that a test's statistics and log are its own and a daemon
 * that a test kills or confuses cannot spoil the next one.  Teardown
 * asserts that the daemon exits 0 on SIGTERM and removes its socket.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/harness.h"

#define KiB (1024u)
#define MiB (1024u * 1024u)

/* The sizes the brief of the read contract names: empty, one byte, around
 * a page, around the daemon's frame (1 MiB) and one much larger than a
 * reply chunk (256 KiB) or a frame. */
#define SIZE_1M		((uint64_t)MiB + 13)
#define SIZE_64M	((uint64_t)64 * MiB + 4093)

static const struct harness_opts opts_default = { .backend = NULL };
static const struct harness_opts opts_root = { .with_root = true };
static const struct harness_opts opts_pread = { .backend = "pread" };
static const struct harness_opts opts_mmap = { .backend = "mmap" };

static int
setup(void **state)
{
	*state = harness_start(*state);
	return 0;
}

static int
teardown(void **state)
{
	harness_free_buffers();
	harness_stop(*state);
	return 0;
}

static int
open_ref(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		fail_msg("open %s: %s", path, strerror(errno));
	return fd;
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
expect_open_fails(hm_client *c, const char *path, int flags, int err)
{
	hm_file *f;

	errno = 0;
	f = hm_open(c, path, flags);
	if (f != NULL) {
		hm_close(f);
		fail_msg("hm_open(%s, 0x%x) succeeded; want %s", path, flags, strerror(err));
	}
	if (errno != err)
		fail_msg("hm_open(%s, 0x%x): %s (\"%s\"); want %s", path, flags, strerror(errno),
			 hm_last_error(), strerror(err));
}

static struct hm_stat
stat_ok(hm_file *f)
{
	struct hm_stat st;

	if (hm_stat(f, &st) < 0)
		fail_msg("hm_stat: %s (\"%s\")", strerror(errno), hm_last_error());
	return st;
}

static void
expect_backend(hm_file *f, int backend, int reason)
{
	struct hm_stat st = stat_ok(f);

	if (st.backend != backend || st.reason != reason)
		fail_msg("backend %d reason %d (\"%s\"); want backend %d reason %d", st.backend,
			 st.reason, st.reason_text, backend, reason);
}

static void
close_ok(hm_file *f)
{
	if (hm_close(f) < 0)
		fail_msg("hm_close: %s (\"%s\")", strerror(errno), hm_last_error());
}

/* A client that has nothing to do with what a test did before: it must be
 * served, byte for byte. */
static void
check_still_serving(const struct harness *h)
{
	char path[PATH_MAX];
	hm_client *c;
	hm_file *f;
	int fd;

	harness_path(h, "root/still-serving", path);
	if (access(path, F_OK) < 0)
		harness_write_file(path, 300 * KiB + 1, 99);
	c = harness_connect(h);
	f = open_ok(c, path, 0);
	fd = open_ref(path);
	assert_int_equal(harness_check_read(f, fd, 0, 400 * KiB), 300 * KiB + 1);
	assert_int_equal(harness_check_read(f, fd, 123, 4567), 4567);
	assert_int_equal(hm_ping(c, NULL), 0);
	close_ok(f);
	close(fd);
	hm_disconnect(c);
}

static void
expect_log(const struct harness *h, size_t mark, const char *needle, const char *needle2)
{
	char *log;

	if (harness_log_find(h, mark, needle, needle2))
		return;
	log = harness_log_read(h);
	fail_msg("hotmapd.log has no new line with \"%s\"%s%s%s:\n%s", needle,
		 needle2 != NULL ? " and \"" : "", needle2 != NULL ? needle2 : "",
		 needle2 != NULL ? "\"" : "", log + (mark < strlen(log) ? mark : strlen(log)));
}

/* "client pid N uid": how the daemon names a client in its log. */
static void
client_name(pid_t pid, char *out, size_t len)
{
	snprintf(out, len, "client pid %ld uid", (long)pid);
}

/* --- random ranges ---------------------------------------------------------- */

struct range {
	uint64_t offset;
	size_t len;
};

/* A length up to maxlen, most of them small: many ranges, few bytes. */
static size_t
random_len(uint64_t *rs, size_t maxlen)
{
	uint64_t r = harness_rand(rs);
	size_t cap = r % 10 < 5 ? 17 : r % 10 < 8 ? 64 * KiB : maxlen;

	if (cap > maxlen)
		cap = maxlen;
	return (size_t)(harness_rand(rs) % (cap + 1));
}

static struct range
random_range(uint64_t *rs, uint64_t size, size_t maxlen)
{
	uint64_t kind = harness_rand(rs) % 12;
	struct range r = { 0, random_len(rs, maxlen) };

	switch (kind) {
	case 0:		/* zero length, anywhere */
		r.len = 0;
		r.offset = harness_rand(rs) % (size + 2 * 4096);
		break;
	case 1:		/* exactly at the end of the file */
		r.offset = size;
		break;
	case 2:		/* past it */
		r.offset = size + 1 + harness_rand(rs) % (1ull << 32);
		break;
	case 3:		/* straddling it */
		if (size > 0) {
			uint64_t back = 1 + harness_rand(rs) % (size < maxlen / 2 ? size : maxlen / 2);

			r.offset = size - back;
			r.len = (size_t)back + 1 + (size_t)(harness_rand(rs) % (maxlen - back));
		}
		break;
	case 4:		/* huge, but offset + len still fits in off_t */
		if (harness_rand(rs) % 2)
			r.offset = (1ull << (33 + harness_rand(rs) % 29)) + harness_rand(rs) % 4096;
		else
			r.offset = (uint64_t)INT64_MAX - r.len - harness_rand(rs) % 3;
		break;
	default:	/* inside */
		r.offset = harness_rand(rs) % (size + 1);
		break;
	}
	return r;
}

/* Ranges the frame (1 MiB) and chunk (256 KiB) sizes cut in odd places. */
static const struct range big_ranges[] = {
	{ 0, 64 * MiB + 8192 },			/* the whole file in one read */
	{ 1, 3 * MiB + 5 },
	{ 256 * KiB - 1, MiB + 2 },
	{ MiB - 7, 256 * KiB + 14 },
	{ 7 * MiB + 3, 6 * MiB - 1 },
	{ 40 * MiB, 8 * MiB },
	{ SIZE_64M - 3 * MiB - 11, 5 * MiB },	/* straddling the end */
	{ SIZE_64M - 1, MiB },
	{ SIZE_64M, 2 * MiB },
};

static void
expect_auto_backend(hm_file *f, uint64_t size, int flags)
{
	if (flags & HM_O_PREAD)
		expect_backend(f, HM_BACKEND_PREAD, HM_REASON_FORCED);
	else if (flags & HM_O_MMAP)
		expect_backend(f, HM_BACKEND_MMAP, HM_REASON_FORCED);
	else if (size == 0)
		expect_backend(f, HM_BACKEND_PREAD, HM_REASON_EMPTY);
	else
		expect_backend(f, HM_BACKEND_MMAP, HM_REASON_LOCAL_FILE);
}

/* HM_O_DIRECT: through the direct tier, on a client that asks for it
 * (connect_for); the others through the daemon's tiers. */
static const int read_flags[] = { 0, HM_O_MMAP, HM_O_PREAD, HM_O_PATH, HM_O_DIRECT };

/* A client for reads with flags: with HM_O_DIRECT, one that reads granted
 * files directly from the first read. */
static hm_client *
connect_for(const struct harness *h, int flags)
{
	struct hm_options o = HM_OPTIONS_INIT;
	hm_client *c;

	if (!(flags & HM_O_DIRECT))
		return harness_connect(h);
	o.direct = 1;
	o.direct_after = 0;
	o.shm_size = 16 * MiB;	/* the slots live in the region */
	c = hm_connect_opts(h->sock, &o);
	if (c == NULL)
		fail_msg("hm_connect_opts: %s", strerror(errno));
	return c;
}

static void
random_ranges(const struct harness *h, uint64_t size, unsigned count, size_t maxlen, bool big)
{
	char path[PATH_MAX], name[64];
	uint64_t rs = 0x9e3779b97f4a7c15ull ^ size;
	size_t i, k;
	int fd;

	snprintf(name, sizeof name, "root/file-%llu", (unsigned long long)size);
	harness_path(h, name, path);
	harness_write_file(path, size, size);
	fd = open_ref(path);
	for (k = 0; k < sizeof read_flags / sizeof read_flags[0]; k++) {
		int flags = read_flags[k];
		hm_client *c = connect_for(h, flags);
		hm_file *f;

		if ((flags & HM_O_MMAP) && size == 0) {
			expect_open_fails(c, path, flags, EINVAL);
			continue;
		}
		f = open_ok(c, path, flags);
		expect_auto_backend(f, size, flags);
		assert_int_equal(stat_ok(f).size, size);
		assert_int_equal(harness_check_read(f, fd, 0, (size_t)size + 1), (ssize_t)size);
		for (i = 0; big && i < sizeof big_ranges / sizeof big_ranges[0]; i++)
			harness_check_read(f, fd, big_ranges[i].offset, big_ranges[i].len);
		for (i = 0; i < count; i++) {
			struct range r = random_range(&rs, size, maxlen);

			harness_check_read(f, fd, r.offset, r.len);
		}
		close_ok(f);
		hm_disconnect(c);
	}
	close(fd);
	unlink(path);
}

static void
test_random_ranges_small(void **state)
{
	static const uint64_t sizes[] = { 0, 1, 4095, 4096, 4097 };
	size_t i;

	for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		random_ranges(*state, sizes[i], 600, (size_t)sizes[i] + 4100, false);
	random_ranges(*state, SIZE_1M, 400, 2 * MiB + 1, false);
}

static void
test_random_ranges_64m(void **state)
{
	random_ranges(*state, SIZE_64M, 40, 8 * MiB, true);
}

/* --- backends and why ------------------------------------------------------- */

static void
test_stat_backends(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX], empty[PATH_MAX], fifo[PATH_MAX], missing[PATH_MAX], line[64];
	hm_client *c = harness_connect(h);
	struct hm_stat st;
	struct stat sb;
	uint8_t *buf;
	hm_file *f, *g;
	ssize_t n;
	int fd;

	/* A regular file: mapped, and fstat's identity. */
	harness_path(h, "root/regular", path);
	harness_write_file(path, 10000, 1);
	f = open_ok(c, path, 0);
	st = stat_ok(f);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(st.backend, HM_BACKEND_MMAP);
	assert_int_equal(st.reason, HM_REASON_LOCAL_FILE);
	assert_true(st.reason_text[0] != '\0');
	assert_int_equal(st.size, 10000);
	assert_int_equal(st.dev, sb.st_dev);
	assert_int_equal(st.ino, sb.st_ino);
	assert_int_equal(st.mode, sb.st_mode);
	assert_int_equal(st.mtime_ns, (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec);
	assert_int_equal(st.mapped_length, 10000);
	assert_int_equal(st.handles, 1);
	/* The same file again: the same entry, two handles. */
	g = open_ok(c, path, HM_O_PREAD);
	expect_backend(g, HM_BACKEND_PREAD, HM_REASON_FORCED);
	assert_int_equal(stat_ok(f).handles, 2);
	close_ok(g);
	g = open_ok(c, path, HM_O_MMAP);
	expect_backend(g, HM_BACKEND_MMAP, HM_REASON_FORCED);
	close_ok(g);
	assert_int_equal(stat_ok(f).handles, 1);
	close_ok(f);

	/* Empty: nothing to map. */
	harness_path(h, "root/empty", empty);
	harness_write_file(empty, 0, 0);
	f = open_ok(c, empty, 0);
	expect_backend(f, HM_BACKEND_PREAD, HM_REASON_EMPTY);
	assert_int_equal(stat_ok(f).mapped_length, 0);
	fd = open_ref(empty);
	assert_int_equal(harness_check_read(f, fd, 0, 100), 0);
	close(fd);
	close_ok(f);
	/* ... and a mapping required of it is an error that says why. */
	expect_open_fails(c, empty, HM_O_MMAP, EINVAL);
	assert_true(hm_last_error()[0] != '\0');

	/* procfs: st_size 0, but the content is all there. */
	f = open_ok(c, "/proc/version", 0);
	expect_backend(f, HM_BACKEND_PREAD, HM_REASON_PSEUDO_FS);
	fd = open_ref("/proc/version");
	n = harness_check_read(f, fd, 0, 64 * KiB);
	assert_true(n > 10);
	harness_check_read(f, fd, 5, 7);
	harness_check_read(f, fd, (uint64_t)n - 1, 10);
	harness_check_read(f, fd, (uint64_t)n, 10);
	close(fd);
	close_ok(f);
	expect_open_fails(c, "/proc/version", HM_O_MMAP, ENODEV);
	assert_true(hm_last_error()[0] != '\0');

	/* /proc/self is the opener: the daemon reads the status of this
	 * process, through the descriptor this process passed. */
	f = open_ok(c, "/proc/self/status", 0);
	expect_backend(f, HM_BACKEND_PREAD, HM_REASON_PSEUDO_FS);
	buf = calloc(1, 64 * KiB + 1);
	assert_non_null(buf);
	n = hm_pread(f, buf, 64 * KiB, 0);
	assert_true(n > 100);
	assert_true(n < 64 * KiB);
	assert_int_equal(buf[n - 1], '\n');
	assert_memory_equal(buf, "Name:", 5);
	snprintf(line, sizeof line, "\nPid:\t%ld\n", (long)getpid());
	if (strstr((char *)buf, line) == NULL)
		fail_msg("/proc/self/status through hotmapd has no \"%s\":\n%s", line + 1, buf);
	free(buf);
	close_ok(f);

	/* Devices read with pread: /dev/null ends at once, /dev/zero never. */
	f = open_ok(c, "/dev/null", 0);
	expect_backend(f, HM_BACKEND_PREAD, HM_REASON_NOT_REGULAR);
	fd = open_ref("/dev/null");
	assert_int_equal(harness_check_read(f, fd, 0, 4096), 0);
	close(fd);
	close_ok(f);
	f = open_ok(c, "/dev/zero", 0);
	expect_backend(f, HM_BACKEND_PREAD, HM_REASON_NOT_REGULAR);
	fd = open_ref("/dev/zero");
	assert_int_equal(harness_check_read(f, fd, 12345, 3 * MiB + 1), 3 * MiB + 1);
	close(fd);
	close_ok(f);

	/* A FIFO: pread on it is ESPIPE, and so is hm_pread. */
	harness_path(h, "root/fifo", fifo);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	f = open_ok(c, fifo, 0);
	expect_backend(f, HM_BACKEND_PREAD, HM_REASON_NOT_REGULAR);
	fd = open_ref(fifo);
	assert_int_equal(harness_check_read(f, fd, 0, 10), -1);
	errno = 0;
	assert_int_equal(hm_pread(f, line, 10, 0), -1);
	assert_int_equal(errno, ESPIPE);
	expect_open_fails(c, fifo, HM_O_MMAP, ENODEV);

	/* A directory cannot be read. */
	expect_open_fails(c, h->root, 0, EISDIR);

	/* Flags the library refuses before asking the daemon. */
	expect_open_fails(c, path, HM_O_MMAP | HM_O_PREAD, EINVAL);
	expect_open_fails(c, path, 0x100, EINVAL);
	/* The caller's own open fails first, with its errno. */
	harness_path(h, "root/no-such-file", missing);
	expect_open_fails(c, missing, 0, ENOENT);

	/* The connection survived all the refusals. */
	assert_int_equal(hm_ping(c, NULL), 0);

	/* Even a read of nothing is ESPIPE on a FIFO, as pread says. */
	assert_int_equal(harness_check_read(f, fd, 0, 0), -1);
	errno = 0;
	assert_int_equal(hm_pread(f, line, 0, 0), -1);
	assert_int_equal(errno, ESPIPE);
	close(fd);
	close_ok(f);
	hm_disconnect(c);
}

/* The daemon's --backend decides for opens that leave it to the daemon. */
static void
test_daemon_backend_pread(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX];
	hm_client *c = harness_connect(h);
	hm_file *f;
	int fd;

	harness_path(h, "root/file", path);
	harness_write_file(path, MiB + 1, 2);
	fd = open_ref(path);
	f = open_ok(c, path, 0);
	expect_backend(f, HM_BACKEND_PREAD, HM_REASON_FORCED);
	assert_int_equal(harness_check_read(f, fd, 100, 2 * MiB), MiB + 1 - 100);
	close_ok(f);
	f = open_ok(c, path, HM_O_MMAP);
	expect_backend(f, HM_BACKEND_MMAP, HM_REASON_FORCED);
	assert_int_equal(harness_check_read(f, fd, 100, 2 * MiB), MiB + 1 - 100);
	close_ok(f);
	close(fd);
	hm_disconnect(c);
}

static void
test_daemon_backend_mmap(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX];
	hm_client *c = harness_connect(h);
	hm_file *f;
	int fd;

	harness_path(h, "root/file", path);
	harness_write_file(path, MiB + 1, 3);
	fd = open_ref(path);
	f = open_ok(c, path, 0);
	expect_backend(f, HM_BACKEND_MMAP, HM_REASON_FORCED);
	assert_int_equal(harness_check_read(f, fd, 100, 2 * MiB), MiB + 1 - 100);
	close_ok(f);
	f = open_ok(c, path, HM_O_PREAD);
	expect_backend(f, HM_BACKEND_PREAD, HM_REASON_FORCED);
	assert_int_equal(harness_check_read(f, fd, 100, 2 * MiB), MiB + 1 - 100);
	close_ok(f);
	close(fd);
	hm_disconnect(c);
}

/* --- open by path ------------------------------------------------------------ */

static void
test_open_by_path_without_root(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX];
	hm_client *c = harness_connect(h);
	hm_file *f;

	harness_path(h, "root/file", path);
	harness_write_file(path, 5000, 4);
	expect_open_fails(c, path, HM_O_PATH, EACCES);
	assert_true(hm_last_error()[0] != '\0');
	/* By descriptor it is the caller's own file. */
	f = open_ok(c, path, 0);
	close_ok(f);
	hm_disconnect(c);
}

static void
make_symlink(const char *target, const char *link)
{
	if (symlink(target, link) < 0)
		fail_msg("symlink %s -> %s: %s", link, target, strerror(errno));
}

static void
test_open_by_path_beneath_root(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX], sub[PATH_MAX], outside[PATH_MAX], p[PATH_MAX];
	hm_client *c = harness_connect(h);
	hm_file *f;
	int fd, cwd, err;

	harness_path(h, "root/sub", sub);
	assert_int_equal(mkdir(sub, 0755), 0);
	harness_path(h, "root/sub/file", path);
	harness_write_file(path, 70000, 5);
	harness_path(h, "outside/secret", outside);
	harness_write_file(outside, 1000, 6);
	fd = open_ref(path);

	/* Allowed: beneath the root, through a symlink that stays there. */
	f = open_ok(c, path, HM_O_PATH);
	expect_backend(f, HM_BACKEND_MMAP, HM_REASON_LOCAL_FILE);
	assert_int_equal(harness_check_read(f, fd, 0, MiB), 70000);
	close_ok(f);
	f = open_ok(c, path, HM_O_PATH | HM_O_PREAD);
	expect_backend(f, HM_BACKEND_PREAD, HM_REASON_FORCED);
	assert_int_equal(harness_check_read(f, fd, 3, 69999), 69997);
	close_ok(f);
	harness_path(h, "root/link-in", p);
	make_symlink("sub/file", p);
	f = open_ok(c, p, HM_O_PATH);
	assert_int_equal(harness_check_read(f, fd, 0, MiB), 70000);
	close_ok(f);
	harness_path(h, "root/sub/../sub/./file", p);
	f = open_ok(c, p, HM_O_PATH);
	assert_int_equal(harness_check_read(f, fd, 0, MiB), 70000);
	close_ok(f);

	/* A relative path is the caller's: the library makes it absolute
	 * from this process's working directory, not the daemon's. */
	cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(cwd >= 0);
	assert_int_equal(chdir(h->root), 0);
	f = hm_open(c, "sub/file", HM_O_PATH);
	err = errno;
	assert_int_equal(fchdir(cwd), 0);
	close(cwd);
	if (f == NULL)
		fail_msg("hm_open(\"sub/file\", HM_O_PATH) from the root: %s (\"%s\")", strerror(err),
			 hm_last_error());
	assert_int_equal(harness_check_read(f, fd, 0, MiB), 70000);
	close_ok(f);
	close(fd);

	/* Refused: outside, by "..", through symlinks out, and a sibling
	 * whose name merely starts like the root. */
	expect_open_fails(c, outside, HM_O_PATH, EACCES);
	assert_true(hm_last_error()[0] != '\0');
	harness_path(h, "root/../outside/secret", p);
	expect_open_fails(c, p, HM_O_PATH, EACCES);
	harness_path(h, "root/sub/../../outside/secret", p);
	expect_open_fails(c, p, HM_O_PATH, EACCES);
	harness_path(h, "root/link-out-abs", p);
	make_symlink(outside, p);
	expect_open_fails(c, p, HM_O_PATH, EACCES);
	harness_path(h, "root/link-out-rel", p);
	make_symlink("../outside/secret", p);
	expect_open_fails(c, p, HM_O_PATH, EACCES);
	harness_path(h, "root/dir-out", p);
	make_symlink(h->outside, p);
	harness_path(h, "root/dir-out/secret", p);
	expect_open_fails(c, p, HM_O_PATH, EACCES);
	harness_path(h, "rootx", p);
	assert_int_equal(mkdir(p, 0755), 0);
	harness_path(h, "rootx/file", p);
	harness_write_file(p, 10, 7);
	expect_open_fails(c, p, HM_O_PATH, EACCES);
	/* By descriptor, the same files are the caller's to read. */
	f = open_ok(c, outside, 0);
	close_ok(f);

	harness_path(h, "root/sub/missing", p);
	expect_open_fails(c, p, HM_O_PATH, ENOENT);
	assert_int_equal(hm_ping(c, NULL), 0);
	hm_disconnect(c);
}

/* --- the contract while the file changes ---------------------------------- */

static const int change_flags[] = { 0, HM_O_MMAP, HM_O_PREAD, HM_O_PATH, HM_O_DIRECT };

static void
contract_truncate(const struct harness *h, hm_client *c, int flags)
{
	const uint64_t size0 = MiB + 3 * 4096 + 7;
	char path[PATH_MAX], name[64];
	uint64_t rs = 42;
	hm_file *f, *g;
	int fd, wfd, i;

	snprintf(name, sizeof name, "root/truncate-%x", flags);
	harness_path(h, name, path);
	harness_write_file(path, size0, 10);
	f = open_ok(c, path, flags);
	expect_auto_backend(f, size0, flags);
	fd = open_ref(path);
	assert_int_equal(harness_check_read(f, fd, 0, (size_t)size0 + 10), (ssize_t)size0);
	wfd = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(wfd >= 0);

	/* Shrunk inside the first pages: the mapping still spans the old
	 * length, the file does not. */
	assert_int_equal(ftruncate(wfd, 5000), 0);
	assert_int_equal(harness_check_read(f, fd, 0, (size_t)size0), 5000);
	assert_int_equal(harness_check_read(f, fd, 4096, 8192), 904);
	assert_int_equal(harness_check_read(f, fd, 4999, 10), 1);
	assert_int_equal(harness_check_read(f, fd, 5000, 10), 0);
	assert_int_equal(harness_check_read(f, fd, 5001, 10), 0);
	assert_int_equal(harness_check_read(f, fd, 600000, 4096), 0);
	assert_int_equal(harness_check_read(f, fd, size0 - 1, 1), 0);
	assert_int_equal(stat_ok(f).size, 5000);
	/* A new open sees the file as it is now. */
	g = open_ok(c, path, flags);
	assert_int_equal(harness_check_read(g, fd, 0, (size_t)size0), 5000);

	/* Emptied. */
	assert_int_equal(ftruncate(wfd, 0), 0);
	assert_int_equal(harness_check_read(f, fd, 0, 100), 0);
	assert_int_equal(harness_check_read(f, fd, 0, 0), 0);
	assert_int_equal(harness_check_read(g, fd, 0, 100), 0);

	/* And grown again, past the old length, with other bytes. */
	close(wfd);
	harness_rewrite(path, 0, 2 * MiB + 1, 11);
	assert_int_equal(harness_check_read(f, fd, 0, 3 * MiB), 2 * MiB + 1);
	assert_int_equal(harness_check_read(g, fd, 0, 3 * MiB), 2 * MiB + 1);
	for (i = 0; i < 100; i++) {
		struct range r = random_range(&rs, 2 * MiB + 1, MiB + 100);

		harness_check_read(i % 2 ? f : g, fd, r.offset, r.len);
	}
	close_ok(g);
	close_ok(f);
	close(fd);
}

static void
contract_extend(const struct harness *h, hm_client *c, int flags)
{
	const uint64_t size0 = 2 * 4096 + 1;
	char path[PATH_MAX], name[64];
	hm_file *f;
	int fd, wfd;

	snprintf(name, sizeof name, "root/extend-%x", flags);
	harness_path(h, name, path);
	harness_write_file(path, size0, 12);
	f = open_ok(c, path, flags);
	expect_auto_backend(f, size0, flags);
	fd = open_ref(path);
	assert_int_equal(harness_check_read(f, fd, 0, 3 * 4096), (ssize_t)size0);

	/* Appended: the new bytes lie past the mapping. */
	harness_rewrite(path, size0, 2 * MiB, 13);
	assert_int_equal(harness_check_read(f, fd, 0, 3 * MiB), (ssize_t)(size0 + 2 * MiB));
	assert_int_equal(harness_check_read(f, fd, 8000, MiB), MiB);
	assert_int_equal(harness_check_read(f, fd, size0 - 1, 2), 2);
	assert_int_equal(harness_check_read(f, fd, size0, 10), 10);
	assert_int_equal(harness_check_read(f, fd, size0 + 2 * MiB - 1, 10), 1);
	assert_int_equal(harness_check_read(f, fd, size0 + 2 * MiB, 10), 0);
	assert_int_equal(stat_ok(f).size, size0 + 2 * MiB);

	/* Extended by a hole: zeros, as pread reads them. */
	wfd = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(wfd >= 0);
	assert_int_equal(ftruncate(wfd, 5 * MiB + 3), 0);
	close(wfd);
	assert_int_equal(harness_check_read(f, fd, 2 * MiB, 4 * MiB), 3 * MiB + 3);
	assert_int_equal(harness_check_read(f, fd, 0, 6 * MiB), 5 * MiB + 3);
	close_ok(f);
	close(fd);
}

static void
contract_rewrite(const struct harness *h, hm_client *c, int flags)
{
	const uint64_t size = MiB + 13;
	char path[PATH_MAX], name[64];
	uint8_t before[64], after[64];
	hm_file *f;
	int fd;

	snprintf(name, sizeof name, "root/rewrite-%x", flags);
	harness_path(h, name, path);
	harness_write_file(path, size, 14);
	f = open_ok(c, path, flags);
	expect_auto_backend(f, size, flags);
	fd = open_ref(path);
	assert_int_equal(harness_check_read(f, fd, 0, 2 * MiB), (ssize_t)size);
	assert_int_equal(hm_pread(f, before, sizeof before, 5000), (ssize_t)sizeof before);

	harness_rewrite(path, 4000, 300000, 15);	/* inside */
	harness_rewrite(path, 0, 1, 16);		/* the first byte */
	harness_rewrite(path, size - 1, 1, 17);		/* the last */
	assert_int_equal(hm_pread(f, after, sizeof after, 5000), (ssize_t)sizeof after);
	assert_memory_not_equal(before, after, sizeof before);
	assert_int_equal(harness_check_read(f, fd, 0, 2 * MiB), (ssize_t)size);
	assert_int_equal(harness_check_read(f, fd, 3990, 300020), 300020);
	assert_int_equal(harness_check_read(f, fd, 0, 1), 1);
	assert_int_equal(harness_check_read(f, fd, size - 2, 5), 2);
	close_ok(f);
	close(fd);
}

static void
contract_rename(const struct harness *h, hm_client *c, int flags)
{
	char path[PATH_MAX], tmp[PATH_MAX], name[64];
	struct hm_stat st_old, st_new;
	hm_file *f, *g;
	int fd_old, fd_new;

	snprintf(name, sizeof name, "root/rename-%x", flags);
	harness_path(h, name, path);
	snprintf(name, sizeof name, "root/rename-%x.new", flags);
	harness_path(h, name, tmp);
	harness_write_file(path, 300000, 18);
	f = open_ok(c, path, flags);
	fd_old = open_ref(path);
	st_old = stat_ok(f);
	assert_int_equal(harness_check_read(f, fd_old, 0, MiB), 300000);

	harness_write_file(tmp, 700001, 19);
	assert_int_equal(rename(tmp, path), 0);
	/* The handle keeps the inode it opened, like a descriptor. */
	assert_int_equal(harness_check_read(f, fd_old, 0, MiB), 300000);
	assert_int_equal(harness_check_read(f, fd_old, 299990, 100), 10);
	assert_int_equal(stat_ok(f).ino, st_old.ino);
	/* A new open gets the new file. */
	g = open_ok(c, path, flags);
	fd_new = open_ref(path);
	st_new = stat_ok(g);
	assert_true(st_new.ino != st_old.ino);
	assert_int_equal(st_new.size, 700001);
	assert_int_equal(harness_check_read(g, fd_new, 0, MiB), 700001);
	assert_int_equal(harness_check_read(g, fd_new, 299990, 100), 100);

	/* Unlinked while open: still readable, as through a descriptor. */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(harness_check_read(f, fd_old, 0, MiB), 300000);
	assert_int_equal(harness_check_read(g, fd_new, 1, MiB), 700000);
	close_ok(g);
	close_ok(f);
	close(fd_new);
	close(fd_old);
}

static void
for_each_change_flag(void **state, void (*fn)(const struct harness *, hm_client *, int))
{
	size_t i;

	for (i = 0; i < sizeof change_flags / sizeof change_flags[0]; i++) {
		hm_client *c = connect_for(*state, change_flags[i]);
		uint64_t direct0 = harness_stat(c, "direct_reads");

		fn(*state, c, change_flags[i]);
		/* the direct pass did read directly, before the change */
		if (change_flags[i] & HM_O_DIRECT)
			assert_true(harness_stat(c, "direct_reads") > direct0);
		hm_disconnect(c);
	}
}

static void
test_contract_truncate(void **state)
{
	for_each_change_flag(state, contract_truncate);
}

static void
test_contract_extend(void **state)
{
	for_each_change_flag(state, contract_extend);
}

static void
test_contract_rewrite(void **state)
{
	for_each_change_flag(state, contract_rewrite);
}

static void
test_contract_rename(void **state)
{
	for_each_change_flag(state, contract_rename);
}

/* --- offsets at the edge of off_t ----------------------------------------- */

static void
test_offsets_extreme(void **state)
{
	static const struct {
		uint64_t offset;
		size_t len;
		bool einval;	/* what pread(2) says too */
	} cases[] = {
		{ UINT64_MAX, 1, true },
		{ UINT64_MAX, 0, true },
		{ UINT64_MAX - 4096, 4096, true },
		{ (uint64_t)INT64_MAX + 1, 0, true },
		{ (uint64_t)INT64_MAX + 1, 1, true },
		{ INT64_MAX, 1, true },
		{ INT64_MAX - 10, 11, true },
		{ 1, (size_t)INT64_MAX, true },
		{ INT64_MAX, 0, false },
		{ INT64_MAX - 10, 10, false },
		{ INT64_MAX - 4096, 4096, false },
		{ 1ull << 62, 4096, false },
		{ 1ull << 40, 1, false },
		{ 4097, 1, false },
		{ 4096, 4096, false },
	};
	static const int flags[] = { 0, HM_O_MMAP, HM_O_PREAD };
	struct harness *h = *state;
	char path[PATH_MAX];
	hm_client *c = harness_connect(h);
	uint8_t buf[8192];
	size_t i, k;
	int fd;

	harness_path(h, "root/file", path);
	harness_write_file(path, 4097, 20);
	fd = open_ref(path);
	for (k = 0; k < sizeof flags / sizeof flags[0]; k++) {
		hm_file *f = open_ok(c, path, flags[k]);

		for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
			ssize_t n;

			errno = 0;
			/* Lengths beyond the buffer are refused before a byte
			 * moves, so buf is big enough for every case. */
			n = hm_pread(f, buf, cases[i].len, cases[i].offset);
			if (cases[i].einval && !(n == -1 && errno == EINVAL))
				fail_msg("hm_pread(offset %llu, length %zu) = %zd (%s); want EINVAL",
					 (unsigned long long)cases[i].offset, cases[i].len, n,
					 strerror(errno));
			if (!cases[i].einval && n < 0)
				fail_msg("hm_pread(offset %llu, length %zu): %s",
					 (unsigned long long)cases[i].offset, cases[i].len,
					 strerror(errno));
			if (cases[i].len <= sizeof buf - HARNESS_SLACK)
				harness_check_read(f, fd, cases[i].offset, cases[i].len);
		}
		/* ssize_t cannot say how much a larger read read. */
		errno = 0;
		assert_int_equal(hm_pread(f, buf, (size_t)SSIZE_MAX + 1, 0), -1);
		assert_int_equal(errno, EINVAL);
		errno = 0;
		assert_int_equal(hm_pread(f, buf, SIZE_MAX, 0), -1);
		assert_int_equal(errno, EINVAL);
		/* The handle works on after the refusals. */
		assert_int_equal(harness_check_read(f, fd, 0, 5000), 4097);
		close_ok(f);
	}
	close(fd);
	hm_disconnect(c);
}

/* The daemon checks offsets itself: a client not using libhotmap gets an
 * ERROR, not a crash, an allocation of the length, or a hang. */

/* An ERROR message's body: errno err and some text. */
static void
wire_expect_error_body(const uint8_t *msg, size_t len, uint32_t id, int err)
{
	char text[512];
	uint64_t e;

	assert_int_equal(wire_get_varint(msg, len, 1, &e), 0);
	assert_int_equal(wire_get_string(msg, len, 2, text, sizeof text), 0);
	if ((int)e != err)
		fail_msg("request %u: ERROR %d (%s, \"%s\"), want %d (%s)", id, (int)e,
			 strerror((int)e), text, err, strerror(err));
	assert_true(text[0] != '\0');
}

static void
wire_expect_error(int fd, uint32_t id, int err)
{
	struct wire_header hdr;
	uint8_t msg[1024];
	int rc;

	rc = wire_recv(fd, &hdr, msg, sizeof msg, 10000);
	if (rc != 1)
		fail_msg("request %u: no reply (%d)", id, rc);
	if (hdr.type != WIRE_ERROR)
		fail_msg("request %u: reply of type %u, want ERROR (%d, %s)", id, hdr.type, err,
			 strerror(err));
	assert_int_equal(hdr.id, id);
	assert_int_equal(hdr.version, WIRE_VERSION);
	wire_expect_error_body(msg, hdr.length, id, err);
}

static void
wire_read_req(int fd, uint32_t id, uint64_t handle, uint64_t offset, uint64_t length)
{
	struct wire_msg m = { .n = 0 };

	wire_varint(&m, 1, handle);
	wire_varint(&m, 2, offset);
	wire_varint(&m, 3, length);
	assert_int_equal(wire_send_msg(fd, WIRE_READ, id, &m, -1), 0);
}

/* The reply to a READ that succeeds: the bytes it carried. */
static uint64_t
wire_expect_data(int fd, uint32_t id)
{
	struct wire_header hdr;
	uint8_t msg[1024];
	uint64_t raw = 0, total;

	for (;;) {
		assert_int_equal(wire_recv(fd, &hdr, msg, sizeof msg, 10000), 1);
		if (hdr.type != WIRE_READ_DATA)
			fail_msg("request %u: reply of type %u, want READ_DATA", id, hdr.type);
		assert_int_equal(hdr.id, id);
		raw += hdr.raw_length;
		if (!(hdr.flags & WIRE_FLAG_MORE))
			break;
		assert_true(hdr.raw_length > 0);
	}
	assert_int_equal(hdr.raw_length, 0);
	assert_int_equal(wire_get_varint(msg, hdr.length, 1, &total), 0);
	assert_int_equal(total, raw);
	return total;
}

static uint64_t
wire_open_fd(int fd, uint32_t id, const char *path, uint32_t policy)
{
	struct wire_msg m = { .n = 0 };
	struct wire_header hdr;
	uint8_t msg[1024];
	uint64_t handle;
	int file = open_ref(path);

	wire_string(&m, 2, path);
	wire_varint(&m, 3, policy);
	assert_int_equal(wire_send_msg(fd, WIRE_OPEN, id, &m, file), 0);
	close(file);
	assert_int_equal(wire_recv(fd, &hdr, msg, sizeof msg, 10000), 1);
	assert_int_equal(hdr.type, WIRE_OPEN_REPLY);
	assert_int_equal(hdr.id, id);
	assert_int_equal(wire_get_varint(msg, hdr.length, 1, &handle), 0);
	assert_true(handle != 0);
	return handle;
}

static void
test_wire_bounds(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX];
	struct wire_msg m = { .n = 0 };
	struct wire_header hdr;
	uint64_t handle;
	uint8_t msg[1024];
	int fd, file;

	harness_path(h, "root/file", path);
	harness_write_file(path, 3 * MiB + 1, 21);
	fd = wire_connect(h);
	wire_hello(fd);
	handle = wire_open_fd(fd, 2, path, 0);

	wire_read_req(fd, 10, handle, UINT64_MAX, 1);
	wire_expect_error(fd, 10, EINVAL);
	wire_read_req(fd, 11, handle, INT64_MAX, 1);
	wire_expect_error(fd, 11, EINVAL);
	wire_read_req(fd, 12, handle, (uint64_t)INT64_MAX + 1, 0);
	wire_expect_error(fd, 12, EINVAL);
	wire_read_req(fd, 13, handle, 1, UINT64_MAX);
	wire_expect_error(fd, 13, EINVAL);
	wire_read_req(fd, 14, handle, 0, (uint64_t)INT64_MAX + 1);
	wire_expect_error(fd, 14, EINVAL);
	wire_read_req(fd, 15, handle, INT64_MAX, 0);
	assert_int_equal(wire_expect_data(fd, 15), 0);
	wire_read_req(fd, 16, handle, 1ull << 62, 100);
	assert_int_equal(wire_expect_data(fd, 16), 0);
	/* A length far beyond the file streams what there is. */
	wire_read_req(fd, 17, handle, 5, (uint64_t)INT64_MAX - 5);
	assert_int_equal(wire_expect_data(fd, 17), 3 * MiB + 1 - 5);
	wire_read_req(fd, 18, handle, 0, 0);
	assert_int_equal(wire_expect_data(fd, 18), 0);

	/* Handles that are not there. */
	wire_read_req(fd, 20, handle + 1000, 0, 10);
	wire_expect_error(fd, 20, EBADF);
	wire_read_req(fd, 21, 0, 0, 10);
	wire_expect_error(fd, 21, EBADF);
	wire_varint(&m, 1, 12345);
	assert_int_equal(wire_send_msg(fd, WIRE_STAT, 22, &m, -1), 0);
	wire_expect_error(fd, 22, EBADF);
	assert_int_equal(wire_send_msg(fd, WIRE_CLOSE, 23, &m, -1), 0);
	wire_expect_error(fd, 23, EBADF);

	/* An OPEN by descriptor without one, and one with an unknown policy
	 * (its descriptor must not stay behind for the next OPEN). */
	m.n = 0;
	wire_string(&m, 2, "nothing-passed");
	assert_int_equal(wire_send_msg(fd, WIRE_OPEN, 24, &m, -1), 0);
	wire_expect_error(fd, 24, EBADF);
	m.n = 0;
	wire_string(&m, 2, path);
	wire_varint(&m, 3, 7);
	file = open_ref(path);
	assert_int_equal(wire_send_msg(fd, WIRE_OPEN, 25, &m, file), 0);
	close(file);
	wire_expect_error(fd, 25, EINVAL);
	m.n = 0;
	wire_string(&m, 2, "nothing-passed");
	assert_int_equal(wire_send_msg(fd, WIRE_OPEN, 26, &m, -1), 0);
	wire_expect_error(fd, 26, EBADF);

	/* Still the same healthy connection. */
	assert_int_equal(wire_send_msg(fd, WIRE_PING, 30, NULL, -1), 0);
	assert_int_equal(wire_recv(fd, &hdr, msg, sizeof msg, 10000), 1);
	assert_int_equal(hdr.type, WIRE_PING_REPLY);
	assert_int_equal(hdr.id, 30);
	wire_read_req(fd, 31, handle, 3 * MiB, 10);
	assert_int_equal(wire_expect_data(fd, 31), 1);
	close(fd);
	check_still_serving(h);
}

/* --- concurrency ------------------------------------------------------------ */

#define WORKERS		8
#define WORKER_READS	120

struct worker {
	const struct harness *h;
	hm_client *shared;	/* NULL: the worker connects its own */
	hm_file *shared_file;	/* a handle every worker reads, or NULL */
	const char *paths[2];
	int fds[2];
	uint64_t sizes[2];
	uint64_t seed;
	unsigned index;
	unsigned reads;
	char why[600];		/* the first failure; "" when none */
};

static void *
worker_run(void *arg)
{
	static const int flags[] = { 0, HM_O_MMAP, HM_O_PREAD };
	struct worker *w = arg;
	size_t cap = 2 * MiB + 1;
	uint8_t *buf = malloc(cap + HARNESS_SLACK), *ref = malloc(cap + HARNESS_SLACK);
	hm_client *c = w->shared;
	hm_file *f[2] = { NULL, NULL };
	uint64_t rs = w->seed;
	unsigned i, k;

	if (buf == NULL || ref == NULL) {
		snprintf(w->why, sizeof w->why, "worker %u: out of memory", w->index);
		goto out;
	}
	if (c == NULL && (c = hm_connect(w->h->sock)) == NULL) {
		snprintf(w->why, sizeof w->why, "worker %u: hm_connect: %s", w->index,
			 strerror(errno));
		goto out;
	}
	for (i = 0; i < WORKER_READS; i++) {
		struct hm_stat st = { .backend = 0 };
		struct range r;
		hm_file *rf;
		char why[512];

		k = (unsigned)(harness_rand(&rs) % 2);
		/* Reopen now and then: opens and closes interleave with
		 * other threads' reads on a shared client. */
		if (f[k] == NULL || harness_rand(&rs) % 16 == 0) {
			int fl = flags[(w->index + i) % 3];

			if (f[k] != NULL && hm_close(f[k]) < 0) {
				f[k] = NULL;
				snprintf(w->why, sizeof w->why, "worker %u: hm_close: %s", w->index,
					 strerror(errno));
				goto out;
			}
			f[k] = hm_open(c, w->paths[k], fl);
			if (f[k] == NULL) {
				snprintf(w->why, sizeof w->why, "worker %u: hm_open(%s, %d): %s (%s)",
					 w->index, w->paths[k], fl, strerror(errno), hm_last_error());
				goto out;
			}
			if (hm_stat(f[k], &st) < 0 ||
			    st.backend != (fl == HM_O_PREAD ? HM_BACKEND_PREAD : HM_BACKEND_MMAP)) {
				snprintf(w->why, sizeof w->why, "worker %u: hm_stat: %s, backend %d",
					 w->index, strerror(errno), st.backend);
				goto out;
			}
		}
		rf = f[k];
		if (w->shared_file != NULL && k == 1 && harness_rand(&rs) % 2) {
			rf = w->shared_file;
		}
		r = random_range(&rs, w->sizes[k], cap);
		if (harness_compare_read(rf, w->fds[k], r.offset, r.len, buf, ref, NULL, why,
					 sizeof why) < 0) {
			snprintf(w->why, sizeof w->why, "worker %u, read %u of %s: %s", w->index, i,
				 w->paths[k], why);
			goto out;
		}
		w->reads++;
	}
out:
	for (k = 0; k < 2; k++)
		if (f[k] != NULL)
			hm_close(f[k]);
	if (w->shared == NULL)
		hm_disconnect(c);
	free(buf);
	free(ref);
	return NULL;
}

static void
run_workers(struct harness *h, bool share)
{
	char small[PATH_MAX], big[PATH_MAX];
	struct worker w[WORKERS];
	pthread_t t[WORKERS];
	hm_client *shared = NULL, *c;
	hm_file *shared_file = NULL;
	unsigned i;
	int fds[2];

	harness_path(h, "root/small", small);
	harness_path(h, "root/big", big);
	harness_write_file(small, SIZE_1M, 30);
	harness_write_file(big, SIZE_64M, 31);
	fds[0] = open_ref(small);
	fds[1] = open_ref(big);
	if (share) {
		shared = harness_connect(h);
		shared_file = open_ok(shared, big, 0);
	}
	for (i = 0; i < WORKERS; i++) {
		w[i] = (struct worker){
			.h = h,
			.shared = shared,
			.shared_file = shared_file,
			.paths = { small, big },
			.fds = { fds[0], fds[1] },
			.sizes = { SIZE_1M, SIZE_64M },
			.seed = 0x1234567ull * (i + 1) + share,
			.index = i,
		};
		assert_int_equal(pthread_create(&t[i], NULL, worker_run, &w[i]), 0);
	}
	for (i = 0; i < WORKERS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	for (i = 0; i < WORKERS; i++)
		if (w[i].why[0] != '\0')
			fail_msg("%s", w[i].why);
	for (i = 0; i < WORKERS; i++)
		assert_int_equal(w[i].reads, WORKER_READS);
	if (share) {
		close_ok(shared_file);
		hm_disconnect(shared);
	}
	/* Every worker's handles are gone with it. */
	c = harness_connect(h);
	harness_wait_stat(c, "handles", 0);
	harness_wait_stat(c, "clients", 1);
	hm_disconnect(c);
	close(fds[0]);
	close(fds[1]);
}

static void
test_concurrent_clients(void **state)
{
	run_workers(*state, false);
}

static void
test_shared_client_threads(void **state)
{
	run_workers(*state, true);
}

/* --- clients that misbehave -------------------------------------------------- */

/* After a bad client: the daemon named it in a "disconnecting" line,
 * counted it, and serves everybody else. */
static void
expect_dropped(struct harness *h, size_t mark, uint64_t dropped_before)
{
	char name[64];
	hm_client *c;

	client_name(getpid(), name, sizeof name);
	expect_log(h, mark, name, "disconnecting");
	c = harness_connect(h);
	assert_int_equal(harness_stat(c, "clients_dropped"), dropped_before + 1);
	hm_disconnect(c);
	check_still_serving(h);
}

static uint64_t
dropped_now(const struct harness *h)
{
	hm_client *c = harness_connect(h);
	uint64_t v;

	/* The stats client itself must be gone before the next one counts. */
	v = harness_stat(c, "clients_dropped");
	hm_disconnect(c);
	return v;
}

static void
test_bad_client_garbage(void **state)
{
	struct harness *h = *state;
	uint8_t bytes[256];
	struct wire_header hdr;
	unsigned variant;
	int rc;

	for (variant = 0; variant < 5; variant++) {
		uint64_t dropped = dropped_now(h);
		size_t mark = harness_log_mark(h);
		int fd = wire_connect(h);

		switch (variant) {
		case 0:		/* noise, before any HELLO */
			harness_fill(bytes, sizeof bytes, 77, 0);
			assert_int_equal(wire_send_bytes(fd, bytes, sizeof bytes), 0);
			break;
		case 1:		/* a header of this version with an unknown type */
			hdr = (struct wire_header){ .length = 0, .type = 999, .version = WIRE_VERSION };
			assert_int_equal(wire_send(fd, &hdr, NULL, 0, -1), 0);
			break;
		case 2:		/* a HELLO whose body is not protobuf */
			memset(bytes, 0xff, 32);
			hdr = (struct wire_header){ .length = 32, .type = WIRE_HELLO,
						    .version = WIRE_VERSION, .id = 1 };
			assert_int_equal(wire_send(fd, &hdr, bytes, 32, -1), 0);
			break;
		case 3:		/* a reply type, sent by a client */
			wire_hello(fd);
			hdr = (struct wire_header){ .type = WIRE_PING_REPLY, .version = WIRE_VERSION,
						    .id = 2 };
			assert_int_equal(wire_send(fd, &hdr, NULL, 0, -1), 0);
			break;
		case 4:		/* raw bulk bytes on a request, after a good HELLO */
			wire_hello(fd);
			hdr = (struct wire_header){ .raw_length = 16, .type = WIRE_PING,
						    .version = WIRE_VERSION, .id = 2 };
			assert_int_equal(wire_send(fd, &hdr, NULL, 0, -1), 0);
			/* the daemon may hang up on the header alone, before
			 * these bytes arrive */
			rc = wire_send_bytes(fd, bytes, 16);
			assert_true(rc == 0 || rc == -EPIPE || rc == -ECONNRESET);
			break;
		}
		wire_expect_eof(fd, 10000);
		close(fd);
		expect_dropped(h, mark, dropped);
	}
}

static void
test_bad_client_oversized(void **state)
{
	struct harness *h = *state;
	struct wire_header hdr;
	unsigned variant;

	for (variant = 0; variant < 3; variant++) {
		uint64_t dropped = dropped_now(h);
		size_t mark = harness_log_mark(h);
		int fd = wire_connect(h);

		if (variant == 2)
			wire_hello(fd);
		/* Only the header: the daemon must judge it before waiting for
		 * (or allocating) the body. */
		hdr = (struct wire_header){
			.length = variant == 1 ? UINT32_MAX : WIRE_MAX_MESSAGE + 1,
			.type = WIRE_HELLO,
			.version = WIRE_VERSION,
			.id = 1,
		};
		assert_int_equal(wire_send(fd, &hdr, NULL, 0, -1), 0);
		wire_expect_eof(fd, 10000);
		close(fd);
		expect_dropped(h, mark, dropped);
	}
}

static void
test_bad_client_version(void **state)
{
	struct harness *h = *state;
	unsigned variant;

	for (variant = 0; variant < 2; variant++) {
		uint64_t dropped = dropped_now(h);
		size_t mark = harness_log_mark(h);
		struct wire_msg m = { .n = 0 };
		struct wire_header hdr;
		uint8_t msg[1024];
		int fd = wire_connect(h);

		wire_varint(&m, 1, 2);
		wire_varint(&m, 2, 3);
		hdr = (struct wire_header){
			.length = (uint32_t)m.n,
			.type = WIRE_HELLO,
			/* A frame of version 2; then a version-1 frame whose
			 * HELLO asks for version 2. */
			.version = variant == 0 ? 2 : WIRE_VERSION,
			.id = 77,
		};
		assert_int_equal(wire_send(fd, &hdr, m.b, m.n, -1), 0);
		/* The answer comes before the close. */
		assert_int_equal(wire_recv(fd, &hdr, msg, sizeof msg, 10000), 1);
		assert_int_equal(hdr.type, WIRE_ERROR);
		assert_int_equal(hdr.version, WIRE_VERSION);
		assert_int_equal(hdr.id, 77);
		wire_expect_error_body(msg, hdr.length, 77, EPROTONOSUPPORT);
		wire_expect_eof(fd, 10000);
		close(fd);
		expect_dropped(h, mark, dropped);
	}
}

static void
test_bad_client_before_hello(void **state)
{
	struct harness *h = *state;
	unsigned variant;

	for (variant = 0; variant < 2; variant++) {
		uint64_t dropped = dropped_now(h);
		size_t mark = harness_log_mark(h);
		int fd = wire_connect(h);

		if (variant == 0)
			assert_int_equal(wire_send_msg(fd, WIRE_PING, 5, NULL, -1), 0);
		else
			wire_read_req(fd, 5, 1, 0, 100);
		wire_expect_error(fd, 5, EPROTO);
		wire_expect_eof(fd, 10000);
		close(fd);
		expect_dropped(h, mark, dropped);
	}
}

static void
test_bad_client_truncated_frame(void **state)
{
	struct harness *h = *state;
	uint64_t dropped = dropped_now(h);
	size_t mark = harness_log_mark(h);
	struct wire_msg m = { .n = 0 };
	struct wire_header hdr;
	int fd = wire_connect(h);

	wire_hello(fd);
	wire_varint(&m, 1, 1);
	wire_varint(&m, 2, 0);
	wire_varint(&m, 3, 100);
	/* The header promises more than comes; then the client hangs up. */
	hdr = (struct wire_header){ .length = (uint32_t)m.n + 50, .type = WIRE_READ,
				    .version = WIRE_VERSION, .id = 2 };
	assert_int_equal(wire_send(fd, &hdr, m.b, m.n, -1), 0);
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	wire_expect_eof(fd, 10000);
	close(fd);
	expect_dropped(h, mark, dropped);
}

/* A client killed while the daemon streams a large reply to it. */
static void
test_client_killed_mid_read(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX], name[64], c1;
	hm_client *c;
	pid_t pid;
	int ready[2], status;
	size_t mark;

	harness_path(h, "root/big", path);
	harness_write_file(path, SIZE_64M, 40);
	mark = harness_log_mark(h);
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		hm_client *cc = hm_connect(h->sock);
		hm_file *f = cc != NULL ? hm_open(cc, path, 0) : NULL;
		uint8_t *buf = malloc(16 * MiB);
		unsigned i;

		close(ready[0]);
		if (f == NULL || buf == NULL)
			_exit(2);
		for (i = 0;; i++) {
			if (hm_pread(f, buf, 16 * MiB, (uint64_t)(i % 5) * 7 * MiB) != 16 * MiB)
				_exit(3);
			if (i == 0 && write(ready[1], "r", 1) != 1)
				_exit(4);
		}
	}
	close(ready[1]);
	if (read(ready[0], &c1, 1) != 1) {
		waitpid(pid, &status, 0);
		fail_msg("the reading child did not start (status 0x%x)", status);
	}
	close(ready[0]);
	harness_sleep_ms(20);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

	c = harness_connect(h);
	harness_wait_stat(c, "clients", 1);
	assert_int_equal(harness_stat(c, "handles"), 0);
	hm_disconnect(c);
	client_name(pid, name, sizeof name);
	expect_log(h, mark, name, "disconnect");
	check_still_serving(h);
}

/* Many requests, no reply read, then gone: the daemon must neither block
 * on this client nor keep what it queued for it. */
static void
test_pipelined_then_disconnect(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX];
	uint64_t handle;
	hm_client *c;
	unsigned sent = 0, i;
	int fd;

	harness_path(h, "root/big", path);
	harness_write_file(path, 16 * MiB + 1, 41);
	fd = wire_connect(h);
	wire_hello(fd);
	handle = wire_open_fd(fd, 2, path, 0);
	assert_int_equal(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
	for (i = 0; i < 20000; i++) {
		struct wire_msg m = { .n = 0 };
		int rc;

		wire_varint(&m, 1, handle);
		wire_varint(&m, 2, (uint64_t)(i % 16) * MiB);
		wire_varint(&m, 3, 4 * MiB);
		rc = wire_send_msg(fd, WIRE_READ, 100 + i, &m, -1);
		if (rc == -EAGAIN)
			break;
		assert_int_equal(rc, 0);
		sent++;
	}
	assert_true(sent > 100);
	/* Let the daemon fill its side before the hang-up. */
	harness_sleep_ms(50);
	close(fd);

	c = harness_connect(h);
	harness_wait_stat(c, "clients", 1);
	harness_wait_stat(c, "handles", 0);
	hm_disconnect(c);
	check_still_serving(h);

	/* The same again, half-closed: the daemon sees the end of the
	 * requests while its replies wait unread. */
	fd = wire_connect(h);
	wire_hello(fd);
	handle = wire_open_fd(fd, 2, path, 0);
	for (i = 0; i < 64; i++)
		wire_read_req(fd, 100 + i, handle, 0, 16 * MiB);
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	harness_sleep_ms(50);
	close(fd);
	c = harness_connect(h);
	harness_wait_stat(c, "clients", 1);
	harness_wait_stat(c, "handles", 0);
	hm_disconnect(c);
	check_still_serving(h);
}

/* A short-lived process's goodbye: hm_close does not wait for its reply,
 * so the connection is gone before the daemon answers.  That is no
 * misbehaviour: no "disconnecting" warning, no dropped client. */
static void
test_close_then_gone(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX];
	uint64_t dropped = dropped_now(h);
	size_t mark = harness_log_mark(h);
	int i;

	harness_path(h, "root/goodbye", path);
	harness_write_file(path, 64 * KiB, 43);
	for (i = 0; i < 50; i++) {
		hm_client *c = harness_connect(h);
		hm_file *f = hm_open(c, path, 0);

		assert_non_null(f);
		assert_int_equal(hm_close(f), 0);
		hm_disconnect(c);
	}
	check_still_serving(h);
	assert_int_equal(dropped_now(h), dropped);
	if (harness_log_find(h, mark, "disconnecting", NULL))
		fail_msg("a client that closed a file and left was logged as dropped:\n%s",
			 harness_log_read(h) + mark);
}

/* --- handles, the cache and the daemon's counters -------------------------- */

static void
test_disconnect_with_open_files(void **state)
{
	struct harness *h = *state;
	char a[PATH_MAX], b[PATH_MAX];
	hm_client *c1, *c2, *stats;
	hm_file *f;
	int fd;

	harness_path(h, "root/a", a);
	harness_path(h, "root/b", b);
	harness_write_file(a, 100000, 50);
	harness_write_file(b, 0, 0);
	stats = harness_connect(h);
	c1 = harness_connect(h);
	c2 = harness_connect(h);
	open_ok(c1, a, 0);
	open_ok(c1, a, HM_O_PREAD);
	open_ok(c1, b, 0);
	open_ok(c1, "/proc/version", 0);
	f = open_ok(c2, a, 0);
	assert_int_equal(harness_stat(stats, "handles"), 5);
	assert_int_equal(stat_ok(f).handles, 3);
	assert_int_equal(harness_stat(stats, "clients"), 3);

	hm_disconnect(c1);	/* four handles still open */
	harness_wait_stat(stats, "handles", 1);
	harness_wait_stat(stats, "clients", 2);
	assert_int_equal(stat_ok(f).handles, 1);
	fd = open_ref(a);
	assert_int_equal(harness_check_read(f, fd, 0, 200000), 100000);
	close(fd);
	hm_disconnect(c2);
	harness_wait_stat(stats, "handles", 0);
	harness_wait_stat(stats, "clients", 1);
	hm_disconnect(NULL);
	hm_disconnect(stats);
	check_still_serving(h);
}

static void
test_cache_shared(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX];
	hm_client *stats, *c1, *c2, *c3;
	hm_file *f1, *f2, *f3;
	uint64_t hits, misses;
	int fd;

	harness_path(h, "root/hot", path);
	harness_write_file(path, 3 * MiB + 5, 60);
	fd = open_ref(path);
	stats = harness_connect(h);
	c1 = harness_connect(h);
	c2 = harness_connect(h);
	assert_int_equal(harness_stat(stats, "mappings"), 0);
	hits = harness_stat(stats, "cache_hits");
	misses = harness_stat(stats, "cache_misses");

	f1 = open_ok(c1, path, 0);
	assert_int_equal(harness_stat(stats, "cache_misses"), misses + 1);
	assert_int_equal(harness_stat(stats, "cache_hits"), hits);
	assert_int_equal(harness_stat(stats, "mappings"), 1);
	f2 = open_ok(c2, path, 0);
	assert_int_equal(harness_stat(stats, "cache_hits"), hits + 1);
	assert_int_equal(harness_stat(stats, "cache_misses"), misses + 1);
	assert_int_equal(harness_stat(stats, "mappings"), 1);
	assert_int_equal(harness_stat(stats, "files"), 1);
	assert_int_equal(stat_ok(f1).handles, 2);
	assert_int_equal(stat_ok(f2).mapped_length, 3 * MiB + 5);
	assert_int_equal(harness_check_read(f1, fd, 0, 4 * MiB), 3 * MiB + 5);
	assert_int_equal(harness_check_read(f2, fd, 7, 4 * MiB), 3 * MiB - 2);

	/* Closed by both, the mapping stays for the next client. */
	close_ok(f1);
	close_ok(f2);
	hm_disconnect(c1);
	hm_disconnect(c2);
	harness_wait_stat(stats, "handles", 0);
	assert_int_equal(harness_stat(stats, "mappings"), 1);
	c3 = harness_connect(h);
	f3 = open_ok(c3, path, 0);
	assert_int_equal(harness_stat(stats, "cache_hits"), hits + 2);
	assert_int_equal(harness_stat(stats, "mappings"), 1);
	assert_int_equal(harness_check_read(f3, fd, 0, 4 * MiB), 3 * MiB + 5);
	assert_true(harness_stat(stats, "bytes_served") >= 3 * (3 * MiB - 2));
	close_ok(f3);
	hm_disconnect(c3);
	hm_disconnect(stats);
	close(fd);
}

/* The daemon vanishes under an open client: errors, never SIGPIPE. */
static void
test_daemon_killed(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX], go;
	int ready[2], resume[2], status;
	pid_t pid;

	harness_path(h, "root/file", path);
	harness_write_file(path, 2 * MiB, 70);
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	assert_int_equal(pipe2(resume, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* The library must not raise SIGPIPE: leave it deadly. */
		hm_client *c;
		hm_file *f;
		char buf[4096];
		struct hm_stat st;
		int e;

		signal(SIGPIPE, SIG_DFL);
		close(ready[0]);
		close(resume[1]);
		c = hm_connect(h->sock);
		f = c != NULL ? hm_open(c, path, 0) : NULL;
		if (f == NULL || hm_pread(f, buf, sizeof buf, 0) != (ssize_t)sizeof buf)
			_exit(10);
		if (write(ready[1], "r", 1) != 1 || read(resume[0], &go, 1) != 1)
			_exit(11);
		errno = 0;
		if (hm_pread(f, buf, sizeof buf, 0) != -1)
			_exit(12);
		e = errno;
		if (e != ECONNRESET && e != EPIPE)
			_exit(13);
		/* Broken for good, and every call says so. */
		if (hm_pread(f, buf, sizeof buf, 4096) != -1 || (errno != ECONNRESET && errno != EPIPE))
			_exit(14);
		if (hm_stat(f, &st) != -1 || hm_ping(c, NULL) != -1)
			_exit(15);
		if (hm_open(c, path, 0) != NULL)
			_exit(16);
		if (hm_close(f) != -1)
			_exit(17);
		hm_disconnect(c);
		_exit(0);
	}
	close(ready[1]);
	close(resume[0]);
	if (read(ready[0], &go, 1) != 1) {
		waitpid(pid, &status, 0);
		fail_msg("the client child failed before the kill (status 0x%x)", status);
	}
	harness_kill(h);
	assert_int_equal(write(resume[1], "g", 1), 1);
	close(ready[0]);
	close(resume[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		fail_msg("the client died of signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("the client child failed at step %d (see test_daemon_killed)",
			 WEXITSTATUS(status));
}

/* --- fcntl locks: hm_open_fd keeps them, hm_open drops them -------------- */

/*
 * Whether another process is refused a write lock on the whole of path
 * (F_SETLK F_WRLCK fails with EAGAIN): that is, whether this process
 * still holds its read lock.  POSIX locks are not inherited, so a forked
 * child is "another process".  Fails the test when the child cannot tell.
 */
static bool
lock_held_here(const char *path)
{
	int status;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int fd = open(path, O_RDWR | O_CLOEXEC);

		if (fd < 0)
			_exit(3);
		if (fcntl(fd, F_SETLK, &fl) == 0)
			_exit(1);	/* got it: nobody holds a lock */
		_exit(errno == EAGAIN ? 0 : 2);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) > 1)
		fail_msg("the lock prober failed (status 0x%x)", status);
	return WEXITSTATUS(status) == 0;
}

/* fd, read-locked whole (F_SETLK F_RDLCK), on path. */
static int
open_read_locked(const char *path)
{
	struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET };
	int fd = open_ref(path);

	assert_int_equal(fcntl(fd, F_SETLK, &fl), 0);
	assert_true(lock_held_here(path));
	return fd;
}

#define assert_lock_held(path, when) \
	do { \
		if (!lock_held_here(path)) \
			fail_msg("the read lock is gone %s", when); \
	} while (0)

/*
 * A process that holds a read lock (as SQLite's reader does) reads the
 * file through hm_open_fd: the lock holds after the open, the reads (byte
 * for byte as pread), hm_close and hm_disconnect, because the library
 * passes the caller's descriptor and never closes one of that file.  The
 * daemon does not move the descriptor's offset either.
 */
static void
test_open_fd_keeps_locks(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX];
	hm_client *c;
	hm_file *f;
	int fd, wfd, spare;

	harness_path(h, "root/locked", path);
	harness_write_file(path, SIZE_1M, 80);
	fd = open_read_locked(path);
	assert_int_equal(lseek(fd, 7, SEEK_SET), 7);
	c = harness_connect(h);

	f = hm_open_fd(c, fd, 0);
	if (f == NULL)
		fail_msg("hm_open_fd: %s (\"%s\")", strerror(errno), hm_last_error());
	assert_lock_held(path, "after hm_open_fd");
	assert_int_equal(harness_check_read(f, fd, 0, 100), 100);
	assert_int_equal(harness_check_read(f, fd, 4095, 70000), 70000);
	assert_int_equal(harness_check_read(f, fd, 0, 2 * MiB), SIZE_1M);
	assert_int_equal(harness_check_read(f, fd, SIZE_1M - 5, 4096), 5);
	assert_int_equal(stat_ok(f).size, SIZE_1M);
	assert_lock_held(path, "after reading through hm_open_fd");
	close_ok(f);
	assert_lock_held(path, "after hm_close");
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 7);

	/* HM_O_WARM is an hm_open flag like the others; HM_O_PATH is not */
	f = hm_open_fd(c, fd, HM_O_PREAD | HM_O_WARM);
	assert_non_null(f);
	expect_backend(f, HM_BACKEND_PREAD, HM_REASON_FORCED);
	assert_int_equal(harness_check_read(f, fd, 12345, 6789), 6789);
	close_ok(f);
	errno = 0;
	assert_null(hm_open_fd(c, fd, HM_O_PATH));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(hm_open_fd(c, fd, HM_O_MMAP | HM_O_PREAD));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(hm_open_fd(NULL, fd, 0));
	assert_int_equal(errno, EINVAL);
	/* bad descriptors fail the open, not the connection */
	errno = 0;
	assert_null(hm_open_fd(c, -1, 0));
	assert_int_equal(errno, EBADF);
	spare = open("/dev/null", O_RDONLY | O_CLOEXEC);	/* a number, closed */
	assert_true(spare >= 0);
	close(spare);
	errno = 0;
	assert_null(hm_open_fd(c, spare, 0));
	assert_int_equal(errno, EBADF);
	wfd = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(wfd >= 0);
	errno = 0;
	assert_null(hm_open_fd(c, wfd, 0));
	assert_int_equal(errno, EBADF);
	assert_lock_held(path, "after the refused opens");
	assert_int_equal(hm_ping(c, NULL), 0);
	hm_disconnect(c);
	assert_lock_held(path, "after hm_disconnect");
	close(fd);
	assert_false(lock_held_here(path));
	close(wfd);
}

/*
 * The hazard hm_open_fd exists for, as libhotmap(3) documents it: hm_open
 * opens the file, passes its descriptor and closes it, and that close
 * drops the read lock the process held through another descriptor.
 */
static void
test_open_drops_locks(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX];
	hm_client *c;
	hm_file *f;
	int fd;

	harness_path(h, "root/locked", path);
	harness_write_file(path, 10000, 81);
	fd = open_read_locked(path);
	c = harness_connect(h);
	f = open_ok(c, path, 0);
	if (lock_held_here(path))
		fail_msg("hm_open kept the lock: fcntl(2) or libhotmap(3) is out of date");
	assert_int_equal(harness_check_read(f, fd, 0, 20000), 10000);
	close_ok(f);
	hm_disconnect(c);
	close(fd);
}

/*
 * A reconnect reopens an hm_open_fd file with the caller's descriptor
 * again, so the lock outlives the daemon's restart too; a descriptor the
 * caller closed meanwhile loses the file (ESTALE), not the connection.
 */
static void
test_open_fd_reconnect(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX], other[PATH_MAX];
	uint8_t buf[16];
	hm_client *c;
	hm_file *f, *g;
	int fd, gfd;

	harness_path(h, "root/locked", path);
	harness_write_file(path, SIZE_1M, 82);
	harness_path(h, "root/other", other);
	harness_write_file(other, 5000, 83);
	fd = open_read_locked(path);
	gfd = open_ref(other);
	c = harness_connect(h);
	assert_int_equal(hm_set_reconnect(c, 10000), 0);
	f = hm_open_fd(c, fd, 0);
	g = hm_open_fd(c, gfd, 0);
	assert_non_null(f);
	assert_non_null(g);
	assert_int_equal(harness_check_read(f, fd, 1000, 300000), 300000);
	harness_kill(h);
	close(gfd);	/* against the contract: g must go stale, not be misread */
	gfd = open_ref(path);	/* likely the same number, another file */
	harness_restart(h);
	assert_int_equal(harness_check_read(f, fd, 5, 400000), 400000);
	assert_lock_held(path, "after a reconnect");
	errno = 0;
	assert_int_equal(hm_pread(g, buf, sizeof buf, 0), -1);
	assert_int_equal(errno, ESTALE);
	close_ok(g);
	close_ok(f);
	assert_lock_held(path, "after hm_close");
	hm_disconnect(c);
	close(gfd);
	close(fd);
}

#define T(f, opts) cmocka_unit_test_prestate_setup_teardown(f, setup, teardown, (void *)&opts)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_random_ranges_small, opts_root),
		T(test_random_ranges_64m, opts_root),
		T(test_stat_backends, opts_default),
		T(test_daemon_backend_pread, opts_pread),
		T(test_daemon_backend_mmap, opts_mmap),
		T(test_open_by_path_without_root, opts_default),
		T(test_open_by_path_beneath_root, opts_root),
		T(test_contract_truncate, opts_root),
		T(test_contract_extend, opts_root),
		T(test_contract_rewrite, opts_root),
		T(test_contract_rename, opts_root),
		T(test_offsets_extreme, opts_default),
		T(test_wire_bounds, opts_default),
		T(test_concurrent_clients, opts_default),
		T(test_shared_client_threads, opts_default),
		T(test_bad_client_garbage, opts_default),
		T(test_bad_client_oversized, opts_default),
		T(test_bad_client_version, opts_default),
		T(test_bad_client_before_hello, opts_default),
		T(test_bad_client_truncated_frame, opts_default),
		T(test_client_killed_mid_read, opts_default),
		T(test_pipelined_then_disconnect, opts_default),
		T(test_close_then_gone, opts_default),
		T(test_disconnect_with_open_files, opts_default),
		T(test_cache_shared, opts_default),
		T(test_daemon_killed, opts_default),
		T(test_open_fd_keeps_locks, opts_default),
		T(test_open_drops_locks, opts_default),
		T(test_open_fd_reconnect, opts_default),
	};

	return cmocka_run_group_tests_name("integration", tests, NULL, NULL);
}
