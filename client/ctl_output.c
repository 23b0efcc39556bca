/*
 * ctl_output.c - hotmapctl's output formats: the daemon's counters as
 * "key value" lines, JSON or Prometheus text; its files as a table or
 * JSON; its configuration as "key = value # source" lines or JSON.
 *
 * All JSON goes through the one emitter here, and JSON documents are
 * built in memory and printed only once the daemon has answered in full:
 * a failed request prints no half of one.
 */
#include "config.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl.h"
#include "proto/vocab.h"

/* --- JSON ------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s (1 to 4), or 0 when s does not
 * start one: overlong forms, surrogates and code points past U+10FFFF
 * are not valid (RFC 3629). */
static size_t
utf8_sequence(const unsigned char *s)
{
	unsigned c = s[0], min, cp;
	size_t n, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07, min = 0x10000;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)	/* the NUL ends it here too */
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/*
 * The rule, as hotmapctl(1) states it: '"' and '\' are escaped with a
 * backslash; \b \f \n \r \t have their short escapes; other control
 * characters and DEL are written \u00XX; valid UTF-8 is copied as is; and
 * each byte that is not part of valid UTF-8 (a path may hold any byte but
 * NUL) is written \u00XX with the byte's value, as if it were Latin-1.
 */
void
json_write_string(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	putc('"', f);
	while (*s != '\0') {
		size_t n = utf8_sequence(s);

		switch (*s) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\b': fputs("\\b", f); break;
		case '\f': fputs("\\f", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (n == 0 || *s < 0x20 || *s == 0x7f) {
				fprintf(f, "\\u%04x", *s);
				n = 1;
			} else {
				fwrite(s, 1, n, f);
			}
			s += n;
			continue;
		}
		s++;
	}
	putc('"', f);
}

void
json_init(struct json *j, FILE *f)
{
	memset(j, 0, sizeof *j);
	j->f = f;
}

static void
json_indent(struct json *j, unsigned depth)
{
	unsigned i;

	putc('\n', j->f);
	for (i = 0; i < depth; i++)
		fputs("  ", j->f);
}

/* Before a value or a key: the separator its container wants. */
static void
json_before(struct json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->depth == 0)
		return;
	if (j->members[j->depth])
		putc(',', j->f);
	if (j->inline_[j->depth]) {
		if (j->members[j->depth])
			putc(' ', j->f);
	} else {
		json_indent(j, j->depth);
	}
	j->members[j->depth] = true;
}

void
json_open(struct json *j, char brace, bool inline_)
{
	/* hotmapctl's documents nest 3 deep: deeper is a bug here */
	assert(j->depth + 1 < sizeof j->members / sizeof j->members[0]);
	json_before(j);
	putc(brace, j->f);
	j->depth++;
	j->members[j->depth] = false;
	/* inside an inline container, everything is inline */
	j->inline_[j->depth] = inline_ || (j->depth > 1 && j->inline_[j->depth - 1]);
	j->closer[j->depth] = brace == '{' ? '}' : ']';
}

void
json_close(struct json *j)
{
	if (j->depth == 0)
		return;
	if (j->members[j->depth] && !j->inline_[j->depth])
		json_indent(j, j->depth - 1);
	putc(j->closer[j->depth], j->f);
	j->depth--;
	if (j->depth == 0)
		putc('\n', j->f);
}

void
json_key(struct json *j, const char *key)
{
	json_before(j);
	json_write_string(j->f, key);
	fputs(": ", j->f);
	j->after_key = true;
}

void
json_string(struct json *j, const char *s)
{
	json_before(j);
	json_write_string(j->f, s);
}

void
json_uint(struct json *j, uint64_t v)
{
	json_before(j);
	fprintf(j->f, "%" PRIu64, v);
}

void
json_int(struct json *j, int64_t v)
{
	json_before(j);
	fprintf(j->f, "%" PRId64, v);
}

void
json_bool(struct json *j, bool v)
{
	json_before(j);
	fputs(v ? "true" : "false", j->f);
}

void
json_null(struct json *j)
{
	json_before(j);
	fputs("null", j->f);
}

/* --- output printed once complete --------------------------------------------- */

