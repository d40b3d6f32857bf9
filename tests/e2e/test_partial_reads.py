"""Issue 31, safe partial reads: a file opened with
tdsolve.open(path, require_complete=False) never returns what its run has
not written as if it were values. Every result kind that writes chunk by
chunk is made incomplete for real (a run killed mid-way with
TDSOLVE_TEST_FAULT, or SIGKILL for fractal, which has no fault points) and
read through every accessor against a complete file of the same command:

- floating-point values (edm, cross, knn's distances, triplet energies) are
  NaN exactly at the positions of the chunks not flagged done and equal the
  complete file's everywhere else;
- integer values (knn's indices, fractal states) raise IncompleteResult for
  any read that touches such a chunk and read the others;
- what is written only when every chunk is done (hist counts, radius and
  collide pair lists, /live up to the written snapshots) raises;
- a complete file reads exactly as h5py reads it (bit for bit).

Each check that expects NaN first checks that the file itself holds no NaN
there (tdsolve leaves unwritten values at 0), so it fails on a reader that
returns the file's bytes."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import h5py
import numpy as np
from scipy.spatial.distance import squareform

from common import BIN, killed_after_checkpoints, tdsolve

PACKAGE_SRC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../python"))
if PACKAGE_SRC not in sys.path:
    sys.path.insert(0, PACKAGE_SRC)
import tdsolve as tdpkg  # noqa: E402

QUIET = ["--progress", "none", "--quiet"]
ACCESSES = ("auto", "mmap", "hdf5")  # every read path of the package


def read_raw(path, *names):
    """{name: the dataset as h5py reads it} and the done flags and offsets."""
    with h5py.File(path, "r") as f:
        out = {n: f[n][()] for n in names}
        out["done"] = f["progress/done"][()]
        out["offsets"] = f["progress/offsets"][()] if "progress/offsets" in f else None
    return out


def unwritten_mask(done, offsets, size):
    """True at the flat positions of the chunks not flagged done."""
    m = np.zeros(size, dtype=bool)
    for c in np.flatnonzero(np.asarray(done) != 1):
        m[int(offsets[c]):int(offsets[c + 1])] = True
    return m


def nan_where(mask, values):
    out = np.array(values, dtype=values.dtype, copy=True)
    out[mask] = np.nan
    return out


class PartialCase(unittest.TestCase):
    """A complete reference file and a stopped run's .partial of one job."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="tdsolve_partial_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def stopped(cls, args, name, fault, np_=2, checkpoints=False):
        """tdsolve *args killed by TDSOLVE_TEST_FAULT=fault: its output path (only the .partial exists)."""
        out = os.path.join(cls.dir, name)
        if checkpoints:
            r, _, _ = killed_after_checkpoints(args, out, fault, np_=np_)
        else:
            r = tdsolve(*args, "--output", out, np_=np_, env={"TDSOLVE_TEST_FAULT": fault})
        assert r.returncode != 0, f"the injected kill did not stop the run:\n{r.stdout}{r.stderr}"
        assert not os.path.exists(out) and os.path.exists(out + ".partial"), r.stdout + r.stderr
        return out

    @classmethod
    def complete(cls, args, name):
        out = os.path.join(cls.dir, name)
        tdsolve(*args, "--output", out, check=True)
        return out

    def assert_some_done_some_not(self, done):
        self.assertGreater(int(np.sum(done == 1)), 0, f"the run flagged no chunk before the kill: {done}")
        self.assertGreater(int(np.sum(done != 1)), 0, f"the run flagged every chunk: {done}")

    def assert_refused(self, call, *words):
        with self.assertRaises(tdpkg.IncompleteResult) as e:
            call()
        for w in words:
            self.assertIn(w, str(e.exception))
        return str(e.exception)

    def assert_same_bytes(self, got, want, what):
        got = np.asarray(got)
        self.assertEqual((got.dtype, got.shape), (want.dtype, want.shape), what)
        self.assertEqual(got.tobytes(), want.tobytes(), what)


