/* SPDX-License-Identifier: MIT */
/*
 * session.c - a client's connection (see session.h): admission at accept
 * and at HELLO, the dispatch table, the handle requests (OPEN, STAT,
 * CLOSE) and PING, the peer's callbacks, and the session's free.
 *
 * What it must not do: read a file's bytes (session_read.c and
 * session_ring.c do) or check who may administer anywhere but in the
 * dispatch table.  It is the top of the session's rooms
 * (session_state.h): nothing of theirs calls back into it.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/service/admin.h"
#include "daemon/base/closer.h"
#include "daemon/base/log.h"
#include "proto/monotime.h"
#include "daemon/transport/peer.h"
#include "daemon/service/server.h"
#include "daemon/service/session.h"
#include "daemon/service/session_direct.h"
#include "daemon/service/session_state.h"
#include "daemon/service/session_region.h"
#include "daemon/service/session_ring.h"
#include "daemon/storage/storage.h"
#include "proto/ring.h"

/* A connection says HELLO within this or is closed, whatever idle-timeout
 * says (0 by default). */
#define SESSION_HELLO_TIMEOUT_S	5
/* Connections of a uid at max-connections-per-uid that are still kept, to
 * be answered at HELLO with EUSERS and the reason; past them, closed at
 * accept. */
#define SESSION_REFUSALS_IN_FLIGHT 8
#define HM_STR_(x) #x
#define HM_STRINGIFY(x) HM_STR_(x)

typedef int (*session_handler)(struct session *s, uint32_t id, ProtobufCMessage *msg);

struct session_command {
	uint16_t type;
	session_handler handler;
	bool needs_admin;
};

static int session_hello(struct session *s, uint32_t id, ProtobufCMessage *msg);
static int session_open(struct session *s, uint32_t id, ProtobufCMessage *msg);
static int session_stat(struct session *s, uint32_t id, ProtobufCMessage *msg);
static int session_close(struct session *s, uint32_t id, ProtobufCMessage *msg);
static int session_ping(struct session *s, uint32_t id, ProtobufCMessage *msg);

/* Requests a client may send; any other type disconnects it.  Those that
 * need an administrator are answered in admin.c, and checked here only. */
static const struct session_command session_commands[] = {
	{ HM_MSG_HELLO, session_hello, false },
	{ HM_MSG_OPEN, session_open, false },
	{ HM_MSG_READ, session_read, false },
	{ HM_MSG_STAT, session_stat, false },
	{ HM_MSG_CLOSE, session_close, false },
	{ HM_MSG_PING, session_ping, false },
	{ HM_MSG_STATS, admin_stats, true },
	{ HM_MSG_WARM, session_warm, false },
	{ HM_MSG_FILES, admin_files, true },
	{ HM_MSG_EVICT, admin_evict, true },
	{ HM_MSG_RING_KICK, session_ring_kick, false },
	{ HM_MSG_CONFIG, admin_config, true },
	{ HM_MSG_CLIENTS, admin_clients, true },
	{ HM_MSG_STOP, admin_stop, true },
	{ HM_MSG_RELOAD, admin_reload, true },
};

/* The requests timed in the latency histograms. */
static int
session_op(uint16_t type)
{
	switch (type) {
	case HM_MSG_OPEN: return SERVER_OP_OPEN;
	case HM_MSG_READ: return SERVER_OP_READ;
	case HM_MSG_STAT: return SERVER_OP_STAT;
	case HM_MSG_CLOSE: return SERVER_OP_CLOSE;
	case HM_MSG_WARM: return SERVER_OP_WARM;
	default: return -1;
	}
}

static void
session_unlink(struct session *s)
{
	if (s->prev != NULL)
		s->prev->next = s->next;
	else if (s->srv->sessions == s)
		s->srv->sessions = s->next;
	if (s->next != NULL)
		s->next->prev = s->prev;
	s->prev = s->next = NULL;
}

