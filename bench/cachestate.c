/* SPDX-License-Identifier: MIT */
/*
 * cachestate.c - the page cache and hotmapd's mappings as the workloads need them:
 * hmbench's own connection, cold and warm files, the hot file pre-touched
 * and warmed through hotmapd (see workload.h).
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
#include "hotmap.h"
#include "hotmap_admin.h"

unsigned cold_restarts;	/* hotmapd restarts needed to get a file cold */

/* --- cold and warm files --------------------------------------------------------- */

/*
 * A connection of hmbench's own (set-up, not a contender): the daemon's
 * tiers only, so that its reads do go through hotmapd (a pre-touch of its
 * mapping must not become the library's direct reads).
 */
hm_client *
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

void
keeper_hold(void)
{
	if (keeper == NULL && bench.hotmapd_pid > 0)
		keeper = daemon_connect();
}

void
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
void
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
double
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
double
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

double
make_warm(const char *path)
{
	double res = file_residency(path);

	if (res < 0.999) {
		file_warm(path);
		res = file_residency(path);
	}
	return res;
}

/* --- the hot file through hotmapd ------------------------------------------------- */

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

uint64_t
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
void
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
