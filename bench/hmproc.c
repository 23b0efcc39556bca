/* SPDX-License-Identifier: MIT */
/*
 * hmproc.c - one short-lived process of hmbench's dbprocs workload: it
 * starts (exec'd by hmbench, so it pays what a real program pays: the
 * loader, its libraries, its first touches of their code), opens the file
 * its way, does random 4 KiB lookups like a database's, closes and exits.
 *
 *   hmproc MODE SOCKET PATH READS SEED [SHM_SIZE DIRECT]
 *
 * MODE: pread (open + pread), mmap (open + mmap + memcpy + munmap),
 * hotmap (hm_connect_opts + hm_open + hm_pread + hm_close +
 * hm_disconnect; SHM_SIZE -1 and DIRECT -1 are the library's defaults),
 * hotmap-fallback (the same with HOTMAP_FALLBACK=local, whose connect and
 * open wait for nothing: the file's size from stat(2), since hm_stat
 * would wait for hotmapd's answers; a file in hotmapd's table of granted
 * files is read with no contact at all), hotmap-fallback-no-table (the
 * same with HOTMAP_TABLE=0: HELLO and OPEN sent, nothing awaited), hello (hm_connect_opts alone, no
 * region, no direct tier, then hm_disconnect: one round trip to hotmapd
 * and nothing else, the floor of any connect that waits), contact (no
 * libhotmap: open + fstat as pread does, then a socket connected to
 * hotmapd and one sendmsg of a HELLO and an OPEN with the descriptor,
 * no answer awaited; then pread: the least a client that tells hotmapd
 * of its open does, the floor of any connect + open that waits for
 * nothing).
 * Before its clock starts, the process is what a program's is when it
 * opens its file: its arguments parsed, and malloc in use (one small
 * allocation, as any program has made by then), so that malloc's first
 * use, and the pages of libc the parsing touches, are not counted as the
 * connect's or the open's of any mode.  The read buffer stays static, as
 * before: its first write is the first read's.
 * Prints one line on stdout, CLOCK_MONOTONIC seconds (the parent compares
 * them with its own clock: the time from fork to main is the process's
 * start):  main begin connect_open reads close connect cpu faults sum
 * each the moment that step ended (main: when main began; begin: when
 * the process was set up and the clock of connect + open started;
 * connect: when hm_connect_opts returned, begin for the others); then the
 * CPU seconds (user + system) and the minor faults of begin to
 * connect_open (what of connect + open was work of this process, not
 * waiting), and a sum of the bytes read.  Every read
 * must return 4096 bytes.  Exit status 0, or 1 with the reason on stderr.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "hotmap.h"
#include "proto/frame.h"

#define LEN 4096

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t
next(uint64_t *s)
{
	/* splitmix64: the same offsets for every mode with the same seed */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* CPU seconds and minor faults of this process so far */
static void
usage_now(double *cpu, long *flt)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
	*flt = ru.ru_minflt;
}

static int
fail(const char *what)
{
	fprintf(stderr, "hmproc: %s: %s\n", what, strerror(errno));
	return 1;
}


/* contact: HELLO (no region, so no direct tier) and OPEN of the
 * descriptor fd, framed as libhotmap frames them, in one sendmsg to the
 * socket at sock.  0, or -1 and errno. */
