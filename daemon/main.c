/*
 * main.c - hotmapd: options, process set-up, and the server's run.
 *
 * Kept thin: everything it calls lives in the convenience library the
 * tests link too.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>
#include <protobuf-c/protobuf-c.h>

#include "daemon/conf.h"
#include "daemon/guard.h"
#include "daemon/log.h"
#include "daemon/server.h"

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
		"                         in effect, and exit (0: good, 1: errors)\n"
		"  -s, --socket PATH      listen on PATH (default: $HOTMAP_SOCKET, else\n"
		"                         /run/hotmap/hotmapd.sock as root, else\n"
		"                         $XDG_RUNTIME_DIR/hotmap/hotmapd.sock)\n"
		"      --socket-mode MODE octal mode of the socket (default 0666)\n"
		"      --socket-group GROUP  group of the socket (default: unchanged)\n"
		"  -f, --foreground       stay in the foreground (as under systemd)\n"
		"  -b, --backend NAME     auto (default), mmap (required) or pread\n"
		"  -r, --root DIR         allow open by path beneath DIR (repeatable)\n"
		"      --cross-mounts yes|no  whether open by path may cross a mount\n"
		"                         point beneath a root (default yes)\n"
		"      --allow-uid USERS, --allow-gid GROUPS\n"
		"                         who may connect (default: anyone who can reach\n"
		"                         the socket)\n"
		"      --admin-uid USERS, --admin-gid GROUPS\n"
		"                         who may administer, besides root and hotmapd's user\n"
		"      --max-mapped-bytes SIZE  mapped bytes kept (default 0: no limit)\n"
		"      --max-open-files N files kept open (default 16384; 0: no limit)\n"
		"      --idle-unmap S     unmap files unused for S seconds (default 0: never)\n"
		"      --warm WHAT        none (default), willneed or populate: what to do\n"
		"                         with a file's data when it is first cached\n"
		"      --network-fs HOW   pread (default) or mmap: network and FUSE files\n"
		"      --network-fs-chunk SIZE  their pread chunk (default 16M)\n"
		"  -c, --max-connections-per-uid N\n"
		"                         connections one uid may hold (default 4096)\n"
		"      --max-inflight N   requests in flight per client (default 32)\n"
		"      --max-inflight-bytes SIZE  bytes in flight per client (default 64M)\n"
		"  -i, --idle-timeout S   close connections idle (no open file) for S seconds (default 0: never)\n"
		"  -w, --workers N        threads for reads that may wait for the disk\n"
		"                         (default: one per core, 2 to 8)\n"
		"      --poll-us US       poll clients' request rings for US microseconds\n"
		"                         before sleeping (default auto: 50 with 4 cores\n"
		"                         or more, else 0)\n"
		"      --log-level LEVEL  error, warning, notice (default), info or debug\n"
		"  -v, --verbose          log one level more (repeatable)\n"
		"  -h, --help             show this help and exit\n"
		"  -V, --version          show the version and exit\n"
		"\n"
		"SIZE: a number of bytes with an optional K, M, G or T (binary).\n"
		"See hotmapd(8) and hotmapd.conf(5).\n");
}

/* Descriptors are the daemon's scarcest resource: one per cached file. */
static void
raise_nofile_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			log_warn("cannot raise the descriptor limit: %s", strerror(errno));
	}
}

/*
 * Without --foreground: fork, and let the parent exit only when the child
 * is listening (0) or has failed (1), so that a script can use the socket
 * as soon as hotmapd returns.
 */
static int
daemonize(int *ready_fd)
{
	int pipefd[2];
	ssize_t n;
	pid_t pid;
	char c = 0;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(pipefd[1]);
		do
			n = read(pipefd[0], &c, 1);
		while (n < 0 && errno == EINTR);
		_exit(n == 1 && c == 'R' ? 0 : 1);
	}
	close(pipefd[0]);
	if (setsid() < 0)
		return -errno;
	*ready_fd = pipefd[1];
	return 0;
}

static void
detach_stdio(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return;
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
}

/* Long options without a short one: a key of the configuration each, by
 * its index past OPT_KEY. */
