/* SPDX-License-Identifier: MIT */
/*
 * test_notify.c - hotmapd speaks to its service manager: READY=1 once it
 * listens, WATCHDOG=1 within the watchdog interval, a STATUS= summary,
 * RELOADING=1 (with MONOTONIC_USEC=) and READY=1 again around a reload on
 * SIGHUP, and STOPPING=1 on SIGTERM.  A datagram socket of the test's own stands in
 * for systemd's (NOTIFY_SOCKET, WATCHDOG_USEC).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/harness.h"

struct notify {
	char dir[64];
	char path[128];
	int fd;
};

/* The next datagram within timeout_ms, into buf; false on time-out. */
static bool
notify_recv(struct notify *n, char *buf, size_t len, int timeout_ms)
{
	struct pollfd p = { .fd = n->fd, .events = POLLIN };
	ssize_t r;

	if (poll(&p, 1, timeout_ms) != 1)
		return false;
	r = recv(n->fd, buf, len - 1, 0);
	if (r < 0)
		return false;
	buf[r] = '\0';
	return true;
}

/* Waits up to timeout_ms for a datagram containing needle. */
static bool
notify_expect(struct notify *n, const char *needle, int timeout_ms, char *last, size_t lastlen)
{
	int64_t deadline = harness_now_ms() + timeout_ms;

	while (harness_now_ms() < deadline)
		if (notify_recv(n, last, lastlen, 50) && strstr(last, needle) != NULL)
			return true;
	return false;
}

static void
test_ready_watchdog_status_reloading_stopping(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct harness_opts opts = { .keep_notify = true };
	struct notify n;
	struct harness *h;
	char msg[512];
	hm_client *c;

	(void)state;
#ifndef HAVE_LIBSYSTEMD
	skip();	/* built without libsystemd: sd_notify is a stub */
#endif
	snprintf(n.dir, sizeof n.dir, "%s/hm-notify.XXXXXX",
		 getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
	assert_non_null(mkdtemp(n.dir));
	snprintf(n.path, sizeof n.path, "%s/notify", n.dir);
	n.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(n.fd >= 0);
	memcpy(sa.sun_path, n.path, strlen(n.path) + 1);
	assert_int_equal(bind(n.fd, (struct sockaddr *)&sa, sizeof sa), 0);
	setenv("NOTIFY_SOCKET", n.path, 1);
	setenv("WATCHDOG_USEC", "400000", 1);	/* WATCHDOG=1 every 0.2 s */

	h = harness_start(&opts);
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	assert_true(notify_recv(&n, msg, sizeof msg, 5000));
	assert_non_null(strstr(msg, "READY=1"));
	/* the daemon is serving by then */
	c = harness_connect(h);
	assert_int_equal(hm_ping(c, NULL), 0);
	/* (one sent before the ping may still say clients 0) */
	assert_true(notify_expect(&n, "clients 1,", 2000, msg, sizeof msg));
	assert_non_null(strstr(msg, "WATCHDOG=1"));
	assert_non_null(strstr(msg, "STATUS="));
	assert_true(notify_expect(&n, "WATCHDOG=1", 2000, msg, sizeof msg));

	/* SIGHUP: RELOADING=1 with the time it began, then READY=1 */
	assert_int_equal(kill(h->pid, SIGHUP), 0);
	assert_true(notify_expect(&n, "RELOADING=1", 5000, msg, sizeof msg));
	assert_non_null(strstr(msg, "MONOTONIC_USEC="));
	assert_true(notify_expect(&n, "READY=1", 5000, msg, sizeof msg));
	/* and it serves on */
	assert_int_equal(hm_ping(c, NULL), 0);
	hm_disconnect(c);
	harness_stop(h);
	assert_true(notify_expect(&n, "STOPPING=1", 2000, msg, sizeof msg));
	close(n.fd);
	unlink(n.path);
	rmdir(n.dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ready_watchdog_status_reloading_stopping),
	};

	return cmocka_run_group_tests_name("notify", tests, NULL, NULL);
}
