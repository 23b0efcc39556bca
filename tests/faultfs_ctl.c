/* SPDX-License-Identifier: MIT */
/*
 * faultfs_ctl.c - faultfs (tests/faultfs.c) started, driven, frozen and
 * stopped for the tests that read through it (test_faults.c,
 * netfs_fixture.c, test_threads.c), without cmocka's assertions, so that
 * a test's main can probe with it before any test runs.  faultfs_ctl.h
 * says what each call does.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/faultfs_ctl.h"
#include "tests/harness.h"


/* The faultfs program: $TESTS_BUILDDIR/faultfs as make check sets it, else
 * the build tree seen from the top build directory or from tests/. */
static const char *
faultfs_program(char *buf, size_t len)
{
	static const char *const candidates[] = { "tests/faultfs", "./faultfs" };
	const char *dir = getenv("TESTS_BUILDDIR");
	size_t i;

	if (dir != NULL && dir[0] != '\0') {
		snprintf(buf, len, "%s/faultfs", dir);
		if (access(buf, X_OK) == 0)
			return buf;
	}
	for (i = 0; i < sizeof candidates / sizeof candidates[0]; i++)
		if (access(candidates[i], X_OK) == 0)
			return candidates[i];
	return NULL;
}

/* The last line of faultfs's log, for a reason. */
static void
faultfs_log_tail(const struct faultfs *fs, char *out, size_t len)
{
	char buf[2048];
	FILE *f = fopen(fs->log, "re");
	size_t n = f != NULL ? fread(buf, 1, sizeof buf - 1, f) : 0;
	char *end, *line;

	if (f != NULL)
		fclose(f);
	buf[n] = '\0';
	end = buf + n;
	while (end > buf && (end[-1] == '\n' || end[-1] == ' '))
		*--end = '\0';
	line = strrchr(buf, '\n');
	snprintf(out, len, "%s", line != NULL ? line + 1 : n > 0 ? buf : "(nothing logged)");
}

static int
faultfs_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof sa.sun_path)
		return -1;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int
faultfs_cmd(struct faultfs *fs, char *reply, size_t len, const char *fmt, ...)
{
	char line[256];
	size_t got = 0;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof line - 1) {
		snprintf(reply, len, "command too long");
		return -1;
	}
	line[n++] = '\n';
	if (send(fs->ctl_fd, line, (size_t)n, MSG_NOSIGNAL) != n) {
		snprintf(reply, len, "send to faultfs: %s", strerror(errno));
		return -1;
	}
	/* one byte at a time: the answer is one short line */
	while (got < len - 1) {
		struct pollfd pfd = { .fd = fs->ctl_fd, .events = POLLIN };
		ssize_t r;

		if (poll(&pfd, 1, FAULTFS_START_TIMEOUT_MS) <= 0) {
			snprintf(reply, len, "no answer from faultfs");
			return -1;
		}
		r = recv(fs->ctl_fd, reply + got, 1, 0);
		if (r <= 0) {
			snprintf(reply, len, "faultfs closed its control socket");
			return -1;
		}
		if (reply[got] == '\n')
			break;
		got++;
	}
	reply[got] = '\0';
	return strncmp(reply, "ok", 2) == 0 ? 0 : -1;
}

/* Whether every thread of pid is stopped (state T in /proc/PID/task/TID/
 * stat); false when that cannot be read. */
