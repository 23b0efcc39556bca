/*
 * conf.c - hotmapd.conf and the command line into struct hm_config (see
 * conf.h).
 *
 * inih does the parsing; this file only feeds it lines and checks values.
 * The reader hands inih one whole line at a time, with its indentation
 * removed (so an indented key is a key, never a continuation of the one
 * before) and counts lines itself, so every error can name its line: the
 * inih that distributions ship calls handlers without line numbers and
 * stops reporting syntax errors after the first.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>

#include <ini.h>

#include "daemon/conf.h"
#include "proto/frame.h"
#include "proto/size.h"

#define SECONDS_MAX	(86400u * 365u)
#define KIB		1024ull
#define MIB		(1024ull * KIB)
#define GIB		(1024ull * MIB)
#define TIB		(1024ull * GIB)

/* How a key's value is spelled and stored (see the table, keys[]). */
enum key_type {
	KEY_NUMBER,	/* unsigned: decimal, min to max; "auto" with has_auto */
	KEY_SIZE,	/* uint64_t: a number with K, M, G or T, min to max */
	KEY_BOOL,	/* bool: yes/no, true/false, on/off, 1/0 */
	KEY_ENUM,	/* an enum (int-sized): the index of a choice */
	KEY_MODE,	/* unsigned: octal, 0 to max */
	KEY_SPECIAL,	/* set and text do it */
};

struct load;

/*
 * One key: everything about it but its field's declaration and its
 * man page line.  Parsing, checking, defaults, showing it, the command
 * line, --help and what a reload does all read this.
 */
struct key_def {
	enum hm_config_key key;
	const char *name;		/* in the file; --name on the command line */
	enum key_type type;
	size_t offset, size;		/* of the field in struct hm_config */
	uint64_t min, max;		/* KEY_NUMBER, KEY_SIZE, KEY_MODE */
	uint64_t def;			/* the default, stored as set_field does */
	const char *const *choices;	/* KEY_ENUM: names indexed by value, NULL: none */
	size_t nchoices;
	bool has_auto;			/* "auto" is a value: auto_value */
	uint64_t auto_value;
	bool restart;			/* a reload keeps the old value */
	char short_opt;			/* 0: none */
	const char *metavar;		/* in --help; NULL: a flag (no value, "yes") */
	const char *help;		/* --help's text, lines split by '\n'; a first
					 * empty line puts it below the option;
					 * NULL: told with the key before */
	void (*set)(struct load *l, const struct key_def *d, const char *value);	/* KEY_SPECIAL */
	void (*text)(const struct hm_config *cfg, const struct key_def *d, char *buf,
		     size_t len);	/* KEY_SPECIAL */
};

static const struct key_def *key_def(int key);

/* One load in progress. */
struct load {
	struct hm_config *cfg;
	struct hm_config_errors *errs;
	struct hm_config_source src;	/* of the value being set */
	bool replaced[HM_CONFIG__NKEYS];	/* repeatable key given on the command line */
	bool nomem;

	/* the reader */
	FILE *f;
	char *buf;
	size_t cap;
	unsigned line;			/* of the line inih has now */
	bool candidate;			/* the line must reach the handler */
	bool handled;			/* it did */
	unsigned first_syntax_error;	/* line; 0: none reported yet */
	unsigned section_line;		/* of the last [section] */
	unsigned section_reported;	/* section_line of the last error about one */
};

/* Error order: the file's lines, then the command line. */
#define ORDER_COMMAND_LINE	UINT_MAX

int
conf_key_lookup(const char *name)
{
	int k;

	for (k = 0; k < HM_CONFIG__NKEYS; k++)
		if (strcmp(key_def(k)->name, name) == 0)
			return k;
	return -1;
}

const char *
conf_key_name(enum hm_config_key key)
{
	return (unsigned)key < HM_CONFIG__NKEYS ? key_def(key)->name : "?";
}

bool
conf_key_needs_restart(enum hm_config_key key)
{
	return (unsigned)key < HM_CONFIG__NKEYS && key_def(key)->restart;
}

/* --- errors ---------------------------------------------------------------- */

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

/* An error about the file at line (0: about the whole file). */
static void __attribute__((format(printf, 3, 4)))
file_error(struct load *l, unsigned line, const char *fmt, ...)
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

