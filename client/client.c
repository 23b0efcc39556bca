/* SPDX-License-Identifier: MIT */
/*
 * client.c - libhotmap (see hotmap.h and libhotmap(3)).
 *
 * Blocking I/O on one Unix stream socket per hm_client, shared by the
 * threads that use it: each call's requests have ids of their own and are
 * in flight together with other threads' (wire.c reads the replies and
 * hands each to its call).  Read data is received straight into the
 * caller's buffer once the bytes already buffered are used up.
 *
 * This file: the reconnect policy and the call-with-retry that every
 * public call goes through, open, stat, warm and close.  Connecting and
 * the options are in connect.c, reads in read.c, frames in wire.c, the
 * region and views in region.c, polling mode in ring.c, the direct tier
 * in direct.c, fork in fork.c, the administrative calls in admin.c (see
 * client_priv.h).
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
#include <time.h>
#include <unistd.h>

#include "client/client_priv.h"
#include "client/clock.h"
#include "client/os.h"
#include "client/transport.h"
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
	hm_osfile fd = HM_OSFILE_NONE;
	uint64_t dev, ino;
	int given, pass = -1, rc;

	pthread_mutex_lock(c->lock);
	direct_drop(f);	/* a reopen: the old connection's grant means nothing */
	pthread_mutex_unlock(c->lock);
	req.policy = flags & HM_O_MMAP ? 1 : flags & HM_O_PREAD ? 2 : 0;
	req.warm = (flags & HM_O_WARM) != 0;
	req.path = f->path;
	if (f->fd != HM_OSFILE_NONE) {
		/* A descriptor that is gone must not break the connection
		 * (sendmsg refuses it) and one that names another file now
		 * must not be read in its place. */
		if (os_file_id(f->fd, &dev, &ino) < 0)
			return -EBADF;
		if (dev != f->dev || ino != f->ino)
			return -ESTALE;
		pass = transport_attach(f->fd, &req.handle_value);
	} else if (flags & HM_O_PATH) {
		req.by_path = true;
	} else {
		rc = os_file_open(f->path, &fd);
		if (rc < 0)
			return rc;
		pass = transport_attach(fd, &req.handle_value);
	}
	rc = client_call_fd(c, HM_MSG_OPEN, &req.base, pass, HM_MSG_OPEN_REPLY, &reply, &given);
	if (rc < 0) {
		os_file_close(fd);
		return rc;
	}
	r = (Hotmap__OpenReply *)reply;
	if (given >= 0 && (!req.by_path || !os_file_from_daemon_ok(given, r->dev, r->ino))) {
		close(given);
		given = -1;
	}
	if (req.by_path && r->direct && given < 0)
		r->direct = 0;	/* granted, but nothing to map it with */
	if (given >= 0)
		fd = given;	/* path-descriptors: the daemon's, read-only */
	/* under the lock: another thread may promote a file (direct_heat) */
	pthread_mutex_lock(c->lock);
	f->handle = r->handle;
	client_open_granted(f, r);
	if (fd != HM_OSFILE_NONE && f->direct_ok)
		f->own_fd = fd;	/* the direct tier's preads use it */
	else
		os_file_close(fd);	/* ours, not the caller's: the daemon has its own copy */
	if (f->direct_ok && ((flags & (HM_O_DIRECT | HM_O_WARM)) || c->direct_after == 0 ||
			    !os_file_plenty(f->own_fd)))
		(void)direct_promote(f);
	if (f->own_fd != HM_OSFILE_NONE && !os_file_plenty(f->own_fd)) {
		/* many files open: read them through their mappings only, so
		 * that the library does not take the process's descriptors */
		os_file_close(f->own_fd);
		f->own_fd = HM_OSFILE_NONE;
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
		transport_close(c);
		pthread_mutex_lock(c->lock);
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
	f->fd = HM_OSFILE_NONE;
	f->own_fd = HM_OSFILE_NONE;
	f->path = absolute_path(path);
	if (f->path == NULL) {
		rc = errno;
		free(f);
		errno = rc;
		return NULL;
	}
	return client_add_file(c, f, flags);
}

/* hm_open_fd, or Windows' hm_open_handle: the caller's file f. */
hm_file *
client_open_osfile(hm_client *c, hm_osfile f, int flags)
{
	hm_file *file;
	uint64_t dev, ino;

	set_last_error(NULL);
	if (c == NULL || (flags & ~(HM_O_MMAP | HM_O_PREAD | HM_O_WARM | HM_O_DIRECT)) != 0 ||
	    (flags & (HM_O_MMAP | HM_O_PREAD)) == (HM_O_MMAP | HM_O_PREAD)) {
		errno = EINVAL;
		return NULL;
	}
	if (f == HM_OSFILE_NONE || os_file_id(f, &dev, &ino) < 0) {
		errno = EBADF;
		return NULL;
	}
	file = calloc(1, sizeof *file);
	if (file == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	file->fd = f;
	file->own_fd = HM_OSFILE_NONE;
	file->dev = dev;
	file->ino = ino;
	return client_add_file(c, file, flags);
}

HM_EXPORT hm_file *
hm_open_fd(hm_client *c, int fd, int flags)
{
	hm_osfile f = HM_OSFILE_NONE;

	if (fd >= 0 && os_file_of_fd(fd, &f) < 0)
		f = HM_OSFILE_NONE;	/* EBADF, after the flags are checked */
	return client_open_osfile(c, f, flags);
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
			/* not waited for: a short-lived process would spend a
			 * round trip on a reply that can only say the handle
			 * is gone, which it is either way */
			pthread_mutex_unlock(c->lock);
			rc = client_post(c, HM_MSG_CLOSE, &req.base, HM_MSG_CLOSE_REPLY);
			pthread_mutex_lock(c->lock);
			if (rc < 0 && c->reconnect_ms > 0 && connection_lost(c->broken))
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
	direct_warm(f, offset, len);
	return warmed > SSIZE_MAX ? SSIZE_MAX : (ssize_t)warmed;
}

HM_EXPORT const char *
hm_version(void)
{
	return PACKAGE_VERSION;
}
