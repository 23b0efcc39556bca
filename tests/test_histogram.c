/* SPDX-License-Identifier: MIT */
/*
 * test_histogram.c - daemon/service/histogram.c: percentiles within the bound its
 * header documents (never low, at most 1/16 high), clamping, reset.
 */
#include "config.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/service/histogram.h"

/* The documented bound: the true value v, reported as r. */
static void
assert_within_bound(uint64_t v, uint64_t r)
{
	if (r < v || r > v + v / 16)
		fail_msg("value %llu reported as %llu: outside [v, v + v/16]",
			 (unsigned long long)v, (unsigned long long)r);
}

static void
test_empty(void **state)
{
	static struct histogram h;

	(void)state;
	assert_int_equal(histogram_count(&h), 0);
	assert_int_equal(histogram_sum(&h), 0);
	assert_int_equal(histogram_percentile(&h, 1.0), 0);
	assert_int_equal(histogram_percentile(&h, 0.0), 0);
	assert_int_equal(histogram_percentile(&h, 0.5), 0);
	assert_int_equal(histogram_percentile(&h, 0.999), 0);
	assert_int_equal(histogram_percentile(&h, 1.0), 0);
}

static void
test_one_value(void **state)
{
	static struct histogram h;
	static const double ps[] = { 0.0, 0.5, 0.9, 0.99, 0.999, 1.0 };
	size_t i;

	(void)state;
	histogram_record(&h, 123456);
	assert_int_equal(histogram_count(&h), 1);
	assert_int_equal(histogram_percentile(&h, 1.0), 123456);
	/* every rank is that value, and the bucket's upper end is capped by
	 * the largest value seen: exact */
	for (i = 0; i < sizeof ps / sizeof ps[0]; i++)
		assert_int_equal(histogram_percentile(&h, ps[i]), 123456);
}

static void
test_small_values_exact(void **state)
{
	static struct histogram h;
	uint64_t v;

	(void)state;
	/* below 32 ns every value has its own bucket */
	for (v = 0; v < 32; v++) {
		histogram_reset(&h);
		histogram_record(&h, v);
		histogram_record(&h, 1000000);
		assert_int_equal(histogram_percentile(&h, 0.5), v);
	}
}

static void
test_uniform_percentiles(void **state)
{
	static struct histogram h;
	static const unsigned per_mille_x10[] = { 5000, 9000, 9900, 9990 };
	const uint64_t n = 100000;
	uint64_t v;
	size_t i;

	(void)state;
	/* recorded out of order: the result may not depend on it */
	for (v = 0; v < n; v++)
		histogram_record(&h, (v * 7919) % n + 1);
	assert_int_equal(histogram_count(&h), n);
	assert_int_equal(histogram_percentile(&h, 1.0), n);
	for (i = 0; i < sizeof per_mille_x10 / sizeof per_mille_x10[0]; i++) {
		/* the value of rank ceil(p * n) among 1..n is that rank */
		uint64_t want = (n * per_mille_x10[i] + 9999) / 10000;
		uint64_t got = histogram_percentile(&h, per_mille_x10[i] / 10000.0);

		assert_within_bound(want, got);
	}
	assert_int_equal(histogram_percentile(&h, 0.0), 1);
	assert_int_equal(histogram_percentile(&h, 1.0), n);
}

/* Every bucket boundary and a spread of values from 1 ns to 2^40 ns,
 * each alone below a larger one so that its own bucket's upper end is
 * what percentile 0 reports. */
static void
test_bound_over_the_range(void **state)
{
	static struct histogram h;
	uint64_t x = 88172645463325252ull, v;
	unsigned k, i;

	(void)state;
	for (k = 0; k < HISTOGRAM_TOP_BIT; k++) {
		uint64_t p2 = UINT64_C(1) << k;
		const uint64_t vs[] = { p2 - 1, p2, p2 + 1, p2 + p2 / 2, 2 * p2 - 1 };

		for (i = 0; i < sizeof vs / sizeof vs[0]; i++) {
			histogram_reset(&h);
			histogram_record(&h, vs[i]);
			histogram_record(&h, HISTOGRAM_MAX_NS);
			assert_within_bound(vs[i], histogram_percentile(&h, 0.0));
		}
	}
	for (i = 0; i < 100000; i++) {
		/* xorshift64: random magnitudes as well as random digits */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		v = (x >> 24) >> (x % HISTOGRAM_TOP_BIT);
		histogram_reset(&h);
		histogram_record(&h, v);
		histogram_record(&h, HISTOGRAM_MAX_NS);
		assert_within_bound(v, histogram_percentile(&h, 0.0));
	}
}

