/* SPDX-License-Identifier: MIT */
/*
 * ctl_cmds.c - hotmapctl's commands but top: their options, as the
 * command table in hotmapctl.c refers to them, and their handlers.
 *
 * A handler is given a connected client and a command line the parser
 * has checked against its options and arguments; it makes its requests
 * and leaves every format to ctl_output.c.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hotmapctl/ctl.h"
#include "hotmapctl/ctl_platform.h"
#include "proto/endpoint.h"
#include "proto/frame.h"
#include "proto/size.h"

#define READ_BUF (1u << 20)

/* Warms in steps so that a terminal can show progress; each step is one
 * request the daemon answers when that much is in memory. */
#define WARM_STEP (64ull << 20)

/* In hm_open's order of flags: auto (none), mmap, pread. */
const char *const ctl_backend_names[] = { "auto", "mmap", "pread", NULL };
const char *const ctl_sort_keys[] = { "bytes", "hits", "size", "resident", "idle", "path", NULL };

#define BACKEND_OPTION \
	{ "backend", 'b', CTL_CHOICE, NULL, "backend", ctl_backend_names, \
	  "auto (the daemon decides), mmap (fail if the file cannot be mapped) or pread" }
#define BY_PATH_OPTION \
	{ "by-path", 'p', CTL_FLAG, NULL, NULL, NULL, \
	  "let the daemon open the file, beneath one of its --root directories" }

const struct ctl_option ctl_ping_options[] = { { NULL } };
const struct ctl_option ctl_reload_options[] = { { NULL } };

const struct ctl_option ctl_stats_options[] = {
	[STATS_JSON] = { "json", 'j', CTL_FLAG, NULL, NULL, NULL, "as one JSON object" },
	[STATS_PROMETHEUS] = { "prometheus", 'P', CTL_FLAG, NULL, NULL, NULL,
			       "in Prometheus's text exposition format" },
	[STATS_RESET] = { "reset", 'r', CTL_FLAG, NULL, NULL, NULL,
			  "then zero the counters (the output shows the values before)" },
	{ NULL },
};

const struct ctl_option ctl_read_options[] = {
	[READ_BACKEND] = BACKEND_OPTION,
	[READ_BY_PATH] = BY_PATH_OPTION,
	{ NULL },
};

const struct ctl_option ctl_files_options[] = {
	[FILES_SORT] = { "sort", 's', CTL_CHOICE, NULL, "sort key", ctl_sort_keys,
			 "order by this (default bytes; idle: most recently used first)" },
	[FILES_JSON] = { "json", 'j', CTL_FLAG, NULL, NULL, NULL, "as a JSON array" },
	{ NULL },
};

const struct ctl_option ctl_clients_options[] = {
	[CLIENTS_JSON] = { "json", 'j', CTL_FLAG, NULL, NULL, NULL, "as a JSON array" },
	{ NULL },
};

const struct ctl_option ctl_evict_options[] = {
	[EVICT_ALL] = { "all", 'a', CTL_FLAG, NULL, NULL, NULL,
			"every cached file (instead of PATH...)" },
	{ NULL },
};

const struct ctl_option ctl_config_options[] = {
	[CONFIG_JSON] = { "json", 'j', CTL_FLAG, NULL, NULL, NULL, "as one JSON object" },
	{ NULL },
};

const struct ctl_option ctl_warm_options[] = {
	[WARM_BACKEND] = BACKEND_OPTION,
	[WARM_BY_PATH] = BY_PATH_OPTION,
	[WARM_QUIET] = { "quiet", 'q', CTL_FLAG, NULL, NULL, NULL, "print nothing but errors" },
	{ NULL },
};

const struct ctl_option ctl_top_options[] = {
	[TOP_INTERVAL] = { "interval", 'i', CTL_SECONDS, "SECONDS", "interval", NULL,
			   "seconds between refreshes, from 0.01 to 86400 (default 1)" },
	[TOP_ITERATIONS] = { "iterations", 'n', CTL_COUNT, "N", "iterations", NULL,
			     "stop after N refreshes" },
	{ NULL },
};

