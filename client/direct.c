/* SPDX-License-Identifier: MIT */
/*
 * direct.c - the direct tier: reading a granted file from the client's own
 * mapping of it, with no round trip (docs/design.md, "Tiers";
 * proto/direct.h).
 *
 * A file is granted at OPEN (the daemon holds a read lease on it and gave
 * the handle a slot in the region's slot table) and promoted here when it
 * is hot for this process: after HOTMAP_DIRECT_AFTER reads through the
 * daemon, or at once with HM_O_DIRECT, HM_O_WARM or hm_warm.  Promotion
 * maps the descriptor the client opened itself.
 *
 * A read loads the slot's generation, checks it is the grant's, copies
 * under this file's SIGBUS guard, and loads it again: a change in between
 * means the daemon revoked the grant (someone waits to write the file)
 * and the read goes through the daemon instead.  Reads take no lock, so
 * threads read in parallel.
 *
 * Views point into the mapping.  If the file shrinks under a view anyway
 * (the lease was broken by force, or a writer that kept a writable mapping
 * truncated nothing but the lease did not cover), the SIGBUS handler maps
 * zero pages over the lost part and marks the mapping lost, so that
 * touching the view never kills the program; hm_view_check reports it.
 * Nothing is read out of a lost mapping again: reads are pread's, views
 * the daemon's (map_lost).
 * Faults that are not ours go to the program's handlers, the newest
 * first and each once as one chains to the next, and then to the
 * default action (on_sigbus).
 *
 * Must not: read through a grant whose generation changed, take the
 * client's lock on the read path, or swallow a SIGBUS that is not its own.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "client/client_priv.h"
#include "client/clock.h"
#include "client/page_state.h"
#include "proto/direct.h"
#include "proto/pagemap.h"
#include "proto/sigbus.h"

/*
 * A mapping of a file: the memory and its page tables, which cost a fault
 * per page to build.  A process that closes a file and opens it again
 * (each epoch, each connection, each round) finds it here: an idle mapping
 * is kept, up to MAPPINGS_IDLE_MAX of them, and reused by the next grant
 * on the same file whose size it covers.  Its bytes are the page cache's
 * (MAP_SHARED), so a reused mapping shows the file as it is now; the grant
 * bounds what may be read of it.  One whose pages were zero-filled
 * (lost) is never reused.
 */
struct mapping {
	uint8_t *base;
	size_t len;
	uint64_t dev, ino;
	pid_t pid;		/* the process whose page tables these are */
	/* Per page: the reads of it with pread, and whether it is touched
	 * through the mapping (its page table entry built).  See
	 * direct_read. */
	struct page_state pages;
	unsigned refs;		/* grants using it; under maps_lock */
	int lost;		/* atomic: pages were gone and zero-filled */
	uint64_t populate_ns;	/* atomic: a block's cost, estimated (direct_read) */
	/* atomic: moving averages of a small read's cost, ns, each way (0:
	 * not measured yet), and the reads so far, which pick the timed ones */
	uint32_t copy_ns, pread_ns;
	unsigned tick;
	unsigned burst;		/* atomic: copies still to time in a row */
	struct mapping *prev, *next;	/* on `idle` while refs == 0 */
};

/* A grant in use: the mapping, read under the slot's generation.  Held by
 * the file and by each view into it. */
struct direct_map {
	struct mapping *map;
	uint8_t *base;		/* map->base */
	size_t maplen;		/* the size the grant holds (<= map->len) */
	struct hm_direct_slot *slot;	/* the grant's, in region's table */
	uint64_t gen;		/* the grant's generation */
	struct hm_region *region;	/* held: the slot is in its table */
	unsigned refs;		/* atomic */
};

#define MAPPINGS_IDLE_MAX	32
#define PAGE_SHIFT_4K		12
/* Reads of at least this many bytes are a copy whichever way: the
 * kernel's (pread on the client's own descriptor) needs no page tables in
 * this process, and at 64 KiB the system call is a small part of it.
 * Shorter ones go through the mapping once hot.  (At 256 KiB, 4 processes
 * sampling random 64 KiB records of a hot 1 GiB file read at 0.59x the
 * rate of pread on the test VM, copying out of touched pages; at 64 KiB,
 * 1.00x: hmbench sample.) */
#define DIRECT_PREAD_MIN	(64u * 1024u)
/* ... unless their pages are touched already (a populated block): up to
 * this size a memcpy out of touched pages beats the kernel's copy. */
