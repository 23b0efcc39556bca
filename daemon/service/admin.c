/* SPDX-License-Identifier: MIT */
/*
 * admin.c - the administrative requests (see admin.h).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/service/admin.h"
#include "daemon/base/closer.h"
#include "daemon/config/conf.h"
#include "daemon/base/log.h"
#include "daemon/transport/peer.h"
#include "daemon/service/server.h"
#include "daemon/service/session_state.h"
#include "daemon/storage/storage.h"

/* Clients in one CLIENTS reply, at most: fewer when their packing would
 * near the frame cap (clients_add). */
#define ADMIN_CLIENTS_PAGE	1000

/* How long STATS waits for queued closes (closer.h) before it counts. */
#define ADMIN_STATS_DRAIN_MS	100

/* A page of the cached files: entries from offset on while the reply
 * stays well under the frame cap. */
struct files_page {
	uint32_t offset;
	size_t bytes;
	Hotmap__FilesReply__File *v;
	Hotmap__FilesReply__File **ptrs;
	char **paths;
	char (*fs)[32];		/* each entry's file system's name */
	size_t n, cap;
	bool failed;
};

/* One more entry for the page; false once it is full (or failed). */
static bool
files_add(const struct storage_entry_info *info, void *arg)
{
	struct files_page *p = arg;
	Hotmap__FilesReply__File *f;
	size_t cost = strlen(info->path) + 120;	/* an upper bound of its packing */

	if (p->bytes + cost > HM_FRAME_MAX_MESSAGE - 1024)
		return false;
	if (p->n == p->cap) {
		size_t cap = p->cap == 0 ? 64 : p->cap * 2;
		Hotmap__FilesReply__File *v = realloc(p->v, cap * sizeof *v);
		char **paths;
		char (*fs)[32];

		if (v != NULL)
			p->v = v;
		paths = v != NULL ? realloc(p->paths, cap * sizeof *paths) : NULL;
		if (paths != NULL)
			p->paths = paths;
		fs = paths != NULL ? realloc(p->fs, cap * sizeof *fs) : NULL;
		if (v == NULL || paths == NULL || fs == NULL) {
			p->failed = true;
			return false;
		}
		p->fs = fs;
		p->cap = cap;
	}
	p->paths[p->n] = strdup(info->path);
	if (p->paths[p->n] == NULL) {
		p->failed = true;
		return false;
	}
	f = &p->v[p->n];
	hotmap__files_reply__file__init(f);
	f->path = p->paths[p->n];
	snprintf(p->fs[p->n], sizeof p->fs[p->n], "%s", info->fs);
	f->size = info->size;
	f->backend = info->mapped_length > 0 ? STORAGE_BACKEND_MMAP : STORAGE_BACKEND_PREAD;
	f->reason = info->last_reason;
	f->handles = info->handles;
	f->stale = !info->cached && !info->private_entry;
	f->private_entry = info->private_entry;
	f->network = info->network;
	f->copy_size = info->copy_size;
	f->copy_age_ms = info->copy_age_ms;
	f->hits = info->hits;
	f->bytes = info->bytes;
	f->idle_ms = info->idle_ms;
	f->resident_pct = info->resident_pct;
	f->resident_bytes = info->resident_bytes;
	f->direct_reads = info->direct_reads;
	f->direct_bytes = info->direct_bytes;
	f->direct_handles = info->direct_handles;
	f->daemon_reads = info->ways.daemon;
	f->direct_copy_reads = info->ways.copies;
	f->direct_pread_reads = info->ways.preads;
	f->direct_probes = info->ways.probes;
	f->direct_populated_blocks = info->ways.populated;
	f->direct_populate_ns = info->ways.populate_ns;
	f->dev = info->dev;
	f->ino = info->ino;
	p->n++;
	p->bytes += cost;
	return true;
}

