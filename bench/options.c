/* SPDX-License-Identifier: MIT */
/*
 * options.c - hmbench's command line: defaults, --help and the options into
 * bench.o.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench/bench.h"
#include "bench/workload.h"

void
print_options(void)
{
	const struct bench_opts *o = &bench.o;
	char a[32], b[32], c[32], d[32], repeat[64] = "";

	if (o->repeat > 1)
		snprintf(repeat, sizeof repeat, " x --repeat %u (runs interleaved round by round)", o->repeat);

	report_meta("options",
		    "rounds %u%s; hot file %s; scan file %s; %u random reads; sequential %s; "
		    "training %u files x %u+1 columns x %u rows, batch %u, %u epochs + %u random; "
		    "%u processes x %u reads of %s; isolation %u reads; scale %u reads; %u dependent lookups; "
		    "%u fresh processes; %u sampling processes x %u reads; %u db processes x %u lookups "
		    "on %u CPUs; seed %llu%s",
		    o->rounds / o->repeat, repeat, human_size(a, sizeof a, o->file_size), human_size(b, sizeof b, o->scan_size),
		    o->rand_ops, human_size(c, sizeof c, o->seq_bytes), o->train_files, o->train_cols,
		    o->train_rows, o->train_batch, o->train_epochs, o->train_random, o->procs,
		    o->proc_reads, human_size(d, sizeof d, o->proc_read_size), o->iso_ops, o->scale_ops,
		    o->dep_ops, o->fresh_procs, o->sample_procs, o->sample_reads, o->db_procs, o->db_reads, o->db_cpus,
		    (unsigned long long)o->seed, o->quick ? "; --quick" : "");
}

/* --- options ------------------------------------------------------------------------------------------- */

static uint64_t
parse_size(const char *s, const char *what)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	switch (*end) {
	case 'k': case 'K': v *= KiB; end++; break;
	case 'm': case 'M': v *= MiB; end++; break;
	case 'g': case 'G': v *= GiB; end++; break;
	default: break;
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end == 'B')
		end++;
	if (end == s || *end != '\0') {
		fprintf(stderr, "hmbench: bad size for %s: %s\n", what, s);
		exit(2);
	}
	return v;
}

static unsigned
parse_uint(const char *s, const char *what)
{
	uint64_t v = parse_size(s, what);

	if (v > 100000000) {
		fprintf(stderr, "hmbench: %s too large: %s\n", what, s);
		exit(2);
	}
	return (unsigned)v;
}

static unsigned
parse_list(const char *s, unsigned *v, const char *what)
{
	char buf[256], *tok, *save = NULL;
	unsigned n = 0;

	snprintf(buf, sizeof buf, "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok != NULL && n < BENCH_MAX_LIST;
	     tok = strtok_r(NULL, ",", &save))
		v[n++] = parse_uint(tok, what);
	return n;
}

static void
defaults(struct bench_opts *o, bool quick)
{
	*o = (struct bench_opts){
		.quick = quick,
		.rounds = quick ? 1 : 5,
		.repeat = 1,
		.seed = 20261130,
		.file_size = quick ? 16 * MiB : GiB,
		.scan_size = quick ? 8 * MiB : 512 * MiB,
		.rand_ops = quick ? 400 : 10000,
		.batches = { 16, 64 },
		.nbatches = 2,
		.train_files = 8,
		.train_cols = 8,
		.train_rows = quick ? 4096 : 131072,
		.train_batch = quick ? 1024 : 8192,
		.train_epochs = quick ? 1 : 4,
		.train_random = quick ? 2 : 32,
		.train_clients = { 1, 4 },
		.ntrain_clients = 2,
		.procs = quick ? 8 : 200,
		.proc_reads = quick ? 8 : 64,
		.proc_read_size = 64 * KiB,
		.iso_ops = quick ? 300 : 5000,
		.dep_ops = quick ? 400 : 20000,
		.fresh_procs = 4,
		.sample_procs = 4,
		.sample_reads = quick ? 200 : 5000,
		.db_procs = 8,
		.db_reads = 200,
		.db_cpus = 2,
		.scale_files = { 10, 1000, 10000 },
		.nscale_files = 3,
		.scale_clients = quick ? 20 : 1000,
		.scale_ops = quick ? 200 : 5000,
		.scale_file_size = 16 * KiB,
	};
	if (quick) {
		o->scale_files[1] = 100;
		o->nscale_files = 2;
		o->train_clients[1] = 2;
	}
	o->seq_bytes = o->file_size;
}

