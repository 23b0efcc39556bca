/* SPDX-License-Identifier: MIT */
/*
 * transport.h - libhotmap's connection to hotmapd, one platform file each:
 * transport_unix.c (a Unix stream socket, descriptors passed with
 * SCM_RIGHTS) and transport_win32.c (a named pipe opened overlapped; the
 * daemon pulls handles with DuplicateHandle, docs/windows.md section 6).
 *
 * What it is for: connecting, closing and shutting down the connection,
 * moving bytes (and, on POSIX, descriptors) in and out of it, and telling
 * how a file the client holds goes along with an OPEN.  wire.c frames the
 * bytes; connect.c decides where to connect and what to offer.
 *
 * What it must not do: frame, parse or log; keep state but in the client's
 * conn (and, for received descriptors, rx_fds).  Errors are negative
 * errno values, the ones the socket calls give on Linux, so that the
 * reconnect policy (call.c's connection_lost) reads both alike.
 */
#ifndef HOTMAP_CLIENT_TRANSPORT_H
#define HOTMAP_CLIENT_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "client/client_priv.h"

/* Connects c->conn (closing any old one) to the endpoint path: 0, or
 * -errno: -ENOENT nothing there, -ECONNREFUSED nobody listens,
 * -ENAMETOOLONG, ...  c->conn may be left set on failure (closed later). */
int transport_connect(hm_client *c, const char *path);

/* Closes c->conn if set; c->conn is none afterwards. */
void transport_close(hm_client *c);

/* Makes every read and write of c->conn, blocked or later, return at
 * once (end of stream, or -EPIPE): client_break, with or without the
 * client's lock. */
void transport_shutdown(hm_client *c);

/* Writes some of buf[0..len): bytes written (> 0), or -errno.  pass_fd
 * >= 0 goes along with the first byte (POSIX; always -1 on Windows). */
ssize_t transport_send(hm_client *c, const uint8_t *buf, size_t len, int pass_fd);

/* Reads what is there of len bytes, at least one: bytes, 0 at the end of
 * the stream, or -errno.  Counts them in c->rx_end, and queues each
 * descriptor that came with them in c->rx_fds (see wire.c). */
ssize_t transport_recv(hm_client *c, uint8_t *buf, size_t len);

/* Reads exactly len bytes: 0, -ECONNRESET at the end of the stream, or
 * -errno.  Counted in c->rx_end; no descriptor comes with raw bytes. */
int transport_recv_all(hm_client *c, uint8_t *buf, size_t len);

/* Whether something can be read from c->conn (bytes, the end of the
 * stream, an error) within ms milliseconds (0: now): 1, 0 (not yet), or
 * -errno.  POSIX only: Windows never pipelines (HOTMAP_FALLBACK=local is
 * POSIX's), and says -ENOTSUP. */
int transport_readable(hm_client *c, unsigned ms);

/* How the file f goes with an OPEN: the descriptor to pass with the
 * request (POSIX), or -1 with *handle_value set to f's value for the
 * daemon to pull (Windows). */
int transport_attach(hm_osfile f, uint64_t *handle_value);

/* The features a HELLO offers on this platform (proto/frame.h). */
uint64_t transport_features(void);

#endif
