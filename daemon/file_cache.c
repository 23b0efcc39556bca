/*
 * file_cache.c - the file cache: entries keyed by (st_dev, st_ino), one
 * descriptor and at most one mapping each, shared by every handle on the
 * same unchanged file; plus the backend choice made at open, the idle
 * lists and the budget (storage.h).  Reads are in file_io.c, listing and
 * eviction in file_list.c; what the three share is in file_cache_priv.h.
 *
 * An entry is in one of three states:
 *   cached   - in the hash table, found by the next open of its file;
 *              kept (descriptor and mapping) after its last handle closes,
 *              unless the file has no name left by then;
 *   stale    - taken out of the hash because the file changed (or a copy
 *              out of its mapping faulted); lives until its last handle
 *              closes, then is freed;
 *   private  - never in the hash: files that are not regular, and files on
 *              pseudo file systems.  Their content can depend on the
 *              credentials of the opener (procfs and sysfs check some of
 *              them against the opener's, e.g. /proc/kallsyms), and a pipe
 *              or socket descriptor is a stream of its own, so one
 *              opener's descriptor must never answer for another.  Freed
 *              when their only handle closes.
 * Every entry is also on the cache's list of all entries, so that
 * file_cache_free() reaches the stale and private ones too.
 *
 * A cached entry with no handle is idle, and on one of two idle lists:
 * mapped or not.  Both are ordered by the moment the entry became idle
 * (its last handle closed), most recent at the head; entries leave them
 * only when opened again or freed.  So each list is sorted by idle_since,
 * its tail is its least recently used entry, and the oldest idle entry of
 * all is the older of the two tails: the budget drops from the tails
 * (mapped bytes from the mapped list only, since dropping an unmapped
 * entry frees no mapped bytes) and the sweep stops at the first entry not
 * idle long enough.  Reads never touch the lists: an entry being read has
 * a handle, so it is not on one.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1	/* O_PATH; config.h defines it under autotools */
#endif

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/inotify.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "backend.h"
#include "closer.h"
#include "guard.h"
#include "file_cache_priv.h"
#include "storage.h"
#include "proto/vocab.h"

#define CACHE_MIN_BUCKETS 64

/* The names are the wire's (proto/hotmap.proto); daemon/stats.c checks
 * that the numbers are too. */
const char *storage_reason_name(enum storage_reason reason)
{
	return vocab_reason_name((unsigned)reason);
}

