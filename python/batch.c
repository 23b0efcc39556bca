/* SPDX-License-Identifier: MIT */
/*
 * batch.c - the Client's batch calls: read_batch, read_batch_into and
 * view_batch, many ranges of the client's files in one call of
 * hm_read_batch or hm_view_batch.
 *
 * Every file of a batch is held and entered (lifetime.c) before the GIL
 * is released, and the first failed range's error is raised.
 */
#include "hotmap_priv.h"

#include <string.h>

/* hm_read_batch / hm_view_batch on the stack up to this many */
#define BATCH_STACK	64

/* One (file, offset, length[, dest_offset]) of a batch; *fo is a new
 * reference on success. */
static int
batch_item(PyObject *item, FileObject **fo, uint64_t *off, Py_ssize_t *len, Py_ssize_t *dst)
{
	PyObject *t = PySequence_Fast(item, "a batch item must be (file, offset, length)");
	Py_ssize_t n;
	int rc = -1;

	if (!t)
		return -1;
	n = PySequence_Fast_GET_SIZE(t);
	if (n != 3 && !(dst && n == 4)) {
		PyErr_SetString(PyExc_TypeError, dst ?
				"a batch item must be (file, offset, length[, buffer_offset])" :
				"a batch item must be (file, offset, length)");
		goto out;
	}
	if (!(*fo = hmpy_as_file(PySequence_Fast_GET_ITEM(t, 0))) ||
	    hmpy_get_offset(PySequence_Fast_GET_ITEM(t, 1), off) < 0 ||
	    hmpy_get_length(PySequence_Fast_GET_ITEM(t, 2), len) < 0)
		goto out;
	if (dst && n == 4) {
		uint64_t d;

		if (hmpy_get_offset(PySequence_Fast_GET_ITEM(t, 3), &d) < 0)
			goto out;
		if (d > PY_SSIZE_T_MAX) {
			PyErr_SetString(PyExc_ValueError, "buffer offset out of range");
			goto out;
		}
		*dst = (Py_ssize_t)d;
	}
	Py_INCREF(*fo);		/* the caller's: t may go with the list's item */
	rc = 0;
out:
	Py_DECREF(t);
	return rc;
}

/* Takes the files of a batch for the call: they are the client's and
 * open.  Returns how many were entered (all or -1 after leaving them). */
static int
batch_enter(ClientObject *self, FileObject **files, Py_ssize_t n)
{
	for (Py_ssize_t i = 0; i < n; i++) {
		if (files[i]->client != self) {
			PyErr_SetString(PyExc_ValueError, "a batch file belongs to another client");
		} else if (hmpy_file_enter(files[i]))
			continue;
		while (i-- > 0)
			hmpy_file_leave(files[i]);
		return -1;
	}
	return 0;
}

static void
batch_leave(FileObject **files, Py_ssize_t n)
{
	for (Py_ssize_t i = 0; i < n; i++)
		hmpy_file_leave(files[i]);
}

/* The first failed io's error, raised. */
static PyObject *
raise_io(FileObject *fo, int err)
{
	return hmpy_raise(err, "", fo->by_fd ? NULL : fo->name);
}

/* read_batch(requests) -> [bytes] and read_batch_into(requests, buffer) ->
 * [int] in one. */
static PyObject *
do_read_batch(ClientObject *self, PyObject *reqs, PyObject *bufobj)
{
	struct hm_io stack_io[BATCH_STACK], *io = stack_io;
	FileObject *stack_f[BATCH_STACK], **files = stack_f;
	PyObject *seq, *out = NULL, **bytes = NULL;
	Py_buffer b = { 0 };
	Py_ssize_t n, i, pos = 0, nheld = 0;
	struct hmpy_err e;
	int rc, entered = 0;

	if (!hmpy_client_check(self))
		return NULL;
	if (!(seq = PySequence_Fast(reqs, "requests must be a sequence of (file, offset, length)")))
		return NULL;
	if (bufobj && hmpy_get_writable(bufobj, &b, "read_batch_into") < 0) {
		Py_DECREF(seq);
		return NULL;
	}
	n = PySequence_Fast_GET_SIZE(seq);
	if (n > BATCH_STACK) {
		io = PyMem_Calloc((size_t)n, sizeof(*io));
		files = PyMem_Calloc((size_t)n, sizeof(*files));
		if (!io || !files) {
			PyErr_NoMemory();
			goto fail;
		}
	}
	if (!bufobj && !(bytes = PyMem_Calloc((size_t)n ? (size_t)n : 1, sizeof(*bytes)))) {
		PyErr_NoMemory();
		goto fail;
	}
	/* the files are held (the list may change while the GIL is
	 * released) and entered before anything releases it */
	for (i = 0; i < n; i++) {
		Py_ssize_t len, dst = pos;

		if (batch_item(PySequence_Fast_GET_ITEM(seq, i), &files[i], &io[i].offset, &len,
			       bufobj ? &dst : NULL) < 0)
			goto fail;
		nheld = i + 1;
		io[i].result = 0;
		io[i].len = (size_t)len;
		if (bufobj) {
			if (dst > b.len || len > b.len - dst) {
				PyErr_Format(PyExc_ValueError,
					     "batch item %zd ends past the buffer's %zd bytes", i, b.len);
				goto fail;
			}
			io[i].buf = (char *)b.buf + dst;
			pos = dst + len;
		}
	}
	if (batch_enter(self, files, n) < 0)
		goto fail;
	entered = 1;
	for (i = 0; i < n; i++) {
		io[i].file = files[i]->f;
		if (!bufobj) {
			Py_ssize_t len = (Py_ssize_t)io[i].len;

			if (hmpy_clamp_len(files[i], files[i]->f, io[i].offset, &len) < 0)
				goto fail;
			if (!(bytes[i] = PyBytes_FromStringAndSize(NULL, len)))
				goto fail;
			io[i].buf = PyBytes_AS_STRING(bytes[i]);
			io[i].len = (size_t)len;
		}
	}
	Py_BEGIN_ALLOW_THREADS
	rc = n ? hm_read_batch(self->c, io, (size_t)n) : 0;
	if (rc < 0)
		hmpy_save_err(&e);
	Py_END_ALLOW_THREADS
	batch_leave(files, n);
	entered = 0;
	if (rc < 0) {
		hmpy_raise(e.err, e.msg, NULL);
		goto fail;
	}
	for (i = 0; i < n; i++)
		if (io[i].result < 0) {
			raise_io(files[i], (int)-io[i].result);
			goto fail;
		}
	if (!(out = PyList_New(n)))
		goto fail;
	for (i = 0; i < n; i++) {
		PyObject *r;

		if (bufobj)
			r = PyLong_FromSsize_t(io[i].result);
		else {
			r = bytes[i];
			bytes[i] = NULL;
			if ((Py_ssize_t)io[i].len > io[i].result && _PyBytes_Resize(&r, io[i].result) < 0)
				r = NULL;
		}
		if (!r) {
			Py_CLEAR(out);
			goto fail;
		}
		PyList_SET_ITEM(out, i, r);
	}
fail:
	if (entered)
		batch_leave(files, n);
	for (i = 0; i < nheld; i++)
		Py_DECREF(files[i]);
	if (bytes) {
		for (i = 0; i < n; i++)
			Py_XDECREF(bytes[i]);
		PyMem_Free(bytes);
	}
	if (io != stack_io)
		PyMem_Free(io);
	if (files != stack_f)
		PyMem_Free(files);
	if (bufobj)
		PyBuffer_Release(&b);
	Py_DECREF(seq);
	return out;
}

