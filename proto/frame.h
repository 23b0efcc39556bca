/* SPDX-License-Identifier: MIT */
/*
 * frame.h - the hotmap wire framing, shared by hotmapd and libhotmap.
 *
 * What it is for: encode and check the fixed frame header, and pack or
 * unpack the protobuf-c message of a frame with its length checked against
 * the cap before anything is allocated.
 *
 * What it must not do: any I/O.  It sees bytes, never sockets.
 *
 * A frame on the wire:
 *
 *   offset size  field
 *   0      4     length      bytes of the protobuf message that follows
 *   4      4     raw_length  raw bulk bytes after the message (READ_DATA)
 *   8      2     type        enum hm_msg_type
 *   10     1     version     HM_PROTO_VERSION
 *   11     1     flags       HM_FLAG_*
 *   12     4     id          request id chosen by the client, echoed
 *
 * All integers little-endian.  This layout is the same for every protocol
 * version, so a peer can always read the header of an error reply.
 */
#ifndef HOTMAP_FRAME_H
#define HOTMAP_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "proto/hotmap.pb-c.h"

#define HM_PROTO_VERSION	1
#define HM_FRAME_HEADER_SIZE	16
/* Largest protobuf message either side accepts: paths are at most PATH_MAX
 * and stats replies are a few hundred keys. */
#define HM_FRAME_MAX_MESSAGE	(64u * 1024u)
/* Largest raw bulk part of one frame.  Replies larger than this are split
 * into several READ_DATA frames, so neither side buffers a whole read. */
#define HM_FRAME_MAX_RAW	(1u * 1024u * 1024u)

/* Feature bits negotiated by HELLO. */
#define HM_FEATURE_FD_PASSING	(1ull << 0)
#define HM_FEATURE_OPEN_BY_PATH	(1ull << 1)
#define HM_FEATURE_SHM		(1ull << 2)	/* shared-memory read replies */
/* Windows: handles are pulled from the client by DuplicateHandle (Open.
 * handle_value, Hello.region_handle) instead of passed with SCM_RIGHTS.
 * A Linux daemon never offers it. */
#define HM_FEATURE_HANDLE_PULL	(1ull << 3)
#define HM_FEATURES_ALL		(HM_FEATURE_FD_PASSING | HM_FEATURE_OPEN_BY_PATH | HM_FEATURE_SHM)

/* Largest shared region a client may register. */
#define HM_SHM_MAX		(1ull << 30)

#define HM_FLAG_MORE		0x01	/* READ_DATA: more frames follow */

enum hm_msg_type {
	HM_MSG_HELLO = 1,
	HM_MSG_HELLO_REPLY = 2,
	HM_MSG_OPEN = 3,
	HM_MSG_OPEN_REPLY = 4,
	HM_MSG_READ = 5,
	HM_MSG_READ_DATA = 6,
	HM_MSG_STAT = 7,
	HM_MSG_STAT_REPLY = 8,
	HM_MSG_CLOSE = 9,
	HM_MSG_CLOSE_REPLY = 10,
	HM_MSG_PING = 11,
	HM_MSG_PING_REPLY = 12,
	HM_MSG_STATS = 13,
	HM_MSG_STATS_REPLY = 14,
	HM_MSG_ERROR = 15,
	HM_MSG_WARM = 16,
	HM_MSG_WARM_REPLY = 17,
	HM_MSG_FILES = 18,
	HM_MSG_FILES_REPLY = 19,
	HM_MSG_EVICT = 20,
	HM_MSG_EVICT_REPLY = 21,
	HM_MSG_RING_KICK = 22,
	HM_MSG_RING_WAKE = 23,
	HM_MSG_CONFIG = 24,
	HM_MSG_CONFIG_REPLY = 25,
	HM_MSG_CLIENTS = 26,
	HM_MSG_CLIENTS_REPLY = 27,
	HM_MSG_STOP = 28,
	HM_MSG_STOP_REPLY = 29,
	HM_MSG_RELOAD = 30,
	HM_MSG_RELOAD_REPLY = 31,
	HM_MSG__MAX = 31
};

struct hm_frame_header {
	uint32_t length;
	uint32_t raw_length;
	uint16_t type;
	uint8_t version;
	uint8_t flags;
	uint32_t id;
};

/* The protobuf descriptor of a message type, or NULL for an unknown type. */
const ProtobufCMessageDescriptor *frame_descriptor(uint16_t type);
/* A name for logs ("READ", ...), "unknown" for an unknown type. */
const char *frame_type_name(uint16_t type);

void frame_header_encode(const struct hm_frame_header *h, uint8_t out[HM_FRAME_HEADER_SIZE]);
void frame_header_decode(const uint8_t in[HM_FRAME_HEADER_SIZE], struct hm_frame_header *h);

/*
 * Checks a decoded header before any allocation: -EPROTO for a wrong
 * version (the caller answers with an ERROR frame and disconnects),
 * -EBADMSG for an unknown type, -EMSGSIZE when length exceeds
 * HM_FRAME_MAX_MESSAGE or raw_length exceeds HM_FRAME_MAX_RAW, -EBADMSG for
 * raw bytes on any type but READ_DATA or flags that type does not define.
 */
int frame_header_check(const struct hm_frame_header *h);

/* Size of the packed message; the header's length field. */
size_t frame_message_size(const ProtobufCMessage *msg);

/*
 * Writes header and message into out (at least HM_FRAME_HEADER_SIZE +
 * frame_message_size(msg) bytes).  Returns the bytes written, or -EMSGSIZE
 * if the message exceeds the cap.  raw_length is set as given: the caller
 * sends those bytes right after.
 */
int frame_encode(uint16_t type, uint32_t id, uint8_t flags, const ProtobufCMessage *msg,
		 uint32_t raw_length, uint8_t *out, size_t outlen);

/*
 * Unpacks the message of a checked frame as the header's type says.
 * Returns 0 and *out (free with protobuf_c_message_free_unpacked(*out,
 * NULL)), or -EBADMSG when the bytes are not a valid message of that type.
 */
int frame_decode(const struct hm_frame_header *h, const uint8_t *body, ProtobufCMessage **out);

/*
 * The default socket path, the same for hotmapd and its clients:
 * $HOTMAP_SOCKET, else the platform's default (endpoint.h): on Linux
 * /run/hotmap/hotmapd.sock for root, else
 * $XDG_RUNTIME_DIR/hotmap/hotmapd.sock; on Windows \\.\pipe\hotmap.
 * 0, -ENOENT when none applies (not root and no XDG_RUNTIME_DIR),
 * -ENAMETOOLONG when buf is too small.
 */
int frame_default_socket(char *buf, size_t len);

/* Where the system's hotmapd listens: a root daemon's default and the
 * systemd socket unit's ListenStream.  A client without its own daemon
 * (no $HOTMAP_SOCKET, nothing at its $XDG_RUNTIME_DIR socket) finds this
 * one. */
#define HM_SYSTEM_SOCKET "/run/hotmap/hotmapd.sock"

#endif
