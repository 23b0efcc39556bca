/* SPDX-License-Identifier: MIT */
/*
 * test_ctl_prometheus.c - hotmapctl's Prometheus text (hotmapctl/ctl_output.c)
 * from stats given by hand: what a daemon too old to send kinds and help
 * gets, families printed whole whatever the daemon's order, and units
 * scaled exactly.  tests/test_prometheus.sh checks a real daemon's with
 * promtool.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hotmapctl/ctl.h"

struct stat_in {
	const char *key;
	int kind;
	uint64_t value;
	const char *text;
	const char *help;
};

/* The Prometheus text hotmapctl prints for stats, as a string to free. */
static char *
prometheus_of(const struct stat_in *in, size_t n)
{
	struct stats_out *o = stats_out_new(STATS_FORMAT_PROMETHEUS);
	FILE *tmp = tmpfile();
	int saved;
	long len;
	char *s;
	size_t i;

	assert_non_null(o);
	assert_non_null(tmp);
	for (i = 0; i < n; i++) {
		struct hm_stat_entry e = {
			.key = in[i].key, .kind = in[i].kind, .value = in[i].value,
			.text = in[i].text != NULL ? in[i].text : "",
			.help = in[i].help != NULL ? in[i].help : "",
		};

		stats_out_stat(&e, o);
	}
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	assert_true(saved >= 0);
	assert_true(dup2(fileno(tmp), STDOUT_FILENO) >= 0);
	assert_int_equal(stats_out_finish(o, true), 0);
	fflush(stdout);
	assert_true(dup2(saved, STDOUT_FILENO) >= 0);
	close(saved);
	len = ftell(tmp);
	assert_true(len >= 0);
	s = calloc(1, (size_t)len + 1);
	assert_non_null(s);
	rewind(tmp);
	assert_int_equal(fread(s, 1, (size_t)len, tmp), (size_t)len);
	fclose(tmp);
	return s;
}

/* A daemon older than Stat.kind and Stat.help: every family still gets
 * HELP and TYPE; the families known by name keep their type; the rest is
 * untyped, in base units all the same. */
static void
test_old_daemon(void **state)
{
	static const struct stat_in in[] = {
		{ "version", HM_STAT_UNKNOWN, 0, "0.0.9", NULL },
		{ "uptime_us", HM_STAT_UNKNOWN, 2500000, NULL, NULL },
		{ "requests_open", HM_STAT_UNKNOWN, 3, NULL, NULL },
		{ "latency_open_count", HM_STAT_UNKNOWN, 2, NULL, NULL },
		{ "latency_open_p50_ns", HM_STAT_UNKNOWN, 1500, NULL, NULL },
	};
	char *s = prometheus_of(in, sizeof in / sizeof in[0]);

	(void)state;
	assert_string_equal(s,
		"# HELP hotmap_uptime_seconds hotmapd's uptime_us (no description from the daemon).\n"
		"# TYPE hotmap_uptime_seconds untyped\n"
		"hotmap_uptime_seconds 2.5\n"
		"# HELP hotmap_requests_total hotmapd's requests_open (no description from the daemon).\n"
		"# TYPE hotmap_requests_total counter\n"
		"hotmap_requests_total{type=\"open\"} 3\n"
		"# HELP hotmap_request_duration_seconds hotmapd's latency_open_count (no description "
		"from the daemon).\n"
		"# TYPE hotmap_request_duration_seconds summary\n"
		"hotmap_request_duration_seconds_count{op=\"open\"} 2\n"
		"hotmap_request_duration_seconds{op=\"open\",quantile=\"0.5\"} 0.0000015\n"
		"# HELP hotmap_info Versions of hotmapd and its libraries, as labels; always 1.\n"
		"# TYPE hotmap_info gauge\n"
		"hotmap_info{version=\"0.0.9\"} 1\n");
	free(s);
}

/* A family's lines stay together even when its keys do not; the HELP is
 * its first key's, escaped; a counter ends in _total once. */