static void
test_huge_values_clamped(void **state)
{
	static struct histogram h;

	(void)state;
	histogram_record(&h, 1000);
	histogram_record(&h, HISTOGRAM_MAX_NS + 1);
	histogram_record(&h, UINT64_C(1) << 50);
	histogram_record(&h, UINT64_MAX);
	assert_int_equal(histogram_count(&h), 4);
	/* the sum adds the values as counted: clamped */
	assert_int_equal(histogram_sum(&h), 1000 + 3 * HISTOGRAM_MAX_NS);
	assert_int_equal(histogram_percentile(&h, 1.0), HISTOGRAM_MAX_NS);
	assert_int_equal(histogram_percentile(&h, 1.0), HISTOGRAM_MAX_NS);
	assert_int_equal(histogram_percentile(&h, 0.5), HISTOGRAM_MAX_NS);
	assert_within_bound(1000, histogram_percentile(&h, 0.0));
	/* the largest value that keeps the bound is still exact at the top */
	histogram_reset(&h);
	histogram_record(&h, HISTOGRAM_MAX_NS);
	assert_int_equal(histogram_percentile(&h, 0.5), HISTOGRAM_MAX_NS);
}

static void
test_reset(void **state)
{
	static struct histogram h;

	(void)state;
	histogram_record(&h, 5);
	histogram_record(&h, 500000);
	assert_int_equal(histogram_sum(&h), 500005);
	histogram_reset(&h);
	assert_int_equal(histogram_count(&h), 0);
	assert_int_equal(histogram_sum(&h), 0);
	assert_int_equal(histogram_percentile(&h, 1.0), 0);
	assert_int_equal(histogram_percentile(&h, 0.5), 0);
	assert_int_equal(histogram_percentile(&h, 1.0), 0);
	/* and it counts afresh */
	histogram_record(&h, 77);
	assert_int_equal(histogram_count(&h), 1);
	assert_int_equal(histogram_sum(&h), 77);
	assert_int_equal(histogram_percentile(&h, 0.99), 77);
}

static void
test_p_edges(void **state)
{
	static struct histogram h;

	(void)state;
	histogram_record(&h, 5000);
	histogram_record(&h, 10);
	histogram_record(&h, 1000);
	histogram_record(&h, 20);
	/* p = 0 is the smallest, p = 1 the largest, exactly */
	assert_int_equal(histogram_percentile(&h, 0.0), 10);
	assert_int_equal(histogram_percentile(&h, 1.0), 5000);
	/* ranks: ceil(0.25 * 4) = 1, ceil(0.26 * 4) = 2, ceil(0.5 * 4) = 2 */
	assert_int_equal(histogram_percentile(&h, 0.25), 10);
	assert_int_equal(histogram_percentile(&h, 0.26), 20);
	assert_int_equal(histogram_percentile(&h, 0.5), 20);
	assert_within_bound(1000, histogram_percentile(&h, 0.75));
	/* out of [0, 1] is clamped into it; NaN counts as 0 */
	assert_int_equal(histogram_percentile(&h, -1.0), 10);
	assert_int_equal(histogram_percentile(&h, 2.0), 5000);
	assert_int_equal(histogram_percentile(&h, NAN), 10);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_one_value),
		cmocka_unit_test(test_small_values_exact),
		cmocka_unit_test(test_uniform_percentiles),
		cmocka_unit_test(test_bound_over_the_range),
		cmocka_unit_test(test_huge_values_clamped),
		cmocka_unit_test(test_reset),
		cmocka_unit_test(test_p_edges),
	};

	return cmocka_run_group_tests_name("histogram", tests, NULL, NULL);
}
