/* SPDX-License-Identifier: MIT */
/*
 * storage.h - the storage core of hotmapd: the file cache, the backends
 * (mmap, pread) and the SIGBUS-guarded copy.
 *
 * What it is for: turn a readable descriptor (hm_fd: a descriptor, or a
 * HANDLE on Windows) into a shared cache entry keyed by the file's
 * identity ((st_dev, st_ino); on Windows the volume serial and the 128-bit
 * file id), pick a backend for each handle at open time, and
 * answer reads with exactly the bytes pread(2) on that descriptor would
 * return at that moment.
 *
 * What it must not do: include libevent or protobuf headers, log, exit or
 * abort on bad input.  Every function returns 0 or a positive value on
 * success and a negative errno on failure.
 *
 * Threading: the cache and its entries are not locked; one thread (the event
 * loop) calls into them.  The guarded copy (guard.h) is thread-safe.
 *
 * Memory budget: struct storage_limits bounds the entries kept and the bytes
 * mapped.  Entries no handle holds sit on a least-recently-used list and
 * are the only ones ever dropped for the budget: a mapping with a reader is
 * never unmapped under it.  No read walks that list.
 *
 * Rooms: file_cache.c holds the cache (new, free, close, counters),
 * file_entry.c its entries (hash, idle lists), file_open.c the open path,
 * file_budget.c the budget and the sweep, file_io.c the I/O through a
 * handle (read, warm, willneed, stat), file_list.c the listing and
 * eviction; backend_mmap.c and backend_unix.c the backends (backend.h),
 * guard.c the guarded copy.  storage_priv.h is what the cache files
 * share; this header is the only contract for the rest of the daemon.
 * What they ask of the operating system is file_platform.h
 * (file_platform_unix.c, file_platform_win32.c) and backend.h's mapping
 * calls (backend_unix.c, backend_win32.c).
 */
#ifndef HOTMAP_STORAGE_H
#define HOTMAP_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/base/platform.h"

/* Values match HM_BACKEND_* in client/hotmap.h and the wire protocol. */
enum storage_backend {
	STORAGE_BACKEND_MMAP = 1,
	STORAGE_BACKEND_PREAD = 2,
};

/* What the opener asked for; captured per handle at open. */
enum storage_policy {
	STORAGE_POLICY_AUTO = 0,
	STORAGE_POLICY_MMAP = 1,	/* required: fail if impossible */
	STORAGE_POLICY_PREAD = 2,
};

/* Why a handle got its backend.  Values travel on the wire: append only. */
enum storage_reason {
	STORAGE_REASON_LOCAL_FILE = 0,	/* AUTO: regular, non-empty, local fs */
	STORAGE_REASON_FORCED = 1,	/* policy MMAP or PREAD asked for it */
	STORAGE_REASON_NOT_REGULAR = 2,	/* pipe, socket, device, ... */
	STORAGE_REASON_EMPTY = 3,	/* st_size 0 (procfs files have content) */
	STORAGE_REASON_NETWORK_FS = 4,	/* NFS, CIFS/SMB, 9p, FUSE, Lustre, Ceph, ...:
					 * pread, or mmap when network_fs_mmap allows */
	STORAGE_REASON_PSEUDO_FS = 5,	/* procfs, sysfs, debugfs, ...: st_size lies */
	STORAGE_REASON_MMAP_FAILED = 6,	/* mmap(2) returned an error */
	STORAGE_REASON_TOO_LARGE = 7,	/* st_size does not fit in size_t */
	STORAGE_REASON_OVER_BUDGET = 8,	/* AUTO: max_mapped_bytes is full of readers */
	STORAGE_REASON__COUNT
};

/* Short stable name ("local-file", "forced", "not-regular", "empty",
 * "network-fs", "pseudo-fs", "mmap-failed", "too-large", "over-budget");
 * "unknown" else. */
const char *storage_reason_name(enum storage_reason reason);
/* "mmap", "pread" or "unknown". */
const char *storage_backend_name(enum storage_backend backend);

struct file_cache;
struct file_entry;
struct storage_copy;

