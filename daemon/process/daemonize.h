/* SPDX-License-Identifier: MIT */
/*
 * daemonize.h - hotmapd becoming a daemon, as daemon(7) describes a
 * SysV daemon and nginx, memcached and redis behave: detach from the
 * caller (fork, setsid, fork again, chdir "/", umask 022) while the caller
 * waits until the daemon is ready or has failed; the standard streams to
 * /dev/null once it is ready; and the pid file.
 *
 * What it is for: the process around the server, for main.c.  Errors
 * before readiness still reach the caller's stderr; the caller's exit
 * status says ready (0) or failed (1).
 *
 * What it must not do: log (it returns errors for main.c to report), or
 * know the server.
 */
#ifndef HOTMAP_DAEMONIZE_H
#define HOTMAP_DAEMONIZE_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Detaches.  In the caller's process it never returns: that process
 * exits 0 once the daemon calls daemonize_ready, 1 when the daemon exits
 * first.  In the daemon, 0 with *ready_fd set; a negative errno if a step
 * failed (err says which).
 */
int daemonize_start(int *ready_fd, char *err, size_t errlen);
/* The daemon is listening: stdin, stdout and stderr to /dev/null, then
 * the caller is told and exits 0.  ready_fd is closed. */
void daemonize_ready(int ready_fd);

/* Descriptors 0, 1 and 2 open (on /dev/null when the caller closed them),
 * before anything else opens one: a socket that landed on 2 would get
 * every line written to stderr. */
void daemonize_stdio_open(void);

/* path made absolute against the current directory (malloc'd; NULL and
 * errno on failure).  An absolute path is copied as it is. */
char *daemonize_abspath(const char *path);
/* Whether path is absolute already (/..., or C:\... on Windows). */
int daemonize_path_absolute(const char *path);

/*
 * The process's platform set-up before the server, once: on POSIX the
 * allocator's thresholds, SIGPIPE ignored, the descriptor limit raised;
 * on Windows Winsock and libevent's Windows threads (the transport's
 * completion thread wakes the loop with event_active).  0, or a negative
 * errno with err saying why; warn (empty if none) names what did not
 * work and need not stop the daemon.
 */
int daemonize_process_setup(char *err, size_t errlen, char *warn, size_t warnlen);
/* Who the process runs as, for the log line after privileges are
 * dropped ("uid 1000, gid 1000"). */
void daemonize_user_text(char *buf, size_t len);

/* A pid file, held locked (flock) from pidfile_open to exit, so that a
 * second hotmapd on the same file is refused while this one lives. */
struct pidfile {
	int fd;		/* -1: none */
	char *path;
	void *handle;	/* Windows: the file, opened without sharing */
};

/* Opens and locks path (created 0644, not followed if a symbolic link),
 * and empties it.  -EEXIST when a live process holds it (err names its
 * pid), another negative errno otherwise. */
int pidfile_open(struct pidfile *pf, const char *path, char *err, size_t errlen);
/* Writes getpid() into it.  0 or a negative errno. */
int pidfile_write(struct pidfile *pf);
/* At a clean exit: removes the file, or empties it when hotmapd may no
 * longer remove it (after user dropped the right to write its
 * directory), then unlocks.  Takes a pf that was never opened. */
void pidfile_close(struct pidfile *pf);

#endif
