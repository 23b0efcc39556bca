/* SPDX-License-Identifier: MIT */
/*
 * report.c - hmbench's results: rows of metrics over rounds, printed as a
 * plain-text table and written as CSV and JSON (see bench.h).
 *
 * A row is one contender in one variant of one workload; each metric keeps
 * its value for every round, and the report gives median, min and max.  The
 * first metric of a row is its primary one (a throughput: higher is
 * better), the one the "x pread" ratio compares.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/bench.h"

#define MAX_ROWS	512
#define MAX_SECTIONS	16
#define MAX_META	48
#define MAX_FAILURES	64

struct section {
	char workload[24];
	char title[120];
	char text[640];
};

struct meta {
	char key[32];
	char value[512];
};

static struct row rows[MAX_ROWS];
static unsigned nrows;
static struct section sections[MAX_SECTIONS];
static unsigned nsections;
static struct meta metas[MAX_META];
static unsigned nmetas;
static char failures[MAX_FAILURES][256];
static unsigned nfailures;

static const double ladder[] = { 1, 5, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.99, 100 };

struct row *
row_get(const char *workload, const char *variant, const char *contender)
{
	unsigned i;
	struct row *r;

	for (i = 0; i < nrows; i++)
		if (strcmp(rows[i].workload, workload) == 0 && strcmp(rows[i].variant, variant) == 0 &&
		    strcmp(rows[i].contender, contender) == 0)
			return &rows[i];
	if (nrows == MAX_ROWS) {
		fprintf(stderr, "hmbench: too many result rows\n");
		exit(1);
	}
	r = &rows[nrows++];
	memset(r, 0, sizeof *r);
	snprintf(r->workload, sizeof r->workload, "%s", workload);
	snprintf(r->variant, sizeof r->variant, "%s", variant);
	snprintf(r->contender, sizeof r->contender, "%s", contender);
	r->higher_better = true;
	return r;
}

void
row_note(struct row *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->note, sizeof r->note, fmt, ap);
	va_end(ap);
}

void
row_add(struct row *r, const char *key, const char *unit, double v)
{
	struct metric *m = NULL;
	unsigned i;

	for (i = 0; i < r->nm; i++)
		if (strcmp(r->m[i].key, key) == 0)
			m = &r->m[i];
	if (m == NULL) {
		if (r->nm == BENCH_MAX_METRICS)
			return;
		m = &r->m[r->nm++];
		m->key = key;
		m->unit = unit;
		m->n = 0;
	}
	if (m->n < BENCH_MAX_ROUNDS)
		m->v[m->n++] = v;
}

void
row_add_latencies(struct row *r, const double *lat, size_t n)
{
	if (n == 0)
		return;
	if (r->nlat + n > r->caplat) {
		size_t cap = r->caplat == 0 ? n * 8 : r->caplat * 2;
		double *p;

		while (cap < r->nlat + n)
			cap *= 2;
		p = realloc(r->lat, cap * sizeof *p);
		if (p == NULL)
			return;
		r->lat = p;
		r->caplat = cap;
	}
	memcpy(r->lat + r->nlat, lat, n * sizeof *lat);
	r->nlat += n;
}

void
report_section(const char *workload, const char *title, const char *fmt, ...)
{
	struct section *s = NULL;
	va_list ap;
	unsigned i;

	for (i = 0; i < nsections; i++)
		if (strcmp(sections[i].workload, workload) == 0)
			s = &sections[i];
	if (s == NULL) {
		if (nsections == MAX_SECTIONS)
			return;
		s = &sections[nsections++];
	}
	snprintf(s->workload, sizeof s->workload, "%s", workload);
	snprintf(s->title, sizeof s->title, "%s", title);
	va_start(ap, fmt);
	vsnprintf(s->text, sizeof s->text, fmt, ap);
	va_end(ap);
}

void
report_meta(const char *key, const char *fmt, ...)
{
	struct meta *m;
	va_list ap;

	if (nmetas == MAX_META)
		return;
	m = &metas[nmetas++];
	snprintf(m->key, sizeof m->key, "%s", key);
	va_start(ap, fmt);
	vsnprintf(m->value, sizeof m->value, fmt, ap);
	va_end(ap);
	printf("# %-14s %s\n", m->key, m->value);
	fflush(stdout);
}

void
report_failure(const char *workload, const char *contender, const char *fmt, ...)
{
	char text[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	bench_log("FAILED: %s / %s: %s", workload, contender, text);
	if (nfailures < MAX_FAILURES)
		snprintf(failures[nfailures++], sizeof failures[0], "%s / %s: %s", workload, contender,
			 text);
}

unsigned
report_failures(void)
{
	return nfailures;
}

/* --- statistics of a metric ---------------------------------------------- */