#define DIRECT_COPY_MAX		(256u * 1024u)
/* What a read out of touched pages saves against pread (touch_after). */
#define TOUCH_SAVES_NS		1500u
/* What populating a block costs, until a block of the mapping says (see
 * populate_block): the least that buys one at its fourth read.  A file
 * in huge folios (hotmapd's huge-folios) costs 10-30 us a block on the
 * test VM, one in 4 KiB pages 800 us and up; the first blocks measure
 * which. */
#define POPULATE_BLOCK_NS	(4u * TOUCH_SAVES_NS)
static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mapping *idle;	/* most recently idle first */
static unsigned nidle;

/* --- the guard ------------------------------------------------------- */

/* Mappings the handler may repair, for views; a slot is claimed with a
 * compare-and-swap and read by the handler without a lock. */
#define DIRECT_MAPS_MAX 4096
static struct mapping *maps[DIRECT_MAPS_MAX];

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
static int
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
static int
guarded_copy(void *dst, const void *src, size_t len)
{
	return sigbus_copy(dst, src, len, false) == SIGBUS_COPY_DONE ? 0 : -EFAULT;
}

/* Reads a byte of every page of [src, src + len): 0, or -EFAULT when one
 * faulted (the file shrank). */
static int
guarded_touch(const uint8_t *src, size_t len)
{
	size_t off;
	uint8_t b;

	for (off = 0; off < len; off += (size_t)1 << PAGE_SHIFT_4K)
		if (guarded_copy(&b, src + off, 1) < 0)
			return -EFAULT;
	return 0;
}

/* --- mappings -------------------------------------------------------- */

/* Unmaps m, which no one uses, and takes it out of the handler's table. */
static void
mapping_destroy(struct mapping *m)
{
	size_t i;

	for (i = 0; i < DIRECT_MAPS_MAX; i++)
		if (__atomic_load_n(&maps[i], __ATOMIC_RELAXED) == m)
			__atomic_store_n(&maps[i], NULL, __ATOMIC_RELEASE);
	munmap(m->base, m->len);
	page_state_free(&m->pages);
	free(m);
}

static void
idle_unlink(struct mapping *m)
{
	if (m->prev != NULL)
		m->prev->next = m->next;
	else
		idle = m->next;
	if (m->next != NULL)
		m->next->prev = m->prev;
	m->prev = m->next = NULL;
	nidle--;
}

/* A grant is done with m: kept for the next, or unmapped. */
static void
mapping_put(struct mapping *m)
{
	struct mapping *old = NULL;

	pthread_mutex_lock(&maps_lock);
	if (--m->refs > 0) {
		pthread_mutex_unlock(&maps_lock);
		return;
	}
	if (__atomic_load_n(&m->lost, __ATOMIC_ACQUIRE)) {
		pthread_mutex_unlock(&maps_lock);
		mapping_destroy(m);
		return;
	}
	m->next = idle;
	if (idle != NULL)
		idle->prev = m;
	idle = m;
	nidle++;
	if (nidle > MAPPINGS_IDLE_MAX) {
		for (old = idle; old->next != NULL; old = old->next)
			;
		idle_unlink(old);	/* the least recently idle */
	}
	pthread_mutex_unlock(&maps_lock);
	if (old != NULL)
		mapping_destroy(old);
}

/*
 * The process's last client is gone (hm_disconnect): its idle mappings go
 * too.  Each holds its file's pages mapped, so that nothing could drop
 * them from the page cache (POSIX_FADV_DONTNEED skips mapped pages: an
 * operator's eviction, a benchmark's cold start), and a deleted file's
 * blocks on the disk.  A process that reads a file every epoch keeps a
 * client across its epochs and its mappings with it.  A forked child
 * leaves its parent's be (mapping_get).
 */
void
direct_release_idle(void)
{
	struct mapping *m, *next, *gone = NULL;
	pid_t pid = fork_pid();

	pthread_mutex_lock(&maps_lock);
	for (m = idle; m != NULL; m = next) {
		next = m->next;
		if (m->pid != pid)
			continue;
		idle_unlink(m);
		m->next = gone;
		gone = m;
	}
	pthread_mutex_unlock(&maps_lock);
	for (m = gone; m != NULL; m = next) {
		next = m->next;
		mapping_destroy(m);
	}
}

/* A mapping of f's file covering len bytes: an idle one, or a new one of
 * the descriptor fd.  NULL and errno. */