/* One opener's view of an entry: the backend it was given at open. */
struct storage_handle {
	struct file_entry *entry;
	enum storage_backend backend;
	enum storage_reason reason;
	int map_errno;		/* with STORAGE_REASON_MMAP_FAILED: mmap's errno */
	bool fresh;		/* this open made the entry (not cached before) */
	bool job;		/* a job's (storage_handle_dup) */
};

struct storage_stat {
	uint64_t size;		/* current st_size of the descriptor */
	uint64_t dev;
	uint64_t ino;
	int64_t mtime_ns;
	uint32_t mode;
	uint64_t mapped_length;	/* 0 when the entry has no mapping */
	unsigned handles;	/* open handles on the entry, all sessions */
};

/* Counters the storage core keeps (never reset here). */
struct storage_counters {
	uint64_t entries;		/* entries alive (cached + stale) */
	uint64_t mappings;		/* entries with a live mapping */
	uint64_t mapped_bytes;		/* sum of mapping lengths */
	uint64_t cache_hits;		/* opens that reused an entry */
	uint64_t cache_misses;		/* opens that made a new entry */
	uint64_t stale_replaced;	/* entries replaced because the file changed */
	uint64_t sigbus_recoveries;	/* faults caught in a guarded copy */
	uint64_t evictions;		/* entries dropped by evict requests */
	uint64_t bytes_mmap;		/* bytes served by copying out of a mapping */
	uint64_t bytes_pread;		/* bytes served by pread */
	uint64_t opens_by_reason[STORAGE_REASON__COUNT];
	uint64_t evictions_lru;		/* entries dropped to meet max_files or
					 * max_mapped_bytes, least recently used first */
	uint64_t evictions_idle;	/* entries dropped by file_cache_sweep */
	uint64_t evictions_deleted;	/* idle entries dropped because their file
					 * was deleted or replaced (no name leads
					 * to it; it would pin the disk blocks) */
	uint64_t budget_fallbacks;	/* AUTO opens given pread because
					 * max_mapped_bytes was full of readers
					 * (STORAGE_REASON_OVER_BUDGET) */
	uint64_t files_over_budget;	/* opens that made an entry past max_files
					 * with every entry in use: not kept after
					 * its last handle closes */
	uint64_t mapped_over_budget;	/* STORAGE_POLICY_MMAP mappings made past
					 * max_mapped_bytes (honoured, see
					 * file_cache_open) */
	uint64_t huge_folds;		/* chunks read back into huge folios
					 * (storage_warm_detached, fplat_fold) */
	uint64_t huge_fold_misses;	/* chunks read back that stayed small */
	uint64_t copies;		/* copies of network files kept in memory */
	uint64_t copy_bytes;		/* their bytes, and those being filled */
	uint64_t copy_fills;		/* copies filled and kept */
	uint64_t copy_hits;		/* opens and warms given a copy */
	uint64_t copy_drops;		/* copies dropped: their file changed */
	uint64_t copy_evictions;	/* copies dropped for network_copy_max */
	uint64_t copy_held_bytes;	/* dropped copies clients may still hold */
	uint64_t copy_held_refusals;	/* copies not given: the uid held too many */
};

/*
 * The cache's budget; the daemon may change it at any time
 * (file_cache_set_limits).  file_cache_new starts with all zero: no limit,
 * network file systems read with pread.
 *
 * An entry is idle when no handle holds it (storage_handle_dup references
 * count as handles).  Idle entries are ordered by their last use, where the
 * close of an entry's last handle counts as a use: an entry is in use for
 * as long as a handle holds it, whether or not it is read.  So the order is
 * the order in which entries became idle, and the list is never walked to
 * insert or to find its oldest.
 */
struct storage_limits {
	uint64_t max_mapped_bytes;	/* sum of mapping lengths; 0: no limit */
	uint64_t max_files;		/* entries kept (cached, with or without
					 * handles; not stale or private ones);
					 * 0: no limit */
	uint64_t idle_unmap_ms;		/* an entry idle longer than this is
					 * dropped by file_cache_sweep; 0: never */
	bool network_fs_mmap;		/* false: AUTO reads files on network file
					 * systems with pread; true: AUTO may map
					 * them (reason network-fs, backend mmap) */
	uint64_t network_copy_max;	/* bytes of copies of network files kept
					 * in memory (file_copy.c); 0: none */
	uint64_t network_copy_fill_ms;	/* a fill slower than this is abandoned
					 * (file_copy.c); 0: 60 s */
};

