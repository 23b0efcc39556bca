/* SPDX-License-Identifier: MIT */
/*
 * server.c - hotmapd and nginx as children of hmbench: started on sockets
 * in the run directory, waited for until they answer, stopped with SIGTERM
 * at the end.  Both get PR_SET_PDEATHSIG, so neither outlives hmbench even
 * when it is killed.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "hotmap.h"

#define SERVER_WAIT_S	10.0

static void
sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static bool
sock_answers(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, rc;

	if (strlen(path) >= sizeof sa.sun_path)
		return false;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
	close(fd);
	return rc == 0;
}

/* Forks and execs argv with stdout and stderr appended to log. */
static pid_t
spawn(char *const argv[], const char *log)
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

		prctl(PR_SET_PDEATHSIG, SIGTERM);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		execv(argv[0], argv);
		fprintf(stderr, "hmbench: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	return pid;
}

static void
stop_child(pid_t *pid, int sig)
{
	double deadline;

	if (*pid <= 0)
		return;
	kill(*pid, sig);
	deadline = now_s() + 5;
	while (waitpid(*pid, NULL, WNOHANG) == 0) {
		if (now_s() > deadline) {
			kill(*pid, SIGKILL);
			waitpid(*pid, NULL, 0);
			break;
		}
		sleep_ms(5);
	}
	*pid = 0;
}

static void
print_log_tail(const char *log)
{
	char line[512];
	FILE *fp = fopen(log, "re");

	if (fp == NULL)
		return;
	while (fgets(line, sizeof line, fp) != NULL)
		fprintf(stderr, "  | %s", line);
	fclose(fp);
}

/* --- hotmapd --------------------------------------------------------------- */

int
hotmapd_start(void)
{
	char log[PATH_MAX + 16];
	/* --poll-us: the daemon polls a client's ring for 50 us after each
	 * request, whatever the cores, so that the polling rows measure the
	 * mode; clients without a ring never make it poll. */
	char *argv[] = { (char *)bench.o.hotmapd, "--foreground", "--socket", bench.hotmap_sock,
			 "--poll-us", "50", NULL };
	double deadline;
	pid_t pid;

	xsnprintf(bench.hotmap_sock, sizeof bench.hotmap_sock, "%s/hotmapd.sock", bench.run_dir);
	snprintf(log, sizeof log, "%s/hotmapd.log", bench.run_dir);
	pid = spawn(argv, log);
	if (pid < 0)
		return -errno;
	deadline = now_s() + SERVER_WAIT_S;
	for (;;) {
		hm_client *c;

		if (waitpid(pid, NULL, WNOHANG) == pid) {
			bench_log("hotmapd (%s) exited at start-up; its log:", bench.o.hotmapd);
			print_log_tail(log);
			return -ECHILD;
		}
		c = hm_connect(bench.hotmap_sock);
		if (c != NULL) {
			int rc = hm_ping(c, NULL);

			hm_disconnect(c);
			if (rc == 0)
				break;
		}
		if (now_s() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			bench_log("hotmapd did not answer on %s within %.0f s", bench.hotmap_sock,
				  SERVER_WAIT_S);
			return -ETIMEDOUT;
		}
		sleep_ms(5);
	}
	bench.hotmapd_pid = pid;
	bench.hotmapd_starts++;
	return 0;
}

void
hotmapd_stop(void)
{
	stop_child(&bench.hotmapd_pid, SIGTERM);
}

int
hotmapd_restart(void)
{
	hotmapd_stop();
	return hotmapd_start();
}

/* --- nginx ------------------------------------------------------------------ */