static struct mapping *
mapping_get(const hm_file *f, int fd, size_t len)
{
	struct mapping *m, *stale = NULL;
	size_t i;

	/* A forked child has its parent's idle mappings but not their page
	 * tables (fork copies none for shared file mappings), so their marks
	 * would lie: it leaves them be (destroying one would fault in the
	 * parent's pages of page state only to free them) and maps anew. */
	pthread_mutex_lock(&maps_lock);
	for (m = idle; m != NULL; m = m->next)
		if (m->dev == f->st.dev && m->ino == f->st.ino && m->pid == fork_pid())
			break;
	if (m != NULL) {
		idle_unlink(m);
		if (m->len >= len) {
			m->refs = 1;
			pthread_mutex_unlock(&maps_lock);
			return m;	/* its page tables are built already */
		}
		stale = m;	/* the file grew past it */
	}
	pthread_mutex_unlock(&maps_lock);
	if (stale != NULL)
		mapping_destroy(stale);
	m = calloc(1, sizeof *m);
	if (m == NULL)
		return NULL;
	if (page_state_init(&m->pages, len >> PAGE_SHIFT_4K) < 0) {
		free(m);
		errno = ENOMEM;
		return NULL;
	}
	m->base = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (m->base == MAP_FAILED) {
		int err = errno;

		page_state_free(&m->pages);
		free(m);
		errno = err;
		return NULL;
	}
	m->len = len;
	m->populate_ns = POPULATE_BLOCK_NS;
	m->pid = fork_pid();
	m->dev = f->st.dev;
	m->ino = f->st.ino;
	m->refs = 1;
	for (i = 0; i < DIRECT_MAPS_MAX; i++) {
		struct mapping *none = NULL;

		if (__atomic_compare_exchange_n(&maps[i], &none, m, false, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED))
			return m;
	}
	/* a view of it could not be repaired: no direct reads */
	munmap(m->base, m->len);
	page_state_free(&m->pages);
	free(m);
	errno = ENFILE;
	return NULL;
}

