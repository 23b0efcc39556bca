/* SPDX-License-Identifier: MIT */
/*
 * direct_table.h - the table of granted files (proto/direct.h; hotmapd.conf(5)
 * direct-table; docs/direct-reads.md, "The table of granted files").
 *
 * What it is for: a short-lived process that opens a hot file should not
 * have to wake hotmapd to read it from its own mapping.  Each file granted
 * to a client for direct reads, if anyone may read it, is also published
 * in a table beside the socket that clients map read-only: the table's
 * entry holds its own handle and its own share of the file's lease, as a
 * grant does (its slot is the entry), for `linger` seconds after the last
 * grant on the file, so that processes that come later find it there and
 * read the file without a round trip.  A lease break, an eviction or
 * direct reads switched off revoke the entry with the file's other
 * grants (direct.c: the entry's generation made odd, then the lease let
 * go); the sweep closes what revoked entries held.
 *
 * Who sees it: the table is readable by whoever may connect (the socket's
 * mode and group), and lists only files every user may read, by device,
 * inode and size: nothing a client could not learn by opening the file.
 *
 * What it must not do: publish a file the lease rule did not let some
 * client lease; write anything in the table but an entry's daemon line
 * and the head; block.
 */
#ifndef HOTMAP_DAEMON_DIRECT_TABLE_H
#define HOTMAP_DAEMON_DIRECT_TABLE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/service/direct.h"
#include "daemon/storage/storage.h"

/* The entries of a table: HM_DIRECT_SLOT_BYTES each, 512 KiB in all. */
#define DIRECT_TABLE_ENTRIES	4096u
/* The entries one user's grants may publish at once: the others' share is
 * theirs (an entry holds a descriptor and a mapping for its linger). */
#define DIRECT_TABLE_PER_UID	1024u
/* An entry that holds no file (no uid is (uid_t)-1). */
#define DIRECT_TABLE_FREE	UINT32_MAX

struct direct_table_entry;

#ifdef _WIN32
/* Windows has no leases, hence no grants to publish. */
struct direct_table {
	int fd;
	unsigned used;
	uint64_t published;
};
static inline void
direct_table_set_linger(struct direct_table *t, unsigned linger)
{
	(void)t;
	(void)linger;
}
static inline void
direct_table_offer(struct direct_table *t, struct direct_registry *reg,
		   struct file_cache *cache, struct storage_handle *h,
		   const struct storage_stat *st, uint32_t uid, uint64_t now_ms)
{
	(void)t, (void)reg, (void)cache, (void)h, (void)st, (void)uid, (void)now_ms;
}
static inline void
direct_table_sweep(struct direct_table *t, struct direct_registry *reg,
		   struct file_cache *cache, uint64_t now_ms)
{
	(void)t, (void)reg, (void)cache, (void)now_ms;
}
static inline void
direct_table_close(struct direct_table *t, struct direct_registry *reg,
		   struct file_cache *cache)
{
	(void)t, (void)reg, (void)cache;
}
#else

struct direct_table {
	char *path;			/* NULL: no table */
	int fd;				/* holds the write lock while we run */
	uint8_t *base;
	size_t len;
	uint32_t n;			/* entries */
	unsigned most;			/* entries held at once, at most */
	unsigned linger_s;		/* direct-table; 0: nothing published */
	struct direct_table_entry *ents;
	uint32_t *owners;		/* per entry: the uid whose grant
					 * published it, or DIRECT_TABLE_FREE */
	unsigned used;			/* entries holding a file */
	/* stats: files published, entries given back (linger, revoked,
	 * made room for) */
	uint64_t published, dropped;
};

/*
 * Creates the table beside the socket at socket_path (its path with
 * HM_TABLE_SUFFIX), readable as the socket is (mode's read bits, group),
 * replacing one a daemon before left (whose entries are revoked first, for
 * the clients that still map it).  linger 0 makes none.  0, or -errno with
 * err saying why: hotmapd then serves without a table.
 */
int direct_table_open(struct direct_table *t, const char *socket_path, unsigned mode,
		      gid_t group, unsigned linger, char *err, size_t errlen);
/* A reload's direct-table (0 stops publishing; what is published lingers
 * out). */
void direct_table_set_linger(struct direct_table *t, unsigned linger);
/* A client of uid was granted h's file, of st as its grant's lease holds it
 * (direct_grant): publishes it, or renews its entry's linger.  Never gives back another user's live entry, and
 * publishes no more than DIRECT_TABLE_PER_UID for one user. */
void direct_table_offer(struct direct_table *t, struct direct_registry *reg,
			struct file_cache *cache, struct storage_handle *h,
			const struct storage_stat *st, uint32_t uid, uint64_t now_ms);
/* Closes what revoked entries held, and gives back the entries whose
 * linger is over (each second). */
void direct_table_sweep(struct direct_table *t, struct direct_registry *reg,
			struct file_cache *cache, uint64_t now_ms);
/* Every entry given back, the table removed (at exit). */
void direct_table_close(struct direct_table *t, struct direct_registry *reg,
			struct file_cache *cache);
#endif

#endif
