/* SPDX-License-Identifier: MIT */
/*
 * bench.h - hmbench, the benchmark of hotmap against in-process reads,
 * nginx and the machine's own floors (see bench/run and
 * docs/performance.md).
 *
 * What it is for: one run measures every contender on the same data and the
 * same workloads, alternating contenders round by round, and reports
 * medians with min and max.  A contender is one way for a client to read a
 * byte range of a file; the table of them (contender.c) is the one place a
 * new transport is added.
 *
 * What it must not do: change what it measures (no hotmap internals are
 * used: only hotmap.h, the daemon's command line and /proc), or leave a
 * server running after it exits.
 */
#ifndef HMBENCH_BENCH_H
#define HMBENCH_BENCH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define BENCH_MAX_ROUNDS	100
#define BENCH_MAX_METRICS	12
#define BENCH_MAX_LIST		8

/* --- options ------------------------------------------------------------- */

struct bench_opts {
	bool quick;
	unsigned rounds;		/* rounds in all: --rounds x --repeat */
	unsigned repeat;		/* runs of --rounds, interleaved round by round */
	const char *data_dir;		/* NULL: a temporary directory */
	bool keep_data;
	const char *results_dir;	/* NULL: no files, stdout only */
	const char *hotmapd;		/* the daemon binary */
	const char *nginx;		/* NULL: nginx skipped */
	const char *nginx_skip;		/* why nginx is skipped, for the report */
	const char *workloads;		/* comma list, NULL: all */
	const char *contenders;		/* comma list, NULL: all */
	const char *source;		/* what was measured, for the report */
	uint64_t seed;

	uint64_t file_size;		/* the hot file */
	uint64_t scan_size;		/* the file of the cache states and isolation */
	unsigned rand_ops;		/* random 4 KiB reads per round */
	unsigned batches[BENCH_MAX_LIST];
	unsigned nbatches;
	uint64_t seq_bytes;		/* bytes read by the sequential workload per round */

	unsigned train_files, train_cols, train_rows, train_batch;
	unsigned train_epochs, train_random;
	unsigned train_clients[BENCH_MAX_LIST];
	unsigned ntrain_clients;

	unsigned procs, proc_reads;
	uint64_t proc_read_size;

	unsigned iso_ops;

	unsigned dep_ops;		/* dependent lookups per round */
	unsigned fresh_procs;		/* fresh processes at once */
	unsigned sample_procs, sample_reads;	/* of proc_read_size */
	unsigned db_procs, db_reads, db_cpus;	/* dbprocs: processes at once, lookups, CPUs */

	unsigned scale_files[BENCH_MAX_LIST];
	unsigned nscale_files;
	unsigned scale_clients;
	unsigned scale_ops;
	uint64_t scale_file_size;
};

/* --- the run ------------------------------------------------------------- */

struct bench_ctx {
	struct bench_opts o;
	char data_dir[PATH_MAX];	/* the files read */
	char run_dir[PATH_MAX];		/* sockets, nginx prefix, logs */
	bool data_dir_made;
	char hot_path[PATH_MAX];
	char scan_path[PATH_MAX];

	char hotmap_sock[PATH_MAX];
	const char *hotmapd_orig;	/* the binary hotmapd is a copy of */
	pid_t hotmapd_pid;
	unsigned hotmapd_starts;

	char nginx_sock[PATH_MAX];
	pid_t nginx_pid;
	char nginx_version[128];
};

extern struct bench_ctx bench;

/* --- contenders (contender.c) -------------------------------------------- */

