/* SPDX-License-Identifier: MIT */
/*
 * smoke.c - the first Windows pieces of hotmap, end to end, in one program.
 *
 * What it is for: proving on Windows (and under wine) the mechanisms the
 * port is built on, before the daemon is: hotmap's own framing code
 * (proto/frame.c, the generated protobuf-c code, proto/vocab.c) exchanging
 * a HELLO over a named pipe with a security descriptor and overlapped I/O;
 * the portable files' Windows halves (the default endpoint, the probe
 * hotmapctl stop uses, platform_qsort_r);
 * the daemon's side learning who its client is (process id, token user);
 * a handle passed by DuplicateHandle, the way a descriptor goes with
 * SCM_RIGHTS on Linux; libevent's loop woken from another thread, as
 * pipe completions will wake it; and the guard (daemon/storage/guard_win32.c),
 * which must let a fault that is not its own crash (checked in a child
 * process of this program, "wild").  With "truncated PATH" it is the
 * guard's recovery test instead, which contrib/windows/test drives (it
 * truncates PATH from outside wine).
 *
 * What it must not do: become the transport.  The real one goes behind
 * the transport seam (docs/windows.md); this file only shows the calls
 * work, with every result checked.
 *
 * Prints one "ok N - what" or "not ok N - what" per check, then
 * "smoke: N passed, N failed"; exits 0 only when nothing failed.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <winsock2.h>
#include <windows.h>
#include <sddl.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "client/platform.h"
#include "hotmapctl/ctl_platform.h"
#include "daemon/storage/guard.h"
#include "proto/endpoint.h"
#include "proto/frame.h"
#include "proto/vocab.h"

static int passed, failed;

static void
check(int ok, const char *what, ...)
{
	va_list ap;

	printf("%s %d - ", ok ? "ok" : "not ok", passed + failed + 1);
	va_start(ap, what);
	vprintf(what, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (ok)
		passed++;
	else
		failed++;
}

/* ---- framing, no I/O -------------------------------------------------- */

static int
hello_encode(uint8_t *buf, size_t len, uint32_t id)
{
	Hotmap__Hello hello = HOTMAP__HELLO__INIT;

	hello.version = HM_PROTO_VERSION;
	hello.features = HM_FEATURE_FD_PASSING;
	hello.client_name = "hotmap-smoke";
	return frame_encode(HM_MSG_HELLO, id, 0, &hello.base, 0, buf, len);
}

static void
test_frame(void)
{
	uint8_t buf[256];
	struct hm_frame_header h;
	ProtobufCMessage *msg = NULL;
	int n = hello_encode(buf, sizeof buf, 7);

	check(n > HM_FRAME_HEADER_SIZE, "frame_encode packs a HELLO (%d bytes)", n);
	frame_header_decode(buf, &h);
	check(h.type == HM_MSG_HELLO && h.id == 7 && h.version == HM_PROTO_VERSION &&
	      h.length == (uint32_t)n - HM_FRAME_HEADER_SIZE && frame_header_check(&h) == 0,
	      "frame header round trip");
	check(frame_decode(&h, buf + HM_FRAME_HEADER_SIZE, &msg) == 0 && msg != NULL &&
	      strcmp(((Hotmap__Hello *)msg)->client_name, "hotmap-smoke") == 0,
	      "frame_decode unpacks the HELLO");
	if (msg != NULL)
		protobuf_c_message_free_unpacked(msg, NULL);

	h.length = HM_FRAME_MAX_MESSAGE + 1;
	check(frame_header_check(&h) == -EMSGSIZE, "an oversized length is -EMSGSIZE before allocation");
	h.length = 0;
	h.version = HM_PROTO_VERSION + 1;
	check(frame_header_check(&h) == -EPROTO, "a wrong version is -EPROTO");
	check(strcmp(vocab_reason_name(4), "network-fs") == 0, "vocab (pthread_once on winpthreads)");
}

/* ---- the portable files' platform halves ------------------------------- */

/* ascending, or descending when *arg says so: the context must arrive */
static int
compare_ints(const void *a, const void *b, void *arg)
{
	int x = *(const int *)a, y = *(const int *)b, c = (x > y) - (x < y);

	return *(const int *)arg ? -c : c;
}

