/* SPDX-License-Identifier: MIT */
/*
 * guard.c - see guard.h.
 *
 * How the recovery works: guard_copy() records a jump point and the source
 * and destination ranges in thread-local storage, raises a per-thread
 * "active" flag and runs memcpy.  A SIGBUS on that thread whose fault
 * address lies in either range jumps back to the recorded point (with 1
 * for the source, 2 for the destination), and guard_copy() returns -EFAULT
 * or GUARD_EFAULT_DST.
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
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "daemon/storage/guard.h"

struct guard_state {
	sigjmp_buf jb;
	uintptr_t lo;		/* source range of the running copy: [lo, hi) */
	uintptr_t hi;
	uintptr_t dlo;		/* its destination range: [dlo, dhi) */
	uintptr_t dhi;
	/* Read by the handler; set only around the memcpy. */
	volatile sig_atomic_t active;
};

/*
 * initial-exec: the handler reads this variable, and the general-dynamic
 * model could allocate on first access (__tls_get_addr), which is not
 * async-signal-safe.  Every copy touches it before any fault can happen.
 */
static __thread struct guard_state guard_state __attribute__((tls_model("initial-exec")));

static void guard_restore_default(void)
{
	struct sigaction sa = { .sa_handler = SIG_DFL };

	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGBUS, &sa, NULL);
}

/*
 * A SIGBUS raised by the access the thread was executing.  Not so:
 * kill(2), sigqueue(3) (si_code <= 0, and the bytes of si_addr then hold
 * the sender's pid and uid) and BUS_MCEERR_AO, the kernel's early warning
 * about a poisoned page that nobody is touching right now.
 */
static bool guard_sync_fault(const siginfo_t *si)
{
	if (si == NULL)
		return false;
	switch (si->si_code) {
	case BUS_ADRALN:
	case BUS_ADRERR:
	case BUS_OBJERR:	/* the page cannot be read: I/O error */
#ifdef BUS_MCEERR_AR
	case BUS_MCEERR_AR:	/* the page is poisoned and was accessed */
#endif
		return true;
	default:
		return false;
	}
}

static void guard_on_sigbus(int sig, siginfo_t *si, void *ucontext)
{
	struct guard_state *g = &guard_state;

	(void)sig;
	(void)ucontext;
	/*
	 * Ours only when this thread is inside a guarded copy, the access
	 * faulted, and the fault address is in one of the copy's two ranges.
	 * A fault in any other code, or at another address, is a bug and must
	 * still crash.
	 */
	if (g->active && guard_sync_fault(si)) {
		uintptr_t addr = (uintptr_t)si->si_addr;

		if (addr >= g->lo && addr < g->hi) {
			g->active = 0;
			siglongjmp(g->jb, 1);
		}
		if (addr >= g->dlo && addr < g->dhi) {
			g->active = 0;
			siglongjmp(g->jb, 2);
		}
	}

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
	struct guard_state *g = &guard_state;

	if (len == 0)
		return 0;

	g->lo = (uintptr_t)src;
	g->hi = (uintptr_t)src + len;
	g->dlo = (uintptr_t)dst;
	g->dhi = (uintptr_t)dst + len;

	/*
	 * No local variable is modified between sigsetjmp() and a possible
	 * siglongjmp(), so none needs to be volatile; the state the handler
	 * reads lives in thread-local storage, published by the fences below.
	 * The handler cleared g->active before it jumped.
	 */
	switch (sigsetjmp(g->jb, 0)) {
	case 0:
		break;
	case 1:
		return -EFAULT;
	default:
		return GUARD_EFAULT_DST;
	}

	g->active = 1;
	/* Keep the range and flag stores before, and every access of the
	 * copy after, this point, as seen from a signal handler. */
	atomic_signal_fence(memory_order_seq_cst);
	memcpy(dst, src, len);
	atomic_signal_fence(memory_order_seq_cst);
	g->active = 0;
	return 0;
}
