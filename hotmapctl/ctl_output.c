/* SPDX-License-Identifier: MIT */
/*
 * ctl_output.c - hotmapctl's output formats: the daemon's counters as
 * "key value" lines, JSON or Prometheus text; its files as a table or
 * JSON; its configuration as "key = value # source" lines or JSON.
 *
 * All JSON goes through the one emitter (ctl_json.c), and JSON documents
 * are built in memory and printed only once the daemon has answered in
 * full: a failed request prints no half of one.
 */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hotmapctl/ctl.h"
#include "proto/vocab.h"

/* --- the daemon's counters ------------------------------------------------------ */

/*
 * Prometheus's text format, as its conventions want it (and as
 * `promtool check metrics` checks, lint included): every family has HELP
 * and TYPE; names end in the base unit (seconds, bytes) and counters in
 * _total, once; the keys of one kind told apart by a suffix become one
 * family with a label, so that a query can sum them:
 *
 *   requests_<type>      hotmap_requests_total{type="<type>"}
 *   errors_<errno>       hotmap_errors_total{errno="<errno>"}
 *   opens_<reason>       hotmap_opens_total{reason="<reason>"}
 *   bytes_mmap, _pread   hotmap_storage_read_bytes_total{backend="mmap"|"pread"}
 *   direct_reads_copy, _pread
 *                        hotmap_direct_reads_by_way_total{way="copy"|"pread"}
 *                        (not hotmap_direct_reads_total, which counts them all)
 *   latency_<op>_*       hotmap_request_duration_seconds{op="<op>"}, a summary
 *
 * The latencies are a summary, not a histogram: the daemon's histograms
 * have 592 buckets per operation, too many series to export, and merging
 * them into a few coarse buckets would lose the 1/16 bound its
 * percentiles keep.  A summary cannot be summed over hosts; its _sum and
 * _count can, for the mean.  Every other key keeps its name, with
 * _us or _ns turned into _seconds and the value scaled.  The text keys
 * (versions) are labels of hotmap_info.
 *
 * The families are printed whole, in the order their first key came:
 * the format wants a family's lines together, and this way does not
 * depend on the daemon's order.
 */
struct prom_rule {
	const char *key;	/* the key, or with a trailing '_' its prefix */
	const char *family;	/* after hotmap_ */
	const char *label;	/* takes the rest of the key (a prefix), or NULL */
	const char *value;	/* the label's value for an exact key */
};

static const struct prom_rule prom_rules[] = {
	{ "errors_replied", "error_replies_total", NULL, NULL },
	{ "bytes_served", "served_bytes_total", NULL, NULL },
	{ "bytes_shm", "served_shm_bytes_total", NULL, NULL },
	{ "bytes_mmap", "storage_read_bytes_total", "backend", "mmap" },
	{ "bytes_pread", "storage_read_bytes_total", "backend", "pread" },
	{ "direct_reads_copy", "direct_reads_by_way_total", "way", "copy" },
	{ "direct_reads_pread", "direct_reads_by_way_total", "way", "pread" },
	{ "requests_", "requests_total", "type", NULL },
	{ "errors_", "errors_total", "errno", NULL },
	{ "opens_", "opens_total", "reason", NULL },
};

struct prom_metric {
	char family[80];	/* without hotmap_ */
	char sample[96];	/* the family, or with _sum or _count */
	char labels[96];	/* name="value",...; "" for none */
	const char *type;
	uint64_t value;
	uint64_t scale;		/* value / scale is in the base unit */
	bool nan_if_empty;	/* a quantile: NaN while its _count is 0 */
	bool is_count;		/* a summary's _count */
	char *help;
};

struct stats_out {
	enum stats_format format;
	struct ctl_buffer buf;
	struct json json;
	char info[512];		/* Prometheus: the text keys, as labels */
	struct prom_metric *m;
	size_t n, cap;
	bool failed;		/* out of memory: print nothing */
};

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

static bool
ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* latency_<op>_count, _sum_ns, _p<digits>_ns: a summary's sample.
 * false for any other key. */
