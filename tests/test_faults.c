/* SPDX-License-Identifier: MIT */
/*
 * test_faults.c - I/O errors and truncation under a real hotmapd: files
 * on a FUSE file system of our own (tests/faultfs.c) that fails reads of
 * chosen ranges with EIO, or changes a file's size, on command.
 *
 * What it asserts: a read over a bad range fails with EIO through every
 * backend (AUTO, which is pread on FUSE; a forced mapping, where the EIO
 * is a SIGBUS in the daemon's guarded copy; forced pread) and every
 * transport (socket, shared region, polling ring, batches, views); reads
 * of good ranges of the same file are byte-exact, and so is a local file
 * read meanwhile; the faults are counted in the daemon's statistics.  A
 * mapped file truncated under the daemon reads short, and whole again once
 * it is restored.  The daemon exits 0 at the end (harness_stop).
 *
 * Where FUSE cannot be used (no libfuse3 at build time, no /dev/fuse, no
 * fusermount3, a mount refused), it skips, saying why; with
 * HOTMAP_REQUIRE_FUSE=1 in the environment that is a failure instead.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/faultfs_ctl.h"
#include "tests/harness.h"

#define KiB (1024u)
#define MiB (1024u * 1024u)

/* The file on faultfs: not a multiple of the page size. */
#define DATA_SIZE	(2 * MiB + 12345)
#define DATA_SEED	7
/* Its bad range: two pages in the middle. */
#define BAD_OFF		(1 * MiB)
#define BAD_LEN		(8 * KiB)
/* A local file served meanwhile. */
#define LOCAL_SIZE	(MiB + 3)
#define LOCAL_SEED	9
/* The size the truncation test gives the file. */
#define SHORT_SIZE	(MiB + 100)

/* faultfs's argument for the data file. */
static const char *
data_arg(void)
{
	static char arg[64];

	snprintf(arg, sizeof arg, "data:%u:%u", DATA_SIZE, DATA_SEED);
	return arg;
}

/* What a test has: the daemon, the fault file system, the files. */
struct fixture {
	struct harness *h;
	struct faultfs fs;
	char data[PATH_MAX];	/* MNT/data */
	char local[PATH_MAX];	/* DIR/root/local */
};

/* --- the fixture ----------------------------------------------------------- */

