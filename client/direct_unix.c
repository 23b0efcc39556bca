/* SPDX-License-Identifier: MIT */
/*
 * direct_unix.c - the direct tier: reading a granted file from the
 * client's own mapping of it, with no round trip (docs/design.md, "Tiers";
 * proto/direct.h).  This file is its reads and views, the tier's face to
 * the library (direct_* of client_priv.h); the grants and mappings are
 * direct_map_unix.c's, the SIGBUS guard direct_guard_unix.c's, which copy
 * a read takes the copy policy's (copy_policy.c; direct_priv.h).  Windows has no direct
 * tier: direct_win32.c stands in whole.
 *
 * A file is granted at OPEN (the daemon holds a read lease on it and gave
 * the handle a slot in the region's slot table) and promoted when it is
 * hot for this process: after HOTMAP_DIRECT_AFTER reads through the
 * daemon, or at once with HM_O_DIRECT, HM_O_WARM or hm_warm.  Promotion
 * maps the descriptor the client opened itself (direct_promote, in
 * direct_map_unix.c).
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
 * default action (on_sigbus, direct_guard_unix.c).
 *
 * Must not: read through a grant whose generation changed, take the
 * client's lock on the read path, or swallow a SIGBUS that is not its own.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proto/monotime.h"
#include "client/direct_priv.h"
#include "proto/direct.h"
#include "proto/pagemap.h"

_Static_assert(BLOCK_BYTES == HM_DIRECT_BLOCK_BYTES, "the block the daemon bounds populations by");

/*
 * One more of a way counted in the grant's slot, for the daemon's
 * listings (proto/direct.h): a load and a store, as FILE_COUNT, not a
 * locked add; the line is this process's already (reads, bytes).
 */
#define SLOT_COUNT(slot, field, n) \
	__atomic_store_n(&(slot)->field, \
			 __atomic_load_n(&(slot)->field, __ATOMIC_RELAXED) + (uint64_t)(n), \
			 __ATOMIC_RELAXED)

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
 * Populating a block of PAGE_STATE_CHUNK pages (2 MiB) of a mapping: its
 * page tables built in one madvise(MADV_POPULATE_READ), and each page read
 * once through them.  When a block is worth it, from what blocks were
 * measured to cost, is the copy policy's (cp_populate_after).
 */
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22	/* Linux 5.14 */
#endif
static int populate_off;	/* atomic: the kernel cannot (EINVAL) */

/* Whether [p, p + len) of a mapping is mapped by huge entries (the
 * daemon's huge-folios: the file is cached in huge folios).  Asked of
 * this process's pagemap, opened once per process (a forked child's
 * inherited descriptor would ask about the parent). */
static pthread_mutex_t pagemap_lock = PTHREAD_MUTEX_INITIALIZER;
static int pagemap_fd = -1;
static pid_t pagemap_pid;	/* atomic: the process pagemap_fd is of */

/* Opens this process's pagemap if it is not open yet: before a populate
 * is timed, so that what the first block of a process is measured to cost
 * is the block's, not the open's (a first sample of 110-130 us against 16
 * us after it kept a fresh process from populating at a block's first
 * read: rule 10). */
static void
pagemap_ready(void)
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
}

/* 1: one huge entry maps [p, p + len); 0: small ones do (a file in small
 * folios); -1: cannot tell (no pagemap, or a kernel before PAGEMAP_SCAN,
 * Linux 6.7). */
static int
block_huge(const void *p, size_t len)
{
	int rc;

	pagemap_ready();
	if (pagemap_fd < 0)
		return -1;
	rc = pagemap_all_huge(pagemap_fd, p, len);
	return rc < 0 ? -1 : rc;
}

