/* SPDX-License-Identifier: MIT */
/*
 * netread.c - one contender of bench/netfs reading one file: opens it,
 * then reads it in passes (the first cold when the caller dropped the
 * caches, the next ones hot: on FUSE an open may drop a file's page cache,
 * so hot means read again through the same open), and prints a line per
 * pass: "CONTENDER PATTERN SIZE PASS MB/s".
 *
 * Contenders: pread (the caller's own descriptor), mmap (a mapping made
 * at open, copied out of), mmap-view (the same mapping read in place, as
 * the views are), hotmap (hm_open and hm_pread), hotmap-path (HM_O_PATH:
 * the daemon opens the file, so every read goes through it), hotmap-view
 * (hm_view_range, released at once, the bytes read in place: a word of
 * each cache line summed), hotmap-warm (hm_warm of the whole file, then
 * hm_pread; the warm, once a pass, is timed with the reads; a hot pass
 * repeats its reads, not the warm), hotmap-warm-view (the same
 * warm, then views).  Patterns: seq (the whole file in reads of
 * SIZE), rand (--ops reads of SIZE at offsets from --seed, aligned to
 * SIZE).  A hot pass reads its whole pattern again until it has taken
 * 0.3 s.  Every contender's bytes are checked against pread first (a
 * few ranges, outside the timing) unless --no-check.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hotmap.h"

#define HOT_MIN_S	0.3

struct reader {
	const char *name;
	int fd;
	uint8_t *map;
	size_t size;
	hm_client *c;
	hm_file *f;
	uint64_t sink;
};

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void
die(const char *what)
{
	fprintf(stderr, "netread: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* A view's contenders read in place: a word of each cache line summed,
 * so every line of the range is brought in, and nothing is copied. */
static bool
is_view(const char *name)
{
	return strcmp(name, "hotmap-view") == 0 || strcmp(name, "hotmap-warm-view") == 0 ||
	       strcmp(name, "mmap-view") == 0;
}

static uint64_t
view_sum(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t sum = 0, w;
	size_t i;

	for (i = 0; i + sizeof w <= len; i += 64) {
		memcpy(&w, p + i, sizeof w);
		sum += w;
	}
	return sum;
}

