"""SciPy's semantics where bit-packed booleans and refusals used to depart
(issue 31), against scipy.spatial.distance 1.10 (Debian 12's):

- hamming and jaccard on values other than 0/1 compare the values (SciPy's
  C loops): float64 = SciPy's bits, edm, cross and hist; float32 = SciPy's
  values of the float32-rounded inputs, rounded.
- weights on every boolean metric: hamming = SciPy's bits at any d (its C
  loop's two-lane sums); the other seven (SciPy's Python formulas) = SciPy's
  bits below 8 features; above, NumPy sums pairwise where tdsolve sums in
  feature order: within 2 d u relative (u = 2^-53; the sums' terms are >= 0).
- jensenshannon: a row with a negative value or summing to 0 is inf against
  every row (SciPy's HUGE_VAL); the other pairs as before.
- mahalanobis (--vi, or the inverse covariance of the points as SciPy
  computes it): within 1e-12 relative of SciPy's pdist and cdist (tdsolve
  runs euclidean on Cholesky-transformed points, SciPy forms the quadratic
  form: the same value to rounding), /VI recorded; knn on it.
- the choice of bits or values is the same on every rank (3 ranks = 1),
  and may differ frame to frame in a run over frames (hist --frames).
"""
import os
import unittest
import warnings

import h5py
import numpy as np
from scipy.spatial.distance import cdist, pdist, squareform

from common import TempDirTest, tdsolve
from test_metrics import BOOLEAN


