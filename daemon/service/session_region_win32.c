/* SPDX-License-Identifier: MIT */
/*
 * session_region_win32.c - the shared region on Windows (see
 * session_region.h): the client makes a pagefile-backed section
 * (CreateFileMapping of INVALID_HANDLE_VALUE) and names its handle in
 * HELLO's region_handle; the daemon pulls it (DuplicateHandle) and maps a
 * view.  A section cannot grow or shrink once made, which is what the
 * seals promise on Linux: a copy into the view cannot fault because of
 * the client.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>

#include <windows.h>

#include "daemon/service/session_state.h"
#include "daemon/service/session_region.h"
#include "daemon/transport/transport_win32.h"
#include "proto/frame.h"

int
session_region_map(struct session *s, uint64_t size, uint64_t handle, char *err,
		   size_t errlen)
{
	MEMORY_BASIC_INFORMATION mbi;
	hm_fd h;
	void *p;
	int rc;

	if (size > HM_SHM_MAX) {
		snprintf(err, errlen, "%llu bytes is more than the %llu a client may share",
			 (unsigned long long)size, (unsigned long long)HM_SHM_MAX);
		return -EFBIG;
	}
	rc = peer_pull_handle(s->peer, handle, &h);
	if (rc < 0) {
		snprintf(err, errlen, "%s", rc == -EACCES ?
			 "hotmapd may not take handles from the client's process" :
			 "region_handle names no handle of the client");
		return rc;
	}
	p = MapViewOfFile(h, FILE_MAP_READ | FILE_MAP_WRITE, 0, 0, (SIZE_T)size);
	CloseHandle(h);	/* the view keeps the section */
	if (p == NULL) {
		snprintf(err, errlen, "region_handle is no section of %llu bytes hotmapd may write "
			 "(MapViewOfFile: Windows error %lu)", (unsigned long long)size,
			 GetLastError());
		return -EINVAL;
	}
	/* the view is as large as asked only if the section is: a view past
	 * a section's end is refused above, but check what was mapped */
	if (VirtualQuery(p, &mbi, sizeof mbi) == 0 || mbi.RegionSize < size) {
		UnmapViewOfFile(p);
		snprintf(err, errlen, "the region's size is not the %llu bytes announced",
			 (unsigned long long)size);
		return -EINVAL;
	}
	s->shm = p;
	s->shm_size = (size_t)size;
	s->shm_map_size = (size_t)size;
	return 0;
}

bool
session_region_huge(struct session *s)
{
	(void)s;
	return false;	/* large pages need SeLockMemoryPrivilege: not asked for */
}

void
session_region_unmap(struct session *s)
{
	if (s->shm != NULL)
		UnmapViewOfFile(s->shm);
	s->shm = NULL;
}
