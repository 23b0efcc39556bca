/* SPDX-License-Identifier: MIT */
/*
 * file_open.c - file_cache_open: from a client's descriptor to a handle.
 * It checks the descriptor, classifies the file system, picks the
 * backend the policy gives the file, reuses or makes the entry, fits a
 * new mapping to the budget and maps it, step by step (struct open_req).
 *
 * What it must not do: reopen anything but a regular file on a data file
 * system (that would read it with the daemon's credentials), share an
 * entry whose descriptor is a client's (its open file description is the
 * client's to change), or free an entry with a handle.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon/storage/backend.h"
#include "daemon/storage/storage_priv.h"
#include "daemon/storage/storage.h"

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
 * The backend a policy gives this file, before any mapping is tried.
 * MMAP here may still become PREAD (MMAP_FAILED) or an error when mmap(2)
 * itself fails.
 */
static int select_backend(enum storage_policy policy, const struct file_stat *st,
			  enum fs_class fs, uint32_t fs_type, bool network_fs_mmap,
			  enum storage_backend *backend, enum storage_reason *reason,
			  char *err, size_t errlen)
{
	bool too_large = false;

#if SIZE_MAX < INT64_MAX
	too_large = st->size > SIZE_MAX;
#endif

	switch (policy) {
	case STORAGE_POLICY_PREAD:
		*backend = STORAGE_BACKEND_PREAD;
		*reason = STORAGE_REASON_FORCED;
		return 0;

	case STORAGE_POLICY_MMAP:
		/* The opener insists: say why it cannot be done. */
		if (!S_ISREG(st->mode)) {
			set_err(err, errlen, "mmap required but the file is not a regular file");
			return -ENODEV;
		}
		if (fs == FS_PSEUDO) {
			set_err(err, errlen,
				"mmap required but the file is on a pseudo file system (f_type 0x%" PRIx32 ")",
				fs_type);
			return -ENODEV;
		}
		if (st->size == 0) {
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
		if (!S_ISREG(st->mode))
			*reason = STORAGE_REASON_NOT_REGULAR;
		else if (fs == FS_PSEUDO)
			*reason = STORAGE_REASON_PSEUDO_FS;
		else if (fs == FS_NETWORK && !network_fs_mmap)
			*reason = STORAGE_REASON_NETWORK_FS;
		else if (st->size == 0)
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

/* What file_cache_open has learnt so far, step by step. */
struct open_req {
	hm_fd fd;			/* the client's; the entry's or closed after open_take_entry */
	enum storage_policy policy;
	struct file_stat st;
	enum fs_class fs;
	uint32_t fs_type;
	bool fs_data;			/* a data file system (file_platform.h) */
	bool shared;			/* may be cached and read by other openers */
	bool own;			/* fd is a description the daemon opened */
	bool read_only;			/* fd is open for reading only */
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
 * reading (fplat_check_readable): it must not open (or reuse) an entry
 * otherwise.
 */
static int open_check_fd(struct open_req *o)
{
	int r;

	r = fplat_check_readable(o->fd, o->err, o->errlen);
	if (r < 0)
		return r;
	o->read_only = r == 1;
	r = fplat_stat(o->fd, &o->st);
	if (r < 0) {
		set_err(o->err, o->errlen, "fstat failed: %s", strerror(-r));
		return r;
	}
	if (S_ISDIR(o->st.mode)) {
		set_err(o->err, o->errlen, "is a directory");
		return -EISDIR;
	}
	return 0;
}

/* The cached entry of a regular file, if any, and its file system. */
static int open_find_entry(struct file_cache *cache, struct open_req *o)
{
	int r;

	if (S_ISREG(o->st.mode)) {
		o->e = file_cache_find(cache, &o->st.id);
		if (o->e != NULL) {
			o->fs = o->e->fs;	/* same st_dev, same file system */
			o->fs_type = o->e->fs_type;
			o->fs_data = o->e->fs_data;
		} else {
			r = fplat_fs(o->fd, &o->fs_type, &o->fs, &o->fs_data);
			if (r < 0) {
				set_err(o->err, o->errlen, "fstatfs failed: %s", strerror(-r));
				return r;
			}
		}
	}
	/* Not shared, not reopened: the client's descriptor is the entry's,
	 * and only this handle reads through it (see fplat_fs: a data file
	 * system, not a pseudo one). */
	o->shared = S_ISREG(o->st.mode) && o->fs != FS_PSEUDO && o->fs_data;
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
		 * has served its purpose (proving read access).  Closing a
		 * read-only descriptor of a file on a local file system
		 * waits for nothing; on NFS or CIFS (data file systems too,
		 * so shared) a close may wait for the server. */
		if (o->read_only && o->fs == FS_LOCAL)
			fplat_close_now(o->fd);
		else
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
	if (o->shared) {
		hm_fd own = fplat_reopen_private(o->fd, &o->st);

		/* Not reopened (the daemon's user may not read the file, or
		 * the client holds a lease on it): the descriptor is the
		 * client's, and so is its open file description, with its
		 * flags, owner and signal (F_SETFL, F_SETOWN, F_SETSIG).
		 * Other clients must not read through it, and the daemon
		 * must not lease it: its lease-break signal would go where
		 * the client says.  So the entry is this handle's alone. */
		o->own = own != o->fd;
		o->fd = own;
		if (!o->own)
			o->shared = false;
	}
	o->e = file_cache_entry_new(cache, o->fd, &o->st, o->fs, o->fs_type, o->fs_data);
	if (o->e == NULL) {
		set_err(o->err, o->errlen, "out of memory");
		safe_close(o->fd);
		return -ENOMEM;
	}
	o->e->own_fd = o->own;
	o->e->private_entry = !o->shared;
	if (S_ISREG(o->st.mode))
		o->e->fs_network = fplat_fs_name(o->fs_type, o->st.id.dev, o->e->fs_name,
						 sizeof o->e->fs_name);
	if (o->e->fs_network)
		o->e->mnt_id = fplat_mount_id(o->fd);	/* a copy is of this mount's file */
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
	if (file_cache_make_room_mapped(cache, o->st.size, o->policy == STORAGE_POLICY_MMAP))
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
		r = backend_get(o->backend)->attach(&e->file, o->st.size);
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

int file_cache_open(struct file_cache *cache, hm_fd fd, enum storage_policy policy,
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
	out->job = false;
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
