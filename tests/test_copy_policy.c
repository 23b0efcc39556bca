/* SPDX-License-Identifier: MIT */
/*
 * The direct tier's copy policy (client/copy_policy.h), driven without a
 * clock: a simulated machine charges each read what its way costs there,
 * and the policy is told what the plans it made say to time.  Each
 * machine is one the policy must serve: bare metal (faults are cheap),
 * the virtual machine the project is tested on (a first touch exits to
 * the hypervisor, a block not read for 100 ms traps once more), pages
 * reclaimed under the mapping, a burst of preemption, costs that fall.
 *
 * What is asserted is what a user would notice: the policy's reads cost
 * at most twice what the better of the two plain ways (always pread;
 * always the mapping) would have cost on the same reads, over every
 * window of WINDOW reads, and after the costs change it has changed its
 * way within a bounded number of reads.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client/copy_policy.h"
#include "tests/copy_sim.h"

/* Bare metal, a hot set read many times: the mapping wins, and the policy
 * gets there (nearly every read copies) at no more than a little over
 * the mapping's cost. */
static void
test_bare_high_reuse(void **state)
{
	struct run r;

	(void)state;
	run_init(&r, &bare, 65536);
	random_reads(&r, 100000, 4096);
	assert_true(copied_last(&r, 20000, 4096) > 0.95);
	report("bare, high reuse", &r);
	assert_true(r.worst <= 2.0);
	assert_true(r.t_pol <= 1.3 * r.t_map);
	run_free(&r);
}

/* Bare metal, random reads of a 1 GiB file, few of a page twice: a
 * page's first touch (a minor fault and the copy) costs less than the
 * pread it replaces, so the policy reads through the mapping from a
 * page's first read, as a process mapping the file itself would. */
static void
test_bare_low_reuse(void **state)
{
	struct run r;

	(void)state;
	run_init(&r, &bare, 262144);
	random_reads(&r, 200000, 262144);
	report("bare, low reuse", &r);
	assert_true(r.worst <= 2.0);
	assert_true(r.t_pol <= 1.1 * r.t_map);
	/* a fault costs less than the pread it replaces: pages are touched
	 * at their first read */
	assert_true(r.preads < r.reads / 50);
	run_free(&r);
}

/* The VM, a hot set read many times: copies are cheaper than pread once
 * touched, and the policy gets there. */
static void
test_vm_high_reuse(void **state)
{
	struct run r;

	(void)state;
	run_init(&r, &vm, 65536);
	random_reads(&r, 100000, 4096);
	assert_true(copied_last(&r, 20000, 4096) > 0.9);
	report("vm, high reuse", &r);
	assert_true(r.worst <= 2.0);
	assert_true(r.t_pol <= 1.3 * r.t_map);
	run_free(&r);
}

/* The VM, random reads of a 1 GiB file, few of a page twice: a first
 * touch costs more than the reads it saves, so nearly everything is
 * pread, and the policy costs little more than pread would. */
static void
test_vm_low_reuse(void **state)
{
	struct run r;

	(void)state;
	run_init(&r, &vm, 262144);
	random_reads(&r, 100000, 262144);
	report("vm, low reuse", &r);
	assert_true(r.worst <= 2.0);
	assert_true(r.t_pol <= 1.15 * r.t_pread);
	run_free(&r);
}

/* The VM, a hot set read in bursts with 300 ms pauses between them: each
 * block traps once after each pause, whichever read pays it; the copy
 * itself stays cheap and the policy keeps copying. */
static void
test_vm_bursts_after_pauses(void **state)
{
	struct run r;
	int round;
	size_t before;

	(void)state;
	run_init(&r, &vm, 65536);
	random_reads(&r, 60000, 4096);
	before = r.copies;
	for (round = 0; round < 20; round++) {
		pause_for(&r, 300e6);
		random_reads(&r, 2000, 4096);
	}
	report("vm, bursts after pauses", &r);
	assert_true((double)(r.copies - before) / 40000.0 > 0.85);
	assert_true(r.worst <= 2.0);
	run_free(&r);
}

/* Pages reclaimed under the mapping, again and again (memory pressure):
 * touched pages fault again at their next copy, which then costs more
 * than pread; the policy turns to pread within a few hundred reads, and
 * turns back once the pressure is gone. */
