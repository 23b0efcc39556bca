/* SPDX-License-Identifier: MIT */
/*
 * storage_priv.h - what the rooms of the file cache share: the entry
 * and cache structs and the few helpers that reach into more than one.
 *
 * What it is for: the rooms see the same struct file_entry and struct
 * file_cache, and call one another in one direction only:
 *
 *   file_io.c      reads and hints through a handle
 *   file_list.c    listing and eviction
 *   file_lease.c   the read lease behind direct reads
 *   file_cache.c   the cache: new, free, close, dup, counters, names
 *   file_open.c    file_cache_open, step by step
 *   file_budget.c  the budget, the limits, the sweep, inotify's notice
 *   file_entry.c   entries, the hash, the idle lists
 *   file_copy.c    copies of network files in memory (apart from entries)
 *
 * Each calls only rooms below it in this list, never one above.  Nothing
 * outside the storage core includes this header (storage.h is its public
 * contract).
 *
 * What it must not do: include libevent or protobuf headers; declare
 * anything a caller of the storage core needs.
 */
#ifndef HOTMAP_STORAGE_PRIV_H
#define HOTMAP_STORAGE_PRIV_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/storage/backend.h"
#include "daemon/storage/file_platform.h"
#include "proto/monotime.h"
#include "daemon/storage/storage.h"

/* Largest offset a read may reach (file_platform.h). */
#define CACHE_OFF_MAX FPLAT_OFF_MAX

#define CACHE_MIN_BUCKETS 64

/* An intrusive, circular, doubly linked list node; a list is a sentinel
 * node.  A node on no list has next == NULL. */
struct lru_node {
	struct lru_node *prev;
	struct lru_node *next;
};

struct file_entry {
	struct backend_file file;	/* descriptor and mapping */

	/* Identity and the validators an open compares against. */
	struct file_id id;
	uint64_t size;
	int64_t mtime_ns;
	int64_t ctime_ns;
	enum fs_class fs;		/* meaningful for regular files */
	uint32_t fs_type;		/* statfs f_type, for messages */
	bool fs_data;			/* a data file system (fplat_fs) */
	bool fs_network;		/* a network one by fplat_fs_name's list */
	char fs_name[32];		/* fplat_fs_name: "ext4", "fuse.sshfs" */
	uint64_t mnt_id;		/* fs_network: fplat_mount_id (file_copy.c) */
	int copy_why;			/* STORAGE_COPY_WHY_*: why its copy was not kept */
	bool private_entry;		/* never shared: one handle's descriptor
					 * (file_open.c), not cached, not stale */

	unsigned refs;			/* open handles */
	unsigned job_refs;		/* of them, jobs' (storage_handle_dup) */
	bool hashed;			/* cached: reachable from the hash */
	bool unkept;			/* made past max_files: freed at its last close */
	int map_errno;			/* mmap failed once: never retried */
	int wd;				/* inotify watch while idle; -1 none */
	bool unwatched;			/* idle, and no watch could be had */

	/* On an idle list while hashed with refs == 0 (see the top). */
	struct lru_node lru;
	uint64_t idle_since_ns;		/* monotime_ns() when it became idle */

