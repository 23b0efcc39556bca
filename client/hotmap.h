/* SPDX-License-Identifier: MIT */
/*
 * hotmap.h - libhotmap, the client library of hotmapd.
 *
 * Read byte ranges of files through the hotmap daemon, which keeps their
 * memory mappings alive across requests and processes.  The calls mirror
 * open(2), pread(2), fstat(2) and close(2): a hm_file reads exactly what a
 * descriptor opened when hm_open returned would read.
 *
 * Errors are reported as -1 (or NULL) with errno set; the daemon's errno
 * travels back unchanged.  The library never logs, exits or aborts, and
 * never raises SIGPIPE.  A hm_client may be used from several threads at
 * once: its requests are serialised.  A child of fork(2) may use the
 * clients, files and views it inherited: its first call connects afresh,
 * and its views keep the bytes they had at the fork.  See libhotmap(3).
 */
#ifndef HOTMAP_H
#define HOTMAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef _WIN32
/*
 * errno values libhotmap reports that mingw-w64's <errno.h> lacks; the
 * same numbers as proto/hm_errno.h, which the daemon and library use.
 */
#include <errno.h>
#ifndef ESTALE
#define ESTALE 180
#endif
#ifndef EUSERS
#define EUSERS 181
#endif
#ifndef ESHUTDOWN
#define ESHUTDOWN 182
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hm_client hm_client;
typedef struct hm_file hm_file;

/* hm_open flags.  0 is AUTO: the daemon maps regular files on local file
 * systems and reads everything else with pread. */
#define HM_O_MMAP	0x1	/* require a mapping; fail if the file cannot be mapped */
#define HM_O_PREAD	0x2	/* read with pread, never map */
#define HM_O_PATH	0x4	/* let the daemon open the path (beneath its --root) */
#define HM_O_WARM	0x8	/* start bringing the whole file into memory now;
				 * read it directly at once when granted */
#define HM_O_DIRECT	0x10	/* read it directly at once when granted (see
				 * libhotmap(3), "Tiers"), not only once hot */

/* hm_stat backends */
#define HM_BACKEND_MMAP		1
#define HM_BACKEND_PREAD	2

/* hm_stat reasons: why the backend was chosen (the wire's Reason values,
 * proto/hotmap.proto; checked when libhotmap is built) */
#define HM_REASON_LOCAL_FILE	0	/* regular, non-empty file on a local file system */
#define HM_REASON_FORCED	1	/* HM_O_MMAP, HM_O_PREAD or the daemon's --backend */
#define HM_REASON_NOT_REGULAR	2	/* pipe, socket, device */
#define HM_REASON_EMPTY		3	/* size 0 when opened */
#define HM_REASON_NETWORK_FS	4	/* NFS, CIFS/SMB, 9p, FUSE, Lustre, Ceph, ... */
#define HM_REASON_PSEUDO_FS	5	/* procfs, sysfs, ...: the size does not tell the content */
#define HM_REASON_MMAP_FAILED	6	/* mmap(2) failed; reason_text says why */
#define HM_REASON_TOO_LARGE	7	/* larger than the daemon's address space */
#define HM_REASON_OVER_BUDGET	8	/* the daemon's mapped-bytes budget is in use by readers */

struct hm_stat {
	uint64_t size;		/* the file's size now */
	int backend;		/* HM_BACKEND_MMAP or HM_BACKEND_PREAD, fixed at open */
	int reason;		/* HM_REASON_* */
	char reason_text[128];	/* e.g. "mmap-failed: Cannot allocate memory" */
	uint64_t dev;		/* st_dev, st_ino of the file the handle reads */
	uint64_t ino;
	int64_t mtime_ns;	/* modification time, ns since the epoch */
	uint32_t mode;		/* st_mode */
	uint32_t handles;	/* handles open on this file, all clients */
	uint64_t mapped_length;	/* bytes of the daemon's mapping, 0 if none */
	int direct;		/* HM_DIRECT_*: the direct tier (libhotmap(3), Tiers) */
	char direct_text[96];	/* why not, when the daemon said no; else "";
				 * "local: ..." while read without the daemon
				 * (HM_FALLBACK_LOCAL) */
};

/* hm_stat direct */
#define HM_DIRECT_NO		0	/* read through the daemon */
#define HM_DIRECT_GRANTED	1	/* granted: read directly once hot */
#define HM_DIRECT_YES		2	/* read from this process's mapping now */

/* Connects to hotmapd.  socket_path NULL: $HOTMAP_SOCKET, else
 * /run/hotmap/hotmapd.sock as root, else $XDG_RUNTIME_DIR/hotmap/hotmapd.sock. */
