/* SPDX-License-Identifier: MIT */
/*
 * file_platform_win32.c - file_platform.h on Windows.  Windows builds
 * only; file_platform_unix.c is the POSIX half.
 *
 *  - identity: the volume serial number and the 128-bit file id
 *    (GetFileInformationByHandleEx(FileIdInfo)), or, where that is not
 *    answered, nFileIndexHigh/Low of GetFileInformationByHandle;
 *  - the readable check: a handle proves read access when the daemon's
 *    copy was granted FILE_READ_DATA (NtQueryObject); the analogue of
 *    Linux's F_GETFL check of O_PATH and write-only descriptors;
 *  - the file system: FILE_REMOTE_DEVICE of the volume's device
 *    characteristics means a network file system; the file system's name
 *    (GetVolumeInformationByHandleW) makes the allowlist of data file
 *    systems.  Windows has no pseudo file systems in the procfs sense;
 *  - the private reopen is ReOpenFile: a file object of the daemon's own,
 *    synchronous and buffered, whatever flags the client's handle had
 *    (FILE_FLAG_NO_BUFFERING would make unaligned reads fail);
 *  - names: GetFinalPathNameByHandleW, in UTF-8;
 *  - residency: QueryWorkingSetEx over a view (the daemon's working set
 *    only, weaker than mincore);
 *  - no deletion watch (the sweep checks idle entries each second), no
 *    read lease (the direct tier is not offered on Windows), and no
 *    descriptor to hand out for path-descriptors.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <windows.h>
#include <winternl.h>
#include <psapi.h>

#include "daemon/storage/backend.h"
#include "daemon/storage/file_platform.h"
#include "daemon/storage/storage_win32.h"

#ifndef FILE_REMOTE_DEVICE
#define FILE_REMOTE_DEVICE 0x00000010	/* ddk/wdm.h */
#endif

static void set_err(char *err, size_t errlen, const char *msg)
{
	if (err != NULL && errlen > 0)
		(void)snprintf(err, errlen, "%s", msg);
}

/* --- identity and attributes ----------------------------------------- */

int fplat_check_readable(hm_fd fd, char *err, size_t errlen)
{
	PUBLIC_OBJECT_BASIC_INFORMATION info;
	ULONG got = 0;
	DWORD type;

	type = GetFileType(fd);
	if (type == FILE_TYPE_UNKNOWN && GetLastError() != NO_ERROR) {
		set_err(err, errlen, "not a valid handle");
		return storage_win32_errno(GetLastError());
	}
	if (NtQueryObject(fd, ObjectBasicInformation, &info, sizeof info, &got) != 0) {
		set_err(err, errlen, "not a valid handle");
		return -EBADF;
	}
	if (!(info.GrantedAccess & FILE_READ_DATA)) {
		set_err(err, errlen, "handle is not open for reading");
		return -EBADF;
	}
	return 0;
}

/* 100 ns since 1601 to ns since 1970, saturated. */
static int64_t filetime_ns(LARGE_INTEGER t)
{
	const int64_t epoch = 116444736000000000LL;	/* 1970 in 1601's 100 ns */
	int64_t ns;

	if (__builtin_mul_overflow(t.QuadPart - epoch, (int64_t)100, &ns))
		return t.QuadPart < epoch ? INT64_MIN : INT64_MAX;
	return ns;
}

static int file_id(HANDLE h, struct file_id *id)
{
	FILE_ID_INFO fid;
	BY_HANDLE_FILE_INFORMATION bhi;

	if (GetFileInformationByHandleEx(h, FileIdInfo, &fid, sizeof fid)) {
		uint64_t lo, hi;

		memcpy(&lo, fid.FileId.Identifier, 8);
		memcpy(&hi, fid.FileId.Identifier + 8, 8);
		*id = (struct file_id){ .dev = fid.VolumeSerialNumber, .ino = lo, .ino_hi = hi };
		return 0;
	}
	/* Older systems and some file systems: the 64-bit index. */
	if (!GetFileInformationByHandle(h, &bhi))
		return storage_win32_errno(GetLastError());
	*id = (struct file_id){
		.dev = bhi.dwVolumeSerialNumber,
		.ino = ((uint64_t)bhi.nFileIndexHigh << 32) | bhi.nFileIndexLow,
		.ino_hi = 0,
	};
	return 0;
}

