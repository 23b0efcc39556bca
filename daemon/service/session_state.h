/* SPDX-License-Identifier: MIT */
/*
 * session_state.h - what the rooms of a session share, and nothing else
 * includes.  They call one another in one direction only:
 *
 *   session.c       the connection: accept, HELLO, the dispatch table,
 *                   OPEN/STAT/CLOSE/PING, the peer's callbacks, the free
 *   session_read.c  READ and WARM on the socket, and their completions
 *   session_ring.c  polling mode: the ring's reads and completions
 *   admin.c         the administrators' requests
 *   session_job.c   work handed to the workers, and its return
 *   session_handle.c  the handle table and the services all of them use
 *   session_direct.c  the direct-read slots and the grants on handles
 *
 * Each calls only rooms below it in this list, never one above.
 *
 * What it must not do: grow into a second public header.  A part that
 * needs a session's internals gets a small accessor here, named for what
 * it gives, not a copy of the code behind it.  admin.c uses only the
 * accessors; the read paths and the ring read and complete requests, so
 * they see struct session itself.
 */
#ifndef HOTMAP_SESSION_STATE_H
#define HOTMAP_SESSION_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/base/platform.h"	/* uid_t, gid_t */
#include "daemon/storage/storage.h"
#include "daemon/service/workers.h"
#include "proto/frame.h"

struct direct_grant;
struct session_grant;
struct event;
struct peer;
struct server;

/*
 * The work one client gets on the event loop: a read into the region (or
 * a ring entry) longer than this goes to the workers even when the page
 * cache has it, and a pass over a client's requests stops once this much
 * was copied inline (or SESSION_PASS_FRAMES frames dispatched, in peer.c),
 * so that the loop turns to the other clients.
 */
/* Readahead for handles read in order: each read that continues the last
 * one asks for the next window ahead of it, doubling up to the maximum;
 * a jump starts over.  The kernel's own readahead is per descriptor, and
 * the daemon's descriptor is shared by every reader of the file. */
#define SESSION_RA_MIN		(256u * 1024u)
#define SESSION_RA_MAX		(16u * 1024u * 1024u)

#ifndef SESSION_INLINE_MAX
#define SESSION_INLINE_MAX	(1u * 1024u * 1024u)
#endif

struct session_handle {
	bool used;
	struct storage_handle h;
	uint64_t next;		/* where the last read ended */
	uint64_t ra_end;	/* readahead asked for up to here */
	uint32_t ra_window;	/* 0: not sequential (yet) */
	uint32_t ra_max;	/* largest window: network-fs-chunk for network
				 * files (captured at open), else SESSION_RA_MAX */
	struct session_grant *grant;	/* its direct grant and slot, or NULL */
	/* A copy of its network file given with OPEN or WARM (file_copy.c):
	 * its size and when it was filled (monotime_ns); 0: none given */
	uint64_t copy_size;
	uint64_t copy_filled_ns;
};

/* A READ being streamed: one chunk at a time while the socket takes it. */
struct session_stream {
	bool active;
	bool waiting;		/* for a worker to read the next chunk */
	uint32_t id;
	uint64_t t0;		/* when the READ came (monotime_ns) */
	size_t slot;
	uint64_t offset;
	uint64_t remaining;
	uint64_t total;
};

struct session {
	struct server *srv;
	struct peer *peer;
	struct session *prev, *next;
	bool hello_done;
	bool takes_copies;	/* Hello.takes_copies: given copies (file_copy.c) */

	struct session_handle *handles;
	size_t nhandles;	/* slots allocated */
	size_t used;		/* slots in use */
	size_t free_hint;	/* lowest slot that may be free */

	struct session_stream stream;

