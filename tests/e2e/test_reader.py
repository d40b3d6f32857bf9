"""The Python reader (io/python/tdsolve_h5.py) and what an interrupted run
leaves behind; every reader on a path that is no regular file."""
import os
import signal
import socket
import subprocess
import sys
import time
import unittest

import h5py
import numpy as np
from scipy.spatial.distance import pdist, squareform

from common import BIN, TempDirTest, tdsolve, tdsolve_h5


class ReaderTest(TempDirTest):
    def setUp(self):
        super().setUp()
        self.x = np.random.default_rng(5).random((211, 3))
        self.out = self.path("d.h5")
        tdsolve("edm", "--input", self.save_npy("x.npy", self.x), "--output", self.out, "--precision", "float64",
                "--chunk-mb", "1", "--block", "16", "--quiet", check=True)
        self.ref = pdist(self.x)

    def test_condensed_square_pair_row(self):
        with tdsolve_h5.open_result(self.out) as r:
            self.assertTrue(r.complete)
            self.assertEqual((r.n, r.metric, r.precision, r.features), (211, "euclidean", "float64", 3))
            np.testing.assert_allclose(r.condensed(), self.ref, rtol=1e-12)
            D = r.square()
            np.testing.assert_allclose(D, squareform(self.ref), rtol=1e-12)
            for i, j in [(0, 1), (1, 0), (0, 210), (209, 210), (57, 13), (100, 100)]:
                self.assertAlmostEqual(float(r.pair(i, j)), D[i, j], places=12)
            for i in [0, 1, 105, 210]:
                np.testing.assert_allclose(r.row(i), D[i], rtol=1e-12)
            with self.assertRaises(IndexError):
                r.pair(0, 211)

    def test_pair_index_is_scipy_order(self):
        n = 9
        k = 0
        for i in range(n):
            for j in range(i + 1, n):
                self.assertEqual(tdsolve_h5.pair_index(n, i, j), k)
                self.assertEqual(tdsolve_h5.pair_index(n, j, i), k)
                k += 1

    def test_incomplete_file_is_refused(self):
        with h5py.File(self.out, "a") as f:
            f["progress/done"][-1] = 0
        with self.assertRaises(tdsolve_h5.IncompleteResult):
            tdsolve_h5.open_result(self.out)
        with tdsolve_h5.open_result(self.out, require_complete=False) as r:
            self.assertFalse(r.complete)
        info = tdsolve("info", self.out)
        self.assertEqual(info.returncode, 3)
        self.assertIn("INCOMPLETE", info.stdout)
        helper = subprocess.run([sys.executable, tdsolve_h5.__file__, self.out], capture_output=True, text=True)
        self.assertEqual(helper.returncode, 3, helper.stdout + helper.stderr)

    def test_killed_run_leaves_an_incomplete_readable_file(self):
        out = self.path("killed.h5")
        # 20000 points in 1 MiB chunks: hundreds of chunks, seconds of work.
        p = subprocess.Popen([BIN, "edm", "--generate", "uniform:20000:3", "--output", out, "--chunk-mb", "1",
                              "--threads", "1", "--progress", "none", "--quiet"],
                             env=dict(os.environ, HDF5_USE_FILE_LOCKING="FALSE"))
        seen = 0
        deadline = time.time() + 60
        partial = out + ".partial"  # the run's file until it is complete
        while time.time() < deadline and p.poll() is None:
            try:
                with h5py.File(partial, "r", locking=False) as f:
                    seen = int(np.count_nonzero(f["progress/done"][:]))
            except (OSError, KeyError):
                pass
            if seen >= 3:
                break
            time.sleep(0.02)
        self.assertIsNone(p.poll(), "the run finished before it could be interrupted")
        p.send_signal(signal.SIGKILL)
        p.wait()
        self.assertGreaterEqual(seen, 3)
        self.assertFalse(os.path.exists(out), "an unfinished run never takes the output's name")
        info = tdsolve("info", out)
        self.assertEqual(info.returncode, 3, info.stdout + info.stderr)
        self.assertIn("INCOMPLETE", info.stdout)
        with self.assertRaises(tdsolve_h5.IncompleteResult):
            tdsolve_h5.open_result(out)
        with tdsolve_h5.open_result(out, require_complete=False) as r:
            self.assertGreaterEqual(r.chunks_done, 3)
            self.assertLess(r.chunks_done, r.chunks)
        # Every chunk recorded as done holds the values a full run writes.
        full = self.path("full.h5")
        tdsolve("edm", "--generate", "uniform:20000:3", "--output", full, "--quiet", check=True)
        with h5py.File(partial, "r") as f, h5py.File(full, "r") as g:
            done, offsets = f["progress/done"][:], f["progress/offsets"][:]
            for c in np.flatnonzero(done):
                a, b = offsets[c], offsets[c + 1]
                np.testing.assert_array_equal(f["distances"][a:b], g["distances"][a:b])


