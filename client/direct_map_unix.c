/* SPDX-License-Identifier: MIT */
/*
 * direct_map_unix.c - the direct tier's mappings and grants.  A file is
 * granted at OPEN (the daemon holds a read lease on it and gave the
 * handle a slot in the region's slot table) and promoted here when it is
 * hot for this process: after HOTMAP_DIRECT_AFTER reads through the
 * daemon, or at once with HM_O_DIRECT, HM_O_WARM or hm_warm.  Promotion
 * maps the descriptor the client opened itself, or takes an idle mapping
 * of the same file that a grant let go (up to MAPPINGS_IDLE_MAX are
 * kept), and puts it in the SIGBUS handler's table (guard_watch).
 *
 * Must not: map a file without its grant holding; reuse a mapping that
 * was lost, or another process's; take the client's lock but where said
 * (direct_heat, and the callers that hold it).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "client/direct_priv.h"
#include "proto/direct.h"

#define MAPPINGS_IDLE_MAX	32
static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
/* Zero until measured: a new mapping then takes the policy's priors. */
struct cp_costs direct_costs;
static struct mapping *idle;	/* most recently idle first */
static unsigned nidle;

/* Unmaps m, which no one uses, and takes it out of the handler's table. */
static void
mapping_destroy(struct mapping *m)
{
	guard_unwatch(m);
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
	cp_costs_init(&m->cost, &direct_costs, &f->c->copy_knobs);
	m->pid = fork_pid();
	m->dev = f->st.dev;
	m->ino = f->st.ino;
	m->refs = 1;
	if (guard_watch(m) == 0)
		return m;
	/* a view of it could not be repaired: no direct reads */
	munmap(m->base, m->len);
	page_state_free(&m->pages);
	free(m);
	errno = ENFILE;
	return NULL;
}

