/* SPDX-License-Identifier: MIT */
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

#include "daemon/service/direct.h"
#include "proto/hm_errno.h"
#include "proto/monotime.h"

/* The grants on one leased file (one entry, one lease), found by the
 * descriptor the lease is on. */
struct direct_file {
	int fd;				/* storage_lease_fd: what si_fd names */
	uint64_t dev, ino;		/* for evictions by file */
	struct direct_grant *grants;	/* g->file == this, fnext-linked */
	unsigned n;
	struct direct_file *hnext;	/* bucket chain */
};

struct direct_uid {
	uint32_t uid;
	unsigned n;			/* grants alive */
	struct direct_uid *next;
};

static uint64_t
sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void
slot_set_gen(struct hm_direct_slot *slot, uint64_t gen)
{
	__atomic_store_n(&slot->gen, gen, __ATOMIC_RELEASE);
}

/* --- per uid -------------------------------------------------------------- */

static struct direct_uid **
uid_bucket(struct direct_registry *reg, uint32_t uid)
{
	return &reg->uids[(uid * 2654435761u) >> 26 & (DIRECT_UID_BUCKETS - 1)];
}

static struct direct_uid *
uid_find(const struct direct_registry *reg, uint32_t uid)
{
	struct direct_uid *u;

	for (u = reg->uids[(uid * 2654435761u) >> 26 & (DIRECT_UID_BUCKETS - 1)]; u != NULL;
	     u = u->next)
		if (u->uid == uid)
			return u;
	return NULL;
}

unsigned
direct_uid_grants(const struct direct_registry *reg, uint32_t uid)
{
	const struct direct_uid *u = uid_find(reg, uid);

	return u != NULL ? u->n : 0;
}

/* One grant more for uid: 0, -EDQUOT past the cap, -ENOMEM.  The table's
 * grants are no user's (the table bounds them). */
static int
uid_take(struct direct_registry *reg, uint32_t uid)
{
	struct direct_uid *u = uid_find(reg, uid), **b;

	if (uid == DIRECT_UID_TABLE)
		return 0;
	if (u != NULL) {
		if (reg->max_per_uid != 0 && u->n >= reg->max_per_uid)
			return -EDQUOT;
		u->n++;
		return 0;
	}
	u = calloc(1, sizeof *u);
	if (u == NULL)
		return -ENOMEM;
	b = uid_bucket(reg, uid);
	u->uid = uid;
	u->n = 1;
	u->next = *b;
	*b = u;
	return 0;
}

static void
uid_give(struct direct_registry *reg, uint32_t uid)
{
	struct direct_uid **p, *u;

	if (uid == DIRECT_UID_TABLE)
		return;
	for (p = uid_bucket(reg, uid); (u = *p) != NULL; p = &u->next) {
		if (u->uid != uid)
			continue;
		if (--u->n == 0) {
			*p = u->next;
			free(u);
		}
		return;
	}
}

/* --- per file ------------------------------------------------------------- */

static size_t
fd_hash(const struct direct_registry *reg, int fd)
{
	return ((uint32_t)fd * 2654435761u) & (reg->nbuckets - 1);
}

static struct direct_file *
file_find(const struct direct_registry *reg, int fd)
{
	struct direct_file *f;

	if (reg->nbuckets == 0 || fd < 0)
		return NULL;
	for (f = reg->files[fd_hash(reg, fd)]; f != NULL; f = f->hnext)
		if (f->fd == fd)
			return f;
	return NULL;
}

/* Twice the buckets when the chains grow long; on failure the chains only
 * stay longer. */
static void
files_grow(struct direct_registry *reg)
{
	size_t n = reg->nbuckets == 0 ? 64 : reg->nbuckets * 2, i, old = reg->nbuckets;
	struct direct_file **v = calloc(n, sizeof *v), *f, *next;

	if (v == NULL)
		return;
	reg->nbuckets = n;
	for (i = 0; i < old; i++) {
		for (f = reg->files[i]; f != NULL; f = next) {
			next = f->hnext;
			f->hnext = v[fd_hash(reg, f->fd)];
			v[fd_hash(reg, f->fd)] = f;
		}
	}
	free(reg->files);
	reg->files = v;
}

/* The file whose lease fd is on, made when new (dev and ino from st). */
static struct direct_file *
file_get(struct direct_registry *reg, int fd, const struct storage_stat *st)
{
	struct direct_file *f = file_find(reg, fd);
	size_t b;

	if (f != NULL)
		return f;
	if (reg->nfiles >= 2 * reg->nbuckets)
		files_grow(reg);
	if (reg->nbuckets == 0)
		return NULL;
	f = calloc(1, sizeof *f);
	if (f == NULL)
		return NULL;
	f->fd = fd;
	f->dev = st->dev;
	f->ino = st->ino;
	b = fd_hash(reg, fd);
	f->hnext = reg->files[b];
	reg->files[b] = f;
	reg->nfiles++;
	return f;
}

