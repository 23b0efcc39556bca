/* SPDX-License-Identifier: MIT */
/*
 * test_netfs_copy.c - what hotmapd's copy in memory of a network file
 * (storage.h, "Copies of network files") must not give, under a real
 * hotmapd on faultfs (tests/faultfs.c) mounted as fuse.sshfs, as
 * test_netfs.c does (which tests what it gives).
 *
 * What it asserts: a copy is of its mount's file: after an unmount, the
 * next mount (same device number, inode, size and times) gets no copy of
 * the old one's bytes.  A handle of an older version does not drop the
 * newer version's copy.  A file changed in the last 2 s is not copied
 * (the racy timestamp), and hm_stat says so.  A client that does not say
 * it takes copies gets none, and its warms read.  A fill that hangs is
 * abandoned at its deadline and holds no other copy back.  A dropped copy
 * a client still maps is charged to its uid, which gets no copy past the
 * budget until it lets go.
 *
 * Skips as test_netfs does where FUSE cannot be used; with
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

#define DATA_SIZE	(MiB + 4321)	/* not a multiple of a page */
#define DATA_SEED	11

static const struct harness_opts opts_copy = { .with_root = true };
/* room for data's copy and small's (4099 bytes) less one byte; a fill
 * abandoned after 1 s */
static const struct harness_opts opts_fill = {
	.with_root = true,
	.extra = { "--network-copy-max", "1056995", "--network-copy-fill-timeout", "1", NULL } };

static int
setup(void **state)
{
	return netfs_setup(state, &opts_copy, DATA_SIZE, DATA_SEED);
}

/* room for one copy of data */
static const struct harness_opts opts_held = {
	.with_root = true, .extra = { "--network-copy-max", "1056995", NULL } };

static int
setup_held(void **state)
{
	return netfs_setup(state, &opts_held, DATA_SIZE, DATA_SEED);
}

static int
setup_fill(void **state)
{
	return netfs_setup(state, &opts_fill, DATA_SIZE, DATA_SEED);
}

static void
check_whole(hm_file *f, int fd)
{
	uint64_t off;

	for (off = 0; off < DATA_SIZE + 64 * KiB; off += 64 * KiB)
		harness_check_read(f, fd, off, 64 * KiB);
}

/* Unmounted and mounted again: the new mount's file has the old one's
 * device number (the kernel reuses it), inode, size and times; a new
 * server could serve anything under them.  Its opener gets no copy of
 * the old mount's bytes; warmed, it gets its own. */
