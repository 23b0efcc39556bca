/* SPDX-License-Identifier: MIT */
/*
 * direct_win32.c - the direct tier on Windows: not offered.  A grant needs
 * the daemon to learn that a writer came (the read lease on Linux; an
 * oplock on Windows, docs/windows.md section 4) and a region for the slot
 * table (region_win32.c), and neither exists there yet: HELLO asks for no
 * slots, the daemon grants nothing, every read goes through the daemon,
 * and no struct direct_map is ever made.  Only hm_open's own handle,
 * kept for a grant on Linux, is closed here as direct_drop closes it
 * there (direct_map_unix.c).  It stands alone: the Unix tier is
 * direct_unix.c and the files beside it.
 */
#include "config.h"

#include <errno.h>

#include "client/client_priv.h"
#include "client/os.h"

bool
direct_grant_holds(const hm_file *f)
{
	(void)f;
	return false;
}

void
direct_drop(hm_file *f)
{
	f->direct_ok = false;
	os_file_close(f->own_fd);
	f->own_fd = HM_OSFILE_NONE;
}

void
direct_retire(hm_file *f)
{
	direct_drop(f);	/* never mapped: nothing to keep */
}

void
direct_release_retired(hm_client *c)
{
	(void)c;
}

int
direct_promote(hm_file *f)
{
	(void)f;
	return -ENOTSUP;
}

int
direct_promote_fd(hm_file *f, hm_osfile fd)
{
	(void)f;
	(void)fd;
	return -ENOTSUP;
}

void
direct_heat(hm_file *f, ssize_t n)
{
	(void)f;
	(void)n;
}

ssize_t
direct_read(hm_file *f, void *buf, size_t len, uint64_t offset)
{
	(void)f;
	(void)buf;
	(void)len;
	(void)offset;
	return DIRECT_MISS;
}

void
direct_warm(hm_file *f, uint64_t offset, uint64_t len)
{
	(void)f;
	(void)offset;
	(void)len;
}

void
direct_release_idle(void)
{
}

int
direct_view(hm_file *f, uint64_t offset, size_t len, const void **data, size_t *got,
	    struct direct_map **held)
{
	(void)f;
	(void)offset;
	(void)len;
	(void)data;
	(void)got;
	(void)held;
	return -1;	/* no mapping: the view is filled through the daemon */
}

void
direct_read_stats(hm_file *f, struct hm_read_stats *st)
{
	(void)f;
	st->direct = HM_DIRECT_NO;	/* no mapping: every read is the daemon's */
}

int
direct_map_check(const struct direct_map *m)
{
	(void)m;
	return -ESTALE;
}

void
direct_map_ref(struct direct_map *m)
{
	(void)m;
}

void
direct_map_unref(struct direct_map *m)
{
	(void)m;
}

/* No leases on Windows, so no table of granted files either. */
struct hm_table *
table_attach(const char *socket_path)
{
	(void)socket_path;
	return NULL;
}

int
table_take(hm_client *c, hm_file *f, int flags)
{
	(void)c;
	(void)f;
	(void)flags;
	return -ENOENT;
}
