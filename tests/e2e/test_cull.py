"""--cull (solver/cull.hpp): a culled run writes the dense run's bytes.

hist, hist --with (two sets), knn --radius, knn --k and collide, each run twice on the same points, with
--cull on and --cull off, and every dataset of the two files compared byte
for byte (the /progress records differ: a culled plan is cut by pairs
tested). The cases are drawn at random (the seed is printed; TDSOLVE_CULL_SEED
repeats one): uniform and clustered points, duplicated points, points on a
lattice (whole numbers, so pairs sit exactly at the cutoff and block boxes
share faces), d = 1..4, every metric with a box bound, float32 and float64,
cutoffs from 0 to past the points' extent, periodic boxes for hist, small
tiles (--block 8 to 32) so that a few hundred points make many blocks; and
on 3 ranks, where the pair lists are sorted across ranks. Then what auto
chooses, the refusals of --cull on, resume after a kill (hist, from its last
checkpoint; collide, between the flags and the rename) and the verdicts of
tdsolve info and tdsolve.check on culled files, complete and damaged. TripletCullTest:
triplet --cull (ATM with --cutoff, SW) against dense runs (to rounding), LAMMPS pair_style
atm, its refusals and a resume. PeriodicTest: knn
--radius and collide in a periodic box (--box) against cKDTree(boxsize=L),
culled = dense, and the refusals of bad boxes.

CullGpuTest compares --backend cuda culled runs with dense CPU runs, the tile
list the GPU builds with the host's (--stats' list_fnv) and resumes a stopped
CUDA run on the CPU (skips without a GPU, fails instead under
TDSOLVE_REQUIRE_GPU=1).
"""
import json
import os
import sys
import unittest

import h5py
import numpy as np

from common import TempDirTest, killed_after_checkpoints, require_gpu, tdsolve

SEED = int(os.environ.get("TDSOLVE_CULL_SEED", np.random.SeedSequence().entropy % (1 << 32)))
METRICS = ("euclidean", "sqeuclidean", "cityblock", "chebyshev", "minkowski")


def datasets(path):
    """{name: (dtype, shape, bytes)} of every dataset but /progress/*, and the
    dimension scales' names."""
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and not name.startswith("progress"):
                v = obj[()]
                out[name] = (str(obj.dtype), obj.shape, np.asarray(v).tobytes())
        f.visititems(visit)
    return out


def cull_attrs(path):
    with h5py.File(path, "r") as f:
        a = f["progress"].attrs
        return int(a.get("culled", -1)), str(a.get("cull", ""))


def cull_units(metric, cut):
    """A cutoff in the units of the coordinates (sqeuclidean's is a square)."""
    return np.sqrt(cut) if metric == "sqeuclidean" else cut


