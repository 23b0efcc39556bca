/* SPDX-License-Identifier: MIT */
/*
 * main.c - hotmapd: options, process set-up, and the server's run.
 *
 * Kept thin: everything it calls lives in the convenience library the
 * tests link too.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <protobuf-c/protobuf-c.h>

#include "daemon/config/conf.h"
#include "daemon/process/daemonize.h"
#include "daemon/storage/guard.h"
#include "daemon/base/log.h"
#include "daemon/process/privdrop.h"
#include "daemon/service/server.h"

static void
usage(FILE *f)
{
	fprintf(f,
		"Usage: hotmapd [OPTION]...\n"
		"Serve byte ranges of hot files from kept-alive memory mappings.\n"
		"\n"
		"      --config FILE      read FILE (default: " HM_CONFIG_DEFAULT_PATH ",\n"
		"                         if it exists); options given here win over it\n"
		"      --check-config     check the file and the options, print the values\n"
		"                         in effect, and exit (0: good, 2: errors)\n"
		"      --quiet            with --check-config: print only the errors\n"
		"      --print-example-config\n"
		"                         print every key with its default, commented\n"
		"                         out, as hotmapd.conf reads it, and exit\n");
	conf_usage(f);
	fprintf(f,
		"  -v, --verbose          log one level more (repeatable)\n"
		"  -h, --help             show this help and exit\n"
		"  -V, --version          show the version and exit\n"
		"\n"
		"SIZE: a number of bytes with an optional K, M, G or T (binary).\n"
		"See hotmapd(8) and hotmapd.conf(5).\n");
}

/*
 * Paths the command line gives are the caller's, relative to the caller's
 * directory, which the daemon leaves for / when it detaches: made absolute
 * here, before anything reads them, and kept for reloads (args borrows
 * them).  Freed at exit.
 */
static char *owned_paths[16];
static size_t nowned_paths;

static const char *
option_path(const char *path)
{
	char *abs;

	if (daemonize_path_absolute(path) || path[0] == '\0' ||
	    nowned_paths == sizeof owned_paths / sizeof owned_paths[0])
		return path;
	abs = daemonize_abspath(path);
	if (abs == NULL)
		return path;	/* conf says what is wrong with it, if anything */
	owned_paths[nowned_paths++] = abs;
	return abs;
}

static void
owned_paths_free(void)
{
	while (nowned_paths > 0)
		free(owned_paths[--nowned_paths]);
}

/* Long options without a short one: a key of the configuration each, by
 * its index past OPT_KEY. */
enum {
	OPT_CONFIG = 256,
	OPT_CHECK_CONFIG,
	OPT_QUIET,
	OPT_PRINT_EXAMPLE,
	OPT_KEY = 512,
};

static void
print_value(const char *key, const char *value, const char *source, void *arg)
{
	(void)arg;
	printf("%s = %s  # %s\n", key, value, source);
}

/* --check-config: the values in effect, as a file would set them. */
static void
print_config(const struct hm_config *cfg, const struct hm_config_args *args)
{
	printf("configuration OK\n");
	if (cfg->path != NULL)
		printf("# file: %s\n", cfg->path);
	else
		printf("# no file (%s does not exist): built-in defaults\n",
		       args->path != NULL ? args->path : HM_CONFIG_DEFAULT_PATH);
	conf_foreach(cfg, print_value, NULL);
}

/* Every key is a long option of the same name, some a short one too;
 * a flag takes no value. */
static void
options_build(struct option *opts, char *shortopts)
{
	size_t nshort = 0;
	int k, nopts = 0;

	/* ':' first: a missing value is told apart from an unknown option */
	shortopts[nshort++] = ':';

	for (k = 0; k < HM_CONFIG__NKEYS; k++) {
		bool flag = conf_key_is_flag((enum hm_config_key)k);
		int sc = conf_key_short((enum hm_config_key)k);

		opts[nopts++] = (struct option){ conf_key_name((enum hm_config_key)k),
						 flag ? no_argument : required_argument, NULL,
						 OPT_KEY + k };
		if (sc != 0) {
			shortopts[nshort++] = (char)sc;
			if (!flag)
				shortopts[nshort++] = ':';
		}
	}
	memcpy(shortopts + nshort, "vhV", sizeof "vhV");
	opts[nopts++] = (struct option){ "config", required_argument, NULL, OPT_CONFIG };
	opts[nopts++] = (struct option){ "check-config", no_argument, NULL, OPT_CHECK_CONFIG };
	opts[nopts++] = (struct option){ "quiet", no_argument, NULL, OPT_QUIET };
	opts[nopts++] = (struct option){ "print-example-config", no_argument, NULL,
					 OPT_PRINT_EXAMPLE };
	opts[nopts++] = (struct option){ "verbose", no_argument, NULL, 'v' };
	opts[nopts++] = (struct option){ "help", no_argument, NULL, 'h' };
	opts[nopts++] = (struct option){ "version", no_argument, NULL, 'V' };
	opts[nopts] = (struct option){ NULL, 0, NULL, 0 };
}

