/*
 * policy.c - who may connect and who administers hotmapd (see policy.h).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "daemon/log.h"
#include "daemon/monotime.h"
#include "daemon/policy.h"
#include "daemon/server.h"

unsigned
policy_count_connections(struct server *srv, uid_t uid, int delta)
{
	size_t i;

	for (i = 0; i < srv->nuids; i++)
		if (srv->uids[i].uid == uid)
			break;
	if (i == srv->nuids) {
		struct server_uid_count *v;

		if (delta <= 0)
			return 0;
		v = realloc(srv->uids, (srv->nuids + 1) * sizeof *v);
		if (v == NULL)
			return 0;	/* not counted: the limit is not applied */
		srv->uids = v;
		srv->uids[srv->nuids++] = (struct server_uid_count){ uid, 0 };
	}
	if (delta > 0)
		srv->uids[i].n++;
	else if (delta < 0 && srv->uids[i].n > 0)
		srv->uids[i].n--;
	return srv->uids[i].n;
}

uint64_t
policy_connection_cap(const struct server *srv)
{
	struct rlimit rl;
	uint64_t nofile, reserve;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return UINT64_MAX;
	nofile = (uint64_t)rl.rlim_cur;
	/* the cache's files, at most half the table, and a few for the
	 * daemon itself (listener, workers, logs, passed descriptors) */
	reserve = srv->cfg.max_open_files > 0 ? srv->cfg.max_open_files : nofile / 2;
	if (reserve > nofile / 2)
		reserve = nofile / 2;
	reserve += 32;
	return nofile > reserve + 16 ? nofile - reserve : 16;
}

void
policy_log_refusal(struct server *srv, pid_t pid, uid_t uid, const char *why)
{
	/* a flood is one line a second, not one per connection */
	uint64_t now = monotime_ns();

	srv->refusals_unlogged++;
	if (now - srv->refusal_logged_ns < 1000000000ull && srv->refusal_logged_ns != 0)
		return;
	log_notice("connection of pid %ld uid %ld refused at accept: %s (%llu refused since the last "
		   "such line)", (long)pid, (long)uid, why,
		   (unsigned long long)srv->refusals_unlogged);
	srv->refusals_unlogged = 0;
	srv->refusal_logged_ns = now;
}

static bool
uid_listed(const struct hm_uid_list *l, uid_t uid)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (l->v[i] == uid)
			return true;
	return false;
}

/* Whether the primary gid or one of the groups is in l. */
static bool
gid_listed(const struct hm_gid_list *l, gid_t gid, const gid_t *groups, size_t ngroups)
{
	size_t i, j;

	for (i = 0; i < l->n; i++) {
		if (gid != (gid_t)-1 && l->v[i] == gid)
			return true;
		for (j = 0; j < ngroups; j++)
			if (l->v[i] == groups[j])
				return true;
	}
	return false;
}

bool
policy_is_admin(const struct server *srv, uid_t uid, gid_t gid, const gid_t *groups,
		size_t ngroups)
{
	return uid == 0 || uid == srv->uid || uid_listed(&srv->cfg.admin_uid, uid) ||
	       gid_listed(&srv->cfg.admin_gid, gid, groups, ngroups);
}

bool
policy_may_connect(const struct server *srv, uid_t uid, gid_t gid, const gid_t *groups,
		   size_t ngroups)
{
	const struct hm_config *c = &srv->cfg;

	if (policy_is_admin(srv, uid, gid, groups, ngroups))
		return true;
	if (c->allow_uid.n == 0 && c->allow_gid.n == 0)
		return true;
	return uid_listed(&c->allow_uid, uid) || gid_listed(&c->allow_gid, gid, groups, ngroups);
}

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59	/* Linux 4.13; older headers lack it */
#endif

int
policy_peer_creds(int fd, uid_t *uid, gid_t *gid, gid_t *groups, size_t *ngroups)
{
	struct ucred cred;
	socklen_t len = sizeof cred;
	size_t room = *ngroups;

	*ngroups = 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	*uid = cred.uid;
	*gid = cred.gid;
	if (room > INT_MAX / sizeof *groups)
		room = INT_MAX / sizeof *groups;
	len = (socklen_t)(room * sizeof *groups);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, room > 0 ? groups : NULL, &len) < 0) {
		if (errno == ENOPROTOOPT)
			return 0;	/* the primary gid only */
		if (errno == ERANGE) {
			*ngroups = len / sizeof *groups;
			return -ERANGE;
		}
		return -errno;
	}
	*ngroups = len / sizeof *groups;
	return 0;
}
