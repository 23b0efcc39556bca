/* SPDX-License-Identifier: MIT */
/*
 * test_config.c - hotmapd.conf and the command line (daemon/config/conf.h),
 * and the peer policy (policy_may_connect, policy_is_admin,
 * transport_peer_creds).
 *
 * Every key good and bad, the defaults, the command line over the file,
 * all errors of a file at once with their lines, sizes, users and groups,
 * and where each value came from.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/config/conf.h"
#include "daemon/service/policy.h"
#include "daemon/service/server.h"

static char dir[PATH_MAX];
static char conf[PATH_MAX + 16];	/* dir/hotmapd.conf */

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "%s/hm-config.XXXXXX",
		 getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(conf, sizeof conf, "%s/hotmapd.conf", dir);
	/* the default socket must not depend on who runs the tests */
	setenv("HOTMAP_SOCKET", "/run/test/default.sock", 1);
	return 0;
}

static int
teardown(void **state)
{
	char sub[PATH_MAX + 8];

	(void)state;
	unlink(conf);
	snprintf(sub, sizeof sub, "%s/sub", dir);
	rmdir(sub);
	rmdir(dir);
	return 0;
}

/* Writes conf from a format ("%1$s" is the test's directory). */
static void __attribute__((format(printf, 1, 2)))
write_conf(const char *fmt, ...)
{
	FILE *f = fopen(conf, "we");
	va_list ap;

	assert_non_null(f);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	assert_int_equal(fclose(f), 0);
}

static void
print_errors(const struct hm_config_errors *errs)
{
	size_t i;

	for (i = 0; i < errs->n; i++)
		print_message("# %s\n", errs->v[i]);
}

/* Loads conf with args (path set here); asserts it succeeds. */
static void
load_ok(struct hm_config *cfg, struct hm_config_args *args)
{
	struct hm_config_errors errs = { 0 };
	int rc;

	args->path = conf;
	rc = conf_load(cfg, args, &errs);
	if (rc != 0)
		print_errors(&errs);
	assert_int_equal(rc, 0);
	assert_int_equal(errs.n, 0);
}

/* Loads conf with args; asserts it fails; the errors stay in errs. */
static void
load_bad(struct hm_config_args *args, struct hm_config_errors *errs)
{
	struct hm_config cfg;

	args->path = conf;
	assert_int_equal(conf_load(&cfg, args, errs), -EINVAL);
	assert_true(errs->n > 0);
	/* nothing is left behind */
	assert_null(cfg.socket_path);
	assert_int_equal(cfg.roots.n, 0);
}

/* Whether errs->v[i] is "conf:line: " followed by text. */
static void
assert_error(const struct hm_config_errors *errs, size_t i, unsigned line, const char *text)
{
	char want[PATH_MAX + 512];

	if (line > 0)
		snprintf(want, sizeof want, "%s:%u: %s", conf, line, text);
	else
		snprintf(want, sizeof want, "%s", text);
	if (i >= errs->n) {
		print_errors(errs);
		fail_msg("error %zu missing: want \"%s\"", i, want);
	}
	if (strncmp(errs->v[i], want, strlen(want)) != 0) {
		print_errors(errs);
		fail_msg("error %zu is \"%s\", want \"%s...\"", i, errs->v[i], want);
	}
}

static const char *
source(const struct hm_config *cfg, enum hm_config_key key)
{
	static char buf[PATH_MAX + 32];

	return conf_source_text(cfg, cfg->source[key], buf, sizeof buf);
}

static const char *
at_line(unsigned line)
{
	static char buf[PATH_MAX + 32];

	snprintf(buf, sizeof buf, "%s:%u", conf, line);
	return buf;
}

static const char *
group0(void)
{
	struct group *g = getgrgid(0);

	return g != NULL ? g->gr_name : "0";
}

/* --- defaults ---------------------------------------------------------------- */

static void
assert_defaults(const struct hm_config *cfg)
{
	int k;

	assert_string_equal(cfg->socket_path, "/run/test/default.sock");
	assert_int_equal(cfg->socket_mode, 0666);
	assert_int_equal(cfg->socket_group, (gid_t)-1);
	assert_int_equal(cfg->roots.n, 0);
	assert_int_equal(cfg->allow_uid.n, 0);
	assert_int_equal(cfg->allow_gid.n, 0);
	assert_int_equal(cfg->admin_uid.n, 0);
	assert_int_equal(cfg->admin_gid.n, 0);
	assert_int_equal(cfg->policy, STORAGE_POLICY_AUTO);
	assert_int_equal(cfg->max_mapped_bytes, 0);
	assert_int_equal(cfg->max_open_files, 16384);
	assert_int_equal(cfg->idle_unmap_s, 0);
	assert_int_equal(cfg->warm, HM_WARM_NONE);
	assert_int_equal(cfg->network_fs, HM_NETWORK_FS_PREAD);
	assert_int_equal(cfg->network_fs_chunk, 16u << 20);
	assert_int_equal(cfg->max_per_uid, 4096);
	assert_int_equal(cfg->max_inflight, 32);
	assert_int_equal(cfg->max_inflight_bytes, 64u << 20);
	assert_int_equal(cfg->idle_timeout_s, 0);
	assert_int_equal(cfg->workers, 0);
	assert_int_equal(cfg->poll_us, -1);
	assert_int_equal(cfg->log_level, LOG_NOTICE);
	assert_false(cfg->foreground);
	assert_null(cfg->log_file);
	assert_null(cfg->pid_file);
	assert_int_equal(cfg->user, (uid_t)-1);
	assert_int_equal(cfg->group, (gid_t)-1);
	for (k = 0; k < HM_CONFIG__NKEYS; k++)
		assert_string_equal(source(cfg, (enum hm_config_key)k), "default");
}

