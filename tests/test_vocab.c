/* SPDX-License-Identifier: MIT */
/*
 * test_vocab.c - proto/vocab.c: the names people read, made from the
 * .proto's value names, are the ones hotmapctl(1), hotmapd(8) and the
 * stats keys have always shown.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "proto/vocab.h"

static void
test_reason_names(void **state)
{
	static const char *const names[] = {
		"local-file", "forced", "not-regular", "empty", "network-fs", "pseudo-fs",
		"mmap-failed", "too-large", "over-budget",
	};
	unsigned i;

	(void)state;
	for (i = 0; i < sizeof names / sizeof names[0]; i++)
		assert_string_equal(vocab_reason_name(i), names[i]);
	assert_string_equal(vocab_reason_name(i), "unknown");
	assert_string_equal(vocab_reason_name(1000), "unknown");
}

static void
test_reason_stat_keys(void **state)
{
	(void)state;
	assert_string_equal(vocab_reason_stat_key(0), "opens_local_file");
	assert_string_equal(vocab_reason_stat_key(2), "opens_not_regular");
	assert_string_equal(vocab_reason_stat_key(8), "opens_over_budget");
	assert_null(vocab_reason_stat_key(9));
	assert_null(vocab_reason_stat_key(~0u));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reason_names),
		cmocka_unit_test(test_reason_stat_keys),
	};

	return cmocka_run_group_tests_name("vocab", tests, NULL, NULL);
}
