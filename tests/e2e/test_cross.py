"""`tdsolve cross` against scipy.spatial.distance.cdist.

Shapes are not multiples of the block (128): (1, 1), (5, 300), (129, 127),
(1000, 77), (300, 5); every metric, both precisions; points reach tdsolve as
.npy, HDF5 and through the generator. Tolerances as for edm
(test_reference.py): float64 |err| <= 1e-12 |ref| (cosine also 2 (d + 5) u
absolute), float32 |err| <= 1e-6 |ref| against a reference on the
float32-rounded inputs. The matrix is the same bytes on 1, 2 and 3 ranks and
in one chunk or many.
"""
import concurrent.futures
import itertools
import os
import subprocess
import unittest

import h5py
import numpy as np
from scipy.spatial.distance import cdist

from common import BIN, MPIEXEC, TempDirTest, tdsolve, tdsolve_h5

METRICS = ["euclidean", "sqeuclidean", "cityblock", "chebyshev", "cosine"]
SHAPES = [(1, 1, 3), (5, 300, 1), (129, 127, 17), (1000, 77, 4), (300, 5, 3)]  # M, K, d


def tolerance(metric, precision, d):
    rtol = 1e-12 if precision == "float64" else 1e-6
    atol = 2 * (d + 5) * 2.0**-53 if (metric == "cosine" and precision == "float64") else 0.0
    return rtol, atol


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def read_cross(path):
    with h5py.File(path, "r") as f:
        d = f["distances"]
        return dict(values=d[:], attrs=dict(d.attrs), root=dict(f.attrs), progress=dict(f["progress"].attrs),
                    done=f["progress/done"][:], offsets=f["progress/offsets"][:])


def compare(got, ref, metric, precision, d, what):
    """Failures of got against the float64 reference, as lines."""
    want = np.float32 if precision == "float32" else np.float64
    if got.dtype != want or got.shape != ref.shape:
        return [f"{what}: {got.dtype}{got.shape}, want {np.dtype(want)}{ref.shape}"]
    rtol, atol = tolerance(metric, precision, d)
    err = np.abs(got.astype(np.float64) - ref)
    bad = err > rtol * np.abs(ref) + atol
    if np.any(bad):
        i, j = np.argwhere(bad)[0]
        return [f"{what}: {int(bad.sum())} values off, e.g. [{i}, {j}]: {got[i, j]!r} vs {ref[i, j]!r}"]
    return []