static int
session_hello(struct session *s, uint32_t id, ProtobufCMessage *msg)
{
	Hotmap__Hello *m = (Hotmap__Hello *)msg;
	Hotmap__HelloReply r = HOTMAP__HELLO_REPLY__INIT;
	char shm_error[160];
	unsigned n;

	if (s->hello_done)
		return session_error(s, id, EPROTO, "HELLO sent twice");
	if (m->version != HM_PROTO_VERSION) {
		session_error(s, id, EPROTONOSUPPORT,
			      "protocol version %u is not supported; this daemon speaks %u",
			      m->version, HM_PROTO_VERSION);
		peer_close_after_flush(s->peer, "unsupported protocol version in HELLO");
		return 0;
	}
	if (!s->admitted) {
		/* answered, so that the client learns why, then closed; no
		 * file was touched */
		s->srv->counters.refused_policy++;
		session_error(s, id, EACCES, "%s (gid %ld) may not connect to hotmapd "
			      "(allow-uid, allow-gid in hotmapd.conf)", peer_ident(s->peer)->user,
			      (long)peer_ident(s->peer)->gid);
		peer_close_after_flush(s->peer, "not allowed to connect by allow-uid/allow-gid");
		return 0;
	}
	n = policy_count_connections(s->srv, peer_ident(s->peer), 0);
	if (s->srv->cfg.max_per_uid > 0 && n > s->srv->cfg.max_per_uid) {
		/* answered, so that the client learns why, then closed */
		s->srv->counters.clients_refused++;
		session_error(s, id, EUSERS, "%s has %u connections, the most hotmapd allows "
			      "(--max-connections-per-uid %u)", peer_ident(s->peer)->user, n - 1,
			      s->srv->cfg.max_per_uid);
		peer_close_after_flush(s->peer, "too many connections for its uid");
		return 0;
	}
	s->hello_done = true;
	s->takes_copies = m->takes_copies;
	peer_set_deadline(s->peer, 0, NULL);
	log_info("client %s: hello from \"%.64s\"", peer_name(s->peer),
		 m->client_name != NULL ? m->client_name : "");
	snprintf(s->client_name, sizeof s->client_name, "%s",
		 m->client_name != NULL ? m->client_name : "");
	r.version = HM_PROTO_VERSION;
	r.features = m->features & TRANSPORT_FEATURES;
	if (m->shm_size > 0) {
		int rc = session_region_map(s, m->shm_size, m->region_handle, shm_error,
					    sizeof shm_error);

		if (rc < 0) {
			log_info("client %s: shared region refused: %s", peer_name(s->peer), shm_error);
			r.shm_error = shm_error;
			r.features &= ~HM_FEATURE_SHM;
		} else {
			r.shm_accepted = true;
		}
	}
	if (r.shm_accepted && m->region_huge && session_region_huge(s)) {
		/* whoever touches a page first decides its size: ask too */
		s->region_huge = true;
		s->srv->counters.regions_huge++;
	}
	if (r.shm_accepted)
		session_direct_hello(s, m->direct_slots, m->direct_slot_table, &r.direct_accepted,
				     &r.direct_slots);
	if (m->ring_entries > 0 && r.shm_accepted) {
		if (m->ring_entries != HM_RING_ENTRIES || s->shm_size < 2 * HM_RING_BYTES) {
			log_info("client %s: ring of %u entries in a %zu-byte region refused",
				 peer_name(s->peer), m->ring_entries, s->shm_size);
		} else {
			session_ring_start(s);
			r.ring_accepted = true;
			r.poll_us = s->srv->poll_us;
		}
	}
	r.server_version = (char *)PACKAGE_VERSION;
	r.max_frame = HM_FRAME_MAX_MESSAGE;
	return peer_send(s->peer, HM_MSG_HELLO_REPLY, id, &r.base);
}

