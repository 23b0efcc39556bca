/* SPDX-License-Identifier: MIT */
/*
 * test_transport.c - the daemon's named pipe transport under wine:
 * daemon/transport/peer.c (the portable framing) over daemon/transport/transport_win32.c (the
 * completion port, the pipe listener, identity, handle pulling), with a
 * small dispatch of its own in place of the session.  TAP output.
 *
 * The "daemon" runs its event loop on one thread; clients are other
 * threads of this process, each with its own pipe handle, as separate
 * programs would be.  It checks what the transport promises: frames in
 * and out whole and in order, many clients at once, large replies
 * written as the pipe takes them, hostile frames answered or dropped
 * while other clients go on, a client that vanishes mid-frame, the
 * client's pid and user, refusal at accept, FIRST_PIPE_INSTANCE, and
 * handles pulled from the client with DuplicateHandle.
 *
 * And the pipe's trust (docs/windows.md, "The pipe's trust"), as far as
 * wine shows it: the security descriptor read back gives authenticated
 * users no FILE_CREATE_PIPE_INSTANCE; clients connect with libhotmap's
 * narrower access (PIPE_CLIENT_ACCESS) and wine refuses a write through a
 * handle without FILE_WRITE_DATA, so every check here passing says those
 * rights suffice; and pipe_client_process_check refuses a process of
 * another user, of a higher integrity level, or made after the connect.
 * (Wine checks no pipe DACL: every process is one user, the owner.)
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
#include <aclapi.h>
#include <sddl.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "daemon/transport/peer.h"
#include "daemon/transport/transport_win32.h"
#include "proto/frame.h"

#define CLIENTS		8
#define PINGS		200
#define BIG_READ	(3u * 1024u * 1024u + 12345u)

static int checks, failures;

static void HM_PRINTF(2, 3)
check(int ok, const char *fmt, ...)
{
	va_list ap;

	checks++;
	if (!ok)
		failures++;
	printf("%s %d - ", ok ? "ok" : "not ok", checks);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* --- the daemon side ----------------------------------------------------- */

static struct event_base *base;
static wchar_t pipe_name_w[128];
static char pipe_name[128];
static CRITICAL_SECTION lock;
/* what the daemon saw, for the clients to check (under lock) */
static char closed_why[64][200];
static unsigned nclosed;
static struct peer_ident last_ident;
static unsigned accepted;
static volatile LONG refuse_next;
static unsigned long listener_errors;

static uint8_t
pattern(uint64_t at)
{
	return (uint8_t)((at * 7u) ^ (at >> 11));
}

static int
d_dispatch(struct peer *p, const struct peer_frame *f, void *arg)
{
	ProtobufCMessage *msg = NULL;
	int rc = 0;

	(void)arg;
	if (frame_decode(&f->hdr, f->body, &msg) < 0)
		return -EBADMSG;
	switch (f->hdr.type) {
	case HM_MSG_PING: {
		Hotmap__PingReply r = HOTMAP__PING_REPLY__INIT;

		r.pid = (uint32_t)GetCurrentProcessId();
		r.server_version = "test";
		rc = peer_send(p, HM_MSG_PING_REPLY, f->hdr.id, &r.base);
		break;
	}
	case HM_MSG_READ: {
		Hotmap__Read *m = (Hotmap__Read *)msg;
		Hotmap__ReadReply r = HOTMAP__READ_REPLY__INIT;
		uint8_t *buf = malloc(m->length > 0 ? m->length : 1);
		uint64_t i;

		if (buf == NULL) {
			rc = peer_send_error(p, f->hdr.id, ENOMEM, "out of memory");
			break;
		}
		for (i = 0; i < m->length; i++)
			buf[i] = pattern(m->offset + i);
		rc = peer_send_owned(p, f->hdr.id, buf, m->length);
		r.total = m->length;
		if (rc == 0)
			rc = peer_send(p, HM_MSG_READ_DATA, f->hdr.id, &r.base);
		break;
	}
	case HM_MSG_OPEN: {
		Hotmap__Open *m = (Hotmap__Open *)msg;
		Hotmap__OpenReply r = HOTMAP__OPEN_REPLY__INIT;
		char text[64] = "";
		OVERLAPPED at;
		hm_fd h;
		DWORD n = 0;
		int e = peer_take_file(p, m->handle_value, &h);

		if (e < 0) {
			rc = peer_send_error(p, f->hdr.id, -e, "cannot take handle %llu",
					     (unsigned long long)m->handle_value);
			break;
		}
		/* pread: an offset in the OVERLAPPED */
		memset(&at, 0, sizeof at);
		if (!ReadFile(h, text, sizeof text - 1, &n, &at))
			n = 0;
		text[n] = '\0';
		CloseHandle(h);
		r.size = n;
		r.reason_text = text;
		rc = peer_send(p, HM_MSG_OPEN_REPLY, f->hdr.id, &r.base);
		break;
	}
	default:
		rc = peer_send_error(p, f->hdr.id, EOPNOTSUPP, "%s is not served here",
				     frame_type_name(f->hdr.type));
		break;
	}
	protobuf_c_message_free_unpacked(msg, NULL);
	return rc;
}

