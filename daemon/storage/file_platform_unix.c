/* SPDX-License-Identifier: MIT */
/*
 * file_platform_unix.c - file_platform.h on Linux: fstat, fstatfs and its
 * magic numbers, /proc/self/fd, mincore, posix_fadvise,
 * MADV_POPULATE_READ, huge folios (PAGEMAP_SCAN), inotify and read leases.
 *
 * What it must not do: reopen anything by itself (file_open.c decides);
 * close a descriptor on the caller's thread (closer.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1	/* O_PATH, F_SETLEASE, st_mtim; config.h defines it under autotools */
#endif

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "daemon/base/closer.h"
#include "daemon/storage/file_platform.h"
#include "proto/pagemap.h"
#include "daemon/storage/storage.h"

static void set_err(char *err, size_t errlen, const char *msg)
{
	if (err != NULL && errlen > 0)
		(void)snprintf(err, errlen, "%s", msg);
}

/* --- file system classification ------------------------------------- */

/*
 * The one list of the file systems hotmapd tells apart (statfs f_type),
 * with how each is read.  class: FS_NETWORK is never mapped by AUTO (a
 * fault is a round trip to a server, and a server may change the file
 * under the mapping without the kernel knowing: reads go with pread, in
 * the client's own process where it can, libhotmap(3) "Network file
 * systems"); FS_PSEUDO's st_size is not the length of the content; the
 * rest is local.  data: files read the same, and admit the same readers,
 * whoever opened them: only then may an entry be reopened with the
 * daemon's credentials (fplat_reopen_private) or shared between clients.
 * An allowlist: a file system this list does not know is local but not
 * data, so it costs a shared entry, never a leak.
 */
struct fs_kind {
	uint32_t magic;
	const char *name;	/* as /proc/mounts spells it */
	enum fs_class cls;
	bool data;
};

static const struct fs_kind fs_kinds[] = {
	/* Network: a server holds the file; the server checks access (the
	 * client's descriptor proved it) and the content is the same for
	 * every reader, so entries may be shared (data). */
	{ 0x6969, "nfs", FS_NETWORK, true },		/* NFS v2-v4 */
	{ 0x517B, "smb", FS_NETWORK, true },		/* old smbfs */
	{ 0xFF534D42, "cifs", FS_NETWORK, true },	/* CIFS */
	{ 0xFE534D42, "smb3", FS_NETWORK, true },	/* SMB2/3 (cifs.ko) */
	{ 0x01021997, "9p", FS_NETWORK, true },		/* 9P: virtio shares, WSL */
	{ 0x0BD00BD0, "lustre", FS_NETWORK, true },	/* Lustre */
	{ 0x00C36400, "ceph", FS_NETWORK, true },	/* CephFS, kernel client */
	{ 0x5346414F, "afs", FS_NETWORK, true },	/* OpenAFS */
	{ 0x6B414653, "afs", FS_NETWORK, true },	/* kAFS */
	{ 0x01161970, "gfs2", FS_NETWORK, true },	/* cluster: other nodes write */
	{ 0x7461636f, "ocfs2", FS_NETWORK, true },	/* cluster: other nodes write */
	{ 0x73757245, "coda", FS_NETWORK, true },	/* Coda */
	{ 0x564c, "ncpfs", FS_NETWORK, true },		/* NetWare */
	/* FUSE: a server in user space, which sees who opened the file
	 * (not data: read through the client's descriptor, privately).
	 * Read as a network file system whatever its subtype: a fault on a
	 * mapping is a request to that server.  fplat_fs_name tells the
	 * network ones (fuse_network) from the others by the subtype. */
	{ 0x65735546, "fuse", FS_NETWORK, false },
	/* Pseudo: generated content, st_size says nothing. */
	{ 0x9fa0, "proc", FS_PSEUDO, false },		/* kallsyms differ by opener */
	{ 0x62656572, "sysfs", FS_PSEUDO, false },
	{ 0x64626720, "debugfs", FS_PSEUDO, false },
	{ 0x74726163, "tracefs", FS_PSEUDO, false },
	{ 0x27e0eb, "cgroup", FS_PSEUDO, false },
	{ 0x63677270, "cgroup2", FS_PSEUDO, false },
	{ 0x73636673, "securityfs", FS_PSEUDO, false },
	{ 0x62656570, "configfs", FS_PSEUDO, false },
	{ 0xcafe4a11, "bpf", FS_PSEUDO, false },
	{ 0xde5e81e4, "efivarfs", FS_PSEUDO, false },
	{ 0x6165676C, "pstore", FS_PSEUDO, false },
	/* Local data file systems: mapped. */
	{ 0xEF53, "ext4", FS_LOCAL, true },		/* ext2, ext3, ext4 */
	{ 0x58465342, "xfs", FS_LOCAL, true },
	{ 0x9123683E, "btrfs", FS_LOCAL, true },
	{ 0x01021994, "tmpfs", FS_LOCAL, true },
	{ 0x858458f6, "ramfs", FS_LOCAL, true },
	{ 0x958458f6, "hugetlbfs", FS_LOCAL, true },
	{ 0xF2F52010, "f2fs", FS_LOCAL, true },
	{ 0x2FC12FC1, "zfs", FS_LOCAL, true },
	{ 0xCA451A4E, "bcachefs", FS_LOCAL, true },
	{ 0x794c7630, "overlay", FS_LOCAL, true },
	{ 0x73717368, "squashfs", FS_LOCAL, true },
	{ 0xE0F5E1E2, "erofs", FS_LOCAL, true },
	{ 0x9660, "iso9660", FS_LOCAL, true },
	{ 0x15013346, "udf", FS_LOCAL, true },
	{ 0x4d44, "vfat", FS_LOCAL, true },
	{ 0x2011BAB0, "exfat", FS_LOCAL, true },
	{ 0x5346544e, "ntfs", FS_LOCAL, true },		/* ntfs-3g is FUSE */
	{ 0x7366746e, "ntfs3", FS_LOCAL, true },
	{ 0x3153464a, "jfs", FS_LOCAL, true },
	{ 0x52654973, "reiserfs", FS_LOCAL, true },
	{ 0x3434, "nilfs2", FS_LOCAL, true },
};

