/* SPDX-License-Identifier: MIT */
/*
 * admin.c - the administrative calls (hm_ping, hm_stats, hm_stats_reset,
 * hm_files(_ways), hm_clients(_ways), hm_evict, hm_config, hm_stop): one request each
 * (the lists: one a page)
 * and its reply turned into the caller's structures or callbacks.
 *
 * Must not: touch the socket but through client_request; hold the lock
 * while a callback runs.
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client/client_priv.h"
#include "client/hotmap_admin.h"
#include "client/os.h"

HM_EXPORT int
hm_ping(hm_client *c, struct hm_ping *out)
{
	Hotmap__Ping req = HOTMAP__PING__INIT;
	ProtobufCMessage *reply;
	Hotmap__PingReply *r;
	int rc;

	set_last_error(NULL);
	if (c == NULL)
		return fail(EINVAL);
	rc = client_request(c, HM_MSG_PING, &req.base, HM_MSG_PING_REPLY, &reply);
	if (rc < 0)
		return fail(-rc);
	r = (Hotmap__PingReply *)reply;
	if (out != NULL) {
		snprintf(out->server_version, sizeof out->server_version, "%s", r->server_version);
		out->uptime_us = r->uptime_us;
		out->pid = r->pid;
	}
	protobuf_c_message_free_unpacked(reply, NULL);
	return 0;
}

/* HM_STAT_* are the wire's StatKind values, passed through unchanged. */
_Static_assert(HM_STAT_UNKNOWN == (int)HOTMAP__STAT_KIND__STAT_KIND_UNKNOWN, "HM_STAT_UNKNOWN");
_Static_assert(HM_STAT_COUNTER == (int)HOTMAP__STAT_KIND__STAT_COUNTER, "HM_STAT_COUNTER");
_Static_assert(HM_STAT_GAUGE == (int)HOTMAP__STAT_KIND__STAT_GAUGE, "HM_STAT_GAUGE");
_Static_assert(HM_STAT_TEXT == (int)HOTMAP__STAT_KIND__STAT_TEXT, "HM_STAT_TEXT");

/* One STATS request: cb (the plain form) or typed_cb once per stat. */
static int
client_stats(hm_client *c, bool reset,
	     void (*cb)(const char *key, uint64_t value, const char *text, void *arg),
	     void (*typed_cb)(const struct hm_stat_entry *stat, void *arg), void *arg)
{
	Hotmap__StatsRequest req = HOTMAP__STATS_REQUEST__INIT;
	ProtobufCMessage *reply;
	Hotmap__StatsReply *r;
	size_t i;
	int rc;

	set_last_error(NULL);
	if (c == NULL || (cb == NULL && typed_cb == NULL && !reset))
		return fail(EINVAL);
	req.reset = reset;
	rc = client_request(c, HM_MSG_STATS, &req.base, HM_MSG_STATS_REPLY, &reply);
	if (rc < 0)
		return fail(-rc);
	r = (Hotmap__StatsReply *)reply;
	for (i = 0; i < r->n_stats; i++) {
		const Hotmap__StatsReply__Stat *st = r->stats[i];
		struct hm_stat_entry e = {
			.key = st->key, .kind = (int)st->kind, .value = st->value, .text = st->text,
			.help = st->help,
		};

		if (cb != NULL)
			cb(st->key, st->value, st->text, arg);
		else if (typed_cb != NULL)
			typed_cb(&e, arg);
	}
	protobuf_c_message_free_unpacked(reply, NULL);
	return 0;
}

HM_EXPORT int
hm_stats(hm_client *c, void (*cb)(const char *key, uint64_t value, const char *text, void *arg),
	 void *arg)
{
	return client_stats(c, false, cb, NULL, arg);
}

HM_EXPORT int
hm_stats_reset(hm_client *c,
	       void (*cb)(const char *key, uint64_t value, const char *text, void *arg), void *arg)
{
	return client_stats(c, true, cb, NULL, arg);
}

HM_EXPORT int
hm_stats_typed(hm_client *c, int reset, void (*cb)(const struct hm_stat_entry *stat, void *arg),
	       void *arg)
{
	if (cb == NULL)
		return fail(EINVAL);
	return client_stats(c, reset != 0, NULL, cb, arg);
}

