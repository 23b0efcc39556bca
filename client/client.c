/*
 * client.c - libhotmap (see hotmap.h and libhotmap(3)).
 *
 * Blocking I/O on one Unix stream socket per hm_client, shared by the
 * threads that use it: each call's requests have ids of their own and are
 * in flight together with other threads' (wire.c reads the replies and
 * hands each to its call).  Read data is received straight into the
 * caller's buffer once the bytes already buffered are used up.
 *
 * This file: connect, the reconnect policy and the call-with-retry that
 * every public call goes through, open, read and close.  Frames are in
 * wire.c, the region and views in region.c, polling mode in ring.c, fork
 * in fork.c, the administrative calls in admin.c (see client_priv.h).
 *
 * Must not: read or write the socket but through wire.c; hand out region
 * blocks but through region.c.
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
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "client/client_priv.h"
#include "client/trust.h"
#include "proto/direct.h"
#include "proto/ring.h"
#include "proto/size.h"

/* HM_REASON_* (hotmap.h, which applications include without protobuf-c)
 * are the wire's Reason values, copied through unchanged. */
#define SAME_REASON(x) \
	_Static_assert(HM_REASON_##x == (int)HOTMAP__REASON__REASON_##x, \
		       "HM_REASON_" #x " is not the wire's")
SAME_REASON(LOCAL_FILE);
SAME_REASON(FORCED);
SAME_REASON(NOT_REGULAR);
SAME_REASON(EMPTY);
SAME_REASON(NETWORK_FS);
SAME_REASON(PSEUDO_FS);
SAME_REASON(MMAP_FAILED);
SAME_REASON(TOO_LARGE);
SAME_REASON(OVER_BUDGET);

/* name as a size (proto/size.h) of at most HM_SHM_MAX, else dflt. */
static size_t
env_size(const char *name, size_t dflt)
{
	const char *v = getenv(name);
	uint64_t n;

	if (v == NULL || *v == '\0' || size_parse(v, &n) < 0 || n > HM_SHM_MAX)
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

uint64_t
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

int
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
		c->region = region_new(c->shm_size, c->direct_slots, &shm_fd);
	if (c->region != NULL) {
		hello.shm_size = c->region->size + (uint64_t)c->region->nslots * HM_DIRECT_SLOT_BYTES;
		hello.direct_slots = c->region->nslots;
		hello.region_huge = c->region->huge;
	}
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
	__atomic_store_n(&c->region_size, c->region != NULL ? c->region->size : 0,
			 __ATOMIC_RELAXED);
	protobuf_c_message_free_unpacked(reply, NULL);
	return rc;
}

/* Options over the environment over the built-in defaults.  0 or -EINVAL. */
static int
client_options(hm_client *c, const struct hm_options *o)
{
	static const struct hm_options none = HM_OPTIONS_INIT;

	if (o == NULL)
		o = &none;
	if (o->size != sizeof *o)
		return -EINVAL;
	if (o->shm_size < HM_DEFAULT || o->shm_size > (int64_t)HM_SHM_MAX ||
	    o->shm_threshold < HM_DEFAULT || o->poll < HM_DEFAULT || o->poll > 1 ||
	    o->poll_us < HM_DEFAULT || o->poll_us > CLIENT_POLL_US_MAX ||
	    o->reconnect_ms < HM_DEFAULT || o->reconnect_ms > CLIENT_RECONNECT_MS_MAX ||
	    o->direct < HM_DEFAULT || o->direct > 1 || o->direct_after < HM_DEFAULT ||
	    o->direct_after > UINT_MAX)
		return -EINVAL;
	c->shm_threshold = o->shm_threshold >= 0 ? (size_t)o->shm_threshold :
			   env_size("HOTMAP_SHM_THRESHOLD", CLIENT_SHM_THRESHOLD);
	c->shm_size = o->shm_size >= 0 ? (size_t)o->shm_size :
		      env_size("HOTMAP_SHM_SIZE", CLIENT_SHM_SIZE);
	c->poll_wanted = o->poll >= 0 ? o->poll == 1 : env_poll_wanted();
	c->poll_us = o->poll_us >= 0 ? (unsigned)o->poll_us :
		     env_uint("HOTMAP_POLL_US", CLIENT_POLL_US, CLIENT_POLL_US_MAX);
	c->reconnect_ms = o->reconnect_ms >= 0 ? (unsigned)o->reconnect_ms :
			  env_uint("HOTMAP_RECONNECT_MS", 0, CLIENT_RECONNECT_MS_MAX);
	c->direct_slots = (o->direct >= 0 ? o->direct : (int)env_uint("HOTMAP_DIRECT", 1, 1)) ?
			  CLIENT_DIRECT_SLOTS : 0;
	c->direct_after = o->direct_after >= 0 ? (unsigned)o->direct_after :
			  env_uint("HOTMAP_DIRECT_AFTER", CLIENT_DIRECT_AFTER, UINT_MAX);
	/* the slots come on top of the region, which may not pass the cap */
	if (c->shm_size > HM_SHM_MAX - CLIENT_DIRECT_SLOTS * HM_DIRECT_SLOT_BYTES)
		c->shm_size = HM_SHM_MAX - CLIENT_DIRECT_SLOTS * HM_DIRECT_SLOT_BYTES;
	return 0;
}

HM_EXPORT hm_client *
hm_connect(const char *socket_path)
{
	return hm_connect_opts(socket_path, NULL);
}

HM_EXPORT hm_client *
hm_connect_opts(const char *socket_path, const struct hm_options *opts)
{
	hm_client *c;
	int rc;

	set_last_error(NULL);
	c = calloc(1, sizeof *c);
	if (c == NULL)
		return NULL;
	c->fd = -1;
	c->next_id = 1;
	c->pid = fork_pid();
	if (client_options(c, opts) < 0) {
		free(c);
		errno = EINVAL;
		return NULL;
	}
	c->lock = &c->lock0;
	pthread_mutex_init(c->lock, NULL);
	pthread_cond_init(&c->idle, NULL);
	pthread_mutex_init(&c->send_lock, NULL);
	pthread_mutex_init(&c->ring_lock, NULL);
	pthread_mutex_init(&c->files_lock, NULL);
	if (socket_path != NULL && (c->socket_path = strdup(socket_path)) == NULL) {
		hm_disconnect(c);
		errno = ENOMEM;
		return NULL;
	}
	fork_watch();
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
		direct_drop(f);
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
	pthread_cond_destroy(&c->idle);
	pthread_mutex_destroy(&c->send_lock);
	pthread_mutex_destroy(&c->ring_lock);
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
char *
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

/* Whether the process may keep descriptor fd for a granted file: it sits
 * in the lower half of RLIMIT_NOFILE (descriptors are handed out lowest
 * first, so its number tells how many are open). */
static bool
fd_plenty(int fd)
{
	struct rlimit rl;

	if (fd < 0)
		return true;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return true;
	return (rlim_t)fd < rl.rlim_cur / 2;
}

/* What the OPEN reply r says of f: the file as opened, and its grant. */
static void
client_open_granted(hm_file *f, const Hotmap__OpenReply *r)
{
	struct hm_region *reg = f->c->region;

	memset(&f->st, 0, sizeof f->st);
	f->st.size = r->size;
	f->st.backend = (int)r->backend;
	f->st.reason = (int)r->reason;
	snprintf(f->st.reason_text, sizeof f->st.reason_text, "%s", r->reason_text);
	f->st.dev = r->dev;
	f->st.ino = r->ino;
	f->st.mtime_ns = r->mtime_ns;
	f->st.mode = r->mode;
	f->st.handles = r->handles;
	f->st.mapped_length = r->mapped_length;
	snprintf(f->st.direct_text, sizeof f->st.direct_text, "%s",
		 r->direct_text != NULL ? r->direct_text : "");
	f->heat_reads = 0;
	f->direct_ok = r->direct && reg != NULL && r->direct_slot < reg->nslots &&
		       (r->direct_gen & 1) == 0;
	f->dslot = r->direct_slot;
	f->dgen = r->direct_gen;
	f->dsize = r->size;
}

/*
 * OPEN of f with flags (checked by the caller): by path (HM_O_PATH), by
 * the caller's descriptor (hm_open_fd), or by a descriptor opened here
 * and closed again (hm_open).  Sets f->handle, or returns -errno.  A
 * call's user (or the reconnect, exclusive); the lock not held.
 */
static int
client_open(hm_client *c, hm_file *f, int flags)
{
	Hotmap__Open req = HOTMAP__OPEN__INIT;
	ProtobufCMessage *reply = NULL;
	Hotmap__OpenReply *r;
	struct stat st;
	int fd = -1, rc;

	pthread_mutex_lock(c->lock);
	direct_drop(f);	/* a reopen: the old connection's grant means nothing */
	pthread_mutex_unlock(c->lock);
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
	if (rc < 0) {
		if (fd >= 0)
			close(fd);
		return rc;
	}
	r = (Hotmap__OpenReply *)reply;
	/* under the lock: another thread may promote a file (direct_heat) */
	pthread_mutex_lock(c->lock);
	f->handle = r->handle;
	client_open_granted(f, r);
	if (fd >= 0 && f->direct_ok)
		f->own_fd = fd;	/* the direct tier's preads use it */
	else if (fd >= 0)
		close(fd);	/* ours, not the caller's: the daemon has its own copy */
	if (f->direct_ok && ((flags & (HM_O_DIRECT | HM_O_WARM)) || !fd_plenty(f->own_fd)))
		(void)direct_promote(f);
	if (f->own_fd >= 0 && !fd_plenty(f->own_fd)) {
		/* many files open: read them through their mappings only, so
		 * that the library does not take the process's descriptors */
		close(f->own_fd);
		f->own_fd = -1;
	}
	pthread_mutex_unlock(c->lock);
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
 * the connection failed meanwhile.  Exclusive (client_exclusive_begin),
 * the lock not held. */
int
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

/* Every file's grant is forgotten, so that no thread promotes one
 * (direct_heat) against a region being replaced.  Lock held. */
static void
client_forget_grants(hm_client *c)
{
	hm_file *f;

	for (f = c->files; f != NULL; f = f->next)
		f->direct_ok = false;
}

/*
 * The reconnect rule: a reconnect (and a child's first call after fork)
 * runs exclusive.  It waits for any other to end, then closes the door to
 * new calls (exclusive) and waits until every call in flight has left:
 * the connection is broken, so each of their waits fails at once (the
 * socket is shut down) and nothing of the old connection is in use when
 * it is replaced.  Lock held (released while it waits).
 */
static void
client_exclusive_begin(hm_client *c)
{
	while (c->exclusive)
		pthread_cond_wait(&c->idle, c->lock);
	c->exclusive = true;
	while (c->users > 0)
		pthread_cond_wait(&c->idle, c->lock);
	client_forget_grants(c);
}

static void
client_exclusive_end(hm_client *c)
{
	c->exclusive = false;
	pthread_cond_broadcast(&c->idle);
}

/*
 * The reconnect policy: with the connection lost, connect again (for up to
 * reconnect_ms, every 50 ms), register a new region, and reopen every open
 * file as hm_open or hm_open_fd did (a file that cannot be reopened is
 * lost: its calls fail with ESTALE).  Views keep the old region, which they hold.  0, or
 * -errno with the client still broken.  Exclusive, lock held (released
 * while it connects).
 */
static int
client_reconnect(hm_client *c)
{
	uint64_t deadline = now_us() + (uint64_t)c->reconnect_ms * 1000u;
	struct hm_region *old;
	int rc;

	c->gen++;	/* the calls that failed run again after it, whatever it gives */
	pthread_mutex_unlock(c->lock);
	for (;;) {
		if (c->fd >= 0)
			close(c->fd);
		pthread_mutex_lock(c->lock);
		c->fd = -1;
		c->start = c->end = 0;
		old = c->region;
		c->region = NULL;
		__atomic_store_n(&c->region_size, 0, __ATOMIC_RELAXED);
		c->ring = false;
		c->sq_tail = c->cq_head = 0;
		c->broken = 0;
		wire_reset(c);
		pthread_mutex_unlock(c->lock);
		region_unref(old);
		rc = client_connect(c, c->socket_path);
		if (rc == 0)
			break;
		if (now_us() >= deadline) {
			pthread_mutex_lock(c->lock);
			c->broken = -rc;
			return rc;
		}
		usleep(50000);
	}
	rc = client_reopen(c);
	pthread_mutex_lock(c->lock);
	return rc;
}

/* Whether the connection is lost and the policy says to get it back. */
static bool
client_wants_reconnect(const hm_client *c)
{
	return c->broken != 0 && c->reconnect_ms > 0 && connection_lost(c->broken);
}

/*
 * Whether a call that failed with rc may run again: the policy is on, the
 * connection (not the request) failed, it is back, and the call has not
 * run again already (a request that brings the daemon down each time must
 * not loop).  The call, a user, leaves while the reconnect runs (its own,
 * or another thread's since *gen) and comes back.  The lock not held.
 */
bool
client_retry(hm_client *c, int rc, bool *retried, unsigned *gen)
{
	bool again;

	if (rc >= 0 || *retried)
		return false;
	pthread_mutex_lock(c->lock);
	if (c->reconnect_ms == 0 || !connection_lost(c->broken)) {
		pthread_mutex_unlock(c->lock);
		return false;
	}
	*retried = true;
	if (--c->users == 0)
		pthread_cond_broadcast(&c->idle);
	while (c->exclusive)
		pthread_cond_wait(&c->idle, c->lock);
	if (c->gen == *gen && client_wants_reconnect(c)) {
		client_exclusive_begin(c);
		client_reconnect(c);
		client_exclusive_end(c);
	}
	again = c->broken == 0;
	c->users++;
	*gen = c->gen;
	pthread_mutex_unlock(c->lock);
	return again;
}

/*
 * Every call starts here, and is a user of the client until
 * client_leave: in a child after fork(2), the client gets a connection of
 * its own first; a client lost earlier reconnects first, under the
 * policy.  Returns the reconnects tried so far (for client_retry).
 */
unsigned
client_enter(hm_client *c)
{
	unsigned gen;

	pthread_mutex_lock(c->lock);
	if (c->pid != fork_pid()) {
		/* What the parent's threads had in flight is not this
		 * process's (the fork handlers, when they ran, said so). */
		if (c->users > 0 || c->exclusive || c->reading)
			c->fork_busy = true;
		c->users = 0;
		c->exclusive = false;
		wire_reset(c);
		c->pid = fork_pid();
		client_exclusive_begin(c);
		pthread_mutex_unlock(c->lock);
		client_after_fork(c);
		pthread_mutex_lock(c->lock);
		client_exclusive_end(c);
	}
	while (c->exclusive)
		pthread_cond_wait(&c->idle, c->lock);
	if (client_wants_reconnect(c)) {
		client_exclusive_begin(c);
		client_reconnect(c);
		client_exclusive_end(c);
	}
	c->users++;
	gen = c->gen;
	pthread_mutex_unlock(c->lock);
	return gen;
}

void
client_leave(hm_client *c)
{
	pthread_mutex_lock(c->lock);
	if (--c->users == 0)
		pthread_cond_broadcast(&c->idle);
	pthread_mutex_unlock(c->lock);
}

/* A public call's one step: fn(c, arg) as a user of c, run once more
 * when client_retry allows. */
int
client_with_retry(hm_client *c, int (*fn)(hm_client *c, void *arg), void *arg)
{
	bool retried = false;
	unsigned gen = client_enter(c);
	int rc;

	do
		rc = fn(c, arg);
	while (client_retry(c, rc, &retried, &gen));
	client_leave(c);
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
int
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

/* Opens a->f and, once open, links it into c's files.  A user. */
static int
add_file_run(hm_client *c, void *arg)
{
	struct add_file *a = arg;
	hm_file *f = a->f;
	int rc;

	f->c = c;	/* client_open reads the client's region */
	rc = client_open(c, f, a->flags);
	if (rc == 0) {
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
	if (flags & HM_O_WARM)
		f->flags |= HM_O_DIRECT;	/* but maps at once again */
	rc = client_with_retry(c, add_file_run, &a);
	if (rc < 0) {
		direct_drop(f);
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
	    (flags & ~(HM_O_MMAP | HM_O_PREAD | HM_O_PATH | HM_O_WARM | HM_O_DIRECT)) != 0 ||
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
	f->own_fd = -1;
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
	if (c == NULL || (flags & ~(HM_O_MMAP | HM_O_PREAD | HM_O_WARM | HM_O_DIRECT)) != 0 ||
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
	f->own_fd = -1;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	return client_add_file(c, f, flags);
}

/* --- reads ------------------------------------------------------------- */

/* Sends the READs of ops[0..n) (their ids given) in one write. */
static int
client_send_reads(hm_client *c, struct read_op *ops, size_t n, size_t framed)
{
	size_t cap, len = 0, i;
	uint8_t *buf;
	int rc;

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
	rc = wire_send_frames(c, buf, len, -1);
	free(buf);
	return rc;
}

/*
 * Every op of ops[0..n) gets its result: those over the socket first, then
 * those through the ring.  The daemon answers reads as they complete, so
 * replies come in any order and the data frames of several may interleave
 * (with other threads' too: wire.c hands each to its op).  A reply is
 * READ_DATA frames with HM_FLAG_MORE carrying bytes (socket reads), then
 * one without it carrying the total; or ERROR, which sets that op's result
 * to -errno.  < 0 only when the connection failed.  A user.
 */
int
client_do_reads(hm_client *c, struct read_op *ops, size_t n)
{
	struct wire_wait w;
	size_t framed = 0, i;
	int rc;

	if (n == 0)
		return 0;
	for (i = 0; i < n; i++) {
		ops[i].ring = c->ring && ops[i].shm;
		framed += !ops[i].ring;
		/* afresh: a call run again after a reconnect reuses its ops,
		 * and what the lost connection had delivered is void */
		ops[i].got = 0;
		ops[i].done = false;
		ops[i].result = 0;
	}
	rc = wire_begin(c, &w, ops, (uint32_t)n, (uint32_t)framed);
	if (rc < 0)
		return rc;
	if (framed > 0)
		rc = client_send_reads(c, ops, n, framed);
	rc = wire_finish(c, &w, rc);
	if (rc == 0 && framed < n) {
		/* polling mode: one call at a time on the ring */
		pthread_mutex_lock(&c->ring_lock);
		rc = client_ring_reads(c, ops, n);
		pthread_mutex_unlock(&c->ring_lock);
	}
	return rc;
}

/* Runs ops[0..n) (n <= CLIENT_BATCH_WINDOW): reads of at least the
 * threshold go through the region when it has room, the rest over the
 * socket; region bytes are then copied to each op's buf.  A user. */
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

/* The largest read that goes through c's region whole: half of it, so that
 * views holding blocks leave room; a longer read is split.  SIZE_MAX
 * without a region (every byte comes over the socket anyway). */
static size_t
pread_chunk(const hm_client *c, size_t len)
{
	size_t size = __atomic_load_n(&c->region_size, __ATOMIC_RELAXED), half;

	if (size == 0 || len < c->shm_threshold)
		return SIZE_MAX;
	half = size / 2 / REGION_BLOCK * REGION_BLOCK;
	return half > 0 ? half : SIZE_MAX;
}

/* A read longer than the region takes, in pieces that each go through
 * it: short only at the end of the file, as one read would be. */
static ssize_t
pread_split(hm_file *f, void *buf, size_t len, uint64_t offset)
{
	size_t done = 0;

	while (done < len) {
		struct pread_call p = { .f = f };
		size_t chunk = pread_chunk(f->c, len - done);
		int rc;

		p.op.offset = offset + done;
		p.op.len = len - done < chunk ? len - done : chunk;
		p.op.buf = (uint8_t *)buf + done;
		rc = client_with_retry(f->c, pread_run, &p);
		if (rc == 0 && p.op.result < 0)
			rc = (int)p.op.result;
		if (rc < 0) {
			if (done > 0)
				break;	/* as pread: what was read, then the error next time */
			return fail(-rc);
		}
		done += (size_t)p.op.result;
		if ((size_t)p.op.result < p.op.len)
			break;	/* the end of the file */
	}
	direct_heat(f, (ssize_t)done);
	return (ssize_t)done;
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
	if (f->dm != NULL) {
		ssize_t n = direct_read(f, buf, len, offset);

		if (n != DIRECT_MISS)
			return n;
	}
	if (pread_chunk(f->c, len) < len)
		return pread_split(f, buf, len, offset);
	op->offset = offset;
	op->len = len;
	op->buf = buf;
	rc = client_with_retry(f->c, pread_run, &p);
	if (rc < 0)
		return fail(-rc);
	if (op->result < 0)
		return fail((int)-op->result);
	direct_heat(f, op->result);
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
	bool retried = false;
	unsigned gen;
	int rc = 0;

	set_last_error(NULL);
	if (c == NULL || (io == NULL && n > 0))
		return fail(EINVAL);
	w.io = io;
	w.map = map;
	w.j = 0;
	gen = client_enter(c);
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
			else if (x->file->dm != NULL &&
				 (x->result = direct_read(x->file, x->buf, x->len, x->offset)) !=
				 DIRECT_MISS)
				;	/* read here: no round trip */
			else
				map[m++] = i;
		}
		w.m = m;
		do
			rc = batch_window_run(c, &w);
		while (client_retry(c, rc, &retried, &gen));
		for (k = 0; k < w.j; k++)
			io[w.asked[k]].result = rc < 0 ? rc : w.ops[k].result;
	}
	/* a connection that failed leaves the rest unanswered */
	for (; i < n; i++)
		io[i].result = rc;
	client_leave(c);
	/* what the daemon read counts towards making a granted file direct */
	for (k = 0; rc == 0 && k < n; k++)
		if (io[k].result >= 0 && io[k].file->direct_ok && io[k].file->dm == NULL)
			direct_heat(io[k].file, io[k].result);
	return rc < 0 ? fail(-rc) : 0;
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
	if (f->c->pid == fork_pid() && direct_grant_holds(f)) {
		/* nobody can change the file while the grant holds */
		*st = f->st;
		st->size = f->dsize;
		st->direct = f->dm != NULL ? HM_DIRECT_YES : HM_DIRECT_GRANTED;
		return 0;
	}
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
	st->direct = HM_DIRECT_NO;	/* a grant that held was answered above */
	snprintf(st->direct_text, sizeof st->direct_text, "%s",
		 f->direct_ok ? "revoked: the file was opened for writing or evicted" :
		 f->st.direct_text);
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
	if (c->pid != fork_pid()) {
		/* a child's first call: the handle is the parent's, on the
		 * parent's connection; the child's next call reopens the
		 * others without it */
		rc = 0;
	} else {
		/* a user, not reviving: a reconnect renews the handle, so
		 * it is read with none running */
		while (c->exclusive)
			pthread_cond_wait(&c->idle, c->lock);
		c->users++;
		req.handle = f->handle;
		if (f->handle == 0 || (c->reconnect_ms > 0 && connection_lost(c->broken))) {
			rc = 0;	/* the daemon that had it is gone: nothing to close there */
		} else {
			pthread_mutex_unlock(c->lock);
			rc = client_call(c, HM_MSG_CLOSE, &req.base, -1, HM_MSG_CLOSE_REPLY,
					 &reply);
			pthread_mutex_lock(c->lock);
			if (rc == 0)
				protobuf_c_message_free_unpacked(reply, NULL);
			else if (c->reconnect_ms > 0 && connection_lost(c->broken))
				rc = 0;
		}
		if (--c->users == 0)
			pthread_cond_broadcast(&c->idle);
	}
	pthread_mutex_lock(&c->files_lock);
	if (f->prev != NULL)
		f->prev->next = f->next;
	else
		c->files = f->next;
	if (f->next != NULL)
		f->next->prev = f->prev;
	pthread_mutex_unlock(&c->files_lock);
	direct_drop(f);
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
	if (f->direct_ok && f->dm == NULL) {
		/* asked for: read it here from now on */
		pthread_mutex_lock(f->c->lock);
		if (f->c->pid == fork_pid())
			(void)direct_promote(f);
		pthread_mutex_unlock(f->c->lock);
	}
	return warmed > SSIZE_MAX ? SSIZE_MAX : (ssize_t)warmed;
}

HM_EXPORT const char *
hm_version(void)
{
	return PACKAGE_VERSION;
}
