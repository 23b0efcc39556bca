/* SPDX-License-Identifier: MIT */
/*
 * client.c - hotmap.Client, a hm_client: open (a path or a descriptor,
 * into a hotmap.File), ping, close, pickling.  hotmap.connect makes them;
 * the batch calls of its method table are batch.c's.
 */
#include "hotmap_priv.h"

#include <structmember.h>

/*
 * O_WARM and a file read directly: the daemon warms the file, and this
 * puts it in this process's page tables too, so that reads copy from the
 * mapping without a page fault each (which several processes sampling one
 * file pay dearly, in parallel).  hm_warm: it returns once the daemon's
 * warm is done, then populates the mapping.  Populating it before (a view
 * of the whole file, as this did) mapped the pages the daemon was about
 * to read back into huge folios, which a mapped page cannot be: the file
 * stayed half in small folios, and every later mapping of it paid for
 * them.  Files not read directly are left alone (the daemon's warm at
 * the open is theirs).
 */
static void
warm_mapping(hm_file *f)
{
	struct hm_stat st;

	if (hm_stat(f, &st) < 0 || st.direct != HM_DIRECT_YES || !st.size)
		return;
	(void)hm_warm(f, 0, st.size);
}

static PyObject *
client_open(ClientObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "file", "flags", NULL };
	PyObject *target, *path = NULL;
	int flags = 0, fd = -1, by_fd = 0;
	struct hmpy_err e;
	FileObject *fo;
	hm_file *f;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|i:open", kwlist, &target, &flags))
		return NULL;
	if (!hmpy_client_check(self))
		return NULL;
	if (PyLong_Check(target) || PyObject_HasAttrString(target, "fileno")) {
		if ((fd = PyObject_AsFileDescriptor(target)) < 0)
			return NULL;
		by_fd = 1;
	} else if (!PyUnicode_FSConverter(target, &path))
		return NULL;
	if (!(fo = PyObject_GC_New(FileObject, &hmpy_FileType))) {
		Py_XDECREF(path);
		return NULL;
	}
	fo->client = self;
	Py_INCREF(self);
	fo->f = NULL;
	fo->closed = 0;
	fo->busy = 0;
	fo->flags = flags;
	fo->by_fd = by_fd;
	fo->weakrefs = NULL;
	/* the fd's object stays referenced: the library passes the fd again
	 * when it reconnects */
	fo->name = by_fd ? target : PyOS_FSPath(target);
	if (by_fd)
		Py_INCREF(target);
	PyObject_GC_Track(fo);
	if (!fo->name) {
		Py_XDECREF(path);
		Py_DECREF(fo);
		return NULL;
	}
	self->busy++;
	Py_BEGIN_ALLOW_THREADS
	if (by_fd)
		f = hm_open_fd(self->c, fd, flags);
	else
		f = hm_open(self->c, PyBytes_AS_STRING(path), flags);
	if (!f)
		hmpy_save_err(&e);
	else if (flags & HM_O_WARM)
		warm_mapping(f);
	Py_END_ALLOW_THREADS
	if (--self->busy == 0 && self->closed && self->c) {
		if (f)
			hm_close(f);	/* freed by the disconnect anyway */
		f = NULL;
		hmpy_client_finish(self);
		Py_XDECREF(path);
		Py_DECREF(fo);
		PyErr_SetString(PyExc_ValueError, "hotmap client closed during open()");
		return NULL;
	}
	Py_XDECREF(path);
	if (!f) {
		hmpy_raise(e.err, e.msg, by_fd ? NULL : fo->name);
		Py_DECREF(fo);
		return NULL;
	}
	fo->f = f;
	return (PyObject *)fo;
}

static PyObject *
client_ping(ClientObject *self, PyObject *unused)
{
	struct hm_ping p;
	struct hmpy_err e;
	int rc;

	if (!hmpy_client_check(self))
		return NULL;
	self->busy++;
	Py_BEGIN_ALLOW_THREADS
	rc = hm_ping(self->c, &p);
	if (rc < 0)
		hmpy_save_err(&e);
	Py_END_ALLOW_THREADS
	if (--self->busy == 0 && self->closed && self->c)
		hmpy_client_finish(self);
	if (rc < 0)
		return hmpy_raise(e.err, e.msg, NULL);
	return Py_BuildValue("{s:s,s:K,s:I}", "server_version", p.server_version,
			     "uptime_us", (unsigned long long)p.uptime_us, "pid", (unsigned)p.pid);
}

static PyObject *
client_close(ClientObject *self, PyObject *unused)
{
	if (self->closed)
		Py_RETURN_NONE;
	self->closed = 1;
	if (!self->busy)
		hmpy_client_finish(self);
	Py_RETURN_NONE;
}

static PyObject *
client_enter_ctx(ClientObject *self, PyObject *unused)
{
	if (!hmpy_client_check(self))
		return NULL;
	Py_INCREF(self);
	return (PyObject *)self;
}

static PyObject *
client_exit_ctx(ClientObject *self, PyObject *args)
{
	return client_close(self, NULL);
}