static void
test_defaults_from_an_empty_file(void **state)
{
	struct hm_config_args args = { 0 };
	struct hm_config cfg;

	(void)state;
	write_conf("# nothing but comments\n; and blank lines\n\n   \n");
	load_ok(&cfg, &args);
	assert_string_equal(cfg.path, conf);
	assert_defaults(&cfg);
	conf_clear(&cfg);
}

static void
test_missing_default_file_is_fine(void **state)
{
	struct hm_config_args args = { 0 };
	struct hm_config_errors errs = { 0 };
	struct hm_config cfg;

	(void)state;
	if (access(HM_CONFIG_DEFAULT_PATH, F_OK) == 0)
		skip();		/* this machine has one */
	assert_int_equal(conf_load(&cfg, &args, &errs), 0);
	assert_null(cfg.path);
	assert_defaults(&cfg);
	conf_clear(&cfg);
}

static void
test_missing_given_file_is_an_error(void **state)
{
	struct hm_config_args args = { 0 };
	struct hm_config_errors errs = { 0 };
	struct hm_config cfg;
	char missing[PATH_MAX + 16], want[PATH_MAX + 64];

	(void)state;
	snprintf(missing, sizeof missing, "%s/missing.conf", dir);
	args.path = missing;
	assert_int_equal(conf_load(&cfg, &args, &errs), -EINVAL);
	assert_int_equal(errs.n, 1);
	snprintf(want, sizeof want, "%s: %s", missing, strerror(ENOENT));
	assert_string_equal(errs.v[0], want);
	conf_errors_clear(&errs);
}

/* --- every key --------------------------------------------------------------- */

static void
test_every_key_good(void **state)
{
	struct hm_config_args args = { 0 };
	struct hm_config cfg;
	char sub[PATH_MAX + 8];
	int k;

	(void)state;
	snprintf(sub, sizeof sub, "%s/sub", dir);
	mkdir(sub, 0755);
	write_conf("socket = %1$s/s.sock\n"		/* 1 */
		   "socket-mode = 0600\n"		/* 2 */
		   "socket-group = %2$s\n"		/* 3 */
		   "root = %1$s\n"			/* 4 */
		   "root = %1$s/sub/\n"			/* 5 */
		   "cross-mounts = no\n"		/* 6 */
		   "allow-uid = root, 1000\n"		/* 7 */
		   "allow-gid = 0 1000,1001\n"		/* 8 */
		   "admin-uid = 1001\n"			/* 9 */
		   "admin-gid = 1002\n"			/* 10 */
		   "backend = pread\n"			/* 11 */
		   "max-mapped-bytes = 2G\n"		/* 12 */
		   "max-open-files = 100\n"		/* 13 */
		   "idle-unmap = 60\n"			/* 14 */
		   "warm = populate\n"			/* 15 */
		   "network-fs = mmap\n"		/* 16 */
		   "network-fs-chunk = 64K\n"		/* 17 */
		   "network-copy-max = 256M\n"		/* 18 */
		   "network-copy-fill-timeout = 5\n"	/* 19 */
		   "max-connections-per-uid = 10\n"	/* 20 */
		   "max-inflight = 8\n"			/* 21 */
		   "max-inflight-bytes = 1M\n"		/* 22 */
		   "idle-timeout = 30\n"		/* 23 */
		   "workers = 3\n"			/* 24 */
		   "poll-us = 75\n"			/* 25 */
		   "log-level = debug\n"		/* 26 */
		   "direct-reads = no\n"		/* 27 */
		   "direct-lease-rule = can-read\n"	/* 28 */
		   "direct-table = 7\n"		/* 29 */
		   "max-direct-grants-per-uid = 77\n"	/* 30 */
		   "path-descriptors = yes\n"		/* 31 */
		   "huge-folios = no\n"		/* 32 */
		   "foreground = yes\n"		/* 33 */
		   "log-file = %1$s/hotmapd.log\n"	/* 34 */
		   "pid-file = %1$s/hotmapd.pid\n"	/* 35 */
		   "user = root\n"			/* 36 */
		   "group = %2$s\n",			/* 37 */
		   dir, group0());
	load_ok(&cfg, &args);
	assert_string_equal(cfg.socket_path + strlen(dir), "/s.sock");
	assert_int_equal(cfg.socket_mode, 0600);
	assert_int_equal(cfg.socket_group, 0);
	assert_int_equal(cfg.roots.n, 2);
	assert_string_equal(cfg.roots.v[0].given, dir);
	assert_string_equal(cfg.roots.v[1].given + strlen(dir), "/sub");
	assert_false(cfg.cross_mounts);
	assert_int_equal(cfg.allow_uid.n, 2);
	assert_int_equal(cfg.allow_uid.v[0], 0);
	assert_int_equal(cfg.allow_uid.v[1], 1000);
	assert_int_equal(cfg.allow_gid.n, 3);
	assert_int_equal(cfg.allow_gid.v[0], 0);
	assert_int_equal(cfg.allow_gid.v[2], 1001);
	assert_int_equal(cfg.admin_uid.n, 1);
	assert_int_equal(cfg.admin_uid.v[0], 1001);
	assert_int_equal(cfg.admin_gid.n, 1);
	assert_int_equal(cfg.admin_gid.v[0], 1002);
	assert_int_equal(cfg.policy, STORAGE_POLICY_PREAD);
	assert_int_equal(cfg.max_mapped_bytes, 2ull << 30);
	assert_int_equal(cfg.max_open_files, 100);
	assert_int_equal(cfg.idle_unmap_s, 60);
	assert_int_equal(cfg.warm, HM_WARM_POPULATE);
	assert_int_equal(cfg.network_fs, HM_NETWORK_FS_MMAP);
	assert_int_equal(cfg.network_fs_chunk, 64 * 1024);
	assert_int_equal(cfg.network_copy_max, 256ull << 20);
	assert_int_equal(cfg.network_copy_fill_s, 5);
	assert_int_equal(cfg.max_per_uid, 10);
	assert_int_equal(cfg.max_inflight, 8);
	assert_int_equal(cfg.max_inflight_bytes, 1 << 20);
	assert_int_equal(cfg.idle_timeout_s, 30);
	assert_int_equal(cfg.workers, 3);
	assert_int_equal(cfg.poll_us, 75);
	assert_int_equal(cfg.log_level, LOG_DEBUG);
	assert_false(cfg.direct_reads);
	assert_int_equal(cfg.direct_lease_rule, HM_LEASE_RULE_CAN_READ);
	assert_int_equal(cfg.max_direct_per_uid, 77);
	assert_int_equal(cfg.direct_table_s, 7);
	assert_true(cfg.path_descriptors);
	assert_false(cfg.huge_folios);
	assert_true(cfg.foreground);
	assert_string_equal(cfg.log_file + strlen(dir), "/hotmapd.log");
	assert_string_equal(cfg.pid_file + strlen(dir), "/hotmapd.pid");
	assert_int_equal(cfg.user, 0);
	assert_int_equal(cfg.group, 0);

	/* each from its line (root: the last one; each root has its own) */
	for (k = 0; k < HM_CONFIG__NKEYS; k++) {
		unsigned line = (unsigned)k + 1 + (k >= HM_KEY_ROOT);

		assert_string_equal(source(&cfg, (enum hm_config_key)k), at_line(line));
	}
	assert_int_equal(cfg.root_sources[0].line, 4);
	assert_int_equal(cfg.root_sources[1].line, 5);
	conf_clear(&cfg);
}

