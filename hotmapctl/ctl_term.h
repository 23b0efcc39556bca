/* SPDX-License-Identifier: MIT */
/*
 * ctl_term.h - the terminal of hotmapctl top, one platform file each:
 * ctl_top_unix.c (termios, signals, ppoll) and ctl_top_win32.c (the
 * console API).  ctl_top.c draws; this says where, and when to.
 *
 * What it must not do: talk to the daemon or draw a frame.
 */
#ifndef HOTMAP_CTL_TERM_H
#define HOTMAP_CTL_TERM_H

#include <stdbool.h>

/* Looks at stdout and stdin, and catches what stops top (and, on a
 * terminal, what concerns the screen).  true: stdout is a terminal that
 * takes the escape codes top writes (full-screen redraws). */
bool top_term_start(void);
/* Gives back what top_term_start caught. */
void top_term_end(void);
/* The alternate screen and raw keys; and back (safe to call twice). */
void top_term_enter(void);
void top_term_leave(void);
/* The window's size into *rows, *cols; left as they are if unknown. */
void top_term_size(int *rows, int *cols);

enum top_term_event {
	TOP_TERM_TIME,		/* the deadline came */
	TOP_TERM_STOP,		/* q, or a signal (Ctrl-C) that ends top */
	TOP_TERM_REDRAW,	/* the window changed (or top came back from Ctrl-Z) */
};
/* Waits until deadline (a ctl_now_us() time), a key that stops, or a
 * reason to redraw. */
enum top_term_event top_term_wait(double deadline);

#endif
