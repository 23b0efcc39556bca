/* SPDX-License-Identifier: MIT */
/*
 * vocab.c - names from the descriptors of proto/hotmap.proto.
 *
 * Made once (pthread_once: the daemon's worker threads may ask first) into
 * fixed tables, so that callers get strings that live as long as the
 * program.
 */
#include "config.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "proto/hotmap.pb-c.h"
#include "proto/vocab.h"

#define VOCAB_REASONS	32
#define VOCAB_NAME	32
_Static_assert(HOTMAP__REASON__REASON_OVER_BUDGET < VOCAB_REASONS,
	       "vocab.c: more reasons than its tables hold");

static struct {
	char name[VOCAB_REASONS][VOCAB_NAME];	/* "" where the .proto has none */
	char key[VOCAB_REASONS][VOCAB_NAME + 8];
} vocab;
static pthread_once_t vocab_once = PTHREAD_ONCE_INIT;

/* "REASON_LOCAL_FILE" without its prefix, lower case, sep between words. */
static void
vocab_spell(char *out, size_t len, const char *prefix, const char *name, char sep)
{
	size_t n = strlen(prefix), i;

	if (strncmp(name, prefix, n) == 0)
		name += n;
	for (i = 0; name[i] != '\0' && i + 1 < len; i++)
		out[i] = name[i] == '_' ? sep : (char)tolower((unsigned char)name[i]);
	out[i] = '\0';
}

static void
vocab_make(void)
{
	const ProtobufCEnumDescriptor *d = &hotmap__reason__descriptor;
	unsigned i;

	for (i = 0; i < d->n_values; i++) {
		const ProtobufCEnumValue *v = &d->values[i];
		char word[VOCAB_NAME];

		if (v->value < 0 || v->value >= VOCAB_REASONS)
			continue;
		vocab_spell(vocab.name[v->value], VOCAB_NAME, "REASON_", v->name, '-');
		vocab_spell(word, sizeof word, "REASON_", v->name, '_');
		snprintf(vocab.key[v->value], sizeof vocab.key[v->value], "opens_%s", word);
	}
}

const char *
vocab_reason_name(unsigned reason)
{
	pthread_once(&vocab_once, vocab_make);
	if (reason >= VOCAB_REASONS || vocab.name[reason][0] == '\0')
		return "unknown";
	return vocab.name[reason];
}

const char *
vocab_reason_stat_key(unsigned reason)
{
	pthread_once(&vocab_once, vocab_make);
	if (reason >= VOCAB_REASONS || vocab.key[reason][0] == '\0')
		return NULL;
	return vocab.key[reason];
}
