/* SPDX-License-Identifier: MIT */
/*
 * content.h - the tests' file content: byte pos of the content for seed,
 * the same function in the harness (harness_fill) and in faultfs, which
 * serves it from a FUSE file system of its own.  Header-only: faultfs
 * links no cmocka.
 */
#ifndef HOTMAP_TESTS_CONTENT_H
#define HOTMAP_TESTS_CONTENT_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t
content_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static inline void
content_fill(void *buf, size_t len, uint64_t seed, uint64_t pos)
{
	uint8_t *p = buf;
	uint64_t key = content_mix(seed);

	while (len > 0) {
		uint64_t w = content_mix(key ^ (pos / 8));
		unsigned k = (unsigned)(pos % 8);

		if (k == 0 && len >= 8) {
			/* Little-endian by construction, whatever the host. */
			for (k = 0; k < 8; k++)
				p[k] = (uint8_t)(w >> (8 * k));
			p += 8;
			pos += 8;
			len -= 8;
			continue;
		}
		for (; k < 8 && len > 0; k++, len--, pos++)
			*p++ = (uint8_t)(w >> (8 * k));
	}
}

#endif
