/* SPDX-License-Identifier: MIT */
/*
 * direct.h - direct-read grants: which handles a client may read from its
 * own mapping of the file, and taking that back (docs/design.md, "Tiers").
 *
 * What it is for: a grant pairs a handle with a slot in the client's
 * shared region (proto/direct.h) and a share of the file's read lease
 * (storage_lease).  The daemon revokes a grant by making the slot's
 * generation odd, and only then lets the lease go; so a client that
 * checks the slot around its copy never returns bytes of a file that
 * changed under it.  Revoked when: someone opens the file for writing or
 * truncates it (the lease breaks: the lease signal names the descriptor,
 * direct_lease_signal revokes that file's grants), an administrator
 * evicts it, or direct reads are switched off.
 *
 * The grants are kept per file, so that a revocation costs the grants of
 * that file and a lease check per file, never a walk over every grant of
 * every client; and counted per uid, so that one user cannot hold more
 * than max_per_uid of them (each holds a lease some writer may wait for).
 *
 * What clients write in their slots (reads, bytes, and the ways reads
 * went) is theirs to write: it is folded in bounded (a read takes at
 * least DIRECT_READ_MIN_NS, and returns at most the grant's size; copies
 * and preads are at most the reads, probes at most those; a grant
 * populates each block of its file at most once per
 * DIRECT_POPULATE_PERIOD_NS, and spends at most the time elapsed doing
 * it), saturating, and only into the file and the client it came from.
 *
 * What it must not do: free a grant's slot memory (the session owns its
 * region), trust anything read from a slot, or block: revocation is a
 * store and an fcntl per file.
 */
#ifndef HOTMAP_DAEMON_DIRECT_H
#define HOTMAP_DAEMON_DIRECT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/storage/storage.h"
#include "proto/direct.h"

/* Sent by the kernel when someone waits to write a leased file. */
#define DIRECT_LEASE_SIGNAL	(SIGRTMIN + 1)

/* The least time a read served in the client takes (a slot's atomic add
 * alone is more): what bounds the reads a slot may report. */
#define DIRECT_READ_MIN_NS	10u
/* What bounds the blocks a slot may report populated: each block of the
 * grant's file once per period (the client populates a block once, and
 * again only after forgetting its copy estimates, which takes many reads). */
#define DIRECT_POPULATE_PERIOD_NS	1000000000u

struct direct_file;
struct direct_uid;

/* The uid of the table of granted files' grants (direct_table.h): no
 * user's, and not counted with clients' grants (n, granted, revoked). */
#define DIRECT_UID_TABLE	UINT32_MAX

#define DIRECT_UID_BUCKETS	64u

struct direct_grant {
	struct hm_direct_slot *slot;	/* in the client's region; NULL once
					 * revoked or released */
	/* A copy of the session's handle (whose array may move): its entry
	 * holds the lease, and lives while the handle is open, which it
	 * is for as long as the grant is linked (direct_release comes
	 * first). */
	struct storage_handle h;
	struct direct_file *file;	/* the grants on the same file */
	uint32_t uid;			/* whose: counted against max_per_uid */
	uint64_t size;			/* the file's size for the grant */
	uint64_t reads_seen;		/* slot counters already folded in */
	uint64_t bytes_seen;
	struct storage_read_ways ways_seen;	/* (daemon unused) */
	/* Reads folded in whose way is not yet (a client adds to reads
	 * first, and a fold may come between), and copies and preads
	 * whose probing is not yet: what the ways may still claim. */
	uint64_t ways_credit, probes_credit;
	uint64_t folded_ns;		/* monotime of the last fold */
	uint64_t reads_folded;		/* reads folded in, in all (bounded) */
	uint64_t *client_reads;		/* the session's totals, or NULL */
	uint64_t *client_bytes;
	struct storage_read_ways *client_ways;	/* the session's, or NULL */
	struct direct_grant *prev, *next;	/* every grant */
	struct direct_grant *fprev, *fnext;	/* the file's */
};

struct direct_registry {
	struct direct_grant *grants;
	unsigned n;			/* grants alive */
	int sig;			/* the lease signal */
	unsigned max_per_uid;		/* grants one uid may hold; 0: no cap */
	/* The leased files, by the descriptor their lease is on (what the
	 * lease signal's si_fd names), and the grants per uid. */
	struct direct_file **files;
	size_t nbuckets;		/* a power of two, or 0 */
	unsigned nfiles;
	struct direct_uid *uids[DIRECT_UID_BUCKETS];
	/* Counters (stats): grants made, refused (of them, for the per-uid
	 * cap), revoked; the lease checks revocation made (F_GETLEASE); reads
	 * and bytes clients reported serving themselves, and the ways those
	 * went (daemon unused), as bounded. */
	uint64_t granted, refused, refused_cap, revoked, lease_checks;
	uint64_t revoked_table;		/* the table's entries revoked */
	uint64_t reads, bytes;
	struct storage_read_ways ways;
};

/* Frees what the registry allocated (no grant may be alive). */
void direct_registry_fini(struct direct_registry *reg);

/*
 * Grants direct reads of h (the handle number `handle` of a client of uid)
 * in slot: takes a share of the file's lease, writes the slot and links
 * the grant.  0, with *gen the slot's even generation and, if st is not
 * NULL, *st the file as the lease holds it; -EDQUOT when uid holds
 * max_per_uid grants already; -ENOMEM; or -errno from storage_lease (the
 * slot is left free).
 */
int direct_grant(struct direct_registry *reg, struct direct_grant *g, struct storage_handle *h,
		 struct hm_direct_slot *slot, uint64_t handle, uint32_t uid, uint64_t *gen,
		 struct storage_stat *st);
/* Folds in what the client read and forgets the grant (its handle
 * closes): the slot is marked free (odd) first. */
void direct_release(struct direct_registry *reg, struct direct_grant *g);
/* The lease signal named descriptor fd (si_fd): if a writer waits for that
 * file's lease, revokes its grants, then lets the lease go.  Returns how
 * many grants were revoked. */
unsigned direct_lease_signal(struct direct_registry *reg, int fd);
/* The same for every leased file (the signal queue overflowed into SIGIO,
 * or the signal came without a descriptor): a lease check per file. */
unsigned direct_check_leases(struct direct_registry *reg);
/* Revokes the grants on (dev, ino), or with all every grant (evict,
 * direct reads switched off).  Returns how many. */
unsigned direct_revoke_file(struct direct_registry *reg, bool all, uint64_t dev, uint64_t ino);
/* Folds what clients reported since the last call into the counters and
 * the files (before stats and listings). */
void direct_sync(struct direct_registry *reg);
/* The grants (the table's included) on g's file now; 0 once g is revoked
 * or released. */
unsigned direct_file_grants(const struct direct_grant *g);
/* The grants uid holds now. */
unsigned direct_uid_grants(const struct direct_registry *reg, uint32_t uid);

#endif
