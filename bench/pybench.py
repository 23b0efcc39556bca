#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""pybench.py - the Python binding (import hotmap) against what Python
programs do without it.

    bench/pybench.py --hotmapd daemon/hotmapd [--dir DIR] [--quick]

Starts its own hotmapd on a socket in a temporary directory, makes a file
of tensors (random bytes; kept in DIR for the next run) and measures, each
a median over rounds:

  load      a fresh process, its modules imported, loads the whole (hot) file
            (the time of 'import hotmap' is printed apart): hotmap readinto into
            a numpy array, hotmap view (zero copy, every page touched),
            open()+readinto, numpy.memmap copied, numpy.memmap touched in
            place (one byte per page)
  load x4   4 processes load it at once: wall time, and their memory from
            /proc/PID/smaps_rollup (Pss split in file and anonymous) to
            show whether they hold one shared copy or four
  sample    4 worker processes read random 64 KiB records: records/s with
            hotmap pread / readinto, os.pread, os.preadv, numpy.memmap,
            each round in a rotated order
  shards    a low-reuse sampler: 4 worker processes read one epoch of
            8 shards (8 x 256 MiB; --shard-size) in a random order, 64 KiB
            records in batches of 32 (each contender fills a 32 x 64 KiB
            array), each record once: File.readinto and
            Client.read_batch_into against os.pread copied into the batch
            (the ratio's reference), os.preadv into the batch and
            numpy.memmap fancy indexing; every contender in new processes,
            the shards hot
  per call  File.pread and File.readinto of 0 and 1 byte against the
            same hm_pread in a C loop (hotmap._loop_pread): the binding's
            own cost

--workloads picks some (load,sample,shards,percall; default all).

The module is imported from the build tree: --builddir (default: the
directory above --hotmapd's) puts python/.libs on PYTHONPATH and
client/.libs on LD_LIBRARY_PATH.  Prints a table like bench/hmbench's.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

MiB = 1 << 20
GiB = 1 << 30
REC = 64 * 1024
LAST_FAULTS = [0, 0]  # the last sampler row's workers' minor and major faults
IMPORT_S = []  # 'import hotmap' in the load rows' children (outside their clock)
DAEMON_PID = None  # hotmapd's: its mapping of the file takes a share of the pages' Pss
PAGE = os.sysconf("SC_PAGE_SIZE")


# --- children -----------------------------------------------------------------

def child_load(mode, path, sock):
    """Loads the file in this fresh process; prints {load_s}; with --hold,
    then waits for a line on stdin (the parent reads our smaps)."""
    import numpy as np
    size = os.path.getsize(path)
    keep = None
    # Imports are the program's start, not its load: numpy's is outside the
    # clock for every contender, and so is hotmap's (timed apart, reported
    # under the table).
    ti = time.perf_counter()
    if mode.startswith("hotmap") or mode == "baseline":
        import hotmap
    import_s = time.perf_counter() - ti
    t0 = time.perf_counter()
    if mode == "hotmap-readinto":
        c = hotmap.connect(sock)
        f = c.open(path)  # the defaults: granted, mapped at open, read directly
        a = np.empty(size, dtype=np.uint8)
        n = f.readinto(a, 0)
        assert n == size
        keep = (c, f, a)
    elif mode == "hotmap-view":
        c = hotmap.connect(sock)
        f = c.open(path)  # the defaults: the view points into our mapping
        a = np.frombuffer(f.view(0, size), dtype=np.uint8)
        int(a[::PAGE].sum())  # every page in this process's page tables
        keep = (c, f, a)
    elif mode == "read":
        a = np.empty(size, dtype=np.uint8)
        with open(path, "rb", buffering=0) as fo:
            n = fo.readinto(a)
        assert n == size
        keep = a
    elif mode == "memmap-copy":
        m = np.memmap(path, dtype=np.uint8, mode="r")
        a = np.array(m)
        keep = a
    elif mode == "baseline":  # numpy and hotmap imported, nothing loaded
        keep = hotmap
    elif mode == "memmap-touch":
        m = np.memmap(path, dtype=np.uint8, mode="r")
        int(m[::PAGE].sum())
        keep = m
    else:
        raise SystemExit("unknown mode " + mode)
    t1 = time.perf_counter()
    print(json.dumps({"load_s": t1 - t0, "import_s": import_s}), flush=True)
    if "--hold" in sys.argv:
        sys.stdin.readline()
    del keep


def child_sample(mode, path, sock, seconds, seed):
    """Reads random 64 KiB records for `seconds`; prints {records}."""
    import random
    import numpy as np
    size = os.path.getsize(path)
    nrec = size // REC
    rng = random.Random(seed)
    offs = [rng.randrange(nrec) * REC for _ in range(1 << 16)]
    buf = bytearray(REC)
    if mode.startswith("hotmap"):
        import hotmap
        c = hotmap.connect(sock)
        f = c.open(path)  # the defaults: 64 KiB reads are pread on our descriptor
        pread, readinto = f.pread, f.readinto
    elif mode == "os.pread":
        fd = os.open(path, os.O_RDONLY)
    elif mode == "os.preadv":
        fd = os.open(path, os.O_RDONLY)
        bufs = [buf]
    elif mode == "numpy.memmap":
        m = np.memmap(path, dtype=np.uint8, mode="r")
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    sys.stdin.readline()  # all start together
    n = 0
    deadline = time.perf_counter() + seconds
    while True:
        for off in offs[(n % len(offs)):(n % len(offs)) + 256]:
            if mode == "hotmap-pread":
                pread(REC, off)
            elif mode == "hotmap-readinto":
                readinto(buf, off)
            elif mode == "os.pread":
                os.pread(fd, REC, off)
            elif mode == "os.preadv":
                os.preadv(fd, bufs, off)
            else:
                np.array(m[off:off + REC])
        n += 256
        if time.perf_counter() >= deadline:
            break
    import resource
    ru = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"records": n, "seconds": seconds, "minflt": ru.ru_minflt,
                      "majflt": ru.ru_majflt}), flush=True)


