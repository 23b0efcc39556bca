/* SPDX-License-Identifier: MIT */
/*
 * file.c - a client's files: hm_open, hm_open_fd (and Windows'
 * hm_open_handle, os_win32.c), hm_stat, hm_warm and hm_close.  A file is
 * on its client's list from its open to its close, so that a reconnect
 * opens it again (open.c) and hm_disconnect frees it.
 *
 * Must not: send a request but as a user of the client (call.c), nor
 * OPEN but through open.c; close the caller's descriptor.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client_priv.h"
#include "client/os.h"

struct add_file {
	hm_file *f;
	int flags;
};

/* Opens a->f and, once open, links it into c's files.  A user. */
static int
add_file_run(hm_client *c, void *arg)
{
	struct add_file *a = arg;
	hm_file *f = a->f;
	int rc;

	f->c = c;	/* client_open reads the client's region */
	rc = client_open(c, f, a->flags);
	if (rc == 0) {
		pthread_mutex_lock(&c->files_lock);
		f->next = c->files;
		if (f->next != NULL)
			f->next->prev = f;
		c->files = f;
		pthread_mutex_unlock(&c->files_lock);
		if (f->handle == FALLBACK_HANDLE)
			pend_open(c, f);	/* pipelined: the daemon gets it too */
	}
	return rc;
}

/* Opens f (path or fd set) on c and adds it to c's files; frees it on
 * failure.  f, or NULL and errno. */
static hm_file *
client_add_file(hm_client *c, hm_file *f, int flags)
{
	struct add_file a = { .f = f, .flags = flags };
	int rc;

	f->flags = flags & ~HM_O_WARM;	/* a reopen need not warm again */
	if (flags & HM_O_WARM)
		f->flags |= HM_O_DIRECT;	/* but maps at once again */
	if (flags & HM_O_PATH)
		client_settle(c);	/* the daemon's to open: its answers first */
	rc = client_with_retry(c, add_file_run, &a);
	if (rc < 0) {
		client_file_drop(f);
		free(f->path);
		free(f);
		errno = -rc;
		return NULL;
	}
	if (!f->table && client_undefer(c)) {
		/* not in the table of granted files: hotmapd is asked now,
		 * as a pipelined client asks (pend.c), nothing waited for */
		client_enter(c);
		client_leave(c);
	}
	return f;
}

