/* SPDX-License-Identifier: MIT */
/*
 * e2e.c - hotmapd.exe and hotmap.dll together, under wine: the read
 * contract of the Linux integration tests (tests/test_integration.c)
 * through the named pipe.
 *
 * Starts build-windows/bin/hotmapd.exe (next to this program) on a pipe
 * of its own, then, each a TAP line:
 *   - ranges of a 1 MiB file byte for byte (small, unaligned, the whole
 *     file in one read, which the daemon sends in several READ_DATA frames);
 *   - reads at and past the end of the file: 0; across it: short;
 *   - the file extended while open: the next read sees the new bytes;
 *   - the file cut short once no one has it open (Windows refuses to
 *     truncate a mapped file): a new open reads short at the new end;
 *   - four clients in four threads at once, every byte checked;
 *   - hostile clients: a frame claiming 2 GiB, a half frame then gone,
 *     garbage: each is dropped, and a client connected all along is
 *     still served;
 *   - open by path beneath the daemon's --root, and refused outside it;
 *   - hm_reload, the way to reload without SIGHUP;
 *   - hm_stop: the daemon exits.
 * Exit status 0 when every check passed.
 *
 * Windows builds only (contrib/windows/build, run by contrib/windows/test).
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <windows.h>

#include "hotmap.h"
#include "hotmap_admin.h"
#include "proto/frame.h"
#include "proto/pipe_win32.h"

#define FILE_SIZE	(1u << 20)
#define THREADS		4

static unsigned checks, failed;
static char pipe_name[128];
static char dir[MAX_PATH], path[MAX_PATH];
static uint8_t *want;		/* the file's bytes as written */
static size_t want_len;

