/* SPDX-License-Identifier: MIT */
/*
 * test_conf_win32.c - the configuration's Windows half, under wine
 * (contrib/windows/test): conf_platform_win32.c (reading lines, absolute
 * paths, no users or groups) and what conf_value.c makes of it for the
 * keys that differ on Windows (users and groups refused, roots, pipe
 * names, drive paths).  It sets values as the command line does, so
 * it needs no file; tests/test_config.c is the Linux suite and covers the
 * file format.
 *
 * Windows builds only (contrib/windows/build).
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

#include "daemon/config/conf.h"
#include "daemon/config/conf_platform.h"
#include "daemon/config/conf_priv.h"

struct fixture {
	struct hm_config cfg;
	struct hm_config_errors errs;
	struct load l;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof *f);

	if (f == NULL || conf_set_defaults(&f->cfg) < 0)
		return -1;
	f->l.cfg = &f->cfg;
	f->l.errs = &f->errs;
	f->l.src = (struct hm_config_source){ HM_ORIGIN_COMMAND_LINE, 0 };
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	conf_errors_clear(&f->errs);
	free(f->cfg.socket_path);
	free(f->cfg.pid_file);
	free(f->cfg.log_file);
	free(f);
	return 0;
}

/* Sets key to value; the errors it added, the last one in *last. */
static size_t set(struct fixture *f, const char *key, const char *value, const char **last)
{
	size_t before = f->errs.n;
	int k = conf_key_lookup(key);

	assert_true(k >= 0);
	conf_set_value(&f->l, conf_key_def(k), value);
	assert_false(f->l.nomem);
	*last = f->errs.n > 0 ? f->errs.v[f->errs.n - 1] : "";
	return f->errs.n - before;
}

/* Every key that names a user or a group is an error, by name or number. */
static void test_users_and_groups_refused(void **state)
{
	struct fixture *f = *state;
	static const char *const keys[] = { "user", "group", "socket-group", "allow-uid",
					    "allow-gid", "admin-uid", "admin-gid" };
	const char *msg;

	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		assert_int_equal(set(f, keys[i], "1000", &msg), 1);
		assert_non_null(strstr(msg, "mean nothing to hotmapd on Windows"));
		assert_non_null(strstr(msg, keys[i]));
		assert_int_equal(set(f, keys[i], "nobody", &msg), 1);
		assert_non_null(strstr(msg, "'nobody'"));
	}
	/* unsetting one is no error */
	assert_int_equal(set(f, "user", "", &msg), 0);
}

/* Roots: drive paths of existing directories (resolve_win32.c). */
static void test_roots(void **state)
{
	struct fixture *f = *state;
	char windir[MAX_PATH];
	const char *msg;

	assert_true(GetWindowsDirectoryA(windir, sizeof windir) > 0);
	assert_int_equal(set(f, "root", windir, &msg), 0);
	assert_int_equal(f->cfg.roots.n, 1);
	assert_int_equal(set(f, "root", "C:\\no-such-directory", &msg), 1);
	assert_non_null(strstr(msg, "no-such-directory"));
	assert_int_equal(set(f, "root", "data", &msg), 1);
	assert_non_null(strstr(msg, "not an absolute path"));
	assert_int_equal(f->cfg.roots.n, 1);
	resolve_roots_clear(&f->cfg.roots);
	free(f->cfg.root_sources);
}

/* Drive and UNC paths are absolute; others are not. */
static void test_paths(void **state)
{
	struct fixture *f = *state;
	const char *msg;

	assert_int_equal(set(f, "pid-file", "C:\\ProgramData\\hotmap\\hotmapd.pid", &msg), 0);
	assert_string_equal(f->cfg.pid_file, "C:\\ProgramData\\hotmap\\hotmapd.pid");
	assert_int_equal(set(f, "log-file", "\\\\server\\share\\hotmapd.log", &msg), 0);
	assert_int_equal(set(f, "log-file", "c:/logs/hotmapd.log", &msg), 0);
	assert_int_equal(set(f, "pid-file", "hotmapd.pid", &msg), 1);
	assert_non_null(strstr(msg, "not an absolute path"));
	assert_int_equal(set(f, "pid-file", "C:hotmapd.pid", &msg), 1);
	assert_true(conf_platform_path_absolute("D:\\x"));
	assert_false(conf_platform_path_absolute("\\x"));
	assert_false(conf_platform_path_absolute(""));
}

/* A pipe name of up to 256 characters; the default is the pipe. */
static void test_socket_names(void **state)
{
	struct fixture *f = *state;
	char name[300];
	const char *msg;

	assert_string_equal(f->cfg.socket_path, "\\\\.\\pipe\\hotmap");
	assert_int_equal(set(f, "socket", "\\\\.\\pipe\\hotmap-test", &msg), 0);
	assert_string_equal(f->cfg.socket_path, "\\\\.\\pipe\\hotmap-test");
	memset(name, 'p', sizeof name);
	memcpy(name, "\\\\.\\pipe\\", 9);
	name[256] = '\0';		/* 256 characters */
	assert_int_equal(set(f, "socket", name, &msg), 0);
	name[256] = 'p';
	name[257] = '\0';		/* 257 */
	assert_int_equal(set(f, "socket", name, &msg), 1);
	assert_non_null(strstr(msg, "at most 256"));
}

/* The other value types behave as on Linux. */
static void test_portable_values(void **state)
{
	struct fixture *f = *state;
	const char *msg;

	assert_int_equal(set(f, "max-mapped-bytes", "3G", &msg), 0);
	assert_int_equal(f->cfg.max_mapped_bytes, 3ull << 30);
	assert_int_equal(set(f, "max-mapped-bytes", "3X", &msg), 1);
}

/* conf_platform_getline: CRLF files (text mode), long lines, no final
 * newline, as getline(3). */
static void test_getline(void **state)
{
	char path[MAX_PATH], dir[MAX_PATH], *buf = NULL;
	size_t cap = 0;
	FILE *w, *r;
	char longline[3000];

	(void)state;
	assert_true(GetTempPathA(sizeof dir, dir) > 0);
	snprintf(path, sizeof path, "%shotmap-conf-%lu.conf", dir, (unsigned long)GetCurrentProcessId());
	memset(longline, 'x', sizeof longline - 1);
	longline[sizeof longline - 1] = '\0';
	w = fopen(path, "wb");
	assert_non_null(w);
	fprintf(w, "a = 1\r\n%s\r\n\r\nlast = 2", longline);
	fclose(w);

	r = conf_platform_fopen(path);
	assert_non_null(r);
	assert_int_equal(conf_platform_getline(&buf, &cap, r), 6);
	assert_string_equal(buf, "a = 1\n");
	assert_int_equal(conf_platform_getline(&buf, &cap, r), (ssize_t)sizeof longline);
	assert_int_equal(strspn(buf, "x"), sizeof longline - 1);
	assert_int_equal(conf_platform_getline(&buf, &cap, r), 1);
	assert_int_equal(conf_platform_getline(&buf, &cap, r), 8);
	assert_string_equal(buf, "last = 2");
	assert_int_equal(conf_platform_getline(&buf, &cap, r), -1);
	assert_false(ferror(r));
	fclose(r);
	free(buf);
	DeleteFileA(path);
	errno = 0;
	assert_null(conf_platform_fopen(path));
	assert_int_equal(errno, ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_users_and_groups_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_roots, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paths, setup, teardown),
		cmocka_unit_test_setup_teardown(test_socket_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_portable_values, setup, teardown),
		cmocka_unit_test(test_getline),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
