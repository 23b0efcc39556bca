/* SPDX-License-Identifier: MIT */
/*
 * conf.h - hotmapd's configuration: built-in defaults, the file
 * (hotmapd.conf, parsed in conf.c), the command line over both, and where
 * each value came from.
 *
 * What it is for: one struct hm_config that the server holds and its
 * consumers read when they open or connect; one key table (keys[] in
 * conf_keys.c: name, type, field, limits, choices, default, reload or restart,
 * short option, --help text), from which the file and the command line
 * are parsed and checked, defaults set, values shown, --help written and
 * reloads diffed; all the errors of a file and a command line at once,
 * each naming its file and line.
 *
 * Adding a key: its field in struct hm_config and its name in enum
 * hm_config_key (the declaration), one row in keys[] (all the rest: a
 * type with a handler only for what no type covers), its line in
 * man/hotmapd.conf.5.in, and its good and bad values in tests/test_config.c
 * (test_every_key_good and test_every_key_bad_all_errors_at_once fail
 * until they have one per key).  Nothing else: main.c, server.c and
 * hotmapctl config take it from the table.
 *
 * What it must not do: log, exit, or apply anything (binding, chmod,
 * log levels and reloads are server.c's and main.c's).
 */
#ifndef HOTMAP_DAEMON_CONF_H
#define HOTMAP_DAEMON_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "daemon/base/platform.h"	/* uid_t, gid_t */
#include "daemon/storage/resolve.h"
#include "daemon/storage/storage.h"

#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif
/* Read when no --config is given; a missing one is not an error. */
#define HM_CONFIG_DEFAULT_PATH	SYSCONFDIR "/hotmap/hotmapd.conf"

/* Every key, in the order conf_foreach reports them. */
enum hm_config_key {
	HM_KEY_SOCKET,
	HM_KEY_SOCKET_MODE,
	HM_KEY_SOCKET_GROUP,
	HM_KEY_ROOT,
	HM_KEY_CROSS_MOUNTS,
	HM_KEY_ALLOW_UID,
	HM_KEY_ALLOW_GID,
	HM_KEY_ADMIN_UID,
	HM_KEY_ADMIN_GID,
	HM_KEY_BACKEND,
	HM_KEY_MAX_MAPPED_BYTES,
	HM_KEY_MAX_OPEN_FILES,
	HM_KEY_IDLE_UNMAP,
	HM_KEY_WARM,
	HM_KEY_NETWORK_FS,
	HM_KEY_NETWORK_FS_CHUNK,
	HM_KEY_NETWORK_COPY_MAX,
	HM_KEY_NETWORK_COPY_FILL_TIMEOUT,
	HM_KEY_MAX_CONNECTIONS_PER_UID,
	HM_KEY_MAX_INFLIGHT,
	HM_KEY_MAX_INFLIGHT_BYTES,
	HM_KEY_IDLE_TIMEOUT,
	HM_KEY_WORKERS,
	HM_KEY_POLL_US,
	HM_KEY_LOG_LEVEL,
	HM_KEY_DIRECT_READS,
	HM_KEY_DIRECT_LEASE_RULE,
	HM_KEY_DIRECT_TABLE,
	HM_KEY_MAX_DIRECT_GRANTS_PER_UID,
	HM_KEY_PATH_DESCRIPTORS,
	HM_KEY_HUGE_FOLIOS,
	HM_KEY_FOREGROUND,
	HM_KEY_LOG_FILE,
	HM_KEY_PID_FILE,
	HM_KEY_USER,
	HM_KEY_GROUP,
	HM_CONFIG__NKEYS
};

/* What the daemon does with a file's data when it first caches it. */
enum hm_warm {
	HM_WARM_NONE = 0,
	HM_WARM_WILLNEED = 1,	/* posix_fadvise/madvise WILLNEED */
	HM_WARM_POPULATE = 2,	/* pre-touch the mapping in a worker */
};

/* How files on network and FUSE file systems are read. */
enum hm_network_fs {
	HM_NETWORK_FS_PREAD = 0,	/* pread in network_fs_chunk chunks */
	HM_NETWORK_FS_MMAP = 1,		/* like local files */
};

/* Which files a client may have leased for its direct reads
 * (policy_may_lease). */
enum hm_lease_rule {
	HM_LEASE_RULE_CAN_WRITE = 0,	/* it could write the file, or nobody can */
	HM_LEASE_RULE_CAN_READ = 1,	/* it can read it (trusting local users) */
};