static PyObject *
client_get_closed(ClientObject *self, void *closure)
{
	return PyBool_FromLong(self->closed || !self->c);
}

static PyObject *
client_reduce(ClientObject *self, PyObject *unused)
{
	/* a pickled client (multiprocessing's spawn and forkserver) connects
	 * afresh, with the same socket and options */
	return Py_BuildValue("(N(OO))", PyObject_GetAttrString(PyImport_AddModule("hotmap"),
							      "_reconnect"),
			     self->socket, self->options);
}

static void
client_dealloc(ClientObject *self)
{
	PyObject_GC_UnTrack(self);
	if (self->weakrefs)
		PyObject_ClearWeakRefs((PyObject *)self);
	if (self->c)
		hmpy_client_finish(self);
	Py_CLEAR(self->socket);
	Py_CLEAR(self->options);
	PyObject_GC_Del(self);
}

static int
client_traverse(ClientObject *self, visitproc visit, void *arg)
{
	Py_VISIT(self->options);
	return 0;
}

static PyObject *
client_repr(ClientObject *self)
{
	return PyUnicode_FromFormat("<hotmap.Client socket=%R%s>", self->socket,
				    self->closed ? " closed" : "");
}

static PyMethodDef client_methods[] = {
	{ "open", (PyCFunction)(void (*)(void))client_open, METH_VARARGS | METH_KEYWORDS,
	  "open($self, file, flags=0)\n--\n\nOpens a path (str, bytes, os.PathLike) or the file of a descriptor\n"
	  "(an int, or an object with fileno(), kept open until the File is closed);\n"
	  "flags: hotmap.O_MMAP, O_PREAD, O_PATH, O_WARM, O_DIRECT.  Returns a hotmap.File." },
	{ "read_batch", (PyCFunction)hmpy_client_read_batch, METH_O,
	  "read_batch($self, requests, /)\n--\n\nReads [(file, offset, length), ...] in one round trip per 256;\n"
	  "returns a list of bytes.  Raises the first io's error." },
	{ "read_batch_into", (PyCFunction)hmpy_client_read_batch_into, METH_VARARGS,
	  "read_batch_into($self, requests, buffer, /)\n--\n\nReads [(file, offset, length[, buffer_offset]), ...] into one\n"
	  "writable buffer: each at buffer_offset, by default right after the\n"
	  "previous one's length.  Returns the list of bytes read." },
	{ "view_batch", (PyCFunction)hmpy_client_view_batch, METH_O,
	  "view_batch($self, requests, /)\n--\n\nViews of [(file, offset, length), ...] in one call: a list of\n"
	  "hotmap.View.  Raises the first io's error (and releases the others)." },
	{ "files", (PyCFunction)hmpy_client_files, METH_NOARGS,
	  "files($self)\n--\n\nThe daemon's cached files: a list of hotmap.FileInfo, each with how\n"
	  "its reads were served (daemon_reads, copy_reads, pread_reads, probes,\n"
	  "populated_blocks, populate_ns) and where it is (private_entry,\n"
	  "network, fs).  Needs an administrator (hotmap.PermissionError)." },
	{ "clients", (PyCFunction)hmpy_client_clients, METH_NOARGS,
	  "clients($self)\n--\n\nThe daemon's connected clients, this one included: a list of\n"
	  "hotmap.ClientInfo, each with how its reads were served.  Needs an\n"
	  "administrator (hotmap.PermissionError)." },
	{ "ping", (PyCFunction)client_ping, METH_NOARGS,
	  "ping($self)\n--\n\nA round trip: {'server_version', 'uptime_us', 'pid'}." },
	{ "close", (PyCFunction)client_close, METH_NOARGS,
	  "close($self)\n--\n\nDisconnects; its files are closed with it, views stay valid." },
	{ "__enter__", (PyCFunction)client_enter_ctx, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)client_exit_ctx, METH_VARARGS, NULL },
	{ "__reduce__", (PyCFunction)client_reduce, METH_NOARGS, NULL },
	{ NULL }
};

static PyMemberDef client_members[] = {
	{ "socket", T_OBJECT, offsetof(ClientObject, socket), READONLY, "the socket path given, or None" },
	{ NULL }
};

static PyGetSetDef client_getset[] = {
	{ "closed", (getter)client_get_closed, NULL, "True once closed", NULL },
	{ NULL }
};

PyTypeObject hmpy_ClientType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "hotmap.Client",
	.tp_basicsize = sizeof(ClientObject),
	.tp_dealloc = (destructor)client_dealloc,
	.tp_repr = (reprfunc)client_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.tp_traverse = (traverseproc)client_traverse,
	.tp_weaklistoffset = offsetof(ClientObject, weakrefs),
	.tp_methods = client_methods,
	.tp_members = client_members,
	.tp_getset = client_getset,
	.tp_doc = "A connection to hotmapd (hotmap.connect).  Usable from several threads;\n"
		  "a forked child may keep using it (its first call connects afresh).",
};
