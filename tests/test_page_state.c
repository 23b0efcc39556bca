/* SPDX-License-Identifier: MIT */
/*
 * What the direct tier's copy policy knows of a mapping's pages
 * (client/page_state.c): each page's pread reads, whether it was touched,
 * each block's reads; and the memory that costs, which must not grow with
 * the reads of a file read at random (a page of it is a page fault).
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "client/page_state.h"

#define GIB_PAGES ((size_t)1 << 18)	/* 1 GiB of 4 KiB pages */

static unsigned
hits_of(const struct page_state *s, size_t first, size_t last, bool *touched)
{
	unsigned h;

	page_state_ask(s, first, last, touched, &h);
	return h;
}

/* A small file: every page has a count of its own, exact. */
static void
test_counts_and_marks(void **state)
{
	struct page_state s;
	bool touched;
	int i;

	(void)state;
	assert_int_equal(page_state_init(&s, 100), 0);
	assert_int_equal(hits_of(&s, 0, 99, &touched), 0);
	assert_false(touched);
	for (i = 0; i < 3; i++)
		page_state_hit(&s, 7, 7);
	page_state_hit(&s, 8, 9);
	assert_int_equal(hits_of(&s, 7, 7, &touched), 3);
	assert_int_equal(hits_of(&s, 8, 8, &touched), 1);
	/* a range: the fewest of its pages */
	assert_int_equal(hits_of(&s, 7, 9, &touched), 1);
	assert_int_equal(hits_of(&s, 6, 9, &touched), 0);
	/* saturates */
	for (i = 0; i < 300; i++)
		page_state_hit(&s, 50, 50);
	assert_int_equal(hits_of(&s, 50, 50, &touched), PAGE_STATE_HITS_MAX);
	/* touched: the range only when every page is; then no count */
	page_state_mark(&s, 7, 8);
	assert_int_equal(hits_of(&s, 7, 8, &touched), 0);
	assert_true(touched);
	assert_int_equal(hits_of(&s, 7, 9, &touched), 1);
	assert_false(touched);
	/* a small file's counts are never halved */
	for (i = 0; i < 40000; i++)
		page_state_hit(&s, 60, 60);
	assert_int_equal(hits_of(&s, 7, 7, &touched), 0);
	assert_true(touched);
	assert_int_equal(hits_of(&s, 9, 9, &touched), 1);
	page_state_forget(&s);
	assert_int_equal(hits_of(&s, 7, 9, &touched), 0);
	assert_false(touched);
	assert_int_equal(hits_of(&s, 50, 50, &touched), 0);
	page_state_free(&s);
	/* the caller counts whole pages: a file's short last one counts too
	 * (2 pages and a bit: pages 0-2) */
	assert_int_equal(page_state_init(&s, 2), 0);
	assert_true(s.nhits >= 3);
	page_state_hit(&s, 0, 2);
	page_state_hit(&s, 2, 2);
	assert_int_equal(hits_of(&s, 2, 2, &touched), 2);
	page_state_mark(&s, 2, 2);
	assert_int_equal(hits_of(&s, 2, 2, &touched), 0);
	assert_true(touched);
	page_state_free(&s);
}

/* Marks are exact at any edge: within a word of 64 pages, across words,
 * across blocks, a whole span at once. */
static void
test_marks_exact(void **state)
{
	static const size_t ranges[][2] = { { 3, 3 }, { 60, 130 }, { 500, 530 }, { 1024, 1024 + 16 * 64 - 1 } };
	struct page_state s;
	bool touched;
	size_t r, p;

	(void)state;
	assert_int_equal(page_state_init(&s, 4 * PAGE_STATE_CHUNK), 0);
	for (r = 0; r < sizeof ranges / sizeof ranges[0]; r++)
		page_state_mark(&s, ranges[r][0], ranges[r][1]);
	for (p = 0; p < 4 * PAGE_STATE_CHUNK; p++) {
		bool want = false;

		for (r = 0; r < sizeof ranges / sizeof ranges[0]; r++)
			want = want || (p >= ranges[r][0] && p <= ranges[r][1]);
		(void)hits_of(&s, p, p, &touched);
		if (touched != want)
			fail_msg("page %zu: touched %d, want %d", p, touched, want);
	}
	(void)hits_of(&s, 60, 130, &touched);
	assert_true(touched);
	(void)hits_of(&s, 59, 130, &touched);
	assert_false(touched);
	page_state_free(&s);
}

