/* SPDX-License-Identifier: MIT */
/*
 * ctl_json.c - hotmapctl's one JSON emitter (RFC 8259 strings, checked
 * UTF-8) and the buffer its documents are built in, printed only once
 * complete (ctl.h).  ctl_output.c writes every format through them.
 *
 * What it must not do: know what it writes (counters, files, config are
 * ctl_output.c's), or print a document the caller did not finish.
 */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hotmapctl/ctl.h"
#include "proto/vocab.h"

/* --- JSON ------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s (1 to 4), or 0 when s does not
 * start one: overlong forms, surrogates and code points past U+10FFFF
 * are not valid (RFC 3629). */
static size_t
utf8_sequence(const unsigned char *s)
{
	unsigned c = s[0], min, cp;
	size_t n, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07, min = 0x10000;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)	/* the NUL ends it here too */
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/*
 * The rule, as hotmapctl(1) states it: '"' and '\' are escaped with a
 * backslash; \b \f \n \r \t have their short escapes; other control
 * characters and DEL are written \u00XX; valid UTF-8 is copied as is; and
 * each byte that is not part of valid UTF-8 (a path may hold any byte but
 * NUL) is written \u00XX with the byte's value, as if it were Latin-1.
 */
static void
json_write_string(struct ctl_buffer *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	ctl_putc(f, '"');
	while (*s != '\0') {
		size_t n = utf8_sequence(s);

		switch (*s) {
		case '"': ctl_puts(f, "\\\""); break;
		case '\\': ctl_puts(f, "\\\\"); break;
		case '\b': ctl_puts(f, "\\b"); break;
		case '\f': ctl_puts(f, "\\f"); break;
		case '\n': ctl_puts(f, "\\n"); break;
		case '\r': ctl_puts(f, "\\r"); break;
		case '\t': ctl_puts(f, "\\t"); break;
		default:
			if (n == 0 || *s < 0x20 || *s == 0x7f) {
				ctl_printf(f, "\\u%04x", *s);
				n = 1;
			} else {
				ctl_write(f, s, n);
			}
			s += n;
			continue;
		}
		s++;
	}
	ctl_putc(f, '"');
}

void
json_init(struct json *j, FILE *f)
{
	memset(j, 0, sizeof *j);
	j->direct.f = f;
	j->f = &j->direct;
}

void
json_init_buffer(struct json *j, struct ctl_buffer *b)
{
	memset(j, 0, sizeof *j);
	j->f = b;
}

static void
json_indent(struct json *j, unsigned depth)
{
	unsigned i;

	ctl_putc(j->f, '\n');
	for (i = 0; i < depth; i++)
		ctl_puts(j->f, "  ");
}

/* Before a value or a key: the separator its container wants. */
static void
json_before(struct json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->depth == 0)
		return;
	if (j->members[j->depth])
		ctl_putc(j->f, ',');
	if (j->inline_[j->depth]) {
		if (j->members[j->depth])
			ctl_putc(j->f, ' ');
	} else {
		json_indent(j, j->depth);
	}
	j->members[j->depth] = true;
}

void
json_open(struct json *j, char brace, bool inline_)
{
	/* hotmapctl's documents nest 3 deep: deeper is a bug here */
	assert(j->depth + 1 < sizeof j->members / sizeof j->members[0]);
	json_before(j);
	ctl_putc(j->f, brace);
	j->depth++;
	j->members[j->depth] = false;
	/* inside an inline container, everything is inline */
	j->inline_[j->depth] = inline_ || (j->depth > 1 && j->inline_[j->depth - 1]);
	j->closer[j->depth] = brace == '{' ? '}' : ']';
}

void
json_close(struct json *j)
{
	if (j->depth == 0)
		return;
	if (j->members[j->depth] && !j->inline_[j->depth])
		json_indent(j, j->depth - 1);
	ctl_putc(j->f, j->closer[j->depth]);
	j->depth--;
	if (j->depth == 0)
		ctl_putc(j->f, '\n');
}

void
json_key(struct json *j, const char *key)
{
	json_before(j);
	json_write_string(j->f, key);
	ctl_puts(j->f, ": ");
	j->after_key = true;
}

void
json_string(struct json *j, const char *s)
{
	json_before(j);
	json_write_string(j->f, s);
}

void
json_uint(struct json *j, uint64_t v)
{
	json_before(j);
	ctl_printf(j->f, "%" PRIu64, v);
}

void
json_int(struct json *j, int64_t v)
{
	json_before(j);
	ctl_printf(j->f, "%" PRId64, v);
}

void
json_bool(struct json *j, bool v)
{
	json_before(j);
	ctl_puts(j->f, v ? "true" : "false");
}

void
json_null(struct json *j)
{
	json_before(j);
	ctl_puts(j->f, "null");
}

/* --- output printed once complete --------------------------------------------- */

int
ctl_buffer_open(struct ctl_buffer *b)
{
	memset(b, 0, sizeof *b);
	return 0;
}

void
ctl_write(struct ctl_buffer *b, const void *p, size_t n)
{
	if (b->f != NULL) {
		fwrite(p, 1, n, b->f);
		return;
	}
	if (b->failed)
		return;
	if (n > b->cap - b->len) {
		size_t cap = b->cap == 0 ? 4096 : b->cap;
		char *d;

		while (cap - b->len < n) {
			if (cap > SIZE_MAX / 2) {
				b->failed = true;
				return;
			}
			cap *= 2;
		}
		d = realloc(b->data, cap);
		if (d == NULL) {
			b->failed = true;
			return;
		}
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

void
ctl_puts(struct ctl_buffer *b, const char *s)
{
	ctl_write(b, s, strlen(s));
}

void
ctl_putc(struct ctl_buffer *b, int c)
{
	char ch = (char)c;

	ctl_write(b, &ch, 1);
}

void
ctl_printf(struct ctl_buffer *b, const char *fmt, ...)
{
	char small[256], *big;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->failed = true;
		return;
	}
	if ((size_t)n < sizeof small) {
		ctl_write(b, small, (size_t)n);
		return;
	}
	big = malloc((size_t)n + 1);
	if (big == NULL) {
		b->failed = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	ctl_write(b, big, (size_t)n);
	free(big);
}

void
ctl_buffer_close(struct ctl_buffer *b, bool print)
{
	if (b->f == NULL && !b->failed && print)
		fwrite(b->data, 1, b->len, stdout);
	free(b->data);
	memset(b, 0, sizeof *b);
}

