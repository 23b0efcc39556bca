# SPDX-License-Identifier: MIT
"""Tests of the Python binding (import hotmap) against a real hotmapd.

Run by python/tests/python.sh (make check), which points PYTHONPATH and
LD_LIBRARY_PATH at the build tree and HOTMAPD at the built daemon.  One
hotmapd on a socket in a temporary directory (under $TMPDIR) serves the
whole module and is killed at the end.
"""
import errno
import gc
import multiprocessing
import os
import pickle
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import hotmap

try:
    import numpy
except ImportError:  # the tests that need it skip
    numpy = None

HOTMAPD = os.environ.get("HOTMAPD", "daemon/hotmapd")
DIR = None
SOCK = None
DAEMON = None
DATA = None  # path of a 3 MiB + 77 bytes file of random bytes
CONTENT = b""


def setUpModule():
    global DIR, SOCK, DAEMON, DATA, CONTENT
    DIR = tempfile.mkdtemp(prefix="hotmap-py.")
    SOCK = os.path.join(DIR, "sock")
    DATA = os.path.join(DIR, "data")
    CONTENT = os.urandom(3 * 1024 * 1024 + 77)
    with open(DATA, "wb") as f:
        f.write(CONTENT)
    log = open(os.path.join(DIR, "hotmapd.log"), "wb")
    DAEMON = subprocess.Popen([HOTMAPD, "--foreground", "--socket", SOCK],
                              stdout=log, stderr=subprocess.STDOUT)
    log.close()
    deadline = time.monotonic() + 30
    while True:
        if DAEMON.poll() is not None:
            raise RuntimeError("hotmapd exited (%d) before listening" % DAEMON.returncode)
        try:
            with hotmap.connect(SOCK) as c:
                c.ping()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def tearDownModule():
    if DAEMON is not None:
        DAEMON.kill()
        DAEMON.wait()
    if DIR is not None:
        shutil.rmtree(DIR, ignore_errors=True)


def needs_numpy(f):
    return unittest.skipIf(numpy is None, "numpy is not installed (python3-numpy)")(f)


class Base(unittest.TestCase):
    def setUp(self):
        self.c = hotmap.connect(SOCK)
        self.f = self.c.open(DATA)

    def tearDown(self):
        self.f.close()
        self.c.close()

    def scratch(self, content):
        """A file of the test's own (it may be changed), removed at the end."""
        fd, path = tempfile.mkstemp(dir=DIR)
        os.write(fd, content)
        os.close(fd)
        self.addCleanup(os.unlink, path)
        return path


