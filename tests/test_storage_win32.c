/* SPDX-License-Identifier: MIT */
/*
 * test_storage_win32.c - the storage core on Windows (run under wine by
 * contrib/windows/test): file_cache_open on HANDLEs, the file mapping
 * backend (backend_win32.c under backend_mmap.c) and ReadFile at an
 * offset, against the read contract of storage.h: bytes as they are in
 * the file, short at end of file, a grown file read past the mapping, a
 * truncation answered short (or with an error), never a crash.
 *
 * Windows builds only (contrib/windows/build); tests/test_storage.c is the
 * Linux suite, with linker wrappers Windows has no counterpart for.
 *
 * With "truncated PATH" it is the truncation test instead: PATH is
 * written, opened and mapped through the cache, then the program waits for a line on
 * stdin while contrib/windows/test truncates PATH from outside wine
 * (Windows itself refuses to shrink a mapped file), then reads.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <windows.h>

#include <cmocka.h>

#include "daemon/storage/backend.h"
#include "daemon/storage/storage_priv.h"
#include "daemon/storage/guard.h"
#include "daemon/storage/storage.h"

static char tmpdir[MAX_PATH];
static unsigned serial;

static unsigned char pattern(uint64_t i)
{
	return (unsigned char)(i * 7 + i / 251);
}

/* Writes size bytes of the pattern to a new file at path; 0 or -1. */
static int write_pattern(const char *path, size_t size)
{
	unsigned char *buf = malloc(size > 0 ? size : 1);
	HANDLE h;
	DWORD put = 0;
	int r = 0;

	if (buf == NULL)
		return -1;
	for (size_t i = 0; i < size; i++)
		buf[i] = pattern(i);
	h = CreateFileA(path, GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			NULL, CREATE_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
	if (h == INVALID_HANDLE_VALUE)
		r = -1;
	else if (size > 0 && (!WriteFile(h, buf, (DWORD)size, &put, NULL) || put != size))
		r = -1;
	if (h != INVALID_HANDLE_VALUE)
		CloseHandle(h);
	free(buf);
	return r;
}

/* A new file of size bytes of the pattern; its path (static buffer). */
static const char *make_file(const char *name, size_t size)
{
	static char path[MAX_PATH * 2];

	snprintf(path, sizeof path, "%s\\%s-%u", tmpdir, name, serial++);
	assert_int_equal(write_pattern(path, size), 0);
	return path;
}

static HANDLE open_path(const char *path, DWORD access)
{
	HANDLE h = CreateFileA(path, access, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			       NULL, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);

	assert_true(h != INVALID_HANDLE_VALUE);
	return h;
}

static int open_handle(struct file_cache *c, const char *path, enum storage_policy policy,
		       struct storage_handle *h, char *err, size_t errlen)
{
	return file_cache_open(c, open_path(path, GENERIC_READ), policy, h, err, errlen);
}

static ssize_t rd(const struct storage_handle *h, void *dst, size_t len, uint64_t off,
		  struct storage_io *io)
{
	struct storage_io scratch = { 0 };

	return storage_read_detached(h, dst, len, off, io != NULL ? io : &scratch);
}

/* Whether buf holds the pattern's bytes of [off, off + len). */
static bool is_pattern(const unsigned char *buf, size_t len, uint64_t off)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != pattern(off + i))
			return false;
	return true;
}

static void write_at(const char *path, uint64_t off, const void *data, DWORD len)
{
	HANDLE w = open_path(path, GENERIC_WRITE);
	LARGE_INTEGER at = { .QuadPart = (LONGLONG)off };
	DWORD put = 0;

	assert_true(SetFilePointerEx(w, at, NULL, FILE_BEGIN));
	assert_true(WriteFile(w, data, len, &put, NULL) && put == len);
	CloseHandle(w);
}

static struct storage_counters counters(struct file_cache *c)
{
	struct storage_counters ctr;

	file_cache_counters(c, &ctr);
	return ctr;
}

static int setup(void **state)
{
	*state = file_cache_new();
	return *state != NULL ? 0 : -1;
}

static int teardown(void **state)
{
	file_cache_free(*state);
	return 0;
}

/* --- the tests ------------------------------------------------------------- */

/* A local file is mapped (CreateFileMapping + MapViewOfFile) and every
 * byte read through the cache is the file's. */
