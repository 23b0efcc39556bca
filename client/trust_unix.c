/* SPDX-License-Identifier: MIT */
/*
 * trust_unix.c - whom libhotmap hands descriptors to (see trust.h).
 */
#include "config.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include "client/trust.h"

#ifndef HOTMAP_DAEMON_USER
#define HOTMAP_DAEMON_USER "hotmapd"
#endif

/* getpwnam_r's buffer grows to at most this (a user with huge gecos). */
#define TRUST_PWBUF_MAX	(1u << 20)

/*
 * The uid of user, a name or a uid in decimal: 0, -ENOENT when there is no
 * such user (now: a DynamicUser exists only while its service runs), or
 * -errno.
 */
static int
user_uid(const char *user, uid_t *uid)
{
	struct passwd pw, *res = NULL;
	char *buf = NULL, *end;
	size_t len = 1024;
	unsigned long v;
	int rc;

	if (user[0] >= '0' && user[0] <= '9') {
		errno = 0;
		v = strtoul(user, &end, 10);
		if (errno != 0 || *end != '\0' || v >= (unsigned long)(uid_t)-1)
			return -EINVAL;
		*uid = (uid_t)v;
		return 0;
	}
	for (;;) {
		char *more = realloc(buf, len);

		if (more == NULL) {
			free(buf);
			return -ENOMEM;
		}
		buf = more;
		rc = getpwnam_r(user, &pw, buf, len, &res);
		if (rc != ERANGE || len >= TRUST_PWBUF_MAX)
			break;
		len *= 2;
	}
	if (rc == 0 && res != NULL)
		*uid = pw.pw_uid;
	free(buf);
	/* getpwnam_r(3): these too mean "not found" */
	if (rc == 0 && res == NULL)
		return -ENOENT;
	if (rc == ENOENT || rc == ESRCH || rc == EBADF || rc == EPERM)
		return -ENOENT;
	return -rc;
}

/*
 * The rule: whether uid is root's, this process's effective uid (which
 * descriptors are opened with) or the daemon user's: 0, -EPERM, or the
 * -errno of looking that user up.  *user is the daemon user (empty: none
 * set), *lookup what looking it up gave (0: *daemon_uid is its uid).
 */
static int
trust_uid(unsigned uid, const char **user, uid_t *daemon_uid, int *lookup)
{
	/* secure_getenv: a set-user-ID program must not be talked into
	 * trusting its caller's daemon */
	*user = secure_getenv("HOTMAP_DAEMON_USER");
	if (*user == NULL)
		*user = HOTMAP_DAEMON_USER;
	*lookup = 0;
	if (uid == 0 || uid == (unsigned)geteuid())
		return 0;
	if ((*user)[0] == '\0')
		return -EPERM;
	*lookup = user_uid(*user, daemon_uid);
	if (*lookup < 0)
		return *lookup;
	return *daemon_uid == (uid_t)uid ? 0 : -EPERM;
}

int
client_trust_owner(unsigned uid)
{
	const char *user;
	uid_t daemon_uid;
	int lookup;

	return trust_uid(uid, &user, &daemon_uid, &lookup);
}

int
client_trust_daemon(hm_conn fd, const char *path, char *why, size_t whylen)
{
	struct ucred cred;
	socklen_t len = sizeof cred;
	const char *user;
	uid_t me = geteuid(), daemon_uid = 0;
	char known[64];
	int rc, lookup;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		rc = errno;
		snprintf(why, whylen, "%s: cannot tell who listens (SO_PEERCRED: %s): "
			 "refusing to pass it descriptors", path, strerror(rc));
		return -rc;
	}
	if (trust_uid((unsigned)cred.uid, &user, &daemon_uid, &lookup) == 0)
		return 0;
	if (user[0] == '\0') {
		snprintf(why, whylen, "%s: the daemon runs as uid %u (pid %ld), neither root nor you "
			 "(uid %u), and no daemon user is set: refusing to pass it descriptors "
			 "(HOTMAP_DAEMON_USER names the daemon's user)",
			 path, (unsigned)cred.uid, (long)cred.pid, (unsigned)me);
		return -EPERM;
	}
	if (lookup == 0)
		snprintf(known, sizeof known, "uid %u", (unsigned)daemon_uid);
	else
		snprintf(known, sizeof known, "%s", lookup == -ENOENT ? "no such user now" :
			 lookup == -EINVAL ? "not a user name or uid" : strerror(-lookup));
	snprintf(why, whylen, "%s: the daemon runs as uid %u (pid %ld), not root, you (uid %u) nor "
		 "the daemon user '%s' (%s): refusing to pass it descriptors "
		 "(HOTMAP_DAEMON_USER names the daemon's user)",
		 path, (unsigned)cred.uid, (long)cred.pid, (unsigned)me, user, known);
	return -EPERM;
}
