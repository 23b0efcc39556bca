/*
 * guard.h - the SIGBUS-guarded copy out of a file mapping.
 *
 * What it is for: a mapping turns a truncated file or an I/O error into
 * SIGBUS on the next access.  guard_copy() turns such a fault inside the
 * source range into -EFAULT so the caller can answer with pread instead,
 * and the daemon lives on.
 *
 * What it must not do: swallow faults that are not its own.  A SIGBUS that
 * does not hit the source range of a guarded copy running on the faulting
 * thread (a real bug, a kill(2) from outside) restores the default action
 * and kills the process as it would have without the guard.
 *
 * Thread-safe: each thread has its own jump buffer and range.  Not
 * async-signal-safe and not reentrant on one thread (do not call it from a
 * signal handler).
 */
#ifndef HOTMAP_GUARD_H
#define HOTMAP_GUARD_H

#include <stddef.h>

/* Installs the process-wide SIGBUS handler.  Idempotent.  -EBUSY when
 * another party (e.g. a sanitizer run with handle_sigbus=2) keeps SIGBUS to
 * itself, so guarded copies could not be recovered. */
int guard_install(void);

/* memcpy(dst, src, len), but 0, or -EFAULT if a SIGBUS hit
 * [src, src + len) during the copy; dst is then partly written.
 * guard_install() must have succeeded before. */
int guard_copy(void *dst, const void *src, size_t len);

#endif