static void
test_families_whole(void **state)
{
	static const struct stat_in in[] = {
		{ "requests_open", HM_STAT_COUNTER, 1, NULL, "Requests, by type." },
		{ "clients_total", HM_STAT_COUNTER, 7, NULL, "Accepted \\ with\nnewline." },
		{ "bytes_pread", HM_STAT_COUNTER, 10, NULL, "By pread." },
		{ "requests_read", HM_STAT_COUNTER, 2, NULL, "Requests, by type." },
		{ "bytes_mmap", HM_STAT_COUNTER, 20, NULL, "By mmap." },
		{ "clients", HM_STAT_GAUGE, 1, NULL, "Now." },
	};
	char *s = prometheus_of(in, sizeof in / sizeof in[0]);

	(void)state;
	assert_string_equal(s,
		"# HELP hotmap_requests_total Requests, by type.\n"
		"# TYPE hotmap_requests_total counter\n"
		"hotmap_requests_total{type=\"open\"} 1\n"
		"hotmap_requests_total{type=\"read\"} 2\n"
		"# HELP hotmap_clients_total Accepted \\\\ with\\nnewline.\n"
		"# TYPE hotmap_clients_total counter\n"
		"hotmap_clients_total 7\n"
		"# HELP hotmap_storage_read_bytes_total By pread.\n"
		"# TYPE hotmap_storage_read_bytes_total counter\n"
		"hotmap_storage_read_bytes_total{backend=\"pread\"} 10\n"
		"hotmap_storage_read_bytes_total{backend=\"mmap\"} 20\n"
		"# HELP hotmap_clients Now.\n"
		"# TYPE hotmap_clients gauge\n"
		"hotmap_clients 1\n");
	free(s);
}

/* Nanoseconds and microseconds to seconds, exact to the last digit and
 * with no trailing zeros; a summary never timed has NaN quantiles; a key
 * that is no metric name is made one. */
static void
test_units_exact(void **state)
{
	static const struct stat_in in[] = {
		{ "latency_read_count", HM_STAT_COUNTER, 0, NULL, "L." },
		{ "latency_read_sum_ns", HM_STAT_COUNTER, 0, NULL, "L." },
		{ "latency_read_p999_ns", HM_STAT_GAUGE, 0, NULL, "L." },
		{ "latency_open_count", HM_STAT_COUNTER, 3, NULL, "L." },
		{ "latency_open_sum_ns", HM_STAT_COUNTER, UINT64_C(18446744073709551615), NULL, "L." },
		{ "latency_open_p90_ns", HM_STAT_GAUGE, 1, NULL, "L." },
		{ "poll_us", HM_STAT_GAUGE, 1000000, NULL, "P." },
		{ "odd-key.x", HM_STAT_GAUGE, 5, NULL, "O." },
	};
	char *s = prometheus_of(in, sizeof in / sizeof in[0]);

	(void)state;
	assert_string_equal(s,
		"# HELP hotmap_request_duration_seconds L.\n"
		"# TYPE hotmap_request_duration_seconds summary\n"
		"hotmap_request_duration_seconds_count{op=\"read\"} 0\n"
		"hotmap_request_duration_seconds_sum{op=\"read\"} 0\n"
		"hotmap_request_duration_seconds{op=\"read\",quantile=\"0.999\"} NaN\n"
		"hotmap_request_duration_seconds_count{op=\"open\"} 3\n"
		"hotmap_request_duration_seconds_sum{op=\"open\"} 18446744073.709551615\n"
		"hotmap_request_duration_seconds{op=\"open\",quantile=\"0.9\"} 0.000000001\n"
		"# HELP hotmap_poll_seconds P.\n"
		"# TYPE hotmap_poll_seconds gauge\n"
		"hotmap_poll_seconds 1\n"
		/* a byte a name may not hold becomes _ */
		"# HELP hotmap_odd_key_x O.\n"
		"# TYPE hotmap_odd_key_x gauge\n"
		"hotmap_odd_key_x 5\n");
	free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_old_daemon),
		cmocka_unit_test(test_families_whole),
		cmocka_unit_test(test_units_exact),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
