/* SPDX-License-Identifier: MIT */
/*
 * ctl_top.c - hotmapctl top: a live view of the daemon.
 *
 * Each refresh takes one look (hm_stats and hm_files_ways) and shows the
 * rates between it and the look before: requests, bytes, and for each of
 * the hottest files the ways its reads were served (copied from the
 * clients' mappings, pread on their own descriptors, through the daemon)
 * and the blocks of mappings populated.  On a terminal the view takes the
 * whole screen, keys are read raw and signals restore the terminal; off
 * one, each refresh is a plain block of lines.  The terminal itself is the
 * platform's (ctl_term.h: ctl_top_unix.c, ctl_top_win32.c).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hotmapctl/ctl.h"
#include "hotmapctl/ctl_term.h"
#include "hotmapctl/ctl_platform.h"

/* The request types top shows apart; every other requests_* key (hello,
 * ping, stats, files, ... and top's own) is summed into "other". */
static const char *const top_ops[] = { "open", "read", "stat", "close", "warm" };
#define TOP_OPS		(sizeof top_ops / sizeof top_ops[0])
#define TOP_FILES	10	/* the hottest files shown, at most */
#define TOP_PATH_COL	63	/* where the path starts in a file's line */

/* One look at the daemon: its counters and its cached files. */
struct top_sample {
	char version[32];
	uint64_t pid, uptime_us;
	uint64_t clients, files, mapped_bytes, bytes_served;
	uint64_t direct_reads, direct_bytes;	/* served in the clients */
	uint64_t requests[TOP_OPS + 1];	/* by top_ops, then all the others */
	/* latency_<op>_*: absent from daemons that do not time requests */
	bool has_latency[TOP_OPS];
	uint64_t latency_count[TOP_OPS], p50_ns[TOP_OPS], p99_ns[TOP_OPS];
	struct file_rows rows;		/* one per path, sorted by path */
	double taken_us;		/* ctl_now_us() when taken */
};

