/*
 * hotmapctl.c - the admin and test CLI of hotmapd, over libhotmap.
 *
 * Commands are a table: name, handler, one-line help.  Each handler parses
 * its own options and returns the exit status (0 ok, 1 failed, 2 usage).
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/hotmap.h"

#define READ_BUF (1u << 20)

static const char *socket_path;	/* NULL: as hm_connect(NULL) */

struct command {
	const char *name;
	const char *args;
	const char *help;
	int (*run)(int argc, char **argv);
};

static int cmd_ping(int argc, char **argv);
static int cmd_stats(int argc, char **argv);
static int cmd_read(int argc, char **argv);
static int cmd_warm(int argc, char **argv);
static int cmd_files(int argc, char **argv);
static int cmd_evict(int argc, char **argv);

static const struct command commands[] = {
	{ "ping", "", "print the daemon's version, pid, uptime and round-trip time", cmd_ping },
	{ "stats", "[--json | --prometheus] [--reset]", "print the daemon's counters", cmd_stats },
	{ "read", "[--backend auto|mmap|pread] [--by-path] PATH [OFFSET [LENGTH]]",
	  "write bytes of PATH to standard output", cmd_read },
	{ "files", "[--sort bytes|hits|size|resident|idle|path] [--json]",
	  "list the daemon's cached files", cmd_files },
	{ "evict", "PATH... | --all", "drop cached files (and their mappings) that no handle reads",
	  cmd_evict },
	{ "warm", "[--backend auto|mmap|pread] [--by-path] [--quiet] PATH...",
	  "bring files into the daemon's memory before they are read", cmd_warm },
};

