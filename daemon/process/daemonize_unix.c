/* SPDX-License-Identifier: MIT */
/*
 * daemonize.c - see daemonize.h.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/process/daemonize.h"

/* The caller's end: exit as the daemon says, without running atexit
 * handlers or flushing stdio buffers the daemon shares. */
static void __attribute__((noreturn))
daemonize_wait(int fd)
{
	ssize_t n;
	char c = 0;

	do
		n = read(fd, &c, 1);
	while (n < 0 && errno == EINTR);
	_exit(n == 1 && c == 'R' ? 0 : 1);
}

/* "cannot daemonize: STEP: why" into err; -errno. */
static int
daemonize_fail(const char *step, char *err, size_t errlen)
{
	int e = errno;

	snprintf(err, errlen, "cannot daemonize: %s: %s", step, strerror(e));
	return -e;
}

int
daemonize_start(int *ready_fd, char *err, size_t errlen)
{
	int pipefd[2];
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return daemonize_fail("pipe", err, errlen);
	pid = fork();
	if (pid < 0)
		return daemonize_fail("fork", err, errlen);
	if (pid > 0) {
		close(pipefd[1]);
		daemonize_wait(pipefd[0]);
	}
	close(pipefd[0]);
	/* A session of our own: no controlling terminal, no signals from the
	 * caller's terminal or process group. */
	if (setsid() < 0)
		return daemonize_fail("setsid", err, errlen);
	/* Once more, so that the daemon is not a session leader and can never
	 * acquire a terminal by opening one.  This middle process exits at
	 * once; the caller still waits on the pipe, which the daemon holds. */
	pid = fork();
	if (pid < 0)
		return daemonize_fail("fork", err, errlen);
	if (pid > 0)
		_exit(0);
	/* Hold no directory busy (an unmount of the caller's would fail);
	 * every path in the configuration is absolute by now. */
	if (chdir("/") < 0)
		return daemonize_fail("chdir /", err, errlen);
	/* Files hotmapd creates (socket directory, pid file, log file) get
	 * the modes it asks for, never group- or world-writable whatever the
	 * caller's umask was. */
	umask(022);
	*ready_fd = pipefd[1];
	return 0;
}

void
daemonize_ready(int ready_fd)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY);

	/* Whoever started us may read our stdout or stderr through a pipe
	 * (`hotmapd | tail`): holding it would keep them waiting forever. */
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
	if (ready_fd >= 0) {
		/* Nothing to do when the caller is gone already. */
		if (write(ready_fd, "R", 1) < 0)
			errno = 0;
		close(ready_fd);
	}
}

void
daemonize_stdio_open(void)
{
	int fd;

	while (fcntl(STDERR_FILENO, F_GETFD) < 0) {
		fd = open("/dev/null", O_RDWR | O_NOCTTY);	/* the lowest free: 0, 1 or 2 */
		if (fd < 0 || fd > STDERR_FILENO) {
			if (fd >= 0)
				close(fd);
			break;
		}
	}
	/* 2 is open, but 0 or 1 may not be */
	for (fd = STDIN_FILENO; fd < STDERR_FILENO; fd++) {
		if (fcntl(fd, F_GETFD) < 0) {
			int n = open("/dev/null", O_RDWR | O_NOCTTY);

			if (n >= 0 && n != fd) {
				dup2(n, fd);
				close(n);
			}
		}
	}
}