static int
d_drain(struct peer *p, void *arg)
{
	(void)p;
	(void)arg;
	return 0;
}

static void
d_closed(struct peer *p, bool clean, const char *why, void *arg)
{
	(void)clean;
	(void)arg;
	EnterCriticalSection(&lock);
	if (nclosed < 64)
		snprintf(closed_why[nclosed++], sizeof closed_why[0], "%s", why);
	LeaveCriticalSection(&lock);
	peer_free(p);
}

static const struct peer_ops d_ops = {
	.dispatch = d_dispatch,
	.drain = d_drain,
	.closed = d_closed,
};

static void
d_accept(hm_conn c, void *arg)
{
	struct peer_ident id;
	struct peer *p;

	(void)arg;
	if (peer_ident_of(c, &id) < 0)
		id.known = false;
	EnterCriticalSection(&lock);
	accepted++;
	last_ident = id;	/* no groups on Windows: a plain copy */
	LeaveCriticalSection(&lock);
	if (InterlockedExchange(&refuse_next, 0)) {
		peer_ident_clear(&id);
		peer_refuse(c, EUSERS, "refused by the test");
		return;
	}
	p = peer_new(base, c, &id, &d_ops, NULL);
	if (p == NULL)
		peer_refuse(c, ENOMEM, "out of memory");
}

static void
d_failed(const char *what, unsigned long error, void *arg)
{
	(void)arg;
	(void)what;
	(void)error;
	EnterCriticalSection(&lock);
	listener_errors++;
	LeaveCriticalSection(&lock);
}

static DWORD WINAPI
d_loop(void *arg)
{
	(void)arg;
	event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY);
	return 0;
}

static bool
closed_with(const char *what)
{
	bool found = false;
	unsigned i;

	EnterCriticalSection(&lock);
	for (i = 0; i < nclosed; i++)
		if (strstr(closed_why[i], what) != NULL)
			found = true;
	LeaveCriticalSection(&lock);
	return found;
}

/* Waits up to 5 s for the daemon to close a connection with what. */
static bool
wait_closed_with(const char *what)
{
	int i;

	for (i = 0; i < 500; i++) {
		if (closed_with(what))
			return true;
		Sleep(10);
	}
	return false;
}

/* --- the client side ----------------------------------------------------- */

static HANDLE
cl_connect(void)
{
	int i;

	for (i = 0; i < 100; i++) {
		/* the access libhotmap asks for: all a client may have */
		HANDLE h = CreateFileW(pipe_name_w, PIPE_CLIENT_ACCESS, 0, NULL, OPEN_EXISTING,
				       SECURITY_SQOS_PRESENT | SECURITY_IDENTIFICATION, NULL);

		if (h != INVALID_HANDLE_VALUE)
			return h;
		if (GetLastError() != ERROR_PIPE_BUSY)
			return INVALID_HANDLE_VALUE;
		WaitNamedPipeW(pipe_name_w, 1000);
	}
	return INVALID_HANDLE_VALUE;
}

static bool
cl_write(HANDLE h, const void *buf, size_t len)
{
	const uint8_t *b = buf;
	DWORD n;

	while (len > 0) {
		if (!WriteFile(h, b, (DWORD)len, &n, NULL))
			return false;
		b += n;
		len -= n;
	}
	return true;
}

static bool
cl_read(HANDLE h, void *buf, size_t len)
{
	uint8_t *b = buf;
	DWORD n;

	while (len > 0) {
		if (!ReadFile(h, b, (DWORD)len, &n, NULL) || n == 0)
			return false;
		b += n;
		len -= n;
	}
	return true;
}

