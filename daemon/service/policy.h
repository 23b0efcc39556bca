/* SPDX-License-Identifier: MIT */
/*
 * policy.h - hotmapd's peer policy: the credentials of a connected peer,
 * whether it may connect and whether it administers (from allow-uid,
 * allow-gid, admin-uid and admin-gid of the configuration in use), and
 * the admission limits (connections per uid, the descriptor cap).
 *
 * What it must not do: accept, close or answer connections (server.c and
 * session.c do, and ask here first), or keep state other than the
 * per-uid connection counts in struct server.  It also says which files
 * a client may have leased for direct reads (policy_may_lease), from
 * what the storage core tells of the file: it takes no lease itself.
 */
#ifndef HOTMAP_POLICY_H
#define HOTMAP_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/config/conf.h"	/* enum hm_lease_rule */
#include "daemon/base/platform.h"	/* uid_t, gid_t */
#include "daemon/transport/transport.h"	/* struct peer_ident */

struct server;

/* How many connections may be open at once: RLIMIT_NOFILE now, less the
 * descriptors kept for the cache (max-open-files, at most half) and the
 * daemon's own. */
uint64_t policy_connection_cap(const struct server *srv);
/* A notice that a connection was refused at accept, at most one line a
 * second (with how many were refused since the last). */
void policy_log_refusal(struct server *srv, const struct peer_ident *id, const char *why);

/* Counts a connection of id's user in (delta 1) or out (delta -1), or
 * only looks (0); returns the connections of that user now. */
unsigned policy_count_connections(struct server *srv, const struct peer_ident *id, int delta);

/*
 * The peer policy, from the configuration in use.  gid is the peer's
 * primary group ((gid_t)-1: unknown) and groups its supplementary groups
 * (ngroups of them; NULL when 0).  Admins are uid 0, hotmapd's own uid,
 * and the admin-uid and admin-gid of the configuration; they may always
 * connect.  Others may connect when allow-uid and allow-gid are both
 * empty, or when one of them names the peer or one of its groups.  uid
 * (uid_t)-1 (unknown, or no POSIX uid as on Windows) is nobody's.
 */
bool policy_may_connect(const struct server *srv, uid_t uid, gid_t gid,
			const gid_t *groups, size_t ngroups);
bool policy_is_admin(const struct server *srv, uid_t uid, gid_t gid,
		     const gid_t *groups, size_t ngroups);
/*
 * The same for a client as the transport knows it (transport.h): beside
 * its POSIX ids, the superuser (root; LocalSystem or a member of
 * BUILTIN\Administrators on Windows) and hotmapd's own user
 * (srv->self_user) administer.
 */
bool policy_ident_may_connect(const struct server *srv, const struct peer_ident *id);
bool policy_ident_is_admin(const struct server *srv, const struct peer_ident *id);
/*
 * The direct tier's lease rule (direct-lease-rule): whether hotmapd may
 * hold a read lease on a file for client id's direct reads.  While it
 * does, every writer of the file waits for the daemon (a blocking open
 * for writing, or truncate, until the grants are revoked; one with
 * O_NONBLOCK fails with EAGAIN), so a grant must give a client no power
 * over the file's writers that it did not have already.  With
 * HM_LEASE_RULE_CAN_WRITE, yes when nobody can write the file (a
 * read-only mount, or no write bit in its mode: its owner would have to
 * chmod it first), or when the client could write it itself: root, the
 * file's owner (who may chmod it), or the mode's group bits for a member
 * of its group, its other bits for anyone else.  A file with an access
 * ACL is judged by its owner alone (the ACL's entries are not read).
 * With HM_LEASE_RULE_CAN_READ, always (the client proved it can read the
 * file).  No: why says so, in fewer than 96 bytes.
 */
struct storage_writers;
bool policy_may_lease(enum hm_lease_rule rule, const struct peer_ident *id,
		      const struct storage_writers *w, char *why, size_t whylen);

#endif
