/* SPDX-License-Identifier: MIT */
/*
 * daemonize_win32.c - daemonize.h on Windows: no fork and no setsid, so
 * hotmapd runs in the foreground (a service comes later: docs/windows.md,
 * section 8); the pid file is held by opening it without sharing, where
 * POSIX holds a flock; and the process set-up is Winsock and libevent's
 * Windows threads.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <winsock2.h>
#include <windows.h>

#include <event2/thread.h>

#include "daemon/process/daemonize.h"

int
daemonize_start(int *ready_fd, char *err, size_t errlen)
{
	*ready_fd = -1;
	snprintf(err, errlen, "cannot daemonize: hotmapd on Windows runs in the foreground "
		 "(--foreground; a Windows service is not there yet)");
	return -ENOTSUP;
}

void
daemonize_ready(int ready_fd)
{
	(void)ready_fd;	/* never detached: nobody waits */
}

void
daemonize_stdio_open(void)
{
	/* a console program's standard handles are the console's, or none
	 * (then writes to them fail and nothing else takes their place) */
}

int
daemonize_path_absolute(const char *path)
{
	/* C:\..., C:/..., \\server\share and \\.\pipe\... */
	return (((path[0] >= 'A' && path[0] <= 'Z') || (path[0] >= 'a' && path[0] <= 'z')) &&
		path[1] == ':' && (path[2] == '\\' || path[2] == '/')) ||
	       (path[0] == '\\' && path[1] == '\\');
}

char *
daemonize_abspath(const char *path)
{
	if (daemonize_path_absolute(path))
		return strdup(path);
	return _fullpath(NULL, path, 0);
}

int
daemonize_process_setup(char *err, size_t errlen, char *warn, size_t warnlen)
{
	WSADATA wsa;
	int rc;

	warn[0] = '\0';
	(void)warnlen;
	/* libevent's cross-thread wake-up is a loopback socket pair: Winsock
	 * first, then the locks, then (in server_init) the base */
	rc = WSAStartup(MAKEWORD(2, 2), &wsa);
	if (rc != 0) {
		snprintf(err, errlen, "WSAStartup: error %d", rc);
		return -EIO;
	}
	if (evthread_use_windows_threads() < 0) {
		snprintf(err, errlen, "cannot make libevent thread-safe (evthread_use_windows_threads)");
		return -ENOMEM;
	}
	return 0;
}

void
daemonize_user_text(char *buf, size_t len)
{
	char name[256];
	DWORD n = sizeof name;

	snprintf(buf, len, "%s", GetUserNameA(name, &n) ? name : "(unknown user)");
}

int
pidfile_open(struct pidfile *pf, const char *path, char *err, size_t errlen)
{
	HANDLE h;

	pf->fd = -1;
	pf->handle = NULL;
	pf->path = strdup(path);
	if (pf->path == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* no sharing: a second hotmapd cannot open it while this one lives */
	h = CreateFileA(path, GENERIC_WRITE, 0, NULL, OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
	if (h == INVALID_HANDLE_VALUE) {
		DWORD e = GetLastError();

		snprintf(err, errlen, "pid-file %s: %s", path, e == ERROR_SHARING_VIOLATION ?
			 "another hotmapd holds it" : "cannot open it");
		free(pf->path);
		pf->path = NULL;
		return e == ERROR_SHARING_VIOLATION ? -EEXIST : -EACCES;
	}
	SetEndOfFile(h);
	pf->handle = h;
	return 0;
}

int
pidfile_write(struct pidfile *pf)
{
	char buf[32];
	DWORD n;
	int len;

	if (pf->handle == NULL)
		return 0;
	len = snprintf(buf, sizeof buf, "%lu\n", GetCurrentProcessId());
	if (!WriteFile(pf->handle, buf, (DWORD)len, &n, NULL) || n != (DWORD)len)
		return -EIO;
	return 0;
}

void
pidfile_close(struct pidfile *pf)
{
	if (pf->handle != NULL) {
		CloseHandle(pf->handle);
		DeleteFileA(pf->path);
	}
	free(pf->path);
	pf->path = NULL;
	pf->handle = NULL;
}
