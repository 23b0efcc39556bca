/* SPDX-License-Identifier: MIT */
/*
 * frame.c - hotmap frame header and message packing (see frame.h).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/endpoint.h"
#include "proto/frame.h"

static const struct {
	const char *name;
	const ProtobufCMessageDescriptor *descriptor;
} frame_types[HM_MSG__MAX + 1] = {
	[HM_MSG_HELLO] = { "HELLO", &hotmap__hello__descriptor },
	[HM_MSG_HELLO_REPLY] = { "HELLO_REPLY", &hotmap__hello_reply__descriptor },
	[HM_MSG_OPEN] = { "OPEN", &hotmap__open__descriptor },
	[HM_MSG_OPEN_REPLY] = { "OPEN_REPLY", &hotmap__open_reply__descriptor },
	[HM_MSG_READ] = { "READ", &hotmap__read__descriptor },
	[HM_MSG_READ_DATA] = { "READ_DATA", &hotmap__read_reply__descriptor },
	[HM_MSG_STAT] = { "STAT", &hotmap__stat_request__descriptor },
	[HM_MSG_STAT_REPLY] = { "STAT_REPLY", &hotmap__stat_reply__descriptor },
	[HM_MSG_CLOSE] = { "CLOSE", &hotmap__close__descriptor },
	[HM_MSG_CLOSE_REPLY] = { "CLOSE_REPLY", &hotmap__close_reply__descriptor },
	[HM_MSG_PING] = { "PING", &hotmap__ping__descriptor },
	[HM_MSG_PING_REPLY] = { "PING_REPLY", &hotmap__ping_reply__descriptor },
	[HM_MSG_STATS] = { "STATS", &hotmap__stats_request__descriptor },
	[HM_MSG_STATS_REPLY] = { "STATS_REPLY", &hotmap__stats_reply__descriptor },
	[HM_MSG_ERROR] = { "ERROR", &hotmap__error__descriptor },
	[HM_MSG_WARM] = { "WARM", &hotmap__warm__descriptor },
	[HM_MSG_WARM_REPLY] = { "WARM_REPLY", &hotmap__warm_reply__descriptor },
	[HM_MSG_FILES] = { "FILES", &hotmap__files__descriptor },
	[HM_MSG_FILES_REPLY] = { "FILES_REPLY", &hotmap__files_reply__descriptor },
	[HM_MSG_EVICT] = { "EVICT", &hotmap__evict__descriptor },
	[HM_MSG_EVICT_REPLY] = { "EVICT_REPLY", &hotmap__evict_reply__descriptor },
	[HM_MSG_RING_KICK] = { "RING_KICK", &hotmap__ring_kick__descriptor },
	[HM_MSG_RING_WAKE] = { "RING_WAKE", &hotmap__ring_wake__descriptor },
	[HM_MSG_CONFIG] = { "CONFIG", &hotmap__config_request__descriptor },
	[HM_MSG_CONFIG_REPLY] = { "CONFIG_REPLY", &hotmap__config_reply__descriptor },
	[HM_MSG_CLIENTS] = { "CLIENTS", &hotmap__clients__descriptor },
	[HM_MSG_CLIENTS_REPLY] = { "CLIENTS_REPLY", &hotmap__clients_reply__descriptor },
	[HM_MSG_STOP] = { "STOP", &hotmap__stop__descriptor },
	[HM_MSG_STOP_REPLY] = { "STOP_REPLY", &hotmap__stop_reply__descriptor },
	[HM_MSG_RELOAD] = { "RELOAD", &hotmap__reload__descriptor },
	[HM_MSG_RELOAD_REPLY] = { "RELOAD_REPLY", &hotmap__reload_reply__descriptor },
};

const ProtobufCMessageDescriptor *
frame_descriptor(uint16_t type)
{
	if (type > HM_MSG__MAX)
		return NULL;
	return frame_types[type].descriptor;
}

const char *
frame_type_name(uint16_t type)
{
	if (type > HM_MSG__MAX || frame_types[type].name == NULL)
		return "unknown";
	return frame_types[type].name;
}

static void
put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void
put_le32(uint8_t *p, uint32_t v)
{
	put_le16(p, (uint16_t)v);
	put_le16(p + 2, (uint16_t)(v >> 16));
}

static uint16_t
get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t
get_le32(const uint8_t *p)
{
	return (uint32_t)get_le16(p) | ((uint32_t)get_le16(p + 2) << 16);
}

void
frame_header_encode(const struct hm_frame_header *h, uint8_t out[HM_FRAME_HEADER_SIZE])
{
	put_le32(out, h->length);
	put_le32(out + 4, h->raw_length);
	put_le16(out + 8, h->type);
	out[10] = h->version;
	out[11] = h->flags;
	put_le32(out + 12, h->id);
}

void
frame_header_decode(const uint8_t in[HM_FRAME_HEADER_SIZE], struct hm_frame_header *h)
{
	h->length = get_le32(in);
	h->raw_length = get_le32(in + 4);
	h->type = get_le16(in + 8);
	h->version = in[10];
	h->flags = in[11];
	h->id = get_le32(in + 12);
}

int
frame_header_check(const struct hm_frame_header *h)
{
	if (h->version != HM_PROTO_VERSION)
		return -EPROTO;
	if (frame_descriptor(h->type) == NULL)
		return -EBADMSG;
	if (h->length > HM_FRAME_MAX_MESSAGE || h->raw_length > HM_FRAME_MAX_RAW)
		return -EMSGSIZE;
	if (h->type != HM_MSG_READ_DATA && (h->raw_length != 0 || h->flags != 0))
		return -EBADMSG;
	if (h->flags & ~HM_FLAG_MORE)
		return -EBADMSG;
	return 0;
}

size_t
frame_message_size(const ProtobufCMessage *msg)
{
	return protobuf_c_message_get_packed_size(msg);
}

int
frame_encode(uint16_t type, uint32_t id, uint8_t flags, const ProtobufCMessage *msg,
	     uint32_t raw_length, uint8_t *out, size_t outlen)
{
	struct hm_frame_header h;
	size_t len = frame_message_size(msg);

	if (len > HM_FRAME_MAX_MESSAGE || raw_length > HM_FRAME_MAX_RAW)
		return -EMSGSIZE;
	if (outlen < HM_FRAME_HEADER_SIZE + len)
		return -ENOBUFS;
	h = (struct hm_frame_header){
		.length = (uint32_t)len,
		.raw_length = raw_length,
		.type = type,
		.version = HM_PROTO_VERSION,
		.flags = flags,
		.id = id,
	};
	frame_header_encode(&h, out);
	if (protobuf_c_message_pack(msg, out + HM_FRAME_HEADER_SIZE) != len)
		return -EMSGSIZE;
	return (int)(HM_FRAME_HEADER_SIZE + len);
}

int
frame_decode(const struct hm_frame_header *h, const uint8_t *body, ProtobufCMessage **out)
{
	const ProtobufCMessageDescriptor *d = frame_descriptor(h->type);
	ProtobufCMessage *msg;

	*out = NULL;
	if (d == NULL || h->length > HM_FRAME_MAX_MESSAGE)
		return -EBADMSG;
	msg = protobuf_c_message_unpack(d, NULL, h->length, body);
	if (msg == NULL)
		return -EBADMSG;
	*out = msg;
	return 0;
}

int
frame_default_socket(char *buf, size_t len)
{
	const char *env = getenv("HOTMAP_SOCKET");
	int n;

	if (env == NULL || env[0] == '\0')
		return endpoint_default(buf, len);
	n = snprintf(buf, len, "%s", env);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}
