/* SPDX-License-Identifier: MIT */
/*
 * hmbench.c - hotmap side by side with in-process reads, nginx and the
 * machine's own floors (see bench.h, bench/run and docs/performance.md).
 *
 * One run creates its data, starts hotmapd (and nginx when given), checks
 * that every contender reads the same bytes as pread, and then runs each
 * workload: round after round, every contender once per round in an order
 * that rotates, all on the same offsets.  Progress goes to stderr; the
 * report (how it was run, then one table per workload) to stdout and, with
 * --results, to CSV, JSON and text files.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "hotmap.h"
#include "hotmap_admin.h"

#define MAX_BATCH	256
#define MAX_TRAIN_FILES	64
#define KiB		1024ull
#define MiB		(1024ull * 1024)
#define GiB		(1024ull * 1024 * 1024)

struct bench_ctx bench;

static bool broken[BENCH_MAX_CONTENDERS];		/* contenders that failed verification */
static char *scratch;		/* read buffer of the parent */
static size_t scratch_len;
static unsigned cold_restarts;	/* hotmapd restarts needed to get a file cold */

/* --- small helpers ------------------------------------------------------------- */

static uint64_t
seed_for(const char *workload, unsigned round, unsigned extra)
{
	uint64_t h = bench.o.seed ^ 0x9e3779b97f4a7c15ULL;
	const char *p;

	for (p = workload; *p != '\0'; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	h ^= (uint64_t)round * 0xbf58476d1ce4e5b9ULL ^ (uint64_t)extra * 0x94d049bb133111ebULL;
	return h | 1;
}

static double
p_of(double *lat, size_t n, double p)
{
	return percentile(lat, n, p);
}

static const char *
human_size(char *buf, size_t len, uint64_t v)
{
	if (v >= GiB && v % GiB == 0)
		snprintf(buf, len, "%llu GiB", (unsigned long long)(v / GiB));
	else if (v >= MiB && v % MiB == 0)
		snprintf(buf, len, "%llu MiB", (unsigned long long)(v / MiB));
	else if (v >= KiB && v % KiB == 0)
		snprintf(buf, len, "%llu KiB", (unsigned long long)(v / KiB));
	else
		snprintf(buf, len, "%llu bytes", (unsigned long long)v);
	return buf;
}

/*
 * The contenders of a workload, in table order.  One that cannot run in
 * this run (nginx missing, hotmapd down) or failed verification is
 * reported once as skipped, with the reason.
 */
static size_t
workload_contenders(const char *workload, unsigned mask, const struct contender **out)
{
	size_t i, n = 0;

	for (i = 0; i < ncontenders; i++) {
		const struct contender *c = &contenders[i];
		char why[200] = "";

		if (!(c->workloads & mask) || !contender_selected(c))
			continue;
		if (!c->available(c, why, sizeof why)) {
			row_note(row_get(workload, "-", c->name), "skipped: %s", why);
			continue;
		}
		if (broken[i]) {
			row_note(row_get(workload, "-", c->name), "skipped: failed verification");
			continue;
		}
		out[n++] = c;
	}
	return n;
}

struct opened {
	void *s;
	void *f;
};

/* -errno of the failed call, never 0. */
static int
neg_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

static int
open_one(const struct contender *c, const char *path, uint64_t size, struct opened *o,
	 const char *workload)
{
	o->f = NULL;
	o->s = c->session_open(c);
	if (o->s == NULL) {
		report_failure(workload, c->name, "session: %s", strerror(errno));
		return -1;
	}
	o->f = c->file_open(o->s, path, size);
	if (o->f == NULL) {
		report_failure(workload, c->name, "open %s: %s", path, strerror(errno));
		c->session_close(o->s);
		o->s = NULL;
		return -1;
	}
	return 0;
}

static void
close_one(const struct contender *c, struct opened *o)
{
	if (o->f != NULL)
		c->file_close(o->f);
	if (o->s != NULL)
		c->session_close(o->s);
	o->f = o->s = NULL;
}

/* --- measuring ----------------------------------------------------------------- */

struct measure {
	double elapsed;
	double *lat;		/* us, per read or per batch */
	size_t nlat;
	struct faults cli, dmn;	/* deltas */
	uint64_t bytes;
};

/*
 * n reads of len at offs[i] in file files[fidx[i]] (fidx NULL: files[0]),
 * batch at a time, through session sess (NULL when batch is 1: the files
 * may then belong to different sessions); latency per read, or per batch.
 * Every read must return len bytes.
 */
static int
measure_reads(const struct contender *c, void *sess, void **files, const uint32_t *fidx,
	      const uint64_t *offs, size_t n, size_t len, size_t batch, struct measure *m)
{
	struct bench_range r[MAX_BATCH];
	struct faults c0, c1, d0 = { 0 }, d1 = { 0 };
	bool daemon = (c->flags & CF_HOTMAP) && bench.hotmapd_pid > 0;
	size_t i, j;
	double t0;

	if (batch == 0 || batch > MAX_BATCH || batch * len > scratch_len)
		return -EINVAL;
	m->nlat = 0;
	if (daemon)
		faults_pid(bench.hotmapd_pid, &d0);
	faults_self(&c0);
	t0 = now_s();
	for (i = 0; i < n; i += batch) {
		size_t k = n - i < batch ? n - i : batch;
		double a = now_s();

		for (j = 0; j < k; j++)
			r[j] = (struct bench_range){ files[fidx != NULL ? fidx[i + j] : 0], offs[i + j], len,
						     scratch + j * len };
		if (contender_read_ranges(c, sess, r, k) < 0)
			return neg_errno();
		m->lat[m->nlat++] = (now_s() - a) * 1e6;
	}
	m->elapsed = now_s() - t0;
	faults_self(&c1);
	if (daemon)
		faults_pid(bench.hotmapd_pid, &d1);
	m->cli.minflt = c1.minflt - c0.minflt;
	m->cli.majflt = c1.majflt - c0.majflt;
	m->dmn.minflt = d1.minflt - d0.minflt;
	m->dmn.majflt = d1.majflt - d0.majflt;
	m->bytes = (uint64_t)n * len;
	return 0;
}

/* Percentiles of the samples (sorted in place) into the row. */
static void
add_latency(struct row *row, double *lat, size_t n, bool pool)
{
	if (pool)
		row_add_latencies(row, lat, n);
	sort_doubles(lat, n);
	row_add(row, "p50_us", "us", p_of(lat, n, 50));
	row_add(row, "p99_us", "us", p_of(lat, n, 99));
}

static void
add_faults(struct row *row, const struct contender *c, const struct measure *m, bool major)
{
	row_add(row, "minflt", "faults", (double)m->cli.minflt);
	if (major)
		row_add(row, "majflt", "faults", (double)m->cli.majflt);
	if (c->flags & CF_HOTMAP) {
		row_add(row, "d_minflt", "faults", (double)m->dmn.minflt);
		if (major)
			row_add(row, "d_majflt", "faults", (double)m->dmn.majflt);
	}
}

static void
run_floor_rows(const char *workload, const char *variant, void **states, const uint64_t *offs,
	       size_t n, size_t len, size_t batch, uint64_t total, unsigned mask, double *lat)
{
	size_t i;

	for (i = 0; i < nfloors; i++) {
		const struct floor_ops *fl = &floors[i];
		struct floor_result res = { .lat_us = lat };
		struct row *row;
		int rc;

		if (!(fl->workloads & mask) || states[i] == NULL)
			continue;
		if (strcmp(fl->name, "floor-shm") == 0 && (offs != NULL || len != MiB))
			continue;
		rc = fl->run(states[i], offs, n, len, batch, total, &res);
		if (rc < 0) {
			report_failure(workload, fl->name, "%s", strerror(-rc));
			continue;
		}
		row = row_get(workload, variant, fl->name);
		if (mask & W_SEQ)
			row_add(row, "gb_s", "GB/s", (double)res.bytes / res.elapsed_s / 1e9);
		else
			row_add(row, "ops_s", "reads/s", (double)res.ops / res.elapsed_s);
		add_latency(row, res.lat_us, res.nlat, batch == 1 && !(mask & W_SEQ));
		if (batch > 1 && strcmp(fl->name, "floor-socket") == 0)
			row_note(row, "%zu requests pipelined per batch", batch);
	}
}

static void
floors_setup(unsigned mask, void **states)
{
	size_t i;

	for (i = 0; i < nfloors; i++) {
		states[i] = NULL;
		if (!(floors[i].workloads & mask))
			continue;
		if (bench.o.contenders != NULL && !list_has(bench.o.contenders, floors[i].name) &&
		    !list_has(bench.o.contenders, "floors"))
			continue;
		if (floors[i].setup(&states[i]) < 0) {
			report_failure("floors", floors[i].name, "setup failed");
			states[i] = NULL;
		}
	}
}

static void
floors_teardown(void **states)
{
	size_t i;

	/* the last started first: its child may hold the others' descriptors */
	for (i = nfloors; i-- > 0;)
		if (states[i] != NULL)
			floors[i].teardown(states[i]);
}

/* --- a contender's run in a process of its own ---------------------------------- */

/*
 * Every timed run of a contender that reads in this process (open, the
 * timed reads, close) runs in a forked child of its own: no contender
 * starts with another's mappings or touches (libhotmap keeps a closed
 * file's mapping for the next open while the process has a client, and
 * hotmap-touched populates it; a child maps anew), and each starts from
 * the same state as the others, the page cache as the workload left it.
 */
enum job_kind { JOB_READS, JOB_SUM, JOB_DEP, JOB_ISO_SCAN };

struct sum_state {
	uint64_t sum;
};

/* A B-tree-like walk: the next page is computed from the bytes of this one. */
struct dep_state {
	uint64_t h;		/* the last word taken, mixed with the step */
	uint64_t pages;
	uint64_t step;
};


struct scanner {
	pid_t pid;
	int ready_fd, go_fd, res_fd;
	volatile int *stop;
};

struct scan_report {
	int status;
	uint64_t bytes;
	double t0, t1;
};

static int scanner_start(const struct contender *c, struct scanner *sc);
static int scanner_wait_ready(struct scanner *sc);
static int scanner_finish(struct scanner *sc, struct scan_report *rep);

struct job {
	enum job_kind kind;
	const struct contender *c;
	const char *path;
	uint64_t size;
	const uint64_t *offs;	/* JOB_READS, JOB_ISO_SCAN */
	size_t n, len, batch;
	bool pretouch;		/* a pass before the timed one (cache, pre-touched) */
	const struct contender *scan_c;	/* JOB_ISO_SCAN: the scanning client */
	/* what the child found */
	char err[200];
	double res;		/* the file's residency before the timed pass */
	double elapsed;		/* JOB_SUM, JOB_DEP */
	struct faults cf;	/* JOB_SUM: the client's faults */
	struct scan_report srep;	/* JOB_ISO_SCAN */
	double over;		/* JOB_ISO_SCAN: the share of the reads' time the scan ran */
	union {
		struct sum_state sum;
		struct dep_state dep;
	} st;
	struct measure m;	/* its lat: shared memory too */
};

static int sum_words(const void *data, size_t len, void *arg);
static int dep_next(const void *data, size_t len, void *arg);

static int
job_main(void *arg)
{
	struct job *j = arg;
	const struct contender *c = j->c;
	struct opened o;
	size_t i;
	int rc = 0;

	o.f = NULL;
	o.s = c->session_open(c);
	if (o.s != NULL)
		o.f = c->file_open(o.s, j->path, j->size);
	if (o.f == NULL) {
		rc = neg_errno();
		snprintf(j->err, sizeof j->err, "%s %s: %s", o.s == NULL ? "session" : "open", j->path,
			 strerror(-rc));
		if (o.s != NULL)
			c->session_close(o.s);
		return rc;
	}
	switch (j->kind) {
	case JOB_READS:
		if (j->pretouch)
			rc = measure_reads(c, o.s, &o.f, NULL, j->offs, j->n, j->len, j->batch, &j->m);
		j->res = file_residency(j->path);
		if (rc == 0)
			rc = measure_reads(c, o.s, &o.f, NULL, j->offs, j->n, j->len, j->batch, &j->m);
		break;
	case JOB_SUM:
	case JOB_DEP: {
		double t0;

		faults_self(&j->cf);
		t0 = now_s();
		for (i = 0; i < j->n && rc == 0; i++) {
			double a = now_s();

			if (j->kind == JOB_SUM)
				rc = contender_consume(c, o.f, scratch, j->len, (uint64_t)i * j->len, sum_words,
						       &j->st.sum);
			else
				rc = contender_consume(c, o.f, scratch, j->len,
						       (j->st.dep.h % j->st.dep.pages) * j->len, dep_next,
						       &j->st.dep);
			j->m.lat[i] = (now_s() - a) * 1e6;
		}
		j->elapsed = now_s() - t0;
		{
			struct faults f1;

			faults_self(&f1);
			j->cf.minflt = f1.minflt - j->cf.minflt;
			j->cf.majflt = f1.majflt - j->cf.majflt;
		}
		if (rc < 0)
			rc = neg_errno();
		break;
	}
	case JOB_ISO_SCAN: {
		struct scanner sc;
		double h0, h1;

		rc = scanner_start(j->scan_c, &sc);
		if (rc < 0) {
			snprintf(j->err, sizeof j->err, "scanner: %s", strerror(-rc));
			break;
		}
		if (scanner_wait_ready(&sc) < 0) {
			scanner_finish(&sc, &j->srep);
			snprintf(j->err, sizeof j->err, "scanner did not start");
			rc = -EIO;
			break;
		}
		if (write(sc.go_fd, "g", 1) != 1)
			rc = -EIO;
		if (rc == 0)
			rc = measure_reads(c, o.s, &o.f, NULL, j->offs, j->n, j->len, 1, &j->m);
		h1 = now_s();
		h0 = h1 - j->m.elapsed;
		if (scanner_finish(&sc, &j->srep) < 0 || j->srep.status != 0) {
			snprintf(j->err, sizeof j->err, "scanner failed");
			rc = -EIO;
			break;
		}
		j->over = (j->srep.t1 < h1 ? j->srep.t1 : h1) - (j->srep.t0 > h0 ? j->srep.t0 : h0);
		j->over = j->m.elapsed > 0 ? j->over / j->m.elapsed : 0;
		break;
	}
	}
	if (rc < 0 && j->err[0] == '\0')
		snprintf(j->err, sizeof j->err, "%s", strerror(-rc));
	close_one(c, &o);
	return rc;
}

/* A job with room for nlat latencies, in memory the child shares. */
static struct job *
job_new(size_t nlat)
{
	struct job *j = shared_alloc(sizeof *j + nlat * sizeof(double));

	j->m.lat = (double *)(j + 1);
	return j;
}

static void
job_free(struct job *j, size_t nlat)
{
	shared_free(j, sizeof *j + nlat * sizeof(double));
}

/* j in a process of its own; 0, or -1 with the failure reported. */
static int
job_run(struct job *j, const char *workload, const char *what)
{
	double *lat = j->m.lat;
	int rc;

	j->err[0] = '\0';
	j->m = (struct measure){ .lat = lat };
	rc = in_fresh_process(job_main, j);
	if (rc < 0) {
		report_failure(workload, j->c->name, "%s%s%s", what, what[0] != '\0' ? ": " : "",
			       j->err[0] != '\0' ? j->err : strerror(-rc));
		return -1;
	}
	return 0;
}

/* --- cold and warm files --------------------------------------------------------- */

/*
 * A connection of hmbench's own (set-up, not a contender): the daemon's
 * tiers only, so that its reads do go through hotmapd (a pre-touch of its
 * mapping must not become the library's direct reads).
 */
static hm_client *
daemon_connect(void)
{
	struct hm_options o = HM_OPTIONS_INIT;

	o.direct = 0;
	return hm_connect_opts(bench.hotmap_sock, &o);
}

/*
 * hmbench holds a client of its own for the whole run, as a long-lived
 * program does: libhotmap keeps a closed file's mapping for the next open
 * while the process has a client, and unmaps it at the last hm_disconnect
 * (libhotmap(3)).  The timed runs do not use it: each runs in a child of
 * its own (job_run), where libhotmap maps the file anew, so that no
 * contender reads through pages another one (hotmap-touched) or an
 * earlier round populated; it serves hmbench's own connections (the
 * verification, the scale workload's).  It is let go of while a file is
 * made cold (make_cold): a mapped page cannot be dropped from the page
 * cache.
 */
static hm_client *keeper;

static void
keeper_hold(void)
{
	if (keeper == NULL && bench.hotmapd_pid > 0)
		keeper = daemon_connect();
}

static void
keeper_release(void)
{
	hm_disconnect(keeper);
	keeper = NULL;
}

/*
 * hotmapd keeps a file's mapping after the last handle closes, and a mapped
 * page cannot be dropped from the page cache.  Changing the file's mtime
 * makes the daemon's next open of it see a changed file: it retires the
 * old entry (unmapping it) and maps the file anew, unpopulated.
 */
static void
hotmap_forget(const char *path)
{
	hm_client *c;
	hm_file *f;

	file_bump_mtime(path);
	if (bench.hotmapd_pid <= 0)
		return;
	c = daemon_connect();
	if (c == NULL)
		return;
	f = hm_open(c, path, 0);
	if (f != NULL)
		hm_close(f);
	hm_disconnect(c);
}

/* Reads path through hotmapd once, so that its mapping is pre-touched.
 * Returns GB/s, or -1. */
static double
hotmap_pretouch(const char *path, uint64_t size)
{
	hm_client *c = daemon_connect();
	uint64_t off = 0;
	hm_file *f;
	double t;

	if (c == NULL)
		return -1;
	f = hm_open(c, path, 0);
	if (f == NULL) {
		hm_disconnect(c);
		return -1;
	}
	t = now_s();
	while (off < size) {
		ssize_t n = hm_pread(f, scratch, MiB, off);

		if (n <= 0)
			break;
		off += (uint64_t)n;
	}
	t = now_s() - t;
	hm_close(f);
	hm_disconnect(c);
	return off == size && t > 0 ? (double)off / t / 1e9 : -1;
}

/* Evicts path from the page cache; returns the residency left (0-1). */
static double
make_cold(const char *path)
{
	double res;

	keeper_release();	/* and with it this process's idle mappings */
	hotmap_forget(path);
	file_evict(path);
	res = file_residency(path);
	if (res > 0.01 && bench.hotmapd_pid > 0) {
		/* Something still maps it: start the daemon afresh. */
		bench_log("%s still %.1f%% resident after DONTNEED: restarting hotmapd", path, res * 100);
		cold_restarts++;
		if (hotmapd_restart() < 0)
			report_failure("cold", "hotmap", "hotmapd did not restart");
		file_evict(path);
		res = file_residency(path);
	}
	keeper_hold();
	return res;
}

static double
make_warm(const char *path)
{
	double res = file_residency(path);

	if (res < 0.999) {
		file_warm(path);
		res = file_residency(path);
	}
	return res;
}

/* --- workload: random 4 KiB reads -------------------------------------------------- */

static int
wl_rand(void)
{
	const char *W = "rand4k";
	const struct contender *cs[BENCH_MAX_CONTENDERS];
	size_t nc = workload_contenders(W, W_RAND, cs), n = bench.o.rand_ops, len = 4096;
	uint64_t *offs = xmalloc(n * sizeof *offs);
	double *lat = xmalloc(n * sizeof *lat);
	struct job *J = job_new(n);
	void *fstates[8];
	unsigned v, r, nv = 1 + bench.o.nbatches;
	char sz[32];

	report_section(W, "random 4 KiB reads of a hot file",
		       "  %s file, in the page cache and in hotmapd's pre-touched mapping; %zu reads per "
		       "round and variant at 4 KiB-aligned offsets, the same for every contender in a round.\n"
		       "  Batch variants: latency is per batch; contenders without a batch API read one "
		       "range after another (see notes).",
		       human_size(sz, sizeof sz, bench.o.file_size), n);
	floors_setup(W_RAND, fstates);
	for (v = 0; v < nv; v++) {
		size_t batch = v == 0 ? 1 : bench.o.batches[v - 1];
		char variant[32];

		if (batch > MAX_BATCH)
			continue;
		if (batch == 1)
			snprintf(variant, sizeof variant, "single");
		else
			snprintf(variant, sizeof variant, "batch%zu", batch);
		for (r = 0; r < bench.o.rounds; r++) {
			size_t k;

			bench_log("%s %s round %u/%u", W, variant, r + 1, bench.o.rounds);
			random_offsets(seed_for(W, r, 0), offs, n, bench.o.file_size, len, 4096);
			for (k = 0; k < nc; k++) {
				const struct contender *c = cs[(k + r) % nc];
				struct measure m;
				struct row *row;

				if (batch == 1 && (c->flags & CF_BATCH_ONLY))
					continue;
				*J = (struct job){ .kind = JOB_READS, .c = c, .path = bench.hot_path,
						   .size = bench.o.file_size, .offs = offs, .n = n, .len = len,
						   .batch = batch, .m.lat = J->m.lat };
				if (job_run(J, W, variant) < 0)
					continue;
				m = J->m;
				row = row_get(W, variant, c->name);
				row_add(row, "ops_s", "reads/s", (double)n / m.elapsed);
				add_latency(row, m.lat, m.nlat, batch == 1);
				add_faults(row, c, &m, true);
				if (batch > 1)
					row_note(row, "%s", c->batch_note);
			}
			run_floor_rows(W, variant, fstates, offs, n, len, batch, 0, W_RAND, lat);
		}
	}
	report_print_table(W);
	floors_teardown(fstates);
	job_free(J, n);
	free(offs);
	free(lat);
	return 0;
}

/* --- workload: sequential 1 MiB reads ----------------------------------------------- */

static int
wl_seq(void)
{
	const char *W = "seq1m";
	const struct contender *cs[BENCH_MAX_CONTENDERS];
	size_t nc = workload_contenders(W, W_SEQ, cs), len = MiB, i;
	uint64_t total = bench.o.seq_bytes;
	size_t n;
	uint64_t *offs;
	double *lat;
	struct job *J;
	void *fstates[8];
	unsigned r;
	char sz[32];

	if (total > bench.o.file_size)
		total = bench.o.file_size;
	n = (size_t)(total / len);
	if (n == 0) {
		report_failure(W, "-", "the file is smaller than 1 MiB");
		return -1;
	}
	offs = xmalloc(n * sizeof *offs);
	lat = xmalloc((n + 8) * sizeof *lat);
	J = job_new(n + 8);
	for (i = 0; i < n; i++)
		offs[i] = (uint64_t)i * len;
	report_section(W, "sequential 1 MiB reads of the hot file",
		       "  %s read from offset 0 in 1 MiB reads, per contender and round; the file is hot "
		       "(page cache, hotmapd's mapping).\n"
		       "  mmap-new maps the file anew each round, so its pass faults every page in; "
		       "floors copy 1 MiB chunks.",
		       human_size(sz, sizeof sz, (uint64_t)n * len));
	floors_setup(W_SEQ, fstates);
	for (r = 0; r < bench.o.rounds; r++) {
		size_t k;

		bench_log("%s round %u/%u", W, r + 1, bench.o.rounds);
		for (k = 0; k < nc; k++) {
			const struct contender *c = cs[(k + r) % nc];
			struct measure m;
			struct row *row;

			*J = (struct job){ .kind = JOB_READS, .c = c, .path = bench.hot_path,
					   .size = bench.o.file_size, .offs = offs, .n = n, .len = len, .batch = 1,
					   .m.lat = J->m.lat };
			if (job_run(J, W, "") < 0)
				continue;
			m = J->m;
			row = row_get(W, "1MiB", c->name);
			row_add(row, "gb_s", "GB/s", (double)m.bytes / m.elapsed / 1e9);
			add_latency(row, m.lat, m.nlat, false);
			add_faults(row, c, &m, true);
		}
		run_floor_rows(W, "1MiB", fstates, NULL, 0, len, 1, (uint64_t)n * len, W_SEQ, lat);
	}
	floors_teardown(fstates);
	report_print_table(W);
	job_free(J, n + 8);
	free(offs);
	free(lat);
	return 0;
}

/* --- workload: cache states ----------------------------------------------------------- */

enum cache_state { CACHE_COLD, CACHE_WARM, CACHE_TOUCHED };

static const char *const cache_state_names[] = { "cold", "warm-new-map", "pre-touched" };

static bool
cache_applies(const struct contender *c, enum cache_state st)
{
	switch (st) {
	case CACHE_COLD:
	case CACHE_WARM:
		/* a pre-touched mapping of a cold file reads it at open */
		return !(c->flags & CF_TOUCHED);
	case CACHE_TOUCHED:
		/* the reference, and those that keep a mapping to pre-touch */
		return (c->flags & (CF_REFERENCE | CF_TOUCHED)) ||
		       ((c->flags & CF_HOTMAP) && c->hm_flags == 0);
	}
	return false;
}

static int
wl_cache(void)
{
	const char *W = "cache";
	const struct contender *cs[BENCH_MAX_CONTENDERS];
	size_t nc = workload_contenders(W, W_CACHE, cs), len = 64 * KiB, n, i;
	uint64_t *offs;
	struct job *J;
	unsigned r;
	char sz[32];

	n = (size_t)(bench.o.scan_size / len);
	offs = xmalloc(n * sizeof *offs);
	J = job_new(n);
	for (i = 0; i < n; i++)
		offs[i] = (uint64_t)i * len;
	for (r = 0; r < bench.o.rounds; r++) {
		enum cache_state st;

		for (st = CACHE_COLD; st <= CACHE_TOUCHED; st++) {
			size_t k;

			bench_log("%s %s round %u/%u", W, cache_state_names[st], r + 1, bench.o.rounds);
			for (k = 0; k < nc; k++) {
				const struct contender *c = cs[(k + r) % nc];
				struct measure m;
				struct row *row;
				double res;

				if (!cache_applies(c, st))
					continue;
				if (st == CACHE_COLD) {
					make_cold(bench.scan_path);
				} else {
					if (st == CACHE_WARM)
						hotmap_forget(bench.scan_path);	/* a new mapping */
					make_warm(bench.scan_path);
				}
				/* pre-touched, hotmap: a pass of the contender's own
				 * populates hotmapd's mapping first (in the same
				 * process: the pass is its own); res is the residency
				 * the timed pass starts from */
				*J = (struct job){ .kind = JOB_READS, .c = c, .path = bench.scan_path,
						   .size = bench.o.scan_size, .offs = offs, .n = n, .len = len,
						   .batch = 1,
						   .pretouch = st == CACHE_TOUCHED && (c->flags & CF_HOTMAP),
						   .m.lat = J->m.lat };
				if (job_run(J, W, cache_state_names[st]) < 0)
					continue;
				m = J->m;
				res = J->res;
				row = row_get(W, cache_state_names[st], c->name);
				row_add(row, "gb_s", "GB/s", (double)m.bytes / m.elapsed / 1e9);
				add_faults(row, c, &m, true);
				row_add(row, "resident_pct", "%", res * 100);
				if (st == CACHE_TOUCHED && (c->flags & CF_REFERENCE))
					row_note(row, "no mapping: same as warm");
				else if (st == CACHE_WARM && (c->flags & CF_HOTMAP) && c->hm_flags == 0)
					row_note(row, "hotmapd maps the file anew: its faults are d_minflt");
			}
		}
	}
	report_section(W, "cache states: sequential 64 KiB scan",
		       "  %s scan file read from start to end in 64 KiB reads.\n"
		       "  cold: posix_fadvise(POSIX_FADV_DONTNEED) after hotmapd was made to drop its mapping "
		       "(the file's mtime changes, so the daemon's next open retires the cached entry); "
		       "residency checked with mincore before each run (resident_pct); hotmapd restarts "
		       "needed: %u.\n"
		       "  warm-new-map: file in the page cache, a new mapping (mmap-new; hotmapd maps "
		       "anew); pre-touched: mapping populated before the timed pass.\n"
		       "  minflt/majflt: the client's page faults (getrusage); d_minflt/d_majflt: "
		       "hotmapd's (/proc/PID/stat).",
		       human_size(sz, sizeof sz, (uint64_t)n * len), cold_restarts);
	report_print_table(W);
	job_free(J, n);
	free(offs);
	return 0;
}

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

static int
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
				const struct contender *c = cs[(k + r) % nc];
				struct train_arg arg = { c, r };
				struct faults d0 = { 0 }, d1 = { 0 };
				double t0 = 1e300, t1 = 0, p50[64], p99 = 0;
				uint64_t bytes = 0, batches = 0;
				long minflt = 0;
				struct row *row;
				unsigned i, bad = 0;

				if (c->flags & CF_HOTMAP)
					faults_pid(bench.hotmapd_pid, &d0);
				if (run_children(np, train_setup, train_run, train_teardown, &arg, reps) < 0) {
					report_failure(W, c->name, "cannot start clients: %s", strerror(errno));
					continue;
				}
				if (c->flags & CF_HOTMAP)
					faults_pid(bench.hotmapd_pid, &d1);
				for (i = 0; i < np; i++) {
					if (reps[i].status != 0) {
						report_failure(W, c->name, "client %u: %s", i, reps[i].err);
						bad++;
						continue;
					}
					if (reps[i].t0 < t0)
						t0 = reps[i].t0;
					if (reps[i].t1 > t1)
						t1 = reps[i].t1;
					bytes += reps[i].bytes;
					batches += reps[i].ops;
					minflt += reps[i].minflt;
					p50[i - bad] = reps[i].lat_p50;
					if (reps[i].lat_p99 > p99)
						p99 = reps[i].lat_p99;
				}
				if (bad > 0 || t1 <= t0)
					continue;
				row = row_get(W, variant, c->name);
				row_add(row, "gb_s", "GB/s", (double)bytes / (t1 - t0) / 1e9);
				row_add(row, "batches_s", "batches/s", (double)batches / (t1 - t0));
				row_add(row, "p50_ms", "ms", median_of(p50, np) / 1e3);
				row_add(row, "p99_ms", "ms", p99 / 1e3);
				row_add(row, "minflt", "faults", (double)minflt);
				if (c->flags & CF_HOTMAP)
					row_add(row, "d_minflt", "faults", (double)(d1.minflt - d0.minflt));
				row_note(row, "%s", c->batch_note);
			}
		}
	}
	report_print_table(W);
	return 0;
}

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

