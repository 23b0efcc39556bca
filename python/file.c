/* SPDX-License-Identifier: MIT */
/*
 * file.c - hotmap.File, a hm_file: its reads (pread, readinto, view,
 * warm), stat() and its hotmap.StatResult, read_stats() and its
 * hotmap.ReadStats, close, pickling.
 *
 * Client.open makes them; what keeps one open while a call uses it is
 * lifetime.c's.  Reads by offset, no position.
 */
#include "hotmap_priv.h"

#include <structmember.h>

#include <sys/mman.h>
#include <unistd.h>

/* reads longer than this are first bounded by the file's size, so that
 * pread(1 << 40) of a small file does not try to allocate a terabyte */
#define CLAMP_ABOVE	(16u << 20)
/* Linux 5.14; older kernels say EINVAL, which is ignored */
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

PyTypeObject hmpy_StatType;		/* hotmap.StatResult */

static PyStructSequence_Field stat_fields[] = {
	{ "size", "the file's size now" },
	{ "backend", "BACKEND_MMAP or BACKEND_PREAD" },
	{ "reason", "REASON_*: why that backend" },
	{ "reason_text", "e.g. 'mmap-failed: Cannot allocate memory'" },
	{ "dev", "st_dev of the file read" },
	{ "ino", "st_ino of the file read" },
	{ "mtime_ns", "modification time, ns since the epoch" },
	{ "mode", "st_mode" },
	{ "handles", "handles open on the file, all clients" },
	{ "mapped_length", "bytes of the daemon's mapping, 0 if none" },
	{ "direct", "DIRECT_NO, DIRECT_GRANTED or DIRECT_YES" },
	{ "direct_text", "why not direct, when the daemon said no" },
	{ NULL }
};

static PyStructSequence_Desc stat_desc = {
	"hotmap.StatResult", "File.stat()'s result", stat_fields, 12
};

PyTypeObject hmpy_ReadStatsType;	/* hotmap.ReadStats */

static PyStructSequence_Field read_stats_fields[] = {
	{ "daemon_reads", "reads through the daemon" },
	{ "pread_reads", "pread on this process's own descriptor" },
	{ "copy_reads", "copied out of touched pages of the mapping" },
	{ "touch_reads", "copied, touching pages for the first time" },
	{ "view_reads", "views pointing into the mapping" },
	{ "probes", "reads that went the other way, to keep both estimates" },
	{ "populates", "2 MiB blocks populated" },
	{ "populate_ns", "the time they took" },
	{ "forgets", "copy estimates forgotten" },
	{ "copy_ns", "estimate: a small copy out of touched pages (0: not measured)" },
	{ "pread_ns", "estimate: a small pread" },
	{ "touch_ns", "estimate: a page's first touch, with its copy" },
	{ "block_ns", "estimate: populating a block" },
	{ "touch_after", "preads of a page before it is touched" },
	{ "populate_after", "preads of a block before it is populated" },
	{ "direct", "DIRECT_NO, DIRECT_GRANTED or DIRECT_YES" },
	{ NULL }
};

static PyStructSequence_Desc read_stats_desc = {
	"hotmap.ReadStats", "File.read_stats()'s result", read_stats_fields, 16
};

int
hmpy_stat_ready(void)
{
	if (!hmpy_StatType.tp_name && PyStructSequence_InitType2(&hmpy_StatType, &stat_desc) < 0)
		return -1;
	if (!hmpy_ReadStatsType.tp_name &&
	    PyStructSequence_InitType2(&hmpy_ReadStatsType, &read_stats_desc) < 0)
		return -1;
	return 0;
}

/* Bounds a long read by the file's size (GIL released by the caller's
 * choice: this does it itself).  -1 with an exception set. */
int
hmpy_clamp_len(FileObject *self, hm_file *f, uint64_t off, Py_ssize_t *len)
{
	struct hm_stat st;
	struct hmpy_err e;
	int rc;

	if ((size_t)*len <= CLAMP_ABOVE)
		return 0;
	Py_BEGIN_ALLOW_THREADS
	rc = hm_stat(f, &st);
	if (rc < 0)
		hmpy_save_err(&e);
	Py_END_ALLOW_THREADS
	if (rc < 0) {
		hmpy_raise(e.err, e.msg, self->by_fd ? NULL : self->name);
		return -1;
	}
	if (off >= st.size)
		*len = 0;
	else if (st.size - off < (uint64_t)*len)
		*len = (Py_ssize_t)(st.size - off);
	return 0;
}

FileObject *
hmpy_as_file(PyObject *o)
{
	if (!PyObject_TypeCheck(o, &hmpy_FileType)) {
		PyErr_Format(PyExc_TypeError, "expected a hotmap.File, not %.100s",
			     Py_TYPE(o)->tp_name);
		return NULL;
	}
	return (FileObject *)o;
}