static void test_mapped_byte_for_byte(void **state)
{
	struct file_cache *c = *state;
	const size_t size = 5 * 65536 + 123;	/* past MMAP_PREAD_MIN */
	const char *p = make_file("mapped", size);
	struct storage_handle h;
	struct storage_stat st;
	struct storage_io io = { 0 };
	unsigned char *buf = malloc(size);
	char err[256];

	assert_int_equal(open_handle(c, p, STORAGE_POLICY_AUTO, &h, err, sizeof err), 0);
	assert_int_equal(h.backend, STORAGE_BACKEND_MMAP);
	assert_int_equal(h.reason, STORAGE_REASON_LOCAL_FILE);
	assert_int_equal(storage_stat(&h, &st), 0);
	assert_int_equal(st.size, size);
	assert_int_equal(st.mapped_length, size);
	assert_int_equal(counters(c).mappings, 1);

	/* small reads come out of the view */
	for (uint64_t off = 0; off < size; off += 4093) {
		size_t n = size - off < 4093 ? size - off : 4093;

		memset(buf, 0, n);
		assert_int_equal(rd(&h, buf, n, off, &io), (ssize_t)n);
		assert_true(is_pattern(buf, n, off));
	}
	assert_int_equal(io.bytes_mmap, size);
	assert_int_equal(io.bytes_pread, 0);
	assert_int_equal(io.faults, 0);
	/* the whole file at once goes through ReadFile (large reads) */
	memset(buf, 0, size);
	memset(&io, 0, sizeof io);
	assert_int_equal(rd(&h, buf, size, 0, &io), (ssize_t)size);
	assert_true(is_pattern(buf, size, 0));
	assert_int_equal(io.bytes_pread, size);
	file_cache_close(c, &h);
	free(buf);
}

/* At and past the end: short, then 0, as pread. */
static void test_reads_past_eof_short(void **state)
{
	struct file_cache *c = *state;
	const char *p = make_file("eof", 10000);
	struct storage_handle h, hp;
	unsigned char buf[200];
	char err[256];

	assert_int_equal(open_handle(c, p, STORAGE_POLICY_AUTO, &h, err, sizeof err), 0);
	assert_int_equal(h.backend, STORAGE_BACKEND_MMAP);
	assert_int_equal(rd(&h, buf, sizeof buf, 9990, NULL), 10);
	assert_true(is_pattern(buf, 10, 9990));
	assert_int_equal(rd(&h, buf, sizeof buf, 10000, NULL), 0);
	assert_int_equal(rd(&h, buf, sizeof buf, 1u << 20, NULL), 0);
	assert_int_equal(rd(&h, buf, 0, 0, NULL), 0);
	assert_int_equal(rd(&h, buf, 1, (uint64_t)INT64_MAX, NULL), -EINVAL);

	/* the same through ReadFile (policy pread) */
	assert_int_equal(open_handle(c, p, STORAGE_POLICY_PREAD, &hp, err, sizeof err), 0);
	assert_int_equal(hp.backend, STORAGE_BACKEND_PREAD);
	assert_int_equal(hp.reason, STORAGE_REASON_FORCED);
	assert_int_equal(rd(&hp, buf, sizeof buf, 9990, NULL), 10);
	assert_true(is_pattern(buf, 10, 9990));
	assert_int_equal(rd(&hp, buf, sizeof buf, 10000, NULL), 0);
	assert_int_equal(rd(&hp, buf, sizeof buf, (uint64_t)1 << 40, NULL), 0);
	file_cache_close(c, &hp);
	file_cache_close(c, &h);
}

/* A file that grows after it was mapped: the new bytes are read past the
 * view, and stat says the new size. */
