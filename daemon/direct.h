/*
 * direct.h - direct-read grants: which handles a client may read from its
 * own mapping of the file, and taking that back (DESIGN.md section 9).
 *
 * What it is for: a grant pairs a handle with a slot in the client's
 * shared region (proto/direct.h) and a share of the file's read lease
 * (storage_lease).  The daemon revokes a grant by making the slot's
 * generation odd, and only then lets the lease go; so a client that
 * checks the slot around its copy never returns bytes of a file that
 * changed under it.  Revoked when: someone opens the file for writing or
 * truncates it (the lease breaks: direct_check_leases, on the lease
 * signal), an administrator evicts it, or direct reads are switched off.
 *
 * What it must not do: free a grant's slot memory (the session owns its
 * region) or block: revocation is a store and an fcntl.
 */
#ifndef HOTMAP_DAEMON_DIRECT_H
#define HOTMAP_DAEMON_DIRECT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "daemon/storage.h"
#include "proto/direct.h"

/* Sent by the kernel when someone waits to write a leased file. */
#define DIRECT_LEASE_SIGNAL	(SIGRTMIN + 1)

struct direct_grant {
	struct hm_direct_slot *slot;	/* in the client's region */
	/* A copy of the session's handle (whose array may move): its entry
	 * holds the lease, and lives while the handle is open, which it
	 * is for as long as the grant is linked (direct_release comes
	 * first). */
	struct storage_handle h;
	uint64_t reads_seen;		/* slot counters already folded in */
	uint64_t bytes_seen;
	uint64_t *client_reads;		/* the session's totals, or NULL */
	uint64_t *client_bytes;
	struct direct_grant *prev, *next;
};

struct direct_registry {
	struct direct_grant *grants;
	unsigned n;			/* grants alive */
	int sig;			/* the lease signal */
	/* Counters (stats): grants made, refused, revoked; reads and bytes
	 * clients reported serving themselves. */
	uint64_t granted, refused, revoked;
	uint64_t reads, bytes;
};

/*
 * Grants direct reads of h (the handle number `handle` of a client) in
 * slot: takes a share of the file's lease, writes the slot and links the
 * grant.  0, with *gen the slot's even generation; or -errno from
 * storage_lease (the slot is left free).
 */
int direct_grant(struct direct_registry *reg, struct direct_grant *g, struct storage_handle *h,
		 struct hm_direct_slot *slot, uint64_t handle, uint64_t *gen);
/* Folds in what the client read and forgets the grant (its handle
 * closes): the slot is marked free (odd) first. */
void direct_release(struct direct_registry *reg, struct direct_grant *g);
/* The lease signal came: revokes every grant whose file someone waits to
 * write, then lets their leases go.  Returns how many were revoked. */
unsigned direct_check_leases(struct direct_registry *reg);
/* Revokes the grants on (dev, ino), or with all every grant (evict,
 * direct reads switched off).  Returns how many. */
unsigned direct_revoke_file(struct direct_registry *reg, bool all, uint64_t dev, uint64_t ino);
/* Folds what clients reported since the last call into the counters and
 * the files (before stats and listings). */
void direct_sync(struct direct_registry *reg);

#endif
