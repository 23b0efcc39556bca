/* SPDX-License-Identifier: MIT */
/*
 * direct_policy.h - the direct tier's cost policy: which copy a read of a
 * mapped file takes, the kernel's (pread on the client's own descriptor)
 * or a memcpy out of the mapping, which reads are timed, and when a block
 * of the mapping is worth populating, all from what each way is measured
 * to cost in this process (docs/direct-reads.md, "Which copy").
 *
 * What it is for: the one place that policy lives, behind this small
 * interface, so that it can be changed or replaced on its own.  The read
 * path (direct_unix.c) asks what a read does (direct_policy_plan), does
 * it, timing it when the plan says so, and tells what it cost
 * (direct_policy_preaded, direct_policy_copied, direct_policy_populated).
 *
 * What it must not do: read a clock, touch a mapping or a file, or make a
 * system call: the read path does the reading and the timing.  Its state
 * is a struct direct_cost per mapping and a little per process; its other
 * input is the mapping's page state (page_state.h).  Portable: it would
 * serve a direct tier on Windows as it is.
 */
#ifndef HOTMAP_CLIENT_DIRECT_POLICY_H
#define HOTMAP_CLIENT_DIRECT_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/page_state.h"

/* What reading one mapping costs, measured.  Every field atomic. */
struct direct_cost {
	uint64_t populate_ns;	/* a block's cost, estimated */
	/* moving averages of a small read's cost, ns, each way (0: not
	 * measured yet), and the reads so far, which pick the timed ones */
	uint32_t copy_ns, pread_ns;
	unsigned tick;
	unsigned burst;		/* copies still to time in a row */
};

/* What one read does, as direct_policy_plan decides it. */
struct direct_plan {
	bool pread;		/* the kernel's copy; else a copy out of the mapping */
	bool touched;		/* its pages are touched already (as far as looked) */
	bool clock;		/* the read path times the pread or the copy */
	bool wake;		/* a timed copy: wake its block first (block_wake) */
	bool populate;		/* a pread: its blocks' heat counts (populate when hot) */
	/* the policy's own, for what the read costs */
	bool timed, reprobe, hit;
};

/* A new mapping's cost, before anything is measured.  k is zeroed. */
void direct_cost_init(struct direct_cost *k);

/* A read of n bytes (n > 0), pages first .. last (of 4 KiB) of a mapping
 * whose cost is k and page state pages; have_fd: the client has a
 * descriptor of the file to pread. */
void direct_policy_plan(struct direct_cost *k, const struct page_state *pages, size_t n,
			size_t first, size_t last, bool have_fd, struct direct_plan *p);

/* p's pread is done: ns, what it took (when p->clock, else 0). */
void direct_policy_preaded(struct direct_cost *k, struct page_state *pages,
			   const struct direct_plan *p, size_t first, size_t last, uint64_t ns);

/* p's copy out of the mapping is done: ns, what it took (when p->clock,
 * else 0), for pages first .. last. */
void direct_policy_copied(struct direct_cost *k, const struct direct_plan *p, size_t first,
			  size_t last, uint64_t ns);

/* The reads with pread after which a block of the mapping is populated
 * (page_state_block_heat's after). */
unsigned direct_policy_populate_after(const struct direct_cost *k);

/* A block of the mapping took ns to populate, and its pages to touch. */
void direct_policy_populated(struct direct_cost *k, uint64_t ns);

#endif
