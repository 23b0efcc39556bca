/* SPDX-License-Identifier: MIT */
/*
 * client_test.c - libhotmap (hotmap.dll) against a pipe server of its own
 * under wine, TAP.  The server thread speaks the real protocol through
 * proto/frame.c (HELLO/HELLO_REPLY, OPEN, READ, CLOSE, ERROR) and checks
 * the library's side of docs/windows.md section 6: the pipe name and
 * HOTMAP_SOCKET, HM_FEATURE_HANDLE_PULL with a handle value the server
 * duplicates (DuplicateHandle from the client's process) and reads, a
 * read split over several READ_DATA frames, an ERROR reply turned into
 * errno and hm_last_error, a server that hangs up in the middle of a
 * reply (an error, not a hang), and the shared region: a section whose
 * handle the server pulls and maps, reads and views copied into it; and
 * the access the library's pipe handle has (PIPE_CLIENT_ACCESS, no
 * FILE_CREATE_PIPE_INSTANCE), which is all hotmapd's DACL gives users.
 * Built by contrib/windows/build as hotmap-client.exe; run by
 * contrib/windows/test.
 *
 * "hotmap-client.exe serve NAME SECONDS" only serves \\.\pipe\NAME for
 * that long (reads of any file whose handle it can pull), for
 * contrib/windows/test to run hotmapctl.exe read against it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>
#include <winternl.h>

#include "client/hotmap.h"
#include "proto/frame.h"
#include "proto/hotmap.pb-c.h"
#include "proto/pipe_win32.h"

#define FILE_BYTES	300000u
#define READ_FRAMES	3	/* READ_DATA frames with bytes per read */

enum server_mode { SERVE, SERVE_ERROR, SERVE_HANG_UP, SERVE_HANG_UP_ONCE };

static wchar_t pipe_w[96];
static char pipe_a[96];
static volatile LONG mode = SERVE;
/* What the server saw (read by the tests once a call returned). */
static volatile LONG connections, hellos;
static uint64_t hello_features, hello_shm, hello_region;
static volatile LONG regions_mapped;	/* HELLOs whose section was pulled and mapped */
static volatile LONG shm_reads;		/* READs answered through the region */
static char hello_name[64];
static uint64_t open_value;
static bool open_by_path;
static volatile LONG opens_pulled;	/* OPENs whose handle was pulled and read whole */
static uint8_t expect[FILE_BYTES];

static int tests;

static void
ok(bool cond, const char *what)
{
	printf("%sok %d - %s\n", cond ? "" : "not ", ++tests, what);
	fflush(stdout);
}

/* --- the server ------------------------------------------------------------ */

struct conn {
	HANDLE pipe;
	uint8_t *file;		/* the client's file, read through the pulled handle */
	size_t size;
	uint8_t *region;	/* the client's section, pulled and mapped */
	size_t region_size;
};

static bool
read_all(HANDLE h, void *buf, size_t n)
{
	uint8_t *p = buf;

	while (n > 0) {
		DWORD got = 0;

		if (!ReadFile(h, p, (DWORD)n, &got, NULL) || got == 0)
			return false;
		p += got;
		n -= got;
	}
	return true;
}

static bool
write_all(HANDLE h, const void *buf, size_t n)
{
	const uint8_t *p = buf;

	while (n > 0) {
		DWORD put = 0;

		if (!WriteFile(h, p, (DWORD)n, &put, NULL) || put == 0)
			return false;
		p += put;
		n -= put;
	}
	return true;
}

static bool
send_frame(HANDLE h, uint16_t type, uint32_t id, uint8_t flags, const ProtobufCMessage *msg,
	   const void *raw, uint32_t raw_len)
{
	uint8_t buf[HM_FRAME_HEADER_SIZE + 4096];
	int n = frame_encode(type, id, flags, msg, raw_len, buf, sizeof buf);

	return n > 0 && write_all(h, buf, (size_t)n) && (raw_len == 0 || write_all(h, raw, raw_len));
}

