/* SPDX-License-Identifier: MIT */
/*
 * fork.c - libhotmap across fork(2): the handlers that keep a child's
 * inherited views intact and every lock usable, and the child's first call
 * on an inherited client, which gets it a connection of its own.  The
 * handlers and the pid are the platform's: fork_unix.c; fork_win32.c
 * (no fork on Windows: a child process starts with no client, the pid
 * never changes under a client, and client_after_fork never runs there).
 *
 * Must not: wait in a handler for a lock a call may hold while it waits
 * for the daemon; write to, or read from, an inherited socket or ring.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/client_priv.h"
#include "client/transport.h"

pthread_mutex_t clients_lock = PTHREAD_MUTEX_INITIALIZER;
hm_client *clients;

/*
 * After fork(2) the child holds copies of every client's socket, region
 * and ring: were it to use them, the parent's replies would go to the
 * wrong process and the daemon would copy bytes under both.  So:
 *
 *  - No lock is inherited held, and fork never waits for a call: a call
 *    waits for the daemon for as long as a reconnect may take, or for
 *    ever when the daemon is stopped (and a process that forks to restart
 *    the daemon would deadlock).  Calls wait with none of the short locks
 *    held (a client's lock and files_lock, every region's: the reader
 *    lets go of the client's lock before it reads the socket, the other
 *    waiters sleep on their condition; tests/test_fork.c's
 *    test_fork_daemon_stopped holds every kind of call to it), so the
 *    prepare handler takes all of those, and the state it sees is whole;
 *    both sides let go after the fork.  The long locks (send_lock, held across
 *    a write; ring_lock, across a ring sleep) are never taken: the child
 *    initialises them anew, with the client's condition variable, since
 *    the threads that held or waited on them are the parent's.  A client
 *    with calls in flight at the fork (users, a reconnect, a reader) is
 *    marked fork_busy in the child: its connection, buffer and region
 *    were in those calls' hands (the reader's buffer may be half
 *    reallocated), so the child leaves them alone (they leak in the
 *    child) instead of closing or freeing them, and forgets the calls:
 *    their threads are not in the child.  Its list of files, under
 *    files_lock, is whole.
 *  - A view the child inherited keeps the bytes it had at the fork, even
 *    when the parent releases it and its blocks are filled anew: the
 *    prepare handler, with every region's lock held (so no block is
 *    given or taken back meanwhile), copies each shared region's used
 *    blocks (the views', the ring's, and those of reads in flight, which
 *    the child never looks at) into private anonymous memory, and the
 *    child's handler moves that copy over the region (mremap), so that
 *    the child's region is private memory with the same bytes at the same
 *    address.  A MAP_PRIVATE mapping of the memfd would not do: its pages
 *    the child has not written still show the parent's later changes.
 *    Copying in the child instead would race with the parent, which runs
 *    on at once.  The parent only frees the copy.
 *  - The child's first call on an inherited client (client_enter checks
 *    the pid, which also covers a child made without the handlers, such
 *    as by a raw clone) closes the child's copy of the socket, drops its
 *    copy of the region (the views keep it), connects afresh with a
 *    region of its own, and reopens the files as a reconnect does.  It
 *    never writes to the inherited socket nor touches the inherited ring.
 */

void
client_list(hm_client *c)
{
	pthread_mutex_lock(&clients_lock);
	c->next_live = clients;
	if (c->next_live != NULL)
		c->next_live->prev_live = c;
	clients = c;
	c->listed = true;
	pthread_mutex_unlock(&clients_lock);
}

bool
client_unlist(hm_client *c)
{
	bool last;

	if (!c->listed)
		return false;
	pthread_mutex_lock(&clients_lock);
	if (c->prev_live != NULL)
		c->prev_live->next_live = c->next_live;
	else
		clients = c->next_live;
	if (c->next_live != NULL)
		c->next_live->prev_live = c->prev_live;
	c->listed = false;
	last = clients == NULL;
	pthread_mutex_unlock(&clients_lock);
	return last;
}

/*
 * The first call of a child on a client inherited across fork (see
 * above): a connection, region and handles of its own, whatever the
 * reconnect policy.  The inherited socket is closed unused (the parent
 * keeps its own), the inherited region is dropped (the child's views keep
 * their private copy of it), unless a call had them at the fork.  When
 * the daemon cannot be reached, the client is broken with that error, as
 * a lost connection is (the reconnect policy, if on, then tries again).
 * Exclusive (client_enter), the lock not held.
 */
void
client_after_fork(hm_client *c)
{
	int rc;

	c->pid = fork_pid();
	if (c->fork_busy) {
		/* half changed by a call of the parent's: leave it be */
		c->fork_busy = false;
		c->in = NULL;
		c->cap = 0;
	} else {
		transport_close(c);
		region_unref(c->region);
	}
	c->conn = HM_CONN_NONE;
	c->start = c->end = 0;
	c->region = NULL;
	__atomic_store_n(&c->region_size, 0, __ATOMIC_RELAXED);
	c->ring = false;
	c->sq_tail = c->cq_head = 0;
	c->broken = 0;
	rc = client_connect(c, c->socket_path);
	if (rc < 0) {
		transport_close(c);
		c->broken = -rc;
		return;
	}
	client_reopen(c);
}
