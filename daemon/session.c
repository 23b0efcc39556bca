/*
 * session.c - a client's requests and handles (see session.h).
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <fcntl.h>
#include <unistd.h>

#include "daemon/admin.h"
#include "daemon/closer.h"
#include "daemon/guard.h"
#include "daemon/log.h"
#include "daemon/monotime.h"
#include "daemon/peer.h"
#include "daemon/server.h"
#include "daemon/session.h"
#include "daemon/session_priv.h"
#include "daemon/session_ring.h"
#include "daemon/storage.h"
#include "daemon/workers.h"
#include "proto/ring.h"

/* Readahead for handles read in order: each read that continues the last
 * one asks for the next window ahead of it, doubling up to the maximum;
 * a jump starts over.  The kernel's own readahead is per descriptor, and
 * the daemon's descriptor is shared by every reader of the file. */
#define SESSION_RA_MIN		(256u * 1024u)
#define SESSION_RA_MAX		(16u * 1024u * 1024u)
/* A connection says HELLO within this or is closed, whatever idle-timeout
 * says (0 by default). */
#define SESSION_HELLO_TIMEOUT_S	5
/* Connections of a uid at max-connections-per-uid that are still kept, to
 * be answered at HELLO with EUSERS and the reason; past them, closed at
 * accept. */
#define SESSION_REFUSALS_IN_FLIGHT 8
/* What a worker does for one job at a time: longer reads into the region
 * and warms run in steps this long, each going back to the end of its
 * owner's turn (workers.h), so that no client holds a worker long. */
#ifndef SESSION_STEP
#define SESSION_STEP		(8u * 1024u * 1024u)
#endif
#define HM_STR_(x) #x
#define HM_STRINGIFY(x) HM_STR_(x)

static void session_destroy(struct session *s);

typedef int (*session_handler)(struct session *s, uint32_t id, ProtobufCMessage *msg);

struct session_command {
	uint16_t type;
	session_handler handler;
	bool needs_admin;
};

static int session_hello(struct session *s, uint32_t id, ProtobufCMessage *msg);
static int session_open(struct session *s, uint32_t id, ProtobufCMessage *msg);
static int session_read(struct session *s, uint32_t id, ProtobufCMessage *msg);
static int session_stat(struct session *s, uint32_t id, ProtobufCMessage *msg);
static int session_close(struct session *s, uint32_t id, ProtobufCMessage *msg);
static int session_ping(struct session *s, uint32_t id, ProtobufCMessage *msg);
static int session_warm(struct session *s, uint32_t id, ProtobufCMessage *msg);

static int read_region_done(struct session *s, struct read_job *j);
static int read_socket_done(struct session *s, struct read_job *j);
static int read_chunk_done(struct session *s, struct read_job *j);
static int read_warm_done(struct session *s, struct read_job *j);
static int read_warm_open_done(struct session *s, struct read_job *j);

/* The kinds of job the workers do for session.c (the ring's is in
 * session_ring.c). */

/* READ into the shared region: one copy, one small reply. */
static const struct read_kind read_kind_region = {
	.stepped = true, .warm = false, .op = SERVER_OP_READ, .done = read_region_done,
};
/* READ of up to SESSION_READ_CHUNK: one frame of data. */
static const struct read_kind read_kind_socket = {
	.stepped = false, .warm = false, .op = SERVER_OP_READ, .done = read_socket_done,
};
/* The stream's next chunk: timed when the stream ends. */
static const struct read_kind read_kind_chunk = {
	.stepped = false, .warm = false, .op = -1, .done = read_chunk_done,
};
/* WARM: bring a range into memory, then reply. */
static const struct read_kind read_kind_warm = {
	.stepped = true, .warm = true, .op = SERVER_OP_WARM, .done = read_warm_done,
};
/* An open's warm: in the background, no reply. */
static const struct read_kind read_kind_warm_open = {
	.stepped = true, .warm = true, .op = -1, .done = read_warm_open_done,
};

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

struct session *
session_next(struct session *s)
{
	return s->next;
}

struct session_handle *
session_handle_get(struct session *s, uint64_t handle)
{
	if (handle == 0 || handle > s->nhandles || !s->handles[handle - 1].used)
		return NULL;
	return &s->handles[handle - 1];
}

