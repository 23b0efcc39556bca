/* SPDX-License-Identifier: MIT */
/*
 * client_priv.h - what the files of libhotmap share; never installed.
 *
 * The client, file and region objects, and the calls between the rooms of
 * the library, declared bottom up: a file calls only those declared
 * before its own.  wire.c (frames on the socket), region.c (the shared
 * region's blocks), ring.c (polling mode), fallback.c (the calls served
 * without the daemon, HOTMAP_FALLBACK=local), read_op.c (a call's READs),
 * fork.c (the list of clients fork(2) walks), netcopy.c (hotmapd's copy
 * of a network file, as mapped here), connect.c (connecting, the
 * options), open.c (OPEN, and reopening), pend.c (HOTMAP_FALLBACK=local's
 * pipelined HELLO and OPENs), call.c (a call's life, the
 * reconnect policy); above them the public calls: file.c (open, stat,
 * warm, close), read.c, view.c, admin.c; and hm_connect_opts (connect.c)
 * starts pend.c's pipelined connect.  The direct tier, beside them,
 * calls down into region.c only.  Everything declared here is hidden
 * (-fvisibility=hidden, and libhotmap.sym exports hm_* only); nothing
 * outside libhotmap includes it.
 */
#ifndef HOTMAP_CLIENT_PRIV_H
#define HOTMAP_CLIENT_PRIV_H

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "client/copy_policy.h"
#include "client/hotmap.h"
#include "client/platform.h"
#include "proto/frame.h"

struct direct_map;
struct hm_direct_slot;

#ifdef _WIN32
/* the DLL exports what its .def lists: hm_*, as libhotmap.sym says */
#define HM_EXPORT
#else
#define HM_EXPORT __attribute__((visibility("default")))
#endif

#define CLIENT_RECV_CHUNK	(64u * 1024u)
#define CLIENT_BUF_MAX		(HM_FRAME_HEADER_SIZE + HM_FRAME_MAX_MESSAGE + CLIENT_RECV_CHUNK)

/* Shared region defaults, overridable with HOTMAP_SHM_SIZE (0: none) and
 * HOTMAP_SHM_THRESHOLD (the smallest hm_pread that goes through it). */
#define CLIENT_SHM_SIZE		(16u << 20)
#define CLIENT_SHM_THRESHOLD	4096u
#define REGION_BLOCK		4096u
#define REGION_HUGE		(2u << 20)	/* a transparent huge page */
/* Requests a batch sends before reading their replies: small enough that
 * the requests never fill the socket while the daemon waits for us to read. */
#define CLIENT_BATCH_WINDOW	256u
/* Polling mode (proto/ring.h): HOTMAP_POLL=1 asks for it, 0 refuses it;
 * unset, it is asked for by a process that may run on CLIENT_POLL_MIN_CPUS
 * or more processors (os_cpu_count),
 * where a core spinning for a while costs less than a wake-up.
 * HOTMAP_POLL_US is how long a call polls for its completions before it
 * sleeps on the socket. */
#define CLIENT_POLL_MIN_CPUS	4
#define CLIENT_POLL_US		50u
#define CLIENT_POLL_US_MAX	10000u		/* as hotmapd's poll-us */
/* Direct reads: slots asked for at HELLO (a whole number of pages), and
 * reads through the daemon before a granted file is mapped (see
 * direct_map_unix.c; HOTMAP_DIRECT=0 asks for none, HOTMAP_DIRECT_AFTER
 * sets the reads).  The slots are as many as the files a process may hold
 * granted (hotmapd's max-direct-grants-per-uid, 16,384 by default, bounds
 * what it uses of them): the table is 2 MiB of the memfd, of which only
 * the pages of slots granted in are ever touched, 4 KiB per 32 grants.
 * 0: mapped at open.  An untouched mapping costs one mmap, less than the
 * round trip a read through the daemon would take, and its pages are
 * read with pread until they are hot (direct_read). */