static double
metric_median(const struct metric *m)
{
	return median_of(m->v, m->n);
}

static double
metric_min(const struct metric *m)
{
	double v = m->n > 0 ? m->v[0] : 0;
	unsigned i;

	for (i = 1; i < m->n; i++)
		if (m->v[i] < v)
			v = m->v[i];
	return v;
}

static double
metric_max(const struct metric *m)
{
	double v = m->n > 0 ? m->v[0] : 0;
	unsigned i;

	for (i = 1; i < m->n; i++)
		if (m->v[i] > v)
			v = m->v[i];
	return v;
}

static const struct metric *
row_metric(const struct row *r, const char *key)
{
	unsigned i;

	for (i = 0; i < r->nm; i++)
		if (strcmp(r->m[i].key, key) == 0)
			return &r->m[i];
	return NULL;
}

/* The primary metric against in-process pread's in the same variant; NAN
 * when there is none. */
const struct row *
row_reference(const struct row *r)
{
	const struct row *ref = NULL;
	unsigned i;

	if (r->nm == 0)
		return NULL;
	for (i = 0; i < nrows; i++)
		if (strcmp(rows[i].workload, r->workload) == 0 &&
		    strcmp(rows[i].variant, r->variant) == 0 && strcmp(rows[i].contender, "pread") == 0)
			ref = &rows[i];
	if (ref == NULL || ref->nm == 0 || strcmp(ref->m[0].key, r->m[0].key) != 0)
		return NULL;
	return ref;
}

const struct row *
report_rows(unsigned *n)
{
	*n = nrows;
	return rows;
}

static double
row_ratio(const struct row *r)
{
	const struct row *ref = row_reference(r);
	double a, b;

	if (ref == NULL)
		return NAN;
	a = metric_median(&r->m[0]);
	b = metric_median(&ref->m[0]);
	if (a <= 0 || b <= 0)
		return NAN;
	return r->higher_better ? a / b : b / a;
}

/* 3-4 significant digits, k/M/G above 10,000. */
static const char *
fmt_num(char *buf, size_t len, double v)
{
	double a = fabs(v);

	if (isnan(v))
		snprintf(buf, len, "-");
	else if (a >= 1e10)
		snprintf(buf, len, "%.3gG", v / 1e9);
	else if (a >= 1e7)
		snprintf(buf, len, "%.3gM", v / 1e6);
	else if (a >= 1e4)
		snprintf(buf, len, "%.0fk", v / 1e3);
	else if (a >= 100)
		snprintf(buf, len, "%.0f", v);
	else if (a >= 10)
		snprintf(buf, len, "%.1f", v);
	else if (a >= 1)
		snprintf(buf, len, "%.2f", v);
	else if (a == 0)
		snprintf(buf, len, "0");
	else
		snprintf(buf, len, "%.3f", v);
	return buf;
}

/* --- the table ------------------------------------------------------------- */

static const char *const shown_elsewhere[] = { "p50_us", "p99_us", "p50_ms", "p99_ms", NULL };

static bool
is_shown_elsewhere(const char *key)
{
	unsigned i;

	for (i = 0; shown_elsewhere[i] != NULL; i++)
		if (strcmp(shown_elsewhere[i], key) == 0)
			return true;
	return false;
}

