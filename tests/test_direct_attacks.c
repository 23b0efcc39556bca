/* SPDX-License-Identifier: MIT */
/*
 * test_direct_attacks.c - a hostile local user against the direct tier
 * (docs/security.md, "The direct tier"): leases, slots and signals.
 *
 * Every attack runs as another user against a real hotmapd started two
 * ways: as root, and as hotmapd.service runs it (a uid of its own whose
 * one capability is CAP_LEASE, ambient).  The victims are other users
 * again: a writer of their own file who must not wait, and a client who
 * must read pread's bytes.  Each test fails if the daemon dies, stops or
 * stops answering another user.  Needs root (to be those users) and
 * setpriv; skips, saying so, otherwise.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/hotmap_admin.h"
#include "tests/harness.h"

#define KiB 1024u
#define MiB (1024u * 1024u)
#define TEST_ALARM_S 120

/* Users of their own (no passwd entries needed). */
#define DAEMON_UID	64101u	/* hotmapd, as the unit runs it */
#define ATTACKER_UID	64102u
#define VICTIM_UID	64103u
#define PROBE_UID	64104u
#define SHARED_GID	64110u	/* the victim's file's group; the attacker is in it */

/* A writer that a lease holds up waits lease-break-time (45 s by
 * default); one the daemon lets go waits for a revocation, milliseconds.
 * This is far from both (a sanitizer build on a loaded machine). */
#define WRITER_LIMIT_MS 5000

#define skip_because(why)					\
	do {							\
		print_message("# skipped: %s\n", (why));	\
		skip();						\
	} while (0)

struct mode {
	const char *name;
	struct harness_opts opts;
};

static const struct mode as_root = { "root", { .backend = NULL } };
static const struct mode as_unit = { "unit", { .run_as = DAEMON_UID } };
static const struct mode as_root_cap = {
	"root", { .extra = { "--max-direct-grants-per-uid", "300", NULL } } };
static const struct mode as_unit_cap = {
	"unit", { .run_as = DAEMON_UID, .extra = { "--max-direct-grants-per-uid", "300", NULL } } };
static const struct mode as_root_can_read = {
	"root", { .extra = { "--direct-lease-rule", "can-read", NULL } } };
static const struct mode as_root_user = {
	"root --user", { .extra = { "--user", "64101", "--group", "64101", NULL } } };

static int
setup(void **state)
{
	const struct mode *m = *state;

	if (!harness_can_run_as()) {
		*state = NULL;
		return 0;
	}
	alarm(TEST_ALARM_S);
	unsetenv("HOTMAP_SHM_SIZE");
	unsetenv("HOTMAP_DIRECT_AFTER");
	setenv("HOTMAP_POLL", "0", 1);
	/* clients pass descriptors to the unit's uid */
	setenv("HOTMAP_DAEMON_USER", "64101", 1);
	*state = harness_start(&m->opts);
	/* the other users reach the socket */
	assert_int_equal(chmod(((struct harness *)*state)->dir, 0755), 0);
	return 0;
}

static int
teardown(void **state)
{
	alarm(0);
	harness_free_buffers();
	harness_stop(*state);
	return 0;
}

#define NEED_HARNESS(h)							\
	do {								\
		if ((h) == NULL)					\
			skip_because("needs root and setpriv(1) to be other users"); \
	} while (0)

/* --- users, files ----------------------------------------------------------- */

/* Becomes uid (gid the same), with the shared group as a supplementary one
 * when in_group; _exit(99) when it cannot. */
static void
become(uid_t uid, bool in_group)
{
	gid_t g = SHARED_GID;

	if (setgroups(in_group ? 1 : 0, &g) < 0 || setresgid(uid, uid, uid) < 0 ||
	    setresuid(uid, uid, uid) < 0)
		_exit(99);
}

/* A directory anyone may enter, for the users' files. */
static void
pub_dir(const struct harness *h, char *out)
{
	struct stat st;

	harness_path(h, "pub", out);
	if (stat(out, &st) < 0)
		assert_int_equal(mkdir(out, 0755), 0);
	assert_int_equal(chmod(out, 0755), 0);
}