	/* For listings (file_cache_foreach); the loop thread updates them. */
	uint64_t hits;			/* opens that found this entry */
	uint64_t bytes;			/* bytes read from it */
	uint64_t last_use_ns;		/* monotime_ns() of the last open or read */
	enum storage_reason last_reason;	/* of the last open */
	/* Huge folios (fplat_fold), per chunk: a bit in fold_claim while a
	 * worker folds it, in fold_done once one has (each chunk is dropped
	 * and read back at most once per entry, whoever asks).  NULL when
	 * the file cannot have them.  Atomic. */
	uint64_t *fold_claim, *fold_done;
	size_t fold_chunks;
	int fold_off;			/* atomic: no more (see storage_fold) */
	unsigned fold_misses;		/* atomic: chunks in a row that stayed small */
	int fold_pass;			/* loop thread: 0, 1 while a job folds the
					 * file, 2 once jobs went through it */
	uint64_t fold_next;		/* loop thread: where the next job starts */
	uint64_t fold_retry_ns;		/* loop thread: no job before (monotime) */
	uint64_t fold_recheck_ns;	/* loop thread: once gone through, gone
					 * through again from then (monotime) */
	/* Direct reads (file_lease.c): whether file.fd is an open file
	 * description hotmapd opened itself (fplat_reopen_private), the only
	 * kind it leases; grants holding the read lease; and what clients
	 * reported reading themselves. */
	bool own_fd;
	unsigned lease_refs;
	unsigned lease_job_refs;	/* of them, job handles' (the table of
					 * granted files'): no client's */
	uint64_t direct_reads;
	uint64_t direct_bytes;
	/* How often the grants that ended read each 2 MiB block of the file:
	 * a moving average (storage_note_block_reads), for the next client's
	 * copy policy; 0 until a grant that read ended. */
	uint32_t block_reads;
	/* and its low mark: falls at once to a grant that read less, climbs
	 * back half way with each that read more (storage_block_reads_low) */
	uint32_t block_reads_low;
	struct storage_read_ways ways;	/* storage_count_read, _direct_ways */

	struct file_entry *hash_next;	/* bucket chain */
	struct file_entry *all_prev;	/* list of all entries */
	struct file_entry *all_next;
};

/* A copy of a network file in memory (file_copy.c): a memfd, on the
 * cache's list from its begin (filling, then kept) to its drop. */
#define STORAGE_COPY_UIDS 8

/* A copy dropped while a client it was given to may still hold it:
 * charged to each of those uids until its memfd's watch says nobody
 * holds it any more (file_copy.c, "held"). */
struct storage_copy_held {
	int wd;				/* fplat_copy_watch; -1: charged for good */
	uint64_t size;
	uint32_t uids[STORAGE_COPY_UIDS];
	unsigned nuids;
	struct storage_copy_held *next;
};

struct storage_copy {
	struct file_id id;
	uint64_t mnt_id;		/* the mount it was read from (fplat_mount_id):
					 * st_dev is reused by the next mount */
	uint64_t size;			/* the validators it was made with */
	int64_t mtime_ns;
	int64_t ctime_ns;
	hm_fd fd;			/* the memfd */
	void *map;			/* writable while filling; NULL once sealed */
	bool kept;			/* filled, sealed: given out */
	bool dropped;			/* dropped while filling: freed at its end */
	int failed;			/* atomic: a read of it came short */
	uint64_t filled;		/* bytes read in so far (its job's steps) */
	int64_t begun_s;		/* time(NULL) when its fill began */
	uint64_t begun_ns;		/* monotime_ns() then: its deadline's start */
	uint32_t uid;			/* whose warm fills it: one fill per uid */
	uint32_t given[STORAGE_COPY_UIDS];	/* the uids it was given to */
	unsigned ngiven;
	bool abandoned;			/* past network_copy_fill_ms: its bytes no
					 * longer counted, freed at its job's end */
	uint64_t filled_ns;		/* monotime_ns() when sealed */
	uint64_t used_ns;		/* when last given out: the least recent goes */
	char fs[32];			/* its file system's name, for listings */
	char path[1024];		/* its name when copied, for listings */
	struct storage_copy *prev, *next;
};

struct file_cache {
	struct file_entry **buckets;
	size_t nbuckets;		/* a power of two */
	size_t nhashed;
	size_t nkept;			/* hashed and not unkept: what max_files bounds */
	struct file_entry *all;
	struct storage_counters ctr;

	struct storage_limits limits;
	struct lru_node idle_mapped;	/* idle entries with a mapping */
	struct lru_node idle_unmapped;	/* idle entries without one */
	uint64_t idle_mapped_bytes;	/* sum of map_len over idle_mapped */