/* HOTMAP_COPY_LOG: a line on standard error. */
static void
copy_log(const hm_file *f, const struct direct_map *m, const char *what)
{
	const struct cp_costs *c = &m->map->cost;

	fprintf(stderr,
		"hotmap[%ld]: copy-policy %llu:%llu %s; est copy %u pread %u touch %u block %u ns, "
		"touch after %u, populate after %u, bank %lld ns, prior %u block reads (low %u)\n",
		(long)getpid(), (unsigned long long)m->map->dev, (unsigned long long)m->map->ino,
		what, (unsigned)__atomic_load_n(&c->copy_ns, __ATOMIC_RELAXED),
		(unsigned)__atomic_load_n(&c->pread_ns, __ATOMIC_RELAXED),
		(unsigned)__atomic_load_n(&c->touch_ns, __ATOMIC_RELAXED),
		(unsigned)__atomic_load_n(&c->populate_ns, __ATOMIC_RELAXED),
		cp_touch_after(c, &f->c->copy_knobs), cp_populate_after(c, &f->c->copy_knobs),
		(long long)cp_bank(c), (unsigned)__atomic_load_n(&c->prior_reads, __ATOMIC_RELAXED),
		(unsigned)__atomic_load_n(&c->prior_low, __ATOMIC_RELAXED));
}

/* Blocks first..last of m ([from, to) of the file) were populated, n of
 * them bought now, in ns: counted (the file's and the slot's), logged, and
 * their pages marked touched unless the grant was revoked meanwhile: true
 * when they were. */
static bool
populated(hm_file *f, struct direct_map *m, size_t first, size_t last, unsigned n, size_t from,
	  size_t to, uint64_t ns)
{
	FILE_COUNT(f, populates, n);
	FILE_COUNT(f, populate_ns, ns);
	SLOT_COUNT(m->slot, populated, n);
	SLOT_COUNT(m->slot, populate_ns, ns);
	if (f->c->copy_log) {
		char what[96];

		if (first == last)
			snprintf(what, sizeof what, "block %zu populated in %llu ns", first,
				 (unsigned long long)ns);
		else
			snprintf(what, sizeof what, "blocks %zu-%zu populated (%u new) in %llu ns",
				 first, last, n, (unsigned long long)ns);
		copy_log(f, m, what);
	}
	if (!map_holds(m))
		return false;
	/* every block of a span is mapped now: the ones populated before are
	 * marked already */
	page_state_mark(&m->map->pages, from >> PAGE_SHIFT_4K, (to - 1) >> PAGE_SHIFT_4K);
	return true;
}

/* Builds the page tables of block blk of m and marks its pages touched,
 * unless the grant was revoked meanwhile: true when it did.  A file cut
 * short meanwhile makes madvise fail (EFAULT) or the guarded touch catch
 * the SIGBUS, and the block is not marked.  bought: the copy policy
 * bought it (paid from its bank, or the prior's credit); else hm_warm
 * asked. */
static bool
populate_block(hm_file *f, struct direct_map *m, size_t blk, bool bought)
{
	size_t from = blk * BLOCK_BYTES, len;
	uint64_t t0, ns;
	int huge = -1;	/* block_huge's answer, -1 before it is asked */

	if (from >= m->maplen)
		return false;
	len = m->maplen - from < BLOCK_BYTES ? m->maplen - from : BLOCK_BYTES;
	pagemap_ready();
	t0 = monotime_ns();
	/* A block of a file cached in huge folios is mapped whole by the
	 * fault of one byte (one entry for the 2 MiB), and that touch is all
	 * it needs (on the test VM, one exit to the hypervisor).  Faulting
	 * first and asking the pagemap after skips the madvise there: 17-20
	 * us a block against 25-30 with it, measured in hmbench's rand4k (the
	 * madvise alone 7.5-34 us).  Otherwise its page tables are built in
	 * one madvise and each page touched, one exit each. */
	if (len == BLOCK_BYTES) {
		uint8_t b;

		if (guarded_copy(&b, m->base + from, 1) < 0)
			return false;
		huge = block_huge(m->base + from, len);
		if (huge >= 0)
			__atomic_store_n(&m->map->folios, huge == 1 ? FOLIOS_HUGE : FOLIOS_SMALL,
					 __ATOMIC_RELAXED);
		if (huge == 1)
			goto built;
	}
	if (__atomic_load_n(&populate_off, __ATOMIC_RELAXED) ||
	    madvise(m->base + from, len, MADV_POPULATE_READ) < 0) {
		if (__atomic_load_n(&populate_off, __ATOMIC_RELAXED) || errno == EINVAL) {
			/* the kernel cannot (before 5.14): no block of small
			 * folios is ever bought, so the prior, under which a
			 * small read never touches a page, would leave every
			 * read to pread where touches win (rule 4) */
			__atomic_store_n(&populate_off, 1, __ATOMIC_RELAXED);
			cp_prior(&m->map->cost, &f->c->copy_knobs, 0, 0);
		}
		return false;
	}
	if (guarded_touch(m->base + from, len) < 0)
		return false;
built:
	ns = monotime_ns() - t0;
	/* small: a whole block the pagemap says small entries map (not a
	 * file's short last block, nor one it could not tell) */
	cp_populate_account(&m->map->cost, &direct_costs, &f->c->copy_knobs, ns, bought, huge == 0);
	return populated(f, m, blk, blk, 1u, from, from + len, ns);
}