static void
test_every_key_bad_all_errors_at_once(void **state)
{
	static const struct {
		const char *line;
		const char *error;
	} cases[] = {
		{ "socket =", "socket: empty path" },
		{ "socket-mode = 0800", "socket-mode: not an octal mode: '0800'" },
		{ "socket-group = hotmap-no-such-group", "socket-group: unknown group 'hotmap-no-such-group'" },
		{ "root = relative/dir", "root: not an absolute path: 'relative/dir'" },
		{ "cross-mounts = sometimes", "cross-mounts: not yes or no: 'sometimes'" },
		{ "allow-uid = hotmap-no-such-user", "allow-uid: unknown user 'hotmap-no-such-user'" },
		{ "allow-gid = 4294967295", "allow-gid: gid 4294967295 is out of range" },
		{ "admin-uid = 1,,hotmap-no-such-user", "admin-uid: unknown user 'hotmap-no-such-user'" },
		{ "admin-gid = hotmap-no-such-group", "admin-gid: unknown group 'hotmap-no-such-group'" },
		{ "backend = fast", "backend: unknown value 'fast' (auto, mmap, pread)" },
		{ "max-mapped-bytes = 1Q", "max-mapped-bytes: not a size: '1Q'" },
		{ "max-open-files = 2147483648", "max-open-files: 2147483648 is out of range (0 to 2147483647)" },
		{ "idle-unmap = -1", "idle-unmap: not a number: '-1'" },
		{ "warm = hot", "warm: unknown value 'hot' (none, willneed, populate)" },
		{ "network-fs = nfs", "network-fs: unknown value 'nfs' (pread, mmap)" },
		{ "network-fs-chunk = 2G", "network-fs-chunk: 2G is out of range (64K to 1G)" },
		{ "network-copy-max = lots",
		  "network-copy-max: not a size: 'lots' (a number with an optional K, M, G or T)" },
		{ "network-copy-fill-timeout = 0",
		  "network-copy-fill-timeout: 0 is out of range (1 to 86400)" },
		{ "max-connections-per-uid = 0", "max-connections-per-uid: 0 is out of range (1 to 1000000)" },
		{ "max-inflight = x", "max-inflight: not a number: 'x'" },
		{ "max-inflight-bytes = 1K", "max-inflight-bytes: 1K is out of range (64K to 1T)" },
		{ "idle-timeout = 31536001", "idle-timeout: 31536001 is out of range (0 to 31536000)" },
		{ "workers = 0", "workers: 0 is out of range (1 to 256)" },
		{ "poll-us = 10001", "poll-us: 10001 is out of range (0 to 10000)" },
		{ "log-level = loud", "log-level: unknown value 'loud' (error, warning, notice, info, debug)" },
		{ "direct-reads = sometimes", "direct-reads: not yes or no: 'sometimes'" },
		{ "direct-lease-rule = anyone", "direct-lease-rule: unknown value 'anyone' (can-write, can-read)" },
		{ "direct-table = 31536001", "direct-table: 31536001 is out of range (0 to 31536000)" },
		{ "max-direct-grants-per-uid = 0", "max-direct-grants-per-uid: 0 is out of range (1 to 1000000)" },
		{ "path-descriptors = 2", "path-descriptors: not yes or no: '2'" },
		{ "huge-folios = perhaps", "huge-folios: not yes or no: 'perhaps'" },
		{ "foreground = maybe", "foreground: not yes or no: 'maybe'" },
		{ "log-file = hotmapd.log", "log-file: not an absolute path: 'hotmapd.log'" },
		{ "pid-file = run/hotmapd.pid", "pid-file: not an absolute path: 'run/hotmapd.pid'" },
		{ "user = hotmap-no-such-user", "user: unknown user 'hotmap-no-such-user'" },
		{ "group = hotmap-no-such-group", "group: unknown group 'hotmap-no-such-group'" },
	};
	struct hm_config_args args = { 0 };
	struct hm_config_errors errs = { 0 };
	FILE *f = fopen(conf, "we");
	size_t i;

	(void)state;
	assert_non_null(f);
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
		fprintf(f, "%s\n", cases[i].line);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(sizeof cases / sizeof cases[0], HM_CONFIG__NKEYS);
	load_bad(&args, &errs);
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
		assert_error(&errs, i, (unsigned)i + 1, cases[i].error);
	assert_int_equal(errs.n, HM_CONFIG__NKEYS);
	conf_errors_clear(&errs);
}

