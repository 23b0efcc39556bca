/* SPDX-License-Identifier: MIT */
/*
 * file_lease.c - the read lease behind direct reads (storage.h).
 *
 * What it is for: a lease is the kernel's promise that nobody writes the
 * file without asking first.  Several grants share the entry's one lease
 * (lease_refs); the last one lets it go, so that writers are not held up
 * once nobody reads directly.
 *
 * What it must not do: touch a client's memory (the grants are the
 * service layer's), or take a lease on a descriptor that is not the
 * entry's own, opened by hotmapd itself: a lease, its signal and its
 * owner belong to the open file description they were set on.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "daemon/storage/storage_priv.h"

int
storage_leasable(const struct storage_handle *h)
{
	const struct file_entry *e = h->entry;

	if (e == NULL || !e->hashed || e->fs != FS_LOCAL || e->file.map == NULL ||
	    h->backend != STORAGE_BACKEND_MMAP)
		return -ENODEV;
	/* The lease, its signal (F_SETSIG) and the process it goes to
	 * (F_SETOWN) belong to the open file description.  On a client's,
	 * the client could name the signal (SIGKILL, SIGSTOP) or its
	 * receiver (itself, so that the daemon never revokes). */
	if (!e->own_fd)
		return -ENOLCK;
	return 0;
}

int
storage_lease(struct storage_handle *h, int sig)
{
	struct file_entry *e = h->entry;
	int rc = storage_leasable(h);

	if (rc < 0)
		return rc;
	if (e->lease_refs > 0 && !fplat_lease_held(e->file.fd))
		return -EAGAIN;	/* breaking: a writer waits for it */
	if (e->lease_refs == 0) {
		int r = fplat_lease(e->file.fd, sig);

		if (r < 0)
			return r;
	}
	e->lease_refs++;
	if (h->job)
		e->lease_job_refs++;	/* the table's (direct_table.c) */
	return 0;
}

void
storage_unlease(struct storage_handle *h)
{
	struct file_entry *e = h->entry;

	if (e == NULL || e->lease_refs == 0)
		return;
	if (h->job && e->lease_job_refs > 0)
		e->lease_job_refs--;
	if (--e->lease_refs == 0)
		fplat_unlease(e->file.fd);
}

bool
storage_lease_breaking(const struct storage_handle *h)
{
	const struct file_entry *e = h->entry;

	return e != NULL && e->lease_refs > 0 && !fplat_lease_held(e->file.fd);
}

int
storage_lease_fd(const struct storage_handle *h)
{
	const struct file_entry *e = h->entry;

	if (e == NULL || e->lease_refs == 0)
		return -1;
	return fplat_lease_id(e->file.fd);
}

int
storage_writers(const struct storage_handle *h, struct storage_writers *out)
{
	if (h->entry == NULL)
		return -EBADF;
	return fplat_writers(h->entry->file.fd, out);
}

void
storage_count_direct(struct storage_handle *h, uint64_t reads, uint64_t bytes)
{
	if (h->entry == NULL)
		return;
	h->entry->direct_reads += reads;
	h->entry->direct_bytes += bytes;
}

/* The block of the client's copy policy: 2 MiB, a huge page on x86-64. */
#define REUSE_BLOCK ((uint64_t)2 << 20)

/* *avg moves half way to v (at most max; at least 1: 0 is unknown) */
static void
average_in(uint32_t *avg, uint64_t v, uint64_t max)
{
	if (v > max)
		v = max;
	if (v == 0)
		v = 1;
	*avg = *avg == 0 ? (uint32_t)v : (uint32_t)(((uint64_t)*avg + v + 1) / 2);
}

void
storage_note_block_reads(struct storage_handle *h, uint64_t reads, uint64_t size)
{
	struct file_entry *e = h->entry;
	uint64_t blocks = size / REUSE_BLOCK + (size % REUSE_BLOCK != 0);

	/* What a client says it read is its own to write: one grant moves
	 * the average by half of at most its cap, and a client that believes
	 * it spends at most one bounded credit on it (copy_policy.h,
	 * cp_prior).  A grant that read nothing (a warm, a stat, a view)
	 * says nothing of how often a reader reads a block. */
	if (e != NULL && blocks != 0 && reads != 0) {
		uint64_t v = reads / blocks;

		average_in(&e->block_reads, v, STORAGE_BLOCK_READS_MAX);
		/* the low mark: a grant that read each block less than the
		 * mark sets it; one that read more moves it half way */
		if (e->block_reads_low != 0 && v < e->block_reads_low)
			e->block_reads_low = v == 0 ? 1u : (uint32_t)v;
		else
			average_in(&e->block_reads_low, v, STORAGE_BLOCK_READS_MAX);
	}
}

uint32_t
storage_block_reads(const struct storage_handle *h)
{
	return h->entry != NULL ? h->entry->block_reads : 0;
}

uint32_t
storage_block_reads_low(const struct storage_handle *h)
{
	return h->entry != NULL ? h->entry->block_reads_low : 0;
}

static uint64_t
sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void
storage_count_read(struct storage_handle *h)
{
	if (h->entry != NULL)
		h->entry->ways.daemon = sat_add(h->entry->ways.daemon, 1);
}

void
storage_count_direct_ways(struct storage_handle *h, const struct storage_read_ways *w)
{
	struct storage_read_ways *e;

	if (h->entry == NULL)
		return;
	e = &h->entry->ways;
	e->copies = sat_add(e->copies, w->copies);
	e->preads = sat_add(e->preads, w->preads);
	e->probes = sat_add(e->probes, w->probes);
	e->populated = sat_add(e->populated, w->populated);
	e->populate_ns = sat_add(e->populate_ns, w->populate_ns);
}

int
storage_reopen(const struct storage_handle *h)
{
	if (h->entry == NULL)
		return -EBADF;
	return fplat_reopen_fd(h->entry->file.fd);
}
