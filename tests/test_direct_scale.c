/* SPDX-License-Identifier: MIT */
/*
 * test_direct_scale.c - the direct tier with many files (issue 29 point
 * 6): a process that opens more files than the 256 slots a client used to
 * have gets a grant for each, within the per-uid cap, against a real
 * hotmapd (tests/harness.h).
 *
 * What a user would notice: every one of 5,000 files read in the process
 * itself (hm_read_stats: no read through the daemon), byte for byte; past
 * max-direct-grants-per-uid, a refusal that says so, and reads that are
 * still right; a closed file's slot granted to the next; and a client that
 * announces a huge slot table gets no more slots than the cap, so that the
 * daemon's memory for it stays bounded.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/hotmap_admin.h"
#include "tests/harness.h"

#define KiB 1024u
#define MiB (1024u * 1024u)
#define TEST_ALARM_S 300

#define MANY		5000u	/* files: past the 256 slots and the 4,096 mappings of before */
#define FILE_BYTES	(8u * KiB)
#define CAP		300u	/* max-direct-grants-per-uid in the capped daemon */
#define CAP_FILES	400u

static const struct harness_opts opts_default = { .backend = NULL };
static const struct harness_opts opts_cap = {
	.extra = { "--max-direct-grants-per-uid", "300", NULL } };

static int
setup(void **state)
{
	unsetenv("HOTMAP_SHM_SIZE");
	unsetenv("HOTMAP_DIRECT_AFTER");
	unsetenv("HOTMAP_DIRECT");
	setenv("HOTMAP_POLL", "0", 1);
	*state = harness_start(*state);
	alarm(TEST_ALARM_S);
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

static hm_client *
connect_direct(const struct harness *h)
{
	return harness_connect_direct(h, 0, NULL);
}

/* File i of the test: "many-i", FILE_BYTES of harness_fill(1000 + i). */
static void
file_path(const struct harness *h, unsigned i, char *out)
{
	char name[32];

	snprintf(name, sizeof name, "many-%u", i);
	harness_path(h, name, out);
}

static void
make_files(const struct harness *h, unsigned n)
{
	char path[PATH_MAX];
	unsigned i;

	for (i = 0; i < n; i++) {
		file_path(h, i, path);
		harness_write_file(path, FILE_BYTES, 1000 + i);
	}
}

static hm_file *
open_file(hm_client *c, const struct harness *h, unsigned i)
{
	char path[PATH_MAX];
	hm_file *f;

	file_path(h, i, path);
	f = hm_open(c, path, 0);
	if (f == NULL)
		fail_msg("hm_open(%s): %s (\"%s\")", path, strerror(errno), hm_last_error());
	return f;
}

/* Every byte of file i, read 4 KiB at a time, against its content. */
static void
check_bytes(hm_file *f, unsigned i)
{
	uint8_t got[4 * KiB], want[4 * KiB];
	uint64_t off;

	for (off = 0; off < FILE_BYTES; off += sizeof got) {
		ssize_t n = hm_pread(f, got, sizeof got, off);

		if (n != (ssize_t)sizeof got)
			fail_msg("file %u at %llu: %zd (%s)", i, (unsigned long long)off, n,
				 strerror(errno));
		harness_fill(want, sizeof want, 1000 + i, off);
		if (memcmp(got, want, sizeof got) != 0)
			fail_msg("file %u at %llu: not the file's bytes", i,
				 (unsigned long long)off);
	}
}

static int
direct_of(hm_file *f, char *text, size_t len)
{
	struct hm_stat st;

	assert_int_equal(hm_stat(f, &st), 0);
	if (text != NULL)
		snprintf(text, len, "%s", st.direct_text);
	return st.direct;
}

static uint64_t
daemon_reads(hm_file *f)
{
	struct hm_read_stats st = { .size = sizeof st };

	assert_int_equal(hm_read_stats(f, &st), 0);
	return st.daemon_reads;
}

/* The grants the daemon says this process's client holds (hm_clients). */
struct grants_arg {
	uint32_t pid;
	unsigned grants;
	bool found;
};

static void
grants_cb(const struct hm_client_info *info, void *arg)
{
	struct grants_arg *g = arg;

	if (info->pid == g->pid && info->handles > 0) {
		g->grants = info->direct_grants;
		g->found = true;
	}
}

static unsigned
daemon_grants(const struct harness *h)
{
	struct grants_arg g = { .pid = (uint32_t)getpid() };
	hm_client *admin = harness_connect(h);

	assert_int_equal(hm_clients(admin, grants_cb, &g), 0);
	hm_disconnect(admin);
	assert_true(g.found);
	return g.grants;
}

/* 5,000 files, one client: every one granted and read in the process. */
static void
test_many_files_granted(void **state)
{
	const struct harness *h = *state;
	hm_file **f = calloc(MANY, sizeof *f);
	struct rlimit rl;
	hm_client *c;
	char text[256];
	unsigned i, granted = 0;

	assert_non_null(f);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY &&
	    rl.rlim_max < MANY + 1000) {
		free(f);
		print_message("# skipped: hotmapd may not open %u files (RLIMIT_NOFILE %llu)\n",
			      MANY, (unsigned long long)rl.rlim_max);
		skip();
	}
	make_files(h, MANY);
	c = connect_direct(h);
	for (i = 0; i < MANY; i++) {
		f[i] = open_file(c, h, i);
		if (direct_of(f[i], text, sizeof text) != HM_DIRECT_NO)
			granted++;
		else if (granted == i)
			print_message("# file %u not granted: %s\n", i, text);
	}
	print_message("# %u of %u files granted\n", granted, MANY);
	assert_int_equal(granted, MANY);
	assert_int_equal(daemon_grants(h), MANY);
	for (i = 0; i < MANY; i++) {
		check_bytes(f[i], i);
		if (daemon_reads(f[i]) != 0)
			fail_msg("file %u: %llu reads went through the daemon", i,
				 (unsigned long long)daemon_reads(f[i]));
	}
	for (i = 0; i < MANY; i++)
		assert_int_equal(hm_close(f[i]), 0);
	hm_disconnect(c);
	free(f);
}

