/* SPDX-License-Identifier: MIT */
/*
 * wl_procs.c - hmbench's workloads of several processes: short-lived processes
 * one after another, fresh processes reading the whole hot file, concurrent
 * processes sampling records, short-lived processes at once (dbprocs.c).
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

/* --- workload: short-lived processes -------------------------------------------------------- */

struct procs_arg {
	const struct contender *c;
	uint64_t seed;
};

static int
procs_run(unsigned idx, void *argp, void **statep, struct child_report *rep)
{
	struct procs_arg *a = argp;
	size_t len = (size_t)bench.o.proc_read_size;
	uint64_t s = a->seed;
	struct opened o;
	unsigned i;

	(void)idx;
	(void)statep;
	o.s = a->c->session_open(a->c);
	if (o.s == NULL) {
		snprintf(rep->err, sizeof rep->err, "session: %s", strerror(errno));
		return neg_errno();
	}
	o.f = a->c->file_open(o.s, bench.hot_path, bench.o.file_size);
	if (o.f == NULL) {
		snprintf(rep->err, sizeof rep->err, "open: %s", strerror(errno));
		a->c->session_close(o.s);
		return neg_errno();
	}
	for (i = 0; i < bench.o.proc_reads; i++) {
		struct bench_range r = { o.f, (rng_next(&s) % (bench.o.file_size / len)) * len, len, scratch };

		if (contender_read_ranges(a->c, o.s, &r, 1) < 0) {
			snprintf(rep->err, sizeof rep->err, "read: %s", strerror(errno));
			return -EIO;
		}
		rep->bytes += len;
	}
	a->c->file_close(o.f);
	a->c->session_close(o.s);
	return 0;
}

int
wl_procs(void)
{
	const char *W = "procs";
	const struct contender *cs[BENCH_MAX_CONTENDERS];
	size_t nc = workload_contenders(W, W_PROCS, cs);
	double *per = xmalloc(bench.o.procs * sizeof *per);
	unsigned r;
	char sz[32], sz2[32], variant[32];

	report_section(W, "short-lived processes",
		       "  %u processes one after another, each: connect, open the hot %s file, %u random "
		       "reads of %s, close, exit.\n"
		       "  proc/s = processes / their summed lifetimes (connect to close, fork and exit not "
		       "counted); wall_s includes fork and wait; minflt (client) and d_minflt (hotmapd) per process.",
		       bench.o.procs, human_size(sz, sizeof sz, bench.o.file_size), bench.o.proc_reads,
		       human_size(sz2, sizeof sz2, bench.o.proc_read_size));
	snprintf(variant, sizeof variant, "%u procs", bench.o.procs);
	if (bench.o.proc_read_size > scratch_len || bench.o.proc_read_size > bench.o.file_size) {
		report_failure(W, "-", "read size too large");
		free(per);
		return -1;
	}
	for (r = 0; r < bench.o.rounds; r++) {
		size_t k;

		bench_log("%s round %u/%u", W, r + 1, bench.o.rounds);
		for (k = 0; k < nc; k++) {
			const struct contender *c = cs[bench_order(k, r, nc)];
			double sum = 0, t0 = now_s(), wall;
			struct faults d0 = { 0 }, d1 = { 0 };
			long minflt = 0;
			struct row *row;
			unsigned p, bad = 0;

			if (c->flags & CF_HOTMAP)
				faults_pid(bench.hotmapd_pid, &d0);

			for (p = 0; p < bench.o.procs; p++) {
				struct procs_arg arg = { c, seed_for(W, r, p) };
				struct child_report rep;

				if (run_children(1, NULL, procs_run, NULL, &arg, &rep) < 0 || rep.status != 0) {
					if (bad++ == 0)
						report_failure(W, c->name, "process %u: %s", p, rep.err);
					continue;
				}
				per[p - bad] = (rep.t1 - rep.t0) * 1e3;
				sum += rep.t1 - rep.t0;
				minflt += rep.minflt;
			}
			wall = now_s() - t0;
			if (c->flags & CF_HOTMAP)
				faults_pid(bench.hotmapd_pid, &d1);
			if (bad > 0)
				continue;
			row = row_get(W, variant, c->name);
			row_add(row, "proc_s", "proc/s", (double)bench.o.procs / sum);
			sort_doubles(per, bench.o.procs);
			row_add(row, "p50_ms", "ms", percentile(per, bench.o.procs, 50));
			row_add(row, "p99_ms", "ms", percentile(per, bench.o.procs, 99));
			row_add(row, "wall_s", "s", wall);
			row_add(row, "minflt", "faults/proc", (double)minflt / bench.o.procs);
			if (c->flags & CF_HOTMAP)
				row_add(row, "d_minflt", "faults/proc",
					(double)(d1.minflt - d0.minflt) / bench.o.procs);
		}
	}
	report_print_table(W);
	free(per);
	return 0;
}

