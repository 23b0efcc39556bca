/* SPDX-License-Identifier: MIT */
/*
 * transport_win32.h - hotmapd's named pipe transport on Windows
 * (docs/windows.md, sections 3 and 6): one completion port with one
 * thread, whose completions reach the event loop's thread through
 * event_active(), and the pipe listener that keeps a few instances in a
 * pending ConnectNamedPipe.  The peer's half (peer_priv.h) is in
 * transport_win32.c too; the server's listener (server_platform.h) is
 * listen_win32.c, on top of this.
 *
 * Everything here runs on the loop thread except the completion port's
 * thread, which only queues completions.  The base must be thread-safe:
 * WSAStartup, then evthread_use_windows_threads(), then event_base_new().
 *
 * Must not: know frames (peer.c) or sessions (listen_win32.c hands
 * connections to them).
 */
#ifndef HOTMAP_TRANSPORT_WIN32_H
#define HOTMAP_TRANSPORT_WIN32_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/transport/transport.h"
#include "proto/pipe_win32.h"

struct event_base;
struct pipe_listener;

/*
 * The default security descriptor of the pipe (docs/windows.md, section 6
 * and "The pipe's trust"): network logons denied; SYSTEM, Administrators
 * and the owner full control; authenticated users what a client needs,
 * PIPE_USER_RIGHTS (proto/pipe_win32.h): read, write data and write
 * attributes.  Not GW: GENERIC_WRITE holds FILE_CREATE_PIPE_INSTANCE, and
 * with it any user could make instances of hotmapd's pipe name and answer
 * some of its clients in its place.
 */
#define TRANSPORT_WIN32_SDDL \
	"D:P(D;;GA;;;NU)(A;;GA;;;SY)(A;;GA;;;BA)(A;;" PIPE_SDDL_RIGHTS ";;;AU)(A;;GA;;;OW)"

/* Starts the completion port and its thread for base.  0 or negative
 * errno (err says what failed). */
int transport_win32_start(struct event_base *base, char *err, size_t errlen);
/* Waits (at most a few seconds) for the I/O still in flight on
 * connections already given up, then stops the thread.  Call after every
 * peer and listener is freed.  Safe when never started. */
void transport_win32_stop(void);

/*
 * Listens on the pipe name (\\.\pipe\...), its instances made with the
 * security descriptor sddl (NULL: TRANSPORT_WIN32_SDDL), with pending
 * instances waiting for clients.  The first instance is made with
 * FILE_FLAG_FIRST_PIPE_INSTANCE: when another process has the name
 * already, this fails with -EADDRINUSE.  Each client that connects goes
 * to accept(conn, arg), which owns conn from then on (peer_new, or
 * peer_refuse).  failed(what, error, arg) is told of an instance that
 * could not be made or connected (the listener retries in a second).
 */
struct pipe_listener *pipe_listener_new(struct event_base *base, const char *name,
					const char *sddl, unsigned pending,
					void (*accept)(hm_conn conn, void *arg),
					void (*failed)(const char *what, unsigned long error, void *arg),
					void *arg, char *err, size_t errlen);
/* Stops listening: pending instances are cancelled and closed.  Takes
 * NULL. */
void pipe_listener_free(struct pipe_listener *l);

struct peer;
/* Any handle the client holds, pulled from its process as peer_take_file
 * does, without the disk-file check (the shared region is a section).
 * 0 with *h (the caller's to close), or -EBADF / -EACCES: -EACCES also
 * when the process of the client's pid could not be opened or is not the
 * client (pipe_client_process_check failed at accept, and said so in the
 * log). */
int peer_pull_handle(struct peer *p, uint64_t value, hm_fd *h);

/*
 * Whether process (a HANDLE with PROCESS_QUERY_LIMITED_INFORMATION) is the
 * pipe client whose token's user SID is user and whose integrity level is
 * integrity (the last RID of its mandatory label): its token has that
 * user, an integrity level no higher, and it was created no later than
 * connected_at (a FILETIME as a number: 100 ns since 1601, UTC).
 *
 * Why: the daemon opens the client's process by the pid the pipe reports,
 * which is the pid of the process that opened the pipe.  That process may
 * have duplicated its pipe handle into another one and exited, and its
 * pid been given to a new process; a handle pull would then duplicate a
 * handle of that process, which the client could not take itself.  A new
 * process is created after the connect; another user's process, or the
 * same user's at a higher integrity level (elevated), runs under another
 * token.  A process of the same user at the same level or below is one
 * the client may open itself (a process's default DACL gives its user
 * full access): a pull from it gives the client nothing it lacks.
 *
 * 0, or -EACCES with the reason in why (also when a time or the token
 * cannot be read).  peer_ident_of runs it at accept, with the token
 * ImpersonateNamedPipeClient gives; declared here for the tests.
 */
int pipe_client_process_check(void *process, const void *user, uint32_t integrity,
			      uint64_t connected_at, char *why, size_t whylen);

#endif
