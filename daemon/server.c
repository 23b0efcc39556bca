/*
 * server.c - listener, signals, reload and systemd status of hotmapd
 * (see server.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/closer.h"
#include "daemon/log.h"
#include "daemon/loop.h"
#include "daemon/monotime.h"
#include "daemon/sd.h"
#include "daemon/server.h"
#include "daemon/session.h"
#include "daemon/workers.h"

#define SERVER_BACKLOG		128
#define SERVER_ACCEPT_RETRY_S	1
/* How long shutdown waits for closes still queued (a FUSE server may never
 * answer one; the exit closes the rest). */
#define SERVER_CLOSER_STOP_MS	5000

static void
server_accept_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;
	struct timeval tv = { SERVER_ACCEPT_RETRY_S, 0 };
	int i;

	(void)what;
	/* A bounded batch per wake-up keeps one flood from starving the loop. */
	for (i = 0; i < 64; i++) {
		int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (c < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				/* Out of descriptors: stop accepting for a
				 * second instead of spinning; clients wait in
				 * the backlog and those connected go on. */
				log_warn("accept: %s; pausing new connections for %d s",
					 strerror(errno), SERVER_ACCEPT_RETRY_S);
				srv->counters.accept_backoffs++;
				event_del(srv->ev_accept);
				evtimer_add(srv->ev_accept_retry, &tv);
			} else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
				   errno != ECONNABORTED) {
				log_warn("accept: %s", strerror(errno));
			}
			return;
		}
		if (session_new(srv, c) < 0)
			log_warn("accept: out of memory for a new client");
	}
}

static void
server_accept_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	(void)fd;
	(void)what;
	event_add(srv->ev_accept, NULL);
}

static void
server_signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;

	(void)what;
	if (sig == SIGHUP)
		server_reload(srv);
	else
		server_stop(srv, sig == SIGTERM ? "SIGTERM" : "SIGINT");
}

void
server_self(struct server *srv)
{
	struct peer_ident self;

	if (peer_ident_self(&self) == 0) {
		srv->uid = self.uid;
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
	};

	/* a lowered budget drops what it can at once, readers permitting */
	file_cache_set_limits(srv->cache, &lim);
	if (!c->direct_reads && direct_revoke_file(&srv->direct, true, 0, 0) > 0)
		log_info("direct-reads is off: every grant revoked");
	if (c->poll_us >= 0)
		srv->poll_us = (unsigned)c->poll_us;
	else
		srv->poll_us = sysconf(_SC_NPROCESSORS_ONLN) >= 4 ? HM_CONFIG_POLL_US_AUTO : 0;
}

static void
server_watch_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	(void)fd;
	(void)what;
	file_cache_notice(srv->cache);
}

/* A lease broke (or the queue of real-time signals overflowed into
 * SIGIO): revoke the grants on the files someone waits to write. */
static void
server_lease_cb(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;
	unsigned n;

	(void)sig;
	(void)what;
	n = direct_check_leases(&srv->direct);
	if (n > 0)
		log_debug("direct reads: %u grants revoked, a writer waits", n);
}

static void
server_sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	(void)fd;
	(void)what;
	file_cache_sweep(srv->cache, file_cache_clock_ms());
}

int
server_reload(struct server *srv)
{
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
		for (i = 0; i < errs.n; i++)
			log_err("reload: %s", errs.v[i]);
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
			log_warn("reload: %s changed from '%s' to '%s': needs a restart; keeping '%s'",
				 conf_key_name((enum hm_config_key)k), was, now, was);
			keep_restart_value(&next, cur, (enum hm_config_key)k);
		} else {
			log_notice("reload: %s = %s (was %s)", conf_key_name((enum hm_config_key)k),
				   now, was);
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
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	size_t i;

	memset(srv, 0, sizeof *srv);
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
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		srv->nworkers = n < 2 ? 2 : n > 8 ? 8 : (unsigned)n;
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
	srv->direct.sig = DIRECT_LEASE_SIGNAL;
	srv->ev_lease[0] = evsignal_new(srv->base, DIRECT_LEASE_SIGNAL, server_lease_cb, srv);
	srv->ev_lease[1] = evsignal_new(srv->base, SIGIO, server_lease_cb, srv);
	for (i = 0; i < 2; i++) {
		if (srv->ev_lease[i] == NULL || event_add(srv->ev_lease[i], NULL) < 0) {
			snprintf(err, errlen, "cannot handle the lease signals");
			return -ENOMEM;
		}
	}
	for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		srv->ev_signals[i] = evsignal_new(srv->base, sigs[i], server_signal_cb, srv);
		if (srv->ev_signals[i] == NULL || event_add(srv->ev_signals[i], NULL) < 0) {
			snprintf(err, errlen, "cannot handle signal %d", sigs[i]);
			return -ENOMEM;
		}
	}
	return 0;
}