	/*
	 * Idle entries are watched (IN_ATTRIB: the link count changed) so
	 * that one whose file is deleted, or replaced by rename, is freed
	 * at once: nothing reads it any more, and its descriptor would pin
	 * the file's blocks on disk.  An entry with handles needs no watch:
	 * its last close checks.  Without inotify (or a watch), the sweep
	 * checks each second.
	 */
	int watch_fd;			/* inotify (fplat_watch_new), -1 when
					 * there is none */
	unsigned unwatched_idle;	/* idle entries with unwatched set */
	struct storage_copy *copies;	/* file_copy.c: filling and kept */
	struct storage_copy_held *held;	/* file_copy.c: dropped, maybe held */
	int held_watch;			/* their watches (fplat_watch_new), read
					 * when asked; -1: none */
	bool held_watch_made;		/* held_watch was asked for */
};

/* The hashed entry of a file; NULL when there is none. */
struct file_entry *file_cache_find(struct file_cache *cache, const struct file_id *id);

/* Takes e out of the hash (a no-op when it is not hashed): the next open
 * of its file makes a new entry.  e itself lives on while it has handles. */
void file_cache_unhash(struct file_cache *cache, struct file_entry *e);

/* Unmaps, closes and frees e.  Only when e has no handle: a reader may be
 * copying out of its mapping (see file_cache_close). */
void file_cache_entry_free(struct file_cache *cache, struct file_entry *e);

/* Makes an entry for fd (which it takes) and puts it on the list of all
 * entries; not hashed, no handle.  NULL when out of memory. */
struct file_entry *file_cache_entry_new(struct file_cache *cache, hm_fd fd,
					const struct file_stat *st, enum fs_class fs,
					uint32_t fs_type, bool fs_data);
/* Hashes e: the next open of its file finds it. */
void file_cache_insert(struct file_cache *cache, struct file_entry *e);
/* Unhashes e, and frees it now unless it has handles (its last close
 * frees it then). */
void file_cache_entry_retire(struct file_cache *cache, struct file_entry *e);
/* Whether st is the file e was made for, unchanged. */
bool file_cache_entry_matches(const struct file_entry *e, const struct file_stat *st);
/* Whether nothing names e's file any more (deleted, or replaced by
 * rename): -1 when fstat fails. */
int file_cache_entry_unlinked(const struct file_entry *e);

/* The idle lists (see file_entry.c): an empty list; the entry a node is
 * of; a list's least recently used entry (NULL: empty); e on the head of
 * its list (no-op when it is on one) and off it; the least recently used
 * idle entry, mapped or not (NULL: none). */
void file_cache_idle_init(struct lru_node *list);
struct file_entry *file_cache_entry_of_lru(struct lru_node *n);
struct file_entry *file_cache_idle_tail(struct lru_node *list);
void file_cache_idle_push(struct file_cache *cache, struct file_entry *e);
void file_cache_idle_remove(struct file_cache *cache, struct file_entry *e);
struct file_entry *file_cache_idle_oldest(struct file_cache *cache);

/* The budget (file_budget.c): drops idle entries until room more kept
 * entries fit max_files, or whether a mapping of len bytes fits
 * max_mapped_bytes (force: drop what can be dropped even when it will not
 * fit); and back under both limits as far as idle entries allow. */
bool file_cache_trim_files(struct file_cache *cache, uint64_t room);
bool file_cache_make_room_mapped(struct file_cache *cache, uint64_t len, bool force);
void file_cache_trim(struct file_cache *cache);

/* Copies (file_copy.c): back within network_copy_max (all dropped at
 * 0); all freed (the cache's end); all dropped (how many); (dev, ino)'s dropped (an eviction:
 * whether there was one); the kept copy of id, or NULL. */
void file_cache_copies_trim(struct file_cache *cache);
void file_cache_copies_free(struct file_cache *cache);
unsigned file_cache_copies_drop(struct file_cache *cache);
bool file_cache_copy_drop(struct file_cache *cache, uint64_t dev, uint64_t ino);
const struct storage_copy *file_cache_copy_of(struct file_cache *cache, const struct file_id *id);

/*
 * Every descriptor here came from a client, or reads a client's file: its
 * last close may block (a FUSE flush, NFS), so it goes to the closer
 * thread, never straight to close(2) on the caller's (the loop's) thread
 * (fplat_close).
 */
static inline void safe_close(hm_fd fd)
{
	fplat_close(fd);
}

#endif
