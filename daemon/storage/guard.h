/* SPDX-License-Identifier: MIT */
/*
 * guard.h - the SIGBUS-guarded copy out of a file mapping.
 *
 * What it is for: a mapping turns a truncated file or an I/O error into
 * SIGBUS on the next access.  guard_copy() turns such a fault inside the
 * source range into -EFAULT so the caller can answer with pread instead,
 * and the daemon lives on.  The destination may be a mapping too (a
 * client's shared region): a fault inside the destination range comes back
 * as GUARD_EFAULT_DST, so that the caller blames the owner of the
 * destination (drops that client) instead of retrying the source.
 *
 * What it must not do: swallow faults that are not its own.  A SIGBUS that
 * hits neither range of a guarded copy running on the faulting thread (a
 * real bug, a kill(2) from outside) restores the default action and kills
 * the process as it would have without the guard.
 *
 * Thread-safe: each thread has its own jump buffer and range.  Not
 * async-signal-safe and not reentrant on one thread (do not call it from a
 * signal handler).
 */
#ifndef HOTMAP_GUARD_H
#define HOTMAP_GUARD_H

#include <errno.h>
#include <stddef.h>

/* Installs the process-wide SIGBUS handler.  Idempotent.  -EBUSY when
 * another party (e.g. a sanitizer run with handle_sigbus=2) keeps SIGBUS to
 * itself, so guarded copies could not be recovered. */
int guard_install(void);

/* What guard_copy returns for a fault in the destination: an errno that no
 * read of a file gives, so that it passes through the backends unmistaken
 * ("Destination address required"). */
#define GUARD_EFAULT_DST (-EDESTADDRREQ)

/* memcpy(dst, src, len), but 0; -EFAULT if a SIGBUS hit [src, src + len)
 * during the copy, GUARD_EFAULT_DST if it hit [dst, dst + len) (a range
 * that is both, memcpy of overlapping memory, reports -EFAULT); dst is then
 * partly written.  guard_install() must have succeeded before. */
int guard_copy(void *dst, const void *src, size_t len);

#endif
