/* SPDX-License-Identifier: MIT */
/*
 * test_read_ways.c - how reads were served, as the daemon shows it
 * (hm_files_ways, hm_clients_ways, hotmapctl files and clients, and the
 * Prometheus page): through the daemon, or by the clients from their own
 * mappings (copied, or pread on their own descriptor), with the probes
 * and the blocks populated that the clients report in their slots
 * (proto/direct.h).  Against a real hotmapd (tests/harness.h); the ways
 * are fixed with hm_options.copy_policy, so that no timing decides.
 *
 * And a hostile client: what it writes into its slots' counters is
 * bounded by the daemon (daemon/service/direct.h) and never lands on
 * another file or client.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/hotmap.h"
#include "client/hotmap_admin.h"
#include "tests/harness.h"

#define KiB (1024u)
#define MiB (1024u * 1024u)
#define FILE_SIZE (8u * MiB)
#define READS 400u
#define DAEMON_READS 7u

static int
setup(void **state)
{
	unsetenv("HOTMAP_COPY_POLICY");
	unsetenv("HOTMAP_DIRECT");
	*state = harness_start(NULL);
	alarm(120);
	return 0;
}

static int
teardown(void **state)
{
	alarm(0);
	harness_free_buffers();
	harness_stop(*state);
	return 0;
}

struct opened {
	hm_client *c;
	hm_file *f;
	int fd;
	char path[4096];
};

/* A client with direct reads from the first read and the policy given
 * (direct 0: through the daemon only), and a file of size bytes opened. */
static void
open_file(const struct harness *h, int direct, const char *policy, const char *name,
	  uint64_t size, struct opened *o)
{
	struct hm_options opt = HM_OPTIONS_INIT;

	harness_path(h, name, o->path);
	harness_write_file(o->path, size, 11);
	opt.direct = direct;
	opt.direct_after = 0;
	opt.copy_policy = policy;
	o->c = hm_connect_opts(h->sock, &opt);
	if (o->c == NULL)
		fail_msg("hm_connect_opts: %s (%s)", strerror(errno), hm_last_error());
	o->f = hm_open(o->c, o->path, direct ? HM_O_DIRECT : 0);
	if (o->f == NULL)
		fail_msg("hm_open %s: %s", o->path, strerror(errno));
	o->fd = open(o->path, O_RDONLY);
	assert_true(o->fd >= 0);
}

static void
close_file(struct opened *o)
{
	assert_int_equal(hm_close(o->f), 0);
	hm_disconnect(o->c);
	close(o->fd);
}

/* n reads of 4 KiB at random offsets among the first 64 KiB, each checked
 * byte for byte. */
static void
read_random(struct opened *o, unsigned n, uint64_t seed)
{
	uint64_t rs = seed;
	unsigned i;

	for (i = 0; i < n; i++) {
		uint64_t off = harness_rand(&rs) % (60 * KiB);

		assert_int_equal(harness_check_read(o->f, o->fd, off, 4 * KiB), 4 * KiB);
	}
}

static struct hm_read_stats
stats_of(hm_file *f)
{
	struct hm_read_stats st = { .size = sizeof st };

	assert_int_equal(hm_read_stats(f, &st), 0);
	return st;
}

/* --- the listings ---------------------------------------------------------- */

struct file_row {
	const char *path;
	bool found;
	struct hm_file_info info;
	struct hm_read_ways w;
};

static void
file_cb(const struct hm_file_info *info, const struct hm_read_ways *w, void *arg)
{
	struct file_row *r = arg;

	assert_true(w->size >= sizeof r->w);
	if (strcmp(info->path, r->path) != 0)
		return;
	assert_false(r->found);
	r->found = true;
	r->info = *info;
	r->w = *w;
}

static struct file_row
file_row(hm_client *admin, const char *path)
{
	struct file_row r = { .path = path };

	assert_int_equal(hm_files_ways(admin, file_cb, &r), 0);
	if (!r.found)
		fail_msg("hm_files_ways does not list %s", path);
	return r;
}

#define CLIENTS_MAX 16

struct client_rows {
	unsigned n;
	struct hm_client_info info[CLIENTS_MAX];
	struct hm_read_ways w[CLIENTS_MAX];
};