static void
usage(FILE *fp)
{
	fprintf(fp,
		"Usage: hmbench [options]\n"
		"Measures hotmap against in-process pread and mmap, nginx and the machine's floors.\n"
		"Usually run through bench/run, which also installs nginx and plots.\n\n"
		"  --quick                a few seconds: tiny files, 1 round (smoke test)\n"
		"  --rounds N             rounds per workload (default 5)\n"
		"  --repeat N             N runs of --rounds, interleaved round by round (A B C A B C...,\n"
		"                         each round a fresh process); under each table, per row, the median\n"
		"                         ratio to pread over the runs and its inter-quartile range, with\n"
		"                         pread-again's (the A/A pair: the machine's noise) beside it\n"
		"  --workloads LIST       rand4k,seq1m,viewsum,dependent,fresh,sample,train,procs,dbprocs,\n"
		"                         iso,cache,scale (default: all)\n"
		"  --contenders LIST      %s,floors (default: all; pread always)\n"
		"  --results DIR          write results.csv, results.json, latency.csv, table.txt there\n"
		"  --dir DIR              data directory (default: a temporary one, removed at the end)\n"
		"  --keep-data            do not remove the data directory\n"
		"  --hotmapd PATH         the daemon (default: $HOTMAPD, else daemon/hotmapd)\n"
		"  --nginx PATH           run the nginx contender with this binary\n"
		"  --nginx-skip REASON    why nginx is not run, for the report\n"
		"  --seed N\n"
		"  --source TEXT          what was measured (bench/run passes the git commit)\n"
		"Sizes (K, M, G suffixes, binary):\n"
		"  --file-size S (1G)  --scan-size S (512M)  --rand-ops N (10000)  --batches LIST (16,64)\n"
		"  --seq-bytes S (file size)  --train-rows N (131072)  --train-batch N (8192)\n"
		"  --train-epochs N (4)  --train-random N (32)  --train-clients LIST (1,4)\n"
		"  --procs N (200)  --proc-reads N (64)  --proc-read-size S (64K, also the sample records)\n"
		"  --iso-ops N (5000)  --dep-ops N (20000)  --fresh-procs N (4)  --sample-procs N (4)\n"
		"  --sample-reads N (5000)  --db-procs N (8)  --db-reads N (200)  --db-cpus N (2)\n"
		"  --scale-files LIST (10,1000,10000)  --scale-clients N (1000)  --scale-ops N (5000)\n"
		"  --scale-file-size S (16K)\n",
		"pread,pread-again,mmap-new,mmap-touched,hotmap,hotmap-daemon,hotmap-view,hotmap-pread,nginx,...");
}

enum {
	OPT_QUICK = 256, OPT_ROUNDS, OPT_WORKLOADS, OPT_CONTENDERS, OPT_RESULTS, OPT_DIR, OPT_KEEP,
	OPT_HOTMAPD, OPT_NGINX, OPT_NGINX_SKIP, OPT_SEED, OPT_FILE_SIZE, OPT_SCAN_SIZE, OPT_RAND_OPS,
	OPT_BATCHES, OPT_SEQ_BYTES, OPT_TRAIN_ROWS, OPT_TRAIN_BATCH, OPT_TRAIN_EPOCHS,
	OPT_TRAIN_RANDOM, OPT_TRAIN_CLIENTS, OPT_PROCS, OPT_PROC_READS, OPT_PROC_READ_SIZE,
	OPT_ISO_OPS, OPT_DEP_OPS, OPT_FRESH_PROCS, OPT_SAMPLE_PROCS, OPT_SAMPLE_READS, OPT_SCALE_FILES, OPT_SCALE_CLIENTS, OPT_SCALE_OPS, OPT_SCALE_FILE_SIZE, OPT_SOURCE,
	OPT_DB_PROCS, OPT_DB_READS, OPT_DB_CPUS, OPT_REPEAT,
};

