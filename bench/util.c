/* SPDX-License-Identifier: MIT */
/*
 * util.c - clocks, percentiles, /proc, page cache control, test data and
 * child processes for hmbench (see bench.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"

bool bench_is_child;

void
bench_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	fprintf(stderr, "hmbench: %s\n", line);
}

void
xsnprintf(char *dst, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(dst, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len) {
		fprintf(stderr, "hmbench: path too long: %s...\n", dst);
		exit(1);
	}
}

void *
xmalloc(size_t n)
{
	void *p = malloc(n != 0 ? n : 1);

	if (p == NULL) {
		fprintf(stderr, "hmbench: out of memory (%zu bytes)\n", n);
		exit(1);
	}
	return p;
}

void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n != 0 ? n : 1, size != 0 ? size : 1);

	if (p == NULL) {
		fprintf(stderr, "hmbench: out of memory (%zu x %zu bytes)\n", n, size);
		exit(1);
	}
	return p;
}

void *
page_buffer(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	if (p == MAP_FAILED) {
		fprintf(stderr, "hmbench: cannot map %zu bytes: %s\n", n, strerror(errno));
		exit(1);
	}
	/* fault every page in now, writable */
	memset(p, 0x5a, n);
	return p;
}

double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

void
sort_doubles(double *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_double);
}

double
percentile(const double *sorted, size_t n, double p)
{
	size_t k;

	if (n == 0)
		return 0;
	/* nearest rank: the smallest sample with at least p% at or below it */
	k = (size_t)((p / 100.0) * (double)n + 0.999999);
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return sorted[k - 1];
}

double
median_of(const double *v, size_t n)
{
	double tmp[BENCH_MAX_ROUNDS];

	if (n == 0)
		return 0;
	if (n > BENCH_MAX_ROUNDS)
		n = BENCH_MAX_ROUNDS;
	memcpy(tmp, v, n * sizeof *v);
	sort_doubles(tmp, n);
	return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

void
faults_self(struct faults *f)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	f->minflt = ru.ru_minflt;
	f->majflt = ru.ru_majflt;
}

void
faults_pid(pid_t pid, struct faults *f)
{
	char path[64], buf[1024], *p;
	unsigned long minflt = 0, majflt = 0;
	ssize_t n;
	int fd;

	f->minflt = f->majflt = 0;
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: fields count
	 * from the last ')'.  Then: state ppid pgrp session tty_nr tpgid
	 * flags minflt cminflt majflt. */
	p = strrchr(buf, ')');
	if (p == NULL)
		return;
	if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %lu %*u %lu", &minflt, &majflt) == 2) {
		f->minflt = (long)minflt;
		f->majflt = (long)majflt;
	}
}

long
proc_status_kib(pid_t pid, const char *field)
{
	return proc_kib(pid, "status", field);
}

long
proc_kib(pid_t pid, const char *file, const char *field)
{
	char path[64], line[256];
	size_t flen = strlen(field);
	long v = -1;
	FILE *fp;

	snprintf(path, sizeof path, "/proc/%ld/%s", (long)pid, file);
	fp = fopen(path, "re");
	if (fp == NULL)
		return -1;
	while (fgets(line, sizeof line, fp) != NULL) {
		if (strncmp(line, field, flen) == 0 && line[flen] == ':') {
			v = strtol(line + flen + 1, NULL, 10);
			break;
		}
	}
	fclose(fp);
	return v;
}

double
file_residency(const char *path)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *vec;
	size_t pages, i, in = 0;
	struct stat st;
	void *map;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || st.st_size <= 0) {
		close(fd);
		return -1;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -1;
	pages = ((size_t)st.st_size + (size_t)page - 1) / (size_t)page;
	vec = xmalloc(pages);
	if (mincore(map, (size_t)st.st_size, vec) < 0) {
		free(vec);
		munmap(map, (size_t)st.st_size);
		return -1;
	}
	for (i = 0; i < pages; i++)
		in += vec[i] & 1;
	free(vec);
	munmap(map, (size_t)st.st_size);
	return (double)in / (double)pages;
}