/* A file of size bytes in pub, owned by uid:gid with mode. */
static void
make_owned(const struct harness *h, const char *name, uint64_t size, uint64_t seed, uid_t uid,
	   gid_t gid, mode_t mode, char *path)
{
	char dir[PATH_MAX];

	pub_dir(h, dir);
	assert_true(strlen(dir) + strlen(name) + 2 <= PATH_MAX);
	memcpy(path, dir, strlen(dir));
	path[strlen(dir)] = '/';
	strcpy(path + strlen(dir) + 1, name);
	harness_write_file(path, size, seed);
	assert_int_equal(chown(path, uid, gid), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static hm_client *
connect_direct(const struct harness *h)
{
	struct hm_options o = HM_OPTIONS_INIT;

	o.direct = 1;
	o.direct_after = 1;
	return hm_connect_opts(h->sock, &o);
}

/* --- actors: a user's process the test steps through ------------------------- */

/* A child as another user.  It runs fn, which reports with act_say (a
 * byte, 'k' for done so far) and waits with act_wait for the test's next
 * byte; it exits with fn's result (0: as expected). */
struct actor {
	pid_t pid;
	int to, from;
};

struct act {
	int in, out;
};

static void
act_say(const struct act *a, char c)
{
	if (write(a->out, &c, 1) != 1)
		_exit(98);
}

static char
act_wait(const struct act *a)
{
	char c = 0;

	if (read(a->in, &c, 1) != 1)
		_exit(0);	/* the test is gone */
	return c;
}

static struct actor
actor_start(uid_t uid, bool in_group, int (*fn)(const struct act *a, void *arg), void *arg)
{
	int down[2], up[2];
	struct actor a;

	assert_int_equal(pipe2(down, O_CLOEXEC), 0);
	assert_int_equal(pipe2(up, O_CLOEXEC), 0);
	a.pid = fork();
	assert_true(a.pid >= 0);
	if (a.pid == 0) {
		struct act me = { .in = down[0], .out = up[1] };

		close(down[1]);
		close(up[0]);
		alarm(TEST_ALARM_S);
		become(uid, in_group);
		_exit(fn(&me, arg));
	}
	close(down[0]);
	close(up[1]);
	a.to = down[1];
	a.from = up[0];
	return a;
}

/* Waits (at most ms) for the actor's next report: its byte, or 0 when it
 * exited or said nothing in time. */
static char
actor_hear(struct actor *a, int ms)
{
	struct timespec nap = { 0, 5 * 1000 * 1000 };
	int64_t end = harness_now_ms() + ms;
	char c = 0;
	int fl = fcntl(a->from, F_GETFL);

	fcntl(a->from, F_SETFL, fl | O_NONBLOCK);
	while (harness_now_ms() < end) {
		ssize_t n = read(a->from, &c, 1);

		if (n == 1)
			break;
		if (n == 0)
			return 0;
		nanosleep(&nap, NULL);
		c = 0;
	}
	fcntl(a->from, F_SETFL, fl);
	return c;
}

static void
actor_tell(struct actor *a, char c)
{
	assert_int_equal(write(a->to, &c, 1), 1);
}

/* Ends the actor: 0 when it exited 0 by itself within ms, else its
 * status (killed: -1). */
static int
actor_end(struct actor *a, int ms)
{
	int64_t end = harness_now_ms() + ms;
	int status = 0;

	close(a->to);
	while (waitpid(a->pid, &status, WNOHANG) == 0) {
		if (harness_now_ms() > end) {
			kill(a->pid, SIGKILL);
			waitpid(a->pid, &status, 0);
			close(a->from);
			return -1;
		}
		harness_sleep_ms(5);
	}
	close(a->from);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* --- the daemon serves on --------------------------------------------------- */

static int
probe_fn(const struct act *a, void *arg)
{
	const struct harness *h = arg;
	hm_client *c = hm_connect(h->sock);
	int64_t t0 = harness_now_ms();

	(void)a;
	if (c == NULL)
		return 1;
	if (hm_ping(c, NULL) < 0)
		return 2;
	hm_disconnect(c);
	return harness_now_ms() - t0 < 2000 ? 0 : 3;
}

/* The daemon is alive and running (not stopped), and another user's ping
 * is answered within 2 s. */
static void
assert_serving(const struct harness *h)
{
	char path[64], buf[512], *p;
	struct actor probe;
	FILE *f;
	int rc;

	assert_true(h->pid > 0);
	if (waitpid(h->pid, &rc, WNOHANG) == h->pid) {
		((struct harness *)h)->pid = 0;
		unlink(h->sock);
		fail_msg("hotmapd is dead: %s %d", WIFSIGNALED(rc) ? "killed by signal" : "exit",
			 WIFSIGNALED(rc) ? WTERMSIG(rc) : WEXITSTATUS(rc));
	}
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)h->pid);
	f = fopen(path, "re");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof buf, f));
	fclose(f);
	p = strrchr(buf, ')');
	assert_non_null(p);
	if (p[2] == 'T' || p[2] == 't')
		fail_msg("hotmapd is stopped (%s)", buf);
	probe = actor_start(PROBE_UID, false, probe_fn, (void *)h);
	rc = actor_end(&probe, 5000);
	if (rc != 0)
		fail_msg("another user's ping was not answered within 2 s (probe: %d)", rc);
}

