/* SPDX-License-Identifier: MIT */
/*
 * resolve_win32.c - resolve.h on Windows.  Windows builds only; resolve.c
 * is the POSIX half.
 *
 * The Linux check without openat2 (resolve.c, open_beneath_fallback) is
 * the model: open the file, then ask the opened file where it really is.
 * Here that is GetFinalPathNameByHandleW of the handle, which resolves
 * every symbolic link, junction and mount point on the way; the file must
 * lie beneath the root's own final path, and (cross_mounts false) on the
 * root's volume.  So, as with RESOLVE_BENEATH, a link that stays beneath
 * the root is followed and one that leads out is refused, whichever
 * component it is; a volume mounted beneath the root is refused unless
 * cross-mounts.  The answer is about the handle, not about the name, so
 * a rename racing with the open cannot fool it.
 *
 * Before opening, the part below the root is refused when it holds a "."
 * or ".." component, an empty one, a ':' (alternate data streams, device
 * names) or a character Windows names cannot have; and it is opened with
 * the \\?\ prefix, so that Win32 does not rewrite it (trailing dots and
 * spaces, "CON", "..") before the file system sees it.
 *
 * Roots are compared without ASCII case, as NTFS names are.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <windows.h>

#include "daemon/storage/resolve.h"

/* A UTF-8 path as a wide string, with prefix before it; NULL: ENOMEM or
 * not UTF-8. */
static wchar_t *
widen(const wchar_t *prefix, const char *s)
{
	size_t np = wcslen(prefix);
	int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, NULL, 0);
	wchar_t *w;

	if (n <= 0)
		return NULL;
	w = malloc((np + (size_t)n) * sizeof *w);
	if (w == NULL)
		return NULL;
	memcpy(w, prefix, np * sizeof *w);
	if (MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, w + np, n) != n) {
		free(w);
		return NULL;
	}
	return w;
}

/* The handle's final path in UTF-8, without \\?\ (\\?\UNC\x → \\x);
 * malloc'd, or NULL. */
static char *
final_path(HANDLE h)
{
	wchar_t w[4096];
	const wchar_t *p = w;
	DWORD n = GetFinalPathNameByHandleW(h, w, sizeof w / sizeof w[0],
					    FILE_NAME_NORMALIZED | VOLUME_NAME_DOS);
	char *s;
	int m;

	if (n == 0 || n >= sizeof w / sizeof w[0])
		return NULL;
	if (wcsncmp(p, L"\\\\?\\UNC\\", 8) == 0) {
		p += 6;
		w[6] = L'\\';
	} else if (wcsncmp(p, L"\\\\?\\", 4) == 0) {
		p += 4;
	}
	m = WideCharToMultiByte(CP_UTF8, 0, p, -1, NULL, 0, NULL, NULL);
	if (m <= 0 || (s = malloc((size_t)m)) == NULL)
		return NULL;
	if (WideCharToMultiByte(CP_UTF8, 0, p, -1, s, m, NULL, NULL) != m) {
		free(s);
		return NULL;
	}
	return s;
}

static bool
is_absolute(const char *p)
{
	if (((p[0] >= 'A' && p[0] <= 'Z') || (p[0] >= 'a' && p[0] <= 'z')) && p[1] == ':' &&
	    (p[2] == '\\' || p[2] == '/'))
		return true;
	return (p[0] == '\\' || p[0] == '/') && (p[1] == '\\' || p[1] == '/');
}

/* A copy with '\' for '/' and no trailing separators (but "C:\"). */
static char *
normalize(const char *path)
{
	size_t len = strlen(path);
	char *s = malloc(len + 1);

	if (s == NULL)
		return NULL;
	for (size_t i = 0; i <= len; i++)
		s[i] = path[i] == '/' ? '\\' : path[i];
	while (len > 3 && s[len - 1] == '\\')
		s[--len] = '\0';
	return s;
}

/* The part of path below prefix (whole components, ASCII case ignored),
 * or NULL. */
static const char *
below(const char *path, const char *prefix)
{
	size_t len = strlen(prefix);

	if (len > 0 && prefix[len - 1] == '\\')
		len--;		/* "C:\" */
	if (_strnicmp(path, prefix, len) != 0)
		return NULL;
	if (path[len] == '\0')
		return path + len;
	if (path[len] != '\\')
		return NULL;
	return path + len + 1;
}

/* The volume serial number of an open file, or -1. */
static long long
volume_of(HANDLE h)
{
	BY_HANDLE_FILE_INFORMATION bhi;

	return GetFileInformationByHandle(h, &bhi) ? (long long)bhi.dwVolumeSerialNumber : -1;
}

