/* SPDX-License-Identifier: MIT */
/*
 * test_netfs.c - a file on a network file system under a real hotmapd:
 * faultfs (tests/faultfs.c) mounted as fuse.sshfs, which is what an sshfs
 * mount looks like to the daemon (statfs says FUSE, /proc/self/mountinfo
 * says fuse.sshfs).
 *
 * What it asserts: the daemon recognises it as a network file system and
 * says so (hm_stat's reason_text, and hm_files_ways, which hotmapctl stat
 * prints: the file system, network, private, not stale); the library
 * reads it itself with pread (hm_read_stats: no read through the daemon)
 * and every byte is right, through hm_pread, hm_read_batch, views and
 * view batches, after hm_warm too, and an I/O error reaches the caller as
 * EIO; opened by path (HM_O_PATH: the library has no descriptor) it is read
 * through the daemon, right too.  A local file held open is neither
 * private nor stale, and becomes stale once renamed over and opened again:
 * what told a network file "stale: replaced" did not weaken that.
 *
 * Skips as test_faults does where FUSE cannot be used; with
 * HOTMAP_REQUIRE_FUSE=1 that is a failure.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/hotmap_admin.h"
#include "tests/faultfs_ctl.h"
#include "tests/harness.h"
#include "tests/netfs_fixture.h"

#define KiB (1024u)
#define MiB (1024u * 1024u)

#define DATA_SIZE	(3 * MiB + 4321)	/* not a multiple of a page */
#define DATA_SEED	11
#define BAD_OFF		(2 * MiB)
#define BAD_LEN		(8 * KiB)

static const struct harness_opts opts_root = { .with_root = true };
/* copies of network files: room for data's, not for data's and small's
 * (4099 bytes); and room for small's only */
static const struct harness_opts opts_copy_one = {
	.with_root = true, .extra = { "--network-copy-max", "3154145", NULL } };
static const struct harness_opts opts_copy_small = {
	.with_root = true, .extra = { "--network-copy-max", "1M", NULL } };

static int
setup(void **state)
{
	return netfs_setup(state, &opts_root, DATA_SIZE, DATA_SEED);
}

static int
setup_copy_one(void **state)
{
	return netfs_setup(state, &opts_copy_one, DATA_SIZE, DATA_SEED);
}

static int
setup_copy_small(void **state)
{
	return netfs_setup(state, &opts_copy_small, DATA_SIZE, DATA_SEED);
}

/* hm_files_ways' row of (dev, ino) into *out (its fs copied); false if none.
 * Prefers a row that is not stale, as hotmapctl stat does. */
struct file_row {
	struct hm_file_info info;
	struct hm_read_ways ways;	/* where it is: fs, network, private_entry */
};

struct find {
	uint64_t dev, ino;
	bool found;
	struct file_row row;
};

static void
find_cb(const struct hm_file_info *info, const struct hm_read_ways *ways, void *arg)
{
	struct find *q = arg;

	if (info->dev != q->dev || info->ino != q->ino || (q->found && !q->row.info.stale))
		return;
	q->row.info = *info;
	q->row.info.path = NULL;	/* valid during the callback only */
	memset(&q->row.ways, 0, sizeof q->row.ways);
	memcpy(&q->row.ways, ways, ways->size < sizeof q->row.ways ? ways->size : sizeof q->row.ways);
	q->found = true;
}

static struct file_row
file_row(hm_client *c, const char *path)
{
	struct find q = { 0 };
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	q.dev = (uint64_t)st.st_dev;
	q.ino = (uint64_t)st.st_ino;
	assert_int_equal(hm_files_ways(c, find_cb, &q), 0);
	assert_true(q.found);
	return q.row;
}

/* Every byte of the file, in reads of a few sizes, against pread. */
static void
check_whole(hm_file *f, int fd)
{
	static const size_t sizes[] = { 4 * KiB, 64 * KiB + 7, MiB };
	uint64_t off;
	size_t i;

	for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		for (off = 0; off < DATA_SIZE + sizes[i]; off += sizes[i])
			harness_check_read(f, fd, off, sizes[i]);
}

