/* SPDX-License-Identifier: MIT */
/*
 * file_io.c - the I/O of the storage core: reads through a handle (inline
 * or detached on a worker, then accounted on the loop), warming, the
 * willneed hint and stat (storage.h).
 *
 * What it is for: check a range as pread(2) would, hand it to the
 * handle's backend, and account what was served; a fault retires the
 * entry so that the next open maps the file anew.
 *
 * What it must not do: include libevent or protobuf headers, log; open,
 * free or drop entries (file_cache.c does); touch the idle lists or the
 * budget.  The *_detached functions run on worker threads: they read the
 * entry but change nothing the loop owns.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1	/* MADV_POPULATE_READ, st_mtim; config.h defines it under autotools */
#endif

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "daemon/storage/backend.h"
#include "daemon/storage/storage_priv.h"
#include "daemon/storage/guard.h"
#include "daemon/storage/storage.h"

/* Checks the range as pread(2) would; may lower *len.  0 or -errno. */
static int check_read(const struct storage_handle *h, const void *dst, size_t *len,
		      uint64_t offset)
{
	if (h == NULL || h->entry == NULL)
		return -EBADF;
	/* Offsets come from clients: check without wrapping, like pread(2)
	 * (negative offset, or offset + len past the largest loff_t). */
	if (offset > INT64_MAX || *len > INT64_MAX - offset)
		return -EINVAL;
	if (offset + *len > CACHE_OFF_MAX)
		return -EOVERFLOW;
	if (*len > SSIZE_MAX)
		*len = SSIZE_MAX;	/* the answer must fit the return type */
	if (dst == NULL && *len > 0)
		return -EFAULT;
	if (backend_get(h->backend) == NULL)
		return -EINVAL;
	return 0;
}

/*
 * Whether a worker is folding a chunk of [offset, offset + len) now (its
 * claim is set, and it is not done): a read that must not wait (the loop
 * thread's) then goes to a worker, since the chunk may be out of memory
 * between its drop and its read back, and a copy out of the mapping would
 * wait for the disk.  (A fold may still start between this look and the
 * copy; its first steps, a window mapped and looked at, take longer than
 * that.)
 */
static bool fold_busy(const struct file_entry *e, uint64_t offset, size_t len)
{
	uint64_t chunk, k, last;

	if (e->fold_claim == NULL || len == 0 || (chunk = fplat_fold_chunk(e->fs_type)) == 0)
		return false;
	last = (offset + len - 1) / chunk;
	for (k = offset / chunk; k <= last && k < e->fold_chunks; k++) {
		uint64_t bit = 1ull << (k % 64);

		if ((__atomic_load_n(&e->fold_claim[k / 64], __ATOMIC_ACQUIRE) & bit) &&
		    !(__atomic_load_n(&e->fold_done[k / 64], __ATOMIC_ACQUIRE) & bit))
			return true;
	}
	return false;
}

ssize_t storage_read_detached(const struct storage_handle *h, void *dst, size_t len,
			      uint64_t offset, struct storage_io *io)
{
	int r = check_read(h, dst, &len, offset);

	if (r < 0)
		return r;
	if (io->nowait && fold_busy(h->entry, offset, len))
		return -EAGAIN;
	return backend_get(h->backend)->read(&h->entry->file, dst, len, offset, io);
}

void storage_read_finish(struct file_cache *cache, struct storage_handle *h,
			 const struct storage_io *io)
{
	if (cache == NULL || h == NULL || h->entry == NULL)
		return;
	cache->ctr.bytes_mmap += io->bytes_mmap;
	cache->ctr.bytes_pread += io->bytes_pread;
	cache->ctr.huge_folds += io->folds;
	cache->ctr.huge_fold_misses += io->fold_misses;
	h->entry->bytes += io->bytes_mmap + io->bytes_pread;
	h->entry->last_use_ns = monotime_ns();
	if (io->faults > 0) {
		/*
		 * SIGBUS recovery: the read was answered by pread, but the
		 * mapping no longer matches the file.  Retire the entry so
		 * the next open maps the file anew; its handles (this one
		 * included) keep it, and its mapping, until they close.
		 */
		cache->ctr.sigbus_recoveries += io->faults;
		file_cache_unhash(cache, h->entry);
	}
}

ssize_t storage_read_nowait(struct file_cache *cache, struct storage_handle *h,
			    void *dst, size_t len, uint64_t offset)
{
	struct storage_io io = { .nowait = true };
	ssize_t r;

	if (cache == NULL)
		return -EBADF;
	r = storage_read_detached(h, dst, len, offset, &io);
	storage_read_finish(cache, h, &io);
	return r;
}