/*
 * Blocks first..last of m, n of them this call's, built in one
 * madvise(MADV_POPULATE_READ) (a buy's span, hm_warm's run).  A range of
 * whole blocks the pagemap finds not all mapped huge says the file is not
 * (or no longer) all in huge folios: the next buys are blocks alone (each
 * of a span's blocks would cost its 512 entries).  sample: what the range
 * came to a block moves B-hat (cp_span_account, which charges a buy).
 * -errno when the call failed (nothing counted, the claims the caller's
 * to give back), else populated()'s answer.
 */
static int
populate_run(hm_file *f, struct direct_map *m, size_t first, size_t last, unsigned n,
	     bool bought, bool sample)
{
	size_t from = first * BLOCK_BYTES,
	       to = (last + 1) * BLOCK_BYTES < m->maplen ? (last + 1) * BLOCK_BYTES : m->maplen;
	uint64_t t0, ns;

	pagemap_ready();
	t0 = monotime_ns();
	if (madvise(m->base + from, to - from, MADV_POPULATE_READ) < 0)
		return -errno;
	ns = monotime_ns() - t0;
	if (to == (last + 1) * BLOCK_BYTES && block_huge(m->base + from, to - from) == 0)
		__atomic_store_n(&m->map->folios, FOLIOS_SMALL, __ATOMIC_RELAXED);
	if (sample)
		cp_span_account(&m->map->cost, &direct_costs, &f->c->copy_knobs, ns, n, bought);
	return populated(f, m, first, last, n, from, to, ns);
}

/*
 * A buy of block blk of a file in huge folios: the aligned span of
 * populate_span blocks that holds it, each not populated yet taken, built
 * in one madvise(MADV_POPULATE_READ).  On the test VM a block's fault
 * costs 15-16 us (an exit to the hypervisor), one madvise 6-12 us a block
 * alone, and 21-38 us for 16-32 blocks at once: some 1.3 us a block
 * (docs/direct-reads.md, rule 5; 0.5 us a block for the whole GiB).  So
 * the span costs about what one block did, and where the policy buys a
 * block its neighbours are read alike (a file read at random), or soon
 * (a region read in order).  The first buy of a mapping is a block alone
 * (populate_block), which asks the pagemap what the file's folios are: in
 * small folios a block costs its 512 entries (0.8 ms on the test VM), and
 * a span would cost that many times over.  True when blk was populated
 * (as populate_block).
 */