static void
map_unref(struct direct_map *m)
{
	if (m == NULL || __atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	mapping_put(m->map);
	region_unref(m->region);
	free(m);
}

void
direct_map_unref(struct direct_map *m)
{
	map_unref(m);
}

void
direct_map_ref(struct direct_map *m)
{
	__atomic_add_fetch(&m->refs, 1, __ATOMIC_RELAXED);
}

/* The grant's slot, or NULL when f has none. */
static struct hm_direct_slot *
grant_slot(const hm_file *f)
{
	struct hm_region *r = f->c->region;

	if (!f->direct_ok || r == NULL || r->slots == NULL || f->dslot >= r->nslots)
		return NULL;
	return &r->slots[f->dslot];
}

bool
direct_grant_holds(const hm_file *f)
{
	struct hm_direct_slot *s = grant_slot(f);

	return s != NULL && hm_direct_gen(s) == f->dgen;
}

/* Forgets f's grant and mapping (a reopen, a close).  Lock held. */
void
direct_drop(hm_file *f)
{
	struct direct_map *m = __atomic_exchange_n(&f->dm, NULL, __ATOMIC_ACQ_REL);

	map_unref(m);
	f->direct_ok = false;
	if (f->own_fd >= 0)
		close(f->own_fd);
	f->own_fd = -1;
}

/*
 * Maps f for direct reads, when it is granted and not mapped yet.  0, or
 * -errno (f then stays on the daemon's tiers).  Lock held.
 */
int
direct_promote(hm_file *f)
{
	int fd = f->fd >= 0 ? f->fd : f->own_fd;
	struct direct_map *m;

	if (f->dm != NULL)
		return 0;
	if (fd < 0 || !direct_grant_holds(f))
		return -ENOENT;
	if (f->dsize == 0 || f->dsize > SIZE_MAX || guard_ensure() < 0)
		return -ENOTSUP;
	m = calloc(1, sizeof *m);
	if (m == NULL)
		return -ENOMEM;
	m->map = mapping_get(f, fd, (size_t)f->dsize);
	if (m->map == NULL) {
		int err = errno;

		free(m);
		f->direct_ok = false;
		return -err;
	}
	m->base = m->map->base;
	m->maplen = (size_t)f->dsize;
	m->refs = 1;
	m->slot = grant_slot(f);
	m->gen = f->dgen;
	m->region = f->c->region;
	region_ref(m->region);
	/* hm_open's own descriptor stays open with the grant: the reads
	 * that go through the kernel use it (direct_read) */
	__atomic_store_n(&f->dm, m, __ATOMIC_RELEASE);
	return 0;
}

/* f was read through the daemon: n more bytes.  Promotes it once it is
 * hot enough.  Takes the lock when it promotes. */
void
direct_heat(hm_file *f, ssize_t n)
{
	hm_client *c = f->c;

	if (!f->direct_ok || f->dm != NULL || n < 0)
		return;
	f->heat_reads++;
	if (f->heat_reads < c->direct_after)
		return;
	pthread_mutex_lock(c->lock);
	/* not while another thread reconnects: it reopens f */
	if (c->pid == fork_pid() && !c->exclusive)
		(void)direct_promote(f);
	pthread_mutex_unlock(c->lock);
}

/* The mapping f reads through now, or NULL (none, revoked, another
 * process's).  It may be lost (map_lost): the caller looks. */
static struct direct_map *
live_map(hm_file *f)
{
	struct direct_map *m = __atomic_load_n(&f->dm, __ATOMIC_ACQUIRE);

	if (m == NULL || f->c->pid != fork_pid() || hm_direct_gen(m->slot) != m->gen)
		return NULL;
	return m;
}

/*
 * Whether m's pages were gone and zero-filled (repair): the file shrank
 * while the grant held, which only a lease the kernel broke by force
 * allows (the daemon stopped or too slow to revoke; issue 26).  Until the
 * daemon revokes, the generation says nothing, so nothing may be read
 * out of the mapping: its zeros are not the file's, and its size is not
 * the file's any more.
 */
static bool
map_lost(const struct direct_map *m)
{
	return __atomic_load_n(&m->map->lost, __ATOMIC_SEQ_CST) != 0;
}

/*
 * When a page is worth touching through the mapping: once it has been read
 * with pread touch_after() times.  Touching costs a page fault, a fraction
 * of a microsecond on bare metal, but on a virtual machine with shadow
 * page tables each first touch exits to the hypervisor (2.7 us and up on
 * the test VM, far more under load); a read out of a touched page then
 * saves about TOUCH_SAVES_NS against a 4 KiB pread.  So a page is touched
 * once its reads so far would have paid for the touch.  The cost is a
 * moving average over every touch (per page), not a sample taken once: it
 * changes with the load and with the virtual machine's shadow entries
 * (a page that another mapping of the process touched costs nothing; one
 * whose entries were aged out costs a trap), and a price fixed while it
 * was cheap had a process touching every page it read twice long after
 * touches had become dear.  Until the first touch, a page is touched at
 * its second read.
 */
static uint64_t touch_avg_ns;	/* atomic: per page; 0 until measured */
static unsigned touch_reads = 1;	/* atomic: touch_after() */

static unsigned
touch_after(void)
{
	return __atomic_load_n(&touch_reads, __ATOMIC_RELAXED);
}

/*
 * A timed sample, for a moving average that stood at old: at most 4 times
 * it.  What is timed is the cost of a way of reading, but a sample also
 * holds whatever befell the thread meanwhile (preempted, an interrupt, a
 * hypervisor's exit): on the test VM one sample in a few hundred is 50 to
 * 300 us, and one such moved an average a quarter of the way there,
 * which decided hundreds of reads the wrong way.  A cost that really
 * grows still gets there, a few samples later.
 */
static uint64_t
sample_clamp(uint64_t old, uint64_t v)
{
	return old != 0 && v > 4 * old ? 4 * old : v;
}

static void
touch_account(uint64_t ns, size_t pages)
{
	uint64_t old = __atomic_load_n(&touch_avg_ns, __ATOMIC_RELAXED);
	uint64_t per = sample_clamp(old, ns / (pages > 0 ? pages : 1)), avg, k;

	avg = old == 0 ? per : (3 * old + per) / 4;
	__atomic_store_n(&touch_avg_ns, avg > 0 ? avg : 1, __ATOMIC_RELAXED);
	k = (avg + TOUCH_SAVES_NS - 1) / TOUCH_SAVES_NS;
	__atomic_store_n(&touch_reads,
			 (unsigned)(k < 1 ? 1 : k > PAGE_STATE_HITS_MAX ? PAGE_STATE_HITS_MAX : k),
			 __ATOMIC_RELAXED);
}

/* pread(2) of all n bytes (the grant's size holds them), or -1. */
static ssize_t
pread_all(int fd, void *buf, size_t n, uint64_t offset)
{
	size_t done = 0;

	while (done < n) {
		ssize_t k = pread(fd, (uint8_t *)buf + done, n - done, (off_t)(offset + done));

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return done > 0 ? (ssize_t)done : -1;
		done += (size_t)k;
	}
	return (ssize_t)done;
}

/*
 * Populating: a block of PAGE_STATE_CHUNK pages (2 MiB) of a mapping gets
 * its page tables built in one madvise(MADV_POPULATE_READ), and each page
 * read once through them, once its reads with pread have cost about what
 * that will: the rent-or-buy rule, so a process pays at most twice the
 * better choice.  The cost is estimated per mapping from the blocks
 * populated so far (POPULATE_BLOCK_NS before the first), and a read out
 * of touched pages saves about TOUCH_SAVES_NS against pread.  On bare
 * metal one populate maps 512 pages for the price of a few faults, which
 * is what lets a process reading random small ranges of a hot file,
 * seldom the same page twice, read at memcpy's speed.  On a virtual machine with shadow
 * page tables (the test VM) the first access to each page traps to the
 * hypervisor even after the populate (1.5 us a page there): the measured
 * cost then says a block must be read some 500 times before it pays,
 * which is why the touch is part of what is measured.
 */
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22	/* Linux 5.14 */
#endif
#define BLOCK_BYTES		((size_t)PAGE_STATE_CHUNK << PAGE_SHIFT_4K)
static int populate_off;	/* atomic: the kernel cannot (EINVAL) */

/* The reads with pread after which a block of map is populated: its
 * estimated cost in reads saved. */
static unsigned
populate_after(const struct mapping *map)
{
	uint64_t k = (__atomic_load_n(&map->populate_ns, __ATOMIC_RELAXED) + TOUCH_SAVES_NS - 1) /
		     TOUCH_SAVES_NS;

	return (unsigned)(k < 4 ? 4 : k > PAGE_STATE_HEAT_MAX ? PAGE_STATE_HEAT_MAX : k);
}

/* A block of map took ns to populate: the estimate moves halfway there.
 * Per mapping, and moving: what a block costs depends on the file (its
 * folios' size), on whether its pages were touched already (a view read
 * them), and on the virtual machine's shadow entries, which age. */
static void
populate_account(struct mapping *map, uint64_t ns)
{
	uint64_t est = __atomic_load_n(&map->populate_ns, __ATOMIC_RELAXED);

	__atomic_store_n(&map->populate_ns, (est + sample_clamp(est, ns)) / 2, __ATOMIC_RELAXED);
}

/* Whether [p, p + len) of a mapping is mapped by huge entries (the
 * daemon's huge-folios: the file is cached in huge folios).  Asked of
 * this process's pagemap, opened once per process (a forked child's
 * inherited descriptor would ask about the parent). */
static pthread_mutex_t pagemap_lock = PTHREAD_MUTEX_INITIALIZER;
static int pagemap_fd = -1;
static pid_t pagemap_pid;	/* atomic: the process pagemap_fd is of */

static bool
block_huge(const void *p, size_t len)
{
	pid_t pid = fork_pid();

	if (__atomic_load_n(&pagemap_pid, __ATOMIC_ACQUIRE) != pid) {
		pthread_mutex_lock(&pagemap_lock);
		if (pagemap_pid != pid) {
			/* the parent's descriptor is left as it is: its number
			 * may be the program's own by now */
			pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
			__atomic_store_n(&pagemap_pid, pid, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&pagemap_lock);
	}
	return pagemap_fd >= 0 && pagemap_all_huge(pagemap_fd, p, len) == 1;
}

/* Builds the page tables of block blk of m and marks its pages touched,
 * unless the grant was revoked meanwhile.  A file cut short meanwhile
 * makes madvise fail (EFAULT), never a SIGBUS. */
static void
populate_block(struct direct_map *m, size_t blk)
{
	size_t from = blk * BLOCK_BYTES, len;
	uint64_t t0;

	if (from >= m->maplen || __atomic_load_n(&populate_off, __ATOMIC_RELAXED))
		return;
	len = m->maplen - from < BLOCK_BYTES ? m->maplen - from : BLOCK_BYTES;
	t0 = now_ns();
	if (madvise(m->base + from, len, MADV_POPULATE_READ) < 0) {
		if (errno == EINVAL)
			__atomic_store_n(&populate_off, 1, __ATOMIC_RELAXED);
		return;
	}
	/* A block mapped by one huge entry is touched by touching a byte of
	 * it (on the test VM, one exit to the hypervisor for the 2 MiB);
	 * else each page must be, one exit each. */
	if (len == BLOCK_BYTES && block_huge(m->base + from, len)) {
		uint8_t b;

		if (guarded_copy(&b, m->base + from, 1) < 0)
			return;
	} else if (guarded_touch(m->base + from, len) < 0) {
		return;
	}
	populate_account(m->map, now_ns() - t0);
	if (hm_direct_gen(m->slot) != m->gen)
		return;
	page_state_mark(&m->map->pages, from >> PAGE_SHIFT_4K, (from + len - 1) >> PAGE_SHIFT_4K);
}

/*
 * What each copy costs, measured: one small read (under DIRECT_PREAD_MIN)
 * in COST_SAMPLE_EVERY is timed, and each way keeps a moving average of
 * its own.  Copies out of touched pages are chosen only while they cost
 * less than pread: on a virtual machine that ages its shadow page tables
 * (the test VM runs DAMON, which clears accessed bits) a page touched a
 * while ago traps again, and a copy out of it can cost 3-6 us against
 * 2.5 us for pread.  One touched read in COST_PROBE_EVERY goes the other
 * way, so that both averages stay current (a process whose every read is
 * of touched pages would otherwise never learn what pread costs, and go
 * on copying out of pages that trap); and while copies lose, no block is
 * populated.  A probe that copies while copies lose moves the average half
 * way (it is the only copy in COST_PROBE_EVERY reads).  A timed copy wakes
 * its block first (block_wake).
 */
#define COST_SAMPLE_EVERY	8u
#define COST_FIRST_MAX_NS	20000u
#define COST_PROBE_EVERY	64u

static void
cost_account_by(uint32_t *avg, uint64_t ns, unsigned shift)
{
	uint32_t old = __atomic_load_n(avg, __ATOMIC_RELAXED);
	/* the first sample of a small read: no more than COST_FIRST_MAX_NS */
	uint64_t v = sample_clamp(old != 0 ? old : COST_FIRST_MAX_NS / 4, ns);
	uint64_t next = old == 0 ? (v > 0 ? v : 1) :
			(((uint64_t)old << shift) - old + v) >> shift;

	__atomic_store_n(avg, (uint32_t)(next > UINT32_MAX / 8 ? UINT32_MAX / 8 : next),
			 __ATOMIC_RELAXED);
}

static void
cost_account(uint32_t *avg, uint64_t ns)
{
	/* an eighth of the way: one sample in 8 reads is timed (a clamped
	 * outlier moves it by 3/8 at most) */
	cost_account_by(avg, ns, 3);
}

/*
 * A timed copy.  A copy that costs more than twice the average starts a
 * burst: the next COST_BURST copies are timed too, so that the average
 * follows within a few reads when the pages' state changed under it.  On
 * the test VM a process's touched pages trap again after it slept or was
 * descheduled for 100 ms or so (measured: random 4 KiB copies out of a
 * touched mapping, 0.55 us, then 2.5-3.7 us after a 100-300 ms sleep), so
 * a process whose reads come in bursts finds its copies dear at the start
 * of each; sampling one in 8 took some 100 costly copies to notice.
 */
#define COST_BURST	8u

static void
copy_account(struct mapping *map, uint64_t ns)
{
	uint32_t avg = __atomic_load_n(&map->copy_ns, __ATOMIC_RELAXED);
	unsigned burst = __atomic_load_n(&map->burst, __ATOMIC_RELAXED);

	if (avg != 0 && ns > 2u * (uint64_t)avg)
		burst = COST_BURST;
	else if (burst > 0)
		burst--;
	__atomic_store_n(&map->burst, burst, __ATOMIC_RELAXED);
	cost_account(&map->copy_ns, ns);
}

/* Whether copies out of touched pages of map are cheaper than pread (or
 * not known yet). */
static bool
copies_pay(const struct mapping *map)
{
	uint32_t c = __atomic_load_n(&map->copy_ns, __ATOMIC_RELAXED);
	uint32_t p = __atomic_load_n(&map->pread_ns, __ATOMIC_RELAXED);

	return c == 0 || p == 0 || c <= p;
}

/*
 * Reads a byte of another page of the 2 MiB block that [offset, offset +
 * n) starts in, if it has one beside that range: before a timed copy, so
 * that the copy's time is the copy's.  A process's mapping of a hot file
 * ages while it is not read through: on the test VM a block not read for
 * some 100 ms traps once at its next read (5-6 us, the accessed bit of its
 * huge entry cleared), after which its pages copy at 0.5-0.7 us.  Timed
 * with the copy, that one trap per block made a burst of reads after a
 * pause look like copies cost 3-13 us against pread's 2-3, and copies
 * were given up for pread (debug counts: 7,000-9,800 of 10,000 random
 * reads a round); and while copies lose, only the probes copy, each into
 * a block that aged meanwhile, so they never won back.  A block's trap is
 * paid once whichever read pays it, and a read out of the file often
 * enough to be worth a mapping reads each block more than once in 100 ms;
 * what decides is the copy.  (Where a block is mapped by small entries,
 * or its pages are new to the host, the byte wakes its own page only: the
 * copy then pays its page's trap, and copies lose where they should.)
 */
static void
block_wake(const struct direct_map *m, uint64_t offset, size_t n)
{
	const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t block = offset - offset % BLOCK_BYTES, other;
	uint8_t b;

	if (offset - block >= page)
		other = block;	/* the block's first page */
	else	/* the page after the range */
		other = (offset + n + page - 1) & ~(page - 1);
	if (other >= m->maplen || other >= block + BLOCK_BYTES)
		return;
	(void)guarded_copy(&b, m->base + other, 1);
}

/*
 * A read of a lost mapping's file (map_lost): pread on the client's own
 * descriptor, exact whatever became of the file, and not bounded by the
 * grant's size, which the file no longer keeps; else through the daemon
 * (DIRECT_MISS), which reads the file as it is now.
 */
static ssize_t
lost_read(struct direct_map *m, int fd, void *buf, size_t len, uint64_t offset)
{
	size_t done = 0;

	if (fd < 0)
		return DIRECT_MISS;
	while (done < len) {	/* as pread_all, but the end of the file may come */
		ssize_t k = pread(fd, (uint8_t *)buf + done, len - done, (off_t)(offset + done));

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && done == 0)
			return DIRECT_MISS;	/* the daemon says why */
		if (k <= 0)
			break;
		done += (size_t)k;
	}
	__atomic_fetch_add(&m->slot->reads, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&m->slot->bytes, done, __ATOMIC_RELAXED);
	return (ssize_t)done;
}

/*
 * A read in the client: no round trip, one copy.  Which copy depends on
 * what the pages cost here.  A page read through the mapping for the first
 * time costs a page fault (and on a virtual machine with shadow page
 * tables, an exit to the hypervisor: about 2.7 us on the test VM, more than
 * a 4 KiB pread); once touched, it costs a memcpy.  So a page read for the
 * first time is read with pread on the client's own descriptor, a page
 * read again is touched through the mapping, and from then on read out of
 * it, as long as that is measured to be cheaper (above); a block read
 * often enough is populated whole (populate_block).  Reads of
 * DIRECT_COPY_MAX and more are the kernel's copy whatever the pages: a
 * copy is the ceiling either way, and the kernel's needs no page tables.
 */
ssize_t
direct_read(hm_file *f, void *buf, size_t len, uint64_t offset)
{
	struct direct_map *m = live_map(f);
	struct mapping *map;
	size_t n, first, last;
	int fd = f->fd >= 0 ? f->fd : f->own_fd;
	bool touched, pays, probe, lean, use_pread, timed, copy_timed, reprobe;
	unsigned tick;
	uint64_t t0 = 0;
	ssize_t got;

	if (m == NULL)
		return DIRECT_MISS;
	if (map_lost(m))
		return lost_read(m, fd, buf, len, offset);
	map = m->map;
	/* the size cannot change while the grant holds */
	n = offset >= m->maplen ? 0 : len < m->maplen - offset ? len : (size_t)(m->maplen - offset);
	if (n == 0)
		goto done;
	first = (size_t)(offset >> PAGE_SHIFT_4K);
	last = (size_t)((offset + n - 1) >> PAGE_SHIFT_4K);
	/* a racy count (it only picks reads to time): no locked add */
	tick = __atomic_load_n(&map->tick, __ATOMIC_RELAXED);
	__atomic_store_n(&map->tick, tick + 1, __ATOMIC_RELAXED);
	pays = copies_pay(map);
	probe = tick % COST_PROBE_EVERY == 0 && n < DIRECT_PREAD_MIN;
	/* While copies lose, every read but the probes is pread whatever its
	 * pages' state, which is then neither looked at nor kept: a random
	 * read's page state is a cache miss, a tenth of the read. */
	lean = !pays && !probe && fd >= 0;
	touched = !lean && n < DIRECT_COPY_MAX && page_state_touched(&map->pages, first, last);
	if (lean)
		use_pread = true;
	else if (fd < 0)
		use_pread = false;	/* no descriptor: the mapping only */
	else if (touched)
		use_pread = pays == probe;	/* the other way, now and then */
	else
		use_pread = n >= DIRECT_PREAD_MIN || !pays ||
			    page_state_hits_min(&map->pages, first, last) < touch_after();
	timed = n < DIRECT_PREAD_MIN && (touched || use_pread) &&
		(tick % COST_SAMPLE_EVERY == 0 ||
		 (touched && !use_pread && __atomic_load_n(&map->burst, __ATOMIC_RELAXED) > 0));
	/* a timed copy out of touched pages wakes its block first; a probe's
	 * (a probe is timed), while copies lose, moves the average half way */
	copy_timed = timed && touched && !use_pread;
	reprobe = copy_timed && probe && !pays;
	if (copy_timed)
		block_wake(m, offset, n);
	if (timed || (!touched && !use_pread))
		t0 = now_ns();
	if (use_pread) {
		size_t b;

		/* exact whatever happens to the file: it is pread */
		got = pread_all(fd, buf, n, offset);
		if (got < 0)
			return DIRECT_MISS;	/* the daemon says why */
		if (timed)
			cost_account(&map->pread_ns, now_ns() - t0);
		if (n < DIRECT_PREAD_MIN && !touched && !lean)
			page_state_hit(&map->pages, first, last);
		if (n < DIRECT_COPY_MAX && pays)
			for (b = first / PAGE_STATE_CHUNK; b <= last / PAGE_STATE_CHUNK; b++)
				if (page_state_block_heat(&map->pages, b, populate_after(map)))
					populate_block(m, b);
		n = (size_t)got;
		goto done;
	}
	if (guarded_copy(buf, m->base + offset, n) < 0)
		return DIRECT_MISS;
	if (!touched)
		touch_account(now_ns() - t0, last - first + 1);
	else if (reprobe)	/* the only copy in COST_PROBE_EVERY: half way */
		cost_account_by(&map->copy_ns, now_ns() - t0, 1);
	else if (timed)
		copy_account(map, now_ns() - t0);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&m->slot->gen, __ATOMIC_RELAXED) != m->gen)
		return DIRECT_MISS;	/* revoked during the copy: it may be torn */
	if (map_lost(m))	/* another thread's view repaired it meanwhile */
		return lost_read(m, fd, buf, len, offset);
	if (!touched)
		page_state_mark(&map->pages, first, last);
