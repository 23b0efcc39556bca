/* SPDX-License-Identifier: MIT */
/*
 * pend.c - HOTMAP_FALLBACK=local's pipelined connection.  A client that
 * may read without the daemon need not wait for it: hm_connect connects
 * and sends HELLO (with the region it offers) and returns; hm_open opens
 * the file here, sends OPEN with that descriptor and returns; the client
 * is local meanwhile (fallback.c: every read is a pread on the file's own
 * descriptor).  The replies are taken when they are in: a call looks
 * (pend_due, every CLIENT_PEND_CHECK_US, one poll(2) of the socket) and,
 * when something came, takes what is whole without waiting; a call that
 * needs the daemon (client_settle: HM_O_PATH, hm_stat, hm_warm, the
 * administrative calls) waits for them.  Once HELLO's reply and every
 * OPEN's are in, the client moves to the daemon at once: the region
 * HELLO offered becomes the client's, each file gets its handle and
 * grant (the direct tier) and its local descriptor moves to the direct
 * tier or is closed.  A refusal (HELLO's or an OPEN's), a connection
 * that breaks, or CLIENT_PEND_WAIT_MS without a reply, leave the client
 * local as fallback.c's rules say (fallback_enter: the next try backs
 * off), its files read as before.  A client that has moved pipelines
 * its new files the same way (pend_open): each is read here until its
 * own OPEN's answer is in, and moves alone (pend_settle_connected); a
 * file the daemon refuses stays read here.
 *
 * Nothing here waits but pend_settle with wait set, and that only until
 * the deadline.  The replies are read only by a call running exclusive
 * (call.c), so no thread reads through a file while it moves.
 *
 * Must not: read the socket but through wire.c; hold the lock across a
 * system call that waits; send a file's OPEN twice in one round.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "client/client_priv.h"
#include "proto/monotime.h"
#include "client/os.h"
#include "client/transport.h"

/* f's OPEN sent, its reply taken later.  Lock not held. */
static void
pend_open_send(hm_client *c, hm_file *f)
{
	struct pend_req *p;
	int rc;

	if (f->pend != NULL || f->pend_skip || f->table || c->pend_nopens >= CLIENT_PEND_MAX)
		return;	/* (a table file is never hotmapd's: table_unix.c) */
	p = calloc(1, sizeof *p);
	if (p == NULL)
		return;	/* sent at the next look */
	p->f = f;
	p->given = -1;
	rc = client_open_send(c, f, f->flags, &p->w, &p->sent);
	if (rc < 0) {
		free(p);
		/* its descriptor is gone or names another file: as a
		 * reconnect would, the file is lost; else the next look */
		if (rc == -EBADF || rc == -ESTALE) {
			f->pend_skip = true;
			f->handle = 0;
		}
		return;
	}
	pthread_mutex_lock(c->lock);
	if (c->pend_hello == NULL && c->pend_opens == NULL) {
		/* connected: the first OPEN in flight starts the wait */
		c->pend_check_us = monotime_us();
		c->pend_deadline_us = c->pend_check_us + CLIENT_PEND_WAIT_MS * 1000u;
	}
	__atomic_store_n(&f->pend, p, __ATOMIC_RELAXED);	/* hm_stat looks unlocked */
	*c->pend_tail = p;
	c->pend_tail = &p->next;
	c->pend_nopens++;
	pthread_mutex_unlock(c->lock);
}

int
pend_begin(hm_client *c)
{
	struct pend_req *p = calloc(1, sizeof *p);
	uint64_t now = monotime_us();
	hm_file *f;
	int rc;

	if (p == NULL)
		return -ENOMEM;
	rc = client_hello_send(c, c->socket_path, &p->w, &c->pend_hs);
	if (rc < 0) {
		free(p);
		return rc;
	}
	pthread_mutex_lock(c->lock);
	__atomic_store_n(&c->pend_hello, p, __ATOMIC_RELAXED);	/* hm_stat looks unlocked */
	c->pend_check_us = now;	/* the first call looks */
	c->pend_deadline_us = now + CLIENT_PEND_WAIT_MS * 1000u;
	c->local_retry_us = UINT64_MAX;	/* not fallback_due: the replies are awaited */
	if (!c->local) {
		c->local = true;
		c->local_wait_ms = 0;	/* a failure tries again soon */
	}
	for (f = c->files; f != NULL; f = f->next)
		f->pend_skip = false;
	pthread_mutex_unlock(c->lock);
	for (f = c->files; f != NULL; f = f->next)
		pend_open_send(c, f);
	return 0;
}