static void test_extended_after_mapping(void **state)
{
	struct file_cache *c = *state;
	const size_t size = 8192 + 100, more = 5000;
	const char *p = make_file("grow", size);
	unsigned char *tail = malloc(more), buf[16384];
	struct storage_handle h;
	struct storage_stat st;
	struct storage_io io = { 0 };
	char err[256];

	for (size_t i = 0; i < more; i++)
		tail[i] = pattern(size + i);
	assert_int_equal(open_handle(c, p, STORAGE_POLICY_AUTO, &h, err, sizeof err), 0);
	assert_int_equal(h.backend, STORAGE_BACKEND_MMAP);
	write_at(p, size, tail, (DWORD)more);

	assert_int_equal(storage_stat(&h, &st), 0);
	assert_int_equal(st.size, size + more);
	assert_int_equal(st.mapped_length, size);
	/* straddles the end of the view */
	assert_int_equal(rd(&h, buf, 2000, size - 1000, &io), 2000);
	assert_true(is_pattern(buf, 2000, size - 1000));
	assert_int_equal(io.bytes_mmap, 1000);
	assert_int_equal(io.bytes_pread, 1000);
	/* wholly past it, and short at the new end */
	assert_int_equal(rd(&h, buf, sizeof buf, size + 10, NULL), (ssize_t)(more - 10));
	assert_true(is_pattern(buf, more - 10, size + 10));
	file_cache_close(c, &h);
	free(tail);
}

/*
 * Windows refuses to shrink a file while a view of it exists.  The cache
 * keeps no idle view there, so a truncation by someone else fails only
 * while a handle reads the file; the next open maps the new length.
 */
static void test_truncate_with_and_without_reader(void **state)
{
	struct file_cache *c = *state;
	const char *p = make_file("shrink", 20000);
	struct storage_handle h;
	unsigned char buf[64];
	LARGE_INTEGER at = { .QuadPart = 5000 };
	HANDLE w;
	char err[256];

	assert_int_equal(open_handle(c, p, STORAGE_POLICY_AUTO, &h, err, sizeof err), 0);
	assert_int_equal(h.backend, STORAGE_BACKEND_MMAP);
	w = open_path(p, GENERIC_WRITE);
	assert_true(SetFilePointerEx(w, at, NULL, FILE_BEGIN));
	assert_false(SetEndOfFile(w));
	assert_int_equal(GetLastError(), ERROR_USER_MAPPED_FILE);

	/* idle: the entry stays cached, its view goes */
	file_cache_close(c, &h);
	assert_int_equal(counters(c).entries, 1);
	assert_int_equal(counters(c).mappings, 0);
	assert_int_equal(counters(c).mapped_bytes, 0);
	assert_true(SetEndOfFile(w));
	CloseHandle(w);

	/* a changed file (size, times): a new entry, mapped at the new length */
	assert_int_equal(open_handle(c, p, STORAGE_POLICY_AUTO, &h, err, sizeof err), 0);
	assert_int_equal(h.backend, STORAGE_BACKEND_MMAP);
	assert_int_equal(counters(c).stale_replaced, 1);
	assert_int_equal(counters(c).mapped_bytes, 5000);
	assert_int_equal(rd(&h, buf, sizeof buf, 4990, NULL), 10);
	assert_true(is_pattern(buf, 10, 4990));
	file_cache_close(c, &h);
}

/* An unchanged file opened twice shares one entry (the file id), and a
 * second handle of the idle entry maps it again. */
static void test_entry_reuse(void **state)
{
	struct file_cache *c = *state;
	const char *p = make_file("reuse", 4096);
	struct storage_handle a, b, d;
	struct storage_stat sa, sb;
	char err[256];

	assert_int_equal(open_handle(c, p, STORAGE_POLICY_AUTO, &a, err, sizeof err), 0);
	assert_int_equal(open_handle(c, p, STORAGE_POLICY_AUTO, &b, err, sizeof err), 0);
	assert_ptr_equal(a.entry, b.entry);
	assert_true(a.fresh);
	assert_false(b.fresh);
	assert_int_equal(counters(c).cache_hits, 1);
	assert_int_equal(counters(c).entries, 1);
	assert_int_equal(storage_stat(&a, &sa), 0);
	assert_int_equal(storage_stat(&b, &sb), 0);
	assert_int_equal(sa.handles, 2);
	assert_true(sa.dev == sb.dev && sa.ino == sb.ino);
	file_cache_close(c, &a);
	file_cache_close(c, &b);
	assert_int_equal(counters(c).mappings, 0);
	assert_int_equal(open_handle(c, p, STORAGE_POLICY_AUTO, &d, err, sizeof err), 0);
	assert_int_equal(d.backend, STORAGE_BACKEND_MMAP);
	assert_int_equal(counters(c).cache_hits, 2);
	assert_int_equal(counters(c).mappings, 1);
	file_cache_close(c, &d);

	/* another file is another entry */
	p = make_file("reuse-other", 4096);
	assert_int_equal(open_handle(c, p, STORAGE_POLICY_AUTO, &d, err, sizeof err), 0);
	assert_ptr_not_equal(d.entry, a.entry);
	assert_int_equal(counters(c).entries, 2);
	file_cache_close(c, &d);
}

