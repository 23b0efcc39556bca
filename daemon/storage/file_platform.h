/* SPDX-License-Identifier: MIT */
/*
 * file_platform.h - what the file cache asks of the operating system, so
 * that its rooms (file_*.c) carry no #ifdef: one implementation per
 * platform, daemon/storage/file_platform_unix.c (Linux: fstat, fstatfs, /proc,
 * mincore, inotify, leases) and daemon/storage/file_platform_win32.c (Windows:
 * GetFileInformationByHandleEx, volume characteristics,
 * GetFinalPathNameByHandleW, QueryWorkingSetEx; no watch, no lease).
 *
 * What it must not do: know about entries, handles or the budget; log.
 * Functions return 0 (or a count) on success and a negative errno on
 * failure, as the storage core does.
 *
 * Only the storage core includes it (through storage_priv.h).
 */
#ifndef HOTMAP_FILE_PLATFORM_H
#define HOTMAP_FILE_PLATFORM_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "daemon/base/platform.h"

/*
 * Largest offset a read may reach.  POSIX: the largest off_t, without
 * assuming its width (32-bit builds without large-file support have a
 * 32-bit off_t).  Windows: file offsets are 64-bit whatever mingw's off_t
 * is (32 bits unless _FILE_OFFSET_BITS=64).
 */
#ifdef _WIN32
#define FPLAT_OFF_MAX ((uint64_t)INT64_MAX)
/* File ids are 128 bits (ReFS uses all of them; NTFS the low 64). */
#define FPLAT_ID_WIDE 1
/* A view keeps other programs from shrinking the file
 * (ERROR_USER_MAPPED_FILE): an entry keeps its mapping only while a
 * handle holds it (docs/windows.md, section 5). */
#define FPLAT_KEEP_IDLE_MAPPINGS 0
#else
#define FPLAT_OFF_MAX ((uint64_t)(((uint64_t)1 << (sizeof(off_t) * CHAR_BIT - 1)) - 1))
#define FPLAT_ID_WIDE 0
#define FPLAT_KEEP_IDLE_MAPPINGS 1
#endif

/* A file's identity: what the cache is keyed by. */
struct file_id {
	uint64_t dev;		/* st_dev; Windows: the volume serial number */
	uint64_t ino;		/* st_ino; Windows: the low 64 bits of the file id */
	uint64_t ino_hi;	/* 0; Windows: the high 64 bits */
};

/* What fstat says, as far as the cache needs it. */
struct file_stat {
	struct file_id id;
	uint64_t size;		/* 0 when st_size is negative */
	int64_t mtime_ns;	/* saturated, never wraps */
	int64_t ctime_ns;	/* status change; Windows: ChangeTime */
	uint32_t mode;		/* st_mode; Windows: S_IFREG, S_IFDIR, S_IFIFO or
				 * S_IFCHR with 0444 */
	uint64_t nlink;		/* 0: deleted (Windows: delete pending too) */
};

enum fs_class {
	FS_LOCAL,
	FS_NETWORK,	/* mmap works but faults page by page over the wire */
	FS_PSEUDO,	/* st_size is not the length of the content */
};

/*
 * Whether fd proves read access: open for reading (not O_PATH nor
 * write-only; Windows: a disk file, pipe or device whose handle was
 * granted FILE_READ_DATA).  1 when it is open for reading only (POSIX),
 * 0 when it may also write, or -EBADF (or the failure's errno) with a
 * one-line reason in err.
 */
int fplat_check_readable(hm_fd fd, char *err, size_t errlen);
int fplat_stat(hm_fd fd, struct file_stat *st);

/*
 * The file system of a regular file: its type (statfs f_type; Windows:
 * a code of file_platform_win32.c, see there), its class, and whether it
 * is a data file system (the same bytes and the same access for every
 * opener: only then may an entry be shared or reopened).  -errno when
 * the file system cannot be asked.
 */
int fplat_fs(hm_fd fd, uint32_t *type, enum fs_class *fs, bool *data);

/*
 * The file system's name for people, into buf: "ext4", "nfs", or for
 * FUSE the mount's type with its subtype ("fuse.sshfs"; POSIX: from
 * /proc/self/mountinfo, by the file's device dev); "0x%x" of a type no
 * list knows.  True when it is a network file system by that list
 * (file_platform_unix.c keeps the one list, with why each is there).
 * Looks at the mounts: at a new entry's open, not per read.
 */
bool fplat_fs_name(uint32_t type, uint64_t dev, char *buf, size_t len);

