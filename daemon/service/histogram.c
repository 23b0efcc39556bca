/* SPDX-License-Identifier: MIT */
/*
 * histogram.c - log-scaled latency histograms (see histogram.h).
 */
#include "config.h"

#include <string.h>

#include "daemon/service/histogram.h"

/*
 * Bucket of v: with shift = max(0, floor(log2 v) - 4), v >> shift lies in
 * [16, 32) once v >= 16, so (shift << 4) + (v >> shift) numbers the
 * buckets densely: 0..31 for v < 32 (one value each), then 16 per power
 * of two.  The largest index, for HISTOGRAM_MAX_NS, is
 * HISTOGRAM_BUCKETS - 1.
 */
static unsigned
histogram_index(uint64_t v)
{
	unsigned shift;

	if (v < (1u << (HISTOGRAM_SUB_BITS + 1)))
		return (unsigned)v;
	shift = 63u - (unsigned)__builtin_clzll(v) - HISTOGRAM_SUB_BITS;
	return (shift << HISTOGRAM_SUB_BITS) + (unsigned)(v >> shift);
}

/* The largest value that lands in bucket i. */
static uint64_t
histogram_upper(unsigned i)
{
	unsigned shift;
	uint64_t lower;

	if (i < (1u << (HISTOGRAM_SUB_BITS + 1)))
		return i;
	shift = (i >> HISTOGRAM_SUB_BITS) - 1;
	lower = (uint64_t)((i & ((1u << HISTOGRAM_SUB_BITS) - 1)) + (1u << HISTOGRAM_SUB_BITS))
		<< shift;
	return lower + ((UINT64_C(1) << shift) - 1);
}

void
histogram_record(struct histogram *h, uint64_t ns)
{
	if (ns > HISTOGRAM_MAX_NS)
		ns = HISTOGRAM_MAX_NS;
	h->buckets[histogram_index(ns)]++;
	h->count++;
	h->sum += ns;
	if (ns > h->max)
		h->max = ns;
}

uint64_t
histogram_percentile(const struct histogram *h, double p)
{
	uint64_t rank, seen = 0;
	double want;
	unsigned i;

	if (h->count == 0)
		return 0;
	if (!(p > 0.0))		/* also NaN */
		p = 0.0;
	if (p > 1.0)
		p = 1.0;
	/* ceil(p * count), but a product such as 0.9 * 100000 that comes out
	 * a hair above an integer must not round up a whole rank. */
	want = p * (double)h->count - 1e-9;
	rank = want > 0.0 ? (uint64_t)want : 0;
	if (want > 0.0 && (double)rank < want)
		rank++;
	if (rank == 0)
		rank = 1;
	if (rank > h->count)
		rank = h->count;
	for (i = 0; i < HISTOGRAM_BUCKETS; i++) {
		seen += h->buckets[i];
		if (seen >= rank) {
			uint64_t upper = histogram_upper(i);

			return upper < h->max ? upper : h->max;
		}
	}
	return h->max;	/* not reached while count is the buckets' sum */
}

uint64_t
histogram_count(const struct histogram *h)
{
	return h->count;
}

uint64_t
histogram_sum(const struct histogram *h)
{
	return h->sum;
}

void
histogram_reset(struct histogram *h)
{
	memset(h, 0, sizeof *h);
}
