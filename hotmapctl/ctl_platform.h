/* SPDX-License-Identifier: MIT */
/*
 * ctl_platform.h - the few libc differences hotmapctl meets between its
 * platforms (sorting with a context, local time, binary standard output),
 * so that its files carry no #ifdef (docs/windows.md, section 4).
 *
 * What it must not do: grow into an emulation of POSIX on Windows; hold
 * anything libhotmap needs (client/platform.h is the library's).
 */
#ifndef HOTMAP_CTL_PLATFORM_H
#define HOTMAP_CTL_PLATFORM_H

#include <stdlib.h>
#include <time.h>

typedef int (*platform_compare_fn)(const void *a, const void *b, void *arg);

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

/* localtime_r: the CRT's localtime_s takes its arguments the other way
 * round and returns an errno. */
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
#endif
