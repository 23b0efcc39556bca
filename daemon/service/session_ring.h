/* SPDX-License-Identifier: MIT */
/*
 * session_ring.h - polling mode (proto/ring.h): a client's requests taken
 * from the ring at the start of its shared region, and their completions
 * published there, without a frame on the socket while the loop polls.
 *
 * What it is for: session.c starts and stops a client's ring, polls it
 * for the loop (session_poll_rings in session.h, which also disconnects
 * a client whose ring is corrupt) and answers RING_KICK through what is
 * declared here.  The reads the workers do for a ring come back through
 * its own read_kind (session_state.h).
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
/*
 * Takes the requests waiting in the client's ring, as many as the
 * completion ring has room for (published and unconsumed, plus those still
 * with the workers).  Returns how many it took, or -EPROTO for a client
 * whose ring makes no sense (disconnected by the caller).
 */
int session_ring_poll(struct session *s);

#endif