/* A free slot's number (1-based), or -EMFILE / -ENOMEM. */
static int64_t
session_handle_alloc(struct session *s)
{
	size_t i;

	if (s->used == s->nhandles) {
		size_t n = s->nhandles == 0 ? 16 : s->nhandles * 2;
		struct session_handle *v;

		if (n > SESSION_MAX_HANDLES)
			n = SESSION_MAX_HANDLES;
		if (n == s->nhandles)
			return -EMFILE;
		v = realloc(s->handles, n * sizeof *v);
		if (v == NULL)
			return -ENOMEM;
		memset(v + s->nhandles, 0, (n - s->nhandles) * sizeof *v);
		s->free_hint = s->nhandles;
		s->handles = v;
		s->nhandles = n;
	}
	for (i = s->free_hint; i < s->nhandles; i++)
		if (!s->handles[i].used)
			break;
	/* used < nhandles and every slot below free_hint is used, so i is
	 * free; free_hint moves past it only once the open succeeds. */
	return (int64_t)i + 1;
}

static void
session_handle_release(struct session *s, uint64_t handle)
{
	struct session_handle *sh = &s->handles[handle - 1];

	file_cache_close(s->srv->cache, &sh->h);
	memset(sh, 0, sizeof *sh);
	s->used--;
	s->srv->counters.handles--;
	if (handle - 1 < s->free_hint)
		s->free_hint = handle - 1;
}

struct server *
session_server(struct session *s)
{
	return s->srv;
}

struct peer *
session_peer(struct session *s)
{
	return s->peer;
}

int
session_error(struct session *s, uint32_t id, int error, const char *fmt, ...)
{
	char text[480];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	stats_count_error(s->srv, error);
	log_debug("client %s: request %u: %s", peer_name(s->peer), id, text);
	return peer_send_error(s->peer, id, error, "%s", text);
}

/* f_type of tmpfs, and of a memfd made without MFD_HUGETLB (linux/magic.h) */
#define SESSION_TMPFS_MAGIC 0x01021994

/*
 * Maps the memfd that came with HELLO.  It must be sealed against shrinking
 * and growing, exactly the size announced, and on tmpfs: then the daemon's
 * copies into it can never fault, whatever the client does to its end (a
 * page it punches out comes back as a new zero page on the next touch).
 * Not so on hugetlbfs (MFD_HUGETLB): a punched huge page comes back only
 * while the system has a free one, and the copy faults when it has none.
 * The guard recovers such a fault all the same (the client is dropped);
 * this check keeps it from happening.
 */
static int
session_map_region(struct session *s, uint64_t size, char *err, size_t errlen)
{
	int fd = peer_take_fd(s->peer);
	struct statfs sfs = { .f_type = 0 };
	struct stat st;
	int seals, rc = 0;
	void *p;

	if (fd < 0) {
		snprintf(err, errlen, "%s", fd == -EMFILE ?
			 "hotmapd is out of descriptors: the region could not be received" :
			 fd == -ENODEV ? "the region is a socket, not a memfd" :
			 "no descriptor came with HELLO");
		return fd == -EMFILE || fd == -ENODEV ? fd : -EBADF;
	}
	seals = fcntl(fd, F_GET_SEALS);
	if (size > HM_SHM_MAX) {
		snprintf(err, errlen, "%llu bytes is more than the %llu a client may share",
			 (unsigned long long)size, (unsigned long long)HM_SHM_MAX);
		rc = -EFBIG;
	} else if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW)) {
		snprintf(err, errlen, "the region is not a memfd sealed against shrinking and growing");
		rc = -EPERM;
	} else if (fstatfs(fd, &sfs) < 0 || (uint32_t)sfs.f_type != SESSION_TMPFS_MAGIC) {
		snprintf(err, errlen, "the region is not on tmpfs (f_type 0x%lx): a memfd made with "
			 "MFD_HUGETLB is refused, since its pages can run out under a copy",
			 (unsigned long)(uint32_t)sfs.f_type);
		rc = -EPERM;
	} else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != size) {
		snprintf(err, errlen, "the region's size is not the %llu bytes announced",
			 (unsigned long long)size);
		rc = -EINVAL;
	} else {
		p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			rc = -errno;
			snprintf(err, errlen, "mmap: %s", strerror(-rc));
		} else {
			s->shm = p;
			s->shm_size = (size_t)size;
		}
	}
	closer_close(fd);
	return rc;
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
		session_error(s, id, EACCES, "uid %ld (gid %ld) may not connect to hotmapd "
			      "(allow-uid, allow-gid in hotmapd.conf)", (long)peer_uid(s->peer),
			      (long)s->gid);
		peer_close_after_flush(s->peer, "not allowed to connect by allow-uid/allow-gid");
		return 0;
	}
	n = policy_count_connections(s->srv, peer_uid(s->peer), 0);
	if (s->srv->cfg.max_per_uid > 0 && n > s->srv->cfg.max_per_uid) {
		/* answered, so that the client learns why, then closed */
		s->srv->counters.clients_refused++;
		session_error(s, id, EUSERS, "uid %ld has %u connections, the most hotmapd allows "
			      "(--max-connections-per-uid %u)", (long)peer_uid(s->peer), n - 1,
			      s->srv->cfg.max_per_uid);
		peer_close_after_flush(s->peer, "too many connections for its uid");
		return 0;
	}
	s->hello_done = true;
	peer_set_deadline(s->peer, 0, NULL);
	log_info("client %s: hello from \"%.64s\"", peer_name(s->peer),
		 m->client_name != NULL ? m->client_name : "");
	r.version = HM_PROTO_VERSION;
	r.features = m->features & HM_FEATURES_ALL;
	if (m->shm_size > 0) {
		int rc = session_map_region(s, m->shm_size, shm_error, sizeof shm_error);

		if (rc < 0) {
			log_info("client %s: shared region refused: %s", peer_name(s->peer), shm_error);
			r.shm_error = shm_error;
			r.features &= ~HM_FEATURE_SHM;
		} else {
			r.shm_accepted = true;
		}
	}
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
session_reason_text(const struct storage_handle *h, char *buf, size_t len)
{
	if (h->reason == STORAGE_REASON_MMAP_FAILED)
		snprintf(buf, len, "%s: %s", storage_reason_name(h->reason), strerror(h->map_errno));
	else
		snprintf(buf, len, "%s", storage_reason_name(h->reason));
}

