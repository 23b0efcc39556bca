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
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "backend.h"
#include "guard.h"

static int mmap_attach(struct backend_file *f, uint64_t size)
{
	void *p;

	if (f->map != NULL)
		return 0;
	if (size == 0)
		return -EINVAL;	/* mmap(2) itself refuses a zero length */
#if SIZE_MAX < UINT64_MAX
	if (size > SIZE_MAX)
		return -EFBIG;
#endif
	p = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, f->fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	f->map = p;
	f->map_len = (size_t)size;
	return 0;
}

static void mmap_detach(struct backend_file *f)
{
	if (f->map != NULL)
		(void)munmap(f->map, f->map_len);
	f->map = NULL;
	f->map_len = 0;
}

/* Reads of at least this many bytes use pread (see mmap_read). */
#define MMAP_PREAD_MIN (256u * 1024u)

/* Largest range whose residency is checked before an inline copy; larger
 * ones are left to a worker. */
#define MMAP_NOWAIT_MAX_PAGES 1024

/* Whether every page of [offset, offset + len) of the mapping is in the
 * page cache, so that copying it cannot wait for the disk. */
static bool mmap_resident(const struct backend_file *f, uint64_t offset, size_t len)
{
	unsigned char vec[MMAP_NOWAIT_MAX_PAGES];
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = ((uintptr_t)f->map + offset) & ~(page - 1);
	uintptr_t end = (uintptr_t)f->map + offset + len;
	size_t n = (end - start + page - 1) / page, i;

	if (n > MMAP_NOWAIT_MAX_PAGES || mincore((void *)start, end - start, vec) < 0)
		return false;
	for (i = 0; i < n; i++)
		if (!(vec[i] & 1))
			return false;
	return true;
}

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
	struct stat st;
	uint64_t size, end;
	size_t in_map = 0, n;

	if (len == 0)
		return 0;
	if (f->map == NULL)
		return backend_pread_full(f->fd, dst, len, offset, io);

	/*
	 * The current size bounds the answer: a truncated file must give a
	 * short read, not the zeros of the mapping's last page nor a fault.
	 */
	if (fstat(f->fd, &st) < 0)
		return -errno;
	size = st.st_size < 0 ? 0 : (uint64_t)st.st_size;
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
	if (in_map > 0 && io->nowait && !mmap_resident(f, offset, in_map))
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
