/* SPDX-License-Identifier: MIT */
/*
 * lifetime.c - when a Client is disconnected and a File closed.
 *
 * Every call that can wait releases the GIL.  An object a call is using
 * while the GIL is released cannot be freed under it: each File and
 * Client counts the calls in flight (busy, under the GIL), and close() of
 * a busy one only marks it closed; the last call to finish closes it for
 * real.
 */
#include "hotmap_priv.h"

ClientObject *
hmpy_client_check(ClientObject *self)
{
	if (self->closed || !self->c) {
		PyErr_SetString(PyExc_ValueError, "operation on closed hotmap client");
		return NULL;
	}
	return self;
}

void
hmpy_client_finish(ClientObject *self)
{
	/* under the GIL, no call in flight: disconnect for real */
	hm_client *c = self->c;

	self->c = NULL;
	if (c) {
		Py_BEGIN_ALLOW_THREADS
		hm_disconnect(c);
		Py_END_ALLOW_THREADS
	}
}

void
hmpy_file_finish(FileObject *self, struct hmpy_err *e, int *rc)
{
	hm_file *f = self->f;

	self->f = NULL;
	/* hm_disconnect freed every file of the client */
	if (!f || !self->client->c)
		return;
	Py_BEGIN_ALLOW_THREADS
	*rc = hm_close(f);
	if (*rc < 0)
		hmpy_save_err(e);
	Py_END_ALLOW_THREADS
}

/* Takes f for a call: NULL and ValueError if closed. */
hm_file *
hmpy_file_enter(FileObject *self)
{
	if (self->closed || !self->f || self->client->closed || !self->client->c) {
		PyErr_SetString(PyExc_ValueError, "I/O operation on closed hotmap file");
		return NULL;
	}
	self->busy++;
	self->client->busy++;
	return self->f;
}

void
hmpy_file_leave(FileObject *self)
{
	ClientObject *c = self->client;

	if (--self->busy == 0 && self->closed && self->f) {
		struct hmpy_err e;
		int rc = 0;

		hmpy_file_finish(self, &e, &rc);
	}
	if (--c->busy == 0 && c->closed && c->c)
		hmpy_client_finish(c);
}
