/* SPDX-License-Identifier: MIT */
/*
 * pagecost.c - what reading a hot file through a mapping costs on this
 * machine, by the size of the page cache's folios, side by side with
 * pread(2) in one run (docs/direct-reads.md, "Huge folios").
 *
 * It writes a file in 1 MiB calls (the page cache then holds it in folios
 * of 1 MiB at most), and measures in this process, with a fresh mapping:
 * populating it whole (MADV_POPULATE_READ), random 4 KiB copies out of it
 * (a first and a second set), the same after every page was touched and
 * after the process slept, and pread of the same kind of offsets.  Then it reads the
 * file back into huge folios as hotmapd's huge-folios does (a chunk
 * dropped with POSIX_FADV_DONTNEED and read back through a MADV_HUGEPAGE
 * mapping) and measures again.  Linux only.
 *
 *   bench/pagecost [--dir DIR] [--size MiB] [--reads N] [--sleep-ms MS] [--settle-ms MS]
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "proto/pagemap.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#define MiB (1024u * 1024u)
#define PAGE 4096u
#define CHUNK (2u * MiB)

static double
now_us(void)
{
	return now_s() * 1e6;
}

static volatile uint8_t sink;

/* Mean microseconds of n random 4 KiB copies out of map (or preads of fd
 * when map is NULL), at offsets from seed. */
static double
reads(const uint8_t *map, int fd, size_t size, unsigned n, uint64_t seed)
{
	static uint8_t buf[PAGE];
	uint64_t s = seed | 1;
	double t = now_us();
	unsigned i;

	for (i = 0; i < n; i++) {
		size_t off = (size_t)(rng_next(&s) % (size / PAGE)) * PAGE;

		if (map != NULL)
			memcpy(buf, map + off, PAGE);
		else if (pread(fd, buf, PAGE, (off_t)off) != PAGE)
			return -1;
		sink = buf[i % PAGE];
	}
	return (now_us() - t) / n;
}

/* Share of the file a populated fresh mapping maps with huge entries (%),
 * or -1 when the kernel cannot tell. */
static int
huge_pct(const uint8_t *map, size_t size)
{
	int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC), r;
	size_t off, huge = 0;

	if (pm < 0)
		return -1;
	for (off = 0; off + CHUNK <= size; off += CHUNK) {
		r = pagemap_all_huge(pm, map + off, CHUNK);
		if (r < 0) {
			close(pm);
			return -1;
		}
		huge += (size_t)r;
	}
	close(pm);
	return (int)(huge * CHUNK * 100 / size);
}

static void
measure(const char *label, int fd, size_t size, unsigned n, unsigned sleep_ms)
{
	uint8_t *map;
	double t, pop, first, second, touched, slept, pr;
	size_t off;
	int pct;

	/* populate a fresh mapping; and which share of it maps huge */
	map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	t = now_us();
	(void)madvise(map, size, MADV_POPULATE_READ);
	pop = now_us() - t;
	pct = huge_pct(map, size);
	/* random copies out of it: populated, but on a virtual machine with
	 * shadow page tables a page's first access may still trap */
	first = reads(map, -1, size, n, 1);
	second = reads(map, -1, size, n, 2);
	/* every page touched, then the copies; then again after a sleep */
	for (off = 0; off < size; off += PAGE)
		sink = map[off];
	touched = reads(map, -1, size, n, 3);
	usleep(sleep_ms * 1000u);
	slept = reads(map, -1, size, n, 4);
	munmap(map, size);
	pr = reads(NULL, fd, size, n, 5);
	printf("%-22s %5d%% %10.1f %9.2f %9.2f %9.2f %9.2f %9.2f\n", label, pct, pop / 1000, first,
	       second, touched, slept, pr);
}

/* Drops each 2 MiB chunk and reads it back through a MADV_HUGEPAGE
 * mapping, as hotmapd's huge-folios does (daemon/storage/file_platform_unix.c). */
