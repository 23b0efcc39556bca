/* SPDX-License-Identifier: MIT */
/*
 * dbprocs.c - the dbprocs workload: short-lived processes, several at once
 * on few cores, each a new program (bench/hmproc, exec'd) that opens the
 * hot file, does random 4 KiB lookups like a database's, closes and
 * exits.  Every contender starts from the same state: new processes, the
 * file in the page cache and in hotmapd's mapping; nothing of one
 * contender's is left in another's processes.
 *
 * Measures per round and contender: the wall time from the first fork to
 * the last exit (the primary figure, lower is better), and per process
 * its start (fork to main), connect + open, lookups and close, its CPU
 * time and minor faults (wait4).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/workload.h"

#define DB_MAX_PROCS 64

/* Four contenders of this workload alone, run by hmproc's modes of the
 * same names (its others are contender.c's, the hotmap ones as "hotmap"):
 * the library with HOTMAP_FALLBACK=local, whose connect and open wait
 * for no answer of hotmapd (and, for a file in hotmapd's table of granted
 * files, tell it nothing); the same with HOTMAP_TABLE=0; the floor of any connect that waits, one
 * round trip and nothing else; and the floor of any connect + open that
 * waits for nothing, a HELLO and an OPEN sent in one sendmsg without the
 * library.  Measured after the "hotmap" row, when the run has one
 * (hotmapd's contenders are available) and --contenders names them or
 * nothing. */
static const struct contender db_extra[] = {
	{
		.name = "hotmap-fallback",
		.label = "libhotmap's defaults with HOTMAP_FALLBACK=local: connect and open wait for "
			 "no answer of hotmapd (read here until the answers are in)",
		.flags = CF_HOTMAP,
		.workloads = W_DBPROCS,
		.direct = DIRECT_DEFAULT,
	},
	{
		.name = "fallback-no-table",
		.label = "hotmap-fallback with HOTMAP_TABLE=0: connect and open tell hotmapd "
			 "(HELLO, OPEN) and wait for nothing, as before the table of granted files",
		.flags = CF_HOTMAP,
		.workloads = W_DBPROCS,
		.direct = DIRECT_DEFAULT,
	},
	{
		.name = "hello-only",
		.label = "hm_connect_opts with no region and no direct tier, then exit: one round "
			 "trip to hotmapd, nothing read",
		.flags = CF_HOTMAP,
		.workloads = W_DBPROCS,
		.shm_size = "0",
		.direct = 0,
	},
	{
		.name = "contact",
		.label = "no libhotmap: open + fstat, then a socket to hotmapd and one sendmsg of "
			 "HELLO and OPEN with the descriptor, no answer awaited, then pread: the "
			 "floor of a connect + open that tells hotmapd and waits for nothing",
		.flags = CF_HOTMAP,
		.workloads = W_DBPROCS,
		.shm_size = "0",
		.direct = 0,
	},
};

/* cs[0..nc) and, after the "hotmap" row, the extras selected: how many. */
static size_t
db_contenders(const struct contender **cs, size_t nc, const struct contender **out)
{
	size_t i, j, n = 0;

	for (i = 0; i < nc && n < BENCH_MAX_CONTENDERS; i++) {
		out[n++] = cs[i];
		if (strcmp(cs[i]->name, "hotmap") != 0)
			continue;
		for (j = 0; j < sizeof db_extra / sizeof db_extra[0] && n < BENCH_MAX_CONTENDERS; j++)
			if (contender_selected(&db_extra[j]))
				out[n++] = &db_extra[j];
	}
	return n;
}

/* bench/hmproc: $HMPROC, else beside hmbench (or one up, from .libs). */
static const char *
hmproc_path(void)
{
	static char path[PATH_MAX];
	char exe[PATH_MAX], *slash;
	ssize_t n;
	const char *env = getenv("HMPROC");

	if (env != NULL && *env != '\0')
		return env;
	n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash == NULL)
		return NULL;
	*slash = '\0';
	snprintf(path, sizeof path, "%.*s/hmproc", (int)(sizeof path - 8), exe);
	if (access(path, X_OK) == 0)
		return path;
	slash = strrchr(exe, '/');
	if (slash != NULL && strcmp(slash, "/.libs") == 0) {
		*slash = '\0';
		snprintf(path, sizeof path, "%.*s/hmproc", (int)(sizeof path - 8), exe);
		if (access(path, X_OK) == 0)
			return path;
	}
	return NULL;
}

