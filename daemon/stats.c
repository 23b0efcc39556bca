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

#include "daemon/monotime.h"
#include "daemon/server.h"
#include "daemon/stats.h"
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
};

/* count, then p50, p90, p99 and p999 in nanoseconds, per operation */
static const char *const latency_keys[SERVER_OP__COUNT][5] = {
	[SERVER_OP_OPEN] = { "latency_open_count", "latency_open_p50_ns", "latency_open_p90_ns",
		"latency_open_p99_ns", "latency_open_p999_ns" },
	[SERVER_OP_READ] = { "latency_read_count", "latency_read_p50_ns", "latency_read_p90_ns",
		"latency_read_p99_ns", "latency_read_p999_ns" },
	[SERVER_OP_STAT] = { "latency_stat_count", "latency_stat_p50_ns", "latency_stat_p90_ns",
		"latency_stat_p99_ns", "latency_stat_p999_ns" },
	[SERVER_OP_CLOSE] = { "latency_close_count", "latency_close_p50_ns", "latency_close_p90_ns",
		"latency_close_p99_ns", "latency_close_p999_ns" },
	[SERVER_OP_WARM] = { "latency_warm_count", "latency_warm_p50_ns", "latency_warm_p90_ns",
		"latency_warm_p99_ns", "latency_warm_p999_ns" },
};

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
#define TEXT	HOTMAP__STAT_KIND__STAT_TEXT

void
stats_foreach(struct server *srv, stats_cb cb, void *arg)
{
	const struct server_counters *c = &srv->counters;
	struct storage_counters sc;
	size_t i;

	file_cache_counters(srv->cache, &sc);
	cb("version", TEXT, 0, PACKAGE_VERSION, arg);
	cb("libevent_version", TEXT, 0, event_get_version(), arg);
	cb("protobuf_c_version", TEXT, 0, protobuf_c_version(), arg);
	cb("pid", GAUGE, (uint64_t)getpid(), NULL, arg);
	cb("uptime_us", GAUGE, stats_uptime_us(srv), NULL, arg);
	cb("clients", GAUGE, c->clients, NULL, arg);
	cb("clients_total", COUNTER, c->clients_total, NULL, arg);
	cb("clients_dropped", COUNTER, c->clients_dropped, NULL, arg);
	cb("handles", GAUGE, c->handles, NULL, arg);
	for (i = 0; i <= HM_MSG__MAX; i++)
		if (request_keys[i] != NULL)
			cb(request_keys[i], COUNTER, c->requests[i], NULL, arg);
	cb("errors_replied", COUNTER, c->errors_replied, NULL, arg);
	for (i = 0; i < SERVER_ERR__COUNT; i++)
		cb(error_keys[i], COUNTER, c->errors_by[i], NULL, arg);
	cb("accept_backoffs", COUNTER, c->accept_backoffs, NULL, arg);
	cb("clients_refused", COUNTER, c->clients_refused, NULL, arg);
	cb("bytes_served", COUNTER, c->bytes_served, NULL, arg);
	cb("bytes_shm", COUNTER, c->bytes_shm, NULL, arg);
	cb("reads_offloaded", COUNTER, c->reads_offloaded, NULL, arg);
	cb("warms", COUNTER, c->warms, NULL, arg);
	cb("workers", GAUGE, srv->nworkers, NULL, arg);
	cb("bytes_mmap", COUNTER, sc.bytes_mmap, NULL, arg);
	cb("bytes_pread", COUNTER, sc.bytes_pread, NULL, arg);
	cb("files", GAUGE, sc.entries, NULL, arg);
	cb("mappings", GAUGE, sc.mappings, NULL, arg);
	cb("mapped_bytes", GAUGE, sc.mapped_bytes, NULL, arg);
	cb("cache_hits", COUNTER, sc.cache_hits, NULL, arg);
	cb("cache_misses", COUNTER, sc.cache_misses, NULL, arg);
	cb("stale_replaced", COUNTER, sc.stale_replaced, NULL, arg);
	cb("sigbus_recoveries", COUNTER, sc.sigbus_recoveries, NULL, arg);
	cb("evictions", COUNTER, sc.evictions, NULL, arg);
	cb("evictions_lru", COUNTER, sc.evictions_lru, NULL, arg);
	cb("evictions_idle", COUNTER, sc.evictions_idle, NULL, arg);
	cb("evictions_deleted", COUNTER, sc.evictions_deleted, NULL, arg);
	cb("budget_fallbacks", COUNTER, sc.budget_fallbacks, NULL, arg);
	cb("files_over_budget", COUNTER, sc.files_over_budget, NULL, arg);
	cb("mapped_over_budget", COUNTER, sc.mapped_over_budget, NULL, arg);
	for (i = 0; i < STORAGE_REASON__COUNT; i++)
		cb(vocab_reason_stat_key((unsigned)i), COUNTER, sc.opens_by_reason[i], NULL, arg);
	direct_sync(&srv->direct);
	cb("direct_grants", GAUGE, srv->direct.n, NULL, arg);
	cb("direct_granted", COUNTER, srv->direct.granted, NULL, arg);
	cb("direct_refused", COUNTER, srv->direct.refused, NULL, arg);
	cb("direct_revoked", COUNTER, srv->direct.revoked, NULL, arg);
	cb("direct_reads", COUNTER, srv->direct.reads, NULL, arg);
	cb("direct_bytes", COUNTER, srv->direct.bytes, NULL, arg);
	cb("regions_huge", GAUGE, c->regions_huge, NULL, arg);
	cb("clients_polling", GAUGE, srv->ring_sessions, NULL, arg);
	cb("reads_ring", COUNTER, c->reads_ring, NULL, arg);
	cb("poll_us", GAUGE, srv->poll_us, NULL, arg);
	cb("reads_inflight", GAUGE, c->inflight, NULL, arg);
	cb("inflight_waits", COUNTER, c->inflight_waits, NULL, arg);
	cb("clients_refused_policy", COUNTER, c->refused_policy, NULL, arg);
	for (i = 0; i < SERVER_OP__COUNT; i++) {
		const struct histogram *h = &srv->latency[i];

		/* keys are static strings: callers may keep the pointers */
		cb(latency_keys[i][0], COUNTER, histogram_count(h), NULL, arg);
		cb(latency_keys[i][1], GAUGE, histogram_percentile(h, 0.5), NULL, arg);
		cb(latency_keys[i][2], GAUGE, histogram_percentile(h, 0.9), NULL, arg);
		cb(latency_keys[i][3], GAUGE, histogram_percentile(h, 0.99), NULL, arg);
		cb(latency_keys[i][4], GAUGE, histogram_percentile(h, 0.999), NULL, arg);
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
	srv->direct.reads = srv->direct.bytes = 0;
	srv->status_requests = 0;
}
