/* SPDX-License-Identifier: MIT */
/*
 * region.c - the shared region: memory the daemon copies file bytes into
 * (a sealed memfd, or a section on Windows: region_unix.c,
 * region_win32.c), its blocks, handed out first fit in REGION_BLOCK units
 * (a bitmap under the region's own lock), its references, and the list
 * of every live region that fork(2) walks (fork_unix.c).
 *
 * Must not: free a region with a reference left (a view may outlive its
 * client); know what its blocks are for, or call the reads and views
 * that use them (read.c, view.c).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/client_priv.h"
#include "proto/direct.h"

pthread_mutex_t regions_lock = PTHREAD_MUTEX_INITIALIZER;
struct hm_region *regions;

/* One more reference to r (a view's, a direct mapping's): r stays mapped
 * until region_unref has undone each. */
void
region_ref(struct hm_region *r)
{
	pthread_mutex_lock(&r->lock);
	r->refs++;
	pthread_mutex_unlock(&r->lock);
}

void
region_unref(struct hm_region *r)
{
	unsigned left;

	if (r == NULL)
		return;
	pthread_mutex_lock(&regions_lock);
	pthread_mutex_lock(&r->lock);
	left = --r->refs;
	pthread_mutex_unlock(&r->lock);
	if (left == 0) {
		if (r->prev != NULL)
			r->prev->next = r->next;
		else
			regions = r->next;
		if (r->next != NULL)
			r->next->prev = r->prev;
	}
	pthread_mutex_unlock(&regions_lock);
	if (left > 0)
		return;
	region_unmap(r);
	pthread_mutex_destroy(&r->lock);
	free(r->used);
	free(r);
}

bool
region_block_used(const struct hm_region *r, size_t i)
{
	return (r->used[i / 64] >> (i % 64)) & 1;
}

void
region_mark(struct hm_region *r, size_t first, size_t n, bool used)
{
	size_t i;

	for (i = first; i < first + n; i++) {
		if (used)
			r->used[i / 64] |= 1ull << (i % 64);
		else
			r->used[i / 64] &= ~(1ull << (i % 64));
	}
}

/* First fit: the offset of len free bytes (rounded up to blocks), or
 * -ENOSPC. */
int
region_alloc(struct hm_region *r, size_t len, size_t *off)
{
	size_t need = len == 0 ? 1 : (len + REGION_BLOCK - 1) / REGION_BLOCK;
	size_t i, run = 0;
	int rc = -ENOSPC;

	if (r == NULL || need > r->nblocks)
		return -ENOSPC;
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->nblocks; i++) {
		run = region_block_used(r, i) ? 0 : run + 1;
		if (run == need) {
			region_mark(r, i + 1 - need, need, true);
			*off = (i + 1 - need) * REGION_BLOCK;
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}

void
region_free(struct hm_region *r, size_t off, size_t len)
{
	size_t need = len == 0 ? 1 : (len + REGION_BLOCK - 1) / REGION_BLOCK;

	pthread_mutex_lock(&r->lock);
	region_mark(r, off / REGION_BLOCK, need, false);
	pthread_mutex_unlock(&r->lock);
}

/* The region of size bytes and then slots direct-read slots (a whole
 * number of pages), mapped (region_map); what HELLO passes in *fd. */
struct hm_region *
region_new(size_t size, uint32_t slots, hm_osfile *fd)
{
	size_t table = (size_t)slots * HM_DIRECT_SLOT_BYTES;
	struct hm_region *r;

	*fd = HM_OSFILE_NONE;
	size = (size + REGION_BLOCK - 1) / REGION_BLOCK * REGION_BLOCK;
	r = calloc(1, sizeof *r);
	if (r == NULL)
		return NULL;
	r->size = size;
	r->nblocks = size / REGION_BLOCK;
	r->used = calloc((r->nblocks + 63) / 64, sizeof *r->used);
	if (r->used == NULL || region_map(r, table, slots, fd) < 0)
		goto fail;
	pthread_mutex_init(&r->lock, NULL);
	r->refs = 1;
	r->shared = true;
	pthread_mutex_lock(&regions_lock);
	r->next = regions;
	if (r->next != NULL)
		r->next->prev = r;
	regions = r;
	pthread_mutex_unlock(&regions_lock);
	return r;
fail:
	free(r->used);
	free(r);
	return NULL;
}

/* The daemon grants in the table's last n slots (HELLO): its slot i is
 * r->slots[r->slot_first + i]. */
void
region_slots_used(struct hm_region *r, uint32_t n)
{
	r->slot_first = r->nslots - (n < r->nslots ? n : r->nslots);
}