void
pend_open(hm_client *c, hm_file *f)
{
	/* local with no HELLO in flight: sent with the next try's */
	if (c->pend_hello != NULL || !c->local)
		pend_open_send(c, f);
}

bool
pend_due(hm_client *c)
{
	struct pend_req *p;
	uint64_t now;

	if (c->pend_hello == NULL && c->pend_opens == NULL)
		return false;
	if (c->broken)
		return c->pend_hello != NULL;	/* a send failed: the refusal is read at once */
	now = monotime_us();
	if (now < c->pend_check_us)
		return false;
	c->pend_check_us = now + CLIENT_PEND_CHECK_US;
	if (c->pend_hello == NULL) {
		/* connected: another thread's read may have taken an answer */
		for (p = c->pend_opens; p != NULL; p = p->next)
			if (p->w.left == 0 || p->w.err != 0)
				return true;
		return transport_readable(c, 0) > 0;
	}
	return now >= c->pend_deadline_us || transport_readable(c, 0) != 0;
}

/* Whether every request of the round has its reply (or failed), and
 * every file its OPEN (sent now when the window has room). */
static bool
pend_all_in(hm_client *c)
{
	struct pend_req *p;
	hm_file *f;

	for (f = c->files; f != NULL; f = f->next)
		pend_open_send(c, f);
	if (!wire_answered(c, &c->pend_hello->w))
		return false;
	for (p = c->pend_opens; p != NULL; p = p->next)
		if (!wire_answered(c, &p->w))
			return false;
	for (f = c->files; f != NULL; f = f->next)
		if (f->pend == NULL && !f->pend_skip && !f->table)
			return false;
	return true;
}

/* How many replies are in: progress pushes the deadline on. */
static unsigned
pend_answered(hm_client *c)
{
	struct pend_req *p;
	unsigned n = c->pend_hello != NULL && wire_answered(c, &c->pend_hello->w);

	for (p = c->pend_opens; p != NULL; p = p->next)
		n += wire_answered(c, &p->w);
	return n;
}

/* An orphan's handle (its file closed while its OPEN was in flight)
 * closed on the daemon. */
static void
pend_close_orphan(hm_client *c, struct pend_req *p)
{
	Hotmap__Close req = HOTMAP__CLOSE__INIT;

	req.handle = ((Hotmap__OpenReply *)p->reply)->handle;
	(void)client_post(c, HM_MSG_CLOSE, &req.base, HM_MSG_CLOSE_REPLY);
}

/*
 * Every reply is in: HELLO's taken (the region becomes c's), then each
 * OPEN's; when one failed, nothing moves (-errno: the client stays
 * local); else each file moves to the daemon and the client leaves
 * local.  The pending requests are gone either way.
 */
static int
pend_adopt(hm_client *c)
{
	struct pend_req *hello = c->pend_hello, *list = c->pend_opens, *p, *next;
	int rc;

	pthread_mutex_lock(c->lock);
	__atomic_store_n(&c->pend_hello, NULL, __ATOMIC_RELAXED);
	c->pend_opens = NULL;
	c->pend_tail = &c->pend_opens;
	c->pend_nopens = 0;
	pthread_mutex_unlock(c->lock);
	rc = client_hello_finish(c, &hello->w, &c->pend_hs);
	free(hello);
	for (p = list; p != NULL; p = p->next) {
		p->rc = wire_finish(c, &p->w, p->sent.send_rc);
		p->rc = wire_reply(c, &p->w, p->rc, HM_MSG_OPEN_REPLY, &p->reply, &p->given);
		if (p->rc < 0)
			os_file_close(p->sent.fd);
		if (p->rc < 0 && p->f != NULL && rc == 0)
			rc = p->rc;
	}
	for (p = list; p != NULL; p = next) {
		next = p->next;
		if (p->f != NULL)
			__atomic_store_n(&p->f->pend, NULL, __ATOMIC_RELAXED);
		if (p->rc == 0 && p->f != NULL && rc == 0) {
			client_open_apply(c, p->f, p->f->flags, &p->sent, p->reply, p->given);
		} else if (p->rc == 0) {
			if (p->f == NULL && rc == 0)
				pend_close_orphan(c, p);
			protobuf_c_message_free_unpacked(p->reply, NULL);
			if (p->given >= 0)
				close(p->given);
			os_file_close(p->sent.fd);
		}
		free(p);
	}
	if (rc == 0)
		fallback_leave(c);
	return rc;
}