def points(rng, kind, n, d):
    if kind == "uniform":
        return rng.random((n, d)) * rng.choice([1.0, 10.0, 1e3])
    if kind == "clustered":
        centres = rng.random((5, d)) * 10
        return centres[rng.integers(0, 5, n)] + rng.normal(0, 0.05, (n, d))
    if kind == "duplicates":
        base = rng.random((max(2, n // 4), d))
        return base[rng.integers(0, len(base), n)]
    if kind == "lattice":  # whole numbers: pairs at the cutoff, boxes sharing faces
        return rng.integers(0, 6, (n, d)).astype(float)
    raise ValueError(kind)


class CullCase(TempDirTest):
    def run_pair(self, args, np_=None, backend_on="cpu", backend_off="cpu"):
        """Runs args with --cull on and off; returns both outputs."""
        on, off = self.path("on.h5"), self.path("off.h5")
        r = tdsolve(*args, "--cull", "on", "--backend", backend_on, "--output", on, "--overwrite", np_=np_)
        self.assertEqual(r.returncode, 0, f"{args}: {r.stderr}")
        self.assertIn("culled (--cull on)", r.stdout, args)
        r = tdsolve(*args, "--cull", "off", "--backend", backend_off, "--output", off, "--overwrite", np_=np_)
        self.assertEqual(r.returncode, 0, f"{args}: {r.stderr}")
        return on, off

    def random_case(self, rng, command, d=None):
        kind = rng.choice(["uniform", "clustered", "duplicates", "lattice"])
        n = int(rng.integers(2, 700))
        d = d or int(rng.integers(1, 5))
        x = points(rng, kind, n, d)
        extent = float(np.ptp(x, axis=0).max()) if n > 1 else 1.0
        cut = float(rng.choice([0.0, 1e-9, 1.0, 2.0]) if kind == "lattice"
                    else rng.choice([0.0, 1e-6, 0.01, 0.1, 0.3, 1.5]) * max(extent, 1e-3))
        block = str(int(rng.choice([8, 16, 32])))
        precision = str(rng.choice(["float32", "float64"]))
        metric = str(rng.choice(METRICS))
        what = f"{command} {kind} n={n} d={d} cut={cut!r} block={block} {precision} {metric}"
        src = self.path("x.npy")
        if command == "collide":
            radii = (rng.random(n) * 0.5 + 0.01) * max(cut, 1e-3)
            np.save(src, np.c_[x[:, :1], radii] if d < 3 else np.c_[x[:, :3], radii])
            return what, ["collide", "--input", src, "--block", block]
        np.save(src, x)
        common = ["--input", src, "--block", block, "--precision", precision, "--metric", metric]
        if metric == "minkowski":
            common += ["--p", str(rng.choice([0.5, 1.5, 3.0]))]
        if command == "knn-k":  # the k nearest: no cutoff, the lists' worst bounds each row
            return what, ["knn", *common, "--k", str(int(rng.integers(1, min(n - 1, 40) + 1)))]
        if command == "knn":
            knn = ["knn", *common, "--radius", repr(cut)]
            if rng.random() < 0.4 and metric != "minkowski" and cut > 0:  # a periodic box
                box = np.maximum(np.ptp(x, axis=0) + 1e-3, 2.5 * cull_units(metric, cut))
                np.save(src, x - x.min(axis=0))
                knn += ["--box", ",".join(repr(float(b)) for b in box)]
                what += f" box={box}"
            return what, knn
        hi = max(cut, 1e-12)
        hist = ["hist", *common, "--bins", str(int(rng.integers(1, 40))), "--range", f"{hi / 3!r}:{hi!r}"]
        y = None
        if command == "hist-with":  # a second set (the rectangle), of its own kind and size
            kind_y = rng.choice(["uniform", "clustered", "duplicates", "lattice"] if kind != "lattice" else ["lattice"])
            y = points(rng, kind_y, int(rng.integers(1, 700)), d)
            if rng.random() < 0.3:  # some points of the one set are the other's
                y[: min(len(y), n) // 2] = x[: min(len(y), n) // 2]
            what += f" with {kind_y} k={len(y)}"
            hist += ["--with", self.path("y.npy")]
            np.save(self.path("y.npy"), y)
        if rng.random() < 0.4 and metric != "minkowski":  # a periodic box (hist's metrics of a difference)
            both = x if y is None else np.vstack([x, y])
            box = np.ptp(both, axis=0) + rng.choice([0.0, 0.5]) * extent + 1e-3
            np.save(src, x - both.min(axis=0))
            if y is not None:
                np.save(self.path("y.npy"), y - both.min(axis=0))
            hist += ["--box", ",".join(repr(float(b)) for b in box)]
            what += f" box={box}"
        return what, hist

    def assert_same(self, args, np_=None, **kw):
        on, off = self.run_pair(args, np_=np_, **kw)
        a, b = datasets(on), datasets(off)
        self.assertEqual(sorted(a), sorted(b), args)
        for k in a:
            self.assertEqual(a[k][:2], b[k][:2], f"{k}: {args}")
            self.assertTrue(a[k][2] == b[k][2], f"/{k} differs (seed {SEED}): {args}")
        self.assertEqual(cull_attrs(on)[0], 1)
        self.assertEqual(cull_attrs(off), (0, "dense (--cull off)"))
        return on, off


class CullEqualsDenseTest(CullCase):
    @classmethod
    def setUpClass(cls):
        print(f"TDSOLVE_CULL_SEED={SEED}", file=sys.stderr)

    def test_random_cases_one_rank(self):
        rng = np.random.default_rng(SEED)
        for command in ("hist", "hist-with", "knn", "collide", "knn-k"):
            for _ in range(10):
                what, args = self.random_case(rng, command)
                with self.subTest(what=what, seed=SEED):
                    self.assert_same(args)

    def test_random_cases_three_ranks(self):
        rng = np.random.default_rng(SEED + 1)
        for command in ("hist", "hist-with", "knn", "collide", "knn", "knn-k", "knn-k"):
            what, args = self.random_case(rng, command, d=3)
            with self.subTest(what=what, seed=SEED):
                self.assert_same(args, np_=3)

    def test_culled_pairs_are_scipys(self):
        # An outside reference too: cKDTree.query_pairs of the same points.
        from scipy.spatial import cKDTree
        rng = np.random.default_rng(SEED + 2)
        x = rng.random((3000, 3))
        np.save(self.path("x.npy"), x)
        out = self.path("r.h5")
        r = tdsolve("knn", "--input", self.path("x.npy"), "--radius", "0.05", "--precision", "float64",
                    "--output", out, "--cull", "on", "--backend", "cpu", np_=2)
        self.assertEqual(r.returncode, 0, r.stderr)
        want = cKDTree(x).query_pairs(0.05, output_type="ndarray")
        want = want[np.lexsort((want[:, 1], want[:, 0]))]
        with h5py.File(out, "r") as f:
            np.testing.assert_array_equal(f["pairs"][:], want)


    def test_culled_neighbours_are_ckdtrees(self):
        # knn --k culled against cKDTree.query (k + 1, the point itself first:
        # no duplicates, so no ties), on 2 ranks.
        from scipy.spatial import cKDTree
        rng = np.random.default_rng(SEED + 4)
        x = np.r_[rng.random((3000, 3)), rng.normal(0.5, 0.01, (1000, 3))]
        np.save(self.path("x.npy"), x)
        out = self.path("k.h5")
        r = tdsolve("knn", "--input", self.path("x.npy"), "--k", "12", "--precision", "float64",
                    "--output", out, "--cull", "on", "--backend", "cpu", "--block", "32", np_=2)
        self.assertEqual(r.returncode, 0, r.stderr)
        dist, idx = cKDTree(x).query(x, k=13)
        self.assertTrue((idx[:, 0] == np.arange(len(x))).all())
        with h5py.File(out, "r") as f:
            np.testing.assert_array_equal(f["indices"][:], idx[:, 1:])
            np.testing.assert_allclose(f["distances"][:], dist[:, 1:], rtol=1e-15, atol=0)
            self.assertEqual(int(f["progress"].attrs["culled"]), 1)


class PeriodicTest(CullCase):
    """knn --radius and collide in an orthorhombic periodic box (--box):
    against cKDTree(boxsize=L) (float64), culled = dense, and the refusals."""

    def box_points(self, rng, n):
        L = rng.uniform(0.5, 2.0, 3)
        return L, rng.random((n, 3)) * L

    def test_radius_pairs_are_ckdtrees(self):
        from scipy.spatial import cKDTree
        rng = np.random.default_rng(SEED + 4)
        for trial in range(3):
            L, x = self.box_points(rng, 4000)
            R = float(rng.uniform(0.01, 0.2) * L.min())
            np.save(self.path("x.npy"), x)
            args = ["knn", "--input", self.path("x.npy"), "--radius", repr(R), "--precision", "float64",
                    "--box", ",".join(repr(float(v)) for v in L), "--block", "16"]
            with self.subTest(trial=trial, L=L, R=R):
                on, _ = self.assert_same(args, np_=2 if trial == 1 else None)
                want = cKDTree(x, boxsize=L).query_pairs(R, output_type="ndarray")
                want = want[np.lexsort((want[:, 1], want[:, 0]))]
                with h5py.File(on, "r") as f:
                    np.testing.assert_array_equal(f["pairs"][:], want)
                    self.assertEqual(f["pairs"].attrs["box"], ",".join("%.17g" % v for v in L))

    def test_overlaps_in_a_box(self):
        from scipy.spatial import cKDTree
        rng = np.random.default_rng(SEED + 5)
        L, x = self.box_points(rng, 4000)
        r = rng.random(4000) * 0.05 * L.min()
        np.save(self.path("s.npy"), np.c_[x, r])
        on, _ = self.assert_same(["collide", "--input", self.path("s.npy"), "--box",
                                  ",".join(repr(float(v)) for v in L), "--block", "16"])
        cand = cKDTree(x, boxsize=L).query_pairs(2 * r.max(), output_type="ndarray")
        d = x[cand[:, 0]] - x[cand[:, 1]]
        d -= L * np.rint(d / L)
        keep = cand[np.sqrt((d * d).sum(1)) < r[cand[:, 0]] + r[cand[:, 1]]]
        keep = keep[np.lexsort((keep[:, 1], keep[:, 0]))]
        with h5py.File(on, "r") as f:
            self.assertGreater(len(keep), 0)
            np.testing.assert_array_equal(f["pairs"][:], keep)

    def test_bad_boxes_are_one_line_and_write_nothing(self):
        np.save(self.path("x.npy"), np.random.default_rng(9).random((300, 3)))
        np.save(self.path("s.npy"), np.c_[np.random.default_rng(9).random((300, 3)), np.full(300, 0.3)])
        out = self.path("b.h5")
        for args, code, words in (
                (["knn", "--input", self.path("x.npy"), "--k", "3", "--box", "1,1,1", "--tilt", "0.1,0,0"], 2,
                 "knn --k takes an orthorhombic --box"),
                (["knn", "--input", self.path("x.npy"), "--radius", "0.6", "--box", "1,1,1"], 2,
                 "past half the shortest --box length"),
                (["knn", "--input", self.path("x.npy"), "--radius", "0.1", "--box", "1,1"], 2, "--box gives 2 lengths"),
                (["knn", "--input", self.path("x.npy"), "--radius", "0.1", "--box", "1,0,1"], 2, "must be positive"),
                (["knn", "--input", self.path("x.npy"), "--radius", "0.1", "--box", "1,nan,1"], 2, "--box"),
                (["knn", "--input", self.path("x.npy"), "--radius", "0.1", "--box", "1,1,1", "--metric", "cosine"], 2,
                 "--box does not apply to --metric cosine"),
                (["knn", "--input", self.path("x.npy"), "--radius", "nan"], 2, "--radius"),
                (["knn", "--input", self.path("x.npy"), "--radius", "-1"], 2, "--radius must be >= 0"),
                (["collide", "--input", self.path("s.npy"), "--box", "1,1,1"], 1, "past half the shortest --box length")):
            with self.subTest(args=args):
                r = tdsolve(*args, "--backend", "cpu", "--output", out)
                self.assertEqual(r.returncode, code, r.stdout + r.stderr)
                self.assertIn(words, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertFalse(os.path.exists(out) or os.path.exists(out + ".partial"))


class CullChoiceTest(CullCase):
    def setUp(self):
        super().setUp()
        np.save(self.path("x.npy"), np.random.default_rng(5).random((2000, 3)))
        self.src = ["--input", self.path("x.npy"), "--backend", "cpu", "--block", "16"]

    def test_auto_culls_a_small_cutoff_and_not_a_large_one(self):
        out = self.path("a.h5")
        r = tdsolve("knn", *self.src, "--radius", "0.05", "--output", out, check=True)
        self.assertIn("culled (auto)", r.stdout)
        culled, note = cull_attrs(out)
        self.assertEqual(culled, 1)
        self.assertIn("tiles", note)
        r = tdsolve("knn", *self.src, "--radius", "1.5", "--output", out, "--overwrite", check=True)
        self.assertIn("dense (auto: more than half", r.stdout)
        self.assertEqual(cull_attrs(out)[0], 0)
        r = tdsolve("hist", *self.src, "--metric", "cosine", "--bins", "4", "--range", "0:0.01", "--output", out,
                    "--overwrite", check=True)
        self.assertIn("dense (auto: metric cosine has no box bound", r.stdout)
        # hist --with: the tiles that pair the two sets, of all that could.
        np.save(self.path("y.npy"), np.random.default_rng(6).random((1000, 3)))
        for hi, words in (("0.05", "culled (auto)"), ("1.5", "dense (auto: more than half")):
            r = tdsolve("hist", *self.src, "--with", self.path("y.npy"), "--bins", "4", "--range", f"0:{hi}",
                        "--output", out, "--overwrite", check=True)
            self.assertIn(words, r.stdout)
            self.assertIn("2000 × 1000 points", r.stdout)

    def test_knn_k_on_the_cpu_takes_small_tiles_unless_told(self):
        # Culled knn --k on the CPU without --block: tiles of 32 (d <= 3; 64
        # at d = 4); given --block, dense, or where the small tiles do not
        # cull (their list past its cap, or auto's choice: d = 4 here): the
        # default's 128. The lists are the dense run's each time.
        rng = np.random.default_rng(7)
        src = {d: self.save_npy(f"x{d}.npy", rng.random((20000, d))) for d in (3, 4)}
        ref = {}
        for d in (3, 4):
            out = self.path(f"dense{d}.h5")
            tdsolve("knn", "--input", src[d], "--backend", "cpu", "--k", "8", "--cull", "off", "--output", out,
                    check=True)
            ref[d] = datasets(out)
        cap = {"TDSOLVE_TEST_CULL_CAP": "50000"}  # 124029 tiles of 32 survive, 18228 of 128
        for d, extra, env, block, culled in (
                (3, [], None, 32, 1), (3, ["--block", "128"], None, 128, 1), (3, ["--cull", "off"], None, 128, 0),
                (3, ["--cull", "on"], cap, 128, 1), (3, [], cap, 128, 1), (4, [], None, 128, 0)):
            with self.subTest(d=d, extra=extra, env=env):
                out = self.path("k.h5")
                r = tdsolve("knn", "--input", src[d], "--backend", "cpu", "--k", "8", *extra, "--output", out,
                            "--overwrite", env=env)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn(f"block {block}", r.stdout)
                with h5py.File(out, "r") as f:
                    self.assertEqual(int(f["distances"].attrs["block"]), block)
                self.assertEqual(cull_attrs(out)[0], culled)
                got = datasets(out)
                for k in ("distances", "indices"):
                    self.assertTrue(got[k][2] == ref[d][k][2], k)

    def test_cull_on_refuses_what_it_cannot_cull(self):
        out = self.path("a.h5")
        for args, words in (
                (["hist", "--metric", "cosine", "--bins", "4", "--range", "0:0.1"], "metric cosine has no box bound"),
                (["knn", "--k", "3", "--metric", "cosine"], "metric cosine has no box bound"),
                (["knn", "--radius", "0.1", "--map", "bb"], "does not go with --map bb"),
                (["knn", "--radius", "0.1", "--cull", "maybe"], "--cull")):
            with self.subTest(args=args):
                cull = [] if "--cull" in args else ["--cull", "on"]
                r = tdsolve(*args, *self.src, *cull, "--output", out)
                self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                self.assertIn(words, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertFalse(os.path.exists(out) or os.path.exists(out + ".partial"))

    def test_a_list_past_its_cap(self):
        # The list's cap (32 bytes a tile within a rank's share of memory;
        # TDSOLVE_TEST_CULL_CAP lowers it here): auto runs dense and says
        # why, --cull on is refused in one line and writes nothing, for pair
        # lists (the host's and, where there is a GPU, the device's: the
        # same cap), knn --k's and triplets' lists alike.
        out = self.path("a.h5")
        cases = [["hist", "--bins", "4", "--range", "0:0.1"], ["knn", "--k", "4"],
                 ["triplet", "--nu", "1", "--cutoff", "0.2"]]
        for args in cases:
            src, rho = (self.src[:-2], "32") if args[0] == "triplet" else (self.src, "16")  # triplets: 32
            with self.subTest(args=args):
                full = tdsolve(*args, *src, "--cull", "on", "--output", out, "--overwrite", check=True)
                tiles = int(full.stdout.split("culled (--cull on): ")[1].split()[0])
                cap = {"TDSOLVE_TEST_CULL_CAP": str(tiles - 1)}
                r = tdsolve(*args, *src, "--output", out, "--overwrite", env=cap, check=True)
                self.assertIn(f"dense (auto: more than {tiles - 1} tiles survive the cutoff, the list's cap)",
                              r.stdout)
                os.remove(out)
                r = tdsolve(*args, *src, "--cull", "on", "--output", out, env=cap)
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                self.assertIn(f"--cull on: more than {tiles - 1} tiles of {rho} points survive the cutoff",
                              r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertFalse(os.path.exists(out) or os.path.exists(out + ".partial"))
                # Exactly the list's length passes.
                r = tdsolve(*args, *src, "--cull", "on", "--output", out, env={"TDSOLVE_TEST_CULL_CAP": str(tiles)},
                            check=True)
                self.assertIn(f"culled (--cull on): {tiles} of", r.stdout)
                os.remove(out)
        r = tdsolve("hist", *self.src, "--bins", "4", "--range", "0:0.2", "--output", out, "--overwrite",
                    env={"TDSOLVE_TEST_CULL_CAP": "0"})
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("TDSOLVE_TEST_CULL_CAP must be an integer from 1 to 2147483648", r.stderr)

    def test_high_dimension_stays_dense(self):
        np.save(self.path("y.npy"), np.random.default_rng(6).random((500, 12)))
        r = tdsolve("knn", "--input", self.path("y.npy"), "--radius", "0.1", "--output", self.path("a.h5"),
                    check=True)
        self.assertIn("dense (auto: d = 12 > 8", r.stdout)
        # knn --k: a curve orders d <= 4 well enough; auto culls it below, not above.
        r = tdsolve("knn", "--input", self.path("y.npy"), "--k", "5", "--output", self.path("a.h5"),
                    "--overwrite", check=True)
        self.assertIn("dense (auto: d = 12 > 4", r.stdout)
        r = tdsolve("knn", *self.src, "--k", "5", "--output", self.path("a.h5"), "--overwrite", check=True)
        self.assertIn("culled (auto)", r.stdout)


class CullResumeTest(CullCase):
    # About 9 chunks of at least 2^24 pairs tested (a culled run's floor).
    HIST = ["hist", "--generate", "uniform:40000:3:7", "--bins", "30", "--range", "0:0.25", "--block", "32",
            "--progress", "none", "--backend", "cpu"]

    def killed_culled(self, args, ref, out):
        """The dense run of args into ref, then the culled one into out,
        killed on 2 ranks after some checkpoints: its chunks flagged (> 0)."""
        tdsolve(*args, "--cull", "off", "--output", ref, "--quiet", check=True)
        r = tdsolve(*args, "--cull", "on", "--output", out, np_=2,
                    env={"TDSOLVE_TEST_CHECKPOINT_S": "0.001", "TDSOLVE_TEST_FAULT": "0:3:kill"})
        self.assertNotEqual(r.returncode, 0)
        with h5py.File(out + ".partial", "r") as f:
            flagged = int(f["progress/done"][:].sum())
            self.assertEqual(int(f["progress"].attrs["culled"]), 1)
        self.assertGreater(flagged, 0)
        return flagged

    def test_killed_culled_histogram_resumes_to_the_dense_counts(self):
        ref, out = self.path("ref.h5"), self.path("h.h5")
        flagged = self.killed_culled(self.HIST, ref, out)
        i = tdsolve("info", out)
        self.assertEqual(i.returncode, 3, i.stdout)
        self.assertNotIn("INCONSISTENT", i.stdout)
        # A dense run does not continue a culled one: the job differs.
        r = tdsolve(*self.HIST, "--cull", "off", "--output", out, "--resume")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("is a different job (cull: on in the file, off now)", r.stderr)
        r = tdsolve(*self.HIST, "--cull", "on", "--output", out, "--resume", np_=3)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"{flagged} of", r.stdout)
        a, b = datasets(ref), datasets(out)
        for k in ("counts", "underflow", "overflow"):
            self.assertEqual(a[k], b[k], k)

    def test_killed_culled_histogram_of_two_sets_resumes_to_the_dense_counts(self):
        # hist --with culled (the union's triangle cut to the tiles of both
        # sets): killed after some checkpoints on 2 ranks, resumed on 3.
        ref, out = self.path("ref.h5"), self.path("w.h5")
        args = [*self.HIST[:3], "--with-generate", "uniform:30000:3:8", *self.HIST[3:]]
        flagged = self.killed_culled(args, ref, out)
        r = tdsolve(*args, "--cull", "on", "--output", out, "--resume", np_=3)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"{flagged} of", r.stdout)
        a, b = datasets(ref), datasets(out)
        for k in ("counts", "underflow", "overflow", "cumulative"):
            self.assertEqual(a[k], b[k], k)
        with h5py.File(out, "r") as f:
            attrs = dict(f["counts"].attrs)
            self.assertEqual((attrs["n"], attrs["with_n"], attrs["pairs"]), (40000, 30000, 40000 * 30000))

    def test_killed_culled_neighbours_start_over(self):
        # knn --k culled keeps its rows to the end: a run killed after a few
        # chunks leaves no flag set, and --resume computes it all, the dense bytes.
        args = ["knn", "--generate", "uniform:60000:3:9", "--k", "10", "--block", "32", "--backend", "cpu",
                "--progress", "none", "--chunk-mb", "1"]
        ref, out = self.path("ref.h5"), self.path("k.h5")
        tdsolve(*args, "--cull", "off", "--output", ref, "--quiet", check=True)
        r = tdsolve(*args, "--cull", "on", "--output", out, np_=2, env={"TDSOLVE_TEST_FAULT": "0:3:kill"})
        self.assertNotEqual(r.returncode, 0)
        with h5py.File(out + ".partial", "r") as f:
            self.assertGreater(len(f["progress/done"]), 4)
            self.assertEqual(int(f["progress/done"][:].sum()), 0)
        r = tdsolve(*args, "--cull", "on", "--output", out, "--resume", np_=3)
        self.assertEqual(r.returncode, 0, r.stderr)
        a, b = datasets(ref), datasets(out)
        for k in ("distances", "indices"):
            self.assertEqual(a[k], b[k], k)
        self.assertEqual(tdsolve("info", out).returncode, 0)

    def test_killed_culled_neighbours_at_128_resume_on_the_cpu_at_128(self):
        # A culled knn --k stopped at ρ = 128 (a GPU's, or --block 128) goes
        # on with --resume on the CPU without --block at the file's 128, not
        # the CPU's 32 (a different job).
        args = ["knn", "--generate", "uniform:60000:3:9", "--k", "10", "--backend", "cpu", "--progress", "none",
                "--chunk-mb", "1", "--cull", "on"]
        ref, out = self.path("ref.h5"), self.path("k.h5")
        tdsolve(*args[:-1], "off", "--output", ref, "--quiet", check=True)
        r = tdsolve(*args, "--block", "128", "--output", out, np_=2, env={"TDSOLVE_TEST_FAULT": "0:3:kill"})
        self.assertNotEqual(r.returncode, 0)
        self.assertTrue(os.path.exists(out + ".partial"))
        r = tdsolve(*args, "--output", out, "--resume")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("block 128", r.stdout)
        a, b = datasets(ref), datasets(out)
        for k in ("distances", "indices"):
            self.assertEqual(a[k], b[k], k)

    def test_collide_killed_before_its_rename_keeps_its_pairs(self):
        args = ["collide", "--generate", "spheres:5000:3:3:0.02", "--block", "16", "--backend", "cpu",
                "--cull", "on"]
        ref, out = self.path("ref.h5"), self.path("c.h5")
        tdsolve(*args[:-2], "--cull", "off", "--output", ref, check=True)
        r = tdsolve(*args, "--output", out, np_=2, env={"TDSOLVE_TEST_FAULT": "0:0:rename"})
        self.assertNotEqual(r.returncode, 0)
        self.assertTrue(os.path.exists(out + ".partial"))
        r = tdsolve(*args, "--output", out, "--resume")
        self.assertEqual(r.returncode, 0, r.stderr)
        a, b = datasets(ref), datasets(out)
        self.assertGreater(len(a["pairs"][2]), 0)
        for k in ("pairs", "distances", "count"):
            self.assertEqual(a[k], b[k], k)


class ParallelSetUpTest(CullCase):
    """The culled domain is built on the OpenMP team (the Morton keys and
    their sort, the block boxes, the tile traversal and its sort, the
    reorder; sort and traversal go parallel above 65536 points and 64
    blocks): runs whose set-up took 1 thread and 2 threads (and 2 ranks)
    write the same bytes, pairs and triplets alike."""

    def same_files(self, args, what):
        outs = []
        for threads, ranks in ((1, None), (2, None), (2, 2)):
            out = self.path(f"t{threads}r{ranks}.h5")
            r = tdsolve(*args, "--threads", str(threads), "--backend", "cpu", "--output", out, "--overwrite",
                        np_=ranks)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("culled", r.stdout)
            outs.append(datasets(out))
        for o in outs[1:]:
            self.assertEqual(sorted(o), sorted(outs[0]), what)
            for k in o:
                self.assertEqual(o[k], outs[0][k], f"{what}: /{k}")

    def test_pairs(self):
        # 100000 points, a few hundred of them one point and a cluster, the
        # rest uniform: ~6 neighbours a point
        rng = np.random.default_rng(12)
        x = rng.random((100000, 3))
        x[::400] = x[0]
        x[1::400] = 0.5 + 0.02 * rng.random((len(x[1::400]), 3))
        np.save(self.path("x.npy"), x)
        self.same_files(["knn", "--input", self.path("x.npy"), "--radius", "0.0025", "--cull", "on",
                         "--precision", "float64"], "knn --radius")

    def test_triplets(self):
        x = np.random.default_rng(13).random((70000, 3)) * 41
        np.save(self.path("x.npy"), x)
        self.same_files(["triplet", "--input", self.path("x.npy"), "--cutoff", "1.1", "--cull", "on",
                         "--precision", "float64"], "triplet")


class CullVerdictTest(CullCase):
    def test_check_and_info_on_culled_files(self):
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../python"))
        import tdsolve as pkg
        np.save(self.path("x.npy"), np.random.default_rng(8).random((3000, 3)))
        files = {}
        for cmd in (["hist", "--bins", "8", "--range", "0:0.05"], ["knn", "--radius", "0.05"]):
            out = self.path(cmd[0] + ".h5")
            tdsolve(*cmd, "--input", self.path("x.npy"), "--block", "16", "--cull", "on", "--output", out,
                    "--backend", "cpu", check=True)
            files[cmd[0]] = out
            self.assertEqual(tdsolve("info", out).returncode, 0)
            self.assertTrue(str(pkg.check(out)).startswith("complete"), pkg.check(out))
        # hist --with (3000 × 2000): a culled run tests pairs of the union.
        np.save(self.path("y.npy"), np.random.default_rng(9).random((2000, 3)))
        out = self.path("with.h5")
        tdsolve("hist", "--bins", "8", "--range", "0:0.05", "--input", self.path("x.npy"), "--with",
                self.path("y.npy"), "--block", "16", "--cull", "on", "--output", out, "--backend", "cpu", check=True)
        files["hist --with"] = out
        self.assertEqual(tdsolve("info", out).returncode, 0)
        self.assertTrue(str(pkg.check(out)).startswith("complete"), pkg.check(out))
        # Damage: a culled flag that is neither 0 nor 1, an elements count past
        # C(n,2) (a culled --with run's past C(n + with_n, 2)), a culled --with
        # file said to be dense (its elements then past n × with_n).
        damage = {"hist": (("culled", 2), ("elements", 3000 * 2999 // 2 + 1)),
                  "knn": (("culled", 2), ("elements", 3000 * 2999 // 2 + 1)),
                  "hist --with": (("culled", 2), ("elements", 5000 * 4999 // 2 + 1), ("culled", 0))}
        for cmd, path in files.items():
            for attr, value in damage[cmd]:
                with self.subTest(cmd=cmd, attr=attr, value=value):
                    bad = self.path(f"bad_{cmd.replace(' ', '')}_{attr}{value}.h5")
                    with open(path, "rb") as s, open(bad, "wb") as t:
                        t.write(s.read())
                    with h5py.File(bad, "r+") as f:
                        f["progress"].attrs.modify(attr, np.uint64(value))
                    i = tdsolve("info", bad)
                    self.assertNotEqual(i.returncode, 0, i.stdout)
                    v = pkg.check(bad)
                    self.assertFalse(str(v).startswith("complete"), v)


class TripletCullTest(CullCase):
    """triplet --cull: ATM with --cutoff (all three pairs within it) and SW (two
    of three). Exact sums of the same triplets, but a culled run meets each
    triplet with its points in the curve's order, so its terms (and the tiles'
    partial sums) round differently: culled = dense to rounding, and culled
    runs on 1 and 3 ranks give the same bytes."""

    def box_points(self, n, side, seed):
        x = np.random.default_rng(seed).random((n, 3)) * side
        np.save(self.path("x.npy"), x)
        return x

    def sums(self, path):
        with h5py.File(path, "r") as f:
            return {k: f[k][()] for k in ("energy", "energy_per_point", "forces")}

    def assert_close(self, on, off, tol, what):
        a, b = self.sums(on), self.sums(off)
        for k in a:
            scale = max(float(np.max(np.abs(b[k]))), 1e-300)
            self.assertLessEqual(float(np.max(np.abs(np.asarray(a[k]) - b[k]))), tol * scale, f"{k}: {what}")

    def test_culled_equals_dense_atm_and_sw(self):
        self.box_points(1200, 9.0, SEED + 6)
        src = ["triplet", "--input", self.path("x.npy")]
        cases = [(["--nu", "0.8", "--cutoff", "2.5"], "float64", None),
                 (["--nu", "0.8", "--cutoff", "2.5", "--cutoff-triple", "2.2"], "float64", 3),
                 (["--nu", "0.8", "--cutoff", "2.0"], "float32", None),
                 (["--potential", "sw", "--sigma", "1", "--a", "1.8"], "float64", 3),
                 (["--potential", "sw", "--sigma", "1", "--a", "1.8"], "float32", None)]
        for extra, precision, np_ in cases:  # triplet tiles are 32 points a side
            what = f"{extra} {precision} ranks {np_ or 1}"
            with self.subTest(what=what):
                args = [*src, *extra, "--precision", precision]
                on, off = self.run_pair(args, np_=np_)
                self.assert_close(on, off, 1e-9 if precision == "float64" else 2e-4, what)
                self.assertEqual(cull_attrs(on)[0], 1)
                with h5py.File(on, "r") as f:
                    self.assertEqual(int(f["energy"].attrs["triplets"]), 1200 * 1199 * 1198 // 6)
                one = self.path("one.h5")
                tdsolve(*args, "--cull", "on", "--backend", "cpu", "--output", one, "--overwrite", check=True)
                for k, v in self.sums(one).items():
                    self.assertEqual(np.asarray(v).tobytes(), np.asarray(self.sums(on)[k]).tobytes(), f"{k}: {what}")
                self.assertEqual(tdsolve("info", on).returncode, 0)

    def test_culled_atm_equals_lammps(self):
        import test_triplet
        if not test_triplet.LMP:
            self.skipTest("LAMMPS (lmp) is not on PATH")
        x = self.box_points(700, 8.0, SEED + 7)
        out = self.path("t.h5")
        r = tdsolve("triplet", "--input", self.path("x.npy"), "--nu", "0.65", "--cutoff", "2.5", "--cutoff-triple",
                    "2.3", "--precision", "float64", "--cull", "on", "--backend", "cpu", "--output", out, check=True)
        self.assertIn("culled (--cull on)", r.stdout)
        e, f = test_triplet.LammpsTest.lammps(self, x, 0.65, 2.5, 2.3)
        got = self.sums(out)
        self.assertLessEqual(abs(float(got["energy"]) - e), 1e-8 * abs(e))
        self.assertLessEqual(test_triplet.rel(got["forces"], f), 1e-8)

    def test_choices_and_refusals(self):
        out = self.path("a.h5")
        self.box_points(400, 6.0, SEED + 8)
        small = ["triplet", "--input", self.path("x.npy"), "--backend", "cpu"]
        r = tdsolve(*small, "--nu", "1", "--output", out, check=True)
        self.assertIn("dense (auto: ATM without --cutoff counts every triplet)", r.stdout)
        r = tdsolve(*small, "--nu", "1", "--cutoff", "5", "--output", out, "--overwrite", check=True)
        self.assertIn("dense (auto: more than half of the tiles are within the cutoff)", r.stdout)
        for extra, words in ((["--nu", "1"], "ATM without --cutoff"),
                             (["--nu", "1", "--cutoff", "1.5", "--store-triplets"], "--store-triplets writes"),
                             (["--nu", "1", "--cutoff", "1.5", "--map", "bb"], "--map bb")):
            with self.subTest(extra=extra):
                r = tdsolve(*small, *extra, "--cull", "on", "--output", self.path("b.h5"))
                self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                self.assertIn(words, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertFalse(os.path.exists(self.path("b.h5")) or os.path.exists(self.path("b.h5.partial")))
        self.box_points(4000, 20.0, SEED + 8)
        r = tdsolve("triplet", "--input", self.path("x.npy"), "--backend", "cpu", "--nu", "1", "--cutoff", "1.5",
                    "--output", out, "--overwrite", check=True)
        self.assertIn("culled (auto)", r.stdout)

    def test_killed_culled_triplets_resume_to_the_same_bytes(self):
        self.box_points(3000, 12.0, SEED + 9)
        args = ["triplet", "--input", self.path("x.npy"), "--nu", "1", "--cutoff", "2.5", "--backend", "cpu",
                "--progress", "none", "--cull", "on"]
        ref, out = self.path("ref.h5"), self.path("t.h5")
        tdsolve(*args, "--output", ref, "--quiet", check=True)
        r, flagged, chunks = killed_after_checkpoints(args, out, "0:2:kill")
        self.assertNotEqual(r.returncode, 0)
        self.assertGreater(chunks, 3)
        r = tdsolve(*args, "--output", out, "--resume", np_=3)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"{flagged} of", r.stdout)
        a, b = self.sums(ref), self.sums(out)
        for k in a:
            self.assertEqual(np.asarray(a[k]).tobytes(), np.asarray(b[k]).tobytes(), k)


class CullGpuTest(CullCase):
    @classmethod
    def setUpClass(cls):
        require_gpu()

    def test_gpu_culled_equals_cpu_dense(self):
        rng = np.random.default_rng(SEED + 3)
        x = rng.random((20000, 3))
        np.save(self.path("x.npy"), x)
        np.save(self.path("s.npy"), np.c_[x, rng.random(20000) * 0.01])
        np.save(self.path("y.npy"), rng.random((13001, 3)))
        for args in (["hist", "--input", self.path("x.npy"), "--bins", "50", "--range", "0:0.05"],
                     ["hist", "--input", self.path("x.npy"), "--with", self.path("y.npy"), "--bins", "50", "--range",
                      "0:0.05"],
                     ["hist", "--input", self.path("x.npy"), "--with", self.path("y.npy"), "--bins", "50", "--range",
                      "0:0.05", "--box", "1,1,1", "--precision", "float64"],
                     ["hist", "--input", self.path("x.npy"), "--bins", "50", "--range", "0:0.05", "--box", "1,1,1"],
                     ["hist", "--input", self.path("x.npy"), "--bins", "9", "--range", "0:0.1", "--precision",
                      "float64", "--metric", "cityblock"],
                     ["knn", "--input", self.path("x.npy"), "--radius", "0.03"],
                     ["knn", "--input", self.path("x.npy"), "--radius", "0.03", "--metric", "minkowski", "--p", "3"],
                     ["knn", "--input", self.path("x.npy"), "--radius", "0.03", "--box", "1,1,1"],
                     ["knn", "--input", self.path("x.npy"), "--radius", "0.0009", "--metric", "sqeuclidean",
                      "--precision", "float64", "--box", "1,1,1"],
                     ["collide", "--input", self.path("s.npy")],
                     ["collide", "--input", self.path("s.npy"), "--box", "1,1,1"]):
            with self.subTest(args=args):
                self.assert_same(args, backend_on="cuda", backend_off="cpu")

    def list_stats(self, args, backend, np_=None):
        """Runs args --cull on on backend with --stats: (its "cull" record, the
        output's datasets)."""
        out, stats = self.path(f"{backend}.h5"), self.path(f"{backend}.json")
        r = tdsolve(*args, "--cull", "on", "--backend", backend, "--output", out, "--overwrite", "--stats", stats,
                    np_=np_)
        self.assertEqual(r.returncode, 0, f"{args}: {r.stderr}")
        with open(stats) as f:
            return json.load(f)["cull"], datasets(out)

    def test_gpu_builds_the_hosts_list(self):
        # cuda/cull_build.cu: the device's tile list is the host's, tile for
        # tile (the stats' FNV of the list), for open, periodic and triclinic
        # boxes, radii, the norms it takes (1, 2, infinity) and both
        # precisions; minkowski p = 3 is left to the host. Random cases: the
        # seed is printed.
        rng = np.random.default_rng(SEED + 11)
        print(f"\nCullGpuTest list seed {SEED + 11}", file=sys.stderr)
        cases = 0
        for kind in ("uniform", "clustered", "duplicates", "lattice"):
            for d in (1, 2, 3, 4):
                n = int(rng.integers(2000, 40000))
                x = points(rng, kind, n, d)
                np.save(self.path("x.npy"), x)
                extent = float(np.ptp(x, axis=0).max()) or 1.0
                metric = str(rng.choice(["euclidean", "cityblock", "chebyshev", "sqeuclidean"]))
                cut = extent * float(rng.choice([0.0, 1e-3, 0.03, 0.2, 2.0]))
                rng_cut = cut * cut if metric == "sqeuclidean" else cut
                prec = str(rng.choice(["float32", "float64"]))
                args = ["hist", "--input", self.path("x.npy"), "--bins", "7", "--range", f"0:{rng_cut!r}",
                        "--metric", metric, "--precision", prec, "--block", str(rng.choice([128, 256]))]
                if rng_cut <= 0:
                    args[args.index("--range") + 1] = "0:1e-300"
                with self.subTest(kind=kind, d=d, n=n, args=args):
                    gpu, gout = self.list_stats(args, "cuda")
                    cpu, cout = self.list_stats(args, "cpu")
                    self.assertEqual(gpu["built_on"], "gpu")
                    self.assertEqual(cpu["built_on"], "host")
                    self.assertEqual({k: gpu[k] for k in ("tiles", "tested", "list_fnv")},
                                     {k: cpu[k] for k in ("tiles", "tested", "list_fnv")})
                    self.assertEqual(gout, cout)
                    cases += 1
        # Boxes, tilts and radii (d = 3).
        x = rng.random((8000, 3))
        np.save(self.path("x.npy"), x)
        np.save(self.path("s.npy"), np.c_[x, rng.random(8000) * 0.01])
        boxed = [["hist", "--input", self.path("x.npy"), "--bins", "9", "--range", "0:0.05", "--box", "1,1,1"],
                 ["hist", "--input", self.path("x.npy"), "--bins", "9", "--range", "0:0.05", "--box", "1,1,1",
                  "--tilt", "0.2,-0.1,0.15", "--precision", "float64"],
                 ["knn", "--input", self.path("x.npy"), "--radius", "0.03", "--box", "1,1,1", "--tilt", "0.1,0,0"],
                 ["collide", "--input", self.path("s.npy")],
                 ["collide", "--input", self.path("s.npy"), "--box", "1,1,1"]]
        for args in boxed:
            with self.subTest(args=args):
                gpu, gout = self.list_stats(args, "cuda")
                cpu, cout = self.list_stats(args, "cpu")
                self.assertEqual((gpu["built_on"], cpu["built_on"]), ("gpu", "host"))
                self.assertEqual(gpu["list_fnv"], cpu["list_fnv"])
                self.assertEqual(gout, cout)
                cases += 1
        self.assertGreater(cases, 20)
        # The device's list keeps the cap: one tile short, auto runs dense;
        # exactly the list's length, culled (a list of far fewer than half
        # the tiles, so that the cap decides).
        np.save(self.path("y.npy"), rng.random((40000, 3)))
        args = ["hist", "--input", self.path("y.npy"), "--bins", "9", "--range", "0:0.02"]
        tiles = self.list_stats(args, "cuda")[0]["tiles"]
        self.assertGreater(tiles, 1)
        for cap, words in ((tiles - 1, f"dense (auto: more than {tiles - 1} tiles"), (tiles, "culled (auto)")):
            r = tdsolve(*args, "--backend", "cuda", "--output", self.path("cap.h5"), "--overwrite",
                        env={"TDSOLVE_TEST_CULL_CAP": str(cap)}, check=True)
            self.assertIn(words, r.stdout)
        # minkowski's pow: the host builds the list of a CUDA run.
        gpu, _ = self.list_stats(["knn", "--input", self.path("x.npy"), "--radius", "0.03", "--metric", "minkowski",
                                  "--p", "3"], "cuda")
        self.assertEqual(gpu["built_on"], "host")

    def test_gpu_run_resumes_on_the_cpu(self):
        # A culled CUDA run killed after its checkpoints resumes on the CPU
        # backend (same list, so the same plan) to the unstopped run's bytes.
        args = ["hist", "--generate", "uniform:40000:3:7", "--bins", "30", "--range", "0:0.25", "--progress", "none",
                "--cull", "on"]  # 14 chunks
        whole, part = self.path("whole.h5"), self.path("part.h5")
        tdsolve(*args, "--backend", "cpu", "--output", whole, check=True)
        r, done, chunks = killed_after_checkpoints([*args, "--backend", "cuda"], part, "0:3:kill", np_=1)
        self.assertNotEqual(r.returncode, 0)
        self.assertTrue(0 < done < chunks, (done, chunks))
        tdsolve(*args, "--backend", "cpu", "--output", part, "--resume", np_=2, check=True)
        self.assertEqual(datasets(part), datasets(whole))

    def test_gpu_culled_triplets_equal_cpu_culled(self):
        # The GPU kernel on the culled list: the CPU's culled sums to
        # rounding (the GPU's reciprocal square root differs), and 1 and 2
        # ranks on the GPU alike.
        x = np.random.default_rng(SEED + 10).random((4000, 3)) * 14
        np.save(self.path("x.npy"), x)
        for extra in (["--nu", "0.8", "--cutoff", "2.5"], ["--potential", "sw", "--sigma", "1", "--a", "1.8"]):
            with self.subTest(extra=extra):
                args = ["triplet", "--input", self.path("x.npy"), *extra, "--precision", "float64", "--block", "32",
                        "--cull", "on"]
                g, g2, c = self.path("g.h5"), self.path("g2.h5"), self.path("c.h5")
                r = tdsolve(*args, "--backend", "cuda", "--output", g, "--overwrite", check=True)
                self.assertIn("culled (--cull on)", r.stdout)
                tdsolve(*args, "--backend", "cuda", "--output", g2, "--overwrite", np_=2, check=True)
                tdsolve(*args, "--backend", "cpu", "--output", c, "--overwrite", check=True)
                with h5py.File(g, "r") as a, h5py.File(g2, "r") as b, h5py.File(c, "r") as cc:
                    for k in ("energy", "energy_per_point", "forces"):
                        self.assertEqual(a[k][()].tobytes(), b[k][()].tobytes(), k)
                        ref = cc[k][()]
                        scale = max(float(np.max(np.abs(ref))), 1e-300)
                        self.assertLessEqual(float(np.max(np.abs(a[k][()] - ref))), 1e-9 * scale, k)

    def test_gpu_culled_neighbours(self):
        # knn --k culled on the GPU (cuda/knn_kernels.cu: each block row's
        # tiles, nearest box first, a block-wide stop; lists by (value, input
        # index)): the dense CPU run's bytes. Random cases (the seed is
        # printed), then larger ones: 3 ranks, a periodic box, float64,
        # blocks of 256 (two CUDA blocks a block row) and 200 (a partial
        # one), chunks small enough that the chunk buffers grow.
        rng = np.random.default_rng(SEED + 21)
        for _ in range(12):
            what, args = self.random_case(rng, "knn-k")
            with self.subTest(what=what, seed=SEED):
                self.assert_same(args, backend_on="cuda", backend_off="cpu")
        x = rng.random((20000, 3))
        np.save(self.path("x.npy"), x)
        src = ["--input", self.path("x.npy")]
        for extra, np_ in ((["--k", "16"], None), (["--k", "16"], 3),
                           (["--k", "7", "--box", "1,1,1"], None),
                           (["--k", "30", "--precision", "float64", "--metric", "cityblock"], 2),
                           (["--k", "30", "--block", "256", "--chunk-mb", "1"], None),
                           (["--k", "9", "--block", "200", "--metric", "sqeuclidean", "--box", "1,1,1"], None)):
            args = ["knn", *src, *extra]
            with self.subTest(args=args, np_=np_):
                self.assert_same(args, np_=np_, backend_on="cuda", backend_off="cpu")
        r = tdsolve("knn", *src, "--k", "8", "--backend", "cuda", "--output", self.path("auto.h5"),
                    "--overwrite", check=True)
        self.assertIn("culled (auto)", r.stdout)

    def test_gpu_killed_neighbours_start_over(self):
        # A culled knn --k killed on the GPU after a few chunks (rows kept to
        # the end: nothing flagged done) resumes, on the GPU and on the CPU
        # (without --block: at the file's 128, not the CPU's 32), to the
        # dense CPU run's bytes.
        args = ["knn", "--generate", "uniform:60000:3:9", "--k", "10", "--progress", "none", "--chunk-mb", "1"]
        ref = self.path("ref.h5")
        tdsolve(*args, "--backend", "cpu", "--cull", "off", "--output", ref, "--quiet", check=True)
        for backend in ("cuda", "cpu"):
            with self.subTest(resumed_on=backend):
                out = self.path(f"k_{backend}.h5")
                r = tdsolve(*args, "--backend", "cuda", "--cull", "on", "--output", out, np_=2,
                            env={"TDSOLVE_TEST_FAULT": "0:3:kill"})
                self.assertNotEqual(r.returncode, 0)
                with h5py.File(out + ".partial", "r") as f:
                    self.assertGreater(len(f["progress/done"]), 4)
                    self.assertEqual(int(f["progress/done"][:].sum()), 0)
                r = tdsolve(*args, "--backend", backend, "--cull", "on", "--output", out, "--resume")
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("block 128", r.stdout)
                a, b = datasets(ref), datasets(out)
                for k in ("distances", "indices"):
                    self.assertEqual(a[k], b[k], k)

if __name__ == "__main__":
    unittest.main()