static void
usage(FILE *f)
{
	size_t i;

	fprintf(f, "Usage: hotmapctl [--socket PATH] COMMAND [ARGS]\n"
		   "Talk to hotmapd.\n\n"
		   "  -s, --socket PATH   the daemon's socket (default: as libhotmap finds it)\n"
		   "  -h, --help          show this help and exit\n"
		   "  -V, --version       show the version and exit\n\n"
		   "Commands:\n");
	for (i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(f, "  %s %s\n      %s\n", commands[i].name, commands[i].args, commands[i].help);
	fprintf(f, "\nSee hotmapctl(1).\n");
}

/* Prints "hotmapctl: what: why", why being the daemon's message when it
 * sent one (it may already name what) or strerror. */
static void
report(const char *what, int err)
{
	const char *daemon_msg = hm_last_error();
	size_t len = strlen(what);

	if (daemon_msg[0] == '\0')
		fprintf(stderr, "hotmapctl: %s: %s\n", what, strerror(err));
	else if (strncmp(daemon_msg, what, len) == 0 && daemon_msg[len] == ':')
		fprintf(stderr, "hotmapctl: %s\n", daemon_msg);
	else
		fprintf(stderr, "hotmapctl: %s: %s\n", what, daemon_msg);
}

static hm_client *
connect_or_report(void)
{
	hm_client *c = hm_connect(socket_path);

	if (c == NULL) {
		int err = errno;

		if (socket_path == NULL && err == ENOENT && getenv("HOTMAP_SOCKET") == NULL &&
		    getenv("XDG_RUNTIME_DIR") == NULL && geteuid() != 0)
			fprintf(stderr, "hotmapctl: no socket: give --socket, or set HOTMAP_SOCKET\n");
		else
			report(socket_path != NULL ? socket_path : "connect", err);
	}
	return c;
}

static double
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int
cmd_ping(int argc, char **argv)
{
	struct hm_ping p;
	hm_client *c;
	double t0, t1;

	(void)argv;
	if (argc > 1) {
		fprintf(stderr, "hotmapctl: ping takes no arguments\n");
		return 2;
	}
	c = connect_or_report();
	if (c == NULL)
		return 1;
	t0 = now_us();
	if (hm_ping(c, &p) < 0) {
		report("ping", errno);
		hm_disconnect(c);
		return 1;
	}
	t1 = now_us();
	printf("hotmapd %s pid %" PRIu32 " up %.1f s: round trip %.0f us\n", p.server_version,
	       p.pid, (double)p.uptime_us / 1e6, t1 - t0);
	hm_disconnect(c);
	return 0;
}

enum stats_format { STATS_HUMAN, STATS_JSON, STATS_PROMETHEUS };

struct stats_out {
	enum stats_format format;
	unsigned n;		/* keys printed so far */
	char info[512];		/* Prometheus: the text keys, as labels */
};

static bool
has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool
has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Keys that are state now rather than totals since start: gauges.  The
 * latency percentiles (latency_<op>_p50_ns, ...) go up and down too. */
static bool
stat_is_gauge(const char *key)
{
	static const char *const gauges[] = {
		"pid", "uptime_us", "clients", "handles", "files", "mappings", "mapped_bytes",
		"workers",
	};
	size_t i;

	for (i = 0; i < sizeof gauges / sizeof gauges[0]; i++)
		if (strcmp(key, gauges[i]) == 0)
			return true;
	return has_prefix(key, "latency_") && has_suffix(key, "_ns");
}

/* JSON and label values: the daemon's texts are versions, but escape
 * anyway. */
static void
print_quoted(const char *t)
{
	putchar('"');
	for (; *t != '\0'; t++) {
		if (*t == '"' || *t == '\\')
			printf("\\%c", *t);
		else if ((unsigned char)*t < 0x20)
			printf("\\u%04x", (unsigned char)*t);
		else
			putchar(*t);
	}
	putchar('"');
}

static void
print_stat(const char *key, uint64_t value, const char *text, void *arg)
{
	struct stats_out *o = arg;

	switch (o->format) {
	case STATS_HUMAN:
		if (text[0] != '\0')
			printf("%-24s %s\n", key, text);
		else
			printf("%-24s %" PRIu64 "\n", key, value);
		break;
	case STATS_JSON:
		printf("%s\n  \"%s\": ", o->n == 0 ? "{" : ",", key);
		if (text[0] != '\0')
			print_quoted(text);
		else
			printf("%" PRIu64, value);
		break;
	case STATS_PROMETHEUS:
		if (text[0] != '\0') {
			/* one info metric carries the texts as labels */
			size_t len = strlen(o->info);

			snprintf(o->info + len, sizeof o->info - len, "%s%s=\"%s\"",
				 len > 0 ? "," : "", key, text);
			break;
		}
		/* counters end in _total, as the exposition format wants */
		if (stat_is_gauge(key))
			printf("# TYPE hotmap_%s gauge\nhotmap_%s %" PRIu64 "\n", key, key, value);
		else
			printf("# TYPE hotmap_%s_total counter\nhotmap_%s_total %" PRIu64 "\n", key,
			       key, value);
		break;
	}
	o->n++;
}

static int
cmd_stats(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "prometheus", no_argument, NULL, 'P' },
		{ "reset", no_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	struct stats_out out = { .format = STATS_HUMAN };
	bool reset = false;
	hm_client *c;
	int opt, rc = 0;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "+jPr", opts, NULL)) != -1) {
		switch (opt) {
		case 'r':
			reset = true;
			break;
		case 'j':
			out.format = STATS_JSON;
			break;
		case 'P':
			out.format = STATS_PROMETHEUS;
			break;
		default:
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "hotmapctl: usage: stats [--json | --prometheus] [--reset]\n");
		return 2;
	}
	c = connect_or_report();
	if (c == NULL)
		return 1;
	if ((reset ? hm_stats_reset(c, print_stat, &out) : hm_stats(c, print_stat, &out)) < 0) {
		report("stats", errno);
		rc = 1;
	} else if (out.format == STATS_JSON) {
		printf("%s}\n", out.n == 0 ? "{\n" : "\n");
	} else if (out.format == STATS_PROMETHEUS && out.info[0] != '\0') {
		printf("# TYPE hotmap_info gauge\nhotmap_info{%s} 1\n", out.info);
	}
	hm_disconnect(c);
	return rc;
}

/* --backend NAME of a command: sets the matching hm_open flag. */
static int
parse_backend(const char *cmd, const char *name, int *flags)
{
	*flags &= ~(HM_O_MMAP | HM_O_PREAD);
	if (strcmp(name, "mmap") == 0)
		*flags |= HM_O_MMAP;
	else if (strcmp(name, "pread") == 0)
		*flags |= HM_O_PREAD;
	else if (strcmp(name, "auto") != 0) {
		fprintf(stderr, "hotmapctl: %s: unknown backend '%s' (auto, mmap, pread)\n", cmd, name);
		return -EINVAL;
	}
	return 0;
}

