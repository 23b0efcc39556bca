/* SPDX-License-Identifier: MIT */
/*
 * conf_platform_unix.c - conf_platform.h on POSIX.
 */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "daemon/config/conf_platform.h"

FILE *
conf_platform_fopen(const char *path)
{
	return fopen(path, "re");
}

ssize_t
conf_platform_getline(char **buf, size_t *cap, FILE *f)
{
	return getline(buf, cap, f);
}

const char *
conf_platform_no_ids(void)
{
	return NULL;
}

/* The buffer grows while the entry does not fit: a group of a directory
 * service may have thousands of members. */
int
conf_platform_lookup_id(const char *name, bool group, unsigned *out)
{
	size_t len = 4096;
	char *buf = NULL, *b;
	int rc;

	for (;;) {
		struct passwd pw, *pres = NULL;
		struct group gr, *gres = NULL;

		b = realloc(buf, len);
		if (b == NULL) {
			free(buf);
			return -ENOMEM;
		}
		buf = b;
		rc = group ? getgrnam_r(name, &gr, buf, len, &gres) :
			     getpwnam_r(name, &pw, buf, len, &pres);
		if (gres != NULL || pres != NULL) {
			*out = gres != NULL ? gres->gr_gid : pres->pw_uid;
			free(buf);
			return 0;
		}
		if (rc != ERANGE || len >= (16u << 20))
			break;
		len *= 4;
	}
	free(buf);
	if (rc != 0 && rc != ENOENT && rc != ESRCH)
		return -rc;
	return -ENOENT;
}

size_t
conf_platform_socket_max(void)
{
	struct sockaddr_un sa;

	return sizeof sa.sun_path - 1;
}

bool
conf_platform_path_absolute(const char *path)
{
	return path[0] == '/';
}
