/* SPDX-License-Identifier: MIT */
/*
 * conf_value.c - the value types of hotmapd.conf and the command line:
 * numbers, sizes, booleans, choices, octal modes, and the types no
 * other covers (the socket, its group, the roots, lists of users and
 * groups), each checked, stored in its field of struct hm_config, and
 * shown again as the file would spell it (see conf_priv.h).
 *
 * What it must not do: know which key has which type or limits (the
 * table in conf_keys.c says), or read the file.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/config/conf.h"
#include "daemon/config/conf_platform.h"
#include "proto/size.h"
#include "daemon/config/conf_priv.h"

/* Decimal digits only: no sign, no space, no base prefix. */
static int
parse_uint64(const char *s, uint64_t *out)
{
	uint64_t n = 0;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	for (; isdigit((unsigned char)*s); s++) {
		unsigned d = (unsigned)(*s - '0');

		if (n > (UINT64_MAX - d) / 10)
			return -ERANGE;
		n = n * 10 + d;
	}
	if (*s != '\0')
		return -EINVAL;
	*out = n;
	return 0;
}

/* One grammar for every size, the daemon's and its clients' (proto/size.h). */
int
conf_parse_size(const char *s, uint64_t *out)
{
	return size_parse(s, out);
}

const char *
conf_format_size(uint64_t v, char *buf, size_t len)
{
	static const char suffix[] = "KMGT";
	int i = -1;

	while (v != 0 && v % 1024 == 0 && i < 3) {
		v /= 1024;
		i++;
	}
	if (i < 0)
		snprintf(buf, len, "%llu", (unsigned long long)v);
	else
		snprintf(buf, len, "%llu%c", (unsigned long long)v, suffix[i]);
	return buf;
}

/* The field of d in cfg, as the integer it holds (0 for a pointer). */
static uint64_t
conf_get_field(const struct hm_config *cfg, const struct key_def *d)
{
	const char *p = (const char *)cfg + d->offset;
	uint64_t v64;
	unsigned v32;
	bool b;

	switch (d->size) {
	case sizeof b:
		memcpy(&b, p, sizeof b);
		return b;
	case sizeof v32:
		memcpy(&v32, p, sizeof v32);
		return v32;
	case sizeof v64:
		memcpy(&v64, p, sizeof v64);
		return v64;
	}
	return 0;
}

void
conf_set_field(struct hm_config *cfg, const struct key_def *d, uint64_t v)
{
	char *p = (char *)cfg + d->offset;
	unsigned v32 = (unsigned)v;
	bool b = v != 0;

	switch (d->size) {
	case sizeof b:
		memcpy(p, &b, sizeof b);
		break;
	case sizeof v32:
		memcpy(p, &v32, sizeof v32);
		break;
	case sizeof v:
		memcpy(p, &v, sizeof v);
		break;
	}
}

static void
set_number(struct load *l, const struct key_def *d, const char *value)
{
	uint64_t n;
	int rc;

	if (d->has_auto && strcmp(value, "auto") == 0) {
		conf_set_field(l->cfg, d, d->auto_value);
		return;
	}
	rc = parse_uint64(value, &n);
	if (rc == -EINVAL)
		conf_key_error(l, d, "not a number: '%s'", value);
	else if (rc < 0 || n < d->min || n > d->max)
		conf_key_error(l, d, "%s is out of range (%llu to %llu)", value,
			  (unsigned long long)d->min, (unsigned long long)d->max);
	else
		conf_set_field(l->cfg, d, n);
}

static void
set_size(struct load *l, const struct key_def *d, const char *value)
{
	char a[32], b[32];
	uint64_t n;
	int rc;

	if (d->has_auto && strcmp(value, "auto") == 0) {
		conf_set_field(l->cfg, d, d->auto_value);
		return;
	}
	rc = conf_parse_size(value, &n);
	if (rc == -EINVAL)
		conf_key_error(l, d, "not a size: '%s' (a number with an optional K, M, G or T)",
			  value);
	else if (rc < 0)
		conf_key_error(l, d, "too large: '%s'", value);
	else if (n < d->min || n > d->max)
		conf_key_error(l, d, "%s is out of range (%s to %s)", value,
			  conf_format_size(d->min, a, sizeof a), conf_format_size(d->max, b, sizeof b));
	else
		conf_set_field(l->cfg, d, n);
}