/* Which workloads a contender joins. */
#define W_RAND		0x001	/* random 4 KiB, single and batched */
#define W_SEQ		0x002	/* sequential 1 MiB */
#define W_CACHE		0x004	/* cache states, sequential 64 KiB scan */
#define W_TRAIN		0x008	/* training-style columns */
#define W_PROCS		0x010	/* short-lived processes */
#define W_ISO		0x020	/* isolation */
#define W_SCALE		0x040	/* many files, many clients */
#define W_SCALE_CLIENTS	0x080	/* has connections: the many-clients point */
#define W_VIEWSUM	0x100	/* sequential 1 MiB consumed in place (summed) */
#define W_DEP		0x200	/* dependent 4 KiB lookups, one at a time */
#define W_FRESH		0x400	/* fresh processes reading the whole hot file */
#define W_SAMPLE	0x800	/* concurrent processes sampling random records */
#define W_DBPROCS	0x1000	/* short-lived processes at once, 4 KiB lookups (dbprocs.c) */

/* The most contenders the table may have (workload arrays are this long). */
#define BENCH_MAX_CONTENDERS	32

/* contender.direct: the library's default (HOTMAP_DIRECT unset: on), off, on. */
#define DIRECT_DEFAULT	(-1)

/* Contender kinds. */
#define CF_REFERENCE	0x01	/* in-process pread: the reference of every ratio */
#define CF_MAPPING	0x02	/* the client maps the file itself */
#define CF_TOUCHED	0x04	/* ...and pre-touches it at open, outside the timing */
#define CF_HOTMAP	0x08	/* served by hotmapd: its faults and memory are reported */
#define CF_NGINX	0x10	/* served by nginx */
#define CF_BATCH_ONLY	0x20	/* measured only where reads come in batches */

struct bench_range {
	void *file;		/* a file open on the session */
	uint64_t off;
	size_t len;
	void *buf;
};

/* Which way a hotmap contender's reads went (hm_read_stats), cumulative. */
struct read_ways {
	double copies;		/* copied out of the mapping (touched or touching) */
	double preads;		/* pread on the process's own descriptor */
	double daemon;		/* through hotmapd */
	double populates;	/* 2 MiB blocks populated */
	double populate_us;	/* what they took */
	double copy_us, pread_us;	/* the policy's estimates at the end */
};

struct contender {
	const char *name;		/* short, for tables and files */
	const char *label;		/* one line for the report */
	unsigned flags;			/* CF_* */
	unsigned workloads;		/* W_* */
	int hm_flags;			/* hm_open flags (hotmap contenders) */
	/* The connection's options (hm_connect_opts), hotmap contenders only.
	 * shm_size: the shared region's bytes ("0": none); NULL: the
	 * library's default. */
	const char *shm_size;
	/* Polling mode (hm_options.poll = 1; 0 otherwise, so that the other
	 * rows measure frames on any machine). */
	bool poll;
	/* The direct tier (hm_options.direct): DIRECT_DEFAULT (the library's
	 * default, on), 0 off (the daemon's tiers only) or 1 on.  Set on every
	 * hotmap row: 0-initialised rows would silently be daemon tiers. */
	int direct;
	/* How a batch is read. */
	const char *batch_note;

	/* NULL and *why filled when this contender cannot run in this run. */
	bool (*available)(const struct contender *c, char *why, size_t len);
	/* A client's connection (per process; in-process contenders have a
	 * token one).  NULL and errno on failure. */
	void *(*session_open)(const struct contender *c);
	void (*session_close)(void *s);
	/* Opens path, whose size is size, for reading.  Mapping contenders
	 * map here (and pre-touch, CF_TOUCHED).  NULL and errno on failure. */
	void *(*file_open)(void *s, const char *path, uint64_t size);
	/* Reads like pread(2) into buf: bytes read, short only at end of
	 * file, or -1 and errno. */
	ssize_t (*read)(void *f, void *buf, size_t len, uint64_t off);
	/* Reads n ranges, of any files open on session s, at once: 0, or -1
	 * and errno.  NULL: read() one after another. */
	int (*read_batch)(void *s, struct bench_range *r, size_t n);
	/* Zero-copy: makes n ranges available at once without copying them
	 * into their buffers, then gives them back.  NULL: the contender
	 * copies.  When set, timed reads use it instead of read(). */
	int (*view_ranges)(void *s, struct bench_range *r, size_t n);
	void (*file_close)(void *f);
	/* Consumes [off, off + len) in place: calls fn on the bytes where the
	 * contender has them (its mapping, a view) without copying them to
	 * buf.  NULL: read() into buf, then fn on buf (contender_consume).
	 * fn's result, or -1 and errno when the bytes could not be had whole
	 * (len is always inside the file here). */
	int (*consume)(void *f, void *buf, size_t len, uint64_t off,
		       int (*fn)(const void *data, size_t len, void *arg), void *arg);
	/* How this process's reads of f went so far (hotmap contenders:
	 * hm_read_stats); NULL for the others.  0, or -1. */
	int (*read_ways)(void *f, struct read_ways *w);
};