/*
 * max-direct-grants-per-uid 300: 300 of 400 files granted, the rest
 * refused for the cap and read through the daemon, every byte right; 100
 * granted files closed, and 100 more opened get their slots.
 */
static void
test_cap_refuses_then_slots_reused(void **state)
{
	const struct harness *h = *state;
	hm_file *f[CAP_FILES + 100];
	hm_client *c;
	char text[256];
	unsigned i, granted = 0, capped = 0;

	make_files(h, CAP_FILES + 100);
	c = connect_direct(h);
	for (i = 0; i < CAP_FILES; i++) {
		f[i] = open_file(c, h, i);
		if (direct_of(f[i], text, sizeof text) != HM_DIRECT_NO)
			granted++;
		else if (strstr(text, "max-direct-grants-per-uid") != NULL)
			capped++;
		else
			fail_msg("file %u refused, not for the cap: %s", i, text);
	}
	print_message("# %u granted, %u refused for the cap\n", granted, capped);
	assert_int_equal(granted, CAP);
	assert_int_equal(capped, CAP_FILES - CAP);
	for (i = 0; i < CAP_FILES; i++) {
		check_bytes(f[i], i);
		if (i < CAP)
			assert_int_equal(daemon_reads(f[i]), 0);
		else
			assert_true(daemon_reads(f[i]) > 0);
	}
	/* 100 granted files closed: their slots go to the next 100 */
	for (i = 0; i < 100; i++)
		assert_int_equal(hm_close(f[i * 3]), 0);
	for (i = CAP_FILES; i < CAP_FILES + 100; i++) {
		f[i] = open_file(c, h, i);
		if (direct_of(f[i], text, sizeof text) == HM_DIRECT_NO)
			fail_msg("file %u opened after closes not granted: %s", i, text);
		check_bytes(f[i], i);
		assert_int_equal(daemon_reads(f[i]), 0);
	}
	assert_int_equal(daemon_grants(h), CAP);
	for (i = 0; i < CAP_FILES + 100; i++)
		if (i >= 300 || i % 3 != 0)
			assert_int_equal(hm_close(f[i]), 0);
	hm_disconnect(c);
}

