/* SPDX-License-Identifier: MIT */
/*
 * transport_win32.c - the named pipe transport (transport_win32.h): the
 * completion port, the pipe's instances and the listener.  The client's
 * identity and the peer's half on Windows are peer_win32.c's
 * (transport_win32_priv.h says what the two share).
 *
 * libevent cannot wait for a pipe (docs/windows.md, section 3), so every
 * pipe instance is associated with one completion port, and ConnectNamedPipe,
 * ReadFile and WriteFile are overlapped.  One thread waits on the port and
 * only queues what completed; event_active() hands the queue to the loop
 * thread, which does what peer_unix.c's callbacks do on a socket.  Each
 * instance has one OVERLAPPED per kind of operation (connect, read,
 * write), and at most one of each is in flight: reads land in the
 * instance's own buffer and are copied into the peer's input; a write
 * sends a copy of the start of the peer's output, drained when it
 * completed (the evbuffer may move its bytes while a write is in flight).
 *
 * An instance given up while an operation is in flight is cancelled
 * (CancelIoEx) and freed when the last completion arrives, never before:
 * the kernel writes into its OVERLAPPED until then.
 *
 * The client's process, which handles are pulled from, is opened at
 * connect by the pid the pipe reports, and kept only once it is shown to
 * be the client (pipe_client_process_check, at accept): a pid names the
 * process that opened the pipe, not the one that holds it now.
 */
#include "config.h"

#include "daemon/transport/transport_win32_priv.h"

struct pipe_listener {
	struct event_base *base;
	wchar_t name[256];
	PSECURITY_DESCRIPTOR sd;
	SECURITY_ATTRIBUTES sa;
	unsigned want;			/* instances to keep waiting */
	unsigned waiting;
	struct pipe_conn *conns;	/* those waiting */
	struct pipe_conn *greeting;	/* connected, first bytes not yet in */
	struct event *ev_retry;
	void (*accept)(hm_conn conn, void *arg);
	void (*failed)(const char *what, unsigned long error, void *arg);
	void *arg;
};

static struct {
	bool started;
	HANDLE port;
	HANDLE thread;
	CRITICAL_SECTION lock;
	struct tw_op *head, *tail;	/* completions for the loop thread */
	struct event *ev;
	volatile LONG live;		/* instances not yet freed */
} tw;

/* --- completions --------------------------------------------------------- */

/* Any thread: hands op to the loop thread. */
void
tw_queue(struct tw_op *op)
{
	bool wake;

	if (op->kind == TW_CONNECT) {
		/* As early as this process can know of a client (the port's
		 * thread, or the call that found it connected), for the
		 * creation time pipe_client_process_check compares.  The
		 * precise clock: a process's creation time is the system
		 * time when it was made, and the coarse clock may still show
		 * the tick before it. */
		FILETIME now;

		GetSystemTimePreciseAsFileTime(&now);
		op->c->connected_at = ((uint64_t)now.dwHighDateTime << 32) | now.dwLowDateTime;
	}
	EnterCriticalSection(&tw.lock);
	op->next = NULL;
	wake = tw.head == NULL;
	if (tw.tail != NULL)
		tw.tail->next = op;
	else
		tw.head = op;
	tw.tail = op;
	LeaveCriticalSection(&tw.lock);
	/* one wake-up for a batch: the loop takes the whole queue */
	if (wake)
		event_active(tw.ev, EV_READ, 0);
}

static DWORD WINAPI
tw_thread(void *arg)
{
	OVERLAPPED_ENTRY e[64];
	ULONG n, i;

	(void)arg;
	for (;;) {
		bool quit = false;

		if (!GetQueuedCompletionStatusEx(tw.port, e, 64, &n, INFINITE, FALSE)) {
			if (GetLastError() == ERROR_ABANDONED_WAIT_0)
				return 0;	/* the port is gone */
			continue;
		}
		for (i = 0; i < n; i++) {
			struct tw_op *op;

			if (e[i].lpCompletionKey == TW_KEY_QUIT) {
				quit = true;
				continue;
			}
			op = CONTAINING_RECORD(e[i].lpOverlapped, struct tw_op, ov);
			op->bytes = e[i].dwNumberOfBytesTransferred;
			tw_queue(op);
		}
		if (quit)
			return 0;
	}
}