static bool
all_threads_stopped(pid_t pid)
{
	char path[64], buf[512];
	struct dirent *e;
	bool stopped = true;
	DIR *d;

	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (d == NULL)
		return false;
	while (stopped && (e = readdir(d)) != NULL) {
		const char *rp;
		ssize_t n;
		int fd;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/%d/task/%.20s/stat", (int)pid, e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;	/* the thread ended */
		n = read(fd, buf, sizeof buf - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		rp = strrchr(buf, ')');	/* the name may hold spaces and parentheses */
		stopped = rp != NULL && rp[1] == ' ' && (rp[2] == 'T' || rp[2] == 't');
	}
	closedir(d);
	return stopped;
}

/*
 * Stops faultfs and waits until each of its threads is stopped.  kill()
 * returns before they are, and a thread woken in its read of /dev/fuse by
 * a request that came meanwhile (the daemon's fstat for a warm) takes the
 * request and stops only then, holding it.  FUSE waits for a request its
 * server has read without end, through SIGKILL too, so the daemon could
 * not be killed until faultfs ran again.  A request sent once the threads
 * are stopped waits in the kernel's queue, and SIGKILL ends its wait.
 */
int
faultfs_freeze(struct faultfs *fs, char *why, size_t whylen)
{
	int64_t deadline = harness_now_ms() + FAULTFS_STOP_TIMEOUT_MS;

	if (fs->pid <= 0 || kill(fs->pid, SIGSTOP) < 0) {
		snprintf(why, whylen, "SIGSTOP to faultfs (pid %d): %s", (int)fs->pid,
			 fs->pid <= 0 ? "not running" : strerror(errno));
		return -1;
	}
	fs->stopped = true;
	while (!all_threads_stopped(fs->pid)) {
		if (harness_now_ms() > deadline) {
			snprintf(why, whylen, "faultfs (pid %d) did not stop in %d ms", (int)fs->pid,
				 FAULTFS_STOP_TIMEOUT_MS);
			return -1;
		}
		harness_sleep_ms(1);
	}
	return 0;
}

void
faultfs_thaw(struct faultfs *fs)
{
	if (fs->stopped && fs->pid > 0)
		kill(fs->pid, SIGCONT);
	fs->stopped = false;
}

/* Detaches the mount (lazily: the daemon may still hold the file, and
 * faultfs serves it until it lets go), faultfs running again first if it
 * was stopped. */
void
faultfs_unmount(struct faultfs *fs)
{
	pid_t pid;
	int status;

	faultfs_thaw(fs);
	if (!fs->mounted)
		return;
	fs->mounted = false;
	if (umount2(fs->mnt, MNT_DETACH) == 0)
		return;
	/* not root: the setuid helper does it */
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (null >= 0) {
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		execlp("fusermount3", "fusermount3", "-u", "-z", fs->mnt, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, &status, 0);
}

/* Waits for faultfs to exit (it does once unmounted and let go of), then
 * SIGTERM, then SIGKILL.  Its exit status, or -1 if it had to be killed. */
int
faultfs_reap(struct faultfs *fs)
{
	int64_t deadline = harness_now_ms() + FAULTFS_STOP_TIMEOUT_MS;
	bool termed = false;
	int status;

	if (fs->pid <= 0)
		return 0;
	faultfs_thaw(fs);	/* a stopped faultfs would not exit */
	for (;;) {
		pid_t r = waitpid(fs->pid, &status, WNOHANG);

		if (r == fs->pid)
			break;
		if (harness_now_ms() > deadline) {
			kill(fs->pid, termed ? SIGKILL : SIGTERM);
			termed = true;
			deadline = harness_now_ms() + FAULTFS_STOP_TIMEOUT_MS;
		}
		harness_sleep_ms(10);
	}
	fs->pid = 0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void
faultfs_close_control(struct faultfs *fs)
{
	if (fs->ctl_fd >= 0)
		close(fs->ctl_fd);
	fs->ctl_fd = -1;
}

int
faultfs_start(struct faultfs *fs, const char *dir, const char *subtype, const char *data_arg,
	      char *why, size_t whylen)
{
	char prog_buf[PATH_MAX], reply[128];
	const char *prog = faultfs_program(prog_buf, sizeof prog_buf);
	pid_t parent = getpid();
	int64_t deadline;
	int status;

	memset(fs, 0, sizeof *fs);
	fs->ctl_fd = -1;
#ifndef HAVE_FUSE3
	snprintf(why, whylen, "libfuse3 was not found at configure time");
	return -1;
#endif
	if (prog == NULL) {
		snprintf(why, whylen, "the faultfs program was not built");
		return -1;
	}
	snprintf(fs->dir, sizeof fs->dir, "%s", dir);
	snprintf(fs->mnt, sizeof fs->mnt, "%s/fault", dir);
	snprintf(fs->ctl, sizeof fs->ctl, "%s/faultctl", dir);
	snprintf(fs->log, sizeof fs->log, "%s/faultfs.log", dir);
	if (mkdir(fs->mnt, 0755) < 0 && errno != EEXIST) {
		snprintf(why, whylen, "mkdir %.200s: %s", fs->mnt, strerror(errno));
		return -1;
	}
	fs->pid = fork();
	if (fs->pid < 0) {
		snprintf(why, whylen, "fork: %s", strerror(errno));
		return -1;
	}
	if (fs->pid == 0) {
		int fd;

		/* a test that crashes must not leave a mount served */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
			_exit(125);
		fd = open(fs->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			dup2(fd, STDIN_FILENO);
		harness_close_inherited();
		if (subtype != NULL)
			setenv("FAULTFS_SUBTYPE", subtype, 1);
		execl(prog, prog, fs->mnt, fs->ctl, data_arg, "small:4099:8", (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", prog, strerror(errno));
		_exit(127);
	}
	fs->mounted = true;	/* maybe: unmounting what is not mounted is harmless */

	deadline = harness_now_ms() + FAULTFS_START_TIMEOUT_MS;
	while ((fs->ctl_fd = faultfs_connect(fs->ctl)) < 0) {
		if (waitpid(fs->pid, &status, WNOHANG) == fs->pid) {
			char tail[512];

			fs->pid = 0;
			fs->mounted = false;
			faultfs_log_tail(fs, tail, sizeof tail);
			snprintf(why, whylen, "faultfs could not mount %.200s (%s %d): %s",
				 fs->mnt, WIFEXITED(status) ? "exit status" : "signal",
				 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), tail);
			return -1;
		}
		if (harness_now_ms() > deadline) {
			snprintf(why, whylen, "faultfs did not answer within %d ms",
				 FAULTFS_START_TIMEOUT_MS);
			faultfs_unmount(fs);
			faultfs_reap(fs);
			return -1;
		}
		harness_sleep_ms(10);
	}
	if (faultfs_cmd(fs, reply, sizeof reply, "ping") < 0) {
		snprintf(why, whylen, "faultfs: %s", reply);
		faultfs_close_control(fs);
		faultfs_unmount(fs);
		faultfs_reap(fs);
		return -1;
	}
	return 0;
}

/* Why FUSE cannot be used here, or NULL when a probe mount worked. */
const char *
faultfs_unavailable(char *why, size_t len)
{
#ifndef HAVE_FUSE3
	snprintf(why, len, "libfuse3 was not found at configure time "
		 "(install libfuse3-dev and fuse3, and configure again)");
	return why;
#else
	char dir[PATH_MAX], prog[PATH_MAX];
	const char *tmp = getenv("TMPDIR");
	struct faultfs fs;
	int rc;

	if (faultfs_program(prog, sizeof prog) == NULL) {
		snprintf(why, len, "the faultfs program was not found (set TESTS_BUILDDIR)");
		return why;
	}
	if (access("/dev/fuse", R_OK | W_OK) < 0) {
		snprintf(why, len, "/dev/fuse: %s", strerror(errno));
		return why;
	}
	if (tmp == NULL || tmp[0] == '\0' || strlen(tmp) > 60)
		tmp = "/tmp";
	snprintf(dir, sizeof dir, "%s/hotmap-faultfs.XXXXXX", tmp);
	if (mkdtemp(dir) == NULL) {
		snprintf(why, len, "mkdtemp in %s: %s", tmp, strerror(errno));
		return why;
	}
	/* the probe: mount, answer, unmount */
	rc = faultfs_start(&fs, dir, NULL, "data:4096:1", why, len);
	if (rc == 0) {
		faultfs_close_control(&fs);
		faultfs_unmount(&fs);
		if (faultfs_reap(&fs) != 0) {
			snprintf(why, len, "faultfs did not exit cleanly after its probe mount");
			rc = -1;
		}
	}
	rmdir(fs.mnt);
	unlink(fs.log);
	rmdir(dir);
	return rc == 0 ? NULL : why;
#endif
}

int
faultfs_skip_status(const char *prog)
{
	const char *required = getenv("HOTMAP_REQUIRE_FUSE");
	const char *output = getenv("CMOCKA_MESSAGE_OUTPUT");
	char why[1024];

	if (faultfs_unavailable(why, sizeof why) == NULL)
		return -1;
	if (required != NULL && strcmp(required, "1") == 0) {
		printf("Bail out! FUSE is required (HOTMAP_REQUIRE_FUSE=1): %s\n", why);
		return 1;
	}
	/* TAP's way to skip a whole program; outside the TAP driver,
	 * automake's exit status for a skip */
	printf("1..0 # SKIP FUSE unavailable: %s\n", why);
	fprintf(stderr, "%s: skipped: FUSE unavailable: %s\n", prog, why);
	return output != NULL && strcmp(output, "TAP") == 0 ? 0 : 77;
}
