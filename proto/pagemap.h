/* SPDX-License-Identifier: MIT */
/*
 * pagemap.h - PAGEMAP_SCAN (Linux 6.7), for the daemon's huge folios
 * (daemon/storage/file_platform_unix.c) and the library's direct tier
 * (client/direct_unix.c): whether a range of a mapping is mapped by huge
 * page-table entries.  Not the wire format: a kernel interface both ends
 * use, declared here because Debian 12's <linux/fs.h> predates it.
 */
#ifndef HOTMAP_PROTO_PAGEMAP_H
#define HOTMAP_PROTO_PAGEMAP_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>

#ifndef PAGEMAP_SCAN
struct pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
struct page_region {
	uint64_t start, end, categories;
};
#define PAGEMAP_SCAN	_IOWR('f', 16, struct pm_scan_arg)
#define PAGE_IS_HUGE	(1 << 6)
#endif

/* Whether all of [p, p + len) is mapped by huge entries, asked of the
 * process's /proc/self/pagemap open on fd: 1, 0, or -errno (-ENOTSUP: a
 * kernel without PAGEMAP_SCAN). */
static inline int
pagemap_all_huge(int fd, const void *p, size_t len)
{
	struct page_region r;
	struct pm_scan_arg a = {
		.size = sizeof a, .start = (uintptr_t)p, .end = (uintptr_t)p + len,
		.vec = (uintptr_t)&r, .vec_len = 1,
		.category_mask = PAGE_IS_HUGE, .return_mask = PAGE_IS_HUGE,
	};
	long n = ioctl(fd, PAGEMAP_SCAN, &a);

	if (n < 0)
		return errno == ENOTTY || errno == EINVAL ? -ENOTSUP : -errno;
	return n == 1 && r.start == (uintptr_t)p && r.end == (uintptr_t)p + len;
}

#endif
