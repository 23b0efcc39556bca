/* SPDX-License-Identifier: MIT */
/*
 * peer_win32.c - the peer's half on Windows (peer_priv.h), over the named
 * pipe's instances (transport_win32_priv.h): who the client is (its
 * token, at its first bytes: peer_ident_of), whether the process the
 * pipe names is that client (pipe_client_process_check) before any
 * handle is pulled from it, and reads, writes and handle pulls for the
 * peer.  The Windows twin of peer_unix.c.
 *
 * What it must not do: pull a handle from a process not shown to be the
 * client; act as the client (it impersonates only to read the token).
 */
#include "config.h"

#include "daemon/transport/transport_win32_priv.h"

/* --- identity ------------------------------------------------------------ */

static void
ident_init(struct peer_ident *id)
{
	memset(id, 0, sizeof *id);
	id->uid = (uid_t)-1;
	id->gid = (gid_t)-1;
}

/* The user SID, and whether the token is LocalSystem's or has
 * BUILTIN\Administrators enabled. */
static int
ident_from_token(HANDLE token, struct peer_ident *id)
{
	union {
		TOKEN_USER tu;
		uint8_t b[SECURITY_MAX_SID_SIZE + sizeof(TOKEN_USER)];
	} user;
	uint8_t admins[SECURITY_MAX_SID_SIZE];
	DWORD len = sizeof admins, i;
	TOKEN_GROUPS *groups;
	char *text;

	if (!GetTokenInformation(token, TokenUser, &user, sizeof user, &len))
		return -EACCES;
	if (!ConvertSidToStringSidA(user.tu.User.Sid, &text))
		return -ENOMEM;
	snprintf(id->user, sizeof id->user, "%s", text);
	LocalFree(text);
	id->superuser = IsWellKnownSid(user.tu.User.Sid, WinLocalSystemSid) != FALSE;
	len = sizeof admins;
	if (!id->superuser && CreateWellKnownSid(WinBuiltinAdministratorsSid, NULL, admins, &len)) {
		len = 0;
		GetTokenInformation(token, TokenGroups, NULL, 0, &len);
		groups = len > 0 ? malloc(len) : NULL;
		if (groups != NULL && GetTokenInformation(token, TokenGroups, groups, len, &len)) {
			for (i = 0; i < groups->GroupCount; i++)
				if ((groups->Groups[i].Attributes & SE_GROUP_ENABLED) &&
				    !(groups->Groups[i].Attributes & SE_GROUP_USE_FOR_DENY_ONLY) &&
				    EqualSid(groups->Groups[i].Sid, admins))
					id->superuser = true;
		}
		free(groups);
	}
	id->known = true;
	return 0;
}

/* The token's mandatory integrity level (its label's last RID,
 * SECURITY_MANDATORY_*_RID), or -1 when it has none. */
static int64_t
token_integrity(HANDLE token)
{
	union {
		TOKEN_MANDATORY_LABEL l;
		uint8_t b[SECURITY_MAX_SID_SIZE + sizeof(TOKEN_MANDATORY_LABEL)];
	} label;
	DWORD len = sizeof label;
	UCHAR n;

	if (!GetTokenInformation(token, TokenIntegrityLevel, &label, sizeof label, &len) ||
	    label.l.Label.Sid == NULL || !IsValidSid(label.l.Label.Sid))
		return -1;
	n = *GetSidSubAuthorityCount(label.l.Label.Sid);
	return n > 0 ? (int64_t)*GetSidSubAuthority(label.l.Label.Sid, n - 1) : -1;
}

/* sid as S-1-..., into buf. */
static void
sid_text(PSID sid, char *buf, size_t len)
{
	char *text = NULL;

	if (sid != NULL && ConvertSidToStringSidA(sid, &text)) {
		snprintf(buf, len, "%s", text);
		LocalFree(text);
	} else {
		snprintf(buf, len, "?");
	}
}

