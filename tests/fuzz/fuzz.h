/* SPDX-License-Identifier: MIT */
/*
 * fuzz.h - what the libFuzzer targets share: the entry points libFuzzer
 * calls, and check(), an assertion that stays in every build and aborts
 * (which libFuzzer reports as a crash, with the input that caused it).
 */
#ifndef HOTMAP_TESTS_FUZZ_H
#define HOTMAP_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define check(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: check failed: %s\n",	\
				__FILE__, __LINE__, #cond);		\
			abort();					\
		}							\
	} while (0)

#endif