	/* The client's shared region (HELLO with shm_size): READs with
	 * to_shm land here.  Sealed against shrinking, so a copy into it
	 * cannot fault. */
	uint8_t *shm;
	size_t shm_size;	/* what READs may fill: the direct slots excluded */
	size_t shm_map_size;	/* all of the region */
	bool region_huge;	/* of transparent huge pages (Hello region_huge) */
	/* Direct reads: the slots at the end of the region (proto/direct.h)
	 * it uses, and which are free, found in O(1) and with nothing kept per
	 * slot (session_direct.c): those from direct_fresh on were never
	 * used; direct_free holds the grants of closed handles, each with its
	 * slot, for the next.  So what the daemon allocates is per grant,
	 * within the handles the client opened and the slots. */
	uint32_t direct_slots;
	uint32_t direct_fresh;
	uint32_t direct_held;	/* slots a handle holds (its grant may be revoked) */
	struct session_grant *direct_free;
	char client_name[64];	/* HELLO's, for listings */
	uint64_t connected_ns;	/* monotime when it connected */
	uint64_t bytes_served;	/* file bytes given to it */
	uint64_t direct_reads;	/* what the client reported reading itself */
	uint64_t direct_bytes;
	/* how its reads were served: daemon, the read requests taken
	 * (session_count_read); the rest as it reported them (direct.c) */
	struct storage_read_ways ways;

	/* Polling mode: the rings at the start of shm (proto/ring.h).  The
	 * indices the daemon owns live here; the region only gets copies. */
	bool ring;
	uint32_t sq_head;	/* requests taken */
	uint32_t cq_tail;	/* completions published */
	unsigned ring_pending;	/* taken, not yet completed (with workers) */

	unsigned inflight;	/* reads handed to workers, not yet done */
	bool ring_active;	/* requests taken from the ring since the idle
				 * timer last looked (session_busy) */
	uint64_t inflight_bytes;	/* their lengths (heap or region they fill) */
	uint64_t pass_inline;		/* bytes copied on the loop since the last
					 * yield (SESSION_INLINE_MAX) */
	struct event *ev_ring_again;	/* polls the ring again after a yield */
	/* Captured at connect from the configuration then in force. */
	unsigned max_inflight;		/* max-inflight */
	uint64_t max_inflight_bytes;	/* max-inflight-bytes */
	bool admitted;			/* allow-uid / allow-gid let it in */

	uint64_t req_t0;	/* when the request being dispatched came */
	bool req_deferred;	/* its reply comes later: time it then */
	bool paused;		/* no new requests until work completes */
	bool dead;		/* the client is gone; freed by the last job */
};

struct read_job;

/*
 * What a kind of job for the workers is: one for each destination a worker
 * fills (the region, a frame for the socket, the stream's next chunk, a
 * ring entry), and the warms, which fill none.  Chosen at submit.
 */
struct read_kind {
	bool stepped;	/* runs in steps of SESSION_STEP: one destination
			 * the worker fills in place (socket reads are a
			 * chunk each already) */
	bool warm;	/* brings a range into memory, copies nothing */
	bool fold_only;	/* a warm that only folds (storage_warm_detached) */
	int op;		/* the latency (enum server_op) it is timed in when
			 * done, its request deferred till then; or -1 */
	/* On the loop thread, for a client still there: answers the job
	 * from j->result, through the same completion as a read done
	 * inline.  May take j->heap (and set it NULL).  0, or the negative
	 * errno of a reply that could not be queued. */
	int (*done)(struct session *s, struct read_job *j);
};

/* A read handed to a worker because it might wait for the disk. */
struct read_job {
	struct worker_job job;
	struct session *s;
	const struct read_kind *kind;
	uint32_t id;
	struct storage_handle h;	/* its own reference to the entry */
	uint64_t offset;
	size_t len;
	uint8_t *dst;			/* where the worker writes */
	uint8_t *heap;			/* a socket read's, a chunk's: owned */
	struct storage_io io;
	ssize_t result;			/* of the step just run */
	uint64_t done_bytes;		/* of the steps before it */
	uint64_t charge;		/* counted in the session's inflight_bytes */
	uint64_t t0;			/* when its request came */
	bool fold;			/* a warm: huge-folios was on when asked */
	struct storage_copy *copy;	/* a warm filling a copy (file_copy.c) */
	uint64_t slot;			/* that warm's handle (1-based) */
	const struct file_entry *entry;	/* and its entry, once the job let it go */
};