/*
 * FUSE file systems that are clients of a server over the network, by
 * the subtype the mount carries (/proc/self/mountinfo "fuse.SUBTYPE"):
 * what hm_stat calls a network file system.  Every FUSE file is read
 * with pread either way; this only names it right.
 */
static const char *const fuse_network[] = {
	"sshfs",		/* SFTP over ssh */
	"rclone",		/* cloud storage, S3, WebDAV, SFTP, ... */
	"s3fs",			/* S3 */
	"goofys",		/* S3 */
	"mountpoint-s3",	/* S3 */
	"gcsfuse",		/* Google Cloud Storage */
	"blobfuse", "blobfuse2",	/* Azure blobs */
	"glusterfs",		/* GlusterFS native client */
	"ceph-fuse",		/* CephFS in user space */
	"juicefs",		/* metadata server and object storage */
	"seaweedfs",		/* SeaweedFS */
	"mfs",			/* MooseFS, LizardFS */
	"cvmfs2",		/* CernVM-FS over HTTP */
	"curlftpfs",		/* FTP */
	"httpfs2",		/* HTTP */
	"smbnetfs",		/* SMB in user space */
	"davfs",		/* WebDAV (davfs2) */
	"gvfsd-fuse",		/* GNOME's remote mounts */
	"alluxio-fuse",		/* Alluxio */
};

static const struct fs_kind *fs_kind_of(uint32_t f_type)
{
	size_t i;

	for (i = 0; i < sizeof fs_kinds / sizeof fs_kinds[0]; i++)
		if (fs_kinds[i].magic == f_type)
			return &fs_kinds[i];
	return NULL;
}