static void
test_values_spelled_otherwise(void **state)
{
	static const char *const yes[] = { "yes", "true", "1", "on", "YES", "True" };
	static const char *const no[] = { "no", "false", "0", "off", "No" };
	struct hm_config_args args = { 0 };
	struct hm_config cfg;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof yes / sizeof yes[0]; i++) {
		write_conf("foreground = %s\n", yes[i]);
		load_ok(&cfg, &args);
		assert_true(cfg.foreground);
		conf_clear(&cfg);
	}
	for (i = 0; i < sizeof no / sizeof no[0]; i++) {
		write_conf("foreground = %s\n", no[i]);
		load_ok(&cfg, &args);
		assert_false(cfg.foreground);
		conf_clear(&cfg);
	}
	write_conf("workers = auto\nsocket-mode = 660\nsocket-group = 0\nmax-open-files = 0\n"
		   "max-mapped-bytes = 0\nallow-uid =\nnetwork-fs-chunk = 1G\npoll-us = 0\n"
		   "network-copy-max = auto\n");
	load_ok(&cfg, &args);
	assert_int_equal(cfg.network_copy_max, HM_CONFIG_NETWORK_COPY_AUTO);
	assert_int_equal(cfg.workers, 0);
	assert_int_equal(cfg.poll_us, 0);
	assert_int_equal(cfg.socket_mode, 0660);
	assert_int_equal(cfg.socket_group, 0);
	assert_int_equal(cfg.max_open_files, 0);
	assert_int_equal(cfg.max_mapped_bytes, 0);
	assert_int_equal(cfg.allow_uid.n, 0);
	assert_int_equal(cfg.network_fs_chunk, 1u << 30);
	conf_clear(&cfg);
}

/* --- syntax --------------------------------------------------------------------- */

static void
test_syntax_errors_and_lines(void **state)
{
	struct hm_config_args args = { 0 };
	struct hm_config_errors errs = { 0 };
	char long_line[8300];	/* past the 8192 bytes a line may have */

	(void)state;
	memset(long_line, 'x', sizeof long_line - 1);
	long_line[sizeof long_line - 1] = '\0';
	write_conf("# a comment\n"				/* 1 */
		   "sokcet = /run/x.sock\n"			/* 2 */
		   "this is not a key\n"			/* 3 */
		   "root = %s\n"				/* 4: too long */
		   "max-inflight = x\n"				/* 5 */
		   "[hotmapd]\n"				/* 6 */
		   "  workers = 999\n"				/* 7: indented */
		   "[other]\n"					/* 8 */
		   "socket = /x\n"				/* 9: not reported */
		   "whatever = 1\n"				/* 10: not reported */
		   "[broken\n"					/* 11 */
		   "max_inflight = 3\n",			/* 12 */
		   long_line);
	load_bad(&args, &errs);
	assert_error(&errs, 0, 2, "unknown key 'sokcet'");
	assert_error(&errs, 1, 3, "syntax error: expected 'key = value'");
	assert_error(&errs, 2, 4, "line too long");
	assert_error(&errs, 3, 5, "max-inflight: not a number: 'x'");
	assert_error(&errs, 4, 7, "workers: 999 is out of range (1 to 256)");
	assert_error(&errs, 5, 8, "unknown section [other]");
	assert_error(&errs, 6, 11, "syntax error: expected '[section]'");
	/* after a broken header, the section stays [other] */
	assert_int_equal(errs.n, 7);
	conf_errors_clear(&errs);
}

/* Lines are not held to inih's 198 bytes any more: a path of 4000 bytes
 * is read whole, with space and an inline comment after it. */
static void
test_long_line(void **state)
{
	struct hm_config_args args = { 0 };
	struct hm_config cfg;
	char path[4001];

	(void)state;
	memset(path, 'p', sizeof path - 1);
	path[0] = '/';
	path[sizeof path - 1] = '\0';
	write_conf("log-file = %s   ; a comment\n", path);
	load_ok(&cfg, &args);
	assert_non_null(cfg.log_file);
	assert_string_equal(cfg.log_file, path);
	conf_clear(&cfg);
}

static void
test_sections_comments_crlf_bom(void **state)
{
	struct hm_config_args args = { 0 };
	struct hm_config cfg;

	(void)state;
	write_conf("\xEF\xBB\xBF; hotmapd.conf\r\n"
		   "max-inflight = 7 ; inline comment\r\n"
		   "[hotmapd]\r\n"
		   "\tmax-open-files: 12\r\n"
		   "# the end\r\n"
		   "idle-timeout=5");
	load_ok(&cfg, &args);
	assert_int_equal(cfg.max_inflight, 7);
	assert_int_equal(cfg.max_open_files, 12);
	assert_int_equal(cfg.idle_timeout_s, 5);
	assert_string_equal(source(&cfg, HM_KEY_MAX_OPEN_FILES), at_line(4));
	assert_string_equal(source(&cfg, HM_KEY_IDLE_TIMEOUT), at_line(6));
	conf_clear(&cfg);
}

static void
test_repeated_keys(void **state)
{
	struct hm_config_args args = { 0 };
	struct hm_config cfg;

	(void)state;
	write_conf("max-inflight = 7\nmax-inflight = 9\nallow-uid = 1\nallow-uid = 2 3\n");
	load_ok(&cfg, &args);
	/* a single value: the last one; a list: all of them */
	assert_int_equal(cfg.max_inflight, 9);
	assert_string_equal(source(&cfg, HM_KEY_MAX_INFLIGHT), at_line(2));
	assert_int_equal(cfg.allow_uid.n, 3);
	assert_int_equal(cfg.allow_uid.v[2], 3);
	conf_clear(&cfg);
}

/* --- the command line --------------------------------------------------------------- */