enum {
	OPT_CONFIG = 256,
	OPT_CHECK_CONFIG,
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

int
main(int argc, char **argv)
{
	/* The short options, and the keys that have one. */
	static const struct {
		int c;
		enum hm_config_key key;
	} short_keys[] = {
		{ 's', HM_KEY_SOCKET },
		{ 'b', HM_KEY_BACKEND },
		{ 'r', HM_KEY_ROOT },
		{ 'w', HM_KEY_WORKERS },
		{ 'c', HM_KEY_MAX_CONNECTIONS_PER_UID },
		{ 'i', HM_KEY_IDLE_TIMEOUT },
	};
	struct option opts[HM_CONFIG__NKEYS + 8];
	struct hm_config_args args = { 0 };
	struct hm_config_errors errs = { 0 };
	struct hm_config cfg;
	char err[512];
	struct server srv;
	bool check = false;
	int ready_fd = -1, c, rc, k, nopts = 0;
	size_t i;

	/* Every key is a long option of the same name. */
	for (k = 0; k < HM_CONFIG__NKEYS; k++) {
		opts[nopts] = (struct option){ conf_key_name((enum hm_config_key)k),
					       required_argument, NULL, OPT_KEY + k };
		for (i = 0; i < sizeof short_keys / sizeof short_keys[0]; i++)
			if (short_keys[i].key == (enum hm_config_key)k)
				opts[nopts].val = short_keys[i].c;
		if (k == HM_KEY_FOREGROUND) {
			opts[nopts].has_arg = no_argument;
			opts[nopts].val = 'f';
		}
		nopts++;
	}
	opts[nopts++] = (struct option){ "config", required_argument, NULL, OPT_CONFIG };
	opts[nopts++] = (struct option){ "check-config", no_argument, NULL, OPT_CHECK_CONFIG };
	opts[nopts++] = (struct option){ "verbose", no_argument, NULL, 'v' };
	opts[nopts++] = (struct option){ "help", no_argument, NULL, 'h' };
	opts[nopts++] = (struct option){ "version", no_argument, NULL, 'V' };
	opts[nopts] = (struct option){ NULL, 0, NULL, 0 };

	while ((c = getopt_long(argc, argv, "s:fb:r:w:c:i:vhV", opts, NULL)) != -1) {
		const char *key = NULL, *value = optarg;

		for (i = 0; i < sizeof short_keys / sizeof short_keys[0]; i++)
			if (short_keys[i].c == c)
				key = conf_key_name(short_keys[i].key);
		if (c >= OPT_KEY && c < OPT_KEY + HM_CONFIG__NKEYS)
			key = conf_key_name((enum hm_config_key)(c - OPT_KEY));
		switch (c) {
		case 'f':
			key = "foreground";
			value = "yes";
			break;
		case OPT_CONFIG:
			args.path = optarg;
			break;
		case OPT_CHECK_CONFIG:
			check = true;
			break;
		case 'v':
			args.verbose++;
			break;
		case 'h':
			usage(stdout);
			conf_args_clear(&args);
			return 0;
		case 'V':
			printf("hotmapd %s (libevent %s, protobuf-c %s)\n", PACKAGE_VERSION,
			       event_get_version(), protobuf_c_version());
			conf_args_clear(&args);
			return 0;
		default:
			if (key != NULL)
				break;
			usage(stderr);
			conf_args_clear(&args);
			return 2;
		}
		if (key != NULL && conf_args_add(&args, key, value) < 0) {
			fprintf(stderr, "hotmapd: out of memory\n");
			return 1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "hotmapd: unexpected argument '%s'\n", argv[optind]);
		conf_args_clear(&args);
		return 2;
	}

	rc = conf_load(&cfg, &args, &errs);
	if (rc < 0) {
		for (i = 0; i < errs.n; i++)
			fprintf(stderr, "hotmapd: %s\n", errs.v[i]);
		if (rc == -ENOMEM)
			fprintf(stderr, "hotmapd: out of memory\n");
		conf_errors_clear(&errs);
		conf_args_clear(&args);
		return check || rc == -ENOMEM ? 1 : 2;
	}
	if (check) {
		print_config(&cfg, &args);
		conf_clear(&cfg);
		conf_args_clear(&args);
		return 0;
	}
	log_set_level(cfg.log_level);

	/* Reply chunks (256 KiB) are allocated and freed all the time: keep
	 * them in the heap for reuse instead of a fresh mmap each, whose
	 * every page would fault on first write and be unmapped again. */
	mallopt(M_MMAP_THRESHOLD, 4 * 1024 * 1024);
	mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
	/* A client that hangs up mid-reply must cost an EPIPE, not the
	 * daemon. */
	signal(SIGPIPE, SIG_IGN);
	raise_nofile_limit();
	rc = guard_install();
	if (rc < 0) {
		log_err("cannot install the SIGBUS guard: %s", strerror(-rc));
		conf_clear(&cfg);
		conf_args_clear(&args);
		return 1;
	}
	if (!cfg.foreground) {
		rc = daemonize(&ready_fd);
		if (rc < 0) {
			log_err("cannot daemonize: %s", strerror(-rc));
			conf_clear(&cfg);
			conf_args_clear(&args);
			return 1;
		}
	}

	/* srv keeps &args for reloads: it lives until server_fini. */
	rc = server_init(&srv, &cfg, &args, err, sizeof err);
	if (rc == 0)
		rc = server_listen(&srv, err, sizeof err);
	if (rc < 0) {
		log_err("%s", err);
		server_fini(&srv);
		conf_args_clear(&args);
		return 1;
	}
	if (srv.cfg.path != NULL)
		log_info("configuration from %s", srv.cfg.path);
	if (ready_fd >= 0) {
		detach_stdio();
		if (write(ready_fd, "R", 1) < 0)
			log_warn("cannot tell the parent that hotmapd is ready: %s", strerror(errno));
		close(ready_fd);
	}
	rc = server_run(&srv);
	server_fini(&srv);
	conf_args_clear(&args);
	return rc < 0 ? 1 : 0;
}
