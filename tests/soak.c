/* SPDX-License-Identifier: MIT */
/*
 * soak.c - 64 clients, file churn and reloads against one hotmapd for
 * minutes (make soak; not part of make check).
 *
 * Every file's content is harness_fill(seed of the file, offset) in every
 * generation of it, so any byte a client gets can be checked: it must be
 * that byte, or a zero (the kernel hands out zeros while a file is cut and
 * written back; see test_races.c).  Half the files never change: a read of
 * them must be exact and of full length.  The other half are churned: in
 * place, by rename over them, shrunk and grown back, deleted and created
 * again.  Every outcome is counted by kind; an error is accepted only where
 * the churn explains it (the list is in explain_error), and a wrong byte
 * or an unexplained error fails the soak.
 *
 * Meanwhile the daemon gets SIGHUP every few seconds, between two
 * configurations that differ in reloadable keys, and its RssAnon and
 * descriptors are sampled every second.  At the end the RssAnon slope
 * after warm-up (the first quarter, at least 30 s) must be at most a leak
 * of 1 byte per operation would make it (enforced when a minute or more
 * is left after warm-up and the allocator is not instrumented), the
 * descriptors back at their baseline once every client has gone and
 * everything is evicted, and the daemon must exit 0 at SIGTERM (with ASan,
 * LeakSanitizer makes a leak a non-zero exit; under valgrind, exit 99).
 *
 * Environment: SOAK_SECONDS (default 180), SOAK_CLIENTS (default 64),
 * SOAK_VALGRIND=1 (run hotmapd under valgrind), SOAK_SANITIZERS=yes (the
 * build has ASan: the slope is reported, not enforced), HOTMAPD, SOAK_KEEP=1
 * (keep the directory).  Exit 0 when clean, 1 otherwise.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client/hotmap.h"
#include "client/hotmap_admin.h"
#include "tests/harness.h"

#define KiB		1024u
#define NFILES		28
#define NSTABLE		12		/* 0..11 never change */
#define NCHURN		12		/* 12..23 are churned */
#define FIRST_RARE	24		/* 24..27 never change and are seldom opened, so
					 * that idle-unmap finds them idle */
#define CHURN_MAX	(512u * KiB + 777u)	/* largest churned file */
#define MAX_READ	(256u * KiB)
#define PER_CLIENT	4		/* files a client holds open at most */
#define BATCH_MAX	16
#define HUP_SECONDS	3

/* --- what is counted ------------------------------------------------------ */

enum op {
	OP_OPEN_PATH, OP_OPEN_FD, OP_PREAD_AUTO, OP_PREAD_MMAP, OP_PREAD_PREAD,
	OP_VIEW, OP_BATCH, OP_BATCH_IO, OP_STAT, OP_WARM, OP_CLOSE, OP_PING,
	OP_STATS, OP_STATS_RESET, OP_FILES, OP_EVICT_PATH, OP_EVICT_ALL, OP_CONFIG,
	OP_RECONNECT, OP_DISCONNECT_OPEN, OP_SET_RECONNECT, OP_CHILD_KILL,
	OP_CHILD_SHUTDOWN, OP_N
};

static const char *const op_name[OP_N] = {
	"open-by-path", "open-by-fd", "pread(auto)", "pread(mmap)", "pread(pread)",
	"view", "batch", "batch-io", "stat", "warm", "close", "ping",
	"stats", "stats-reset", "files", "evict-path", "evict-all", "config",
	"reconnect", "disconnect-with-open-files", "set-reconnect",
	"child-sigkill-mid-read", "child-shutdown-mid-read",
};

enum churn {
	CH_REWRITE, CH_RENAME, CH_TRUNCATE, CH_DELETE, CH_CREATE, CH_N
};

static const char *const churn_name[CH_N] = {
	"rewrite-in-place", "rename-over", "truncate-shrink-regrow", "delete", "create",
};

#define NERRNO 160

static struct {
	atomic_ullong ops[OP_N];
	atomic_ullong errs[OP_N][NERRNO];	/* explained errors by errno */
	atomic_ullong churn[CH_N];
	atomic_ullong bytes_verified;
	atomic_ullong zero_bytes;	/* bytes that were zero where the file has another */
	atomic_ullong zero_reads;	/* reads with such bytes */
	atomic_ullong short_reads;	/* short before the file's largest end: churn */
	atomic_ullong full_reads;
	atomic_ullong failures;		/* wrong bytes, unexplained errors */
	atomic_ullong reset_sums[8];	/* counters taken away by stats-reset */
	atomic_ullong reloads;
	atomic_ullong auto_mapped, auto_forced_pread, auto_over_budget;	/* hm_stat of auto opens */
} ctr;

/* daemon counters reported at the end; stats-reset adds theirs to reset_sums */
static const char *const daemon_keys[8] = {
	"evictions", "evictions_lru", "evictions_idle", "sigbus_recoveries",
	"stale_replaced", "budget_fallbacks", "requests_read", "errors_replied",
};

static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

static void
failure(const char *fmt, ...)
{
	va_list ap;

	if (atomic_fetch_add(&ctr.failures, 1) >= 40)
		return;
	pthread_mutex_lock(&print_lock);
	fputs("soak: FAIL: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	pthread_mutex_unlock(&print_lock);
}

/* --- the run ------------------------------------------------------------ */

struct file_def {
	char path[160];
	uint64_t seed;
	uint64_t size;		/* stable files: their size; churned: CHURN_MAX */
	bool stable;
};

static struct {
	char dir[96];		/* short: the socket's path must fit sun_path */
	char root[128];
	char sock[104];
	char conf[128];		/* the file hotmapd reads, replaced by A or B */
	char log[128];
	char vglog[128];
	const char *self;	/* this program, for the children */
	pid_t pid;
	int seconds, nclients;
	bool valgrind, sanitizers;
	struct file_def files[NFILES];
	atomic_bool stop;
	pthread_mutex_t connect_lock;
} run = { .connect_lock = PTHREAD_MUTEX_INITIALIZER };

static const char *const conf_text[2] = {
	/* A: a tight budget and few cached files, so that LRU eviction
	 * happens */
	"# soak configuration A\n"
	"[hotmapd]\n"
	"max-mapped-bytes = 2M\n"
	"max-open-files = 12\n"
	"idle-unmap = 0\n"
	"warm = none\n"
	"backend = auto\n"
	"poll-us = 0\n",
	/* B: a larger budget, idle unmapping, eager warming, pread by
	 * default, the ring polled */
	"# soak configuration B\n"
	"[hotmapd]\n"
	"max-mapped-bytes = 5M\n"
	"max-open-files = 64\n"
	"idle-unmap = 1\n"
	"warm = populate\n"
	"backend = pread\n"
	"poll-us = 20\n",
};

static void
die(const char *fmt, ...)
{
	va_list ap;

	fputs("soak: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (run.pid > 0)
		kill(run.pid, SIGKILL);
	exit(2);
}

static void
write_whole(const char *path, const void *p, size_t len)
{
	char tmp[PATH_MAX + 8];
	int fd;

	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, p, len) != (ssize_t)len || close(fd) < 0)
		die("write %s: %s", tmp, strerror(errno));
	if (rename(tmp, path) < 0)
		die("rename %s: %s", tmp, strerror(errno));
}