# --- edm ---------------------------------------------------------------------------------------------------


class EdmPartialTest(PartialCase):
    JOB = ["edm", "--generate", "uniform:2000:3:11", "--precision", "float64", "--chunk-mb", "1", "--block", "16",
           "--threads", "1", *QUIET]

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ref = cls.complete(cls.JOB, "ref.h5")
        cls.out = cls.stopped(cls.JOB, "d.h5", "0:3:kill")  # rank 0 stops at its 4th chunk, rank 1 goes on a while
        cls.want = read_raw(cls.ref, "distances")["distances"]
        cls.raw = read_raw(cls.out + ".partial", "distances")
        cls.mask = unwritten_mask(cls.raw["done"], cls.raw["offsets"], len(cls.want))
        cls.exp = nan_where(cls.mask, cls.want)
        cls.S = squareform(cls.exp, checks=False)  # NaN at (i, j) and (j, i) of every unwritten pair, 0 diagonal

    def test_the_file_is_partial_and_holds_no_nan(self):
        self.assert_some_done_some_not(self.raw["done"])
        self.assertFalse(np.any(np.isnan(self.raw["distances"][self.mask])),
                         "the file's unwritten values are what a reader without this check returns")
        np.testing.assert_array_equal(self.raw["distances"][~self.mask], self.want[~self.mask])

    def test_condensed_reads_are_nan_exactly_where_unwritten(self):
        n = 2000
        rng = np.random.default_rng(2)
        idx = rng.integers(0, len(self.want), 3000)
        bad, good = int(np.flatnonzero(self.mask)[7]), int(np.flatnonzero(~self.mask)[7])
        for access in ACCESSES:
            with self.subTest(access=access), tdpkg.open(self.out, require_complete=False, access=access) as r:
                self.assertFalse(r.complete)
                self.assertEqual(r.chunks_done, int(np.sum(self.raw["done"] == 1)))
                np.testing.assert_array_equal(r[:], self.exp)
                np.testing.assert_array_equal(r.condensed(), self.exp)
                for key in (slice(None, None, 7), slice(100, 900000, 13), slice(None, None, -3), slice(5000, 10, -11),
                            idx, idx.reshape(30, 100), self.mask | (np.arange(len(self.want)) % 5 == 0)):
                    np.testing.assert_array_equal(r[key], self.exp[key], f"r[{key!r}]")
                self.assertTrue(np.isnan(r[bad]))
                self.assertEqual(r[good], self.want[good])
                for i, j in [(0, 1), (3, 1900), (700, 701), (1999, 2), (1000, 1200), (20, 20)]:
                    want = self.S[i, j]
                    got = r.pair(i, j)
                    self.assertTrue(np.isnan(got) if np.isnan(want) else got == want, (i, j, got, want))
                self.assertEqual(r.pair(5, 5), 0)
                self.assertEqual(n, r.n)

    def test_matrix_reads_mirror_nan_and_keep_a_zero_diagonal(self):
        i, j = np.argwhere(np.isnan(self.S))[0]
        self.assertTrue(np.isnan(self.S[j, i]))
        for access in ACCESSES:
            with self.subTest(access=access), tdpkg.open(self.out, require_complete=False, access=access) as r:
                D = r.square()
                np.testing.assert_array_equal(D, self.S)
                self.assertTrue(np.all(np.diag(D) == 0))
                self.assertTrue(np.isnan(D[i, j]) and np.isnan(D[j, i]))
                for I, J in [((0, 2000), (0, 2000)), ((0, 50), (700, 900)), ((700, 900), (0, 50)),
                             ((600, 800), (650, 760)), ((1900, 2000), (0, 2000)), (slice(3, 4), slice(0, 2000))]:
                    a, b = (I.start, I.stop) if isinstance(I, slice) else I
                    c, d = (J.start, J.stop) if isinstance(J, slice) else J
                    np.testing.assert_array_equal(r.block(I, J), self.S[a:b, c:d], f"block({I}, {J})")
                np.testing.assert_array_equal(r.rows(1800, 2000), self.S[1800:2000])
                for k in (0, 1, 750, int(i), 1999):
                    np.testing.assert_array_equal(r.row(k), self.S[k], f"row({k})")

    def test_chunks(self):
        done, off = self.raw["done"], self.raw["offsets"]
        for access in ACCESSES:
            with self.subTest(access=access), tdpkg.open(self.out, require_complete=False, access=access) as r:
                parts = list(r.iter_chunks())
                self.assertEqual([o for o, _ in parts], [int(off[c]) for c in np.flatnonzero(done == 1)])
                for o, v in parts:
                    np.testing.assert_array_equal(v, self.want[o:o + len(v)])
                parts = list(r.iter_chunks(done_only=False))
                self.assertEqual(len(parts), len(done))
                for c, (o, v) in enumerate(parts):
                    self.assertEqual(o, int(off[c]))
                    if done[c] == 1:
                        np.testing.assert_array_equal(v, self.want[o:o + len(v)])
                    else:
                        self.assertTrue(np.all(np.isnan(v)), f"chunk {c}")

    def test_a_complete_file_reads_as_before(self):
        D = squareform(self.want, checks=False)
        for access in ACCESSES:
            with self.subTest(access=access), tdpkg.open(self.ref, access=access) as r:
                self.assertIsNone(r._unwritten)
                self.assert_same_bytes(r[:], self.want, "r[:]")
                self.assert_same_bytes(r[::-7], self.want[::-7], "r[::-7]")
                self.assert_same_bytes(r.square(), D, "square()")
                self.assert_same_bytes(r.block((5, 300), (200, 2000)), D[5:300, 200:2000], "block")
                self.assert_same_bytes(np.concatenate([v for _, v in r.iter_chunks()]), self.want, "iter_chunks")

    def test_every_chunk_flagged_but_not_renamed(self):
        # The run stopped between its last flag and the rename: incomplete, but every value is written.
        out = os.path.join(self.dir, "flagged.h5")
        shutil.copyfile(self.ref, out + ".partial")
        with tdpkg.open(out, require_complete=False) as r:
            self.assertFalse(r.complete)
            self.assertIsNone(r._unwritten)
            self.assert_same_bytes(r[:], self.want, "r[:]")


