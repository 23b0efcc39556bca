/* SPDX-License-Identifier: MIT */
/*
 * platform.h - the few types the daemon's portable files need that one of
 * its platforms lacks, so that those files and their headers carry no
 * #ifdef (docs/windows.md, section 4).
 *
 * On Linux it is <sys/types.h> and nothing else.  What it must not do:
 * grow into an emulation of POSIX on Windows.  Each Windows entry is
 * there only until the seam that replaces it exists, and says which.
 */
#ifndef HOTMAP_DAEMON_PLATFORM_H
#define HOTMAP_DAEMON_PLATFORM_H

#include <sys/types.h>

#include "proto/hm_errno.h"

#ifdef _WIN32
/*
 * uid_t and gid_t are carried through conf.h, policy.h, peer.h and
 * server.h into most daemon files.  On Windows no value of these is ever
 * an identity: a peer is a token's SID and groups there.  Until the peer
 * identity type replaces them (docs/windows.md, section 10, step 3), the
 * types exist so that the files compile; nothing may admit by them.
 */
typedef unsigned int uid_t;
typedef unsigned int gid_t;
#endif

/*
 * --- storage -------------------------------------------------------------
 * hm_fd: what the storage core holds a file by.  A descriptor on POSIX; a
 * HANDLE on Windows, used natively (no CRT descriptor: the CRT caps them
 * below the open-files budget).  HM_FD_INVALID is the "none" value.
 * void * is HANDLE's own type, so this header needs no <windows.h>.
 */
#include <stdint.h>

#ifdef _WIN32
typedef void *hm_fd;
#define HM_FD_INVALID ((hm_fd)(intptr_t)-1)
#else
typedef int hm_fd;
#define HM_FD_INVALID (-1)
#endif
/* --- end storage ----------------------------------------------------------- */

/* --- transport --- */
/*
 * HM_PRINTF(f, a): printf-like arguments, checked as the C library the
 * program uses formats them: mingw's own stdio (with _GNU_SOURCE, %zu
 * and %llu work) is gnu_printf there, where plain "printf" would check
 * against msvcrt's formats.
 */
#ifdef _WIN32
#include <stdio.h>	/* mingw defines __MINGW_PRINTF_FORMAT there */
#endif
#ifdef __MINGW_PRINTF_FORMAT
#define HM_PRINTF(f, a)	__attribute__((format(__MINGW_PRINTF_FORMAT, f, a)))
#else
#define HM_PRINTF(f, a)	__attribute__((format(printf, f, a)))
#endif
/* --- end transport --- */

#endif
