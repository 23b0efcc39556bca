/* SPDX-License-Identifier: MIT */
/*
 * harness.c - see harness.h.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/content.h"
#include "client/hotmap_admin.h"
#include "tests/harness.h"

/* Generous: under AddressSanitizer on a loaded machine a start takes
 * seconds, and a timeout only ever costs a failing run. */
#define HARNESS_START_TIMEOUT_MS	30000
#define HARNESS_STOP_TIMEOUT_MS		30000
#define HARNESS_STAT_TIMEOUT_MS		10000
/* The tail of the daemon's log a failure message carries. */
#define HARNESS_LOG_TAIL		4096

int64_t
harness_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
harness_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* --- the daemon ------------------------------------------------------------ */

/* $HOTMAPD as make check sets it, else the build tree seen from the top
 * build directory or from tests/. */
static const char *
daemon_program(void)
{
	static const char *const candidates[] = { "daemon/hotmapd", "../daemon/hotmapd" };
	const char *env = getenv("HOTMAPD");
	size_t i;

	if (env != NULL && env[0] != '\0')
		return env;
	for (i = 0; i < sizeof candidates / sizeof candidates[0]; i++)
		if (access(candidates[i], X_OK) == 0)
			return candidates[i];
	return NULL;
}

static int
remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	/* Make the tests' unreadable or read-only leftovers removable. */
	if (remove(path) < 0 && errno == EACCES) {
		chmod(path, 0700);
		remove(path);
	}
	return 0;
}

