/* SPDX-License-Identifier: MIT */
/*
 * view.c - hotmap.View: a hm_view, exported through the buffer protocol.
 *
 * A View's bytes are given back when it is released or freed, never while
 * a buffer exported from it is alive (Python keeps the View alive through
 * the exporter).  File.view and Client.view_batch make them
 * (hmpy_view_new) and fill in v and live.
 */
#include "hotmap_priv.h"

#include <errno.h>
#include <string.h>

ViewObject *
hmpy_view_new(void)
{
	ViewObject *v = PyObject_GC_New(ViewObject, &hmpy_ViewType);

	if (!v)
		return NULL;
	memset(&v->v, 0, sizeof(v->v));
	v->live = 0;
	v->exports = 0;
	v->weakrefs = NULL;
	PyObject_GC_Track(v);
	return v;
}

static void
view_dealloc(ViewObject *self)
{
	PyObject_GC_UnTrack(self);
	if (self->weakrefs)
		PyObject_ClearWeakRefs((PyObject *)self);
	if (self->live)
		hm_view_release(&self->v);
	PyObject_GC_Del(self);
}

static int
view_traverse(ViewObject *self, visitproc visit, void *arg)
{
	return 0;
}

static int
view_getbuffer(ViewObject *self, Py_buffer *view, int flags)
{
	static char empty[1];

	if (!self->live) {
		PyErr_SetString(PyExc_ValueError, "operation on released hotmap view");
		view->obj = NULL;
		return -1;
	}
	if (PyBuffer_FillInfo(view, (PyObject *)self,
			      self->v.len ? (void *)self->v.data : empty,
			      (Py_ssize_t)self->v.len, 1, flags) < 0)
		return -1;
	self->exports++;
	return 0;
}

static void
view_releasebuffer(ViewObject *self, Py_buffer *view)
{
	self->exports--;
}

static PyBufferProcs view_as_buffer = {
	(getbufferproc)view_getbuffer,
	(releasebufferproc)view_releasebuffer,
};

static PyObject *
view_release(ViewObject *self, PyObject *unused)
{
	if (self->exports > 0) {
		PyErr_Format(PyExc_BufferError,
			     "cannot release a hotmap view with %zd exported buffer(s)",
			     self->exports);
		return NULL;
	}
	if (self->live) {
		self->live = 0;
		hm_view_release(&self->v);
	}
	Py_RETURN_NONE;
}

static PyObject *
view_check(ViewObject *self, PyObject *unused)
{
	if (!self->live) {
		PyErr_SetString(PyExc_ValueError, "operation on released hotmap view");
		return NULL;
	}
	if (hm_view_check(&self->v) < 0)
		return hmpy_raise(errno, "", NULL);
	Py_RETURN_NONE;
}

static PyObject *
view_enter(ViewObject *self, PyObject *unused)
{
	Py_INCREF(self);
	return (PyObject *)self;
}

static PyObject *
view_exit(ViewObject *self, PyObject *args)
{
	return view_release(self, NULL);
}

static Py_ssize_t
view_length(ViewObject *self)
{
	return self->live ? (Py_ssize_t)self->v.len : 0;
}

static PyObject *
view_get_released(ViewObject *self, void *closure)
{
	return PyBool_FromLong(!self->live);
}

static PyObject *
view_repr(ViewObject *self)
{
	if (!self->live)
		return PyUnicode_FromString("<hotmap.View released>");
	return PyUnicode_FromFormat("<hotmap.View %zu bytes>", self->v.len);
}

static PyMethodDef view_methods[] = {
	{ "release", (PyCFunction)view_release, METH_NOARGS,
	  "release($self)\n--\n\nGives the view's bytes back.  BufferError while a buffer\n"
	  "exported from it (a memoryview, a numpy array) is alive.  Idempotent." },
	{ "check", (PyCFunction)view_check, METH_NOARGS,
	  "check($self)\n--\n\nNone while the view shows the file's bytes; raises hotmap.Error\n"
	  "with errno ESTALE (the file was written to or evicted since) or EIO\n"
	  "(the file shrank under the view: the lost part reads as zeros)." },
	{ "__enter__", (PyCFunction)view_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)view_exit, METH_VARARGS, NULL },
	{ NULL }
};

static PyGetSetDef view_getset[] = {
	{ "released", (getter)view_get_released, NULL, "True once released", NULL },
	{ NULL }
};

static PySequenceMethods view_as_sequence = {
	.sq_length = (lenfunc)view_length,
};

PyTypeObject hmpy_ViewType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "hotmap.View",
	.tp_basicsize = sizeof(ViewObject),
	.tp_dealloc = (destructor)view_dealloc,
	.tp_repr = (reprfunc)view_repr,
	.tp_as_sequence = &view_as_sequence,
	.tp_as_buffer = &view_as_buffer,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.tp_traverse = (traverseproc)view_traverse,
	.tp_weaklistoffset = offsetof(ViewObject, weakrefs),
	.tp_methods = view_methods,
	.tp_getset = view_getset,
	.tp_doc = "A read-only range of a file that stays valid until released.\n\n"
		  "Supports the buffer protocol: memoryview(v), numpy.frombuffer(v),\n"
		  "bytes(v).  The bytes live as long as any buffer exported from it,\n"
		  "even after its File and Client are closed.  Directly read files give\n"
		  "views into the file's mapping (zero copies): check() says whether\n"
		  "they still show the file.",
};
