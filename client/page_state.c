/* SPDX-License-Identifier: MIT */
/*
 * page_state.c - see page_state.h.
 *
 * Counts and marks are racy between threads, which is fine: they only
 * steer the choice of copy (a count lost is one pread more; a mark lost,
 * one touch more; never a byte).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/page_state.h"

#define WORDS		(PAGE_STATE_CHUNK / 64u)	/* touched bits of a block */
#define CHUNK_BYTES	(WORDS * sizeof(uint64_t))
/* Blocks are carved out of arenas of this many bytes. */
#define ARENA_BYTES	(32u * 1024u)

struct page_arena {
	struct page_arena *next;
	uint64_t words[];
};

int
page_state_init(struct page_state *s, size_t npages)
{
	/* a file's short last page is one more than its whole pages (the
	 * caller counts those): room for it */
	npages++;
	s->nchunks = npages / PAGE_STATE_CHUNK + 1;
	s->npages = npages;
	s->chunks = calloc(s->nchunks, sizeof *s->chunks);
	if (s->chunks == NULL)
		return -ENOMEM;
	s->heat = calloc(s->nchunks, sizeof *s->heat);
	if (s->heat == NULL) {
		free(s->chunks);
		return -ENOMEM;
	}
	pthread_mutex_init(&s->lock, NULL);
	s->arenas = NULL;
	s->arena_used = ARENA_BYTES;	/* none yet */
	s->hits = NULL;
	s->nhits = npages <= PAGE_STATE_HITS_TABLE ? npages : PAGE_STATE_HITS_TABLE;
	s->counted = 0;
	return 0;
}

void
page_state_free(struct page_state *s)
{
	while (s->arenas != NULL) {
		struct page_arena *a = s->arenas;

		s->arenas = a->next;
		free(a);
	}
	free(s->chunks);
	s->chunks = NULL;
	free(s->heat);
	s->heat = NULL;
	free(s->hits);
	s->hits = NULL;
	pthread_mutex_destroy(&s->lock);
}

/* Whether the table is shared by several pages a counter. */
static bool
shared(const struct page_state *s)
{
	return s->npages > s->nhits;
}

/* Page p's counter: itself when every page has one, else a hash (the
 * golden ratio's multiplier: pages near each other fall far apart). */
static size_t
counter_of(const struct page_state *s, size_t p)
{
	if (!shared(s))
		return p;
	return (size_t)(((uint64_t)p * 0x9e3779b97f4a7c15ull) >> 52) & (PAGE_STATE_HITS_TABLE - 1u);
}

/* Block b's touched bits, made if need be; NULL without memory (its pages
 * then stay untouched: read with pread). */
