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
#include <string.h>
#include <unistd.h>

#include "client/client_priv.h"
#include "client/os.h"

struct net_call {
	hm_file *f;
	void *buf;
	size_t len;
	uint64_t offset;
	ssize_t result;		/* bytes, -errno, or DIRECT_MISS */
	bool copied;		/* from hotmapd's copy */
};

static int
net_run(hm_client *c, void *arg)
{
	struct net_call *n = arg;
	hm_file *f = n->f;
	hm_osfile fd = f->fd != HM_OSFILE_NONE ? f->fd : f->own_fd;
	size_t done = 0;

	const uint8_t *copy = __atomic_load_n(&f->copy, __ATOMIC_ACQUIRE);

	(void)c;
	n->result = DIRECT_MISS;
	if (copy != NULL && f->handle != 0) {
		/* hotmapd's copy: sealed, so this cannot fault */
		uint64_t size = f->copy_len;
		size_t k = n->offset >= size ? 0 :
			   n->len < size - n->offset ? n->len : (size_t)(size - n->offset);

		memcpy(n->buf, copy + n->offset, k);
		n->result = (ssize_t)k;
		n->copied = true;
		return 0;
	}
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

	(void)net_run(f->c, &n);
	if (n.copied)
		FILE_COUNT(f, copy, 1);
	else if (n.result != DIRECT_MISS)
		FILE_COUNT(f, pread, 1);
	return n.result;
}

ssize_t
net_read(hm_file *f, void *buf, size_t len, uint64_t offset)
{
	struct net_call n = { .f = f, .buf = buf, .len = len, .offset = offset };
	int rc;

	rc = client_with_retry(f->c, net_run, &n);
	if (rc < 0)
		return rc;
	if (n.copied)
		FILE_COUNT(f, copy, 1);
	else if (n.result != DIRECT_MISS)
		FILE_COUNT(f, pread, 1);
	return n.result;
}

void
net_copy_take(hm_file *f, int fd, uint64_t size)
{
	const void *map = NULL;
	int rc;

	if (f->copy != NULL) {
		close(fd);	/* the version it reads until it closes */
		return;
	}
	rc = os_copy_map(fd, size, &map);
	close(fd);	/* the mapping keeps the memory */
	if (rc < 0) {
		/* not sealed, not its size, or no mapping: pread, and hm_stat
		 * says so rather than what the daemon said */
		if (rc != -ENOSYS)
			snprintf(f->st.reason_text, sizeof f->st.reason_text,
				 "network-fs: hotmapd's copy refused (%s): read with pread",
				 strerror(-rc));
		return;
	}
	f->copy_len = size;
	__atomic_store_n(&f->copy, (const uint8_t *)map, __ATOMIC_RELEASE);
	f->net = true;
}

void
net_copy_drop(hm_file *f)
{
	const uint8_t *map = f->copy;

	__atomic_store_n(&f->copy, NULL, __ATOMIC_RELEASE);
	os_copy_unmap(map, f->copy_len);
	f->copy_len = 0;
}