/* An error about key's value: "FILE:LINE: key: ..." or "--key: ...". */
static void __attribute__((format(printf, 3, 4)))
key_error(struct load *l, enum hm_config_key key, const char *fmt, ...)
{
	char *msg, *s = NULL;
	va_list ap;
	int n = -1;

	va_start(ap, fmt);
	msg = vformat(fmt, ap);
	va_end(ap);
	if (msg != NULL) {
		if (l->src.origin == HM_ORIGIN_FILE)
			n = asprintf(&s, "%s:%u: %s: %s", l->cfg->path, l->src.line, key_def(key)->name, msg);
		else
			n = asprintf(&s, "--%s: %s", key_def(key)->name, msg);
		if (n < 0)
			s = NULL;
	}
	free(msg);
	errors_insert(l, l->src.origin == HM_ORIGIN_FILE ? l->src.line : ORDER_COMMAND_LINE, s);
}

/* --- values ---------------------------------------------------------------- */

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
get_field(const struct hm_config *cfg, const struct key_def *d)
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

static void
set_field(struct hm_config *cfg, const struct key_def *d, uint64_t v)
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
		set_field(l->cfg, d, d->auto_value);
		return;
	}
	rc = parse_uint64(value, &n);
	if (rc == -EINVAL)
		key_error(l, d->key, "not a number: '%s'", value);
	else if (rc < 0 || n < d->min || n > d->max)
		key_error(l, d->key, "%s is out of range (%llu to %llu)", value,
			  (unsigned long long)d->min, (unsigned long long)d->max);
	else
		set_field(l->cfg, d, n);
}

static void
set_size(struct load *l, const struct key_def *d, const char *value)
{
	char a[32], b[32];
	uint64_t n;
	int rc = conf_parse_size(value, &n);

	if (rc == -EINVAL)
		key_error(l, d->key, "not a size: '%s' (a number with an optional K, M, G or T)",
			  value);
	else if (rc < 0)
		key_error(l, d->key, "too large: '%s'", value);
	else if (n < d->min || n > d->max)
		key_error(l, d->key, "%s is out of range (%s to %s)", value,
			  conf_format_size(d->min, a, sizeof a), conf_format_size(d->max, b, sizeof b));
	else
		set_field(l->cfg, d, n);
}

/* One of d's choices: the field takes its index. */
static void
set_enum(struct load *l, const struct key_def *d, const char *value)
{
	char list[128] = "";
	size_t i;

	for (i = 0; i < d->nchoices; i++) {
		if (d->choices[i] != NULL && strcmp(d->choices[i], value) == 0) {
			set_field(l->cfg, d, i);
			return;
		}
	}
	for (i = 0; i < d->nchoices; i++)
		if (d->choices[i] != NULL)
			snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
				 list[0] != '\0' ? ", " : "", d->choices[i]);
	key_error(l, d->key, "unknown value '%s' (%s)", value, list);
}

static void
set_bool(struct load *l, const struct key_def *d, const char *value)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };
	size_t i;

	for (i = 0; i < sizeof yes / sizeof yes[0]; i++) {
		if (strcasecmp(value, yes[i]) == 0) {
			set_field(l->cfg, d, true);
			return;
		}
		if (strcasecmp(value, no[i]) == 0) {
			set_field(l->cfg, d, false);
			return;
		}
	}
	key_error(l, d->key, "not yes or no: '%s'", value);
}

static void
set_octal_mode(struct load *l, const struct key_def *d, const char *value)
{
	unsigned long n;
	char *end;

	errno = 0;
	n = strtoul(value, &end, 8);
	if (value[0] < '0' || value[0] > '7' || *end != '\0' || errno != 0)
		key_error(l, d->key, "not an octal mode: '%s'", value);
	else if (n > d->max)
		key_error(l, d->key, "%s is out of range (0 to %#llo)", value,
			  (unsigned long long)d->max);
	else
		set_field(l->cfg, d, n);
}

_Static_assert(sizeof(uid_t) == sizeof(unsigned) && sizeof(gid_t) == sizeof(unsigned) &&
	       (uid_t)-1 > 0 && (gid_t)-1 > 0, "ids are unsigned int");