static void
file_drop(struct direct_registry *reg, struct direct_file *f)
{
	struct direct_file **p;

	for (p = &reg->files[fd_hash(reg, f->fd)]; *p != NULL; p = &(*p)->hnext) {
		if (*p == f) {
			*p = f->hnext;
			reg->nfiles--;
			free(f);
			return;
		}
	}
}

void
direct_registry_fini(struct direct_registry *reg)
{
	size_t i;

	for (i = 0; i < reg->nbuckets; i++) {
		while (reg->files[i] != NULL) {
			struct direct_file *f = reg->files[i];

			reg->files[i] = f->hnext;
			free(f);
		}
	}
	free(reg->files);
	reg->files = NULL;
	reg->nbuckets = 0;
	reg->nfiles = 0;
	for (i = 0; i < DIRECT_UID_BUCKETS; i++) {
		while (reg->uids[i] != NULL) {
			struct direct_uid *u = reg->uids[i];

			reg->uids[i] = u->next;
			free(u);
		}
	}
}

/* --- grants --------------------------------------------------------------- */

/* Takes g out of every list and count; its file goes with its last grant.
 * The lease is the caller's to let go. */
static void
grant_unlink(struct direct_registry *reg, struct direct_grant *g)
{
	struct direct_file *f = g->file;

	if (g->prev != NULL)
		g->prev->next = g->next;
	else
		reg->grants = g->next;
	if (g->next != NULL)
		g->next->prev = g->prev;
	g->prev = g->next = NULL;
	reg->n -= g->uid != DIRECT_UID_TABLE;
	if (f != NULL) {
		if (g->fprev != NULL)
			g->fprev->fnext = g->fnext;
		else
			f->grants = g->fnext;
		if (g->fnext != NULL)
			g->fnext->fprev = g->fprev;
		g->fprev = g->fnext = NULL;
		if (--f->n == 0)
			file_drop(reg, f);
		g->file = NULL;
	}
	uid_give(reg, g->uid);
}

/* What a counter of the slot grew by since it was last seen (0 when it
 * went backwards), and seen moved on. */
static uint64_t
slot_delta(const uint64_t *counter, uint64_t *seen)
{
	uint64_t v = __atomic_load_n(counter, __ATOMIC_RELAXED);
	uint64_t d = v >= *seen ? v - *seen : 0;

	*seen = v;
	return d;
}

static uint64_t
at_most(uint64_t v, uint64_t most)
{
	return v < most ? v : most;
}

static void
ways_add(struct storage_read_ways *to, const struct storage_read_ways *w)
{
	to->copies = sat_add(to->copies, w->copies);
	to->preads = sat_add(to->preads, w->preads);
	to->probes = sat_add(to->probes, w->probes);
	to->populated = sat_add(to->populated, w->populated);
	to->populate_ns = sat_add(to->populate_ns, w->populate_ns);
}

/*
 * The ways the slot says its reads went since the last fold, bounded by
 * what it may claim (direct.h): copies and preads, over the grant's life,
 * at most the reads folded (dr now, and those of earlier folds whose way
 * came after: the credit), probes at most those copies and preads; at
 * most the file's blocks per DIRECT_POPULATE_PERIOD_NS populated, in at
 * most the time elapsed.
 */
static void
ways_bound(struct direct_grant *g, struct storage_read_ways *w, uint64_t dr, uint64_t elapsed)
{
	uint64_t blocks = g->size / HM_DIRECT_BLOCK_BYTES + (g->size % HM_DIRECT_BLOCK_BYTES != 0);
	uint64_t periods = elapsed / DIRECT_POPULATE_PERIOD_NS + 1;

	g->ways_credit = sat_add(g->ways_credit, dr);
	w->copies = at_most(w->copies, g->ways_credit);
	g->ways_credit -= w->copies;
	w->preads = at_most(w->preads, g->ways_credit);
	g->ways_credit -= w->preads;
	g->probes_credit = sat_add(g->probes_credit, w->copies + w->preads);
	w->probes = at_most(w->probes, g->probes_credit);
	g->probes_credit -= w->probes;
	if (blocks == 0)
		blocks = 1;	/* an empty file has none, but costs nothing to allow */
	if (__builtin_mul_overflow(blocks, periods, &blocks))
		blocks = UINT64_MAX;
	w->populated = at_most(w->populated, blocks);
	w->populate_ns = at_most(w->populate_ns, elapsed);
}