class CrossTest(TempDirTest):
    def cross(self, a, b, out, metric="euclidean", precision="float64", extra=(), np_=None):
        tdsolve("cross", *a, *b, "--output", out, "--metric", metric, "--precision", precision,
                "--progress", "none", "--quiet", *extra, np_=np_, check=True)
        return read_cross(out)

    def check_layout(self, h, m, k, d, metric, precision, what):
        bad = []
        a = h["attrs"]
        want = dict(rows=m, cols=k, features=d)
        for key, v in want.items():
            if key not in a or int(a[key]) != v:
                bad.append(f"{what}: attribute {key} = {a.get(key)!r}, want {v}")
        for key, v in dict(layout="matrix", metric=metric, precision=precision).items():
            if key not in a or text(a[key]) != v:
                bad.append(f"{what}: attribute {key} = {a.get(key)!r}, want {v!r}")
        if "block" not in a:
            bad.append(f"{what}: no block attribute")
        if "with" not in h["root"] or text(h["root"].get("software", "")) != "tdsolve":
            bad.append(f"{what}: root attributes {sorted(h['root'])}")
        p, off, done = h["progress"], h["offsets"].astype(np.int64), h["done"]
        if text(p.get("dataset", "")) != "/distances" or int(p.get("chunks", -1)) != len(done):
            bad.append(f"{what}: /progress attributes {p}")
        if (len(off) != len(done) + 1 or off[0] != 0 or off[-1] != m * k or np.any(np.diff(off) < 0)
                or np.any(off % k != 0)):
            bad.append(f"{what}: /progress/offsets {off[:8]} are not bands of whole rows covering {m} x {k}")
        if not np.all(done == 1):
            bad.append(f"{what}: not every chunk is marked done")
        return bad

    def case(self, m, k, d, metric, precision, fmt):
        rng = np.random.default_rng(1000 * m + k + d)
        shift = 0.5 if metric == "cosine" else 0.0
        a, b = rng.random((m, d)) - shift, rng.random((k, d)) * 2 - shift
        name = f"{m}_{k}_{d}_{metric}_{precision}"
        fa, fb = fmt
        src_a = (["--input", self.save_npy(f"a_{name}.npy", a)] if fa == "npy"
                 else ["--input", self.save_h5(f"a_{name}.h5", "/g/a", a) + ":/g/a"])
        src_b = (["--with", self.save_npy(f"b_{name}.npy", b)] if fb == "npy"
                 else ["--with", self.save_h5(f"b_{name}.h5", "/b", b) + ":/b"])
        out = self.path(f"c_{name}.h5")
        h = self.cross(src_a, src_b, out, metric, precision)
        os.remove(out)
        if precision == "float32":
            a, b = a.astype(np.float32).astype(np.float64), b.astype(np.float32).astype(np.float64)
        what = f"{metric} {m}x{k} d={d} {precision} ({fa}, {fb})"
        return compare(h["values"], cdist(a, b, metric), metric, precision, d, what) + \
            self.check_layout(h, m, k, d, metric, precision, what)

    def test_every_metric_shape_and_precision_matches_cdist(self):
        formats = itertools.cycle([("npy", "npy"), ("h5", "npy"), ("npy", "h5"), ("h5", "h5")])
        cases = [(m, k, d, metric, p, next(formats))
                 for (m, k, d), metric, p in itertools.product(SHAPES, METRICS, ["float64", "float32"])]
        failures = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            for f in [pool.submit(self.case, *c) for c in cases]:
                failures += f.result()
        self.assertEqual(failures, [], "\n".join(failures[:20]))

    def generated(self, spec, precision="float64"):
        """The points of a generator spec, as `tdsolve edm --store-points` stores them."""
        out = self.path("gen.h5")
        tdsolve("edm", "--generate", spec, "--output", out, "--store-points", "--precision", precision,
                "--overwrite", "--quiet", check=True)
        with h5py.File(out, "r") as f:
            return f["points"][:].astype(np.float64)

    def test_generated_inputs(self):
        ga, gb = "uniform:300:5:3", "uniform:211:5:4"
        pa, pb = self.generated(ga), self.generated(gb)
        xb, xa = np.random.default_rng(9).random((77, 5)), np.random.default_rng(10).random((129, 5))
        b_file = self.save_npy("b.npy", xb)
        a_file = self.save_h5("a.h5", "/pts", xa) + ":/pts"
        failures = []
        for (a, ra), (b, rb) in [((["--generate", ga], pa), (["--with-generate", gb], pb)),
                                 ((["--generate", ga], pa), (["--with", b_file], xb)),
                                 ((["--input", a_file], xa), (["--with-generate", gb], pb))]:
            for metric, precision in [("euclidean", "float64"), ("cityblock", "float32"), ("cosine", "float64")]:
                h = self.cross(a, b, self.path("g.h5"), metric, precision)
                os.remove(self.path("g.h5"))
                ref_a, ref_b = ra, rb
                if precision == "float32":
                    ref_a, ref_b = ra.astype(np.float32).astype(np.float64), rb.astype(np.float32).astype(np.float64)
                what = f"{a} with {b} {metric} {precision}"
                failures += compare(h["values"], cdist(ref_a, ref_b, metric), metric, precision, 5, what)
                failures += self.check_layout(h, len(ra), len(rb), 5, metric, precision, what)
                self.assertIn(b[1].split(":/")[0] if b[0] == "--with" else b[1], text(h["root"]["with"]))
        self.assertEqual(failures, [], "\n".join(failures))

    def check_same_bytes(self, a, b, m, k, metric, precision, ref, extra=()):
        runs = {}
        for label, chunk, np_ in [("singleton, default chunks", [], None), ("1 rank, 1 MiB", ["--chunk-mb", "1"], 1),
                                  ("2 ranks, 1 MiB", ["--chunk-mb", "1"], 2),
                                  ("3 ranks, 1 MiB", ["--chunk-mb", "1"], 3),
                                  ("3 ranks, default chunks", [], 3)]:
            out = self.path("r.h5")
            h = self.cross(a, b, out, metric, precision, [*chunk, *extra], np_=np_)
            os.remove(out)
            self.assertEqual(self.check_layout(h, m, k, ref[2], metric, precision, label), [])
            runs[label] = h
        first = runs["singleton, default chunks"]["values"]
        self.assertEqual(compare(first, ref[0], metric, precision, ref[2], "reference"), [])
        for label, h in runs.items():
            self.assertEqual(h["values"].tobytes(), first.tobytes(), f"/distances: {label} differs")
        many = runs["1 rank, 1 MiB"]
        self.assertGreaterEqual(len(many["done"]), 8, "1 MiB chunks should make many chunks")
        for label in ("2 ranks, 1 MiB", "3 ranks, 1 MiB"):
            self.assertEqual(runs[label]["offsets"].tobytes(), many["offsets"].tobytes(), label)
            self.assertEqual(runs[label]["done"].tobytes(), many["done"].tobytes(), label)

    def test_same_bytes_for_ranks_and_chunks_float64(self):
        # 3001 x 701 float64 = 16.8 MB: ~17 chunks of 1 MiB.
        rng = np.random.default_rng(31)
        a, b = rng.random((3001, 3)), rng.random((701, 3))
        self.check_same_bytes(["--input", self.save_npy("a.npy", a)], ["--with", self.save_npy("b.npy", b)],
                              3001, 701, "euclidean", "float64", (cdist(a, b), None, 3))

    def test_same_bytes_for_ranks_and_chunks_float32_cosine(self):
        # 2500 x 1001 float32 = 10 MB; block 64.
        pa, pb = self.generated("uniform:2500:7:1"), self.generated("uniform:1001:7:2")
        ref = cdist(pa.astype(np.float32).astype(np.float64), pb.astype(np.float32).astype(np.float64), "cosine")
        self.check_same_bytes(["--generate", "uniform:2500:7:1"], ["--with-generate", "uniform:1001:7:2"],
                              2500, 1001, "cosine", "float32", (ref, None, 7),
                              extra=["--block", "64", "--backend", "cpu"])

    def test_reader_and_info(self):
        rng = np.random.default_rng(2)
        a, b = rng.random((129, 4)), rng.random((65, 4))
        out = self.path("c.h5")
        h = self.cross(["--input", self.save_npy("a.npy", a)], ["--with", self.save_npy("b.npy", b)], out,
                       "chebyshev", "float64", ["--chunk-mb", "1"])
        with tdsolve_h5.open_result(out) as r:
            self.assertEqual(r.kind, "cross")
            self.assertEqual((r.rows, r.cols, r.metric, r.precision, r.features), (129, 65, "chebyshev", "float64", 4))
            np.testing.assert_array_equal(r.matrix(), h["values"])
            np.testing.assert_allclose(r.matrix(), cdist(a, b, "chebyshev"), rtol=1e-12)
            for method in (r.condensed, r.square, lambda: r.pair(0, 1)):
                with self.assertRaises(TypeError):
                    method()
        info = tdsolve("info", out)
        self.assertEqual(info.returncode, 0, info.stdout + info.stderr)
        self.assertIn("129", info.stdout)
        self.assertIn("65", info.stdout)
        with h5py.File(out, "a") as f:
            f["progress/done"][-1] = 0
        with self.assertRaises(tdsolve_h5.IncompleteResult):
            tdsolve_h5.open_result(out)
        info = tdsolve("info", out)
        self.assertEqual(info.returncode, 3, info.stdout + info.stderr)
        self.assertIn("INCOMPLETE", info.stdout)

    # --- bad input -------------------------------------------------------

    def run_bad(self, args, expect=()):
        return self.run_bad_command("cross", args, expect)
        return ours[0]

    def test_mismatched_features(self):
        a = self.save_npy("a.npy", np.random.default_rng(0).random((5, 7)))
        b = self.save_npy("b.npy", np.random.default_rng(1).random((4, 11)))
        line = self.run_bad(["--input", a, "--with", b])
        self.assertRegex(line, r"\b7\b")
        self.assertRegex(line, r"\b11\b")
        line = self.run_bad(["--generate", "uniform:20:13:1", "--with-generate", "uniform:5:6:2"])
        self.assertRegex(line, r"\b13\b")
        self.assertRegex(line, r"\b6\b")

    def test_cosine_zero_point_in_either_set(self):
        rng = np.random.default_rng(3)
        a, b = rng.random((6, 3)), rng.random((9, 3))
        a0, b0 = a.copy(), b.copy()
        a0[2] = 0
        b0[4] = 0
        fa, fb = self.save_npy("a.npy", a), self.save_npy("b.npy", b)
        fa0, fb0 = self.save_npy("a0.npy", a0), self.save_npy("b0.npy", b0)
        self.run_bad(["--input", fa0, "--with", fb, "--metric", "cosine"])
        self.run_bad(["--input", fa, "--with", fb0, "--metric", "cosine"])
        # The same zero points are fine for the other metrics.
        h = self.cross(["--input", fa0], ["--with", fb0], self.path("ok.h5"), "euclidean")
        np.testing.assert_allclose(h["values"], cdist(a0, b0), rtol=1e-12)

    def test_bad_options(self):
        a = self.save_npy("a.npy", np.ones((4, 2)))
        self.run_bad(["--input", a])  # no B
        self.run_bad(["--input", a, "--with", a, "--with-generate", "uniform:3:2"])
        self.run_bad(["--with", a])  # no A
        self.run_bad(["--input", a, "--with", self.path("missing.npy")], ["missing.npy"])


if __name__ == "__main__":
    unittest.main()