/*
 * The mount fd's file is on, for binding a copy of a network file to it
 * (file_copy.c): Linux 6.8's unique mount id (statx STATX_MNT_ID_UNIQUE,
 * never reused while the system runs), else the older mount id (reused
 * after an unmount) with bit 63 set, so the two never compare equal; 0
 * when it cannot be told (Windows: the volume serial in the file id
 * stands for it).  statx without a sync: no question to a FUSE server.
 */
uint64_t fplat_mount_id(hm_fd fd);

/* A descriptor of the same file with an open file description of its
 * own, if the daemon may open one (see file_open.c); else fd.  Takes fd:
 * the one returned is the one to keep. */
hm_fd fplat_reopen_private(hm_fd fd, const struct file_stat *st);

/* A new read-only descriptor of the file (path-descriptors), or -errno;
 * -EOPNOTSUPP where the platform cannot pass one as an int. */
int fplat_reopen_fd(hm_fd fd);

/*
 * Closes a descriptor from a client, or one reading a client's file.
 * Its last close may block (a FUSE flush, NFS), so on POSIX it goes to
 * the closer thread (closer.h), never straight to close(2).
 */
void fplat_close(hm_fd fd);
/* Closes fd now, on the caller's thread: for a descriptor whose close
 * cannot wait (open for reading only, of a file on a local data file
 * system: a descriptor that wrote may flush on its last close). */
void fplat_close_now(hm_fd fd);

/* The file's name now, for listings (readlink of /proc/self/fd/N:
 * "PATH (deleted)" after a delete; Windows: GetFinalPathNameByHandleW in
 * UTF-8, with the \\?\ prefix dropped).  Length, or -errno. */
int fplat_path(hm_fd fd, char *buf, size_t len);

/* Whether path is absolute: "/..."; Windows: "C:\..." or "\\server\...". */
bool fplat_path_absolute(const char *path);
/* Whether the first n bytes of two names (fplat_path's, a client's) name
 * the same file: the same bytes; Windows: the same but for ASCII case
 * (NTFS names are case-insensitive by default). */
bool fplat_path_same(const char *a, const char *b, size_t n);

/*
 * Pages of the file in memory: of map (map_len bytes) when it is not
 * NULL, else of the file (size bytes) through a mapping made for the
 * question.  Percent, and the bytes on them in *bytes; -1 (and 0) when
 * it cannot be told.  Windows sees only the daemon's working set.
 */
int fplat_resident(hm_fd fd, const void *map, size_t map_len, uint64_t size, uint64_t *bytes);

/* Start reading [offset, offset + len) into memory now; 0 or -errno. */
int fplat_willneed(hm_fd fd, uint64_t offset, uint64_t len);

/* Fill the page tables of [addr, addr + len) of a mapping (a hint);
 * 0, or -errno when the caller should touch the pages itself. */
int fplat_populate(const void *addr, size_t len);

size_t fplat_page_size(void);

/*
 * Huge folios (hotmapd.conf(5) huge-folios).  A mapping of a file maps a
 * cached folio of FPLAT_FOLD_CHUNK bytes (2 MiB on x86-64) with one
 * page-table entry, and a smaller one with an entry per 4 KiB page; a
 * client that maps a hot file for direct reads builds its page tables in
 * a few hundred faults instead of a quarter of a million per GiB (on a
 * virtual machine with shadow page tables, each is an exit to the
 * hypervisor).  How the pages were read decides their folios: a file
 * written or read in 1 MiB calls is cached in 1 MiB folios.
 *
 * fplat_fold_chunk: that size for a file on a file system of type fs_type
 * (fplat_fs); 0 when it cannot have huge folios here (tmpfs has its own
 * huge= mount option, which hotmapd leaves to the administrator).
 * fplat_fold: looks at the chunk of fd at offset (a multiple of it, the
 * whole chunk within the file) through a mapping made for the question,
 * and if it is cached in smaller folios, drops it from the page cache
 * (POSIX_FADV_DONTNEED) and reads it back through a MADV_HUGEPAGE mapping,
 * which the kernel reads into one huge folio.  own is the caller's own
 * mapping of the chunk or NULL: its page-table entries are dropped first,
 * or the kernel would keep the pages.  The bytes are the file's all along
 * (clean pages are dropped, dirty ones kept); the chunk is only slower to
 * read while it is read back.  Nothing is touched through the mapping, so
 * a file cut short meanwhile is an error (-EFAULT), never a SIGBUS.
 * With cold_too (a warm: the chunk is to be read anyway), a chunk not
 * all in memory is read in the same way, its cached pages dropped first,
 * instead of being left alone.
 * Returns an enum fplat_fold, -ENOTSUP when the kernel cannot tell a huge
 * mapping (Linux before 6.7: PAGEMAP_SCAN), or -errno.
 */
