/* SPDX-License-Identifier: MIT */
/*
 * The copy policy's prior (docs/direct-reads.md, rule 10), driven without
 * a clock on the simulated machines of tests/copy_sim.c: the daemon's
 * count of how often earlier processes read each block, taken with a
 * margin, paid from a credit of its own, and bounded where it lies.
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

/*
 * The prior (rule 10).  A fresh process reads a hot 1 GiB file in huge
 * folios at random, 10,000 reads of 4 KiB, some 20 of each 2 MiB block:
 * a block pays at its first read (20 us against 20 reads saving ~2 us
 * each), but its own reads tell the rent so only after some 10 of them,
 * and buying at the break-even loses.  Told by the daemon that the
 * processes before read each block 40 times, twice what it reads itself
 * (the margin: prior_margin 2), it buys at the first read.  Told 19, the
 * reads it makes itself, it does not: a count of other processes is taken
 * only where a process reading half as much would still gain.
 */
#define HUGE_BLOCKS	512u

/* n random reads of HUGE_BLOCKS blocks on machine m, the daemon's count
 * prior; the process's first read first_ns dearer, every way's. */
static void
prior_run_low(const struct machine *m, uint32_t prior, uint32_t low, size_t n, double first_ns,
	      struct run *r)
{
	run_init(r, m, HUGE_BLOCKS * BLOCK_PAGES);
	cp_prior(&r->costs, &r->k, prior, low);
	r->extra_next = first_ns;
	random_reads(r, n, HUGE_BLOCKS * BLOCK_PAGES);
}

/* The same, the low mark not known. */
static void
prior_run(const struct machine *m, uint32_t prior, size_t n, double first_ns, struct run *r)
{
	prior_run_low(m, prior, 0, n, first_ns, r);
}

static void
test_prior_first_read(void **state)
{
	struct run none, prior, half, off;

	(void)state;
	prior_run(&vm_huge, 0, 10000, 0, &none);
	report("vm, huge folios, 20 reads a block, no prior", &none);
	prior_run(&vm_huge, 40, 10000, 0, &prior);
	report("vm, huge folios, 20 reads a block, prior 40", &prior);
	prior_run(&vm_huge, 19, 10000, 0, &half);
	report("vm, huge folios, 20 reads a block, prior 19", &half);
	/* within the margin: not taken, but to learn what a block costs
	 * (its first blocks, before the estimate says 20 us): the floor */
	assert_true(half.t_pol <= 1.05 * half.t_pread);
	assert_true(half.populates < HUGE_BLOCKS / 2);
	/* rent-or-buy alone: at the floor, no gain */
	assert_true(none.t_pol >= 0.97 * none.t_pread);
	/* with the prior: most blocks bought at their first read, and the
	 * reads faster than pread's by 15% at least */
	assert_true(prior.populates > HUGE_BLOCKS / 2);
	assert_true(prior.t_pol <= 0.85 * prior.t_pread);
	assert_true(prior.t_pol < none.t_pol);
	/* prior=0: the daemon's word is not taken */
	run_init(&off, &vm_huge, HUGE_BLOCKS * BLOCK_PAGES);
	off.k.prior = 0;
	cp_prior(&off.costs, &off.k, 40, 0);
	assert_int_equal(cp_bank(&off.costs), 0);
	random_reads(&off, 10000, HUGE_BLOCKS * BLOCK_PAGES);
	assert_true(off.populates == none.populates && off.t_pol == none.t_pol);
	run_free(&none);
	run_free(&prior);
	run_free(&half);
	run_free(&off);
}

/*
 * The low mark (rule 10): the processes before read each block 19 times on
 * average, under twice a block's price, so the average is not taken; but
 * none of the last of them read fewer than 19, and a block pays at some 10
 * reads of its own: even the least of them would have gained from buying
 * each block at its first read, and so does this one, reading as they did.
 * Where the mark was set by a process that read less (10 a block), it is
 * not taken.  And a process reading half what the mark says, bought every
 * block on its word: what that costs.
 */