struct db_proc {
	pid_t pid;
	int out;		/* its stdout */
	double t_fork;
	double t[6];		/* main, connect+open done, reads done, close done, connect done,
				 * begin (set up: connect + open's clock starts) */
	double co_cpu;		/* CPU seconds of connect + open */
	long co_flt;		/* minor faults of connect + open */
	char line[256];
	size_t len;
	struct rusage ru;
	int status;
};

/* The first ncpu processors this process may run on, for the children. */
static int
db_cpus(cpu_set_t *set, unsigned ncpu)
{
	cpu_set_t all;
	unsigned i, n = 0;

	CPU_ZERO(set);
	if (ncpu == 0 || sched_getaffinity(0, sizeof all, &all) < 0)
		return -1;
	for (i = 0; i < CPU_SETSIZE && n < ncpu; i++)
		if (CPU_ISSET(i, &all)) {
			CPU_SET(i, set);
			n++;
		}
	return (int)n;
}

static int
db_spawn(struct db_proc *p, const char *exe, char **argv, const cpu_set_t *cpus)
{
	int fds[2];

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	p->t_fork = now_s();
	p->pid = fork();
	if (p->pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -errno;
	}
	if (p->pid == 0) {
		bench_is_child = true;
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		if (cpus != NULL)
			(void)sched_setaffinity(0, sizeof *cpus, cpus);
		dup2(fds[1], 1);
		execv(exe, argv);
		_exit(127);
	}
	close(fds[1]);
	p->out = fds[0];
	p->len = 0;
	return 0;
}

/* Reads every child's line and reaps it (wait4: its CPU time and faults). */
static void
db_collect(struct db_proc *ps, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		ssize_t r;

		while ((r = read(ps[i].out, ps[i].line + ps[i].len, sizeof ps[i].line - 1 - ps[i].len)) > 0)
			ps[i].len += (size_t)r;
		ps[i].line[ps[i].len] = '\0';
		close(ps[i].out);
	}
	for (i = 0; i < n; i++)
		while (wait4(ps[i].pid, &ps[i].status, 0, &ps[i].ru) < 0 && errno == EINTR)
			;
}

static double
tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
}

static double
pct(double *v, unsigned n, double p)
{
	sort_doubles(v, n);
	return percentile(v, n, p);
}

/*
 * The same state for every hotmap contender's processes: the hot file
 * granted to a client of hmbench's (a direct one, the library's
 * defaults), opened and closed, so that hotmapd publishes it in its table
 * of granted files for its direct-table seconds, as any earlier reader's
 * grant would (docs/direct-reads.md).  Connects c when NULL; c, or NULL.
 */
static hm_client *
db_publish(hm_client *c)
{
	hm_file *f;

	if (c == NULL)
		c = hm_connect(bench.hotmap_sock);
	if (c == NULL)
		return NULL;
	f = hm_open(c, bench.hot_path, 0);
	if (f != NULL)
		hm_close(f);
	return c;
}