static void
test_network_path(void **state)
{
	struct netfs_fixture *fx = *state;
	hm_client *c = harness_connect(fx->h);
	struct hm_read_stats rs = { .size = sizeof rs };
	struct file_row row;
	struct hm_stat st;
	hm_file *f = hm_open(c, fx->data, 0);
	int fd = open(fx->data, O_RDONLY);

	assert_non_null(f);
	assert_true(fd >= 0);
	assert_int_equal(hm_stat(f, &st), 0);
	assert_int_equal(st.backend, HM_BACKEND_PREAD);
	assert_int_equal(st.reason, HM_REASON_NETWORK_FS);
	assert_int_equal(st.mapped_length, 0);
	assert_int_equal(st.direct, HM_DIRECT_NO);
	assert_string_equal(st.reason_text,
			    "network-fs: network file system (fuse.sshfs): read with pread, never mapped");

	/* what hotmapctl stat prints it from */
	row = file_row(c, fx->data);
	assert_string_equal(row.ways.fs, "fuse.sshfs");
	assert_int_equal(row.ways.network, 1);
	assert_int_equal(row.ways.private_entry, 1);
	assert_int_equal(row.info.stale, 0);	/* it was called replaced */
	assert_int_equal(row.info.backend, HM_BACKEND_PREAD);
	assert_int_equal(row.info.reason, HM_REASON_NETWORK_FS);

	check_whole(f, fd);
	/* read in this process, with pread: none went to the daemon */
	assert_int_equal(hm_read_stats(f, &rs), 0);
	assert_true(rs.pread_reads > 0);
	assert_int_equal(rs.daemon_reads, 0);

	/* warmed by the daemon, then read: the same bytes */
	assert_int_equal(hm_warm(f, 0, UINT64_MAX), DATA_SIZE);
	assert_int_equal(hm_warm(f, DATA_SIZE - 10, 100), 10);
	check_whole(f, fd);
	assert_int_equal(hm_close(f), 0);
	close(fd);
	hm_disconnect(c);
}

static void
test_network_views_batches(void **state)
{
	struct netfs_fixture *fx = *state;
	hm_client *c = harness_connect(fx->h);
	hm_file *f = hm_open(c, fx->data, 0);
	int fd = open(fx->data, O_RDONLY);
	struct hm_read_stats rs = { .size = sizeof rs };
	static const uint64_t offs[] = { 0, 4095, MiB - 3, DATA_SIZE - 100, DATA_SIZE, DATA_SIZE + 5 };
	enum { N = sizeof offs / sizeof offs[0], LEN = 70000 };
	struct hm_io io[N];
	struct hm_view_io vio[N];
	uint8_t *want = malloc(LEN), *got[N];
	size_t i;

	assert_non_null(f);
	assert_true(fd >= 0);
	assert_non_null(want);
	for (i = 0; i < N; i++) {
		struct hm_view v;
		ssize_t n = pread(fd, want, LEN, (off_t)offs[i]);

		assert_true(n >= 0);
		assert_int_equal(hm_view_range(f, offs[i], LEN, &v), 0);
		assert_int_equal(v.len, (size_t)n);
		assert_memory_equal(v.data, want, (size_t)n);
		assert_int_equal(hm_view_check(&v), 0);
		hm_view_release(&v);

		got[i] = malloc(LEN);
		assert_non_null(got[i]);
		io[i] = (struct hm_io){ .file = f, .buf = got[i], .len = LEN, .offset = offs[i] };
		vio[i] = (struct hm_view_io){ .file = f, .offset = offs[i], .len = LEN };
	}
	assert_int_equal(hm_read_batch(c, io, N), 0);
	assert_int_equal(hm_view_batch(c, vio, N), 0);
	for (i = 0; i < N; i++) {
		ssize_t n = pread(fd, want, LEN, (off_t)offs[i]);

		assert_int_equal(io[i].result, n);
		assert_memory_equal(got[i], want, (size_t)n);
		assert_int_equal(vio[i].error, 0);
		assert_int_equal(vio[i].view.len, (size_t)n);
		assert_memory_equal(vio[i].view.data, want, (size_t)n);
		hm_view_release(&vio[i].view);
		free(got[i]);
	}
	assert_int_equal(hm_read_stats(f, &rs), 0);
	assert_int_equal(rs.daemon_reads, 0);
	free(want);
	assert_int_equal(hm_close(f), 0);
	close(fd);
	hm_disconnect(c);
}