def scipy(xa, xb, metric, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dice's and sokalsneath's 0/0
        return pdist(xa, metric, **kw) if xb is None else cdist(xa, xb, metric, **kw)


class ScipyValuesTest(TempDirTest):
    def run_metric(self, command, xa, xb, metric, precision="float64", extra=(), ranks=None):
        dt = np.float32 if precision == "float32" else np.float64
        fa = self.save_npy("a.npy", xa.astype(dt))
        inputs = ["--input", fa]
        if xb is not None:
            inputs += ["--with", self.save_npy("b.npy", xb.astype(dt))]
        out = self.path("o.h5")
        tdsolve(command, *inputs, "--output", out, "--overwrite", "--metric", metric, "--precision", precision,
                "--progress", "none", "--quiet", *extra, np_=ranks, check=True)
        with h5py.File(out, "r") as f:
            return f["distances"][()]

    def assert_bits(self, got, ref, what):
        self.assertEqual(got.dtype, ref.dtype, what)
        same = (got == ref) | (np.isnan(got) & np.isnan(ref))
        self.assertTrue(same.all(), f"{what}: {int((~same).sum())} of {got.size} values differ from SciPy's, "
                        f"worst {np.nanmax(np.abs(got.astype(float) - ref)):.3g}")

    def test_hamming_and_jaccard_on_values(self):
        rng = np.random.default_rng(11)
        for d in [3, 20, 70]:
            cases = {
                "small integers": rng.integers(0, 4, (60, d)).astype(np.float64),
                "signed integers": rng.integers(-2, 3, (60, d)).astype(np.float64),
                "floats with repeats": rng.choice([0.0, 0.25, 1.0, -3.5, 1e-300], (60, d)),
                "wide floats": rng.standard_normal((60, d)) * (rng.random((60, d)) < 0.5),
            }
            for name, x in cases.items():
                x[1] = x[0]
                x[2] = 0  # an all-zero row: jaccard 0/0 is 0
                x[3] = 0
                xb = x[rng.permutation(60)[:17]] * (rng.random((17, d)) < 0.7)
                for metric in ["hamming", "jaccard"]:
                    what = f"{metric} d={d} {name}"
                    self.assert_bits(self.run_metric("edm", x, None, metric), scipy(x, None, metric), what)
                    self.assert_bits(self.run_metric("cross", x, xb, metric), scipy(x, xb, metric), "cross " + what)
                    x32 = x.astype(np.float32).astype(np.float64)
                    ref32 = scipy(x32, None, metric).astype(np.float32)
                    self.assert_bits(self.run_metric("edm", x, None, metric, "float32"), ref32, "float32 " + what)
        # Rows (1, 2, 0) and (1, 3, 0): the docs' example.
        x = np.array([[1.0, 2, 0], [1, 3, 0]])
        self.assertEqual(self.run_metric("edm", x, None, "hamming")[0], 1 / 3)
        self.assertEqual(self.run_metric("edm", x, None, "jaccard")[0], 0.5)

    def test_values_through_hist(self):
        """hist takes the same functor: float64 counts = numpy.histogram(pdist)."""
        rng = np.random.default_rng(12)
        x = rng.integers(0, 5, (700, 9)).astype(np.float64)
        for metric in ["hamming", "jaccard"]:
            src = self.save_npy("h.npy", x)
            out = self.path("h.h5")
            tdsolve("hist", "--input", src, "--output", out, "--overwrite", "--metric", metric, "--bins", "18",
                    "--range", "0:1", "--precision", "float64", "--quiet", "--progress", "none", check=True)
            with h5py.File(out, "r") as f:
                counts = f["counts"][()]
            ref, _ = np.histogram(pdist(x, metric), 18, (0, 1))
            np.testing.assert_array_equal(counts, ref, metric)

    def test_weights_on_every_boolean_metric(self):
        rng = np.random.default_rng(13)
        for d in [5, 7, 20, 64, 130]:
            w = rng.random(d) * rng.choice([1, 1e-3, 10], d)
            w[d // 2] = 0  # a weight of 0 counts nothing
            for metric in BOOLEAN:
                # hamming and jaccard compare values; the other six read nonzero as true, as SciPy's cast.
                x = rng.integers(0, 3 if metric in ("hamming", "jaccard") else 2, (50, d)).astype(np.float64)
                x[:, 0] = 1  # no all-false row: weighted sokalsneath raises on one in SciPy
                if metric not in ("hamming", "jaccard"):
                    x = x * rng.choice([1.0, 2.5, -1.0], x.shape)
                xb = np.abs(x[rng.permutation(50)[:13]])
                for xa_, xb_ in [(x, None), (x, xb)]:
                    got = self.run_metric("edm" if xb_ is None else "cross", xa_, xb_, metric,
                                          extra=["--weights", ",".join(repr(float(v)) for v in w)])
                    ref = scipy(xa_, xb_, metric, w=w)
                    what = f"weighted {metric} d={d} {'cross' if xb_ is not None else 'edm'}"
                    if metric == "hamming" or d < 8:
                        self.assert_bits(got, ref, what)
                    else:
                        # Sums of d non-negative terms in another order: each within (d-1) u, their ratio 2 d u.
                        np.testing.assert_allclose(got, ref, rtol=2 * d * 2.0**-53, atol=0, err_msg=what)
        # Weighted 0/0: dice and sokalsneath nan (SciPy: nan and ValueError), jaccard and yule 0.
        x = np.array([[0.0, 0, 0], [0, 0, 0], [1, 0, 1]])
        for metric, want in [("dice", np.nan), ("sokalsneath", np.nan), ("jaccard", 0.0), ("yule", 0.0)]:
            got = self.run_metric("edm", x, None, metric, extra=["--weights", "0.5,1,2"])
            np.testing.assert_array_equal(got[:1], [want], metric)
        # float32: the float64 value rounded.
        x = rng.integers(0, 2, (40, 6)).astype(np.float64)
        w = rng.random(6)
        for metric in BOOLEAN:
            x[:, 0] = 1
            got = self.run_metric("edm", x, None, metric, "float32", ["--weights", ",".join(repr(float(v)) for v in w)])
            self.assert_bits(got, scipy(x, None, metric, w=w).astype(np.float32), "float32 weighted " + metric)

    def test_jensenshannon_rows_scipy_gives_inf(self):
        rng = np.random.default_rng(14)
        for d in [4, 33]:
            x = rng.random((30, d))
            x[4, 2] = -0.25  # a negative value
            x[9] = 0  # sums to 0
            x[12, :] = 0.5
            x[12, 0] = -1.0  # sums to 0 with a negative value
            xb = rng.random((11, d))
            xb[3] = 0
            for precision in ["float64", "float32"]:
                xa32 = x.astype(np.float32).astype(np.float64) if precision == "float32" else x
                xb32 = xb.astype(np.float32).astype(np.float64) if precision == "float32" else xb
                for xb_ in [None, xb32]:
                    got = self.run_metric("edm" if xb_ is None else "cross", xa32, xb_, "jensenshannon", precision)
                    ref = scipy(xa32, xb_, "jensenshannon")
                    what = f"jensenshannon d={d} {precision} {'edm' if xb_ is None else 'cross'}"
                    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref), what)
                    self.assertTrue(np.isinf(ref).any(), what)
                    self.assertTrue((got[np.isinf(got)] > 0).all(), what)
                    fin = ~np.isinf(ref)
                    tol = 1e-12 if precision == "float64" else 1e-5
                    np.testing.assert_allclose(got[fin], ref[fin], rtol=tol, atol=1e-7, err_msg=what)

    def test_mahalanobis(self):
        rng = np.random.default_rng(16)
        for d in [2, 3, 12]:
            x = rng.standard_normal((80, d)) @ rng.standard_normal((d, d))
            xb = rng.standard_normal((25, d))
            a = rng.standard_normal((d, d))
            vi = a @ a.T + d * np.eye(d)
            vi_file = self.save_npy("vi.npy", vi)
            for xb_ in [None, xb]:
                command = "edm" if xb_ is None else "cross"
                for extra, kw in [(["--vi", vi_file], {"VI": vi}), ([], {})]:
                    what = f"mahalanobis d={d} {command} {'VI' if kw else 'inv(cov)'}"
                    ref = scipy(x, xb_, "mahalanobis", **kw)
                    got = self.run_metric(command, x, xb_, "mahalanobis", extra=extra)
                    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-13, err_msg=what)
                    with h5py.File(self.path("o.h5"), "r") as f:
                        self.assertEqual(f["distances"].attrs["VI"], "/VI", what)
                        stacked = x if xb_ is None else np.vstack([x, xb_])
                        want = vi if kw else np.linalg.inv(np.cov(stacked.T)).T
                        np.testing.assert_allclose(f["VI"][()], want, rtol=1e-10, err_msg=what)
                    got32 = self.run_metric(command, x, xb_, "mahalanobis", "float32", extra)
                    x32 = x.astype(np.float32).astype(np.float64)
                    xb32 = None if xb_ is None else xb_.astype(np.float32).astype(np.float64)
                    np.testing.assert_allclose(got32, scipy(x32, xb32, "mahalanobis", **kw), rtol=2e-5, atol=1e-5,
                                               err_msg="float32 " + what)
        # knn --k on it: each row's 3 nearest as the sorted rows of SciPy's matrix.
        x = rng.standard_normal((200, 3))
        src = self.save_npy("k.npy", x)
        out = self.path("k.h5")
        tdsolve("knn", "--input", src, "--output", out, "--k", "3", "--metric", "mahal", "--precision", "float64",
                "--quiet", "--progress", "none", check=True)
        with h5py.File(out, "r") as f:
            dist = f["distances"][()]
        m = squareform(scipy(x, None, "mahalanobis"))  # (cdist(x, x) would take the covariance of x twice)
        np.fill_diagonal(m, np.inf)
        np.testing.assert_allclose(dist, np.sort(m, axis=1)[:, :3], rtol=1e-12)
        # The VI is part of the job: a partial file of one VI is not resumed with another.
        out = self.path("r.h5")
        tdsolve("edm", "--input", src, "--output", out, "--metric", "mahalanobis", "--quiet", check=True)
        os.rename(out, out + ".partial")
        vi = self.save_npy("vi3.npy", np.diag([1.0, 2.0, 3.0]))
        r = tdsolve("edm", "--input", src, "--output", out, "--metric", "mahalanobis", "--vi", vi, "--resume")
        self.assertNotEqual(r.returncode, 0, r.stderr)
        self.assertIn("vi_fnv1a64", r.stderr)

    def test_frames_with_bits_values_and_dropped_features(self):
        """hist --frames where a frame's points differ in shape from the
        first's inside the run (packed words, weighted chebyshev's kept
        features) but not as read: counts = the sum over the frames of
        numpy.histogram(pdist(frame)); frames of 0/1 data run on bits, the one
        with a 2 on values. seuclidean and mahalanobis without --variance /
        --vi take each frame's own (frames scaled by 10^k: the first's would
        put every later pair out of range)."""
        rng = np.random.default_rng(17)
        b = (rng.random((4, 60, 6)) < 0.4).astype(np.float64)
        b[2, 3, 1] = 2.0  # frame 2 compares values (jaccard, hamming)
        x = rng.random((4, 60, 6))
        src = self.path("frames.h5")
        xs = x * 10.0 ** np.arange(4)[:, None, None]
        with h5py.File(src, "w") as f:
            f["b"], f["x"], f["xs"] = b, x, xs
        w = [1.0, 0.0, 1.0, 2.0, 1.0, 0.5]
        cases = [("b", "jaccard", {}, [], 1), ("b", "hamming", {}, [], 1),
                 ("b", "dice", {"w": np.array(w)}, ["--weights", ",".join(map(str, w))], 1),
                 ("x", "chebyshev", {"w": np.array(w)}, ["--weights", ",".join(map(str, w))], 1),
                 ("xs", "seuclidean", {}, [], 8), ("xs", "mahalanobis", {}, [], 8)]
        for name, metric, kw, extra, top in cases:
            frames = {"b": b, "x": x, "xs": xs}[name]
            ref = sum(np.histogram(scipy(f, None, metric, **kw), 20, (0, top))[0] for f in frames)
            if name == "xs":
                self.assertEqual(ref.sum(), 4 * 1770, f"{metric}: pairs out of the range")
            for ranks in [None, 3]:
                out = self.path("fr.h5")
                tdsolve("hist", "--input", f"{src}:/{name}", "--frames", "0:4", "--metric", metric, *extra,
                        "--bins", "20", "--range", f"0:{top}", "--precision", "float64", "--output", out,
                        "--overwrite", "--quiet", "--progress", "none", np_=ranks, check=True)
                with h5py.File(out, "r") as f:
                    np.testing.assert_array_equal(f["counts"][()], ref, f"{metric} over frames, ranks {ranks}")

    def test_ranks_agree_on_values_or_bits(self):
        rng = np.random.default_rng(15)
        x = rng.integers(0, 3, (300, 40)).astype(np.float64)
        w = ",".join(repr(float(x)) for x in rng.random(40))
        for metric, extra in [("jaccard", []), ("dice", ["--weights", w]), ("hamming", ["--weights", w]),
                              ("jensenshannon", []), ("mahalanobis", [])]:
            xx = x - (metric == "jensenshannon") * (x == 2)  # negatives for jensenshannon
            one = self.run_metric("edm", xx, None, metric, extra=extra)
            three = self.run_metric("edm", xx, None, metric, extra=extra, ranks=3)
            self.assertEqual(one.tobytes(), three.tobytes(), metric)
        # 0/1 data run on bits: the same values as on values (jaccard's denominator, hamming's fraction).
        b = rng.integers(0, 2, (200, 70)).astype(np.float64)
        for metric in BOOLEAN:
            self.assert_bits(self.run_metric("edm", b, None, metric), scipy(b != 0, None, metric), "bits " + metric)


if __name__ == "__main__":
    unittest.main()
