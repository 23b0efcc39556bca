/* SPDX-License-Identifier: MIT */
/*
 * test_trust.c - a client must know whom it talks to (issue 11).
 *
 * Two unprivileged users in children of this test: a victim (uid 64000)
 * and an attacker (uid 64001); no passwd entries are needed.  The
 * attacker's daemon listens where the victim looks, and the victim must
 * not hand it a descriptor; hotmapd must not bind where another user can
 * swap its socket.  Becoming those users takes root: the tests skip,
 * saying so, without it.
 *
 * The directory of each test is root's and 1777, as /tmp is.  Children
 * report through their exit status and a file; only the parent asserts.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdbool.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/harness.h"

#define VICTIM		64000
#define ATTACKER	64001
#define FILE_SIZE	(64u * 1024u)
#define FILE_SEED	11u
#define WAIT_MS		30000

struct world {
	char dir[PATH_MAX];	/* root's, 1777 */
	char secret[PATH_MAX];	/* the victim's 0600 file */
	pid_t daemons[4];
	size_t ndaemons;
};

static const char *
program(const char *env, const char *built)
{
	const char *p = getenv(env);
	static char buf[2][PATH_MAX];
	static int i;
	char *b;

	if (p != NULL && p[0] != '\0')
		return p;
	/* from the top build directory or from tests/ */
	b = buf[i++ % 2];
	snprintf(b, PATH_MAX, "%s", built);
	if (access(b, X_OK) == 0)
		return b;
	snprintf(b, PATH_MAX, "../%s", built);
	return b;
}

/* In a child: becomes uid (its own group, no others) or exits 99. */
static void
become(uid_t uid)
{
	if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)
		_exit(99);
}

/* Runs fn(w, arg) as uid in a child; its exit status (99: cannot become uid). */
static int
run_as(uid_t uid, int (*fn)(struct world *, const void *), struct world *w, const void *arg)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		become(uid);
		_exit(fn(w, arg));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status))
		fail_msg("child as uid %u died: wait status 0x%x", (unsigned)uid, (unsigned)status);
	if (WEXITSTATUS(status) == 99)
		fail_msg("cannot become uid %u", (unsigned)uid);
	return WEXITSTATUS(status);
}

static void
path_in(const struct world *w, const char *name, char *out)
{
	int n = snprintf(out, PATH_MAX, "%s/%s", w->dir, name);

	assert_true(n > 0 && n < PATH_MAX);
}

/* Whole file into a malloced string ("" when missing). */
static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *s = calloc(1, 65536);
	size_t n = 0;

	assert_non_null(s);
	if (f != NULL) {
		n = fread(s, 1, 65535, f);
		fclose(f);
	}
	s[n] = '\0';
	return s;
}

static void
assert_file_has(const char *path, const char *needle)
{
	char *s = slurp(path);

	if (strstr(s, needle) == NULL)
		fail_msg("%s lacks \"%s\"; it says:\n%s", path, needle, s);
	free(s);
}

/*
 * Starts hotmapd as uid on sock, its output in log: the child becomes uid
 * and then execs, as the user would start it.  Returns its pid.
 */
static pid_t
start_daemon(struct world *w, uid_t uid, const char *sock, const char *log)
{
	const char *prog = program("HOTMAPD", "daemon/hotmapd");
	pid_t parent = getpid(), pid;
	int fd;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd < 0)
			_exit(126);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		become(uid);
		/* after become: a change of credentials clears it */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
			_exit(125);
		unsetenv("LISTEN_FDS");
		unsetenv("LISTEN_PID");
		unsetenv("NOTIFY_SOCKET");
		unsetenv("WATCHDOG_USEC");
		unsetenv("JOURNAL_STREAM");
		execl(prog, prog, "--foreground", "--socket", sock, "-v", (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", prog, strerror(errno));
		_exit(127);
	}
	if (w->ndaemons < sizeof w->daemons / sizeof w->daemons[0])
		w->daemons[w->ndaemons++] = pid;
	return pid;
}

static void
forget_daemon(struct world *w, pid_t pid)
{
	size_t i;

	for (i = 0; i < w->ndaemons; i++)
		if (w->daemons[i] == pid)
			w->daemons[i] = 0;
}