static ssize_t
read_one(struct reader *r, uint8_t *buf, size_t len, uint64_t off)
{
	if (strcmp(r->name, "pread") == 0)
		return pread(r->fd, buf, len, (off_t)off);
	if (strcmp(r->name, "mmap") == 0) {
		size_t n = off >= r->size ? 0 : r->size - off < len ? r->size - off : len;

		memcpy(buf, r->map + off, n);
		return (ssize_t)n;
	}
	if (strcmp(r->name, "mmap-view") == 0) {
		size_t n = off >= r->size ? 0 : r->size - off < len ? r->size - off : len;

		r->sink += view_sum(r->map + off, n);
		if (buf != NULL)
			memcpy(buf, r->map + off, n);
		return (ssize_t)n;
	}
	if (is_view(r->name)) {
		struct hm_view v;
		size_t n;

		if (hm_view_range(r->f, off, len, &v) < 0)
			return -1;
		r->sink += view_sum(v.data, v.len);
		n = v.len;
		if (buf != NULL)
			memcpy(buf, v.data, n);
		hm_view_release(&v);	/* zeroes v */
		return (ssize_t)n;
	}
	return hm_pread(r->f, buf, len, off);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "pattern", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 'b' },
		{ "ops", required_argument, NULL, 'n' },
		{ "passes", required_argument, NULL, 'P' },
		{ "seed", required_argument, NULL, 'S' },
		{ "no-check", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = NULL, *pattern = "seq";
	size_t bs = 1 << 20, ops = 2000, i;
	unsigned passes = 2, pass;
	uint64_t seed = 1, *offs;
	bool check = true, rand_pat;
	struct reader r = { .fd = -1 };
	struct stat st;
	uint8_t *buf, *ref;
	const char *path;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': sock = optarg; break;
		case 'p': pattern = optarg; break;
		case 'b': bs = strtoull(optarg, NULL, 0); break;
		case 'n': ops = strtoull(optarg, NULL, 0); break;
		case 'P': passes = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'S': seed = strtoull(optarg, NULL, 0); break;
		case 'C': check = false; break;
		case 'h':
			printf("Usage: netread [--socket S] [--pattern seq|rand] [--size BYTES] [--ops N]\n"
			       "               [--passes N] [--seed N] [--no-check] CONTENDER FILE\n"
			       "CONTENDER: pread, mmap, mmap-view, hotmap, hotmap-path, hotmap-view,\n"
			       "           hotmap-warm, hotmap-warm-view.\n"
			       "Prints \"CONTENDER PATTERN SIZE PASS MB/s\" per pass.  Run by bench/netfs.\n");
			return 0;
		default:
			return 2;
		}
	}
	if (argc - optind != 2 || bs == 0 || passes == 0)
		return 2;
	r.name = argv[optind];
	path = argv[optind + 1];
	rand_pat = strcmp(pattern, "rand") == 0;
	if (strncmp(r.name, "hotmap", 6) == 0) {
		int flags = strcmp(r.name, "hotmap-path") == 0 ? HM_O_PATH : 0;

		r.c = hm_connect(sock);
		if (r.c == NULL)
			die("hm_connect");
		r.f = hm_open(r.c, path, flags);
		if (r.f == NULL)
			die(path);
	} else {
		r.fd = open(path, O_RDONLY);
		if (r.fd < 0)
			die(path);
	}
	if (stat(path, &st) < 0)
		die(path);
	r.size = (size_t)st.st_size;
	if (strncmp(r.name, "mmap", 4) == 0) {
		r.map = mmap(NULL, r.size, PROT_READ, MAP_SHARED, r.fd, 0);
		if (r.map == MAP_FAILED)
			die("mmap");
	}
	buf = malloc(bs);	/* not freed: the process ends */
	ref = malloc(bs);
	offs = calloc(ops, sizeof *offs);
	if (buf == NULL || ref == NULL || offs == NULL)
		die("malloc");
	for (i = 0; i < ops; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		offs[i] = r.size > bs ? (seed >> 11) % (r.size / bs) * bs : 0;
	}
	if (check) {
		/* a few ranges against pread on a descriptor of our own, in
		 * the first and last reads' places: not a cold read's worth */
		int fd = open(path, O_RDONLY);
		uint64_t at[2] = { offs[0], r.size > bs ? r.size - bs / 2 : 0 };
		size_t len = bs < 65536 ? bs : 65536;

		if (fd < 0)
			die(path);
		for (i = 0; i < 2; i++) {
			ssize_t a = pread(fd, ref, len, (off_t)at[i]);
			ssize_t b = read_one(&r, buf, len, at[i]);

			if (a != b || (a > 0 && memcmp(ref, buf, (size_t)a) != 0)) {
				fprintf(stderr, "netread: %s: not pread's bytes at %llu\n", r.name,
					(unsigned long long)at[i]);
				return 1;
			}
		}
		close(fd);
	}
	/* a view is not copied: its bytes are summed a word a cache line */
	if (is_view(r.name))
		buf = NULL;
	for (pass = 1; pass <= passes; pass++) {
		uint64_t bytes = 0;
		double t0 = now_s(), t;

		/* the warm once a pass, timed, as a program warms a file once
		 * before it reads it (the first fills hotmapd's copy) */
		if (strncmp(r.name, "hotmap-warm", 11) == 0 && hm_warm(r.f, 0, r.size) < 0)
			die("hm_warm");
		/* a hot pass goes round its reads for at least HOT_MIN_S, so
		 * that a pass of a few milliseconds is not all noise */
	again:
		if (rand_pat) {
			for (i = 0; i < ops; i++) {
				ssize_t n = read_one(&r, buf, bs, offs[i]);

				if (n < 0)
					die("read");
				bytes += (uint64_t)n;
			}
		} else {
			for (uint64_t off = 0; off < r.size; off += bs) {
				ssize_t n = read_one(&r, buf, bs, off);

				if (n < 0)
					die("read");
				bytes += (uint64_t)n;
			}
		}
		t = now_s() - t0;
		if (pass > 1 && t < HOT_MIN_S)
			goto again;
		printf("%s %s %zu %u %.1f\n", r.name, pattern, bs, pass, (double)bytes / 1e6 / t);
		fflush(stdout);
	}
	if (r.f != NULL)
		hm_close(r.f);
	hm_disconnect(r.c);
	return r.sink == 42 ? 3 : 0;	/* keeps the sums alive */
}