static int
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
			const struct contender *c = cs[(k + r) % nc];
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

/* --- workload: isolation ----------------------------------------------------------------------- */

/* The other client: scans the cold file in 1 MiB reads until told to stop. */
static int
scanner_start(const struct contender *c, struct scanner *sc)
{
	int ready[2], go[2], res[2];

	if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0 || pipe2(res, O_CLOEXEC) < 0)
		return -errno;
	sc->stop = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sc->stop == MAP_FAILED)
		return -errno;
	*sc->stop = 0;
	fflush(stdout);
	fflush(stderr);
	sc->pid = fork();
	if (sc->pid < 0)
		return -errno;
	if (sc->pid == 0) {
		struct scan_report rep = { 0 };
		size_t len = MiB;
		struct opened o;
		char ch = 0;

		bench_is_child = true;
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		o.s = c->session_open(c);
		o.f = o.s != NULL ? c->file_open(o.s, bench.scan_path, bench.o.scan_size) : NULL;
		ch = o.f != NULL ? 'r' : 'e';
		if (write(ready[1], &ch, 1) != 1 || ch == 'e')
			_exit(1);
		if (read(go[0], &ch, 1) != 1)
			_exit(1);
		rep.t0 = now_s();
		while (!*sc->stop && rep.bytes + len <= bench.o.scan_size) {
			struct bench_range rg = { o.f, rep.bytes, len, scratch };

			if (contender_read_ranges(c, o.s, &rg, 1) < 0) {
				rep.status = EIO;
				break;
			}
			rep.bytes += len;
		}
		rep.t1 = now_s();
		if (write(res[1], &rep, sizeof rep) != (ssize_t)sizeof rep)
			_exit(1);
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	close(res[1]);
	sc->ready_fd = ready[0];
	sc->go_fd = go[1];
	sc->res_fd = res[0];
	return 0;
}

