/* SPDX-License-Identifier: MIT */
/*
 * netfs.c - reads of a file on a network file system (NFS, CIFS, 9p,
 * FUSE such as sshfs: the daemon's reason network-fs, backend pread) with
 * pread(2) on the process's own descriptor of it: hm_open's, kept for
 * this, or hm_open_fd's, the caller's.
 *
 * Why: the daemon never maps such a file, so a read through it is a
 * pread in the daemon plus a round trip and a copy; on sshfs a hot file
 * read 0.2x (64 KiB reads) to 0.6x (1 MiB) of pread on the caller's own
 * descriptor, the page cache being the same (docs/performance.md,
 * "Network file systems").  Reading here keeps the read contract
 * trivially: it is pread on a descriptor opened when hm_open returned,
 * and for FUSE the daemon read through that very descriptor anyway
 * (a private entry).
 *
 * Once hotmapd gives the file its copy in memory (OPEN's or WARM's reply:
 * a memfd sealed against writes, shrinking and growing; storage.h,
 * "Copies of network files"), reads copy out of it: the speed of a
 * mapping, and no SIGBUS whatever the server does.  The copy is checked
 * (seals, size) before it is mapped, set once, and kept until hm_close,
 * so reading it takes no user of the client: the version the file was
 * given, close-to-open.  A view points into the copy and holds it past
 * hm_close, as a granted file's view holds its mapping.
 *
 * Must not: read while a reconnect replaces the descriptor (a read is a
 * user of the client, client_with_retry); pass pread's errors to the
 * reconnect policy (ENOTCONN of a dead sshfs is the file's, not the
 * daemon's: they come back in the call, never as the step's result).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client_priv.h"
#include "client/os.h"

/* hotmapd's copy as mapped here: held by its file until hm_close and by
 * each view into it (net_copy_view), unmapped by the last. */
struct net_copy {
	const void *map;
	uint64_t len;
	unsigned refs;
};

struct net_call {
	hm_file *f;
	void *buf;
	size_t len;
	uint64_t offset;
	ssize_t result;		/* bytes, -errno, or DIRECT_MISS */
};

/* From hotmapd's copy, if f has one: bytes, or DIRECT_MISS.  Sealed, the
 * copy cannot fault; mapped until hm_close (a reconnect keeps it: the
 * version the file was given), so a read needs no user of the client. */
static ssize_t
net_copy_read(hm_file *f, void *buf, size_t len, uint64_t offset)
{
	const uint8_t *copy = __atomic_load_n(&f->copy, __ATOMIC_ACQUIRE);
	uint64_t size;
	size_t k;

	if (copy == NULL)
		return DIRECT_MISS;
	size = f->copy_len;	/* stored before copy was published */
	k = offset >= size ? 0 : len < size - offset ? len : (size_t)(size - offset);
	memcpy(buf, copy + offset, k);
	FILE_COUNT(f, copy, 1);
	return (ssize_t)k;
}

static int
net_run(hm_client *c, void *arg)
{
	struct net_call *n = arg;
	hm_file *f = n->f;
	hm_osfile fd = f->fd != HM_OSFILE_NONE ? f->fd : f->own_fd;
	size_t done = 0;

	(void)c;
	n->result = DIRECT_MISS;
	if (!f->net || f->handle == 0 || fd == HM_OSFILE_NONE)
		return 0;	/* a reconnect changed it: through the daemon */
	while (done < n->len) {
		ssize_t got = os_file_pread(fd, (uint8_t *)n->buf + done, n->len - done,
					    n->offset + done);

		if (got == -EINTR)
			continue;
		if (got == -ENOSYS) {
			f->net = false;	/* this platform cannot: the daemon reads */
			return 0;
		}
		if (got < 0) {
			n->result = done > 0 ? (ssize_t)done : got;	/* as pread */
			return 0;
		}
		if (got == 0)
			break;	/* the end of the file */
		done += (size_t)got;
	}
	n->result = (ssize_t)done;
	return 0;
}