# --- cross -------------------------------------------------------------------------------------------------


class CrossPartialTest(PartialCase):
    # float32 (the default precision); about 7 chunks of 1 MiB.
    JOB = ["cross", "--generate", "uniform:1800:4:1", "--with-generate", "uniform:1000:4:2", "--chunk-mb", "1",
           "--threads", "1", *QUIET]

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ref = cls.complete(cls.JOB, "ref.h5")
        cls.out = cls.stopped(cls.JOB, "c.h5", "0:2:kill")
        cls.want = read_raw(cls.ref, "distances")["distances"]
        cls.raw = read_raw(cls.out + ".partial", "distances")
        cls.mask = unwritten_mask(cls.raw["done"], cls.raw["offsets"], cls.want.size).reshape(cls.want.shape)
        cls.exp = nan_where(cls.mask, cls.want)

    def test_the_file_is_partial_and_holds_no_nan(self):
        self.assertEqual(self.want.dtype, np.float32)
        self.assert_some_done_some_not(self.raw["done"])
        self.assertFalse(np.any(np.isnan(self.raw["distances"][self.mask])))

    def test_every_read_is_nan_exactly_where_unwritten(self):
        M, K = self.want.shape
        bad = tuple(int(v) for v in np.argwhere(self.mask)[3])
        good = tuple(int(v) for v in np.argwhere(~self.mask)[3])
        rows = np.random.default_rng(4).integers(0, M, 40)
        for access in ACCESSES:
            with self.subTest(access=access), tdpkg.open(self.out, require_complete=False, access=access) as r:
                np.testing.assert_array_equal(r.matrix(), self.exp)
                np.testing.assert_array_equal(r[:], self.exp)
                for a, b in [(0, M), (0, 10), (M - 300, M), (400, 1300)]:
                    np.testing.assert_array_equal(r.rows(a, b), self.exp[a:b], f"rows({a}, {b})")
                for I, J in [((0, M), (0, K)), ((100, 1700), (3, 900)), ((1500, 1800), (999, 1000))]:
                    np.testing.assert_array_equal(r.block(I, J), self.exp[I[0]:I[1], J[0]:J[1]], f"block({I}, {J})")
                for key in [5, -1, bad[0], (slice(None, None, -3),), (slice(10, 1700, 7), slice(None)),
                            (slice(None), 3), (Ellipsis, 999), (rows, slice(2, 800)), (slice(None, None, 5), [9, 1, 9]),
                            (np.arange(M) % 3 == 0,), (slice(None), np.arange(K) % 4 == 1)]:
                    np.testing.assert_array_equal(r[key], self.exp[key], f"r[{key!r}]")
                np.testing.assert_array_equal(r[[7, 1500], [3, 0]], self.exp[np.ix_([7, 1500], [3, 0])])
                self.assertTrue(np.isnan(r[bad]))
                self.assertEqual(r[good], self.want[good])
                parts = list(r.iter_chunks(done_only=False))
                self.assertEqual(len(parts), len(self.raw["done"]))
                np.testing.assert_array_equal(np.concatenate([v for _, v in parts]).reshape(-1), self.exp.reshape(-1))
                for first, v in r.iter_chunks():
                    np.testing.assert_array_equal(v, self.want[first:first + len(v)])

    def test_a_complete_file_reads_as_before(self):
        for access in ACCESSES:
            with self.subTest(access=access), tdpkg.open(self.ref, access=access) as r:
                self.assertIsNone(r._unwritten)
                self.assert_same_bytes(r.matrix(), self.want, "matrix()")
                self.assert_same_bytes(r.rows(10, 900), self.want[10:900], "rows")
                self.assert_same_bytes(r.block((3, 40), (5, 50)), self.want[3:40, 5:50], "block")
                self.assert_same_bytes(r[::-3, [4, 2]], self.want[::-3][:, [4, 2]], "r[::-3, [4, 2]]")
                self.assertEqual(r[7, 8], self.want[7, 8])