static int
scanner_wait_ready(struct scanner *sc)
{
	char ch;

	if (read(sc->ready_fd, &ch, 1) != 1 || ch != 'r')
		return -EIO;
	return 0;
}

static int
scanner_finish(struct scanner *sc, struct scan_report *rep)
{
	int rc = 0;

	*sc->stop = 1;
	close(sc->go_fd);	/* a scanner still waiting for go gives up */
	if (read(sc->res_fd, rep, sizeof *rep) != (ssize_t)sizeof *rep)
		rc = -EIO;
	close(sc->res_fd);
	close(sc->ready_fd);
	waitpid(sc->pid, NULL, 0);
	munmap((void *)sc->stop, 4096);
	return rc;
}

static int
wl_iso(void)
{
	const char *W = "iso";
	const struct contender *cs[BENCH_MAX_CONTENDERS];
	size_t nc = workload_contenders(W, W_ISO, cs), n = bench.o.iso_ops, len = 4096;
	uint64_t *offs = xmalloc(n * sizeof *offs);
	struct job *J = job_new(n);
	unsigned r;
	char sz[32], sz2[32];

	for (r = 0; r < bench.o.rounds; r++) {
		size_t k;

		bench_log("%s round %u/%u", W, r + 1, bench.o.rounds);
		random_offsets(seed_for(W, r, 0), offs, n, bench.o.file_size, len, 4096);
		for (k = 0; k < nc; k++) {
			const struct contender *c = cs[(k + r) % nc];
			/* In-process contenders: the other process reads with pread. */
			const struct contender *sc_c =
				(c->flags & (CF_HOTMAP | CF_NGINX)) ? c : contender_find("pread");
			struct measure m;
			struct row *row;
			double res;
			unsigned restarts;

			/* alone */
			*J = (struct job){ .kind = JOB_READS, .c = c, .path = bench.hot_path,
					   .size = bench.o.file_size, .offs = offs, .n = n, .len = len, .batch = 1,
					   .m.lat = J->m.lat };
			if (job_run(J, W, "alone") < 0)
				continue;
			m = J->m;
			row = row_get(W, "alone", c->name);
			row_add(row, "ops_s", "reads/s", (double)n / m.elapsed);
			add_latency(row, m.lat, m.nlat, true);

			/* while another client scans a cold file */
			restarts = cold_restarts;
			res = make_cold(bench.scan_path);
			if (cold_restarts != restarts)
				hotmap_pretouch(bench.hot_path, bench.o.file_size);
			*J = (struct job){ .kind = JOB_ISO_SCAN, .c = c, .path = bench.hot_path,
					   .size = bench.o.file_size, .offs = offs, .n = n, .len = len, .batch = 1,
					   .scan_c = sc_c, .m.lat = J->m.lat };
			if (job_run(J, W, "with scan") < 0)
				continue;
			m = J->m;
			row = row_get(W, "with-cold-scan", c->name);
			row_add(row, "ops_s", "reads/s", (double)n / m.elapsed);
			add_latency(row, m.lat, m.nlat, true);
			row_add(row, "scan_mb_s", "MB/s",
				J->srep.t1 > J->srep.t0 ?
				(double)J->srep.bytes / (J->srep.t1 - J->srep.t0) / 1e6 : 0);
			row_add(row, "overlap_pct", "%", J->over < 0 ? 0 : J->over > 1 ? 100 : J->over * 100);
			row_add(row, "resident_pct", "%", res * 100);
			if (sc_c != c)
				row_note(row, "the scanner is a process reading with pread");
		}
	}
	report_section(W, "isolation: one client's hot 4 KiB reads, alone and beside a cold scan",
		       "  %zu random 4 KiB reads of the hot %s file per round; with-cold-scan: another "
		       "client of the same server reads the evicted %s scan file in 1 MiB reads meanwhile.\n"
		       "  overlap_pct: share of the hot reads' time the scan was running; resident_pct: "
		       "scan file residency at the start (mincore).",
		       n, human_size(sz, sizeof sz, bench.o.file_size),
		       human_size(sz2, sizeof sz2, bench.o.scan_size));
	report_print_table(W);
	job_free(J, n);
	free(offs);
	return 0;
}