/* Where a value came from. */
enum hm_config_origin {
	HM_ORIGIN_DEFAULT = 0,
	HM_ORIGIN_FILE,			/* line of hm_config.path */
	HM_ORIGIN_COMMAND_LINE,
	HM_ORIGIN_SYSTEMD,		/* the socket systemd passed (socket activation) */
};

struct hm_config_source {
	enum hm_config_origin origin;
	unsigned line;			/* with HM_ORIGIN_FILE */
};

struct hm_uid_list {
	uid_t *v;
	size_t n;
};

struct hm_gid_list {
	gid_t *v;
	size_t n;
};

#define HM_CONFIG_MAX_PER_UID_DEFAULT		4096u
#define HM_CONFIG_MAX_DIRECT_PER_UID_DEFAULT	16384u
#define HM_CONFIG_MAX_OPEN_FILES_DEFAULT	16384u
#define HM_CONFIG_MAX_INFLIGHT_DEFAULT		32u
#define HM_CONFIG_MAX_INFLIGHT_BYTES_DEFAULT	(64ull << 20)
#define HM_CONFIG_NETWORK_FS_CHUNK_DEFAULT	(16ull << 20)
/* network-copy-max = auto (the default): 1/8 of the memory, at most 1G */
#define HM_CONFIG_NETWORK_COPY_AUTO		UINT64_MAX
#define HM_CONFIG_NETWORK_COPY_AUTO_MAX		(1ull << 30)
#define HM_CONFIG_SOCKET_MODE_DEFAULT		0666u
#define HM_CONFIG_POLL_US_AUTO			50
#define HM_CONFIG_POLL_US_MAX			10000

struct hm_config {
	char *path;			/* the file read; NULL: none was */

	/* What needs a restart says keys[]; everything else applies from a
	 * reload on, to new opens and new connections. */
	char *socket_path;		/* socket */
	unsigned socket_mode;		/* socket-mode, 0 to 0777 */
	gid_t socket_group;		/* socket-group; (gid_t)-1: unchanged */
	struct resolve_roots roots;	/* root; empty: open by path refused */
	struct hm_config_source *root_sources;	/* one per root */
	bool direct_reads;		/* direct-reads: clients may read granted
					 * files from their own mappings */
	enum hm_lease_rule direct_lease_rule;	/* direct-lease-rule */
	unsigned max_direct_per_uid;	/* max-direct-grants-per-uid */
	unsigned direct_table_s;	/* direct-table: a published file lingers
					 * S seconds after its last grant; 0 no table */
	bool path_descriptors;		/* path-descriptors: a client that opens
					 * by path gets a read-only descriptor,
					 * to read the file directly */
	bool cross_mounts;		/* cross-mounts: open by path may cross
					 * a mount point beneath a root */
	struct hm_uid_list allow_uid;	/* allow-uid  } both empty: anyone */
	struct hm_gid_list allow_gid;	/* allow-gid  } who reaches the socket */
	struct hm_uid_list admin_uid;	/* admin-uid; uid 0 and hotmapd's own */
	struct hm_gid_list admin_gid;	/* admin-gid;   uid are always admins */
	enum storage_policy policy;	/* backend */
	uint64_t max_mapped_bytes;	/* max-mapped-bytes; 0: no limit */
	unsigned max_open_files;	/* max-open-files; 0: no limit */
	unsigned idle_unmap_s;		/* idle-unmap; 0: never */
	enum hm_warm warm;		/* warm */
	bool huge_folios;		/* huge-folios: files' chunks in memory
					 * read back into huge folios (fplat_fold) */
	enum hm_network_fs network_fs;	/* network-fs */
	uint64_t network_fs_chunk;	/* network-fs-chunk, 64 KiB to 1 GiB */
	uint64_t network_copy_max;	/* network-copy-max; 0: no copies;
					 * HM_CONFIG_NETWORK_COPY_AUTO: auto */
	unsigned network_copy_fill_s;	/* network-copy-fill-timeout: a slower
					 * fill of a copy is abandoned */
	unsigned max_per_uid;		/* max-connections-per-uid */
	unsigned max_inflight;		/* max-inflight: requests per client */
	uint64_t max_inflight_bytes;	/* max-inflight-bytes: per client */
	unsigned idle_timeout_s;	/* idle-timeout; 0: never */
	unsigned workers;		/* workers; 0: auto (cores, 2 to 8) */
	int poll_us;			/* poll-us; -1: auto (HM_CONFIG_POLL_US_AUTO
					 * with 4 cores or more, else 0) */
	int log_level;			/* log-level: LOG_ERR to LOG_DEBUG */
	bool foreground;		/* foreground */
	char *log_file;			/* log-file; NULL: syslog once detached,
					 * else stderr */
	char *pid_file;			/* pid-file; NULL: none */
	uid_t user;			/* user; (uid_t)-1: stay who we are */
	gid_t group;			/* group; (gid_t)-1: user's own group */