static int
session_open(struct session *s, uint32_t id, ProtobufCMessage *msg)
{
	Hotmap__Open *m = (Hotmap__Open *)msg;
	Hotmap__OpenReply r = HOTMAP__OPEN_REPLY__INIT;
	const char *name = m->path != NULL && m->path[0] != '\0' ? m->path : "(descriptor)";
	enum storage_policy policy;
	struct storage_stat st = { 0 };
	char err[256], reason[128];
	struct session_handle *sh;
	int64_t slot;
	int fd, rc;

	if (m->policy > STORAGE_POLICY_PREAD) {
		if (!m->by_path) {
			closer_close(peer_take_fd(s->peer));
		}
		return session_error(s, id, EINVAL, "%s: unknown backend policy %u", name, m->policy);
	}
	/* The open's own choice wins; AUTO defers to the daemon's --backend. */
	policy = m->policy != STORAGE_POLICY_AUTO ? (enum storage_policy)m->policy : s->srv->cfg.policy;

	if (!m->by_path) {
		fd = peer_take_fd(s->peer);
		if (fd == -EMFILE)
			return session_error(s, id, EMFILE, "%s: hotmapd is out of descriptors: the one "
					     "passed with OPEN could not be received", name);
		if (fd == -ENODEV)
			return session_error(s, id, ENODEV, "%s: the descriptor is a socket, which "
					     "hotmapd does not read (refused as it arrived)", name);
		if (fd < 0)
			return session_error(s, id, EBADF, "%s: OPEN by descriptor came without one", name);
	} else {
		if (s->srv->cfg.roots.n == 0)
			return session_error(s, id, EACCES,
					     "%s: open by path is disabled (hotmapd has no --root)", name);
		fd = resolve_open(&s->srv->cfg.roots, name, s->srv->cfg.cross_mounts);
		if (fd < 0)
			return session_error(s, id, -fd, "%s: %s", name,
					     fd == -EACCES && !s->srv->cfg.cross_mounts ?
					     "not beneath a root of hotmapd, or across a mount point "
					     "beneath it (cross-mounts is no)" :
					     fd == -EACCES ? "not beneath a root of hotmapd" :
					     fd == -EINVAL ? "not an absolute path" : strerror(-fd));
	}

	slot = session_handle_alloc(s);
	if (slot < 0) {
		closer_close(fd);
		return session_error(s, id, (int)-slot, "%s: %s (a client may hold %d handles)",
				     name, strerror((int)-slot), SESSION_MAX_HANDLES);
	}
	sh = &s->handles[slot - 1];
	err[0] = '\0';
	rc = file_cache_open(s->srv->cache, fd, policy, &sh->h, err, sizeof err);
	if (rc < 0)
		return session_error(s, id, -rc, "%s: %s", name, err[0] != '\0' ? err : strerror(-rc));
	sh->ra_max = SESSION_RA_MAX;
	if (sh->h.reason == STORAGE_REASON_NETWORK_FS)
		sh->ra_max = s->srv->cfg.network_fs_chunk > UINT32_MAX / 2 ? UINT32_MAX / 2 :
			     (uint32_t)s->srv->cfg.network_fs_chunk;
	sh->used = true;
	s->free_hint = (size_t)slot;
	s->used++;
	s->srv->counters.handles++;

	(void)storage_stat(&sh->h, &st);	/* on failure, size 0: nothing to warm */
	session_reason_text(&sh->h, reason, sizeof reason);
	log_debug("client %s: open %s -> handle %lld, %s (%s)", peer_name(s->peer), name,
		  (long long)slot, storage_backend_name(sh->h.backend), reason);
	if (m->warm || (sh->h.fresh && s->srv->cfg.warm == HM_WARM_POPULATE)) {
		/* the whole file, behind the reply; a failure only costs the
		 * warmth */
		if (session_submit(s, &read_kind_warm_open, id, &sh->h, 0, (size_t)INT64_MAX, NULL) == 0)
			s->srv->counters.warms++;
	} else if (sh->h.fresh && s->srv->cfg.warm == HM_WARM_WILLNEED) {
		/* first cached: the kernel reads it ahead, nothing waits */
		if (storage_willneed(&sh->h, 0, st.size) == 0)
			s->srv->counters.warms++;
	}
	r.handle = (uint64_t)slot;
	r.size = st.size;
	r.backend = sh->h.backend;
	r.reason = sh->h.reason;
	r.reason_text = reason;
	return peer_send(s->peer, HM_MSG_OPEN_REPLY, id, &r.base);
}