#define CLIENT_DIRECT_SLOTS	16384u
#define CLIENT_DIRECT_AFTER	0u
/* Replies client_post leaves unread at most; one more request waits. */
#define CLIENT_POSTED_MAX	64u
/* HOTMAP_RECONNECT_MS: at most an hour */
#define CLIENT_RECONNECT_MS_MAX	3600000u
/* How often the reconnect policy tries the daemon again while it waits;
 * HOTMAP_FALLBACK=local tries as often at first, then backs off to
 * CLIENT_FALLBACK_RETRY_MAX_MS while the daemon stays away, so that a
 * daemon that refuses the client is not asked 20 times a second. */
#define CLIENT_RECONNECT_EVERY_MS	50u
#define CLIENT_FALLBACK_RETRY_MAX_MS	1000u

/*
 * The shared region: a sealed memfd the daemon copies file bytes into.
 * Space is handed out in blocks; a view holds its blocks, and a reference
 * to the region, until it is released, even after hm_disconnect.
 *
 * Every live region is on the list `regions` (regions_lock), so that
 * fork(2) can give the child a private copy of it (see fork.c).
 */
struct hm_region {
	pthread_mutex_t lock;
	unsigned refs;		/* the client, plus one per view */
	uint8_t *base;
	size_t size;
	size_t nblocks;
	uint64_t *used;		/* one bit per block */
	bool shared;		/* maps the memfd; false once a fork made it private */
	bool huge;		/* asked for transparent huge pages (region.c) */
	uint8_t *snapshot;	/* its used blocks, while a fork is under way */
	/* The direct-read slots (proto/direct.h): the memfd's last
	 * nslots * HM_DIRECT_SLOT_BYTES bytes, mapped apart from base so
	 * that a fork's privatising of the blocks leaves them shared. */
	struct hm_direct_slot *slots;
	uint32_t nslots;
	/* The daemon uses the table's last nslots - slot_first slots (HELLO),
	 * its slot i being slots[slot_first + i]. */
	uint32_t slot_first;
	struct hm_region *prev, *next;	/* on `regions` */
};

/*
 * A call waiting for its replies (wire.c): the ids first_id ..
 * first_id + count - 1, each answered by one READ_DATA reply (ops set)
 * or the one reply frame (ops NULL); or, with ring_wake, the daemon's
 * next RING_WAKE.  On c->waits while linked; the thread that reads the
 * socket fills it in and signals cond.  Lives on its owner's stack.
 */
#define CLIENT_RX_FDS	8	/* descriptors received, not yet claimed */

struct wire_wait {
	uint32_t first_id, count;
	struct read_op *ops;	/* count of them; NULL: one reply frame */
	size_t left;		/* replies not complete yet */
	bool ring_wake;		/* waits for a RING_WAKE after wakes */
	uint32_t wakes;
	ProtobufCMessage *reply;	/* ops NULL: the frame, once here */
	int reply_fd;		/* a descriptor that came with it, or -1 */
	uint16_t reply_type_got;
	int result;		/* ops NULL: 0, or the daemon's -errno */
	int err;		/* the connection failed with it (positive) */
	char why[256];		/* the daemon's last ERROR message for it */
	bool asleep;		/* its owner waits on cond (not sending still) */
	pthread_cond_t cond;
	struct wire_wait *prev, *next;
};

/*
 * HOTMAP_FALLBACK=local pipelines (pend.c): HELLO, and each file's OPEN,
 * are sent without waiting, the client stays local (fallback.c) until
 * every reply is in, then takes them all at once.  What was sent, to
 * take the reply with: HELLO's region and what it asked for (connect.c),
 * an OPEN's own descriptor and how it went (open.c).
 */
struct hello_sent {
	struct hm_region *region;	/* offered, not yet c->region */
	hm_osfile shm_fd;		/* closed once the reply is in */
	uint32_t ring_entries;
	uint32_t legacy_slots;		/* direct_slots asked for */
	int send_rc;			/* for wire_finish */
};

struct open_sent {
	hm_osfile fd;		/* opened here for it (ours), or NONE */
	bool by_path;
	bool from_local;	/* the file's local_fd went with it */
	int send_rc;
};

/* A request in flight whose reply is taken later: HELLO (f NULL), or an
 * OPEN of f (NULL once hm_close let f go: its handle is closed when the
 * reply comes).  On c->pend_opens in the order sent. */
