/* SPDX-License-Identifier: MIT */
/*
 * platform.h - the few libc differences libhotmap meets between its
 * platforms (hotmapctl's are hotmapctl/ctl_platform.h), so that the files using them
 * carry no #ifdef (docs/windows.md, section 4).
 *
 * What it must not do: grow into an emulation of POSIX on Windows.  An
 * entry belongs here when both platforms have the thing under another
 * name; what Windows does not have at all goes behind a seam instead.
 */
#ifndef HOTMAP_CLIENT_PLATFORM_H
#define HOTMAP_CLIENT_PLATFORM_H

#include <stdlib.h>

#include "proto/hm_errno.h"

/* Thread-local storage read on every call: the initial-exec model, a
 * load off the thread pointer rather than a call to __tls_get_addr
 * (small variables only: a library loaded by dlopen takes them from the
 * static TLS surplus).  Windows' TLS has one model. */
#ifdef _WIN32
#define PLATFORM_TLS_FAST
#else
#define PLATFORM_TLS_FAST __attribute__((tls_model("initial-exec")))
#endif

/* --- the client's handle types ---------------------------------------------
 * hm_conn: the connection to hotmapd, as transport.h's platform file keeps
 * it (the socket on POSIX; on Windows transport_win32.c's connection
 * object as a number).  hm_osfile: a file the process holds (a descriptor
 * on POSIX, a HANDLE on Windows).  -1 is "none" for both on both
 * platforms (INVALID_HANDLE_VALUE is (HANDLE)-1).
 */
#include <stdint.h>
#ifdef _WIN32
typedef intptr_t hm_conn;
typedef intptr_t hm_osfile;
#else
typedef int hm_conn;
typedef int hm_osfile;
#endif
#define HM_CONN_NONE	((hm_conn)-1)
#define HM_OSFILE_NONE	((hm_osfile)-1)

/* --- end --- */

#endif
