/* SPDX-License-Identifier: MIT */
/*
 * ctl.h - what the parts of hotmapctl share.
 *
 * hotmapctl.c holds the command table and the one parser that reads the
 * command line against it; it connects to the daemon once and hands each
 * handler the client and the parsed command line.  ctl_cmds.c holds the
 * handlers, ctl_top.c the live view, ctl_output.c every output format
 * (human, key=value, JSON, Prometheus) and the one JSON emitter.
 *
 * Handlers never parse options, never connect and never print usage: the
 * table declares what a command takes, and the parser has checked it
 * before a handler runs.
 */
#ifndef HOTMAPCTL_CTL_H
#define HOTMAPCTL_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "client/hotmap.h"
#include "client/hotmap_admin.h"

/* What an option's or a positional argument's text is, checked by the
 * parser before any handler runs (exit status 2 otherwise). */
enum ctl_kind {
	CTL_FLAG,	/* an option without an argument */
	CTL_TEXT,	/* any text */
	CTL_CHOICE,	/* one of choices[]: the value is its index */
	CTL_SIZE,	/* a byte count, as size_parse() reads it (proto/size.h) */
	CTL_SECONDS,	/* seconds, decimals allowed, 0.01 to 86400 */
	CTL_COUNT,	/* a whole number of 1 or more */
};

struct ctl_option {
	const char *name;		/* --name */
	char letter;			/* -l, or 0 */
	enum ctl_kind kind;
	const char *meta;		/* the argument in usage (CTL_CHOICE: made from choices) */
	const char *what;		/* in errors: "bad <what> 'x'", "unknown <what> 'x'" */
	const char *const *choices;	/* CTL_CHOICE: NULL-terminated */
	const char *help;
};

#define CTL_ARG_OPTIONAL	0x1	/* this and those after it may be left out */
#define CTL_ARG_REPEAT		0x2	/* the last one: any number of them */

struct ctl_arg {
	const char *name;		/* in usage: PATH */
	enum ctl_kind kind;		/* CTL_TEXT or CTL_SIZE */
	const char *what;		/* in errors */
	unsigned flags;
};

#define CTL_MAX_OPTIONS	8
#define CTL_MAX_ARGS	4

union ctl_value {
	bool on;
	const char *text;
	size_t choice;
	uint64_t size;
	double seconds;
	unsigned long count;
};

struct ctl_command;

/* A command line, parsed against a command's table entry. */
struct ctl_cmdline {
	const struct ctl_command *cmd;
	bool given[CTL_MAX_OPTIONS];		/* by index in cmd->options */
	union ctl_value opt[CTL_MAX_OPTIONS];
	int argc;				/* positional arguments */
	char **argv;
	uint64_t size[CTL_MAX_ARGS];		/* the CTL_SIZE ones among them */
	const char *socket_path;		/* --socket; NULL: libhotmap's default */
};

struct ctl_command {
	const char *name;
	/* 0 ok, 1 failed, 2 usage; c is connected and closed for it */
	int (*run)(hm_client *c, const struct ctl_cmdline *cl);
	/* what the parser cannot see from the table alone (0, or 2 having
	 * said why), before connecting; may be NULL */
	int (*check)(const struct ctl_cmdline *cl);
	bool needs_admin;			/* the daemon refuses others (EPERM) */
	const struct ctl_option *options;	/* ends with a NULL name */
	const struct ctl_arg *args;		/* ends with a NULL name; may be NULL */
	const char *summary;			/* one line */
	const char *help;			/* more, for COMMAND --help; may be NULL */
};