/* --- workload: scale ------------------------------------------------------------------------------ */

struct scale_state {
	const struct contender *c;
	void *s;
	void **files;
	unsigned nfiles;
};

static void
scale_record_memory(struct row *row, const struct contender *c)
{
	long anon = -1, pte = -1;

	if ((c->flags & CF_HOTMAP) && bench.hotmapd_pid > 0) {
		long shm = proc_status_kib(bench.hotmapd_pid, "RssShmem");

		anon = proc_status_kib(bench.hotmapd_pid, "RssAnon");
		pte = proc_status_kib(bench.hotmapd_pid, "VmPTE");
		if (shm >= 0)
			row_add(row, "shmem_mib", "MiB", (double)shm / 1024);
	} else if (c->flags & CF_NGINX) {
		anon = nginx_status_kib("RssAnon");
		pte = nginx_status_kib("VmPTE");
	}
	if (anon >= 0)
		row_add(row, "rss_anon_mib", "MiB", (double)anon / 1024);
	if (pte >= 0)
		row_add(row, "pte_mib", "MiB", (double)pte / 1024);
}

static int
wl_scale(void)
{
	const char *W = "scale";
	const struct contender *cs[BENCH_MAX_CONTENDERS];
	size_t nc, n = bench.o.scale_ops, len = 4096, k;
	unsigned maxf = 0, i, p, r, C = bench.o.scale_clients;
	char (*paths)[PATH_MAX];
	char dir[PATH_MAX + 8], sz[32];
	struct scale_state st[BENCH_MAX_CONTENDERS];
	uint64_t *offs = xmalloc(n * sizeof *offs), fsize = bench.o.scale_file_size;
	uint32_t *fidx = xmalloc(n * sizeof *fidx);
	double *lat = xmalloc(n * sizeof *lat);
	long idle_anon;
	double t;

	for (p = 0; p < bench.o.nscale_files; p++)
		if (bench.o.scale_files[p] > maxf)
			maxf = bench.o.scale_files[p];
	if (fsize < len)
		fsize = len;
	snprintf(dir, sizeof dir, "%s/scale", bench.data_dir);
	if (mkdir_p(dir, 0755) < 0) {
		report_failure(W, "-", "mkdir %s: %s", dir, strerror(errno));
		return -1;
	}
	bench_log("%s: writing %u files of %llu bytes", W, maxf, (unsigned long long)fsize);
	paths = xcalloc(maxf > C ? maxf : C, PATH_MAX);
	t = now_s();
	for (i = 0; i < maxf; i++) {
		xsnprintf(paths[i], PATH_MAX, "%s/f%05u", dir, i);
		if (write_file(paths[i], fsize, seed_for(W, 0, i)) < 0) {
			report_failure(W, "-", "cannot write %s", paths[i]);
			return -1;
		}
	}
	bench_log("%s: files written in %.1f s", W, now_s() - t);
	/* A fresh daemon: its memory at each point is then the cost of the
	 * files and clients. */
	if (bench.hotmapd_pid > 0 && hotmapd_restart() < 0) {
		report_failure(W, "hotmap", "hotmapd did not restart");
		return -1;
	}
	idle_anon = bench.hotmapd_pid > 0 ? proc_status_kib(bench.hotmapd_pid, "RssAnon") : -1;

	nc = workload_contenders(W, W_SCALE, cs);
	memset(st, 0, sizeof st);
	for (k = 0; k < nc; k++) {
		st[k].c = cs[k];
		st[k].files = xcalloc(maxf, sizeof *st[k].files);
		st[k].s = cs[k]->session_open(cs[k]);
		if (st[k].s == NULL)
			report_failure(W, cs[k]->name, "session: %s", strerror(errno));
	}
	for (p = 0; p < bench.o.nscale_files; p++) {
		unsigned N = bench.o.scale_files[p];
		char variant[32];

		snprintf(variant, sizeof variant, "%u files", N);
		bench_log("%s: opening %u files", W, N);
		for (k = 0; k < nc; k++) {
			struct scale_state *s = &st[k];

			if (s->s == NULL)
				continue;
			while (s->nfiles < N) {
				void *f = s->c->file_open(s->s, paths[s->nfiles], fsize);

				if (f == NULL) {
					report_failure(W, s->c->name, "open file %u: %s", s->nfiles, strerror(errno));
					s->c->session_close(s->s);
					s->s = NULL;
					break;
				}
				/* touch it once: hotmapd maps it, nginx caches it */
				if (s->c->read(f, scratch, len, 0) != (ssize_t)len)
					report_failure(W, s->c->name, "first read of file %u", s->nfiles);
				s->files[s->nfiles++] = f;
			}
		}
		for (r = 0; r < bench.o.rounds; r++) {
			uint64_t sd = seed_for(W, r, N);

			bench_log("%s %s round %u/%u", W, variant, r + 1, bench.o.rounds);
			for (i = 0; i < n; i++) {
				fidx[i] = (uint32_t)(rng_next(&sd) % N);
				offs[i] = (rng_next(&sd) % (fsize / len)) * len;
			}
			for (k = 0; k < nc; k++) {
				struct scale_state *s = &st[(k + r) % nc];
				struct measure m = { .lat = lat };
				struct row *row;
				int rc;

				if (s->s == NULL || s->nfiles < N)
					continue;
				rc = measure_reads(s->c, NULL, s->files, fidx, offs, n, len, 1, &m);
				if (rc < 0) {
					report_failure(W, s->c->name, "%s: %s", variant, strerror(-rc));
					continue;
				}
				row = row_get(W, variant, s->c->name);
				row_add(row, "ops_s", "reads/s", (double)n / m.elapsed);
				add_latency(row, m.lat, m.nlat, false);
				scale_record_memory(row, s->c);
			}
		}
	}
	for (k = 0; k < nc; k++) {
		struct scale_state *s = &st[k];

		for (i = 0; i < s->nfiles; i++)
			s->c->file_close(s->files[i]);
		if (s->s != NULL)
			s->c->session_close(s->s);
		s->nfiles = 0;
		s->s = NULL;
	}

	/* Many clients: C connections, one file each, reads spread over them. */
	if (C > 0 && maxf > 0) {
		char variant[32];

		snprintf(variant, sizeof variant, "%u clients", C);
		nc = workload_contenders(W, W_SCALE_CLIENTS, cs);
		for (k = 0; k < nc; k++) {
			void **sess = xcalloc(C, sizeof *sess), **files = xcalloc(C, sizeof *files);
			unsigned opened = 0;

			bench_log("%s: %s connecting %u clients", W, cs[k]->name, C);
			for (i = 0; i < C; i++) {
				sess[i] = cs[k]->session_open(cs[k]);
				if (sess[i] == NULL) {
					report_failure(W, cs[k]->name, "client %u: %s", i, strerror(errno));
					break;
				}
				files[i] = cs[k]->file_open(sess[i], paths[i % maxf], fsize);
				if (files[i] == NULL) {
					report_failure(W, cs[k]->name, "client %u open: %s", i, strerror(errno));
					cs[k]->session_close(sess[i]);
					break;
				}
				opened++;
			}
			for (r = 0; opened == C && r < bench.o.rounds; r++) {
				uint64_t sd = seed_for(W, r, C + 7);
				struct measure m = { .lat = lat };
				struct row *row;
				int rc;

				for (i = 0; i < n; i++) {
					fidx[i] = (uint32_t)(rng_next(&sd) % C);
					offs[i] = (rng_next(&sd) % (fsize / len)) * len;
				}
				rc = measure_reads(cs[k], NULL, files, fidx, offs, n, len, 1, &m);
				if (rc < 0) {
					report_failure(W, cs[k]->name, "%s: %s", variant, strerror(-rc));
					break;
				}
				row = row_get(W, variant, cs[k]->name);
				row_add(row, "ops_s", "reads/s", (double)n / m.elapsed);
				add_latency(row, m.lat, m.nlat, false);
				scale_record_memory(row, cs[k]);
				row_note(row, "one process, a random connection per read");
			}
			for (i = 0; i < opened; i++) {
				cs[k]->file_close(files[i]);
				cs[k]->session_close(sess[i]);
			}
			free(sess);
			free(files);
		}
	}
	report_section(W, "scale: files open in the server, clients connected",
		       "  Random 4 KiB reads spread over N open %s files (%zu per round), then over C "
		       "connections of one process with one file each.\n"
		       "  pread holds N descriptors in-process. hotmapd was restarted for this workload "
		       "(RssAnon idle: %.1f MiB); rss_anon_mib/pte_mib/shmem_mib: hotmapd's RssAnon, page "
		       "tables and RssShmem (clients' shared regions it maps; nginx: master and workers summed) "
		       "after the round.",
		       human_size(sz, sizeof sz, fsize), n, idle_anon >= 0 ? (double)idle_anon / 1024 : -1.0);
	report_print_table(W);
	for (k = 0; k < BENCH_MAX_CONTENDERS; k++)
		free(st[k].files);
	free(paths);
	free(offs);
	free(fidx);
	free(lat);
	return 0;
}

