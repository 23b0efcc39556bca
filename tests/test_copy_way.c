/* SPDX-License-Identifier: MIT */
/*
 * test_copy_way.c - the direct tier's copy policy as a program sees it,
 * against a real hotmapd (tests/harness.h): its knobs (HOTMAP_COPY_POLICY,
 * hm_options.copy_policy) and their errors, hm_read_stats' counts of which
 * way each read went, and HOTMAP_COPY_LOG's lines.  Every byte read is
 * checked against pread(2).  What the policy decides, cost by cost, is
 * tests/test_copy_policy.c's (no clock there; no timing here).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/hotmap.h"
#include "proto/pagemap.h"
#include "tests/harness.h"

#define KiB (1024u)
#define MiB (1024u * 1024u)
#define FILE_SIZE (8u * MiB)
#define READS 400u

static int
setup(void **state)
{
	unsetenv("HOTMAP_COPY_POLICY");
	unsetenv("HOTMAP_COPY_LOG");
	unsetenv("HOTMAP_DIRECT");
	*state = harness_start(NULL);
	alarm(120);
	return 0;
}

static int
teardown(void **state)
{
	alarm(0);
	unsetenv("HOTMAP_COPY_POLICY");
	unsetenv("HOTMAP_COPY_LOG");
	harness_free_buffers();
	harness_stop(*state);
	return 0;
}

/* A client with direct reads from the first read, and the policy given. */
static hm_client *
connect_policy(const struct harness *h, const char *policy)
{
	return harness_connect_direct(h, 0, policy);
}

struct opened {
	hm_client *c;
	hm_file *f;
	int fd;
	char path[4096];
};

/* o->path opened by a new client with the policy given. */
static void
reopen_file(const struct harness *h, const char *policy, struct opened *o)
{
	o->c = connect_policy(h, policy);
	o->f = hm_open(o->c, o->path, HM_O_DIRECT);
	if (o->f == NULL)
		fail_msg("hm_open: %s", strerror(errno));
	o->fd = open(o->path, O_RDONLY);
	assert_true(o->fd >= 0);
}

static void
open_file(const struct harness *h, const char *policy, const char *name, struct opened *o)
{
	harness_path(h, name, o->path);
	harness_write_file(o->path, FILE_SIZE, 7);
	reopen_file(h, policy, o);
}

static void
close_file(struct opened *o)
{
	assert_int_equal(hm_close(o->f), 0);
	hm_disconnect(o->c);
	close(o->fd);
}

/* READS reads of 4 KiB at random offsets among the first `span` bytes,
 * each checked byte for byte. */
