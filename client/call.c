/* SPDX-License-Identifier: MIT */
/*
 * call.c - the life of a public call on a client: it enters as a user
 * (client_enter), runs its step, runs once more when the connection was
 * lost and came back (client_retry, under the reconnect policy), and
 * leaves (client_leave); client_with_retry is the three in one, and
 * client_request one request and its reply that way.  Here too the rule
 * that a reconnect, and a child's first call after fork(2), runs
 * exclusive (see struct hm_client), and both of them: a new connection
 * (connect.c) with every open file opened again on it (open.c).
 *
 * Must not: read or write the socket but through wire.c; hold the
 * client's lock while it connects or waits for the daemon; run a call a
 * third time (a request that brings the daemon down each time must not
 * loop).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include "client/client_priv.h"
#include "proto/monotime.h"
#include "client/transport.h"

/* The connection failed (the daemon went away), as opposed to a request. */
static bool
connection_lost(int err)
{
	return err == ECONNRESET || err == EPIPE || err == ENOTCONN || err == ECONNREFUSED ||
	       err == ENOENT || err == ECONNABORTED;
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
 * HOTMAP_FALLBACK=local: one try at the daemon, never a wait.  The files
 * are made local first if they are not (the daemon went away), then
 * HELLO and their OPENs are sent (pend.c), whose replies move them to
 * the daemon once they are in; when the daemon cannot be reached, the
 * client stays local and the next try is fallback_due's.  Exclusive,
 * the lock not held.
 */
static void
client_try_daemon(hm_client *c)
{
	int rc;

	if (!c->local) {
		fallback_enter(c, c->broken != 0 ? c->broken : ECONNRESET);
		pthread_mutex_lock(c->lock);
		c->local_wait_ms = 0;	/* its first failure tries again soon */
		pthread_mutex_unlock(c->lock);
	} else {
		fallback_drop_conn(c);
	}
	rc = pend_begin(c);
	if (rc < 0)
		fallback_enter(c, -rc);	/* backs off */
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
	uint64_t deadline = monotime_us() + (uint64_t)c->reconnect_ms * 1000u;
	int rc;

	c->gen++;	/* the calls that failed run again after it, whatever it gives */
	pthread_mutex_unlock(c->lock);
	if (c->fallback) {
		client_try_daemon(c);
		pthread_mutex_lock(c->lock);
		return 0;
	}
	for (;;) {
		fallback_drop_conn(c);
		rc = client_connect(c, c->socket_path);
		if (rc == 0)
			break;
		if (monotime_us() >= deadline) {
			pthread_mutex_lock(c->lock);
			c->broken = -rc;
			return rc;
		}
		usleep(CLIENT_RECONNECT_EVERY_MS * 1000u);
	}
	rc = client_reopen(c);
	pthread_mutex_lock(c->lock);
	return rc;
}

/* Whether the connection failed and a policy acts on it: the reconnect
 * policy when the daemon went away; HOTMAP_FALLBACK=local whatever broke
 * it.  Lock held. */
static bool
client_lost(const hm_client *c)
{
	if (c->fallback)	/* a pipelined HELLO's failure is pend.c's to read */
		return c->broken != 0 && c->pend_hello == NULL;
	return c->reconnect_ms > 0 && connection_lost(c->broken);
}

/* Whether the connection is lost and the policy says to get it back, or
 * a local client is due to try the daemon again. */
bool
client_wants_reconnect(const hm_client *c)
{
	return client_lost(c) || fallback_due(c);
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
	if (!client_lost(c)) {
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
 * The first call of a child on a client inherited across fork (fork.c's
 * rules): a connection, region and handles of its own, whatever the
 * reconnect policy.  The inherited socket is closed unused (the parent
 * keeps its own), the inherited region is dropped (the child's views keep
 * their private copy of it), unless a call had them at the fork.  When
 * the daemon cannot be reached, the client is broken with that error, as
 * a lost connection is (the reconnect policy, if on, then tries again).
 * Exclusive (client_enter), the lock not held.
 */
static void
client_after_fork(hm_client *c)
{
	int rc;

	c->pid = fork_pid();
	if (c->fork_busy) {
		/* half changed by a call of the parent's: leave it be */
		c->fork_busy = false;
		c->in = NULL;
		c->cap = 0;
	} else {
		transport_close(c);
		region_unref(c->region);
	}
	c->conn = HM_CONN_NONE;
	c->start = c->end = 0;
	c->region = NULL;
	__atomic_store_n(&c->region_size, 0, __ATOMIC_RELAXED);
	c->ring = false;
	c->sq_tail = c->cq_head = 0;
	c->broken = 0;
	if (c->deferred)
		return;	/* nothing asked of hotmapd yet: the child neither */
	if (c->fallback) {
		client_try_daemon(c);	/* or local: the inherited descriptors are its own */
		return;
	}
	rc = client_connect(c, c->socket_path);
	if (rc < 0) {
		transport_close(c);
		c->broken = -rc;
		return;
	}
	client_reopen(c);
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
client_settle(hm_client *c)
{
	/* a call that needs hotmapd: a deferred client asks it now */
	(void)client_undefer(c);
	/* a child's first call (its parent's requests dropped, its own
	 * sent), a due retry: client_enter's, before the answers are taken */
	client_enter(c);
	client_leave(c);
	pthread_mutex_lock(c->lock);
	while (c->exclusive)
		pthread_cond_wait(&c->idle, c->lock);
	if (c->pend_hello != NULL || c->pend_opens != NULL) {
		client_exclusive_begin(c);
		pthread_mutex_unlock(c->lock);
		pend_settle(c, true);
		pthread_mutex_lock(c->lock);
		client_exclusive_end(c);
	}
	pthread_mutex_unlock(c->lock);
}

void
client_leave(hm_client *c)
{
	pthread_mutex_lock(c->lock);
	if (--c->users == 0)
		pthread_cond_broadcast(&c->idle);
	if (!c->exclusive && pend_due(c)) {
		/* pipelined answers came (or their time ran out): taken after
		 * a call, not before, so that the call that notices them does
		 * not go to the daemon for what it had decided to read here */
		client_exclusive_begin(c);
		pthread_mutex_unlock(c->lock);
		pend_settle(c, false);
		pthread_mutex_lock(c->lock);
		client_exclusive_end(c);
	}
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
	int *fd;		/* NULL: a descriptor with the reply is closed */
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
	if (c->local || (q->f != NULL && q->f->handle == FALLBACK_HANDLE))
		/* no daemon, or a file whose OPEN is not answered yet */
		return fallback_request(c, q->f, q->type, q->req, &q->reply);
	if (q->fd != NULL) {
		if (*q->fd >= 0)
			close(*q->fd);	/* a try before a retry's */
		*q->fd = -1;
		return client_call_fd(c, q->type, q->req, -1, q->reply_type, &q->reply, q->fd);
	}
	return client_call(c, q->type, q->req, -1, q->reply_type, &q->reply);
}

/* A request of c with its one-frame reply, under the reconnect policy. */
int
client_request(hm_client *c, uint16_t type, const ProtobufCMessage *req, uint16_t reply_type,
	       ProtobufCMessage **reply)
{
	struct request q = { .type = type, .reply_type = reply_type, .req = req };
	int rc;

	client_settle(c);	/* the daemon's answers, even when pipelined */
	rc = client_with_retry(c, request_run, &q);

	*reply = q.reply;
	return rc;
}

/* A request about f, whose handle field is *handle. */
int
client_file_request(hm_file *f, uint16_t type, const ProtobufCMessage *req, uint64_t *handle,
		    uint16_t reply_type, ProtobufCMessage **reply)
{
	struct request q = { .f = f, .handle = handle, .type = type, .reply_type = reply_type,
			     .req = req };
	int rc;

	if (!f->table)	/* a table file's are answered here (fallback.c) */
		client_settle(f->c);
	rc = client_with_retry(f->c, request_run, &q);

	*reply = q.reply;
	return rc;
}

/* client_file_request, and *fd the descriptor that came with the reply
 * (or -1). */
int
client_file_request_fd(hm_file *f, uint16_t type, const ProtobufCMessage *req, uint64_t *handle,
		       uint16_t reply_type, ProtobufCMessage **reply, int *fd)
{
	struct request q = { .f = f, .handle = handle, .type = type, .reply_type = reply_type,
			     .req = req, .fd = fd };
	int rc;

	*fd = -1;
	rc = client_with_retry(f->c, request_run, &q);
	*reply = q.reply;
	if (rc < 0 && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
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
