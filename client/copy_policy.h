/* SPDX-License-Identifier: MIT */
/*
 * copy_policy.h - the direct tier's choice of copy for one read of a
 * granted file: out of this process's mapping of it, or pread(2) on the
 * process's own descriptor.  The model, as formulas, and why each knob
 * has its value: docs/direct-reads.md, "The copy policy".
 *
 * In short.  Four costs are estimated per mapping, in nanoseconds, from
 * the reads the plan says to time: a small read copied out of touched
 * pages (copy), a small pread (pread), a page's first touch through the
 * mapping (touch, per page) and populating a 2 MiB block (populate).  A
 * read out of touched pages takes the cheaper of copy and pread.  A page
 * not touched yet is read with pread until its reads so far have lost
 * what a touch costs (touch / gain reads, gain = pread - copy; at its
 * first read where a touch costs less than a pread): the rent-or-buy
 * rule, which costs at most twice the better choice made in hindsight.  A block is populated after populate / gain of its reads the
 * same way.  One small read in sample_every is timed; one in probe_every
 * goes the other way so that neither estimate goes stale; a sample counts
 * at most clamp times its estimate, and a copy that cost twice its
 * estimate has the next `burst` copies timed, so the estimate follows a
 * real change within a few reads while one preempted read cannot turn it.
 * After `relearn` reads with copies losing (counted since the last time,
 * not reset by a probe that found a copy cheap once), the copy estimate is forgotten
 * and so is which pages are touched (the plan says so: the caller clears
 * its page state): pages reclaimed under the mapping fault again however
 * the page state marks them, and the probes alone, landing on a page
 * touched again seldom, would take the size of the file in probes to see
 * that the pressure is gone.
 *
 * Every buy (a touch, a block, a copy probe while copies lose) is paid
 * from the process's bank and made only while the bank is not overdrawn:
 * a read adds allowance per mille of a pread to it, a copy out of touched
 * pages what it saved; so over any stretch the policy costs at most
 * allowance per mille more than pread would have, plus one buy (the floor:
 * docs/direct-reads.md, rule 9), and what copies save is what it spends.
 *
 * This file reads no clock and makes no system call: the caller times
 * what a plan says to time and hands the policy nanoseconds (cp_account),
 * which is what lets tests drive it with synthetic costs.  Its state is a
 * few words per mapping, read and written by any thread with relaxed
 * atomics (a lost update costs a sample, never a wrong byte: the policy
 * picks a way, and both ways read the same bytes).  It must not know of
 * grants, slots, the guard or the page state's layout: the caller asks
 * the page state when the plan needs it (cp_pages_fn) and keeps it.
 */
#ifndef HOTMAP_CLIENT_COPY_POLICY_H
#define HOTMAP_CLIENT_COPY_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The knobs: cp_knobs_default, then HOTMAP_COPY_POLICY (cp_knobs_parse). */
struct cp_knobs {
	uint32_t way;		/* CP_AUTO, or always CP_PREAD / CP_COPY */
	uint32_t pread_min;	/* bytes: a read this long never touches pages */
	uint32_t copy_max;	/* bytes: a read this long is pread, touched or not */
	uint32_t gain_ns;	/* a touched read's gain on pread until measured */
	uint32_t sample_every;	/* one small read in this many is timed */
	uint32_t probe_every;	/* one small read in this many goes the other way */
	uint32_t burst;		/* copies timed in a row after a dear one */
	uint32_t clamp;		/* a sample counts at most this times the estimate */
	uint32_t first_max_ns;	/* a way's first sample counts at most this */
	uint32_t populate_ns;	/* a block's populate until one is measured */
	uint32_t populate_min;	/* a block's reads before it may be populated */
	uint32_t relearn;	/* reads of copies losing before they are forgotten */
	uint32_t allowance;	/* per mille of pread's time a read adds to the bank */
	uint32_t bank_max_ns;	/* the bank holds at most this */
	uint32_t hits_max;	/* the page state counts a page's reads this far */
	uint32_t heat_max;	/* and a block's this far */
	uint32_t prior;		/* 1: take the daemon's block reads (cp_prior) */
	uint32_t prior_credit_ns;	/* the credit for the prior's buys */
	uint32_t prior_margin;	/* the prior must be this many times a block's price */
	uint32_t prior_low_margin;	/* or its low mark this many times (0: not
					 * taken) */
	uint32_t populate_span;	/* blocks a buy populates at once, where the
				 * file is in huge folios (1: the block alone;
				 * CP_SPAN_MAX at most) */
};
#define CP_SPAN_MAX	512u	/* 1 GiB of blocks in one call */

#define CP_AUTO		0u
#define CP_FORCE_PREAD	1u
#define CP_FORCE_COPY	2u

/* The defaults (docs/direct-reads.md says why each). */
void cp_knobs_default(struct cp_knobs *k);
/* Sets knobs from "name=value,name=value" (the names of struct cp_knobs;
 * way=auto|pread|copy; sizes take the size grammar's suffixes).  0, or -1
 * with a message in err (errlen bytes) naming what is wrong: k is then
 * unchanged. */
int cp_knobs_parse(struct cp_knobs *k, const char *spec, char *err, size_t errlen);

