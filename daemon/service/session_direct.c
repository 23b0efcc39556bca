/* SPDX-License-Identifier: MIT */
/*
 * session_direct.c - see session_direct.h.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/service/direct.h"
#include "proto/hm_errno.h"
#include "daemon/base/log.h"
#include "daemon/transport/peer.h"
#include "daemon/service/policy.h"
#include "daemon/service/server.h"
#include "daemon/service/session_direct.h"
#include "daemon/service/session_state.h"
#include "proto/direct.h"

/* A grant of the session's, with the slot it is in: on its handle while
 * the handle is open, then on the session's direct_free for the next. */
struct session_grant {
	struct direct_grant g;
	uint32_t slot;
	struct session_grant *free_next;
};

void
session_direct_hello(struct session *s, uint32_t slots, uint32_t table, int *accepted,
		     uint32_t *used)
{
	unsigned cap = s->srv->direct.max_per_uid;
	uint32_t n = slots;

	*accepted = 0;
	*used = 0;
	if (!s->srv->cfg.direct_reads)
		return;
	if (table > slots) {
		/* a client that takes the slots we say: no more than one uid
		 * may hold grants, so that a session's slots, and what the
		 * daemon keeps for them, stay within the cap */
		n = table;
		if (n > HM_DIRECT_SLOTS_MAX)
			n = HM_DIRECT_SLOTS_MAX;
		if (cap != 0 && n > cap)
			n = cap;
	} else {
		table = slots;	/* as before direct_slot_table: all of them */
	}
	if (n == 0)
		return;
	if (n > HM_DIRECT_SLOTS_MAX ||
	    (uint64_t)table * HM_DIRECT_SLOT_BYTES + HM_DIRECT_SLOT_BYTES > s->shm_size) {
		log_info("client %s: %u direct-read slots in a %llu-byte region refused",
			 peer_name(s->peer), table, (unsigned long long)s->shm_size);
		return;
	}
	s->direct_slots = n;
	s->direct_fresh = 0;
	s->direct_held = 0;
	s->direct_free = NULL;
	s->shm_size -= (size_t)table * HM_DIRECT_SLOT_BYTES;	/* READs never write the slots */
	*accepted = 1;
	*used = n;
}

static const char *
refusal(int err)
{
	switch (err) {
	case -EAGAIN:
		return "the file is open for writing";
	case -EACCES:
	case -EPERM:
		return "hotmapd may not lease the file (not its owner, no CAP_LEASE)";
	case -ENODEV:
		return "not a mapped regular file on a local file system";
	case -ENOLCK:
		return "hotmapd could not open the file itself, and leases only its own descriptors";
	case -EDQUOT:
		return "the uid holds max-direct-grants-per-uid grants already";
	default:
		return strerror(-err);
	}
}

/* direct-lease-rule: whether this client may have sh's file leased for
 * it (policy_may_lease); text says why not. */
static bool
lease_allowed(struct session *s, struct session_handle *sh, char *text, size_t textlen)
{
	struct storage_writers w;
	int rc;

	if (s->srv->cfg.direct_lease_rule == HM_LEASE_RULE_CAN_READ)
		return true;
	rc = storage_writers(&sh->h, &w);
	if (rc < 0) {
		snprintf(text, textlen, "lease refused: who may write the file is unknown (%s)",
			 strerror(-rc));
		return false;
	}
	return policy_may_lease(s->srv->cfg.direct_lease_rule, peer_ident(s->peer), &w, text,
				textlen);
}

void
session_direct_open(struct session *s, struct session_handle *sh, uint64_t handle, bool by_path,
		    int *direct, uint32_t *slot, uint64_t *gen, uint64_t *size, char *text,
		    size_t textlen)
{
	struct session_grant *sg;
	struct storage_stat st;
	uint32_t i;
	int rc;

	text[0] = '\0';
	if (s->direct_slots == 0)
		return;	/* not asked for */
	if (!s->srv->cfg.direct_reads) {
		snprintf(text, textlen, "direct-reads is off");
		return;
	}
	if (by_path && !s->srv->cfg.path_descriptors) {
		snprintf(text, textlen, "opened by path: the client has no descriptor to map "
			 "(path-descriptors is no)");
		return;
	}
	if (s->direct_free == NULL && s->direct_fresh == s->direct_slots) {
		unsigned cap = s->srv->direct.max_per_uid;

		if (cap != 0 && direct_uid_grants(&s->srv->direct, peer_uid(s->peer)) >= cap) {
			/* the slots are as many as the cap: say which is why */
			snprintf(text, textlen, "%s", refusal(-EDQUOT));
			s->srv->direct.refused++;
			s->srv->direct.refused_cap++;
		} else {
			snprintf(text, textlen, "all %u direct-read slots are in use",
				 s->direct_slots);
		}
		return;
	}
	/* a file that cannot be leased says so before the rule is asked */
	rc = storage_leasable(&sh->h);
	if (rc < 0 || !lease_allowed(s, sh, text, textlen)) {
		if (rc < 0)
			snprintf(text, textlen, "%s", refusal(rc));
		s->srv->direct.refused++;
		return;
	}
	/* a closed handle's slot first (its page is touched already), else
	 * the next never used */
	sg = s->direct_free;
	if (sg == NULL && (sg = calloc(1, sizeof *sg)) == NULL) {
		snprintf(text, textlen, "%s", strerror(ENOMEM));
		return;
	}
	i = sg == s->direct_free ? sg->slot : s->direct_fresh;
	rc = direct_grant(&s->srv->direct, &sg->g, &sh->h,
			  hm_direct_slot(s->shm, s->shm_map_size, s->direct_slots, i), handle,
			  (uint32_t)peer_uid(s->peer), gen, &st);
	if (rc < 0) {
		if (sg != s->direct_free)
			free(sg);
		snprintf(text, textlen, "%s", refusal(rc));
		return;
	}
	if (sg == s->direct_free) {
		s->direct_free = sg->free_next;
	} else {
		sg->slot = i;
		s->direct_fresh++;
	}
	sg->free_next = NULL;
	s->direct_held++;
	sg->g.client_reads = &s->direct_reads;
	sg->g.client_bytes = &s->direct_bytes;
	sg->g.client_ways = &s->ways;
	sh->grant = sg;
	*direct = 1;
	*slot = i;
	*size = sg->g.size;	/* ours, not the slot the client may write */
	/* processes that come later may read it without asking */
	direct_table_offer(&s->srv->table, &s->srv->direct, s->srv->cache, &sh->h, &st,
			   (uint32_t)peer_uid(s->peer), file_cache_clock_ms());
}

void
session_direct_release(struct session *s, struct session_handle *sh)
{
	struct session_grant *sg = sh->grant;

	if (sg == NULL)
		return;
	/* revoked grants are already out of the registry */
	direct_release(&s->srv->direct, &sg->g);
	sh->grant = NULL;
	sg->free_next = s->direct_free;
	s->direct_free = sg;
	s->direct_held--;
}

unsigned
session_direct_grants(const struct session *s)
{
	unsigned n = 0;
	size_t i;

	if (s->direct_held == 0)
		return 0;
	for (i = 0; i < s->nhandles; i++)
		if (s->handles[i].used && s->handles[i].grant != NULL &&
		    s->handles[i].grant->g.slot != NULL)
			n++;
	return n;
}

void
session_direct_free(struct session *s)
{
	struct session_grant *sg;

	while ((sg = s->direct_free) != NULL) {
		s->direct_free = sg->free_next;
		free(sg);
	}
}