static bool
send_error(HANDLE h, uint32_t id, int err, const char *text)
{
	Hotmap__Error e = HOTMAP__ERROR__INIT;

	e.error = err;
	e.message = (char *)text;
	return send_frame(h, HM_MSG_ERROR, id, 0, &e.base, NULL, 0);
}

/* The client's handle value, duplicated from its process into *dup. */
static bool
pull_handle(struct conn *c, uint64_t value, HANDLE *dup)
{
	ULONG pid = 0;
	HANDLE proc;
	bool good;

	if (!GetNamedPipeClientProcessId(c->pipe, &pid))
		return false;
	proc = OpenProcess(PROCESS_DUP_HANDLE, FALSE, pid);
	if (proc == NULL)
		return false;
	good = DuplicateHandle(proc, (HANDLE)(uintptr_t)value, GetCurrentProcess(), dup, 0, FALSE,
			       DUPLICATE_SAME_ACCESS);
	CloseHandle(proc);
	return good;
}

/* The region: the section pulled and mapped whole. */
static bool
pull_region(struct conn *c, uint64_t value, uint64_t size)
{
	HANDLE section;

	if (value == 0 || size == 0 || size > HM_SHM_MAX || !pull_handle(c, value, &section))
		return false;
	c->region = MapViewOfFile(section, FILE_MAP_READ | FILE_MAP_WRITE, 0, 0, (SIZE_T)size);
	CloseHandle(section);	/* the view keeps the section */
	c->region_size = c->region != NULL ? (size_t)size : 0;
	return c->region != NULL;
}

/* The pull: the client's handle value, duplicated from its process, read
 * whole from offset 0. */
static bool
pull_file(struct conn *c, uint64_t value)
{
	HANDLE dup = NULL;
	LARGE_INTEGER size;
	OVERLAPPED ov;
	DWORD got = 0;
	bool good = false;

	if (pull_handle(c, value, &dup) &&
	    GetFileSizeEx(dup, &size) && size.QuadPart > 0 && size.QuadPart <= 16 << 20) {
		free(c->file);
		c->size = (size_t)size.QuadPart;
		c->file = malloc(c->size);
		memset(&ov, 0, sizeof ov);
		good = c->file != NULL && ReadFile(dup, c->file, (DWORD)c->size, &got, &ov) &&
		       got == c->size;
	}
	if (dup != NULL)
		CloseHandle(dup);
	return good;
}

