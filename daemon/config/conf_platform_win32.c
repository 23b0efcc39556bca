/* SPDX-License-Identifier: MIT */
/*
 * conf_platform_win32.c - conf_platform.h on Windows.  Windows builds
 * only; conf_platform_unix.c is the POSIX half.
 *
 * Users and groups: hotmapd on Windows neither drops privileges to a user
 * nor gives its pipe to a group (the pipe's security descriptor decides
 * who connects, docs/windows.md section 6), and peers are SIDs, not uids.
 * So every key that names a user or a group is a configuration error
 * there, never silently ignored.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/config/conf_platform.h"

FILE *
conf_platform_fopen(const char *path)
{
	/* text mode: "\r\n" lines read as "\n" */
	return fopen(path, "r");
}

/* getline(3), which the Windows C runtime lacks: fgets until a newline or
 * the end of the file. */
ssize_t
conf_platform_getline(char **buf, size_t *cap, FILE *f)
{
	size_t len = 0;

	if (*buf == NULL || *cap < 128) {
		char *b = realloc(*buf, 128);

		if (b == NULL) {
			errno = ENOMEM;
			return -1;
		}
		*buf = b;
		*cap = 128;
	}
	for (;;) {
		if (fgets(*buf + len, (int)(*cap - len > 1 << 30 ? 1 << 30 : *cap - len), f) == NULL)
			break;
		len += strlen(*buf + len);
		if (len > 0 && (*buf)[len - 1] == '\n')
			return (ssize_t)len;
		if (len + 1 >= *cap) {
			char *b = realloc(*buf, *cap * 2);

			if (b == NULL) {
				errno = ENOMEM;
				return -1;
			}
			*buf = b;
			*cap *= 2;
		}
	}
	return len > 0 && !ferror(f) ? (ssize_t)len : -1;
}

const char *
conf_platform_no_ids(void)
{
	return "users and groups mean nothing to hotmapd on Windows "
	       "(the pipe's security descriptor decides who may connect)";
}

int
conf_platform_lookup_id(const char *name, bool group, unsigned *out)
{
	(void)name;
	(void)group;
	(void)out;
	return -EOPNOTSUPP;	/* never reached: conf_platform_no_ids() */
}

/* A pipe name: \\.\pipe\ and at most 256 characters in all. */
size_t
conf_platform_socket_max(void)
{
	return 256;
}

/* C:\dir or C:/dir, or \\server\share (UNC) */
bool
conf_platform_path_absolute(const char *path)
{
	if (isalpha((unsigned char)path[0]) && path[1] == ':' && (path[2] == '\\' || path[2] == '/'))
		return true;
	return (path[0] == '\\' || path[0] == '/') && (path[1] == '\\' || path[1] == '/');
}
