/* SPDX-License-Identifier: MIT */
/*
 * open.c - OPEN on the wire: a file opened on the client's connection as
 * hm_open, hm_open_fd or HM_O_PATH asked (by path, by the caller's
 * descriptor, or by one opened here and closed again), what the reply
 * says of it (its hm_stat, its grant), and every open file opened again
 * on a new connection (a reconnect, a child's first call after fork).
 *
 * Must not: run the reconnect policy (call.c runs it, and calls this);
 * close or dup the caller's descriptor; keep a descriptor of its own but
 * for a granted file (the direct tier's reads use it).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client/client_priv.h"
#include "client/os.h"
#include "client/transport.h"

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
	f->direct_ok = r->direct && reg != NULL && r->direct_slot < reg->nslots - reg->slot_first &&
		       (r->direct_gen & 1) == 0;
	f->dslot = r->direct_slot;
	f->dgen = r->direct_gen;
	f->dsize = r->size;
	f->block_reads = r->block_reads;
	f->block_reads_low = r->block_reads_low;
}

/*
 * OPEN of f with flags sent as w's request: by path (HM_O_PATH), by the
 * caller's descriptor (hm_open_fd), by the descriptor f is read with
 * locally (fallback.c's local_fd, kept until the reply), or by one
 * opened here (os->fd, closed again once the reply is in).  0 when begun
 * (os->send_rc says how the send went), -errno when nothing was sent.
 */
int
client_open_send(hm_client *c, hm_file *f, int flags, struct wire_wait *w, struct open_sent *os)
{
	Hotmap__Open req = HOTMAP__OPEN__INIT;
	hm_osfile pfd = HM_OSFILE_NONE;
	uint64_t dev, ino;
	int pass = -1, rc;

	memset(os, 0, sizeof *os);
	os->fd = HM_OSFILE_NONE;
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
		pfd = f->fd;
	} else if (flags & HM_O_PATH) {
		req.by_path = true;
	} else if (f->local_fd != HM_OSFILE_NONE) {
		/* read here while no daemon answered: the daemon gets that
		 * file, not whatever the path names now (fallback.c) */
		pfd = f->local_fd;
		os->from_local = true;
	} else {
		rc = os_file_open(f->path, &os->fd);
		if (rc < 0)
			return rc;
		pfd = os->fd;
	}
	if (pfd != HM_OSFILE_NONE)
		pass = transport_attach(pfd, &req.handle_value);
	os->by_path = req.by_path;
	rc = wire_begin(c, w, NULL, 1, 1);
	if (rc < 0) {
		os_file_close(os->fd);
		os->fd = HM_OSFILE_NONE;
		return rc;
	}
	os->send_rc = client_send(c, HM_MSG_OPEN, w->first_id, &req.base, pass);
	return 0;
}

/*
 * What OPEN's reply (taken: wire_reply gave reply, to free here, and
 * given, the descriptor that came with it, or -1) makes of f: its
 * handle, hm_stat and grant, the descriptor its direct reads use.
 */
void
client_open_apply(hm_client *c, hm_file *f, int flags, struct open_sent *os,
		  ProtobufCMessage *reply, int given)
{
	Hotmap__OpenReply *r = (Hotmap__OpenReply *)reply;
	hm_osfile fd = os->fd;
	int copy_fd = -1;
	bool spare;

	if (r->copy && given >= 0) {
		copy_fd = given;	/* hotmapd's copy of a network file (netfs.c) */
		given = -1;
	}
	if (os->from_local) {
		fd = f->local_fd;	/* the daemon has that file: it is ours now */
		f->local_fd = HM_OSFILE_NONE;
	}
	if (given >= 0 && (!os->by_path || !os_file_from_daemon_ok(given, r->dev, r->ino))) {
		close(given);
		given = -1;
	}
	if (os->by_path && r->direct && given < 0)
		r->direct = 0;	/* granted, but nothing to map it with */
	if (given >= 0)
		fd = given;	/* path-descriptors: the daemon's, read-only */
	/* under the lock: another thread may promote a file (direct_heat) */
	pthread_mutex_lock(c->lock);
	f->handle = r->handle;
	client_open_granted(f, r);
	/* a network file: read here with pread (netfs.c) */
	f->net = r->network && net_wanted(f, (int)r->backend, (int)r->reason) &&
		 (fd != HM_OSFILE_NONE || f->fd != HM_OSFILE_NONE);
	/* With many files open, a file is read through its mapping only, so
	 * that the library does not take the process's descriptors: the
	 * descriptor is mapped and closed, never published as f->own_fd,
	 * which direct readers load without the lock (a reader that found
	 * it between the two would pread a closed, or reused, number). */
	spare = fd == HM_OSFILE_NONE || os_file_plenty(fd);
	if (fd != HM_OSFILE_NONE && spare && (f->direct_ok || f->net))
		f->own_fd = fd;	/* the direct tier's preads use it, or netfs.c's */
	if (!spare)
		f->net = f->net && f->fd != HM_OSFILE_NONE;
	if (copy_fd >= 0)
		net_copy_take(f, copy_fd, r->copy_size);	/* netfs.c: read from it */
	if (f->copy != NULL)
		f->net = true;	/* a reopen: it reads the copy it was given until
				 * hm_close, whatever the new daemon says */
	if (f->direct_ok && ((flags & (HM_O_DIRECT | HM_O_WARM)) || c->direct_after == 0 || !spare))
		(void)direct_promote_fd(f, f->fd != HM_OSFILE_NONE ? f->fd : fd);
	if (fd != HM_OSFILE_NONE && f->own_fd != fd)
		os_file_close(fd);	/* ours, not the caller's: the daemon has its own copy */
	pthread_mutex_unlock(c->lock);
	protobuf_c_message_free_unpacked(reply, NULL);
}

/*
 * OPEN of f with flags (checked by the caller), waiting for its reply.
 * Sets f->handle, or returns -errno.  A call's user (or the reconnect,
 * exclusive); the lock not held.
 */
int
client_open(hm_client *c, hm_file *f, int flags)
{
	ProtobufCMessage *reply;
	struct open_sent os;
	struct wire_wait w;
	int given, rc;

	if (c->local)
		return fallback_open(c, f, flags);	/* no daemon: opened here */
	if (c->fallback && !(flags & HM_O_PATH))
		/* a new file (HOTMAP_FALLBACK=local moves old ones with pend.c):
		 * read here until the answer to its OPEN, sent next
		 * (pend_open), is in */
		return fallback_open(c, f, flags);
	/* a reopen: the old connection's grant means nothing, but threads
	 * may still be reading through it (direct reads take no user, so
	 * the reconnect does not wait for them): retired, not freed */
	pthread_mutex_lock(c->lock);
	direct_retire(f);
	pthread_mutex_unlock(c->lock);
	rc = client_open_send(c, f, flags, &w, &os);
	if (rc < 0)
		return rc;
	rc = wire_finish(c, &w, os.send_rc);
	rc = wire_reply(c, &w, rc, HM_MSG_OPEN_REPLY, &reply, &given);
	if (rc < 0) {
		os_file_close(os.fd);
		return rc;
	}
	client_open_apply(c, f, flags, &os, reply, given);
	return 0;
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
		if (!f->table)	/* read here for good (table_unix.c) */
			f->handle = 0;	/* the old connection's numbers mean nothing now */
	for (f = c->files; f != NULL; f = f->next) {
		if (f->table)
			continue;
		if (client_open(c, f, f->flags) < 0) {
			f->handle = 0;
			if (c->broken)
				return -c->broken;
		}
	}
	return 0;
}
