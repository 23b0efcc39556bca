/* SPDX-License-Identifier: MIT */
/*
 * copy_policy.c - the direct tier's choice of copy (copy_policy.h; the
 * model: docs/direct-reads.md, "The copy policy").  No clock, no system
 * call: what it knows of costs is what cp_account is told.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "client/copy_policy.h"
#include "proto/size.h"

#define LD(p)		__atomic_load_n((p), __ATOMIC_RELAXED)
#define ST(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELAXED)
/* An estimate never reaches this: far above any read's cost, and its
 * products with the clamp and the shifts stay in 64 bits. */
#define EST_MAX		(UINT32_MAX / 8u)

void
cp_knobs_default(struct cp_knobs *k)
{
	*k = (struct cp_knobs){
		.way = CP_AUTO,
		.pread_min = 64u * 1024u,
		.copy_max = 256u * 1024u,
		.gain_ns = 1500u,
		.sample_every = 8u,
		.probe_every = 64u,
		.burst = 8u,
		.clamp = 4u,
		.first_max_ns = 20000u,
		.populate_ns = 6000u,
		.populate_min = 4u,
		.relearn = 8192u,
		.allowance = 30u,
		.bank_max_ns = 4000000u,
		.hits_max = 127u,
		.heat_max = 0x7fffu,
		.prior = 1u,
		.prior_credit_ns = 8000000u,
		.prior_margin = 2u,
		.prior_low_margin = 1u,
		.populate_span = 16u,
	};
}

static const struct knob {
	const char *name;
	size_t off;
	uint32_t min;	/* the smallest value that makes sense */
	uint32_t max;	/* and the largest (0: any) */
} knobs[] = {
	{ "pread_min", offsetof(struct cp_knobs, pread_min), 0, 0 },
	{ "copy_max", offsetof(struct cp_knobs, copy_max), 0, 0 },
	{ "gain_ns", offsetof(struct cp_knobs, gain_ns), 1, 0 },
	{ "sample_every", offsetof(struct cp_knobs, sample_every), 1, 0 },
	{ "probe_every", offsetof(struct cp_knobs, probe_every), 0, 0 },
	{ "burst", offsetof(struct cp_knobs, burst), 0, 0 },
	{ "clamp", offsetof(struct cp_knobs, clamp), 1, 0 },
	{ "first_max_ns", offsetof(struct cp_knobs, first_max_ns), 1, 0 },
	{ "populate_ns", offsetof(struct cp_knobs, populate_ns), 1, 0 },
	{ "populate_min", offsetof(struct cp_knobs, populate_min), 1, 0 },
	{ "relearn", offsetof(struct cp_knobs, relearn), 0, 0 },
	{ "allowance", offsetof(struct cp_knobs, allowance), 0, 0 },
	{ "bank_max_ns", offsetof(struct cp_knobs, bank_max_ns), 0, 0 },
	{ "prior", offsetof(struct cp_knobs, prior), 0, 0 },
	{ "prior_credit_ns", offsetof(struct cp_knobs, prior_credit_ns), 0, 0 },
	{ "prior_margin", offsetof(struct cp_knobs, prior_margin), 1, 0 },
	{ "prior_low_margin", offsetof(struct cp_knobs, prior_low_margin), 0, 0 },
	{ "populate_span", offsetof(struct cp_knobs, populate_span), 1, CP_SPAN_MAX },
};