/* A block's reads: populated once, at `after`, by exactly one caller. */
static void
test_block_heat(void **state)
{
	struct page_state s;
	int i;

	(void)state;
	assert_int_equal(page_state_init(&s, 4 * PAGE_STATE_CHUNK), 0);
	for (i = 0; i < 4; i++)
		assert_false(page_state_block_heat(&s, 1, 5));
	assert_true(page_state_block_heat(&s, 1, 5));
	assert_false(page_state_block_heat(&s, 1, 5));
	assert_false(page_state_block_heat(&s, 1, 1));
	assert_true(page_state_block_heat(&s, 2, 1));
	page_state_forget(&s);
	assert_true(page_state_block_heat(&s, 2, 1));
	/* a span's claim: the blocks no one populated or tried, once */
	assert_false(page_state_block_claim(&s, 2));
	assert_true(page_state_block_claim(&s, 3));
	assert_false(page_state_block_claim(&s, 3));
	assert_false(page_state_block_heat(&s, 3, 1));
	page_state_free(&s);
}

/*
 * Random reads of a big file make no memory per block: 1 GiB read a page
 * in every block (its counts hashed into one table), and no block's marks
 * are made until a page of it is touched.
 */
static void
test_no_memory_per_block(void **state)
{
	struct page_state s;
	bool touched;
	size_t b, made = 0;

	(void)state;
	assert_int_equal(page_state_init(&s, GIB_PAGES), 0);
	for (b = 0; b < GIB_PAGES / PAGE_STATE_CHUNK; b++)
		page_state_hit(&s, b * PAGE_STATE_CHUNK + 17, b * PAGE_STATE_CHUNK + 17);
	for (b = 0; b < s.nchunks; b++)
		made += s.chunks[b] != NULL;
	assert_int_equal(made, 0);
	assert_null(s.arenas);
	assert_int_equal(s.nhits, PAGE_STATE_HITS_TABLE);
	/* the counts are there, a page's at least its own reads */
	assert_true(hits_of(&s, 3 * PAGE_STATE_CHUNK + 17, 3 * PAGE_STATE_CHUNK + 17, &touched) >= 1);
	/* one page touched: its block's marks, and only those */
	page_state_mark(&s, 5 * PAGE_STATE_CHUNK + 3, 5 * PAGE_STATE_CHUNK + 3);
	for (b = 0, made = 0; b < s.nchunks; b++)
		made += s.chunks[b] != NULL;
	assert_int_equal(made, 1);
	assert_non_null(s.chunks[5]);
	assert_int_equal(hits_of(&s, 5 * PAGE_STATE_CHUNK + 3, 5 * PAGE_STATE_CHUNK + 3, &touched), 0);
	assert_true(touched);
	/* its neighbour is not touched (its count is what its counter
	 * holds: a page in some 8 shares one with a page read above) */
	assert_true(hits_of(&s, 5 * PAGE_STATE_CHUNK + 4, 5 * PAGE_STATE_CHUNK + 4, &touched) <= 2);
	assert_false(touched);
	page_state_free(&s);
}

/*
 * A shared table: a hot page's count grows, pages that share its counter
 * only add to it (touched early, never late), and the table is halved
 * each time it has counted four times its size, so that what collisions
 * add does not pile up over a long life.
 */
static void
test_shared_counts_fade(void **state)
{
	struct page_state s;
	bool touched;
	size_t hot = 123457, p, n;
	unsigned before, after;
	int i;

	(void)state;
	assert_int_equal(page_state_init(&s, GIB_PAGES), 0);
	for (i = 0; i < 100; i++)
		page_state_hit(&s, hot, hot);
	before = hits_of(&s, hot, hot, &touched);
	assert_int_equal(before, 100);
	/* other pages, once each, up to the halving */
	for (p = 0, n = 100; n < 4 * PAGE_STATE_HITS_TABLE - 1; p += 7) {
		if (p == hot)
			continue;
		page_state_hit(&s, p, p);
		n++;
	}
	after = hits_of(&s, hot, hot, &touched);
	assert_true(after >= before);	/* not yet */
	page_state_hit(&s, 1, 1);	/* the 16,384th count */
	after = hits_of(&s, hot, hot, &touched);
	assert_true(after >= before / 2 && after < before);
	/* no counter of pages read once each stays high: of one page in
	 * 61, the only ones above 8 are those that share the hot page's
	 * counter (one in 4,096 of them: a page or two here) */
	for (p = 0, n = 0; p < GIB_PAGES; p += 61)
		if (p != hot && hits_of(&s, p, p, &touched) > 8)
			n++;
	assert_true(n <= 3);
	page_state_free(&s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts_and_marks),
		cmocka_unit_test(test_marks_exact),
		cmocka_unit_test(test_block_heat),
		cmocka_unit_test(test_no_memory_per_block),
		cmocka_unit_test(test_shared_counts_fade),
	};

	return cmocka_run_group_tests_name("page_state", tests, NULL, NULL);
}