int fplat_fs(hm_fd fd, uint32_t *type, enum fs_class *fs, bool *data)
{
	const struct fs_kind *k;
	struct statfs sfs;

	if (fstatfs(fd, &sfs) < 0)
		return -errno;
	*type = (uint32_t)sfs.f_type;
	k = fs_kind_of(*type);
	*fs = k != NULL ? k->cls : FS_LOCAL;
	*data = k != NULL && k->data;
	return 0;
}

/*
 * The mount type of the FUSE mount with device dev ("fuse.sshfs"), from
 * /proc/self/mountinfo (a line: id parent MAJOR:MINOR root point options
 * [tags] - TYPE source options).  The daemon sees its own mount
 * namespace: a mount it cannot see is called "fuse".  Only at a new
 * entry's open, never per read.
 */
static void fuse_mount_type(uint64_t dev, char *buf, size_t len)
{
	char line[4096], want[32];
	FILE *mi;

	snprintf(buf, len, "fuse");
	snprintf(want, sizeof want, " %u:%u ", major((dev_t)dev), minor((dev_t)dev));
	mi = fopen("/proc/self/mountinfo", "re");
	if (mi == NULL)
		return;
	while (fgets(line, sizeof line, mi) != NULL) {
		char *dash, *type, *end;

		if (strstr(line, want) == NULL || (dash = strstr(line, " - ")) == NULL)
			continue;
		type = dash + 3;
		end = strchr(type, ' ');
		if (end == NULL || strncmp(type, "fuse", 4) != 0)
			continue;
		*end = '\0';
		snprintf(buf, len, "%s", type);
		break;
	}
	fclose(mi);
}

bool fplat_fs_name(uint32_t type, uint64_t dev, char *buf, size_t len)
{
	const struct fs_kind *k = fs_kind_of(type);
	size_t i;

	if (k == NULL) {
		snprintf(buf, len, "0x%" PRIx32, type);
		return false;
	}
	if (k->magic != 0x65735546) {
		snprintf(buf, len, "%s", k->name);
		return k->cls == FS_NETWORK;
	}
	fuse_mount_type(dev, buf, len);
	if (strncmp(buf, "fuse.", 5) != 0)
		return false;
	for (i = 0; i < sizeof fuse_network / sizeof fuse_network[0]; i++)
		if (strcmp(buf + 5, fuse_network[i]) == 0)
			return true;
	return false;
}

/* --- descriptors ------------------------------------------------------ */

/*
 * A passed descriptor proves read access only if it was opened for
 * reading: O_PATH and write-only descriptors can be had without read
 * permission, and must not open (or reuse) an entry.
 */
int fplat_check_readable(hm_fd fd, char *err, size_t errlen)
{
	int fl, r;

	fl = fcntl(fd, F_GETFL);
	if (fl < 0) {
		r = -errno;
		set_err(err, errlen, "not a valid descriptor");
		return r;
	}
	if (fl & O_PATH) {
		set_err(err, errlen, "descriptor opened with O_PATH cannot be read");
		return -EBADF;
	}
	if ((fl & O_ACCMODE) != O_RDONLY && (fl & O_ACCMODE) != O_RDWR) {
		set_err(err, errlen, "descriptor is not open for reading");
		return -EBADF;
	}
	return (fl & O_ACCMODE) == O_RDONLY ? 1 : 0;
}

static int64_t timespec_to_ns(const struct timespec *ts)
{
	int64_t ns;

	/* mtime is set by users (utimensat): saturate instead of wrapping. */
	if (__builtin_mul_overflow((int64_t)ts->tv_sec, (int64_t)1000000000, &ns))
		return ts->tv_sec < 0 ? INT64_MIN : INT64_MAX;
	if (__builtin_add_overflow(ns, (int64_t)ts->tv_nsec, &ns))
		return INT64_MAX;
	return ns;
}

int fplat_stat(hm_fd fd, struct file_stat *out)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	*out = (struct file_stat){
		.id = { .dev = (uint64_t)st.st_dev, .ino = (uint64_t)st.st_ino, .ino_hi = 0 },
		.size = st.st_size < 0 ? 0 : (uint64_t)st.st_size,
		.mtime_ns = timespec_to_ns(&st.st_mtim),
		.ctime_ns = timespec_to_ns(&st.st_ctim),
		.mode = (uint32_t)st.st_mode,
		.nlink = (uint64_t)st.st_nlink,
	};
	return 0;
}

