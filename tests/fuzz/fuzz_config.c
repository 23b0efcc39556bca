/* SPDX-License-Identifier: MIT */
/*
 * fuzz_config.c - libFuzzer target: hotmapd.conf and the command line
 * through conf_load (daemon/config/conf.c and its parser).
 *
 * The input up to its first NUL byte is the file; it is written to a memfd
 * and loaded through /proc/self/fd, so no file is left behind and each run
 * sees only its own bytes.  What follows the NUL, if anything, is the
 * command line: one "key=value" per line, given as --key value.
 *
 * A load either succeeds with a complete configuration or fails with at
 * least one error naming the file or the option; whatever it kept must
 * print (conf_foreach) and free without complaint.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/config/conf.h"
#include "tests/fuzz/fuzz.h"

static void
count_item(const char *key, const char *value, const char *source, void *arg)
{
	size_t *n = arg;

	check(key != NULL && key[0] != '\0' && value != NULL && source != NULL);
	check(conf_key_lookup(key) >= 0);
	(*n)++;
}

/* "key=value" lines into args; the strings live in buf. */
static void
command_line(char *buf, struct hm_config_args *args)
{
	char *save = NULL, *line;

	for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');

		if (eq == NULL)
			continue;
		*eq = '\0';
		/* unknown keys are refused here, as getopt would */
		if (conf_args_add(args, line, eq + 1) == -EINVAL)
			check(conf_key_lookup(line) < 0);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, '\0', size);
	size_t file_len = nul != NULL ? (size_t)(nul - data) : size;
	struct hm_config_args args = { 0 };
	struct hm_config_errors errs = { 0 };
	struct hm_config cfg;
	char path[64], *rest = NULL, value[256];
	uint64_t n;
	size_t i, items = 0;
	int fd, rc, k;

	fd = memfd_create("hotmapd.conf", MFD_CLOEXEC);
	check(fd >= 0);
	check(write(fd, data, file_len) == (ssize_t)file_len);
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	args.path = path;
	if (nul != NULL) {
		rest = strndup((const char *)nul + 1, size - file_len - 1);
		check(rest != NULL);
		command_line(rest, &args);
		/* the size parser on its own, on the first option's value */
		if (args.n > 0)
			(void)conf_parse_size(args.v[0].value, &n);
	}

	rc = conf_load(&cfg, &args, &errs);
	check(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
	if (rc == 0) {
		check(errs.n == 0);
		check(cfg.path != NULL && strcmp(cfg.path, path) == 0);
		check(cfg.socket_path != NULL);
		check(cfg.socket_mode <= 0777);
		conf_foreach(&cfg, count_item, &items);
		check(items >= HM_CONFIG__NKEYS);
		for (k = 0; k < HM_CONFIG__NKEYS; k++) {
			char src[128];

			/* a small buffer: values are cut, never overrun */
			conf_value_text(&cfg, (enum hm_config_key)k, value, 8);
			check(strlen(value) < 8);
			conf_value_text(&cfg, (enum hm_config_key)k, value, sizeof value);
			conf_source_text(&cfg, cfg.source[k], src, sizeof src);
		}
		conf_clear(&cfg);
	} else if (rc == -EINVAL) {
		check(errs.n > 0);
		for (i = 0; i < errs.n; i++)
			check(errs.v[i] != NULL && errs.v[i][0] != '\0');
		/* a cleared configuration: clearing it again is harmless */
		check(cfg.path == NULL && cfg.socket_path == NULL && cfg.roots.n == 0);
		conf_clear(&cfg);
	}
	conf_errors_clear(&errs);
	conf_args_clear(&args);
	free(rest);
	close(fd);
	return 0;
}
