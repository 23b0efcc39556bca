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

#define SECONDS_MAX	(86400u * 365u)
#define KIB		1024ull
#define MIB		(1024ull * KIB)
#define GIB		(1024ull * MIB)
#define TIB		(1024ull * GIB)

static const struct key_def {
	const char *name;
	bool restart;		/* a reload keeps the old value */
} keys[HM_CONFIG__NKEYS] = {
	[HM_KEY_SOCKET] = { "socket", true },
	[HM_KEY_SOCKET_MODE] = { "socket-mode", true },
	[HM_KEY_SOCKET_GROUP] = { "socket-group", true },
	[HM_KEY_ROOT] = { "root", false },
	[HM_KEY_CROSS_MOUNTS] = { "cross-mounts", false },
	[HM_KEY_ALLOW_UID] = { "allow-uid", false },
	[HM_KEY_ALLOW_GID] = { "allow-gid", false },
	[HM_KEY_ADMIN_UID] = { "admin-uid", false },
	[HM_KEY_ADMIN_GID] = { "admin-gid", false },
	[HM_KEY_BACKEND] = { "backend", false },
	[HM_KEY_MAX_MAPPED_BYTES] = { "max-mapped-bytes", false },
	[HM_KEY_MAX_OPEN_FILES] = { "max-open-files", false },
	[HM_KEY_IDLE_UNMAP] = { "idle-unmap", false },
	[HM_KEY_WARM] = { "warm", false },
	[HM_KEY_NETWORK_FS] = { "network-fs", false },
	[HM_KEY_NETWORK_FS_CHUNK] = { "network-fs-chunk", false },
	[HM_KEY_MAX_CONNECTIONS_PER_UID] = { "max-connections-per-uid", false },
	[HM_KEY_MAX_INFLIGHT] = { "max-inflight", false },
	[HM_KEY_MAX_INFLIGHT_BYTES] = { "max-inflight-bytes", false },
	[HM_KEY_IDLE_TIMEOUT] = { "idle-timeout", false },
	[HM_KEY_WORKERS] = { "workers", true },
	[HM_KEY_POLL_US] = { "poll-us", false },
	[HM_KEY_LOG_LEVEL] = { "log-level", false },
	[HM_KEY_FOREGROUND] = { "foreground", true },
};

/* Names of enum values, indexed by value; NULL: no such value. */
/* The value names of enum keys, NULL-terminated, in enum order. */
#define NAMES_N(names)	(sizeof(names) / sizeof((names)[0]) - 1)
static const char *const backend_names[] = { "auto", "mmap", "pread", NULL };
static const char *const warm_names[] = { "none", "willneed", "populate", NULL };
static const char *const network_fs_names[] = { "pread", "mmap", NULL };
static const char *const log_level_names[] = {
	[LOG_ERR] = "error", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info", [LOG_DEBUG] = "debug", [LOG_DEBUG + 1] = NULL,
};

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
		if (strcmp(keys[k].name, name) == 0)
			return k;
	return -1;
}

const char *
conf_key_name(enum hm_config_key key)
{
	return (unsigned)key < HM_CONFIG__NKEYS ? keys[key].name : "?";
}