static void
test_platform(void)
{
	char path[ENDPOINT_MAX], name[ENDPOINT_MAX];
	int v[5] = { 3, 1, 4, 1, 5 }, descending = 1;
	HANDLE pipe;

	_putenv("HOTMAP_SOCKET=");
	check(frame_default_socket(path, sizeof path) == 0 &&
	      strcmp(path, "\\\\.\\pipe\\hotmap") == 0,
	      "frame_default_socket without $HOTMAP_SOCKET is the pipe (%s)", path);
	snprintf(name, sizeof name, "\\\\.\\pipe\\hotmap-smoke-none-%lu", GetCurrentProcessId());
	check(endpoint_listening(name) == 0, "endpoint_listening: no pipe of that name is nobody");
	snprintf(name, sizeof name, "\\\\.\\pipe\\hotmap-smoke-ep-%lu", GetCurrentProcessId());
	pipe = CreateNamedPipeA(name, PIPE_ACCESS_DUPLEX | FILE_FLAG_OVERLAPPED,
				PIPE_TYPE_BYTE | PIPE_REJECT_REMOTE_CLIENTS, 1, 4096, 4096, 0, NULL);
	check(pipe != INVALID_HANDLE_VALUE && endpoint_listening(name) == 1,
	      "endpoint_listening: an instance of the pipe is someone");
	if (pipe != INVALID_HANDLE_VALUE)
		CloseHandle(pipe);
	platform_qsort_r(v, 5, sizeof *v, compare_ints, &descending);
	check(v[0] == 5 && v[1] == 4 && v[2] == 3 && v[3] == 1 && v[4] == 1,
	      "platform_qsort_r (qsort_s) passes the context through");
}

/* ---- the named pipe ---------------------------------------------------- */

/*
 * Who may connect: SYSTEM and Administrators fully, authenticated users
 * read and write; network logons are denied outright (PIPE_REJECT_REMOTE_
 * CLIENTS says it again at the pipe).  The daemon will build this from its
 * configuration; hotmapd as a service runs as LocalService or SYSTEM.
 */
#define SMOKE_SDDL L"D:P(D;;GA;;;NU)(A;;GA;;;SY)(A;;GA;;;BA)(A;;GRGW;;;AU)(A;;GA;;;OW)"

struct pipe_test {
	wchar_t name[128];
	HANDLE ready;			/* the server's pipe exists */
	HANDLE file;			/* the client's file, whose handle it passes */
	/* results, written by the server thread */
	int server_ok;
	DWORD client_pid;
	int identity_ok;
	char identity[160];
	int dup_ok;
	char dup_bytes[16];
};

static const char dup_content[] = "hotmap-dup-bytes";

/* Overlapped I/O with an event, waited for at once: the shape the daemon's
 * completion-port loop uses, without the port. */
static BOOL
io_wait(HANDLE h, OVERLAPPED *ov, BOOL started, DWORD *n)
{
	if (!started && GetLastError() != ERROR_IO_PENDING)
		return FALSE;
	return GetOverlappedResult(h, ov, n, TRUE);
}

static BOOL
read_full(HANDLE h, void *buf, DWORD len)
{
	DWORD got = 0, n;
	OVERLAPPED ov;

	while (got < len) {
		memset(&ov, 0, sizeof ov);
		ov.hEvent = CreateEventW(NULL, TRUE, FALSE, NULL);
		if (!io_wait(h, &ov, ReadFile(h, (char *)buf + got, len - got, NULL, &ov), &n) || n == 0) {
			CloseHandle(ov.hEvent);
			return FALSE;
		}
		CloseHandle(ov.hEvent);
		got += n;
	}
	return TRUE;
}

static BOOL
write_full(HANDLE h, const void *buf, DWORD len)
{
	OVERLAPPED ov;
	DWORD n = 0;
	BOOL ok;

	memset(&ov, 0, sizeof ov);
	ov.hEvent = CreateEventW(NULL, TRUE, FALSE, NULL);
	ok = io_wait(h, &ov, WriteFile(h, buf, len, NULL, &ov), &n) && n == len;
	CloseHandle(ov.hEvent);
	return ok;
}