int fplat_stat(hm_fd fd, struct file_stat *out)
{
	FILE_BASIC_INFO basic;
	FILE_STANDARD_INFO std;
	DWORD type;
	int r;

	*out = (struct file_stat){ .nlink = 1 };
	type = GetFileType(fd);
	if (type == FILE_TYPE_UNKNOWN && GetLastError() != NO_ERROR)
		return storage_win32_errno(GetLastError());
	if (type == FILE_TYPE_PIPE) {
		out->mode = S_IFIFO | 0444;
		return 0;
	}
	if (type != FILE_TYPE_DISK) {
		out->mode = S_IFCHR | 0444;	/* NUL, a console, a device */
		return 0;
	}
	if (!GetFileInformationByHandleEx(fd, FileBasicInfo, &basic, sizeof basic) ||
	    !GetFileInformationByHandleEx(fd, FileStandardInfo, &std, sizeof std))
		return storage_win32_errno(GetLastError());
	r = file_id(fd, &out->id);
	if (r < 0)
		return r;
	out->mode = (std.Directory ? S_IFDIR : S_IFREG) | 0444;
	out->size = std.EndOfFile.QuadPart < 0 ? 0 : (uint64_t)std.EndOfFile.QuadPart;
	out->mtime_ns = filetime_ns(basic.LastWriteTime);
	out->ctime_ns = filetime_ns(basic.ChangeTime);
	/* deleted while open: the name is gone (or going with the last
	 * handle), as st_nlink 0 says on Linux */
	out->nlink = std.DeletePending ? 0 : std.NumberOfLinks;
	return 0;
}

/* --- file systems ------------------------------------------------------ */

/*
 * fs_type codes (Windows has no statfs magic numbers): the file system
 * by name, plus FS_TYPE_REMOTE when the volume is on a network device.
 */
enum {
	FS_TYPE_OTHER = 0,
	FS_TYPE_NTFS = 1,
	FS_TYPE_REFS = 2,
	FS_TYPE_FAT = 3,
	FS_TYPE_EXFAT = 4,
	FS_TYPE_CDFS = 5,
	FS_TYPE_UDF = 6,
	FS_TYPE_REMOTE = 0x100,
};

static uint32_t fs_type_of_name(const wchar_t *name)
{
	static const struct {
		const wchar_t *name;
		uint32_t type;
	} known[] = {
		{ L"NTFS", FS_TYPE_NTFS },
		{ L"ReFS", FS_TYPE_REFS },
		{ L"FAT", FS_TYPE_FAT },
		{ L"FAT32", FS_TYPE_FAT },
		{ L"exFAT", FS_TYPE_EXFAT },
		{ L"CDFS", FS_TYPE_CDFS },
		{ L"UDF", FS_TYPE_UDF },
	};

	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		if (_wcsicmp(name, known[i].name) == 0)
			return known[i].type;
	return FS_TYPE_OTHER;
}

int fplat_fs(hm_fd fd, uint32_t *type, enum fs_class *fs, bool *data)
{
	FILE_FS_DEVICE_INFORMATION dev;
	IO_STATUS_BLOCK iosb;
	wchar_t name[MAX_PATH + 1];
	bool remote;

	if (NtQueryVolumeInformationFile(fd, &iosb, &dev, sizeof dev, FileFsDeviceInformation) != 0)
		return -EIO;
	remote = (dev.Characteristics & FILE_REMOTE_DEVICE) != 0;
	if (!GetVolumeInformationByHandleW(fd, NULL, 0, NULL, NULL, NULL, name, MAX_PATH + 1))
		name[0] = L'\0';
	*type = fs_type_of_name(name) | (remote ? FS_TYPE_REMOTE : 0);
	*fs = remote ? FS_NETWORK : FS_LOCAL;
	/*
	 * An allowlist, as on Linux: a known local file system, or any
	 * network one (the server checked the client's access, and the
	 * content is the same for every reader).  A file system it does
	 * not know is read through the client's own handle, privately.
	 */
	*data = remote || (*type & ~(uint32_t)FS_TYPE_REMOTE) != FS_TYPE_OTHER;
	return 0;
}

int fplat_read_through(hm_fd fd, uint64_t offset, uint64_t len)
{
	(void)fd;
	(void)offset;
	(void)len;
	return -ENOTSUP;
}