/* Writes the file's canonical bytes [from, to) through fd. */
static int
fill_range(int fd, const struct file_def *fd_def, uint64_t from, uint64_t to)
{
	static _Thread_local uint8_t buf[64 * KiB];

	while (from < to) {
		size_t n = to - from < sizeof buf ? (size_t)(to - from) : sizeof buf;

		harness_fill(buf, n, fd_def->seed, from);
		if (pwrite(fd, buf, n, (off_t)from) != (ssize_t)n)
			return -errno;
		from += n;
	}
	return 0;
}

static void
create_file(const struct file_def *f, const char *path, uint64_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || fill_range(fd, f, 0, size) < 0 || close(fd) < 0)
		die("create %s: %s", path, strerror(errno));
}

/* --- checking what a read gave ------------------------------------------- */

/* got[0, n) read at off of file fid, for a request of len bytes. */
static void
verify_read(int fid, uint64_t off, size_t len, const uint8_t *got, ssize_t n, const char *what)
{
	static _Thread_local uint8_t want[MAX_READ];
	const struct file_def *f = &run.files[fid];
	uint64_t zeros = 0;
	size_t i;

	/* past the end (now and then asked for) gives 0 */
	if (n < 0 || (size_t)n > len || (n > 0 && off + (uint64_t)n > f->size)) {
		failure("%s: file %d: %zu at %" PRIu64 " gave %zd (largest end %" PRIu64 ")", what,
			fid, len, off, n, f->size);
		return;
	}
	harness_fill(want, (size_t)n, f->seed, off);
	for (i = 0; i < (size_t)n; i++) {
		if (got[i] == want[i])
			continue;
		if (got[i] != 0 || f->stable) {
			failure("%s: file %d%s: %zu at %" PRIu64 ": byte +%zu is 0x%02x, not 0x%02x",
				what, fid, f->stable ? " (never changed)" : "", len, off, i, got[i],
				want[i]);
			return;
		}
		zeros++;
	}
	if (zeros > 0) {
		atomic_fetch_add(&ctr.zero_bytes, zeros);
		atomic_fetch_add(&ctr.zero_reads, 1);
	}
	if ((size_t)n < len && off + (uint64_t)n < f->size) {
		/* the end moved under the read */
		if (f->stable) {
			failure("%s: file %d (never changed, %" PRIu64 " bytes): %zu at %" PRIu64
				" gave only %zd", what, fid, f->size, len, off, n);
			return;
		}
		atomic_fetch_add(&ctr.short_reads, 1);
	} else {
		atomic_fetch_add(&ctr.full_reads, 1);
	}
	atomic_fetch_add(&ctr.bytes_verified, (uint64_t)n);
}

/*
 * Whether the churn explains error e of op on file fid (-1: no file), and
 * counts it; otherwise a failure.  What is explained:
 *  - opens of a churned file: ENOENT (deleted, not yet created again);
 *    EINVAL with HM_O_MMAP (it was empty: being created or cut to 0);
 *  - evict of a path: ENOENT (not cached, or deleted meanwhile);
 * Nothing else: a handle keeps reading the file it opened whatever
 * happens to the name, and the daemon never goes away during the run.
 */
static void
explain_error(enum op op, int fid, int flags, int e, const char *detail)
{
	bool churned = fid >= 0 && !run.files[fid].stable;
	bool ok = false;

	if ((op == OP_OPEN_PATH || op == OP_OPEN_FD) && churned)
		ok = e == ENOENT || (e == EINVAL && (flags & HM_O_MMAP));
	else if (op == OP_EVICT_PATH)
		ok = e == ENOENT;
	if (ok && e > 0 && e < NERRNO) {
		atomic_fetch_add(&ctr.errs[op][e], 1);
		return;
	}
	failure("%s of file %d (flags 0x%x): %s (%s)", op_name[op], fid, (unsigned)flags,
		strerror(e), detail);
}

/* --- clients -------------------------------------------------------------- */

enum transport { TR_REGION, TR_SOCKET, TR_RING, TR_N };

struct client {
	int id;
	enum transport tr;
	pthread_t thread;
	hm_client *c;
	hm_file *f[PER_CLIENT];
	int fid[PER_CLIENT];
	int flags[PER_CLIENT];
	uint64_t rng;
	uint8_t *buf;		/* BATCH_MAX * MAX_READ */
};

/* The transport is chosen at connect, from the environment: connects are
 * serialised, and nothing else reads the environment meanwhile. */
static hm_client *
client_connect(enum transport tr)
{
	hm_client *c;

	pthread_mutex_lock(&run.connect_lock);
	setenv("HOTMAP_SHM_SIZE", tr == TR_SOCKET ? "0" : "2M", 1);
	setenv("HOTMAP_POLL", tr == TR_RING ? "1" : "0", 1);
	setenv("HOTMAP_POLL_US", "20", 1);
	c = hm_connect(run.sock);
	pthread_mutex_unlock(&run.connect_lock);
	return c;
}

static unsigned
rnd(struct client *cl, unsigned n)
{
	return (unsigned)(harness_rand(&cl->rng) % n);
}

static void
count(enum op op)
{
	atomic_fetch_add(&ctr.ops[op], 1);
}

static int
pick_open(struct client *cl)
{
	int slots[PER_CLIENT], n = 0, i;

	for (i = 0; i < PER_CLIENT; i++)
		if (cl->f[i] != NULL)
			slots[n++] = i;
	return n == 0 ? -1 : slots[rnd(cl, (unsigned)n)];
}

static void
do_close(struct client *cl, int s)
{
	count(OP_CLOSE);
	if (hm_close(cl->f[s]) < 0)
		failure("close of file %d: %s (%s)", cl->fid[s], strerror(errno), hm_last_error());
	cl->f[s] = NULL;
}

