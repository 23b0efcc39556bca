/* SPDX-License-Identifier: MIT */
/*
 * table_unix.c - the table of granted files hotmapd publishes beside its
 * socket (proto/direct.h; docs/direct-reads.md, "The table of granted
 * files"), from the client's side.  With HOTMAP_FALLBACK=local, a client
 * whose daemon publishes one does not connect at hm_connect (deferred):
 * a file hm_open finds in the table, of the size this process sees, is
 * mapped here and read under the table's entry, as a granted file is
 * under its slot, and never told to hotmapd.  A file not found, or a
 * call only hotmapd can answer, makes the client connect then
 * (client_undefer), as the fallback always did.
 *
 * Trust: the table is the daemon's word that a file cannot change while
 * its entry holds, so it is taken only from whom descriptors go to
 * (trust.h: root, this user, the daemon's user), from a file nobody else
 * may write, and only while a live hotmapd holds its lock (a daemon that
 * died let its leases go).  The mapping is read-only: this process can
 * neither write the table nor make anyone else trust what it wrote.
 *
 * Must not: write the table; trust an entry but under its generation;
 * unmap a table (mappings read under it may live in any thread).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/direct_priv.h"
#include "client/trust.h"
#include "proto/direct.h"
#include "proto/endpoint.h"

/* The largest table taken (a daemon's is 512 KiB). */
#define TABLE_BYTES_MAX	((uint64_t)HM_TABLE_HEAD_BYTES + \
			 (uint64_t)HM_TABLE_ENTRIES_MAX * HM_DIRECT_SLOT_BYTES)

struct hm_table {
	struct hm_table *next;
	int fd;			/* kept open: each open asks whether hotmapd
				 * still holds the lock */
	uint64_t dev, ino;	/* the file mapped */
	uint8_t *base;
	size_t len;
	uint32_t n;
};

/* Every table this process mapped: kept until it exits. */
static pthread_mutex_t tables_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hm_table *tables;

/* Whether a live hotmapd holds the table of fd locked. */
static bool
table_locked(int fd)
{
	struct flock lk = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };

	return fcntl(fd, F_OFD_GETLK, &lk) == 0 && lk.l_type == F_WRLCK;
}

/* The mapping of the table fd (of st), made once per file; fd is the
 * table's to keep, or closed. */
static struct hm_table *
table_map(int fd, const struct stat *st)
{
	struct hm_table_head head;
	struct hm_table *t;
	uint32_t n;
	void *base;

	/* the head read, not touched through the mapping: a page fault costs
	 * a new process more than a pread, and the entry an open looks for
	 * is most likely on another page */
	if (pread(fd, &head, sizeof head, 0) != (ssize_t)sizeof head ||
	    (n = hm_table_entries(&head, (uint64_t)st->st_size)) == 0) {
		close(fd);
		return NULL;
	}
	pthread_mutex_lock(&tables_lock);
	for (t = tables; t != NULL; t = t->next)
		if (t->dev == (uint64_t)st->st_dev && t->ino == (uint64_t)st->st_ino)
			break;
	if (t != NULL) {
		pthread_mutex_unlock(&tables_lock);
		close(fd);
		return t;
	}
	t = calloc(1, sizeof *t);
	base = t != NULL ? mmap(NULL, (size_t)st->st_size, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
	if (base == MAP_FAILED) {
		pthread_mutex_unlock(&tables_lock);
		free(t);
		close(fd);
		return NULL;
	}
	t->base = base;
	t->len = (size_t)st->st_size;
	t->n = n;	/* hotmapd never changes the head of a table it made */
	t->fd = fd;
	t->dev = (uint64_t)st->st_dev;
	t->ino = (uint64_t)st->st_ino;
	t->next = tables;
	tables = t;
	pthread_mutex_unlock(&tables_lock);
	return t;
}

struct hm_table *
table_attach(const char *socket_path)
{
	/* a socket's path fits sun_path (ENDPOINT_MAX), so the table's fits
	 * this: no PATH_MAX on the stack, whose 4 KiB would push the calls
	 * below it onto a page a new process has not touched (a fault) */
	char path[ENDPOINT_MAX + sizeof HM_TABLE_SUFFIX];
	size_t n = socket_path != NULL ? strlen(socket_path) : 0;
	struct stat st;
	int fd;

	/* memcpy, not snprintf: printf's code is page faults a short-lived
	 * process pays for in its first call */
	if (n == 0 || n + sizeof HM_TABLE_SUFFIX > sizeof path)
		return NULL;
	memcpy(path, socket_path, n);
	memcpy(path + n, HM_TABLE_SUFFIX, sizeof HM_TABLE_SUFFIX);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0 &&
	    st.st_size >= (off_t)HM_TABLE_HEAD_BYTES && (uint64_t)st.st_size <= TABLE_BYTES_MAX &&
	    client_trust_owner((unsigned)st.st_uid) == 0 && table_locked(fd))
		return table_map(fd, &st);
	close(fd);
	return NULL;
}

int
table_take(hm_client *c, hm_file *f, int flags)
{
	const struct hm_direct_slot *e;
	uint64_t gen, size;
	int64_t mtime_ns;
	hm_osfile fd = f->fd != HM_OSFILE_NONE ? f->fd : f->local_fd;
	int rc;

	/* a deferred client's: one that talks to hotmapd opens through it */
	if (c->table == NULL || !c->deferred || fd == HM_OSFILE_NONE ||
	    (flags & (HM_O_PATH | HM_O_PREAD)) || c->direct_slots == 0)
		return -ENOENT;
	/* a daemon that died let its leases go: its table says nothing now
	 * (one fcntl an open, where a connect would be a wake-up) */
	if (!table_locked(c->table->fd))
		return -ENOENT;
	e = hm_table_find(c->table->base, c->table->n, f->st.dev, f->st.ino, &gen, &size,
			  &mtime_ns);
	/* the file this process sees, as it is: the entry's holds while its
	 * generation does */
	if (e == NULL || size != f->st.size || mtime_ns != f->st.mtime_ns)
		return -ENOENT;
	pthread_mutex_lock(c->lock);
	rc = direct_promote_table(f, fd, &e->gen, gen, size);
	if (rc == 0) {
		f->table = true;
		f->direct_ok = false;	/* no daemon's grant to promote */
		if (f->fd == HM_OSFILE_NONE) {
			/* hm_open's: the direct tier's preads use it */
			f->own_fd = f->local_fd;
			f->local_fd = HM_OSFILE_NONE;
		}
		f->st.backend = HM_BACKEND_MMAP;
		snprintf(f->st.reason_text, sizeof f->st.reason_text,
			 "the table of granted files: read from this process's mapping");
		snprintf(f->st.direct_text, sizeof f->st.direct_text,
			 "granted by the table of granted files (no round trip)");
	}
	pthread_mutex_unlock(c->lock);
	return rc;
}