	struct hm_config_source source[HM_CONFIG__NKEYS];
};

/*
 * What to load: the file, and the command line's values over it.  Kept by
 * the server for SIGHUP, which loads the same file with the same command
 * line.  The strings are borrowed (argv's) and must outlive the args.
 */
struct hm_config_args {
	const char *path;	/* --config; NULL: HM_CONFIG_DEFAULT_PATH */
	struct hm_config_arg {
		enum hm_config_key key;
		const char *value;
	} *v;			/* in command-line order */
	size_t n;
	unsigned verbose;	/* -v: log-level one step up each */
};

/* All the errors of one load: "FILE:LINE: message" or "--key: message",
 * in the order of the file, then of the command line. */
struct hm_config_errors {
	char **v;
	unsigned *order;	/* private: line, for keeping the order */
	size_t n;
};

/* The key named name ("max-inflight"), or -1. */
int conf_key_lookup(const char *name);
const char *conf_key_name(enum hm_config_key key);
/* Whether a changed value takes a restart (not a reload) to apply. */
bool conf_key_needs_restart(enum hm_config_key key);

/* Adds "--key value" (key as named in the file).  -EINVAL for an unknown
 * key, -ENOMEM. */
int conf_args_add(struct hm_config_args *a, const char *key, const char *value);
void conf_args_clear(struct hm_config_args *a);

/*
 * Defaults, then the file (args->path, or the default path when it
 * exists), then the command line.  Every value is checked, every error
 * collected: 0 with *cfg complete, or -EINVAL with errs (at least one) and
 * *cfg cleared, or -ENOMEM.  Roots are opened here (resolve_roots_add).
 */
int conf_load(struct hm_config *cfg, const struct hm_config_args *args,
	      struct hm_config_errors *errs);
/* Frees what cfg holds and zeroes it; takes a zeroed or cleared cfg. */
void conf_clear(struct hm_config *cfg);
void conf_errors_clear(struct hm_config_errors *errs);

/* "default", "FILE:LINE" or "command line" into buf; returns buf. */
const char *conf_source_text(const struct hm_config *cfg, struct hm_config_source src,
			     char *buf, size_t len);

/* The value of key as the file would spell it ("0660", "16M", "auto"; lists
 * space-separated) into buf; returns buf. */
const char *conf_value_text(const struct hm_config *cfg, enum hm_config_key key,
			    char *buf, size_t len);

/*
 * Every key with its value and its source, in table order; a root once per
 * root (with its own source), or once with "" when there is none.  Values
 * and sources are valid during the call.
 */
typedef void (*hm_config_cb)(const char *key, const char *value, const char *source, void *arg);
void conf_foreach(const struct hm_config *cfg, hm_config_cb cb, void *arg);

/* The command line's part of --help: every key's option and text. */
void conf_usage(FILE *f);
/* hotmapd.conf.example: every key with its --help text and its default,
 * commented out (--print-example-config).  The socket shown is the system
 * service's, whoever runs it.  0, or -ENOMEM. */
int conf_print_example(FILE *f);
/* hotmapd.conf.example: every key, in --help's order, with its --help
 * text and its default, commented out (--print-example-config).  The
 * socket shown is the system service's, whoever runs it.  0, or -ENOMEM. */
int conf_print_example(FILE *f);
/* key's short option (0: none), and whether it takes no value (a flag
 * means "yes"). */
int conf_key_short(enum hm_config_key key);
bool conf_key_is_flag(enum hm_config_key key);
/* Where key's value is in struct hm_config: a reload that keeps an old
 * value swaps these bytes. */
void conf_key_field(enum hm_config_key key, size_t *offset, size_t *size);

/* Parsers of single values, for the tests and hotmapctl's kind: 0, or
 * -EINVAL (not a size / number), -ERANGE (overflow). */
int conf_parse_size(const char *s, uint64_t *out);
/* "%llu" with the largest binary suffix that divides it ("64M"). */
const char *conf_format_size(uint64_t v, char *buf, size_t len);

#endif
