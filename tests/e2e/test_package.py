"""The `tdsolve` Python package (python/): it installs into a fresh venv;
it reads edm, cross and hist files as SciPy and NumPy compute them ([],
rows, block, square, iter_chunks, shape), and triplet files (k = 3) as h5py
reads them, with triplet_index in itertools.combinations order; it reads a
stopped run's FILE.h5.partial only when asked; and it calls a file
complete, incomplete or unreadable exactly when `tdsolve info` does, damaged
files included."""
import itertools
import math
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

import h5py
import numpy as np
from scipy.spatial.distance import cdist, pdist, squareform

from common import BIN, set_value, tdsolve, tdsolve_h5
from knn_files import write_knn, write_radius

PACKAGE_SRC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../python"))
if PACKAGE_SRC not in sys.path:
    sys.path.insert(0, PACKAGE_SRC)
import tdsolve as tdpkg  # noqa: E402

ACCESSES = ("auto", "mmap", "hdf5")  # every read path of the package
DIR = None  # files shared by every test of this module (setUpModule)
F = {}


def setUpModule():
    global DIR
    DIR = tempfile.mkdtemp(prefix="tdsolve_package_")
    rng = np.random.default_rng(15)
    F["x"] = os.path.join(DIR, "x.npy")
    F["a"], F["b"] = os.path.join(DIR, "a.npy"), os.path.join(DIR, "b.npy")
    np.save(F["x"], rng.random((900, 3)))
    np.save(F["a"], rng.random((1500, 4)))
    np.save(F["b"], rng.random((120, 4)))
    common = ["--chunk-mb", "1", "--threads", "1", "--progress", "none", "--quiet"]
    F["edm"] = os.path.join(DIR, "edm.h5")
    tdsolve("edm", "--input", F["x"], "--output", F["edm"], "--precision", "float64", "--block", "16", *common,
            check=True)
    F["edm32"] = os.path.join(DIR, "edm32.h5")
    tdsolve("edm", "--input", F["x"], "--output", F["edm32"], "--metric", "cityblock", *common, check=True)
    F["cross"] = os.path.join(DIR, "cross.h5")
    tdsolve("cross", "--input", F["a"], "--with", F["b"], "--output", F["cross"], "--precision", "float64",
            "--metric", "chebyshev", *common, check=True)
    F["hist"] = os.path.join(DIR, "hist.h5")
    tdsolve("hist", "--input", F["x"], "--bins", "25", "--range", "0.1:1.1", "--precision", "float64",
            "--output", F["hist"], "--threads", "1", "--progress", "none", "--quiet", check=True)
    # A run killed before its chunk 3: only FILE.h5.partial, 3 chunks done.
    F["stopped"] = os.path.join(DIR, "stopped.h5")
    r = tdsolve("edm", "--input", F["x"], "--output", F["stopped"], "--precision", "float64", "--block", "16",
                *common, env={"TDSOLVE_TEST_FAULT": "0:3:kill"})
    assert r.returncode != 0, "the injected kill did not stop the run"
    # Triplets (k = 3): stored energies in several chunks; sums only, with cutoffs; and the first
    # job stopped cleanly after its first chunk (triplet flags are set at checkpoints and stops).
    trip = ["triplet", "--generate", "uniform:200:3:7", "--precision", "float64", "--store-triplets",
            "--chunk-mb", "1", "--threads", "1", "--progress", "none", "--quiet"]
    F["trip"] = os.path.join(DIR, "trip.h5")
    tdsolve(*trip, "--output", F["trip"], "--store-points", check=True)
    F["trip0"] = os.path.join(DIR, "trip0.h5")
    tdsolve("triplet", "--generate", "uniform:120:3:2", "--nu", "2.5", "--cutoff", "0.5", "--cutoff-triple", "0.4",
            "--output", F["trip0"], "--threads", "1", "--progress", "none", "--quiet", check=True)
    F["trip_stopped"] = os.path.join(DIR, "trip_stopped.h5")
    r = tdsolve(*trip, "--output", F["trip_stopped"], "--max-hours", "0.0000001", env={"TDSOLVE_TEST_SLOW_MS": "200"})
    assert r.returncode != 0 and os.path.exists(F["trip_stopped"] + ".partial"), r.stdout + r.stderr
    # kNN and radius files (`tdsolve knn`), synthetic: written with h5py in the documented layout.
    F["kx"] = rng.random((300, 3))
    F["knn"] = os.path.join(DIR, "knn.h5")
    write_knn(F["knn"], F["kx"], 7, chunks=5)
    F["knn32"] = os.path.join(DIR, "knn32.h5")
    write_knn(F["knn32"], F["kx"], 4, chunks=3, metric="cityblock", precision="float32")
    F["radius"] = os.path.join(DIR, "radius.h5")
    write_radius(F["radius"], F["kx"], 0.15, chunks=4)
    F["radius_stopped"] = os.path.join(DIR, "radius_stopped.h5")
    write_radius(F["radius_stopped"], F["kx"], 0.15, chunks=4, finished=False)
    F["knn_plain"] = os.path.join(DIR, "knn_plain.h5")  # without dimension scales
    write_knn(F["knn_plain"], F["kx"], 5, chunks=2, scales=False)
    F["radius_plain"] = os.path.join(DIR, "radius_plain.h5")
    write_radius(F["radius_plain"], F["kx"], 0.1, chunks=2, scales=False)
    F["radius_none"] = os.path.join(DIR, "radius_none.h5")  # a radius no pair is within
    write_radius(F["radius_none"], F["kx"], 1e-6, chunks=2)


def tearDownModule():
    shutil.rmtree(DIR, ignore_errors=True)


def x_points():
    return np.load(F["x"])


