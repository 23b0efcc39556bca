/* SPDX-License-Identifier: MIT */
/*
 * os.h - what libhotmap needs of the operating system besides its
 * connection (transport.h): the files a client opens itself, the
 * program's name and the machine's processor count.  One platform file
 * each: os_unix.c, os_win32.c.
 *
 * What it must not do: talk to the daemon, or know about hm_file.
 */
#ifndef HOTMAP_CLIENT_OS_H
#define HOTMAP_CLIENT_OS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "client/platform.h"

/* Opens path to read, as hm_open does (POSIX: O_NONBLOCK, so that a FIFO
 * does not wait for a writer; Windows: sharing read, write and delete, so
 * that the handle blocks no other program).  0 with *f, or -errno. */
int os_file_open(const char *path, hm_osfile *f);

void os_file_close(hm_osfile f);

/* pread(2) of f: bytes read (short, 0 at the end), or -errno; -ENOSYS
 * where the platform does not read the caller's files positionally
 * without moving their file pointer (Windows). */
ssize_t os_file_pread(hm_osfile f, void *buf, size_t len, uint64_t offset);

/* The file f names, as a (device, file number) pair to compare later: 0,
 * or -EBADF when f names nothing. */
int os_file_id(hm_osfile f, uint64_t *dev, uint64_t *ino);

/* The file hm_open_fd's fd names: 0 with *f (POSIX: fd itself; Windows:
 * its CRT handle), or -EBADF. */
int os_file_of_fd(int fd, hm_osfile *f);

/* Whether the process may keep f for a granted file without crowding its
 * descriptor limit. */
bool os_file_plenty(hm_osfile f);

/* Whether f, which the daemon sent with an open by path, is read-only, a
 * regular file, and the file (dev, ino) the reply describes. */
bool os_file_from_daemon_ok(hm_osfile f, uint64_t dev, uint64_t ino);

/* HOTMAP_FALLBACK=local's reads (fallback.c): whether this platform
 * offers them; the file's fstat(2) in *st; pread(2) of f, all of len
 * bytes but at the end of the file (bytes, or -errno); and a hint that
 * [offset, offset + len) is read soon (the kernel's readahead). */
struct os_file_stat {
	uint64_t size, dev, ino;
	int64_t mtime_ns;
	uint32_t mode;
};
bool os_local_reads(void);
int os_file_stat(hm_osfile f, struct os_file_stat *st);
int64_t os_file_pread_all(hm_osfile f, void *buf, size_t len, uint64_t offset);
void os_file_willneed(hm_osfile f, uint64_t offset, uint64_t len);

/* A copy of a network file that hotmapd sent (a memfd, netfs.c): mapped
 * read-only at *map when it is a regular file of exactly size bytes
 * sealed against writes and shrinking (F_GET_SEALS), so that reading the
 * mapping can never fault; 0, or -errno (-ENOSYS on Windows: no copies).
 * f is not closed.  os_copy_unmap undoes it. */
int os_copy_map(int f, uint64_t size, const void **map);
void os_copy_unmap(const void *map, uint64_t size);

/* path made absolute against the working directory now (malloced), or
 * NULL and errno. */
char *absolute_path(const char *path);

/* The program's short name, for HELLO (the daemon's client list). */
const char *os_program_name(void);

/* Processors this process may run on (on Windows: online), or 1 when
 * that cannot be told. */
long os_cpu_count(void);

#endif
