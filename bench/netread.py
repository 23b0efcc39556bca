#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""netread.py - bench/netfs's numpy.memmap contender: what a Python data
loader that maps its shards does.  The same command line, passes, offsets
and output line as bench/netread (netread.c), so that bench/netfs puts it
in the same table:

  netread.py [--pattern seq|rand] [--size BYTES] [--ops N] [--passes N]
             [--seed N] [--no-check] numpy-memmap FILE

Each read copies SIZE bytes out of a numpy.memmap of the file into a
numpy array (buf[:n] = mm[off:off + n]), as a loader slicing records into
a batch does.  Prints "numpy-memmap PATTERN SIZE PASS MB/s" per pass.
Exit status 3 with a message when numpy cannot be imported: bench/netfs
then prints the row as not run.
"""
import argparse
import os
import sys
import time

HOT_MIN_S = 0.3
MASK64 = (1 << 64) - 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--socket")  # bench/netfs passes it to every contender
    p.add_argument("--pattern", default="seq", choices=("seq", "rand"))
    p.add_argument("--size", type=int, default=1 << 20)
    p.add_argument("--ops", type=int, default=2000)
    p.add_argument("--passes", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--no-check", action="store_true")
    p.add_argument("contender", choices=("numpy-memmap",))
    p.add_argument("file")
    a = p.parse_args()
    try:
        import numpy as np
    except ImportError as e:
        print(f"netread.py: numpy.memmap not run: {e}", file=sys.stderr)
        return 3
    size = os.stat(a.file).st_size
    bs = a.size
    mm = np.memmap(a.file, dtype=np.uint8, mode="r")
    buf = np.empty(bs, dtype=np.uint8)
    # the offsets of netread.c: the same generator, so the same reads
    offs, seed = [], a.seed
    for _ in range(a.ops):
        seed = (seed * 6364136223846793005 + 1442695040888963407) & MASK64
        offs.append((seed >> 11) % (size // bs) * bs if size > bs else 0)
    if not a.no_check:
        fd = os.open(a.file, os.O_RDONLY)
        try:
            for at in (offs[0] if offs else 0, size - bs // 2 if size > bs else 0):
                n = min(bs, 65536, max(size - at, 0))
                if bytes(mm[at:at + n]) != os.pread(fd, n, at):
                    print(f"netread.py: numpy-memmap: not pread's bytes at {at}", file=sys.stderr)
                    return 1
        finally:
            os.close(fd)
    seq = range(0, size, bs)
    for pas in range(1, a.passes + 1):
        done = 0
        t0 = time.monotonic()
        while True:
            for off in (offs if a.pattern == "rand" else seq):
                n = min(bs, size - off)
                buf[:n] = mm[off:off + n]
                done += n
            t = time.monotonic() - t0
            # a hot pass goes round its reads for at least HOT_MIN_S
            if pas == 1 or t >= HOT_MIN_S:
                break
        print(f"numpy-memmap {a.pattern} {bs} {pas} {done / 1e6 / t:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