static void
test_command_line_wins(void **state)
{
	struct hm_config_args args = { 0 };
	struct hm_config cfg;
	char sub[PATH_MAX + 8];

	(void)state;
	snprintf(sub, sizeof sub, "%s/sub", dir);
	mkdir(sub, 0755);
	write_conf("socket = /run/file.sock\nbackend = mmap\nroot = %1$s\nroot = /\n"
		   "allow-uid = 5\nlog-level = warning\nmax-inflight = 4\n", dir);
	assert_int_equal(conf_args_add(&args, "socket", "/run/cli.sock"), 0);
	assert_int_equal(conf_args_add(&args, "backend", "pread"), 0);
	assert_int_equal(conf_args_add(&args, "root", sub), 0);
	assert_int_equal(conf_args_add(&args, "allow-uid", "6"), 0);
	assert_int_equal(conf_args_add(&args, "allow-uid", "7"), 0);
	assert_int_equal(conf_args_add(&args, "nonsense", "1"), -EINVAL);
	args.verbose = 1;
	load_ok(&cfg, &args);
	assert_string_equal(cfg.socket_path, "/run/cli.sock");
	assert_string_equal(source(&cfg, HM_KEY_SOCKET), "command line");
	assert_int_equal(cfg.policy, STORAGE_POLICY_PREAD);
	assert_string_equal(source(&cfg, HM_KEY_BACKEND), "command line");
	/* a repeatable key given on the command line replaces the file's */
	assert_int_equal(cfg.roots.n, 1);
	assert_string_equal(cfg.roots.v[0].given, sub);
	assert_int_equal(cfg.root_sources[0].origin, HM_ORIGIN_COMMAND_LINE);
	assert_int_equal(cfg.allow_uid.n, 2);
	assert_int_equal(cfg.allow_uid.v[0], 6);
	assert_int_equal(cfg.allow_uid.v[1], 7);
	/* -v: one step above the file's level */
	assert_int_equal(cfg.log_level, LOG_NOTICE);
	assert_string_equal(source(&cfg, HM_KEY_LOG_LEVEL), "command line");
	/* what the command line leaves alone keeps the file's */
	assert_int_equal(cfg.max_inflight, 4);
	assert_string_equal(source(&cfg, HM_KEY_MAX_INFLIGHT), at_line(7));
	conf_clear(&cfg);

	/* -v beyond debug stays at debug */
	args.verbose = 9;
	load_ok(&cfg, &args);
	assert_int_equal(cfg.log_level, LOG_DEBUG);
	conf_clear(&cfg);
	conf_args_clear(&args);
}

static void
test_command_line_errors_after_the_file(void **state)
{
	struct hm_config_args args = { 0 };
	struct hm_config_errors errs = { 0 };

	(void)state;
	write_conf("workers = 1\nmax-inflight = 0\n");
	assert_int_equal(conf_args_add(&args, "workers", "x"), 0);
	assert_int_equal(conf_args_add(&args, "allow-gid", "hotmap-no-such-group"), 0);
	load_bad(&args, &errs);
	assert_int_equal(errs.n, 3);
	assert_error(&errs, 0, 2, "max-inflight: 0 is out of range");
	assert_error(&errs, 1, 0, "--workers: not a number: 'x'");
	assert_error(&errs, 2, 0, "--allow-gid: unknown group 'hotmap-no-such-group'");
	conf_errors_clear(&errs);
	conf_args_clear(&args);
}

/* --- sizes ------------------------------------------------------------------------ */

static void
test_sizes(void **state)
{
	static const struct {
		const char *s;
		int rc;
		uint64_t v;
	} cases[] = {
		{ "0", 0, 0 },
		{ "1", 0, 1 },
		{ "1K", 0, 1024 },
		{ "1k", 0, 1024 },
		{ "16M", 0, 16ull << 20 },
		{ "3g", 0, 3ull << 30 },
		{ "2T", 0, 2ull << 40 },
		{ "18446744073709551615", 0, UINT64_MAX },
		{ "16777215T", 0, 16777215ull << 40 },
		{ "18446744073709551616", -ERANGE, 0 },
		{ "16777216T", -ERANGE, 0 },
		{ "99999999999999999999999999999999999999", -ERANGE, 0 },
		{ "", -EINVAL, 0 },
		{ "K", -EINVAL, 0 },
		{ "1KB", -EINVAL, 0 },
		{ "1.5M", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },
		{ " 1", -EINVAL, 0 },
		{ "1 ", -EINVAL, 0 },
		{ "0x10", 0, 16 },	/* one grammar with hotmapctl: proto/size.h */
		{ "1P", -EINVAL, 0 },
	};
	char buf[32];
	uint64_t v;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		v = 12345;
		if (conf_parse_size(cases[i].s, &v) != cases[i].rc)
			fail_msg("'%s': %d, want %d", cases[i].s, conf_parse_size(cases[i].s, &v),
				 cases[i].rc);
		if (cases[i].rc == 0)
			assert_int_equal(v, cases[i].v);
	}
	assert_string_equal(conf_format_size(0, buf, sizeof buf), "0");
	assert_string_equal(conf_format_size(1000, buf, sizeof buf), "1000");
	assert_string_equal(conf_format_size(1536, buf, sizeof buf), "1536");
	assert_string_equal(conf_format_size(64 << 20, buf, sizeof buf), "64M");
	assert_string_equal(conf_format_size(3ull << 40, buf, sizeof buf), "3T");
	assert_string_equal(conf_format_size(1ull << 50, buf, sizeof buf), "1024T");
}

/* --- what hotmapctl config will show ------------------------------------------------------ */

struct collected {
	char lines[64][512];
	size_t n;
};

static void
collect(const char *key, const char *value, const char *src, void *arg)
{
	struct collected *c = arg;

	assert_true(c->n < 64);
	snprintf(c->lines[c->n++], sizeof c->lines[0], "%s = %s  # %s", key, value, src);
}

