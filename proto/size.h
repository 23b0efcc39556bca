/* SPDX-License-Identifier: MIT */
/*
 * size.h - the one grammar of byte counts, shared by hotmapd (hotmapd.conf
 * and its options), libhotmap (HOTMAP_SHM_SIZE, HOTMAP_SHM_THRESHOLD) and
 * hotmapctl (read's OFFSET and LENGTH).
 *
 * What it is for: read a size as people write it.  What it must not do:
 * know any limit of its callers (they check their own ranges), log, or
 * look at the locale.
 *
 * The grammar, whole string, nothing around it:
 *
 *   size   = number [suffix]
 *   number = 1*DIGIT                 decimal (leading zeros are decimal)
 *          / ("0x" / "0X") 1*HEXDIG  hexadecimal
 *   suffix = "K" / "M" / "G" / "T"   (or lower case) times 1024, 1024^2,
 *                                    1024^3, 1024^4
 *
 * No sign, no space, no decimals, no "B" after the suffix.
 */
#ifndef HOTMAP_SIZE_H
#define HOTMAP_SIZE_H

#include <stddef.h>
#include <stdint.h>

/* 0 and the size in *out; -EINVAL when s is not one (*out untouched),
 * -ERANGE when it does not fit in 64 bits. */
int size_parse(const char *s, uint64_t *out);

/* n for people: "0 B", "999 B", "2.8 KiB", "1.0 MiB", ... "16.0 EiB" (one
 * decimal past bytes, powers of 1024, never "0.0" for a non-zero count).
 * Returns buf; len of 16 always fits. */
#define SIZE_HUMAN_LEN 16
const char *size_human(uint64_t n, char *buf, size_t len);

#endif
