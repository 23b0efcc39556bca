/* SPDX-License-Identifier: MIT */
/*
 * storage_win32.h - what the Windows halves of the storage core share
 * (backend_win32.c, file_platform_win32.c): Win32 errors as the negative
 * errno values the storage core returns.  Windows builds only.
 */
#ifndef HOTMAP_STORAGE_WIN32_H
#define HOTMAP_STORAGE_WIN32_H

#include <errno.h>

#include <windows.h>

#include "daemon/base/platform.h"

/* -errno for a GetLastError() value. */
static inline int storage_win32_errno(DWORD e)
{
	switch (e) {
	case ERROR_INVALID_HANDLE:
		return -EBADF;
	case ERROR_ACCESS_DENIED:
	case ERROR_SHARING_VIOLATION:
	case ERROR_LOCK_VIOLATION:
		return -EACCES;
	case ERROR_NOT_ENOUGH_MEMORY:
	case ERROR_OUTOFMEMORY:
	case ERROR_COMMITMENT_LIMIT:
		return -ENOMEM;
	case ERROR_FILE_INVALID:	/* a mapping of an empty file */
	case ERROR_INVALID_PARAMETER:
		return -EINVAL;
	case ERROR_NOT_SUPPORTED:
	case ERROR_INVALID_FUNCTION:
		return -ENODEV;
	case ERROR_FILE_NOT_FOUND:
	case ERROR_PATH_NOT_FOUND:
		return -ENOENT;
	case ERROR_DISK_FULL:
		return -ENOSPC;
	case ERROR_BROKEN_PIPE:
		return -EPIPE;
	case ERROR_USER_MAPPED_FILE:
		return -EBUSY;
	default:
		return -EIO;
	}
}

#endif