/* No copies of network files on Windows (file_copy.c): read as before. */
int fplat_read_into(hm_fd fd, uint64_t offset, uint64_t len, void *dst)
{
	(void)fd;
	(void)offset;
	(void)len;
	(void)dst;
	return -ENOTSUP;
}

int fplat_copy_new(uint64_t size, hm_fd *fd, void **map)
{
	(void)size;
	(void)fd;
	(void)map;
	return -ENOTSUP;
}

int fplat_copy_seal(hm_fd fd, void *map, uint64_t size)
{
	(void)fd;
	(void)map;
	(void)size;
	return -ENOTSUP;
}

void fplat_copy_free(hm_fd fd, void *map, uint64_t size)
{
	(void)fd;
	(void)map;
	(void)size;
}

int fplat_copy_dup(hm_fd fd)
{
	(void)fd;
	return -ENOTSUP;
}

bool fplat_fs_name(uint32_t type, uint64_t dev, char *buf, size_t len)
{
	static const char *const names[] = { "other", "ntfs", "refs", "fat", "exfat", "cdfs", "udf" };
	uint32_t local = type & ~(uint32_t)FS_TYPE_REMOTE;
	bool remote = (type & FS_TYPE_REMOTE) != 0;

	(void)dev;
	snprintf(buf, len, "%s%s", remote ? "remote " : "",
		 local < sizeof names / sizeof names[0] ? names[local] : "other");
	return remote;
}

uint64_t fplat_mount_id(hm_fd fd)
{
	(void)fd;
	return 0;	/* the volume serial number is in the file id */
}

/* --- handles ------------------------------------------------------------ */

void fplat_close(hm_fd fd)
{
	if (fd != HM_FD_INVALID && fd != NULL)
		(void)CloseHandle(fd);
}

void fplat_close_now(hm_fd fd)
{
	fplat_close(fd);
}

hm_fd fplat_reopen_private(hm_fd fd, const struct file_stat *st)
{
	struct file_id id;
	HANDLE h;

	/* The daemon's own access check, as the reopen through
	 * /proc/self/fd is on Linux. */
	h = ReOpenFile(fd, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, 0);
	if (h == INVALID_HANDLE_VALUE)
		return fd;
	if (file_id(h, &id) < 0 || id.dev != st->id.dev || id.ino != st->id.ino ||
	    id.ino_hi != st->id.ino_hi) {
		CloseHandle(h);
		return fd;
	}
	fplat_close(fd);
	return h;
}

int fplat_reopen_fd(hm_fd fd)
{
	(void)fd;
	return -EOPNOTSUPP;	/* no direct tier on Windows (file_platform.h) */
}

int fplat_path(hm_fd fd, char *buf, size_t len)
{
	wchar_t w[4096];
	const wchar_t *p = w;
	DWORD n;
	int m;

	if (len == 0)
		return -EINVAL;
	buf[0] = '\0';
	n = GetFinalPathNameByHandleW(fd, w, sizeof w / sizeof w[0],
				      FILE_NAME_NORMALIZED | VOLUME_NAME_DOS);
	if (n == 0)
		return storage_win32_errno(GetLastError());
	if (n >= sizeof w / sizeof w[0])
		return -ENAMETOOLONG;
	/* \\?\C:\dir\file → C:\dir\file; \\?\UNC\server\share → \\server\share */
	if (wcsncmp(p, L"\\\\?\\UNC\\", 8) == 0) {
		p += 6;
		w[6] = L'\\';
	} else if (wcsncmp(p, L"\\\\?\\", 4) == 0) {
		p += 4;
	}
	m = WideCharToMultiByte(CP_UTF8, 0, p, -1, buf, (int)(len > INT_MAX ? INT_MAX : len),
				NULL, NULL);
	if (m <= 0) {
		buf[0] = '\0';
		return -ENAMETOOLONG;
	}
	return m - 1;
}

bool fplat_path_absolute(const char *path)
{
	if (((path[0] >= 'A' && path[0] <= 'Z') || (path[0] >= 'a' && path[0] <= 'z')) &&
	    path[1] == ':' && (path[2] == '\\' || path[2] == '/'))
		return true;
	return (path[0] == '\\' || path[0] == '/') && (path[1] == '\\' || path[1] == '/');
}

