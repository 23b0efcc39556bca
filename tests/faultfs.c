/* SPDX-License-Identifier: MIT */
/*
 * faultfs.c - a tiny FUSE file system for the fault tests (test_faults.c):
 * it serves a few read-only files of harness_fill content and, on command,
 * fails reads of chosen ranges with EIO or reports a file shorter (or
 * longer) than it was, the way a failing disk or a truncating writer would.
 *
 *   faultfs MOUNTPOINT CONTROL_SOCKET NAME:SIZE:SEED...
 *
 * With FAULTFS_SUBTYPE=NAME in the environment the mount's type is
 * fuse.NAME (default fuse.faultfs): test_netfs.c mounts it as sshfs.
 *
 * It mounts, then listens on CONTROL_SOCKET (a Unix stream socket; the
 * test connects once it exists) for commands, one a line, each answered
 * with one line, "ok ..." or "error ...":
 *
 *   eio NAME OFFSET LENGTH   reads overlapping the range fail with EIO
 *   size NAME SIZE           the file's size is now SIZE (content past the
 *                            old end is the same function of the offset)
 *   seed NAME SEED           the file's content is now that of SEED (as
 *                            if rewritten in place: the mtime moves)
 *   touch NAME               the file's mtime and ctime are now (whole
 *                            seconds, as sshfs gives them), content the same
 *   hang NAME                reads of NAME get no answer (the loop serves
 *                            the rest) until restore NAME answers them
 *   restore NAME             no bad range, no hang, the original size
 *   count NAME               "ok reads=R eios=E": requests served and failed
 *   ping                     "ok"
 *
 * A change is answered only once the kernel has dropped what it cached of
 * the file (attributes and pages, mapped ones too), so the next read of it
 * anywhere, a pread or a fault on a mapping, reaches us and sees the change.
 *
 * Threads: the FUSE session loop is single-threaded.  The control socket
 * has a thread of its own, because the kernel's invalidation waits for
 * reads in flight (readahead the daemon asked for), and those need the
 * loop to answer them: invalidating from the loop could deadlock.
 *
 * It exits 0 when unmounted (fusermount3 -u, umount) or at SIGTERM.
 * What it must not do: write anything, or serve anything but its files.
 */
#define FUSE_USE_VERSION 31

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "tests/content.h"

#define FAULTFS_MAX_FILES	8
#define FAULTFS_MAX_RANGES	16
#define FAULTFS_NAME_MAX	64
/* A fixed modification time: only a change of size moves it. */
#define FAULTFS_MTIME		1700000000

struct faultfs_range {
	uint64_t offset, length;
};

struct faultfs_file {
	char name[FAULTFS_NAME_MAX];
	fuse_ino_t ino;
	uint64_t seed;
	uint64_t size0;		/* the size given on the command line */
	uint64_t size;		/* the size reported now */
	unsigned generation;	/* changes of size or content: the mtime moves */
	int64_t mtime;		/* "touch": this mtime (and ctime) from now on; 0 none */
	bool hang;		/* "hang": reads wait, unanswered, until "restore" */
	struct faultfs_range bad[FAULTFS_MAX_RANGES];
	unsigned nbad;
	uint64_t reads, eios;
};

/* Reads held by "hang", answered at "restore". */
struct faultfs_pending {
	fuse_req_t req;
	struct faultfs_file *f;
	uint64_t offset;
	size_t size;
};
#define FAULTFS_MAX_PENDING	64

static struct faultfs_pending pending[FAULTFS_MAX_PENDING];
static unsigned npending;
static struct faultfs_file files[FAULTFS_MAX_FILES];
static unsigned nfiles;
/* Between the loop's handlers and the control thread. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct fuse_session *session;

/* --- the file system ------------------------------------------------------ */

static struct faultfs_file *
file_by_ino(fuse_ino_t ino)
{
	if (ino < 2 || ino - 2 >= nfiles)
		return NULL;
	return &files[ino - 2];
}

static struct faultfs_file *
file_by_name(const char *name)
{
	unsigned i;

	for (i = 0; i < nfiles; i++)
		if (strcmp(files[i].name, name) == 0)
			return &files[i];
	return NULL;
}

