/* SPDX-License-Identifier: MIT */
/*
 * test_trust_win32.c - whom libhotmap talks to on Windows
 * (client/trust_win32.c), under wine (contrib/windows/test): the rule
 * trust_win32_server_ok applies to the pipe server's token, for every
 * kind of server a wine prefix cannot start (every wine process runs as
 * one user): LocalSystem, LocalService with and without hotmapd's
 * service SID, the virtual account NT SERVICE\hotmapd, another service,
 * another user.  And the service SID itself, derived again here as the
 * service control manager derives it, checked on a service SID Windows
 * documents (TrustedInstaller's).
 *
 * Windows builds only (contrib/windows/build).
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <windows.h>
#include <sddl.h>
#include <wincrypt.h>

#include <cmocka.h>

#include "client/trust_win32.h"

/* NT SERVICE\TrustedInstaller, as Windows names it. */
#define TRUSTED_INSTALLER_SID \
	"S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464"

/* The service SID of name as the SCM makes it: S-1-5-80- and the SHA-1
 * of the upper-cased name in UTF-16LE, as five little-endian words. */
static void
service_sid_of(const wchar_t *name, char *buf, size_t len)
{
	wchar_t upper[256];
	HCRYPTPROV prov;
	HCRYPTHASH hash;
	BYTE digest[20];
	DWORD n = sizeof digest, w[5];
	int i;

	wcsncpy(upper, name, 255);
	upper[255] = L'\0';
	CharUpperW(upper);
	assert_true(CryptAcquireContextW(&prov, NULL, NULL, PROV_RSA_FULL, CRYPT_VERIFYCONTEXT));
	assert_true(CryptCreateHash(prov, CALG_SHA1, 0, 0, &hash));
	assert_true(CryptHashData(hash, (const BYTE *)upper, (DWORD)(wcslen(upper) * 2), 0));
	assert_true(CryptGetHashParam(hash, HP_HASHVAL, digest, &n, 0));
	CryptDestroyHash(hash);
	CryptReleaseContext(prov, 0);
	for (i = 0; i < 5; i++)
		w[i] = (DWORD)digest[4 * i] | (DWORD)digest[4 * i + 1] << 8 |
		       (DWORD)digest[4 * i + 2] << 16 | (DWORD)digest[4 * i + 3] << 24;
	snprintf(buf, len, "S-1-5-80-%lu-%lu-%lu-%lu-%lu", w[0], w[1], w[2], w[3], w[4]);
}

static void
test_service_sid(void **state)
{
	char sid[128];

	(void)state;
	service_sid_of(L"TrustedInstaller", sid, sizeof sid);
	assert_string_equal(sid, TRUSTED_INSTALLER_SID);
	service_sid_of(L"hotmapd", sid, sizeof sid);
	assert_string_equal(sid, TRUST_HOTMAPD_SERVICE_SID);
}

static PSID
sid(const char *text)
{
	PSID s = NULL;

	assert_true(ConvertStringSidToSidA(text, &s));
	return s;
}

/* A TOKEN_GROUPS of one group with attributes attr. */
struct one_group {
	TOKEN_GROUPS g;
};

static void
group(struct one_group *g, PSID s, DWORD attr)
{
	g->g.GroupCount = 1;
	g->g.Groups[0].Sid = s;
	g->g.Groups[0].Attributes = attr;
}

#define ENABLED	(SE_GROUP_ENABLED | SE_GROUP_ENABLED_BY_DEFAULT | SE_GROUP_MANDATORY)

static void
test_rule(void **state)
{
	PSID system = sid("S-1-5-18"), local_service = sid("S-1-5-19");
	PSID network_service = sid("S-1-5-20"), hotmapd = sid(TRUST_HOTMAPD_SERVICE_SID);
	PSID other_service = sid(TRUSTED_INSTALLER_SID), users = sid("S-1-5-32-545");
	PSID me = sid("S-1-5-21-1-2-3-1000"), other = sid("S-1-5-21-1-2-3-1001");
	struct one_group g;

	(void)state;
	/* as before: LocalSystem, the caller itself, the named account */
	assert_true(trust_win32_server_ok(system, NULL, me, NULL));
	assert_true(trust_win32_server_ok(me, NULL, me, NULL));
	assert_false(trust_win32_server_ok(other, NULL, me, NULL));
	assert_true(trust_win32_server_ok(other, NULL, me, other));
	assert_false(trust_win32_server_ok(NULL, NULL, me, NULL));
	/* no longer: LocalService as such, which every LocalService
	 * service is */
	assert_false(trust_win32_server_ok(local_service, NULL, me, NULL));
	group(&g, other_service, ENABLED);
	assert_false(trust_win32_server_ok(local_service, &g.g, me, NULL));
	/* the service hotmapd: its SID as a group, whatever the account */
	group(&g, hotmapd, ENABLED);
	assert_true(trust_win32_server_ok(local_service, &g.g, me, NULL));
	assert_true(trust_win32_server_ok(network_service, &g.g, me, NULL));
	/* ... only enabled, and not for deny only */
	group(&g, hotmapd, SE_GROUP_MANDATORY);
	assert_false(trust_win32_server_ok(local_service, &g.g, me, NULL));
	group(&g, hotmapd, ENABLED | SE_GROUP_USE_FOR_DENY_ONLY);
	assert_false(trust_win32_server_ok(local_service, &g.g, me, NULL));
	/* the virtual account NT SERVICE\hotmapd */
	assert_true(trust_win32_server_ok(hotmapd, NULL, me, NULL));
	/* HOTMAP_DAEMON_USER naming another service's SID: that service
	 * (installed under another name) the same way, as its user or as a
	 * group; a named user or group that is no service SID counts only
	 * as the user */
	group(&g, other_service, ENABLED);
	assert_true(trust_win32_server_ok(local_service, &g.g, me, other_service));
	assert_true(trust_win32_server_ok(other_service, NULL, me, other_service));
	group(&g, users, ENABLED);
	assert_false(trust_win32_server_ok(local_service, &g.g, me, users));
	group(&g, other, ENABLED);
	assert_false(trust_win32_server_ok(local_service, &g.g, me, other));
	/* LocalService trusted again only when named so, on purpose */
	assert_true(trust_win32_server_ok(local_service, NULL, me, local_service));
	LocalFree(system);
	LocalFree(local_service);
	LocalFree(network_service);
	LocalFree(hotmapd);
	LocalFree(other_service);
	LocalFree(users);
	LocalFree(me);
	LocalFree(other);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_service_sid),
		cmocka_unit_test(test_rule),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