static bool
cl_send(HANDLE h, uint16_t type, uint32_t id, const ProtobufCMessage *msg)
{
	uint8_t buf[HM_FRAME_HEADER_SIZE + 1024];
	int n = frame_encode(type, id, 0, msg, 0, buf, sizeof buf);

	return n > 0 && cl_write(h, buf, (size_t)n);
}

/* One frame: its header, and its message (decoded, *msg) or raw bytes
 * (into raw, at most rawmax). */
static bool
cl_recv(HANDLE h, struct hm_frame_header *hdr, ProtobufCMessage **msg, uint8_t *raw,
	size_t rawmax)
{
	uint8_t hb[HM_FRAME_HEADER_SIZE], body[HM_FRAME_MAX_MESSAGE];

	*msg = NULL;
	if (!cl_read(h, hb, sizeof hb))
		return false;
	frame_header_decode(hb, hdr);
	if (frame_header_check(hdr) < 0 || hdr->raw_length > rawmax)
		return false;
	if (!cl_read(h, body, hdr->length))
		return false;
	if (hdr->raw_length > 0 && !cl_read(h, raw, hdr->raw_length))
		return false;
	return frame_decode(hdr, body, msg) == 0;
}

/* PING id, PING_REPLY id with the daemon's pid. */
static bool
cl_ping(HANDLE h, uint32_t id)
{
	Hotmap__Ping ping = HOTMAP__PING__INIT;
	struct hm_frame_header hdr;
	ProtobufCMessage *msg;
	bool ok;

	if (!cl_send(h, HM_MSG_PING, id, &ping.base) || !cl_recv(h, &hdr, &msg, NULL, 0))
		return false;
	ok = hdr.type == HM_MSG_PING_REPLY && hdr.id == id &&
	     ((Hotmap__PingReply *)msg)->pid == GetCurrentProcessId();
	protobuf_c_message_free_unpacked(msg, NULL);
	return ok;
}

/* Whether the daemon closed the pipe (a read ends with no bytes). */
static bool
cl_closed(HANDLE h)
{
	uint8_t b;
	DWORD n;

	return !ReadFile(h, &b, 1, &n, NULL) || n == 0;
}

static DWORD WINAPI
cl_pinger(void *arg)
{
	HANDLE h = cl_connect();
	uint32_t i;
	LONG *ok = arg;

	if (h == INVALID_HANDLE_VALUE)
		return 1;
	for (i = 1; i <= PINGS; i++)
		if (!cl_ping(h, i))
			break;
	CloseHandle(h);
	if (i > PINGS)
		InterlockedIncrement(ok);
	return 0;
}

/* --- the checks ---------------------------------------------------------- */

static void
test_basics(void)
{
	struct peer_ident self;
	HANDLE h = cl_connect();
	bool ident_ok;

	check(h != INVALID_HANDLE_VALUE, "a client connects to %s", pipe_name);
	check(h != INVALID_HANDLE_VALUE && cl_ping(h, 7), "PING in, PING_REPLY out with its id");
	check(peer_ident_self(&self) == 0 && self.known && strncmp(self.user, "S-1-", 4) == 0,
	      "the daemon's own user: %s", self.user);
	EnterCriticalSection(&lock);
	ident_ok = last_ident.known && last_ident.pid == (pid_t)GetCurrentProcessId() &&
		   strcmp(last_ident.user, self.user) == 0 &&
		   last_ident.superuser == self.superuser && last_ident.uid == (uid_t)-1;
	LeaveCriticalSection(&lock);
	check(ident_ok, "the client's identity from the pipe: pid %ld, user %s, superuser %d",
	      (long)last_ident.pid, last_ident.user, last_ident.superuser);
	if (h != INVALID_HANDLE_VALUE)
		CloseHandle(h);
	check(wait_closed_with("client closed the connection"),
	      "a client that hangs up between frames is a clean close");
}

static void
test_second_listener(void)
{
	char err[256] = "";
	struct pipe_listener *l;

	l = pipe_listener_new(base, pipe_name, NULL, 1, d_accept, d_failed, NULL, err, sizeof err);
	check(l == NULL && strstr(err, "is taken") != NULL,
	      "a second listener on the same name is refused: %s", err);
	pipe_listener_free(l);
}

static void
test_concurrent(void)
{
	HANDLE t[CLIENTS];
	LONG ok = 0;
	int i;

	for (i = 0; i < CLIENTS; i++)
		t[i] = CreateThread(NULL, 0, cl_pinger, &ok, 0, NULL);
	WaitForMultipleObjects(CLIENTS, t, TRUE, 60000);
	for (i = 0; i < CLIENTS; i++)
		CloseHandle(t[i]);
	check(ok == CLIENTS, "%d clients at once, %d PINGs each, every reply in order (%ld did)",
	      CLIENTS, PINGS, (long)ok);
}