class TestReads(Base):
    """Byte for byte what plain reads give."""

    def test_pread_ranges(self):
        rng = random.Random(1)
        size = len(CONTENT)
        cases = [(0, 0), (0, 1), (0, size), (size - 1, 10), (size, 10), (size + 100, 10),
                 (1 << 20, 1 << 20), (4095, 4097)]
        cases += [(rng.randrange(size), rng.randrange(1 << 17)) for _ in range(200)]
        for off, n in cases:
            self.assertEqual(self.f.pread(n, off), CONTENT[off:off + n], (off, n))
            self.assertEqual(self.f.pread(n, off), os.pread(self.fd(), n, off))

    def fd(self):
        if not hasattr(self, "_fd"):
            self._fd = os.open(DATA, os.O_RDONLY)
            self.addCleanup(os.close, self._fd)
        return self._fd

    def test_readinto_bytearray_memoryview(self):
        b = bytearray(100000)
        self.assertEqual(self.f.readinto(b, 12345), 100000)
        self.assertEqual(bytes(b), CONTENT[12345:112345])
        m = memoryview(bytearray(5000))
        self.assertEqual(self.f.readinto(m[1000:2000], 7), 1000)
        self.assertEqual(m[1000:2000].tobytes(), CONTENT[7:1007])
        self.assertEqual(m[:1000].tobytes(), bytes(1000))
        # short at end of file, 0 past it
        self.assertEqual(self.f.readinto(b, len(CONTENT) - 10), 10)
        self.assertEqual(bytes(b[:10]), CONTENT[-10:])
        self.assertEqual(self.f.readinto(b, len(CONTENT) + 1), 0)

    @needs_numpy
    def test_readinto_numpy(self):
        a = numpy.empty(1000, dtype=numpy.float32)
        self.assertEqual(self.f.readinto(a, 64), 4000)
        self.assertEqual(a.tobytes(), CONTENT[64:4064])
        whole = numpy.empty(len(CONTENT), dtype=numpy.uint8)
        self.assertEqual(self.f.readinto(whole, 0), len(CONTENT))
        self.assertEqual(whole.tobytes(), CONTENT)

    @needs_numpy
    def test_long_reads_in_slices(self):
        # reads of 64 MiB or more go in slices, in parallel: the same bytes,
        # short only at end of file wherever it falls
        content = os.urandom(70 * 1024 * 1024 + 5)
        path = self.scratch(content)
        for flags in (hotmap.O_DIRECT, hotmap.O_PREAD):
            with self.c.open(path, flags=flags) as f:
                a = numpy.empty(len(content), dtype=numpy.uint8)
                self.assertEqual(f.readinto(a, 0), len(content))
                self.assertEqual(a.tobytes(), content)
                big = bytearray(72 * 1024 * 1024)
                self.assertEqual(f.readinto(big, 3 << 20), len(content) - (3 << 20))
                self.assertEqual(bytes(big[:len(content) - (3 << 20)]), content[3 << 20:])
                self.assertEqual(f.pread(100 << 20, 1), content[1:])

    def test_read_batch(self):
        reqs = [(self.f, o, n) for o, n in [(0, 10), (100, 0), (len(CONTENT) - 5, 100),
                                             (1 << 20, 300000), (len(CONTENT) + 9, 4)]]
        got = self.c.read_batch(reqs)
        self.assertEqual(got, [CONTENT[o:o + n] for _, o, n in reqs])
        many = [(self.f, i * 1000, 1000) for i in range(600)]  # more than a window
        self.assertEqual(b"".join(self.c.read_batch(many)), CONTENT[:600000])
        self.assertEqual(self.c.read_batch([]), [])

    def test_read_batch_into(self):
        buf = bytearray(3000)
        n = self.c.read_batch_into([(self.f, 0, 1000), (self.f, 5000, 1000),
                                    (self.f, 9, 500, 2500)], buf)
        self.assertEqual(n, [1000, 1000, 500])
        self.assertEqual(bytes(buf[:1000]), CONTENT[:1000])
        self.assertEqual(bytes(buf[1000:2000]), CONTENT[5000:6000])
        self.assertEqual(bytes(buf[2500:3000]), CONTENT[9:509])

    @needs_numpy
    def test_read_batch_into_numpy(self):
        rec = 65536
        idx = [3, 1, 40, 0]
        out = numpy.empty((len(idx), rec), dtype=numpy.uint8)
        self.c.read_batch_into([(self.f, i * rec, rec) for i in idx], out)
        for k, i in enumerate(idx):
            self.assertEqual(out[k].tobytes(), CONTENT[i * rec:(i + 1) * rec])

    def test_view(self):
        v = self.f.view(100, 5000)
        self.assertEqual(len(v), 5000)
        self.assertEqual(bytes(v), CONTENT[100:5100])
        self.assertEqual(memoryview(v).tobytes(), CONTENT[100:5100])
        self.assertIsNone(v.check())
        v.release()
        self.assertTrue(v.released)
        v.release()  # idempotent
        self.assertEqual(bytes(self.f.view(len(CONTENT) - 3, 100)), CONTENT[-3:])
        self.assertEqual(bytes(self.f.view(len(CONTENT) + 3, 100)), b"")

    def test_view_warm(self):
        # O_WARM: the view comes populated; the same bytes, end of file too
        with self.c.open(DATA, flags=hotmap.O_WARM) as f:
            self.assertEqual(bytes(f.view(1, len(CONTENT))), CONTENT[1:])
            self.assertEqual(bytes(f.view(4095, 2)), CONTENT[4095:4097])

    def test_view_batch(self):
        reqs = [(self.f, o, n) for o, n in [(0, 10), (3, 70000), (len(CONTENT) - 1, 9)]]
        views = self.c.view_batch(reqs)
        self.assertEqual([bytes(v) for v in views], [CONTENT[o:o + n] for _, o, n in reqs])

    def test_direct_tier(self):
        with self.c.open(DATA, flags=hotmap.O_DIRECT) as f:
            self.assertEqual(f.pread(10, 10), CONTENT[10:20])
            self.assertEqual(f.stat().direct, hotmap.DIRECT_YES)
        with self.c.open(DATA, flags=hotmap.O_PREAD) as f:
            self.assertEqual(f.stat().backend, hotmap.BACKEND_PREAD)
            self.assertEqual(f.pread(10, 10), CONTENT[10:20])

    def test_read_stats(self):
        # how this process read the file, without a round trip: through
        # the daemon here, then each read of a direct file one way
        with hotmap.connect(SOCK, direct=False) as c, c.open(DATA) as f:
            self.assertEqual(f.pread(100, 5), CONTENT[5:105])
            st = f.read_stats()
            self.assertEqual(st.daemon_reads, 1)
            self.assertEqual(st.pread_reads + st.copy_reads + st.touch_reads, 0)
            self.assertEqual(st.direct, hotmap.DIRECT_NO)
        with self.c.open(DATA, flags=hotmap.O_DIRECT) as f:
            rng = random.Random(3)
            for _ in range(200):
                off = rng.randrange(64 * 1024)
                self.assertEqual(f.pread(4096, off), CONTENT[off:off + 4096])
            st = f.read_stats()
            self.assertEqual(st.direct, hotmap.DIRECT_YES)
            self.assertEqual(st.pread_reads + st.copy_reads + st.touch_reads, 200)
            self.assertEqual(st.daemon_reads, 0)
            self.assertIsInstance(st, hotmap.ReadStats)
            # populate_min (4) at least, or 1: the file's earlier readers
            # read its blocks often enough (the prior, docs/direct-reads.md)
            self.assertTrue(st.populate_after == 1 or st.populate_after >= 4,
                            st.populate_after)

    def test_stat_warm(self):
        st = self.f.stat()
        self.assertEqual(st.size, len(CONTENT))
        self.assertEqual(st.ino, os.stat(DATA).st_ino)
        self.assertIn(st.backend, (hotmap.BACKEND_MMAP, hotmap.BACKEND_PREAD))
        self.assertEqual(self.f.warm(), len(CONTENT))
        self.assertEqual(self.f.warm(10, 100), 100)
        self.assertEqual(self.f.warm(length=10), 10)

    def test_open_fd_and_file_object(self):
        with open(DATA, "rb") as py:
            with self.c.open(py) as f:
                self.assertEqual(f.pread(5, 1), CONTENT[1:6])
            with self.c.open(py.fileno()) as f:
                self.assertEqual(f.pread(5, 2), CONTENT[2:7])
        import pathlib
        with self.c.open(pathlib.Path(DATA)) as f:
            self.assertEqual(f.pread(5, 3), CONTENT[3:8])
        with self.c.open(os.fsencode(DATA)) as f:
            self.assertEqual(f.pread(5, 4), CONTENT[4:9])

    def test_context_managers(self):
        with hotmap.connect(socket=SOCK) as c:
            with c.open(DATA) as f:
                self.assertFalse(f.closed)
            self.assertTrue(f.closed)
        self.assertTrue(c.closed)
        self.assertTrue(f.closed)

    def test_options(self):
        with hotmap.connect(SOCK, shm_size=1 << 20, shm_threshold=4096, direct=False,
                            direct_after=3, reconnect_ms=100, poll=False) as c:
            with c.open(DATA) as f:
                self.assertEqual(f.pread(100000, 7), CONTENT[7:100007])
                self.assertEqual(f.stat().direct != hotmap.DIRECT_YES, True)

    def test_pickle(self):
        c2 = pickle.loads(pickle.dumps(self.c))
        self.addCleanup(c2.close)
        f2 = pickle.loads(pickle.dumps(self.f))
        self.addCleanup(f2.close)
        self.assertIsNot(f2.client, self.c)
        self.assertEqual(f2.pread(10, 0), CONTENT[:10])


