/*
 * session_priv.h - what the parts of a session (session.c, admin.c) share,
 * and nothing else includes.
 *
 * What it must not do: grow into a second public header.  A part that
 * needs a session's internals gets a small accessor here, named for what
 * it gives, not a copy of the code behind it.
 */
#ifndef HOTMAP_SESSION_PRIV_H
#define HOTMAP_SESSION_PRIV_H

#include <stdint.h>

struct peer;
struct server;
struct session;

/* The server the session belongs to, and the peer that carries its
 * frames (for replies). */
struct server *session_server(struct session *s);
struct peer *session_peer(struct session *s);

/* Answers request id with ERROR: counts it, logs it at debug level, and
 * queues the reply.  Returns what peer_send_error returns. */
int session_error(struct session *s, uint32_t id, int error, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
