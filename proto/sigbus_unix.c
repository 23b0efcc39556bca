/* SPDX-License-Identifier: MIT */
/*
 * sigbus_unix.c - see sigbus.h.  POSIX only: on Windows a fault in a
 * mapping is an exception each guard catches in its own way.
 *
 * How the recovery works: sigbus_copy records a jump point and the source
 * and destination ranges in thread-local storage, raises the thread's
 * "active" flag and runs memcpy.  A synchronous SIGBUS on that thread
 * whose address lies in a range makes sigbus_catch clear the flag and
 * jump back to the recorded point (with 1 for the source, 2 for the
 * destination), and sigbus_copy returns that.
 */
#include "config.h"

#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "proto/sigbus.h"

struct sigbus_state {
	sigjmp_buf jb;
	uintptr_t lo;		/* source range of the running copy: [lo, hi) */
	uintptr_t hi;
	uintptr_t dlo;		/* its destination range, or none: [dlo, dhi) */
	uintptr_t dhi;
	/* Read by the handler; set only around the memcpy. */
	volatile sig_atomic_t active;
};

/*
 * initial-exec: the handler reads this variable, and the general-dynamic
 * model could allocate on first access (__tls_get_addr), which is not
 * async-signal-safe.  Every copy touches it before any fault can happen.
 * (In libhotmap, a library a program may load with dlopen, it comes out
 * of the static TLS surplus.)
 */
static __thread struct sigbus_state sigbus_state __attribute__((tls_model("initial-exec")));

bool
sigbus_sync_fault(const siginfo_t *si)
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

void
sigbus_catch(const siginfo_t *si)
{
	struct sigbus_state *g = &sigbus_state;
	uintptr_t addr;

	if (!g->active || !sigbus_sync_fault(si))
		return;
	addr = (uintptr_t)si->si_addr;
	if (addr >= g->lo && addr < g->hi) {
		g->active = 0;
		siglongjmp(g->jb, SIGBUS_FAULT_SRC);
	}
	if (addr >= g->dlo && addr < g->dhi) {
		g->active = 0;
		siglongjmp(g->jb, SIGBUS_FAULT_DST);
	}
}

int
sigbus_copy(void *dst, const void *src, size_t len, bool dst_too)
{
	struct sigbus_state *g = &sigbus_state;

	if (len == 0)
		return SIGBUS_COPY_DONE;
	g->lo = (uintptr_t)src;
	g->hi = (uintptr_t)src + len;
	g->dlo = dst_too ? (uintptr_t)dst : 0;
	g->dhi = dst_too ? (uintptr_t)dst + len : 0;
	/*
	 * No local variable is modified between sigsetjmp() and a possible
	 * siglongjmp(), so none needs to be volatile; the state the handler
	 * reads lives in thread-local storage, published by the fences below.
	 * sigbus_catch cleared g->active before it jumped.  (sigsetjmp as a
	 * switch's whole controlling expression: where C allows it.)
	 */
	switch (sigsetjmp(g->jb, 0)) {
	case 0:
		break;
	case SIGBUS_FAULT_SRC:
		return SIGBUS_FAULT_SRC;
	default:
		return SIGBUS_FAULT_DST;
	}
	g->active = 1;
	/* Keep the range and flag stores before, and every access of the
	 * copy after, this point, as seen from a signal handler. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	memcpy(dst, src, len);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	g->active = 0;
	return SIGBUS_COPY_DONE;
}