static void
test_big_reply(void)
{
	Hotmap__Read rd = HOTMAP__READ__INIT;
	struct hm_frame_header hdr;
	ProtobufCMessage *msg;
	HANDLE h = cl_connect();
	uint8_t *raw = malloc(HM_FRAME_MAX_RAW);
	uint64_t got = 0, bad = 0, total = 0;
	bool ok = h != INVALID_HANDLE_VALUE && raw != NULL;
	uint32_t i;

	rd.offset = 1000;
	rd.length = BIG_READ;
	ok = ok && cl_send(h, HM_MSG_READ, 99, &rd.base);
	/* and a PING behind it: answered after the last byte of the read */
	if (ok) {
		Hotmap__Ping ping = HOTMAP__PING__INIT;

		ok = cl_send(h, HM_MSG_PING, 100, &ping.base);
	}
	while (ok) {
		ok = cl_recv(h, &hdr, &msg, raw, HM_FRAME_MAX_RAW) && hdr.id == 99 &&
		     hdr.type == HM_MSG_READ_DATA;
		if (!ok)
			break;
		for (i = 0; i < hdr.raw_length; i++)
			if (raw[i] != pattern(rd.offset + got + i))
				bad++;
		got += hdr.raw_length;
		if (!(hdr.flags & HM_FLAG_MORE)) {
			total = ((Hotmap__ReadReply *)msg)->total;
			protobuf_c_message_free_unpacked(msg, NULL);
			break;
		}
		protobuf_c_message_free_unpacked(msg, NULL);
	}
	check(ok && got == BIG_READ && total == BIG_READ && bad == 0,
	      "a %u-byte reply comes whole and byte for byte (%llu bytes, %llu wrong)",
	      BIG_READ, (unsigned long long)got, (unsigned long long)bad);
	ok = ok && cl_recv(h, &hdr, &msg, NULL, 0) && hdr.id == 100 &&
	     hdr.type == HM_MSG_PING_REPLY;
	if (msg != NULL)
		protobuf_c_message_free_unpacked(msg, NULL);
	check(ok, "the request behind it is answered after it, in order");
	free(raw);
	if (h != INVALID_HANDLE_VALUE)
		CloseHandle(h);
}

/* Sends a raw header; returns the pipe. */
static HANDLE
cl_hostile(const struct hm_frame_header *hdr, const void *body, size_t bodylen)
{
	uint8_t hb[HM_FRAME_HEADER_SIZE];
	HANDLE h = cl_connect();

	if (h == INVALID_HANDLE_VALUE)
		return h;
	frame_header_encode(hdr, hb);
	if (!cl_write(h, hb, sizeof hb) || (bodylen > 0 && !cl_write(h, body, bodylen))) {
		CloseHandle(h);
		return INVALID_HANDLE_VALUE;
	}
	return h;
}

static void
test_hostile(void)
{
	struct hm_frame_header hdr = { 0 }, got;
	ProtobufCMessage *msg;
	HANDLE h, good = cl_connect();
	bool ok;

	/* a wrong version: ERROR (EPROTONOSUPPORT), then the close */
	hdr = (struct hm_frame_header){ .type = HM_MSG_PING, .version = 9, .id = 5 };
	h = cl_hostile(&hdr, NULL, 0);
	ok = h != INVALID_HANDLE_VALUE && cl_recv(h, &got, &msg, NULL, 0) &&
	     got.type == HM_MSG_ERROR && got.id == 5 &&
	     ((Hotmap__Error *)msg)->error == EPROTONOSUPPORT;
	if (ok)
		protobuf_c_message_free_unpacked(msg, NULL);
	check(ok, "a frame of protocol version 9 is answered with EPROTONOSUPPORT");
	check(h != INVALID_HANDLE_VALUE && cl_closed(h), "... and the pipe is closed after it");
	if (h != INVALID_HANDLE_VALUE)
		CloseHandle(h);

	/* a huge length: dropped before anything is buffered */
	hdr = (struct hm_frame_header){ .type = HM_MSG_PING, .version = HM_PROTO_VERSION,
					.length = 0x7fffffff, .id = 6 };
	h = cl_hostile(&hdr, NULL, 0);
	check(h != INVALID_HANDLE_VALUE && cl_closed(h) && wait_closed_with("oversized frame"),
	      "a frame that claims 2 GiB is dropped at its header (\"oversized frame\")");
	if (h != INVALID_HANDLE_VALUE)
		CloseHandle(h);

	/* raw bytes from a client */
	hdr = (struct hm_frame_header){ .type = HM_MSG_READ_DATA, .version = HM_PROTO_VERSION,
					.raw_length = 10, .id = 7 };
	h = cl_hostile(&hdr, NULL, 0);
	check(h != INVALID_HANDLE_VALUE && cl_closed(h) && wait_closed_with("malformed frame"),
	      "raw bytes from a client are a malformed frame: dropped");
	if (h != INVALID_HANDLE_VALUE)
		CloseHandle(h);

	/* half a frame, then gone */
	hdr = (struct hm_frame_header){ .type = HM_MSG_PING, .version = HM_PROTO_VERSION,
					.length = 100, .id = 8 };
	h = cl_hostile(&hdr, "0123456789", 10);
	if (h != INVALID_HANDLE_VALUE)
		CloseHandle(h);
	check(wait_closed_with("truncated frame"),
	      "a client that vanishes mid-frame is closed as a truncated frame");

	check(good != INVALID_HANDLE_VALUE && cl_ping(good, 11),
	      "a client connected all along is still served");
	if (good != INVALID_HANDLE_VALUE)
		CloseHandle(good);
}