class TestViewLifetime(Base):
    def test_view_outlives_file_and_client(self):
        v = self.f.view(1000, 200000)
        vs = self.c.view_batch([(self.f, 0, 10)])
        self.f.close()
        self.c.close()
        gc.collect()
        self.assertEqual(bytes(v), CONTENT[1000:201000])
        self.assertEqual(bytes(vs[0]), CONTENT[:10])

    @needs_numpy
    def test_numpy_keeps_view_alive(self):
        with self.c.open(DATA, flags=hotmap.O_DIRECT) as f:
            v = f.view(0, len(CONTENT))
        a = numpy.frombuffer(v, dtype=numpy.uint8)
        self.assertFalse(a.flags.writeable)
        with self.assertRaises(ValueError):
            a[0] = 1
        with self.assertRaises(BufferError):
            v.release()
        del v
        gc.collect()
        self.assertEqual(a.tobytes(), CONTENT)
        del a
        gc.collect()

    def test_read_only(self):
        v = self.f.view(0, 10)
        m = memoryview(v)
        self.assertTrue(m.readonly)
        with self.assertRaises(TypeError):
            m[0] = 1
        with self.assertRaises(BufferError):
            v.release()
        m.release()
        v.release()
        with self.assertRaises(ValueError):
            memoryview(v)
        with self.assertRaises(ValueError):
            v.check()

    @needs_numpy
    def test_file_shrinks_under_numpy_view(self):
        size = 8 << 20
        content = os.urandom(size)
        path = self.scratch(content)
        with self.c.open(path, flags=hotmap.O_DIRECT) as f:
            v = f.view(0, size)
            a = numpy.frombuffer(v, dtype=numpy.uint8)
            self.assertEqual(a[:4096].tobytes(), content[:4096])
            # the daemon gives the lease up for the writer: truncate waits
            # for the grant's revocation, not 45 s
            t0 = time.monotonic()
            os.truncate(path, 4096)
            self.assertLess(time.monotonic() - t0, 30)
            total = int(a.sum(dtype=numpy.uint64))  # every page touched: no SIGBUS
            self.assertGreaterEqual(total, 0)
            try:
                v.check()
            except hotmap.Error as e:
                self.assertIn(e.errno, (errno.ESTALE, errno.EIO))
            self.assertEqual(f.pread(10000, 0), content[:4096])
        del a
        v = None
        gc.collect()