#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x00004000U	/* Linux 6.8; older headers lack it */
#endif

uint64_t fplat_mount_id(hm_fd fd)
{
	struct statx sx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC,
		  STATX_MNT_ID | STATX_MNT_ID_UNIQUE, &sx) < 0)
		return 0;
	if (sx.stx_mask & STATX_MNT_ID_UNIQUE)
		return sx.stx_mnt_id & ~(UINT64_C(1) << 63);
	if (sx.stx_mask & STATX_MNT_ID)
		return sx.stx_mnt_id | (UINT64_C(1) << 63);
	return 0;
}

void fplat_close(hm_fd fd)
{
	closer_close(fd);
}

void fplat_close_now(hm_fd fd)
{
	closer_close_now(fd);
}

/*
 * A passed descriptor shares its open file description with the client,
 * which may change its flags at any time under every reader of the entry
 * (O_DIRECT would make the daemon's preads fail for all of them).  So the
 * entry reads through a description of its own when the daemon may open
 * the file itself: through /proc/self/fd, which reaches the same inode
 * whatever its name is now.  When it may not (permissions, no /proc), the
 * client's descriptor serves, and that limit is documented
 * (docs/security.md).
 */
hm_fd fplat_reopen_private(hm_fd fd, const struct file_stat *st)
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
	if (fstat(nfd, &st2) < 0 || (uint64_t)st2.st_dev != st->id.dev ||
	    (uint64_t)st2.st_ino != st->id.ino) {
		fplat_close(nfd);
		return fd;
	}
	fplat_close(fd);
	return nfd;
}

int fplat_reopen_fd(hm_fd fd)
{
	char link[64];
	int nfd;

	/* through /proc: the same file even when renamed or deleted */
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	nfd = open(link, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	return nfd < 0 ? -errno : nfd;
}

int fplat_path(hm_fd fd, char *buf, size_t len)
{
	char link[64];
	ssize_t n;

	if (len == 0)
		return -EINVAL;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	n = readlink(link, buf, len - 1);
	if (n < 0) {
		buf[0] = '\0';
		return -errno;
	}
	buf[n] = '\0';
	return (int)n;
}

bool fplat_path_absolute(const char *path)
{
	return path[0] == '/';
}

bool fplat_path_same(const char *a, const char *b, size_t n)
{
	return strncmp(a, b, n) == 0;
}

/* --- memory ----------------------------------------------------------- */

size_t fplat_page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

int fplat_resident(hm_fd fd, const void *map_in, size_t map_len, uint64_t size, uint64_t *bytes)
{
	size_t page = fplat_page_size(), len, n, i, k, chunk, in = 0;
	unsigned char vec[1024];	/* pages per mincore call: bounded memory */
	void *map = (void *)map_in;
	bool own = false;
	int rc = 0;

	*bytes = 0;
	if (size == 0)
		return 100;
	if (map != NULL) {
		len = map_len;
	} else {
		if (size > SIZE_MAX)
			return -1;
		len = (size_t)size;
		map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED)
			return -1;
		own = true;
	}
	n = (len + page - 1) / page;
	for (i = 0; i < n && rc == 0; i += chunk) {
		chunk = n - i < sizeof vec ? n - i : sizeof vec;
		rc = mincore((char *)map + i * page, chunk * page, vec);
		for (k = 0; rc == 0 && k < chunk; k++)
			in += vec[k] & 1;
	}
	if (own)
		munmap(map, len);
	if (rc != 0 || n == 0)
		return -1;
	/* Whole pages, but the last one may hold less of the file (and the
	 * mapping may be longer than a file that has shrunk since). */
	*bytes = (uint64_t)in * page;
	if (*bytes > len)
		*bytes = len;
	if (*bytes > size)
		*bytes = size;
	return (int)(in * 100 / n);
}

