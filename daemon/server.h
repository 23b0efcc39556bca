/*
 * server.h - hotmapd's service state: configuration, listener, sessions,
 * statistics and the event loop.
 *
 * What it is for: bind (or take from systemd) the listening socket, accept
 * connections into sessions, answer signals (SIGHUP reloads the
 * configuration), decide which peers may connect and administer, and keep
 * the counters that stats reports.  main.c loads the configuration
 * (config.h) and calls server_init, server_run and server_fini.
 *
 * What it must not do: parse frames (peer.c, session.c) or read files
 * (storage).
 */
#ifndef HOTMAP_SERVER_H
#define HOTMAP_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "daemon/conf.h"
#include "daemon/histogram.h"
#include "daemon/policy.h"
#include "daemon/resolve.h"
#include "daemon/storage.h"
#include "proto/frame.h"

struct event_base;
struct server;
struct event;
struct session;

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
void server_count_error(struct server *srv, int error);

/* Records a request of op that took from start_ns (server_now_ns) to now. */
void server_latency(struct server *srv, enum server_op op, uint64_t start_ns);
uint64_t server_now_ns(void);

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
};

struct server {
	struct event_base *base;
	/* The configuration in use: consumers read it when a client connects
	 * or opens, so a reload (SIGHUP) applies from then on. */
	struct hm_config cfg;
	const struct hm_config_args *cfg_args;	/* what a reload loads */
	unsigned nworkers;		/* worker threads started */
	struct file_cache *cache;
	struct workers *workers;	/* reads that may wait for the disk */
	struct server_counters counters;

	int listen_fd;
	bool socket_activated;		/* from systemd: never unlinked */
	bool socket_bound;		/* bound by us: unlinked at exit */
	struct event *ev_accept;
	struct event *ev_accept_retry;
	struct event *ev_signals[4];
	struct event *ev_status;	/* WATCHDOG=1 and STATUS= to systemd */
	uint64_t watchdog_usec;		/* 0: no watchdog asked for */
	uint64_t status_requests;	/* requests at the last STATUS */
	uint64_t status_at_us;		/* uptime at the last STATUS */

	struct session *sessions;	/* doubly linked through session */
	unsigned ring_sessions;		/* sessions in polling mode (proto/ring.h) */
	uint64_t ring_work;		/* requests taken from rings, ever */
	unsigned poll_us;		/* how long the loop polls rings before it sleeps */
	bool ring_polling;		/* the loop is polling the rings now */
	bool stopping;			/* server_fini has begun */
	uint64_t refusal_logged_ns;	/* server_log_refusal */
	uint64_t refusals_unlogged;
	struct event *ev_sweep;		/* idle unmapping, each second */
	struct event *ev_watch;		/* the cache's inotify: deleted files */
	/* Latency of requests, by operation, from dispatch to reply. */
	struct histogram latency[SERVER_OP__COUNT];
	struct timespec started;	/* CLOCK_MONOTONIC */
	uid_t uid;			/* admins: uid 0 and this uid */

	struct server_uid_count {
		uid_t uid;
		unsigned n;
	} *uids;			/* connections per client uid */
	size_t nuids;
};

/* Takes over what cfg holds (cfg is zeroed); keeps args, which must
 * outlive the server, for reloads.  Negative errno; err names the
 * problem. */
int server_init(struct server *srv, struct hm_config *cfg, const struct hm_config_args *args,
		char *err, size_t errlen);
/* Socket activation when systemd passed a socket, else bind socket_path. */
int server_listen(struct server *srv, char *err, size_t errlen);
/* Runs until SIGTERM or SIGINT. */
int server_run(struct server *srv);
/*
 * Loads the configuration again, from the same file with the same command
 * line (SIGHUP).  With errors, logs every one and keeps the configuration
 * in use (-EINVAL).  Otherwise the new one replaces it, except the values
 * that need a restart (socket, socket-mode, socket-group, workers,
 * foreground), which are logged and kept; the log level applies at once.
 * Tells systemd RELOADING=1 before and READY=1 after.
 */
int server_reload(struct server *srv);
/* Closes every session, removes a socket it bound, frees all.  Takes a
 * server that failed half-way through init. */
void server_fini(struct server *srv);

uint64_t server_uptime_us(const struct server *srv);

/* Zeroes the counters (totals since start or the last reset), never the
 * state (clients, handles, files, mappings, mapped bytes, uptime). */
void server_stats_reset(struct server *srv);

/* Every stat, numeric or text, through one callback: all output formats
 * share this one list of keys (documented in hotmapctl(1)). */
typedef void (*server_stat_cb)(const char *key, uint64_t value, const char *text, void *arg);
void server_stats_foreach(struct server *srv, server_stat_cb cb, void *arg);

#endif
