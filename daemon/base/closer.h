/* SPDX-License-Identifier: MIT */
/*
 * closer.h - closes descriptors that came from clients, off the event loop.
 *
 * What it is for: the last close(2) of a client's descriptor can block.
 * A TCP socket with SO_LINGER set waits out its unsent data (up to the
 * linger time: a day is allowed); a file on NFS or FUSE flushes, and a
 * FUSE server decides when that ends.  Every close of a descriptor a
 * client passed (or one the daemon holds for a client's file: a cache
 * entry's) goes through closer_close(), which queues it for one thread.
 *
 * What it must not do: block its caller.  The queue is bounded
 * (CLOSER_MAX_QUEUED descriptors); past that, closer_close() closes on
 * the caller's thread after making the close cheap (SO_LINGER {0, 0} for
 * a socket), and counts it.  Sockets are made cheap before they are
 * queued too, so that one lingering socket cannot hold up the queue.
 *
 * Before closer_start() and after closer_stop(), closer_close() closes at
 * once on the caller's thread (unit tests of the storage core, shutdown).
 * Thread-safe.
 */
#ifndef HOTMAP_CLOSER_H
#define HOTMAP_CLOSER_H

#include <stdbool.h>

#include "daemon/base/platform.h"	/* hm_fd */

/* Descriptors queued at most; see above. */
#define CLOSER_MAX_QUEUED 4096

/* Starts the thread.  0 or negative errno (then closes stay inline). */
int closer_start(void);
/*
 * Closes what is queued and joins the thread, waiting at most timeout_ms
 * for it (a close that never returns, e.g. a FUSE server that never
 * answers, must not keep the daemon from exiting: the thread is then left
 * to the process's exit).  Idempotent.
 */
void closer_stop(unsigned timeout_ms);

/* Closes fd (negative, or HM_FD_INVALID: nothing) without blocking the
 * caller, see above.  On Windows fd is a HANDLE (CloseHandle). */
void closer_close(hm_fd fd);
/* closer_close of a descriptor that may be a socket (one a client passed,
 * before or instead of checking it): made cheap first (SO_LINGER {0, 0}),
 * so that neither the thread nor the fallback waits for a graceful end.
 * Files and memfds go to closer_close: the setsockopt would only fail. */
void closer_close_socket(hm_fd fd);

/* Closes fd on the caller's thread, for a descriptor whose close cannot
 * block: a regular file on a local data file system (ext4, XFS, tmpfs,
 * ...; never NFS or FUSE), or a memfd.  Waking the thread costs two
 * context switches, which on a virtual machine are most of the price of
 * an OPEN. */
void closer_close_now(hm_fd fd);

/* Closes done inline because the queue was full: a fuzz target's check
 * that the queue bound holds (tests/fuzz/fuzz_session.c). */
unsigned long closer_overflows(void);

/* Waits at most timeout_ms until nothing is queued.  True if drained. */
bool closer_drain(unsigned timeout_ms);

#endif
