/* SPDX-License-Identifier: MIT */
/*
 * file_entry.c - the file cache's entries: made, found by (st_dev, st_ino)
 * in the hash, moved on and off the idle lists (watched with inotify from
 * their first idle moment until they leave the hash), retired when their
 * file changes, and freed.
 *
 * An entry is in one of three states:
 *   cached   - in the hash table, found by the next open of its file;
 *              kept (descriptor and mapping) after its last handle closes,
 *              unless the file has no name left by then;
 *   stale    - taken out of the hash because the file changed (or a copy
 *              out of its mapping faulted); lives until its last handle
 *              closes, then is freed;
 *   private  - never in the hash: files that are not regular, and files on
 *              pseudo file systems.  Their content can depend on the
 *              credentials of the opener (procfs and sysfs check some of
 *              them against the opener's, e.g. /proc/kallsyms), and a pipe
 *              or socket descriptor is a stream of its own, so one
 *              opener's descriptor must never answer for another.  Freed
 *              when their only handle closes.
 * Every entry is also on the cache's list of all entries, so that
 * file_cache_free() reaches the stale and private ones too.
 *
 * A cached entry with no handle is idle, and on one of two idle lists:
 * mapped or not.  Both are ordered by the moment the entry became idle
 * (its last handle closed), most recent at the head; entries leave them
 * only when opened again or freed.  So each list is sorted by idle_since,
 * its tail is its least recently used entry, and the oldest idle entry of
 * all is the older of the two tails: the budget drops from the tails
 * (mapped bytes from the mapped list only, since dropping an unmapped
 * entry frees no mapped bytes) and the sweep stops at the first entry not
 * idle long enough.  Reads never touch the lists: an entry being read has
 * a handle, so it is not on one.
 *
 * What it must not do: decide when an entry goes (the budget, the sweep,
 * an open or a close decide, and call here), or choose a backend.  It is
 * the bottom of the cache's rooms (storage_priv.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1	/* O_PATH; config.h defines it under autotools */
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "daemon/storage/backend.h"
#include "daemon/storage/storage_priv.h"
#include "daemon/storage/storage.h"

/* --- hash table: open hashing on (dev, ino) ------------------------------ */

static size_t cache_hash(const struct file_id *id)
{
	/* splitmix64's finalizer: inode numbers are often sequential. */
	uint64_t x = id->ino ^ (id->dev * 0x9e3779b97f4a7c15ULL) ^
		     (id->ino_hi * 0xc2b2ae3d27d4eb4fULL);

	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return (size_t)x;
}

struct file_entry *file_cache_find(struct file_cache *cache, const struct file_id *id)
{
	struct file_entry *e = cache->buckets[cache_hash(id) & (cache->nbuckets - 1)];

	for (; e != NULL; e = e->hash_next)
		if (e->id.dev == id->dev && e->id.ino == id->ino && e->id.ino_hi == id->ino_hi)
			return e;
	return NULL;
}

static void cache_grow(struct file_cache *cache)
{
	size_t n = cache->nbuckets * 2;
	struct file_entry **b;

	if (n < cache->nbuckets)
		return;
	b = calloc(n, sizeof(*b));
	if (b == NULL)
		return;	/* keep the smaller table: longer chains, still correct */
	for (size_t i = 0; i < cache->nbuckets; i++) {
		struct file_entry *e = cache->buckets[i], *next;

		for (; e != NULL; e = next) {
			size_t k = cache_hash(&e->id) & (n - 1);

			next = e->hash_next;
			e->hash_next = b[k];
			b[k] = e;
		}
	}
	free(cache->buckets);
	cache->buckets = b;
	cache->nbuckets = n;
}

/* At most one hashed entry per (dev, ino): the caller has unhashed the
 * previous one. */
void file_cache_insert(struct file_cache *cache, struct file_entry *e)
{
	size_t k;

	if (cache->nhashed >= cache->nbuckets)
		cache_grow(cache);
	k = cache_hash(&e->id) & (cache->nbuckets - 1);
	e->hash_next = cache->buckets[k];
	cache->buckets[k] = e;
	e->hashed = true;
	cache->nhashed++;
	if (!e->unkept)
		cache->nkept++;
}