struct pend_req {
	struct wire_wait w;	/* begun: linked on c->waits */
	hm_file *f;
	struct open_sent sent;
	ProtobufCMessage *reply;	/* taken, not yet applied */
	int given;
	int rc;
	struct pend_req *next;
};

/*
 * Threads share a client: their requests are in flight at once, each
 * with ids of its own.  A call is a user (users) while it runs; it sends
 * its frames under send_lock, then waits for its replies (wire_wait):
 * one waiting thread at a time reads the socket (reading), hands each
 * frame to the wait its id belongs to and wakes that wait's owner; once
 * its own replies are in, it hands the reading to another waiter.
 *
 * A reconnect, or a child's first call after fork(2), runs exclusive:
 * with no user left (the connection is broken, so every wait in flight
 * has failed), and new calls wait at the door (client_enter) until it is
 * done.  A user that must wait for a reconnect leaves first.
 *
 * Polling mode: ring reads stay one call at a time, under ring_lock
 * (held across a call's ring reads and sleeps); their frames still
 * pipeline.
 */
struct hm_client {
	hm_conn conn;		/* transport.h */
	/* The client's state lock, held only for short steps, never across
	 * a system call that waits for the daemon: it guards next_id,
	 * broken, waits, reading, users, exclusive, gen, ring_wakes, the
	 * files' grants (direct_promote, direct_drop) and the swap of fd and
	 * region in a reconnect.  &lock0. */
	pthread_mutex_t *lock;
	pthread_mutex_t lock0;
	pthread_cond_t idle;	/* users reached 0, or exclusive ended */
	/* Held while one call writes its frames, so they do not interleave. */
	pthread_mutex_t send_lock;
	/* Held by the one call using the ring (polling mode). */
	pthread_mutex_t ring_lock;
	/* Held only while files is relinked, so that a fork never copies
	 * the list half changed.  Taken after lock, never before. */
	pthread_mutex_t files_lock;
	uint32_t next_id;
	int broken;		/* errno once out of step; 0 while healthy */
	struct wire_wait *waits;	/* calls waiting for replies */
	/* Requests sent by client_post whose replies nobody waits for: the
	 * reader drops them when it meets them. */
	uint32_t posted[CLIENT_POSTED_MAX];
	unsigned nposted;
	bool reading;		/* a waiter reads the socket: in, start, end are its */
	unsigned users;		/* calls running (client_enter .. client_leave) */
	bool exclusive;		/* a reconnect (or a child's first call) runs */
	unsigned gen;		/* reconnects tried: a failed call whose gen
				 * changed runs again without one of its own */
	uint32_t ring_wakes;	/* RING_WAKE frames read */
	uint8_t *in;		/* received, not yet consumed: in[start, end) */
	size_t start, end, cap;
	/* Descriptors the daemon sent (path-descriptors), each with the place
	 * in the stream of the byte it came on: a frame's first.  The reader's,
	 * as in is. */
	uint64_t rx_end;	/* bytes received on this connection */
	struct {
		uint64_t at;
		int fd;
	} rx_fds[CLIENT_RX_FDS];
	unsigned rx_nfds;
	hm_file *files;		/* open files, for hm_disconnect */
	struct hm_region *region;	/* NULL: every byte comes over the socket */
	/* region's size, or 0: read (atomic) by hm_pread before it is a
	 * user, while a reconnect may be replacing the region */
	size_t region_size;
	size_t shm_threshold;
	/* Read from the environment at hm_connect, for every reconnect too. */
	size_t shm_size;	/* HOTMAP_SHM_SIZE */
	int poll_wanted;	/* HOTMAP_POLL; -1: auto, decided at HELLO */
	bool takes_copies;	/* HOTMAP_NETWORK_COPY: Hello.takes_copies */
	/* Direct reads (direct_unix.c): HOTMAP_DIRECT asks for slots; a granted
	 * file is mapped after direct_after reads through the daemon. */
	uint32_t direct_slots;	/* 0: no direct reads */
	unsigned direct_after;
	/* Which copy a direct read takes: the copy policy's knobs (built-in,
	 * over them HOTMAP_COPY_POLICY, over it hm_options.copy_policy), and
	 * HOTMAP_COPY_LOG: each decision written to standard error. */
	struct cp_knobs copy_knobs;
	bool copy_log;
	/* Polling mode: the rings at the start of the region (block 0). */
	bool ring;
	uint32_t sq_tail;	/* requests published */
	uint32_t cq_head;	/* completions consumed */
	unsigned poll_us;	/* how long to poll before sleeping */
	/* Reconnect policy (hm_set_reconnect, HOTMAP_RECONNECT_MS): how long
	 * a call may spend getting a lost daemon back; 0: off. */
	unsigned reconnect_ms;
	/* HOTMAP_FALLBACK=local (fallback.c): with no daemon, the calls are
	 * served here on the process's own descriptors (local), and the
	 * daemon is tried again at local_retry_us.  local changes only while
	 * a call runs exclusive, so a user reads it stable. */
	bool fallback;
	bool local;
	int local_why;		/* errno of the last try at the daemon */
	unsigned local_wait_ms;	/* until the next try, backing off */
	uint64_t local_retry_us;	/* monotime_us() of the next try */
	/* The table of granted files hotmapd publishes (table_unix.c;
	 * HOTMAP_TABLE): with the fallback and a table, hm_connect does not
	 * connect (deferred: local, never due) until a call needs hotmapd
	 * (client_undefer): a file found in the table is read from this
	 * process's own mapping with no daemon at all. */
	bool table_wanted;
	struct hm_table *table;
	bool deferred;
	struct direct_map *retired;	/* grants given up under readers (direct_retire) */
	/* HOTMAP_FALLBACK=local, pipelined (pend.c): HELLO sent on conn, its
	 * reply not taken yet (NULL: none pending; read under lock), what it
	 * offered, the OPENs sent after it, and when to look for the replies
	 * again and to stop waiting for them.  Local meanwhile.  Changed
	 * under lock by users (an OPEN added, orphaned), else exclusive. */
	struct pend_req *pend_hello;
	struct hello_sent pend_hs;
	struct pend_req *pend_opens, **pend_tail;
	unsigned pend_nopens;
	uint64_t pend_check_us;
	uint64_t pend_deadline_us;
	char *socket_path;	/* NULL: the default */
	/* fork(2): the process the connection, region and handles belong
	 * to; a call from another one (a child) connects afresh first. */
	pid_t pid;
	bool fork_busy;		/* a child's copy, of calls in flight at the fork */
	bool listed;		/* on `clients` */
	hm_client *prev_live, *next_live;
};

