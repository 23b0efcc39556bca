/* SPDX-License-Identifier: MIT */
/*
 * server_win32.c - what stops hotmapd on Windows
 * (server_platform.h): Ctrl+C, Ctrl+Break and the console's close drain
 * and exit, as SIGTERM does on POSIX (docs/windows.md, section 8).  There
 * is no SIGHUP: a reload is hotmapctl's, or a service's PARAMCHANGE once
 * hotmapd runs as one.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include <windows.h>

#include <event2/event.h>

#include "daemon/service/server.h"
#include "daemon/service/server_platform.h"

/* The console's handler runs on a thread of its own: it only wakes the
 * loop, which stops the server. */
static struct event *control_ev;
static volatile LONG control_what = -1;
/* How long a closing console waits for the drain before Windows ends the
 * process anyway. */
#define CONTROL_CLOSE_WAIT_MS	5000
static HANDLE control_done;

static BOOL WINAPI
control_handler(DWORD what)
{
	if (control_ev == NULL)
		return FALSE;
	InterlockedExchange(&control_what, (LONG)what);
	event_active(control_ev, EV_READ, 0);
	/* the process ends when this returns for these: let the loop drain */
	if (what == CTRL_CLOSE_EVENT || what == CTRL_LOGOFF_EVENT || what == CTRL_SHUTDOWN_EVENT)
		WaitForSingleObject(control_done, CONTROL_CLOSE_WAIT_MS);
	return TRUE;
}

static void
control_cb(evutil_socket_t fd, short what, void *arg)
{
	LONG ctrl = InterlockedExchange(&control_what, -1);

	(void)fd;
	(void)what;
	server_stop(arg, ctrl == CTRL_C_EVENT ? "Ctrl+C" : ctrl == CTRL_BREAK_EVENT ?
		    "Ctrl+Break" : "the console closing");
}

int
server_signals_start(struct server *srv, char *err, size_t errlen)
{
	control_ev = event_new(srv->base, -1, 0, control_cb, srv);
	control_done = CreateEventW(NULL, TRUE, FALSE, NULL);
	if (control_ev == NULL || control_done == NULL ||
	    !SetConsoleCtrlHandler(control_handler, TRUE)) {
		snprintf(err, errlen, "cannot handle the console's Ctrl+C");
		return -ENOMEM;
	}
	return 0;
}

void
server_signals_stop(struct server *srv)
{
	(void)srv;
	SetConsoleCtrlHandler(control_handler, FALSE);
	if (control_done != NULL)
		SetEvent(control_done);
	if (control_ev != NULL)
		event_free(control_ev);
	control_ev = NULL;
}

unsigned
server_cpus(void)
{
	SYSTEM_INFO si;

	GetSystemInfo(&si);
	return si.dwNumberOfProcessors < 1 ? 1 : (unsigned)si.dwNumberOfProcessors;
}

uint64_t
server_memory(void)
{
	MEMORYSTATUSEX ms = { .dwLength = sizeof ms };

	return GlobalMemoryStatusEx(&ms) ? (uint64_t)ms.ullTotalPhys : 0;
}

uint64_t
server_descriptor_limit(void)
{
	return UINT64_MAX;	/* handles have no RLIMIT_NOFILE */
}
