/* SPDX-License-Identifier: MIT */
/*
 * peer_fds.h - descriptors sent to a client with a frame (SCM_RIGHTS).
 *
 * What it is for: a reply that carries a descriptor (OPEN_REPLY with
 * path-descriptors) must have it on the first byte of its frame, while the
 * peer's output is one evbuffer written as the socket takes it.  The queue
 * keeps, for each such frame, how many bytes of output come before it;
 * peer_fds_write writes up to there, then that first byte alone with the
 * descriptor, so the client finds it by the byte's place in the stream.
 *
 * Must not: know frames or messages (the peer does), or block.
 */
#ifndef HOTMAP_PEER_FDS_H
#define HOTMAP_PEER_FDS_H

#include <stddef.h>

#include <event2/buffer.h>

#define PEER_OUT_FDS_MAX	8	/* frames with a descriptor not yet written */

struct peer_fds {
	struct {
		size_t at;	/* bytes of output before the frame */
		int fd;		/* owned until sent */
	} v[PEER_OUT_FDS_MAX];
	unsigned n;
};

/* fd goes with the frame that starts after the at bytes now in the output.
 * 0, or -EAGAIN when the queue is full (fd stays the caller's). */
int peer_fds_push(struct peer_fds *q, size_t at, int fd);

/* Writes the output up to each queued frame and that frame's first byte
 * with its descriptor, while the socket takes it.  1: no descriptor waits
 * any more (write the rest as usual); 0: the socket is full; -errno. */
int peer_fds_write(struct peer_fds *q, struct evbuffer *out, int sock);

/* Closes what was never sent. */
void peer_fds_clear(struct peer_fds *q);

#endif
