/*
 * server.h - hotmapd's service state: configuration, listener, sessions,
 * statistics and the event loop.
 *
 * What it is for: bind (or take from systemd) the listening socket, accept
 * connections into sessions, answer signals, and keep the counters that
 * stats reports.  main.c parses options into a server_config and calls
 * server_init, server_run and server_fini.
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

#include "daemon/resolve.h"
#include "daemon/storage.h"
#include "proto/frame.h"

struct event_base;
struct event;
struct session;

struct server_config {
	const char *socket_path;
	enum storage_policy policy;	/* --backend */
	struct resolve_roots roots;	/* --root; empty: open by path refused */
	unsigned workers;		/* --workers; 0: as many as cores, 2 to 8 */
	unsigned max_per_uid;		/* --max-connections-per-uid */
	unsigned idle_timeout_s;	/* --idle-timeout; 0: never */
};

#define SERVER_MAX_PER_UID_DEFAULT	4096

/* Counters of the service layer.  The storage core keeps its own. */
struct server_counters {
	uint64_t requests[HM_MSG__MAX + 1];	/* by request type */
	uint64_t errors_replied;		/* ERROR replies sent */
	uint64_t clients_total;			/* connections accepted */
	uint64_t clients_dropped;		/* disconnected for a bad frame */
	uint64_t bytes_served;			/* file bytes given to clients */
	uint64_t bytes_shm;			/* of which into shared regions */
	uint64_t reads_offloaded;		/* reads handed to workers */
	uint64_t warms;				/* warm requests, and opens with warm */
	uint64_t accept_backoffs;		/* accept paused: out of descriptors */
	uint64_t clients_refused;		/* over --max-connections-per-uid */
	uint64_t handles;			/* handles open now, all sessions */
	uint64_t clients;			/* connected now */
};

struct server {
	struct event_base *base;
	struct server_config cfg;
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
	struct timespec started;	/* CLOCK_MONOTONIC */
	uid_t uid;			/* admins: uid 0 and this uid */

	struct server_uid_count {
		uid_t uid;
		unsigned n;
	} *uids;			/* connections per client uid */
	size_t nuids;
};

/* Takes ownership of cfg->roots.  Negative errno; err names the problem. */
int server_init(struct server *srv, struct server_config *cfg, char *err, size_t errlen);
/* Socket activation when systemd passed a socket, else bind socket_path. */
int server_listen(struct server *srv, char *err, size_t errlen);
/* Runs until SIGTERM or SIGINT. */
int server_run(struct server *srv);
/* Closes every session, removes a socket it bound, frees all.  Takes a
 * server that failed half-way through init. */
void server_fini(struct server *srv);

uint64_t server_uptime_us(const struct server *srv);

/* Counts a connection of uid in (delta 1) or out (delta -1), or only
 * looks (0); returns the connections of uid now. */
unsigned server_uid_connections(struct server *srv, uid_t uid, int delta);
bool server_peer_is_admin(const struct server *srv, uid_t uid);

/* Zeroes the counters (totals since start or the last reset), never the
 * state (clients, handles, files, mappings, mapped bytes, uptime). */
void server_stats_reset(struct server *srv);

/* Every stat, numeric or text, through one callback: all output formats
 * share this one list of keys (documented in hotmapctl(1)). */
typedef void (*server_stat_cb)(const char *key, uint64_t value, const char *text, void *arg);
void server_stats_foreach(struct server *srv, server_stat_cb cb, void *arg);

#endif