static void
session_reason_text(const struct session_handle *sh, char *buf, size_t len)
{
	const struct storage_handle *h = &sh->h;
	bool network;
	const char *fs = storage_fs_name(h, &network);

	if (h->reason == STORAGE_REASON_NETWORK_FS && sh->copy_size > 0) {
		uint64_t now = monotime_ns();
		char size[32];

		conf_format_size(sh->copy_size, size, sizeof size);
		snprintf(buf, len, "%s: network file system (%s): read from hotmapd's copy in memory "
			 "(%s, filled %llu s ago)", storage_reason_name(h->reason), fs, size,
			 (unsigned long long)(now > sh->copy_filled_ns ?
					      (now - sh->copy_filled_ns) / 1000000000u : 0));
	} else if (h->reason == STORAGE_REASON_MMAP_FAILED)
		snprintf(buf, len, "%s: %s", storage_reason_name(h->reason), strerror(h->map_errno));
	else if (h->reason == STORAGE_REASON_NETWORK_FS && network && storage_copy_why(h) != NULL)
		snprintf(buf, len, "%s: network file system (%s): read with pread, %s",
			 storage_reason_name(h->reason), fs, storage_copy_why(h));
	else if (h->reason == STORAGE_REASON_NETWORK_FS)
		/* why, in words: hm_stat's and hotmapctl stat's */
		snprintf(buf, len, "%s: %s file system (%s): %s", storage_reason_name(h->reason),
			 network ? "network" : "user-space (FUSE)", fs,
			 h->backend == STORAGE_BACKEND_MMAP ? "mapped, as network-fs = mmap asks" :
			 network ? "read with pread, never mapped" :
			 "read with pread as a network one, never mapped");
	else
		snprintf(buf, len, "%s", storage_reason_name(h->reason));
}

/*
 * The descriptor an OPEN reads: the one passed with it, or its path
 * resolved beneath the roots.  1 with *fd set; else the request was
 * answered with ERROR and this is what session_error returned.
 */
static int
session_open_fd(struct session *s, uint32_t id, const Hotmap__Open *m, const char *name, hm_fd *f)
{
	int rc;

	if (!m->by_path) {
		rc = peer_take_file(s->peer, m->handle_value, f);
		if (rc == -EMFILE)
			return session_error(s, id, EMFILE, "%s: hotmapd is out of descriptors: the one "
					     "passed with OPEN could not be received", name);
		if (rc == -ENODEV)
			return session_error(s, id, ENODEV, "%s: the descriptor is a socket, which "
					     "hotmapd does not read (refused as it arrived)", name);
		if (rc == -EACCES)
			return session_error(s, id, EACCES, "%s: hotmapd may not take handles from the "
					     "client's process", name);
		if (rc < 0)
			return session_error(s, id, EBADF, "%s: OPEN by descriptor came without one", name);
		return 1;
	}
	if (s->srv->cfg.roots.n == 0)
		return session_error(s, id, EACCES,
				     "%s: open by path is disabled (hotmapd has no --root)", name);
	rc = resolve_open_handle(&s->srv->cfg.roots, name, s->srv->cfg.cross_mounts, f);
	if (rc < 0)
		return session_error(s, id, -rc, "%s: %s", name,
				     rc == -EACCES && !s->srv->cfg.cross_mounts ?
				     "not beneath a root of hotmapd, or across a mount point "
				     "beneath it (cross-mounts is no)" :
				     rc == -EACCES ? "not beneath a root of hotmapd" :
				     rc == -EINVAL ? "not an absolute path" : strerror(-rc));
	return 1;
}

/*
 * path-descriptors: an open by path granted direct reads gets a read-only
 * descriptor of its own with the reply: a new open file description
 * (through /proc/self/fd), so that nothing the client does to it (flags,
 * locks, close) touches the daemon's.  Without one, the grant is taken
 * back: the client has nothing to map.
 */
static int
session_open_reply_fd(struct session *s, uint32_t id, struct session_handle *sh,
		      Hotmap__OpenReply *r)
{
	int fd, rc;

	fd = storage_reopen(&sh->h);
	if (fd >= 0) {
		/* a descriptor: storage_reopen gives one only on POSIX */
		hm_fd f = (hm_fd)(intptr_t)fd;

		r->descriptor = true;
		rc = peer_send_fd(s->peer, HM_MSG_OPEN_REPLY, id, &r->base, f);
		if (rc != -EAGAIN) {
			if (rc < 0)
				closer_close(f);
			return rc;
		}
		closer_close(f);
	}
	log_info("client %s: no descriptor for a path open (%s): read through the daemon",
		 peer_name(s->peer), fd < 0 ? strerror(-fd) : "too many in flight");
	session_direct_release(s, sh);
	r->descriptor = false;
	r->direct = 0;
	r->direct_text = (char *)"path-descriptors: the descriptor could not be sent";
	return peer_send(s->peer, HM_MSG_OPEN_REPLY, id, &r->base);
}