static void
client_cb(const struct hm_client_info *info, const struct hm_read_ways *w, void *arg)
{
	struct client_rows *r = arg;

	assert_true(w->size >= sizeof r->w[0]);
	assert_true(r->n < CLIENTS_MAX);
	r->info[r->n] = *info;
	r->info[r->n].name = NULL;
	r->w[r->n] = *w;
	r->n++;
}

/* The one client listed whose ways are want's (size aside). */
static void
assert_one_client(const struct client_rows *r, const struct hm_read_ways *want, const char *what)
{
	unsigned i, n = 0;

	for (i = 0; i < r->n; i++)
		if (r->w[i].daemon_reads == want->daemon_reads &&
		    r->w[i].copy_reads == want->copy_reads &&
		    r->w[i].pread_reads == want->pread_reads && r->w[i].probes == want->probes &&
		    r->w[i].populated_blocks == want->populated_blocks &&
		    r->w[i].populate_ns == want->populate_ns)
			n++;
	if (n != 1) {
		for (i = 0; i < r->n; i++)
			print_message("# client %u: daemon %" PRIu64 " copy %" PRIu64 " pread %" PRIu64
				      " probes %" PRIu64 " blocks %" PRIu64 " ns %" PRIu64 "\n", i,
				      r->w[i].daemon_reads, r->w[i].copy_reads, r->w[i].pread_reads,
				      r->w[i].probes, r->w[i].populated_blocks, r->w[i].populate_ns);
		fail_msg("%u clients listed as %s, want 1", n, what);
	}
}

/* What hotmapctl prints for args (a shell word list), whole. */
static char *
ctl_output(const struct harness *h, const char *args)
{
	const char *ctl = getenv("HOTMAPCTL") != NULL ? getenv("HOTMAPCTL") : "hotmapctl/hotmapctl";
	char cmd[8192];
	size_t n = 0, cap = 1 << 16;
	char *out = malloc(cap);
	FILE *p;

	assert_non_null(out);
	snprintf(cmd, sizeof cmd, "'%s' --socket '%s' %s", ctl, h->sock, args);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (n + 1 < cap) {
		size_t k = fread(out + n, 1, cap - 1 - n, p);

		if (k == 0)
			break;
		n += k;
	}
	out[n] = '\0';
	if (pclose(p) != 0)
		fail_msg("%s failed: %s", cmd, out);
	return out;
}

/* The line of text holding needle, copied into line; false when none. */
static bool
line_with(const char *text, const char *needle, char *line, size_t size)
{
	const char *p = strstr(text, needle), *a, *b;

	if (p == NULL)
		return false;
	for (a = p; a > text && a[-1] != '\n'; a--)
		;
	b = strchr(p, '\n');
	if (b == NULL)
		b = p + strlen(p);
	snprintf(line, size, "%.*s", (int)(b - a), a);
	return true;
}

/* Whether some line of a hotmapctl table (files, clients) has the ways
 * want (COPY PREAD DAEMON BLOCKS: the 10th to the 13th columns, after the
 * nine of either table, before the path or name) and ends with end. */
static bool
table_has(const char *text, const uint64_t want[4], const char *end)
{
	const char *a = text;

	while (*a != '\0') {
		const char *b = strchr(a, '\n');
		char line[8192];
		unsigned long long v[4];
		size_t n = b != NULL ? (size_t)(b - a) : strlen(a), e = strlen(end);

		snprintf(line, sizeof line, "%.*s", (int)n, a);
		if (sscanf(line, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu %llu %llu", &v[0],
			   &v[1], &v[2], &v[3]) == 4 &&
		    v[0] == want[0] && v[1] == want[1] && v[2] == want[2] && v[3] == want[3] &&
		    n >= e && strcmp(line + n - e, end) == 0)
			return true;
		if (b == NULL)
			break;
		a = b + 1;
	}
	return false;
}

/* The number after "key": in a JSON line. */
static uint64_t
json_number(const char *line, const char *key)
{
	char k[128];
	const char *p;

	snprintf(k, sizeof k, "\"%s\": ", key);
	p = strstr(line, k);
	if (p == NULL)
		fail_msg("no %s in %s", k, line);
	return strtoull(p + strlen(k), NULL, 10);
}

