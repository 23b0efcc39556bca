/* SPDX-License-Identifier: MIT */
/*
 * policy.c - who may connect and who administers hotmapd (see policy.h).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/log.h"
#include "proto/monotime.h"
#include "daemon/service/policy.h"
#include "daemon/service/server.h"
#include "daemon/service/server_platform.h"
#include "daemon/storage/storage.h"

unsigned
policy_count_connections(struct server *srv, const struct peer_ident *id, int delta)
{
	size_t i;

	for (i = 0; i < srv->nuids; i++)
		if (strcmp(srv->uids[i].user, id->user) == 0)
			break;
	if (i == srv->nuids) {
		struct server_uid_count *v;

		if (delta <= 0)
			return 0;
		v = realloc(srv->uids, (srv->nuids + 1) * sizeof *v);
		if (v == NULL)
			return 0;	/* not counted: the limit is not applied */
		srv->uids = v;
		memset(&srv->uids[srv->nuids], 0, sizeof *v);
		memcpy(srv->uids[srv->nuids].user, id->user, sizeof id->user);
		srv->nuids++;
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
	uint64_t nofile = server_descriptor_limit(), reserve;

	if (nofile == UINT64_MAX)
		return UINT64_MAX;
	/* the cache's files, at most half the table, and a few for the
	 * daemon itself (listener, workers, logs, passed descriptors) */
	reserve = srv->cfg.max_open_files > 0 ? srv->cfg.max_open_files : nofile / 2;
	if (reserve > nofile / 2)
		reserve = nofile / 2;
	reserve += 32;
	return nofile > reserve + 16 ? nofile - reserve : 16;
}

void
policy_log_refusal(struct server *srv, const struct peer_ident *id, const char *why)
{
	/* a flood is one line a second, not one per connection */
	uint64_t now = monotime_ns();

	srv->refusals_unlogged++;
	if (now - srv->refusal_logged_ns < 1000000000ull && srv->refusal_logged_ns != 0)
		return;
	log_notice("connection of pid %ld %s refused at accept: %s (%llu refused since the last "
		   "such line)", (long)id->pid, id->user, why,
		   (unsigned long long)srv->refusals_unlogged);
	srv->refusals_unlogged = 0;
	srv->refusal_logged_ns = now;
}

static bool
uid_listed(const struct hm_uid_list *l, uid_t uid)
{
	size_t i;

	if (uid == (uid_t)-1)
		return false;	/* no POSIX uid: nobody's */
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
	return (uid != (uid_t)-1 && (uid == 0 || uid == srv->uid)) ||
	       uid_listed(&srv->cfg.admin_uid, uid) ||
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

bool
policy_ident_is_admin(const struct server *srv, const struct peer_ident *id)
{
	return id->superuser || (id->user[0] != '\0' && strcmp(id->user, srv->self_user) == 0) ||
	       policy_is_admin(srv, id->uid, id->gid, id->groups, id->ngroups);
}

bool
policy_ident_may_connect(const struct server *srv, const struct peer_ident *id)
{
	const struct hm_config *c = &srv->cfg;

	if (policy_ident_is_admin(srv, id))
		return true;
	return policy_may_connect(srv, id->uid, id->gid, id->groups, id->ngroups) ||
	       (c->allow_uid.n == 0 && c->allow_gid.n == 0);
}

/* Whether the client is in group gid (primary or supplementary). */
static bool
ident_in_group(const struct peer_ident *id, gid_t gid)
{
	size_t i;

	if (id->gid == gid)
		return true;
	for (i = 0; i < id->ngroups; i++)
		if (id->groups[i] == gid)
			return true;
	return false;
}

/* The write bits of a POSIX mode (S_IWUSR, S_IWGRP, S_IWOTH, which not
 * every platform's headers name). */
#define MODE_W_USR	0200u
#define MODE_W_GRP	0020u
#define MODE_W_OTH	0002u

bool
policy_may_lease(enum hm_lease_rule rule, const struct peer_ident *id,
		 const struct storage_writers *w, char *why, size_t whylen)
{
	bool can;

	if (rule == HM_LEASE_RULE_CAN_READ)
		return true;
	if (w->read_only || (w->mode & (MODE_W_USR | MODE_W_GRP | MODE_W_OTH)) == 0)
		return true;	/* nobody writes it */
	if (!id->known || id->uid == (uid_t)-1) {
		snprintf(why, whylen, "lease refused: who the client is is unknown "
			 "(direct-lease-rule can-write)");
		return false;
	}
	if (id->uid == 0 || id->uid == (uid_t)w->uid)
		return true;
	/* the kernel's order: owner, else group, else others */
	if (w->acl)
		can = false;
	else if (ident_in_group(id, (gid_t)w->gid))
		can = (w->mode & MODE_W_GRP) != 0;
	else
		can = (w->mode & MODE_W_OTH) != 0;
	if (!can)
		snprintf(why, whylen, "lease refused: uid %u may not write the file, others may "
			 "(direct-lease-rule)", (unsigned)id->uid);
	return can;
}