/* One of d's choices: the field takes its index. */
static void
set_enum(struct load *l, const struct key_def *d, const char *value)
{
	char list[128] = "";
	size_t i;

	for (i = 0; i < d->nchoices; i++) {
		if (d->choices[i] != NULL && strcmp(d->choices[i], value) == 0) {
			conf_set_field(l->cfg, d, i);
			return;
		}
	}
	for (i = 0; i < d->nchoices; i++)
		if (d->choices[i] != NULL)
			snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
				 list[0] != '\0' ? ", " : "", d->choices[i]);
	conf_key_error(l, d, "unknown value '%s' (%s)", value, list);
}

static void
set_bool(struct load *l, const struct key_def *d, const char *value)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };
	size_t i;

	for (i = 0; i < sizeof yes / sizeof yes[0]; i++) {
		if (strcasecmp(value, yes[i]) == 0) {
			conf_set_field(l->cfg, d, true);
			return;
		}
		if (strcasecmp(value, no[i]) == 0) {
			conf_set_field(l->cfg, d, false);
			return;
		}
	}
	conf_key_error(l, d, "not yes or no: '%s'", value);
}

static void
set_octal_mode(struct load *l, const struct key_def *d, const char *value)
{
	unsigned long n;
	char *end;

	errno = 0;
	n = strtoul(value, &end, 8);
	if (value[0] < '0' || value[0] > '7' || *end != '\0' || errno != 0)
		conf_key_error(l, d, "not an octal mode: '%s'", value);
	else if (n > d->max)
		conf_key_error(l, d, "%s is out of range (0 to %#llo)", value,
			  (unsigned long long)d->max);
	else
		conf_set_field(l->cfg, d, n);
}

_Static_assert(sizeof(uid_t) == sizeof(unsigned) && sizeof(gid_t) == sizeof(unsigned) &&
	       (uid_t)-1 > 0 && (gid_t)-1 > 0, "ids are unsigned int");

/*
 * A user, or with group a group (name or number), into *out: 0, or -1
 * after an error.  Where users and groups mean nothing (Windows), every
 * one is an error.
 */
static int
lookup_id(struct load *l, const struct key_def *d, const char *name, bool group, unsigned *out)
{
	const char *what = group ? "group" : "user";
	const char *none = conf_platform_no_ids();
	uint64_t n;
	int rc;

	if (none != NULL) {
		conf_key_error(l, d, "%s '%s': %s", what, name, none);
		return -1;
	}
	rc = parse_uint64(name, &n);
	if (rc != -EINVAL) {
		/* (uid_t)-1 is chown's "unchanged" and nobody's id */
		if (rc < 0 || n >= (unsigned)-1) {
			conf_key_error(l, d, "%cid %s is out of range", what[0], name);
			return -1;
		}
		*out = (unsigned)n;
		return 0;
	}
	rc = conf_platform_lookup_id(name, group, out);
	if (rc == 0)
		return 0;
	if (rc == -ENOMEM)
		l->nomem = true;
	else if (rc != -ENOENT)
		conf_key_error(l, d, "cannot look up %s '%s': %s", what, name, strerror(-rc));
	else
		conf_key_error(l, d, "unknown %s '%s'", what, name);
	return -1;
}

/*
 * A list of users or groups, separated by commas and spaces, added to the
 * list of ids at d's field (uid_t and gid_t are both unsigned int here).
 * A repeated key adds to the list; the command line replaces the file's.
 * Nothing is added when any name is bad.
 */
