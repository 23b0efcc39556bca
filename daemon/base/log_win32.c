/* SPDX-License-Identifier: MIT */
/*
 * log_win32.c - log.h on Windows: stderr (the console), or a file opened
 * for appending, with the same line formats as log.c.  No syslog: a
 * service's lines go to the Event Log once hotmapd runs as one
 * (docs/windows.md, section 8); until then "detached" means nothing.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <windows.h>

#include "daemon/base/log.h"

static int log_level = LOG_NOTICE;
static CRITICAL_SECTION log_lock;
static INIT_ONCE log_once = INIT_ONCE_STATIC_INIT;
static HANDLE log_file = INVALID_HANDLE_VALUE;
static bool log_also_stderr;	/* until log_ready */

static const char *const log_names[] = {
	"emerg", "alert", "crit", "error", "warning", "notice", "info", "debug"
};

static BOOL CALLBACK
log_init(PINIT_ONCE once, void *arg, void **ctx)
{
	(void)once;
	(void)arg;
	(void)ctx;
	InitializeCriticalSection(&log_lock);
	return TRUE;
}

static void
log_enter(void)
{
	InitOnceExecuteOnce(&log_once, log_init, NULL, NULL);
	EnterCriticalSection(&log_lock);
}

void
log_set_level(int level)
{
	log_level = level;
}

/* Appending, shared so that the file can be read (and renamed by a
 * rotation) while hotmapd writes it.  Called with the lock. */
static int
log_switch(const char *path)
{
	HANDLE h = INVALID_HANDLE_VALUE;

	if (path != NULL) {
		h = CreateFileA(path, FILE_APPEND_DATA, FILE_SHARE_READ | FILE_SHARE_WRITE |
				FILE_SHARE_DELETE, NULL, OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
		if (h == INVALID_HANDLE_VALUE)
			return GetLastError() == ERROR_ACCESS_DENIED ? -EACCES : -ENOENT;
	}
	if (log_file != INVALID_HANDLE_VALUE)
		CloseHandle(log_file);
	log_file = h;
	return 0;
}

int
log_open(const char *path, bool detached)
{
	int rc;

	(void)detached;
	log_enter();
	rc = log_switch(path);
	log_also_stderr = log_file != INVALID_HANDLE_VALUE;
	LeaveCriticalSection(&log_lock);
	return rc;
}

void
log_ready(void)
{
	log_enter();
	log_also_stderr = false;
	LeaveCriticalSection(&log_lock);
}

int
log_reopen(const char *path)
{
	int rc;

	log_enter();
	rc = log_switch(path);
	LeaveCriticalSection(&log_lock);
	if (rc < 0)
		log_warn("cannot open the log file %s: %s; logging on where it went", path,
			 strerror(-rc));
	return rc;
}

/* "2026-12-01T20:50:12.345+01:00": ISO 8601, local time with its offset,
 * as log.c writes it. */
static void
log_timestamp(char *buf, size_t len)
{
	SYSTEMTIME st;
	TIME_ZONE_INFORMATION tz;
	DWORD which = GetTimeZoneInformation(&tz);
	long bias = tz.Bias + (which == TIME_ZONE_ID_DAYLIGHT ? tz.DaylightBias :
			       which == TIME_ZONE_ID_STANDARD ? tz.StandardBias : 0);
	long east = -bias;

	GetLocalTime(&st);
	snprintf(buf, len, "%04u-%02u-%02uT%02u:%02u:%02u.%03u%c%02ld:%02ld", st.wYear, st.wMonth,
		 st.wDay, st.wHour, st.wMinute, st.wSecond, st.wMilliseconds, east < 0 ? '-' : '+',
		 labs(east) / 60, labs(east) % 60);
}

void
log_msg(int level, const char *fmt, ...)
{
	char line[1024], buf[1200], ts[48];
	va_list ap;
	DWORD n;
	int len;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	log_enter();
	if (log_file != INVALID_HANDLE_VALUE) {
		log_timestamp(ts, sizeof ts);
		len = snprintf(buf, sizeof buf, "%s hotmapd[%lu]: %s: %s\r\n", ts,
			       GetCurrentProcessId(), log_names[level & 7], line);
		if (len > 0) {
			if ((size_t)len >= sizeof buf)
				len = sizeof buf - 1;
			/* a failed log line has nowhere to be reported */
			WriteFile(log_file, buf, (DWORD)len, &n, NULL);
		}
	}
	/* one fprintf per line so concurrent lines do not interleave */
	if (log_file == INVALID_HANDLE_VALUE || log_also_stderr)
		fprintf(stderr, "hotmapd: %s: %s\n", log_names[level & 7], line);
	LeaveCriticalSection(&log_lock);
}
