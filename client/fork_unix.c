/* SPDX-License-Identifier: MIT */
/*
 * fork_unix.c - the fork(2) handlers of fork.c's rules (read them there):
 * the prepare handler's snapshot of every region's used blocks, the
 * child's private copy of them, and the pid a call compares with the
 * client's.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "client/client_priv.h"

/* Private anonymous memory holding r's used blocks, or NULL. */
static uint8_t *
region_snapshot(const struct hm_region *r)
{
	uint8_t *p = mmap(NULL, r->size, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	size_t i = 0, j;

	if (p == MAP_FAILED)
		return NULL;
	while (i < r->nblocks) {
		if (!region_block_used(r, i)) {
			i++;
			continue;
		}
		for (j = i; j < r->nblocks && region_block_used(r, j); j++)
			;
		memcpy(p + i * REGION_BLOCK, r->base + i * REGION_BLOCK, (j - i) * REGION_BLOCK);
		i = j;
	}
	return p;
}

/* In the child: r becomes private memory with the bytes of the fork. */
static void
region_privatise(struct hm_region *r)
{
	uint8_t *p = r->snapshot;

	r->snapshot = NULL;
	if (!r->shared)
		return;	/* private already (a fork of a child) */
	if (p == NULL)
		p = region_snapshot(r);	/* the prepare handler ran out of memory */
	if (p == NULL)
		return;	/* the views go on seeing the memfd: nothing better left */
	if (mremap(p, r->size, r->size, MREMAP_MAYMOVE | MREMAP_FIXED, r->base) == MAP_FAILED) {
		munmap(p, r->size);
		return;
	}
	r->shared = false;
}

static void
atfork_prepare(void)
{
	struct hm_region *r;
	hm_client *c;

	pthread_mutex_lock(&clients_lock);
	for (c = clients; c != NULL; c = c->next_live) {
		pthread_mutex_lock(c->lock);
		pthread_mutex_lock(&c->files_lock);
	}
	pthread_mutex_lock(&regions_lock);
	for (r = regions; r != NULL; r = r->next) {
		pthread_mutex_lock(&r->lock);
		r->snapshot = r->shared ? region_snapshot(r) : NULL;
	}
}

static void
atfork_parent(void)
{
	struct hm_region *r;
	hm_client *c;

	for (r = regions; r != NULL; r = r->next) {
		if (r->snapshot != NULL)
			munmap(r->snapshot, r->size);	/* the child's copy stays */
		r->snapshot = NULL;
		pthread_mutex_unlock(&r->lock);
	}
	pthread_mutex_unlock(&regions_lock);
	for (c = clients; c != NULL; c = c->next_live) {
		pthread_mutex_unlock(&c->files_lock);
		pthread_mutex_unlock(c->lock);
	}
	pthread_mutex_unlock(&clients_lock);
}

/*
 * This process's pid, kept by the handlers: every call compares it with
 * its client's, and getpid(2) is a system call (1.1 us each where this
 * was measured, 3% of a round trip to the daemon).  0 until the handlers
 * are installed, or when they could not be: then each call asks getpid.
 * Beside it, whether the handlers are installed (fork_watch): one word
 * of the same line, written before either is read, so that a new
 * process's first call makes their page once, by a write, where a read
 * then a write took two page faults.
 */
static struct {
	pid_t pid;
	int atfork;	/* 0: not yet; 1: being installed; 2: done */
} fork_self;

static void
atfork_child(void)
{
	struct hm_region *r;
	hm_client *c;

	for (r = regions; r != NULL; r = r->next) {
		region_privatise(r);
		pthread_mutex_unlock(&r->lock);
	}
	pthread_mutex_unlock(&regions_lock);
	if (fork_self.pid != 0)
		fork_self.pid = getpid();
	/* the clients connect afresh at their first call (client_enter) */
	for (c = clients; c != NULL; c = c->next_live) {
		pthread_mutex_unlock(&c->files_lock);
		if (c->users > 0 || c->exclusive || c->reading)
			c->fork_busy = true;
		c->users = 0;
		c->exclusive = false;
		wire_reset(c);
		/* Held (or waited on) by the parent's threads, perhaps:
		 * initialised anew, as glibc allows in practice. */
		pthread_mutex_init(&c->send_lock, NULL);
		pthread_mutex_init(&c->ring_lock, NULL);
		pthread_cond_init(&c->idle, NULL);
		pthread_mutex_unlock(c->lock);
	}
	pthread_mutex_unlock(&clients_lock);
}

static void
atfork_register(void)
{
	/* On failure (ENOMEM) the pid check still gives a child its own
	 * connection; only its inherited views are unprotected. */
	if (pthread_atfork(atfork_prepare, atfork_parent, atfork_child) == 0)
		fork_self.pid = getpid();
}

pid_t
fork_pid(void)
{
	return fork_self.pid != 0 ? fork_self.pid : getpid();
}

/* Installs the fork handlers, once per process.  A compare-and-swap, not
 * pthread_once: its first access to the word is a write (above); a
 * thread that finds another installing them waits until it is done. */
void
fork_watch(void)
{
	int was = 0;

	if (__atomic_compare_exchange_n(&fork_self.atfork, &was, 1, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		atfork_register();
		__atomic_store_n(&fork_self.atfork, 2, __ATOMIC_RELEASE);
		return;
	}
	while (was != 2) {
		sched_yield();
		was = __atomic_load_n(&fork_self.atfork, __ATOMIC_ACQUIRE);
	}
}

