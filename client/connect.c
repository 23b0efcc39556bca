/* SPDX-License-Identifier: MIT */
/*
 * connect.c - a client's connection: the options (hm_connect_opts, over
 * the environment, over the built-in defaults), connecting with the
 * handshake that offers the region, the ring and the direct-read slots
 * (client_connect, which a reconnect runs again: call.c), hm_disconnect,
 * and hm_version.
 *
 * Must not: pass a descriptor before the daemon's credentials are checked
 * (trust.h); read or write the socket but through wire.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/client_priv.h"
#include "client/os.h"
#include "client/transport.h"
#include "client/trust.h"
#include "proto/direct.h"
#include "proto/endpoint.h"
#include "proto/ring.h"
#include "proto/size.h"

/* name as a size (proto/size.h) of at most HM_SHM_MAX, else dflt. */
static size_t
env_size(const char *name, size_t dflt)
{
	const char *v = getenv(name);
	uint64_t n;

	if (v == NULL || *v == '\0' || size_parse(v, &n) < 0 || n > HM_SHM_MAX)
		return dflt;
	return (size_t)n;
}

/* name as a plain number of at most max, else dflt. */
static unsigned
env_uint(const char *name, unsigned dflt, unsigned max)
{
	const char *v = getenv(name);
	unsigned long n;
	char *end;

	if (v == NULL || *v == '\0' || v[0] == '-')
		return dflt;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno != 0 || *end != '\0' || n > max)
		return dflt;
	return (unsigned)n;
}

/* HOTMAP_POLL: 1/yes/on, 0/no/off, or unset (-1: auto, enough cores,
 * counted at the first HELLO: a client that never connects, reading
 * through the table of granted files, never counts them). */
static int
env_poll_wanted(void)
{
	const char *v = getenv("HOTMAP_POLL");

	if (v != NULL && (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "on")))
		return 1;
	if (v != NULL && (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "off")))
		return 0;
	return -1;
}

/*
 * No path given: the user's own daemon (frame_default_socket), else the
 * platform's fallback (endpoint_fallback: on POSIX the system's
 * at HM_SYSTEM_SOCKET, where the systemd socket unit and a root daemon
 * listen).  The one that answered is kept, so that a reconnect goes back
 * to the same daemon.  The error is the own endpoint's when neither
 * answers and the own one exists; else the fallback's.
 */
static int
connect_default(hm_client *c, char *path, size_t len)
{
	const char *fallback = endpoint_fallback();
	int rc, own;

	own = frame_default_socket(path, len);
	if (own == 0) {
		rc = transport_connect(c, path);
		if (rc != -ENOENT && rc != -ECONNREFUSED)
			goto done;
		if (fallback == NULL || strcmp(path, fallback) == 0 ||
		    getenv("HOTMAP_SOCKET") != NULL)
			goto done;
		own = rc;
	} else if (fallback == NULL) {
		return own;
	}
	rc = transport_connect(c, fallback);
	if (rc < 0 && own == -ECONNREFUSED)
		rc = own;	/* a dead daemon of one's own says more */
	if (rc == 0)
		snprintf(path, len, "%s", fallback);
done:
	if (rc == 0 && (c->socket_path = strdup(path)) == NULL)
		rc = -ENOMEM;
	return rc;
}

/* The table of granted files of the daemon at socket_path (NULL: the
 * user's own, frame_default_socket), or NULL. */
static struct hm_table *
table_beside(const char *socket_path)
{
	char path[ENDPOINT_MAX];

	if (socket_path == NULL && frame_default_socket(path, sizeof path) == 0)
		socket_path = path;
	return socket_path != NULL ? table_attach(socket_path) : NULL;
}

int
client_hello_send(hm_client *c, const char *socket_path, struct wire_wait *w,
		  struct hello_sent *hs)
{
	char path[ENDPOINT_MAX];
	Hotmap__Hello hello = HOTMAP__HELLO__INIT;
	char why[512];
	int pass = -1, rc;

