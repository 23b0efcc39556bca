/* SPDX-License-Identifier: MIT */
/*
 * conf_platform.h - what reading hotmapd.conf asks of the operating
 * system, so that conf.c and conf_value.c carry no #ifdef:
 * daemon/config/conf_platform_unix.c (fopen "re", getline, the passwd and group
 * databases, sockaddr_un's length, '/' paths) and
 * daemon/config/conf_platform_win32.c (no users or groups: access to the pipe is
 * its security descriptor's; pipe names; drive and UNC paths).
 *
 * What it must not do: report errors itself (the caller words them), or
 * know about keys.
 */
#ifndef HOTMAP_CONF_PLATFORM_H
#define HOTMAP_CONF_PLATFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* The configuration file, for reading (close-on-exec where that exists);
 * NULL with errno set. */
FILE *conf_platform_fopen(const char *path);

/* getline(3): the line with its newline in *buf, its length, or -1 at end
 * of file or on error (ferror tells). */
ssize_t conf_platform_getline(char **buf, size_t *cap, FILE *f);

/* NULL where user and group names mean something; else why they do not,
 * for an error of every key that sets one. */
const char *conf_platform_no_ids(void);

/* A user's uid, or with group a group's gid, by name: 0, -ENOENT when
 * there is none, -ENOMEM, or the lookup's -errno. */
int conf_platform_lookup_id(const char *name, bool group, unsigned *out);

/* The longest socket name the listener can take, in bytes. */
size_t conf_platform_socket_max(void);

/* Whether path is absolute on this platform. */
bool conf_platform_path_absolute(const char *path);

#endif