static void
test_vm_reclaimed(void **state)
{
	struct run r;
	int round;
	size_t before;

	(void)state;
	run_init(&r, &vm, 65536);
	random_reads(&r, 60000, 4096);
	assert_true(copied_last(&r, 4096, 4096) > 0.9);
	before = r.preads;
	for (round = 0; round < 40; round++) {
		memset(r.pol.mapped, 0, r.npages);
		memset(r.map.mapped, 0, r.npages);
		random_reads(&r, round == 0 ? 1000 : 2000, 4096);
		if (round == 0)
			before = r.preads;	/* converged by now */
	}
	report("vm, reclaimed", &r);
	/* after the first 1,000 reads under pressure, mostly pread */
	assert_true((double)(r.preads - before) / (39 * 2000.0) > 0.75);
	assert_true(r.worst <= 2.0);
	/* the pressure is gone: back to copies once they are learnt again:
	 * relearn reads, then the reads that read most pages of the hot set
	 * twice (a pread, then a touch) */
	random_reads(&r, r.k.relearn + 3 * 4096, 4096);
	assert_true(copied_last(&r, 4096, 4096) > 0.85);
	run_free(&r);
}

/* A burst of preemption: 200 reads, one in 4 of them 300 us late (the
 * thread was descheduled), among them every copy timed in the usual one
 * in 8.  The clamp keeps the estimate: the policy copies through the
 * burst and after it as before. */
static void
test_preemption_burst(void **state)
{
	struct run r;
	size_t before;
	int i;

	(void)state;
	run_init(&r, &vm, 65536);
	random_reads(&r, 60000, 4096);
	before = r.copies;
	for (i = 0; i < 200; i++) {
		/* late: one read in 4 but the probes (which go to pread here:
		 * late too, they would hide the copies' samples) */
		if (i % 4 == 0 && r.costs.tick % r.k.probe_every != 0)
			r.extra_next = 300000;
		random_reads(&r, 1, 4096);
	}
	random_reads(&r, 300, 4096);
	report("vm, preemption burst", &r);
	assert_true((double)(r.copies - before) / 500.0 > 0.85);
	run_free(&r);
}

/* One timed copy 300 us late (an interrupt, a hypervisor's exit: on the
 * test VM one sample in a few hundred).  Clamped, it cannot turn the
 * estimate: no read goes to pread for it but the probes. */
static void
test_one_outlier(void **state)
{
	struct run r;
	size_t before;

	(void)state;
	run_init(&r, &vm, 65536);
	random_reads(&r, 60000, 4096);
	while (r.costs.tick % r.k.sample_every != 0 || r.costs.tick % r.k.probe_every == 0)
		random_reads(&r, 1, 4096);
	r.extra_next = 300000;
	before = r.preads;
	random_reads(&r, 640, 4096);
	report("vm, one outlier", &r);
	assert_true(r.preads - before <= 640 / 64 + 2);
	run_free(&r);
}

/* Costs that rise: copies out of touched pages become dearer than pread
 * for good (a machine whose page tables are torn down under the mapping
 * at every read).  The first dear copy starts a burst of timed copies:
 * the policy turns to pread within a few dozen reads, not the hundred a
 * sample in 8 would take. */
static void
test_costs_rise(void **state)
{
	struct machine dear = vm;
	struct run r;
	size_t before;

	(void)state;
	run_init(&r, &dear, 65536);
	random_reads(&r, 60000, 4096);
	before = r.copies;
	dear.copy_fixed = 4000;
	random_reads(&r, 2000, 4096);
	report("vm, costs rise", &r);
	/* copies after the rise: the probes' (2000 / 64) and the reads it
	 * took to see it */
	assert_true(r.copies - before < 2000 / 64 + 40);
	run_free(&r);
}

/* Costs that fall: copies dearer than pread at first, then cheap.  The
 * probes (one read in 64 goes the other way) and the relearning see it:
 * copies again within relearn reads and three passes over the hot set. */