const char *storage_backend_name(enum storage_backend backend)
{
	const struct backend_ops *ops = backend_get(backend);

	return ops != NULL ? ops->name : "unknown";
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	(void)vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/*
 * Every descriptor here came from a client, or reads a client's file: its
 * last close may block (a FUSE flush, NFS), so it goes to the closer
 * thread, never straight to close(2) on the caller's (the loop's) thread.
 */
static void safe_close(int fd)
{
	closer_close(fd);
}

uint64_t file_cache_clock_ms(void)
{
	return now_ns() / 1000000u;
}

/* --- file system classification ------------------------------------- */

static enum fs_class fs_classify(uint32_t f_type)
{
	switch (f_type) {
	case 0x6969:		/* NFS */
	case 0x517B:		/* SMB */
	case 0xFF534D42:	/* CIFS */
	case 0xFE534D42:	/* SMB2 */
	case 0x01021997:	/* 9P */
	case 0x65735546:	/* FUSE */
	case 0x0BD00BD0:	/* Lustre */
	case 0x00C36400:	/* Ceph */
	case 0x5346414F:	/* AFS (OpenAFS) */
	case 0x6B414653:	/* AFS (kAFS) */
	case 0x01161970:	/* GFS2 */
	case 0x7461636f:	/* OCFS2 */
	case 0x73757245:	/* CODA */
	case 0x564c:		/* NCP */
		return FS_NETWORK;
	case 0x9fa0:		/* proc */
	case 0x62656572:	/* sysfs */
	case 0x64626720:	/* debugfs */
	case 0x74726163:	/* tracefs */
	case 0x27e0eb:		/* cgroup */
	case 0x63677270:	/* cgroup2 */
	case 0x73636673:	/* securityfs */
	case 0x62656570:	/* configfs */
	case 0xcafe4a11:	/* bpf */
	case 0xde5e81e4:	/* efivarfs */
	case 0x6165676C:	/* pstore */
		return FS_PSEUDO;
	default:
		return FS_LOCAL;
	}
}

/*
 * Whether files of this file system read the same, and admit the same
 * readers, whoever opened them: only then may an entry be reopened with
 * the daemon's credentials (reopen_private) or shared between clients.
 * Everything else (procfs: /proc/kallsyms shows kernel addresses to a
 * privileged opener only; sysfs, debugfs, tracefs, securityfs, configfs,
 * cgroupfs; FUSE, whose server sees the opener; file systems not listed)
 * is read through the client's own descriptor, privately.  An allowlist:
 * a file system this list does not know costs a shared entry, never a
 * leak.
 */
static bool fs_is_data(uint32_t f_type)
{
	switch (f_type) {
	case 0xEF53:		/* ext2, ext3, ext4 */
	case 0x58465342:	/* XFS */
	case 0x9123683E:	/* btrfs */
	case 0x01021994:	/* tmpfs */
	case 0x858458f6:	/* ramfs */
	case 0x958458f6:	/* hugetlbfs */
	case 0xF2F52010:	/* F2FS */
	case 0x2FC12FC1:	/* ZFS */
	case 0xCA451A4E:	/* bcachefs */
	case 0x794c7630:	/* overlayfs */
	case 0x73717368:	/* squashfs */
	case 0xE0F5E1E2:	/* EROFS */
	case 0x9660:		/* ISO 9660 */
	case 0x15013346:	/* UDF */
	case 0x4d44:		/* FAT */
	case 0x2011BAB0:	/* exFAT */
	case 0x5346544e:	/* NTFS (ntfs-3g is FUSE) */
	case 0x7366746e:	/* ntfs3 */
	case 0x3153464a:	/* JFS */
	case 0x52654973:	/* ReiserFS */
	case 0x3434:		/* NILFS */
	case 0x6969:		/* NFS: the server checks access, the */
	case 0x517B:		/* client's descriptor proved it; */
	case 0xFF534D42:	/* content is the same for every reader */
	case 0xFE534D42:
	case 0x01021997:	/* 9P */
	case 0x0BD00BD0:	/* Lustre */
	case 0x00C36400:	/* Ceph */
	case 0x5346414F:	/* AFS */
	case 0x6B414653:
	case 0x01161970:	/* GFS2 */
	case 0x7461636f:	/* OCFS2 */
	case 0x73757245:	/* CODA */
	case 0x564c:		/* NCP */
		return true;
	default:
		return false;
	}
}

/* --- hash table: open hashing on (dev, ino) ------------------------------ */

static size_t cache_hash(dev_t dev, ino_t ino)
{
	/* splitmix64's finalizer: inode numbers are often sequential. */
	uint64_t x = (uint64_t)ino ^ ((uint64_t)dev * 0x9e3779b97f4a7c15ULL);

	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return (size_t)x;
}

struct file_entry *file_cache_find(struct file_cache *cache, dev_t dev, ino_t ino)
{
	struct file_entry *e = cache->buckets[cache_hash(dev, ino) & (cache->nbuckets - 1)];

	for (; e != NULL; e = e->hash_next)
		if (e->dev == dev && e->ino == ino)
			return e;
	return NULL;
}

static void cache_grow(struct file_cache *cache)
{
	size_t n = cache->nbuckets * 2;
	struct file_entry **b;

	if (n < cache->nbuckets)
		return;
	b = calloc(n, sizeof(*b));
	if (b == NULL)
		return;	/* keep the smaller table: longer chains, still correct */
	for (size_t i = 0; i < cache->nbuckets; i++) {
		struct file_entry *e = cache->buckets[i], *next;

		for (; e != NULL; e = next) {
			size_t k = cache_hash(e->dev, e->ino) & (n - 1);

			next = e->hash_next;
			e->hash_next = b[k];
			b[k] = e;
		}
	}
	free(cache->buckets);
	cache->buckets = b;
	cache->nbuckets = n;
}

/* At most one hashed entry per (dev, ino): the caller has unhashed the
 * previous one. */
static void cache_insert(struct file_cache *cache, struct file_entry *e)
{
	size_t k;

	if (cache->nhashed >= cache->nbuckets)
		cache_grow(cache);
	k = cache_hash(e->dev, e->ino) & (cache->nbuckets - 1);
	e->hash_next = cache->buckets[k];
	cache->buckets[k] = e;
	e->hashed = true;
	cache->nhashed++;
	if (!e->unkept)
		cache->nkept++;
}

void file_cache_unhash(struct file_cache *cache, struct file_entry *e)
{
	struct file_entry **p;

	if (!e->hashed)
		return;
	p = &cache->buckets[cache_hash(e->dev, e->ino) & (cache->nbuckets - 1)];
	for (; *p != NULL; p = &(*p)->hash_next) {
		if (*p == e) {
			*p = e->hash_next;
			break;
		}
	}
	e->hash_next = NULL;
	e->hashed = false;
	cache->nhashed--;
	if (!e->unkept)
		cache->nkept--;
}

/* --- idle lists (see the top of the file) ---------------------------------- */

static void lru_init(struct lru_node *list)
{
	list->prev = list;
	list->next = list;
}

static bool lru_empty(const struct lru_node *list)
{
	return list->next == list;
}

static struct file_entry *entry_of_lru(struct lru_node *n)
{
	return (struct file_entry *)((char *)n - offsetof(struct file_entry, lru));
}

/* The least recently used entry of a list; NULL when it is empty. */
static struct file_entry *lru_tail(struct lru_node *list)
{
	return lru_empty(list) ? NULL : entry_of_lru(list->prev);
}

/* e has just lost its last handle: the most recently used idle entry. */
static void entry_watch(struct file_cache *cache, struct file_entry *e)
{
	char path[64];

	if (cache->watch_fd >= 0) {
		snprintf(path, sizeof path, "/proc/self/fd/%d", e->file.fd);
		e->wd = inotify_add_watch(cache->watch_fd, path, IN_ATTRIB);
	}
	if (e->wd < 0) {
		e->unwatched = true;
		cache->unwatched_idle++;
	}
}

static void entry_unwatch(struct file_cache *cache, struct file_entry *e)
{
	if (e->wd >= 0)
		(void)inotify_rm_watch(cache->watch_fd, e->wd);
	e->wd = -1;
	if (e->unwatched)
		cache->unwatched_idle--;
	e->unwatched = false;
}

/* Whether nothing names e's file any more (deleted, or replaced by
 * rename): -1 when fstat fails. */
static int entry_unlinked(const struct file_entry *e)
{
	struct stat st;

	if (fstat(e->file.fd, &st) < 0)
		return -1;
	return st.st_nlink == 0;
}

static void idle_push(struct file_cache *cache, struct file_entry *e)
{
	struct lru_node *list = e->file.map != NULL ? &cache->idle_mapped : &cache->idle_unmapped;

	if (e->lru.next != NULL)
		return;
	e->idle_since_ns = now_ns();
	e->lru.prev = list;
	e->lru.next = list->next;
	list->next->prev = &e->lru;
	list->next = &e->lru;
	if (e->file.map != NULL)
		cache->idle_mapped_bytes += e->file.map_len;
	entry_watch(cache, e);
}

/*
 * e is getting a handle, or going.  The mapping of an idle entry never
 * changes (only an open maps, and nothing unmaps without freeing the entry
 * after this), so this subtracts what idle_push added.
 */
static void idle_remove(struct file_cache *cache, struct file_entry *e)
{
	if (e->lru.next == NULL)
		return;
	e->lru.prev->next = e->lru.next;
	e->lru.next->prev = e->lru.prev;
	e->lru.prev = NULL;
	e->lru.next = NULL;
	if (e->file.map != NULL)
		cache->idle_mapped_bytes -= e->file.map_len;
	entry_unwatch(cache, e);
}

/* The least recently used idle entry, mapped or not; NULL when none. */
static struct file_entry *idle_oldest(struct file_cache *cache)
{
	struct file_entry *m = lru_tail(&cache->idle_mapped);
	struct file_entry *u = lru_tail(&cache->idle_unmapped);

	if (m == NULL || u == NULL)
		return m != NULL ? m : u;
	return u->idle_since_ns <= m->idle_since_ns ? u : m;
}

/* --- entries ----------------------------------------------------------- */

static struct file_entry *entry_new(struct file_cache *cache, int fd,
				    const struct stat *st, enum fs_class fs,
				    uint32_t fs_type)
{
	struct file_entry *e = calloc(1, sizeof(*e));

	if (e == NULL)
		return NULL;
	e->file.fd = fd;
	e->wd = -1;
	e->dev = st->st_dev;
	e->ino = st->st_ino;
	e->size = st->st_size;
	e->mtime = st->st_mtim;
	e->ctime = st->st_ctim;
	e->fs = fs;
	e->fs_type = fs_type;

	e->all_next = cache->all;
	if (cache->all != NULL)
		cache->all->all_prev = e;
	cache->all = e;
	cache->ctr.entries++;
	return e;
}

void file_cache_entry_free(struct file_cache *cache, struct file_entry *e)
{
	idle_remove(cache, e);
	file_cache_unhash(cache, e);
	if (e->file.map != NULL) {
		cache->ctr.mappings--;
		cache->ctr.mapped_bytes -= e->file.map_len;
		/* A mapping is the only state a backend attaches to an
		 * entry, and only the mmap backend makes one. */
		backend_get(STORAGE_BACKEND_MMAP)->detach(&e->file);
	}
	safe_close(e->file.fd);

	if (e->all_prev != NULL)
		e->all_prev->all_next = e->all_next;
	else
		cache->all = e->all_next;
	if (e->all_next != NULL)
		e->all_next->all_prev = e->all_prev;
	cache->ctr.entries--;
	free(e);
}

/*
 * Takes e out of the hash so that the next open of its file makes a new
 * entry.  Refcount invariant: an entry with handles is never freed (nor
 * unmapped) here, since a reader may be copying out of its mapping; the
 * last file_cache_close() frees it instead.  One without handles has no
 * reader and goes now.
 */
static void entry_retire(struct file_cache *cache, struct file_entry *e)
{
	file_cache_unhash(cache, e);
	if (e->refs == 0)
		file_cache_entry_free(cache, e);
}

static bool entry_matches(const struct file_entry *e, const struct stat *st)
{
	return e->size == st->st_size &&
	       e->mtime.tv_sec == st->st_mtim.tv_sec &&
	       e->mtime.tv_nsec == st->st_mtim.tv_nsec &&
	       e->ctime.tv_sec == st->st_ctim.tv_sec &&
	       e->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

/* --- the budget -------------------------------------------------------------- */

/*
 * Only idle entries are ever dropped here: an entry with a handle may have
 * a reader copying out of its mapping (on a worker, through a
 * storage_handle_dup reference), and idle entries have no handle by
 * definition.  Each step drops one entry, so the cost is what is dropped.
 */

/* Whether room more kept entries would exceed max_files. */
static bool files_over(const struct file_cache *cache, uint64_t room)
{
	uint64_t max = cache->limits.max_files;

	return max != 0 && (room > max || cache->nkept > max - room);
}

/* Drops idle entries, least recently used first, until room more kept
 * entries fit under max_files; whether they do. */
static bool trim_files(struct file_cache *cache, uint64_t room)
{
	while (files_over(cache, room)) {
		struct file_entry *e = idle_oldest(cache);

		if (e == NULL)
			return false;
		cache->ctr.evictions_lru++;
		file_cache_entry_free(cache, e);
	}
	return true;
}

/* Whether a new mapping of room bytes would exceed max_mapped_bytes. */
static bool mapped_over(const struct file_cache *cache, uint64_t room)
{
	uint64_t max = cache->limits.max_mapped_bytes;

	return max != 0 && (room > max || cache->ctr.mapped_bytes > max - room);
}

/* Drops idle mapped entries, least recently used first, until a new
 * mapping of room bytes fits under max_mapped_bytes; whether it does.
 * Unmapped idle entries stay: dropping them frees no mapped bytes. */
static bool trim_mapped(struct file_cache *cache, uint64_t room)
{
	while (mapped_over(cache, room)) {
		struct file_entry *e = lru_tail(&cache->idle_mapped);

		if (e == NULL)
			return false;
		cache->ctr.evictions_lru++;
		file_cache_entry_free(cache, e);
	}
	return true;
}

/*
 * Makes room for a new mapping of len bytes; whether it fits.  When even
 * dropping every idle mapping would not make it fit (the rest have
 * readers, or len alone is over the budget), drops nothing, since the
 * opener falls back to pread; unless the mapping will be made anyway
 * (force): then drops what it can, to stay as close to the budget as the
 * readers allow.
 */
static bool make_room_mapped(struct file_cache *cache, uint64_t len, bool force)
{
	uint64_t max = cache->limits.max_mapped_bytes;
	uint64_t busy = cache->ctr.mapped_bytes - cache->idle_mapped_bytes;

	if (max == 0)
		return true;
	if (!force && (len > max || busy > max - len))
		return false;
	return trim_mapped(cache, len);
}

/* Back under the limits as far as idle entries allow. */
static void trim(struct file_cache *cache)
{
	(void)trim_files(cache, 0);
	(void)trim_mapped(cache, 0);
}

/* --- the cache ----------------------------------------------------------- */

struct file_cache *file_cache_new(void)
{
	struct file_cache *cache;
	int r;

	/* Every copy out of a mapping is guarded; without the handler a
	 * truncated file would kill the daemon. */
	r = guard_install();
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	cache = calloc(1, sizeof(*cache));
	if (cache == NULL)
		return NULL;
	cache->nbuckets = CACHE_MIN_BUCKETS;
	cache->buckets = calloc(cache->nbuckets, sizeof(*cache->buckets));
	if (cache->buckets == NULL) {
		free(cache);
		return NULL;
	}
	/* No limits: the cache keeps what it opened, as before budgets. */
	cache->limits = (struct storage_limits){
		.max_mapped_bytes = 0,
		.max_files = 0,
		.idle_unmap_ms = 0,
		.network_fs_mmap = false,
	};
	lru_init(&cache->idle_mapped);
	lru_init(&cache->idle_unmapped);
	cache->watch_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	return cache;
}

struct file_cache *file_cache_free(struct file_cache *cache)
{
	if (cache == NULL)
		return NULL;
	while (cache->all != NULL)
		file_cache_entry_free(cache, cache->all);
	safe_close(cache->watch_fd);
	free(cache->buckets);
	free(cache);
	return NULL;
}

/*
 * The backend a policy gives this file, before any mapping is tried.
 * MMAP here may still become PREAD (MMAP_FAILED) or an error when mmap(2)
 * itself fails.
 */
static int select_backend(enum storage_policy policy, const struct stat *st,
			  enum fs_class fs, uint32_t fs_type, bool network_fs_mmap,
			  enum storage_backend *backend, enum storage_reason *reason,
			  char *err, size_t errlen)
{
	bool too_large = false;

#if SIZE_MAX < INT64_MAX
	too_large = (uint64_t)st->st_size > SIZE_MAX;
#endif

	switch (policy) {
	case STORAGE_POLICY_PREAD:
		*backend = STORAGE_BACKEND_PREAD;
		*reason = STORAGE_REASON_FORCED;
		return 0;

	case STORAGE_POLICY_MMAP:
		/* The opener insists: say why it cannot be done. */
		if (!S_ISREG(st->st_mode)) {
			set_err(err, errlen, "mmap required but the file is not a regular file");
			return -ENODEV;
		}
		if (fs == FS_PSEUDO) {
			set_err(err, errlen,
				"mmap required but the file is on a pseudo file system (f_type 0x%" PRIx32 ")",
				fs_type);
			return -ENODEV;
		}
		if (st->st_size == 0) {
			set_err(err, errlen, "mmap required but the file is empty");
			return -EINVAL;
		}
		if (too_large) {
			set_err(err, errlen, "mmap required but the file is too large for the address space");
			return -EFBIG;
		}
		/* A network file system is allowed: the user asked. */
		*backend = STORAGE_BACKEND_MMAP;
		*reason = STORAGE_REASON_FORCED;
		return 0;

	case STORAGE_POLICY_AUTO:
		*backend = STORAGE_BACKEND_PREAD;
		/*
		 * The file system goes before the size: sysfs attributes
		 * claim 4096 bytes whatever they hold, procfs files claim 0.
		 */
		if (!S_ISREG(st->st_mode))
			*reason = STORAGE_REASON_NOT_REGULAR;
		else if (fs == FS_PSEUDO)
			*reason = STORAGE_REASON_PSEUDO_FS;
		else if (fs == FS_NETWORK && !network_fs_mmap)
			*reason = STORAGE_REASON_NETWORK_FS;
		else if (st->st_size == 0)
			*reason = STORAGE_REASON_EMPTY;
		else if (too_large)
			*reason = STORAGE_REASON_TOO_LARGE;
		else {
			/* A mapped network file keeps its reason, so that a
			 * listing shows why it is not local-file. */
			*backend = STORAGE_BACKEND_MMAP;
			*reason = fs == FS_NETWORK ? STORAGE_REASON_NETWORK_FS :
						     STORAGE_REASON_LOCAL_FILE;
		}
		return 0;
	}
	set_err(err, errlen, "unknown backend policy %d", (int)policy);
	return -EINVAL;
}

/*
 * A passed descriptor shares its open file description with the client,
 * which may change its flags at any time under every reader of the entry
 * (O_DIRECT would make the daemon's preads fail for all of them).  So the
 * entry reads through a description of its own when the daemon may open
 * the file itself: through /proc/self/fd, which reaches the same inode
 * whatever its name is now.  When it may not (permissions, no /proc), the
 * client's descriptor serves, and that limit is documented
 * (docs/security.md).  Only for shared entries (a regular file on a data
 * file system, fs_is_data): reopening anything else would read it with
 * the daemon's credentials.  Returns the descriptor the entry keeps.
 */
static int
reopen_private(int fd, const struct stat *st)
{
	char path[64];
	struct stat st2;
	int nfd;

	/*
	 * O_NONBLOCK: a client holding a lease on the file (F_SETLEASE)
	 * would otherwise make this open wait for the lease break, up to
	 * lease-break-time (45 s), on the event loop, at every OPEN.  With
	 * it the open fails at once (EWOULDBLOCK) and the client's
	 * descriptor serves.  The flag means nothing to reads of a regular
	 * file; it is cleared all the same.
	 */
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	nfd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (nfd < 0)
		return fd;
	(void)fcntl(nfd, F_SETFL, 0);
	if (fstat(nfd, &st2) < 0 || st2.st_dev != st->st_dev || st2.st_ino != st->st_ino) {
		safe_close(nfd);
		return fd;
	}
	safe_close(fd);
	return nfd;
}

/* What file_cache_open has learnt so far, step by step. */
struct open_req {
	int fd;				/* the client's; the entry's or closed after open_take_entry */
	enum storage_policy policy;
	struct stat st;
	enum fs_class fs;
	uint32_t fs_type;
	bool shared;			/* may be cached and read by other openers */
	struct file_entry *e;
	enum storage_backend backend;
	enum storage_reason reason;
	bool fresh;			/* this open made the entry */
	bool over_files;		/* kept past max_files: unkept */
	bool over_mapped;		/* a required mapping past max_mapped_bytes */
	bool fallback;			/* AUTO read with pread for the budget */
	char *err;
	size_t errlen;
};

/*
 * A passed descriptor proves read access only if it was opened for
 * reading: O_PATH and write-only descriptors can be had without read
 * permission, and must not open (or reuse) an entry.
 */
static int open_check_fd(struct open_req *o)
{
	int fl, r;

	fl = fcntl(o->fd, F_GETFL);
	if (fl < 0) {
		r = -errno;
		set_err(o->err, o->errlen, "not a valid descriptor");
		return r;
	}
	if (fl & O_PATH) {
		set_err(o->err, o->errlen, "descriptor opened with O_PATH cannot be read");
		return -EBADF;
	}
	if ((fl & O_ACCMODE) != O_RDONLY && (fl & O_ACCMODE) != O_RDWR) {
		set_err(o->err, o->errlen, "descriptor is not open for reading");
		return -EBADF;
	}
	if (fstat(o->fd, &o->st) < 0) {
		r = -errno;
		set_err(o->err, o->errlen, "fstat failed: %s", strerror(-r));
		return r;
	}
	if (S_ISDIR(o->st.st_mode)) {
		set_err(o->err, o->errlen, "is a directory");
		return -EISDIR;
	}
	return 0;
}

/* The cached entry of a regular file, if any, and its file system. */
static int open_find_entry(struct file_cache *cache, struct open_req *o)
{
	struct statfs sfs;
	int r;

	if (S_ISREG(o->st.st_mode)) {
		o->e = file_cache_find(cache, o->st.st_dev, o->st.st_ino);
		if (o->e != NULL) {
			o->fs = o->e->fs;	/* same st_dev, same file system */
			o->fs_type = o->e->fs_type;
		} else {
			if (fstatfs(o->fd, &sfs) < 0) {
				r = -errno;
				set_err(o->err, o->errlen, "fstatfs failed: %s", strerror(-r));
				return r;
			}
			o->fs_type = (uint32_t)sfs.f_type;
			o->fs = fs_classify(o->fs_type);
		}
	}
	/* Not shared, not reopened: the client's descriptor is the entry's,
	 * and only this handle reads through it (see fs_is_data). */
	o->shared = S_ISREG(o->st.st_mode) && o->fs != FS_PSEUDO && fs_is_data(o->fs_type);
	return 0;
}

/*
 * Reuses the entry found, unless its file changed, or makes one.  The
 * descriptor belongs to the entry, or is closed, when this returns,
 * failure included.
 */
static int open_take_entry(struct file_cache *cache, struct open_req *o)
{
	if (o->e != NULL && !entry_matches(o->e, &o->st)) {
		/* The file changed since the entry was made: its handles keep
		 * reading the inode as it is now; new opens get a new entry. */
		entry_retire(cache, o->e);
		cache->ctr.stale_replaced++;
		o->e = NULL;
	}
	if (o->e != NULL) {
		/* The entry already has a descriptor for this file; this one
		 * has served its purpose (proving read access). */
		safe_close(o->fd);
		/* Off the idle list before anything below drops entries for
		 * the budget: it is about to get a handle. */
		idle_remove(cache, o->e);
		cache->ctr.cache_hits++;
		o->e->hits++;
		return 0;
	}
	/* Past max_files with every entry in use, the open still
	 * succeeds: the descriptor is the client's to read. */
	if (o->shared && !trim_files(cache, 1))
		o->over_files = true;
	if (o->shared)
		o->fd = reopen_private(o->fd, &o->st);
	o->e = entry_new(cache, o->fd, &o->st, o->fs, o->fs_type);
	if (o->e == NULL) {
		set_err(o->err, o->errlen, "out of memory");
		safe_close(o->fd);
		return -ENOMEM;
	}
	if (o->shared) {
		o->e->unkept = o->over_files;	/* before cache_insert counts it */
		cache_insert(cache, o->e);
	}
	cache->ctr.cache_misses++;
	o->fresh = true;
	return 0;
}

/* A new mapping must fit max_mapped_bytes: a required one is honoured past
 * the budget (see storage.h); AUTO reads with pread instead. */
static void open_fit_budget(struct file_cache *cache, struct open_req *o)
{
	struct file_entry *e = o->e;

	if (o->backend != STORAGE_BACKEND_MMAP || e->file.map != NULL || e->map_errno != 0)
		return;
	if (make_room_mapped(cache, (uint64_t)o->st.st_size, o->policy == STORAGE_POLICY_MMAP))
		return;
	if (o->policy == STORAGE_POLICY_MMAP) {
		o->over_mapped = true;
	} else {
		o->backend = STORAGE_BACKEND_PREAD;
		o->reason = STORAGE_REASON_OVER_BUDGET;
		o->fallback = true;
	}
}

/*
 * Maps the file when the backend is mmap and the entry has no mapping yet.
 * When mmap fails, AUTO falls back to pread; a required mapping fails the
 * open, and the entry goes where an unopened one would.
 */
static int open_attach(struct file_cache *cache, struct open_req *o)
{
	struct file_entry *e = o->e;
	int r;

	if (o->backend != STORAGE_BACKEND_MMAP || e->file.map != NULL)
		return 0;
	/* The size validated above is the file's size now: it is the
	 * mapping's length.  A failed mmap is never tried again for
	 * this entry (it would fail the same way, at a syscall each). */
	if (e->map_errno == 0) {
		r = backend_get(o->backend)->attach(&e->file, (uint64_t)o->st.st_size);
		if (r < 0) {
			e->map_errno = -r;
		} else {
			cache->ctr.mappings++;
			cache->ctr.mapped_bytes += e->file.map_len;
			if (o->over_mapped)
				cache->ctr.mapped_over_budget++;
		}
	}
	if (e->map_errno == 0)
		return 0;
	if (o->policy == STORAGE_POLICY_MMAP) {
		r = -e->map_errno;
		set_err(o->err, o->errlen, "mmap required but mmap failed: %s",
			strerror(e->map_errno));
		/* A new shared entry stays cached (it remembers
		 * the failure), idle; a private one cannot get
		 * here, and one past max_files is not kept. */
		if (e->refs == 0) {
			if (e->hashed && !e->unkept)
				idle_push(cache, e);
			else
				file_cache_entry_free(cache, e);
		}
		return r;
	}
	o->backend = STORAGE_BACKEND_PREAD;
	o->reason = STORAGE_REASON_MMAP_FAILED;
	return 0;
}

int file_cache_open(struct file_cache *cache, int fd, enum storage_policy policy,
		    struct storage_handle *out, char *err, size_t errlen)
{
	struct open_req o = {
		.fd = fd,
		.policy = policy,
		.fs = FS_LOCAL,
		.err = err,
		.errlen = errlen,
	};
	struct file_entry *e;
	int r;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (out != NULL)
		*out = (struct storage_handle){ .entry = NULL };
	if (cache == NULL || out == NULL) {
		r = -EINVAL;
		goto fail_fd;
	}
	r = open_check_fd(&o);
	if (r < 0)
		goto fail_fd;
	r = open_find_entry(cache, &o);
	if (r < 0)
		goto fail_fd;
	r = select_backend(policy, &o.st, o.fs, o.fs_type, cache->limits.network_fs_mmap,
			   &o.backend, &o.reason, err, errlen);
	if (r < 0)
		goto fail_fd;
	r = open_take_entry(cache, &o);
	if (r < 0)
		return r;
	/* fd belongs to the entry, or is closed, from here on. */
	open_fit_budget(cache, &o);
	r = open_attach(cache, &o);
	if (r < 0)
		return r;

	e = o.e;
	e->refs++;
	e->last_use_ns = now_ns();
	e->last_reason = o.reason;
	out->entry = e;
	out->backend = o.backend;
	out->reason = o.reason;
	out->fresh = o.fresh;
	out->map_errno = o.reason == STORAGE_REASON_MMAP_FAILED ? e->map_errno : 0;
	cache->ctr.opens_by_reason[o.reason]++;
	if (o.fallback)
		cache->ctr.budget_fallbacks++;
	if (o.over_files)
		cache->ctr.files_over_budget++;
	return 0;

fail_fd:
	safe_close(fd);
	return r;
}

void file_cache_close(struct file_cache *cache, struct storage_handle *h)
{
	struct file_entry *e;

	if (cache == NULL || h == NULL || h->entry == NULL)
		return;
	e = h->entry;
	h->entry = NULL;
	if (e->refs == 0)
		return;	/* closed twice: never drive the count below zero */
	e->refs--;
	if (e->refs > 0)
		return;
	/*
	 * Refcount invariant: a cached entry outlives its handles (that is
	 * the point of the cache); a stale or private one is unreachable for
	 * new opens, so its last handle frees it.  So does a cached one
	 * whose file has been deleted (or replaced by rename): no path leads
	 * to it any more, and our descriptor would pin its blocks.
	 */
	/* One made past max_files was never kept: it goes with its last
	 * handle, whatever has become idle since. */
	if (!e->hashed || e->unkept) {
		file_cache_entry_free(cache, e);
		return;
	}
	/* Idle now, and the most recently used of the idle; watched from
	 * here on, so that checking the link count after idle_push misses
	 * no deletion. */
	idle_push(cache, e);
	if (entry_unlinked(e) == 1) {
		file_cache_entry_free(cache, e);
		return;
	}
	/* If readers held the cache over its limits (a required mapping,
	 * lowered limits), this is the first moment something may go. */
	trim(cache);
}

/* h is open, so its entry has a handle and is on no idle list: the new
 * reference keeps it off (and out of the budget's reach) until the last
 * of them closes. */
void storage_handle_dup(const struct storage_handle *h, struct storage_handle *out)
{
	*out = *h;
	if (h->entry != NULL)
		h->entry->refs++;
}

void file_cache_counters(const struct file_cache *cache, struct storage_counters *out)
{
	if (out == NULL)
		return;
	if (cache == NULL) {
		*out = (struct storage_counters){ 0 };
		return;
	}
	*out = cache->ctr;
}

void file_cache_reset_counters(struct file_cache *cache)
{
	struct storage_counters state;

	if (cache == NULL)
		return;
	state = (struct storage_counters){
		.entries = cache->ctr.entries,
		.mappings = cache->ctr.mappings,
		.mapped_bytes = cache->ctr.mapped_bytes,
	};
	cache->ctr = state;
}

void file_cache_set_limits(struct file_cache *cache, const struct storage_limits *limits)
{
	if (cache == NULL || limits == NULL)
		return;
	cache->limits = *limits;
	/* A lowered budget applies now, as far as idle entries allow; the
	 * rest follows as readers close (file_cache_close trims). */
	trim(cache);
}

void file_cache_get_limits(const struct file_cache *cache, struct storage_limits *out)
{
	if (out == NULL)
		return;
	if (cache == NULL) {
		*out = (struct storage_limits){ 0 };
		return;
	}
	*out = cache->limits;
}

/* Drops the idle entries of one list idle longer than idle_ms at now_ms.
 * The list is sorted by idle_since (oldest at the tail), so the first
 * entry young enough ends the walk. */
static void sweep_list(struct file_cache *cache, struct lru_node *list,
		       uint64_t now_ms, uint64_t idle_ms)
{
	struct file_entry *e;

	while ((e = lru_tail(list)) != NULL) {
		uint64_t since_ms = e->idle_since_ns / 1000000u;

		/* A now_ms before since_ms (a caller on another clock, or
		 * an old timestamp) drops nothing rather than wrap. */
		if (now_ms <= since_ms || now_ms - since_ms <= idle_ms)
			break;
		cache->ctr.evictions_idle++;
		file_cache_entry_free(cache, e);
	}
}

/* Frees the idle entries of list whose file is gone; with only_unwatched,
 * just those no watch reports. */
static void drop_unlinked(struct file_cache *cache, struct lru_node *list, bool only_unwatched,
			  int wd)
{
	struct lru_node *n, *next;

	for (n = list->next; n != list; n = next) {
		struct file_entry *e = entry_of_lru(n);

		next = n->next;
		if (only_unwatched ? !e->unwatched : e->wd != wd)
			continue;
		if (entry_unlinked(e) == 1) {
			cache->ctr.evictions_deleted++;
			file_cache_entry_free(cache, e);
		}
	}
}

int file_cache_watch_fd(const struct file_cache *cache)
{
	return cache != NULL ? cache->watch_fd : -1;
}

void file_cache_notice(struct file_cache *cache)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	if (cache == NULL || cache->watch_fd < 0)
		return;
	while ((n = read(cache->watch_fd, buf, sizeof buf)) > 0) {
		const char *p = buf;

		while (p < buf + n) {
			const struct inotify_event *ev = (const struct inotify_event *)(const void *)p;

			if (ev->mask & IN_ATTRIB) {
				drop_unlinked(cache, &cache->idle_mapped, false, ev->wd);
				drop_unlinked(cache, &cache->idle_unmapped, false, ev->wd);
			}
			p += sizeof *ev + ev->len;
		}
	}
}

void file_cache_sweep(struct file_cache *cache, uint64_t now_ms)
{
	if (cache == NULL)
		return;
	if (cache->unwatched_idle > 0) {
		drop_unlinked(cache, &cache->idle_mapped, true, -1);
		drop_unlinked(cache, &cache->idle_unmapped, true, -1);
	}
	if (cache->limits.idle_unmap_ms == 0)
		return;
	sweep_list(cache, &cache->idle_mapped, now_ms, cache->limits.idle_unmap_ms);
	sweep_list(cache, &cache->idle_unmapped, now_ms, cache->limits.idle_unmap_ms);
}