static void
remove_tree(const char *dir)
{
	if (dir[0] != '\0')
		nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

char *
harness_log_read(const struct harness *h)
{
	FILE *f = fopen(h->log, "re");
	char *s = NULL;
	size_t len = 0;
	long size;

	if (f != NULL && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0) {
		rewind(f);
		s = malloc((size_t)size + 1);
		if (s != NULL)
			len = fread(s, 1, (size_t)size, f);
	}
	if (f != NULL)
		fclose(f);
	if (s == NULL)
		return strdup("(no log)");
	s[len] = '\0';
	return s;
}

/* Formats a failure about the daemon with the tail of its log into out. */
static void
describe_failure(const struct harness *h, char *out, size_t outlen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void
describe_failure(const struct harness *h, char *out, size_t outlen, const char *fmt, ...)
{
	char *log = harness_log_read(h);
	size_t len = strlen(log), n;
	const char *tail = len > HARNESS_LOG_TAIL ? log + len - HARNESS_LOG_TAIL : log;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out, outlen, fmt, ap);
	va_end(ap);
	n = strlen(out);
	snprintf(out + n, outlen - n, "\n--- hotmapd.log%s ---\n%s--- end of log ---",
		 tail != log ? " (tail)" : "", tail);
	free(log);
}

static void
describe_status(int status, char *out, size_t len)
{
	if (WIFEXITED(status))
		snprintf(out, len, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(out, len, "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(out, len, "wait status 0x%x", status);
}

static void
exec_daemon(const struct harness *h, const char *prog, const struct harness_opts *opts,
	    pid_t parent)
{
	const char *argv[40];
	int i = 0, j, fd;

	/* A test that crashes must not leave its daemon running. */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
		_exit(125);

	if (opts->run_as != 0) {
		static char uid[32], gid[32];

		snprintf(uid, sizeof uid, "--reuid=%u", (unsigned)opts->run_as);
		snprintf(gid, sizeof gid, "--regid=%u", (unsigned)opts->run_as);
		argv[i++] = "setpriv";
		argv[i++] = uid;
		argv[i++] = gid;
		argv[i++] = "--clear-groups";
		argv[i++] = "--inh-caps=-all,+lease";
		argv[i++] = "--ambient-caps=-all,+lease";
		argv[i++] = "--bounding-set=-all,+lease";
		argv[i++] = "--no-new-privs";
		argv[i++] = "--";
	}
	argv[i++] = prog;
	argv[i++] = "--foreground";
	argv[i++] = "--socket";
	argv[i++] = h->sock;
	if (opts->backend != NULL) {
		argv[i++] = "--backend";
		argv[i++] = opts->backend;
	}
	if (opts->with_root) {
		argv[i++] = "--root";
		argv[i++] = h->root;
	}
	for (j = 0; j < 8 && opts->extra[j] != NULL; j++)
		argv[i++] = opts->extra[j];
	argv[i++] = "-v";
	argv[i] = NULL;

	/* appended: after harness_restart the first daemon's lines (and the
	 * offsets of harness_log_mark) stay */
	fd = open(h->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd < 0)
		_exit(126);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0)
		dup2(fd, STDIN_FILENO);
	harness_close_inherited();	/* before the limit: it counts to it */
	if (opts->nofile != 0) {
		struct rlimit rl = { .rlim_cur = opts->nofile, .rlim_max = opts->nofile };

		if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
			fprintf(stderr, "harness: RLIMIT_NOFILE %lu: %s\n", opts->nofile,
				strerror(errno));
			_exit(124);
		}
	}
	/* Whatever ran the tests must not reach the daemon: it would take a
	 * systemd socket, notify a manager, or log in journal format. */
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDNAMES");
	if (!opts->keep_notify) {
		unsetenv("NOTIFY_SOCKET");
		unsetenv("WATCHDOG_USEC");
	}
	unsetenv("JOURNAL_STREAM");
	signal(SIGPIPE, SIG_DFL);
	execvp(argv[0], (char *const *)argv);
	fprintf(stderr, "harness: exec %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

void
harness_close_inherited(void)
{
	int fd, maxfd = (int)sysconf(_SC_OPEN_MAX);

	if (maxfd < 0 || maxfd > 65536)
		maxfd = 65536;
	for (fd = 3; fd < maxfd; fd++)
		close(fd);
}

/* The address of the socket at path (harness_start keeps it short). */
static struct sockaddr_un
socket_address(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = strlen(path);

	assert_true(len < sizeof sa.sun_path);
	memcpy(sa.sun_path, path, len + 1);
	return sa;
}

bool
harness_socket_accepts(const char *path)
{
	struct sockaddr_un sa = socket_address(path);
	int fd, rc;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
	close(fd);
	return rc == 0;
}

static void
harness_free(struct harness *h)
{
	remove_tree(h->dir);
	free(h);
}

/*
 * Starts hotmapd for h and returns once it accepts connections; fails the
 * test with the end of its log otherwise (freeing h when first, as
 * harness_start has nothing to stop then).
 */
static void
run_daemon(struct harness *h, const char *prog, bool first)
{
	char msg[HARNESS_LOG_TAIL + 512], st[64];
	pid_t parent = getpid();
	int64_t deadline;
	int status;

	h->pid = fork();
	if (h->pid < 0) {
		int e = errno;

		h->pid = 0;
		if (first)
			harness_free(h);
		fail_msg("fork: %s", strerror(e));
		return;
	}
	if (h->pid == 0)
		exec_daemon(h, prog, h->opts, parent);
	deadline = harness_now_ms() + HARNESS_START_TIMEOUT_MS;
	for (;;) {
		if (waitpid(h->pid, &status, WNOHANG) == h->pid) {
			describe_status(status, st, sizeof st);
			describe_failure(h, msg, sizeof msg, "%s exited before listening%s (%s)",
					 prog, first ? "" : " again", st);
			break;
		}
		if (harness_socket_accepts(h->sock))
			return;
		if (harness_now_ms() > deadline) {
			describe_failure(h, msg, sizeof msg, "%s did not listen%s on %s within %d ms",
					 prog, first ? "" : " again", h->sock,
					 HARNESS_START_TIMEOUT_MS);
			kill(h->pid, SIGKILL);
			waitpid(h->pid, &status, 0);
			break;
		}
		harness_sleep_ms(5);
	}
	h->pid = 0;
	if (first)
		harness_free(h);
	fail_msg("%s", msg);
}

struct harness *
harness_start(const struct harness_opts *opts)
{
	static const struct harness_opts defaults = { 0 };
	struct sockaddr_un sa;
	const char *tmp = getenv("TMPDIR"), *prog = daemon_program();
	struct harness *h;

	if (opts == NULL)
		opts = &defaults;
	/* The suites test the daemon's tiers (socket, region, ring) unless
	 * the environment asks for direct reads; the direct tier's tests ask
	 * for it per connection (hm_connect_opts). */
	setenv("HOTMAP_DIRECT", "0", 0);
	if (prog == NULL)
		fail_msg("hotmapd not found: set HOTMAPD, or run from the build directory");
	h = calloc(1, sizeof *h);
	assert_non_null(h);
	/* A socket path must fit in sun_path. */
	if (tmp == NULL || tmp[0] == '\0' || strlen(tmp) > sizeof sa.sun_path - 40)
		tmp = "/tmp";
	snprintf(h->dir, sizeof h->dir, "%s/hotmap-test.XXXXXX", tmp);
	if (mkdtemp(h->dir) == NULL) {
		int e = errno;

		free(h);
		fail_msg("mkdtemp in %s: %s", tmp, strerror(e));
		return NULL;
	}
	harness_path(h, "sock", h->sock);
	harness_path(h, "hotmapd.log", h->log);
	harness_path(h, "root", h->root);
	harness_path(h, "outside", h->outside);
	if (mkdir(h->root, 0755) < 0 || mkdir(h->outside, 0755) < 0) {
		int e = errno;

		harness_free(h);
		fail_msg("mkdir: %s", strerror(e));
		return NULL;
	}

	h->opts = opts;
	if (opts->run_as != 0) {
		/* the daemon's socket directory must be its own; the others
		 * reach the socket through it */
		if (chown(h->dir, opts->run_as, opts->run_as) < 0 || chmod(h->dir, 0755) < 0) {
			int e = errno;

			harness_free(h);
			fail_msg("chown %s to uid %u: %s", h->dir, (unsigned)opts->run_as,
				 strerror(e));
			return NULL;
		}
	}
	run_daemon(h, prog, true);
	return h;
}

bool
harness_can_nofile(unsigned long n)
{
	struct rlimit rl = { .rlim_cur = n, .rlim_max = n };
	int status;
	pid_t pid;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= n))
		return true;
	/* above the hard limit: only with CAP_SYS_RESOURCE (root in a
	 * container may lack it), so asked of a child */
	pid = fork();
	if (pid == 0) {
		rl.rlim_cur = rl.rlim_max = n;
		_exit(setrlimit(RLIMIT_NOFILE, &rl) == 0 ? 0 : 1);
	}
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 0;
}

bool
harness_can_run_as(void)
{
	return geteuid() == 0 && system("setpriv --version >/dev/null 2>&1") == 0;
}

void
harness_stop(struct harness *h)
{
	char msg[HARNESS_LOG_TAIL + 512], st[64];
	bool failed = false;
	int64_t deadline;
	int status = 0;

	if (h == NULL)
		return;
	if (h->pid > 0) {
		kill(h->pid, SIGTERM);
		deadline = harness_now_ms() + HARNESS_STOP_TIMEOUT_MS;
		while (waitpid(h->pid, &status, WNOHANG) == 0) {
			if (harness_now_ms() > deadline) {
				describe_failure(h, msg, sizeof msg,
						 "hotmapd did not exit within %d ms of SIGTERM",
						 HARNESS_STOP_TIMEOUT_MS);
				kill(h->pid, SIGKILL);
				waitpid(h->pid, &status, 0);
				failed = true;
				break;
			}
			harness_sleep_ms(2);
		}
		h->pid = 0;
		if (!failed && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
			describe_status(status, st, sizeof st);
			describe_failure(h, msg, sizeof msg, "hotmapd: %s after SIGTERM, not exit 0", st);
			failed = true;
		}
		if (!failed && access(h->sock, F_OK) == 0) {
			describe_failure(h, msg, sizeof msg, "hotmapd exited but left %s behind", h->sock);
			failed = true;
		}
	}
	harness_free(h);
	if (failed)
		fail_msg("%s", msg);
}

void
harness_restart(struct harness *h)
{
	const char *prog = daemon_program();

	assert_int_equal(h->pid, 0);
	run_daemon(h, prog, false);
}

void
harness_kill(struct harness *h)
{
	int status;

	assert_true(h->pid > 0);
	assert_int_equal(kill(h->pid, SIGKILL), 0);
	assert_int_equal(waitpid(h->pid, &status, 0), h->pid);
	h->pid = 0;
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

hm_client *
harness_connect(const struct harness *h)
{
	hm_client *c = hm_connect(h->sock);

	if (c == NULL)
		fail_msg("hm_connect(%s): %s (%s)", h->sock, strerror(errno), hm_last_error());
	return c;
}

hm_client *
harness_connect_direct(const struct harness *h, int after, const char *policy)
{
	struct hm_options o = HM_OPTIONS_INIT;
	hm_client *c;

	o.direct = 1;
	o.direct_after = after;
	o.copy_policy = policy;
	c = hm_connect_opts(h->sock, &o);
	if (c == NULL)
		fail_msg("hm_connect_opts(%s, direct after %d, copy policy %s): %s (%s)", h->sock,
			 after, policy != NULL ? policy : "default", strerror(errno), hm_last_error());
	return c;
}

hm_client *
harness_connect_local(const struct harness *h, int direct)
{
	struct hm_options o = HM_OPTIONS_INIT;
	hm_client *c;

	o.fallback = HM_FALLBACK_LOCAL;
	o.direct = direct;
	c = hm_connect_opts(h->sock, &o);
	if (c == NULL)
		fail_msg("hm_connect_opts(%s, fallback local): %s", h->sock, strerror(errno));
	return c;
}

void
harness_path(const struct harness *h, const char *name, char *out)
{
	int n = snprintf(out, PATH_MAX, "%s/%s", h->dir, name);

	assert_true(n > 0 && n < PATH_MAX);
}

/* --- /proc ----------------------------------------------------------------- */

unsigned
harness_count_maps(const char *needle)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[PATH_MAX + 128];
	unsigned n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof line, f) != NULL)
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