bool
conf_key_needs_restart(enum hm_config_key key)
{
	return (unsigned)key < HM_CONFIG__NKEYS && keys[key].restart;
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
			n = asprintf(&s, "%s:%u: %s: %s", l->cfg->path, l->src.line, keys[key].name, msg);
		else
			n = asprintf(&s, "--%s: %s", keys[key].name, msg);
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

int
conf_parse_size(const char *s, uint64_t *out)
{
	uint64_t n = 0, mult = 1;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	while (isdigit((unsigned char)*p))
		p++;
	switch (*p) {
	case '\0':
		break;
	case 'k': case 'K':
		mult = KIB;
		break;
	case 'm': case 'M':
		mult = MIB;
		break;
	case 'g': case 'G':
		mult = GIB;
		break;
	case 't': case 'T':
		mult = TIB;
		break;
	default:
		return -EINVAL;
	}
	if (*p != '\0' && p[1] != '\0')
		return -EINVAL;
	{
		/* the digits alone, for parse_uint64 */
		char digits[32];
		size_t len = (size_t)(p - s);
		int rc;

		if (len >= sizeof digits)
			return -ERANGE;
		memcpy(digits, s, len);
		digits[len] = '\0';
		rc = parse_uint64(digits, &n);
		if (rc < 0)
			return rc;
	}
	if (n > UINT64_MAX / mult)
		return -ERANGE;
	*out = n * mult;
	return 0;
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

static void
set_number(struct load *l, enum hm_config_key key, const char *value, uint64_t min,
	   uint64_t max, unsigned *out)
{
	uint64_t n;
	int rc = parse_uint64(value, &n);

	if (rc == -EINVAL)
		key_error(l, key, "not a number: '%s'", value);
	else if (rc < 0 || n < min || n > max)
		key_error(l, key, "%s is out of range (%llu to %llu)", value,
			  (unsigned long long)min, (unsigned long long)max);
	else
		*out = (unsigned)n;
}

static void
set_size(struct load *l, enum hm_config_key key, const char *value, uint64_t min, uint64_t max,
	 uint64_t *out)
{
	char a[32], b[32];
	uint64_t n;
	int rc = conf_parse_size(value, &n);

	if (rc == -EINVAL)
		key_error(l, key, "not a size: '%s' (a number with an optional K, M, G or T)", value);
	else if (rc < 0)
		key_error(l, key, "too large: '%s'", value);
	else if (n < min || n > max)
		key_error(l, key, "%s is out of range (%s to %s)", value,
			  conf_format_size(min, a, sizeof a), conf_format_size(max, b, sizeof b));
	else
		*out = n;
}

/* One of names (indexed by value) into *out. */
static void
set_enum(struct load *l, enum hm_config_key key, const char *value, const char *const *names,
	 size_t nnames, int *out)
{
	char list[128] = "";
	size_t i;

	for (i = 0; i < nnames; i++) {
		if (names[i] != NULL && strcmp(names[i], value) == 0) {
			*out = (int)i;
			return;
		}
	}
	for (i = 0; i < nnames; i++)
		if (names[i] != NULL)
			snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
				 list[0] != '\0' ? ", " : "", names[i]);
	key_error(l, key, "unknown value '%s' (%s)", value, list);
}

static void
set_bool(struct load *l, enum hm_config_key key, const char *value, bool *out)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };
	size_t i;

	for (i = 0; i < sizeof yes / sizeof yes[0]; i++) {
		if (strcasecmp(value, yes[i]) == 0) {
			*out = true;
			return;
		}
		if (strcasecmp(value, no[i]) == 0) {
			*out = false;
			return;
		}
	}
	key_error(l, key, "not yes or no: '%s'", value);
}

