"""The `tdsolve` Python package (python/): it installs into a fresh venv;
it reads edm, cross and hist files as SciPy and NumPy compute them ([],
rows, block, square, iter_chunks, shape); it reads a stopped run's
FILE.h5.partial only when asked; and it calls a file complete, incomplete or
unreadable exactly when `tdsolve info` does, damaged files included."""
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

from common import BIN, tdsolve

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
                *common, env={"TDSOLVE_FAULT": "0:3:kill"})
    assert r.returncode != 0, "the injected kill did not stop the run"


def tearDownModule():
    shutil.rmtree(DIR, ignore_errors=True)


def x_points():
    return np.load(F["x"])


class InstallTest(unittest.TestCase):
    """pip installs python/ into a fresh venv (--system-site-packages:
    Debian's h5py and NumPy), and that venv's Python reads a file with it."""

    def test_installs_into_a_fresh_venv(self):
        tmp = tempfile.mkdtemp(prefix="tdsolve_venv_")
        try:
            src = os.path.join(tmp, "src")
            shutil.copytree(PACKAGE_SRC, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
            venv = os.path.join(tmp, "venv")
            env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
            env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
            r = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], capture_output=True,
                               text=True, timeout=300, env=env)
            self.assertEqual(r.returncode, 0, f"python3 -m venv failed (Debian: python3-venv):\n{r.stdout}{r.stderr}")
            py = os.path.join(venv, "bin", "python")
            r = subprocess.run([py, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index", src],
                               capture_output=True, text=True, timeout=300, env=env, cwd=tmp)
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


def _set(name, index, value):
    def fn(f):
        a = f[name][()]
        a[index] = value
        f[name][...] = a
    return fn


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


# (name, base file, edit, the package's verdict, info_ub): info_ub marks files
# where io/info.cpp reads past a buffer (an array where it expects one value,
# a 2-D /progress dataset): its answer is undefined, so it is reported, not
# compared.
CASES = [
    ("complete edm", "edm", None, "complete", False),
    ("complete cross", "cross", None, "complete", False),
    ("complete hist", "hist", None, "complete", False),
    ("edm: last done flag cleared", "edm", _set("progress/done", -1, 0), "incomplete", False),
    ("cross: first done flag cleared", "cross", _set("progress/done", 0, 0), "incomplete", False),
    ("edm: a done flag of 2", "edm", _set("progress/done", 0, 2), "incomplete", False),
    ("edm: offsets end short of C(n,2)", "edm", _set("progress/offsets", -1, 1000), "inconsistent", False),
    ("edm: offsets not sorted", "edm", _set("progress/offsets", 1, 10 ** 9), "inconsistent", False),
    ("edm: one offset too few", "edm", lambda f: _replace(f, "progress/offsets", f["progress/offsets"][:-1]),
     "inconsistent", False),
    ("edm: /distances one value short", "edm", lambda f: _replace(f, "distances", f["distances"][:-1]),
     "inconsistent", False),
    ("edm: n attribute off by one", "edm", lambda f: f["distances"].attrs.__setitem__("n", np.uint64(901)),
     "inconsistent", False),
    ("edm: no n attribute", "edm", lambda f: f["distances"].attrs.__delitem__("n"), "inconsistent", False),
    ("edm: no /progress", "edm", lambda f: f.__delitem__("progress"), "not a result", False),
    ("edm: no /progress/offsets", "edm", lambda f: f.__delitem__("progress/offsets"), "not a result", False),
    ("edm: /progress names /other", "edm", lambda f: f["progress"].attrs.__setitem__("dataset", "/other"),
     "not a result", False),
    ("cross: rows attribute wrong", "cross", lambda f: f["distances"].attrs.__setitem__("rows", np.uint64(7)),
     "inconsistent", False),
    ("hist: counts+under+over one too many", "hist", _set("counts", 0, 10 ** 6), "inconsistent", False),
    ("hist: counts cover just the flagged chunks", "hist", _hist_cover_first(2), "incomplete", False),
    ("hist: flag 0 cleared, counts cover all", "hist", _set("progress/done", 0, 0), "inconsistent", False),
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
        for path, code in [(F["edm"], 0), (F["hist"], 0), (partial, 3), (os.path.join(DIR, "nope.h5"), 1)]:
            r = subprocess.run([sys.executable, "-m", "tdsolve", path], capture_output=True, text=True,
                               env=dict(os.environ, PYTHONPATH=PACKAGE_SRC))
            self.assertEqual(r.returncode, code, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
