/* SPDX-License-Identifier: MIT */
/*
 * server_platform.h - the platform halves of the server (server.h):
 * the listener (listen_unix.c: bind, socket activation, the socket
 * directory's check, accept; listen_win32.c: named pipe instances) and
 * what stops or reloads the daemon (server_unix.c: SIGTERM, SIGINT,
 * SIGHUP and the lease signals; server_win32.c: the console's
 * control events).
 *
 * Must not: decide anything server.c decides (reload, status, the
 * workers); a platform file only turns its platform's events into
 * session_new, server_stop and server_reload.
 */
#ifndef HOTMAP_SERVER_PLATFORM_H
#define HOTMAP_SERVER_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

struct server;

/* server_listen is in server.h.  Stops accepting and gives up the
 * endpoint (a socket bound by us is unlinked).  Safe when never
 * started. */
void server_listen_close(struct server *srv);

/* What ends the daemon (server_stop) or reloads it (server_reload), and
 * the lease signals of direct reads.  0, or -ENOMEM with err set. */
int server_signals_start(struct server *srv, char *err, size_t errlen);
/* Safe when never started. */
void server_signals_stop(struct server *srv);

/* Processors online, at least 1. */
unsigned server_cpus(void);
/* The machine's memory in bytes; 0 when it cannot be told. */
uint64_t server_memory(void);
/* How many descriptors the process may hold (RLIMIT_NOFILE now), or
 * UINT64_MAX for no limit (as on Windows, whose handles have none). */
uint64_t server_descriptor_limit(void);

#endif