static bool
collected_has(const struct collected *c, const char *line)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (strcmp(c->lines[i], line) == 0)
			return true;
	for (i = 0; i < c->n; i++)
		print_message("# %s\n", c->lines[i]);
	return false;
}

static void
test_foreach_values_and_sources(void **state)
{
	struct hm_config_args args = { 0 };
	struct collected c = { .n = 0 };
	struct hm_config cfg;
	char line[PATH_MAX * 2 + 64];

	(void)state;
	write_conf("root = %s\nroot = /\nsocket-mode = 640\nmax-inflight-bytes = 1048576\n", dir);
	assert_int_equal(conf_args_add(&args, "workers", "4"), 0);
	load_ok(&cfg, &args);
	conf_foreach(&cfg, collect, &c);
	/* every key once, root once per root */
	assert_int_equal(c.n, HM_CONFIG__NKEYS + 1);
	snprintf(line, sizeof line, "root = %s  # %s", dir, at_line(1));
	assert_true(collected_has(&c, line));
	snprintf(line, sizeof line, "root = /  # %s", at_line(2));
	assert_true(collected_has(&c, line));
	snprintf(line, sizeof line, "socket-mode = 0640  # %s", at_line(3));
	assert_true(collected_has(&c, line));
	snprintf(line, sizeof line, "max-inflight-bytes = 1M  # %s", at_line(4));
	assert_true(collected_has(&c, line));
	assert_true(collected_has(&c, "workers = 4  # command line"));
	assert_true(collected_has(&c, "socket = /run/test/default.sock  # default"));
	assert_true(collected_has(&c, "warm = none  # default"));
	assert_true(collected_has(&c, "cross-mounts = yes  # default"));
	assert_true(collected_has(&c, "log-level = notice  # default"));
	assert_true(collected_has(&c, "allow-uid =   # default"));
	conf_clear(&cfg);
	conf_args_clear(&args);

	c.n = 0;
	write_conf("\n");
	load_ok(&cfg, &args);
	conf_foreach(&cfg, collect, &c);
	assert_int_equal(c.n, HM_CONFIG__NKEYS);
	assert_true(collected_has(&c, "root =   # default"));
	conf_clear(&cfg);
}

static void
test_key_table(void **state)
{
	int k;

	(void)state;
	for (k = 0; k < HM_CONFIG__NKEYS; k++)
		assert_int_equal(conf_key_lookup(conf_key_name((enum hm_config_key)k)), k);
	assert_int_equal(conf_key_lookup("sokcet"), -1);
	assert_true(conf_key_needs_restart(HM_KEY_SOCKET));
	assert_true(conf_key_needs_restart(HM_KEY_SOCKET_MODE));
	assert_true(conf_key_needs_restart(HM_KEY_SOCKET_GROUP));
	assert_true(conf_key_needs_restart(HM_KEY_WORKERS));
	assert_true(conf_key_needs_restart(HM_KEY_FOREGROUND));
	assert_true(conf_key_needs_restart(HM_KEY_PID_FILE));
	assert_true(conf_key_needs_restart(HM_KEY_USER));
	assert_true(conf_key_needs_restart(HM_KEY_GROUP));
	assert_false(conf_key_needs_restart(HM_KEY_LOG_FILE));
	assert_false(conf_key_needs_restart(HM_KEY_ROOT));
	assert_false(conf_key_needs_restart(HM_KEY_LOG_LEVEL));
	assert_false(conf_key_needs_restart(HM_KEY_MAX_INFLIGHT));
}

/* The table's rows: every key in --help, each field inside the struct and
 * apart from the others (a reload swaps a field by its offset and size). */
static void
test_key_table_rows(void **state)
{
	char *help = NULL, opt[64];
	size_t len = 0, off[HM_CONFIG__NKEYS], size[HM_CONFIG__NKEYS];
	FILE *f;
	int k, j;

	(void)state;
	f = open_memstream(&help, &len);
	assert_non_null(f);
	conf_usage(f);
	fclose(f);
	for (k = 0; k < HM_CONFIG__NKEYS; k++) {
		snprintf(opt, sizeof opt, "--%s", conf_key_name((enum hm_config_key)k));
		if (strstr(help, opt) == NULL)
			fail_msg("%s is not in --help", opt);
		conf_key_field((enum hm_config_key)k, &off[k], &size[k]);
		assert_true(size[k] > 0);
		assert_true(off[k] + size[k] <= offsetof(struct hm_config, source));
		for (j = 0; j < k; j++)
			assert_true(off[k] + size[k] <= off[j] || off[j] + size[j] <= off[k]);
	}
	assert_int_equal(conf_key_short(HM_KEY_SOCKET), 's');
	assert_true(conf_key_is_flag(HM_KEY_FOREGROUND));
	assert_false(conf_key_is_flag(HM_KEY_CROSS_MOUNTS));
	free(help);
}

/* --- the peer policy ----------------------------------------------------------------- */

static uid_t uids_a[] = { 1000, 1001 };
static gid_t gids_a[] = { 500 };
static uid_t uids_admin[] = { 2000 };
static gid_t gids_admin[] = { 600 };

static void
policy_server(struct server *srv, bool allow, bool admin)
{
	memset(srv, 0, sizeof *srv);
	srv->uid = 4242;		/* hotmapd's own */
	if (allow) {
		srv->cfg.allow_uid = (struct hm_uid_list){ uids_a, 2 };
		srv->cfg.allow_gid = (struct hm_gid_list){ gids_a, 1 };
	}
	if (admin) {
		srv->cfg.admin_uid = (struct hm_uid_list){ uids_admin, 1 };
		srv->cfg.admin_gid = (struct hm_gid_list){ gids_admin, 1 };
	}
}

