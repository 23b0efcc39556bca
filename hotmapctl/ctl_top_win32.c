/* SPDX-License-Identifier: MIT */
/*
 * ctl_top_win32.c - hotmapctl top's terminal on Windows (ctl_term.h), with
 * the console API: ENABLE_VIRTUAL_TERMINAL_PROCESSING so that the escape
 * codes ctl_top.c writes work; keys and window size changes read with
 * ReadConsoleInputW after a timed wait on the input handle; Ctrl-C,
 * Ctrl-Break and closing the window (SetConsoleCtrlHandler, which runs
 * on a thread of its own) stop top through an event the wait also
 * watches.  A console that refuses the escape codes, or a stdout that is
 * not a console, gets the plain blocks of lines.
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <windows.h>

#include "hotmapctl/ctl.h"
#include "hotmapctl/ctl_term.h"

#define TOP_SCREEN_ENTER	"\033[?1049h\033[?25l\033[H\033[2J"
#define TOP_SCREEN_LEAVE	"\033[?25h\033[?1049l"

static struct {
	bool screen;		/* stdout is a console with escape codes on */
	bool keys;		/* stdin is a console, its mode saved */
	bool entered;
	HANDLE out, in;
	DWORD out_mode, in_mode;	/* as they were */
	HANDLE stop;		/* set by the control handler */
	volatile LONG stops;	/* control events seen */
} top_con;

static BOOL WINAPI
top_on_control(DWORD type)
{
	(void)type;
	if (InterlockedIncrement(&top_con.stops) > 1) {
		/* asked twice: the daemon is not answering and the loop
		 * cannot see the first */
		if (top_con.entered) {
			fputs(TOP_SCREEN_LEAVE, stdout);
			fflush(stdout);
		}
		if (top_con.keys)
			SetConsoleMode(top_con.in, top_con.in_mode);
		if (top_con.screen)
			SetConsoleMode(top_con.out, top_con.out_mode);
		fputs("hotmapctl: top: interrupted\n", stderr);
		ExitProcess(1);
	}
	SetEvent(top_con.stop);
	return TRUE;
}

bool
top_term_start(void)
{
	top_con.out = GetStdHandle(STD_OUTPUT_HANDLE);
	top_con.in = GetStdHandle(STD_INPUT_HANDLE);
	top_con.stops = 0;
	top_con.stop = CreateEventW(NULL, TRUE, FALSE, NULL);
	top_con.screen = GetConsoleMode(top_con.out, &top_con.out_mode) &&
			 SetConsoleMode(top_con.out, top_con.out_mode |
					ENABLE_VIRTUAL_TERMINAL_PROCESSING | ENABLE_PROCESSED_OUTPUT);
	top_con.keys = top_con.screen && GetConsoleMode(top_con.in, &top_con.in_mode);
	if (top_con.stop != NULL)
		SetConsoleCtrlHandler(top_on_control, TRUE);
	return top_con.screen;
}

void
top_term_end(void)
{
	if (top_con.stop != NULL) {
		SetConsoleCtrlHandler(top_on_control, FALSE);
		CloseHandle(top_con.stop);
		top_con.stop = NULL;
	}
	if (top_con.screen)
		SetConsoleMode(top_con.out, top_con.out_mode);
	top_con.screen = false;
}

void
top_term_enter(void)
{
	if (!top_con.screen)
		return;
	if (top_con.keys)
		/* keys one at a time, no echo; Ctrl-C stays a control event */
		SetConsoleMode(top_con.in, (top_con.in_mode & ~(DWORD)(ENABLE_LINE_INPUT |
				ENABLE_ECHO_INPUT)) | ENABLE_WINDOW_INPUT | ENABLE_PROCESSED_INPUT);
	fputs(TOP_SCREEN_ENTER, stdout);
	fflush(stdout);
	top_con.entered = true;
}

void
top_term_leave(void)
{
	if (!top_con.entered)
		return;
	fputs(TOP_SCREEN_LEAVE, stdout);
	fflush(stdout);
	if (top_con.keys)
		SetConsoleMode(top_con.in, top_con.in_mode);
	top_con.entered = false;
}

void
top_term_size(int *rows, int *cols)
{
	CONSOLE_SCREEN_BUFFER_INFO bi;

	if (GetConsoleScreenBufferInfo(top_con.out, &bi)) {
		int r = bi.srWindow.Bottom - bi.srWindow.Top + 1;
		int c = bi.srWindow.Right - bi.srWindow.Left + 1;

		if (r > 0 && c > 0) {
			*rows = r;
			*cols = c;
		}
	}
}

/* The console's pending input: STOP for q, REDRAW for a new size, else
 * TIME (nothing that matters; the caller waits on). */
static enum top_term_event
top_read_keys(void)
{
	INPUT_RECORD rec[32];
	enum top_term_event ev = TOP_TERM_TIME;
	DWORD n = 0, i;

	if (!ReadConsoleInputW(top_con.in, rec, 32, &n)) {
		top_con.keys = false;	/* not a console after all: signals only */
		return TOP_TERM_TIME;
	}
	for (i = 0; i < n; i++) {
		if (rec[i].EventType == KEY_EVENT && rec[i].Event.KeyEvent.bKeyDown &&
		    (rec[i].Event.KeyEvent.uChar.UnicodeChar == L'q' ||
		     rec[i].Event.KeyEvent.uChar.UnicodeChar == L'Q'))
			return TOP_TERM_STOP;
		if (rec[i].EventType == WINDOW_BUFFER_SIZE_EVENT)
			ev = TOP_TERM_REDRAW;
	}
	return ev;
}

enum top_term_event
top_term_wait(double deadline)
{
	for (;;) {
		HANDLE h[2];
		DWORD n = 0, r, ms;
		double left = deadline - ctl_now_us();

		if (top_con.stop != NULL && WaitForSingleObject(top_con.stop, 0) == WAIT_OBJECT_0)
			return TOP_TERM_STOP;
		if (left <= 0)
			return TOP_TERM_TIME;
		ms = left / 1e3 >= 1e9 ? 1000000000u : (DWORD)(left / 1e3) + 1;
		if (top_con.stop != NULL)
			h[n++] = top_con.stop;
		if (top_con.keys)
			h[n++] = top_con.in;
		if (n == 0) {
			Sleep(ms);
			continue;
		}
		r = WaitForMultipleObjects(n, h, FALSE, ms);
		if (r == WAIT_OBJECT_0 + n - 1 && top_con.keys) {
			enum top_term_event ev = top_read_keys();

			if (ev != TOP_TERM_TIME)
				return ev;
		} else if (r == WAIT_FAILED) {
			Sleep(ms < 100 ? ms : 100);
		}
	}
}