/* An I/O error of the file system reaches the caller as pread's would. */
static void
test_network_eio(void **state)
{
	struct netfs_fixture *fx = *state;
	hm_client *c = harness_connect(fx->h);
	hm_file *f = hm_open(c, fx->data, 0);
	char reply[128], buf[4096];
	int fd = open(fx->data, O_RDONLY);

	assert_non_null(f);
	assert_true(fd >= 0);
	if (faultfs_cmd(&fx->fs, reply, sizeof reply, "eio data %u %u", BAD_OFF, BAD_LEN) != 0)
		fail_msg("faultfs: %s", reply);
	errno = 0;
	assert_int_equal(hm_pread(f, buf, sizeof buf, BAD_OFF + 4096), -1);
	assert_int_equal(errno, EIO);
	harness_check_read(f, fd, 0, 64 * KiB);	/* a good range still reads right */
	if (faultfs_cmd(&fx->fs, reply, sizeof reply, "restore data") != 0)
		fail_msg("faultfs: %s", reply);
	harness_check_read(f, fd, BAD_OFF, BAD_LEN);
	assert_int_equal(hm_close(f), 0);
	close(fd);
	hm_disconnect(c);
}

/* HM_O_PATH: the daemon opened the file, the library has no descriptor of
 * it: reads go through the daemon, right all the same. */
static void
test_network_by_path(void **state)
{
	struct netfs_fixture *fx = *state;
	hm_client *c = harness_connect(fx->h);
	hm_file *f = hm_open(c, fx->data, HM_O_PATH);
	struct hm_read_stats rs = { .size = sizeof rs };
	struct hm_stat st;
	int fd = open(fx->data, O_RDONLY);

	assert_non_null(f);
	assert_true(fd >= 0);
	assert_int_equal(hm_stat(f, &st), 0);
	assert_int_equal(st.reason, HM_REASON_NETWORK_FS);
	assert_non_null(strstr(st.reason_text, "(fuse.sshfs): read with pread, never mapped"));
	check_whole(f, fd);
	assert_int_equal(hm_read_stats(f, &rs), 0);
	assert_true(rs.daemon_reads > 0);
	assert_int_equal(rs.pread_reads, 0);
	assert_int_equal(hm_close(f), 0);
	close(fd);
	hm_disconnect(c);
}

/* Rows of hm_files for one (dev, ino): how many, how many stale, private. */
struct count {
	uint64_t dev, ino;
	unsigned rows, stale, private_entry;
};

static void
count_cb(const struct hm_file_info *info, const struct hm_read_ways *ways, void *arg)
{
	struct count *q = arg;

	if (info->dev != q->dev || info->ino != q->ino)
		return;
	q->rows++;
	q->stale += info->stale != 0;
	q->private_entry += ways->private_entry != 0;
}

/* A local file is not private, nor stale while it is unchanged; changed
 * in place and opened again, the version an old handle holds is stale:
 * what stopped a network file being called "stale: replaced" left that
 * as it was. */
static void
test_local_stale_still_detected(void **state)
{
	struct netfs_fixture *fx = *state;
	hm_client *c = harness_connect(fx->h);
	char path[PATH_MAX];
	struct file_row row;
	struct count q = { 0 };
	struct stat st;
	hm_file *a, *b;

	harness_path(fx->h, "root/local", path);
	harness_write_file(path, 100 * KiB, 3);
	a = hm_open(c, path, 0);
	assert_non_null(a);
	row = file_row(c, path);
	assert_int_equal(row.ways.private_entry, 0);
	assert_int_equal(row.info.stale, 0);
	assert_int_equal(row.ways.network, 0);
	assert_true(row.ways.fs[0] != '\0');

	harness_write_file(path, 200 * KiB, 4);	/* in place: the same inode */
	b = hm_open(c, path, 0);
	assert_non_null(b);
	assert_int_equal(stat(path, &st), 0);
	q.dev = (uint64_t)st.st_dev;
	q.ino = (uint64_t)st.st_ino;
	assert_int_equal(hm_files_ways(c, count_cb, &q), 0);
	assert_int_equal(q.rows, 2);
	assert_int_equal(q.stale, 1);
	assert_int_equal(q.private_entry, 0);
	assert_int_equal(hm_close(a), 0);
	assert_int_equal(hm_close(b), 0);
	hm_disconnect(c);
}

