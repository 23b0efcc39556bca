/* SPDX-License-Identifier: MIT */
/*
 * direct_guard_unix.c - the direct tier's SIGBUS guard: the library's
 * handler, put in front of the program's at every promotion
 * (guard_ensure), over the copy core it shares with the daemon
 * (proto/sigbus.h).  A fault of a guarded copy jumps back into it
 * (guarded_copy returns -EFAULT); a fault in a mapping of the handler's
 * table (guard_watch), a view's, is repaired: zero pages over what the
 * file lost, and the mapping marked lost; any other fault goes to the
 * program's handlers, the newest first and each once as one chains to the
 * next, and then to the default action (on_sigbus).
 *
 * Must not: swallow a SIGBUS that is not its own, or hand one fault to
 * the same handler twice; allocate or take a lock in the handler (it
 * reads its tables without one).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "client/direct_priv.h"
#include "proto/sigbus.h"

/* Mappings the handler may repair, for views; a slot is claimed with a
 * compare-and-swap (guard_watch) and read by the handler without a
 * lock.  One per granted file mapped, and the idle ones: as many as the
 * slots hotmapd uses at most (HM_DIRECT_SLOTS_MAX).  512 KiB of zeros
 * until used, 8 bytes touched per mapping; claimed next fit from where the
 * last was (maps_next), so that a claim is O(1) while the table is mostly
 * free, and let go by the entry the mapping keeps (watched). */
#define DIRECT_MAPS_MAX 65536
static struct mapping *maps[DIRECT_MAPS_MAX];
static size_t maps_next;	/* atomic: where the next claim looks first */

/*
 * The handlers the library found in SIGBUS's place when it put its own
 * in front (guard_ensure), oldest first: a fault that is not the
 * library's goes to the newest, and on down the list as each chains to
 * the handler it found (see on_sigbus).  An entry is written before
 * nprev counts it and never changes after, so that the handler reads the
 * list without a lock.
 */
#define PREV_MAX 16
static struct sigaction prevs[PREV_MAX];
static unsigned nprev;		/* atomic */
static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;

/* The pages of m from the one at addr on are gone (the file shrank): zero
 * pages in their place, so that the access runs again and reads zeros. */
