/* SPDX-License-Identifier: MIT */
/*
 * ring.h - the polling-mode rings in a client's shared region, shared by
 * hotmapd and libhotmap.
 *
 * What it is for: reads without frames or wake-ups.  The client writes a
 * request into the submission ring and moves sq_tail; the daemon, polling,
 * sees it, copies the bytes into the region and writes a completion.  Each
 * side polls for a bounded time, then says it is going to sleep (a flag
 * the other side checks after publishing), and the other side then sends
 * one small frame on the socket (RING_KICK, RING_WAKE) to wake it.
 *
 * Layout at offset 0 of the region, HM_RING_BYTES long; each index on a
 * cache line of its own, written by one side only:
 *
 *   0     sq_tail       client  requests published
 *   64    sq_head       daemon  requests taken (informative)
 *   68    daemon_idle   daemon sets it before sleeping, clears it after
 *   128   cq_tail       daemon  completions published
 *   192   cq_head       client  completions consumed
 *   196   client_idle   client sets it before sleeping; the daemon clears
 *                       it when it sends RING_WAKE
 *   256   sqe[HM_RING_ENTRIES]
 *   3072  cqe[HM_RING_ENTRIES]
 *
 * The daemon trusts nothing in the region: it keeps its own copies of the
 * indices it owns, copies each request out before checking it, and
 * refuses a client whose sq_tail runs more than HM_RING_ENTRIES ahead.
 *
 * What it must not do: any I/O.  Both processes run on the same machine,
 * so the atomics are the compiler's, on naturally aligned 32-bit words.
 */
#ifndef HOTMAP_RING_H
#define HOTMAP_RING_H

#include <stdint.h>

#define HM_RING_ENTRIES		64u
#define HM_RING_BYTES		4096u

#define HM_RING_SQ_TAIL		0
#define HM_RING_SQ_HEAD		64
#define HM_RING_DAEMON_IDLE	68
#define HM_RING_CQ_TAIL		128
#define HM_RING_CQ_HEAD		192
#define HM_RING_CLIENT_IDLE	196
#define HM_RING_SQE		256
#define HM_RING_CQE		3072

/* A read: length bytes of handle at offset, into the region at shm_offset. */
struct hm_ring_sqe {
	uint64_t handle;
	uint64_t offset;
	uint64_t length;
	uint64_t shm_offset;
	uint32_t id;		/* the client's, echoed in the completion */
	uint32_t reserved;
};

/* Its result: bytes read (short only at end of file), or -errno. */
struct hm_ring_cqe {
	uint32_t id;
	uint32_t reserved;
	int64_t result;
};

_Static_assert(HM_RING_SQE + HM_RING_ENTRIES * sizeof(struct hm_ring_sqe) <= HM_RING_CQE,
	       "submission ring overlaps the completion ring");
_Static_assert(HM_RING_CQE + HM_RING_ENTRIES * sizeof(struct hm_ring_cqe) <= HM_RING_BYTES,
	       "completion ring overflows the ring area");

static inline uint32_t *
hm_ring_word(void *region, unsigned offset)
{
	return (uint32_t *)((uint8_t *)region + offset);
}

static inline uint32_t
hm_ring_load(void *region, unsigned offset)
{
	return __atomic_load_n(hm_ring_word(region, offset), __ATOMIC_ACQUIRE);
}

static inline void
hm_ring_store(void *region, unsigned offset, uint32_t v)
{
	__atomic_store_n(hm_ring_word(region, offset), v, __ATOMIC_RELEASE);
}

/* A full barrier: a store to one's own idle flag or tail, then a load of
 * the other side's (the two sides' check-then-sleep must not both miss). */
static inline void
hm_ring_fence(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static inline struct hm_ring_sqe *
hm_ring_sqe(void *region, uint32_t index)
{
	return (struct hm_ring_sqe *)((uint8_t *)region + HM_RING_SQE) + index % HM_RING_ENTRIES;
}

static inline struct hm_ring_cqe *
hm_ring_cqe(void *region, uint32_t index)
{
	return (struct hm_ring_cqe *)((uint8_t *)region + HM_RING_CQE) + index % HM_RING_ENTRIES;
}

/* A pause in a spin, kind to the sibling hyper-thread. */
static inline void
hm_ring_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

#endif
