/* SPDX-License-Identifier: MIT */
/*
 * conf_priv.h - what the rooms of the configuration share, and nothing
 * else includes.  They call one another in one direction only:
 *
 *   conf.c        the file (its own parser), the command line, loading, conf_foreach
 *   conf_keys.c   the key table (keys[]), its lookups, defaults and --help
 *   conf_value.c  the value types: checking, storing and showing a value
 *   conf_error.c  the errors of a load, each naming its file and line
 *
 * Each calls only rooms below it in this list, never one above.
 *
 * What it must not do: grow into a second public header (conf.h is the
 * contract for the rest of the daemon).
 */
#ifndef HOTMAP_DAEMON_CONF_PRIV_H
#define HOTMAP_DAEMON_CONF_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "daemon/config/conf.h"

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
	uint64_t min, max;		/* KEY_NUMBER, KEY_SIZE; KEY_MODE: max only */
	uint64_t def;			/* the default, stored as conf_set_field does */
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

/* One load in progress. */
struct load {
	struct hm_config *cfg;
	struct hm_config_errors *errs;
	struct hm_config_source src;	/* of the value being set */
	bool replaced[HM_CONFIG__NKEYS];	/* repeatable key given on the command line */
	bool nomem;

	/* the file's parser (conf.c) */
	FILE *f;
	char *buf;
	size_t cap;
	unsigned line;			/* of the line being parsed */
	bool section_ok;		/* keys here are ours: none or [hotmapd] */
	char section[64];		/* the last [section]'s name, for its error */
	unsigned section_line;		/* of the last [section] */
	bool section_reported;		/* its keys were reported as not ours */
};

/* The longest line of hotmapd.conf, not counting its end: room for a
 * root of PATH_MAX bytes. */
#define CONF_LINE_MAX	8192u

/* The row of key (conf_keys.c); row 0 for a key out of range. */
const struct key_def *conf_key_def(int key);
/* Every field at its default, and the default socket path.  0 or -ENOMEM. */
int conf_set_defaults(struct hm_config *cfg);

/* conf_value.c: checks value and sets d's field from it; the source is
 * l->src.  Errors go to l. */
void conf_set_value(struct load *l, const struct key_def *d, const char *value);
/* Sets the field of d in cfg to the integer v. */
void conf_set_field(struct hm_config *cfg, const struct key_def *d, uint64_t v);
/* d's value in cfg as hotmapd.conf spells it. */
const char *conf_value_format(const struct hm_config *cfg, const struct key_def *d, char *buf,
			      size_t len);
/* The value types that no type covers: KEY_SPECIAL rows of keys[]. */
void conf_set_socket(struct load *l, const struct key_def *d, const char *value);
void conf_text_socket(const struct hm_config *cfg, const struct key_def *d, char *buf, size_t len);
void conf_set_socket_group(struct load *l, const struct key_def *d, const char *value);
void conf_text_socket_group(const struct hm_config *cfg, const struct key_def *d, char *buf,
			    size_t len);
/* An absolute path (log-file, pid-file) in a char * field; "" unsets. */
void conf_set_path(struct load *l, const struct key_def *d, const char *value);
void conf_text_path(const struct hm_config *cfg, const struct key_def *d, char *buf, size_t len);
/* One user (user) or group (group) into a uid_t or gid_t field. */
void conf_set_user(struct load *l, const struct key_def *d, const char *value);
void conf_set_group(struct load *l, const struct key_def *d, const char *value);
void conf_text_id(const struct hm_config *cfg, const struct key_def *d, char *buf, size_t len);
void conf_set_root(struct load *l, const struct key_def *d, const char *value);
void conf_text_root(const struct hm_config *cfg, const struct key_def *d, char *buf, size_t len);
void conf_set_uid_list(struct load *l, const struct key_def *d, const char *value);
void conf_set_gid_list(struct load *l, const struct key_def *d, const char *value);
void conf_text_id_list(const struct hm_config *cfg, const struct key_def *d, char *buf,
		       size_t len);

/* conf_error.c: an error about the file at line (0: about the whole
 * file), and one about d's value ("FILE:LINE: key: ..." or "--key: ...").
 * Out of memory sets l->nomem instead. */
void conf_file_error(struct load *l, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void conf_key_error(struct load *l, const struct key_def *d, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
