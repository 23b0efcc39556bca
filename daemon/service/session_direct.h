/* SPDX-License-Identifier: MIT */
/*
 * session_direct.h - a session's part in direct reads: the slots in its
 * region and the grants on its handles (daemon/service/direct.h is the registry).
 *
 * What it must not do: grant a handle opened by path (the client could
 * not map a descriptor it does not have), or a client whose region has no
 * room for the slots it announced.
 */
#ifndef HOTMAP_SESSION_DIRECT_H
#define HOTMAP_SESSION_DIRECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct session;
struct session_handle;

/* HELLO announced a table of slots at the end of the (accepted) region
 * (table: Hello direct_slot_table, 0 from a client that did not send it;
 * slots: Hello direct_slots): takes the table out of what READs may fill,
 * when direct reads are on, and sets *used to the slots granted in, the
 * table's last (HelloReply direct_slots), at most the per-uid cap. */
void session_direct_hello(struct session *s, uint32_t slots, uint32_t table, int *accepted,
			  uint32_t *used);
/* After OPEN: grants direct reads of sh when the daemon may, filling the
 * reply's fields (*size: the size the grant holds); otherwise text says
 * why not ("" when the client did not ask). */
void session_direct_open(struct session *s, struct session_handle *sh, uint64_t handle,
			 bool by_path, int *direct, uint32_t *slot, uint64_t *gen, uint64_t *size,
			 char *text, size_t textlen);
/* The handle closes: the grant goes, its counts folded in; its slot is
 * kept for the next grant. */
void session_direct_release(struct session *s, struct session_handle *sh);
/* The grants its handles hold now (not revoked): O(handles). */
unsigned session_direct_grants(const struct session *s);
/* Frees what the session kept for reuse (its handles released first). */
void session_direct_free(struct session *s);

#endif
