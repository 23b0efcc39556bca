/* SPDX-License-Identifier: MIT */
/*
 * test_fastpath.c - batched reads, the shared-memory transport and
 * zero-copy views, against a real hotmapd (tests/harness.h), checked byte
 * for byte and errno for errno against pread(2).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/hotmap_admin.h"
#include "tests/harness.h"

#define KiB (1024u)
#define MiB (1024u * 1024u)

static const struct harness_opts opts_default = { .backend = NULL };

static int
setup(void **state)
{
	/* each test sets the client's environment itself */
	unsetenv("HOTMAP_SHM_SIZE");
	unsetenv("HOTMAP_SHM_THRESHOLD");
	setenv("HOTMAP_POLL", "0", 1);	/* the machine's cores must not decide */
	*state = harness_start(*state);
	return 0;
}

static int
teardown(void **state)
{
	unsetenv("HOTMAP_SHM_SIZE");
	unsetenv("HOTMAP_SHM_THRESHOLD");
	unsetenv("HOTMAP_POLL");
	harness_free_buffers();
	harness_stop(*state);
	return 0;
}

/* What pread(2) says for the range: bytes into ref, or -errno. */
static ssize_t
ref_read(int fd, void *ref, size_t len, uint64_t offset)
{
	ssize_t n = pread(fd, ref, len, (off_t)offset);

	return n < 0 ? -errno : n;
}

static void
assert_same(ssize_t got, const void *buf, ssize_t want, const void *ref, const char *what)
{
	if (got != want)
		fail_msg("%s: hotmap gave %zd, pread %zd", what, got, want);
	if (want > 0 && memcmp(buf, ref, (size_t)want) != 0)
		fail_msg("%s: bytes differ from pread's", what);
}

struct files {
	char big[PATH_MAX], small[PATH_MAX], empty[PATH_MAX], fifo[PATH_MAX];
	int fd[4];		/* reference descriptors, in that order */
	hm_file *f[4];
};

static void
files_open(struct harness *h, hm_client *c, struct files *fs)
{
	const char *paths[4];
	int i;

	harness_path(h, "root/big", fs->big);
	harness_path(h, "root/small", fs->small);
	harness_path(h, "root/empty", fs->empty);
	harness_path(h, "root/fifo", fs->fifo);
	harness_write_file(fs->big, 3 * MiB + 17, 1);
	harness_write_file(fs->small, 4097, 2);
	harness_write_file(fs->empty, 0, 3);
	assert_int_equal(mkfifo(fs->fifo, 0600), 0);
	paths[0] = fs->big;
	paths[1] = fs->small;
	paths[2] = fs->empty;
	paths[3] = fs->fifo;
	for (i = 0; i < 4; i++) {
		fs->fd[i] = open(paths[i], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		assert_true(fs->fd[i] >= 0);
		fs->f[i] = hm_open(c, paths[i], 0);
		assert_non_null(fs->f[i]);
	}
}

static void
files_close(struct files *fs)
{
	int i;

	for (i = 0; i < 4; i++) {
		assert_int_equal(hm_close(fs->f[i]), 0);
		close(fs->fd[i]);
	}
}

/*
 * 300 ranges (more than one window of 256) across four files: sizes from
 * 0 to 2 MiB, past EOF, straddling EOF, on a FIFO (ESPIPE), plus ios the
 * library refuses itself; each result must be pread's.
 */
static void
run_mixed_batch(struct harness *h)
{
	enum { N = 300 };
	static const size_t lens[] = { 0, 1, 4095, 4096, 4097, 65536, 100000, 2 * MiB };
	hm_client *c = harness_connect(h);
	struct hm_io *io = calloc(N, sizeof *io);
	int *which = calloc(N, sizeof *which);
	uint64_t rng = 42;
	struct files fs;
	uint8_t *ref;
	int i;

	assert_non_null(io);
	assert_non_null(which);
	ref = malloc(2 * MiB);
	assert_non_null(ref);
	files_open(h, c, &fs);
	for (i = 0; i < N; i++) {
		uint64_t r = harness_rand(&rng);

		which[i] = (int)(r % 4);
		io[i].file = fs.f[which[i]];
		io[i].len = lens[(r >> 8) % (sizeof lens / sizeof lens[0])];
		switch ((r >> 16) % 4) {
		case 0: io[i].offset = 0; break;
		case 1: io[i].offset = (r >> 24) % (3 * MiB + 17); break;	/* anywhere */
		case 2: io[i].offset = 3 * MiB + 17 - 100; break;		/* straddles EOF of big */
		default: io[i].offset = 5 * MiB; break;				/* past every EOF */
		}
		io[i].buf = malloc(io[i].len + 1);
		assert_non_null(io[i].buf);
		io[i].result = 12345;
	}
	/* refused by the library, answered in place */
	io[7].file = NULL;
	io[8].offset = UINT64_MAX - 10;
	free(io[9].buf);
	io[9].buf = NULL;
	io[9].len = 10;

	assert_int_equal(hm_read_batch(c, io, N), 0);
	assert_int_equal(io[7].result, -EBADF);
	assert_int_equal(io[8].result, -EINVAL);
	assert_int_equal(io[9].result, -EINVAL);
	for (i = 0; i < N; i++) {
		char what[64];
		ssize_t want;

		if (i >= 7 && i <= 9)
			continue;
		want = ref_read(fs.fd[which[i]], ref, io[i].len, io[i].offset);
		snprintf(what, sizeof what, "io %d (file %d, %zu at %llu)", i, which[i], io[i].len,
			 (unsigned long long)io[i].offset);
		assert_same(io[i].result, io[i].buf, want, ref, what);
	}
	/* an empty batch is fine */
	assert_int_equal(hm_read_batch(c, io, 0), 0);
	for (i = 0; i < N; i++)
		free(io[i].buf);
	files_close(&fs);
	/* the connection is still in step */
	assert_int_equal(hm_ping(c, NULL), 0);
	hm_disconnect(c);
	free(io);
	free(which);
	free(ref);
}

static void
test_batch_mixed_shm(void **state)
{
	run_mixed_batch(*state);
}

static void
test_batch_mixed_socket(void **state)
{
	setenv("HOTMAP_SHM_SIZE", "0", 1);
	run_mixed_batch(*state);
}

static void
test_batch_small_region(void **state)
{
	/* 64 KiB of region: most reads do not fit and go over the socket,
	 * in the same batch as those that do */
	setenv("HOTMAP_SHM_SIZE", "64K", 1);
	setenv("HOTMAP_SHM_THRESHOLD", "0", 1);
	run_mixed_batch(*state);
}

/* The shared region carries the bytes: the daemon counts them there, and
 * not when the client has no region. */
static void
test_shm_counts(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX];
	uint8_t buf[64 * KiB];
	hm_client *c, *admin;
	uint64_t before;
	hm_file *f;

	harness_path(h, "root/f", path);
	harness_write_file(path, MiB, 9);
	admin = harness_connect(h);
	c = harness_connect(h);
	f = hm_open(c, path, 0);
	assert_non_null(f);
	before = harness_stat(admin, "bytes_shm");
	assert_int_equal(hm_pread(f, buf, sizeof buf, 4096), (ssize_t)sizeof buf);
	assert_int_equal(harness_stat(admin, "bytes_shm"), before + sizeof buf);
	hm_close(f);
	hm_disconnect(c);

	setenv("HOTMAP_SHM_SIZE", "0", 1);
	c = harness_connect(h);
	f = hm_open(c, path, 0);
	assert_non_null(f);
	before = harness_stat(admin, "bytes_shm");
	assert_int_equal(hm_pread(f, buf, sizeof buf, 4096), (ssize_t)sizeof buf);
	assert_int_equal(harness_stat(admin, "bytes_shm"), before);
	hm_close(f);
	hm_disconnect(c);
	hm_disconnect(admin);
}