/* "S-1-5-..." of the token's user, into out. */
static BOOL
token_user_sid(HANDLE token, char *out, size_t len)
{
	union { TOKEN_USER tu; char buf[256]; } u;
	DWORD n;
	char *s = NULL;
	BOOL ok;

	if (!GetTokenInformation(token, TokenUser, &u, sizeof u, &n))
		return FALSE;
	if (!ConvertSidToStringSidA(u.tu.User.Sid, &s))
		return FALSE;
	ok = (size_t)snprintf(out, len, "%s", s) < len;
	LocalFree(s);
	return ok;
}

/*
 * The daemon's side: learn the client's identity the way the transport
 * will (the process id for logs and for DuplicateHandle, the token's user
 * for policy), answer its HELLO, and take the handle it names.
 */
static DWORD WINAPI
pipe_server(void *arg)
{
	struct pipe_test *t = arg;
	PSECURITY_DESCRIPTOR sd = NULL;
	SECURITY_ATTRIBUTES sa = { sizeof sa, NULL, FALSE };
	HANDLE pipe, token = NULL, client_proc, dup = NULL;
	OVERLAPPED ov;
	DWORD n;
	uint8_t hdr[HM_FRAME_HEADER_SIZE], body[HM_FRAME_MAX_MESSAGE], out[256];
	struct hm_frame_header h;
	ProtobufCMessage *msg = NULL;
	Hotmap__HelloReply reply = HOTMAP__HELLO_REPLY__INIT;
	char self[160];
	uint64_t value;
	int len;

	if (!ConvertStringSecurityDescriptorToSecurityDescriptorW(SMOKE_SDDL, SDDL_REVISION_1, &sd, NULL)) {
		fprintf(stderr, "smoke: SDDL: error %lu\n", GetLastError());
		SetEvent(t->ready);
		return 1;
	}
	sa.lpSecurityDescriptor = sd;
	/* FIRST_PIPE_INSTANCE: if another process made the name first (a
	 * squatter), creating fails instead of joining its instances. */
	pipe = CreateNamedPipeW(t->name,
				PIPE_ACCESS_DUPLEX | FILE_FLAG_OVERLAPPED | FILE_FLAG_FIRST_PIPE_INSTANCE,
				PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT | PIPE_REJECT_REMOTE_CLIENTS,
				PIPE_UNLIMITED_INSTANCES, 64 * 1024, 64 * 1024, 0, &sa);
	LocalFree(sd);
	SetEvent(t->ready);
	if (pipe == INVALID_HANDLE_VALUE) {
		fprintf(stderr, "smoke: CreateNamedPipe: error %lu\n", GetLastError());
		return 1;
	}

	memset(&ov, 0, sizeof ov);
	ov.hEvent = CreateEventW(NULL, TRUE, FALSE, NULL);
	if (!ConnectNamedPipe(pipe, &ov)) {
		DWORD e = GetLastError();

		if (e == ERROR_IO_PENDING)
			GetOverlappedResult(pipe, &ov, &n, TRUE);
		else if (e != ERROR_PIPE_CONNECTED)
			goto out;
	}
	CloseHandle(ov.hEvent);

	/* Identity: the analogue of SO_PEERCRED. */
	GetNamedPipeClientProcessId(pipe, &t->client_pid);
	if (ImpersonateNamedPipeClient(pipe)) {
		if (OpenThreadToken(GetCurrentThread(), TOKEN_QUERY, TRUE, &token) &&
		    token_user_sid(token, t->identity, sizeof t->identity))
			t->identity_ok = 1;
		RevertToSelf();
		if (token != NULL)
			CloseHandle(token);
	}
	if (t->identity_ok && OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &token)) {
		if (!token_user_sid(token, self, sizeof self) || strcmp(self, t->identity) != 0)
			t->identity_ok = 0;
		CloseHandle(token);
	}

	/* HELLO in, HELLO_REPLY out, through hotmap's framing. */
	if (!read_full(pipe, hdr, sizeof hdr))
		goto out;
	frame_header_decode(hdr, &h);
	if (frame_header_check(&h) != 0 || h.type != HM_MSG_HELLO ||
	    !read_full(pipe, body, h.length) || frame_decode(&h, body, &msg) != 0)
		goto out;
	reply.version = HM_PROTO_VERSION;
	reply.features = ((Hotmap__Hello *)msg)->features & HM_FEATURES_ALL;
	reply.server_version = PACKAGE_VERSION;
	reply.max_frame = HM_FRAME_MAX_MESSAGE;
	protobuf_c_message_free_unpacked(msg, NULL);
	len = frame_encode(HM_MSG_HELLO_REPLY, h.id, 0, &reply.base, 0, out, sizeof out);
	if (len < 0 || !write_full(pipe, out, (DWORD)len))
		goto out;

	/*
	 * Handle passing: the client names one of its own handles; the daemon
	 * pulls it with DuplicateHandle from the client process it learned
	 * above.  (Pulling, not pushing: a client never gets PROCESS_DUP_HANDLE
	 * on the daemon.)  The smoke's "client" is this same process.
	 */
	if (!read_full(pipe, &value, sizeof value))
		goto out;
	client_proc = OpenProcess(PROCESS_DUP_HANDLE, FALSE, t->client_pid);
	if (client_proc != NULL) {
		if (DuplicateHandle(client_proc, (HANDLE)(uintptr_t)value, GetCurrentProcess(), &dup,
				    0, FALSE, DUPLICATE_SAME_ACCESS)) {
			OVERLAPPED at;

			/* pread(2): an offset in the OVERLAPPED on a synchronous handle */
			memset(&at, 0, sizeof at);
			if (ReadFile(dup, t->dup_bytes, sizeof t->dup_bytes, &n, &at) &&
			    n == sizeof t->dup_bytes &&
			    memcmp(t->dup_bytes, dup_content, sizeof t->dup_bytes) == 0)
				t->dup_ok = 1;
			CloseHandle(dup);
		}
		CloseHandle(client_proc);
	}
	t->server_ok = 1;
	/* the client's last read: one byte says "done" */
	write_full(pipe, "d", 1);
