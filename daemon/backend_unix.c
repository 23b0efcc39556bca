/* SPDX-License-Identifier: MIT */
/*
 * backend_unix.c - the mapping calls of backend.h on POSIX: mmap(2),
 * munmap(2), fstat(2) and mincore(2).  backend_mmap.c reads through them;
 * backend_win32.c is the Windows half.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "backend.h"

int backend_map(hm_fd fd, size_t len, void **out)
{
	void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return -errno;
	*out = p;
	return 0;
}

void backend_unmap(void *map, size_t len)
{
	(void)munmap(map, len);
}

int backend_file_size(hm_fd fd, uint64_t *size)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	*size = st.st_size < 0 ? 0 : (uint64_t)st.st_size;
	return 0;
}

/* Largest range whose residency is checked before an inline copy; larger
 * ones are left to a worker. */
#define MMAP_NOWAIT_MAX_PAGES 1024

/* Whether every page of [addr, addr + len) is in the page cache. */
bool backend_resident(const void *addr, size_t len)
{
	unsigned char vec[MMAP_NOWAIT_MAX_PAGES];
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)addr & ~(page - 1);
	uintptr_t end = (uintptr_t)addr + len;
	size_t n = (end - start + page - 1) / page, i;

	if (n > MMAP_NOWAIT_MAX_PAGES || mincore((void *)start, end - start, vec) < 0)
		return false;
	for (i = 0; i < n; i++)
		if (!(vec[i] & 1))
			return false;
	return true;
}
