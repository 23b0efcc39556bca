/* SPDX-License-Identifier: MIT */
/*
 * harness.h - what the integration tests share: a real hotmapd on a
 * private socket, files of deterministic pseudo-random content, reads
 * checked byte for byte against pread(2), and a raw wire client for the
 * tests that must speak the protocol wrong on purpose.
 *
 * What it must not do: link anything of the daemon's or the library's
 * internals.  The daemon is the installed program ($HOTMAPD), the library
 * its public header; the wire format is written out here by hand from
 * proto/frame.h and proto/hotmap.proto, so a change of the format that
 * breaks old clients breaks these tests too.
 *
 * Functions that assert (harness_start, harness_check_read, ...) use
 * cmocka's assertions and may only be called from a test's own thread.
 * The harness_compare_* functions do not assert and may run in any thread.
 */
#ifndef HOTMAP_TESTS_HARNESS_H
#define HOTMAP_TESTS_HARNESS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "client/hotmap.h"

/* How to start hotmapd. */
struct harness_opts {
	const char *backend;	/* --backend NAME; NULL: the default (auto) */
	bool with_root;		/* --root DIR/root */
	bool keep_notify;	/* pass NOTIFY_SOCKET and WATCHDOG_USEC on */
	const char *extra[8];	/* more options for hotmapd, NULL-terminated */
	/* Not 0: run hotmapd as this uid (and gid), with CAP_LEASE its only
	 * capability (ambient, as hotmapd.service's AmbientCapabilities=
	 * gives it), through setpriv(1); the directory becomes that uid's.
	 * Needs root and setpriv: harness_can_run_as says. */
	uid_t run_as;
	/* Not 0: hotmapd's RLIMIT_NOFILE, soft and hard, set before its
	 * exec (it raises the soft limit to the hard one at start).
	 * harness_can_nofile says whether it can be had. */
	unsigned long nofile;
};

/* Whether harness_opts.run_as can be honoured here (root, setpriv). */
bool harness_can_run_as(void);
/* Whether harness_opts.nofile = n can be honoured here: n within this
 * process's hard limit, or one it may raise (CAP_SYS_RESOURCE). */
bool harness_can_nofile(unsigned long n);

struct harness {
	char dir[PATH_MAX];	/* mkdtemp directory, removed at the end */
	char sock[PATH_MAX];	/* DIR/sock */
	char log[PATH_MAX];	/* DIR/hotmapd.log: the daemon's stderr */
	char root[PATH_MAX];	/* DIR/root: exists always; --root only if asked */
	char outside[PATH_MAX];	/* DIR/outside: never beneath a root */
	pid_t pid;		/* the daemon; 0 once reaped */
	const struct harness_opts *opts;	/* how it was started */
};

/* Makes the directory and starts hotmapd --foreground --socket DIR/sock -v
 * on it; returns once the socket accepts connections.  Fails the test,
 * with the daemon's log, if it exits first or does not listen in time. */
struct harness *harness_start(const struct harness_opts *opts);
/* SIGTERM, then asserts that hotmapd exits 0 and has removed its socket;
 * removes the directory.  Takes NULL. */
void harness_stop(struct harness *h);
/* SIGKILL and reap (for tests of a vanished daemon): harness_stop then
 * only cleans up. */
void harness_kill(struct harness *h);
/* After harness_kill: starts hotmapd again on the same socket with the
 * same options, and returns once it accepts connections. */
void harness_restart(struct harness *h);

/* Whether a daemon accepts connections on the socket at path now. */
bool harness_socket_accepts(const char *path);

/* A connected client; fails the test if hm_connect fails. */
hm_client *harness_connect(const struct harness *h);
/* A client that reads granted files directly (the harness's daemon
 * grants them; the library's default is off there), promoting a file
 * after `after` reads, with the copy policy's knobs (HOTMAP_COPY_POLICY's
 * grammar; NULL: the defaults).  Fails the test when it cannot connect. */
hm_client *harness_connect_direct(const struct harness *h, int after, const char *policy);
/* A client with the fallback (HOTMAP_FALLBACK=local's hm_options.fallback),
 * direct reads on (1), off (0) or as the environment says (HM_DEFAULT).  Fails the test when
 * hm_connect_opts does. */
hm_client *harness_connect_local(const struct harness *h, int direct);
/* "DIR/name" into out (PATH_MAX bytes). */
void harness_path(const struct harness *h, const char *name, char *out);

/* RssAnon of pid in KiB (the heap and anonymous mappings, not the files
 * it maps), or -1.  Any thread. */
long harness_rss_anon_kib(pid_t pid);
/* How many descriptors pid has open (for this process, the one reading
 * the directory included), the highest in *maxfd; -1 when /proc cannot
 * tell.  Any thread. */
int harness_count_fds(pid_t pid, int *maxfd);
/* How many of this process's mappings (lines of /proc/self/maps) name
 * something that contains needle ("/memfd:hotmap-copy", "hotmap-region"). */
unsigned harness_count_maps(const char *needle);

/* Byte pos of the content for seed: the same function everywhere, so a
 * range of a file can be recomputed from (seed, offset). */
void harness_fill(void *buf, size_t len, uint64_t seed, uint64_t pos);
/* Creates (or replaces in place) path with size bytes of harness_fill
 * content. */
void harness_write_file(const char *path, uint64_t size, uint64_t seed);
/* Writes len bytes of harness_fill(seed) content at offset of path (in
 * place: same inode). */
void harness_rewrite(const char *path, uint64_t offset, size_t len, uint64_t seed);

