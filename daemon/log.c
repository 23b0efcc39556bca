/*
 * log.c - see log.h.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon/log.h"

static int log_level = LOG_NOTICE;
static int log_journal = -1;	/* -1: not yet known */

void
log_set_level(int level)
{
	log_level = level;
}

void
log_msg(int level, const char *fmt, ...)
{
	static const char *const names[] = {
		"emerg", "alert", "crit", "error", "warning", "notice", "info", "debug"
	};
	char line[1024];
	va_list ap;

	if (level > log_level)
		return;
	if (log_journal < 0)
		log_journal = getenv("JOURNAL_STREAM") != NULL;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	/* One fprintf per line so concurrent lines do not interleave. */
	if (log_journal)
		fprintf(stderr, "<%d>%s\n", level, line);
	else
		fprintf(stderr, "hotmapd: %s: %s\n", names[level & 7], line);
}
