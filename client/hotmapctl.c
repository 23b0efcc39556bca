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
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "client/hotmap.h"
#include "client/hotmap_admin.h"

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
static int cmd_top(int argc, char **argv);
static int cmd_read(int argc, char **argv);
static int cmd_warm(int argc, char **argv);
static int cmd_files(int argc, char **argv);
static int cmd_evict(int argc, char **argv);
static int cmd_config(int argc, char **argv);

static const struct command commands[] = {
	{ "ping", "", "print the daemon's version, pid, uptime and round-trip time", cmd_ping },
	{ "stats", "[--json | --prometheus] [--reset]", "print the daemon's counters", cmd_stats },
	{ "top", "[--interval SECONDS] [--iterations N]",
	  "show requests, bytes, latencies and the hottest files, refreshed live", cmd_top },
	{ "read", "[--backend auto|mmap|pread] [--by-path] PATH [OFFSET [LENGTH]]",
	  "write bytes of PATH to standard output", cmd_read },
	{ "files", "[--sort bytes|hits|size|resident|idle|path] [--json]",
	  "list the daemon's cached files", cmd_files },
	{ "evict", "PATH... | --all", "drop cached files (and their mappings) that no handle reads",
	  cmd_evict },
	{ "config", "[--json]", "print the configuration in force, and where each value came from",
	  cmd_config },
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
		"workers", "clients_polling", "poll_us", "reads_inflight",
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

/*
 * Appends key="text" to the labels in buf, text escaped as the Prometheus
 * exposition format wants (\\, \", \n); a label that does not fit whole is
 * left out rather than cut.
 */
static void
append_label(char *buf, size_t size, const char *key, const char *text)
{
	size_t len = strlen(buf), n;
	char label[256];
	int w;

	w = snprintf(label, sizeof label, "%s%s=\"", len > 0 ? "," : "", key);
	if (w < 0 || (size_t)w >= sizeof label)
		return;
	n = (size_t)w;
	for (; *text != '\0' && n + 4 < sizeof label; text++) {
		if (*text == '"' || *text == '\\' || *text == '\n')
			label[n++] = '\\';
		label[n++] = *text == '\n' ? 'n' : *text;
	}
	if (*text != '\0' || len + n + 2 > size)
		return;
	label[n++] = '"';
	label[n] = '\0';
	memcpy(buf + len, label, n + 1);
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
			append_label(o->info, sizeof o->info, key, text);
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

static void
file_rows_free(struct file_rows *rows)
{
	size_t i;

	for (i = 0; i < rows->n; i++)
		free(rows->v[i].path);
	free(rows->v);
	memset(rows, 0, sizeof *rows);
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
		"mmap-failed", "too-large", "over-budget",
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
	file_rows_free(&rows);
	hm_disconnect(c);
	return rc;
}

/* --- top: a live view of the daemon ---------------------------------------- */

/* The request types top shows apart; every other requests_* key (hello,
 * ping, stats, files, ... and top's own) is summed into "other". */
static const char *const top_ops[] = { "open", "read", "stat", "close", "warm" };
#define TOP_OPS		(sizeof top_ops / sizeof top_ops[0])
#define TOP_FILES	10	/* the hottest files shown, at most */
#define TOP_PATH_COL	27	/* where the path starts in a file's line */

/* One look at the daemon: its counters and its cached files. */
struct top_sample {
	char version[32];
	uint64_t pid, uptime_us;
	uint64_t clients, files, mapped_bytes, bytes_served;
	uint64_t requests[TOP_OPS + 1];	/* by top_ops, then all the others */
	/* latency_<op>_*: absent from daemons that do not time requests */
	bool has_latency[TOP_OPS];
	uint64_t latency_count[TOP_OPS], p50_ns[TOP_OPS], p99_ns[TOP_OPS];
	struct file_rows rows;		/* one per path, sorted by path */
	double taken_us;		/* now_us() when taken */
};

static int
top_op_index(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < TOP_OPS; i++)
		if (strlen(top_ops[i]) == len && strncmp(name, top_ops[i], len) == 0)
			return (int)i;
	return -1;
}

static void
top_collect_stat(const char *key, uint64_t value, const char *text, void *arg)
{
	struct top_sample *s = arg;
	const char *rest, *sep;
	int op;

	if (strcmp(key, "version") == 0) {
		snprintf(s->version, sizeof s->version, "%s", text);
	} else if (strcmp(key, "pid") == 0) {
		s->pid = value;
	} else if (strcmp(key, "uptime_us") == 0) {
		s->uptime_us = value;
	} else if (strcmp(key, "clients") == 0) {
		s->clients = value;
	} else if (strcmp(key, "files") == 0) {
		s->files = value;
	} else if (strcmp(key, "mapped_bytes") == 0) {
		s->mapped_bytes = value;
	} else if (strcmp(key, "bytes_served") == 0) {
		s->bytes_served = value;
	} else if (has_prefix(key, "requests_")) {
		rest = key + strlen("requests_");
		op = top_op_index(rest, strlen(rest));
		s->requests[op >= 0 ? (size_t)op : TOP_OPS] += value;
	} else if (has_prefix(key, "latency_")) {
		rest = key + strlen("latency_");
		sep = strchr(rest, '_');
		if (sep == NULL || (op = top_op_index(rest, (size_t)(sep - rest))) < 0)
			return;
		if (strcmp(sep, "_count") == 0) {
			s->latency_count[op] = value;
		} else if (strcmp(sep, "_p50_ns") == 0) {
			s->p50_ns[op] = value;
			s->has_latency[op] = true;
		} else if (strcmp(sep, "_p99_ns") == 0) {
			s->p99_ns[op] = value;
		}
	}
}


static int
compare_rows_by_path(const void *pa, const void *pb)
{
	return strcmp(((const struct file_row *)pa)->path, ((const struct file_row *)pb)->path);
}

/* A replaced file still read and its successor share a path: one row for
 * both, so that the bytes read under that name are compared as a whole
 * from one look to the next. */
static void
top_merge_paths(struct file_rows *rows)
{
	size_t i, n = 0;

	if (rows->n < 2)
		return;
	qsort(rows->v, rows->n, sizeof *rows->v, compare_rows_by_path);
	for (i = 0; i < rows->n; i++) {
		if (n > 0 && strcmp(rows->v[n - 1].path, rows->v[i].path) == 0) {
			rows->v[n - 1].info.bytes += rows->v[i].info.bytes;
			free(rows->v[i].path);
			continue;
		}
		rows->v[n++] = rows->v[i];
	}
	rows->n = n;
}

static void
top_sample_free(struct top_sample *s)
{
	file_rows_free(&s->rows);
}

/* 0, or -errno (the daemon's message in hm_last_error, if it sent one). */
static int
top_sample_take(hm_client *c, struct top_sample *s)
{
	memset(s, 0, sizeof *s);
	if (hm_stats(c, top_collect_stat, s) < 0)
		return -errno;
	if (hm_files(c, collect_file, &s->rows) < 0 || s->rows.failed) {
		int err = s->rows.failed ? ENOMEM : errno;

		top_sample_free(s);
		return -err;
	}
	top_merge_paths(&s->rows);
	s->taken_us = now_us();
	return 0;
}

/* Counters fall back to 0 at stats --reset (and a file's at evict): what
 * was counted since is the best guess then. */
static uint64_t
top_delta(uint64_t now, uint64_t before)
{
	return now >= before ? now - before : now;
}

/* Seconds between two looks, by the daemon's clock when it moved on. */
static double
top_elapsed(const struct top_sample *prev, const struct top_sample *cur)
{
	double us = cur->uptime_us > prev->uptime_us ? (double)(cur->uptime_us - prev->uptime_us)
						     : cur->taken_us - prev->taken_us;

	return us > 1.0 ? us / 1e6 : 1e-6;
}

static const char *
top_bytes(char *buf, size_t len, double v)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	size_t u = 0;

	while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%.0f B", v);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

static const char *
top_duration(char *buf, size_t len, uint64_t us)
{
	uint64_t s = us / 1000000;
	unsigned h = (unsigned)(s % 86400 / 3600), m = (unsigned)(s % 3600 / 60),
		 sec = (unsigned)(s % 60);

	if (s >= 86400)
		snprintf(buf, len, "%" PRIu64 "d %02u:%02u:%02u", s / 86400, h, m, sec);
	else
		snprintf(buf, len, "%u:%02u:%02u", h, m, sec);
	return buf;
}

/* Where a frame goes: on a terminal, lines cut to its width and no more
 * of them than it has rows; elsewhere, plain lines. */
struct top_screen {
	bool tty;
	int rows, cols;
	int line;		/* lines of this frame so far */
};

static void __attribute__((format(printf, 2, 3)))
top_line(struct top_screen *sc, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (!sc->tty) {
		printf("%s\n", buf);
		sc->line++;
		return;
	}
	if (sc->line >= sc->rows)
		return;
	n = strlen(buf);
	if (n > (size_t)sc->cols) {
		n = (size_t)sc->cols;
		/* not inside a UTF-8 sequence */
		while (n > 0 && ((unsigned char)buf[n] & 0xc0) == 0x80)
			n--;
	}
	/* A newline before each line but the first, none after the last:
	 * one after the bottom row would scroll the screen. */
	printf("%s%.*s\033[K", sc->line > 0 ? "\n" : "", (int)n, buf);
	sc->line++;
}

/* An empty line between sections, on a terminal only: in a log, blank
 * lines separate the blocks. */
static void
top_gap(struct top_screen *sc)
{
	if (sc->tty)
		top_line(sc, "%s", "");
}

struct top_hot {
	const struct hm_file_info *info;
	uint64_t delta;		/* bytes read since the previous look */
};

static int
compare_hot(const void *pa, const void *pb)
{
	const struct top_hot *a = pa, *b = pb;

	if (a->delta != b->delta)
		return a->delta > b->delta ? -1 : 1;
	if (a->info->bytes != b->info->bytes)
		return a->info->bytes > b->info->bytes ? -1 : 1;
	return strcmp(a->info->path, b->info->path);
}

/* The hottest files: by bytes read since prev (NULL: by bytes read in
 * all), as many as fit. */
static void
top_render_files(struct top_screen *sc, const struct top_sample *prev,
		 const struct top_sample *cur, double secs)
{
	const struct file_rows *rows = &cur->rows;
	struct top_hot *hot;
	size_t i, show = rows->n < TOP_FILES ? rows->n : TOP_FILES;

	if (sc->tty) {
		int room = sc->rows - sc->line - 1;	/* below the heading */

		if (room < 1)
			return;
		if (show > (size_t)room)
			show = (size_t)room;
	}
	top_line(sc, "%12s %12s  %s", "READ/S", "BYTES", "PATH");
	if (rows->n == 0) {
		top_line(sc, "%12s %12s  %s", "", "", "(no files cached)");
		return;
	}
	hot = calloc(rows->n, sizeof *hot);
	if (hot == NULL) {
		top_line(sc, "%12s %12s  %s", "", "", "(out of memory)");
		return;
	}
	for (i = 0; i < rows->n; i++) {
		const struct file_row *was = NULL;

		hot[i].info = &rows->v[i].info;
		if (prev == NULL)
			continue;
		if (prev->rows.n > 0)
			was = bsearch(&rows->v[i], prev->rows.v, prev->rows.n, sizeof *prev->rows.v,
				      compare_rows_by_path);
		/* new since the previous look: all its bytes were read since */
		hot[i].delta = was != NULL ? top_delta(rows->v[i].info.bytes, was->info.bytes)
					   : rows->v[i].info.bytes;
	}
	qsort(hot, rows->n, sizeof *hot, compare_hot);
	for (i = 0; i < show; i++) {
		const char *path = hot[i].info->path;
		char rate[32], bytes[32];
		size_t len = strlen(path);
		int room = sc->cols - TOP_PATH_COL;

		if (prev != NULL)
			top_bytes(rate, sizeof rate, (double)hot[i].delta / secs);
		else
			snprintf(rate, sizeof rate, "-");
		top_bytes(bytes, sizeof bytes, (double)hot[i].info->bytes);
		/* too long for the terminal: its end names the file */
		if (sc->tty && room > 3 && len > (size_t)room)
			top_line(sc, "%12s %12s  ...%s", rate, bytes, path + len - (size_t)(room - 3));
		else
			top_line(sc, "%12s %12s  %s", rate, bytes, path);
	}
	free(hot);
}

/* One frame: rates over prev .. cur, or none yet (prev NULL). */
static void
top_render(struct top_screen *sc, const struct top_sample *prev, const struct top_sample *cur,
	   unsigned frame)
{
	double secs = prev != NULL ? top_elapsed(prev, cur) : 0.0;
	char up[32], when[32], a[32], b[32];
	uint64_t total = 0;
	struct tm tm;
	time_t t = time(NULL);
	size_t i;

	if (localtime_r(&t, &tm) == NULL ||
	    strftime(when, sizeof when, sc->tty ? "%H:%M:%S" : "%Y-%m-%d %H:%M:%S", &tm) == 0)
		snprintf(when, sizeof when, "?");
	if (sc->tty)
		printf("\033[H");
	else if (frame > 0)
		printf("\n");
	sc->line = 0;
	top_line(sc, "hotmapd %s pid %" PRIu64 " up %s at %s%s", cur->version, cur->pid,
		 top_duration(up, sizeof up, cur->uptime_us), when, sc->tty ? "   (q quits)" : "");
	top_line(sc, "clients %" PRIu64 "   files %" PRIu64 "   mapped %s", cur->clients, cur->files,
		 top_bytes(a, sizeof a, (double)cur->mapped_bytes));
	if (prev != NULL) {
		for (i = 0; i <= TOP_OPS; i++)
			total += top_delta(cur->requests[i], prev->requests[i]);
		top_line(sc, "requests/s %.1f   bytes/s %s", (double)total / secs,
			 top_bytes(a, sizeof a,
				   (double)top_delta(cur->bytes_served, prev->bytes_served) / secs));
	} else {
		top_line(sc, "requests/s -   bytes/s -");
	}
	top_gap(sc);
	top_line(sc, "%-8s %10s %10s %10s", "OP", "REQ/S", "P50_US", "P99_US");
	for (i = 0; i <= TOP_OPS; i++) {
		bool timed = i < TOP_OPS && cur->has_latency[i] && cur->latency_count[i] > 0;
		char rate[32];

		if (prev != NULL)
			snprintf(rate, sizeof rate, "%.1f",
				 (double)top_delta(cur->requests[i], prev->requests[i]) / secs);
		else
			snprintf(rate, sizeof rate, "-");
		if (timed) {
			snprintf(a, sizeof a, "%.1f", (double)cur->p50_ns[i] / 1000.0);
			snprintf(b, sizeof b, "%.1f", (double)cur->p99_ns[i] / 1000.0);
		}
		top_line(sc, "%-8s %10s %10s %10s", i < TOP_OPS ? top_ops[i] : "other", rate,
			 timed ? a : "-", timed ? b : "-");
	}
	top_gap(sc);
	top_render_files(sc, prev, cur, secs);
	if (sc->tty)
		printf("\033[J");
	fflush(stdout);
}

/*
 * The terminal.  Keys are read one at a time without echo (ICANON and
 * ECHO off), but ISIG stays on so that Ctrl-C and Ctrl-Z still make
 * signals.  The state is global for the signal handler's sake: the mode
 * must be restored however top ends.
 */
static struct {
	bool screen;		/* stdout is a terminal: full-screen redraws */
	bool keys;		/* stdin is one too, its mode saved in saved */
	volatile sig_atomic_t entered;	/* alternate screen and key mode in use */
	struct termios saved;
} top_term;

#define TOP_SCREEN_ENTER	"\033[?1049h\033[?25l\033[H\033[2J"
#define TOP_SCREEN_LEAVE	"\033[?25h\033[?1049l"

static volatile sig_atomic_t top_stop;		/* SIGINT, SIGTERM or SIGHUP came */
static volatile sig_atomic_t top_redraw;	/* SIGWINCH or SIGCONT */
static volatile sig_atomic_t top_suspend;	/* SIGTSTP */

static void
top_term_enter(void)
{
	if (!top_term.screen)
		return;
	if (top_term.keys) {
		struct termios raw = top_term.saved;

		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	}
	fputs(TOP_SCREEN_ENTER, stdout);
	fflush(stdout);
	top_term.entered = 1;
}

static void
top_term_leave(void)
{
	if (!top_term.entered)
		return;
	fputs(TOP_SCREEN_LEAVE, stdout);
	fflush(stdout);
	if (top_term.keys)
		tcsetattr(STDIN_FILENO, TCSANOW, &top_term.saved);
	top_term.entered = 0;
}

static void
top_on_signal(int sig)
{
	switch (sig) {
	case SIGWINCH:
	case SIGCONT:
		top_redraw = 1;
		break;
	case SIGTSTP:
		top_suspend = 1;
		break;
	default:
		if (top_stop != 0) {
			/* Asked twice: the daemon is not answering and the
			 * loop cannot see the first.  Async-signal-safe calls
			 * only. */
			static const char msg[] = "hotmapctl: top: interrupted\n";

			if (top_term.entered) {
				if (write(STDOUT_FILENO, TOP_SCREEN_LEAVE, sizeof TOP_SCREEN_LEAVE - 1) < 0) {
				}
				if (top_term.keys)
					tcsetattr(STDIN_FILENO, TCSANOW, &top_term.saved);
			}
			if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) {
			}
			_exit(1);
		}
		top_stop = sig;
		break;
	}
}