int
dbprocs_run(const struct contender **given, size_t ngiven)
{
	const struct contender *cs[BENCH_MAX_CONTENDERS];
	size_t nc = db_contenders(given, ngiven, cs);
	const char *W = "dbprocs", *exe = hmproc_path();
	unsigned np = bench.o.db_procs, r, i;
	struct db_proc ps[DB_MAX_PROCS];
	double co[DB_MAX_PROCS], start[DB_MAX_PROCS], reads[DB_MAX_PROCS], clos[DB_MAX_PROCS],
	       life[DB_MAX_PROCS], cpu[DB_MAX_PROCS], conn[DB_MAX_PROCS], cocpu[DB_MAX_PROCS],
	       setup[DB_MAX_PROCS], comain[DB_MAX_PROCS];
	cpu_set_t cpus;
	int ncpu = db_cpus(&cpus, bench.o.db_cpus);
	hm_client *pub;
	char variant[32], nreads[16], seed[32];

	if (np == 0 || np > DB_MAX_PROCS) {
		report_failure(W, "-", "--db-procs must be 1 to %d", DB_MAX_PROCS);
		return -1;
	}
	if (exe == NULL) {
		report_failure(W, "-", "bench/hmproc not found (build it: make bench/hmproc; or set HMPROC)");
		return -1;
	}
	report_section(W, "short-lived processes at once: a database's lookups",
		       "  %u new processes started at once (fork + exec of bench/hmproc, pinned to %d "
		       "CPUs), each: open the hot %llu MiB file its way, %u random 4 KiB reads, close, exit; "
		       "a new set per contender and round, so none inherits another's mappings.\n"
		       "  wall_ms: first fork to last exit (lower is better; x pread = pread's / this). "
		       "Per process (median over rounds of each round's percentile): co_* connect + open, "
		       "clocked once the process is set up as a program is when it opens its file "
		       "(arguments parsed, malloc in use: its first use is no contender's) "
		       "(pread: open; mmap-new: open + mmap; hotmap: hm_connect_opts + hm_open; issue 29 "
		       "target for hotmap: p50 <= 0.5 ms; hotmap-fallback: the same with "
		       "HOTMAP_FALLBACK=local, which waits for no answer and, for a file in hotmapd's table of granted files, tells it nothing; fallback-no-table: the same with HOTMAP_TABLE=0; hello-only: hm_connect_opts with no "
		       "region and nothing else, one round trip, the floor of a connect that waits; contact: no library, open + fstat + a socket + one sendmsg of HELLO and OPEN, the floor of a connect + open that waits for nothing), conn_p50 its connect alone (hm_connect_opts), "
		       "co_cpu_ms and co_minflt the process's own CPU time (p50) and faults in connect + open, "
		       "setup_p50 main to the clock's start (arguments, malloc's first use), co_main_p50 "
		       "connect + open with that setup in it (the clock from main, as before these columns), "
		       "start_p50 fork to main (exec, loader), "
		       "reads_p50 the lookups, close_p50, cpu_ms user + system, minflt (wait4).",
		       np, ncpu, (unsigned long long)(bench.o.file_size >> 20), bench.o.db_reads);
	pub = db_publish(NULL);
	report_meta("dbprocs", "the hot file in hotmapd's table of granted files before each hotmap "
		    "contender's processes (a grant to a client of hmbench's, as any earlier "
		    "reader's publishes it; hotmapd.conf(5) direct-table): %s",
		    pub != NULL && daemon_counter(pub, "direct_table_files") > 0 ? "yes" :
		    "no (hotmapd publishes none)");
	snprintf(variant, sizeof variant, "%u procs x %u", np, bench.o.db_reads);
	snprintf(nreads, sizeof nreads, "%u", bench.o.db_reads);
	for (r = 0; r < bench.o.rounds; r++) {
		size_t k;

		bench_log("%s round %u/%u", W, r + 1, bench.o.rounds);
		for (k = 0; k < nc; k++) {
			const struct contender *c = cs[bench_order(k, r, nc)];
			char shm[32], direct[8];
			char *argv[9] = { "hmproc", NULL, bench.hotmap_sock, bench.hot_path, nreads, seed,
					  NULL, NULL, NULL };
			double t0, wall, minflt = 0, coflt = 0;
			unsigned started = 0, bad = 0;
			struct row *row;

			if (c->flags & CF_HOTMAP) {
				/* hmproc's mode: the contender's name says the two
				 * that only this workload has */
				argv[1] = strcmp(c->name, "hotmap-fallback") == 0 ? "hotmap-fallback" :
					  strcmp(c->name, "fallback-no-table") == 0 ?
					  "hotmap-fallback-no-table" :
					  strcmp(c->name, "hello-only") == 0 ? "hello" :
					  strcmp(c->name, "contact") == 0 ? "contact" : "hotmap";
				snprintf(shm, sizeof shm, "%s", c->shm_size != NULL ? c->shm_size : "-1");
				snprintf(direct, sizeof direct, "%d", c->direct);
				argv[6] = shm;
				argv[7] = direct;
			} else {
				argv[1] = (c->flags & CF_MAPPING) ? "mmap" : "pread";
			}
			if (c->flags & CF_HOTMAP)
				(void)db_publish(pub);
			t0 = now_s();
			for (i = 0; i < np; i++) {
				/* every contender's i-th process reads the same offsets */
				snprintf(seed, sizeof seed, "%llu",
					 (unsigned long long)(bench.o.seed * 1000003ULL + r * 1009ULL + i));
				if (db_spawn(&ps[i], exe, argv, ncpu > 0 ? &cpus : NULL) < 0)
					break;
				started++;
			}
			db_collect(ps, started);
			wall = now_s() - t0;
			for (i = 0; i < started; i++) {
				struct db_proc *p = &ps[i];

				if (!WIFEXITED(p->status) || WEXITSTATUS(p->status) != 0 ||
				    sscanf(p->line, "%lf %lf %lf %lf %lf %lf %lf %ld", &p->t[0], &p->t[5],
					   &p->t[1], &p->t[2], &p->t[3], &p->t[4], &p->co_cpu,
					   &p->co_flt) != 8) {
					if (bad++ == 0)
						report_failure(W, c->name, "process %u: exit status %d (%s)", i,
							       WIFEXITED(p->status) ? WEXITSTATUS(p->status) : -1,
							       "its stderr is above");
					continue;
				}
				start[i - bad] = (p->t[0] - p->t_fork) * 1e3;
				co[i - bad] = (p->t[1] - p->t[5]) * 1e3;
				setup[i - bad] = (p->t[5] - p->t[0]) * 1e3;
				comain[i - bad] = (p->t[1] - p->t[0]) * 1e3;
				conn[i - bad] = (p->t[4] - p->t[5]) * 1e3;
				cocpu[i - bad] = p->co_cpu * 1e3;
				coflt += (double)p->co_flt;
				reads[i - bad] = (p->t[2] - p->t[1]) * 1e3;
				clos[i - bad] = (p->t[3] - p->t[2]) * 1e3;
				life[i - bad] = (p->t[3] - p->t_fork) * 1e3;
				cpu[i - bad] = (tv_s(p->ru.ru_utime) + tv_s(p->ru.ru_stime)) * 1e3;
				minflt += (double)p->ru.ru_minflt;
			}
			if (bad > 0 || started < np)
				continue;
			row = row_get(W, variant, c->name);
			row->higher_better = false;
			row_add(row, "wall_ms", "ms", wall * 1e3);
			row_add(row, "co_p50_ms", "ms", pct(co, np, 50));
			row_add(row, "co_p95_ms", "ms", pct(co, np, 95));
			row_add(row, "conn_p50_ms", "ms", pct(conn, np, 50));
			row_add(row, "setup_p50_ms", "ms", pct(setup, np, 50));
			row_add(row, "co_main_p50_ms", "ms", pct(comain, np, 50));
			row_add(row, "co_cpu_ms", "ms", pct(cocpu, np, 50));
			row_add(row, "co_minflt", "faults/proc", coflt / np);
			row_add(row, "start_p50_ms", "ms", pct(start, np, 50));
			row_add(row, "reads_p50_ms", "ms", pct(reads, np, 50));
			row_add(row, "close_p50_ms", "ms", pct(clos, np, 50));
			row_add(row, "life_p50_ms", "ms", pct(life, np, 50));
			row_add(row, "cpu_ms", "ms/proc", pct(cpu, np, 50));
			row_add(row, "minflt", "faults/proc", minflt / np);
		}
	}
	report_print_table(W);
	hm_disconnect(pub);
	return 0;
}