/* --- workload: fresh processes reading the whole hot file ------------------------------------ */

struct fresh_arg {
	const struct contender *c;
};

struct fresh_mem {
	long anon, file, shmem, pss;
};

static void
fresh_mem_now(struct fresh_mem *m)
{
	pid_t self = getpid();

	m->anon = proc_kib(self, "status", "RssAnon");
	m->file = proc_kib(self, "status", "RssFile");
	m->shmem = proc_kib(self, "status", "RssShmem");
	m->pss = proc_kib(self, "smaps_rollup", "Pss");
}

static int
fresh_setup(unsigned idx, void *argp, void **statep, struct child_report *rep)
{
	struct fresh_mem *m = xcalloc(1, sizeof *m);

	(void)idx;
	(void)argp;
	(void)rep;
	fresh_mem_now(m);	/* what the process had before: fork's share of ours */
	*statep = m;
	return 0;
}

static int
fresh_run(unsigned idx, void *argp, void **statep, struct child_report *rep)
{
	struct fresh_arg *a = argp;
	struct fresh_mem *m0 = *statep, m1;
	uint64_t off = 0, size = bench.o.file_size;
	struct opened o;

	(void)idx;
	o.s = a->c->session_open(a->c);
	if (o.s == NULL) {
		snprintf(rep->err, sizeof rep->err, "session: %s", strerror(errno));
		return neg_errno();
	}
	o.f = a->c->file_open(o.s, bench.hot_path, size);
	if (o.f == NULL) {
		snprintf(rep->err, sizeof rep->err, "open: %s", strerror(errno));
		a->c->session_close(o.s);
		return neg_errno();
	}
	while (off < size) {
		size_t len = size - off < MiB ? (size_t)(size - off) : MiB;
		ssize_t got = a->c->read(o.f, scratch, len, off);

		if (got != (ssize_t)len) {
			snprintf(rep->err, sizeof rep->err, "read at %llu: %s", (unsigned long long)off,
				 got < 0 ? strerror(errno) : "short");
			return -EIO;
		}
		off += len;
		rep->ops++;
	}
	rep->bytes = off;
	/* The memory at the end of the read, before anything is closed. */
	fresh_mem_now(&m1);
	rep->anon_kib = m1.anon - m0->anon;
	rep->file_kib = m1.file - m0->file;
	rep->shmem_kib = m1.shmem - m0->shmem;
	rep->pss_kib = m1.pss - m0->pss;
	a->c->file_close(o.f);
	a->c->session_close(o.s);
	return 0;
}

static int
fresh_teardown(unsigned idx, void *argp, void **statep, struct child_report *rep)
{
	(void)idx;
	(void)argp;
	(void)rep;
	free(*statep);
	*statep = NULL;
	return 0;
}

