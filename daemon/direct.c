/*
 * direct.c - see direct.h.
 *
 * Ordering, which is the whole point: a revocation stores the odd
 * generation (release) before storage_unlease lets a writer go on.  A
 * client loads the generation before its copy and again after it (with an
 * acquire fence between), so any change the writer makes is either after
 * the client's second load (the copy is older than the change) or seen
 * there (the copy is thrown away and read again through the daemon).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "daemon/direct.h"

static void
slot_set_gen(struct hm_direct_slot *slot, uint64_t gen)
{
	__atomic_store_n(&slot->gen, gen, __ATOMIC_RELEASE);
}

static void
grant_unlink(struct direct_registry *reg, struct direct_grant *g)
{
	if (g->prev != NULL)
		g->prev->next = g->next;
	else
		reg->grants = g->next;
	if (g->next != NULL)
		g->next->prev = g->prev;
	g->prev = g->next = NULL;
	reg->n--;
}

/* Folds the slot's counters in; a client that wrote them backwards
 * (they are its own to write) only restarts its count. */
static void
grant_fold(struct direct_registry *reg, struct direct_grant *g)
{
	uint64_t reads = __atomic_load_n(&g->slot->reads, __ATOMIC_RELAXED);
	uint64_t bytes = __atomic_load_n(&g->slot->bytes, __ATOMIC_RELAXED);
	uint64_t dr = reads >= g->reads_seen ? reads - g->reads_seen : 0;
	uint64_t db = bytes >= g->bytes_seen ? bytes - g->bytes_seen : 0;

	g->reads_seen = reads;
	g->bytes_seen = bytes;
	if (dr == 0 && db == 0)
		return;
	reg->reads += dr;
	reg->bytes += db;
	storage_count_direct(&g->h, dr, db);
	if (g->client_reads != NULL) {
		*g->client_reads += dr;
		*g->client_bytes += db;
	}
}

int
direct_grant(struct direct_registry *reg, struct direct_grant *g, struct storage_handle *h,
	     struct hm_direct_slot *slot, uint64_t handle, uint64_t *gen)
{
	struct storage_stat st;
	uint64_t next;
	int rc;

	rc = storage_lease(h, reg->sig);
	if (rc == 0 && (rc = storage_stat(h, &st)) < 0)
		storage_unlease(h);
	if (rc < 0) {
		reg->refused++;
		return rc;
	}
	/* the slot may have served an earlier handle: its generation only
	 * grows, so that no client mistakes an old grant for this one */
	next = (__atomic_load_n(&slot->gen, __ATOMIC_RELAXED) | 1) + 1;
	slot->size = st.size;
	slot->handle = handle;
	g->slot = slot;
	g->h = *h;
	g->reads_seen = __atomic_load_n(&slot->reads, __ATOMIC_RELAXED);
	g->bytes_seen = __atomic_load_n(&slot->bytes, __ATOMIC_RELAXED);
	slot_set_gen(slot, next);
	g->prev = NULL;
	g->next = reg->grants;
	if (g->next != NULL)
		g->next->prev = g;
	reg->grants = g;
	reg->n++;
	reg->granted++;
	*gen = next;
	return 0;
}

/* Makes the slot's generation odd: the client stops reading directly. */
static void
grant_stop(struct direct_grant *g)
{
	uint64_t gen = __atomic_load_n(&g->slot->gen, __ATOMIC_RELAXED);

	if ((gen & 1) == 0)
		slot_set_gen(g->slot, gen + 1);
}

void
direct_release(struct direct_registry *reg, struct direct_grant *g)
{
	if (g->slot == NULL)
		return;
	grant_stop(g);
	grant_fold(reg, g);
	grant_unlink(reg, g);
	storage_unlease(&g->h);
	g->slot = NULL;
}

/* Revokes the grants marked by match, all slots first, then the leases. */
static unsigned
revoke_where(struct direct_registry *reg, bool (*match)(struct direct_grant *g, void *arg),
	     void *arg)
{
	struct direct_grant *g, *next, *hit = NULL;
	unsigned n = 0;

	for (g = reg->grants; g != NULL; g = next) {
		next = g->next;
		if (!match(g, arg))
			continue;
		grant_stop(g);
		grant_fold(reg, g);
		grant_unlink(reg, g);
		g->next = hit;	/* kept aside: their leases go below */
		hit = g;
		n++;
	}
	for (g = hit; g != NULL; g = next) {
		next = g->next;
		g->next = NULL;
		storage_unlease(&g->h);
		g->slot = NULL;
	}
	reg->revoked += n;
	return n;
}

static bool
match_breaking(struct direct_grant *g, void *arg)
{
	(void)arg;
	return storage_lease_breaking(&g->h);
}

unsigned
direct_check_leases(struct direct_registry *reg)
{
	return revoke_where(reg, match_breaking, NULL);
}

struct file_match {
	bool all;
	uint64_t dev, ino;
};

static bool
match_file(struct direct_grant *g, void *arg)
{
	struct file_match *m = arg;
	struct storage_stat st;

	if (m->all)
		return true;
	return storage_stat(&g->h, &st) == 0 && st.dev == m->dev && st.ino == m->ino;
}

unsigned
direct_revoke_file(struct direct_registry *reg, bool all, uint64_t dev, uint64_t ino)
{
	struct file_match m = { .all = all, .dev = dev, .ino = ino };

	return revoke_where(reg, match_file, &m);
}

void
direct_sync(struct direct_registry *reg)
{
	struct direct_grant *g;

	for (g = reg->grants; g != NULL; g = g->next)
		grant_fold(reg, g);
}