/* A byte count: decimal, 0x hex, or with a K, M, G or T suffix (powers of
 * 1024). */
static int
parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (s[0] == '-' || s[0] == '\0')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0)
		return -errno;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	}
	if (*end != '\0')
		return -EINVAL;
	if (shift > 0 && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

static int
write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int
cmd_read(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "by-path", no_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t offset = 0, length = UINT64_MAX;
	bool to_eof = true;
	int flags = 0, opt, rc = 0;
	const char *path;
	hm_client *c;
	hm_file *f;
	char *buf;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "+b:p", opts, NULL)) != -1) {
		switch (opt) {
		case 'b':
			if (parse_backend("read", optarg, &flags) < 0)
				return 2;
			break;
		case 'p':
			flags |= HM_O_PATH;
			break;
		default:
			return 2;
		}
	}
	if (argc - optind < 1 || argc - optind > 3) {
		fprintf(stderr, "hotmapctl: usage: read [--backend B] [--by-path] PATH [OFFSET [LENGTH]]\n");
		return 2;
	}
	path = argv[optind];
	if (argc - optind >= 2 && parse_size(argv[optind + 1], &offset) < 0) {
		fprintf(stderr, "hotmapctl: read: bad offset '%s'\n", argv[optind + 1]);
		return 2;
	}
	if (argc - optind == 3) {
		if (parse_size(argv[optind + 2], &length) < 0) {
			fprintf(stderr, "hotmapctl: read: bad length '%s'\n", argv[optind + 2]);
			return 2;
		}
		to_eof = false;
	}

	buf = malloc(READ_BUF);
	if (buf == NULL) {
		report("read", ENOMEM);
		return 1;
	}
	c = connect_or_report();
	if (c == NULL) {
		free(buf);
		return 1;
	}
	f = hm_open(c, path, flags);
	if (f == NULL) {
		report(path, errno);
		rc = 1;
		goto out;
	}
	while (to_eof || length > 0) {
		size_t want = !to_eof && length < READ_BUF ? (size_t)length : READ_BUF;
		ssize_t n = hm_pread(f, buf, want, offset);
		int w;

		if (n < 0) {
			report(path, errno);
			rc = 1;
			break;
		}
		if (n == 0)
			break;
		w = write_all(STDOUT_FILENO, buf, (size_t)n);
		if (w < 0) {
			fprintf(stderr, "hotmapctl: write: %s\n", strerror(-w));
			rc = 1;
			break;
		}
		offset += (uint64_t)n;
		if (!to_eof)
			length -= (uint64_t)n;
	}
	hm_close(f);
out:
	hm_disconnect(c);
	free(buf);
	return rc;
}

struct file_row {
	char *path;
	struct hm_file_info info;
};

struct file_rows {
	struct file_row *v;
	size_t n, cap;
	bool failed;
};

static void
collect_file(const struct hm_file_info *info, void *arg)
{
	struct file_rows *rows = arg;

	if (rows->failed)
		return;
	if (rows->n == rows->cap) {
		size_t cap = rows->cap == 0 ? 64 : rows->cap * 2;
		struct file_row *v = realloc(rows->v, cap * sizeof *v);

		if (v == NULL) {
			rows->failed = true;
			return;
		}
		rows->v = v;
		rows->cap = cap;
	}
	rows->v[rows->n].info = *info;
	rows->v[rows->n].path = strdup(info->path);
	if (rows->v[rows->n].path == NULL) {
		rows->failed = true;
		return;
	}
	rows->v[rows->n].info.path = rows->v[rows->n].path;
	rows->n++;
}

static const char *file_sort_key;

/* Largest first for numbers (the busiest files on top), A to Z for paths,
 * most recently used first for idle. */
static int
compare_files(const void *pa, const void *pb)
{
	const struct hm_file_info *a = &((const struct file_row *)pa)->info;
	const struct hm_file_info *b = &((const struct file_row *)pb)->info;
	uint64_t x, y;

	if (strcmp(file_sort_key, "path") == 0)
		return strcmp(a->path, b->path);
	if (strcmp(file_sort_key, "hits") == 0)
		x = a->hits, y = b->hits;
	else if (strcmp(file_sort_key, "size") == 0)
		x = a->size, y = b->size;
	else if (strcmp(file_sort_key, "resident") == 0)
		x = (uint64_t)(a->resident_pct + 1), y = (uint64_t)(b->resident_pct + 1);
	else if (strcmp(file_sort_key, "idle") == 0)
		x = b->idle_ms, y = a->idle_ms;
	else
		x = a->bytes, y = b->bytes;
	return x > y ? -1 : x < y ? 1 : strcmp(a->path, b->path);
}

