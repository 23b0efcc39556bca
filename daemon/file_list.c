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
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_cache_priv.h"
#include "storage.h"

/* Percent of the file's pages in memory: the mapping's when there is one
 * (what a read would copy without waiting), else the page cache's through
 * a mapping made for the question.  -1 when it cannot be told.  *bytes:
 * the bytes of the file on those pages, 0 when it cannot be told. */
static int entry_resident_percent(const struct file_entry *e, uint64_t size, uint64_t *bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len, n, i, k, chunk, in = 0;
	unsigned char vec[1024];	/* pages per mincore call: bounded memory */
	void *map = e->file.map;
	bool own = false;
	int rc = 0;

	*bytes = 0;
	if (size == 0)
		return 100;
	if (map != NULL) {
		len = e->file.map_len;
	} else {
		if (size > SIZE_MAX)
			return -1;
		len = (size_t)size;
		map = mmap(NULL, len, PROT_READ, MAP_SHARED, e->file.fd, 0);
		if (map == MAP_FAILED)
			return -1;
		own = true;
	}
	n = (len + page - 1) / page;
	for (i = 0; i < n && rc == 0; i += chunk) {
		chunk = n - i < sizeof vec ? n - i : sizeof vec;
		rc = mincore((char *)map + i * page, chunk * page, vec);
		for (k = 0; rc == 0 && k < chunk; k++)
			in += vec[k] & 1;
	}
	if (own)
		munmap(map, len);
	if (rc != 0 || n == 0)
		return -1;
	/* Whole pages, but the last one may hold less of the file (and the
	 * mapping may be longer than a file that has shrunk since). */
	*bytes = (uint64_t)in * page;
	if (*bytes > len)
		*bytes = len;
	if (*bytes > size)
		*bytes = size;
	return (int)(in * 100 / n);
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
		struct stat st = { 0 };
		char link[64];
		ssize_t n;

		if (total++ < skip || !more)
			continue;	/* counted, not described */
		snprintf(link, sizeof link, "/proc/self/fd/%d", e->file.fd);
		n = readlink(link, info.path, sizeof info.path - 1);
		info.path[n > 0 ? n : 0] = '\0';
		info.size = fstat(e->file.fd, &st) == 0 && st.st_size > 0 ? (uint64_t)st.st_size : 0;
		info.dev = (uint64_t)e->dev;
		info.ino = (uint64_t)e->ino;
		info.mapped_length = e->file.map != NULL ? e->file.map_len : 0;
		info.last_reason = e->last_reason;
		info.handles = e->refs;
		info.cached = e->hashed;
		info.hits = e->hits;
		info.bytes = e->bytes;
		info.direct_handles = e->lease_refs;
		info.direct_reads = e->direct_reads;
		info.direct_bytes = e->direct_bytes;
		info.idle_ms = now > e->last_use_ns ? (now - e->last_use_ns) / 1000000u : 0;
		info.resident_pct = S_ISREG(st.st_mode) && e->fs != FS_PSEUDO ?
				    entry_resident_percent(e, info.size, &info.resident_bytes) : -1;
		more = cb(&info, arg);
	}
	return total;
}

static void evict_one(struct file_cache *cache, struct file_entry *e, struct storage_evicted *out)
{
	if (e->refs > 0) {
		out->busy++;
		return;
	}
	out->files++;
	out->mapped_bytes += e->file.map != NULL ? e->file.map_len : 0;
	cache->ctr.evictions++;
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
		e = file_cache_find(cache, (dev_t)dev, (ino_t)ino);
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
	char link[64], name[PATH_MAX + sizeof deleted];
	size_t plen = strlen(path);
	ssize_t n;

	snprintf(link, sizeof link, "/proc/self/fd/%d", e->file.fd);
	n = readlink(link, name, sizeof name - 1);
	if (n < 0)
		return false;
	name[n] = '\0';
	if (strcmp(name, path) == 0)
		return true;
	return (size_t)n == plen + sizeof deleted - 1 && strncmp(name, path, plen) == 0 &&
	       strcmp(name + plen, deleted) == 0;
}

int file_cache_evict_path(struct file_cache *cache, const char *path,
			  struct storage_evicted *out)
{
	struct file_entry *e, *next;
	bool found = false;

	*out = (struct storage_evicted){ 0 };
	if (cache == NULL || path == NULL || path[0] != '/')
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