static bool
has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

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
	} else if (strcmp(key, "direct_reads") == 0) {
		s->direct_reads = value;
	} else if (strcmp(key, "direct_bytes") == 0) {
		s->direct_bytes = value;
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
 * both, so that the bytes and reads under that name are compared as a
 * whole from one look to the next. */
static void
top_merge_paths(struct file_rows *rows)
{
	size_t i, n = 0;

	if (rows->n < 2)
		return;
	qsort(rows->v, rows->n, sizeof *rows->v, compare_rows_by_path);
	for (i = 0; i < rows->n; i++) {
		if (n > 0 && strcmp(rows->v[n - 1].path, rows->v[i].path) == 0) {
			struct hm_read_ways *to = &rows->v[n - 1].ways;
			const struct hm_read_ways *w = &rows->v[i].ways;

			rows->v[n - 1].info.bytes += rows->v[i].info.bytes;
			rows->v[n - 1].info.direct_bytes += rows->v[i].info.direct_bytes;
			to->copy_reads += w->copy_reads;
			to->pread_reads += w->pread_reads;
			to->daemon_reads += w->daemon_reads;
			to->populated_blocks += w->populated_blocks;
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
	if (hm_files_ways(c, file_rows_collect, &s->rows) < 0 || s->rows.failed) {
		int err = s->rows.failed ? ENOMEM : errno;

		top_sample_free(s);
		return -err;
	}
	top_merge_paths(&s->rows);
	s->taken_us = ctl_now_us();
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

/* The ways a file's reads were served, as top shows them. */
enum { TOP_WAY_COPY, TOP_WAY_PREAD, TOP_WAY_DAEMON, TOP_WAY_BLOCKS, TOP_WAYS };

static void
top_ways(const struct hm_read_ways *w, uint64_t out[TOP_WAYS])
{
	out[TOP_WAY_COPY] = w->copy_reads;
	out[TOP_WAY_PREAD] = w->pread_reads;
	out[TOP_WAY_DAEMON] = w->daemon_reads;
	out[TOP_WAY_BLOCKS] = w->populated_blocks;
}

/* A count per second, in 8 columns: "12.5", "123456", "1234M". */
static const char *
top_rate(char *buf, size_t len, double v)
{
	if (v < 1e4)
		snprintf(buf, len, "%.1f", v);
	else if (v < 1e8)
		snprintf(buf, len, "%.0f", v);
	else
		snprintf(buf, len, "%.0fM", v / 1e6);
	return buf;
}

struct top_hot {
	const struct hm_file_info *info;
	uint64_t delta;		/* bytes read since the previous look */
	uint64_t ways[TOP_WAYS];	/* reads (blocks) by way since then */
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
	top_line(sc, "%12s %12s %8s %8s %8s %8s  %s", "READ/S", "BYTES", "COPY/S", "PREAD/S",
		 "DAEMON/S", "BLOCKS/S", "PATH");
	if (rows->n == 0) {
		top_line(sc, "%*s  %s", TOP_PATH_COL - 2, "", "(no files cached)");
		return;
	}
	hot = calloc(rows->n, sizeof *hot);
	if (hot == NULL) {
		top_line(sc, "%*s  %s", TOP_PATH_COL - 2, "", "(out of memory)");
		return;
	}
	for (i = 0; i < rows->n; i++) {
		const struct file_row *was = NULL;
		uint64_t now[TOP_WAYS], before[TOP_WAYS] = { 0 };
		size_t k;

		hot[i].info = &rows->v[i].info;
		if (prev == NULL)
			continue;
		if (prev->rows.n > 0)
			was = bsearch(&rows->v[i], prev->rows.v, prev->rows.n, sizeof *prev->rows.v,
				      compare_rows_by_path);
		/* new since the previous look: all its bytes were read since */
		/* bytes the daemon served and bytes clients read directly */
		hot[i].delta = was != NULL ?
			top_delta(rows->v[i].info.bytes + rows->v[i].info.direct_bytes,
				  was->info.bytes + was->info.direct_bytes) :
			rows->v[i].info.bytes + rows->v[i].info.direct_bytes;
		top_ways(&rows->v[i].ways, now);
		if (was != NULL)
			top_ways(&was->ways, before);
		for (k = 0; k < TOP_WAYS; k++)
			hot[i].ways[k] = top_delta(now[k], before[k]);
	}
	qsort(hot, rows->n, sizeof *hot, compare_hot);
	for (i = 0; i < show; i++) {
		const char *path = hot[i].info->path;
		char rate[32], bytes[32], ways[TOP_WAYS][16];
		size_t len = strlen(path), k;
		int room = sc->cols - TOP_PATH_COL;

		if (prev != NULL)
			top_bytes(rate, sizeof rate, (double)hot[i].delta / secs);
		else
			snprintf(rate, sizeof rate, "-");
		for (k = 0; k < TOP_WAYS; k++)
			if (prev != NULL)
				top_rate(ways[k], sizeof ways[k], (double)hot[i].ways[k] / secs);
			else
				snprintf(ways[k], sizeof ways[k], "-");
		top_bytes(bytes, sizeof bytes, (double)(hot[i].info->bytes + hot[i].info->direct_bytes));
		/* too long for the terminal: its end names the file */
		if (sc->tty && room > 3 && len > (size_t)room)
			top_line(sc, "%12s %12s %8s %8s %8s %8s  ...%s", rate, bytes, ways[0], ways[1],
				 ways[2], ways[3], path + len - (size_t)(room - 3));
		else
			top_line(sc, "%12s %12s %8s %8s %8s %8s  %s", rate, bytes, ways[0], ways[1],
				 ways[2], ways[3], path);
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

	if (platform_localtime_r(&t, &tm) == NULL ||
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
		top_line(sc, "requests/s %.1f   bytes/s %s   direct reads/s %.1f   direct bytes/s %s",
			 (double)total / secs,
			 top_bytes(a, sizeof a,
				   (double)top_delta(cur->bytes_served, prev->bytes_served) / secs),
			 (double)top_delta(cur->direct_reads, prev->direct_reads) / secs,
			 top_bytes(b, sizeof b,
				   (double)top_delta(cur->direct_bytes, prev->direct_bytes) / secs));
	} else {
		top_line(sc, "requests/s -   bytes/s -   direct reads/s -   direct bytes/s -");
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

struct top {
	hm_client *c;
	struct top_screen sc;
	struct top_sample samples[2];
	struct top_sample *prev, *cur;	/* the last frame's; prev NULL before the second look */
};

static void
top_screen_size(struct top *t)
{
	t->sc.rows = 24;
	t->sc.cols = 80;
	top_term_size(&t->sc.rows, &t->sc.cols);
}

/* Waits for deadline (a ctl_now_us() time): true then, false when told to
 * stop by q or a signal.  Redraws in between when the terminal asks. */
static bool
top_wait(struct top *t, double deadline)
{
	for (;;) {
		switch (top_term_wait(deadline)) {
		case TOP_TERM_TIME:
			return true;
		case TOP_TERM_STOP:
			return false;
		case TOP_TERM_REDRAW:
			top_screen_size(t);
			top_render(&t->sc, t->prev, t->cur, 0);
			break;
		}
	}
}

static bool
top_lost_daemon(int err)
{
	return err == ECONNRESET || err == EPIPE || err == ENOTCONN || err == ECONNABORTED ||
	       err == ESHUTDOWN;
}

/* A number of seconds, decimals allowed: 0.01 up to a day. */

/* Refreshes every interval seconds, iterations times (0: until told to
 * stop): the exit status. */
static int
top_run(struct top *t, double interval, unsigned long iterations)
{
	double deadline = ctl_now_us() + interval * 1e6;
	unsigned long done;
	int err;

	for (done = 0; iterations == 0 || done < iterations; done++) {
		struct top_sample *next = t->cur == &t->samples[0] ? &t->samples[1] : &t->samples[0];
		double now;

		if (!top_wait(t, deadline))
			break;
		/* the next refresh on the interval's grid, unless top fell
		 * behind (suspended, or a slow daemon) */
		now = ctl_now_us();
		deadline += interval * 1e6;
		if (deadline < now)
			deadline = now + interval * 1e6;
		if (t->prev != NULL)
			top_sample_free(t->prev);
		t->prev = NULL;
		err = top_sample_take(t->c, next);
		if (err < 0) {
			top_term_leave();
			if (top_lost_daemon(-err))
				fprintf(stderr, "hotmapctl: top: hotmapd went away (%s)\n",
					strerror(-err));
			else
				ctl_report("top", -err);
			return 1;
		}
		t->prev = t->cur;
		t->cur = next;
		top_render(&t->sc, t->prev, t->cur, (unsigned)done);
		if (ferror(stdout)) {
			top_term_leave();
			fprintf(stderr, "hotmapctl: top: write: %s\n", strerror(errno));
			return 1;
		}
	}
	return 0;
}

int
ctl_top(hm_client *c, const struct ctl_cmdline *cl)
{
	double interval = cl->given[TOP_INTERVAL] ? cl->opt[TOP_INTERVAL].seconds : 1.0;
	unsigned long iterations = cl->given[TOP_ITERATIONS] ? cl->opt[TOP_ITERATIONS].count : 0;
	struct top t = { .c = c };
	int err, rc;

	/* The first look gives the rates their start, and says early when
	 * the daemon refuses (stats need an administrator). */
	err = top_sample_take(t.c, &t.samples[0]);
	if (err < 0) {
		ctl_report("top", -err);
		return 1;
	}
	t.cur = &t.samples[0];

	t.sc.tty = top_term_start();
	if (t.sc.tty) {
		top_term_enter();
		top_screen_size(&t);
		top_render(&t.sc, NULL, t.cur, 0);
	}
	rc = top_run(&t, interval, iterations);
	top_term_leave();
	top_term_end();
	if (t.prev != NULL)
		top_sample_free(t.prev);
	top_sample_free(t.cur);
	return rc;
}
