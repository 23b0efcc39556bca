/*
 * session_ring.h - polling mode (proto/ring.h): a client's requests taken
 * from the ring at the start of its shared region, and their completions
 * published there, without a frame on the socket while the loop polls.
 *
 * What it is for: the loop polls every ring and tells their clients
 * whether it sleeps (session_ring_poll_all, session_ring_set_idle: in
 * session.h, the session's face to the loop); session.c starts and stops
 * a client's ring and answers RING_KICK through what is declared here.
 * The reads the workers do for a ring come back through its own
 * read_kind (session_priv.h).
 *
 * What it must not do: trust the region.  The client may change it at any
 * time, so a request is copied out before it is checked, and the indices
 * the daemon owns live in struct session, the region only getting copies.
 */
#ifndef HOTMAP_SESSION_RING_H
#define HOTMAP_SESSION_RING_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto/frame.h"

struct server;
struct session;

/* At HELLO, once the region holds a ring of the right size; and when the
 * client goes (takes a session without a ring). */
void session_ring_start(struct session *s);
void session_ring_stop(struct session *s);
/* RING_KICK, a handler of session.c's dispatch table. */
int session_ring_kick(struct session *s, uint32_t id, ProtobufCMessage *msg);

#endif
