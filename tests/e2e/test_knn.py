"""tdsolve knn end to end: --k against scikit-learn's brute-force
NearestNeighbors and an exact NumPy reference (ties by the smaller index),
--radius against scipy's cKDTree.query_pairs, on 1 and 3 ranks; the file the
same for any rank count and chunk size; bad input refused; a killed run
resumed to the same bytes. GPU comparisons live in test_gpu.py."""
import os
import subprocess
import unittest

import h5py
import numpy as np
from scipy.spatial import cKDTree
from scipy.spatial.distance import cdist
from sklearn.neighbors import NearestNeighbors

from common import BIN, TempDirTest, tdsolve

QUIET = ["--progress", "none", "--quiet"]


def knn_reference(x, k, metric="euclidean"):
    """The K nearest other points by (distance, index), distances from cdist in float64."""
    d = cdist(x, x, metric=metric)
    n = len(x)
    idx = np.empty((n, k), dtype=np.int64)
    for i in range(n):
        row = d[i].copy()
        row[i] = np.inf
        order = np.lexsort((np.arange(n), row))  # by distance, then index
        idx[i] = order[:k]
    return idx, np.take_along_axis(d, idx, axis=1)


def read_knn(path):
    with h5py.File(path, "r") as f:
        return f["indices"][:], f["distances"][:], dict(f["distances"].attrs), f["progress/done"][:]


def read_pairs(path):
    with h5py.File(path, "r") as f:
        return f["pairs"][:], f["distances"][:], dict(f["pairs"].attrs), f["progress/done"][:]