char *
daemonize_abspath(const char *path)
{
	char cwd[PATH_MAX], *abs;

	if (path[0] == '/')
		return strdup(path);
	if (getcwd(cwd, sizeof cwd) == NULL)
		return NULL;
	if (asprintf(&abs, "%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd, path) < 0)
		return NULL;
	return abs;
}

/* --- the pid file --------------------------------------------------------------- */

/* Opens and locks path once: 1 when the file locked is no longer the one
 * at path (its holder removed it meanwhile: try again), 0 with *fdp, or a
 * negative errno with err set. */
static int
pidfile_lock(const char *path, int *fdp, char *err, size_t errlen)
{
	struct stat a, b;
	char buf[32] = "";
	ssize_t n;
	int fd, e;

	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644);
	if (fd < 0) {
		e = errno;
		snprintf(err, errlen, "pid-file %s: %s", path, strerror(e));
		return -e;
	}
	/* flock, not fcntl: the lock belongs to the open file, not to the
	 * process, and no other descriptor of the file closing drops it. */
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		e = errno;
		if (e == EWOULDBLOCK) {
			n = pread(fd, buf, sizeof buf - 1, 0);
			buf[n > 0 ? strcspn(buf, "\n") : 0] = '\0';
			snprintf(err, errlen, "pid-file %s is held by a running hotmapd%s%s", path,
				 buf[0] != '\0' ? ", pid " : "", buf);
			close(fd);
			return -EEXIST;
		}
		snprintf(err, errlen, "pid-file %s: cannot lock it: %s", path, strerror(e));
		close(fd);
		return -e;
	}
	if (fstat(fd, &a) < 0 || stat(path, &b) < 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
		close(fd);
		return 1;
	}
	if (!S_ISREG(a.st_mode)) {
		snprintf(err, errlen, "pid-file %s is not a regular file", path);
		close(fd);
		return -EINVAL;
	}
	*fdp = fd;
	return 0;
}

int
pidfile_open(struct pidfile *pf, const char *path, char *err, size_t errlen)
{
	int fd = -1, rc, tries;

	pf->fd = -1;
	pf->path = NULL;
	for (tries = 0; tries < 10; tries++) {
		rc = pidfile_lock(path, &fd, err, errlen);
		if (rc <= 0)
			break;
	}
	if (rc > 0) {
		snprintf(err, errlen, "pid-file %s keeps being replaced", path);
		return -EAGAIN;
	}
	if (rc < 0)
		return rc;
	if (ftruncate(fd, 0) < 0) {
		rc = -errno;
		snprintf(err, errlen, "pid-file %s: %s", path, strerror(-rc));
		close(fd);
		return rc;
	}
	pf->path = strdup(path);
	if (pf->path == NULL) {
		snprintf(err, errlen, "out of memory");
		close(fd);
		return -ENOMEM;
	}
	pf->fd = fd;
	return 0;
}

int
pidfile_write(struct pidfile *pf)
{
	char buf[32];
	int n;

	if (pf->fd < 0)
		return 0;
	n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
	if (ftruncate(pf->fd, 0) < 0 || pwrite(pf->fd, buf, (size_t)n, 0) != n)
		return errno != 0 ? -errno : -EIO;
	return 0;
}

void
pidfile_close(struct pidfile *pf)
{
	if (pf->fd < 0)
		return;
	/* Removed while still locked: a hotmapd starting meanwhile either
	 * fails to lock this file, or locks it after we close and sees
	 * (pidfile_lock) that it is no longer the file at the path. */
	if (unlink(pf->path) < 0 && ftruncate(pf->fd, 0) < 0)
		errno = 0;
	close(pf->fd);
	pf->fd = -1;
	free(pf->path);
	pf->path = NULL;
}

int
daemonize_path_absolute(const char *path)
{
	return path[0] == '/';
}

int
daemonize_process_setup(char *err, size_t errlen, char *warn, size_t warnlen)
{
	struct rlimit rl;

	(void)err;
	(void)errlen;
	warn[0] = '\0';
	/* Reply chunks (256 KiB) are allocated and freed all the time: keep
	 * them in the heap for reuse instead of a fresh mmap each, whose
	 * every page would fault on first write and be unmapped again. */
	mallopt(M_MMAP_THRESHOLD, 4 * 1024 * 1024);
	mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
	/* A client that hangs up mid-reply must cost an EPIPE, not the
	 * daemon. */
	signal(SIGPIPE, SIG_IGN);
	/* Descriptors are the daemon's scarcest resource: one per cached
	 * file. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			snprintf(warn, warnlen, "cannot raise the descriptor limit: %s",
				 strerror(errno));
	}
	return 0;
}

void
daemonize_user_text(char *buf, size_t len)
{
	snprintf(buf, len, "uid %u, gid %u", (unsigned)getuid(), (unsigned)getgid());
}
