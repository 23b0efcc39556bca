/*
 * file_open.c - file_cache_open: from a client's descriptor to a handle.
 * It checks the descriptor, classifies the file system, picks the
 * backend the policy gives the file, reuses or makes the entry, fits a
 * new mapping to the budget and maps it, step by step (struct open_req).
 *
 * What it must not do: reopen anything but a regular file on a data file
 * system (that would read it with the daemon's credentials), or free an
 * entry with a handle.
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
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "backend.h"
#include "file_cache_priv.h"
#include "storage.h"

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
	if (o->e != NULL && !file_cache_entry_matches(o->e, &o->st)) {
		/* The file changed since the entry was made: its handles keep
		 * reading the inode as it is now; new opens get a new entry. */
		file_cache_entry_retire(cache, o->e);
		cache->ctr.stale_replaced++;
		o->e = NULL;
	}
	if (o->e != NULL) {
		/* The entry already has a descriptor for this file; this one
		 * has served its purpose (proving read access). */
		safe_close(o->fd);
		/* Off the idle list before anything below drops entries for
		 * the budget: it is about to get a handle. */
		file_cache_idle_remove(cache, o->e);
		cache->ctr.cache_hits++;
		o->e->hits++;
		return 0;
	}
	/* Past max_files with every entry in use, the open still
	 * succeeds: the descriptor is the client's to read. */
	if (o->shared && !file_cache_trim_files(cache, 1))
		o->over_files = true;
	if (o->shared)
		o->fd = reopen_private(o->fd, &o->st);
	o->e = file_cache_entry_new(cache, o->fd, &o->st, o->fs, o->fs_type);
	if (o->e == NULL) {
		set_err(o->err, o->errlen, "out of memory");
		safe_close(o->fd);
		return -ENOMEM;
	}
	if (o->shared) {
		o->e->unkept = o->over_files;	/* before cache_insert counts it */
		file_cache_insert(cache, o->e);
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
	if (file_cache_make_room_mapped(cache, (uint64_t)o->st.st_size, o->policy == STORAGE_POLICY_MMAP))
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
				file_cache_idle_push(cache, e);
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
	e->last_use_ns = monotime_ns();
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
