/* SPDX-License-Identifier: MIT */
/*
 * hotmapmodule.c - `import hotmap`: a CPython extension over libhotmap.
 *
 * The module: PyInit_hotmap (its types, exceptions and constants), and
 * its functions: connect (which makes a hotmap.Client), _reconnect (for
 * unpickling), _loop_pread (for bench/pybench.py), library_version.
 *
 * Three types: Client (a hm_client, client.c), File (a hm_file, file.c)
 * and View (a hm_view exported through the buffer protocol, view.c).
 * Every call that can wait releases the GIL; what keeps an object alive
 * while it does is lifetime.c's.  The files and the order they call one
 * another in: hotmap_priv.h.
 */
#include "hotmap_priv.h"

#include <errno.h>
#include <time.h>

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
	"direct_after", "fallback", "copy_policy", NULL
};

/* copy_policy: a str of the copy policy's knobs, "way=pread", or None.
 * The pointer stays valid while opts (which the Client keeps) holds
 * the str. */
static int
opt_str(PyObject *opts, const char *key, const char **out)
{
	PyObject *v = PyDict_GetItemString(opts, key);

	if (!v || v == Py_None)
		return 0;
	if (!PyUnicode_Check(v)) {
		PyErr_Format(PyExc_TypeError, "option %s must be a str, not %.100s", key,
			     Py_TYPE(v)->tp_name);
		return -1;
	}
	return (*out = PyUnicode_AsUTF8(v)) ? 0 : -1;
}

static PyObject *
hotmap_connect(PyObject *mod, PyObject *args, PyObject *kw)
{
	PyObject *sock = Py_None, *sockb = NULL, *opts;
	struct hm_options o = HM_OPTIONS_INIT;
	int64_t poll = HM_DEFAULT, direct = HM_DEFAULT, fallback = HM_DEFAULT;
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
	    opt_int64(opts, "direct_after", &o.direct_after) < 0 ||
	    opt_int64(opts, "fallback", &fallback) < 0 ||
	    opt_str(opts, "copy_policy", &o.copy_policy) < 0)
		goto fail;
	o.poll = poll == HM_DEFAULT ? HM_DEFAULT : poll != 0;
	o.direct = direct == HM_DEFAULT ? HM_DEFAULT : direct != 0;
	/* True: HM_FALLBACK_LOCAL, read the files here when no daemon answers */
	o.fallback = fallback == HM_DEFAULT ? HM_DEFAULT :
		     fallback != 0 ? HM_FALLBACK_LOCAL : HM_FALLBACK_NONE;
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
	if (!(co = PyObject_GC_New(ClientObject, &hmpy_ClientType))) {
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
	  "reconnect_ms, direct, direct_after, fallback (True: when no daemon\n"
	  "answers, read the files in this process until one does), copy_policy\n"
	  "(a str of HOTMAP_COPY_POLICY's knobs, e.g. 'way=pread').  Returns a\n"
	  "hotmap.Client." },
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
	if (PyType_Ready(&hmpy_ClientType) < 0 || PyType_Ready(&hmpy_FileType) < 0 ||
	    PyType_Ready(&hmpy_ViewType) < 0 || hmpy_stat_ready() < 0 ||
	    hmpy_admin_ready() < 0 || hmpy_errors_add(m) < 0)
		goto fail;
	if (PyModule_AddObjectRef(m, "Client", (PyObject *)&hmpy_ClientType) < 0 ||
	    PyModule_AddObjectRef(m, "File", (PyObject *)&hmpy_FileType) < 0 ||
	    PyModule_AddObjectRef(m, "View", (PyObject *)&hmpy_ViewType) < 0 ||
	    PyModule_AddObjectRef(m, "StatResult", (PyObject *)&hmpy_StatType) < 0 ||
	    PyModule_AddObjectRef(m, "ReadStats", (PyObject *)&hmpy_ReadStatsType) < 0 ||
	    PyModule_AddObjectRef(m, "FileInfo", (PyObject *)&hmpy_FileInfoType) < 0 ||
	    PyModule_AddObjectRef(m, "ClientInfo", (PyObject *)&hmpy_ClientInfoType) < 0 ||
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
