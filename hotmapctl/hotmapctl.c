/* SPDX-License-Identifier: MIT */
/*
 * hotmapctl.c - the admin and test CLI of hotmapd, over libhotmap: the
 * command table, the one parser that reads a command line against it,
 * usage and help made from it, and the connection every command uses.
 *
 * Options may come anywhere after "hotmapctl", before or after the
 * command and among its arguments ("--" ends them; a word such as "-5" is
 * an argument, so that a bad number is reported as one).  A command's
 * own options are looked up before the global ones: "files -s path"
 * sorts, "ping -s PATH" names the socket.
 */
#include "config.h"

#include <ctype.h>
#include <limits.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hotmapctl/ctl.h"
#include "proto/endpoint.h"
#include "proto/frame.h"
#include "proto/size.h"

enum { GLOBAL_SOCKET, GLOBAL_HELP, GLOBAL_VERSION };

static const struct ctl_option global_options[] = {
	[GLOBAL_SOCKET] = { "socket", 's', CTL_TEXT, "PATH", NULL, NULL,
			    "the daemon's socket (default: as libhotmap finds it)" },
	[GLOBAL_HELP] = { "help", 'h', CTL_FLAG, NULL, NULL, NULL,
			  "show this help (or the command's) and exit" },
	[GLOBAL_VERSION] = { "version", 'V', CTL_FLAG, NULL, NULL, NULL,
			     "show the version and exit" },
	{ NULL },
};

static const struct ctl_arg read_args[] = {
	{ "PATH", CTL_TEXT, NULL, 0 },
	{ "OFFSET", CTL_SIZE, "offset", CTL_ARG_OPTIONAL },
	{ "LENGTH", CTL_SIZE, "length", CTL_ARG_OPTIONAL },
	{ NULL },
};
static const struct ctl_arg paths_args[] = {
	{ "PATH", CTL_TEXT, NULL, CTL_ARG_REPEAT },
	{ NULL },
};
static const struct ctl_arg any_paths_args[] = {
	{ "PATH", CTL_TEXT, NULL, CTL_ARG_OPTIONAL | CTL_ARG_REPEAT },
	{ NULL },
};

