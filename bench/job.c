/* SPDX-License-Identifier: MIT */
/*
 * job.c - the parts hmbench's workloads share: the contenders of a workload,
 * timed reads, the floors' rows, a contender's run in a process of its own
 * (a job), the isolation workload's scanner and the in-place consumers
 * (see workload.h).
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

bool broken[BENCH_MAX_CONTENDERS];		/* contenders that failed verification */
char *scratch;		/* read buffer of the parent */
size_t scratch_len;

/* --- small helpers ------------------------------------------------------------- */

uint64_t
seed_for(const char *workload, unsigned round, unsigned extra)
{
	uint64_t h = bench.o.seed ^ 0x9e3779b97f4a7c15ULL;
	const char *p;

	for (p = workload; *p != '\0'; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	h ^= (uint64_t)round * 0xbf58476d1ce4e5b9ULL ^ (uint64_t)extra * 0x94d049bb133111ebULL;
	return h | 1;
}

double
p_of(double *lat, size_t n, double p)
{
	return percentile(lat, n, p);
}

const char *
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
size_t
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

/* -errno of the failed call, never 0. */
int
neg_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

int
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

void
close_one(const struct contender *c, struct opened *o)
{
	if (o->f != NULL)
		c->file_close(o->f);
	if (o->s != NULL)
		c->session_close(o->s);
	o->f = o->s = NULL;
}

/* --- measuring ----------------------------------------------------------------- */

/*
 * n reads of len at offs[i] in file files[fidx[i]] (fidx NULL: files[0]),
 * batch at a time, through session sess (NULL when batch is 1: the files
 * may then belong to different sessions); latency per read, or per batch.
 * Every read must return len bytes.
 */
int
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
void
add_latency(struct row *row, double *lat, size_t n, bool pool)
{
	if (pool)
		row_add_latencies(row, lat, n);
	sort_doubles(lat, n);
	row_add(row, "p50_us", "us", p_of(lat, n, 50));
	row_add(row, "p99_us", "us", p_of(lat, n, 99));
}

void
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

/*
 * Where a hotmap contender's timed reads went: the share copied out of
 * its mapping, the share through hotmapd, the 2 MiB blocks the copy
 * policy populated with what they took, and its estimates of a copy and a
 * pread at the end (libhotmap(3), COPY POLICY).
 * What a row loses or wins by is then in the same table.
 */
void
add_ways(struct row *row, const struct job *j)
{
	const struct read_ways *w = &j->ways;
	double all = w->copies + w->preads + w->daemon;

	if (!j->have_ways || all <= 0)
		return;
	row_add(row, "copied%", "%", 100.0 * w->copies / all);
	if (w->daemon > 0)
		row_add(row, "daemon%", "%", 100.0 * w->daemon / all);
	row_add(row, "blocks", "blocks", w->populates);
	if (w->populates > 0)
		row_add(row, "blk_us", "us", w->populate_us / w->populates);
	if (w->copy_us > 0)
		row_add(row, "est_copy_us", "us", w->copy_us);
	if (w->pread_us > 0)
		row_add(row, "est_pread_us", "us", w->pread_us);
}

/* w1 - w0 into j (the reads between two snapshots). */
static void
ways_since(struct job *j, const struct read_ways *w0, const struct read_ways *w1)
{
	j->ways = (struct read_ways){ .copies = w1->copies - w0->copies,
				      .preads = w1->preads - w0->preads,
				      .daemon = w1->daemon - w0->daemon,
				      .populates = w1->populates - w0->populates,
				      .populate_us = w1->populate_us - w0->populate_us,
				      .copy_us = w1->copy_us,
				      .pread_us = w1->pread_us };
	j->have_ways = true;
}

void
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

void
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

void
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
static int
job_main(void *arg)
{
	struct job *j = arg;
	const struct contender *c = j->c;
	struct opened o;
	struct read_ways w0 = { 0 }, w1;
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
		if (rc == 0 && c->read_ways != NULL && c->read_ways(o.f, &w0) < 0)
			w0 = (struct read_ways){ 0 };
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
	if (rc == 0 && c->read_ways != NULL && c->read_ways(o.f, &w1) == 0)
		ways_since(j, &w0, &w1);
	close_one(c, &o);
	return rc;
}

/* A job with room for nlat latencies, in memory the child shares. */
struct job *
job_new(size_t nlat)
{
	struct job *j = shared_alloc(sizeof *j + nlat * sizeof(double));

	j->m.lat = (double *)(j + 1);
	return j;
}

void
job_free(struct job *j, size_t nlat)
{
	shared_free(j, sizeof *j + nlat * sizeof(double));
}

/* j in a process of its own; 0, or -1 with the failure reported. */
int
job_run(struct job *j, const char *workload, const char *what)
{
	double *lat = j->m.lat;
	int rc;

	j->err[0] = '\0';
	j->m = (struct measure){ .lat = lat };
	j->have_ways = false;
	rc = in_fresh_process(job_main, j);
	if (rc < 0) {
		report_failure(workload, j->c->name, "%s%s%s", what, what[0] != '\0' ? ": " : "",
			       j->err[0] != '\0' ? j->err : strerror(-rc));
		return -1;
	}
	return 0;
}

/* The other client: scans the cold file in 1 MiB reads until told to stop. */
int
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

int
scanner_wait_ready(struct scanner *sc)
{
	char ch;

	if (read(sc->ready_fd, &ch, 1) != 1 || ch != 'r')
		return -EIO;
	return 0;
}

int
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

/* Every byte of the range read: a sum of its 64-bit words. */
int
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

int
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
