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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "hotmap.h"
#include "hotmap_admin.h"
#include "bench/workload.h"


struct bench_ctx bench;

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
