/* SPDX-License-Identifier: MIT */
/*
 * wl_scale.c - hmbench's scale workload: many files open in the server, many
 * clients connected.
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

int
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
				struct scale_state *s = &st[bench_order(k, r, nc)];
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

