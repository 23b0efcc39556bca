/*
 * file_cache_priv.h - what the three rooms of the file cache share: the
 * entry and cache structs and the few helpers that reach into both.
 *
 * What it is for: file_cache.c (entries, hash, idle lists, budget, open
 * and close), file_io.c (reads and hints through a handle) and
 * file_list.c (listing and eviction) see the same struct file_entry and
 * struct file_cache; nothing outside the storage core includes this
 * header (storage.h is its public contract).
 *
 * What it must not do: include libevent or protobuf headers; declare
 * anything a caller of the storage core needs.
 */
#ifndef HOTMAP_FILE_CACHE_PRIV_H
#define HOTMAP_FILE_CACHE_PRIV_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

#include "backend.h"
#include "monotime.h"
#include "storage.h"

/* Largest off_t, without assuming its width (32-bit builds without
 * large-file support have a 32-bit off_t). */
#define CACHE_OFF_MAX ((uint64_t)(((uint64_t)1 << (sizeof(off_t) * CHAR_BIT - 1)) - 1))

/* An intrusive, circular, doubly linked list node; a list is a sentinel
 * node.  A node on no list has next == NULL. */
struct lru_node {
	struct lru_node *prev;
	struct lru_node *next;
};

enum fs_class {
	FS_LOCAL,
	FS_NETWORK,	/* mmap works but faults page by page over the wire */
	FS_PSEUDO,	/* st_size is not the length of the content */
};

struct file_entry {
	struct backend_file file;	/* descriptor and mapping */

	/* Identity and the validators an open compares against. */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	struct timespec ctime;
	enum fs_class fs;		/* meaningful for regular files */
	uint32_t fs_type;		/* statfs f_type, for messages */

	unsigned refs;			/* open handles */
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

	struct file_entry *hash_next;	/* bucket chain */
	struct file_entry *all_prev;	/* list of all entries */
	struct file_entry *all_next;
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
	int watch_fd;			/* inotify, -1 when there is none */
	unsigned unwatched_idle;	/* idle entries with unwatched set */
};

/* The hashed entry of (dev, ino); NULL when there is none. */
struct file_entry *file_cache_find(struct file_cache *cache, dev_t dev, ino_t ino);

/* Takes e out of the hash (a no-op when it is not hashed): the next open
 * of its file makes a new entry.  e itself lives on while it has handles. */
void file_cache_unhash(struct file_cache *cache, struct file_entry *e);

/* Unmaps, closes and frees e.  Only when e has no handle: a reader may be
 * copying out of its mapping (see file_cache_close). */
void file_cache_entry_free(struct file_cache *cache, struct file_entry *e);

#endif
