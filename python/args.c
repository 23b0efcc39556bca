/* SPDX-License-Identifier: MIT */
/*
 * args.c - the arguments several methods take, from Python objects: an
 * offset, a length, a writable buffer.  Each raises the exception a bad
 * one gets (OverflowError, ValueError, TypeError) and returns -1.
 */
#include "hotmap_priv.h"

int
hmpy_get_offset(PyObject *o, uint64_t *out)
{
	long long v = PyLong_AsLongLong(o);

	if (v == -1 && PyErr_Occurred()) {
		if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
			PyErr_Clear();
			PyErr_SetString(PyExc_OverflowError, "offset too large");
		}
		return -1;
	}
	if (v < 0) {
		PyErr_SetString(PyExc_ValueError, "negative offset");
		return -1;
	}
	*out = (uint64_t)v;
	return 0;
}

int
hmpy_get_length(PyObject *o, Py_ssize_t *out)
{
	Py_ssize_t v = PyNumber_AsSsize_t(o, PyExc_OverflowError);

	if (v == -1 && PyErr_Occurred())
		return -1;
	if (v < 0) {
		PyErr_SetString(PyExc_ValueError, "negative length");
		return -1;
	}
	*out = v;
	return 0;
}

int
hmpy_get_writable(PyObject *o, Py_buffer *b, const char *fn)
{
	if (PyObject_GetBuffer(o, b, PyBUF_WRITABLE) < 0) {
		PyErr_Clear();
		PyErr_Format(PyExc_TypeError,
			     "%s() needs a writable contiguous buffer (bytearray, memoryview, "
			     "numpy array), not %.100s", fn, Py_TYPE(o)->tp_name);
		return -1;
	}
	return 0;
}
