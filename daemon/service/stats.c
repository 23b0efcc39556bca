/* SPDX-License-Identifier: MIT */
/*
 * stats.c - hotmapd's counters, latency histograms and the one list of
 * stats keys (see stats.h).
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <protobuf-c/protobuf-c.h>

#include "proto/monotime.h"
#include "daemon/service/server.h"
#include "daemon/service/stats.h"
#include "proto/hotmap.pb-c.h"
#include "proto/vocab.h"

static const char *const request_keys[HM_MSG__MAX + 1] = {
	[HM_MSG_HELLO] = "requests_hello",
	[HM_MSG_OPEN] = "requests_open",
	[HM_MSG_READ] = "requests_read",
	[HM_MSG_STAT] = "requests_stat",
	[HM_MSG_CLOSE] = "requests_close",
	[HM_MSG_PING] = "requests_ping",
	[HM_MSG_STATS] = "requests_stats",
	[HM_MSG_WARM] = "requests_warm",
	[HM_MSG_FILES] = "requests_files",
	[HM_MSG_EVICT] = "requests_evict",
	[HM_MSG_RING_KICK] = "requests_ring_kick",
	[HM_MSG_CONFIG] = "requests_config",
	[HM_MSG_CLIENTS] = "requests_clients",
	[HM_MSG_STOP] = "requests_stop",
	[HM_MSG_RELOAD] = "requests_reload",
};

/* count, the sum in nanoseconds, then p50, p90, p99 and p999 in
 * nanoseconds, per operation: a Prometheus summary in all but name */
#define LATENCY_KEYS(op) { "latency_" op "_count", "latency_" op "_sum_ns", \
	"latency_" op "_p50_ns", "latency_" op "_p90_ns", "latency_" op "_p99_ns", \
	"latency_" op "_p999_ns" }
static const char *const latency_keys[SERVER_OP__COUNT][6] = {
	[SERVER_OP_OPEN] = LATENCY_KEYS("open"),
	[SERVER_OP_READ] = LATENCY_KEYS("read"),
	[SERVER_OP_STAT] = LATENCY_KEYS("stat"),
	[SERVER_OP_CLOSE] = LATENCY_KEYS("close"),
	[SERVER_OP_WARM] = LATENCY_KEYS("warm"),
};
static const double latency_quantiles[4] = { 0.5, 0.9, 0.99, 0.999 };

static const char *const error_keys[SERVER_ERR__COUNT] = {
	[SERVER_ERR_EIO] = "errors_eio",
	[SERVER_ERR_ENOENT] = "errors_enoent",
	[SERVER_ERR_EACCES] = "errors_eacces",
	[SERVER_ERR_EPERM] = "errors_eperm",
	[SERVER_ERR_EBADF] = "errors_ebadf",
	[SERVER_ERR_EINVAL] = "errors_einval",
	[SERVER_ERR_OTHER] = "errors_other",
};

void
stats_count_error(struct server *srv, int error)
{
	enum server_error_kind k;

	switch (error) {
	case EIO: k = SERVER_ERR_EIO; break;
	case ENOENT: k = SERVER_ERR_ENOENT; break;
	case EACCES: k = SERVER_ERR_EACCES; break;
	case EPERM: k = SERVER_ERR_EPERM; break;
	case EBADF: k = SERVER_ERR_EBADF; break;
	case EINVAL: k = SERVER_ERR_EINVAL; break;
	default: k = SERVER_ERR_OTHER; break;
	}
	srv->counters.errors_replied++;
	srv->counters.errors_by[k]++;
}

uint64_t
stats_uptime_us(const struct server *srv)
{
	return (monotime_ns() - srv->started_ns) / 1000u;
}

void
stats_record_latency(struct server *srv, enum server_op op, uint64_t start_ns)
{
	uint64_t now = monotime_ns();

	histogram_record(&srv->latency[op], now > start_ns ? now - start_ns : 0);
}

/* The storage engine's reasons are the wire's (proto/hotmap.proto names
 * them, and their stats keys, through proto/vocab.c): the same numbers,
 * and no reason on one side only. */
