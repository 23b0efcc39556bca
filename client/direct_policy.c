/* SPDX-License-Identifier: MIT */
/*
 * direct_policy.c - the direct tier's cost policy (see direct_policy.h):
 * its constants, what it keeps per process and per mapping, the decision
 * of each read (direct_policy_plan) and what it learns from what the read
 * cost.  Moved here whole from the read path, as it was.
 *
 * Must not: read a clock or touch a mapping (the caller times and reads);
 * take a lock on the read path (its counts are racy, which is fine: they
 * only steer the choice of copy).
 */
#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/direct_policy.h"
#include "client/page_state.h"

/* Reads of at least this many bytes are a copy whichever way: the
 * kernel's (pread on the client's own descriptor) needs no page tables in
 * this process, and at 64 KiB the system call is a small part of it.
 * Shorter ones go through the mapping once hot.  (At 256 KiB, 4 processes
 * sampling random 64 KiB records of a hot 1 GiB file read at 0.59x the
 * rate of pread on the test VM, copying out of touched pages; at 64 KiB,
 * 1.00x: hmbench sample.) */
#define DIRECT_PREAD_MIN	(64u * 1024u)
/* ... unless their pages are touched already (a populated block): up to
 * this size a memcpy out of touched pages beats the kernel's copy. */
#define DIRECT_COPY_MAX		(256u * 1024u)
/* What a read out of touched pages saves against pread (touch_after). */
#define TOUCH_SAVES_NS		1500u
/* What populating a block costs, until a block of the mapping says (see
 * direct_policy_populated): the least that buys one at its fourth read.
 * A file in huge folios (hotmapd's huge-folios) costs 10-30 us a block on
 * the test VM, one in 4 KiB pages 800 us and up; the first blocks measure
 * which. */
#define POPULATE_BLOCK_NS	(4u * TOUCH_SAVES_NS)

/*
 * When a page is worth touching through the mapping: once it has been read
 * with pread touch_after() times.  Touching costs a page fault, a fraction
 * of a microsecond on bare metal, but on a virtual machine with shadow
 * page tables each first touch exits to the hypervisor (2.7 us and up on
 * the test VM, far more under load); a read out of a touched page then
 * saves about TOUCH_SAVES_NS against a 4 KiB pread.  So a page is touched
 * once its reads so far would have paid for the touch.  The cost is a
 * moving average over every touch (per page), not a sample taken once: it
 * changes with the load and with the virtual machine's shadow entries
 * (a page that another mapping of the process touched costs nothing; one
 * whose entries were aged out costs a trap), and a price fixed while it
 * was cheap had a process touching every page it read twice long after
 * touches had become dear.  Until the first touch, a page is touched at
 * its second read.
 */
static uint64_t touch_avg_ns;	/* atomic: per page; 0 until measured */
static unsigned touch_reads = 1;	/* atomic: touch_after() */

static unsigned
touch_after(void)
{
	return __atomic_load_n(&touch_reads, __ATOMIC_RELAXED);
}

/*
 * A timed sample, for a moving average that stood at old: at most 4 times
 * it.  What is timed is the cost of a way of reading, but a sample also
 * holds whatever befell the thread meanwhile (preempted, an interrupt, a
 * hypervisor's exit): on the test VM one sample in a few hundred is 50 to
 * 300 us, and one such moved an average a quarter of the way there,
 * which decided hundreds of reads the wrong way.  A cost that really
 * grows still gets there, a few samples later.
 */
static uint64_t
sample_clamp(uint64_t old, uint64_t v)
{
	return old != 0 && v > 4 * old ? 4 * old : v;
}

static void
touch_account(uint64_t ns, size_t pages)
{
	uint64_t old = __atomic_load_n(&touch_avg_ns, __ATOMIC_RELAXED);
	uint64_t per = sample_clamp(old, ns / (pages > 0 ? pages : 1)), avg, k;

	avg = old == 0 ? per : (3 * old + per) / 4;
	__atomic_store_n(&touch_avg_ns, avg > 0 ? avg : 1, __ATOMIC_RELAXED);
	k = (avg + TOUCH_SAVES_NS - 1) / TOUCH_SAVES_NS;
	__atomic_store_n(&touch_reads,
			 (unsigned)(k < 1 ? 1 : k > PAGE_STATE_HITS_MAX ? PAGE_STATE_HITS_MAX : k),
			 __ATOMIC_RELAXED);
}