/* Views keep their bytes across other reads and other views. */
static void
run_views_held(struct harness *h)
{
	enum { NV = 12 };
	hm_client *c = harness_connect(h);
	struct hm_view v[NV];
	uint64_t off[NV];
	size_t len[NV];
	uint8_t *ref = malloc(2 * MiB), *buf = malloc(MiB);
	struct files fs;
	uint64_t rng = 7;
	int i;

	assert_non_null(ref);
	assert_non_null(buf);
	files_open(h, c, &fs);
	for (i = 0; i < NV; i++) {
		off[i] = harness_rand(&rng) % (3 * MiB);
		len[i] = i == 0 ? 0 : (size_t)(harness_rand(&rng) % (2 * MiB));
		assert_int_equal(hm_view_range(fs.f[0], off[i], len[i], &v[i]), 0);
		/* other traffic between views */
		assert_true(hm_pread(fs.f[1], buf, 4097, 0) == 4097);
		assert_true(hm_pread(fs.f[0], buf, MiB, off[i] / 2) > 0);
	}
	for (i = 0; i < NV; i++) {
		ssize_t want = ref_read(fs.fd[0], ref, len[i], off[i]);

		assert_same((ssize_t)v[i].len, v[i].data, want, ref, "held view");
		hm_view_release(&v[i]);
		assert_null(v[i].data);
		hm_view_release(&v[i]);	/* twice is harmless */
	}
	/* past EOF: an empty view; a FIFO: ESPIPE and an empty view */
	assert_int_equal(hm_view_range(fs.f[0], 10 * MiB, 4096, &v[0]), 0);
	assert_int_equal(v[0].len, 0);
	hm_view_release(&v[0]);
	errno = 0;
	assert_int_equal(hm_view_range(fs.f[3], 0, 4096, &v[0]), -1);
	assert_int_equal(errno, ESPIPE);
	assert_null(v[0].data);
	assert_int_equal(v[0].len, 0);
	hm_view_release(&v[0]);
	errno = 0;
	assert_int_equal(hm_view_range(fs.f[0], UINT64_MAX, 1, &v[0]), -1);
	assert_int_equal(errno, EINVAL);

	files_close(&fs);
	hm_disconnect(c);
	free(ref);
	free(buf);
}

static void
test_views_held(void **state)
{
	run_views_held(*state);
}

static void
test_views_region_full(void **state)
{
	/* 1 MiB of region for up to 12 views of up to 2 MiB: most are served
	 * over the socket into memory of their own, and read the same */
	setenv("HOTMAP_SHM_SIZE", "1M", 1);
	run_views_held(*state);
}

static void
test_views_without_region(void **state)
{
	setenv("HOTMAP_SHM_SIZE", "0", 1);
	run_views_held(*state);
}

/* A view outlives its client: readable after hm_disconnect, released
 * after it (AddressSanitizer and valgrind watch this one). */
static void
test_view_after_disconnect(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX];
	uint8_t ref[8192];
	struct hm_view v;
	hm_client *c;
	hm_file *f;
	int fd;

	harness_path(h, "root/f", path);
	harness_write_file(path, 100000, 5);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	c = harness_connect(h);
	f = hm_open(c, path, 0);
	assert_non_null(f);
	assert_int_equal(hm_view_range(f, 5000, sizeof ref, &v), 0);
	hm_disconnect(c);
	assert_same((ssize_t)v.len, v.data, ref_read(fd, ref, sizeof ref, 5000), ref, "view after disconnect");
	hm_view_release(&v);
	close(fd);
}

/* A client that dies holding views (and its region) costs the daemon
 * nothing: it serves the next client and its count of clients drops. */
static void
test_client_dies_holding_views(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX];
	uint8_t buf[4096], ref[4096];
	int status, fd, sync[2];
	hm_client *admin, *c;
	hm_file *f;
	pid_t pid;
	char x;

	harness_path(h, "root/f", path);
	harness_write_file(path, 4 * MiB, 6);
	admin = harness_connect(h);
	assert_int_equal(pipe(sync), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct hm_view v[8];
		hm_client *cc = hm_connect(h->sock);
		hm_file *ff = cc != NULL ? hm_open(cc, path, 0) : NULL;
		int i;

		if (ff == NULL)
			_exit(1);
		for (i = 0; i < 8; i++)
			if (hm_view_range(ff, (uint64_t)i * 512 * KiB, 512 * KiB, &v[i]) < 0)
				_exit(2);
		if (write(sync[1], "v", 1) != 1)
			_exit(3);
		pause();
		_exit(4);
	}
	close(sync[1]);
	assert_int_equal(read(sync[0], &x, 1), 1);
	close(sync[0]);
	assert_int_equal(harness_stat(admin, "clients"), 2);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	harness_wait_stat(admin, "clients", 1);

	c = harness_connect(h);
	f = hm_open(c, path, 0);
	assert_non_null(f);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_same(hm_pread(f, buf, sizeof buf, MiB + 3), buf,
		    ref_read(fd, ref, sizeof ref, MiB + 3), ref, "after the death");
	close(fd);
	hm_close(f);
	hm_disconnect(c);
	hm_disconnect(admin);
}

/* The daemon maps a region only if it is a memfd sealed against shrinking
 * and growing, of the size announced; otherwise the client goes on without
 * one, and a READ into a region it does not have is EINVAL. */
/* The shm_error of the last refusal hello_with_region saw. */
static char region_error[256];

static void
hello_with_region(struct harness *h, int region_fd, uint64_t size, bool want_accepted)
{
	struct wire_msg m = { .n = 0 };
	struct wire_header hdr;
	uint8_t reply[1024];
	char err[256] = "";
	uint64_t accepted = 0;
	int fd = wire_connect(h);

	wire_varint(&m, 1, WIRE_VERSION);
	wire_varint(&m, 2, 7);
	wire_string(&m, 3, "region-test");
	wire_varint(&m, 4, size);
	assert_int_equal(wire_send_msg(fd, WIRE_HELLO, 1, &m, region_fd), 0);
	assert_int_equal(wire_recv(fd, &hdr, reply, sizeof reply, 10000), 1);
	assert_int_equal(hdr.type, WIRE_HELLO_REPLY);
	wire_get_varint(reply, hdr.length, 5, &accepted);
	wire_get_string(reply, hdr.length, 6, err, sizeof err);
	assert_int_equal(accepted, want_accepted ? 1 : 0);
	snprintf(region_error, sizeof region_error, "%s", err);
	if (!want_accepted) {
		assert_true(err[0] != '\0');
		/* READ into the region it does not have: EINVAL, not a crash */
		m.n = 0;
		wire_varint(&m, 1, 1);
		wire_varint(&m, 2, 0);
		wire_varint(&m, 3, 16);
		wire_varint(&m, 4, 1);
		wire_varint(&m, 5, 0);
		assert_int_equal(wire_send_msg(fd, WIRE_READ, 2, &m, -1), 0);
		assert_int_equal(wire_recv(fd, &hdr, reply, sizeof reply, 10000), 1);
		assert_int_equal(hdr.type, WIRE_ERROR);
	}
	close(fd);
}