/* Pauses the client's requests while a stream is active or too much of
 * its work is with the workers; resumes them once neither holds. */
static void
session_update_pause(struct session *s)
{
	bool full = s->inflight >= s->max_inflight || s->inflight_bytes >= s->max_inflight_bytes;
	bool want = s->stream.active || full;

	if (want == s->paused)
		return;
	if (want && full)
		s->srv->counters.inflight_waits++;
	s->paused = want;
	peer_set_paused(s->peer, want);
	if (!want)
		peer_kick(s->peer);
}

static void read_job_run(struct worker_job *job);
static void read_job_done(struct worker_job *job);

int
session_submit(struct session *s, const struct read_kind *kind, uint32_t id,
	       struct storage_handle *h, uint64_t offset, size_t len, uint8_t *dst)
{
	struct read_job *j = calloc(1, sizeof *j);

	if (j == NULL)
		return -ENOMEM;
	if (dst == NULL && !kind->warm) {
		j->heap = malloc(len > 0 ? len : 1);
		if (j->heap == NULL) {
			free(j);
			return -ENOMEM;
		}
		dst = j->heap;
	}
	j->job.run = read_job_run;
	j->job.done = read_job_done;
	j->job.owner = (unsigned long)peer_uid(s->peer);
	j->s = s;
	j->kind = kind;
	j->id = id;
	storage_handle_dup(h, &j->h);
	j->offset = offset;
	j->len = len;
	j->dst = dst;
	j->t0 = s->req_t0;
	if (kind->op >= 0)
		s->req_deferred = true;	/* timed when the worker is done */
	s->inflight++;
	/* a read holds its length (heap or region); a warm holds a step of
	 * a worker at a time */
	j->charge = !kind->warm ? len : len < SESSION_STEP ? len : SESSION_STEP;
	s->inflight_bytes += j->charge;
	s->srv->counters.inflight++;
	s->srv->counters.reads_offloaded++;
	workers_submit(s->srv->workers, &j->job);
	session_update_pause(s);
	return 0;
}

void
session_count_served(struct session *s, ssize_t n, bool shm)
{
	if (n <= 0)
		return;
	s->srv->counters.bytes_served += (uint64_t)n;
	if (shm)
		s->srv->counters.bytes_shm += (uint64_t)n;
}

/*
 * Whether a read into the client's region faulted writing it (its pages are
 * gone: guard.h).  The fault is the client's doing, and the region cannot
 * be trusted again: the client is dropped, the daemon goes on.
 */
bool
session_region_faulted(struct session *s, ssize_t n)
{
	if (n != GUARD_EFAULT_DST)
		return false;
	log_warn("client %s: a copy into its shared region faulted: disconnected",
		 peer_name(s->peer));
	peer_close_after_flush(s->peer, "a copy into its shared region faulted");
	return true;
}

/* The ERROR reply to a read that failed at offset with n (-errno). */
static int
session_read_error(struct session *s, uint32_t id, uint64_t offset, ssize_t n)
{
	return session_error(s, id, (int)-n, "read at offset %llu: %s",
			     (unsigned long long)offset, strerror((int)-n));
}

/* A read into the shared region is done, inline or by a worker: n bytes
 * are in the region (or -errno); one small reply. */
static int
session_region_done(struct session *s, uint32_t id, uint64_t offset, ssize_t n)
{
	Hotmap__ReadReply r = HOTMAP__READ_REPLY__INIT;

	if (session_region_faulted(s, n))
		return 0;
	if (n < 0)
		return session_read_error(s, id, offset, n);
	session_count_served(s, n, true);
	r.total = (uint64_t)n;
	return peer_send(s->peer, HM_MSG_READ_DATA, id, &r.base);
}

