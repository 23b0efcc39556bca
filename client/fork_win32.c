/* SPDX-License-Identifier: MIT */
/*
 * fork_win32.c - fork.c's platform half on Windows, which has no fork: a
 * child process starts with no client, so a client's pid is the process's
 * for as long as it lives and there is nothing to watch.
 */
#include "config.h"

#include <windows.h>

#include "client/client_priv.h"

pid_t
fork_pid(void)
{
	return (pid_t)GetCurrentProcessId();
}

void
fork_watch(void)
{
}