/* The configuration key option *c names (by its short option, which
 * becomes OPT_KEY + key in *c), with *value "yes" for a flag; NULL when
 * *c is not a key. */
static const char *
option_key(int *c, const char **value)
{
	int k;

	for (k = 0; k < HM_CONFIG__NKEYS && *c < OPT_KEY; k++)
		if (conf_key_short((enum hm_config_key)k) == *c)
			*c = OPT_KEY + k;
	if (*c < OPT_KEY || *c >= OPT_KEY + HM_CONFIG__NKEYS)
		return NULL;
	if (conf_key_is_flag((enum hm_config_key)(*c - OPT_KEY)))
		*value = "yes";
	return conf_key_name((enum hm_config_key)(*c - OPT_KEY));
}

/* The command line into args, *check and *quiet: -1 to go on, or the
 * status to exit with (--help, --version, --print-example-config, a usage
 * error). */
static int
options_parse(int argc, char **argv, struct hm_config_args *args, bool *check, bool *quiet)
{
	struct option opts[HM_CONFIG__NKEYS + 10];
	char shortopts[2 * HM_CONFIG__NKEYS + 9];
	int c;

	options_build(opts, shortopts);
	opterr = 0;	/* said below, as "hotmapd: ...", not as argv[0] */
	while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
		const char *value = optarg;
		const char *key = option_key(&c, &value);
		const char *word;

		switch (c) {
		case OPT_CONFIG:
			args->path = option_path(optarg);
			break;
		case OPT_CHECK_CONFIG:
			*check = true;
			break;
		case OPT_QUIET:
			*quiet = true;
			break;
		case OPT_PRINT_EXAMPLE:
			conf_args_clear(args);
			if (conf_print_example(stdout) < 0) {
				fprintf(stderr, "hotmapd: out of memory\n");
				return 1;
			}
			return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
		case 'v':
			args->verbose++;
			break;
		case 'h':
			usage(stdout);
			conf_args_clear(args);
			return 0;
		case 'V':
			printf("hotmapd %s (libevent %s, protobuf-c %s)\n", PACKAGE_VERSION,
			       event_get_version(), protobuf_c_version());
			conf_args_clear(args);
			return 0;
		default:
			if (key != NULL)
				break;
			/* One line, as other tools do, not the whole --help. */
			word = argv[optind - 1];
			if (c == ':')
				fprintf(stderr, "hotmapd: option '%s' needs a value\n", word);
			else if (strncmp(word, "--", 2) != 0)
				fprintf(stderr, "hotmapd: unknown option '-%c'\n", optopt);
			else if (optopt != 0)
				fprintf(stderr, "hotmapd: option '%.*s' takes no value\n",
					(int)strcspn(word, "="), word);
			else
				fprintf(stderr, "hotmapd: unknown option '%s'\n", word);
			fprintf(stderr, "Try 'hotmapd --help' for more information.\n");
			conf_args_clear(args);
			return 2;
		}
		if (key != NULL && (strcmp(key, "socket") == 0 || strcmp(key, "log-file") == 0 ||
				    strcmp(key, "pid-file") == 0))
			value = option_path(value);
		if (key != NULL && conf_args_add(args, key, value) < 0) {
			fprintf(stderr, "hotmapd: out of memory\n");
			return 1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "hotmapd: unexpected argument '%s'\n"
			"Try 'hotmapd --help' for more information.\n", argv[optind]);
		conf_args_clear(args);
		return 2;
	}
	return -1;
}

/* Loads the configuration into cfg: -1 to go on, or the status to exit
 * with (errors, or --check-config done; cfg is then cleared).  quiet:
 * --check-config prints only errors (ExecStartPre= and ExecReload= of
 * hotmapd.service, where the values would fill the journal). */
static int
config_load(struct hm_config *cfg, const struct hm_config_args *args, bool check, bool quiet)
{
	struct hm_config_errors errs = { 0 };
	size_t i;
	int rc;

	rc = conf_load(cfg, args, &errs);
	if (rc < 0) {
		for (i = 0; i < errs.n; i++)
			fprintf(stderr, "hotmapd: %s\n", errs.v[i]);
		if (rc == -ENOMEM)
			fprintf(stderr, "hotmapd: out of memory\n");
		conf_errors_clear(&errs);
		/* the same status with --check-config as without: a script
		 * that checks first sees what the start would say */
		return rc == -ENOMEM ? 1 : 2;
	}
	/* The command line's paths are absolute by now; the file's and
	 * HOTMAP_SOCKET's may not be.  An error of the configuration, so
	 * --check-config says it too. */
	if (!cfg->foreground && cfg->socket_path[0] != '/') {
		fprintf(stderr, "hotmapd: socket: '%s' is a relative path, and hotmapd leaves its "
			"directory for / when it detaches: give an absolute path, or --foreground\n",
			cfg->socket_path);
		conf_clear(cfg);
		return 2;
	}
	if (check) {
		if (!quiet)
			print_config(cfg, args);
		conf_clear(cfg);
		return 0;
	}
	return -1;
}

