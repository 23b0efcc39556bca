/*
 * trust_win32.c - whom libhotmap talks to on Windows (trust.h): the user
 * of the process that serves the pipe, from its token
 * (GetNamedPipeServerProcessId, OpenProcess, OpenProcessToken).  Trusted:
 * LocalSystem, LocalService, the caller's own user (its thread's token
 * when it impersonates, else its process's), or the account
 * HOTMAP_DAEMON_USER names (a SID string such as S-1-5-80-..., or an
 * account name such as "NT SERVICE\hotmapd").  Anyone else may have
 * made the pipe's name first (a squatter while the daemon was down):
 * such a pipe gets no request, no handle value, no file name.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>
#include <sddl.h>

#include "client/trust.h"
#include "client/win32.h"

/* The user SID of token t, malloced, or NULL. */
static PSID
token_user(HANDLE t)
{
	DWORD len = 0;
	TOKEN_USER *tu;
	PSID sid;

	GetTokenInformation(t, TokenUser, NULL, 0, &len);
	if (len == 0 || (tu = malloc(len)) == NULL)
		return NULL;
	if (!GetTokenInformation(t, TokenUser, tu, len, &len)) {
		free(tu);
		return NULL;
	}
	len = GetLengthSid(tu->User.Sid);
	sid = malloc(len);
	if (sid != NULL && !CopySid(len, sid, tu->User.Sid)) {
		free(sid);
		sid = NULL;
	}
	free(tu);
	return sid;
}

/* Our own user: the thread's token when it impersonates, else the
 * process's (the effective uid of trust.c). */
static PSID
own_user(void)
{
	HANDLE t;
	PSID sid;

	if (!OpenThreadToken(GetCurrentThread(), TOKEN_QUERY, TRUE, &t) &&
	    !OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &t))
		return NULL;
	sid = token_user(t);
	CloseHandle(t);
	return sid;
}

/* The account HOTMAP_DAEMON_USER names, malloced; NULL if unset or none. */
static PSID
named_user(const char *name)
{
	PSID sid = NULL, copy;
	SID_NAME_USE use;
	DWORD len = 0, dlen = 0;
	char *dom;

	if (strncmp(name, "S-", 2) == 0) {
		if (!ConvertStringSidToSidA(name, &sid))
			return NULL;
		len = GetLengthSid(sid);
		copy = malloc(len);
		if (copy != NULL)
			CopySid(len, copy, sid);
		LocalFree(sid);
		return copy;
	}
	LookupAccountNameA(NULL, name, NULL, &len, NULL, &dlen, &use);
	if (len == 0 || (sid = malloc(len)) == NULL)
		return NULL;
	dom = malloc(dlen > 0 ? dlen : 1);
	if (dom == NULL || !LookupAccountNameA(NULL, name, sid, &len, dom, &dlen, &use)) {
		free(sid);
		sid = NULL;
	}
	free(dom);
	return sid;
}

/* sid as S-1-..., into buf. */
static void
sid_text(PSID sid, char *buf, size_t len)
{
	char *s = NULL;

	if (sid != NULL && ConvertSidToStringSidA(sid, &s)) {
		snprintf(buf, len, "%s", s);
		LocalFree(s);
	} else {
		snprintf(buf, len, "?");
	}
}

int
client_trust_daemon(hm_conn conn, const char *path, char *why, size_t whylen)
{
	const char *user = getenv("HOTMAP_DAEMON_USER");
	PSID daemon = NULL, me = NULL, named = NULL;
	char dtext[192], mtext[192];
	ULONG pid = 0;
	HANDLE proc = NULL, tok = NULL;
	DWORD err = 0;
	int rc;

	if (!GetNamedPipeServerProcessId((HANDLE)conn, &pid))
		err = GetLastError();
	else if ((proc = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid)) == NULL)
		err = GetLastError();
	else if (!OpenProcessToken(proc, TOKEN_QUERY, &tok))
		err = GetLastError();
	else if ((daemon = token_user(tok)) == NULL)
		err = GetLastError() != 0 ? GetLastError() : ERROR_NOT_ENOUGH_MEMORY;
	if (tok != NULL)
		CloseHandle(tok);
	if (proc != NULL)
		CloseHandle(proc);
	if (daemon == NULL) {
		rc = win32_errno(err);
		snprintf(why, whylen, "%s: cannot tell who serves the pipe (pid %lu, Windows error "
			 "%lu): refusing to talk to it", path, (unsigned long)pid, (unsigned long)err);
		return -rc;
	}
	me = own_user();
	if (IsWellKnownSid(daemon, WinLocalSystemSid) || IsWellKnownSid(daemon, WinLocalServiceSid) ||
	    (me != NULL && EqualSid(daemon, me))) {
		rc = 0;
		goto out;
	}
	if (user != NULL && user[0] != '\0' && (named = named_user(user)) != NULL &&
	    EqualSid(daemon, named)) {
		rc = 0;
		goto out;
	}
	sid_text(daemon, dtext, sizeof dtext);
	sid_text(me, mtext, sizeof mtext);
	snprintf(why, whylen, "%s: the daemon runs as %s (pid %lu), not LocalSystem, LocalService, "
		 "you (%s) nor the daemon user%s%s%s: refusing to talk to it "
		 "(HOTMAP_DAEMON_USER names the daemon's account)", path, dtext, (unsigned long)pid,
		 mtext, user != NULL && user[0] != '\0' ? " '" : "",
		 user != NULL && user[0] != '\0' ? user : "",
		 user != NULL && user[0] != '\0' ? (named != NULL ? "'" : "' (no such account)") : "");
	rc = -EPERM;
out:
	free(daemon);
	free(me);
	free(named);
	return rc;
}