static void
do_open(struct client *cl)
{
	static const int backends[] = { 0, HM_O_MMAP, HM_O_PREAD };
	int s, fid = rnd(cl, 400) == 0 ? FIRST_RARE + (int)rnd(cl, NFILES - FIRST_RARE) :
					   (int)rnd(cl, FIRST_RARE);
	int flags = backends[rnd(cl, 3)] | (rnd(cl, 4) == 0 ? HM_O_WARM : 0);
	bool by_path = rnd(cl, 2) == 0;
	enum op op = by_path ? OP_OPEN_PATH : OP_OPEN_FD;
	hm_file *f;

	for (s = 0; s < PER_CLIENT && cl->f[s] != NULL; s++)
		;
	if (s == PER_CLIENT) {
		s = (int)rnd(cl, PER_CLIENT);
		do_close(cl, s);
	}
	if (by_path)
		flags |= HM_O_PATH;
	count(op);
	f = hm_open(cl->c, run.files[fid].path, flags);
	if (f == NULL) {
		explain_error(op, fid, flags, errno, hm_last_error());
		return;
	}
	cl->f[s] = f;
	cl->fid[s] = fid;
	cl->flags[s] = flags;
}

static uint64_t
rand_offset(struct client *cl, int fid)
{
	uint64_t size = run.files[fid].size;

	/* now and then at or past the end */
	if (rnd(cl, 32) == 0)
		return size - rnd(cl, 64) + rnd(cl, 128);
	return harness_rand(&cl->rng) % size;
}

static size_t
rand_len(struct client *cl)
{
	switch (rnd(cl, 4)) {
	case 0:
		return 1 + rnd(cl, 512);		/* socket, under the threshold */
	case 1:
		return 4096 * (1 + rnd(cl, 8));
	default:
		return 1 + rnd(cl, MAX_READ);
	}
}

static void
do_pread(struct client *cl, int s)
{
	enum op op = (cl->flags[s] & HM_O_MMAP) ? OP_PREAD_MMAP :
		     (cl->flags[s] & HM_O_PREAD) ? OP_PREAD_PREAD : OP_PREAD_AUTO;
	uint64_t off = rand_offset(cl, cl->fid[s]);
	size_t len = rand_len(cl);
	ssize_t n;

	count(op);
	memset(cl->buf, 0xa5, len);	/* a read that wrote nothing must not pass as zeros */
	n = hm_pread(cl->f[s], cl->buf, len, off);
	if (n < 0) {
		explain_error(op, cl->fid[s], cl->flags[s], errno, hm_last_error());
		return;
	}
	verify_read(cl->fid[s], off, len, cl->buf, n, op_name[op]);
}

static void
do_view(struct client *cl, int s)
{
	struct hm_view v;
	uint64_t off = rand_offset(cl, cl->fid[s]);
	size_t len = rand_len(cl);

	count(OP_VIEW);
	if (hm_view_range(cl->f[s], off, len, &v) < 0) {
		explain_error(OP_VIEW, cl->fid[s], cl->flags[s], errno, hm_last_error());
		hm_view_release(&v);
		return;
	}
	verify_read(cl->fid[s], off, len, v.data, (ssize_t)v.len, "view");
	hm_view_release(&v);
}

static void
do_batch(struct client *cl)
{
	struct hm_io io[BATCH_MAX];
	int fids[BATCH_MAX], flags[BATCH_MAX];
	size_t n = 1 + rnd(cl, BATCH_MAX), i;

	for (i = 0; i < n; i++) {
		int s = pick_open(cl);

		fids[i] = cl->fid[s];
		flags[i] = cl->flags[s];
		io[i] = (struct hm_io){
			.file = cl->f[s],
			.offset = rand_offset(cl, cl->fid[s]),
			.len = rand_len(cl) / 4 + 1,
			.buf = cl->buf + i * MAX_READ,
		};
		memset(io[i].buf, 0xa5, io[i].len);
	}
	count(OP_BATCH);
	if (hm_read_batch(cl->c, io, n) < 0) {
		explain_error(OP_BATCH, -1, 0, errno, hm_last_error());
		return;
	}
	for (i = 0; i < n; i++) {
		count(OP_BATCH_IO);
		if (io[i].result < 0)
			explain_error(OP_BATCH_IO, fids[i], flags[i], (int)-io[i].result, "in a batch");
		else
			verify_read(fids[i], io[i].offset, io[i].len, io[i].buf, io[i].result,
				    "batch");
	}
}

static void
do_stat(struct client *cl, int s)
{
	const struct file_def *f = &run.files[cl->fid[s]];
	struct hm_stat st;

	count(OP_STAT);
	if (hm_stat(cl->f[s], &st) < 0) {
		explain_error(OP_STAT, cl->fid[s], cl->flags[s], errno, hm_last_error());
		return;
	}
	if (st.size > f->size || (f->stable && st.size != f->size) ||
	    (st.backend != HM_BACKEND_MMAP && st.backend != HM_BACKEND_PREAD) ||
	    ((cl->flags[s] & HM_O_MMAP) && st.backend != HM_BACKEND_MMAP) ||
	    ((cl->flags[s] & HM_O_PREAD) && st.backend != HM_BACKEND_PREAD))
		failure("stat of file %d (flags 0x%x): size %" PRIu64 ", backend %d (%s)",
			cl->fid[s], (unsigned)cl->flags[s], st.size, st.backend, st.reason_text);
	/* what the configuration in force made of an auto open */
	if ((cl->flags[s] & (HM_O_MMAP | HM_O_PREAD)) == 0) {
		if (st.backend == HM_BACKEND_MMAP)
			atomic_fetch_add(&ctr.auto_mapped, 1);
		else if (st.reason == HM_REASON_FORCED)
			atomic_fetch_add(&ctr.auto_forced_pread, 1);
		else if (st.reason == HM_REASON_OVER_BUDGET)
			atomic_fetch_add(&ctr.auto_over_budget, 1);
	}
}

static void
do_warm(struct client *cl, int s)
{
	uint64_t off = rand_offset(cl, cl->fid[s]);
	uint64_t len = 1 + harness_rand(&cl->rng) % (1024 * KiB);
	ssize_t n;

	count(OP_WARM);
	n = hm_warm(cl->f[s], off, len);
	if (n < 0)
		explain_error(OP_WARM, cl->fid[s], cl->flags[s], errno, hm_last_error());
	else if ((uint64_t)n > len || (n > 0 && off + (uint64_t)n > run.files[cl->fid[s]].size))
		failure("warm of file %d: %" PRIu64 " at %" PRIu64 " gave %zd", cl->fid[s], len,
			off, n);
}

static void
stats_cb(const char *key, uint64_t value, const char *text, void *arg)
{
	unsigned *keys = arg;

	(*keys)++;
}

static void
reset_cb(const char *key, uint64_t value, const char *text, void *arg)
{
	int i;

	for (i = 0; i < 8; i++)
		if (strcmp(key, daemon_keys[i]) == 0)
			atomic_fetch_add(&ctr.reset_sums[i], value);
}

