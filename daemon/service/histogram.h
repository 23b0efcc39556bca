/* SPDX-License-Identifier: MIT */
/*
 * histogram.h - latency histograms for the daemon's event loop.
 *
 * A fixed-size, log-scaled histogram of durations in nanoseconds, in the
 * manner of HdrHistogram: each power-of-two range [2^k, 2^(k+1)) is split
 * into 16 linear sub-buckets of width 2^(k-4), and values below 32 have a
 * bucket each.  Recording is a few shifts and an increment, with no
 * allocation and no lock: a histogram belongs to one thread (the event
 * loop).  It knows nothing of requests or of the stats keys; callers name
 * what they time.
 *
 * Error bound: histogram_percentile returns the upper end of the bucket
 * holding the value v of that rank, never above the largest value
 * recorded, so the result r satisfies v <= r <= v + v / 16: at most
 * 6.25% high, never low (exact below 32 ns).  Values up to
 * HISTOGRAM_MAX_NS (2^40 - 1 ns, about 18 minutes) keep that bound;
 * larger ones are counted as HISTOGRAM_MAX_NS.
 */
#ifndef HOTMAP_HISTOGRAM_H
#define HOTMAP_HISTOGRAM_H

#include <stdint.h>

#define HISTOGRAM_SUB_BITS	4	/* 16 sub-buckets per power of two */
#define HISTOGRAM_TOP_BIT	40	/* values below 2^40 ns are kept apart */
#define HISTOGRAM_MAX_NS	((UINT64_C(1) << HISTOGRAM_TOP_BIT) - 1)
/* 16 buckets for 0..15, then 16 for each 2^k with 4 <= k < 40: 592 */
#define HISTOGRAM_BUCKETS \
	((1u << HISTOGRAM_SUB_BITS) * (HISTOGRAM_TOP_BIT - HISTOGRAM_SUB_BITS + 1))

struct histogram {
	uint64_t count;		/* values recorded */
	uint64_t max;		/* the largest, after clamping; 0 when empty */
	uint64_t sum;		/* of the values after clamping: a mean, exact */
	uint64_t buckets[HISTOGRAM_BUCKETS];
};

/* Counts one duration of ns nanoseconds. */
void histogram_record(struct histogram *h, uint64_t ns);
/* The value at rank ceil(p * count) (p = 0: the smallest), rounded up to
 * its bucket's upper end as described above; p is clamped into [0, 1].
 * 0 when the histogram is empty.  p = 1 gives the largest value recorded,
 * exact (up to HISTOGRAM_MAX_NS): it is capped at max. */
uint64_t histogram_percentile(const struct histogram *h, double p);
uint64_t histogram_count(const struct histogram *h);
/* The sum of the values recorded (each clamped to HISTOGRAM_MAX_NS), in
 * nanoseconds: wraps after 2^64 ns, some 584 years of waiting, as a
 * counter may. */
uint64_t histogram_sum(const struct histogram *h);
/* Forgets every value.  A zeroed struct histogram is empty too. */
void histogram_reset(struct histogram *h);

#endif