/* Serves one connection until the client goes (or the mode hangs up). */
static void
serve(struct conn *c)
{
	for (;;) {
		uint8_t head[HM_FRAME_HEADER_SIZE], *body = NULL;
		struct hm_frame_header h;
		ProtobufCMessage *msg = NULL;
		bool alive = true;

		if (!read_all(c->pipe, head, sizeof head))
			return;
		frame_header_decode(head, &h);
		if (frame_header_check(&h) < 0 || (body = malloc(h.length + 1)) == NULL ||
		    !read_all(c->pipe, body, h.length) || frame_decode(&h, body, &msg) < 0) {
			free(body);
			return;
		}
		free(body);
		switch (h.type) {
		case HM_MSG_HELLO: {
			Hotmap__Hello *m = (Hotmap__Hello *)msg;
			Hotmap__HelloReply r = HOTMAP__HELLO_REPLY__INIT;

			hello_features = m->features;
			hello_shm = m->shm_size;
			hello_region = m->region_handle;
			snprintf(hello_name, sizeof hello_name, "%s", m->client_name);
			r.shm_accepted = m->shm_size > 0 &&
					 pull_region(c, m->region_handle, m->shm_size);
			if (r.shm_accepted)
				InterlockedIncrement(&regions_mapped);
			InterlockedIncrement(&hellos);
			r.version = HM_PROTO_VERSION;
			r.features = m->features & (HM_FEATURE_OPEN_BY_PATH | HM_FEATURE_HANDLE_PULL |
						    (r.shm_accepted ? HM_FEATURE_SHM : 0));
			r.server_version = "client_test";
			alive = send_frame(c->pipe, HM_MSG_HELLO_REPLY, h.id, 0, &r.base, NULL, 0);
			break;
		}
		case HM_MSG_OPEN: {
			Hotmap__Open *m = (Hotmap__Open *)msg;
			Hotmap__OpenReply r = HOTMAP__OPEN_REPLY__INIT;

			open_value = m->handle_value;
			open_by_path = m->by_path;
			if (m->by_path || !pull_file(c, m->handle_value)) {
				alive = send_error(c->pipe, h.id, EBADF, "client_test: no handle to pull");
				break;
			}
			InterlockedIncrement(&opens_pulled);
			r.handle = 1;
			r.size = c->size;
			r.backend = 2;
			alive = send_frame(c->pipe, HM_MSG_OPEN_REPLY, h.id, 0, &r.base, NULL, 0);
			break;
		}
		case HM_MSG_READ: {
			Hotmap__Read *m = (Hotmap__Read *)msg;
			Hotmap__ReadReply more = HOTMAP__READ_REPLY__INIT, last = HOTMAP__READ_REPLY__INIT;
			size_t off = (size_t)m->offset, len = (size_t)m->length, step, sent = 0;
			int i;

			if (mode == SERVE_ERROR) {
				alive = send_error(c->pipe, h.id, EACCES, "client_test: refused on purpose");
				break;
			}
			if (c->file == NULL || m->handle != 1) {
				alive = send_error(c->pipe, h.id, EBADF, "client_test: no such handle");
				break;
			}
			if (off > c->size)
				off = c->size;
			if (len > c->size - off)
				len = c->size - off;
			if (m->to_shm) {
				if (c->region == NULL || m->shm_offset > c->region_size ||
				    m->length > c->region_size - m->shm_offset) {
					alive = send_error(c->pipe, h.id, EINVAL, "client_test: outside the region");
					break;
				}
				memcpy(c->region + m->shm_offset, c->file + off, len);
				InterlockedIncrement(&shm_reads);
				last.total = len;
				alive = send_frame(c->pipe, HM_MSG_READ_DATA, h.id, 0, &last.base, NULL, 0);
				break;
			}
			step = (len + READ_FRAMES - 1) / READ_FRAMES;
			for (i = 0; alive && sent < len; i++) {
				size_t n = len - sent < step ? len - sent : step;

				alive = send_frame(c->pipe, HM_MSG_READ_DATA, h.id, HM_FLAG_MORE, &more.base,
						   c->file + off + sent, (uint32_t)n);
				sent += n;
				if (mode == SERVE_HANG_UP ||
				    InterlockedCompareExchange(&mode, SERVE, SERVE_HANG_UP_ONCE) ==
				    SERVE_HANG_UP_ONCE) {
					FlushFileBuffers(c->pipe);
					alive = false;	/* in the middle of the reply */
				}
			}
			last.total = sent;
			if (alive)
				alive = send_frame(c->pipe, HM_MSG_READ_DATA, h.id, 0, &last.base, NULL, 0);
			break;
		}
		case HM_MSG_PING: {
			Hotmap__PingReply r = HOTMAP__PING_REPLY__INIT;

			r.server_version = "client_test";
			r.uptime_us = 1500000;
			r.pid = GetCurrentProcessId();
			alive = send_frame(c->pipe, HM_MSG_PING_REPLY, h.id, 0, &r.base, NULL, 0);
			break;
		}
		case HM_MSG_STATS: {
			/* what hotmapctl top shows: a version, the pid, clients,
			 * and a read counter that moves at every look */
			static volatile LONG looks;
			Hotmap__StatsReply r = HOTMAP__STATS_REPLY__INIT;
			Hotmap__StatsReply__Stat st[4], *sp[4];
			int k;

			for (k = 0; k < 4; k++) {
				hotmap__stats_reply__stat__init(&st[k]);
				sp[k] = &st[k];
			}
			st[0].key = "version";
			st[0].text = "client_test";
			st[1].key = "pid";
			st[1].value = GetCurrentProcessId();
			st[2].key = "clients";
			st[2].value = 1;
			st[3].key = "requests_read";
			st[3].value = 100u * (uint64_t)InterlockedIncrement(&looks);
			r.n_stats = 4;
			r.stats = sp;
			alive = send_frame(c->pipe, HM_MSG_STATS_REPLY, h.id, 0, &r.base, NULL, 0);
			break;
		}
		case HM_MSG_FILES: {
			Hotmap__FilesReply r = HOTMAP__FILES_REPLY__INIT;
			Hotmap__FilesReply__File fl, *fp = &fl;

			hotmap__files_reply__file__init(&fl);
			fl.path = "C:\\client_test\\hot.bin";
			fl.size = FILE_BYTES;
			fl.backend = 2;
			fl.hits = 7;
			fl.bytes = FILE_BYTES;
			fl.resident_pct = -1;
			r.n_files = 1;
			r.files = &fp;
			r.total = 1;
			r.next = 1;
			alive = send_frame(c->pipe, HM_MSG_FILES_REPLY, h.id, 0, &r.base, NULL, 0);
			break;
		}
		case HM_MSG_CLOSE: {
			Hotmap__CloseReply r = HOTMAP__CLOSE_REPLY__INIT;

			alive = send_frame(c->pipe, HM_MSG_CLOSE_REPLY, h.id, 0, &r.base, NULL, 0);
			break;
		}
		default:
			alive = send_error(c->pipe, h.id, ENOSYS, "client_test: not served here");
			break;
		}
		protobuf_c_message_free_unpacked(msg, NULL);
		if (!alive)
			return;
	}
}