/* What one read did (for the cache's counters), and how it may do it. */
struct storage_io {
	bool nowait;		/* in: -EAGAIN rather than wait for the disk */
	uint64_t bytes_mmap;	/* bytes copied out of the mapping */
	uint64_t bytes_pread;	/* bytes read with pread */
	unsigned faults;	/* guarded copies that hit a SIGBUS */
	/* storage_warm_detached only: */
	bool fold;		/* in: huge folios for the range's chunks */
	bool fold_only;		/* in: that, and no more */
	bool fold_first;	/* in: the first step of a fold_only job */
	bool fold_cold;		/* out: the file is not hot: nothing folded */
	unsigned folds;		/* chunks read back into huge folios */
	unsigned fold_misses;	/* chunks read back that stayed small */
	struct storage_copy *copy;	/* in: fill this copy (storage_copy_begin)
					 * with the range, rather than the page cache */
};

/* A cache with no limits (struct storage_limits all zero). */
struct file_cache *file_cache_new(void);
/* Frees the cache and every entry (callers close their handles first;
 * entries still referenced are freed too).  Takes NULL; returns NULL. */
struct file_cache *file_cache_free(struct file_cache *cache);

/*
 * Opens a handle on the file behind fd.  Always consumes fd: it becomes the
 * entry's descriptor, or is closed when an unchanged entry for the same
 * (st_dev, st_ino) is reused, or on error.
 *
 * fd must be readable: not O_PATH, access mode O_RDONLY or O_RDWR
 * (-EBADF otherwise).  Directories give -EISDIR.
 * An existing entry is reused only if its size, mtime and ctime are those of
 * fd now; otherwise it becomes stale (it lives on until its last handle
 * closes) and a new entry replaces it.
 *
 * With STORAGE_POLICY_MMAP, a file that cannot be mapped fails:
 * -ENODEV (not a regular file, or a pseudo file system), -EINVAL (empty),
 * -EFBIG (too large for the address space) or mmap's own errno.  When err is
 * not NULL, a one-line reason without the path is written to it.
 *
 * The budget (struct storage_limits) never makes an open fail:
 *  - a new entry past max_files first drops idle entries, least recently
 *    used first; when every entry is in use the open succeeds anyway, and
 *    the entry is freed at its last close instead of kept
 *    (files_over_budget);
 *  - a new mapping past max_mapped_bytes first drops idle mapped entries,
 *    least recently used first.  When it still does not fit because the
 *    mappings left have readers (or the file alone is larger than the
 *    budget), AUTO gets pread with STORAGE_REASON_OVER_BUDGET
 *    (budget_fallbacks), and nothing is dropped for it; STORAGE_POLICY_MMAP
 *    is honoured: the file is mapped past the budget (mapped_over_budget),
 *    after dropping what idle mappings it can.  A required mapping is the
 *    opener's explicit choice, and failing it would depend on what other
 *    clients hold at that moment.  The overrun lasts until readers close:
 *    each last close drops idle entries down to the budget again.
 */
int file_cache_open(struct file_cache *cache, hm_fd fd, enum storage_policy policy,
		    struct storage_handle *out, char *err, size_t errlen);

/* Drops the handle's reference.  An unchanged entry stays cached (and
 * mapped) after its last handle closes, as the most recently used idle
 * entry, unless that puts the cache over its limits: then the least
 * recently used idle entries go.  A stale entry is freed, and so is one
 * opened past max_files. */
void file_cache_close(struct file_cache *cache, struct storage_handle *h);