static bool
populate_span(hm_file *f, struct direct_map *m, size_t blk, bool bought)
{
	struct mapping *map = m->map;
	unsigned span = f->c->copy_knobs.populate_span, n = 0;
	size_t nblocks = (m->maplen + BLOCK_BYTES - 1) / BLOCK_BYTES, first, last, b;
	uint64_t mine[CP_SPAN_MAX / 64] = { 0 };	/* the blocks this call claimed */
	int rc;

	if (span > CP_SPAN_MAX)
		span = CP_SPAN_MAX;
	if (span <= 1 || __atomic_load_n(&map->folios, __ATOMIC_RELAXED) != FOLIOS_HUGE ||
	    __atomic_load_n(&populate_off, __ATOMIC_RELAXED) || blk >= nblocks)
		return populate_block(f, m, blk, bought);
	first = blk - blk % span;
	last = nblocks - 1 - first >= span - 1 ? first + span - 1 : nblocks - 1;
	/* blk is the caller's already (its heat said so); the others of the
	 * span that no one populated or tried, this call's */
	for (b = first; b <= last; b++) {
		if (b == blk) {
			n++;
		} else if (page_state_block_claim(&map->pages, b)) {
			mine[(b - first) / 64] |= 1ull << ((b - first) % 64);
			n++;
		}
	}
	rc = populate_run(f, m, first, last, n, bought, true);
	if (rc >= 0)
		return rc == 1;
	/* the blocks this call claimed go back to being bought one by one
	 * (blk stays tried, as a block that failed alone does; the others
	 * stay as their buyers left them); EINVAL: not this kernel, and
	 * populate_block says so */
	for (b = first; b <= last; b++)
		if (mine[(b - first) / 64] & (1ull << ((b - first) % 64)))
			page_state_block_unclaim(&map->pages, b);
	return rc == -EINVAL ? populate_block(f, m, blk, bought) : false;
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
	SLOT_COUNT(m->slot, preads, 1);	/* after reads: proto/direct.h */
	return (ssize_t)done;
}

/* The page state of a read's pages, for the copy policy (cp_pages_fn). */
struct read_pages {
	const struct page_state *pages;
	size_t first, last;
};

static void
read_pages(void *ctx, bool *touched, unsigned *hits)
{
	const struct read_pages *r = ctx;

	/* the fewest reads matter only while some page is not touched */
	page_state_ask(r->pages, r->first, r->last, touched, hits);
}

/* HOTMAP_COPY_LOG: the plan of one read and what it cost. */
static void
read_log(const hm_file *f, const struct direct_map *m, const struct cp_plan *p, uint64_t offset,
	 size_t n, uint64_t ns)
{
	static const char *const ways[] = { "pread", "copy", "touch" };
	char what[160];

	snprintf(what, sizeof what, "offset %llu len %zu: %s%s%s%s%s", (unsigned long long)offset,
		 n, ways[p->way], p->probe ? " probe" : "", p->forget ? " after forgetting" : "",
		 p->timed ? " timed" : "", p->asked ? (p->touched ? " (touched)" : " (not touched)") : "");
	if (p->timed) {
		size_t len = strlen(what);

		snprintf(what + len, sizeof what - len, " %llu ns", (unsigned long long)ns);
	}
	copy_log(f, m, what);
}

/*
 * A block the policy bought has a copy out of it timed at once: a page of
 * the block next to the read, which this process has not read (the read's
 * own bytes are in the CPU's caches, from pread: the cheapest copy there
 * is), copied into a scratch buffer.  Otherwise the copy estimate would
 * wait for a later read to land in a bought block, and under the prior
 * (docs/direct-reads.md, rule 10), where a fresh process buys a block at
 * its first read, it bought 130-370 blocks before it learnt that copies
 * out of them lost (on the test VM, a file folded seconds before: 3-15 us
 * a copy against 2.1-2.9 us a pread).  The sample goes through the usual
 * rules: a mapping's first copy is not a verdict, and the copies after a
 * dear one are timed.
 */
static void
copy_sample(hm_file *f, struct direct_map *m, size_t blk, uint64_t offset, size_t n)
{
	static const struct cp_plan sample = { .way = CP_COPY, .timed = true };
	uint64_t first = (uint64_t)blk * BLOCK_BYTES, last = first + BLOCK_BYTES, from, t0;
	uint8_t scratch[4096];
	size_t len = sizeof scratch;

	if (last > m->maplen)
		last = m->maplen;
	/* the page after the read, else the one before it, within the
	 * block; else (the read spans it all) the read's first page */
	from = ((offset + n + 4095) & ~(uint64_t)4095);
	if (from + len > last) {
		from = (offset & ~(uint64_t)4095);
		from = from >= first + len ? from - len : first;
	}
	if (from + len > last)
		len = from < last ? (size_t)(last - from) : 0;
	if (len == 0)
		return;
	t0 = monotime_ns();
	if (guarded_copy(scratch, m->base + from, len) < 0)
		return;
	cp_account(&m->map->cost, &direct_costs, &f->c->copy_knobs, &sample, monotime_ns() - t0,
		   (len + 4095) / 4096);
}