done:
	__atomic_fetch_add(&m->slot->reads, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&m->slot->bytes, n, __ATOMIC_RELAXED);
	return (ssize_t)n;
}

/* hm_warm on a direct file: the blocks of [offset, offset + len) populated
 * now, the caller's wish standing for their heat. */
void
direct_warm(hm_file *f, uint64_t offset, uint64_t len)
{
	struct direct_map *m = live_map(f);
	size_t b, last;

	if (m == NULL || map_lost(m) || offset >= m->maplen || len == 0)
		return;
	if (len > m->maplen - offset)
		len = m->maplen - offset;
	last = (size_t)((offset + len - 1) / BLOCK_BYTES);
	for (b = (size_t)(offset / BLOCK_BYTES); b <= last; b++)
		if (page_state_block_heat(&m->map->pages, b, 1))
			populate_block(m, b);
}

/*
 * A view is made to be read, every byte of it (a tensor, a shard): one of
 * a block (2 MiB) or more gets its page tables built now, in one
 * madvise(MADV_POPULATE_READ), where reading it would take a page fault
 * per page, or per 2 MiB of a file the daemon cached in huge folios (on
 * the test VM, 1 GiB of those: populated in 0.4-0.9 ms, against some
 * 6 ms more of faults when read).  Smaller views (a loader's records) are
 * left to fault as they are read: the kernel maps 16 pages a fault.  A
 * file cut short meanwhile makes madvise fail (EFAULT), never a SIGBUS;
 * what it could not build, the reads fault in.
 */