/* The sample's value on the Prometheus page, or -1 when absent. */
static int64_t
prom_sample(const char *page, const char *name)
{
	char line[512];
	size_t n = strlen(name);
	const char *p = page;

	while ((p = strstr(p, name)) != NULL) {
		if ((p == page || p[-1] == '\n') && p[n] == ' ') {
			assert_true(line_with(p, name, line, sizeof line));
			return (int64_t)strtoll(line + n + 1, NULL, 10);
		}
		p += n;
	}
	return -1;
}

/*
 * Four clients, each its own way: copies (way=copy, after hm_warm
 * populated blocks), preads (way=pread), the policy's own (way=auto: its
 * probes), and through the daemon.  The daemon's listings show each
 * exactly as the client counted it (hm_read_stats), per file and per
 * client, and so do hotmapctl files, clients and the Prometheus page.
 */
static void
test_ways_listed(void **state)
{
	const struct harness *h = *state;
	struct opened cp, pr, au, dm;
	struct hm_read_stats scp, spr, sau, sdm;
	struct file_row r;
	struct client_rows cr = { 0 };
	hm_client *admin;
	char line[8192], needle[4200];
	char *out;

	open_file(h, 1, "way=copy", "copy", FILE_SIZE, &cp);
	open_file(h, 1, "way=pread", "pread", FILE_SIZE, &pr);
	open_file(h, 1, NULL, "auto", FILE_SIZE, &au);
	open_file(h, 0, NULL, "daemon", FILE_SIZE, &dm);
	assert_int_equal(hm_warm(cp.f, 0, 4 * MiB), 4 * MiB);
	read_random(&cp, READS, 1);
	read_random(&pr, READS, 2);
	read_random(&au, READS, 3);
	read_random(&dm, DAEMON_READS, 4);
	scp = stats_of(cp.f);
	spr = stats_of(pr.f);
	sau = stats_of(au.f);
	sdm = stats_of(dm.f);
	assert_int_equal(scp.copy_reads + scp.touch_reads, READS);
	assert_int_equal(spr.pread_reads, READS);
	assert_int_equal(sdm.daemon_reads, DAEMON_READS);
	/* the kernel may not populate (before 5.14): then 0 */
	assert_true(scp.populates == 2 || scp.populates == 0);
	print_message("# populated %" PRIu64 " blocks in %" PRIu64 " ns; auto: %" PRIu64
		      " probes, %" PRIu64 " copies, %" PRIu64 " preads\n", scp.populates,
		      scp.populate_ns, sau.probes, sau.copy_reads + sau.touch_reads,
		      sau.pread_reads);

	admin = hm_connect(h->sock);
	assert_non_null(admin);
	/* per file */
	r = file_row(admin, cp.path);
	assert_int_equal(r.w.copy_reads, READS);
	assert_int_equal(r.w.pread_reads, 0);
	assert_int_equal(r.w.daemon_reads, 0);
	assert_int_equal(r.w.probes, 0);
	assert_int_equal(r.w.populated_blocks, scp.populates);
	assert_int_equal(r.w.populate_ns, scp.populate_ns);
	assert_int_equal(r.info.direct_reads, READS);
	r = file_row(admin, pr.path);
	assert_int_equal(r.w.pread_reads, READS);
	assert_int_equal(r.w.copy_reads + r.w.daemon_reads + r.w.probes, 0);
	r = file_row(admin, au.path);
	assert_int_equal(r.w.copy_reads, sau.copy_reads + sau.touch_reads);
	assert_int_equal(r.w.pread_reads, sau.pread_reads);
	assert_int_equal(r.w.probes, sau.probes);
	assert_int_equal(r.w.populated_blocks, sau.populates);
	assert_int_equal(r.w.daemon_reads, 0);
	r = file_row(admin, dm.path);
	assert_int_equal(r.w.daemon_reads, DAEMON_READS);
	assert_int_equal(r.w.copy_reads + r.w.pread_reads + r.w.probes + r.w.populated_blocks, 0);
	assert_int_equal(r.info.direct_reads, 0);

	/* per client: the four, and the admin's own connection, which read
	 * nothing */
	assert_int_equal(hm_clients_ways(admin, client_cb, &cr), 0);
	assert_int_equal(cr.n, 5);
	assert_one_client(&cr, &(struct hm_read_ways){ .copy_reads = READS,
			  .populated_blocks = scp.populates, .populate_ns = scp.populate_ns },
			  "copying");
	assert_one_client(&cr, &(struct hm_read_ways){ .pread_reads = READS }, "preading");
	assert_one_client(&cr, &(struct hm_read_ways){ .copy_reads = sau.copy_reads + sau.touch_reads,
			  .pread_reads = sau.pread_reads, .probes = sau.probes,
			  .populated_blocks = sau.populates, .populate_ns = sau.populate_ns },
			  "policy's");
	assert_one_client(&cr, &(struct hm_read_ways){ .daemon_reads = DAEMON_READS },
			  "through the daemon");
	assert_one_client(&cr, &(struct hm_read_ways){ 0 }, "reading nothing (the admin)");

	/* hotmapctl files: the ways are the four columns before the path */
	out = ctl_output(h, "files");
	assert_non_null(strstr(out, " IDLE_S       COPY      PREAD     DAEMON   BLOCKS  PATH\n"));
	snprintf(needle, sizeof needle, "  %s", cp.path);
	assert_true(table_has(out, (uint64_t[4]){ READS, 0, 0, scp.populates }, needle));
	snprintf(needle, sizeof needle, "  %s", pr.path);
	assert_true(table_has(out, (uint64_t[4]){ 0, READS, 0, 0 }, needle));
	snprintf(needle, sizeof needle, "  %s", dm.path);
	assert_true(table_has(out, (uint64_t[4]){ 0, 0, DAEMON_READS, 0 }, needle));
	free(out);
	out = ctl_output(h, "files --json");
	snprintf(needle, sizeof needle, "\"path\": \"%s\"", au.path);
	assert_true(line_with(out, needle, line, sizeof line));
	assert_int_equal(json_number(line, "direct_copy_reads"), sau.copy_reads + sau.touch_reads);
	assert_int_equal(json_number(line, "direct_pread_reads"), sau.pread_reads);
	assert_int_equal(json_number(line, "direct_probes"), sau.probes);
	assert_int_equal(json_number(line, "daemon_reads"), 0);
	snprintf(needle, sizeof needle, "\"path\": \"%s\"", cp.path);
	assert_true(line_with(out, needle, line, sizeof line));
	assert_int_equal(json_number(line, "direct_populated_blocks"), scp.populates);
	assert_int_equal(json_number(line, "direct_populate_ns"), scp.populate_ns);
	free(out);

	/* hotmapctl clients: the same four columns before the name */
	out = ctl_output(h, "clients");
	assert_non_null(strstr(out, " AGE_S       COPY      PREAD     DAEMON   BLOCKS  NAME\n"));
	assert_true(table_has(out, (uint64_t[4]){ 0, 0, DAEMON_READS, 0 }, ""));
	assert_true(table_has(out, (uint64_t[4]){ 0, READS, 0, 0 }, ""));
	assert_true(table_has(out, (uint64_t[4]){ READS, 0, 0, scp.populates }, ""));
	free(out);
	out = ctl_output(h, "clients --json");
	snprintf(needle, sizeof needle, "\"direct_copy_reads\": %u,", READS);
	assert_true(line_with(out, needle, line, sizeof line));
	assert_int_equal(json_number(line, "direct_pread_reads"), 0);
	assert_int_equal(json_number(line, "direct_populated_blocks"), scp.populates);
	assert_int_equal(json_number(line, "daemon_reads"), 0);
	free(out);

	/* the Prometheus page: the daemon's totals, which are these */
	out = ctl_output(h, "stats --prometheus");
	assert_int_equal(prom_sample(out, "hotmap_direct_reads_by_way_total{way=\"copy\"}"),
			 READS + sau.copy_reads + sau.touch_reads);
	assert_int_equal(prom_sample(out, "hotmap_direct_reads_by_way_total{way=\"pread\"}"),
			 READS + sau.pread_reads);
	assert_int_equal(prom_sample(out, "hotmap_direct_probes_total"), sau.probes);
	assert_int_equal(prom_sample(out, "hotmap_direct_populated_blocks_total"),
			 scp.populates + sau.populates);
	assert_int_equal(prom_sample(out, "hotmap_direct_reads_total"), 3 * READS);
	assert_non_null(strstr(out, "# TYPE hotmap_direct_populate_seconds_total counter\n"));
	assert_non_null(strstr(out, "# TYPE hotmap_direct_reads_by_way_total counter\n"));
	free(out);

	hm_disconnect(admin);
	close_file(&cp);
	close_file(&pr);
	close_file(&au);
	close_file(&dm);
}