/* Chunks read back in a row, daemon-wide, that stayed small: past
 * FOLD_MISSES_ALL_MAX the kernel gives no file huge folios (Linux before
 * large folios in the page cache, no huge page to be had), and folding
 * stops for good, whatever new entries clients make. */
#define FOLD_MISSES_ALL_MAX	16
static unsigned fold_misses_all;	/* atomic */
static int fold_off_all;		/* atomic */

bool storage_foldable(const struct storage_handle *h)
{
	return h != NULL && h->entry != NULL && h->backend == STORAGE_BACKEND_MMAP &&
	       !__atomic_load_n(&fold_off_all, __ATOMIC_RELAXED) &&
	       h->entry->fold_claim != NULL && h->entry->file.map != NULL &&
	       !__atomic_load_n(&h->entry->fold_off, __ATOMIC_RELAXED);
}

bool storage_cached(const struct storage_handle *h)
{
	const struct file_entry *e = h != NULL ? h->entry : NULL;

	/* A private entry is never in the cache, nor evicted or replaced:
	 * it is there for as long as a client's handle holds it (an open's
	 * warm of a file on FUSE goes on to the end). */
	return e != NULL && (e->hashed || (e->private_entry && e->refs > e->job_refs));
}

bool storage_kept(const struct storage_handle *h)
{
	const struct file_entry *e = h != NULL ? h->entry : NULL;

	return e != NULL && e->hashed && !e->unkept;
}

const char *storage_fs_name(const struct storage_handle *h, bool *network)
{
	*network = h != NULL && h->entry != NULL && h->entry->fs_network;
	return h != NULL && h->entry != NULL ? h->entry->fs_name : "";
}

#define FOLD_HOT_PCT		90
#define FOLD_COLD_RETRY_MS	10000u
/* A file gone through is gone through again, at an open this long after:
 * the kernel reclaims a hot file's folios under memory pressure (the test
 * VM's DAMON pages out page cache it has not seen used), and what is read
 * back in is read in small folios. */
#define FOLD_RECHECK_MS		(10u * 60u * 1000u)

/* The chunks of [first, last] of e that were folded or tried are looked
 * at again by the next fold: the done bit first, so that one folding
 * meanwhile (claim without done) is waited for, never doubled. */
static void fold_forget(struct file_entry *e, size_t first, size_t last)
{
	size_t k;

	for (k = first; k <= last && k < e->fold_chunks; k++) {
		uint64_t bit = 1ull << (k % 64);

		if ((__atomic_load_n(&e->fold_claim[k / 64], __ATOMIC_ACQUIRE) & bit) &&
		    (__atomic_fetch_and(&e->fold_done[k / 64], ~bit, __ATOMIC_ACQ_REL) & bit))
			__atomic_fetch_and(&e->fold_claim[k / 64], ~bit, __ATOMIC_RELEASE);
	}
}

void storage_fold_renew(struct storage_handle *h, uint64_t offset, uint64_t len)
{
	struct file_entry *e = h != NULL ? h->entry : NULL;
	uint64_t chunk, end;

	if (e == NULL || e->fold_claim == NULL || !e->hashed || e->fold_chunks == 0)
		return;	/* an evicted entry's work is stopping */
	__atomic_store_n(&e->fold_misses, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&e->fold_off, 0, __ATOMIC_RELAXED);
	chunk = fplat_fold_chunk(e->fs_type);
	if (chunk == 0 || len == 0 || offset / chunk >= e->fold_chunks)
		return;
	end = len > UINT64_MAX - offset ? UINT64_MAX : offset + len;
	fold_forget(e, (size_t)(offset / chunk), (size_t)((end - 1) / chunk));
}

bool storage_fold_start(struct storage_handle *h, uint64_t *offset)
{
	struct file_entry *e = h != NULL ? h->entry : NULL;
	uint64_t now = monotime_ns();

	if (e == NULL || now < e->fold_retry_ns)
		return false;
	if (e->fold_pass == 2 && now >= e->fold_recheck_ns && e->fold_chunks > 0) {
		/* again, from the start, misses forgiven */
		storage_fold_renew(h, 0, UINT64_MAX);
		e->fold_pass = 0;
		e->fold_next = 0;
	}
	if (!storage_foldable(h))
		return false;
	if (e->fold_pass != 0)
		return false;
	e->fold_pass = 1;
	*offset = e->fold_next;
	return true;
}