int
admin_files(struct session *s, uint32_t id, ProtobufCMessage *msg)
{
	Hotmap__Files *m = (Hotmap__Files *)msg;
	Hotmap__FilesReply r = HOTMAP__FILES_REPLY__INIT;
	struct files_page p = { .offset = m->offset };
	size_t i, total;
	int rc;

	direct_sync(&session_server(s)->direct);
	total = file_cache_foreach(session_server(s)->cache, m->offset, files_add, &p);
	if (!p.failed)
		p.ptrs = calloc(p.n + 1, sizeof *p.ptrs);
	if (p.failed || p.ptrs == NULL) {
		rc = session_error(s, id, ENOMEM, "files: out of memory");
	} else {
		for (i = 0; i < p.n; i++) {
			p.ptrs[i] = &p.v[i];
			p.v[i].fs = p.fs[i];	/* fs moved as it grew */
		}
		r.files = p.ptrs;
		r.n_files = p.n;
		r.total = (uint32_t)total;
		r.next = p.offset + (uint32_t)p.n;
		rc = peer_send(session_peer(s), HM_MSG_FILES_REPLY, id, &r.base);
	}
	for (i = 0; i < p.n; i++)
		free(p.paths[i]);
	free(p.paths);
	free(p.fs);
	free(p.ptrs);
	free(p.v);
	return rc;
}

int
admin_evict(struct session *s, uint32_t id, ProtobufCMessage *msg)
{
	Hotmap__Evict *m = (Hotmap__Evict *)msg;
	Hotmap__EvictReply r = HOTMAP__EVICT_REPLY__INIT;
	struct storage_evicted ev;
	int rc;

	/* direct readers go back to reading through the daemon first:
	 * evicting a file takes it from them too */
	if (m->all || m->dev != 0 || m->ino != 0)
		(void)direct_revoke_file(&session_server(s)->direct, m->all, m->dev, m->ino);
	if (!m->all && m->dev == 0 && m->ino == 0 && m->path != NULL && m->path[0] != '\0')
		rc = file_cache_evict_path(session_server(s)->cache, m->path, &ev);
	else
		rc = file_cache_evict(session_server(s)->cache, m->all, m->dev, m->ino, &ev);
	if (rc < 0)
		return session_error(s, id, -rc, "evict: %s", rc == -ENOENT ?
				     "the file is not cached" : strerror(-rc));
	log_info("client %s: evicted %u files (%llu bytes unmapped), %u busy", peer_name(session_peer(s)),
		 ev.files, (unsigned long long)ev.mapped_bytes, ev.busy);
	r.files = ev.files;
	r.mapped_bytes = ev.mapped_bytes;
	r.busy = ev.busy;
	return peer_send(session_peer(s), HM_MSG_EVICT_REPLY, id, &r.base);
}

struct stats_builder {
	Hotmap__StatsReply__Stat *v;
	Hotmap__StatsReply__Stat **ptrs;
	size_t n, cap;
	bool failed;
};

static void
stats_add(const char *key, Hotmap__StatKind kind, uint64_t value, const char *text,
	  const char *help, void *arg)
{
	struct stats_builder *b = arg;
	Hotmap__StatsReply__Stat *e;

	if (b->failed)
		return;
	if (b->n == b->cap) {
		size_t cap = b->cap == 0 ? 64 : b->cap * 2;
		Hotmap__StatsReply__Stat *v = realloc(b->v, cap * sizeof *v);

		if (v == NULL) {
			b->failed = true;
			return;
		}
		b->v = v;
		b->cap = cap;
	}
	e = &b->v[b->n++];
	hotmap__stats_reply__stat__init(e);
	e->key = (char *)key;
	e->kind = kind;
	e->value = value;
	e->text = (char *)(text != NULL ? text : "");
	e->help = (char *)(help != NULL ? help : "");
}

int
admin_stats(struct session *s, uint32_t id, ProtobufCMessage *msg)
{
	Hotmap__StatsReply r = HOTMAP__STATS_REPLY__INIT;
	struct stats_builder b = { 0 };
	size_t i;
	int rc;

	/*
	 * Closes handed to the closer thread land a moment later: an
	 * administrator who counts the daemon's descriptors after STATS
	 * (tests, the soak) must find them closed.  Bounded, and STATS needs
	 * an administrator, so no client can make the loop wait here.
	 */
	(void)closer_drain(ADMIN_STATS_DRAIN_MS);
	stats_foreach(session_server(s), stats_add, &b);
	if (b.failed) {
		free(b.v);
		return session_error(s, id, ENOMEM, "stats: out of memory");
	}
	b.ptrs = calloc(b.n + 1, sizeof *b.ptrs);
	if (b.ptrs == NULL) {
		free(b.v);
		return session_error(s, id, ENOMEM, "stats: out of memory");
	}
	for (i = 0; i < b.n; i++)
		b.ptrs[i] = &b.v[i];
	r.n_stats = b.n;
	r.stats = b.ptrs;
	rc = peer_send(session_peer(s), HM_MSG_STATS_REPLY, id, &r.base);
	/* the reply carries the values as they were; counting starts over */
	if (((Hotmap__StatsRequest *)msg)->reset) {
		stats_reset(session_server(s));
		log_notice("client %s: counters reset", peer_name(session_peer(s)));
	}
	free(b.ptrs);
	free(b.v);
	return rc;
}