/* --- a hostile client -------------------------------------------------------- */

#define BAD_SIZE (3u * MiB + 5u)	/* two blocks; no other file has this size */
#define BAD_BLOCKS 2u

/* Writes v into the counters (from the reads on: 8 words) of every
 * granted slot of this process whose file has BAD_SIZE bytes, in every
 * slot table it maps (the tail of a hotmap-region memfd, mapped apart:
 * at an offset); how many slots. */
static unsigned
poke_slots(const uint64_t v[7])
{
	FILE *maps = fopen("/proc/self/maps", "re");
	char line[512];
	unsigned n = 0;

	assert_non_null(maps);
	while (fgets(line, sizeof line, maps) != NULL) {
		unsigned long lo, hi, off;
		size_t i, k;

		if (strstr(line, "hotmap-region") == NULL ||
		    sscanf(line, "%lx-%lx %*s %lx", &lo, &hi, &off) != 3 || off == 0)
			continue;
		for (i = 0; i < (hi - lo) / 128; i++) {
			uint64_t *s = (uint64_t *)(uintptr_t)(lo + i * 128);

			if (s[0] == 0 || (s[0] & 1) != 0 || s[1] != BAD_SIZE)
				continue;	/* free, revoked, or not ours */
			for (k = 0; k < 7; k++)
				__atomic_store_n(&s[8 + k], v[k], __ATOMIC_RELAXED);
			n++;
		}
	}
	fclose(maps);
	return n;
}

