/* SPDX-License-Identifier: MIT */
/*
 * mkcorpus.c - writes the seed corpus of the frame and session fuzz
 * targets: valid frames of every message type, and client conversations
 * that reach the handshake and every request handler.
 *
 *   make tests/fuzz/mkcorpus && tests/fuzz/mkcorpus tests/fuzz/corpus
 *
 * A session input is one byte choosing the descriptors that come with the
 * first bytes (see fuzz_session.c), then the frames the client sends.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "proto/frame.h"
#include "proto/ring.h"

/* as in fuzz_session.c */
enum {
	FD_SHM_SEALED = 1 << 0,
	FD_SMALL = 1 << 1,
	FD_SHM_UNSEALED = 1 << 2,
	FD_DIR = 1 << 3,
	FD_PIPE = 1 << 4,
	FD_BIG = 1 << 5,
	FD_WRONLY = 1 << 6,
	FD_SOCKET = 1 << 7,
};
#define ROOT		"/proc/self/cwd"
#define SHM_SIZE	(4 * HM_RING_BYTES)

static uint8_t buf[1 << 20];
static size_t len;
static uint32_t next_id;

static void
die(const char *what)
{
	fprintf(stderr, "mkcorpus: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void
start(uint8_t sel)
{
	len = 0;
	next_id = 1;
	if (sel != 0xff) {
		buf[len++] = sel;
		buf[len++] = 0;		/* mode: no ring contents, page cache as it is */
	}
}

static void
frame(uint16_t type, const ProtobufCMessage *m)
{
	int n = frame_encode(type, next_id++, 0, m, 0, buf + len, sizeof buf - len);

	if (n < 0) {
		errno = -n;
		die("frame_encode");
	}
	len += (size_t)n;
}

static void
save(const char *dir, const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(buf, 1, len, f) != len || fclose(f) != 0)
		die(path);
}

static void
hello(uint64_t shm_size, uint32_t ring)
{
	Hotmap__Hello m = HOTMAP__HELLO__INIT;

	m.version = HM_PROTO_VERSION;
	m.features = HM_FEATURES_ALL;
	m.client_name = "fuzz";
	m.shm_size = shm_size;
	m.ring_entries = ring;
	frame(HM_MSG_HELLO, &m.base);
}

static void
open_path(const char *path, uint32_t policy, int warm)
{
	Hotmap__Open m = HOTMAP__OPEN__INIT;

	m.by_path = 1;
	m.path = (char *)path;
	m.policy = policy;
	m.warm = warm;
	frame(HM_MSG_OPEN, &m.base);
}

static void
open_fd(uint32_t policy)
{
	Hotmap__Open m = HOTMAP__OPEN__INIT;

	m.policy = policy;
	frame(HM_MSG_OPEN, &m.base);
}

static void
read_(uint64_t handle, uint64_t offset, uint64_t length, int to_shm, uint64_t shm_offset)
{
	Hotmap__Read m = HOTMAP__READ__INIT;

	m.handle = handle;
	m.offset = offset;
	m.length = length;
	m.to_shm = to_shm;
	m.shm_offset = shm_offset;
	frame(HM_MSG_READ, &m.base);
}

static void
handle_msg(uint16_t type, uint64_t handle)
{
	Hotmap__StatRequest s = HOTMAP__STAT_REQUEST__INIT;
	Hotmap__Close c = HOTMAP__CLOSE__INIT;

	if (type == HM_MSG_STAT) {
		s.handle = handle;
		frame(type, &s.base);
	} else {
		c.handle = handle;
		frame(type, &c.base);
	}
}

static void
warm(uint64_t handle, uint64_t offset, uint64_t length)
{
	Hotmap__Warm m = HOTMAP__WARM__INIT;

	m.handle = handle;
	m.offset = offset;
	m.length = length;
	frame(HM_MSG_WARM, &m.base);
}

static void
simple(uint16_t type)
{
	Hotmap__Ping ping = HOTMAP__PING__INIT;
	Hotmap__StatsRequest stats = HOTMAP__STATS_REQUEST__INIT;
	Hotmap__Files files = HOTMAP__FILES__INIT;
	Hotmap__Evict evict = HOTMAP__EVICT__INIT;
	Hotmap__RingKick kick = HOTMAP__RING_KICK__INIT;
	Hotmap__ConfigRequest config = HOTMAP__CONFIG_REQUEST__INIT;

	switch (type) {
	case HM_MSG_PING: frame(type, &ping.base); break;
	case HM_MSG_STATS: frame(type, &stats.base); break;
	case HM_MSG_FILES: frame(type, &files.base); break;
	case HM_MSG_EVICT: evict.all = 1; frame(type, &evict.base); break;
	case HM_MSG_RING_KICK: frame(type, &kick.base); break;
	case HM_MSG_CONFIG: frame(type, &config.base); break;
	}
}

/* One frame of every type, with its fields set, as either side sends it. */
static void
frames(const char *dir)
{
	Hotmap__HelloReply hr = HOTMAP__HELLO_REPLY__INIT;
	Hotmap__OpenReply or = HOTMAP__OPEN_REPLY__INIT;
	Hotmap__ReadReply rr = HOTMAP__READ_REPLY__INIT;
	Hotmap__StatReply sr = HOTMAP__STAT_REPLY__INIT;
	Hotmap__CloseReply cr = HOTMAP__CLOSE_REPLY__INIT;
	Hotmap__PingReply pr = HOTMAP__PING_REPLY__INIT;
	Hotmap__StatsReply str = HOTMAP__STATS_REPLY__INIT;
	Hotmap__StatsReply__Stat st[2], *stp[2] = { &st[0], &st[1] };
	Hotmap__Error er = HOTMAP__ERROR__INIT;
	Hotmap__WarmReply wr = HOTMAP__WARM_REPLY__INIT;
	Hotmap__FilesReply fr = HOTMAP__FILES_REPLY__INIT;
	Hotmap__FilesReply__File ff, *ffp[1] = { &ff };
	Hotmap__EvictReply evr = HOTMAP__EVICT_REPLY__INIT;
	Hotmap__RingWake rw = HOTMAP__RING_WAKE__INIT;
	Hotmap__ConfigReply cfr = HOTMAP__CONFIG_REPLY__INIT;
	Hotmap__ConfigReply__Item ci, *cip[1] = { &ci };
	struct hm_frame_header h;
	char name[64];
	uint16_t t;

	start(0xff); hello(SHM_SIZE, HM_RING_ENTRIES); save(dir, "hello");
	start(0xff); open_path(ROOT "/small", 1, 1); save(dir, "open-path");
	start(0xff); open_fd(2); save(dir, "open-fd");
	start(0xff); read_(1, 4096, 65536, 1, 8192); save(dir, "read");
	start(0xff); handle_msg(HM_MSG_STAT, 1); save(dir, "stat");
	start(0xff); handle_msg(HM_MSG_CLOSE, 1); save(dir, "close");
	start(0xff); warm(1, 0, 1 << 20); save(dir, "warm");
	for (t = HM_MSG_PING; t <= HM_MSG__MAX; t++) {
		if (t == HM_MSG_PING || t == HM_MSG_STATS || t == HM_MSG_FILES || t == HM_MSG_EVICT ||
		    t == HM_MSG_RING_KICK || t == HM_MSG_CONFIG) {
			start(0xff);
			simple(t);
			snprintf(name, sizeof name, "%s", frame_type_name(t));
			save(dir, name);
		}
	}

	hr.version = 1; hr.features = 7; hr.server_version = "0.1.0"; hr.max_frame = 65536;
	hr.shm_accepted = 1; hr.shm_error = "no"; hr.ring_accepted = 1; hr.poll_us = 50;
	start(0xff); frame(HM_MSG_HELLO_REPLY, &hr.base); save(dir, "HELLO_REPLY");
	or.handle = 3; or.size = 4096; or.backend = 1; or.reason = 2; or.reason_text = "local file";
	start(0xff); frame(HM_MSG_OPEN_REPLY, &or.base); save(dir, "OPEN_REPLY");
	/* READ_DATA: a frame with raw bytes behind and MORE, then the total */
	start(0xff);
	len = HM_FRAME_HEADER_SIZE;
	h = (struct hm_frame_header){ 0, 8, HM_MSG_READ_DATA, HM_PROTO_VERSION, HM_FLAG_MORE, 9 };
	frame_header_encode(&h, buf);
	memcpy(buf + len, "rawbytes", 8);
	len += 8;
	rr.total = 8;
	frame(HM_MSG_READ_DATA, &rr.base);
	save(dir, "READ_DATA");
	sr.size = 1; sr.backend = 2; sr.reason = 3; sr.reason_text = "x"; sr.dev = 2049;
	sr.ino = 12; sr.mtime_ns = -5; sr.mode = 0100644; sr.mapped_length = 4096; sr.handles = 2;
	start(0xff); frame(HM_MSG_STAT_REPLY, &sr.base); save(dir, "STAT_REPLY");
	start(0xff); frame(HM_MSG_CLOSE_REPLY, &cr.base); save(dir, "CLOSE_REPLY");
	pr.server_version = "0.1.0"; pr.uptime_us = 123456; pr.pid = 42;
	start(0xff); frame(HM_MSG_PING_REPLY, &pr.base); save(dir, "PING_REPLY");
	hotmap__stats_reply__stat__init(&st[0]);
	hotmap__stats_reply__stat__init(&st[1]);
	st[0].key = "version"; st[0].text = "0.1.0"; st[1].key = "clients"; st[1].value = 3;
	str.n_stats = 2; str.stats = stp;
	start(0xff); frame(HM_MSG_STATS_REPLY, &str.base); save(dir, "STATS_REPLY");
	er.error = EACCES; er.message = "not beneath a root of hotmapd";
	start(0xff); frame(HM_MSG_ERROR, &er.base); save(dir, "ERROR");
	wr.warmed = 4096;
	start(0xff); frame(HM_MSG_WARM_REPLY, &wr.base); save(dir, "WARM_REPLY");
	hotmap__files_reply__file__init(&ff);
	ff.path = "/srv/a"; ff.size = 10; ff.backend = 1; ff.reason = 1; ff.handles = 1;
	ff.stale = 1; ff.hits = 5; ff.bytes = 50; ff.idle_ms = 7; ff.resident_pct = -1;
	ff.resident_bytes = 4096;
	fr.n_files = 1; fr.files = ffp; fr.total = 1; fr.next = 1;
	start(0xff); frame(HM_MSG_FILES_REPLY, &fr.base); save(dir, "FILES_REPLY");
	evr.files = 2; evr.mapped_bytes = 8192; evr.busy = 1;
	start(0xff); frame(HM_MSG_EVICT_REPLY, &evr.base); save(dir, "EVICT_REPLY");
	start(0xff); frame(HM_MSG_RING_WAKE, &rw.base); save(dir, "RING_WAKE");
	hotmap__config_reply__item__init(&ci);
	ci.key = "root"; ci.value = "/srv"; ci.source = "default";
	cfr.n_items = 1; cfr.items = cip; cfr.path = "/etc/hotmap/hotmapd.conf";
	start(0xff); frame(HM_MSG_CONFIG_REPLY, &cfr.base); save(dir, "CONFIG_REPLY");

	/* headers the check refuses */
	start(0xff); hello(0, 0); buf[10] = 2; save(dir, "bad-version");
	start(0xff); simple(HM_MSG_PING); buf[8] = 99; save(dir, "bad-type");
	start(0xff); simple(HM_MSG_PING); buf[2] = 2; save(dir, "oversized");
	start(0xff); simple(HM_MSG_PING); buf[11] = HM_FLAG_MORE; save(dir, "bad-flags");
	/* several frames in a row */
	start(0xff); hello(0, 0); simple(HM_MSG_PING); open_path(ROOT "/big", 0, 0);
	read_(1, 0, 100, 0, 0); save(dir, "stream");
}

/* Conversations a client may have with hotmapd. */
static void
sessions(const char *dir)
{
	static const char *const paths[] = {
		ROOT "/small", ROOT "/big", ROOT "/empty", ROOT "/dir", ROOT "/dir/nested",
		ROOT "/link", ROOT "/up/etc/passwd", ROOT "/out", ROOT "/fifo", ROOT "/missing",
		ROOT "/../../etc/passwd", "small", "/etc/passwd", ROOT, "/proc/self/fd/0",
	};
	size_t i;

	start(0); hello(0, 0); save(dir, "hello");
	start(0); hello(0, 0); simple(HM_MSG_PING); simple(HM_MSG_STATS); simple(HM_MSG_CONFIG);
	simple(HM_MSG_FILES); save(dir, "admin");

	start(0); hello(0, 0); open_path(ROOT "/small", 0, 0); read_(1, 0, 4096, 0, 0);
	read_(1, 4000, 200, 0, 0); read_(1, 0, 0, 0, 0); handle_msg(HM_MSG_STAT, 1); warm(1, 0, 0);
	simple(HM_MSG_FILES); handle_msg(HM_MSG_CLOSE, 1); handle_msg(HM_MSG_STAT, 1);
	save(dir, "open-read-close");

	start(0); hello(0, 0); open_path(ROOT "/big", 0, 0); read_(1, 0, 1 << 20, 0, 0);
	read_(1, 0, 65536, 0, 0); read_(1, 65536, 65536, 0, 0); read_(1, 131072, 65536, 0, 0);
	save(dir, "stream-big");

	start(0); hello(0, 0); open_path(ROOT "/big", 2, 1); open_path(ROOT "/big", 1, 0);
	warm(2, 4096, 1 << 30); read_(2, 500000, 200000, 0, 0); simple(HM_MSG_EVICT);
	read_(1, 0, 10, 0, 0); save(dir, "policies-warm-evict");

	start(FD_SMALL | FD_BIG); hello(0, 0); open_fd(0); open_fd(1); read_(1, 0, 4096, 0, 0);
	read_(2, 300000, 300000, 0, 0); handle_msg(HM_MSG_STAT, 2); save(dir, "open-fd");

	start(FD_SHM_SEALED | FD_SMALL); hello(SHM_SIZE, 0); open_fd(0);
	read_(1, 0, 4096, 1, 0); read_(1, 0, 4096, 1, SHM_SIZE - 4096);
	read_(1, 0, 4096, 1, SHM_SIZE - 100); save(dir, "shm");

	/* past the fuzz build's bounds (fuzz.am): region reads too long to
	 * copy inline, a job in steps, more frames than one pass takes */
	start(FD_SHM_SEALED | FD_BIG); hello(SHM_SIZE, 0); open_fd(0);
	for (i = 0; i < 6; i++)
		read_(1, i * 8192, 8192, 1, 0);
	read_(1, 0, SHM_SIZE, 1, 0); warm(1, 0, 1 << 20); simple(HM_MSG_PING);
	save(dir, "shm-bounds");

	start(FD_SHM_SEALED); hello(SHM_SIZE, HM_RING_ENTRIES); open_path(ROOT "/small", 0, 0);
	simple(HM_MSG_RING_KICK); read_(1, 0, 100, 1, 2 * HM_RING_BYTES); save(dir, "ring");
	{
		/* requests already in the ring: good, past the region, a bad
		 * handle, before the data area; then the kicks */
		struct hm_ring_sqe e[4] = {
			{ 1, 0, 4096, 2 * HM_RING_BYTES, 1, 0 },
			{ 1, 100, 4096, SHM_SIZE - 100, 2, 0 },
			{ 7, 0, 1, 2 * HM_RING_BYTES, 3, 0 },
			{ 1, 0, 8, 0, 4, 0 },
		};

		start(FD_SHM_SEALED);
		buf[1] = 1;	/* MODE_RING */
		buf[len++] = 4;	/* sq_tail */
		buf[len++] = 0;	/* cq_head */
		buf[len++] = 1;	/* client_idle: wants a RING_WAKE */
		buf[len++] = 4;	/* entries */
		memcpy(buf + len, e, sizeof e);
		len += sizeof e;
		hello(SHM_SIZE, HM_RING_ENTRIES); open_path(ROOT "/small", 0, 0);
		simple(HM_MSG_RING_KICK); simple(HM_MSG_PING); simple(HM_MSG_RING_KICK);
		save(dir, "ring-requests");
		start(FD_SHM_SEALED);
		buf[1] = 1;
		buf[len++] = 200;	/* sq_tail far ahead: disconnected */
		buf[len++] = 0;
		buf[len++] = 0;
		buf[len++] = 0;
		hello(SHM_SIZE, HM_RING_ENTRIES); simple(HM_MSG_RING_KICK);
		save(dir, "ring-corrupt");
	}
	start(0); buf[1] = 2;	/* MODE_COLD: reads of big go to the workers */
	hello(0, 0); open_path(ROOT "/big", 0, 0); open_path(ROOT "/big", 2, 0);
	read_(1, 0, 65536, 0, 0); read_(2, 65536, 65536, 0, 0); read_(1, 0, 600000, 0, 0);
	warm(2, 0, 1 << 20);
	save(dir, "cold-workers");
	start(FD_SHM_SEALED); buf[1] = 2;
	hello(SHM_SIZE, 0); open_path(ROOT "/big", 0, 0); read_(1, 200000, 8192, 1, 4096);
	read_(1, 0, 4096, 0, 0); save(dir, "cold-shm");

	/* MODE_RELOAD at pass 0 and at pass 1: the budget, the backend and
	 * cross-mounts change under open handles and reads in flight */
	for (i = 0; i < 2; i++) {
		start(FD_SHM_SEALED | FD_BIG); buf[1] = (uint8_t)(4 | i << 4);
		hello(SHM_SIZE, 0); open_path(ROOT "/big", 0, 0); open_fd(0);
		read_(1, 0, 65536, 1, 4096); read_(2, 100000, 300000, 0, 0); warm(1, 0, 1 << 20);
		open_path(ROOT "/small", 0, 0); open_path(ROOT "/dir/nested", 0, 0);
		read_(3, 0, 4096, 0, 0); read_(1, 500000, 8192, 0, 0); simple(HM_MSG_EVICT);
		simple(HM_MSG_FILES);
		save(dir, i == 0 ? "reload-first" : "reload-mid");
	}

	start(FD_SHM_UNSEALED); hello(SHM_SIZE, HM_RING_ENTRIES); simple(HM_MSG_RING_KICK);
	save(dir, "shm-unsealed");
	start(0); hello(SHM_SIZE, 0); read_(1, 0, 1, 1, 0); save(dir, "shm-no-fd");

	start(FD_DIR | FD_PIPE | FD_WRONLY | FD_SOCKET); hello(0, 0);
	open_fd(0); open_fd(0); open_fd(0); open_fd(0); open_fd(0); save(dir, "bad-fds");

	start(0); hello(0, 0);
	for (i = 0; i < sizeof paths / sizeof paths[0]; i++)
		open_path(paths[i], 0, 0);
	open_path(ROOT "/small", 7, 0);
	save(dir, "paths");

	start(0); hello(0, 0); open_path(ROOT "/small", 0, 0);
	read_(1, UINT64_MAX - 10, 100, 0, 0); read_(1, INT64_MAX, 1, 0, 0); read_(9, 0, 1, 0, 0);
	read_(1, 0, 1, 1, 0); warm(1, UINT64_MAX, 1); warm(7, 0, 1);
	handle_msg(HM_MSG_CLOSE, 0); handle_msg(HM_MSG_CLOSE, 1); handle_msg(HM_MSG_CLOSE, 1);
	save(dir, "bad-handles");

	start(0); simple(HM_MSG_PING); save(dir, "before-hello");
	start(0); hello(0, 0); hello(0, 0); save(dir, "hello-twice");
	{
		Hotmap__Hello m = HOTMAP__HELLO__INIT;

		m.version = 9;
		start(0); frame(HM_MSG_HELLO, &m.base); save(dir, "hello-version");
	}
	start(0); hello(0, 0); simple(HM_MSG_PING); buf[len - 8] = HM_MSG_PING_REPLY;
	save(dir, "reply-type");
	start(0); hello(0, 0); simple(HM_MSG_PING); buf[len - 6] = 2; save(dir, "bad-frame-version");
	start(0); hello(0, 0); open_path(ROOT "/small", 0, 0); len -= 3; save(dir, "truncated");
	{
		Hotmap__StatsRequest m = HOTMAP__STATS_REQUEST__INIT;
		Hotmap__Evict e = HOTMAP__EVICT__INIT;
		Hotmap__Files f = HOTMAP__FILES__INIT;

		start(0); hello(0, 0); open_path(ROOT "/small", 0, 0);
		m.reset = 1; frame(HM_MSG_STATS, &m.base);
		e.dev = 1; e.ino = 2; frame(HM_MSG_EVICT, &e.base);
		f.offset = 1; frame(HM_MSG_FILES, &f.base);
		f.offset = 100; frame(HM_MSG_FILES, &f.base);
		save(dir, "stats-reset-evict-files");
	}
}

int
main(int argc, char **argv)
{
	char d[4096];

	if (argc != 2) {
		fprintf(stderr, "usage: mkcorpus DIR (writes DIR/frame and DIR/session)\n");
		return 2;
	}
	snprintf(d, sizeof d, "%s/frame", argv[1]);
	if (mkdir(d, 0755) < 0 && errno != EEXIST)
		die(d);
	frames(d);
	snprintf(d, sizeof d, "%s/session", argv[1]);
	if (mkdir(d, 0755) < 0 && errno != EEXIST)
		die(d);
	sessions(d);
	return 0;
}