/*
 * Whether dir, and every directory above it, is fit to hold the socket, as
 * sshd's StrictModes asks of a user's files: owned by root or by hotmapd's
 * own uid, and writable by nobody else unless sticky (/tmp).  In a
 * directory another user owns or may write, she can take the socket's
 * name first or swap it for her own daemon's while we run, and clients
 * would hand her their descriptors.  0, or -EPERM with the reason in err.
 */
static int
socket_dir_check(const char *dir, uid_t self, char *err, size_t errlen)
{
	char real[PATH_MAX], *slash;
	const char *which;
	struct stat st;
	bool first = true;
	int e;

	if (realpath(dir, real) == NULL) {
		e = errno;
		snprintf(err, errlen, "socket directory %s: %s", dir, strerror(e));
		return -e;
	}
	for (;;) {
		if (stat(real, &st) < 0) {
			e = errno;
			snprintf(err, errlen, "socket directory %s: %s: %s", dir, real, strerror(e));
			return -e;
		}
		which = first ? "it" : real;
		first = false;
		if (st.st_uid != 0 && st.st_uid != self) {
			snprintf(err, errlen, "refusing to bind in %s: %s%s is owned by uid %u (mode %04o), "
				 "neither root nor hotmapd's uid %u, and that user could replace the "
				 "socket; use a directory only root or uid %u can write",
				 dir, which, which != real ? "" : ", above it,", (unsigned)st.st_uid,
				 (unsigned)(st.st_mode & 07777), (unsigned)self, (unsigned)self);
			return -EPERM;
		}
		if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
			snprintf(err, errlen, "refusing to bind in %s: %s%s is writable by %s (mode %04o, "
				 "owner uid %u) without the sticky bit, so others could replace the "
				 "socket; use a directory only root or uid %u can write",
				 dir, which, which != real ? "" : ", above it,",
				 st.st_mode & S_IWOTH ? "others" : "its group",
				 (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, (unsigned)self);
			return -EPERM;
		}
		slash = strrchr(real, '/');
		if (slash == NULL || real[1] == '\0')
			return 0;
		slash[slash == real ? 1 : 0] = '\0';
	}
}

/*
 * Makes the socket's directory if it is missing (0755: other users'
 * clients must reach the socket, none may write there, whatever the
 * umask), then holds it to socket_dir_check.
 */
static int
socket_dir_prepare(const struct server *srv, const char *path, char *err, size_t errlen)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	snprintf(dir, sizeof dir, "%s", path);
	slash = strrchr(dir, '/');
	if (slash == NULL)
		return socket_dir_check(".", srv->uid, err, errlen);
	if (slash == dir)
		return socket_dir_check("/", srv->uid, err, errlen);
	*slash = '\0';
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		int e = errno;

		snprintf(err, errlen, "cannot create %s: %s", dir, strerror(e));
		return -e;
	}
	return socket_dir_check(dir, srv->uid, err, errlen);
}

/* Another daemon answering on path?  A stale socket file is removed. */
static int
remove_stale_socket(const struct sockaddr_un *sa, char *err, size_t errlen)
{
	struct stat st;
	int fd, rc;

	if (lstat(sa->sun_path, &st) < 0)
		return 0;
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "%s exists and is not a socket", sa->sun_path);
		return -EEXIST;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = connect(fd, (const struct sockaddr *)sa, sizeof *sa);
	close(fd);
	if (rc == 0) {
		snprintf(err, errlen, "another hotmapd is listening on %s", sa->sun_path);
		return -EADDRINUSE;
	}
	if (unlink(sa->sun_path) < 0 && errno != ENOENT) {
		int e = errno;

		snprintf(err, errlen, "cannot remove stale socket %s: %s", sa->sun_path, strerror(e));
		return -e;
	}
	return 0;
}