int fplat_willneed(hm_fd fd, uint64_t offset, uint64_t len)
{
	/* posix_fadvise returns the error number rather than setting errno */
	return -posix_fadvise(fd, (off_t)offset, (off_t)len, POSIX_FADV_WILLNEED);
}

int fplat_populate(const void *addr, size_t len)
{
	uintptr_t page = (uintptr_t)fplat_page_size();
	uintptr_t start = (uintptr_t)addr & ~(page - 1);

	if (madvise((void *)start, (uintptr_t)addr + len - start, MADV_POPULATE_READ) < 0)
		return -errno;
	return 0;
}

/* --- huge folios ----------------------------------------------------- */

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22	/* Linux 5.14 */
#endif

static pthread_once_t fold_once = PTHREAD_ONCE_INIT;
static size_t fold_chunk;
static int pagemap_fd = -1;

static void fold_init(void)
{
	unsigned long long v = 0;
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "re");

	if (f != NULL) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	/* a power of two, and a whole number of pages */
	if (v == 0 || (v & (v - 1)) != 0 || v % fplat_page_size() != 0 || v > (1ull << 30))
		return;
	pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (pagemap_fd >= 0)
		fold_chunk = (size_t)v;
}

size_t fplat_fold_chunk(uint32_t fs_type)
{
	pthread_once(&fold_once, fold_init);
	if (fs_type == 0x01021994u || fs_type == 0x858458f6u || fs_type == 0x958458f6u)
		return 0;	/* tmpfs, ramfs, hugetlbfs: memory, not a page cache */
	return fold_chunk;
}

/* A read-only shared mapping of the chunk at an address aligned to it
 * (only there can one entry map it), populated: the pages' folios decide
 * how.  NULL and errno. */
static void *fold_map(int fd, uint64_t offset, size_t len)
{
	uint8_t *area, *at;
	uintptr_t a;
	int err;

	area = mmap(NULL, 2 * len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED)
		return NULL;
	a = ((uintptr_t)area + len - 1) & ~((uintptr_t)len - 1);
	at = (uint8_t *)a;
	if (mmap(at, len, PROT_READ, MAP_SHARED | MAP_FIXED, fd, (off_t)offset) == MAP_FAILED) {
		err = errno;
		munmap(area, 2 * len);
		errno = err;
		return NULL;
	}
	if (at > area)
		munmap(area, (size_t)(at - area));
	if (at + len < area + 2 * len)
		munmap(at + len, (size_t)(area + 2 * len - (at + len)));
	return at;
}

/* Maps the chunk anew and populates it with MADV_HUGEPAGE: pages not in
 * memory are read into a huge folio.  1 huge, 0 not, -errno. */
static int fold_read(int fd, uint64_t offset, size_t len, bool cached_only)
{
	unsigned char vec[1024];
	size_t npages = len / fplat_page_size(), i;
	uint8_t *w = fold_map(fd, offset, len);
	int rc = 0;

	if (w == NULL)
		return -errno;
	if (cached_only) {
		/* a chunk not wholly in memory is not hot: reading it in
		 * would be a warm, which no one asked for */
		if (npages > sizeof vec || mincore(w, len, vec) < 0) {
			rc = npages > sizeof vec ? -ENOTSUP : -errno;
			goto out;
		}
		for (i = 0; i < npages; i++)
			if (!(vec[i] & 1))
				goto out;	/* 0: cold */
	}
	if (madvise(w, len, MADV_HUGEPAGE) < 0 || madvise(w, len, MADV_POPULATE_READ) < 0) {
		rc = errno == EINVAL ? -ENOTSUP : -errno;
		goto out;
	}
	rc = pagemap_all_huge(pagemap_fd, w, len);
	if (rc == 0 && cached_only)
		rc = 2;	/* cached, not huge */
out:
	munmap(w, len);
	return rc;
}