static void
read_random(struct opened *o, uint64_t span, uint64_t seed)
{
	uint64_t rs = seed;
	unsigned i;

	for (i = 0; i < READS; i++) {
		uint64_t off = harness_rand(&rs) % (span - 4 * KiB);

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

/* way=pread: every read is pread on the process's own descriptor, none
 * copies, none crosses to the daemon; the estimates say pread's cost. */
static void
test_way_pread(void **state)
{
	struct opened o;
	struct hm_read_stats st;

	open_file(*state, "way=pread", "p", &o);
	read_random(&o, 64 * KiB, 1);
	st = stats_of(o.f);
	assert_int_equal(st.direct, HM_DIRECT_YES);
	assert_int_equal(st.pread_reads, READS);
	assert_int_equal(st.copy_reads + st.touch_reads, 0);
	assert_int_equal(st.daemon_reads, 0);
	assert_int_equal(st.populates, 0);
	close_file(&o);
}

/* way=copy: every read copies out of the mapping; a page's first read
 * touches it, its later ones copy.  16 pages read 400 times: 16 touches
 * at most (a read of two pages touches both). */
static void
test_way_copy(void **state)
{
	struct opened o;
	struct hm_read_stats st;

	open_file(*state, "way=copy", "c", &o);
	read_random(&o, 64 * KiB, 2);
	st = stats_of(o.f);
	assert_int_equal(st.pread_reads, 0);
	assert_int_equal(st.copy_reads + st.touch_reads, READS);
	assert_true(st.touch_reads >= 1 && st.touch_reads <= 16);
	assert_true(st.touch_ns > 0);	/* a touch is always timed */
	assert_int_equal(st.daemon_reads, 0);
	close_file(&o);
}

/* The policy itself (way=auto, the default): whatever it chooses, every
 * read is one of the ways and every byte is right; a page read often
 * enough is touched (at its second read until a touch is measured, and
 * within hits_max reads after), or its block populated (within
 * populate_after of the block's reads), so a hot set of 16 pages gets
 * into the mapping's page tables one way or the other. */
static void
test_auto_counts(void **state)
{
	struct opened o;
	struct hm_read_stats st;
	unsigned rounds = 0;

	open_file(*state, NULL, "a", &o);
	/* touched within hits_max (127) reads of a page whatever a touch
	 * was measured to cost (the tests before time theirs, and on a
	 * loaded machine one may take many times what it takes alone): 16
	 * pages, 25 reads of each a round */
	do {
		read_random(&o, 64 * KiB, 3 + rounds++);
		st = stats_of(o.f);
	} while (st.touch_reads == 0 && st.populates == 0 && rounds < 20);
	assert_int_equal(st.pread_reads + st.copy_reads + st.touch_reads, rounds * READS);
	assert_true(st.touch_reads + st.populates >= 1);
	assert_true(st.pread_reads >= 1);	/* each page's first read */
	assert_true(st.pread_ns > 0 || st.copy_ns > 0);
	assert_true(st.populate_after >= 4);
	close_file(&o);
}

/* hm_warm populates its blocks: counted, with what they took, and their
 * pages are touched: with way=copy (the way fixed, so that no timing
 * decides), every read after is a copy and none a first touch.  After
 * the mapping's first block, the blocks of a warm go in runs (one
 * madvise for up to 1 GiB), each block once. */
static void
test_warm_counts_populates(void **state)
{
	struct opened o;
	struct hm_read_stats st;

	open_file(*state, "way=copy", "w", &o);
	assert_int_equal(hm_warm(o.f, 0, 4 * MiB), 4 * MiB);
	st = stats_of(o.f);
	/* two blocks of 2 MiB, unless the kernel cannot populate */
	assert_true(st.populates == 2 || st.populates == 0);
	print_message("# hm_warm populated %llu blocks in %llu ns\n",
		      (unsigned long long)st.populates, (unsigned long long)st.populate_ns);
	if (st.populates == 2) {
		assert_true(st.populate_ns > 0);
		assert_true(st.block_ns > 0);
		read_random(&o, 4 * MiB, 4);
		st = stats_of(o.f);
		assert_int_equal(st.touch_reads, 0);
		assert_int_equal(st.copy_reads, READS);
		/* the rest of the file: the two blocks after, in one run
		 * (the first block said what the folios are); the blocks
		 * warmed before are not populated again, nor are any by a
		 * warm after */
		assert_int_equal(hm_warm(o.f, 0, FILE_SIZE), FILE_SIZE);
		assert_int_equal(stats_of(o.f).populates, 4);
		assert_int_equal(hm_warm(o.f, MiB, FILE_SIZE), FILE_SIZE - MiB);
		assert_int_equal(stats_of(o.f).populates, 4);
		read_random(&o, FILE_SIZE, 6);
		st = stats_of(o.f);
		assert_int_equal(st.touch_reads, 0);
		assert_int_equal(st.copy_reads, 2 * READS);
	}
	close_file(&o);
}

/* A view of 2 MiB or more builds its pages' page tables, and the policy
 * is told: hm_pread of the viewed range copies out of the mapping from
 * its first read, none touches and none takes pread.  Before, the pages
 * counted as untouched and were read with pread until the rent-or-buy
 * rule bought them again (hmbench rand4k, hotmap-touched: 1.19x pread,
 * 3.04x with this).  No read is timed but the first (no burst after
 * it), and none probes: with no estimate to go by, the page state alone
 * decides. */
static void
test_view_makes_copies(void **state)
{
	struct opened o;
	struct hm_read_stats st;
	struct hm_view v;

	char *ref = malloc(4 * MiB);

	assert_non_null(ref);
	open_file(*state, "probe_every=0,sample_every=4294967295,burst=0", "v", &o);
	assert_int_equal(hm_view_range(o.f, 0, 4 * MiB, &v), 0);
	assert_int_equal(v.len, 4 * MiB);
	/* read, as a view is made to be (on a virtual machine a page whose
	 * tables were built but never read may trap at its first read) */
	assert_int_equal(pread(o.fd, ref, 4 * MiB, 0), (ssize_t)(4 * MiB));
	assert_memory_equal(v.data, ref, 4 * MiB);
	free(ref);
	hm_view_release(&v);
	read_random(&o, 4 * MiB, 5);
	st = stats_of(o.f);
	print_message("# after a 4 MiB view: %llu copies, %llu touches, %llu preads\n",
		      (unsigned long long)st.copy_reads, (unsigned long long)st.touch_reads,
		      (unsigned long long)st.pread_reads);
	assert_int_equal(st.copy_reads, READS);
	assert_int_equal(st.touch_reads + st.pread_reads, 0);
	/* a view of less than a block is left to fault as it is read: its
	 * pages are not the policy's to count as touched */
	assert_int_equal(hm_view_range(o.f, 6 * MiB, 64 * KiB, &v), 0);
	hm_view_release(&v);
	assert_int_equal(harness_check_read(o.f, o.fd, 6 * MiB + 8 * KiB, 4 * KiB), 4 * KiB);
	st = stats_of(o.f);
	assert_int_equal(st.copy_reads, READS);
	close_file(&o);
}

/*
 * The prior (docs/direct-reads.md, rule 10): a client that read each
 * block of a file often and closed it leaves its count with hotmapd, and
 * the next client to open the file populates a block at its first read
 * rather than after its reads have paid for it.  With prior=0 it does
 * not.  No timing decides: the first client reads every byte with pread
 * (way=pread) and its CLOSE is answered before the next client opens (a
 * ping on the same connection); the others' banks refill at a pread a
 * read (allowance), and their prior gain (gain_ns, which a mapping takes
 * until it has timed a copy) makes any block's price one read, so that
 * the count (a 2 MiB file read 4,000 times: 4,000 a block) is above it
 * whatever this process measured a block to cost, once it has measured a
 * pread (measure_pread).
 */
#define PRIOR_READS 4000u

/* This process's pread measured, which the prior waits for (rule 10),
 * whichever tests ran before: every small read timed (sample_every=1),
 * two of pages not read before (the first a process times is not a
 * sample, rule 6); a mapping opened after takes the estimate. */
static void
measure_pread(const struct harness *h)
{
	struct opened m;

	open_file(h, "sample_every=1", "pread", &m);
	assert_int_equal(harness_check_read(m.f, m.fd, 0, 4 * KiB), 4 * KiB);
	assert_int_equal(harness_check_read(m.f, m.fd, 4 * MiB, 4 * KiB), 4 * KiB);
	assert_true(stats_of(m.f).pread_ns > 0);
	close_file(&m);
}

static void
test_prior_from_daemon(void **state)
{
	const struct harness *h = *state;
	struct opened o;
	struct hm_read_stats st;
	uint64_t rs = 11;
	unsigned i;

	harness_path(h, "prior", o.path);
	harness_write_file(o.path, 2 * MiB, 7);
	reopen_file(h, "way=pread", &o);
	st = stats_of(o.f);
	assert_int_not_equal(st.populate_after, 1);	/* no prior yet */
	for (i = 0; i < PRIOR_READS; i++)
		assert_int_equal(harness_check_read(o.f, o.fd,
						    harness_rand(&rs) % (2 * MiB - 4 * KiB), 4 * KiB),
				 4 * KiB);
	assert_int_equal(hm_close(o.f), 0);
	{
		struct hm_ping p;

		assert_int_equal(hm_ping(o.c, &p), 0);	/* the CLOSE is done */
	}
	hm_disconnect(o.c);
	close(o.fd);

	measure_pread(h);
	reopen_file(h, "allowance=1000,gain_ns=4000000000", &o);
	st = stats_of(o.f);
	assert_int_equal(st.populate_after, 1);
	/* its first read is pread, and populates the block (never a touch of
	 * the page, whatever this process's earlier tests measured a touch
	 * to cost); the next copies */
	assert_int_equal(harness_check_read(o.f, o.fd, 1 * MiB, 4 * KiB), 4 * KiB);
	st = stats_of(o.f);
	assert_int_equal(st.pread_reads, 1);
	assert_int_equal(st.populates, 1);
	assert_int_equal(harness_check_read(o.f, o.fd, 64 * KiB, 4 * KiB), 4 * KiB);
	st = stats_of(o.f);
	assert_int_equal(st.copy_reads, 1);
	close_file(&o);

	/* the low mark alone: the average would have to be 65,535 times a
	 * block's price; the mark, once */
	reopen_file(h, "allowance=1000,gain_ns=4000000000,prior_margin=65535", &o);
	st = stats_of(o.f);
	assert_int_equal(st.populate_after, 1);
	close_file(&o);
	reopen_file(h, "allowance=1000,gain_ns=4000000000,prior_margin=65535,prior_low_margin=0", &o);
	st = stats_of(o.f);
	assert_int_not_equal(st.populate_after, 1);
	close_file(&o);

	/* prior=0: the daemon's count is not taken */
	reopen_file(h, "allowance=1000,gain_ns=4000000000,prior=0", &o);
	st = stats_of(o.f);
	assert_int_not_equal(st.populate_after, 1);
	assert_int_equal(harness_check_read(o.f, o.fd, 1 * MiB, 4 * KiB), 4 * KiB);
	st = stats_of(o.f);
	assert_int_equal(st.populates, 0);
	close_file(&o);
}

/* Reads pages of block blk (checked byte for byte) until the policy
 * buys: a buy may wait for the bank to earn back the one before it. */
static uint64_t
read_until_bought(struct opened *o, unsigned blk)
{
	uint64_t before = stats_of(o->f).populates, now = before, rs = blk;
	unsigned i;

	for (i = 0; i < 5000 && now == before; i++) {
		uint64_t off = (uint64_t)blk * 2 * MiB + (harness_rand(&rs) % 500) * 4 * KiB;

		assert_int_equal(harness_check_read(o->f, o->fd, off, 4 * KiB), 4 * KiB);
		now = stats_of(o->f).populates;
	}
	return now - before;
}

/* kB of the process's mappings of path that huge entries map (smaps'
 * FilePmdMapped), summed. */
static long
pmd_mapped_kb(const char *path)
{
	FILE *fp = fopen("/proc/self/smaps", "r");
	char line[4200];
	size_t plen = strlen(path);
	bool in = false;
	long kb, sum = 0;

	assert_non_null(fp);
	while (fgets(line, sizeof line, fp) != NULL) {
		size_t n = strlen(line);
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			while (n > 0 && line[n - 1] == '\n')
				line[--n] = '\0';
			in = n >= plen && strcmp(line + n - plen, path) == 0;
			continue;
		}
		if (in && sscanf(line, "FilePmdMapped: %ld kB", &kb) == 1)
			sum += kb;
	}
	fclose(fp);
	return sum;
}

/* Whether this process can see path mapped by one huge entry a block, as
 * the library asks (PAGEMAP_SCAN, Linux 6.7): 1, 0 (small entries), or
 * -ENOTSUP (the kernel cannot tell). */
static int
file_maps_huge(const char *path)
{
	int fd = open(path, O_RDONLY), pm = open("/proc/self/pagemap", O_RDONLY);
	volatile const char *p;
	int rc;

	assert_true(fd >= 0 && pm >= 0);
	p = mmap(NULL, 2 * MiB, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	(void)p[0];
	rc = pagemap_all_huge(pm, (const void *)p, 2 * MiB);
	munmap((void *)p, 2 * MiB);
	close(pm);
	close(fd);
	return rc;
}

/* o opened with the copy log on (HOTMAP_COPY_LOG=1), standard error
 * going to a temporary file until log_close, which puts it back and
 * gives the file to read from its start. */
struct logged {
	char path[64];
	int log, saved;
};

static void
log_open(void **state, const char *policy, const char *name, struct opened *o, struct logged *l)
{
	snprintf(l->path, sizeof l->path, "/tmp/hotmap-copylog.XXXXXX");
	l->log = mkstemp(l->path);
	assert_true(l->log >= 0);
	l->saved = dup(2);
	assert_true(l->saved >= 0);
	setenv("HOTMAP_COPY_LOG", "1", 1);
	open_file(*state, policy, name, o);
	unsetenv("HOTMAP_COPY_LOG");
	fflush(stderr);
	assert_int_equal(dup2(l->log, 2), 2);
}

static FILE *
log_close(struct logged *l)
{
	FILE *in;

	fflush(stderr);
	assert_int_equal(dup2(l->saved, 2), 2);
	close(l->saved);
	in = fdopen(l->log, "r");
	assert_non_null(in);
	rewind(in);
	unlink(l->path);
	return in;
}

/*
 * hm_warm after a mapping's first block populates the blocks nobody did
 * in one run, one madvise (warm_run; docs/direct-reads.md, rule 5): the
 * log says "blocks 1-3 populated (3 new)" where it said a line a block.
 * Where the pagemap cannot tell the folios (PAGEMAP_SCAN, Linux 6.7),
 * every block stays alone, and the test says so.
 */
static void
test_warm_runs(void **state)
{
	char line[512];
	struct opened o;
	struct logged l;
	unsigned runs = 0, alone = 0;
	int huge;
	FILE *in;

	log_open(state, "way=copy", "wr", &o, &l);
	huge = file_maps_huge(o.path);
	assert_int_equal(hm_warm(o.f, 0, 2 * MiB), 2 * MiB);
	assert_int_equal(hm_warm(o.f, 0, FILE_SIZE), FILE_SIZE);
	in = log_close(&l);
	while (fgets(line, sizeof line, in) != NULL) {
		runs += strstr(line, "blocks 1-3 populated (3 new)") != NULL;
		alone += strstr(line, " blocks ") == NULL && strstr(line, " populated in ") != NULL;
	}
	fclose(in);
	if (stats_of(o.f).populates == 0) {
		close_file(&o);
		skip();	/* the kernel cannot populate (before 5.14) */
	}
	assert_int_equal(stats_of(o.f).populates, 4);
	read_random(&o, FILE_SIZE, 7);
	assert_int_equal(stats_of(o.f).copy_reads, READS);
	assert_int_equal(stats_of(o.f).touch_reads, 0);
	close_file(&o);
	if (huge < 0) {
		print_message("the pagemap cannot tell the folios here (PAGEMAP_SCAN, Linux 6.7): "
			      "a warm populates a block at a time\n");
		assert_int_equal(alone, 4);
		skip();
	}
	assert_int_equal(runs, 1);
	assert_int_equal(alone, 1);	/* the mapping's first block */
}

/* A 64 MiB file, read back into huge folios by hotmapd where the system
 * gives files them (huge-folios: its warm folds). */
static void
folded_file(const struct harness *h, const char *name, char *path)
{
	hm_client *c;
	hm_file *f;

	harness_path(h, name, path);
	harness_write_file(path, 64 * MiB, 9);
	c = harness_connect(h);	/* hotmapd's tiers: its warm folds */
	f = hm_open(c, path, 0);
	assert_non_null(f);
	assert_int_equal(hm_warm(f, 0, 64 * MiB), 64 * MiB);
	assert_int_equal(hm_close(f), 0);
	hm_disconnect(c);
}

/*
 * A buy of a file in huge folios populates a span of blocks in one call
 * (populate_span, docs/direct-reads.md rule 5): here 16 blocks, 32 MiB.
 * A mapping's first buy is its block alone, which says what the file's
 * folios are; where the system gave it no huge folios each buy stays a
 * block alone, and the test says so and skips the span's counts.
 */
/* Every block bought at its first read: 4 KiB reads count as large
 * (pread_min), so that no page is ever touched alone (whether a small
 * read touches its page depends on whether a fault here costs more than
 * a pread, a timing: on tmpfs the two are within a few hundred ns, and a
 * CI run once found the fault cheaper and touched pages, buying no
 * block); no pread the rent, a block's price a read (gain_ns); a bank of
 * seconds (fill_bank), so that what the buys cost here never overdraws
 * it; and no copy timed but the one after each buy (copy_sample: no
 * samples, probes nor bursts).  A mapping's first copy counts as P̂ at
 * most, so copies pay at the mapping's second buy whatever they cost
 * here; a later one may find them dearer than a pread and stop the buys,
 * so the test asks for two buys of a mapping, no more. */
#define SPAN_KNOBS	"populate_min=1,allowance=1000,gain_ns=4000000000,prior=0," \
			"sample_every=1000000,probe_every=0,burst=0,pread_min=4096," \
			"bank_max_ns=4000000000"

/* The process's bank filled (it is the process's, and earlier tests'
 * buys may have drawn on it): a mapping's first small read pays the
 * allowance, sample_every times over, up to bank_max_ns. */
static void
fill_bank(const struct harness *h, const char *policy)
{
	struct opened b;

	open_file(h, policy, "bank", &b);
	assert_int_equal(harness_check_read(b.f, b.fd, 0, 1), 1);
	close_file(&b);
}

static void
test_span_buy(void **state)
{
	const struct harness *h = *state;
	struct opened o;
	uint64_t rs = 5;
	unsigned i;

	folded_file(h, "span", o.path);
	measure_pread(h);
	fill_bank(h, SPAN_KNOBS);
	reopen_file(h, SPAN_KNOBS, &o);
	assert_int_equal(read_until_bought(&o, 0), 1);	/* a mapping's first: alone */
	if (file_maps_huge(o.path) != 1) {
		print_message("this system gave the file no huge folios, or cannot tell "
			      "(PAGEMAP_SCAN, Linux 6.7): a buy is its block alone\n");
		assert_int_equal(read_until_bought(&o, 5), 1);
		close_file(&o);
		skip();
	}
	assert_int_equal(read_until_bought(&o, 5), 15);
	/* blocks 0-15: block 0 was, the other 15 now */
	assert_int_equal(stats_of(o.f).populates, 16);
	assert_true(pmd_mapped_kb(o.path) >= 32 * 1024);
	/* the span's pages read right, byte for byte, with no other buy
	 * (whether each copies or preads is what copies cost here) */
	for (i = 0; i < 200; i++)
		assert_int_equal(harness_check_read(o.f, o.fd,
						    harness_rand(&rs) % (32 * MiB - 4 * KiB), 4 * KiB),
				 4 * KiB);
	assert_int_equal(stats_of(o.f).populates, 16);
	close_file(&o);
	/* populate_span=1: a block at a time (another file: a process keeps
	 * a closed file's mapping, and what it bought, for its next open) */
	folded_file(h, "span1", o.path);
	reopen_file(h, SPAN_KNOBS ",populate_span=1", &o);
	assert_int_equal(read_until_bought(&o, 0), 1);
	assert_int_equal(read_until_bought(&o, 5), 1);
	close_file(&o);
}

/* A file read through the daemon (no direct reads) counts there. */
static void
test_daemon_reads_counted(void **state)
{
	const struct harness *h = *state;
	struct hm_options opt = HM_OPTIONS_INIT;
	struct hm_read_stats st;
	char path[4096];
	hm_client *c;
	hm_file *f;
	int fd;

	harness_path(h, "d", path);
	harness_write_file(path, MiB, 9);
	opt.direct = 0;
	c = hm_connect_opts(h->sock, &opt);
	assert_non_null(c);
	f = hm_open(c, path, 0);
	assert_non_null(f);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(harness_check_read(f, fd, 1000, 5000), 5000);
	assert_int_equal(harness_check_read(f, fd, 0, 100), 100);
	st = stats_of(f);
	assert_int_equal(st.daemon_reads, 2);
	assert_int_equal(st.pread_reads + st.copy_reads + st.touch_reads, 0);
	assert_int_equal(st.direct, HM_DIRECT_NO);
	assert_int_equal(st.copy_ns, 0);
	/* a size the library does not know */
	st.size = sizeof st + 8;
	assert_int_equal(hm_read_stats(f, &st), -1);
	assert_int_equal(errno, EINVAL);
	st.size = 8;
	assert_int_equal(hm_read_stats(f, &st), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(hm_close(f), 0);
	hm_disconnect(c);
	close(fd);
}

/* A knob that is wrong fails hm_connect with EINVAL, and hm_last_error
 * says which and why, from the environment or from the option. */
static void
test_bad_knobs(void **state)
{
	const struct harness *h = *state;
	struct hm_options o = HM_OPTIONS_INIT;

	setenv("HOTMAP_COPY_POLICY", "probe_every=64,nosuch=1", 1);
	assert_null(hm_connect(h->sock));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(hm_last_error(), "HOTMAP_COPY_POLICY: unknown knob \"nosuch\""));
	setenv("HOTMAP_COPY_POLICY", "way=sometimes", 1);
	assert_null(hm_connect(h->sock));
	assert_non_null(strstr(hm_last_error(), "not auto, pread or copy"));
	unsetenv("HOTMAP_COPY_POLICY");
	o.copy_policy = "sample_every=0";
	assert_null(hm_connect_opts(h->sock, &o));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(hm_last_error(), "copy_policy: sample_every=0: at least 1"));
	/* the option is over the environment */
	setenv("HOTMAP_COPY_POLICY", "way=copy", 1);
	{
		struct opened op;
		struct hm_read_stats st;

		open_file(h, "way=pread", "o", &op);
		read_random(&op, 64 * KiB, 5);
		st = stats_of(op.f);
		assert_int_equal(st.pread_reads, READS);
		close_file(&op);
	}
	unsetenv("HOTMAP_COPY_POLICY");
}

/* A program built before hm_options had copy_policy passes the shorter
 * size: it connects, its fields are read, the new one is default. */
static void
test_options_of_an_older_program(void **state)
{
	const struct harness *h = *state;
	struct hm_options o = HM_OPTIONS_INIT;
	hm_client *c;

	o.size = offsetof(struct hm_options, copy_policy);
	o.copy_policy = "nosuch=1";	/* beyond its size: never read */
	c = hm_connect_opts(h->sock, &o);
	assert_non_null(c);
	hm_disconnect(c);
	o.size = offsetof(struct hm_options, copy_policy) + 1;
	assert_null(hm_connect_opts(h->sock, &o));
	assert_int_equal(errno, EINVAL);
}

/* HOTMAP_COPY_LOG=1: a line on standard error for each read (and block),
 * saying its way and the estimates. */
static void
test_copy_log(void **state)
{
	char line[512];
	struct opened o;
	struct logged l;
	unsigned lines = 0, preads = 0;
	FILE *in;

	log_open(state, "way=pread", "l", &o, &l);
	read_random(&o, 64 * KiB, 6);
	in = log_close(&l);
	close_file(&o);
	while (fgets(line, sizeof line, in) != NULL) {
		lines++;
		assert_non_null(strstr(line, "copy-policy"));
		assert_non_null(strstr(line, "est copy"));
		if (strstr(line, "len 4096: pread") != NULL)
			preads++;
	}
	fclose(in);
	assert_int_equal(lines, READS);
	assert_int_equal(preads, READS);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_way_pread, setup, teardown),
		cmocka_unit_test_setup_teardown(test_way_copy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_auto_counts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_warm_counts_populates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_warm_runs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_view_makes_copies, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prior_from_daemon, setup, teardown),
		cmocka_unit_test_setup_teardown(test_span_buy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_daemon_reads_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_knobs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_options_of_an_older_program, setup, teardown),
		cmocka_unit_test_setup_teardown(test_copy_log, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
