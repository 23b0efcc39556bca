/* SPDX-License-Identifier: MIT */
/*
 * page_state.c - see page_state.h.
 *
 * A page's byte: bits 0-6 its pread reads (saturating at
 * PAGE_STATE_HITS_MAX), bit 7 touched.  Counts are racy between threads,
 * which is fine: they only steer the choice of copy.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/page_state.h"

#define TOUCHED		0x80u
/* Blocks are carved out of arenas of this many bytes. */
#define ARENA_BYTES	(32u * 1024u)

struct page_arena {
	struct page_arena *next;
	uint8_t bytes[];
};

int
page_state_init(struct page_state *s, size_t npages)
{
	s->nchunks = npages / PAGE_STATE_CHUNK + 1;
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
	pthread_mutex_destroy(&s->lock);
}

/* Page p's byte, or NULL when its block was never written (all zero). */
static const uint8_t *
page_peek(const struct page_state *s, size_t p)
{
	const uint8_t *c = __atomic_load_n(&s->chunks[p / PAGE_STATE_CHUNK], __ATOMIC_ACQUIRE);

	return c != NULL ? c + p % PAGE_STATE_CHUNK : NULL;
}

/* Page p's byte, its block made if need be; NULL without memory (the
 * page then stays unknown: read with pread, never marked). */
static uint8_t *
page_at(struct page_state *s, size_t p)
{
	uint8_t **slot = &s->chunks[p / PAGE_STATE_CHUNK];
	uint8_t *c = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (c == NULL) {
		pthread_mutex_lock(&s->lock);
		c = *slot;
		if (c == NULL) {
			if (s->arena_used + PAGE_STATE_CHUNK > ARENA_BYTES) {
				/* not calloc: it would clear the whole arena
				 * now, a page fault per page; each block is
				 * cleared as it is handed out */
				struct page_arena *a = malloc(sizeof *a + ARENA_BYTES);

				if (a != NULL) {
					a->next = s->arenas;
					s->arenas = a;
					s->arena_used = 0;
				}
			}
			if (s->arena_used + PAGE_STATE_CHUNK <= ARENA_BYTES) {
				c = s->arenas->bytes + s->arena_used;
				s->arena_used += PAGE_STATE_CHUNK;
				memset(c, 0, PAGE_STATE_CHUNK);
				__atomic_store_n(slot, c, __ATOMIC_RELEASE);
			}
		}
		pthread_mutex_unlock(&s->lock);
		if (c == NULL)
			return NULL;
	}
	return c + p % PAGE_STATE_CHUNK;
}

void
page_state_ask(const struct page_state *s, size_t first, size_t last, bool *touched,
	       unsigned *hits)
{
	unsigned min = PAGE_STATE_HITS_MAX;
	bool all = true;
	size_t p;

	/* one pass, each page's byte loaded once: the copy policy asks this
	 * on every read of a page not yet touched (its rent) */
	for (p = first; p <= last; p++) {
		const uint8_t *b = page_peek(s, p);
		unsigned v = b != NULL ? __atomic_load_n(b, __ATOMIC_RELAXED) : 0;

		if (!(v & TOUCHED))
			all = false;
		if ((v & ~TOUCHED) < min)
			min = v & ~TOUCHED;
	}
	*touched = all;
	*hits = all ? 0 : min;
}

void
page_state_hit(struct page_state *s, size_t first, size_t last)
{
	size_t p;

	for (p = first; p <= last; p++) {
		uint8_t *b = page_at(s, p);
		uint8_t v;

		if (b == NULL)
			continue;
		v = __atomic_load_n(b, __ATOMIC_RELAXED);
		/* A plain store, not a compare-and-swap (on every read with
		 * pread): a touch another thread marks in between may be
		 * lost, which costs that page one touch more, never a byte. */
		if ((v & ~TOUCHED) < PAGE_STATE_HITS_MAX)
			__atomic_store_n(b, (uint8_t)(v + 1), __ATOMIC_RELAXED);
	}
}

void
page_state_mark(struct page_state *s, size_t first, size_t last)
{
	size_t p;

	for (p = first; p <= last; p++) {
		uint8_t *b = page_at(s, p);

		if (b != NULL && !(__atomic_load_n(b, __ATOMIC_RELAXED) & TOUCHED))
			__atomic_fetch_or(b, (uint8_t)TOUCHED, __ATOMIC_RELAXED);
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

void
page_state_forget(struct page_state *s)
{
	size_t b, p;

	for (b = 0; b < s->nchunks; b++) {
		uint8_t *c = __atomic_load_n(&s->chunks[b], __ATOMIC_ACQUIRE);

		/* byte by byte, as the readers read them: no torn word, and a
		 * touch another thread marks meanwhile may stay (one touch
		 * the fewer, never a wrong byte) */
		if (c != NULL)
			for (p = 0; p < PAGE_STATE_CHUNK; p++)
				if (__atomic_load_n(&c[p], __ATOMIC_RELAXED) != 0)
					__atomic_store_n(&c[p], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&s->heat[b], 0, __ATOMIC_RELAXED);
	}
}
