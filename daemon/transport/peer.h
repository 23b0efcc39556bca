/* SPDX-License-Identifier: MIT */
/*
 * peer.h - one client connection of hotmapd: the transport layer.
 *
 * What it is for: own the connection (a Unix socket, or a named pipe
 * instance on Windows: transport.h), buffer input until a frame is
 * complete, check each header before its body is buffered, and hand whole
 * frames to the service layer; queue replies and write them as the
 * connection allows; hand over the files a client passes (descriptors
 * sent with SCM_RIGHTS, or handles the daemon pulls on Windows).
 *
 * What it must not do: interpret messages (that is session.c) or touch
 * files.  It is the only code that reads or writes a client's connection:
 * the listener only accepts connections, and the rest of the daemon that
 * uses libevent (loop.c, workers.c, session_ring.c's timer) never
 * touches one.  peer.c is the portable half; the transport's half is
 * peer_unix.c or transport_win32.c (peer_priv.h).
 *
 * Memory per connection is bounded: input is read only while less than
 * PEER_INPUT_MAX is buffered, and frames are dispatched only while less than
 * PEER_OUTPUT_HIGH of replies waits to be written.
 */
#ifndef HOTMAP_PEER_H
#define HOTMAP_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/base/platform.h"	/* uid_t, gid_t, hm_fd */
#include "daemon/transport/transport.h"	/* hm_conn, struct peer_ident */
#include "proto/frame.h"

struct event_base;
struct peer;

#define PEER_INPUT_MAX		(256u * 1024u)
#define PEER_OUTPUT_HIGH	(1u * 1024u * 1024u)
/* Frames dispatched for one client before the loop turns to the others. */
#ifndef PEER_PASS_FRAMES
#define PEER_PASS_FRAMES	64
#endif
#define PEER_OUTPUT_LOW		(256u * 1024u)
#define PEER_MAX_FDS		16	/* descriptors queued, not yet claimed */

struct peer_frame {
	struct hm_frame_header hdr;
	const uint8_t *body;	/* hdr.length bytes, valid during the call */
};

struct peer_ops {
	/* A complete frame: 0 to go on, negative errno to drop the peer. */
	int (*dispatch)(struct peer *p, const struct peer_frame *f, void *arg);
	/* Output fell below PEER_OUTPUT_LOW while the peer was paused. */
	int (*drain)(struct peer *p, void *arg);
	/*
	 * The connection is over (EOF, error, protocol violation, or a
	 * callback asked for it).  Called once, never from inside dispatch or
	 * drain; the callee frees the peer and must not expect it to be used
	 * again.  why is a short reason for the log; clean is true when the
	 * client closed the connection itself, or the idle timeout closed it
	 * (peer_closed_idle).
	 */
	void (*closed)(struct peer *p, bool clean, const char *why, void *arg);
	/*
	 * Whether the client has work the peer cannot see (jobs with the
	 * workers, requests taken from its ring since the last call): the
	 * idle timeout then starts over instead of closing it.  May be NULL.
	 */
	bool (*busy)(struct peer *p, void *arg);
	/*
	 * Whether the client has had its share of this turn of the loop
	 * (work done inline by dispatch): the peer then stops dispatching
	 * and goes on after the loop has polled everyone else.  Called after
	 * each dispatch; resets the share when it says true.  May be NULL.
	 */
	bool (*yield)(struct peer *p, void *arg);
};

/* A peer for conn, which it owns from then on (not on failure: NULL).
 * ident: the client's identity learned already (peer_ident_of), taken
 * over (ident is cleared) and not asked again; NULL: asked now. */
struct peer *peer_new(struct event_base *base, hm_conn conn, struct peer_ident *ident,
		      const struct peer_ops *ops, void *arg);
/* Closes the connection and every unclaimed descriptor.  Takes NULL. */
void peer_free(struct peer *p);

/* The connected client's identity (transport.h), learned at connect. */
const struct peer_ident *peer_ident(const struct peer *p);
/* Its uid ((uid_t)-1 where there is none, as on Windows) and pid. */
uid_t peer_uid(const struct peer *p);
pid_t peer_pid(const struct peer *p);
/* "pid 123 uid 1000" (or "pid 123 S-1-5-...") for log lines. */
const char *peer_name(const struct peer *p);

