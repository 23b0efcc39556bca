/* SPDX-License-Identifier: MIT */
/*
 * listen_unix.c - hotmapd's listener on a Unix socket (server_platform.h):
 * the socket systemd passed, or one bound at the configured path in a
 * directory fit for it; accepted connections become sessions.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/base/log.h"
#include "daemon/base/sd.h"
#include "daemon/service/server.h"
#include "daemon/service/server_platform.h"
#include "daemon/service/session.h"

#define SERVER_BACKLOG		128
#define SERVER_ACCEPT_RETRY_S	1

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

/* The table of granted files beside the socket (direct_table.h), once
 * the socket's path, mode and group are known, before the first client
 * can connect where we listen ourselves.  Without one, hotmapd serves as
 * before. */
static void
table_start(struct server *srv)
{
	char why[512];

	if (direct_table_open(&srv->table, srv->cfg.socket_path, srv->cfg.socket_mode,
			      srv->cfg.socket_group, srv->cfg.direct_table_s, why, sizeof why) < 0)
		log_warn("direct-table: %s; serving without a table of granted files", why);
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
	table_start(srv);
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
		table_start(srv);
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

void
server_listen_close(struct server *srv)
{
	if (srv->ev_accept != NULL)
		event_free(srv->ev_accept);
	srv->ev_accept = NULL;
	if (srv->ev_accept_retry != NULL)
		event_free(srv->ev_accept_retry);
	srv->ev_accept_retry = NULL;
	if (srv->listen_fd >= 0 && !srv->socket_activated)
		close(srv->listen_fd);
	srv->listen_fd = -1;
	if (srv->socket_bound)
		unlink(srv->cfg.socket_path);
	srv->socket_bound = false;
}