/* hm_files and hm_files_ways: one callback or the other. */
static int
client_files(hm_client *c, void (*cb)(const struct hm_file_info *info, void *arg),
	     void (*ways_cb)(const struct hm_file_info *info, const struct hm_read_ways *ways,
			     void *arg),
	     void *arg)
{
	uint32_t offset = 0;

	set_last_error(NULL);
	if (c == NULL || (cb == NULL && ways_cb == NULL))
		return fail(EINVAL);
	for (;;) {
		Hotmap__Files req = HOTMAP__FILES__INIT;
		ProtobufCMessage *reply;
		Hotmap__FilesReply *r;
		bool more;
		size_t i;
		int rc;

		req.offset = offset;
		rc = client_request(c, HM_MSG_FILES, &req.base, HM_MSG_FILES_REPLY, &reply);
		if (rc < 0)
			return fail(-rc);
		r = (Hotmap__FilesReply *)reply;
		for (i = 0; i < r->n_files; i++) {
			const Hotmap__FilesReply__File *f = r->files[i];
			struct hm_file_info info = {
				.path = f->path,
				.size = f->size,
				.backend = (int)f->backend,
				.reason = (int)f->reason,
				.handles = f->handles,
				.stale = f->stale,
				.hits = f->hits,
				.bytes = f->bytes,
				.idle_ms = f->idle_ms,
				.resident_pct = f->resident_pct,
				.resident_bytes = f->resident_bytes,
				.direct_handles = f->direct_handles,
				.direct_reads = f->direct_reads,
				.direct_bytes = f->direct_bytes,
				.dev = f->dev,
				.ino = f->ino,
			};
			struct hm_read_ways ways = {
				.size = sizeof ways,
				.daemon_reads = f->daemon_reads,
				.copy_reads = f->direct_copy_reads,
				.pread_reads = f->direct_pread_reads,
				.probes = f->direct_probes,
				.populated_blocks = f->direct_populated_blocks,
				.populate_ns = f->direct_populate_ns,
				.private_entry = f->private_entry,
				.network = f->network,
				.copy_bytes = f->copy_size,
				.copy_age_ms = f->copy_age_ms,
			};

			snprintf(ways.fs, sizeof ways.fs, "%s", f->fs != NULL ? f->fs : "");
			if (cb != NULL)
				cb(&info, arg);
			else
				ways_cb(&info, &ways, arg);
		}
		/* pages follow the daemon's list as it is at each request */
		more = r->n_files > 0 && r->next < r->total;
		offset = r->next;
		protobuf_c_message_free_unpacked(reply, NULL);
		if (!more)
			return 0;
	}
}

HM_EXPORT int
hm_files(hm_client *c, void (*cb)(const struct hm_file_info *info, void *arg), void *arg)
{
	return client_files(c, cb, NULL, arg);
}

HM_EXPORT int
hm_files_ways(hm_client *c,
	      void (*cb)(const struct hm_file_info *info, const struct hm_read_ways *ways,
			 void *arg),
	      void *arg)
{
	return client_files(c, NULL, cb, arg);
}

/* hm_clients and hm_clients_ways: one callback or the other. */
static int
client_clients(hm_client *c, void (*cb)(const struct hm_client_info *info, void *arg),
	       void (*ways_cb)(const struct hm_client_info *info, const struct hm_read_ways *ways,
			       void *arg),
	       void *arg)
{
	uint32_t offset = 0;

	set_last_error(NULL);
	if (c == NULL || (cb == NULL && ways_cb == NULL))
		return fail(EINVAL);
	for (;;) {
		Hotmap__Clients req = HOTMAP__CLIENTS__INIT;
		ProtobufCMessage *reply;
		Hotmap__ClientsReply *r;
		bool more;
		size_t i;
		int rc;

		req.offset = offset;
		rc = client_request(c, HM_MSG_CLIENTS, &req.base, HM_MSG_CLIENTS_REPLY, &reply);
		if (rc < 0)
			return fail(-rc);
		r = (Hotmap__ClientsReply *)reply;
		for (i = 0; i < r->n_clients; i++) {
			const Hotmap__ClientsReply__Client *x = r->clients[i];
			struct hm_client_info info = {
				.pid = x->pid,
				.uid = x->uid,
				.name = x->name,
				.handles = x->handles,
				.direct_grants = x->direct_grants,
				.direct_reads = x->direct_reads,
				.direct_bytes = x->direct_bytes,
				.bytes_served = x->bytes_served,
				.polling = x->polling,
				.region_huge = x->region_huge,
				.connected_ms = x->connected_ms,
			};
			struct hm_read_ways ways = {
				.size = sizeof ways,
				.daemon_reads = x->daemon_reads,
				.copy_reads = x->direct_copy_reads,
				.pread_reads = x->direct_pread_reads,
				.probes = x->direct_probes,
				.populated_blocks = x->direct_populated_blocks,
				.populate_ns = x->direct_populate_ns,
			};

			if (cb != NULL)
				cb(&info, arg);
			else
				ways_cb(&info, &ways, arg);
		}
		/* pages follow the daemon's list as it is at each request */
		more = r->n_clients > 0 && r->next < r->total;
		offset = r->next;
		protobuf_c_message_free_unpacked(reply, NULL);
		if (!more)
			return 0;
	}
}

HM_EXPORT int
hm_clients(hm_client *c, void (*cb)(const struct hm_client_info *info, void *arg), void *arg)
{
	return client_clients(c, cb, NULL, arg);
}

