/* SPDX-License-Identifier: MIT */
/*
 * pipe_win32.h - the named pipe's access rights, as hotmapd gives them and
 * libhotmap asks for them (Windows only; docs/windows.md, "The pipe's
 * trust").
 *
 * What it is for: one place for both masks, so that a client never asks
 * for a right the pipe's security descriptor does not give authenticated
 * users (its connect would fail with ERROR_ACCESS_DENIED), and the
 * descriptor never gives them more than a client needs.  The asserts
 * below hold the two to each other at compile time.
 *
 * What it must not do: name a generic write right.  GENERIC_WRITE maps to
 * FILE_GENERIC_WRITE, which holds FILE_APPEND_DATA, and on a pipe
 * FILE_APPEND_DATA is FILE_CREATE_PIPE_INSTANCE: the right to make more
 * server instances of the name, whose clients then talk to whoever made
 * them instead of hotmapd.
 */
#ifndef HOTMAP_PIPE_WIN32_H
#define HOTMAP_PIPE_WIN32_H

#include <windows.h>

/*
 * What a client asks for in CreateFileW: FILE_GENERIC_READ (read the
 * replies; attributes and READ_CONTROL, which GetSecurityInfo needs;
 * SYNCHRONIZE) and FILE_WRITE_DATA (write the requests).  libhotmap never
 * calls SetNamedPipeHandleState: the pipe is byte mode and stays so.
 */
#define PIPE_CLIENT_ACCESS	(FILE_GENERIC_READ | FILE_WRITE_DATA)

/*
 * What the pipe's DACL gives authenticated users, written in hex because
 * the SDDL takes it so (PIPE_SDDL_RIGHTS): the client's access, and
 * FILE_WRITE_ATTRIBUTES, which SetNamedPipeHandleState needs
 * (NtSetInformationFile of FilePipeInformation) for a client of another
 * library that sets its handle's read or completion mode.  Neither right
 * reaches beyond the caller's own end of the pipe.
 */
#define PIPE_USER_RIGHTS	0x12018B
#define PIPE_SDDL_STR_(x)	#x
#define PIPE_SDDL_STR(x)	PIPE_SDDL_STR_(x)
/* PIPE_USER_RIGHTS as the SDDL's access field: "0x12018B" */
#define PIPE_SDDL_RIGHTS	PIPE_SDDL_STR(PIPE_USER_RIGHTS)

_Static_assert(PIPE_USER_RIGHTS == (FILE_GENERIC_READ | FILE_WRITE_DATA | FILE_WRITE_ATTRIBUTES),
	       "PIPE_USER_RIGHTS is read, write data and write attributes");
_Static_assert((PIPE_USER_RIGHTS & FILE_CREATE_PIPE_INSTANCE) == 0,
	       "users must not make instances of hotmapd's pipe");
_Static_assert((PIPE_CLIENT_ACCESS & ~PIPE_USER_RIGHTS) == 0,
	       "a client asks only for what the pipe gives users");

#endif
