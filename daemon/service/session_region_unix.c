/* SPDX-License-Identifier: MIT */
/*
 * session_region_unix.c - the shared region on Linux (see
 * session_region.h): the memfd that came with HELLO.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "daemon/base/closer.h"
#include "daemon/transport/peer.h"
#include "daemon/service/session_state.h"
#include "daemon/service/session_region.h"
#include "proto/frame.h"

/* f_type of tmpfs, and of a memfd made without MFD_HUGETLB (linux/magic.h) */
#define SESSION_TMPFS_MAGIC 0x01021994

/*
 * Maps the memfd that came with HELLO.  It must be sealed against shrinking
 * and growing, exactly the size announced, and on tmpfs: then the daemon's
 * copies into it can never fault, whatever the client does to its end (a
 * page it punches out comes back as a new zero page on the next touch).
 * Not so on hugetlbfs (MFD_HUGETLB): a punched huge page comes back only
 * while the system has a free one, and the copy faults when it has none.
 * The guard recovers such a fault all the same (the client is dropped);
 * this check keeps it from happening.
 */
int
session_region_map(struct session *s, uint64_t size, uint64_t handle, char *err, size_t errlen)
{
	int fd = peer_take_fd(s->peer);
	struct statfs sfs = { .f_type = 0 };
	struct stat st;
	int seals, rc = 0;
	void *p;

	(void)handle;	/* the descriptor came with the bytes */
	if (fd < 0) {
		snprintf(err, errlen, "%s", fd == -EMFILE ?
			 "hotmapd is out of descriptors: the region could not be received" :
			 fd == -ENODEV ? "the region is a socket, not a memfd" :
			 "no descriptor came with HELLO");
		return fd == -EMFILE || fd == -ENODEV ? fd : -EBADF;
	}
	seals = fcntl(fd, F_GET_SEALS);
	if (size > HM_SHM_MAX) {
		snprintf(err, errlen, "%llu bytes is more than the %llu a client may share",
			 (unsigned long long)size, (unsigned long long)HM_SHM_MAX);
		rc = -EFBIG;
	} else if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW)) {
		snprintf(err, errlen, "the region is not a memfd sealed against shrinking and growing");
		rc = -EPERM;
	} else if (fstatfs(fd, &sfs) < 0 || (uint32_t)sfs.f_type != SESSION_TMPFS_MAGIC) {
		snprintf(err, errlen, "the region is not on tmpfs (f_type 0x%lx): a memfd made with "
			 "MFD_HUGETLB is refused, since its pages can run out under a copy",
			 (unsigned long)(uint32_t)sfs.f_type);
		rc = -EPERM;
	} else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != size) {
		snprintf(err, errlen, "the region's size is not the %llu bytes announced",
			 (unsigned long long)size);
		rc = -EINVAL;
	} else {
		p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			rc = -errno;
			snprintf(err, errlen, "mmap: %s", strerror(-rc));
		} else {
			s->shm = p;
			s->shm_size = (size_t)size;
			s->shm_map_size = (size_t)size;
		}
	}
	if (rc == 0)
		closer_close_now(fd);	/* a memfd: its close never waits */
	else
		closer_close(fd);
	return rc;
}

/* Whether the kernel gives shared memory transparent huge pages when asked
 * (shmem_enabled: always, within_size, advise or force). */
static bool
region_shmem_thp_read(void)
{
	char buf[128];
	ssize_t n;
	int fd = open("/sys/kernel/mm/transparent_hugepage/shmem_enabled", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strstr(buf, "[always]") != NULL || strstr(buf, "[within_size]") != NULL ||
	       strstr(buf, "[advise]") != NULL || strstr(buf, "[force]") != NULL;
}

/*
 * The same, read again at most once a second: a client asks for huge pages
 * whenever its region is large enough (it no longer reads the setting
 * itself, three system calls of a short-lived process's connect), and the
 * daemon says whether it got them (stats regions_huge, clients).
 */
static bool
region_shmem_thp(void)
{
	static int64_t read_at = -1;	/* atomics: HELLOs may come on workers */
	static int known;
	struct timespec ts;
	int64_t now;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (int64_t)ts.tv_sec;
	if (__atomic_load_n(&read_at, __ATOMIC_ACQUIRE) != now) {
		__atomic_store_n(&known, region_shmem_thp_read() ? 2 : 1, __ATOMIC_RELAXED);
		__atomic_store_n(&read_at, now, __ATOMIC_RELEASE);
	}
	return __atomic_load_n(&known, __ATOMIC_RELAXED) == 2;
}

bool
session_region_huge(struct session *s)
{
	return region_shmem_thp() && madvise(s->shm, s->shm_map_size, MADV_HUGEPAGE) == 0;
}

void
session_region_unmap(struct session *s)
{
	if (s->shm != NULL)
		munmap(s->shm, s->shm_map_size);
	s->shm = NULL;
}
