#!/usr/bin/env python3
"""tdsolve's calls from Python in process (python/tdsolve/_api.py over the
extension tdsolve._core): the command line's files byte for byte, SciPy's
and scikit-learn's values, any NumPy input, errors as exceptions, Ctrl-C
and an injected failure that leave the Python process alive.

The package with its extension is the build's staged copy
(TDSOLVE_PYTHON_BUILD = build/python, set by CTest). Without the extension
(no pybind11 at configure time) every test skips, saying so."""
import os
import signal
import subprocess
import sys
import textwrap
import time
import unittest

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import TempDirTest, build_package, tdsolve  # noqa: E402

BUILD, td, MISSING = build_package()


def values(path, name):
    with h5py.File(path, "r") as f:
        return f[name][()]


@unittest.skipIf(MISSING, MISSING)
class ApiTest(TempDirTest):
    def setUp(self):
        super().setUp()
        self.X = np.random.default_rng(7).random((900, 3))
        np.save(self.path("x.npy"), self.X)

    def test_files_are_the_command_lines(self):
        # The same command in process and on the command line: the same
        # result datasets, byte for byte.
        X, src, a = self.X, self.path("x.npy"), self.path("a.npy")
        np.save(a, X[:100])
        cases = [
            (lambda out: td.pdist(X, "cityblock", out=out, device="cpu"),
             ["edm", "--input", src, "--metric", "cityblock"], ["distances"]),
            (lambda out: td.cdist(X[:100], X, "chebyshev", out=out, device="cpu"),
             ["cross", "--input", a, "--with", src, "--metric", "chebyshev"], ["distances"]),
            (lambda out: td.hist(X, 20, (0, 0.5), out=out, device="cpu"),
             ["hist", "--input", src, "--bins", "20", "--range", "0:0.5"], ["counts"]),
            (lambda out: td.knn(X, 7, out=out, device="cpu"), ["knn", "--input", src, "--k", "7"],
             ["distances", "indices"]),
            (lambda out: td.knn(X, radius=0.05, out=out, device="cpu"),
             ["knn", "--input", src, "--radius", "0.05"], ["pairs", "distances"]),
        ]
        S = np.column_stack([X, np.random.default_rng(8).random(len(X)) * 0.02])
        np.save(self.path("s.npy"), S)
        cases += [
            (lambda out: td.collide(S[:, :3], S[:, 3], out=out, device="cpu"),
             ["collide", "--input", self.path("s.npy")], ["pairs", "distances"]),
            (lambda out: td.atm(X[:300] * 10, 0.7, cutoff=2.5, out=out, device="cpu"),
             ["triplet", "--input", self.path("t.npy"), "--nu", "0.7", "--cutoff", "2.5"],
             ["energy", "energy_per_point", "forces"]),
        ]
        np.save(self.path("t.npy"), X[:300] * 10)
        for k, (call, cli, names) in enumerate(cases):
            with self.subTest(command=cli[0], case=k):
                api, ref = self.path(f"api{k}.h5"), self.path(f"cli{k}.h5")
                r = call(api)
                r.close()
                precision = [] if cli[0] == "collide" else ["--precision", "float64"]  # collide: float64 always
                tdsolve(*cli, *precision, "--backend", "cpu", "--output", ref, check=True)
                for name in names:
                    self.assertEqual(values(api, name).tobytes(), values(ref, name).tobytes(), name)

    def test_values_are_scipys(self):
        from scipy.spatial import cKDTree
        from scipy.spatial.distance import cdist, pdist
        X = self.X
        np.testing.assert_array_equal(td.pdist(X, "cityblock", device="cpu"), pdist(X, "cityblock"))
        np.testing.assert_array_equal(td.pdist(X, device="cpu"), pdist(X))  # float64: SciPy's bits
        np.testing.assert_allclose(td.cdist(X[:50], X, "minkowski", p=3, device="cpu"),
                                   cdist(X[:50], X, "minkowski", p=3), rtol=1e-14)
        w = np.linspace(0.5, 2, 3)
        np.testing.assert_allclose(td.pdist(X, "minkowski", p=1.5, w=w, device="cpu"),
                                   pdist(X, "minkowski", p=1.5, w=w), rtol=1e-13)
        counts, edges = td.hist(X, 30, (0, 1), device="cpu")
        want, want_edges = np.histogram(pdist(X), 30, (0, 1))
        np.testing.assert_array_equal(edges, want_edges)
        self.assertLessEqual(int(np.abs(counts - want).sum()), 2)  # a value within an ulp of an edge
        pairs, dist = td.knn(X, radius=0.08, device="cpu")
        want = cKDTree(X).query_pairs(0.08, output_type="ndarray")
        want = want[np.lexsort((want[:, 1], want[:, 0]))]
        np.testing.assert_array_equal(pairs, want)
        np.testing.assert_allclose(dist, np.linalg.norm(X[pairs[:, 0]] - X[pairs[:, 1]], axis=1), rtol=1e-15)

    def test_neighbours_are_scikit_learns(self):
        try:
            from sklearn.neighbors import NearestNeighbors
        except ImportError:
            self.skipTest("scikit-learn is not installed")
        X = self.X
        dist, ind = td.knn(X, 5, device="cpu")
        want_d, want_i = NearestNeighbors(n_neighbors=6, algorithm="brute").fit(X).kneighbors(X)
        np.testing.assert_array_equal(ind, want_i[:, 1:])
        np.testing.assert_allclose(dist, want_d[:, 1:], rtol=1e-7)  # its |x|^2 - 2 x.y + |y|^2

    def test_nearest_neighbors_class(self):
        # tdsolve.NearestNeighbors against scikit-learn's brute force, on the
        # fitted points (the point itself left out, as sklearn does for X=None).
        try:
            from sklearn.neighbors import NearestNeighbors
        except ImportError:
            self.skipTest("scikit-learn is not installed")
        X = self.X
        ours = td.NearestNeighbors(n_neighbors=4, radius=0.07, device="cpu").fit(X)
        theirs = NearestNeighbors(n_neighbors=4, radius=0.07, algorithm="brute").fit(X)
        d, i = ours.kneighbors()
        wd, wi = theirs.kneighbors()
        np.testing.assert_array_equal(i, wi)
        np.testing.assert_allclose(d, wd, rtol=1e-7)
        d, i = ours.radius_neighbors(sort_results=True)
        wd, wi = theirs.radius_neighbors(sort_results=True)
        self.assertEqual(len(i), len(X))
        for row in range(len(X)):
            np.testing.assert_array_equal(np.sort(i[row]), np.sort(wi[row]), f"row {row}")
            np.testing.assert_allclose(d[row], wd[row], rtol=1e-7, err_msg=f"row {row}")
        with self.assertRaises(NotImplementedError):
            ours.kneighbors(X[:5])

    def test_any_numpy_input(self):
        # bool, integers, float16/32, Fortran order and strided views: the
        # values of the float64 copy of the same numbers.
        rng = np.random.default_rng(3)
        ints = rng.integers(-50, 50, (300, 4))
        ref = td.pdist(ints.astype(np.float64), "cityblock", device="cpu")
        for x in (ints.astype(np.int32), ints.astype(np.int8), np.asfortranarray(ints), ints.astype(np.float16),
                  np.repeat(ints, 2, axis=0)[::2], np.hstack([ints, ints])[:, ::2][:, :2].repeat(2, axis=1)):
            with self.subTest(dtype=str(x.dtype), c=x.flags.c_contiguous):
                want = ref if x.shape == ints.shape and np.array_equal(x, ints) else \
                    td.pdist(np.array(x, dtype=np.float64), "cityblock", device="cpu")
                np.testing.assert_array_equal(td.pdist(x, "cityblock", device="cpu"), want)
        b = rng.random((200, 8)) < 0.5
        np.testing.assert_array_equal(td.pdist(b, "cityblock", device="cpu"),
                                      td.pdist(b.astype(np.float64), "cityblock", device="cpu"))
        with self.assertRaises(ValueError):
            td.pdist(np.arange(10.0))  # 1-D: as SciPy, a 2-D array is needed
        with self.assertRaises(TypeError):
            td.pdist(np.array([["a", "b"], ["c", "d"]]))

    def test_the_extension_reads_buffers(self):
        # tdsolve._core takes any 2-D C-contiguous float64 buffer (PEP 3118),
        # not NumPy's C structures (whose layout NumPy 2 changed): a
        # memoryview of bytes runs; what is not such a buffer is refused.
        from tdsolve import _core
        X = self.X[:40]
        out, ref = self.path("mv.h5"), self.path("np.h5")
        args = ["edm", "--input", "memory:X", "--precision", "float64", "--quiet", "--progress", "none"]
        _core.run([*args, "--output", out], {"X": memoryview(X.tobytes()).cast("d", X.shape)})
        _core.run([*args, "--output", ref], {"X": X})
        self.assertEqual(values(out, "distances").tobytes(), values(ref, "distances").tobytes())
        for bad, kind in [(X.astype(np.float32), TypeError), (X[:, ::2], TypeError), (X[0], ValueError),
                          (X.astype(">f8"), TypeError), ([[1.0, 2.0]], TypeError)]:
            with self.subTest(bad=type(bad).__name__), self.assertRaises(kind):
                _core.run([*args, "--output", self.path("bad.h5")], {"X": bad})
        self.assertFalse(os.path.exists(self.path("bad.h5")))

    def test_pdist_and_cdist_fill_an_array_without_a_file(self):
        # Without out=, pdist and cdist run with --output memory:NAME: the
        # values go straight into the returned array (the bytes of the file
        # the same call writes with out=), and no file is made at all: they
        # run with a temporary folder that does not exist, where the calls
        # that go through a file fail.
        from tdsolve import _core
        os.environ["TDSOLVE_TMPDIR"] = self.path("absent")
        try:
            X = np.random.default_rng(11).random((1500, 5))
            cases = [("pdist", "euclidean", "float64", {}), ("pdist", "euclidean", "float32", {"chunk_mb": 1}),
                     ("pdist", "cityblock", "float64", {"threads": 1}), ("pdist", "jaccard", "float64", {}),
                     ("cdist", "chebyshev", "float32", {"chunk_mb": 1}), ("cdist", "cosine", "float64", {})]
            for call, metric, precision, extra in cases:
                with self.subTest(call=call, metric=metric, precision=precision):
                    f = getattr(td, call)
                    pts = (X,) if call == "pdist" else (X[:400], X)
                    got = f(*pts, metric, precision=precision, device="cpu", **extra)
                    self.assertEqual(got.dtype, np.dtype(precision))
                    out = self.path(f"{call}.{metric}.{precision}.h5")
                    f(*pts, metric, precision=precision, device="cpu", out=out, **extra).close()
                    want = values(out, "distances")
                    self.assertEqual(got.shape, want.shape)
                    self.assertEqual(got.tobytes(), want.tobytes())
            with self.assertRaises(FileNotFoundError):  # hist writes its file there
                td.hist(X, 10, (0, 1), device="cpu")
        finally:
            del os.environ["TDSOLVE_TMPDIR"]
        # The buffer must be the result's size and type, writable.
        args = ["edm", "--input", "memory:X", "--precision", "float64", "--output", "memory:r", "--quiet"]
        Y = X[:50]
        for bad, kind in [(np.empty(1224), _core.Error), (np.empty(1225, np.float32), _core.Error),
                          (np.empty(1225, np.int64), TypeError), (np.empty(2450)[::2], TypeError)]:
            with self.subTest(bad=bad.dtype.name), self.assertRaises(kind) as e:
                _core.run(args, {"X": Y}, {"r": bad})
            if kind is _core.Error:
                self.assertIn("the result is 9800 bytes", str(e.exception))
        ro = np.empty(1225)
        ro.flags.writeable = False
        with self.assertRaises(TypeError):
            _core.run(args, {"X": Y}, {"r": ro})
        # memory:NAME names a call's array: on the command line, or for the
        # commands that write more than one array, it is refused.
        for cmd, why in [(["edm", "--generate", "uniform:100:3:1"], "no such in-memory result"),
                         (["hist", "--generate", "uniform:100:3:1", "--bins", "4", "--range", "0:1"],
                          "--output memory:NAME is for edm and cross"),
                         (["edm", "--generate", "uniform:100:3:1", "--resume"], "keeps no file"),
                         (["fractal", "--shape", "sierpinski-triangle", "--level", "3", "--steps", "2"],
                          "memory:NAME is for edm and cross; this command writes a file")]:
            with self.subTest(cmd=cmd[0]):
                r = tdsolve(*cmd, "--output", "memory:x")
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(why, r.stderr)

    def test_an_in_memory_call_under_mpirun_is_refused(self):
        # Python itself started on 2 ranks: each rank's array would get only
        # its part of the result, so the in-memory call raises on every rank.
        from common import MPIEXEC
        code = ("import sys, numpy as np\n"
                f"sys.path.insert(0, {BUILD!r})\n"
                "import tdsolve\n"
                "import os\n"
                "try:\n"
                "    tdsolve.pdist(np.random.default_rng(0).random((50, 3)), device='cpu')\n"
                "except tdsolve.Error as e:\n"
                "    with open('raised.' + os.environ['OMPI_COMM_WORLD_RANK'], 'w') as f:\n"
                "        f.write(f'{e} {e.exit_code}')\n")
        # The environment as Python started (os.environ), not this process's C
        # one, which holds the in-process MPI singleton's variables once an
        # earlier test has called tdsolve: mpiexec would take them as its job's.
        r = subprocess.run([MPIEXEC, "-n", "2", "--oversubscribe", sys.executable, "-c", code],
                           capture_output=True, text=True, timeout=300, cwd=self.dir, env=dict(os.environ))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # Each rank writes its own file: two ranks' prints share mpiexec's
        # stdout and can interleave mid-line.
        for rank in range(2):
            with open(os.path.join(self.dir, f"raised.{rank}")) as f:
                self.assertEqual(f.read(), "--output memory:NAME is for one process, not 2 ranks 2",
                                 r.stdout + r.stderr)

    def test_calls_from_threads(self):
        # Calls from several Python threads run one at a time (the GIL is
        # released while each computes): each gets its own, right answer.
        from concurrent.futures import ThreadPoolExecutor
        from scipy.spatial.distance import pdist
        rng = np.random.default_rng(9)
        xs = [rng.random((300 + 50 * k, 3)) for k in range(4)]
        with ThreadPoolExecutor(4) as pool:
            got = list(pool.map(lambda x: td.pdist(x, "cityblock", device="cpu"), xs))
        for x, g in zip(xs, got):
            np.testing.assert_array_equal(g, pdist(x, "cityblock"))

    def test_errors_are_exceptions(self):
        with self.assertRaises(td.Error) as e:
            td.pdist(self.X, "euclidian")
        self.assertIn("did you mean euclidean?", str(e.exception))
        self.assertTrue(str(e.exception).startswith("unknown --metric 'euclidian'"), str(e.exception))
        self.assertEqual(e.exception.exit_code, 2)
        self.assertIsInstance(e.exception, RuntimeError)
        out = self.path("kept.h5")
        td.pdist(self.X, out=out, device="cpu").close()
        with self.assertRaises(td.Error) as e:  # exists: refused as on the command line
            td.pdist(self.X, out=out, device="cpu")
        self.assertIn("exists", str(e.exception))
        r = td.pdist(self.X, out=out, overwrite=True, device="cpu")
        self.assertTrue(r.complete)
        r.close()

    def test_a_failure_leaves_python_alive(self):
        # A rank's failure once the output exists ends a command-line job
        # with MPI_Abort; in process (one rank) it is an exception, the
        # .partial stays, and the next call works.
        out = self.path("f.h5")
        os.environ["TDSOLVE_TEST_FAULT"] = "0:2:write"
        try:
            with self.assertRaises(td.Error) as e:
                td.pdist(np.random.default_rng(1).random((3000, 3)), out=out, device="cpu", chunk_mb=1)
        finally:
            del os.environ["TDSOLVE_TEST_FAULT"]
        self.assertIn("injected fault", str(e.exception))
        self.assertTrue(os.path.exists(out + ".partial"))
        self.assertEqual(td.pdist(self.X[:10], device="cpu").shape, (45,))

    def test_a_full_disk_raises(self):
        # Writes of the output fail with ENOSPC mid-data (the preload shim of
        # test_faults.py): the output guard's MPI-IO check fails the call
        # (in process it does not end the job), the call raises with the
        # command line's line, and Python goes on.
        from test_faults import build_shim
        shim = build_shim(self.dir)
        out = self.path("full.h5")
        script = textwrap.dedent(f"""
            import sys, numpy as np
            sys.path.insert(0, {BUILD!r})
            import tdsolve
            X = np.random.default_rng(2).random((2000, 3))
            try:
                tdsolve.pdist(X, out={out!r}, device="cpu", chunk_mb=1)
            except tdsolve.Error as e:
                print("raised:", e, flush=True)
                print(tdsolve.pdist(X[:5], device="cpu").shape, flush=True)
                sys.exit(0)
            sys.exit(3)
            """)
        names = "\n".join([out, out + ".creating", out + ".partial"])
        env = dict(os.environ, LD_PRELOAD=shim, TDSOLVE_ENOSPC_PATH=names, TDSOLVE_ENOSPC_AFTER="3000000")
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("raised: writing the output", r.stdout)
        self.assertIn("(10,)", r.stdout)
        self.assertFalse(os.path.exists(out))

    def test_cmake_install_lays_out_a_prefix(self):
        # `cmake --install build --prefix P`: bin/tdsolve, the package with its
        # extension where P's Python looks, the module file naming both, the
        # batch script and an example config; the installed package computes
        # in process from a fresh interpreter that sees nothing of the tree.
        prefix = self.path("prefix")
        r = subprocess.run(["cmake", "--install", os.path.dirname(BUILD), "--prefix", prefix],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        site = os.path.join(prefix, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages")
        for f in ("bin/tdsolve", "share/tdsolve/slurm/tdsolve.sbatch", "share/tdsolve/examples/edm-example.ini",
                  "share/tdsolve/modulefiles/tdsolve/0.1.0"):
            self.assertTrue(os.path.exists(os.path.join(prefix, f)), f)
        with open(os.path.join(prefix, "share/tdsolve/modulefiles/tdsolve/0.1.0")) as f:
            module = f.read()
        self.assertIn(f'set prefix "{prefix}"', module)
        self.assertIn(f'prepend-path PYTHONPATH "$prefix/{os.path.relpath(site, prefix)}"', module)
        code = ("import numpy as np, tdsolve, sys; from scipy.spatial.distance import pdist\n"
                "X = np.random.default_rng(1).random((300, 4))\n"
                "assert tdsolve.__file__.startswith(sys.argv[1]), tdsolve.__file__\n"
                "assert np.array_equal(tdsolve.pdist(X, 'cityblock', device='cpu'), pdist(X, 'cityblock'))\n"
                "print('ok')\n")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["PYTHONPATH"] = site
        r = subprocess.run([sys.executable, "-c", code, site], capture_output=True, text=True, env=env,
                           cwd=self.dir, timeout=120)
        self.assertEqual(r.stdout.strip(), "ok", r.stderr)
        r = subprocess.run([os.path.join(prefix, "bin", "tdsolve"), "--version"], capture_output=True, text=True)
        self.assertTrue(r.stdout.startswith("tdsolve "), r.stdout + r.stderr)

    def interrupted(self, script, env, cwd=None):
        """Runs `script` (which prints "ready" before its call) in a Python
        of its own, SIGINT 2 s after "ready", and returns its stdout and
        stderr once it has exited 0."""
        p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env, cwd=cwd)
        self.assertEqual(p.stdout.readline().strip(), "ready")
        time.sleep(2.0)
        p.send_signal(signal.SIGINT)
        rest, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 0, rest + err)
        return rest, err

    def test_ctrl_c_stops_cleanly(self):
        # SIGINT during a call: the run stops at a chunk boundary, the call
        # raises KeyboardInterrupt, the file is a resumable .partial, and the
        # command line's --resume finishes it to the uninterrupted bytes.
        out = self.path("s.h5")
        script = textwrap.dedent(f"""
            import sys, numpy as np
            sys.path.insert(0, {BUILD!r})
            import tdsolve
            X = np.random.default_rng(5).random((4000, 3))
            np.save({self.path("s.npy")!r}, X)
            print("ready", flush=True)
            try:
                tdsolve.pdist(X, out={out!r}, device="cpu", chunk_mb=1)
            except KeyboardInterrupt as e:
                print("interrupted", e, flush=True)
                sys.exit(0)
            sys.exit(3)
            """)
        rest, err = self.interrupted(script, dict(os.environ, TDSOLVE_TEST_SLOW_MS="300"))
        self.assertIn("interrupted", rest)
        self.assertTrue(os.path.exists(out + ".partial"))
        tdsolve("edm", "--input", self.path("s.npy"), "--precision", "float64", "--backend", "cpu",
                "--chunk-mb", "1", "--output", out, "--resume", check=True)
        ref = self.path("ref.h5")
        tdsolve("edm", "--input", self.path("s.npy"), "--precision", "float64", "--backend", "cpu",
                "--output", ref, check=True)
        self.assertEqual(values(out, "distances").tobytes(), values(ref, "distances").tobytes())

    def test_ctrl_c_stops_an_in_memory_call(self):
        # SIGINT during pdist without out= (the values go into an array):
        # KeyboardInterrupt, no file anywhere, and the next call works.
        tmp = self.path("tmp")
        os.mkdir(tmp)
        script = textwrap.dedent(f"""
            import sys, numpy as np
            sys.path.insert(0, {BUILD!r})
            import tdsolve
            X = np.random.default_rng(5).random((4000, 3))
            print("ready", flush=True)
            try:
                tdsolve.pdist(X, device="cpu", chunk_mb=1)
            except KeyboardInterrupt as e:
                print("interrupted", e, flush=True)
                print(tdsolve.pdist(X[:5], device="cpu").shape, flush=True)
                sys.exit(0)
            sys.exit(3)
            """)
        env = dict(os.environ, TDSOLVE_TEST_SLOW_MS="300", TDSOLVE_TMPDIR=tmp)
        rest, err = self.interrupted(script, env, cwd=self.dir)
        self.assertIn("interrupted tdsolve edm stopped (an in-memory result keeps nothing)", rest)
        self.assertIn("an in-memory result keeps nothing", err)
        self.assertIn("(10,)", rest)
        self.assertEqual(os.listdir(tmp), [])


if __name__ == "__main__":
    unittest.main()