/* hotmapctl.c */
void ctl_report(const char *what, int err);
int ctl_usage_error(const struct ctl_command *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
double ctl_now_us(void);

/* ctl_cmds.c: the handlers, their options and their checks */
extern const struct ctl_option ctl_ping_options[], ctl_stats_options[], ctl_read_options[],
	ctl_files_options[], ctl_evict_options[], ctl_config_options[], ctl_warm_options[],
	ctl_top_options[], ctl_clients_options[], ctl_stat_options[],
	ctl_stop_options[], ctl_reload_options[];
enum { STATS_JSON, STATS_PROMETHEUS, STATS_RESET };
enum { READ_BACKEND, READ_BY_PATH };
enum { FILES_SORT, FILES_JSON };
enum { CLIENTS_JSON };
enum { EVICT_ALL };
enum { CONFIG_JSON };
enum { STAT_JSON };
enum { WARM_BACKEND, WARM_BY_PATH, WARM_QUIET };
enum { TOP_INTERVAL, TOP_ITERATIONS };
enum { STOP_TIMEOUT };
extern const char *const ctl_backend_names[];	/* CTL_CHOICE of --backend */
extern const char *const ctl_sort_keys[];	/* CTL_CHOICE of files --sort */
int ctl_ping(hm_client *c, const struct ctl_cmdline *cl);
int ctl_stats(hm_client *c, const struct ctl_cmdline *cl);
int ctl_stats_check(const struct ctl_cmdline *cl);
int ctl_read(hm_client *c, const struct ctl_cmdline *cl);
int ctl_files(hm_client *c, const struct ctl_cmdline *cl);
int ctl_clients(hm_client *c, const struct ctl_cmdline *cl);
int ctl_evict(hm_client *c, const struct ctl_cmdline *cl);
int ctl_evict_check(const struct ctl_cmdline *cl);
int ctl_config(hm_client *c, const struct ctl_cmdline *cl);
int ctl_warm(hm_client *c, const struct ctl_cmdline *cl);
int ctl_stop(hm_client *c, const struct ctl_cmdline *cl);
int ctl_reload(hm_client *c, const struct ctl_cmdline *cl);
/* ctl_stat.c */
int ctl_stat(hm_client *c, const struct ctl_cmdline *cl);

/* ctl_top.c */
int ctl_top(hm_client *c, const struct ctl_cmdline *cl);

/* --- the daemon's files, as hm_files gives them (ctl_cmds.c) ---------------- */

struct file_row {
	char *path;
	struct hm_file_info info;
	struct hm_read_ways ways;	/* how its reads were served */
};

struct file_rows {
	struct file_row *v;
	size_t n, cap;
	bool failed;		/* out of memory: some rows are missing */
};

/* hm_files_ways callback: appends a copy of info and ways to the struct
 * file_rows arg. */
void file_rows_collect(const struct hm_file_info *info, const struct hm_read_ways *ways,
		       void *arg);
/* What the library filled of ways (its size), the rest zero. */
void ctl_ways_copy(struct hm_read_ways *to, const struct hm_read_ways *ways);
void file_rows_free(struct file_rows *rows);

/* --- ctl_output.c --------------------------------------------------------------- */

/*
 * The one JSON emitter.  Strings are escaped by one rule (see
 * json_write_string): whatever bytes a path holds, the output is valid
 * JSON.  Containers are printed one member a line, or all on one line when
 * opened "inline".  Writes to a FILE (json_init) or, for callers that must
 * not print half a document on failure, to a ctl_buffer (json_init_buffer).
 */

/*
 * Output printed only once complete: a growable buffer of its own (not
 * open_memstream, which Windows lacks), or, with f set, a FILE written at
 * once.  failed: memory ran out; nothing is printed then.
 */
struct ctl_buffer {
	FILE *f;
	char *data;
	size_t len, cap;
	bool failed;
};
int ctl_buffer_open(struct ctl_buffer *b);
/* Prints what it holds to stdout if print (and nothing failed); frees it. */
void ctl_buffer_close(struct ctl_buffer *b, bool print);
void ctl_write(struct ctl_buffer *b, const void *p, size_t n);
void ctl_puts(struct ctl_buffer *b, const char *s);
void ctl_putc(struct ctl_buffer *b, int c);
void ctl_printf(struct ctl_buffer *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

struct json {
	struct ctl_buffer *f;		/* where it writes: direct, or the caller's */
	struct ctl_buffer direct;	/* json_init's FILE */
	unsigned depth;
	bool after_key;			/* a value completes "key": */
	bool members[16];		/* by depth: something printed inside */
	bool inline_[16];		/* by depth: members on one line */
	char closer[16];		/* by depth: '}' or ']' */
};

void json_init(struct json *j, FILE *f);
void json_init_buffer(struct json *j, struct ctl_buffer *b);
/* Containers nest 15 deep at most: hotmapctl's documents need 3. */
void json_open(struct json *j, char brace, bool inline_);	/* '{' or '[' */
void json_close(struct json *j);	/* after the outermost, a newline */
void json_key(struct json *j, const char *key);
void json_string(struct json *j, const char *s);
void json_uint(struct json *j, uint64_t v);
void json_int(struct json *j, int64_t v);
void json_bool(struct json *j, bool v);
void json_null(struct json *j);

enum stats_format { STATS_HUMAN, STATS_FORMAT_JSON, STATS_FORMAT_PROMETHEUS };

/* Collects hm_stats' keys and prints them in one format. */
struct stats_out;
struct stats_out *stats_out_new(enum stats_format format);
void stats_out_stat(const struct hm_stat_entry *stat, void *arg);	/* hm_stats_typed's cb */
/* Prints them (print false: drops them) and frees o; -ENOMEM, printing
 * nothing, when they could not all be kept. */
int stats_out_finish(struct stats_out *o, bool print);

const char *ctl_reason_name(int reason);
const char *ctl_backend_name(int backend);
void files_print_table(const struct file_rows *rows);
void files_print_json(const struct file_rows *rows);

/*
 * How reads were served, in the tables of files and clients: columns
 * after the last numeric one, just before the path or name, which stays
 * last (it may hold spaces: scripts take it as the rest of the line, as
 * tests/test_hotmapctl.sh does), so that every column before keeps its
 * place.  COPY and PREAD: the direct reads by way; DAEMON: read requests
 * the daemon took; BLOCKS: 2 MiB blocks of mappings populated.
 */
#define WAYS_COLUMNS_MAX	64
extern const char ctl_ways_header[];
void ctl_ways_columns(char *buf, size_t size, const struct hm_read_ways *w);
/* Their JSON keys. */
void ways_json(struct json *j, const struct hm_read_ways *w);

struct config_out;
struct config_out *config_out_new(bool json);
void config_out_item(const char *key, const char *value, const char *source, void *arg);
/* path: the file the daemon read, "" for none */
void config_out_finish(struct config_out *o, const char *path, bool print);

#endif
