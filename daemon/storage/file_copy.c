/* SPDX-License-Identifier: MIT */
/*
 * file_copy.c - copies in memory of files on network file systems
 * (storage.h, "Copies of network files"): begun by a warm of the whole
 * file, filled by the warm's steps with eight 1 MiB reads in flight
 * (fplat_read_into), sealed, and passed to clients at OPEN (and with the
 * WARM reply), who map it read-only.  Kept by file identity and
 * validators, independent of entries: a FUSE file's entries are private,
 * one per handle, gone at its close, where a data loader opens its shards
 * again each epoch.  Bounded by network_copy_max, least recently given
 * out dropped first.
 *
 * What it must not do: give out a copy whose file changed (size, mtime or
 * ctime differ from the fstat taken at the open asking for it), or of
 * another mount's file (copy_find: the mount id, not st_dev); keep one
 * that a read came short in (the file shrank while it was filled); unmap
 * or change what a client maps (sealed: a client's mapping outlives the
 * copy's place here).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "daemon/storage/storage_priv.h"
#include "daemon/storage/storage.h"

static bool copy_current(const struct storage_copy *c, const struct file_stat *st)
{
	return c->size == st->size && c->mtime_ns == st->mtime_ns && c->ctime_ns == st->ctime_ns;
}

static bool copy_is_of(const struct storage_copy *c, const struct file_id *id)
{
	return !c->dropped && c->id.dev == id->dev && c->id.ino == id->ino &&
	       c->id.ino_hi == id->ino_hi;
}

static struct storage_copy *copy_find_any(struct file_cache *cache, const struct file_id *id)
{
	struct storage_copy *c;

	for (c = cache->copies; c != NULL; c = c->next)
		if (copy_is_of(c, id))
			return c;
	return NULL;
}

/* The copy of id read from mount mnt_id.  st_dev alone is no identity: a
 * FUSE mount's device number is reused by the next mount, whose server
 * (anyone's: -o subtype=sshfs) can present the same inode, size and
 * times; the mount id (fplat_mount_id, unique since Linux 6.8) is not. */
static struct storage_copy *copy_find(struct file_cache *cache, const struct file_id *id,
				      uint64_t mnt_id)
{
	struct storage_copy *c;

	for (c = cache->copies; c != NULL; c = c->next)
		if (copy_is_of(c, id) && c->mnt_id == mnt_id)
			return c;
	return NULL;
}

static void copy_unlink(struct file_cache *cache, struct storage_copy *c)
{
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		cache->copies = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
}

/*
 * Held copies.  A client maps the copy it is given until it closes the
 * file, and a process may keep the descriptor or the mapping as long as
 * it likes: the memory stays, charged to hotmapd, after hotmapd drops
 * the copy.  So a dropped copy that was given out is charged to each uid
 * it was given to until its memfd's watch says nobody holds it any more
 * (copy_released); a uid whose charge would pass
 * network_copy_max with a copy is not given it (storage_copy_get).
 */
static void copy_hold(struct file_cache *cache, const struct storage_copy *c)
{
	struct storage_copy_held *k = calloc(1, sizeof *k);

	if (k == NULL)
		return;	/* out of memory: charged to nobody */
	if (!cache->held_watch_made) {	/* its own: read only when a charge is asked */
		cache->held_watch = fplat_watch_new();
		cache->held_watch_made = true;
	}
	k->wd = fplat_copy_watch(cache->held_watch, c->fd);	/* -1: charged for good */
	k->size = c->size;
	memcpy(k->uids, c->given, sizeof k->uids);
	k->nuids = c->ngiven;
	k->next = cache->held;
	cache->held = k;
	cache->ctr.copy_held_bytes += k->size;
}

static void copy_released(int wd, void *arg)
{
	struct file_cache *cache = arg;
	struct storage_copy_held **p, *k;

	for (p = &cache->held; (k = *p) != NULL; p = &k->next)
		if (k->wd >= 0 && k->wd == wd) {
			*p = k->next;
			cache->ctr.copy_held_bytes -= k->size;
			free(k);
			return;
		}
}