int
file_evict(const char *path)
{
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Dirty or in-flight pages are not dropped: write them back first. */
	(void)fdatasync(fd);
	rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	return -rc;
}

int
file_warm(const char *path)
{
	size_t chunk = 1u << 20;
	char *buf = xmalloc(chunk);
	uint64_t off = 0;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(buf);
		return -errno;
	}
	while ((n = pread(fd, buf, chunk, (off_t)off)) > 0)
		off += (uint64_t)n;
	close(fd);
	free(buf);
	return n < 0 ? -errno : 0;
}

int
file_bump_mtime(const char *path)
{
	static long long bumps;
	struct timespec ts[2];

	/* ctime moves with a coarse clock: two bumps within a tick could
	 * leave it equal, so the mtime itself must differ each time. */
	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= 86400;
	ts[0].tv_nsec = (long)(++bumps % 1000000000);
	ts[1] = ts[0];
	if (utimensat(AT_FDCWD, path, ts, 0) < 0)
		return -errno;
	return 0;
}

uint64_t
rng_next(uint64_t *s)
{
	/* xorshift64* */
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

void
random_offsets(uint64_t seed, uint64_t *offs, size_t n, uint64_t size, size_t len, size_t align)
{
	uint64_t s = seed | 1, slots;
	size_t i;

	if (align == 0)
		align = 1;
	slots = size >= len ? (size - len) / align + 1 : 1;
	for (i = 0; i < n; i++)
		offs[i] = (rng_next(&s) % slots) * align;
}

int
write_file(const char *path, uint64_t size, uint64_t seed)
{
	size_t chunk = 1u << 20;
	uint64_t *buf = xmalloc(chunk), s = seed | 1, done = 0;
	int fd, rc = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		free(buf);
		return -errno;
	}
	while (done < size) {
		size_t n = size - done < chunk ? (size_t)(size - done) : chunk, i, w = 0;

		for (i = 0; i < (n + sizeof *buf - 1) / sizeof *buf; i++)
			buf[i] = rng_next(&s);
		while (w < n) {
			ssize_t r = write(fd, (char *)buf + w, n - w);

			if (r < 0) {
				if (errno == EINTR)
					continue;
				rc = -errno;
				goto out;
			}
			w += (size_t)r;
		}
		done += n;
	}
out:
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	free(buf);
	return rc;
}