static void
test_prior_low_mark(void **state)
{
	struct run low, lowered, half;

	(void)state;
	prior_run_low(&vm_huge, 19, 19, 10000, 0, &low);
	report("vm, huge folios, 20 reads a block, prior 19, low mark 19", &low);
	prior_run_low(&vm_huge, 19, 10, 10000, 0, &lowered);
	report("vm, huge folios, 20 reads a block, prior 19, low mark 10", &lowered);
	prior_run_low(&vm_huge, 19, 19, 5000, 0, &half);
	report("vm, huge folios, 10 reads a block, prior 19, low mark 19", &half);
	assert_true(low.populates > HUGE_BLOCKS / 2);
	assert_true(low.t_pol <= 0.85 * low.t_pread);
	assert_true(lowered.populates < HUGE_BLOCKS / 2);
	assert_true(lowered.t_pol <= 1.05 * lowered.t_pread);
	assert_true(lowered.t_pol > low.t_pol);
	/* half the reads the mark said: every block bought, half its reads
	 * to pay for it; the credit bounds it */
	assert_true(half.t_pol <= 1.25 * half.t_pread);
	run_free(&low);
	run_free(&lowered);
	run_free(&half);
}

/*
 * The same reads where a process's first 4 blocks cost 200 us and one in
 * ten after them 90 us, the rest 17 us (a block still pays at 19 reads).
 * Moved by those first blocks, the block estimate says a block takes
 * more reads to pay than the prior's 19, and no block is bought at its
 * first read, so none is timed to bring the estimate down: 1.21x pread.
 * A mapping's first block counts as twice the estimate at most, the
 * estimate moves a quarter of the way, and while the prior says blocks
 * are read again one read in probe_every buys its block (a block probe):
 * the estimate comes back down, and it buys on.
 */
static void
test_prior_dear_blocks(void **state)
{
	struct run r;

	(void)state;
	prior_run(&vm_huge_cold, 40, 10000, 0, &r);
	report("vm, huge folios, dear blocks among them, prior 40", &r);
	assert_true(r.populates > HUGE_BLOCKS / 2);
	assert_true(r.t_pol <= 0.90 * r.t_pread);
	run_free(&r);
}

/*
 * The prior is right (blocks are read 19 times each) but copies out of
 * them cost more than a pread: on the test VM a file folded seconds
 * before copies at 3-15 us a page.  Each block bought has a copy timed at
 * once, so the policy learns within a few blocks that copies lose and
 * stops buying: no more than 5% over pread, where without that sample it
 * bought blocks until a later read happened to land in one.
 */
static const struct machine vm_huge_dear_copies = {
	.pread_fixed = 2000, .pread_page = 500, .copy_fixed = 7000, .copy_page = 1000,
	.touch_page = 2700, .populate_block = 18000, .think_ns = 500,
};

static void
test_prior_dear_copies(void **state)
{
	struct run r;

	(void)state;
	prior_run(&vm_huge_dear_copies, 40, 10000, 0, &r);
	report("vm, huge folios, copies dearer than pread, prior 40", &r);
	assert_true(r.populates < 32);
	assert_true(r.t_pol <= 1.05 * r.t_pread);
	run_free(&r);
}

/*
 * A prior that lies (other clients write what the daemon's average is
 * made of): it says every block is read 65,535 times, and each is read
 * about once.  The process buys blocks at their first read until the
 * prior's credit is spent, then the bank holds as before: the policy
 * costs at most the floor plus the credit plus one buy, on the huge-folio
 * VM and where a block costs 788 us.  The floor here is 1.045x, not the
 * 1.03x of the allowance: what copies save is banked from one copy in 8
 * (sample_every), and the bank spends it on buys at once, so a run's
 * banked savings are its copies' within sampling's error (1.040x, and
 * 1.0405x since the prior waits for a pread measured: its blocks are
 * bought 8 reads later, and copied from a few times less).
 */
static void
test_prior_lies(void **state)
{
	const struct machine *ms[] = { &vm_huge, &vm };
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		struct run r;
		size_t blocks = 8192;

		run_init(&r, ms[i], blocks * BLOCK_PAGES);
		cp_prior(&r.costs, &r.k, 65535, 0);
		assert_int_equal(cp_credit(&r.costs), (int64_t)r.k.prior_credit_ns);
		random_reads(&r, 8192, blocks * BLOCK_PAGES);
		report(i == 0 ? "vm, huge folios, a lying prior" : "vm, a lying prior", &r);
		assert_true(r.populates > 0);
		assert_true(r.t_pol <= 1.045 * r.t_pread + r.k.prior_credit_ns + ms[i]->populate_block);
		run_free(&r);
	}
}

/*
 * A process's first timed pread is of a descriptor and code not used
 * before: 233 us on the test VM where the next took 3 us (HOTMAP_COPY_LOG
 * of a fresh hmproc).  Taken as a sample, it set the pread estimate to 20
 * us (first_max_ns) for the next hundred reads, and with it every block
 * seemed to pay at its second read: told 19 reads a block by the
 * processes before, a process that reads each block 10 times (hmbench's
 * isolation workload after its random reads) spent half its credit on
 * blocks that did not pay, 1.18x pread's time.  The first pread is not a
 * sample, and the prior waits for a pread measured: the floor.
 */