static void
files_cb(const struct hm_file_info *info, void *arg)
{
	unsigned *n = arg;

	if (info->path == NULL || info->resident_pct > 100)
		failure("files: a bad entry (%s, %d%%)", info->path ? info->path : "(null)",
			info->resident_pct);
	(*n)++;
}

static void
config_cb(const char *key, const char *value, const char *source, void *arg)
{
	unsigned *n = arg;

	(*n)++;
}

static void
do_admin(struct client *cl, unsigned which)
{
	unsigned n = 0;
	char path[PATH_MAX];
	struct hm_evicted ev;
	struct hm_ping ping;

	switch (which) {
	case 0:
		count(OP_PING);
		if (hm_ping(cl->c, &ping) < 0)
			explain_error(OP_PING, -1, 0, errno, hm_last_error());
		else if (ping.pid != (uint32_t)run.pid && !run.valgrind)
			failure("ping: pid %u, not %d", ping.pid, (int)run.pid);
		break;
	case 1:
		count(OP_STATS);
		if (hm_stats(cl->c, stats_cb, &n) < 0)
			explain_error(OP_STATS, -1, 0, errno, hm_last_error());
		else if (n < 20)
			failure("stats: only %u keys", n);
		break;
	case 2:
		count(OP_FILES);
		if (hm_files(cl->c, files_cb, &n) < 0)
			explain_error(OP_FILES, -1, 0, errno, hm_last_error());
		break;
	case 3: {
		int fid = (int)rnd(cl, NFILES);

		count(OP_EVICT_PATH);
		if (hm_evict(cl->c, run.files[fid].path, &ev) < 0)
			explain_error(OP_EVICT_PATH, fid, 0, errno, hm_last_error());
		break;
	}
	case 4:
		count(OP_EVICT_ALL);
		if (hm_evict(cl->c, NULL, &ev) < 0)
			explain_error(OP_EVICT_ALL, -1, 0, errno, hm_last_error());
		break;
	case 5:
		count(OP_CONFIG);
		if (hm_config(cl->c, config_cb, &n, path, sizeof path) < 0)
			explain_error(OP_CONFIG, -1, 0, errno, hm_last_error());
		else if (strcmp(path, run.conf) != 0 || n < 10)
			failure("config: %u keys from '%s'", n, path);
		break;
	case 6:
		count(OP_STATS_RESET);
		if (hm_stats_reset(cl->c, reset_cb, NULL) < 0)
			explain_error(OP_STATS_RESET, -1, 0, errno, hm_last_error());
		break;
	}
}

/* --- children that go away in the middle of a request --------------------- */

/*
 * soak --child MODE SOCKET PATH: connects, opens PATH, reads it in a loop
 * and writes one byte to descriptor 3 once the loop runs.  MODE kill: the
 * parent then kills it with SIGKILL.  MODE shutdown: a second thread shuts
 * the connection's socket down under the reads, and the child exits 0 once
 * the reads have failed (the library must neither crash nor hang).
 */
struct child_reader {
	hm_file *f;
	int err;
};

static void *
child_read_loop(void *arg)
{
	struct child_reader *r = arg;
	static uint8_t buf[MAX_READ];
	uint64_t off = 0;

	for (;;) {
		ssize_t n = hm_pread(r->f, buf, sizeof buf, off);

		if (n < 0) {
			r->err = errno;
			return NULL;
		}
		off = n == 0 ? 0 : off + (uint64_t)n;
	}
}

static int
child_main(int argc, char **argv)
{
	struct child_reader r = { 0 };
	uint8_t byte;
	bool shutdown_mode;
	pthread_t t;
	hm_client *c;
	int sock = -1;
	DIR *d;
	struct dirent *de;

	if (argc != 5)
		return 2;
	shutdown_mode = strcmp(argv[2], "shutdown") == 0;
	c = hm_connect(argv[3]);
	if (c == NULL)
		return 3;
	r.f = hm_open(c, argv[4], 0);
	if (r.f == NULL)
		return 4;
	/* the connection's socket: the only one this process has */
	d = opendir("/proc/self/fd");
	while (d != NULL && (de = readdir(d)) != NULL) {
		struct stat st;
		int fd = atoi(de->d_name);

		if (fd > 3 && fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode))
			sock = fd;
	}
	if (d != NULL)
		closedir(d);
	if (sock < 0 || pthread_create(&t, NULL, child_read_loop, &r) != 0)
		return 5;
	usleep(500);
	if (write(3, "r", 1) != 1)
		return 6;
	if (!shutdown_mode)
		for (;;)
			pause();
	usleep(200 + (unsigned)(getpid() % 3000));
	shutdown(sock, SHUT_RDWR);
	pthread_join(t, NULL);
	/* a lost connection reports itself, and keeps doing so */
	if (r.err == 0 || hm_pread(r.f, &byte, 1, 0) >= 0)
		return 7;
	hm_close(r.f);
	hm_disconnect(c);	/* frees everything: LeakSanitizer checks it */
	return 0;
}

static void
do_child(struct client *cl, bool shutdown_mode)
{
	enum op op = shutdown_mode ? OP_CHILD_SHUTDOWN : OP_CHILD_KILL;
	int fid = (int)rnd(cl, NSTABLE), p[2], status = 0;
	char *argv[] = { (char *)run.self, "--child", shutdown_mode ? "shutdown" : "kill",
			 run.sock, run.files[fid].path, NULL };
	struct pollfd pfd;
	char b;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		die("pipe: %s", strerror(errno));
	count(op);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		/* only async-signal-safe calls between fork and exec */
		if (dup2(p[1], 3) < 0)
			_exit(126);
		execv(run.self, argv);
		_exit(127);
	}
	close(p[1]);
	pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };
	if (poll(&pfd, 1, run.valgrind ? 60000 : 10000) != 1 || read(p[0], &b, 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		close(p[0]);
		failure("%s: the child did not start reading (status 0x%x)", op_name[op], status);
		return;
	}
	close(p[0]);
	if (!shutdown_mode) {
		usleep(rnd(cl, 3000));
		kill(pid, SIGKILL);
	}
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid: %s", strerror(errno));
	if (shutdown_mode ? !(WIFEXITED(status) && WEXITSTATUS(status) == 0) :
			    !(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL))
		failure("%s: child status 0x%x", op_name[op], status);
}

static void
reconnect(struct client *cl, bool close_files)
{
	int s;

	if (close_files) {
		count(OP_RECONNECT);
		for (s = 0; s < PER_CLIENT; s++)
			if (cl->f[s] != NULL)
				do_close(cl, s);
	} else {
		/* the daemon closes what the client left open */
		count(OP_DISCONNECT_OPEN);
	}
	hm_disconnect(cl->c);
	memset(cl->f, 0, sizeof cl->f);
	cl->c = client_connect(cl->tr);
	if (cl->c == NULL)
		die("client %d: connect: %s", cl->id, strerror(errno));
	if (cl->id % 2 == 1) {
		count(OP_SET_RECONNECT);
		if (hm_set_reconnect(cl->c, 2000) < 0)
			failure("set-reconnect: %s", strerror(errno));
	}
}

