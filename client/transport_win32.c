/* SPDX-License-Identifier: MIT */
/*
 * transport_win32.c - libhotmap's connection on Windows (see transport.h):
 * a named pipe, \\.\pipe\hotmap by default (docs/windows.md, section 6).
 *
 * The pipe is opened with FILE_FLAG_OVERLAPPED and every ReadFile and
 * WriteFile has an OVERLAPPED (and an event) of its own: I/O on a
 * synchronous handle is serialized per file object, so the one thread
 * blocked reading replies would block every other thread's request.
 * SECURITY_SQOS_PRESENT | SECURITY_IDENTIFICATION: the daemon may learn
 * who we are, never act as us.  The access asked for is PIPE_CLIENT_ACCESS
 * (proto/pipe_win32.h: read, and write data), not GENERIC_WRITE: the
 * pipe's security descriptor gives users no more, since GENERIC_WRITE
 * holds the right to make instances of the pipe.
 *
 * Each thread has one event for its I/O (a thread has one ReadFile or
 * WriteFile in flight at a time, and starting one resets the event),
 * kept in fiber-local storage, whose callback closes it when the thread
 * ends: a CreateEvent and a CloseHandle per I/O would be two more system
 * calls on every read.
 *
 * hm_conn is the pipe's HANDLE.  A shutdown (client_break) cancels every
 * I/O in flight on it (CancelIoEx); an I/O started after the client broke
 * cancels itself, since the breaker sets c->broken before it cancels and
 * each I/O looks at c->broken after it started.
 *
 * Files go along by value: the OPEN carries the handle's value and the
 * daemon pulls it (DuplicateHandle); nothing is sent with the bytes, and
 * no descriptor ever comes back.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "client/transport.h"
#include "client/win32.h"
#include "proto/endpoint.h"
#include "proto/pipe_win32.h"

/* How long a connect waits for a free pipe instance (ERROR_PIPE_BUSY). */
#define PIPE_BUSY_WAIT_MS	5000u

static DWORD io_event_slot = FLS_OUT_OF_INDEXES;
static pthread_once_t io_event_once = PTHREAD_ONCE_INIT;

static void WINAPI
io_event_free(void *event)
{
	if (event != NULL)
		CloseHandle(event);
}

static void
io_event_init(void)
{
	io_event_slot = FlsAlloc(io_event_free);
}

/* hotmap.dll unloaded by FreeLibrary (reserved NULL; not at the
 * process's exit): the slot goes, its callback run for every thread now,
 * so that no thread ends later calling into the unloaded DLL. */
BOOL WINAPI DllMain(HINSTANCE dll, DWORD reason, LPVOID reserved);
BOOL WINAPI
DllMain(HINSTANCE dll, DWORD reason, LPVOID reserved)
{
	(void)dll;
	if (reason == DLL_PROCESS_DETACH && reserved == NULL &&
	    io_event_slot != FLS_OUT_OF_INDEXES) {
		FlsFree(io_event_slot);
		io_event_slot = FLS_OUT_OF_INDEXES;
	}
	return TRUE;
}

/* The calling thread's I/O event, or NULL. */
static HANDLE
io_event(void)
{
	HANDLE ev;

	pthread_once(&io_event_once, io_event_init);
	if (io_event_slot == FLS_OUT_OF_INDEXES)
		return NULL;
	ev = FlsGetValue(io_event_slot);
	if (ev == NULL) {
		ev = CreateEventW(NULL, TRUE, FALSE, NULL);
		if (ev != NULL && !FlsSetValue(io_event_slot, ev)) {
			CloseHandle(ev);
			ev = NULL;
		}
	}
	return ev;
}

static HANDLE
conn_pipe(const hm_client *c)
{
	return (HANDLE)c->conn;
}

int
transport_connect(hm_client *c, const char *path)
{
	ULONGLONG deadline = GetTickCount64() + PIPE_BUSY_WAIT_MS;
	wchar_t *wpath;
	bool busy = false;
	HANDLE h;
	int rc = 0;

	if (strlen(path) >= ENDPOINT_MAX)
		return -ENAMETOOLONG;
	/* a local pipe's name, never a file that CreateFileW would open in
	 * its place (the daemon refuses remote clients anyway) */
	if (_strnicmp(path, "\\\\.\\pipe\\", 9) != 0 || path[9] == '\0')
		return -EINVAL;
	transport_close(c);
	wpath = win32_wide(path);
	if (wpath == NULL)
		return -errno;
	for (;;) {
		DWORD err;
		ULONGLONG now;

		h = CreateFileW(wpath, PIPE_CLIENT_ACCESS, 0, NULL, OPEN_EXISTING,
				FILE_FLAG_OVERLAPPED | SECURITY_SQOS_PRESENT | SECURITY_IDENTIFICATION,
				NULL);
		if (h != INVALID_HANDLE_VALUE)
			break;
		err = GetLastError();
		now = GetTickCount64();
		if (err == ERROR_PIPE_BUSY)
			busy = true;
		/* After a busy pipe, no instance at all is the moment the
		 * server replaces the one a client left: try again. */
		if ((err != ERROR_PIPE_BUSY && !(busy && err == ERROR_FILE_NOT_FOUND)) ||
		    now >= deadline) {
			/* no such pipe: nobody listens, as ECONNREFUSED on a
			 * socket whose file is left; ENOENT keeps the Linux
			 * meaning of "no daemon there" for connect_default */
			rc = busy ? -EAGAIN : -win32_errno(err);
			break;
		}
		/* every instance busy: wait for one, then race for it.  The
		 * wait fails at once while there is no instance (and, under
		 * wine, with an odd error while one is being closed): a short
		 * sleep, and the next try. */
		if (!WaitNamedPipeW(wpath, (DWORD)(deadline - now)))
			Sleep(10);
	}
	free(wpath);
	if (rc == 0)
		c->conn = (hm_conn)h;
	return rc;
}

