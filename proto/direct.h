/* SPDX-License-Identifier: MIT */
/*
 * direct.h - the direct-read slots in a client's shared region, shared by
 * hotmapd and libhotmap.
 *
 * What it is for: the direct tier (docs/design.md, "Tiers").  A client
 * reads a file the daemon granted it from its own mapping of the file, with no
 * round trip.  The daemon stays the authority through one slot per granted
 * handle: it writes there whether the grant holds, and the client writes
 * there what it read, for stats.
 *
 * Why a grant can be trusted without a system call per read: the daemon
 * grants only while it holds a read lease (fcntl F_SETLEASE) on the file.
 * While the lease holds, no process has the file open for writing, so its
 * size cannot change; a process that opens it for writing or truncates it
 * blocks in the kernel until the daemon lets go, and the daemon first
 * revokes every slot of the file.  So a read checks the slot (a load),
 * copies, and checks the slot again, as a seqlock reader does.
 *
 * Layout: the table is the last table * HM_DIRECT_SLOT_BYTES bytes of the
 * region (Hello direct_slot_table, or direct_slots from a client that does
 * not send it).  The daemon uses its last `slots` slots (HelloReply
 * direct_slots; Hello direct_slots from a daemon that does not send it),
 * slot i at index i of those: hm_direct_slot(region, size, slots, i).
 * A table is sized for the files a process may hold granted (libhotmap:
 * CLIENT_DIRECT_SLOTS), and costs a page of the memfd per 32 slots
 * touched: a slot's page is touched only when the daemon grants in it.
 * The daemon uses at most HM_DIRECT_SLOTS_MAX, and no more than its
 * max-direct-grants-per-uid; it keeps nothing per slot, only per grant.
 * Two cache lines a slot, one per writer:
 *
 *   0    gen      daemon  even: granted; odd: revoked or free.  Bumped
 *                         (release) at every grant and every revocation.
 *   8    size     daemon  the file's size for the grant (it cannot change
 *                         while the grant holds)
 *   16   handle   daemon  the handle the slot belongs to
 *   24   dev      daemon  the file's device, inode and modification time
 *   32   ino              (hotmap 0.3.0: a slot of a daemon from before
 *   40   mtime_ns         has zeros); what a client looks a file up by in
 *                         the table below
 *   64   reads    client  reads served in the client (relaxed adds)
 *   72   bytes    client  bytes they returned
 *   80   copies   client  of the reads, those copied out of the mapping
 *   88   preads   client  of the reads, those by pread(2) on the client's
 *                         own descriptor (the rest are views, and reads
 *                         past the end of the file)
 *   96   probes   client  of the copies and preads, those that went the
 *                         other way to keep the copy policy's estimates
 *   104  populated client 2 MiB blocks (HM_DIRECT_BLOCK_BYTES) of the
 *                         mapping populated (MADV_POPULATE_READ)
 *   112  populate_ns client the time populating them took
 *
 * 80 to 119 came after the rest (hotmap 0.2.0): a client from before leaves
 * them zero, which reads as none.  The client adds to them with relaxed
 * atomics, a load and a store where a lost count is cheaper than a locked
 * add; it adds to reads before the way a read went, and the daemon loads
 * the ways before reads, so that what it sees of the ways is within reads.
 *
 * The daemon trusts nothing the client writes: these feed only the
 * statistics of the grant's file and client, bounded (daemon/service/direct.h:
 * a read per DIRECT_READ_MIN_NS at most, each at most the grant's size;
 * copies and preads within the reads, probes within them; populated blocks
 * at most the file's blocks per DIRECT_POPULATE_PERIOD_NS, their time at
 * most the time elapsed).
 *
 * What it must not do: any I/O.
 */
#ifndef HOTMAP_PROTO_DIRECT_H
#define HOTMAP_PROTO_DIRECT_H

#include <stddef.h>
#include <stdint.h>

#define HM_DIRECT_SLOT_BYTES	128u
/* The most slots a daemon uses; daemons that did not know Hello's
 * direct_slot_table refused more than HM_DIRECT_SLOTS_LEGACY. */
#define HM_DIRECT_SLOTS_MAX	65536u
#define HM_DIRECT_SLOTS_LEGACY	4096u
/* The block the client populates at once (its page state's chunk). */
#define HM_DIRECT_BLOCK_BYTES	(2u << 20)

struct hm_direct_slot {
	uint64_t gen;
	uint64_t size;
	uint64_t handle;
	uint64_t dev;
	uint64_t ino;
	int64_t mtime_ns;
	uint8_t pad0[64 - 48];
	uint64_t reads;
	uint64_t bytes;
	uint64_t copies;
	uint64_t preads;
	uint64_t probes;
	uint64_t populated;
	uint64_t populate_ns;
	uint8_t pad1[64 - 56];
};

_Static_assert(sizeof(struct hm_direct_slot) == HM_DIRECT_SLOT_BYTES, "one slot, two lines");
_Static_assert(offsetof(struct hm_direct_slot, reads) == 64 &&
	       offsetof(struct hm_direct_slot, bytes) == 72 &&
	       offsetof(struct hm_direct_slot, populate_ns) == 112,
	       "the client's line: old clients and daemons agree on reads and bytes");