/* Copies of network files (storage.h, "Copies of network files"). */
#define PREAD_TEXT "network-fs: network file system (fuse.sshfs): read with pread, never mapped"

/* [off, off + len) of f is seed's content (the file as it was), as the
 * file is sized size. */
static void
check_version(hm_file *f, uint64_t size, uint64_t seed, uint64_t off, size_t len)
{
	uint8_t *got = malloc(len), *want = malloc(len);
	size_t n = off >= size ? 0 : size - off < len ? (size_t)(size - off) : len;

	assert_non_null(got);
	assert_non_null(want);
	harness_fill(want, n, seed, off);
	assert_int_equal(hm_pread(f, got, len, off), (ssize_t)n);
	if (n > 0)
		assert_memory_equal(got, want, n);
	free(got);
	free(want);
}

static void
test_network_copy(void **state)
{
	struct netfs_fixture *fx = *state;
	hm_client *c = harness_connect(fx->h);
	struct hm_read_stats rs = { .size = sizeof rs };
	struct hm_stat st;
	char reply[256];
	hm_file *f = hm_open(c, fx->data, 0), *g, *n;
	int fd = open(fx->data, O_RDONLY);

	assert_non_null(f);
	assert_true(fd >= 0);
	assert_false(netfs_reads_copy(f));
	/* the warm fills hotmapd's copy and gives it to f */
	assert_int_equal(hm_warm(f, 0, UINT64_MAX), DATA_SIZE);
	assert_true(netfs_reads_copy(f));
	check_whole(f, fd);
	assert_int_equal(hm_read_stats(f, &rs), 0);
	assert_true(rs.copy_reads > 0);
	assert_int_equal(rs.pread_reads, 0);
	assert_int_equal(rs.daemon_reads, 0);
	/* a warm again reads nothing, and says the range */
	assert_int_equal(hm_warm(f, DATA_SIZE - 10, 100), 10);

	/* a new open gets it with the reply */
	g = hm_open(c, fx->data, 0);
	assert_non_null(g);
	assert_true(netfs_reads_copy(g));
	check_whole(g, fd);
	assert_int_equal(hm_read_stats(g, &rs), 0);
	assert_true(rs.copy_reads > 0);
	assert_int_equal(rs.pread_reads, 0);

	/* the file rewritten on the server (new content, new mtime): a
	 * new open reads the new bytes; f and g keep the version they
	 * opened, whole */
	if (faultfs_cmd(&fx->fs, reply, sizeof reply, "seed data 99") != 0)
		fail_msg("faultfs: %s", reply);
	n = hm_open(c, fx->data, 0);
	assert_non_null(n);
	assert_int_equal(hm_stat(n, &st), 0);
	assert_string_equal(st.reason_text, PREAD_TEXT);
	check_version(n, DATA_SIZE, 99, 0, 64 * KiB);
	check_version(n, DATA_SIZE, 99, BAD_OFF, MiB);
	check_version(f, DATA_SIZE, DATA_SEED, BAD_OFF, MiB);
	check_version(g, DATA_SIZE, DATA_SEED, 0, 64 * KiB);
	/* and warmed, the new version is copied */
	assert_int_equal(hm_warm(n, 0, UINT64_MAX), DATA_SIZE);
	assert_true(netfs_reads_copy(n));
	check_version(n, DATA_SIZE, 99, DATA_SIZE - 5000, 64 * KiB);
	if (faultfs_cmd(&fx->fs, reply, sizeof reply, "seed data %u", DATA_SEED) != 0)
		fail_msg("faultfs: %s", reply);
	assert_int_equal(hm_close(n), 0);
	assert_int_equal(hm_close(g), 0);
	assert_int_equal(hm_close(f), 0);
	close(fd);
	hm_disconnect(c);
}

/* Mappings of hotmapd's copies in this process (/proc/self/maps names
 * the daemon's memfd "hotmap-copy"). */
static unsigned
copy_maps(void)
{
	return harness_count_maps("/memfd:hotmap-copy");
}

