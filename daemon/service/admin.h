/* SPDX-License-Identifier: MIT */
/*
 * admin.h - the administrative requests: STATS (and its reset), FILES,
 * CLIENTS, EVICT, CONFIG and STOP.  Each answers one request with one reply built from
 * the server's counters, the file cache or the configuration in force.
 *
 * What it is for: keeping what an administrator may ask apart from the
 * reads every client makes (session_read.c), as OpenSMTPD keeps its control
 * socket in control.c.
 *
 * What it must not do: check who asks.  Whether a peer is an administrator
 * is declared once, in the `needs_admin` column of session.c's dispatch
 * table, which alone calls these handlers.  Nor does it touch a session's
 * insides: it goes through the accessors of session_state.h.
 */
#ifndef HOTMAP_ADMIN_H
#define HOTMAP_ADMIN_H

#include <stdint.h>

#include "proto/frame.h"

struct session;

/* Handlers of session.c's dispatch table: 0, or a negative errno when the
 * reply could not be queued (as every handler there). */
int admin_stats(struct session *s, uint32_t id, ProtobufCMessage *msg);
int admin_files(struct session *s, uint32_t id, ProtobufCMessage *msg);
int admin_evict(struct session *s, uint32_t id, ProtobufCMessage *msg);
int admin_clients(struct session *s, uint32_t id, ProtobufCMessage *msg);
int admin_config(struct session *s, uint32_t id, ProtobufCMessage *msg);
/* Replies with the daemon's pid, then shuts down as on SIGTERM. */
int admin_stop(struct session *s, uint32_t id, ProtobufCMessage *msg);
/* RELOAD: server_reload, as SIGHUP does, and what it did in the reply. */
int admin_reload(struct session *s, uint32_t id, ProtobufCMessage *msg);

#endif
