/* SPDX-License-Identifier: MIT */
/*
 * file_list.c - listing and eviction of the cache's entries (storage.h):
 * file_cache_foreach with each file's residency (mincore), and the
 * evictions asked for by an administrator, all or by file or by path.
 *
 * What it is for: describe every entry, stale and private ones included,
 * and drop cached entries that no handle holds.
 *
 * What it must not do: include libevent or protobuf headers, log; free an
 * entry with handles (a reader may be copying out of its mapping), or
 * count evictions other than cache->ctr.evictions.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1	/* readlink, mincore; config.h defines it under autotools */
#endif

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "daemon/storage/storage_priv.h"
#include "daemon/storage/storage.h"

/* What a kept copy of id is, into info. */
static void copy_info(struct file_cache *cache, const struct file_id *id,
		      struct storage_entry_info *info, uint64_t now)
{
	const struct storage_copy *c = file_cache_copy_of(cache, id);

	if (c == NULL)
		return;
	info->copy_size = c->size;
	info->copy_age_ms = now > c->filled_ns ? (now - c->filled_ns) / 1000000u : 0;
}

/* Whether an entry of the list is of id. */
static bool copy_listed(struct file_cache *cache, const struct file_id *id)
{
	const struct file_entry *e;

	for (e = cache->all; e != NULL; e = e->all_next)
		if (e->id.dev == id->dev && e->id.ino == id->ino && e->id.ino_hi == id->ino_hi)
			return true;
	return false;
}

/* The kept copies no entry lists, as rows of their own: how many. */
static size_t list_copies(struct file_cache *cache, size_t skip, bool more,
			  bool (*cb)(const struct storage_entry_info *info, void *arg), void *arg,
			  uint64_t now)
{
	const struct storage_copy *c;
	size_t total = 0;

	for (c = cache->copies; c != NULL; c = c->next) {
		struct storage_entry_info info = { 0 };

		if (!c->kept || copy_listed(cache, &c->id))
			continue;
		if (total++ < skip || !more)
			continue;
		snprintf(info.path, sizeof info.path, "%s", c->path);
		info.size = c->size;
		info.dev = c->id.dev;
		info.ino = c->id.ino;
		info.last_reason = STORAGE_REASON_NETWORK_FS;
		snprintf(info.fs, sizeof info.fs, "%s", c->fs);
		info.network = true;
		info.private_entry = true;	/* not a cached entry, not stale */
		info.idle_ms = now > c->used_ns ? (now - c->used_ns) / 1000000u : 0;
		info.resident_pct = 100;
		info.resident_bytes = c->size;
		copy_info(cache, &c->id, &info, now);
		more = cb(&info, arg);
	}
	return total;
}

size_t file_cache_foreach(struct file_cache *cache, size_t skip,
			  bool (*cb)(const struct storage_entry_info *info, void *arg), void *arg)
{
	uint64_t now = monotime_ns();
	struct file_entry *e;
	size_t total = 0;
	bool more = true;

	if (cache == NULL)
		return 0;
	for (e = cache->all; e != NULL; e = e->all_next) {
		struct storage_entry_info info = { 0 };
		struct file_stat st = { .size = 0 };

		if (total++ < skip || !more)
			continue;	/* counted, not described */
		(void)fplat_path(e->file.fd, info.path, sizeof info.path);
		info.size = fplat_stat(e->file.fd, &st) == 0 ? st.size : 0;
		info.dev = e->id.dev;
		info.ino = e->id.ino;
		info.mapped_length = e->file.map != NULL ? e->file.map_len : 0;
		info.last_reason = e->last_reason;
		info.handles = e->refs - e->job_refs;
		info.cached = e->hashed;
		info.private_entry = e->private_entry;
		snprintf(info.fs, sizeof info.fs, "%s", e->fs_name);
		info.network = e->fs_network;
		info.hits = e->hits;
		info.bytes = e->bytes;
		/* clients' grants: the table's share is no handle */
		info.direct_handles = e->lease_refs - e->lease_job_refs;
		info.direct_reads = e->direct_reads;
		info.direct_bytes = e->direct_bytes;
		info.ways = e->ways;
		info.idle_ms = now > e->last_use_ns ? (now - e->last_use_ns) / 1000000u : 0;
		info.resident_pct = S_ISREG(st.mode) && e->fs != FS_PSEUDO ?
				    fplat_resident(e->file.fd, e->file.map, e->file.map_len,
						   info.size, &info.resident_bytes) : -1;
		copy_info(cache, &e->id, &info, now);
		more = cb(&info, arg);
	}
	return total + list_copies(cache, skip > total ? skip - total : 0, more, cb, arg, now);
}

