/* SPDX-License-Identifier: MIT */
/*
 * copy_platform_unix.c - file_platform.h's reading through on Linux
 * (several preads in flight, into nothing or into memory) and the memory
 * a copy of a network file lives in (a sealed memfd: file_copy.c).
 *
 * What it must not do: touch a byte of the file through a mapping (a
 * file cut short would raise SIGBUS); leave a copy writable once sealed.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1	/* memfd_create, F_ADD_SEALS; config.h defines it under autotools */
#endif

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/storage/file_platform.h"

/* --- reading through, several at once ---------------------------------- */

struct read_through {
	int fd;
	uint64_t offset, end;
	uint64_t next;		/* atomic: the next chunk's index */
	uint8_t *dst;		/* NULL: into nothing; else byte offset lands
				 * at dst + (offset - rt->offset) */
	int failed;		/* atomic: a chunk came short (dst only) */
};

/* Whether [pos, pos + n) of fd (pos a multiple of the page size) is all
 * in the page cache: a mapping made for the question, never touched
 * (mincore reads no byte).  false when it cannot be told. */
static bool range_resident(int fd, uint64_t pos, uint64_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), i, k;
	unsigned char vec[256];
	bool all = true;
	uint64_t done;
	void *m;

	if (pos % page != 0 || n == 0 || n > SIZE_MAX)
		return false;
	m = mmap(NULL, (size_t)n, PROT_READ, MAP_SHARED, fd, (off_t)pos);
	if (m == MAP_FAILED)
		return false;
	for (done = 0; all && done < n; done += (uint64_t)k * page) {
		size_t len = n - done < sizeof vec * page ? (size_t)(n - done) : sizeof vec * page;

		k = (len + page - 1) / page;
		if (mincore((char *)m + done, len, vec) < 0)
			all = false;
		for (i = 0; all && i < k; i++)
			all = (vec[i] & 1) != 0;
	}
	munmap(m, (size_t)n);
	return all;
}

static void *read_through_run(void *arg)
{
	struct read_through *rt = arg;
	char *buf = rt->dst == NULL ? malloc(FPLAT_READ_CHUNK) : NULL;

	if (rt->dst == NULL && buf == NULL)
		return NULL;
	for (;;) {
		uint64_t k = __atomic_fetch_add(&rt->next, 1, __ATOMIC_RELAXED);
		uint64_t pos = rt->offset + k * FPLAT_READ_CHUNK, done = 0, n;

		if (pos >= rt->end)
			break;
		n = rt->end - pos < FPLAT_READ_CHUNK ? rt->end - pos : FPLAT_READ_CHUNK;
		/* a hot file is warm already: a look costs less than a read
		 * (but a copy needs the bytes) */
		if (rt->dst == NULL && range_resident(rt->fd, pos, n))
			continue;
		if (__atomic_load_n(&rt->failed, __ATOMIC_RELAXED))
			break;
		while (done < n) {
			uint8_t *to = rt->dst != NULL ? rt->dst + (pos - rt->offset) : (uint8_t *)buf;
			ssize_t got = pread(rt->fd, to + done, (size_t)(n - done),
					    (off_t)(pos + done));

			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0)
				break;
			done += (uint64_t)got;
		}
		if (done < n) {
			/* an error or the end: a hint, no more; a copy failed */
			__atomic_store_n(&rt->failed, 1, __ATOMIC_RELAXED);
			break;
		}
	}
	free(buf);
	return NULL;
}

static int read_through(hm_fd fd, uint64_t offset, uint64_t len, void *dst)
{
	struct read_through rt = { .fd = fd, .offset = offset, .end = offset + len, .next = 0,
				   .dst = dst };
	pthread_t t[FPLAT_READ_THREADS];
	unsigned n = 0, i, want;

	/* all in memory (a hot file): one look, no thread, no read */
	if (dst == NULL && range_resident(fd, offset, len))
		return 0;
	want = (unsigned)((len + FPLAT_READ_CHUNK - 1) / FPLAT_READ_CHUNK);
	if (want > FPLAT_READ_THREADS)
		want = FPLAT_READ_THREADS;
	/* the caller's thread is one of the readers */
	for (i = 1; i < want; i++)
		if (pthread_create(&t[n], NULL, read_through_run, &rt) == 0)
			n++;
	(void)read_through_run(&rt);
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return dst != NULL && rt.failed ? -EIO : 0;
}

int fplat_read_through(hm_fd fd, uint64_t offset, uint64_t len)
{
	return read_through(fd, offset, len, NULL);
}

int fplat_read_into(hm_fd fd, uint64_t offset, uint64_t len, void *dst)
{
	if (len == 0)
		return 0;
	return read_through(fd, offset, len, dst);
}

/* --- a copy's memory: a memfd, sealed once filled ---------------------- */

int fplat_copy_new(uint64_t size, hm_fd *fd, void **map)
{
	int m;
	void *p;

	if (size == 0 || size > SIZE_MAX || size > (uint64_t)INT64_MAX)
		return -EINVAL;
	m = memfd_create("hotmap-copy", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (m < 0)
		return -errno;
	if (ftruncate(m, (off_t)size) < 0) {
		int e = errno;

		close(m);
		return -e;
	}
	p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0);
	if (p == MAP_FAILED) {
		int e = errno;

		close(m);
		return -e;
	}
	*fd = m;
	*map = p;
	return 0;
}

/* F_SEAL_WRITE fails while a writable mapping exists: the daemon's goes
 * first.  After this, nobody can change, shrink or grow the copy, and so
 * a client's read-only mapping of it can never fault. */
int fplat_copy_seal(hm_fd fd, void *map, uint64_t size)
{
	if (map != NULL)
		munmap(map, (size_t)size);
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
		return -errno;
	return 0;
}

void fplat_copy_free(hm_fd fd, void *map, uint64_t size)
{
	if (map != NULL)
		munmap(map, (size_t)size);
	if (fd >= 0)
		close(fd);	/* a memfd: its close waits for nothing */
}

/* A read-only open file description of its own (through /proc), so
 * that a client holds no descriptor that could even try to write it; a
 * dup where /proc is not mounted (the seals refuse writes either way). */
int fplat_copy_dup(hm_fd fd)
{
	char path[64];
	int d;

	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	d = open(path, O_RDONLY | O_CLOEXEC);
	if (d < 0)
		d = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	return d < 0 ? -errno : d;
}