/* Opens path for writing as the process is: the time it took (ms), or -1
 * when it failed.  With append, adds 4 KiB of seed's content at its end. */
static int64_t
timed_write_open(const char *path, bool append, uint64_t seed)
{
	int64_t t0 = harness_now_ms(), t;
	int fd = open(path, O_WRONLY | O_CLOEXEC | (append ? O_APPEND : 0));

	t = harness_now_ms() - t0;
	if (fd < 0)
		return -1;
	if (append) {
		uint8_t b[4096];
		struct stat st;

		fstat(fd, &st);
		harness_fill(b, sizeof b, seed, (uint64_t)st.st_size);
		if (write(fd, b, sizeof b) != (ssize_t)sizeof b)
			t = -1;
	}
	close(fd);
	return t;
}

struct writer_arg {
	const char *path;
	bool append;
	uint64_t seed;
};

static int
writer_fn(const struct act *a, void *arg)
{
	const struct writer_arg *w = arg;
	int64_t ms = timed_write_open(w->path, w->append, w->seed);

	(void)a;
	if (ms < 0)
		return 2;
	return ms < WRITER_LIMIT_MS ? 0 : 3;
}

/* The victim opens its file for writing (appending 4 KiB with append): it
 * must not wait for a lease an attacker set up. */
static void
assert_writer_not_held(const char *path, bool append, uint64_t seed)
{
	struct writer_arg w = { path, append, seed };
	struct actor a = actor_start(VICTIM_UID, false, writer_fn, &w);
	int64_t t0 = harness_now_ms();
	int rc = actor_end(&a, WRITER_LIMIT_MS + 1000);

	if (rc != 0)
		fail_msg("the victim's open for writing %s (status %d after %lld ms): a lease holds "
			 "it", rc == -1 ? "did not return" : "failed", rc,
			 (long long)(harness_now_ms() - t0));
}

/* --- 1: the lease-break signal is the daemon's own ------------------------- */

struct signal_arg {
	const struct harness *h;
	const char *path;
	int sig;
};

/* The attacker, on a file it owns: a write lease of its own, so that the
 * daemon cannot reopen the file and keeps the attacker's descriptor; that
 * handle closed (its entry stays cached) and the lease dropped; the file
 * opened again (the daemon's read lease goes on the attacker's open file
 * description, and the daemon is its owner), and that description's lease
 * signal made sig.  Then it opens the file for
 * writing itself: the break's signal goes to the daemon. */
static int
signal_fn(const struct act *a, void *arg)
{
	const struct signal_arg *s = arg;
	hm_client *c = connect_direct(s->h);
	hm_file *f1, *f2;
	int fd, wfd;

	if (c == NULL)
		return 10;
	/* the daemon's attempt to reopen the file breaks the write lease:
	 * its holder is sent SIGIO */
	signal(SIGIO, SIG_IGN);
	fd = open(s->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fcntl(fd, F_SETLEASE, F_WRLCK) < 0)
		return 11;
	f1 = hm_open_fd(c, fd, 0);
	if (f1 == NULL)
		return 12;
	/* the entry stays cached, idle, on the attacker's description */
	hm_close(f1);
	(void)fcntl(fd, F_SETLEASE, F_UNLCK);
	f2 = hm_open_fd(c, fd, 0);
	if (f2 == NULL)
		return 13;
	if (fcntl(fd, F_SETSIG, s->sig) < 0)
		return 14;
	act_say(a, 'k');
	/* bounded: the kernel breaks any lease after lease-break-time */
	wfd = open(s->path, O_WRONLY | O_CLOEXEC);
	if (wfd >= 0)
		close(wfd);
	act_say(a, 'w');
	act_wait(a);
	hm_close(f2);
	hm_disconnect(c);
	close(fd);
	return 0;
}

static void
lease_signal_attack(void **state, int sig)
{
	const struct harness *h = *state;
	char path[PATH_MAX];
	struct signal_arg s;
	struct actor a;
	char said;

	NEED_HARNESS(h);
	make_owned(h, "attacker-own", 2 * MiB, 1, ATTACKER_UID, ATTACKER_UID, 0644, path);
	s = (struct signal_arg){ h, path, sig };
	a = actor_start(ATTACKER_UID, false, signal_fn, &s);
	said = actor_hear(&a, 10000);
	if (said != 'k')
		fail_msg("the attacker could not set up (status %d)", actor_end(&a, 1000));
	said = actor_hear(&a, WRITER_LIMIT_MS);
	if (sig == SIGSTOP)
		kill(h->pid, SIGCONT);	/* let the daemon go on, to be asked */
	assert_serving(h);
	if (said != 'w')
		fail_msg("the attacker's own writer waited past %d ms", WRITER_LIMIT_MS);
	actor_tell(&a, 'q');
	assert_int_equal(actor_end(&a, 5000), 0);
}