class TestBadArguments(Base):
    def test_negative(self):
        with self.assertRaises(ValueError):
            self.f.pread(10, -1)
        with self.assertRaises(ValueError):
            self.f.pread(-1, 0)
        with self.assertRaises(ValueError):
            self.f.readinto(bytearray(1), -5)
        with self.assertRaises(ValueError):
            self.f.view(-1, 10)
        with self.assertRaises(ValueError):
            self.f.view(0, -10)
        with self.assertRaises(ValueError):
            self.c.read_batch([(self.f, -1, 10)])
        with self.assertRaises(ValueError):
            self.f.warm(-1)

    def test_huge(self):
        self.assertEqual(self.f.pread(1 << 62, 10), CONTENT[10:])
        self.assertEqual(self.f.pread(1 << 40, 1 << 62), b"")
        self.assertEqual(bytes(self.f.view(0, 1 << 62)), CONTENT)
        self.assertEqual(self.c.read_batch([(self.f, 1, 1 << 50)]), [CONTENT[1:]])
        with self.assertRaises(OverflowError):
            self.f.pread(1 << 70, 0)
        with self.assertRaises(OverflowError):
            self.f.pread(10, 1 << 70)
        self.assertEqual(self.f.warm(0, 1 << 62), len(CONTENT))

    def test_wrong_types(self):
        for bad in (b"abc", "abc", 5, None, memoryview(b"x"), (1, 2)):
            with self.assertRaises(TypeError, msg=repr(bad)):
                self.f.readinto(bad, 0)
        if numpy is not None:
            with self.assertRaises(TypeError):
                self.f.readinto(numpy.zeros(100)[::2], 0)  # not contiguous
        with self.assertRaises(TypeError):
            self.f.pread("10", 0)
        with self.assertRaises(TypeError):
            self.f.pread(10.0, 0)
        with self.assertRaises(TypeError):
            self.c.read_batch([(1, 2, 3)])
        with self.assertRaises(TypeError):
            self.c.read_batch([(self.f, 0)])
        with self.assertRaises(TypeError):
            self.c.read_batch(5)
        with self.assertRaises(TypeError):
            self.c.view_batch([(self.f, 0, 1, 2)])
        with self.assertRaises(TypeError):
            self.c.read_batch_into([(self.f, 0, 1)], b"x")
        with self.assertRaises(ValueError):
            self.c.read_batch_into([(self.f, 0, 10)], bytearray(5))
        with self.assertRaises(TypeError):
            self.c.open(3.5)
        with self.assertRaises(TypeError):
            hotmap.connect(SOCK, no_such_option=1)
        with self.assertRaises(ValueError):
            hotmap.connect(SOCK, shm_size=-1)

    def test_closed(self):
        f = self.c.open(DATA)
        f.close()
        for call in (lambda: f.pread(1, 0), lambda: f.readinto(bytearray(1), 0),
                     lambda: f.view(0, 1), f.stat, f.warm,
                     lambda: self.c.read_batch([(f, 0, 1)]),
                     lambda: self.c.view_batch([(f, 0, 1)])):
            with self.assertRaises(ValueError):
                call()
        c = hotmap.connect(SOCK)
        g = c.open(DATA)
        c.close()
        self.assertTrue(g.closed)
        with self.assertRaises(ValueError):
            g.pread(1, 0)
        with self.assertRaises(ValueError):
            c.open(DATA)
        g.close()
        with self.assertRaises(ValueError):
            self.c.read_batch([(self.f, 0, 1), (g, 0, 1)])
        # a file of another client
        with hotmap.connect(SOCK) as c2, c2.open(DATA) as h:
            with self.assertRaises(ValueError):
                self.c.read_batch([(h, 0, 1)])

    def test_errors(self):
        with self.assertRaises(hotmap.FileNotFoundError) as cm:
            self.c.open(os.path.join(DIR, "no-such-file"))
        e = cm.exception
        self.assertIsInstance(e, FileNotFoundError)
        self.assertIsInstance(e, hotmap.Error)
        self.assertIsInstance(e, OSError)
        self.assertEqual(e.errno, errno.ENOENT)
        self.assertEqual(e.filename, os.path.join(DIR, "no-such-file"))
        self.assertTrue(issubclass(hotmap.PermissionError, PermissionError))
        with self.assertRaises(hotmap.Error) as cm:
            hotmap.connect(os.path.join(DIR, "no-socket"))
        self.assertIsInstance(cm.exception, OSError)
        with self.assertRaises(hotmap.Error) as cm:
            self.c.open(DATA, flags=hotmap.O_PATH)  # the daemon has no --root
        self.assertTrue(cm.exception.strerror)
        with self.assertRaises(hotmap.Error):
            self.c.open(DIR, flags=hotmap.O_MMAP)