int
wl_fresh(void)
{
	const char *W = "fresh";
	const struct contender *cs[BENCH_MAX_CONTENDERS];
	size_t nc = workload_contenders(W, W_FRESH, cs);
	unsigned counts[2] = { 1, bench.o.fresh_procs }, v, r;
	struct child_report reps[64];
	char sz[32];

	report_section(W, "fresh processes reading the whole hot file",
		       "  A new process (fork of hmbench, run() timed from connect to the last read) reads "
		       "the whole hot %s file in 1 MiB reads (hm_pread with the contender's options; "
		       "pread for the reference), once alone and then %u at once.\n"
		       "  s_proc: median elapsed per process (lower is better; x pread = pread's / this "
		       "one's); gb_s: all the processes' bytes over the wall time.\n"
		       "  Memory the reading added to the processes, at the end of the read (before close), "
		       "summed over them, MiB: anon_mib, file_mib, shmem_mib from /proc/PID/status (RssAnon, "
		       "RssFile, RssShmem), pss_mib from smaps_rollup. RssFile is the page cache mapped "
		       "(one shared copy, whatever the number of processes); RssAnon/RssShmem are the "
		       "processes' own memory (a private copy would be there; shmem includes the shared region).",
		       human_size(sz, sizeof sz, bench.o.file_size), bench.o.fresh_procs);
	if (bench.o.fresh_procs == 0 || bench.o.fresh_procs > 64) {
		report_failure(W, "-", "--fresh-procs must be 1 to 64");
		return -1;
	}
	for (v = 0; v < 2; v++) {
		unsigned np = counts[v];
		char variant[32];

		if (v == 1 && np == 1)
			break;
		snprintf(variant, sizeof variant, "%u proc%s", np, np == 1 ? "" : "s");
		for (r = 0; r < bench.o.rounds; r++) {
			size_t k;

			bench_log("%s %s round %u/%u", W, variant, r + 1, bench.o.rounds);
			for (k = 0; k < nc; k++) {
				const struct contender *c = cs[bench_order(k, r, nc)];
				struct fresh_arg arg = { c };
				struct children_sum s;
				double per[64];
				long anon = 0, file = 0, shmem = 0, pss = 0;
				struct row *row;
				unsigned i;

				if (run_children(np, fresh_setup, fresh_run, fresh_teardown, &arg, reps) < 0) {
					report_failure(W, c->name, "cannot start processes: %s", strerror(errno));
					continue;
				}
				children_sum(W, c->name, "process", reps, np, NULL, &s);
				if (s.bad > 0 || s.t1 <= s.t0)
					continue;
				for (i = 0; i < np; i++) {
					per[i] = reps[i].t1 - reps[i].t0;
					anon += reps[i].anon_kib;
					file += reps[i].file_kib;
					shmem += reps[i].shmem_kib;
					pss += reps[i].pss_kib;
				}
				row = row_get(W, variant, c->name);
				row->higher_better = false;
				row_add(row, "s_proc", "s/process", median_of(per, np));
				row_add(row, "gb_s", "GB/s", (double)s.bytes / (s.t1 - s.t0) / 1e9);
				row_add(row, "anon_mib", "MiB", (double)anon / 1024);
				row_add(row, "file_mib", "MiB", (double)file / 1024);
				row_add(row, "shmem_mib", "MiB", (double)shmem / 1024);
				row_add(row, "pss_mib", "MiB", (double)pss / 1024);
			}
		}
	}
	report_print_table(W);
	return 0;
}

/* --- workload: concurrent processes sampling random records ------------------------------- */

struct sample_arg {
	const struct contender *c;
	unsigned round;
};

struct sample_state {
	struct opened o;
	uint64_t *offs;
	double *lat;
};

static int
sample_setup(unsigned idx, void *argp, void **statep, struct child_report *rep)
{
	struct sample_arg *a = argp;
	struct sample_state *st = xcalloc(1, sizeof *st);
	size_t len = (size_t)bench.o.proc_read_size;

	*statep = st;
	st->offs = xmalloc(bench.o.sample_reads * sizeof *st->offs);
	st->lat = xmalloc(bench.o.sample_reads * sizeof *st->lat);
	random_offsets(seed_for("sample", a->round, idx), st->offs, bench.o.sample_reads,
		       bench.o.file_size, len, len);
	st->o.s = a->c->session_open(a->c);
	if (st->o.s == NULL) {
		snprintf(rep->err, sizeof rep->err, "session: %s", strerror(errno));
		return neg_errno();
	}
	st->o.f = a->c->file_open(st->o.s, bench.hot_path, bench.o.file_size);
	if (st->o.f == NULL) {
		snprintf(rep->err, sizeof rep->err, "open: %s", strerror(errno));
		return neg_errno();
	}
	return 0;
}

