/* SPDX-License-Identifier: MIT */
/*
 * guard_unix.c - see guard.h.
 *
 * The recovery is the core the library's guard shares (proto/sigbus.h):
 * guard_copy() is a sigbus_copy() that guards its destination too, and
 * the handler hands every SIGBUS to sigbus_catch(), which jumps back into
 * the copy when the fault is one of its ranges'.  What is the daemon's is
 * the rule for every other SIGBUS: the process dies of it.
 *
 * No system call per copy: the handler is installed with SA_NODEFER and an
 * empty sa_mask, so entering it blocks nothing, and the jump back uses
 * sigsetjmp(jb, 0), which neither saves nor restores the signal mask.  The
 * mask after the jump is therefore exactly the mask before the copy.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "daemon/storage/guard.h"
#include "proto/sigbus.h"

static void guard_restore_default(void)
{
	struct sigaction sa = { .sa_handler = SIG_DFL };

	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGBUS, &sa, NULL);
}

static void guard_on_sigbus(int sig, siginfo_t *si, void *ucontext)
{
	(void)sig;
	(void)ucontext;
	/*
	 * Ours only when this thread is inside a guarded copy, the access
	 * faulted, and the fault address is in one of the copy's two ranges:
	 * sigbus_catch() then jumps back into the copy.  A fault in any other
	 * code, or at another address, is a bug and must still crash.
	 */
	sigbus_catch(si);

	/*
	 * Not ours: die of it with the default action.  Returning so that
	 * the access runs again is not enough: a signal that no access
	 * raised does not come back, nor does a fault whose page became
	 * readable meanwhile (the file grew back); either would leave the
	 * process alive with SIG_DFL in place of the guard, to die of the
	 * next fault that a guarded copy should have survived.  SIGBUS is
	 * not blocked here (SA_NODEFER), so raise() does not return; the
	 * original siginfo stays in the core, in this frame.
	 */
	guard_restore_default();
	(void)raise(SIGBUS);
}

int guard_install(void)
{
	struct sigaction sa = {
		.sa_sigaction = guard_on_sigbus,
		/* SA_NODEFER and the empty sa_mask: see the top of the file. */
		.sa_flags = SA_SIGINFO | SA_NODEFER,
	};
	struct sigaction cur;

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL) < 0)
		return -errno;

	/*
	 * A sanitizer that keeps SIGBUS to itself (ASan with handle_sigbus=2)
	 * ignores sigaction() and still returns 0: read the action back.
	 */
	if (sigaction(SIGBUS, NULL, &cur) < 0)
		return -errno;
	if (!(cur.sa_flags & SA_SIGINFO) || cur.sa_sigaction != guard_on_sigbus)
		return -EBUSY;
	return 0;
}

int guard_copy(void *dst, const void *src, size_t len)
{
	switch (sigbus_copy(dst, src, len, true)) {
	case SIGBUS_COPY_DONE:
		return 0;
	case SIGBUS_FAULT_SRC:
		return -EFAULT;
	default:
		return GUARD_EFAULT_DST;
	}
}
