/* SPDX-License-Identifier: MIT */
/*
 * stats.h - hotmapd's statistics: the service counters, the latency
 * histograms by operation, errors by errno, and the one callback that
 * emits every stat (all output formats share its list of keys, documented
 * in hotmapctl(1)).
 *
 * What it must not do: decide anything from a counter, or reset state
 * that is not a total (clients, handles, reads in flight, the cache's
 * files and mappings, uptime).
 */
#ifndef HOTMAP_STATS_H
#define HOTMAP_STATS_H

#include <stdint.h>

#include "proto/frame.h"

struct server;

/* Operations timed in latency histograms (stats keys latency_<name>_*). */
enum server_op {
	SERVER_OP_OPEN,
	SERVER_OP_READ,
	SERVER_OP_STAT,
	SERVER_OP_CLOSE,
	SERVER_OP_WARM,
	SERVER_OP__COUNT
};

/* The errors counted apart in stats (errors_<name>); the rest are
 * errors_other. */
enum server_error_kind {
	SERVER_ERR_EIO,		/* an I/O error reading the file */
	SERVER_ERR_ENOENT,
	SERVER_ERR_EACCES,	/* refused: outside the roots, not allowed */
	SERVER_ERR_EPERM,	/* needs an administrator */
	SERVER_ERR_EBADF,	/* no such handle, or a descriptor not for reading */
	SERVER_ERR_EINVAL,
	SERVER_ERR_OTHER,
	SERVER_ERR__COUNT
};
void stats_count_error(struct server *srv, int error);

/* Records a request of op that took from start_ns (monotime_ns) to now. */
void stats_record_latency(struct server *srv, enum server_op op, uint64_t start_ns);
/* Microseconds since server_init: a state, never reset. */
uint64_t stats_uptime_us(const struct server *srv);

/* Counters of the service layer.  The storage core keeps its own. */
struct server_counters {
	uint64_t requests[HM_MSG__MAX + 1];	/* by request type */
	uint64_t errors_replied;		/* ERROR replies sent */
	uint64_t errors_by[SERVER_ERR__COUNT];	/* of which, by errno (server_error_kind) */
	uint64_t clients_total;			/* connections accepted */
	uint64_t clients_dropped;		/* disconnected for a bad frame */
	uint64_t bytes_served;			/* file bytes given to clients */
	uint64_t bytes_shm;			/* of which into shared regions */
	uint64_t reads_offloaded;		/* reads handed to workers */
	uint64_t warms;				/* warm requests, and opens with warm */
	uint64_t accept_backoffs;		/* accept paused: out of descriptors */
	uint64_t clients_refused;		/* over --max-connections-per-uid */
	uint64_t reads_ring;			/* reads taken from rings (polling mode) */
	uint64_t refused_policy;		/* connections refused by allow-uid/gid */
	uint64_t inflight_waits;		/* requests held back by max-inflight(-bytes) */
	uint64_t handles;			/* handles open now, all sessions */
	uint64_t inflight;			/* reads with the workers now */
	uint64_t clients;			/* connected now */
	uint64_t regions_huge;			/* of them, with a region of huge pages */
};

/* Zeroes the counters (totals since start or the last reset), never the
 * state (clients, handles, files, mappings, mapped bytes, uptime). */
void stats_reset(struct server *srv);

/* Every stat, numeric or text, through one callback: all output formats
 * share this one list of keys (documented in hotmapctl(1)), each with its
 * kind (counter, gauge or text) and a one-line description (help: the
 * HELP of Prometheus's format; the same for every key of a family such as
 * requests_<type>).  key, text and help are static or live until the next
 * stats_foreach. */
typedef void (*stats_cb)(const char *key, Hotmap__StatKind kind, uint64_t value,
			 const char *text, const char *help, void *arg);
void stats_foreach(struct server *srv, stats_cb cb, void *arg);

#endif
