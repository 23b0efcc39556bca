/* SPDX-License-Identifier: MIT */
/*
 * hotmap_admin.h - libhotmap's administrative calls, for tools such as
 * hotmapctl: the daemon's counters, its cached files, eviction, and its
 * configuration.  Installed beside hotmap.h, which does not include it:
 * an application that only reads files never needs these.  Most need an
 * administrator (EPERM otherwise).  See libhotmap(3).
 */
#ifndef HOTMAP_ADMIN_H
#define HOTMAP_ADMIN_H

#include <stddef.h>
#include <stdint.h>

#include "hotmap.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The daemon's counters: calls cb once per key, in the daemon's order;
 * text is "" for numeric keys.  Needs an administrator (EPERM). */
int hm_stats(hm_client *c,
	     void (*cb)(const char *key, uint64_t value, const char *text, void *arg),
	     void *arg);
/* hm_stats, then the daemon zeroes its counters (totals), not its state
 * (clients, handles, files, mappings): cb sees the values before.  cb may
 * be NULL. */
int hm_stats_reset(hm_client *c,
		   void (*cb)(const char *key, uint64_t value, const char *text, void *arg),
		   void *arg);

/* What a stat is (hm_stats_typed): the daemon says, with each key. */
#define HM_STAT_UNKNOWN	0	/* a daemon too old to say */
#define HM_STAT_COUNTER	1	/* a total since start or the last reset */
#define HM_STAT_GAUGE	2	/* state now: goes up and down, never reset */
#define HM_STAT_TEXT	3	/* text holds it (versions) */

struct hm_stat_entry {
	const char *key;
	int kind;		/* HM_STAT_* */
	uint64_t value;		/* 0 for text */
	const char *text;	/* "" but for text */
	const char *help;	/* one line saying what it counts; "" from an older daemon */
};

/* hm_stats (reset 0) or hm_stats_reset (reset 1), each stat given with
 * its kind; the strings are valid during the call.  cb must not be
 * NULL. */
int hm_stats_typed(hm_client *c, int reset,
		   void (*cb)(const struct hm_stat_entry *stat, void *arg), void *arg);

/* One cached file of the daemon (hm_files). */
struct hm_file_info {
	const char *path;	/* its name now; valid during the callback */
	uint64_t size;
	int backend;		/* HM_BACKEND_MMAP when the daemon has it mapped */
	int reason;		/* HM_REASON_* of the last open */
	unsigned handles;	/* open now, all clients */
	int stale;		/* replaced by a newer version; freed at its last close */
	uint64_t hits;		/* opens that found it cached */
	uint64_t bytes;		/* bytes read from it */
	uint64_t idle_ms;	/* since its last open or read */
	int resident_pct;	/* pages in memory, -1 when unknown */
	uint64_t resident_bytes;	/* bytes of it in memory (0 when unknown) */
	unsigned direct_handles;	/* of the handles, those read directly now */
	uint64_t direct_reads;		/* reads clients served themselves (direct tier) */
	uint64_t direct_bytes;		/* and their bytes: not in bytes */
	uint64_t dev, ino;		/* the file's identity (st_dev, st_ino) */
};

/* Calls cb once per cached file.  Needs an administrator (EPERM). */
int hm_files(hm_client *c, void (*cb)(const struct hm_file_info *info, void *arg), void *arg);

/* One connected client of the daemon (hm_clients). */
struct hm_client_info {
	uint32_t pid, uid;
	const char *name;		/* its program's name; valid during the callback */
	unsigned handles;		/* files open now */
	unsigned direct_grants;		/* of them, read directly now */
	uint64_t direct_reads;		/* reads it served itself, as it reports them */
	uint64_t direct_bytes;
	uint64_t bytes_served;		/* file bytes the daemon gave it */
	int polling;			/* polling mode (a request ring) */
	int region_huge;		/* its shared region has huge pages (asked,
				 * and the system gives them to shared memory) */
	uint64_t connected_ms;		/* since it connected */
};
/* Calls cb for every connected client (this one included), fetching the
 * list a page at a time.  Needs an administrator. */
int hm_clients(hm_client *c, void (*cb)(const struct hm_client_info *info, void *arg), void *arg);

/*
 * How the reads of a file (hm_files_ways) or of a client (hm_clients_ways)
 * were served, and where a file is: through the daemon, or by the clients themselves from their
 * mappings (the direct tier), and there how, as the clients report it
 * (bounded by the daemon: libhotmap(3), hm_files_ways).  The library sets
 * size to the bytes it filled: fields past it are not there (a later
 * library may add some at the end).  A daemon or a client from before
 * hotmap 0.2.0 counts none of these: zero.
 */