static bool
prom_map_latency(const char *key, struct prom_metric *m)
{
	const char *op = key + strlen("latency_"), *end, *p;
	char quantile[16] = "", opname[32];

	if (strncmp(key, "latency_", strlen("latency_")) != 0)
		return false;
	end = strchr(op, '_');
	if (end == NULL || end == op || (size_t)(end - op) >= sizeof opname)
		return false;
	snprintf(opname, sizeof opname, "%.*s", (int)(end - op), op);
	if (strcmp(end, "_count") == 0) {
		snprintf(m->sample, sizeof m->sample, "request_duration_seconds_count");
		m->is_count = true;
	} else if (strcmp(end, "_sum_ns") == 0) {
		snprintf(m->sample, sizeof m->sample, "request_duration_seconds_sum");
		m->scale = 1000000000u;
	} else {
		/* _p99_ns is quantile 0.99; _p999_ns 0.999 */
		if (end[1] != 'p')
			return false;
		for (p = end + 2; *p >= '0' && *p <= '9'; p++)
			;
		if (p == end + 2 || p - (end + 2) > 8 || strcmp(p, "_ns") != 0)
			return false;
		snprintf(quantile, sizeof quantile, "0.%.*s", (int)(p - (end + 2)), end + 2);
		while (ends_with(quantile, "0") && !ends_with(quantile, ".0"))
			quantile[strlen(quantile) - 1] = '\0';
		m->scale = 1000000000u;
		m->nan_if_empty = true;
	}
	snprintf(m->family, sizeof m->family, "request_duration_seconds");
	if (m->sample[0] == '\0')
		snprintf(m->sample, sizeof m->sample, "%s", m->family);
	m->type = "summary";
	append_label(m->labels, sizeof m->labels, "op", opname);
	if (quantile[0] != '\0')
		append_label(m->labels, sizeof m->labels, "quantile", quantile);
	return true;
}

/* The family, sample name, labels and unit of one numeric key. */
static void
prom_map(const struct hm_stat_entry *e, struct prom_metric *m)
{
	size_t i, n;

	m->scale = 1;
	m->value = e->value;
	if (prom_map_latency(e->key, m))
		return;
	for (i = 0; i < sizeof prom_rules / sizeof prom_rules[0]; i++) {
		const struct prom_rule *r = &prom_rules[i];

		n = strlen(r->key);
		if (r->key[n - 1] == '_' ? strncmp(e->key, r->key, n) != 0 || e->key[n] == '\0'
					 : strcmp(e->key, r->key) != 0)
			continue;
		snprintf(m->family, sizeof m->family, "%s", r->family);
		snprintf(m->sample, sizeof m->sample, "%s", r->family);
		m->type = "counter";
		if (r->label != NULL)
			append_label(m->labels, sizeof m->labels, r->label,
				     r->value != NULL ? r->value : e->key + n);
		return;
	}
	/* any other key: its own name, in base units */
	n = strlen(e->key);
	if (ends_with(e->key, "_us") || ends_with(e->key, "_ns")) {
		m->scale = e->key[n - 2] == 'u' ? 1000000u : 1000000000u;
		snprintf(m->family, sizeof m->family, "%.*s_seconds", (int)(n - 3), e->key);
	} else {
		snprintf(m->family, sizeof m->family, "%s", e->key);
	}
	switch (e->kind) {
	case HM_STAT_COUNTER:
		m->type = "counter";
		if (!ends_with(m->family, "_total") && strlen(m->family) + 7 <= sizeof m->family)
			strcat(m->family, "_total");
		break;
	case HM_STAT_GAUGE:
		m->type = "gauge";
		break;
	default:
		m->type = "untyped";	/* a daemon too old to say */
		break;
	}
	snprintf(m->sample, sizeof m->sample, "%s", m->family);
}

/* A metric name holds [a-zA-Z0-9_:]: any other byte of a key becomes _. */
static void
prom_name_clean(char *name)
{
	for (; *name != '\0'; name++)
		if (!((*name >= 'a' && *name <= 'z') || (*name >= 'A' && *name <= 'Z') ||
		      (*name >= '0' && *name <= '9') || *name == '_'))
			*name = '_';
}

