/* SPDX-License-Identifier: MIT */
/*
 * file_cache.c - the file cache itself (storage.h): made and freed, its
 * handles closed and duplicated, its counters, and the names of backends
 * and reasons.  Entries are in file_entry.c, the open path in
 * file_open.c, the budget and sweep in file_budget.c, reads in
 * file_io.c, listing and eviction in file_list.c; what they share is in
 * storage_priv.h.
 *
 * What it must not do: free an entry that has a handle, or close a
 * client's descriptor on the caller's thread (safe_close), but where its
 * close cannot wait (fplat_close_now).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1	/* O_PATH; config.h defines it under autotools */
#endif

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "daemon/storage/backend.h"
#include "daemon/storage/guard.h"
#include "daemon/storage/storage_priv.h"
#include "daemon/storage/storage.h"
#include "proto/vocab.h"

/* The names are the wire's (proto/hotmap.proto); daemon/service/stats.c checks
 * that the numbers are too. */
const char *storage_reason_name(enum storage_reason reason)
{
	return vocab_reason_name((unsigned)reason);
}

const char *storage_backend_name(enum storage_backend backend)
{
	const struct backend_ops *ops = backend_get(backend);

	return ops != NULL ? ops->name : "unknown";
}

uint64_t file_cache_clock_ms(void)
{
	return monotime_ns() / 1000000u;
}

/* --- the cache ----------------------------------------------------------- */

struct file_cache *file_cache_new(void)
{
	struct file_cache *cache;
	int r;

	/* Every copy out of a mapping is guarded; without the handler a
	 * truncated file would kill the daemon. */
	r = guard_install();
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	cache = calloc(1, sizeof(*cache));
	if (cache == NULL)
		return NULL;
	cache->nbuckets = CACHE_MIN_BUCKETS;
	cache->buckets = calloc(cache->nbuckets, sizeof(*cache->buckets));
	if (cache->buckets == NULL) {
		free(cache);
		return NULL;
	}
	/* No limits until file_cache_set_limits: the cache keeps what it
	 * opened. */
	cache->limits = (struct storage_limits){
		.max_mapped_bytes = 0,
		.max_files = 0,
		.idle_unmap_ms = 0,
		.network_fs_mmap = false,
	};
	file_cache_idle_init(&cache->idle_mapped);
	file_cache_idle_init(&cache->idle_unmapped);
	cache->watch_fd = fplat_watch_new();
	return cache;
}

struct file_cache *file_cache_free(struct file_cache *cache)
{
	if (cache == NULL)
		return NULL;
	while (cache->all != NULL)
		file_cache_entry_free(cache, cache->all);
	file_cache_copies_free(cache);
	if (cache->watch_fd >= 0)
		fplat_watch_free(cache->watch_fd);
	free(cache->buckets);
	free(cache);
	return NULL;
}

void file_cache_close(struct file_cache *cache, struct storage_handle *h)
{
	struct file_entry *e;

	if (cache == NULL || h == NULL || h->entry == NULL)
		return;
	e = h->entry;
	h->entry = NULL;
	if (e->refs == 0)
		return;	/* closed twice: never drive the count below zero */
	e->refs--;
	if (h->job && e->job_refs > 0)
		e->job_refs--;
	if (e->refs > 0)
		return;
	/*
	 * Refcount invariant: a cached entry outlives its handles (that is
	 * the point of the cache); a stale or private one is unreachable for
	 * new opens, so its last handle frees it.  So does a cached one
	 * whose file has been deleted (or replaced by rename): no path leads
	 * to it any more, and our descriptor would pin its blocks.
	 */
	/* One made past max_files was never kept: it goes with its last
	 * handle, whatever has become idle since. */
	if (!e->hashed || e->unkept) {
		file_cache_entry_free(cache, e);
		return;
	}
	/* Where a mapping would keep writers from truncating the file
	 * (Windows), an idle entry keeps its handle, not its view: the next
	 * open maps the file again. */
	if (!FPLAT_KEEP_IDLE_MAPPINGS && e->file.map != NULL) {
		cache->ctr.mappings--;
		cache->ctr.mapped_bytes -= e->file.map_len;
		backend_get(STORAGE_BACKEND_MMAP)->detach(&e->file);
	}
	/* Idle now, and the most recently used of the idle; watched from
	 * here on, so that checking the link count after idle_push misses
	 * no deletion. */
	file_cache_idle_push(cache, e);
	if (file_cache_entry_unlinked(e) == 1) {
		file_cache_entry_free(cache, e);
		return;
	}
	/* If readers held the cache over its limits (a required mapping,
	 * lowered limits), this is the first moment something may go. */
	file_cache_trim(cache);
}

/* h is open, so its entry has a handle and is on no idle list: the new
 * reference keeps it off (and out of the budget's reach) until the last
 * of them closes. */
void storage_handle_dup(const struct storage_handle *h, struct storage_handle *out)
{
	*out = *h;
	out->job = true;
	if (h->entry != NULL) {
		h->entry->refs++;
		h->entry->job_refs++;
	}
}

void file_cache_counters(const struct file_cache *cache, struct storage_counters *out)
{
	if (out == NULL)
		return;
	if (cache == NULL) {
		*out = (struct storage_counters){ 0 };
		return;
	}
	*out = cache->ctr;
}

void file_cache_reset_counters(struct file_cache *cache)
{
	struct storage_counters state;

	if (cache == NULL)
		return;
	state = (struct storage_counters){
		.entries = cache->ctr.entries,
		.mappings = cache->ctr.mappings,
		.mapped_bytes = cache->ctr.mapped_bytes,
	};
	cache->ctr = state;
}