static bool
repair(uintptr_t addr)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t i;

	for (i = 0; i < DIRECT_MAPS_MAX; i++) {
		struct mapping *m = __atomic_load_n(&maps[i], __ATOMIC_ACQUIRE);
		uintptr_t lo, hi, from;

		if (m == NULL)
			continue;
		lo = (uintptr_t)m->base;
		hi = lo + m->len;
		if (addr < lo || addr >= hi)
			continue;
		from = addr & ~((uintptr_t)page - 1);
		/* lost before the zeros are there: a read that copied them
		 * finds it set when it looks after its copy (direct_read) */
		__atomic_store_n(&m->lost, 1, __ATOMIC_SEQ_CST);
		if (mmap((void *)from, hi - from, PROT_READ,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
			return false;
		return true;
	}
	return false;
}

/*
 * A fault the handler is handing to one of the program's handlers, while
 * that handler runs: the fault's siginfo and context as the kernel gave
 * them, on_sigbus's frame, and the entry of prevs it went to.  Per
 * thread, initial-exec (as proto/sigbus_unix.c's copy state): the handler
 * reads it, and must not allocate on its first access.
 */
struct forward {
	const siginfo_t *si;
	const void *uc;
	uintptr_t frame;
	unsigned to;
	volatile sig_atomic_t live;
};

static __thread struct forward forward __attribute__((tls_model("initial-exec")));

/* The default action: the program dies of the signal, as it would have
 * without the library (a synchronous fault with SIGBUS ignored too). */
static void
sigbus_default(void)
{
	signal(SIGBUS, SIG_DFL);
	raise(SIGBUS);
}

/*
 * Whether this entry of on_sigbus, at frame, is the program's handler
 * calling back the handler it found (the library's) while the library is
 * handing it the fault: a call, not a new fault, so the fault must go on
 * down the chain, not to that handler once more.
 *
 * Each promotion puts the library's handler in front again (guard_ensure),
 * so a program handler installed since, that chains to what it found,
 * found the library's: the library forwards to it, it calls the library,
 * and forwarding to it again made the two call each other for ever (a
 * program's real fault spun at 100% CPU instead of killing it; issue
 * 26).  Such a call comes while the forward is live on this thread, from
 * deeper in the stack (the program's handler runs on the forward's frame:
 * the stack grows down on every Linux target the library is built for),
 * and with the siginfo or context the library passed (a handler with no
 * siginfo of its own, an sa_handler one, passes NULL).
 *
 * A handler that jumps out of the forward (a database's own guard
 * siglongjmps from its handler) leaves the record live but stale.  A new
 * fault is never mistaken for a call back: one at the same depth enters
 * on_sigbus at the same frame, not a deeper one; one from deeper frames
 * comes with a siginfo and context the kernel wrote below them, not the
 * stale ones.  (The faulting address alone would not do: a guarded read
 * of the same page from a deeper function was taken for a loop and the
 * program killed.)
 */
static bool
called_back(const struct forward *fw, const siginfo_t *si, const void *uc, uintptr_t frame)
{
	return fw->live && frame < fw->frame &&
	       (si == NULL || si == fw->si || (uc != NULL && uc == fw->uc));
}

static void
on_sigbus(int sig, siginfo_t *si, void *uc)
{
	struct forward *fw = &forward, saved;
	uintptr_t frame = (uintptr_t)__builtin_frame_address(0);
	const struct sigaction *to;
	unsigned k;

	if (sigbus_sync_fault(si)) {
		/* a guarded copy's (guarded_copy): jumps back into it */
		sigbus_catch(si);
		if (repair((uintptr_t)si->si_addr))
			return;
	}
	/* Not ours: the program's newest handler, or, when one chained back
	 * to us, the one it had found before it. */
	k = called_back(fw, si, uc, frame) ? fw->to : __atomic_load_n(&nprev, __ATOMIC_ACQUIRE);
	if (k == 0) {
		sigbus_default();
		return;
	}
	to = &prevs[k - 1];
	/* (sa_handler and sa_sigaction share their place: SIG_DFL is a null
	 * sa_sigaction too) */
	if (to->sa_handler == SIG_DFL || to->sa_handler == SIG_IGN) {
		sigbus_default();
		return;
	}
	/* Recorded for the length of the call (a fault inside it, a new
	 * one, keeps the record of the one it interrupted), and not a tail
	 * call: the frame stays, deeper than any call back. */
	saved = *fw;
	fw->live = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	fw->si = si;
	fw->uc = uc;
	fw->frame = frame;
	fw->to = k - 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	fw->live = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (to->sa_flags & SA_SIGINFO)
		to->sa_sigaction(sig, si, uc);
	else
		to->sa_handler(sig);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	fw->live = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	*fw = saved;
}

/* Whether a and b run the same handler. */
static bool
same_action(const struct sigaction *a, const struct sigaction *b)
{
	if ((a->sa_flags & SA_SIGINFO) != (b->sa_flags & SA_SIGINFO))
		return false;
	return a->sa_flags & SA_SIGINFO ? a->sa_sigaction == b->sa_sigaction :
	       a->sa_handler == b->sa_handler;
}

/*
 * Puts the handler in place, in front of whatever the program has there
 * now: at every promotion, so that a handler the program installed since
 * (after its first hm_open) that does not chain never meets the library's
 * faults.  What it found goes on the list the handler forwards down
 * (prevs), unless it is the newest there already (a program that puts
 * its one handler back now and then).  0, or -EBUSY when SIGBUS cannot
 * be had: a sanitizer keeps it, or the program has put PREV_MAX handlers
 * there between promotions, and its newest then stays in front (chained
 * to the library's, if it chains) and nothing more is promoted.
 */
int
guard_ensure(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO | SA_NODEFER };
	struct sigaction cur, prev;
	unsigned n;
	int rc = 0;

	sigemptyset(&sa.sa_mask);
	pthread_mutex_lock(&guard_lock);
	n = __atomic_load_n(&nprev, __ATOMIC_RELAXED);
	if (sigaction(SIGBUS, NULL, &cur) < 0)
		rc = -errno;
	else if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sigbus)
		;	/* in front already */
	else if (sigaction(SIGBUS, &sa, &prev) < 0 || sigaction(SIGBUS, NULL, &cur) < 0)
		rc = -errno;
	else if (!(cur.sa_flags & SA_SIGINFO) || cur.sa_sigaction != on_sigbus)
		rc = -EBUSY;
	else if (n > 0 && same_action(&prevs[n - 1], &prev))
		;	/* the newest link of the chain already */
	else if (n == PREV_MAX) {
		sigaction(SIGBUS, &prev, NULL);
		rc = -EBUSY;
	} else {
		prevs[n] = prev;
		__atomic_store_n(&nprev, n + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&guard_lock);
	return rc;
}

/* memcpy, but -EFAULT when the source faulted (the destination is the
 * caller's: a fault there is not the library's). */
int
guarded_copy(void *dst, const void *src, size_t len)
{
	return sigbus_copy(dst, src, len, false) == SIGBUS_COPY_DONE ? 0 : -EFAULT;
}

/* Reads a byte of every page of [src, src + len): 0, or -EFAULT when one
 * faulted (the file shrank). */
int
guarded_touch(const uint8_t *src, size_t len)
{
	size_t off;
	uint8_t b;

	for (off = 0; off < len; off += (size_t)1 << PAGE_SHIFT_4K)
		if (guarded_copy(&b, src + off, 1) < 0)
			return -EFAULT;
	return 0;
}

/* m into the handler's table, so that a fault in it is repaired: 0, or
 * -ENFILE when the table is full (a view of it could not be repaired). */
int
guard_watch(struct mapping *m)
{
	size_t i, k, from = __atomic_load_n(&maps_next, __ATOMIC_RELAXED);

	for (k = 0; k < DIRECT_MAPS_MAX; k++) {
		struct mapping *none = NULL;

		i = (from + k) % DIRECT_MAPS_MAX;
		if (__atomic_load_n(&maps[i], __ATOMIC_RELAXED) == NULL &&
		    __atomic_compare_exchange_n(&maps[i], &none, m, false, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			m->watched = (uint32_t)i;
			__atomic_store_n(&maps_next, (i + 1) % DIRECT_MAPS_MAX, __ATOMIC_RELAXED);
			return 0;
		}
	}
	return -ENFILE;
}

/* m out of the handler's table, before it is unmapped. */
void
guard_unwatch(struct mapping *m)
{
	if (__atomic_load_n(&maps[m->watched], __ATOMIC_RELAXED) == m)
		__atomic_store_n(&maps[m->watched], NULL, __ATOMIC_RELEASE);
}