/*
 * A timed read's bytes land first in a page of scratch on the stack, then
 * in the caller's buffer, so that its time is the read's and not the
 * caller's buffer's.  A buffer the process has not written since it was
 * allocated or forked takes a page fault at its first write, whichever way
 * fills it: in hmbench's batches of 64 reads into 64 pages a fresh child
 * inherited, the first timed preads took 17-19 us against 2.5-3.4 after
 * (HOTMAP_COPY_LOG), which set the pread estimate at 10-16 us.  The
 * copies, timed out of the mapping into scratch (copy_sample), cost 5 us
 * there, so they seemed to save half a pread, and the prior (rule 10)
 * bought 30-80 blocks whose copies then lost: 0.80-0.86x pread, against
 * 0.95 with every read pread.  The caller's fault is the same under either
 * way, so the policy does not see it.  A read larger than the scratch is
 * timed as it is.  Out of line, so that untimed reads keep a small frame.
 */
#define TIMED_SCRATCH 4096u

static __attribute__((noinline)) ssize_t
timed_pread(int fd, void *buf, size_t n, uint64_t offset, uint64_t *ns)
{
	/* aligned: a descriptor opened O_DIRECT reads into it as into an
	 * aligned buffer of the caller's */
	_Alignas(4096) unsigned char scratch[TIMED_SCRATCH];
	void *to = n <= sizeof scratch ? scratch : buf;
	uint64_t t0 = monotime_ns();
	ssize_t got = pread_all(fd, to, n, offset);

	*ns = monotime_ns() - t0;
	if (got > 0 && to != buf)
		memcpy(buf, scratch, (size_t)got);
	return got;
}

/* guarded_copy, timed as timed_pread is: 0, or -1 with buf untouched when
 * the copy fails into scratch. */
static __attribute__((noinline)) int
timed_copy(void *buf, const void *src, size_t n, uint64_t *ns)
{
	_Alignas(4096) unsigned char scratch[TIMED_SCRATCH];
	void *to = n <= sizeof scratch ? scratch : buf;
	uint64_t t0 = monotime_ns();
	int rc = guarded_copy(to, src, n);

	*ns = monotime_ns() - t0;
	if (rc == 0 && to != buf)
		memcpy(buf, scratch, n);
	return rc;
}

/*
 * A read in the client: no round trip, one copy, the kernel's (pread on
 * the client's own descriptor) or a memcpy out of the mapping under the
 * SIGBUS guard, as the copy policy plans it (cp_decide, which says why);
 * the read is timed when the plan says, and the policy told what it cost
 * (cp_account).  A copy counts only if the grant's generation did not
 * change meanwhile.
 */
