/* SPDX-License-Identifier: MIT */
/*
 * test_resolve_win32.c - resolve_win32.c under wine: opening by path only
 * beneath a root.  contrib/windows/test makes the fixture from outside
 * wine (Unix symbolic links, which wine follows as Windows follows its
 * own) and names it in HOTMAP_TEST_RESOLVE:
 *
 *   root/a.txt "alpha", root/sub/b.txt "beta", outside.txt "secret",
 *   root/in-link -> a.txt, root/out-link -> ../outside.txt,
 *   root/dir-out -> ..
 *
 * Windows builds only; tests/test_resolve.c is the Linux suite.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <windows.h>

#include <cmocka.h>

#include "daemon/storage/resolve.h"
#include "daemon/storage/storage.h"

static char fix[MAX_PATH];

static int group_setup(void **state)
{
	const char *d = getenv("HOTMAP_TEST_RESOLVE");

	(void)state;
	if (d == NULL || strlen(d) >= sizeof fix) {
		fprintf(stderr, "HOTMAP_TEST_RESOLVE is not set: run through contrib/windows/test\n");
		return -1;
	}
	snprintf(fix, sizeof fix, "%s", d);
	return 0;
}

static const char *at(const char *rel)
{
	static char p[2][MAX_PATH * 2];
	static int i;

	i ^= 1;
	snprintf(p[i], sizeof p[i], "%s\\%s", fix, rel);
	return p[i];
}

static void add_root(struct resolve_roots *r)
{
	assert_int_equal(resolve_roots_add(r, at("root")), 0);
}

/* Opens path beneath r and reads it into buf (NUL-terminated): the open's
 * result when it fails, else the bytes read. */
static int open_read(const struct resolve_roots *r, const char *path, bool cross, char *buf,
		     size_t len)
{
	hm_fd h;
	DWORD got = 0;
	int rc = resolve_open_handle(r, path, cross, &h);

	if (rc < 0)
		return rc;
	assert_true(ReadFile(h, buf, (DWORD)len - 1, &got, NULL));
	buf[got] = '\0';
	CloseHandle(h);
	return (int)got;
}

static void test_reads_beneath_root(void **state)
{
	struct resolve_roots r = { 0 };
	char buf[64], path[MAX_PATH * 2];

	(void)state;
	add_root(&r);
	assert_int_equal(open_read(&r, at("root\\a.txt"), false, buf, sizeof buf), 5);
	assert_string_equal(buf, "alpha");
	/* '/' separators, another case, a trailing separator on the root */
	snprintf(path, sizeof path, "%s/root/SUB/b.txt", fix);
	for (char *c = path; *c != '\0'; c++)
		if (*c == '\\')
			*c = '/';
	path[0] = (char)(path[0] ^ 0x20);	/* z: for Z: */
	assert_int_equal(open_read(&r, path, false, buf, sizeof buf), 4);
	assert_string_equal(buf, "beta");
	/* a link that stays beneath the root is followed */
	assert_int_equal(open_read(&r, at("root\\in-link"), false, buf, sizeof buf), 5);
	assert_string_equal(buf, "alpha");
	resolve_roots_clear(&r);
}

static void test_links_out_refused(void **state)
{
	struct resolve_roots r = { 0 };
	char buf[64];

	(void)state;
	add_root(&r);
	assert_int_equal(open_read(&r, at("root\\out-link"), false, buf, sizeof buf), -EACCES);
	assert_int_equal(open_read(&r, at("root\\out-link"), true, buf, sizeof buf), -EACCES);
	assert_int_equal(open_read(&r, at("root\\dir-out\\outside.txt"), false, buf, sizeof buf),
			 -EACCES);
	/* out and back in ends beneath the root: allowed, as by resolve.c's
	 * check without openat2 (openat2 itself refuses it) */
	assert_int_equal(open_read(&r, at("root\\dir-out\\root\\a.txt"), false, buf, sizeof buf), 5);
	resolve_roots_clear(&r);
}

static void test_names_refused(void **state)
{
	struct resolve_roots r = { 0 };
	static const char *const bad[] = {
		"root\\..\\outside.txt", "root\\sub\\..\\a.txt", "root\\.\\a.txt",
		"root\\sub\\\\b.txt", "root\\a.txt:stream", "root\\a.txt::$DATA",
		"root\\a*.txt", "root\\sub\\",
	};
	char buf[64];
	hm_fd h;

	(void)state;
	add_root(&r);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = open_read(&r, at(bad[i]), false, buf, sizeof buf);

		if (rc != -EACCES)
			fail_msg("%s: %d, not -EACCES", bad[i], rc);
	}
	assert_int_equal(open_read(&r, at("outside.txt"), false, buf, sizeof buf), -EACCES);
	assert_int_equal(open_read(&r, at("root"), false, buf, sizeof buf), -EISDIR);
	assert_int_equal(open_read(&r, at("root\\missing"), false, buf, sizeof buf), -ENOENT);
	assert_int_equal(open_read(&r, "root\\a.txt", false, buf, sizeof buf), -EINVAL);
	assert_int_equal(resolve_open(&r, at("root\\a.txt"), false), -EOPNOTSUPP);
	/* no roots: nothing opens */
	resolve_roots_clear(&r);
	assert_int_equal(resolve_open_handle(&r, at("root\\a.txt"), false, &h), -EACCES);
}

static void test_roots_add(void **state)
{
	struct resolve_roots r = { 0 };

	(void)state;
	assert_int_equal(resolve_roots_add(&r, at("missing")), -ENOENT);
	assert_int_equal(resolve_roots_add(&r, at("outside.txt")), -ENOTDIR);
	assert_int_equal(resolve_roots_add(&r, "root"), -EINVAL);
	assert_int_equal(r.n, 0);
	/* a root given through a link is its real directory */
	assert_int_equal(resolve_roots_add(&r, at("root\\dir-out\\root")), 0);
	assert_int_equal(r.n, 1);
	assert_non_null(strstr(r.v[0].real, "root"));
	assert_null(strstr(r.v[0].real, "dir-out"));
	resolve_roots_clear(&r);
	assert_int_equal(r.n, 0);
}

/* What the daemon does with the handle: the file cache maps it. */
static void test_into_the_cache(void **state)
{
	struct resolve_roots r = { 0 };
	struct file_cache *c = file_cache_new();
	struct storage_handle sh;
	struct storage_io io = { 0 };
	char buf[16] = { 0 }, err[128];
	hm_fd h;

	(void)state;
	assert_non_null(c);
	add_root(&r);
	assert_int_equal(resolve_open_handle(&r, at("root\\sub\\b.txt"), false, &h), 0);
	assert_int_equal(file_cache_open(c, h, STORAGE_POLICY_AUTO, &sh, err, sizeof err), 0);
	assert_int_equal(sh.backend, STORAGE_BACKEND_MMAP);
	assert_int_equal(storage_read_detached(&sh, buf, sizeof buf, 0, &io), 4);
	assert_memory_equal(buf, "beta", 4);
	file_cache_close(c, &sh);
	file_cache_free(c);
	resolve_roots_clear(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reads_beneath_root),
		cmocka_unit_test(test_links_out_refused),
		cmocka_unit_test(test_names_refused),
		cmocka_unit_test(test_roots_add),
		cmocka_unit_test(test_into_the_cache),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