/* Waits until the daemon accepts connections on sock; fails with its log
 * if it exits first. */
static void
wait_listening(struct world *w, pid_t pid, const char *sock, const char *log)
{
	int64_t deadline = harness_now_ms() + WAIT_MS;
	int status;

	while (!harness_socket_accepts(sock)) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			char *s = slurp(log);

			forget_daemon(w, pid);
			fail_msg("hotmapd on %s exited (status 0x%x) before listening:\n%s", sock,
				 (unsigned)status, s);
		}
		if (harness_now_ms() > deadline)
			fail_msg("hotmapd did not listen on %s within %d ms", sock, WAIT_MS);
		harness_sleep_ms(20);
	}
}

/* SIGTERM and reap; returns the wait status. */
static int
stop_daemon(struct world *w, pid_t pid)
{
	int status;

	kill(pid, SIGTERM);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	forget_daemon(w, pid);
	return status;
}

/* Waits for a daemon that must refuse to start; its exit status. */
static int
wait_refusal(struct world *w, pid_t pid, const char *log)
{
	int64_t deadline = harness_now_ms() + WAIT_MS;
	int status;

	for (;;) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		if (harness_now_ms() > deadline) {
			char *s = slurp(log);

			fail_msg("hotmapd runs instead of refusing; its log:\n%s", s);
		}
		harness_sleep_ms(20);
	}
	forget_daemon(w, pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static int
remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

/* Children: what a victim or an attacker does. ------------------------------ */

static int
child_mkdir(struct world *w, const void *arg)
{
	const char *const *a = arg;	/* path, mode in octal */

	(void)w;
	umask(0);
	return mkdir(a[0], (mode_t)strtoul(a[1], NULL, 8)) == 0 ? 0 : 1;
}

/*
 * hm_connect to sock with HOTMAP_DAEMON_USER as given (NULL: unset), then
 * hm_open and read the victim's file.  0: read, byte for byte; 10 + errno
 * of hm_connect, 40 + errno of hm_open; 3: wrong bytes.  hm_last_error
 * goes to DIR/why.
 */
struct read_args {
	const char *sock;
	const char *daemon_user;
};

static int
child_read_secret(struct world *w, const void *arg)
{
	const struct read_args *a = arg;
	static uint8_t buf[FILE_SIZE], ref[FILE_SIZE];
	char why[PATH_MAX];
	hm_client *c;
	hm_file *f;
	FILE *out;
	int fd, e, rc = 0;

	if (a->daemon_user != NULL)
		setenv("HOTMAP_DAEMON_USER", a->daemon_user, 1);
	else
		unsetenv("HOTMAP_DAEMON_USER");
	path_in(w, "why", why);
	c = hm_connect(a->sock);
	if (c == NULL) {
		e = errno;
		out = fopen(why, "we");
		if (out != NULL) {
			fprintf(out, "%s\n", hm_last_error());
			fclose(out);
		}
		return 10 + e;
	}
	f = hm_open(c, w->secret, 0);
	if (f == NULL) {
		e = errno;
		hm_disconnect(c);
		return 40 + e;
	}
	fd = open(w->secret, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || hm_pread(f, buf, sizeof buf, 0) != (ssize_t)sizeof buf ||
	    pread(fd, ref, sizeof ref, 0) != (ssize_t)sizeof ref || memcmp(buf, ref, sizeof buf) != 0)
		rc = 3;
	if (fd >= 0)
		close(fd);
	hm_close(f);
	hm_disconnect(c);
	return rc;
}

/* --- fixtures ------------------------------------------------------------- */

/* TMPDIR, or /tmp when unset or too long for a socket path below it. */
static const char *
tmp_dir(void)
{
	const char *tmp = getenv("TMPDIR");

	return tmp == NULL || tmp[0] == '\0' || strlen(tmp) > 60 ? "/tmp" : tmp;
}

/* Whether the current user may execute (search) path. */
static bool
reachable_by(uid_t uid, const char *path)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return false;
	if (pid == 0) {
		become(uid);
		_exit(access(path, X_OK) == 0 ? 0 : 1);
	}
	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Why no test can run here, or NULL.  Printed as a TAP skip of the whole
 * program: cmocka 1.1 prints a skipped test as "not ok # SKIP", which
 * automake's driver counts as a failure. */
static const char *
cannot_run(void)
{
	char path[PATH_MAX];
	struct stat st;
	char *slash;

	if (geteuid() != 0)
		return "needs root: it runs as two other users";
	/* hotmapd holds every directory above its socket to the rule */
	if (realpath(tmp_dir(), path) == NULL)
		return "TMPDIR does not exist";
	for (;;) {
		if (stat(path, &st) < 0)
			return "TMPDIR cannot be examined";
		if (st.st_uid != 0 ||
		    ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)))
			return "TMPDIR is, or lies below, a directory that is not root's or that "
			       "others may write: no second user's daemon may bind there";
		slash = strrchr(path, '/');
		if (slash == NULL || path[1] == '\0')
			break;
		slash[slash == path ? 1 : 0] = '\0';
	}
	if (!reachable_by(VICTIM, program("HOTMAPD", "daemon/hotmapd")) ||
	    !reachable_by(VICTIM, program("TESTS_BUILDDIR", "tests")))
		return "the build tree is out of reach of other users (uid 64000): build where "
		       "every directory above it is world-searchable";
	return NULL;
}