# --- knn --k -----------------------------------------------------------------------------------------------


class KnnPartialTest(PartialCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        src = os.path.join(cls.dir, "x.npy")
        np.save(src, np.random.default_rng(5).random((3000, 4)))
        # --chunk-mb bounds a chunk's rows of K values: K = 150 makes 6; dense (--cull off).
        job = ["knn", "--input", src, "--k", "150", "--chunk-mb", "1", "--block", "16", "--cull", "off", *QUIET]
        cls.ref = cls.complete(job, "ref.h5")
        cls.out = cls.stopped(job, "k.h5", "1:4:kill")
        ref = read_raw(cls.ref, "indices", "distances")
        cls.I, cls.D = ref["indices"], ref["distances"]
        cls.raw = read_raw(cls.out + ".partial", "indices", "distances")
        cls.K = cls.D.shape[1]
        cls.bad_rows = unwritten_mask(cls.raw["done"], cls.raw["offsets"], cls.D.size).reshape(cls.D.shape)[:, 0]
        cls.exp = nan_where(np.repeat(cls.bad_rows[:, None], cls.K, axis=1), cls.D)

    def chunk_rows(self, done_value):
        """(first, last + 1) rows of each chunk flagged (done_value 1) or not (0)."""
        done, off = self.raw["done"], self.raw["offsets"]
        sel = np.flatnonzero((done == 1) == bool(done_value))
        return [(int(off[c]) // self.K, int(off[c + 1]) // self.K) for c in sel]

    def test_the_file_is_partial_and_holds_no_nan(self):
        self.assert_some_done_some_not(self.raw["done"])
        self.assertFalse(np.any(np.isnan(self.raw["distances"][self.bad_rows])))

    def test_distances_are_nan_and_indices_refused_where_unwritten(self):
        (ga, gb), (ba, bb) = self.chunk_rows(1)[0], self.chunk_rows(0)[0]
        for access in ACCESSES:
            with self.subTest(access=access), tdpkg.open(self.out, require_complete=False, access=access) as r:
                np.testing.assert_array_equal(r.distances, self.exp)
                self.assert_refused(lambda: r.indices, f"rows {ba}..{bb - 1}", "not written yet")
                gi, gd = r.rows(ga, gb)  # inside a done chunk: as the complete file
                np.testing.assert_array_equal(gi, self.I[ga:gb])
                np.testing.assert_array_equal(gd, self.D[ga:gb])
                gi, gd = r.row(gb - 1)
                np.testing.assert_array_equal(gi, self.I[gb - 1])
                self.assert_refused(lambda: r.rows(max(ba - 1, 0), ba + 1), f"rows {ba}..{bb - 1}")
                self.assert_refused(lambda: r.rows(0, 3000), f"rows {ba}..{bb - 1}")
                self.assert_refused(lambda: r.row(ba), f"rows {ba}..{bb - 1}")
                self.assert_refused(lambda: r.row(bb - 1))
                done_rows = np.flatnonzero(~self.bad_rows)
                for key in [ga, (slice(ga, gb, 3),), (done_rows[::-17], slice(None, 7)), (slice(ga, gb), -1)]:
                    gi, gd = r[key]
                    np.testing.assert_array_equal(gi, self.I[key], f"r[{key!r}]")
                    np.testing.assert_array_equal(gd, self.D[key], f"r[{key!r}]")
                gi, gd = r[done_rows[:50], [4, 0]]  # arrays select per axis (h5py's rule)
                np.testing.assert_array_equal(gi, self.I[np.ix_(done_rows[:50], [4, 0])])
                np.testing.assert_array_equal(gd, self.D[np.ix_(done_rows[:50], [4, 0])])
                for key in [ba, bb - 1, slice(None), slice(None, None, -1), ([ga, ba],), (slice(ba, bb), 0),
                            (Ellipsis, 3), (self.bad_rows,)]:
                    self.assert_refused(lambda: r[key], "not written yet")

    def test_chunks(self):
        done = self.raw["done"]
        first_bad = int(np.flatnonzero(done != 1)[0])
        for access in ACCESSES:
            with self.subTest(access=access), tdpkg.open(self.out, require_complete=False, access=access) as r:
                parts = list(r.iter_chunks())
                self.assertEqual([a for a, _, _ in parts], [a for a, _ in self.chunk_rows(1)])
                for a, i, d in parts:
                    np.testing.assert_array_equal(i, self.I[a:a + len(i)])
                    np.testing.assert_array_equal(d, self.D[a:a + len(d)])
                it = r.iter_chunks(done_only=False)
                got = []
                with self.assertRaises(tdpkg.IncompleteResult):
                    for a, i, d in it:
                        got.append(a)
                self.assertEqual(len(got), first_bad, "the chunks before the first unwritten one")

    def test_a_complete_file_reads_as_before(self):
        for access in ACCESSES:
            with self.subTest(access=access), tdpkg.open(self.ref, access=access) as r:
                self.assertIsNone(r._unwritten)
                self.assert_same_bytes(r.indices, self.I, "indices")
                self.assert_same_bytes(r.distances, self.D, "distances")
                gi, gd = r.rows(100, 2900)
                self.assert_same_bytes(gi, self.I[100:2900], "rows")
                self.assert_same_bytes(gd, self.D[100:2900], "rows")
                gi, gd = r[::-5, [3, 1]]
                self.assert_same_bytes(gd, self.D[::-5][:, [3, 1]], "r[::-5, [3, 1]]")


# --- triplet --store-triplets --------------------------------------------------------------------------------


class TripletPartialTest(PartialCase):
    # 5 chunks (ranges of whole layers of 32 values of i).
    JOB = ["triplet", "--generate", "uniform:320:3:7", "--precision", "float64", "--store-triplets", "--chunk-mb",
           "1", "--threads", "1", *QUIET]

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ref = cls.complete(cls.JOB, "ref.h5")
        # Triplet flags are set at checkpoints: one after every round.
        cls.out = cls.stopped(cls.JOB, "t.h5", "0:2:kill", checkpoints=True)
        cls.want = read_raw(cls.ref, "triplet_energy")["triplet_energy"]
        cls.raw = read_raw(cls.out + ".partial", "triplet_energy")
        cls.mask = unwritten_mask(cls.raw["done"], cls.raw["offsets"], len(cls.want))
        cls.exp = nan_where(cls.mask, cls.want)

    def test_the_file_is_partial_and_holds_no_nan(self):
        self.assert_some_done_some_not(self.raw["done"])
        self.assertFalse(np.any(np.isnan(self.raw["triplet_energy"][self.mask])))

    def test_energies_are_nan_exactly_where_unwritten(self):
        n = 320
        rng = np.random.default_rng(9)
        t = np.sort(np.array([rng.choice(n, 3, replace=False) for _ in range(400)]), axis=1)
        pos = tdpkg.triplet_index(n, t[:, 0], t[:, 1], t[:, 2])
        self.assertTrue(np.any(self.mask[pos]) and not np.all(self.mask[pos]))
        idx = rng.integers(0, len(self.want), 5000)
        for access in ACCESSES:
            with self.subTest(access=access), tdpkg.open(self.out, require_complete=False, access=access) as r:
                self.assertTrue(r.stored)
                np.testing.assert_array_equal(r[:], self.exp)
                np.testing.assert_array_equal(r.triplet_energies(), self.exp)
                for key in (slice(None, None, 5), slice(None, None, -7), idx, self.mask):
                    np.testing.assert_array_equal(r[key], self.exp[key], f"r[{key!r}]")
                for (i, j, k), p in zip(t[:60], pos[:60]):
                    got = r.triplet(k, i, j)
                    self.assertTrue(np.isnan(got) if self.mask[p] else got == self.want[p], (i, j, k))
                parts = list(r.iter_chunks(done_only=False))
                np.testing.assert_array_equal(np.concatenate([v for _, v in parts]), self.exp)
                for o, v in r.iter_chunks():
                    np.testing.assert_array_equal(v, self.want[o:o + len(v)])
                for what in ("energy", "energy_per_point", "forces"):  # written when every chunk is done
                    self.assert_refused(lambda: getattr(r, what), f"/{what}")

    def test_a_complete_file_reads_as_before(self):
        for access in ACCESSES:
            with self.subTest(access=access), tdpkg.open(self.ref, access=access) as r:
                self.assertIsNone(r._unwritten)
                self.assert_same_bytes(r[:], self.want, "r[:]")
                self.assert_same_bytes(r[::-9], self.want[::-9], "r[::-9]")


# --- fractal -----------------------------------------------------------------------------------------------


class FractalPartialTest(PartialCase):
    ARGS = ["--shape", "sierpinski-triangle", "--level", "11", "--steps", "400", "--snapshot-every", "40",
            "--threads", "1"]

    ACCESSES = ("auto", "hdf5")  # /states is chunked: no memory map

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ref = cls.complete(["fractal", *cls.ARGS, "--quiet"], "ref.h5")
        cls.out = os.path.join(cls.dir, "f.h5")
        # No fault points in fractal: SIGKILL once two snapshots are flagged; if the run was faster than
        # that, a clean stop at once (--max-hours) leaves the same kind of file.
        p = subprocess.Popen([BIN, "fractal", "--output", cls.out, "--quiet", *cls.ARGS],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.time() + 60
            while time.time() < deadline and p.poll() is None:
                try:
                    with h5py.File(cls.out + ".partial", "r", locking=False) as f:
                        if f["progress/done"][:].sum() >= 2:
                            break
                except (OSError, KeyError):
                    pass
                time.sleep(0.02)
        finally:
            p.send_signal(signal.SIGKILL)
            p.wait()
        finished = os.path.exists(cls.out)
        if not finished:
            with h5py.File(cls.out + ".partial", "r") as f:
                finished = bool(np.all(f["progress/done"][()] == 1))  # killed just before its rename
        if finished:
            for path in (cls.out, cls.out + ".partial"):
                if os.path.exists(path):
                    os.remove(path)
            r = tdsolve("fractal", "--output", cls.out, *cls.ARGS, "--max-hours", "0.0000001")
            assert r.returncode == 75, r.stdout + r.stderr
        with h5py.File(cls.ref, "r") as f:
            cls.states, cls.steps, cls.live = f["states"][()], f["steps"][()], f["live"][()]
        with h5py.File(cls.out + ".partial", "r") as f:
            cls.done = f["progress/done"][()]

    def test_states_are_refused_where_unwritten(self):
        self.assert_some_done_some_not(self.done)
        good = np.flatnonzero(self.done == 1)
        bad = np.flatnonzero(self.done != 1)
        for access in self.ACCESSES:
            with self.subTest(access=access), tdpkg.open(self.out, require_complete=False, access=access) as r:
                for i in good:
                    np.testing.assert_array_equal(r.state(i), self.states[i])
                    np.testing.assert_array_equal(r[int(i)], self.states[i])
                np.testing.assert_array_equal(r[good[0]:good[-1] + 1], self.states[good[0]:good[-1] + 1])
                np.testing.assert_array_equal(r[good[:2], 5:99], self.states[good[:2], 5:99])
                b = int(bad[0])
                self.assert_refused(lambda: r.state(b), f"snapshot {b}")
                self.assert_refused(lambda: r.image(b), f"snapshot {b}")
                self.assert_refused(lambda: r[b], f"snapshot {b} (step {int(self.steps[b])})")
                self.assert_refused(lambda: r[:], f"snapshot{'s' if len(bad) > 1 else ''} {b}")
                self.assert_refused(lambda: r[::-1, 3])
                self.assertEqual([i for i, _ in r.iter_chunks()], good.tolist())
                got = []
                with self.assertRaises(tdpkg.IncompleteResult):
                    for i, v in r.iter_chunks(done_only=False):
                        np.testing.assert_array_equal(v, self.states[i])
                        got.append(i)
                self.assertEqual(got, list(range(b)))

    def test_live_is_refused_and_its_written_steps_read(self):
        first_bad = int(np.flatnonzero(self.done != 1)[0])
        self.assertGreater(first_bad, 0, "the run wrote no snapshot")
        with tdpkg.open(self.out, require_complete=False) as r:
            self.assert_refused(lambda: r.live, "/live", f"steps {int(self.steps[first_bad - 1]) + 1}..")
            written = r.live_written
            self.assertEqual(len(written), int(self.steps[first_bad - 1]) + 1)
            np.testing.assert_array_equal(written, self.live[:len(written)])
        with h5py.File(self.out + ".partial", "r") as f:  # what a reader without the check returns
            self.assertFalse(np.array_equal(f["live"][()], self.live))

    def test_a_complete_file_reads_as_before(self):
        with tdpkg.open(self.ref) as r:
            self.assertIsNone(r._unwritten)
            self.assert_same_bytes(r.live, self.live, "live")
            self.assert_same_bytes(r.live_written, self.live, "live_written")
            self.assert_same_bytes(r[:], self.states, "r[:]")
            self.assert_same_bytes(np.stack([v for _, v in r.iter_chunks(done_only=False)]), self.states, "chunks")


# --- what is written only at the end: hist counts, radius and collide pairs ---------------------------------


class WholeResultTest(PartialCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        hist = ["hist", "--generate", "uniform:8000:3:5", "--bins", "20", "--range", "0:1.5", "--threads", "1",
                *QUIET]  # 44 chunks
        cls.hist_ref = cls.complete(hist, "h_ref.h5")
        cls.hist = cls.stopped(hist, "h.h5", "1:5:kill", checkpoints=True)
        radius = ["knn", "--generate", "uniform:3000:3:5", "--radius", "0.1", "--chunk-mb", "1", "--block", "16",
                  *QUIET]
        cls.radius_ref = cls.complete(radius, "r_ref.h5")
        cls.radius = cls.stopped(radius, "r.h5", "0:1:kill")
        collide = ["collide", "--generate", "spheres:3000:3:5", "--chunk-mb", "1", "--block", "16", *QUIET]
        cls.collide_ref = cls.complete(collide, "c_ref.h5")
        cls.collide = cls.stopped(collide, "c.h5", "0:1:kill")

    def test_hist_counts_are_refused(self):
        with h5py.File(self.hist + ".partial", "r") as f:
            done = f["progress/done"][()]
            self.assertGreater(int(np.sum(done != 1)), 0)
            partial_total = int(f["counts"][()].sum() + f["underflow"][()] + f["overflow"][()])
        with h5py.File(self.hist_ref, "r") as f:
            counts, edges = f["counts"][()], f["edges"][()]
            self.assertLess(partial_total, int(counts.sum() + f["underflow"][()] + f["overflow"][()]))
        with tdpkg.open(self.hist, require_complete=False) as r:
            for what, call in [("/counts", lambda: r.counts), ("/counts", lambda: r[:]), ("/counts", lambda: r[3]),
                               ("/underflow", lambda: r.underflow), ("/overflow", lambda: r.overflow)]:
                self.assert_refused(call, what, "not flagged done")
            self.assertIsNone(r.rdf)  # no --box: none in any file
            np.testing.assert_array_equal(r.edges, edges)
            self.assertEqual((r.bins, r.n), (20, 8000))
        with tdpkg.open(self.hist_ref) as r:
            self.assert_same_bytes(r.counts, counts, "counts")
            self.assert_same_bytes(r[2:9], counts[2:9], "r[2:9]")

    def check_pairs(self, out, ref, kind):
        with h5py.File(out + ".partial", "r") as f:
            self.assertGreater(int(np.sum(f["progress/done"][()] != 1)), 0)
        with tdpkg.open(out, require_complete=False) as r:
            self.assertEqual(r.kind, kind)
            self.assertIn("not written yet", repr(r))
            for call in (lambda: r.count, lambda: len(r), lambda: r.shape, lambda: r.pairs, lambda: r.distances,
                         lambda: r[0], lambda: r[:], lambda: r.to_sparse(),
                         lambda: list(r.iter_chunks(done_only=False))):
                self.assert_refused(call, "written when every chunk is done")
            self.assertEqual(list(r.iter_chunks()), [])
        with h5py.File(ref, "r") as f:
            P, D = f["pairs"][()], f["distances"][()]
        self.assertGreater(len(P), 100)
        with tdpkg.open(ref) as r:
            self.assert_same_bytes(r.pairs, P, "pairs")
            self.assert_same_bytes(r.distances, D, "distances")
            self.assertEqual(r.count, len(P))
        # Every flag set, not yet renamed: the pairs are written (they are written before the flags).
        flagged = os.path.join(self.dir, f"{kind}_flagged.h5")
        shutil.copyfile(ref, flagged + ".partial")
        with tdpkg.open(flagged, require_complete=False) as r:
            self.assertFalse(r.complete)
            self.assert_same_bytes(r.pairs, P, "pairs")
            self.assertEqual(len(list(r.iter_chunks(50))), -(-len(P) // 50))

    def test_radius_pairs_are_refused(self):
        self.check_pairs(self.radius, self.radius_ref, "radius")

    def test_collide_pairs_are_refused(self):
        self.check_pairs(self.collide, self.collide_ref, "collide")


if __name__ == "__main__":
    unittest.main()
