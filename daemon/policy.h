/*
 * policy.h - hotmapd's peer policy: the credentials of a connected peer,
 * whether it may connect and whether it administers (from allow-uid,
 * allow-gid, admin-uid and admin-gid of the configuration in use), and
 * the admission limits (connections per uid, the descriptor cap).
 *
 * What it must not do: accept, close or answer connections (server.c and
 * session.c do, and ask here first), or keep state other than the
 * per-uid connection counts in struct server.
 */
#ifndef HOTMAP_POLICY_H
#define HOTMAP_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/platform.h"	/* uid_t, gid_t */
#include "daemon/transport.h"	/* struct peer_ident */

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
 * A connected Unix socket's peer: uid and primary gid (SO_PEERCRED) and,
 * in groups (room for *ngroups), its supplementary groups (SO_PEERGROUPS);
 * *ngroups becomes their count.  Kernels without SO_PEERGROUPS give none
 * (*ngroups 0: the primary gid only).  0; -ERANGE when groups is too
 * small (uid and gid are set, *ngroups is the count needed); or -errno.
 * POSIX only: peer_unix.c has it, for peer_ident_of.
 */
int policy_peer_creds(int fd, uid_t *uid, gid_t *gid, gid_t *groups, size_t *ngroups);

#endif