SHARD_BATCH = 32


def child_shards(mode, paths, sock, worker, nworkers, seed):
    """Reads worker's share of one epoch of the shards (a permutation of
    every record, dealt out to nworkers) in batches; prints {records, t0,
    t1, check} (CLOCK_MONOTONIC, comparable across processes)."""
    import numpy as np
    clock = lambda: time.clock_gettime(time.CLOCK_MONOTONIC)
    per = os.path.getsize(paths[0]) // REC
    ids = np.random.default_rng(seed).permutation(per * len(paths))[worker::nworkers]
    shard, off = (ids // per).tolist(), ((ids % per) * REC).tolist()
    local = ids % per
    out = np.empty((SHARD_BATCH, REC), dtype=np.uint8)
    if mode.startswith("hotmap"):
        import hotmap
        c = hotmap.connect(sock)
        files = [c.open(p) for p in paths]  # the library's defaults
    elif mode.startswith("os."):
        fds = [os.open(p, os.O_RDONLY) for p in paths]
    elif mode == "numpy.memmap":
        maps = [np.memmap(p, dtype=np.uint8, mode="r").reshape(-1, REC) for p in paths]
        shard_a = ids // per
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    sys.stdin.readline()  # all start together
    check = 0
    t0 = clock()
    for b in range(0, len(ids), SHARD_BATCH):
        n = min(SHARD_BATCH, len(ids) - b)
        if mode == "hotmap-readinto":
            for j in range(n):
                files[shard[b + j]].readinto(out[j], off[b + j])
            got = out[:n]
        elif mode == "hotmap-batch-into":
            c.read_batch_into([(files[shard[b + j]], off[b + j], REC) for j in range(n)], out)
            got = out[:n]
        elif mode == "os.pread":
            # into the batch, as the others: a list of 32 new 64 KiB bytes
            # instead would be handed back to the system by malloc at each
            # batch's end and faulted in again (6-7 faults a record here)
            for j in range(n):
                out[j] = np.frombuffer(os.pread(fds[shard[b + j]], REC, off[b + j]), dtype=np.uint8)
            got = out[:n]
        elif mode == "os.preadv":
            for j in range(n):
                os.preadv(fds[shard[b + j]], [out[j]], off[b + j])
            got = out[:n]
        else:
            sa, la = shard_a[b:b + n], local[b:b + n]
            got = out[:n]
            for sh in np.unique(sa):
                m = sa == sh
                got[m] = maps[sh][la[m]]
        check += sum(int(r[0]) + int(r[-1]) for r in got)
    t1 = clock()
    import resource
    ru = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"records": len(ids), "t0": t0, "t1": t1, "check": check,
                      "minflt": ru.ru_minflt}), flush=True)


# --- the parent -----------------------------------------------------------------