/* A raw client announcing a slot table of `table` slots (and `slots` for
 * older daemons) at the end of a sealed region of size bytes: HELLO's
 * direct_accepted and direct_slots, the socket in *sock. */
static void
raw_hello(const struct harness *h, uint64_t size, uint32_t slots, uint32_t table, int *sock,
	  uint64_t *accepted, uint64_t *used)
{
	struct wire_msg m = { .n = 0 };
	struct wire_header hdr;
	uint8_t reply[1024];
	int region;

	*sock = wire_connect(h);
	region = memfd_create("hostile", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(region >= 0);
	assert_int_equal(ftruncate(region, (off_t)size), 0);
	assert_int_equal(fcntl(region, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	wire_varint(&m, 1, WIRE_VERSION);
	wire_varint(&m, 4, size);
	wire_varint(&m, 6, slots);
	wire_varint(&m, 9, table);
	assert_int_equal(wire_send_msg(*sock, WIRE_HELLO, 1, &m, region), 0);
	close(region);
	assert_int_equal(wire_recv(*sock, &hdr, reply, sizeof reply, 10000), 1);
	assert_int_equal(hdr.type, WIRE_HELLO_REPLY);
	*accepted = 0;
	*used = 0;
	wire_get_varint(reply, hdr.length, 9, accepted);
	wire_get_varint(reply, hdr.length, 10, used);
}

#define HOSTILE_CLIENTS 32

/*
 * Hostile clients announce 4,000,000 slots each in 512 MiB regions (sparse
 * memfds): the daemon uses no more than the cap, grants no more than the
 * cap, and its heap does not grow with what they announced.  A table
 * larger than the region is refused.
 */
static void
test_hostile_table_bounded(void **state)
{
	const struct harness *h = *state;
	int socks[HOSTILE_CLIENTS], sock;
	uint64_t accepted, used;
	long before, after;
	unsigned i;

	before = harness_rss_anon_kib(h->pid);
	for (i = 0; i < HOSTILE_CLIENTS; i++) {
		raw_hello(h, 512ull * MiB, 4096, 4000000, &socks[i], &accepted, &used);
		assert_int_equal(accepted, 1);
		assert_int_equal(used, CAP);
	}
	after = harness_rss_anon_kib(h->pid);
	print_message("# hotmapd's RssAnon: %ld KiB before, %ld KiB with %u hostile tables\n",
		      before, after, HOSTILE_CLIENTS);
	/* what 4,000,000 slots of 16 bytes each would be is 61 MiB a client */
	if (before >= 0 && after >= 0)
		assert_true(after - before < 16 * 1024);
	raw_hello(h, 4 * MiB, 4096, 40000, &sock, &accepted, &used);
	assert_int_equal(accepted, 0);	/* 40,000 slots are 5 MiB: past the region */
	close(sock);
	for (i = 0; i < HOSTILE_CLIENTS; i++)
		close(socks[i]);
	/* the daemon serves everyone else */
	{
		hm_client *c = harness_connect(h);
		char path[PATH_MAX];
		hm_file *f;

		make_files(h, 1);
		file_path(h, 0, path);
		f = hm_open(c, path, 0);
		assert_non_null(f);
		check_bytes(f, 0);
		hm_close(f);
		hm_disconnect(c);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate_setup_teardown(test_many_files_granted, setup,
							 teardown, (void *)&opts_default),
		cmocka_unit_test_prestate_setup_teardown(test_cap_refuses_then_slots_reused, setup,
							 teardown, (void *)&opts_cap),
		cmocka_unit_test_prestate_setup_teardown(test_hostile_table_bounded, setup,
							 teardown, (void *)&opts_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
