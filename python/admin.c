/* SPDX-License-Identifier: MIT */
/*
 * admin.c - the Client's administrative listings: files() (the daemon's
 * cached files, hotmap.FileInfo) and clients() (its connected clients,
 * hotmap.ClientInfo), each with how its reads were served: through the
 * daemon, or by the clients from their own mappings, copied or with
 * pread on their own descriptor (hm_files_ways, hm_clients_ways).
 *
 * The library calls back with the GIL released: the rows are copied into
 * C memory there, and made into Python objects once the call is over.
 */
#include "hotmap_priv.h"

#include <errno.h>
#include <string.h>

#include "hotmap_admin.h"

PyTypeObject hmpy_FileInfoType;		/* hotmap.FileInfo */
PyTypeObject hmpy_ClientInfoType;	/* hotmap.ClientInfo */

/* The ways, the same in both, after each one's own fields. */
#define WAYS_FIELDS \
	{ "daemon_reads", "read requests the daemon took" }, \
	{ "copy_reads", "direct: copied out of the mapping" }, \
	{ "pread_reads", "direct: pread on the client's own descriptor" }, \
	{ "probes", "of those, reads that went the other way to keep the estimates" }, \
	{ "populated_blocks", "2 MiB blocks of mappings populated" }, \
	{ "populate_ns", "the time that took" }

static PyStructSequence_Field file_info_fields[] = {
	{ "path", "its name now" },
	{ "size", "its size" },
	{ "backend", "BACKEND_MMAP or BACKEND_PREAD" },
	{ "reason", "REASON_*: why that backend, at the last open" },
	{ "handles", "handles open on it now, all clients" },
	{ "stale", "replaced by a newer version; freed at its last close" },
	{ "hits", "opens that found it cached" },
	{ "bytes", "bytes the daemon read from it" },
	{ "idle_ms", "since its last open or read" },
	{ "resident_pct", "pages in memory, percent; None when unknown" },
	{ "resident_bytes", "bytes of it in memory (0 when unknown)" },
	{ "direct_handles", "of the handles, those read directly now" },
	{ "direct_reads", "reads clients served themselves (direct tier)" },
	{ "direct_bytes", "and their bytes: not in bytes" },
	{ "dev", "st_dev" },
	{ "ino", "st_ino" },
	WAYS_FIELDS,
	{ "private_entry", "read through one client's descriptor for that handle alone" },
	{ "network", "on a network file system: read with pread, never mapped" },
	{ "fs", "its file system: 'ext4', 'nfs', 'fuse.sshfs'" },
	{ NULL }
};

static PyStructSequence_Desc file_info_desc = {
	"hotmap.FileInfo", "A cached file of the daemon (Client.files())", file_info_fields, 25
};

static PyStructSequence_Field client_info_fields[] = {
	{ "pid", "its process id" },
	{ "uid", "its user id" },
	{ "name", "its program's name" },
	{ "handles", "files open now" },
	{ "direct_grants", "of them, read directly now" },
	{ "direct_reads", "reads it served itself, as it reports them" },
	{ "direct_bytes", "and their bytes" },
	{ "bytes_served", "file bytes the daemon gave it" },
	{ "polling", "polling mode (a request ring)" },
	{ "region_huge", "its shared region has huge pages" },
	{ "connected_ms", "since it connected" },
	WAYS_FIELDS,
	{ NULL }
};

static PyStructSequence_Desc client_info_desc = {
	"hotmap.ClientInfo", "A connected client of the daemon (Client.clients())",
	client_info_fields, 17
};

int
hmpy_admin_ready(void)
{
	if (!hmpy_FileInfoType.tp_name &&
	    PyStructSequence_InitType2(&hmpy_FileInfoType, &file_info_desc) < 0)
		return -1;
	if (!hmpy_ClientInfoType.tp_name &&
	    PyStructSequence_InitType2(&hmpy_ClientInfoType, &client_info_desc) < 0)
		return -1;
	return 0;
}

/* One row as the library gave it, its string copied. */
struct row {
	char *text;			/* the path or the name */
	struct hm_file_info file;	/* files() */
	struct hm_client_info client;	/* clients() */
	struct hm_read_ways ways;	/* what the library filled, the rest zero */
};

struct rows {
	struct row *v;
	size_t n, cap;
	int failed;		/* out of memory: the call fails */
};

/* With the GIL released: plain malloc, no Python. */
static struct row *
rows_add(struct rows *r, const char *text, const struct hm_read_ways *ways)
{
	struct row *x;

	if (r->failed)
		return NULL;
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 64;
		struct row *v = realloc(r->v, cap * sizeof *v);

		if (!v) {
			r->failed = 1;
			return NULL;
		}
		r->v = v;
		r->cap = cap;
	}
	x = &r->v[r->n];
	memset(x, 0, sizeof *x);
	if (!(x->text = strdup(text ? text : ""))) {
		r->failed = 1;
		return NULL;
	}
	/* a library that fills less than this binding knows: zeros past it */
	memcpy(&x->ways, ways, ways->size < sizeof x->ways ? ways->size : sizeof x->ways);
	r->n++;
	return x;
}

