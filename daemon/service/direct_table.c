/* SPDX-License-Identifier: MIT */
/*
 * direct_table.c - the table of granted files (direct_table.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/base/log.h"
#include "daemon/service/direct_table.h"
#include "proto/direct.h"

struct direct_table_entry {
	/* the entry's share of the file's lease; g.slot is the entry's slot
	 * while it holds, NULL once revoked (direct.c) */
	struct direct_grant g;
	struct storage_handle h;	/* a job's handle: listings do not count it */
	uint64_t dev, ino;
	uint64_t until_ms;		/* given back then, unless granted again */
};

/* Makes every even generation of the table at base odd. */
static void
revoke_all(uint8_t *base, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct hm_direct_slot *e = hm_table_entry(base, i);
		uint64_t g = __atomic_load_n(&e->gen, __ATOMIC_RELAXED);

		if ((g & 1) == 0)
			__atomic_store_n(&e->gen, g + 1, __ATOMIC_RELEASE);
	}
}

/* A table a daemon before left at path, if it is ours: revoked, for the
 * clients that map it still (that daemon's leases died with it), and
 * removed when remove. */
static void
revoke_old(const char *path, bool remove)
{
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	uint8_t *base;
	uint32_t n;

	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	    st.st_size >= (off_t)HM_TABLE_HEAD_BYTES && st.st_size <= (off_t)(64u << 20)) {
		base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (base != MAP_FAILED) {
			n = hm_table_entries(base, (uint64_t)st.st_size);
			if (n > 0)
				revoke_all(base, n);
			munmap(base, (size_t)st.st_size);
		}
		if (remove)
			unlink(path);
	}
	close(fd);
}

/* The entries a table may hold at once: its size, and no more than a
 * quarter of the descriptors hotmapd may open (each holds one). */
static unsigned
table_most(uint32_t n)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 4 < n)
		return (unsigned)(rl.rlim_cur / 4);
	return n;
}

/* The table's mode: its owner's to read and write (through the descriptor
 * it keeps), and read by the group and others where the socket lets them
 * connect (write). */
static mode_t
table_mode(unsigned socket_mode)
{
	return S_IRUSR | S_IWUSR | (socket_mode & S_IWGRP ? S_IRGRP : 0) |
	       (socket_mode & S_IWOTH ? S_IROTH : 0);
}

/* What t holds let go (a mapping, the descriptor, its arrays): none. */
static void
table_release(struct direct_table *t)
{
	if (t->base != NULL)
		munmap(t->base, t->len);
	if (t->fd >= 0)
		close(t->fd);
	free(t->path);
	free(t->ents);
	free(t->owners);
	memset(t, 0, sizeof *t);
	t->fd = -1;
}

