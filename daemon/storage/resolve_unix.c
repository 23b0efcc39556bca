/* SPDX-License-Identifier: MIT */
/*
 * resolve.c - see resolve.h.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef HAVE_LINUX_OPENAT2_H
#include <linux/openat2.h>
#endif

#include "daemon/storage/resolve.h"

#define RESOLVE_OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)

static char *
strip_slashes(const char *dir)
{
	size_t len = strlen(dir);
	char *s;

	while (len > 1 && dir[len - 1] == '/')
		len--;
	s = malloc(len + 1);
	if (s == NULL)
		return NULL;
	memcpy(s, dir, len);
	s[len] = '\0';
	return s;
}

/* The mount a descriptor is on (the mnt_id line of /proc/self/fdinfo, in
 * every kernel since 3.15), or -1. */
static long long
mount_id(int fd)
{
	char name[64], line[256];
	long long id = -1;
	FILE *f;

	snprintf(name, sizeof name, "/proc/self/fdinfo/%d", fd);
	f = fopen(name, "re");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "mnt_id: %lld", &id) == 1)
			break;
	fclose(f);
	return id;
}

int
resolve_roots_add(struct resolve_roots *r, const char *dir)
{
	struct resolve_root root = { .fd = -1 };
	struct resolve_root *v;
	struct stat st;
	int err;

	if (dir[0] != '/')
		return -EINVAL;
	root.given = strip_slashes(dir);
	root.real = realpath(dir, NULL);
	if (root.given == NULL || root.real == NULL) {
		err = root.given == NULL ? -ENOMEM : -errno;
		goto fail;
	}
	root.fd = open(root.real, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root.fd < 0 || fstat(root.fd, &st) < 0) {
		err = -errno;
		goto fail;
	}
	root.mnt_id = mount_id(root.fd);
	v = realloc(r->v, (r->n + 1) * sizeof *v);
	if (v == NULL) {
		err = -ENOMEM;
		goto fail;
	}
	r->v = v;
	r->v[r->n++] = root;
	return 0;
fail:
	if (root.fd >= 0)
		close(root.fd);
	free(root.given);
	free(root.real);
	return err;
}

void
resolve_roots_clear(struct resolve_roots *r)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		close(r->v[i].fd);
		free(r->v[i].given);
		free(r->v[i].real);
	}
	free(r->v);
	r->v = NULL;
	r->n = 0;
}

/* The part of path below prefix, or NULL if prefix is not a whole-component
 * prefix of path.  "/" contains every absolute path. */
static const char *
below(const char *path, const char *prefix)
{
	size_t len = strlen(prefix);

	if (strcmp(prefix, "/") == 0)
		return path + 1;
	if (strncmp(path, prefix, len) != 0)
		return NULL;
	if (path[len] == '\0')
		return path + len;
	if (path[len] != '/')
		return NULL;
	return path + len + 1;
}

static int
open_beneath_fallback(const struct resolve_root *root, const char *rel, bool cross_mounts)
{
	char link[64], real[PATH_MAX];
	long long mnt;
	ssize_t n;
	int fd;

	fd = openat(root->fd, rel, RESOLVE_OPEN_FLAGS);
	if (fd < 0)
		return -errno;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	n = readlink(link, real, sizeof real - 1);
	if (n < 0 || (size_t)n >= sizeof real - 1) {
		close(fd);
		return -EACCES;
	}
	real[n] = '\0';
	if (below(real, root->real) == NULL) {
		close(fd);
		return -EACCES;
	}
	if (!cross_mounts) {
		mnt = mount_id(fd);
		if (mnt < 0 || mnt != root->mnt_id) {
			close(fd);
			return -EACCES;
		}
	}
	return fd;
}

static int
open_beneath(const struct resolve_root *root, const char *rel, bool cross_mounts)
{
	if (*rel == '\0')
		rel = ".";
#if defined(HAVE_LINUX_OPENAT2_H) && HAVE_DECL_SYS_OPENAT2
	{
		struct open_how how = {
			.flags = RESOLVE_OPEN_FLAGS,
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
				   (cross_mounts ? 0 : RESOLVE_NO_XDEV),
		};
		long fd = syscall(SYS_openat2, root->fd, rel, &how, sizeof how);

		if (fd >= 0)
			return (int)fd;
		if (errno == EXDEV || errno == ELOOP)
			return errno == EXDEV ? -EACCES : -ELOOP;
		if (errno != ENOSYS && errno != EPERM)
			return -errno;
		/* ENOSYS: old kernel; EPERM: a seccomp filter that does not
		 * know openat2.  Fall back to the equivalent check. */
	}
#endif
	return open_beneath_fallback(root, rel, cross_mounts);
}

int
resolve_open_handle(const struct resolve_roots *r, const char *path, bool cross_mounts,
		    hm_fd *out)
{
	int fd = resolve_open(r, path, cross_mounts);

	if (fd < 0)
		return fd;
	*out = fd;
	return 0;
}

int
resolve_open(const struct resolve_roots *r, const char *path, bool cross_mounts)
{
	size_t i;

	if (path[0] != '/')
		return -EINVAL;
	for (i = 0; i < r->n; i++) {
		const char *rel = below(path, r->v[i].given);

		if (rel == NULL)
			rel = below(path, r->v[i].real);
		if (rel != NULL)
			return open_beneath(&r->v[i], rel, cross_mounts);
	}
	return -EACCES;
}