def smaps(pid):
    out = {}
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0].endswith(":") and parts[1].isdigit():
                out[parts[0][:-1]] = int(parts[1]) * 1024
    return out


def spawn(args, env, **kw):
    return subprocess.Popen([sys.executable, os.path.abspath(__file__)] + args, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, **kw)


def load_once(mode, path, sock, env):
    p = spawn(["--child-load", mode, path, sock], env)
    out, _ = p.communicate()
    if p.returncode != 0:
        raise RuntimeError("%s: child failed (%d)" % (mode, p.returncode))
    r = json.loads(out.strip().splitlines()[-1])
    IMPORT_S.append(r["import_s"]) if mode.startswith("hotmap") else None
    return r["load_s"]


def load_x4(mode, path, sock, env, nproc=4):
    t0 = time.perf_counter()
    ps = [spawn(["--child-load", mode, path, sock, "--hold"], env) for _ in range(nproc)]
    loads = [json.loads(p.stdout.readline())["load_s"] for p in ps]
    wall = time.perf_counter() - t0
    mem = [smaps(p.pid) for p in ps]
    daemon = smaps(DAEMON_PID) if DAEMON_PID else {}
    for p in ps:
        p.stdin.write("\n")
        p.stdin.flush()
    for p in ps:
        p.wait()
    tot = lambda k: sum(m.get(k, 0) for m in mem)
    return {"wall": wall, "load_max": max(loads), "pss": tot("Pss"), "pss_file": tot("Pss_File"),
            "pss_anon": tot("Pss_Anon"), "rss_file": tot("RssFile") or tot("Rss") - tot("Anonymous"),
            "daemon_pss_file": daemon.get("Pss_File", 0)}


def sample(mode, path, sock, env, seconds, nproc=4):
    ps = [spawn(["--child-sample", mode, path, sock, str(seconds), str(i)], env) for i in range(nproc)]
    for p in ps:
        assert p.stdout.readline().strip() == "ready"
    for p in ps:
        p.stdin.write("go\n")
        p.stdin.flush()
    recs = 0
    global LAST_FAULTS
    LAST_FAULTS = [0, 0]
    for p in ps:
        r = json.loads(p.stdout.readline())
        recs += r["records"]
        LAST_FAULTS[0] += r["minflt"]
        LAST_FAULTS[1] += r["majflt"]
        p.wait()
    return recs / seconds


def shards(mode, paths, sock, env, seed, nproc=4):
    """One epoch of the shards by nproc new workers: records/s, faults per
    worker and the check of what they read."""
    ps = [spawn(["--child-shards", mode, json.dumps(paths), sock, str(i), str(nproc), str(seed)], env)
          for i in range(nproc)]
    for p in ps:
        assert p.stdout.readline().strip() == "ready", mode
    for p in ps:
        p.stdin.write("go\n")
        p.stdin.flush()
    rs = []
    for p in ps:
        rs.append(json.loads(p.stdout.readline()))
        p.wait()
        if p.returncode != 0:
            raise RuntimeError("%s: worker failed (%d)" % (mode, p.returncode))
    wall = max(r["t1"] for r in rs) - min(r["t0"] for r in rs)
    return (sum(r["records"] for r in rs) / wall, sum(r["minflt"] for r in rs) / nproc,
            sum(r["check"] for r in rs))


def per_call(path, sock, iters):
    import hotmap
    c = hotmap.connect(sock)
    f = c.open(path, flags=hotmap.O_DIRECT)
    f.pread(1, 0)
    buf1 = bytearray(1)
    fd = os.open(path, os.O_RDONLY)
    rows = []

    def best(fn, reps=5):
        return min(fn() for _ in range(reps)) / iters * 1e6

    def py_loop(call):
        def run():
            r = range(iters)
            t0 = time.perf_counter()
            for _ in r:
                call()
            return time.perf_counter() - t0
        return run

    pread, readinto = f.pread, f.readinto
    empty = best(py_loop(lambda: None))
    for n in (0, 1):
        cc = best(lambda: hotmap._loop_pread(f, n, 4096, iters))
        py = best(py_loop(lambda: pread(n, 4096)))
        rows.append(("File.pread(%d)" % n, cc, py, py - cc, py - empty - cc))
    cc = best(lambda: hotmap._loop_pread(f, 1, 4096, iters))
    py = best(py_loop(lambda: readinto(buf1, 4096)))
    rows.append(("File.readinto(1 B)", cc, py, py - cc, py - empty - cc))
    osp = best(py_loop(lambda: os.pread(fd, 1, 4096)))
    os.close(fd)
    f.close()
    c.close()
    return rows, empty, osp