static int
parse_one(struct cp_knobs *k, const char *name, size_t namelen, const char *val, char *err,
	  size_t errlen)
{
	size_t i;
	uint64_t v;

	if (namelen == 3 && memcmp(name, "way", 3) == 0) {
		if (strcmp(val, "auto") == 0)
			k->way = CP_AUTO;
		else if (strcmp(val, "pread") == 0)
			k->way = CP_FORCE_PREAD;
		else if (strcmp(val, "copy") == 0)
			k->way = CP_FORCE_COPY;
		else {
			snprintf(err, errlen, "way=%s: not auto, pread or copy", val);
			return -1;
		}
		return 0;
	}
	for (i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		if (strlen(knobs[i].name) != namelen || memcmp(knobs[i].name, name, namelen) != 0)
			continue;
		if (size_parse(val, &v) != 0 || v > UINT32_MAX) {
			snprintf(err, errlen, "%s=%s: not a number of 32 bits", knobs[i].name, val);
			return -1;
		}
		if (knobs[i].off == offsetof(struct cp_knobs, prior) && v > 1) {
			snprintf(err, errlen, "%s=%s: 0 or 1", knobs[i].name, val);
			return -1;
		}
		if (v < knobs[i].min) {
			snprintf(err, errlen, "%s=%s: at least %u", knobs[i].name, val,
				 (unsigned)knobs[i].min);
			return -1;
		}
		if (knobs[i].max != 0 && v > knobs[i].max) {
			snprintf(err, errlen, "%s=%s: at most %u", knobs[i].name, val,
				 (unsigned)knobs[i].max);
			return -1;
		}
		memcpy((char *)k + knobs[i].off, &(uint32_t){ (uint32_t)v }, sizeof(uint32_t));
		return 0;
	}
	snprintf(err, errlen,
		 "unknown knob \"%.*s\" (way, pread_min, copy_max, gain_ns, sample_every, "
		 "probe_every, burst, clamp, first_max_ns, populate_ns, populate_min, relearn, "
		 "allowance, bank_max_ns, prior, prior_credit_ns, prior_margin, prior_low_margin, "
		 "populate_span)",
		 (int)(namelen > 40 ? 40 : namelen), name);
	return -1;
}

int
cp_knobs_parse(struct cp_knobs *k, const char *spec, char *err, size_t errlen)
{
	struct cp_knobs next = *k;
	const char *p = spec;
	char val[64];

	while (*p != '\0') {
		const char *end = strchr(p, ','), *eq;
		size_t len = end != NULL ? (size_t)(end - p) : strlen(p);

		eq = memchr(p, '=', len);
		if (len == 0) {
			p += end != NULL ? 1 : 0;
			continue;
		}
		if (eq == NULL || (size_t)(p + len - eq - 1) >= sizeof(val)) {
			snprintf(err, errlen, "\"%.*s\": not name=value", (int)(len > 40 ? 40 : len),
				 p);
			return -1;
		}
		memcpy(val, eq + 1, (size_t)(p + len - eq - 1));
		val[p + len - eq - 1] = '\0';
		if (parse_one(&next, p, (size_t)(eq - p), val, err, errlen) < 0)
			return -1;
		p += len + (end != NULL ? 1 : 0);
	}
	if (next.pread_min > next.copy_max) {
		snprintf(err, errlen, "pread_min (%u) above copy_max (%u)", (unsigned)next.pread_min,
			 (unsigned)next.copy_max);
		return -1;
	}
	*k = next;
	return 0;
}

void
cp_costs_init(struct cp_costs *c, struct cp_costs *seed, const struct cp_knobs *k)
{
	memset(c, 0, sizeof(*c));
	/* What a fault, a block and a small pread cost is the machine's:
	 * the process's estimates.  A pread's cost taken from the mapping's
	 * own first sample would be that of a cold read of a fresh
	 * descriptor (several times the rest), and with it above a touch's
	 * every page of the file would be touched at its first read: with
	 * thousands of small files each read a few times, most reads.
	 * Whether a copy beats pread is the file's (its folios, its pages'
	 * age): learnt on its own pages, or one file whose copies lost would
	 * leave every file opened after it reading with pread. */
	c->proc = seed;
	if (seed != NULL) {
		c->touch_ns = LD(&seed->touch_ns);
		c->populate_ns = LD(&seed->populate_ns);
		c->pread_ns = LD(&seed->pread_ns);
	}
	if (c->populate_ns == 0)
		c->populate_ns = k->populate_ns;
}

bool
cp_copies_pay(const struct cp_costs *c)
{
	uint32_t copy = LD(&c->copy_ns), pread = LD(&c->pread_ns);

	return copy == 0 || pread == 0 || copy <= pread;
}

/* The bank is the process's: the seed's, else the mapping's own. */
static int64_t *
bank_of(struct cp_costs *c)
{
	return c->proc != NULL ? &c->proc->bank : &c->bank;
}

