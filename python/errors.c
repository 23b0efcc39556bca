/* SPDX-License-Identifier: MIT */
/*
 * errors.c - hotmap.Error and its subclasses, and raising one for a
 * failed libhotmap call.
 *
 * Errors are hotmap.Error (an OSError) or, where the errno has a builtin
 * OSError subclass, a class deriving from both: hotmap.FileNotFoundError
 * is a hotmap.Error and a FileNotFoundError.  Its strerror is the
 * daemon's message (hm_last_error) when there is one.  See docs/python.md.
 */
#include "hotmap_priv.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static PyObject *HmError;		/* hotmap.Error */

/* errno -> hotmap.<Builtin>Error, made at import */
static const struct {
	int err;
	const char *name;	/* the builtin's name */
} errmap[] = {
	{ ENOENT, "FileNotFoundError" },
	{ EACCES, "PermissionError" },
	{ EPERM, "PermissionError" },
	{ EEXIST, "FileExistsError" },
	{ EISDIR, "IsADirectoryError" },
	{ ENOTDIR, "NotADirectoryError" },
	{ EINTR, "InterruptedError" },
	{ EAGAIN, "BlockingIOError" },
	{ ECONNREFUSED, "ConnectionRefusedError" },
	{ ECONNRESET, "ConnectionResetError" },
	{ ECONNABORTED, "ConnectionAbortedError" },
	{ EPIPE, "BrokenPipeError" },
	{ ESHUTDOWN, "BrokenPipeError" },
	{ ETIMEDOUT, "TimeoutError" },
};
#define NERRMAP (sizeof(errmap) / sizeof(errmap[0]))
static PyObject *errclass[NERRMAP];

/* Raises the error of a failed libhotmap call: err is its errno, msg the
 * daemon's message (hm_last_error, read in the thread that failed) or "". */
PyObject *
hmpy_raise(int err, const char *msg, PyObject *filename)
{
	PyObject *cls = HmError, *exc;

	for (size_t i = 0; i < NERRMAP; i++)
		if (errmap[i].err == err) {
			cls = errclass[i];
			break;
		}
	if (!msg || !*msg)
		msg = strerror(err);
	if (filename)
		exc = PyObject_CallFunction(cls, "isO", err, msg, filename);
	else
		exc = PyObject_CallFunction(cls, "is", err, msg);
	if (exc) {
		PyErr_SetObject(cls, exc);
		Py_DECREF(exc);
	}
	return NULL;
}

void
hmpy_save_err(struct hmpy_err *e)
{
	e->err = errno;
	snprintf(e->msg, sizeof(e->msg), "%s", hm_last_error());
}

int
hmpy_errors_add(PyObject *m)
{
	PyObject *builtins = PyImport_ImportModule("builtins");

	if (!builtins)
		return -1;
	HmError = PyErr_NewExceptionWithDoc("hotmap.Error",
		"A failed libhotmap call: an OSError with errno and the daemon's message.",
		PyExc_OSError, NULL);
	if (!HmError || PyModule_AddObjectRef(m, "Error", HmError) < 0)
		goto fail;
	for (size_t i = 0; i < NERRMAP; i++) {
		PyObject *builtin, *bases, *name;

		/* a second errno of the same class reuses it (EPERM, ESHUTDOWN) */
		for (size_t j = 0; j < i; j++)
			if (strcmp(errmap[j].name, errmap[i].name) == 0)
				errclass[i] = errclass[j];
		if (errclass[i])
			continue;
		builtin = PyObject_GetAttrString(builtins, errmap[i].name);
		if (!builtin)
			goto fail;
		bases = PyTuple_Pack(2, HmError, builtin);
		Py_DECREF(builtin);
		if (!bases)
			goto fail;
		name = PyUnicode_FromFormat("hotmap.%s", errmap[i].name);
		errclass[i] = name ? PyErr_NewException(PyUnicode_AsUTF8(name), bases, NULL) : NULL;
		Py_XDECREF(name);
		Py_DECREF(bases);
		if (!errclass[i] || PyModule_AddObjectRef(m, errmap[i].name, errclass[i]) < 0)
			goto fail;
	}
	Py_DECREF(builtins);
	return 0;
fail:
	Py_DECREF(builtins);
	return -1;
}