/* The first TOP_STOP_SIGNALS stop top; the others concern the screen. */
static const int top_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGCONT, SIGTSTP };
#define TOP_NSIGNALS		(sizeof top_signals / sizeof top_signals[0])
#define TOP_STOP_SIGNALS	3

struct top {
	hm_client *c;
	struct top_screen sc;
	struct top_sample samples[2];
	struct top_sample *prev, *cur;	/* the last frame's; prev NULL before the second look */
	bool watch_keys;
	sigset_t mask, orig_mask;	/* top_signals; the mask before */
	struct sigaction old[TOP_NSIGNALS];
};

static void
top_screen_size(struct top *t)
{
	struct winsize ws;

	t->sc.rows = 24;
	t->sc.cols = 80;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
		t->sc.rows = ws.ws_row;
		t->sc.cols = ws.ws_col;
	}
}

/* Ctrl-Z: give the terminal back, stop as SIGTSTP would have, and take
 * it again when continued. */
static void
top_stop_for_tstp(void)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL }, mine;

	top_term_leave();
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGTSTP, &dfl, &mine);
	raise(SIGTSTP);
	/* continued */
	sigaction(SIGTSTP, &mine, NULL);
	top_term_enter();
}

/* Waits for deadline (a now_us() time): true then, false when told to
 * stop by q or a signal.  Redraws in between when the terminal asks. */