static PyObject *
file_pread(FileObject *self, PyObject *args)
{
	PyObject *no, *oo, *res;
	Py_ssize_t len;
	uint64_t off;
	struct hmpy_err e;
	hm_file *f;
	ssize_t n;

	if (!PyArg_ParseTuple(args, "OO:pread", &no, &oo) ||
	    hmpy_get_length(no, &len) < 0 || hmpy_get_offset(oo, &off) < 0)
		return NULL;
	if (!(f = hmpy_file_enter(self)))
		return NULL;
	if (hmpy_clamp_len(self, f, off, &len) < 0) {
		hmpy_file_leave(self);
		return NULL;
	}
	res = PyBytes_FromStringAndSize(NULL, len);
	if (!res) {
		hmpy_file_leave(self);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	n = hmpy_split_pread(f, PyBytes_AS_STRING(res), (size_t)len, off, &e);
	Py_END_ALLOW_THREADS
	hmpy_file_leave(self);
	if (n < 0) {
		Py_DECREF(res);
		return hmpy_raise(e.err, e.msg, self->by_fd ? NULL : self->name);
	}
	if (n < len && _PyBytes_Resize(&res, n) < 0)
		return NULL;
	return res;
}

static PyObject *
file_readinto(FileObject *self, PyObject *args)
{
	PyObject *bo, *oo;
	Py_buffer b;
	uint64_t off;
	struct hmpy_err e;
	hm_file *f;
	ssize_t n;

	if (!PyArg_ParseTuple(args, "OO:readinto", &bo, &oo) || hmpy_get_offset(oo, &off) < 0)
		return NULL;
	if (hmpy_get_writable(bo, &b, "readinto") < 0)
		return NULL;
	if (!(f = hmpy_file_enter(self))) {
		PyBuffer_Release(&b);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	n = hmpy_split_pread(f, b.buf, (size_t)b.len, off, &e);
	Py_END_ALLOW_THREADS
	hmpy_file_leave(self);
	PyBuffer_Release(&b);
	if (n < 0)
		return hmpy_raise(e.err, e.msg, self->by_fd ? NULL : self->name);
	return PyLong_FromSsize_t(n);
}

/*
 * A view of a file opened with O_WARM comes with its pages in this
 * process's page tables: one madvise instead of a fault per few pages as
 * it is first read.  A view into the file's mapping gains; a copy is in
 * memory already.  libhotmap populates a view of VIEW_POPULATED or more
 * itself (libhotmap(3)): only smaller ones are left to this.  Pages past
 * the end of the file fail the call (EFAULT), never raise SIGBUS; every
 * failure is ignored: it only warms.
 */
#define VIEW_POPULATED	(2u << 20)

static void
populate(const struct hm_view *v)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)v->data & ~(pg - 1);
	uintptr_t hi = ((uintptr_t)v->data + v->len + pg - 1) & ~(pg - 1);

	if (v->len > 0 && v->len < VIEW_POPULATED)
		(void)madvise((void *)lo, hi - lo, MADV_POPULATE_READ);
}