static void
view_populate(struct direct_map *m, uint64_t offset, size_t n)
{
	/* the system's page size, which may be 16 or 64 KiB (as repair) */
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t from = offset & ~(pg - 1);

	if (__atomic_load_n(&populate_off, __ATOMIC_RELAXED))
		return;
	if (madvise(m->base + from, (size_t)(offset + n - from), MADV_POPULATE_READ) < 0 &&
	    errno == EINVAL)
		__atomic_store_n(&populate_off, 1, __ATOMIC_RELAXED);
}

int
direct_view(hm_file *f, uint64_t offset, size_t len, const void **data, size_t *got,
	    struct direct_map **held)
{
	struct direct_map *m = live_map(f);
	size_t n;

	/* a lost mapping's zeros are not the file's: through the daemon */
	if (m == NULL || map_lost(m))
		return -1;
	direct_map_ref(m);
	n = offset >= m->maplen ? 0 : len < m->maplen - offset ? len : m->maplen - offset;
	*data = n > 0 ? m->base + offset : m->base;
	*got = n;
	*held = m;
	if (hm_direct_gen(m->slot) != m->gen) {
		map_unref(m);
		return -1;
	}
	if (n >= BLOCK_BYTES)
		view_populate(m, offset, n);
	__atomic_fetch_add(&m->slot->reads, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&m->slot->bytes, n, __ATOMIC_RELAXED);
	return 0;
}

int
direct_map_check(const struct direct_map *m)
{
	if (__atomic_load_n(&m->map->lost, __ATOMIC_ACQUIRE))
		return -EIO;
	if (hm_direct_gen(m->slot) != m->gen)
		return -ESTALE;
	return 0;
}