static int
server_bind(struct server *srv, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = srv->cfg.socket_path;
	int fd, rc, e;

	if (strlen(path) >= sizeof sa.sun_path) {
		snprintf(err, errlen, "socket path too long (%zu bytes, at most %zu): %s",
			 strlen(path), sizeof sa.sun_path - 1, path);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	/* Before anything at path is removed or bound. */
	rc = socket_dir_prepare(srv, path, err, errlen);
	if (rc < 0)
		return rc;
	rc = remove_stale_socket(&sa, err, errlen);
	if (rc < 0)
		return rc;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		e = errno;
		snprintf(err, errlen, "socket: %s", strerror(e));
		return -e;
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		e = errno;
		snprintf(err, errlen, "bind %s: %s", path, strerror(e));
		close(fd);
		return -e;
	}
	srv->socket_bound = true;
	/* Before listen, so that no client connects to a socket whose mode or
	 * group are not yet the configured ones.  The default 0666 lets anyone
	 * who can reach the socket connect: opening by descriptor only ever
	 * serves what the client could read itself. */
	if (chmod(path, srv->cfg.socket_mode) < 0) {
		e = errno;
		snprintf(err, errlen, "socket-mode: cannot chmod %s to %04o: %s", path,
			 srv->cfg.socket_mode, strerror(e));
		close(fd);
		return -e;
	}
	if (srv->cfg.socket_group != (gid_t)-1 && chown(path, (uid_t)-1, srv->cfg.socket_group) < 0) {
		e = errno;
		snprintf(err, errlen, "socket-group: cannot give %s to group %u: %s%s", path,
			 (unsigned)srv->cfg.socket_group, strerror(e),
			 e == EPERM ? " (hotmapd must run as root or be a member of the group)" : "");
		close(fd);
		return -e;
	}
	if (listen(fd, SERVER_BACKLOG) < 0) {
		e = errno;
		snprintf(err, errlen, "listen on %s: %s", path, strerror(e));
		close(fd);
		return -e;
	}
	srv->listen_fd = fd;
	return 0;
}

/* A notice for a socket key set by the operator that the socket systemd
 * passed overrides. */
static void
socket_key_ignored(const struct server *srv, enum hm_config_key key, const char *was,
		   const char *now, const char *unit_key)
{
	char src[PATH_MAX + 32];

	if (srv->cfg.source[key].origin == HM_ORIGIN_DEFAULT || strcmp(was, now) == 0)
		return;
	log_notice("%s: %s %s does not apply: the socket systemd passed has %s "
		   "(the socket unit sets it: %s)",
		   conf_source_text(&srv->cfg, srv->cfg.source[key], src, sizeof src),
		   conf_key_name(key), was, now, unit_key);
}

/*
 * Under socket activation the socket's path, mode and group are the
 * unit's (ListenStream=, SocketMode=, SocketGroup=), not the
 * configuration's: what is in force goes into the configuration, with
 * systemd as its source, so that hotmapctl config tells the truth, and
 * each setting that cannot apply says so.
 */
static void
server_adopt_socket(struct server *srv)
{
	struct sockaddr_un sa;
	socklen_t len = sizeof sa;
	char was[PATH_MAX], now[PATH_MAX];
	struct stat st;
	char *path;

	memset(&sa, 0, sizeof sa);
	if (getsockname(srv->listen_fd, (struct sockaddr *)&sa, &len) < 0 ||
	    len <= offsetof(struct sockaddr_un, sun_path) || sa.sun_path[0] == '\0')
		return;	/* unnamed or abstract: nothing on disk to describe */
	sa.sun_path[sizeof sa.sun_path - 1] = '\0';
	socket_key_ignored(srv, HM_KEY_SOCKET, srv->cfg.socket_path != NULL ? srv->cfg.socket_path : "",
			   sa.sun_path, "ListenStream=");
	path = strdup(sa.sun_path);
	if (path != NULL) {
		free(srv->cfg.socket_path);
		srv->cfg.socket_path = path;
		srv->cfg.source[HM_KEY_SOCKET] = (struct hm_config_source){ HM_ORIGIN_SYSTEMD, 0 };
	}
	if (stat(sa.sun_path, &st) < 0)
		return;
	snprintf(was, sizeof was, "%04o", srv->cfg.socket_mode);
	snprintf(now, sizeof now, "%04o", (unsigned)(st.st_mode & 07777));
	socket_key_ignored(srv, HM_KEY_SOCKET_MODE, was, now, "SocketMode=");
	srv->cfg.socket_mode = st.st_mode & 07777;
	srv->cfg.source[HM_KEY_SOCKET_MODE] = (struct hm_config_source){ HM_ORIGIN_SYSTEMD, 0 };
	snprintf(was, sizeof was, "%u", (unsigned)srv->cfg.socket_group);
	snprintf(now, sizeof now, "%u", (unsigned)st.st_gid);
	if (srv->cfg.socket_group != (gid_t)-1)
		socket_key_ignored(srv, HM_KEY_SOCKET_GROUP, was, now, "SocketGroup=");
	srv->cfg.socket_group = st.st_gid;
	srv->cfg.source[HM_KEY_SOCKET_GROUP] = (struct hm_config_source){ HM_ORIGIN_SYSTEMD, 0 };
}