static uint64_t *
chunk_at(struct page_state *s, size_t b)
{
	uint64_t **slot = &s->chunks[b];
	uint64_t *c = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (c != NULL)
		return c;
	pthread_mutex_lock(&s->lock);
	c = *slot;
	if (c == NULL) {
		if (s->arena_used + CHUNK_BYTES > ARENA_BYTES) {
			/* not calloc: it would clear the whole arena now, a
			 * page fault per page; each block is cleared as it is
			 * handed out */
			struct page_arena *a = malloc(sizeof *a + ARENA_BYTES);

			if (a != NULL) {
				a->next = s->arenas;
				s->arenas = a;
				s->arena_used = 0;
			}
		}
		if (s->arena_used + CHUNK_BYTES <= ARENA_BYTES) {
			c = s->arenas->words + s->arena_used / sizeof(uint64_t);
			s->arena_used += CHUNK_BYTES;
			memset(c, 0, CHUNK_BYTES);
			__atomic_store_n(slot, c, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&s->lock);
	return c;
}

/* The counters, made if need be; NULL without memory (nothing is counted:
 * no page is touched by the rent-or-buy rule, and blocks still are). */
static uint8_t *
hits_at(struct page_state *s)
{
	uint8_t *h = __atomic_load_n(&s->hits, __ATOMIC_ACQUIRE);

	if (h != NULL)
		return h;
	pthread_mutex_lock(&s->lock);
	h = s->hits;
	if (h == NULL) {
		h = calloc(s->nhits, 1);
		if (h != NULL)
			__atomic_store_n(&s->hits, h, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&s->lock);
	return h;
}

static bool
touched_in(const uint64_t *c, size_t p)
{
	size_t i = p % PAGE_STATE_CHUNK;

	return c != NULL && (__atomic_load_n(&c[i / 64u], __ATOMIC_RELAXED) >> (i % 64u) & 1u);
}

void
page_state_ask(const struct page_state *s, size_t first, size_t last, bool *touched,
	       unsigned *hits)
{
	const uint8_t *h = __atomic_load_n(&s->hits, __ATOMIC_ACQUIRE);
	unsigned min = PAGE_STATE_HITS_MAX;
	bool all = true;
	size_t p;

	/* one pass: the copy policy asks this on every read of a page not
	 * yet touched (its rent) */
	for (p = first; p <= last; p++) {
		const uint64_t *c = __atomic_load_n(&s->chunks[p / PAGE_STATE_CHUNK], __ATOMIC_ACQUIRE);
		unsigned v;

		if (touched_in(c, p))
			continue;
		all = false;
		v = h != NULL ? __atomic_load_n(&h[counter_of(s, p)], __ATOMIC_RELAXED) : 0u;
		if (v < min)
			min = v;
	}
	*touched = all;
	*hits = all ? 0 : min;
}

/* Every shared counter halved: counts of pages that collided fade, where
 * a hot page's keep growing between halvings. */
static void
halve(uint8_t *h, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint8_t v = __atomic_load_n(&h[i], __ATOMIC_RELAXED);

		if (v != 0)
			__atomic_store_n(&h[i], (uint8_t)(v / 2u), __ATOMIC_RELAXED);
	}
}

void
page_state_hit(struct page_state *s, size_t first, size_t last)
{
	uint8_t *h = hits_at(s);
	size_t p;

	if (h == NULL)
		return;
	for (p = first; p <= last; p++) {
		uint8_t *b = &h[counter_of(s, p)];
		uint8_t v = __atomic_load_n(b, __ATOMIC_RELAXED);

		/* a plain store, not a compare-and-swap (on every read with
		 * pread): another thread's count in between may be lost */
		if (v < PAGE_STATE_HITS_MAX)
			__atomic_store_n(b, (uint8_t)(v + 1u), __ATOMIC_RELAXED);
	}
	if (shared(s)) {
		uint32_t n = __atomic_load_n(&s->counted, __ATOMIC_RELAXED) + (uint32_t)(last - first + 1);

		if (n >= 4u * PAGE_STATE_HITS_TABLE) {
			halve(h, s->nhits);
			n = 0;
		}
		__atomic_store_n(&s->counted, n, __ATOMIC_RELAXED);
	}
}

void
page_state_mark(struct page_state *s, size_t first, size_t last)
{
	size_t p = first;

	/* a word of 64 pages at a time: a span of blocks bought at once is
	 * 8,192 pages */
	while (p <= last) {
		uint64_t *c = chunk_at(s, p / PAGE_STATE_CHUNK);
		size_t i = p % PAGE_STATE_CHUNK, lo = i % 64u;
		size_t hi = last - p + lo < 63u ? last - p + lo : 63u;	/* within the word */
		uint64_t mask = (hi == 63u ? ~(uint64_t)0 : (((uint64_t)1 << (hi + 1u)) - 1u)) &
				~(((uint64_t)1 << lo) - 1u);

		if (c != NULL && (__atomic_load_n(&c[i / 64u], __ATOMIC_RELAXED) & mask) != mask)
			__atomic_fetch_or(&c[i / 64u], mask, __ATOMIC_RELAXED);
		p += hi - lo + 1u;
	}
}

bool
page_state_block_heat(struct page_state *s, size_t b, unsigned after)
{
	uint16_t v = __atomic_load_n(&s->heat[b], __ATOMIC_RELAXED);

	if (v & PAGE_STATE_TRIED)
		return false;
	if ((unsigned)(v & PAGE_STATE_HEAT_MAX) + 1 < after) {
		/* racy between threads, and fine: a count */
		__atomic_store_n(&s->heat[b], (uint16_t)(v + 1), __ATOMIC_RELAXED);
		return false;
	}
	/* exactly one caller populates it */
	return __atomic_compare_exchange_n(&s->heat[b], &v, (uint16_t)PAGE_STATE_TRIED, false,
					   __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

bool
page_state_block_claim(struct page_state *s, size_t b)
{
	uint16_t v = __atomic_load_n(&s->heat[b], __ATOMIC_RELAXED);

	while (!(v & PAGE_STATE_TRIED))
		if (__atomic_compare_exchange_n(&s->heat[b], &v, (uint16_t)PAGE_STATE_TRIED, false,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return true;
	return false;
}

void
page_state_block_unclaim(struct page_state *s, size_t b)
{
	uint16_t v = PAGE_STATE_TRIED;

	(void)__atomic_compare_exchange_n(&s->heat[b], &v, (uint16_t)0, false, __ATOMIC_RELAXED,
					  __ATOMIC_RELAXED);
}

void
page_state_forget(struct page_state *s)
{
	uint8_t *h = __atomic_load_n(&s->hits, __ATOMIC_ACQUIRE);
	size_t b, i;

	for (b = 0; b < s->nchunks; b++) {
		uint64_t *c = __atomic_load_n(&s->chunks[b], __ATOMIC_ACQUIRE);

		/* word by word, as the readers read them; a touch another
		 * thread marks meanwhile may stay (one touch the fewer,
		 * never a wrong byte) */
		if (c != NULL)
			for (i = 0; i < WORDS; i++)
				if (__atomic_load_n(&c[i], __ATOMIC_RELAXED) != 0)
					__atomic_store_n(&c[i], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&s->heat[b], 0, __ATOMIC_RELAXED);
	}
	if (h != NULL)
		for (i = 0; i < s->nhits; i++)
			if (__atomic_load_n(&h[i], __ATOMIC_RELAXED) != 0)
				__atomic_store_n(&h[i], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->counted, 0, __ATOMIC_RELAXED);
}
