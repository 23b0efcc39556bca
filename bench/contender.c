/* SPDX-License-Identifier: MIT */
/*
 * contender.c - the ways a client can read a byte range, side by side.
 *
 * The table at the end is the one place a contender is added: each hotmap
 * transport and read call (hm_pread over the socket or the shared region,
 * hm_read_batch, hm_view_range) is a row with its own open/read/batch/view
 * hooks, and every workload whose W_* bit it carries measures it in the
 * same rounds as the others.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench/bench.h"
#include "hotmap.h"

/* Every session starts with the contender it belongs to. */
struct session {
	const struct contender *c;
	hm_client *hm;		/* hotmap */
};

static bool
always(const struct contender *c, char *why, size_t len)
{
	(void)c;
	(void)why;
	(void)len;
	return true;
}

static void *
session_new(const struct contender *c)
{
	struct session *s = xcalloc(1, sizeof *s);

	s->c = c;
	return s;
}

static void
session_free(void *s)
{
	free(s);
}

/* --- in-process pread ------------------------------------------------------ */

struct fd_file {
	int fd;
};

static void *
pread_open(void *s, const char *path, uint64_t size)
{
	struct fd_file *f;
	int fd;

	(void)s;
	(void)size;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	f = xcalloc(1, sizeof *f);
	f->fd = fd;
	return f;
}

