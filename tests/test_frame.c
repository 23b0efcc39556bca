/* SPDX-License-Identifier: MIT */
/*
 * test_frame.c - framing: the header codec and checks (proto/frame.c), and
 * the daemon's peer (daemon/transport/peer.c) fed byte by byte over a socketpair.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "daemon/transport/peer.h"
#include "proto/frame.h"

static struct hm_frame_header
header(uint16_t type, uint32_t length)
{
	return (struct hm_frame_header){
		.length = length, .type = type, .version = HM_PROTO_VERSION, .id = 7,
	};
}

static void
test_header_round_trip(void **state)
{
	struct hm_frame_header in = {
		.length = 0x01020304, .raw_length = 0x0a0b0c0d, .type = 0x1234,
		.version = 9, .flags = 0x81, .id = 0xdeadbeef,
	}, out;
	uint8_t b[HM_FRAME_HEADER_SIZE];

	(void)state;
	frame_header_encode(&in, b);
	/* little-endian on the wire, whatever the host */
	assert_int_equal(b[0], 0x04);
	assert_int_equal(b[3], 0x01);
	assert_int_equal(b[8], 0x34);
	assert_int_equal(b[10], 9);
	assert_int_equal(b[12], 0xef);
	frame_header_decode(b, &out);
	assert_memory_equal(&in, &out, sizeof in);
}

static void
test_header_checks(void **state)
{
	struct hm_frame_header h;

	(void)state;
	h = header(HM_MSG_READ, 10);
	assert_int_equal(frame_header_check(&h), 0);

	h.version = HM_PROTO_VERSION + 1;
	assert_int_equal(frame_header_check(&h), -EPROTO);
	h.version = 0;
	assert_int_equal(frame_header_check(&h), -EPROTO);

	h = header(0, 0);
	assert_int_equal(frame_header_check(&h), -EBADMSG);
	h = header(HM_MSG__MAX + 1, 0);
	assert_int_equal(frame_header_check(&h), -EBADMSG);
	h = header(0xffff, 0);
	assert_int_equal(frame_header_check(&h), -EBADMSG);

	h = header(HM_MSG_OPEN, HM_FRAME_MAX_MESSAGE);
	assert_int_equal(frame_header_check(&h), 0);
	h = header(HM_MSG_OPEN, HM_FRAME_MAX_MESSAGE + 1);
	assert_int_equal(frame_header_check(&h), -EMSGSIZE);
	h = header(HM_MSG_OPEN, UINT32_MAX);
	assert_int_equal(frame_header_check(&h), -EMSGSIZE);

	/* raw bulk bytes only on READ_DATA, within their own cap */
	h = header(HM_MSG_OPEN, 0);
	h.raw_length = 1;
	assert_int_equal(frame_header_check(&h), -EBADMSG);
	h = header(HM_MSG_READ_DATA, 0);
	h.raw_length = HM_FRAME_MAX_RAW;
	h.flags = HM_FLAG_MORE;
	assert_int_equal(frame_header_check(&h), 0);
	h.raw_length = HM_FRAME_MAX_RAW + 1;
	assert_int_equal(frame_header_check(&h), -EMSGSIZE);

	/* flags nobody defined */
	h = header(HM_MSG_READ_DATA, 0);
	h.flags = 0x80;
	assert_int_equal(frame_header_check(&h), -EBADMSG);
	h = header(HM_MSG_READ, 0);
	h.flags = HM_FLAG_MORE;
	assert_int_equal(frame_header_check(&h), -EBADMSG);
}

