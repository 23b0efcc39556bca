/* SPDX-License-Identifier: MIT */
/*
 * test_resolve.c - daemon/storage/resolve_unix.c: what open by path lets a client
 * reach, through openat2(2) and through the fallback a kernel without it
 * (ENOSYS) or a seccomp filter that does not know it (EPERM) gets.  Every
 * case runs in the three ways, so the fallback is held to the same
 * answers: "..", symbolic links out of the root, magic links, and (as
 * root, in a mount namespace of the test's own) a bind mount and a tmpfs
 * beneath the root, followed or refused by cross_mounts.
 *
 * Linked with --wrap=syscall: openat2 fails with the errno under test.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef HAVE_LINUX_OPENAT2_H
#include <linux/openat2.h>
#endif

#include <cmocka.h>

#include "daemon/storage/resolve.h"

/* 0: openat2 as the kernel has it; else the errno it fails with. */
static int openat2_errno;
static unsigned openat2_calls;

long __real_syscall(long number, ...);
long __wrap_syscall(long number, ...);

long
__wrap_syscall(long number, ...)
{
	long a[6];
	va_list ap;
	int i;

	va_start(ap, number);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
#ifdef SYS_openat2
	if (number == SYS_openat2) {
		openat2_calls++;
		if (openat2_errno != 0) {
			errno = openat2_errno;
			return -1;
		}
	}
#endif
	return __real_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

static char dir[256];		/* mkdtemp */
static bool mounted;		/* root/bound and root/tmpfs are mounts */
static int secret_fd = -1;	/* outside/secret, for root/fd */
static bool kernel_openat2;	/* this kernel has openat2 */

static void
path_of(char *out, const char *name)
{
	snprintf(out, PATH_MAX, "%s/%s", dir, name);
}

static void
write_file(const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	path_of(path, name);
	f = fopen(path, "we");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static void
link_to(const char *target, const char *name)
{
	char path[PATH_MAX];

	path_of(path, name);
	assert_int_equal(symlink(target, path), 0);
}

static int
setup(void **state)
{
	char path[PATH_MAX], target[PATH_MAX];

	(void)state;
	snprintf(dir, sizeof dir, "%s/hotmap-resolve-XXXXXX",
		 getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(dir) == NULL)
		return -1;
	path_of(path, "root");
	mkdir(path, 0755);
	path_of(path, "root/sub");
	mkdir(path, 0755);
	path_of(path, "outside");
	mkdir(path, 0755);
	write_file("root/plain", "plain");
	write_file("root/sub/inner", "inner");
	write_file("outside/secret", "secret");
	link_to("sub/inner", "root/in");
	link_to("../outside/secret", "root/up");
	path_of(target, "outside/secret");
	link_to(target, "root/abs");
	snprintf(path, sizeof path, "/proc/self/root%s/outside/secret", dir);
	link_to(path, "root/magic");
	secret_fd = open(target, O_RDONLY | O_CLOEXEC);
	if (secret_fd < 0)
		return -1;
	snprintf(path, sizeof path, "/proc/self/fd/%d", secret_fd);
	link_to(path, "root/fd");

#if defined(HAVE_LINUX_OPENAT2_H) && HAVE_DECL_SYS_OPENAT2
	{
		struct open_how how = { .flags = O_RDONLY | O_CLOEXEC };
		long fd = __real_syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof how);

		kernel_openat2 = fd >= 0;
		if (fd >= 0)
			close((int)fd);
	}
#endif
	/* the mounts vanish with the namespace if the test dies */
	if (geteuid() == 0 && unshare(CLONE_NEWNS) == 0 &&
	    mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0) {
		path_of(path, "root/bound");
		mkdir(path, 0755);
		path_of(target, "outside");
		mounted = mount(target, path, NULL, MS_BIND, NULL) == 0;
		path_of(path, "root/tmpfs");
		mkdir(path, 0755);
		mounted = mounted && mount("hotmap-test", path, "tmpfs", 0, "size=64k") == 0;
		if (mounted) {
			write_file("root/tmpfs/file", "tmpfs");
			link_to("bound/secret", "root/via");
		}
	}
	return 0;
}

static int
teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	if (secret_fd >= 0)
		close(secret_fd);
	if (mounted) {
		char path[PATH_MAX];

		path_of(path, "root/bound");
		umount2(path, MNT_DETACH);
		path_of(path, "root/tmpfs");
		umount2(path, MNT_DETACH);
	}
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Opens name (beneath dir) through roots; returns the descriptor's content
 * in buf, or the negative errno. */
static int
open_read(const struct resolve_roots *r, const char *name, bool cross_mounts, char *buf,
	  size_t len)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	path_of(path, name);
	fd = resolve_open(r, path, cross_mounts);
	if (fd < 0)
		return fd;
	n = read(fd, buf, len - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = '\0';
	return 0;
}

static void
expect_reads(const struct resolve_roots *r, const char *name, bool cross_mounts,
	     const char *want)
{
	char buf[64];
	int rc = open_read(r, name, cross_mounts, buf, sizeof buf);

	if (rc < 0)
		fail_msg("%s (openat2 errno %d): %s", name, openat2_errno, strerror(-rc));
	assert_string_equal(buf, want);
}

static void
expect_refused(const struct resolve_roots *r, const char *name, bool cross_mounts, int want)
{
	char buf[64];
	int rc = open_read(r, name, cross_mounts, buf, sizeof buf);

	if (rc != -want)
		fail_msg("%s (openat2 errno %d): got %s, want %s", name, openat2_errno,
			 rc < 0 ? strerror(-rc) : "opened", strerror(want));
}

static void
roots_of(struct resolve_roots *r)
{
	char path[PATH_MAX];

	path_of(path, "root");
	assert_int_equal(resolve_roots_add(r, path), 0);
}

/* The three ways: the state is the errno openat2 fails with. */
static void
test_confined(void **state)
{
	struct resolve_roots r = { 0 };
	bool cross;
	int i;

	openat2_errno = *(int *)*state;
	openat2_calls = 0;
	if (openat2_errno == 0 && !kernel_openat2) {
		print_message("# skipped: this kernel has no openat2; the fallback cases cover it\n");
		skip();
	}
	roots_of(&r);
	for (i = 0; i < 2; i++) {
		cross = i == 0;
		expect_reads(&r, "root/plain", cross, "plain");
		expect_reads(&r, "root/sub/inner", cross, "inner");
		expect_reads(&r, "root/in", cross, "inner");
		expect_reads(&r, "root/sub/../plain", cross, "plain");
		expect_refused(&r, "root/../outside/secret", cross, EACCES);
		expect_refused(&r, "root/sub/../../outside/secret", cross, EACCES);
		expect_refused(&r, "root/up", cross, EACCES);
		expect_refused(&r, "root/abs", cross, EACCES);
		expect_refused(&r, "outside/secret", cross, EACCES);
		expect_refused(&r, "root/missing", cross, ENOENT);
		/* symbolic links to magic links: refused as absolute by
		 * openat2; followed by the fallback, to a file outside */
		expect_refused(&r, "root/magic", cross, EACCES);
		expect_refused(&r, "root/fd", cross, EACCES);
	}
#if defined(HAVE_LINUX_OPENAT2_H) && HAVE_DECL_SYS_OPENAT2
	/* openat2 was tried, and with an errno the fallback answered */
	assert_true(openat2_calls > 0);
#endif
	resolve_roots_clear(&r);
}

static void
test_mounts(void **state)
{
	struct resolve_roots r = { 0 };

	openat2_errno = *(int *)*state;
	if (!mounted || (openat2_errno == 0 && !kernel_openat2)) {
		print_message("# skipped: needs root and a mount namespace (or a kernel with "
			      "openat2)\n");
		skip();
	}
	roots_of(&r);
	/* followed by default */
	expect_reads(&r, "root/bound/secret", true, "secret");
	expect_reads(&r, "root/via", true, "secret");
	expect_reads(&r, "root/tmpfs/file", true, "tmpfs");
	/* refused with cross_mounts false, however the path gets there */
	expect_refused(&r, "root/bound/secret", false, EACCES);
	expect_refused(&r, "root/via", false, EACCES);
	expect_refused(&r, "root/tmpfs/file", false, EACCES);
	expect_refused(&r, "root/bound", false, EACCES);
	expect_reads(&r, "root/plain", false, "plain");
	resolve_roots_clear(&r);
}

static int with_openat2 = 0, with_enosys = ENOSYS, with_eperm = EPERM;

int
main(void)
{
	const struct CMUnitTest tests[] = {
		{ "confined_openat2", test_confined, NULL, NULL, &with_openat2 },
		{ "confined_fallback_enosys", test_confined, NULL, NULL, &with_enosys },
		{ "confined_fallback_eperm", test_confined, NULL, NULL, &with_eperm },
		{ "mounts_openat2", test_mounts, NULL, NULL, &with_openat2 },
		{ "mounts_fallback_enosys", test_mounts, NULL, NULL, &with_enosys },
		{ "mounts_fallback_eperm", test_mounts, NULL, NULL, &with_eperm },
	};

	return cmocka_run_group_tests_name("resolve", tests, setup, teardown);
}
