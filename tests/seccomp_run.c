/* SPDX-License-Identifier: MIT */
/*
 * seccomp_run.c - runs a command under a seccomp filter that allows only
 * the system calls whose numbers it is given and kills the process at any
 * other: tests/test_systemd_unit.sh runs hotmapd under hotmapd.service's
 * SystemCallFilter= this way, without systemd.  Killing (where the unit
 * answers EPERM) makes a call the unit would refuse loud: an EPERM that
 * hotmapd shrugs off (mincore, setpriority) would pass unseen.
 *
 * Usage: seccomp_run NR,NR,... COMMAND [ARG...]
 * Exit 77 on an architecture it does not know (the test skips).
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>

#if defined(__x86_64__)
#define NATIVE_ARCH	AUDIT_ARCH_X86_64
#define X32_BIT		0x40000000u	/* x32 calls: not native (SystemCallArchitectures=) */
#elif defined(__aarch64__)
#define NATIVE_ARCH	AUDIT_ARCH_AARCH64
#endif

#define MAX_CALLS	1024

int
main(int argc, char **argv)
{
#ifndef NATIVE_ARCH
	(void)argc;
	(void)argv;
	fprintf(stderr, "seccomp_run: unknown architecture\n");
	return 77;
#else
	static struct sock_filter prog[2 * MAX_CALLS + 8];
	struct sock_fprog fprog;
	const struct sock_filter kill = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	size_t n = 0, calls = 0;
	char *list, *tok, *save = NULL;

	if (argc < 3) {
		fprintf(stderr, "usage: seccomp_run NR,NR,... COMMAND [ARG...]\n");
		return 2;
	}
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						 offsetof(struct seccomp_data, arch));
	prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0);
	prog[n++] = kill;
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						 offsetof(struct seccomp_data, nr));
#ifdef X32_BIT
	prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, X32_BIT, 0, 1);
	prog[n++] = kill;
#endif
	/* one compare and one return per call: every jump stays short */
	list = argv[1];
	for (tok = strtok_r(list, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long nr = strtoul(tok, &end, 10);

		if (*tok == '\0' || *end != '\0' || nr > 0xffffffffu || ++calls > MAX_CALLS) {
			fprintf(stderr, "seccomp_run: bad call number '%s'\n", tok);
			return 2;
		}
		prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (__u32)nr, 0, 1);
		prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	}
	prog[n++] = kill;
	fprog.len = (unsigned short)n;
	fprog.filter = prog;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) < 0) {
		fprintf(stderr, "seccomp_run: cannot load the filter: %s\n", strerror(errno));
		return 1;
	}
	execvp(argv[2], argv + 2);
	/* not reached unless execve is left out of the list */
	fprintf(stderr, "seccomp_run: %s: %s\n", argv[2], strerror(errno));
	return 127;
#endif
}