static void
test_encode_decode(void **state)
{
	Hotmap__Read r = HOTMAP__READ__INIT;
	Hotmap__Read *back;
	ProtobufCMessage *msg;
	struct hm_frame_header h;
	uint8_t buf[256];
	int n;

	(void)state;
	r.handle = 3;
	r.offset = UINT64_MAX;
	r.length = 4096;
	n = frame_encode(HM_MSG_READ, 42, 0, &r.base, 0, buf, sizeof buf);
	assert_true(n > HM_FRAME_HEADER_SIZE);
	frame_header_decode(buf, &h);
	assert_int_equal(frame_header_check(&h), 0);
	assert_int_equal(h.type, HM_MSG_READ);
	assert_int_equal(h.id, 42);
	assert_int_equal(h.length, (uint32_t)n - HM_FRAME_HEADER_SIZE);
	assert_int_equal(frame_decode(&h, buf + HM_FRAME_HEADER_SIZE, &msg), 0);
	back = (Hotmap__Read *)msg;
	assert_int_equal(back->handle, 3);
	assert_true(back->offset == UINT64_MAX);
	assert_int_equal(back->length, 4096);
	protobuf_c_message_free_unpacked(msg, NULL);

	/* the buffer must hold header and message */
	assert_int_equal(frame_encode(HM_MSG_READ, 1, 0, &r.base, 0, buf, 8), -ENOBUFS);
}

static void
test_decode_truncated_and_garbage(void **state)
{
	Hotmap__Open o = HOTMAP__OPEN__INIT;
	ProtobufCMessage *msg = (ProtobufCMessage *)1;
	struct hm_frame_header h;
	uint8_t buf[256], garbage[16];
	int n;

	(void)state;
	o.path = (char *)"/srv/data/shard-0001";
	o.by_path = true;
	n = frame_encode(HM_MSG_OPEN, 1, 0, &o.base, 0, buf, sizeof buf);
	assert_true(n > 0);
	frame_header_decode(buf, &h);
	/* the body cut short in the middle of the path string */
	h.length -= 5;
	assert_int_equal(frame_decode(&h, buf + HM_FRAME_HEADER_SIZE, &msg), -EBADMSG);
	assert_null(msg);

	memset(garbage, 0xff, sizeof garbage);
	h = header(HM_MSG_OPEN, sizeof garbage);
	assert_int_equal(frame_decode(&h, garbage, &msg), -EBADMSG);
	assert_null(msg);
}

static void
test_encode_oversized_message(void **state)
{
	Hotmap__Open o = HOTMAP__OPEN__INIT;
	size_t len = HM_FRAME_MAX_MESSAGE + 10;
	char *path = malloc(len + 1);
	uint8_t *buf = malloc(len + 64);

	(void)state;
	assert_non_null(path);
	assert_non_null(buf);
	memset(path, 'a', len);
	path[len] = '\0';
	o.path = path;
	assert_int_equal(frame_encode(HM_MSG_OPEN, 1, 0, &o.base, 0, buf, len + 64), -EMSGSIZE);
	free(path);
	free(buf);
}

/* --- the peer, fed over a socketpair ------------------------------------ */

struct peer_test {
	struct event_base *base;
	struct peer *peer;
	int client;		/* the test's end */
	int frames;		/* dispatched */
	uint16_t last_type;
	uint32_t last_id;
	int closed;
	char why[200];
};

static int
pt_dispatch(struct peer *p, const struct peer_frame *f, void *arg)
{
	struct peer_test *t = arg;

	(void)p;
	t->frames++;
	t->last_type = f->hdr.type;
	t->last_id = f->hdr.id;
	return 0;
}

static int
pt_drain(struct peer *p, void *arg)
{
	(void)p;
	(void)arg;
	return 0;
}

static void
pt_closed(struct peer *p, bool clean, const char *why, void *arg)
{
	struct peer_test *t = arg;

	(void)clean;
	t->closed++;
	snprintf(t->why, sizeof t->why, "%s", why);
	peer_free(p);
	t->peer = NULL;
}

static const struct peer_ops pt_ops = {
	.dispatch = pt_dispatch, .drain = pt_drain, .closed = pt_closed,
};

static int
peer_setup(void **state)
{
	struct peer_test *t = calloc(1, sizeof *t);
	int sv[2];

	assert_non_null(t);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	t->base = event_base_new();
	assert_non_null(t->base);
	t->peer = peer_new(t->base, sv[0], NULL, &pt_ops, t);
	assert_non_null(t->peer);
	t->client = sv[1];
	*state = t;
	return 0;
}