int
direct_table_open(struct direct_table *t, const char *socket_path, unsigned mode,
		  gid_t group, unsigned linger, char *err, size_t errlen)
{
	struct flock lk = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
	struct hm_table_head *head;
	size_t plen;
	char *tmp = NULL;
	int e;

	memset(t, 0, sizeof *t);
	t->fd = -1;
	t->linger_s = linger;
	if (socket_path == NULL || socket_path[0] != '/')
		return 0;
	plen = strlen(socket_path) + sizeof HM_TABLE_SUFFIX;
	t->path = malloc(plen);
	tmp = malloc(plen + 8);
	if (t->path == NULL || tmp == NULL) {
		e = ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	snprintf(t->path, plen, "%s%s", socket_path, HM_TABLE_SUFFIX);
	/* whatever this daemon does, an earlier one's table is revoked */
	revoke_old(t->path, linger == 0);
	if (linger == 0) {
		free(tmp);
		free(t->path);
		t->path = NULL;
		return 0;
	}
	snprintf(tmp, plen + 8, "%s.XXXXXX", t->path);
	t->n = DIRECT_TABLE_ENTRIES;
	t->most = table_most(t->n);
	t->ents = calloc(t->n, sizeof *t->ents);
	t->owners = malloc(t->n * sizeof *t->owners);
	if (t->ents == NULL || t->owners == NULL) {
		e = ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	t->fd = mkostemp(tmp, O_CLOEXEC);
	if (t->fd < 0) {
		e = errno;
		snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(e));
		free(tmp);
		tmp = NULL;	/* nothing to unlink */
		goto fail;
	}
	t->len = HM_TABLE_HEAD_BYTES + (size_t)t->n * HM_DIRECT_SLOT_BYTES;
	/* its blocks had now: a write to the mapping never faults for want
	 * of space (ENOSPC, a quota) */
	if ((errno = posix_fallocate(t->fd, 0, (off_t)t->len)) != 0 ||
	    fchmod(t->fd, table_mode(mode)) < 0 ||
	    (group != (gid_t)-1 && fchown(t->fd, (uid_t)-1, group) < 0)) {
		e = errno;
		snprintf(err, errlen, "cannot size or give %s its mode: %s", tmp, strerror(e));
		goto fail;
	}
	t->base = mmap(NULL, t->len, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, 0);
	if (t->base == MAP_FAILED) {
		t->base = NULL;
		e = errno;
		snprintf(err, errlen, "cannot map %s: %s", tmp, strerror(e));
		goto fail;
	}
	revoke_all(t->base, t->n);	/* every entry free: odd */
	for (uint32_t i = 0; i < t->n; i++)
		t->owners[i] = DIRECT_TABLE_FREE;
	head = (struct hm_table_head *)t->base;
	head->version = HM_TABLE_VERSION;
	head->entries = t->n;
	__atomic_store_n(&head->magic, HM_TABLE_MAGIC, __ATOMIC_RELEASE);
	/* clients trust a table only while someone holds this lock: ours,
	 * on our description, which dies with us */
	if (fcntl(t->fd, F_OFD_SETLK, &lk) < 0 || rename(tmp, t->path) < 0) {
		e = errno;
		snprintf(err, errlen, "cannot lock or place %s: %s", t->path, strerror(e));
		goto fail;
	}
	free(tmp);
	return 0;
fail:
	if (tmp != NULL) {
		if (t->fd >= 0)
			unlink(tmp);
		free(tmp);
	}
	table_release(t);
	return -e;
}

void
direct_table_set_linger(struct direct_table *t, unsigned linger)
{
	t->linger_s = linger;
}

/* Entry i's file given back: its share of the lease (unless revoked) and
 * its handle. */
static void
entry_drop(struct direct_table *t, struct direct_registry *reg, struct file_cache *cache,
	   uint32_t i)
{
	struct direct_table_entry *e = &t->ents[i];

	if (e->g.slot != NULL)
		direct_release(reg, &e->g);	/* odd first, then the lease */
	file_cache_close(cache, &e->h);
	t->owners[i] = DIRECT_TABLE_FREE;
	t->used--;
	t->dropped++;
}

/* Which entry to take, of i and the one picked so far (UINT32_MAX: none):
 * a free one, else a revoked one, else the one whose linger ends first. */
static bool
better_pick(const struct direct_table *t, uint32_t i, uint32_t pick)
{
	const struct direct_table_entry *a = &t->ents[i], *b = &t->ents[pick];
	bool a_used = t->owners[i] != DIRECT_TABLE_FREE;

	if (pick == UINT32_MAX)
		return true;
	if (a_used != (t->owners[pick] != DIRECT_TABLE_FREE))
		return !a_used;
	if (!a_used)
		return false;
	if ((a->g.slot == NULL) != (b->g.slot == NULL))
		return a->g.slot == NULL;
	return a->until_ms < b->until_ms;
}

/* The entries uid's grants published (a scan of 16 KiB, made only when a
 * file is published anew). */
static unsigned
uid_entries(const struct direct_table *t, uint32_t uid)
{
	unsigned n = 0;
	uint32_t i;

	for (i = 0; i < t->n; i++)
		n += t->owners[i] == uid;
	return n;
}

void
direct_table_offer(struct direct_table *t, struct direct_registry *reg,
		   struct file_cache *cache, struct storage_handle *h,
		   const struct storage_stat *st, uint32_t uid, uint64_t now_ms)
{
	struct direct_table_entry *e;
	uint32_t i, k, pick = UINT32_MAX;
	uint64_t gen;

	if (t->base == NULL || t->linger_s == 0)
		return;
	/* only what anyone may read (the table tells its readers of it), and
	 * only what the cache keeps (a file past max-open-files goes with
	 * its last handle, not 60 s after) */
	if ((st->mode & S_IROTH) == 0 || st->size == 0 || !storage_kept(h))
		return;
	k = hm_table_hash(st->dev, st->ino, t->n);
	for (i = 0; i < HM_TABLE_PROBES; i++) {
		uint32_t j = (k + i) & (t->n - 1);
		bool live = t->owners[j] != DIRECT_TABLE_FREE && t->ents[j].g.slot != NULL;

		e = &t->ents[j];
		if (live && e->dev == st->dev && e->ino == st->ino) {
			e->until_ms = now_ms + (uint64_t)t->linger_s * 1000u;
			return;	/* published already */
		}
		/* another user's live entry is never given back for this */
		if (live && t->owners[j] != uid)
			continue;
		if (better_pick(t, j, pick))
			pick = j;
	}
	if (pick == UINT32_MAX)
		return;	/* its probes hold other users' files */
	/* a free entry is one more in the table; any entry not this user's
	 * already (free, or another's revoked one) one more of its share */
	if ((t->owners[pick] == DIRECT_TABLE_FREE && t->used >= t->most) ||
	    (t->owners[pick] != uid && uid_entries(t, uid) >= DIRECT_TABLE_PER_UID))
		return;	/* full, or this user's share is */
	if (t->owners[pick] != DIRECT_TABLE_FREE)
		entry_drop(t, reg, cache, pick);
	e = &t->ents[pick];
	storage_handle_dup(h, &e->h);
	if (direct_grant(reg, &e->g, &e->h, hm_table_entry(t->base, pick), 0, DIRECT_UID_TABLE,
			 &gen, NULL) < 0) {
		file_cache_close(cache, &e->h);
		return;
	}
	t->owners[pick] = uid;
	e->dev = st->dev;
	e->ino = st->ino;
	e->until_ms = now_ms + (uint64_t)t->linger_s * 1000u;
	t->used++;
	t->published++;
}

void
direct_table_sweep(struct direct_table *t, struct direct_registry *reg,
		   struct file_cache *cache, uint64_t now_ms)
{
	uint32_t i;

	if (t->used == 0)
		return;
	for (i = 0; i < t->n; i++) {
		struct direct_table_entry *e = &t->ents[i];

		if (t->owners[i] == DIRECT_TABLE_FREE)
			continue;
		/* a client's grant holds it still: the linger starts after */
		if (e->g.slot != NULL && t->linger_s > 0 && now_ms >= e->until_ms &&
		    direct_file_grants(&e->g) > 1)
			e->until_ms = now_ms + (uint64_t)t->linger_s * 1000u;
		if (e->g.slot == NULL || now_ms >= e->until_ms || t->linger_s == 0)
			entry_drop(t, reg, cache, i);
	}
}

void
direct_table_close(struct direct_table *t, struct direct_registry *reg,
		   struct file_cache *cache)
{
	uint32_t i;

	if (t->base == NULL)
		return;
	for (i = 0; i < t->n; i++)
		if (t->owners[i] != DIRECT_TABLE_FREE)
			entry_drop(t, reg, cache, i);
	revoke_all(t->base, t->n);
	/* another daemon may have taken the name since: only ours goes */
	{
		struct stat a, b;

		if (fstat(t->fd, &a) == 0 && stat(t->path, &b) == 0 && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino && unlink(t->path) < 0 && errno != ENOENT)
			log_info("cannot remove %s: %s", t->path, strerror(errno));
	}
	table_release(t);
}