/* The bounds of daemon/service/direct.h on what g grants (of BAD_BLOCKS
 * blocks) may have reported within elapsed_ms, over folds folds. */
static void
assert_ways_bounded(uint64_t reads, const struct hm_read_ways *w, unsigned g, int64_t elapsed_ms,
		    unsigned folds, const char *what)
{
	uint64_t ns = (uint64_t)elapsed_ms * 1000000u;
	uint64_t most_reads = g * (ns / 10u + folds);
	uint64_t most_blocks = (uint64_t)g * BAD_BLOCKS * ((uint64_t)elapsed_ms / 1000u + folds);

	print_message("# %s: reads %" PRIu64 " (at most %" PRIu64 "), copies %" PRIu64
		      ", preads %" PRIu64 ", probes %" PRIu64 ", blocks %" PRIu64
		      " (at most %" PRIu64 "), %" PRIu64 " ns in %" PRId64 " ms\n", what, reads,
		      most_reads, w->copy_reads, w->pread_reads, w->probes, w->populated_blocks,
		      most_blocks, w->populate_ns, elapsed_ms);
	assert_true(reads <= most_reads);
	assert_true(w->copy_reads <= reads);
	assert_true(w->pread_reads <= reads - w->copy_reads);
	assert_true(w->probes <= w->copy_reads + w->pread_reads);
	assert_true(w->populated_blocks <= most_blocks);
	assert_true(w->populate_ns <= g * ns);
	assert_int_equal(w->daemon_reads, 0);
}

struct bad_client {
	bool found;
	struct hm_client_info info;
	struct hm_read_ways w;
};

static void
bad_client_cb(const struct hm_client_info *info, const struct hm_read_ways *w, void *arg)
{
	struct bad_client *b = arg;

	if (info->direct_grants != 2)
		return;	/* the honest client holds one */
	b->found = true;
	b->info = *info;
	b->w = *w;
}

/*
 * Every fold of the slots (each listing, the stats, a release) is counted
 * in folds: each may add a read more than the time allows, and a period's
 * blocks.  The honest client's file and client show exactly what it read:
 * nothing the hostile one wrote spills onto them.
 */