int64_t
cp_credit(const struct cp_costs *c)
{
	return LD(c->proc != NULL ? &c->proc->credit : &c->credit);
}

int64_t
cp_bank(const struct cp_costs *c)
{
	return LD(c->proc != NULL ? &c->proc->bank : &c->bank);
}

/* ns into the bank (negative: spent), within [-2^40, bank_max_ns].  Racy
 * between threads, as the estimates are: a lost update moves the bank by
 * one read's worth. */
static void
bank_add(struct cp_costs *c, const struct cp_knobs *k, int64_t ns)
{
	int64_t *b = bank_of(c), v = LD(b) + ns;

	if (v > (int64_t)k->bank_max_ns)
		v = (int64_t)k->bank_max_ns;
	if (v < -((int64_t)1 << 40))
		v = -((int64_t)1 << 40);
	ST(b, v);
}

/* a buy may be made: the bank is not overdrawn */
static bool
bank_open(struct cp_costs *c)
{
	return LD(bank_of(c)) >= 0;
}

/* a small pread's cost: measured, else the prior gain stands for it */
static uint64_t
pread_est(const struct cp_costs *c, const struct cp_knobs *k)
{
	uint32_t p = LD(&c->pread_ns);

	return p != 0 ? p : k->gain_ns;
}

/* What a read out of touched pages saves against pread: measured when
 * both are, else the prior.  Only asked while copies pay. */
static uint64_t
gain(const struct cp_costs *c, const struct cp_knobs *k)
{
	uint32_t copy = LD(&c->copy_ns), pread = LD(&c->pread_ns);

	return copy != 0 && pread > copy ? pread - copy : k->gain_ns;
}

/* ceil(cost / gain), within [lo, hi] */
static unsigned
reads_to_pay(uint64_t cost, uint64_t g, unsigned lo, unsigned hi)
{
	uint64_t r = (cost + g - 1) / g;

	return (unsigned)(r < lo ? lo : r > hi ? hi : r);
}

unsigned
cp_touch_after(const struct cp_costs *c, const struct cp_knobs *k)
{
	uint32_t t = LD(&c->touch_ns), p = LD(&c->pread_ns);

	/* before the first touch is measured, a page is touched at its
	 * second read: the cheapest way to learn what a touch costs */
	if (t == 0)
		return 1u;
	/* where a fault costs less than the pread it replaces, a page is
	 * touched at its first read; else once its reads have lost the
	 * touch's whole price (docs/direct-reads.md, rule 4) */
	if (p == 0)
		p = k->gain_ns;	/* unmeasured: the prior stands for it */
	return t <= p ? 0u : reads_to_pay(t, gain(c, k), 1u, k->hits_max);
}

/* Whether the prior says a block pays: the earlier processes' reads of a
 * block at least what a block costs over a touched read's gain. */
static bool
prior_pays(const struct cp_costs *c, const struct cp_knobs *k)
{
	uint32_t prior = LD(&c->prior_reads), low = LD(&c->prior_low);
	uint64_t price;

	/* a pread measured, not assumed: what a read out of a block saves
	 * is most of it (a block's cost is learnt by buying blocks: the
	 * first ones, and the block probes) */
	if (k->prior == 0 || (prior == 0 && low == 0) || LD(&c->pread_ns) == 0)
		return false;
	price = reads_to_pay(LD(&c->populate_ns), gain(c, k), 1u, k->heat_max);
	/* the average with its margin (a process reading half as much as
	 * those before it still gains), or the low mark, which a process
	 * that read less than the others set at once: even the least of
	 * them would have gained (rule 10) */
	return (prior != 0 && prior >= (uint64_t)k->prior_margin * price) ||
	       (low != 0 && k->prior_low_margin != 0 && low >= (uint64_t)k->prior_low_margin * price);
}

/* The prior's credit left (the process's): spent only on the blocks the
 * prior buys, never on the rent-or-buy's nor on a block probe. */
static int64_t *
credit_of(struct cp_costs *c)
{
	return c->proc != NULL ? &c->proc->credit : &c->credit;
}

