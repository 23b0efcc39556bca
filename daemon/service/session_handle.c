/* SPDX-License-Identifier: MIT */
/*
 * session_handle.c - a client's handle table, and the few services every
 * part of a session uses: its ERROR reply, the count of bytes it was
 * served, the fault of a copy into its region, readahead for a handle
 * read in order, and the last free of a session (see session_state.h).
 *
 * What it must not do: answer a request or hand work to the workers.
 * It is the bottom of the session's rooms: session.c, session_read.c,
 * session_job.c, session_ring.c and admin.c call into it, and it calls
 * none of them.
 */
#include "config.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include "daemon/storage/guard.h"
#include "daemon/base/log.h"
#include "proto/monotime.h"
#include "daemon/transport/peer.h"
#include "daemon/service/server.h"
#include "daemon/service/session.h"
#include "daemon/service/session_direct.h"
#include "daemon/service/session_state.h"
#include "daemon/service/session_region.h"
#include "daemon/storage/storage.h"

struct session_handle *
session_handle_get(struct session *s, uint64_t handle)
{
	if (handle == 0 || handle > s->nhandles || !s->handles[handle - 1].used)
		return NULL;
	return &s->handles[handle - 1];
}

/* A free slot's number (1-based), or -EMFILE / -ENOMEM. */
int64_t
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

void
session_handle_release(struct session *s, uint64_t handle)
{
	struct session_handle *sh = &s->handles[handle - 1];

	session_direct_release(s, sh);
	file_cache_close(s->srv->cache, &sh->h);
	memset(sh, 0, sizeof *sh);
	s->used--;
	s->srv->counters.handles--;
	if (handle - 1 < s->free_hint)
		s->free_hint = handle - 1;
}

void
session_handle_commit(struct session *s, int64_t slot)
{
	struct session_handle *sh = &s->handles[slot - 1];

	sh->ra_max = SESSION_RA_MAX;
	if (sh->h.reason == STORAGE_REASON_NETWORK_FS)
		sh->ra_max = s->srv->cfg.network_fs_chunk > UINT32_MAX / 2 ? UINT32_MAX / 2 :
			     (uint32_t)s->srv->cfg.network_fs_chunk;
	sh->used = true;
	s->free_hint = (size_t)slot;
	s->used++;
	s->srv->counters.handles++;
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

void
session_count_served(struct session *s, ssize_t n, bool shm)
{
	if (n <= 0)
		return;
	s->bytes_served += (uint64_t)n;
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

void
session_count_read(struct session *s, struct session_handle *sh)
{
	if (s->ways.daemon != UINT64_MAX)
		s->ways.daemon++;
	storage_count_read(&sh->h);
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

/* What outlives the connection while workers still read for it: the
 * session itself, and the region they may be writing into. */
void
session_destroy(struct session *s)
{
	session_region_unmap(s);
	session_direct_free(s);
	free(s);
}

size_t
session_clients(struct server *srv, size_t skip,
		bool (*cb)(const struct session_client_info *info, void *arg), void *arg)
{
	uint64_t now = monotime_ns();
	struct session *s;
	size_t n = 0;

	direct_sync(&srv->direct);	/* the clients' own counts, up to now */
	for (s = srv->sessions; s != NULL; s = s->next, n++) {
		struct session_client_info info = { 0 };

		if (n < skip || cb == NULL)
			continue;
		info.pid = peer_pid(s->peer);
		info.uid = peer_uid(s->peer);
		info.name = s->client_name;
		info.handles = (unsigned)s->used;
		info.direct_grants = session_direct_grants(s);
		info.direct_reads = s->direct_reads;
		info.direct_bytes = s->direct_bytes;
		info.bytes_served = s->bytes_served;
		info.ways = s->ways;
		info.polling = s->ring;
		info.region_huge = s->region_huge;
		info.connected_ms = now > s->connected_ns ? (now - s->connected_ns) / 1000000u : 0;
		if (!cb(&info, arg))
			cb = NULL;	/* the page is full: only count the rest */
	}
	return n;
}
