/* SPDX-License-Identifier: MIT */
/*
 * page_state.h - what the direct tier knows of each 4 KiB page of a
 * mapping: how often it was read with pread, and whether it has been
 * touched through the mapping, and per 2 MiB block its reads with pread
 * (the copy policy, copy_policy.c, decides with them which copy a read
 * takes, and when a block is worth populating).  Portable, as the policy
 * is.
 *
 * Memory is made as it is written, and a page of it costs a page fault
 * (on the test VM 10 us each, 5 with MAP_POPULATE: more than the reads it
 * steers), so nothing grows with the reads of a file that is read at
 * random:
 * - the touched marks, a bit per page, in blocks of PAGE_STATE_CHUNK pages
 *   made when a page of the block is first touched (a block bought, a page
 *   touched: the buy pays for its 64 bytes), packed 512 to a 32 KiB arena;
 * - the pread counts in one table per mapping, a byte per page up to
 *   PAGE_STATE_HITS_TABLE pages, and for a bigger file that many counters
 *   a page's count is hashed into: made at the first count.  A counter
 *   several pages share counts their reads together, so a page may be
 *   touched early; and so that collisions do not add up over a long life,
 *   a shared table is halved each time it has counted four times its size
 *   (a read of n pages counts n), which may touch a page late: one read
 *   less than once in some 1,300 counts of its file is not touched, which
 *   a touch could not repay on the test VM.
 *   Before, each block got a byte per page at its first counted read:
 *   5,000 random reads of a 1 GiB file took 64 pages of memory, some 0.6
 *   ms of faults in an 11 ms run (bench/hmproc).
 * Reads take no lock; a block or the table is made under the state's lock
 * and published with a release store.
 */
#ifndef HOTMAP_CLIENT_PAGE_STATE_H
#define HOTMAP_CLIENT_PAGE_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PAGE_STATE_CHUNK	512u	/* pages per block: 2 MiB of file */
#define PAGE_STATE_HITS_MAX	127u	/* pread reads counted per page */
#define PAGE_STATE_HITS_TABLE	4096u	/* counters at most, a power of two */

struct page_state {
	uint64_t **chunks;	/* per block: its touched bits; NULL: none */
	size_t nchunks;
	size_t npages;
	pthread_mutex_t lock;	/* making blocks and the table */
	struct page_arena *arenas;
	size_t arena_used;	/* bytes of arenas' first one handed out */
	uint8_t *hits;		/* the pread counts; NULL until the first */
	size_t nhits;		/* counters: npages, or PAGE_STATE_HITS_TABLE
				 * shared (a power of two) */
	uint32_t counted;	/* counts since the shared table was halved */
	/* Per block: its reads with pread (PAGE_STATE_HEAT_MAX at most),
	 * and PAGE_STATE_TRIED once it was populated or tried. */
	uint16_t *heat;
};

#define PAGE_STATE_HEAT_MAX	0x7fffu
#define PAGE_STATE_TRIED	0x8000u

int page_state_init(struct page_state *s, size_t npages);
void page_state_free(struct page_state *s);
/* Whether every page of [first, last] is touched, and the fewest pread
 * reads counted for any of them (0 when all are touched). */
void page_state_ask(const struct page_state *s, size_t first, size_t last, bool *touched,
		    unsigned *hits);
/* A pread of [first, last]: each page's count grows by one. */
void page_state_hit(struct page_state *s, size_t first, size_t last);
/* [first, last] touched through the mapping. */
void page_state_mark(struct page_state *s, size_t first, size_t last);
/* A pread of block b: true, once, when it reaches `after` reads (the
 * caller populates it then). */
bool page_state_block_heat(struct page_state *s, size_t b, unsigned after);
/* Block b taken to be populated now with a span of blocks: true when
 * this caller took it (it was not populated nor tried before). */
bool page_state_block_claim(struct page_state *s, size_t b);
/* A claim given back: the span was not populated (its block may be
 * bought again). */
void page_state_block_unclaim(struct page_state *s, size_t b);
/* Everything forgotten: no page touched, no read counted. */
void page_state_forget(struct page_state *s);

#endif