static void
test_refuse(void)
{
	Hotmap__Ping ping = HOTMAP__PING__INIT;
	struct hm_frame_header got;
	ProtobufCMessage *msg;
	HANDLE h;
	bool ok;

	InterlockedExchange(&refuse_next, 1);
	h = cl_connect();
	/* the daemon answers once the client said something (its HELLO):
	 * on Windows, who it is can be asked only then */
	ok = h != INVALID_HANDLE_VALUE && cl_send(h, HM_MSG_PING, 1, &ping.base) &&
	     cl_recv(h, &got, &msg, NULL, 0) &&
	     got.type == HM_MSG_ERROR && got.id == 0 &&
	     ((Hotmap__Error *)msg)->error == EUSERS &&
	     strcmp(((Hotmap__Error *)msg)->message, "refused by the test") == 0;
	if (ok)
		protobuf_c_message_free_unpacked(msg, NULL);
	check(ok, "a connection refused at accept reads ERROR (EUSERS) with the reason");
	check(h != INVALID_HANDLE_VALUE && cl_closed(h), "... then the pipe is closed");
	if (h != INVALID_HANDLE_VALUE)
		CloseHandle(h);
}

/* A client that connects and says nothing is dropped within
 * TW_FIRST_BYTES_S (5 s) without reaching accept. */
static void
test_silent(void)
{
	unsigned before, after;
	ULONGLONG t0 = GetTickCount64();
	HANDLE h = cl_connect();
	bool closed;

	EnterCriticalSection(&lock);
	before = accepted;
	LeaveCriticalSection(&lock);
	closed = h != INVALID_HANDLE_VALUE && cl_closed(h);
	EnterCriticalSection(&lock);
	after = accepted;
	LeaveCriticalSection(&lock);
	check(closed && after == before && GetTickCount64() - t0 < 9000,
	      "a client that says nothing is dropped unaccepted (after %llu ms)",
	      (unsigned long long)(GetTickCount64() - t0));
	if (h != INVALID_HANDLE_VALUE)
		CloseHandle(h);
}

static bool
cl_open(HANDLE h, uint32_t id, uint64_t value, int *error, char *text, size_t textlen)
{
	Hotmap__Open op = HOTMAP__OPEN__INIT;
	struct hm_frame_header got;
	ProtobufCMessage *msg;

	op.handle_value = value;
	op.path = "test";
	*error = 0;
	if (!cl_send(h, HM_MSG_OPEN, id, &op.base) || !cl_recv(h, &got, &msg, NULL, 0) ||
	    got.id != id)
		return false;
	if (got.type == HM_MSG_ERROR)
		*error = ((Hotmap__Error *)msg)->error;
	else
		snprintf(text, textlen, "%s", ((Hotmap__OpenReply *)msg)->reason_text);
	protobuf_c_message_free_unpacked(msg, NULL);
	return got.type == HM_MSG_ERROR || got.type == HM_MSG_OPEN_REPLY;
}