static int
setup(void **state)
{
	struct world *w = calloc(1, sizeof *w);

	assert_non_null(w);
	*state = w;
	snprintf(w->dir, sizeof w->dir, "%s/hotmap-trust.XXXXXX", tmp_dir());
	assert_non_null(mkdtemp(w->dir));
	/* like /tmp: anyone may create, only the owner remove */
	assert_int_equal(chmod(w->dir, 01777), 0);
	path_in(w, "secret", w->secret);
	harness_write_file(w->secret, FILE_SIZE, FILE_SEED);
	assert_int_equal(chown(w->secret, VICTIM, VICTIM), 0);
	assert_int_equal(chmod(w->secret, 0600), 0);
	return 0;
}

static int
teardown(void **state)
{
	struct world *w = *state;
	size_t i;
	int status;

	for (i = 0; i < w->ndaemons; i++) {
		if (w->daemons[i] > 0) {
			kill(w->daemons[i], SIGKILL);
			waitpid(w->daemons[i], &status, 0);
		}
	}
	if (w->dir[0] != '\0')
		nftw(w->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(w);
	return 0;
}

/* --- hotmapd: where it binds ----------------------------------------------- */

/* The attacker makes DIR/hotmap-64000 first (the quickstart's old
 * fallback): the victim's hotmapd refuses it, naming owner and mode. */
static void
test_daemon_refuses_dir_of_another_user(void **state)
{
	struct world *w = *state;
	char dir[PATH_MAX], sock[PATH_MAX], log[PATH_MAX], want[PATH_MAX + 64];
	const char *mk[2] = { dir, "0755" };
	pid_t pid;

	path_in(w, "hotmap-64000", dir);
	path_in(w, "hotmap-64000/hotmapd.sock", sock);
	path_in(w, "refused.log", log);
	assert_int_equal(run_as(ATTACKER, child_mkdir, w, mk), 0);
	pid = start_daemon(w, VICTIM, sock, log);
	assert_int_not_equal(wait_refusal(w, pid, log), 0);
	snprintf(want, sizeof want, "refusing to bind in %s", dir);
	assert_file_has(log, want);
	assert_file_has(log, "owned by uid 64001 (mode 0755)");
	assert_int_equal(access(sock, F_OK), -1);

	/* root's daemon refuses it too */
	pid = start_daemon(w, 0, sock, log);
	assert_int_not_equal(wait_refusal(w, pid, log), 0);
	assert_file_has(log, "neither root nor hotmapd's uid 0");
}

/* A directory others may write, without the sticky bit, is refused
 * whoever owns it; the check reaches the directories above the socket's. */
static void
test_daemon_refuses_writable_dir(void **state)
{
	struct world *w = *state;
	char dir[PATH_MAX], sub[PATH_MAX], sock[PATH_MAX], log[PATH_MAX], want[3 * PATH_MAX];
	const char *mk[2] = { dir, "0777" };
	pid_t pid;

	path_in(w, "hotmap-64000", dir);
	path_in(w, "hotmap-64000/hotmapd.sock", sock);
	path_in(w, "refused.log", log);
	/* the victim's own, careless mkdir -m 777 */
	assert_int_equal(run_as(VICTIM, child_mkdir, w, mk), 0);
	pid = start_daemon(w, VICTIM, sock, log);
	assert_int_not_equal(wait_refusal(w, pid, log), 0);
	assert_file_has(log, "is writable by others (mode 0777, owner uid 64000) without the sticky bit");

	/* group-writable: the same */
	assert_int_equal(chmod(dir, 0770), 0);
	pid = start_daemon(w, VICTIM, sock, log);
	assert_int_not_equal(wait_refusal(w, pid, log), 0);
	assert_file_has(log, "is writable by its group (mode 0770");

	/* fine itself, but below a directory the attacker owns */
	assert_int_equal(chmod(dir, 0755), 0);
	assert_int_equal(chown(dir, ATTACKER, ATTACKER), 0);
	path_in(w, "hotmap-64000/victim", sub);
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(chown(sub, VICTIM, VICTIM), 0);
	path_in(w, "hotmap-64000/victim/hotmapd.sock", sock);
	pid = start_daemon(w, VICTIM, sock, log);
	assert_int_not_equal(wait_refusal(w, pid, log), 0);
	snprintf(want, sizeof want, "refusing to bind in %s: %s, above it, is owned by uid 64001",
		 sub, dir);
	assert_file_has(log, want);
}

/* Accepted: a sticky directory of root's (the socket straight in it, as
 * in /tmp), and a directory the daemon makes itself, which is 0755 even
 * under umask 0. */
static void
test_daemon_accepts_own_and_sticky_dirs(void **state)
{
	struct world *w = *state;
	char dir[PATH_MAX], sock[PATH_MAX], log[PATH_MAX];
	struct stat st;
	mode_t old;
	pid_t pid;

	path_in(w, "victim.sock", sock);
	path_in(w, "victim.log", log);
	pid = start_daemon(w, VICTIM, sock, log);
	wait_listening(w, pid, sock, log);
	stop_daemon(w, pid);

	path_in(w, "hotmap-64000", dir);
	path_in(w, "hotmap-64000/hotmapd.sock", sock);
	old = umask(0);
	pid = start_daemon(w, VICTIM, sock, log);
	umask(old);
	wait_listening(w, pid, sock, log);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_uid, VICTIM);
	assert_int_equal(st.st_mode & 07777, 0755);
	stop_daemon(w, pid);
}