class InstallTest(unittest.TestCase):
    """pip installs python/ into a fresh venv (--system-site-packages:
    Debian's h5py and NumPy): the reader alone (TDSOLVE_READER_ONLY=1), and
    with the extension of a build (TDSOLVE_BUILD_DIR), whose venv then runs
    tdsolve.pdist; python/ out of the repository without either is refused.
    (The extension's build from the repository itself, python/setup.py's
    default, runs the project's CMake: jobs/setup-and-demo.sh's path, not
    timed here.)"""

    def install(self, tmp, extra_env):
        """python/ copied alone into tmp, pip-installed into a fresh venv with
        extra_env: (the pip result, the venv's python, the environment)."""
        src = os.path.join(tmp, "src")
        shutil.copytree(PACKAGE_SRC, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        venv = os.path.join(tmp, "venv")
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "PYTHONHOME", "TDSOLVE_CORE", "TDSOLVE_BUILD_DIR", "TDSOLVE_READER_ONLY")}
        env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        r = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], capture_output=True,
                           text=True, timeout=300, env=env)
        self.assertEqual(r.returncode, 0, f"python3 -m venv failed (Debian: python3-venv):\n{r.stdout}{r.stderr}")
        py = os.path.join(venv, "bin", "python")
        r = subprocess.run([py, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index", src],
                           capture_output=True, text=True, timeout=600, env=dict(env, **extra_env), cwd=tmp)
        return r, py, env

    def test_installs_into_a_fresh_venv(self):
        tmp = tempfile.mkdtemp(prefix="tdsolve_venv_")
        try:
            r, py, env = self.install(tmp, {"TDSOLVE_READER_ONLY": "1"})
            self.assertEqual(r.returncode, 0, f"pip install failed:\n{r.stdout}{r.stderr}")
            script = textwrap.dedent("""
                import importlib.metadata as md, os, sys
                import numpy as np
                import tdsolve
                from scipy.spatial.distance import pdist, squareform
                here = os.path.realpath(tdsolve.__file__)
                assert here.startswith(os.path.realpath(sys.prefix) + os.sep), here
                assert md.version("tdsolve") == tdsolve.__version__
                reqs = [r.split()[0] for r in md.requires("tdsolve") if "extra ==" not in r]
                assert sorted(reqs) == ["h5py", "numpy"], reqs
                x = np.load(sys.argv[2])
                with tdsolve.open(sys.argv[1]) as r:
                    assert (r.kind, r.n, r.shape) == ("edm", len(x), (len(x) * (len(x) - 1) // 2,))
                    np.testing.assert_allclose(r[:], pdist(x), rtol=1e-12)
                    np.testing.assert_allclose(r.rows(len(x) - 7, len(x)), squareform(pdist(x))[-7:], rtol=1e-12)
                assert tdsolve.check(sys.argv[1]).exit_code == 0
                try:
                    tdsolve.pdist(x)
                    raise SystemExit("the reader alone ran tdsolve.pdist")
                except ImportError as e:
                    assert "_core" in str(e), e
                print("installed at", here)
                """)
            r = subprocess.run([py, "-c", script, F["edm"], F["x"]], capture_output=True, text=True, timeout=120,
                               env=env, cwd=tmp)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("installed at", r.stdout)
            r = subprocess.run([py, "-m", "tdsolve", F["edm"]], capture_output=True, text=True, timeout=120,
                               env=env, cwd=tmp)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("complete", r.stdout)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_installs_with_the_extension_of_a_build(self):
        build = os.environ.get("TDSOLVE_PYTHON_BUILD")
        if not build:
            self.skipTest("the extension tdsolve._core is not in this build (pybind11-dev python3-dev)")
        tmp = tempfile.mkdtemp(prefix="tdsolve_venv_")
        try:
            r, py, env = self.install(tmp, {"TDSOLVE_BUILD_DIR": os.path.dirname(build)})
            self.assertEqual(r.returncode, 0, f"pip install failed:\n{r.stdout}{r.stderr}")
            self.assertRegex(r.stdout, r"tdsolve-[0-9.]+-cp3[0-9]+-cp3[0-9]+-linux_", "not a platform wheel")
            script = textwrap.dedent("""
                import os, sys
                import numpy as np
                import tdsolve
                from scipy.spatial.distance import cdist, pdist
                here = os.path.realpath(tdsolve._core.__file__)
                assert here.startswith(os.path.realpath(sys.prefix) + os.sep), here
                x = np.load(sys.argv[1])
                assert np.array_equal(tdsolve.pdist(x), pdist(x))
                assert np.array_equal(tdsolve.cdist(x[:40], x[40:], "cityblock"), cdist(x[:40], x[40:], "cityblock"))
                print("extension at", here)
                """)
            r = subprocess.run([py, "-c", script, F["x"]], capture_output=True, text=True, timeout=120, env=env,
                               cwd=tmp)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("extension at", r.stdout)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_out_of_the_repository_without_a_build_is_refused(self):
        tmp = tempfile.mkdtemp(prefix="tdsolve_venv_")
        try:
            r, _, _ = self.install(tmp, {})
            self.assertNotEqual(r.returncode, 0, r.stdout)
            self.assertIn("TDSOLVE_READER_ONLY=1", r.stdout + r.stderr)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class EdmTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # What the package reads is compared exactly with the file's values
        # read by plain h5py (c, D), and those with SciPy.
        cls.x = x_points()
        with h5py.File(F["edm"], "r") as f:
            cls.c = f["distances"][()]
        cls.D = squareform(cls.c)

    def test_values_are_scipys(self):
        np.testing.assert_allclose(self.c, pdist(self.x), rtol=1e-12)

    def test_shape_and_attributes(self):
        n, N = len(self.x), len(self.c)
        with tdpkg.open(F["edm"]) as r:
            self.assertEqual((r.kind, r.n, r.shape, len(r), r.metric, r.precision, r.features),
                             ("edm", n, (N,), N, "euclidean", "float64", 3))
            self.assertTrue(r.complete)
            self.assertEqual(r.dtype, np.float64)
            self.assertGreater(r.chunks, 2, "the test wants a file of several chunks")
            self.assertEqual(r.chunks_done, r.chunks)
        with tdpkg.open(F["edm32"]) as r:
            self.assertEqual((r.metric, r.precision, r.dtype), ("cityblock", "float32", np.float32))
            np.testing.assert_allclose(r[:], pdist(self.x, "cityblock"), rtol=1e-5)

    def test_getitem_is_numpy_indexing_of_the_condensed_vector(self):
        c, N = self.c, len(self.c)
        rng = np.random.default_rng(3)
        keys = [0, 7, -1, -N, np.int64(12), slice(None), slice(10, 500), slice(None, None, 17),
                slice(N - 1, None, -1), slice(900, 3, -7), slice(-40, None), slice(5, 5), Ellipsis, (slice(3, 9),),
                [5, 1, 5, N - 1, -2], np.array([[0, 3], [3, 2]]), rng.integers(-N, N, 4000),
                rng.random(N) < 0.01, np.array([], dtype=np.int64)]
        for access in ACCESSES:
            with self.subTest(access=access), tdpkg.open(F["edm"], access=access) as r:
                for key in keys:
                    got, want = r[key], c[key]
                    self.assertEqual(np.shape(got), np.shape(want), f"r[{key!r}]")
                    np.testing.assert_array_equal(got, want, f"r[{key!r}]")
                for bad in (N, -N - 1, [0, N]):
                    with self.assertRaises(IndexError):
                        r[bad]
                with self.assertRaises(IndexError):
                    r[1, 2]

    def test_rows_block_square_row_pair(self):
        n, D = len(self.x), self.D
        rng = np.random.default_rng(4)
        for access in ACCESSES:
            with self.subTest(access=access), tdpkg.open(F["edm"], access=access) as r:
                for i0, i1 in [(0, 1), (0, n), (n - 100, n), (n - 1, n), (450, 467), (3, 3), (-5, None)]:
                    np.testing.assert_array_equal(r.rows(i0, i1), D[i0:i1], f"rows({i0}, {i1})")
                for _ in range(60):
                    i0, i1 = sorted(rng.integers(0, n + 1, 2))
                    j0, j1 = sorted(rng.integers(0, n + 1, 2))
                    for I, J in [((i0, i1), (j0, j1)), (slice(i0, i1), range(j0, j1))]:
                        np.testing.assert_array_equal(r.block(I, J), D[i0:i1, j0:j1], f"block({I}, {J})")
                np.testing.assert_array_equal(r.block(None, None), D)  # the path square() takes without SciPy
                np.testing.assert_array_equal(r.square(), D)
                for i in (0, 1, n // 2, n - 1):
                    np.testing.assert_array_equal(r.row(i), D[i])
                for i, j in [(0, 1), (1, 0), (n - 1, 0), (17, 17)]:
                    self.assertEqual(r.pair(i, j), D[i, j])
                self.assertEqual(tdpkg.pair_index(n, 5, 2), tdpkg.pair_index(n, 2, 5))
                with self.assertRaises(ValueError):
                    r.block(slice(0, 10, 2), None)
                with self.assertRaises(IndexError):
                    r.row(n)

    def test_square_refuses_what_was_not_asked_for(self):
        n = len(self.x)
        with tdpkg.open(F["edm"]) as r:
            with self.assertRaises(ValueError) as e:
                r.square(max_bytes=1000)
            self.assertIn(f"n = {n}", str(e.exception))
            self.assertIn("max_bytes", str(e.exception))
            self.assertIn("rows(", str(e.exception))
            np.testing.assert_array_equal(r.square(max_bytes=None), self.D)

    def test_iter_chunks_are_the_files_chunks(self):
        with h5py.File(F["edm"], "r") as f:
            offsets = f["progress/offsets"][:]
        for access in ACCESSES:
            with self.subTest(access=access), tdpkg.open(F["edm"], access=access) as r:
                parts = list(r.iter_chunks())
                self.assertEqual([o for o, _ in parts], [int(o) for o in offsets[:-1]])
                for o, v in parts:
                    np.testing.assert_array_equal(v, self.c[o:o + len(v)])
                self.assertEqual(sum(len(v) for _, v in parts), len(self.c))

    def test_wrong_kind_is_a_type_error(self):
        with tdpkg.open(F["edm"]) as r:
            for call in (r.matrix, lambda: r.counts):
                with self.assertRaises((TypeError, AttributeError)):
                    call()


class CrossTest(unittest.TestCase):
    def test_cross_matches_cdist(self):
        a, b = np.load(F["a"]), np.load(F["b"])
        with h5py.File(F["cross"], "r") as f:
            offsets, C = f["progress/offsets"][:], f["distances"][()]
        np.testing.assert_allclose(C, cdist(a, b, "chebyshev"), rtol=1e-12)
        M, K = C.shape
        rng = np.random.default_rng(5)
        for access in ("auto", "hdf5"):
            with tdpkg.open(F["cross"], access=access) as r:
                self.assertEqual((r.kind, r.shape, len(r), r.n, r.metric, r.precision), ("cross", (M, K), M, None,
                                                                                        "chebyshev", "float64"))
                self.assertGreater(r.chunks, 1)
                for key in [3, -1, (4, 5), (slice(None), 7), (slice(10, 20), slice(None, None, 3)),
                            (slice(None, None, -5), slice(100, 2, -9)), ([7, 1, 7], slice(None)), (Ellipsis, -2),
                            (slice(5, 5), slice(None))]:
                    got = r[key]
                    self.assertEqual(got.shape, C[key].shape, f"r[{key!r}]")
                    np.testing.assert_array_equal(got, C[key], f"r[{key!r}]")
                rows, cols = rng.integers(0, M, 40), rng.integers(0, K, 9)
                np.testing.assert_array_equal(r[rows, cols], C[np.ix_(rows, cols)])  # per axis, as h5py
                np.testing.assert_array_equal(r.rows(100, 350), C[100:350])
                np.testing.assert_array_equal(r.block((7, 1200), range(3, 50)), C[7:1200, 3:50])
                np.testing.assert_array_equal(r.matrix(), C)
                parts = list(r.iter_chunks())
                self.assertEqual([row for row, _ in parts], [int(o) // K for o in offsets[:-1]])
                np.testing.assert_array_equal(np.concatenate([v for _, v in parts]), C)
                with self.assertRaises(TypeError):
                    r.square()


class HistTest(unittest.TestCase):
    def test_hist_matches_numpy_histogram(self):
        d = pdist(x_points())
        counts, edges = np.histogram(d, 25, (0.1, 1.1))
        with tdpkg.open(F["hist"]) as r:
            self.assertEqual((r.kind, r.n, r.bins, r.range, r.shape, len(r)), ("hist", 900, 25, (0.1, 1.1), (25,), 25))
            np.testing.assert_array_equal(r.counts, counts)
            np.testing.assert_array_equal(r[3:7], counts[3:7])
            np.testing.assert_array_equal(r.edges, edges)
            self.assertEqual((r.underflow, r.overflow), (int(np.sum(d < 0.1)), int(np.sum(d > 1.1))))
            self.assertIsNone(r.rdf)
            for call in (lambda: r.rows(0, 1), r.iter_chunks, r.square):
                with self.assertRaises(TypeError):
                    call()


class StoppedRunTest(unittest.TestCase):
    def test_partial_file_is_read_only_when_asked(self):
        out = F["stopped"]
        self.assertFalse(os.path.exists(out))
        self.assertTrue(os.path.exists(out + ".partial"))
        with self.assertRaises(tdpkg.IncompleteResult) as e:
            tdpkg.open(out)
        self.assertIn(out + ".partial", str(e.exception))
        with h5py.File(F["edm"], "r") as f:  # the same job, complete
            c = f["distances"][()]
        with tdpkg.open(out, require_complete=False) as r:
            self.assertEqual(r.path, out + ".partial")
            self.assertFalse(r.complete)
            self.assertEqual(r.chunks_done, 3)
            parts = list(r.iter_chunks())
            self.assertEqual(len(parts), 3)
            for o, v in parts:  # the chunks it flags hold final values
                np.testing.assert_array_equal(v, c[o:o + len(v)])
            self.assertEqual(len(list(r.iter_chunks(done_only=False))), r.chunks)
        v = tdpkg.check(out)
        self.assertEqual((v.status, v.exit_code, v.file), ("incomplete", 3, out + ".partial"))
        self.assertEqual(tdsolve("info", out).returncode, 3)


# --- triplets (k = 3) ------------------------------------------------------------


def combination_position(n, i, j, k):
    """Big-int position of i<j<k in itertools.combinations(range(n), 3), by
    the combinatorial number system on the complements (independent of the
    package's formula)."""
    return math.comb(n, 3) - 1 - (math.comb(n - 1 - i, 3) + math.comb(n - 1 - j, 2) + (n - 1 - k))


class TripletTest(unittest.TestCase):
    def raw(self, key):
        with h5py.File(F[key], "r") as f:
            return {name: f[name][()] for name in ("energy", "energy_per_point", "forces", "triplet_energy",
                                                   "progress/offsets") if name in f}, dict(f["energy"].attrs)

    def test_values_are_the_files(self):
        for key, n, stored in (("trip", 200, True), ("trip0", 120, False)):
            raw, attrs = self.raw(key)
            for access in ACCESSES:
                with self.subTest(file=key, access=access), tdpkg.open(F[key], access=access) as r:
                    self.assertEqual((r.kind, r.n, r.k, r.potential, r.triplets, r.stored, r.complete),
                                     ("triplet", n, 3, "atm", math.comb(n, 3), stored, True))
                    self.assertEqual((r.nu, r.cutoff, r.cutoff_triple, r.precision, r.block),
                                     (float(attrs["nu"]), float(attrs["cutoff"]), float(attrs["cutoff_triple"]),
                                      attrs["precision"], int(attrs["block"])))
                    self.assertEqual(r.formula, attrs["formula"])
                    self.assertEqual(set(r.attrs), set(attrs))
                    e = r.energy
                    self.assertIsInstance(e, float)
                    self.assertEqual(e, raw["energy"])
                    np.testing.assert_array_equal(r.energy_per_point, raw["energy_per_point"])
                    np.testing.assert_array_equal(r.forces, raw["forces"])
                    self.assertEqual((r.energy_per_point.shape, r.forces.shape), ((n,), (n, 3)))
                    self.assertNotEqual(e, 0.0)
                    np.testing.assert_allclose(r.energy_per_point.sum(), e, rtol=1e-12)
                    self.assertEqual(r.chunks_done, r.chunks)
                    if not stored:
                        self.assertEqual((r.shape, r.dtype), ((), None))
                        for call in (lambda: r[0], lambda: len(r), lambda: r.triplet(0, 1, 2), r.triplet_energies,
                                     lambda: list(r.iter_chunks())):
                            with self.assertRaises(TypeError) as ctx:
                                call()
                            self.assertIn("--store-triplets", str(ctx.exception))
                        continue
                    t = raw["triplet_energy"]
                    N = len(t)
                    self.assertEqual((r.shape, len(r), r.dtype), ((N,), N, t.dtype))
                    np.testing.assert_array_equal(r.triplet_energies(), t)
                    np.testing.assert_allclose(t.sum(), e, rtol=1e-9)  # the stored energies add up to /energy
                    rng = np.random.default_rng(8)
                    for k in [0, -1, 12345, slice(100, 5000), slice(None, None, 997), slice(N - 1, 3, -1001),
                              rng.integers(-N, N, 3000), np.array([[1, 1], [N - 1, 0]]), rng.random(N) < 0.001]:
                        got = r[k]
                        self.assertEqual(np.shape(got), np.shape(t[k]), f"r[{k!r}]")
                        np.testing.assert_array_equal(got, t[k], f"r[{k!r}]")
                    for i, j, k in [(0, 1, 2), (n - 3, n - 2, n - 1), (5, 77, 150), (150, 5, 77)]:
                        self.assertEqual(r.triplet(i, j, k), t[combination_position(n, *sorted((i, j, k)))])
                    self.assertGreater(r.chunks, 2, "the test wants a file of several chunks")
                    parts = list(r.iter_chunks())
                    self.assertEqual([o for o, _ in parts], [int(o) for o in raw["progress/offsets"][:-1]])
                    np.testing.assert_array_equal(np.concatenate([v for _, v in parts]), t)
                    for call in (r.square, lambda: r.rows(0, 1), r.condensed):
                        with self.assertRaises(TypeError):
                            call()

    def test_cutoffs_none_read_as_inf(self):
        with tdpkg.open(F["trip"]) as r:
            self.assertEqual((r.nu, r.cutoff, r.cutoff_triple), (1.0, math.inf, math.inf))
        with tdpkg.open(F["trip0"]) as r:
            self.assertEqual((r.nu, r.cutoff, r.cutoff_triple), (2.5, 0.5, 0.4))

    def test_triplet_index_is_the_combinations_order(self):
        for n in range(1, 41):
            combos = list(itertools.combinations(range(n), 3))
            for p in ((0, 1, 2), (2, 0, 1), (1, 2, 0)):  # any order of the three points
                if not combos:
                    continue
                a = np.array(combos, dtype=np.int64)
                got = tdpkg.triplet_index(n, a[:, p[0]], a[:, p[1]], a[:, p[2]])
                self.assertEqual(got.dtype, np.int64)
                np.testing.assert_array_equal(got, np.arange(len(combos)), f"n = {n}")
            for pos, (i, j, k) in enumerate(combos[::7]):
                got = tdpkg.triplet_index(n, i, j, k)
                self.assertEqual((type(got), got), (int, 7 * pos))
            with self.assertRaises(IndexError):  # a point out of range
                tdpkg.triplet_index(n, 0, 1, n)
        self.assertEqual(tdpkg.triplet_index(10, np.int32(9), np.uint8(8), 7), 119)
        np.testing.assert_array_equal(tdpkg.triplet_index(6, 0, 1, np.array([[2, 3], [4, 5]])), [[0, 1], [2, 3]])
        for bad in [(5, 1, 1, 2), (5, 3, 3, 3), (5, -1, 1, 2), (2, 0, 1, 2), (5, np.array([0, 1]), 1, 2)]:
            with self.assertRaises(IndexError, msg=str(bad)):
                tdpkg.triplet_index(*bad)
        with self.assertRaises(TypeError):
            tdpkg.triplet_index(5, 0.0, 1, 2)

    def test_triplet_index_is_exact_for_large_n(self):
        rng = np.random.default_rng(33)
        top = 3810779  # the largest n whose C(n,3) fits in int64
        for n in [3, 1000, 2 ** 21, 2 ** 21 + 1, 3000000, top - 1, top] + rng.integers(3, top, 20).tolist():
            m = 2000
            x = np.stack([rng.choice(n, 3, replace=False) for _ in range(m)]) if n < 100 else \
                rng.integers(0, n, (m, 3))
            x = x[(x[:, 0] != x[:, 1]) & (x[:, 1] != x[:, 2]) & (x[:, 0] != x[:, 2])]
            x = np.concatenate([x, [[0, 1, 2], [n - 3, n - 2, n - 1], [0, n - 2, n - 1], [n - 1, 0, 1]]])
            got = tdpkg.triplet_index(n, x[:, 0], x[:, 1], x[:, 2])
            want = [combination_position(n, *sorted(map(int, t))) for t in x]
            self.assertEqual(got.tolist(), want, f"n = {n}")
            self.assertEqual(int(got[-3]), math.comb(n, 3) - 1)
        self.assertLess(math.comb(top, 3), 2 ** 63)
        self.assertGreaterEqual(math.comb(top + 1, 3), 2 ** 63)
        with self.assertRaises(OverflowError):
            tdpkg.triplet_index(top + 1, 0, 1, 2)

    def test_incomplete_triplet_file(self):
        out = F["trip_stopped"]
        self.assertFalse(os.path.exists(out))
        with self.assertRaises(tdpkg.IncompleteResult) as e:
            tdpkg.open(out)
        self.assertIn(out + ".partial", str(e.exception))
        with self.assertRaises(tdpkg.IncompleteResult):
            tdpkg.open(out + ".partial")
        with self.assertRaises(tdpkg.IncompleteResult):
            tdsolve_h5.open_result(out)
        raw, _ = self.raw("trip")  # the same job, complete
        with tdpkg.open(out, require_complete=False) as r:
            self.assertEqual((r.kind, r.complete, r.n), ("triplet", False, 200))
            self.assertGreater(r.chunks_done, 0)
            self.assertLess(r.chunks_done, r.chunks)
            for what in ("energy", "energy_per_point", "forces"):  # written only when every chunk is done
                with self.assertRaises(tdpkg.IncompleteResult, msg=what):
                    getattr(r, what)
            parts = list(r.iter_chunks())
            self.assertEqual(len(parts), r.chunks_done)
            for o, v in parts:  # the chunks it flags hold final values
                np.testing.assert_array_equal(v, raw["triplet_energy"][o:o + len(v)])
        v = tdpkg.check(out)
        self.assertEqual((v.status, v.exit_code, v.kind, v.file), ("incomplete", 3, "triplet", out + ".partial"))
        self.assertIn("of triplets", v.message)
        self.assertEqual(tdsolve("info", out).returncode, 3)

    def test_the_old_reader_opens_triplet_files(self):
        with tdsolve_h5.open_result(F["trip"]) as r:
            self.assertEqual((r.kind, r.n), ("triplet", 200))
            self.assertEqual(r.energy, self.raw("trip")[0]["energy"])


# --- tdsolve knn: the K nearest, and all pairs within a radius ----------------------


class KnnTest(unittest.TestCase):
    def test_values_and_reads(self):
        x = F["kx"]
        n = len(x)
        for key, k, metric, dt in (("knn", 7, "euclidean", np.float64), ("knn32", 4, "cityblock", np.float32)):
            with h5py.File(F[key], "r") as f:
                I, D, offsets = f["indices"][()], f["distances"][()], f["progress/offsets"][()]
            # what the synthetic file holds is the definition: nearest first, ties by index
            full = cdist(x, x, metric)
            np.fill_diagonal(full, np.inf)
            np.testing.assert_allclose(D, np.sort(full, axis=1)[:, :k], rtol=1e-6)
            for access in ACCESSES:
                with self.subTest(file=key, access=access), tdpkg.open(F[key], access=access) as r:
                    self.assertIsInstance(r, tdpkg.KnnResult)
                    self.assertEqual((r.kind, r.n, r.k, r.shape, len(r), r.metric, r.dtype, r.features),
                                     ("knn", n, k, (n, k), n, metric, dt, 3))
                    self.assertTrue(r.complete)
                    np.testing.assert_array_equal(r.indices, I)
                    np.testing.assert_array_equal(r.distances, D)
                    self.assertEqual(r.indices.dtype, np.int64)
                    for i0, i1 in [(0, 1), (0, n), (17, 93), (n - 1, n), (5, 5), (-10, None)]:
                        gi, gd = r.rows(i0, i1)
                        np.testing.assert_array_equal(gi, I[i0:i1], f"rows({i0}, {i1})")
                        np.testing.assert_array_equal(gd, D[i0:i1], f"rows({i0}, {i1})")
                    gi, gd = r.row(-1)
                    np.testing.assert_array_equal(gi, I[-1])
                    np.testing.assert_array_equal(gd, D[-1])
                    for key_ in [3, -1, slice(10, 20), slice(None, None, -7), [9, 2, 9], np.array([[1], [0]]),
                                 (slice(None), 0), (slice(5, 50, 3), slice(1, None)), (Ellipsis, -1)]:
                        gi, gd = r[key_]
                        np.testing.assert_array_equal(gi, I[key_], f"r[{key_!r}]")
                        np.testing.assert_array_equal(gd, D[key_], f"r[{key_!r}]")
                    parts = list(r.iter_chunks())
                    self.assertEqual(len(parts), r.chunks)
                    self.assertEqual([a for a, _, _ in parts], [int(o) // k for o in offsets[:-1]])
                    np.testing.assert_array_equal(np.concatenate([i for _, i, _ in parts]), I)
                    np.testing.assert_array_equal(np.concatenate([d for _, _, d in parts]), D)
                    for call in (r.square, r.matrix, lambda: r.to_sparse()):
                        with self.assertRaises((TypeError, AttributeError)):
                            call()

    def test_incomplete_knn_file(self):
        path = os.path.join(DIR, "knn_partial.h5")
        write_knn(path, F["kx"][:50], 3, chunks=4, done=[1, 0, 1, 0])
        with self.assertRaises(tdpkg.IncompleteResult):
            tdpkg.open(path)
        with tdpkg.open(path, require_complete=False) as r:
            self.assertEqual((r.complete, r.chunks, r.chunks_done), (False, 4, 2))
            self.assertEqual(len(list(r.iter_chunks())), 2)
            with self.assertRaises(tdpkg.IncompleteResult):  # chunk 1 is not written: its indices are refused
                list(r.iter_chunks(done_only=False))
        v = tdpkg.check(path)
        self.assertEqual((v.status, v.kind), ("incomplete", "knn"))
        info = subprocess.run([BIN, "info", path], capture_output=True, text=True, timeout=60)
        self.assertEqual(info.returncode, 3, info.stdout + info.stderr)
        self.assertIn("INCOMPLETE", info.stdout)

    def test_info_describes_it(self):
        info = subprocess.run([BIN, "info", F["knn"]], capture_output=True, text=True, timeout=60)
        self.assertEqual(info.returncode, 0, info.stdout + info.stderr)
        self.assertIn("knn:       300 points, the 7 nearest of each (metric euclidean, precision float64)",
                      info.stdout)
        self.assertIn("indices:   /indices int64[300 x 7]", info.stdout)
        self.assertIn("complete (5 of 5 chunks)", info.stdout)


class PairsTest(unittest.TestCase):
    def test_values_and_reads(self):
        x = F["kx"]
        n = len(x)
        full = cdist(x, x)
        i, j = np.nonzero(np.triu(full <= 0.15, 1))
        with tdpkg.open(F["radius"]) as r:
            self.assertIsInstance(r, tdpkg.PairsResult)
            m = len(i)
            self.assertGreater(m, 100, "the test wants a few pairs")
            self.assertEqual((r.kind, r.n, r.radius, r.count, len(r), r.shape, r.metric, r.precision, r.dtype),
                             ("radius", n, 0.15, m, m, (m,), "euclidean", "float64", np.float64))
            self.assertTrue(r.complete)
            P, D = r.pairs, r.distances
            self.assertEqual((P.dtype, P.shape, D.shape), (np.int64, (m, 2), (m,)))
            np.testing.assert_array_equal(P, np.stack([i, j], axis=1))
            np.testing.assert_allclose(D, full[i, j], rtol=1e-12)
            for key in [0, -1, slice(5, 40), slice(None, None, -3), [7, 1, 7], np.arange(m) % 5 == 0]:
                gp, gd = r[key]
                np.testing.assert_array_equal(gp, P[key], f"r[{key!r}]")
                np.testing.assert_array_equal(gd, D[key], f"r[{key!r}]")
            S = r.to_sparse()
            self.assertEqual((S.shape, S.nnz, S.format), ((n, n), m, "coo"))
            dense = S.toarray()
            np.testing.assert_allclose(dense, np.where(np.triu(full <= 0.15, 1), full, 0), rtol=1e-12)
            for rows in (1, 37, m, 10 ** 6):
                parts = list(r.iter_chunks(rows))
                self.assertEqual([a for a, _, _ in parts], list(range(0, m, rows)))
                np.testing.assert_array_equal(np.concatenate([p for _, p, _ in parts]), P)
                np.testing.assert_array_equal(np.concatenate([d for _, _, d in parts]), D)
            with self.assertRaises(TypeError):
                r.rows(0, 1)
        with tdpkg.open(F["radius_none"]) as r:
            self.assertEqual((r.count, r.pairs.shape, r.distances.shape, r.to_sparse().nnz), (0, (0, 2), (0,), 0))
            self.assertEqual(list(r.iter_chunks()), [])

    def test_stopped_radius_file(self):
        path = F["radius_stopped"]
        with self.assertRaises(tdpkg.IncompleteResult):
            tdpkg.open(path)
        with tdpkg.open(path, require_complete=False) as r:
            self.assertEqual((r.complete, r.chunks_done), (False, 0))
            with self.assertRaises(tdpkg.IncompleteResult):  # no pair is written before the end: not 0 pairs
                r.count
            self.assertEqual(list(r.iter_chunks()), [])
        v = tdpkg.check(path)
        self.assertEqual((v.status, v.kind), ("incomplete", "radius"))

    def test_info_describes_it(self):
        info = subprocess.run([BIN, "info", F["radius"]], capture_output=True, text=True, timeout=60)
        self.assertEqual(info.returncode, 0, info.stdout + info.stderr)
        with h5py.File(F["radius"], "r") as f:
            m = f["pairs"].shape[0]
        self.assertIn(f"radius:    {m} pairs within 0.15 of 300 points (of 44850 pairs; metric euclidean, "
                      "precision float64)", info.stdout)
        self.assertIn("complete (4 of 4 chunks)", info.stdout)


# --- the verdict of tdsolve info, on damaged files -------------------------------


def _edit(path, fn):
    with h5py.File(path, "a") as f:
        fn(f)


def _replace(f, name, data):
    attrs = dict(f[name].attrs)
    del f[name]
    f[name] = data
    for k, v in attrs.items():
        f[name].attrs[k] = v


def _hist_cover_first(k):
    """Flags only chunks 0..k-1; counts that cover exactly their pairs."""
    def fn(f):
        off = f["progress/offsets"][()]
        done = f["progress/done"][()]
        done[k:] = 0
        f["progress/done"][...] = done
        f["counts"][...] = 0
        f["underflow"][()] = int(off[k])
        f["overflow"][()] = 0
    return fn


def _grow_attr(obj, name, count):
    """Attribute `name` of the dataset as `count` copies of its value."""
    def fn(f):
        v = f[obj].attrs[name]
        if isinstance(v, str):
            f[obj].attrs[name] = [v] * count
        else:
            f[obj].attrs[name] = np.full(count, v)
    return fn


# (name, base file, edit, the package's verdict, info_ub): info_ub marks files
# where io/info.cpp reads past a buffer (an array where it expects one value,
# a 2-D /progress dataset): its answer is undefined, so it is reported, not
# compared.
CASES = [
    ("complete edm", "edm", None, "complete", False),
    ("complete cross", "cross", None, "complete", False),
    ("complete hist", "hist", None, "complete", False),
    ("edm: last done flag cleared", "edm", set_value("progress/done", -1, 0), "incomplete", False),
    ("cross: first done flag cleared", "cross", set_value("progress/done", 0, 0), "incomplete", False),
    ("edm: a done flag of 2", "edm", set_value("progress/done", 0, 2), "incomplete", False),
    ("edm: offsets end short of C(n,2)", "edm", set_value("progress/offsets", -1, 1000), "inconsistent", False),
    ("edm: offsets not sorted", "edm", set_value("progress/offsets", 1, 10 ** 9), "inconsistent", False),
    ("edm: one offset too few", "edm", lambda f: _replace(f, "progress/offsets", f["progress/offsets"][:-1]),
     "inconsistent", False),
    ("edm: /distances one value short", "edm", lambda f: _replace(f, "distances", f["distances"][:-1]),
     "inconsistent", False),
    ("edm: n attribute off by one", "edm", lambda f: f["distances"].attrs.__setitem__("n", np.uint64(901)),
     "inconsistent", False),
    ("edm: no n attribute", "edm", lambda f: f["distances"].attrs.__delitem__("n"), "inconsistent", False),
    # The program's files say their kind: an edm file without its records is an inconsistent edm file
    # (a file that records no kind and these datasets is no tdsolve result: tests/e2e/test_schema.py).
    ("edm: no /progress", "edm", lambda f: f.__delitem__("progress"), "inconsistent", False),
    ("edm: no /progress/offsets", "edm", lambda f: f.__delitem__("progress/offsets"), "inconsistent", False),
    ("edm: /progress names /other", "edm", lambda f: f["progress"].attrs.__setitem__("dataset", "/other"),
     "inconsistent", False),
    ("cross: rows attribute wrong", "cross", lambda f: f["distances"].attrs.__setitem__("rows", np.uint64(7)),
     "inconsistent", False),
    ("hist: counts+under+over one too many", "hist", set_value("counts", 0, 10 ** 6), "inconsistent", False),
    ("hist: counts cover just the flagged chunks", "hist", _hist_cover_first(2), "incomplete", False),
    ("hist: flag 0 cleared, counts cover all", "hist", set_value("progress/done", 0, 0), "inconsistent", False),
    ("hist: no flag set", "hist", lambda f: f["progress/done"].__setitem__(Ellipsis, 0), "incomplete", False),
    ("hist: no /edges", "hist", lambda f: f.__delitem__("edges"), "inconsistent", False),
    ("hist: /underflow not a scalar", "hist", lambda f: _replace(f, "underflow", np.zeros(2, np.int64)),
     "inconsistent", False),
    ("hist: pairs attribute wrong", "hist", lambda f: f["counts"].attrs.__setitem__("pairs", np.uint64(5)),
     "inconsistent", False),
    ("edm: n attribute is a string", "edm", lambda f: f["distances"].attrs.__setitem__("n", "900"), "unreadable",
     False),
    ("edm: /distances is a group", "edm", lambda f: (f.__delitem__("distances"), f.create_group("distances")),
     "unreadable", False),
    ("edm: n attribute is [n], one element", "edm",
     lambda f: f["distances"].attrs.__setitem__("n", np.array([900], np.uint64)), "complete", False),
    ("edm: /progress/done is K x 1", "edm", lambda f: _replace(f, "progress/done", f["progress/done"][()][:, None]),
     "complete", False),
    ("edm: scalar /progress/done", "edm", lambda f: _replace(f, "progress/done", np.uint8(1)), "unreadable",
     False),
    ("truncated file (half)", "edm", "truncate", "unreadable", False),
    ("garbage bytes", None, "garbage", "unreadable", False),
    ("superblock overwritten", "edm", "smash", "unreadable", False),
    ("empty file", None, "empty", "unreadable", False),
    ("no such file", None, "missing", "unreadable", False),
    ("only FILE.h5.partial (killed run)", "stopped", "stopped", "incomplete", False),
    ("FILE.h5.partial named directly", "stopped", "stopped-partial", "incomplete", False),
    ("complete, still named .partial", "edm", "as-partial", "incomplete", False),
    ("2-D /progress/done (2 x K)", "edm",
     lambda f: _replace(f, "progress/done", np.stack([f["progress/done"][()]] * 2)), "inconsistent", False),
    ("2-D /progress/done (K x 2)", "edm",
     lambda f: _replace(f, "progress/done", np.stack([f["progress/done"][()]] * 2, axis=1)), "inconsistent", False),
    ("n attribute: 2 values", "edm", lambda f: f["distances"].attrs.__setitem__("n", np.array([900, 900], np.uint64)),
     "inconsistent", False),
    ("n attribute: 64 values", "edm", lambda f: f["distances"].attrs.__setitem__("n", np.full(64, 900, np.uint64)),
     "inconsistent", False),
    ("an extra 64-value attribute on /distances", "edm",
     lambda f: f["distances"].attrs.create("extra", np.arange(64, dtype=np.uint64)), "complete", False),
    ("edm: n attribute with no value (null)", "edm",
     lambda f: f["distances"].attrs.create("n", h5py.Empty("<u8")), "inconsistent", False),
    ("hist: range_lo with no value (null)", "hist",
     lambda f: f["counts"].attrs.create("range_lo", h5py.Empty("<f8")), "inconsistent", False),
    ("edm: /progress elements attribute wrong", "edm",
     lambda f: f["progress"].attrs.__setitem__("elements", np.uint64(7)), "inconsistent", False),
    ("hist: /progress elements attribute wrong", "hist",
     lambda f: f["progress"].attrs.__setitem__("elements", np.uint64(7)), "inconsistent", False),
    ("/progress dataset attribute: 2 strings", "edm", _grow_attr("progress", "dataset", 2), "inconsistent", False),
    ("complete triplet (stored energies)", "trip", None, "complete", False),
    ("complete triplet (sums only)", "trip0", None, "complete", False),
    ("triplet: a done flag cleared", "trip", set_value("progress/done", 1, 0), "incomplete", False),
    ("triplet (sums only): last flag cleared", "trip0", set_value("progress/done", -1, 0), "incomplete", False),
    ("triplet: stopped run, only .partial", "trip", "trip-stopped", "incomplete", False),
    ("triplet: offsets end short of C(n,3)", "trip", set_value("progress/offsets", -1, 1000), "inconsistent", False),
    ("triplet: one offset too few", "trip0",
     lambda f: _replace(f, "progress/offsets", f["progress/offsets"][:-1]), "inconsistent", False),
    ("triplet: /forces n x 2", "trip", lambda f: _replace(f, "forces", f["forces"][:, :2]), "inconsistent", False),
    ("triplet: /forces flat", "trip0", lambda f: _replace(f, "forces", f["forces"][()].reshape(-1)), "inconsistent",
     False),
    ("triplet: no /forces", "trip", lambda f: f.__delitem__("forces"), "inconsistent", False),
    ("triplet: /energy_per_point one short", "trip",
     lambda f: _replace(f, "energy_per_point", f["energy_per_point"][:-1]), "inconsistent", False),
    ("triplet: /progress/sums one row short", "trip0",
     lambda f: _replace(f, "progress/sums", f["progress/sums"][:-1]), "inconsistent", False),
    ("triplet: /progress/sums's limb window past limb 69", "trip",
     lambda f: f["progress/sums"].attrs.__setitem__("first_limb", np.uint64(70 - f["progress/sums"].shape[1])),
     "inconsistent", False),
    ("triplet: no /progress/sums", "trip0", lambda f: f.__delitem__("progress/sums"), "inconsistent", False),
    ("triplet: /triplet_energy one short", "trip",
     lambda f: _replace(f, "triplet_energy", f["triplet_energy"][:-1]), "inconsistent", False),
    ("triplet: /triplet_energy named but gone", "trip", lambda f: f.__delitem__("triplet_energy"), "inconsistent",
     False),
    ("triplet: /triplet_energy not named", "trip", lambda f: f["progress"].attrs.__setitem__("dataset", ""),
     "inconsistent", False),
    ("triplet: /triplet_energy n wrong", "trip",
     lambda f: f["triplet_energy"].attrs.__setitem__("n", np.uint64(201)), "inconsistent", False),
    ("triplet: /energy is 1-D", "trip0", lambda f: _replace(f, "energy", np.zeros(1)), "inconsistent", False),
    ("triplet: n off by one", "trip", lambda f: f["energy"].attrs.__setitem__("n", np.uint64(201)), "inconsistent",
     False),
    ("triplet: no n attribute", "trip0", lambda f: f["energy"].attrs.__delitem__("n"), "inconsistent", False),
    ("triplet: n attribute: 2 values", "trip", _grow_attr("energy", "n", 2), "inconsistent", False),
    ("triplet: nu attribute: 3 values", "trip0", _grow_attr("energy", "nu", 3), "inconsistent", False),
    ("triplet: potential attribute: 2 strings", "trip", _grow_attr("energy", "potential", 2), "inconsistent",
     False),
    ("triplet: formula attribute: 64 strings", "trip0", _grow_attr("energy", "formula", 64), "inconsistent", False),
    ("triplet: k is 2", "trip", lambda f: f["energy"].attrs.__setitem__("k", np.uint64(2)), "inconsistent", False),
    ("triplet: triplets attribute wrong", "trip0",
     lambda f: f["energy"].attrs.__setitem__("triplets", np.uint64(5)), "inconsistent", False),
    ("triplet: elements attribute wrong", "trip",
     lambda f: f["progress"].attrs.__setitem__("elements", np.uint64(5)), "inconsistent", False),
    ("triplet: no /energy", "trip0", lambda f: f.__delitem__("energy"), "inconsistent", False),  # it says triplet
    ("triplet: /energy is a group", "trip", lambda f: (f.__delitem__("energy"), f.create_group("energy")),
     "unreadable", False),
    ("triplet: nu is a string", "trip0", lambda f: f["energy"].attrs.__setitem__("nu", "one"), "unreadable", False),
    ("triplet: /forces is a group", "trip0", lambda f: (f.__delitem__("forces"), f.create_group("forces")),
     "unreadable", False),
    # A dataset of a type its description does not allow: the `dtype` check.
    ("triplet: /energy holds a string", "trip",
     lambda f: _replace(f, "energy", "not a number"), "inconsistent", False),
    # tdsolve knn --k K
    ("complete knn", "knn", None, "complete", False),
    ("complete knn (float32, cityblock)", "knn32", None, "complete", False),
    ("complete knn without dimension scales", "knn_plain", None, "complete", False),
    ("knn: a done flag cleared", "knn", set_value("progress/done", 2, 0), "incomplete", False),
    ("knn: every flag 0", "knn", lambda f: f["progress/done"].__setitem__(Ellipsis, 0), "incomplete", False),
    ("knn: no /indices", "knn", lambda f: f.__delitem__("indices"), "inconsistent", False),
    ("knn: /indices one row short", "knn", lambda f: _replace(f, "indices", f["indices"][:-1]), "inconsistent",
     False),
    ("knn: /indices K-1 columns", "knn", lambda f: _replace(f, "indices", f["indices"][:, :-1]), "inconsistent",
     False),
    ("knn: /indices flat", "knn32", lambda f: _replace(f, "indices", f["indices"][()].reshape(-1)), "inconsistent",
     False),
    ("knn: /distances one row short", "knn", lambda f: _replace(f, "distances", f["distances"][:-1]),
     "inconsistent", False),
    ("knn: /distances flat", "knn", lambda f: _replace(f, "distances", f["distances"][()].reshape(-1)),
     "inconsistent", False),
    ("knn: neighbors attribute wrong", "knn",
     lambda f: f["distances"].attrs.__setitem__("neighbors", np.uint64(6)), "inconsistent", False),
    ("knn: n attribute wrong", "knn", lambda f: f["distances"].attrs.__setitem__("n", np.uint64(301)),
     "inconsistent", False),
    ("knn: no neighbors attribute", "knn32", lambda f: f["distances"].attrs.__delitem__("neighbors"),
     "inconsistent", False),
    ("knn: no n attribute", "knn", lambda f: f["distances"].attrs.__delitem__("n"), "inconsistent", False),
    ("knn: no layout attribute (/indices says it)", "knn", lambda f: f["distances"].attrs.__delitem__("layout"),
     "complete", False),
    ("knn: neighbors is n (0 x 0 is no kNN)", "knn",
     lambda f: (_replace(f, "distances", np.zeros((300, 300))), _replace(f, "indices", np.zeros((300, 300), np.int64)),
                f["distances"].attrs.__setitem__("neighbors", np.uint64(300)),
                _replace(f, "progress/offsets", f["progress/offsets"][()] // 7 * 300),
                f["progress"].attrs.__setitem__("elements", np.uint64(90000))), "inconsistent", False),
    ("knn: /indices n attribute wrong", "knn", lambda f: f["indices"].attrs.__setitem__("n", np.uint64(3)),
     "inconsistent", False),
    ("knn: offsets not multiples of K", "knn", set_value("progress/offsets", 1, 50), "inconsistent", False),
    ("knn: offsets end short of n*K", "knn", set_value("progress/offsets", -1, 2093), "inconsistent", False),
    ("knn: offsets not sorted", "knn", set_value("progress/offsets", 1, 1400), "inconsistent", False),
    ("knn: one offset too few", "knn", lambda f: _replace(f, "progress/offsets", f["progress/offsets"][:-1]),
     "inconsistent", False),
    ("knn: elements attribute wrong", "knn", lambda f: f["progress"].attrs.__setitem__("elements", np.uint64(9)),
     "inconsistent", False),
    ("knn: 2-D /progress/done", "knn",
     lambda f: _replace(f, "progress/done", np.stack([f["progress/done"][()]] * 2)), "inconsistent", False),
    ("knn: neighbors attribute: 2 values", "knn", _grow_attr("distances", "neighbors", 2), "inconsistent", False),
    ("knn: metric attribute: 2 strings", "knn", _grow_attr("distances", "metric", 2), "inconsistent", False),
    ("knn: layout attribute: 2 strings (/indices says it)", "knn", _grow_attr("distances", "layout", 2), "complete",
     False),
    ("knn: neighbors is a string", "knn", lambda f: f["distances"].attrs.__setitem__("neighbors", "7"),
     "unreadable", False),
    ("knn: /indices is a group", "knn", lambda f: (f.__delitem__("indices"), f.create_group("indices")),
     "unreadable", False),
    ("knn: no /progress", "knn", lambda f: f.__delitem__("progress"), "not a result", False),
    # tdsolve knn --radius R
    ("complete radius", "radius", None, "complete", False),
    ("complete radius, no pair within", "radius_none", None, "complete", False),
    ("complete radius without dimension scales", "radius_plain", None, "complete", False),
    ("radius: stopped, flags 0 and no pairs", "radius_stopped", None, "incomplete", False),
    ("radius: pairs written, flags still 0", "radius", lambda f: f["progress/done"].__setitem__(Ellipsis, 0),
     "incomplete", False),
    ("radius: m mismatch (/distances one short)", "radius",
     lambda f: f["distances"].resize((f["distances"].shape[0] - 1,)), "inconsistent", False),
    ("radius: m mismatch (/pairs one short)", "radius", lambda f: f["pairs"].resize((f["pairs"].shape[0] - 1, 2)),
     "inconsistent", False),
    ("radius: /pairs m x 3", "radius", lambda f: _replace(f, "pairs", np.zeros((5, 3), np.int64)), "inconsistent",
     False),
    ("radius: /pairs flat", "radius", lambda f: _replace(f, "pairs", f["pairs"][()].reshape(-1)), "inconsistent",
     False),
    ("radius: no /distances", "radius", lambda f: f.__delitem__("distances"), "inconsistent", False),
    ("radius: no n attribute", "radius", lambda f: f["pairs"].attrs.__delitem__("n"), "inconsistent", False),
    ("radius: n too small for m", "radius", lambda f: f["pairs"].attrs.__setitem__("n", np.uint64(10)),
     "inconsistent", False),
    ("radius: offsets end short of C(n,2)", "radius", set_value("progress/offsets", -1, 100), "inconsistent", False),
    ("radius: one offset too few", "radius",
     lambda f: _replace(f, "progress/offsets", f["progress/offsets"][:-1]), "inconsistent", False),
    ("radius: elements attribute wrong", "radius",
     lambda f: f["progress"].attrs.__setitem__("elements", np.uint64(9)), "inconsistent", False),
    ("radius: 2-D /progress/done", "radius",
     lambda f: _replace(f, "progress/done", np.stack([f["progress/done"][()]] * 2, axis=1)), "inconsistent", False),
    ("radius: radius attribute: 2 values", "radius", _grow_attr("pairs", "radius", 2), "inconsistent", False),
    ("radius: radius is a string", "radius", lambda f: f["pairs"].attrs.__setitem__("radius", "wide"),
     "unreadable", False),
    ("radius: /distances is a group", "radius", lambda f: (f.__delitem__("distances"), f.create_group("distances")),
     "unreadable", False),
    ("radius: /pairs is a group", "radius", lambda f: (f.__delitem__("pairs"), f.create_group("pairs")),
     "unreadable", False),
    ("radius: beside /energy it is a triplet file", "radius", lambda f: f.create_dataset("energy", data=0.0),
     "inconsistent", False),
    ("radius: no /pairs", "radius", lambda f: f.__delitem__("pairs"), "not a result", False),
]


def make_case(dirname, i, base, edit):
    """The file (or path) of case i; returns the path to check."""
    path = os.path.join(dirname, f"case{i:02d}.h5")
    if edit == "missing":
        return path
    if edit in ("garbage", "empty"):
        with open(path, "wb") as f:
            f.write(np.random.default_rng(i).bytes(100000) if edit == "garbage" else b"")
        return path
    if edit in ("stopped", "stopped-partial"):
        shutil.copy(F["stopped"] + ".partial", path + ".partial")
        return path if edit == "stopped" else path + ".partial"
    if edit == "trip-stopped":
        shutil.copy(F["trip_stopped"] + ".partial", path + ".partial")
        return path
    shutil.copy(F[base], path)
    if edit == "truncate":
        os.truncate(path, os.path.getsize(path) // 2)
    elif edit == "smash":
        with open(path, "r+b") as f:
            f.write(b"\xff" * 1024)
    elif edit == "as-partial":
        os.rename(path, path + ".partial")
    elif edit is not None:
        _edit(path, edit)
    return path


class VerdictTest(unittest.TestCase):
    """tdsolve.check(FILE) against `tdsolve info FILE`: 0 complete, 3
    incomplete / inconsistent / not a result, 1 unreadable."""

    def test_same_verdict_as_tdsolve_info(self):
        tmp = tempfile.mkdtemp(prefix="tdsolve_verdict_", dir=DIR)
        notes, table = [], []
        for i, (name, base, edit, want, info_ub) in enumerate(CASES):
            path = make_case(tmp, i, base, edit)
            v = tdpkg.check(path)
            info = subprocess.run([BIN, "info", path], capture_output=True, text=True, timeout=60)
            table.append(f"{name:45s} info {info.returncode:4d}   package {v.exit_code} {v.status}")
            with self.subTest(case=name):
                self.assertEqual(v.status, want, f"{name}: {v.message}")
                if info_ub:
                    if info.returncode != v.exit_code:
                        how = ("crashed (signal %d)" % -info.returncode if info.returncode < 0
                               else f"exit {info.returncode}")
                        notes.append(f"{name}: tdsolve info {how}, the package says {v.status} ({v.exit_code})")
                else:
                    self.assertEqual(info.returncode, v.exit_code,
                                     f"{name}: tdsolve info says {info.returncode}, the package {v.status} "
                                     f"({v.message})\n{info.stdout}{info.stderr}")
                if v.status == "complete":
                    tdpkg.open(path).close()
                elif v.status == "unreadable":
                    with self.assertRaises(tdpkg.UnreadableResult):
                        tdpkg.open(path)
                else:
                    with self.assertRaises(tdpkg.IncompleteResult):
                        tdpkg.open(path)
        sys.stderr.write("\n" + "\n".join(table) + "\n")
        if notes:
            sys.stderr.write("where io/info.cpp has undefined behaviour:\n  " + "\n  ".join(notes) + "\n")

    def test_command_line_exit_codes(self):
        partial = F["stopped"]
        for path, code in [(F["edm"], 0), (F["hist"], 0), (partial, 3), (os.path.join(DIR, "nope.h5"), 1),
                           (F["trip"], 0), (F["trip0"], 0), (F["trip_stopped"], 3)]:
            r = subprocess.run([sys.executable, "-m", "tdsolve", path], capture_output=True, text=True,
                               env=dict(os.environ, PYTHONPATH=PACKAGE_SRC))
            self.assertEqual(r.returncode, code, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
