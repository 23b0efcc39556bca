/* SPDX-License-Identifier: MIT */
/*
 * page_state.h - what the direct tier knows of each 4 KiB page of a
 * mapping: how often it was read with pread, and whether it has been
 * touched through the mapping, and per 2 MiB block its reads with pread
 * (the copy policy, copy_policy.c, decides with them which copy a read takes, and when a
 * block is worth populating).  Portable, as the policy is.
 *
 * Kept in blocks of PAGE_STATE_CHUNK pages made on the first write into
 * them and packed several to a page of memory: a short-lived process
 * that reads a few ranges of a big file writes into a few blocks, where
 * a flat array of a byte per page would have cost it a page fault per
 * range (and a fault is tens of microseconds on a loaded virtual
 * machine: more than the reads it steers).  Reads take no lock; a block
 * is made under the state's lock and published with a release store.
 */
#ifndef HOTMAP_CLIENT_PAGE_STATE_H
#define HOTMAP_CLIENT_PAGE_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PAGE_STATE_CHUNK	512u	/* pages per block: 2 MiB of file */
#define PAGE_STATE_HITS_MAX	127u	/* pread reads counted per page */

struct page_state {
	uint8_t **chunks;	/* per block: NULL until written (all zero) */
	size_t nchunks;
	pthread_mutex_t lock;	/* making blocks */
	struct page_arena *arenas;
	size_t arena_used;	/* bytes of arenas' first one handed out */
	/* Per block: its reads with pread (PAGE_STATE_HEAT_MAX at most),
	 * and PAGE_STATE_TRIED once it was populated or tried. */
	uint16_t *heat;
};

#define PAGE_STATE_HEAT_MAX	0x7fffu
#define PAGE_STATE_TRIED	0x8000u

int page_state_init(struct page_state *s, size_t npages);
void page_state_free(struct page_state *s);
/* Whether every page of [first, last] has been touched; if not, the
 * fewest pread reads of any of them (else 0). */
void page_state_ask(const struct page_state *s, size_t first, size_t last, bool *touched,
		    unsigned *hits);
/* One more pread read of each page of [first, last]. */
void page_state_hit(struct page_state *s, size_t first, size_t last);
/* Pages [first, last] are touched. */
void page_state_mark(struct page_state *s, size_t first, size_t last);
/* One more pread read of block b (pages b * PAGE_STATE_CHUNK on): true
 * once, when its reads reach `after` (the caller then populates it). */
bool page_state_block_heat(struct page_state *s, size_t b, unsigned after);
/* Forgets every page's reads and touch and every block's heat (the copy
 * policy's plan.forget): as new, but the memory is kept. */
void page_state_forget(struct page_state *s);

#endif