ssize_t
direct_read(hm_file *f, void *buf, size_t len, uint64_t offset)
{
	struct direct_map *m = live_map(f);
	const struct cp_knobs *k = &f->c->copy_knobs;
	struct mapping *map;
	struct cp_plan plan;
	struct read_pages rp;
	size_t n;
	int fd = f->fd >= 0 ? f->fd : f->own_fd;
	uint64_t ns = 0;
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
	rp = (struct read_pages){ &map->pages, (size_t)(offset >> PAGE_SHIFT_4K),
				  (size_t)((offset + n - 1) >> PAGE_SHIFT_4K) };
	cp_decide(&map->cost, k, n, fd >= 0, read_pages, &rp, &plan);
	if (plan.forget) {
		page_state_forget(&map->pages);
		FILE_COUNT(f, forgets, 1);
	}
	if (plan.probe)
		FILE_COUNT(f, probes, 1);	/* the slot's once the read is done */
	if (plan.wake)
		block_wake(m, offset, n);
	if (plan.way == CP_PREAD) {
		size_t b;

		/* exact whatever happens to the file: it is pread */
		got = plan.timed ? timed_pread(fd, buf, n, offset, &ns) : pread_all(fd, buf, n, offset);
		if (got < 0)
			return DIRECT_MISS;	/* the daemon says why */
		if (plan.timed)
			cp_account(&map->cost, &direct_costs, k, &plan, ns, rp.last - rp.first + 1);
		FILE_COUNT(f, pread, 1);
		if (f->c->copy_log)
			read_log(f, m, &plan, offset, n, ns);
		if (plan.hit)
			page_state_hit(&map->pages, rp.first, rp.last);
		if (plan.heat)
			for (b = rp.first / PAGE_STATE_CHUNK; b <= rp.last / PAGE_STATE_CHUNK; b++)
				if (page_state_block_heat(&map->pages, b,
							  plan.block_probe ? 1u :
							  cp_populate_after(&map->cost, k)) &&
				    populate_span(f, m, b, true))
					copy_sample(f, m, b, offset, n);
		n = (size_t)got;
		__atomic_fetch_add(&m->slot->reads, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&m->slot->bytes, n, __ATOMIC_RELAXED);
		SLOT_COUNT(m->slot, preads, 1);	/* after reads: proto/direct.h */
		if (plan.probe)
			SLOT_COUNT(m->slot, probes, 1);
		return (ssize_t)n;
	}
	if ((plan.timed ? timed_copy(buf, m->base + offset, n, &ns) :
			  guarded_copy(buf, m->base + offset, n)) < 0)
		return DIRECT_MISS;
	if (plan.timed)
		cp_account(&map->cost, &direct_costs, k, &plan, ns, rp.last - rp.first + 1);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(m->genp, __ATOMIC_RELAXED) != m->gen)
		return DIRECT_MISS;	/* revoked during the copy: it may be torn */
	if (map_lost(m))	/* another thread's view repaired it meanwhile */
		return lost_read(m, fd, buf, len, offset);
	if (plan.way == CP_TOUCH) {
		page_state_mark(&map->pages, rp.first, rp.last);
		FILE_COUNT(f, touch, 1);
	} else {
		FILE_COUNT(f, copy, 1);
	}
	if (f->c->copy_log)
		read_log(f, m, &plan, offset, n, ns);
	__atomic_fetch_add(&m->slot->reads, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&m->slot->bytes, n, __ATOMIC_RELAXED);
	SLOT_COUNT(m->slot, copies, 1);	/* after reads: proto/direct.h */
	if (plan.probe)
		SLOT_COUNT(m->slot, probes, 1);
	return (ssize_t)n;
done:	/* nothing to read: past the end of the file */
	__atomic_fetch_add(&m->slot->reads, 1, __ATOMIC_RELAXED);
	return 0;
}

void
direct_read_stats(hm_file *f, struct hm_read_stats *st)
{
	struct direct_map *m = live_map(f);
	const struct cp_costs *c;

	st->direct = m != NULL ? HM_DIRECT_YES : direct_grant_holds(f) ? HM_DIRECT_GRANTED :
									HM_DIRECT_NO;
	if (m == NULL)
		return;
	c = &m->map->cost;
	st->copy_ns = __atomic_load_n(&c->copy_ns, __ATOMIC_RELAXED);
	st->pread_ns = __atomic_load_n(&c->pread_ns, __ATOMIC_RELAXED);
	st->touch_ns = __atomic_load_n(&c->touch_ns, __ATOMIC_RELAXED);
	st->block_ns = __atomic_load_n(&c->populate_ns, __ATOMIC_RELAXED);
	st->touch_after = cp_touch_after(c, &f->c->copy_knobs);
	st->populate_after = cp_populate_after(c, &f->c->copy_knobs);
}