void
map_unref(struct direct_map *m)
{
	if (m == NULL || __atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	mapping_put(m->map);
	region_unref(m->region);
	if (m->region == NULL)
		free(m->slot);	/* a table file's own counts */
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

	if (!f->direct_ok || r == NULL || r->slots == NULL || f->dslot >= r->nslots - r->slot_first)
		return NULL;
	return &r->slots[r->slot_first + f->dslot];
}

bool
direct_grant_holds(const hm_file *f)
{
	struct hm_direct_slot *s = grant_slot(f);

	if (f->table) {
		/* under the table's entry (table_unix.c) */
		struct direct_map *m = __atomic_load_n(&f->dm, __ATOMIC_ACQUIRE);

		return m != NULL && map_holds(m);
	}

	return s != NULL && hm_direct_gen(s) == f->dgen;
}

/* Forgets f's grant and mapping when no read can be using them (a
 * close, hm_disconnect; a reopen retires them: direct_retire).  Lock
 * held. */
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
 * Gives up f's grant while threads may be reading through it, with no
 * daemon to revoke it: going local (HOTMAP_FALLBACK=local, fallback.c),
 * and a reopen on a new connection (client_open: a reconnect, a child's
 * first call after fork), whose old daemon is gone or no longer answers
 * for that grant.  Direct reads take no user, so neither waits for them.
 * The slot is marked revoked, as the daemon marks it (but by a forked
 * child, below), so that a read in flight finds the generation changed
 * and goes the daemon's way (or the local one), and the mapping and
 * descriptor such a read may still be using are kept, unread, on the
 * client's list until hm_disconnect (direct_release_retired).
 * direct_drop would free them under those reads.  The slot is in
 * m->region, the old connection's region, which m holds (direct_promote)
 * whatever the reconnect did with c->region.  Lock held.
 */
void
direct_retire(hm_file *f)
{
	struct direct_map *m = __atomic_exchange_n(&f->dm, NULL, __ATOMIC_ACQ_REL);

	if (m == NULL) {
		direct_drop(f);	/* no mapping: no read uses the grant */
		return;
	}
	/* not in a forked child, whose slot table is still the parent's
	 * (fork.c makes only the region's blocks private): the parent's
	 * grant holds, and the inherited mapping's bytes with it */
	if (m->map->pid == fork_pid() && m->genp == &m->slot->gen)
		__atomic_store_n(&m->slot->gen, m->gen | 1, __ATOMIC_RELEASE);
	m->retired_fd = f->own_fd;
	f->own_fd = -1;
	f->direct_ok = false;
	m->retired_next = f->c->retired;
	f->c->retired = m;
}

void
direct_release_retired(hm_client *c)
{
	while (c->retired != NULL) {
		struct direct_map *m = c->retired;

		c->retired = m->retired_next;
		if (m->retired_fd >= 0)
			close(m->retired_fd);
		map_unref(m);
	}
}

/*
 * Maps f for direct reads, when it is granted and not mapped yet.  0, or
 * -errno (f then stays on the daemon's tiers).  Lock held.
 */
int
direct_promote(hm_file *f)
{
	return direct_promote_fd(f, f->fd >= 0 ? f->fd : f->own_fd);
}

/* direct_promote, mapping fd, which f need not keep (client_open: a
 * descriptor the process cannot spare is mapped and closed without ever
 * being f->own_fd, which readers load without the lock). */
/* m, new, made f's mapping of fd for size bytes, its copy policy told
 * the daemon's prior (reads, low: cp_prior); one reference.  0, or
 * -errno (m as it was). */
static int
map_fill(struct direct_map *m, hm_file *f, int fd, uint64_t size, uint32_t reads, uint32_t low)
{
	m->map = mapping_get(f, fd, (size_t)size);
	if (m->map == NULL)
		return -errno;
	cp_prior(&m->map->cost, &f->c->copy_knobs, reads, low);
	m->base = m->map->base;
	m->maplen = (size_t)size;
	m->refs = 1;
	return 0;
}

int
direct_promote_fd(hm_file *f, int fd)
{
	struct direct_map *m;
	int rc;

	if (f->dm != NULL)
		return 0;
	if (fd < 0 || !direct_grant_holds(f))
		return -ENOENT;
	if (f->dsize == 0 || f->dsize > SIZE_MAX || guard_ensure() < 0)
		return -ENOTSUP;
	m = calloc(1, sizeof *m);
	if (m == NULL)
		return -ENOMEM;
	/* what the processes before read of each block: the newest word */
	rc = map_fill(m, f, fd, f->dsize, f->block_reads, f->block_reads_low);
	if (rc < 0) {
		free(m);
		f->direct_ok = false;
		return rc;
	}
	m->slot = grant_slot(f);
	m->genp = &m->slot->gen;
	m->gen = f->dgen;
	m->region = f->c->region;
	region_ref(m->region);
	/* hm_open's own descriptor stays open with the grant: the reads
	 * that go through the kernel use it (direct_read) */
	__atomic_store_n(&f->dm, m, __ATOMIC_RELEASE);
	return 0;
}

int
direct_promote_table(hm_file *f, int fd, const uint64_t *genp, uint64_t gen, uint64_t size)
{
	struct direct_map *m;
	int rc;

	if (f->dm != NULL || fd < 0)
		return -EBUSY;
	if (size == 0 || size > SIZE_MAX || guard_ensure() < 0)
		return -ENOTSUP;
	m = calloc(1, sizeof *m);
	if (m == NULL || (m->slot = calloc(1, sizeof *m->slot)) == NULL) {
		free(m);
		return -ENOMEM;
	}
	/* no daemon's prior: nobody said how often its blocks are read */
	rc = map_fill(m, f, fd, size, 0, 0);
	if (rc < 0) {
		free(m->slot);
		free(m);
		return rc;
	}
	m->genp = genp;
	m->gen = gen;
	m->region = NULL;
	f->dsize = size;
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
struct direct_map *
live_map(hm_file *f)
{
	struct direct_map *m = __atomic_load_n(&f->dm, __ATOMIC_ACQUIRE);

	if (m == NULL || f->c->pid != fork_pid() || !map_holds(m))
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
bool
map_lost(const struct direct_map *m)
{
	return __atomic_load_n(&m->map->lost, __ATOMIC_SEQ_CST) != 0;
}
