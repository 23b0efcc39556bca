/* SPDX-License-Identifier: MIT */
/*
 * server_unix.c - what stops or reloads hotmapd on POSIX
 * (server_platform.h): SIGTERM and SIGINT drain and exit, SIGHUP
 * reloads, and the lease signals revoke direct-read grants.
 */
#include "config.h"
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1	/* si_fd, POLL_MSG, pipe2; config.h defines it under autotools */
#endif

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/service/direct.h"
#include "daemon/base/log.h"
#include "daemon/service/server.h"
#include "daemon/service/server_platform.h"

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

/*
 * The lease signals.  A lease break sends DIRECT_LEASE_SIGNAL with the
 * leased descriptor in si_fd (F_SETSIG; the lease is always on a
 * description hotmapd opened itself, so nobody else sets its signal or
 * owner), and revocation needs only that file's grants: the handler
 * writes the number into a pipe that the loop reads.  When the kernel's
 * queue of real-time signals is full it sends SIGIO instead, without a
 * descriptor; so does a signal that is not a lease break (sent with
 * kill): then every leased file is looked at, once each.  A full pipe
 * (a burst of breaks faster than the loop) does the same.  libevent's
 * own signal events would lose si_fd.
 */
static int lease_pipe[2] = { -1, -1 };
static volatile sig_atomic_t lease_check_all;

static void
on_lease_signal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno, fd = -1;

	(void)uc;
	if (sig == DIRECT_LEASE_SIGNAL && si != NULL && si->si_code == POLL_MSG)
		fd = si->si_fd;
	if (fd < 0)
		lease_check_all = 1;
	if (write(lease_pipe[1], &fd, sizeof fd) != (ssize_t)sizeof fd)
		lease_check_all = 1;	/* full: the loop has plenty to read */
	errno = saved;
}

static void
server_lease_cb(evutil_socket_t pfd, short what, void *arg)
{
	struct server *srv = arg;
	int fds[256];
	unsigned n = 0;
	ssize_t got;
	size_t i;

	(void)what;
	while ((got = read(pfd, fds, sizeof fds)) > 0)
		for (i = 0; i < (size_t)got / sizeof fds[0]; i++)
			if (fds[i] >= 0)
				n += direct_lease_signal(&srv->direct, fds[i]);
	if (lease_check_all) {
		lease_check_all = 0;
		n += direct_check_leases(&srv->direct);
	}
	if (n > 0)
		log_debug("direct reads: %u grants revoked, a writer waits", n);
}

static int
lease_signals_start(struct server *srv)
{
	struct sigaction sa = { .sa_sigaction = on_lease_signal,
				.sa_flags = SA_SIGINFO | SA_RESTART };

	if (pipe2(lease_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	srv->ev_lease = event_new(srv->base, lease_pipe[0], EV_READ | EV_PERSIST,
				  server_lease_cb, srv);
	if (srv->ev_lease == NULL || event_add(srv->ev_lease, NULL) < 0)
		return -ENOMEM;
	sigemptyset(&sa.sa_mask);
	if (sigaction(DIRECT_LEASE_SIGNAL, &sa, NULL) < 0 || sigaction(SIGIO, &sa, NULL) < 0)
		return -errno;
	srv->direct.sig = DIRECT_LEASE_SIGNAL;
	return 0;
}

int
server_signals_start(struct server *srv, char *err, size_t errlen)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	size_t i;
	int rc;

	rc = lease_signals_start(srv);
	if (rc < 0) {
		snprintf(err, errlen, "cannot handle the lease signals: %s", strerror(-rc));
		return rc;
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
	if (srv->ev_lease != NULL) {
		/* the leases go with the entries; a late signal finds the
		 * default action ignored (a real-time signal's would kill) */
		signal(DIRECT_LEASE_SIGNAL, SIG_IGN);
		signal(SIGIO, SIG_IGN);
		event_free(srv->ev_lease);
		srv->ev_lease = NULL;
	}
	for (i = 0; i < 2; i++) {
		if (lease_pipe[i] >= 0)
			close(lease_pipe[i]);
		lease_pipe[i] = -1;
	}
}

unsigned
server_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : (unsigned)n;
}

uint64_t
server_memory(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

	return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

uint64_t
server_descriptor_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return UINT64_MAX;
	return (uint64_t)rl.rlim_cur;
}