static bool
credit_open(const struct cp_costs *c, const struct cp_knobs *k)
{
	return cp_credit(c) > 0 && prior_pays(c, k);
}

unsigned
cp_populate_after(const struct cp_costs *c, const struct cp_knobs *k)
{
	/* the file's blocks are read often enough by every process that
	 * reads it: at its first read (docs/direct-reads.md, rule 10), from
	 * the bank or else the prior's credit */
	if (prior_pays(c, k) && (cp_bank(c) >= 0 || cp_credit(c) > 0))
		return 1u;
	/* overdrawn: no block is bought; its reads go on counting, and it
	 * is populated at its next read once the bank allows */
	if (cp_bank(c) < 0)
		return k->heat_max;
	return reads_to_pay(LD(&c->populate_ns), gain(c, k), k->populate_min, k->heat_max);
}

void
cp_prior(struct cp_costs *c, const struct cp_knobs *k, uint32_t reads, uint32_t low)
{
	struct cp_costs *proc = c->proc != NULL ? c->proc : c;

	ST(&c->prior_reads, reads);
	ST(&c->prior_low, low);
	/* given with the first count, paid out only while the prior pays:
	 * whether it does is known once the costs are measured */
	if (k->way != CP_AUTO || k->prior == 0 || (reads == 0 && low == 0) ||
	    LD(&proc->credited) != 0)
		return;
	/* once per process, whichever of its connections gets there first */
	if (__atomic_exchange_n(&proc->credited, 1u, __ATOMIC_RELAXED) != 0)
		return;
	ST(credit_of(c), (int64_t)k->prior_credit_ns);
}

/* cp_decide's plan when the way depends on the estimates.  Out of line:
 * a read that is pread whatever they say (way=pread, a large read) does
 * not pay for the registers this part needs. */