static void
test_handle_pull(void)
{
	static const char content[] = "bytes the client can read";
	wchar_t dir[MAX_PATH], path[MAX_PATH];
	HANDLE h = cl_connect(), file, rd = NULL, wr = NULL;
	char text[64] = "";
	int error = -1;
	bool ok;
	DWORD n;

	GetTempPathW(MAX_PATH, dir);
	GetTempFileNameW(dir, L"hmt", 0, path);
	file = CreateFileW(path, GENERIC_READ | GENERIC_WRITE,
			   FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
			   CREATE_ALWAYS, FILE_FLAG_DELETE_ON_CLOSE, NULL);
	if (file != INVALID_HANDLE_VALUE)
		WriteFile(file, content, sizeof content - 1, &n, NULL);
	ok = h != INVALID_HANDLE_VALUE && file != INVALID_HANDLE_VALUE &&
	     cl_open(h, 1, (uint64_t)(uintptr_t)file, &error, text, sizeof text);
	check(ok && error == 0 && strcmp(text, content) == 0,
	      "the daemon pulls the client's file handle (DuplicateHandle) and reads it: \"%s\"",
	      text);
	ok = h != INVALID_HANDLE_VALUE && cl_open(h, 2, 0x7ffc, &error, text, sizeof text);
	check(ok && error == EBADF, "a handle value the client does not hold: EBADF (%d)", error);
	CreatePipe(&rd, &wr, NULL, 0);
	ok = h != INVALID_HANDLE_VALUE && rd != NULL &&
	     cl_open(h, 3, (uint64_t)(uintptr_t)rd, &error, text, sizeof text);
	check(ok && error == ENODEV, "a handle that is no disk file (an anonymous pipe): ENODEV (%d)",
	      error);
	check(h != INVALID_HANDLE_VALUE && cl_ping(h, 4),
	      "the connection goes on after refused handles");
	if (rd != NULL)
		CloseHandle(rd);
	if (wr != NULL)
		CloseHandle(wr);
	if (file != INVALID_HANDLE_VALUE)
		CloseHandle(file);
	if (h != INVALID_HANDLE_VALUE)
		CloseHandle(h);
}

/* --- the pipe's trust ------------------------------------------------- */

/* What an ACE's mask gives on a pipe, its generic rights mapped as the
 * system maps them for a file object (Windows maps them when it stores a
 * pipe's descriptor; wine keeps them as written). */
static ACCESS_MASK
pipe_rights(ACCESS_MASK m)
{
	GENERIC_MAPPING map = { FILE_GENERIC_READ, FILE_GENERIC_WRITE, FILE_GENERIC_EXECUTE,
				FILE_ALL_ACCESS };

	MapGenericMask(&m, &map);
	return m;
}

/* Whether acl gives FILE_CREATE_PIPE_INSTANCE to anyone but SYSTEM,
 * Administrators and the owner; *users gets the authenticated users'
 * allowed rights (mapped). */
static bool
others_may_create(PACL acl, ACCESS_MASK *users)
{
	bool found = false;
	DWORD i;

	*users = 0;
	for (i = 0; acl != NULL && i < acl->AceCount; i++) {
		ACCESS_ALLOWED_ACE *ace;
		PSID sid;

		if (!GetAce(acl, i, (void **)&ace) || ace->Header.AceType != ACCESS_ALLOWED_ACE_TYPE)
			continue;
		sid = &ace->SidStart;
		if (IsWellKnownSid(sid, WinAuthenticatedUserSid))
			*users |= pipe_rights(ace->Mask);
		if (IsWellKnownSid(sid, WinLocalSystemSid) ||
		    IsWellKnownSid(sid, WinBuiltinAdministratorsSid) ||
		    IsWellKnownSid(sid, WinCreatorOwnerRightsSid))
			continue;
		if (pipe_rights(ace->Mask) & FILE_CREATE_PIPE_INSTANCE)
			found = true;
	}
	return found;
}

