/* SPDX-License-Identifier: MIT */
/*
 * faultfs_ctl.h - faultfs (tests/faultfs.c), the FUSE file system that
 * fails reads on command, as the tests drive it (faultfs_ctl.c): mounted
 * on DIR/fault, told what to do over DIR/faultctl, its log DIR/faultfs.log.
 * None of these assert: a test's main probes with them before any test.
 */
#ifndef HOTMAP_TESTS_FAULTFS_CTL_H
#define HOTMAP_TESTS_FAULTFS_CTL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define FAULTFS_START_TIMEOUT_MS	10000
#define FAULTFS_STOP_TIMEOUT_MS		10000

struct faultfs {
	char dir[PATH_MAX];	/* where the mount point, socket and log are */
	char mnt[PATH_MAX];	/* DIR/fault */
	char ctl[PATH_MAX];	/* DIR/faultctl */
	char log[PATH_MAX];	/* DIR/faultfs.log */
	pid_t pid;
	int ctl_fd;
	bool mounted;
	bool stopped;		/* by faultfs_freeze, until faultfs_thaw */
};

/* Mounts faultfs on DIR/fault with the file data_arg ("data:SIZE:SEED")
 * and a small one, as the mount type fuse.SUBTYPE (NULL: fuse.faultfs);
 * 0 once its control socket answers, -1 with a reason in why. */
int faultfs_start(struct faultfs *fs, const char *dir, const char *subtype, const char *data_arg,
		  char *why, size_t whylen);
/* Sends a command and reads its one-line answer into reply.  0 when the
 * answer is "ok...", -1 otherwise (reply says why). */
int faultfs_cmd(struct faultfs *fs, char *reply, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Stops faultfs (SIGSTOP) and waits until /proc says each of its threads
 * is stopped: then a request to it waits in the kernel's queue, where
 * SIGKILL ends its waiter.  0, or -1 with a reason in why. */
int faultfs_freeze(struct faultfs *fs, char *why, size_t whylen);
/* SIGCONT after faultfs_freeze; nothing if it is not stopped. */
void faultfs_thaw(struct faultfs *fs);
/* Detaches the mount (lazily: the daemon may still hold the file, and
 * faultfs serves it until it lets go), faultfs running again first if it
 * was stopped. */
void faultfs_unmount(struct faultfs *fs);
/* Waits for faultfs to exit (it does once unmounted and let go of), then
 * SIGTERM, then SIGKILL.  Its exit status, or -1 if it had to be killed. */
int faultfs_reap(struct faultfs *fs);
void faultfs_close_control(struct faultfs *fs);
/* Why FUSE cannot be used here (no libfuse3 at build time, no faultfs,
 * no /dev/fuse, a probe mount refused), or NULL when a probe mount
 * worked. */
const char *faultfs_unavailable(char *why, size_t len);
/* For a test's main, before its tests: -1 when FUSE can be used; else
 * the exit status of a skip (prog's reason said on stdout as TAP's and
 * on stderr), or 1 ("Bail out!") with HOTMAP_REQUIRE_FUSE=1. */
int faultfs_skip_status(const char *prog);

#endif