extern const struct contender contenders[];
extern const size_t ncontenders;

const struct contender *contender_find(const char *name);
bool contender_selected(const struct contender *c);
/* The reads of a timed batch (or of one range, n == 1): view_ranges,
 * read_batch, or read() one after another.  Every range must come back
 * whole. */
int contender_read_ranges(const struct contender *c, void *s, struct bench_range *r, size_t n);
/* c->consume, or read() into buf and fn on buf. */
int contender_consume(const struct contender *c, void *f, void *buf, size_t len, uint64_t off,
		      int (*fn)(const void *data, size_t len, void *arg), void *arg);
/* The contender's own resident pages of an open file, for a mapping
 * contender (mincore on its mapping), else -1. */
double contender_mapping_residency(const struct contender *c, void *f);

/* --- servers (server.c) -------------------------------------------------- */

int hotmapd_start(void);
void hotmapd_stop(void);
int hotmapd_restart(void);
int nginx_start(void);
void nginx_stop(void);
/* Kills every server without waiting: for exit paths and signals. */
void servers_kill(void);
/* Sums the RSS fields ("RssAnon", "VmPTE") of nginx's master and workers. */
long nginx_status_kib(const char *field);

/* --- HTTP client for nginx (httpc.c) ------------------------------------- */

struct httpc;
struct http_range {
	const char *url;
	uint64_t off;
	size_t len;
	void *buf;
};
struct httpc *httpc_connect(const char *sock_path);
void httpc_close(struct httpc *h);
/* GETs the ranges, pipelined in one write; each reply lands in its range's
 * buffer.  Bytes in total, or -1 and errno. */
ssize_t httpc_get_ranges(struct httpc *h, const struct http_range *r, size_t n);
/* The nginx contender's hooks (contender.c's table): a session is one
 * connection, a file a URL under the data directory. */
bool nginx_available(const struct contender *c, char *why, size_t len);
void *nginx_session_open(const struct contender *c);
void nginx_session_close(void *s);
void *nginx_open(void *s, const char *path, uint64_t size);
ssize_t nginx_read(void *f, void *buf, size_t len, uint64_t off);
int nginx_read_batch(void *s, struct bench_range *r, size_t n);
void nginx_close(void *f);

/* --- floors (floor.c) ---------------------------------------------------- */

struct floor_result {
	double elapsed_s;
	uint64_t bytes;
	uint64_t ops;
	double *lat_us;		/* per op or per batch, may be NULL */
	size_t nlat;
};

struct floor_ops {
	const char *name;
	const char *label;
	unsigned workloads;	/* W_RAND and/or W_SEQ */
	int (*setup)(void **state);
	void (*teardown)(void *state);
	/* n reads of len at offs (random) in batches of batch; or a sequential
	 * pass of total bytes in chunks of len (offs NULL). */
	int (*run)(void *state, const uint64_t *offs, size_t n, size_t len, size_t batch,
		   uint64_t total, struct floor_result *res);
};

extern const struct floor_ops floors[];
extern const size_t nfloors;

/* The reply of a hotmap READ of len bytes on the wire: a 16-byte header per
 * 256 KiB chunk of data and a 19-byte end frame.  The floors send the same. */
#define WIRE_REQUEST_SIZE	28
#define WIRE_HEADER_SIZE	16
#define WIRE_CHUNK		(256u * 1024u)
#define WIRE_END_SIZE		19