static void
prom_add(struct stats_out *o, const struct hm_stat_entry *e)
{
	struct prom_metric *m;

	if (o->failed)
		return;
	if (o->n == o->cap) {
		size_t cap = o->cap == 0 ? 128 : o->cap * 2;
		struct prom_metric *v = realloc(o->m, cap * sizeof *v);

		if (v == NULL) {
			o->failed = true;
			return;
		}
		o->m = v;
		o->cap = cap;
	}
	m = &o->m[o->n];
	memset(m, 0, sizeof *m);
	prom_map(e, m);
	prom_name_clean(m->family);
	prom_name_clean(m->sample);
	if (e->help != NULL && e->help[0] != '\0')
		m->help = strdup(e->help);
	else if (asprintf(&m->help, "hotmapd's %s (no description from the daemon).", e->key) < 0)
		m->help = NULL;
	if (m->help == NULL) {
		o->failed = true;
		return;
	}
	o->n++;
}

/* HELP text: \ and newline escaped, as the format wants. */
static void
prom_write_help(struct ctl_buffer *f, const char *family, const char *help)
{
	ctl_printf(f, "# HELP hotmap_%s ", family);
	for (; *help != '\0'; help++) {
		if (*help == '\\')
			ctl_puts(f, "\\\\");
		else if (*help == '\n')
			ctl_puts(f, "\\n");
		else
			ctl_putc(f, *help);
	}
	ctl_putc(f, '\n');
}

/* value / scale in decimal, exact: no rounding through a double. */
static void
prom_write_value(struct ctl_buffer *f, uint64_t value, uint64_t scale)
{
	char frac[24];
	int w;

	if (scale <= 1) {
		ctl_printf(f, "%" PRIu64, value);
		return;
	}
	w = scale == 1000000u ? 6 : 9;
	snprintf(frac, sizeof frac, "%0*" PRIu64, w, value % scale);
	while (w > 0 && frac[w - 1] == '0')
		frac[--w] = '\0';
	ctl_printf(f, "%" PRIu64 "%s%s", value / scale, w > 0 ? "." : "", frac);
}

/* A quantile of an operation never timed is NaN, not 0. */
static bool
prom_empty_summary(const struct stats_out *o, const struct prom_metric *q)
{
	const char *comma = strstr(q->labels, ",quantile=");
	size_t i, n = comma != NULL ? (size_t)(comma - q->labels) : strlen(q->labels);

	for (i = 0; i < o->n; i++) {
		const struct prom_metric *c = &o->m[i];

		if (c->is_count && strcmp(c->family, q->family) == 0 &&
		    strlen(c->labels) == n && strncmp(c->labels, q->labels, n) == 0)
			return c->value == 0;
	}
	return false;
}

static void
prom_print(struct stats_out *o)
{
	struct ctl_buffer *f = &o->buf;
	size_t i, j;

	for (i = 0; i < o->n; i++) {
		bool first = true;

		for (j = 0; j < i; j++)
			if (strcmp(o->m[j].family, o->m[i].family) == 0)
				first = false;
		if (!first)
			continue;	/* printed with the first of its family */
		prom_write_help(f, o->m[i].family, o->m[i].help);
		ctl_printf(f, "# TYPE hotmap_%s %s\n", o->m[i].family, o->m[i].type);
		for (j = i; j < o->n; j++) {
			const struct prom_metric *m = &o->m[j];

			if (strcmp(m->family, o->m[i].family) != 0)
				continue;
			ctl_printf(f, "hotmap_%s", m->sample);
			if (m->labels[0] != '\0')
				ctl_printf(f, "{%s}", m->labels);
			ctl_putc(f, ' ');
			if (m->nan_if_empty && prom_empty_summary(o, m))
				ctl_puts(f, "NaN");
			else
				prom_write_value(f, m->value, m->scale);
			ctl_putc(f, '\n');
		}
	}
	if (o->info[0] != '\0') {
		prom_write_help(f, "info", "Versions of hotmapd and its libraries, as labels; always 1.");
		ctl_printf(f, "# TYPE hotmap_info gauge\nhotmap_info{%s} 1\n", o->info);
	}
}