/* The last frame of a socket read: its total. */
static int
session_read_end(struct session *s, uint32_t id, uint64_t total)
{
	Hotmap__ReadReply r = HOTMAP__READ_REPLY__INIT;

	r.total = total;
	return peer_send(s->peer, HM_MSG_READ_DATA, id, &r.base);
}

/*
 * A one-frame socket read is done: n bytes, or -errno.  Inline, its data
 * frame is queued already (heap NULL); a worker's bytes are in *heap,
 * which is queued here, as is (the peer takes it).
 */
static int
session_socket_done(struct session *s, uint32_t id, uint64_t offset, ssize_t n, uint8_t **heap)
{
	int rc;

	if (n < 0)
		return session_read_error(s, id, offset, n);
	session_count_served(s, n, false);
	if (heap != NULL) {
		rc = peer_send_owned(s->peer, id, *heap, (size_t)n);
		*heap = NULL;
		if (rc < 0)
			return rc;
	}
	return session_read_end(s, id, (uint64_t)n);
}

struct session_fill {
	struct session *s;
	struct storage_handle *h;
	uint64_t offset;
};

/* Fills a reply frame in place, but only from the page cache. */
static ssize_t
session_fill(void *arg, void *dst, size_t len)
{
	struct session_fill *f = arg;

	return storage_read_nowait(f->s->srv->cache, f->h, dst, len, f->offset);
}

static int
session_stream_end(struct session *s)
{
	struct session_stream *st = &s->stream;
	int rc;

	st->active = false;
	stats_record_latency(s->srv, SERVER_OP_READ, st->t0);
	rc = session_read_end(s, st->id, st->total);
	session_update_pause(s);
	return rc;
}

/* Folds n more bytes of the stream in; true when the stream is over. */
static bool
session_stream_advance(struct session *s, ssize_t n, size_t chunk)
{
	struct session_stream *st = &s->stream;

	session_count_served(s, n, false);
	st->total += (uint64_t)n;
	st->offset += (uint64_t)n;
	st->remaining -= (uint64_t)n;
	return (size_t)n < chunk || st->remaining == 0;	/* end of file, or done */
}

/*
 * A chunk of the stream is done, inline or by a worker: n bytes queued
 * (or -errno) of the chunk asked for.  An error before the first byte is
 * an ERROR reply, an error after it ends the read short, as pread would;
 * so does a short chunk (end of file).  *more says the stream goes on.
 */
static int
session_stream_chunk_done(struct session *s, ssize_t n, size_t chunk, bool *more)
{
	struct session_stream *st = &s->stream;

	*more = false;
	if (n < 0 && st->total == 0) {
		st->active = false;
		session_update_pause(s);
		return session_read_error(s, st->id, st->offset, n);
	}
	if (n <= 0 || session_stream_advance(s, n, chunk))
		return session_stream_end(s);
	*more = true;
	return 0;
}

/*
 * Streams the active READ in chunks while the client takes them: once
 * PEER_OUTPUT_HIGH bytes wait, it stops and session_drain goes on.  A
 * chunk not in the page cache goes to a worker, and the stream waits for
 * it.  A read ends short at EOF; an error before the first byte is an
 * ERROR reply, an error after it ends the read short, as pread would.
 */
static int
session_stream(struct session *s)
{
	struct session_stream *st = &s->stream;

	while (st->remaining > 0) {
		struct storage_handle *h = &s->handles[st->slot].h;
		struct session_fill f;
		size_t chunk;
		bool more;
		ssize_t n;
		int rc;

		if (st->waiting || peer_output_pending(s->peer) >= PEER_OUTPUT_HIGH)
			return 0;
		chunk = st->remaining < SESSION_READ_CHUNK ? (size_t)st->remaining : SESSION_READ_CHUNK;
		f = (struct session_fill){ s, h, st->offset };
		n = peer_send_raw(s->peer, st->id, chunk, session_fill, &f);
		if (n == -EAGAIN) {
			if (session_submit(s, &read_kind_chunk, st->id, h, st->offset, chunk, NULL) == 0) {
				st->waiting = true;
				return 0;
			}
			n = -ENOMEM;
		}
		rc = session_stream_chunk_done(s, n, chunk, &more);
		if (!more)
			return rc;
	}
	return session_stream_end(s);
}

/* The worker read the stream's next chunk (at st->offset, which waited
 * for it) into j->heap. */
static int
read_chunk_done(struct session *s, struct read_job *j)
{
	bool more = false;
	int rc = 0;

	s->stream.waiting = false;
	if (j->result > 0) {
		rc = peer_send_owned(s->peer, j->id, j->heap, (size_t)j->result);
		j->heap = NULL;
	}
	if (rc == 0)
		rc = session_stream_chunk_done(s, j->result, j->len, &more);
	if (rc == 0 && more)
		rc = session_stream(s);
	return rc;
}