static void evict_one(struct file_cache *cache, struct file_entry *e, struct storage_evicted *out)
{
	if (e->refs > e->job_refs) {
		out->busy++;
		return;
	}
	out->files++;
	out->mapped_bytes += e->file.map != NULL ? e->file.map_len : 0;
	cache->ctr.evictions++;
	if (e->refs > 0) {
		/* only background work holds it: it stops at its next
		 * chunk or step, and its last close frees the entry */
		__atomic_store_n(&e->fold_off, 1, __ATOMIC_RELAXED);
		file_cache_unhash(cache, e);
		return;
	}
	file_cache_entry_free(cache, e);
}

int file_cache_evict(struct file_cache *cache, bool all, uint64_t dev, uint64_t ino,
		     struct storage_evicted *out)
{
	struct file_entry *e, *next;

	*out = (struct storage_evicted){ 0 };
	if (cache == NULL)
		return -EINVAL;
	if (!all) {
		struct file_id id = { .dev = dev, .ino = ino, .ino_hi = 0 };

		e = file_cache_find(cache, &id);
		if (e == NULL && FPLAT_ID_WIDE) {
			/* File ids wider than 64 bits (ReFS): the low 64
			 * bits, which listings show, name the file. */
			for (e = cache->all; e != NULL; e = e->all_next)
				if (e->hashed && e->id.dev == dev && e->id.ino == ino)
					break;
		}
		/* the copy of a network file goes too (file_copy.c): its
		 * clients keep the one they map */
		if (file_cache_copy_drop(cache, dev, ino) && e == NULL) {
			out->files++;
			cache->ctr.evictions++;
			return 0;
		}
		if (e == NULL)
			return -ENOENT;
		evict_one(cache, e, out);
		return 0;
	}
	out->files += file_cache_copies_drop(cache);
	/* stale entries always have handles (the last close frees them), so
	 * only cached ones can go */
	for (e = cache->all; e != NULL; e = next) {
		next = e->all_next;
		if (e->hashed)
			evict_one(cache, e, out);
	}
	return 0;
}

/* Whether e's descriptor is named path now, or was before the file was
 * deleted (readlink says "PATH (deleted)"). */
static bool entry_named(const struct file_entry *e, const char *path)
{
	static const char deleted[] = " (deleted)";
	char name[4096 + sizeof deleted];	/* PATH_MAX on Linux */
	size_t plen = strlen(path);
	int n;

	n = fplat_path(e->file.fd, name, sizeof name);
	if (n < 0)
		return false;
	if ((size_t)n == plen && fplat_path_same(name, path, plen))
		return true;
	return (size_t)n == plen + sizeof deleted - 1 && fplat_path_same(name, path, plen) &&
	       strcmp(name + plen, deleted) == 0;
}

int file_cache_evict_path(struct file_cache *cache, const char *path,
			  struct storage_evicted *out)
{
	struct file_entry *e, *next;
	bool found = false;

	*out = (struct storage_evicted){ 0 };
	if (cache == NULL || path == NULL || !fplat_path_absolute(path))
		return -EINVAL;
	for (e = cache->all; e != NULL; e = next) {
		next = e->all_next;
		if (e->hashed && entry_named(e, path)) {
			found = true;
			evict_one(cache, e, out);
		}
	}
	return found ? 0 : -ENOENT;
}