struct stats_out *
stats_out_new(enum stats_format format)
{
	struct stats_out *o = calloc(1, sizeof *o);

	if (o == NULL)
		return NULL;
	if (ctl_buffer_open(&o->buf) < 0) {
		free(o);
		return NULL;
	}
	o->format = format;
	json_init_buffer(&o->json, &o->buf);
	if (format == STATS_FORMAT_JSON)
		json_open(&o->json, '{', false);
	return o;
}

void
stats_out_stat(const struct hm_stat_entry *e, void *arg)
{
	struct stats_out *o = arg;
	bool text = e->kind == HM_STAT_TEXT || (e->kind == HM_STAT_UNKNOWN && e->text[0] != '\0');

	switch (o->format) {
	case STATS_HUMAN:
		if (text)
			ctl_printf(&o->buf, "%-24s %s\n", e->key, e->text);
		else
			ctl_printf(&o->buf, "%-24s %" PRIu64 "\n", e->key, e->value);
		break;
	case STATS_FORMAT_JSON:
		json_key(&o->json, e->key);
		if (text)
			json_string(&o->json, e->text);
		else
			json_uint(&o->json, e->value);
		break;
	case STATS_FORMAT_PROMETHEUS:
		/* one info metric carries the texts as labels */
		if (text)
			append_label(o->info, sizeof o->info, e->key, e->text);
		else
			prom_add(o, e);
		break;
	}
}

int
stats_out_finish(struct stats_out *o, bool print)
{
	int rc = o->failed ? -ENOMEM : 0;
	size_t i;

	if (o->format == STATS_FORMAT_JSON)
		json_close(&o->json);
	else if (o->format == STATS_FORMAT_PROMETHEUS && !o->failed)
		prom_print(o);
	ctl_buffer_close(&o->buf, print && !o->failed);
	for (i = 0; i < o->n; i++)
		free(o->m[i].help);
	free(o->m);
	free(o);
	return rc;
}

/* --- the daemon's files ---------------------------------------------------------- */

const char *
ctl_reason_name(int reason)
{
	return reason >= 0 ? vocab_reason_name((unsigned)reason) : "unknown";
}

const char *
ctl_backend_name(int backend)
{
	return backend == HM_BACKEND_MMAP ? "mmap" : "pread";
}

/* The ways reads were served, as JSON keys (clients and files). */
void
ways_json(struct json *j, const struct hm_read_ways *w)
{
	json_key(j, "daemon_reads");
	json_uint(j, w->daemon_reads);
	json_key(j, "direct_copy_reads");
	json_uint(j, w->copy_reads);
	json_key(j, "direct_pread_reads");
	json_uint(j, w->pread_reads);
	json_key(j, "direct_probes");
	json_uint(j, w->probes);
	json_key(j, "direct_populated_blocks");
	json_uint(j, w->populated_blocks);
	json_key(j, "direct_populate_ns");
	json_uint(j, w->populate_ns);
}

const char ctl_ways_header[] = "       COPY      PREAD     DAEMON   BLOCKS";

void
ctl_ways_columns(char *buf, size_t size, const struct hm_read_ways *w)
{
	snprintf(buf, size, " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %8" PRIu64, w->copy_reads,
		 w->pread_reads, w->daemon_reads, w->populated_blocks);
}

void
files_print_table(const struct file_rows *rows)
{
	size_t i;

	printf("%12s %-6s %-12s %7s %8s %9s %12s %12s %9s%s  %s\n", "SIZE", "BACKEND", "REASON",
	       "HANDLES", "RESIDENT", "HITS", "BYTES", "DIRECT", "IDLE_S", ctl_ways_header, "PATH");
	for (i = 0; i < rows->n; i++) {
		const struct hm_file_info *f = &rows->v[i].info;
		char resident[16], ways[WAYS_COLUMNS_MAX];

		ctl_ways_columns(ways, sizeof ways, &rows->v[i].ways);
		if (f->resident_pct < 0)
			snprintf(resident, sizeof resident, "-");
		else
			snprintf(resident, sizeof resident, "%d%%", f->resident_pct);
		printf("%12" PRIu64 " %-6s %-12s %7u %8s %9" PRIu64 " %12" PRIu64 " %12" PRIu64
		       " %9.1f%s  %s%s\n",
		       f->size, ctl_backend_name(f->backend), ctl_reason_name(f->reason), f->handles,
		       resident, f->hits, f->bytes, f->direct_bytes, (double)f->idle_ms / 1000.0,
		       ways, f->path, f->stale ? " (stale)" : "");
	}
}