HM_EXPORT int
hm_clients_ways(hm_client *c,
		void (*cb)(const struct hm_client_info *info, const struct hm_read_ways *ways,
			   void *arg),
		void *arg)
{
	return client_clients(c, NULL, cb, arg);
}

HM_EXPORT int
hm_config(hm_client *c, void (*cb)(const char *key, const char *value, const char *source, void *arg),
	  void *arg, char *path, size_t pathlen)
{
	Hotmap__ConfigRequest req = HOTMAP__CONFIG_REQUEST__INIT;
	ProtobufCMessage *reply;
	Hotmap__ConfigReply *r;
	size_t i;
	int rc;

	set_last_error(NULL);
	if (c == NULL || cb == NULL || (path == NULL && pathlen > 0))
		return fail(EINVAL);
	rc = client_request(c, HM_MSG_CONFIG, &req.base, HM_MSG_CONFIG_REPLY, &reply);
	if (rc < 0)
		return fail(-rc);
	r = (Hotmap__ConfigReply *)reply;
	if (pathlen > 0)
		snprintf(path, pathlen, "%s", r->path != NULL ? r->path : "");
	for (i = 0; i < r->n_items; i++)
		cb(r->items[i]->key, r->items[i]->value, r->items[i]->source, arg);
	protobuf_c_message_free_unpacked(reply, NULL);
	return 0;
}

HM_EXPORT int
hm_evict(hm_client *c, const char *path, struct hm_evicted *out)
{
	Hotmap__Evict req = HOTMAP__EVICT__INIT;
	ProtobufCMessage *reply;
	Hotmap__EvictReply *r;
	char *abs = NULL;
	struct stat st;
	int rc;

	set_last_error(NULL);
	if (c == NULL)
		return fail(EINVAL);
	if (path == NULL) {
		req.all = true;
	} else if (stat(path, &st) == 0) {
		/* the daemon knows files by identity, not by name */
		req.dev = (uint64_t)st.st_dev;
		req.ino = (uint64_t)st.st_ino;
	} else if (errno == ENOENT) {
		/* deleted or replaced: the daemon matches the name its
		 * descriptor had */
		abs = absolute_path(path);
		if (abs == NULL)
			return -1;
		req.path = abs;
	} else {
		return -1;
	}
	rc = client_request(c, HM_MSG_EVICT, &req.base, HM_MSG_EVICT_REPLY, &reply);
	free(abs);
	if (rc < 0)
		return fail(-rc);
	r = (Hotmap__EvictReply *)reply;
	if (out != NULL) {
		out->files = r->files;
		out->mapped_bytes = r->mapped_bytes;
		out->busy = r->busy;
	}
	protobuf_c_message_free_unpacked(reply, NULL);
	return 0;
}

HM_EXPORT int
hm_stop(hm_client *c, struct hm_stopped *out)
{
	Hotmap__Stop req = HOTMAP__STOP__INIT;
	ProtobufCMessage *reply;
	Hotmap__StopReply *r;
	int rc;

	set_last_error(NULL);
	if (c == NULL)
		return fail(EINVAL);
	rc = client_request(c, HM_MSG_STOP, &req.base, HM_MSG_STOP_REPLY, &reply);
	if (rc < 0)
		return fail(-rc);
	r = (Hotmap__StopReply *)reply;
	if (out != NULL) {
		out->pid = r->pid;
		out->socket_kept = r->socket_kept;
	}
	protobuf_c_message_free_unpacked(reply, NULL);
	return 0;
}

HM_EXPORT int
hm_reload(hm_client *c, void (*cb)(enum hm_reload_line kind, const char *line, void *arg),
	  void *arg, char *path, size_t pathlen)
{
	Hotmap__Reload req = HOTMAP__RELOAD__INIT;
	ProtobufCMessage *reply;
	Hotmap__ReloadReply *r;
	size_t i;
	int rc, ok;

	set_last_error(NULL);
	if (c == NULL || (path == NULL && pathlen > 0))
		return fail(EINVAL);
	rc = client_request(c, HM_MSG_RELOAD, &req.base, HM_MSG_RELOAD_REPLY, &reply);
	if (rc < 0)
		return fail(-rc);
	r = (Hotmap__ReloadReply *)reply;
	for (i = 0; cb != NULL && i < r->n_errors; i++)
		cb(HM_RELOAD_ERROR, r->errors[i], arg);
	for (i = 0; cb != NULL && i < r->n_changed; i++)
		cb(HM_RELOAD_CHANGED, r->changed[i], arg);
	for (i = 0; cb != NULL && i < r->n_kept; i++)
		cb(HM_RELOAD_KEPT, r->kept[i], arg);
	if (path != NULL && pathlen > 0)
		snprintf(path, pathlen, "%s", r->path != NULL ? r->path : "");
	ok = r->ok;
	protobuf_c_message_free_unpacked(reply, NULL);
	if (!ok) {
		set_last_error("the configuration has errors: the one in use is kept");
		errno = EINVAL;
		return -1;
	}
	return 0;
}