out:
	FlushFileBuffers(pipe);
	DisconnectNamedPipe(pipe);
	CloseHandle(pipe);
	return 0;
}

static void
test_pipe(void)
{
	struct pipe_test t;
	HANDLE server, pipe;
	uint8_t buf[512], hdr[HM_FRAME_HEADER_SIZE];
	struct hm_frame_header h;
	ProtobufCMessage *msg = NULL;
	wchar_t tmpdir[MAX_PATH], tmpfile[MAX_PATH];
	DWORD n, server_pid = 0;
	uint64_t value;
	char done = 0;
	int len, hello_ok = 0;

	memset(&t, 0, sizeof t);
	swprintf(t.name, 128, L"\\\\.\\pipe\\hotmap-smoke-%lu", GetCurrentProcessId());
	t.ready = CreateEventW(NULL, TRUE, FALSE, NULL);
	server = CreateThread(NULL, 0, pipe_server, &t, 0, NULL);
	WaitForSingleObject(t.ready, INFINITE);

	/* The file whose handle goes over: opened by the client, with every
	 * share mode so that nobody else is blocked by it. */
	GetTempPathW(MAX_PATH, tmpdir);
	GetTempFileNameW(tmpdir, L"hms", 0, tmpfile);
	t.file = CreateFileW(tmpfile, GENERIC_READ | GENERIC_WRITE,
			     FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
			     CREATE_ALWAYS, FILE_ATTRIBUTE_TEMPORARY | FILE_FLAG_DELETE_ON_CLOSE, NULL);
	WriteFile(t.file, dup_content, sizeof dup_content - 1, &n, NULL);

	/*
	 * The client: SECURITY_IDENTIFICATION lets the daemon learn who we are
	 * but never act as us, whatever it is.
	 */
	if (!WaitNamedPipeW(t.name, 5000))
		fprintf(stderr, "smoke: WaitNamedPipe: error %lu\n", GetLastError());
	pipe = CreateFileW(t.name, GENERIC_READ | GENERIC_WRITE, 0, NULL, OPEN_EXISTING,
			   FILE_FLAG_OVERLAPPED | SECURITY_SQOS_PRESENT | SECURITY_IDENTIFICATION, NULL);
	check(pipe != INVALID_HANDLE_VALUE, "client opens the named pipe (error %lu)",
	      pipe == INVALID_HANDLE_VALUE ? GetLastError() : 0);
	if (pipe == INVALID_HANDLE_VALUE)
		goto out;

	/* Whom we talk to: the daemon's process, checked before any handle
	 * goes over (the real check looks at that process's token). */
	if (!GetNamedPipeServerProcessId(pipe, &server_pid))
		server_pid = 0;
	check(server_pid == GetCurrentProcessId(),
	      "the client learns the server's process id (%lu)", server_pid);

	len = hello_encode(buf, sizeof buf, 42);
	if (len > 0 && write_full(pipe, buf, (DWORD)len) && read_full(pipe, hdr, sizeof hdr)) {
		frame_header_decode(hdr, &h);
		if (frame_header_check(&h) == 0 && h.type == HM_MSG_HELLO_REPLY && h.id == 42 &&
		    read_full(pipe, buf, h.length) && frame_decode(&h, buf, &msg) == 0) {
			Hotmap__HelloReply *r = (Hotmap__HelloReply *)msg;

			hello_ok = r->version == HM_PROTO_VERSION && r->features == HM_FEATURE_FD_PASSING &&
				   strcmp(r->server_version, PACKAGE_VERSION) == 0;
			protobuf_c_message_free_unpacked(msg, NULL);
		}
	}
	check(hello_ok, "HELLO and HELLO_REPLY over the pipe with overlapped I/O");

	value = (uint64_t)(uintptr_t)t.file;
	write_full(pipe, &value, sizeof value);
	read_full(pipe, &done, 1);
	WaitForSingleObject(server, 10000);
	CloseHandle(pipe);

	check(t.server_ok, "the server thread got through");
	check(t.client_pid == GetCurrentProcessId(),
	      "GetNamedPipeClientProcessId names the client (%lu)", t.client_pid);
	check(t.identity_ok, "the client's token user, by impersonation at identification level (%s)",
	      t.identity[0] ? t.identity : "none");
	check(t.dup_ok, "a handle pulled with DuplicateHandle reads the client's file");
out:
	CloseHandle(server);
	CloseHandle(t.ready);
	if (t.file != NULL && t.file != INVALID_HANDLE_VALUE)
		CloseHandle(t.file);
}