/* Empty files are read with ReadFile, never mapped; they read what is
 * written later. */
static void test_empty_file_pread(void **state)
{
	struct file_cache *c = *state;
	const char *p = make_file("empty", 0);
	struct storage_handle h, hm;
	unsigned char buf[100];
	char err[256];

	assert_int_equal(open_handle(c, p, STORAGE_POLICY_AUTO, &h, err, sizeof err), 0);
	assert_int_equal(h.backend, STORAGE_BACKEND_PREAD);
	assert_int_equal(h.reason, STORAGE_REASON_EMPTY);
	assert_int_equal(rd(&h, buf, sizeof buf, 0, NULL), 0);
	assert_int_equal(storage_read_nowait(c, &h, buf, sizeof buf, 0), -EAGAIN);

	assert_int_equal(open_handle(c, p, STORAGE_POLICY_MMAP, &hm, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "empty"));
	assert_null(hm.entry);
	assert_int_equal(counters(c).mappings, 0);

	write_at(p, 0, "hello", 5);
	assert_int_equal(rd(&h, buf, sizeof buf, 0, NULL), 5);
	assert_memory_equal(buf, "hello", 5);
	file_cache_close(c, &h);
}

/* A pipe: pread's answer is -ESPIPE, and nothing is consumed. */
static void test_pipe_not_regular(void **state)
{
	struct file_cache *c = *state;
	HANDLE r, w, dup;
	struct storage_handle h;
	char buf[16], err[256];
	DWORD put = 0, got = 0;

	assert_true(CreatePipe(&r, &w, NULL, 0));
	assert_true(WriteFile(w, "abc", 3, &put, NULL) && put == 3);
	assert_true(DuplicateHandle(GetCurrentProcess(), r, GetCurrentProcess(), &dup, 0, FALSE,
				    DUPLICATE_SAME_ACCESS));
	assert_int_equal(file_cache_open(c, dup, STORAGE_POLICY_AUTO, &h, err, sizeof err), 0);
	assert_int_equal(h.backend, STORAGE_BACKEND_PREAD);
	assert_int_equal(h.reason, STORAGE_REASON_NOT_REGULAR);
	assert_int_equal(rd(&h, buf, sizeof buf, 0, NULL), -ESPIPE);
	assert_int_equal(rd(&h, buf, 0, 0, NULL), -ESPIPE);
	file_cache_close(c, &h);
	assert_int_equal(counters(c).entries, 0);
	assert_true(ReadFile(r, buf, sizeof buf, &got, NULL));
	assert_int_equal(got, 3);
	CloseHandle(r);
	CloseHandle(w);
}

/* Handles that do not prove read access open nothing. */
static void test_refuses_unreadable_handles(void **state)
{
	struct file_cache *c = *state;
	const char *p = make_file("unreadable", 100);
	struct storage_handle h;
	char err[256];
	HANDLE dir;
	char dpath[MAX_PATH * 2];

	assert_int_equal(file_cache_open(c, open_path(p, GENERIC_WRITE), STORAGE_POLICY_AUTO, &h, err,
					 sizeof err), -EBADF);
	assert_non_null(strstr(err, "not open for reading"));
	assert_null(h.entry);
	assert_int_equal(file_cache_open(c, open_path(p, FILE_READ_ATTRIBUTES), STORAGE_POLICY_AUTO, &h,
					 err, sizeof err), -EBADF);
	assert_int_equal(file_cache_open(c, INVALID_HANDLE_VALUE, STORAGE_POLICY_AUTO, &h, err,
					 sizeof err) < 0, 1);
	assert_int_equal(counters(c).entries, 0);

	snprintf(dpath, sizeof dpath, "%s", tmpdir);
	dir = CreateFileA(dpath, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			  NULL, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, NULL);
	assert_true(dir != INVALID_HANDLE_VALUE);
	assert_int_equal(file_cache_open(c, dir, STORAGE_POLICY_AUTO, &h, err, sizeof err), -EISDIR);
}