static void
test_pipe_dacl(void)
{
	PSECURITY_DESCRIPTOR sd = NULL, old = NULL;
	HANDLE h = cl_connect(), w = INVALID_HANDLE_VALUE;
	ACCESS_MASK users = 0;
	PACL acl = NULL;
	BOOL present, defaulted;
	DWORD e = ERROR_INVALID_HANDLE, n;
	char *text = NULL;
	bool others;

	/* read back from a client's end, as anyone who can connect can */
	if (h != INVALID_HANDLE_VALUE)
		e = GetSecurityInfo(h, SE_KERNEL_OBJECT, DACL_SECURITY_INFORMATION, NULL, NULL, &acl,
				    NULL, &sd);
	if (e == 0)
		ConvertSecurityDescriptorToStringSecurityDescriptorA(sd, SDDL_REVISION_1,
								     DACL_SECURITY_INFORMATION,
								     &text, NULL);
	others = e != 0 || others_may_create(acl, &users);
	check(e == 0 && !others && users == PIPE_USER_RIGHTS,
	      "the pipe's DACL (%s) gives authenticated users 0x%lx: read, write data and "
	      "attributes, no FILE_CREATE_PIPE_INSTANCE, nor does it to anyone but SYSTEM, "
	      "Administrators and the owner (GetSecurityInfo: %lu)", text != NULL ? text : "?",
	      (unsigned long)users, (unsigned long)e);
	check(users != 0 && (PIPE_CLIENT_ACCESS & ~users) == 0,
	      "libhotmap's access 0x%lx is within what the DACL gives users",
	      (unsigned long)PIPE_CLIENT_ACCESS);
	/* the same reading of the descriptor hotmapd had before: it finds
	 * what was wrong with it */
	acl = NULL;
	others = ConvertStringSecurityDescriptorToSecurityDescriptorA(
			 "D:P(D;;GA;;;NU)(A;;GA;;;SY)(A;;GA;;;BA)(A;;GRGW;;;AU)(A;;GA;;;OW)",
			 SDDL_REVISION_1, &old, NULL) &&
		 GetSecurityDescriptorDacl(old, &present, &acl, &defaulted) &&
		 others_may_create(acl, &users);
	check(others && (users & FILE_CREATE_PIPE_INSTANCE),
	      "the old DACL's GRGW gave authenticated users FILE_CREATE_PIPE_INSTANCE (0x%lx)",
	      (unsigned long)users);
	/* wine checks a handle's access on each write: with these rights a
	 * client writes and reads (the checks above and below do), without
	 * FILE_WRITE_DATA it cannot */
	if (h != INVALID_HANDLE_VALUE)
		CloseHandle(h);
	for (n = 0; n < 100 && w == INVALID_HANDLE_VALUE; n++) {
		w = CreateFileW(pipe_name_w, FILE_GENERIC_READ, 0, NULL, OPEN_EXISTING,
				SECURITY_SQOS_PRESENT | SECURITY_IDENTIFICATION, NULL);
		if (w == INVALID_HANDLE_VALUE)
			WaitNamedPipeW(pipe_name_w, 1000);
	}
	check(w != INVALID_HANDLE_VALUE && !WriteFile(w, "x", 1, &n, NULL),
	      "a pipe handle without FILE_WRITE_DATA cannot write (wine checks handle rights)");
	if (w != INVALID_HANDLE_VALUE)
		CloseHandle(w);
	LocalFree(text);
	LocalFree(sd);
	LocalFree(old);
}

/* The current time, as pipe_client_process_check takes it. */
static uint64_t
now_ticks(void)
{
	FILETIME t;

	GetSystemTimePreciseAsFileTime(&t);
	return ((uint64_t)t.dwHighDateTime << 32) | t.dwLowDateTime;
}

