/* SPDX-License-Identifier: MIT */
/*
 * wl_train.c - hmbench's training-style workload: clients reading batches of
 * rows of every column of several column files at once.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/workload.h"

#define MAX_TRAIN_FILES	64

/* --- workload: training-style columns --------------------------------------------------- */

static char train_paths[MAX_TRAIN_FILES][PATH_MAX];

static uint64_t
train_file_size(void)
{
	return 4096 + (uint64_t)(bench.o.train_cols + 1) * bench.o.train_rows * 8;
}

/* Column c (0: the device column) of a training file. */
static uint64_t
train_col_off(unsigned c)
{
	return 4096 + (uint64_t)c * bench.o.train_rows * 8;
}

static int
train_make(void)
{
	unsigned f, c, i;
	uint64_t rows = bench.o.train_rows;
	double *col = xmalloc(rows * sizeof *col);
	char dir[PATH_MAX + 8];
	int rc;

	snprintf(dir, sizeof dir, "%s/train", bench.data_dir);
	rc = mkdir_p(dir, 0755);
	if (rc < 0)
		return rc;
	for (f = 0; f < bench.o.train_files; f++) {
		char head[4096] = { 0 };
		int fd;

		xsnprintf(train_paths[f], sizeof train_paths[f], "%s/part-%02u.col", dir, f);
		fd = open(train_paths[f], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			return -errno;
		/* A self-describing header: the columns and where they start. */
		snprintf(head, sizeof head, "HMCOL1 rows=%llu columns=%u device:int64@%llu",
			 (unsigned long long)rows, bench.o.train_cols + 1,
			 (unsigned long long)train_col_off(0));
		for (c = 1; c <= bench.o.train_cols; c++) {
			size_t l = strlen(head);

			snprintf(head + l, sizeof head - l, " x%u:double@%llu", (f * bench.o.train_cols) + c - 1,
				 (unsigned long long)train_col_off(c));
		}
		if (write(fd, head, sizeof head) != (ssize_t)sizeof head) {
			close(fd);
			return -EIO;
		}
		for (c = 0; c <= bench.o.train_cols; c++) {
			for (i = 0; i < rows; i++) {
				if (c == 0) {
					int64_t dev = (int64_t)(i % 8);

					memcpy(&col[i], &dev, sizeof dev);
				} else {
					col[i] = (double)i * 0.001 + (double)(f * 100 + c);
				}
			}
			if (write(fd, col, rows * sizeof *col) != (ssize_t)(rows * sizeof *col)) {
				close(fd);
				return -EIO;
			}
		}
		if (close(fd) < 0)
			return -errno;
	}
	free(col);
	return 0;
}

struct train_arg {
	const struct contender *c;
	unsigned round;
};

struct train_state {
	struct opened o[MAX_TRAIN_FILES];
	char *buf;
	double *lat;
	unsigned *starts;
	size_t nbatches;
};

static int
train_setup(unsigned idx, void *argp, void **statep, struct child_report *rep)
{
	struct train_arg *a = argp;
	struct train_state *st = xcalloc(1, sizeof *st);
	unsigned f, nseq = bench.o.train_rows / bench.o.train_batch, e, b;
	uint64_t s = seed_for("train", a->round, idx);
	size_t i = 0;

	*statep = st;
	st->nbatches = (size_t)bench.o.train_epochs * nseq + bench.o.train_random;
	st->starts = xmalloc(st->nbatches * sizeof *st->starts);
	st->lat = xmalloc(st->nbatches * sizeof *st->lat);
	for (e = 0; e < bench.o.train_epochs; e++)
		for (b = 0; b < nseq; b++)
			st->starts[i++] = b * bench.o.train_batch;
	for (b = 0; b < bench.o.train_random; b++)
		st->starts[i++] =
			(unsigned)(rng_next(&s) % (bench.o.train_rows - bench.o.train_batch + 1));
	st->buf = xmalloc((size_t)bench.o.train_files * (bench.o.train_cols + 1) *
			  bench.o.train_batch * 8);
	st->o[0].s = a->c->session_open(a->c);
	if (st->o[0].s == NULL) {
		snprintf(rep->err, sizeof rep->err, "session: %s", strerror(errno));
		return neg_errno();
	}
	for (f = 0; f < bench.o.train_files; f++) {
		st->o[f].f = a->c->file_open(st->o[0].s, train_paths[f], train_file_size());
		if (st->o[f].f == NULL) {
			snprintf(rep->err, sizeof rep->err, "open %s: %s", train_paths[f], strerror(errno));
			return neg_errno();
		}
	}
	return 0;
}

static int
train_run(unsigned idx, void *argp, void **statep, struct child_report *rep)
{
	struct train_arg *a = argp;
	struct train_state *st = *statep;
	size_t colbytes = (size_t)bench.o.train_batch * 8, i, k;
	unsigned ncol = bench.o.train_cols + 1, f, c;
	struct bench_range *r = xcalloc((size_t)bench.o.train_files * ncol, sizeof *r);

	(void)idx;
	for (i = 0; i < st->nbatches; i++) {
		double t = now_s();
		char *dst = st->buf;

		/* One batch: batch rows of every column of every file, asked
		 * for at once (a contender that can batches them). */
		for (k = 0, f = 0; f < bench.o.train_files; f++) {
			for (c = 0; c < ncol; c++, k++) {
				r[k].file = st->o[f].f;
				r[k].off = train_col_off(c) + (uint64_t)st->starts[i] * 8;
				r[k].len = colbytes;
				r[k].buf = dst;
				dst += colbytes;
			}
		}
		if (contender_read_ranges(a->c, st->o[0].s, r, k) < 0) {
			snprintf(rep->err, sizeof rep->err, "read: %s", strerror(errno));
			free(r);
			return neg_errno();
		}
		rep->bytes += (uint64_t)k * colbytes;
		st->lat[i] = (now_s() - t) * 1e6;
	}
	free(r);
	rep->ops = st->nbatches;
	sort_doubles(st->lat, st->nbatches);
	rep->lat_p50 = percentile(st->lat, st->nbatches, 50);
	rep->lat_p99 = percentile(st->lat, st->nbatches, 99);
	return 0;
}

static int
train_teardown(unsigned idx, void *argp, void **statep, struct child_report *rep)
{
	struct train_arg *a = argp;
	struct train_state *st = *statep;
	unsigned f;

	(void)idx;
	(void)rep;
	if (st == NULL)
		return 0;
	for (f = 0; f < bench.o.train_files; f++)
		if (st->o[f].f != NULL)
			a->c->file_close(st->o[f].f);
	if (st->o[0].s != NULL)
		a->c->session_close(st->o[0].s);
	return 0;
}

int
wl_train(void)
{
	const char *W = "train";
	const struct contender *cs[BENCH_MAX_CONTENDERS];
	size_t nc = workload_contenders(W, W_TRAIN, cs);
	struct child_report reps[64];
	unsigned v, r;
	int rc;

	if (bench.o.train_files > MAX_TRAIN_FILES || bench.o.train_cols + 1 > 256 ||
	    bench.o.train_batch == 0 || bench.o.train_batch > bench.o.train_rows) {
		report_failure(W, "-", "bad training shape");
		return -1;
	}
	rc = train_make();
	if (rc < 0) {
		report_failure(W, "-", "cannot write the training files: %s", strerror(-rc));
		return -1;
	}
	report_section(W, "training-style column reads",
		       "  %u files x (1 int64 device + %u double columns) x %u rows (%u double columns in all); "
		       "a batch is %u rows of every column: %u reads of %u KiB, asked for at once.\n"
		       "  Per client and round: %u sequential epochs (%u batches) + %u random batches. "
		       "GB/s is the clients' total over the wall time; latency per batch.",
		       bench.o.train_files, bench.o.train_cols, bench.o.train_rows,
		       bench.o.train_files * bench.o.train_cols, bench.o.train_batch,
		       bench.o.train_files * (bench.o.train_cols + 1), bench.o.train_batch * 8 / 1024,
		       bench.o.train_epochs,
		       bench.o.train_epochs * (bench.o.train_rows / bench.o.train_batch),
		       bench.o.train_random);
	for (v = 0; v < bench.o.ntrain_clients; v++) {
		unsigned np = bench.o.train_clients[v];
		char variant[32];

		if (np == 0 || np > 64)
			continue;
		snprintf(variant, sizeof variant, "%u proc%s", np, np == 1 ? "" : "s");
		for (r = 0; r < bench.o.rounds; r++) {
			size_t k;

			bench_log("%s %s round %u/%u", W, variant, r + 1, bench.o.rounds);
			for (k = 0; k < nc; k++) {
				const struct contender *c = cs[bench_order(k, r, nc)];
				struct train_arg arg = { c, r };
				struct faults d0 = { 0 }, d1 = { 0 };
				struct children_sum s;
				double p50[64];
				struct row *row;

				if (c->flags & CF_HOTMAP)
					faults_pid(bench.hotmapd_pid, &d0);
				if (run_children(np, train_setup, train_run, train_teardown, &arg, reps) < 0) {
					report_failure(W, c->name, "cannot start clients: %s", strerror(errno));
					continue;
				}
				if (c->flags & CF_HOTMAP)
					faults_pid(bench.hotmapd_pid, &d1);
				children_sum(W, c->name, "client", reps, np, p50, &s);
				if (s.bad > 0 || s.t1 <= s.t0)
					continue;
				row = row_get(W, variant, c->name);
				row_add(row, "gb_s", "GB/s", (double)s.bytes / (s.t1 - s.t0) / 1e9);
				row_add(row, "batches_s", "batches/s", (double)s.ops / (s.t1 - s.t0));
				row_add(row, "p50_ms", "ms", median_of(p50, np) / 1e3);
				row_add(row, "p99_ms", "ms", s.p99 / 1e3);
				row_add(row, "minflt", "faults", (double)s.minflt);
				if (c->flags & CF_HOTMAP)
					row_add(row, "d_minflt", "faults", (double)(d1.minflt - d0.minflt));
				row_note(row, "%s", c->batch_note);
			}
		}
	}
	report_print_table(W);
	return 0;
}