static void
test_policy_open_by_default(void **state)
{
	struct server srv;
	gid_t groups[] = { 7, 8 };

	(void)state;
	policy_server(&srv, false, false);
	assert_true(policy_may_connect(&srv, 1234, 1234, NULL, 0));
	assert_true(policy_may_connect(&srv, 1234, (gid_t)-1, groups, 2));
	/* admins: root and hotmapd's own uid only */
	assert_true(policy_is_admin(&srv, 0, 0, NULL, 0));
	assert_true(policy_is_admin(&srv, 4242, 99, NULL, 0));
	assert_false(policy_is_admin(&srv, 1234, 0, NULL, 0));
	assert_false(policy_is_admin(&srv, 1234, (gid_t)-1, groups, 2));
}

static void
test_policy_allow_lists(void **state)
{
	struct server srv;
	gid_t other[] = { 7, 8 }, with_allowed[] = { 7, 500 };

	(void)state;
	policy_server(&srv, true, false);
	assert_true(policy_may_connect(&srv, 1000, 1, NULL, 0));		/* by uid */
	assert_true(policy_may_connect(&srv, 1001, 1, NULL, 0));
	assert_true(policy_may_connect(&srv, 3000, 500, NULL, 0));	/* primary gid */
	assert_true(policy_may_connect(&srv, 3000, 1, with_allowed, 2));	/* a group */
	assert_false(policy_may_connect(&srv, 3000, 1, other, 2));
	assert_false(policy_may_connect(&srv, 3000, (gid_t)-1, NULL, 0));
	/* root and hotmapd's uid may always connect */
	assert_true(policy_may_connect(&srv, 0, 1, NULL, 0));
	assert_true(policy_may_connect(&srv, 4242, 1, NULL, 0));

	/* only allow-gid: uids are not enough */
	srv.cfg.allow_uid.n = 0;
	assert_false(policy_may_connect(&srv, 1000, 1, NULL, 0));
	assert_true(policy_may_connect(&srv, 1000, 1, with_allowed, 2));
}

static void
test_policy_admins(void **state)
{
	struct server srv;
	gid_t admin_group[] = { 9, 600 };

	(void)state;
	policy_server(&srv, true, true);
	assert_true(policy_is_admin(&srv, 2000, 1, NULL, 0));
	assert_true(policy_is_admin(&srv, 3000, 600, NULL, 0));
	assert_true(policy_is_admin(&srv, 3000, 1, admin_group, 2));
	assert_false(policy_is_admin(&srv, 1000, 500, NULL, 0));
	/* (gid_t)-1 is "unknown", never a match */
	srv.cfg.admin_gid.v[0] = (gid_t)-1;
	assert_false(policy_is_admin(&srv, 3000, (gid_t)-1, NULL, 0));
	srv.cfg.admin_gid.v[0] = 600;
	/* admins may connect though no allow list names them */
	assert_true(policy_may_connect(&srv, 2000, 1, NULL, 0));
	assert_true(policy_may_connect(&srv, 3000, 1, admin_group, 2));
	assert_false(policy_may_connect(&srv, 3000, 1, NULL, 0));
}