static const struct ctl_command commands[] = {
	{ "ping", ctl_ping, NULL, false, ctl_ping_options, NULL,
	  "print the daemon's version, pid, uptime and round-trip time", NULL },
	{ "stats", ctl_stats, ctl_stats_check, true, ctl_stats_options, NULL,
	  "print the daemon's counters",
	  "--json and --prometheus are other formats of the same keys: one of them." },
	{ "top", ctl_top, NULL, true, ctl_top_options, NULL,
	  "show requests, bytes, latencies and the hottest files, refreshed live",
	  "On a terminal, q quits." },
	{ "read", ctl_read, NULL, false, ctl_read_options, read_args,
	  "write bytes of PATH to standard output",
	  "From OFFSET (default 0), LENGTH bytes (default: to the end).  Sizes are\n"
	  "decimal, 0x hex, or with a K, M, G or T suffix (powers of 1024)." },
	{ "files", ctl_files, NULL, true, ctl_files_options, NULL,
	  "list the daemon's cached files", NULL },
	{ "stat", ctl_stat, NULL, true, ctl_stat_options, paths_args,
	  "what the daemon holds of files: backend, reason, size, handles, resident bytes",
	  "A file is found by its identity (stat(2)), whatever name it has in the daemon.\n"
	  "Exit status 1 when a file is not cached (or cannot be stat'ed)." },
	{ "clients", ctl_clients, NULL, true, ctl_clients_options, NULL,
	  "list the connected clients: handles, bytes, direct reads", NULL },
	{ "evict", ctl_evict, ctl_evict_check, true, ctl_evict_options, any_paths_args,
	  "drop cached files (and their mappings) that no handle reads",
	  "Give PATH... or --all." },
	{ "config", ctl_config, NULL, true, ctl_config_options, NULL,
	  "print the configuration in force, and where each value came from", NULL },
	{ "warm", ctl_warm, NULL, false, ctl_warm_options, paths_args,
	  "bring files into the daemon's memory before they are read", NULL },
	{ "reload", ctl_reload, NULL, true, ctl_reload_options, NULL,
	  "make the daemon read its configuration again, as SIGHUP does",
	  "Prints each value that changed and each kept until a restart; with errors,\n"
	  "prints them and exits 1, and the daemon keeps the configuration in use.\n"
	  "The way to reload on Windows, which has no SIGHUP." },
	{ "stop", ctl_stop, NULL, true, ctl_stop_options, NULL,
	  "shut the daemon down, as SIGTERM does, and wait until it is gone",
	  "Gone: its socket refuses connections (the daemon closed every connection\n"
	  "and removed the socket).  Exit 1 if it is not gone within the timeout." },
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

/* --- usage and help, made from the table -------------------------------------- */

static void
print_choices(FILE *f, const char *const *choices, const char *sep)
{
	size_t i;

	for (i = 0; choices[i] != NULL; i++)
		fprintf(f, "%s%s", i > 0 ? sep : "", choices[i]);
}

static void
print_option_arg(FILE *f, const struct ctl_option *o)
{
	if (o->kind == CTL_FLAG)
		return;
	putc(' ', f);
	if (o->kind == CTL_CHOICE)
		print_choices(f, o->choices, "|");
	else
		fputs(o->meta, f);
}

/* "read [--backend auto|mmap|pread] [--by-path] PATH [OFFSET [LENGTH]]" */
static void
print_synopsis(FILE *f, const struct ctl_command *cmd)
{
	const struct ctl_option *o;
	const struct ctl_arg *a;
	unsigned open = 0;

	fputs(cmd->name, f);
	for (o = cmd->options; o->name != NULL; o++) {
		fprintf(f, " [--%s", o->name);
		print_option_arg(f, o);
		putc(']', f);
	}
	for (a = cmd->args; a != NULL && a->name != NULL; a++) {
		if (a->flags & CTL_ARG_OPTIONAL) {
			fputs(" [", f);
			open++;
		} else {
			putc(' ', f);
		}
		fprintf(f, "%s%s", a->name, a->flags & CTL_ARG_REPEAT ? "..." : "");
	}
	while (open-- > 0)
		putc(']', f);
}

/* The letter of an option, unless the command's own options (shadow,
 * looked up first) take it. */
static char
option_letter(const struct ctl_option *o, const struct ctl_option *shadow)
{
	for (; shadow != NULL && shadow->name != NULL; shadow++)
		if (shadow->letter == o->letter)
			return 0;
	return o->letter;
}

static void
print_options(FILE *f, const struct ctl_option *opts, const struct ctl_option *shadow)
{
	const struct ctl_option *o;

	for (o = opts; o->name != NULL; o++) {
		int w = 0, n;

		if (option_letter(o, shadow) != 0)
			fprintf(f, "  -%c, --%s%n", o->letter, o->name, &w);
		else
			fprintf(f, "      --%s%n", o->name, &w);
		print_option_arg(f, o);
		n = o->kind == CTL_FLAG ? 0 : 1 + (int)(o->kind == CTL_CHOICE ? 0 : strlen(o->meta));
		if (o->kind == CTL_CHOICE) {
			const char *const *c;

			for (c = o->choices; *c != NULL; c++)
				n += (int)strlen(*c) + (c != o->choices);
			n++;
		}
		if (w + n < 24)
			fprintf(f, "%*s%s\n", 24 - w - n, "", o->help);
		else
			fprintf(f, "\n%24s%s\n", "", o->help);
	}
}

static void
usage(FILE *f)
{
	size_t i;

	fprintf(f, "Usage: hotmapctl [--socket PATH] COMMAND [OPTIONS] [ARGS]\n"
		   "Talk to hotmapd.\n\n");
	print_options(f, global_options, NULL);
	fprintf(f, "\nCommands (COMMAND --help for more):\n");
	for (i = 0; i < NCOMMANDS; i++) {
		fputs("  ", f);
		print_synopsis(f, &commands[i]);
		fprintf(f, "\n      %s%s\n", commands[i].summary,
			commands[i].needs_admin ? " (needs an administrator)" : "");
	}
	fprintf(f, "\nSee hotmapctl(1).\n");
}

static void
command_help(const struct ctl_command *cmd)
{
	printf("Usage: hotmapctl [--socket PATH] ");
	print_synopsis(stdout, cmd);
	printf("\n%c%s.\n", toupper((unsigned char)cmd->summary[0]), cmd->summary + 1);
	if (cmd->help != NULL)
		printf("%s\n", cmd->help);
	if (cmd->needs_admin)
		printf("Needs an administrator: root, the user hotmapd runs as, or one that its\n"
		       "admin-uid or admin-gid names (hotmapd.conf(5)).\n");
	printf("\nOptions:\n");
	print_options(stdout, cmd->options, NULL);
	print_options(stdout, global_options, cmd->options);
	printf("\nSee hotmapctl(1).\n");
}

int
ctl_usage_error(const struct ctl_command *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "hotmapctl: %s: ", cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nhotmapctl: usage: hotmapctl ");
	print_synopsis(stderr, cmd);
	fprintf(stderr, "\n");
	return 2;
}

/* --- the parser ---------------------------------------------------------------- */

/* The parser's state: the command line so far. */
struct parse {
	struct ctl_cmdline cl;
	bool global_given[CTL_MAX_OPTIONS];
	union ctl_value global[CTL_MAX_OPTIONS];
};

/* "hotmapctl: read: " or "hotmapctl: " before the command. */
static void __attribute__((format(printf, 2, 3)))
parse_error(const struct parse *p, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "hotmapctl: ");
	if (p->cl.cmd != NULL)
		fprintf(stderr, "%s: ", p->cl.cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (try 'hotmapctl %s%s--help')\n", p->cl.cmd != NULL ? p->cl.cmd->name : "",
		p->cl.cmd != NULL ? " " : "");
}