/* An array of objects, one a line. */
void
files_print_json(const struct file_rows *rows)
{
	struct json j;
	size_t i;

	json_init(&j, stdout);
	json_open(&j, '[', false);
	for (i = 0; i < rows->n; i++) {
		const struct hm_file_info *f = &rows->v[i].info;
		const struct hm_read_ways *w = &rows->v[i].ways;

		json_open(&j, '{', true);
		json_key(&j, "path");
		json_string(&j, f->path);
		json_key(&j, "size");
		json_uint(&j, f->size);
		json_key(&j, "backend");
		json_string(&j, ctl_backend_name(f->backend));
		json_key(&j, "reason");
		json_string(&j, ctl_reason_name(f->reason));
		json_key(&j, "handles");
		json_uint(&j, f->handles);
		json_key(&j, "stale");
		json_bool(&j, f->stale);
		json_key(&j, "private");
		json_bool(&j, w->private_entry);
		json_key(&j, "fs");
		json_string(&j, w->fs);
		json_key(&j, "network");
		json_bool(&j, w->network);
		json_key(&j, "copy_bytes");
		json_uint(&j, w->copy_bytes);
		json_key(&j, "hits");
		json_uint(&j, f->hits);
		json_key(&j, "bytes");
		json_uint(&j, f->bytes);
		json_key(&j, "idle_ms");
		json_uint(&j, f->idle_ms);
		json_key(&j, "resident_pct");
		json_int(&j, f->resident_pct);
		json_key(&j, "resident_bytes");
		json_uint(&j, f->resident_bytes);
		json_key(&j, "direct_handles");
		json_uint(&j, f->direct_handles);
		json_key(&j, "direct_reads");
		json_uint(&j, f->direct_reads);
		json_key(&j, "direct_bytes");
		json_uint(&j, f->direct_bytes);
		ways_json(&j, &rows->v[i].ways);
		json_close(&j);
	}
	json_close(&j);
}

/* --- the daemon's configuration --------------------------------------------------- */

struct config_out {
	bool json;
	struct ctl_buffer buf;
	struct json j;
};

struct config_out *
config_out_new(bool json)
{
	struct config_out *o = calloc(1, sizeof *o);

	if (o == NULL)
		return NULL;
	if (ctl_buffer_open(&o->buf) < 0) {
		free(o);
		return NULL;
	}
	o->json = json;
	json_init_buffer(&o->j, &o->buf);
	if (json) {
		json_open(&o->j, '{', false);
		json_key(&o->j, "items");
		json_open(&o->j, '[', false);
	}
	return o;
}

void
config_out_item(const char *key, const char *value, const char *source, void *arg)
{
	struct config_out *o = arg;

	if (!o->json) {
		ctl_printf(&o->buf, "%-24s = %-24s # %s\n", key, value, source);
		return;
	}
	json_open(&o->j, '{', true);
	json_key(&o->j, "key");
	json_string(&o->j, key);
	json_key(&o->j, "value");
	json_string(&o->j, value);
	json_key(&o->j, "source");
	json_string(&o->j, source);
	json_close(&o->j);
}

void
config_out_finish(struct config_out *o, const char *path, bool print)
{
	if (o->json) {
		json_close(&o->j);
		json_key(&o->j, "file");
		if (path[0] != '\0')
			json_string(&o->j, path);
		else
			json_null(&o->j);
		json_close(&o->j);
	} else {
		ctl_printf(&o->buf, "# file: %s\n", path[0] != '\0' ? path : "none (built-in defaults)");
	}
	ctl_buffer_close(&o->buf, print);
	free(o);
}