static __attribute__((noinline)) void
decide(struct cp_costs *c, const struct cp_knobs *k, size_t n, bool have_fd, cp_pages_fn *pages,
       void *ctx, struct cp_plan *plan)
{
	bool small = n < k->pread_min, pays, probe;
	uint32_t tick;

	/* a racy count (it only picks the reads to time): no locked add */
	tick = LD(&c->tick);
	ST(&c->tick, tick + 1);
	/* the bank's allowance, paid in one read in sample_every (one store
	 * to the process's line, not one a read) */
	if (small && tick % k->sample_every == 0 && k->allowance != 0)
		bank_add(c, k, (int64_t)(pread_est(c, k) * k->allowance * k->sample_every / 1000u));
	if (!have_fd || k->way == CP_FORCE_COPY) {
		/* the mapping is the only way: a first touch is still timed,
		 * so that the estimate is there if the way changes */
		pages(ctx, &plan->touched, &plan->hits);
		plan->asked = true;
		plan->way = plan->touched ? CP_COPY : CP_TOUCH;
		plan->timed = !plan->touched;
		return;
	}
	pays = cp_copies_pay(c);
	if (!pays && k->relearn != 0) {
		uint32_t losing = LD(&c->losing) + 1;

		if (losing >= k->relearn) {
			/* forgotten: the copy estimate, the touched marks;
			 * pages are touched again by the rent-or-buy rule
			 * (cp_touch_after), as at the start */
			ST(&c->copy_ns, 0u);
			ST(&c->burst, 0u);
			losing = 0;
			pays = true;
			plan->forget = true;
		}
		ST(&c->losing, losing);
	}
	probe = small && k->probe_every != 0 && tick % k->probe_every == 0;
	if (plan->forget) {
		plan->way = CP_PREAD;	/* nothing is touched now */
		plan->timed = small && tick % k->sample_every == 0;
		plan->hit = small;
		plan->heat = true;
		return;
	}
	if (!pays && !probe) {
		/* While copies lose, every read but the probes is pread and
		 * the page state is neither asked nor kept: a random read's
		 * page state is a cache miss, a tenth of the read. */
		plan->way = CP_PREAD;
		plan->timed = small && tick % k->sample_every == 0;
		return;
	}
	pages(ctx, &plan->touched, &plan->hits);
	plan->asked = true;
	if (plan->touched) {
		/* the cheaper way; a probe goes the other, and a probe that
		 * copies while copies lose is a buy: only while the bank
		 * allows */
		if (probe && !pays && !bank_open(c))
			probe = false;
		plan->way = pays != probe ? CP_COPY : CP_PREAD;
		if (plan->way == CP_COPY && !probe && small && tick % k->sample_every == 0)
			/* what copies save, banked for sample_every of them */
			bank_add(c, k, (int64_t)(gain(c, k) * k->sample_every));
		plan->probe = probe;
		plan->timed = small && (tick % k->sample_every == 0 || probe ||
					(plan->way == CP_COPY && LD(&c->burst) > 0));
		plan->wake = plan->timed && plan->way == CP_COPY;
		return;
	}
	if (!small || !pays || plan->hits < cp_touch_after(c, k) || !bank_open(c) ||
	    prior_pays(c, k)) {
		/* rent: pread, counted towards the touch and the populate;
		 * not counted while the bank is overdrawn (nothing can be
		 * bought then, and a random read's count is a cache miss and,
		 * the first in its block, new memory).  Under a prior that
		 * pays a small read never touches a page: its block is bought
		 * whole, at this read (rule 10) */
		bool open = bank_open(c);

		plan->way = CP_PREAD;
		plan->timed = small && tick % k->sample_every == 0;
		plan->hit = small && open;
		/* a read of pread_min or more gains little from a copy (rule
		 * 4): under a prior that pays, the small reads buy the blocks,
		 * and such a read neither counts towards one nor buys it (a
		 * sampler of 64 KiB records lost 3-5% to the blocks it bought) */
		plan->heat = pays && (open || credit_open(c, k)) && (small || !prior_pays(c, k));
		/* a block probe: where the prior says blocks are read again
		 * but the estimates say not often enough (a pread measured:
		 * before, they say nothing), one read in
		 * probe_every buys its block (from the bank, never the
		 * credit), so that the estimate is measured again; else one
		 * dear block (on the test VM one in ten costs 3-6 times the
		 * rest) would leave it high for good, no block being populated
		 * to bring it back down */
		plan->block_probe = small && pays && open && k->prior != 0 && k->probe_every != 0 &&
				    tick % k->probe_every == (k->probe_every > 1 ? 1u : 0u) &&
				    LD(&c->prior_reads) >= k->populate_min && LD(&c->pread_ns) != 0 &&
				    !prior_pays(c, k);
		return;
	}
	plan->way = CP_TOUCH;	/* buy */
	plan->timed = true;
}

void
cp_decide(struct cp_costs *c, const struct cp_knobs *k, size_t n, bool have_fd,
	  cp_pages_fn *pages, void *ctx, struct cp_plan *plan)
{
	memset(plan, 0, sizeof(*plan));
	if (c->proc != NULL && c->proc != c) {
		/* a mapping opened before the process measured a touch or a
		 * pread takes them when it has them, rather than learning
		 * them again on its own pages (cp_costs_init) */
		if (LD(&c->touch_ns) == 0 && LD(&c->proc->touch_ns) != 0)
			ST(&c->touch_ns, LD(&c->proc->touch_ns));
		if (LD(&c->pread_ns) == 0 && LD(&c->proc->pread_ns) != 0)
			ST(&c->pread_ns, LD(&c->proc->pread_ns));
	}
	if (have_fd && (k->way == CP_FORCE_PREAD || n >= k->copy_max)) {
		plan->way = CP_PREAD;	/* the kernel's copy: no page tables */
		return;
	}
	decide(c, k, n, have_fd, pages, ctx, plan);
}

/* A sample for an estimate that stood at old: at most clamp times it (or
 * first_max_ns, the first).  A sample holds whatever befell the thread
 * meanwhile (preempted, an interrupt, a hypervisor's exit); a cost that
 * really grew still gets there, a few samples later. */
static uint64_t
clamped(uint32_t old, uint64_t ns, const struct cp_knobs *k)
{
	uint64_t cap = old != 0 ? (uint64_t)old * k->clamp : k->first_max_ns;

	return ns > cap ? cap : ns;
}

