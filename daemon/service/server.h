/* SPDX-License-Identifier: MIT */
/*
 * server.h - hotmapd's service state: configuration, listener, sessions,
 * statistics and the event loop.
 *
 * What it is for: bind (or take from systemd) the listening socket, accept
 * connections into sessions, answer signals (SIGHUP reloads the
 * configuration), tell systemd the state, and hand the event loop the
 * rings (loop.h).  It holds the state that the peer policy (policy.h) and
 * the stats (stats.h) read and count into.  main.c loads the
 * configuration (conf.h) and calls server_init, server_listen, server_run
 * and server_fini.
 *
 * What it must not do: parse frames (peer.c, session.c), read files
 * (storage), or decide who may connect (policy.c).
 */
#ifndef HOTMAP_SERVER_H
#define HOTMAP_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "daemon/base/platform.h"	/* uid_t, gid_t */
#include "daemon/config/conf.h"
#include "daemon/service/histogram.h"
#include "daemon/service/policy.h"
#include "daemon/storage/resolve.h"
#include "daemon/service/stats.h"
#include "daemon/storage/storage.h"
#include "daemon/transport/transport.h"
#include "daemon/service/direct.h"
#include "daemon/service/direct_table.h"
#include "proto/frame.h"

struct event_base;
struct server;
struct event;
struct pipe_listener;
struct session;

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
	struct direct_registry direct;	/* direct-read grants */
	struct direct_table table;	/* granted files published (Unix) */
	struct event *ev_lease;		/* the lease signals' pipe (server_unix.c) */

	int listen_fd;
	struct pipe_listener *pipes;	/* Windows: the named pipe's listener */
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
	uint64_t refusal_logged_ns;	/* policy_log_refusal */
	uint64_t refusals_unlogged;
	struct event *ev_sweep;		/* idle unmapping, each second */
	struct event *ev_watch;		/* the cache's inotify: deleted files */
	/* Latency of requests, by operation, from dispatch to reply. */
	struct histogram latency[SERVER_OP__COUNT];
	uint64_t started_ns;		/* monotime_ns() at server_init */
	pid_t pid;			/* hotmapd's own */
	uid_t uid;			/* hotmapd's uid, for messages */
	/* hotmapd's own user (peer_ident's user): an admin, beside the
	 * superuser */
	char self_user[PEER_IDENT_USER_MAX];

	struct server_uid_count {
		char user[PEER_IDENT_USER_MAX];	/* peer_ident's user */
		unsigned n;
	} *uids;			/* connections per client user */
	size_t nuids;
};

/* Takes over what cfg holds (cfg is zeroed); keeps args, which must
 * outlive the server, for reloads.  Negative errno; err names the
 * problem. */
int server_init(struct server *srv, struct hm_config *cfg, const struct hm_config_args *args,
		char *err, size_t errlen);
/* Socket activation when systemd passed a socket, else bind socket_path. */
int server_listen(struct server *srv, char *err, size_t errlen);
/* Learns who hotmapd runs as (srv->uid, srv->self_user): at init, and
 * again once privileges are dropped. */
void server_self(struct server *srv);
/* Runs until SIGTERM or SIGINT. */
int server_run(struct server *srv);
/* Shuts down as on SIGTERM, why saying who asked: the loop ends once the
 * callbacks running now are done (a reply queued now is written first). */
void server_stop(struct server *srv, const char *why);
/*
 * Loads the configuration again, from the same file with the same command
 * line (SIGHUP).  With errors, logs every one and keeps the configuration
 * in use (-EINVAL).  Otherwise the new one replaces it, except the values
 * that need a restart (socket, socket-mode, socket-group, workers,
 * foreground, pid-file, user, group), which are logged and kept; the log
 * level applies at once and the log file is opened again (logrotate).
 * Tells systemd RELOADING=1 before and READY=1 after.  With rep (RELOAD
 * from hotmapctl; NULL from SIGHUP), the errors, the changed values and
 * the values kept for a restart also go there, each a line of its own
 * (reload_report_clear frees them).
 */
struct reload_report {
	char **errors, **changed, **kept;
	size_t nerrors, nchanged, nkept;
	bool nomem;		/* a line could not be kept */
};
int server_reload(struct server *srv, struct reload_report *rep);
void reload_report_clear(struct reload_report *rep);
/* Closes every session, removes a socket it bound, frees all.  Takes a
 * server that failed half-way through init. */
void server_fini(struct server *srv);

#endif
