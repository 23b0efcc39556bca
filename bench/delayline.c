/* SPDX-License-Identifier: MIT */
/*
 * delayline.c - a network link in user space for bench/netfs: two tun
 * devices, and every packet read from one written to the other after a
 * delay, at no more than a rate, both ways.  What the machine has when it
 * has no netem (sch_netem) but has tun: the two devices go into two
 * network namespaces, and a file system mounted across them sees a round
 * trip of twice the delay.
 *
 * Usage: delayline [--delay-us N] [--rate-mbit N] [--queue N] TUN_A TUN_B
 * Creates (or attaches to) the tun devices TUN_A and TUN_B (IFF_TUN,
 * IFF_NO_PI), prints "ready" on standard output once both are open, and
 * forwards until SIGTERM or SIGINT.  Each direction is a queue: a packet
 * leaves the link when it has been serialised at the rate after those
 * before it, and is delivered the delay after that; a packet that finds
 * the queue full is dropped (tail drop, as a router would).  One thread,
 * ppoll with nanosecond timeouts.
 *
 * What it must not do: touch anything but its two devices.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define SLOT_BYTES	2048u		/* a packet of an MTU of 1500, and headers */
#define QUEUE_DEFAULT	4096u		/* packets per direction */

struct packet {
	uint64_t due_ns;		/* when it is delivered */
	uint16_t len;
	uint8_t data[SLOT_BYTES];
};

/* One direction: packets read from in, written to out once due. */
struct lane {
	int in, out;
	struct packet *q;
	size_t cap, head, n;
	uint64_t link_free_ns;		/* when the link has sent what it holds */
	uint64_t forwarded, dropped, failed;
};

static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t
now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int
tun_open(const char *name)
{
	struct ifreq ifr;
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0) {
		fprintf(stderr, "delayline: /dev/net/tun: %s\n", strerror(errno));
		return -1;
	}
	memset(&ifr, 0, sizeof ifr);
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", name);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		fprintf(stderr, "delayline: %s: TUNSETIFF: %s\n", name, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* Reads what in has, queues it with its due time. */
static void
lane_take(struct lane *l, uint64_t delay_ns, uint64_t rate_bps)
{
	for (;;) {
		struct packet *p = &l->q[(l->head + l->n) % l->cap];
		struct packet spill;
		uint64_t now;
		ssize_t n;

		if (l->n == l->cap)
			p = &spill;	/* full: read it to drop it */
		n = read(l->in, p->data, sizeof p->data);
		if (n <= 0)
			return;	/* EAGAIN: all read */
		if (p == &spill) {
			l->dropped++;
			continue;
		}
		now = now_ns();
		if (l->link_free_ns < now)
			l->link_free_ns = now;
		if (rate_bps > 0)
			l->link_free_ns += (uint64_t)n * 8u * 1000000000u / rate_bps;
		p->len = (uint16_t)n;
		p->due_ns = l->link_free_ns + delay_ns;
		l->n++;
	}
}

/* Writes the packets that are due; the time the next one is, or 0. */
static uint64_t
lane_give(struct lane *l, uint64_t now)
{
	while (l->n > 0) {
		struct packet *p = &l->q[l->head];
		ssize_t w;

		if (p->due_ns > now)
			return p->due_ns;
		w = write(l->out, p->data, p->len);

		if (w < 0 && errno == EAGAIN)
			return now + 20000;	/* the device's queue is full: soon */
		if (w < 0)
			l->failed++;	/* the device is down, say: lost */
		else
			l->forwarded++;
		l->head = (l->head + 1) % l->cap;
		l->n--;
	}
	return 0;
}

static void
usage(FILE *out)
{
	fprintf(out,
		"Usage: delayline [--delay-us N] [--rate-mbit N] [--queue N] TUN_A TUN_B\n"
		"Forwards packets between two tun devices after a delay (default 1000 us each\n"
		"way), at most at a rate (default 1000 Mbit/s; 0: none), queueing up to N\n"
		"packets a direction (default %u).  Prints \"ready\" once both are open; stops\n"
		"on SIGTERM or SIGINT.  Used by bench/netfs.\n", QUEUE_DEFAULT);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "delay-us", required_argument, NULL, 'd' },
		{ "rate-mbit", required_argument, NULL, 'r' },
		{ "queue", required_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t delay_ns = 1000000u, rate_bps = 1000000000u;
	size_t cap = QUEUE_DEFAULT;
	struct lane lanes[2];
	struct sigaction sa;
	int a, b, c, i;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': delay_ns = strtoull(optarg, NULL, 10) * 1000u; break;
		case 'r': rate_bps = strtoull(optarg, NULL, 10) * 1000000u; break;
		case 'q': cap = strtoul(optarg, NULL, 10); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (argc - optind != 2 || cap == 0 || cap > 1000000) {
		usage(stderr);
		return 2;
	}
	a = tun_open(argv[optind]);
	b = a < 0 ? -1 : tun_open(argv[optind + 1]);
	if (a < 0 || b < 0)
		return 1;
	lanes[0] = (struct lane){ .in = a, .out = b, .cap = cap };
	lanes[1] = (struct lane){ .in = b, .out = a, .cap = cap };
	for (i = 0; i < 2; i++) {
		lanes[i].q = calloc(cap, sizeof *lanes[i].q);
		if (lanes[i].q == NULL) {
			fprintf(stderr, "delayline: out of memory\n");
			return 1;
		}
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	printf("ready\n");
	fflush(stdout);
	while (!stop) {
		struct pollfd pfd[2] = { { .fd = a, .events = POLLIN }, { .fd = b, .events = POLLIN } };
		uint64_t now = now_ns(), next = 0;
		struct timespec ts, *tp = NULL;

		for (i = 0; i < 2; i++) {
			uint64_t due = lane_give(&lanes[i], now);

			if (due != 0 && (next == 0 || due < next))
				next = due;
		}
		if (next != 0) {
			uint64_t wait = next > now ? next - now : 0;

			ts.tv_sec = (time_t)(wait / 1000000000u);
			ts.tv_nsec = (long)(wait % 1000000000u);
			tp = &ts;
		}
		if (ppoll(pfd, 2, tp, NULL) < 0 && errno != EINTR)
			break;
		for (i = 0; i < 2; i++)
			if (pfd[i].revents & POLLIN)
				lane_take(&lanes[i], delay_ns, rate_bps);
	}
	for (i = 0; i < 2; i++)
		fprintf(stderr, "delayline: %s -> %s: %llu forwarded, %llu dropped, %llu lost\n",
			argv[optind + i], argv[optind + 1 - i],
			(unsigned long long)lanes[i].forwarded, (unsigned long long)lanes[i].dropped,
			(unsigned long long)lanes[i].failed);
	return 0;
}