static void
file_attr(fuse_ino_t ino, struct stat *st)
{
	struct faultfs_file *f = file_by_ino(ino);

	memset(st, 0, sizeof *st);
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_blksize = 4096;
	if (f == NULL) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
		st->st_mtime = st->st_ctime = FAULTFS_MTIME;
		return;
	}
	pthread_mutex_lock(&lock);
	st->st_mode = S_IFREG | 0444;
	st->st_nlink = 1;
	st->st_size = (off_t)f->size;
	st->st_blocks = (blkcnt_t)((f->size + 511) / 512);
	st->st_mtime = st->st_ctime = f->mtime != 0 ? (time_t)f->mtime :
				      FAULTFS_MTIME + f->generation;
	pthread_mutex_unlock(&lock);
}

static void
faultfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e = { 0 };
	struct faultfs_file *f = parent == FUSE_ROOT_ID ? file_by_name(name) : NULL;

	if (f == NULL) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	e.ino = f->ino;
	e.entry_timeout = 3600.0;
	e.attr_timeout = 0.0;	/* every fstat asks: the size may change */
	file_attr(f->ino, &e.attr);
	fuse_reply_entry(req, &e);
}

static void
faultfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (ino != FUSE_ROOT_ID && file_by_ino(ino) == NULL) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	file_attr(ino, &st);
	fuse_reply_attr(req, &st, 0.0);
}

