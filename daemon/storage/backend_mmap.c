/* SPDX-License-Identifier: MIT */
/*
 * backend_mmap.c - the mmap backend: bytes are copied out of one shared,
 * read-only mapping of the whole file (as long as it was when mapped),
 * under the SIGBUS guard.
 *
 * The mapping is a snapshot of the file's length, not of its content: it
 * is MAP_SHARED, so in-place writes show through, but the file may since
 * have been truncated (pages past the new end fault with SIGBUS, the tail
 * of the last page reads as zeros) or extended (bytes past the mapping).
 * Each read therefore asks fstat(2) for the current size first, so that
 * what it returns is what pread(2) would return.
 *
 * Portable: the platform's mapping calls are backend_map_* (backend.h),
 * in backend_unix.c or backend_win32.c.  On Windows a view keeps the file
 * from shrinking (ERROR_USER_MAPPED_FILE), but the guard stays: an I/O
 * error under a view is EXCEPTION_IN_PAGE_ERROR there.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "daemon/storage/backend.h"
#include "daemon/storage/guard.h"

static int mmap_attach(struct backend_file *f, uint64_t size)
{
	void *p;
	int r;

	if (f->map != NULL)
		return 0;
	if (size == 0)
		return -EINVAL;	/* mmap(2) itself refuses a zero length */
#if SIZE_MAX < UINT64_MAX
	if (size > SIZE_MAX)
		return -EFBIG;
#endif
	r = backend_map(f->fd, (size_t)size, &p);
	if (r < 0)
		return r;
	f->map = p;
	f->map_len = (size_t)size;
	return 0;
}

static void mmap_detach(struct backend_file *f)
{
	if (f->map != NULL)
		backend_unmap(f->map, f->map_len);
	f->map = NULL;
	f->map_len = 0;
}

/* Reads of at least this many bytes use pread (see mmap_read). */
#define MMAP_PREAD_MIN (256u * 1024u)

/* The file grew past the mapping: in_map of the n bytes at offset came
 * from it, and pread reads the rest. */
static ssize_t mmap_read_past_map(struct backend_file *f, void *dst, size_t in_map, size_t n,
				  uint64_t offset, struct storage_io *io)
{
	ssize_t r = backend_pread_full(f->fd, (char *)dst + in_map, n - in_map,
				       offset + in_map, io);

	/*
	 * -EAGAIN is not an error of the file but "ask again, waiting": the
	 * part already copied must not pass for a short read at end of file.
	 * tmpfs answers every RWF_NOWAIT pread so, and a read that straddles
	 * the mapping's end after the file grew came back short there.
	 */
	if (r == -EAGAIN)
		return r;
	if (r < 0)
		return in_map > 0 ? (ssize_t)in_map : r;
	return (ssize_t)(in_map + (size_t)r);
}

static ssize_t mmap_read(struct backend_file *f, void *dst, size_t len,
			 uint64_t offset, struct storage_io *io)
{
	uint64_t size, end;
	int r;
	size_t in_map = 0, n;

	if (len == 0)
		return 0;
	if (f->map == NULL)
		return backend_pread_full(f->fd, dst, len, offset, io);

	/*
	 * The current size bounds the answer: a truncated file must give a
	 * short read, not the zeros of the mapping's last page nor a fault.
	 */
	r = backend_file_size(f->fd, &size);
	if (r < 0)
		return r;
	if (offset >= size)
		return 0;
	/* offset < size <= INT64_MAX and len <= SSIZE_MAX: no wrap below. */
	n = size - offset < len ? (size_t)(size - offset) : len;
	end = offset + n;

	if (offset < f->map_len)
		in_map = end <= f->map_len ? n : (size_t)(f->map_len - offset);

	/*
	 * Large reads are answered with pread even from a mapped file: the
	 * kernel's copy out of the page cache costs what a memcpy from the
	 * mapping costs, while the mapping's copy takes a page fault for
	 * every page whose table entry was reclaimed meanwhile (256 per MiB;
	 * measured in bench/: 0.8 GB/s through the mapping against 5 GB/s
	 * through pread on the same hot file).  Small reads keep the mapping:
	 * there a syscall would be the larger cost.
	 */
	if (n >= MMAP_PREAD_MIN)
		return backend_pread_full(f->fd, dst, n, offset, io);
	if (in_map > 0 && io->nowait && !backend_resident((const char *)f->map + offset, in_map))
		return -EAGAIN;
	if (in_map > 0) {
		int g = guard_copy(dst, (const char *)f->map + offset, in_map);

		/*
		 * A fault writing dst (a client's shared region whose pages
		 * are gone) is not the file's: pread into the same place
		 * would fail too.  Up it goes, and the caller drops whoever
		 * owns dst.
		 */
		if (g == GUARD_EFAULT_DST)
			return g;
		if (g < 0) {
			/*
			 * SIGBUS inside the source range: the file shrank
			 * after our fstat, or a page could not be read.  The
			 * partial copy in dst is not trusted: pread answers
			 * the whole request (short at the real end of file,
			 * or the real I/O error).  The caller sees the fault
			 * in io and retires the entry from the cache.
			 */
			io->faults++;
			return backend_pread_full(f->fd, dst, len, offset, io);
		}
		io->bytes_mmap += in_map;
	}
	if (in_map == n)
		return (ssize_t)n;
	return mmap_read_past_map(f, dst, in_map, n, offset, io);
}

const struct backend_ops backend_mmap_ops = {
	.name = "mmap",
	.kind = STORAGE_BACKEND_MMAP,
	.attach = mmap_attach,
	.detach = mmap_detach,
	.read = mmap_read,
};