void
op_begin(struct tw_op *op)
{
	memset(&op->ov, 0, sizeof op->ov);
	op->busy = true;
	op->failed_now = false;
	op->error = 0;
	op->bytes = 0;
	op->c->busy++;
}

/* The call failed at once (or, for a connect, succeeded at once): no
 * packet comes from the port, so the loop gets one from here, later. */
void
op_done_now(struct tw_op *op, DWORD error)
{
	op->failed_now = true;
	op->error = error;
	tw_queue(op);
}

static struct pipe_conn *
conn_new(void)
{
	struct pipe_conn *c = calloc(1, sizeof *c);

	if (c == NULL)
		return NULL;
	c->h = INVALID_HANDLE_VALUE;
	c->rd.kind = TW_READ;
	c->wr.kind = TW_WRITE;
	c->cn.kind = TW_CONNECT;
	c->rd.c = c->wr.c = c->cn.c = c;
	InterlockedIncrement(&tw.live);
	return c;
}

static void
conn_destroy(struct pipe_conn *c)
{
	if (c->ev_first != NULL)
		event_free(c->ev_first);
	if (c->h != INVALID_HANDLE_VALUE)
		CloseHandle(c->h);
	if (c->process != NULL)
		CloseHandle(c->process);
	free(c);
	InterlockedDecrement(&tw.live);
}

/* Nobody wants c any more: freed now, or once what is in flight is
 * cancelled and completed.  A refused client's error reply is let finish
 * (peer_refuse): only reads and connects are cancelled then. */
void
conn_give_up(struct pipe_conn *c, bool let_write_finish)
{
	c->peer = NULL;
	c->given_up = true;
	if (c->busy == 0) {
		conn_destroy(c);
		return;
	}
	if (c->rd.busy)
		CancelIoEx(c->h, &c->rd.ov);
	if (c->cn.busy)
		CancelIoEx(c->h, &c->cn.ov);
	if (c->wr.busy && !let_write_finish)
		CancelIoEx(c->h, &c->wr.ov);
}

void
conn_post_read(struct pipe_conn *c)
{
	if (c->rd.busy || c->given_up)
		return;
	op_begin(&c->rd);
	if (!ReadFile(c->h, c->rbuf, TW_BUF, NULL, &c->rd.ov)) {
		DWORD e = GetLastError();

		if (e != ERROR_IO_PENDING)
			op_done_now(&c->rd, e);
	}
}

/* Sends a copy of the start of out (drained when the write completed). */
void
conn_post_write(struct pipe_conn *c, struct evbuffer *out)
{
	ev_ssize_t n;

	if (c->wr.busy || c->given_up)
		return;
	n = evbuffer_copyout(out, c->wbuf, TW_BUF);
	if (n <= 0)
		return;
	op_begin(&c->wr);
	if (!WriteFile(c->h, c->wbuf, (DWORD)n, NULL, &c->wr.ov)) {
		DWORD e = GetLastError();

		if (e != ERROR_IO_PENDING)
			op_done_now(&c->wr, e);
	}
}

static void
conn_read_done(struct pipe_conn *c, const struct tw_op *op)
{
	struct peer *p = c->peer;

	if (p == NULL)
		return;
	switch (op->error) {
	case 0:
		if (op->bytes == 0)
			break;	/* nothing came: read again */
		if (evbuffer_add(p->in, c->rbuf, op->bytes) < 0)
			peer_fail(p, "out of memory");
		else
			peer_input(p);
		break;
	case ERROR_BROKEN_PIPE:
	case ERROR_PIPE_NOT_CONNECTED:
	case ERROR_NO_DATA:
		peer_input_eof(p);
		break;
	case ERROR_OPERATION_ABORTED:
		break;
	default:
		peer_fail(p, "read: Windows error %lu", (unsigned long)op->error);
		break;
	}
	peer_finish(p);
}