static void
test_costs_fall(void **state)
{
	struct machine dear = vm;
	struct run r;

	(void)state;
	dear.copy_fixed = 4000;
	run_init(&r, &dear, 65536);
	random_reads(&r, 30000, 4096);
	assert_true(copied_last(&r, 4096, 4096) < 0.1);
	dear.copy_fixed = vm.copy_fixed;
	random_reads(&r, r.k.relearn + 3 * 4096, 4096);
	assert_true(copied_last(&r, 4096, 4096) > 0.9);
	report("costs fall", &r);
	run_free(&r);
}

/* Large reads are the kernel's copy whatever the pages: never the page
 * state, never timed. */
static void
test_large_reads(void **state)
{
	struct cp_knobs k;
	struct cp_costs c;
	struct cp_plan plan;
	struct pstate ps = { 0 };

	(void)state;
	cp_knobs_default(&k);
	cp_costs_init(&c, NULL, &k);
	cp_decide(&c, &k, k.copy_max, true, pages_fn, &ps, &plan);
	assert_int_equal(plan.way, CP_PREAD);
	assert_false(plan.asked);
	assert_false(plan.timed);
	/* without a descriptor, the mapping is the only way */
	{
		uint8_t t = 1, h = 0;

		ps.touched = &t;
		ps.hits = &h;
		ps.pages = 1;
		cp_decide(&c, &k, k.copy_max, false, pages_fn, &ps, &plan);
		assert_int_equal(plan.way, CP_COPY);
		t = 0;
		cp_decide(&c, &k, 4096, false, pages_fn, &ps, &plan);
		assert_int_equal(plan.way, CP_TOUCH);
		assert_true(plan.timed);
	}
}

/* The floor (rule 9): reads that make buying a loss.  On the test VM a
 * block costs some 788 us to populate and saves 1.95 us a read after, so
 * rent-or-buy populates a block after ~400 of its reads with pread; here
 * each of 64 blocks gets ~600 random reads in all, few of a page twice, so
 * a block bought at its 400th read is read some 200 times more: it costs
 * 788 us and saves 390.  Without the bank the policy pays that loss on
 * every block (1.2x pread); with it, the policy costs at most allowance
 * per mille more than pread plus one buy, and still buys where copies have
 * earned it (the high-reuse tests). */
static void
floor_run(const struct machine *m, uint32_t allowance, uint32_t bank_max, struct run *r)
{
	run_init(r, m, 64 * BLOCK_PAGES);
	r->k.allowance = allowance;
	r->k.bank_max_ns = bank_max;
	random_reads(r, 40000, 64 * BLOCK_PAGES);
}

static void
test_vm_break_even(void **state)
{
	struct run r, nobank;

	(void)state;
	floor_run(&vm, 30, 4000000, &r);
	report("vm, blocks read about their break-even", &r);
	/* the floor: 1.03x pread's time, plus one buy */
	assert_true(r.t_pol <= 1.03 * r.t_pread + vm.populate_block);
	/* and it is the bank that holds it: with an allowance as large as
	 * every read, the same reads cost rent-or-buy's price */
	floor_run(&vm, 1000000, 4000000u, &nobank);
	report("vm, the same without the bank", &nobank);
	assert_true(nobank.t_pol > 1.10 * nobank.t_pread);
	assert_true(nobank.populates > r.populates);
	run_free(&r);
	run_free(&nobank);
}

/* One dear first copy is not a verdict: a mapping's first copy (here 18
 * us: cold caches, page tables a fork left behind) counts as a pread and
 * times the copies after it, which cost 0.6 us: copies go on, and within
 * a burst the estimate is theirs. */
static void
test_first_copy_dear(void **state)
{
	struct cp_knobs k;
	struct cp_costs c;
	struct cp_plan plan = { .way = CP_COPY, .timed = true };
	int i;

	(void)state;
	cp_knobs_default(&k);
	cp_costs_init(&c, NULL, &k);
	c.pread_ns = 2300;
	cp_account(&c, NULL, &k, &plan, 18825, 1);
	assert_true(cp_copies_pay(&c));
	assert_int_equal(c.burst, k.burst);
	for (i = 0; i < 8; i++)
		cp_account(&c, NULL, &k, &plan, 600, 1);
	assert_true(c.copy_ns < 1500);
	/* copies that really are dear still turn it: each timed copy of
	 * the burst moves the estimate up, by its clamp at most */
	cp_costs_init(&c, NULL, &k);
	c.pread_ns = 2300;
	cp_account(&c, NULL, &k, &plan, 18825, 1);
	for (i = 0; i < 8 && cp_copies_pay(&c); i++)
		cp_account(&c, NULL, &k, &plan, 9000, 1);
	assert_false(cp_copies_pay(&c));
}

