/* SPDX-License-Identifier: MIT */
/*
 * copy_sim.h - the simulated machines the copy policy's tests drive it on
 * (tests/test_copy_policy.c, tests/test_copy_prior.c): each read is
 * charged what its way costs on the machine, and the policy is told what
 * the plans it made say to time.  No clock.
 */
#ifndef HOTMAP_TESTS_COPY_SIM_H
#define HOTMAP_TESTS_COPY_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/copy_policy.h"

#define PAGE		4096u
#define BLOCK_PAGES	512u
#define WINDOW		2048u

/* What each way costs on a machine, ns. */
struct machine {
	double pread_fixed, pread_page;	/* pread of n pages: fixed + n * page */
	double copy_fixed, copy_page;	/* a copy out of mapped pages */
	double touch_page;		/* a page not mapped yet: a fault */
	double populate_block;		/* populating a 2 MiB block */
	bool pte_blocks;		/* mapped page by page (small folios), not
					 * by one huge entry */
	double age_ns, trap_ns;		/* a block not read through the mapping
					 * for age_ns traps once, trap_ns */
	unsigned cold_blocks;		/* a process's first blocks populated */
	double cold_block;		/* cost this each, not populate_block */
	unsigned dear_every;		/* and one block in this many after */
	double dear_block;		/* this */
	double think_ns;		/* the program's own time between reads */
};

/* One contender's view of the machine: which pages are mapped in its
 * page tables, and when each block was last read through them. */
struct mstate {
	const struct machine *m;
	size_t npages;
	uint8_t *mapped;
	double *block_seen;
	double now;
};

/* The policy's page state, as client/page_state.c keeps it. */
struct pstate {
	uint8_t *touched, *hits;
	uint16_t *heat;
	size_t first, pages;	/* the read being asked about */
};

/* A run: the policy and the two plain ways over the same reads. */
struct run {
	const struct machine *m;
	size_t npages;
	struct cp_knobs k;
	struct cp_costs costs, proc;
	struct pstate ps;
	struct mstate pol, map;		/* the policy's machine; always-mapping's */
	double t_pol, t_pread, t_map;	/* totals */
	double w_pol, w_pread, w_map;	/* this window's */
	double worst;			/* the worst, at a window's end, of the cost so
					 * far / the better plain way's so far */
	size_t reads, copies, touches, preads, populates, window_copies, forgets;
	double worst_window;		/* the worst window's alone */
	/* the first read of an event, so that its window is found */
	double extra_next;		/* ns added to the next read, every way */
	uint64_t rng;
};

/* The machines (copy_sim.c says what each stands for). */
extern const struct machine bare, vm, vm_huge, vm_huge_cold;

void mstate_init(struct mstate *s, const struct machine *m, size_t npages);
void mstate_free(struct mstate *s);
double cost_pread(const struct mstate *s, size_t pages);
double wake(struct mstate *s, size_t page);
double cost_copy(struct mstate *s, size_t first, size_t pages, double *faults);
void pages_fn(void *ctx, bool *touched, unsigned *hits);
void small_pages_fn(void *ctx, bool *touched, unsigned *hits);
void run_init(struct run *r, const struct machine *m, size_t npages);
void run_free(struct run *r);
uint64_t rnd(struct run *r);
void one_read(struct run *r, size_t first, size_t pages);
void random_reads(struct run *r, size_t n, size_t span);
void pause_for(struct run *r, double ns);
double copied_last(struct run *r, size_t n, size_t span);
void report(const char *name, const struct run *r);

#endif
