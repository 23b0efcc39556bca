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

/* --- transport (branch s18-win-transport) --- */
/*
 * hm_fd: a file the daemon holds, as the platform names it: a descriptor
 * on POSIX, a HANDLE on Windows (used natively, not through CRT
 * descriptors: docs/windows.md, section 4).  The storage side defines the
 * same type; an identical typedef twice is valid C11.
 */
#ifdef _WIN32
typedef void *hm_fd;
#else
typedef int hm_fd;
#endif
/*
 * HM_PRINTF(f, a): printf-like arguments, checked as the C library the
 * program uses formats them: mingw's own stdio (with _GNU_SOURCE, %zu
 * and %llu work) is gnu_printf there, where plain "printf" would check
 * against msvcrt's formats.
 */
#ifdef __MINGW_PRINTF_FORMAT
#define HM_PRINTF(f, a)	__attribute__((format(__MINGW_PRINTF_FORMAT, f, a)))
#else
#define HM_PRINTF(f, a)	__attribute__((format(printf, f, a)))
#endif
/* --- end transport --- */

#endif
