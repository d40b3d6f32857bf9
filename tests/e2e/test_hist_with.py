"""hist --with B (issue 30): the histogram of the distances between two point
sets, the rectangle of their M × K pairs, each once.

Against independent references: numpy.histogram of scipy's cdist (float64,
exactly, for every metric family the kernels have: small-d, general-d and
the boolean ones), of `tdsolve cross`'s own float32 matrix (float32: the
same kernels' values), of a float64 NumPy nearest-image search (orthorhombic
and triclinic boxes, exactly), and MDAnalysis InterRDF(A, B) (its count,
rdf and cumulative count, to its float32 agreement). 1 and 3 ranks, other
blocks and a stopped and resumed run: the same bytes. The in-process call
tdsolve.hist(X, with_=Y) writes the command line's counts. (Culled --with
runs against dense ones, and their resume: test_cull.py.) Bad input: one
line each, nothing written. HistWithGpuTest: the CUDA backend's bytes are
the CPU's (skips without a GPU; fails instead under TDSOLVE_REQUIRE_GPU=1).
"""
import os
import shutil
import signal
import sys
import unittest
import warnings

import h5py
import numpy as np
from scipy.spatial.distance import cdist

from common import TempDirTest, require_gpu, tdsolve
from test_periodic import HAVE_MDA, cell_text, nearest_image_pairs, num, points_in, random_dims

if HAVE_MDA:
    import MDAnalysis
    from MDAnalysis.analysis.rdf import InterRDF
    from MDAnalysis.lib.mdamath import triclinic_vectors

PACKAGE_SRC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../python"))
SEED = int(os.environ.get("TDSOLVE_HIST_WITH_SEED", np.random.SeedSequence().entropy % (1 << 32)))


def read(path):
    with h5py.File(path, "r") as f:
        return {k: f[k][()] for k in f if isinstance(f[k], h5py.Dataset)}, dict(f["counts"].attrs)


def cross_image(a, b, H):
    """Every pair (a_i, b_j) in row-major order and its float64 distance to
    the nearest image (test_periodic's search over the two sets joined)."""
    i, j, d = nearest_image_pairs(np.vstack([a, b]), H)
    keep = (i < len(a)) & (j >= len(a))
    return d[keep]  # i rising, then j: row-major order