static void
test_lease_signal_kill(void **state)
{
	lease_signal_attack(state, SIGKILL);
}

static void
test_lease_signal_stop(void **state)
{
	lease_signal_attack(state, SIGSTOP);
}

/* --- 2 and 3: the lease-break signal goes to the daemon, and revokes ------- */

struct owner_arg {
	const struct harness *h;
	const char *path;
};

/* The attacker, in the group of the victim's file (mode 0640): opens it
 * for direct reads and points its descriptor's lease signal at itself. */
static int
owner_fn(const struct act *a, void *arg)
{
	const struct owner_arg *o = arg;
	hm_client *c = connect_direct(o->h);
	hm_file *f;
	int fd;

	if (c == NULL)
		return 10;
	fd = open(o->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 11;
	f = hm_open_fd(c, fd, HM_O_DIRECT);
	if (f == NULL)
		return 12;
	if (fcntl(fd, F_SETOWN, getpid()) < 0)
		return 13;
	/* the daemon's lease signal now comes here: not to die of it */
	signal(SIGRTMIN + 1, SIG_IGN);
	signal(SIGIO, SIG_IGN);
	act_say(a, 'k');
	act_wait(a);
	hm_close(f);
	hm_disconnect(c);
	close(fd);
	return 0;
}

struct reader_arg {
	const struct harness *h;
	const char *path;
	uint64_t size;
};

/* The victim's own client: reads the last 8 KiB of its file directly,
 * then again after its writer appended 4 KiB; each read must be pread's. */
static int
reader_fn(const struct act *a, void *arg)
{
	const struct reader_arg *r = arg;
	hm_client *c = connect_direct(r->h);
	struct hm_stat st;
	uint8_t got[8192], want[8192];
	hm_file *f;
	ssize_t n, m;
	int fd;

	if (c == NULL)
		return 10;
	fd = open(r->path, O_RDONLY | O_CLOEXEC);
	f = hm_open(c, r->path, HM_O_DIRECT);
	if (fd < 0 || f == NULL)
		return 11;
	n = hm_pread(f, got, sizeof got, r->size - 4096);
	m = pread(fd, want, sizeof want, (off_t)(r->size - 4096));
	if (n != m || memcmp(got, want, (size_t)m) != 0)
		return 12;
	act_say(a, 'k');
	act_wait(a);	/* the writer appended */
	n = hm_pread(f, got, sizeof got, r->size - 4096);
	m = pread(fd, want, sizeof want, (off_t)(r->size - 4096));
	if (hm_stat(f, &st) < 0)
		return 13;
	fprintf(stderr, "# the victim's read at the old end: %zd bytes, pread %zd; direct %d\n",
		n, m, st.direct);
	if (n != m || m != 8192 || memcmp(got, want, 8192) != 0)
		return 14;
	hm_close(f);
	hm_disconnect(c);
	close(fd);
	return 0;
}

static void
test_lease_owner_held(void **state)
{
	const struct harness *h = *state;
	char path[PATH_MAX];
	struct owner_arg o;
	struct reader_arg r;
	struct actor att, vic;

	NEED_HARNESS(h);
	make_owned(h, "victim-grp", 2 * MiB, 2, VICTIM_UID, SHARED_GID, 0640, path);
	o = (struct owner_arg){ h, path };
	r = (struct reader_arg){ h, path, 2 * MiB };
	att = actor_start(ATTACKER_UID, true, owner_fn, &o);
	if (actor_hear(&att, 10000) != 'k')
		fail_msg("the attacker could not set up (status %d)", actor_end(&att, 1000));
	vic = actor_start(VICTIM_UID, false, reader_fn, &r);
	if (actor_hear(&vic, 10000) != 'k')
		fail_msg("the victim's first read was not pread's (status %d)",
			 actor_end(&vic, 1000));
	assert_writer_not_held(path, true, 2);
	actor_tell(&vic, 'g');
	assert_int_equal(actor_end(&vic, 10000), 0);
	actor_tell(&att, 'q');
	assert_int_equal(actor_end(&att, 5000), 0);
	assert_serving(h);
}

/* --- 4: a revocation costs one file's grants; grants are capped per uid ------ */

#define CAP_FILES	40
#define CAP_HANDLES	10	/* handles per file: 400 asked, 300 allowed */

struct many_arg {
	const struct harness *h;
	char paths[CAP_FILES][PATH_MAX];
};

/* The attacker: 400 handles over 40 files of its own, on two clients. */
static int
many_fn(const struct act *a, void *arg)
{
	const struct many_arg *m = arg;
	hm_client *c[2] = { connect_direct(m->h), connect_direct(m->h) };
	hm_file *f[CAP_FILES * CAP_HANDLES];
	unsigned i, granted = 0, capped = 0;

	if (c[0] == NULL || c[1] == NULL)
		return 10;
	for (i = 0; i < CAP_FILES * CAP_HANDLES; i++) {
		struct hm_stat st;

		f[i] = hm_open(c[i % 2], m->paths[i % CAP_FILES], 0);
		if (f[i] == NULL || hm_stat(f[i], &st) < 0)
			return 11;
		if (st.direct != HM_DIRECT_NO)
			granted++;
		else if (strstr(st.direct_text, "max-direct-grants-per-uid") != NULL)
			capped++;
	}
	fprintf(stderr, "# the attacker: %u handles granted, %u refused for the cap\n", granted,
		capped);
	if (granted != 300 || capped != 100)
		return 12;
	act_say(a, 'k');
	act_wait(a);
	for (i = 0; i < CAP_FILES * CAP_HANDLES; i++)
		hm_close(f[i]);
	hm_disconnect(c[0]);
	hm_disconnect(c[1]);
	return 0;
}

/* The victim: its own file, granted in spite of the attacker's 300. */
static int
one_fn(const struct act *a, void *arg)
{
	const struct reader_arg *r = arg;
	hm_client *c = connect_direct(r->h);
	struct hm_stat st;
	hm_file *f;

	if (c == NULL)
		return 10;
	f = hm_open(c, r->path, 0);
	if (f == NULL || hm_stat(f, &st) < 0)
		return 11;
	if (st.direct == HM_DIRECT_NO) {
		fprintf(stderr, "# the victim's grant was refused: %s\n", st.direct_text);
		return 12;
	}
	act_say(a, 'k');
	act_wait(a);
	hm_close(f);
	hm_disconnect(c);
	return 0;
}

static void
test_grants_capped_per_uid(void **state)
{
	const struct harness *h = *state;
	struct many_arg *m;
	struct reader_arg r;
	char vpath[PATH_MAX];
	struct actor att, vic;
	uint64_t checks0, revoked0, checks, revoked;
	hm_client *admin;
	unsigned i;

	NEED_HARNESS(h);
	m = calloc(1, sizeof *m);
	assert_non_null(m);
	m->h = h;
	for (i = 0; i < CAP_FILES; i++) {
		char name[32];

		snprintf(name, sizeof name, "attacker-%u", i);
		make_owned(h, name, 64 * KiB, 100 + i, ATTACKER_UID, ATTACKER_UID, 0644,
			   m->paths[i]);
	}
	make_owned(h, "victim-own", MiB, 3, VICTIM_UID, VICTIM_UID, 0644, vpath);
	r = (struct reader_arg){ h, vpath, MiB };
	att = actor_start(ATTACKER_UID, false, many_fn, m);
	if (actor_hear(&att, 60000) != 'k')
		fail_msg("the attacker's grants were not capped at 300 (status %d)",
			 actor_end(&att, 1000));
	vic = actor_start(VICTIM_UID, false, one_fn, &r);
	if (actor_hear(&vic, 10000) != 'k')
		fail_msg("the victim got no grant (status %d)", actor_end(&vic, 1000));
	admin = hm_connect(h->sock);
	assert_non_null(admin);
	checks0 = harness_stat(admin, "direct_lease_checks");
	revoked0 = harness_stat(admin, "direct_revoked");
	/* the victim's writer breaks its own file's lease: one signal, one
	 * lease check, one grant revoked, whatever the attacker holds */
	assert_writer_not_held(vpath, false, 3);
	harness_wait_stat(admin, "direct_revoked", revoked0 + 1);
	checks = harness_stat(admin, "direct_lease_checks");
	revoked = harness_stat(admin, "direct_revoked");
	print_message("# the break: %llu lease checks, %llu grants revoked (the attacker holds "
		      "300)\n", (unsigned long long)(checks - checks0),
		      (unsigned long long)(revoked - revoked0));
	assert_true(checks - checks0 >= 1 && checks - checks0 <= 2);
	assert_int_equal(revoked - revoked0, 1);
	assert_int_equal(harness_stat(admin, "direct_refused_cap"), 100);
	hm_disconnect(admin);
	actor_tell(&vic, 'q');
	assert_int_equal(actor_end(&vic, 5000), 0);
	actor_tell(&att, 'q');
	assert_int_equal(actor_end(&att, 20000), 0);
	assert_serving(h);
	free(m);
}

/* --- 5: a lease reaches only files the client could write, or nobody can ---- */

struct rule_arg {
	const struct harness *h;
	const char *path;
	int want;		/* 1: granted, 0: refused */
};

static int
rule_fn(const struct act *a, void *arg)
{
	const struct rule_arg *r = arg;
	hm_client *c = connect_direct(r->h);
	struct hm_stat st;
	hm_file *f;

	if (c == NULL)
		return 10;
	f = hm_open(c, r->path, HM_O_DIRECT);
	if (f == NULL || hm_stat(f, &st) < 0)
		return 11;
	fprintf(stderr, "# %s: direct %d \"%s\"\n", r->path, st.direct, st.direct_text);
	if ((st.direct != HM_DIRECT_NO) != (r->want == 1))
		return 12;
	if (r->want == 0 && strstr(st.direct_text, "may not write") == NULL)
		return 13;
	act_say(a, 'k');
	act_wait(a);
	hm_close(f);
	hm_disconnect(c);
	return 0;
}

/* The victim's writers while the attacker has the file open: 300
 * non-blocking opens for writing, each must succeed. */
static unsigned
nonblocking_writers(const char *path)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		unsigned i, failed = 0;

		become(VICTIM_UID, false);
		for (i = 0; i < 300; i++) {
			int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);

			if (fd < 0)
				failed++;
			else
				close(fd);
		}
		_exit(failed > 250 ? 250 : (int)failed);
	}
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? (unsigned)WEXITSTATUS(status) : 300;
}