struct config_builder {
	Hotmap__ConfigReply__Item *v;
	size_t n, cap;
	bool failed;
	const struct server *srv;	/* for the values "auto" became */
};

/* "auto" is what was asked; an operator wants what it became: the value
 * in effect, with "auto" kept in the source.  NULL: value as it is. */
static const char *
config_resolved(const struct config_builder *b, const char *key, const char *value,
		char *buf, size_t len)
{
	if (strcmp(value, "auto") != 0)
		return NULL;
	if (strcmp(key, "workers") == 0)
		snprintf(buf, len, "%u", b->srv->nworkers);
	else if (strcmp(key, "poll-us") == 0)
		snprintf(buf, len, "%u", b->srv->poll_us);
	else
		return NULL;
	return buf;
}

static void
config_add(const char *key, const char *value, const char *source, void *arg)
{
	struct config_builder *b = arg;
	Hotmap__ConfigReply__Item *e;
	char resolved[32], auto_source[PATH_MAX + 48];

	if (config_resolved(b, key, value, resolved, sizeof resolved) != NULL) {
		value = resolved;
		snprintf(auto_source, sizeof auto_source, "%s: auto", source);
		source = auto_source;
	}
	if (b->failed)
		return;
	if (b->n == b->cap) {
		size_t cap = b->cap == 0 ? 32 : b->cap * 2;
		Hotmap__ConfigReply__Item *v = realloc(b->v, cap * sizeof *v);

		if (v == NULL) {
			b->failed = true;
			return;
		}
		b->v = v;
		b->cap = cap;
	}
	e = &b->v[b->n];
	hotmap__config_reply__item__init(e);
	/* the strings live only during the call */
	e->key = strdup(key);
	e->value = strdup(value);
	e->source = strdup(source);
	b->n++;
	if (e->key == NULL || e->value == NULL || e->source == NULL)
		b->failed = true;
}

/* CONFIG: every key in force, with its value and where it came from. */
int
admin_config(struct session *s, uint32_t id, ProtobufCMessage *msg)
{
	Hotmap__ConfigReply r = HOTMAP__CONFIG_REPLY__INIT;
	struct config_builder b = { .srv = session_server(s) };
	Hotmap__ConfigReply__Item **ptrs = NULL;
	size_t i;
	int rc;

	(void)msg;
	conf_foreach(&session_server(s)->cfg, config_add, &b);
	if (!b.failed)
		ptrs = calloc(b.n + 1, sizeof *ptrs);
	if (b.failed || ptrs == NULL) {
		rc = session_error(s, id, ENOMEM, "config: out of memory");
	} else {
		for (i = 0; i < b.n; i++)
			ptrs[i] = &b.v[i];
		r.n_items = b.n;
		r.items = ptrs;
		r.path = (char *)(session_server(s)->cfg.path != NULL ? session_server(s)->cfg.path : "");
		rc = peer_send(session_peer(s), HM_MSG_CONFIG_REPLY, id, &r.base);
	}
	for (i = 0; i < b.n; i++) {
		free(b.v[i].key);
		free(b.v[i].value);
		free(b.v[i].source);
	}
	free(ptrs);
	free(b.v);
	return rc;
}

/* A page of the connected clients, as files_page is of the files. */
struct clients_page {
	Hotmap__ClientsReply__Client *v;
	char (*names)[64];
	size_t n, cap;
	size_t bytes;		/* an upper bound of the page's packing */
	bool failed;
};

