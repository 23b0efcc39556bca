/* SPDX-License-Identifier: MIT */
/*
 * ctl_top_unix.c - hotmapctl top's terminal on POSIX (ctl_term.h):
 * termios for raw keys, TIOCGWINSZ for the size, signals to stop, redraw
 * (SIGWINCH, SIGCONT) and suspend (SIGTSTP), and ppoll to wait for keys
 * and signals at once.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "hotmapctl/ctl.h"
#include "hotmapctl/ctl_term.h"

/*
 * The terminal.  Keys are read one at a time without echo (ICANON and
 * ECHO off), but ISIG stays on so that Ctrl-C and Ctrl-Z still make
 * signals.  The state is global for the signal handler's sake: the mode
 * must be restored however top ends.
 */
static struct {
	bool screen;		/* stdout is a terminal: full-screen redraws */
	bool keys;		/* stdin is one too, its mode saved in saved */
	volatile sig_atomic_t entered;	/* alternate screen and key mode in use */
	struct termios saved;
} top_term;

#define TOP_SCREEN_ENTER	"\033[?1049h\033[?25l\033[H\033[2J"
#define TOP_SCREEN_LEAVE	"\033[?25h\033[?1049l"

static volatile sig_atomic_t top_stop;		/* SIGINT, SIGTERM or SIGHUP came */
static volatile sig_atomic_t top_redraw;	/* SIGWINCH or SIGCONT */
static volatile sig_atomic_t top_suspend;	/* SIGTSTP */

void
top_term_enter(void)
{
	if (!top_term.screen)
		return;
	if (top_term.keys) {
		struct termios raw = top_term.saved;

		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	}
	fputs(TOP_SCREEN_ENTER, stdout);
	fflush(stdout);
	top_term.entered = 1;
}

void
top_term_leave(void)
{
	if (!top_term.entered)
		return;
	fputs(TOP_SCREEN_LEAVE, stdout);
	fflush(stdout);
	if (top_term.keys)
		tcsetattr(STDIN_FILENO, TCSANOW, &top_term.saved);
	top_term.entered = 0;
}

static void
top_on_signal(int sig)
{
	switch (sig) {
	case SIGWINCH:
	case SIGCONT:
		top_redraw = 1;
		break;
	case SIGTSTP:
		top_suspend = 1;
		break;
	default:
		if (top_stop != 0) {
			/* Asked twice: the daemon is not answering and the
			 * loop cannot see the first.  Async-signal-safe calls
			 * only. */
			static const char msg[] = "hotmapctl: top: interrupted\n";

			if (top_term.entered) {
				if (write(STDOUT_FILENO, TOP_SCREEN_LEAVE, sizeof TOP_SCREEN_LEAVE - 1) < 0) {
				}
				if (top_term.keys)
					tcsetattr(STDIN_FILENO, TCSANOW, &top_term.saved);
			}
			if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) {
			}
			_exit(1);
		}
		top_stop = sig;
		break;
	}
}

/* The first TOP_STOP_SIGNALS stop top; the others concern the screen. */
static const int top_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGCONT, SIGTSTP };
#define TOP_NSIGNALS		(sizeof top_signals / sizeof top_signals[0])
#define TOP_STOP_SIGNALS	3

static bool top_watch_keys;	/* stdin is read for keys */
static sigset_t top_mask, top_orig_mask;	/* top_signals; the mask before */
static struct sigaction top_old[TOP_NSIGNALS];

void
top_term_size(int *rows, int *cols)
{
	struct winsize ws;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

/* Ctrl-Z: give the terminal back, stop as SIGTSTP would have, and take
 * it again when continued. */
static void
top_stop_for_tstp(void)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL }, mine;

	top_term_leave();
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGTSTP, &dfl, &mine);
	raise(SIGTSTP);
	/* continued */
	sigaction(SIGTSTP, &mine, NULL);
	top_term_enter();
}

enum top_term_event
top_term_wait(double deadline)
{
	for (;;) {
		struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
		struct timespec ts;
		char keys[64];
		double left;
		ssize_t r;
		int n;

		/* Signals are blocked from the check of their flags until
		 * ppoll, which lets them in: none slips between the two. */
		sigprocmask(SIG_BLOCK, &top_mask, NULL);
		if (top_stop != 0 || top_suspend || top_redraw) {
			sigprocmask(SIG_SETMASK, &top_orig_mask, NULL);
			if (top_stop != 0)
				return TOP_TERM_STOP;
			if (top_suspend) {
				top_suspend = 0;
				top_stop_for_tstp();
			}
			top_redraw = 0;
			return TOP_TERM_REDRAW;
		}
		left = deadline - ctl_now_us();
		if (left <= 0) {
			sigprocmask(SIG_SETMASK, &top_orig_mask, NULL);
			return TOP_TERM_TIME;
		}
		ts.tv_sec = (time_t)(left / 1e6);
		ts.tv_nsec = (long)((left - (double)ts.tv_sec * 1e6) * 1e3);
		n = ppoll(&pfd, top_watch_keys ? 1 : 0, &ts, &top_orig_mask);
		sigprocmask(SIG_SETMASK, &top_orig_mask, NULL);
		if (n <= 0 || !top_watch_keys)
			continue;
		if (pfd.revents & POLLIN) {
			r = read(STDIN_FILENO, keys, sizeof keys);
			if (r > 0) {
				if (memchr(keys, 'q', (size_t)r) != NULL ||
				    memchr(keys, 'Q', (size_t)r) != NULL)
					return TOP_TERM_STOP;
				continue;
			}
			if (r < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
		}
		/* end of input or a hung-up terminal: signals only, from now */
		top_watch_keys = false;
	}
}


/* Catches top_signals (off a terminal, only those that stop top: Ctrl-Z
 * and the rest keep their usual effect); or gives them back. */
static void
top_signals_catch(bool catch)
{
	struct sigaction sa = { .sa_handler = top_on_signal };
	size_t i;

	if (catch) {
		top_stop = top_redraw = top_suspend = 0;
		sigemptyset(&top_mask);
		for (i = 0; i < TOP_NSIGNALS; i++)
			sigaddset(&top_mask, top_signals[i]);
		sigprocmask(SIG_BLOCK, NULL, &top_orig_mask);
		sa.sa_mask = top_mask;
	}
	for (i = 0; i < TOP_NSIGNALS; i++) {
		if (!top_term.screen && i >= TOP_STOP_SIGNALS)
			continue;
		if (catch)
			sigaction(top_signals[i], &sa, &top_old[i]);
		else
			sigaction(top_signals[i], &top_old[i], NULL);
	}
}

bool
top_term_start(void)
{
	top_term.screen = isatty(STDOUT_FILENO);
	top_term.keys = top_term.screen && isatty(STDIN_FILENO) &&
			tcgetattr(STDIN_FILENO, &top_term.saved) == 0;
	top_watch_keys = top_term.keys;
	top_signals_catch(true);
	return top_term.screen;
}

void
top_term_end(void)
{
	top_signals_catch(false);
}