def make_data(path, size):
    if os.path.exists(path) and os.path.getsize(path) == size:
        return
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        left = size
        while left:
            n = min(left, 64 * MiB)
            f.write(os.urandom(n))
            left -= n
    os.rename(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hotmapd", required=True, help="the hotmapd to run")
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="where the data file lives")
    ap.add_argument("--builddir", help="the build tree (default: above --hotmapd's directory)")
    ap.add_argument("--python", default="/usr/bin/python3" if os.path.exists("/usr/bin/python3")
                    else sys.executable, help="the interpreter hotmap was built for (default: /usr/bin/python3)")
    ap.add_argument("--quick", action="store_true", help="64 MiB, 1 round, short samples")
    ap.add_argument("--size", type=int, help="bytes of the file (default 1 GiB; --quick 64 MiB)")
    ap.add_argument("--rounds", type=int, help="rounds per load row (default 5; --quick 1)")
    ap.add_argument("--seconds", type=float, help="seconds per sampler row and round (default 1.5; --quick 0.3)")
    ap.add_argument("--shard-size", type=int, help="MiB of each of the 8 shards (default 256; --quick 8)")
    ap.add_argument("--workloads", default="load,sample,shards,percall",
                    help="which to run, comma-separated (default: load,sample,shards,percall)")
    a = ap.parse_args()
    wl = set(a.workloads.split(","))
    shard_size = (a.shard_size or (8 if a.quick else 256)) * MiB
    size = a.size or (64 * MiB if a.quick else GiB)
    rounds = a.rounds or (1 if a.quick else 5)
    seconds = a.seconds or (0.3 if a.quick else 1.5)
    hotmapd = os.path.abspath(a.hotmapd)
    build = os.path.abspath(a.builddir or os.path.join(os.path.dirname(hotmapd), ".."))
    env = dict(os.environ)
    for var, sub in (("PYTHONPATH", "python/.libs"), ("LD_LIBRARY_PATH", "client/.libs")):
        d = os.path.join(build, sub)
        if os.path.isdir(d):
            env[var] = d + (":" + env[var] if env.get(var) else "")
    if not os.environ.get("PYBENCH_REEXEC"):
        # this process imports hotmap too (per call): with the same paths,
        # under the interpreter the module was built for
        env["PYBENCH_REEXEC"] = "1"
        os.execve(a.python, [a.python, os.path.abspath(__file__)] + sys.argv[1:], env)

    os.makedirs(a.dir, exist_ok=True)
    path = os.path.join(a.dir, "pybench-%d.data" % size)
    if wl & {"load", "sample", "percall"}:
        make_data(path, size)
    shard_paths = []
    if "shards" in wl:
        shard_paths = [os.path.join(a.dir, "pybench-shard%d-%d.data" % (i, shard_size)) for i in range(8)]
        for p in shard_paths:
            make_data(p, shard_size)
    tmp = tempfile.mkdtemp(prefix="pybench.")
    sock = os.path.join(tmp, "sock")
    log = open(os.path.join(tmp, "hotmapd.log"), "wb")
    d = subprocess.Popen([hotmapd, "--foreground", "--socket", sock], stdout=log, stderr=log)
    global DAEMON_PID
    DAEMON_PID = d.pid
    try:
        import hotmap
        deadline = time.time() + 30
        while True:
            try:
                with hotmap.connect(sock) as c:
                    c.ping()
                break
            except OSError:
                if time.time() > deadline or d.poll() is not None:
                    raise SystemExit("hotmapd did not start (see %s)" % log.name)
                time.sleep(0.05)
        # hot: in the page cache, and in the daemon's mapping
        for p in ([path] if os.path.exists(path) else []) + shard_paths:
            with hotmap.connect(sock) as c, c.open(p, flags=hotmap.O_WARM) as f:
                f.warm()
            with open(p, "rb") as f:
                while f.read(64 * MiB):
                    pass
        run(path, sock, env, size, rounds, seconds, a.quick, wl, shard_paths)
    finally:
        d.send_signal(signal.SIGTERM)
        try:
            d.wait(10)
        except subprocess.TimeoutExpired:
            d.kill()
            d.wait()
        log.close()
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)