static bool
clients_add(const struct session_client_info *info, void *arg)
{
	struct clients_page *p = arg;
	Hotmap__ClientsReply__Client *c;

	/* eleven fields of at most 11 bytes each, the name and its framing:
	 * the page stays under the frame cap, as files_add's does */
	size_t cost = strnlen(info->name, 63) + 140;

	if (p->n == p->cap || p->bytes + cost > HM_FRAME_MAX_MESSAGE - 1024)
		return false;
	p->bytes += cost;
	c = &p->v[p->n];
	hotmap__clients_reply__client__init(c);
	snprintf(p->names[p->n], sizeof p->names[p->n], "%s", info->name);
	c->pid = (uint32_t)info->pid;
	c->uid = (uint32_t)info->uid;
	c->name = p->names[p->n];
	c->handles = info->handles;
	c->direct_grants = info->direct_grants;
	c->direct_reads = info->direct_reads;
	c->direct_bytes = info->direct_bytes;
	c->bytes_served = info->bytes_served;
	c->daemon_reads = info->ways.daemon;
	c->direct_copy_reads = info->ways.copies;
	c->direct_pread_reads = info->ways.preads;
	c->direct_probes = info->ways.probes;
	c->direct_populated_blocks = info->ways.populated;
	c->direct_populate_ns = info->ways.populate_ns;
	c->polling = info->polling;
	c->region_huge = info->region_huge;
	c->connected_ms = info->connected_ms;
	p->n++;
	return true;
}

int
admin_clients(struct session *s, uint32_t id, ProtobufCMessage *msg)
{
	Hotmap__Clients *m = (Hotmap__Clients *)msg;
	Hotmap__ClientsReply r = HOTMAP__CLIENTS_REPLY__INIT;
	struct clients_page p = { .cap = ADMIN_CLIENTS_PAGE };
	Hotmap__ClientsReply__Client **ptrs;
	size_t i, total;
	int rc;

	p.v = calloc(p.cap, sizeof *p.v);
	p.names = calloc(p.cap, sizeof *p.names);
	ptrs = calloc(p.cap, sizeof *ptrs);
	if (p.v == NULL || p.names == NULL || ptrs == NULL) {
		rc = session_error(s, id, ENOMEM, "clients: out of memory");
	} else {
		total = session_clients(session_server(s), m->offset, clients_add, &p);
		for (i = 0; i < p.n; i++)
			ptrs[i] = &p.v[i];
		r.clients = ptrs;
		r.n_clients = p.n;
		r.total = (uint32_t)total;
		r.next = m->offset + (uint32_t)p.n;
		rc = peer_send(session_peer(s), HM_MSG_CLIENTS_REPLY, id, &r.base);
	}
	free(ptrs);
	free(p.names);
	free(p.v);
	return rc;
}

int
admin_stop(struct session *s, uint32_t id, ProtobufCMessage *msg)
{
	Hotmap__StopReply r = HOTMAP__STOP_REPLY__INIT;
	char why[128];
	int rc;

	(void)msg;
	r.pid = (uint32_t)getpid();
	r.socket_kept = session_server(s)->socket_activated;
	rc = peer_send(session_peer(s), HM_MSG_STOP_REPLY, id, &r.base);
	if (rc < 0)
		return rc;
	/* The reply is written when this request's dispatch ends (peer.c
	 * writes replies at once), before the loop stops; the sessions close
	 * after it, in server_fini. */
	snprintf(why, sizeof why, "STOP from %s", peer_name(session_peer(s)));
	server_stop(session_server(s), why);
	return 0;
}

int
admin_reload(struct session *s, uint32_t id, ProtobufCMessage *msg)
{
	Hotmap__ReloadReply r = HOTMAP__RELOAD_REPLY__INIT;
	struct server *srv = session_server(s);
	struct reload_report rep = { 0 };
	int rc;

	(void)msg;
	log_notice("RELOAD from %s", peer_name(session_peer(s)));
	r.ok = server_reload(srv, &rep) == 0;
	if (rep.nomem) {
		reload_report_clear(&rep);
		return session_error(s, id, ENOMEM, "reload %s, but its report is out of memory",
				     r.ok ? "done" : "failed");
	}
	r.errors = rep.errors;
	r.n_errors = rep.nerrors;
	r.changed = rep.changed;
	r.n_changed = rep.nchanged;
	r.kept = rep.kept;
	r.n_kept = rep.nkept;
	r.path = (char *)(srv->cfg.path != NULL ? srv->cfg.path : "");
	rc = peer_send(session_peer(s), HM_MSG_RELOAD_REPLY, id, &r.base);
	reload_report_clear(&rep);
	return rc;
}
