/* SPDX-License-Identifier: MIT */
/*
 * privdrop.c - see privdrop.h.
 */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "daemon/process/privdrop.h"

/* The user's name and primary group: 0, or -ENOENT with no passwd entry. */
static int
user_entry(uid_t uid, char *name, size_t namelen, gid_t *gid)
{
	struct passwd pw, *res = NULL;
	char buf[16384];

	if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) != 0 || res == NULL)
		return -ENOENT;
	snprintf(name, namelen, "%s", pw.pw_name);
	*gid = pw.pw_gid;
	return 0;
}

/* Whether there is nothing to change. */
static bool
already(uid_t user, gid_t group)
{
	return (user == (uid_t)-1 || (user == getuid() && user == geteuid())) &&
	       (group == (gid_t)-1 || (group == getgid() && group == getegid()));
}

int
privdrop_check(uid_t user, gid_t group, char *err, size_t errlen)
{
	char name[256];
	gid_t gid;

	if (already(user, group))
		return 0;
	if (geteuid() != 0) {
		snprintf(err, errlen, "%s%s: hotmapd runs as uid %u, not as root, and cannot become "
			 "another %s", user != (uid_t)-1 ? "user" : "group",
			 user != (uid_t)-1 && group != (gid_t)-1 ? " and group" : "",
			 (unsigned)geteuid(), user != (uid_t)-1 ? "user" : "group");
		return -EPERM;
	}
	if (user != (uid_t)-1 && group == (gid_t)-1 &&
	    user_entry(user, name, sizeof name, &gid) < 0) {
		snprintf(err, errlen, "user: uid %u has no entry in the user database: set group "
			 "too", (unsigned)user);
		return -ENOENT;
	}
	return 0;
}

int
privdrop(uid_t user, gid_t group, char *err, size_t errlen)
{
	char name[256] = "";
	gid_t gid = group;
	bool known;
	int e;

	if (already(user, group))
		return 0;
	if (privdrop_check(user, group, err, errlen) < 0)
		return -EPERM;
	known = user != (uid_t)-1 && user_entry(user, name, sizeof name, &gid) == 0;
	if (group != (gid_t)-1)
		gid = group;
	if (user == (uid_t)-1) {
		/* group alone: root's own supplementary groups go too */
		if (setgroups(1, &gid) < 0)
			goto fail_groups;
	} else if (known) {
		if (initgroups(name, gid) < 0)
			goto fail_groups;
	} else if (setgroups(1, &gid) < 0) {
		goto fail_groups;
	}
	if (setresgid(gid, gid, gid) < 0) {
		e = errno;
		snprintf(err, errlen, "group: cannot become gid %u: %s", (unsigned)gid, strerror(e));
		return -e;
	}
	if (user != (uid_t)-1 && setresuid(user, user, user) < 0) {
		e = errno;
		snprintf(err, errlen, "user: cannot become uid %u: %s", (unsigned)user, strerror(e));
		return -e;
	}
	/* Trust, but verify: a kernel or a security module that left any id
	 * behind would leave root one call away. */
	if (user != (uid_t)-1 && user != 0 &&
	    (getuid() != user || geteuid() != user || setuid(0) == 0 || seteuid(0) == 0)) {
		snprintf(err, errlen, "user: uid %u: root could be regained; refusing to go on",
			 (unsigned)user);
		return -EPERM;
	}
	if (gid != 0 && user != 0 && user != (uid_t)-1 &&
	    (getgid() != gid || getegid() != gid || setgid(0) == 0 || setegid(0) == 0)) {
		snprintf(err, errlen, "group: gid %u: group root could be regained; refusing to go on",
			 (unsigned)gid);
		return -EPERM;
	}
	/*
	 * Changing ids leaves the process not dumpable, and so it stays:
	 * the descriptors hotmapd opened as root (its socket, pid file and
	 * log file, the stderr it was given) would otherwise be the user's
	 * other processes' to take (pidfd_getfd, ptrace), and with them
	 * files that user may not open.  Its own reopens through
	 * /proc/self/fd work all the same: a process may always reach its
	 * own descriptors there.  Core dumps go with it; a crash is still
	 * logged by whatever started hotmapd (systemd records the signal).
	 */
	if (user != (uid_t)-1 && prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0 &&
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		e = errno;
		snprintf(err, errlen, "user: cannot make hotmapd undumpable: %s", strerror(e));
		return -e;
	}
	return 0;

fail_groups:
	e = errno;
	snprintf(err, errlen, "%s: cannot set the supplementary groups: %s",
		 user != (uid_t)-1 ? "user" : "group", strerror(e));
	return -e;
}