/* The OPEN_REPLY for the handle just opened in slot, behind the warm its
 * open asks for. */
static int
session_open_reply(struct session *s, uint32_t id, const Hotmap__Open *m, const char *name,
		   int64_t slot)
{
	Hotmap__OpenReply r = HOTMAP__OPEN_REPLY__INIT;
	struct session_handle *sh = &s->handles[slot - 1];
	struct storage_stat st = { 0 };
	char reason[160], direct_text[128];
	bool network;
	int copy_fd, rc;

	(void)storage_stat(&sh->h, &st);	/* on failure, size 0: nothing to warm */
	copy_fd = session_copy_give(s, sh);	/* a network file's copy, if any */
	session_reason_text(sh, reason, sizeof reason);
	log_debug("client %s: open %s -> handle %lld, %s (%s)", peer_name(s->peer), name,
		  (long long)slot, storage_backend_name(sh->h.backend), reason);
	session_warm_open(s, id, sh, m->warm, st.size);
	r.handle = (uint64_t)slot;
	r.size = st.size;
	r.backend = sh->h.backend;
	r.reason = sh->h.reason;
	r.reason_text = reason;
	(void)storage_fs_name(&sh->h, &network);
	r.network = network;
	r.dev = st.dev;
	r.ino = st.ino;
	r.mtime_ns = st.mtime_ns;
	r.mode = st.mode;
	r.mapped_length = st.mapped_length;
	r.handles = st.handles;
	session_direct_open(s, sh, (uint64_t)slot, m->by_path, &r.direct, &r.direct_slot,
			    &r.direct_gen, &r.size, direct_text, sizeof direct_text);
	r.direct_text = direct_text;
	if (r.direct) {
		r.block_reads = storage_block_reads(&sh->h);
		r.block_reads_low = storage_block_reads_low(&sh->h);
	}
	if (m->by_path && r.direct) {
		if (copy_fd >= 0) {
			closer_close((hm_fd)(intptr_t)copy_fd);	/* a mapped file: never copied */
			sh->copy_size = 0;
		}
		return session_open_reply_fd(s, id, sh, &r);
	}
	if (copy_fd >= 0) {
		/* the copy goes with the reply, for the client to map */
		r.copy = true;
		r.copy_size = sh->copy_size;
		rc = peer_send_fd(s->peer, HM_MSG_OPEN_REPLY, id, &r.base, (hm_fd)(intptr_t)copy_fd);
		if (rc != -EAGAIN) {
			if (rc < 0)
				closer_close((hm_fd)(intptr_t)copy_fd);
			return rc;
		}
		closer_close((hm_fd)(intptr_t)copy_fd);	/* too many in flight: read as before */
		sh->copy_size = 0;
		r.copy = false;
		r.copy_size = 0;
		session_reason_text(sh, reason, sizeof reason);
	}
	return peer_send(s->peer, HM_MSG_OPEN_REPLY, id, &r.base);
}

