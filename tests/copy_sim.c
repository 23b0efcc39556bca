/* SPDX-License-Identifier: MIT */
/*
 * copy_sim.c - see copy_sim.h.
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

#include "tests/copy_sim.h"



/* Bare metal: a minor fault is a fraction of a microsecond. */
const struct machine bare = {
	.pread_fixed = 600, .pread_page = 150, .copy_fixed = 40, .copy_page = 110,
	.touch_page = 250, .populate_block = 30000, .pte_blocks = true, .think_ns = 200,
};
/* The test VM (shadow page tables; DAMON clears accessed bits): a first
 * touch exits to the hypervisor, and a block left for ~100 ms traps once
 * (docs/direct-reads.md has the measurements). */
const struct machine vm = {
	.pread_fixed = 2000, .pread_page = 500, .copy_fixed = 150, .copy_page = 400,
	.touch_page = 2700, .populate_block = 512 * 1500.0 + 20000, .pte_blocks = true,
	.age_ns = 100e6, .trap_ns = 5500, .think_ns = 500,
};

/* The test VM with the file in huge folios (the daemon folds them): a
 * block populates with one fault and one trap, ~20 us (docs/direct-reads.md,
 * "Huge folios"), and a process that maps and copies at its first read
 * wins where each block is read some 20 times. */
const struct machine vm_huge = {
	.pread_fixed = 2000, .pread_page = 500, .copy_fixed = 150, .copy_page = 400,
	.touch_page = 2700, .populate_block = 20000, .age_ns = 100e6,
	.trap_ns = 5500, .think_ns = 500,
};

/* The same, as measured in hmbench's fresh processes: a process's first
 * blocks cost it 40-260 us (its first madvise, its page tables' own
 * pages, cold caches; here its first 4, 200 us each), the rest 13-20 us
 * but one in ten 50-100 us. */
const struct machine vm_huge_cold = {
	.pread_fixed = 2000, .pread_page = 500, .copy_fixed = 150, .copy_page = 400,
	.touch_page = 2700, .populate_block = 17000, .age_ns = 100e6,
	.trap_ns = 5500, .think_ns = 500, .cold_blocks = 4, .cold_block = 200000,
	.dear_every = 10, .dear_block = 90000,
};


void
mstate_init(struct mstate *s, const struct machine *m, size_t npages)
{
	s->m = m;
	s->npages = npages;
	s->mapped = calloc(npages, 1);
	s->block_seen = calloc(npages / BLOCK_PAGES + 1, sizeof(double));
	s->now = 0;
	assert_non_null(s->mapped);
	assert_non_null(s->block_seen);
}

void
mstate_free(struct mstate *s)
{
	free(s->mapped);
	free(s->block_seen);
}

double
cost_pread(const struct mstate *s, size_t pages)
{
	return s->m->pread_fixed + (double)pages * s->m->pread_page;
}

/* a block's trap, if it aged; it is awake afterwards */
double
wake(struct mstate *s, size_t page)
{
	size_t b = page / BLOCK_PAGES;
	double c = 0;

	if (s->m->age_ns > 0 && s->block_seen[b] > 0 && s->now - s->block_seen[b] > s->m->age_ns)
		c = s->m->trap_ns;
	s->block_seen[b] = s->now;
	return c;
}

/* a copy out of the mapping: faults for pages not mapped (and maps them),
 * the block's trap if it aged, the copy */
double
cost_copy(struct mstate *s, size_t first, size_t pages, double *faults)
{
	double c = s->m->copy_fixed + (double)pages * s->m->copy_page, f = 0;
	size_t p;

	for (p = first; p < first + pages; p++)
		if (!s->mapped[p]) {
			f += s->m->touch_page;
			s->mapped[p] = 1;
		}
	c += f + wake(s, first);
	if (faults != NULL)
		*faults = f;
	return c;
}


void
pages_fn(void *ctx, bool *touched, unsigned *hits)
{
	struct pstate *ps = ctx;
	size_t p;

	*touched = true;
	*hits = 255;
	for (p = ps->first; p < ps->first + ps->pages; p++) {
		if (!ps->touched[p])
			*touched = false;
		if (ps->hits[p] < *hits)
			*hits = ps->hits[p];
	}
}

/* pages_fn for a page state whose hits keep a flag of the test's in
 * their top bit */
void
small_pages_fn(void *ctx, bool *touched, unsigned *hits)
{
	struct pstate *ps = ctx;

	*touched = ps->touched[ps->first] != 0;
	*hits = ps->hits[ps->first] & 0x7fu;
}


void
run_init(struct run *r, const struct machine *m, size_t npages)
{
	memset(r, 0, sizeof(*r));
	r->m = m;
	r->npages = npages;
	cp_knobs_default(&r->k);
	cp_costs_init(&r->proc, NULL, &r->k);
	cp_costs_init(&r->costs, &r->proc, &r->k);
	r->ps.touched = calloc(npages, 1);
	r->ps.hits = calloc(npages, 1);
	r->ps.heat = calloc(npages / BLOCK_PAGES + 1, sizeof(uint16_t));
	assert_non_null(r->ps.touched);
	assert_non_null(r->ps.hits);
	assert_non_null(r->ps.heat);
	mstate_init(&r->pol, m, npages);
	mstate_init(&r->map, m, npages);
	r->rng = 0x9e3779b97f4a7c15u;
}

void
run_free(struct run *r)
{
	free(r->ps.touched);
	free(r->ps.hits);
	free(r->ps.heat);
	mstate_free(&r->pol);
	mstate_free(&r->map);
}

uint64_t
rnd(struct run *r)
{
	r->rng ^= r->rng << 13;
	r->rng ^= r->rng >> 7;
	r->rng ^= r->rng << 17;
	return r->rng;
}

