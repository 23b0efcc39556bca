/* SPDX-License-Identifier: MIT */
/*
 * region_win32.c - the shared region's memory on Windows: a section backed
 * by the paging file (CreateFileMappingW of INVALID_HANDLE_VALUE), mapped
 * whole, blocks then direct-read slots, in one view.  A section keeps the
 * size it was made with (it can neither grow nor shrink, which is what the
 * memfd's seals promise on Linux), so the daemon's view of it never
 * faults.  HELLO carries the section handle's value (Hello.region_handle)
 * for the daemon to pull with DuplicateHandle (docs/windows.md, section
 * 6); a daemon that does not map it answers shm_accepted false and every
 * byte comes over the pipe.
 */
#include "config.h"

#include <errno.h>
#include <windows.h>

#include "client/client_priv.h"
#include "client/win32.h"

int
region_map(struct hm_region *r, size_t table, uint32_t slots, hm_osfile *fd)
{
	uint64_t total = (uint64_t)r->size + table;
	HANDLE section;
	void *view;

	*fd = HM_OSFILE_NONE;
	section = CreateFileMappingW(INVALID_HANDLE_VALUE, NULL, PAGE_READWRITE,
				     (DWORD)(total >> 32), (DWORD)total, NULL);
	if (section == NULL)
		return -win32_errno(GetLastError());
	view = MapViewOfFile(section, FILE_MAP_READ | FILE_MAP_WRITE, 0, 0, (SIZE_T)total);
	if (view == NULL) {
		int err = win32_errno(GetLastError());

		CloseHandle(section);
		return -err;
	}
	r->base = view;
	r->huge = false;	/* large pages need SeLockMemoryPrivilege */
	if (table > 0) {
		r->slots = (struct hm_direct_slot *)((uint8_t *)view + r->size);
		r->nslots = slots;
	}
	*fd = (hm_osfile)section;
	return 0;
}

void
region_unmap(struct hm_region *r)
{
	UnmapViewOfFile(r->base);	/* the slots are in the same view */
}