static const struct option long_opts[] = {
	{ "quick", no_argument, NULL, OPT_QUICK },
	{ "rounds", required_argument, NULL, OPT_ROUNDS },
	{ "repeat", required_argument, NULL, OPT_REPEAT },
	{ "workloads", required_argument, NULL, OPT_WORKLOADS },
	{ "contenders", required_argument, NULL, OPT_CONTENDERS },
	{ "results", required_argument, NULL, OPT_RESULTS },
	{ "dir", required_argument, NULL, OPT_DIR },
	{ "keep-data", no_argument, NULL, OPT_KEEP },
	{ "hotmapd", required_argument, NULL, OPT_HOTMAPD },
	{ "nginx", required_argument, NULL, OPT_NGINX },
	{ "nginx-skip", required_argument, NULL, OPT_NGINX_SKIP },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "source", required_argument, NULL, OPT_SOURCE },
	{ "file-size", required_argument, NULL, OPT_FILE_SIZE },
	{ "scan-size", required_argument, NULL, OPT_SCAN_SIZE },
	{ "rand-ops", required_argument, NULL, OPT_RAND_OPS },
	{ "batches", required_argument, NULL, OPT_BATCHES },
	{ "seq-bytes", required_argument, NULL, OPT_SEQ_BYTES },
	{ "train-rows", required_argument, NULL, OPT_TRAIN_ROWS },
	{ "train-batch", required_argument, NULL, OPT_TRAIN_BATCH },
	{ "train-epochs", required_argument, NULL, OPT_TRAIN_EPOCHS },
	{ "train-random", required_argument, NULL, OPT_TRAIN_RANDOM },
	{ "train-clients", required_argument, NULL, OPT_TRAIN_CLIENTS },
	{ "procs", required_argument, NULL, OPT_PROCS },
	{ "proc-reads", required_argument, NULL, OPT_PROC_READS },
	{ "proc-read-size", required_argument, NULL, OPT_PROC_READ_SIZE },
	{ "iso-ops", required_argument, NULL, OPT_ISO_OPS },
	{ "dep-ops", required_argument, NULL, OPT_DEP_OPS },
	{ "fresh-procs", required_argument, NULL, OPT_FRESH_PROCS },
	{ "sample-procs", required_argument, NULL, OPT_SAMPLE_PROCS },
	{ "sample-reads", required_argument, NULL, OPT_SAMPLE_READS },
	{ "db-procs", required_argument, NULL, OPT_DB_PROCS },
	{ "db-reads", required_argument, NULL, OPT_DB_READS },
	{ "db-cpus", required_argument, NULL, OPT_DB_CPUS },
	{ "scale-files", required_argument, NULL, OPT_SCALE_FILES },
	{ "scale-clients", required_argument, NULL, OPT_SCALE_CLIENTS },
	{ "scale-ops", required_argument, NULL, OPT_SCALE_OPS },
	{ "scale-file-size", required_argument, NULL, OPT_SCALE_FILE_SIZE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

void
parse_options(int argc, char **argv)
{
	struct bench_opts *o = &bench.o;
	bool quick = false, seq_set = false;
	int c, i;

	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "--quick") == 0)
			quick = true;
	defaults(o, quick);
	while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_QUICK: break;
		case OPT_ROUNDS: o->rounds = parse_uint(optarg, "--rounds"); break;
		case OPT_REPEAT: o->repeat = parse_uint(optarg, "--repeat"); break;
		case OPT_WORKLOADS: o->workloads = optarg; break;
		case OPT_CONTENDERS: o->contenders = optarg; break;
		case OPT_RESULTS: o->results_dir = optarg; break;
		case OPT_DIR: o->data_dir = optarg; break;
		case OPT_KEEP: o->keep_data = true; break;
		case OPT_HOTMAPD: o->hotmapd = optarg; break;
		case OPT_NGINX: o->nginx = optarg; break;
		case OPT_NGINX_SKIP: o->nginx_skip = optarg; break;
		case OPT_SEED: o->seed = parse_size(optarg, "--seed"); break;
		case OPT_SOURCE: o->source = optarg; break;
		case OPT_FILE_SIZE: o->file_size = parse_size(optarg, "--file-size"); break;
		case OPT_SCAN_SIZE: o->scan_size = parse_size(optarg, "--scan-size"); break;
		case OPT_RAND_OPS: o->rand_ops = parse_uint(optarg, "--rand-ops"); break;
		case OPT_BATCHES: o->nbatches = parse_list(optarg, o->batches, "--batches"); break;
		case OPT_SEQ_BYTES: o->seq_bytes = parse_size(optarg, "--seq-bytes"); seq_set = true; break;
		case OPT_TRAIN_ROWS: o->train_rows = parse_uint(optarg, "--train-rows"); break;
		case OPT_TRAIN_BATCH: o->train_batch = parse_uint(optarg, "--train-batch"); break;
		case OPT_TRAIN_EPOCHS: o->train_epochs = parse_uint(optarg, "--train-epochs"); break;
		case OPT_TRAIN_RANDOM: o->train_random = parse_uint(optarg, "--train-random"); break;
		case OPT_TRAIN_CLIENTS:
			o->ntrain_clients = parse_list(optarg, o->train_clients, "--train-clients");
			break;
		case OPT_PROCS: o->procs = parse_uint(optarg, "--procs"); break;
		case OPT_PROC_READS: o->proc_reads = parse_uint(optarg, "--proc-reads"); break;
		case OPT_PROC_READ_SIZE: o->proc_read_size = parse_size(optarg, "--proc-read-size"); break;
		case OPT_ISO_OPS: o->iso_ops = parse_uint(optarg, "--iso-ops"); break;
		case OPT_DEP_OPS: o->dep_ops = parse_uint(optarg, "--dep-ops"); break;
		case OPT_FRESH_PROCS: o->fresh_procs = parse_uint(optarg, "--fresh-procs"); break;
		case OPT_SAMPLE_PROCS: o->sample_procs = parse_uint(optarg, "--sample-procs"); break;
		case OPT_SAMPLE_READS: o->sample_reads = parse_uint(optarg, "--sample-reads"); break;
		case OPT_DB_PROCS: o->db_procs = parse_uint(optarg, "--db-procs"); break;
		case OPT_DB_READS: o->db_reads = parse_uint(optarg, "--db-reads"); break;
		case OPT_DB_CPUS: o->db_cpus = parse_uint(optarg, "--db-cpus"); break;
		case OPT_SCALE_FILES:
			o->nscale_files = parse_list(optarg, o->scale_files, "--scale-files");
			break;
		case OPT_SCALE_CLIENTS: o->scale_clients = parse_uint(optarg, "--scale-clients"); break;
		case OPT_SCALE_OPS: o->scale_ops = parse_uint(optarg, "--scale-ops"); break;
		case OPT_SCALE_FILE_SIZE: o->scale_file_size = parse_size(optarg, "--scale-file-size"); break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "hmbench: unexpected argument: %s\n", argv[optind]);
		exit(2);
	}
	if (!seq_set)
		o->seq_bytes = o->file_size;
	if (o->repeat == 0 || o->rounds == 0 || o->rounds * o->repeat > BENCH_MAX_ROUNDS) {
		fprintf(stderr, "hmbench: --rounds and --repeat must be at least 1, their product at most %d\n",
			BENCH_MAX_ROUNDS);
		exit(2);
	}
	/* The workloads run every round of every run, interleaved. */
	o->rounds *= o->repeat;
	if (o->file_size < 2 * MiB || o->file_size % 4096 != 0 || o->scan_size < MiB ||
	    o->scan_size % (64 * KiB) != 0) {
		fprintf(stderr, "hmbench: --file-size must be at least 2 MiB and --scan-size 1 MiB, "
				"multiples of 4 KiB and 64 KiB\n");
		exit(2);
	}
	if (o->rand_ops == 0 || o->iso_ops == 0 || o->scale_ops == 0 || o->procs == 0 || o->dep_ops == 0 ||
	    o->sample_reads == 0) {
		fprintf(stderr, "hmbench: operation counts must be positive\n");
		exit(2);
	}
	if (o->hotmapd == NULL)
		o->hotmapd = getenv("HOTMAPD");
	if (o->hotmapd == NULL)
		o->hotmapd = "daemon/hotmapd";
}

void
raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}
