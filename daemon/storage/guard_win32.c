/* SPDX-License-Identifier: MIT */
/*
 * guard_win32.c - guard.h on Windows: the guarded copy out of a file
 * mapping, with a vectored exception handler where Linux has SIGBUS.
 * Compiled instead of guard.c by the Windows build only.
 *
 * When a view's backing cannot be read (a disk or network error, a
 * removable medium gone), Windows raises EXCEPTION_IN_PAGE_ERROR on the
 * access; ExceptionInformation[1] is the address and [2] the NTSTATUS of
 * the failed I/O.  Windows refuses to shrink a file that has a view
 * (ERROR_USER_MAPPED_FILE), so the truncation that is SIGBUS's common
 * cause on Linux does not happen there.  wine does let the file shrink
 * underneath (from outside wine) and then raises EXCEPTION_ACCESS_VIOLATION
 * for the page that lost its backing: that is accepted too, for the
 * source range only, and only when the address is in a committed mapped
 * view (VirtualQuery), so that a wild pointer still crashes.
 *
 * How the recovery works: guard_copy() records a jump point (_setjmp with
 * no frame: msvcrt's longjmp then restores registers without unwinding,
 * like sigsetjmp(jb, 0)) and the two ranges in thread-local state, and
 * raises "active" around memcpy.  The handler does not longjmp from
 * inside the exception dispatcher; it resumes the thread at guard_bail()
 * on a fresh, aligned piece of the same stack, and guard_bail() jumps.
 * Anything that is not a fault of an active copy in one of its ranges is
 * left to the next handler (EXCEPTION_CONTINUE_SEARCH): a real bug still
 * crashes loudly.
 *
 * mingw's __thread is emulated (emutls: a function call, allocation on a
 * thread's first access).  guard_copy() touches the state before any
 * fault can happen, and keeps no local variable across the jump.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <windows.h>

#include "daemon/storage/guard.h"

struct guard_state {
	jmp_buf jb;
	uintptr_t lo;		/* source range of the running copy: [lo, hi) */
	uintptr_t hi;
	uintptr_t dlo;		/* its destination range: [dlo, dhi) */
	uintptr_t dhi;
	int which;		/* 1 source, 2 destination: what guard_bail says */
	/* Read by the handler; set only around the memcpy. */
	volatile LONG active;
};

static __thread struct guard_state guard_state;

static struct guard_state * __attribute__((noinline))
guard_self(void)
{
	return &guard_state;
}

static void __attribute__((noreturn, noinline))
guard_bail(void)
{
	struct guard_state *g = guard_self();

	longjmp(g->jb, g->which);
}

/* A committed page of a mapped view: what a copy out of a mapping reads. */
static bool
guard_in_view(uintptr_t addr)
{
	MEMORY_BASIC_INFORMATION mbi;

	return VirtualQuery((const void *)addr, &mbi, sizeof mbi) == sizeof mbi &&
	       mbi.Type == MEM_MAPPED && mbi.State == MEM_COMMIT;
}

static LONG CALLBACK
guard_on_exception(EXCEPTION_POINTERS *ep)
{
	const EXCEPTION_RECORD *er = ep->ExceptionRecord;
	CONTEXT *ctx = ep->ContextRecord;
	struct guard_state *g;
	uintptr_t addr;

	if (er->ExceptionCode != EXCEPTION_IN_PAGE_ERROR &&
	    er->ExceptionCode != EXCEPTION_ACCESS_VIOLATION)
		return EXCEPTION_CONTINUE_SEARCH;
	if (er->NumberParameters < 2)
		return EXCEPTION_CONTINUE_SEARCH;
	g = guard_self();
	if (!g->active)
		return EXCEPTION_CONTINUE_SEARCH;
	addr = (uintptr_t)er->ExceptionInformation[1];

	if (addr >= g->lo && addr < g->hi &&
	    (er->ExceptionCode == EXCEPTION_IN_PAGE_ERROR || guard_in_view(addr)))
		g->which = 1;
	else if (addr >= g->dlo && addr < g->dhi && er->ExceptionCode == EXCEPTION_IN_PAGE_ERROR)
		g->which = 2;
	else
		return EXCEPTION_CONTINUE_SEARCH;

	g->active = 0;
	/*
	 * Resume in guard_bail() as if it had been called: below the faulting
	 * frame with room for its home area, 16-byte aligned before the
	 * (absent) return address.
	 */
	ctx->Rsp = ((ctx->Rsp - 256) & ~(DWORD64)15) - 8;
	ctx->Rip = (DWORD64)(uintptr_t)guard_bail;
	return EXCEPTION_CONTINUE_EXECUTION;
}

int
guard_install(void)
{
	static PVOID handler;

	/* Idempotent, and safe if two threads race to install. */
	if (InterlockedCompareExchangePointer(&handler, NULL, NULL) != NULL)
		return 0;
	{
		PVOID h = AddVectoredExceptionHandler(1, guard_on_exception);

		if (h == NULL)
			return -ENOMEM;
		if (InterlockedCompareExchangePointer(&handler, h, NULL) != NULL)
			RemoveVectoredExceptionHandler(h);
	}
	return 0;
}

int
guard_copy(void *dst, const void *src, size_t len)
{
	struct guard_state *g = guard_self();

	if (len == 0)
		return 0;

	g->lo = (uintptr_t)src;
	g->hi = (uintptr_t)src + len;
	g->dlo = (uintptr_t)dst;
	g->dhi = (uintptr_t)dst + len;

	switch (_setjmp(g->jb, NULL)) {
	case 0:
		break;
	case 1:
		return -EFAULT;
	default:
		return GUARD_EFAULT_DST;
	}

	g->active = 1;
	/* the handler runs on this thread: a compiler fence orders enough */
	atomic_signal_fence(memory_order_seq_cst);
	memcpy(dst, src, len);
	atomic_signal_fence(memory_order_seq_cst);
	g->active = 0;
	return 0;
}