static bool
top_wait(struct top *t, double deadline)
{
	for (;;) {
		struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
		struct timespec ts;
		char keys[64];
		double left;
		ssize_t r;
		int n;

		/* Signals are blocked from the check of their flags until
		 * ppoll, which lets them in: none slips between the two. */
		sigprocmask(SIG_BLOCK, &t->mask, NULL);
		if (top_stop != 0 || top_suspend || top_redraw) {
			sigprocmask(SIG_SETMASK, &t->orig_mask, NULL);
			if (top_stop != 0)
				return false;
			if (top_suspend) {
				top_suspend = 0;
				top_stop_for_tstp();
			}
			top_redraw = 0;
			top_screen_size(t);
			top_render(&t->sc, t->prev, t->cur, 0);
			continue;
		}
		left = deadline - now_us();
		if (left <= 0) {
			sigprocmask(SIG_SETMASK, &t->orig_mask, NULL);
			return true;
		}
		ts.tv_sec = (time_t)(left / 1e6);
		ts.tv_nsec = (long)((left - (double)ts.tv_sec * 1e6) * 1e3);
		n = ppoll(&pfd, t->watch_keys ? 1 : 0, &ts, &t->orig_mask);
		sigprocmask(SIG_SETMASK, &t->orig_mask, NULL);
		if (n <= 0 || !t->watch_keys)
			continue;
		if (pfd.revents & POLLIN) {
			r = read(STDIN_FILENO, keys, sizeof keys);
			if (r > 0) {
				if (memchr(keys, 'q', (size_t)r) != NULL ||
				    memchr(keys, 'Q', (size_t)r) != NULL)
					return false;
				continue;
			}
			if (r < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
		}
		/* end of input or a hung-up terminal: signals only, from now */
		t->watch_keys = false;
	}
}

static bool
top_lost_daemon(int err)
{
	return err == ECONNRESET || err == EPIPE || err == ENOTCONN || err == ECONNABORTED ||
	       err == ESHUTDOWN;
}

/* A number of seconds, decimals allowed: 0.01 up to a day. */
static int
parse_interval(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v < 0.01 || v > 86400.0)
		return -EINVAL;
	*out = v;
	return 0;
}

