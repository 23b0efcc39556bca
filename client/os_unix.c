/* SPDX-License-Identifier: MIT */
/*
 * os_unix.c - os.h on POSIX: descriptors, getrlimit, getcwd.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "client/os.h"

#define OS_TMPFS_MAGIC 0x01021994	/* linux/magic.h: a memfd's file system */

int
os_file_open(const char *path, hm_osfile *f)
{
	/* O_NONBLOCK: opening a FIFO must not wait for a writer. */
	*f = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	return *f < 0 ? -errno : 0;
}

void
os_file_close(hm_osfile f)
{
	if (f >= 0)
		close(f);
}

ssize_t
os_file_pread(hm_osfile f, void *buf, size_t len, uint64_t offset)
{
	ssize_t n = pread(f, buf, len, (off_t)offset);

	return n < 0 ? -errno : n;
}

int
os_file_id(hm_osfile f, uint64_t *dev, uint64_t *ino)
{
	struct stat st;

	if (f < 0 || fstat(f, &st) < 0)
		return -EBADF;
	*dev = (uint64_t)st.st_dev;
	*ino = (uint64_t)st.st_ino;
	return 0;
}

int
os_file_of_fd(int fd, hm_osfile *f)
{
	*f = fd;
	return 0;
}

/* Descriptors are handed out lowest first, so f's number tells how many
 * are open: it must sit in the lower half of RLIMIT_NOFILE. */
bool
os_file_plenty(hm_osfile f)
{
	struct rlimit rl;

	if (f < 0)
		return true;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return true;
	return (rlim_t)f < rl.rlim_cur / 2;
}

bool
os_file_from_daemon_ok(hm_osfile f, uint64_t dev, uint64_t ino)
{
	struct stat st;
	int fl = fcntl(f, F_GETFL);

	return fl >= 0 && (fl & O_ACCMODE) == O_RDONLY && fstat(f, &st) == 0 &&
	       S_ISREG(st.st_mode) && (uint64_t)st.st_dev == dev && (uint64_t)st.st_ino == ino;
}

bool
os_local_reads(void)
{
	return true;
}

int
os_file_stat(hm_osfile f, struct os_file_stat *st)
{
	struct stat s;

	if (fstat(f, &s) < 0)
		return -errno;
	st->size = (uint64_t)s.st_size;
	st->dev = (uint64_t)s.st_dev;
	st->ino = (uint64_t)s.st_ino;
	st->mtime_ns = (int64_t)s.st_mtim.tv_sec * 1000000000 + s.st_mtim.tv_nsec;
	st->mode = (uint32_t)s.st_mode;
	return 0;
}

int64_t
os_file_pread_all(hm_osfile f, void *buf, size_t len, uint64_t offset)
{
	size_t done = 0;

	while (done < len) {
		ssize_t k = pread(f, (char *)buf + done, len - done, (off_t)(offset + done));

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return done > 0 ? (int64_t)done : -errno;	/* as pread: the error next time */
		if (k == 0)
			break;	/* the end of the file */
		done += (size_t)k;
	}
	return (int64_t)done;
}

void
os_file_willneed(hm_osfile f, uint64_t offset, uint64_t len)
{
	/* len 0 is "to the end of the file" for both */
	(void)posix_fadvise(f, (off_t)offset, len > INT64_MAX ? 0 : (off_t)len, POSIX_FADV_WILLNEED);
}

/* path beneath the working directory; out of line, so that an absolute
 * path's open does not carry cwd's 4 KiB on the stack (the calls below it
 * would touch a page a new process has not, a fault) */
static __attribute__((noinline)) char *
relative_path(const char *path)
{
	char cwd[PATH_MAX], *abs;

	if (getcwd(cwd, sizeof cwd) == NULL)
		return NULL;
	if (asprintf(&abs, "%s/%s", cwd, path) < 0)
		return NULL;
	if (strlen(abs) >= PATH_MAX) {
		free(abs);
		errno = ENAMETOOLONG;
		return NULL;
	}
	return abs;
}

/* The daemon's working directory is not ours, and a reconnect reopens the
 * same file whatever chdir(2) happened since. */
char *
absolute_path(const char *path)
{
	return path[0] == '/' ? strdup(path) : relative_path(path);
}

const char *
os_program_name(void)
{
	return program_invocation_short_name;
}

/*
 * The processors this process may run on (its affinity: what taskset or a
 * cpuset leaves it), asked once per process.  One system call; sysconf's
 * count of the processors online opens and reads a file in /sys, which
 * took a tenth of a short-lived process's connect where it was measured
 * (docs/short-lived.md).
 */
long
os_cpu_count(void)
{
	static long known;	/* atomic: 0 not asked */
	long n = __atomic_load_n(&known, __ATOMIC_RELAXED);
	cpu_set_t set;

	if (n == 0) {
		/* more processors than a cpu_set_t holds (1,024) fail it:
		 * then the ones online */
		n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) :
		    sysconf(_SC_NPROCESSORS_ONLN);
		n = n > 0 ? n : 1;
		__atomic_store_n(&known, n, __ATOMIC_RELAXED);
	}
	return n;
}

int
os_copy_map(int f, uint64_t size, const void **map)
{
	int want = F_SEAL_SHRINK | F_SEAL_WRITE, seals = fcntl(f, F_GET_SEALS);
	struct statfs sfs;
	struct stat st;
	void *m;

	if (seals < 0)
		return -errno;
	/* a memfd (tmpfs, not hugetlbfs), as the daemon asks of a region:
	 * seals alone are also a hugetlbfs file's, whose pages can run out
	 * under a read, and mapping it would fault */
	if (fstatfs(f, &sfs) < 0 || (uint32_t)sfs.f_type != OS_TMPFS_MAGIC)
		return -EINVAL;
	if ((seals & want) != want || fstat(f, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size < 0 || (uint64_t)st.st_size != size || size == 0 || size > SIZE_MAX)
		return -EINVAL;	/* not what hotmapd says: read with pread */
	m = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, f, 0);
	if (m == MAP_FAILED)
		return -errno;
	*map = m;
	return 0;
}

void
os_copy_unmap(const void *map, uint64_t size)
{
	if (map != NULL)
		munmap((void *)(uintptr_t)map, (size_t)size);
}