/*
 * ReadFile on a handle opened for overlapped I/O (a client's that the
 * entry keeps when it cannot reopen the file): the read completes later,
 * and the backend waits for it, at any offset, short at the end.
 */
static void test_overlapped_handle(void **state)
{
	const char *p = make_file("overlapped", 100000);
	HANDLE h = CreateFileA(p, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			       NULL, OPEN_EXISTING, FILE_FLAG_OVERLAPPED, NULL);
	struct backend_file f = { .fd = h };
	struct storage_io io = { 0 };
	unsigned char buf[70000];

	(void)state;
	assert_true(h != INVALID_HANDLE_VALUE);
	assert_int_equal(backend_pread_ops.read(&f, buf, 5000, 1234, &io), 5000);
	assert_true(is_pattern(buf, 5000, 1234));
	assert_int_equal(backend_pread_ops.read(&f, buf, sizeof buf, 50000, &io), 50000);
	assert_true(is_pattern(buf, 50000, 50000));
	assert_int_equal(backend_pread_ops.read(&f, buf, 10, 100000, &io), 0);
	assert_int_equal(io.bytes_pread, 55000);
	/* on the loop there is no waiting read: a worker does it */
	io = (struct storage_io){ .nowait = true };
	assert_int_equal(backend_pread_ops.read(&f, buf, 10, 0, &io), -EAGAIN);
	CloseHandle(h);
}

/* A changed file makes a new entry; the old handle keeps its own. */
static void test_stale_replaced(void **state)
{
	struct file_cache *c = *state;
	const char *p = make_file("stale", 4096);
	struct storage_handle a, b;
	unsigned char buf[4];
	char err[256];

	assert_int_equal(open_handle(c, p, STORAGE_POLICY_AUTO, &a, err, sizeof err), 0);
	write_at(p, 4096, "more", 4);
	assert_int_equal(open_handle(c, p, STORAGE_POLICY_AUTO, &b, err, sizeof err), 0);
	assert_ptr_not_equal(a.entry, b.entry);
	assert_int_equal(counters(c).stale_replaced, 1);
	assert_int_equal(rd(&a, buf, 4, 4096, NULL), 4);
	assert_memory_equal(buf, "more", 4);
	file_cache_close(c, &a);
	file_cache_close(c, &b);
	assert_int_equal(counters(c).entries, 1);
}

/* Listings name the file (GetFinalPathNameByHandleW) and its size. */
struct seen {
	char path[4096];
	uint64_t size;
	unsigned n;
};

static bool list_cb(const struct storage_entry_info *info, void *arg)
{
	struct seen *s = arg;

	snprintf(s->path, sizeof s->path, "%s", info->path);
	s->size = info->size;
	s->n++;
	return true;
}

static void test_listing_names_file(void **state)
{
	struct file_cache *c = *state;
	const char *p = make_file("listed", 3000);
	const char *base = strrchr(p, '\\') + 1;
	struct storage_handle h;
	struct seen s = { .n = 0 };
	struct storage_evicted ev;
	char err[256];

	assert_int_equal(open_handle(c, p, STORAGE_POLICY_AUTO, &h, err, sizeof err), 0);
	assert_int_equal(file_cache_foreach(c, 0, list_cb, &s), 1);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.size, 3000);
	assert_non_null(strstr(s.path, base));
	assert_true(strncmp(s.path, "\\\\?\\", 4) != 0);

	/* evicted by that name, in another case (NTFS ignores it), once idle */
	assert_int_equal(file_cache_evict_path(c, s.path, &ev), 0);
	assert_int_equal(ev.busy, 1);
	assert_int_equal(ev.files, 0);
	file_cache_close(c, &h);
	for (char *q = s.path; *q != '\0'; q++)
		*q = (char)toupper((unsigned char)*q);
	assert_int_equal(file_cache_evict_path(c, s.path, &ev), 0);
	assert_int_equal(ev.files, 1);
	assert_int_equal(counters(c).entries, 0);
	assert_int_equal(file_cache_evict_path(c, s.path, &ev), -ENOENT);
	assert_int_equal(file_cache_evict_path(c, "listed", &ev), -EINVAL);
}