void
transport_close(hm_client *c)
{
	if (c->conn != HM_CONN_NONE)
		CloseHandle(conn_pipe(c));
	c->conn = HM_CONN_NONE;
}

void
transport_shutdown(hm_client *c)
{
	if (c->conn != HM_CONN_NONE)
		CancelIoEx(conn_pipe(c), NULL);
}

/*
 * One overlapped ReadFile or WriteFile of len bytes, waited for: bytes
 * moved, or minus the Windows error.  A client
 * broken meanwhile cancels it (ERROR_OPERATION_ABORTED).
 */
static long long
pipe_io(hm_client *c, bool write, void *buf, size_t len)
{
	OVERLAPPED ov;
	DWORD n = 0, chunk = len > 0x40000000u ? 0x40000000u : (DWORD)len;
	BOOL ok;

	memset(&ov, 0, sizeof ov);
	ov.hEvent = io_event();
	if (ov.hEvent == NULL)
		return -(long long)ERROR_NOT_ENOUGH_MEMORY;
	ok = write ? WriteFile(conn_pipe(c), buf, chunk, NULL, &ov) :
		     ReadFile(conn_pipe(c), buf, chunk, NULL, &ov);
	if (!ok && GetLastError() == ERROR_IO_PENDING) {
		if (__atomic_load_n(&c->broken, __ATOMIC_SEQ_CST))
			CancelIoEx(conn_pipe(c), &ov);
		ok = GetOverlappedResult(conn_pipe(c), &ov, &n, TRUE);
	} else if (ok) {
		ok = GetOverlappedResult(conn_pipe(c), &ov, &n, FALSE);
	}
	if (!ok)
		return -(long long)GetLastError();
	return (long long)n;
}

/* The pipe's end, and our own cancel, read as the socket's would. */
static bool
pipe_gone(DWORD err)
{
	return err == ERROR_BROKEN_PIPE || err == ERROR_PIPE_NOT_CONNECTED ||
	       err == ERROR_NO_DATA || err == ERROR_OPERATION_ABORTED;
}

ssize_t
transport_send(hm_client *c, const uint8_t *buf, size_t len, int pass_fd)
{
	long long w;

	(void)pass_fd;	/* never set here: transport_attach passes none */
	if (c->conn == HM_CONN_NONE)
		return -ENOTCONN;
	w = pipe_io(c, true, (void *)buf, len);
	if (w < 0)
		return pipe_gone((DWORD)-w) ? -EPIPE : -win32_errno((DWORD)-w);
	if (w == 0)
		return -EPIPE;
	return (ssize_t)w;
}

ssize_t
transport_recv(hm_client *c, uint8_t *buf, size_t len)
{
	long long r;

	if (c->conn == HM_CONN_NONE)
		return -ENOTCONN;
	do {
		r = pipe_io(c, false, buf, len);
		/* a zero-byte write of the server's reads as nothing: only
		 * the pipe's end is the end of the stream */
	} while (r == 0 && !__atomic_load_n(&c->broken, __ATOMIC_SEQ_CST));
	if (r < 0)
		return pipe_gone((DWORD)-r) ? 0 : -win32_errno((DWORD)-r);
	c->rx_end += (uint64_t)r;
	return (ssize_t)r;
}

int
transport_recv_all(hm_client *c, uint8_t *dst, size_t n)
{
	while (n > 0) {
		ssize_t r = transport_recv(c, dst, n);

		if (r == 0)
			return -ECONNRESET;
		if (r < 0)
			return (int)r;
		dst += r;
		n -= (size_t)r;
	}
	return 0;
}

int
transport_readable(hm_client *c, unsigned ms)
{
	(void)c;
	(void)ms;
	return -ENOTSUP;	/* never pipelined here (transport.h) */
}

int
transport_attach(hm_osfile f, uint64_t *handle_value)
{
	*handle_value = (uint64_t)f;
	return -1;
}

uint64_t
transport_features(void)
{
	/* the region is a section whose handle the daemon pulls, as files */
	return HM_FEATURE_OPEN_BY_PATH | HM_FEATURE_HANDLE_PULL | HM_FEATURE_SHM;
}