ssize_t
net_read_entered(hm_file *f, void *buf, size_t len, uint64_t offset)
{
	struct net_call n = { .f = f, .buf = buf, .len = len, .offset = offset };

	ssize_t k = net_copy_read(f, buf, len, offset);

	if (k != DIRECT_MISS)
		return k;
	(void)net_run(f->c, &n);
	if (n.result != DIRECT_MISS)
		FILE_COUNT(f, pread, 1);
	return n.result;
}

ssize_t
net_read(hm_file *f, void *buf, size_t len, uint64_t offset)
{
	struct net_call n = { .f = f, .buf = buf, .len = len, .offset = offset };
	ssize_t k = net_copy_read(f, buf, len, offset);
	int rc;

	if (k != DIRECT_MISS)
		return k;	/* no user of the client needed: see net_copy_read */
	rc = client_with_retry(f->c, net_run, &n);
	if (rc < 0)
		return rc;
	if (n.result != DIRECT_MISS)
		FILE_COUNT(f, pread, 1);
	return n.result;
}

void
net_copy_take(hm_file *f, int fd, uint64_t size)
{
	struct net_copy *ref;
	const void *map = NULL;
	int rc;

	if (f->copy != NULL) {
		close(fd);	/* the version it reads until it closes */
		return;
	}
	ref = malloc(sizeof *ref);
	rc = ref == NULL ? -ENOMEM : os_copy_map(fd, size, &map);
	close(fd);	/* the mapping keeps the memory */
	if (rc < 0) {
		/* not sealed, not its size, or no mapping: pread, and hm_stat
		 * says so rather than what the daemon said (net_stat_text) */
		free(ref);
		return;
	}
	*ref = (struct net_copy){ .map = map, .len = size, .refs = 1 };
	f->copy_ref = ref;
	f->copy_len = size;
	__atomic_store_n(&f->copy, (const uint8_t *)map, __ATOMIC_RELEASE);
	f->net = true;
}

int
net_copy_view(hm_file *f, uint64_t offset, size_t len, const void **data, size_t *n,
	      struct net_copy **ref)
{
	const uint8_t *copy = __atomic_load_n(&f->copy, __ATOMIC_ACQUIRE);
	uint64_t size;

	if (copy == NULL)
		return DIRECT_MISS;
	size = f->copy_len;	/* stored before copy was published */
	*n = offset >= size ? 0 : len < size - offset ? len : (size_t)(size - offset);
	*data = copy + (offset < size ? offset : size);
	*ref = f->copy_ref;
	__atomic_add_fetch(&(*ref)->refs, 1, __ATOMIC_RELAXED);
	FILE_COUNT(f, copy, 1);
	return 0;
}

void
net_copy_unref(struct net_copy *ref)
{
	if (ref == NULL || __atomic_sub_fetch(&ref->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	os_copy_unmap(ref->map, ref->len);
	free(ref);
}

void
net_stat_text(hm_file *f, struct hm_stat *st)
{
	bool have = __atomic_load_n(&f->copy, __ATOMIC_ACQUIRE) != NULL;
	bool said = strstr(st->reason_text, "hotmapd's copy") != NULL;

	if (st->reason != HM_REASON_NETWORK_FS || have == said)
		return;
	if (have)	/* kept across a reconnect: the new daemon gave none */
		snprintf(st->reason_text, sizeof st->reason_text,
			 "network-fs: network file system: read from hotmapd's copy in memory "
			 "(%llu bytes), as this file was given it", (unsigned long long)f->copy_len);
	else	/* refused here (its seals or size), or none on this platform */
		snprintf(st->reason_text, sizeof st->reason_text,
			 "network-fs: network file system: hotmapd's copy not used here: read with pread");
}

void
net_copy_drop(hm_file *f)
{
	__atomic_store_n(&f->copy, NULL, __ATOMIC_RELEASE);
	net_copy_unref(f->copy_ref);	/* unmapped once no view holds it */
	f->copy_ref = NULL;
	f->copy_len = 0;
}