static int
read_region_done(struct session *s, struct read_job *j)
{
	return session_region_done(s, j->id, j->offset, j->result);
}

static int
read_socket_done(struct session *s, struct read_job *j)
{
	return session_socket_done(s, j->id, j->offset, j->result, &j->heap);
}

static int
read_warm_done(struct session *s, struct read_job *j)
{
	Hotmap__WarmReply r = HOTMAP__WARM_REPLY__INIT;

	if (j->result < 0)
		return session_error(s, j->id, (int)-j->result, "warm: %s", strerror((int)-j->result));
	r.warmed = (uint64_t)j->result;
	return peer_send(s->peer, HM_MSG_WARM_REPLY, j->id, &r.base);
}

/* An open's warm runs in the background: a failure only costs the
 * warmth, and nobody waits for a reply. */
static int
read_warm_open_done(struct session *s, struct read_job *j)
{
	(void)s;
	(void)j;
	return 0;
}

static void
read_job_run(struct worker_job *job)
{
	struct read_job *j = (struct read_job *)job;

	uint64_t left = j->len - j->done_bytes;
	size_t step = j->kind->stepped && left > SESSION_STEP ? SESSION_STEP : (size_t)left;

	j->io.nowait = false;
	if (j->kind->warm)
		j->result = storage_warm_detached(&j->h, j->offset + j->done_bytes, step, &j->io);
	else
		j->result = storage_read_detached(&j->h, j->dst + j->done_bytes, step,
						  j->offset + j->done_bytes, &j->io);
}

/*
 * After a step, on the loop thread: true when the job goes back to the
 * workers for its next step (the step read all it asked for, and more is
 * left); else j->result is the whole job's: the bytes of every step (short
 * at end of file; an error after some bytes ends the read short, as
 * pread's would), or the first step's error.
 */
static bool
read_job_next_step(struct read_job *j)
{
	uint64_t left = j->len - j->done_bytes;
	size_t step = left > SESSION_STEP ? SESSION_STEP : (size_t)left;

	if (!j->kind->stepped)
		return false;
	/* a client gone, or the daemon stopping: no more steps */
	if (!j->s->dead && !j->s->srv->stopping &&
	    j->result >= 0 && (size_t)j->result == step && left > step) {
		j->done_bytes += step;
		return true;
	}
	/* a fault writing the region is the client's, whatever came
	 * before it: it stays, and drops the client */
	if (j->result >= 0)
		j->result += (ssize_t)j->done_bytes;
	else if (j->done_bytes > 0 && j->result != GUARD_EFAULT_DST)
		j->result = (ssize_t)j->done_bytes;
	return false;
}

/* On the loop thread: the worker's read is done; its kind answers it. */
static void
read_job_done(struct worker_job *job)
{
	struct read_job *j = (struct read_job *)job;
	struct session *s = j->s;
	int rc;

	storage_read_finish(s->srv->cache, &j->h, &j->io);
	if (read_job_next_step(j)) {
		/* the next step, behind the other owners' jobs */
		j->io = (struct storage_io){ .nowait = false };
		workers_submit(s->srv->workers, &j->job);
		return;
	}
	file_cache_close(s->srv->cache, &j->h);
	s->inflight--;
	s->inflight_bytes -= j->charge;
	s->srv->counters.inflight--;
	if (j->kind->op >= 0)
		stats_record_latency(s->srv, (enum server_op)j->kind->op, j->t0);
	if (s->dead) {
		free(j->heap);
		free(j);
		if (s->inflight == 0)
			session_destroy(s);
		return;
	}
	rc = j->kind->done(s, j);
	free(j->heap);
	free(j);
	if (rc < 0)
		log_warn("client %s: cannot queue a reply: %s", peer_name(s->peer), strerror(-rc));
	session_update_pause(s);
	/* there may be output to write, or input to dispatch, now */
	peer_kick(s->peer);
}

void
session_readahead(struct session_handle *sh, uint64_t offset, uint64_t length)
{
	uint64_t end = offset + length;	/* checked against INT64_MAX */

	if (length == 0)
		return;
	if (offset != sh->next || sh->next == 0) {
		sh->ra_window = 0;
		sh->ra_end = end;
		sh->next = end;
		return;
	}
	sh->next = end;
	if (sh->ra_end < end)
		sh->ra_end = end;
	/* keep a window in flight ahead of the reader */
	if (sh->ra_end - end >= sh->ra_window / 2 && sh->ra_window != 0)
		return;
	sh->ra_window = sh->ra_window == 0 ? (SESSION_RA_MIN < sh->ra_max ? SESSION_RA_MIN : sh->ra_max) :
			sh->ra_window >= sh->ra_max / 2 ? sh->ra_max : sh->ra_window * 2;
	if (storage_willneed(&sh->h, sh->ra_end, sh->ra_window) == 0)
		sh->ra_end += sh->ra_window;
}