PyObject *
hmpy_client_read_batch(ClientObject *self, PyObject *reqs)
{
	return do_read_batch(self, reqs, NULL);
}

PyObject *
hmpy_client_read_batch_into(ClientObject *self, PyObject *args)
{
	PyObject *reqs, *buf;

	if (!PyArg_ParseTuple(args, "OO:read_batch_into", &reqs, &buf))
		return NULL;
	return do_read_batch(self, reqs, buf);
}

PyObject *
hmpy_client_view_batch(ClientObject *self, PyObject *reqs)
{
	struct hm_view_io *io = NULL;
	FileObject **files = NULL;
	PyObject *seq, *out = NULL;
	Py_ssize_t n, i, nheld = 0;
	struct hmpy_err e;
	int rc, entered = 0, left = 0;

	if (!hmpy_client_check(self))
		return NULL;
	if (!(seq = PySequence_Fast(reqs, "requests must be a sequence of (file, offset, length)")))
		return NULL;
	n = PySequence_Fast_GET_SIZE(seq);
	io = PyMem_Calloc(n ? (size_t)n : 1, sizeof(*io));
	files = PyMem_Calloc(n ? (size_t)n : 1, sizeof(*files));
	if (!io || !files) {
		PyErr_NoMemory();
		goto out;
	}
	for (i = 0; i < n; i++) {
		Py_ssize_t len;

		if (batch_item(PySequence_Fast_GET_ITEM(seq, i), &files[i], &io[i].offset, &len, NULL) < 0)
			goto out;
		nheld = i + 1;
		io[i].len = (size_t)len;
	}
	if (batch_enter(self, files, n) < 0)
		goto out;
	entered = 1;
	for (i = 0; i < n; i++) {
		Py_ssize_t len = (Py_ssize_t)io[i].len;

		io[i].file = files[i]->f;
		if (hmpy_clamp_len(files[i], files[i]->f, io[i].offset, &len) < 0)
			goto out;
		io[i].len = (size_t)len;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = n ? hm_view_batch(self->c, io, (size_t)n) : 0;
	if (rc < 0)
		hmpy_save_err(&e);
	Py_END_ALLOW_THREADS
	batch_leave(files, n);
	left = 1;
	if (rc < 0) {
		hmpy_raise(e.err, e.msg, NULL);
		goto out;
	}
	for (i = 0; i < n; i++)
		if (io[i].error) {
			raise_io(files[i], io[i].error);
			goto out;
		}
	if (!(out = PyList_New(n)))
		goto out;
	for (i = 0; i < n; i++) {
		ViewObject *v = hmpy_view_new();

		if (!v) {
			Py_CLEAR(out);
			goto out;
		}
		v->v = io[i].view;
		v->live = 1;
		memset(&io[i].view, 0, sizeof(io[i].view));
		PyList_SET_ITEM(out, i, (PyObject *)v);
	}
out:
	if (entered && !left)
		batch_leave(files, n);
	if (io && left)
		for (i = 0; i < n; i++)
			hm_view_release(&io[i].view);	/* takes empty ones */
	for (i = 0; i < nheld; i++)
		Py_DECREF(files[i]);
	PyMem_Free(io);
	PyMem_Free(files);
	Py_DECREF(seq);
	return out;
}