const struct ctl_option ctl_stop_options[] = {
	[STOP_TIMEOUT] = { "timeout", 't', CTL_SECONDS, "SECONDS", "timeout", NULL,
			   "how long to wait for the daemon to go (default 10)" },
	{ NULL },
};

/* hm_open's flags for --backend and --by-path. */
static int
open_flags(const struct ctl_cmdline *cl, int backend_opt, int by_path_opt)
{
	static const int backend_flags[] = { 0, HM_O_MMAP, HM_O_PREAD };
	int flags = 0;

	if (cl->given[backend_opt])
		flags |= backend_flags[cl->opt[backend_opt].choice];
	if (cl->given[by_path_opt])
		flags |= HM_O_PATH;
	return flags;
}

int
ctl_ping(hm_client *c, const struct ctl_cmdline *cl)
{
	struct hm_ping p;
	double t0, t1;

	(void)cl;
	t0 = ctl_now_us();
	if (hm_ping(c, &p) < 0) {
		ctl_report("ping", errno);
		return 1;
	}
	t1 = ctl_now_us();
	printf("hotmapd %s pid %" PRIu32 " up %.1f s: round trip %.0f us\n", p.server_version,
	       p.pid, (double)p.uptime_us / 1e6, t1 - t0);
	return 0;
}

int
ctl_stats_check(const struct ctl_cmdline *cl)
{
	if (cl->given[STATS_JSON] && cl->given[STATS_PROMETHEUS])
		return ctl_usage_error(cl->cmd, "--json or --prometheus, not both");
	return 0;
}

int
ctl_stats(hm_client *c, const struct ctl_cmdline *cl)
{
	enum stats_format format = cl->given[STATS_JSON]	? STATS_FORMAT_JSON
				   : cl->given[STATS_PROMETHEUS] ? STATS_FORMAT_PROMETHEUS
								 : STATS_HUMAN;
	struct stats_out *out = stats_out_new(format);
	int r;

	if (out == NULL) {
		ctl_report("stats", ENOMEM);
		return 1;
	}
	r = hm_stats_typed(c, cl->given[STATS_RESET], stats_out_stat, out);
	if (r < 0)
		ctl_report("stats", errno);
	if (stats_out_finish(out, r == 0) < 0 && r == 0) {
		ctl_report("stats", ENOMEM);
		r = -1;
	}
	return r < 0 ? 1 : 0;
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

/* Copies length bytes of f from offset (to its end: length UINT64_MAX
 * and to_eof) to standard output. */
static int
read_copy(hm_file *f, const char *path, uint64_t offset, uint64_t length, bool to_eof, char *buf)
{
	while (to_eof || length > 0) {
		size_t want = !to_eof && length < READ_BUF ? (size_t)length : READ_BUF;
		ssize_t n = hm_pread(f, buf, want, offset);
		int w;

		if (n < 0) {
			ctl_report(path, errno);
			return 1;
		}
		if (n == 0)
			break;
		w = write_all(STDOUT_FILENO, buf, (size_t)n);
		if (w < 0) {
			fprintf(stderr, "hotmapctl: write: %s\n", strerror(-w));
			return 1;
		}
		offset += (uint64_t)n;
		if (!to_eof)
			length -= (uint64_t)n;
	}
	return 0;
}

int
ctl_read(hm_client *c, const struct ctl_cmdline *cl)
{
	const char *path = cl->argv[0];
	uint64_t offset = cl->argc >= 2 ? cl->size[1] : 0;
	uint64_t length = cl->argc >= 3 ? cl->size[2] : UINT64_MAX;
	hm_file *f;
	char *buf;
	int rc;

	buf = malloc(READ_BUF);
	if (buf == NULL) {
		ctl_report("read", ENOMEM);
		return 1;
	}
	platform_binary_stdout();
	f = hm_open(c, path, open_flags(cl, READ_BACKEND, READ_BY_PATH));
	if (f == NULL) {
		ctl_report(path, errno);
		free(buf);
		return 1;
	}
	rc = read_copy(f, path, offset, length, cl->argc < 3, buf);
	hm_close(f);
	free(buf);
	return rc;
}

void
ctl_ways_copy(struct hm_read_ways *to, const struct hm_read_ways *ways)
{
	memset(to, 0, sizeof *to);
	memcpy(to, ways, ways->size < sizeof *to ? ways->size : sizeof *to);
	to->size = sizeof *to;
}

void
file_rows_collect(const struct hm_file_info *info, const struct hm_read_ways *ways, void *arg)
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
	ctl_ways_copy(&rows->v[rows->n].ways, ways);
	rows->v[rows->n].path = strdup(info->path);
	if (rows->v[rows->n].path == NULL) {
		rows->failed = true;
		return;
	}
	rows->v[rows->n].info.path = rows->v[rows->n].path;
	rows->n++;
}