static void
conn_write_done(struct pipe_conn *c, const struct tw_op *op)
{
	struct peer *p = c->peer;

	if (p == NULL)
		return;
	if (op->error == ERROR_BROKEN_PIPE || op->error == ERROR_PIPE_NOT_CONNECTED ||
	    op->error == ERROR_NO_DATA) {
		/* the client hung up before it read every reply (a CLOSE it
		 * does not wait for, say): a goodbye, as a hang-up seen by a
		 * read is, unless it left a frame half sent */
		peer_input_eof(p);
	} else if (op->error != 0) {
		peer_fail(p, "write: Windows error %lu", (unsigned long)op->error);
	} else {
		evbuffer_drain(p->out, op->bytes);
		/* the next piece, then what waited for output room */
		peer_write(p);
	}
	peer_finish(p);
}

static void listener_connected(struct pipe_conn *c, DWORD error);
static void listener_first_read(struct pipe_conn *c, const struct tw_op *op);

static void
tw_complete(struct tw_op *op)
{
	struct pipe_conn *c = op->c;

	if (!op->failed_now) {
		DWORD n;

		op->error = GetOverlappedResult(c->h, &op->ov, &n, FALSE) ? 0 : GetLastError();
	}
	op->busy = false;
	c->busy--;
	if (c->given_up) {
		if (c->busy == 0)
			conn_destroy(c);
		return;
	}
	switch (op->kind) {
	case TW_CONNECT:
		listener_connected(c, op->error);
		break;
	case TW_READ:
		if (c->greeting)
			listener_first_read(c, op);
		else
			conn_read_done(c, op);
		break;
	case TW_WRITE:
		conn_write_done(c, op);
		break;
	}
}

/* Completes what the port's thread queued; returns how many. */
static unsigned
tw_drain(void)
{
	struct tw_op *op, *next;
	unsigned n = 0;

	EnterCriticalSection(&tw.lock);
	op = tw.head;
	tw.head = tw.tail = NULL;
	LeaveCriticalSection(&tw.lock);
	for (; op != NULL; op = next, n++) {
		next = op->next;
		tw_complete(op);
	}
	return n;
}

static void
tw_event_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	tw_drain();
}

int
transport_win32_start(struct event_base *base, char *err, size_t errlen)
{
	if (tw.started)
		return 0;
	tw.port = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 1);
	if (tw.port == NULL) {
		snprintf(err, errlen, "CreateIoCompletionPort: Windows error %lu", GetLastError());
		return -ENOMEM;
	}
	InitializeCriticalSection(&tw.lock);
	tw.ev = event_new(base, -1, 0, tw_event_cb, NULL);
	if (tw.ev != NULL)
		tw.thread = CreateThread(NULL, 0, tw_thread, NULL, 0, NULL);
	if (tw.ev == NULL || tw.thread == NULL) {
		snprintf(err, errlen, "cannot start the pipe transport's thread");
		if (tw.ev != NULL)
			event_free(tw.ev);
		DeleteCriticalSection(&tw.lock);
		CloseHandle(tw.port);
		memset(&tw, 0, sizeof tw);
		return -ENOMEM;
	}
	tw.started = true;
	return 0;
}

void
transport_win32_stop(void)
{
	ULONGLONG until;

	if (!tw.started)
		return;
	/* instances given up wait for their cancelled I/O to complete */
	until = GetTickCount64() + TW_STOP_WAIT_MS;
	while (tw.live > 0 && GetTickCount64() < until)
		if (tw_drain() == 0)
			Sleep(5);
	PostQueuedCompletionStatus(tw.port, 0, TW_KEY_QUIT, NULL);
	WaitForSingleObject(tw.thread, INFINITE);
	CloseHandle(tw.thread);
	/* what still waits (nothing, unless an instance outlived the wait)
	 * is left to the process's exit: its memory may still be written */
	tw.head = tw.tail = NULL;
	event_free(tw.ev);
	CloseHandle(tw.port);
	DeleteCriticalSection(&tw.lock);
	memset(&tw, 0, sizeof tw);
}

/* --- the listener -------------------------------------------------------- */

static void
listener_unlink(struct pipe_listener *l, struct pipe_conn *c)
{
	if (c->lprev != NULL)
		c->lprev->lnext = c->lnext;
	else if (c->greeting)
		l->greeting = c->lnext;
	else
		l->conns = c->lnext;
	if (c->lnext != NULL)
		c->lnext->lprev = c->lprev;
	c->lprev = c->lnext = NULL;
	c->listener = NULL;
	if (c->greeting) {
		c->greeting = false;
		if (c->ev_first != NULL)
			event_free(c->ev_first);
		c->ev_first = NULL;
	} else {
		l->waiting--;
	}
}