/* --- workload: sequential 1 MiB consumed in place ------------------------------------ */

/* Every byte of the range read: a sum of its 64-bit words. */
static int
sum_words(const void *data, size_t len, void *arg)
{
	struct sum_state *st = arg;
	const unsigned char *p = data;
	uint64_t s0 = 0, s1 = 0, w0, w1;
	size_t i;

	for (i = 0; i + 16 <= len; i += 16) {
		memcpy(&w0, p + i, 8);
		memcpy(&w1, p + i + 8, 8);
		s0 += w0;
		s1 += w1;
	}
	for (; i < len; i++)
		s0 += p[i];
	st->sum += s0 + s1;
	return 0;
}

static int
wl_viewsum(void)
{
	const char *W = "viewsum";
	const struct contender *cs[BENCH_MAX_CONTENDERS];
	size_t nc = workload_contenders(W, W_VIEWSUM, cs), len = MiB;
	uint64_t total = bench.o.seq_bytes;
	struct job *J;
	size_t n;
	unsigned r;
	char sz[32];

	if (total > bench.o.file_size)
		total = bench.o.file_size;
	n = (size_t)(total / len);
	if (n == 0) {
		report_failure(W, "-", "the file is smaller than 1 MiB");
		return -1;
	}
	J = job_new(n);
	report_section(W, "sequential 1 MiB consumed in place: every byte read (summed)",
		       "  %s of the hot file from offset 0 in 1 MiB ranges, and every range summed as "
		       "64-bit words (the same loop for all), per contender and round.\n"
		       "  pread and hotmap/hotmap-daemon copy into a 1 MiB buffer, then sum it; hotmap-view "
		       "sums an hm_view_range in place (the client's own mapping of the file on the direct "
		       "tier; the shared region for hotmap-daemon-view) and releases it; mmap-touched sums "
		       "its pre-touched mapping.\n"
		       "  Every contender's sum must equal pread's; latency is per 1 MiB range.",
		       human_size(sz, sizeof sz, (uint64_t)n * len));
	for (r = 0; r < bench.o.rounds; r++) {
		uint64_t want = 0;
		bool have_want = false;
		size_t k;

		bench_log("%s round %u/%u", W, r + 1, bench.o.rounds);
		for (k = 0; k < nc; k++) {
			const struct contender *c = cs[(k + r) % nc];
			struct row *row;
			double el;

			*J = (struct job){ .kind = JOB_SUM, .c = c, .path = bench.hot_path,
					   .size = bench.o.file_size, .n = n, .len = len, .m.lat = J->m.lat };
			if (job_run(J, W, "") < 0)
				continue;
			el = J->elapsed;
			if (!have_want) {
				want = J->st.sum.sum;
				have_want = true;
			} else if (J->st.sum.sum != want) {
				report_failure(W, c->name, "sum %016llx differs from the other contenders' %016llx",
					       (unsigned long long)J->st.sum.sum, (unsigned long long)want);
				continue;
			}
			row = row_get(W, "1MiB-sum", c->name);
			row_add(row, "gb_s", "GB/s", (double)n * len / el / 1e9);
			add_latency(row, J->m.lat, n, false);
			row_add(row, "minflt", "faults", (double)J->cf.minflt);
		}
	}
	report_print_table(W);
	job_free(J, n);
	return 0;
}

/* --- workload: dependent lookups --------------------------------------------------------- */

static int
dep_next(const void *data, size_t len, void *arg)
{
	struct dep_state *d = arg;
	uint64_t w;

	memcpy(&w, (const unsigned char *)data + ((d->h >> 7) % (len / 8)) * 8, 8);
	/* The step is mixed in so that the walk does not fall into a short
	 * cycle of the random file's page graph. */
	d->h = w ^ (++d->step * 0x9e3779b97f4a7c15ULL);
	return 0;
}

static int
wl_dep(void)
{
	const char *W = "dependent";
	const struct contender *cs[BENCH_MAX_CONTENDERS];
	size_t nc = workload_contenders(W, W_DEP, cs), n = bench.o.dep_ops, len = 4096;
	struct job *J = job_new(n);
	unsigned r;
	char sz[32];

	report_section(W, "dependent 4 KiB lookups, one at a time",
		       "  %zu lookups per round in the hot %s file, as a B-tree descent: read the 4 KiB "
		       "page, take a 64-bit word of it (which word: from the last one), mixed with the step, "
		       "mod the file's pages: the next page. Nothing can be read ahead or batched.\n"
		       "  us_lookup = time per lookup (lower is better; x pread = pread's time / this "
		       "one's). hotmap-view looks at the word in place (hm_view_range), the others copy "
		       "the page (hm_pread, pread, memcpy from mmap-touched's mapping). Every walk must end "
		       "on the same word.",
		       n, human_size(sz, sizeof sz, bench.o.file_size));
	for (r = 0; r < bench.o.rounds; r++) {
		uint64_t want = 0;
		bool have_want = false;
		size_t k;

		bench_log("%s round %u/%u", W, r + 1, bench.o.rounds);
		for (k = 0; k < nc; k++) {
			const struct contender *c = cs[(k + r) % nc];
			struct row *row;
			double el;

			*J = (struct job){ .kind = JOB_DEP, .c = c, .path = bench.hot_path,
					   .size = bench.o.file_size, .n = n, .len = len, .m.lat = J->m.lat,
					   .st.dep = { seed_for(W, r, 0), bench.o.file_size / len, 0 } };
			if (job_run(J, W, "") < 0)
				continue;
			el = J->elapsed;
			if (!have_want) {
				want = J->st.dep.h;
				have_want = true;
			} else if (J->st.dep.h != want) {
				report_failure(W, c->name, "the walk ended elsewhere than the other contenders'");
				continue;
			}
			row = row_get(W, "4KiB-chain", c->name);
			row->higher_better = false;
			row_add(row, "us_lookup", "us/lookup", el / (double)n * 1e6);
			add_latency(row, J->m.lat, n, true);
			row_add(row, "lookups_s", "lookups/s", (double)n / el);
		}
	}
	report_print_table(W);
	job_free(J, n);
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

static int
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
				const struct contender *c = cs[(k + r) % nc];
				struct fresh_arg arg = { c };
				double t0 = 1e300, t1 = 0, per[64];
				long anon = 0, file = 0, shmem = 0, pss = 0;
				uint64_t bytes = 0;
				struct row *row;
				unsigned i, bad = 0;

				if (run_children(np, fresh_setup, fresh_run, fresh_teardown, &arg, reps) < 0) {
					report_failure(W, c->name, "cannot start processes: %s", strerror(errno));
					continue;
				}
				for (i = 0; i < np; i++) {
					if (reps[i].status != 0) {
						report_failure(W, c->name, "process %u: %s", i, reps[i].err);
						bad++;
						continue;
					}
					if (reps[i].t0 < t0)
						t0 = reps[i].t0;
					if (reps[i].t1 > t1)
						t1 = reps[i].t1;
					per[i] = reps[i].t1 - reps[i].t0;
					bytes += reps[i].bytes;
					anon += reps[i].anon_kib;
					file += reps[i].file_kib;
					shmem += reps[i].shmem_kib;
					pss += reps[i].pss_kib;
				}
				if (bad > 0 || t1 <= t0)
					continue;
				row = row_get(W, variant, c->name);
				row->higher_better = false;
				row_add(row, "s_proc", "s/process", median_of(per, np));
				row_add(row, "gb_s", "GB/s", (double)bytes / (t1 - t0) / 1e9);
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

static int
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
			const struct contender *c = cs[(k + r) % nc];
			struct sample_arg arg = { c, r };
			double t0 = 1e300, t1 = 0, p50[64], p99 = 0;
			uint64_t bytes = 0, ops = 0;
			long minflt = 0;
			struct row *row;
			unsigned i, bad = 0;

			if (run_children(np, sample_setup, sample_run, sample_teardown, &arg, reps) < 0) {
				report_failure(W, c->name, "cannot start processes: %s", strerror(errno));
				continue;
			}
			for (i = 0; i < np; i++) {
				if (reps[i].status != 0) {
					report_failure(W, c->name, "process %u: %s", i, reps[i].err);
					bad++;
					continue;
				}
				if (reps[i].t0 < t0)
					t0 = reps[i].t0;
				if (reps[i].t1 > t1)
					t1 = reps[i].t1;
				bytes += reps[i].bytes;
				ops += reps[i].ops;
				minflt += reps[i].minflt;
				p50[i] = reps[i].lat_p50;
				if (reps[i].lat_p99 > p99)
					p99 = reps[i].lat_p99;
			}
			if (bad > 0 || t1 <= t0)
				continue;
			row = row_get(W, variant, c->name);
			row_add(row, "gb_s", "GB/s", (double)bytes / (t1 - t0) / 1e9);
			row_add(row, "reads_s", "reads/s", (double)ops / (t1 - t0));
			row_add(row, "p50_us", "us", median_of(p50, np));
			row_add(row, "p99_us", "us", p99);
			row_add(row, "minflt", "faults/proc", (double)minflt / np);
		}
	}
	report_print_table(W);
	return 0;
}

