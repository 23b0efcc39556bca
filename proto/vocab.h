/* SPDX-License-Identifier: MIT */
/*
 * vocab.h - the names of the wire's vocabulary, made from protobuf-c's
 * descriptors of proto/hotmap.proto, so that hotmapd, libhotmap and
 * hotmapctl spell them one way and a new value needs no second list.
 *
 * What it is for: turning enum values into the names people read.  What
 * it must not do: hold a list of its own (the .proto is the list), or
 * pull protobuf-c's headers into its callers (storage code uses it).
 */
#ifndef HOTMAP_VOCAB_H
#define HOTMAP_VOCAB_H

/* A Reason's name: REASON_LOCAL_FILE is "local-file"; "unknown" for a
 * value the .proto does not have. */
const char *vocab_reason_name(unsigned reason);
/* Its stats key: REASON_LOCAL_FILE counts opens as "opens_local_file";
 * NULL for a value the .proto does not have. */
const char *vocab_reason_stat_key(unsigned reason);

#endif