void
file_rows_free(struct file_rows *rows)
{
	size_t i;

	for (i = 0; i < rows->n; i++)
		free(rows->v[i].path);
	free(rows->v);
	memset(rows, 0, sizeof *rows);
}

/* Largest first for numbers (the busiest files on top), A to Z for paths,
 * most recently used first for idle; by the key arg names
 * (platform_qsort_r: no global state). */
static int
compare_files(const void *pa, const void *pb, void *arg)
{
	const struct hm_file_info *a = &((const struct file_row *)pa)->info;
	const struct hm_file_info *b = &((const struct file_row *)pb)->info;
	const char *file_sort_key = arg;
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

int
ctl_files(hm_client *c, const struct ctl_cmdline *cl)
{
	struct file_rows rows = { 0 };

	if (hm_files_ways(c, file_rows_collect, &rows) < 0 || rows.failed) {
		ctl_report("files", rows.failed ? ENOMEM : errno);
		file_rows_free(&rows);
		return 1;
	}
	platform_qsort_r(rows.v, rows.n, sizeof *rows.v, compare_files,
		(void *)ctl_sort_keys[cl->given[FILES_SORT] ? cl->opt[FILES_SORT].choice : 0]);
	if (cl->given[FILES_JSON])
		files_print_json(&rows);
	else
		files_print_table(&rows);
	file_rows_free(&rows);
	return 0;
}

/* The clients, collected first: nothing is printed unless the daemon
 * answered in full. */
struct client_rows {
	struct hm_client_info *v;
	struct hm_read_ways *ways;	/* each client's */
	char (*names)[64];
	size_t n, cap;
	bool failed;
};

static void
client_collect(const struct hm_client_info *x, const struct hm_read_ways *ways, void *arg)
{
	struct client_rows *r = arg;

	if (r->failed)
		return;
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 64;
		struct hm_client_info *v = realloc(r->v, cap * sizeof *v);
		struct hm_read_ways *w = v != NULL ? realloc(r->ways, cap * sizeof *w) : NULL;
		char (*names)[64] = w != NULL ? realloc(r->names, cap * sizeof *names) : NULL;

		if (v != NULL)
			r->v = v;
		if (w != NULL)
			r->ways = w;
		if (names == NULL) {
			r->failed = true;
			return;
		}
		r->names = names;
		r->cap = cap;
	}
	r->v[r->n] = *x;
	ctl_ways_copy(&r->ways[r->n], ways);
	snprintf(r->names[r->n], sizeof r->names[r->n], "%s", x->name);
	r->v[r->n].name = r->names[r->n];
	r->n++;
}

static void
client_json(struct json *j, const struct hm_client_info *x, const struct hm_read_ways *w)
{
	json_open(j, '{', true);
	json_key(j, "pid");
	json_uint(j, x->pid);
	json_key(j, "uid");
	json_uint(j, x->uid);
	json_key(j, "name");
	json_string(j, x->name);
	json_key(j, "handles");
	json_uint(j, x->handles);
	json_key(j, "direct_grants");
	json_uint(j, x->direct_grants);
	json_key(j, "direct_reads");
	json_uint(j, x->direct_reads);
	json_key(j, "direct_bytes");
	json_uint(j, x->direct_bytes);
	json_key(j, "bytes_served");
	json_uint(j, x->bytes_served);
	json_key(j, "polling");
	json_bool(j, x->polling);
	json_key(j, "region_huge");
	json_bool(j, x->region_huge);
	json_key(j, "connected_ms");
	json_uint(j, x->connected_ms);
	ways_json(j, w);
	json_close(j);
}

