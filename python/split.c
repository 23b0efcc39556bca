/* SPDX-License-Identifier: MIT */
/*
 * split.c - File.pread and File.readinto's read: hm_pread, of a long
 * range in slices read by several threads at once.
 */
#include "hotmap_priv.h"

#include <pthread.h>
#include <sched.h>

/* a read this long is split across threads */
#define SPLIT_ABOVE	(64u << 20)
#define SPLIT_MAX	4

/*
 * hm_pread of a long range in up to SPLIT_MAX threads, one slice each
 * (called with the GIL released).  A directly read file is a memcpy from
 * the mapping that takes no lock, and the copy and the destination's page
 * faults are most of a large load: slices go in parallel.  Others are
 * serialised by the client and cost no more than one call.  The result is
 * hm_pread's: short only at end of file; -1 and e on the first error.
 */
struct slice {
	hm_file *f;
	char *buf;
	size_t len;
	uint64_t off;
	ssize_t n;
	struct hmpy_err e;
};

static void *
slice_run(void *arg)
{
	struct slice *s = arg;

	s->n = hm_pread(s->f, s->buf, s->len, s->off);
	if (s->n < 0)
		hmpy_save_err(&s->e);
	return NULL;
}

ssize_t
hmpy_split_pread(hm_file *f, void *buf, size_t len, uint64_t off, struct hmpy_err *e)
{
	struct slice sl[SPLIT_MAX];
	pthread_t th[SPLIT_MAX];
	int started[SPLIT_MAX] = { 0 };
	cpu_set_t cpus;
	int nt = 1, k;
	size_t per, at = 0;
	ssize_t total = 0;

	if (len >= SPLIT_ABOVE && sched_getaffinity(0, sizeof(cpus), &cpus) == 0)
		nt = CPU_COUNT(&cpus);
	if (nt > SPLIT_MAX)
		nt = SPLIT_MAX;
	if (nt < 2) {
		ssize_t n = hm_pread(f, buf, len, off);

		if (n < 0)
			hmpy_save_err(e);
		return n;
	}
	per = (len / (size_t)nt + 4095) & ~(size_t)4095;
	for (k = 0; k < nt; k++) {
		size_t l = k == nt - 1 ? len - at : per;

		sl[k] = (struct slice){ .f = f, .buf = (char *)buf + at, .len = l, .off = off + at };
		at += l;
	}
	for (k = 1; k < nt; k++)
		started[k] = pthread_create(&th[k], NULL, slice_run, &sl[k]) == 0;
	slice_run(&sl[0]);
	for (k = 1; k < nt; k++) {
		if (started[k])
			pthread_join(th[k], NULL);
		else
			slice_run(&sl[k]);
	}
	for (k = 0; k < nt; k++) {
		if (sl[k].n < 0) {
			*e = sl[k].e;
			return -1;
		}
		total += sl[k].n;
		if ((size_t)sl[k].n < sl[k].len)
			break;		/* end of file */
	}
	return total;
}