/* e leaves the hash: nothing needs to know whether its file is unlinked
 * any more, and a new entry for the same file (whose watch inotify would
 * share) must not lose its watch when e goes. */
static void entry_unwatch(struct file_cache *cache, struct file_entry *e)
{
	if (e->wd >= 0)
		fplat_watch_rm(cache->watch_fd, e->wd);
	e->wd = -1;
}

void file_cache_unhash(struct file_cache *cache, struct file_entry *e)
{
	struct file_entry **p;

	if (!e->hashed)
		return;
	p = &cache->buckets[cache_hash(&e->id) & (cache->nbuckets - 1)];
	for (; *p != NULL; p = &(*p)->hash_next) {
		if (*p == e) {
			*p = e->hash_next;
			break;
		}
	}
	e->hash_next = NULL;
	e->hashed = false;
	cache->nhashed--;
	entry_unwatch(cache, e);
	if (!e->unkept)
		cache->nkept--;
}

/* --- idle lists (see the top of the file) -------------------------------- */

void file_cache_idle_init(struct lru_node *list)
{
	list->prev = list;
	list->next = list;
}

static bool lru_empty(const struct lru_node *list)
{
	return list->next == list;
}

struct file_entry *file_cache_entry_of_lru(struct lru_node *n)
{
	return (struct file_entry *)((char *)n - offsetof(struct file_entry, lru));
}

/* The least recently used entry of a list; NULL when it is empty. */
struct file_entry *file_cache_idle_tail(struct lru_node *list)
{
	return lru_empty(list) ? NULL : file_cache_entry_of_lru(list->prev);
}

/*
 * e has just lost its last handle: the most recently used idle entry.  Its
 * watch is made the first time and kept while e is in the hash: a file
 * opened and closed by one short-lived process after another would
 * otherwise cost an inotify_add_watch at each close and an
 * inotify_rm_watch (and the IN_IGNORED event it queues) at each open.
 * Events for an entry with handles are ignored (notice_one looks at the
 * idle lists only); its close checks the links itself.
 */
static void entry_watch(struct file_cache *cache, struct file_entry *e)
{
	if (e->wd < 0 && cache->watch_fd >= 0 && e->hashed)
		e->wd = fplat_watch_add(cache->watch_fd, e->file.fd);
	if (e->wd < 0) {
		e->unwatched = true;
		cache->unwatched_idle++;
	}
}

static void entry_unwatch_idle(struct file_cache *cache, struct file_entry *e)
{
	if (e->unwatched)
		cache->unwatched_idle--;
	e->unwatched = false;
}

/* Whether nothing names e's file any more (deleted, or replaced by
 * rename): -1 when fstat fails. */
int file_cache_entry_unlinked(const struct file_entry *e)
{
	struct file_stat st;

	if (fplat_stat(e->file.fd, &st) < 0)
		return -1;
	return st.nlink == 0;
}

void file_cache_idle_push(struct file_cache *cache, struct file_entry *e)
{
	struct lru_node *list = e->file.map != NULL ? &cache->idle_mapped : &cache->idle_unmapped;

	if (e->lru.next != NULL)
		return;
	e->idle_since_ns = monotime_ns();
	e->lru.prev = list;
	e->lru.next = list->next;
	list->next->prev = &e->lru;
	list->next = &e->lru;
	if (e->file.map != NULL)
		cache->idle_mapped_bytes += e->file.map_len;
	entry_watch(cache, e);
}

/*
 * e is getting a handle, or going.  The mapping of an idle entry never
 * changes (only an open maps, and nothing unmaps without freeing the entry
 * after this), so this subtracts what idle_push added.
 */
