/* SPDX-License-Identifier: MIT */
/*
 * server.c - reload, systemd status and the life of hotmapd's service
 * state (see server.h).  The listener and the signals (or the console's
 * control events) are the platform's: server_platform.h.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "daemon/base/closer.h"
#include "daemon/storage/file_platform.h"
#include "daemon/base/log.h"
#include "daemon/service/loop.h"
#include "proto/monotime.h"
#include "daemon/base/sd.h"
#include "daemon/service/server.h"
#include "daemon/service/server_platform.h"
#include "daemon/service/session.h"
#include "daemon/service/workers.h"
/* How long shutdown waits for closes still queued (a FUSE server may never
 * answer one; the exit closes the rest). */
#define SERVER_CLOSER_STOP_MS	5000

void
server_self(struct server *srv)
{
	struct peer_ident self;

	if (peer_ident_self(&self) == 0) {
		srv->uid = self.uid;
		srv->pid = self.pid;
		memcpy(srv->self_user, self.user, sizeof self.user);
	}
	peer_ident_clear(&self);
}

void
server_stop(struct server *srv, const char *why)
{
	log_notice("%s: shutting down", why);
	sd_notify(0, "STOPPING=1");
	event_base_loopexit(srv->base, NULL);
}

/*
 * Moves the value of key, which needs a restart, from old into next: the
 * field's bytes are swapped, so a value that owns memory (the socket's
 * path) changes hands instead of being freed twice; old's pointer stays
 * valid until old is cleared, and server_fini unlinks next's.
 */
static void
keep_restart_value(struct hm_config *next, struct hm_config *old, enum hm_config_key key)
{
	unsigned char tmp[sizeof(struct hm_config)];
	size_t offset, size;

	conf_key_field(key, &offset, &size);
	memcpy(tmp, (char *)next + offset, size);
	memcpy((char *)next + offset, (char *)old + offset, size);
	memcpy((char *)old + offset, tmp, size);
	next->source[key] = old->source[key];
}

/* What the configuration in force sets beyond what sessions read from it
 * when they connect or open: at start, and after each reload. */
static void
server_apply(struct server *srv)
{
	const struct hm_config *c = &srv->cfg;
	struct storage_limits lim = {
		.max_mapped_bytes = c->max_mapped_bytes,
		.max_files = c->max_open_files,
		.idle_unmap_ms = (uint64_t)c->idle_unmap_s * 1000u,
		.network_fs_mmap = c->network_fs == HM_NETWORK_FS_MMAP,
		.network_copy_max = c->network_copy_max,
		.network_copy_fill_ms = (uint64_t)c->network_copy_fill_s * 1000u,
	};

	if (c->network_copy_max == HM_CONFIG_NETWORK_COPY_AUTO) {
		uint64_t eighth = server_memory() / 8;

		lim.network_copy_max = eighth < HM_CONFIG_NETWORK_COPY_AUTO_MAX ? eighth :
				       HM_CONFIG_NETWORK_COPY_AUTO_MAX;
	}

	/* a lowered budget drops what it can at once, readers permitting */
	file_cache_set_limits(srv->cache, &lim);
	if (!c->direct_reads && direct_revoke_file(&srv->direct, true, 0, 0) > 0)
		log_info("direct-reads is off: every grant revoked");
	/* a lowered cap takes no grant back: new ones wait till under it */
	srv->direct.max_per_uid = c->max_direct_per_uid;
	direct_table_set_linger(&srv->table, c->direct_table_s);
	if (c->poll_us >= 0)
		srv->poll_us = (unsigned)c->poll_us;
	else
		srv->poll_us = server_cpus() >= 4 ? HM_CONFIG_POLL_US_AUTO : 0;
}

static void
server_watch_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	(void)fd;
	(void)what;
	file_cache_notice(srv->cache);
}

static void
server_sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	(void)fd;
	(void)what;
	file_cache_sweep(srv->cache, file_cache_clock_ms());
	direct_table_sweep(&srv->table, &srv->direct, srv->cache, file_cache_clock_ms());
}