/* The rent-or-buy thresholds follow the estimates. */
static void
test_thresholds(void **state)
{
	struct cp_knobs k;
	struct cp_costs c;
	struct cp_plan plan = { .way = CP_TOUCH, .timed = true };

	(void)state;
	cp_knobs_default(&k);
	cp_costs_init(&c, NULL, &k);
	assert_int_equal(cp_touch_after(&c, &k), 1);	/* unmeasured: 2nd read */
	assert_int_equal(cp_populate_after(&c, &k), 4);	/* 6000 / 1500 */
	cp_account(&c, NULL, &k, &plan, 3000 * 4, 4);	/* 3 us a page */
	assert_int_equal(c.touch_ns, 3000);
	/* touch / gain, the gain the prior while unmeasured */
	assert_int_equal(cp_touch_after(&c, &k), 2);	/* 3000 / 1500 */
	c.copy_ns = 500;
	c.pread_ns = 2500;
	assert_int_equal(cp_touch_after(&c, &k), 2);	/* 3000 / 2000 */
	c.copy_ns = 2400;
	assert_int_equal(cp_touch_after(&c, &k), 30);	/* 3000 / 100 */
	c.copy_ns = 2499;
	assert_int_equal(cp_touch_after(&c, &k), k.hits_max);	/* 3000 / 1 */
	c.touch_ns = 2000;	/* a fault cheaper than a pread */
	assert_int_equal(cp_touch_after(&c, &k), 0);
	c.copy_ns = 2600;	/* copies lose: the prior gain, never asked */
	assert_false(cp_copies_pay(&c));
	c.populate_ns = 800000;
	c.copy_ns = 500;
	/* the touch above cost 10.5 us over the prior's pread: overdrawn,
	 * no block is bought */
	assert_true(cp_bank(&c) < 0);
	assert_int_equal(cp_populate_after(&c, &k), k.heat_max);
	c.bank = 0;
	assert_int_equal(cp_populate_after(&c, &k), 400);
	/* a preempted sample moves an estimate by its clamp at most */
	plan.way = CP_PREAD;
	cp_account(&c, NULL, &k, &plan, 300000, 1);
	assert_int_equal(c.pread_ns, (7 * 2500 + 4 * 2500) / 8);
}

/* untouched pages never read before: the way is pread (a rent) */
static void
cold_pages_fn(void *ctx, bool *touched, unsigned *hits)
{
	(void)ctx;
	*touched = false;
	*hits = 0;
}

/* A buy the thread was preempted in (a touch or a block 50 ms late, as a
 * loaded machine may make it) is charged to the bank at most 4 ms, the
 * dearest buy measured being under 1 ms: the bank opens again within
 * some 100,000 reads, not the million and more a 50 ms charge would take
 * at 3% of a pread a read, during which nothing is bought. */
static void
test_bank_preempted_buy(void **state)
{
	struct cp_knobs k;
	struct cp_costs c;
	struct cp_plan touch = { .way = CP_TOUCH, .timed = true }, plan;
	int i;

	(void)state;
	cp_knobs_default(&k);
	cp_costs_init(&c, NULL, &k);
	cp_account(&c, NULL, &k, &touch, 3000, 1);	/* 3 us a page */
	assert_int_equal(c.touch_ns, 3000);
	c.bank = 0;
	cp_account(&c, NULL, &k, &touch, 900000, 1);	/* dear: charged whole */
	assert_int_equal(cp_bank(&c), 1500 - 900000);
	c.bank = 0;
	cp_account(&c, NULL, &k, &touch, 50000000, 1);	/* preempted */
	assert_int_equal(cp_bank(&c), 1500 - 4000000);
	/* a block the policy bought, preempted */
	c.bank = 0;
	cp_populate_account(&c, NULL, &k, 50000000, true, false);
	assert_int_equal(cp_bank(&c), -4000000);
	/* the bank opens again after some 100,000 small preads */
	for (i = 0; i < 200000 && cp_bank(&c) < 0; i++) {
		cp_decide(&c, &k, 4096, true, cold_pages_fn, NULL, &plan);
		assert_int_equal(plan.way, CP_PREAD);
	}
	print_message("# the bank opened again after %d reads\n", i);
	assert_true(i < 100000);
	/* a block hm_warm populated is the caller's: never charged */
	c.bank = 0;
	cp_populate_account(&c, NULL, &k, 50000000, false, false);
	assert_int_equal(cp_bank(&c), 0);
}

