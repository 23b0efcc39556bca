/* SPDX-License-Identifier: MIT */
/*
 * fork.c - libhotmap across fork(2): the rules (below) by which a child's
 * inherited views stay intact, every lock stays usable, and the child's
 * first call on an inherited client gets it a connection of its own; and
 * the list of connected clients the handlers walk.  The handlers and the
 * pid are the platform's: fork_unix.c; fork_win32.c (no fork on Windows:
 * a child process starts with no client, and the pid never changes under
 * a client).  The child's first call is call.c's client_enter, which
 * compares the pid.
 *
 * Must not: wait in a handler for a lock a call may hold while it waits
 * for the daemon; write to, or read from, an inherited socket or ring;
 * call up into the connection or the calls (connect.c, call.c call it).
 */
#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "client/client_priv.h"

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