static void
print_row(FILE *fp, const struct row *r)
{
	char a[24], b[24], c[24], d[24], e[24], prim[80], extra[400], spread[32];
	const struct metric *p50, *p99;
	size_t off = 0;
	double ratio;
	unsigned i;

	if (r->nm == 0) {
		fprintf(fp, "  %-16s %-15s %s\n", r->variant, r->contender,
			r->note[0] != '\0' ? r->note : "(no result)");
		return;
	}
	snprintf(prim, sizeof prim, "%s [%s-%s] %s", fmt_num(a, sizeof a, metric_median(&r->m[0])),
		 fmt_num(b, sizeof b, metric_min(&r->m[0])), fmt_num(c, sizeof c, metric_max(&r->m[0])),
		 r->m[0].unit);
	p50 = row_metric(r, "p50_us");
	p99 = row_metric(r, "p99_us");
	if (p50 == NULL) {
		p50 = row_metric(r, "p50_ms");
		p99 = row_metric(r, "p99_ms");
	}
	ratio = row_ratio(r);
	extra[0] = '\0';
	for (i = 1; i < r->nm; i++) {
		if (is_shown_elsewhere(r->m[i].key))
			continue;
		off += (size_t)snprintf(extra + off, sizeof extra - off, "%s%s=%s", off > 0 ? " " : "",
					r->m[i].key, fmt_num(a, sizeof a, metric_median(&r->m[i])));
		if (off >= sizeof extra)
			break;
	}
	if (isnan(ratio))
		snprintf(c, sizeof c, "-");
	else
		snprintf(c, sizeof c, "%.2f", ratio);
	fprintf(fp, "  %-16s %-15s %-34s %8s %8s %7s %-13s  %s%s%s\n", r->variant, r->contender, prim,
		p50 != NULL ? fmt_num(d, sizeof d, metric_median(p50)) : "-",
		p99 != NULL ? fmt_num(e, sizeof e, metric_median(p99)) : "-", c,
		row_round_spread(r, spread, sizeof spread), extra,
		r->note[0] != '\0' && extra[0] != '\0' ? "; " : "", r->note);
}

static void
print_table(FILE *fp, const char *workload)
{
	const struct section *s = NULL;
	const char *unit = "";
	char p50[16], p99[16];
	unsigned i;

	for (i = 0; i < nsections; i++)
		if (strcmp(sections[i].workload, workload) == 0)
			s = &sections[i];
	for (i = 0; i < nrows; i++)
		if (strcmp(rows[i].workload, workload) == 0 && rows[i].nm > 0) {
			if (row_metric(&rows[i], "p50_ms") != NULL)
				unit = " ms";
			else if (row_metric(&rows[i], "p50_us") != NULL)
				unit = " us";
			break;
		}
	snprintf(p50, sizeof p50, "p50%s", unit);
	snprintf(p99, sizeof p99, "p99%s", unit);
	fprintf(fp, "\n== %s: %s ==\n", workload, s != NULL ? s->title : "");
	if (s != NULL && s->text[0] != '\0')
		fprintf(fp, "%s\n", s->text);
	fprintf(fp, "  %-16s %-15s %-34s %8s %8s %7s %-13s  %s\n", "variant", "contender",
		"median [min-max] over rounds", p50, p99, "x pread", "rounds x", "other medians; notes");
	/* results first, then what was skipped */
	for (i = 0; i < nrows; i++)
		if (strcmp(rows[i].workload, workload) == 0 && rows[i].nm > 0)
			print_row(fp, &rows[i]);
	for (i = 0; i < nrows; i++)
		if (strcmp(rows[i].workload, workload) == 0 && rows[i].nm == 0)
			print_row(fp, &rows[i]);
	repeat_print(fp, workload);
	fflush(fp);
}

void
report_print_table(const char *workload)
{
	print_table(stdout, workload);
}

/* --- files ----------------------------------------------------------------- */

static void
csv_str(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s != '\0'; s++) {
		if (*s == '"')
			fputc('"', fp);
		fputc(*s, fp);
	}
	fputc('"', fp);
}