static const char *
reason_name(int reason)
{
	static const char *const names[] = {
		"local-file", "forced", "not-regular", "empty", "network-fs", "pseudo-fs",
		"mmap-failed", "too-large",
	};

	return reason >= 0 && (size_t)reason < sizeof names / sizeof names[0] ? names[reason] : "unknown";
}

static void
print_file_json(const struct hm_file_info *f, bool first)
{
	printf("%s\n  {\"path\": ", first ? "" : ",");
	print_quoted(f->path);
	printf(", \"size\": %" PRIu64 ", \"backend\": \"%s\", \"reason\": \"%s\", "
	       "\"handles\": %u, \"stale\": %s, \"hits\": %" PRIu64 ", \"bytes\": %" PRIu64
	       ", \"idle_ms\": %" PRIu64 ", \"resident_pct\": %d}",
	       f->size, f->backend == HM_BACKEND_MMAP ? "mmap" : "pread", reason_name(f->reason),
	       f->handles, f->stale ? "true" : "false", f->hits, f->bytes, f->idle_ms,
	       f->resident_pct);
}

static int
cmd_files(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "sort", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const keys[] = { "bytes", "hits", "size", "resident", "idle", "path" };
	struct file_rows rows = { 0 };
	bool json = false, known;
	hm_client *c;
	size_t i;
	int opt, rc = 0;

	file_sort_key = "bytes";
	optind = 0;
	while ((opt = getopt_long(argc, argv, "+s:j", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			known = false;
			for (i = 0; i < sizeof keys / sizeof keys[0]; i++)
				known |= strcmp(optarg, keys[i]) == 0;
			if (!known) {
				fprintf(stderr, "hotmapctl: files: unknown sort key '%s' "
					"(bytes, hits, size, resident, idle, path)\n", optarg);
				return 2;
			}
			file_sort_key = optarg;
			break;
		case 'j':
			json = true;
			break;
		default:
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "hotmapctl: usage: files [--sort KEY] [--json]\n");
		return 2;
	}
	c = connect_or_report();
	if (c == NULL)
		return 1;
	if (hm_files(c, collect_file, &rows) < 0 || rows.failed) {
		report("files", rows.failed ? ENOMEM : errno);
		rc = 1;
		goto out;
	}
	qsort(rows.v, rows.n, sizeof *rows.v, compare_files);
	if (json) {
		printf("[");
		for (i = 0; i < rows.n; i++)
			print_file_json(&rows.v[i].info, i == 0);
		printf("%s]\n", rows.n > 0 ? "\n" : "");
		goto out;
	}
	printf("%12s %-6s %-12s %7s %8s %9s %12s %9s  %s\n", "SIZE", "BACKEND", "REASON",
	       "HANDLES", "RESIDENT", "HITS", "BYTES", "IDLE_S", "PATH");
	for (i = 0; i < rows.n; i++) {
		const struct hm_file_info *f = &rows.v[i].info;
		char resident[16];

		if (f->resident_pct < 0)
			snprintf(resident, sizeof resident, "-");
		else
			snprintf(resident, sizeof resident, "%d%%", f->resident_pct);
		printf("%12" PRIu64 " %-6s %-12s %7u %8s %9" PRIu64 " %12" PRIu64 " %9.1f  %s%s\n",
		       f->size, f->backend == HM_BACKEND_MMAP ? "mmap" : "pread",
		       reason_name(f->reason), f->handles, resident, f->hits, f->bytes,
		       (double)f->idle_ms / 1000.0, f->path, f->stale ? " (stale)" : "");
	}
out:
	for (i = 0; i < rows.n; i++)
		free(rows.v[i].path);
	free(rows.v);
	hm_disconnect(c);
	return rc;
}

static void
print_evicted(const char *what, const struct hm_evicted *ev)
{
	printf("%s: %u dropped (%.1f MiB unmapped)", what, ev->files,
	       (double)ev->mapped_bytes / 1048576.0);
	if (ev->busy > 0)
		printf(", %u kept: open by a client", ev->busy);
	printf("\n");
}

static int
cmd_evict(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ NULL, 0, NULL, 0 },
	};
	struct hm_evicted ev;
	bool all = false;
	hm_client *c;
	int opt, rc = 0, i;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "+a", opts, NULL)) != -1) {
		if (opt != 'a')
			return 2;
		all = true;
	}
	if (all == (optind < argc)) {
		fprintf(stderr, "hotmapctl: usage: evict PATH... | evict --all\n");
		return 2;
	}
	c = connect_or_report();
	if (c == NULL)
		return 1;
	if (all) {
		if (hm_evict(c, NULL, &ev) < 0) {
			report("evict", errno);
			rc = 1;
		} else {
			print_evicted("all cached files", &ev);
		}
	}
	for (i = optind; i < argc; i++) {
		if (hm_evict(c, argv[i], &ev) < 0) {
			report(argv[i], errno);
			rc = 1;
			continue;
		}
		print_evicted(argv[i], &ev);
	}
	hm_disconnect(c);
	return rc;
}

