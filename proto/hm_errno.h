/* SPDX-License-Identifier: MIT */
/*
 * hm_errno.h - the errno values hotmap uses that one of its platforms
 * lacks, defined once for the daemon, the library and hotmapctl.
 *
 * Replies carry an errno value in their `error` field, so the daemon and
 * the client of one platform must agree on each number.  Linux has all of
 * them in <errno.h> and this header adds nothing there.  mingw-w64's
 * <errno.h> has neither ESTALE (a view or grant of a file that changed),
 * EUSERS (too many clients) nor ESHUTDOWN (the daemon is stopping): they
 * get numbers above mingw's own (which end at EWOULDBLOCK, 140), as does
 * EDQUOT, which the daemon uses inside (daemon/service/direct.h).
 *
 * client/hotmap.h repeats this block for programs built against the
 * installed header; a redefinition with another value is a compiler
 * diagnostic wherever both are included (client/read.c includes both).
 */
#ifndef HOTMAP_PROTO_HM_ERRNO_H
#define HOTMAP_PROTO_HM_ERRNO_H

#include <errno.h>

#ifdef _WIN32
#ifndef ESTALE
#define ESTALE 180
#endif
#ifndef EUSERS
#define EUSERS 181
#endif
#ifndef ESHUTDOWN
#define ESHUTDOWN 182
#endif
/* The daemon's own (a user's direct-read grants at their cap): never in a
 * reply, so hotmap.h need not repeat it. */
#ifndef EDQUOT
#define EDQUOT 183
#endif
#endif

#endif