static void
test_region_refused(void **state)
{
	struct harness *h = *state;
	int fd;

	/* not sealed */
	fd = memfd_create("unsealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 65536), 0);
	hello_with_region(h, fd, 65536, false);
	/* sealed, but not the size announced */
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	hello_with_region(h, fd, 1 << 20, false);
	/* too large to be allowed */
	hello_with_region(h, fd, (uint64_t)4 << 30, false);
	/* announced, but no descriptor came */
	hello_with_region(h, -1, 65536, false);
	/* and the right one is taken */
	hello_with_region(h, fd, 65536, true);
	close(fd);

	/*
	 * Sealed and of the size announced, but on hugetlbfs: its client
	 * could punch a huge page out and take every free one, so that the
	 * daemon's copy into the region faults (issue 12).  Refused for not
	 * being tmpfs, whether or not the system has huge pages (with none,
	 * the mmap would fail too: the reason must be the file system).
	 */
	fd = memfd_create("huge", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB);
	if (fd < 0) {
		print_message("# no hugetlb memfd here (%s): that case is not run\n",
			      strerror(errno));
		return;
	}
	if (ftruncate(fd, 2 << 20) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0) {
		print_message("# a hugetlb memfd cannot be sized or sealed here (%s): "
			      "that case is not run\n", strerror(errno));
		close(fd);
		return;
	}
	hello_with_region(h, fd, 2 << 20, false);
	if (strstr(region_error, "tmpfs") == NULL)
		fail_msg("a hugetlb region refused for another reason: \"%s\"", region_error);
	close(fd);
}

/* A READ into the region must fit inside it. */
static void
test_region_bounds(void **state)
{
	struct harness *h = *state;
	struct wire_msg m = { .n = 0 };
	struct wire_header hdr;
	uint8_t reply[1024];
	char path[PATH_MAX];
	uint64_t handle = 0;
	int fd, region, file;

	harness_path(h, "root/f", path);
	harness_write_file(path, 100000, 4);
	region = memfd_create("region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(region >= 0);
	assert_int_equal(ftruncate(region, 65536), 0);
	assert_int_equal(fcntl(region, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	fd = wire_connect(h);
	wire_varint(&m, 1, WIRE_VERSION);
	wire_varint(&m, 4, 65536);
	assert_int_equal(wire_send_msg(fd, WIRE_HELLO, 1, &m, region), 0);
	assert_int_equal(wire_recv(fd, &hdr, reply, sizeof reply, 10000), 1);
	file = open(path, O_RDONLY | O_CLOEXEC);
	m.n = 0;
	wire_string(&m, 2, path);
	assert_int_equal(wire_send_msg(fd, WIRE_OPEN, 2, &m, file), 0);
	close(file);
	assert_int_equal(wire_recv(fd, &hdr, reply, sizeof reply, 10000), 1);
	assert_int_equal(hdr.type, WIRE_OPEN_REPLY);
	assert_int_equal(wire_get_varint(reply, hdr.length, 1, &handle), 0);
	{
		/* (shm_offset, length): past the end, wrapping, and just fitting */
		static const uint64_t cases[][3] = {
			{ 65536 - 100, 101, 0 }, { 65537, 0, 0 }, { UINT64_MAX - 10, 20, 0 },
			{ 8, UINT64_MAX - 4, 0 }, { 65536 - 100, 100, 1 },
		};
		size_t i;

		for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
			m.n = 0;
			wire_varint(&m, 1, handle);
			wire_varint(&m, 2, 0);
			wire_varint(&m, 3, cases[i][1]);
			wire_varint(&m, 4, 1);
			wire_varint(&m, 5, cases[i][0]);
			assert_int_equal(wire_send_msg(fd, WIRE_READ, (uint32_t)(10 + i), &m, -1), 0);
			assert_int_equal(wire_recv(fd, &hdr, reply, sizeof reply, 10000), 1);
			assert_int_equal(hdr.id, 10 + i);
			assert_int_equal(hdr.type, cases[i][2] ? WIRE_READ_DATA : WIRE_ERROR);
		}
	}
	close(fd);
	close(region);
}

/* Fraction (percent) of the file's pages in the page cache. */
static unsigned
resident_range(int fd, uint64_t off, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (len + page - 1) / page, i, in = 0;
	unsigned char *vec = malloc(n);
	void *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)off);

	assert_non_null(vec);
	assert_true(map != MAP_FAILED);
	assert_int_equal(mincore(map, len, vec), 0);
	for (i = 0; i < n; i++)
		in += vec[i] & 1;
	munmap(map, len);
	free(vec);
	return (unsigned)(in * 100 / n);
}

static unsigned
resident_percent(int fd, size_t len)
{
	return resident_range(fd, 0, len);
}

/* Drops the file from the page cache until [off, off + len) is out of it:
 * readahead still in flight from an earlier read may land after a first
 * DONTNEED.  False when it stays in (tmpfs). */
static bool
make_cold(int fd, uint64_t off, size_t len)
{
	int i;

	for (i = 0; i < 100; i++) {
		assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
		if (resident_range(fd, off, len) == 0)
			return true;
		usleep(10000);
	}
	return false;
}

/* Pages not in the page cache are read by a worker, not by the event
 * loop: the daemon counts them, and the bytes are pread's.  Each read
 * warms the file around it (readahead, up to read_ahead_kb), so the reads
 * lie 10 MiB apart and the cache is dropped before each. */
static void
test_cold_reads_offloaded(void **state)
{
	struct harness *h = *state;
	size_t len = 40 * MiB, page = (size_t)sysconf(_SC_PAGESIZE), i, resident = 0;
	uint8_t *buf = malloc(2 * MiB), *ref = malloc(2 * MiB), *vec;
	char path[PATH_MAX];
	hm_client *c, *admin;
	uint64_t before;
	ssize_t got;
	struct hm_view v;
	hm_file *f;
	void *map;
	int fd;

	assert_non_null(buf);
	assert_non_null(ref);
	harness_path(h, "root/cold", path);
	harness_write_file(path, len, 11);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fdatasync(fd), 0);
	assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(map != MAP_FAILED);
	vec = malloc(len / page);
	assert_non_null(vec);
	assert_int_equal(mincore(map, len, vec), 0);
	for (i = 0; i < len / page; i++)
		resident += vec[i] & 1;
	munmap(map, len);
	free(vec);
	if (resident > len / page / 2) {
		/* a file system that keeps everything in memory (tmpfs) */
		close(fd);
		free(buf);
		free(ref);
		skip();
	}
	admin = harness_connect(h);
	c = harness_connect(h);
	f = hm_open(c, path, 0);
	assert_non_null(f);
	/* through the region, into a view, over the socket in one frame, and
	 * streamed: each cold, each by a worker */
	assert_true(make_cold(fd, 0, 64 * KiB));
	before = harness_stat(admin, "reads_offloaded");
	got = hm_pread(f, buf, 64 * KiB, 0);
	assert_same(got, buf, ref_read(fd, ref, 64 * KiB, 0), ref, "cold shm");
	assert_true(harness_stat(admin, "reads_offloaded") > before);
	assert_true(make_cold(fd, 10 * MiB, 8192));
	before = harness_stat(admin, "reads_offloaded");
	assert_int_equal(hm_view_range(f, 10 * MiB, 8192, &v), 0);
	/* (the reference read comes after: it would warm the file) */
	assert_same((ssize_t)v.len, v.data, ref_read(fd, ref, 8192, 10 * MiB), ref, "cold view");
	hm_view_release(&v);
	assert_true(harness_stat(admin, "reads_offloaded") > before);
	hm_disconnect(c);
	setenv("HOTMAP_SHM_SIZE", "0", 1);
	c = harness_connect(h);
	f = hm_open(c, path, 0);
	assert_non_null(f);
	assert_true(make_cold(fd, 20 * MiB, 4096));
	before = harness_stat(admin, "reads_offloaded");
	got = hm_pread(f, buf, 4096, 20 * MiB);
	assert_same(got, buf, ref_read(fd, ref, 4096, 20 * MiB), ref,
		    "cold frame");
	assert_true(harness_stat(admin, "reads_offloaded") > before);
	assert_true(make_cold(fd, 30 * MiB, 2 * MiB));
	before = harness_stat(admin, "reads_offloaded");
	got = hm_pread(f, buf, 2 * MiB, 30 * MiB);
	assert_same(got, buf, ref_read(fd, ref, 2 * MiB, 30 * MiB), ref,
		    "cold stream");
	assert_true(harness_stat(admin, "reads_offloaded") > before);
	hm_disconnect(c);
	hm_disconnect(admin);
	close(fd);
	free(buf);
	free(ref);
}

/* hm_warm brings a cold file into memory, through either backend, and
 * answers with the bytes of the range inside the file; HM_O_WARM starts
 * the same in the background. */