static void
json_str(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(fp, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", fp);
		else if (ch < 0x20)
			fprintf(fp, "\\u%04x", ch);
		else
			fputc(ch, fp);
	}
	fputc('"', fp);
}

static void
json_num(FILE *fp, double v)
{
	if (isnan(v) || isinf(v))
		fputs("null", fp);
	else
		fprintf(fp, "%.6g", v);
}

static int
write_csv(const char *dir)
{
	char path[PATH_MAX];
	unsigned i, j;
	FILE *fp;

	snprintf(path, sizeof path, "%s/results.csv", dir);
	fp = fopen(path, "we");
	if (fp == NULL)
		return -errno;
	fprintf(fp, "workload,variant,contender,metric,unit,median,min,max,rounds,ratio_vs_pread,note\n");
	for (i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		double ratio = row_ratio(r);

		for (j = 0; j < r->nm; j++) {
			fprintf(fp, "%s,%s,%s,%s,", r->workload, r->variant, r->contender, r->m[j].key);
			csv_str(fp, r->m[j].unit);
			fprintf(fp, ",%.6g,%.6g,%.6g,%u,", metric_median(&r->m[j]), metric_min(&r->m[j]),
				metric_max(&r->m[j]), r->m[j].n);
			if (j == 0 && !isnan(ratio))
				fprintf(fp, "%.4f", ratio);
			fputc(',', fp);
			csv_str(fp, r->note);
			fputc('\n', fp);
		}
	}
	return fclose(fp) == 0 ? 0 : -errno;
}

static int
write_latency(const char *dir)
{
	char path[PATH_MAX];
	unsigned i, j;
	FILE *fp;

	snprintf(path, sizeof path, "%s/latency.csv", dir);
	fp = fopen(path, "we");
	if (fp == NULL)
		return -errno;
	fprintf(fp, "workload,variant,contender,percentile,latency_us,samples\n");
	for (i = 0; i < nrows; i++) {
		struct row *r = &rows[i];

		if (r->nlat == 0)
			continue;
		sort_doubles(r->lat, r->nlat);
		for (j = 0; j < sizeof ladder / sizeof ladder[0]; j++)
			fprintf(fp, "%s,%s,%s,%g,%.3f,%zu\n", r->workload, r->variant, r->contender,
				ladder[j], percentile(r->lat, r->nlat, ladder[j]), r->nlat);
	}
	return fclose(fp) == 0 ? 0 : -errno;
}