/* est moves 1/2^shift of the way to the sample (all the way, the first) */
static void
move(uint32_t *est, uint64_t ns, unsigned shift, const struct cp_knobs *k)
{
	uint32_t old = LD(est);
	uint64_t v = clamped(old, ns, k);
	uint64_t next = old == 0 ? v : ((((uint64_t)old << shift) - old + v) >> shift);

	ST(est, (uint32_t)(next == 0 ? 1 : next > EST_MAX ? EST_MAX : next));
}

static void
account_one(struct cp_costs *c, const struct cp_knobs *k, const struct cp_plan *plan, uint64_t ns,
	    size_t pages)
{
	switch (plan->way) {
	case CP_TOUCH:
		move(&c->touch_ns, ns / (pages > 0 ? pages : 1), 2, k);
		break;
	case CP_PREAD:
		/* The first pread a process times is of a descriptor and code
		 * it has not used before: 233 us where the next took 3 us,
		 * measured on the test VM.  Taken (clamped at first_max_ns,
		 * 20 us), it made a pread seem to cost ten times what it does
		 * for the next hundred reads: every buy seemed to pay, the
		 * bank earned ten times its allowance, and the prior (rule
		 * 10) spent its whole credit on the first blocks.  Not a
		 * sample; an estimate that starts from the process's is
		 * taken as it comes. */
		if (LD(&c->pread_ns) == 0 && LD(&c->pread_seen) == 0) {
			ST(&c->pread_seen, 1u);
			break;
		}
		/* a probe is the only pread in probe_every reads: half way */
		move(&c->pread_ns, ns, plan->probe ? 1 : 3, k);
		break;
	case CP_COPY:
		if (plan->probe) {
			move(&c->copy_ns, ns, 1, k);
			break;
		}
		{
			uint32_t est = LD(&c->copy_ns), burst = LD(&c->burst);
			uint32_t p = LD(&c->pread_ns);

			if (est == 0 && p != 0 && ns > p) {
				/* one copy is not a verdict: the first of a
				 * mapping lands on cold caches, an aged block or
				 * page tables a fork left behind (18 us against
				 * 0.6 after it, measured), and with Ĉ over P̂
				 * no copy would be made until `relearn` reads
				 * later.  It counts as P̂, and the next copies
				 * are timed (the burst rule) */
				ns = p;
				burst = k->burst;
			} else if (est != 0 && ns > 2u * (uint64_t)est) {
				burst = k->burst;
			} else if (burst > 0) {
				burst--;
			}
			ST(&c->burst, burst);
		}
		move(&c->copy_ns, ns, 3, k);
		break;
	}
}

/* What a buy that took ns is charged to the bank: at most BUY_MAX_NS.
 * The dearest buy measured is a 2 MiB block on the test VM, 0.4-0.9 ms;
 * a sample past 4 ms is the thread preempted or descheduled, not the
 * buy, and charged whole (a 50 ms time slice lost to 8 processes on 2
 * cores, say) it would close the bank for a million reads at 3% of a
 * pread a read, buying nothing all that while.  Not the
 * estimate's clamp: a block's first sample is rightly 100 times the
 * prior's 6 us, and charged at 4 times it the bank would let the buys
 * that follow overrun the floor (test_vm_break_even). */
#define BUY_MAX_NS	4000000u
/* The dearest block measured, rounded up: a span of n blocks is charged n
 * of these at most (and BUY_MAX_NS at least). */
#define BLOCK_MAX_NS	1000000u

static uint64_t
charged(uint64_t ns)
{
	return ns > BUY_MAX_NS ? BUY_MAX_NS : ns;
}

void
cp_account(struct cp_costs *c, struct cp_costs *seed, const struct cp_knobs *k,
	   const struct cp_plan *plan, uint64_t ns, size_t pages)
{
	/* a buy's price: what it cost over the pread it replaced (a touch
	 * cheaper than a pread earns it back); a way the knobs fixed is
	 * not the policy's buy */
	if (k->way == CP_AUTO && (plan->way == CP_TOUCH || (plan->way == CP_COPY && plan->probe)))
		bank_add(c, k, (int64_t)pread_est(c, k) - (int64_t)charged(ns));
	account_one(c, k, plan, ns, pages);
	/* the process keeps what new mappings take: the touch, the pread */
	if (seed != NULL && seed != c && (plan->way == CP_TOUCH || plan->way == CP_PREAD))
		account_one(seed, k, plan, ns, pages);
}

