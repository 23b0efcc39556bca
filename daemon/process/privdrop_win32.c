/* SPDX-License-Identifier: MIT */
/*
 * privdrop_win32.c - privdrop.h on Windows: a process cannot become
 * another user there.  hotmapd runs as the account that starts it (a
 * service's account: docs/windows.md, section 8), so user and group must
 * stay unset.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>

#include "daemon/process/privdrop.h"

int
privdrop_check(uid_t user, gid_t group, char *err, size_t errlen)
{
	if (user == (uid_t)-1 && group == (gid_t)-1)
		return 0;
	snprintf(err, errlen, "user and group cannot be set on Windows: run hotmapd as the "
		 "account it should be (a service's account)");
	return -ENOTSUP;
}

int
privdrop(uid_t user, gid_t group, char *err, size_t errlen)
{
	return privdrop_check(user, group, err, errlen);
}
