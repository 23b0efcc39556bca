/* SPDX-License-Identifier: MIT */
/*
 * ctl_stat.c - hotmapctl stat PATH...: what the daemon holds of each file
 * (backend, why, size, handles, resident bytes), found by its identity.
 *
 * The daemon lists its files by the names its descriptors have now; the
 * user names a file by a path that may be a symlink, relative, or a new
 * name after a rename.  So the path is stat(2)ed here and matched on st_dev
 * and st_ino, never on the name.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hotmapctl/ctl.h"
#include "proto/size.h"

const struct ctl_option ctl_stat_options[] = {
	[STAT_JSON] = { "json", 'j', CTL_FLAG, NULL, NULL, NULL, "as a JSON array" },
	{ NULL },
};

/* The cached version of the file (dev, ino) in rows: the one new opens
 * find, before a stale one still read by old handles.  NULL: not cached. */
static const struct file_row *
stat_find(const struct file_rows *rows, uint64_t dev, uint64_t ino)
{
	const struct file_row *found = NULL;
	size_t i;

	for (i = 0; i < rows->n; i++) {
		const struct hm_file_info *f = &rows->v[i].info;

		if (f->dev != dev || f->ino != ino)
			continue;
		if (!f->stale)
			return &rows->v[i];
		found = &rows->v[i];
	}
	return found;
}

static void
stat_print(const char *path, const struct file_row *r)
{
	const struct hm_file_info *f = &r->info;
	const struct hm_read_ways *w = &r->ways;
	char a[SIZE_HUMAN_LEN], b[SIZE_HUMAN_LEN];

	printf("%s:\n", path);
	if (strcmp(path, f->path) != 0)
		printf("  name in daemon  %s\n", f->path);
	printf("  size            %" PRIu64 " (%s)\n", f->size, size_human(f->size, a, sizeof a));
	printf("  backend         %s\n", ctl_backend_name(f->backend));
	printf("  reason          %s\n", ctl_reason_name(f->reason));
	if (w->fs[0] != '\0')
		printf("  file system     %s%s\n", w->fs, w->network ? " (network)" : "");
	if (f->reason == HM_REASON_NETWORK_FS && w->copy_bytes > 0)
		printf("  why             %s file system (%s): read from hotmapd's copy in memory "
		       "(%s, filled %" PRIu64 " s ago)\n",
		       w->network ? "network" : "user-space (FUSE)", w->fs[0] ? w->fs : "?",
		       size_human(w->copy_bytes, a, sizeof a), w->copy_age_ms / 1000u);
	else if (f->reason == HM_REASON_NETWORK_FS)
		printf("  why             %s file system (%s): %s\n",
		       w->network ? "network" : "user-space (FUSE)", w->fs[0] ? w->fs : "?",
		       f->backend == HM_BACKEND_MMAP ? "mapped, as network-fs = mmap asks" :
		       "read with pread, never mapped");
	printf("  handles         %u (%u read directly)\n", f->handles, f->direct_handles);
	if (f->resident_pct < 0)
		printf("  resident        unknown\n");
	else
		printf("  resident        %" PRIu64 " (%s, %d%%)\n", f->resident_bytes,
		       size_human(f->resident_bytes, a, sizeof a), f->resident_pct);
	printf("  hits            %" PRIu64 "\n", f->hits);
	printf("  read            %s by the daemon, %s directly (%" PRIu64 " reads)\n",
	       size_human(f->bytes, a, sizeof a), size_human(f->direct_bytes, b, sizeof b),
	       f->direct_reads);
	printf("  idle            %.1f s\n", (double)f->idle_ms / 1000.0);
	if (w->private_entry)
		printf("  private         yes: read through its client's descriptor, for that handle alone\n");
	if (f->stale)
		printf("  stale           yes: replaced; freed at its last close\n");
}

int
ctl_stat(hm_client *c, const struct ctl_cmdline *cl)
{
	struct file_rows rows = { 0 }, found = { 0 };
	int rc = 0, i;

	if (hm_files_ways(c, file_rows_collect, &rows) < 0 || rows.failed) {
		ctl_report("stat", rows.failed ? ENOMEM : errno);
		file_rows_free(&rows);
		return 1;
	}
	found.v = calloc((size_t)cl->argc, sizeof *found.v);
	if (found.v == NULL) {
		ctl_report("stat", ENOMEM);
		file_rows_free(&rows);
		return 1;
	}
	for (i = 0; i < cl->argc; i++) {
		const struct file_row *r;
		struct stat st;

		if (stat(cl->argv[i], &st) < 0) {
			ctl_report(cl->argv[i], errno);
			rc = 1;
			continue;
		}
		r = stat_find(&rows, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
		if (r == NULL) {
			/* not an error of the command: an answer, and exit 1
			 * tells a script */
			if (cl->given[STAT_JSON])
				fprintf(stderr, "hotmapctl: %s: not cached\n", cl->argv[i]);
			else
				printf("%s: not cached\n", cl->argv[i]);
			rc = 1;
			continue;
		}
		if (cl->given[STAT_JSON])
			found.v[found.n++] = *r;	/* borrowed: rows frees */
		else
			stat_print(cl->argv[i], r);
	}
	if (cl->given[STAT_JSON])
		files_print_json(&found);
	free(found.v);
	file_rows_free(&rows);
	return rc;
}