static PyObject *
file_view(FileObject *self, PyObject *args)
{
	PyObject *oo, *no;
	Py_ssize_t len;
	uint64_t off;
	struct hmpy_err e;
	ViewObject *v;
	hm_file *f;
	int rc;

	if (!PyArg_ParseTuple(args, "OO:view", &oo, &no) ||
	    hmpy_get_offset(oo, &off) < 0 || hmpy_get_length(no, &len) < 0)
		return NULL;
	if (!(f = hmpy_file_enter(self)))
		return NULL;
	if (hmpy_clamp_len(self, f, off, &len) < 0 || !(v = hmpy_view_new())) {
		hmpy_file_leave(self);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = hm_view_range(f, off, (size_t)len, &v->v);
	if (rc < 0)
		hmpy_save_err(&e);
	else if (self->flags & HM_O_WARM)
		populate(&v->v);
	Py_END_ALLOW_THREADS
	hmpy_file_leave(self);
	if (rc < 0) {
		Py_DECREF(v);
		return hmpy_raise(e.err, e.msg, self->by_fd ? NULL : self->name);
	}
	v->live = 1;
	return (PyObject *)v;
}

/* r, its first n items set, or NULL (r freed) if one could not be made:
 * an exception is set then. */
PyObject *
hmpy_seq_done(PyObject *r, int n)
{
	for (int k = 0; k < n; k++)
		if (!PyStructSequence_GET_ITEM(r, k)) {
			Py_DECREF(r);
			return NULL;
		}
	return r;
}

static PyObject *
file_stat(FileObject *self, PyObject *unused)
{
	struct hm_stat st;
	struct hmpy_err e;
	PyObject *r;
	hm_file *f;
	int rc, i = 0;

	if (!(f = hmpy_file_enter(self)))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = hm_stat(f, &st);
	if (rc < 0)
		hmpy_save_err(&e);
	Py_END_ALLOW_THREADS
	hmpy_file_leave(self);
	if (rc < 0)
		return hmpy_raise(e.err, e.msg, self->by_fd ? NULL : self->name);
	if (!(r = PyStructSequence_New(&hmpy_StatType)))
		return NULL;
#define SET(x) PyStructSequence_SET_ITEM(r, i++, (x))
	SET(PyLong_FromUnsignedLongLong(st.size));
	SET(PyLong_FromLong(st.backend));
	SET(PyLong_FromLong(st.reason));
	SET(PyUnicode_DecodeFSDefault(st.reason_text));
	SET(PyLong_FromUnsignedLongLong(st.dev));
	SET(PyLong_FromUnsignedLongLong(st.ino));
	SET(PyLong_FromLongLong(st.mtime_ns));
	SET(PyLong_FromUnsignedLong(st.mode));
	SET(PyLong_FromUnsignedLong(st.handles));
	SET(PyLong_FromUnsignedLongLong(st.mapped_length));
	SET(PyLong_FromLong(st.direct));
	SET(PyUnicode_DecodeFSDefault(st.direct_text));
#undef SET
	return hmpy_seq_done(r, i);
}

static PyObject *
file_read_stats(FileObject *self, PyObject *unused)
{
	struct hm_read_stats st = { .size = sizeof st };
	struct hmpy_err e;
	PyObject *r;
	hm_file *f;
	int rc, i = 0;

	if (!(f = hmpy_file_enter(self)))
		return NULL;
	rc = hm_read_stats(f, &st);	/* local: no round trip, no wait */
	if (rc < 0)
		hmpy_save_err(&e);
	hmpy_file_leave(self);
	if (rc < 0)
		return hmpy_raise(e.err, e.msg, self->by_fd ? NULL : self->name);
	if (!(r = PyStructSequence_New(&hmpy_ReadStatsType)))
		return NULL;
#define SET(x) PyStructSequence_SET_ITEM(r, i++, PyLong_FromUnsignedLongLong(x))
	SET(st.daemon_reads);
	SET(st.pread_reads);
	SET(st.copy_reads);
	SET(st.touch_reads);
	SET(st.view_reads);
	SET(st.probes);
	SET(st.populates);
	SET(st.populate_ns);
	SET(st.forgets);
	SET(st.copy_ns);
	SET(st.pread_ns);
	SET(st.touch_ns);
	SET(st.block_ns);
	SET(st.touch_after);
	SET(st.populate_after);
#undef SET
	PyStructSequence_SET_ITEM(r, i++, PyLong_FromLong(st.direct));
	return hmpy_seq_done(r, i);
}

static PyObject *
file_warm(FileObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "offset", "length", NULL };
	PyObject *oo = NULL, *lo = Py_None;
	uint64_t off = 0, len = UINT64_MAX;
	struct hmpy_err e;
	hm_file *f;
	ssize_t n;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO:warm", kwlist, &oo, &lo))
		return NULL;
	if (oo && hmpy_get_offset(oo, &off) < 0)
		return NULL;
	if (lo != Py_None) {
		Py_ssize_t l;

		if (hmpy_get_length(lo, &l) < 0)
			return NULL;
		len = (uint64_t)l;
	}
	if (!(f = hmpy_file_enter(self)))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	n = hm_warm(f, off, len);
	if (n < 0)
		hmpy_save_err(&e);
	Py_END_ALLOW_THREADS
	hmpy_file_leave(self);
	if (n < 0)
		return hmpy_raise(e.err, e.msg, self->by_fd ? NULL : self->name);
	return PyLong_FromSsize_t(n);
}

static PyObject *
file_close(FileObject *self, PyObject *unused)
{
	struct hmpy_err e;
	int rc = 0;

	if (self->closed)
		Py_RETURN_NONE;
	self->closed = 1;
	if (self->busy)		/* the last call in flight closes it */
		Py_RETURN_NONE;
	hmpy_file_finish(self, &e, &rc);
	if (rc < 0)
		return hmpy_raise(e.err, e.msg, self->by_fd ? NULL : self->name);
	Py_RETURN_NONE;
}

static PyObject *
file_enter_ctx(FileObject *self, PyObject *unused)
{
	if (self->closed) {
		PyErr_SetString(PyExc_ValueError, "I/O operation on closed hotmap file");
		return NULL;
	}
	Py_INCREF(self);
	return (PyObject *)self;
}

