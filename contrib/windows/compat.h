/*
 * compat.h - the few POSIX names that otherwise portable files of the tree
 * use, for the mingw-w64 build only (contrib/windows/build force-includes
 * it with -include).
 *
 * What it must not do: grow into an emulation layer.  Each entry here is a
 * stopgap whose real fix is named in docs/windows.md; when that fix lands,
 * the entry goes.
 */
#ifndef HOTMAP_WIN_COMPAT_H
#define HOTMAP_WIN_COMPAT_H

#ifdef _WIN32
/*
 * proto/frame.c's frame_default_socket() asks geteuid() whether to use
 * /run/hotmap.  Windows has no uid 0; "not root" makes it fall through to
 * $HOTMAP_SOCKET or -ENOENT.  Real fix: the default endpoint moves behind
 * the transport seam (\\.\pipe\hotmap on Windows).
 */
static inline unsigned int
geteuid(void)
{
	return (unsigned int)-1;
}
#endif

#endif
