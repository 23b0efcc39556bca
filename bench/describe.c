/* SPDX-License-Identifier: MIT */
/*
 * describe.c - how a run was made, for its report: the machine, its
 * kernel and load, DAMON, the kernel's reclaim counters, nginx's version,
 * the data's file system, and paths shortened to their last component
 * (a path of this machine says nothing to a reader).
 */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "hotmap.h"

/* ".../name" for an absolute path, the argument itself otherwise. */
const char *
short_path(const char *arg)
{
	static char buf[8][PATH_MAX];
	static unsigned next;
	const char *slash = strrchr(arg, '/');
	char *b;

	if (arg[0] != '/' || slash == NULL)
		return arg;
	b = buf[next++ % 8];
	snprintf(b, PATH_MAX, ".../%s", slash + 1);
	return b;
}

void
print_machine(int argc, char **argv)
{
	char line[512], model[256] = "unknown", args[1024] = "", date[64];
	long mem_kib = -1;
	struct utsname u;
	time_t now = time(NULL);
	double load[3] = { 0, 0, 0 };
	bool virt = false;
	size_t off = 0;
	FILE *fp;
	int i;

	strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
	report_meta("date", "%s", date);
	fp = fopen("/proc/cpuinfo", "re");
	if (fp != NULL) {
		bool have_model = false;

		while (fgets(line, sizeof line, fp) != NULL) {
			if (!have_model && strncmp(line, "model name", 10) == 0) {
				char *p = strchr(line, ':');

				if (p != NULL) {
					snprintf(model, sizeof model, "%s", p + 2);
					model[strcspn(model, "\n")] = '\0';
					have_model = true;
				}
			} else if (strncmp(line, "flags", 5) == 0 && strstr(line, " hypervisor") != NULL) {
				virt = true;
			}
		}
		fclose(fp);
	}
	fp = fopen("/proc/meminfo", "re");
	if (fp != NULL) {
		while (fgets(line, sizeof line, fp) != NULL)
			if (sscanf(line, "MemTotal: %ld kB", &mem_kib) == 1)
				break;
		fclose(fp);
	}
	uname(&u);
	getloadavg(load, 3);
	report_meta("machine", "%ld CPUs (%s), %.1f GiB memory%s", sysconf(_SC_NPROCESSORS_ONLN), model,
		    (double)mem_kib / 1024 / 1024, virt ? ", virtual machine (cpuinfo: hypervisor)" : "");
	report_meta("kernel", "%s %s %s", u.sysname, u.release, u.machine);
	report_meta("load", "%.2f %.2f %.2f at start (1, 5, 15 min)", load[0], load[1], load[2]);
	if (bench.o.source != NULL)
		report_meta("source", "%s", bench.o.source);
	report_meta("versions", "libhotmap %s; compiler %s; nginx: %s", hm_version(), __VERSION__,
		    bench.o.nginx != NULL ? bench.nginx_version : "not used");
	/* Paths of this machine say nothing to a reader: last components only. */
	for (i = 0; i < argc && off < sizeof args; i++)
		off += (size_t)snprintf(args + off, sizeof args - off, "%s%s", i ? " " : "",
					i == 0 ? "hmbench" : short_path(argv[i]));
	report_meta("command", "%s", args);
}

/* Sum of the /proc/vmstat counters whose names start with prefix. */
long long
vmstat_sum(const char *prefix)
{
	char name[64];
	long long v, sum = 0;
	FILE *fp = fopen("/proc/vmstat", "re");

	if (fp == NULL)
		return -1;
	while (fscanf(fp, "%63s %lld", name, &v) == 2)
		if (strncmp(name, prefix, strlen(prefix)) == 0)
			sum += v;
	fclose(fp);
	return sum;
}

/* DAMON-based reclaim changes what "hot" means: say whether it runs. */
void
print_damon(void)
{
	const char *base = "/sys/kernel/mm/damon/admin/kdamonds";
	char path[PATH_MAX], state[32] = "", action[64] = "", out[256] = "";
	size_t off = 0;
	unsigned k, sc;
	FILE *fp;

	for (k = 0; k < 8; k++) {
		snprintf(path, sizeof path, "%s/%u/state", base, k);
		fp = fopen(path, "re");
		if (fp == NULL)
			break;
		if (fgets(state, sizeof state, fp) == NULL)
			state[0] = '\0';
		fclose(fp);
		state[strcspn(state, "\n")] = '\0';
		off += (size_t)snprintf(out + off, sizeof out - off, "%skdamond %u %s", k ? "; " : "", k, state);
		for (sc = 0; sc < 8 && off < sizeof out; sc++) {
			snprintf(path, sizeof path, "%s/%u/contexts/0/schemes/%u/action", base, k, sc);
			fp = fopen(path, "re");
			if (fp == NULL)
				break;
			if (fgets(action, sizeof action, fp) == NULL)
				action[0] = '\0';
			fclose(fp);
			action[strcspn(action, "\n")] = '\0';
			off += (size_t)snprintf(out + off, sizeof out - off, ", scheme %s", action);
		}
		if (off >= sizeof out)
			break;
	}
	if (off > 0)
		report_meta("damon", "%s", out);
}

void
nginx_version(void)
{
	char cmd[PATH_MAX + 16], line[256];
	FILE *fp;

	snprintf(bench.nginx_version, sizeof bench.nginx_version, "unknown");
	snprintf(cmd, sizeof cmd, "'%s' -v 2>&1", bench.o.nginx);
	fp = popen(cmd, "r");
	if (fp == NULL)
		return;
	if (fgets(line, sizeof line, fp) != NULL) {
		char *p = strstr(line, "nginx/");

		line[strcspn(line, "\n")] = '\0';
		snprintf(bench.nginx_version, sizeof bench.nginx_version, "%.100s", p != NULL ? p : line);
	}
	pclose(fp);
}

/* The file system type of path, as the mount table names it. */
const char *
fs_name(const char *path)
{
	static char type[64];
	char line[1024], dev[256], mnt[512], fst[64];
	size_t best = 0;
	FILE *fp = fopen("/proc/self/mounts", "re");

	snprintf(type, sizeof type, "an unknown file system");
	if (fp == NULL)
		return type;
	while (fgets(line, sizeof line, fp) != NULL) {
		size_t l;

		if (sscanf(line, "%255s %511s %63s", dev, mnt, fst) != 3)
			continue;
		l = strlen(mnt);
		if (strncmp(path, mnt, l) == 0 && (path[l] == '/' || path[l] == '\0' || l == 1) &&
		    l >= best) {
			best = l;
			snprintf(type, sizeof type, "%s", fst);
		}
	}
	fclose(fp);
	return type;
}
