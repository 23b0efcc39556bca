/*
 * region_win32.c - the shared region on Windows: not offered yet.  It
 * would be a pagefile-backed section (CreateFileMappingW of
 * INVALID_HANDLE_VALUE, which can neither grow nor shrink, as the memfd's
 * seals promise on Linux) whose handle the daemon pulls (Hello
 * region_handle); the daemon does not map one yet, so HELLO offers no
 * region (transport_win32.c leaves HM_FEATURE_SHM out), views are
 * filled over the pipe, and no region is made.
 */
#include "config.h"

#include <errno.h>

#include "client/client_priv.h"

int
region_map(struct hm_region *r, size_t table, uint32_t slots, int *fd)
{
	(void)r;
	(void)table;
	(void)slots;
	*fd = -1;
	return -ENOTSUP;
}

void
region_unmap(struct hm_region *r)
{
	(void)r;
}