long
harness_rss_anon_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "RssAnon: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

int
harness_count_fds(pid_t pid, int *maxfd)
{
	char path[64];
	struct dirent *e;
	int n = 0, top = -1;
	DIR *d;

	snprintf(path, sizeof path, "/proc/%ld/fd", (long)pid);
	d = opendir(path);
	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		int fd;

		if (e->d_name[0] == '.')
			continue;
		fd = atoi(e->d_name);
		n++;
		if (fd > top)
			top = fd;
	}
	closedir(d);
	if (maxfd != NULL)
		*maxfd = top;
	return n;
}

/* --- content -------------------------------------------------------------- */

void
harness_fill(void *buf, size_t len, uint64_t seed, uint64_t pos)
{
	content_fill(buf, len, seed, pos);
}

static void
write_at(const char *path, int fd, uint64_t offset, uint64_t len, uint64_t seed)
{
	size_t chunk = len < (1u << 20) ? (size_t)len : (1u << 20);
	uint8_t *buf = malloc(chunk > 0 ? chunk : 1);

	assert_non_null(buf);
	while (len > 0) {
		size_t n = len < chunk ? (size_t)len : chunk;
		ssize_t w;

		harness_fill(buf, n, seed, offset);
		w = pwrite(fd, buf, n, (off_t)offset);
		if (w < 0) {
			int e = errno;

			free(buf);
			fail_msg("pwrite %s: %s", path, strerror(e));
		}
		offset += (uint64_t)w;
		len -= (uint64_t)w;
	}
	free(buf);
}