static int
session_open(struct session *s, uint32_t id, ProtobufCMessage *msg)
{
	Hotmap__Open *m = (Hotmap__Open *)msg;
	const char *name = m->path != NULL && m->path[0] != '\0' ? m->path : "(descriptor)";
	enum storage_policy policy;
	char err[256];
	int64_t slot;
	hm_fd fd = HM_FD_INVALID;
	int rc;

	if (m->policy > STORAGE_POLICY_PREAD) {
		hm_fd passed;

		if (!m->by_path && peer_take_file(s->peer, m->handle_value, &passed) == 0)
			closer_close(passed);
		return session_error(s, id, EINVAL, "%s: unknown backend policy %u", name, m->policy);
	}
	/* The open's own choice wins; AUTO defers to the daemon's --backend. */
	policy = m->policy != STORAGE_POLICY_AUTO ? (enum storage_policy)m->policy : s->srv->cfg.policy;
	rc = session_open_fd(s, id, m, name, &fd);
	if (rc <= 0)
		return rc;
	slot = session_handle_alloc(s);
	if (slot < 0) {
		closer_close(fd);
		return session_error(s, id, (int)-slot, "%s: %s (a client may hold %d handles)",
				     name, strerror((int)-slot), SESSION_MAX_HANDLES);
	}
	err[0] = '\0';
	rc = file_cache_open(s->srv->cache, fd, policy, &s->handles[slot - 1].h, err, sizeof err);
	if (rc < 0)
		return session_error(s, id, -rc, "%s: %s", name, err[0] != '\0' ? err : strerror(-rc));
	session_handle_commit(s, slot);
	return session_open_reply(s, id, m, name, slot);
}

static int
session_stat(struct session *s, uint32_t id, ProtobufCMessage *msg)
{
	Hotmap__StatRequest *m = (Hotmap__StatRequest *)msg;
	struct session_handle *sh = session_handle_get(s, m->handle);
	Hotmap__StatReply r = HOTMAP__STAT_REPLY__INIT;
	struct storage_stat st;
	char reason[160];
	int rc;

	if (sh == NULL)
		return session_error(s, id, EBADF, "stat: no handle %llu", (unsigned long long)m->handle);
	rc = storage_stat(&sh->h, &st);
	if (rc < 0)
		return session_error(s, id, -rc, "stat: %s", strerror(-rc));
	session_reason_text(sh, reason, sizeof reason);
	r.size = st.size;
	r.backend = sh->h.backend;
	r.reason = sh->h.reason;
	r.reason_text = reason;
	r.dev = st.dev;
	r.ino = st.ino;
	r.mtime_ns = st.mtime_ns;
	r.mode = st.mode;
	r.mapped_length = st.mapped_length;
	r.handles = st.handles;
	return peer_send(s->peer, HM_MSG_STAT_REPLY, id, &r.base);
}

static int
session_close(struct session *s, uint32_t id, ProtobufCMessage *msg)
{
	Hotmap__Close *m = (Hotmap__Close *)msg;
	Hotmap__CloseReply r = HOTMAP__CLOSE_REPLY__INIT;

	if (session_handle_get(s, m->handle) == NULL)
		return session_error(s, id, EBADF, "close: no handle %llu", (unsigned long long)m->handle);
	session_handle_release(s, m->handle);
	return peer_send(s->peer, HM_MSG_CLOSE_REPLY, id, &r.base);
}

static int
session_ping(struct session *s, uint32_t id, ProtobufCMessage *msg)
{
	Hotmap__PingReply r = HOTMAP__PING_REPLY__INIT;

	(void)msg;
	r.server_version = (char *)PACKAGE_VERSION;
	r.uptime_us = stats_uptime_us(s->srv);
	r.pid = (uint32_t)s->srv->pid;
	return peer_send(s->peer, HM_MSG_PING_REPLY, id, &r.base);
}

