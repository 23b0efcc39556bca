/*
 * backend.h - how the bytes of a cache entry are fetched: one ops struct
 * per backend, found by name or by kind.
 *
 * What it is for: the file cache (file_open.c) decides which backend a
 * handle gets; a backend only knows how to prepare a file for reading
 * (attach), undo that (detach) and read from it.  A Windows file-mapping
 * backend would be a third struct backend_ops over the same
 * struct backend_file.
 *
 * What it must not do: know about the cache, handles, policies or
 * counters beyond struct storage_io; log; retry a failed attach.
 */
#ifndef HOTMAP_BACKEND_H
#define HOTMAP_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "storage.h"

/* The part of a cache entry that backends see. */
struct backend_file {
	int fd;			/* readable descriptor, owned by the entry */
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
ssize_t backend_pread_full(int fd, void *dst, size_t len, uint64_t offset,
			   struct storage_io *io);

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