int
ctl_clients(hm_client *c, const struct ctl_cmdline *cl)
{
	struct client_rows r = { 0 };
	struct json j;
	size_t i;

	if (hm_clients_ways(c, client_collect, &r) < 0 || r.failed) {
		ctl_report("clients", r.failed ? ENOMEM : errno);
		free(r.v);
		free(r.ways);
		free(r.names);
		return 1;
	}
	if (cl->given[CLIENTS_JSON]) {
		json_init(&j, stdout);
		json_open(&j, '[', false);
		for (i = 0; i < r.n; i++)
			client_json(&j, &r.v[i], &r.ways[i]);
		json_close(&j);
	} else {
		/* the ways reads went before the name (ctl_ways_columns) */
		printf("%8s %6s %7s %6s %12s %12s %12s %-4s %9s%s  %s\n", "PID", "UID", "HANDLES",
		       "DIRECT", "DREADS", "DBYTES", "BYTES", "MODE", "AGE_S", ctl_ways_header, "NAME");
		for (i = 0; i < r.n; i++) {
			const struct hm_client_info *x = &r.v[i];
			char ways[WAYS_COLUMNS_MAX];

			ctl_ways_columns(ways, sizeof ways, &r.ways[i]);
			printf("%8" PRIu32 " %6" PRIu32 " %7u %6u %12" PRIu64 " %12" PRIu64
			       " %12" PRIu64 " %-4s %9.1f%s  %s\n", x->pid, x->uid, x->handles,
			       x->direct_grants, x->direct_reads, x->direct_bytes, x->bytes_served,
			       x->polling ? "ring" : "-", (double)x->connected_ms / 1000.0, ways,
			       x->name);
		}
	}
	free(r.v);
	free(r.ways);
	free(r.names);
	return 0;
}

int
ctl_evict_check(const struct ctl_cmdline *cl)
{
	if (cl->given[EVICT_ALL] == (cl->argc > 0))
		return ctl_usage_error(cl->cmd, "give PATH... or --all");
	return 0;
}

static void
print_evicted(const char *what, const struct hm_evicted *ev)
{
	char size[SIZE_HUMAN_LEN];

	printf("%s: %u dropped (%s unmapped)", what, ev->files,
	       size_human(ev->mapped_bytes, size, sizeof size));
	if (ev->busy > 0)
		printf(", %u kept: open by a client", ev->busy);
	printf("\n");
}

int
ctl_evict(hm_client *c, const struct ctl_cmdline *cl)
{
	struct hm_evicted ev;
	int rc = 0, i;

	if (cl->given[EVICT_ALL]) {
		if (hm_evict(c, NULL, &ev) < 0) {
			ctl_report("evict", errno);
			return 1;
		}
		print_evicted("all cached files", &ev);
	}
	for (i = 0; i < cl->argc; i++) {
		if (hm_evict(c, cl->argv[i], &ev) < 0) {
			ctl_report(cl->argv[i], errno);
			rc = 1;
			continue;
		}
		print_evicted(cl->argv[i], &ev);
	}
	return rc;
}

int
ctl_config(hm_client *c, const struct ctl_cmdline *cl)
{
	struct config_out *o = config_out_new(cl->given[CONFIG_JSON]);
	char path[4096];

	if (o == NULL) {
		ctl_report("config", ENOMEM);
		return 1;
	}
	if (hm_config(c, config_out_item, o, path, sizeof path) < 0) {
		ctl_report("config", errno);
		config_out_finish(o, "", false);
		return 1;
	}
	config_out_finish(o, path, true);
	return 0;
}

static void
warm_progress(const char *path, uint64_t done, uint64_t size, bool final)
{
	int width = 30, fill = size > 0 ? (int)(done * (uint64_t)width / size) : width;

	fprintf(stderr, "\r%s [%.*s%*s] %3d%% %llu/%llu MiB%s", path, fill,
		"##############################", width - fill, "",
		size > 0 ? (int)(done * 100 / size) : 100, (unsigned long long)(done >> 20),
		(unsigned long long)(size >> 20), final ? "\n" : "");
}