/*
 * A read is served one of two ways, both with the result below: on the
 * event loop with storage_read_nowait, or, when that would wait, on a
 * worker with storage_read_detached and then storage_read_finish on the
 * loop.  No read blocks the loop, so there is no third, waiting one.
 *
 * The result is pread(fd, dst, len, offset)'s on the handle's descriptor:
 * the number of bytes read (short only at end of file), 0 at or past EOF,
 * or a negative errno.  -EINVAL when offset or offset + len exceeds
 * INT64_MAX.  Loops over short preads until len bytes or EOF.
 * The mmap backend copies under the SIGBUS guard; bytes past the mapped
 * length (file extended) or a copy that faulted (file truncated) are read
 * with pread, and a fault marks the entry stale so new opens remap.
 * A fault writing dst (a mapping whose pages are gone: a client's region)
 * is GUARD_EFAULT_DST (guard.h), never retried: the caller blames dst.
 */

/*
 * On the loop: -EAGAIN at once when answering would wait for the disk (a
 * page not in the page cache, or a file type that may block), so that the
 * read goes to a worker.
 */
ssize_t storage_read_nowait(struct file_cache *cache, struct storage_handle *h,
			    void *dst, size_t len, uint64_t offset);

/*
 * The read itself, for worker threads: it touches nothing shared but the
 * file, and leaves its counts in io.  The caller holds a reference to the
 * entry (storage_handle_dup) for as long as it runs, and folds io in with
 * storage_read_finish on the cache's thread afterwards.
 */
ssize_t storage_read_detached(const struct storage_handle *h, void *dst, size_t len,
			      uint64_t offset, struct storage_io *io);
void storage_read_finish(struct file_cache *cache, struct storage_handle *h,
			 const struct storage_io *io);

/*
 * Brings [offset, offset + len) of the file into memory, for worker
 * threads (like storage_read_detached): for a mapped handle, the mapping's
 * page tables too (MADV_POPULATE_READ, or a guarded touch of each page on
 * older kernels), so that later copies take no fault; otherwise the page
 * cache.  With io->fold, first the chunks of the range that are in memory
 * in small folios are read back into huge ones (fplat_fold; each chunk at
 * most once per entry, and a chunk another worker is folding is waited
 * for, so that a warm that returns finds its range folded); with
 * io->fold_only, nothing else.  Returns the bytes of the range inside the
 * file, or -errno.  io counts no bytes (none is served): faults and folds.
 */
ssize_t storage_warm_detached(const struct storage_handle *h, uint64_t offset, uint64_t len,
			      struct storage_io *io);

/* Whether h's file may have huge folios (storage_warm_detached's fold):
 * mapped, a regular file of a chunk or more on a local file system. */
bool storage_foldable(const struct storage_handle *h);
/* Whether h's entry is still the cache's (not evicted, not replaced), or
 * a private one that a client's handle holds. */
bool storage_cached(const struct storage_handle *h);
/* Whether h's entry is one the cache keeps, within max-open-files (not
 * one made past it, which goes with its last handle). */
bool storage_kept(const struct storage_handle *h);
/* The name of h's file system for people ("ext4", "nfs", "fuse.sshfs";
 * "" for a file that is not regular), and in *network whether it is a
 * network file system by the list in file_platform_unix.c. */
const char *storage_fs_name(const struct storage_handle *h, bool *network);
/* On the loop thread: true when a job folding h's file should start now
 * (foldable, no job on it, not gone through yet), at *offset; it runs
 * until storage_fold_end says how far it got (a job whose client left
 * stops early: the next open's goes on from there).  So what of a file is
 * in memory is looked at once in all, however many clients open it.  A
 * file less than FOLD_HOT_PCT in memory when a job starts is not hot: it
 * is being read in, and folding behind the reader would read it twice;
 * the job ends (cold), and the next may start FOLD_COLD_RETRY_MS later. */
bool storage_fold_start(struct storage_handle *h, uint64_t *offset);
/* On the loop thread, when a warm of [offset, offset + len) is asked for:
 * the chunks of the range are looked at again by the next fold, and a
 * file whose folds stopped after misses in a row (chunks that a client
 * mapped while they were read back cannot become huge) is tried again. */
void storage_fold_renew(struct storage_handle *h, uint64_t offset, uint64_t len);
void storage_fold_end(struct storage_handle *h, uint64_t reached, bool cold);