void file_cache_idle_remove(struct file_cache *cache, struct file_entry *e)
{
	if (e->lru.next == NULL)
		return;
	e->lru.prev->next = e->lru.next;
	e->lru.next->prev = e->lru.prev;
	e->lru.prev = NULL;
	e->lru.next = NULL;
	if (e->file.map != NULL)
		cache->idle_mapped_bytes -= e->file.map_len;
	entry_unwatch_idle(cache, e);
}

/* The least recently used idle entry, mapped or not; NULL when none. */
struct file_entry *file_cache_idle_oldest(struct file_cache *cache)
{
	struct file_entry *m = file_cache_idle_tail(&cache->idle_mapped);
	struct file_entry *u = file_cache_idle_tail(&cache->idle_unmapped);

	if (m == NULL || u == NULL)
		return m != NULL ? m : u;
	return u->idle_since_ns <= m->idle_since_ns ? u : m;
}

/* --- entries ----------------------------------------------------------- */

/* Huge folios are for regular files on local data file systems, of a
 * chunk or more (fplat_fold); a file that cannot have them gets no bits,
 * and one out of memory does without. */
static void entry_fold_init(struct file_entry *e, const struct file_stat *st)
{
	size_t chunk = fplat_fold_chunk(e->fs_type), words;

	if (chunk == 0 || e->fs != FS_LOCAL || !e->fs_data || (st->mode & S_IFMT) != S_IFREG ||
	    st->size < chunk || st->size / chunk > SIZE_MAX / 2)
		return;
	e->fold_chunks = (size_t)(st->size / chunk);
	words = (e->fold_chunks + 63) / 64;
	e->fold_claim = calloc(2 * words, sizeof(uint64_t));
	if (e->fold_claim == NULL)
		e->fold_chunks = 0;
	else
		e->fold_done = e->fold_claim + words;
}

struct file_entry *file_cache_entry_new(struct file_cache *cache, hm_fd fd,
					const struct file_stat *st, enum fs_class fs,
					uint32_t fs_type, bool fs_data)
{
	struct file_entry *e = calloc(1, sizeof(*e));

	if (e == NULL)
		return NULL;
	e->file.fd = fd;
	e->wd = -1;
	e->id = st->id;
	e->size = st->size;
	e->mtime_ns = st->mtime_ns;
	e->ctime_ns = st->ctime_ns;
	e->fs = fs;
	e->fs_type = fs_type;
	e->fs_data = fs_data;
	entry_fold_init(e, st);

	e->all_next = cache->all;
	if (cache->all != NULL)
		cache->all->all_prev = e;
	cache->all = e;
	cache->ctr.entries++;
	return e;
}

void file_cache_entry_free(struct file_cache *cache, struct file_entry *e)
{
	file_cache_idle_remove(cache, e);
	file_cache_unhash(cache, e);
	if (e->file.map != NULL) {
		cache->ctr.mappings--;
		cache->ctr.mapped_bytes -= e->file.map_len;
		/* A mapping is the only state a backend attaches to an
		 * entry, and only the mmap backend makes one. */
		backend_get(STORAGE_BACKEND_MMAP)->detach(&e->file);
	}
	safe_close(e->file.fd);
	free(e->fold_claim);	/* fold_done is in the same block */

	if (e->all_prev != NULL)
		e->all_prev->all_next = e->all_next;
	else
		cache->all = e->all_next;
	if (e->all_next != NULL)
		e->all_next->all_prev = e->all_prev;
	cache->ctr.entries--;
	free(e);
}

/*
 * Takes e out of the hash so that the next open of its file makes a new
 * entry.  Refcount invariant: an entry with handles is never freed (nor
 * unmapped) here, since a reader may be copying out of its mapping; the
 * last file_cache_close() frees it instead.  One without handles has no
 * reader and goes now.
 */
void file_cache_entry_retire(struct file_cache *cache, struct file_entry *e)
{
	file_cache_unhash(cache, e);
	if (e->refs == 0)
		file_cache_entry_free(cache, e);
}

bool file_cache_entry_matches(const struct file_entry *e, const struct file_stat *st)
{
	return e->size == st->size && e->mtime_ns == st->mtime_ns &&
	       e->ctime_ns == st->ctime_ns;
}