	memset(hs, 0, sizeof *hs);
	hs->shm_fd = HM_OSFILE_NONE;
	if (socket_path != NULL) {
		/* memcpy, not snprintf: printf's code is a few page faults
		 * of a short-lived process's first connect */
		size_t n = strlen(socket_path);

		rc = n >= sizeof path ? -ENAMETOOLONG : transport_connect(c, socket_path);
		if (rc == 0)
			memcpy(path, socket_path, n + 1);
	} else {
		rc = connect_default(c, path, sizeof path);
	}
	if (rc < 0)
		return rc;
	/* Before HELLO: it passes the region's memfd, a descriptor too. */
	rc = client_trust_daemon(c->conn, path, why, sizeof why);
	if (rc < 0) {
		set_last_error(why);
		return rc;
	}
	hello.version = HM_PROTO_VERSION;
	hello.features = transport_features();
	hello.client_name = (char *)os_program_name();
	hello.takes_copies = c->takes_copies;	/* netfs.c maps them */
	if (c->shm_size > 0 && (transport_features() & HM_FEATURE_SHM))
		hs->region = region_new(c->shm_size, c->direct_slots, &hs->shm_fd);
	if (hs->region != NULL) {
		struct hm_region *r = hs->region;

		pass = transport_attach(hs->shm_fd, &hello.region_handle);
		hello.shm_size = r->size + (uint64_t)r->nslots * HM_DIRECT_SLOT_BYTES;
		/* a daemon that does not know direct_slot_table uses the
		 * table's last direct_slots, as many as it accepts */
		hello.direct_slot_table = r->nslots;
		hello.direct_slots = r->nslots < HM_DIRECT_SLOTS_LEGACY ?
				     r->nslots : HM_DIRECT_SLOTS_LEGACY;
		hello.region_huge = r->huge;
	}
	if (c->poll_wanted < 0)
		c->poll_wanted = os_cpu_count() >= CLIENT_POLL_MIN_CPUS;
	if (hs->region != NULL && hs->region->size >= 2 * HM_RING_BYTES && c->poll_wanted == 1) {
		_Static_assert(HM_RING_BYTES == REGION_BLOCK, "the rings take block 0");
		region_mark(hs->region, 0, 1, true);
		hello.ring_entries = HM_RING_ENTRIES;
	}
	hs->ring_entries = hello.ring_entries;
	hs->legacy_slots = hello.direct_slots;
	rc = wire_begin(c, w, NULL, 1, 1);
	if (rc < 0) {
		os_file_close(hs->shm_fd);
		region_unref(hs->region);
		return rc;
	}
	hs->send_rc = client_send(c, HM_MSG_HELLO, w->first_id, &hello.base, pass);
	return 0;
}

int
client_hello_finish(hm_client *c, struct wire_wait *w, struct hello_sent *hs)
{
	ProtobufCMessage *reply;
	Hotmap__HelloReply *r;
	int fd, rc;

	rc = wire_finish(c, w, hs->send_rc);
	rc = wire_reply(c, w, rc, HM_MSG_HELLO_REPLY, &reply, &fd);
	if (fd >= 0)
		close(fd);
	os_file_close(hs->shm_fd);	/* the daemon has its own (passed, or pulled) */
	hs->shm_fd = HM_OSFILE_NONE;
	if (rc < 0) {
		region_unref(hs->region);
		hs->region = NULL;
		return rc;
	}
	c->region = hs->region;
	hs->region = NULL;
	r = (Hotmap__HelloReply *)reply;
	rc = r->version == HM_PROTO_VERSION ? 0 : -EPROTONOSUPPORT;
	if (!r->shm_accepted) {
		/* An older or stricter daemon: everything over the socket. */
		region_unref(c->region);
		c->region = NULL;
	} else if (hs->ring_entries > 0 && !r->ring_accepted) {
		region_mark(c->region, 0, 1, false);
	} else if (hs->ring_entries > 0) {
		c->ring = true;
	}
	if (c->region != NULL)	/* a daemon before direct_slot_table: direct_slots */
		region_slots_used(c->region, r->direct_slots != 0 ? r->direct_slots :
					     hs->legacy_slots);
	__atomic_store_n(&c->region_size, c->region != NULL ? c->region->size : 0,
			 __ATOMIC_RELAXED);
	protobuf_c_message_free_unpacked(reply, NULL);
	return rc;
}

int
client_connect(hm_client *c, const char *socket_path)
{
	struct hello_sent hs;
	struct wire_wait w;
	int rc = client_hello_send(c, socket_path, &w, &hs);

	return rc < 0 ? rc : client_hello_finish(c, &w, &hs);
}

/* The copy policy's knobs: the built-in ones, over them
 * HOTMAP_COPY_POLICY, over it the option.  0, or -EINVAL with the
 * reason in hm_last_error. */