static void
rows_free(struct rows *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].text);
	free(r->v);
}

static void
file_cb(const struct hm_file_info *info, const struct hm_read_ways *ways, void *arg)
{
	struct row *x = rows_add(arg, info->path, ways);

	if (x) {
		x->file = *info;
		x->file.path = NULL;
	}
}

static void
client_cb(const struct hm_client_info *info, const struct hm_read_ways *ways, void *arg)
{
	struct row *x = rows_add(arg, info->name, ways);

	if (x) {
		x->client = *info;
		x->client.name = NULL;
	}
}

/* The ways into r from its i-th item on; the index after them. */
static int
set_ways(PyObject *r, int i, const struct hm_read_ways *w)
{
#define SET(x) PyStructSequence_SET_ITEM(r, i++, PyLong_FromUnsignedLongLong(x))
	SET(w->daemon_reads);
	SET(w->copy_reads);
	SET(w->pread_reads);
	SET(w->probes);
	SET(w->populated_blocks);
	SET(w->populate_ns);
#undef SET
	return i;
}

static PyObject *
bool_ref(int v)
{
	return PyBool_FromLong(v != 0);
}

static PyObject *
file_info(const struct row *x)
{
	const struct hm_file_info *f = &x->file;
	PyObject *r = PyStructSequence_New(&hmpy_FileInfoType);
	int i = 0;

	if (!r)
		return NULL;
#define SET(v) PyStructSequence_SET_ITEM(r, i++, (v))
#define U64(v) SET(PyLong_FromUnsignedLongLong(v))
	SET(PyUnicode_DecodeFSDefault(x->text));
	U64(f->size);
	SET(PyLong_FromLong(f->backend));
	SET(PyLong_FromLong(f->reason));
	U64(f->handles);
	SET(bool_ref(f->stale));
	U64(f->hits);
	U64(f->bytes);
	U64(f->idle_ms);
	if (f->resident_pct < 0) {
		Py_INCREF(Py_None);
		SET(Py_None);
	} else
		SET(PyLong_FromLong(f->resident_pct));
	U64(f->resident_bytes);
	U64(f->direct_handles);
	U64(f->direct_reads);
	U64(f->direct_bytes);
	U64(f->dev);
	U64(f->ino);
	i = set_ways(r, i, &x->ways);
	SET(bool_ref(x->ways.private_entry));
	SET(bool_ref(x->ways.network));
	SET(PyUnicode_DecodeFSDefault(x->ways.fs));
	return hmpy_seq_done(r, i);
}

static PyObject *
client_info(const struct row *x)
{
	const struct hm_client_info *c = &x->client;
	PyObject *r = PyStructSequence_New(&hmpy_ClientInfoType);
	int i = 0;

	if (!r)
		return NULL;
	U64(c->pid);
	U64(c->uid);
	SET(PyUnicode_DecodeFSDefault(x->text));
	U64(c->handles);
	U64(c->direct_grants);
	U64(c->direct_reads);
	U64(c->direct_bytes);
	U64(c->bytes_served);
	SET(bool_ref(c->polling));
	SET(bool_ref(c->region_huge));
	U64(c->connected_ms);
	i = set_ways(r, i, &x->ways);
	return hmpy_seq_done(r, i);
#undef U64
#undef SET
}

/* files() or clients(): one call of the library, then the list. */
static PyObject *
listing(ClientObject *self, int files)
{
	struct rows rows = { 0 };
	struct hmpy_err e;
	PyObject *list = NULL;
	int rc;

	if (!hmpy_client_check(self))
		return NULL;
	self->busy++;
	Py_BEGIN_ALLOW_THREADS
	rc = files ? hm_files_ways(self->c, file_cb, &rows) :
		     hm_clients_ways(self->c, client_cb, &rows);
	if (rc == 0 && rows.failed) {
		errno = ENOMEM;
		rc = -1;
	}
	if (rc < 0)
		hmpy_save_err(&e);
	Py_END_ALLOW_THREADS
	if (--self->busy == 0 && self->closed && self->c)
		hmpy_client_finish(self);
	if (rc < 0) {
		hmpy_raise(e.err, e.msg, NULL);
		goto out;
	}
	if (!(list = PyList_New((Py_ssize_t)rows.n)))
		goto out;
	for (size_t i = 0; i < rows.n; i++) {
		PyObject *o = files ? file_info(&rows.v[i]) : client_info(&rows.v[i]);

		if (!o) {
			Py_CLEAR(list);
			goto out;
		}
		PyList_SET_ITEM(list, (Py_ssize_t)i, o);
	}
out:
	rows_free(&rows);
	return list;
}

PyObject *
hmpy_client_files(ClientObject *self, PyObject *unused)
{
	return listing(self, 1);
}

PyObject *
hmpy_client_clients(ClientObject *self, PyObject *unused)
{
	return listing(self, 0);
}