static int
write_json(const char *dir)
{
	char path[PATH_MAX];
	unsigned i, j, k;
	FILE *fp;

	snprintf(path, sizeof path, "%s/results.json", dir);
	fp = fopen(path, "we");
	if (fp == NULL)
		return -errno;
	fputs("{\n  \"meta\": {", fp);
	for (i = 0; i < nmetas; i++) {
		fputs(i ? ",\n    " : "\n    ", fp);
		json_str(fp, metas[i].key);
		fputs(": ", fp);
		json_str(fp, metas[i].value);
	}
	fputs("\n  },\n  \"workloads\": [", fp);
	for (i = 0; i < nsections; i++) {
		fputs(i ? ",\n    {" : "\n    {", fp);
		fputs("\"workload\": ", fp);
		json_str(fp, sections[i].workload);
		fputs(", \"title\": ", fp);
		json_str(fp, sections[i].title);
		fputs(", \"setup\": ", fp);
		json_str(fp, sections[i].text);
		fputc('}', fp);
	}
	fputs("\n  ],\n  \"failures\": [", fp);
	for (i = 0; i < nfailures; i++) {
		fputs(i ? ", " : "", fp);
		json_str(fp, failures[i]);
	}
	fputs("],\n  \"rows\": [", fp);
	for (i = 0; i < nrows; i++) {
		struct row *r = &rows[i];

		fputs(i ? ",\n    {" : "\n    {", fp);
		fputs("\"workload\": ", fp);
		json_str(fp, r->workload);
		fputs(", \"variant\": ", fp);
		json_str(fp, r->variant);
		fputs(", \"contender\": ", fp);
		json_str(fp, r->contender);
		fputs(", \"note\": ", fp);
		json_str(fp, r->note);
		fputs(", \"ratio_vs_pread\": ", fp);
		json_num(fp, row_ratio(r));
		fputs(", \"metrics\": {", fp);
		for (j = 0; j < r->nm; j++) {
			const struct metric *m = &r->m[j];

			fputs(j ? ", " : "", fp);
			json_str(fp, m->key);
			fputs(": {\"unit\": ", fp);
			json_str(fp, m->unit);
			fputs(", \"median\": ", fp);
			json_num(fp, metric_median(m));
			fputs(", \"min\": ", fp);
			json_num(fp, metric_min(m));
			fputs(", \"max\": ", fp);
			json_num(fp, metric_max(m));
			fputs(", \"rounds\": [", fp);
			for (k = 0; k < m->n; k++) {
				fputs(k ? ", " : "", fp);
				json_num(fp, m->v[k]);
			}
			fputs("]}", fp);
		}
		fputc('}', fp);
		if (r->nlat > 0) {
			sort_doubles(r->lat, r->nlat);
			fputs(", \"latency_us\": {", fp);
			for (j = 0; j < sizeof ladder / sizeof ladder[0]; j++) {
				fprintf(fp, "%s\"p%g\": ", j ? ", " : "", ladder[j]);
				json_num(fp, percentile(r->lat, r->nlat, ladder[j]));
			}
			fputc('}', fp);
		}
		fputc('}', fp);
	}
	fputs("\n  ]\n}\n", fp);
	return fclose(fp) == 0 ? 0 : -errno;
}

static int
write_table(const char *dir)
{
	char path[PATH_MAX];
	unsigned i, j;
	FILE *fp;

	snprintf(path, sizeof path, "%s/table.txt", dir);
	fp = fopen(path, "we");
	if (fp == NULL)
		return -errno;
	for (i = 0; i < nmetas; i++)
		fprintf(fp, "# %-14s %s\n", metas[i].key, metas[i].value);
	for (i = 0; i < nsections; i++) {
		bool any = false;

		for (j = 0; j < nrows; j++)
			any |= strcmp(rows[j].workload, sections[i].workload) == 0;
		if (any)
			print_table(fp, sections[i].workload);
	}
	if (nfailures > 0) {
		fprintf(fp, "\nFailures:\n");
		for (i = 0; i < nfailures; i++)
			fprintf(fp, "  %s\n", failures[i]);
	}
	return fclose(fp) == 0 ? 0 : -errno;
}

int
report_write(const char *dir)
{
	int rc;

	rc = mkdir_p(dir, 0755);
	if (rc == 0)
		rc = write_csv(dir);
	if (rc == 0)
		rc = write_json(dir);
	if (rc == 0)
		rc = write_latency(dir);
	if (rc == 0)
		rc = write_table(dir);
	if (rc == 0)
		rc = repeat_write_csv(dir);
	return rc;
}

/* The children of a workload of processes (run_children), summed. */
void
children_sum(const char *workload, const char *contender, const char *who,
	     const struct child_report *reps, unsigned n, double *p50, struct children_sum *s)
{
	unsigned i;

	*s = (struct children_sum){ .t0 = 1e300 };
	for (i = 0; i < n; i++) {
		const struct child_report *x = &reps[i];

		if (x->status != 0) {
			report_failure(workload, contender, "%s %u: %s", who, i, x->err);
			s->bad++;
			continue;
		}
		if (x->t0 < s->t0)
			s->t0 = x->t0;
		if (x->t1 > s->t1)
			s->t1 = x->t1;
		s->bytes += x->bytes;
		s->ops += x->ops;
		s->minflt += x->minflt;
		if (p50 != NULL)
			p50[i] = x->lat_p50;
		if (x->lat_p99 > s->p99)
			s->p99 = x->lat_p99;
	}
}