/* Checks text as a value of kind: 0, or -EINVAL having said why. */
static int
parse_value(const struct parse *p, enum ctl_kind kind, const char *what,
	    const char *const *choices, const char *text, union ctl_value *v)
{
	char *end;
	size_t i;

	switch (kind) {
	case CTL_FLAG:
		v->on = true;
		return 0;
	case CTL_TEXT:
		v->text = text;
		return 0;
	case CTL_CHOICE:
		for (i = 0; choices[i] != NULL; i++) {
			if (strcmp(text, choices[i]) == 0) {
				v->choice = i;
				return 0;
			}
		}
		fprintf(stderr, "hotmapctl: %s: unknown %s '%s' (", p->cl.cmd->name, what, text);
		print_choices(stderr, choices, ", ");
		fprintf(stderr, ")\n");
		return -EINVAL;
	case CTL_SIZE:
		if (size_parse(text, &v->size) == 0)
			return 0;
		fprintf(stderr, "hotmapctl: %s: bad %s '%s'\n", p->cl.cmd->name, what, text);
		return -EINVAL;
	case CTL_SECONDS:
		errno = 0;
		v->seconds = strtod(text, &end);
		if (errno == 0 && end != text && *end == '\0' && isfinite(v->seconds) &&
		    v->seconds >= 0.01 && v->seconds <= 86400.0)
			return 0;
		fprintf(stderr, "hotmapctl: %s: bad %s '%s' (seconds, from 0.01 to 86400)\n",
			p->cl.cmd->name, what, text);
		return -EINVAL;
	case CTL_COUNT:
		errno = 0;
		v->count = strtoul(text, &end, 10);
		if (errno == 0 && end != text && *end == '\0' && text[0] != '-' && v->count > 0)
			return 0;
		fprintf(stderr, "hotmapctl: %s: bad %s '%s' (a count of 1 or more)\n",
			p->cl.cmd->name, what, text);
		return -EINVAL;
	}
	return -EINVAL;
}

/* The option named (long, length len) or lettered (short: name NULL):
 * the command's first, then the global ones.  *global says which. */
static const struct ctl_option *
parse_find(const struct parse *p, const char *name, size_t len, char letter, bool *global)
{
	const struct ctl_option *tables[2] = { p->cl.cmd != NULL ? p->cl.cmd->options : NULL,
					       global_options };
	const struct ctl_option *o;
	size_t t;

	for (t = 0; t < 2; t++) {
		for (o = tables[t]; o != NULL && o->name != NULL; o++) {
			if (name != NULL ? strlen(o->name) == len && strncmp(o->name, name, len) == 0
					 : o->letter == letter) {
				*global = t == 1;
				return o;
			}
		}
	}
	return NULL;
}