/*
 * Every connected client and every live region, for the fork handlers.
 * Lock order: clients_lock, a client's ring_lock, its send_lock, its lock,
 * its files_lock, regions_lock, a region's lock.  No one holding a later
 * lock waits for an earlier one.  ring_lock and send_lock are held across
 * system calls (a ring sleep, a write to a full socket) and so are never
 * taken by the fork handlers; the others are held for short steps only.
 * A thread waiting for its replies holds none of them.
 */
extern pthread_mutex_t clients_lock;	/* fork.c */
extern hm_client *clients;
extern pthread_mutex_t regions_lock;	/* region.c */
extern struct hm_region *regions;

/* The direct tier (direct_unix.c and the files beside it; direct_win32.c
 * on Windows, where it is not offered).  direct_read: bytes (as pread),
 * or DIRECT_MISS when the read must go through the daemon. */
#define DIRECT_MISS ((ssize_t)-1)
bool direct_grant_holds(const hm_file *f);
int direct_promote(hm_file *f);
int direct_promote_fd(hm_file *f, hm_osfile fd);
void direct_drop(hm_file *f);
/* direct_drop while reads may be using the grant (HOTMAP_FALLBACK=local
 * going local, a reopen): the mapping kept on c->retired until
 * hm_disconnect releases it. */
void direct_retire(hm_file *f);
void direct_release_retired(hm_client *c);
void direct_heat(hm_file *f, ssize_t n);
ssize_t direct_read(hm_file *f, void *buf, size_t len, uint64_t offset);
void direct_warm(hm_file *f, uint64_t offset, uint64_t len);
/* The process's last client is gone: its idle mappings are unmapped. */
void direct_release_idle(void);
int direct_view(hm_file *f, uint64_t offset, size_t len, const void **data, size_t *got,
		struct direct_map **held);