/* Warms in steps so that a terminal can show progress; each step is one
 * request the daemon answers when that much is in memory. */
#define WARM_STEP (64ull << 20)

static void
warm_progress(const char *path, uint64_t done, uint64_t size, bool final)
{
	int width = 30, fill = size > 0 ? (int)(done * (uint64_t)width / size) : width;

	fprintf(stderr, "\r%s [%.*s%*s] %3d%% %llu/%llu MiB%s", path, fill,
		"##############################", width - fill, "",
		size > 0 ? (int)(done * 100 / size) : 100, (unsigned long long)(done >> 20),
		(unsigned long long)(size >> 20), final ? "\n" : "");
}

static int
cmd_warm(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "by-path", no_argument, NULL, 'p' },
		{ "quiet", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 },
	};
	bool quiet = false, tty = isatty(STDERR_FILENO);
	int flags = 0, opt, rc = 0, i;
	hm_client *c;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "+b:pq", opts, NULL)) != -1) {
		switch (opt) {
		case 'b':
			if (parse_backend("warm", optarg, &flags) < 0)
				return 2;
			break;
		case 'p':
			flags |= HM_O_PATH;
			break;
		case 'q':
			quiet = true;
			break;
		default:
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "hotmapctl: usage: warm [--backend B] [--by-path] [--quiet] PATH...\n");
		return 2;
	}
	c = connect_or_report();
	if (c == NULL)
		return 1;
	for (i = optind; i < argc; i++) {
		const char *path = argv[i];
		struct hm_stat st;
		uint64_t done = 0;
		hm_file *f = hm_open(c, path, flags);

		if (f == NULL || hm_stat(f, &st) < 0) {
			report(path, errno);
			if (f != NULL)
				hm_close(f);
			rc = 1;
			continue;
		}
		while (done < st.size) {
			ssize_t n = hm_warm(f, done, WARM_STEP);

			if (n < 0) {
				if (tty && !quiet)
					fputc('\n', stderr);
				report(path, errno);
				rc = 1;
				break;
			}
			if (n == 0)
				break;	/* the file shrank */
			done += (uint64_t)n;
			if (tty && !quiet)
				warm_progress(path, done, st.size, false);
		}
		if (!quiet && (rc == 0 || done > 0)) {
			if (tty)
				warm_progress(path, done, st.size, true);
			else
				printf("%s: %llu bytes warm (%s)\n", path, (unsigned long long)done,
				       st.backend == HM_BACKEND_MMAP ? "mapping populated" : "page cache");
		}
		hm_close(f);
	}
	hm_disconnect(c);
	return rc;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	size_t i;
	int opt;

	while ((opt = getopt_long(argc, argv, "+s:hV", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			socket_path = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("hotmapctl %s (libhotmap %s)\n", PACKAGE_VERSION, hm_version());
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	for (i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		char name[64];

		if (strcmp(argv[optind], commands[i].name) != 0)
			continue;
		/* getopt's own messages then start with "hotmapctl read:" */
		snprintf(name, sizeof name, "hotmapctl %s", commands[i].name);
		argv[optind] = name;
		return commands[i].run(argc - optind, argv + optind);
	}
	fprintf(stderr, "hotmapctl: unknown command '%s' (try --help)\n", argv[optind]);
	return 2;
}
