/* SPDX-License-Identifier: MIT */
/*
 * backend_win32.c - the backends' Windows half: the mapping calls of
 * backend.h (CreateFileMappingW with PAGE_READONLY, MapViewOfFile with
 * FILE_MAP_READ, GetFileSizeEx, QueryWorkingSetEx), and the pread backend
 * over ReadFile at an OVERLAPPED offset.  backend_mmap.c's reads run on
 * top of the mapping calls unchanged.  Windows builds only: the POSIX
 * halves are backend_unix.c and backend_unix.c.
 *
 * Differences from Linux (docs/windows.md, section 5):
 *  - there is no RWF_NOWAIT: a read that is not a copy out of resident
 *    mapped pages answers -EAGAIN on the loop and goes to a worker;
 *  - residency is QueryWorkingSetEx's: the daemon's own working set, not
 *    the system cache, so a page in the cache but not in our working set
 *    counts as absent (a worker copies it: slower, never wrong);
 *  - pipes: pread(2) on a pipe is -ESPIPE, and ReadFile would consume the
 *    bytes, so the pread backend answers -ESPIPE for pipes too;
 *  - the handle may have been opened for overlapped I/O (a client's, when
 *    the daemon could not reopen the file): ReadFile then completes later,
 *    and the read waits for it on an event of its own thread.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include <windows.h>
#include <psapi.h>

#include "daemon/storage/backend.h"
#include "daemon/storage/storage_win32.h"

/* --- the mapping ------------------------------------------------------ */

int backend_map(hm_fd fd, size_t len, void **out)
{
	HANDLE section;
	void *view;
	DWORD e;

	/* The section is as long as the file now; the view is the first
	 * len bytes (the size the caller validated).  A file that shrank
	 * in between makes MapViewOfFile fail, and the caller falls back. */
	section = CreateFileMappingW(fd, NULL, PAGE_READONLY, 0, 0, NULL);
	if (section == NULL)
		return storage_win32_errno(GetLastError());
	view = MapViewOfFile(section, FILE_MAP_READ, 0, 0, len);
	e = GetLastError();
	/* The view holds the section: its handle is not needed any more. */
	CloseHandle(section);
	if (view == NULL)
		return storage_win32_errno(e);
	*out = view;
	return 0;
}

void backend_unmap(void *map, size_t len)
{
	(void)len;
	(void)UnmapViewOfFile(map);
}

int backend_file_size(hm_fd fd, uint64_t *size)
{
	LARGE_INTEGER sz;

	if (!GetFileSizeEx(fd, &sz))
		return storage_win32_errno(GetLastError());
	*size = sz.QuadPart < 0 ? 0 : (uint64_t)sz.QuadPart;
	return 0;
}

/* Largest range whose residency is checked before an inline copy; larger
 * ones are left to a worker. */
#define MAP_NOWAIT_MAX_PAGES 256

/* Whether every page of [addr, addr + len) is valid in the daemon's
 * working set: a copy then takes no fault that could wait for the disk. */
bool backend_resident(const void *addr, size_t len)
{
	PSAPI_WORKING_SET_EX_INFORMATION ws[MAP_NOWAIT_MAX_PAGES];
	SYSTEM_INFO si;
	uintptr_t page, start, end;
	size_t n, i;

	GetSystemInfo(&si);
	page = si.dwPageSize;
	start = (uintptr_t)addr & ~(page - 1);
	end = (uintptr_t)addr + len;
	n = (end - start + page - 1) / page;
	if (n == 0 || n > MAP_NOWAIT_MAX_PAGES)
		return false;
	for (i = 0; i < n; i++)
		ws[i].VirtualAddress = (void *)(start + i * page);
	if (!QueryWorkingSetEx(GetCurrentProcess(), ws, (DWORD)(n * sizeof ws[0])))
		return false;
	for (i = 0; i < n; i++)
		if (!ws[i].VirtualAttributes.Valid)
			return false;
	return true;
}

/* --- ReadFile at an offset -------------------------------------------- */

/* The calling thread's event for ReadFile on an overlapped handle: made
 * once per thread (the loop and the workers live as long as the daemon). */
static HANDLE thread_event(void)
{
	static __thread HANDLE ev;

	if (ev == NULL)
		ev = CreateEventW(NULL, TRUE, FALSE, NULL);
	return ev;
}

/* One ReadFile of at most len bytes at offset: the count (0 at end of
 * file), or -errno. */
static ssize_t read_at(HANDLE h, void *dst, DWORD len, uint64_t offset)
{
	OVERLAPPED ov = { 0 };
	HANDLE ev = thread_event();
	DWORD got = 0, e;

	if (ev == NULL)
		return -ENOMEM;
	ov.Offset = (DWORD)offset;
	ov.OffsetHigh = (DWORD)(offset >> 32);
	/* The low bit keeps a completion off any completion port the
	 * handle may be associated with (the client's). */
	ov.hEvent = (HANDLE)((uintptr_t)ev | 1);
	if (ReadFile(h, dst, len, &got, &ov))
		return (ssize_t)got;
	e = GetLastError();
	if (e == ERROR_IO_PENDING) {
		if (GetOverlappedResult(h, &ov, &got, TRUE))
			return (ssize_t)got;
		e = GetLastError();
	}
	if (e == ERROR_HANDLE_EOF || e == ERROR_BROKEN_PIPE)
		return 0;
	return storage_win32_errno(e);
}

ssize_t backend_pread_full(hm_fd fd, void *dst, size_t len, uint64_t offset,
			   struct storage_io *io)
{
	char *p = dst;
	size_t done = 0;

	/* No RWF_NOWAIT: a worker does it, waiting. */
	if (io->nowait)
		return -EAGAIN;
	while (done < len) {
		/* ReadFile counts in DWORDs */
		DWORD chunk = len - done > (1u << 30) ? (1u << 30) : (DWORD)(len - done);
		ssize_t n = read_at(fd, p + done, chunk, offset + done);

		if (n < 0) {
			/* As pread: bytes already read are the answer. */
			if (done > 0)
				break;
			return n;
		}
		if (n == 0)
			break;	/* end of file */
		done += (size_t)n;
	}
	io->bytes_pread += done;
	return (ssize_t)done;
}

/* Nothing to prepare: the entry's handle is all ReadFile needs. */
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
	DWORD type = GetFileType(f->fd);

	/* pread(2) on a pipe is -ESPIPE, even for 0 bytes; ReadFile would
	 * consume what a pipe holds. */
	if (type == FILE_TYPE_PIPE)
		return -ESPIPE;
	if (type == FILE_TYPE_UNKNOWN && GetLastError() != NO_ERROR)
		return storage_win32_errno(GetLastError());
	if (len == 0)
		return 0;
	return backend_pread_full(f->fd, dst, len, offset, io);
}

const struct backend_ops backend_pread_ops = {
	.name = "pread",
	.kind = STORAGE_BACKEND_PREAD,
	.attach = pread_attach,
	.detach = pread_detach,
	.read = pread_read,
};
