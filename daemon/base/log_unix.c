/* SPDX-License-Identifier: MIT */
/*
 * log.c - see log.h.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "daemon/base/log.h"

enum log_target { LOG_TO_STDERR, LOG_TO_SYSLOG, LOG_TO_FILE };

static int log_level = LOG_NOTICE;
static int log_journal = -1;	/* -1: not yet known */

/* Set on the main thread; read by any thread that logs (workers do). */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static enum log_target log_target = LOG_TO_STDERR;
static bool log_detached;
static bool log_also_stderr;	/* until log_ready */
static int log_fd = -1;		/* LOG_TO_FILE */
static char *log_path;

static const char *const log_names[] = {
	"emerg", "alert", "crit", "error", "warning", "notice", "info", "debug"
};

void
log_set_level(int level)
{
	log_level = level;
}

static int
log_file_open(const char *path)
{
	/* 0640: a log may name files and clients that others should not
	 * see.  O_APPEND: one write per line never interleaves with
	 * another writer's, and logrotate's copytruncate keeps working. */
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);

	return fd < 0 ? -errno : fd;
}

/* The file (or syslog, or stderr) as path says; called with the lock. */
static int
log_switch(const char *path)
{
	char *copy = NULL;
	int fd;

	if (path != NULL) {
		fd = log_file_open(path);
		if (fd < 0)
			return fd;
		copy = strdup(path);
		if (copy == NULL) {
			close(fd);
			return -ENOMEM;
		}
		if (log_fd >= 0) {
			/* the descriptor's number stays: a line being
			 * written now goes to the old file or the new */
			if (dup3(fd, log_fd, O_CLOEXEC) < 0) {
				int e = errno;

				close(fd);
				free(copy);
				return -e;
			}
			close(fd);
		} else {
			log_fd = fd;
		}
		free(log_path);
		log_path = copy;
		log_target = LOG_TO_FILE;
		return 0;
	}
	if (log_fd >= 0) {
		close(log_fd);
		log_fd = -1;
	}
	free(log_path);
	log_path = NULL;
	if (log_detached) {
		/* LOG_NDELAY: connected now, before privileges are dropped
		 * or /dev/log is out of reach */
		openlog("hotmapd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
		log_target = LOG_TO_SYSLOG;
	} else {
		log_target = LOG_TO_STDERR;
	}
	return 0;
}

int
log_open(const char *path, bool detached)
{
	int rc;

	pthread_mutex_lock(&log_lock);
	log_detached = detached;
	rc = log_switch(path);
	log_also_stderr = log_target != LOG_TO_STDERR;
	pthread_mutex_unlock(&log_lock);
	return rc;
}

void
log_ready(void)
{
	pthread_mutex_lock(&log_lock);
	log_also_stderr = false;
	pthread_mutex_unlock(&log_lock);
}

int
log_reopen(const char *path)
{
	int rc;

	pthread_mutex_lock(&log_lock);
	rc = log_switch(path);
	pthread_mutex_unlock(&log_lock);
	if (rc < 0)
		log_warn("cannot open the log file %s: %s; logging on where it went", path,
			 strerror(-rc));
	return rc;
}

/* "2026-12-01T20:50:12.345+01:00": ISO 8601, local time with its offset. */
static void
log_timestamp(char *buf, size_t len)
{
	struct timeval tv;
	struct tm tm;
	char date[32], zone[8];

	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
	if (strftime(zone, sizeof zone, "%z", &tm) != 5)
		snprintf(zone, sizeof zone, "+0000");
	snprintf(buf, len, "%.19s.%03u%.3s:%.2s", date, (unsigned)(tv.tv_usec / 1000) % 1000u, zone,
		 zone + 3);
}

static void
log_write_file(int level, const char *line)
{
	char ts[48], buf[1200];
	int n;

	log_timestamp(ts, sizeof ts);
	n = snprintf(buf, sizeof buf, "%s hotmapd[%ld]: %s: %s\n", ts, (long)getpid(),
		     log_names[level & 7], line);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof buf) {
		n = sizeof buf - 1;
		buf[n - 1] = '\n';
	}
	/* A failed log line has nowhere to be reported. */
	if (write(log_fd, buf, (size_t)n) < 0)
		return;
}

void
log_msg(int level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	if (level > log_level)
		return;
	if (log_journal < 0)
		log_journal = getenv("JOURNAL_STREAM") != NULL;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&log_lock);
	if (log_target == LOG_TO_FILE)
		log_write_file(level, line);
	else if (log_target == LOG_TO_SYSLOG)
		syslog(level, "%s", line);
	/* One fprintf per line so concurrent lines do not interleave. */
	if (log_target == LOG_TO_STDERR || log_also_stderr) {
		if (log_journal)
			fprintf(stderr, "<%d>%s\n", level, line);
		else
			fprintf(stderr, "hotmapd: %s: %s\n", log_names[level & 7], line);
	}
	pthread_mutex_unlock(&log_lock);
}