static HANDLE
new_instance(bool first)
{
	return CreateNamedPipeW(pipe_w, PIPE_ACCESS_DUPLEX | (first ? FILE_FLAG_FIRST_PIPE_INSTANCE : 0),
				PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT | PIPE_REJECT_REMOTE_CLIENTS,
				PIPE_UNLIMITED_INSTANCES, 65536, 65536, 0, NULL);
}

/* One instance is always listening, the next made before one is served,
 * so that a client connecting while another is served finds one. */
static DWORD WINAPI
server_thread(void *arg)
{
	HANDLE next = arg;

	for (;;) {
		struct conn c = { .pipe = next };

		if (!ConnectNamedPipe(c.pipe, NULL) && GetLastError() != ERROR_PIPE_CONNECTED) {
			CloseHandle(c.pipe);
			return 1;
		}
		next = new_instance(false);
		InterlockedIncrement(&connections);
		serve(&c);
		FlushFileBuffers(c.pipe);
		DisconnectNamedPipe(c.pipe);
		CloseHandle(c.pipe);
		free(c.file);
		if (c.region != NULL)
			UnmapViewOfFile(c.region);
		if (next == INVALID_HANDLE_VALUE)
			return 1;
	}
}

/* A pipe of one instance, made again after each client: while one is
 * connected, the next finds it busy (ERROR_PIPE_BUSY). */
static wchar_t busy_w[96];
static char busy_a[96];

static DWORD WINAPI
busy_server_thread(void *arg)
{
	(void)arg;
	for (;;) {
		struct conn c = { 0 };

		c.pipe = CreateNamedPipeW(busy_w, PIPE_ACCESS_DUPLEX,
					  PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT, 1, 65536,
					  65536, 0, NULL);
		if (c.pipe == INVALID_HANDLE_VALUE)
			return 1;
		if (ConnectNamedPipe(c.pipe, NULL) || GetLastError() == ERROR_PIPE_CONNECTED)
			serve(&c);
		FlushFileBuffers(c.pipe);
		DisconnectNamedPipe(c.pipe);
		CloseHandle(c.pipe);
		free(c.file);
		if (c.region != NULL)
			UnmapViewOfFile(c.region);
	}
}

struct connect_job {
	const struct hm_options *opts;
	hm_client *c;
	ULONGLONG ms;
};