enum fplat_fold {
	FPLAT_FOLD_COLD = 0,	/* not all in memory: left alone */
	FPLAT_FOLD_HUGE,	/* in one huge folio already */
	FPLAT_FOLD_DONE,	/* read back into one */
	FPLAT_FOLD_MISSED,	/* read back, still not one: another process
				 * maps its pages, they are dirty, or no
				 * huge page could be had */
};
size_t fplat_fold_chunk(uint32_t fs_type);
int fplat_fold(hm_fd fd, uint64_t offset, void *own, bool cold_too);
/*
 * Reads [offset, offset + len) of fd through, into nothing, with up to
 * FPLAT_READ_THREADS preads of FPLAT_READ_CHUNK bytes in flight at once
 * (threads of the call's own): what warms a file on a network file
 * system, where one reader keeps one readahead window in flight per round
 * trip (FUSE: 128 KiB, whatever POSIX_FADV_WILLNEED asks for).  A chunk
 * already in the page cache (mincore through a mapping made for the
 * question, no byte touched) is not read again.  Returns
 * when all are done: 0, or -ENOTSUP where the platform reads one at a
 * time (the caller does).  A failed pread ends its reader; it is a hint.
 */
#define FPLAT_READ_THREADS	8
#define FPLAT_READ_CHUNK	(1u << 20)
int fplat_read_through(hm_fd fd, uint64_t offset, uint64_t len);
/* The same into dst (len bytes, dst[0] being the file's byte at offset),
 * every chunk read whether in the page cache or not: 0 when every byte was
 * read, -EIO when a pread failed or came short (the file shrank), or
 * -ENOTSUP (Windows). */
int fplat_read_into(hm_fd fd, uint64_t offset, uint64_t len, void *dst);

/*
 * The memory of a copy of a network file (file_copy.c): new, size bytes
 * of a memfd (*fd) mapped writable (*map) to be filled; seal: the mapping
 * gone, the memfd sealed against writes, shrinking and growing, so that
 * no reader's mapping of it can fault or see it change; free; and a
 * descriptor of it to pass to a client.  0 or -errno; Windows: -ENOTSUP
 * (no copies there).
 */
int fplat_copy_new(uint64_t size, hm_fd *fd, void **map);
int fplat_copy_seal(hm_fd fd, void *map, uint64_t size);
void fplat_copy_free(hm_fd fd, void *map, uint64_t size);
int fplat_copy_dup(hm_fd fd);

/* Sleeps the calling thread ms milliseconds (a worker waiting for another). */
void fplat_sleep_ms(unsigned ms);

/*
 * Watches for deletion (POSIX: inotify IN_ATTRIB).  fplat_watch_new: the
 * descriptor to poll, or -1 when there is none (Windows: always; the sweep
 * then checks).  add: a watch id, or -1.  fplat_watch_read reads what is
 * pending without blocking and calls cb once per watch whose file's links
 * changed.
 */
int fplat_watch_new(void);
void fplat_watch_free(int w);
int fplat_watch_add(int w, hm_fd fd);
void fplat_watch_rm(int w, int wd);
void fplat_watch_read(int w, void (*cb)(int wd, void *arg), void *arg);
/* A watch on a dropped copy's memfd (file_copy.c): fplat_watch_read calls
 * cb with its id once nobody holds it (no descriptor, no mapping: POSIX,
 * IN_DELETE_SELF); -1 when it cannot be watched (Windows: always). */
int fplat_copy_watch(int w, hm_fd fd);

/*
 * Read leases (direct reads; POSIX: F_SETLEASE F_RDLCK, the breaking
 * holder gets signal sig).  fplat_lease: 0, -EAGAIN (open for writing
 * somewhere), -errno; Windows: -EOPNOTSUPP (no direct tier there).
 * fplat_lease_held: the lease is held and no one waits for it.
 */
int fplat_lease(hm_fd fd, int sig);
void fplat_unlease(hm_fd fd);
bool fplat_lease_held(hm_fd fd);
/* The number the lease signal names fd by (si_fd); -1 without leases. */
int fplat_lease_id(hm_fd fd);
/* Who could write fd's file (storage.h): 0 or -errno. */
struct storage_writers;
int fplat_writers(hm_fd fd, struct storage_writers *w);

#endif