/* Views of a file with a copy point into the copy: two views of ranges k
 * bytes apart lie k bytes apart, right byte for byte, past the end too
 * (clipped; at the end, empty), in hm_view_batch as well; they count as
 * copies, not preads; they stay readable after hm_close and
 * hm_disconnect, until released, and the last release unmaps the copy:
 * after hm_close, and after hm_disconnect of a client whose file was
 * never closed. */
static void
test_network_copy_views(void **state)
{
	struct netfs_fixture *fx = *state;
	hm_client *c = harness_connect(fx->h);
	struct hm_read_stats rs = { .size = sizeof rs };
	struct hm_view_io vio[2];
	struct hm_view a, b, tail, end;
	hm_file *f = hm_open(c, fx->data, 0);
	uint8_t *want = malloc(DATA_SIZE);
	unsigned base = copy_maps();

	assert_non_null(f);
	assert_non_null(want);
	harness_fill(want, DATA_SIZE, DATA_SEED, 0);
	assert_int_equal(hm_warm(f, 0, UINT64_MAX), DATA_SIZE);
	assert_true(netfs_reads_copy(f));
	assert_true(copy_maps() > base);
	assert_int_equal(hm_view_range(f, 4096, 256 * KiB, &a), 0);
	assert_int_equal(hm_view_range(f, 4096 + 777, 64 * KiB, &b), 0);
	assert_int_equal(a.len, 256 * KiB);
	assert_int_equal(b.len, 64 * KiB);
	assert_ptr_equal((const uint8_t *)b.data, (const uint8_t *)a.data + 777);
	assert_memory_equal(a.data, want + 4096, a.len);
	assert_int_equal(hm_view_range(f, DATA_SIZE - 100, MiB, &tail), 0);
	assert_int_equal(tail.len, 100);
	assert_memory_equal(tail.data, want + DATA_SIZE - 100, 100);
	assert_int_equal(hm_view_range(f, DATA_SIZE + 5, 10, &end), 0);
	assert_int_equal(end.len, 0);
	hm_view_release(&end);
	assert_int_equal(hm_view_check(&a), 0);
	vio[0] = (struct hm_view_io){ .file = f, .offset = 0, .len = 8192 };
	vio[1] = (struct hm_view_io){ .file = f, .offset = 4096, .len = 100 };
	assert_int_equal(hm_view_batch(c, vio, 2), 0);
	assert_int_equal(vio[0].error, 0);
	assert_int_equal(vio[1].error, 0);
	assert_ptr_equal(vio[1].view.data, (const uint8_t *)vio[0].view.data + 4096);
	assert_ptr_equal(vio[1].view.data, a.data);
	assert_memory_equal(vio[0].view.data, want, 8192);
	assert_int_equal(hm_read_stats(f, &rs), 0);
	assert_int_equal(rs.pread_reads, 0);
	assert_int_equal(rs.daemon_reads, 0);
	assert_true(rs.copy_reads >= 6);
	/* the views hold the copy past the file and the client */
	assert_int_equal(hm_close(f), 0);
	hm_disconnect(c);
	assert_memory_equal(a.data, want + 4096, a.len);
	assert_memory_equal(vio[0].view.data, want, 8192);
	hm_view_release(&a);
	hm_view_release(&vio[0].view);
	assert_memory_equal(b.data, want + 4096 + 777, b.len);
	assert_memory_equal(tail.data, want + DATA_SIZE - 100, 100);
	hm_view_release(&b);
	hm_view_release(&tail);
	assert_true(copy_maps() > base);	/* vio[1] holds it */
	hm_view_release(&vio[1].view);
	assert_int_equal(copy_maps(), base);

	/* a client disconnected with its file open: the same */
	c = harness_connect(fx->h);
	f = hm_open(c, fx->data, 0);
	assert_non_null(f);
	assert_true(netfs_reads_copy(f));	/* given with the open's reply */
	assert_int_equal(hm_view_range(f, 100, 1000, &a), 0);
	hm_disconnect(c);
	assert_memory_equal(a.data, want + 100, 1000);
	hm_view_release(&a);
	assert_int_equal(copy_maps(), base);
	free(want);
}

/* hotmapctl stat's listing says so, with the file closed too;
 * hotmapctl evict drops the copy. */
