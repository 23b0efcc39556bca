/* SPDX-License-Identifier: MIT */
/*
 * os_win32.c - os.h on Windows: file HANDLEs used natively (not CRT
 * descriptors, which the CRT caps), UTF-8 paths as wide ones; and the
 * Windows-only entry point hm_open_handle (hotmap.h).
 */
#include "config.h"

#include <errno.h>
#include <io.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "client/client_priv.h"
#include "client/os.h"
#include "client/win32.h"

int
win32_errno(DWORD err)
{
	switch (err) {
	case ERROR_FILE_NOT_FOUND:
	case ERROR_PATH_NOT_FOUND:
	case ERROR_INVALID_DRIVE:
	case ERROR_BAD_NETPATH:
	case ERROR_BAD_NET_NAME:
		return ENOENT;
	case ERROR_ACCESS_DENIED:
	case ERROR_SHARING_VIOLATION:
	case ERROR_LOCK_VIOLATION:
	case ERROR_PRIVILEGE_NOT_HELD:
		return EACCES;
	case ERROR_INVALID_HANDLE:
		return EBADF;
	case ERROR_NOT_ENOUGH_MEMORY:
	case ERROR_OUTOFMEMORY:
		return ENOMEM;
	case ERROR_FILENAME_EXCED_RANGE:
		return ENAMETOOLONG;
	case ERROR_INVALID_NAME:
	case ERROR_BAD_PATHNAME:
	case ERROR_INVALID_PARAMETER:
		return EINVAL;
	case ERROR_TOO_MANY_OPEN_FILES:
		return EMFILE;
	case ERROR_BROKEN_PIPE:
	case ERROR_NO_DATA:
	case ERROR_PIPE_NOT_CONNECTED:
		return EPIPE;
	case ERROR_SEM_TIMEOUT:
		return ETIMEDOUT;
	default:
		return EIO;
	}
}

wchar_t *
win32_wide(const char *s)
{
	int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, NULL, 0);
	wchar_t *w;

	if (n <= 0) {
		errno = EINVAL;
		return NULL;
	}
	w = malloc((size_t)n * sizeof *w);
	if (w == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, w, n);
	return w;
}

/* w as a malloced UTF-8 string, or NULL and errno. */
static char *
narrow(const wchar_t *w)
{
	int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, NULL, 0, NULL, NULL);
	char *s;

	if (n <= 0) {
		errno = EINVAL;
		return NULL;
	}
	s = malloc((size_t)n);
	if (s == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	WideCharToMultiByte(CP_UTF8, 0, w, -1, s, n, NULL, NULL);
	return s;
}

