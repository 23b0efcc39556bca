/*
 * endpoint_win32.c - the default endpoint on Windows (see endpoint.h):
 * one named pipe for every user (docs/windows.md, section 6).  Who may
 * use it is the pipe's security descriptor's business, not the name's,
 * so there is no per-user default as under $XDG_RUNTIME_DIR.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>

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