int direct_map_check(const struct direct_map *m);
/* hm_read_stats' direct part: the estimates of f's mapping, if any. */
void direct_read_stats(hm_file *f, struct hm_read_stats *st);
void direct_map_ref(struct direct_map *m);
void direct_map_unref(struct direct_map *m);

/* One READ on the wire: into buf over the socket, or into the region. */
struct read_op {
	uint64_t handle;
	uint64_t offset;
	size_t len;
	uint8_t *buf;
	bool shm;
	size_t shm_off;
	bool ring;		/* through the ring, not a frame (polling mode) */
	uint32_t id;
	size_t got;		/* socket bytes received so far */
	bool done;
	ssize_t result;		/* bytes, or -errno from the daemon */
	hm_file *file;		/* whose handle it is: a local read's file */
	bool local;		/* read here, not through the daemon (fallback.c) */
};

struct hm_file {
	hm_client *c;
	uint64_t handle;	/* 0: lost in a reconnect (ESTALE) */
	char *path;		/* as given to hm_open, for a reconnect; NULL for hm_open_fd */
	/*
	 * hm_open_fd: the caller's descriptor, passed as it is at every
	 * (re)open and never closed, nor dup'ed and closed, by the library:
	 * closing any descriptor of a file drops every fcntl lock the
	 * process holds on it.  dev and ino are the file it named at
	 * hm_open_fd, so that a descriptor number the caller closed and
	 * reused for another file is not passed in its place.  -1: hm_open.
	 * (Windows: the caller's HANDLE, of hm_open_handle or of hm_open_fd's
	 * CRT descriptor; dev and ino its volume serial and file index.)
	 */
	hm_osfile fd;
	uint64_t dev;
	uint64_t ino;
	int flags;
	hm_file *prev, *next;
	/* Direct reads: the grant the OPEN reply carried (dslot, dgen,
	 * dsize), the mapping once promoted (atomic: read without the
	 * lock), hm_open's own descriptor kept until then, and the heat. */
	bool direct_ok;
	uint32_t dslot;
	uint64_t dgen;
	uint64_t dsize;
	uint32_t block_reads;	/* the daemon's prior (cp_prior) */
	uint32_t block_reads_low;	/* and its low mark */
	struct direct_map *dm;
	hm_osfile own_fd;
	/* HOTMAP_FALLBACK=local: the descriptor hm_open's file is read
	 * with while the client is local (fallback.c); -1 otherwise */
	hm_osfile local_fd;
	unsigned heat_reads;
	/* HOTMAP_FALLBACK=local, pipelined: its OPEN in flight (pend.c), or
	 * NULL; pend_skip: not to be sent again in this round (its descriptor
	 * is gone: lost, ESTALE). */
	struct pend_req *pend;
	bool pend_skip;
	/* Found in the table of granted files at its open (table_unix.c):
	 * read here for good, from its mapping while the table's entry
	 * holds, else by pread on own_fd (or fd); never sent to hotmapd. */
	bool table;
	/* On a network file system (netfs.c): read with pread on fd, or on
	 * own_fd kept for it, not through the daemon; or from copy (atomic:
	 * read without the lock), hotmapd's copy of the file mapped
	 * read-only, copy_len bytes, once OPEN or WARM gave one; copy_ref
	 * holds the mapping for f and for each view into it. */
	bool net;
	const uint8_t *copy;
	uint64_t copy_len;
	struct net_copy *copy_ref;
	struct hm_stat st;	/* as opened, for hm_stat of a granted file */
	/* How its reads went (hm_read_stats): relaxed atomic counts. */
	struct file_reads {
		uint64_t daemon, pread, copy, touch, view, probes;
		uint64_t populates, populate_ns, forgets;
	} reads;
};

/* Whether an OPEN reply's backend and reason make f a network file that
 * this process reads itself (netfs.c): not granted, read with pread by
 * the daemon because it is on a network file system (and the reply says
 * network: a FUSE file system the daemon does not know for one is read
 * by the daemon, as before). */
static inline bool
net_wanted(const hm_file *f, int backend, int reason)
{
	return !f->direct_ok && backend == HM_BACKEND_PREAD && reason == HM_REASON_NETWORK_FS;
}