int
ctl_buffer_open(struct ctl_buffer *b)
{
	memset(b, 0, sizeof *b);
	b->f = open_memstream(&b->data, &b->len);
	return b->f != NULL ? 0 : -1;
}

void
ctl_buffer_close(struct ctl_buffer *b, bool print)
{
	if (b->f != NULL && fclose(b->f) == 0 && print)
		fwrite(b->data, 1, b->len, stdout);
	free(b->data);
	memset(b, 0, sizeof *b);
}

/* --- the daemon's counters ------------------------------------------------------ */

struct stats_out {
	enum stats_format format;
	struct ctl_buffer buf;
	struct json json;
	char info[512];		/* Prometheus: the text keys, as labels */
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
	json_init(&o->json, o->buf.f);
	if (format == STATS_FORMAT_JSON)
		json_open(&o->json, '{', false);
	return o;
}

/* One metric in Prometheus's text format, typed as the daemon says. */
static void
stats_out_prometheus(struct stats_out *o, const struct hm_stat_entry *e)
{
	FILE *f = o->buf.f;

	switch (e->kind) {
	case HM_STAT_GAUGE:
		fprintf(f, "# TYPE hotmap_%s gauge\nhotmap_%s %" PRIu64 "\n", e->key, e->key,
			e->value);
		break;
	case HM_STAT_COUNTER:
		/* counters end in _total, as the exposition format wants */
		fprintf(f, "# TYPE hotmap_%s_total counter\nhotmap_%s_total %" PRIu64 "\n", e->key,
			e->key, e->value);
		break;
	default:
		/* a daemon too old to say: untyped, the format's own word */
		fprintf(f, "# TYPE hotmap_%s untyped\nhotmap_%s %" PRIu64 "\n", e->key, e->key,
			e->value);
		break;
	}
}

void
stats_out_stat(const struct hm_stat_entry *e, void *arg)
{
	struct stats_out *o = arg;
	bool text = e->kind == HM_STAT_TEXT || (e->kind == HM_STAT_UNKNOWN && e->text[0] != '\0');

	switch (o->format) {
	case STATS_HUMAN:
		if (text)
			fprintf(o->buf.f, "%-24s %s\n", e->key, e->text);
		else
			fprintf(o->buf.f, "%-24s %" PRIu64 "\n", e->key, e->value);
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
			stats_out_prometheus(o, e);
		break;
	}
}

void
stats_out_finish(struct stats_out *o, bool print)
{
	if (o->format == STATS_FORMAT_JSON)
		json_close(&o->json);
	else if (o->format == STATS_FORMAT_PROMETHEUS && o->info[0] != '\0')
		fprintf(o->buf.f, "# TYPE hotmap_info gauge\nhotmap_info{%s} 1\n", o->info);
	ctl_buffer_close(&o->buf, print);
	free(o);
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

void
files_print_table(const struct file_rows *rows)
{
	size_t i;

	printf("%12s %-6s %-12s %7s %8s %9s %12s %12s %9s  %s\n", "SIZE", "BACKEND", "REASON",
	       "HANDLES", "RESIDENT", "HITS", "BYTES", "DIRECT", "IDLE_S", "PATH");
	for (i = 0; i < rows->n; i++) {
		const struct hm_file_info *f = &rows->v[i].info;
		char resident[16];

		if (f->resident_pct < 0)
			snprintf(resident, sizeof resident, "-");
		else
			snprintf(resident, sizeof resident, "%d%%", f->resident_pct);
		printf("%12" PRIu64 " %-6s %-12s %7u %8s %9" PRIu64 " %12" PRIu64 " %12" PRIu64
		       " %9.1f  %s%s\n",
		       f->size, ctl_backend_name(f->backend), ctl_reason_name(f->reason), f->handles,
		       resident, f->hits, f->bytes, f->direct_bytes, (double)f->idle_ms / 1000.0,
		       f->path, f->stale ? " (stale)" : "");
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
	json_init(&o->j, o->buf.f);
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
		fprintf(o->buf.f, "%-24s = %-24s # %s\n", key, value, source);
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
		fprintf(o->buf.f, "# file: %s\n", path[0] != '\0' ? path : "none (built-in defaults)");
	}
	ctl_buffer_close(&o->buf, print);
	free(o);
}
