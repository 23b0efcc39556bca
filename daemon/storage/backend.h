/* SPDX-License-Identifier: MIT */
/*
 * backend.h - how the bytes of a cache entry are fetched: one ops struct
 * per backend, found by name or by kind.
 *
 * What it is for: the file cache (file_open.c) decides which backend a
 * handle gets; a backend only knows how to prepare a file for reading
 * (attach), undo that (detach) and read from it.
 *
 * Platforms: backend_mmap.c (the mapping backend's reads) is portable; it
 * maps through the backend_map_* calls below, which backend_unix.c
 * (mmap, fstat, mincore) and backend_win32.c (CreateFileMapping,
 * MapViewOfFile, GetFileSizeEx, QueryWorkingSetEx) implement.  The pread
 * backend is backend_unix.c (pread, preadv2) or backend_win32.c (ReadFile
 * at an OVERLAPPED offset).
 *
 * What it must not do: know about the cache, handles, policies or
 * counters beyond struct storage_io; log; retry a failed attach.
 */
#ifndef HOTMAP_BACKEND_H
#define HOTMAP_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "daemon/base/platform.h"
#include "daemon/storage/storage.h"

/* The part of a cache entry that backends see. */
struct backend_file {
	hm_fd fd;		/* readable descriptor, owned by the entry */
	void *map;		/* NULL when not mapped */
	size_t map_len;		/* st_size when the mapping was made */
};


struct backend_ops {
	const char *name;
	enum storage_backend kind;
	/*
	 * Makes f readable through this backend; size is the file's st_size
	 * now.  0, or a negative errno (the caller decides whether to fall
	 * back; it must not call attach again for that file).  Idempotent.
	 */
	int (*attach)(struct backend_file *f, uint64_t size);
	/* Undoes attach.  Only when no handle can read through f any more. */
	void (*detach)(struct backend_file *f);
	/*
	 * pread(2)'s answer for (len, offset), looping over short reads until
	 * len bytes or end of file.  The caller has checked that offset and
	 * offset + len do not exceed INT64_MAX and that len <= SSIZE_MAX.
	 * After a fault (io->faults), dst past the answer may hold bytes of
	 * the abandoned copy: bytes of the same file, never anything else.
	 */
	ssize_t (*read)(struct backend_file *f, void *dst, size_t len,
			uint64_t offset, struct storage_io *io);
};

extern const struct backend_ops backend_mmap_ops;
extern const struct backend_ops backend_pread_ops;

/* The pread loop itself; the mmap backend answers with it what it cannot
 * (or, after a fault, must not) copy from the mapping. */
ssize_t backend_pread_full(hm_fd fd, void *dst, size_t len, uint64_t offset,
			   struct storage_io *io);

/*
 * The platform's mapping, for backend_mmap.c.  backend_map: a read-only,
 * shared mapping of the first len bytes of fd (len > 0) in *out, or
 * -errno.  backend_unmap undoes it.  backend_file_size: the file's size
 * now (fstat), or -errno.  backend_resident: whether every page of
 * [addr, addr + len) of a mapping is in memory, so that copying it cannot
 * wait for the disk (false when it cannot be told).
 */
int backend_map(hm_fd fd, size_t len, void **out);
void backend_unmap(void *map, size_t len);
int backend_file_size(hm_fd fd, uint64_t *size);
bool backend_resident(const void *addr, size_t len);

static inline const struct backend_ops *backend_get(enum storage_backend kind)
{
	switch (kind) {
	case STORAGE_BACKEND_MMAP:
		return &backend_mmap_ops;
	case STORAGE_BACKEND_PREAD:
		return &backend_pread_ops;
	}
	return NULL;
}

/* "mmap" or "pread" (as in configuration files); NULL when unknown. */
static inline const struct backend_ops *backend_find(const char *name)
{
	static const struct backend_ops *const all[] = {
		&backend_mmap_ops,
		&backend_pread_ops,
	};

	if (name == NULL)
		return NULL;
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (strcmp(all[i]->name, name) == 0)
			return all[i];
	return NULL;
}

#endif