static int
session_dispatch(struct peer *p, const struct peer_frame *f, void *arg)
{
	struct session *s = arg;
	const struct session_command *cmd = NULL;
	ProtobufCMessage *msg;
	size_t i;
	int rc;

	(void)p;
	for (i = 0; i < sizeof session_commands / sizeof session_commands[0]; i++)
		if (session_commands[i].type == f->hdr.type)
			cmd = &session_commands[i];
	if (cmd == NULL)
		return -EBADMSG;	/* a reply type from a client */
	if (frame_decode(&f->hdr, f->body, &msg) < 0)
		return -EBADMSG;
	s->srv->counters.requests[f->hdr.type]++;
	if (!s->hello_done && cmd->type != HM_MSG_HELLO) {
		session_error(s, f->hdr.id, EPROTO, "%s before HELLO", frame_type_name(f->hdr.type));
		peer_close_after_flush(s->peer, "request before HELLO");
		rc = 0;
	} else if (cmd->needs_admin && !policy_ident_is_admin(s->srv, peer_ident(s->peer))) {
		rc = session_error(s, f->hdr.id, EPERM,
				   "%s needs an administrator (uid 0, hotmapd's uid %ld, or one "
				   "that admin-uid or admin-gid in hotmapd.conf names)",
				   frame_type_name(f->hdr.type), (long)s->srv->uid);
	} else {
		int op = session_op(f->hdr.type);

		s->req_t0 = monotime_ns();
		s->req_deferred = false;
		rc = cmd->handler(s, f->hdr.id, msg);
		if (op >= 0 && !s->req_deferred)
			stats_record_latency(s->srv, (enum server_op)op, s->req_t0);
	}
	protobuf_c_message_free_unpacked(msg, NULL);
	return rc;
}

static int
session_drain(struct peer *p, void *arg)
{
	struct session *s = arg;

	(void)p;
	return session_stream_resume(s);
}

static void
session_closed(struct peer *p, bool clean, const char *why, void *arg)
{
	struct session *s = arg;

	if (clean && peer_closed_idle(p))
		/* policy, not the client's doing: operators see it */
		log_notice("client %s: disconnected: %s", peer_name(s->peer), why);
	else if (clean)
		log_info("client %s: disconnected: %s", peer_name(s->peer), why);
	else {
		s->srv->counters.clients_dropped++;
		log_warn("client %s: disconnecting: %s", peer_name(s->peer), why);
	}
	session_free(s);
}

/*
 * For --idle-timeout: reads with the workers, or through the ring (which
 * sends no frame while the loop polls), are work.  So are open files: a
 * client that opened a file holds state it will use (a loader between
 * epochs, a server between requests), and closing its connection would
 * fail its next read, or reopen every file under a reconnect policy.
 * idle-timeout reclaims connections that hold nothing; max-connections
 * and max-connections-per-uid bound the rest.
 */
static bool
session_busy(struct peer *p, void *arg)
{
	struct session *s = arg;
	bool busy = s->inflight > 0 || s->ring_active || s->used > 0;

	(void)p;
	s->ring_active = false;
	return busy;
}

/* Its share of a pass of the loop: SESSION_INLINE_MAX copied inline. */
static bool
session_yield(struct peer *p, void *arg)
{
	struct session *s = arg;

	(void)p;
	if (s->pass_inline < SESSION_INLINE_MAX)
		return false;
	s->pass_inline = 0;
	return true;
}

static const struct peer_ops session_peer_ops = {
	.dispatch = session_dispatch,
	.drain = session_drain,
	.closed = session_closed,
	.busy = session_busy,
	.yield = session_yield,
};

/*
 * Whether a connection from id's user may be kept at accept.  max-
 * connections-per-uid is answered at HELLO (EUSERS and the reason), but a
 * client that never says HELLO must not hold more: past the limit and a
 * few refusals in flight, its connections are closed at once.  And the
 * connections of all users together leave the cache its descriptors
 * (max-open-files, within RLIMIT_NOFILE), so that another user's OPEN
 * never finds the daemon out of them.
 */
static bool
session_admit_at_accept(struct server *srv, const struct peer_ident *id, char *why, size_t whylen)
{
	unsigned n = policy_count_connections(srv, id, 0);
	uint64_t cap = policy_connection_cap(srv);

	if (srv->cfg.max_per_uid > 0 && n >= srv->cfg.max_per_uid + SESSION_REFUSALS_IN_FLIGHT) {
		snprintf(why, whylen, "%s has %u connections (max-connections-per-uid %u)",
			 id->user, n, srv->cfg.max_per_uid);
		return false;
	}
	if (srv->counters.clients >= cap) {
		snprintf(why, whylen, "%llu connections in all, the most the descriptor limit "
			 "allows beside max-open-files", (unsigned long long)srv->counters.clients);
		return false;
	}
	return true;
}