/* One more of a file's reads counted (hm_read_stats).  A load and a
 * store, not a locked add: on the direct tier's fastest reads (0.2 us) a
 * locked add is a tenth of the read.  Threads reading one file at once
 * may lose a count now and then; a count is never torn. */
#define FILE_COUNT(f, field, n) \
	__atomic_store_n(&(f)->reads.field, \
			 __atomic_load_n(&(f)->reads.field, __ATOMIC_RELAXED) + (uint64_t)(n), \
			 __ATOMIC_RELAXED)

/* A read op's count: through the daemon, or pread(2) here (fallback.c). */
#define OP_COUNT(f, op) \
	do { \
		if ((op)->local) \
			FILE_COUNT(f, pread, 1); \
		else \
			FILE_COUNT(f, daemon, 1); \
	} while (0)

static inline int
fail(int err)
{
	errno = err;
	return -1;
}

/* Checks a range as pread(2) would: 0 or -EINVAL. */
static inline int
check_range(size_t len, uint64_t offset)
{
	if (len > SSIZE_MAX || offset > INT64_MAX || len > (uint64_t)INT64_MAX - offset)
		return -EINVAL;
	return 0;
}

/* wire.c: frames on the socket.  The client's lock not held, but by
 * client_break (either way) and where said. */
void set_last_error(const char *msg);
int client_break(hm_client *c, int err);
int client_write(hm_client *c, const uint8_t *buf, size_t len, int pass_fd);
int client_send(hm_client *c, uint16_t type, uint32_t id, const ProtobufCMessage *msg,
		int pass_fd);
int client_fill(hm_client *c, size_t need);
int client_recv_raw(hm_client *c, uint8_t *dst, size_t n);
/* client_call, and *fd the descriptor that came with the reply (or -1). */
int client_call_fd(hm_client *c, uint16_t type, const ProtobufCMessage *req, int pass_fd,
		   uint16_t reply_type, ProtobufCMessage **reply, int *fd);
int client_call(hm_client *c, uint16_t type, const ProtobufCMessage *req, int pass_fd,
		uint16_t reply_type, ProtobufCMessage **reply);
int wire_begin(hm_client *c, struct wire_wait *w, struct read_op *ops, uint32_t count,
	       uint32_t ids);
int wire_send_frames(hm_client *c, const uint8_t *buf, size_t len, int pass_fd);
int wire_finish(hm_client *c, struct wire_wait *w, int rc);
uint32_t wire_ring_wakes(hm_client *c);
int wire_wait_ring(hm_client *c, uint32_t wakes);
void wire_reset(hm_client *c);
int client_post(hm_client *c, uint16_t type, const ProtobufCMessage *req, uint16_t reply_type);
int wire_reply(hm_client *c, struct wire_wait *w, int rc, uint16_t reply_type,
	       ProtobufCMessage **reply, int *fd);
bool wire_answered(hm_client *c, const struct wire_wait *w);
int wire_take_ready(hm_client *c);

/* region_unix.c, region_win32.c: the memory of region r (r->size bytes,
 * then slots direct-read slots of table bytes), shared with the daemon:
 * maps r->base (and r->slots), sets r->huge; *fd: what HELLO passes (a
 * memfd, or a section's handle).  0 or -errno.  region_unmap undoes it. */
int region_map(struct hm_region *r, size_t table, uint32_t slots, hm_osfile *fd);
void region_unmap(struct hm_region *r);

/* region.c: the shared region's blocks and references. */
struct hm_region *region_new(size_t size, uint32_t slots, hm_osfile *fd);
void region_ref(struct hm_region *r);
void region_unref(struct hm_region *r);
bool region_block_used(const struct hm_region *r, size_t i);
void region_mark(struct hm_region *r, size_t first, size_t n, bool used);
int region_alloc(struct hm_region *r, size_t len, size_t *off);
void region_free(struct hm_region *r, size_t off, size_t len);
void region_slots_used(struct hm_region *r, uint32_t n);

/* ring.c: the ring ops of ops[0..n).  ring_lock held, not lock. */
int client_ring_reads(hm_client *c, struct read_op *ops, size_t n);