/* Bytes of dropped copies uid may still hold. */
static uint64_t copy_held_by(struct file_cache *cache, uint32_t uid)
{
	const struct storage_copy_held *k;
	uint64_t n = 0;
	unsigned i;

	/* what was let go since: a memfd's last holder gone queues its
	 * event at once (the close's or munmap's own return) */
	if (cache->held != NULL && cache->held_watch_made && cache->held_watch >= 0)
		fplat_watch_read(cache->held_watch, copy_released, cache);
	for (k = cache->held; k != NULL; k = k->next)
		for (i = 0; i < k->nuids; i++)
			if (k->uids[i] == uid) {
				n += k->size;
				break;
			}
	return n;
}

static void copy_free(struct file_cache *cache, struct storage_copy *c)
{
	if (c->kept && c->ngiven > 0)
		copy_hold(cache, c);	/* before its descriptor goes */
	copy_unlink(cache, c);
	if (!c->abandoned)
		cache->ctr.copy_bytes -= c->size;
	if (c->kept)
		cache->ctr.copies--;
	fplat_copy_free(c->fd, c->map, c->size);
	free(c);
}

/* Drops c: now when kept; a filling one at its end (its job writes it). */
static void copy_drop(struct file_cache *cache, struct storage_copy *c)
{
	if (c->kept)
		copy_free(cache, c);
	else
		c->dropped = true;
}

/* The kept copy given out least recently; NULL: none. */
static struct storage_copy *copy_oldest(struct file_cache *cache)
{
	struct storage_copy *c, *old = NULL;

	for (c = cache->copies; c != NULL; c = c->next)
		if (c->kept && (old == NULL || c->used_ns < old->used_ns))
			old = c;
	return old;
}

/* Drops kept copies, least recently used first, until need more bytes
 * fit network_copy_max; whether they do. */
static bool copy_room(struct file_cache *cache, uint64_t need)
{
	uint64_t max = cache->limits.network_copy_max;
	struct storage_copy *c;

	if (max == 0 || need > max)
		return false;
	while (cache->ctr.copy_bytes > max - need && (c = copy_oldest(cache)) != NULL) {
		cache->ctr.copy_evictions++;
		copy_free(cache, c);
	}
	return cache->ctr.copy_bytes <= max - need;
}

unsigned file_cache_copies_drop(struct file_cache *cache)
{
	struct storage_copy *c, *next;
	unsigned n = 0;

	for (c = cache->copies; c != NULL; c = next) {
		next = c->next;	/* copy_drop frees c alone */
		if (!c->dropped) {
			copy_drop(cache, c);
			n++;
		}
	}
	return n;
}

void file_cache_copies_trim(struct file_cache *cache)
{
	(void)copy_room(cache, 0);
	if (cache->limits.network_copy_max == 0)
		(void)file_cache_copies_drop(cache);
}

void file_cache_copies_free(struct file_cache *cache)
{
	struct storage_copy_held *k;

	while (cache->copies != NULL) {
		/* a filling one's job is gone with the workers by now */
		copy_free(cache, cache->copies);
	}
	while ((k = cache->held) != NULL) {
		cache->held = k->next;
		free(k);
	}
	if (cache->held_watch_made && cache->held_watch >= 0)
		fplat_watch_free(cache->held_watch);
	cache->held_watch_made = false;
}

bool file_cache_copy_drop(struct file_cache *cache, uint64_t dev, uint64_t ino)
{
	struct storage_copy *c, *next;
	bool any = false;

	for (c = cache->copies; c != NULL; c = next) {
		next = c->next;
		if (!c->dropped && c->id.dev == dev && c->id.ino == ino) {
			copy_drop(cache, c);
			any = true;
		}
	}
	return any;
}

const struct storage_copy *file_cache_copy_of(struct file_cache *cache, const struct file_id *id)
{
	const struct storage_copy *c = copy_find_any(cache, id);	/* a listing's */

	return c != NULL && c->kept ? c : NULL;
}

/*
 * Whether h's file is one the daemon copies: on a network file system by
 * the list (not any FUSE), read with pread for it, regular, not empty;
 * and *st, the file as h's entry says it was at its last open (the
 * validators the open compared: a shared entry whose file changed is not
 * reused).  No system call: this runs on the loop, and an fstat there
 * would wait for a server that does not answer.
 */
static bool copy_wanted(const struct storage_handle *h, struct file_stat *st)
{
	const struct file_entry *e = h->entry;

	if (e == NULL || !e->fs_network || h->backend != STORAGE_BACKEND_PREAD ||
	    h->reason != STORAGE_REASON_NETWORK_FS || e->size == 0)
		return false;	/* fs_network: set for regular files only */
	if (e->mnt_id == 0)
		return false;	/* its mount could not be told: no copy (copy_find) */
	*st = (struct file_stat){ .id = e->id, .size = e->size, .mtime_ns = e->mtime_ns,
				  .ctime_ns = e->ctime_ns };
	return true;
}