#define SAME_REASON(x) \
	_Static_assert((int)STORAGE_REASON_##x == (int)HOTMAP__REASON__REASON_##x, \
		       "storage_reason " #x " is not the wire's")
SAME_REASON(LOCAL_FILE);
SAME_REASON(FORCED);
SAME_REASON(NOT_REGULAR);
SAME_REASON(EMPTY);
SAME_REASON(NETWORK_FS);
SAME_REASON(PSEUDO_FS);
SAME_REASON(MMAP_FAILED);
SAME_REASON(TOO_LARGE);
SAME_REASON(OVER_BUDGET);
_Static_assert(STORAGE_REASON__COUNT == HOTMAP__REASON__REASON_OVER_BUDGET + 1,
	       "a reason the wire has and storage does not, or the reverse");

/* Each key's kind is said where it is emitted, and travels with it
 * (StatsReply.Stat.kind): clients never guess it from the name. */
#define COUNTER	HOTMAP__STAT_KIND__STAT_COUNTER
#define GAUGE	HOTMAP__STAT_KIND__STAT_GAUGE
#define STAT_TEXT_KIND	HOTMAP__STAT_KIND__STAT_TEXT

/*
 * Each key's help is its line in hotmapctl(1), shortened to one line: a
 * family of keys (requests_<type>, errors_<errno>, opens_<reason>,
 * latency_<op>_*) shares one, since Prometheus shows one HELP a family.
 */
void
stats_foreach(struct server *srv, stats_cb cb, void *arg)
{
	const struct server_counters *c = &srv->counters;
	struct storage_counters sc;
	size_t i, q;

	file_cache_counters(srv->cache, &sc);
	cb("version", STAT_TEXT_KIND, 0, PACKAGE_VERSION, "Version of hotmapd.", arg);
	cb("libevent_version", STAT_TEXT_KIND, 0, event_get_version(), "Version of libevent hotmapd runs with.",
	   arg);
	cb("protobuf_c_version", STAT_TEXT_KIND, 0, protobuf_c_version(),
	   "Version of protobuf-c hotmapd runs with.", arg);
	cb("pid", GAUGE, (uint64_t)getpid(), NULL, "Process id of hotmapd.", arg);
	cb("uptime_us", GAUGE, stats_uptime_us(srv), NULL, "Time since hotmapd started.", arg);
	cb("clients", GAUGE, c->clients, NULL, "Clients connected now.", arg);
	cb("clients_total", COUNTER, c->clients_total, NULL, "Connections accepted.", arg);
	cb("clients_dropped", COUNTER, c->clients_dropped, NULL,
	   "Clients disconnected for a malformed frame or another protocol violation.", arg);
	cb("handles", GAUGE, c->handles, NULL, "Files open now, over all clients.", arg);
	for (i = 0; i <= HM_MSG__MAX; i++)
		if (request_keys[i] != NULL)
			cb(request_keys[i], COUNTER, c->requests[i], NULL,
			   "Requests received, by type (ring reads count as read).", arg);
	cb("errors_replied", COUNTER, c->errors_replied, NULL,
	   "Requests answered with an error, of every errno.", arg);
	for (i = 0; i < SERVER_ERR__COUNT; i++)
		cb(error_keys[i], COUNTER, c->errors_by[i], NULL,
		   "Requests answered with an error, by errno (other: the rest).", arg);
	cb("accept_backoffs", COUNTER, c->accept_backoffs, NULL,
	   "Times accepting was paused for lack of descriptors.", arg);
	cb("clients_refused", COUNTER, c->clients_refused, NULL,
	   "Connections refused: their user held max-connections-per-uid already.", arg);
	cb("bytes_served", COUNTER, c->bytes_served, NULL, "File bytes given to clients.", arg);
	cb("bytes_shm", COUNTER, c->bytes_shm, NULL,
	   "File bytes given to clients through their shared regions, not the socket.", arg);
	cb("reads_offloaded", COUNTER, c->reads_offloaded, NULL,
	   "Reads handed to worker threads because they may block.", arg);
	cb("warms", COUNTER, c->warms, NULL, "Warm requests, and opens that asked to warm.", arg);
	cb("workers", GAUGE, srv->nworkers, NULL, "Worker threads (a setting).", arg);
	cb("bytes_mmap", COUNTER, sc.bytes_mmap, NULL, "File bytes copied out of mappings.", arg);
	cb("bytes_pread", COUNTER, sc.bytes_pread, NULL, "File bytes read with pread(2).", arg);
	cb("files", GAUGE, sc.entries, NULL, "Files cached now, open or not, stale ones included.",
	   arg);
	cb("mappings", GAUGE, sc.mappings, NULL, "Cached files that have a mapping now.", arg);
	cb("mapped_bytes", GAUGE, sc.mapped_bytes, NULL, "Total length of the mappings now.", arg);
	cb("cache_hits", COUNTER, sc.cache_hits, NULL, "Opens that found the file cached.", arg);
	cb("cache_misses", COUNTER, sc.cache_misses, NULL, "Opens that had to cache the file.",
	   arg);
	cb("stale_replaced", COUNTER, sc.stale_replaced, NULL,
	   "Cached files replaced because the file changed.", arg);
	cb("sigbus_recoveries", COUNTER, sc.sigbus_recoveries, NULL,
	   "Faults caught copying out of a mapping, answered with pread(2) instead.", arg);
	cb("evictions", COUNTER, sc.evictions, NULL, "Cached files dropped by evict requests.", arg);
	cb("evictions_lru", COUNTER, sc.evictions_lru, NULL,
	   "Unread cached files dropped to keep within max-mapped-bytes or max-open-files.", arg);
	cb("evictions_idle", COUNTER, sc.evictions_idle, NULL,
	   "Cached files dropped after idle-unmap seconds unused.", arg);
	cb("evictions_deleted", COUNTER, sc.evictions_deleted, NULL,
	   "Unread cached files dropped because they were deleted or replaced.", arg);
	cb("budget_fallbacks", COUNTER, sc.budget_fallbacks, NULL,
	   "Opens that got pread because the mapped bytes allowed were all being read.", arg);
	cb("files_over_budget", COUNTER, sc.files_over_budget, NULL,
	   "Opens past max-open-files while every cached file was in use.", arg);
	cb("mapped_over_budget", COUNTER, sc.mapped_over_budget, NULL,
	   "Opens that required a mapping and got one past max-mapped-bytes.", arg);
	cb("huge_folds", COUNTER, sc.huge_folds, NULL,
	   "Chunks of files in memory read back into huge folios (huge-folios).", arg);
	cb("huge_fold_misses", COUNTER, sc.huge_fold_misses, NULL,
	   "Chunks read back for huge folios that stayed in small ones.", arg);
	cb("network_copies", GAUGE, sc.copies, NULL,
	   "Copies of network files kept in memory (network-copy-max).", arg);
	cb("network_copy_bytes", GAUGE, sc.copy_bytes, NULL,
	   "Bytes of memory those copies hold, with those being filled.", arg);
	cb("network_copy_fills", COUNTER, sc.copy_fills, NULL,
	   "Copies of network files filled and kept.", arg);
	cb("network_copy_hits", COUNTER, sc.copy_hits, NULL,
	   "Opens and warms of network files given a copy.", arg);
	cb("network_copy_drops", COUNTER, sc.copy_drops, NULL,
	   "Copies dropped because their file changed.", arg);
	cb("network_copy_evictions", COUNTER, sc.copy_evictions, NULL,
	   "Copies dropped to keep within network-copy-max.", arg);
	cb("network_copy_held_bytes", GAUGE, sc.copy_held_bytes, NULL,
	   "Bytes of dropped copies that clients may still map.", arg);
	cb("network_copy_held_refusals", COUNTER, sc.copy_held_refusals, NULL,
	   "Copies not given: the uid held dropped ones past network-copy-max.", arg);
	for (i = 0; i < STORAGE_REASON__COUNT; i++)
		cb(vocab_reason_stat_key((unsigned)i), COUNTER, sc.opens_by_reason[i], NULL,
		   "Opens, by the reason their backend was chosen.", arg);
	direct_sync(&srv->direct);
	cb("direct_grants", GAUGE, srv->direct.n, NULL,
	   "Handles clients may read directly (the direct tier) now.", arg);
	cb("direct_granted", COUNTER, srv->direct.granted, NULL, "Direct-read grants made.", arg);
	cb("direct_refused", COUNTER, srv->direct.refused, NULL,
	   "Opens that asked for a direct-read grant and were refused.", arg);
	cb("direct_refused_cap", COUNTER, srv->direct.refused_cap, NULL,
	   "Of them, refused because the uid held max-direct-grants-per-uid grants.", arg);
	cb("direct_revoked", COUNTER, srv->direct.revoked, NULL, "Direct-read grants taken back.",
	   arg);
	cb("direct_lease_checks", COUNTER, srv->direct.lease_checks, NULL,
	   "Leases looked at to revoke grants (one per file a lease signal names).", arg);
	cb("direct_reads", COUNTER, srv->direct.reads, NULL,
	   "Reads clients served from their own mappings, as they report them (bounded).", arg);
	cb("direct_bytes", COUNTER, srv->direct.bytes, NULL,
	   "Bytes clients read from their own mappings, as they report them (bounded).", arg);
	cb("direct_reads_copy", COUNTER, srv->direct.ways.copies, NULL,
	   "Of the direct reads, by way: copied out of the mapping, or pread(2) on the "
	   "client's own descriptor (bounded).", arg);
	cb("direct_reads_pread", COUNTER, srv->direct.ways.preads, NULL,
	   "Of the direct reads, by way: copied out of the mapping, or pread(2) on the "
	   "client's own descriptor (bounded).", arg);
	cb("direct_probes", COUNTER, srv->direct.ways.probes, NULL,
	   "Of the direct copies and preads, those that went the other way to keep the copy "
	   "policy's estimates (bounded).", arg);
	cb("direct_populated_blocks", COUNTER, srv->direct.ways.populated, NULL,
	   "2 MiB blocks of clients' mappings populated (MADV_POPULATE_READ), as they report "
	   "them (bounded).", arg);
	cb("direct_populate_ns", COUNTER, srv->direct.ways.populate_ns, NULL,
	   "Time clients spent populating those blocks, as they report it (bounded).", arg);
	cb("direct_table_files", GAUGE, srv->table.used, NULL,
	   "Files in the table of granted files now (direct-table), leased for clients "
	   "that read them without a round trip.", arg);
	cb("direct_table_published", COUNTER, srv->table.published, NULL,
	   "Files published in the table of granted files.", arg);
	cb("direct_table_revoked", COUNTER, srv->direct.revoked_table, NULL,
	   "Entries of the table of granted files revoked (a writer, an eviction, "
	   "direct-reads switched off).", arg);
	cb("regions_huge", GAUGE, c->regions_huge, NULL,
	   "Clients connected now whose shared region asked for huge pages.", arg);
	cb("clients_polling", GAUGE, srv->ring_sessions, NULL,
	   "Clients connected now in polling mode (with a request ring).", arg);
	cb("reads_ring", COUNTER, c->reads_ring, NULL, "Reads taken from clients' request rings.",
	   arg);
	cb("poll_us", GAUGE, srv->poll_us, NULL,
	   "How long the loop polls the rings after a ring request (a setting).", arg);
	cb("reads_inflight", GAUGE, c->inflight, NULL, "Reads with the worker threads now.", arg);
	cb("inflight_waits", COUNTER, c->inflight_waits, NULL,
	   "Times a client's requests were held back by max-inflight(-bytes).", arg);
	cb("clients_refused_policy", COUNTER, c->refused_policy, NULL,
	   "Connections refused by allow-uid and allow-gid.", arg);
	for (i = 0; i < SERVER_OP__COUNT; i++) {
		static const char help[] =
			"Latency of requests in the daemon, by operation (percentiles: "
			"bucket upper ends, at most 1/16 high).";
		const struct histogram *h = &srv->latency[i];

		/* keys are static strings: callers may keep the pointers */
		cb(latency_keys[i][0], COUNTER, histogram_count(h), NULL, help, arg);
		cb(latency_keys[i][1], COUNTER, histogram_sum(h), NULL, help, arg);
		for (q = 0; q < 4; q++)
			cb(latency_keys[i][2 + q], GAUGE,
			   histogram_percentile(h, latency_quantiles[q]), NULL, help, arg);
	}
}

void
stats_reset(struct server *srv)
{
	struct server_counters *c = &srv->counters;
	uint64_t handles = c->handles, clients = c->clients, inflight = c->inflight;
	uint64_t huge = c->regions_huge;
	size_t i;

	memset(c, 0, sizeof *c);
	c->handles = handles;
	c->clients = clients;
	c->inflight = inflight;
	c->regions_huge = huge;
	for (i = 0; i < SERVER_OP__COUNT; i++)
		histogram_reset(&srv->latency[i]);
	file_cache_reset_counters(srv->cache);
	direct_sync(&srv->direct);	/* what was read before the reset is not counted after */
	srv->direct.granted = srv->direct.refused = srv->direct.revoked = 0;
	srv->direct.refused_cap = srv->direct.lease_checks = 0;
	srv->direct.reads = srv->direct.bytes = 0;
	srv->direct.ways = (struct storage_read_ways){ 0 };
	srv->status_requests = 0;
}
