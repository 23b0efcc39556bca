/* SPDX-License-Identifier: MIT */
/*
 * fallback.c - HOTMAP_FALLBACK=local (hm_options.fallback): the daemon is
 * an accelerator, never a dependency.  When no daemon answers (none runs,
 * it is being restarted, it refuses this uid, it is full, it died in the
 * middle of a call), the client goes local: every file is read on the
 * process's own descriptor, as the process would read it without
 * hotmap, and each call keeps its contract: hm_pread, hm_read_batch and
 * views (copies) by pread(2), hm_stat by fstat(2), hm_warm by the
 * kernel's readahead, hm_open by opening the path here.  What only the
 * daemon can do (HM_O_PATH, hm_ping and the administrative calls) fails
 * with ENOTCONN.  call.c tries the daemon again (fallback_due) and, when
 * it answers, moves the files to it (client_reopen) and calls
 * fallback_leave.
 *
 * Local is one more kind of connection: it is entered and left only by a
 * call running exclusive (call.c), so the calls, as users, see it stable,
 * and their steps (client_open, client_do_reads, client_request) ask it
 * at their start.  A file keeps the descriptor it was read with while
 * local: hm_open_fd's is the caller's (never closed here); hm_open's is
 * opened here, and checked to be the file hm_open opened (its device and
 * inode), else the file is lost (ESTALE), as a reconnect loses a file it
 * cannot reopen.
 *
 * Must not: wait for the daemon, or talk to it; close the caller's
 * descriptor; call up into open.c or call.c.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client_priv.h"
#include "proto/monotime.h"
#include "client/os.h"
#include "client/transport.h"

/* The descriptor f is read with while local, or NONE (HM_O_PATH: the
 * daemon's to open). */
static hm_osfile
local_file(const hm_file *f)
{
	if (f->fd != HM_OSFILE_NONE)
		return f->fd;
	return f->table ? f->own_fd : f->local_fd;	/* a table file's: table_unix.c */
}

/* f's hm_stat as opened here: a file this process reads itself. */
static void
local_stat(hm_file *f, const struct os_file_stat *s, int why)
{
	memset(&f->st, 0, sizeof f->st);
	f->st.size = s->size;
	f->st.backend = HM_BACKEND_PREAD;
	f->st.reason = HM_REASON_FORCED;
	snprintf(f->st.reason_text, sizeof f->st.reason_text,
		 "local: read by this process, not hotmapd");
	f->st.dev = s->dev;
	f->st.ino = s->ino;
	f->st.mtime_ns = s->mtime_ns;
	f->st.mode = s->mode;
	f->st.handles = 1;
	if (f->c != NULL && f->c->deferred)	/* not asked: table_unix.c */
		snprintf(f->st.direct_text, sizeof f->st.direct_text,
			 "local: hotmapd not asked yet");
	else if (why == EINPROGRESS)	/* pend.c: asked, the answer not taken yet */
		snprintf(f->st.direct_text, sizeof f->st.direct_text,
			 "local: until hotmapd's answer is in");
	else
		snprintf(f->st.direct_text, sizeof f->st.direct_text,
			 "local: hotmapd not reached (%s)", strerror(why));
}

/*
 * f made readable here: its descriptor (the caller's, or the path opened
 * now and checked to be the file of dev and ino, when check), its
 * hm_stat, and the local handle.  0, or -errno (f is then lost).
 */
static int
local_file_open(hm_client *c, hm_file *f, bool check, int why)
{
	struct os_file_stat s;
	hm_osfile fd = HM_OSFILE_NONE;
	int rc;

	if (f->fd == HM_OSFILE_NONE && f->local_fd == HM_OSFILE_NONE) {
		if (f->flags & HM_O_PATH) {
			/* the daemon's to open: ENOTCONN at each read */
			f->handle = FALLBACK_HANDLE;
			snprintf(f->st.direct_text, sizeof f->st.direct_text,
				 "local: HM_O_PATH needs hotmapd (%s)", strerror(why));
			return 0;
		}
		rc = os_file_open(f->path, &fd);
		if (rc < 0)
			return rc;
	}
	rc = os_file_stat(fd != HM_OSFILE_NONE ? fd : local_file(f), &s);
	if (rc == 0 && f->fd != HM_OSFILE_NONE && (s.dev != f->dev || s.ino != f->ino))
		rc = -ESTALE;	/* the caller's number names another file now */
	if (rc == 0 && fd != HM_OSFILE_NONE && check && (s.dev != f->st.dev || s.ino != f->st.ino))
		rc = -ESTALE;	/* the path names another file now */
	if (rc < 0) {
		os_file_close(fd);
		return rc;
	}
	if (fd != HM_OSFILE_NONE)
		f->local_fd = fd;
	local_stat(f, &s, why);
	f->handle = FALLBACK_HANDLE;
	return 0;
}