static int
copy_options(hm_client *c, const char *opt)
{
	const char *env = getenv("HOTMAP_COPY_POLICY"), *log = getenv("HOTMAP_COPY_LOG");
	char err[320], why[360];

	cp_knobs_default(&c->copy_knobs);
	if (env != NULL && cp_knobs_parse(&c->copy_knobs, env, err, sizeof err) < 0) {
		snprintf(why, sizeof why, "HOTMAP_COPY_POLICY: %s", err);
		set_last_error(why);
		return -EINVAL;
	}
	if (opt != NULL && cp_knobs_parse(&c->copy_knobs, opt, err, sizeof err) < 0) {
		snprintf(why, sizeof why, "copy_policy: %s", err);
		set_last_error(why);
		return -EINVAL;
	}
	c->copy_log = log != NULL && *log != '\0' && strcmp(log, "0") != 0;
	return 0;
}

/* The size of struct hm_options before copy_policy (0.2.0's first form),
 * and before fallback: a program built against one passes that size, and
 * its fields are read. */
#define OPTIONS_SIZE_0 offsetof(struct hm_options, copy_policy)
#define OPTIONS_SIZE_1 offsetof(struct hm_options, fallback)

/* HOTMAP_FALLBACK: "local", or "none" (and unset, empty): 1 or 0; else
 * -EINVAL with the reason in hm_last_error. */
static int
env_fallback(void)
{
	const char *v = getenv("HOTMAP_FALLBACK");

	if (v == NULL || *v == '\0' || strcmp(v, "none") == 0)
		return HM_FALLBACK_NONE;
	if (strcmp(v, "local") == 0)
		return HM_FALLBACK_LOCAL;
	set_last_error("HOTMAP_FALLBACK: not 'local' or 'none'");
	return -EINVAL;
}

/* Options over the environment over the built-in defaults.  0 or -EINVAL. */
static int
client_options(hm_client *c, const struct hm_options *in)
{
	struct hm_options opts = HM_OPTIONS_INIT;
	const struct hm_options *o = &opts;
	int rc;

	if (in != NULL) {
		/* a size the library knows: its own, or an earlier one, whose
		 * missing fields are default */
		if (in->size != sizeof opts && in->size != OPTIONS_SIZE_1 &&
		    in->size != OPTIONS_SIZE_0)
			return -EINVAL;
		memcpy(&opts, in, in->size);
		opts.size = sizeof opts;
	}
	if (o->shm_size < HM_DEFAULT || o->shm_size > (int64_t)HM_SHM_MAX ||
	    o->shm_threshold < HM_DEFAULT || o->poll < HM_DEFAULT || o->poll > 1 ||
	    o->poll_us < HM_DEFAULT || o->poll_us > CLIENT_POLL_US_MAX ||
	    o->reconnect_ms < HM_DEFAULT || o->reconnect_ms > CLIENT_RECONNECT_MS_MAX ||
	    o->direct < HM_DEFAULT || o->direct > 1 || o->direct_after < HM_DEFAULT ||
	    o->direct_after > UINT_MAX || o->fallback < HM_DEFAULT ||
	    o->fallback > HM_FALLBACK_LOCAL)
		return -EINVAL;
	rc = o->fallback >= 0 ? o->fallback : env_fallback();
	if (rc < 0)
		return rc;
	if (rc == HM_FALLBACK_LOCAL && !os_local_reads())
		return -ENOTSUP;	/* Windows, for now (os_win32.c) */
	c->fallback = rc == HM_FALLBACK_LOCAL;
	c->table_wanted = c->fallback && env_uint("HOTMAP_TABLE", 1, 1) == 1;
	c->shm_threshold = o->shm_threshold >= 0 ? (size_t)o->shm_threshold :
			   env_size("HOTMAP_SHM_THRESHOLD", CLIENT_SHM_THRESHOLD);
	c->shm_size = o->shm_size >= 0 ? (size_t)o->shm_size :
		      env_size("HOTMAP_SHM_SIZE", CLIENT_SHM_SIZE);
	c->poll_wanted = o->poll >= 0 ? o->poll == 1 : env_poll_wanted();	/* -1: auto */
#ifdef _WIN32
	c->takes_copies = false;	/* no copies of network files there */
#else
	c->takes_copies = env_uint("HOTMAP_NETWORK_COPY", 1, 1) == 1;
#endif
	c->poll_us = o->poll_us >= 0 ? (unsigned)o->poll_us :
		     env_uint("HOTMAP_POLL_US", CLIENT_POLL_US, CLIENT_POLL_US_MAX);
	c->reconnect_ms = o->reconnect_ms >= 0 ? (unsigned)o->reconnect_ms :
			  env_uint("HOTMAP_RECONNECT_MS", 0, CLIENT_RECONNECT_MS_MAX);
	c->direct_slots = (o->direct >= 0 ? o->direct : (int)env_uint("HOTMAP_DIRECT", 1, 1)) ?
			  CLIENT_DIRECT_SLOTS : 0;
	c->direct_after = o->direct_after >= 0 ? (unsigned)o->direct_after :
			  env_uint("HOTMAP_DIRECT_AFTER", CLIENT_DIRECT_AFTER, UINT_MAX);
	/* the slots come on top of the region, which may not pass the cap */
	if (c->shm_size > HM_SHM_MAX - CLIENT_DIRECT_SLOTS * HM_DIRECT_SLOT_BYTES)
		c->shm_size = HM_SHM_MAX - CLIENT_DIRECT_SLOTS * HM_DIRECT_SLOT_BYTES;
	return copy_options(c, o->copy_policy);
}