static int
contact(const char *sock, const char *path, int fd)
{
	Hotmap__Hello hello = HOTMAP__HELLO__INIT;
	Hotmap__Open op = HOTMAP__OPEN__INIT;
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	uint8_t buf[2 * HM_FRAME_HEADER_SIZE + 4200];
	struct iovec iov;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
			    .msg_controllen = sizeof u.b };
	struct cmsghdr *cm;
	ssize_t w;
	int s, n, k;

	hello.version = HM_PROTO_VERSION;
	hello.features = HM_FEATURES_ALL;
	hello.client_name = "hmproc";
	op.path = (char *)path;
	n = frame_encode(HM_MSG_HELLO, 1, 0, &hello.base, 0, buf, sizeof buf);
	k = n < 0 ? n : frame_encode(HM_MSG_OPEN, 2, 0, &op.base, 0, buf + n, sizeof buf - (size_t)n);
	if (n < 0 || k < 0 || strlen(sock) >= sizeof a.sun_path) {
		errno = EINVAL;
		return -1;
	}
	memcpy(a.sun_path, sock, strlen(sock) + 1);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	if (connect(s, (struct sockaddr *)&a, sizeof a) < 0) {
		int err = errno;

		close(s);
		errno = err;
		return -1;
	}
	iov = (struct iovec){ buf, (size_t)(n + k) };
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof fd);
	/* the socket stays open until the process exits: hotmapd's hang-up;
	 * a Unix socket takes the 2 frames whole or fails */
	w = sendmsg(s, &m, MSG_NOSIGNAL);
	if (w != n + k) {
		if (w >= 0)
			errno = EIO;
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	double t_main = now(), t_begin, t_connect, t_open, t_reads, t_close, cpu0, cpu1;
	long flt0, flt1;
	static char buf[LEN];
	char *volatile warm;
	const char *mode, *sock, *path;
	unsigned long reads, i;
	uint64_t seed, pages, sum = 0;
	struct hm_options o = HM_OPTIONS_INIT;
	bool hello, lib, plain;
	struct stat st;
	int fd;

	if (argc != 6 && argc != 8) {
		fprintf(stderr, "usage: hmproc pread|mmap|contact|hotmap|hotmap-fallback|"
			"hotmap-fallback-no-table|hello SOCKET PATH READS "
			"SEED [SHM_SIZE DIRECT]\n");
		return 2;
	}
	mode = argv[1];
	sock = argv[2];
	path = argv[3];
	reads = strtoul(argv[4], NULL, 10);
	seed = strtoull(argv[5], NULL, 10);
	/* small: a page-sized block would touch the heap's next page too,
	 * which the library's first allocations would otherwise fault */
	warm = malloc(16);
	if (warm == NULL)
		return fail("malloc");
	free(warm);
	hello = strcmp(mode, "hello") == 0;
	lib = strcmp(mode, "hotmap") == 0 || strcmp(mode, "hotmap-fallback") == 0 ||
	      strcmp(mode, "hotmap-fallback-no-table") == 0;
	plain = strcmp(mode, "pread") == 0 || strcmp(mode, "mmap") == 0 ||
		strcmp(mode, "contact") == 0;
	if (hello) {
		o.shm_size = 0;
		o.direct = 0;
	} else if (lib) {
		if (argc == 8) {
			o.shm_size = strtoll(argv[6], NULL, 10);
			o.direct = (int)strtol(argv[7], NULL, 10);
		}
		if (mode[6] == '-')
			o.fallback = HM_FALLBACK_LOCAL;
		if (strcmp(mode, "hotmap-fallback-no-table") == 0)
			setenv("HOTMAP_TABLE", "0", 1);	/* tells hotmapd, as before */
	}
	usage_now(&cpu0, &flt0);
	t_begin = now();
	if (hello) {
		hm_client *c;

		c = hm_connect_opts(sock, &o);
		if (c == NULL)
			return fail("hm_connect_opts");
		t_connect = t_open = t_reads = now();
		usage_now(&cpu1, &flt1);
		hm_disconnect(c);
	} else if (lib) {
		struct hm_stat hs;
		hm_client *c;
		hm_file *f;

		c = hm_connect_opts(sock, &o);
		if (c == NULL)
			return fail("hm_connect_opts");
		t_connect = now();
		f = hm_open(c, path, 0);
		if (f == NULL)
			return fail("hm_open");
		t_open = now();
		usage_now(&cpu1, &flt1);
		if (o.fallback == HM_FALLBACK_LOCAL) {
			if (stat(path, &st) < 0)
				return fail("stat");
			hs.size = (uint64_t)st.st_size;
		} else if (hm_stat(f, &hs) < 0) {
			return fail("hm_stat");
		}
		pages = hs.size / LEN;
		for (i = 0; i < reads; i++) {
			if (hm_pread(f, buf, LEN, (next(&seed) % pages) * LEN) != LEN)
				return fail("hm_pread");
			sum += (unsigned char)buf[i % LEN];
		}
		t_reads = now();
		hm_close(f);
		hm_disconnect(c);
	} else if (plain) {
		char *map = NULL;

		t_connect = t_begin;
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0)
			return fail("open");
		if (mode[0] == 'c' && contact(sock, path, fd) < 0)
			return fail("contact");
		if (mode[0] == 'm') {
			map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
			if (map == MAP_FAILED)
				return fail("mmap");
		}
		t_open = now();
		usage_now(&cpu1, &flt1);
		pages = (uint64_t)st.st_size / LEN;
		for (i = 0; i < reads; i++) {
			uint64_t off = (next(&seed) % pages) * LEN;

			if (map != NULL)
				memcpy(buf, map + off, LEN);
			else if (pread(fd, buf, LEN, (off_t)off) != LEN)
				return fail("pread");
			sum += (unsigned char)buf[i % LEN];
		}
		t_reads = now();
		if (map != NULL)
			munmap(map, (size_t)st.st_size);
		close(fd);
	} else {
		fprintf(stderr, "hmproc: unknown mode %s\n", mode);
		return 2;
	}
	t_close = now();
	/* the sum keeps the copies from being optimised away */
	printf("%.9f %.9f %.9f %.9f %.9f %.9f %.6f %ld %llu\n", t_main, t_begin, t_open, t_reads,
	       t_close, t_connect, cpu1 - cpu0, flt1 - flt0, (unsigned long long)sum);
	return 0;
}