/* A new mapping takes the process's touch and block estimates (the
 * machine's), never its verdict on copies: one file whose copies lost
 * (its pages aged, its folios small) must not leave every file opened
 * after it reading with pread. */
static void
test_seed(void **state)
{
	struct cp_knobs k;
	struct cp_costs proc, c;

	(void)state;
	cp_knobs_default(&k);
	cp_costs_init(&proc, NULL, &k);
	proc.copy_ns = 5000;
	proc.pread_ns = 2500;
	proc.touch_ns = 3200;
	proc.populate_ns = 700000;
	assert_false(cp_copies_pay(&proc));
	cp_costs_init(&c, &proc, &k);
	assert_true(cp_copies_pay(&c));
	assert_int_equal(c.touch_ns, 3200);
	assert_int_equal(c.populate_ns, 700000);
	assert_int_equal(c.copy_ns, 0);
	assert_int_equal(c.pread_ns, 2500);
}

/*
 * Thousands of small files, each page read about twice (a dataset of many
 * small shards, hmbench's scale workload): each file a mapping of its own,
 * its first pread cold (a fresh descriptor: several times the rest), a
 * first touch dear (the VM's fault on a new mapping).  Reading with pread
 * is the better way; the policy must stay within 10% of it, which it does
 * only if a mapping's pread estimate starts from the process's: from its
 * own cold first sample, a pread looks dearer than a touch and every page
 * is touched at its first read.
 */
#define SMALL_FILES	2000u
#define SMALL_PAGES	4u

static void
test_many_small_files(void **state)
{
	static const double pread = 2500, cold = 15000, copy = 550, touch = 10000;
	struct cp_knobs k;
	struct cp_costs proc, *costs = calloc(SMALL_FILES, sizeof(*costs));
	uint8_t *touched = calloc(SMALL_FILES * SMALL_PAGES, 1);
	uint8_t *hits = calloc(SMALL_FILES * SMALL_PAGES, 1);
	uint8_t *fresh = calloc(SMALL_FILES, 1);
	double t_pol = 0, t_pread = 0, t_map = 0;
	uint64_t rng = 0x2545f4914f6cdd1du;
	size_t i, touches = 0;

	(void)state;
	assert_non_null(costs);
	assert_non_null(touched);
	assert_non_null(hits);
	assert_non_null(fresh);
	cp_knobs_default(&k);
	cp_costs_init(&proc, NULL, &k);
	for (i = 0; i < SMALL_FILES; i++)
		cp_costs_init(&costs[i], &proc, &k);	/* opened before the reads */
	for (i = 0; i < 2u * SMALL_FILES * SMALL_PAGES; i++) {
		size_t f, page;
		struct pstate ps;
		struct cp_plan plan;
		double c, pr, mp;

		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		f = (size_t)(rng % SMALL_FILES);
		page = f * SMALL_PAGES + (size_t)(rng >> 32) % SMALL_PAGES;
		/* every way's first read of a file is a fresh descriptor's */
		pr = fresh[f] & 1 ? pread : cold;
		mp = (fresh[f] & 2 ? copy : cold) + (hits[page] & 0x80 ? 0 : touch);
		fresh[f] |= 2;
		hits[page] |= 0x80;	/* always-mapping's page is touched now */
		ps = (struct pstate){ .touched = touched, .hits = hits, .first = page, .pages = 1 };
		cp_decide(&costs[f], &k, PAGE, true, small_pages_fn, &ps, &plan);
		if (plan.way == CP_PREAD) {
			c = fresh[f] & 1 ? pread : cold;
			fresh[f] |= 1;
			if (plan.hit && (hits[page] & 0x7f) < 127)
				hits[page]++;
		} else {
			c = (touched[page] ? copy : copy + touch) + (fresh[f] & 4 ? 0 : cold - copy);
			fresh[f] |= 4;
			touches += !touched[page];
			touched[page] = 1;
		}
		if (plan.timed)
			cp_account(&costs[f], &proc, &k, &plan, (uint64_t)c, 1);
		t_pol += c;
		t_pread += pr;
		t_map += mp;
	}
	print_message("# %u files of %u pages, 2 reads a page: policy %.2fx always-pread, "
		      "always-mapping %.2fx; %zu pages touched\n", SMALL_FILES, SMALL_PAGES,
		      t_pol / t_pread, t_map / t_pread, touches);
	assert_true(t_pread < t_map);
	assert_true(t_pol <= 1.10 * t_pread);
	free(costs);
	free(touched);
	free(hits);
	free(fresh);
}

