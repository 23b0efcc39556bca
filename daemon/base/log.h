/* SPDX-License-Identifier: MIT */
/*
 * log.h - hotmapd's log: one line per event, to one of three places.
 *
 *   stderr  in the foreground without log-file (under systemd,
 *           JOURNAL_STREAM set, each line carries a <N> priority prefix
 *           so the journal keeps levels);
 *   syslog  once detached, without log-file (ident "hotmapd", LOG_PID,
 *           facility LOG_DAEMON);
 *   a file  with log-file: appended, one write(2) per line, each with an
 *           ISO 8601 timestamp; log_reopen (SIGHUP) opens the path again,
 *           so that logrotate can move the old file away.
 *
 * Until log_ready, lines meant for syslog or a file also go to stderr:
 * whoever started hotmapd sees why it failed to start.
 *
 * Only the daemon's main program and its service layer log; the storage
 * core and libhotmap never do.
 */
#ifndef HOTMAP_LOG_H
#define HOTMAP_LOG_H

#include <stdbool.h>

#include "daemon/base/platform.h"	/* HM_PRINTF */

#ifdef _WIN32
/*
 * Windows has no syslog.h.  The levels keep syslog's values (RFC 5424):
 * log-level, the <N> prefixes and conf_keys.c's name table index by them,
 * so they must mean the same number on every platform.
 */
#define LOG_EMERG	0
#define LOG_ALERT	1
#define LOG_CRIT	2
#define LOG_ERR		3
#define LOG_WARNING	4
#define LOG_NOTICE	5
#define LOG_INFO	6
#define LOG_DEBUG	7
#else
#include <syslog.h>
#endif

/* LOG_ERR .. LOG_DEBUG; lines above the level are dropped. */
void log_set_level(int level);

/*
 * Where lines go from now on: the file at path (absolute; NULL: none),
 * else syslog when detached, else stderr.  0, or a negative errno when
 * the file cannot be opened (the log stays on stderr).
 */
int log_open(const char *path, bool detached);
/* hotmapd is ready: stop copying lines to stderr. */
void log_ready(void);
/*
 * SIGHUP: opens path again (the same, or a new one the reloaded
 * configuration names; NULL: back to syslog or stderr).  On failure the
 * log goes on where it was, with a warning, and a negative errno.
 */
int log_reopen(const char *path);

void log_msg(int level, const char *fmt, ...) HM_PRINTF(2, 3);

#define log_err(...)	log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...)	log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...)	log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...)	log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)	log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