static int
errno_of(DWORD e)
{
	switch (e) {
	case ERROR_FILE_NOT_FOUND:
	case ERROR_PATH_NOT_FOUND:
	case ERROR_INVALID_NAME:
	case ERROR_BAD_NETPATH:
		return -ENOENT;
	case ERROR_ACCESS_DENIED:
	case ERROR_SHARING_VIOLATION:
		return -EACCES;
	case ERROR_DIRECTORY:
		return -ENOTDIR;
	case ERROR_CANT_RESOLVE_FILENAME:
	case ERROR_CANT_ACCESS_FILE:
		return -ELOOP;
	case ERROR_NOT_ENOUGH_MEMORY:
	case ERROR_OUTOFMEMORY:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

/* \\?\ before a drive path, \\?\UNC\ before \\server\share. */
static wchar_t *
long_path(const char *path)
{
	if (path[0] == '\\' && path[1] == '\\')
		return widen(L"\\\\?\\UNC\\", path + 2);
	return widen(L"\\\\?\\", path);
}

int
resolve_roots_add(struct resolve_roots *r, const char *dir)
{
	struct resolve_root root = { .fd = -1, .mnt_id = -1 };
	struct resolve_root *v;
	BY_HANDLE_FILE_INFORMATION bhi;
	HANDLE h = INVALID_HANDLE_VALUE;
	wchar_t *w = NULL;
	int err;

	if (!is_absolute(dir))
		return -EINVAL;
	root.given = normalize(dir);
	w = root.given != NULL ? long_path(root.given) : NULL;
	if (w == NULL) {
		err = -ENOMEM;
		goto fail;
	}
	/* a directory is opened with backup semantics, for its attributes */
	h = CreateFileW(w, FILE_READ_ATTRIBUTES,
			FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL, OPEN_EXISTING,
			FILE_FLAG_BACKUP_SEMANTICS, NULL);
	if (h == INVALID_HANDLE_VALUE) {
		err = errno_of(GetLastError());
		goto fail;
	}
	if (!GetFileInformationByHandle(h, &bhi)) {
		err = errno_of(GetLastError());
		goto fail;
	}
	if (!(bhi.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)) {
		err = -ENOTDIR;
		goto fail;
	}
	root.mnt_id = bhi.dwVolumeSerialNumber;
	root.real = final_path(h);
	if (root.real == NULL) {
		err = -ENOMEM;
		goto fail;
	}
	v = realloc(r->v, (r->n + 1) * sizeof *v);
	if (v == NULL) {
		err = -ENOMEM;
		goto fail;
	}
	CloseHandle(h);
	free(w);
	r->v = v;
	r->v[r->n++] = root;
	return 0;
fail:
	if (h != INVALID_HANDLE_VALUE)
		CloseHandle(h);
	free(w);
	free(root.given);
	free(root.real);
	return err;
}

void
resolve_roots_clear(struct resolve_roots *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->v[i].given);
		free(r->v[i].real);
	}
	free(r->v);
	r->v = NULL;
	r->n = 0;
}

/* Whether rel (below a root, '\' separated) may be opened at all. */
static bool
rel_acceptable(const char *rel)
{
	const char *c = rel;

	if (strpbrk(rel, ":*?\"<>|") != NULL)
		return false;
	for (;;) {
		size_t n = strcspn(c, "\\");

		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)c[i] < 0x20)
				return false;
		if (c[n] == '\0')
			return true;
		c += n + 1;
	}
}

static int
open_beneath(const struct resolve_root *root, const char *rel, bool cross_mounts, HANDLE *out)
{
	char *full, *real;
	size_t lr = strlen(root->real), lrel = strlen(rel);
	wchar_t *w;
	HANDLE h;
	bool ok;

	if (*rel == '\0')
		return -EISDIR;	/* the root itself */
	if (!rel_acceptable(rel))
		return -EACCES;
	/* beneath the root's final path: the given one may be a link */
	full = malloc(lr + 1 + lrel + 1);
	if (full == NULL)
		return -ENOMEM;
	memcpy(full, root->real, lr);
	if (lr == 0 || root->real[lr - 1] != '\\')
		full[lr++] = '\\';
	memcpy(full + lr, rel, lrel + 1);
	w = long_path(full);
	free(full);
	if (w == NULL)
		return -ENOMEM;
	h = CreateFileW(w, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			NULL, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
	free(w);
	if (h == INVALID_HANDLE_VALUE)
		return errno_of(GetLastError());
	real = final_path(h);
	ok = real != NULL && below(real, root->real) != NULL &&
	     (cross_mounts || volume_of(h) == root->mnt_id);
	free(real);
	if (!ok) {
		CloseHandle(h);
		return -EACCES;
	}
	*out = h;
	return 0;
}

int
resolve_open_handle(const struct resolve_roots *r, const char *path, bool cross_mounts,
		    hm_fd *out)
{
	char *p;
	int rc = -EACCES;

	if (!is_absolute(path))
		return -EINVAL;
	p = normalize(path);
	if (p == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < r->n; i++) {
		const char *rel = below(p, r->v[i].given);

		if (rel == NULL)
			rel = below(p, r->v[i].real);
		if (rel != NULL) {
			rc = open_beneath(&r->v[i], rel, cross_mounts, out);
			break;
		}
	}
	free(p);
	return rc;
}

/* A HANDLE does not fit resolve_open's int: see resolve.h. */
int
resolve_open(const struct resolve_roots *r, const char *path, bool cross_mounts)
{
	(void)r;
	(void)path;
	(void)cross_mounts;
	return -EOPNOTSUPP;
}