/* A READ into the shared region: one copy, one small reply. */
static int
session_read_shm(struct session *s, uint32_t id, const Hotmap__Read *m, struct session_handle *sh)
{
	uint8_t *dst;
	ssize_t n;

	if (s->shm == NULL)
		return session_error(s, id, EINVAL, "read: no shared region was registered");
	if (m->shm_offset > s->shm_size || m->length > s->shm_size - m->shm_offset)
		return session_error(s, id, EINVAL,
				     "read: %llu bytes at %llu do not fit the %zu-byte shared region",
				     (unsigned long long)m->length, (unsigned long long)m->shm_offset,
				     s->shm_size);
	dst = s->shm + m->shm_offset;
	n = m->length > SESSION_INLINE_MAX ? -EAGAIN :
	    storage_read_nowait(s->srv->cache, &sh->h, dst, (size_t)m->length, m->offset);
	if (n > 0)
		s->pass_inline += (uint64_t)n;
	if (n == -EAGAIN &&
	    session_submit(s, &read_kind_region, id, &sh->h, m->offset, (size_t)m->length, dst) == 0)
		return 0;
	return session_region_done(s, id, m->offset, n == -EAGAIN ? -ENOMEM : n);
}

static int
session_read(struct session *s, uint32_t id, ProtobufCMessage *msg)
{
	Hotmap__Read *m = (Hotmap__Read *)msg;
	struct session_handle *sh = session_handle_get(s, m->handle);
	struct session_fill f;
	ssize_t n;

	if (sh == NULL)
		return session_error(s, id, EBADF, "read: no handle %llu", (unsigned long long)m->handle);
	/* pread(2) refuses offsets whose end does not fit in off_t. */
	if (m->offset > INT64_MAX || m->length > (uint64_t)INT64_MAX - m->offset)
		return session_error(s, id, EINVAL, "read: offset %llu + length %llu overflows",
				     (unsigned long long)m->offset, (unsigned long long)m->length);
	session_readahead(sh, m->offset, m->length);
	if (m->to_shm)
		return session_read_shm(s, id, m, sh);
	if (m->length > SESSION_READ_CHUNK) {
		s->req_deferred = true;	/* timed at its end */
		s->stream = (struct session_stream){
			.active = true,
			.id = id,
			.t0 = s->req_t0,
			.slot = m->handle - 1,
			.offset = m->offset,
			.remaining = m->length,
		};
		session_update_pause(s);
		return session_stream(s);
	}
	/* One frame: in place when the page cache has it, else a worker.
	 * Even a read of nothing asks the file: pread(2) fails on a pipe. */
	f = (struct session_fill){ s, &sh->h, m->offset };
	n = m->length == 0 ? storage_read_nowait(s->srv->cache, &sh->h, NULL, 0, m->offset) :
			     peer_send_raw(s->peer, id, (size_t)m->length, session_fill, &f);
	if (n == -EAGAIN) {
		if (session_submit(s, &read_kind_socket, id, &sh->h, m->offset, (size_t)m->length, NULL) == 0)
			return 0;
		n = -ENOMEM;
	}
	return session_socket_done(s, id, m->offset, n, NULL);
}

static int
session_warm(struct session *s, uint32_t id, ProtobufCMessage *msg)
{
	Hotmap__Warm *m = (Hotmap__Warm *)msg;
	struct session_handle *sh = session_handle_get(s, m->handle);
	uint64_t len = m->length;

	if (sh == NULL)
		return session_error(s, id, EBADF, "warm: no handle %llu", (unsigned long long)m->handle);
	if (m->offset > INT64_MAX)
		return session_error(s, id, EINVAL, "warm: offset %llu is too large",
				     (unsigned long long)m->offset);
	if (len > (uint64_t)INT64_MAX - m->offset)
		len = (uint64_t)INT64_MAX - m->offset;	/* "to the end" */
	if (session_submit(s, &read_kind_warm, id, &sh->h, m->offset, (size_t)len, NULL) < 0)
		return session_error(s, id, ENOMEM, "warm: out of memory");
	s->srv->counters.warms++;
	return 0;
}