hm_client *hm_connect(const char *socket_path);
/*
 * Options of one connection.  Start from HM_OPTIONS_INIT (every field
 * "default": the environment variable named, else the built-in default)
 * and set what you want; the library reads sizeof(struct hm_options) from
 * the first field, so that fields can be added.  Unlike the environment,
 * options are safe to choose per thread and per connection.
 */
struct hm_options {
	size_t size;		/* sizeof(struct hm_options) */
	int64_t shm_size;	/* HOTMAP_SHM_SIZE: the shared region's bytes; 0 none */
	int64_t shm_threshold;	/* HOTMAP_SHM_THRESHOLD: smallest read through it */
	int poll;		/* HOTMAP_POLL: 1 ask for the polling ring, 0 not */
	int64_t poll_us;	/* HOTMAP_POLL_US */
	int64_t reconnect_ms;	/* HOTMAP_RECONNECT_MS (hm_set_reconnect) */
	int direct;		/* HOTMAP_DIRECT: 1 read granted files directly, 0 never */
	int64_t direct_after;	/* HOTMAP_DIRECT_AFTER: reads of a granted file
				 * through the daemon before it is read directly */
	const char *copy_policy;	/* HOTMAP_COPY_POLICY: "name=value,...", over
					 * the environment's; NULL default (0.2.0) */
	int fallback;		/* HOTMAP_FALLBACK: HM_FALLBACK_LOCAL, or
				 * HM_FALLBACK_NONE (0.2.0, after copy_policy) */
};
#define HM_DEFAULT (-1)
#define HM_OPTIONS_INIT { sizeof(struct hm_options), HM_DEFAULT, HM_DEFAULT, HM_DEFAULT, \
			  HM_DEFAULT, HM_DEFAULT, HM_DEFAULT, HM_DEFAULT, NULL, HM_DEFAULT }
/* hm_options fallback: what the client does when no daemon answers */
#define HM_FALLBACK_NONE	0	/* hm_connect fails; calls fail (the default) */
#define HM_FALLBACK_LOCAL	1	/* the library reads the files itself, on the
					 * process's own descriptors, until the daemon
					 * answers (libhotmap(3), "Without the daemon") */
/* hm_connect with options (NULL: all default).  EINVAL for a value out of
 * range or a size the library does not know. */
hm_client *hm_connect_opts(const char *socket_path, const struct hm_options *opts);

/* Closes the connection and frees every hm_file still open on it.  Takes
 * NULL. */
void hm_disconnect(hm_client *c);

/* Opens path.  By default the library opens it (so the caller's own
 * permissions apply), passes the descriptor to the daemon and closes it:
 * which drops every fcntl(2) lock the process holds on the file. */
hm_file *hm_open(hm_client *c, const char *path, int flags);
/* Opens the file of the caller's descriptor fd (readable, not O_PATH):
 * passed to the daemon as it is and never closed by the library, so the
 * caller's fcntl locks hold.  A reconnect passes fd again: keep it open
 * until hm_close.  flags as hm_open's, without HM_O_PATH (EINVAL). */
hm_file *hm_open_fd(hm_client *c, int fd, int flags);
#ifdef _WIN32
/* Windows: opens the file of the caller's HANDLE (a file opened with
 * GENERIC_READ or FILE_READ_DATA, a disk file): the daemon duplicates it
 * from this process (DuplicateHandle) and the library never closes it.
 * A reconnect passes it again: keep it open until hm_close.  hm_open_fd
 * works too, with a CRT descriptor (its _get_osfhandle handle); hm_open
 * opens the file itself, sharing read, write and delete, and closes its
 * handle once the daemon has its copy.  flags as hm_open_fd's. */
hm_file *hm_open_handle(hm_client *c, void *handle, int flags);
#endif
/* pread(2) on the file: bytes read, short only at end of file, 0 at or
 * past it; -1 and errno on error. */
ssize_t hm_pread(hm_file *f, void *buf, size_t len, uint64_t offset);
int hm_stat(hm_file *f, struct hm_stat *st);

/* Many reads, across files of one client, in one round trip per window of
 * up to 256.  Each io gets its own result: bytes read (as hm_pread) or a
 * negative errno.  Returns 0 when every io has its result; -1 and errno
 * when the connection failed (the ios not yet answered carry that error). */
struct hm_io {
	hm_file *file;
	uint64_t offset;
	size_t len;
	void *buf;
	ssize_t result;
};
int hm_read_batch(hm_client *c, struct hm_io *io, size_t n);

/* A read whose bytes stay in the client's shared region until released:
 * one copy in all, from the daemon's mapping to the region.  data and len
 * are valid until hm_view_release, even across other calls and after
 * hm_disconnect.  len is short only at end of file.  When the region is
 * full, or there is none, the view is filled over the socket into memory
 * of its own.  -1 and errno on failure (v is then empty). */