HM_EXPORT hm_client *
hm_connect(const char *socket_path)
{
	return hm_connect_opts(socket_path, NULL);
}

HM_EXPORT hm_client *
hm_connect_opts(const char *socket_path, const struct hm_options *opts)
{
	hm_client *c;
	int rc;

	set_last_error(NULL);
	c = calloc(1, sizeof *c);
	if (c == NULL)
		return NULL;
	c->conn = HM_CONN_NONE;
	c->pend_hs.shm_fd = HM_OSFILE_NONE;
	c->pend_tail = &c->pend_opens;
	c->next_id = 1;
	fork_watch();	/* first: its write makes the page fork_pid reads */
	c->pid = fork_pid();
	rc = client_options(c, opts);
	if (rc < 0) {
		free(c);
		errno = -rc;
		return NULL;
	}
	c->lock = &c->lock0;
	pthread_mutex_init(c->lock, NULL);
	pthread_cond_init(&c->idle, NULL);
	pthread_mutex_init(&c->send_lock, NULL);
	pthread_mutex_init(&c->ring_lock, NULL);
	pthread_mutex_init(&c->files_lock, NULL);
	if (socket_path != NULL && (c->socket_path = strdup(socket_path)) == NULL) {
		hm_disconnect(c);
		errno = ENOMEM;
		return NULL;
	}
	if (c->fallback && c->table_wanted && c->direct_slots > 0 &&
	    (c->table = table_beside(socket_path)) != NULL) {
		/* hotmapd publishes a table of granted files: nothing is
		 * asked of it until a file is not in the table, or a call
		 * needs it (table_unix.c, client_undefer) */
		c->local = true;
		c->deferred = true;
		c->local_why = EINPROGRESS;
		c->local_retry_us = UINT64_MAX;
		rc = 0;
	} else if (c->fallback) {
		/* HELLO sent, its reply taken later (pend.c): this process
		 * reads meanwhile, and when no daemon answers */
		c->local_why = EINPROGRESS;
		rc = pend_begin(c);
		if (rc < 0)
			fallback_enter(c, -rc);
		set_last_error(NULL);
		rc = 0;
	} else {
		rc = client_connect(c, socket_path);
	}
	if (rc < 0) {
		hm_disconnect(c);
		errno = -rc;
		return NULL;
	}
	client_list(c);
	return c;
}

HM_EXPORT void
hm_disconnect(hm_client *c)
{
	int saved = errno;
	bool last;

	if (c == NULL)
		return;
	last = client_unlist(c);
	while (c->files != NULL) {
		hm_file *f = c->files;

		c->files = f->next;
		client_file_drop(f);
		free(f->path);
		free(f);
	}
	direct_release_retired(c);
	fallback_forget_pend(c);
	free(c->socket_path);
	if (!c->fork_busy) {
		transport_close(c);	/* the daemon closes the handles with the
					 * session; in a child, only its copy closes */
		region_unref(c->region);	/* views may keep it mapped */
		free(c->in);
	}
	pthread_mutex_destroy(c->lock);
	pthread_cond_destroy(&c->idle);
	pthread_mutex_destroy(&c->send_lock);
	pthread_mutex_destroy(&c->ring_lock);
	pthread_mutex_destroy(&c->files_lock);
	free(c);
	if (last)
		direct_release_idle();
	errno = saved;
}

HM_EXPORT const char *
hm_version(void)
{
	return PACKAGE_VERSION;
}
