/* SPDX-License-Identifier: MIT */
/*
 * conf.c - hotmapd.conf and the command line into struct hm_config (see
 * conf.h): reading the file, loading (defaults, file, command line),
 * and listing every value with its source.
 *
 * What it must not do: check a value (conf_value.c does, by the type in
 * its row of keys[], conf_keys.c), or stop at the first error.
 *
 * The file's syntax is hotmapd.conf(5)'s: one "key = value" (or "key:
 * value") a line, comments, a [hotmapd] section.  It is parsed here, a
 * line at a time, so that every error names its line and all of them are
 * reported at once; it used to go through inih, which Debian's mirror
 * does not carry the source of for the Windows build, and which took
 * lines of at most 198 bytes.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/config/conf.h"
#include "daemon/config/conf_platform.h"
#include "daemon/config/conf_priv.h"
#include "daemon/base/log.h"	/* the LOG_* levels only: conf does not log */
#include "proto/frame.h"

/* --- the file --------------------------------------------------------------- */

static void
syntax_error(struct load *l, const char *expected)
{
	conf_file_error(l, l->line, "syntax error: %s", expected);
}

/* Space as the file format has it (isspace without the locale). */
static bool
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/* s without its trailing space (in place). */
static char *
rstrip(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && is_space(s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* The first of chars in s, or the ';' of an inline comment (one after a
 * space), or the end of s. */
static char *
find_or_comment(char *s, const char *chars)
{
	bool after_space = false;

	for (; *s != '\0'; s++) {
		if ((chars != NULL && strchr(chars, *s) != NULL) || (after_space && *s == ';'))
			break;
		after_space = is_space(*s);
	}
	return s;
}

/* "[name]": the section from here on.  Text after the ']' is ignored; a
 * line without one is an error, and the section stays what it was. */
static void
parse_section(struct load *l, char *p)
{
	char *end = find_or_comment(p + 1, "]");

	if (*end != ']') {
		syntax_error(l, "expected '[section]'");
		return;
	}
	*end = '\0';
	l->section_ok = strcmp(p + 1, "hotmapd") == 0;
	snprintf(l->section, sizeof l->section, "%s", p + 1);
	l->section_line = l->line;
	l->section_reported = false;
}

/* "key = value" or "key: value", both sides stripped, the value up to an
 * inline comment; into the configuration unless the section is another
 * program's. */
static void
parse_key(struct load *l, char *p)
{
	char *end = find_or_comment(p, "=:"), *value;
	int key;

	if (*end != '=' && *end != ':') {
		syntax_error(l, "expected 'key = value'");
		return;
	}
	*end = '\0';
	rstrip(p);
	value = end + 1;
	value += strspn(value, " \t\r\n\v\f");
	*find_or_comment(value, NULL) = '\0';
	rstrip(value);
	if (!l->section_ok) {
		/* Once per section, and none of its keys: they are not ours. */
		if (!l->section_reported) {
			l->section_reported = true;
			conf_file_error(l, l->section_line,
					"unknown section [%s] (keys go before any section or in [hotmapd])",
					l->section);
		}
		return;
	}
	key = conf_key_lookup(p);
	if (key < 0) {
		conf_file_error(l, l->line, "unknown key '%s'", p);
		return;
	}
	l->src = (struct hm_config_source){ HM_ORIGIN_FILE, l->line };
	conf_set_value(l, conf_key_def(key), value);
}

/* Every line of l->f. */
static void
parse_file(struct load *l)
{
	ssize_t n;

	l->section_ok = true;	/* keys before any section are ours */
	l->section[0] = '\0';
	errno = 0;
	while ((n = conf_platform_getline(&l->buf, &l->cap, l->f)) >= 0) {
		char *p = l->buf;

		l->line++;
		if (memchr(p, '\0', (size_t)n) != NULL) {
			conf_file_error(l, l->line, "a NUL byte in the line");
			continue;
		}
		if ((size_t)n > CONF_LINE_MAX + 1 ||
		    ((size_t)n == CONF_LINE_MAX + 1 && p[n - 1] != '\n')) {
			conf_file_error(l, l->line, "line too long (at most %u bytes)", CONF_LINE_MAX);
			continue;
		}
		if (l->line == 1 && strncmp(p, "\xEF\xBB\xBF", 3) == 0)
			p += 3;		/* a UTF-8 byte order mark */
		p += strspn(p, " \t\r\n\v\f");
		if (*p == '\0' || *p == ';' || *p == '#')
			continue;
		if (*p == '[')
			parse_section(l, p);
		else
			parse_key(l, p);
		errno = 0;
	}
	if (ferror(l->f))
		conf_file_error(l, 0, "%s: %s", l->cfg->path, strerror(errno != 0 ? errno : EIO));
}

static void
load_file(struct load *l, const char *path, bool given)
{
	l->f = conf_platform_fopen(path);
	if (l->f == NULL) {
		int e = errno;

		if (e == ENOENT && !given)
			return;		/* no file: the defaults serve */
		l->cfg->path = strdup(path);
		if (l->cfg->path == NULL)
			l->nomem = true;
		else
			conf_file_error(l, 0, "%s: %s", path, strerror(e));
		return;
	}
	l->cfg->path = strdup(path);
	if (l->cfg->path == NULL) {
		l->nomem = true;
		fclose(l->f);
		return;
	}
	parse_file(l);
	fclose(l->f);
	l->f = NULL;
	free(l->buf);
	l->buf = NULL;
}


int
conf_load(struct hm_config *cfg, const struct hm_config_args *args,
	  struct hm_config_errors *errs)
{
	struct load l = { .cfg = cfg, .errs = errs };
	size_t errors = errs->n, i;

	if (conf_set_defaults(cfg) < 0) {
		conf_clear(cfg);
		return -ENOMEM;
	}
	load_file(&l, args->path != NULL ? args->path : HM_CONFIG_DEFAULT_PATH,
		  args->path != NULL);

	l.src = (struct hm_config_source){ HM_ORIGIN_COMMAND_LINE, 0 };
	for (i = 0; i < args->n && !l.nomem; i++)
		conf_set_value(&l, conf_key_def(args->v[i].key), args->v[i].value);
	if (args->verbose > 0) {
		cfg->log_level += (int)args->verbose;
		if (cfg->log_level > LOG_DEBUG)
			cfg->log_level = LOG_DEBUG;
		cfg->source[HM_KEY_LOG_LEVEL] = l.src;
	}
	if (cfg->socket_path == NULL && !l.nomem)
		conf_file_error(&l, 0, "no socket path: set socket in the file, give --socket, "
			   "or set HOTMAP_SOCKET or XDG_RUNTIME_DIR");
	if (l.nomem || errs->n > errors) {
		conf_clear(cfg);
		return l.nomem ? -ENOMEM : -EINVAL;
	}
	return 0;
}

void
conf_clear(struct hm_config *cfg)
{
	free(cfg->path);
	free(cfg->socket_path);
	free(cfg->log_file);
	free(cfg->pid_file);
	resolve_roots_clear(&cfg->roots);
	free(cfg->root_sources);
	free(cfg->allow_uid.v);
	free(cfg->allow_gid.v);
	free(cfg->admin_uid.v);
	free(cfg->admin_gid.v);
	memset(cfg, 0, sizeof *cfg);
}

/* --- the command line ------------------------------------------------------- */

int
conf_args_add(struct hm_config_args *a, const char *key, const char *value)
{
	struct hm_config_arg *v;
	int k = conf_key_lookup(key);

	if (k < 0)
		return -EINVAL;
	v = realloc(a->v, (a->n + 1) * sizeof *v);
	if (v == NULL)
		return -ENOMEM;
	a->v = v;
	a->v[a->n++] = (struct hm_config_arg){ (enum hm_config_key)k, value };
	return 0;
}

void
conf_args_clear(struct hm_config_args *a)
{
	free(a->v);
	memset(a, 0, sizeof *a);
}

/* --- showing it ---------------------------------------------------------------- */

const char *
conf_source_text(const struct hm_config *cfg, struct hm_config_source src, char *buf,
		 size_t len)
{
	switch (src.origin) {
	case HM_ORIGIN_FILE:
		snprintf(buf, len, "%s:%u", cfg->path != NULL ? cfg->path : "?", src.line);
		break;
	case HM_ORIGIN_COMMAND_LINE:
		snprintf(buf, len, "command line");
		break;
	case HM_ORIGIN_SYSTEMD:
		snprintf(buf, len, "systemd socket");
		break;
	default:
		snprintf(buf, len, "default");
		break;
	}
	return buf;
}

void
conf_foreach(const struct hm_config *cfg, hm_config_cb cb, void *arg)
{
	char value[8192], source[PATH_MAX + 32];
	int k;
	size_t i;

	for (k = 0; k < HM_CONFIG__NKEYS; k++) {
		if (k == HM_KEY_ROOT && cfg->roots.n > 0) {
			for (i = 0; i < cfg->roots.n; i++)
				cb(conf_key_def(k)->name, cfg->roots.v[i].given,
				   conf_source_text(cfg, cfg->root_sources[i], source,
						      sizeof source), arg);
			continue;
		}
		cb(conf_key_def(k)->name, conf_value_text(cfg, (enum hm_config_key)k, value, sizeof value),
		   conf_source_text(cfg, cfg->source[k], source, sizeof source), arg);
	}
}

/* A key's --help text as comment lines. */
static void
example_help(FILE *f, const char *p)
{
	const char *nl;

	p += *p == '\n';
	while ((nl = strchr(p, '\n')) != NULL) {
		fprintf(f, "# %.*s\n", (int)(nl - p), p);
		p = nl + 1;
	}
	fprintf(f, "# %s\n", p);
}

/* "# key = METAVAR" for key and the keys told with it ("yes|no" for a
 * flag, which a file sets like any boolean). */
static void
example_synopsis(FILE *f, int k)
{
	const struct key_def *d = conf_key_def(k);
	const char *m;

	do {
		m = d->metavar != NULL ? d->metavar : "yes|no";
		fprintf(f, "# %s = %.*s\n", d->name, (int)strcspn(m, ","), m);
		d = ++k < HM_CONFIG__NKEYS ? conf_key_def(k) : NULL;
	} while (d != NULL && d->help == NULL);
}

/*
 * Made from the key table alone, as --help is, so that the example that
 * make install puts with the docs lists a key as soon as the table has
 * it and shows the defaults that conf_set_defaults sets.  A key without
 * text is told with the key before it (allow-gid with allow-uid): one
 * comment over both.
 */
int
conf_print_example(FILE *f)
{
	struct hm_config cfg;
	char value[8192];
	char *sock;
	int k;

	if (conf_set_defaults(&cfg) < 0) {
		conf_clear(&cfg);
		return -ENOMEM;
	}
	/* The file is the system service's: its socket, not the one that the
	 * environment of whoever makes the example would give. */
	sock = strdup("/run/hotmap/hotmapd.sock");
	if (sock == NULL) {
		conf_clear(&cfg);
		return -ENOMEM;
	}
	free(cfg.socket_path);
	cfg.socket_path = sock;
	fprintf(f, "# hotmapd.conf: every key with its default, commented out.\n"
		   "# hotmapd reads " HM_CONFIG_DEFAULT_PATH " (hotmapd.conf(5));\n"
		   "# uncomment a line to change it.  The command line wins over the file.\n"
		   "# Made by hotmapd --print-example-config (hotmap " PACKAGE_VERSION ").\n");
	for (k = 0; k < HM_CONFIG__NKEYS; k++) {
		const struct key_def *d = conf_key_def(k);

		if (d->help != NULL) {
			fprintf(f, "\n");
			example_synopsis(f, k);
			example_help(f, d->help);
		}
		if (d->restart)
			fprintf(f, "# (a reload keeps the old value: restart hotmapd)\n");
		conf_value_text(&cfg, (enum hm_config_key)k, value, sizeof value);
		fprintf(f, "#%s =%s%s\n", d->name, value[0] != '\0' ? " " : "", value);
	}
	conf_clear(&cfg);
	return 0;
}