/* Warms one file: 0, or 1 having said why. */
static int
warm_one(hm_client *c, const char *path, int flags, bool quiet, bool tty)
{
	struct hm_stat st;
	uint64_t done = 0;
	hm_file *f = hm_open(c, path, flags);
	int rc = 0;

	if (f == NULL || hm_stat(f, &st) < 0) {
		ctl_report(path, errno);
		if (f != NULL)
			hm_close(f);
		return 1;
	}
	while (done < st.size) {
		/* a network file in one warm: the daemon keeps a copy of it in
		 * memory only for a warm of all of it (network-copy-max) */
		ssize_t n = hm_warm(f, done, st.reason == HM_REASON_NETWORK_FS ? st.size : WARM_STEP);

		if (n < 0) {
			if (tty && !quiet)
				fputc('\n', stderr);
			ctl_report(path, errno);
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
			       st.backend == HM_BACKEND_MMAP ? "mapping populated" :
			       hm_stat(f, &st) == 0 && strstr(st.reason_text, "hotmapd's copy") != NULL ?
			       "hotmapd's copy in memory" : "page cache");
	}
	hm_close(f);
	return rc;
}

int
ctl_warm(hm_client *c, const struct ctl_cmdline *cl)
{
	int flags = open_flags(cl, WARM_BACKEND, WARM_BY_PATH), rc = 0, i;
	bool tty = isatty(STDERR_FILENO);

	for (i = 0; i < cl->argc; i++)
		if (warm_one(c, cl->argv[i], flags, cl->given[WARM_QUIET], tty) != 0)
			rc = 1;
	return rc;
}

int
ctl_stop(hm_client *c, const struct ctl_cmdline *cl)
{
	double timeout = cl->given[STOP_TIMEOUT] ? cl->opt[STOP_TIMEOUT].seconds : 10.0;
	const struct timespec pause = { 0, 20 * 1000 * 1000 };
	char path[ENDPOINT_MAX];
	struct hm_stopped st = { 0 };
	double deadline;
	int rc;

	if (cl->socket_path != NULL)
		snprintf(path, sizeof path, "%s", cl->socket_path);
	else if (frame_default_socket(path, sizeof path) < 0)
		path[0] = '\0';
	if (hm_stop(c, &st) < 0) {
		ctl_report("stop", errno);
		return 1;
	}
	if (st.socket_kept) {
		/* systemd listens on: nothing to wait for on the socket */
		printf("hotmapd pid %" PRIu32 " stopping; systemd keeps its socket, and the next "
		       "connection starts hotmapd again (systemctl stop hotmapd.socket stops "
		       "that)\n", st.pid);
		return 0;
	}
	/* Not the pid: in a container the daemon's pid names another process
	 * here, or none.  The socket is what clients see. */
	deadline = ctl_now_us() + timeout * 1e6;
	while (path[0] != '\0' && (rc = endpoint_listening(path)) != 0) {
		if (ctl_now_us() >= deadline) {
			if (rc > 0)
				fprintf(stderr, "hotmapctl: stop: hotmapd pid %" PRIu32 " still listens "
					"on %s after %g s\n", st.pid, path, timeout);
			else
				fprintf(stderr, "hotmapctl: stop: %s: %s\n", path, strerror(-rc));
			return 1;
		}
		nanosleep(&pause, NULL);
	}
	printf("hotmapd pid %" PRIu32 " stopped\n", st.pid);
	return 0;
}

static void
reload_line(enum hm_reload_line kind, const char *line, void *arg)
{
	(void)arg;
	if (kind == HM_RELOAD_ERROR)
		fprintf(stderr, "hotmapctl: reload: %s\n", line);
	else if (kind == HM_RELOAD_KEPT)
		printf("kept: %s\n", line);
	else
		printf("%s\n", line);
}

int
ctl_reload(hm_client *c, const struct ctl_cmdline *cl)
{
	char path[4096];

	(void)cl;
	if (hm_reload(c, reload_line, NULL, path, sizeof path) < 0) {
		if (errno == EINVAL)
			fprintf(stderr, "hotmapctl: reload failed: the daemon keeps the "
				"configuration in use\n");
		else
			ctl_report("reload", errno);
		return 1;
	}
	printf("configuration in use from %s\n", path[0] != '\0' ? path : "no file, built-in defaults");
	return 0;
}
