/* SPDX-License-Identifier: MIT */
/*
 * region_unix.c - the shared region's memory on Linux: a sealed memfd
 * (it can neither grow nor shrink, so the daemon's mapping of it never
 * faults), mapped shared; its descriptor goes with HELLO.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "client/client_priv.h"
#include "proto/direct.h"

/*
 * Whether shared memory gets transparent huge pages when asked
 * (MADV_HUGEPAGE): the kernel's shmem_enabled is always, within_size,
 * advise or force.  A region of 2 MiB pages costs one page fault per
 * 2 MiB, in the daemon and in the client, instead of 512.  Not hugetlbfs
 * (MFD_HUGETLB): its pages come from a pool that can run dry under a copy,
 * and hotmapd refuses such a region.
 */
static bool
region_thp_read(void)
{
	char buf[128];
	ssize_t n;
	int fd = open("/sys/kernel/mm/transparent_hugepage/shmem_enabled", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strstr(buf, "[always]") != NULL || strstr(buf, "[within_size]") != NULL ||
	       strstr(buf, "[advise]") != NULL || strstr(buf, "[force]") != NULL;
}

/* Asked once per process: three system calls less per connection. */
static bool
region_thp_available(void)
{
	static int known;	/* atomic: 0 not asked, 1 no, 2 yes */
	int v = __atomic_load_n(&known, __ATOMIC_RELAXED);

	if (v == 0) {
		v = region_thp_read() ? 2 : 1;
		__atomic_store_n(&known, v, __ATOMIC_RELAXED);
	}
	return v == 2;
}

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
	/* huge pages where the system gives them to shared memory; the
	 * daemon asks for them on its mapping too (Hello region_huge) */
	r->huge = size >= REGION_HUGE && region_thp_available() &&
		  madvise(r->base, size, MADV_HUGEPAGE) == 0;
	if (table > 0) {
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