/* Sets option o to text (NULL for a flag). */
static int
parse_set(struct parse *p, const struct ctl_option *o, bool global, const char *text)
{
	const struct ctl_option *table = global ? global_options : p->cl.cmd->options;
	size_t i = (size_t)(o - table);
	union ctl_value *v = global ? &p->global[i] : &p->cl.opt[i];

	if (parse_value(p, o->kind, o->what, o->choices, text, v) < 0)
		return -EINVAL;
	if (global)
		p->global_given[i] = true;
	else
		p->cl.given[i] = true;
	return 0;
}

/* "--name" or "--name=value" at argv[*i]; the value may be the next word. */
static int
parse_long(struct parse *p, int argc, char **argv, int *i)
{
	const char *name = argv[*i] + 2, *eq = strchr(name, '=');
	size_t len = eq != NULL ? (size_t)(eq - name) : strlen(name);
	const struct ctl_option *o;
	bool global;

	o = parse_find(p, name, len, 0, &global);
	if (o == NULL) {
		parse_error(p, "unknown option '--%.*s'", (int)len, name);
		return -EINVAL;
	}
	if (o->kind == CTL_FLAG) {
		if (eq != NULL) {
			parse_error(p, "option '--%s' takes no argument", o->name);
			return -EINVAL;
		}
		return parse_set(p, o, global, NULL);
	}
	if (eq != NULL)
		return parse_set(p, o, global, eq + 1);
	if (*i + 1 >= argc) {
		parse_error(p, "option '--%s' needs an argument", o->name);
		return -EINVAL;
	}
	return parse_set(p, o, global, argv[++*i]);
}

/* "-x", "-xy" (flags together) or "-xVALUE" at argv[*i]; the value may be
 * the next word. */
static int
parse_short(struct parse *p, int argc, char **argv, int *i)
{
	const char *s;

	for (s = argv[*i] + 1; *s != '\0'; s++) {
		const struct ctl_option *o;
		bool global;

		o = parse_find(p, NULL, 0, *s, &global);
		if (o == NULL) {
			parse_error(p, "unknown option '-%c'", *s);
			return -EINVAL;
		}
		if (o->kind == CTL_FLAG) {
			if (parse_set(p, o, global, NULL) < 0)
				return -EINVAL;
			continue;
		}
		if (s[1] != '\0')
			return parse_set(p, o, global, s + 1);
		if (*i + 1 >= argc) {
			parse_error(p, "option '-%c' needs an argument", *s);
			return -EINVAL;
		}
		return parse_set(p, o, global, argv[++*i]);
	}
	return 0;
}

/* A word that is not an option: the command, or its next argument. */
static int
parse_word(struct parse *p, char *word)
{
	size_t i;

	if (p->cl.cmd != NULL) {
		p->cl.argv[p->cl.argc++] = word;
		return 0;
	}
	for (i = 0; i < NCOMMANDS; i++) {
		if (strcmp(word, commands[i].name) == 0) {
			p->cl.cmd = &commands[i];
			return 0;
		}
	}
	fprintf(stderr, "hotmapctl: unknown command '%s' (try --help)\n", word);
	return -EINVAL;
}

/* Reads argv into p; cl.argv must have room for argc words.  0, or
 * -EINVAL having said why. */