static void
set_id_list(struct load *l, const struct key_def *d, const char *value, bool groups)
{
	/* struct hm_uid_list and struct hm_gid_list alike */
	struct id_list {
		unsigned *v;
		size_t n;
	} *list = (struct id_list *)((char *)l->cfg + d->offset);
	char *copy = strdup(value), *tok, *save = NULL;
	unsigned *ids = NULL, *nv;
	size_t nids = 0;
	bool bad = false;

	if (copy == NULL) {
		l->nomem = true;
		return;
	}
	for (tok = strtok_r(copy, ", \t", &save); tok != NULL; tok = strtok_r(NULL, ", \t", &save)) {
		unsigned id;
		int rc;

		rc = lookup_id(l, d, tok, groups, &id);
		if (rc < 0) {
			bad = true;
			continue;
		}
		nv = realloc(ids, (nids + 1) * sizeof *ids);
		if (nv == NULL) {
			l->nomem = true;
			bad = true;
			break;
		}
		ids = nv;
		ids[nids++] = id;
	}
	free(copy);
	if (bad) {
		free(ids);
		return;
	}
	if (l->src.origin == HM_ORIGIN_COMMAND_LINE && !l->replaced[d->key]) {
		l->replaced[d->key] = true;
		free(list->v);
		list->v = NULL;
		list->n = 0;
	}
	if (nids == 0) {
		free(ids);
		return;
	}
	nv = realloc(list->v, (list->n + nids) * sizeof *list->v);
	if (nv == NULL) {
		free(ids);
		l->nomem = true;
		return;
	}
	memcpy(nv + list->n, ids, nids * sizeof *ids);
	list->v = nv;
	list->n += nids;
	free(ids);
}

_Static_assert(sizeof(struct hm_uid_list) == sizeof(struct hm_gid_list) &&
	       offsetof(struct hm_uid_list, n) == offsetof(struct hm_gid_list, n),
	       "id lists are alike");

void
conf_set_uid_list(struct load *l, const struct key_def *d, const char *value)
{
	set_id_list(l, d, value, false);
}

void
conf_set_gid_list(struct load *l, const struct key_def *d, const char *value)
{
	set_id_list(l, d, value, true);
}

void
conf_text_id_list(const struct hm_config *cfg, const struct key_def *d, char *buf, size_t len)
{
	const struct hm_uid_list *list = (const void *)((const char *)cfg + d->offset);
	size_t i, used = 0;

	for (i = 0; i < list->n && used < len; i++) {
		int w = snprintf(buf + used, len - used, "%s%u", i > 0 ? " " : "", list->v[i]);

		if (w < 0)
			break;
		used += (size_t)w;
	}
}

void
conf_set_root(struct load *l, const struct key_def *d, const char *value)
{
	struct hm_config *cfg = l->cfg;
	struct hm_config_source *s;
	int rc;

	if (l->src.origin == HM_ORIGIN_COMMAND_LINE && !l->replaced[d->key]) {
		l->replaced[d->key] = true;
		resolve_roots_clear(&cfg->roots);
		free(cfg->root_sources);
		cfg->root_sources = NULL;
	}
	s = realloc(cfg->root_sources, (cfg->roots.n + 1) * sizeof *s);
	if (s == NULL) {
		l->nomem = true;
		return;
	}
	cfg->root_sources = s;
	rc = resolve_roots_add(&cfg->roots, value);
	if (rc == -EINVAL)
		conf_key_error(l, d, "not an absolute path: '%s'", value);
	else if (rc < 0)
		conf_key_error(l, d, "%s: %s", value, strerror(-rc));
	else
		cfg->root_sources[cfg->roots.n - 1] = l->src;
}

void
conf_text_root(const struct hm_config *cfg, const struct key_def *d, char *buf, size_t len)
{
	size_t i, used = 0;

	(void)d;
	for (i = 0; i < cfg->roots.n && used < len; i++) {
		int w = snprintf(buf + used, len - used, "%s%s", i > 0 ? " " : "",
				 cfg->roots.v[i].given);

		if (w < 0)
			break;
		used += (size_t)w;
	}
}

void
conf_set_socket(struct load *l, const struct key_def *d, const char *value)
{
	char *copy;

	if (value[0] == '\0') {
		conf_key_error(l, d, "empty path");
		return;
	}
	if (strlen(value) > conf_platform_socket_max()) {
		conf_key_error(l, d, "path too long (%llu bytes, at most %llu): '%s'",
			  (unsigned long long)strlen(value),
			  (unsigned long long)conf_platform_socket_max(), value);
		return;
	}
	copy = strdup(value);
	if (copy == NULL) {
		l->nomem = true;
		return;
	}
	free(l->cfg->socket_path);
	l->cfg->socket_path = copy;
}

