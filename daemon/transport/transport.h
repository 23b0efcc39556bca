/* SPDX-License-Identifier: MIT */
/*
 * transport.h - the daemon's transport seam: what a client connection is
 * on this platform, and who is at its other end.
 *
 * What it is for: the portable peer (peer.c), the session and the policy
 * name a connection and its client's identity only through these types,
 * so that they compile unchanged on both platforms (docs/windows.md,
 * sections 3 and 6).  The halves: peer_unix.c (a Unix stream socket,
 * SO_PEERCRED) and transport_win32.c (a named pipe instance, the client's
 * token).
 *
 * What it must not do: grow into an emulation of one platform on the
 * other.  A connection is a socket descriptor or a pipe instance, never
 * both; identity is what the platform can prove, nothing more.
 */
#ifndef HOTMAP_TRANSPORT_H
#define HOTMAP_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon/base/platform.h"	/* uid_t, gid_t */

#ifdef _WIN32
struct pipe_conn;
/* A connected pipe instance (transport_win32.c). */
typedef struct pipe_conn *hm_conn;
#define HM_CONN_NONE	NULL
#else
/* A connected Unix stream socket. */
typedef int hm_conn;
#define HM_CONN_NONE	(-1)
#endif

/* The HELLO features this transport serves (proto/frame.h): files come
 * as descriptors with the bytes (SCM_RIGHTS), or as handles the daemon
 * pulls from the client (Windows). */
#ifdef _WIN32
#define TRANSPORT_FEATURES \
	(HM_FEATURE_HANDLE_PULL | HM_FEATURE_OPEN_BY_PATH | HM_FEATURE_SHM)
#else
#define TRANSPORT_FEATURES	HM_FEATURES_ALL
#endif

/* Long enough for "uid 4294967295" and for a user SID in string form. */
#define PEER_IDENT_USER_MAX	192

/*
 * Who a client is, as the transport learned it at connect.  uid, gid and
 * groups are POSIX identities (SO_PEERCRED, SO_PEERGROUPS); on Windows
 * they stay unknown, and the user and superuser fields carry what the
 * client's token says.  Policy (policy.c) matches allow-uid and friends
 * against uid and groups, counts connections by user, and takes
 * superuser (root; on Windows LocalSystem or a member of
 * BUILTIN\Administrators) as an administrator.
 */
struct peer_ident {
	bool known;		/* the transport could tell who it is */
	pid_t pid;		/* 0: unknown */
	uid_t uid;		/* (uid_t)-1: unknown or not a POSIX system */
	gid_t gid;		/* primary group; (gid_t)-1: unknown */
	gid_t *groups;		/* supplementary groups, ngroups of them */
	size_t ngroups;
	bool superuser;
	/* The user as the platform writes it ("uid 1000", or the token's
	 * user SID "S-1-5-21-..."): what connections are counted by, and
	 * what "the daemon's own user" is compared by. */
	char user[PEER_IDENT_USER_MAX];
};

/* The client at the other end of c; id need not be initialized.  0, or
 * negative errno with id cleared (known false).  Either way id is the
 * caller's to peer_ident_clear. */
int peer_ident_of(hm_conn c, struct peer_ident *id);
/* The daemon's own identity (its effective user), as peer_ident_of. */
int peer_ident_self(struct peer_ident *id);
/* Frees what id holds and marks it unknown. */
void peer_ident_clear(struct peer_ident *id);
/* Moves from's contents into to (which must be clear); from is cleared. */
void peer_ident_move(struct peer_ident *to, struct peer_ident *from);

/*
 * A connected Unix socket's peer: uid and primary gid (SO_PEERCRED) and,
 * in groups (room for *ngroups), its supplementary groups (SO_PEERGROUPS);
 * *ngroups becomes their count.  Kernels without SO_PEERGROUPS give none
 * (*ngroups 0: the primary gid only).  0; -ERANGE when groups is too
 * small (uid and gid are set, *ngroups is the count needed); or -errno.
 * POSIX only: peer_unix.c has it, for peer_ident_of (and its test).
 */
int transport_peer_creds(int fd, uid_t *uid, gid_t *gid, gid_t *groups, size_t *ngroups);

#endif