/* Appends a copy of line to the list *v of *n (rep->nomem when it cannot). */
static void
report_add(struct reload_report *rep, char ***v, size_t *n, const char *line)
{
	char **nv, *copy;

	if (rep == NULL)
		return;
	nv = realloc(*v, (*n + 1) * sizeof *nv);
	copy = strdup(line);
	if (nv == NULL || copy == NULL) {
		if (nv != NULL)
			*v = nv;
		free(copy);
		rep->nomem = true;
		return;
	}
	*v = nv;
	nv[(*n)++] = copy;
}

static void
report_free(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void
reload_report_clear(struct reload_report *rep)
{
	report_free(rep->errors, rep->nerrors);
	report_free(rep->changed, rep->nchanged);
	report_free(rep->kept, rep->nkept);
	memset(rep, 0, sizeof *rep);
}

int
server_reload(struct server *srv, struct reload_report *rep)
{
	char line[sizeof "%s changed from '' to '': needs a restart; keeping ''" + 64 + 3 * 1024];
	struct hm_config next, *cur = &srv->cfg;
	struct hm_config_errors errs = { 0 };
	char msg[128], was[1024], now[1024];
	const char *file;
	size_t i;
	int rc, k;

	/* systemd: a reload in progress, since now (for its timeout) */
	snprintf(msg, sizeof msg, "RELOADING=1\nMONOTONIC_USEC=%llu",
		 (unsigned long long)(monotime_ns() / 1000u));
	sd_notify(0, msg);
	log_reopen(cur->log_file);	/* logrotate's SIGHUP, whatever the file says */
	rc = conf_load(&next, srv->cfg_args, &errs);
	if (rc < 0) {
		for (i = 0; i < errs.n; i++) {
			log_err("reload: %s", errs.v[i]);
			if (rep != NULL)
				report_add(rep, &rep->errors, &rep->nerrors, errs.v[i]);
		}
		if (rep != NULL && errs.n == 0)
			report_add(rep, &rep->errors, &rep->nerrors,
				   rc == -ENOMEM ? "out of memory" : "the configuration has errors");
		log_err("reload failed (%s): keeping the configuration in use",
			rc == -ENOMEM ? "out of memory" : "errors above");
		conf_errors_clear(&errs);
		sd_notify(0, "READY=1\nSTATUS=reload failed; the configuration in use is kept");
		return rc;
	}
	for (k = 0; k < HM_CONFIG__NKEYS; k++) {
		conf_value_text(cur, (enum hm_config_key)k, was, sizeof was);
		conf_value_text(&next, (enum hm_config_key)k, now, sizeof now);
		if (srv->socket_activated &&
		    (k == HM_KEY_SOCKET || k == HM_KEY_SOCKET_MODE || k == HM_KEY_SOCKET_GROUP)) {
			/* the socket unit's, whatever the file says (noticed
			 * at start) */
			keep_restart_value(&next, cur, (enum hm_config_key)k);
			continue;
		}
		if (strcmp(was, now) == 0)
			continue;
		if (conf_key_needs_restart((enum hm_config_key)k)) {
			snprintf(line, sizeof line,
				 "%s changed from '%s' to '%s': needs a restart; keeping '%s'",
				 conf_key_name((enum hm_config_key)k), was, now, was);
			log_warn("reload: %s", line);
			report_add(rep, rep != NULL ? &rep->kept : NULL, rep != NULL ? &rep->nkept : NULL,
				   line);
			keep_restart_value(&next, cur, (enum hm_config_key)k);
		} else {
			snprintf(line, sizeof line, "%s = %s (was %s)",
				 conf_key_name((enum hm_config_key)k), now, was);
			log_notice("reload: %s", line);
			report_add(rep, rep != NULL ? &rep->changed : NULL,
				   rep != NULL ? &rep->nchanged : NULL, line);
		}
	}
	/* Nothing holds on to the old values past this event: sessions read
	 * the configuration when they connect or open, and copy what they
	 * keep. */
	conf_clear(cur);
	*cur = next;
	log_set_level(cur->log_level);
	log_reopen(cur->log_file);	/* the file the reload names */
	server_apply(srv);
	file = cur->path != NULL ? cur->path : "no file, built-in defaults";
	log_notice("reload: configuration in use from %s", file);
	sd_notify(0, "READY=1\nSTATUS=configuration reloaded");
	return 0;
}

int
server_init(struct server *srv, struct hm_config *cfg, const struct hm_config_args *args,
	    char *err, size_t errlen)
{
	memset(srv, 0, sizeof *srv);
	srv->table.fd = -1;
	srv->listen_fd = -1;
	srv->cfg = *cfg;
	memset(cfg, 0, sizeof *cfg);
	srv->cfg_args = args;
	server_self(srv);
	srv->started_ns = monotime_ns();
	srv->base = event_base_new();
	srv->cache = file_cache_new();
	if (srv->base == NULL || srv->cache == NULL) {
		snprintf(err, errlen, "%s", srv->cache == NULL && errno == EBUSY ?
			 "cannot take over SIGBUS (is ASAN_OPTIONS handle_sigbus=2 set?)" :
			 "out of memory");
		return -ENOMEM;
	}
	srv->nworkers = srv->cfg.workers;
	if (srv->nworkers == 0) {
		unsigned n = server_cpus();

		srv->nworkers = n < 2 ? 2 : n > 8 ? 8 : n;
	}
	srv->workers = workers_new(srv->base, srv->nworkers);
	if (srv->workers == NULL) {
		snprintf(err, errlen, "cannot start %u worker threads: %s", srv->nworkers,
			 strerror(errno));
		return -ENOMEM;
	}
	/* Clients' descriptors are closed off the loop (closer.h). */
	if (closer_start() < 0)
		log_warn("cannot start the closer thread: clients' descriptors are closed "
			 "on the event loop");
	/* Huge folios look at /proc/self/pagemap: opened now, while it is
	 * ours (after privileges are dropped, it is root's). */
	if (fplat_fold_chunk(0) == 0 && srv->cfg.huge_folios)
		log_info("huge-folios: this system gives files no huge folios, or cannot tell");
	server_apply(srv);
	{
		struct timeval second = { 1, 0 };

		srv->ev_sweep = event_new(srv->base, -1, EV_PERSIST, server_sweep_cb, srv);
		if (srv->ev_sweep == NULL || event_add(srv->ev_sweep, &second) < 0) {
			snprintf(err, errlen, "cannot schedule idle unmapping");
			return -ENOMEM;
		}
	}
	if (file_cache_watch_fd(srv->cache) >= 0) {
		/* cached files deleted while idle are freed at once */
		srv->ev_watch = event_new(srv->base, file_cache_watch_fd(srv->cache),
					  EV_READ | EV_PERSIST, server_watch_cb, srv);
		if (srv->ev_watch == NULL || event_add(srv->ev_watch, NULL) < 0) {
			snprintf(err, errlen, "cannot watch cached files");
			return -ENOMEM;
		}
	}
	return server_signals_start(srv, err, errlen);
}

/* Service manager updates: WATCHDOG=1 at half the watchdog interval (the
 * loop is alive if this timer runs), and a one-line STATUS summary. */
/* The rings as loop.c sees them (loop.h): the loop is handed these
 * instead of the server, so that it depends on neither server nor
 * session. */
static uint64_t
server_rings_work(void *arg)
{
	return ((struct server *)arg)->ring_work;
}

static unsigned
server_rings_sessions(void *arg)
{
	return ((struct server *)arg)->ring_sessions;
}

static unsigned
server_rings_poll_us(void *arg)
{
	return ((struct server *)arg)->poll_us;
}

static int
server_rings_poll_all(void *arg)
{
	return session_poll_rings(arg);
}

/* ring_polling first: a ring that starts now reads it (session_ring.c). */
static void
server_rings_set_idle(void *arg, bool idle)
{
	struct server *srv = arg;

	srv->ring_polling = !idle;
	session_set_rings_idle(srv, idle);
}

static void
server_status_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;
	struct storage_counters sc;
	uint64_t requests = 0, now = stats_uptime_us(srv);
	double rate;
	char msg[256], copies[48];
	size_t i;

	(void)fd;
	(void)what;
	for (i = 0; i <= HM_MSG__MAX; i++)
		requests += srv->counters.requests[i];
	rate = now > srv->status_at_us ?
	       (double)(requests - srv->status_requests) * 1e6 / (double)(now - srv->status_at_us) : 0;
	srv->status_requests = requests;
	srv->status_at_us = now;
	file_cache_counters(srv->cache, &sc);
	/* copies of network files: memory of the daemon's own */
	copies[0] = '\0';
	if (sc.copy_bytes > 0)
		snprintf(copies, sizeof copies, ", copies %.1f MiB", (double)sc.copy_bytes / 1048576.0);
	snprintf(msg, sizeof msg,
		 "%sSTATUS=clients %llu, files %llu, mapped %.1f MiB, %.0f requests/s%s",
		 srv->watchdog_usec > 0 ? "WATCHDOG=1\n" : "",
		 (unsigned long long)srv->counters.clients, (unsigned long long)sc.entries,
		 (double)sc.mapped_bytes / 1048576.0, rate, copies);
	sd_notify(0, msg);
}

