/* SPDX-License-Identifier: MIT */
/*
 * readers.c - threads reading one file at random ranges, each read checked
 * against pread(2), for test_fallback.c and test_pipeline.c.  readers.h
 * says what they do and what they must not do.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/harness.h"
#include "tests/readers.h"

#define KiB (1024u)

/* Reads random ranges until told to stop, each checked against fd: by
 * hm_pread, hm_read_batch or a view, as the thread's number says. */
void *
reader_main(void *arg)
{
	struct reader *r = arg;
	uint64_t seed = 0x9e3779b97f4a7c15u * (r->id + 1);
	uint8_t *buf = malloc(256 * KiB + HARNESS_SLACK), *ref = malloc(256 * KiB + HARNESS_SLACK);

	while (!atomic_load(r->stop) && !r->failed) {
		uint64_t off = harness_rand(&seed) % (r->size + 100);
		size_t len = (size_t)(harness_rand(&seed) % (256 * KiB));
		ssize_t want = pread(r->fd, ref, len, (off_t)off);

		if (r->id % r->ways == 0) {
			if (harness_compare_read(r->f, r->fd, off, len, buf, ref, NULL, r->why,
						 sizeof r->why) < 0)
				r->failed = 1;
		} else if (r->id % r->ways == 1) {
			struct hm_io io = { .file = r->f, .offset = off, .len = len, .buf = buf };

			if (hm_read_batch(r->c, &io, 1) < 0 || io.result != want ||
			    memcmp(buf, ref, (size_t)want) != 0) {
				snprintf(r->why, sizeof r->why, "batch at %llu: %zd, want %zd (%s)",
					 (unsigned long long)off, io.result, want, strerror(errno));
				r->failed = 1;
			}
		} else {
			struct hm_view v;

			if (hm_view_range(r->f, off, len, &v) < 0 || (ssize_t)v.len != want ||
			    memcmp(v.data, ref, (size_t)want) != 0) {
				snprintf(r->why, sizeof r->why, "view at %llu: %zu, want %zd (%s)",
					 (unsigned long long)off, v.len, want, strerror(errno));
				r->failed = 1;
			}
			hm_view_release(&v);
		}
		atomic_fetch_add(&r->reads, 1);
	}
	free(buf);
	free(ref);
	return NULL;
}

void
readers_stop(struct reader *r, unsigned n, atomic_bool *stop)
{
	unsigned i;

	atomic_store(stop, true);
	for (i = 0; i < n; i++)
		pthread_join(r[i].t, NULL);
	for (i = 0; i < n; i++)
		if (r[i].failed)
			fail_msg("reader %u: %s", i, r[i].why);
}