/* --- libhotmap: whom it passes descriptors ---------------------------------- */

/* The attacker's daemon, on a socket in her own directory (0666 by
 * default, so the victim can connect); returns its pid. */
static pid_t
start_attacker(struct world *w, char *sock)
{
	char dir[PATH_MAX], log[PATH_MAX];
	const char *mk[2] = { dir, "0755" };
	pid_t pid;

	path_in(w, "attacker", dir);
	path_in(w, "attacker/hotmapd.sock", sock);
	path_in(w, "attacker.log", log);
	assert_int_equal(run_as(ATTACKER, child_mkdir, w, mk), 0);
	pid = start_daemon(w, ATTACKER, sock, log);
	wait_listening(w, pid, sock, log);
	return pid;
}

/* root, told to trust the attacker, asks her daemon what it received */
static void
assert_attacker_got_nothing(const char *sock, uint64_t hellos)
{
	hm_client *c;

	setenv("HOTMAP_DAEMON_USER", "64001", 1);
	c = hm_connect(sock);
	unsetenv("HOTMAP_DAEMON_USER");
	if (c == NULL)
		fail_msg("hm_connect(%s) trusting uid 64001: %s (%s)", sock, strerror(errno),
			 hm_last_error());
	/* HELLO carries the region's memfd: only ours arrived */
	assert_int_equal(harness_stat(c, "requests_hello"), hellos);
	assert_int_equal(harness_stat(c, "requests_open"), 0);
	assert_int_equal(harness_stat(c, "files"), 0);
	hm_disconnect(c);
}

