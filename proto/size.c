/* SPDX-License-Identifier: MIT */
/*
 * size.c - byte counts as size.h's grammar has them.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#include "proto/size.h"

/* The value of c as a digit of base (10 or 16), or -1. */
static int
size_digit(char c, unsigned base)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (base == 16 && c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (base == 16 && c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static unsigned
size_shift(char suffix)
{
	switch (suffix) {
	case 'k': case 'K': return 10;
	case 'm': case 'M': return 20;
	case 'g': case 'G': return 30;
	case 't': case 'T': return 40;
	default: return 0;
	}
}

int
size_parse(const char *s, uint64_t *out)
{
	unsigned base = 10, shift;
	uint64_t n = 0;
	bool overflow = false;
	const char *p = s;
	int d;

	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	if (size_digit(*p, base) < 0)
		return -EINVAL;
	/* every digit is read before overflow is told: "99...9x" is not a
	 * size at all, rather than too large a one */
	for (; (d = size_digit(*p, base)) >= 0; p++) {
		if (n > (UINT64_MAX - (unsigned)d) / base)
			overflow = true;
		n = n * base + (unsigned)d;
	}
	shift = size_shift(*p);
	if (shift > 0)
		p++;
	if (*p != '\0')
		return -EINVAL;
	if (overflow || (shift > 0 && n > UINT64_MAX >> shift))
		return -ERANGE;
	*out = n << shift;
	return 0;
}

const char *
size_human(uint64_t n, char *buf, size_t len)
{
	static const char units[] = "KMGTPE";
	double v = (double)n;
	unsigned u = 0;

	if (n < 1024) {
		snprintf(buf, len, "%u B", (unsigned)n);
		return buf;
	}
	v /= 1024.0;
	/* 1023.96 KiB would print as "1024.0 KiB": go up a unit first */
	while (v >= 1024.0 - 0.05 && u + 1 < sizeof units - 1) {
		v /= 1024.0;
		u++;
	}
	snprintf(buf, len, "%.1f %ciB", v, units[u]);
	return buf;
}