static void
test_warm(void **state)
{
	struct harness *h = *state;
	size_t len = 16 * MiB;
	char path[PATH_MAX];
	uint8_t buf[4096], ref[4096];
	hm_client *c;
	hm_file *f;
	ssize_t got;
	int fd, i;

	harness_path(h, "root/warm", path);
	harness_write_file(path, len, 12);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fdatasync(fd), 0);
	assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	if (resident_percent(fd, len) > 50) {
		close(fd);
		skip();	/* tmpfs: nothing is ever cold */
	}
	c = harness_connect(h);
	for (i = 0; i < 2; i++) {
		f = hm_open(c, path, i == 0 ? 0 : HM_O_PREAD);
		assert_non_null(f);
		assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
		assert_int_equal(hm_warm(f, 0, len), (ssize_t)len);
		assert_true(resident_percent(fd, len) >= 90);
		/* ranges: clipped at EOF, past it, zero-length */
		assert_int_equal(hm_warm(f, len - 100, 4096), 100);
		assert_int_equal(hm_warm(f, len + 1, 4096), 0);
		assert_int_equal(hm_warm(f, 0, 0), 0);
		errno = 0;
		assert_int_equal(hm_warm(f, UINT64_MAX, 1), -1);
		assert_int_equal(errno, EINVAL);
		got = hm_pread(f, buf, sizeof buf, 5 * MiB);
		assert_same(got, buf, ref_read(fd, ref, sizeof ref, 5 * MiB), ref, "after warm");
		assert_int_equal(hm_close(f), 0);
	}
	/* in the background, from the open */
	assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	f = hm_open(c, path, HM_O_WARM | HM_O_PREAD);
	assert_non_null(f);
	for (i = 0; i < 500 && resident_percent(fd, len) < 90; i++)
		usleep(10000);
	assert_true(resident_percent(fd, len) >= 90);
	assert_int_equal(hm_close(f), 0);
	hm_disconnect(c);
	close(fd);
}

/* SIGTERM while a client streams a cold read, chunk after chunk through
 * the workers: the daemon finishes or drops that work, exits 0 (under
 * AddressSanitizer: without a leak) and the client gets an error or a
 * short read, not a hang. */
static void
test_shutdown_mid_stream(void **state)
{
	struct harness *h = *state;
	size_t len = 64 * MiB;
	char path[PATH_MAX];
	int fd, status, sync[2];
	pid_t child;
	char x;

	harness_path(h, "root/big", path);
	harness_write_file(path, len, 13);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fdatasync(fd), 0);
	assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	close(fd);
	assert_int_equal(pipe(sync), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		uint8_t *buf = malloc(len);
		hm_client *c;
		hm_file *f;
		ssize_t n;

		setenv("HOTMAP_SHM_SIZE", "0", 1);
		c = hm_connect(h->sock);
		f = c != NULL ? hm_open(c, path, 0) : NULL;
		if (buf == NULL || f == NULL || write(sync[1], "o", 1) != 1)
			_exit(2);
		n = hm_pread(f, buf, len, 0);
		/* all of it (the daemon was quicker), a short read, or the
		 * connection's end: never anything else */
		_exit(n == (ssize_t)len || (n < 0 && (errno == ECONNRESET || errno == EPIPE)) ||
		      (n >= 0 && n < (ssize_t)len) ? 0 : 3);
	}
	close(sync[1]);
	assert_int_equal(read(sync[0], &x, 1), 1);
	close(sync[0]);
	usleep(20000);
	assert_int_equal(kill(h->pid, SIGTERM), 0);
	assert_int_equal(waitpid(h->pid, &status, 0), h->pid);
	h->pid = 0;
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(access(h->sock, F_OK), -1);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

struct listing {
	unsigned n, mapped, stale;
	uint64_t bytes_of_first;
	char first[PATH_MAX];
};

static void
list_cb(const struct hm_file_info *info, void *arg)
{
	struct listing *l = arg;

	l->n++;
	l->mapped += info->backend == HM_BACKEND_MMAP;
	l->stale += info->stale != 0;
	if (strcmp(info->path, l->first) == 0)
		l->bytes_of_first = info->bytes;
}

/* hm_files lists every cached file, across as many pages as it takes (long
 * names make a reply of a few hundred files exceed one frame), with the
 * bytes read from each and the stale versions still open. */
static void
test_files_listing(void **state)
{
	enum { N = 400 };
	struct harness *h = *state;
	char name[PATH_MAX], path[PATH_MAX];
	hm_file *f[N];
	struct listing l = { 0 };
	uint8_t buf[100];
	hm_client *c;
	int i;

	c = harness_connect(h);
	for (i = 0; i < N; i++) {
		snprintf(name, sizeof name, "root/%03d-%0200d", i, 0);
		harness_path(h, name, path);
		harness_write_file(path, 1000 + (uint64_t)i, (uint64_t)i);
		f[i] = hm_open(c, path, 0);
		assert_non_null(f[i]);
		if (i == 0)
			snprintf(l.first, sizeof l.first, "%s", path);
	}
	assert_int_equal(hm_pread(f[0], buf, sizeof buf, 0), (ssize_t)sizeof buf);
	assert_int_equal(hm_files(c, list_cb, &l), 0);
	assert_int_equal(l.n, N);
	assert_int_equal(l.mapped, N);
	assert_int_equal(l.stale, 0);
	assert_int_equal(l.bytes_of_first, sizeof buf);

	/* a new version of the first file: the open handle keeps the old one,
	 * listed as stale, beside the new one */
	harness_write_file(l.first, 5000, 99);
	hm_close(hm_open(c, l.first, 0));
	memset(&l.n, 0, sizeof l.n);
	l.mapped = l.stale = 0;
	assert_int_equal(hm_files(c, list_cb, &l), 0);
	assert_int_equal(l.n, N + 1);
	assert_int_equal(l.stale, 1);
	for (i = 0; i < N; i++)
		assert_int_equal(hm_close(f[i]), 0);
	hm_disconnect(c);
}

/* hm_evict drops a cached file no handle reads (the next open maps it
 * afresh), keeps one that is read, and says which. */
static void
test_evict(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX], other[PATH_MAX];
	uint8_t buf[4096], ref[4096];
	struct hm_evicted ev;
	uint64_t misses;
	hm_client *c;
	hm_file *f;
	ssize_t got;
	int fd;

	harness_path(h, "root/evict", path);
	harness_path(h, "root/other", other);
	harness_write_file(path, 3 * MiB, 21);
	harness_write_file(other, 5000, 22);
	c = harness_connect(h);
	f = hm_open(c, path, 0);
	assert_non_null(f);
	/* read by a handle: kept */
	assert_int_equal(hm_evict(c, path, &ev), 0);
	assert_int_equal(ev.files, 0);
	assert_int_equal(ev.busy, 1);
	assert_int_equal(hm_close(f), 0);
	/* no reader: dropped, with its mapping */
	assert_int_equal(hm_evict(c, path, &ev), 0);
	assert_int_equal(ev.files, 1);
	assert_int_equal(ev.mapped_bytes, 3 * MiB);
	/* at once, or when the open's background work (huge folios) stops */
	harness_wait_stat(c, "mappings", 0);
	errno = 0;
	assert_int_equal(hm_evict(c, path, &ev), -1);
	assert_int_equal(errno, ENOENT);
	/* the next open starts afresh, and reads the same */
	misses = harness_stat(c, "cache_misses");
	f = hm_open(c, path, 0);
	assert_non_null(f);
	assert_int_equal(harness_stat(c, "cache_misses"), misses + 1);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	got = hm_pread(f, buf, sizeof buf, MiB);
	assert_same(got, buf, ref_read(fd, ref, sizeof ref, MiB), ref, "after evict");
	close(fd);
	/* --all: the unread one goes, the read one stays */
	hm_close(hm_open(c, other, 0));
	assert_int_equal(hm_evict(c, NULL, &ev), 0);
	assert_int_equal(ev.files, 1);
	assert_int_equal(ev.busy, 1);
	assert_int_equal(harness_stat(c, "evictions"), 2);
	hm_close(f);
	hm_disconnect(c);
}

/* Connects, retrying while EUSERS: connections the harness made to see
 * the daemon up may not be counted out yet. */
