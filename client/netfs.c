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
 * Once hotmapd gives the file its copy in memory (netcopy.c), reads copy
 * out of it: the speed of a mapping, and no SIGBUS whatever the server
 * does.
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
};

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