/*
 * A user, or with group a group (name or number), into *out: 0, or -1
 * after an error.  The buffer grows while the entry does not fit: a group
 * of a directory service may have thousands of members.
 */
static int
lookup_id(struct load *l, enum hm_config_key key, const char *name, bool group, unsigned *out)
{
	const char *what = group ? "group" : "user";
	size_t len = 4096;
	char *buf = NULL, *b;
	uint64_t n;
	int rc = parse_uint64(name, &n);

	if (rc != -EINVAL) {
		/* (uid_t)-1 is chown's "unchanged" and nobody's id */
		if (rc < 0 || n >= (unsigned)-1) {
			key_error(l, key, "%cid %s is out of range", what[0], name);
			return -1;
		}
		*out = (unsigned)n;
		return 0;
	}
	for (;;) {
		struct passwd pw, *pres = NULL;
		struct group gr, *gres = NULL;

		b = realloc(buf, len);
		if (b == NULL) {
			free(buf);
			l->nomem = true;
			return -1;
		}
		buf = b;
		rc = group ? getgrnam_r(name, &gr, buf, len, &gres) :
			     getpwnam_r(name, &pw, buf, len, &pres);
		if (gres != NULL || pres != NULL) {
			*out = gres != NULL ? gres->gr_gid : pres->pw_uid;
			free(buf);
			return 0;
		}
		if (rc != ERANGE || len >= (16u << 20))
			break;
		len *= 4;
	}
	free(buf);
	if (rc != 0 && rc != ENOENT && rc != ESRCH)
		key_error(l, key, "cannot look up %s '%s': %s", what, name, strerror(rc));
	else
		key_error(l, key, "unknown %s '%s'", what, name);
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

		rc = lookup_id(l, d->key, tok, groups, &id);
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

static void
set_uid_list(struct load *l, const struct key_def *d, const char *value)
{
	set_id_list(l, d, value, false);
}

static void
set_gid_list(struct load *l, const struct key_def *d, const char *value)
{
	set_id_list(l, d, value, true);
}

static void
text_id_list(const struct hm_config *cfg, const struct key_def *d, char *buf, size_t len)
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

static void
set_root(struct load *l, const struct key_def *d, const char *value)
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
		key_error(l, d->key, "not an absolute path: '%s'", value);
	else if (rc < 0)
		key_error(l, d->key, "%s: %s", value, strerror(-rc));
	else
		cfg->root_sources[cfg->roots.n - 1] = l->src;
}

static void
text_root(const struct hm_config *cfg, const struct key_def *d, char *buf, size_t len)
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