static hm_client *
connect_when_room(struct harness *h)
{
	hm_client *c = NULL;
	int i;

	for (i = 0; i < 200 && c == NULL; i++) {
		c = hm_connect(h->sock);
		if (c == NULL) {
			assert_int_equal(errno, EUSERS);
			usleep(10000);
		}
	}
	assert_non_null(c);
	return c;
}

/* --max-connections-per-uid: the connection past the limit is refused at
 * HELLO with EUSERS and a message that says why; once one closes, the
 * next is let in. */
static void
test_connections_per_uid(void **state)
{
	struct harness *h = *state;
	hm_client *c[3], *extra;
	uint64_t refused;
	int i;

	for (i = 0; i < 3; i++)
		c[i] = connect_when_room(h);
	/* (connect_when_room may have been refused on the way) */
	refused = harness_stat(c[1], "clients_refused");
	errno = 0;
	extra = hm_connect(h->sock);
	assert_null(extra);
	assert_int_equal(errno, EUSERS);
	assert_non_null(strstr(hm_last_error(), "max-connections-per-uid 3"));
	/* the others are still served */
	assert_int_equal(hm_ping(c[0], NULL), 0);
	assert_int_equal(harness_stat(c[1], "clients_refused"), refused + 1);
	hm_disconnect(c[2]);
	c[2] = connect_when_room(h);
	for (i = 0; i < 3; i++)
		hm_disconnect(c[i]);
}

/* --idle-timeout: a client that sends nothing for that long and holds
 * no open file is closed (it then sees ECONNRESET or EPIPE), and the log
 * says so at notice level; one that keeps asking stays, and so does one
 * that holds an open file (its handles are state it will use). */
static void
test_idle_timeout(void **state)
{
	struct harness *h = *state;
	size_t mark = harness_log_mark(h);
	hm_client *quiet, *busy, *holder;
	char path[PATH_MAX];
	hm_file *f;
	int i, fd;

	harness_path(h, "held", path);
	harness_write_file(path, 100000, 52);
	quiet = harness_connect(h);
	busy = harness_connect(h);
	holder = harness_connect(h);
	f = hm_open(holder, path, 0);
	assert_non_null(f);
	assert_int_equal(hm_ping(quiet, NULL), 0);
	for (i = 0; i < 8; i++) {
		usleep(250000);
		assert_int_equal(hm_ping(busy, NULL), 0);
	}
	errno = 0;
	assert_int_equal(hm_ping(quiet, NULL), -1);
	assert_true(errno == ECONNRESET || errno == EPIPE);
	assert_true(harness_log_find(h, mark, "notice: ", "idle for 1 s"));
	/* silent for 2 s, but holding a file: still connected, still reading */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(harness_check_read(f, fd, 1000, 5000), 5000);
	assert_int_equal(hm_close(f), 0);
	close(fd);
	hm_disconnect(quiet);
	hm_disconnect(busy);
	hm_disconnect(holder);
}

static const struct harness_opts opts_idle_1s = {
	.extra = { "--idle-timeout", "1", NULL },
};

/*
 * A client in polling mode that reads all the time sends no frame: its
 * requests go through the ring while the daemon polls it.  It is busy, not
 * idle, and --idle-timeout must leave it alone.
 */
static void
test_idle_timeout_polling(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX];
	uint8_t buf[4096];
	int64_t until;
	hm_client *c;
	hm_file *f;
	unsigned reads = 0;
	int fd;

	harness_path(h, "f", path);
	harness_write_file(path, 1 * MiB, 51);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	setenv("HOTMAP_POLL", "1", 1);
	setenv("HOTMAP_POLL_US", "10000", 1);
	c = harness_connect(h);
	unsetenv("HOTMAP_POLL_US");
	f = hm_open(c, path, 0);
	assert_non_null(f);
	assert_int_equal(harness_stat(c, "clients_polling"), 1);
	until = harness_now_ms() + 2500;
	while (harness_now_ms() < until) {
		uint64_t off = (uint64_t)(reads % 256) * sizeof buf;

		if (hm_pread(f, buf, sizeof buf, off) != (ssize_t)sizeof buf)
			fail_msg("read %u failed after %lld ms: %s (%s)", reads,
				 (long long)(2500 - (until - harness_now_ms())), strerror(errno),
				 hm_last_error());
		reads++;
	}
	assert_int_equal(harness_check_read(f, fd, 12345, 4096), 4096);
	assert_false(harness_log_find(h, 0, "idle for", NULL));
	print_message("# %u reads through the ring in 2.5 s with --idle-timeout 1\n", reads);
	hm_close(f);
	hm_disconnect(c);
	close(fd);
}

static const struct harness_opts opts_idle_1s_poll = {
	.extra = { "--idle-timeout", "1", "--poll-us", "10000", NULL },
};

static const struct harness_opts opts_three_per_uid = {
	.extra = { "--max-connections-per-uid", "3", NULL },
};

/* --- polling mode (proto/ring.h) ---------------------------------------- */

static const struct harness_opts opts_poll = {
	.extra = { "--poll-us", "200", NULL },
};
/* The daemon never polls: every ring request needs a RING_KICK and every
 * completion a RING_WAKE. */
static const struct harness_opts opts_poll_asleep = {
	.extra = { "--poll-us", "0", NULL },
};

/* The mixed batch through the ring: ranges that fit the region go through
 * it, the rest over the socket in the same batch; all read as pread. */
static void
test_poll_batch(void **state)
{
	struct harness *h = *state;
	hm_client *admin = harness_connect(h);
	uint64_t before = harness_stat(admin, "reads_ring");

	setenv("HOTMAP_POLL", "1", 1);
	run_mixed_batch(h);
	/* about 3 of 4 ranges fit the region: far more than none */
	assert_true(harness_stat(admin, "reads_ring") >= before + 100);
	hm_disconnect(admin);
}

static void
test_poll_views(void **state)
{
	struct harness *h = *state;
	hm_client *admin = harness_connect(h);
	uint64_t before = harness_stat(admin, "reads_ring");

	setenv("HOTMAP_POLL", "1", 1);
	run_views_held(h);
	assert_true(harness_stat(admin, "reads_ring") > before);
	hm_disconnect(admin);
}

/* Many small reads one at a time: each a ring request; the daemon counts
 * the client as polling while it is connected. */
static void
test_poll_single_reads(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX];
	hm_client *admin, *c;
	uint64_t before, rng = 99;
	hm_file *f;
	int fd, i;

	harness_path(h, "root/f", path);
	harness_write_file(path, 8 * MiB + 5, 11);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	admin = harness_connect(h);
	before = harness_stat(admin, "reads_ring");
	setenv("HOTMAP_POLL", "1", 1);
	c = harness_connect(h);
	assert_int_equal(harness_stat(admin, "clients_polling"), 1);
	f = hm_open(c, path, 0);
	assert_non_null(f);
	for (i = 0; i < 2000; i++) {
		uint64_t off = harness_rand(&rng) % (8 * MiB + 100);
		size_t len = (size_t)(harness_rand(&rng) % 9000);

		harness_check_read(f, fd, off, len);
	}
	assert_int_equal(harness_stat(admin, "reads_ring"), before + 2000);
	hm_close(f);
	hm_disconnect(c);
	harness_wait_stat(admin, "clients_polling", 0);
	hm_disconnect(admin);
	close(fd);
}

/* A client in polling mode that dies with reads in its ring and views
 * held costs the daemon nothing. */
static void
test_poll_client_dies(void **state)
{
	setenv("HOTMAP_POLL", "1", 1);
	test_client_dies_holding_views(state);
}

/* HELLO with a region and a ring of ring_entries; the descriptor of the
 * connection, the region mapped in *region. */