/*
 * Fills past their deadline (network_copy_fill_ms): abandoned, their
 * bytes no longer counted (a FUSE server that stops answering holds a
 * worker in a read, never the other copies); freed at their job's end.
 */
static void copy_sweep(struct file_cache *cache)
{
	uint64_t ms = cache->limits.network_copy_fill_ms != 0 ?
		      cache->limits.network_copy_fill_ms : 60000u, now = monotime_ns();
	struct storage_copy *c;

	for (c = cache->copies; c != NULL; c = c->next)
		if (!c->kept && !c->abandoned && now - c->begun_ns > ms * 1000000u) {
			c->abandoned = true;
			c->dropped = true;	/* its next step stops */
			cache->ctr.copy_bytes -= c->size;
		}
}

/*
 * Whether a fill of need bytes for uid may begin: none of uid's in
 * flight (one uid's stalled server holds one fill, not the budget), and
 * the fills in flight within network_copy_max.  Nothing kept is dropped
 * for it: the finished copy makes its room (storage_copy_end).
 */
static bool copy_may_fill(struct file_cache *cache, uint64_t need, uint32_t uid)
{
	uint64_t max = cache->limits.network_copy_max, filling = 0;
	const struct storage_copy *c;

	for (c = cache->copies; c != NULL; c = c->next) {
		if (c->kept || c->abandoned)
			continue;
		if (c->uid == uid)
			return false;
		filling += c->size;
	}
	return max != 0 && need <= max && filling <= max - need;
}

struct storage_copy *storage_copy_begin(struct file_cache *cache, struct storage_handle *h,
					uint64_t offset, uint64_t len, uint32_t uid)
{
	struct storage_copy *c;
	struct file_stat st;

	if (cache == NULL || h == NULL || cache->limits.network_copy_max == 0 ||
	    !copy_wanted(h, &st))
		return NULL;
	if (offset != 0 || len < st.size)
		return NULL;	/* a part of the file: warmed as before */
	c = copy_find(cache, &st.id, h->entry->mnt_id);
	if (c != NULL && (!c->kept || copy_current(c, &st)))
		return NULL;	/* being filled, or there already */
	if (c != NULL && st.ctime_ns < c->ctime_ns)
		return NULL;	/* h opened an older version: says nothing of the copy's */
	if (c != NULL) {
		cache->ctr.copy_drops++;	/* the file changed */
		copy_drop(cache, c);
	}
	copy_sweep(cache);
	if (!copy_may_fill(cache, st.size, uid))
		return NULL;
	c = calloc(1, sizeof *c);
	if (c == NULL)
		return NULL;
	if (fplat_copy_new(st.size, &c->fd, &c->map) < 0) {
		free(c);
		return NULL;
	}
	c->id = st.id;
	c->mnt_id = h->entry->mnt_id;
	c->size = st.size;
	c->mtime_ns = st.mtime_ns;
	c->ctime_ns = st.ctime_ns;
	c->begun_s = (int64_t)time(NULL);
	c->begun_ns = monotime_ns();
	c->uid = uid;
	snprintf(c->fs, sizeof c->fs, "%s", h->entry->fs_name);
	(void)fplat_path(h->entry->file.fd, c->path, sizeof c->path);	/* /proc: no server */
	c->next = cache->copies;
	if (c->next != NULL)
		c->next->prev = c;
	cache->copies = c;
	cache->ctr.copy_bytes += c->size;
	return c;
}

/* On the worker: whether the file is still the one the copy is of. */
static bool copy_still(const struct storage_handle *h, const struct storage_copy *c)
{
	struct file_stat st;

	return fplat_stat(h->entry->file.fd, &st) == 0 && copy_current(c, &st);
}