static void
test_client_refuses_another_users_daemon(void **state)
{
	struct world *w = *state;
	char sock[PATH_MAX], why[PATH_MAX], out[PATH_MAX], err[PATH_MAX];
	struct read_args ra = { .sock = sock };
	const char *ctl = program("HOTMAPCTL", "hotmapctl/hotmapctl");
	hm_client *c;
	int status;
	pid_t pid;

	start_attacker(w, sock);
	path_in(w, "why", why);

	/* the built-in daemon user (hotmapd) is not hers either */
	assert_int_equal(run_as(VICTIM, child_read_secret, w, &ra), 10 + EPERM);
	assert_file_has(why, "the daemon runs as uid 64001");
	assert_file_has(why, "you (uid 64000)");
	assert_file_has(why, "refusing to pass it descriptors");
	ra.daemon_user = "";
	assert_int_equal(run_as(VICTIM, child_read_secret, w, &ra), 10 + EPERM);
	assert_file_has(why, "no daemon user is set");
	ra.daemon_user = "64002";
	assert_int_equal(run_as(VICTIM, child_read_secret, w, &ra), 10 + EPERM);
	assert_file_has(why, "the daemon user '64002' (uid 64002)");

	/* root gives her nothing either, and hotmapctl says why */
	unsetenv("HOTMAP_DAEMON_USER");
	c = hm_connect(sock);
	assert_null(c);
	assert_int_equal(errno, EPERM);
	assert_non_null(strstr(hm_last_error(), "uid 64001"));
	path_in(w, "ctl.out", out);
	path_in(w, "ctl.err", err);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (freopen(out, "w", stdout) == NULL || freopen(err, "w", stderr) == NULL)
			_exit(126);
		execl(ctl, ctl, "--socket", sock, "ping", (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_not_equal(WEXITSTATUS(status), 0);
	assert_file_has(err, "the daemon runs as uid 64001");
	assert_file_has(err, "refusing to pass it descriptors");

	assert_attacker_got_nothing(sock, 1);
}

/*
 * The window of a restart: the victim's client, reconnecting after its
 * daemon stopped, finds the attacker's on the same path (straight in the
 * sticky directory, where she may create) and must not reopen its files
 * through it.  The child reads, says so on ready, waits for go, reads
 * again: 0 would be a read served by the attacker; 60 + errno otherwise.
 */
struct swap_args {
	const char *sock;
	int ready;	/* write end */
	int go;		/* read end */
};

static int
child_read_across_swap(struct world *w, const void *arg)
{
	const struct swap_args *a = arg;
	static uint8_t buf[4096];
	char why[PATH_MAX], byte = 'r';
	hm_client *c;
	hm_file *f;
	FILE *out;
	ssize_t n;
	int e;

	unsetenv("HOTMAP_DAEMON_USER");
	c = hm_connect(a->sock);
	if (c == NULL)
		return 10 + errno;
	hm_set_reconnect(c, 2000);
	f = hm_open(c, w->secret, 0);
	if (f == NULL)
		return 40 + errno;
	if (hm_pread(f, buf, sizeof buf, 0) != (ssize_t)sizeof buf)
		return 3;
	if (write(a->ready, &byte, 1) != 1 || read(a->go, &byte, 1) != 1)
		return 5;
	n = hm_pread(f, buf, sizeof buf, 0);
	e = errno;
	path_in(w, "why", why);
	out = fopen(why, "we");
	if (out != NULL) {
		fprintf(out, "%s\n", hm_last_error());
		fclose(out);
	}
	hm_close(f);
	hm_disconnect(c);
	return n >= 0 ? 0 : 60 + e;
}

static void
test_client_refuses_swapped_daemon(void **state)
{
	struct world *w = *state;
	char sock[PATH_MAX], log[PATH_MAX], why[PATH_MAX], byte;
	int ready[2], go[2], status;
	struct swap_args a;
	pid_t daemon, child;

	path_in(w, "swap.sock", sock);
	path_in(w, "swap.log", log);
	path_in(w, "why", why);
	daemon = start_daemon(w, VICTIM, sock, log);
	wait_listening(w, daemon, sock, log);
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	a = (struct swap_args){ .sock = sock, .ready = ready[1], .go = go[0] };
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		close(ready[0]);
		close(go[1]);
		become(VICTIM);
		_exit(child_read_across_swap(w, &a));
	}
	close(ready[1]);
	close(go[0]);
	if (read(ready[0], &byte, 1) != 1) {
		assert_int_equal(waitpid(child, &status, 0), child);
		fail_msg("the victim's first read failed: wait status 0x%x", (unsigned)status);
	}
	/* the victim's daemon stops (and removes its socket); hers binds */
	assert_true(WIFEXITED(stop_daemon(w, daemon)));
	path_in(w, "attacker.log", log);
	daemon = start_daemon(w, ATTACKER, sock, log);
	wait_listening(w, daemon, sock, log);
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(waitpid(child, &status, 0), child);
	close(ready[0]);
	close(go[1]);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) < 60)
		fail_msg("the victim's read after the swap: exit %d (0: served by the attacker)",
			 WEXITSTATUS(status));
	assert_file_has(why, "the daemon runs as uid 64001");
	assert_attacker_got_nothing(sock, 1);
}