static int
nginx_write_conf(const char *prefix, const char *conf)
{
	FILE *fp = fopen(conf, "we");

	if (fp == NULL)
		return -errno;
	fprintf(fp,
		"# written by hmbench: a private nginx for the benchmark, not a service\n"
		"%s"
		"daemon off;\n"
		"master_process on;\n"
		"worker_processes auto;\n"
		"worker_rlimit_nofile 16384;\n"
		"pid %s/nginx.pid;\n"
		"error_log %s/error.log warn;\n"
		"events { worker_connections 4096; }\n"
		"http {\n"
		"  access_log off;\n"
		"  sendfile on;\n"
		"  tcp_nopush on;\n"
		"  open_file_cache max=20000 inactive=10m;\n"
		"  open_file_cache_valid 10m;\n"
		"  open_file_cache_errors on;\n"
		"  keepalive_requests 1000000000;\n"
		"  keepalive_timeout 600s;\n"
		"  client_body_temp_path %s/tmp-body;\n"
		"  proxy_temp_path %s/tmp-proxy;\n"
		"  fastcgi_temp_path %s/tmp-fastcgi;\n"
		"  uwsgi_temp_path %s/tmp-uwsgi;\n"
		"  scgi_temp_path %s/tmp-scgi;\n"
		"  types { }\n"
		"  default_type application/octet-stream;\n"
		"  etag off;\n"
		"  server {\n"
		"    listen unix:%s;\n"
		"    root %s;\n"
		"    location / { }\n"
		"  }\n"
		"}\n",
		/* As root, workers would switch to an unprivileged user that may
		 * not reach the data directory. */
		geteuid() == 0 ? "user root;\n" : "", prefix, prefix, prefix, prefix, prefix, prefix,
		prefix, bench.nginx_sock, bench.data_dir);
	return fclose(fp) == 0 ? 0 : -errno;
}

int
nginx_start(void)
{
	char prefix[PATH_MAX], conf[PATH_MAX + 16], log[PATH_MAX + 16], errlog[PATH_MAX + 16];
	char *argv[] = { (char *)bench.o.nginx, "-p", prefix, "-c", conf, "-e", errlog, NULL };
	double deadline;
	pid_t pid;
	int rc;

	xsnprintf(prefix, sizeof prefix, "%s/nginx", bench.run_dir);
	snprintf(conf, sizeof conf, "%s/nginx.conf", prefix);
	snprintf(log, sizeof log, "%s/nginx.out", prefix);
	snprintf(errlog, sizeof errlog, "%s/error.log", prefix);
	xsnprintf(bench.nginx_sock, sizeof bench.nginx_sock, "%s/nginx.sock", bench.run_dir);
	rc = mkdir_p(prefix, 0755);
	if (rc < 0)
		return rc;
	rc = nginx_write_conf(prefix, conf);
	if (rc < 0)
		return rc;
	pid = spawn(argv, log);
	if (pid < 0)
		return -errno;
	deadline = now_s() + SERVER_WAIT_S;
	while (!sock_answers(bench.nginx_sock)) {
		if (waitpid(pid, NULL, WNOHANG) == pid) {
			bench_log("nginx exited at start-up; its output and error log:");
			print_log_tail(log);
			print_log_tail(errlog);
			return -ECHILD;
		}
		if (now_s() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			bench_log("nginx did not answer on %s within %.0f s", bench.nginx_sock, SERVER_WAIT_S);
			return -ETIMEDOUT;
		}
		sleep_ms(5);
	}
	bench.nginx_pid = pid;
	return 0;
}

void
nginx_stop(void)
{
	/* SIGTERM: fast shutdown of master and workers */
	stop_child(&bench.nginx_pid, SIGTERM);
}

long
nginx_status_kib(const char *field)
{
	char path[96], buf[4096], *p, *end;
	long sum, v;
	ssize_t n;
	int fd;

	if (bench.nginx_pid <= 0)
		return -1;
	sum = proc_status_kib(bench.nginx_pid, field);
	if (sum < 0)
		return -1;
	snprintf(path, sizeof path, "/proc/%ld/task/%ld/children", (long)bench.nginx_pid,
		 (long)bench.nginx_pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sum;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return sum;
	buf[n] = '\0';
	for (p = buf;; p = end) {
		long pid = strtol(p, &end, 10);

		if (end == p)
			break;
		v = proc_status_kib((pid_t)pid, field);
		if (v > 0)
			sum += v;
	}
	return sum;
}

void
servers_kill(void)
{
	/* async-signal-safe: kill only */
	if (bench.hotmapd_pid > 0)
		kill(bench.hotmapd_pid, SIGTERM);
	if (bench.nginx_pid > 0)
		kill(bench.nginx_pid, SIGTERM);
}