int
server_listen(struct server *srv, char *err, size_t errlen)
{
	int n = sd_listen_fds(1);
	int rc;

	if (n > 1) {
		snprintf(err, errlen, "systemd passed %d sockets; hotmapd takes one", n);
		return -EINVAL;
	}
	if (n == 1) {
		if (sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_STREAM, 1, NULL, 0) <= 0) {
			snprintf(err, errlen, "the socket systemd passed is not a listening Unix stream socket");
			return -EINVAL;
		}
		srv->listen_fd = SD_LISTEN_FDS_START;
		srv->socket_activated = true;
		server_adopt_socket(srv);
		fcntl(srv->listen_fd, F_SETFD, FD_CLOEXEC);
		fcntl(srv->listen_fd, F_SETFL, fcntl(srv->listen_fd, F_GETFL) | O_NONBLOCK);
	} else {
		rc = server_bind(srv, err, errlen);
		if (rc < 0)
			return rc;
	}
	srv->ev_accept = event_new(srv->base, srv->listen_fd, EV_READ | EV_PERSIST,
				   server_accept_cb, srv);
	srv->ev_accept_retry = evtimer_new(srv->base, server_accept_retry_cb, srv);
	if (srv->ev_accept == NULL || srv->ev_accept_retry == NULL ||
	    event_add(srv->ev_accept, NULL) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
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
	char msg[256];
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
	snprintf(msg, sizeof msg,
		 "%sSTATUS=clients %llu, files %llu, mapped %.1f MiB, %.0f requests/s",
		 srv->watchdog_usec > 0 ? "WATCHDOG=1\n" : "",
		 (unsigned long long)srv->counters.clients, (unsigned long long)sc.entries,
		 (double)sc.mapped_bytes / 1048576.0, rate);
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
			tv.tv_usec = (suseconds_t)(srv->watchdog_usec / 2 % 1000000u);
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
	size_t i;

	/* Jobs first: their completions still answer (or free) sessions;
	 * a job in steps (a warm of a huge file) takes no more of them. */
	srv->stopping = true;
	workers_free(srv->workers);
	srv->workers = NULL;
	while (srv->sessions != NULL)
		session_free(srv->sessions);
	if (srv->ev_accept != NULL)
		event_free(srv->ev_accept);
	if (srv->ev_accept_retry != NULL)
		event_free(srv->ev_accept_retry);
	if (srv->ev_status != NULL)
		event_free(srv->ev_status);
	if (srv->ev_sweep != NULL)
		event_free(srv->ev_sweep);
	if (srv->ev_watch != NULL)
		event_free(srv->ev_watch);
	for (i = 0; i < sizeof srv->ev_signals / sizeof srv->ev_signals[0]; i++)
		if (srv->ev_signals[i] != NULL)
			event_free(srv->ev_signals[i]);
	for (i = 0; i < sizeof srv->ev_lease / sizeof srv->ev_lease[0]; i++)
		if (srv->ev_lease[i] != NULL)
			event_free(srv->ev_lease[i]);
	if (srv->listen_fd >= 0 && !srv->socket_activated)
		close(srv->listen_fd);
	if (srv->socket_bound)
		unlink(srv->cfg.socket_path);
	srv->cache = file_cache_free(srv->cache);
	/* After every session and entry: each handed its descriptors over. */
	closer_stop(SERVER_CLOSER_STOP_MS);
	conf_clear(&srv->cfg);
	free(srv->uids);
	if (srv->base != NULL)
		event_base_free(srv->base);
	memset(srv, 0, sizeof *srv);
	srv->listen_fd = -1;
}
