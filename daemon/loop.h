/*
 * loop.h - hotmapd's event loop driver: libevent, plus polling the
 * clients' request rings (proto/ring.h) for a bounded time after each
 * ring request, so that a stream of small reads costs no wake-ups.
 *
 * What it must not do: serve requests itself (session.c does).
 */
#ifndef HOTMAP_LOOP_H
#define HOTMAP_LOOP_H

struct server;

/* Runs until the loop is told to exit.  With srv->poll_us 0, or while no
 * ring has had a request for poll_us, it blocks in libevent as usual, and
 * ring clients must kick it.  0, or -EIO. */
int loop_run(struct server *srv);

#endif
