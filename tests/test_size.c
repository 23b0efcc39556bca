/* SPDX-License-Identifier: MIT */
/*
 * test_size.c - proto/size.c: the one grammar of byte counts that
 * hotmapd.conf, hotmapd's options, HOTMAP_SHM_SIZE and hotmapctl read,
 * including everything each of their three old parsers accepted.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "proto/size.h"

struct size_case {
	const char *s;
	int rc;
	uint64_t v;
};

static void
check(const struct size_case *cases, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t v = 12345;
		int rc = size_parse(cases[i].s, &v);

		if (rc != cases[i].rc)
			fail_msg("'%s': %d, want %d", cases[i].s, rc, cases[i].rc);
		if (rc == 0 && v != cases[i].v)
			fail_msg("'%s': %llu, want %llu", cases[i].s, (unsigned long long)v,
				 (unsigned long long)cases[i].v);
		if (rc != 0 && v != 12345)
			fail_msg("'%s': failed but wrote %llu", cases[i].s, (unsigned long long)v);
	}
}

/* hotmapd.conf's sizes: decimal, with K, M, G or T in either case */
static void
test_decimal_and_suffixes(void **state)
{
	static const struct size_case cases[] = {
		{ "0", 0, 0 },
		{ "1", 0, 1 },
		{ "4096", 0, 4096 },
		{ "010", 0, 10 },		/* leading zeros are decimal */
		{ "1K", 0, 1024 },
		{ "1k", 0, 1024 },
		{ "16M", 0, 16ull << 20 },
		{ "16m", 0, 16ull << 20 },
		{ "3G", 0, 3ull << 30 },
		{ "3g", 0, 3ull << 30 },
		{ "2T", 0, 2ull << 40 },
		{ "2t", 0, 2ull << 40 },
		{ "0K", 0, 0 },
	};

	(void)state;
	check(cases, sizeof cases / sizeof cases[0]);
}

/* hotmapctl's offsets and lengths, and HOTMAP_SHM_SIZE: 0x hex too */
static void
test_hex(void **state)
{
	static const struct size_case cases[] = {
		{ "0x1000", 0, 4096 },
		{ "0X100", 0, 256 },
		{ "0xfF", 0, 255 },
		{ "0x10K", 0, 16 * 1024 },
		{ "0x0", 0, 0 },
		{ "0xffffffffffffffff", 0, UINT64_MAX },
		{ "0x10000000000000000", -ERANGE, 0 },
		{ "0x", -EINVAL, 0 },
		{ "0xg", -EINVAL, 0 },
		{ "x10", -EINVAL, 0 },
	};

	(void)state;
	check(cases, sizeof cases / sizeof cases[0]);
}

static void
test_range(void **state)
{
	static const struct size_case cases[] = {
		{ "18446744073709551615", 0, UINT64_MAX },
		{ "16777215T", 0, 16777215ull << 40 },
		{ "18446744073709551616", -ERANGE, 0 },
		{ "16777216T", -ERANGE, 0 },
		{ "17179869184G", -ERANGE, 0 },
		{ "99999999999999999999999999999999999999", -ERANGE, 0 },
		{ "99999999999999999999Q", -EINVAL, 0 },	/* not a size at all */
	};

	(void)state;
	check(cases, sizeof cases / sizeof cases[0]);
}

static void
test_not_sizes(void **state)
{
	static const struct size_case cases[] = {
		{ "", -EINVAL, 0 },
		{ "K", -EINVAL, 0 },
		{ "1KB", -EINVAL, 0 },
		{ "1KiB", -EINVAL, 0 },
		{ "1.5M", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },
		{ "+1", -EINVAL, 0 },
		{ " 1", -EINVAL, 0 },
		{ "1 ", -EINVAL, 0 },
		{ "1 K", -EINVAL, 0 },
		{ "1P", -EINVAL, 0 },
		{ "10Q", -EINVAL, 0 },
		{ "abc", -EINVAL, 0 },
	};

	(void)state;
	check(cases, sizeof cases / sizeof cases[0]);
}

static void
test_human(void **state)
{
	static const struct {
		uint64_t n;
		const char *want;
	} cases[] = {
		{ 0, "0 B" },
		{ 1, "1 B" },
		{ 1023, "1023 B" },
		{ 1024, "1.0 KiB" },
		{ 2888, "2.8 KiB" },		/* a small file evicted: not "0.0 MiB" */
		{ 1048524, "1023.9 KiB" },
		{ 1048540, "1.0 MiB" },		/* 1023.96 KiB would print 1024.0 */
		{ 3 * 1048576 + 77, "3.0 MiB" },
		{ 5ull << 30, "5.0 GiB" },
		{ UINT64_MAX, "16.0 EiB" },
	};
	char buf[SIZE_HUMAN_LEN];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
		assert_string_equal(size_human(cases[i].n, buf, sizeof buf), cases[i].want);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decimal_and_suffixes),
		cmocka_unit_test(test_hex),
		cmocka_unit_test(test_range),
		cmocka_unit_test(test_not_sizes),
		cmocka_unit_test(test_human),
	};

	return cmocka_run_group_tests_name("size", tests, NULL, NULL);
}
