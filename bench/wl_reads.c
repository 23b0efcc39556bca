/* SPDX-License-Identifier: MIT */
/*
 * wl_reads.c - hmbench's workloads of one reading process at a time, each
 * contender's run a job of its own: random 4 KiB reads, sequential 1 MiB,
 * sequential consumed in place, dependent lookups, isolation beside a cold
 * scan, cache states.
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

/* --- workload: random 4 KiB reads -------------------------------------------------- */

int
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
				const struct contender *c = cs[bench_order(k, r, nc)];
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
				add_ways(row, J);
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

int
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
			const struct contender *c = cs[bench_order(k, r, nc)];
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
			add_ways(row, J);
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

/* --- workload: sequential 1 MiB consumed in place ------------------------------------ */

int
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
			const struct contender *c = cs[bench_order(k, r, nc)];
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
			add_ways(row, J);
		}
	}
	report_print_table(W);
	job_free(J, n);
	return 0;
}

/* --- workload: dependent lookups --------------------------------------------------------- */

int
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
			const struct contender *c = cs[bench_order(k, r, nc)];
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
			add_ways(row, J);
		}
	}
	report_print_table(W);
	job_free(J, n);
	return 0;
}

/* --- workload: isolation ----------------------------------------------------------------------- */

int
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
			const struct contender *c = cs[bench_order(k, r, nc)];
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
			add_ways(row, J);

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
			add_ways(row, J);
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

int
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
				const struct contender *c = cs[bench_order(k, r, nc)];
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
				add_ways(row, J);
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