/* --- workload: short-lived processes at once (dbprocs.c) --------------------------------------------- */

static int
wl_dbprocs(void)
{
	const struct contender *cs[BENCH_MAX_CONTENDERS];
	size_t nc = workload_contenders("dbprocs", W_DBPROCS, cs);

	return dbprocs_run(cs, nc);
}

/* --- set-up ------------------------------------------------------------------------------------------- */

static const struct workload {
	const char *name;
	int (*run)(void);
	bool needs_scan;
} workloads[] = {
	{ "rand4k", wl_rand, false },
	{ "seq1m", wl_seq, false },
	{ "viewsum", wl_viewsum, false },
	{ "dependent", wl_dep, false },
	{ "fresh", wl_fresh, false },
	{ "sample", wl_sample, false },
	{ "train", wl_train, false },
	{ "procs", wl_procs, false },
	{ "dbprocs", wl_dbprocs, false },
	{ "iso", wl_iso, true },
	{ "cache", wl_cache, true },
	{ "scale", wl_scale, false },
};

static bool
workload_selected(const char *name)
{
	return bench.o.workloads == NULL || list_has(bench.o.workloads, name);
}

/* Every contender must read what pread reads, batches included. */
static void
verify_contenders(void)
{
	size_t len = 4096, i, j;
	uint64_t size = bench.o.file_size, offs[6];
	char *want = xmalloc(MiB), *got = xmalloc(MiB);
	int fd = open(bench.hot_path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		report_failure("verify", "-", "open %s: %s", bench.hot_path, strerror(errno));
		exit(1);
	}
	random_offsets(seed_for("verify", 0, 0), offs, 4, size, len, 1);
	offs[4] = size - len;
	offs[5] = 0;
	for (i = 0; i < ncontenders; i++) {
		const struct contender *c = &contenders[i];
		struct bench_range rg[4];
		char why[200];
		struct opened o;
		bool ok = true;

		if (!contender_selected(c) || !c->available(c, why, sizeof why))
			continue;
		if (open_one(c, bench.hot_path, size, &o, "verify") < 0) {
			broken[i] = true;
			continue;
		}
		for (j = 0; j < 6 && ok; j++) {
			size_t l = j == 5 ? (size_t)(size < MiB ? size : MiB) : len;

			if (pread(fd, want, l, (off_t)offs[j]) != (ssize_t)l ||
			    c->read(o.f, got, l, offs[j]) != (ssize_t)l || memcmp(want, got, l) != 0)
				ok = false;
		}
		/* at the end of file: short */
		if (ok && c->read(o.f, got, len, size - 100) != 100)
			ok = false;
		for (j = 0; j < 4; j++)
			rg[j] = (struct bench_range){ o.f, offs[j], len, got + j * len };
		if (ok && c->view_ranges == NULL && contender_read_ranges(c, o.s, rg, 4) < 0)
			ok = false;
		if (ok && c->view_ranges != NULL && c->view_ranges(o.s, rg, 4) < 0)
			ok = false;
		for (j = 0; j < 4 && ok && c->view_ranges == NULL; j++)
			if (pread(fd, want, len, (off_t)offs[j]) != (ssize_t)len ||
			    memcmp(want, got + j * len, len) != 0)
				ok = false;
		close_one(c, &o);
		if (!ok) {
			broken[i] = true;
			report_failure("verify", c->name, "read bytes that differ from pread's");
		}
	}
	close(fd);
	free(want);
	free(got);
}

static void
print_options(void)
{
	const struct bench_opts *o = &bench.o;
	char a[32], b[32], c[32], d[32];

	report_meta("options",
		    "rounds %u; hot file %s; scan file %s; %u random reads; sequential %s; "
		    "training %u files x %u+1 columns x %u rows, batch %u, %u epochs + %u random; "
		    "%u processes x %u reads of %s; isolation %u reads; scale %u reads; %u dependent lookups; "
		    "%u fresh processes; %u sampling processes x %u reads; %u db processes x %u lookups "
		    "on %u CPUs; seed %llu%s",
		    o->rounds, human_size(a, sizeof a, o->file_size), human_size(b, sizeof b, o->scan_size),
		    o->rand_ops, human_size(c, sizeof c, o->seq_bytes), o->train_files, o->train_cols,
		    o->train_rows, o->train_batch, o->train_epochs, o->train_random, o->procs,
		    o->proc_reads, human_size(d, sizeof d, o->proc_read_size), o->iso_ops, o->scale_ops,
		    o->dep_ops, o->fresh_procs, o->sample_procs, o->sample_reads, o->db_procs, o->db_reads, o->db_cpus,
		    (unsigned long long)o->seed, o->quick ? "; --quick" : "");
}

static void
cleanup(void)
{
	if (bench_is_child)
		return;
	hotmapd_stop();
	nginx_stop();
	if (bench.run_dir[0] != '\0') {
		remove_tree(bench.run_dir);
		bench.run_dir[0] = '\0';
	}
	if (bench.data_dir_made && !bench.o.keep_data && bench.data_dir[0] != '\0') {
		remove_tree(bench.data_dir);
		bench.data_dir[0] = '\0';
	}
}

static void
on_signal(int sig)
{
	servers_kill();
	signal(sig, SIG_DFL);
	raise(sig);
}

static int
setup_dirs(void)
{
	const char *tmp = getenv("TMPDIR");
	char tmpl[PATH_MAX];
	int rc;

	if (tmp == NULL || tmp[0] == '\0')
		tmp = "/tmp";
	/* Socket paths must fit in sun_path: the run directory stays short. */
	snprintf(tmpl, sizeof tmpl, "%s/hmbench.XXXXXX", strlen(tmp) < 60 ? tmp : "/tmp");
	if (mkdtemp(tmpl) == NULL)
		return -errno;
	snprintf(bench.run_dir, sizeof bench.run_dir, "%s", tmpl);
	chmod(bench.run_dir, 0755);
	if (bench.o.data_dir != NULL) {
		rc = mkdir_p(bench.o.data_dir, 0755);
		if (rc < 0)
			return rc;
		if (realpath(bench.o.data_dir, bench.data_dir) == NULL)
			return -errno;
	} else {
		xsnprintf(bench.data_dir, sizeof bench.data_dir, "%s/data", bench.run_dir);
		rc = mkdir_p(bench.data_dir, 0755);
		if (rc < 0)
			return rc;
		bench.data_dir_made = true;
	}
	xsnprintf(bench.hot_path, sizeof bench.hot_path, "%s/hot.dat", bench.data_dir);
	xsnprintf(bench.scan_path, sizeof bench.scan_path, "%s/scan.dat", bench.data_dir);
	return 0;
}

/* Creates a data file unless one of that size is there already (--dir). */
static int
make_data(const char *path, uint64_t size, uint64_t seed)
{
	struct stat st;
	double t = now_s();
	int rc;

	if (stat(path, &st) == 0 && (uint64_t)st.st_size == size)
		return 0;
	rc = write_file(path, size, seed);
	if (rc == 0)
		bench_log("wrote %s (%llu bytes) in %.1f s", path, (unsigned long long)size, now_s() - t);
	return rc;
}

/*
 * Runs a copy of the daemon: a rebuild of the tree during the run (other
 * work goes on) must not change the daemon between two of its starts.
 * Only a real executable is copied; a libtool wrapper is run in place.
 */