int
mkdir_p(const char *path, mode_t mode)
{
	char tmp[PATH_MAX], *p;

	if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
		return -ENAMETOOLONG;
	for (p = tmp + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int
remove_tree(const char *path)
{
	struct dirent *d;
	struct stat st;
	DIR *dir;
	int rc = 0;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) < 0 ? -errno : 0;
	dir = opendir(path);
	if (dir == NULL)
		return -errno;
	while ((d = readdir(dir)) != NULL) {
		char sub[PATH_MAX];

		if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
			continue;
		if (snprintf(sub, sizeof sub, "%s/%s", path, d->d_name) >= (int)sizeof sub) {
			rc = -ENAMETOOLONG;
			continue;
		}
		if (remove_tree(sub) < 0)
			rc = -errno;
	}
	closedir(dir);
	if (rmdir(path) < 0)
		return -errno;
	return rc;
}

bool
list_has(const char *list, const char *name)
{
	size_t len = strlen(name);
	const char *p = list;

	while (p != NULL && *p != '\0') {
		const char *end = strchr(p, ',');
		size_t n = end != NULL ? (size_t)(end - p) : strlen(p);

		if (n == len && strncmp(p, name, len) == 0)
			return true;
		p = end != NULL ? end + 1 : NULL;
	}
	return false;
}

/* --- child processes ------------------------------------------------------- */

struct child_msg {
	unsigned idx;
	struct child_report rep;
};

static void
child_main(unsigned idx, child_fn setup, child_fn run, child_fn teardown, void *arg,
	   int ready_fd, int go_fd, int res_fd)
{
	struct child_msg m = { .idx = idx };
	struct faults f0, f1;
	void *state = NULL;
	char c = 'r';
	int rc = 0;

	bench_is_child = true;
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (setup != NULL)
		rc = setup(idx, arg, &state, &m.rep);
	if (write(ready_fd, &c, 1) != 1)
		_exit(1);
	if (read(go_fd, &c, 1) != 1)
		_exit(1);
	if (rc == 0) {
		faults_self(&f0);
		m.rep.t0 = now_s();
		rc = run(idx, arg, &state, &m.rep);
		m.rep.t1 = now_s();
		faults_self(&f1);
		m.rep.minflt = f1.minflt - f0.minflt;
		m.rep.majflt = f1.majflt - f0.majflt;
	}
	if (teardown != NULL)
		teardown(idx, arg, &state, &m.rep);
	m.rep.status = rc < 0 ? -rc : rc;
	if (write(res_fd, &m, sizeof m) != (ssize_t)sizeof m)
		_exit(1);
	_exit(0);
}

int
run_children(unsigned n, child_fn setup, child_fn run, child_fn teardown, void *arg,
	     struct child_report *reps)
{
	int ready[2], go[2], res[2];
	pid_t *pids = xcalloc(n, sizeof *pids);
	unsigned i, started = 0, readies = 0, got = 0;
	char *gobuf;
	int rc = 0;

	for (i = 0; i < n; i++) {
		memset(&reps[i], 0, sizeof reps[i]);
		reps[i].status = ECHILD;
		snprintf(reps[i].err, sizeof reps[i].err, "child did not report");
	}
	if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0 || pipe2(res, O_CLOEXEC) < 0) {
		free(pids);
		return -1;
	}
	fflush(stdout);
	fflush(stderr);
	for (i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			rc = -1;
			break;
		}
		if (pid == 0) {
			close(ready[0]);
			close(go[1]);
			close(res[0]);
			child_main(i, setup, run, teardown, arg, ready[1], go[0], res[1]);
		}
		pids[i] = pid;
		started++;
	}
	close(ready[1]);
	close(res[1]);
	close(go[0]);
	/* Every child ready (or dead: a dead child counts, its report says
	 * why), then all go at once. */
	while (readies < started) {
		struct pollfd pfd = { .fd = ready[0], .events = POLLIN };
		char buf[64];
		ssize_t r;

		if (poll(&pfd, 1, 200) == 0) {
			unsigned dead = 0;

			for (i = 0; i < started; i++)
				if (pids[i] > 0 && waitpid(pids[i], NULL, WNOHANG) == pids[i]) {
					pids[i] = -1;
					dead++;
				}
			readies += dead;
			continue;
		}
		r = read(ready[0], buf, sizeof buf);
		if (r <= 0)
			break;
		readies += (unsigned)r;
	}
	gobuf = xcalloc(started + 1, 1);
	if (started > 0 && write(go[1], gobuf, started) != (ssize_t)started)
		rc = -1;
	free(gobuf);
	close(go[1]);
	while (got < started) {
		struct child_msg m;
		ssize_t r = read(res[0], &m, sizeof m);

		if (r != (ssize_t)sizeof m)
			break;
		if (m.idx < n)
			reps[m.idx] = m.rep;
		got++;
	}
	close(res[0]);
	close(ready[0]);
	for (i = 0; i < started; i++)
		if (pids[i] > 0)
			waitpid(pids[i], NULL, 0);
	free(pids);
	if (started < n) {
		errno = EAGAIN;
		return -1;
	}
	return rc;
}

/* --- a contender's run in a process of its own -------------------------------- */

void *
shared_alloc(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		fprintf(stderr, "hmbench: out of memory (shared %zu bytes)\n", n);
		exit(1);
	}
	return p;
}

void
shared_free(void *p, size_t n)
{
	if (p != NULL)
		munmap(p, n);
}

int
in_fresh_process(int (*fn)(void *arg), void *arg)
{
	int status = 0;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int rc;

		bench_is_child = true;
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		rc = fn(arg);
		fflush(stdout);
		fflush(stderr);
		_exit(rc < 0 ? (-rc > 0 && -rc < 126 ? -rc : EIO) : 0);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(status))
		return -WEXITSTATUS(status);
	return -ECHILD;
}
