/* SPDX-License-Identifier: MIT */
/*
 * sigbus.h - the core of the SIGBUS guards of hotmapd and of libhotmap:
 * whether a SIGBUS was raised by the access the thread was making
 * (sigbus_sync_fault), and a copy that such a fault in its source (or,
 * when asked, its destination) ends early instead of killing the process
 * (sigbus_copy), jumped back into by the guard's handler (sigbus_catch).
 * Each thread has its own jump point and ranges.
 *
 * What it is for: a mapping turns a file cut short, or a page that cannot
 * be read, into SIGBUS at the next access.  The daemon copying out of its
 * file mappings and the library reading a granted file out of its own
 * mapping survive such a fault of a copy the same way, with this code.
 * Not the wire format: a technique both ends use, kept here because
 * proto/ is what the two share.
 *
 * What it must not do: install a handler, or decide anything about a
 * fault that is not a running copy's: that is each guard's policy.  The
 * daemon dies of it (daemon/storage/guard_unix.c); the library repairs
 * its own mappings and hands the rest to the program's handlers
 * (client/direct_guard_unix.c).
 *
 * The handler that calls sigbus_catch must be installed with SA_NODEFER
 * and an empty sa_mask: the jump back uses sigsetjmp(jb, 0), which
 * neither saves nor restores the signal mask, so that a copy makes no
 * system call and the mask after a jump is the mask before the copy.
 * Thread-safe; not reentrant on one thread (no copy from a handler).
 */
#ifndef HOTMAP_PROTO_SIGBUS_H
#define HOTMAP_PROTO_SIGBUS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

/* What sigbus_copy returns. */
#define SIGBUS_COPY_DONE	0
#define SIGBUS_FAULT_SRC	1	/* a fault in the source ended it */
#define SIGBUS_FAULT_DST	2	/* a fault in the destination ended it */

/*
 * Whether si is a SIGBUS raised by the access the thread was making: a
 * misaligned address, one past the end of the file, a page that cannot
 * be read (I/O error), or a poisoned page that was accessed.  Not so:
 * kill(2), sigqueue(3) (si_code <= 0, and the bytes of si_addr then hold
 * the sender's pid and uid) and BUS_MCEERR_AO, the kernel's early warning
 * about a poisoned page that nobody is touching right now.
 */
bool sigbus_sync_fault(const siginfo_t *si);

/*
 * memcpy(dst, src, len), but one that a SIGBUS its guard's handler hands
 * to sigbus_catch ends: SIGBUS_COPY_DONE, or SIGBUS_FAULT_SRC when the
 * fault hit [src, src + len), or (dst_too) SIGBUS_FAULT_DST when it hit
 * [dst, dst + len); a range that is both, memcpy of overlapping memory,
 * is the source's.  dst is then partly written.
 */
int sigbus_copy(void *dst, const void *src, size_t len, bool dst_too);

/*
 * From a SIGBUS handler: when si is a synchronous fault (above) in a range
 * of the copy running on this thread, jumps back into that sigbus_copy,
 * which returns; else returns, and the fault is the caller's to deal
 * with.  Async-signal-safe.
 */
void sigbus_catch(const siginfo_t *si);

#endif
