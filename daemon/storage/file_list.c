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
		info.direct_handles = e->lease_refs;
		info.direct_reads = e->direct_reads;
		info.direct_bytes = e->direct_bytes;
		info.ways = e->ways;
		info.idle_ms = now > e->last_use_ns ? (now - e->last_use_ns) / 1000000u : 0;
		info.resident_pct = S_ISREG(st.mode) && e->fs != FS_PSEUDO ?
				    fplat_resident(e->file.fd, e->file.map, e->file.map_len,
						   info.size, &info.resident_bytes) : -1;
		more = cb(&info, arg);
	}
	return total;
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
		if (e == NULL)
			return -ENOENT;
		evict_one(cache, e, out);
		return 0;
	}
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
