/* SPDX-License-Identifier: MIT */
/*
 * backend_unix.c - backend.h on POSIX: the mapping calls (mmap(2),
 * munmap(2), fstat(2), mincore(2)) that backend_mmap.c reads through, and
 * the pread backend: every byte from pread(2) on the entry's descriptor,
 * for what should not or cannot be mapped (network and pseudo file
 * systems, pipes and devices, empty files) and when the opener asked for
 * it.  backend_win32.c is the Windows half of both.
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
#include <sys/uio.h>

#include "daemon/storage/backend.h"

int backend_map(hm_fd fd, size_t len, void **out)
{
	void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return -errno;
	*out = p;
	return 0;
}

void backend_unmap(void *map, size_t len)
{
	(void)munmap(map, len);
}

int backend_file_size(hm_fd fd, uint64_t *size)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	*size = st.st_size < 0 ? 0 : (uint64_t)st.st_size;
	return 0;
}

/* Largest range whose residency is checked before an inline copy; larger
 * ones are left to a worker. */
#define MMAP_NOWAIT_MAX_PAGES 1024

/* Whether every page of [addr, addr + len) is in the page cache. */
bool backend_resident(const void *addr, size_t len)
{
	unsigned char vec[MMAP_NOWAIT_MAX_PAGES];
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)addr & ~(page - 1);
	uintptr_t end = (uintptr_t)addr + len;
	size_t n = (end - start + page - 1) / page, i;

	if (n > MMAP_NOWAIT_MAX_PAGES || mincore((void *)start, end - start, vec) < 0)
		return false;
	for (i = 0; i < n; i++)
		if (!(vec[i] & 1))
			return false;
	return true;
}

/* --- the pread backend ------------------------------------------------ */

ssize_t backend_pread_full(hm_fd fd, void *dst, size_t len, uint64_t offset,
			   struct storage_io *io)
{
	char *p = dst;
	size_t done = 0;

	while (done < len) {
		/* The caller checked offset + len against the off_t range. */
		ssize_t n;

		if (io->nowait) {
			/* Only what the page cache holds: a short answer may
			 * be the end of file or a page that is not there, and
			 * the next round tells (0, or EAGAIN). */
			struct iovec iov = { p + done, len - done };

			n = preadv2(fd, &iov, 1, (off_t)(offset + done), RWF_NOWAIT);
			if (n < 0 && (errno == EAGAIN || errno == EOPNOTSUPP || errno == ESPIPE))
				return -EAGAIN;	/* a worker does it, waiting */
		} else {
			n = pread(fd, p + done, len - done, (off_t)(offset + done));
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			/*
			 * Like read(2) after a partial transfer: the bytes
			 * already read are the answer; a persistent error
			 * comes back on the next call, which starts there.
			 */
			if (done > 0)
				break;
			return -errno;
		}
		if (n == 0)
			break;	/* end of file */
		done += (size_t)n;
	}
	io->bytes_pread += done;
	return (ssize_t)done;
}

/* Nothing to prepare: the entry's descriptor is all pread needs. */
static int pread_attach(struct backend_file *f, uint64_t size)
{
	(void)f;
	(void)size;
	return 0;
}

static void pread_detach(struct backend_file *f)
{
	(void)f;
}

static ssize_t pread_read(struct backend_file *f, void *dst, size_t len,
			  uint64_t offset, struct storage_io *io)
{
	/*
	 * pread(fd, buf, 0, off) is not always 0: on a pipe or socket it is
	 * -ESPIPE.  Ask the kernel so that the answer is pread's.
	 */
	if (len == 0) {
		ssize_t n;

		do
			n = pread(f->fd, dst, 0, (off_t)offset);
		while (n < 0 && errno == EINTR);
		return n < 0 ? -errno : 0;
	}
	return backend_pread_full(f->fd, dst, len, offset, io);
}

const struct backend_ops backend_pread_ops = {
	.name = "pread",
	.kind = STORAGE_BACKEND_PREAD,
	.attach = pread_attach,
	.detach = pread_detach,
	.read = pread_read,
};
