/* SPDX-License-Identifier: MIT */
/*
 * hotmapmodule.c - `import hotmap`: a CPython extension over libhotmap.
 *
 * Three types: Client (a hm_client), File (a hm_file) and View (a
 * hm_view, exported through the buffer protocol).  Every call that can
 * wait releases the GIL.  An object a call is using while the GIL is
 * released cannot be freed under it: each File and Client counts the calls
 * in flight (under the GIL), and close() of a busy one only marks it
 * closed; the last call to finish closes it for real.  A View's bytes are
 * given back when it is released or freed, never while a buffer exported
 * from it is alive (Python keeps the View alive through the exporter).
 * Errors are raised by errors.c; the files and what they share:
 * hotmap_priv.h.
 */
#include "hotmap_priv.h"

#include <structmember.h>

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static PyTypeObject ClientType;

/* ------------------------------------------------------------------ */
/* Client */

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

static PyTypeObject ClientType = {
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

/* ------------------------------------------------------------------ */
/* module functions */

static int
opt_int64(PyObject *opts, const char *key, int64_t *out)
{
	PyObject *v = PyDict_GetItemString(opts, key);
	long long x;

	if (!v || v == Py_None)
		return 0;
	if (PyBool_Check(v)) {
		*out = v == Py_True;
		return 0;
	}
	x = PyLong_AsLongLong(v);
	if (x == -1 && PyErr_Occurred())
		return -1;
	if (x < 0) {
		PyErr_Format(PyExc_ValueError, "option %s must not be negative", key);
		return -1;
	}
	*out = x;
	return 0;
}

static const char *const option_names[] = {
	"shm_size", "shm_threshold", "poll", "poll_us", "reconnect_ms", "direct",
	"direct_after", NULL
};

static PyObject *
hotmap_connect(PyObject *mod, PyObject *args, PyObject *kw)
{
	PyObject *sock = Py_None, *sockb = NULL, *opts;
	struct hm_options o = HM_OPTIONS_INIT;
	int64_t poll = HM_DEFAULT, direct = HM_DEFAULT;
	struct hmpy_err e;
	ClientObject *co;
	hm_client *c;
	Py_ssize_t pos = 0;
	PyObject *k, *v;

	if (!PyArg_ParseTuple(args, "|O:connect", &sock))
		return NULL;
	opts = kw ? PyDict_Copy(kw) : PyDict_New();
	if (!opts)
		return NULL;
	if (PyDict_GetItemString(opts, "socket")) {
		if (sock != Py_None) {
			PyErr_SetString(PyExc_TypeError, "connect() got socket twice");
			goto fail;
		}
		sock = PyDict_GetItemString(opts, "socket");
		PyDict_DelItemString(opts, "socket");
	}
	while (PyDict_Next(opts, &pos, &k, &v)) {
		int ok = 0;

		for (int i = 0; option_names[i]; i++)
			if (PyUnicode_Check(k) && PyUnicode_CompareWithASCIIString(k, option_names[i]) == 0)
				ok = 1;
		if (!ok) {
			PyErr_Format(PyExc_TypeError, "connect() got an unknown option %R", k);
			goto fail;
		}
	}
	if (opt_int64(opts, "shm_size", &o.shm_size) < 0 ||
	    opt_int64(opts, "shm_threshold", &o.shm_threshold) < 0 ||
	    opt_int64(opts, "poll", &poll) < 0 ||
	    opt_int64(opts, "poll_us", &o.poll_us) < 0 ||
	    opt_int64(opts, "reconnect_ms", &o.reconnect_ms) < 0 ||
	    opt_int64(opts, "direct", &direct) < 0 ||
	    opt_int64(opts, "direct_after", &o.direct_after) < 0)
		goto fail;
	o.poll = poll == HM_DEFAULT ? HM_DEFAULT : poll != 0;
	o.direct = direct == HM_DEFAULT ? HM_DEFAULT : direct != 0;
	if (sock != Py_None) {
		if (!PyUnicode_FSConverter(sock, &sockb))
			goto fail;
		if (!(sock = PyOS_FSPath(sock)))
			goto fail;
	} else
		Py_INCREF(sock);
	Py_BEGIN_ALLOW_THREADS
	c = hm_connect_opts(sockb ? PyBytes_AS_STRING(sockb) : NULL, &o);
	if (!c)
		hmpy_save_err(&e);
	Py_END_ALLOW_THREADS
	if (!c) {
		hmpy_raise(e.err, e.msg, sock == Py_None ? NULL : sock);
		Py_DECREF(sock);
		goto fail;
	}
	if (!(co = PyObject_GC_New(ClientObject, &ClientType))) {
		hm_disconnect(c);
		Py_DECREF(sock);
		goto fail;
	}
	co->c = c;
	co->closed = 0;
	co->busy = 0;
	co->socket = sock;
	co->options = opts;
	co->weakrefs = NULL;
	PyObject_GC_Track(co);
	Py_XDECREF(sockb);
	return (PyObject *)co;
fail:
	Py_XDECREF(sockb);
	Py_DECREF(opts);
	return NULL;
}

/* connect(socket, **options), for unpickling */
static PyObject *
hotmap_reconnect(PyObject *mod, PyObject *args)
{
	PyObject *sock, *opts, *a, *r;

	if (!PyArg_ParseTuple(args, "OO!:_reconnect", &sock, &PyDict_Type, &opts))
		return NULL;
	if (!(a = PyTuple_Pack(1, sock)))
		return NULL;
	r = hotmap_connect(mod, a, opts);
	Py_DECREF(a);
	return r;
}

/* _loop_pread(file, n, offset, iterations) -> seconds: hm_pread in a C
 * loop, the library's own cost per call (bench/pybench.py compares it
 * with File.pread's). */
static PyObject *
hotmap_loop_pread(PyObject *mod, PyObject *args)
{
	PyObject *fobj;
	Py_ssize_t n, iters;
	unsigned long long off;
	struct timespec t0, t1;
	FileObject *fo;
	hm_file *f;
	char *buf;
	ssize_t r = 0;

	if (!PyArg_ParseTuple(args, "OnKn:_loop_pread", &fobj, &n, &off, &iters))
		return NULL;
	if (!(fo = hmpy_as_file(fobj)) || n < 0 || iters < 0) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_ValueError, "negative argument");
		return NULL;
	}
	if (!(buf = PyMem_Malloc(n ? (size_t)n : 1)))
		return PyErr_NoMemory();
	if (!(f = hmpy_file_enter(fo))) {
		PyMem_Free(buf);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (Py_ssize_t i = 0; i < iters && r >= 0; i++)
		r = hm_pread(f, buf, (size_t)n, off);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	Py_END_ALLOW_THREADS
	hmpy_file_leave(fo);
	PyMem_Free(buf);
	if (r < 0)
		return hmpy_raise(errno, hm_last_error(), NULL);
	return PyFloat_FromDouble((double)(t1.tv_sec - t0.tv_sec) +
				  (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
}

static PyObject *
hotmap_version(PyObject *mod, PyObject *unused)
{
	return PyUnicode_FromString(hm_version());
}

static PyMethodDef module_methods[] = {
	{ "connect", (PyCFunction)(void (*)(void))hotmap_connect, METH_VARARGS | METH_KEYWORDS,
	  "connect($module, socket=None, **options)\n--\n\n"
	  "Connects to hotmapd.  socket None: $HOTMAP_SOCKET, else the default\n"
	  "path (libhotmap(3)).  Options (None: the environment's, else the\n"
	  "library's default): shm_size, shm_threshold, poll, poll_us,\n"
	  "reconnect_ms, direct, direct_after.  Returns a hotmap.Client." },
	{ "_reconnect", hotmap_reconnect, METH_VARARGS, NULL },
	{ "_loop_pread", hotmap_loop_pread, METH_VARARGS, NULL },
	{ "library_version", hotmap_version, METH_NOARGS,
	  "library_version($module)\n--\n\nlibhotmap's version, e.g. '0.1.0'." },
	{ NULL }
};

static struct PyModuleDef hotmap_module = {
	PyModuleDef_HEAD_INIT,
	.m_name = "hotmap",
	.m_doc = "Read files through hotmapd (libhotmap): pread, readinto, zero-copy views.\n\n"
	"    with hotmap.connect() as c, c.open('/data/x') as f:\n"
	"        buf = bytearray(4096); f.readinto(buf, 0)\n\n"
	"See docs/python.md and libhotmap(3).",
	.m_size = -1,
	.m_methods = module_methods,
};

PyMODINIT_FUNC PyInit_hotmap(void);

PyMODINIT_FUNC
PyInit_hotmap(void)
{
	PyObject *m = PyModule_Create(&hotmap_module);

	if (!m)
		return NULL;
	if (PyType_Ready(&ClientType) < 0 || PyType_Ready(&hmpy_FileType) < 0 ||
	    PyType_Ready(&hmpy_ViewType) < 0)
		goto fail;
	if (hmpy_stat_ready() < 0)
		goto fail;
	if (hmpy_errors_add(m) < 0)
		goto fail;
	if (PyModule_AddObjectRef(m, "Client", (PyObject *)&ClientType) < 0 ||
	    PyModule_AddObjectRef(m, "File", (PyObject *)&hmpy_FileType) < 0 ||
	    PyModule_AddObjectRef(m, "View", (PyObject *)&hmpy_ViewType) < 0 ||
	    PyModule_AddObjectRef(m, "StatResult", (PyObject *)&hmpy_StatType) < 0 ||
	    PyModule_AddIntConstant(m, "O_MMAP", HM_O_MMAP) < 0 ||
	    PyModule_AddIntConstant(m, "O_PREAD", HM_O_PREAD) < 0 ||
	    PyModule_AddIntConstant(m, "O_PATH", HM_O_PATH) < 0 ||
	    PyModule_AddIntConstant(m, "O_WARM", HM_O_WARM) < 0 ||
	    PyModule_AddIntConstant(m, "O_DIRECT", HM_O_DIRECT) < 0 ||
	    PyModule_AddIntConstant(m, "BACKEND_MMAP", HM_BACKEND_MMAP) < 0 ||
	    PyModule_AddIntConstant(m, "BACKEND_PREAD", HM_BACKEND_PREAD) < 0 ||
	    PyModule_AddIntConstant(m, "DIRECT_NO", HM_DIRECT_NO) < 0 ||
	    PyModule_AddIntConstant(m, "DIRECT_GRANTED", HM_DIRECT_GRANTED) < 0 ||
	    PyModule_AddIntConstant(m, "DIRECT_YES", HM_DIRECT_YES) < 0 ||
	    PyModule_AddStringConstant(m, "__version__", hm_version()) < 0)
		goto fail;
	return m;
fail:
	Py_DECREF(m);
	return NULL;
}