static void *
client_main(void *arg)
{
	struct client *cl = arg;
	int s;

	while (!atomic_load_explicit(&run.stop, memory_order_relaxed)) {
		unsigned r = rnd(cl, 1000);

		s = pick_open(cl);
		if (s < 0 || r < 100) {
			do_open(cl);
			continue;
		}
		if (r < 140)
			do_close(cl, s);
		else if (r < 500)
			do_pread(cl, s);
		else if (r < 620)
			do_view(cl, s);
		else if (r < 720)
			do_batch(cl);
		else if (r < 780)
			do_stat(cl, s);
		else if (r < 810)
			do_warm(cl, s);
		else if (r < 825)
			do_admin(cl, 0);
		else if (r < 832)
			do_admin(cl, 1);
		else if (r < 838)
			do_admin(cl, 2);
		else if (r < 846)
			do_admin(cl, 3);
		else if (r < 848 && rnd(cl, 16) == 0)
			do_admin(cl, 4);
		else if (r < 853)
			do_admin(cl, 5);
		else if (r < 854 && rnd(cl, 4) == 0)
			do_admin(cl, 6);
		else if (r < 858)
			reconnect(cl, r < 856);
		else if (r < 862 && cl->id % 8 == 0)
			do_child(cl, cl->id % 16 == 8);
		else
			do_pread(cl, s);
	}
	for (s = 0; s < PER_CLIENT; s++)
		if (cl->f[s] != NULL && rnd(cl, 2) == 0)
			do_close(cl, s);
	hm_disconnect(cl->c);
	cl->c = NULL;
	return NULL;
}

/* --- churn ---------------------------------------------------------------- */

static void *
churn_main(void *arg)
{
	uint64_t rng = 4242;
	bool gone[NFILES] = { false };
	char tmp[200];

	while (!atomic_load(&run.stop)) {
		int fid = NSTABLE + (int)(harness_rand(&rng) % NCHURN);
		const struct file_def *f = &run.files[fid];
		uint64_t size = harness_rand(&rng) % (CHURN_MAX + 1);
		unsigned what = (unsigned)(harness_rand(&rng) % 10);
		int fd;

		if (harness_rand(&rng) % 16 == 0)
			size = 0;
		if (gone[fid]) {
			create_file(f, f->path, size);
			gone[fid] = false;
			atomic_fetch_add(&ctr.churn[CH_CREATE], 1);
		} else if (what < 3) {
			/* the same bytes over a range, same inode */
			struct stat st;
			uint64_t from, to;

			fd = open(f->path, O_WRONLY | O_CLOEXEC);
			if (fd < 0 || fstat(fd, &st) < 0)
				die("rewrite %s: %s", f->path, strerror(errno));
			from = st.st_size > 0 ? harness_rand(&rng) % (uint64_t)st.st_size : 0;
			to = from + harness_rand(&rng) % (128 * KiB);
			if (to > (uint64_t)st.st_size)
				to = (uint64_t)st.st_size;
			if (fill_range(fd, f, from, to) < 0)
				die("rewrite %s: %s", f->path, strerror(errno));
			close(fd);
			atomic_fetch_add(&ctr.churn[CH_REWRITE], 1);
		} else if (what < 5) {
			snprintf(tmp, sizeof tmp, "%s.new", f->path);
			create_file(f, tmp, size);
			if (rename(tmp, f->path) < 0)
				die("rename %s: %s", tmp, strerror(errno));
			atomic_fetch_add(&ctr.churn[CH_RENAME], 1);
		} else if (what < 8) {
			struct stat st;

			fd = open(f->path, O_WRONLY | O_CLOEXEC);
			if (fd < 0 || fstat(fd, &st) < 0)
				die("truncate %s: %s", f->path, strerror(errno));
			if (ftruncate(fd, (off_t)(harness_rand(&rng) % ((uint64_t)st.st_size + 1))) <
				    0 ||
			    fstat(fd, &st) < 0 || fill_range(fd, f, (uint64_t)st.st_size, size) < 0)
				die("truncate %s: %s", f->path, strerror(errno));
			close(fd);
			atomic_fetch_add(&ctr.churn[CH_TRUNCATE], 1);
		} else {
			if (unlink(f->path) < 0)
				die("unlink %s: %s", f->path, strerror(errno));
			gone[fid] = true;
			atomic_fetch_add(&ctr.churn[CH_DELETE], 1);
		}
		usleep(2000 + (unsigned)(harness_rand(&rng) % 8000));
	}
	return NULL;
}

/* --- the daemon ------------------------------------------------------------ */

static void
start_daemon(const char *prog)
{
	const char *argv[24];
	int i = 0, fd, status;
	int64_t deadline;

	if (run.valgrind) {
		static char logopt[160];

		snprintf(logopt, sizeof logopt, "--log-file=%s", run.vglog);
		argv[i++] = "valgrind";
		argv[i++] = "--error-exitcode=99";
		argv[i++] = "--leak-check=full";
		argv[i++] = "--errors-for-leak-kinds=definite,indirect";
		argv[i++] = "--show-leak-kinds=definite,indirect";
		argv[i++] = logopt;
	}
	argv[i++] = prog;
	argv[i++] = "--foreground";
	argv[i++] = "--config";
	argv[i++] = run.conf;
	argv[i++] = "--socket";
	argv[i++] = run.sock;
	argv[i++] = "--root";
	argv[i++] = run.root;
	argv[i] = NULL;
	run.pid = fork();
	if (run.pid < 0)
		die("fork: %s", strerror(errno));
	if (run.pid == 0) {
		fd = open(run.log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd < 0 || dup2(fd, 0) < 0)
			_exit(126);
		unsetenv("LISTEN_FDS");
		unsetenv("LISTEN_PID");
		unsetenv("NOTIFY_SOCKET");
		unsetenv("WATCHDOG_USEC");
		unsetenv("JOURNAL_STREAM");
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	deadline = harness_now_ms() + (run.valgrind ? 120000 : 30000);
	while (!harness_socket_accepts(run.sock)) {
		if (waitpid(run.pid, &status, WNOHANG) == run.pid) {
			run.pid = 0;
			die("hotmapd exited before listening (status 0x%x); see %s", status, run.log);
		}
		if (harness_now_ms() > deadline)
			die("hotmapd did not listen in time; see %s", run.log);
		harness_sleep_ms(20);
	}
}

struct sample {
	double t;		/* seconds since the clients started */
	long rss_kib;
	int fds;
};

/* The daemon's descriptors; with out, their links, one a line. */
static int
daemon_fds(char *out, size_t outlen)
{
	char path[64], link[PATH_MAX], target[PATH_MAX];
	struct dirent *de;
	size_t used = 0;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof path, "/proc/%d/fd", (int)run.pid);
	d = opendir(path);
	if (d == NULL)
		return -1;
	if (out != NULL)
		out[0] = '\0';
	while ((de = readdir(d)) != NULL) {
		ssize_t k;

		if (de->d_name[0] == '.')
			continue;
		n++;
		if (out == NULL)
			continue;
		snprintf(link, sizeof link, "%s/%s", path, de->d_name);
		k = readlink(link, target, sizeof target - 1);
		target[k < 0 ? 0 : k] = '\0';
		if (used < outlen)
			used += (size_t)snprintf(out + used, outlen - used, "%s -> %s\n", de->d_name,
						 target);
	}
	closedir(d);
	return n;
}