void storage_fold_end(struct storage_handle *h, uint64_t reached, bool cold)
{
	struct file_entry *e = h != NULL ? h->entry : NULL;

	if (e == NULL)
		return;
	if (cold)
		e->fold_retry_ns = monotime_ns() + (uint64_t)FOLD_COLD_RETRY_MS * 1000000u;
	if (reached > e->fold_next)
		e->fold_next = reached;
	e->fold_pass = e->fold_next >= e->size ? 2 : 0;
	if (e->fold_pass == 2)
		e->fold_recheck_ns = monotime_ns() + (uint64_t)FOLD_RECHECK_MS * 1000000u;
}

/* Chunks in a row that stay small after a fold before an entry's folds
 * stop: the kernel gives this file no huge folios (no huge page to be
 * had, a file system without large folios), and each try drops a chunk
 * from memory for nothing. */
#define FOLD_MISSES_MAX		4
/* How long a fold waits for a chunk another worker is folding: one
 * chunk's drop and read back, a few milliseconds. */
#define FOLD_WAIT_MS		2000

/* One chunk of e: folded once, by whoever claims it first; the others
 * wait till it is done.  The result of fplat_fold, or -EAGAIN when it was
 * folded (or is left) by another. */
static int fold_chunk(struct file_entry *e, size_t k, uint64_t chunk, bool cold_too)
{
	uint64_t bit = 1ull << (k % 64);
	uint64_t *claim = &e->fold_claim[k / 64], *done = &e->fold_done[k / 64];
	unsigned waited = 0;
	void *own;
	int r;

	for (;;) {
		if (__atomic_load_n(done, __ATOMIC_ACQUIRE) & bit)
			return -EAGAIN;
		if (!(__atomic_fetch_or(claim, bit, __ATOMIC_ACQ_REL) & bit))
			break;
		if (waited++ >= FOLD_WAIT_MS)
			return -EAGAIN;	/* it is only a hint */
		fplat_sleep_ms(1);
	}
	own = e->file.map != NULL && (k + 1) * chunk <= e->file.map_len ?
	      (char *)e->file.map + k * chunk : NULL;
	r = fplat_fold(e->file.fd, k * chunk, own, cold_too);
	if (r == FPLAT_FOLD_COLD)
		__atomic_fetch_and(claim, ~bit, __ATOMIC_RELEASE);	/* another may, later */
	else	/* folded, or tried: never dropped again for this entry */
		__atomic_fetch_or(done, bit, __ATOMIC_RELEASE);
	return r;
}

/* The chunks of [offset, end) wholly inside the file, folded (see
 * storage_warm_detached).  A warm (not fold_only) reads in huge folios
 * what is not in memory: it is to be read anyway; and each chunk of its
 * range is looked at again, whatever an earlier fold found (the kernel
 * may have reclaimed it since, and read it back in small folios): its
 * request forgot them (storage_fold_renew), once, not each step.  Its
 * misses count for the file only: a chunk a client keeps mapped misses
 * at every warm, and the daemon-wide stop is for a kernel that gives no
 * file huge folios, which the open's passes find out. */
static void storage_fold(const struct storage_handle *h, uint64_t offset, uint64_t end,
			 struct storage_io *io)
{
	struct file_entry *e = h->entry;
	uint64_t chunk = fplat_fold_chunk(e->fs_type);
	bool warm = !io->fold_only;
	size_t k;

	if (!storage_foldable(h) || chunk == 0 || end <= offset)
		return;
	for (k = (size_t)(offset / chunk); k < e->fold_chunks && k * chunk < end; k++) {
		int r;

		if (__atomic_load_n(&e->fold_off, __ATOMIC_RELAXED) ||
		    __atomic_load_n(&fold_off_all, __ATOMIC_RELAXED))
			return;
		r = fold_chunk(e, k, chunk, warm);
		if (r == FPLAT_FOLD_DONE || r == FPLAT_FOLD_HUGE) {
			if (r == FPLAT_FOLD_DONE)
				io->folds++;
			__atomic_store_n(&e->fold_misses, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&fold_misses_all, 0, __ATOMIC_RELAXED);
		} else if (r == FPLAT_FOLD_MISSED) {
			io->fold_misses++;
			if (__atomic_add_fetch(&e->fold_misses, 1, __ATOMIC_RELAXED) >= FOLD_MISSES_MAX)
				__atomic_store_n(&e->fold_off, 1, __ATOMIC_RELAXED);
			if (!warm && __atomic_add_fetch(&fold_misses_all, 1, __ATOMIC_RELAXED) >=
			    FOLD_MISSES_ALL_MAX)
				__atomic_store_n(&fold_off_all, 1, __ATOMIC_RELAXED);
		} else if (r == -ENOTSUP || r == -EFAULT) {
			/* the kernel cannot tell; or the file was cut short */
			__atomic_store_n(&e->fold_off, 1, __ATOMIC_RELAXED);
		}
	}
}