/* Another reference to h's entry (a job that may outlive the handle);
 * drop it with file_cache_close.  It counts as a handle: the budget never
 * drops the entry (nor its mapping) while it lives; but the handles that
 * stat and listings report are the clients' only (a job in the
 * background, such as huge folios' at open, is nobody's open).  h must
 * be open. */
void storage_handle_dup(const struct storage_handle *h, struct storage_handle *out);

int storage_stat(struct storage_handle *h, struct storage_stat *st);

/* Asks the kernel to start reading [offset, offset + len) into the page
 * cache now (posix_fadvise WILLNEED), for a reader that is about to get
 * there.  Returns at once; 0 or a negative errno. */
int storage_willneed(struct storage_handle *h, uint64_t offset, uint64_t len);

void file_cache_counters(const struct file_cache *cache, struct storage_counters *out);
/* Zeroes the counters, keeping entries, mappings and mapped_bytes (state). */
void file_cache_reset_counters(struct file_cache *cache);

/*
 * Replaces the limits.  Lowered limits apply at once: idle entries are
 * dropped, least recently used first, until the cache fits (evictions_lru);
 * entries with handles stay, and go as their last handles close.  Open
 * handles keep the backend they were given.  The idle timeout applies at
 * the next file_cache_sweep.
 */
void file_cache_set_limits(struct file_cache *cache, const struct storage_limits *limits);

/* Milliseconds on CLOCK_MONOTONIC: the clock of file_cache_sweep's now_ms. */
uint64_t file_cache_clock_ms(void);

/*
 * Drops the idle entries (no handle) that have been idle for more than
 * limits.idle_unmap_ms at now_ms (file_cache_clock_ms()'s clock), counted
 * in evictions_idle; nothing when idle_unmap_ms is 0.  Meant for a timer
 * (say each second); costs one step per entry dropped, plus one.  Also
 * drops idle entries whose file was deleted that no inotify watch covers
 * (see file_cache_notice): an fstat each.
 */
void file_cache_sweep(struct file_cache *cache, uint64_t now_ms);

/*
 * An idle entry (no handle) is dropped as soon as its file is deleted or
 * replaced by rename (evictions_deleted): the cache watches idle entries
 * with inotify.  file_cache_watch_fd is the inotify descriptor to poll
 * for reading (-1: none; file_cache_sweep then checks each second);
 * file_cache_notice reads its events and drops those entries.  Never
 * blocks.
 */
int file_cache_watch_fd(const struct file_cache *cache);
void file_cache_notice(struct file_cache *cache);

/* What an eviction did. */
struct storage_evicted {
	unsigned files;			/* entries dropped */
	uint64_t mapped_bytes;		/* of mappings unmapped with them */
	unsigned busy;			/* matched but kept: a handle reads them */
};

/*
 * Drops cached entries that no handle reads: the one for (dev, ino), or
 * with all, every one.  A mapping with a reader is never unmapped under
 * it: such entries are counted busy and kept.  One that only the daemon's
 * own background work holds (huge folios at open, a warm at first cache:
 * jobs whose client closed the file) is dropped from the cache at once
 * and its work told to stop: it goes, with its mapping, when that work
 * notices (storage_cached), within a step.  Returns 0, or -ENOENT when
 * (dev, ino) is not cached.
 */
int file_cache_evict(struct file_cache *cache, bool all, uint64_t dev, uint64_t ino,
		     struct storage_evicted *out);
/* file_cache_evict of the cached entries whose file is named path (an
 * absolute path) now, or was when it was deleted: a file no name leads to
 * cannot be found by (dev, ino).  Costs a readlink per cached entry.
 * -ENOENT when none is. */
int file_cache_evict_path(struct file_cache *cache, const char *path,
			  struct storage_evicted *out);