/* The answers that are in applied, file by file: a connected client's
 * new files (pend_open).  A file the daemon refused stays read here. */
static void
pend_take_connected(hm_client *c)
{
	struct pend_req **pp = &c->pend_opens, *p;

	while ((p = *pp) != NULL) {
		if (!wire_answered(c, &p->w)) {
			pp = &p->next;
			continue;
		}
		pthread_mutex_lock(c->lock);
		*pp = p->next;
		if (c->pend_tail == &p->next)
			c->pend_tail = pp;
		c->pend_nopens--;
		if (p->f != NULL)
			__atomic_store_n(&p->f->pend, NULL, __ATOMIC_RELAXED);
		pthread_mutex_unlock(c->lock);
		p->rc = wire_finish(c, &p->w, p->sent.send_rc);
		p->rc = wire_reply(c, &p->w, p->rc, HM_MSG_OPEN_REPLY, &p->reply, &p->given);
		if (p->rc == 0 && p->f != NULL) {
			client_open_apply(c, p->f, p->f->flags, &p->sent, p->reply, p->given);
		} else {
			if (p->rc == 0) {
				pend_close_orphan(c, p);
				protobuf_c_message_free_unpacked(p->reply, NULL);
				if (p->given >= 0)
					close(p->given);
			} else if (p->f != NULL) {
				p->f->pend_skip = true;	/* refused: read here */
			}
			os_file_close(p->sent.fd);
		}
		free(p);
	}
}

/* Whether the answers' deadline has passed at now; answers that came
 * since the last look (seen) move it CLIENT_PEND_WAIT_MS on: a daemon
 * that answers, slowly, is waited for. */
static bool
pend_expired(hm_client *c, unsigned *seen, uint64_t now)
{
	unsigned n = pend_answered(c);

	if (n > *seen) {
		*seen = n;
		c->pend_deadline_us = now + CLIENT_PEND_WAIT_MS * 1000u;
	}
	return now >= c->pend_deadline_us;
}

/* Waits until the socket is readable or the deadline (now is before it). */
static int
pend_wait(hm_client *c, uint64_t now)
{
	return transport_readable(c, (unsigned)((c->pend_deadline_us - now + 999) / 1000));
}

/* A connected client's pending OPENs: what is in is applied; with wait,
 * the rest are waited for until the deadline, then read here still. */
static void
pend_settle_connected(hm_client *c, bool wait)
{
	unsigned seen = pend_answered(c);

	for (;;) {
		uint64_t now;
		hm_file *f;
		int rc = wire_take_ready(c);

		if (rc < 0)
			return;	/* broken: the reconnect policy takes over */
		pend_take_connected(c);
		for (f = c->files; f != NULL; f = f->next)
			if (f->handle == FALLBACK_HANDLE)
				pend_open_send(c, f);	/* the window had no room */
		if (c->pend_opens == NULL || !wait)
			return;
		now = monotime_us();
		if (pend_expired(c, &seen, now) || pend_wait(c, now) < 0)
			return;
	}
}

void
pend_settle(hm_client *c, bool wait)
{
	unsigned seen;
	int rc = 0;

	if (c->pend_hello == NULL) {
		pend_settle_connected(c, wait);
		return;
	}
	seen = pend_answered(c);
	while (c->pend_hello != NULL) {
		uint64_t now;

		rc = wire_take_ready(c);
		if (rc < 0)
			break;
		/* Not before a file is open, unless asked to: the first
		 * hm_open after the answers are in would wait for its own,
		 * where a pipelined one waits for nothing. */
		if (pend_all_in(c) && (wait || c->pend_opens != NULL)) {
			rc = pend_adopt(c);
			break;
		}
		now = monotime_us();
		if (pend_expired(c, &seen, now)) {
			rc = -ETIMEDOUT;
			break;
		}
		if (!wait)
			return;	/* the next look is pend_due's */
		rc = pend_wait(c, now);
		if (rc < 0)
			break;
	}
	if (rc < 0 && c->pend_hello != NULL && wire_answered(c, &c->pend_hello->w) &&
	    c->pend_hello->w.result < 0)
		rc = c->pend_hello->w.result;	/* refused, then closed: the refusal says why */
	if (rc < 0)
		fallback_enter(c, -rc);	/* local, as no daemon had answered */
}