/* Trusted: the victim's own daemon, root's, and the daemon user she names,
 * by uid or by name. */
static void
test_client_trusts_self_root_and_daemon_user(void **state)
{
	struct world *w = *state;
	char dir[PATH_MAX], sock[PATH_MAX], log[PATH_MAX];
	struct read_args ra = { .sock = sock };
	const char *mk[2] = { dir, "0755" };
	struct harness *h;
	struct passwd *pw;
	pid_t pid;

	/* her own */
	path_in(w, "hotmap-64000/hotmapd.sock", sock);
	path_in(w, "victim.log", log);
	pid = start_daemon(w, VICTIM, sock, log);
	wait_listening(w, pid, sock, log);
	assert_int_equal(run_as(VICTIM, child_read_secret, w, &ra), 0);
	stop_daemon(w, pid);

	/* root's */
	h = harness_start(NULL);
	assert_int_equal(chmod(h->dir, 0755), 0);
	ra.sock = h->sock;
	assert_int_equal(run_as(VICTIM, child_read_secret, w, &ra), 0);
	harness_stop(h);

	/* the attacker's, once the victim names her as the daemon's user */
	ra.sock = sock;
	pid = start_attacker(w, sock);
	ra.daemon_user = "64001";
	assert_int_equal(run_as(VICTIM, child_read_secret, w, &ra), 0);
	stop_daemon(w, pid);

	/* a daemon user by name */
	pw = getpwnam("nobody");
	if (pw == NULL || pw->pw_uid == 0 || pw->pw_uid == VICTIM) {
		print_message("# no user 'nobody': the daemon user by name is not tried\n");
		return;
	}
	path_in(w, "nobody", dir);
	path_in(w, "nobody/hotmapd.sock", sock);
	path_in(w, "nobody.log", log);
	assert_int_equal(run_as(pw->pw_uid, child_mkdir, w, mk), 0);
	pid = start_daemon(w, pw->pw_uid, sock, log);
	wait_listening(w, pid, sock, log);
	ra.daemon_user = "nobody";
	assert_int_equal(run_as(VICTIM, child_read_secret, w, &ra), 0);
	ra.daemon_user = "no-such-user-of-hotmap";
	assert_int_equal(run_as(VICTIM, child_read_secret, w, &ra), 10 + EPERM);
	path_in(w, "why", log);
	assert_file_has(log, "'no-such-user-of-hotmap' (no such user now)");
	stop_daemon(w, pid);
}

int
main(void)
{
	const char *why = cannot_run();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_daemon_refuses_dir_of_another_user, setup, teardown),
		cmocka_unit_test_setup_teardown(test_daemon_refuses_writable_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_daemon_accepts_own_and_sticky_dirs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_refuses_another_users_daemon, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_refuses_swapped_daemon, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_trusts_self_root_and_daemon_user, setup,
						teardown),
	};

	if (why != NULL) {
		printf("1..0 # SKIP %s\n", why);
		return 0;
	}
	return cmocka_run_group_tests_name("trust", tests, NULL, NULL);
}
