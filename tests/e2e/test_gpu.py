"""--backend cuda end to end: files byte-identical to the CPU backend's, on
one and two ranks sharing a GPU; device errors are one clear line.
Skips without a GPU, fails instead under TDSOLVE_REQUIRE_GPU=1."""
import os
import unittest

import h5py

from common import TempDirTest, gpu_available, lab_built, tdsolve


OK, WHY = gpu_available()
try:
    import sklearn  # noqa: F401
    HAVE_SKLEARN = True
except ImportError:
    HAVE_SKLEARN = False
if not OK and os.environ.get("TDSOLVE_REQUIRE_GPU") == "1":
    raise SystemExit(f"TDSOLVE_REQUIRE_GPU=1 but tdsolve cannot use a GPU: {WHY}")


@unittest.skipUnless(OK, f"no GPU: {WHY}")
class GpuTest(TempDirTest):
    def values(self, path):
        with h5py.File(path, "r") as f:
            return f["distances"][:].tobytes(), f["progress/done"][:].tobytes()

    def test_files_identical_to_cpu(self):
        for metric, precision in [("euclidean", "float32"), ("sqeuclidean", "float32"), ("cosine", "float64"),
                                  ("cityblock", "float64"), ("chebyshev", "float32")]:
            args = ["--generate", "uniform:5003:7:3", "--metric", metric, "--precision", precision,
                    "--chunk-mb", "2", "--progress", "none", "--quiet"]
            cpu, gpu1, gpu2 = self.path("c.h5"), self.path("g1.h5"), self.path("g2.h5")
            tdsolve("edm", *args, "--output", cpu, "--backend", "cpu", "--overwrite", check=True)
            tdsolve("edm", *args, "--output", gpu1, "--backend", "cuda", "--overwrite", check=True)
            tdsolve("edm", *args, "--output", gpu2, "--backend", "cuda", "--overwrite", np_=2, check=True)
            c = self.values(cpu)
            self.assertEqual(self.values(gpu1), c, f"{metric} {precision}: 1 rank GPU != CPU")
            self.assertEqual(self.values(gpu2), c, f"{metric} {precision}: 2 ranks on one GPU != CPU")

    def test_kernel_shapes_identical_to_cpu(self):
        # Every pair kernel the plan can choose (solver/cuda/kernel_plan.hpp),
        # against the CPU's file. d <= 8 stores in the strip schedules:
        # strips (d <= 2: a warp a row through a buffer; the H100's default)
        # and lanes (d <= 8: a thread a 16-byte piece of every row, the
        # columns in registers, thread 0 taking the strip's last values, or
        # past d = 6 a row's first values from the previous lane and single
        # stores at warp edges), each forced (TDSOLVE_TEST_STORE_SCHEDULE)
        # whatever this GPU picks; 16-64 rows × 4 KiB, 16-byte stores from a
        # row's first 16-byte boundary; 8 and 128 rows through
        # TDSOLVE_STRIP_ROWS: n = 1031 spans two strip columns of floats and
        # three of doubles, and chunks and ranks start inside a strip row.
        # d > 8 runs the general kernels: one narrow stage for d <= 16
        # floats / 8 doubles, wide stages beyond; 16-byte staging loads when
        # d is a multiple of 4 floats / 2 doubles, element by element
        # otherwise; the last stage partly zero padding. Histograms and
        # selections (knn --radius) run tiles at d <= 8, also all on the
        # masked path (TDSOLVE_TEST_MASKED_ONLY). n = 1031 leaves masked
        # edges; --chunk-mb 1 splits the run into chunks.
        def run(command, args, backend, ranks=1, extra=(), env=None):
            p = self.path(f"{command}_{backend}{ranks}.h5")
            tdsolve(command, *args, *extra, "--output", p, "--backend", backend, "--overwrite", "--progress",
                    "none", "--quiet", np_=ranks, env=env, check=True)
            with h5py.File(p, "r") as f:
                names = ["counts"] if command == "hist" else ["pairs", "distances"] if "pairs" in f else ["distances"]
                return b"".join(f[x][()].tobytes() for x in names)

        cases = [(d, "euclidean", "float32") for d in (1, 2, 3, 4, 6, 8, 9, 13, 16, 17, 33, 64)]
        cases += [(3, "cosine", "float64"), (2, "cityblock", "float64"), (8, "cosine", "float32"),
                  (7, "sqeuclidean", "float64"), (1, "euclidean", "float64"), (3, "sqeuclidean", "float32"),
                  (4, "chebyshev", "float32"), (2, "cosine", "float32"), (1, "cityblock", "float32"),
                  (5, "euclidean", "float64"), (6, "cosine", "float32")]
        cases += [(16, "sqeuclidean", "float32"), (17, "cityblock", "float32"), (64, "chebyshev", "float32"),
                  (13, "cosine", "float32"), (33, "cosine", "float32")]
        cases += [(d, "euclidean", "float64") for d in (9, 16, 17, 33)] + [(33, "cosine", "float64")]
        masked = {"TDSOLVE_TEST_MASKED_ONLY": "1"}
        for d, metric, precision in cases:
            what = f"d = {d} {metric} {precision}"
            args = ["--generate", f"uniform:1031:{d}:{d}", "--metric", metric, "--precision", precision,
                    "--chunk-mb", "1"]
            cpu = run("edm", args, "cpu")
            self.assertEqual(run("edm", args, "cuda"), cpu, what)
            if d <= 8:
                for schedule in ("strips", "lanes") if d <= 2 else ("lanes",):
                    strips = {"TDSOLVE_TEST_STORE_SCHEDULE": schedule}
                    w = f"{what}, {schedule}"
                    self.assertEqual(run("edm", args, "cuda", 1, [], strips), cpu, w)
                    self.assertEqual(run("edm", args, "cuda", 1, ["--map", "bb"], strips), cpu, w + ", bb")
                    self.assertEqual(run("edm", args, "cuda", 2, [], strips), cpu, w + ", 2 ranks")
                    if d in (1, 3, 7):
                        for rows in ("8", "128"):
                            env = dict(strips, TDSOLVE_STRIP_ROWS=rows)
                            self.assertEqual(run("edm", args, "cuda", 1, (), env), cpu, f"{w} of {rows} rows")
            if d in (17, 33) and precision == "float32" and metric == "euclidean":
                self.assertEqual(run("edm", args, "cuda", 2), cpu, what + ", 2 ranks")
                self.assertEqual(run("edm", args, "cuda", 1, ["--map", "bb"]), cpu, what + ", bb")
            # Selections and histograms: tiles at d <= 8, the general path beyond.
            radius = {"euclidean": 0.15 * d ** 0.5, "sqeuclidean": 0.03 * d, "cityblock": 0.2 * d,
                      "chebyshev": 0.15, "cosine": 0.02}[metric]
            sel = ["--generate", f"uniform:1031:{d}:{d}", "--metric", metric, "--precision", precision,
                   "--radius", f"{radius:.6g}"]
            cpu_sel = run("knn", sel, "cpu")
            self.assertEqual(run("knn", sel, "cuda"), cpu_sel, what + ", --radius")
            self.assertEqual(run("knn", sel, "cuda", 2, ["--map", "bb"]), cpu_sel, what + ", --radius, bb, 2 ranks")
            self.assertEqual(run("knn", sel, "cuda", 1, [], masked), cpu_sel, what + ", --radius, masked")
            if d <= 8 and metric != "cosine":
                hist = ["--generate", f"uniform:1031:{d}:{d}", "--metric", metric, "--precision", precision,
                        "--bins", "37", "--range", f"0:{radius * 4:.6g}"]
                cpu_hist = run("hist", hist, "cpu")
                self.assertEqual(run("hist", hist, "cuda"), cpu_hist, what + ", hist")
                self.assertEqual(run("hist", hist, "cuda", 1, [], masked), cpu_hist, what + ", hist, masked")
        # 61 bins: a histogram a warp; 5000: one a block, 20 KB of shared
        # memory on top of the strips (34 KB with wide ones).
        for d, bins in ((13, 61), (33, 61), (33, 5000)):
            args = ["--generate", f"uniform:3001:{d}:7", "--bins", str(bins), "--range", f"0:{d ** 0.5:.3f}"]
            self.assertEqual(run("hist", args, "cuda"), run("hist", args, "cpu"), f"hist d = {d}, {bins} bins")
        args = ["--generate", "uniform:1031:17:1", "--with-generate", "uniform:517:17:2"]
        self.assertEqual(run("cross", args, "cuda"), run("cross", args, "cpu"), "cross d = 17")
        args = ["--generate", "uniform:1031:2:1", "--with-generate", "uniform:517:2:2"]
        cpu = run("cross", args, "cpu")
        self.assertEqual(run("cross", args, "cuda"), cpu, "cross d = 2")
        for schedule in ("strips", "lanes"):
            strips = {"TDSOLVE_TEST_STORE_SCHEDULE": schedule}
            self.assertEqual(run("cross", args, "cuda", env=strips), cpu, f"cross d = 2, {schedule}")
            self.assertEqual(run("cross", args, "cuda", 2, env=strips), cpu, f"cross d = 2, {schedule}, 2 ranks")
        # d = 7: lanes with shuffles on a rectangle, 1 and 2 ranks.
        args = ["--generate", "uniform:1031:7:1", "--with-generate", "uniform:517:7:2"]
        cpu = run("cross", args, "cpu")
        self.assertEqual(run("cross", args, "cuda"), cpu, "cross d = 7")
        self.assertEqual(run("cross", args, "cuda", 2), cpu, "cross d = 7, 2 ranks")
        # Three ranks and chunks of one block row each (128 rows: 8 bands of
        # 16 rows at d = 2) on both maps, n not a multiple of anything.
        args = ["--generate", "uniform:5003:2:3", "--chunk-mb", "1", "--block", "128"]
        cpu = run("edm", args, "cpu")
        for schedule in ("strips", "lanes"):
            for extra in ([], ["--map", "bb"]):
                self.assertEqual(run("edm", args, "cuda", 3, extra, {"TDSOLVE_TEST_STORE_SCHEDULE": schedule}), cpu,
                                 f"d = 2, n = 5003, {schedule}, 3 ranks {extra}")
        # The test hooks refuse what does not exist, in one line, before any file.
        for env, message in (({"TDSOLVE_TEST_STORE_SCHEDULE": "rows"},
                              "TDSOLVE_TEST_STORE_SCHEDULE must be strips or lanes"),
                             ({"TDSOLVE_TEST_STORE_SCHEDULE": "strips"}, "no strips kernel for d = 3"),
                             ({"TDSOLVE_STRIP_ROWS": "24"}, "TDSOLVE_STRIP_ROWS must be 8, 16, 32, 64 or 128"),
                             ({"TDSOLVE_TEST_MASKED_ONLY": "yes"}, "TDSOLVE_TEST_MASKED_ONLY must be 0 or 1")):
            out = self.path("bad.h5")
            r = tdsolve("edm", "--generate", "uniform:100:3", "--output", out, "--backend", "cuda", env=env)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(message, r.stderr)
            self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
            self.assertFalse(os.path.exists(out) or os.path.exists(out + ".partial"))

    def test_auto_picks_cuda_and_bb_map_agrees(self):
        a, b = self.path("a.h5"), self.path("b.h5")
        r = tdsolve("edm", "--generate", "uniform:3000:4", "--output", a, check=True)
        self.assertIn("cuda (", r.stdout)
        tdsolve("edm", "--generate", "uniform:3000:4", "--output", b, "--backend", "cuda", "--map", "bb",
                "--quiet", check=True)
        self.assertEqual(self.values(a), self.values(b))

    def test_hist_counts_identical_to_cpu_and_across_ranks(self):
        # n = 20000: 2e8 pairs, every metric's bins filled; the box too.
        for metric, precision, extra in [("euclidean", "float32", []), ("cityblock", "float64", []),
                                         ("euclidean", "float32", ["--box", "1,1,1"]),
                                         ("cosine", "float32", [])]:
            args = ["--generate", "uniform:20000:3:5", "--bins", "97", "--range", "0.01:1.5", "--metric", metric,
                    "--precision", precision, "--progress", "none", "--quiet", *extra]
            outs = {}
            for name, backend, ranks in [("cpu", "cpu", 1), ("gpu1", "cuda", 1), ("gpu2", "cuda", 2)]:
                p = self.path(f"h_{name}.h5")
                tdsolve("hist", *args, "--output", p, "--backend", backend, "--overwrite", np_=ranks, check=True)
                with h5py.File(p, "r") as f:
                    outs[name] = (f["counts"][:].tobytes(), int(f["underflow"][()]), int(f["overflow"][()]),
                                  f["rdf"][:].tobytes() if "rdf" in f else b"")
                    self.assertEqual(int(f["counts"][:].sum()) + outs[name][1] + outs[name][2], 20000 * 19999 // 2)
            self.assertEqual(outs["gpu1"], outs["cpu"], f"hist {metric} {precision} {extra}: GPU != CPU")
            self.assertEqual(outs["gpu2"], outs["cpu"], f"hist {metric} {precision} {extra}: 2 ranks != 1")

    def test_cross_identical_to_cpu(self):
        for metric, precision in [("euclidean", "float32"), ("cosine", "float64"), ("chebyshev", "float32")]:
            args = ["--generate", "uniform:3001:5:1", "--with-generate", "uniform:1777:5:2", "--metric", metric,
                    "--precision", precision, "--chunk-mb", "1", "--progress", "none", "--quiet"]
            outs = []
            for backend, ranks in [("cpu", 1), ("cuda", 1), ("cuda", 2)]:
                p = self.path(f"x_{backend}{ranks}.h5")
                tdsolve("cross", *args, "--output", p, "--backend", backend, "--overwrite", np_=ranks, check=True)
                outs.append(self.values(p))
            self.assertEqual(outs[1], outs[0], f"cross {metric} {precision}: GPU != CPU")
            self.assertEqual(outs[2], outs[0], f"cross {metric} {precision}: 2 ranks != CPU")

    def test_device_errors_are_one_line(self):
        for args, expect in [(["--device", "99"], "--device 99"), (["--block", "100"], "multiple of 128")]:
            r = tdsolve("edm", "--generate", "uniform:100:3", "--output", self.path("x.h5"), "--backend", "cuda",
                        *args, np_=2)
            self.assertNotEqual(r.returncode, 0)
            lines = [l for l in r.stderr.splitlines() if l.startswith("tdsolve:")]
            self.assertEqual(len(lines), 1, r.stderr)
            self.assertIn(expect, lines[0])
            self.assertFalse(os.path.exists(self.path("x.h5")))

    def knn_files(self, args, ranks_backends, name):
        outs = []
        for backend, ranks in ranks_backends:
            p = self.path(f"{name}_{backend}{ranks}.h5")
            tdsolve("knn", *args, "--output", p, "--backend", backend, "--overwrite", "--progress", "none",
                    "--quiet", np_=ranks, check=True)
            with h5py.File(p, "r") as f:
                outs.append(tuple(f[d][:].tobytes() for d in ("indices", "distances", "progress/done")
                                  if d in f) + tuple(f[d][:].tobytes() for d in ("pairs",) if d in f))
        return outs

    def test_knn_identical_to_cpu(self):
        # Every metric, both precisions, K up to the kernel's limit (256),
        # d spanning one and several staged feature blocks (64), n not a
        # multiple of the 256 rows of a block nor of the 32 columns of a tile.
        for metric, precision, n, d, k in [("euclidean", "float32", 5003, 3, 16), ("euclidean", "float64", 3001, 70, 9),
                                           ("sqeuclidean", "float32", 2999, 8, 256), ("cosine", "float64", 2500, 5, 4),
                                           ("cityblock", "float32", 4097, 32, 1), ("chebyshev", "float64", 1000, 2, 31),
                                           ("cosine", "float32", 3000, 130, 12),
                                           # SciPy's other metrics: powers and logarithms,
                                           # ratios, and booleans on packed bits (uniform
                                           # points: nonzero, so all true but a few; still
                                           # the packed path)
                                           ("minkowski --p 3", "float32", 2000, 5, 8),
                                           ("jensenshannon", "float64", 1500, 9, 8),
                                           ("canberra", "float32", 2100, 40, 10),
                                           ("braycurtis", "float64", 1200, 3, 5),
                                           ("correlation", "float32", 1300, 70, 7),
                                           ("jaccard", "float32", 1000, 100, 6)]:
            args = ["--generate", f"uniform:{n}:{d}:{n + d}", "--k", k, "--metric", *metric.split(), "--precision",
                    precision, "--chunk-mb", 1]
            outs = self.knn_files(args, [("cpu", 1), ("cuda", 1), ("cuda", 2)], "knn")
            what = f"knn {metric} {precision} n={n} d={d} k={k}"
            self.assertEqual(outs[1], outs[0], f"{what}: GPU != CPU")
            self.assertEqual(outs[2], outs[0], f"{what}: 2 ranks on one GPU != CPU")

    def test_knn_nan_rows_identical_to_cpu(self):
        # dice of two all-false points is nan: rows of such points list their
        # 10 numbers, then nan by index (solver/knn.hpp), on both backends;
        # 590 such rows (past two blocks of 256), columns past one tile.
        import numpy as np
        x = (np.random.default_rng(3).random((600, 40)) < 0.3).astype(np.float64)
        x[:590] = 0
        x[590:, 0] = 1
        src = self.path("bool.npy")
        np.save(src, x)
        for precision, k in (("float32", 16), ("float64", 256)):
            args = ["--input", src, "--k", k, "--metric", "dice", "--precision", precision]
            outs = self.knn_files(args, [("cpu", 1), ("cuda", 1), ("cuda", 2)], "nan")
            indices = np.frombuffer(outs[0][0], dtype=np.int64)
            self.assertTrue((indices >= 0).all() and (indices < len(x)).all(), "an index out of range")
            self.assertEqual(outs[1], outs[0], f"dice nan rows {precision} k={k}: GPU != CPU")
            self.assertEqual(outs[2], outs[0], f"dice nan rows {precision} k={k}: 2 ranks != CPU")

    @unittest.skipUnless(HAVE_SKLEARN, "scikit-learn is not installed here (test_knn.py compares the CPU with it)")
    def test_knn_equals_sklearn_at_n_20000(self):
        import numpy as np
        from sklearn.neighbors import NearestNeighbors
        x = np.random.default_rng(9).random((20000, 3))
        src = self.path("x.npy")
        np.save(src, x)
        p = self.path("sk.h5")
        tdsolve("knn", "--input", src, "--k", 16, "--precision", "float64", "--backend", "cuda", "--output", p,
                "--quiet", check=True)
        sk_d, sk_i = NearestNeighbors(n_neighbors=16, algorithm="brute").fit(x).kneighbors()
        with h5py.File(p, "r") as f:
            np.testing.assert_array_equal(f["indices"][:], sk_i)
            np.testing.assert_allclose(f["distances"][:], sk_d, rtol=1e-9, atol=1e-12)

    def test_knn_radius_identical_to_cpu(self):
        for precision in ("float32", "float64"):
            args = ["--generate", "uniform:50000:3:4", "--radius", "0.01", "--precision", precision]
            outs = self.knn_files(args, [("cpu", 1), ("cuda", 1), ("cuda", 3)], "radius")
            self.assertGreater(len(outs[0][-1]), 16 * 2000, "too few pairs to compare")
            self.assertEqual(outs[1], outs[0], f"radius {precision}: GPU != CPU")
            self.assertEqual(outs[2], outs[0], f"radius {precision}: 3 ranks != CPU")

    def test_collide_identical_to_cpu(self):
        # The edm store kernels in float64 with the overlap test on the host:
        # the same /pairs, /distances and /count bytes as the CPU, on 1, 2
        # and 3 ranks sharing the GPU (and the CPU on 3 ranks at n = 200003),
        # in 3-D and 1-D, n not a multiple of 128.
        for spec in ("spheres:200003:3:9", "spheres:100001:1:4", "spheres:30001:3:2:0.02"):
            outs = []
            runs = [("cpu", 1), ("cuda", 1), ("cuda", 2), ("cuda", 3)]
            if spec.startswith("spheres:200003"):
                runs.append(("cpu", 3))
            for backend, ranks in runs:
                p = self.path(f"collide_{backend}{ranks}.h5")
                tdsolve("collide", "--generate", spec, "--output", p, "--backend", backend, "--overwrite",
                        "--progress", "none", "--quiet", np_=ranks, check=True)
                with h5py.File(p, "r") as f:
                    outs.append(tuple(f[d][()].tobytes() for d in ("pairs", "distances", "count", "progress/done")))
            self.assertGreater(len(outs[0][0]), 16 * 10000, f"{spec}: too few pairs to compare")
            for (backend, ranks), out in zip(runs[1:], outs[1:]):
                self.assertEqual(out, outs[0], f"collide {spec}: {backend} on {ranks} rank(s) != CPU on 1")

    def test_knn_too_many_neighbours_for_the_gpu_is_one_line(self):
        r = tdsolve("knn", "--generate", "uniform:1000:3", "--k", 257, "--output", self.path("x.h5"), "--backend",
                    "cuda", np_=2)
        self.assertNotEqual(r.returncode, 0)
        lines = [l for l in r.stderr.splitlines() if l.startswith("tdsolve:")]
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn("at most 256 neighbours", lines[0])
        self.assertFalse(os.path.exists(self.path("x.h5")))

    def test_lambda2_tile_orders_give_the_same_bytes(self):
        # TDSOLVE_LAMBDA2_ORDER only changes the order the tiles run in.
        args = ["--generate", "uniform:4099:4:8", "--chunk-mb", "1", "--progress", "none", "--quiet"]
        files = {}
        for name, backend, order in [("cpu", "cpu", None), ("long", "cuda", "long"), ("short", "cuda", "short"),
                                     ("default", "cuda", None)]:
            path = self.path(f"{name}.h5")
            env = {"TDSOLVE_LAMBDA2_ORDER": order} if order else None
            tdsolve("edm", *args, "--output", path, "--backend", backend, env=env, check=True)
            files[name] = self.values(path)
        for name in ("long", "short", "default"):
            self.assertEqual(files[name], files["cpu"], name)
        # A bad value is a usage error at start, like the other choice
        # variables: exit 2, no file and no .partial left behind.
        bad = self.path("bad.h5")
        r = tdsolve("edm", *args, "--output", bad, "--backend", "cuda", env={"TDSOLVE_LAMBDA2_ORDER": "sideways"})
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("TDSOLVE_LAMBDA2_ORDER must be long or short", r.stderr)
        self.assertFalse(os.path.exists(bad) or os.path.exists(bad + ".partial"))

    @unittest.skipUnless(lab_built(), "tdsolve built without the map laboratory (-DTDSOLVE_LAB=OFF)")
    def test_lab_maps_on_the_gpu(self):
        # Every exact map covers the triangle exactly once on the device, and
        # collide's counts equal the CPU engine's (same float32 operations).
        exact = {"bb", "ltm-x-exact", "ltm-n-exact", "ltm", "ltm-nodiag", "rb", "rec", "utm-exact"}
        gpu, cpu = self.path("g.csv"), self.path("c.csv")
        tdsolve("bench", "--backend", "cuda", "--problem", "dummy", "--maps", "all", "--n", "33,1000,4097",
                "--repeat", "1", "--csv", gpu, check=True)
        for backend, out in (("cuda", gpu), ("cpu", cpu)):
            tdsolve("bench", "--backend", backend, "--problem", "collide", "--maps", "bb,ltm,rb,rec,utm-exact",
                    "--n", "3000", "--repeat", "1", "--csv", out, check=True)
        import csv
        with open(gpu) as f:
            g = list(csv.DictReader(f))
        with open(cpu) as f:
            c = list(csv.DictReader(f))
        self.assertTrue(all(r["device"].startswith("cuda") for r in g))
        for r in g:
            if r["map"] in exact:
                self.assertEqual(r["checked"], "ok", r)
        self.assertIn("wrong", {r["checked"] for r in g if r["map"] == "ltm-n-raw"})
        gc = {(r["features"], r["map"]): (r["count"], r["reference"], r["checked"]) for r in g if r["problem"] == "collide"}
        cc = {(r["features"], r["map"]): (r["count"], r["reference"], r["checked"]) for r in c}
        self.assertEqual(len(cc), 10)
        self.assertEqual(gc, cc)


if __name__ == "__main__":
    unittest.main()