ssize_t storage_warm_detached(const struct storage_handle *h, uint64_t offset, uint64_t len,
			      struct storage_io *io)
{
	const struct backend_file *f;
	size_t scratch_len = 1 << 20;
	char *scratch;
	uint64_t size, end, pos;
	int r;

	if (h == NULL || h->entry == NULL)
		return -EBADF;
	f = &h->entry->file;
	r = backend_file_size(f->fd, &size);
	if (r < 0)
		return r;
	if (offset >= size)
		return 0;
	end = len > size - offset ? size : offset + len;
	if (io->fold_only && io->fold_first) {
		uint64_t in;
		int pct = fplat_resident(f->fd, f->map, f->map_len, size, &in);

		if (pct >= 0 && pct < FOLD_HOT_PCT) {
			io->fold_cold = true;
			return 0;	/* ends the job */
		}
	}
	if (io->copy != NULL)
		return storage_copy_fill(h, io->copy, offset, len);	/* file_copy.c */
	if (io->fold)
		storage_fold(h, offset, end, io);
	if (io->fold_only)
		return (ssize_t)(end - offset);
	if (h->backend == STORAGE_BACKEND_MMAP && f->map != NULL && offset < f->map_len) {
		uint64_t mend = end < f->map_len ? end : f->map_len;
		uintptr_t page = (uintptr_t)fplat_page_size();
		uintptr_t start = ((uintptr_t)f->map + offset) & ~(page - 1);

		if (fplat_populate((const char *)f->map + offset, (size_t)(mend - offset)) == 0)
			return (ssize_t)(end - offset);
		/* Older kernels: touch each page.  A fault (the file shrank)
		 * ends the warm early; it is only a hint. */
		for (pos = start; pos < (uintptr_t)f->map + mend; pos += page) {
			char c;

			if (guard_copy(&c, (const void *)pos, 1) < 0) {
				io->faults++;
				break;
			}
		}
		return (ssize_t)(end - offset);
	}
	/* Not mapped: read it through, so that it is in the page cache when
	 * asked for; what is read is not kept, nor counted as read (io is
	 * for bytes served).  On a network file system with several reads
	 * in flight: one reader waits a round trip per readahead window. */
	if (h->entry->fs == FS_NETWORK && fplat_read_through(f->fd, offset, end - offset) == 0)
		return (ssize_t)(end - offset);
	scratch = malloc(scratch_len);
	if (scratch == NULL)
		return -ENOMEM;
	for (pos = offset; pos < end;) {
		size_t n = end - pos < scratch_len ? (size_t)(end - pos) : scratch_len;
		struct storage_io unserved = { 0 };
		ssize_t got = backend_pread_full(f->fd, scratch, n, pos, &unserved);

		if (got <= 0)
			break;
		pos += (uint64_t)got;
	}
	free(scratch);
	return (ssize_t)(end - offset);
}

int storage_willneed(struct storage_handle *h, uint64_t offset, uint64_t len)
{
	if (h == NULL || h->entry == NULL)
		return -EBADF;
	if (offset > CACHE_OFF_MAX || len > CACHE_OFF_MAX - offset)
		return -EINVAL;
	return fplat_willneed(h->entry->file.fd, offset, len);
}

int storage_stat(struct storage_handle *h, struct storage_stat *out)
{
	struct file_entry *e;
	struct file_stat st;
	int r;

	if (h == NULL || h->entry == NULL || out == NULL)
		return -EBADF;
	e = h->entry;
	r = fplat_stat(e->file.fd, &st);
	if (r < 0)
		return r;
	*out = (struct storage_stat){
		.size = st.size,
		.dev = st.id.dev,
		.ino = st.id.ino,
		.mtime_ns = st.mtime_ns,
		.mode = st.mode,
		.mapped_length = e->file.map != NULL ? e->file.map_len : 0,
		.handles = e->refs - e->job_refs,
	};
	return 0;
}