static void
test_peer_creds(void **state)
{
	static gid_t groups[NGROUPS_MAX], mine[NGROUPS_MAX];
	gid_t one[1];
	int sv[2], n = getgroups(NGROUPS_MAX, mine), rc, i;
	size_t ngroups = NGROUPS_MAX;
	uid_t uid;
	gid_t gid;

	(void)state;
	assert_true(n >= 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	rc = transport_peer_creds(sv[0], &uid, &gid, groups, &ngroups);
	assert_int_equal(rc, 0);
	assert_int_equal(uid, geteuid());
	assert_int_equal(gid, getegid());
	/* without SO_PEERGROUPS (before Linux 4.13): none */
	if (ngroups > 0) {
		assert_int_equal(ngroups, (size_t)n);
		for (i = 0; i < n; i++)
			assert_int_equal(groups[i], mine[i]);
		if (n > 1) {
			ngroups = 1;
			assert_int_equal(transport_peer_creds(sv[0], &uid, &gid, one, &ngroups), -ERANGE);
			assert_int_equal(ngroups, (size_t)n);
			assert_int_equal(uid, geteuid());
		}
	}
	ngroups = 0;
	rc = transport_peer_creds(sv[0], &uid, &gid, NULL, &ngroups);
	assert_true(rc == 0 || rc == -ERANGE);
	close(sv[0]);
	close(sv[1]);

	ngroups = 1;
	rc = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(rc >= 0);
	assert_int_equal(transport_peer_creds(rc, &uid, &gid, one, &ngroups), -ENOTSOCK);
	close(rc);
}

/*
 * getgrnam_r and getpwnam_r, wrapped (-Wl,--wrap): ERANGE while the buffer
 * is smaller than erange_below, as for a group of a directory service with
 * thousands of members.
 */
static size_t erange_below;
static unsigned lookups;

int __real_getgrnam_r(const char *name, struct group *grp, char *buf, size_t buflen,
		      struct group **result);
int __wrap_getgrnam_r(const char *name, struct group *grp, char *buf, size_t buflen,
		      struct group **result);
int __real_getpwnam_r(const char *name, struct passwd *pwd, char *buf, size_t buflen,
		      struct passwd **result);
int __wrap_getpwnam_r(const char *name, struct passwd *pwd, char *buf, size_t buflen,
		      struct passwd **result);

int
__wrap_getgrnam_r(const char *name, struct group *grp, char *buf, size_t buflen,
		  struct group **result)
{
	lookups++;
	if (buflen < erange_below) {
		*result = NULL;
		return ERANGE;
	}
	return __real_getgrnam_r(name, grp, buf, buflen, result);
}

int
__wrap_getpwnam_r(const char *name, struct passwd *pwd, char *buf, size_t buflen,
		  struct passwd **result)
{
	lookups++;
	if (buflen < erange_below) {
		*result = NULL;
		return ERANGE;
	}
	return __real_getpwnam_r(name, pwd, buf, buflen, result);
}

/* A user or group whose entry does not fit the first buffer is still
 * found: the buffer grows. */
static void
test_large_entries(void **state)
{
	struct hm_config_args args = { 0 };
	struct hm_config cfg;
	struct passwd *pw = getpwuid(0);

	(void)state;
	if (pw == NULL || strcmp(group0(), "0") == 0)
		skip();		/* no names for uid and gid 0 here */
	erange_below = 200000;
	lookups = 0;
	write_conf("socket-group = %s\nallow-gid = %s\nadmin-uid = %s\n", group0(), group0(),
		   pw->pw_name);
	load_ok(&cfg, &args);
	erange_below = 0;
	assert_int_equal(cfg.socket_group, 0);
	assert_int_equal(cfg.allow_gid.n, 1);
	assert_int_equal(cfg.allow_gid.v[0], 0);
	assert_int_equal(cfg.admin_uid.n, 1);
	assert_int_equal(cfg.admin_uid.v[0], 0);
	assert_true(lookups > 3);	/* refused, grown, found */
	conf_clear(&cfg);
}

/* --- the direct tier's lease rule (policy_may_lease) ------------------------ */

static struct peer_ident
lease_ident(uid_t uid, gid_t gid, gid_t *groups, size_t ngroups)
{
	struct peer_ident id = { .known = true, .uid = uid, .gid = gid, .groups = groups,
				 .ngroups = ngroups };

	return id;
}

static bool
may_lease(enum hm_lease_rule rule, const struct peer_ident *id, uint32_t owner,
	  uint32_t group, uint32_t mode, bool ro, bool acl)
{
	struct storage_writers w = { .uid = owner, .gid = group, .mode = S_IFREG | mode,
				     .read_only = ro, .acl = acl };
	char why[96] = "";
	bool ok = policy_may_lease(rule, id, &w, why, sizeof why);

	/* a refusal always says why, and names the key */
	if (!ok)
		assert_non_null(strstr(why, "direct-lease-rule"));
	return ok;
}

static void
test_lease_rule_can_write(void **state)
{
	gid_t groups[] = { 300, 400 };
	struct peer_ident alice = lease_ident(1000, 1000, groups, 2);
	struct peer_ident root = lease_ident(0, 0, NULL, 0);
	struct peer_ident unknown = { .known = false, .uid = (uid_t)-1 };
	enum hm_lease_rule w = HM_LEASE_RULE_CAN_WRITE;

	(void)state;
	/* someone else's 0644: she may read it, not write it */
	assert_false(may_lease(w, &alice, 2000, 2000, 0644, false, false));
	/* her own file, even read-only to her: she may chmod it */
	assert_true(may_lease(w, &alice, 1000, 1000, 0644, false, false));
	assert_true(may_lease(w, &alice, 1000, 1000, 0444, false, false));
	/* nobody may write it: no write bit, or a read-only mount */
	assert_true(may_lease(w, &alice, 2000, 2000, 0444, false, false));
	assert_true(may_lease(w, &alice, 2000, 2000, 0666, true, false));
	/* the group's bit, for a member (primary or supplementary group) */
	assert_true(may_lease(w, &alice, 2000, 400, 0664, false, false));
	assert_true(may_lease(w, &alice, 2000, 1000, 0664, false, false));
	assert_false(may_lease(w, &alice, 2000, 500, 0664, false, false));
	/* the kernel's order: a member of the group gets the group's bits,
	 * not the others' */
	assert_false(may_lease(w, &alice, 2000, 300, 0646, false, false));
	assert_true(may_lease(w, &alice, 2000, 500, 0646, false, false));
	/* an ACL: its entries decide, so only the owner counts */
	assert_false(may_lease(w, &alice, 2000, 400, 0666, false, true));
	assert_true(may_lease(w, &alice, 1000, 400, 0666, false, true));
	/* root writes anything */
	assert_true(may_lease(w, &root, 2000, 2000, 0600, false, false));
	/* who the client is is unknown: only when nobody writes */
	assert_false(may_lease(w, &unknown, 2000, 2000, 0644, false, false));
	assert_true(may_lease(w, &unknown, 2000, 2000, 0444, false, false));
}

static void
test_lease_rule_can_read(void **state)
{
	struct peer_ident alice = lease_ident(1000, 1000, NULL, 0);

	(void)state;
	assert_true(may_lease(HM_LEASE_RULE_CAN_READ, &alice, 2000, 2000, 0644, false, false));
	assert_true(may_lease(HM_LEASE_RULE_CAN_READ, &alice, 2000, 2000, 0666, false, true));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_from_an_empty_file),
		cmocka_unit_test(test_missing_default_file_is_fine),
		cmocka_unit_test(test_missing_given_file_is_an_error),
		cmocka_unit_test(test_every_key_good),
		cmocka_unit_test(test_every_key_bad_all_errors_at_once),
		cmocka_unit_test(test_values_spelled_otherwise),
		cmocka_unit_test(test_syntax_errors_and_lines),
		cmocka_unit_test(test_long_line),
		cmocka_unit_test(test_sections_comments_crlf_bom),
		cmocka_unit_test(test_repeated_keys),
		cmocka_unit_test(test_command_line_wins),
		cmocka_unit_test(test_command_line_errors_after_the_file),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_foreach_values_and_sources),
		cmocka_unit_test(test_key_table),
		cmocka_unit_test(test_key_table_rows),
		cmocka_unit_test(test_policy_open_by_default),
		cmocka_unit_test(test_policy_allow_lists),
		cmocka_unit_test(test_policy_admins),
		cmocka_unit_test(test_lease_rule_can_write),
		cmocka_unit_test(test_lease_rule_can_read),
		cmocka_unit_test(test_peer_creds),
		cmocka_unit_test(test_large_entries),
	};

	return cmocka_run_group_tests_name("config", tests, setup, teardown);
}