static void
lease_rule_case(const struct harness *h, const char *path, uid_t who, bool in_group, int want)
{
	struct rule_arg r = { h, path, want };
	struct actor a = actor_start(who, in_group, rule_fn, &r);
	unsigned failed;

	if (actor_hear(&a, 10000) != 'k')
		fail_msg("%s for uid %u: want %s (status %d)", path, (unsigned)who,
			 want ? "a grant" : "a refusal that says why", actor_end(&a, 1000));
	if (want == 0) {
		failed = nonblocking_writers(path);
		if (failed != 0)
			fail_msg("%u of the victim's 300 non-blocking opens for writing failed while "
				 "uid %u had the file open", failed, (unsigned)who);
	}
	actor_tell(&a, 'q');
	assert_int_equal(actor_end(&a, 5000), 0);
}

static void
test_lease_rule(void **state)
{
	const struct harness *h = *state;
	char shared[PATH_MAX], ro[PATH_MAX], grpw[PATH_MAX];

	NEED_HARNESS(h);
	make_owned(h, "victim-644", MiB, 4, VICTIM_UID, VICTIM_UID, 0644, shared);
	make_owned(h, "victim-444", MiB, 5, VICTIM_UID, VICTIM_UID, 0444, ro);
	make_owned(h, "victim-664", MiB, 6, VICTIM_UID, SHARED_GID, 0664, grpw);
	/* readable, not writable by the attacker, writable by its owner */
	lease_rule_case(h, shared, ATTACKER_UID, true, 0);
	/* its owner may */
	lease_rule_case(h, shared, VICTIM_UID, false, 1);
	/* nobody may write it (no write bit) */
	lease_rule_case(h, ro, ATTACKER_UID, false, 1);
	/* the group may write it, but the attacker is not in it (first: a
	 * grant to one who may write publishes the file, and the table's
	 * lease then lingers for writers, as the grant's did: hotmapd.conf(5)
	 * direct-table) */
	lease_rule_case(h, grpw, ATTACKER_UID, false, 0);
	/* ... and when it is */
	lease_rule_case(h, grpw, ATTACKER_UID, true, 1);
	assert_serving(h);
}