static void
listener_first_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct pipe_conn *c = arg;

	(void)fd;
	(void)what;
	/* connected and silent: dropped, as a session without HELLO is */
	listener_unlink(c->listener, c);
	conn_give_up(c, false);
}

/* One more instance waiting for a client.  0, or the Windows error. */
static DWORD
listener_add(struct pipe_listener *l, bool first)
{
	struct pipe_conn *c = conn_new();
	DWORD e;

	if (c == NULL)
		return ERROR_NOT_ENOUGH_MEMORY;
	/* FIRST_PIPE_INSTANCE: if another process made the name first (a
	 * squatter), creating fails instead of joining its instances */
	c->h = CreateNamedPipeW(l->name,
				PIPE_ACCESS_DUPLEX | FILE_FLAG_OVERLAPPED |
				(first ? FILE_FLAG_FIRST_PIPE_INSTANCE : 0),
				PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT |
				PIPE_REJECT_REMOTE_CLIENTS,
				PIPE_UNLIMITED_INSTANCES, TW_BUF, TW_BUF, 0, &l->sa);
	if (c->h == INVALID_HANDLE_VALUE ||
	    CreateIoCompletionPort(c->h, tw.port, TW_KEY_IO, 0) == NULL) {
		e = GetLastError();
		conn_destroy(c);
		return e != 0 ? e : ERROR_GEN_FAILURE;
	}
	c->listener = l;
	c->lnext = l->conns;
	if (l->conns != NULL)
		l->conns->lprev = c;
	l->conns = c;
	l->waiting++;
	op_begin(&c->cn);
	if (!ConnectNamedPipe(c->h, &c->cn.ov)) {
		e = GetLastError();
		if (e == ERROR_PIPE_CONNECTED)
			op_done_now(&c->cn, 0);	/* a client came before we asked */
		else if (e != ERROR_IO_PENDING)
			op_done_now(&c->cn, e);
	}
	return 0;
}

static void
listener_fill(struct pipe_listener *l)
{
	while (l->waiting < l->want) {
		DWORD e = listener_add(l, false);

		if (e != 0) {
			struct timeval tv = { TW_RETRY_S, 0 };

			l->failed("CreateNamedPipe", e, l->arg);
			evtimer_add(l->ev_retry, &tv);
			return;
		}
	}
}

static void
listener_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	listener_fill(arg);
}

static void
listener_connected(struct pipe_conn *c, DWORD error)
{
	struct pipe_listener *l = c->listener;

	listener_unlink(l, c);
	listener_fill(l);
	if (error != 0) {
		l->failed("ConnectNamedPipe", error, l->arg);
		conn_give_up(c, false);
		return;
	}
	/*
	 * The client's process, for handle pulls, opened as soon as we know
	 * of it: once it is open its pid cannot name another process.  But
	 * the pid is that of the process that opened the pipe, which may
	 * have passed its handle on and exited before now, and its pid been
	 * given to another process: peer_ident_of checks which process this
	 * is (pipe_client_process_check) before any pull may use it.
	 */
	if (GetNamedPipeClientProcessId(c->h, &c->pid) && c->pid != 0) {
		c->process = OpenProcess(PROCESS_DUP_HANDLE | PROCESS_QUERY_LIMITED_INFORMATION,
					 FALSE, c->pid);
		if (c->process == NULL)
			c->process_error = GetLastError();
	}
	/*
	 * Windows lets a pipe server impersonate its client only once data
	 * has been read from the pipe (ERROR_CANNOT_IMPERSONATE), and who the
	 * client is decides its admission: the connection goes to accept
	 * with its first bytes read (they wait for the peer in rbuf).
	 */
	c->ev_first = evtimer_new(l->base, listener_first_timeout_cb, c);
	if (c->ev_first == NULL) {
		l->failed("evtimer_new", ERROR_NOT_ENOUGH_MEMORY, l->arg);
		conn_give_up(c, false);
		return;
	}
	{
		struct timeval tv = { TW_FIRST_BYTES_S, 0 };

		evtimer_add(c->ev_first, &tv);
	}
	c->greeting = true;
	c->listener = l;
	c->lnext = l->greeting;
	if (l->greeting != NULL)
		l->greeting->lprev = c;
	l->greeting = c;
	conn_post_read(c);
}