static int
sample_run(unsigned idx, void *argp, void **statep, struct child_report *rep)
{
	struct sample_arg *a = argp;
	struct sample_state *st = *statep;
	size_t len = (size_t)bench.o.proc_read_size, i, n = bench.o.sample_reads;

	(void)idx;
	for (i = 0; i < n; i++) {
		struct bench_range rg = { st->o.f, st->offs[i], len, scratch };
		double t = now_s();

		if (contender_read_ranges(a->c, st->o.s, &rg, 1) < 0) {
			snprintf(rep->err, sizeof rep->err, "read: %s", strerror(errno));
			return neg_errno();
		}
		st->lat[i] = (now_s() - t) * 1e6;
		rep->bytes += len;
	}
	rep->ops = n;
	sort_doubles(st->lat, n);
	rep->lat_p50 = percentile(st->lat, n, 50);
	rep->lat_p99 = percentile(st->lat, n, 99);
	return 0;
}

static int
sample_teardown(unsigned idx, void *argp, void **statep, struct child_report *rep)
{
	struct sample_arg *a = argp;
	struct sample_state *st = *statep;

	(void)idx;
	(void)rep;
	if (st == NULL)
		return 0;
	if (st->o.f != NULL)
		a->c->file_close(st->o.f);
	if (st->o.s != NULL)
		a->c->session_close(st->o.s);
	free(st->offs);
	free(st->lat);
	free(st);
	*statep = NULL;
	return 0;
}

int
wl_sample(void)
{
	const char *W = "sample";
	const struct contender *cs[BENCH_MAX_CONTENDERS];
	size_t nc = workload_contenders(W, W_SAMPLE, cs);
	unsigned np = bench.o.sample_procs, r;
	struct child_report reps[64];
	char sz[32], sz2[32], variant[32];

	report_section(W, "concurrent processes sampling random records",
		       "  %u processes at once, each its own client (connection, open and offsets outside "
		       "the timing): %u reads of a random %s-aligned %s record of the hot %s file.\n"
		       "  GB/s and reads/s: all the processes' reads over the wall time from the first "
		       "start to the last end; latency per read (p50: median of the processes', p99: "
		       "the worst).",
		       np, bench.o.sample_reads, human_size(sz, sizeof sz, bench.o.proc_read_size),
		       human_size(sz, sizeof sz, bench.o.proc_read_size),
		       human_size(sz2, sizeof sz2, bench.o.file_size));
	if (np == 0 || np > 64 || bench.o.proc_read_size > scratch_len ||
	    bench.o.proc_read_size > bench.o.file_size) {
		report_failure(W, "-", "bad shape: 1 to 64 processes, records inside the file");
		return -1;
	}
	snprintf(variant, sizeof variant, "%u procs", np);
	for (r = 0; r < bench.o.rounds; r++) {
		size_t k;

		bench_log("%s round %u/%u", W, r + 1, bench.o.rounds);
		for (k = 0; k < nc; k++) {
			const struct contender *c = cs[bench_order(k, r, nc)];
			struct sample_arg arg = { c, r };
			struct children_sum s;
			double p50[64];
			struct row *row;

			if (run_children(np, sample_setup, sample_run, sample_teardown, &arg, reps) < 0) {
				report_failure(W, c->name, "cannot start processes: %s", strerror(errno));
				continue;
			}
			children_sum(W, c->name, "process", reps, np, p50, &s);
			if (s.bad > 0 || s.t1 <= s.t0)
				continue;
			row = row_get(W, variant, c->name);
			row_add(row, "gb_s", "GB/s", (double)s.bytes / (s.t1 - s.t0) / 1e9);
			row_add(row, "reads_s", "reads/s", (double)s.ops / (s.t1 - s.t0));
			row_add(row, "p50_us", "us", median_of(p50, np));
			row_add(row, "p99_us", "us", s.p99);
			row_add(row, "minflt", "faults/proc", (double)s.minflt / np);
		}
	}
	report_print_table(W);
	return 0;
}

/* --- workload: short-lived processes at once (dbprocs.c) --------------------------------------------- */

int
wl_dbprocs(void)
{
	const struct contender *cs[BENCH_MAX_CONTENDERS];
	size_t nc = workload_contenders("dbprocs", W_DBPROCS, cs);

	return dbprocs_run(cs, nc);
}

