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

#include "daemon/direct.h"
#include "daemon/log.h"
#include "daemon/peer.h"
#include "daemon/server.h"
#include "daemon/session_direct.h"
#include "daemon/session_priv.h"
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
	default:
		return strerror(-err);
	}
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
	g = calloc(1, sizeof *g);
	if (g == NULL) {
		snprintf(text, textlen, "%s", strerror(ENOMEM));
		return;
	}
	rc = direct_grant(&s->srv->direct, g, &sh->h,
			  hm_direct_slot(s->shm, s->shm_map_size, s->direct_slots, i), handle, gen);
	if (rc < 0) {
		free(g);
		snprintf(text, textlen, "%s", refusal(rc));
		return;
	}
	g->client_reads = &s->direct_reads;
	g->client_bytes = &s->direct_bytes;
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
