/* SPDX-License-Identifier: MIT */
/*
 * conf_error.c - the errors of one load of the configuration: every one
 * kept, in the order of the file's lines and then the command line, each
 * naming its file and line or its option (see conf_priv.h).
 *
 * What it must not do: stop at the first error, print, or know a key
 * other than by its row's name.
 */
#include "config.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/config/conf.h"
#include "daemon/config/conf_priv.h"

/* Error order: the file's lines, then the command line. */
#define ORDER_COMMAND_LINE	UINT_MAX

void
conf_errors_clear(struct hm_config_errors *errs)
{
	size_t i;

	for (i = 0; i < errs->n; i++)
		free(errs->v[i]);
	free(errs->v);
	free(errs->order);
	memset(errs, 0, sizeof *errs);
}

/* Adds msg, kept in order after every error of an order up to its own. */
static void
errors_insert(struct load *l, unsigned order, char *msg)
{
	struct hm_config_errors *e = l->errs;
	char **v;
	unsigned *o;
	size_t i;

	if (msg == NULL) {
		l->nomem = true;
		return;
	}
	v = realloc(e->v, (e->n + 1) * sizeof *v);
	if (v != NULL)
		e->v = v;
	o = realloc(e->order, (e->n + 1) * sizeof *o);
	if (o != NULL)
		e->order = o;
	if (v == NULL || o == NULL) {
		free(msg);
		l->nomem = true;
		return;
	}
	for (i = e->n; i > 0 && e->order[i - 1] > order; i--) {
		e->v[i] = e->v[i - 1];
		e->order[i] = e->order[i - 1];
	}
	e->v[i] = msg;
	e->order[i] = order;
	e->n++;
}

static char *
vformat(const char *fmt, va_list ap)
{
	char *s;

	return vasprintf(&s, fmt, ap) < 0 ? NULL : s;
}

void
conf_file_error(struct load *l, unsigned line, const char *fmt, ...)
{
	char *msg, *s = NULL;
	va_list ap;

	va_start(ap, fmt);
	msg = vformat(fmt, ap);
	va_end(ap);
	if (msg != NULL) {
		if (line > 0 ? asprintf(&s, "%s:%u: %s", l->cfg->path, line, msg) < 0 :
			       asprintf(&s, "%s", msg) < 0)
			s = NULL;
	}
	free(msg);
	errors_insert(l, line, s);
}

void
conf_key_error(struct load *l, const struct key_def *d, const char *fmt, ...)
{
	char *msg, *s = NULL;
	va_list ap;
	int n = -1;

	va_start(ap, fmt);
	msg = vformat(fmt, ap);
	va_end(ap);
	if (msg != NULL) {
		if (l->src.origin == HM_ORIGIN_FILE)
			n = asprintf(&s, "%s:%u: %s: %s", l->cfg->path, l->src.line, d->name, msg);
		else
			n = asprintf(&s, "--%s: %s", d->name, msg);
		if (n < 0)
			s = NULL;
	}
	free(msg);
	errors_insert(l, l->src.origin == HM_ORIGIN_FILE ? l->src.line : ORDER_COMMAND_LINE, s);
}
