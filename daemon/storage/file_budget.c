/* SPDX-License-Identifier: MIT */
/*
 * file_budget.c - what the file cache keeps: the budget (max_files,
 * max_mapped_bytes), the limits that set it, the sweep of entries idle
 * too long, and the drop of idle entries whose file was deleted (inotify,
 * or the sweep for those no watch covers).
 *
 * What it must not do: drop an entry that has a handle (a reader may be
 * copying out of its mapping), or walk a list on a read: it runs at open,
 * close, a limits change, the sweep and inotify's notice only.
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

#include "daemon/storage/storage_priv.h"
#include "daemon/storage/storage.h"

/* --- the budget -------------------------------------------------------------- */

/*
 * Only idle entries are ever dropped here: an entry with a handle may have
 * a reader copying out of its mapping (on a worker, through a
 * storage_handle_dup reference), and idle entries have no handle by
 * definition.  Each step drops one entry, so the cost is what is dropped.
 */

/* Whether room more kept entries would exceed max_files. */
static bool files_over(const struct file_cache *cache, uint64_t room)
{
	uint64_t max = cache->limits.max_files;

	return max != 0 && (room > max || cache->nkept > max - room);
}

/* Drops idle entries, least recently used first, until room more kept
 * entries fit under max_files; whether they do. */
bool file_cache_trim_files(struct file_cache *cache, uint64_t room)
{
	while (files_over(cache, room)) {
		struct file_entry *e = file_cache_idle_oldest(cache);

		if (e == NULL)
			return false;
		cache->ctr.evictions_lru++;
		file_cache_entry_free(cache, e);
	}
	return true;
}

/* Whether a new mapping of room bytes would exceed max_mapped_bytes. */
static bool mapped_over(const struct file_cache *cache, uint64_t room)
{
	uint64_t max = cache->limits.max_mapped_bytes;

	return max != 0 && (room > max || cache->ctr.mapped_bytes > max - room);
}

/* Drops idle mapped entries, least recently used first, until a new
 * mapping of room bytes fits under max_mapped_bytes; whether it does.
 * Unmapped idle entries stay: dropping them frees no mapped bytes. */
static bool trim_mapped(struct file_cache *cache, uint64_t room)
{
	while (mapped_over(cache, room)) {
		struct file_entry *e = file_cache_idle_tail(&cache->idle_mapped);

		if (e == NULL)
			return false;
		cache->ctr.evictions_lru++;
		file_cache_entry_free(cache, e);
	}
	return true;
}

/*
 * Makes room for a new mapping of len bytes; whether it fits.  When even
 * dropping every idle mapping would not make it fit (the rest have
 * readers, or len alone is over the budget), drops nothing, since the
 * opener falls back to pread; unless the mapping will be made anyway
 * (force): then drops what it can, to stay as close to the budget as the
 * readers allow.
 */
bool file_cache_make_room_mapped(struct file_cache *cache, uint64_t len, bool force)
{
	uint64_t max = cache->limits.max_mapped_bytes;
	uint64_t busy = cache->ctr.mapped_bytes - cache->idle_mapped_bytes;

	if (max == 0)
		return true;
	if (!force && (len > max || busy > max - len))
		return false;
	return trim_mapped(cache, len);
}

/* Back under the limits as far as idle entries allow. */
void file_cache_trim(struct file_cache *cache)
{
	(void)file_cache_trim_files(cache, 0);
	(void)trim_mapped(cache, 0);
}

void file_cache_set_limits(struct file_cache *cache, const struct storage_limits *limits)
{
	if (cache == NULL || limits == NULL)
		return;
	cache->limits = *limits;
	file_cache_copies_trim(cache);	/* a lowered copy budget, at once */
	/* A lowered budget applies now, as far as idle entries allow; the
	 * rest follows as readers close (file_cache_close trims). */
	file_cache_trim(cache);
}

/* Drops the idle entries of one list idle longer than idle_ms at now_ms.
 * The list is sorted by idle_since (oldest at the tail), so the first
 * entry young enough ends the walk. */
static void sweep_list(struct file_cache *cache, struct lru_node *list,
		       uint64_t now_ms, uint64_t idle_ms)
{
	struct file_entry *e;

	while ((e = file_cache_idle_tail(list)) != NULL) {
		uint64_t since_ms = e->idle_since_ns / 1000000u;

		/* A now_ms before since_ms (a caller on another clock, or
		 * an old timestamp) drops nothing rather than wrap. */
		if (now_ms <= since_ms || now_ms - since_ms <= idle_ms)
			break;
		cache->ctr.evictions_idle++;
		file_cache_entry_free(cache, e);
	}
}

/* Frees the idle entries of list whose file is gone; with only_unwatched,
 * just those no watch reports. */
static void drop_unlinked(struct file_cache *cache, struct lru_node *list, bool only_unwatched,
			  int wd)
{
	struct lru_node *n, *next;

	for (n = list->next; n != list; n = next) {
		struct file_entry *e = file_cache_entry_of_lru(n);

		next = n->next;
		if (only_unwatched ? !e->unwatched : e->wd != wd)
			continue;
		if (file_cache_entry_unlinked(e) == 1) {
			cache->ctr.evictions_deleted++;
			file_cache_entry_free(cache, e);
		}
	}
}

int file_cache_watch_fd(const struct file_cache *cache)
{
	return cache != NULL ? cache->watch_fd : -1;
}

/* A watch says its file's links changed. */
static void notice_one(int wd, void *arg)
{
	struct file_cache *cache = arg;

	drop_unlinked(cache, &cache->idle_mapped, false, wd);
	drop_unlinked(cache, &cache->idle_unmapped, false, wd);
}

void file_cache_notice(struct file_cache *cache)
{
	if (cache == NULL || cache->watch_fd < 0)
		return;
	fplat_watch_read(cache->watch_fd, notice_one, cache);
}

void file_cache_sweep(struct file_cache *cache, uint64_t now_ms)
{
	if (cache == NULL)
		return;
	if (cache->unwatched_idle > 0) {
		drop_unlinked(cache, &cache->idle_mapped, true, -1);
		drop_unlinked(cache, &cache->idle_unmapped, true, -1);
	}
	if (cache->limits.idle_unmap_ms == 0)
		return;
	sweep_list(cache, &cache->idle_mapped, now_ms, cache->limits.idle_unmap_ms);
	sweep_list(cache, &cache->idle_unmapped, now_ms, cache->limits.idle_unmap_ms);
}
