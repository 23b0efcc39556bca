/* SPDX-License-Identifier: MIT */
/*
 * spread.c - how far a ratio to pread moves within one run: the machine's
 * measurement noise beside the result (see bench.h).
 *
 * Per row, the ratio of each round to pread's round of the same number (the
 * contenders of a round run one after another, so a round's pair saw the
 * same load); for pread's own row, each of its rounds against its median.
 * With --repeat N, the rounds are N runs of --rounds each, interleaved round
 * by round: per run, the ratio of the medians; over the runs, their median
 * and inter-quartile range, with pread-again's (pread run again as a
 * contender of its own: an A/A pair) beside it.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"

/* v as a multiple of ref, > 1 when v is the better one. */
static double
better_ratio(const struct row *r, double v, double ref)
{
	if (v <= 0 || ref <= 0)
		return NAN;
	return r->higher_better ? v / ref : ref / v;
}

/* The quantile q (0-1) of sorted v, linear between ranks. */
static double
quantile(const double *v, size_t n, double q)
{
	double pos = q * (double)(n - 1);
	size_t i = (size_t)pos;

	if (n == 0)
		return NAN;
	if (i + 1 >= n)
		return v[n - 1];
	return v[i] + (pos - (double)i) * (v[i + 1] - v[i]);
}

unsigned
row_round_ratios(const struct row *r, double *out)
{
	const struct row *ref = row_reference(r);
	const struct metric *m = r->nm > 0 ? &r->m[0] : NULL;
	unsigned i, n = 0;

	if (m == NULL || ref == NULL)
		return 0;
	if (ref == r) {
		double med = median_of(m->v, m->n);

		for (i = 0; i < m->n; i++)
			out[n++] = better_ratio(r, m->v[i], med);
		return n;
	}
	/* Rounds pair up only when neither row missed one. */
	if (ref->m[0].n != m->n)
		return 0;
	for (i = 0; i < m->n; i++)
		out[n++] = better_ratio(r, m->v[i], ref->m[0].v[i]);
	return n;
}

const char *
row_round_spread(const struct row *r, char *buf, size_t len)
{
	double v[BENCH_MAX_ROUNDS], lo = INFINITY, hi = -INFINITY;
	unsigned i, n = row_round_ratios(r, v);

	for (i = 0; i < n; i++) {
		if (isnan(v[i]))
			n = 0;
		else if (v[i] < lo)
			lo = v[i];
		if (n > 0 && v[i] > hi)
			hi = v[i];
	}
	if (n < 2)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "[%.2f-%.2f]", lo, hi);
	return buf;
}

/*
 * Per run (bench.o.repeat runs of bench.o.rounds / repeat rounds): the
 * ratio of this row's median to pread's; their median, first and third
 * quartile.  false when the rounds do not pair up.
 */
bool
row_repeat_ratio(const struct row *r, double *med, double *q1, double *q3)
{
	const struct row *ref = row_reference(r);
	unsigned runs = bench.o.repeat, per, g;
	double ratio[BENCH_MAX_ROUNDS];

	if (runs < 2 || r->nm == 0 || ref == NULL || ref == r)
		return false;
	per = bench.o.rounds / runs;
	if (per == 0 || r->m[0].n != runs * per || ref->m[0].n != runs * per)
		return false;
	for (g = 0; g < runs; g++) {
		ratio[g] = better_ratio(r, median_of(r->m[0].v + g * per, per),
					median_of(ref->m[0].v + g * per, per));
		if (isnan(ratio[g]))
			return false;
	}
	sort_doubles(ratio, runs);
	*med = quantile(ratio, runs, 0.5);
	*q1 = quantile(ratio, runs, 0.25);
	*q3 = quantile(ratio, runs, 0.75);
	return true;
}

/* The A/A row of the same variant, or NULL. */
static const struct row *
row_again(const struct row *r)
{
	unsigned i, n;
	const struct row *rows = report_rows(&n);

	for (i = 0; i < n; i++)
		if (strcmp(rows[i].workload, r->workload) == 0 && strcmp(rows[i].variant, r->variant) == 0 &&
		    strcmp(rows[i].contender, "pread-again") == 0)
			return &rows[i];
	return NULL;
}

void
repeat_print(FILE *fp, const char *workload)
{
	unsigned i, n;
	const struct row *rows = report_rows(&n);
	bool head = false;

	if (bench.o.repeat < 2)
		return;
	for (i = 0; i < n; i++) {
		const struct row *r = &rows[i], *aa;
		double m, q1, q3, am, aq1, aq3;
		char again[48] = "-";

		if (strcmp(r->workload, workload) != 0 || !row_repeat_ratio(r, &m, &q1, &q3))
			continue;
		if (!head) {
			fprintf(fp, "  --repeat %u: %u runs of %u rounds, interleaved round by round; per run "
				    "the ratio of medians to pread's; over the runs:\n",
				bench.o.repeat, bench.o.repeat, bench.o.rounds / bench.o.repeat);
			fprintf(fp, "  %-16s %-20s %-24s %s\n", "variant", "contender", "x pread median [IQR]",
				"pread-again's (A/A: the noise)");
			head = true;
		}
		aa = row_again(r);
		if (aa != NULL && row_repeat_ratio(aa, &am, &aq1, &aq3))
			snprintf(again, sizeof again, "%.2f [%.2f-%.2f]", am, aq1, aq3);
		{
			char mine[48];

			snprintf(mine, sizeof mine, "%.2f [%.2f-%.2f]", m, q1, q3);
			fprintf(fp, "  %-16s %-20s %-24s %s\n", r->variant, r->contender, mine, again);
		}
	}
}

int
repeat_write_csv(const char *dir)
{
	char path[PATH_MAX];
	unsigned i, n;
	const struct row *rows = report_rows(&n);
	FILE *fp;

	if (bench.o.repeat < 2)
		return 0;
	snprintf(path, sizeof path, "%s/repeat.csv", dir);
	fp = fopen(path, "we");
	if (fp == NULL)
		return -errno;
	fprintf(fp, "workload,variant,contender,runs,rounds_per_run,ratio_median,ratio_q1,ratio_q3\n");
	for (i = 0; i < n; i++) {
		double m, q1, q3;

		if (row_repeat_ratio(&rows[i], &m, &q1, &q3))
			fprintf(fp, "%s,%s,%s,%u,%u,%.4f,%.4f,%.4f\n", rows[i].workload, rows[i].variant,
				rows[i].contender, bench.o.repeat, bench.o.rounds / bench.o.repeat, m, q1, q3);
	}
	return fclose(fp) == 0 ? 0 : -errno;
}