static int
cmd_top(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "interval", required_argument, NULL, 'i' },
		{ "iterations", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	struct top t = { .prev = NULL };
	struct sigaction sa = { .sa_handler = top_on_signal };
	unsigned long iterations = 0, done;
	double interval = 1.0, deadline;
	int opt, rc = 0, err;
	char *end;
	size_t i;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "+i:n:", opts, NULL)) != -1) {
		switch (opt) {
		case 'i':
			if (parse_interval(optarg, &interval) < 0) {
				fprintf(stderr, "hotmapctl: top: bad interval '%s' "
					"(seconds, from 0.01 to 86400)\n", optarg);
				return 2;
			}
			break;
		case 'n':
			errno = 0;
			iterations = strtoul(optarg, &end, 10);
			if (errno != 0 || end == optarg || *end != '\0' || optarg[0] == '-' ||
			    iterations == 0) {
				fprintf(stderr, "hotmapctl: top: bad iterations '%s' "
					"(a count of 1 or more)\n", optarg);
				return 2;
			}
			break;
		default:
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "hotmapctl: usage: top [--interval SECONDS] [--iterations N]\n");
		return 2;
	}
	t.c = connect_or_report();
	if (t.c == NULL)
		return 1;
	/* The first look gives the rates their start, and says early when
	 * the daemon refuses (stats need an administrator). */
	err = top_sample_take(t.c, &t.samples[0]);
	if (err < 0) {
		report("top", -err);
		hm_disconnect(t.c);
		return 1;
	}
	t.cur = &t.samples[0];

	top_term.screen = isatty(STDOUT_FILENO);
	top_term.keys = top_term.screen && isatty(STDIN_FILENO) &&
			tcgetattr(STDIN_FILENO, &top_term.saved) == 0;
	t.watch_keys = top_term.keys;
	t.sc.tty = top_term.screen;
	top_stop = top_redraw = top_suspend = 0;
	sigemptyset(&t.mask);
	for (i = 0; i < TOP_NSIGNALS; i++)
		sigaddset(&t.mask, top_signals[i]);
	sigprocmask(SIG_BLOCK, NULL, &t.orig_mask);
	/* Off a terminal only the signals that stop top are caught: Ctrl-Z
	 * and the rest keep their usual effect. */
	sa.sa_mask = t.mask;
	for (i = 0; i < TOP_NSIGNALS; i++)
		if (top_term.screen || i < TOP_STOP_SIGNALS)
			sigaction(top_signals[i], &sa, &t.old[i]);

	if (top_term.screen) {
		top_term_enter();
		top_screen_size(&t);
		top_render(&t.sc, NULL, t.cur, 0);
	}
	deadline = now_us() + interval * 1e6;
	for (done = 0; iterations == 0 || done < iterations; done++) {
		struct top_sample *next = t.cur == &t.samples[0] ? &t.samples[1] : &t.samples[0];
		double now;

		if (!top_wait(&t, deadline))
			break;
		/* the next refresh on the interval's grid, unless top fell
		 * behind (suspended, or a slow daemon) */
		now = now_us();
		deadline += interval * 1e6;
		if (deadline < now)
			deadline = now + interval * 1e6;
		if (t.prev != NULL)
			top_sample_free(t.prev);
		err = top_sample_take(t.c, next);
		if (err < 0) {
			t.prev = NULL;
			top_term_leave();
			if (top_lost_daemon(-err))
				fprintf(stderr, "hotmapctl: top: hotmapd went away (%s)\n",
					strerror(-err));
			else
				report("top", -err);
			rc = 1;
			break;
		}
		t.prev = t.cur;
		t.cur = next;
		top_render(&t.sc, t.prev, t.cur, (unsigned)done);
		if (ferror(stdout)) {
			top_term_leave();
			fprintf(stderr, "hotmapctl: top: write: %s\n", strerror(errno));
			rc = 1;
			break;
		}
	}
	top_term_leave();
	for (i = 0; i < TOP_NSIGNALS; i++)
		if (top_term.screen || i < TOP_STOP_SIGNALS)
			sigaction(top_signals[i], &t.old[i], NULL);
	if (t.prev != NULL)
		top_sample_free(t.prev);
	top_sample_free(t.cur);
	hm_disconnect(t.c);
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

