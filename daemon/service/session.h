/* SPDX-License-Identifier: MIT */
/*
 * session.h - one client of hotmapd: its handle table and the dispatch of
 * its requests (the service layer between peer.c and the storage core).
 *
 * What it must not do: read or write the connection (peer.c), or know how a
 * file is read (storage).  Every request gets a reply with its id: the
 * answer, or ERROR with an errno and a message.
 */
#ifndef HOTMAP_SESSION_H
#define HOTMAP_SESSION_H

#include <stdbool.h>

#include "daemon/transport/transport.h"	/* hm_conn */

struct server;
struct session;

/* Limits per client. */
#define SESSION_MAX_HANDLES	65536
/* Bytes one READ_DATA frame carries: small enough to bound the memory a
 * slow client pins, large enough that headers cost nothing. */
#define SESSION_READ_CHUNK	(256u * 1024u)

/* Takes ownership of the connection just accepted (closed on failure). */
int session_new(struct server *srv, hm_conn conn);
/* Closes every handle the client held.  Takes NULL. */
void session_free(struct session *s);

/*
 * Polling mode (proto/ring.h; session_ring.c), for the loop: take the
 * requests waiting in every ring (returns how many; a client whose ring is
 * corrupt is disconnected), and tell every ring's client that the loop is
 * about to sleep (idle, so it must kick) or is polling again.
 */
int session_poll_rings(struct server *srv);
void session_set_rings_idle(struct server *srv, bool idle);

#endif