/* ---- libevent: the loop the daemon keeps (docs/windows.md, section 3) -- */

/*
 * The chosen design: pipe completions arrive on a thread of the
 * transport's own completion port and are handed to the loop thread with
 * event_active().  This checks that libevent, cross-built here, does that
 * on Windows: a loop with nothing but that event sleeps in its backend and
 * wakes when another thread activates it.
 */
struct wake {
	struct event *ev;
	volatile LONG fired;
};

static void
wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct wake *w = arg;

	InterlockedExchange(&w->fired, 1);
}

static DWORD WINAPI
wake_thread(void *arg)
{
	struct wake *w = arg;

	Sleep(200);
	event_active(w->ev, EV_READ, 0);
	return 0;
}

static void
test_libevent(void)
{
	struct event_base *base;
	struct wake w = { NULL, 0 };
	HANDLE t;
	ULONGLONG t0;
	WSADATA wsa;

	/* libevent's cross-thread wake-up is a loopback socket pair: without
	 * Winsock started, event_base_new cannot make the base notifiable.
	 * hotmapd's main must do the same. */
	check(WSAStartup(MAKEWORD(2, 2), &wsa) == 0, "WSAStartup");
	check(evthread_use_windows_threads() == 0, "evthread_use_windows_threads");
	base = event_base_new();
	check(base != NULL, "event_base_new, backend %s, libevent %s",
	      base != NULL ? event_base_get_method(base) : "none", event_get_version());
	if (base == NULL) {
		WSACleanup();
		return;
	}
	w.ev = event_new(base, -1, 0, wake_cb, &w);
	t0 = GetTickCount64();
	t = CreateThread(NULL, 0, wake_thread, &w, 0, NULL);
	event_base_loop(base, EVLOOP_ONCE | EVLOOP_NO_EXIT_ON_EMPTY);
	check(w.fired && GetTickCount64() - t0 >= 150,
	      "event_active from another thread wakes the sleeping loop (%llu ms)",
	      (unsigned long long)(GetTickCount64() - t0));
	WaitForSingleObject(t, INFINITE);
	CloseHandle(t);
	event_free(w.ev);
	event_base_free(base);
	WSACleanup();
}