struct hm_view {
	const void *data;
	size_t len;
	void *priv_[4];		/* private */
};
int hm_view_range(hm_file *f, uint64_t offset, size_t len, struct hm_view *v);
/* Gives the view's bytes back.  Takes an empty or released view. */
void hm_view_release(struct hm_view *v);
/* Many views, across files of one client, in one call: the data loader's
 * batch.  Ranges of files read directly are views into their mappings;
 * the others are read in one round trip per window of up to 256, into
 * the region (or memory of their own).  Each io gets its view (release it
 * with hm_view_release) or, with error set to an errno, an empty one.
 * Returns 0 when every io has its answer; -1 and errno when the
 * connection failed (the ios not yet answered carry that error). */
struct hm_view_io {
	hm_file *file;
	uint64_t offset;
	size_t len;
	struct hm_view view;
	int error;
};
int hm_view_batch(hm_client *c, struct hm_view_io *io, size_t n);
/* Whether the view still shows the file's bytes: 0; or -1 with errno
 * ESTALE (a view into a directly read file that has been written to or
 * evicted since: its bytes may differ from the file's now) or EIO (the
 * file shrank under the view: the lost part reads as zeros).  A view of
 * the region or the socket is a copy and always 0. */
int hm_view_check(const struct hm_view *v);

/*
 * How this process has read the file since hm_open: which way each read
 * went, and what the direct tier's copy policy estimates (libhotmap(3),
 * COPY POLICY).  Local: no round trip.  Set size to sizeof(struct
 * hm_read_stats) first; the library fills that many bytes (fields may be
 * added at the end).  0, or -1 and errno EINVAL for a size it does not
 * know.
 */
struct hm_read_stats {
	size_t size;		/* sizeof(struct hm_read_stats), set by the caller */
	uint64_t daemon_reads;	/* through the daemon: socket, region or ring */
	uint64_t pread_reads;	/* pread(2) on this process's own descriptor */
	uint64_t copy_reads;	/* copied out of touched pages of the mapping */
	uint64_t touch_reads;	/* copied, touching pages for the first time */
	uint64_t view_reads;	/* views pointing into the mapping */
	uint64_t probes;	/* of the preads and copies, those that went the
				 * other way to keep both estimates */
	uint64_t populates;	/* 2 MiB blocks populated */
	uint64_t populate_ns;	/* the time they took */
	uint64_t forgets;	/* copy estimates forgotten (they lost too long) */
	/* the estimates now, ns (0: not measured), and the thresholds */
	uint32_t copy_ns;	/* a small read copied out of touched pages */
	uint32_t pread_ns;	/* a small pread */
	uint32_t touch_ns;	/* a page's first touch, with its copy */
	uint32_t block_ns;	/* populating a block */
	uint32_t touch_after;	/* preads of a page before it is touched */
	uint32_t populate_after;	/* of a block before it is populated (1:
					 * at its first read, the prior) */
	int direct;		/* HM_DIRECT_*: where the file is read now */
};
int hm_read_stats(hm_file *f, struct hm_read_stats *st);

/* Brings [offset, offset + len) of the file into memory in the daemon
 * (its mapping's page tables, or the page cache) and returns when done:
 * the bytes of the range inside the file, or -1 and errno. */
ssize_t hm_warm(hm_file *f, uint64_t offset, uint64_t len);
/* Frees f whatever happens; -1 and errno if the daemon could not be told. */
int hm_close(hm_file *f);

/* The library's version, e.g. "0.1.0". */
const char *hm_version(void);

/* The daemon's message for the calling thread's last failed call (e.g.
 * "/srv/x: not beneath a root of hotmapd"), or "" when the failure was
 * local or there was none.  Valid until the thread's next call. */
const char *hm_last_error(void);

/* --- For tools (hotmapctl); stable like the rest.  The administrative
 * calls (stats, files, evict, config) are in hotmap_admin.h. ---------- */

struct hm_ping {
	char server_version[32];
	uint64_t uptime_us;
	uint32_t pid;
};
/* A round trip to the daemon. */
int hm_ping(hm_client *c, struct hm_ping *out);

/*
 * The reconnect policy, off by default (HOTMAP_RECONNECT_MS sets it at
 * hm_connect): when the daemon goes away, the next call spends up to
 * timeout_ms connecting again (0: off), reopens the client's open files as
 * hm_open or hm_open_fd did, and runs again.  A file that cannot be reopened fails with
 * ESTALE from then on.  Views keep their bytes.
 */
int hm_set_reconnect(hm_client *c, unsigned timeout_ms);

#ifdef __cplusplus
}
#endif

#endif
