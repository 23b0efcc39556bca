/* SPDX-License-Identifier: MIT */
/*
 * conf_keys.c - the key table of hotmapd.conf and the command line
 * (keys[]): every key's name, type, field, limits, choices, default,
 * whether a reload applies it, its short option and its --help text; and
 * what is read from the table alone (lookups, defaults, --help).
 *
 * What it must not do: check or store a value itself (conf_value.c does,
 * by the row's type), or read the file.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/config/conf.h"
#include "daemon/config/conf_priv.h"
#include "daemon/base/log.h"	/* the LOG_* levels only: conf does not log */
#include "proto/frame.h"

#define SECONDS_MAX	(86400u * 365u)

/* --- the table ------------------------------------------------------------- */

/* The value names of enum keys, indexed by value; NULL: no such value. */
static const char *const backend_names[] = { "auto", "mmap", "pread" };
static const char *const warm_names[] = { "none", "willneed", "populate" };
static const char *const network_fs_names[] = { "pread", "mmap" };
static const char *const lease_rule_names[] = { "can-write", "can-read" };
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
	       sizeof(enum hm_network_fs) == sizeof(unsigned) &&
	       sizeof(enum hm_lease_rule) == sizeof(unsigned) && sizeof(int) == sizeof(unsigned) &&
	       sizeof(bool) == 1, "fields are 1, 4 or 8 bytes");

/*
 * Every key, in the order of --help (conf_foreach follows enum
 * hm_config_key).  Types, limits and defaults here are the whole of the
 * checking: hotmapd.conf(5) must say the same.
 */