/* ---- the guard (daemon/storage/guard_win32.c) ----------------------------------- */

/* A temporary file of len bytes of c, mapped whole; its view, or NULL. */
static const char *
map_temp(wchar_t *path, size_t len, char c, HANDLE *file, HANDLE *mapping)
{
	wchar_t tmpdir[MAX_PATH];
	char buf[4096];
	DWORD n;
	size_t done;

	GetTempPathW(MAX_PATH, tmpdir);
	GetTempFileNameW(tmpdir, L"hmg", 0, path);
	*file = CreateFileW(path, GENERIC_READ | GENERIC_WRITE,
			    FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
			    CREATE_ALWAYS, 0, NULL);
	if (*file == INVALID_HANDLE_VALUE)
		return NULL;
	memset(buf, c, sizeof buf);
	for (done = 0; done < len; done += n)
		if (!WriteFile(*file, buf, (DWORD)(len - done < sizeof buf ? len - done : sizeof buf), &n, NULL))
			return NULL;
	*mapping = CreateFileMappingW(*file, NULL, PAGE_READONLY, 0, 0, NULL);
	return *mapping != NULL ? MapViewOfFile(*mapping, FILE_MAP_READ, 0, 0, 0) : NULL;
}

/*
 * A fault that is not a guarded copy's own must still crash: run in a
 * child process (this program with "wild"), which copies under the guard
 * from memory that is no view at all.  Its unhandled-exception filter
 * exits with 3; anything else means the guard swallowed the fault.
 */
static int
wild_child(void)
{
	char *p = VirtualAlloc(NULL, 65536, MEM_RESERVE, PAGE_NOACCESS);
	char out[16];

	guard_install();
	guard_copy(out, p, sizeof out);
	printf("guard_copy returned from a wild fault\n");
	return 0;
}

static void
test_guard(void)
{
	wchar_t self[MAX_PATH], cmd[MAX_PATH + 16], path[MAX_PATH];
	STARTUPINFOW si = { .cb = sizeof si };
	PROCESS_INFORMATION pi;
	HANDLE file = INVALID_HANDLE_VALUE, mapping = NULL;
	const char *view;
	char out[64];
	DWORD code = 0;

	check(guard_install() == 0 && guard_install() == 0, "guard_install, twice");
	view = map_temp(path, 100000, 'g', &file, &mapping);
	check(view != NULL && guard_copy(out, view + 99000, sizeof out) == 0 && out[63] == 'g',
	      "guard_copy out of a view");
	check(guard_copy(out, view, 0) == 0, "guard_copy of nothing");
	if (view != NULL)
		UnmapViewOfFile(view);
	if (mapping != NULL)
		CloseHandle(mapping);
	if (file != INVALID_HANDLE_VALUE)
		CloseHandle(file);
	DeleteFileW(path);

	GetModuleFileNameW(NULL, self, MAX_PATH);
	swprintf(cmd, MAX_PATH + 16, L"\"%ls\" wild", self);
	if (CreateProcessW(self, cmd, NULL, NULL, FALSE, 0, NULL, NULL, &si, &pi)) {
		WaitForSingleObject(pi.hProcess, 60000);
		GetExitCodeProcess(pi.hProcess, &code);
		CloseHandle(pi.hThread);
		CloseHandle(pi.hProcess);
	}
	check(code == 3, "a fault outside any view still crashes under the guard (exit %lu)", code);
}

/*
 * "truncated PATH": the recovery itself.  PATH is mapped, then this waits
 * for a line on stdin, while contrib/windows/test truncates the file from
 * outside wine (Windows itself would refuse); every guarded copy out of
 * the lost pages must then come back as -EFAULT, and the thread go on.
 */