static void
listener_first_read(struct pipe_conn *c, const struct tw_op *op)
{
	struct pipe_listener *l = c->listener;

	if (op->error == 0 && op->bytes == 0) {
		conn_post_read(c);	/* nothing came: read again */
		return;
	}
	listener_unlink(l, c);
	if (op->error != 0) {
		/* gone before its first byte: nobody to answer */
		conn_give_up(c, false);
		return;
	}
	c->first_bytes = op->bytes;
	l->accept(c, l->arg);
}

struct pipe_listener *
pipe_listener_new(struct event_base *base, const char *name, const char *sddl, unsigned pending,
		  void (*accept)(hm_conn conn, void *arg),
		  void (*failed)(const char *what, unsigned long error, void *arg),
		  void *arg, char *err, size_t errlen)
{
	struct pipe_listener *l;
	DWORD e;

	if (!tw.started) {
		snprintf(err, errlen, "the pipe transport is not started");
		return NULL;
	}
	l = calloc(1, sizeof *l);
	if (l == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	l->base = base;
	l->want = pending > 0 ? pending : 1;
	l->accept = accept;
	l->failed = failed;
	l->arg = arg;
	if (strncmp(name, "\\\\.\\pipe\\", 9) != 0 ||
	    MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, name, -1, l->name,
				sizeof l->name / sizeof l->name[0]) == 0) {
		snprintf(err, errlen, "%s is not a pipe name (\\\\.\\pipe\\NAME, at most %zu characters)",
			 name, sizeof l->name / sizeof l->name[0] - 1);
		free(l);
		return NULL;
	}
	if (!ConvertStringSecurityDescriptorToSecurityDescriptorA(
		    sddl != NULL ? sddl : TRANSPORT_WIN32_SDDL, SDDL_REVISION_1, &l->sd, NULL)) {
		snprintf(err, errlen, "the pipe's security descriptor %s: Windows error %lu",
			 sddl != NULL ? sddl : TRANSPORT_WIN32_SDDL, GetLastError());
		free(l);
		return NULL;
	}
	l->sa.nLength = sizeof l->sa;
	l->sa.lpSecurityDescriptor = l->sd;
	l->sa.bInheritHandle = FALSE;
	l->ev_retry = evtimer_new(base, listener_retry_cb, l);
	if (l->ev_retry == NULL) {
		snprintf(err, errlen, "out of memory");
		pipe_listener_free(l);
		return NULL;
	}
	/* Someone serves the name already?  FILE_FLAG_FIRST_PIPE_INSTANCE
	 * says so on Windows; wine 8 ignores the flag (measured), so ask
	 * first as well: a pipe with an instance waiting answers at once,
	 * one whose instances are all busy times out.  (The flag closes the
	 * window between the two on Windows.) */
	if (WaitNamedPipeW(l->name, 1) || GetLastError() == ERROR_SEM_TIMEOUT)
		e = ERROR_PIPE_BUSY;
	else
		e = listener_add(l, true);
	if (e != 0) {
		if (e == ERROR_ACCESS_DENIED || e == ERROR_PIPE_BUSY)
			snprintf(err, errlen, "%s is taken: another process (another hotmapd?) "
				 "made that pipe first", name);
		else
			snprintf(err, errlen, "CreateNamedPipe %s: Windows error %lu", name,
				 (unsigned long)e);
		pipe_listener_free(l);
		return NULL;
	}
	listener_fill(l);
	return l;
}

void
pipe_listener_free(struct pipe_listener *l)
{
	if (l == NULL)
		return;
	while (l->conns != NULL) {
		struct pipe_conn *c = l->conns;

		listener_unlink(l, c);
		conn_give_up(c, false);
	}
	while (l->greeting != NULL) {
		struct pipe_conn *c = l->greeting;

		listener_unlink(l, c);
		conn_give_up(c, false);
	}
	if (l->ev_retry != NULL)
		event_free(l->ev_retry);
	if (l->sd != NULL)
		LocalFree(l->sd);
	free(l);
}

