/* SPDX-License-Identifier: MIT */
/*
 * endpoint_win32.c - the default endpoint on Windows (see endpoint.h):
 * one named pipe for every user (docs/windows.md, section 6).  Who may
 * use it is the pipe's security descriptor's business, not the name's,
 * so there is no per-user default as under $XDG_RUNTIME_DIR.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <windows.h>

#include "proto/endpoint.h"

#define HM_DEFAULT_PIPE "\\\\.\\pipe\\hotmap"

int
endpoint_default(char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s", HM_DEFAULT_PIPE);

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

const char *
endpoint_fallback(void)
{
	return NULL;
}

int
endpoint_listening(const char *path)
{
	if (strlen(path) >= ENDPOINT_MAX)
		return -ENAMETOOLONG;
	/* 1 ms: 0 would mean the pipe's own default wait.  Instances that are
	 * all busy (a daemon that stopped accepting) still listen. */
	if (WaitNamedPipeA(path, 1))
		return 1;
	switch (GetLastError()) {
	case ERROR_SEM_TIMEOUT:
		return 1;
	case ERROR_FILE_NOT_FOUND:
	case ERROR_PATH_NOT_FOUND:
		return 0;
	case ERROR_BAD_PATHNAME:
	case ERROR_INVALID_NAME:
		return -EINVAL;
	default:
		return -EIO;
	}
}