static int
truncated_child(const char *path)
{
	HANDLE f, m;
	const char *view;
	LARGE_INTEGER size;
	char line[16], *out;
	int r1, r2;

	f = CreateFileA(path, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			NULL, OPEN_EXISTING, 0, NULL);
	m = f != INVALID_HANDLE_VALUE ? CreateFileMappingW(f, NULL, PAGE_READONLY, 0, 0, NULL) : NULL;
	view = m != NULL ? MapViewOfFile(m, FILE_MAP_READ, 0, 0, 0) : NULL;
	if (view == NULL || !GetFileSizeEx(f, &size) || guard_install() != 0) {
		printf("not ok 1 - map %s\n", path);
		return 1;
	}
	out = malloc((size_t)size.QuadPart);
	r1 = guard_copy(out, view, (size_t)size.QuadPart);
	check(r1 == 0, "guard_copy of the whole view before the truncation");
	printf("# mapped\n");
	fflush(stdout);
	if (fgets(line, sizeof line, stdin) == NULL)
		return 1;
	r1 = guard_copy(out, view, (size_t)size.QuadPart);
	r2 = guard_copy(out, view + size.QuadPart / 2, 4096);
	check(r1 == -EFAULT, "a copy from pages the file lost returns -EFAULT (%d)", r1);
	check(r2 == -EFAULT, "and again on the same thread (%d)", r2);
	printf("1..%d\n", passed + failed);
	free(out);
	return failed == 0 ? 0 : 1;
}

/* ---- a mapped file's size -------------------------------------------------- */

/*
 * What the backend must live with: while a view of a file exists, Windows
 * refuses to shrink the file (ERROR_USER_MAPPED_FILE) instead of letting
 * a reader fault, so the daemon's mappings would block other programs'
 * truncation.  Recorded here so that a change in that behaviour (or in
 * wine's emulation of it) shows.
 */
static void
test_mapping_blocks_truncate(void)
{
	wchar_t tmpdir[MAX_PATH], tmpfile[MAX_PATH];
	HANDLE f, m, w;
	const char *view;
	char buf[8192];
	DWORD n, err = 0;
	BOOL shrunk;

	GetTempPathW(MAX_PATH, tmpdir);
	GetTempFileNameW(tmpdir, L"hmm", 0, tmpfile);
	f = CreateFileW(tmpfile, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			NULL, OPEN_EXISTING, 0, NULL);
	w = CreateFileW(tmpfile, GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			NULL, OPEN_EXISTING, 0, NULL);
	memset(buf, 'm', sizeof buf);
	WriteFile(w, buf, sizeof buf, &n, NULL);
	m = CreateFileMappingW(f, NULL, PAGE_READONLY, 0, 0, NULL);
	view = m != NULL ? MapViewOfFile(m, FILE_MAP_READ, 0, 0, 0) : NULL;
	check(view != NULL && view[8191] == 'm', "a file mapping reads the file");

	SetFilePointer(w, 100, NULL, FILE_BEGIN);
	shrunk = SetEndOfFile(w);
	if (!shrunk)
		err = GetLastError();
	check(!shrunk && err == ERROR_USER_MAPPED_FILE,
	      "shrinking a mapped file is refused with ERROR_USER_MAPPED_FILE (shrunk %d, error %lu)",
	      shrunk, err);
	if (view != NULL)
		UnmapViewOfFile(view);
	if (m != NULL)
		CloseHandle(m);
	check(SetEndOfFile(w), "and allowed once the view is gone");
	CloseHandle(w);
	CloseHandle(f);
	DeleteFileW(tmpfile);
}

/* A crash is a failure with its code, never a debugger waiting for a
 * person (wine starts winedbg, Windows a dialog). */
static int crash_quietly;	/* the "wild" child: its crash is expected */

static LONG CALLBACK
smoke_crash(EXCEPTION_POINTERS *ep)
{
	if (crash_quietly)
		ExitProcess(3);
	printf("not ok - crashed: exception 0x%lx at %p\n",
	       (unsigned long)ep->ExceptionRecord->ExceptionCode, ep->ExceptionRecord->ExceptionAddress);
	printf("smoke: %d passed, %d failed\n", passed, failed + 1);
	fflush(stdout);
	ExitProcess(3);
}

int
main(int argc, char **argv)
{
	SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX);
	SetUnhandledExceptionFilter(smoke_crash);
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 2 && strcmp(argv[1], "wild") == 0) {
		crash_quietly = 1;
		return wild_child();
	}
	if (argc == 3 && strcmp(argv[1], "truncated") == 0)
		return truncated_child(argv[2]);
	test_frame();
	test_platform();
	test_pipe();
	test_libevent();
	test_guard();
	test_mapping_blocks_truncate();
	printf("smoke: %d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