/*
 * The guard under the mapping backend: an entry whose view has lost its
 * pages while the file (as the read sees it) still covers them.  That is
 * the race of a truncation between the size check and the copy; here the
 * view is of a file truncated from outside (wine lets that happen: the
 * pages fault as an access violation), and the read's size comes from a
 * second, longer file.  The fault is caught, ReadFile answers in full,
 * the entry is retired.
 */
static void run_fault_race(struct file_cache *c, struct storage_handle *h, const char *longer)
{
	HANDLE own = h->entry->file.fd, lh = open_path(longer, GENERIC_READ);
	struct storage_io io = { 0 };
	unsigned char buf[4096];
	ssize_t r;

	h->entry->file.fd = lh;
	r = storage_read_detached(h, buf, sizeof buf, 8192, &io);
	h->entry->file.fd = own;
	CloseHandle(lh);
	printf("%s %d - a copy from lost pages faults and ReadFile answers in full (%d, %u faults)\n",
	       r == (ssize_t)sizeof buf && is_pattern(buf, sizeof buf, 8192) && io.faults == 1 ?
	       "ok" : "not ok", 3, (int)r, io.faults);
	storage_read_finish(c, h, &io);
	printf("%s %d - the fault is counted and the entry retired (recoveries %u, hashed %d)\n",
	       counters(c).sigbus_recoveries == 1 && !h->entry->hashed ? "ok" : "not ok", 4,
	       (unsigned)counters(c).sigbus_recoveries, (int)h->entry->hashed);
}

static int truncated_mode(const char *path)
{
	struct file_cache *c = file_cache_new();
	struct storage_handle h;
	unsigned char buf[4096];
	char err[256], line[16];
	char longer[MAX_PATH * 2];
	ssize_t r;

	snprintf(longer, sizeof longer, "%s\\longer", tmpdir);
	if (write_pattern(path, 65536) < 0 || write_pattern(longer, 65536) < 0) {
		printf("not ok 1 - write %s\n", path);
		return 1;
	}
	if (c == NULL || open_handle(c, path, STORAGE_POLICY_AUTO, &h, err, sizeof err) != 0 ||
	    h.backend != STORAGE_BACKEND_MMAP) {
		printf("not ok 1 - map %s through the cache: %s\n", path, err);
		return 1;
	}
	r = rd(&h, buf, sizeof buf, 8192, NULL);
	printf("%s 1 - read through the view before the truncation\n",
	       r == (ssize_t)sizeof buf && is_pattern(buf, sizeof buf, 8192) ? "ok" : "not ok");
	printf("# mapped\n");
	fflush(stdout);
	if (fgets(line, sizeof line, stdin) == NULL)
		return 1;
	/* after it: the size says end of file, the view is not touched */
	r = rd(&h, buf, sizeof buf, 8192, NULL);
	printf("%s 2 - after the truncation the read is short, not a crash (%d)\n",
	       r == 0 || r == -EIO ? "ok" : "not ok", (int)r);
	run_fault_race(c, &h, longer);
	file_cache_close(c, &h);
	file_cache_free(c);
	printf("1..4\n");
	return 0;
}

static int make_tmpdir(void)
{
	char base[MAX_PATH];
	DWORD n = GetTempPathA(sizeof base, base);

	if (n == 0 || n >= sizeof base)
		return -1;
	snprintf(tmpdir, sizeof tmpdir, "%stest_storage_win32.%lu", base,
		 (unsigned long)GetCurrentProcessId());
	return CreateDirectoryA(tmpdir, NULL) ? 0 : -1;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mapped_byte_for_byte, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reads_past_eof_short, setup, teardown),
		cmocka_unit_test_setup_teardown(test_extended_after_mapping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncate_with_and_without_reader, setup, teardown),
		cmocka_unit_test_setup_teardown(test_entry_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_file_pread, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipe_not_regular, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refuses_unreadable_handles, setup, teardown),
		cmocka_unit_test(test_overlapped_handle),
		cmocka_unit_test_setup_teardown(test_stale_replaced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_listing_names_file, setup, teardown),
	};

	if (make_tmpdir() < 0) {
		printf("not ok 1 - make a temporary directory\n");
		return 1;
	}
	if (argc == 3 && strcmp(argv[1], "truncated") == 0)
		return truncated_mode(argv[2]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