static void
window_end(struct run *r)
{
	double better = r->w_pread < r->w_map ? r->w_pread : r->w_map;
	double ratio = r->w_pol / better;

	if (ratio > r->worst_window)
		r->worst_window = ratio;
	better = r->t_pread < r->t_map ? r->t_pread : r->t_map;
	ratio = r->t_pol / better;
	if (ratio > r->worst)
		r->worst = ratio;
	r->w_pol = r->w_pread = r->w_map = 0;
	r->window_copies = 0;
}

/* One read of `pages` pages from page `first`, through the policy and
 * through each plain way. */
void
one_read(struct run *r, size_t first, size_t pages)
{
	struct cp_plan plan;
	double c = 0, pr = cost_pread(&r->pol, pages), mp, extra = r->extra_next;
	size_t p, b;

	r->ps.first = first;
	r->ps.pages = pages;
	cp_decide(&r->costs, &r->k, pages * PAGE, true, pages_fn, &r->ps, &plan);
	if (plan.forget) {
		memset(r->ps.touched, 0, r->npages);
		memset(r->ps.hits, 0, r->npages);
		memset(r->ps.heat, 0, (r->npages / BLOCK_PAGES + 1) * sizeof(uint16_t));
		r->forgets++;
	}
	if (plan.wake)
		c += wake(&r->pol, first);	/* paid, but not in the sample */
	switch (plan.way) {
	case CP_PREAD: {
		double t = pr + extra;

		r->preads++;
		c += t;
		if (plan.timed)
			cp_account(&r->costs, &r->proc, &r->k, &plan, (uint64_t)t, pages);
		if (plan.hit)
			for (p = first; p < first + pages; p++)
				if (r->ps.hits[p] < 127)
					r->ps.hits[p]++;
		if (plan.heat)
			for (b = first / BLOCK_PAGES; b <= (first + pages - 1) / BLOCK_PAGES; b++) {
				if (r->ps.heat[b] & 0x8000u)
					continue;
				r->ps.heat[b]++;
				if (r->ps.heat[b] < (plan.block_probe ? 1u : cp_populate_after(&r->costs, &r->k)))
					continue;
				/* populate: the pages mapped, the block awake */
				r->ps.heat[b] |= 0x8000u;
				{
					double pc = r->populates < r->m->cold_blocks ?
							    r->m->cold_block :
						    r->m->dear_every != 0 &&
								    r->populates % r->m->dear_every == 0 ?
							    r->m->dear_block :
							    r->m->populate_block;

					for (p = b * BLOCK_PAGES;
					     p < (b + 1) * BLOCK_PAGES && p < r->npages; p++) {
						r->pol.mapped[p] = 1;
						r->ps.touched[p] = 1;
					}
					r->pol.block_seen[b] = r->pol.now;
					cp_populate_account(&r->costs, &r->proc, &r->k,
							    (uint64_t)pc, true, r->m->pte_blocks);
					c += pc;
					r->populates++;
				}
				{
					/* and a copy of the read out of it, timed
					 * (copy_sample in client/direct_unix.c) */
					static const struct cp_plan sample = { .way = CP_COPY,
									       .timed = true };
					double sc = cost_copy(&r->pol, first, pages, NULL);

					cp_account(&r->costs, &r->proc, &r->k, &sample,
						   (uint64_t)sc, pages);
					c += sc;
				}
			}
		break;
	}
	case CP_COPY:
	case CP_TOUCH: {
		double t = cost_copy(&r->pol, first, pages, NULL) + extra;

		c += t;
		if (plan.way == CP_COPY) {
			r->copies++;
			r->window_copies++;
		} else {
			r->touches++;
		}
		if (plan.timed)
			cp_account(&r->costs, &r->proc, &r->k, &plan, (uint64_t)t, pages);
		for (p = first; p < first + pages; p++)
			r->ps.touched[p] = 1;
		break;
	}
	}
	mp = cost_copy(&r->map, first, pages, NULL) + extra;
	pr += extra;
	r->pol.now += c + r->m->think_ns;
	r->map.now += mp + r->m->think_ns;
	r->t_pol += c;
	r->t_pread += pr;
	r->t_map += mp;
	r->w_pol += c;
	r->w_pread += pr;
	r->w_map += mp;
	r->extra_next = 0;
	if (++r->reads % WINDOW == 0)
		window_end(r);
}

/* n random reads of one page among the first `span` pages */
void
random_reads(struct run *r, size_t n, size_t span)
{
	while (n-- > 0)
		one_read(r, (size_t)(rnd(r) % span), 1);
}

/* Sleeping: the program does something else for ns. */
void
pause_for(struct run *r, double ns)
{
	r->pol.now += ns;
	r->map.now += ns;
}

/* The fraction of the last window's reads that copied. */
double
copied_last(struct run *r, size_t n, size_t span)
{
	size_t before = r->copies;

	random_reads(r, n, span);
	return (double)(r->copies - before) / (double)n;
}

void
report(const char *name, const struct run *r)
{
	print_message("# %s: %zu reads: policy %.2fx pread, %.2fx mapping; worst %.2fx the "
		      "better way so far, %.2fx in a window of %u; %zu copies, %zu touches, "
		      "%zu preads, %zu populates, %zu forgets; est copy %u pread %u touch %u "
		      "populate %u\n",
		      name, r->reads, r->t_pol / r->t_pread, r->t_pol / r->t_map, r->worst,
		      r->worst_window, WINDOW, r->copies, r->touches, r->preads, r->populates,
		      r->forgets, (unsigned)r->costs.copy_ns,
		      (unsigned)r->costs.pread_ns, (unsigned)r->costs.touch_ns,
		      (unsigned)r->costs.populate_ns);
}