static int
hello_with_ring(struct harness *h, size_t size, uint64_t ring_entries, bool want_ring,
		uint8_t **region)
{
	struct wire_msg m = { .n = 0 };
	struct wire_header hdr;
	uint8_t reply[1024];
	uint64_t accepted = 0;
	int fd = wire_connect(h), mfd;

	mfd = memfd_create("ring-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(mfd >= 0);
	assert_int_equal(ftruncate(mfd, (off_t)size), 0);
	assert_int_equal(fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	*region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	assert_true(*region != MAP_FAILED);
	wire_varint(&m, 1, WIRE_VERSION);
	wire_varint(&m, 2, 7);
	wire_string(&m, 3, "ring-test");
	wire_varint(&m, 4, size);
	wire_varint(&m, 5, ring_entries);
	assert_int_equal(wire_send_msg(fd, WIRE_HELLO, 1, &m, mfd), 0);
	close(mfd);
	assert_int_equal(wire_recv(fd, &hdr, reply, sizeof reply, 10000), 1);
	assert_int_equal(hdr.type, WIRE_HELLO_REPLY);
	wire_get_varint(reply, hdr.length, 7, &accepted);
	assert_int_equal(accepted, want_ring ? 1 : 0);
	return fd;
}

static void
ring_kick(int fd)
{
	struct wire_msg m = { .n = 0 };

	assert_int_equal(wire_send_msg(fd, 22 /* RING_KICK */, 0, &m, -1), 0);
}

/* The daemon checks every ring request: a bad handle, a destination in
 * the ring area or past the region are errors in their completions; a
 * ring whose tail runs past its end disconnects that client only. */
static void
test_ring_checked(void **state)
{
	struct harness *h = *state;
	struct wire_msg m = { .n = 0 };
	struct wire_header hdr;
	uint8_t reply[1024], *r;
	char path[PATH_MAX];
	uint64_t handle = 0, ebadf, einval;
	struct {
		uint64_t handle, offset, length, shm_offset;
		uint32_t id, reserved;
	} *sqe;
	struct {
		uint32_t id, reserved;
		int64_t result;
	} *cqe;
	hm_client *c;
	int fd, i;

	/* too small a region for a ring, or the wrong ring size: no ring */
	fd = hello_with_ring(h, 4096, 64, false, &r);
	close(fd);
	munmap(r, 4096);
	fd = hello_with_ring(h, 65536, 32, false, &r);
	close(fd);
	munmap(r, 65536);

	harness_path(h, "root/f", path);
	harness_write_file(path, 100000, 12);
	fd = hello_with_ring(h, 65536, 64, true, &r);
	{
		/* by descriptor: this daemon has no --root */
		int ffd = open(path, O_RDONLY | O_CLOEXEC);

		assert_true(ffd >= 0);
		wire_string(&m, 2, "f");
		assert_int_equal(wire_send_msg(fd, WIRE_OPEN, 3, &m, ffd), 0);
		close(ffd);
	}
	assert_int_equal(wire_recv(fd, &hdr, reply, sizeof reply, 10000), 1);
	assert_int_equal(hdr.type, WIRE_OPEN_REPLY);
	wire_get_varint(reply, hdr.length, 1, &handle);
	assert_true(handle > 0);

	c = harness_connect(h);
	ebadf = harness_stat(c, "errors_ebadf");
	einval = harness_stat(c, "errors_einval");
	sqe = (void *)(r + 256);
	cqe = (void *)(r + 3072);
	sqe[0] = (typeof(sqe[0])){ handle, 10, 5000, 8192, 100, 0 };	/* good */
	sqe[1] = (typeof(sqe[0])){ handle + 7, 0, 10, 8192, 101, 0 };	/* no such handle */
	sqe[2] = (typeof(sqe[0])){ handle, 0, 10, 100, 102, 0 };	/* into the ring area */
	sqe[3] = (typeof(sqe[0])){ handle, 0, 4096, 65536 - 4095, 103, 0 };	/* past the region */
	sqe[4] = (typeof(sqe[0])){ handle, UINT64_MAX - 5, 10, 8192, 104, 0 };	/* offset overflows */
	sqe[5] = (typeof(sqe[0])){ handle, 99990, 100, 16384, 105, 0 };	/* straddles EOF */
	__atomic_store_n((uint32_t *)(r + 0), 6, __ATOMIC_RELEASE);
	ring_kick(fd);
	for (i = 0; i < 1000 && __atomic_load_n((uint32_t *)(r + 128), __ATOMIC_ACQUIRE) < 6; i++)
		usleep(1000);
	assert_int_equal(__atomic_load_n((uint32_t *)(r + 128), __ATOMIC_ACQUIRE), 6);
	for (i = 0; i < 6; i++) {
		int64_t want[] = { 5000, -EBADF, -EINVAL, -EINVAL, -EINVAL, 10 };

		assert_int_equal(cqe[i].id, 100 + i);
		assert_int_equal(cqe[i].result, want[i]);
	}
	{
		uint8_t ref[5000];

		harness_fill(ref, sizeof ref, 12, 10);
		assert_memory_equal(r + 8192, ref, sizeof ref);
	}
	/* counted as the ERROR replies they stand for */
	assert_int_equal(harness_stat(c, "errors_ebadf"), ebadf + 1);
	assert_int_equal(harness_stat(c, "errors_einval"), einval + 3);
	/* the tail far ahead of the head: that client goes, no one else */
	__atomic_store_n((uint32_t *)(r + 0), 6 + 1000, __ATOMIC_RELEASE);
	ring_kick(fd);
	wire_expect_eof(fd, 10000);
	close(fd);
	munmap(r, 65536);
	assert_int_equal(hm_ping(c, NULL), 0);
	hm_disconnect(c);
}

/* --- the reconnect policy ------------------------------------------------- */

/*
 * With the policy on, calls outlive a daemon killed with SIGKILL and
 * started again: the files are reopened and read right, a view taken
 * before still holds its bytes, a file deleted meanwhile gives ESTALE.
 * With the daemon down for good, a call fails with a clear error once the
 * time allowed is spent, and the next call after the daemon is back
 * works.  (Off, the default, the client stays broken: test_daemon_killed
 * in tests/test_integration.c.)
 */
static void
run_reconnect(struct harness *h)
{
	char path[PATH_MAX], gone[PATH_MAX];
	uint8_t buf[64], ref[8192];
	struct hm_view v;
	hm_client *c;
	hm_file *f, *g, *rel;
	int64_t t0, took;
	int fd, e;

	harness_path(h, "root/f", path);
	harness_write_file(path, 3 * MiB, 31);
	harness_path(h, "root/gone", gone);
	harness_write_file(gone, 1000, 32);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	c = harness_connect(h);
	assert_int_equal(hm_set_reconnect(c, 10000), 0);
	f = hm_open(c, path, 0);
	g = hm_open(c, gone, 0);
	assert_non_null(f);
	assert_non_null(g);
	assert_int_equal(harness_check_read(f, fd, 0, 100000), 100000);
	assert_int_equal(hm_view_range(f, 4096, sizeof ref, &v), 0);
	/* opened by a relative name, reopened by the same file after a chdir */
	assert_int_equal(chdir(h->dir), 0);
	rel = hm_open(c, "root/f", 0);
	assert_non_null(rel);
	assert_int_equal(chdir("/"), 0);

	harness_kill(h);
	assert_int_equal(unlink(gone), 0);
	harness_restart(h);
	{
		/* the first call after the restart, a batch, finds the
		 * connection lost under it: gone comes back ESTALE and is
		 * not asked of the new daemon (which would answer EBADF for
		 * handle 0), f is read */
		uint8_t b2[64];
		struct hm_io io[2] = {
			{ .file = g, .offset = 0, .len = 10, .buf = buf },
			{ .file = f, .offset = 100, .len = sizeof b2, .buf = b2 },
		};
		hm_client *admin = harness_connect(h);

		assert_int_equal(hm_read_batch(c, io, 2), 0);
		assert_int_equal(io[0].result, -ESTALE);
		assert_int_equal(io[1].result, (ssize_t)sizeof b2);
		assert_same(io[1].result, b2, ref_read(fd, ref, sizeof b2, 100), ref, "batched");
		assert_int_equal(harness_stat(admin, "errors_ebadf"), 0);
		hm_disconnect(admin);
	}
	assert_int_equal(harness_check_read(f, fd, 12345, 300000), 300000);
	assert_int_equal(harness_check_read(rel, fd, 4096, 8192), 8192);
	assert_int_equal(hm_close(rel), 0);
	assert_same((ssize_t)v.len, v.data, ref_read(fd, ref, sizeof ref, 4096), ref,
		    "a view taken before the restart");
	hm_view_release(&v);
	errno = 0;
	assert_int_equal(hm_pread(g, buf, 10, 0), -1);
	assert_int_equal(errno, ESTALE);
	assert_int_equal(hm_close(g), 0);
	assert_int_equal(hm_ping(c, NULL), 0);

	/* down for good: a clear error in about the time allowed */
	assert_int_equal(hm_set_reconnect(c, 300), 0);
	harness_kill(h);
	t0 = harness_now_ms();
	errno = 0;
	assert_int_equal(hm_pread(f, buf, 10, 0), -1);
	e = errno;
	took = harness_now_ms() - t0;
	if (e != ECONNRESET && e != EPIPE && e != ECONNREFUSED)
		fail_msg("a call with the daemon gone failed with %s", strerror(e));
	if (took < 250 || took > 5000)
		fail_msg("it took %lld ms with 300 allowed", (long long)took);
	/* back: the next call reconnects */
	harness_restart(h);
	assert_int_equal(harness_check_read(f, fd, MiB, 4096), 4096);
	assert_int_equal(hm_close(f), 0);
	hm_disconnect(c);
	close(fd);
}

static void
test_reconnect(void **state)
{
	run_reconnect(*state);
}

static void
test_reconnect_polling(void **state)
{
	setenv("HOTMAP_POLL", "1", 1);
	run_reconnect(*state);
}

/*
 * kill -9 under load.  Eight clients read a file with every transport
 * (frames, the shared region, views and batches in it, the polling ring)
 * while the daemon is killed and restarted three times.  The four with the
 * reconnect policy see no error at all; the four without it see only
 * errors that say the connection went (ECONNRESET, EPIPE, or while it is
 * down ECONNREFUSED or ENOENT), never a hang or SIGPIPE, and connect again
 * by hand.  Every byte read is checked.  Nothing is left behind: no
 * shared-memory region mapped and no descriptor open in the clients'
 * process, nothing in /dev/shm, and the daemon's socket gone once it
 * stops (harness_stop).
 */
#define KILL_CLIENTS	8
#define KILL_FILE_SIZE	(4 * MiB)
#define KILL_CALL_MS	15000	/* longer than any wait the library may take */

struct kill_client {
	const struct harness *h;
	const char *path;
	int fd;			/* the file, for pread's reference */
	hm_client *c;
	hm_file *f;
	unsigned kind;		/* 0 frames, 1 region, 2 views and batches, 3 ring */
	bool reconnect;
	volatile bool *stop;
	uint64_t reads, bytes, errors, reconnects;
	int64_t longest_ms;
	char failure[256];	/* empty: no failure */
};

/* A call's duration into the longest, failing the client past the bound. */
static bool
kill_timed(struct kill_client *k, int64_t t0)
{
	int64_t took = harness_now_ms() - t0;

	if (took > k->longest_ms)
		k->longest_ms = took;
	if (took > KILL_CALL_MS) {
		snprintf(k->failure, sizeof k->failure, "a call took %lld ms",
			 (long long)took);
		return false;
	}
	return true;
}

/* Without the policy: the error must name the lost connection; then
 * connect again by hand until the daemon is back. */
static bool
kill_lost(struct kill_client *k, int e, const char *what)
{
	int64_t deadline;

	if (k->reconnect || (e != ECONNRESET && e != EPIPE && e != ECONNREFUSED && e != ENOENT)) {
		snprintf(k->failure, sizeof k->failure, "%s failed: %s (%s)", what, strerror(e),
			 hm_last_error());
		return false;
	}
	k->errors++;
	hm_close(k->f);
	hm_disconnect(k->c);
	k->f = NULL;
	k->c = NULL;
	deadline = harness_now_ms() + KILL_CALL_MS;
	for (;;) {
		k->c = hm_connect(k->h->sock);
		if (k->c != NULL)
			k->f = hm_open(k->c, k->path, 0);
		if (k->f != NULL)
			break;
		hm_disconnect(k->c);
		k->c = NULL;
		if (harness_now_ms() > deadline) {
			snprintf(k->failure, sizeof k->failure, "could not connect again: %s",
				 strerror(errno));
			return false;
		}
		harness_sleep_ms(20);
	}
	k->reconnects++;
	return true;
}

static bool
kill_compare(struct kill_client *k, const void *got, ssize_t n, uint64_t off, size_t len,
	     uint8_t *ref)
{
	ssize_t want = pread(k->fd, ref, len, (off_t)off);

	if (n != want || (want > 0 && memcmp(got, ref, (size_t)want) != 0)) {
		snprintf(k->failure, sizeof k->failure,
			 "kind %u: %zu at %llu gave %zd bytes (pread %zd), or other bytes",
			 k->kind, len, (unsigned long long)off, n, want);
		return false;
	}
	k->reads++;
	k->bytes += (uint64_t)n;
	return true;
}

static void *
kill_reader(void *arg)
{
	struct kill_client *k = arg;
	uint64_t rng = 0x9e37 + k->kind * 7 + k->reconnect;
	uint8_t *buf = malloc(2 * (MiB + HARNESS_SLACK)), *ref = buf + MiB + HARNESS_SLACK;

	if (buf == NULL) {
		snprintf(k->failure, sizeof k->failure, "out of memory");
		return NULL;
	}
	while (!*k->stop && k->failure[0] == '\0') {
		size_t len = 1 + harness_rand(&rng) % (harness_rand(&rng) % 4 == 0 ? MiB : 64 * KiB);
		uint64_t off = harness_rand(&rng) % (KILL_FILE_SIZE + 4096);
		int64_t t0 = harness_now_ms();
		struct hm_view v;
		struct hm_io io[4];
		ssize_t n;
		int i;

		if (k->kind == 2 && harness_rand(&rng) % 2 == 0) {
			if (hm_view_range(k->f, off, len, &v) < 0) {
				int e = errno;

				if (kill_timed(k, t0))
					kill_lost(k, e, "hm_view_range");
				continue;
			}
			if (kill_timed(k, t0))
				kill_compare(k, v.data, (ssize_t)v.len, off, len, ref);
			hm_view_release(&v);
		} else if (k->kind == 2) {
			for (i = 0; i < 4; i++)
				io[i] = (struct hm_io){ .file = k->f, .offset = off + (uint64_t)i * 65536,
							.len = (len + 3) / 4, .buf = buf + i * (MiB / 4) };
			if (hm_read_batch(k->c, io, 4) < 0) {
				int e = errno;

				if (kill_timed(k, t0))
					kill_lost(k, e, "hm_read_batch");
				continue;
			}
			for (i = 0; i < 4 && kill_timed(k, t0); i++)
				if (!kill_compare(k, io[i].buf, io[i].result, io[i].offset,
						  io[i].len, ref))
					break;
		} else {
			n = hm_pread(k->f, buf, len, off);
			if (n < 0) {
				int e = errno;

				if (kill_timed(k, t0))
					kill_lost(k, e, "hm_pread");
				continue;
			}
			if (kill_timed(k, t0))
				kill_compare(k, buf, n, off, len, ref);
		}
	}
	free(buf);
	return NULL;
}

/* The names in dir, each followed by '/', into out. */
static void
list_dir(const char *dir, char *out, size_t len)
{
	struct dirent *e;
	DIR *d = opendir(dir);

	out[0] = '\0';
	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL)
		if (strlen(out) + strlen(e->d_name) + 2 < len)
			strcat(strcat(out, e->d_name), "/");
	closedir(d);
}

static unsigned
count_regions(void)
{
	return harness_count_maps("hotmap-region");
}

static void
test_kill_under_load(void **state)
{
	static const char *const shm_env[] = { "0", NULL, NULL, NULL };
	static const char *const poll_env[] = { "0", "0", "0", "1" };
	struct harness *h = *state;
	struct kill_client k[KILL_CLIENTS];
	pthread_t t[KILL_CLIENTS];
	volatile bool stop = false;
	char path[PATH_MAX], shm_before[4096], shm_after[4096];
	unsigned i, round;
	int fds_before;
	hm_client *admin;
	int fd;

	signal(SIGPIPE, SIG_DFL);	/* a SIGPIPE would end the test */
	harness_path(h, "f", path);
	harness_write_file(path, KILL_FILE_SIZE, 41);
	list_dir("/dev/shm", shm_before, sizeof shm_before);
	fds_before = harness_count_fds(getpid(), NULL);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	for (i = 0; i < KILL_CLIENTS; i++) {
		k[i] = (struct kill_client){ .h = h, .path = path, .fd = fd, .kind = i % 4,
					     .reconnect = i < KILL_CLIENTS / 2, .stop = &stop };
		if (shm_env[k[i].kind] != NULL)
			setenv("HOTMAP_SHM_SIZE", shm_env[k[i].kind], 1);
		else
			unsetenv("HOTMAP_SHM_SIZE");
		setenv("HOTMAP_POLL", poll_env[k[i].kind], 1);
		k[i].c = harness_connect(h);
		if (k[i].reconnect)
			assert_int_equal(hm_set_reconnect(k[i].c, KILL_CALL_MS - 5000), 0);
		k[i].f = hm_open(k[i].c, path, 0);
		assert_non_null(k[i].f);
	}
	unsetenv("HOTMAP_SHM_SIZE");
	setenv("HOTMAP_POLL", "0", 1);
	for (i = 0; i < KILL_CLIENTS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, kill_reader, &k[i]), 0);
	for (round = 0; round < 3; round++) {
		harness_sleep_ms(600);
		harness_kill(h);
		harness_sleep_ms(150);	/* long enough for every client to notice */
		harness_restart(h);
	}
	harness_sleep_ms(800);
	stop = true;
	for (i = 0; i < KILL_CLIENTS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	/* a reconnect keeps the transport hm_connect chose: the ring client
	 * with the policy polls again; the one connected again by hand took
	 * the environment of now (no ring) */
	admin = harness_connect(h);
	assert_int_equal(harness_stat(admin, "clients_polling"), 1);
	hm_disconnect(admin);
	for (i = 0; i < KILL_CLIENTS; i++) {
		print_message("# client %u (kind %u, reconnect %s): %llu reads, %llu MiB, "
			      "%llu errors, %llu reconnects by hand, longest call %lld ms\n",
			      i, k[i].kind, k[i].reconnect ? "on" : "off",
			      (unsigned long long)k[i].reads,
			      (unsigned long long)(k[i].bytes >> 20),
			      (unsigned long long)k[i].errors, (unsigned long long)k[i].reconnects,
			      (long long)k[i].longest_ms);
		if (k[i].failure[0] != '\0')
			fail_msg("client %u: %s", i, k[i].failure);
		assert_true(k[i].reads > 0);
		if (k[i].reconnect)
			assert_int_equal(k[i].errors, 0);
		hm_close(k[i].f);
		hm_disconnect(k[i].c);
	}
	close(fd);
	/* nothing left behind in this process or in /dev/shm */
	assert_int_equal(count_regions(), 0);
	assert_int_equal(harness_count_fds(getpid(), NULL), fds_before);
	list_dir("/dev/shm", shm_after, sizeof shm_after);
	assert_string_equal(shm_after, shm_before);
}

/*
 * A daemon that answers HELLO and hangs up at the first request, every
 * time: a call under the reconnect policy runs once more and then fails
 * with the connection's error, instead of reconnecting for ever (which
 * would also keep every other thread of the client waiting).
 */
struct fake_daemon {
	int listen_fd;
	unsigned accepted;	/* connections taken */
	volatile bool stop;
};

static void *
fake_daemon_main(void *arg)
{
	struct fake_daemon *d = arg;
	struct wire_header hdr;
	uint8_t msg[1024];

	while (!d->stop) {
		struct pollfd pfd = { .fd = d->listen_fd, .events = POLLIN };
		struct wire_msg m = { .n = 0 };
		int fd;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		fd = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		d->accepted++;
		if (wire_recv(fd, &hdr, msg, sizeof msg, 5000) == 1 && hdr.type == WIRE_HELLO) {
			wire_varint(&m, 1, WIRE_VERSION);
			wire_varint(&m, 4, WIRE_MAX_MESSAGE);
			if (wire_send_msg(fd, WIRE_HELLO_REPLY, hdr.id, &m, -1) == 0)
				wire_recv(fd, &hdr, msg, sizeof msg, 5000);	/* the request */
		}
		close(fd);	/* hung up without an answer */
	}
	return NULL;
}

static void
test_reconnect_once(void **state)
{
	struct harness *h = *state;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct fake_daemon d = { .listen_fd = -1 };
	pthread_t t;
	hm_client *c;
	int64_t t0, took;
	int e;

	harness_path(h, "fake.sock", sa.sun_path);
	d.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(d.listen_fd >= 0);
	assert_int_equal(bind(d.listen_fd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(d.listen_fd, 8), 0);
	assert_int_equal(pthread_create(&t, NULL, fake_daemon_main, &d), 0);
	setenv("HOTMAP_SHM_SIZE", "0", 1);
	c = hm_connect(sa.sun_path);
	unsetenv("HOTMAP_SHM_SIZE");
	assert_non_null(c);
	assert_int_equal(hm_set_reconnect(c, 5000), 0);
	alarm(60);	/* a call that never returns ends the test */
	t0 = harness_now_ms();
	errno = 0;
	assert_int_equal(hm_ping(c, NULL), -1);
	e = errno;
	took = harness_now_ms() - t0;
	alarm(0);
	d.stop = true;
	assert_int_equal(pthread_join(t, NULL), 0);
	close(d.listen_fd);
	hm_disconnect(c);
	if (e != ECONNRESET && e != EPIPE)
		fail_msg("the call failed with %s", strerror(e));
	/* the first connection, and one reconnect for the one retry */
	assert_int_equal(d.accepted, 2);
	if (took > 5000)
		fail_msg("it took %lld ms", (long long)took);
}

#define T(fn, o) cmocka_unit_test_prestate_setup_teardown(fn, setup, teardown, (void *)&(o))

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_batch_mixed_shm, opts_default),
		T(test_batch_mixed_socket, opts_default),
		T(test_batch_small_region, opts_default),
		T(test_shm_counts, opts_default),
		T(test_views_held, opts_default),
		T(test_views_region_full, opts_default),
		T(test_views_without_region, opts_default),
		T(test_view_after_disconnect, opts_default),
		T(test_client_dies_holding_views, opts_default),
		T(test_region_refused, opts_default),
		T(test_region_bounds, opts_default),
		T(test_cold_reads_offloaded, opts_default),
		T(test_warm, opts_default),
		T(test_shutdown_mid_stream, opts_default),
		T(test_files_listing, opts_default),
		T(test_evict, opts_default),
		T(test_connections_per_uid, opts_three_per_uid),
		T(test_idle_timeout, opts_idle_1s),
		T(test_idle_timeout_polling, opts_idle_1s_poll),
		T(test_poll_batch, opts_poll),
		T(test_poll_batch, opts_poll_asleep),
		T(test_poll_views, opts_poll),
		T(test_poll_single_reads, opts_poll),
		T(test_poll_single_reads, opts_poll_asleep),
		T(test_poll_client_dies, opts_poll),
		T(test_ring_checked, opts_poll),
		T(test_ring_checked, opts_poll_asleep),
		T(test_reconnect, opts_default),
		T(test_reconnect_polling, opts_poll),
		T(test_kill_under_load, opts_default),
		T(test_reconnect_once, opts_default),
	};

	return cmocka_run_group_tests_name("fastpath", tests, NULL, NULL);
}
