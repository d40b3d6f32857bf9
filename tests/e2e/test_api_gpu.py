#!/usr/bin/env python3
"""tdsolve's in-process calls on the CUDA backend (issue 31): the Python API
with device="cuda" writes the command line's `--backend cuda` files byte for
byte for every command, its in-memory results equal the CPU's where the
command line's are equal (edm, cross, hist, knn, collide), with no GPU
visible device="auto" runs on the CPU and device="cuda" raises, and one
process makes many calls, from several threads, with an error between them.

The package with its extension is TDSOLVE_PYTHON_BUILD's (a build with
CUDA); the command line is TDSOLVE_BIN. Skips without the extension or
without a GPU it can use (fails instead under TDSOLVE_REQUIRE_GPU=1)."""
import os
import subprocess
import sys
import textwrap
import unittest
from concurrent.futures import ThreadPoolExecutor

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import TempDirTest, build_package, require_gpu, tdsolve  # noqa: E402

BUILD, td, MISSING = build_package()


def values(path, name):
    with h5py.File(path, "r") as f:
        return f[name][()]


def api_gpu_available():
    """(True, "") when the extension runs device="cuda" here."""
    try:
        td.pdist(np.random.default_rng(0).random((10, 2)), device="cuda")
        return True, ""
    except td.Error as e:
        return False, f"the extension cannot use a GPU: {e}"