struct hm_read_ways {
	size_t size;			/* sizeof the struct the library filled */
	uint64_t daemon_reads;		/* read requests the daemon took */
	uint64_t copy_reads;		/* direct: copied out of the mapping */
	uint64_t pread_reads;		/* direct: pread(2) on the client's own
					 * descriptor (the other direct reads
					 * are views, and reads at the end) */
	uint64_t probes;		/* of those copies and preads, the ones
					 * that went the other way to keep the
					 * copy policy's estimates */
	uint64_t populated_blocks;	/* 2 MiB blocks of mappings populated */
	uint64_t populate_ns;		/* the time that took */
	/* A file's only (hm_files_ways; a client's are zero): where it is,
	 * which decides how it is read.  Here and not in hm_file_info, whose
	 * size the ABI keeps (libhotmap(3), ABI). */
	int private_entry;		/* read through one client's descriptor, for
					 * that handle alone (FUSE, pseudo files):
					 * never cached, and not stale */
	int network;			/* on a network file system: read with pread,
					 * never mapped (libhotmap(3), "Network file
					 * systems") */
	char fs[32];			/* the file system: "ext4", "nfs", "fuse.sshfs" */
	/* A copy of the (network) file in the daemon's memory, which its
	 * clients read from (libhotmap(3), "Network file systems"): its
	 * bytes, 0 for none, and the milliseconds since it was filled. */
	uint64_t copy_bytes;
	uint64_t copy_age_ms;
};

/* hm_files and hm_clients with, for each file or client, how its reads
 * were served; valid during the callback. */
int hm_files_ways(hm_client *c,
		  void (*cb)(const struct hm_file_info *info, const struct hm_read_ways *ways,
			     void *arg),
		  void *arg);
int hm_clients_ways(hm_client *c,
		    void (*cb)(const struct hm_client_info *info, const struct hm_read_ways *ways,
			       void *arg),
		    void *arg);

/* What hm_evict did. */
struct hm_evicted {
	unsigned files;		/* cached files dropped */
	uint64_t mapped_bytes;	/* bytes of mappings unmapped with them */
	unsigned busy;		/* kept: a handle reads them */
};

/* Drops the daemon's cached file at path (or every cached file, path NULL)
 * if no handle reads it: its mapping and descriptor go, and the next open
 * starts afresh.  ENOENT when path is not cached.  Needs an administrator. */
int hm_evict(hm_client *c, const char *path, struct hm_evicted *out);

/* The daemon's configuration in force: cb once per key (once per root),
 * with its value as hotmapd.conf would spell it and where it came from
 * ("default", "FILE:LINE" or "command line"); the strings are valid during
 * the call.  The file the daemon read goes to path ("" for none; truncated
 * to pathlen).  Needs an administrator (EPERM). */
int hm_config(hm_client *c,
	      void (*cb)(const char *key, const char *value, const char *source, void *arg),
	      void *arg, char *path, size_t pathlen);

/* What hm_stop's daemon said. */
struct hm_stopped {
	uint32_t pid;		/* its pid, in its own pid namespace */
	int socket_kept;	/* the socket is systemd's (socket activation): it
				 * stays, and a new connection starts a daemon */
};

/* Asks the daemon to shut down, as SIGTERM does: it replies (into *out
 * unless NULL), then closes every connection, this one too, and removes
 * its socket (unless socket_kept).  Returns once the daemon has replied,
 * not once it is gone.  Needs an administrator. */
int hm_stop(hm_client *c, struct hm_stopped *out);

/* What hm_reload's cb is given, a line at a time. */
enum hm_reload_line {
	HM_RELOAD_ERROR,	/* "FILE:LINE: ...": the reload failed */
	HM_RELOAD_CHANGED,	/* "key = new (was old)": in force now */
	HM_RELOAD_KEPT,		/* "key changed from ...: needs a restart; keeping ..." */
};

/* Asks the daemon to read its configuration again, as SIGHUP does (the
 * way to reload on Windows).  cb (unless NULL) gets every line of what
 * happened, during the call; the file read goes to path ("" for built-in
 * defaults; truncated to pathlen; path may be NULL).  0 when the new
 * configuration is in force; -1 with errno EINVAL when it had errors and
 * the one in use is kept (the errors went to cb).  Needs an
 * administrator. */
int hm_reload(hm_client *c, void (*cb)(enum hm_reload_line kind, const char *line, void *arg),
	      void *arg, char *path, size_t pathlen);

#ifdef __cplusplus
}
#endif

#endif