/* direct-lease-rule can-read: the old rule, for hosts whose users trust
 * each other: a reader is granted. */
static void
test_lease_rule_can_read(void **state)
{
	const struct harness *h = *state;
	char shared[PATH_MAX];
	struct rule_arg r;
	struct actor a;

	NEED_HARNESS(h);
	make_owned(h, "victim-644", MiB, 4, VICTIM_UID, VICTIM_UID, 0644, shared);
	r = (struct rule_arg){ h, shared, 1 };
	a = actor_start(ATTACKER_UID, false, rule_fn, &r);
	if (actor_hear(&a, 10000) != 'k')
		fail_msg("can-read: the reader got no grant (status %d)", actor_end(&a, 1000));
	actor_tell(&a, 'q');
	assert_int_equal(actor_end(&a, 5000), 0);
}

/* --- 6: what a client writes in its slot is bounded ------------------------- */

/* The client's slot table: libhotmap maps it apart from the rest of its
 * region, 16,384 slots of 128 bytes (its CLIENT_DIRECT_SLOTS), found in
 * /proc/self/maps. */
static uint8_t *
slot_table(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	unsigned long lo, hi;
	uint8_t *t = NULL;

	if (f == NULL)
		return NULL;
	while (fgets(line, sizeof line, f) != NULL)
		if (strstr(line, "hotmap-region") != NULL && sscanf(line, "%lx-%lx", &lo, &hi) == 2 &&
		    hi - lo == 16384 * 128)
			t = (uint8_t *)(uintptr_t)lo;
	fclose(f);
	return t;
}