static double
fold(int fd, size_t size)
{
	double t = now_us();
	size_t off;

	for (off = 0; off + CHUNK <= size; off += CHUNK) {
		uint8_t *area = mmap(NULL, 2 * CHUNK, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint8_t *at;

		if (area == MAP_FAILED)
			break;
		at = (uint8_t *)(((uintptr_t)area + CHUNK - 1) & ~((uintptr_t)CHUNK - 1));
		(void)posix_fadvise(fd, (off_t)off, CHUNK, POSIX_FADV_DONTNEED);
		if (mmap(at, CHUNK, PROT_READ, MAP_SHARED | MAP_FIXED, fd, (off_t)off) != MAP_FAILED) {
			(void)madvise(at, CHUNK, MADV_HUGEPAGE);
			(void)madvise(at, CHUNK, MADV_POPULATE_READ);
		}
		munmap(area, 2 * CHUNK);
	}
	return (now_us() - t) / 1e3;
}

/* One pass of pread over the file (file_warm): milliseconds. */
static double
pass(const char *path)
{
	double t = now_us();

	(void)file_warm(path);
	return (now_us() - t) / 1e3;
}

int
main(int argc, char **argv)
{
	const char *dir = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/var/tmp";
	unsigned mib = 1024, n = 10000, sleep_ms = 300, settle_ms = 3000, i;
	char path[4096];
	struct utsname u;
	size_t size;
	int fd, rc;

	for (i = 1; i < (unsigned)argc; i++) {
		if (strcmp(argv[i], "--dir") == 0 && i + 1 < (unsigned)argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--size") == 0 && i + 1 < (unsigned)argc)
			mib = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--reads") == 0 && i + 1 < (unsigned)argc)
			n = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--sleep-ms") == 0 && i + 1 < (unsigned)argc)
			sleep_ms = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--settle-ms") == 0 && i + 1 < (unsigned)argc)
			settle_ms = (unsigned)strtoul(argv[++i], NULL, 10);
		else {
			fprintf(stderr, "usage: %s [--dir DIR] [--size MiB] [--reads N] [--sleep-ms MS] "
				"[--settle-ms MS]\n",
				argv[0]);
			return 2;
		}
	}
	if (mib < 4 || mib % 2 != 0 || n == 0) {
		fprintf(stderr, "pagecost: --size must be an even number of MiB, 4 or more\n");
		return 2;
	}
	size = (size_t)mib * MiB;
	snprintf(path, sizeof path, "%s/pagecost.XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0) {
		fprintf(stderr, "pagecost: %s: %s\n", path, strerror(errno));
		return 1;
	}
	close(fd);
	rc = write_file(path, size, 20261202);	/* 1 MiB calls */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (rc < 0 || fd < 0) {
		fprintf(stderr, "pagecost: %s: %s\n", path, strerror(rc < 0 ? -rc : errno));
		unlink(path);
		return 1;
	}
	(void)fdatasync(fd);
	uname(&u);
	printf("pagecost: %s %s; a %u MiB file in %s written in 1 MiB calls; %u random 4 KiB reads "
	       "a set; sleep %u ms\n", u.sysname, u.release, mib, dir, n, sleep_ms);
	printf("%-22s %6s %10s %9s %9s %9s %9s %9s\n", "page cache", "huge", "populate", "first",
	       "second", "touched", "slept", "pread");
	printf("%-22s %6s %10s %9s %9s %9s %9s %9s\n", "", "", "ms", "us/read", "us/read", "us/read",
	       "us/read", "us/read");
	measure("as written", fd, size, n, sleep_ms);
	{
		double f = fold(fd, size), p;

		usleep(settle_ms * 1000u);
		p = pass(path);
		printf("(read back into huge folios in %.1f ms; then, after %u ms, read once with pread in "
		       "%.1f ms:\n a virtual machine's host may back newly allocated memory only when it "
		       "is first used)\n", f, settle_ms, p);
	}
	measure("read back huge", fd, size, n, sleep_ms);
	unlink(path);
	printf("huge: the share of a fresh mapping mapped by huge entries (PAGEMAP_SCAN; -1: cannot "
	       "tell); first, second: copies out of a fresh\npopulated mapping; touched: after "
	       "every page was read; slept: the same after the sleep; pread: the same offsets' kind\n");
	close(fd);
	return 0;
}
