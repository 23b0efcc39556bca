/* SPDX-License-Identifier: MIT */
/*
 * netfs_fixture.c - hotmapd with faultfs mounted as fuse.sshfs beneath its
 * root, set up and torn down for test_netfs.c and test_netfs_copy.c.
 * netfs_fixture.h says what each call does and what it must not do.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/netfs_fixture.h"

/* beneath the daemon's root, so that HM_O_PATH may open it */
static int
mount_sshfs(struct netfs_fixture *fx, char *why, size_t whylen)
{
	if (faultfs_start(&fx->fs, fx->h->root, "sshfs", fx->arg, why, whylen) < 0)
		return -1;
	assert_true(snprintf(fx->data, sizeof fx->data, "%s/data", fx->fs.mnt) <
		    (int)sizeof fx->data);
	return 0;
}

void
netfs_mount(struct netfs_fixture *fx)
{
	char why[1024];

	if (mount_sshfs(fx, why, sizeof why) < 0)
		fail_msg("%s", why);
}

void
netfs_unmount(struct netfs_fixture *fx)
{
	faultfs_close_control(&fx->fs);
	faultfs_unmount(&fx->fs);
	assert_int_equal(faultfs_reap(&fx->fs), 0);
}

int
netfs_setup(void **state, const struct harness_opts *opts, unsigned size, unsigned seed)
{
	struct netfs_fixture *fx = calloc(1, sizeof *fx);
	char why[1024];

	assert_non_null(fx);
	fx->h = harness_start(opts);
	snprintf(fx->arg, sizeof fx->arg, "data:%u:%u", size, seed);
	if (mount_sshfs(fx, why, sizeof why) < 0) {
		harness_stop(fx->h);
		free(fx);
		fail_msg("%s", why);
	}
	*state = fx;
	return 0;
}

int
netfs_teardown(void **state)
{
	struct netfs_fixture *fx = *state;
	int status;

	harness_free_buffers();
	faultfs_close_control(&fx->fs);
	faultfs_unmount(&fx->fs);
	harness_stop(fx->h);
	status = faultfs_reap(&fx->fs);
	free(fx);
	assert_int_equal(status, 0);
	return 0;
}

bool
netfs_reads_copy(hm_file *f)
{
	struct hm_stat st;

	assert_int_equal(hm_stat(f, &st), 0);
	return strncmp(st.reason_text, NETFS_COPY_TEXT, strlen(NETFS_COPY_TEXT)) == 0;
}