static void
test_network_copy_listed_evicted(void **state)
{
	struct netfs_fixture *fx = *state;
	hm_client *c = harness_connect(fx->h);
	struct hm_evicted ev;
	struct file_row row;
	hm_file *f = hm_open(c, fx->data, 0);

	assert_non_null(f);
	row = file_row(c, fx->data);
	assert_int_equal(row.ways.copy_bytes, 0);
	assert_int_equal(hm_warm(f, 0, UINT64_MAX), DATA_SIZE);
	row = file_row(c, fx->data);
	assert_int_equal(row.ways.copy_bytes, DATA_SIZE);
	assert_int_equal(row.ways.network, 1);
	assert_int_equal(hm_close(f), 0);
	/* closed: its private entry is gone, its copy listed on its own */
	row = file_row(c, fx->data);
	assert_int_equal(row.ways.copy_bytes, DATA_SIZE);
	assert_int_equal(row.info.handles, 0);
	assert_int_equal(row.info.reason, HM_REASON_NETWORK_FS);
	assert_string_equal(row.ways.fs, "fuse.sshfs");
	assert_int_equal(hm_evict(c, fx->data, &ev), 0);
	assert_int_equal(ev.files, 1);
	f = hm_open(c, fx->data, 0);
	assert_non_null(f);
	assert_false(netfs_reads_copy(f));
	row = file_row(c, fx->data);
	assert_int_equal(row.ways.copy_bytes, 0);
	assert_int_equal(hm_close(f), 0);
	hm_disconnect(c);
}

/* hotmapd killed and started again: a file keeps the copy it was given
 * (its version, still mapped), and hm_stat says so though the new daemon
 * has none; a new open reads with pread. */
static void
test_network_copy_kept_across_reconnect(void **state)
{
	struct netfs_fixture *fx = *state;
	hm_client *c = harness_connect(fx->h);
	struct hm_read_stats rs = { .size = sizeof rs };
	struct hm_stat st;
	hm_file *f = hm_open(c, fx->data, 0), *n;
	int fd = open(fx->data, O_RDONLY);

	assert_non_null(f);
	assert_true(fd >= 0);
	assert_int_equal(hm_warm(f, 0, UINT64_MAX), DATA_SIZE);
	assert_true(netfs_reads_copy(f));
	assert_int_equal(hm_set_reconnect(c, 10000), 0);
	harness_kill(fx->h);
	harness_restart(fx->h);
	check_whole(f, fd);
	assert_int_equal(hm_stat(f, &st), 0);	/* reconnected, reopened */
	assert_string_equal(st.reason_text,
			    "network-fs: network file system: read from hotmapd's copy in memory "
			    "(3150049 bytes), as this file was given it");
	check_whole(f, fd);
	assert_int_equal(hm_read_stats(f, &rs), 0);
	assert_int_equal(rs.pread_reads, 0);
	assert_int_equal(rs.daemon_reads, 0);
	n = hm_open(c, fx->data, 0);
	assert_non_null(n);
	assert_false(netfs_reads_copy(n));
	assert_int_equal(hm_close(n), 0);
	assert_int_equal(hm_close(f), 0);
	close(fd);
	hm_disconnect(c);
}

/* Cut short on the server while a copy is held: whoever has the copy
 * reads it (no SIGBUS: it is sealed), a new open sees the new size. */
static void
test_network_copy_truncated(void **state)
{
	struct netfs_fixture *fx = *state;
	hm_client *c = harness_connect(fx->h);
	struct hm_stat st;
	char reply[256];
	uint8_t b[16];
	hm_file *f = hm_open(c, fx->data, 0), *n;

	assert_non_null(f);
	assert_int_equal(hm_warm(f, 0, UINT64_MAX), DATA_SIZE);
	assert_true(netfs_reads_copy(f));
	if (faultfs_cmd(&fx->fs, reply, sizeof reply, "size data %u", MiB) != 0)
		fail_msg("faultfs: %s", reply);
	check_version(f, DATA_SIZE, DATA_SEED, BAD_OFF, MiB);
	check_version(f, DATA_SIZE, DATA_SEED, DATA_SIZE - 100, 4 * KiB);
	n = hm_open(c, fx->data, 0);
	assert_non_null(n);
	assert_int_equal(hm_stat(n, &st), 0);
	assert_int_equal(st.size, MiB);
	assert_string_equal(st.reason_text, PREAD_TEXT);
	assert_int_equal(hm_pread(n, b, sizeof b, BAD_OFF), 0);
	check_version(n, MiB, DATA_SEED, MiB - 100, 4 * KiB);
	if (faultfs_cmd(&fx->fs, reply, sizeof reply, "restore data") != 0)
		fail_msg("faultfs: %s", reply);
	assert_int_equal(hm_close(n), 0);
	assert_int_equal(hm_close(f), 0);
	hm_disconnect(c);
}