/* A buy that took ns is paid: from the prior's credit first when the
 * prior bought it, the bank paying what is left. */
static void
charge_buy(struct cp_costs *c, const struct cp_knobs *k, uint64_t ns, unsigned blocks)
{
	/* a span: what its blocks cost, up to the dearest block measured
	 * each (a file only part of which is in huge folios costs a block's
	 * 512 entries a block: 13 ms for 16 on the test VM), BUY_MAX_NS at
	 * least */
	uint64_t cap = (uint64_t)BLOCK_MAX_NS * blocks;
	int64_t charge, *cr = credit_of(c), left = LD(cr);

	if (cap < BUY_MAX_NS)
		cap = BUY_MAX_NS;
	charge = (int64_t)(ns > cap ? cap : ns);

	/* a block the prior bought is paid from the prior's credit first (so
	 * that the bank is kept for the block probes that measure what a
	 * block costs), the bank paying what is left; a locked exchange:
	 * threads buying at once must not lose a whole block's charge, or
	 * the credit would bound nothing */
	while (left > 0 && prior_pays(c, k)) {
		int64_t take = charge < left ? charge : left;

		if (__atomic_compare_exchange_n(cr, &left, left - take, false, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED)) {
			charge -= take;
			break;
		}
	}
	bank_add(c, k, -charge);
}

void
cp_populate_account(struct cp_costs *c, struct cp_costs *seed, const struct cp_knobs *k,
		    uint64_t ns, bool bought, bool small)
{
	/* a quarter of the way: what a block costs depends on the file (its
	 * folios' size), on whether a view touched its pages already, and on
	 * the virtual machine's shadow entries, which age; and on the test
	 * VM one block in ten costs 3-6 times the rest, which moved half
	 * way put the estimate over the prior's price for the blocks after
	 * it (rule 10) */
	uint32_t n = LD(&c->blocks);

	ST(&c->blocks, n + 1);
	if (bought)	/* the policy's buy; hm_warm's is the caller's */
		charge_buy(c, k, ns, 1u);
	/* a mapping's first block of a file in huge folios builds the page
	 * tables' own pages too (on the test VM, 50-260 us against 13-20
	 * after it): charged, but counted as twice the estimate at most, or
	 * one such block in each new process would set its block estimate
	 * for its next blocks; so is one whose mapping is not known.  A
	 * block known to be mapped page by page (small folios) costs its 512
	 * entries every time (0.8 ms on the test VM, against the 6 us
	 * default made for huge folios): its first is taken whole (as a buy
	 * is charged: BUY_MAX_NS at most, a preempted one not made an
	 * estimate), or the estimate, a quarter of the way and 4 times at
	 * most a sample, would take a few blocks more to get there, each
	 * bought on the prior's word (rule 10) */
	if (n == 0 && small) {
		ST(&c->populate_ns, (uint32_t)(ns == 0 ? 1 : charged(ns)));
	} else {
		if (n == 0 && LD(&c->populate_ns) != 0 && ns > 2u * (uint64_t)LD(&c->populate_ns))
			ns = 2u * (uint64_t)LD(&c->populate_ns);
		move(&c->populate_ns, ns, 2, k);
	}
	if (seed != NULL && seed != c)
		move(&seed->populate_ns, ns, 2, k);
}

void
cp_span_account(struct cp_costs *c, struct cp_costs *seed, const struct cp_knobs *k,
		uint64_t ns, unsigned blocks, bool bought)
{
	uint64_t each = ns / (blocks > 0 ? blocks : 1u);

	ST(&c->blocks, LD(&c->blocks) + blocks);
	if (bought)
		charge_buy(c, k, ns, blocks);
	/* one sample, what a block came to: a quarter of the way, as any */
	move(&c->populate_ns, each == 0 ? 1 : each, 2, k);
	if (seed != NULL && seed != c)
		move(&seed->populate_ns, each == 0 ? 1 : each, 2, k);
}