class TestFallback(unittest.TestCase):
    """connect(fallback=True) with no daemon: the files are read here."""

    def test_no_daemon(self):
        nosock = os.path.join(DIR, "no-socket")
        with self.assertRaises(hotmap.Error):
            hotmap.connect(nosock)  # without it: as before
        with hotmap.connect(nosock, fallback=True) as c:
            with c.open(DATA) as f, open(DATA, "rb") as py:
                self.assertEqual(f.pread(100000, 12345), CONTENT[12345:112345])
                self.assertEqual(f.pread(1000, len(CONTENT) - 10), CONTENT[-10:])
                self.assertEqual(f.pread(10, len(CONTENT) + 5), b"")
                buf = bytearray(70000)
                self.assertEqual(f.readinto(buf, 4096), 70000)
                self.assertEqual(bytes(buf), CONTENT[4096:74096])
                g = c.open(py)  # by descriptor
                self.assertEqual(c.read_batch([(f, 0, 5000), (g, 1 << 20, 7)]),
                                 [CONTENT[:5000], CONTENT[1 << 20:(1 << 20) + 7]])
                v = f.view(3, 1 << 20)
                self.assertEqual(bytes(v), CONTENT[3:3 + (1 << 20)])
                v.release()
                vs = c.view_batch([(f, 10, 20), (g, 99, 1)])
                self.assertEqual([bytes(x) for x in vs], [CONTENT[10:30], CONTENT[99:100]])
                for x in vs:
                    x.release()
                st = f.stat()
                self.assertEqual(st.size, len(CONTENT))
                self.assertEqual(st.ino, os.stat(DATA).st_ino)
                self.assertEqual(st.direct, 0)
                self.assertTrue(st.direct_text.startswith("local:"), st.direct_text)
                self.assertEqual(f.warm(0, 1 << 30), len(CONTENT))
                g.close()
            with self.assertRaises(hotmap.Error) as cm:
                c.ping()  # the daemon's alone
            self.assertEqual(cm.exception.errno, errno.ENOTCONN)
            with self.assertRaises(hotmap.Error) as cm:
                c.open(DATA, flags=hotmap.O_PATH)
            self.assertEqual(cm.exception.errno, errno.ENOTCONN)


