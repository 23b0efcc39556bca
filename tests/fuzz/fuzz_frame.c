/* SPDX-License-Identifier: MIT */
/*
 * fuzz_frame.c - libFuzzer target: the frame layer (proto/frame.c) as the
 * daemon and the library meet it, on bytes nobody checked.
 *
 * The input is a stream of frames.  Each header is decoded and checked;
 * a header that passes is decoded as its type says, and whatever decodes
 * is encoded again, which must give a frame that decodes to the same
 * bytes.  Unknown types and bodies too short for their header are handed
 * to frame_decode anyway: it must refuse them, not read past the input.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/frame.h"
#include "tests/fuzz/fuzz.h"

/* Whether msg or a message inside it kept an unknown field numbered 0. */
static int
has_field_zero(const ProtobufCMessage *msg)
{
	const ProtobufCMessageDescriptor *d = msg->descriptor;
	unsigned i;
	size_t j;

	for (i = 0; i < msg->n_unknown_fields; i++)
		if (msg->unknown_fields[i].tag == 0)
			return 1;
	for (i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *base = (const char *)msg;

		if (f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base + f->quantifier_offset);
			ProtobufCMessage *const *v = *(ProtobufCMessage *const *const *)(base + f->offset);

			for (j = 0; j < n; j++)
				if (has_field_zero(v[j]))
					return 1;
		} else {
			const ProtobufCMessage *sub = *(ProtobufCMessage *const *)(base + f->offset);

			if (sub != NULL && has_field_zero(sub))
				return 1;
		}
	}
	return 0;
}

/* Encodes msg as type again and checks that the frame reads back alike. */
static void
round_trip(const struct hm_frame_header *h, const ProtobufCMessage *msg)
{
	size_t len = frame_message_size(msg);
	struct hm_frame_header h2;
	ProtobufCMessage *again;
	uint8_t *buf, *packed;
	int n;

	/* Unknown fields are kept and packed again, so a message read from
	 * at most the cap may pack a little larger (a repeated field's
	 * pieces merged); frame_encode must then refuse it cleanly. */
	buf = malloc(HM_FRAME_HEADER_SIZE + len + 1);
	check(buf != NULL);
	n = frame_encode(h->type, h->id, h->flags, msg, h->raw_length, buf,
			 HM_FRAME_HEADER_SIZE + len);
	if (len > HM_FRAME_MAX_MESSAGE) {
		check(n == -EMSGSIZE);
		free(buf);
		return;
	}
	check(n == (int)(HM_FRAME_HEADER_SIZE + len));
	/* one byte short: refused, nothing written past the end */
	check(frame_encode(h->type, h->id, h->flags, msg, h->raw_length, buf,
			   HM_FRAME_HEADER_SIZE + len - 1) == -ENOBUFS || len == 0);

	frame_header_decode(buf, &h2);
	check(h2.length == len && h2.type == h->type && h2.id == h->id &&
	      h2.flags == h->flags && h2.raw_length == h->raw_length &&
	      h2.version == HM_PROTO_VERSION);
	check(frame_header_check(&h2) == 0);
	/* protobuf-c keeps an unknown field it should have refused (field
	 * number 0, spelled as a varint of two bytes or more) and packs it in
	 * a form it then refuses.  The daemon never packs what a client sent,
	 * so only that may keep a message from reading back. */
	if (frame_decode(&h2, buf + HM_FRAME_HEADER_SIZE, &again) < 0) {
		check(has_field_zero(msg));
		free(buf);
		return;
	}
	/* packing what was unpacked from a packing is stable */
	packed = malloc(len + 1);
	check(packed != NULL);
	check(frame_message_size(again) == len);
	check(protobuf_c_message_pack(again, packed) == len);
	check(memcmp(packed, buf + HM_FRAME_HEADER_SIZE, len) == 0);
	protobuf_c_message_free_unpacked(again, NULL);
	free(packed);
	free(buf);
}

static void
one_frame(const struct hm_frame_header *h, const uint8_t *body, size_t avail)
{
	ProtobufCMessage *msg = NULL;
	int rc = frame_header_check(h);
	const char *name = frame_type_name(h->type);

	check(name != NULL);
	check((frame_descriptor(h->type) == NULL) == (strcmp(name, "unknown") == 0));
	check(rc == 0 || rc == -EPROTO || rc == -EBADMSG || rc == -EMSGSIZE);
	if (rc == 0) {
		check(h->version == HM_PROTO_VERSION);
		check(h->length <= HM_FRAME_MAX_MESSAGE && h->raw_length <= HM_FRAME_MAX_RAW);
	}
	if (rc == 0 && h->length <= avail) {
		/* a copy of exactly length bytes, so ASan sees any overread */
		uint8_t *copy = malloc(h->length + 1);

		check(copy != NULL);
		memcpy(copy, body, h->length);
		if (frame_decode(h, copy, &msg) == 0) {
			check(msg != NULL);
			check(msg->descriptor == frame_descriptor(h->type));
			round_trip(h, msg);
			protobuf_c_message_free_unpacked(msg, NULL);
		} else {
			check(msg == NULL);
		}
		free(copy);
	} else if (frame_descriptor(h->type) == NULL) {
		check(frame_decode(h, body, &msg) == -EBADMSG && msg == NULL);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	while (size >= HM_FRAME_HEADER_SIZE) {
		struct hm_frame_header h;
		uint8_t again[HM_FRAME_HEADER_SIZE];
		size_t take;

		frame_header_decode(data, &h);
		frame_header_encode(&h, again);
		check(memcmp(again, data, sizeof again) == 0);
		one_frame(&h, data + HM_FRAME_HEADER_SIZE, size - HM_FRAME_HEADER_SIZE);
		/* on to the next frame: past this one's body when it fits */
		take = HM_FRAME_HEADER_SIZE;
		if (h.length <= size - HM_FRAME_HEADER_SIZE)
			take += h.length;
		data += take;
		size -= take;
	}
	return 0;
}