static void
test_process_check(void)
{
	union {
		TOKEN_USER tu;
		uint8_t b[SECURITY_MAX_SID_SIZE + sizeof(TOKEN_USER)];
	} user;
	union {
		TOKEN_MANDATORY_LABEL l;
		uint8_t b[SECURITY_MAX_SID_SIZE + sizeof(TOKEN_MANDATORY_LABEL)];
	} label;
	uint8_t system[SECURITY_MAX_SID_SIZE];
	FILETIME created, x1, x2, x3;
	PROCESS_INFORMATION pi;
	STARTUPINFOW si = { .cb = sizeof si };
	wchar_t self[MAX_PATH], cmd[MAX_PATH + 16];
	HANDLE token;
	DWORD len = sizeof user, level = 0;
	uint64_t born, before;
	char why[256] = "";
	int rc;

	if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &token) ||
	    !GetTokenInformation(token, TokenUser, &user, sizeof user, &len) ||
	    !GetTokenInformation(token, TokenIntegrityLevel, &label, sizeof label, &len)) {
		check(false, "this process's token cannot be read (%lu)", GetLastError());
		return;
	}
	CloseHandle(token);
	level = *GetSidSubAuthority(label.l.Label.Sid, *GetSidSubAuthorityCount(label.l.Label.Sid) - 1);
	GetProcessTimes(GetCurrentProcess(), &created, &x1, &x2, &x3);
	born = ((uint64_t)created.dwHighDateTime << 32) | created.dwLowDateTime;

	rc = pipe_client_process_check(GetCurrentProcess(), user.tu.User.Sid, level, now_ticks(), why,
				       sizeof why);
	check(rc == 0, "the client's own process passes the process check (%s)", why);
	len = sizeof system;
	CreateWellKnownSid(WinLocalSystemSid, NULL, system, &len);
	rc = pipe_client_process_check(GetCurrentProcess(), system, level, now_ticks(), why,
				       sizeof why);
	check(rc == -EACCES && strstr(why, "runs as") != NULL,
	      "a process of another user than the client's token is refused: %s", why);
	rc = pipe_client_process_check(GetCurrentProcess(), user.tu.User.Sid, level - 0x1000,
				       now_ticks(), why, sizeof why);
	check(rc == -EACCES && strstr(why, "integrity level") != NULL,
	      "a process above the client's integrity level (elevated) is refused: %s", why);
	rc = pipe_client_process_check(GetCurrentProcess(), user.tu.User.Sid, level, born - 1000,
				       why, sizeof why);
	check(rc == -EACCES && strstr(why, "created") != NULL,
	      "a process created after the connect is refused: %s", why);
	/* a real one: a process made after the moment (as a process that
	 * took a gone client's pid would be) */
	before = now_ticks();
	Sleep(20);
	GetModuleFileNameW(NULL, self, MAX_PATH);
	_snwprintf(cmd, sizeof cmd / sizeof cmd[0], L"\"%ls\" child", self);
	if (CreateProcessW(NULL, cmd, NULL, NULL, FALSE, CREATE_SUSPENDED, NULL, NULL, &si, &pi)) {
		rc = pipe_client_process_check(pi.hProcess, user.tu.User.Sid, level, before, why,
					       sizeof why);
		check(rc == -EACCES && strstr(why, "created") != NULL,
		      "a new process of the same user, made after the connect, is refused: %s",
		      why);
		rc = pipe_client_process_check(pi.hProcess, user.tu.User.Sid, level, now_ticks(),
					       why, sizeof why);
		check(rc == 0, "... and passes with a connect after it was made (%s)", why);
		TerminateProcess(pi.hProcess, 0);
		CloseHandle(pi.hThread);
		CloseHandle(pi.hProcess);
	} else {
		check(false, "CreateProcessW: %lu", GetLastError());
		check(false, "(skipped)");
	}
}

int
main(int argc, char **argv)
{
	struct pipe_listener *l;
	char err[256] = "";
	WSADATA wsa;
	HANDLE loop;
	int rc;

	if (argc > 1 && strcmp(argv[1], "child") == 0)
		return 0;	/* test_process_check's process, never resumed */
	setvbuf(stdout, NULL, _IONBF, 0);
	InitializeCriticalSection(&lock);
	snprintf(pipe_name, sizeof pipe_name, "\\\\.\\pipe\\hotmap-transport-%lu",
		 GetCurrentProcessId());
	MultiByteToWideChar(CP_UTF8, 0, pipe_name, -1, pipe_name_w, 128);
	check(WSAStartup(MAKEWORD(2, 2), &wsa) == 0 && evthread_use_windows_threads() == 0 &&
	      (base = event_base_new()) != NULL, "a thread-safe event base");
	if (base == NULL)
		return 1;
	rc = transport_win32_start(base, err, sizeof err);
	check(rc == 0, "transport_win32_start %s", err);
	l = pipe_listener_new(base, pipe_name, NULL, 4, d_accept, d_failed, NULL, err, sizeof err);
	check(l != NULL, "listening on %s %s", pipe_name, err);
	if (rc < 0 || l == NULL)
		return 1;
	loop = CreateThread(NULL, 0, d_loop, NULL, 0, NULL);

	test_basics();
	test_second_listener();
	test_concurrent();
	test_big_reply();
	test_hostile();
	test_refuse();
	test_silent();
	test_handle_pull();
	test_pipe_dacl();
	test_process_check();

	event_base_loopexit(base, NULL);
	WaitForSingleObject(loop, INFINITE);
	CloseHandle(loop);
	pipe_listener_free(l);
	transport_win32_stop();
	check(listener_errors == 0, "no listener errors (%lu)", listener_errors);
	check(accepted >= CLIENTS + 9, "every connection was accepted (%u)", accepted);
	event_base_free(base);
	WSACleanup();
	printf("1..%d\n", checks);
	return failures == 0 ? 0 : 1;
}
