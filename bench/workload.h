/* SPDX-License-Identifier: MIT */
/*
 * workload.h - what hmbench's workloads share (job.c, cachestate.c) and
 * the workloads themselves (wl_*.c), for hmbench.c's table of them.
 *
 * Every timed run of a contender that reads in hmbench's process runs in a
 * forked child of its own (a job, job_run): each starts from the same state
 * as the others, the page cache as the workload left it.
 */
#ifndef HMBENCH_WORKLOAD_H
#define HMBENCH_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench/bench.h"
#include "hotmap.h"

#define MAX_BATCH	256
#define KiB		1024ull
#define MiB		(1024ull * 1024)
#define GiB		(1024ull * 1024 * 1024)

extern bool broken[BENCH_MAX_CONTENDERS];	/* contenders that failed verification */
extern char *scratch;		/* read buffer of the parent */
extern size_t scratch_len;
extern unsigned cold_restarts;	/* hotmapd restarts needed to get a file cold */

struct opened {
	void *s;
	void *f;
};

struct measure {
	double elapsed;
	double *lat;		/* us, per read or per batch */
	size_t nlat;
	struct faults cli, dmn;	/* deltas */
	uint64_t bytes;
};

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
	/* hotmap contenders: which way the timed reads went */
	bool have_ways;
	struct read_ways ways;
};

/* --- job.c ------------------------------------------------------------------- */

/* A seed of its own for each workload, round and extra. */
uint64_t seed_for(const char *workload, unsigned round, unsigned extra);
double p_of(double *lat, size_t n, double p);
const char *human_size(char *buf, size_t len, uint64_t v);
/* The contenders of a workload, in table order; the ones that cannot run
 * are reported once as skipped. */
size_t workload_contenders(const char *workload, unsigned mask, const struct contender **out);
/* -errno of the failed call, never 0. */
int neg_errno(void);
int open_one(const struct contender *c, const char *path, uint64_t size, struct opened *o,
	     const char *workload);
void close_one(const struct contender *c, struct opened *o);

int measure_reads(const struct contender *c, void *sess, void **files, const uint32_t *fidx,
		  const uint64_t *offs, size_t n, size_t len, size_t batch, struct measure *m);
void add_latency(struct row *row, double *lat, size_t n, bool pool);
/* A hotmap contender's ways of reading (struct job's ways) into the row. */
void add_ways(struct row *row, const struct job *j);
void add_faults(struct row *row, const struct contender *c, const struct measure *m, bool major);
void run_floor_rows(const char *workload, const char *variant, void **states, const uint64_t *offs,
		    size_t n, size_t len, size_t batch, uint64_t total, unsigned mask, double *lat);
void floors_setup(unsigned mask, void **states);
void floors_teardown(void **states);

struct job *job_new(size_t nlat);
void job_free(struct job *j, size_t nlat);
int job_run(struct job *j, const char *workload, const char *what);

int scanner_start(const struct contender *c, struct scanner *sc);
int scanner_wait_ready(struct scanner *sc);
int scanner_finish(struct scanner *sc, struct scan_report *rep);

/* In-place consumers (contender_consume): a sum of the words; the next
 * page of a dependent walk. */
int sum_words(const void *data, size_t len, void *arg);
int dep_next(const void *data, size_t len, void *arg);

/* --- cachestate.c ----------------------------------------------------------- */

hm_client *daemon_connect(void);
/* A statistic of hotmapd's (hm_stats) by key; 0 when missing. */
uint64_t daemon_counter(hm_client *c, const char *key);
void keeper_hold(void);
void keeper_release(void);
void hotmap_forget(const char *path);
double hotmap_pretouch(const char *path, uint64_t size);
double make_cold(const char *path);
double make_warm(const char *path);
void warm_hotmap(void);

/* --- options.c -------------------------------------------------------------- */

void parse_options(int argc, char **argv);
void print_options(void);
void raise_nofile(void);

/* --- the workloads (wl_*.c) ------------------------------------------------- */

int wl_rand(void);
int wl_seq(void);
int wl_viewsum(void);
int wl_dep(void);
int wl_iso(void);
int wl_cache(void);
int wl_train(void);
int wl_procs(void);
int wl_fresh(void);
int wl_sample(void);
int wl_dbprocs(void);
int wl_scale(void);

#endif
