/* SPDX-License-Identifier: MIT */
/*
 * platform.h - the few libc differences the client side (libhotmap and
 * hotmapctl) meets between its platforms, so that the files using them
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

typedef int (*platform_compare_fn)(const void *a, const void *b, void *arg);

/* Thread-local storage read on every call: the initial-exec model, a
 * load off the thread pointer rather than a call to __tls_get_addr
 * (small variables only: a library loaded by dlopen takes them from the
 * static TLS surplus).  Windows' TLS has one model. */
#ifdef _WIN32
#define PLATFORM_TLS_FAST
#else
#define PLATFORM_TLS_FAST __attribute__((tls_model("initial-exec")))
#endif

#ifdef _WIN32
/*
 * The CRT's qsort_s is glibc's qsort_r with the context passed first to
 * the compare function instead of last: a trampoline swaps it back.
 */
struct platform_qsort_ctx {
	platform_compare_fn compare;
	void *arg;
};

static inline int
platform_qsort_trampoline(void *ctx, const void *a, const void *b)
{
	const struct platform_qsort_ctx *q = ctx;

	return q->compare(a, b, q->arg);
}

static inline void
platform_qsort_r(void *base, size_t n, size_t size, platform_compare_fn compare, void *arg)
{
	struct platform_qsort_ctx q = { compare, arg };

	qsort_s(base, n, size, platform_qsort_trampoline, &q);
}
#else
/* glibc's qsort_r: compare(a, b, arg), no global state. */
static inline void
platform_qsort_r(void *base, size_t n, size_t size, platform_compare_fn compare, void *arg)
{
	qsort_r(base, n, size, compare, arg);
}
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

/* localtime_r: the CRT's localtime_s takes its arguments the other way
 * round and returns an errno. */
#include <time.h>
static inline struct tm *
platform_localtime_r(const time_t *t, struct tm *tm)
{
#ifdef _WIN32
	return localtime_s(tm, t) == 0 ? tm : NULL;
#else
	return localtime_r(t, tm);
#endif
}

/* Standard output as bytes: the CRT's text mode would turn each \n of a
 * file hotmapctl read copies into \r\n.  Nothing to do on POSIX. */
#ifdef _WIN32
#include <fcntl.h>
#include <io.h>
static inline void
platform_binary_stdout(void)
{
	_setmode(1, _O_BINARY);
}
#else
static inline void
platform_binary_stdout(void)
{
}
#endif
/* --- end --- */

#endif