static struct {
	struct sample *s;
	size_t n, cap;
	int64_t t0;
} samples;

static void *
sampler_main(void *arg)
{
	int64_t next = samples.t0;

	while (!atomic_load(&run.stop)) {
		struct sample sm = {
			.t = (double)(harness_now_ms() - samples.t0) / 1000.0,
			.rss_kib = harness_rss_anon_kib(run.pid),
			.fds = daemon_fds(NULL, 0),
		};

		if (samples.n < samples.cap)
			samples.s[samples.n++] = sm;
		next += 1000;
		while (harness_now_ms() < next && !atomic_load(&run.stop))
			harness_sleep_ms(50);
	}
	return NULL;
}

/* The value of max-mapped-bytes in force. */
static void
find_mapped_cb(const char *key, const char *value, const char *source, void *arg)
{
	if (strcmp(key, "max-mapped-bytes") == 0)
		snprintf(arg, 64, "%s", value);
}

static int
config_value(hm_client *c, char *value)
{
	char path[PATH_MAX];

	value[0] = '\0';
	return hm_config(c, find_mapped_cb, value, path, sizeof path);
}

/* SIGHUP with configuration k in place; waits until it is in force and the
 * daemon answers. */
static void
reload(hm_client *admin, int k, const char *value_a)
{
	int64_t deadline = harness_now_ms() + (run.valgrind ? 60000 : 10000);
	char value[64];

	write_whole(run.conf, conf_text[k], strlen(conf_text[k]));
	if (kill(run.pid, SIGHUP) < 0)
		die("SIGHUP: %s", strerror(errno));
	for (;;) {
		if (config_value(admin, value) < 0) {
			failure("reload %d: config: %s", k, strerror(errno));
			return;
		}
		if ((strcmp(value, value_a) == 0) == (k == 0))
			break;
		if (harness_now_ms() > deadline) {
			failure("reload to %c: max-mapped-bytes still %s after %d s", 'A' + k, value,
				run.valgrind ? 60 : 10);
			return;
		}
		harness_sleep_ms(20);
	}
	if (hm_ping(admin, NULL) < 0) {
		failure("ping after reload: %s", strerror(errno));
		return;
	}
	atomic_fetch_add(&ctr.reloads, 1);
}

/* --- the report ------------------------------------------------------------ */

static void
final_stat_cb(const char *key, uint64_t value, const char *text, void *arg)
{
	uint64_t *v = arg;
	int i;

	for (i = 0; i < 8; i++)
		if (strcmp(key, daemon_keys[i]) == 0)
			v[i] = value;
}

/* Least squares over the samples from t >= from: slope per minute. */
static double
slope_per_minute(size_t first, double *min, double *max)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0;
	size_t i;

	*min = 1e18;
	*max = -1e18;
	for (i = first; i < samples.n; i++) {
		double x = samples.s[i].t / 60.0, y = (double)samples.s[i].rss_kib;

		sx += x;
		sy += y;
		sxx += x * x;
		sxy += x * y;
		n++;
		if (y < *min)
			*min = y;
		if (y > *max)
			*max = y;
	}
	if (n < 3 || n * sxx - sx * sx == 0)
		return 0;
	return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

static void
remove_tree(const char *dir)
{
	char path[PATH_MAX + 256];
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d != NULL && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		if (de->d_type == DT_DIR)
			remove_tree(path);
		else
			unlink(path);
	}
	if (d != NULL)
		closedir(d);
	rmdir(dir);
}

