/* SPDX-License-Identifier: MIT */
/*
 * win32.h - what the client's Windows platform files (*_win32.c) share:
 * Windows errors as errno values, and UTF-8 names as wide ones.  Included
 * by them only.
 */
#ifndef HOTMAP_CLIENT_WIN32_H
#define HOTMAP_CLIENT_WIN32_H

#include <windows.h>

/* The errno value closest to the Windows error err (GetLastError()). */
int win32_errno(DWORD err);

/* path (UTF-8) as a malloced wide string, or NULL and errno. */
wchar_t *win32_wide(const char *path);

#endif
