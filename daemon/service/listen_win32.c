/* SPDX-License-Identifier: MIT */
/*
 * listen_win32.c - hotmapd's listener on Windows (server_platform.h): the
 * named pipe the configuration's socket names (\\.\pipe\hotmap by
 * default), on the transport of transport_win32.h; connected instances
 * become sessions.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>

#include "daemon/base/log.h"
#include "daemon/service/server.h"
#include "daemon/service/server_platform.h"
#include "daemon/service/session.h"
#include "daemon/transport/transport_win32.h"

/* Instances kept waiting for a client: a burst of connects past them
 * gets ERROR_PIPE_BUSY and waits (WaitNamedPipe) for the next. */
#define LISTEN_PENDING	8

static void
listen_accept(hm_conn conn, void *arg)
{
	struct server *srv = arg;

	if (session_new(srv, conn) < 0)
		log_warn("accept: out of memory for a new client");
}

static void
listen_failed(const char *what, unsigned long error, void *arg)
{
	struct server *srv = arg;

	srv->counters.accept_backoffs++;
	log_warn("%s on %s: Windows error %lu; trying again in a second", what,
		 srv->cfg.socket_path, error);
}

int
server_listen(struct server *srv, char *err, size_t errlen)
{
	int rc = transport_win32_start(srv->base, err, errlen);

	if (rc < 0)
		return rc;
	srv->pipes = pipe_listener_new(srv->base, srv->cfg.socket_path, NULL, LISTEN_PENDING,
				       listen_accept, listen_failed, srv, err, errlen);
	return srv->pipes != NULL ? 0 : -EADDRINUSE;
}

void
server_listen_close(struct server *srv)
{
	pipe_listener_free(srv->pipes);
	srv->pipes = NULL;
	/* after the sessions (server_fini frees them first): what they
	 * left in flight completes now */
	transport_win32_stop();
}