void
conf_text_socket(const struct hm_config *cfg, const struct key_def *d, char *buf, size_t len)
{
	(void)d;
	snprintf(buf, len, "%s", cfg->socket_path != NULL ? cfg->socket_path : "");
}

void
conf_set_socket_group(struct load *l, const struct key_def *d, const char *value)
{
	if (value[0] == '\0')
		conf_key_error(l, d, "empty group");
	else
		lookup_id(l, d, value, true, &l->cfg->socket_group);
}

void
conf_text_socket_group(const struct hm_config *cfg, const struct key_def *d, char *buf, size_t len)
{
	(void)d;
	if (cfg->socket_group != (gid_t)-1)
		snprintf(buf, len, "%u", (unsigned)cfg->socket_group);
}

/* A char * field: absolute, since hotmapd leaves its directory for / when
 * it detaches (the command line's are made absolute before they get here). */
void
conf_set_path(struct load *l, const struct key_def *d, const char *value)
{
	char **field = (char **)((char *)l->cfg + d->offset);
	char *copy = NULL;

	if (value[0] != '\0' && !conf_platform_path_absolute(value)) {
		conf_key_error(l, d, "not an absolute path: '%s'", value);
		return;
	}
	if (value[0] != '\0') {
		copy = strdup(value);
		if (copy == NULL) {
			l->nomem = true;
			return;
		}
	}
	free(*field);
	*field = copy;
}

void
conf_text_path(const struct hm_config *cfg, const struct key_def *d, char *buf, size_t len)
{
	char *const *field = (char *const *)((const char *)cfg + d->offset);

	snprintf(buf, len, "%s", *field != NULL ? *field : "");
}

static void
set_one_id(struct load *l, const struct key_def *d, const char *value, bool group)
{
	unsigned *field = (unsigned *)((char *)l->cfg + d->offset);

	if (value[0] == '\0')
		*field = (unsigned)-1;	/* unset again */
	else
		lookup_id(l, d, value, group, field);
}

void
conf_set_user(struct load *l, const struct key_def *d, const char *value)
{
	set_one_id(l, d, value, false);
}

void
conf_set_group(struct load *l, const struct key_def *d, const char *value)
{
	set_one_id(l, d, value, true);
}

void
conf_text_id(const struct hm_config *cfg, const struct key_def *d, char *buf, size_t len)
{
	unsigned id;

	memcpy(&id, (const char *)cfg + d->offset, sizeof id);
	if (id != (unsigned)-1)
		snprintf(buf, len, "%u", id);
}

void
conf_set_value(struct load *l, const struct key_def *d, const char *value)
{
	static void (*const set[])(struct load *, const struct key_def *, const char *) = {
		[KEY_NUMBER] = set_number, [KEY_SIZE] = set_size, [KEY_BOOL] = set_bool,
		[KEY_ENUM] = set_enum, [KEY_MODE] = set_octal_mode,
	};
	size_t errors = l->errs->n;

	if (d->type == KEY_SPECIAL)
		d->set(l, d, value);
	else
		set[d->type](l, d, value);
	if (l->errs->n == errors)
		l->cfg->source[d->key] = l->src;
}

const char *
conf_value_format(const struct hm_config *cfg, const struct key_def *d, char *buf, size_t len)
{
	uint64_t v = conf_get_field(cfg, d);

	buf[0] = '\0';
	if (d->has_auto && v == d->auto_value) {
		snprintf(buf, len, "auto");
		return buf;
	}
	switch (d->type) {
	case KEY_NUMBER:
		snprintf(buf, len, "%llu", (unsigned long long)v);
		break;
	case KEY_SIZE:
		conf_format_size(v, buf, len);
		break;
	case KEY_BOOL:
		snprintf(buf, len, "%s", v ? "yes" : "no");
		break;
	case KEY_ENUM:
		snprintf(buf, len, "%s", v < d->nchoices && d->choices[v] != NULL ?
			 d->choices[v] : "?");
		break;
	case KEY_MODE:
		snprintf(buf, len, "%04llo", (unsigned long long)v);
		break;
	case KEY_SPECIAL:
		d->text(cfg, d, buf, len);
		break;
	}
	return buf;
}