/* Writes reads and bytes into every granted slot of table t; how many. */
static unsigned
poke_slots(uint8_t *t, uint64_t reads, uint64_t bytes)
{
	unsigned i, n = 0;

	for (i = 0; i < 16384; i++) {
		uint64_t *slot = (uint64_t *)(void *)(t + (size_t)i * 128);

		if (slot[0] == 0 || (slot[0] & 1) != 0)
			continue;	/* free or revoked */
		__atomic_store_n(&slot[8], reads, __ATOMIC_RELAXED);
		__atomic_store_n(&slot[9], bytes, __ATOMIC_RELAXED);
		n++;
	}
	return n;
}

struct poke_arg {
	const struct harness *h;
	const char *own, *other;
};

static int
poke_fn(const struct act *a, void *arg)
{
	const struct poke_arg *p = arg;
	hm_client *c = connect_direct(p->h);
	hm_file *f1, *f2;
	uint8_t *end;

	if (c == NULL)
		return 10;
	f1 = hm_open(c, p->own, HM_O_DIRECT);
	f2 = hm_open(c, p->other, HM_O_DIRECT);
	end = slot_table();
	if (f1 == NULL || f2 == NULL || end == NULL)
		return 11;
	if (poke_slots(end, 1000000000000ull, 4100000000000000ull) != 2)
		return 12;
	act_say(a, 'k');
	act_wait(a);
	/* backwards, then forwards again: a second poke */
	poke_slots(end, 5, 5);
	act_say(a, 'b');
	act_wait(a);
	poke_slots(end, UINT64_MAX - 99, UINT64_MAX - 99);
	act_say(a, 'f');
	act_wait(a);
	hm_close(f1);
	hm_close(f2);
	hm_disconnect(c);
	return 0;
}

struct row {
	const char *path;
	uint64_t reads, bytes;
	bool found;
};

static void
row_cb(const struct hm_file_info *info, void *arg)
{
	struct row *r = arg;

	if (strcmp(info->path, r->path) == 0) {
		r->reads = info->direct_reads;
		r->bytes = info->direct_bytes;
		r->found = true;
	}
}

/* Since the grants were made (at most elapsed_ms ago): what two slots may
 * report, a read per DIRECT_READ_MIN_NS (10 ns) each, of at most 1 MiB. */
static void
assert_bounded(hm_client *admin, const char *other, int64_t elapsed_ms, const char *when)
{
	uint64_t most = 2 * ((uint64_t)elapsed_ms * 1000000u / 10u + 1);
	uint64_t reads, bytes;
	struct row r = { .path = other };

	reads = harness_stat(admin, "direct_reads");
	bytes = harness_stat(admin, "direct_bytes");
	assert_int_equal(hm_files(admin, row_cb, &r), 0);
	print_message("# %s: direct_reads %llu, direct_bytes %llu; the victim's file's row %llu, "
		      "%llu (at most %llu reads in %lld ms)\n", when, (unsigned long long)reads,
		      (unsigned long long)bytes, (unsigned long long)r.reads,
		      (unsigned long long)r.bytes, (unsigned long long)most, (long long)elapsed_ms);
	assert_true(r.found);
	assert_true(reads <= most);
	assert_true(bytes <= reads * (uint64_t)MiB);
	assert_true(r.reads <= reads && r.bytes <= bytes);
	assert_true(r.bytes <= r.reads * (uint64_t)MiB);
}