void
harness_write_file(const char *path, uint64_t size, uint64_t seed)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		fail_msg("create %s: %s", path, strerror(errno));
	write_at(path, fd, 0, size, seed);
	assert_int_equal(close(fd), 0);
}

void
harness_rewrite(const char *path, uint64_t offset, size_t len, uint64_t seed)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		fail_msg("open %s: %s", path, strerror(errno));
	write_at(path, fd, offset, len, seed);
	assert_int_equal(close(fd), 0);
}

uint64_t
harness_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* --- reads compared with pread -------------------------------------------- */

/* What a descriptor opened now gives: pread(2) until len bytes or the end
 * of the file (hm_pread is short only at EOF, one pread(2) on procfs may
 * be short anywhere).  The first call is made even for len 0, so that a
 * pipe answers ESPIPE as it does to pread. */
static ssize_t
pread_full(int fd, uint8_t *buf, size_t len, uint64_t offset)
{
	size_t done = 0;

	for (;;) {
		ssize_t n = pread(fd, buf + done, len - done, (off_t)(offset + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return done > 0 ? (ssize_t)done : -1;
		}
		done += (size_t)n;
		if (n == 0 || done == len)
			return (ssize_t)done;
	}
}

#define POISON 0xa5
/* How far past the returned length the poison is checked: hm_pread may
 * only write what it returns. */
#define POISON_CHECK (64u * 1024u)

int
harness_compare_read(hm_file *f, int fd, uint64_t offset, size_t len,
		     uint8_t *buf, uint8_t *ref, ssize_t *result, char *why, size_t whylen)
{
	size_t i, end;
	ssize_t n, r;
	int hm_errno, ref_errno;

	memset(buf, POISON, len + HARNESS_SLACK);
	errno = 0;
	n = hm_pread(f, buf, len, offset);
	hm_errno = errno;
	/* offset beyond INT64_MAX becomes a negative off_t: pread's EINVAL
	 * is the reference for it too. */
	errno = 0;
	r = pread_full(fd, ref, len, offset);
	ref_errno = errno;
	if (result != NULL)
		*result = r;
	if (n != r || (n < 0 && hm_errno != ref_errno)) {
		snprintf(why, whylen,
			 "offset %llu length %zu: hm_pread returned %zd (%s, \"%s\"), pread %zd (%s)",
			 (unsigned long long)offset, len, n, n < 0 ? strerror(hm_errno) : "ok",
			 hm_last_error(), r, r < 0 ? strerror(ref_errno) : "ok");
		return -1;
	}
	if (n < 0)
		return 0;
	if (memcmp(buf, ref, (size_t)n) != 0) {
		for (i = 0; buf[i] == ref[i]; i++)
			;
		snprintf(why, whylen,
			 "offset %llu length %zu: %zd bytes as pread's, but byte %zu (file offset %llu) "
			 "is 0x%02x, pread has 0x%02x",
			 (unsigned long long)offset, len, n, i, (unsigned long long)(offset + i),
			 buf[i], ref[i]);
		return -1;
	}
	end = len - (size_t)n > POISON_CHECK ? (size_t)n + POISON_CHECK : len;
	for (i = (size_t)n; i < end + HARNESS_SLACK; i++) {
		if (buf[i] != POISON) {
			snprintf(why, whylen,
				 "offset %llu length %zu: hm_pread returned %zd but wrote byte %zu",
				 (unsigned long long)offset, len, n, i);
			return -1;
		}
	}
	return 0;
}

static uint8_t *check_buf, *check_ref;
static size_t check_cap;

ssize_t
harness_check_read_at(hm_file *f, int fd, uint64_t offset, size_t len, const char *file, int line)
{
	char why[512];
	ssize_t n = 0;

	if (len + HARNESS_SLACK > check_cap) {
		free(check_buf);
		free(check_ref);
		check_cap = len + HARNESS_SLACK;
		check_buf = malloc(check_cap);
		check_ref = malloc(check_cap);
		assert_non_null(check_buf);
		assert_non_null(check_ref);
	}
	if (harness_compare_read(f, fd, offset, len, check_buf, check_ref, &n, why, sizeof why) < 0) {
		/* Reported at the caller's line: that is the case that failed. */
		print_error("ERROR: %s\n", why);
		_fail(file, line);
	}
	return n;
}

void
harness_free_buffers(void)
{
	free(check_buf);
	free(check_ref);
	check_buf = check_ref = NULL;
	check_cap = 0;
}

/* --- statistics ----------------------------------------------------------- */

struct stat_lookup {
	const char *key;
	uint64_t value;
	bool found;
};

static void
stat_lookup_cb(const char *key, uint64_t value, const char *text, void *arg)
{
	struct stat_lookup *l = arg;

	(void)text;
	if (strcmp(key, l->key) == 0) {
		l->value = value;
		l->found = true;
	}
}

uint64_t
harness_stat(hm_client *c, const char *key)
{
	struct stat_lookup l = { .key = key };

	if (hm_stats(c, stat_lookup_cb, &l) < 0)
		fail_msg("hm_stats: %s (%s)", strerror(errno), hm_last_error());
	if (!l.found)
		fail_msg("hm_stats has no key \"%s\"", key);
	return l.value;
}

void
harness_wait_stat(hm_client *c, const char *key, uint64_t want)
{
	int64_t deadline = harness_now_ms() + HARNESS_STAT_TIMEOUT_MS;
	uint64_t v;

	while ((v = harness_stat(c, key)) != want) {
		if (harness_now_ms() > deadline)
			fail_msg("stat %s is %llu, want %llu (waited %d ms)", key,
				 (unsigned long long)v, (unsigned long long)want,
				 HARNESS_STAT_TIMEOUT_MS);
		harness_sleep_ms(5);
	}
}

/* --- the log -------------------------------------------------------------- */

size_t
harness_log_mark(const struct harness *h)
{
	struct stat st;

	if (stat(h->log, &st) < 0)
		return 0;
	return (size_t)st.st_size;
}

bool
harness_log_find(const struct harness *h, size_t mark, const char *needle,
		 const char *needle2)
{
	char *log = harness_log_read(h), *line, *save = NULL;
	bool found = false;

	if (mark > strlen(log))
		mark = strlen(log);
	for (line = strtok_r(log + mark, "\n", &save); line != NULL && !found;
	     line = strtok_r(NULL, "\n", &save))
		found = strstr(line, needle) != NULL &&
			(needle2 == NULL || strstr(line, needle2) != NULL);
	free(log);
	return found;
}

/* --- the raw wire --------------------------------------------------------- */

static void
msg_put(struct wire_msg *m, uint8_t b)
{
	assert_true(m->n < sizeof m->b);
	m->b[m->n++] = b;
}

static void
msg_put_varint(struct wire_msg *m, uint64_t v)
{
	while (v >= 0x80) {
		msg_put(m, (uint8_t)(v | 0x80));
		v >>= 7;
	}
	msg_put(m, (uint8_t)v);
}

void
wire_varint(struct wire_msg *m, unsigned field, uint64_t v)
{
	msg_put_varint(m, (uint64_t)field << 3 | 0);
	msg_put_varint(m, v);
}

void
wire_string(struct wire_msg *m, unsigned field, const char *s)
{
	size_t len = strlen(s), i;

	msg_put_varint(m, (uint64_t)field << 3 | 2);
	msg_put_varint(m, len);
	for (i = 0; i < len; i++)
		msg_put(m, (uint8_t)s[i]);
}

static int
get_varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *out)
{
	uint64_t v = 0;
	unsigned shift;

	for (shift = 0; shift < 64; shift += 7) {
		if (*pos >= len)
			return -1;
		v |= (uint64_t)(p[*pos] & 0x7f) << shift;
		if ((p[(*pos)++] & 0x80) == 0) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

/* Finds field's value (varint) or bytes (length-delimited). */
static int
find_field(const uint8_t *msg, size_t len, unsigned field, uint64_t *value,
	   const uint8_t **bytes, size_t *nbytes)
{
	size_t pos = 0;
	int found = 0;

	while (pos < len) {
		uint64_t key, v;

		if (get_varint(msg, len, &pos, &key) < 0)
			return -1;
		switch (key & 7) {
		case 0:
			if (get_varint(msg, len, &pos, &v) < 0)
				return -1;
			if (key >> 3 == field) {
				*value = v;
				found = 1;
			}
			break;
		case 1:
			pos += 8;
			break;
		case 2:
			if (get_varint(msg, len, &pos, &v) < 0 || v > len - pos)
				return -1;
			if (key >> 3 == field) {
				*bytes = msg + pos;
				*nbytes = (size_t)v;
				found = 1;
			}
			pos += (size_t)v;
			break;
		case 5:
			pos += 4;
			break;
		default:
			return -1;
		}
	}
	return pos == len ? found : -1;
}

int
wire_get_varint(const uint8_t *msg, size_t len, unsigned field, uint64_t *out)
{
	const uint8_t *b;
	size_t nb;

	*out = 0;
	return find_field(msg, len, field, out, &b, &nb) < 0 ? -1 : 0;
}

int
wire_get_string(const uint8_t *msg, size_t len, unsigned field, char *out, size_t outlen)
{
	const uint8_t *b = NULL;
	size_t nb = 0;
	uint64_t v;

	out[0] = '\0';
	if (find_field(msg, len, field, &v, &b, &nb) < 0)
		return -1;
	if (b != NULL)
		snprintf(out, outlen, "%.*s", (int)nb, (const char *)b);
	return 0;
}

int
wire_connect(const struct harness *h)
{
	struct sockaddr_un sa = socket_address(h->sock);
	int fd;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int e = errno;

		close(fd);
		fail_msg("connect %s: %s", h->sock, strerror(e));
	}
	return fd;
}

static void
put_le(uint8_t *p, uint64_t v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t
get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	int i;

	for (i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

void
wire_put_header(uint8_t *out, const struct wire_header *hdr)
{
	put_le(out, hdr->length, 4);
	put_le(out + 4, hdr->raw_length, 4);
	put_le(out + 8, hdr->type, 2);
	out[10] = hdr->version;
	out[11] = hdr->flags;
	put_le(out + 12, hdr->id, 4);
}

int
wire_send(int fd, const struct wire_header *hdr, const void *body, size_t len, int pass_fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} control;
	uint8_t head[WIRE_HEADER_SIZE];
	struct iovec iov[2];
	struct msghdr mh;
	ssize_t w;

	wire_put_header(head, hdr);
	iov[0] = (struct iovec){ head, sizeof head };
	iov[1] = (struct iovec){ (void *)body, len };
	memset(&mh, 0, sizeof mh);
	mh.msg_iov = iov;
	mh.msg_iovlen = len > 0 ? 2 : 1;
	if (pass_fd >= 0) {
		struct cmsghdr *cm;

		memset(&control, 0, sizeof control);
		mh.msg_control = control.buf;
		mh.msg_controllen = sizeof control.buf;
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
	}
	do
		w = sendmsg(fd, &mh, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	if (w < 0)
		return -errno;
	/* The descriptor went with the first byte; the rest is plain. */
	if ((size_t)w < sizeof head) {
		int rc = wire_send_bytes(fd, head + w, sizeof head - (size_t)w);

		if (rc < 0)
			return rc;
		w = 0;
	} else {
		w -= (ssize_t)sizeof head;
	}
	return wire_send_bytes(fd, (const uint8_t *)body + w, len - (size_t)w);
}

int
wire_send_msg(int fd, uint16_t type, uint32_t id, const struct wire_msg *m, int pass_fd)
{
	struct wire_header hdr = {
		.length = m != NULL ? (uint32_t)m->n : 0,
		.type = type,
		.version = WIRE_VERSION,
		.id = id,
	};

	return wire_send(fd, &hdr, m != NULL ? m->b : NULL, m != NULL ? m->n : 0, pass_fd);
}

int
wire_send_bytes(int fd, const void *p, size_t len)
{
	const uint8_t *b = p;

	while (len > 0) {
		ssize_t w = send(fd, b, len, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		b += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Exactly len bytes before the deadline: 1, 0 at end of stream before the
 * first byte, -errno otherwise (-ECONNRESET for a stream cut mid-way). */
static int
recv_exact(int fd, uint8_t *p, size_t len, int64_t deadline)
{
	size_t got = 0;

	while (got < len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - harness_now_ms();
		ssize_t r;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pfd.revents == 0)
			continue;
		r = recv(fd, p + got, len - got, MSG_DONTWAIT);
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		if (r == 0)
			return got == 0 ? 0 : -ECONNRESET;
		got += (size_t)r;
	}
	return 1;
}

int
wire_recv(int fd, struct wire_header *hdr, uint8_t *msg, size_t cap, int timeout_ms)
{
	int64_t deadline = harness_now_ms() + timeout_ms;
	uint8_t head[WIRE_HEADER_SIZE], drop[4096];
	uint32_t raw;
	int rc;

	rc = recv_exact(fd, head, sizeof head, deadline);
	if (rc <= 0)
		return rc;
	hdr->length = (uint32_t)get_le(head, 4);
	hdr->raw_length = (uint32_t)get_le(head + 4, 4);
	hdr->type = (uint16_t)get_le(head + 8, 2);
	hdr->version = head[10];
	hdr->flags = head[11];
	hdr->id = (uint32_t)get_le(head + 12, 4);
	if (hdr->length > cap)
		return -EMSGSIZE;
	if (hdr->length > 0) {
		rc = recv_exact(fd, msg, hdr->length, deadline);
		if (rc <= 0)
			return rc == 0 ? -ECONNRESET : rc;
	}
	for (raw = hdr->raw_length; raw > 0;) {
		size_t n = raw < sizeof drop ? raw : sizeof drop;

		rc = recv_exact(fd, drop, n, deadline);
		if (rc <= 0)
			return rc == 0 ? -ECONNRESET : rc;
		raw -= (uint32_t)n;
	}
	return 1;
}

size_t
wire_expect_eof(int fd, int timeout_ms)
{
	int64_t deadline = harness_now_ms() + timeout_ms;
	uint8_t buf[4096];
	size_t dropped = 0;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - harness_now_ms();
		ssize_t r;

		if (left <= 0)
			fail_msg("hotmapd kept the connection open for %d ms", timeout_ms);
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno == ECONNRESET))
			return dropped;
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			fail_msg("recv: %s", strerror(errno));
		}
		dropped += (size_t)r;
	}
}

void
wire_hello(int fd)
{
	struct wire_msg m = { .n = 0 };
	struct wire_header h;
	uint8_t reply[1024];
	uint64_t version;

	wire_varint(&m, 1, WIRE_VERSION);
	wire_varint(&m, 2, 3);		/* descriptor passing, open by path */
	wire_string(&m, 3, "harness");
	assert_int_equal(wire_send_msg(fd, WIRE_HELLO, 1, &m, -1), 0);
	assert_int_equal(wire_recv(fd, &h, reply, sizeof reply, 10000), 1);
	assert_int_equal(h.type, WIRE_HELLO_REPLY);
	assert_int_equal(h.id, 1);
	assert_int_equal(wire_get_varint(reply, h.length, 1, &version), 0);
	assert_int_equal(version, WIRE_VERSION);
}
