/* SPDX-License-Identifier: MIT */
/*
 * netcopy.c - hotmapd's copy in memory of a network file, as this process
 * maps it: given with OPEN's or WARM's reply (a memfd sealed against
 * writes, shrinking and growing; storage.h, "Copies of network files"),
 * checked (seals, size) before it is mapped, set once and kept until
 * hm_close, a reconnect too: the version the file was given,
 * close-to-open.  Reads (netfs.c) copy out of it and views point into it,
 * with no lock and no user of the client.  The mapping is held by its
 * file and by each view into it, and unmapped by the last to let go, so
 * that a view outlives hm_close and hm_disconnect as a granted file's
 * view does.
 *
 * Must not: map a copy that fails its checks; replace a copy a file has
 * (its readers and views hold that version); know about the socket.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client_priv.h"
#include "client/os.h"

struct net_copy {
	const void *map;
	uint64_t len;
	unsigned refs;
};

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

/* Where [offset, offset + len) of f's copy starts (its end past the
 * copy's), *n bytes of it; NULL when f has no copy.  Counted as a read
 * out of the copy. */
static const uint8_t *
copy_span(hm_file *f, uint64_t offset, size_t len, size_t *n)
{
	const uint8_t *copy = __atomic_load_n(&f->copy, __ATOMIC_ACQUIRE);
	uint64_t size;

	if (copy == NULL)
		return NULL;
	size = f->copy_len;	/* stored before copy was published */
	*n = offset >= size ? 0 : len < size - offset ? len : (size_t)(size - offset);
	FILE_COUNT(f, copy, 1);
	return copy + (offset < size ? offset : size);
}

ssize_t
net_copy_read(hm_file *f, void *buf, size_t len, uint64_t offset)
{
	size_t n;
	const uint8_t *p = copy_span(f, offset, len, &n);

	if (p == NULL)
		return DIRECT_MISS;
	memcpy(buf, p, n);
	return (ssize_t)n;
}

int
net_copy_view(hm_file *f, uint64_t offset, size_t len, const void **data, size_t *n,
	      struct net_copy **ref)
{
	const uint8_t *p = copy_span(f, offset, len, n);

	if (p == NULL)
		return DIRECT_MISS;
	*data = p;
	*ref = f->copy_ref;
	__atomic_add_fetch(&(*ref)->refs, 1, __ATOMIC_RELAXED);
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
net_copy_drop(hm_file *f)
{
	__atomic_store_n(&f->copy, NULL, __ATOMIC_RELEASE);
	net_copy_unref(f->copy_ref);	/* unmapped once no view holds it */
	f->copy_ref = NULL;
	f->copy_len = 0;
}