void fplat_sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int fplat_fold(hm_fd fd, uint64_t offset, void *own, bool cold_too)
{
	size_t len = fplat_fold_chunk(0);
	int rc;

	if (len == 0)
		return -ENOTSUP;
	if (offset % len != 0)
		return -EINVAL;
	rc = fold_read(fd, offset, len, true);
	if (rc < 0)
		return rc;
	if (rc == 0 && !cold_too)
		return FPLAT_FOLD_COLD;
	if (rc == 1)
		return FPLAT_FOLD_HUGE;
	/* Cached in small folios (or in part, for a warm).  The pages go
	 * only if nothing maps them and they are clean: our own mapping's
	 * entries first (the next copy out of it faults them back), and what
	 * is dirty written back now, as the kernel would within
	 * dirty_expire_centisecs (a file just written is the usual hot
	 * file). */
	if (own != NULL)
		(void)madvise(own, len, MADV_DONTNEED);
	(void)sync_file_range(fd, (off_t)offset, (off_t)len, SYNC_FILE_RANGE_WAIT_BEFORE |
			      SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
	rc = posix_fadvise(fd, (off_t)offset, (off_t)len, POSIX_FADV_DONTNEED);
	if (rc != 0)
		return -rc;
	rc = fold_read(fd, offset, len, false);
	if (rc < 0)
		return rc;
	return rc == 1 ? FPLAT_FOLD_DONE : FPLAT_FOLD_MISSED;
}

/* --- inotify ---------------------------------------------------------- */

int fplat_watch_new(void)
{
	return inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
}

void fplat_watch_free(int w)
{
	fplat_close(w);
}

/* A watch of what descriptor fd is open on (not of a path a rename could
 * move), for the events in mask. */
static int
watch_fd(int w, hm_fd fd, uint32_t mask)
{
	char path[64];

	if (w < 0)
		return -1;
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	return inotify_add_watch(w, path, mask);
}

int fplat_watch_add(int w, hm_fd fd)
{
	return watch_fd(w, fd, IN_ATTRIB);
}

int fplat_copy_watch(int w, hm_fd fd)
{
	return watch_fd(w, fd, IN_DELETE_SELF);
}

void fplat_watch_rm(int w, int wd)
{
	(void)inotify_rm_watch(w, wd);
}

void fplat_watch_read(int w, void (*cb)(int wd, void *arg), void *arg)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	if (w < 0)
		return;
	while ((n = read(w, buf, sizeof buf)) > 0) {
		const char *p = buf;

		while (p < buf + n) {
			const struct inotify_event *ev = (const struct inotify_event *)(const void *)p;

			if (ev->mask & (IN_ATTRIB | IN_DELETE_SELF))
				cb(ev->wd, arg);
			p += sizeof *ev + ev->len;
		}
	}
}

/* --- leases ------------------------------------------------------------ */

int fplat_lease(hm_fd fd, int sig)
{
	if (fcntl(fd, F_SETSIG, sig) < 0)
		return -errno;
	if (fcntl(fd, F_SETLEASE, F_RDLCK) < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return 0;
}

void fplat_unlease(hm_fd fd)
{
	(void)fcntl(fd, F_SETLEASE, F_UNLCK);
}

bool fplat_lease_held(hm_fd fd)
{
	/* during a break, F_GETLEASE answers the type it is breaking to */
	return fcntl(fd, F_GETLEASE) == F_RDLCK;
}

int fplat_lease_id(hm_fd fd)
{
	return fd;
}

int fplat_writers(hm_fd fd, struct storage_writers *w)
{
	struct statvfs vfs;
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) < 0 || fstatvfs(fd, &vfs) < 0)
		return -errno;
	w->uid = (uint32_t)st.st_uid;
	w->gid = (uint32_t)st.st_gid;
	w->mode = (uint32_t)st.st_mode;
	w->read_only = (vfs.f_flag & ST_RDONLY) != 0;
	/* A file system without ACLs answers ENOTSUP or ENODATA: none.  An
	 * error that says nothing counts as one (the stricter reading). */
	n = fgetxattr(fd, "system.posix_acl_access", NULL, 0);
	w->acl = n > 0 || (n < 0 && errno != ENODATA && errno != ENOTSUP && errno != EOPNOTSUPP);
	return 0;
}
