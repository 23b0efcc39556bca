/*
 * client.c - libhotmap (see hotmap.h and libhotmap(3)).
 *
 * Blocking I/O on one Unix stream socket per hm_client.  A mutex serialises
 * requests, so replies arrive in the order of the requests and a call reads
 * frames until the one with its id.  Read data is received straight into
 * the caller's buffer once the bytes already buffered are used up.
 *
 * Once the stream is out of step (the daemon vanished, or sent something
 * that is not a frame), the client is broken: every later call fails with
 * the same errno without touching the socket.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "client/hotmap.h"
#include "client/trust.h"
#include "proto/frame.h"
#include "proto/ring.h"

#define HM_EXPORT __attribute__((visibility("default")))

#define CLIENT_RECV_CHUNK	(64u * 1024u)
#define CLIENT_BUF_MAX		(HM_FRAME_HEADER_SIZE + HM_FRAME_MAX_MESSAGE + CLIENT_RECV_CHUNK)

/* Shared region defaults, overridable with HOTMAP_SHM_SIZE (0: none) and
 * HOTMAP_SHM_THRESHOLD (the smallest hm_pread that goes through it). */
#define CLIENT_SHM_SIZE		(16u << 20)
#define CLIENT_SHM_THRESHOLD	4096u
#define REGION_BLOCK		4096u
/* Requests a batch sends before reading their replies: small enough that
 * the requests never fill the socket while the daemon waits for us to read. */
#define CLIENT_BATCH_WINDOW	256u
/* Polling mode (proto/ring.h): HOTMAP_POLL=1 asks for it, 0 refuses it;
 * unset, it is asked for on machines with CLIENT_POLL_MIN_CPUS or more,
 * where a core spinning for a while costs less than a wake-up.
 * HOTMAP_POLL_US is how long a call polls for its completions before it
 * sleeps on the socket. */
#define CLIENT_POLL_MIN_CPUS	4
#define CLIENT_POLL_US		50u
#define CLIENT_POLL_US_MAX	10000u		/* as hotmapd's poll-us */
/* HOTMAP_RECONNECT_MS: at most an hour */
#define CLIENT_RECONNECT_MS_MAX	3600000u

/*
 * The shared region: a sealed memfd the daemon copies file bytes into.
 * Space is handed out in blocks; a view holds its blocks, and a reference
 * to the region, until it is released, even after hm_disconnect.
 *
 * Every live region is on the list `regions` (regions_lock), so that
 * fork(2) can give the child a private copy of it (see "fork" below).
 */
struct hm_region {
	pthread_mutex_t lock;
	unsigned refs;		/* the client, plus one per view */
	uint8_t *base;
	size_t size;
	size_t nblocks;
	uint64_t *used;		/* one bit per block */
	bool shared;		/* maps the memfd; false once a fork made it private */
	uint8_t *snapshot;	/* its used blocks, while a fork is under way */
	struct hm_region *prev, *next;	/* on `regions` */
};

struct hm_client {
	int fd;
	/* Serialises the calls: held for a whole call, the waits included.
	 * &lock0, or in a child a mutex of its own (see "fork"). */
	pthread_mutex_t *lock;
	pthread_mutex_t lock0;
	/* Held only while files is relinked, so that a fork never copies
	 * the list half changed.  Taken after lock, never before. */
	pthread_mutex_t files_lock;
	uint32_t next_id;
	int broken;		/* errno once out of step; 0 while healthy */
	uint8_t *in;		/* received, not yet consumed: in[start, end) */
	size_t start, end, cap;
	hm_file *files;		/* open files, for hm_disconnect */
	struct hm_region *region;	/* NULL: every byte comes over the socket */
	size_t shm_threshold;
	/* Read from the environment at hm_connect, for every reconnect too. */
	size_t shm_size;	/* HOTMAP_SHM_SIZE */
	bool poll_wanted;	/* HOTMAP_POLL */
	/* Polling mode: the rings at the start of the region (block 0). */
	bool ring;
	uint32_t sq_tail;	/* requests published */
	uint32_t cq_head;	/* completions consumed */
	unsigned poll_us;	/* how long to poll before sleeping */
	/* Reconnect policy (hm_set_reconnect, HOTMAP_RECONNECT_MS): how long
	 * a call may spend getting a lost daemon back; 0: off. */
	unsigned reconnect_ms;
	bool retried;		/* the call in progress has run once more */
	char *socket_path;	/* NULL: the default */
	/* fork(2): the process the connection, region and handles belong
	 * to; a call from another one (a child) connects afresh first. */
	pid_t pid;
	bool fork_held;		/* the fork handlers hold lock */
	bool fork_busy;		/* a child's copy, of a call in flight at the fork */
	bool listed;		/* on `clients` */
	hm_client *prev_live, *next_live;
};

/*
 * Every connected client and every live region, for the fork handlers.
 * Lock order: clients_lock, a client's lock, its files_lock, regions_lock,
 * a region's lock.  No one holding a later lock waits for an earlier one.
 */
static pthread_mutex_t clients_lock = PTHREAD_MUTEX_INITIALIZER;
static hm_client *clients;
static pthread_mutex_t regions_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hm_region *regions;

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
	 */
	int fd;
	dev_t dev;
	ino_t ino;
	int flags;
	hm_file *prev, *next;
};

static _Thread_local char last_error[512];

static void
set_last_error(const char *msg)
{
	snprintf(last_error, sizeof last_error, "%s", msg != NULL ? msg : "");
}

/* Marks the client broken with err (positive) and returns -err. */
static int
client_break(hm_client *c, int err)
{
	if (c->broken == 0)
		c->broken = err;
	return -err;
}

/* Writes len bytes, the first sendmsg carrying pass_fd when >= 0. */
static int
client_write(hm_client *c, const uint8_t *buf, size_t len, int pass_fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} control;
	struct msghdr mh;
	struct iovec iov;
	size_t off = 0;

	while (off < len) {
		ssize_t w;

		iov.iov_base = (void *)(buf + off);
		iov.iov_len = len - off;
		memset(&mh, 0, sizeof mh);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		if (pass_fd >= 0 && off == 0) {
			struct cmsghdr *cm;

			memset(&control, 0, sizeof control);
			mh.msg_control = control.buf;
			mh.msg_controllen = sizeof control.buf;
			cm = CMSG_FIRSTHDR(&mh);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
		}
		w = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return client_break(c, errno);
		}
		off += (size_t)w;
	}
	return 0;
}

static int
client_send(hm_client *c, uint16_t type, uint32_t id, const ProtobufCMessage *msg, int pass_fd)
{
	uint8_t small[1024], *buf = small;
	size_t size = HM_FRAME_HEADER_SIZE + frame_message_size(msg);
	int n, rc;

	if (size > sizeof small) {
		buf = malloc(size);
		if (buf == NULL)
			return -ENOMEM;
	}
	n = frame_encode(type, id, 0, msg, 0, buf, size);
	rc = n < 0 ? n : client_write(c, buf, (size_t)n, pass_fd);
	if (buf != small)
		free(buf);
	return rc;
}

/* Makes at least need bytes available at c->in + c->start. */
static int
client_fill(hm_client *c, size_t need)
{
	while (c->end - c->start < need) {
		ssize_t r;

		if (c->start > 0 && c->cap - c->start < need) {
			memmove(c->in, c->in + c->start, c->end - c->start);
			c->end -= c->start;
			c->start = 0;
		}
		if (c->cap - c->end < CLIENT_RECV_CHUNK && c->cap < CLIENT_BUF_MAX) {
			uint8_t *p = realloc(c->in, CLIENT_BUF_MAX);

			if (p == NULL)
				return -ENOMEM;
			c->in = p;
			c->cap = CLIENT_BUF_MAX;
		}
		r = recv(c->fd, c->in + c->end, c->cap - c->end, 0);
		if (r == 0)
			return client_break(c, ECONNRESET);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return client_break(c, errno);
		}
		c->end += (size_t)r;
	}
	return 0;
}

/* Copies n raw bytes of the stream to dst: what is buffered, then the rest
 * straight from the socket. */