bool fplat_path_same(const char *a, const char *b, size_t n)
{
	return _strnicmp(a, b, n) == 0;
}

/* --- memory -------------------------------------------------------------- */

size_t fplat_page_size(void)
{
	SYSTEM_INFO si;

	GetSystemInfo(&si);
	return si.dwPageSize;
}

int fplat_resident(hm_fd fd, const void *map, size_t map_len, uint64_t size, uint64_t *bytes)
{
	PSAPI_WORKING_SET_EX_INFORMATION ws[512];
	size_t page = fplat_page_size(), len, n, i, k, chunk, in = 0;
	void *own = NULL;
	bool ok = true;

	*bytes = 0;
	if (size == 0)
		return 100;
	if (map == NULL) {
		if (size > SIZE_MAX || backend_map(fd, (size_t)size, &own) < 0)
			return -1;
		map = own;
		len = (size_t)size;
	} else {
		len = map_len;
	}
	n = (len + page - 1) / page;
	for (i = 0; i < n && ok; i += chunk) {
		chunk = n - i < sizeof ws / sizeof ws[0] ? n - i : sizeof ws / sizeof ws[0];
		for (k = 0; k < chunk; k++)
			ws[k].VirtualAddress = (char *)map + (i + k) * page;
		ok = QueryWorkingSetEx(GetCurrentProcess(), ws, (DWORD)(chunk * sizeof ws[0]));
		for (k = 0; ok && k < chunk; k++)
			in += ws[k].VirtualAttributes.Valid;
	}
	if (own != NULL)
		backend_unmap(own, len);
	if (!ok || n == 0)
		return -1;
	*bytes = (uint64_t)in * page;
	if (*bytes > len)
		*bytes = len;
	if (*bytes > size)
		*bytes = size;
	return (int)(in * 100 / n);
}

/*
 * Without a mapping there is nothing to prefetch into: Windows reads
 * ahead on its own for sequential ReadFile, and the hint has no
 * counterpart for a handle.  A hint that cannot be given is not an error.
 */
int fplat_willneed(hm_fd fd, uint64_t offset, uint64_t len)
{
	(void)fd;
	(void)offset;
	(void)len;
	return 0;
}

int fplat_populate(const void *addr, size_t len)
{
	WIN32_MEMORY_RANGE_ENTRY r = { .VirtualAddress = (void *)addr, .NumberOfBytes = len };

	if (!PrefetchVirtualMemory(GetCurrentProcess(), 1, &r, 0))
		return storage_win32_errno(GetLastError());
	return 0;
}

/* Windows caches files in pages the mapping calls do not choose. */
size_t fplat_fold_chunk(uint32_t fs_type)
{
	(void)fs_type;
	return 0;
}

void fplat_sleep_ms(unsigned ms)
{
	Sleep(ms);
}

int fplat_fold(hm_fd fd, uint64_t offset, void *own, bool cold_too)
{
	(void)fd;
	(void)offset;
	(void)own;
	(void)cold_too;
	return -ENOTSUP;
}

/* --- no deletion watch, no lease ------------------------------------------ */

int fplat_watch_new(void)
{
	return -1;
}

void fplat_watch_free(int w)
{
	(void)w;
}

int fplat_watch_add(int w, hm_fd fd)
{
	(void)w;
	(void)fd;
	return -1;
}

void fplat_watch_rm(int w, int wd)
{
	(void)w;
	(void)wd;
}

int fplat_copy_watch(int w, hm_fd fd)
{
	(void)w;
	(void)fd;
	return -1;
}

void fplat_watch_read(int w, void (*cb)(int wd, void *arg), void *arg)
{
	(void)w;
	(void)cb;
	(void)arg;
}

int fplat_lease(hm_fd fd, int sig)
{
	(void)fd;
	(void)sig;
	return -EOPNOTSUPP;
}

void fplat_unlease(hm_fd fd)
{
	(void)fd;
}

bool fplat_lease_held(hm_fd fd)
{
	(void)fd;
	return false;
}

int fplat_lease_id(hm_fd fd)
{
	(void)fd;
	return -1;
}

int fplat_writers(hm_fd fd, struct storage_writers *w)
{
	(void)fd;
	(void)w;
	return -EOPNOTSUPP;	/* no lease, no direct tier on Windows */
}