def run_shards(paths, sock, env, rounds):
    """The low-reuse sampler's table; returns {mode: median records/s}."""
    per = os.path.getsize(paths[0])
    print("shards: 4 new worker processes read one epoch of %d shards x %.0f MiB (%.2f GiB) in a"
          % (len(paths), per / MiB, len(paths) * per / GiB))
    print("  random order, 64 KiB records in batches of %d, each record once (no record read twice);"
          % SHARD_BATCH)
    print("  shards hot (page cache, hotmapd's mapping); %d rounds, contenders rotated, each in new"
          % rounds)
    print("  processes; records/s over the wall time of the 4 (median, min, max); x os.pread = ratio")
    print("  %-26s %12s %10s %10s %8s %10s %14s" % ("contender", "records/s", "min", "max", "GiB/s",
                                                    "x os.pread", "faults/worker"))
    modes = ["hotmap-readinto", "hotmap-batch-into", "os.pread", "os.preadv", "numpy.memmap"]
    label = {"hotmap-readinto": "hotmap File.readinto", "hotmap-batch-into": "hotmap read_batch_into",
             "os.pread": "os.pread (reference)", "os.preadv": "os.preadv into the batch",
             "numpy.memmap": "numpy.memmap fancy index"}
    try:
        import numpy  # noqa: F401
    except ImportError:
        modes.remove("numpy.memmap")
    runs = {m: [] for m in modes}
    faults = {m: [] for m in modes}
    for r in range(rounds):
        checks = {}
        for k in range(len(modes)):
            m = modes[(k + r) % len(modes)]
            rate, flt, chk = shards(m, paths, sock, env, 20261204 + r)
            runs[m].append(rate)
            faults[m].append(flt)
            checks[m] = chk
        if len(set(checks.values())) != 1:
            raise SystemExit("shards: the contenders read different bytes: %r" % checks)
    med = {m: statistics.median(runs[m]) for m in modes}
    for m in modes:
        print("  %-26s %12.0f %10.0f %10.0f %8.2f %10.2f %14.0f" % (
            label[m], med[m], min(runs[m]), max(runs[m]), med[m] * REC / GiB,
            med[m] / med["os.pread"], statistics.median(faults[m])))
    print()
    return med