/* network-copy-max: room for data's copy alone; small's, filled next,
 * drops it (the least recently given out). */
static void
test_network_copy_lru(void **state)
{
	struct netfs_fixture *fx = *state;
	hm_client *c = harness_connect(fx->h);
	char small[PATH_MAX];
	hm_file *f, *s, *g;
	int fd, i;

	assert_true(snprintf(small, sizeof small, "%s/small", fx->fs.mnt) < (int)sizeof small);
	f = hm_open(c, fx->data, 0);
	assert_non_null(f);
	assert_int_equal(hm_warm(f, 0, UINT64_MAX), DATA_SIZE);
	assert_true(netfs_reads_copy(f));
	/* closed: a dropped copy still mapped is charged to the uid
	 * (test_copy_held_charged, tests/test_netfs_copy.c) */
	assert_int_equal(hm_close(f), 0);
	s = hm_open(c, small, 0);
	assert_non_null(s);
	assert_int_equal(hm_warm(s, 0, UINT64_MAX), 4099);
	/* data's copy, dropped for small's, is charged to the uid until
	 * hotmapd hears that its last holder let go, which comes when the
	 * closer thread has closed hotmapd's own descriptor of it: until
	 * then small's copy may be refused, and a warm after gets it */
	for (i = 0; i < 500 && !netfs_reads_copy(s); i++) {
		usleep(10000);
		assert_int_equal(hm_warm(s, 0, UINT64_MAX), 4099);
	}
	assert_true(netfs_reads_copy(s));
	fd = open(small, O_RDONLY);
	assert_true(fd >= 0);
	check_whole(s, fd);
	close(fd);
	g = hm_open(c, fx->data, 0);
	assert_non_null(g);
	assert_false(netfs_reads_copy(g));	/* dropped for small's */
	check_version(g, DATA_SIZE, DATA_SEED, BAD_OFF, MiB);
	assert_int_equal(hm_close(g), 0);
	assert_int_equal(hm_close(s), 0);
	hm_disconnect(c);
}

/* A file larger than network-copy-max is not copied: read with pread. */
static void
test_network_copy_too_large(void **state)
{
	struct netfs_fixture *fx = *state;
	hm_client *c = harness_connect(fx->h);
	struct hm_read_stats rs = { .size = sizeof rs };
	hm_file *f = hm_open(c, fx->data, 0);
	int fd = open(fx->data, O_RDONLY);

	assert_non_null(f);
	assert_true(fd >= 0);
	assert_int_equal(hm_warm(f, 0, UINT64_MAX), DATA_SIZE);
	assert_false(netfs_reads_copy(f));
	check_whole(f, fd);
	assert_int_equal(hm_read_stats(f, &rs), 0);
	assert_int_equal(rs.copy_reads, 0);
	assert_true(rs.pread_reads > 0);
	assert_int_equal(hm_close(f), 0);
	close(fd);
	hm_disconnect(c);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, netfs_teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_network_path),
		T(test_network_views_batches),
		T(test_network_eio),
		T(test_network_by_path),
		T(test_local_stale_still_detected),
		T(test_network_copy),
		T(test_network_copy_views),
		T(test_network_copy_truncated),
		T(test_network_copy_listed_evicted),
		T(test_network_copy_kept_across_reconnect),
		cmocka_unit_test_setup_teardown(test_network_copy_lru, setup_copy_one, netfs_teardown),
		cmocka_unit_test_setup_teardown(test_network_copy_too_large, setup_copy_small,
						netfs_teardown),
	};
	int skip;

	signal(SIGPIPE, SIG_IGN);
	skip = faultfs_skip_status("test_netfs");
	if (skip >= 0)
		return skip;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