static void
test_slot_counters_bounded(void **state)
{
	const struct harness *h = *state;
	char own[PATH_MAX], other[PATH_MAX];
	struct poke_arg p;
	struct actor a;
	hm_client *admin;
	int64_t t0;

	NEED_HARNESS(h);
	make_owned(h, "attacker-own", MiB, 7, ATTACKER_UID, ATTACKER_UID, 0644, own);
	make_owned(h, "victim-444", MiB, 8, VICTIM_UID, VICTIM_UID, 0444, other);
	admin = hm_connect(h->sock);
	assert_non_null(admin);
	p = (struct poke_arg){ h, own, other };
	t0 = harness_now_ms();
	a = actor_start(ATTACKER_UID, false, poke_fn, &p);
	if (actor_hear(&a, 10000) != 'k')
		fail_msg("the attacker could not poke two granted slots (status %d)",
			 actor_end(&a, 1000));
	assert_bounded(admin, other, harness_now_ms() - t0, "after 10^12 reads poked");
	actor_tell(&a, 'g');
	assert_int_equal(actor_hear(&a, 5000), 'b');
	assert_bounded(admin, other, harness_now_ms() - t0, "after a poke backwards");
	actor_tell(&a, 'g');
	assert_int_equal(actor_hear(&a, 5000), 'f');
	assert_bounded(admin, other, harness_now_ms() - t0, "after a poke to 2^64 - 100");
	actor_tell(&a, 'q');
	assert_int_equal(actor_end(&a, 5000), 0);
	assert_bounded(admin, other, harness_now_ms() - t0, "after the close");
	hm_disconnect(admin);
	assert_serving(h);
}

/* --- 7: after user, no descriptor is another process's to take -------------- */

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

struct grab_arg {
	pid_t daemon;
};

/* As the daemon's user: takes every descriptor of the daemon it can.
 * How many it got. */
static int
grab_fn(const struct act *a, void *arg)
{
	const struct grab_arg *g = arg;
	int pidfd, fd, got = 0;

	(void)a;
	pidfd = (int)syscall(SYS_pidfd_open, g->daemon, 0);
	if (pidfd < 0)
		return errno == ENOSYS ? 0 : 100;
	for (fd = 0; fd < 256; fd++) {
		int nfd = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);

		if (nfd >= 0) {
			char link[64], target[PATH_MAX] = "";

			snprintf(link, sizeof link, "/proc/self/fd/%d", nfd);
			if (readlink(link, target, sizeof target - 1) < 0)
				target[0] = '\0';
			fprintf(stderr, "# took the daemon's descriptor %d: %s (flags 0%o)\n", fd,
				target, (unsigned)fcntl(nfd, F_GETFL));
			close(nfd);
			got++;
		}
	}
	return got > 99 ? 99 : got;
}

static void
test_user_descriptors_kept(void **state)
{
	const struct harness *h = *state;
	struct grab_arg g;
	char path[PATH_MAX];
	struct hm_stat st;
	struct actor a;
	hm_client *c;
	hm_file *f;
	int got;

	NEED_HARNESS(h);
	g.daemon = h->pid;
	a = actor_start(DAEMON_UID, false, grab_fn, &g);
	got = actor_end(&a, 10000);
	if (got != 0)
		fail_msg("a process of hotmapd's user took %d of its descriptors (pidfd_getfd)",
			 got);
	/* undumpable, it still reopens clients' files through /proc/self/fd:
	 * its user's own file, leased without CAP_LEASE, is granted only on
	 * a description of its own */
	make_owned(h, "daemon-own", MiB, 9, DAEMON_UID, DAEMON_UID, 0644, path);
	c = connect_direct(h);
	assert_non_null(c);
	f = hm_open(c, path, HM_O_DIRECT);
	assert_non_null(f);
	assert_int_equal(hm_stat(f, &st), 0);
	if (st.direct == HM_DIRECT_NO)
		fail_msg("after user, the daemon's own file was not granted: %s", st.direct_text);
	hm_close(f);
	hm_disconnect(c);
	/* As that user it may not remove its socket from root's directory
	 * (tests/test_daemon_mode.sh tests that part): stopped here. */
	{
		struct harness *hw = (struct harness *)h;
		int status;

		assert_int_equal(kill(hw->pid, SIGTERM), 0);
		assert_int_equal(waitpid(hw->pid, &status, 0), hw->pid);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		hw->pid = 0;
		unlink(hw->sock);
	}
}

#define T(f, m) cmocka_unit_test_prestate_setup_teardown(f, setup, teardown, (void *)&m)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_lease_signal_kill, as_root),
		T(test_lease_signal_kill, as_unit),
		T(test_lease_signal_stop, as_root),
		T(test_lease_signal_stop, as_unit),
		T(test_lease_owner_held, as_root),
		T(test_lease_owner_held, as_unit),
		T(test_grants_capped_per_uid, as_root_cap),
		T(test_grants_capped_per_uid, as_unit_cap),
		T(test_lease_rule, as_root),
		T(test_lease_rule, as_unit),
		T(test_lease_rule_can_read, as_root_can_read),
		T(test_slot_counters_bounded, as_root),
		T(test_slot_counters_bounded, as_unit),
		T(test_user_descriptors_kept, as_root_user),
	};

	return cmocka_run_group_tests_name("direct-attacks", tests, NULL, NULL);
}