static int
parse_words(struct parse *p, int argc, char **argv)
{
	bool options = true;
	int i, r;

	for (i = 1; i < argc; i++) {
		const char *w = argv[i];

		if (options && strcmp(w, "--") == 0) {
			options = false;
			continue;
		}
		/* "-" and negative numbers are arguments */
		if (!options || w[0] != '-' || w[1] == '\0' || isdigit((unsigned char)w[1]))
			r = parse_word(p, argv[i]);
		else if (w[1] == '-')
			r = parse_long(p, argc, argv, &i);
		else
			r = parse_short(p, argc, argv, &i);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The positional arguments against the command's: their count, and the
 * sizes among them into cl->size. */
static int
parse_args(struct parse *p)
{
	struct ctl_cmdline *cl = &p->cl;
	const struct ctl_arg *args = cl->cmd->args;
	int min = 0, max = 0, nargs, i;

	for (nargs = 0; args != NULL && args[nargs].name != NULL; nargs++) {
		if (!(args[nargs].flags & CTL_ARG_OPTIONAL))
			min = nargs + 1;
		max = args[nargs].flags & CTL_ARG_REPEAT ? -1 : nargs + 1;
	}
	if (cl->argc < min)
		return ctl_usage_error(cl->cmd, "too few arguments");
	if (max >= 0 && cl->argc > max)
		return ctl_usage_error(cl->cmd, "too many arguments");
	for (i = 0; i < cl->argc; i++) {
		/* past the last, all are as the last (CTL_ARG_REPEAT) */
		const struct ctl_arg *a = &args[i < nargs ? i : nargs - 1];
		union ctl_value v;

		if (a->kind == CTL_TEXT)
			continue;
		if (parse_value(p, a->kind, a->what, NULL, cl->argv[i], &v) < 0)
			return 2;
		if (i < CTL_MAX_ARGS)
			cl->size[i] = v.size;
	}
	return 0;
}

/* --- running a command ---------------------------------------------------------- */

double
ctl_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Prints "hotmapctl: what: why", why being the daemon's message when it
 * sent one (it may already name what) or strerror. */
void
ctl_report(const char *what, int err)
{
	const char *daemon_msg = hm_last_error();
	size_t len = strlen(what);

	if (daemon_msg[0] == '\0')
		fprintf(stderr, "hotmapctl: %s: %s\n", what, strerror(err));
	else if (strncmp(daemon_msg, what, len) == 0 && daemon_msg[len] == ':')
		fprintf(stderr, "hotmapctl: %s\n", daemon_msg);
	else
		fprintf(stderr, "hotmapctl: %s: %s\n", what, daemon_msg);
}

static hm_client *
connect_or_report(const char *socket_path)
{
	hm_client *c = hm_connect(socket_path);

	if (c == NULL) {
		int err = errno;

		char own[PATH_MAX];

		if (socket_path == NULL && err == ENOENT && getenv("HOTMAP_SOCKET") == NULL) {
			const char *fallback = endpoint_fallback();
			int have_own = frame_default_socket(own, sizeof own) == 0;

			if (have_own && fallback != NULL && strcmp(own, fallback) != 0)
				fprintf(stderr, "hotmapctl: no hotmapd at %s nor at %s: "
					"start one, or give --socket\n", own, fallback);
			else
				fprintf(stderr, "hotmapctl: no hotmapd at %s: start one, "
					"or give --socket\n", fallback != NULL ? fallback : own);
		} else
			ctl_report(socket_path != NULL ? socket_path :
				   getenv("HOTMAP_SOCKET") != NULL ? getenv("HOTMAP_SOCKET") : "connect",
				   err);
	}
	return c;
}

/* The command line parsed and checked, the daemon connected once: the
 * command's exit status. */
static int
run(struct parse *p)
{
	const struct ctl_command *cmd = p->cl.cmd;
	hm_client *c;
	int rc;

	rc = parse_args(p);
	if (rc == 0 && cmd->check != NULL)
		rc = cmd->check(&p->cl);
	if (rc != 0)
		return rc;
	p->cl.socket_path = p->global_given[GLOBAL_SOCKET] ? p->global[GLOBAL_SOCKET].text : NULL;
	c = connect_or_report(p->cl.socket_path);
	if (c == NULL)
		return 1;
	rc = cmd->run(c, &p->cl);
	hm_disconnect(c);
	return rc;
}

int
main(int argc, char **argv)
{
	struct parse p = { .cl = { .cmd = NULL } };
	int rc;

	p.cl.argv = calloc((size_t)argc + 1, sizeof *p.cl.argv);
	if (p.cl.argv == NULL) {
		fprintf(stderr, "hotmapctl: %s\n", strerror(ENOMEM));
		return 1;
	}
	if (parse_words(&p, argc, argv) < 0) {
		rc = 2;
	} else if (p.global_given[GLOBAL_VERSION]) {
		printf("hotmapctl %s (libhotmap %s)\n", PACKAGE_VERSION, hm_version());
		rc = 0;
	} else if (p.global_given[GLOBAL_HELP]) {
		if (p.cl.cmd != NULL)
			command_help(p.cl.cmd);
		else
			usage(stdout);
		rc = 0;
	} else if (p.cl.cmd == NULL) {
		usage(stderr);
		rc = 2;
	} else {
		rc = run(&p);
	}
	free(p.cl.argv);
	return rc;
}