/*
 * Folds the slot's counters in.  They are the client's to write: a read
 * it reports takes at least DIRECT_READ_MIN_NS and returns at most the
 * grant's size, so what is folded is bounded by the time since the last
 * fold; what a slot claims beyond that (and counters written backwards)
 * is dropped, never carried over, and every sum saturates.  So are the
 * ways (ways_bound).
 */
static void
grant_fold(struct direct_registry *reg, struct direct_grant *g, uint64_t now)
{
	/* the ways before the reads, which the client adds to first
	 * (proto/direct.h): an honest slot's ways are within its reads */
	struct storage_read_ways w = {
		.copies = slot_delta(&g->slot->copies, &g->ways_seen.copies),
		.preads = slot_delta(&g->slot->preads, &g->ways_seen.preads),
		.probes = slot_delta(&g->slot->probes, &g->ways_seen.probes),
		.populated = slot_delta(&g->slot->populated, &g->ways_seen.populated),
		.populate_ns = slot_delta(&g->slot->populate_ns, &g->ways_seen.populate_ns),
	};
	uint64_t elapsed = now > g->folded_ns ? now - g->folded_ns : 0;
	uint64_t reads = __atomic_load_n(&g->slot->reads, __ATOMIC_RELAXED);
	uint64_t bytes = __atomic_load_n(&g->slot->bytes, __ATOMIC_RELAXED);
	uint64_t dr = reads >= g->reads_seen ? reads - g->reads_seen : 0;
	uint64_t db = bytes >= g->bytes_seen ? bytes - g->bytes_seen : 0;
	uint64_t most = now > g->folded_ns ? (now - g->folded_ns) / DIRECT_READ_MIN_NS + 1 : 1;

	g->reads_seen = reads;
	g->bytes_seen = bytes;
	g->folded_ns = now;
	if (dr > most)
		dr = most;
	if (__builtin_mul_overflow(dr, g->size, &most))
		most = UINT64_MAX;
	if (db > most)
		db = most;
	ways_bound(g, &w, dr, elapsed);
	if ((dr | db | w.copies | w.preads | w.probes | w.populated | w.populate_ns) == 0)
		return;
	g->reads_folded = sat_add(g->reads_folded, dr);
	reg->reads = sat_add(reg->reads, dr);
	reg->bytes = sat_add(reg->bytes, db);
	ways_add(&reg->ways, &w);
	storage_count_direct(&g->h, dr, db);
	storage_count_direct_ways(&g->h, &w);
	if (g->client_reads != NULL) {
		*g->client_reads = sat_add(*g->client_reads, dr);
		*g->client_bytes = sat_add(*g->client_bytes, db);
	}
	if (g->client_ways != NULL)
		ways_add(g->client_ways, &w);
}

int
direct_grant(struct direct_registry *reg, struct direct_grant *g, struct storage_handle *h,
	     struct hm_direct_slot *slot, uint64_t handle, uint32_t uid, uint64_t *gen,
	     struct storage_stat *st_out)
{
	struct direct_file *f = NULL;
	struct storage_stat st;
	uint64_t next;
	int rc, fd;

	rc = uid_take(reg, uid);
	if (rc < 0) {
		reg->refused++;	/* (never the table's) */
		if (rc == -EDQUOT)
			reg->refused_cap++;
		return rc;
	}
	rc = storage_lease(h, reg->sig);
	if (rc == 0 && (rc = storage_stat(h, &st)) < 0)
		storage_unlease(h);
	if (rc == 0) {
		fd = storage_lease_fd(h);
		f = file_get(reg, fd, &st);
		if (f == NULL) {
			storage_unlease(h);
			rc = -ENOMEM;
		}
	}
	if (rc < 0) {
		uid_give(reg, uid);
		reg->refused += uid != DIRECT_UID_TABLE;
		return rc;
	}
	/* the slot may have served an earlier handle: its generation only
	 * grows, so that no client mistakes an old grant for this one */
	next = (__atomic_load_n(&slot->gen, __ATOMIC_RELAXED) | 1) + 1;
	if ((__atomic_load_n(&slot->gen, __ATOMIC_RELAXED) & 1) == 0)
		slot_set_gen(slot, next - 1);	/* odd while its fields change */
	/* a seqlock's writer: the odd generation is seen before any field */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&slot->size, st.size, __ATOMIC_RELAXED);
	__atomic_store_n(&slot->handle, handle, __ATOMIC_RELAXED);
	/* what a table's reader looks the file up by (direct_table.c) */
	__atomic_store_n(&slot->dev, st.dev, __ATOMIC_RELAXED);
	__atomic_store_n(&slot->ino, st.ino, __ATOMIC_RELAXED);
	__atomic_store_n(&slot->mtime_ns, st.mtime_ns, __ATOMIC_RELAXED);
	*g = (struct direct_grant){
		.slot = slot,
		.h = *h,
		.file = f,
		.uid = uid,
		.size = st.size,
		.reads_seen = __atomic_load_n(&slot->reads, __ATOMIC_RELAXED),
		.bytes_seen = __atomic_load_n(&slot->bytes, __ATOMIC_RELAXED),
		.ways_seen = {
			.copies = __atomic_load_n(&slot->copies, __ATOMIC_RELAXED),
			.preads = __atomic_load_n(&slot->preads, __ATOMIC_RELAXED),
			.probes = __atomic_load_n(&slot->probes, __ATOMIC_RELAXED),
			.populated = __atomic_load_n(&slot->populated, __ATOMIC_RELAXED),
			.populate_ns = __atomic_load_n(&slot->populate_ns, __ATOMIC_RELAXED),
		},
		.folded_ns = monotime_ns(),
	};
	slot_set_gen(slot, next);
	g->next = reg->grants;
	if (g->next != NULL)
		g->next->prev = g;
	reg->grants = g;
	reg->n += uid != DIRECT_UID_TABLE;	/* clients' grants */
	g->fnext = f->grants;
	if (g->fnext != NULL)
		g->fnext->fprev = g;
	f->grants = g;
	f->n++;
	reg->granted += uid != DIRECT_UID_TABLE;
	*gen = next;
	if (st_out != NULL)
		*st_out = st;
	return 0;
}

