/* SPDX-License-Identifier: MIT */
/*
 * netfs_fixture.h - the fixture of the network file system tests
 * (test_netfs.c, test_netfs_copy.c): a real hotmapd (tests/harness.h) with
 * faultfs (tests/faultfs_ctl.h) mounted beneath its root as fuse.sshfs,
 * which is what an sshfs mount looks like to the daemon, serving "data"
 * and "small" (4099 bytes).
 *
 * What it must not do: assert anything of what the daemon serves (the
 * tests do that), or drive faultfs other than through faultfs_ctl.c.
 * Its setup, teardown and mount fail the test (cmocka) when they cannot
 * do their part, and may only be called from a test's own thread.
 */
#ifndef HOTMAP_TESTS_NETFS_FIXTURE_H
#define HOTMAP_TESTS_NETFS_FIXTURE_H

#include <limits.h>
#include <stdbool.h>

#include "tests/faultfs_ctl.h"
#include "tests/harness.h"

/* hm_stat's reason_text of a network file read from hotmapd's copy (its
 * beginning: more may follow) */
#define NETFS_COPY_TEXT \
	"network-fs: network file system (fuse.sshfs): read from hotmapd's copy in memory"

struct netfs_fixture {
	struct harness *h;
	struct faultfs fs;
	char arg[64];		/* faultfs's data_arg: "data:SIZE:SEED" */
	char data[PATH_MAX];	/* MNT/data */
};

/* Starts hotmapd with opts (with_root: HM_O_PATH may open the file) and
 * mounts faultfs serving data of size bytes of seed's content; *state is
 * the fixture.  Fails the test if either cannot be done. */
int netfs_setup(void **state, const struct harness_opts *opts, unsigned size, unsigned seed);
/* Unmounts faultfs, stops hotmapd, and asserts that both ended cleanly. */
int netfs_teardown(void **state);
/* Mounts faultfs again (after netfs_unmount), with fx->arg. */
void netfs_mount(struct netfs_fixture *fx);
/* Unmounts faultfs and asserts that it exited 0. */
void netfs_unmount(struct netfs_fixture *fx);
/* Whether f reads from hotmapd's copy, as hm_stat says. */
bool netfs_reads_copy(hm_file *f);

#endif