static void
check_bounded(hm_client *admin, const struct opened *good, const struct opened *bad,
	      const char *other_bad, int64_t t0, unsigned *folds, const char *when)
{
	struct bad_client b = { 0 };
	struct file_row r;
	struct hm_read_ways all = { 0 };
	int64_t elapsed;

	r = file_row(admin, good->path);
	++*folds;
	assert_int_equal(r.w.copy_reads, READS);
	assert_int_equal(r.w.pread_reads + r.w.probes + r.w.populated_blocks + r.w.populate_ns, 0);
	assert_int_equal(r.info.direct_reads, READS);

	r = file_row(admin, bad->path);
	++*folds;
	elapsed = harness_now_ms() - t0 + 1;
	assert_ways_bounded(r.info.direct_reads, &r.w, 1, elapsed, *folds, when);
	r = file_row(admin, other_bad);
	++*folds;
	elapsed = harness_now_ms() - t0 + 1;
	assert_ways_bounded(r.info.direct_reads, &r.w, 1, elapsed, *folds, when);

	if (bad->c != NULL) {
		assert_int_equal(hm_clients_ways(admin, bad_client_cb, &b), 0);
		++*folds;
		elapsed = harness_now_ms() - t0 + 1;
		assert_true(b.found);
		assert_ways_bounded(b.info.direct_reads, &b.w, 2, elapsed, *folds, when);
	}

	all.copy_reads = harness_stat(admin, "direct_reads_copy");
	all.pread_reads = harness_stat(admin, "direct_reads_pread");
	all.probes = harness_stat(admin, "direct_probes");
	all.populated_blocks = harness_stat(admin, "direct_populated_blocks");
	all.populate_ns = harness_stat(admin, "direct_populate_ns");
	*folds += 5;
	elapsed = harness_now_ms() - t0 + 1;
	/* the honest client's own, and the hostile one's bounded */
	assert_true(all.copy_reads >= READS);
	all.copy_reads -= READS;
	assert_ways_bounded(harness_stat(admin, "direct_reads") - READS, &all, 2, elapsed,
			    ++*folds, when);
}

static void
test_hostile_slot_counters_bounded(void **state)
{
	const struct harness *h = *state;
	static const uint64_t huge[7] = { 1000000000000ull, 4100000000000000ull,
					  1000000000000000ull, 1000000000000000ull,
					  10000000000000000ull, 1000000000000000ull,
					  1000000000000000000ull };
	static const uint64_t back[7] = { 5, 5, 5, 5, 5, 5, 5 };
	static const uint64_t top[7] = { UINT64_MAX - 99, UINT64_MAX - 99, UINT64_MAX - 99,
					 UINT64_MAX - 99, UINT64_MAX - 99, UINT64_MAX - 99,
					 UINT64_MAX - 99 };
	struct opened good, bad;
	char other[4096];
	hm_file *f2;
	hm_client *admin;
	unsigned folds = 0;
	int64_t t0;

	/* the honest client, done reading: its counts are exact */
	open_file(h, 1, "way=copy", "good", FILE_SIZE, &good);
	read_random(&good, READS, 5);
	admin = hm_connect(h->sock);
	assert_non_null(admin);

	t0 = harness_now_ms();	/* before the hostile grants */
	open_file(h, 1, "way=copy", "bad", BAD_SIZE, &bad);
	harness_path(h, "bad2", other);
	harness_write_file(other, BAD_SIZE, 12);
	f2 = hm_open(bad.c, other, HM_O_DIRECT);
	assert_non_null(f2);
	assert_int_equal(poke_slots(huge), 2);
	check_bounded(admin, &good, &bad, other, t0, &folds, "after 10^15 poked");
	assert_int_equal(poke_slots(back), 2);
	check_bounded(admin, &good, &bad, other, t0, &folds, "after a poke backwards");
	assert_int_equal(poke_slots(top), 2);
	check_bounded(admin, &good, &bad, other, t0, &folds, "after a poke to 2^64 - 100");
	assert_int_equal(hm_close(f2), 0);
	folds++;	/* the release folds */
	close_file(&bad);
	folds++;
	bad.c = NULL;
	check_bounded(admin, &good, &bad, other, t0, &folds, "after the close");
	hm_disconnect(admin);
	close_file(&good);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ways_listed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_slot_counters_bounded, setup,
						teardown),
	};

	return cmocka_run_group_tests_name("read-ways", tests, NULL, NULL);
}