static void
test_knobs_parse(void **state)
{
	struct cp_knobs k, d;
	char err[320];

	(void)state;
	cp_knobs_default(&d);
	k = d;
	assert_int_equal(cp_knobs_parse(&k, "", err, sizeof(err)), 0);
	assert_memory_equal(&k, &d, sizeof(k));
	assert_int_equal(cp_knobs_parse(&k, "way=pread,pread_min=32K,probe_every=0", err,
					sizeof(err)), 0);
	assert_int_equal(k.way, CP_FORCE_PREAD);
	assert_int_equal(k.pread_min, 32768);
	assert_int_equal(k.probe_every, 0);
	k = d;
	assert_int_equal(cp_knobs_parse(&k, "sample_every=0", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "sample_every"));
	assert_memory_equal(&k, &d, sizeof(k));
	assert_int_equal(cp_knobs_parse(&k, "nosuch=1", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "unknown knob \"nosuch\""));
	assert_non_null(strstr(err, "populate_span"));
	/* a span of 1 GiB of blocks at most */
	assert_int_equal(cp_knobs_parse(&k, "populate_span=513", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "at most 512"));
	assert_memory_equal(&k, &d, sizeof(k));
	assert_int_equal(cp_knobs_parse(&k, "populate_span=512,prior_low_margin=0", err, sizeof(err)), 0);
	assert_int_equal(k.populate_span, 512);
	assert_int_equal(k.prior_low_margin, 0);
	k = d;
	assert_int_equal(cp_knobs_parse(&k, "way=fast", err, sizeof(err)), -1);
	assert_int_equal(cp_knobs_parse(&k, "copy_max", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "name=value"));
	assert_int_equal(cp_knobs_parse(&k, "pread_min=1M", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "above copy_max"));
	assert_int_equal(cp_knobs_parse(&k, "burst=99999999999", err, sizeof(err)), -1);
	assert_memory_equal(&k, &d, sizeof(k));
	/* prior: 0 or 1 */
	assert_int_equal(cp_knobs_parse(&k, "prior=2", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "0 or 1"));
	assert_int_equal(cp_knobs_parse(&k, "prior=0", err, sizeof(err)), 0);
	assert_int_equal(k.prior, 0);
	/* way=copy: every read the mapping's */
	assert_int_equal(cp_knobs_parse(&k, "way=copy", err, sizeof(err)), 0);
	assert_int_equal(k.way, CP_FORCE_COPY);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bare_high_reuse),
		cmocka_unit_test(test_bare_low_reuse),
		cmocka_unit_test(test_vm_high_reuse),
		cmocka_unit_test(test_vm_low_reuse),
		cmocka_unit_test(test_vm_bursts_after_pauses),
		cmocka_unit_test(test_vm_reclaimed),
		cmocka_unit_test(test_preemption_burst),
		cmocka_unit_test(test_costs_rise),
		cmocka_unit_test(test_one_outlier),
		cmocka_unit_test(test_costs_fall),
		cmocka_unit_test(test_large_reads),
		cmocka_unit_test(test_thresholds),
		cmocka_unit_test(test_bank_preempted_buy),
		cmocka_unit_test(test_vm_break_even),
		cmocka_unit_test(test_first_copy_dear),
		cmocka_unit_test(test_seed),
		cmocka_unit_test(test_many_small_files),
		cmocka_unit_test(test_knobs_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