int
pipe_client_process_check(void *process, const void *user, uint32_t integrity,
			  uint64_t connected_at, char *why, size_t whylen)
{
	union {
		TOKEN_USER tu;
		uint8_t b[SECURITY_MAX_SID_SIZE + sizeof(TOKEN_USER)];
	} pu;
	FILETIME created, exited, kernel, usr;
	uint64_t born;
	HANDLE token;
	int64_t level;
	DWORD len = sizeof pu;
	char a[192], b[192];

	if (whylen > 0)
		why[0] = '\0';
	/* Made after we learned of the client: a process that took the
	 * client's pid once the client was gone. */
	if (!GetProcessTimes(process, &created, &exited, &kernel, &usr)) {
		snprintf(why, whylen, "its creation time cannot be read (Windows error %lu)",
			 GetLastError());
		return -EACCES;
	}
	born = ((uint64_t)created.dwHighDateTime << 32) | created.dwLowDateTime;
	if (born > connected_at) {
		snprintf(why, whylen, "it was created %llu us after the client connected: "
			 "the client is gone and its pid taken",
			 (unsigned long long)(born - connected_at) / 10);
		return -EACCES;
	}
	/* Another user's process, or one of the same user that runs above
	 * the client's integrity level (an elevated one): the pull would
	 * take what the client could not open itself. */
	if (!OpenProcessToken(process, TOKEN_QUERY, &token)) {
		snprintf(why, whylen, "its token cannot be read (Windows error %lu)",
			 GetLastError());
		return -EACCES;
	}
	if (!GetTokenInformation(token, TokenUser, &pu, sizeof pu, &len)) {
		snprintf(why, whylen, "its token's user cannot be read (Windows error %lu)",
			 GetLastError());
		CloseHandle(token);
		return -EACCES;
	}
	if (!EqualSid(pu.tu.User.Sid, (PSID)user)) {
		sid_text(pu.tu.User.Sid, a, sizeof a);
		sid_text((PSID)user, b, sizeof b);
		snprintf(why, whylen, "it runs as %s, the client as %s", a, b);
		CloseHandle(token);
		return -EACCES;
	}
	level = token_integrity(token);
	CloseHandle(token);
	if (level < 0) {
		snprintf(why, whylen, "its integrity level cannot be read");
		return -EACCES;
	}
	if (level > (int64_t)integrity) {
		snprintf(why, whylen, "its integrity level 0x%llx is above the client's 0x%lx",
			 (long long)level, (unsigned long)integrity);
		return -EACCES;
	}
	return 0;
}

/* The process opened at connect is given up: no handle will be pulled
 * from this client. */
static void
conn_drop_process(struct pipe_conn *c)
{
	if (c->process != NULL)
		CloseHandle(c->process);
	c->process = NULL;
	c->process_checked = true;
}

/*
 * Keeps the process opened at connect for handle pulls if it is the
 * client whose token (the pipe's impersonation token) this is; drops it,
 * with a log line, if it is not.  Once per connection.
 */
static void
conn_check_process(struct pipe_conn *c, HANDLE token, const struct peer_ident *id)
{
	union {
		TOKEN_USER tu;
		uint8_t b[SECURITY_MAX_SID_SIZE + sizeof(TOKEN_USER)];
	} user;
	DWORD len = sizeof user;
	int64_t level;
	char why[256];

	if (c->process_checked)
		return;
	if (c->process == NULL) {
		/* nothing to pull from: every pull is -EACCES (the daemon's
		 * account may not open the client's process at all) */
		if (c->process_error != 0)
			log_info("pid %lu %s: its process cannot be opened (Windows error %lu): "
				 "no handle can be taken from it", (unsigned long)c->pid, id->user,
				 (unsigned long)c->process_error);
		conn_drop_process(c);
		return;
	}
	level = token_integrity(token);
	if (!GetTokenInformation(token, TokenUser, &user, sizeof user, &len) || level < 0) {
		log_warn("pid %lu %s: the client's token says too little to tell its process "
			 "(Windows error %lu): no handle will be taken from it",
			 (unsigned long)c->pid, id->user, GetLastError());
		conn_drop_process(c);
		return;
	}
	if (pipe_client_process_check(c->process, user.tu.User.Sid, (uint32_t)level,
				      c->connected_at, why, sizeof why) < 0) {
		log_warn("pid %lu %s: the process with that pid is not the pipe's client (%s): "
			 "no handle will be taken from it", (unsigned long)c->pid, id->user, why);
		conn_drop_process(c);
		return;
	}
	c->process_checked = true;
}

int
peer_ident_of(hm_conn c, struct peer_ident *id)
{
	HANDLE token = NULL;
	BOOL opened;
	int rc;

	ident_init(id);
	if (c == NULL || c->h == INVALID_HANDLE_VALUE)
		return -EBADF;
	/* once, at accept (after its first bytes were read: Windows
	 * impersonates a pipe client only then): the client's token, then
	 * straight back to our
	 * own (clients connect with SECURITY_IDENTIFICATION: the daemon can
	 * tell who they are and never act as them) */
	if (!ImpersonateNamedPipeClient(c->h)) {
		conn_drop_process(c);	/* nobody to compare the process with */
		return -EACCES;
	}
	opened = OpenThreadToken(GetCurrentThread(), TOKEN_QUERY, TRUE, &token);
	if (!RevertToSelf())
		abort();	/* never go on as the client */
	if (!opened) {
		conn_drop_process(c);
		return -EACCES;
	}
	rc = ident_from_token(token, id);
	if (rc == 0)
		conn_check_process(c, token, id);
	else
		conn_drop_process(c);
	CloseHandle(token);
	if (rc < 0) {
		ident_init(id);
		return rc;
	}
	id->pid = (pid_t)c->pid;
	return 0;
}