/*
 * Direct reads (file_lease.c; the grants are daemon/service/direct.c's).  A read
 * lease (fcntl F_SETLEASE, F_RDLCK) on the entry's own descriptor: while
 * it holds, no process has the file open for writing, so its size and
 * bytes stay as they are; one that opens it for writing or truncates it
 * waits in the kernel until the lease is let go, and the lease holder is
 * sent signal sig.  storage_lease counts the grants sharing one lease:
 * 0; -EAGAIN when the file is open for writing somewhere; -EACCES when the
 * daemon neither owns the file nor has CAP_LEASE; -ENOLCK when the entry's
 * descriptor is not one the daemon opened itself (it could not reopen the
 * file: a client's open file description, whose lease signal and owner
 * the client sets, is never leased); -ENODEV for an entry that is not a
 * cached regular file on a local file system with a mapping.
 * storage_unlease drops one grant and lets the lease go with the last.
 * storage_lease_breaking: someone waits for the lease (revoke, then let
 * go).  storage_lease_fd: the descriptor number the lease is on, which
 * the lease signal names (si_fd), while h's entry is leased; else -1.
 */
int storage_lease(struct storage_handle *h, int sig);
/* Whether storage_lease could lease h's file, before the kernel is
 * asked: 0, -ENOLCK or -ENODEV as it says. */
int storage_leasable(const struct storage_handle *h);
void storage_unlease(struct storage_handle *h);
bool storage_lease_breaking(const struct storage_handle *h);
int storage_lease_fd(const struct storage_handle *h);

/* Who could write a file now: what the direct tier's lease rule
 * (policy_may_lease) looks at. */
struct storage_writers {
	uint32_t uid, gid;	/* the file's owner and group */
	uint32_t mode;		/* its st_mode */
	bool read_only;		/* on a read-only mount: nobody writes it */
	bool acl;		/* it has an access ACL: who may write is in
				 * its entries, not only in the mode's bits */
};
/* Fills w for h's file: 0, or -errno (-EOPNOTSUPP where the platform has
 * no lease). */
int storage_writers(const struct storage_handle *h, struct storage_writers *w);
/* A new read-only descriptor of h's file, an open file description of its
 * own (path-descriptors): the descriptor, or -errno. */
int storage_reopen(const struct storage_handle *h);
/* What a client reported reading through a grant on h, for listings. */
void storage_count_direct(struct storage_handle *h, uint64_t reads, uint64_t bytes);
/* A grant on h's file of `size` bytes ended, its client having reported
 * `reads` reads (bounded by the service): folds reads per 2 MiB block into
 * the file's moving average, each new grant half the weight; a grant that
 * read nothing is left out. */
void storage_note_block_reads(struct storage_handle *h, uint64_t reads, uint64_t size);
/* That average (the OPEN reply's block_reads), at most
 * STORAGE_BLOCK_READS_MAX; 0 when not known. */
uint32_t storage_block_reads(const struct storage_handle *h);
/* Its low mark (the OPEN reply's block_reads_low): the reads per block of
 * a grant that read less than the mark, climbing back half way to each
 * grant that read more; 0 when not known. */
uint32_t storage_block_reads_low(const struct storage_handle *h);
#define STORAGE_BLOCK_READS_MAX 65535u

/* How reads of a file were served, for listings: through the daemon (read
 * requests it took, storage_count_read), and of those clients reported
 * serving themselves (storage_count_direct_ways, as the service bounded
 * them; proto/direct.h) those copied out of the client's mapping and those
 * by pread(2) on its own descriptor, the probes among them, and the 2 MiB
 * blocks of the mapping populated and the time that took. */
struct storage_read_ways {
	uint64_t daemon;
	uint64_t copies, preads, probes, populated, populate_ns;
};
void storage_count_read(struct storage_handle *h);
void storage_count_direct_ways(struct storage_handle *h, const struct storage_read_ways *w);