static int
peer_teardown(void **state)
{
	struct peer_test *t = *state;

	if (t->peer != NULL)
		peer_free(t->peer);
	close(t->client);
	event_base_free(t->base);
	free(t);
	return 0;
}

static void
pt_run(struct peer_test *t)
{
	/* everything that is ready, then return */
	event_base_loop(t->base, EVLOOP_NONBLOCK);
	event_base_loop(t->base, EVLOOP_NONBLOCK);
}

static void
pt_send(struct peer_test *t, const void *p, size_t n)
{
	assert_int_equal(write(t->client, p, n), (ssize_t)n);
	pt_run(t);
}

static size_t
ping_frame(uint8_t *buf, size_t len, uint32_t id)
{
	Hotmap__Ping ping = HOTMAP__PING__INIT;
	int n = frame_encode(HM_MSG_PING, id, 0, &ping.base, 0, buf, len);

	assert_true(n > 0);
	return (size_t)n;
}

static void
test_peer_truncated_frame_waits(void **state)
{
	struct peer_test *t = *state;
	Hotmap__Read r = HOTMAP__READ__INIT;
	uint8_t buf[128];
	size_t i;
	int n;

	r.handle = 1;
	r.offset = 1u << 30;
	r.length = 1u << 20;
	n = frame_encode(HM_MSG_READ, 9, 0, &r.base, 0, buf, sizeof buf);
	assert_true(n > HM_FRAME_HEADER_SIZE + 2);
	/* byte by byte: nothing is dispatched before the last byte */
	for (i = 0; i + 1 < (size_t)n; i++) {
		pt_send(t, buf + i, 1);
		assert_int_equal(t->frames, 0);
		assert_int_equal(t->closed, 0);
	}
	pt_send(t, buf + i, 1);
	assert_int_equal(t->frames, 1);
	assert_int_equal(t->last_type, HM_MSG_READ);
	assert_int_equal(t->last_id, 9);

	/* two frames in one write: both dispatched, in order */
	n = (int)ping_frame(buf, sizeof buf, 10);
	n += (int)ping_frame(buf + n, sizeof buf - (size_t)n, 11);
	pt_send(t, buf, (size_t)n);
	assert_int_equal(t->frames, 3);
	assert_int_equal(t->last_id, 11);

	/* a frame cut short by the client's exit: closed, not dispatched */
	n = (int)ping_frame(buf, sizeof buf, 12);
	pt_send(t, buf, HM_FRAME_HEADER_SIZE - 3);
	shutdown(t->client, SHUT_WR);
	pt_run(t);
	assert_int_equal(t->frames, 3);
	assert_int_equal(t->closed, 1);
	assert_non_null(strstr(t->why, "truncated frame"));
}

static void
test_peer_oversized_frame(void **state)
{
	struct peer_test *t = *state;
	struct hm_frame_header h = header(HM_MSG_OPEN, HM_FRAME_MAX_MESSAGE + 1);
	uint8_t b[HM_FRAME_HEADER_SIZE];

	frame_header_encode(&h, b);
	/* refused on the header alone, before any body is buffered */
	pt_send(t, b, sizeof b);
	assert_int_equal(t->frames, 0);
	assert_int_equal(t->closed, 1);
	assert_non_null(strstr(t->why, "oversized"));
}

static void
test_peer_unknown_type(void **state)
{
	struct peer_test *t = *state;
	struct hm_frame_header h = header(200, 0);
	uint8_t b[HM_FRAME_HEADER_SIZE];

	frame_header_encode(&h, b);
	pt_send(t, b, sizeof b);
	assert_int_equal(t->frames, 0);
	assert_int_equal(t->closed, 1);
	assert_non_null(strstr(t->why, "malformed"));
}