class TestApi(unittest.TestCase):
    def test_docstrings_and_signatures(self):
        import inspect
        self.assertTrue(hotmap.__doc__)
        for obj in (hotmap.connect, hotmap.library_version, hotmap.Client, hotmap.File,
                    hotmap.View, hotmap.Error):
            self.assertTrue(obj.__doc__, obj)
        for cls in (hotmap.Client, hotmap.File, hotmap.View):
            for name in dir(cls):
                if not name.startswith("_"):
                    self.assertTrue(getattr(cls, name).__doc__, (cls, name))
        self.assertEqual(list(inspect.signature(hotmap.File.pread).parameters),
                         ["self", "n", "offset"])
        self.assertEqual(list(inspect.signature(hotmap.connect).parameters),
                         ["socket", "options"])
        for k in ("O_MMAP", "O_PREAD", "O_PATH", "O_WARM", "O_DIRECT"):
            self.assertIsInstance(getattr(hotmap, k), int)

    def test_stub_matches(self):
        try:
            import mypy.stubtest  # noqa: F401 (Debian's mypy)
        except ImportError:
            self.skipTest("mypy is not installed (apt-get install mypy)")
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        # run in the test's directory: stubtest leaves a .mypy_cache behind
        env = dict(os.environ, MYPYPATH=here, MYPY_CACHE_DIR=os.path.join(DIR, "mypy-cache"))
        r = subprocess.run([sys.executable, "-m", "mypy.stubtest", "hotmap"], env=env, cwd=DIR,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(r.returncode, 0, r.stdout)


# --- fork: the DataLoader pattern ---------------------------------------------

_WORKER_FILE = None


def _read_inherited(args):
    off, n = args
    return _WORKER_FILE.pread(n, off)


def _read_passed(args):
    f, off, n = args
    return f.pread(n, off)


def _view_sum_inherited(args):
    off, n = args
    v = _WORKER_FILE.view(off, n)
    return bytes(v)


class TestFork(Base):
    def ranges(self):
        rng = random.Random(7)
        return [(rng.randrange(len(CONTENT) - 70000), rng.randrange(1, 70000)) for _ in range(40)]

    def check_pool(self, method, fn, args):
        ctx = multiprocessing.get_context(method)
        with ctx.Pool(2) as pool:
            got = pool.map(fn, args)
        return got

    def test_fork_inherits(self):
        global _WORKER_FILE
        # used before the fork, and read directly by then
        _WORKER_FILE = self.c.open(DATA, flags=hotmap.O_DIRECT)
        try:
            self.assertEqual(_WORKER_FILE.pread(10, 0), CONTENT[:10])
            r = self.ranges()
            got = self.check_pool("fork", _read_inherited, r)
            self.assertEqual(got, [CONTENT[o:o + n] for o, n in r])
            got = self.check_pool("fork", _view_sum_inherited, r)
            self.assertEqual(got, [CONTENT[o:o + n] for o, n in r])
            # and the parent still reads
            self.assertEqual(_WORKER_FILE.pread(10, 5), CONTENT[5:15])
        finally:
            _WORKER_FILE.close()
            _WORKER_FILE = None

    def test_os_fork(self):
        v = self.f.view(0, 1000)
        self.f.pread(1, 0)
        pid = os.fork()
        if pid == 0:
            ok = (self.f.pread(1000, 99) == CONTENT[99:1099] and bytes(v) == CONTENT[:1000]
                  and self.c.read_batch([(self.f, 0, 5)]) == [CONTENT[:5]])
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)

    def test_forkserver(self):
        if "forkserver" not in multiprocessing.get_all_start_methods():
            self.skipTest("no forkserver start method here")
        r = self.ranges()
        # the File travels pickled: the worker connects afresh and reopens it
        got = self.check_pool("forkserver", _read_passed, [(self.f, o, n) for o, n in r])
        self.assertEqual(got, [CONTENT[o:o + n] for o, n in r])