static DWORD WINAPI
connect_thread(void *arg)
{
	struct connect_job *j = arg;
	ULONGLONG t0 = GetTickCount64();

	j->c = hm_connect_opts(busy_a, j->opts);
	j->ms = GetTickCount64() - t0;
	return 0;
}

/* --- the tests ------------------------------------------------------------- */

static char path[MAX_PATH];

static bool
make_file(void)
{
	char dir[MAX_PATH];
	HANDLE h;
	DWORD put = 0;
	size_t i;

	for (i = 0; i < FILE_BYTES; i++)
		expect[i] = (uint8_t)(i * 7 % 251);
	if (GetTempPathA(sizeof dir, dir) == 0)
		return false;
	snprintf(path, sizeof path, "%shotmap-client-%lu.bin", dir, GetCurrentProcessId());
	h = CreateFileA(path, GENERIC_WRITE, 0, NULL, CREATE_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
	if (h == INVALID_HANDLE_VALUE)
		return false;
	WriteFile(h, expect, FILE_BYTES, &put, NULL);
	CloseHandle(h);
	return put == FILE_BYTES;
}

struct read_job {
	hm_file *f;
	uint8_t *buf;
	size_t len;
	ssize_t got;
	int err;
};

static DWORD WINAPI
read_thread(void *arg)
{
	struct read_job *j = arg;

	j->got = hm_pread(j->f, j->buf, j->len, 0);
	j->err = errno;
	return 0;
}

/* hm_pread in a thread of its own, given 20 s: a hang fails, not blocks. */
static bool
read_within(struct read_job *j)
{
	HANDLE t = CreateThread(NULL, 0, read_thread, j, 0, NULL);

	if (t == NULL)
		return false;
	if (WaitForSingleObject(t, 20000) != WAIT_OBJECT_0) {
		printf("# hm_pread still waiting after 20 s\n");
		return false;
	}
	CloseHandle(t);
	return true;
}

/* serve NAME SECONDS */
static int
serve_only(const char *name, const char *seconds)
{
	HANDLE first;

	snprintf(pipe_a, sizeof pipe_a, "\\\\.\\pipe\\%s", name);
	MultiByteToWideChar(CP_UTF8, 0, pipe_a, -1, pipe_w, 96);
	first = new_instance(true);
	if (first == INVALID_HANDLE_VALUE || CreateThread(NULL, 0, server_thread, first, 0, NULL) == NULL) {
		printf("# cannot serve %s (error %lu)\n", pipe_a, GetLastError());
		return 1;
	}
	printf("# serving %s\n", pipe_a);
	fflush(stdout);
	Sleep((DWORD)atoi(seconds) * 1000u);
	return 0;
}

/* The access this process's client ends of named pipes were opened
 * with (hotmap.dll's connections, the only ones here), ORed; 0: none. */
static ACCESS_MASK
client_pipe_access(void)
{
	ACCESS_MASK all = 0;
	uintptr_t v;

	for (v = 4; v < 0x10000; v += 4) {
		PUBLIC_OBJECT_BASIC_INFORMATION info;
		HANDLE h = (HANDLE)v;
		ULONG got;
		DWORD flags;

		if (GetFileType(h) != FILE_TYPE_PIPE ||
		    !GetNamedPipeInfo(h, &flags, NULL, NULL, NULL) || (flags & PIPE_SERVER_END))
			continue;
		if (NtQueryObject(h, ObjectBasicInformation, &info, sizeof info, &got) == 0)
			all |= info.GrantedAccess;
	}
	return all;
}

int
main(int argc, char **argv)
{
	static uint8_t buf[FILE_BYTES];
	struct hm_options no_region = HM_OPTIONS_INIT;
	struct hm_view v = { 0 };
	struct read_job jobs[4];
	HANDLE first, threads[4], own;
	hm_client *c;
	hm_file *f;
	char env[160];
	ssize_t n;
	int fd, i;
	bool all;

	if (argc == 4 && strcmp(argv[1], "serve") == 0)
		return serve_only(argv[2], argv[3]);
	printf("1..32\n");
	no_region.shm_size = 0;
	snprintf(pipe_a, sizeof pipe_a, "\\\\.\\pipe\\hotmap-client-test-%lu", GetCurrentProcessId());
	MultiByteToWideChar(CP_UTF8, 0, pipe_a, -1, pipe_w, 96);
	if (!make_file()) {
		printf("Bail out! cannot write the test file\n");
		return 1;
	}
	first = new_instance(true);
	if (first == INVALID_HANDLE_VALUE || CreateThread(NULL, 0, server_thread, first, 0, NULL) == NULL) {
		printf("Bail out! cannot start the pipe server\n");
		return 1;
	}

	/* by the pipe's name; no region: every byte comes over the pipe */
	c = hm_connect_opts(pipe_a, &no_region);
	ok(c != NULL, "hm_connect by pipe name");
	if (c == NULL) {
		printf("# errno %d: %s\n", errno, hm_last_error());
		return 1;
	}
	ok((hello_features & HM_FEATURE_HANDLE_PULL) && (hello_features & HM_FEATURE_SHM) &&
	   !(hello_features & HM_FEATURE_FD_PASSING) && hello_shm == 0 && hello_region == 0,
	   "HELLO offers HANDLE_PULL and SHM, not FD_PASSING; shm_size 0: no section");
	ok(strcmp(hello_name, "hotmap-client") == 0, "HELLO names the program (GetModuleFileNameW)");
	/* all that hotmapd's DACL gives users: a client that asked for
	 * GENERIC_WRITE would be refused by it on Windows */
	{
		ACCESS_MASK a = client_pipe_access();

		printf("# the pipe handle's access: 0x%lx\n", (unsigned long)a);
		ok(a == PIPE_CLIENT_ACCESS,
		   "the library's pipe handle has read and write-data access only, "
		   "no FILE_CREATE_PIPE_INSTANCE");
	}

	/* hm_open: the library opens the file, the server pulls the handle */
	f = hm_open(c, path, 0);
	ok(f != NULL && !open_by_path && open_value != 0 && opens_pulled == 1,
	   "hm_open sends a handle value the server duplicates and reads");
	if (f == NULL)
		printf("# errno %d: %s\n", errno, hm_last_error());
	ok(f != NULL && GetHandleInformation((HANDLE)(uintptr_t)open_value, &(DWORD){ 0 }) == 0,
	   "hm_open's own handle is closed once the daemon has its copy");

	/* a read over several READ_DATA frames */
	memset(buf, 0, sizeof buf);
	n = f != NULL ? hm_pread(f, buf, FILE_BYTES, 0) : -1;
	ok(n == FILE_BYTES && memcmp(buf, expect, FILE_BYTES) == 0,
	   "hm_pread of 300000 bytes in 3 READ_DATA frames");
	n = f != NULL ? hm_pread(f, buf, 1000, FILE_BYTES - 10) : -1;
	ok(n == 10 && memcmp(buf, expect + FILE_BYTES - 10, 10) == 0, "a read past the end is short");

	/* threads at once on one connection: the overlapped pipe lets one
	 * thread write its request while another waits for replies */
	all = true;
	for (i = 0; i < 4; i++) {
		jobs[i] = (struct read_job){ .f = f, .len = FILE_BYTES, .buf = malloc(FILE_BYTES) };
		threads[i] = CreateThread(NULL, 0, read_thread, &jobs[i], 0, NULL);
	}
	for (i = 0; i < 4; i++) {
		all = all && WaitForSingleObject(threads[i], 20000) == WAIT_OBJECT_0 &&
		      jobs[i].got == FILE_BYTES && memcmp(jobs[i].buf, expect, FILE_BYTES) == 0;
		free(jobs[i].buf);
	}
	ok(all, "4 threads read at once on one client");

	/* an ERROR reply: errno and hm_last_error */
	InterlockedExchange(&mode, SERVE_ERROR);
	errno = 0;
	n = f != NULL ? hm_pread(f, buf, 100, 0) : 0;
	ok(n == -1 && errno == EACCES, "an ERROR reply fails the read with its errno");
	ok(strcmp(hm_last_error(), "client_test: refused on purpose") == 0,
	   "hm_last_error is the ERROR's message");
	InterlockedExchange(&mode, SERVE);
	n = f != NULL ? hm_pread(f, buf, 100, 0) : -1;
	ok(n == 100 && memcmp(buf, expect, 100) == 0, "the connection serves on after an ERROR");
	ok(f != NULL && hm_close(f) == 0, "hm_close");

	/* hm_open_handle: the caller's handle, passed by value, not closed */
	own = CreateFileA(path, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			  NULL, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
	f = hm_open_handle(c, own, 0);
	ok(f != NULL && open_value == (uint64_t)(uintptr_t)own && opens_pulled == 2,
	   "hm_open_handle sends the caller's handle value");
	n = f != NULL ? hm_pread(f, buf, 4096, 8192) : -1;
	ok(n == 4096 && memcmp(buf, expect + 8192, 4096) == 0, "hm_pread through hm_open_handle");
	ok(f != NULL && hm_close(f) == 0 && GetHandleInformation(own, &(DWORD){ 0 }) != 0,
	   "the caller's handle stays open after hm_close");
	CloseHandle(own);
	f = hm_open_handle(c, INVALID_HANDLE_VALUE, 0);
	ok(f == NULL && errno == EBADF, "hm_open_handle(INVALID_HANDLE_VALUE): EBADF");

	/* hm_open_fd: a CRT descriptor, by its handle */
	fd = _open(path, _O_RDONLY | _O_BINARY);
	f = fd >= 0 ? hm_open_fd(c, fd, 0) : NULL;
	ok(f != NULL && open_value == (uint64_t)_get_osfhandle(fd) && opens_pulled == 3,
	   "hm_open_fd sends the descriptor's handle");
	if (f != NULL)
		hm_close(f);
	if (fd >= 0)
		_close(fd);
	hm_disconnect(c);

	/* HOTMAP_FALLBACK=local is not offered on Windows yet: said so */
	{
		struct hm_options fb = HM_OPTIONS_INIT;

		fb.fallback = HM_FALLBACK_LOCAL;
		errno = 0;
		ok(hm_connect_opts(pipe_a, &fb) == NULL && errno == ENOTSUP,
		   "hm_options.fallback: ENOTSUP on Windows");
	}

	/* HOTMAP_SOCKET names the pipe for hm_connect(NULL) */
	snprintf(env, sizeof env, "HOTMAP_SOCKET=%s", pipe_a);
	_putenv(env);
	i = hellos;
	c = hm_connect_opts(NULL, &no_region);
	ok(c != NULL && hellos == i + 1, "hm_connect(NULL) takes the pipe from HOTMAP_SOCKET");
	_putenv("HOTMAP_SOCKET=");

	/* a server that hangs up in the middle of a reply: an error, no hang */
	f = c != NULL ? hm_open(c, path, 0) : NULL;
	InterlockedExchange(&mode, SERVE_HANG_UP);
	jobs[0] = (struct read_job){ .f = f, .buf = buf, .len = FILE_BYTES };
	ok(f != NULL && read_within(&jobs[0]) && jobs[0].got == -1 &&
	   (jobs[0].err == ECONNRESET || jobs[0].err == EPIPE),
	   "a hang-up in the middle of a reply fails the read (ECONNRESET or EPIPE)");
	InterlockedExchange(&mode, SERVE);
	n = f != NULL ? hm_pread(f, buf, 10, 0) : 0;
	ok(n == -1, "the broken client fails its next call too");
	hm_disconnect(c);

	/* the shared region: a section the server pulls and maps */
	c = hm_connect(pipe_a);
	ok(c != NULL && hello_shm > 0 && hello_region != 0 && regions_mapped == 1,
	   "HELLO carries a section handle the server pulls and maps");
	f = c != NULL ? hm_open(c, path, 0) : NULL;
	i = shm_reads;
	memset(buf, 0, sizeof buf);
	n = f != NULL ? hm_pread(f, buf, FILE_BYTES, 0) : -1;
	ok(n == FILE_BYTES && memcmp(buf, expect, FILE_BYTES) == 0 && shm_reads == i + 1,
	   "hm_pread of 300000 bytes through the region");
	n = f != NULL ? hm_pread(f, buf, 100, 5) : -1;
	ok(n == 100 && memcmp(buf, expect + 5, 100) == 0 && shm_reads == i + 1,
	   "a read under the threshold comes over the pipe");
	ok(f != NULL && hm_view_range(f, 1000, 50000, &v) == 0 && v.len == 50000 &&
	   memcmp(v.data, expect + 1000, 50000) == 0 && shm_reads == i + 2,
	   "hm_view_range: a view into the region");
	hm_disconnect(c);	/* the view holds the region: still mapped */
	ok(v.data != NULL && memcmp(v.data, expect + 1000, 50000) == 0,
	   "the view keeps its bytes after hm_disconnect");
	hm_view_release(&v);
	c = hm_connect(pipe_a);
	ok(c != NULL && regions_mapped == 2, "a second client gets a region of its own");
	hm_disconnect(c);

	/* the reconnect policy: a hang-up, then the same read on a new
	 * connection with the file reopened (its handle pulled again) */
	no_region.reconnect_ms = 5000;
	c = hm_connect_opts(pipe_a, &no_region);
	no_region.reconnect_ms = HM_DEFAULT;
	f = c != NULL ? hm_open(c, path, 0) : NULL;
	i = opens_pulled;
	InterlockedExchange(&mode, SERVE_HANG_UP_ONCE);
	jobs[0] = (struct read_job){ .f = f, .buf = buf, .len = FILE_BYTES };
	memset(buf, 0, sizeof buf);
	ok(f != NULL && read_within(&jobs[0]) && jobs[0].got == FILE_BYTES &&
	   memcmp(buf, expect, FILE_BYTES) == 0 && opens_pulled == i + 1 && mode == SERVE,
	   "reconnect policy: a read cut by a hang-up runs again on a new connection");
	InterlockedExchange(&mode, SERVE);
	hm_disconnect(c);

	/* every instance busy: the connect waits for one (WaitNamedPipeW) */
	snprintf(busy_a, sizeof busy_a, "%s-busy", pipe_a);
	MultiByteToWideChar(CP_UTF8, 0, busy_a, -1, busy_w, 96);
	if (CreateThread(NULL, 0, busy_server_thread, NULL, 0, NULL) != NULL) {
		struct connect_job cj = { .opts = &no_region };
		HANDLE t;

		Sleep(200);
		c = hm_connect_opts(busy_a, &no_region);
		t = CreateThread(NULL, 0, connect_thread, &cj, 0, NULL);
		Sleep(1000);
		hm_disconnect(c);	/* the instance is made again for the next */
		ok(c != NULL && t != NULL && WaitForSingleObject(t, 10000) == WAIT_OBJECT_0 &&
		   cj.c != NULL && cj.ms >= 800,
		   "every instance busy: hm_connect waits for the next (ERROR_PIPE_BUSY)");
		if (cj.c == NULL || cj.ms < 800)
			printf("# second connect: %s after %llu ms, errno %d\n",
			       cj.c != NULL ? "connected" : "failed", (unsigned long long)cj.ms, errno);
		hm_disconnect(cj.c);
	} else {
		ok(false, "every instance busy: the busy pipe's server did not start");
	}

	/* nobody at the name */
	c = hm_connect("\\\\.\\pipe\\hotmap-client-test-nobody");
	ok(c == NULL && errno == ENOENT, "nobody at the pipe name: ENOENT");
	c = hm_connect("not-a-pipe\\at all");
	ok(c == NULL && errno == EINVAL, "a name that is no pipe's: EINVAL");

	DeleteFileA(path);
	return 0;
}