/* fallback.c: HOTMAP_FALLBACK=local, the calls served without the
 * daemon.  Exclusive, the lock not held: fallback_drop_conn, the
 * connection and its region let go (as a reconnect lets them go before
 * it connects); fallback_enter, that and every file read here from now
 * on (why: the errno the daemon was not reached with); fallback_leave,
 * the files moved to the daemon, their descriptors closed.
 * fallback_due: local, and time to try the daemon again (lock held).  A
 * user's: fallback_open, f opened here; fallback_reads, ops read here;
 * fallback_request, a request answered here (STAT, WARM) or -ENOTCONN.
 * fallback_drop: f's descriptor closed (hm_close, hm_disconnect). */
#define FALLBACK_HANDLE UINT64_MAX	/* a file's handle while local */
void fallback_drop_conn(hm_client *c);
void fallback_enter(hm_client *c, int why);
void fallback_leave(hm_client *c);
bool fallback_due(const hm_client *c);
/* A deferred client (hm_connect with the table) made due to try hotmapd:
 * whether it was deferred.  Lock not held. */
bool client_undefer(hm_client *c);

/* table_unix.c (stubs on Windows): the table of granted files beside
 * socket_path, mapped (once a process, kept until it exits), if it is
 * one to trust: a regular file of root's, the caller's or the daemon
 * user's (trust.h), that nobody else may write, and that a live hotmapd
 * holds locked.  NULL otherwise.  table_take: f, just opened here with
 * flags, found in c's table: read from its own mapping under the
 * table's entry from now on (f->table); 0, or -errno (f stays as it
 * was). */
struct hm_table *table_attach(const char *socket_path);
int table_take(hm_client *c, hm_file *f, int flags);
int fallback_open(hm_client *c, hm_file *f, int flags);
int fallback_reads(hm_client *c, struct read_op *ops, size_t n);
int fallback_request(hm_client *c, hm_file *f, uint16_t type, const ProtobufCMessage *req,
		     ProtobufCMessage **reply);
void fallback_drop(hm_file *f);
/* The pipelined requests forgotten (their waits gone with wire_reset, or
 * never read), their region let go.  Lock held or the client alone. */
void fallback_forget_pend(hm_client *c);

/* read_op.c: ops[0..n), each with its place in the region (shm, shm_off)
 * or its buffer, sent and waited for, each op's result set.  A user. */
int client_do_reads(hm_client *c, struct read_op *ops, size_t n);

/* fork.c: the list of clients the fork handlers walk. */
void client_list(hm_client *c);
/* true when no client of the process is listed any more */
bool client_unlist(hm_client *c);
/* fork_unix.c, fork_win32.c */
void fork_watch(void);
/* getpid(2), without a system call once fork_watch has run. */
pid_t fork_pid(void);

/* netcopy.c: hotmapd's copy of f's network file, fd (taken: closed here)
 * of size bytes, read from now on when it checks out (and f has none yet:
 * it keeps the version it was given until hm_close, a reconnect too);
 * else read as before.  c's lock held.  net_copy_drop: f lets go of it
 * (hm_close, hm_disconnect: no reader left). */
void net_copy_take(hm_file *f, int fd, uint64_t size);
void net_copy_drop(hm_file *f);
/* From f's copy: bytes (clipped at its end), or DIRECT_MISS when f has
 * none.  No lock, no user of the client. */
ssize_t net_copy_read(hm_file *f, void *buf, size_t len, uint64_t offset);
/* A view into f's copy: 0 with *data and *n (clipped at its end) and
 * *ref held until net_copy_unref, which unmaps the copy once neither f
 * nor a view holds it; DIRECT_MISS when f has no copy. */
int net_copy_view(hm_file *f, uint64_t offset, size_t len, const void **data, size_t *n,
		  struct net_copy **ref);
void net_copy_unref(struct net_copy *ref);

/* What f holds besides itself, given back: its grant and mapping, its
 * local descriptor, its copy (hm_close, hm_disconnect, an open that
 * failed).  c's lock held, or no other user of c left. */
static inline void
client_file_drop(hm_file *f)
{
	direct_drop(f);
	fallback_drop(f);
	net_copy_drop(f);
}