/*
 * Populating: a block of PAGE_STATE_CHUNK pages (2 MiB) of a mapping gets
 * its page tables built in one madvise(MADV_POPULATE_READ), and each page
 * read once through them, once its reads with pread have cost about what
 * that will: the rent-or-buy rule, so a process pays at most twice the
 * better choice.  The cost is estimated per mapping from the blocks
 * populated so far (POPULATE_BLOCK_NS before the first), and a read out
 * of touched pages saves about TOUCH_SAVES_NS against pread.  On bare
 * metal one populate maps 512 pages for the price of a few faults, which
 * is what lets a process reading random small ranges of a hot file,
 * seldom the same page twice, read at memcpy's speed.  On a virtual machine with shadow
 * page tables (the test VM) the first access to each page traps to the
 * hypervisor even after the populate (1.5 us a page there): the measured
 * cost then says a block must be read some 500 times before it pays,
 * which is why the touch is part of what is measured.
 */

/* The reads with pread after which a block of a mapping is populated: its
 * estimated cost in reads saved. */
unsigned
direct_policy_populate_after(const struct direct_cost *cost)
{
	uint64_t k = (__atomic_load_n(&cost->populate_ns, __ATOMIC_RELAXED) + TOUCH_SAVES_NS - 1) /
		     TOUCH_SAVES_NS;

	return (unsigned)(k < 4 ? 4 : k > PAGE_STATE_HEAT_MAX ? PAGE_STATE_HEAT_MAX : k);
}

/* A block took ns to populate: the estimate moves halfway there.
 * Per mapping, and moving: what a block costs depends on the file (its
 * folios' size), on whether its pages were touched already (a view read
 * them), and on the virtual machine's shadow entries, which age. */
void
direct_policy_populated(struct direct_cost *cost, uint64_t ns)
{
	uint64_t est = __atomic_load_n(&cost->populate_ns, __ATOMIC_RELAXED);

	__atomic_store_n(&cost->populate_ns, (est + sample_clamp(est, ns)) / 2, __ATOMIC_RELAXED);
}

/*
 * What each copy costs, measured: one small read (under DIRECT_PREAD_MIN)
 * in COST_SAMPLE_EVERY is timed, and each way keeps a moving average of
 * its own.  Copies out of touched pages are chosen only while they cost
 * less than pread: on a virtual machine that ages its shadow page tables
 * (the test VM runs DAMON, which clears accessed bits) a page touched a
 * while ago traps again, and a copy out of it can cost 3-6 us against
 * 2.5 us for pread.  One touched read in COST_PROBE_EVERY goes the other
 * way, so that both averages stay current (a process whose every read is
 * of touched pages would otherwise never learn what pread costs, and go
 * on copying out of pages that trap); and while copies lose, no block is
 * populated.  A probe that copies while copies lose moves the average half
 * way (it is the only copy in COST_PROBE_EVERY reads).  A timed copy wakes
 * its block first (block_wake).
 */
#define COST_SAMPLE_EVERY	8u
#define COST_FIRST_MAX_NS	20000u
#define COST_PROBE_EVERY	64u

static void
cost_account_by(uint32_t *avg, uint64_t ns, unsigned shift)
{
	uint32_t old = __atomic_load_n(avg, __ATOMIC_RELAXED);
	/* the first sample of a small read: no more than COST_FIRST_MAX_NS */
	uint64_t v = sample_clamp(old != 0 ? old : COST_FIRST_MAX_NS / 4, ns);
	uint64_t next = old == 0 ? (v > 0 ? v : 1) :
			(((uint64_t)old << shift) - old + v) >> shift;

	__atomic_store_n(avg, (uint32_t)(next > UINT32_MAX / 8 ? UINT32_MAX / 8 : next),
			 __ATOMIC_RELAXED);
}

static void
cost_account(uint32_t *avg, uint64_t ns)
{
	/* an eighth of the way: one sample in 8 reads is timed (a clamped
	 * outlier moves it by 3/8 at most) */
	cost_account_by(avg, ns, 3);
}

/*
 * A timed copy.  A copy that costs more than twice the average starts a
 * burst: the next COST_BURST copies are timed too, so that the average
 * follows within a few reads when the pages' state changed under it.  On
 * the test VM a process's touched pages trap again after it slept or was
 * descheduled for 100 ms or so (measured: random 4 KiB copies out of a
 * touched mapping, 0.55 us, then 2.5-3.7 us after a 100-300 ms sleep), so
 * a process whose reads come in bursts finds its copies dear at the start
 * of each; sampling one in 8 took some 100 costly copies to notice.
 */
#define COST_BURST	8u