/*
 * What the configuration asks of this process: where the log goes (the
 * file opens now, as the user who started us), and a user it can become.
 * -1 to go on, or the exit status after saying why.
 */
static int
process_check(const struct hm_config *cfg)
{
	char err[512];
	int rc;

	rc = log_open(cfg->log_file, !cfg->foreground);
	if (rc < 0) {
		fprintf(stderr, "hotmapd: log-file %s: %s\n", cfg->log_file, strerror(-rc));
		return 1;
	}
	if (privdrop_check(cfg->user, cfg->group, err, sizeof err) < 0) {
		log_err("%s", err);
		return 1;
	}
	return -1;
}

/* The process before the server: the platform's set-up (allocator,
 * signals, limits; Winsock and threads on Windows), the fault guard and,
 * without --foreground, detaching (*ready_fd then tells the caller).  0,
 * or -1 after logging why. */
static int
process_setup(const struct hm_config *cfg, int *ready_fd)
{
	char err[256], warn[256];
	int rc;

	rc = daemonize_process_setup(err, sizeof err, warn, sizeof warn);
	if (warn[0] != '\0')
		log_warn("%s", warn);
	if (rc < 0) {
		log_err("%s", err);
		return -1;
	}
	rc = guard_install();
	if (rc < 0) {
		log_err("cannot install the SIGBUS guard: %s", strerror(-rc));
		return -1;
	}
	if (!cfg->foreground) {
		rc = daemonize_start(ready_fd, err, sizeof err);
		if (rc < 0) {
			log_err("%s", err);
			return -1;
		}
	}
	return 0;
}

/* Everything that needs root is done (socket, pid file, log file): become
 * the configured user, who is then hotmapd's own user for admin rights,
 * and say we are ready.  0, or -1 after logging why. */
static int
become_ready(struct server *srv, struct pidfile *pf, int ready_fd)
{
	char err[512], who[64];
	int rc;

	rc = privdrop(srv->cfg.user, srv->cfg.group, err, sizeof err);
	if (rc < 0) {
		log_err("%s", err);
		return -1;
	}
	if (srv->cfg.user != (uid_t)-1) {
		daemonize_user_text(who, sizeof who);
		log_info("running as %s", who);
	}
	server_self(srv);
	rc = pidfile_write(pf);
	if (rc < 0) {
		log_err("pid-file %s: %s", pf->path, strerror(-rc));
		return -1;
	}
	if (srv->cfg.path != NULL)
		log_info("configuration from %s", srv->cfg.path);
	log_ready();
	if (ready_fd >= 0)
		daemonize_ready(ready_fd);
	return 0;
}

/* Runs the server over cfg (taken) until it stops; the exit status.
 * args must outlive it: reloads read them. */
static int
serve(struct hm_config *cfg, const struct hm_config_args *args, int ready_fd)
{
	struct pidfile pf = { .fd = -1 };
	struct server srv;
	char err[512];
	int rc = 0;

	if (cfg->pid_file != NULL)
		rc = pidfile_open(&pf, cfg->pid_file, err, sizeof err);
	if (rc < 0) {
		log_err("%s", err);
		conf_clear(cfg);
		return 1;
	}
	rc = server_init(&srv, cfg, args, err, sizeof err);
	if (rc == 0)
		rc = server_listen(&srv, err, sizeof err);
	if (rc < 0)
		log_err("%s", err);
	if (rc < 0 || become_ready(&srv, &pf, ready_fd) < 0) {
		server_fini(&srv);
		pidfile_close(&pf);
		return 1;
	}
	rc = server_run(&srv);
	server_fini(&srv);
	pidfile_close(&pf);
	return rc < 0 ? 1 : 0;
}

int
main(int argc, char **argv)
{
	struct hm_config_args args = { 0 };
	struct hm_config cfg;
	bool check = false, quiet = false;
	int ready_fd = -1, rc;

	daemonize_stdio_open();
	rc = options_parse(argc, argv, &args, &check, &quiet);
	if (rc < 0)
		rc = config_load(&cfg, &args, check, quiet);
	if (rc >= 0) {
		conf_args_clear(&args);
		owned_paths_free();
		return rc;
	}
	log_set_level(cfg.log_level);
	rc = process_check(&cfg);
	if (rc < 0 && process_setup(&cfg, &ready_fd) < 0)
		rc = 1;
	if (rc >= 0) {
		conf_clear(&cfg);
		conf_args_clear(&args);
		owned_paths_free();
		return rc;
	}
	rc = serve(&cfg, &args, ready_fd);
	conf_args_clear(&args);
	owned_paths_free();
	return rc;
}
