/* SPDX-License-Identifier: MIT */
/*
 * readers.h - threads that read one hm_file at random ranges until told to
 * stop, each read checked byte for byte against pread(2) on a descriptor
 * of the test's own: for the tests that change what is under the reads
 * while they run (test_fallback.c: the daemon killed; test_pipeline.c: the
 * daemon's answers arriving).
 *
 * What it must not do: assert in a reader thread (cmocka's assertions
 * belong to the test's own thread), or decide anything by timing.  A
 * reader records its first wrong read in why and stops; readers_stop,
 * in the test's thread, fails the test with it.
 */
#ifndef HOTMAP_TESTS_READERS_H
#define HOTMAP_TESTS_READERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "client/hotmap.h"

struct reader {
	pthread_t t;
	hm_client *c;
	hm_file *f;
	int fd;
	uint64_t size;		/* f's size: offsets go up to 100 bytes past it */
	unsigned id;		/* the seed of its ranges, and its way (below) */
	unsigned ways;		/* id % ways: 0 hm_pread, 1 hm_read_batch, 2 a view */
	atomic_uint reads;
	atomic_bool *stop;
	char why[256];
	int failed;
};

/* The thread's function: pthread_create(&r->t, NULL, reader_main, r). */
void *reader_main(void *arg);
/* Sets *stop, joins the n readers, and fails the test with the first
 * reader's wrong read, if any. */
void readers_stop(struct reader *r, unsigned n, atomic_bool *stop);

#endif