/* connect.c: connects c (socket_path NULL: the default endpoints) and
 * says HELLO, offering a new region.  0 or -errno.  In two halves for
 * pend.c: client_hello_send connects and sends HELLO as w's request
 * (0: begun, even if the send failed, hs->send_rc; -errno: nothing
 * begun), client_hello_finish takes the reply (waiting for it unless it
 * is in) and gives c the region. */
int client_connect(hm_client *c, const char *socket_path);
int client_hello_send(hm_client *c, const char *socket_path, struct wire_wait *w,
		      struct hello_sent *hs);
int client_hello_finish(hm_client *c, struct wire_wait *w, struct hello_sent *hs);

/* open.c: OPEN of f on c's connection, and of every open file again. */
int client_open(hm_client *c, hm_file *f, int flags);
int client_reopen(hm_client *c);
/* client_open in halves (pend.c): the OPEN sent as w's request (0: begun,
 * even if the send failed, os->send_rc; -errno: nothing begun), and its
 * reply (taken with wire_reply) applied to f.  A file read locally keeps
 * its local_fd until the apply. */
int client_open_send(hm_client *c, hm_file *f, int flags, struct wire_wait *w,
		     struct open_sent *os);
void client_open_apply(hm_client *c, hm_file *f, int flags, struct open_sent *os,
		       ProtobufCMessage *reply, int given);

/* pend.c: HOTMAP_FALLBACK=local's pipelined connection.  pend_begin:
 * connect and HELLO sent, then every file's OPEN; the client local until
 * the replies are in (0, or -errno: nothing pending).  pend_open: f's
 * OPEN sent (a user; f local, linked).  pend_due: time to look for the
 * replies (lock held).  pend_settle: the replies that are in taken, and
 * once all are, the client moves to the daemon; wait: for them, up to
 * the deadline; a failure, or the deadline, leaves the client local
 * (fallback_enter).  Exclusive, the lock not held. */
#define CLIENT_PEND_MAX		64u	/* OPENs in flight at once */
#define CLIENT_PEND_CHECK_US	100u	/* how often calls look for the replies */
#define CLIENT_PEND_WAIT_MS	1000u	/* the longest time without a reply */
int pend_begin(hm_client *c);
void pend_open(hm_client *c, hm_file *f);
bool pend_due(hm_client *c);
void pend_settle(hm_client *c, bool wait);

/* call.c: a public call's life on its client, under the reconnect policy. */
unsigned client_enter(hm_client *c);
void client_leave(hm_client *c);
bool client_retry(hm_client *c, int rc, bool *retried, unsigned *gen);
int client_with_retry(hm_client *c, int (*fn)(hm_client *c, void *arg), void *arg);
/* Whether c's connection is lost and the policy gets it back.  Lock held. */
bool client_wants_reconnect(const hm_client *c);
int client_request(hm_client *c, uint16_t type, const ProtobufCMessage *req, uint16_t reply_type,
		   ProtobufCMessage **reply);
int client_file_request(hm_file *f, uint16_t type, const ProtobufCMessage *req, uint64_t *handle,
			uint16_t reply_type, ProtobufCMessage **reply);
int client_file_request_fd(hm_file *f, uint16_t type, const ProtobufCMessage *req, uint64_t *handle,
			   uint16_t reply_type, ProtobufCMessage **reply, int *fd);
/* A call that needs the daemon: pipelined replies taken first (pend.c),
 * waiting for them up to their deadline.  Not a user. */
void client_settle(hm_client *c);

/* netfs.c: a network file's reads on the process's own descriptor, as a
 * user of the client: bytes (as pread), -errno, or DIRECT_MISS when the
 * daemon reads it. */
ssize_t net_read(hm_file *f, void *buf, size_t len, uint64_t offset);
/* The same for a call that is a user already (hm_read_batch). */
ssize_t net_read_entered(hm_file *f, void *buf, size_t len, uint64_t offset);
/* hm_stat's reason_text of f as this process reads it: the daemon's
 * words, unless f reads a copy the daemon does not know it has (kept
 * across a reconnect) or does not read one it was given (refused). */
void net_stat_text(hm_file *f, struct hm_stat *st);

/* file.c: hm_open_fd, or Windows' hm_open_handle: the caller's file f. */
hm_file *client_open_osfile(hm_client *c, hm_osfile f, int flags);

#endif
