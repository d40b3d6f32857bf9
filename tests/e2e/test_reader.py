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
        # The checks of every name a run writes (solver/lifecycle.cpp
        # check_output_paths) come first, before and again holding the lock:
        # a usage error. The isolated walk's own refusal of a .partial that
        # is no regular file ("cannot resume: ... is not a regular file", exit
        # 1) stays behind them, for one that becomes a FIFO in between.
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertEqual(r.stderr, f"tdsolve: error: the unfinished output '{out}.partial' is a FIFO; tdsolve writes "
                         "only regular files of its own (remove it, or choose another --output)\n")
        self.assertFalse(os.path.exists(out))
        self.assertEqual(sorted(os.listdir(self.dir)), ["r.h5.partial"])


def attr_at(data, name):
    """Where the datatype and the value of the one attribute `name` start in
    the file's bytes: a version 1 attribute message (as tdsolve's files have
    them) is 1, 0, the sizes of its name, datatype and dataspace (2 bytes
    each), then each of them padded to 8 bytes, then the value."""
    key = name.encode() + b"\0"
    found = [i for i in range(len(data))
             if data[i:i + 2] == b"\x01\x00" and int.from_bytes(data[i + 2:i + 4], "little") == len(key)
             and data[i + 8:i + 8 + len(key)] == key]
    assert len(found) == 1, f"attribute {name}: {len(found)} messages"
    i = found[0]
    pad = [(int.from_bytes(data[i + k:i + k + 2], "little") + 7) // 8 * 8 for k in (2, 4, 6)]
    return i + 8 + pad[0], i + 8 + sum(pad)


def attr_type_at(data, name):
    return attr_at(data, name)[0]


def chunk_keys_at(data, rank):
    """Where the keys of the one v1 B-tree of chunks ("TREE", type 1) start,
    and how far apart: 4-byte size, 4-byte filter mask, rank + 1 offsets of
    8 bytes, then the child's 8-byte address."""
    found = [i for i in range(len(data)) if data[i:i + 5] == b"TREE\x01"]
    assert len(found) == 1, f"{len(found)} chunk B-trees"
    return found[0] + 24, 8 + 8 * (rank + 1) + 8


class DamagedMetadataTest(TempDirTest):
    """Damage the corruption fuzz (test_fuzz.py) found, each made once by
    hand: what every reader must see in a file HDF5 1.10 reads without an
    error, or reads out of bounds."""

    def verdicts(self, path):
        """(info's exit status and last line, check's status and message)."""
        info = tdsolve("info", path, timeout=60)
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import tdsolve\n"
                "v = tdsolve.check(sys.argv[2]); print(v.status, v.message, sep='|')\n")
        r = subprocess.run([sys.executable, "-c", code, PACKAGE_SRC, path], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        line = (info.stderr.strip() or info.stdout.strip()).splitlines()[-1]
        return info.returncode, line, r.stdout.strip()

    def damaged(self, src, name, change):
        with open(src, "rb") as f:
            data = bytearray(f.read())
        change(data)
        path = self.path(name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def test_chunk_moved_out_of_the_shape(self):
        """A B-tree key of fractal's /states says row 7 of 5 (it was row 3): HDF5
        finds no row 3 and reads it as the fill value, a "complete" file with a
        row of zeros, until every chunk is also read as stored and the index is
        held to the shape."""
        src = self.path("f.h5")
        tdsolve("fractal", "--shape", "sierpinski-carpet", "--level", "3", "--steps", "10", "--snapshot-every", "3",
                "--output", src, "--quiet", "--progress", "none", check=True)
        self.assertEqual(tdsolve("info", src).returncode, 0)
        for row, to in ((3, 7), (4, 9)):
            def move(data):
                keys, step = chunk_keys_at(data, 2)
                at = keys + step * row + 8  # the key's row offset
                self.assertEqual(int.from_bytes(data[at:at + 8], "little"), row)
                data[at:at + 8] = to.to_bytes(8, "little")
            path = self.damaged(src, f"moved{row}.h5", move)
            rc, line, check = self.verdicts(path)
            self.assertEqual(rc, 1, line)
            self.assertRegex(line, r"^tdsolve: error: damaged: '.*': /states: (a chunk cannot be read as it is "
                             r"stored|its chunk index holds 5 chunks, 1 of them at no place of its shape)")
            self.assertEqual(check.split("|")[0], "unreadable", check)
            self.assertIn("damaged: ", check)

    def test_values_past_the_end_of_allocation(self):
        """The superblock's end of allocation (EOA) 8 bytes short of where
        /points ends, the last values of the file: HDF5 1.10 reads its last
        values from stale bytes of its sieve buffer, without an error (an edm
        file whose last point read as 6e-41, 0, 0, "complete" to both
        readers). Both walks hold stored values to the EOA too: damaged."""
        src = self.path("e.h5")
        tdsolve("edm", "--generate", "uniform:60:3:1", "--store-points", "--output", src, "--quiet",
                "--progress", "none", check=True)
        with h5py.File(src, "r") as f:
            end = f["points"].id.get_offset() + f["points"].id.get_storage_size()
        self.assertEqual(end, os.path.getsize(src))  # /points is last

        def shorten(data):
            self.assertEqual((data[:8], data[8]), (b"\x89HDF\r\n\x1a\n", 0))  # superblock version 0
            self.assertEqual(int.from_bytes(data[40:48], "little"), end)  # its EOA (8-byte addresses)
            data[40:48] = (end - 8).to_bytes(8, "little")
        path = self.damaged(src, "eoa.h5", shorten)
        words = f"damaged: '{path}': the values of /points lie past the end of the file"
        self.assertEqual(self.verdicts(path), (1, f"tdsolve: error: {words}", f"unreadable|unreadable: {words}"))

    def test_check_never_raises(self):
        """The fuzz at 10000 files (seed 7) made tdsolve.check raise: closing a
        damaged cross file, h5py could not close one of its ids ("Can't
        decrement id ref count", in the check's child only: process-dependent).
        Made here by a close that fails: the child's verdict stands, as info's
        (io/h5.hpp closes quietly); any other error of the child is the
        file's verdict, "unreadable: ...", never an exception."""
        src = self.hist_file()
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import h5py, tdsolve\n"
                "from tdsolve import _verdict\n"
                "def close(self):\n    raise RuntimeError(\"Can't decrement id ref count\")\n"
                "h5py.File.close = close\n"
                "print(tdsolve.check(sys.argv[2]).message)\n"
                "def fails(*args):\n    raise KeyError('a read that failed past every check')\n"
                "_verdict._inspect_here = fails\n"
                "print(tdsolve.check(sys.argv[2]).message)\n")
        r = subprocess.run([sys.executable, "-c", code, PACKAGE_SRC, src], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines(), ["complete (1 of 1 chunks)",
                                                 "unreadable: KeyError: 'a read that failed past every check'"])

    def hist_file(self):
        src = self.path("h.h5")
        tdsolve("hist", "--generate", "uniform:60:3:3", "--bins", "12", "--range", "0:0.5", "--output", src,
                "--quiet", "--progress", "none", check=True)
        self.assertEqual(tdsolve("info", src).returncode, 0)
        return src

    def retyped(self, src, name, offset, value, size):
        """A copy of src with `size` bytes at `offset` of attribute `name`'s type set to `value`."""
        def change(data):
            i = attr_type_at(data, name) + offset
            data[i:i + size] = value.to_bytes(size, "little")
        return self.damaged(src, f"{name}.h5", change)

    def test_types_hdf5_never_writes(self):
        """A variable-length string stored in 7 bytes (HDF5 reads 16 from
        there: garbage, or a crash), a float whose mantissa is wider than the
        float (HDF5 converts its 0.5 to 0.50000084): damaged."""
        src = self.hist_file()
        for name, where, offset, value, size, words in [
                ("command", "/", 4, 7, 4, "its variable-length values take 7 bytes, not 16"),
                ("range_hi", "/counts", 15, 154, 1, "a float whose sign, exponent and mantissa (bits 63, 52+11, "
                                                    "0+154) do not fit its 64 bits")]:
            path = self.retyped(src, name, offset, value, size)
            words = f"damaged: '{path}': attribute '{name}' of {where}: {words}"
            self.assertEqual(self.verdicts(path), (1, f"tdsolve: error: {words}", f"unreadable|unreadable: {words}"))

    def test_memory_of_a_reader(self):
        """The root's `command` said to hold 2^32 - 16 characters: HDF5 1.10
        allocates and clears that much before it finds the heap holds
        fewer (main's tdsolve info: 8.4 GB and 11 s, then "complete"). The
        children that read a file for info and check stop at 1 GiB beyond
        what they hold: damaged, at once."""
        src = self.hist_file()

        def long(data):
            at = attr_at(data, "command")[1]  # a variable-length value: its length comes first
            data[at:at + 4] = (2**32 - 16).to_bytes(4, "little")
        path = self.damaged(src, "long.h5", long)
        code = ("import resource, subprocess, sys; sys.path.insert(0, sys.argv[1]); import tdsolve\n"
                "r = subprocess.run([sys.argv[3], 'info', sys.argv[2]], capture_output=True, text=True)\n"
                "print(r.returncode, r.stderr.strip(), sep='|')\n"
                "print(tdsolve.check(sys.argv[2]).message)\n"
                "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-c", code, PACKAGE_SRC, path, BIN], capture_output=True, text=True,
                           timeout=120, env=dict(os.environ, TDSOLVE_READ_TIMEOUT_S="60"))
        self.assertEqual(r.returncode, 0, r.stderr)
        info, check, rss = r.stdout.splitlines()
        self.assertRegex(info, rf"^1\|tdsolve: error: damaged: '{path}': attribute 'command' of / cannot be read: ")
        self.assertRegex(check, rf"^unreadable: damaged: '{path}': attribute 'command' of / cannot be read: ")
        self.assertLess(int(rss), 1536 * 1024, "kB: the most either child held")
        self.assertLess(time.monotonic() - t0, 30)

    def test_records_of_types_tdsolve_never_writes(self):
        """A 33-byte integer `chunks`, a float64 `range_lo` of another exponent
        bias: HDF5 converts them to some value, NumPy has no dtype for them,
        and no tdsolve writes them: inconsistent."""
        src = self.hist_file()
        for name, offset, value, size, words in [
                ("chunks", 4, 33, 4, "attribute 'chunks' is of no standard integer type"),
                ("range_lo", 16, 5243903, 4, "attribute 'range_lo' is of no standard number type")]:
            path = self.retyped(src, name, offset, value, size)
            self.assertEqual(self.verdicts(path),
                             (3, f"progress:  INCONSISTENT: {words}", f"inconsistent|inconsistent: {words}"))

if __name__ == "__main__":
    unittest.main()