int
os_file_open(const char *path, hm_osfile *f)
{
	wchar_t *w = win32_wide(path);
	HANDLE h;

	*f = HM_OSFILE_NONE;
	if (w == NULL)
		return -errno;
	/* read only; sharing everything, so that our handle (and the
	 * daemon's copy) never blocks a writer, a rename or a delete */
	h = CreateFileW(w, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			NULL, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
	free(w);
	if (h == INVALID_HANDLE_VALUE)
		return -win32_errno(GetLastError());
	*f = (hm_osfile)h;
	return 0;
}

void
os_file_close(hm_osfile f)
{
	if (f != HM_OSFILE_NONE)
		CloseHandle((HANDLE)f);
}

ssize_t
os_file_pread(hm_osfile f, void *buf, size_t len, uint64_t offset)
{
	/* ReadFile at an offset moves a synchronous handle's file pointer,
	 * which is the caller's (hm_open_handle): the daemon reads. */
	(void)f;
	(void)buf;
	(void)len;
	(void)offset;
	return -ENOSYS;
}

int
os_file_id(hm_osfile f, uint64_t *dev, uint64_t *ino)
{
	BY_HANDLE_FILE_INFORMATION bi;

	if (f == HM_OSFILE_NONE || f == 0 || !GetFileInformationByHandle((HANDLE)f, &bi))
		return -EBADF;
	*dev = bi.dwVolumeSerialNumber;
	*ino = (uint64_t)bi.nFileIndexHigh << 32 | bi.nFileIndexLow;
	return 0;
}

int
os_file_of_fd(int fd, hm_osfile *f)
{
	intptr_t h = _get_osfhandle(fd);

	if (h == -1 || h == -2)
		return -EBADF;
	*f = (hm_osfile)h;
	return 0;
}

/* Handles are not limited as descriptors are (RLIMIT_NOFILE). */
bool
os_file_plenty(hm_osfile f)
{
	(void)f;
	return true;
}

/* The daemon sends no handle over a pipe (it pulls ours), so none that
 * came from it can be taken. */
bool
os_file_from_daemon_ok(hm_osfile f, uint64_t dev, uint64_t ino)
{
	(void)f;
	(void)dev;
	(void)ino;
	return false;
}

char *
absolute_path(const char *path)
{
	wchar_t *w = win32_wide(path), *full;
	DWORD n;
	char *s;

	if (w == NULL)
		return NULL;
	n = GetFullPathNameW(w, 0, NULL, NULL);
	full = n > 0 ? malloc((size_t)n * sizeof *full) : NULL;
	if (full == NULL || GetFullPathNameW(w, n, full, NULL) == 0) {
		errno = full == NULL && n > 0 ? ENOMEM : EINVAL;
		free(full);
		free(w);
		return NULL;
	}
	free(w);
	s = narrow(full);
	free(full);
	return s;
}

static char program_name[256];
static pthread_once_t program_once = PTHREAD_ONCE_INIT;

/* The executable's file name without its directory and ".exe". */
static void
program_name_init(void)
{
	wchar_t w[MAX_PATH + 1];
	DWORD n = GetModuleFileNameW(NULL, w, MAX_PATH);
	wchar_t *base = w, *p;
	char *s;
	size_t len;

	w[n < MAX_PATH ? n : MAX_PATH] = L'\0';
	for (p = w; *p != L'\0'; p++)
		if (*p == L'\\' || *p == L'/')
			base = p + 1;
	s = narrow(base);
	if (s == NULL)
		return;
	len = strlen(s);
	if (len > 4 && _stricmp(s + len - 4, ".exe") == 0)
		s[len - 4] = '\0';
	snprintf(program_name, sizeof program_name, "%s", s);
	free(s);
}

const char *
os_program_name(void)
{
	pthread_once(&program_once, program_name_init);
	return program_name;
}

long
os_cpu_count(void)
{
	DWORD n = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);

	return n > 0 ? (long)n : 1;
}

HM_EXPORT hm_file *
hm_open_handle(hm_client *c, void *handle, int flags)
{
	return client_open_osfile(c, handle == NULL ? HM_OSFILE_NONE : (hm_osfile)handle, flags);
}

/* HOTMAP_FALLBACK=local is not offered on Windows yet: a positioned
 * ReadFile moves the file pointer of the caller's own handle
 * (hm_open_handle), which a read of the library's must not.
 * hm_connect_opts refuses the option with ENOTSUP. */
bool
os_local_reads(void)
{
	return false;
}

int
os_file_stat(hm_osfile f, struct os_file_stat *st)
{
	(void)f;
	(void)st;
	return -ENOTSUP;
}

int64_t
os_file_pread_all(hm_osfile f, void *buf, size_t len, uint64_t offset)
{
	(void)f;
	(void)buf;
	(void)len;
	(void)offset;
	return -ENOTSUP;
}

void
os_file_willneed(hm_osfile f, uint64_t offset, uint64_t len)
{
	(void)f;
	(void)offset;
	(void)len;
}

/* No copies of network files on Windows (netfs.c): read as before. */
int
os_copy_map(int f, uint64_t size, const void **map)
{
	(void)f;
	(void)size;
	(void)map;
	return -ENOSYS;
}

void
os_copy_unmap(const void *map, uint64_t size)
{
	(void)map;
	(void)size;
}
