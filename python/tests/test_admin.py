# SPDX-License-Identifier: MIT
"""Tests of the binding's administrative listings, Client.files() and
Client.clients(), with how the reads were served (hm_files_ways,
hm_clients_ways), against a real hotmapd.

Run by python/tests/python.sh after test_hotmap.py, whose daemon it
starts again for this module (setUpModule).  Each way is fixed with the
copy_policy option of one client, so that no timing decides a count:
N reads with way=pread are N preads, as the daemon lists them.
"""
import os
import random
import unittest

import hotmap

import test_hotmap as base

KiB = 1024
MiB = 1024 * KiB
READS = 37


def setUpModule():
    base.setUpModule()


def tearDownModule():
    base.tearDownModule()


def mount_fs(path):
    """The type /proc/self/mountinfo gives the mount holding path, as the
    daemon names it ("ext4" for ext2 and ext3 too); None if not found."""
    st = os.stat(path)
    dev = "%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev))
    try:
        with open("/proc/self/mountinfo") as mi:
            for line in mi:
                left, _, right = line.partition(" - ")
                if left.split()[2] == dev:
                    fs = right.split()[0]
                    return "ext4" if fs in ("ext2", "ext3") else fs
    except OSError:
        pass
    return None


class Ways(unittest.TestCase):
    def setUp(self):
        self.admin = hotmap.connect(base.SOCK)
        self.addCleanup(self.admin.close)

    def reader(self, name, **options):
        """A client of its own with options, and a fresh file of 8 MiB of
        its own opened, read directly from the open unless direct=False."""
        path = os.path.join(base.DIR, "%s-%s" % (self.id().rsplit(".", 1)[-1], name))
        content = os.urandom(8 * MiB)
        with open(path, "wb") as f:
            f.write(content)
        self.addCleanup(os.unlink, path)
        c = hotmap.connect(base.SOCK, direct_after=0, **options)
        self.addCleanup(c.close)
        f = c.open(path, flags=hotmap.O_DIRECT if options.get("direct", True) else 0)
        self.addCleanup(f.close)
        return f, path, content

    def read_n(self, f, content, n, seed):
        """n reads of 4 KiB among the first 64 KiB, byte for byte."""
        rng = random.Random(seed)
        for _ in range(n):
            off = rng.randrange(60 * KiB)
            self.assertEqual(f.pread(4 * KiB, off), content[off:off + 4 * KiB])

    def file_row(self, path):
        rows = [r for r in self.admin.files() if r.path == path]
        self.assertEqual(len(rows), 1, rows)
        self.assertIsInstance(rows[0], hotmap.FileInfo)
        return rows[0]

    def client_rows(self, **ways):
        """The listed clients whose ways are these (the others zero)."""
        keys = ("daemon_reads", "copy_reads", "pread_reads", "probes", "populated_blocks",
                "populate_ns")
        want = tuple(ways.get(k, 0) for k in keys)
        rows = self.admin.clients()
        for r in rows:
            self.assertIsInstance(r, hotmap.ClientInfo)
        return [r for r in rows if tuple(getattr(r, k) for k in keys) == want]

    def test_pread(self):
        f, path, content = self.reader("pread", copy_policy="way=pread")
        self.read_n(f, content, READS, 1)
        self.assertEqual(f.read_stats().pread_reads, READS)
        r = self.file_row(path)
        self.assertEqual((r.pread_reads, r.copy_reads, r.daemon_reads, r.probes),
                         (READS, 0, 0, 0))
        self.assertEqual(r.direct_reads, READS)
        self.assertEqual(r.direct_bytes, READS * 4 * KiB)
        self.assertEqual(r.size, len(content))
        self.assertEqual(r.ino, os.stat(path).st_ino)
        self.assertEqual(r.direct_handles, 1)
        self.assertEqual(len(self.client_rows(pread_reads=READS)), 1)
        c = [x for x in self.admin.clients() if x.pread_reads == READS][0]
        self.assertEqual((c.pid, c.uid, c.handles, c.direct_grants, c.direct_reads),
                         (os.getpid(), os.getuid(), 1, 1, READS))

    def test_copy_and_populate(self):
        f, path, content = self.reader("copy", copy_policy="way=copy")
        self.assertEqual(f.warm(0, 4 * MiB), 4 * MiB)
        self.read_n(f, content, READS, 2)
        st = f.read_stats()
        self.assertEqual(st.copy_reads + st.touch_reads, READS)
        # the kernel may not populate (before 5.14): then 0
        self.assertIn(st.populates, (0, 2))
        r = self.file_row(path)
        self.assertEqual((r.copy_reads, r.pread_reads, r.daemon_reads, r.probes),
                         (READS, 0, 0, 0))
        self.assertEqual((r.populated_blocks, r.populate_ns), (st.populates, st.populate_ns))
        self.assertEqual(len(self.client_rows(copy_reads=READS, populated_blocks=st.populates,
                                              populate_ns=st.populate_ns)), 1)

    def test_through_the_daemon(self):
        f, path, content = self.reader("daemon", direct=False)
        self.read_n(f, content, 7, 3)
        self.assertEqual(f.read_stats().daemon_reads, 7)
        r = self.file_row(path)
        self.assertEqual((r.daemon_reads, r.copy_reads, r.pread_reads, r.populated_blocks),
                         (7, 0, 0, 0))
        self.assertEqual((r.direct_reads, r.direct_handles), (0, 0))
        self.assertEqual(len(self.client_rows(daemon_reads=7)), 1)

    def test_where_the_file_is(self):
        f, path, content = self.reader("where")
        self.read_n(f, content, 1, 4)
        r = self.file_row(path)
        self.assertIs(r.private_entry, False)
        self.assertIs(r.network, False)
        self.assertIs(r.stale, False)
        self.assertIsInstance(r.fs, str)
        want = mount_fs(path)
        if want is not None:
            self.assertEqual(r.fs, want)
        else:
            self.assertNotEqual(r.fs, "")

    def test_admin_reads_nothing(self):
        # this test's own admin connection is listed, and read nothing
        self.assertGreaterEqual(len(self.client_rows()), 1)

    def test_errors(self):
        c = hotmap.connect(base.SOCK)
        c.close()
        self.assertRaises(ValueError, c.files)
        self.assertRaises(ValueError, c.clients)
        with self.assertRaises(hotmap.Error) as cm:
            hotmap.connect(base.SOCK, copy_policy="way=sideways")
        self.assertEqual(cm.exception.errno, 22)
        self.assertIn("copy_policy", cm.exception.strerror)
        self.assertRaises(TypeError, hotmap.connect, base.SOCK, copy_policy=1)

    def test_copy_policy_pickles(self):
        import pickle
        f, path, content = self.reader("pickle", copy_policy="way=pread")
        c2 = pickle.loads(pickle.dumps(f.client))
        self.addCleanup(c2.close)
        with c2.open(path, flags=hotmap.O_DIRECT) as f2:
            self.read_n(f2, content, 5, 5)
            self.assertEqual(f2.read_stats().pread_reads, 5)
        self.assertEqual(self.file_row(path).pread_reads, 5)


if __name__ == "__main__":
    unittest.main()