static ssize_t
pread_read(void *fp, void *buf, size_t len, uint64_t off)
{
	struct fd_file *f = fp;
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(f->fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return done > 0 ? (ssize_t)done : -1;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static void
pread_close(void *fp)
{
	struct fd_file *f = fp;

	close(f->fd);
	free(f);
}

/* --- in-process mmap ------------------------------------------------------- */

struct map_file {
	const struct contender *c;
	char *map;
	uint64_t size;
};

static void *
mmap_open(void *sp, const char *path, uint64_t size)
{
	struct session *s = sp;
	struct map_file *f;
	void *p;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	p = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return NULL;
	if (s->c->flags & CF_TOUCHED) {
		/*
		 * The pre-touched variant faults every page in now, outside
		 * the timing, by reading a byte of each, as an application
		 * (or hotmapd's first pass) would.  Not MAP_POPULATE: on the
		 * VM this was written on, pages populated that way stayed
		 * about 10x slower to read for a long time afterwards (see
		 * docs/performance.md).
		 */
		volatile const char *q = p;
		long page = sysconf(_SC_PAGESIZE);
		uint64_t off;
		char sum = 0;

		for (off = 0; off < size; off += (uint64_t)page)
			sum += q[off];
		(void)sum;
	}
	f = xcalloc(1, sizeof *f);
	f->c = s->c;
	f->map = p;
	f->size = size;
	return f;
}

static ssize_t
mmap_read(void *fp, void *buf, size_t len, uint64_t off)
{
	struct map_file *f = fp;

	if (off >= f->size)
		return 0;
	if (len > f->size - off)
		len = (size_t)(f->size - off);
	memcpy(buf, f->map + off, len);
	return (ssize_t)len;
}

/* In place: the mapping's bytes, no copy. */
static int
mmap_consume(void *fp, void *buf, size_t len, uint64_t off,
	     int (*fn)(const void *data, size_t len, void *arg), void *arg)
{
	struct map_file *f = fp;

	(void)buf;
	if (off > f->size || len > f->size - off) {
		errno = EINVAL;
		return -1;
	}
	return fn(f->map + off, len, arg);
}

static void
mmap_close(void *fp)
{
	struct map_file *f = fp;

	munmap(f->map, (size_t)f->size);
	free(f);
}

double
contender_mapping_residency(const struct contender *c, void *fp)
{
	struct map_file *f = fp;
	long page = sysconf(_SC_PAGESIZE);
	size_t pages, i, in = 0;
	unsigned char *vec;

	if (!(c->flags & CF_MAPPING))
		return -1;
	pages = ((size_t)f->size + (size_t)page - 1) / (size_t)page;
	vec = xmalloc(pages);
	if (mincore(f->map, (size_t)f->size, vec) < 0) {
		free(vec);
		return -1;
	}
	for (i = 0; i < pages; i++)
		in += vec[i] & 1;
	free(vec);
	return (double)in / (double)pages;
}

/* --- hotmap, through libhotmap ---------------------------------------------- */

/* A hotmap file: the handle and the session it is open on. */
struct hm_handle {
	struct session *s;
	hm_file *f;
};

#define HM_MAX_RANGES	256

static bool
hotmap_available(const struct contender *c, char *why, size_t len)
{
	(void)c;
	if (bench.hotmapd_pid > 0)
		return true;
	snprintf(why, len, "hotmapd is not running");
	return false;
}

static void *
hotmap_session_open(const struct contender *c)
{
	struct session *s = session_new(c);
	struct hm_options o = HM_OPTIONS_INIT;
	int e;

	/* The tiers are chosen per connection: the shared region or none,
	 * frames or the polling ring, the direct tier or the daemon's only.
	 * Fields left HM_DEFAULT are the library's defaults (hmbench unsets
	 * the environment variables that would change them). */
	if (c->shm_size != NULL)
		o.shm_size = strtoll(c->shm_size, NULL, 10);
	o.poll = c->poll ? 1 : 0;
	if (c->direct != DIRECT_DEFAULT)
		o.direct = c->direct;
	s->hm = hm_connect_opts(bench.hotmap_sock, &o);
	if (s->hm == NULL) {
		e = errno;
		free(s);
		errno = e;
		return NULL;
	}
	return s;
}

static void
hotmap_session_close(void *sp)
{
	struct session *s = sp;

	hm_disconnect(s->hm);
	free(s);
}

static void *
hotmap_open(void *sp, const char *path, uint64_t size)
{
	struct session *s = sp;
	struct hm_handle *h;
	hm_file *f;

	(void)size;
	f = hm_open(s->hm, path, s->c->hm_flags);
	if (f == NULL)
		return NULL;
	h = xcalloc(1, sizeof *h);
	h->s = s;
	h->f = f;
	return h;
}

/*
 * The direct tier's steady state: the file opened HM_O_DIRECT and every
 * page of the client's own mapping touched now, outside the timing,
 * through one view of the whole file, as a long-lived client's mapping
 * would be after its first pass (mmap-touched is the in-process twin).
 */
static void *
hotmap_open_touched(void *sp, const char *path, uint64_t size)
{
	struct hm_handle *h = hotmap_open(sp, path, size);
	long page = sysconf(_SC_PAGESIZE);
	struct hm_view v;
	uint64_t off;
	char sum = 0;

	if (h == NULL)
		return NULL;
	if (hm_view_range(h->f, 0, (size_t)size, &v) == 0) {
		const volatile char *q = v.data;

		for (off = 0; off < v.len; off += (uint64_t)page)
			sum += q[off];
		hm_view_release(&v);
	}
	(void)sum;
	return h;
}

static ssize_t
hotmap_read(void *fp, void *buf, size_t len, uint64_t off)
{
	struct hm_handle *h = fp;

	return hm_pread(h->f, buf, len, off);
}

static void
hotmap_close(void *fp)
{
	struct hm_handle *h = fp;

	hm_close(h->f);
	free(h);
}

static int
hotmap_read_ways(void *fp, struct read_ways *w)
{
	struct hm_handle *h = fp;
	struct hm_read_stats st = { .size = sizeof st };

	if (hm_read_stats(h->f, &st) < 0)
		return -1;
	*w = (struct read_ways){ .copies = (double)(st.copy_reads + st.touch_reads),
				 .preads = (double)st.pread_reads,
				 .daemon = (double)st.daemon_reads,
				 .populates = (double)st.populates,
				 .populate_us = (double)st.populate_ns / 1e3,
				 .copy_us = (double)st.copy_ns / 1e3,
				 .pread_us = (double)st.pread_ns / 1e3 };
	return 0;
}

static int
hotmap_read_batch(void *sp, struct bench_range *r, size_t n)
{
	struct session *s = sp;
	struct hm_io io[HM_MAX_RANGES];
	size_t i, k, done = 0;

	while (done < n) {
		k = n - done < HM_MAX_RANGES ? n - done : HM_MAX_RANGES;
		for (i = 0; i < k; i++)
			io[i] = (struct hm_io){
				.file = ((struct hm_handle *)r[done + i].file)->f,
				.offset = r[done + i].off,
				.len = r[done + i].len,
				.buf = r[done + i].buf,
			};
		if (hm_read_batch(s->hm, io, k) < 0)
			return -1;
		for (i = 0; i < k; i++) {
			if (io[i].result < 0) {
				errno = (int)-io[i].result;
				return -1;
			}
			if ((size_t)io[i].result != io[i].len) {
				errno = EIO;
				return -1;
			}
		}
		done += k;
	}
	return 0;
}

/* All n ranges held as views at once (as a consumer of a batch would hold
 * them), then released: the bytes are never copied to r->buf. */
static int
hotmap_view_ranges(void *sp, struct bench_range *r, size_t n)
{
	struct hm_view v[HM_MAX_RANGES];
	size_t i, k, j, done = 0;
	int rc = 0;

	(void)sp;
	while (rc == 0 && done < n) {
		k = n - done < HM_MAX_RANGES ? n - done : HM_MAX_RANGES;
		for (i = 0; i < k; i++) {
			struct hm_handle *h = r[done + i].file;

			if (hm_view_range(h->f, r[done + i].off, r[done + i].len, &v[i]) < 0) {
				rc = -1;
				break;
			}
			if (v[i].len != r[done + i].len) {
				i++;
				errno = EIO;
				rc = -1;
				break;
			}
		}
		for (j = 0; j < i; j++)
			hm_view_release(&v[j]);
		done += k;
	}
	return rc;
}

/* The view contender's copying read, for verification and set-up: the
 * bytes of a view, copied out. */
static ssize_t
hotmap_view_read(void *fp, void *buf, size_t len, uint64_t off)
{
	struct hm_handle *h = fp;
	struct hm_view v;
	size_t n;

	if (hm_view_range(h->f, off, len, &v) < 0)
		return -1;
	n = v.len;
	memcpy(buf, v.data, n);
	hm_view_release(&v);
	return (ssize_t)n;
}

/* In place: the view's bytes (the file's mapping on the direct tier, the
 * shared region on the daemon's), released after fn. */
static int
hotmap_view_consume(void *fp, void *buf, size_t len, uint64_t off,
		    int (*fn)(const void *data, size_t len, void *arg), void *arg)
{
	struct hm_handle *h = fp;
	struct hm_view v;
	int rc;

	(void)buf;
	if (hm_view_range(h->f, off, len, &v) < 0)
		return -1;
	if (v.len != len) {
		hm_view_release(&v);
		errno = EIO;
		return -1;
	}
	rc = fn(v.data, v.len, arg);
	hm_view_release(&v);
	return rc;
}

/* --- the table --------------------------------------------------------------- */

/* What every hotmap contender shares: they differ in how they read. */
#define HOTMAP_SESSION_OPS \
	.available = hotmap_available, \
	.session_open = hotmap_session_open, \
	.session_close = hotmap_session_close, \
	.file_open = hotmap_open, \
	.file_close = hotmap_close, \
	.read_ways = hotmap_read_ways

const struct contender contenders[] = {
	{
		.name = "pread",
		.label = "in-process pread(2) on a persistent descriptor: the reference",
		.flags = CF_REFERENCE,
		.workloads = W_RAND | W_SEQ | W_CACHE | W_TRAIN | W_PROCS | W_ISO | W_SCALE | W_VIEWSUM | W_DEP |
			     W_FRESH | W_SAMPLE | W_DBPROCS,
		.batch_note = "one pread after another",
		.available = always,
		.session_open = session_new,
		.session_close = session_free,
		.file_open = pread_open,
		.read = pread_read,
		.file_close = pread_close,
	},
	{
		/* An A/A pair with pread: the same contender, run again as one of
		 * its own, in the same interleaving; how far its ratio is from 1
		 * is the measurement noise of the run. */
		.name = "pread-again",
		.label = "in-process pread(2) again, the reference run as a contender of its own: the A/A pair, the noise of the run",
		.flags = 0,
		.workloads = W_RAND | W_SEQ | W_ISO | W_VIEWSUM | W_DEP | W_FRESH | W_SAMPLE,
		.batch_note = "one pread after another",
		.available = always,
		.session_open = session_new,
		.session_close = session_free,
		.file_open = pread_open,
		.read = pread_read,
		.file_close = pread_close,
	},
	{
		.name = "mmap-new",
		.label = "in-process mmap, a new mapping each round: the first touch of a page faults",
		.flags = CF_MAPPING,
		.workloads = W_RAND | W_SEQ | W_CACHE | W_TRAIN | W_PROCS | W_SAMPLE | W_DBPROCS,
		.batch_note = "one memcpy after another",
		.available = always,
		.session_open = session_new,
		.session_close = session_free,
		.file_open = mmap_open,
		.read = mmap_read,
		.consume = mmap_consume,
		.file_close = mmap_close,
	},
	{
		.name = "mmap-touched",
		.label = "in-process mmap, every page touched at open, outside the timing",
		.flags = CF_MAPPING | CF_TOUCHED,
		.workloads = W_RAND | W_SEQ | W_CACHE | W_ISO | W_VIEWSUM | W_DEP,
		.batch_note = "one memcpy after another",
		.available = always,
		.session_open = session_new,
		.session_close = session_free,
		.file_open = mmap_open,
		.read = mmap_read,
		.consume = mmap_consume,
		.file_close = mmap_close,
	},
	{
		.name = "hotmap-socket",
		.label = "hotmapd, hm_pread with no shared region (shm_size 0, so no direct tier): every byte over the socket",
		.flags = CF_HOTMAP,
		.workloads = W_RAND | W_SEQ | W_PROCS | W_DBPROCS,
		.shm_size = "0",
		.direct = 0,
		.batch_note = "hm_pread: one round trip per read",
		HOTMAP_SESSION_OPS,
		.read = hotmap_read,
	},
	{
		.name = "hotmap",
		.label = "libhotmap's defaults: hm_pread, direct tier on (after 1 read through hotmapd the library reads its own mapping of the file)",
		.flags = CF_HOTMAP,
		.workloads = W_RAND | W_SEQ | W_CACHE | W_TRAIN | W_PROCS | W_ISO | W_SCALE | W_SCALE_CLIENTS |
			     W_VIEWSUM | W_DEP | W_FRESH | W_SAMPLE | W_DBPROCS,
		.direct = DIRECT_DEFAULT,
		.batch_note = "hm_pread: one call per read",
		HOTMAP_SESSION_OPS,
		.read = hotmap_read,
	},
	{
		.name = "hotmap-odirect",
		.label = "hm_pread, files opened HM_O_DIRECT: read directly from the first read",
		.flags = CF_HOTMAP,
		.workloads = W_PROCS | W_DEP | W_FRESH | W_SAMPLE,
		.hm_flags = HM_O_DIRECT,
		.direct = 1,
		.batch_note = "hm_pread: one call per read",
		HOTMAP_SESSION_OPS,
		.read = hotmap_read,
	},
	{
		.name = "hotmap-touched",
		.label = "hm_pread, HM_O_DIRECT, every page of the client's mapping touched at open (outside the timing): a long-lived client's steady state",
		.flags = CF_HOTMAP,
		.workloads = W_RAND | W_SEQ | W_DEP | W_SAMPLE,
		.hm_flags = HM_O_DIRECT,
		.direct = 1,
		.batch_note = "hm_pread: one call per read",
		.available = hotmap_available,
		.session_open = hotmap_session_open,
		.session_close = hotmap_session_close,
		.file_open = hotmap_open_touched,
		.file_close = hotmap_close,
		.read_ways = hotmap_read_ways,
		.read = hotmap_read,
	},
	{
		.name = "hotmap-touched-view",
		.label = "hm_view_range read in place, HM_O_DIRECT, the client's mapping touched at open (outside the timing)",
		.flags = CF_HOTMAP,
		.workloads = W_VIEWSUM | W_DEP,
		.hm_flags = HM_O_DIRECT,
		.direct = 1,
		.batch_note = "one hm_view_range after another, all held, then released",
		.available = hotmap_available,
		.session_open = hotmap_session_open,
		.session_close = hotmap_session_close,
		.file_open = hotmap_open_touched,
		.file_close = hotmap_close,
		.read_ways = hotmap_read_ways,
		.read = hotmap_view_read,
		.view_ranges = hotmap_view_ranges,
		.consume = hotmap_view_consume,
	},
	{
		.name = "hotmap-daemon",
		.label = "hotmapd's tiers only (direct 0), hm_pread, 16 MiB shared region for reads >= 4 KiB: the old \"hotmap\" row",
		.flags = CF_HOTMAP,
		.workloads = W_RAND | W_SEQ | W_CACHE | W_TRAIN | W_PROCS | W_ISO | W_SCALE | W_SCALE_CLIENTS |
			     W_VIEWSUM | W_DEP | W_FRESH | W_SAMPLE,
		.direct = 0,
		.batch_note = "hm_pread: one round trip per read",
		HOTMAP_SESSION_OPS,
		.read = hotmap_read,
	},
	{
		.name = "hotmap-batch",
		.label = "hm_read_batch, library defaults: ranges of directly read files are served in the client, the rest in one round trip per 256",
		.flags = CF_HOTMAP | CF_BATCH_ONLY,
		.workloads = W_RAND | W_TRAIN,
		.direct = DIRECT_DEFAULT,
		.batch_note = "hm_read_batch",
		HOTMAP_SESSION_OPS,
		.read = hotmap_read,
		.read_batch = hotmap_read_batch,
	},
	{
		.name = "hotmap-odirect-batch",
		.label = "hm_read_batch, files opened HM_O_DIRECT: every range served in the client from its own mapping",
		.flags = CF_HOTMAP | CF_BATCH_ONLY,
		.workloads = W_RAND | W_TRAIN,
		.hm_flags = HM_O_DIRECT,
		.direct = 1,
		.batch_note = "hm_read_batch",
		HOTMAP_SESSION_OPS,
		.read = hotmap_read,
		.read_batch = hotmap_read_batch,
	},
	{
		.name = "hotmap-daemon-batch",
		.label = "hotmapd's tiers only (direct 0), hm_read_batch: one round trip per 256 ranges (the old \"hotmap-batch\")",
		.flags = CF_HOTMAP | CF_BATCH_ONLY,
		.workloads = W_RAND | W_TRAIN,
		.direct = 0,
		.batch_note = "hm_read_batch",
		HOTMAP_SESSION_OPS,
		.read = hotmap_read,
		.read_batch = hotmap_read_batch,
	},
	{
		.name = "hotmap-view",
		.label = "hm_view_range + hm_view_release, library defaults: a pointer into the client's own mapping of the file (direct tier), zero copy: where the bytes are not read (rand4k, seq1m, train) nothing touches them; viewsum and dependent read them",
		.flags = CF_HOTMAP,
		.workloads = W_RAND | W_SEQ | W_TRAIN | W_VIEWSUM | W_DEP,
		.direct = DIRECT_DEFAULT,
		.batch_note = "one hm_view_range after another, all held, then released",
		HOTMAP_SESSION_OPS,
		.read = hotmap_view_read,
		.view_ranges = hotmap_view_ranges,
		.consume = hotmap_view_consume,
	},
	{
		.name = "hotmap-daemon-view",
		.label = "hotmapd's tiers only (direct 0), hm_view_range: bytes left in the shared region, no copy out (the old \"hotmap-view\")",
		.flags = CF_HOTMAP,
		.workloads = W_RAND | W_SEQ | W_TRAIN | W_VIEWSUM,
		.direct = 0,
		.batch_note = "one hm_view_range after another, all held, then released",
		HOTMAP_SESSION_OPS,
		.read = hotmap_view_read,
		.view_ranges = hotmap_view_ranges,
		.consume = hotmap_view_consume,
	},
	{
		.name = "hotmap-poll",
		.label = "hotmapd, hm_pread in polling mode (poll 1, direct 0, hotmapd --poll-us 50): requests and completions through a ring in the shared region",
		.flags = CF_HOTMAP,
		.workloads = W_RAND | W_SEQ,
		.poll = true,
		.direct = 0,
		.batch_note = "hm_pread: one ring request per read",
		HOTMAP_SESSION_OPS,
		.read = hotmap_read,
	},
	{
		.name = "hotmap-poll-batch",
		.label = "hotmapd, hm_read_batch in polling mode (direct 0): up to 64 ring requests in flight",
		.flags = CF_HOTMAP | CF_BATCH_ONLY,
		.workloads = W_RAND,
		.poll = true,
		.direct = 0,
		.batch_note = "hm_read_batch through the ring",
		HOTMAP_SESSION_OPS,
		.read = hotmap_read,
		.read_batch = hotmap_read_batch,
	},
	{
		.name = "hotmap-poll-view",
		.label = "hotmapd, hm_view_range in polling mode (direct 0): no copy out, no frame",
		.flags = CF_HOTMAP,
		.workloads = W_RAND | W_SEQ,
		.poll = true,
		.direct = 0,
		.batch_note = "one hm_view_range after another, all held, then released",
		HOTMAP_SESSION_OPS,
		.read = hotmap_view_read,
		.view_ranges = hotmap_view_ranges,
	},
	{
		.name = "hotmap-pread",
		.label = "hotmapd with the HM_O_PREAD backend (the daemon preads; direct 0), library defaults otherwise",
		.flags = CF_HOTMAP,
		.workloads = W_SEQ | W_CACHE | W_ISO,
		.hm_flags = HM_O_PREAD,
		.direct = 0,
		.batch_note = "hm_pread: one round trip per read",
		HOTMAP_SESSION_OPS,
		.read = hotmap_read,
	},
	{
		.name = "nginx",
		.label = "nginx on a Unix socket: HTTP/1.1 Range, keep-alive, sendfile, open_file_cache",
		.flags = CF_NGINX,
		.workloads = W_RAND | W_SEQ | W_CACHE | W_TRAIN | W_PROCS | W_ISO | W_SCALE | W_SCALE_CLIENTS,
		.batch_note = "pipelined requests on one keep-alive connection",
		.available = nginx_available,
		.session_open = nginx_session_open,
		.session_close = nginx_session_close,
		.file_open = nginx_open,
		.read = nginx_read,
		.read_batch = nginx_read_batch,
		.file_close = nginx_close,
	},
};

const size_t ncontenders = sizeof contenders / sizeof contenders[0];
_Static_assert(sizeof contenders / sizeof contenders[0] <= BENCH_MAX_CONTENDERS,
	       "BENCH_MAX_CONTENDERS is too small for the table");

const struct contender *
contender_find(const char *name)
{
	size_t i;

	for (i = 0; i < ncontenders; i++)
		if (strcmp(contenders[i].name, name) == 0)
			return &contenders[i];
	return NULL;
}

bool
contender_selected(const struct contender *c)
{
	/* The reference is always measured: every ratio needs it. */
	if (bench.o.contenders == NULL || (c->flags & CF_REFERENCE))
		return true;
	return list_has(bench.o.contenders, c->name);
}

int
contender_consume(const struct contender *c, void *f, void *buf, size_t len, uint64_t off,
		  int (*fn)(const void *data, size_t len, void *arg), void *arg)
{
	ssize_t got;

	if (c->consume != NULL)
		return c->consume(f, buf, len, off, fn, arg);
	got = c->read(f, buf, len, off);
	if (got < 0)
		return -1;
	if ((size_t)got != len) {
		errno = EIO;
		return -1;
	}
	return fn(buf, len, arg);
}

int
contender_read_ranges(const struct contender *c, void *s, struct bench_range *r, size_t n)
{
	size_t i;

	if (c->view_ranges != NULL)
		return c->view_ranges(s, r, n);
	if (c->read_batch != NULL && n > 1)
		return c->read_batch(s, r, n);
	for (i = 0; i < n; i++) {
		ssize_t got = c->read(r[i].file, r[i].buf, r[i].len, r[i].off);

		if (got < 0)
			return -1;
		if ((size_t)got != r[i].len) {
			errno = EIO;
			return -1;
		}
	}
	return 0;
}