static int
client_recv_raw(hm_client *c, uint8_t *dst, size_t n)
{
	size_t have = c->end - c->start;

	if (have > n)
		have = n;
	memcpy(dst, c->in + c->start, have);
	c->start += have;
	dst += have;
	n -= have;
	while (n > 0) {
		ssize_t r = recv(c->fd, dst, n, MSG_WAITALL);

		if (r == 0)
			return client_break(c, ECONNRESET);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return client_break(c, errno);
		}
		dst += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Reads the next frame's header and message, which must answer one of the
 * requests first_id .. first_id + count - 1 (h->id says which).  An ERROR
 * reply becomes its negative errno (message in hm_last_error); *msg is set
 * otherwise, and raw bytes, if any, are left for the caller. */
static int
client_recv_frame_of(hm_client *c, uint32_t first_id, uint32_t count,
		     struct hm_frame_header *h, ProtobufCMessage **msg)
{
	int rc;

	*msg = NULL;
	for (;;) {
		rc = client_fill(c, HM_FRAME_HEADER_SIZE);
		if (rc < 0)
			return rc;
		frame_header_decode(c->in + c->start, h);
		/* a ring wake-up that came after its completions were seen */
		if (!c->ring || h->type != HM_MSG_RING_WAKE || h->length != 0 || h->raw_length != 0)
			break;
		c->start += HM_FRAME_HEADER_SIZE;
	}
	/* an ERROR with id 0 is about the connection (refused at accept) */
	if (frame_header_check(h) < 0 ||
	    (h->id - first_id >= count && !(h->id == 0 && h->type == HM_MSG_ERROR)))
		return client_break(c, EPROTO);
	rc = client_fill(c, HM_FRAME_HEADER_SIZE + h->length);
	if (rc < 0)
		return rc;
	rc = frame_decode(h, c->in + c->start + HM_FRAME_HEADER_SIZE, msg);
	c->start += HM_FRAME_HEADER_SIZE + h->length;
	if (rc < 0)
		return client_break(c, EPROTO);
	if (h->type == HM_MSG_ERROR) {
		Hotmap__Error *e = (Hotmap__Error *)*msg;
		int err = e->error > 0 ? e->error : EIO;

		set_last_error(e->message);
		protobuf_c_message_free_unpacked(*msg, NULL);
		*msg = NULL;
		return h->id == 0 ? client_break(c, err) : -err;
	}
	return 0;
}

/*
 * A request could not be sent (rc): if the daemon refused the connection
 * at accept, it said why in an ERROR with id 0 before it closed, and that
 * is the answer.  Otherwise rc.
 */
static int
client_send_failed(hm_client *c, int rc)
{
	struct hm_frame_header h = { .type = 0 };
	ProtobufCMessage *msg = NULL;
	int r;

	if (rc != -EPIPE && rc != -ECONNRESET)
		return rc;
	r = client_recv_frame_of(c, 0, 1, &h, &msg);
	if (msg != NULL)
		protobuf_c_message_free_unpacked(msg, NULL);
	return r < 0 && h.type == HM_MSG_ERROR && h.id == 0 ? r : rc;
}

static int
client_recv_frame(hm_client *c, uint32_t id, struct hm_frame_header *h, ProtobufCMessage **msg)
{
	return client_recv_frame_of(c, id, 1, h, msg);
}

/* One request and its one-frame reply of reply_type.  Lock held. */
static int
client_call(hm_client *c, uint16_t type, const ProtobufCMessage *req, int pass_fd,
	    uint16_t reply_type, ProtobufCMessage **reply)
{
	struct hm_frame_header h;
	uint32_t id;
	int rc;

	*reply = NULL;
	if (c->broken)
		return -c->broken;
	id = c->next_id++;
	rc = client_send(c, type, id, req, pass_fd);
	if (rc < 0)
		return client_send_failed(c, rc);
	rc = client_recv_frame(c, id, &h, reply);
	if (rc < 0)
		return rc;
	if (h.type != reply_type) {
		protobuf_c_message_free_unpacked(*reply, NULL);
		*reply = NULL;
		return client_break(c, EPROTO);
	}
	return 0;
}

static int
fail(int err)
{
	errno = err;
	return -1;
}

/* --- the shared region ------------------------------------------------ */

static void
region_unref(struct hm_region *r)
{
	unsigned left;

	if (r == NULL)
		return;
	pthread_mutex_lock(&regions_lock);
	pthread_mutex_lock(&r->lock);
	left = --r->refs;
	pthread_mutex_unlock(&r->lock);
	if (left == 0) {
		if (r->prev != NULL)
			r->prev->next = r->next;
		else
			regions = r->next;
		if (r->next != NULL)
			r->next->prev = r->prev;
	}
	pthread_mutex_unlock(&regions_lock);
	if (left > 0)
		return;
	munmap(r->base, r->size);
	pthread_mutex_destroy(&r->lock);
	free(r->used);
	free(r);
}

static bool
region_block_used(const struct hm_region *r, size_t i)
{
	return (r->used[i / 64] >> (i % 64)) & 1;
}

static void
region_mark(struct hm_region *r, size_t first, size_t n, bool used)
{
	size_t i;

	for (i = first; i < first + n; i++) {
		if (used)
			r->used[i / 64] |= 1ull << (i % 64);
		else
			r->used[i / 64] &= ~(1ull << (i % 64));
	}
}

/* First fit: the offset of len free bytes (rounded up to blocks), or
 * -ENOSPC. */
static int
region_alloc(struct hm_region *r, size_t len, size_t *off)
{
	size_t need = len == 0 ? 1 : (len + REGION_BLOCK - 1) / REGION_BLOCK;
	size_t i, run = 0;
	int rc = -ENOSPC;

	if (r == NULL || need > r->nblocks)
		return -ENOSPC;
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->nblocks; i++) {
		run = region_block_used(r, i) ? 0 : run + 1;
		if (run == need) {
			region_mark(r, i + 1 - need, need, true);
			*off = (i + 1 - need) * REGION_BLOCK;
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}

static void
region_free(struct hm_region *r, size_t off, size_t len)
{
	size_t need = len == 0 ? 1 : (len + REGION_BLOCK - 1) / REGION_BLOCK;

	pthread_mutex_lock(&r->lock);
	region_mark(r, off / REGION_BLOCK, need, false);
	pthread_mutex_unlock(&r->lock);
}

/* A sealed memfd of size bytes, mapped; its descriptor in *fd. */
static struct hm_region *
region_new(size_t size, int *fd)
{
	struct hm_region *r;

	*fd = -1;
	size = (size + REGION_BLOCK - 1) / REGION_BLOCK * REGION_BLOCK;
	r = calloc(1, sizeof *r);
	if (r == NULL)
		return NULL;
	r->size = size;
	r->nblocks = size / REGION_BLOCK;
	r->used = calloc((r->nblocks + 63) / 64, sizeof *r->used);
	*fd = memfd_create("hotmap-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (r->used == NULL || *fd < 0 || ftruncate(*fd, (off_t)size) < 0 ||
	    fcntl(*fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto fail;
	r->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (r->base == MAP_FAILED)
		goto fail;
	pthread_mutex_init(&r->lock, NULL);
	r->refs = 1;
	r->shared = true;
	pthread_mutex_lock(&regions_lock);
	r->next = regions;
	if (r->next != NULL)
		r->next->prev = r;
	regions = r;
	pthread_mutex_unlock(&regions_lock);
	return r;
fail:
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	free(r->used);
	free(r);
	return NULL;
}

/* --- fork ----------------------------------------------------------------- */

/*
 * After fork(2) the child holds copies of every client's socket, region
 * and ring: were it to use them, the parent's replies would go to the
 * wrong process and the daemon would copy bytes under both.  So:
 *
 *  - No lock is inherited held, and fork never waits for a call: a call
 *    holds its client's lock while it waits for the daemon, for as long
 *    as a reconnect may take or for ever when the daemon is stopped (and
 *    a process that forks to restart the daemon would deadlock).  So the
 *    prepare handler takes every client's lock only if it is free, and
 *    the short locks (every client's files_lock, every region's) always;
 *    both sides let go after the fork.  In the child, a client whose lock
 *    was busy gets a new mutex (the old one stays locked by a thread the
 *    child has not) and is marked fork_busy: its connection, buffer and
 *    region were in a call's hands, so the child leaves them alone (they
 *    leak in the child) instead of closing or freeing them; its list of
 *    files, under files_lock, is whole.
 *  - A view the child inherited keeps the bytes it had at the fork, even
 *    when the parent releases it and its blocks are filled anew: the
 *    prepare handler, with every region's lock held (so no block is
 *    given or taken back meanwhile), copies each shared region's used
 *    blocks (the views', the ring's, and those of reads in flight, which
 *    the child never looks at) into private anonymous memory, and the
 *    child's handler moves that copy over the region (mremap), so that
 *    the child's region is private memory with the same bytes at the same
 *    address.  A MAP_PRIVATE mapping of the memfd would not do: its pages
 *    the child has not written still show the parent's later changes.
 *    Copying in the child instead would race with the parent, which runs
 *    on at once.  The parent only frees the copy.
 *  - The child's first call on an inherited client (client_revive checks
 *    the pid, which also covers a child made without the handlers, such
 *    as by a raw clone) closes the child's copy of the socket, drops its
 *    copy of the region (the views keep it), connects afresh with a
 *    region of its own, and reopens the files as a reconnect does.  It
 *    never writes to the inherited socket nor touches the inherited ring.
 */

/* Private anonymous memory holding r's used blocks, or NULL. */
static uint8_t *
region_snapshot(const struct hm_region *r)
{
	uint8_t *p = mmap(NULL, r->size, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	size_t i = 0, j;

	if (p == MAP_FAILED)
		return NULL;
	while (i < r->nblocks) {
		if (!region_block_used(r, i)) {
			i++;
			continue;
		}
		for (j = i; j < r->nblocks && region_block_used(r, j); j++)
			;
		memcpy(p + i * REGION_BLOCK, r->base + i * REGION_BLOCK, (j - i) * REGION_BLOCK);
		i = j;
	}
	return p;
}

/* In the child: r becomes private memory with the bytes of the fork. */
static void
region_privatise(struct hm_region *r)
{
	uint8_t *p = r->snapshot;

	r->snapshot = NULL;
	if (!r->shared)
		return;	/* private already (a fork of a child) */
	if (p == NULL)
		p = region_snapshot(r);	/* the prepare handler ran out of memory */
	if (p == NULL)
		return;	/* the views go on seeing the memfd: nothing better left */
	if (mremap(p, r->size, r->size, MREMAP_MAYMOVE | MREMAP_FIXED, r->base) == MAP_FAILED) {
		munmap(p, r->size);
		return;
	}
	r->shared = false;
}

static void
atfork_prepare(void)
{
	struct hm_region *r;
	hm_client *c;

	pthread_mutex_lock(&clients_lock);
	for (c = clients; c != NULL; c = c->next_live) {
		c->fork_held = pthread_mutex_trylock(c->lock) == 0;
		pthread_mutex_lock(&c->files_lock);
	}
	pthread_mutex_lock(&regions_lock);
	for (r = regions; r != NULL; r = r->next) {
		pthread_mutex_lock(&r->lock);
		r->snapshot = r->shared ? region_snapshot(r) : NULL;
	}
}

static void
atfork_parent(void)
{
	struct hm_region *r;
	hm_client *c;

	for (r = regions; r != NULL; r = r->next) {
		if (r->snapshot != NULL)
			munmap(r->snapshot, r->size);	/* the child's copy stays */
		r->snapshot = NULL;
		pthread_mutex_unlock(&r->lock);
	}
	pthread_mutex_unlock(&regions_lock);
	for (c = clients; c != NULL; c = c->next_live) {
		pthread_mutex_unlock(&c->files_lock);
		if (c->fork_held)
			pthread_mutex_unlock(c->lock);
	}
	pthread_mutex_unlock(&clients_lock);
}

static void
atfork_child(void)
{
	struct hm_region *r;
	hm_client *c;

	for (r = regions; r != NULL; r = r->next) {
		region_privatise(r);
		pthread_mutex_unlock(&r->lock);
	}
	pthread_mutex_unlock(&regions_lock);
	/* the clients connect afresh at their first call (client_revive) */
	for (c = clients; c != NULL; c = c->next_live) {
		pthread_mutex_unlock(&c->files_lock);
		if (c->fork_held) {
			pthread_mutex_unlock(c->lock);
		} else {
			pthread_mutex_t *m = malloc(sizeof *m);

			/* Without memory, reinitialising the locked mutex is
			 * what is left; glibc allows it in practice. */
			if (m != NULL)
				c->lock = m;
			pthread_mutex_init(c->lock, NULL);
			c->fork_busy = true;
		}
	}
	pthread_mutex_unlock(&clients_lock);
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void
atfork_register(void)
{
	/* On failure (ENOMEM) the pid check still gives a child its own
	 * connection; only its inherited views are unprotected. */
	(void)pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

static void
client_list(hm_client *c)
{
	pthread_mutex_lock(&clients_lock);
	c->next_live = clients;
	if (c->next_live != NULL)
		c->next_live->prev_live = c;
	clients = c;
	c->listed = true;
	pthread_mutex_unlock(&clients_lock);
}

static void
client_unlist(hm_client *c)
{
	if (!c->listed)
		return;
	pthread_mutex_lock(&clients_lock);
	if (c->prev_live != NULL)
		c->prev_live->next_live = c->next_live;
	else
		clients = c->next_live;
	if (c->next_live != NULL)
		c->next_live->prev_live = c->prev_live;
	c->listed = false;
	pthread_mutex_unlock(&clients_lock);
}

static size_t
env_size(const char *name, size_t dflt)
{
	const char *v = getenv(name);
	unsigned long long n;
	char *end;

	if (v == NULL || *v == '\0')
		return dflt;
	errno = 0;
	n = strtoull(v, &end, 0);
	if (errno != 0 || v[0] == '-')
		return dflt;
	switch (*end) {
	case 'k': case 'K': n <<= 10; end++; break;
	case 'm': case 'M': n <<= 20; end++; break;
	case 'g': case 'G': n <<= 30; end++; break;
	}
	if (*end != '\0' || n > HM_SHM_MAX)
		return dflt;
	return (size_t)n;
}

/* name as a plain number of at most max, else dflt. */
static unsigned
env_uint(const char *name, unsigned dflt, unsigned max)
{
	const char *v = getenv(name);
	unsigned long n;
	char *end;

	if (v == NULL || *v == '\0' || v[0] == '-')
		return dflt;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno != 0 || *end != '\0' || n > max)
		return dflt;
	return (unsigned)n;
}

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* HOTMAP_POLL: 1/yes/on, 0/no/off, or unset (auto: enough cores). */
static bool
env_poll_wanted(void)
{
	const char *v = getenv("HOTMAP_POLL");

	if (v != NULL && (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "on")))
		return true;
	if (v != NULL && (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "off")))
		return false;
	return sysconf(_SC_NPROCESSORS_ONLN) >= CLIENT_POLL_MIN_CPUS;
}

static int
client_connect(hm_client *c, const char *socket_path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	Hotmap__Hello hello = HOTMAP__HELLO__INIT;
	Hotmap__HelloReply *r;
	ProtobufCMessage *reply;
	char path[sizeof sa.sun_path], why[512];
	int shm_fd = -1, rc;

	if (socket_path == NULL) {
		rc = frame_default_socket(path, sizeof path);
		if (rc < 0)
			return rc;
		socket_path = path;
	}
	if (strlen(socket_path) >= sizeof sa.sun_path)
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -errno;
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		return -errno;
	/* Before HELLO: it passes the region's memfd, a descriptor too. */
	rc = client_trust_daemon(c->fd, sa.sun_path, why, sizeof why);
	if (rc < 0) {
		set_last_error(why);
		return rc;
	}
	hello.version = HM_PROTO_VERSION;
	hello.features = HM_FEATURES_ALL;
	hello.client_name = (char *)program_invocation_short_name;
	if (c->shm_size > 0)
		c->region = region_new(c->shm_size, &shm_fd);
	if (c->region != NULL)
		hello.shm_size = c->region->size;
	if (c->region != NULL && c->region->size >= 2 * HM_RING_BYTES && c->poll_wanted) {
		_Static_assert(HM_RING_BYTES == REGION_BLOCK, "the rings take block 0");
		region_mark(c->region, 0, 1, true);
		hello.ring_entries = HM_RING_ENTRIES;
	}
	rc = client_call(c, HM_MSG_HELLO, &hello.base, shm_fd, HM_MSG_HELLO_REPLY, &reply);
	if (shm_fd >= 0)
		close(shm_fd);
	if (rc < 0)
		return rc;
	r = (Hotmap__HelloReply *)reply;
	rc = r->version == HM_PROTO_VERSION ? 0 : -EPROTONOSUPPORT;
	if (!r->shm_accepted) {
		/* An older or stricter daemon: everything over the socket. */
		region_unref(c->region);
		c->region = NULL;
	} else if (hello.ring_entries > 0 && !r->ring_accepted) {
		region_mark(c->region, 0, 1, false);
	} else if (hello.ring_entries > 0) {
		c->ring = true;
	}
	protobuf_c_message_free_unpacked(reply, NULL);
	return rc;
}

HM_EXPORT hm_client *
hm_connect(const char *socket_path)
{
	hm_client *c;
	int rc;

	set_last_error(NULL);
	c = calloc(1, sizeof *c);
	if (c == NULL)
		return NULL;
	c->fd = -1;
	c->next_id = 1;
	c->pid = getpid();
	c->shm_threshold = env_size("HOTMAP_SHM_THRESHOLD", CLIENT_SHM_THRESHOLD);
	c->shm_size = env_size("HOTMAP_SHM_SIZE", CLIENT_SHM_SIZE);
	c->poll_wanted = env_poll_wanted();
	c->poll_us = env_uint("HOTMAP_POLL_US", CLIENT_POLL_US, CLIENT_POLL_US_MAX);
	c->reconnect_ms = env_uint("HOTMAP_RECONNECT_MS", 0, CLIENT_RECONNECT_MS_MAX);
	c->lock = &c->lock0;
	pthread_mutex_init(c->lock, NULL);
	pthread_mutex_init(&c->files_lock, NULL);
	if (socket_path != NULL && (c->socket_path = strdup(socket_path)) == NULL) {
		hm_disconnect(c);
		errno = ENOMEM;
		return NULL;
	}
	pthread_once(&atfork_once, atfork_register);
	rc = client_connect(c, socket_path);
	if (rc < 0) {
		hm_disconnect(c);
		errno = -rc;
		return NULL;
	}
	client_list(c);
	return c;
}

HM_EXPORT void
hm_disconnect(hm_client *c)
{
	int saved = errno;

	if (c == NULL)
		return;
	client_unlist(c);
	while (c->files != NULL) {
		hm_file *f = c->files;

		c->files = f->next;
		free(f->path);
		free(f);
	}
	free(c->socket_path);
	if (!c->fork_busy) {
		if (c->fd >= 0)
			close(c->fd);	/* the daemon closes the handles with the
					 * session; in a child, only its copy closes */
		region_unref(c->region);	/* views may keep it mapped */
		free(c->in);
	}
	pthread_mutex_destroy(c->lock);
	if (c->lock != &c->lock0)
		free(c->lock);
	pthread_mutex_destroy(&c->files_lock);
	free(c);
	errno = saved;
}

static int
open_locally(const char *path)
{
	/* O_NONBLOCK: opening a FIFO must not wait for a writer. */
	return open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
}

/*
 * path, made absolute against the working directory now (malloced): the
 * daemon's working directory is not ours, and a reconnect reopens the
 * same file whatever chdir(2) happened since.  NULL and errno.
 */
static char *
absolute_path(const char *path)
{
	char cwd[PATH_MAX], *abs;

	if (path[0] == '/')
		return strdup(path);
	if (getcwd(cwd, sizeof cwd) == NULL)
		return NULL;
	if (asprintf(&abs, "%s/%s", cwd, path) < 0)
		return NULL;
	if (strlen(abs) >= PATH_MAX) {
		free(abs);
		errno = ENAMETOOLONG;
		return NULL;
	}
	return abs;
}

/*
 * OPEN of f with flags (checked by the caller): by path (HM_O_PATH), by
 * the caller's descriptor (hm_open_fd), or by a descriptor opened here
 * and closed again (hm_open).  Sets f->handle, or returns -errno.  Lock
 * held.
 */
static int
client_open(hm_client *c, hm_file *f, int flags)
{
	Hotmap__Open req = HOTMAP__OPEN__INIT;
	ProtobufCMessage *reply = NULL;
	struct stat st;
	int fd = -1, rc;

	req.policy = flags & HM_O_MMAP ? 1 : flags & HM_O_PREAD ? 2 : 0;
	req.warm = (flags & HM_O_WARM) != 0;
	req.path = f->path;
	if (f->fd >= 0) {
		/* A descriptor that is gone must not break the connection
		 * (sendmsg refuses it) and one that names another file now
		 * must not be read in its place. */
		if (fstat(f->fd, &st) < 0)
			return -EBADF;
		if (st.st_dev != f->dev || st.st_ino != f->ino)
			return -ESTALE;
	} else if (flags & HM_O_PATH) {
		req.by_path = true;
	} else {
		fd = open_locally(f->path);
		if (fd < 0)
			return -errno;
	}
	rc = client_call(c, HM_MSG_OPEN, &req.base, f->fd >= 0 ? f->fd : fd, HM_MSG_OPEN_REPLY,
			 &reply);
	if (fd >= 0)
		close(fd);	/* ours, not the caller's: the daemon has its own copy */
	if (rc < 0)
		return rc;
	f->handle = ((Hotmap__OpenReply *)reply)->handle;
	protobuf_c_message_free_unpacked(reply, NULL);
	return 0;
}

/* The connection failed (the daemon went away), as opposed to a request. */
static bool
connection_lost(int err)
{
	return err == ECONNRESET || err == EPIPE || err == ENOTCONN || err == ECONNREFUSED ||
	       err == ENOENT || err == ECONNABORTED;
}

/* Reopens every open file on a new connection, as hm_open or hm_open_fd
 * did: a file that cannot be reopened is lost (ESTALE).  0, or -errno when
 * the connection failed meanwhile.  Lock held. */
static int
client_reopen(hm_client *c)
{
	hm_file *f;

	for (f = c->files; f != NULL; f = f->next)
		f->handle = 0;	/* the old connection's numbers mean nothing now */
	for (f = c->files; f != NULL; f = f->next) {
		if (client_open(c, f, f->flags) < 0) {
			f->handle = 0;
			if (c->broken)
				return -c->broken;
		}
	}
	return 0;
}

/*
 * The first call of a child on a client inherited across fork (see
 * "fork"): a connection, region and handles of its own, whatever the
 * reconnect policy.  The inherited socket is closed unused (the parent
 * keeps its own), the inherited region is dropped (the child's views keep
 * their private copy of it), unless a call had them at the fork.  When
 * the daemon cannot be reached, the client is broken with that error, as
 * a lost connection is (the reconnect policy, if on, then tries again).
 * Lock held.
 */
static void
client_after_fork(hm_client *c)
{
	int rc;

	c->pid = getpid();
	if (c->fork_busy) {
		/* half changed by a call of the parent's: leave it be */
		c->fork_busy = false;
		c->in = NULL;
		c->cap = 0;
	} else {
		if (c->fd >= 0)
			close(c->fd);
		region_unref(c->region);
	}
	c->fd = -1;
	c->start = c->end = 0;
	c->region = NULL;
	c->ring = false;
	c->sq_tail = c->cq_head = 0;
	c->broken = 0;
	rc = client_connect(c, c->socket_path);
	if (rc < 0) {
		if (c->fd >= 0)
			close(c->fd);
		c->fd = -1;
		c->broken = -rc;
		return;
	}
	client_reopen(c);
}

/*
 * The reconnect policy: with the connection lost, connect again (for up to
 * reconnect_ms, every 50 ms), register a new region, and reopen every open
 * file as hm_open or hm_open_fd did (a file that cannot be reopened is
 * lost: its calls fail with ESTALE).  Views keep the old region, which they hold.  0, or
 * -errno with the client still broken.  Lock held.
 */
static int
client_reconnect(hm_client *c)
{
	uint64_t deadline = now_us() + (uint64_t)c->reconnect_ms * 1000u;
	int rc;

	for (;;) {
		if (c->fd >= 0)
			close(c->fd);
		c->fd = -1;
		c->start = c->end = 0;
		region_unref(c->region);
		c->region = NULL;
		c->ring = false;
		c->sq_tail = c->cq_head = 0;
		c->broken = 0;
		rc = client_connect(c, c->socket_path);
		if (rc == 0)
			break;
		if (now_us() >= deadline) {
			c->broken = -rc;
			return rc;
		}
		usleep(50000);
	}
	return client_reopen(c);
}

/*
 * Whether a call that failed with rc may run again: the policy is on, the
 * connection (not the request) failed, it is back, and the call has not
 * run again already (a request that brings the daemon down each time must
 * not loop).  Lock held.
 */
static bool
client_retry(hm_client *c, int rc)
{
	if (rc >= 0 || c->retried || c->reconnect_ms == 0 || !connection_lost(c->broken))
		return false;
	c->retried = true;
	return client_reconnect(c) == 0;
}

/* Every call starts here, lock held: in a child after fork(2), the
 * client gets a connection of its own first; a client lost earlier
 * reconnects first, under the policy, and the call may run once more. */
static void
client_revive(hm_client *c)
{
	c->retried = false;
	if (c->pid != getpid())
		client_after_fork(c);
	if (c->broken != 0 && c->reconnect_ms > 0 && connection_lost(c->broken))
		client_reconnect(c);
}

/* Runs fn(c, arg), and once more when client_retry allows.  Lock held,
 * client_revive done: for a call that runs several steps under one lock. */
static int
client_retrying(hm_client *c, int (*fn)(hm_client *c, void *arg), void *arg)
{
	int rc;

	do
		rc = fn(c, arg);
	while (client_retry(c, rc));
	return rc;
}

/* A public call's one step: fn(c, arg) under c's lock, after
 * client_revive, run once more when client_retry allows. */
static int
client_with_retry(hm_client *c, int (*fn)(hm_client *c, void *arg), void *arg)
{
	int rc;

	pthread_mutex_lock(c->lock);
	client_revive(c);
	rc = client_retrying(c, fn, arg);
	pthread_mutex_unlock(c->lock);
	return rc;
}

/* One request and its reply, for client_with_retry. */
struct request {
	hm_file *f;		/* NULL: not about a file; else req's handle is set */
	uint64_t *handle;	/* the handle field of req, when f is set */
	uint16_t type, reply_type;
	const ProtobufCMessage *req;
	ProtobufCMessage *reply;
};

static int
request_run(hm_client *c, void *arg)
{
	struct request *q = arg;

	if (q->f != NULL) {
		/* (again) from the file's handle: a reconnect renews it */
		if (q->f->handle == 0)
			return -ESTALE;	/* lost in a reconnect */
		*q->handle = q->f->handle;
	}
	return client_call(c, q->type, q->req, -1, q->reply_type, &q->reply);
}

/* A request of c with its one-frame reply, under the reconnect policy. */
static int
client_request(hm_client *c, uint16_t type, const ProtobufCMessage *req, uint16_t reply_type,
	       ProtobufCMessage **reply)
{
	struct request q = { .type = type, .reply_type = reply_type, .req = req };
	int rc = client_with_retry(c, request_run, &q);

	*reply = q.reply;
	return rc;
}

/* A request about f, whose handle field is *handle. */
static int
file_request(hm_file *f, uint16_t type, const ProtobufCMessage *req, uint64_t *handle,
	     uint16_t reply_type, ProtobufCMessage **reply)
{
	struct request q = { .f = f, .handle = handle, .type = type, .reply_type = reply_type,
			     .req = req };
	int rc = client_with_retry(f->c, request_run, &q);

	*reply = q.reply;
	return rc;
}

HM_EXPORT int
hm_set_reconnect(hm_client *c, unsigned timeout_ms)
{
	if (c == NULL)
		return fail(EINVAL);
	pthread_mutex_lock(c->lock);
	c->reconnect_ms = timeout_ms;
	pthread_mutex_unlock(c->lock);
	return 0;
}

struct add_file {
	hm_file *f;
	int flags;
};

/* Opens a->f and, once open, links it into c's files.  Lock held. */
static int
add_file_run(hm_client *c, void *arg)
{
	struct add_file *a = arg;
	hm_file *f = a->f;
	int rc = client_open(c, f, a->flags);

	if (rc == 0) {
		f->c = c;
		pthread_mutex_lock(&c->files_lock);
		f->next = c->files;
		if (f->next != NULL)
			f->next->prev = f;
		c->files = f;
		pthread_mutex_unlock(&c->files_lock);
	}
	return rc;
}

/* Opens f (path or fd set) on c and adds it to c's files; frees it on
 * failure.  f, or NULL and errno. */
static hm_file *
client_add_file(hm_client *c, hm_file *f, int flags)
{
	struct add_file a = { .f = f, .flags = flags };
	int rc;

	f->flags = flags & ~HM_O_WARM;	/* a reopen need not warm again */
	rc = client_with_retry(c, add_file_run, &a);
	if (rc < 0) {
		free(f->path);
		free(f);
		errno = -rc;
		return NULL;
	}
	return f;
}

HM_EXPORT hm_file *
hm_open(hm_client *c, const char *path, int flags)
{
	hm_file *f;
	int rc;

	set_last_error(NULL);
	if (c == NULL || path == NULL ||
	    (flags & ~(HM_O_MMAP | HM_O_PREAD | HM_O_PATH | HM_O_WARM)) != 0 ||
	    (flags & (HM_O_MMAP | HM_O_PREAD)) == (HM_O_MMAP | HM_O_PREAD)) {
		errno = EINVAL;
		return NULL;
	}
	f = calloc(1, sizeof *f);
	if (f == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	f->fd = -1;
	f->path = absolute_path(path);
	if (f->path == NULL) {
		rc = errno;
		free(f);
		errno = rc;
		return NULL;
	}
	return client_add_file(c, f, flags);
}

HM_EXPORT hm_file *
hm_open_fd(hm_client *c, int fd, int flags)
{
	struct stat st;
	hm_file *f;

	set_last_error(NULL);
	if (c == NULL || (flags & ~(HM_O_MMAP | HM_O_PREAD | HM_O_WARM)) != 0 ||
	    (flags & (HM_O_MMAP | HM_O_PREAD)) == (HM_O_MMAP | HM_O_PREAD)) {
		errno = EINVAL;
		return NULL;
	}
	if (fd < 0 || fstat(fd, &st) < 0) {
		errno = EBADF;
		return NULL;
	}
	f = calloc(1, sizeof *f);
	if (f == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	f->fd = fd;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	return client_add_file(c, f, flags);
}

/* --- reads ------------------------------------------------------------- */

/* Sends the READs of ops[0..n) in one write.  Lock held. */
static int
client_send_reads(hm_client *c, struct read_op *ops, size_t n)
{
	size_t cap, len = 0, framed = 0, i;
	uint8_t *buf;
	int rc;

	if (c->broken)
		return -c->broken;
	for (i = 0; i < n; i++) {
		ops[i].id = c->next_id++;
		framed += !ops[i].ring;
	}
	if (framed == 0)
		return 0;	/* all through the ring: nothing to write */
	cap = framed * (HM_FRAME_HEADER_SIZE + 64);
	buf = malloc(cap);
	if (buf == NULL)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		Hotmap__Read req = HOTMAP__READ__INIT;
		int w;

		if (ops[i].ring)
			continue;
		req.handle = ops[i].handle;
		req.offset = ops[i].offset;
		req.length = ops[i].len;
		req.to_shm = ops[i].shm;
		req.shm_offset = ops[i].shm_off;
		w = frame_encode(HM_MSG_READ, ops[i].id, 0, &req.base, 0, buf + len, cap - len);
		if (w < 0) {
			free(buf);
			return w;
		}
		len += (size_t)w;
	}
	rc = client_write(c, buf, len, -1);
	free(buf);
	return rc;
}

/*
 * Receives the replies to ops[0..n), whose ids follow one another: the
 * daemon answers reads as they complete, so replies come in any order and
 * the data frames of several may interleave.  A reply is READ_DATA frames
 * with HM_FLAG_MORE carrying bytes (socket reads), then one without it
 * carrying the total; or ERROR, which sets that op's result to -errno.
 * Returns < 0 only when the connection failed.  Lock held.
 */
static int
client_recv_reads(hm_client *c, struct read_op *ops, size_t n)
{
	size_t left = 0, i;

	for (i = 0; i < n; i++)
		left += !ops[i].ring;

	while (left > 0) {
		struct hm_frame_header h;
		ProtobufCMessage *msg;
		struct read_op *op;
		uint64_t total;
		int rc;

		rc = client_recv_frame_of(c, ops[0].id, (uint32_t)n, &h, &msg);
		if (rc < 0 && c->broken)
			return rc;
		op = &ops[h.id - ops[0].id];
		if (op->done || op->ring) {
			protobuf_c_message_free_unpacked(msg, NULL);
			return client_break(c, EPROTO);
		}
		if (rc < 0) {
			op->result = rc;	/* the daemon's errno for this read */
			op->done = true;
			left--;
			continue;
		}
		if (h.type != HM_MSG_READ_DATA ||
		    (h.raw_length > 0 && (op->shm || h.raw_length > op->len - op->got))) {
			protobuf_c_message_free_unpacked(msg, NULL);
			return client_break(c, EPROTO);
		}
		if (h.flags & HM_FLAG_MORE) {
			protobuf_c_message_free_unpacked(msg, NULL);
			rc = client_recv_raw(c, op->buf + op->got, h.raw_length);
			if (rc < 0)
				return rc;
			op->got += h.raw_length;
			continue;
		}
		total = ((Hotmap__ReadReply *)msg)->total;
		protobuf_c_message_free_unpacked(msg, NULL);
		if (h.raw_length != 0 || (op->shm ? total > op->len : total != op->got))
			return client_break(c, EPROTO);
		op->result = (ssize_t)total;
		op->done = true;
		left--;
	}
	return 0;
}

/* --- polling mode (proto/ring.h) ---------------------------------------- */

/*
 * A ring read larger than this goes as several entries, each copied out
 * to the caller as soon as it and those before it are done, so that the
 * daemon's copy of one chunk overlaps ours of the previous one.  (The
 * daemon reads 256 KiB and more of a mapped file with pread.)
 */
#define CLIENT_RING_CHUNK	(256u * 1024u)

/* One ring entry: a chunk of a ring op. */
struct ring_chunk {
	size_t op;		/* index in ops */
	size_t off;		/* from the start of the op */
	size_t len;
	ssize_t result;
	bool done;
};

/* Ring progress of one call. */
struct ring_call {
	struct read_op *ops;
	size_t n;
	struct ring_chunk *chunks;
	size_t nchunks;
	uint32_t first_id;	/* of chunks[0]; chunk k has first_id + k */
	size_t *next;		/* per op: its first chunk not yet folded in */
	size_t *end;		/* per op: one past its last chunk */
	unsigned out;		/* chunks published, not yet completed */
	size_t left;		/* chunks not yet completed */
};

/*
 * Folds op's completed chunks in, in order: copies their bytes to the
 * caller's buffer (not for views), and stops at the first short or failed
 * one, so that the op ends as pread would: short at end of file, or with
 * the bytes before an error, or the error when no byte came.  The buffer
 * gets nothing past what the op returns.
 */
static void
ring_fold(hm_client *c, struct ring_call *rc, size_t i)
{
	struct read_op *op = &rc->ops[i];

	while (rc->next[i] < rc->end[i] && rc->chunks[rc->next[i]].done) {
		struct ring_chunk *k = &rc->chunks[rc->next[i]];

		if (k->result < 0) {
			if (op->got == 0)
				op->result = k->result;
			rc->next[i] = rc->end[i];
			break;
		}
		if (op->buf != NULL && k->result > 0)
			memcpy(op->buf + k->off, c->region->base + op->shm_off + k->off, (size_t)k->result);
		op->got += (size_t)k->result;
		op->result = (ssize_t)op->got;
		rc->next[i]++;
		if ((size_t)k->result < k->len)
			rc->next[i] = rc->end[i];	/* end of file */
	}
}

/* Takes the completions the daemon published: how many, or < 0 when they
 * make no sense (the client is then broken).  Lock held. */
static int
client_ring_consume(hm_client *c, struct ring_call *rc)
{
	uint8_t *base = c->region->base;
	uint32_t tail = hm_ring_load(base, HM_RING_CQ_TAIL);
	int got = 0;

	if (tail - c->cq_head > HM_RING_ENTRIES)
		return client_break(c, EPROTO);
	while (c->cq_head != tail) {
		struct hm_ring_cqe e;
		struct ring_chunk *k;
		uint32_t j;

		memcpy(&e, hm_ring_cqe(base, c->cq_head), sizeof e);
		j = e.id - rc->first_id;
		if (j >= rc->nchunks || rc->chunks[j].done || e.result > (int64_t)rc->chunks[j].len ||
		    e.result < -4095)
			return client_break(c, EPROTO);
		k = &rc->chunks[j];
		k->result = (ssize_t)e.result;
		k->done = true;
		c->cq_head++;
		rc->out--;
		rc->left--;
		got++;
		ring_fold(c, rc, k->op);
	}
	if (got > 0)
		hm_ring_store(base, HM_RING_CQ_HEAD, c->cq_head);
	return got;
}

/* Blocks until the daemon's RING_WAKE.  Lock held. */
static int
client_ring_sleep(hm_client *c)
{
	struct hm_frame_header h;
	int rc = client_fill(c, HM_FRAME_HEADER_SIZE);

	if (rc < 0)
		return rc;
	frame_header_decode(c->in + c->start, &h);
	if (h.type != HM_MSG_RING_WAKE || h.length != 0 || h.raw_length != 0)
		return client_break(c, EPROTO);
	c->start += HM_FRAME_HEADER_SIZE;
	return 0;
}

/*
 * Waits for at least one completion: polls for poll_us, then says it
 * sleeps (client_idle), looks once more, and sleeps on the socket until
 * the daemon's RING_WAKE.  The daemon fences between publishing and
 * reading the flag, as we do between setting it and looking, so one of
 * the two always sees the other.  Lock held.
 */
static int
client_ring_wait(hm_client *c, struct ring_call *rc)
{
	uint8_t *base = c->region->base;
	uint64_t until = 0;
	unsigned spins = 0;
	int got, err;

	for (;;) {
		got = client_ring_consume(c, rc);
		if (got != 0)
			return got < 0 ? got : 0;
		if (c->poll_us > 0 && (++spins % 64) != 0) {
			hm_ring_relax();
			continue;
		}
		if (c->poll_us > 0 && until == 0)
			until = now_us() + c->poll_us;
		if (c->poll_us > 0 && now_us() < until)
			continue;
		hm_ring_store(base, HM_RING_CLIENT_IDLE, 1);
		hm_ring_fence();
		got = client_ring_consume(c, rc);
		if (got != 0) {
			/* a RING_WAKE may still come: the next read skips it */
			hm_ring_store(base, HM_RING_CLIENT_IDLE, 0);
			return got < 0 ? got : 0;
		}
		err = client_ring_sleep(c);
		if (err < 0)
			return err;
		until = 0;
		spins = 0;
	}
}

/*
 * Runs the ring ops of ops[0..n): cuts them into chunks, publishes as many
 * as the ring holds, kicks the daemon if it said it sleeps, and takes
 * completions until every chunk is done.  Each op's result (and bytes,
 * when it has a buffer) is then in place.  Lock held.
 */
static int
client_ring_reads(hm_client *c, struct read_op *ops, size_t n)
{
	struct ring_call rc = { .ops = ops, .n = n };
	size_t i, j, next = 0;
	uint8_t *base;
	int err = 0;

	for (i = 0; i < n; i++)
		if (ops[i].ring)
			rc.nchunks += ops[i].len == 0 ? 1 :
				      (ops[i].len + CLIENT_RING_CHUNK - 1) / CLIENT_RING_CHUNK;
	if (rc.nchunks == 0)
		return 0;
	rc.chunks = calloc(rc.nchunks, sizeof *rc.chunks);
	rc.next = calloc(n, sizeof *rc.next);
	rc.end = calloc(n, sizeof *rc.end);
	if (rc.chunks == NULL || rc.next == NULL || rc.end == NULL) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0, j = 0; i < n; i++) {
		size_t off = 0;

		if (!ops[i].ring)
			continue;
		rc.next[i] = j;
		ops[i].got = 0;
		ops[i].result = 0;
		do {
			size_t len = ops[i].len - off < CLIENT_RING_CHUNK ? ops[i].len - off :
									    CLIENT_RING_CHUNK;

			rc.chunks[j++] = (struct ring_chunk){ .op = i, .off = off, .len = len };
			off += len;
		} while (off < ops[i].len);
		rc.end[i] = j;
	}
	rc.first_id = c->next_id;
	c->next_id += (uint32_t)rc.nchunks;
	rc.left = rc.nchunks;
	base = c->region->base;
	while (rc.left > 0) {
		bool published = false;

		for (; next < rc.nchunks && rc.out < HM_RING_ENTRIES; next++) {
			const struct ring_chunk *k = &rc.chunks[next];
			struct hm_ring_sqe *e = hm_ring_sqe(base, c->sq_tail);

			e->handle = ops[k->op].handle;
			e->offset = ops[k->op].offset + k->off;
			e->length = k->len;
			e->shm_offset = ops[k->op].shm_off + k->off;
			e->id = rc.first_id + (uint32_t)next;
			e->reserved = 0;
			c->sq_tail++;
			rc.out++;
			published = true;
		}
		if (published) {
			hm_ring_store(base, HM_RING_SQ_TAIL, c->sq_tail);
			hm_ring_fence();
			if (hm_ring_load(base, HM_RING_DAEMON_IDLE) != 0) {
				Hotmap__RingKick kick = HOTMAP__RING_KICK__INIT;

				err = client_send(c, HM_MSG_RING_KICK, 0, &kick.base, -1);
				if (err < 0)
					goto out;
			}
		}
		err = client_ring_wait(c, &rc);
		if (err < 0)
			goto out;
	}
	for (i = 0; i < n; i++)
		if (ops[i].ring)
			ops[i].done = true;
out:
	free(rc.chunks);
	free(rc.next);
	free(rc.end);
	return err;
}

/* Every op of ops[0..n) gets its result: those over the socket first, then
 * those through the ring.  < 0 only when the connection failed.  Lock held. */
static int
client_do_reads(hm_client *c, struct read_op *ops, size_t n)
{
	size_t i;
	int rc;

	if (n == 0)
		return 0;
	for (i = 0; i < n; i++) {
		ops[i].ring = c->ring && ops[i].shm;
		/* afresh: a call run again after a reconnect reuses its ops,
		 * and what the lost connection had delivered is void */
		ops[i].got = 0;
		ops[i].done = false;
		ops[i].result = 0;
	}
	rc = client_send_reads(c, ops, n);
	if (rc == 0)
		rc = client_recv_reads(c, ops, n);
	if (rc == 0)
		rc = client_ring_reads(c, ops, n);
	return rc;
}

/* Checks a range as pread(2) would: 0 or -EINVAL. */
static int
check_range(size_t len, uint64_t offset)
{
	if (len > SSIZE_MAX || offset > INT64_MAX || len > (uint64_t)INT64_MAX - offset)
		return -EINVAL;
	return 0;
}

/* Runs ops[0..n) (n <= CLIENT_BATCH_WINDOW): reads of at least the
 * threshold go through the region when it has room, the rest over the
 * socket; region bytes are then copied to each op's buf.  Lock held. */
static int
client_run_reads(hm_client *c, struct read_op *ops, size_t n)
{
	size_t i;
	int rc;

	/* in polling mode, the ring beats a frame at any size */
	for (i = 0; i < n; i++)
		ops[i].shm = (c->ring || ops[i].len >= c->shm_threshold) &&
			     region_alloc(c->region, ops[i].len, &ops[i].shm_off) == 0;
	rc = client_do_reads(c, ops, n);
	for (i = 0; i < n; i++) {
		if (!ops[i].shm)
			continue;
		/* ring ops were copied out chunk by chunk as they completed */
		if (rc == 0 && ops[i].result > 0 && !ops[i].ring)
			memcpy(ops[i].buf, c->region->base + ops[i].shm_off, (size_t)ops[i].result);
		region_free(c->region, ops[i].shm_off, ops[i].len);
	}
	return rc;
}

struct pread_call {
	hm_file *f;
	struct read_op op;
};

static int
pread_run(hm_client *c, void *arg)
{
	struct pread_call *p = arg;

	p->op.handle = p->f->handle;
	return p->f->handle == 0 ? -ESTALE : client_run_reads(c, &p->op, 1);
}

HM_EXPORT ssize_t
hm_pread(hm_file *f, void *buf, size_t len, uint64_t offset)
{
	struct pread_call p = { .f = f };
	struct read_op *op = &p.op;
	int rc;

	set_last_error(NULL);
	if (f == NULL || (buf == NULL && len > 0))
		return fail(EINVAL);
	/* As pread(2): the end of the range must fit in off_t. */
	if (check_range(len, offset) < 0)
		return fail(EINVAL);
	op->offset = offset;
	op->len = len;
	op->buf = buf;
	rc = client_with_retry(f->c, pread_run, &p);
	if (rc < 0)
		return fail(-rc);
	if (op->result < 0)
		return fail((int)-op->result);
	return op->result;
}

/* One window of hm_read_batch: the valid ios io[map[0..m)]. */
struct batch_window {
	struct hm_io *io;
	const size_t *map;
	size_t m;
	struct read_op ops[CLIENT_BATCH_WINDOW];
	size_t asked[CLIENT_BATCH_WINDOW];	/* io index of ops[k] */
	size_t j;				/* ops asked for */
};

static int
batch_window_run(hm_client *c, void *arg)
{
	struct batch_window *w = arg;
	size_t k;

	/* (again) from the files' handles: a reconnect renews
	 * them, and a file it lost is not asked for */
	for (k = 0, w->j = 0; k < w->m; k++) {
		struct hm_io *x = &w->io[w->map[k]];

		if (x->file->handle == 0) {
			x->result = -ESTALE;
			continue;
		}
		w->ops[w->j] = (struct read_op){
			.handle = x->file->handle, .offset = x->offset,
			.len = x->len, .buf = x->buf,
		};
		w->asked[w->j++] = w->map[k];
	}
	return client_run_reads(c, w->ops, w->j);
}

HM_EXPORT int
hm_read_batch(hm_client *c, struct hm_io *io, size_t n)
{
	struct batch_window w;	/* on the stack, as before: not zeroed */
	size_t map[CLIENT_BATCH_WINDOW];
	size_t i = 0, k, m;
	int rc = 0;

	set_last_error(NULL);
	if (c == NULL || (io == NULL && n > 0))
		return fail(EINVAL);
	w.io = io;
	w.map = map;
	w.j = 0;
	pthread_mutex_lock(c->lock);
	client_revive(c);
	while (i < n && rc == 0) {
		/* one window of valid ios; the others get their error here */
		for (m = 0; i < n && m < CLIENT_BATCH_WINDOW; i++) {
			struct hm_io *x = &io[i];

			if (x->file == NULL || x->file->c != c)
				x->result = -EBADF;
			else if ((x->buf == NULL && x->len > 0) || check_range(x->len, x->offset) < 0)
				x->result = -EINVAL;
			else if (x->file->handle == 0)
				x->result = -ESTALE;	/* lost in a reconnect */
			else
				map[m++] = i;
		}
		w.m = m;
		rc = client_retrying(c, batch_window_run, &w);
		for (k = 0; k < w.j; k++)
			io[w.asked[k]].result = rc < 0 ? rc : w.ops[k].result;
	}
	/* a connection that failed leaves the rest unanswered */
	for (; i < n; i++)
		io[i].result = rc;
	pthread_mutex_unlock(c->lock);
	return rc < 0 ? fail(-rc) : 0;
}

/* The private fields of struct hm_view. */
#define VIEW_REGION(v)	(*(struct hm_region **)&(v)->priv_[0])
#define VIEW_HEAP(v)	((v)->priv_[1])

struct view_call {
	hm_file *f;
	uint64_t offset;
	size_t len;
	struct read_op op;
	struct hm_region *r;	/* the region op.shm_off is in */
};

/* Reads v->len bytes into a region block of their own or a buffer of the
 * view's; on failure gives both back.  Lock held. */
static int
view_run(hm_client *c, void *arg)
{
	struct view_call *v = arg;
	struct read_op *op = &v->op;
	struct hm_region *r = c->region;
	int rc;

	v->r = r;
	*op = (struct read_op){ .handle = v->f->handle, .offset = v->offset, .len = v->len };
	if (v->f->handle == 0)
		return -ESTALE;	/* lost in a reconnect */
	op->shm = region_alloc(r, v->len, &op->shm_off) == 0;
	if (op->shm) {
		/* held across a reconnect; the view keeps it */
		pthread_mutex_lock(&r->lock);
		r->refs++;
		pthread_mutex_unlock(&r->lock);
	} else {
		/* No room in the region (or none): the bytes come
		 * over the socket into memory of the view's own. */
		op->buf = malloc(v->len > 0 ? v->len : 1);
		if (op->buf == NULL)
			return -ENOMEM;
	}
	rc = client_do_reads(c, op, 1);
	if (rc == 0 && op->result < 0)
		rc = (int)op->result;
	if (rc == 0)
		return 0;
	if (op->shm) {
		region_free(r, op->shm_off, v->len);
		region_unref(r);
	}
	free(op->buf);
	op->buf = NULL;
	return rc;
}

HM_EXPORT int
hm_view_range(hm_file *f, uint64_t offset, size_t len, struct hm_view *v)
{
	struct view_call call = { .f = f, .offset = offset, .len = len };
	struct read_op op;
	struct hm_region *r;
	int rc;

	set_last_error(NULL);
	if (v != NULL)
		memset(v, 0, sizeof *v);
	if (f == NULL || v == NULL || check_range(len, offset) < 0)
		return fail(EINVAL);
	rc = client_with_retry(f->c, view_run, &call);
	if (rc < 0)
		return fail(-rc);
	op = call.op;
	r = call.r;
	if (op.shm) {
		VIEW_REGION(v) = r;	/* the view outlives hm_disconnect */
		v->priv_[2] = (void *)(uintptr_t)op.shm_off;
		v->priv_[3] = (void *)(uintptr_t)len;
		v->data = r->base + op.shm_off;
	} else {
		VIEW_HEAP(v) = op.buf;
		v->data = op.buf;
	}
	v->len = (size_t)op.result;
	return 0;
}

HM_EXPORT void
hm_view_release(struct hm_view *v)
{
	struct hm_region *r;

	if (v == NULL)
		return;
	r = VIEW_REGION(v);
	if (r != NULL) {
		region_free(r, (size_t)(uintptr_t)v->priv_[2], (size_t)(uintptr_t)v->priv_[3]);
		region_unref(r);
	}
	free(VIEW_HEAP(v));
	memset(v, 0, sizeof *v);
}

HM_EXPORT int
hm_stat(hm_file *f, struct hm_stat *st)
{
	Hotmap__StatRequest req = HOTMAP__STAT_REQUEST__INIT;
	ProtobufCMessage *reply;
	Hotmap__StatReply *r;
	int rc;

	set_last_error(NULL);
	if (f == NULL || st == NULL)
		return fail(EINVAL);
	rc = file_request(f, HM_MSG_STAT, &req.base, &req.handle, HM_MSG_STAT_REPLY, &reply);
	if (rc < 0)
		return fail(-rc);
	r = (Hotmap__StatReply *)reply;
	memset(st, 0, sizeof *st);
	st->size = r->size;
	st->backend = (int)r->backend;
	st->reason = (int)r->reason;
	snprintf(st->reason_text, sizeof st->reason_text, "%s", r->reason_text);
	st->dev = r->dev;
	st->ino = r->ino;
	st->mtime_ns = r->mtime_ns;
	st->mode = r->mode;
	st->handles = r->handles;
	st->mapped_length = r->mapped_length;
	protobuf_c_message_free_unpacked(reply, NULL);
	return 0;
}

HM_EXPORT int
hm_close(hm_file *f)
{
	Hotmap__Close req = HOTMAP__CLOSE__INIT;
	ProtobufCMessage *reply;
	hm_client *c;
	int rc;

	set_last_error(NULL);
	if (f == NULL)
		return fail(EBADF);
	c = f->c;
	pthread_mutex_lock(c->lock);
	req.handle = f->handle;	/* under the lock: a reconnect renews it */
	if (c->pid != getpid()) {
		/* a child's first call: the handle is the parent's, on the
		 * parent's connection; the child's next call reopens the
		 * others without it */
		rc = 0;
	} else if (f->handle == 0 || (c->reconnect_ms > 0 && connection_lost(c->broken))) {
		rc = 0;	/* the daemon that had it is gone: nothing to close there */
	} else {
		rc = client_call(c, HM_MSG_CLOSE, &req.base, -1, HM_MSG_CLOSE_REPLY, &reply);
		if (rc == 0)
			protobuf_c_message_free_unpacked(reply, NULL);
		else if (c->reconnect_ms > 0 && connection_lost(c->broken))
			rc = 0;
	}
	pthread_mutex_lock(&c->files_lock);
	if (f->prev != NULL)
		f->prev->next = f->next;
	else
		c->files = f->next;
	if (f->next != NULL)
		f->next->prev = f->prev;
	pthread_mutex_unlock(&c->files_lock);
	pthread_mutex_unlock(c->lock);
	free(f->path);
	free(f);
	return rc < 0 ? fail(-rc) : 0;
}

HM_EXPORT ssize_t
hm_warm(hm_file *f, uint64_t offset, uint64_t len)
{
	Hotmap__Warm req = HOTMAP__WARM__INIT;
	ProtobufCMessage *reply;
	uint64_t warmed;
	int rc;

	set_last_error(NULL);
	if (f == NULL || offset > INT64_MAX)
		return fail(EINVAL);
	req.offset = offset;
	req.length = len;
	rc = file_request(f, HM_MSG_WARM, &req.base, &req.handle, HM_MSG_WARM_REPLY, &reply);
	if (rc < 0)
		return fail(-rc);
	warmed = ((Hotmap__WarmReply *)reply)->warmed;
	protobuf_c_message_free_unpacked(reply, NULL);
	return warmed > SSIZE_MAX ? SSIZE_MAX : (ssize_t)warmed;
}

HM_EXPORT const char *
hm_version(void)
{
	return PACKAGE_VERSION;
}

HM_EXPORT const char *
hm_last_error(void)
{
	return last_error;
}

HM_EXPORT int
hm_ping(hm_client *c, struct hm_ping *out)
{
	Hotmap__Ping req = HOTMAP__PING__INIT;
	ProtobufCMessage *reply;
	Hotmap__PingReply *r;
	int rc;

	set_last_error(NULL);
	if (c == NULL)
		return fail(EINVAL);
	rc = client_request(c, HM_MSG_PING, &req.base, HM_MSG_PING_REPLY, &reply);
	if (rc < 0)
		return fail(-rc);
	r = (Hotmap__PingReply *)reply;
	if (out != NULL) {
		snprintf(out->server_version, sizeof out->server_version, "%s", r->server_version);
		out->uptime_us = r->uptime_us;
		out->pid = r->pid;
	}
	protobuf_c_message_free_unpacked(reply, NULL);
	return 0;
}

static int
client_stats(hm_client *c, bool reset,
	     void (*cb)(const char *key, uint64_t value, const char *text, void *arg), void *arg)
{
	Hotmap__StatsRequest req = HOTMAP__STATS_REQUEST__INIT;
	ProtobufCMessage *reply;
	Hotmap__StatsReply *r;
	size_t i;
	int rc;

	set_last_error(NULL);
	if (c == NULL || (cb == NULL && !reset))
		return fail(EINVAL);
	req.reset = reset;
	rc = client_request(c, HM_MSG_STATS, &req.base, HM_MSG_STATS_REPLY, &reply);
	if (rc < 0)
		return fail(-rc);
	r = (Hotmap__StatsReply *)reply;
	for (i = 0; cb != NULL && i < r->n_stats; i++)
		cb(r->stats[i]->key, r->stats[i]->value, r->stats[i]->text, arg);
	protobuf_c_message_free_unpacked(reply, NULL);
	return 0;
}

HM_EXPORT int
hm_stats(hm_client *c, void (*cb)(const char *key, uint64_t value, const char *text, void *arg),
	 void *arg)
{
	return client_stats(c, false, cb, arg);
}

HM_EXPORT int
hm_stats_reset(hm_client *c,
	       void (*cb)(const char *key, uint64_t value, const char *text, void *arg), void *arg)
{
	return client_stats(c, true, cb, arg);
}

HM_EXPORT int
hm_files(hm_client *c, void (*cb)(const struct hm_file_info *info, void *arg), void *arg)
{
	uint32_t offset = 0;

	set_last_error(NULL);
	if (c == NULL || cb == NULL)
		return fail(EINVAL);
	for (;;) {
		Hotmap__Files req = HOTMAP__FILES__INIT;
		ProtobufCMessage *reply;
		Hotmap__FilesReply *r;
		bool more;
		size_t i;
		int rc;

		req.offset = offset;
		rc = client_request(c, HM_MSG_FILES, &req.base, HM_MSG_FILES_REPLY, &reply);
		if (rc < 0)
			return fail(-rc);
		r = (Hotmap__FilesReply *)reply;
		for (i = 0; i < r->n_files; i++) {
			const Hotmap__FilesReply__File *f = r->files[i];
			struct hm_file_info info = {
				.path = f->path,
				.size = f->size,
				.backend = (int)f->backend,
				.reason = (int)f->reason,
				.handles = f->handles,
				.stale = f->stale,
				.hits = f->hits,
				.bytes = f->bytes,
				.idle_ms = f->idle_ms,
				.resident_pct = f->resident_pct,
				.resident_bytes = f->resident_bytes,
			};

			cb(&info, arg);
		}
		/* pages follow the daemon's list as it is at each request */
		more = r->n_files > 0 && r->next < r->total;
		offset = r->next;
		protobuf_c_message_free_unpacked(reply, NULL);
		if (!more)
			return 0;
	}
}

HM_EXPORT int
hm_config(hm_client *c, void (*cb)(const char *key, const char *value, const char *source, void *arg),
	  void *arg, char *path, size_t pathlen)
{
	Hotmap__ConfigRequest req = HOTMAP__CONFIG_REQUEST__INIT;
	ProtobufCMessage *reply;
	Hotmap__ConfigReply *r;
	size_t i;
	int rc;

	set_last_error(NULL);
	if (c == NULL || cb == NULL || (path == NULL && pathlen > 0))
		return fail(EINVAL);
	rc = client_request(c, HM_MSG_CONFIG, &req.base, HM_MSG_CONFIG_REPLY, &reply);
	if (rc < 0)
		return fail(-rc);
	r = (Hotmap__ConfigReply *)reply;
	if (pathlen > 0)
		snprintf(path, pathlen, "%s", r->path != NULL ? r->path : "");
	for (i = 0; i < r->n_items; i++)
		cb(r->items[i]->key, r->items[i]->value, r->items[i]->source, arg);
	protobuf_c_message_free_unpacked(reply, NULL);
	return 0;
}

HM_EXPORT int
hm_evict(hm_client *c, const char *path, struct hm_evicted *out)
{
	Hotmap__Evict req = HOTMAP__EVICT__INIT;
	ProtobufCMessage *reply;
	Hotmap__EvictReply *r;
	char *abs = NULL;
	struct stat st;
	int rc;

	set_last_error(NULL);
	if (c == NULL)
		return fail(EINVAL);
	if (path == NULL) {
		req.all = true;
	} else if (stat(path, &st) == 0) {
		/* the daemon knows files by identity, not by name */
		req.dev = (uint64_t)st.st_dev;
		req.ino = (uint64_t)st.st_ino;
	} else if (errno == ENOENT) {
		/* deleted or replaced: the daemon matches the name its
		 * descriptor had */
		abs = absolute_path(path);
		if (abs == NULL)
			return -1;
		req.path = abs;
	} else {
		return -1;
	}
	rc = client_request(c, HM_MSG_EVICT, &req.base, HM_MSG_EVICT_REPLY, &reply);
	free(abs);
	if (rc < 0)
		return fail(-rc);
	r = (Hotmap__EvictReply *)reply;
	if (out != NULL) {
		out->files = r->files;
		out->mapped_bytes = r->mapped_bytes;
		out->busy = r->busy;
	}
	protobuf_c_message_free_unpacked(reply, NULL);
	return 0;
}