int
peer_ident_self(struct peer_ident *id)
{
	HANDLE token;
	int rc;

	ident_init(id);
	if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &token))
		return -EACCES;
	rc = ident_from_token(token, id);
	CloseHandle(token);
	if (rc < 0) {
		ident_init(id);
		return rc;
	}
	id->pid = (pid_t)GetCurrentProcessId();
	return 0;
}

/* --- the peer's half ------------------------------------------------------ */

int
peer_io_new(struct peer *p)
{
	struct peer_io *io = calloc(1, sizeof *io);

	if (io == NULL)
		return -ENOMEM;
	p->io = io;
	io->c = p->conn;
	io->c->peer = p;
	if (io->c->first_bytes > 0) {
		/* the bytes read before the peer existed arrive as a read
		 * completed, on the loop's next turn */
		struct pipe_conn *c = io->c;

		op_begin(&c->rd);
		c->rd.failed_now = true;
		c->rd.bytes = c->first_bytes;
		c->first_bytes = 0;
		tw_queue(&c->rd);
	}
	return 0;
}

void
peer_io_free(struct peer *p)
{
	free(p->io);
	p->io = NULL;
	if (p->conn != HM_CONN_NONE)
		conn_give_up(p->conn, false);
	p->conn = HM_CONN_NONE;
}

void
peer_io_update(struct peer *p, bool want_read, bool want_write)
{
	/* A read in flight is not taken back when input is full: it brings
	 * at most TW_BUF more. */
	if (want_read)
		conn_post_read(p->conn);
	if (want_write)
		conn_post_write(p->conn, p->out);
}

void
peer_io_stop(struct peer *p)
{
	p->conn->peer = NULL;
}

bool
peer_io_writing(const struct peer *p)
{
	return p->conn->wr.busy;
}

int
peer_io_write(struct peer *p)
{
	conn_post_write(p->conn, p->out);
	return 0;
}

int
peer_take_fd(struct peer *p)
{
	(void)p;
	return -EBADF;	/* no descriptors travel on a pipe: peer_take_file */
}

int
peer_pull_handle(struct peer *p, uint64_t value, hm_fd *f)
{
	struct pipe_conn *c = p->conn;
	HANDLE h;

	if (value == 0 || (uintptr_t)value != value)
		return -EBADF;
	/* only from a process shown to be the client (conn_check_process) */
	if (c->process == NULL || !c->process_checked)
		return -EACCES;
	if (!DuplicateHandle(c->process, (HANDLE)(uintptr_t)value, GetCurrentProcess(), &h, 0,
			     FALSE, DUPLICATE_SAME_ACCESS))
		return GetLastError() == ERROR_ACCESS_DENIED ? -EACCES : -EBADF;
	*f = h;
	return 0;
}

int
peer_take_file(struct peer *p, uint64_t value, hm_fd *f)
{
	HANDLE h;
	int rc = peer_pull_handle(p, value, &h);

	if (rc < 0)
		return rc;
	/* a file on a disk, not a pipe, console or socket (as peer_unix.c
	 * refuses sockets) */
	if (GetFileType(h) != FILE_TYPE_DISK) {
		CloseHandle(h);
		return -ENODEV;
	}
	*f = h;
	return 0;
}

int
peer_send_fd(struct peer *p, uint16_t type, uint32_t id, const ProtobufCMessage *msg, hm_fd fd)
{
	/* Handles are pulled by the daemon, never pushed to a client
	 * (docs/windows.md, section 6): hotmapd on Windows offers no reply
	 * that carries one. */
	(void)p;
	(void)type;
	(void)id;
	(void)msg;
	(void)fd;
	return -EOPNOTSUPP;
}

void
peer_refuse(hm_conn c, int error, const char *why)
{
	Hotmap__Error e = HOTMAP__ERROR__INIT;
	char text[200];
	int n;

	snprintf(text, sizeof text, "%s", why);
	e.error = error;
	e.message = text;
	n = frame_encode(HM_MSG_ERROR, 0, 0, &e.base, 0, c->wbuf, sizeof c->wbuf);
	if (n > 0) {
		op_begin(&c->wr);
		if (!WriteFile(c->h, c->wbuf, (DWORD)n, NULL, &c->wr.ov)) {
			DWORD err = GetLastError();

			if (err != ERROR_IO_PENDING)
				op_done_now(&c->wr, err);
		}
	}
	/* closed once the reply is written (or failed) */
	conn_give_up(c, true);
}