static inline struct hm_direct_slot *
hm_direct_slot(void *region, uint64_t region_size, uint32_t slots, uint32_t i)
{
	return (struct hm_direct_slot *)((uint8_t *)region + region_size -
					 (uint64_t)slots * HM_DIRECT_SLOT_BYTES) + i;
}

static inline uint64_t
hm_direct_gen(const struct hm_direct_slot *s)
{
	return __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE);
}

/*
 * The table of granted files (hotmapd.conf(5) direct-table; docs/direct-reads.md,
 * "The table of granted files"): a file beside the socket, its path the
 * socket's with HM_TABLE_SUFFIX, that hotmapd alone writes and clients map
 * read-only, so that a process that opens a file hotmapd holds a lease on
 * reads it from its own mapping without ever talking to hotmapd.
 * Layout: a head of HM_TABLE_HEAD_BYTES, then `entries` slots (a power of
 * two), each laid out as a region's slot (above), of which the daemon's
 * line alone is used: gen (even: the file of dev and ino is leased, its
 * size `size`; odd: free or revoked; it only grows), size, handle (0), dev,
 * ino, mtime_ns.  The client's line stays zero: a client cannot write the table.
 * A file is at its hash's entry or one of the HM_TABLE_PROBES after it.
 * hotmapd holds a write lock (fcntl F_SETLK) on the table's first byte for
 * as long as it runs: a table nobody holds that lock on was left by a
 * daemon that died, and its leases died with it.
 */
#define HM_TABLE_SUFFIX		".table"
#define HM_TABLE_MAGIC		0x656c626174706d68ull	/* "hmptable" */
#define HM_TABLE_VERSION	1u
#define HM_TABLE_HEAD_BYTES	128u
#define HM_TABLE_PROBES		8u
#define HM_TABLE_ENTRIES_MAX	65536u

struct hm_table_head {
	uint64_t magic;
	uint32_t version;
	uint32_t entries;	/* a power of two, at most HM_TABLE_ENTRIES_MAX */
	uint8_t pad[HM_TABLE_HEAD_BYTES - 16];
};

_Static_assert(sizeof(struct hm_table_head) == HM_TABLE_HEAD_BYTES, "the table's head");

/* The entry a file is looked for at first (entries a power of two). */
static inline uint32_t
hm_table_hash(uint64_t dev, uint64_t ino, uint32_t entries)
{
	uint64_t h = (dev * 0x9e3779b97f4a7c15ull ^ ino) * 0xbf58476d1ce4e5b9ull;

	return (uint32_t)(h >> 32) & (entries - 1);
}

/* Entry i of a table of `entries`. */
static inline struct hm_direct_slot *
hm_table_entry(void *table, uint32_t i)
{
	return (struct hm_direct_slot *)((uint8_t *)table + HM_TABLE_HEAD_BYTES) + i;
}

/* The number of entries of the table of len bytes at table, or 0 when it
 * is not one this code can read. */
static inline uint32_t
hm_table_entries(const void *table, uint64_t len)
{
	const struct hm_table_head *h = (const struct hm_table_head *)table;
	uint32_t n;

	if (len < HM_TABLE_HEAD_BYTES || h->magic != HM_TABLE_MAGIC || h->version != HM_TABLE_VERSION)
		return 0;
	n = h->entries;
	if (n == 0 || n > HM_TABLE_ENTRIES_MAX || (n & (n - 1)) != 0 ||
	    len < HM_TABLE_HEAD_BYTES + (uint64_t)n * HM_DIRECT_SLOT_BYTES)
		return 0;
	return n;
}

/*
 * Looks the file of dev and ino up in a table of n entries, as a seqlock
 * reader: the entry's generation, then its fields, then the generation
 * again, which must be the same and even.  The entry, with *gen, *size and
 * *mtime_ns as they were, or NULL.  The daemon may change any entry at any time;
 * what is found holds for as long as the entry's generation stays *gen.
 */
static inline const struct hm_direct_slot *
hm_table_find(void *table, uint32_t n, uint64_t dev, uint64_t ino, uint64_t *gen, uint64_t *size,
	      int64_t *mtime_ns)
{
	uint32_t i, k = hm_table_hash(dev, ino, n);

	for (i = 0; i < HM_TABLE_PROBES; i++, k = (k + 1) & (n - 1)) {
		const struct hm_direct_slot *e = hm_table_entry(table, k);
		uint64_t g = __atomic_load_n(&e->gen, __ATOMIC_ACQUIRE);
		uint64_t d, in, sz;
		int64_t mt;

		if (g & 1)
			continue;
		d = __atomic_load_n(&e->dev, __ATOMIC_RELAXED);
		in = __atomic_load_n(&e->ino, __ATOMIC_RELAXED);
		sz = __atomic_load_n(&e->size, __ATOMIC_RELAXED);
		mt = __atomic_load_n(&e->mtime_ns, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&e->gen, __ATOMIC_RELAXED) != g || d != dev || in != ino)
			continue;
		*gen = g;
		*size = sz;
		*mtime_ns = mt;
		return e;
	}
	return NULL;
}

#endif
