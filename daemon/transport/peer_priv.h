/* SPDX-License-Identifier: MIT */
/*
 * peer_priv.h - between the portable peer (peer.c: buffering, header
 * checks, dispatch, timers) and its transport half (peer_unix.c on a
 * socket, transport_win32.c on a named pipe).  Nothing else includes it.
 *
 * The transport moves bytes between the connection and the two evbuffers
 * and tells peer.c what happened; peer.c decides what to read and write
 * next.  Every transport callback ends in peer_finish(), which may free
 * the peer (through the closed callback): it is the last thing a
 * callback does with it.
 *
 * Must not: interpret frames in the transport, or touch the connection in
 * peer.c.
 */
#ifndef HOTMAP_PEER_PRIV_H
#define HOTMAP_PEER_PRIV_H

#include <stdbool.h>

#include "daemon/transport/peer.h"
#include "daemon/transport/transport.h"

struct evbuffer;
struct peer_io;

struct peer {
	struct event_base *base;
	hm_conn conn;
	struct peer_io *io;		/* the transport's state */
	struct event *ev_flush;		/* close_after_flush deadline */
	struct event *ev_kick;		/* peer_kick */
	struct event *ev_idle;		/* peer_set_idle_timeout */
	unsigned idle_s;
	struct event *ev_deadline;	/* peer_set_deadline */
	char deadline_why[64];
	struct evbuffer *in;
	struct evbuffer *out;
	const struct peer_ops *ops;
	void *arg;

	struct peer_ident ident;
	char name[PEER_IDENT_USER_MAX + 32];	/* "pid N " and the user */

	bool paused;
	bool closing;			/* flushing, then closed */
	bool dead;			/* closed() is due */
	bool clean;			/* the client hung up itself */
	bool idle_closed;	/* closed by the idle timeout */
	char why[160];
};

/* --- the transport half ------------------------------------------------ */

/* Sets up p->io for p->conn (events, buffers).  0 or negative errno; on
 * failure p->io may be half made: peer_io_free cleans it up. */
int peer_io_new(struct peer *p);
/* Frees p->io and closes p->conn (unless HM_CONN_NONE); every descriptor
 * or handle received and not claimed is released. */
void peer_io_free(struct peer *p);
/* What peer.c wants now: reads while want_read, writes while want_write
 * (the output is not empty). */
void peer_io_update(struct peer *p, bool want_read, bool want_write);
/* No more callbacks for p: called once, right before closed(). */
void peer_io_stop(struct peer *p);
/* Whether output waits for the connection (a write is armed or in
 * flight): peer.c then does not write itself. */
bool peer_io_writing(const struct peer *p);
/* Writes what the connection takes now.  0 (also when it took nothing),
 * or negative errno: the connection failed. */
int peer_io_write(struct peer *p);

/* --- the portable half, called by the transport ------------------------ */

/* The peer is done for (why is printf-like); the next peer_finish calls
 * closed().  Only the first reason counts. */
void peer_fail(struct peer *p, const char *fmt, ...) HM_PRINTF(2, 3);
/* Bytes were appended to p->in: restart the idle timer, dispatch, write. */
void peer_input(struct peer *p);
/* The client closed its end (clean between frames, else truncated). */
void peer_input_eof(struct peer *p);
/* A read or write failed with err (positive): a clean goodbye when the
 * client hung up between frames, else the connection fails. */
void peer_io_failed(struct peer *p, const char *op, int err);
/* Writes now (p's output is not empty, no write waits): then lets
 * paused work go on and dispatches what waited for output room. */
void peer_write(struct peer *p);
/* The end of every transport callback: closes a dead peer (closed()
 * frees it) or updates what the transport waits for. */
void peer_finish(struct peer *p);

#endif