HM_EXPORT hm_file *
hm_open(hm_client *c, const char *path, int flags)
{
	hm_file *f;
	int rc;

	set_last_error(NULL);
	if (c == NULL || path == NULL ||
	    (flags & ~(HM_O_MMAP | HM_O_PREAD | HM_O_PATH | HM_O_WARM | HM_O_DIRECT)) != 0 ||
	    (flags & (HM_O_MMAP | HM_O_PREAD)) == (HM_O_MMAP | HM_O_PREAD)) {
		errno = EINVAL;
		return NULL;
	}
	f = calloc(1, sizeof *f);
	if (f == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	f->fd = HM_OSFILE_NONE;
	f->own_fd = HM_OSFILE_NONE;
	f->local_fd = HM_OSFILE_NONE;
	f->path = absolute_path(path);
	if (f->path == NULL) {
		rc = errno;
		free(f);
		errno = rc;
		return NULL;
	}
	return client_add_file(c, f, flags);
}

/* hm_open_fd, or Windows' hm_open_handle: the caller's file f. */
hm_file *
client_open_osfile(hm_client *c, hm_osfile f, int flags)
{
	hm_file *file;
	uint64_t dev, ino;

	set_last_error(NULL);
	if (c == NULL || (flags & ~(HM_O_MMAP | HM_O_PREAD | HM_O_WARM | HM_O_DIRECT)) != 0 ||
	    (flags & (HM_O_MMAP | HM_O_PREAD)) == (HM_O_MMAP | HM_O_PREAD)) {
		errno = EINVAL;
		return NULL;
	}
	if (f == HM_OSFILE_NONE || os_file_id(f, &dev, &ino) < 0) {
		errno = EBADF;
		return NULL;
	}
	file = calloc(1, sizeof *file);
	if (file == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	file->fd = f;
	file->own_fd = HM_OSFILE_NONE;
	file->local_fd = HM_OSFILE_NONE;
	file->dev = dev;
	file->ino = ino;
	return client_add_file(c, file, flags);
}

HM_EXPORT hm_file *
hm_open_fd(hm_client *c, int fd, int flags)
{
	hm_osfile f = HM_OSFILE_NONE;

	if (fd >= 0 && os_file_of_fd(fd, &f) < 0)
		f = HM_OSFILE_NONE;	/* EBADF, after the flags are checked */
	return client_open_osfile(c, f, flags);
}

HM_EXPORT int
hm_read_stats(hm_file *f, struct hm_read_stats *st)
{
	struct hm_read_stats s;

	set_last_error(NULL);
	/* the one size there is: a later library knows this one too */
	if (f == NULL || st == NULL || st->size != sizeof s)
		return fail(EINVAL);
	memset(&s, 0, sizeof s);
	s.size = sizeof s;
	s.daemon_reads = __atomic_load_n(&f->reads.daemon, __ATOMIC_RELAXED);
	s.pread_reads = __atomic_load_n(&f->reads.pread, __ATOMIC_RELAXED);
	s.copy_reads = __atomic_load_n(&f->reads.copy, __ATOMIC_RELAXED);
	s.touch_reads = __atomic_load_n(&f->reads.touch, __ATOMIC_RELAXED);
	s.view_reads = __atomic_load_n(&f->reads.view, __ATOMIC_RELAXED);
	s.probes = __atomic_load_n(&f->reads.probes, __ATOMIC_RELAXED);
	s.populates = __atomic_load_n(&f->reads.populates, __ATOMIC_RELAXED);
	s.populate_ns = __atomic_load_n(&f->reads.populate_ns, __ATOMIC_RELAXED);
	s.forgets = __atomic_load_n(&f->reads.forgets, __ATOMIC_RELAXED);
	direct_read_stats(f, &s);
	memcpy(st, &s, sizeof s);
	return 0;
}

HM_EXPORT int
hm_stat(hm_file *f, struct hm_stat *st)
{
	Hotmap__StatRequest req = HOTMAP__STAT_REQUEST__INIT;
	ProtobufCMessage *reply;
	Hotmap__StatReply *r;
	int rc;

	set_last_error(NULL);
	if (f == NULL || st == NULL)
		return fail(EINVAL);
	if (!f->table && (__atomic_load_n(&f->c->pend_hello, __ATOMIC_RELAXED) != NULL ||
			  __atomic_load_n(&f->pend, __ATOMIC_RELAXED) != NULL))
		client_settle(f->c);	/* where the file is read: the daemon's answers first */
	if (f->c->pid == fork_pid() && direct_grant_holds(f)) {
		/* nobody can change the file while the grant holds */
		*st = f->st;
		st->size = f->dsize;
		st->direct = f->dm != NULL ? HM_DIRECT_YES : HM_DIRECT_GRANTED;
		return 0;
	}
	rc = client_file_request(f, HM_MSG_STAT, &req.base, &req.handle, HM_MSG_STAT_REPLY, &reply);
	if (rc < 0)
		return fail(-rc);
	r = (Hotmap__StatReply *)reply;
	memset(st, 0, sizeof *st);
	st->size = r->size;
	st->backend = (int)r->backend;
	st->reason = (int)r->reason;
	snprintf(st->reason_text, sizeof st->reason_text, "%s", r->reason_text);
	st->dev = r->dev;
	st->ino = r->ino;
	st->mtime_ns = r->mtime_ns;
	st->mode = r->mode;
	st->handles = r->handles;
	st->mapped_length = r->mapped_length;
	st->direct = HM_DIRECT_NO;	/* a grant that held was answered above */
	net_stat_text(f, st);	/* how this process reads it, if not as said */
	snprintf(st->direct_text, sizeof st->direct_text, "%s",
		 f->direct_ok || f->table ? "revoked: the file was opened for writing or evicted" :
		 f->st.direct_text);
	protobuf_c_message_free_unpacked(reply, NULL);
	return 0;
}

HM_EXPORT int
hm_close(hm_file *f)
{
	Hotmap__Close req = HOTMAP__CLOSE__INIT;
	hm_client *c;
	int rc;

	set_last_error(NULL);
	if (f == NULL)
		return fail(EBADF);
	c = f->c;
	pthread_mutex_lock(c->lock);
	if (c->pid != fork_pid()) {
		/* a child's first call: the handle is the parent's, on the
		 * parent's connection; the child's next call reopens the
		 * others without it */
		rc = 0;
	} else {
		/* a user, not reviving: a reconnect renews the handle, so
		 * it is read with none running */
		while (c->exclusive)
			pthread_cond_wait(&c->idle, c->lock);
		c->users++;
		req.handle = f->handle;
		if (f->handle == 0 || f->handle == FALLBACK_HANDLE || c->local ||
		    client_wants_reconnect(c)) {
			rc = 0;	/* the daemon that had it is gone: nothing to close there */
		} else {
			/* not waited for: a short-lived process would spend a
			 * round trip on a reply that can only say the handle
			 * is gone, which it is either way */
			pthread_mutex_unlock(c->lock);
			rc = client_post(c, HM_MSG_CLOSE, &req.base, HM_MSG_CLOSE_REPLY);
			pthread_mutex_lock(c->lock);
			if (rc < 0 && client_wants_reconnect(c))
				rc = 0;
		}
		if (--c->users == 0)
			pthread_cond_broadcast(&c->idle);
	}
	pthread_mutex_lock(&c->files_lock);
	if (f->prev != NULL)
		f->prev->next = f->next;
	else
		c->files = f->next;
	if (f->next != NULL)
		f->next->prev = f->prev;
	pthread_mutex_unlock(&c->files_lock);
	client_file_drop(f);
	pthread_mutex_unlock(c->lock);
	free(f->path);
	free(f);
	return rc < 0 ? fail(-rc) : 0;
}

HM_EXPORT ssize_t
hm_warm(hm_file *f, uint64_t offset, uint64_t len)
{
	Hotmap__Warm req = HOTMAP__WARM__INIT;
	ProtobufCMessage *reply;
	Hotmap__WarmReply *r;
	uint64_t warmed;
	int rc, fd;

	set_last_error(NULL);
	if (f == NULL || offset > INT64_MAX)
		return fail(EINVAL);
	if (__atomic_load_n(&f->copy, __ATOMIC_ACQUIRE) != NULL) {
		/* read from hotmapd's copy, mapped here: in memory already
		 * (only this process knows it maps it: the daemon warms
		 * whatever it is asked) */
		warmed = offset >= f->copy_len ? 0 : len < f->copy_len - offset ? len :
			 f->copy_len - offset;
		return warmed > SSIZE_MAX ? SSIZE_MAX : (ssize_t)warmed;
	}
	req.offset = offset;
	req.length = len;
	rc = client_file_request_fd(f, HM_MSG_WARM, &req.base, &req.handle, HM_MSG_WARM_REPLY,
				    &reply, &fd);
	if (rc < 0)
		return fail(-rc);
	r = (Hotmap__WarmReply *)reply;
	warmed = r->warmed;
	if (fd >= 0 && r->copy) {
		/* hotmapd's copy of the network file, which the warm filled:
		 * read from it from now on (netfs.c) */
		pthread_mutex_lock(f->c->lock);
		net_copy_take(f, fd, r->copy_size);
		pthread_mutex_unlock(f->c->lock);
	} else if (fd >= 0) {
		close(fd);
	}
	protobuf_c_message_free_unpacked(reply, NULL);
	if (f->direct_ok && f->dm == NULL) {
		/* asked for: read it here from now on */
		pthread_mutex_lock(f->c->lock);
		if (f->c->pid == fork_pid())
			(void)direct_promote(f);
		pthread_mutex_unlock(f->c->lock);
	}
	direct_warm(f, offset, len);
	return warmed > SSIZE_MAX ? SSIZE_MAX : (ssize_t)warmed;
}
