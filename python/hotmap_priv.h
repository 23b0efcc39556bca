/* SPDX-License-Identifier: MIT */
/*
 * hotmap_priv.h - what the files of the `hotmap` extension module share,
 * and nothing else includes.  They call one another in one direction
 * only:
 *
 *   hotmapmodule.c  PyInit_hotmap, the module's functions and constants
 *   client.c        hotmap.Client: open, ping, close; its method table
 *   batch.c         the Client's batch calls (read_batch, read_batch_into,
 *                   view_batch)
 *   admin.c         the Client's administrative listings: files()
 *                   (hotmap.FileInfo) and clients() (hotmap.ClientInfo),
 *                   with how their reads were served
 *   file.c          hotmap.File: reads, views, stat (hotmap.StatResult),
 *                   close
 *   lifetime.c      a Client's and a File's calls in flight; the close
 *                   that waits for the last one
 *   view.c          hotmap.View: a hm_view, through the buffer protocol
 *   split.c         hm_pread of a long range, in slices read by several
 *                   threads at once
 *   errors.c        hotmap.Error and its subclasses; raising one from an
 *                   errno and the daemon's message
 *   args.c          offsets, lengths and writable buffers from Python objects
 *
 * Each calls only files below it in this list, never one above; the
 * declarations below are in the opposite order, each file's after those
 * of the files it calls.
 *
 * What they must not do: call a file above them (a File's last call
 * closes its client through lifetime.c, not client.c; the Client's batch
 * methods are batch.c's, which does not know client.c), or take a second
 * job (a new type gets a file of its own).  What one file alone uses stays
 * static in it.  What this declares is hmpy_* and hidden
 * (-fvisibility=hidden): only PyInit_hotmap leaves the module.
 */
#ifndef HOTMAP_PY_PRIV_H
#define HOTMAP_PY_PRIV_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <sys/types.h>

#include "hotmap.h"

/* --- errors.c ------------------------------------------------------------ */

/* A failed call's errno and the daemon's message (hm_last_error), copied
 * in the thread that failed, before the next call can change them. */
struct hmpy_err {
	int err;
	char msg[256];
};

/* Fills e from errno and hm_last_error() (with the GIL released or not). */
void hmpy_save_err(struct hmpy_err *e);
/* Raises hotmap.Error, or its subclass for err: msg is the daemon's
 * message, or "" (or NULL) for strerror(err); filename is the path the
 * error is about, or NULL.  Returns NULL. */
PyObject *hmpy_raise(int err, const char *msg, PyObject *filename);
/* Makes hotmap.Error and its subclasses (hotmap.FileNotFoundError, ...)
 * and adds them to the module m.  -1 with an exception set. */
int hmpy_errors_add(PyObject *m);

/* --- args.c -------------------------------------------------------------- */

/* An offset: an int from 0 to INT64_MAX.  -1 with an exception set. */
int hmpy_get_offset(PyObject *o, uint64_t *out);
/* A length: an int from 0 to PY_SSIZE_T_MAX.  -1 with an exception set. */
int hmpy_get_length(PyObject *o, Py_ssize_t *out);
/* A writable contiguous buffer of o (to release with PyBuffer_Release);
 * fn names the method in the TypeError.  -1 with an exception set. */
int hmpy_get_writable(PyObject *o, Py_buffer *b, const char *fn);

/* --- split.c ------------------------------------------------------------- */

/* hm_pread(f, buf, len, off), with the GIL released: a long range in
 * slices, read by several threads at once.  Short only at end of file;
 * -1 and e on the first error. */
ssize_t hmpy_split_pread(hm_file *f, void *buf, size_t len, uint64_t off,
			 struct hmpy_err *e);

/* --- view.c -------------------------------------------------------------- */

/* A hotmap.View */
typedef struct {
	PyObject_HEAD
	struct hm_view v;
	int live;		/* v holds bytes */
	Py_ssize_t exports;	/* buffers exported and not yet released */
	PyObject *weakrefs;
} ViewObject;

extern PyTypeObject hmpy_ViewType;