static const struct key_def keys[HM_CONFIG__NKEYS] = {
	{ HM_KEY_SOCKET, "socket", SPECIAL(conf_set_socket, conf_text_socket), FIELD(socket_path),
	  .restart = true, .short_opt = 's', .metavar = "PATH",
	  .help = "listen on PATH (default: $HOTMAP_SOCKET, else\n"
		  "/run/hotmap/hotmapd.sock as root, else\n"
		  "$XDG_RUNTIME_DIR/hotmap/hotmapd.sock)" },
	{ HM_KEY_SOCKET_MODE, "socket-mode", KEY_MODE, FIELD(socket_mode), .max = 0777,
	  .def = HM_CONFIG_SOCKET_MODE_DEFAULT, .restart = true, .metavar = "MODE",
	  .help = "octal mode of the socket (default 0666)" },
	{ HM_KEY_SOCKET_GROUP, "socket-group", SPECIAL(conf_set_socket_group, conf_text_socket_group),
	  FIELD(socket_group), .def = (gid_t)-1, .restart = true, .metavar = "GROUP",
	  .help = "group of the socket (default: unchanged)" },
	{ HM_KEY_FOREGROUND, "foreground", KEY_BOOL, FIELD(foreground), .restart = true,
	  .short_opt = 'f', .help = "stay in the foreground (as under systemd)" },
	{ HM_KEY_LOG_FILE, "log-file", SPECIAL(conf_set_path, conf_text_path), FIELD(log_file),
	  .metavar = "FILE", .help = "append the log to FILE, reopened on SIGHUP (default:\n"
				     "stderr in the foreground, else syslog)" },
	{ HM_KEY_PID_FILE, "pid-file", SPECIAL(conf_set_path, conf_text_path), FIELD(pid_file),
	  .restart = true, .metavar = "FILE",
	  .help = "write the pid to FILE once ready (removed at exit)" },
	{ HM_KEY_USER, "user", SPECIAL(conf_set_user, conf_text_id), FIELD(user), .def = (uid_t)-1,
	  .restart = true, .metavar = "USER",
	  .help = "run as USER once the socket is bound (root only)" },
	{ HM_KEY_GROUP, "group", SPECIAL(conf_set_group, conf_text_id), FIELD(group),
	  .def = (gid_t)-1, .restart = true, .metavar = "GROUP",
	  .help = "and as GROUP (default: USER's own group)" },
	{ HM_KEY_BACKEND, "backend", KEY_ENUM, FIELD(policy), CHOICES(backend_names),
	  .def = STORAGE_POLICY_AUTO, .short_opt = 'b', .metavar = "NAME",
	  .help = "auto (default), mmap (required) or pread" },
	{ HM_KEY_ROOT, "root", SPECIAL(conf_set_root, conf_text_root), FIELD(roots), .short_opt = 'r',
	  .metavar = "DIR", .help = "allow open by path beneath DIR (repeatable)" },
	{ HM_KEY_CROSS_MOUNTS, "cross-mounts", KEY_BOOL, FIELD(cross_mounts), .def = true,
	  .metavar = "yes|no", .help = "whether open by path may cross a mount\n"
				       "point beneath a root (default yes)" },
	{ HM_KEY_ALLOW_UID, "allow-uid", SPECIAL(conf_set_uid_list, conf_text_id_list), FIELD(allow_uid),
	  .metavar = "USERS, --allow-gid GROUPS",
	  .help = "\nwho may connect (default: anyone who can reach\nthe socket)" },
	{ HM_KEY_ALLOW_GID, "allow-gid", SPECIAL(conf_set_gid_list, conf_text_id_list), FIELD(allow_gid),
	  .metavar = "GROUPS" },
	{ HM_KEY_ADMIN_UID, "admin-uid", SPECIAL(conf_set_uid_list, conf_text_id_list), FIELD(admin_uid),
	  .metavar = "USERS, --admin-gid GROUPS",
	  .help = "\nwho may administer, besides root and hotmapd's user" },
	{ HM_KEY_ADMIN_GID, "admin-gid", SPECIAL(conf_set_gid_list, conf_text_id_list), FIELD(admin_gid),
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
	{ HM_KEY_NETWORK_COPY_MAX, "network-copy-max", KEY_SIZE, FIELD(network_copy_max),
	  .max = UINT64_MAX - 1, .has_auto = true, .auto_value = HM_CONFIG_NETWORK_COPY_AUTO,
	  .def = HM_CONFIG_NETWORK_COPY_AUTO, .metavar = "SIZE",
	  .help = "memory for copies of warmed network files\n"
		  "(default auto: 1/8 of the memory, at most 1G; 0: none)" },
	{ HM_KEY_NETWORK_COPY_FILL_TIMEOUT, "network-copy-fill-timeout", KEY_NUMBER,
	  FIELD(network_copy_fill_s), .min = 1, .max = 86400, .def = 60, .metavar = "S",
	  .help = "abandon a copy's fill slower than S seconds (default 60)" },
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
	{ HM_KEY_DIRECT_READS, "direct-reads", KEY_BOOL, FIELD(direct_reads), .def = true,
	  .metavar = "yes|no", .help = "let clients read hot local files from their own\n"
				       "mappings, under a lease (default yes)" },
	{ HM_KEY_DIRECT_LEASE_RULE, "direct-lease-rule", KEY_ENUM, FIELD(direct_lease_rule),
	  CHOICES(lease_rule_names), .def = HM_LEASE_RULE_CAN_WRITE, .metavar = "RULE",
	  .help = "can-write (default): lease a file for a client's\n"
		  "direct reads only if it could write the file\n"
		  "itself, or nobody can; can-read: if it can read it" },
	{ HM_KEY_DIRECT_TABLE, "direct-table", KEY_NUMBER, FIELD(direct_table_s),
	  .max = SECONDS_MAX, .def = 60, .metavar = "S",
	  .help = "publish granted files anyone may read in a table\n"
		  "beside the socket, leased S seconds after their\n"
		  "last grant, for clients to read without a round\n"
		  "trip (default 60; 0: no table, at start)" },
	{ HM_KEY_MAX_DIRECT_GRANTS_PER_UID, "max-direct-grants-per-uid", KEY_NUMBER,
	  FIELD(max_direct_per_uid), .min = 1, .max = 1000000,
	  .def = HM_CONFIG_MAX_DIRECT_PER_UID_DEFAULT, .metavar = "N",
	  .help = "direct-read grants one uid may hold (default 16384)" },
	{ HM_KEY_PATH_DESCRIPTORS, "path-descriptors", KEY_BOOL, FIELD(path_descriptors),
	  .def = false, .metavar = "yes|no",
	  .help = "give a client that opens a file by path beneath\n"
		  "a root a read-only descriptor of it, so that it\n"
		  "reads the file directly (default no)" },
	{ HM_KEY_HUGE_FOLIOS, "huge-folios", KEY_BOOL, FIELD(huge_folios), .def = true,
	  .metavar = "yes|no", .help = "read what is in memory of a file it maps back\n"
				       "into huge folios, so that every mapping of it\n"
				       "takes a fault per 2 MiB (default yes)" },
	{ HM_KEY_LOG_LEVEL, "log-level", KEY_ENUM, FIELD(log_level), CHOICES(log_level_names),
	  .def = LOG_NOTICE, .metavar = "LEVEL",
	  .help = "error, warning, notice (default), info or debug" },
};

const struct key_def *
conf_key_def(int key)
{
	size_t i;

	/* keys[] is in --help's order, not the enum's */
	for (i = 0; i < HM_CONFIG__NKEYS; i++)
		if (keys[i].key == (enum hm_config_key)key)
			break;
	return &keys[i < HM_CONFIG__NKEYS ? i : 0];
}

int
conf_key_lookup(const char *name)
{
	int k;

	for (k = 0; k < HM_CONFIG__NKEYS; k++)
		if (strcmp(conf_key_def(k)->name, name) == 0)
			return k;
	return -1;
}

const char *
conf_key_name(enum hm_config_key key)
{
	return (unsigned)key < HM_CONFIG__NKEYS ? conf_key_def(key)->name : "?";
}

bool
conf_key_needs_restart(enum hm_config_key key)
{
	return (unsigned)key < HM_CONFIG__NKEYS && conf_key_def(key)->restart;
}

int
conf_set_defaults(struct hm_config *cfg)
{
	char sock[PATH_MAX];
	size_t i;

	memset(cfg, 0, sizeof *cfg);
	for (i = 0; i < HM_CONFIG__NKEYS; i++)
		conf_set_field(cfg, &keys[i], keys[i].def);
	/* the one default that is not a constant */
	if (frame_default_socket(sock, sizeof sock) == 0) {
		cfg->socket_path = strdup(sock);
		if (cfg->socket_path == NULL)
			return -ENOMEM;
	}
	return 0;
}

const char *
conf_value_text(const struct hm_config *cfg, enum hm_config_key key, char *buf, size_t len)
{
	return conf_value_format(cfg, conf_key_def(key), buf, len);
}

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
	return (unsigned)key < HM_CONFIG__NKEYS ? conf_key_def(key)->short_opt : 0;
}

bool
conf_key_is_flag(enum hm_config_key key)
{
	return (unsigned)key < HM_CONFIG__NKEYS && conf_key_def(key)->metavar == NULL;
}

void
conf_key_field(enum hm_config_key key, size_t *offset, size_t *size)
{
	*offset = conf_key_def(key)->offset;
	*size = conf_key_def(key)->size;
}