/* A command to faultfs that must succeed; returns its answer. */
static const char *
fault(struct fixture *fx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static const char *
fault(struct fixture *fx, const char *fmt, ...)
{
	static char reply[256];
	char cmd[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	if (faultfs_cmd(&fx->fs, reply, sizeof reply, "%s", cmd) < 0)
		fail_msg("faultfs \"%s\": %s", cmd, reply);
	return reply;
}

/* How many read requests faultfs failed with EIO so far. */
static uint64_t
fault_eios(struct fixture *fx)
{
	const char *r = fault(fx, "count data");
	const char *e = strstr(r, "eios=");

	assert_non_null(e);
	return strtoull(e + 5, NULL, 10);
}

static int
setup(void **state)
{
	const struct harness_opts *opts = *state;
	struct fixture *fx = calloc(1, sizeof *fx);
	char why[1024];

	assert_non_null(fx);
	unsetenv("HOTMAP_SHM_SIZE");
	unsetenv("HOTMAP_SHM_THRESHOLD");
	setenv("HOTMAP_POLL", "0", 1);	/* each test says if it polls */
	fx->h = harness_start(opts);
	if (faultfs_start(&fx->fs, fx->h->dir, NULL, data_arg(), why, sizeof why) < 0) {
		harness_stop(fx->h);
		free(fx);
		fail_msg("%s", why);
	}
	assert_true(snprintf(fx->data, sizeof fx->data, "%s/data", fx->fs.mnt) < (int)sizeof fx->data);
	harness_path(fx->h, "root/local", fx->local);
	harness_write_file(fx->local, LOCAL_SIZE, LOCAL_SEED);
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *fx = *state;
	int status;

	unsetenv("HOTMAP_SHM_SIZE");
	unsetenv("HOTMAP_POLL");
	harness_free_buffers();
	faultfs_close_control(&fx->fs);
	/* detached first: the daemon lets go of the file as it exits, and
	 * then faultfs exits too */
	faultfs_unmount(&fx->fs);
	harness_stop(fx->h);
	status = faultfs_reap(&fx->fs);
	free(fx);
	assert_int_equal(status, 0);
	return 0;
}

/* --- checks ------------------------------------------------------------------ */

/* A file of the test: its handle and a descriptor of our own on it. */
struct tfile {
	hm_file *f;
	int fd;
	uint64_t seed;
	const char *name;
};

static struct tfile
tfile_open(hm_client *c, const char *path, int flags, uint64_t seed, const char *name)
{
	struct tfile t = { .seed = seed, .name = name };

	t.f = hm_open(c, path, flags);
	if (t.f == NULL)
		fail_msg("hm_open %s (%s): %s (%s)", path, name, strerror(errno), hm_last_error());
	t.fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(t.fd >= 0);
	return t;
}

static void
tfile_close(struct tfile *t)
{
	assert_int_equal(hm_close(t->f), 0);
	close(t->fd);
}

/* hm_stat says the backend and reason the handle was given. */
static void
check_backend(const struct tfile *t, int backend, int reason)
{
	struct hm_stat st;

	assert_int_equal(hm_stat(t->f, &st), 0);
	if (st.backend != backend || st.reason != reason)
		fail_msg("%s: backend %d reason %d (%s), want backend %d reason %d", t->name,
			 st.backend, st.reason, st.reason_text, backend, reason);
}

/* The bytes at [offset, offset + len) of the file are its content. */
static void
check_content(const struct tfile *t, const void *buf, uint64_t offset, size_t len, const char *what)
{
	uint8_t *want = malloc(len > 0 ? len : 1);

	assert_non_null(want);
	harness_fill(want, len, t->seed, offset);
	if (memcmp(buf, want, len) != 0)
		fail_msg("%s: %s: %zu bytes at %llu are not the file's", t->name, what, len,
			 (unsigned long long)offset);
	free(want);
}

/* A read of a good range: all len bytes (or up to the end at size),
 * exact, and what pread says. */
#define check_good(t, offset, len, size) check_good_at(t, offset, len, size, __LINE__)
static void
check_good_at(const struct tfile *t, uint64_t offset, size_t len, uint64_t size, int line)
{
	size_t want = offset >= size ? 0 : size - offset < len ? (size_t)(size - offset) : len;
	uint8_t *buf = malloc(len + 1);
	ssize_t n;

	assert_non_null(buf);
	n = hm_pread(t->f, buf, len, offset);
	if (n != (ssize_t)want)
		fail_msg("line %d: %s: hm_pread %zu at %llu gave %zd (%s, \"%s\"), want %zu", line,
			 t->name, len, (unsigned long long)offset, n, n < 0 ? strerror(errno) : "ok",
			 hm_last_error(), want);
	check_content(t, buf, offset, want, "hm_pread");
	free(buf);
	/* and pread on our own descriptor agrees, byte for byte */
	harness_check_read(t->f, t->fd, offset, len);
}

/* A read that starts in the bad range: EIO, from the daemon and from
 * pread alike. */
#define check_eio(t, offset, len) check_eio_at(t, offset, len, __LINE__)
static void
check_eio_at(const struct tfile *t, uint64_t offset, size_t len, int line)
{
	uint8_t *buf = malloc(len);
	ssize_t n;

	assert_non_null(buf);
	errno = 0;
	n = hm_pread(t->f, buf, len, offset);
	if (n != -1 || errno != EIO)
		fail_msg("line %d: %s: hm_pread %zu at %llu over the bad range gave %zd (%s), want EIO",
			 line, t->name, len, (unsigned long long)offset, n, strerror(errno));
	errno = 0;
	n = pread(t->fd, buf, len, (off_t)offset);
	if (n != -1 || errno != EIO)
		fail_msg("line %d: pread %zu at %llu gave %zd (%s), want EIO: faultfs is not failing",
			 line, len, (unsigned long long)offset, n, strerror(errno));
	free(buf);
}

/* What the daemon counts, before and after. */
struct counts {
	uint64_t errors_replied, errors_eio, sigbus, eios_injected, reads_ring;
};

static struct counts
counts_now(struct fixture *fx, hm_client *admin)
{
	struct counts k;

	k.errors_replied = harness_stat(admin, "errors_replied");
	k.errors_eio = harness_stat(admin, "errors_eio");
	k.sigbus = harness_stat(admin, "sigbus_recoveries");
	k.eios_injected = fault_eios(fx);
	k.reads_ring = harness_stat(admin, "reads_ring");
	return k;
}

/*
 * Every kind of read of t over the bad range, and around it, on the
 * client's transport.  Returns how many reads the daemon answered with
 * EIO, and in *guarded how many of those copied out of a mapping (a
 * SIGBUS each, when t is mapped): the reads under 256 KiB (larger ones
 * use pread, see backend_mmap.c).
 */
static unsigned
run_bad_reads(struct fixture *fx, hm_client *c, struct tfile *t, struct tfile *local,
	      unsigned *guarded)
{
	static const size_t bad_lens[] = { 1, 100, 4096, 8192, 64 * KiB, 300 * KiB };
	unsigned eio = 0, small = 0;
	struct hm_view v;
	struct hm_io io[6];
	uint8_t *bufs[6];
	size_t i;

	(void)fx;
	/* one read of each size from the first bad byte, and one from the
	 * middle of the bad range */
	for (i = 0; i < sizeof bad_lens / sizeof bad_lens[0]; i++) {
		check_eio(t, BAD_OFF, bad_lens[i]);
		eio++;
		small += bad_lens[i] < 256 * KiB;
		/* the local file is served in between */
		check_good(local, (uint64_t)i * 100 * KiB, 64 * KiB, LOCAL_SIZE);
	}
	check_eio(t, BAD_OFF + BAD_LEN - 10, 4096);
	eio++;
	small++;

	/* good ranges of the same file: before, after, the end */
	check_good(t, 0, 4096, DATA_SIZE);
	check_good(t, BAD_OFF - 512 * KiB, 64 * KiB, DATA_SIZE);
	check_good(t, BAD_OFF + BAD_LEN + 256 * KiB, 300 * KiB, DATA_SIZE);
	check_good(t, DATA_SIZE - 1000, 4096, DATA_SIZE);

	/* a read that runs into the bad range ends short before it, as
	 * pread does; never EIO, never bytes of the bad range */
	{
		ssize_t n = harness_check_read(t->f, t->fd, BAD_OFF - 8192, 64 * KiB);

		if (n < 0 || n > 8192)
			fail_msg("%s: a read into the bad range gave %zd", t->name, n);
		small++;	/* mapped, its copy faults at the bad range */
	}

	/* views */
	memset(&v, 0x5a, sizeof v);
	errno = 0;
	assert_int_equal(hm_view_range(t->f, BAD_OFF, 4096, &v), -1);
	assert_int_equal(errno, EIO);
	assert_int_equal(v.len, 0);
	hm_view_release(&v);
	eio++;
	small++;
	assert_int_equal(hm_view_range(t->f, BAD_OFF + 4096, 64 * KiB, &v), -1);
	assert_int_equal(errno, EIO);
	hm_view_release(&v);
	eio++;
	small++;
	assert_int_equal(hm_view_range(t->f, BAD_OFF + BAD_LEN, 64 * KiB, &v), 0);
	assert_int_equal(v.len, 64 * KiB);
	check_content(t, v.data, BAD_OFF + BAD_LEN, v.len, "view after the bad range");
	hm_view_release(&v);

	/* a batch: bad ranges, good ones, the local file */
	memset(io, 0, sizeof io);
	for (i = 0; i < 6; i++) {
		bufs[i] = malloc(64 * KiB);
		assert_non_null(bufs[i]);
		io[i].buf = bufs[i];
		io[i].len = 64 * KiB;
		io[i].file = t->f;
		io[i].result = 12345;
	}
	io[0].offset = BAD_OFF;				/* bad */
	io[1].offset = 0;				/* good */
	io[2].offset = BAD_OFF + 4096;			/* bad */
	io[2].len = 100;
	io[3].file = local->f;				/* the local file */
	io[3].offset = 4096;
	io[4].offset = DATA_SIZE - 100;			/* good, short at the end */
	io[5].offset = BAD_OFF + BAD_LEN - 1;		/* bad: its last byte */
	assert_int_equal(hm_read_batch(c, io, 6), 0);
	assert_int_equal(io[0].result, -EIO);
	assert_int_equal(io[2].result, -EIO);
	assert_int_equal(io[5].result, -EIO);
	eio += 3;
	small += 3;
	assert_int_equal(io[1].result, 64 * KiB);
	check_content(t, bufs[1], 0, 64 * KiB, "batch, good range");
	assert_int_equal(io[3].result, 64 * KiB);
	check_content(local, bufs[3], 4096, 64 * KiB, "batch, local file");
	assert_int_equal(io[4].result, 100);
	check_content(t, bufs[4], DATA_SIZE - 100, 100, "batch, end of file");
	for (i = 0; i < 6; i++)
		free(bufs[i]);

	/* the connection is still in step, and the daemon there */
	assert_int_equal(hm_ping(c, NULL), 0);
	*guarded = small;
	return eio;
}

/*
 * The whole matrix on the client's transport (the environment set by the
 * caller): for each backend, the bad reads, the statistics, and after the
 * fault is repaired the same ranges read whole again.
 */
static void
run_faults(struct fixture *fx, bool ring)
{
	static const struct {
		int flags, backend, reason;
		const char *name;
	} backends[] = {
		{ 0, HM_BACKEND_PREAD, HM_REASON_NETWORK_FS, "auto (pread: network-fs)" },
		{ HM_O_MMAP, HM_BACKEND_MMAP, HM_REASON_FORCED, "HM_O_MMAP" },
		{ HM_O_PREAD, HM_BACKEND_PREAD, HM_REASON_FORCED, "HM_O_PREAD" },
	};
	hm_client *admin = harness_connect(fx->h), *c = harness_connect(fx->h);
	struct tfile local = tfile_open(c, fx->local, 0, LOCAL_SEED, "local");
	struct tfile t[3];
	size_t b;

	check_backend(&local, HM_BACKEND_MMAP, HM_REASON_LOCAL_FILE);
	for (b = 0; b < 3; b++) {
		t[b] = tfile_open(c, fx->data, backends[b].flags, DATA_SEED, backends[b].name);
		check_backend(&t[b], backends[b].backend, backends[b].reason);
		/* read whole before the fault: the mapping's pages are in */
		check_good(&t[b], BAD_OFF - 4096, 4 * 4096, DATA_SIZE);
	}

	fault(fx, "eio data %u %u", BAD_OFF, BAD_LEN);
	for (b = 0; b < 3; b++) {
		struct counts before = counts_now(fx, admin), after;
		unsigned guarded = 0, eio = run_bad_reads(fx, c, &t[b], &local, &guarded);
		bool mapped = backends[b].backend == HM_BACKEND_MMAP;

		after = counts_now(fx, admin);
		print_message("# %s%s: %u reads answered EIO; daemon: errors_replied +%llu, "
			      "errors_eio +%llu, sigbus_recoveries +%llu; faultfs failed %llu "
			      "requests; reads_ring +%llu\n", backends[b].name, ring ? " (ring)" : "", eio,
			      (unsigned long long)(after.errors_replied - before.errors_replied),
			      (unsigned long long)(after.errors_eio - before.errors_eio),
			      (unsigned long long)(after.sigbus - before.sigbus),
			      (unsigned long long)(after.eios_injected - before.eios_injected),
			      (unsigned long long)(after.reads_ring - before.reads_ring));
		/* the faults really came from the file system */
		assert_true(after.eios_injected > before.eios_injected);
		/* each EIO answer is counted, as an error and as an EIO */
		assert_int_equal(after.errors_replied - before.errors_replied, eio);
		assert_int_equal(after.errors_eio - before.errors_eio, eio);
		/* a mapped file's EIO is a SIGBUS in the guarded copy, once
		 * for each read that copied out of the mapping; no other
		 * backend faults */
		if (mapped)
			assert_int_equal(after.sigbus - before.sigbus, guarded);
		else
			assert_int_equal(after.sigbus - before.sigbus, 0);
	}

	/* repaired: every range reads whole again, through every backend */
	fault(fx, "restore data");
	for (b = 0; b < 3; b++) {
		check_good(&t[b], BAD_OFF, 4096, DATA_SIZE);
		check_good(&t[b], BAD_OFF - 8192, 64 * KiB, DATA_SIZE);
		check_good(&t[b], BAD_OFF, 300 * KiB, DATA_SIZE);
		tfile_close(&t[b]);
	}
	check_good(&local, 0, LOCAL_SIZE, LOCAL_SIZE);
	tfile_close(&local);
	hm_disconnect(c);
	hm_disconnect(admin);
}

/* --- the tests --------------------------------------------------------------- */

static const struct harness_opts opts_default = { .backend = NULL };
static const struct harness_opts opts_poll = {
	.extra = { "--poll-us", "50", NULL },
};

/* Every reply over the socket: no shared region. */
static void
test_eio_socket(void **state)
{
	setenv("HOTMAP_SHM_SIZE", "0", 1);
	run_faults(*state, false);
}

/* The default transport: reads of 4 KiB and more through the region. */
static void
test_eio_shm(void **state)
{
	run_faults(*state, false);
}

/* Polling mode: reads through the request ring. */
static void
test_eio_poll(void **state)
{
	struct fixture *fx = *state;
	hm_client *admin = harness_connect(fx->h);
	uint64_t before = harness_stat(admin, "reads_ring");

	setenv("HOTMAP_POLL", "1", 1);
	run_faults(fx, true);
	assert_true(harness_stat(admin, "reads_ring") > before);
	hm_disconnect(admin);
}

/*
 * The file shrinks under a mapping: reads past the new end are short or
 * empty through every backend (the mapping still covers the old length),
 * new opens see the new size, and once the file is its old size again the
 * mapping reads it whole.
 */
static void
run_truncate(struct fixture *fx)
{
	hm_client *c = harness_connect(fx->h), *admin = harness_connect(fx->h);
	struct tfile local = tfile_open(c, fx->local, 0, LOCAL_SEED, "local");
	struct tfile t[3];
	struct hm_stat st;
	struct hm_view v;
	struct hm_io io[3];
	uint8_t buf[3][4096];
	size_t b;

	t[0] = tfile_open(c, fx->data, HM_O_MMAP, DATA_SEED, "HM_O_MMAP");
	t[1] = tfile_open(c, fx->data, 0, DATA_SEED, "auto");
	t[2] = tfile_open(c, fx->data, HM_O_PREAD, DATA_SEED, "HM_O_PREAD");
	check_backend(&t[0], HM_BACKEND_MMAP, HM_REASON_FORCED);
	/* the whole mapping in memory, so that the truncation has pages to
	 * take away from under it */
	assert_int_equal(hm_warm(t[0].f, 0, DATA_SIZE), DATA_SIZE);
	for (b = 0; b < 3; b++)
		check_good(&t[b], SHORT_SIZE - 50, 64 * KiB, DATA_SIZE);

	fault(fx, "size data %u", SHORT_SIZE);
	for (b = 0; b < 3; b++) {
		assert_int_equal(hm_stat(t[b].f, &st), 0);
		assert_int_equal(st.size, SHORT_SIZE);
		check_good(&t[b], 0, 4096, SHORT_SIZE);
		check_good(&t[b], SHORT_SIZE - 50, 4096, SHORT_SIZE);		/* short */
		check_good(&t[b], SHORT_SIZE - 5000, 300 * KiB, SHORT_SIZE);	/* short */
		check_good(&t[b], SHORT_SIZE, 4096, SHORT_SIZE);		/* 0 */
		check_good(&t[b], SHORT_SIZE + 4096, 100, SHORT_SIZE);		/* 0 */
		check_good(&t[b], DATA_SIZE - 100, 4096, SHORT_SIZE);		/* 0 */
		assert_int_equal(hm_view_range(t[b].f, SHORT_SIZE - 10, 64 * KiB, &v), 0);
		assert_int_equal(v.len, 10);
		check_content(&t[b], v.data, SHORT_SIZE - 10, 10, "view at the new end");
		hm_view_release(&v);
		assert_int_equal(hm_view_range(t[b].f, BAD_OFF + 512 * KiB, 4096, &v), 0);
		assert_int_equal(v.len, 0);
		hm_view_release(&v);
		memset(io, 0, sizeof io);
		io[0] = (struct hm_io){ t[b].f, SHORT_SIZE - 1, 4096, buf[0], 1 };
		io[1] = (struct hm_io){ t[b].f, SHORT_SIZE + MiB / 2, 4096, buf[1], 1 };
		io[2] = (struct hm_io){ local.f, 0, 4096, buf[2], 1 };
		assert_int_equal(hm_read_batch(c, io, 3), 0);
		assert_int_equal(io[0].result, 1);
		check_content(&t[b], buf[0], SHORT_SIZE - 1, 1, "batch at the new end");
		assert_int_equal(io[1].result, 0);
		assert_int_equal(io[2].result, 4096);
		check_content(&local, buf[2], 0, 4096, "batch, local file");
		check_good(&local, LOCAL_SIZE - 4096, 8192, LOCAL_SIZE);
	}
	/* a new open sees (and maps) the new size */
	{
		struct tfile n = tfile_open(c, fx->data, HM_O_MMAP, DATA_SEED, "new HM_O_MMAP");

		assert_int_equal(hm_stat(n.f, &st), 0);
		assert_int_equal(st.size, SHORT_SIZE);
		check_good(&n, SHORT_SIZE - 100, 4096, SHORT_SIZE);
		tfile_close(&n);
	}

	/* back to its old size: every handle, the old mapping included,
	 * reads the whole file again */
	fault(fx, "restore data");
	for (b = 0; b < 3; b++) {
		check_good(&t[b], SHORT_SIZE - 50, 4096, DATA_SIZE);
		check_good(&t[b], DATA_SIZE - 100, 4096, DATA_SIZE);
		check_good(&t[b], BAD_OFF + 512 * KiB, 200 * KiB, DATA_SIZE);
		tfile_close(&t[b]);
	}
	print_message("# truncation: sigbus_recoveries %llu\n",
		      (unsigned long long)harness_stat(admin, "sigbus_recoveries"));
	tfile_close(&local);
	hm_disconnect(c);
	hm_disconnect(admin);
}

static void
test_truncate_mapped(void **state)
{
	run_truncate(*state);
}

static void
test_truncate_mapped_socket(void **state)
{
	setenv("HOTMAP_SHM_SIZE", "0", 1);
	run_truncate(*state);
}

/* --- main: skip where FUSE cannot be used ------------------------------------ */

#define T(fn, o) cmocka_unit_test_prestate_setup_teardown(fn, setup, teardown, (void *)&(o))

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_eio_socket, opts_default),
		T(test_eio_shm, opts_default),
		T(test_eio_poll, opts_poll),
		T(test_truncate_mapped, opts_default),
		T(test_truncate_mapped_socket, opts_default),
	};
	int skip;

	signal(SIGPIPE, SIG_IGN);
	skip = faultfs_skip_status("test_faults");
	if (skip >= 0)
		return skip;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