int
main(int argc, char **argv)
{
	const char *env, *prog;
	struct client *cl;
	pthread_t churn, sampler;
	hm_client *admin;
	char value_a[64], extra[16384];
	uint64_t dstat[8] = { 0 };
	uint64_t total_ops = 0, total_errs = 0;
	double slope, rmin, rmax, threshold, minutes, window;
	size_t first;
	int i, k, fd_base, fd_end = -1, status = -1;
	int64_t t_end, next_hup;
	struct hm_evicted ev = { 0 };
	bool slope_ok, fds_ok, exit_ok;

	if (argc > 1 && strcmp(argv[1], "--child") == 0)
		return child_main(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);

	env = getenv("SOAK_SECONDS");
	run.seconds = env != NULL && *env != '\0' ? atoi(env) : 180;
	env = getenv("SOAK_CLIENTS");
	run.nclients = env != NULL && *env != '\0' ? atoi(env) : 64;
	if (run.seconds < 10 || run.nclients < 1 || run.nclients > 1024)
		die("SOAK_SECONDS must be 10 or more, SOAK_CLIENTS 1 to 1024");
	env = getenv("SOAK_VALGRIND");
	run.valgrind = env != NULL && strcmp(env, "1") == 0;
	if (run.valgrind && system("command -v valgrind >/dev/null 2>&1") != 0)
		die("SOAK_VALGRIND=1 needs valgrind (apt-get install valgrind)");
	env = getenv("SOAK_SANITIZERS");
	run.sanitizers = env != NULL && strcmp(env, "yes") == 0;
	prog = getenv("HOTMAPD");
	if (prog == NULL || *prog == '\0')
		prog = "daemon/hotmapd";
	/* the children are this program again; through libtool's wrapper,
	 * /proc/self/exe is the real program and the environment is set */
	run.self = realpath("/proc/self/exe", NULL);
	if (run.self == NULL)
		die("/proc/self/exe: %s", strerror(errno));

	env = getenv("TMPDIR");
	if (env == NULL || *env == '\0' || strlen(env) > 60)
		env = "/tmp";
	snprintf(run.dir, sizeof run.dir, "%.60s/hotmap-soak.XXXXXX", env);
	if (mkdtemp(run.dir) == NULL)
		die("mkdtemp: %s", strerror(errno));
	snprintf(run.root, sizeof run.root, "%.90s/root", run.dir);
	snprintf(run.sock, sizeof run.sock, "%.90s/sock", run.dir);
	snprintf(run.conf, sizeof run.conf, "%.90s/hotmapd.conf", run.dir);
	snprintf(run.log, sizeof run.log, "%.90s/hotmapd.log", run.dir);
	snprintf(run.vglog, sizeof run.vglog, "%.90s/valgrind.log", run.dir);
	if (mkdir(run.root, 0755) < 0)
		die("mkdir: %s", strerror(errno));
	for (i = 0; i < NFILES; i++) {
		struct file_def *f = &run.files[i];

		snprintf(f->path, sizeof f->path, "%.120s/f%02d", run.root, i);
		f->seed = 9000 + (uint64_t)i;
		f->stable = i < NSTABLE || i >= FIRST_RARE;
		/* stable: 40 KiB to ~1 MiB, not page-aligned; the rare ones
		 * 40 to 160 KiB */
		if (i >= FIRST_RARE)
			f->size = 40 * KiB * (uint64_t)(i - FIRST_RARE + 1) + 5;
		else if (f->stable)
			f->size = 40 * KiB + (uint64_t)i * 83 * KiB + 13 * (uint64_t)i;
		else
			f->size = CHURN_MAX;
		create_file(f, f->path, f->stable ? f->size : CHURN_MAX / (1 + i % 3));
	}
	write_whole(run.conf, conf_text[0], strlen(conf_text[0]));
	start_daemon(prog);
	/* the start-up probe's connection must be gone before the baseline */
	harness_sleep_ms(run.valgrind ? 2000 : 500);
	fd_base = daemon_fds(NULL, 0);
	{
		int again = daemon_fds(NULL, 0);

		if (again != fd_base)
			die("the daemon's descriptors do not settle (%d, %d)", fd_base, again);
	}

	printf("soak: %d s, %d clients (region/socket/ring by id %% 3), %d files "
	       "(%d never change, 4 of them seldom opened; %d churned, up to %u bytes)\n",
	       run.seconds, run.nclients, NFILES, NFILES - NCHURN, NCHURN, CHURN_MAX);
	printf("soak: hotmapd --foreground --config DIR/hotmapd.conf --socket DIR/sock --root DIR/root%s;"
	       " build: %s\n", run.valgrind ? ", under valgrind" : "",
	       run.sanitizers ? "ASan+UBSan (--enable-sanitizers)" : "no sanitizers");
	printf("soak: SIGHUP every %d s between A (max-mapped-bytes 2M, max-open-files 12, "
	       "idle-unmap 0, warm none, backend auto, poll-us 0) and B (5M, 64, 1, populate, pread, "
	       "20)\n", HUP_SECONDS);
	printf("soak: daemon pid %d, descriptors at start %d; directory %s\n", (int)run.pid,
	       fd_base, run.dir);

	admin = hm_connect(run.sock);
	if (admin == NULL || config_value(admin, value_a) < 0 || value_a[0] == '\0')
		die("admin connect/config: %s (%s)", strerror(errno), hm_last_error());

	samples.cap = (size_t)run.seconds + 600;
	samples.s = calloc(samples.cap, sizeof *samples.s);
	cl = calloc((size_t)run.nclients, sizeof *cl);
	if (samples.s == NULL || cl == NULL)
		die("out of memory");
	for (i = 0; i < run.nclients; i++) {
		cl[i].id = i;
		cl[i].tr = (enum transport)(i % TR_N);
		cl[i].rng = 0x5eed0000u + (uint64_t)i * 7919;
		cl[i].buf = malloc(BATCH_MAX * MAX_READ);
		cl[i].c = client_connect(cl[i].tr);
		if (cl[i].buf == NULL || cl[i].c == NULL)
			die("client %d: %s", i, strerror(errno));
	}
	samples.t0 = harness_now_ms();
	if (pthread_create(&sampler, NULL, sampler_main, NULL) != 0 ||
	    pthread_create(&churn, NULL, churn_main, NULL) != 0)
		die("pthread_create");
	for (i = 0; i < run.nclients; i++)
		if (pthread_create(&cl[i].thread, NULL, client_main, &cl[i]) != 0)
			die("pthread_create");

	t_end = samples.t0 + 1000 * (int64_t)run.seconds;
	next_hup = samples.t0 + 1000 * HUP_SECONDS;
	k = 0;
	while (harness_now_ms() < t_end) {
		if (harness_now_ms() >= next_hup) {
			k = !k;
			reload(admin, k, value_a);
			next_hup += 1000 * HUP_SECONDS;
		}
		harness_sleep_ms(100);
	}
	atomic_store(&run.stop, true);
	for (i = 0; i < run.nclients; i++)
		pthread_join(cl[i].thread, NULL);
	pthread_join(churn, NULL);
	pthread_join(sampler, NULL);
	minutes = (double)(harness_now_ms() - samples.t0) / 60000.0;

	/* every client has gone: drop every cached file, then count */
	if (hm_stats(admin, final_stat_cb, dstat) < 0)
		failure("final stats: %s", strerror(errno));
	if (hm_evict(admin, NULL, &ev) < 0)
		failure("final evict: %s", strerror(errno));
	if (ev.busy != 0)
		failure("final evict: %u files still busy with no client connected", ev.busy);
	hm_disconnect(admin);
	for (i = 0; i < 30; i++) {
		harness_sleep_ms(100);
		fd_end = daemon_fds(NULL, 0);
		if (fd_end == fd_base && i >= 4)
			break;
	}
	fds_ok = fd_end == fd_base;
	if (!fds_ok)
		daemon_fds(extra, sizeof extra);

	/* RssAnon after warm-up: the first quarter, or 30 s, is skipped */
	{
		double skip = run.seconds / 4.0;

		if (skip < 30 && run.seconds >= 60)
			skip = 30;
		for (first = 0; first < samples.n && samples.s[first].t < skip; first++)
			;
	}
	slope = slope_per_minute(first, &rmin, &rmax);
	for (i = 0; i < OP_N; i++) {
		int e;

		total_ops += ctr.ops[i];
		for (e = 0; e < NERRNO; e++)
			total_errs += ctr.errs[i][e];
	}
	/* A leak of 1 byte per operation at this rate (each is one request
	 * or more); a leaked allocation costs 32 bytes at least (glibc's
	 * smallest chunk), so a leak per request is 32 times over it. */
	threshold = (double)total_ops / minutes / 1024.0;
	if (threshold < 16)
		threshold = 16;
	/* under a minute after warm-up, the warm-up's tail decides the
	 * slope: reported, not enforced */
	window = samples.n > first ? samples.s[samples.n - 1].t - samples.s[first].t : 0;
	slope_ok = slope <= threshold || window < 60 || run.sanitizers || run.valgrind;

	kill(run.pid, SIGTERM);
	{
		int64_t deadline = harness_now_ms() + (run.valgrind ? 120000 : 20000);
		pid_t r;

		while ((r = waitpid(run.pid, &status, WNOHANG)) == 0 && harness_now_ms() < deadline)
			harness_sleep_ms(50);
		if (r != run.pid) {
			kill(run.pid, SIGKILL);
			waitpid(run.pid, &status, 0);
			status = -1;
		}
	}
	exit_ok = status == 0;

	printf("\n==== soak report ====\n");
	printf("run: %.1f min, %d clients, %d files, %s, %s\n", minutes, run.nclients, NFILES,
	       run.valgrind ? "hotmapd under valgrind" : "hotmapd run directly",
	       run.sanitizers ? "ASan+UBSan build" : "no sanitizers");
	printf("operations (%" PRIu64 " in all, %.0f/s):\n", total_ops, (double)total_ops / minutes / 60);
	for (i = 0; i < OP_N; i++)
		printf("  %-28s %12llu\n", op_name[i], (unsigned long long)ctr.ops[i]);
	printf("churn:\n");
	for (i = 0; i < CH_N; i++)
		printf("  %-28s %12llu\n", churn_name[i], (unsigned long long)ctr.churn[i]);
	printf("errors, all explained (%" PRIu64 "):\n", total_errs);
	for (i = 0; i < OP_N; i++) {
		int e;

		for (e = 0; e < NERRNO; e++) {
			const char *why;

			if (ctr.errs[i][e] == 0)
				continue;
			why = e == ENOENT && i == OP_EVICT_PATH ? "not cached, or deleted meanwhile" :
			      e == ENOENT ? "a churned file, deleted and not yet created again" :
			      e == EINVAL ? "HM_O_MMAP on a churned file that was empty at the time" :
					    "?";
			printf("  %-20s %-8s %10llu  %s\n", op_name[i], strerrorname_np(e),
			       (unsigned long long)ctr.errs[i][e], why);
		}
	}
	printf("reads: %llu full, %llu short at an end the churn moved; %llu bytes verified\n",
	       (unsigned long long)ctr.full_reads, (unsigned long long)ctr.short_reads,
	       (unsigned long long)ctr.bytes_verified);
	printf("zeros: %llu bytes in %llu reads (churned files being cut and regrown)\n",
	       (unsigned long long)ctr.zero_bytes, (unsigned long long)ctr.zero_reads);
	printf("reloads: %llu (each checked: the new max-mapped-bytes in force, then ping)\n",
	       (unsigned long long)ctr.reloads);
	printf("auto opens by hm_stat: %llu mapped, %llu pread by backend=pread (config B), "
	       "%llu pread over budget\n", (unsigned long long)ctr.auto_mapped,
	       (unsigned long long)ctr.auto_forced_pread, (unsigned long long)ctr.auto_over_budget);
	printf("daemon counters (with those zeroed by stats-reset added):\n");
	for (i = 0; i < 8; i++)
		printf("  %-28s %12llu\n", daemon_keys[i],
		       (unsigned long long)(dstat[i] + ctr.reset_sums[i]));
	printf("final evict: %u files, %llu mapped bytes, %u busy\n", ev.files,
	       (unsigned long long)ev.mapped_bytes, ev.busy);
	if (samples.n > first)
		printf("RssAnon (KiB) after %.0f s of warm-up, %zu samples: first %ld, last %ld, "
		       "min %.0f, max %.0f\n", samples.n > first ? samples.s[first].t : 0.0,
		       samples.n - first, samples.s[first].rss_kib, samples.s[samples.n - 1].rss_kib,
		       rmin, rmax);
	printf("RssAnon (KiB) every 15 s:");
	for (size_t j = 0; j < samples.n; j += 15)
		printf(" %ld", samples.s[j].rss_kib);
	printf("\n");
	printf("RssAnon slope: %+.1f KiB/min; limit %.1f KiB/min (a leak of 1 byte per "
	       "operation at this rate, at least 16)%s\n", slope, threshold,
	       run.sanitizers || run.valgrind ? " - not enforced: the allocator is instrumented" :
	       window < 60 ? " - not enforced: less than 60 s after warm-up" :
	       slope_ok ? "" : " - EXCEEDED");
	printf("descriptors: baseline %d, end %d%s\n", fd_base, fd_end,
	       fds_ok ? "" : " - NOT BACK AT THE BASELINE");
	if (!fds_ok)
		printf("the daemon's descriptors at the end:\n%s", extra);
	printf("hotmapd at SIGTERM: %s (status 0x%x)\n", exit_ok ? "exit 0" : "FAILED", status);
	if (!exit_ok) {
		char cmd[512];

		snprintf(cmd, sizeof cmd, "tail -n 40 '%s'", run.log);
		if (system(cmd) < 0)
			perror("system");
	}
	if (run.valgrind) {
		char cmd[512];

		printf("valgrind (exit status 99 on any error or definite/indirect leak):\n");
		snprintf(cmd, sizeof cmd,
			 "grep -E 'ERROR SUMMARY|in use at exit|All heap blocks|definitely|indirectly|"
			 "possibly|still reachable' '%s'", run.vglog);
		if (system(cmd) < 0)
			perror("system");
	}
	printf("wrong bytes and unexplained errors: %llu\n", (unsigned long long)ctr.failures);
	if (!slope_ok)
		ctr.failures++;
	if (!fds_ok || !exit_ok || ctr.reloads == 0)
		ctr.failures++;
	/* every operation ran, and every kind of churn */
	for (i = 0; i < OP_N; i++)
		if (ctr.ops[i] == 0 && (i != OP_CHILD_SHUTDOWN || run.nclients > 8)) {
			printf("soak: FAIL: no %s in the run\n", op_name[i]);
			ctr.failures++;
		}
	for (i = 0; i < CH_N; i++)
		if (ctr.churn[i] == 0) {
			printf("soak: FAIL: no %s in the run\n", churn_name[i]);
			ctr.failures++;
		}
	printf("soak: %s\n", ctr.failures == 0 ? "PASS" : "FAIL");
	for (i = 0; i < run.nclients; i++)
		free(cl[i].buf);
	free(cl);
	free(samples.s);
	free((char *)run.self);
	env = getenv("SOAK_KEEP");
	if (ctr.failures == 0 && !(env != NULL && strcmp(env, "1") == 0))
		remove_tree(run.dir);
	else
		printf("soak: kept %s\n", run.dir);
	return ctr.failures == 0 ? 0 : 1;
}