static void
faultfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi)
{
	char buf[4096];
	size_t used = 0;
	unsigned i;

	(void)fi;
	if (ino != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (size > sizeof buf)
		size = sizeof buf;
	/* entries: ".", "..", then the files; off is the next one's index */
	for (i = (unsigned)off; i < nfiles + 2; i++) {
		const char *name = i == 0 ? "." : i == 1 ? ".." : files[i - 2].name;
		struct stat st = { .st_ino = i < 2 ? FUSE_ROOT_ID : files[i - 2].ino,
				   .st_mode = i < 2 ? S_IFDIR : S_IFREG };
		size_t n = fuse_add_direntry(req, buf + used, size - used, name, &st, (off_t)i + 1);

		if (n > size - used)
			break;
		used += n;
	}
	fuse_reply_buf(req, buf, used);
}

static void
faultfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (file_by_ino(ino) == NULL) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	/* What the kernel caches is dropped on every change (control_apply);
	 * an open alone changes nothing. */
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

static void read_answer(fuse_req_t req, struct faultfs_file *f, uint64_t offset, size_t size);

static void
faultfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct faultfs_file *f = file_by_ino(ino);

	(void)fi;
	if (f == NULL || off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	pthread_mutex_lock(&lock);
	if (f->hang && npending < FAULTFS_MAX_PENDING) {
		/* a server that stopped answering: the loop goes on */
		pending[npending++] = (struct faultfs_pending){ req, f, (uint64_t)off, size };
		pthread_mutex_unlock(&lock);
		return;
	}
	pthread_mutex_unlock(&lock);
	read_answer(req, f, (uint64_t)off, size);
}

static void
read_answer(fuse_req_t req, struct faultfs_file *f, uint64_t offset, size_t size)
{
	uint64_t n, seed;
	uint8_t *buf;
	unsigned i;

	pthread_mutex_lock(&lock);
	f->reads++;
	/* A request that touches a bad range fails whole, as a failed disk
	 * read of those blocks would: never a short read, which the kernel
	 * would take for the end of the file. */
	for (i = 0; i < f->nbad; i++) {
		if (offset < f->bad[i].offset + f->bad[i].length &&
		    f->bad[i].offset < offset + size) {
			f->eios++;
			pthread_mutex_unlock(&lock);
			fuse_reply_err(req, EIO);
			return;
		}
	}
	n = offset >= f->size ? 0 : f->size - offset < size ? f->size - offset : size;
	seed = f->seed;
	pthread_mutex_unlock(&lock);

	buf = malloc(n > 0 ? (size_t)n : 1);
	if (buf == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	content_fill(buf, (size_t)n, seed, offset);
	fuse_reply_buf(req, (const char *)buf, (size_t)n);
	free(buf);
}

/* The kernel's INIT was answered: before it, the kernel has asked for
 * nothing, so caches nothing, and libfuse refuses notifications (ENOSYS:
 * the protocol's version not known yet). */
static int inited;	/* atomic */

static void
faultfs_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	(void)conn;
	__atomic_store_n(&inited, 1, __ATOMIC_RELEASE);
}

static const struct fuse_lowlevel_ops faultfs_ops = {
	.init = faultfs_init,
	.lookup = faultfs_lookup,
	.getattr = faultfs_getattr,
	.readdir = faultfs_readdir,
	.open = faultfs_open,
	.read = faultfs_read,
};

/* --- the control socket ---------------------------------------------------- */

/* Drops the kernel's cached attributes and pages of f (mapped pages are
 * unmapped, so the next access faults into faultfs_read). */
static int
control_invalidate(struct faultfs_file *f)
{
	int rc;

	/* a command that came before the kernel's INIT (the mount is
	 * visible first): nothing is cached yet.  Seen as "error invalidating
	 * data: Function not implemented" in test_netfs_copy's first command
	 * after its mount, once in a CI rehearsal */
	if (!__atomic_load_n(&inited, __ATOMIC_ACQUIRE))
		return 0;
	rc = fuse_lowlevel_notify_inval_inode(session, f->ino, 0, 0);
	/* ENOENT: the kernel never looked the file up, so caches nothing */
	return rc == -ENOENT ? 0 : rc;
}

/* Runs one command line; the answer goes to reply. */
static void
control_command(char *line, char *reply, size_t len)
{
	char cmd[16], name[FAULTFS_NAME_MAX];
	unsigned long long a = 0, b = 0;
	struct faultfs_file *f;
	int n, rc;

	n = sscanf(line, "%15s %63s %llu %llu", cmd, name, &a, &b);
	if (n >= 1 && strcmp(cmd, "ping") == 0) {
		snprintf(reply, len, "ok");
		return;
	}
	if (n < 2 || (f = file_by_name(name)) == NULL) {
		snprintf(reply, len, "error no such file or command: %.100s", line);
		return;
	}
	pthread_mutex_lock(&lock);
	if (strcmp(cmd, "count") == 0 && n == 2) {
		snprintf(reply, len, "ok reads=%" PRIu64 " eios=%" PRIu64, f->reads, f->eios);
		pthread_mutex_unlock(&lock);
		return;
	}
	if (strcmp(cmd, "eio") == 0 && n == 4 && b > 0 && a + b > a) {
		if (f->nbad == FAULTFS_MAX_RANGES) {
			pthread_mutex_unlock(&lock);
			snprintf(reply, len, "error too many bad ranges");
			return;
		}
		f->bad[f->nbad++] = (struct faultfs_range){ a, b };
	} else if (strcmp(cmd, "size") == 0 && n == 3 && a <= INT64_MAX) {
		f->size = a;
		f->generation++;
	} else if (strcmp(cmd, "seed") == 0 && n == 3) {
		f->seed = a;
		f->generation++;
	} else if (strcmp(cmd, "hang") == 0 && n == 2) {
		f->hang = true;
		pthread_mutex_unlock(&lock);
		snprintf(reply, len, "ok");
		return;	/* nothing changed: nothing to invalidate */
	} else if (strcmp(cmd, "touch") == 0 && n == 2) {
		f->mtime = (int64_t)time(NULL);
	} else if (strcmp(cmd, "restore") == 0 && n == 2) {
		unsigned i, k = 0;

		f->nbad = 0;
		f->hang = false;
		for (i = 0; i < npending; i++) {
			struct faultfs_pending p = pending[i];

			if (p.f != f) {
				pending[k++] = p;
				continue;
			}
			/* answered now (from this thread: the low-level
			 * API allows it), before the invalidation waits
			 * for reads in flight */
			pthread_mutex_unlock(&lock);
			read_answer(p.req, p.f, p.offset, p.size);
			pthread_mutex_lock(&lock);
		}
		npending = k;
		if (f->size != f->size0) {
			f->size = f->size0;
			f->generation++;
		}
	} else {
		pthread_mutex_unlock(&lock);
		snprintf(reply, len, "error bad command: %.100s", line);
		return;
	}
	pthread_mutex_unlock(&lock);
	rc = control_invalidate(f);
	if (rc < 0)
		snprintf(reply, len, "error invalidating %s: %s", f->name, strerror(-rc));
	else
		snprintf(reply, len, "ok");
}

/* One connection: lines in, one line out for each, until it closes. */
static void
control_serve(int fd)
{
	char buf[512], reply[256];
	size_t used = 0;

	for (;;) {
		char *nl;
		ssize_t r = read(fd, buf + used, sizeof buf - 1 - used);

		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return;
		}
		used += (size_t)r;
		buf[used] = '\0';
		while ((nl = strchr(buf, '\n')) != NULL) {
			size_t rl;

			*nl = '\0';
			control_command(buf, reply, sizeof reply - 1);
			rl = strlen(reply);
			reply[rl++] = '\n';
			if (write(fd, reply, rl) != (ssize_t)rl)
				return;
			used -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, used + 1);
		}
		if (used == sizeof buf - 1)
			return;		/* a line too long: not our test */
	}
}

