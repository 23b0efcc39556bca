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
		"  -s, --socket PATH      listen on PATH (default: $HOTMAP_SOCKET, else\n"
		"                         /run/hotmap/hotmapd.sock as root, else\n"
		"                         $XDG_RUNTIME_DIR/hotmap/hotmapd.sock)\n"
		"  -f, --foreground       stay in the foreground (as under systemd)\n"
		"  -b, --backend NAME     auto (default), mmap (required) or pread\n"
		"  -r, --root DIR         allow open by path beneath DIR (repeatable)\n"
		"  -c, --max-connections-per-uid N\n"
		"                         connections one uid may hold (default 4096)\n"
		"  -i, --idle-timeout S   close connections idle for S seconds (default 0: never)\n"
		"  -w, --workers N        threads for reads that may wait for the disk\n"
		"                         (default: one per core, 2 to 8)\n"
		"  -v, --verbose          log more (twice: debug)\n"
		"  -h, --help             show this help and exit\n"
		"  -V, --version          show the version and exit\n"
		"\n"
		"See hotmapd(8).\n");
}

/* A decimal option value from min to max into *out: 0, or 1 after saying
 * what is wrong. */
static int
parse_number(const char *option, const char *arg, unsigned long min, unsigned long max,
	     unsigned *out)
{
	unsigned long n;
	char *end;

	errno = 0;
	n = strtoul(arg, &end, 10);
	if (errno != 0 || end == arg || *end != '\0' || arg[0] == '-' || n < min || n > max) {
		fprintf(stderr, "hotmapd: %s: '%s' is not a number from %lu to %lu\n", option, arg,
			min, max);
		return 1;
	}
	*out = (unsigned)n;
	return 0;
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

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "backend", required_argument, NULL, 'b' },
		{ "root", required_argument, NULL, 'r' },
		{ "workers", required_argument, NULL, 'w' },
		{ "max-connections-per-uid", required_argument, NULL, 'c' },
		{ "idle-timeout", required_argument, NULL, 'i' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct server_config cfg = {
		.policy = STORAGE_POLICY_AUTO,
		.max_per_uid = SERVER_MAX_PER_UID_DEFAULT,
	};
	char socket_path[PATH_MAX], err[512];
	struct server srv;
	bool foreground = false;
	int verbose = 0, ready_fd = -1, failed = 0, c, rc;

	while ((c = getopt_long(argc, argv, "s:fb:r:w:c:i:vhV", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			cfg.socket_path = optarg;
			break;
		case 'f':
			foreground = true;
			break;
		case 'b':
			if (strcmp(optarg, "auto") == 0)
				cfg.policy = STORAGE_POLICY_AUTO;
			else if (strcmp(optarg, "mmap") == 0)
				cfg.policy = STORAGE_POLICY_MMAP;
			else if (strcmp(optarg, "pread") == 0)
				cfg.policy = STORAGE_POLICY_PREAD;
			else {
				fprintf(stderr, "hotmapd: --backend: unknown backend '%s' (auto, mmap, pread)\n",
					optarg);
				failed = 1;
			}
			break;
		case 'r':
			rc = resolve_roots_add(&cfg.roots, optarg);
			if (rc < 0) {
				fprintf(stderr, "hotmapd: --root %s: %s\n", optarg,
					rc == -EINVAL ? "not an absolute path" : strerror(-rc));
				failed = 1;
			}
			break;
		case 'w':
			failed |= parse_number("--workers", optarg, 1, 256, &cfg.workers);
			break;
		case 'c':
			failed |= parse_number("--max-connections-per-uid", optarg, 1, 1000000,
					       &cfg.max_per_uid);
			break;
		case 'i':
			failed |= parse_number("--idle-timeout", optarg, 0, 86400 * 365,
					       &cfg.idle_timeout_s);
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			usage(stdout);
			resolve_roots_clear(&cfg.roots);
			return 0;
		case 'V':
			printf("hotmapd %s (libevent %s, protobuf-c %s)\n", PACKAGE_VERSION,
			       event_get_version(), protobuf_c_version());
			resolve_roots_clear(&cfg.roots);
			return 0;
		default:
			usage(stderr);
			resolve_roots_clear(&cfg.roots);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "hotmapd: unexpected argument '%s'\n", argv[optind]);
		failed = 1;
	}
	if (failed) {
		resolve_roots_clear(&cfg.roots);
		return 2;
	}
	if (cfg.socket_path == NULL) {
		rc = frame_default_socket(socket_path, sizeof socket_path);
		if (rc < 0) {
			fprintf(stderr, "hotmapd: no socket path: give --socket, or set HOTMAP_SOCKET "
				"or XDG_RUNTIME_DIR\n");
			resolve_roots_clear(&cfg.roots);
			return 2;
		}
		cfg.socket_path = socket_path;
	}
	log_set_level(verbose >= 2 ? LOG_DEBUG : verbose == 1 ? LOG_INFO : LOG_NOTICE);

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
		resolve_roots_clear(&cfg.roots);
		return 1;
	}
	if (!foreground) {
		rc = daemonize(&ready_fd);
		if (rc < 0) {
			log_err("cannot daemonize: %s", strerror(-rc));
			resolve_roots_clear(&cfg.roots);
			return 1;
		}
	}

	rc = server_init(&srv, &cfg, err, sizeof err);
	if (rc == 0)
		rc = server_listen(&srv, err, sizeof err);
	if (rc < 0) {
		log_err("%s", err);
		server_fini(&srv);
		return 1;
	}
	if (ready_fd >= 0) {
		detach_stdio();
		if (write(ready_fd, "R", 1) < 0)
			log_warn("cannot tell the parent that hotmapd is ready: %s", strerror(errno));
		close(ready_fd);
	}
	rc = server_run(&srv);
	server_fini(&srv);
	return rc < 0 ? 1 : 0;
}