static void
set_octal_mode(struct load *l, enum hm_config_key key, const char *value, unsigned *out)
{
	unsigned long n;
	char *end;

	errno = 0;
	n = strtoul(value, &end, 8);
	if (value[0] < '0' || value[0] > '7' || *end != '\0' || errno != 0)
		key_error(l, key, "not an octal mode: '%s'", value);
	else if (n > 0777)
		key_error(l, key, "%s is out of range (0 to 0777)", value);
	else
		*out = (unsigned)n;
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
 * list (v, n) of ids (uid_t and gid_t are both unsigned int here).  A
 * repeated key adds to the list; the command line replaces the file's.
 * Nothing is added when any name is bad.
 */
static void
set_id_list(struct load *l, enum hm_config_key key, const char *value, bool groups,
	    unsigned **v, size_t *n)
{
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

		rc = lookup_id(l, key, tok, groups, &id);
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
	if (l->src.origin == HM_ORIGIN_COMMAND_LINE && !l->replaced[key]) {
		l->replaced[key] = true;
		free(*v);
		*v = NULL;
		*n = 0;
	}
	if (nids == 0) {
		free(ids);
		return;
	}
	nv = realloc(*v, (*n + nids) * sizeof **v);
	if (nv == NULL) {
		free(ids);
		l->nomem = true;
		return;
	}
	memcpy(nv + *n, ids, nids * sizeof *ids);
	*v = nv;
	*n += nids;
	free(ids);
}

static void
set_root(struct load *l, const char *value)
{
	struct hm_config *cfg = l->cfg;
	struct hm_config_source *s;
	int rc;

	if (l->src.origin == HM_ORIGIN_COMMAND_LINE && !l->replaced[HM_KEY_ROOT]) {
		l->replaced[HM_KEY_ROOT] = true;
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
		key_error(l, HM_KEY_ROOT, "not an absolute path: '%s'", value);
	else if (rc < 0)
		key_error(l, HM_KEY_ROOT, "%s: %s", value, strerror(-rc));
	else
		cfg->root_sources[cfg->roots.n - 1] = l->src;
}

static void
set_socket(struct load *l, const char *value)
{
	struct sockaddr_un sa;
	char *copy;

	if (value[0] == '\0') {
		key_error(l, HM_KEY_SOCKET, "empty path");
		return;
	}
	if (strlen(value) >= sizeof sa.sun_path) {
		key_error(l, HM_KEY_SOCKET, "path too long (%zu bytes, at most %zu): '%s'",
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

/* Checks value and sets key from it; the source is l->src. */
static void
set_value(struct load *l, enum hm_config_key key, const char *value)
{
	struct hm_config *cfg = l->cfg;
	size_t errors = l->errs->n;
	int e;

	switch (key) {
	case HM_KEY_SOCKET:
		set_socket(l, value);
		break;
	case HM_KEY_SOCKET_MODE:
		set_octal_mode(l, key, value, &cfg->socket_mode);
		break;
	case HM_KEY_SOCKET_GROUP:
		if (value[0] == '\0')
			key_error(l, key, "empty group");
		else
			lookup_id(l, key, value, true, &cfg->socket_group);
		break;
	case HM_KEY_ROOT:
		set_root(l, value);
		break;
	case HM_KEY_CROSS_MOUNTS:
		set_bool(l, key, value, &cfg->cross_mounts);
		break;
	case HM_KEY_ALLOW_UID:
		set_id_list(l, key, value, false, &cfg->allow_uid.v, &cfg->allow_uid.n);
		break;
	case HM_KEY_ALLOW_GID:
		set_id_list(l, key, value, true, &cfg->allow_gid.v, &cfg->allow_gid.n);
		break;
	case HM_KEY_ADMIN_UID:
		set_id_list(l, key, value, false, &cfg->admin_uid.v, &cfg->admin_uid.n);
		break;
	case HM_KEY_ADMIN_GID:
		set_id_list(l, key, value, true, &cfg->admin_gid.v, &cfg->admin_gid.n);
		break;
	case HM_KEY_BACKEND:
		e = (int)cfg->policy;
		set_enum(l, key, value, backend_names, NAMES_N(backend_names), &e);
		cfg->policy = (enum storage_policy)e;
		break;
	case HM_KEY_MAX_MAPPED_BYTES:
		set_size(l, key, value, 0, UINT64_MAX, &cfg->max_mapped_bytes);
		break;
	case HM_KEY_MAX_OPEN_FILES:
		set_number(l, key, value, 0, INT_MAX, &cfg->max_open_files);
		break;
	case HM_KEY_IDLE_UNMAP:
		set_number(l, key, value, 0, SECONDS_MAX, &cfg->idle_unmap_s);
		break;
	case HM_KEY_WARM:
		e = (int)cfg->warm;
		set_enum(l, key, value, warm_names, NAMES_N(warm_names), &e);
		cfg->warm = (enum hm_warm)e;
		break;
	case HM_KEY_NETWORK_FS:
		e = (int)cfg->network_fs;
		set_enum(l, key, value, network_fs_names, NAMES_N(network_fs_names), &e);
		cfg->network_fs = (enum hm_network_fs)e;
		break;
	case HM_KEY_NETWORK_FS_CHUNK:
		set_size(l, key, value, 64 * KIB, GIB, &cfg->network_fs_chunk);
		break;
	case HM_KEY_MAX_CONNECTIONS_PER_UID:
		set_number(l, key, value, 1, 1000000, &cfg->max_per_uid);
		break;
	case HM_KEY_MAX_INFLIGHT:
		set_number(l, key, value, 1, 65536, &cfg->max_inflight);
		break;
	case HM_KEY_MAX_INFLIGHT_BYTES:
		set_size(l, key, value, 64 * KIB, TIB, &cfg->max_inflight_bytes);
		break;
	case HM_KEY_IDLE_TIMEOUT:
		set_number(l, key, value, 0, SECONDS_MAX, &cfg->idle_timeout_s);
		break;
	case HM_KEY_WORKERS:
		if (strcmp(value, "auto") == 0)
			cfg->workers = 0;
		else
			set_number(l, key, value, 1, 256, &cfg->workers);
		break;
	case HM_KEY_POLL_US:
		if (strcmp(value, "auto") == 0) {
			cfg->poll_us = -1;
		} else {
			unsigned us = 0;

			set_number(l, key, value, 0, HM_CONFIG_POLL_US_MAX, &us);
			cfg->poll_us = (int)us;
		}
		break;
	case HM_KEY_LOG_LEVEL:
		set_enum(l, key, value, log_level_names, NAMES_N(log_level_names), &cfg->log_level);
		break;
	case HM_KEY_FOREGROUND:
		set_bool(l, key, value, &cfg->foreground);
		break;
	case HM_CONFIG__NKEYS:
		break;
	}
	if (l->errs->n == errors)
		cfg->source[key] = l->src;
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

	memset(cfg, 0, sizeof *cfg);
	if (frame_default_socket(sock, sizeof sock) == 0) {
		cfg->socket_path = strdup(sock);
		if (cfg->socket_path == NULL)
			return -ENOMEM;
	}
	cfg->socket_mode = HM_CONFIG_SOCKET_MODE_DEFAULT;
	cfg->socket_group = (gid_t)-1;
	cfg->policy = STORAGE_POLICY_AUTO;
	cfg->cross_mounts = true;
	cfg->max_open_files = HM_CONFIG_MAX_OPEN_FILES_DEFAULT;
	cfg->warm = HM_WARM_NONE;
	cfg->network_fs = HM_NETWORK_FS_PREAD;
	cfg->network_fs_chunk = HM_CONFIG_NETWORK_FS_CHUNK_DEFAULT;
	cfg->max_per_uid = HM_CONFIG_MAX_PER_UID_DEFAULT;
	cfg->max_inflight = HM_CONFIG_MAX_INFLIGHT_DEFAULT;
	cfg->max_inflight_bytes = HM_CONFIG_MAX_INFLIGHT_BYTES_DEFAULT;
	cfg->poll_us = -1;
	cfg->log_level = LOG_NOTICE;
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

static void
ids_text(const unsigned *v, size_t n, char *buf, size_t len)
{
	size_t i, used = 0;

	buf[0] = '\0';
	for (i = 0; i < n && used < len; i++) {
		int w = snprintf(buf + used, len - used, "%s%u", i > 0 ? " " : "", v[i]);

		if (w < 0)
			break;
		used += (size_t)w;
	}
}

const char *
conf_value_text(const struct hm_config *cfg, enum hm_config_key key, char *buf, size_t len)
{
	size_t i, used;

	buf[0] = '\0';
	switch (key) {
	case HM_KEY_SOCKET:
		snprintf(buf, len, "%s", cfg->socket_path != NULL ? cfg->socket_path : "");
		break;
	case HM_KEY_SOCKET_MODE:
		snprintf(buf, len, "%04o", cfg->socket_mode);
		break;
	case HM_KEY_SOCKET_GROUP:
		if (cfg->socket_group != (gid_t)-1)
			snprintf(buf, len, "%u", (unsigned)cfg->socket_group);
		break;
	case HM_KEY_ROOT:
		for (i = 0, used = 0; i < cfg->roots.n && used < len; i++) {
			int w = snprintf(buf + used, len - used, "%s%s", i > 0 ? " " : "",
					 cfg->roots.v[i].given);

			if (w < 0)
				break;
			used += (size_t)w;
		}
		break;
	case HM_KEY_ALLOW_UID:
		ids_text(cfg->allow_uid.v, cfg->allow_uid.n, buf, len);
		break;
	case HM_KEY_ALLOW_GID:
		ids_text(cfg->allow_gid.v, cfg->allow_gid.n, buf, len);
		break;
	case HM_KEY_ADMIN_UID:
		ids_text(cfg->admin_uid.v, cfg->admin_uid.n, buf, len);
		break;
	case HM_KEY_ADMIN_GID:
		ids_text(cfg->admin_gid.v, cfg->admin_gid.n, buf, len);
		break;
	case HM_KEY_BACKEND:
		snprintf(buf, len, "%s", (unsigned)cfg->policy < NAMES_N(backend_names) ? backend_names[cfg->policy] : "?");
		break;
	case HM_KEY_MAX_MAPPED_BYTES:
		conf_format_size(cfg->max_mapped_bytes, buf, len);
		break;
	case HM_KEY_MAX_OPEN_FILES:
		snprintf(buf, len, "%u", cfg->max_open_files);
		break;
	case HM_KEY_IDLE_UNMAP:
		snprintf(buf, len, "%u", cfg->idle_unmap_s);
		break;
	case HM_KEY_WARM:
		snprintf(buf, len, "%s", (unsigned)cfg->warm < NAMES_N(warm_names) ? warm_names[cfg->warm] : "?");
		break;
	case HM_KEY_NETWORK_FS:
		snprintf(buf, len, "%s",
			 (unsigned)cfg->network_fs < NAMES_N(network_fs_names) ? network_fs_names[cfg->network_fs] : "?");
		break;
	case HM_KEY_NETWORK_FS_CHUNK:
		conf_format_size(cfg->network_fs_chunk, buf, len);
		break;
	case HM_KEY_MAX_CONNECTIONS_PER_UID:
		snprintf(buf, len, "%u", cfg->max_per_uid);
		break;
	case HM_KEY_MAX_INFLIGHT:
		snprintf(buf, len, "%u", cfg->max_inflight);
		break;
	case HM_KEY_MAX_INFLIGHT_BYTES:
		conf_format_size(cfg->max_inflight_bytes, buf, len);
		break;
	case HM_KEY_IDLE_TIMEOUT:
		snprintf(buf, len, "%u", cfg->idle_timeout_s);
		break;
	case HM_KEY_WORKERS:
		if (cfg->workers == 0)
			snprintf(buf, len, "auto");
		else
			snprintf(buf, len, "%u", cfg->workers);
		break;
	case HM_KEY_POLL_US:
		if (cfg->poll_us < 0)
			snprintf(buf, len, "auto");
		else
			snprintf(buf, len, "%d", cfg->poll_us);
		break;
	case HM_KEY_LOG_LEVEL:
		snprintf(buf, len, "%s", cfg->log_level >= LOG_ERR && cfg->log_level <= LOG_DEBUG ?
			 log_level_names[cfg->log_level] : "?");
		break;
	case HM_KEY_CROSS_MOUNTS:
		snprintf(buf, len, "%s", cfg->cross_mounts ? "yes" : "no");
		break;
	case HM_KEY_FOREGROUND:
		snprintf(buf, len, "%s", cfg->foreground ? "yes" : "no");
		break;
	case HM_CONFIG__NKEYS:
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
				cb(keys[k].name, cfg->roots.v[i].given,
				   conf_source_text(cfg, cfg->root_sources[i], source,
						      sizeof source), arg);
			continue;
		}
		cb(keys[k].name, conf_value_text(cfg, (enum hm_config_key)k, value, sizeof value),
		   conf_source_text(cfg, cfg->source[k], source, sizeof source), arg);
	}
}