static void
test_prior_cold_first_pread(void **state)
{
	struct run r;

	(void)state;
	prior_run(&vm_huge, 19, 5000, 230000, &r);
	report("vm, huge folios, a cold first pread, 10 reads a block, prior 19", &r);
	assert_true(r.t_pol <= 1.05 * r.t_pread);
	assert_true(cp_credit(&r.costs) >= (int64_t)r.k.prior_credit_ns / 2);
	run_free(&r);
}

/*
 * The same where the file is not in huge folios: a block is mapped page
 * by page, 788 us on the test VM, and pays after some 400 reads, never at
 * 10.  The block estimate starts from a default made for huge folios (6
 * us); moved a quarter of the way to each sample, 4 times the estimate at
 * most, it took three blocks bought on the prior's word (2.4 ms of the
 * credit) to get over the price: 1.24x pread, 4 blocks in all.  A
 * mapping's first block mapped page by page is taken whole: the prior
 * buys one block, its measurement, and the bank one block probe.
 */
static void
test_prior_small_folios(void **state)
{
	struct run r;

	(void)state;
	prior_run(&vm, 19, 5000, 230000, &r);
	report("vm, small folios (788 us blocks), 10 reads a block, prior 19", &r);
	assert_true(r.populates <= 2);
	assert_true(r.t_pol <= 1.15 * r.t_pread);
	run_free(&r);
}

/* A mapping's first block sets the block estimate whole only where the
 * pagemap said small entries map it: one of huge folios, or one it could
 * not tell about (a kernel before PAGEMAP_SCAN, a file's short last block),
 * counts twice the estimate at most, and no sample counts more than a buy
 * is charged (a preempted one). */
static void
test_prior_first_block(void **state)
{
	struct cp_knobs k;
	struct cp_costs c;

	(void)state;
	cp_knobs_default(&k);
	cp_costs_init(&c, NULL, &k);
	cp_populate_account(&c, NULL, &k, 200000, false, false);	/* huge, or unknown */
	assert_true(c.populate_ns <= 2 * k.populate_ns);
	cp_costs_init(&c, NULL, &k);
	cp_populate_account(&c, NULL, &k, 800000, false, true);	/* small folios */
	assert_int_equal(c.populate_ns, 800000);
	cp_costs_init(&c, NULL, &k);
	cp_populate_account(&c, NULL, &k, 50000000, false, true);	/* preempted */
	assert_int_equal(c.populate_ns, 4000000);
	/* the second block moves it a quarter of the way, as any */
	cp_populate_account(&c, NULL, &k, 800000, false, true);
	assert_int_equal(c.populate_ns, 3200000);
}

/* A span bought at once (populate_span): charged whole, once; the block
 * estimate moves towards what a block of it came to, once; the blocks
 * counted. */
static void
test_span_account(void **state)
{
	struct cp_knobs k;
	struct cp_costs c;

	(void)state;
	cp_knobs_default(&k);
	cp_costs_init(&c, NULL, &k);
	c.populate_ns = 20000;
	cp_span_account(&c, NULL, &k, 32000, 16, true);
	assert_int_equal(c.blocks, 16);
	assert_int_equal(cp_bank(&c), -32000);
	/* a quarter of the way from 20 us to 2 us a block */
	assert_int_equal(c.populate_ns, 15500);
	/* hm_warm's: not charged */
	cp_span_account(&c, NULL, &k, 32000, 16, false);
	assert_int_equal(cp_bank(&c), -32000);
	assert_int_equal(c.blocks, 32);
	/* a preempted one is charged 1 ms a block at most (the dearest
	 * block measured; a span in small folios costs about that) */
	cp_span_account(&c, NULL, &k, 90000000, 16, true);
	assert_int_equal(cp_bank(&c), -32000 - 16000000);
	/* and a short one 4 ms, as a block alone */
	cp_span_account(&c, NULL, &k, 90000000, 2, true);
	assert_int_equal(cp_bank(&c), -32000 - 16000000 - 4000000);
}

/* The prior's thresholds: below what a block takes to pay it changes
 * nothing; at or above it a block is populated at its first read; and the
 * credit is the process's, given once. */