class HistWithTest(TempDirTest):
    def sets(self, rng, m, k, d=3, scale=1.0):
        a, b = rng.random((m, d)) * scale, rng.random((k, d)) * scale
        return a, b, self.save_npy("a.npy", a), self.save_npy("b.npy", b)

    def hist(self, a, b, out, bins, lo, hi, *extra, ranks=None):
        args = ["hist", "--input", a, "--with", b, "--bins", bins, "--range", f"{num(lo)}:{num(hi)}", "--output",
                out, "--overwrite", "--progress", "none", "--quiet", *extra]
        self.run_ok(args, ranks=ranks)
        return read(out)

    def test_float64_is_numpy_histogram_of_cdist(self):
        """Every metric family: counts = numpy.histogram(cdist(A, B)),
        under/overflow beside, n × with_n pairs; sizes not multiples of the
        block, one point a side."""
        rng = np.random.default_rng(SEED)
        cases = [("euclidean", 3, 700, 333, []), ("cityblock", 2, 129, 1, []), ("sqeuclidean", 5, 1, 257, []),
                 ("cosine", 12, 300, 200, []), ("chebyshev", 20, 250, 131, []),
                 ("minkowski", 4, 200, 190, ["--p", "3"]), ("canberra", 7, 180, 99, []),
                 ("jaccard", 40, 150, 77, [])]
        for metric, d, m, k, extra in cases:
            with self.subTest(metric=metric, d=d, m=m, k=k, seed=SEED):
                a, b, pa, pb = self.sets(rng, m, k, d)
                if metric == "jaccard":
                    a, b = (a > 0.5).astype(np.float64), (b > 0.5).astype(np.float64)
                    pa, pb = self.save_npy("a.npy", a), self.save_npy("b.npy", b)
                kw = {"p": 3.0} if metric == "minkowski" else {}
                D = cdist(a, b, metric, **kw)
                lo, hi = np.quantile(D, 0.05), np.quantile(D, 0.9)
                got, attrs = self.hist(pa, pb, self.path("o.h5"), 37, lo, hi, "--metric", metric, "--precision",
                                       "float64", "--block", "64", *extra)
                np.testing.assert_array_equal(got["counts"], np.histogram(D, 37, (lo, hi))[0])
                self.assertEqual(got["underflow"], int((D < lo).sum()))
                self.assertEqual(got["overflow"], int((D > hi).sum()))
                self.assertEqual((attrs["n"], attrs["with_n"], attrs["pairs"]), (m, k, m * k))
                self.assertIn("InterRDF(A, B)", attrs["convention"])
                np.testing.assert_allclose(got["cumulative"], np.cumsum(got["counts"]), rtol=0)

    def test_float32_is_numpy_histogram_of_cross(self):
        """float32: counts = numpy.histogram of `tdsolve cross`'s float32
        matrix (the same kernels' values), small and general d."""
        rng = np.random.default_rng(SEED + 1)
        for metric, d in (("euclidean", 3), ("cityblock", 16)):
            with self.subTest(metric=metric, d=d, seed=SEED):
                _, _, pa, pb = self.sets(rng, 600, 411, d, scale=7.0)
                mat = self.path("m.h5")
                self.run_ok(["cross", "--input", pa, "--with", pb, "--output", mat, "--overwrite", "--metric", metric,
                             "--precision", "float32", "--progress", "none", "--quiet"])
                with h5py.File(mat, "r") as f:
                    D = f["distances"][()].astype(np.float64)
                lo, hi = float(np.quantile(D, 0.1)), float(np.quantile(D, 0.8))
                got, attrs = self.hist(pa, pb, self.path("o.h5"), 50, lo, hi, "--metric", metric, "--precision",
                                       "float32")
                np.testing.assert_array_equal(got["counts"], np.histogram(D, 50, (lo, hi))[0])
                self.assertEqual(attrs["precision"], "float32")

    def test_ranks_blocks_and_resume_give_the_same_bytes(self):
        """1 rank, 3 ranks, --block 32 and a run stopped by SIGTERM then
        resumed: the same counts, /rdf and /cumulative."""
        rng = np.random.default_rng(SEED + 2)
        a, b, pa, pb = self.sets(rng, 1000, 777, scale=10.0)
        base = ["--box", "10,10,10", "--precision", "float64"]
        one, _ = self.hist(pa, pb, self.path("one.h5"), 40, 0, 5, *base)
        three, _ = self.hist(pa, pb, self.path("three.h5"), 40, 0, 5, *base, ranks=3)
        small, _ = self.hist(pa, pb, self.path("small.h5"), 40, 0, 5, *base, "--block", "32")
        for other in (three, small):
            for k in ("counts", "underflow", "overflow", "rdf", "cumulative"):
                np.testing.assert_array_equal(one[k], other[k], k)
        # A run long enough to stop: 4e4 × 4e4 pairs on one thread (seconds).
        big_a, big_b = self.save_npy("ba.npy", rng.random((40000, 3))), self.save_npy("bb.npy", rng.random((40000, 3)))
        out = self.path("r.h5")
        args = ["hist", "--input", big_a, "--with", big_b, "--bins", "64", "--range", "0:1", "--output", out,
                "--progress", "none", "--backend", "cpu", "--threads", "1"]
        rc, err = self.interrupted_run(args, out, signal.SIGTERM)
        if rc == 0:
            self.skipTest("the run ended before the signal (a machine too fast for this size)")
        self.assertEqual(rc, 75, err)
        self.assertIn("stopped cleanly", err)
        self.run_ok([*args, "--resume"])
        ref = self.path("ref.h5")
        self.run_ok([*args[:args.index("--output") + 1], ref, *args[args.index("--output") + 2:]])
        resumed, _ = read(out)
        whole, _ = read(ref)
        for k in ("counts", "underflow", "overflow", "cumulative"):
            np.testing.assert_array_equal(resumed[k], whole[k], k)

    @unittest.skipUnless(HAVE_MDA, "MDAnalysis is not installed (python3-mdanalysis)")
    def test_periodic_against_numpy_and_interrdf(self):
        """Orthorhombic and triclinic cells: float64 counts = numpy.histogram
        of the nearest-image distances of the M × K pairs; InterRDF(A, B)'s
        count (each pair once), rdf and cumulative count to float32
        agreement; the file says n, with_n and the volume."""
        rng = np.random.default_rng(SEED + 3)
        for triclinic in (False, True):
            dims = random_dims(rng)
            if not triclinic:
                dims[3:] = 90
            H = triclinic_vectors(dims)
            a, b = points_in(rng, H, 900), points_in(rng, H, 500, (-0.2, 1.2))
            pa, pb = self.save_npy("a.npy", a), self.save_npy("b.npy", b)
            V = abs(np.linalg.det(np.asarray(H, np.float64)))
            widths = [V / np.linalg.norm(np.cross(H[(k + 1) % 3], H[(k + 2) % 3])) for k in range(3)]
            hi = float(np.float32(0.45 * min(widths)))
            with self.subTest(triclinic=triclinic, dims=dims.tolist(), seed=SEED):
                got, attrs = self.hist(pa, pb, self.path("p.h5"), 30, 0, hi, "--box", cell_text(H), "--precision",
                                       "float64", ranks=2)
                d = cross_image(a, b, H)
                np.testing.assert_array_equal(got["counts"], np.histogram(d, 30, (0, hi))[0])
                self.assertEqual(int(got["counts"].sum() + got["overflow"] + got["underflow"]), len(a) * len(b))
                with h5py.File(self.path("p.h5"), "r") as f:
                    self.assertAlmostEqual(f["rdf"].attrs["volume"], V, delta=1e-9 * V)
                u = MDAnalysis.Universe.empty(len(a) + len(b), trajectory=True)
                u.atoms.positions = np.vstack([a, b]).astype(np.float32)
                u.dimensions = dims
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    r = InterRDF(u.atoms[:len(a)], u.atoms[len(a):], nbins=30, range=(0.0, hi)).run()
                moved = np.abs(got["counts"] - r.results.count)
                self.assertLessEqual(moved.sum(), 6, (got["counts"], r.results.count))
                np.testing.assert_allclose(got["rdf"], r.results.rdf, rtol=3e-3, atol=1e-9)
                np.testing.assert_allclose(got["cumulative"], np.cumsum(r.results.count), rtol=1e-3, atol=6)

    def test_in_process_call_writes_the_same_counts(self):
        """tdsolve.hist(X, bins, range, with_=Y, box=...) = the command
        line's counts and /rdf (needs the extension: skipped without it)."""
        build = os.environ.get("TDSOLVE_PYTHON_BUILD")
        if not build:
            self.skipTest("the extension tdsolve._core is not in this build (pybind11-dev)")
        rng = np.random.default_rng(SEED + 4)
        a, b, pa, pb = self.sets(rng, 500, 321, scale=4.0)
        got, _ = self.hist(pa, pb, self.path("c.h5"), 20, 0, 2, "--box", "4,4,4", "--precision", "float64")
        script = ("import sys, numpy as np, tdsolve\n"
                  "a, b = np.load(sys.argv[1]), np.load(sys.argv[2])\n"
                  "c, e, g = tdsolve.hist(a, 20, (0, 2), with_=b, box=[4, 4, 4])\n"
                  "np.save(sys.argv[3], np.vstack([c, g]))\n")
        import subprocess
        env = dict(os.environ, PYTHONPATH=build)
        r = subprocess.run([sys.executable, "-c", script, pa, pb, self.path("api.npy")], capture_output=True,
                           text=True, env=env, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        api = np.load(self.path("api.npy"))
        np.testing.assert_array_equal(api[0], got["counts"])
        np.testing.assert_array_equal(api[1], got["rdf"])

    def test_damaged_with_file_is_refused_by_both_readers(self):
        """A --with file reads as complete (tdsolve.check, tdsolve info, the
        reader's with_n); its `with_n` changed or removed, both readers call
        it inconsistent (the pairs no longer add up)."""
        rng = np.random.default_rng(SEED + 7)
        _, _, pa, pb = self.sets(rng, 120, 45)
        out = self.path("w.h5")
        self.hist(pa, pb, out, 10, 0.2, 1.0)
        sys.path.insert(0, PACKAGE_SRC)
        import tdsolve as tdpkg
        self.assertEqual(tdpkg.check(out).status, "complete", tdpkg.check(out).message)
        with tdpkg.open(out) as r:
            self.assertEqual((r.n, r.with_n, r.pairs), (120, 45, 120 * 45))
        r = tdsolve("info", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("of the 120 x 45 pairs of two sets (--with)", r.stdout)
        for what, edit in (("with_n + 1", lambda f: f["counts"].attrs.modify("with_n", np.uint64(46))),
                           ("with_n removed", lambda f: f["counts"].attrs.__delitem__("with_n"))):
            with self.subTest(damage=what):
                path = self.path("damaged.h5")
                shutil.copy(out, path)
                with h5py.File(path, "a") as f:
                    edit(f)
                v = tdpkg.check(path)
                self.assertEqual(v.status, "inconsistent", v.message)
                r = tdsolve("info", path)
                self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
                self.assertIn("INCONSISTENT", r.stdout)

    def test_cells_of_trajectory_inputs(self):
        """Two LAMMPS dumps in one periodic cell: binned in it (= --box by
        hand, bytes); a --with in another cell, or in a cell where --input
        has none, is refused in one line unless --box (or --box none) says
        which box."""
        from test_trajectory import write_dump
        rng = np.random.default_rng(SEED + 8)
        H = np.diag([9.0, 8.0, 10.0])
        a, b = rng.random((300, 3)) @ H, rng.random((200, 3)) @ H
        da, db, dother = self.path("a.dump"), self.path("b.dump"), self.path("other.dump")
        write_dump(da, [(H, a)], np.ones(len(a), int))
        write_dump(db, [(H, b)], np.ones(len(b), int))
        write_dump(dother, [(H * 1.01, b)], np.ones(len(b), int))
        cell, _ = self.hist(da, db, self.path("c.h5"), 20, 0, 3.5)
        given, _ = self.hist(self.save_npy("a.npy", a), self.save_npy("b.npy", b), self.path("g.h5"), 20, 0, 3.5,
                             "--box", "9,8,10")
        np.testing.assert_array_equal(cell["counts"], given["counts"])
        np.testing.assert_array_equal(cell["rdf"], given["rdf"])
        base = ["--bins", "20", "--range", "0:3.5"]
        self.run_bad_command("hist", ["--input", da, "--with", dother, *base], ("--with", "periodic cell", "--box"))
        self.run_bad_command("hist", ["--input", self.path("a.npy"), "--with", db, *base],
                             ("--with", "in none", "--box"))
        self.hist(da, dother, self.path("o.h5"), 20, 0, 3.5, "--box", "9,8,10")
        self.hist(da, dother, self.path("n.h5"), 20, 0, 3.5, "--box", "none")

    def test_bad_input(self):
        rng = np.random.default_rng(SEED + 5)
        _, _, pa, pb = self.sets(rng, 50, 40)
        b2 = self.save_npy("b2.npy", rng.random((40, 2)))
        base = ["--input", pa, "--bins", "10", "--range", "0:1"]
        labels = self.path("t.txt")
        np.savetxt(labels, np.arange(50) % 2, fmt="%d")
        for extra, expect in (
                (["--with", pb, "--types", labels], ("--with", "--types")),
                (["--with", pb, "--exclude-block", "5"], ("--with", "--exclude-block")),
                (["--with", pb, "--cull", "on", "--metric", "cosine"], ("--cull on", "cosine")),
                (["--with", b2], ("d = 3", "d = 2")),
                (["--with-columns", "0:2"], ("--with",)),
                (["--with", pb, "--with-generate", "uniform:5:3"], ("--with",)),
                (["--with", self.path("missing.npy")], ("missing.npy",)),
        ):
            with self.subTest(extra=extra):
                self.run_bad_command("hist", base[:] + extra, expect)
        self.run_bad_command("hist", ["--input", pa, "--with", pb, "--bins", "10", "--range", "0:1", "--frames", "0:2"],
                             ("--with", "--frames"))


class HistWithGpuTest(TempDirTest):
    @classmethod
    def setUpClass(cls):
        require_gpu()

    def test_cuda_equals_cpu(self):
        """CUDA = CPU bytes: float32 and float64, small and general d, an
        orthorhombic box and a triclinic cell, sizes off the 128 grid."""
        rng = np.random.default_rng(SEED + 6)
        H = np.array([[9.0, 0, 0], [1.5, 8.5, 0], [-1.0, 2.0, 10.0]])
        cases = [("euclidean", 3, []), ("cosine", 24, []), ("euclidean", 3, ["--box", "9,8.5,10"]),
                 ("euclidean", 3, ["--box", cell_text(H)]), ("cityblock", 2, [])]
        for metric, d, extra in cases:
            a, b = rng.random((3001, d)) * 8, rng.random((1999, d)) * 8
            pa, pb = self.save_npy("a.npy", a), self.save_npy("b.npy", b)
            for precision in ("float32", "float64"):
                with self.subTest(metric=metric, d=d, box=extra, precision=precision, seed=SEED):
                    outs = {}
                    for backend in ("cpu", "cuda"):
                        outs[backend] = self.path(f"{backend}.h5")
                        r = tdsolve("hist", "--input", pa, "--with", pb, "--bins", "97", "--range", "0.5:4",
                                    "--metric", metric, "--precision", precision, "--backend", backend, "--output",
                                    outs[backend], "--overwrite", "--progress", "none", "--quiet", *extra)
                        self.assertEqual(r.returncode, 0, r.stderr)
                    cpu, _ = read(outs["cpu"])
                    gpu, _ = read(outs["cuda"])
                    for k in ("counts", "underflow", "overflow"):
                        np.testing.assert_array_equal(cpu[k], gpu[k], k)


if __name__ == "__main__":
    unittest.main()