int
server_run(struct server *srv)
{
	char status[256], backend[16];
	struct loop_rings rings;

	snprintf(status, sizeof status, "READY=1\nSTATUS=serving on %s",
		 srv->socket_activated ? "the socket systemd passed" : srv->cfg.socket_path);
	sd_notify(0, status);
	if (getenv("NOTIFY_SOCKET") != NULL) {
		struct timeval tv = { 5, 0 };

		if (sd_watchdog_enabled(0, &srv->watchdog_usec) <= 0)
			srv->watchdog_usec = 0;
		if (srv->watchdog_usec > 0 && srv->watchdog_usec / 2 < 5000000u) {
			tv.tv_sec = (time_t)(srv->watchdog_usec / 2 / 1000000u);
			tv.tv_usec = (long)(srv->watchdog_usec / 2 % 1000000u);
		}
		srv->ev_status = event_new(srv->base, -1, EV_PERSIST, server_status_cb, srv);
		if (srv->ev_status == NULL || event_add(srv->ev_status, &tv) < 0)
			log_warn("cannot schedule watchdog and status updates to systemd");
	}
	log_notice("hotmapd %s ready on %s (backend %s, %zu root%s)", PACKAGE_VERSION,
		   srv->socket_activated ? "the socket systemd passed" : srv->cfg.socket_path,
		   conf_value_text(&srv->cfg, HM_KEY_BACKEND, backend, sizeof backend),
		   srv->cfg.roots.n, srv->cfg.roots.n == 1 ? "" : "s");
	rings = (struct loop_rings){
		.work = server_rings_work,
		.sessions = server_rings_sessions,
		.poll_us = server_rings_poll_us,
		.poll_all = server_rings_poll_all,
		.set_idle = server_rings_set_idle,
		.arg = srv,
	};
	return loop_run(srv->base, &rings);
}

void
server_fini(struct server *srv)
{
	/* Jobs first: their completions still answer (or free) sessions;
	 * a job in steps (a warm of a huge file) takes no more of them. */
	srv->stopping = true;
	workers_free(srv->workers);
	srv->workers = NULL;
	while (srv->sessions != NULL)
		session_free(srv->sessions);
	server_listen_close(srv);
	if (srv->ev_status != NULL)
		event_free(srv->ev_status);
	if (srv->ev_sweep != NULL)
		event_free(srv->ev_sweep);
	if (srv->ev_watch != NULL)
		event_free(srv->ev_watch);
	server_signals_stop(srv);
	direct_table_close(&srv->table, &srv->direct, srv->cache);
	direct_registry_fini(&srv->direct);
	srv->cache = file_cache_free(srv->cache);
	/* After every session and entry: each handed its descriptors over. */
	closer_stop(SERVER_CLOSER_STOP_MS);
	conf_clear(&srv->cfg);
	free(srv->uids);
	if (srv->base != NULL)
		event_base_free(srv->base);
	memset(srv, 0, sizeof *srv);
	srv->table.fd = -1;
	srv->listen_fd = -1;
}
