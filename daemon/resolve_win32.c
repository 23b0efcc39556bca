/*
 * resolve_win32.c - resolve.h on Windows: opening by path is refused
 * there, for now.  Windows builds only; resolve.c is the POSIX half.
 *
 * Why: the Linux guarantee is openat2(RESOLVE_BENEATH): no "..", symlink,
 * magic link or (optionally) mount leads out of a root.  The Windows
 * counterpart (docs/windows.md, section 5) walks the path a component at a
 * time with NtCreateFile relative to the directory handle before it,
 * refuses every reparse point (symbolic links, junctions, volume mount
 * points) and alternate data streams, and checks the final path with
 * GetFinalPathNameByHandleW.  It is not written yet, and what wine does
 * with reparse points says little about Windows.  Until it is, a root
 * cannot be configured (resolve_roots_add: -EOPNOTSUPP, which the
 * configuration reports as such), so no path is ever opened, and clients
 * pass handles instead (HM_FEATURE_HANDLE_PULL).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "daemon/resolve.h"

int
resolve_roots_add(struct resolve_roots *r, const char *dir)
{
	(void)r;
	(void)dir;
	return -EOPNOTSUPP;
}

void
resolve_roots_clear(struct resolve_roots *r)
{
	free(r->v);
	r->v = NULL;
	r->n = 0;
}

/* No root can exist: no root contains the path (as on Linux without
 * --root). */
int
resolve_open(const struct resolve_roots *r, const char *path, bool cross_mounts)
{
	(void)r;
	(void)path;
	(void)cross_mounts;
	return -EACCES;
}
