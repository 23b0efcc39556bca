/*
 * log.h - hotmapd's log: one line per event on stderr.
 *
 * Only the daemon's main program and its service layer log; the storage
 * core and libhotmap never do.  Under systemd (JOURNAL_STREAM set) each
 * line carries a <N> syslog priority prefix so the journal keeps levels.
 */
#ifndef HOTMAP_LOG_H
#define HOTMAP_LOG_H

#include <syslog.h>

/* LOG_ERR .. LOG_DEBUG; lines above the level are dropped. */
void log_set_level(int level);

void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...)	log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...)	log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...)	log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...)	log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)	log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