int
session_new(struct server *srv, hm_conn conn)
{
	struct peer_ident id;
	struct session *s;
	char why[PEER_IDENT_USER_MAX + 96];
	int rc;

	/* who it is (uid, gid and groups; a token's user on Windows), and
	 * whether allow-uid and allow-gid, as configured now, let it in:
	 * decided at connect, told at HELLO */
	rc = peer_ident_of(conn, &id);
	if (rc == 0 && !session_admit_at_accept(srv, &id, why, sizeof why)) {
		srv->counters.clients_refused++;
		policy_log_refusal(srv, &id, why);
		peer_ident_clear(&id);
		peer_refuse(conn, EUSERS, why);
		return 0;
	}
	if (rc < 0) {
		/* no credentials: only an open policy lets it in */
		log_warn("cannot read a client's credentials: %s", strerror(-rc));
		if (rc == -ENOMEM) {
			peer_refuse(conn, ENOMEM, "out of memory");
			return -ENOMEM;
		}
	}
	s = calloc(1, sizeof *s);
	if (s == NULL) {
		peer_ident_clear(&id);
		peer_refuse(conn, ENOMEM, "out of memory");
		return -ENOMEM;
	}
	s->srv = srv;
	s->max_inflight = srv->cfg.max_inflight;
	s->max_inflight_bytes = srv->cfg.max_inflight_bytes;
	s->admitted = id.known ? policy_ident_may_connect(srv, &id) :
				 srv->cfg.allow_uid.n == 0 && srv->cfg.allow_gid.n == 0;
	s->peer = peer_new(srv->base, conn, &id, &session_peer_ops, s);
	if (s->peer == NULL) {
		peer_ident_clear(&id);
		peer_refuse(conn, ENOMEM, "out of memory");
		free(s);
		return -ENOMEM;
	}
	peer_set_idle_timeout(s->peer, srv->cfg.idle_timeout_s);
	/* whatever idle-timeout says: a connection is for a client */
	peer_set_deadline(s->peer, SESSION_HELLO_TIMEOUT_S, "no HELLO within "
			  HM_STRINGIFY(SESSION_HELLO_TIMEOUT_S) " s");
	s->next = srv->sessions;
	if (s->next != NULL)
		s->next->prev = s;
	srv->sessions = s;
	srv->counters.clients++;
	policy_count_connections(srv, peer_ident(s->peer), 1);
	srv->counters.clients_total++;
	s->connected_ns = monotime_ns();
	log_info("client %s: connected", peer_name(s->peer));
	return 0;
}

void
session_free(struct session *s)
{
	size_t i;

	if (s == NULL)
		return;
	for (i = 0; i < s->nhandles; i++)
		if (s->handles[i].used)
			session_handle_release(s, i + 1);
	free(s->handles);
	s->handles = NULL;
	s->nhandles = 0;
	session_unlink(s);
	session_ring_stop(s);
	s->srv->counters.clients--;
	if (s->region_huge)
		s->srv->counters.regions_huge--;
	policy_count_connections(s->srv, peer_ident(s->peer), -1);
	peer_free(s->peer);
	s->peer = NULL;
	if (s->inflight > 0) {
		s->dead = true;	/* the last job's completion destroys it */
		return;
	}
	session_destroy(s);
}

int
session_poll_rings(struct server *srv)
{
	struct session *s, *next;
	int taken = 0, n;

	for (s = srv->sessions; s != NULL; s = next) {
		next = s->next;
		if (!s->ring)
			continue;
		n = session_ring_poll(s);
		if (n < 0) {
			log_warn("client %s: disconnecting: its request ring runs past its end",
				 peer_name(s->peer));
			s->srv->counters.clients_dropped++;
			session_free(s);
			continue;
		}
		taken += n;
	}
	return taken;
}

void
session_set_rings_idle(struct server *srv, bool idle)
{
	struct session *s;

	for (s = srv->sessions; s != NULL; s = s->next)
		if (s->ring)
			hm_ring_store(s->shm, HM_RING_DAEMON_IDLE, idle ? 1 : 0);
}