# --- threads ------------------------------------------------------------------

class TestThreads(Base):
    def test_parallel_readers(self):
        f = self.c.open(DATA, flags=hotmap.O_DIRECT)
        self.addCleanup(f.close)
        errors = []

        def reader(seed):
            rng = random.Random(seed)
            buf = bytearray(65536)
            try:
                for _ in range(300):
                    off = rng.randrange(len(CONTENT))
                    n = f.readinto(buf, off)
                    if bytes(buf[:n]) != CONTENT[off:off + 65536]:
                        errors.append("readinto at %d" % off)
                    if f.pread(100, off) != CONTENT[off:off + 100]:
                        errors.append("pread at %d" % off)
                    if rng.random() < 0.1:
                        got = self.c.read_batch([(f, off, 10), (self.f, off, 20)])
                        if got != [CONTENT[off:off + 10], CONTENT[off:off + 20]]:
                            errors.append("batch at %d" % off)
            except Exception as e:  # pragma: no cover - reported below
                errors.append(repr(e))

        threads = [threading.Thread(target=reader, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])

    def test_gil_released(self):
        # a thread spinning in Python makes progress while another reads:
        # 200 reads of 1 MiB take a while, and must not hold the GIL
        f = self.c.open(DATA, flags=hotmap.O_PREAD)
        self.addCleanup(f.close)
        stop = threading.Event()
        ticks = [0]

        def spin():
            while not stop.is_set():
                ticks[0] += 1

        t = threading.Thread(target=spin)
        t.start()
        buf = bytearray(1 << 20)
        try:
            for i in range(200):
                f.readinto(buf, (i % 3) << 20)
        finally:
            stop.set()
            t.join()
        self.assertGreater(ticks[0], 0)

    def test_close_while_reading(self):
        for _ in range(5):
            c = hotmap.connect(SOCK)
            f = c.open(DATA)
            stop = threading.Event()
            bad = []

            def reader():
                buf = bytearray(4096)
                while not stop.is_set():
                    try:
                        n = f.readinto(buf, 4096)
                        if bytes(buf[:n]) != CONTENT[4096:8192]:
                            bad.append("bytes")
                    except ValueError:
                        return  # closed under us: the clear error
                    except Exception as e:
                        bad.append(repr(e))
                        return

            ts = [threading.Thread(target=reader) for _ in range(4)]
            for t in ts:
                t.start()
            time.sleep(0.02)
            f.close()
            c.close()
            stop.set()
            for t in ts:
                t.join()
            self.assertEqual(bad, [])


if __name__ == "__main__":
    unittest.main()