static int
session_stat(struct session *s, uint32_t id, ProtobufCMessage *msg)
{
	Hotmap__StatRequest *m = (Hotmap__StatRequest *)msg;
	struct session_handle *sh = session_handle_get(s, m->handle);
	Hotmap__StatReply r = HOTMAP__STAT_REPLY__INIT;
	struct storage_stat st;
	char reason[128];
	int rc;

	if (sh == NULL)
		return session_error(s, id, EBADF, "stat: no handle %llu", (unsigned long long)m->handle);
	rc = storage_stat(&sh->h, &st);
	if (rc < 0)
		return session_error(s, id, -rc, "stat: %s", strerror(-rc));
	session_reason_text(&sh->h, reason, sizeof reason);
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
	r.pid = (uint32_t)getpid();
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
	} else if (cmd->needs_admin && !policy_is_admin(s->srv, peer_uid(s->peer), s->gid,
							 s->groups, s->ngroups)) {
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
	if (!s->stream.active || s->stream.waiting)
		return 0;
	return session_stream(s);
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
 * The peer's uid, gid and groups (SO_PEERCRED, SO_PEERGROUPS), and
 * whether allow-uid and allow-gid, as configured now, let it in: decided
 * at connect, told at HELLO.  0, or -ENOMEM.
 */
static int
session_creds(struct session *s, int fd)
{
	gid_t small[64];
	size_t n = sizeof small / sizeof small[0];
	uid_t uid = (uid_t)-1;
	int rc;

	s->gid = (gid_t)-1;
	rc = policy_peer_creds(fd, &uid, &s->gid, small, &n);
	if (rc == -ERANGE) {
		s->groups = calloc(n, sizeof *s->groups);
		if (s->groups == NULL)
			return -ENOMEM;
		rc = policy_peer_creds(fd, &uid, &s->gid, s->groups, &n);
	} else if (rc == 0 && n > 0) {
		s->groups = calloc(n, sizeof *s->groups);
		if (s->groups == NULL)
			return -ENOMEM;
		memcpy(s->groups, small, n * sizeof *small);
	}
	if (rc < 0) {
		/* no credentials: only an open policy lets it in */
		log_warn("cannot read a client's credentials: %s", strerror(-rc));
		free(s->groups);
		s->groups = NULL;
		n = 0;
	}
	s->ngroups = n;
	s->admitted = rc == 0 ? policy_may_connect(s->srv, uid, s->gid, s->groups, n) :
				s->srv->cfg.allow_uid.n == 0 && s->srv->cfg.allow_gid.n == 0;
	return 0;
}

/*
 * Whether a connection from uid may be kept at accept.  max-connections-
 * per-uid is answered at HELLO (EUSERS and the reason), but a client that
 * never says HELLO must not hold more: past the limit and a few refusals
 * in flight, its connections are closed at once.  And the connections of
 * all users together leave the cache its descriptors (max-open-files,
 * within RLIMIT_NOFILE), so that another user's OPEN never finds the
 * daemon out of them.
 */
static bool
session_admit_at_accept(struct server *srv, uid_t uid, char *why, size_t whylen)
{
	unsigned n = policy_count_connections(srv, uid, 0);
	uint64_t cap = policy_connection_cap(srv);

	if (srv->cfg.max_per_uid > 0 && n >= srv->cfg.max_per_uid + SESSION_REFUSALS_IN_FLIGHT) {
		snprintf(why, whylen, "uid %ld has %u connections (max-connections-per-uid %u)",
			 (long)uid, n, srv->cfg.max_per_uid);
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
session_new(struct server *srv, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof cred;
	struct session *s;
	char why[160];

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
	    !session_admit_at_accept(srv, cred.uid, why, sizeof why)) {
		srv->counters.clients_refused++;
		policy_log_refusal(srv, cred.pid, cred.uid, why);
		peer_refuse(fd, EUSERS, why);
		return 0;
	}
	s = calloc(1, sizeof *s);
	if (s == NULL) {
		close(fd);
		return -ENOMEM;
	}
	s->srv = srv;
	s->max_inflight = srv->cfg.max_inflight;
	s->max_inflight_bytes = srv->cfg.max_inflight_bytes;
	if (session_creds(s, fd) < 0) {
		close(fd);
		free(s->groups);
		free(s);
		return -ENOMEM;
	}
	s->peer = peer_new(srv->base, fd, &session_peer_ops, s);
	if (s->peer == NULL) {
		close(fd);
		free(s->groups);
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
	policy_count_connections(srv, peer_uid(s->peer), 1);
	srv->counters.clients_total++;
	log_info("client %s: connected", peer_name(s->peer));
	return 0;
}

/* What outlives the connection while workers still read for it: the
 * session itself, and the region they may be writing into. */
static void
session_destroy(struct session *s)
{
	if (s->shm != NULL)
		munmap(s->shm, s->shm_size);
	free(s->groups);
	free(s);
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
	policy_count_connections(s->srv, peer_uid(s->peer), -1);
	peer_free(s->peer);
	s->peer = NULL;
	if (s->inflight > 0) {
		s->dead = true;	/* the last job's completion destroys it */
		return;
	}
	session_destroy(s);
}