PACKAGE_SRC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../python"))


class NonRegularFileTest(TempDirTest):
    """Issue 32: `tdsolve info` and `tdsolve.check` blocked forever on a FIFO.
    A FIFO, a socket, a directory or a device (given, or the FILE.h5.partial
    read for a FILE.h5 that does not exist) gets one line from every reader,
    at once, and is never opened; --resume refuses such a .partial alike."""

    def cases(self):
        fifo, sock, folder = self.path("fifo.h5"), self.path("sock.h5"), self.path("dir.h5")
        os.mkfifo(fifo)
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(sock)
        os.mkdir(folder)
        os.mkfifo(self.path("stopped.h5.partial"))
        return [(fifo, fifo, "a FIFO (named pipe)"), (sock, sock, "a socket"), (folder, folder, "a directory"),
                ("/dev/null", "/dev/null", "a character device"),
                (self.path("stopped.h5"), self.path("stopped.h5.partial"), "a FIFO (named pipe)")]

    def tearDown(self):
        if getattr(self, "sock", None):
            self.sock.close()
        super().tearDown()

    def test_info(self):
        for path, read, what in self.cases():
            r = tdsolve("info", path, timeout=30)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertEqual(r.stderr, f"tdsolve: error: '{read}' is {what}, not a result file\n")
            self.assertEqual(r.stdout, "")

    def test_package(self):
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import tdsolve\n"
                "v = tdsolve.check(sys.argv[2]); print(v.status, v.exit_code, v.message, sep='|')\n"
                "print(tdsolve.validate(sys.argv[2]) if sys.argv[2] == sys.argv[3] else '-')\n"
                "try:\n    tdsolve.open(sys.argv[2])\nexcept tdsolve.UnreadableResult as e:\n    print(e)\n")
        for path, read, what in self.cases():
            line = f"'{read}' is {what}, not a result file"
            r = subprocess.run([sys.executable, "-c", code, PACKAGE_SRC, path, read], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.splitlines(), [f"unreadable|1|unreadable: {line}",
                                                     f"[\"{line}\"]" if path == read else "-",
                                                     f"{path}: unreadable: {line}"])
            r = subprocess.run([sys.executable, "-m", "tdsolve", path], capture_output=True, text=True, timeout=60,
                               cwd=PACKAGE_SRC)
            self.assertEqual((r.returncode, r.stdout, r.stderr), (1, "", f"{read}: unreadable: {line}\n"))

    def test_resume(self):
        out = self.path("r.h5")
        os.mkfifo(out + ".partial")
        r = tdsolve("edm", "--generate", "uniform:50:3", "--output", out, "--resume", "--quiet", timeout=60)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(r.stderr, f"tdsolve: error: cannot resume: '{out}.partial' is not a regular file; start "
                         "over with --overwrite (without --resume)\n")
        self.assertFalse(os.path.exists(out))
        self.assertEqual(sorted(os.listdir(self.dir)), ["r.h5.partial"])


if __name__ == "__main__":
    unittest.main()