def run(path, sock, env, size, rounds, seconds, quick, wl=("load", "sample", "percall"), shard_paths=()):
    import hotmap
    gib = size / GiB
    print("pybench: %s, %s, %d rounds (median), %s, numpy %s, hotmap %s"
          % (os.uname().nodename, "%.0f MiB file (hot)" % (size / MiB) if os.path.exists(path) else "no single file",
             rounds, sys.version.split()[0],
             __import__("numpy").__version__, hotmap.__version__))
    print()
    res, x4, smp, rows, shm = {}, {}, {}, [], {}
    modes = ["hotmap-readinto", "hotmap-view", "read", "memmap-copy", "memmap-touch"]
    label = {"hotmap-readinto": "hotmap readinto -> numpy", "hotmap-view": "hotmap view (0 copies), touched",
             "read": "open+readinto -> numpy", "memmap-copy": "numpy.memmap + copy",
             "memmap-touch": "numpy.memmap touched in place"}
    if "load" in wl:
        print("load: a fresh process loads the whole file")
        print("  %-34s %10s %10s %10s %9s" % ("contender", "median ms", "min ms", "max ms", "GiB/s"))
        for m in modes:
            t = [load_once(m, path, sock, env) for _ in range(rounds)]
            res[m] = statistics.median(t)
            print("  %-34s %10.1f %10.1f %10.1f %9.2f" % (label[m], res[m] * 1e3, min(t) * 1e3,
                                                          max(t) * 1e3, gib / res[m]))
        print("  (imports are outside the clock for every contender: numpy's, and hotmap's, which took")
        print("   %.1f ms in the median hotmap child)" % (statistics.median(IMPORT_S) * 1e3))
        print()
        print("load x4: 4 processes load it at once; memory summed over the 4 (smaps_rollup),")
        print("  less 4 processes that only import numpy and hotmap; 'copies' = data Pss / file size")
        print("  %-34s %8s %9s %9s %9s %9s %7s" % ("contender", "wall ms", "Pss MiB", "PssFile", "PssAnon",
                                                   "RssFile", "copies"))
        base = load_x4("baseline", path, sock, env)
        for m in modes:
            r = load_x4(m, path, sock, env)
            for k in ("pss", "pss_file", "pss_anon", "rss_file"):
                r[k] -= base[k]
            x4[m] = r
            print("  %-34s %8.0f %9.0f %9.0f %9.0f %9.0f %7.2f" % (
                label[m], r["wall"] * 1e3, r["pss"] / MiB, r["pss_file"] / MiB, r["pss_anon"] / MiB,
                r["rss_file"] / MiB, r["pss"] / size))
        print("  (hotmapd maps the file too: its Pss_File was %.0f MiB during the view row, the"
              % (x4["hotmap-view"]["daemon_pss_file"] / MiB))
        print("   share of the one copy the 4 loaders do not hold)")
        print()
    if "sample" in wl:
        print("sample: 4 worker processes read random 64 KiB records, %g s a row; %d rounds, the"
              % (seconds, rounds))
        print("  contenders in a rotated order each round (median, min and max over rounds)")
        print("  %-24s %12s %10s %10s %8s %14s" % ("contender", "records/s", "min", "max", "GiB/s",
                                                  "faults/worker"))
        smodes = ["hotmap-pread", "hotmap-readinto", "os.pread", "os.preadv", "numpy.memmap"]
        runs = {m: [] for m in smodes}
        faults = {m: [] for m in smodes}
        for r in range(rounds):
            for k in range(len(smodes)):
                m = smodes[(k + r) % len(smodes)]
                runs[m].append(sample(m, path, sock, env, seconds))
                faults[m].append(LAST_FAULTS[0] / 4)
        for m in smodes:
            smp[m] = statistics.median(runs[m])
            print("  %-24s %12.0f %10.0f %10.0f %8.2f %14.0f" % (
                m, smp[m], min(runs[m]), max(runs[m]), smp[m] * REC / GiB,
                statistics.median(faults[m])))
        print()
    if "shards" in wl and shard_paths:
        shm = run_shards(shard_paths, sock, env, rounds)
    if "percall" in wl:
        iters = 20000 if quick else 200000
        rows, empty, osp = per_call(path, sock, iters)
        print("per call: the binding against hm_pread in a C loop (direct file, best of 5 x %d)" % iters)
        print("  %-22s %9s %9s %11s %16s" % ("call", "C us", "Python us", "binding us",
                                             "minus loop us"))
        for name, cc, py, over, net in rows:
            print("  %-22s %9.3f %9.3f %11.3f %16.3f" % (name, cc, py, over, net))
        print("  (an empty Python loop iteration: %.3f us; os.pread(fd, 1): %.3f us)" % (empty, osp))
        print()
    ok = lambda b: "yes" if b else "NO"
    print("targets:")
    if res:
        print("  load via hotmap <= open+readinto:          readinto %s, view %s"
              % (ok(res["hotmap-readinto"] <= res["read"]), ok(res["hotmap-view"] <= res["read"])))
        print("  load via hotmap <= memmap touched in place: readinto %s, view %s"
              % (ok(res["hotmap-readinto"] <= res["memmap-touch"]),
                 ok(res["hotmap-view"] <= res["memmap-touch"])))
        print("  4 loaders hold one shared copy:             view %s (%.2f copies), readinto %s (%.2f)"
              % (ok(x4["hotmap-view"]["pss"] < 1.5 * size), x4["hotmap-view"]["pss"] / size,
                 ok(x4["hotmap-readinto"]["pss"] < 1.5 * size), x4["hotmap-readinto"]["pss"] / size))
    if smp:
        print("  sampler >= os.pread:                        pread %s, readinto %s"
              % (ok(smp["hotmap-pread"] >= smp["os.pread"]), ok(smp["hotmap-readinto"] >= smp["os.pread"])))
    if shm:
        print("  low-reuse shard sampler >= os.pread:        readinto %s (%.2fx), read_batch_into %s (%.2fx)"
              % (ok(shm["hotmap-readinto"] >= shm["os.pread"]), shm["hotmap-readinto"] / shm["os.pread"],
                 ok(shm["hotmap-batch-into"] >= shm["os.pread"]),
                 shm["hotmap-batch-into"] / shm["os.pread"]))
    if rows:
        print("  binding < 1 us per call over C:             %s (max %.3f us)"
              % (ok(max(r[3] for r in rows) < 1.0), max(r[3] for r in rows)))

if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child-load":
        child_load(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) > 1 and sys.argv[1] == "--child-sample":
        child_sample(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]), int(sys.argv[6]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--child-shards":
        child_shards(sys.argv[2], json.loads(sys.argv[3]), sys.argv[4], int(sys.argv[5]),
                     int(sys.argv[6]), int(sys.argv[7]))
    else:
        main()