static void
set_socket(struct load *l, const struct key_def *d, const char *value)
{
	struct sockaddr_un sa;
	char *copy;

	if (value[0] == '\0') {
		key_error(l, d->key, "empty path");
		return;
	}
	if (strlen(value) >= sizeof sa.sun_path) {
		key_error(l, d->key, "path too long (%zu bytes, at most %zu): '%s'",
			  strlen(value), sizeof sa.sun_path - 1, value);
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

static void
text_socket(const struct hm_config *cfg, const struct key_def *d, char *buf, size_t len)
{
	(void)d;
	snprintf(buf, len, "%s", cfg->socket_path != NULL ? cfg->socket_path : "");
}

static void
set_socket_group(struct load *l, const struct key_def *d, const char *value)
{
	if (value[0] == '\0')
		key_error(l, d->key, "empty group");
	else
		lookup_id(l, d->key, value, true, &l->cfg->socket_group);
}

static void
text_socket_group(const struct hm_config *cfg, const struct key_def *d, char *buf, size_t len)
{
	(void)d;
	if (cfg->socket_group != (gid_t)-1)
		snprintf(buf, len, "%u", (unsigned)cfg->socket_group);
}

/* --- the table ------------------------------------------------------------- */

/* The value names of enum keys, indexed by value; NULL: no such value. */
static const char *const backend_names[] = { "auto", "mmap", "pread" };
static const char *const warm_names[] = { "none", "willneed", "populate" };
static const char *const network_fs_names[] = { "pread", "mmap" };
static const char *const log_level_names[] = {
	[LOG_ERR] = "error", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

#define FIELD(f)	.offset = offsetof(struct hm_config, f), \
			.size = sizeof(((struct hm_config *)0)->f)
#define CHOICES(names)	.choices = (names), .nchoices = sizeof(names) / sizeof((names)[0])
#define SPECIAL(s, t)	.type = KEY_SPECIAL, .set = (s), .text = (t)

/* Enums are stored as the unsigned int they are the size of. */
_Static_assert(sizeof(enum storage_policy) == sizeof(unsigned) &&
	       sizeof(enum hm_warm) == sizeof(unsigned) &&
	       sizeof(enum hm_network_fs) == sizeof(unsigned) && sizeof(int) == sizeof(unsigned) &&
	       sizeof(bool) == 1, "fields are 1, 4 or 8 bytes");

/*
 * Every key, in the order of --help (conf_foreach follows enum
 * hm_config_key).  Types, limits and defaults here are the whole of the
 * checking: hotmapd.conf(5) must say the same.
 */
static const struct key_def keys[HM_CONFIG__NKEYS] = {
	{ HM_KEY_SOCKET, "socket", SPECIAL(set_socket, text_socket), FIELD(socket_path),
	  .restart = true, .short_opt = 's', .metavar = "PATH",
	  .help = "listen on PATH (default: $HOTMAP_SOCKET, else\n"
		  "/run/hotmap/hotmapd.sock as root, else\n"
		  "$XDG_RUNTIME_DIR/hotmap/hotmapd.sock)" },
	{ HM_KEY_SOCKET_MODE, "socket-mode", KEY_MODE, FIELD(socket_mode), .max = 0777,
	  .def = HM_CONFIG_SOCKET_MODE_DEFAULT, .restart = true, .metavar = "MODE",
	  .help = "octal mode of the socket (default 0666)" },
	{ HM_KEY_SOCKET_GROUP, "socket-group", SPECIAL(set_socket_group, text_socket_group),
	  FIELD(socket_group), .def = (gid_t)-1, .restart = true, .metavar = "GROUP",
	  .help = "group of the socket (default: unchanged)" },
	{ HM_KEY_FOREGROUND, "foreground", KEY_BOOL, FIELD(foreground), .restart = true,
	  .short_opt = 'f', .help = "stay in the foreground (as under systemd)" },
	{ HM_KEY_BACKEND, "backend", KEY_ENUM, FIELD(policy), CHOICES(backend_names),
	  .def = STORAGE_POLICY_AUTO, .short_opt = 'b', .metavar = "NAME",
	  .help = "auto (default), mmap (required) or pread" },
	{ HM_KEY_ROOT, "root", SPECIAL(set_root, text_root), FIELD(roots), .short_opt = 'r',
	  .metavar = "DIR", .help = "allow open by path beneath DIR (repeatable)" },
	{ HM_KEY_CROSS_MOUNTS, "cross-mounts", KEY_BOOL, FIELD(cross_mounts), .def = true,
	  .metavar = "yes|no", .help = "whether open by path may cross a mount\n"
				       "point beneath a root (default yes)" },
	{ HM_KEY_ALLOW_UID, "allow-uid", SPECIAL(set_uid_list, text_id_list), FIELD(allow_uid),
	  .metavar = "USERS, --allow-gid GROUPS",
	  .help = "\nwho may connect (default: anyone who can reach\nthe socket)" },
	{ HM_KEY_ALLOW_GID, "allow-gid", SPECIAL(set_gid_list, text_id_list), FIELD(allow_gid),
	  .metavar = "GROUPS" },
	{ HM_KEY_ADMIN_UID, "admin-uid", SPECIAL(set_uid_list, text_id_list), FIELD(admin_uid),
	  .metavar = "USERS, --admin-gid GROUPS",
	  .help = "\nwho may administer, besides root and hotmapd's user" },
	{ HM_KEY_ADMIN_GID, "admin-gid", SPECIAL(set_gid_list, text_id_list), FIELD(admin_gid),
	  .metavar = "GROUPS" },
	{ HM_KEY_MAX_MAPPED_BYTES, "max-mapped-bytes", KEY_SIZE, FIELD(max_mapped_bytes),
	  .max = UINT64_MAX, .metavar = "SIZE", .help = "mapped bytes kept (default 0: no limit)" },
	{ HM_KEY_MAX_OPEN_FILES, "max-open-files", KEY_NUMBER, FIELD(max_open_files),
	  .max = INT_MAX, .def = HM_CONFIG_MAX_OPEN_FILES_DEFAULT, .metavar = "N",
	  .help = "files kept open (default 16384; 0: no limit)" },
	{ HM_KEY_IDLE_UNMAP, "idle-unmap", KEY_NUMBER, FIELD(idle_unmap_s), .max = SECONDS_MAX,
	  .metavar = "S", .help = "unmap files unused for S seconds (default 0: never)" },
	{ HM_KEY_WARM, "warm", KEY_ENUM, FIELD(warm), CHOICES(warm_names), .def = HM_WARM_NONE,
	  .metavar = "WHAT", .help = "none (default), willneed or populate: what to do\n"
				     "with a file's data when it is first cached" },
	{ HM_KEY_NETWORK_FS, "network-fs", KEY_ENUM, FIELD(network_fs), CHOICES(network_fs_names),
	  .def = HM_NETWORK_FS_PREAD, .metavar = "HOW",
	  .help = "pread (default) or mmap: network and FUSE files" },
	{ HM_KEY_NETWORK_FS_CHUNK, "network-fs-chunk", KEY_SIZE, FIELD(network_fs_chunk),
	  .min = 64 * KIB, .max = GIB, .def = HM_CONFIG_NETWORK_FS_CHUNK_DEFAULT,
	  .metavar = "SIZE", .help = "their pread chunk (default 16M)" },
	{ HM_KEY_MAX_CONNECTIONS_PER_UID, "max-connections-per-uid", KEY_NUMBER, FIELD(max_per_uid),
	  .min = 1, .max = 1000000, .def = HM_CONFIG_MAX_PER_UID_DEFAULT, .short_opt = 'c',
	  .metavar = "N", .help = "\nconnections one uid may hold (default 4096)" },
	{ HM_KEY_MAX_INFLIGHT, "max-inflight", KEY_NUMBER, FIELD(max_inflight), .min = 1,
	  .max = 65536, .def = HM_CONFIG_MAX_INFLIGHT_DEFAULT, .metavar = "N",
	  .help = "requests in flight per client (default 32)" },
	{ HM_KEY_MAX_INFLIGHT_BYTES, "max-inflight-bytes", KEY_SIZE, FIELD(max_inflight_bytes),
	  .min = 64 * KIB, .max = TIB, .def = HM_CONFIG_MAX_INFLIGHT_BYTES_DEFAULT,
	  .metavar = "SIZE", .help = "bytes in flight per client (default 64M)" },
	{ HM_KEY_IDLE_TIMEOUT, "idle-timeout", KEY_NUMBER, FIELD(idle_timeout_s),
	  .max = SECONDS_MAX, .short_opt = 'i', .metavar = "S",
	  .help = "close connections idle (no open file) for S seconds (default 0: never)" },
	{ HM_KEY_WORKERS, "workers", KEY_NUMBER, FIELD(workers), .min = 1, .max = 256,
	  .has_auto = true, .auto_value = 0, .def = 0, .restart = true, .short_opt = 'w',
	  .metavar = "N", .help = "threads for reads that may wait for the disk\n"
				  "(default: one per core, 2 to 8)" },
	{ HM_KEY_POLL_US, "poll-us", KEY_NUMBER, FIELD(poll_us), .max = HM_CONFIG_POLL_US_MAX,
	  .has_auto = true, .auto_value = (unsigned)-1, .def = (unsigned)-1, .metavar = "US",
	  .help = "poll clients' request rings for US microseconds\n"
		  "before sleeping (default auto: 50 with 4 cores\n"
		  "or more, else 0)" },
	{ HM_KEY_LOG_LEVEL, "log-level", KEY_ENUM, FIELD(log_level), CHOICES(log_level_names),
	  .def = LOG_NOTICE, .metavar = "LEVEL",
	  .help = "error, warning, notice (default), info or debug" },
};

static const struct key_def *
key_def(int key)
{
	size_t i;

	/* keys[] is in --help's order, not the enum's */
	for (i = 0; i < HM_CONFIG__NKEYS; i++)
		if (keys[i].key == (enum hm_config_key)key)
			break;
	return &keys[i < HM_CONFIG__NKEYS ? i : 0];
}

/* Checks value and sets key from it; the source is l->src. */
static void
set_value(struct load *l, enum hm_config_key key, const char *value)
{
	static void (*const set[])(struct load *, const struct key_def *, const char *) = {
		[KEY_NUMBER] = set_number, [KEY_SIZE] = set_size, [KEY_BOOL] = set_bool,
		[KEY_ENUM] = set_enum, [KEY_MODE] = set_octal_mode,
	};
	const struct key_def *d = key_def(key);
	size_t errors = l->errs->n;

	if (d->type == KEY_SPECIAL)
		d->set(l, d, value);
	else
		set[d->type](l, d, value);
	if (l->errs->n == errors)
		l->cfg->source[key] = l->src;
}

/* --- the file --------------------------------------------------------------- */

static void
syntax_error(struct load *l, const char *expected)
{
	file_error(l, l->line, "syntax error: %s", expected);
	if (l->first_syntax_error == 0)
		l->first_syntax_error = l->line;
}

/* The line inih had last is done: a line that should have been a key but
 * never reached the handler is one inih could not parse. */
static void
reader_finish_line(struct load *l)
{
	if (l->candidate && !l->handled)
		syntax_error(l, "expected 'key = value'");
	l->candidate = false;
}

/* fgets for inih: one whole line at a time, without its indentation. */
static char *
reader(char *str, int num, void *stream)
{
	struct load *l = stream;
	size_t len;
	char *p;

	reader_finish_line(l);
	errno = 0;
	if (getline(&l->buf, &l->cap, l->f) < 0) {
		if (ferror(l->f))
			file_error(l, 0, "%s: %s", l->cfg->path, strerror(errno != 0 ? errno : EIO));
		return NULL;
	}
	l->line++;
	l->handled = false;
	p = l->buf;
	if (l->line == 1 && strncmp(p, "\xEF\xBB\xBF", 3) == 0)
		p += 3;		/* a UTF-8 byte order mark */
	p += strspn(p, " \t");
	l->candidate = *p != '\0' && *p != '\r' && *p != '\n' && *p != ';' && *p != '#' &&
		       *p != '[';
	if (*p == '[' && strchr(p, ']') == NULL)
		syntax_error(l, "expected '[section]'");	/* inih keeps the section it had */
	else if (*p == '[')
		l->section_line = l->line;
	/* Always with its newline: inih takes a line that fills its buffer
	 * without one for a long line and reads on to drop the rest. */
	len = strcspn(p, "\n");
	if (len + 2 > (size_t)num) {
		file_error(l, l->line, "line too long (at most %d bytes)", num - 2);
		l->candidate = false;
		len = 0;
	}
	memcpy(str, p, len);
	str[len] = '\n';
	str[len + 1] = '\0';
	return str;
}

static int
handler(void *user, const char *section, const char *name, const char *value)
{
	struct load *l = user;
	int key;

	l->handled = true;
	if (name == NULL)
		return 1;
	if (section != NULL && section[0] != '\0' && strcmp(section, "hotmapd") != 0) {
		/* Once per section, and none of its keys: they are not ours. */
		if (l->section_reported != l->section_line) {
			l->section_reported = l->section_line;
			file_error(l, l->section_line,
				   "unknown section [%s] (keys go before any section or in [hotmapd])",
				   section);
		}
		return 1;
	}
	key = conf_key_lookup(name);
	if (key < 0) {
		file_error(l, l->line, "unknown key '%s'", name);
		return 1;
	}
	l->src = (struct hm_config_source){ HM_ORIGIN_FILE, l->line };
	set_value(l, (enum hm_config_key)key, value != NULL ? value : "");
	return 1;
}

static void
load_file(struct load *l, const char *path, bool given)
{
	int rc;

	l->f = fopen(path, "re");
	if (l->f == NULL) {
		int e = errno;

		if (e == ENOENT && !given)
			return;		/* no file: the defaults serve */
		l->cfg->path = strdup(path);
		if (l->cfg->path == NULL)
			l->nomem = true;
		else
			file_error(l, 0, "%s: %s", path, strerror(e));
		return;
	}
	l->cfg->path = strdup(path);
	if (l->cfg->path == NULL) {
		l->nomem = true;
		fclose(l->f);
		return;
	}
	rc = ini_parse_stream(reader, l, handler, l);
	/* inih reports its first error only; every line it could not parse
	 * is found by the reader, so this is one that was missed. */
	if (rc > 0 && (unsigned)rc != l->first_syntax_error)
		file_error(l, (unsigned)rc, "syntax error");
	else if (rc < 0)
		l->nomem = true;
	fclose(l->f);
	l->f = NULL;
	free(l->buf);
	l->buf = NULL;
}

/* --- loading ------------------------------------------------------------- */

static int
set_defaults(struct hm_config *cfg)
{
	char sock[PATH_MAX];
	size_t i;

	memset(cfg, 0, sizeof *cfg);
	for (i = 0; i < HM_CONFIG__NKEYS; i++)
		set_field(cfg, &keys[i], keys[i].def);
	/* the one default that is not a constant */
	if (frame_default_socket(sock, sizeof sock) == 0) {
		cfg->socket_path = strdup(sock);
		if (cfg->socket_path == NULL)
			return -ENOMEM;
	}
	return 0;
}

int
conf_load(struct hm_config *cfg, const struct hm_config_args *args,
	  struct hm_config_errors *errs)
{
	struct load l = { .cfg = cfg, .errs = errs };
	size_t errors = errs->n, i;

	if (set_defaults(cfg) < 0) {
		conf_clear(cfg);
		return -ENOMEM;
	}
	load_file(&l, args->path != NULL ? args->path : HM_CONFIG_DEFAULT_PATH,
		  args->path != NULL);

	l.src = (struct hm_config_source){ HM_ORIGIN_COMMAND_LINE, 0 };
	for (i = 0; i < args->n && !l.nomem; i++)
		set_value(&l, args->v[i].key, args->v[i].value);
	if (args->verbose > 0) {
		cfg->log_level += (int)args->verbose;
		if (cfg->log_level > LOG_DEBUG)
			cfg->log_level = LOG_DEBUG;
		cfg->source[HM_KEY_LOG_LEVEL] = l.src;
	}
	if (cfg->socket_path == NULL && !l.nomem)
		file_error(&l, 0, "no socket path: set socket in the file, give --socket, "
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

const char *
conf_value_text(const struct hm_config *cfg, enum hm_config_key key, char *buf, size_t len)
{
	const struct key_def *d = key_def(key);
	uint64_t v = get_field(cfg, d);

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

/* A key's lines of --help: the option, then its text from column 25 on. */
static void
usage_key(FILE *f, const struct key_def *d)
{
	const char *p = d->help, *nl;
	int col;

	if (d->short_opt != 0)
		col = fprintf(f, "  -%c, --%s", d->short_opt, d->name);
	else
		col = fprintf(f, "      --%s", d->name);
	if (d->metavar != NULL)
		col += fprintf(f, " %s", d->metavar);
	if (*p == '\n')
		fprintf(f, "\n%25s", "");	/* the option fills its line */
	else
		fprintf(f, "%*s", col < 25 ? 25 - col : 2, "");
	p += *p == '\n';
	while ((nl = strchr(p, '\n')) != NULL) {
		fprintf(f, "%.*s\n%25s", (int)(nl - p), p, "");
		p = nl + 1;
	}
	fprintf(f, "%s\n", p);
}

void
conf_usage(FILE *f)
{
	size_t i;

	for (i = 0; i < HM_CONFIG__NKEYS; i++)
		if (keys[i].help != NULL)
			usage_key(f, &keys[i]);
}

int
conf_key_short(enum hm_config_key key)
{
	return (unsigned)key < HM_CONFIG__NKEYS ? key_def(key)->short_opt : 0;
}

bool
conf_key_is_flag(enum hm_config_key key)
{
	return (unsigned)key < HM_CONFIG__NKEYS && key_def(key)->metavar == NULL;
}

void
conf_key_field(enum hm_config_key key, size_t *offset, size_t *size)
{
	*offset = key_def(key)->offset;
	*size = key_def(key)->size;
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
				cb(key_def(k)->name, cfg->roots.v[i].given,
				   conf_source_text(cfg, cfg->root_sources[i], source,
						      sizeof source), arg);
			continue;
		}
		cb(key_def(k)->name, conf_value_text(cfg, (enum hm_config_key)k, value, sizeof value),
		   conf_source_text(cfg, cfg->source[k], source, sizeof source), arg);
	}
}