static void
copy_account(struct direct_cost *cost, uint64_t ns)
{
	uint32_t avg = __atomic_load_n(&cost->copy_ns, __ATOMIC_RELAXED);
	unsigned burst = __atomic_load_n(&cost->burst, __ATOMIC_RELAXED);

	if (avg != 0 && ns > 2u * (uint64_t)avg)
		burst = COST_BURST;
	else if (burst > 0)
		burst--;
	__atomic_store_n(&cost->burst, burst, __ATOMIC_RELAXED);
	cost_account(&cost->copy_ns, ns);
}

/* Whether copies out of touched pages of a mapping are cheaper than pread
 * (or not known yet). */
static bool
copies_pay(const struct direct_cost *cost)
{
	uint32_t c = __atomic_load_n(&cost->copy_ns, __ATOMIC_RELAXED);
	uint32_t p = __atomic_load_n(&cost->pread_ns, __ATOMIC_RELAXED);

	return c == 0 || p == 0 || c <= p;
}

void
direct_cost_init(struct direct_cost *cost)
{
	cost->populate_ns = POPULATE_BLOCK_NS;
}

/*
 * A read in the client: no round trip, one copy.  Which copy depends on
 * what the pages cost here.  A page read through the mapping for the first
 * time costs a page fault (and on a virtual machine with shadow page
 * tables, an exit to the hypervisor: about 2.7 us on the test VM, more than
 * a 4 KiB pread); once touched, it costs a memcpy.  So a page read for the
 * first time is read with pread on the client's own descriptor, a page
 * read again is touched through the mapping, and from then on read out of
 * it, as long as that is measured to be cheaper (above); a block read
 * often enough is populated whole (direct_unix.c's populate_block).
 * Reads of DIRECT_COPY_MAX and more are the kernel's copy whatever the
 * pages: a copy is the ceiling either way, and the kernel's needs no page
 * tables.
 */
void
direct_policy_plan(struct direct_cost *cost, const struct page_state *pages, size_t n,
		   size_t first, size_t last, bool have_fd, struct direct_plan *plan)
{
	bool touched, pays, probe, lean, use_pread, timed, copy_timed, reprobe;
	unsigned tick;

	/* a racy count (it only picks reads to time): no locked add */
	tick = __atomic_load_n(&cost->tick, __ATOMIC_RELAXED);
	__atomic_store_n(&cost->tick, tick + 1, __ATOMIC_RELAXED);
	pays = copies_pay(cost);
	probe = tick % COST_PROBE_EVERY == 0 && n < DIRECT_PREAD_MIN;
	/* While copies lose, every read but the probes is pread whatever its
	 * pages' state, which is then neither looked at nor kept: a random
	 * read's page state is a cache miss, a tenth of the read. */
	lean = !pays && !probe && have_fd;
	touched = !lean && n < DIRECT_COPY_MAX && page_state_touched(pages, first, last);
	if (lean)
		use_pread = true;
	else if (!have_fd)
		use_pread = false;	/* no descriptor: the mapping only */
	else if (touched)
		use_pread = pays == probe;	/* the other way, now and then */
	else
		use_pread = n >= DIRECT_PREAD_MIN || !pays ||
			    page_state_hits_min(pages, first, last) < touch_after();
	timed = n < DIRECT_PREAD_MIN && (touched || use_pread) &&
		(tick % COST_SAMPLE_EVERY == 0 ||
		 (touched && !use_pread && __atomic_load_n(&cost->burst, __ATOMIC_RELAXED) > 0));
	/* a timed copy out of touched pages wakes its block first; a probe's
	 * (a probe is timed), while copies lose, moves the average half way */
	copy_timed = timed && touched && !use_pread;
	reprobe = copy_timed && probe && !pays;
	*plan = (struct direct_plan){
		.pread = use_pread,
		.touched = touched,
		/* a first touch is timed too: what it costs sets touch_after */
		.clock = timed || (!touched && !use_pread),
		.wake = copy_timed,
		.populate = n < DIRECT_COPY_MAX && pays,
		.timed = timed,
		.reprobe = reprobe,
		.hit = n < DIRECT_PREAD_MIN && !touched && !lean,
	};
}

void
direct_policy_preaded(struct direct_cost *cost, struct page_state *pages,
		      const struct direct_plan *plan, size_t first, size_t last, uint64_t ns)
{
	if (plan->timed)
		cost_account(&cost->pread_ns, ns);
	if (plan->hit)
		page_state_hit(pages, first, last);
}

void
direct_policy_copied(struct direct_cost *cost, const struct direct_plan *plan, size_t first,
		     size_t last, uint64_t ns)
{
	if (!plan->touched)
		touch_account(ns, last - first + 1);
	else if (plan->reprobe)	/* the only copy in COST_PROBE_EVERY: half way */
		cost_account_by(&cost->copy_ns, ns, 1);
	else if (plan->timed)
		copy_account(cost, ns);
}