ssize_t storage_copy_fill(const struct storage_handle *h, struct storage_copy *c,
			  uint64_t offset, uint64_t len)
{
	uint64_t n;

	if (offset >= c->size)
		return 0;
	n = len < c->size - offset ? len : c->size - offset;
	/* kept only when whole and of the file as it was from the first
	 * read to the last: a file changed while it was read may have been
	 * read half old, half new (fstat here, on the worker: a server that
	 * does not answer holds a worker, never the loop) */
	if (c->dropped || __atomic_load_n(&c->failed, __ATOMIC_RELAXED) ||
	    (offset == 0 && !copy_still(h, c)) ||
	    fplat_read_into(h->entry->file.fd, offset, n, (uint8_t *)c->map + offset) < 0 ||
	    (offset + n == c->size && !copy_still(h, c))) {
		__atomic_store_n(&c->failed, 1, __ATOMIC_RELAXED);
		return -EIO;
	}
	/* the steps of one job run one after another, in order */
	c->filled = offset + n;
	return (ssize_t)n;
}

bool storage_copy_end(struct file_cache *cache, const struct storage_handle *h,
		      struct storage_copy *c)
{
	bool ok;

	if (c == NULL)
		return false;
	ok = !c->dropped && !c->failed && c->filled == c->size;	/* storage_copy_fill */
	if (c->abandoned && h != NULL && h->entry != NULL)
		h->entry->copy_why = STORAGE_COPY_SLOW;
	if (ok && c->mtime_ns / 1000000000 >= c->begun_s - STORAGE_COPY_RACY_S) {
		/* the racy timestamp: a file changed in the second its mtime
		 * says (sshfs: whole seconds, ctime the same) may change again
		 * with the same size and times, before or while it was read:
		 * kept only a file older than its fill by more than that */
		ok = false;
		if (h != NULL && h->entry != NULL)
			h->entry->copy_why = STORAGE_COPY_RACY;
	}
	if (ok)	/* its room: the copies given out least recently go */
		ok = copy_room(cache, 0);
	if (ok) {
		ok = fplat_copy_seal(c->fd, c->map, c->size) == 0;
		c->map = NULL;	/* unmapped by the seal, sealed or not */
	}
	if (!ok) {
		copy_free(cache, c);
		return false;
	}
	c->kept = true;
	if (h != NULL && h->entry != NULL)
		h->entry->copy_why = STORAGE_COPY_WHY_NONE;
	c->filled_ns = monotime_ns();
	c->used_ns = c->filled_ns;
	cache->ctr.copies++;
	cache->ctr.copy_fills++;
	return true;
}

int storage_copy_get(struct file_cache *cache, const struct storage_handle *h,
		     struct storage_copy_info *info, uint32_t uid)
{
	struct storage_copy *c;
	struct file_stat st;
	bool given = false;
	unsigned i;
	int fd;

	/* the file as this handle's open found it (copy_wanted): close-to-open */
	if (cache == NULL || h == NULL || cache->copies == NULL || !copy_wanted(h, &st))
		return -ENOENT;
	c = copy_find(cache, &st.id, h->entry->mnt_id);
	if (c == NULL || !c->kept)
		return -ENOENT;
	if (!copy_current(c, &st)) {
		/* the file changed since it was copied, as this handle's open
		 * found it; a handle opened before the copy's version (its
		 * ctime older) says nothing about the copy */
		if (st.ctime_ns >= c->ctime_ns) {
			cache->ctr.copy_drops++;
			copy_free(cache, c);
		}
		return -ENOENT;
	}
	for (i = 0; i < c->ngiven; i++)
		given = given || c->given[i] == uid;
	if (!given && c->ngiven == STORAGE_COPY_UIDS)
		return -ENOENT;	/* its charge could not be told */
	if (!given && copy_held_by(cache, uid) + c->size > cache->limits.network_copy_max) {
		cache->ctr.copy_held_refusals++;
		h->entry->copy_why = STORAGE_COPY_HELD;
		return -ENOENT;
	}
	fd = fplat_copy_dup(c->fd);
	if (fd < 0)
		return fd;
	if (!given)
		c->given[c->ngiven++] = uid;
	h->entry->copy_why = STORAGE_COPY_WHY_NONE;
	c->used_ns = monotime_ns();
	cache->ctr.copy_hits++;
	info->size = c->size;
	info->age_ms = (c->used_ns - c->filled_ns) / 1000000u;
	return fd;
}

const char *storage_copy_why(const struct storage_handle *h)
{
	if (h == NULL || h->entry == NULL)
		return NULL;
	switch (h->entry->copy_why) {
	case STORAGE_COPY_RACY:
		return "not copied: changed within 2 s of its copy";
	case STORAGE_COPY_SLOW:
		return "not copied: its fill was too slow";
	case STORAGE_COPY_HELD:
		return "no copy: its uid holds dropped copies past the budget";
	default:
		return NULL;
	}
}