/* Queues a frame carrying msg.  0 or negative errno. */
int peer_send(struct peer *p, uint16_t type, uint32_t id, const ProtobufCMessage *msg);
/* peer_send, with fd (a descriptor the peer owns from then on: sent with
 * the frame's first byte, then closed).  -EAGAIN, before anything is
 * queued, when PEER_OUT_FDS_MAX frames with one wait already: fd stays the
 * caller's. */
int peer_send_fd(struct peer *p, uint16_t type, uint32_t id, const ProtobufCMessage *msg, hm_fd fd);
/* Queues an ERROR frame. */
int peer_send_error(struct peer *p, uint32_t id, int error, const char *fmt, ...)
	HM_PRINTF(4, 5);

/*
 * Queues one READ_DATA frame with HM_FLAG_MORE and an empty message whose
 * raw part is written in place by fill(arg, dst, len), which returns the
 * bytes it wrote (at most len) or a negative errno.  Nothing is queued when
 * fill returns 0 or an error.  Returns fill's result.
 */
ssize_t peer_send_raw(struct peer *p, uint32_t id, size_t len,
		      ssize_t (*fill)(void *arg, void *dst, size_t len), void *arg);

/*
 * Queues READ_DATA frames with HM_FLAG_MORE carrying buf[0, len) without
 * copying it: the frames refer to buf, and free(buf) runs once the last
 * byte is written (or the peer is freed).  Takes ownership of buf even on
 * failure.  0 or negative errno.
 */
int peer_send_owned(struct peer *p, uint32_t id, uint8_t *buf, size_t len);

/* Dispatches the frames waiting in the input, as soon as the loop runs
 * again (after peer_set_paused(p, false) outside a peer callback). */
void peer_kick(struct peer *p);

/* Bytes queued and not yet written. */
size_t peer_output_pending(const struct peer *p);

/* While paused, no frame is dispatched; drain is called instead. */
void peer_set_paused(struct peer *p, bool paused);

/* Closes the connection (cleanly, with "idle") once the client has sent
 * nothing for seconds while no reply or work of its is pending.  0: never. */
void peer_set_idle_timeout(struct peer *p, unsigned seconds);
/* A connection refused before it gets a peer (conn just accepted): an
 * ERROR with id 0 (about the connection, not a request) carrying error
 * and why, then the close.  Never blocks. */
void peer_refuse(hm_conn conn, int error, const char *why);

/* Closes the connection (not cleanly, with why) seconds from now, unless
 * called again first; seconds 0 cancels.  For deadlines that hold whatever
 * the client does, such as HELLO's. */
void peer_set_deadline(struct peer *p, unsigned seconds, const char *why);
/* Whether the idle timeout closed the connection (in the closed callback). */
bool peer_closed_idle(const struct peer *p);

/* Claims the oldest descriptor received and not yet claimed: the fd,
 * -EBADF when the client sent none, -EMFILE for one that came but could
 * not be received (hotmapd out of descriptors), or -ENODEV for a socket,
 * which is refused (and handed to the closer) as it arrives.  A claimed
 * descriptor goes to closer_close() (closer.h), never to close(2). */
int peer_take_fd(struct peer *p);

/*
 * The file a request passed, whichever way the platform passes it: on
 * POSIX the oldest descriptor received (peer_take_fd; value is not used),
 * on Windows the client's handle value pulled with DuplicateHandle from
 * the client's process (docs/windows.md, section 6).  0 with *f set (the
 * caller owns it: closer_close, or CloseHandle on Windows); -EBADF when
 * nothing came or value names no handle of the client; -EMFILE as for
 * peer_take_fd; -ENODEV for a socket (POSIX) or a handle that is not a
 * disk file (Windows); -EACCES when the client's process cannot be
 * asked (Windows).
 */
int peer_take_file(struct peer *p, uint64_t value, hm_fd *f);

/* Stops reading, flushes what is queued (at most a few seconds), then
 * closes with the given reason. */
void peer_close_after_flush(struct peer *p, const char *why);

#endif
