/* SPDX-License-Identifier: MIT */
/*
 * privdrop.h - hotmapd giving up root for the configured user and group
 * (the keys user and group), once everything that needs root is done:
 * the socket bound, the pid file and the log file open.
 *
 * What it is for: main.c, before the server runs.  Supplementary groups
 * become the user's (initgroups), then the group, then the user; and the
 * result is checked: no id of the process is root's any more and setuid(0)
 * fails, or hotmapd refuses to go on.
 *
 * What it must not do: log, or change anything when neither key is set.
 */
#ifndef HOTMAP_PRIVDROP_H
#define HOTMAP_PRIVDROP_H

#include <stddef.h>
#include <sys/types.h>

#include "daemon/base/platform.h"	/* uid_t, gid_t on Windows */

/*
 * Before anything is bound: whether privdrop can do what user and group
 * ((uid_t)-1 and (gid_t)-1: unset) ask.  Not root, it can only stay who it
 * is.  0, or -EPERM / -ENOENT with err saying why.
 */
int privdrop_check(uid_t user, gid_t group, char *err, size_t errlen);
/* Becomes user and group; nothing when both are unset or already ours.
 * 0, or a negative errno with err saying which step failed. */
int privdrop(uid_t user, gid_t group, char *err, size_t errlen);

#endif