static void
test_copy_bound_to_mount(void **state)
{
	struct netfs_fixture *fx = *state;
	hm_client *c = harness_connect(fx->h);
	struct stat a, b;
	hm_file *f = hm_open(c, fx->data, 0);
	int fd;

	assert_non_null(f);
	assert_int_equal(hm_warm(f, 0, UINT64_MAX), DATA_SIZE);
	assert_true(netfs_reads_copy(f));
	assert_int_equal(stat(fx->data, &a), 0);
	assert_int_equal(hm_close(f), 0);
	netfs_unmount(fx);
	netfs_mount(fx);
	assert_int_equal(stat(fx->data, &b), 0);
	if (a.st_dev != b.st_dev)	/* another mount took the number meanwhile */
		fprintf(stderr, "# the new mount has another device number: a weaker test\n");
	assert_int_equal(a.st_ino, b.st_ino);
	assert_int_equal(a.st_size, b.st_size);
	assert_int_equal(a.st_mtime, b.st_mtime);
	f = hm_open(c, fx->data, 0);
	assert_non_null(f);
	assert_false(netfs_reads_copy(f));
	fd = open(fx->data, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(hm_warm(f, 0, UINT64_MAX), DATA_SIZE);
	assert_true(netfs_reads_copy(f));
	check_whole(f, fd);
	close(fd);
	assert_int_equal(hm_close(f), 0);
	hm_disconnect(c);
}

/* A handle opened before the file changed, warmed after the new version
 * was copied, leaves that copy alone: a new open still gets it. */
static void
test_copy_older_handle_keeps_newer(void **state)
{
	struct netfs_fixture *fx = *state;
	hm_client *c = harness_connect(fx->h);
	char reply[256];
	hm_file *old = hm_open(c, fx->data, 0), *n, *g;

	assert_non_null(old);
	if (faultfs_cmd(&fx->fs, reply, sizeof reply, "seed data 99") != 0)
		fail_msg("faultfs: %s", reply);
	n = hm_open(c, fx->data, 0);
	assert_non_null(n);
	assert_int_equal(hm_warm(n, 0, UINT64_MAX), DATA_SIZE);
	assert_true(netfs_reads_copy(n));
	(void)hm_warm(old, 0, UINT64_MAX);	/* its version is gone: no copy */
	assert_false(netfs_reads_copy(old));
	g = hm_open(c, fx->data, 0);
	assert_non_null(g);
	assert_true(netfs_reads_copy(g));
	assert_int_equal(hm_close(g), 0);
	assert_int_equal(hm_close(n), 0);
	assert_int_equal(hm_close(old), 0);
	hm_disconnect(c);
}

/* A file whose mtime is now (sshfs: whole seconds, ctime the same) may
 * be rewritten in place within that second with the same size and
 * times: its copy is not kept, and hm_stat says why; reads are right. */
static void
test_copy_racy_mtime(void **state)
{
	struct netfs_fixture *fx = *state;
	hm_client *c = harness_connect(fx->h);
	struct hm_stat st;
	char reply[256];
	hm_file *f;
	int fd;

	if (faultfs_cmd(&fx->fs, reply, sizeof reply, "touch data") != 0)
		fail_msg("faultfs: %s", reply);
	f = hm_open(c, fx->data, 0);
	assert_non_null(f);
	assert_int_equal(hm_warm(f, 0, UINT64_MAX), DATA_SIZE);
	assert_false(netfs_reads_copy(f));
	assert_int_equal(hm_stat(f, &st), 0);
	assert_string_equal(st.reason_text, "network-fs: network file system (fuse.sshfs): read "
			    "with pread, not copied: changed within 2 s of its copy");
	fd = open(fx->data, O_RDONLY);
	assert_true(fd >= 0);
	check_whole(f, fd);
	close(fd);
	assert_int_equal(hm_close(f), 0);
	hm_disconnect(c);
}

/* A client that does not say it takes copies (HOTMAP_NETWORK_COPY=0, as
 * any libhotmap before them) is given none, at OPEN or WARM, though the
 * daemon keeps one; its warm is a warm, and it reads with pread, right. */
static void
test_copy_not_to_client_without(void **state)
{
	struct netfs_fixture *fx = *state;
	hm_client *c = harness_connect(fx->h), *old;
	struct hm_read_stats rs = { .size = sizeof rs };
	hm_file *f = hm_open(c, fx->data, 0), *g;
	int fd;

	assert_non_null(f);
	assert_int_equal(hm_warm(f, 0, UINT64_MAX), DATA_SIZE);
	assert_true(netfs_reads_copy(f));
	assert_int_equal(setenv("HOTMAP_NETWORK_COPY", "0", 1), 0);
	old = harness_connect(fx->h);
	assert_int_equal(unsetenv("HOTMAP_NETWORK_COPY"), 0);
	g = hm_open(old, fx->data, HM_O_WARM);
	assert_non_null(g);
	assert_false(netfs_reads_copy(g));
	assert_int_equal(hm_warm(g, 0, UINT64_MAX), DATA_SIZE);
	assert_false(netfs_reads_copy(g));
	fd = open(fx->data, O_RDONLY);
	assert_true(fd >= 0);
	check_whole(g, fd);
	close(fd);
	assert_int_equal(hm_read_stats(g, &rs), 0);
	assert_int_equal(rs.copy_reads, 0);
	assert_true(rs.pread_reads > 0);
	assert_int_equal(hm_close(g), 0);
	assert_int_equal(hm_close(f), 0);
	hm_disconnect(old);
	hm_disconnect(c);
}

/* A fill whose reads hang (a FUSE server that stopped answering) holds
 * no copy back past its deadline: its reservation is let go, another
 * file is copied; answered at last, it is not kept, and hm_stat says why.
 * (Outcomes, polled for with a generous bound: no timing decides.) */
static void
test_copy_fill_stalled(void **state)
{
	struct netfs_fixture *fx = *state;
	hm_client *c = harness_connect(fx->h);
	char reply[256], small[PATH_MAX + 8];
	struct hm_stat st;
	hm_file *f, *g;
	int i;

	snprintf(small, sizeof small, "%s/small", fx->fs.mnt);
	if (faultfs_cmd(&fx->fs, reply, sizeof reply, "hang data") != 0)
		fail_msg("faultfs: %s", reply);
	f = hm_open(c, fx->data, HM_O_WARM);	/* its warm fills, and hangs */
	assert_non_null(f);
	g = hm_open(c, small, 0);
	assert_non_null(g);
	for (i = 0; i < 300 && !netfs_reads_copy(g); i++) {
		assert_int_equal(hm_warm(g, 0, UINT64_MAX), 4099);
		if (!netfs_reads_copy(g))
			usleep(100 * 1000);
	}
	assert_true(netfs_reads_copy(g));
	if (faultfs_cmd(&fx->fs, reply, sizeof reply, "restore data") != 0)
		fail_msg("faultfs: %s", reply);
	for (i = 0; i < 300; i++) {
		assert_int_equal(hm_stat(f, &st), 0);
		if (strstr(st.reason_text, "not copied") != NULL)
			break;
		usleep(100 * 1000);
	}
	assert_string_equal(st.reason_text, "network-fs: network file system (fuse.sshfs): read "
			    "with pread, not copied: its fill was too slow");
	assert_false(netfs_reads_copy(f));
	assert_int_equal(hm_close(g), 0);
	assert_int_equal(hm_close(f), 0);
	hm_disconnect(c);
}

/* A copy hotmapd dropped while a client still maps it is charged to the
 * client's uid: with room for one copy, the uid gets no second one while
 * it holds the first (hm_stat says why); once it lets go, it does. */
static void
test_copy_held_charged(void **state)
{
	struct netfs_fixture *fx = *state;
	hm_client *c = harness_connect(fx->h);
	struct hm_evicted ev;
	struct hm_stat st;
	hm_file *f = hm_open(c, fx->data, 0), *n, *g = NULL;
	int i;

	assert_non_null(f);
	assert_int_equal(hm_warm(f, 0, UINT64_MAX), DATA_SIZE);
	assert_true(netfs_reads_copy(f));
	assert_int_equal(hm_evict(c, fx->data, &ev), 0);	/* f still maps it */
	n = hm_open(c, fx->data, 0);
	assert_non_null(n);
	assert_int_equal(hm_warm(n, 0, UINT64_MAX), DATA_SIZE);	/* copied again */
	assert_false(netfs_reads_copy(n));
	assert_int_equal(hm_stat(n, &st), 0);
	assert_string_equal(st.reason_text, "network-fs: network file system (fuse.sshfs): read "
			    "with pread, no copy: its uid holds dropped copies past the budget");
	assert_true(netfs_reads_copy(f));	/* the version it was given */
	assert_int_equal(hm_close(f), 0);	/* unmapped: nobody holds it */
	for (i = 0; i < 300; i++) {
		g = hm_open(c, fx->data, 0);
		assert_non_null(g);
		if (netfs_reads_copy(g))
			break;
		assert_int_equal(hm_close(g), 0);
		g = NULL;
		usleep(100 * 1000);
	}
	assert_non_null(g);
	assert_int_equal(hm_close(g), 0);
	assert_int_equal(hm_close(n), 0);
	hm_disconnect(c);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, netfs_teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_copy_bound_to_mount),
		T(test_copy_older_handle_keeps_newer),
		T(test_copy_racy_mtime),
		T(test_copy_not_to_client_without),
		cmocka_unit_test_setup_teardown(test_copy_fill_stalled, setup_fill, netfs_teardown),
		cmocka_unit_test_setup_teardown(test_copy_held_charged, setup_held, netfs_teardown),
	};
	int skip;

	signal(SIGPIPE, SIG_IGN);
	skip = faultfs_skip_status("test_netfs_copy");
	if (skip >= 0)
		return skip;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