/* A pending request forgotten: a reply that came for it and was never
 * taken (a process that exits before its answers are taken), and the
 * descriptor with it, go too. */
static void
pend_req_drop(struct pend_req *p)
{
	if (p->w.reply != NULL)
		protobuf_c_message_free_unpacked(p->w.reply, NULL);
	if (p->w.reply_fd >= 0)
		close(p->w.reply_fd);
	pthread_cond_destroy(&p->w.cond);
	free(p);
}

void
fallback_forget_pend(hm_client *c)
{
	struct pend_req *p = c->pend_opens, *next;

	for (; p != NULL; p = next) {
		next = p->next;
		if (p->f != NULL)
			__atomic_store_n(&p->f->pend, NULL, __ATOMIC_RELAXED);
		os_file_close(p->sent.fd);	/* one opened for it, if any */
		pend_req_drop(p);
	}
	c->pend_opens = NULL;
	c->pend_tail = &c->pend_opens;
	c->pend_nopens = 0;
	if (c->pend_hello != NULL) {
		pend_req_drop(c->pend_hello);
		__atomic_store_n(&c->pend_hello, NULL, __ATOMIC_RELAXED);
	}
	os_file_close(c->pend_hs.shm_fd);
	c->pend_hs.shm_fd = HM_OSFILE_NONE;
	region_unref(c->pend_hs.region);	/* NULL: none */
	c->pend_hs.region = NULL;
}

void
fallback_drop_conn(hm_client *c)
{
	struct hm_region *old;

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
	fallback_forget_pend(c);	/* the replies went with the connection */
	pthread_mutex_unlock(c->lock);
	region_unref(old);	/* views keep it */
}

void
fallback_enter(hm_client *c, int why)
{
	hm_file *f;

	fallback_drop_conn(c);
	pthread_mutex_lock(c->lock);
	/* the grants went with the daemon: nothing revokes them now; other
	 * threads may be reading through them */
	for (f = c->files; f != NULL; f = f->next)
		if (!f->table)	/* read under the table, not the daemon's grant */
			direct_retire(f);
	if (!c->local || c->local_wait_ms == 0)
		c->local_wait_ms = CLIENT_RECONNECT_EVERY_MS;
	else if ((c->local_wait_ms *= 2) > CLIENT_FALLBACK_RETRY_MAX_MS)
		c->local_wait_ms = CLIENT_FALLBACK_RETRY_MAX_MS;
	c->local_retry_us = monotime_us() + (uint64_t)c->local_wait_ms * 1000u;
	c->local_why = why;
	c->local = true;
	pthread_mutex_unlock(c->lock);
	for (f = c->files; f != NULL; f = f->next)
		if (!f->table && local_file_open(c, f, true, why) < 0)
			f->handle = 0;	/* lost: ESTALE, until the daemon reopens it */
}

void
fallback_leave(hm_client *c)
{
	hm_file *f;

	for (f = c->files; f != NULL; f = f->next)
		fallback_drop(f);
	pthread_mutex_lock(c->lock);
	c->local = false;
	pthread_mutex_unlock(c->lock);
}

bool
fallback_due(const hm_client *c)
{
	return c->local && monotime_us() >= c->local_retry_us;
}

bool
client_undefer(hm_client *c)
{
	bool was;

	pthread_mutex_lock(c->lock);
	was = c->deferred;
	if (was) {
		c->deferred = false;
		c->local_retry_us = 0;	/* due: the next call tries hotmapd */
	}
	pthread_mutex_unlock(c->lock);
	return was;
}