/*
 * hm_warm's blocks first..last of m, claimed by the caller, built in one
 * call (populate_run): a block at a time cost hm_warm a system call each
 * (on the test VM 6-12 us a block alone, 0.5 us a block for the whole
 * GiB in one; docs/direct-reads.md, rule 5), and the caller asked for
 * every one of them.  Where the call fails, each block is tried alone
 * (populate_block, which says when the kernel cannot: EINVAL; a file cut
 * short meanwhile fails with EFAULT, never a SIGBUS), so that one bad
 * block does not leave the others cold.  A run of no more than
 * populate_span blocks is a sample of what a block costs, as a span's buy
 * is; a longer one is not (0.5 us a block for a GiB, against the 1.3 a
 * buy's span of 16 costs), or a warm would make every buy look cheaper
 * than it is.  The last block handled.
 */
#define WARM_RUN_MAX	CP_SPAN_MAX	/* blocks in one of hm_warm's calls: 1 GiB */

static size_t
warm_run(hm_file *f, struct direct_map *m, size_t first, size_t last)
{
	unsigned n = (unsigned)(last - first + 1);
	size_t b;

	if (first == last) {
		populate_block(f, m, first, false);
		return last;
	}
	if (populate_run(f, m, first, last, n, false, n <= f->c->copy_knobs.populate_span) < 0)
		for (b = first; b <= last; b++)
			populate_block(f, m, b, false);
	return last;
}

/* hm_warm on a direct file: the blocks of [offset, offset + len) populated
 * now, the caller's wish standing for their heat: the mapping's first
 * block alone, then runs (warm_run). */
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
	for (b = (size_t)(offset / BLOCK_BYTES); b <= last; b++) {
		size_t e = b;

		if (!page_state_block_claim(&m->map->pages, b))
			continue;	/* populated, or being, already */
		/* a mapping's first block alone: it says what the file's
		 * folios are (populate_block), which the policy's buys go by;
		 * where the pagemap cannot tell (PAGEMAP_SCAN, Linux 6.7), or
		 * the kernel cannot populate, every block stays alone */
		if (__atomic_load_n(&m->map->folios, __ATOMIC_RELAXED) == FOLIOS_UNKNOWN ||
		    __atomic_load_n(&populate_off, __ATOMIC_RELAXED)) {
			populate_block(f, m, b, false);
			continue;
		}
		/* then the blocks after it that nobody populated, in one run */
		while (e < last && e - b + 1 < WARM_RUN_MAX &&
		       page_state_block_claim(&m->map->pages, e + 1))
			e++;
		b = warm_run(f, m, b, e);
	}
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
	if (madvise(m->base + from, (size_t)(offset + n - from), MADV_POPULATE_READ) < 0) {
		if (errno == EINVAL)
			__atomic_store_n(&populate_off, 1, __ATOMIC_RELAXED);
		return;
	}
	/* The pages have their page tables now: the copy policy is told,
	 * so that hm_pread of the range copies out of them (the view is
	 * made to be read: its reader touches them) rather than taking
	 * pread until the rent-or-buy rule buys each block again.  Before,
	 * a process that had viewed a whole file read it with hm_pread at
	 * 1.19x pread's speed, where copies out of its own touched mapping
	 * ran at 3.57x (hmbench rand4k, hotmap-touched, mmap-touched). */
	page_state_mark(&m->map->pages, (size_t)(from >> PAGE_SHIFT_4K),
			(size_t)((offset + n - 1) >> PAGE_SHIFT_4K));
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
	if (!map_holds(m)) {
		map_unref(m);
		return -1;
	}
	if (n >= BLOCK_BYTES)
		view_populate(m, offset, n);
	FILE_COUNT(f, view, 1);
	__atomic_fetch_add(&m->slot->reads, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&m->slot->bytes, n, __ATOMIC_RELAXED);
	return 0;
}

int
direct_map_check(const struct direct_map *m)
{
	if (__atomic_load_n(&m->map->lost, __ATOMIC_ACQUIRE))
		return -EIO;
	if (!map_holds(m))
		return -ESTALE;
	return 0;
}