@unittest.skipIf(MISSING, MISSING)
class ApiGpuTest(TempDirTest):
    @classmethod
    def setUpClass(cls):
        require_gpu(api_gpu_available, "the Python extension")

    def setUp(self):
        super().setUp()
        rng = np.random.default_rng(11)
        self.X = rng.random((5003, 3))
        self.S = np.column_stack([self.X, rng.random(len(self.X)) * 0.01])
        self.B = (rng.random((1031, 70)) < 0.3).astype(np.float64)
        self.V = rng.integers(0, 4, (1031, 70)).astype(np.float64)
        self.w = rng.random(70)
        for name, x in [("x", self.X), ("a", self.X[:700]), ("s", self.S), ("t", self.X[:400] * 12),
                        ("b", self.B), ("v", self.V), ("w", self.w)]:
            np.save(self.path(f"{name}.npy"), x)

    def cases(self):
        X, S, B, V, w = self.X, self.S, self.B, self.V, self.w
        src = self.path("x.npy")
        return [
            (lambda out, dev: td.pdist(X, out=out, device=dev, precision="float32"),
             ["edm", "--input", src, "--precision", "float32"], ["distances"]),
            (lambda out, dev: td.pdist(X, "cityblock", out=out, device=dev),
             ["edm", "--input", src, "--metric", "cityblock", "--precision", "float64"], ["distances"]),
            (lambda out, dev: td.pdist(B, "jaccard", out=out, device=dev),
             ["edm", "--input", self.path("b.npy"), "--metric", "jaccard", "--precision", "float64"],
             ["distances"]),
            (lambda out, dev: td.pdist(V, "hamming", w=w, out=out, device=dev),
             ["edm", "--input", self.path("v.npy"), "--metric", "hamming", "--weights", self.path("w.npy"),
              "--precision", "float64"], ["distances"]),
            (lambda out, dev: td.cdist(X[:700], X, "chebyshev", out=out, device=dev),
             ["cross", "--input", self.path("a.npy"), "--with", src, "--metric", "chebyshev",
              "--precision", "float64"], ["distances"]),
            (lambda out, dev: td.hist(X, 50, (0, 0.8), out=out, device=dev),
             ["hist", "--input", src, "--bins", "50", "--range", "0:0.8", "--precision", "float64"], ["counts"]),
            (lambda out, dev: td.hist(X, 50, (0, 0.3), box=[1, 1, 1], out=out, device=dev),
             ["hist", "--input", src, "--bins", "50", "--range", "0:0.3", "--box", "1,1,1",
              "--precision", "float64"], ["counts"]),
            (lambda out, dev: td.knn(X, 9, out=out, device=dev),
             ["knn", "--input", src, "--k", "9", "--precision", "float64"], ["distances", "indices"]),
            (lambda out, dev: td.knn(X, radius=0.03, out=out, device=dev),
             ["knn", "--input", src, "--radius", "0.03", "--precision", "float64"], ["pairs", "distances"]),
            (lambda out, dev: td.collide(S[:, :3], S[:, 3], out=out, device=dev),
             ["collide", "--input", self.path("s.npy")], ["pairs", "distances", "count"]),
            (lambda out, dev: td.atm(X[:400] * 12, 0.7, cutoff=2.5, out=out, device=dev),
             ["triplet", "--input", self.path("t.npy"), "--nu", "0.7", "--cutoff", "2.5", "--precision", "float64"],
             ["energy", "energy_per_point", "forces"]),
        ]

    def test_files_are_the_command_lines(self):
        # Each command in process and on the command line, both on the GPU:
        # the same result datasets, byte for byte.
        for k, (call, cli, names) in enumerate(self.cases()):
            with self.subTest(case=k, command=" ".join(cli[:1] + cli[3:])):
                api, ref = self.path(f"api{k}.h5"), self.path(f"cli{k}.h5")
                call(api, "cuda").close()
                tdsolve(*cli, "--backend", "cuda", "--output", ref, "--quiet", check=True)
                with h5py.File(api, "r") as f:
                    self.assertIn("backend = cuda", f.attrs["options"])
                for name in names:
                    got, want = values(api, name), values(ref, name)
                    self.assertGreater(got.size, 0, name)
                    self.assertEqual(got.tobytes(), want.tobytes(), name)

    def test_in_memory_results_equal_the_cpus(self):
        # What the command line's GPU files equal the CPU's for
        # (tests/e2e/test_gpu.py): the arrays the calls return.
        X, S = self.X, self.S
        calls = [
            ("pdist", lambda dev: td.pdist(X, device=dev)),
            ("pdist jaccard", lambda dev: td.pdist(self.B, "jaccard", device=dev)),
            ("pdist weighted hamming", lambda dev: td.pdist(self.V, "hamming", w=self.w, device=dev)),
            ("cdist", lambda dev: td.cdist(X[:700], X, "sqeuclidean", device=dev, precision="float32")),
            ("hist", lambda dev: td.hist(X, 40, (0, 1), device=dev)[0]),
            ("knn k", lambda dev: td.knn(X, 5, device=dev)),
            ("knn radius", lambda dev: td.knn(X, radius=0.02, device=dev)),
            ("collide", lambda dev: td.collide(S[:, :3], S[:, 3], device=dev)),
        ]
        for name, call in calls:
            with self.subTest(name):
                gpu, cpu = call("cuda"), call("cpu")
                gpu = gpu if isinstance(gpu, tuple) else (gpu,)
                cpu = cpu if isinstance(cpu, tuple) else (cpu,)
                self.assertEqual(len(gpu), len(cpu))
                for g, c in zip(gpu, cpu):
                    self.assertEqual(g.dtype, c.dtype)
                    self.assertEqual(g.shape, c.shape)
                    self.assertEqual(np.ascontiguousarray(g).tobytes(), np.ascontiguousarray(c).tobytes())

    def test_no_visible_gpu(self):
        # The CUDA extension where no GPU is visible (a login node):
        # device="auto" runs on the CPU, device="cuda" is one exception.
        script = textwrap.dedent(f"""
            import sys
            sys.path.insert(0, {BUILD!r})
            import numpy as np
            import tdsolve
            X = np.load({self.path("x.npy")!r})[:500]
            assert tdsolve.pdist(X).tobytes() == tdsolve.pdist(X, device="cpu").tobytes()
            try:
                tdsolve.pdist(X, device="cuda")
            except tdsolve.Error as e:
                print("refused:", e)
        """)
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stdout)
        self.assertTrue(lines[0].startswith("refused: "), r.stdout)

    def test_many_calls_in_one_process(self):
        # Forty calls on one GPU from four threads, an error among them: each
        # result is the first's; the process and the device stay usable.
        xs = [self.X[: 1000 + 50 * (k % 4)] for k in range(40)]
        want = {len(x): td.pdist(x, device="cuda") for x in xs[:4]}
        with ThreadPoolExecutor(4) as pool:
            got = list(pool.map(lambda x: td.pdist(x, device="cuda"), xs))
        for x, g in zip(xs, got):
            self.assertEqual(g.tobytes(), want[len(x)].tobytes())
        with self.assertRaises(td.Error):
            td.knn(self.X, 100000, device="cuda")
        self.assertEqual(td.pdist(xs[0], device="cuda").tobytes(), want[len(xs[0])].tobytes())


if __name__ == "__main__":
    unittest.main()
