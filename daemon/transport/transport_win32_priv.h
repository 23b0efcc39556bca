/* SPDX-License-Identifier: MIT */
/*
 * transport_win32_priv.h - what the named pipe transport's two rooms
 * share: an instance of the pipe (struct pipe_conn) with its overlapped
 * operations, and the few calls on it.  transport_win32.c has the
 * completion port, the instances and the listener; peer_win32.c the
 * client's identity and the peer's half (peer_priv.h) on top of them.
 * peer_win32.c calls down into transport_win32.c, never the other way
 * but through peer.h (peer_ident_of, peer_refuse).
 *
 * What it must not do: be included outside those two files.
 */
#ifndef HOTMAP_TRANSPORT_WIN32_PRIV_H
#define HOTMAP_TRANSPORT_WIN32_PRIV_H

#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <windows.h>
#include <sddl.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "daemon/base/log.h"
#include "daemon/transport/peer.h"
#include "daemon/transport/peer_priv.h"
#include "daemon/transport/transport_win32.h"

#define TW_BUF			(64u * 1024u)
#define TW_KEY_IO		((ULONG_PTR)1)
#define TW_KEY_QUIT		((ULONG_PTR)2)
#define TW_STOP_WAIT_MS		3000
#define TW_RETRY_S		1
/* A client has this long after it connects to send its first bytes
 * (the HELLO), as SESSION_HELLO_TIMEOUT_S gives a session to finish it. */
#define TW_FIRST_BYTES_S	5

enum tw_kind { TW_CONNECT, TW_READ, TW_WRITE };

struct pipe_conn;

struct tw_op {
	OVERLAPPED ov;
	enum tw_kind kind;
	struct pipe_conn *c;
	bool busy;		/* in flight, as the loop thread sees it */
	bool failed_now;	/* the call failed at once: error says why */
	DWORD error;
	DWORD bytes;
	struct tw_op *next;	/* in the queue of completions */
};

struct pipe_conn {
	HANDLE h;
	struct tw_op rd, wr, cn;
	unsigned busy;			/* operations in flight */
	bool given_up;			/* freed once none is in flight */
	struct peer *peer;		/* whose input and output these are */
	struct pipe_listener *listener;	/* waiting for a client of it, or
					 * for its first bytes (greeting) */
	struct pipe_conn *lprev, *lnext;
	bool greeting;			/* connected, its first read not done */
	struct event *ev_first;		/* deadline for the first bytes */
	DWORD first_bytes;		/* read before the peer existed */
	DWORD pid;
	/* The system time (100 ns since 1601) when this process learned of
	 * the client: no process created later can be the client. */
	uint64_t connected_at;
	/* The process of pid, for DuplicateHandle: opened at connect, used
	 * only once process_checked (pipe_client_process_check passed);
	 * closed and NULL when it failed. */
	HANDLE process;
	DWORD process_error;		/* why OpenProcess failed */
	bool process_checked;
	uint8_t rbuf[TW_BUF];
	uint8_t wbuf[TW_BUF];
};

struct peer_io {
	struct pipe_conn *c;
};

/* The completion port's queue: op completed (from its thread). */
void tw_queue(struct tw_op *op);
/* op goes in flight; it failed at once with error (done on the loop). */
void op_begin(struct tw_op *op);
void op_done_now(struct tw_op *op, DWORD error);
/* Gives c up: cancels what is in flight (but a write, with
 * let_write_finish) and frees it once nothing is. */
void conn_give_up(struct pipe_conn *c, bool let_write_finish);
/* The next read of c, into its buffer; a write of the start of out. */
void conn_post_read(struct pipe_conn *c);
void conn_post_write(struct pipe_conn *c, struct evbuffer *out);

#endif