static void
snapshot_hotmapd(void)
{
	static char copy[PATH_MAX];
	char buf[65536];
	int in, out = -1;
	ssize_t n;

	in = open(bench.o.hotmapd, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return;
	if (read(in, buf, 4) != 4 || memcmp(buf, "\177ELF", 4) != 0 || lseek(in, 0, SEEK_SET) != 0) {
		close(in);
		return;
	}
	xsnprintf(copy, sizeof copy, "%s/hotmapd", bench.run_dir);
	out = open(copy, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	while (out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n) {
			close(out);
			out = -1;
		}
	close(in);
	if (out >= 0 && close(out) == 0) {
		bench.hotmapd_orig = bench.o.hotmapd;
		bench.o.hotmapd = copy;
	}
}

/* The daemon's counter key, or 0. */
struct stat_pick {
	const char *key;
	uint64_t value;
};

static void
stat_pick_cb(const char *key, uint64_t value, const char *text, void *arg)
{
	struct stat_pick *p = arg;

	(void)text;
	if (strcmp(key, p->key) == 0)
		p->value = value;
}

static uint64_t
daemon_counter(hm_client *c, const char *key)
{
	struct stat_pick p = { key, 0 };

	(void)hm_stats(c, stat_pick_cb, &p);
	return p.value;
}

/* Reads the hot file through hotmapd once: its mapping is then pre-touched;
 * and warms it (hm_warm), as an operator warms a hot file: the daemon
 * reads its chunks back into huge folios (huge-folios), and the warm
 * returns when they are. */
static void
warm_hotmap(void)
{
	double gbs = hotmap_pretouch(bench.hot_path, bench.o.file_size);
	hm_client *c = daemon_connect();
	struct hm_stat st;
	hm_file *f = c != NULL ? hm_open(c, bench.hot_path, 0) : NULL;
	uint64_t folds = c != NULL ? daemon_counter(c, "huge_folds") : 0;
	double t = now_s();
	ssize_t warmed = f != NULL ? hm_warm(f, 0, bench.o.file_size) : -1;

	t = now_s() - t;
	if (c != NULL)
		folds = daemon_counter(c, "huge_folds") - folds;
	if (f != NULL && hm_stat(f, &st) == 0)
		report_meta("hotmap", "hot file served with backend %s (%s); first pass through a fresh "
			    "daemon mapping: %.2f GB/s; then hm_warm: %s in %.2f s, %llu chunks read "
			    "back into huge folios",
			    st.backend == HM_BACKEND_MMAP ? "mmap" : "pread", st.reason_text, gbs,
			    warmed == (ssize_t)bench.o.file_size ? "whole file" : "FAILED", t,
			    (unsigned long long)folds);
	if (f != NULL)
		hm_close(f);
	hm_disconnect(c);
}

/* Collects the library versions hotmapd reports among its stats. */
static void
stat_versions(const char *key, uint64_t value, const char *text, void *arg)
{
	char *libs = arg;
	size_t len = strlen(libs);

	(void)value;
	if (strcmp(key, "libevent_version") == 0 || strcmp(key, "protobuf_c_version") == 0)
		snprintf(libs + len, 160 - len, " (%s %s)", key[0] == 'l' ? "libevent" : "protobuf-c", text);
}

/* --- options ------------------------------------------------------------------------------------------- */

static uint64_t
parse_size(const char *s, const char *what)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	switch (*end) {
	case 'k': case 'K': v *= KiB; end++; break;
	case 'm': case 'M': v *= MiB; end++; break;
	case 'g': case 'G': v *= GiB; end++; break;
	default: break;
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end == 'B')
		end++;
	if (end == s || *end != '\0') {
		fprintf(stderr, "hmbench: bad size for %s: %s\n", what, s);
		exit(2);
	}
	return v;
}

static unsigned
parse_uint(const char *s, const char *what)
{
	uint64_t v = parse_size(s, what);

	if (v > 100000000) {
		fprintf(stderr, "hmbench: %s too large: %s\n", what, s);
		exit(2);
	}
	return (unsigned)v;
}

static unsigned
parse_list(const char *s, unsigned *v, const char *what)
{
	char buf[256], *tok, *save = NULL;
	unsigned n = 0;

	snprintf(buf, sizeof buf, "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok != NULL && n < BENCH_MAX_LIST;
	     tok = strtok_r(NULL, ",", &save))
		v[n++] = parse_uint(tok, what);
	return n;
}

static void
defaults(struct bench_opts *o, bool quick)
{
	*o = (struct bench_opts){
		.quick = quick,
		.rounds = quick ? 1 : 5,
		.seed = 20261130,
		.file_size = quick ? 16 * MiB : GiB,
		.scan_size = quick ? 8 * MiB : 512 * MiB,
		.rand_ops = quick ? 400 : 10000,
		.batches = { 16, 64 },
		.nbatches = 2,
		.train_files = 8,
		.train_cols = 8,
		.train_rows = quick ? 4096 : 131072,
		.train_batch = quick ? 1024 : 8192,
		.train_epochs = quick ? 1 : 4,
		.train_random = quick ? 2 : 32,
		.train_clients = { 1, 4 },
		.ntrain_clients = 2,
		.procs = quick ? 8 : 200,
		.proc_reads = quick ? 8 : 64,
		.proc_read_size = 64 * KiB,
		.iso_ops = quick ? 300 : 5000,
		.dep_ops = quick ? 400 : 20000,
		.fresh_procs = 4,
		.sample_procs = 4,
		.sample_reads = quick ? 200 : 5000,
		.db_procs = 8,
		.db_reads = 200,
		.db_cpus = 2,
		.scale_files = { 10, 1000, 10000 },
		.nscale_files = 3,
		.scale_clients = quick ? 20 : 1000,
		.scale_ops = quick ? 200 : 5000,
		.scale_file_size = 16 * KiB,
	};
	if (quick) {
		o->scale_files[1] = 100;
		o->nscale_files = 2;
		o->train_clients[1] = 2;
	}
	o->seq_bytes = o->file_size;
}

static void
usage(FILE *fp)
{
	fprintf(fp,
		"Usage: hmbench [options]\n"
		"Measures hotmap against in-process pread and mmap, nginx and the machine's floors.\n"
		"Usually run through bench/run, which also installs nginx and plots.\n\n"
		"  --quick                a few seconds: tiny files, 1 round (smoke test)\n"
		"  --rounds N             rounds per workload (default 5)\n"
		"  --workloads LIST       rand4k,seq1m,viewsum,dependent,fresh,sample,train,procs,dbprocs,\n"
		"                         iso,cache,scale (default: all)\n"
		"  --contenders LIST      %s,floors (default: all; pread always)\n"
		"  --results DIR          write results.csv, results.json, latency.csv, table.txt there\n"
		"  --dir DIR              data directory (default: a temporary one, removed at the end)\n"
		"  --keep-data            do not remove the data directory\n"
		"  --hotmapd PATH         the daemon (default: $HOTMAPD, else daemon/hotmapd)\n"
		"  --nginx PATH           run the nginx contender with this binary\n"
		"  --nginx-skip REASON    why nginx is not run, for the report\n"
		"  --seed N\n"
		"  --source TEXT          what was measured (bench/run passes the git commit)\n"
		"Sizes (K, M, G suffixes, binary):\n"
		"  --file-size S (1G)  --scan-size S (512M)  --rand-ops N (10000)  --batches LIST (16,64)\n"
		"  --seq-bytes S (file size)  --train-rows N (131072)  --train-batch N (8192)\n"
		"  --train-epochs N (4)  --train-random N (32)  --train-clients LIST (1,4)\n"
		"  --procs N (200)  --proc-reads N (64)  --proc-read-size S (64K, also the sample records)\n"
		"  --iso-ops N (5000)  --dep-ops N (20000)  --fresh-procs N (4)  --sample-procs N (4)\n"
		"  --sample-reads N (5000)  --db-procs N (8)  --db-reads N (200)  --db-cpus N (2)\n"
		"  --scale-files LIST (10,1000,10000)  --scale-clients N (1000)  --scale-ops N (5000)\n"
		"  --scale-file-size S (16K)\n",
		"pread,mmap-new,mmap-touched,hotmap,hotmap-daemon,hotmap-view,hotmap-pread,nginx,...");
}

enum {
	OPT_QUICK = 256, OPT_ROUNDS, OPT_WORKLOADS, OPT_CONTENDERS, OPT_RESULTS, OPT_DIR, OPT_KEEP,
	OPT_HOTMAPD, OPT_NGINX, OPT_NGINX_SKIP, OPT_SEED, OPT_FILE_SIZE, OPT_SCAN_SIZE, OPT_RAND_OPS,
	OPT_BATCHES, OPT_SEQ_BYTES, OPT_TRAIN_ROWS, OPT_TRAIN_BATCH, OPT_TRAIN_EPOCHS,
	OPT_TRAIN_RANDOM, OPT_TRAIN_CLIENTS, OPT_PROCS, OPT_PROC_READS, OPT_PROC_READ_SIZE,
	OPT_ISO_OPS, OPT_DEP_OPS, OPT_FRESH_PROCS, OPT_SAMPLE_PROCS, OPT_SAMPLE_READS, OPT_SCALE_FILES, OPT_SCALE_CLIENTS, OPT_SCALE_OPS, OPT_SCALE_FILE_SIZE, OPT_SOURCE,
	OPT_DB_PROCS, OPT_DB_READS, OPT_DB_CPUS,
};

static const struct option long_opts[] = {
	{ "quick", no_argument, NULL, OPT_QUICK },
	{ "rounds", required_argument, NULL, OPT_ROUNDS },
	{ "workloads", required_argument, NULL, OPT_WORKLOADS },
	{ "contenders", required_argument, NULL, OPT_CONTENDERS },
	{ "results", required_argument, NULL, OPT_RESULTS },
	{ "dir", required_argument, NULL, OPT_DIR },
	{ "keep-data", no_argument, NULL, OPT_KEEP },
	{ "hotmapd", required_argument, NULL, OPT_HOTMAPD },
	{ "nginx", required_argument, NULL, OPT_NGINX },
	{ "nginx-skip", required_argument, NULL, OPT_NGINX_SKIP },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "source", required_argument, NULL, OPT_SOURCE },
	{ "file-size", required_argument, NULL, OPT_FILE_SIZE },
	{ "scan-size", required_argument, NULL, OPT_SCAN_SIZE },
	{ "rand-ops", required_argument, NULL, OPT_RAND_OPS },
	{ "batches", required_argument, NULL, OPT_BATCHES },
	{ "seq-bytes", required_argument, NULL, OPT_SEQ_BYTES },
	{ "train-rows", required_argument, NULL, OPT_TRAIN_ROWS },
	{ "train-batch", required_argument, NULL, OPT_TRAIN_BATCH },
	{ "train-epochs", required_argument, NULL, OPT_TRAIN_EPOCHS },
	{ "train-random", required_argument, NULL, OPT_TRAIN_RANDOM },
	{ "train-clients", required_argument, NULL, OPT_TRAIN_CLIENTS },
	{ "procs", required_argument, NULL, OPT_PROCS },
	{ "proc-reads", required_argument, NULL, OPT_PROC_READS },
	{ "proc-read-size", required_argument, NULL, OPT_PROC_READ_SIZE },
	{ "iso-ops", required_argument, NULL, OPT_ISO_OPS },
	{ "dep-ops", required_argument, NULL, OPT_DEP_OPS },
	{ "fresh-procs", required_argument, NULL, OPT_FRESH_PROCS },
	{ "sample-procs", required_argument, NULL, OPT_SAMPLE_PROCS },
	{ "sample-reads", required_argument, NULL, OPT_SAMPLE_READS },
	{ "db-procs", required_argument, NULL, OPT_DB_PROCS },
	{ "db-reads", required_argument, NULL, OPT_DB_READS },
	{ "db-cpus", required_argument, NULL, OPT_DB_CPUS },
	{ "scale-files", required_argument, NULL, OPT_SCALE_FILES },
	{ "scale-clients", required_argument, NULL, OPT_SCALE_CLIENTS },
	{ "scale-ops", required_argument, NULL, OPT_SCALE_OPS },
	{ "scale-file-size", required_argument, NULL, OPT_SCALE_FILE_SIZE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void
parse_options(int argc, char **argv)
{
	struct bench_opts *o = &bench.o;
	bool quick = false, seq_set = false;
	int c, i;

	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "--quick") == 0)
			quick = true;
	defaults(o, quick);
	while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_QUICK: break;
		case OPT_ROUNDS: o->rounds = parse_uint(optarg, "--rounds"); break;
		case OPT_WORKLOADS: o->workloads = optarg; break;
		case OPT_CONTENDERS: o->contenders = optarg; break;
		case OPT_RESULTS: o->results_dir = optarg; break;
		case OPT_DIR: o->data_dir = optarg; break;
		case OPT_KEEP: o->keep_data = true; break;
		case OPT_HOTMAPD: o->hotmapd = optarg; break;
		case OPT_NGINX: o->nginx = optarg; break;
		case OPT_NGINX_SKIP: o->nginx_skip = optarg; break;
		case OPT_SEED: o->seed = parse_size(optarg, "--seed"); break;
		case OPT_SOURCE: o->source = optarg; break;
		case OPT_FILE_SIZE: o->file_size = parse_size(optarg, "--file-size"); break;
		case OPT_SCAN_SIZE: o->scan_size = parse_size(optarg, "--scan-size"); break;
		case OPT_RAND_OPS: o->rand_ops = parse_uint(optarg, "--rand-ops"); break;
		case OPT_BATCHES: o->nbatches = parse_list(optarg, o->batches, "--batches"); break;
		case OPT_SEQ_BYTES: o->seq_bytes = parse_size(optarg, "--seq-bytes"); seq_set = true; break;
		case OPT_TRAIN_ROWS: o->train_rows = parse_uint(optarg, "--train-rows"); break;
		case OPT_TRAIN_BATCH: o->train_batch = parse_uint(optarg, "--train-batch"); break;
		case OPT_TRAIN_EPOCHS: o->train_epochs = parse_uint(optarg, "--train-epochs"); break;
		case OPT_TRAIN_RANDOM: o->train_random = parse_uint(optarg, "--train-random"); break;
		case OPT_TRAIN_CLIENTS:
			o->ntrain_clients = parse_list(optarg, o->train_clients, "--train-clients");
			break;
		case OPT_PROCS: o->procs = parse_uint(optarg, "--procs"); break;
		case OPT_PROC_READS: o->proc_reads = parse_uint(optarg, "--proc-reads"); break;
		case OPT_PROC_READ_SIZE: o->proc_read_size = parse_size(optarg, "--proc-read-size"); break;
		case OPT_ISO_OPS: o->iso_ops = parse_uint(optarg, "--iso-ops"); break;
		case OPT_DEP_OPS: o->dep_ops = parse_uint(optarg, "--dep-ops"); break;
		case OPT_FRESH_PROCS: o->fresh_procs = parse_uint(optarg, "--fresh-procs"); break;
		case OPT_SAMPLE_PROCS: o->sample_procs = parse_uint(optarg, "--sample-procs"); break;
		case OPT_SAMPLE_READS: o->sample_reads = parse_uint(optarg, "--sample-reads"); break;
		case OPT_DB_PROCS: o->db_procs = parse_uint(optarg, "--db-procs"); break;
		case OPT_DB_READS: o->db_reads = parse_uint(optarg, "--db-reads"); break;
		case OPT_DB_CPUS: o->db_cpus = parse_uint(optarg, "--db-cpus"); break;
		case OPT_SCALE_FILES:
			o->nscale_files = parse_list(optarg, o->scale_files, "--scale-files");
			break;
		case OPT_SCALE_CLIENTS: o->scale_clients = parse_uint(optarg, "--scale-clients"); break;
		case OPT_SCALE_OPS: o->scale_ops = parse_uint(optarg, "--scale-ops"); break;
		case OPT_SCALE_FILE_SIZE: o->scale_file_size = parse_size(optarg, "--scale-file-size"); break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "hmbench: unexpected argument: %s\n", argv[optind]);
		exit(2);
	}
	if (!seq_set)
		o->seq_bytes = o->file_size;
	if (o->rounds == 0 || o->rounds > BENCH_MAX_ROUNDS) {
		fprintf(stderr, "hmbench: --rounds must be 1 to %d\n", BENCH_MAX_ROUNDS);
		exit(2);
	}
	if (o->file_size < 2 * MiB || o->file_size % 4096 != 0 || o->scan_size < MiB ||
	    o->scan_size % (64 * KiB) != 0) {
		fprintf(stderr, "hmbench: --file-size must be at least 2 MiB and --scan-size 1 MiB, "
				"multiples of 4 KiB and 64 KiB\n");
		exit(2);
	}
	if (o->rand_ops == 0 || o->iso_ops == 0 || o->scale_ops == 0 || o->procs == 0 || o->dep_ops == 0 ||
	    o->sample_reads == 0) {
		fprintf(stderr, "hmbench: operation counts must be positive\n");
		exit(2);
	}
	if (o->hotmapd == NULL)
		o->hotmapd = getenv("HOTMAPD");
	if (o->hotmapd == NULL)
		o->hotmapd = "daemon/hotmapd";
}

