/* SPDX-License-Identifier: MIT */
/*
 * error.c - the thread's last error (hm_last_error): the message that
 * came with the failure of this thread's last call, the daemon's ERROR
 * or the library's own.  Every call clears it first.
 *
 * Must not: allocate (a call that failed for want of memory still says
 * why), or cost more than a load off the thread pointer when there is
 * nothing to clear (the direct reads clear it on every call).
 */
#include "config.h"

#include <stddef.h>

#include "client/client_priv.h"

static _Thread_local char last_error[512];
/* Whether last_error holds a message: every call clears it first
 * (set_last_error(NULL)), the direct reads too, and that must cost a load
 * off the thread pointer, not a call to __tls_get_addr and a store. */
static _Thread_local unsigned char last_error_set PLATFORM_TLS_FAST;

void
set_last_error(const char *msg)
{
	size_t n;

	if (msg == NULL) {
		if (last_error_set) {
			last_error[0] = '\0';
			last_error_set = 0;
		}
		return;
	}
	for (n = 0; n < sizeof last_error - 1 && msg[n] != '\0'; n++)
		last_error[n] = msg[n];
	last_error[n] = '\0';
	last_error_set = 1;
}

HM_EXPORT const char *
hm_last_error(void)
{
	return last_error_set ? last_error : "";
}
