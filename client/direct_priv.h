/* SPDX-License-Identifier: MIT */
/*
 * direct_priv.h - what the files of the direct tier on Unix share; never
 * installed, and included by them alone.
 *
 * The mapping of a file and a grant's use of it, and the calls between
 * the tier's files, declared bottom up: a file calls only those declared
 * before its own.  direct_guard_unix.c (the SIGBUS guard), then
 * direct_map_unix.c (mappings and grants), then direct_unix.c (the reads
 * and views, the tier's face: direct_* of client_priv.h).  Which copy a
 * read takes is the copy policy's (copy_policy.c), which knows nothing of
 * these.
 *
 * What it must not do: declare anything the rest of the library calls
 * (that is client_priv.h's), or hold code.
 */
#ifndef HOTMAP_CLIENT_DIRECT_PRIV_H
#define HOTMAP_CLIENT_DIRECT_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "client/client_priv.h"
#include "client/copy_policy.h"
#include "client/page_state.h"

#define PAGE_SHIFT_4K		12
/* A block: PAGE_STATE_CHUNK pages (2 MiB), what is populated at once. */
#define BLOCK_BYTES		((size_t)PAGE_STATE_CHUNK << PAGE_SHIFT_4K)

/*
 * A mapping of a file: the memory and its page tables, which cost a fault
 * per page to build.  A process that closes a file and opens it again
 * (each epoch, each connection, each round) finds it here: an idle mapping
 * is kept, up to MAPPINGS_IDLE_MAX of them, and reused by the next grant
 * on the same file whose size it covers.  Its bytes are the page cache's
 * (MAP_SHARED), so a reused mapping shows the file as it is now; the grant
 * bounds what may be read of it.  One whose pages were zero-filled
 * (lost) is never reused.
 */
struct mapping {
	uint8_t *base;
	size_t len;
	uint64_t dev, ino;
	pid_t pid;		/* the process whose page tables these are */
	/* Per page: the reads of it with pread, and whether it is touched
	 * through the mapping (its page table entry built).  See
	 * direct_read. */
	struct page_state pages;
	unsigned refs;		/* grants using it; under maps_lock */
	int lost;		/* atomic: pages were gone and zero-filled */
	/* What its reads cost, estimated: the copy policy's. */
	struct cp_costs cost;
	struct mapping *prev, *next;	/* on `idle` while refs == 0 */
	uint32_t watched;	/* its entry in the SIGBUS handler's table */
	int folios;		/* atomic: FOLIOS_*, what its first block bought
				 * said (populate_block) */
};
#define FOLIOS_UNKNOWN	0
#define FOLIOS_HUGE	1	/* a block is mapped by one huge entry */
#define FOLIOS_SMALL	2	/* page by page */

/* A grant in use: the mapping, read under the slot's generation.  Held by
 * the file and by each view into it. */
struct direct_map {
	struct mapping *map;
	uint8_t *base;		/* map->base */
	size_t maplen;		/* the size the grant holds (<= map->len) */
	struct hm_direct_slot *slot;	/* the grant's, in region's table; a
					 * table file's own (its counts) */
	/* the generation the grant holds under: the slot's, or the entry's
	 * in the table of granted files (read-only here) */
	const uint64_t *genp;
	uint64_t gen;		/* the grant's generation */
	struct hm_region *region;	/* held: the slot is in its table */
	unsigned refs;		/* atomic */
	/* retired (direct_retire): the descriptor it was read with, and the
	 * next on the client's list */
	int retired_fd;
	struct direct_map *retired_next;
};

/* direct_guard_unix.c: the library's SIGBUS handler in front of the
 * program's (0, or -EBUSY when SIGBUS cannot be had); a copy out of a
 * mapping, or a byte of every page of a range read, that a fault in the
 * source ends with -EFAULT; and the table of mappings the handler repairs
 * (guard_watch: 0, or -ENFILE when it is full). */
int guard_ensure(void);
int guarded_copy(void *dst, const void *src, size_t len);
int guarded_touch(const uint8_t *src, size_t len);
int guard_watch(struct mapping *m);
void guard_unwatch(struct mapping *m);

/* direct_map_unix.c: the mapping f reads through now, or NULL (none,
 * revoked, another process's); whether it was lost (its pages
 * zero-filled); and a grant's use of it let go. */
struct direct_map *live_map(hm_file *f);
/* The process's estimates, which each new mapping starts from. */
extern struct cp_costs direct_costs;
bool map_lost(const struct direct_map *m);
/* Whether m's grant still holds (its generation unchanged). */
static inline bool
map_holds(const struct direct_map *m)
{
	return __atomic_load_n(m->genp, __ATOMIC_ACQUIRE) == m->gen;
}
/* f found in the table of granted files (table_unix.c): fd mapped for
 * size bytes, read under the entry's generation gen at genp.  0 or
 * -errno.  Lock held. */
int direct_promote_table(hm_file *f, int fd, const uint64_t *genp, uint64_t gen, uint64_t size);
void map_unref(struct direct_map *m);

#endif