/* One mapping's estimates (zero: nothing measured) and counters. */
struct cp_costs {
	uint32_t copy_ns, pread_ns, touch_ns, populate_ns;
	uint32_t tick;		/* small reads so far: picks the timed ones */
	uint32_t burst;		/* copies still to time in a row */
	uint32_t losing;	/* reads with copies losing since the last forget */
	/* The bank, ns (the process's: kept in the seed's): what the policy
	 * may still spend on ways dearer than pread now (a touch, a block, a
	 * copy probe) in the hope they pay later; a buy only while it is not
	 * overdrawn.  It earns allowance per mille of each read's pread and
	 * what each copy out of touched pages saved. */
	int64_t bank;
	/* Reads per 2 MiB block of the processes that read the file before
	 * (cp_prior; 0: none known). */
	uint32_t prior_reads;
	uint32_t prior_low;	/* and the low mark of those counts */
	uint32_t blocks;	/* blocks of the mapping populated */
	/* Whether a pread was timed yet: the first a process times is not
	 * a sample (account_one). */
	uint32_t pread_seen;
	/* The process's (the seed's): the prior's credit was given, and what
	 * is left of it, ns (spent only on blocks the prior buys). */
	uint32_t credited;
	int64_t credit;
	struct cp_costs *proc;	/* the process's (the seed), or NULL */
};

/* A mapping's estimates of a touch, a block and a pread start from the
 * process's (seed; NULL: none), and those still unmeasured when it is
 * read take the process's then; its copy estimate starts from nothing. */
void cp_costs_init(struct cp_costs *c, struct cp_costs *seed, const struct cp_knobs *k);

enum cp_way {
	CP_PREAD,	/* pread on the caller's descriptor */
	CP_COPY,	/* a copy out of touched pages */
	CP_TOUCH	/* a copy that touches pages first read this way */
};

struct cp_plan {
	enum cp_way way;
	bool timed;	/* time the read and cp_account() it */
	bool probe;	/* this read goes the other way, to keep both estimates */
	bool wake;	/* first read a byte of another page of the block */
	bool hit;	/* count a pread read of the pages (page state) */
	bool heat;	/* count the block's read: populate at cp_populate_after */
	bool block_probe;	/* and populate it now (the prior's probe) */
	bool forget;	/* first forget which pages are touched, and the
			 * blocks' reads: copies lost for `relearn` reads */
	bool asked;	/* the page state was asked (else it was not needed) */
	bool touched;	/* what it said: every page touched */
	unsigned hits;	/* and the fewest reads of any page */
};

/* The page state of the read's pages: all touched?  the fewest pread
 * reads of any.  Asked at most once per plan, and only when the way
 * depends on it. */
typedef void cp_pages_fn(void *ctx, bool *touched, unsigned *hits);

/* The way for a read of n bytes (within the file); have_fd: pread is
 * possible (else every read copies).  Writes plan. */
void cp_decide(struct cp_costs *c, const struct cp_knobs *k, size_t n, bool have_fd,
	       cp_pages_fn *pages, void *ctx, struct cp_plan *plan);
/* A timed read of plan took ns and spanned `pages` pages: the estimates
 * move (a touch's and a pread's also in seed, the process's, when not
 * NULL). */
void cp_account(struct cp_costs *c, struct cp_costs *seed, const struct cp_knobs *k,
		const struct cp_plan *plan, uint64_t ns, size_t pages);
/* Populating a block took ns; bought: the policy populated it (paid from
 * the bank), else the program asked (hm_warm, a view); small: the whole
 * block is known to be mapped page by page (a file in small folios), not
 * by one huge entry nor unknown. */
void cp_populate_account(struct cp_costs *c, struct cp_costs *seed, const struct cp_knobs *k,
			 uint64_t ns, bool bought, bool small);
/* Populating `blocks` blocks at once (a span of a file in huge folios, in
 * one call) took ns: the buy is charged ns, and the estimate, a block's,
 * moves towards ns / blocks, once. */
void cp_span_account(struct cp_costs *c, struct cp_costs *seed, const struct cp_knobs *k,
		     uint64_t ns, unsigned blocks, bool bought);

/* The daemon says that the processes that read the file before read each
 * 2 MiB block of it `reads` times on average (OPEN's block_reads; 0: not
 * known), and `low` times at the least (its low mark, block_reads_low:
 * falls at once to a grant that read less, climbs back half way with each
 * that read more).  Where the average is at least prior_margin times what
 * a block takes to pay (the block's estimate over a touched read's gain:
 * the margin, so that a process reading half as much as those before it
 * still gains), or the low mark prior_low_margin times, a
 * block is populated at its first read rather than once its own reads
 * have paid for it: the rent cannot know that a block will be read again,
 * the prior can.  The first
 * count the process is given comes with a credit of prior_credit_ns,
 * once, which pays first for the blocks the prior buys (and for nothing
 * else; the prior waits for a pread measured), the bank paying what it
 * cannot: the first buys
 * need not wait for copies to earn them, and a prior that lies (other
 * clients write what it is made of) costs a process at most that credit
 * more than the floor. */
void cp_prior(struct cp_costs *c, const struct cp_knobs *k, uint32_t reads, uint32_t low);
/* The prior's credit left, ns. */
int64_t cp_credit(const struct cp_costs *c);

/* The rent-or-buy thresholds, from the estimates: a page is touched once
 * it has been read cp_touch_after() times with pread; a block populated
 * once its reads with pread reach cp_populate_after(). */
unsigned cp_touch_after(const struct cp_costs *c, const struct cp_knobs *k);
unsigned cp_populate_after(const struct cp_costs *c, const struct cp_knobs *k);
/* Whether copies out of touched pages are cheaper than pread (or not
 * measured yet). */
bool cp_copies_pay(const struct cp_costs *c);
/* The bank now, ns (negative: overdrawn, nothing is bought). */
int64_t cp_bank(const struct cp_costs *c);

#endif
