/* SPDX-License-Identifier: MIT */
/*
 * session_region.h - a client's shared region (HELLO shm_size), as the
 * platform passes it: a memfd sealed against shrinking and growing, with
 * HELLO's descriptor (session_region_unix.c), or a pagefile-backed
 * section whose handle the daemon pulls, HELLO's region_handle
 * (session_region_win32.c; docs/windows.md, section 6).  Either way the
 * daemon's copies into it cannot fault because of what the client does.
 *
 * Must not: decide what lives in the region (session.c, session_ring.c
 * and session_direct.c do).
 */
#ifndef HOTMAP_SESSION_REGION_H
#define HOTMAP_SESSION_REGION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct session;

/* Maps the region of size bytes into s->shm (s->shm_size and
 * s->shm_map_size set).  handle is HELLO's region_handle (Windows only).
 * 0, or a negative errno with err saying why it was refused. */
int session_region_map(struct session *s, uint64_t size, uint64_t handle, char *err,
		       size_t errlen);
/* Asks for huge pages for the region (the client asked too); whether
 * that was taken. */
bool session_region_huge(struct session *s);
/* Unmaps s->shm.  Nothing when there is none. */
void session_region_unmap(struct session *s);

#endif
