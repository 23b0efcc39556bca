/*
 * server_unix.c - what stops or reloads hotmapd on POSIX
 * (server_platform.h): SIGTERM and SIGINT drain and exit, SIGHUP
 * reloads, and the lease signals revoke direct-read grants.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/direct.h"
#include "daemon/log.h"
#include "daemon/server.h"
#include "daemon/server_platform.h"

static void
server_signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;

	(void)what;
	if (sig == SIGHUP)
		server_reload(srv, NULL);
	else
		server_stop(srv, sig == SIGTERM ? "SIGTERM" : "SIGINT");
}

/* A lease broke (or the queue of real-time signals overflowed into
 * SIGIO): revoke the grants on the files someone waits to write. */
static void
server_lease_cb(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;
	unsigned n;

	(void)sig;
	(void)what;
	n = direct_check_leases(&srv->direct);
	if (n > 0)
		log_debug("direct reads: %u grants revoked, a writer waits", n);
}

int
server_signals_start(struct server *srv, char *err, size_t errlen)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	size_t i;

	srv->direct.sig = DIRECT_LEASE_SIGNAL;
	srv->ev_lease[0] = evsignal_new(srv->base, DIRECT_LEASE_SIGNAL, server_lease_cb, srv);
	srv->ev_lease[1] = evsignal_new(srv->base, SIGIO, server_lease_cb, srv);
	for (i = 0; i < 2; i++) {
		if (srv->ev_lease[i] == NULL || event_add(srv->ev_lease[i], NULL) < 0) {
			snprintf(err, errlen, "cannot handle the lease signals");
			return -ENOMEM;
		}
	}
	for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		srv->ev_signals[i] = evsignal_new(srv->base, sigs[i], server_signal_cb, srv);
		if (srv->ev_signals[i] == NULL || event_add(srv->ev_signals[i], NULL) < 0) {
			snprintf(err, errlen, "cannot handle signal %d", sigs[i]);
			return -ENOMEM;
		}
	}
	return 0;
}

void
server_signals_stop(struct server *srv)
{
	size_t i;

	for (i = 0; i < sizeof srv->ev_signals / sizeof srv->ev_signals[0]; i++) {
		if (srv->ev_signals[i] != NULL)
			event_free(srv->ev_signals[i]);
		srv->ev_signals[i] = NULL;
	}
	for (i = 0; i < sizeof srv->ev_lease / sizeof srv->ev_lease[0]; i++) {
		if (srv->ev_lease[i] != NULL)
			event_free(srv->ev_lease[i]);
		srv->ev_lease[i] = NULL;
	}
}

unsigned
server_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : (unsigned)n;
}

uint64_t
server_descriptor_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return UINT64_MAX;
	return (uint64_t)rl.rlim_cur;
}