void
fallback_drop(hm_file *f)
{
	if (f->pend != NULL) {
		/* its OPEN is in flight: pend.c closes the handle it brings */
		f->pend->f = NULL;
		__atomic_store_n(&f->pend, NULL, __ATOMIC_RELAXED);
	}
	os_file_close(f->local_fd);
	f->local_fd = HM_OSFILE_NONE;
}

int
fallback_open(hm_client *c, hm_file *f, int flags)
{
	int rc;

	if (flags & HM_O_PATH)
		return -ENOTCONN;	/* only the daemon opens beneath its roots */
	/* connected: read here until the answer to its OPEN is in (pend.c) */
	rc = local_file_open(c, f, false, c->local ? c->local_why : EINPROGRESS);
	if (rc == 0)
		/* in the table of granted files: read here for good, from its
		 * own mapping while the table's entry holds (table_unix.c) */
		(void)table_take(c, f, flags);
	if (rc == 0 && (flags & HM_O_WARM))
		os_file_willneed(local_file(f), 0, 0);	/* the whole file, read ahead */
	return rc;
}

int
fallback_reads(hm_client *c, struct read_op *ops, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct read_op *op = &ops[i];
		hm_osfile fd = op->file != NULL ? local_file(op->file) : HM_OSFILE_NONE;

		/* a connected client's region block, for a file read here
		 * until its OPEN is answered (client_do_reads) */
		uint8_t *dst = op->shm ? c->region->base + op->shm_off : op->buf;

		op->local = true;
		op->done = true;
		op->result = fd == HM_OSFILE_NONE ? -ENOTCONN :
			     (ssize_t)os_file_pread_all(fd, dst, op->len, op->offset);
	}
	return 0;
}

/* f's descriptor here and its fstat now: 0, or -errno. */
static int
local_fstat(hm_file *f, hm_osfile *fd, struct os_file_stat *s)
{
	*fd = local_file(f);
	return *fd == HM_OSFILE_NONE ? -ENOTCONN : os_file_stat(*fd, s);
}

/* STAT: the file's fstat now. */
static int
local_stat_reply(hm_file *f, ProtobufCMessage **reply)
{
	Hotmap__StatReply *r;
	struct os_file_stat s;
	hm_osfile fd;
	int rc = local_fstat(f, &fd, &s);

	if (rc < 0)
		return rc;
	r = malloc(sizeof *r);
	if (r == NULL)
		return -ENOMEM;
	hotmap__stat_reply__init(r);
	r->size = s.size;
	r->backend = HM_BACKEND_PREAD;
	r->reason = HM_REASON_FORCED;
	r->dev = s.dev;
	r->ino = s.ino;
	r->mtime_ns = s.mtime_ns;
	r->mode = s.mode;
	r->handles = 1;
	/* freed as an unpacked reply is (protobuf_c_message_free_unpacked) */
	r->reason_text = strdup(f->st.reason_text);
	if (r->reason_text == NULL) {
		free(r);
		return -ENOMEM;
	}
	*reply = &r->base;
	return 0;
}

/* WARM: the kernel's readahead of the range; the bytes of it inside the
 * file. */
static int
local_warm_reply(hm_file *f, const Hotmap__Warm *w, ProtobufCMessage **reply)
{
	Hotmap__WarmReply *r;
	struct os_file_stat s;
	hm_osfile fd;
	int rc = local_fstat(f, &fd, &s);

	if (rc < 0)
		return rc;
	r = malloc(sizeof *r);
	if (r == NULL)
		return -ENOMEM;
	hotmap__warm_reply__init(r);
	if (w->offset < s.size) {
		r->warmed = w->length < s.size - w->offset ? w->length : s.size - w->offset;
		os_file_willneed(fd, w->offset, r->warmed);
	}
	*reply = &r->base;
	return 0;
}

int
fallback_request(hm_client *c, hm_file *f, uint16_t type, const ProtobufCMessage *req,
		 ProtobufCMessage **reply)
{
	(void)c;
	*reply = NULL;
	if (f != NULL && type == HM_MSG_STAT)
		return local_stat_reply(f, reply);
	if (f != NULL && type == HM_MSG_WARM)
		return local_warm_reply(f, (const Hotmap__Warm *)req, reply);
	return -ENOTCONN;	/* the daemon's alone: ping, the administrative calls */
}