unsigned
direct_file_grants(const struct direct_grant *g)
{
	return g->file != NULL ? g->file->n : 0;
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
	grant_fold(reg, g, monotime_ns());
	/* how often this client read the file's blocks, for the next one's
	 * copy policy (a revoked grant's file changed: not counted) */
	storage_note_block_reads(&g->h, g->reads_folded, g->size);
	grant_unlink(reg, g);
	storage_unlease(&g->h);
	g->slot = NULL;
}

/* Revokes every grant of f: all their slots first, then the leases (the
 * last lets the writer go on).  f is freed with its last grant. */
static unsigned
revoke_file(struct direct_registry *reg, struct direct_file *f)
{
	struct direct_grant *g, *next, *hit = NULL;
	uint64_t now = monotime_ns();
	unsigned n = 0, clients = 0;

	for (g = f->grants; g != NULL; g = g->fnext) {
		grant_stop(g);
		grant_fold(reg, g, now);
	}
	while ((g = f->grants) != NULL) {
		bool last = f->n == 1;

		grant_unlink(reg, g);
		g->next = hit;	/* kept aside: their leases go below */
		hit = g;
		n++;
		clients += g->uid != DIRECT_UID_TABLE;
		if (last)
			break;	/* f is freed */
	}
	for (g = hit; g != NULL; g = next) {
		next = g->next;
		g->next = NULL;
		storage_unlease(&g->h);
		g->slot = NULL;
	}
	reg->revoked += clients;	/* the table's are counted apart */
	reg->revoked_table += n - clients;
	return n;
}

/* Whether someone waits for f's lease: one lease check for the file. */
static bool
file_breaking(struct direct_registry *reg, const struct direct_file *f)
{
	reg->lease_checks++;
	return f->grants != NULL && storage_lease_breaking(&f->grants->h);
}

unsigned
direct_lease_signal(struct direct_registry *reg, int fd)
{
	struct direct_file *f = file_find(reg, fd);

	if (f == NULL || !file_breaking(reg, f))
		return 0;
	return revoke_file(reg, f);
}

/* Revokes the files match says, each looked at once. */
static unsigned
revoke_where(struct direct_registry *reg, bool (*match)(struct direct_registry *reg,
							const struct direct_file *f, void *arg),
	     void *arg)
{
	struct direct_file *f, *next;
	unsigned n = 0;
	size_t i;

	for (i = 0; i < reg->nbuckets; i++) {
		for (f = reg->files[i]; f != NULL; f = next) {
			next = f->hnext;	/* f may be freed */
			if (match(reg, f, arg))
				n += revoke_file(reg, f);
		}
	}
	return n;
}

static bool
match_breaking(struct direct_registry *reg, const struct direct_file *f, void *arg)
{
	(void)arg;
	return file_breaking(reg, f);
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
match_file(struct direct_registry *reg, const struct direct_file *f, void *arg)
{
	struct file_match *m = arg;

	(void)reg;
	return m->all || (f->dev == m->dev && f->ino == m->ino);
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
	uint64_t now = monotime_ns();

	for (g = reg->grants; g != NULL; g = g->next)
		grant_fold(reg, g, now);
}