/* The server the session belongs to, and the peer that carries its
 * frames (for replies). */
struct server *session_server(struct session *s);
struct peer *session_peer(struct session *s);

/* Answers request id with ERROR: counts it, logs it at debug level, and
 * queues the reply.  Returns what peer_send_error returns. */
int session_error(struct session *s, uint32_t id, int error, const char *fmt, ...)
	HM_PRINTF(4, 5);

/* The handle's slot, or NULL when the client holds no such handle. */
struct session_handle *session_handle_get(struct session *s, uint64_t handle);
/* A free slot's number (1-based), or -EMFILE / -ENOMEM.  The slot stays
 * free until session_handle_commit, once its storage handle is open. */
int64_t session_handle_alloc(struct session *s);
void session_handle_commit(struct session *s, int64_t slot);
/* Closes the handle in slot (which is in use) and frees the slot. */
void session_handle_release(struct session *s, uint64_t handle);
/* What outlives the connection while workers still read for it: the
 * session itself, and the region they may be writing into.  Frees them. */
void session_destroy(struct session *s);
/* One more read request taken on sh, for the client's and the file's
 * listings (how reads were served). */
void session_count_read(struct session *s, struct session_handle *sh);
/* Asks for the next window ahead of a reader that reads in order. */
void session_readahead(struct session_handle *sh, uint64_t offset, uint64_t length);
/* Pauses the client's requests while a stream is active or too much of
 * its work is with the workers; resumes them once neither holds. */
void session_update_pause(struct session *s);
/* Hands a read to the workers.  0, or -ENOMEM (nothing was queued). */
int session_submit(struct session *s, const struct read_kind *kind, uint32_t id,
		   struct storage_handle *h, uint64_t offset, size_t len, uint8_t *dst);
/* session_submit of a warm of handle slot that fills a copy of its
 * network file when the storage wants one (storage_copy_begin). */
int session_submit_warm(struct session *s, const struct read_kind *kind, uint32_t id,
			uint64_t slot, uint64_t offset, size_t len);
/* The copy of sh's network file, if a current one is kept: a descriptor
 * of it (sh then says it was given), or -1. */
int session_copy_give(struct session *s, struct session_handle *sh);
/* One connected client, for listings (admin_clients). */
struct session_client_info {
	pid_t pid;
	uid_t uid;
	const char *name;
	unsigned handles, direct_grants;
	uint64_t direct_reads, direct_bytes, bytes_served, connected_ms;
	bool polling, region_huge;
	struct storage_read_ways ways;
};
/* Calls cb for the connected clients from the skip-th on, until it returns
 * false; returns how many there are. */
size_t session_clients(struct server *srv, size_t skip,
		       bool (*cb)(const struct session_client_info *info, void *arg), void *arg);

/* Counts n bytes a read served (nothing for n <= 0), and whether they
 * went into the shared region. */
void session_count_served(struct session *s, ssize_t n, bool shm);
/* Whether result n is a fault writing the client's region; then the
 * client is being dropped. */
bool session_region_faulted(struct session *s, ssize_t n);

/* READ and WARM, handlers of session.c's dispatch table (session_read.c). */
int session_read(struct session *s, uint32_t id, ProtobufCMessage *msg);
int session_warm(struct session *s, uint32_t id, ProtobufCMessage *msg);
/* The warm an open asks for (asked: OPEN's warm), or that warm= in the
 * configuration gives a file first cached; size is the file's.  Behind
 * the reply: a failure only costs the warmth. */
void session_warm_open(struct session *s, uint32_t id, struct session_handle *sh, bool asked,
		       uint64_t size);
/* The peer took some output: the active stream, if any, goes on. */
int session_stream_resume(struct session *s);

#endif