static void
ok(int cond, const char *fmt, ...)
{
	va_list ap;

	checks++;
	if (!cond)
		failed++;
	printf("%sok %u - ", cond ? "" : "not ", checks);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static void
fill(uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

/* Writes want[0, n) to path from offset 0 and sets the end of file at n. */
static int
write_file(size_t n)
{
	HANDLE h = CreateFileA(path, GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			       NULL, OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
	DWORD done = 0;
	int rc = -1;

	if (h == INVALID_HANDLE_VALUE)
		return -1;
	if (WriteFile(h, want, (DWORD)n, &done, NULL) && done == n && SetEndOfFile(h))
		rc = 0;
	CloseHandle(h);
	return rc;
}

/* hm_pread of [off, off + len): the bytes pread would give, and how many. */
static int
read_matches(hm_file *f, uint64_t off, size_t len)
{
	uint8_t *buf = malloc(len ? len : 1);
	size_t expect = off >= want_len ? 0 : len < want_len - off ? len : want_len - off;
	ssize_t n;
	int good;

	if (buf == NULL)
		return 0;
	n = hm_pread(f, buf, len, off);
	good = n == (ssize_t)expect && memcmp(buf, want + (off < want_len ? off : 0), expect) == 0;
	if (!good)
		fprintf(stdout, "# read %zu at %llu: got %lld, want %zu (%s)\n", len,
			(unsigned long long)off, (long long)n, expect, n < 0 ? hm_last_error() : "bytes");
	free(buf);
	return good;
}

static hm_client *
connect_retry(void)
{
	hm_client *c = NULL;
	int i;

	for (i = 0; i < 200 && c == NULL; i++) {
		c = hm_connect(pipe_name);
		if (c == NULL)
			Sleep(50);
	}
	return c;
}

struct worker {
	int good;
	unsigned reads;
};

static DWORD WINAPI
worker_main(void *arg)
{
	struct worker *w = arg;
	hm_client *c = hm_connect(pipe_name);
	hm_file *f = c != NULL ? hm_open(c, path, 0) : NULL;
	uint32_t seed = (uint32_t)(uintptr_t)arg;
	unsigned i;

	w->good = f != NULL;
	for (i = 0; i < 200 && w->good; i++) {
		size_t len;
		uint64_t off;

		seed = seed * 1103515245u + 12345u;
		off = (seed >> 8) % want_len;
		len = 1 + (seed % 70000);
		w->good = read_matches(f, off, len);
		w->reads++;
	}
	if (f != NULL)
		hm_close(f);
	hm_disconnect(c);
	return 0;
}

/* A raw connection to the daemon's pipe, speaking no protocol. */
static HANDLE
raw_connect(void)
{
	HANDLE h = INVALID_HANDLE_VALUE;
	int i;

	for (i = 0; i < 100 && h == INVALID_HANDLE_VALUE; i++) {
		/* what any user may have of the pipe (proto/pipe_win32.h) */
		h = CreateFileA(pipe_name, PIPE_CLIENT_ACCESS, 0, NULL, OPEN_EXISTING,
				SECURITY_SQOS_PRESENT | SECURITY_IDENTIFICATION, NULL);
		if (h == INVALID_HANDLE_VALUE)
			WaitNamedPipeA(pipe_name, 100);
	}
	return h;
}

/* Whether the daemon ends the connection h within about 10 s: a read
 * returns EOF or a broken pipe (an ERROR frame may come first). */
static int
dropped(HANDLE h)
{
	uint8_t buf[4096];
	DWORD avail, got;
	int i;

	for (i = 0; i < 200; i++) {
		if (!PeekNamedPipe(h, NULL, 0, NULL, &avail, NULL))
			return 1;	/* the daemon closed its end */
		if (avail > 0 && !ReadFile(h, buf, avail < sizeof buf ? avail : sizeof buf, &got, NULL))
			return 1;
		Sleep(50);
	}
	return 0;
}

static int
send_header(HANDLE h, uint32_t length, uint16_t type)
{
	struct hm_frame_header fh = { .length = length, .raw_length = 0, .type = type,
				      .version = HM_PROTO_VERSION, .flags = 0, .id = 1 };
	uint8_t b[HM_FRAME_HEADER_SIZE];
	DWORD done;

	frame_header_encode(&fh, b);
	return WriteFile(h, b, sizeof b, &done, NULL) && done == sizeof b;
}

int
main(void)
{
	char exe[MAX_PATH], cmd[MAX_PATH + 256], *slash;
	STARTUPINFOA si = { .cb = sizeof si };
	PROCESS_INFORMATION pi;
	hm_client *c, *steady;
	hm_file *f;
	struct worker w[THREADS];
	HANDLE th[THREADS], raw;
	DWORD code;
	int i, good;

	printf("1..22\n");
	snprintf(pipe_name, sizeof pipe_name, "\\\\.\\pipe\\hotmap-e2e-%lu", GetCurrentProcessId());
	if (GetTempPathA(sizeof dir, dir) == 0 ||
	    snprintf(path, sizeof path, "%shotmap-e2e-%lu.bin", dir, GetCurrentProcessId()) >= (int)sizeof path) {
		printf("Bail out! no temporary directory\n");
		return 1;
	}
	want = malloc(2 * FILE_SIZE);
	if (want == NULL)
		return 1;
	fill(want, 2 * FILE_SIZE, 7);
	want_len = FILE_SIZE;
	if (write_file(want_len) < 0) {
		printf("Bail out! cannot write %s\n", path);
		return 1;
	}

	/* hotmapd.exe from beside this program */
	GetModuleFileNameA(NULL, exe, sizeof exe);
	slash = strrchr(exe, '\\');
	if (slash == NULL) {
		printf("Bail out! no directory in %s\n", exe);
		return 1;
	}
	slash[1] = '\0';
	/* the temporary directory is its root, without the trailing '\\' */
	snprintf(cmd, sizeof cmd, "\"%shotmapd.exe\" --foreground --socket %s --root \"%.*s\"", exe,
		 pipe_name, (int)strlen(dir) - 1, dir);
	if (!CreateProcessA(NULL, cmd, NULL, NULL, FALSE, 0, NULL, NULL, &si, &pi)) {
		printf("Bail out! cannot start %s (error %lu)\n", cmd, GetLastError());
		return 1;
	}
	c = connect_retry();
	ok(c != NULL, "hotmapd.exe serves on %s", pipe_name);
	if (c == NULL) {
		TerminateProcess(pi.hProcess, 1);
		return 1;
	}
	steady = hm_connect(pipe_name);

	/* --- ranges byte for byte ------------------------------------------- */
	f = hm_open(c, path, 0);
	ok(f != NULL, "hm_open of a 1 MiB file (the client's handle, pulled by the daemon)%s%s",
	   f == NULL ? ": " : "", f == NULL ? hm_last_error() : "");
	if (f == NULL)
		goto stop;
	good = read_matches(f, 0, 1) && read_matches(f, 4095, 2) && read_matches(f, 12345, 54321) &&
	       read_matches(f, FILE_SIZE - 100, 100);
	ok(good, "small and unaligned ranges are the file's bytes");
	ok(read_matches(f, 0, FILE_SIZE), "the whole file in one read (several READ_DATA frames)");
	ok(read_matches(f, FILE_SIZE, 10), "a read at the end of the file gives 0 bytes");
	ok(read_matches(f, FILE_SIZE + 4096, 10), "a read past the end gives 0 bytes");
	ok(read_matches(f, FILE_SIZE - 10, 100), "a read across the end is short: 10 bytes");
	{
		struct hm_stat st;

		ok(hm_stat(f, &st) == 0 && st.size == FILE_SIZE, "hm_stat: the size is 1 MiB");
	}

	/* --- extended while open -------------------------------------------- */
	want_len = FILE_SIZE + 300000;
	ok(write_file(want_len) == 0, "the file is extended by 300000 bytes while open");
	ok(read_matches(f, FILE_SIZE - 1000, 200000), "a read across the old end sees the new bytes");
	hm_close(f);

	/* --- cut short once closed ------------------------------------------- */
	ok(hm_ping(c, NULL) == 0, "the daemon has closed the handle (a later call on the client)");
	want_len = 5000;
	good = 0;
	for (i = 0; i < 40 && !good; i++) {	/* the daemon unmaps at its last close */
		good = write_file(want_len) == 0;
		if (!good)
			Sleep(50);
	}
	ok(good, "the file is cut to 5000 bytes once no one has it open");
	f = hm_open(c, path, 0);
	ok(f != NULL && read_matches(f, 4000, 4096) && read_matches(f, 6000, 10),
	   "opened again: short at the new end, 0 past it");
	if (f != NULL)
		hm_close(f);
	want_len = FILE_SIZE;
	write_file(want_len);

	/* --- clients at once -------------------------------------------------- */
	for (i = 0; i < THREADS; i++) {
		w[i].good = 0;
		w[i].reads = 0;
		th[i] = CreateThread(NULL, 0, worker_main, &w[i], 0, NULL);
	}
	WaitForMultipleObjects(THREADS, th, TRUE, 120000);
	good = 1;
	for (i = 0; i < THREADS; i++) {
		good = good && w[i].good && w[i].reads == 200;
		CloseHandle(th[i]);
	}
	ok(good, "%d clients in %d threads at once, 200 reads each, every byte right", THREADS, THREADS);

	/* --- hostile clients -------------------------------------------------- */
	raw = raw_connect();
	ok(raw != INVALID_HANDLE_VALUE && send_header(raw, 0x80000000u, HM_MSG_HELLO) && dropped(raw),
	   "a frame claiming 2 GiB is dropped at its header");
	if (raw != INVALID_HANDLE_VALUE)
		CloseHandle(raw);
	raw = raw_connect();
	if (raw != INVALID_HANDLE_VALUE) {
		send_header(raw, 100, HM_MSG_HELLO);	/* and never the body */
		CloseHandle(raw);
	}
	raw = raw_connect();
	{
		static const char junk[] = "GET / HTTP/1.0\r\n\r\nnot a frame at all, not at all";
		DWORD done;

		ok(raw != INVALID_HANDLE_VALUE && WriteFile(raw, junk, sizeof junk, &done, NULL) &&
		   dropped(raw), "garbage is dropped");
	}
	if (raw != INVALID_HANDLE_VALUE)
		CloseHandle(raw);
	f = steady != NULL ? hm_open(steady, path, 0) : NULL;
	ok(f != NULL && read_matches(f, 777, 65536),
	   "a client connected all along (and one that left half a frame) did not stop the daemon");
	if (f != NULL)
		hm_close(f);
	hm_disconnect(steady);

	/* --- by path beneath the root -------------------------------------------- */
	f = hm_open(c, path, HM_O_PATH);
	ok(f != NULL && read_matches(f, 4321, 100000), "open by path beneath --root: the file's bytes%s%s",
	   f == NULL ? ": " : "", f == NULL ? hm_last_error() : "");
	if (f != NULL)
		hm_close(f);
	{
		char outside[MAX_PATH];

		GetModuleFileNameA(NULL, outside, sizeof outside);	/* this program */
		errno = 0;
		f = hm_open(c, outside, HM_O_PATH);
		ok(f == NULL && errno == EACCES, "open by path outside the root: EACCES (%s)",
		   hm_last_error());
		if (f != NULL)
			hm_close(f);
	}

	/* --- reload ------------------------------------------------------------- */
	{
		char used[MAX_PATH] = "x";

		i = hm_reload(c, NULL, NULL, used, sizeof used);
		ok(i == 0 && used[0] == '\0', "hm_reload: reloaded, from no file (built-in defaults)%s%s",
		   i < 0 ? ": " : "", i < 0 ? hm_last_error() : "");
	}

	/* --- stop --------------------------------------------------------------- */
stop:
	i = hm_stop(c, NULL);
	ok(i == 0, "hm_stop asks the daemon to stop%s%s", i < 0 ? ": " : "", i < 0 ? hm_last_error() : "");
	hm_disconnect(c);
	if (WaitForSingleObject(pi.hProcess, 20000) != WAIT_OBJECT_0)
		TerminateProcess(pi.hProcess, 1);
	if (!GetExitCodeProcess(pi.hProcess, &code))
		code = 255;
	ok(code == 0, "hotmapd.exe exits 0 (exit %lu)", (unsigned long)code);
	CloseHandle(pi.hProcess);
	CloseHandle(pi.hThread);
	DeleteFileA(path);
	free(want);
	return failed == 0 && checks == 22 ? 0 : 1;
}