/* CLOCK_MONOTONIC in milliseconds, and a sleep that resumes after
 * signals: for the tests' deadlines. */
int64_t harness_now_ms(void);
void harness_sleep_ms(unsigned ms);

/* xorshift64*: the tests' only source of randomness, seeded with fixed
 * values so that every run reads the same ranges. */
uint64_t harness_rand(uint64_t *state);

/*
 * Reads len bytes at offset through f and with pread(2) on fd, and
 * compares: the same return value, the same errno on failure, the same
 * bytes, and no byte written past what hm_pread returned.  buf and ref
 * hold at least len + HARNESS_SLACK bytes.  0 when they agree (*result,
 * if not NULL, is what both returned); -1 with a description in why.  Any
 * thread may call it.
 */
#define HARNESS_SLACK 64
int harness_compare_read(hm_file *f, int fd, uint64_t offset, size_t len,
			 uint8_t *buf, uint8_t *ref, ssize_t *result, char *why, size_t whylen);
/* The same, asserting (a failure names the caller's line); buffers are
 * the harness's own.  Returns what both returned (-1 when both failed
 * alike). */
#define harness_check_read(f, fd, offset, len) \
	harness_check_read_at(f, fd, offset, len, __FILE__, __LINE__)
ssize_t harness_check_read_at(hm_file *f, int fd, uint64_t offset, size_t len,
			      const char *file, int line);
/* Frees the buffers harness_check_read keeps. */
void harness_free_buffers(void);
/* In a child about to exec a helper (the daemon, faultfs): closes every
 * descriptor but 0, 1 and 2.  What ran the test gave it pipes (the TAP
 * driver's); a helper that outlived a test killed by its alarm held them
 * open, and make check waited on it for ever instead of failing. */
void harness_close_inherited(void);

/* A daemon statistic by key (hm_stats); fails the test if it is missing. */
uint64_t harness_stat(hm_client *c, const char *key);
/* Waits (up to a few seconds) until the statistic equals want; fails the
 * test with its last value otherwise. */
void harness_wait_stat(hm_client *c, const char *key, uint64_t want);

/* The log's length now: lines logged later are found with
 * harness_log_find. */
size_t harness_log_mark(const struct harness *h);
/* Whether a line logged after mark contains both needles (needle2 may be
 * NULL). */
bool harness_log_find(const struct harness *h, size_t mark, const char *needle,
		      const char *needle2);
/* The whole log, malloced, for failure messages. */
char *harness_log_read(const struct harness *h);

/* --- the raw wire, written out from proto/frame.h ------------------------ */

#define WIRE_HEADER_SIZE	16
#define WIRE_VERSION		1
#define WIRE_MAX_MESSAGE	(64u * 1024u)

enum wire_type {
	WIRE_HELLO = 1,
	WIRE_HELLO_REPLY = 2,
	WIRE_OPEN = 3,
	WIRE_OPEN_REPLY = 4,
	WIRE_READ = 5,
	WIRE_READ_DATA = 6,
	WIRE_STAT = 7,
	WIRE_CLOSE = 9,
	WIRE_PING = 11,
	WIRE_PING_REPLY = 12,
	WIRE_ERROR = 15,
	WIRE_WARM = 16,
};
#define WIRE_FLAG_MORE		0x01

struct wire_header {
	uint32_t length;
	uint32_t raw_length;
	uint16_t type;
	uint8_t version;
	uint8_t flags;
	uint32_t id;
};

/* A protobuf message being built: varint and string fields only. */
struct wire_msg {
	uint8_t b[1024];
	size_t n;
};
void wire_varint(struct wire_msg *m, unsigned field, uint64_t v);
void wire_string(struct wire_msg *m, unsigned field, const char *s);
/* The varint field's value in a received message, 0 when absent (proto3);
 * -1 when the message is malformed. */
int wire_get_varint(const uint8_t *msg, size_t len, unsigned field, uint64_t *out);
/* A string field, copied NUL-terminated into out ("" when absent). */
int wire_get_string(const uint8_t *msg, size_t len, unsigned field, char *out, size_t outlen);

/* The WIRE_HEADER_SIZE bytes of hdr into out (for frames built ahead of
 * sending, several in one write). */
void wire_put_header(uint8_t *out, const struct wire_header *hdr);
/* A connected socket, not yet greeted; fails the test otherwise. */
int wire_connect(const struct harness *h);
/* Writes header (version, flags as given) and body; pass_fd >= 0 goes
 * with it as SCM_RIGHTS.  0, or -errno. */
int wire_send(int fd, const struct wire_header *hdr, const void *body, size_t len, int pass_fd);
/* A well-formed frame of this version. */
int wire_send_msg(int fd, uint16_t type, uint32_t id, const struct wire_msg *m, int pass_fd);
/* Raw bytes, all of them.  0, or -errno. */
int wire_send_bytes(int fd, const void *p, size_t len);
/* The next frame: 1 with header and its message (at most cap bytes; raw
 * bytes after it are read and dropped), 0 at end of stream, -errno on an
 * error or after timeout_ms without a frame (-ETIMEDOUT). */
int wire_recv(int fd, struct wire_header *hdr, uint8_t *msg, size_t cap, int timeout_ms);
/* Reads and drops everything until the daemon closes; fails the test if
 * it does not within timeout_ms.  Returns the bytes dropped. */
size_t wire_expect_eof(int fd, int timeout_ms);
/* HELLO with protocol version, and the HELLO_REPLY; fails the test
 * otherwise. */
void wire_hello(int fd);

#endif