static void
raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int
main(int argc, char **argv)
{
	double t0 = now_s();
	long long majflt0, steal0;
	size_t i;
	int rc;

	parse_options(argc, argv);
	raise_nofile();
	/* Each hotmap contender chooses its tiers (hm_connect_opts); what it
	 * leaves to the library must be the library's defaults, not the
	 * user's environment. */
	{
		static const char *const env[] = {
			"HOTMAP_SHM_SIZE", "HOTMAP_SHM_THRESHOLD", "HOTMAP_POLL", "HOTMAP_POLL_US",
			"HOTMAP_DIRECT", "HOTMAP_DIRECT_AFTER", "HOTMAP_RECONNECT_MS", "HOTMAP_SOCKET",
		};

		for (i = 0; i < sizeof env / sizeof env[0]; i++) {
			if (getenv(env[i]) != NULL)
				bench_log("ignoring %s: the contenders choose their options", env[i]);
			unsetenv(env[i]);
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	atexit(cleanup);
	if (bench.o.nginx != NULL)
		nginx_version();
	print_machine(argc, argv);
	print_damon();
	print_options();
	majflt0 = vmstat_sum("pgmajfault");
	steal0 = vmstat_sum("pgsteal_");

	scratch_len = 4 * MiB;
	scratch = page_buffer(scratch_len);
	rc = setup_dirs();
	if (rc < 0) {
		fprintf(stderr, "hmbench: cannot make the run directories: %s\n", strerror(-rc));
		return 1;
	}
	rc = make_data(bench.hot_path, bench.o.file_size, bench.o.seed);
	for (i = 0; rc == 0 && i < sizeof workloads / sizeof workloads[0]; i++)
		if (workloads[i].needs_scan && workload_selected(workloads[i].name)) {
			rc = make_data(bench.scan_path, bench.o.scan_size, bench.o.seed + 1);
			break;
		}
	if (rc < 0) {
		fprintf(stderr, "hmbench: cannot write the data files in %s: %s\n", bench.data_dir,
			strerror(-rc));
		return 1;
	}
	report_meta("data", "%s on %s (page cache: POSIX_FADV_DONTNEED + mincore for cold runs)",
		    bench.o.data_dir != NULL ? short_path(bench.data_dir) : "a temporary directory",
		    fs_name(bench.data_dir));

	snapshot_hotmapd();
	rc = hotmapd_start();
	if (rc < 0) {
		fprintf(stderr, "hmbench: cannot start hotmapd (%s): %s\n", bench.o.hotmapd, strerror(-rc));
		return 1;
	}
	{
		hm_client *c = daemon_connect();
		struct hm_ping ping;

		char libs[160] = "";

		if (c != NULL)
			(void)hm_stats(c, stat_versions, libs);	/* needs an administrator: we are one */
		if (c != NULL && hm_ping(c, &ping) == 0)
			report_meta("hotmapd", "%s, version %s%s, started by hmbench: --foreground --socket "
				    "RUNDIR/hotmapd.sock%s", short_path(bench.hotmapd_orig != NULL ?
									bench.hotmapd_orig : bench.o.hotmapd),
				    ping.server_version, libs,
				    bench.hotmapd_orig != NULL ? " (a copy taken at start)" : "");
		hm_disconnect(c);
	}
	if (bench.o.nginx != NULL) {
		rc = nginx_start();
		if (rc < 0) {
			report_failure("nginx", "nginx", "cannot start %s: %s", short_path(bench.o.nginx),
				       strerror(-rc));
			bench.o.nginx_skip = "nginx did not start (see the log above)";
		}
	} else if (bench.o.nginx_skip == NULL) {
		bench.o.nginx_skip = "no nginx given (--nginx)";
	}
	if (bench.nginx_pid <= 0)
		report_meta("nginx", "SKIPPED: %s", bench.o.nginx_skip);
	else
		report_meta("nginx", "%s, started by hmbench: worker_processes auto, sendfile on, "
			    "open_file_cache max=20000, keep-alive", bench.nginx_version);

	file_warm(bench.hot_path);
	warm_hotmap();
	verify_contenders();
	keeper_hold();

	for (i = 0; i < sizeof workloads / sizeof workloads[0]; i++) {
		double t = now_s();

		if (!workload_selected(workloads[i].name))
			continue;
		bench_log("workload %s", workloads[i].name);
		workloads[i].run();
		bench_log("workload %s done in %.1f s", workloads[i].name, now_s() - t);
	}

	keeper_release();
	hotmapd_stop();
	nginx_stop();
	{
		double load[3] = { 0, 0, 0 };

		getloadavg(load, 3);
		report_meta("load_end", "%.2f %.2f %.2f at the end", load[0], load[1], load[2]);
	}
	report_meta("kernel_vm", "during the run: pgmajfault +%lld, pgsteal (pages reclaimed) +%lld",
		    vmstat_sum("pgmajfault") - majflt0, vmstat_sum("pgsteal_") - steal0);
	report_meta("elapsed", "%.1f s", now_s() - t0);
	if (bench.o.results_dir != NULL) {
		rc = report_write(bench.o.results_dir);
		if (rc < 0) {
			fprintf(stderr, "hmbench: cannot write results in %s: %s\n", bench.o.results_dir,
				strerror(-rc));
			return 1;
		}
	}
	if (report_failures() > 0) {
		fprintf(stderr, "hmbench: %u failure(s); see above\n", report_failures());
		return 1;
	}
	return 0;
}