/* One entry, for listings (hotmapctl files). */
struct storage_entry_info {
	char path[4096];		/* the file's name now (readlink of our fd) */
	uint64_t size;
	uint64_t mapped_length;		/* 0: no mapping */
	enum storage_reason last_reason;	/* of the last open */
	unsigned handles;
	bool cached;			/* found by the next open (not stale) */
	bool private_entry;		/* one handle's alone, read through its
					 * client's descriptor: never cached, and
					 * not stale either (FUSE, pseudo files) */
	char fs[32];			/* storage_fs_name */
	bool network;
	uint64_t hits;			/* opens that found it */
	uint64_t bytes;			/* bytes read from it */
	uint64_t idle_ms;		/* since the last open or read */
	int resident_pct;		/* pages in memory (mincore), -1 unknown */
	uint64_t resident_bytes;	/* bytes of those pages (at most size);
					 * 0 when resident_pct is -1 */
	unsigned direct_handles;	/* grants holding its read lease */
	uint64_t direct_reads;		/* reads clients reported serving */
	uint64_t direct_bytes;		/* themselves (storage_count_direct) */
	struct storage_read_ways ways;	/* how its reads were served */
	uint64_t dev, ino;		/* its identity: hotmapctl stat matches it */
	uint64_t copy_size;		/* a copy of it in memory (file_copy.c):
					 * its bytes; 0: none */
	uint64_t copy_age_ms;		/* since that copy was filled */
};

/*
 * Calls cb for the entries, cached or stale, then for each copy of a
 * network file that no entry lists (its file closed: path is its name
 * when copied, handles 0, not cached),
 * from the skip-th on, until it
 * returns false; returns how many entries there are in all.  Not for the
 * hot path: each entry described costs a readlink, an fstat and a
 * mincore over the file (entries skipped cost nothing).
 */
size_t file_cache_foreach(struct file_cache *cache, size_t skip,
			  bool (*cb)(const struct storage_entry_info *info, void *arg), void *arg);


/*
 * Copies of network files (file_copy.c).  A file on a network file
 * system by the list (NFS, CIFS, sshfs, ...; storage_fs_name's network)
 * that a warm reads whole is read into memory of the daemon's own (a
 * memfd; Linux only), which is then sealed against any change and given
 * to the clients that open the file, to map read-only: a copy cannot
 * fault, and nothing the server does reaches it.  Coherence is
 * close-to-open: each open compares the file's size, mtime and ctime
 * (fstat) with the copy's, and drops a copy whose file changed; a client
 * reads the version it was given until it closes.  network_copy_max
 * bounds the bytes of all copies, the least recently given out dropped
 * first; a file larger than it is not copied.
 *
 * storage_copy_begin, on the loop thread, when a warm of [offset, offset
 * + len) of h is submitted: the copy to fill (io->copy of its steps,
 * which call storage_copy_fill from storage_warm_detached), or NULL when
 * none is wanted (not such a file, not the whole file, a current copy or
 * one being filled, over the budget, off).  storage_copy_end, on the loop
 * thread when the warm is done: the copy kept (true) or freed.
 * storage_copy_get: for an open (or warm) of h, a new descriptor of the
 * current copy of its file, and what it is, or -ENOENT.
 */
struct storage_copy_info {
	uint64_t size;
	uint64_t age_ms;	/* since it was filled */
};
struct storage_copy *storage_copy_begin(struct file_cache *cache, struct storage_handle *h,
					uint64_t offset, uint64_t len, uint32_t uid);
ssize_t storage_copy_fill(const struct storage_handle *h, struct storage_copy *c,
			  uint64_t offset, uint64_t len);
bool storage_copy_end(struct file_cache *cache, const struct storage_handle *h,
		      struct storage_copy *c);
int storage_copy_get(struct file_cache *cache, const struct storage_handle *h,
		     struct storage_copy_info *info, uint32_t uid);

/*
 * Why h's file has no copy though one was filled for it, in words for
 * hm_stat ("not copied: ..."), or NULL: storage_copy_end refused it.
 * STORAGE_COPY_RACY: its mtime was within STORAGE_COPY_RACY_S seconds of
 * the fill's start (sshfs gives whole seconds, and its ctime is its
 * mtime: a same-size rewrite in that second would pass every check).
 * STORAGE_COPY_SLOW: the fill outlived network_copy_fill_ms.
 * STORAGE_COPY_HELD: copies given to the uid and dropped since, which its
 * processes may still map, would be past network_copy_max with this one.
 */
enum { STORAGE_COPY_WHY_NONE, STORAGE_COPY_RACY, STORAGE_COPY_SLOW, STORAGE_COPY_HELD };
#define STORAGE_COPY_RACY_S 2
const char *storage_copy_why(const struct storage_handle *h);

#endif