static void *
control_thread(void *arg)
{
	int lfd = *(int *)arg;

	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return NULL;
		}
		control_serve(fd);
		close(fd);
	}
}

static int
control_listen(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char tmp[sizeof sa.sun_path];
	int fd;

	/* Bound under another name and renamed: the test connects as soon
	 * as the path exists, and must find it listening. */
	if (snprintf(tmp, sizeof tmp, "%s.new", path) >= (int)sizeof tmp) {
		fprintf(stderr, "faultfs: %s: path too long\n", path);
		return -1;
	}
	memcpy(sa.sun_path, tmp, strlen(tmp) + 1);
	unlink(tmp);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 4) < 0 ||
	    rename(tmp, path) < 0) {
		fprintf(stderr, "faultfs: control socket %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* --- main ------------------------------------------------------------------- */

static int
parse_file(const char *arg)
{
	struct faultfs_file *f = &files[nfiles];
	const char *c1 = strchr(arg, ':'), *c2 = c1 != NULL ? strchr(c1 + 1, ':') : NULL;
	char *end;
	size_t nlen;

	if (nfiles == FAULTFS_MAX_FILES || c1 == NULL || c2 == NULL)
		return -1;
	nlen = (size_t)(c1 - arg);
	if (nlen == 0 || nlen >= sizeof f->name || memchr(arg, '/', nlen) != NULL)
		return -1;
	memcpy(f->name, arg, nlen);
	f->name[nlen] = '\0';
	errno = 0;
	f->size0 = strtoull(c1 + 1, &end, 10);
	if (errno != 0 || end != c2 || f->size0 > INT64_MAX)
		return -1;
	f->seed = strtoull(c2 + 1, &end, 10);
	if (errno != 0 || *end != '\0' || end == c2 + 1)
		return -1;
	f->size = f->size0;
	f->ino = (fuse_ino_t)nfiles + 2;
	nfiles++;
	return 0;
}

int
main(int argc, char **argv)
{
	/* FAULTFS_SUBTYPE: the mount's type is fuse.SUBTYPE (test_netfs.c
	 * mounts it as a network file system would be, fuse.sshfs) */
	const char *subtype = getenv("FAULTFS_SUBTYPE");
	char opt[128];
	char *fargv[] = { argv[0], "-o", opt, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	pthread_t thread;
	int i, lfd, rc = 1;

	snprintf(opt, sizeof opt, "fsname=faultfs,subtype=%s",
		 subtype != NULL && subtype[0] != '\0' && strchr(subtype, ',') == NULL ?
		 subtype : "faultfs");
	if (argc < 4) {
		fprintf(stderr, "usage: faultfs MOUNTPOINT CONTROL_SOCKET NAME:SIZE:SEED...\n");
		return 2;
	}
	for (i = 3; i < argc; i++) {
		if (parse_file(argv[i]) < 0) {
			fprintf(stderr, "faultfs: bad file %s (NAME:SIZE:SEED, at most %d)\n",
				argv[i], FAULTFS_MAX_FILES);
			return 2;
		}
	}

	session = fuse_session_new(&args, &faultfs_ops, sizeof faultfs_ops, NULL);
	if (session == NULL)
		return 1;
	if (fuse_set_signal_handlers(session) != 0)
		goto out_destroy;
	if (fuse_session_mount(session, argv[1]) != 0)
		goto out_signals;
	lfd = control_listen(argv[2]);
	if (lfd < 0)
		goto out_unmount;
	if (pthread_create(&thread, NULL, control_thread, &lfd) != 0) {
		fprintf(stderr, "faultfs: cannot start the control thread\n");
		goto out_unmount;
	}
	pthread_detach(thread);
	/* foreground, single-threaded: the loop runs until unmounted or
	 * signalled */
	rc = fuse_session_loop(session);
	/* After a lazy unmount, the kernel may end the connection with
	 * ECONNABORTED once the last user of the file system is gone (about
	 * one run in twelve): that is the end it waits for, not an error. */
	if (rc < 0 && rc != -ECONNABORTED && rc != -ENODEV)
		fprintf(stderr, "faultfs: %s\n", strerror(-rc));
	rc = rc < 0 && rc != -ECONNABORTED && rc != -ENODEV ? 1 : 0;
	unlink(argv[2]);
out_unmount:
	fuse_session_unmount(session);
out_signals:
	fuse_remove_signal_handlers(session);
out_destroy:
	fuse_session_destroy(session);
	fuse_opt_free_args(&args);
	return rc;
}
