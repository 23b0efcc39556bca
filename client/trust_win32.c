/* SPDX-License-Identifier: MIT */
/*
 * trust_win32.c - whom libhotmap talks to on Windows (trust.h): the user
 * and groups of the process that serves the pipe, from its token
 * (GetNamedPipeServerProcessId, OpenProcess, OpenProcessToken).  Trusted
 * (trust_win32_server_ok, trust_win32.h): LocalSystem, the caller's own
 * user (its thread's token when it impersonates, else its process's),
 * the account HOTMAP_DAEMON_USER names (a SID string such as
 * S-1-5-80-..., or an account name such as "NT SERVICE\hotmapd"), and
 * the service named hotmapd: a token whose user is its service SID (the
 * virtual account NT SERVICE\hotmapd) or that holds it as an enabled
 * group (the service run as LocalService, say, with a service SID).
 * Anyone else may have made the pipe's name first (a squatter while the
 * daemon was down): such a pipe gets no request, no handle value, no
 * file name.
 *
 * Not LocalService as such: every service that runs as LocalService has
 * that user, and any of them could make \\.\pipe\hotmap while hotmapd
 * is down.  The service SID is the SCM's to give: only the service
 * installed as hotmapd (by an administrator) runs with it.
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
#include "client/trust_win32.h"
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
 * process's (the effective uid of trust_unix.c). */
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

/* The groups of token t, malloced, or NULL. */
static TOKEN_GROUPS *
token_groups(HANDLE t)
{
	DWORD len = 0;
	TOKEN_GROUPS *g;

	GetTokenInformation(t, TokenGroups, NULL, 0, &len);
	if (len == 0 || (g = malloc(len)) == NULL)
		return NULL;
	if (!GetTokenInformation(t, TokenGroups, g, len, &len)) {
		free(g);
		return NULL;
	}
	return g;
}

/* Whether sid is a service SID: S-1-5-80-... (SECURITY_SERVICE_ID_BASE_RID
 * under the NT authority). */
static bool
service_sid(PSID sid)
{
	static const SID_IDENTIFIER_AUTHORITY nt = SECURITY_NT_AUTHORITY;
	const SID_IDENTIFIER_AUTHORITY *a;

	if (sid == NULL || !IsValidSid(sid) || *GetSidSubAuthorityCount(sid) < 1)
		return false;
	a = GetSidIdentifierAuthority(sid);
	return memcmp(a, &nt, sizeof nt) == 0 &&
	       *GetSidSubAuthority(sid, 0) == SECURITY_SERVICE_ID_BASE_RID;
}

/* Whether groups holds sid, enabled and not for deny only. */
static bool
has_group(const TOKEN_GROUPS *groups, PSID sid)
{
	DWORD i;

	if (groups == NULL || sid == NULL)
		return false;
	for (i = 0; i < groups->GroupCount; i++)
		if ((groups->Groups[i].Attributes & SE_GROUP_ENABLED) &&
		    !(groups->Groups[i].Attributes & SE_GROUP_USE_FOR_DENY_ONLY) &&
		    EqualSid(groups->Groups[i].Sid, sid))
			return true;
	return false;
}

bool
trust_win32_server_ok(PSID user, const TOKEN_GROUPS *groups, PSID me, PSID named)
{
	PSID hotmapd = NULL;
	bool ok;

	if (user == NULL)
		return false;
	if (IsWellKnownSid(user, WinLocalSystemSid) || (me != NULL && EqualSid(user, me)) ||
	    (named != NULL && EqualSid(user, named)))
		return true;
	/* the service hotmapd, as its virtual account or by its service SID
	 * in the token of whatever account it runs as; a service SID that
	 * HOTMAP_DAEMON_USER names (a service installed under another name)
	 * the same way */
	if (named != NULL && service_sid(named) && has_group(groups, named))
		return true;
	if (!ConvertStringSidToSidA(TRUST_HOTMAPD_SERVICE_SID, &hotmapd))
		return false;
	ok = EqualSid(user, hotmapd) || has_group(groups, hotmapd);
	LocalFree(hotmapd);
	return ok;
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
	TOKEN_GROUPS *groups = NULL;
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
	else
		groups = token_groups(tok);	/* none read: only its user counts */
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
	/* the named account looked up only when needed: a name may take a
	 * domain controller's answer */
	if (trust_win32_server_ok(daemon, groups, me, NULL) ||
	    (user != NULL && user[0] != '\0' && (named = named_user(user)) != NULL &&
	     trust_win32_server_ok(daemon, groups, me, named))) {
		rc = 0;
		goto out;
	}
	sid_text(daemon, dtext, sizeof dtext);
	sid_text(me, mtext, sizeof mtext);
	snprintf(why, whylen, "%s: the daemon runs as %s (pid %lu), not LocalSystem, the service "
		 "hotmapd, you (%s) nor the daemon user%s%s%s: refusing to talk to it "
		 "(HOTMAP_DAEMON_USER names the daemon's account)", path, dtext, (unsigned long)pid,
		 mtext, user != NULL && user[0] != '\0' ? " '" : "",
		 user != NULL && user[0] != '\0' ? user : "",
		 user != NULL && user[0] != '\0' ? (named != NULL ? "'" : "' (no such account)") : "");
	rc = -EPERM;
out:
	free(daemon);
	free(groups);
	free(me);
	free(named);
	return rc;
}
