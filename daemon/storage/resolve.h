/* SPDX-License-Identifier: MIT */
/*
 * resolve.h - open a path a client names, only beneath the roots that the
 * daemon was given (--root).
 *
 * What it is for: the open-by-path request.  The path is resolved with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) relative to a descriptor
 * of the root, so neither "..", nor a symlink, nor a magic link can leave
 * it; with cross_mounts false, RESOLVE_NO_XDEV keeps it on the root's
 * mount, so a bind mount (or any file system) mounted beneath a root does
 * not lead out of it.  Kernels without openat2 get an equivalent check:
 * the opened file's real path (/proc/self/fd) must lie beneath the root's
 * real path, and its mount (mnt_id in /proc/self/fdinfo) be the root's.
 *
 * What it must not do: log, or decide who may open by path (session.c).
 */
#ifndef HOTMAP_RESOLVE_H
#define HOTMAP_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon/base/platform.h"

struct resolve_root {
	char *given;	/* as configured, without trailing slashes */
	char *real;	/* realpath() of it at start-up */
	int fd;		/* O_PATH | O_DIRECTORY */
	long long mnt_id;	/* its mount (/proc/self/fdinfo), -1 unknown */
};

struct resolve_roots {
	struct resolve_root *v;
	size_t n;
};

/* Adds a root: it must exist and be a directory.  Negative errno. */
int resolve_roots_add(struct resolve_roots *r, const char *dir);
void resolve_roots_clear(struct resolve_roots *r);

/*
 * Opens path (absolute) for reading beneath the first root that is a
 * prefix of it.  Returns the descriptor (O_RDONLY | O_CLOEXEC | O_NOCTTY |
 * O_NONBLOCK, so a FIFO never blocks the daemon) or a negative errno:
 * -EACCES when no root contains the path, the path escapes its root, or
 * (cross_mounts false) it crosses a mount point beneath the root, -EINVAL
 * when the path is not absolute, else open's errno (-ENOENT, ...).
 */
int resolve_open(const struct resolve_roots *r, const char *path, bool cross_mounts);

/*
 * resolve_open for both platforms: 0 with the file in *out (a descriptor;
 * a HANDLE on Windows, which an int cannot carry), or the negative errno
 * resolve_open gives.  On Windows (resolve_win32.c) resolve_open itself
 * is -EOPNOTSUPP: callers there use this one.
 */
int resolve_open_handle(const struct resolve_roots *r, const char *path, bool cross_mounts,
			hm_fd *out);

#endif