/* A new View with no bytes yet: the caller fills in v, then sets live.
 * NULL with an exception set. */
ViewObject *hmpy_view_new(void);

/* --- lifetime.c ---------------------------------------------------------- */

/* A hotmap.Client (client.c) */
typedef struct {
	PyObject_HEAD
	hm_client *c;		/* NULL once disconnected */
	int closed;		/* close() was called */
	unsigned busy;		/* calls in flight with the GIL released */
	PyObject *socket;	/* str or None: for pickling */
	PyObject *options;	/* dict: for pickling */
	PyObject *weakrefs;
} ClientObject;

/* A hotmap.File (file.c) */
typedef struct {
	PyObject_HEAD
	ClientObject *client;
	hm_file *f;		/* NULL once closed */
	int closed;
	unsigned busy;
	int flags;
	PyObject *name;		/* the path, or the fd's object */
	int by_fd;
	PyObject *weakrefs;
} FileObject;

/* self, or NULL and ValueError if it is closed. */
ClientObject *hmpy_client_check(ClientObject *self);
/* Disconnects for real (under the GIL, no call in flight). */
void hmpy_client_finish(ClientObject *self);
/* Closes self->f for real, unless its client's disconnect freed it:
 * *rc is hm_close's result, e its error. */
void hmpy_file_finish(FileObject *self, struct hmpy_err *e, int *rc);
/* Takes the file for a call (a call in flight on it and its client):
 * its hm_file, or NULL and ValueError if either is closed. */
hm_file *hmpy_file_enter(FileObject *self);
/* Ends the call hmpy_file_enter began: the last call in flight on a
 * closed file or client closes it for real. */
void hmpy_file_leave(FileObject *self);

/* --- file.c -------------------------------------------------------------- */

extern PyTypeObject hmpy_FileType;	/* hotmap.File: FileObject */
extern PyTypeObject hmpy_StatType;	/* hotmap.StatResult (File.stat) */
extern PyTypeObject hmpy_ReadStatsType;	/* hotmap.ReadStats (File.read_stats) */

/* Makes hotmap.StatResult and hotmap.ReadStats unless made.  -1 with an
 * exception set. */
int hmpy_stat_ready(void);
/* o as a File, or NULL and TypeError. */
FileObject *hmpy_as_file(PyObject *o);
/* r, a struct sequence whose first n items were set, or NULL (r freed)
 * when one could not be made: an exception is set then. */
PyObject *hmpy_seq_done(PyObject *r, int n);
/* Bounds a long read (*len at off) by the file's size, so that a read of
 * a terabyte of a small file does not allocate a terabyte; f is self's
 * hm_file, entered.  Releases the GIL itself.  -1 with an exception set. */
int hmpy_clamp_len(FileObject *self, hm_file *f, uint64_t off, Py_ssize_t *len);

/* --- admin.c ------------------------------------------------------------- */

extern PyTypeObject hmpy_FileInfoType;	/* hotmap.FileInfo (Client.files) */
extern PyTypeObject hmpy_ClientInfoType;	/* hotmap.ClientInfo (Client.clients) */

/* Makes hotmap.FileInfo and hotmap.ClientInfo unless made.  -1 with an
 * exception set. */
int hmpy_admin_ready(void);
/* Client.files() */
PyObject *hmpy_client_files(ClientObject *self, PyObject *unused);
/* Client.clients() */
PyObject *hmpy_client_clients(ClientObject *self, PyObject *unused);

/* --- batch.c ------------------------------------------------------------- */

/* Client.read_batch(requests) */
PyObject *hmpy_client_read_batch(ClientObject *self, PyObject *reqs);
/* Client.read_batch_into(requests, buffer) */
PyObject *hmpy_client_read_batch_into(ClientObject *self, PyObject *args);
/* Client.view_batch(requests) */
PyObject *hmpy_client_view_batch(ClientObject *self, PyObject *reqs);

/* --- client.c ------------------------------------------------------------ */

extern PyTypeObject hmpy_ClientType;	/* hotmap.Client: ClientObject */

#endif