struct config_out {
	bool json;
	unsigned n;
};

static void
print_config_item(const char *key, const char *value, const char *source, void *arg)
{
	struct config_out *o = arg;

	if (o->json) {
		/* the document opens with the first item: a failed request
		 * prints no half of one */
		printf("%s    {\"key\": ", o->n > 0 ? ",\n" : "{\n  \"items\": [\n");
		print_quoted(key);
		printf(", \"value\": ");
		print_quoted(value);
		printf(", \"source\": ");
		print_quoted(source);
		putchar('}');
	} else {
		printf("%-24s = %-24s # %s\n", key, value, source);
	}
	o->n++;
}

static int
cmd_config(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	struct config_out o = { 0 };
	char path[4096];
	hm_client *c;
	int opt;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "+j", opts, NULL)) != -1) {
		if (opt != 'j')
			return 2;
		o.json = true;
	}
	if (optind < argc) {
		fprintf(stderr, "hotmapctl: usage: config [--json]\n");
		return 2;
	}
	c = connect_or_report();
	if (c == NULL)
		return 1;
	if (hm_config(c, print_config_item, &o, path, sizeof path) < 0) {
		int e = errno;

		report("config", e);
		hm_disconnect(c);
		return 1;
	}
	if (o.json) {
		printf("%s\n  ],\n  \"file\": ", o.n == 0 ? "{\n  \"items\": [" : "");
		if (path[0] != '\0')
			print_quoted(path);
		else
			printf("null");
		printf("\n}\n");
	} else {
		printf("# file: %s\n", path[0] != '\0' ? path : "none (built-in defaults)");
	}
	hm_disconnect(c);
	return 0;
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