static void
test_peer_raw_bytes_from_client(void **state)
{
	struct peer_test *t = *state;
	struct hm_frame_header h = header(HM_MSG_READ_DATA, 0);
	uint8_t b[HM_FRAME_HEADER_SIZE];

	/* bulk bytes only ever flow to clients */
	h.raw_length = 4;
	h.flags = HM_FLAG_MORE;
	frame_header_encode(&h, b);
	pt_send(t, b, sizeof b);
	assert_int_equal(t->frames, 0);
	assert_int_equal(t->closed, 1);
}

static void
test_peer_wrong_version_gets_error(void **state)
{
	struct peer_test *t = *state;
	struct hm_frame_header h = header(HM_MSG_HELLO, 0), rh;
	uint8_t b[HM_FRAME_HEADER_SIZE], reply[1024];
	ProtobufCMessage *msg;
	Hotmap__Error *e;
	ssize_t n;

	h.version = 99;
	h.id = 77;
	frame_header_encode(&h, b);
	pt_send(t, b, sizeof b);
	pt_run(t);
	assert_int_equal(t->frames, 0);
	/* an ERROR frame came back, echoing the id, then the close */
	n = read(t->client, reply, sizeof reply);
	assert_true(n >= HM_FRAME_HEADER_SIZE);
	frame_header_decode(reply, &rh);
	assert_int_equal(rh.type, HM_MSG_ERROR);
	assert_int_equal(rh.id, 77);
	assert_int_equal(rh.version, HM_PROTO_VERSION);
	assert_int_equal(frame_decode(&rh, reply + HM_FRAME_HEADER_SIZE, &msg), 0);
	e = (Hotmap__Error *)msg;
	assert_int_equal(e->error, EPROTONOSUPPORT);
	assert_non_null(strstr(e->message, "99"));
	protobuf_c_message_free_unpacked(msg, NULL);
	assert_int_equal(t->closed, 1);
}

static void
test_peer_passed_descriptors(void **state)
{
	struct peer_test *t = *state;
	union {
		char buf[CMSG_SPACE(sizeof(int) * 2)];
		struct cmsghdr align;
	} control;
	struct msghdr mh = { 0 };
	struct cmsghdr *cm;
	struct iovec iov;
	uint8_t buf[64];
	int fds[2], got;

	assert_int_equal(pipe(fds), 0);
	iov.iov_base = buf;
	iov.iov_len = ping_frame(buf, sizeof buf, 1);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = control.buf;
	mh.msg_controllen = sizeof control.buf;
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof fds);
	memcpy(CMSG_DATA(cm), fds, sizeof fds);
	assert_int_equal(sendmsg(t->client, &mh, 0), (ssize_t)iov.iov_len);
	pt_run(t);
	assert_int_equal(t->frames, 1);
	/* claimed in the order sent; a third claim has none */
	got = peer_take_fd(t->peer);
	assert_true(got >= 0);
	assert_int_equal(write(fds[1], "x", 1), 1);
	close(got);
	got = peer_take_fd(t->peer);
	assert_true(got >= 0);
	close(got);
	assert_int_equal(peer_take_fd(t->peer), -EBADF);
	close(fds[0]);
	close(fds[1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_round_trip),
		cmocka_unit_test(test_header_checks),
		cmocka_unit_test(test_encode_decode),
		cmocka_unit_test(test_decode_truncated_and_garbage),
		cmocka_unit_test(test_encode_oversized_message),
		cmocka_unit_test_setup_teardown(test_peer_truncated_frame_waits, peer_setup, peer_teardown),
		cmocka_unit_test_setup_teardown(test_peer_oversized_frame, peer_setup, peer_teardown),
		cmocka_unit_test_setup_teardown(test_peer_unknown_type, peer_setup, peer_teardown),
		cmocka_unit_test_setup_teardown(test_peer_raw_bytes_from_client, peer_setup, peer_teardown),
		cmocka_unit_test_setup_teardown(test_peer_wrong_version_gets_error, peer_setup, peer_teardown),
		cmocka_unit_test_setup_teardown(test_peer_passed_descriptors, peer_setup, peer_teardown),
	};

	return cmocka_run_group_tests_name("frame", tests, NULL, NULL);
}