class KnnTest(TempDirTest):
    def run_knn(self, *args, np_=None, env=None):
        out = self.path(f"k{len(os.listdir(self.dir))}.h5")
        tdsolve("knn", *args, "--output", out, *QUIET, np_=np_, check=True, env=env)
        return out

    def test_equals_sklearn_brute_force_on_1_and_3_ranks(self):
        rng = np.random.default_rng(7)
        for n, d, k in [(20000, 3, 16), (3000, 32, 10), (500, 5, 499)]:
            x = rng.random((n, d))
            src = self.save_npy(f"x{n}.npy", x)
            nn = NearestNeighbors(n_neighbors=k, algorithm="brute").fit(x)
            sk_d, sk_i = nn.kneighbors()  # each point's neighbours, itself excluded
            ref_i, ref_d = knn_reference(x, k) if n <= 5000 else (None, None)
            for ranks in (None, 3):
                out = self.run_knn("--input", src, "--k", k, "--precision", "float64", "--chunk-mb", 1,
                                   "--block", 64, np_=ranks)
                idx, dist, attrs, done = read_knn(out)
                what = f"n={n} d={d} k={k} ranks={ranks or 1}"
                self.assertEqual(idx.shape, (n, k), what)
                self.assertTrue(done.all(), what)
                self.assertEqual(attrs["neighbors"], k)
                self.assertEqual(attrs["layout"], "knn")
                np.testing.assert_array_equal(idx, sk_i, err_msg=what)
                np.testing.assert_allclose(dist, sk_d, rtol=1e-9, atol=1e-12, err_msg=what)
                if ref_i is not None:
                    np.testing.assert_array_equal(idx, ref_i, err_msg=what)
                    np.testing.assert_allclose(dist, ref_d, rtol=1e-14, atol=0, err_msg=what)
            self.assertEqual(read_knn(self.run_knn("--input", src, "--k", k, "--precision", "float64"))[0].tobytes(),
                             idx.tobytes(), f"n={n}: one chunk differs from many")

    def test_ties_broken_by_the_smaller_index_and_duplicates_kept(self):
        # Integer grid points, every one twice: many exact ties, and each
        # point's duplicate at distance 0 is its first neighbour.
        g = np.array([(a, b) for a in range(9) for b in range(7)], dtype=np.float64)
        x = np.vstack([g, g[::-1]])
        src = self.save_npy("grid.npy", x)
        for precision in ("float32", "float64"):
            for ranks in (None, 3):
                idx, dist, _, _ = read_knn(self.run_knn("--input", src, "--k", 12, "--precision", precision,
                                                        "--block", 16, np_=ranks))
                ref_i, ref_d = knn_reference(x, 12)
                np.testing.assert_array_equal(idx, ref_i, err_msg=f"{precision} ranks={ranks}")
                np.testing.assert_array_equal(dist, ref_d.astype(dist.dtype), err_msg=precision)
                self.assertTrue((dist[:, 0] == 0).all())

    def test_other_metrics_and_float32(self):
        rng = np.random.default_rng(3)
        x = rng.random((1500, 6))
        src = self.save_npy("m.npy", x)
        for metric, sk in [("cityblock", "manhattan"), ("chebyshev", "chebyshev"), ("cosine", "cosine"),
                           ("sqeuclidean", "sqeuclidean"), ("L2", "euclidean")]:
            nn = NearestNeighbors(n_neighbors=8, algorithm="brute", metric=sk).fit(x)
            sk_d, sk_i = nn.kneighbors()
            idx, dist, attrs, _ = read_knn(self.run_knn("--input", src, "--k", 8, "--metric", metric,
                                                        "--precision", "float64"))
            np.testing.assert_array_equal(idx, sk_i, err_msg=metric)
            np.testing.assert_allclose(dist, sk_d, rtol=1e-9, atol=1e-12, err_msg=metric)
            # float32: the same distances to float32 rounding; where two
            # neighbours are that close, their order may differ.
            i32, d32, attrs32, _ = read_knn(self.run_knn("--input", src, "--k", 8, "--metric", metric))
            self.assertEqual(d32.dtype, np.float32)
            self.assertEqual(attrs32["precision"], "float32")
            np.testing.assert_allclose(d32, sk_d, rtol=2e-5, atol=2e-6, err_msg=metric)
            gap = np.diff(sk_d, axis=1)
            close = np.zeros_like(sk_i, dtype=bool)
            close[:, 1:] |= gap < 1e-5
            close[:, :-1] |= gap < 1e-5
            self.assertTrue((i32 == sk_i)[~close].all(), f"{metric}: float32 order differs beyond ties")

    def test_scipy_metrics_parameters_and_bit_packed_booleans(self):
        # Every metric of `tdsolve edm` serves knn; against cdist's values,
        # ordered by (distance, index). float64, so ties are ties in both.
        rng = np.random.default_rng(12)
        x = rng.random((800, 7))
        bits = (rng.random((800, 40)) < 0.3).astype(np.float64)
        w = rng.random(7) + 0.1
        src, bsrc, wsrc = self.save_npy("c.npy", x), self.save_npy("b.npy", bits), self.save_npy("w.npy", w)
        cases = [("braycurtis", [], x, {}), ("canberra", [], x, {}), ("minkowski", ["--p", 3], x, {"p": 3}),
                 ("correlation", [], x, {}), ("jensenshannon", [], x, {}), ("seuclidean", [], x, {"V": np.var(x, axis=0, ddof=1)}),  # pdist's default V
                 ("cityblock", ["--weights", wsrc], x, {"w": w}), ("jaccard", [], bits, {}),
                 ("hamming", [], bits, {}), ("yule", [], bits, {})]
        for metric, extra, data, kw in cases:
            with self.subTest(metric=metric, extra=extra):
                ref_d = cdist(data, data, metric=metric, **kw)
                n = len(data)
                ref_i = np.empty((n, 6), dtype=np.int64)
                for i in range(n):
                    row = ref_d[i].copy()
                    row[i] = np.inf
                    ref_i[i] = np.lexsort((np.arange(n), row))[:6]
                for ranks in (None, 3):
                    idx, dist, attrs, _ = read_knn(self.run_knn(
                        "--input", bsrc if data is bits else src, "--k", 6, "--metric", metric, *extra,
                        "--precision", "float64", np_=ranks))
                    self.assertEqual(attrs["metric"], metric)
                    np.testing.assert_allclose(dist, np.take_along_axis(ref_d, ref_i, axis=1), rtol=1e-12,
                                               atol=1e-15, err_msg=metric)
                    np.testing.assert_array_equal(idx, ref_i, err_msg=f"{metric} ranks={ranks}")

    def test_radius_equals_query_pairs_on_1_and_3_ranks(self):
        rng = np.random.default_rng(11)
        for n, d, r in [(20000, 3, 0.04), (4000, 2, 0.0), (2000, 3, 10.0)]:
            x = rng.random((n, d))
            src = self.save_npy(f"r{n}.npy", x)
            ref = cKDTree(x).query_pairs(r, output_type="ndarray")
            ref = ref[np.lexsort((ref[:, 1], ref[:, 0]))] if len(ref) else ref.reshape(0, 2)
            outs = []
            for ranks in (None, 3):
                out = self.run_knn("--input", src, "--radius", r, "--precision", "float64", "--chunk-mb", 1,
                                   "--block", 64, np_=ranks)
                pairs, dist, attrs, done = read_pairs(out)
                what = f"n={n} r={r} ranks={ranks or 1}"
                self.assertTrue(done.all(), what)
                self.assertEqual(attrs["radius"], r)
                self.assertEqual(pairs.shape, (len(ref), 2), what)
                np.testing.assert_array_equal(pairs, ref, err_msg=what)
                if len(ref):
                    exact = np.linalg.norm(x[pairs[:, 0]] - x[pairs[:, 1]], axis=1)
                    np.testing.assert_allclose(dist, exact, rtol=1e-14, err_msg=what)
                    self.assertTrue((dist <= r).all())
                outs.append((pairs.tobytes(), dist.tobytes()))
            self.assertEqual(outs[0], outs[1], f"n={n}: 1 and 3 ranks differ")

    def test_radius_boundary_is_inclusive(self):
        # Distances exactly 1 and 2 on a line: <= R keeps them.
        x = np.arange(6, dtype=np.float64).reshape(-1, 1)
        src = self.save_npy("line.npy", x)
        pairs, dist, _, _ = read_pairs(self.run_knn("--input", src, "--radius", 1))
        np.testing.assert_array_equal(pairs, [[i, i + 1] for i in range(5)])
        np.testing.assert_array_equal(dist, np.ones(5, dtype=np.float32))

    def test_bad_input(self):
        src = self.save_npy("few.npy", np.random.default_rng(1).random((10, 3)))
        for args, expect in [
            (["--k", 10], ["--k 10", "10"]),
            (["--k", 0], ["--k must be at least 1"]),
            (["--k", -3], ["--k must be at least 1"]),
            ([], ["exactly one of --k K and --radius R"]),
            (["--k", 3, "--radius", 1], ["exactly one of --k K and --radius R"]),
            (["--radius", -1], ["--radius must be >= 0"]),
            (["--radius", "nan"], ["--radius", "not a finite number"]),
            (["--k", "x"], ["--k"]),
        ]:
            with self.subTest(args=args):
                self.run_bad_command("knn", ["--input", src, *args], expect)

    def test_killed_run_resumes_to_the_same_file(self):
        x = np.random.default_rng(5).random((3000, 4))
        src = self.save_npy("res.npy", x)
        # --chunk-mb bounds a chunk's rows of K values: K = 150 makes 6.
        clean = self.run_knn("--input", src, "--k", 150, "--chunk-mb", 1, "--block", 16)
        for radius in (None, 0.1):
            job = ["--input", src, "--chunk-mb", 1, "--block", 16] + (
                ["--k", 150] if radius is None else ["--radius", radius])
            out = self.path(f"killed-{radius}.h5")
            r = tdsolve("knn", *job, "--output", out, *QUIET, np_=2, env={"TDSOLVE_TEST_FAULT": "1:4:kill"})
            self.assertNotEqual(r.returncode, 0)
            self.assertFalse(os.path.exists(out))
            self.assertTrue(os.path.exists(out + ".partial"))
            with h5py.File(out + ".partial", "r") as f:
                done = f["progress/done"][:]
            if radius is None:
                self.assertTrue(0 < done.sum() < len(done), done)
            else:
                self.assertEqual(done.sum(), 0, "a --radius run keeps nothing before its end")
            r = tdsolve("knn", *job, "--output", out, "--resume", *QUIET, np_=3)
            self.assertEqual(r.returncode, 0, r.stderr)
            if radius is None:
                a, b = read_knn(out), read_knn(clean)
                self.assertEqual(a[0].tobytes(), b[0].tobytes())
                self.assertEqual(a[1].tobytes(), b[1].tobytes())
            else:
                ref = cKDTree(x.astype(np.float32).astype(np.float64)).query_pairs(radius, output_type="ndarray")
                pairs = read_pairs(out)[0]
                self.assertEqual({tuple(p) for p in pairs}, {tuple(p) for p in ref})

    def test_a_second_writer_is_refused(self):
        src = self.save_npy("two.npy", np.random.default_rng(2).random((4000, 3)))
        out = self.path("busy.h5")
        env = dict(os.environ, TDSOLVE_TEST_SLOW_MS="300")
        first = subprocess.Popen([BIN, "knn", "--input", src, "--k", "150", "--chunk-mb", "1", "--block", "16",
                                  "--output", out, *QUIET], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        try:
            self.wait_for(out + ".partial", first)
            second = tdsolve("knn", "--input", src, "--k", 5, "--output", out, "--overwrite", *QUIET)
            self.assertNotEqual(second.returncode, 0)
            self.assertIn("being written by another tdsolve run", second.stderr)
        finally:
            first.communicate(timeout=300)
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertEqual(read_knn(out)[0].shape, (4000, 150))
    def test_real_files_read_by_the_package_info_and_xarray(self):
        import sys
        pkg = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../python")
        if pkg not in sys.path:
            sys.path.insert(0, pkg)
        import tdsolve as tdpkg
        import xarray as xr
        x = np.random.default_rng(8).random((700, 4))
        src = self.save_npy("pkg.npy", x)
        k = self.run_knn("--input", src, "--k", 9, "--chunk-mb", 1, "--block", 16, np_=2)
        r = self.run_knn("--input", src, "--radius", 0.15, "--precision", "float64", np_=2)
        idx, dist, _, _ = read_knn(k)
        pairs, pd, _, _ = read_pairs(r)
        for path in (k, r):
            info = tdsolve("info", path)
            self.assertEqual(info.returncode, 0, info.stdout + info.stderr)
            self.assertEqual(tdpkg.check(path).exit_code, 0)
        with tdpkg.open(k) as res:
            self.assertEqual((res.n, res.k), (700, 9))
            i2, d2 = res.rows(100, 200)
            np.testing.assert_array_equal(i2, idx[100:200])
            np.testing.assert_array_equal(d2, dist[100:200])
        with tdpkg.open(r) as res:
            self.assertEqual(res.count, len(pairs))
            np.testing.assert_array_equal(res.pairs, pairs)
            m = res.to_sparse().tocsr()
            self.assertAlmostEqual(m[pairs[0, 0], pairs[0, 1]], pd[0])
        with xr.open_dataset(k, engine="h5netcdf") as ds:
            self.assertEqual(ds["indices"].dims, ("point", "neighbor"))
            self.assertEqual(ds["distances"].shape, (700, 9))
        with xr.open_dataset(r, engine="h5netcdf") as ds:
            self.assertEqual(ds["pairs"].dims, ("pair", "pair_end"))
            self.assertEqual(ds["distances"].dims, ("pair",))
            self.assertEqual(ds.sizes["pair"], len(pairs))


if __name__ == "__main__":
    unittest.main()
