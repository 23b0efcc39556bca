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

void
session_direct_hello(struct session *s, uint32_t slots, int *accepted)
{
	size_t table = (size_t)slots * HM_DIRECT_SLOT_BYTES;

	*accepted = 0;
	if (slots == 0 || !s->srv->cfg.direct_reads)
		return;
	if (slots > HM_DIRECT_SLOTS_MAX || table + HM_DIRECT_SLOT_BYTES > s->shm_size) {
		log_info("client %s: %u direct-read slots in a %llu-byte region refused",
			 peer_name(s->peer), slots, (unsigned long long)s->shm_size);
		return;
	}
	s->direct_grants = calloc(slots, sizeof *s->direct_grants);
	s->direct_handles = calloc(slots, sizeof *s->direct_handles);
	if (s->direct_grants == NULL || s->direct_handles == NULL) {
		free(s->direct_grants);
		free(s->direct_handles);
		s->direct_grants = NULL;
		s->direct_handles = NULL;
		return;
	}
	s->direct_slots = slots;
	s->shm_size -= table;	/* READs never write the slots */
	*accepted = 1;
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
	struct direct_grant *g;
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
	for (i = 0; i < s->direct_slots && s->direct_grants[i] != NULL; i++)
		;
	if (i == s->direct_slots) {
		snprintf(text, textlen, "all %u direct-read slots are in use", s->direct_slots);
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
	g = calloc(1, sizeof *g);
	if (g == NULL) {
		snprintf(text, textlen, "%s", strerror(ENOMEM));
		return;
	}
	rc = direct_grant(&s->srv->direct, g, &sh->h,
			  hm_direct_slot(s->shm, s->shm_map_size, s->direct_slots, i), handle,
			  (uint32_t)peer_uid(s->peer), gen);
	if (rc < 0) {
		free(g);
		snprintf(text, textlen, "%s", refusal(rc));
		return;
	}
	g->client_reads = &s->direct_reads;
	g->client_bytes = &s->direct_bytes;
	g->client_ways = &s->ways;
	s->direct_grants[i] = g;
	s->direct_handles[i] = handle;
	*direct = 1;
	*slot = i;
	*size = g->slot->size;
}

void
session_direct_release(struct session *s, struct session_handle *sh)
{
	uint64_t handle = (uint64_t)(sh - s->handles) + 1;
	uint32_t i;

	for (i = 0; i < s->direct_slots; i++) {
		if (s->direct_grants[i] == NULL || s->direct_handles[i] != handle)
			continue;
		/* revoked grants are already out of the registry */
		direct_release(&s->srv->direct, s->direct_grants[i]);
		free(s->direct_grants[i]);
		s->direct_grants[i] = NULL;
		return;
	}
}
