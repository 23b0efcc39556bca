/* SPDX-License-Identifier: MIT */
/*
 * region_unix.c - the shared region's memory on Linux: a sealed memfd
 * (it can neither grow nor shrink, so the daemon's mapping of it never
 * faults), mapped shared; its descriptor goes with HELLO.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "client/client_priv.h"
#include "proto/direct.h"

int
region_map(struct hm_region *r, size_t table, uint32_t slots, hm_osfile *fd)
{
	size_t size = r->size;
	int err;

	*fd = memfd_create("hotmap-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (*fd < 0 || ftruncate(*fd, (off_t)(size + table)) < 0 ||
	    fcntl(*fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto fail;
	r->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (r->base == MAP_FAILED)
		goto fail;
	/*
	 * Huge pages where the system gives them to shared memory: a region
	 * of 2 MiB pages costs one page fault per 2 MiB, in the daemon and
	 * in the client, instead of 512.  Asked for without reading the
	 * system's setting (shmem_enabled), which would cost a short-lived
	 * process three system calls: where the setting is never, the
	 * advice changes nothing.  The daemon asks on its mapping too (Hello
	 * region_huge) and, knowing the setting, says whether they were had.
	 * Not hugetlbfs (MFD_HUGETLB): its pages come from a pool that can
	 * run dry under a copy, and hotmapd refuses such a region.
	 */
	r->huge = size >= REGION_HUGE && madvise(r->base, size, MADV_HUGEPAGE) == 0;
	if (table > 0) {
		/* apart from base (client_priv.h): its own entry in the
		 * process's maps, and its offset a page's multiple or no
		 * region at all where pages are larger than REGION_BLOCK */
		void *t = mmap(NULL, table, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, (off_t)size);

		if (t == MAP_FAILED) {
			munmap(r->base, size);
			goto fail;
		}
		r->slots = t;
		r->nslots = slots;
	}
	return 0;
fail:
	err = errno;
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	return -err;
}

void
region_unmap(struct hm_region *r)
{
	munmap(r->base, r->size);
	if (r->slots != NULL)
		munmap(r->slots, (size_t)r->nslots * HM_DIRECT_SLOT_BYTES);
}