static PyObject *
file_exit_ctx(FileObject *self, PyObject *args)
{
	return file_close(self, NULL);
}

static PyObject *
file_reduce(FileObject *self, PyObject *unused)
{
	if (self->by_fd) {
		PyErr_SetString(PyExc_TypeError,
				"a hotmap.File opened from a descriptor cannot be pickled");
		return NULL;
	}
	if (self->closed) {
		PyErr_SetString(PyExc_ValueError, "cannot pickle a closed hotmap file");
		return NULL;
	}
	return Py_BuildValue("(N(Oi))", PyObject_GetAttrString((PyObject *)self->client, "open"),
			     self->name, self->flags);
}

static void
file_dealloc(FileObject *self)
{
	PyObject_GC_UnTrack(self);
	if (self->weakrefs)
		PyObject_ClearWeakRefs((PyObject *)self);
	/* busy is 0: a call in flight holds a reference */
	if (self->f && self->client && self->client->c) {
		hm_file *f = self->f;

		self->f = NULL;
		Py_BEGIN_ALLOW_THREADS
		hm_close(f);
		Py_END_ALLOW_THREADS
	}
	Py_CLEAR(self->client);
	Py_CLEAR(self->name);
	PyObject_GC_Del(self);
}

static int
file_traverse(FileObject *self, visitproc visit, void *arg)
{
	Py_VISIT(self->client);
	Py_VISIT(self->name);
	return 0;
}

static PyObject *
file_get_closed(FileObject *self, void *closure)
{
	return PyBool_FromLong(self->closed || !self->f || !self->client->c);
}

static PyObject *
file_repr(FileObject *self)
{
	return PyUnicode_FromFormat("<hotmap.File %R%s>", self->name,
				    self->closed ? " closed" : "");
}

static PyMethodDef file_methods[] = {
	{ "pread", (PyCFunction)file_pread, METH_VARARGS,
	  "pread($self, n, offset, /)\n--\n\nUp to n bytes at offset, as bytes: short only at end of file." },
	{ "readinto", (PyCFunction)file_readinto, METH_VARARGS,
	  "readinto($self, buffer, offset, /)\n--\n\nFills the writable buffer (bytearray, memoryview, numpy\n"
	  "array) from offset; returns the bytes read, short only at end of file." },
	{ "view", (PyCFunction)file_view, METH_VARARGS,
	  "view($self, offset, length, /)\n--\n\nA read-only hotmap.View of up to length bytes at offset." },
	{ "stat", (PyCFunction)file_stat, METH_NOARGS,
	  "stat($self)\n--\n\nA hotmap.StatResult: size, backend, reason, direct tier, ..." },
	{ "read_stats", (PyCFunction)file_read_stats, METH_NOARGS,
	  "read_stats($self)\n--\n\nA hotmap.ReadStats: how this process read the file so far "
	  "(through the daemon, pread, copy, touch, views), and the copy policy's estimates." },
	{ "warm", (PyCFunction)(void (*)(void))file_warm, METH_VARARGS | METH_KEYWORDS,
	  "warm($self, offset=0, length=None)\n--\n\nBrings the range (default: the whole file) into memory;\n"
	  "returns its bytes inside the file." },
	{ "close", (PyCFunction)file_close, METH_NOARGS,
	  "close($self)\n--\n\nCloses the file; views taken from it stay valid.  Idempotent." },
	{ "__enter__", (PyCFunction)file_enter_ctx, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)file_exit_ctx, METH_VARARGS, NULL },
	{ "__reduce__", (PyCFunction)file_reduce, METH_NOARGS, NULL },
	{ NULL }
};

static PyMemberDef file_members[] = {
	{ "name", T_OBJECT, offsetof(FileObject, name), READONLY, "the path, or the descriptor's object" },
	{ "flags", T_INT, offsetof(FileObject, flags), READONLY, "the HM_O_* flags it was opened with" },
	{ "client", T_OBJECT, offsetof(FileObject, client), READONLY, "its hotmap.Client" },
	{ NULL }
};

static PyGetSetDef file_getset[] = {
	{ "closed", (getter)file_get_closed, NULL, "True once closed (or its client is)", NULL },
	{ NULL }
};

PyTypeObject hmpy_FileType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "hotmap.File",
	.tp_basicsize = sizeof(FileObject),
	.tp_dealloc = (destructor)file_dealloc,
	.tp_repr = (reprfunc)file_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.tp_traverse = (traverseproc)file_traverse,
	.tp_weaklistoffset = offsetof(FileObject, weakrefs),
	.tp_methods = file_methods,
	.tp_members = file_members,
	.tp_getset = file_getset,
	.tp_doc = "A file open through hotmapd (Client.open).  Reads by offset; no position.",
};