static void
test_prior_thresholds(void **state)
{
	struct cp_knobs k;
	struct cp_costs proc, a, b, proc2, m;

	(void)state;
	cp_knobs_default(&k);
	/* the margin: twice the price, 40 reads (30 us / the prior gain
	 * 1.5 us: 20) */
	cp_costs_init(&proc2, NULL, &k);
	cp_costs_init(&m, &proc2, &k);
	m.populate_ns = 30000;
	/* on a pread measured only: before, at the price whatever it says */
	cp_prior(&m, &k, 1000, 0);
	assert_int_equal(cp_populate_after(&m, &k), 20);
	m.pread_ns = 2500;	/* no copy measured yet: the gain is gain_ns's */
	cp_prior(&m, &k, 39, 0);
	assert_int_equal(cp_populate_after(&m, &k), 20);
	cp_prior(&m, &k, 40, 0);
	assert_int_equal(cp_populate_after(&m, &k), 1);
	/* or the low mark at the price itself (prior_low_margin 1) */
	cp_prior(&m, &k, 39, 20);
	assert_int_equal(cp_populate_after(&m, &k), 1);
	cp_prior(&m, &k, 39, 19);
	assert_int_equal(cp_populate_after(&m, &k), 20);
	cp_prior(&m, &k, 0, 20);
	assert_int_equal(cp_populate_after(&m, &k), 1);
	k.prior_low_margin = 0;	/* the mark not taken */
	cp_prior(&m, &k, 39, 20);
	assert_int_equal(cp_populate_after(&m, &k), 20);
	k.prior_low_margin = 1;
	/* and the price itself with prior_margin=1 */
	k.prior_margin = 1;
	cp_costs_init(&proc, NULL, &k);
	cp_costs_init(&a, &proc, &k);
	a.populate_ns = 30000;
	a.pread_ns = 2500;
	cp_prior(&a, &k, 19, 0);
	assert_int_equal(cp_populate_after(&a, &k), 20);
	/* the credit comes with the first count, paid out only while the
	 * prior pays: whether it does is known once costs are measured */
	assert_int_equal(cp_credit(&a), k.prior_credit_ns);
	cp_prior(&a, &k, 20, 0);
	assert_int_equal(cp_populate_after(&a, &k), 1);
	assert_int_equal(cp_credit(&a), k.prior_credit_ns);
	assert_int_equal(cp_bank(&a), 0);
	/* a measured gain moves it: 2.5 - 0.5 us, 15 reads */
	a.pread_ns = 2500;
	a.copy_ns = 500;
	cp_prior(&a, &k, 15, 0);
	assert_int_equal(cp_populate_after(&a, &k), 1);
	cp_prior(&a, &k, 14, 0);
	assert_int_equal(cp_populate_after(&a, &k), 15);
	/* overdrawn: the prior's blocks are paid from the credit, and the
	 * charge goes there first */
	proc.bank = -1;
	cp_prior(&a, &k, 1000, 0);
	assert_int_equal(cp_populate_after(&a, &k), 1);
	cp_populate_account(&a, &proc, &k, 20000, true, false);
	assert_int_equal(cp_credit(&a), k.prior_credit_ns - 20000);
	assert_int_equal(cp_bank(&a), -1);
	/* the credit pays for the prior's blocks only: where the prior does
	 * not pay, an overdrawn bank buys nothing, credit or not */
	cp_prior(&a, &k, 10, 0);
	assert_int_equal(cp_populate_after(&a, &k), k.heat_max);
	cp_populate_account(&a, &proc, &k, 20000, true, false);
	assert_int_equal(cp_credit(&a), k.prior_credit_ns - 20000);
	assert_int_equal(cp_bank(&a), -20001);
	/* spent: nothing is bought while overdrawn */
	proc.credit = 0;
	cp_prior(&a, &k, 1000, 0);
	assert_int_equal(cp_populate_after(&a, &k), k.heat_max);
	/* another file of the process: no second credit */
	cp_costs_init(&b, &proc, &k);
	b.pread_ns = 2500;
	cp_prior(&b, &k, 1000, 0);
	assert_int_equal(cp_credit(&b), 0);
	/* a fixed way takes no credit */
	cp_costs_init(&proc, NULL, &k);
	cp_costs_init(&a, &proc, &k);
	k.way = CP_FORCE_PREAD;
	cp_prior(&a, &k, 1000, 0);
	assert_int_equal(cp_credit(&a), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prior_first_read),
		cmocka_unit_test(test_prior_low_mark),
		cmocka_unit_test(test_prior_dear_blocks),
		cmocka_unit_test(test_prior_cold_first_pread),
		cmocka_unit_test(test_prior_small_folios),
		cmocka_unit_test(test_prior_first_block),
		cmocka_unit_test(test_prior_dear_copies),
		cmocka_unit_test(test_prior_lies),
		cmocka_unit_test(test_prior_thresholds),
		cmocka_unit_test(test_span_account),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