/* --- results (report.c) -------------------------------------------------- */

struct metric {
	const char *key;	/* "ops_s", "gb_s", "p50_us", ... */
	const char *unit;
	double v[BENCH_MAX_ROUNDS];
	unsigned n;
};

struct row {
	char workload[24];
	char variant[32];
	char contender[24];
	char note[160];
	bool higher_better;	/* of the first metric, the primary one */
	struct metric m[BENCH_MAX_METRICS];
	unsigned nm;
	/* every latency sample of every round, for the distribution */
	double *lat;
	size_t nlat, caplat;
};

struct row *row_get(const char *workload, const char *variant, const char *contender);
void row_note(struct row *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void row_add(struct row *r, const char *key, const char *unit, double v);
void row_add_latencies(struct row *r, const double *lat, size_t n);
/* A workload's heading and what it measured, for the table. */
void report_section(const char *workload, const char *title, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void report_meta(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void report_print_table(const char *workload);
int report_write(const char *dir);
/* The row's reference: pread's row of the same variant (itself for
 * pread's), or NULL.  Every row, for the statistics of spread.c. */
const struct row *row_reference(const struct row *r);
const struct row *report_rows(unsigned *n);

/* --- the noise of a run (spread.c) --------------------------------------- */

/* The primary metric round by round against pread's round of the same
 * number (> 1: better); for pread's row, its rounds against its median.
 * 0 when the rounds do not pair up. */
unsigned row_round_ratios(const struct row *r, double *out);
/* "[min-max]" of row_round_ratios, or "-". */
const char *row_round_spread(const struct row *r, char *buf, size_t len);
/* --repeat: per run the ratio of the medians to pread's; their median and
 * inter-quartile range over the runs.  false without --repeat or pairs. */
bool row_repeat_ratio(const struct row *r, double *med, double *q1, double *q3);
/* The --repeat summary of a workload under its table (nothing without). */
void repeat_print(FILE *fp, const char *workload);
/* repeat.csv (nothing without --repeat). */
int repeat_write_csv(const char *dir);
void report_failure(const char *workload, const char *contender, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
unsigned report_failures(void);

/* --- helpers (util.c) ---------------------------------------------------- */

double now_s(void);
/* Percentile p (0-100) of sorted samples, nearest rank. */
double percentile(const double *sorted, size_t n, double p);
void sort_doubles(double *v, size_t n);
double median_of(const double *v, size_t n);

struct faults {
	long minflt, majflt;
};
void faults_self(struct faults *f);
/* A process's faults from /proc/PID/stat; zeros when unreadable. */
void faults_pid(pid_t pid, struct faults *f);
/* A field of /proc/PID/status in KiB ("RssAnon", "VmPTE"), -1 if absent. */
long proc_status_kib(pid_t pid, const char *field);
/* The same of any /proc/PID file of "Field: N kB" lines ("smaps_rollup"). */
long proc_kib(pid_t pid, const char *file, const char *field);

/* Fraction (0-1) of the file's pages in the page cache, from mincore on a
 * fresh mapping; -1 on error. */
double file_residency(const char *path);
/* Drops the file's pages from the page cache (POSIX_FADV_DONTNEED). */
int file_evict(const char *path);
/* Reads the whole file with pread so that it is in the page cache. */
int file_warm(const char *path);
/* Sets the file's times to now: hotmapd then sees a changed file and its
 * next open of it retires the cached entry and its mapping. */
int file_bump_mtime(const char *path);

uint64_t rng_next(uint64_t *s);
/* n offsets aligned to align, uniform so that off + len <= size. */
void random_offsets(uint64_t seed, uint64_t *offs, size_t n, uint64_t size, size_t len, size_t align);

int write_file(const char *path, uint64_t size, uint64_t seed);
int mkdir_p(const char *path, mode_t mode);
int remove_tree(const char *path);
/* snprintf for paths: exits when the result does not fit. */
void xsnprintf(char *dst, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
/* A buffer aligned to a page and pre-faulted. */
void *page_buffer(size_t n);

/* Runs fn in n child processes.  Each child calls setup (outside the
 * timing), waits until every child is ready, calls run, and reports. */
struct child_report {
	int status;		/* 0 or an errno */
	double t0, t1;		/* CLOCK_MONOTONIC, comparable across processes */
	uint64_t bytes;
	uint64_t ops;
	long minflt, majflt;
	double lat_p50, lat_p99;	/* per op or batch, in us */
	/* Memory the run added to the process, in KiB (workloads that ask):
	 * /proc/self/status RssAnon, RssFile, RssShmem and smaps_rollup Pss. */
	long anon_kib, file_kib, shmem_kib, pss_kib;
	uint64_t check;			/* a checksum of what was read */
	char err[120];
};
typedef int (*child_fn)(unsigned idx, void *arg, void **state, struct child_report *rep);
/* -1 and errno when a child could not be started; each child's status in
 * its report. */
int run_children(unsigned n, child_fn setup, child_fn run, child_fn teardown, void *arg,
		 struct child_report *reps);
/* What n children reported, together: from the first one's start to the
 * last one's end, their bytes, ops and minor faults, the worst p99, and
 * each one's p50 in p50[i] (p50 may be NULL).  A child that failed is
 * reported (report_failure: "WHO i: its error") and counted in bad.
 * In report.c. */
struct children_sum {
	double t0, t1, p99;
	uint64_t bytes, ops;
	long minflt;
	unsigned bad;
};
void children_sum(const char *workload, const char *contender, const char *who,
		  const struct child_report *reps, unsigned n, double *p50,
		  struct children_sum *s);

/* How the run was made, for the report (describe.c). */
const char *short_path(const char *arg);	/* ".../name" of an absolute path */
void print_machine(int argc, char **argv);
void print_damon(void);
long long vmstat_sum(const char *prefix);	/* /proc/vmstat counters by prefix */
void nginx_version(void);	/* into bench.nginx_version */
const char *fs_name(const char *path);

/* The dbprocs workload (dbprocs.c) over the contenders given. */
int dbprocs_run(const struct contender **cs, size_t nc);

/* Memory a forked child writes and its parent reads: zeroed, never NULL
 * (exits when out of memory). */
void *shared_alloc(size_t n);
void shared_free(void *p, size_t n);
/* fn(arg) in a forked child, waited for: 0, or fn's -errno (-ECHILD when
 * the child died).  What the child finds must go back in shared_alloc's
 * memory.  The child inherits the parent's libhotmap clients but not its
 * mappings' use: libhotmap maps files anew in a child (the idle mappings
 * it keeps are the parent's), and fork copies no page tables of shared
 * file mappings. */
int in_fresh_process(int (*fn)(void *arg), void *arg);

/* name is an element of the comma-separated list. */
bool list_has(const char *list, const char *name);
void bench_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern bool bench_is_child;

/*
 * Which of nc contenders runs k-th in round r: a Williams square (0, 1,
 * nc-1, 2, nc-2, ... shifted by r; for an odd nc, mirrored in every other
 * nc rounds), so that over nc rounds (2 nc for an odd nc) each contender
 * runs right after each other one exactly once (twice).  Rotating one order
 * (k + r) kept each contender behind the same one in all but the rounds
 * it ran first: pread ran right after hotmap in 14 of 15 rounds, and
 * whatever a process leaves behind (a mapping of hundreds of populated
 * blocks to tear down) was charged to pread alone: pread-again, the A/A
 * pair, read 15-40% faster than pread in those runs (docs/performance-history.md).
 */
static inline size_t
bench_order(size_t k, size_t r, size_t nc)
{
	size_t w;

	/* an odd nc needs the square and its mirror: 2 nc rounds */
	if (nc % 2 == 1 && (r / nc) % 2 == 1)
		k = nc - 1 - k;
	w = k == 0 ? 0 : k % 2 == 1 ? (k + 1) / 2 : nc - k / 2;
	return (w + r) % nc;
}

#endif
