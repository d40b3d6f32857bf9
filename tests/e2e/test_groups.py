"""Groups and species in hist (issue 30): --types/--pairs give a partial
histogram per type pair in one pass, --exclude/--exclude-block leave out the
pairs of one molecule, --norm as MDAnalysis InterRDF's, /cumulative and the
r coordinate.

The trajectory is LAMMPS's (test_trajectory's two-type Lennard-Jones liquid,
50 frames, orthorhombic and triclinic): each partial's counts are checked
exactly against numpy.histogram of the float64 nearest-image distances of
that type pair (less the excluded pairs), and against MDAnalysis's
InterRDF(A, B) over the same frames (its count, rdf and cumulative count) to
float32 agreement (MDAnalysis holds coordinates and the cell as float32).
Culled or not, on 1 or 3 ranks, stopped and resumed: the same bytes. Bad
input: one line each, nothing written.
"""
import os
import shutil
import signal
import unittest
import warnings

import h5py
import numpy as np

from common import TempDirTest, chunk_done, require_gpu, tdsolve
from test_periodic import HAVE_MDA, LMP, nearest_image_pairs
import test_trajectory as tt  # its classes by their module: not run again here
from test_trajectory import FRAMES, dump_frames, hist_args

if HAVE_MDA:
    from MDAnalysis.analysis.rdf import InterRDF

BINS, HI = 24, 3.5
TAKE = "::5"  # frames 0, 5, ..., 45


def dump_types(path):
    """The `type` column of the dump's first frame, in id order."""
    with open(path) as f:
        lines = f.read().splitlines()
    n = int(lines[3])
    cols = lines[8].split()[2:]
    rows = np.array([[float(v) for v in l.split()] for l in lines[9:9 + n]])
    rows = rows[np.argsort(rows[:, cols.index("id")])]
    return rows[:, cols.index("type")].astype(int).astype(str)


def partial_reference(frames, types, a, b, molecule=None):
    """numpy.histogram of the float64 nearest-image distances of the pairs
    of an `a` and a `b` (each unordered pair once), less those of one
    molecule, summed over the frames; with the pairs it counts a frame."""
    total, pairs = np.zeros(BINS, np.int64), None
    for H, x in frames:
        i, j, d = nearest_image_pairs(x, H)
        mask = ((types[i] == a) & (types[j] == b)) | ((types[i] == b) & (types[j] == a))
        if molecule is not None:
            mask &= molecule[i] != molecule[j]
        total += np.histogram(d[mask], BINS, (0, HI))[0]
        pairs = int(mask.sum())
    return total, pairs


@unittest.skipUnless(LMP, "needs LAMMPS (lmp): the test packages install it")
class GroupsTest(TempDirTest):
    @classmethod
    def setUpClass(cls):
        tt.TrajectoryTest.setUpClass.__func__(cls)
        cls.types = {box: dump_types(d["plain"]) for box, d in cls.dumps.items()}
        cls.frames = {box: dump_frames(d["plain"]) for box, d in cls.dumps.items()}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)

    def read(self, out):
        with h5py.File(out, "r") as f:
            return {k: f[k][()] for k in f if isinstance(f[k], h5py.Dataset)}, dict(f["counts"].attrs)

    def taken(self):
        return list(range(FRAMES))[slice(None, None, 5)]

    def interrdf(self, u, a, b, norm="rdf", block=None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ga, gb = u.select_atoms(f"type {a}"), u.select_atoms(f"type {b}")
            r = InterRDF(ga, gb, nbins=BINS, range=(0, HI), norm=norm,
                         exclusion_block=block if block else ((1, 1) if a == b else None))
            r.run(step=5)
        return r

    def assert_float32_agreement(self, counts, count, rdf=None, ref=None):
        """As test_trajectory's: the float32 reading moves at most a few
        pairs a bin across an edge."""
        moved = np.abs(counts - count)
        self.assertLessEqual(moved.max(), 4, (counts, count))
        self.assertLessEqual(moved.sum(), max(6, 2e-4 * count.sum()))
        if rdf is not None:
            np.testing.assert_allclose(rdf, ref, rtol=3e-3, atol=1e-9)

    def test_partials_against_reference_and_interrdf(self):
        """--types type: 1-1, 1-2, 2-2 in one run over 10 frames: each
        exactly the float64 reference of its pairs; InterRDF(A, B)'s count
        (one type: twice ours), rdf, and cumulative count to float32
        agreement; the partials add up to the run without types."""
        for box, dumps in self.dumps.items():
            out, whole = self.path(f"{box}.h5"), self.path(f"{box}-all.h5")
            self.run_ok(hist_args(dumps["plain"], out, "--frames", TAKE, "--types", "type"))
            self.run_ok(hist_args(dumps["plain"], whole, "--frames", TAKE))
            d, attrs = self.read(out)
            self.assertEqual([p.decode() for p in d["pair"]], ["1-1", "1-2", "2-2"])
            self.assertEqual([t.decode() for t in d["types"]], ["1", "2"])
            types = self.types[box]
            self.assertEqual(d["type_sizes"].tolist(), [int((types == t).sum()) for t in ("1", "2")])
            self.assertEqual(d["counts"].shape, (3, BINS))
            frames = [self.frames[box][k] for k in self.taken()]
            u = tt.TrajectoryTest.universe(self, dumps["plain"], "LAMMPSDUMP") if HAVE_MDA else None
            for g, (a, b) in enumerate((("1", "1"), ("1", "2"), ("2", "2"))):
                ref, pairs = partial_reference(frames, types, a, b)
                with self.subTest(box=box, pair=f"{a}-{b}"):
                    np.testing.assert_array_equal(d["counts"][g], ref)
                    self.assertEqual(d["pair_total"][g], pairs)
                    self.assertEqual(d["counts"][g].sum() + d["underflow"][g] + d["overflow"][g],
                                     len(frames) * pairs)
                    ordered = 2 if a == b else 1
                    np.testing.assert_allclose(d["cumulative"][g], np.cumsum(ordered * ref) / len(frames),
                                               rtol=1e-15)
                    if u is not None:
                        r = self.interrdf(u, a, b)
                        self.assert_float32_agreement(ordered * d["counts"][g], r.results.count, d["rdf"][g],
                                                      r.results.rdf)
                        np.testing.assert_allclose(d["cumulative"][g], np.cumsum(r.results.count) / len(frames),
                                                   rtol=1e-3, atol=0.5 / len(frames) * 8)
            all_counts, _ = self.read(whole)
            np.testing.assert_array_equal(d["counts"].sum(0), all_counts["counts"])
            self.assertEqual(attrs["pairs"], len(frames) * 500 * 499 // 2)
            np.testing.assert_array_equal(d["r"], 0.5 * (d["edges"][1:] + d["edges"][:-1]))

    def test_selected_pairs_and_exclusions(self):
        """Water-like labels from files (O H H, molecules of 3 in id order):
        --pairs O-H,H-H --exclude-block 3 = --exclude FILE byte for byte;
        each partial = the float64 reference without the intra-molecular
        pairs, and InterRDF's with exclusion_block; without --types,
        --exclude-block 3 = InterRDF(g, g, exclusion_block=(3, 3))."""
        n = len(self.types["tri"])
        labels = np.array(["O" if k % 3 == 0 else "H" for k in range(n)])
        molecule = np.arange(n) // 3
        tfile, mfile = self.path("types.txt"), self.path("mol.txt")
        np.savetxt(tfile, labels, fmt="%s")
        with h5py.File(self.path("mol.h5"), "w") as f:
            f["mol"] = molecule + 100
        np.savetxt(mfile, molecule, fmt="%d")
        dump = self.dumps["tri"]["plain"]
        frames = [self.frames["tri"][k] for k in self.taken()]
        outs = {}
        for name, extra in (("block", ["--exclude-block", 3]), ("file", ["--exclude", mfile]),
                            ("h5", ["--exclude", self.path("mol.h5") + ":/mol"])):
            out = outs[name] = self.path(f"{name}.h5")
            self.run_ok(hist_args(dump, out, "--frames", TAKE, "--types", tfile, "--pairs", "H-O,H-H", *extra))
        d, attrs = self.read(outs["block"])
        for name in ("file", "h5"):
            other, _ = self.read(outs[name])
            for k in ("counts", "underflow", "overflow", "rdf", "cumulative", "pair_total"):
                self.assertEqual(other[k].tobytes(), d[k].tobytes(), (name, k))
        # the pairs as given, each in the types' order (H before O as text)
        self.assertEqual([p.decode() for p in d["pair"]], ["H-O", "H-H"])
        # per molecule O H H: 2 H-O and 1 H-H pairs; the last, O H, 1 H-O
        self.assertEqual(attrs["excluded"], 166 * 3 + 1)
        for g, (a, b) in enumerate((("H", "O"), ("H", "H"))):
            ref, pairs = partial_reference(frames, labels, a, b, molecule)
            with self.subTest(pair=f"{a}-{b}"):
                np.testing.assert_array_equal(d["counts"][g], ref)
                self.assertEqual(d["pair_total"][g], pairs)
        if HAVE_MDA:  # InterRDF(O, H, exclusion_block=(1, 2)), InterRDF(H, H, exclusion_block=(2, 2))
            uni = tt.TrajectoryTest.universe(self, dump, "LAMMPSDUMP")
            O, H = uni.atoms[labels == "O"], uni.atoms[labels == "H"]
            for g, (ga, gb, block, ordered) in enumerate(((H, O, (2, 1), 1), (H, H, (2, 2), 2))):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    r = InterRDF(ga, gb, nbins=BINS, range=(0, HI), exclusion_block=block)
                    r.run(step=5)
                with self.subTest(pair=g):
                    # (MDAnalysis's N counts whole blocks: 167 of the H's 333
                    # atoms' 2 is 1 off, 1 in 10^5 of its rdf)
                    self.assert_float32_agreement(ordered * d["counts"][g], r.results.count, d["rdf"][g],
                                                  r.results.rdf)
        # without --types: one histogram of every pair but a molecule's
        out = self.path("untyped.h5")
        self.run_ok(hist_args(dump, out, "--frames", TAKE, "--exclude-block", 3))
        u, attrs = self.read(out)
        i = np.arange(n)
        within = sum(len(i[molecule == m]) * (len(i[molecule == m]) - 1) // 2 for m in range(molecule.max() + 1))
        self.assertEqual(attrs["excluded"], within)
        self.assertEqual(attrs["pairs"], len(frames) * (n * (n - 1) // 2 - within))
        ref = sum(np.histogram(dd[molecule[ii] != molecule[jj]], BINS, (0, HI))[0]
                  for ii, jj, dd in (nearest_image_pairs(x, H) for H, x in frames))
        np.testing.assert_array_equal(u["counts"], ref)
        if HAVE_MDA:
            uni = tt.TrajectoryTest.universe(self, dump, "LAMMPSDUMP")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = InterRDF(uni.atoms, uni.atoms, nbins=BINS, range=(0, HI), exclusion_block=(3, 3))
                r.run(step=5)
            # MDAnalysis's N takes n/3 whole molecules (500 is not a multiple
            # of 3): its rdf differs by that, 1 in 10^5.
            self.assert_float32_agreement(2 * u["counts"], r.results.count, u["rdf"], r.results.rdf)

    def test_norms(self):
        """--norm density and none: InterRDF's norm='density' and 'none'
        (ordered counts per shell volume per frame, per frame)."""
        dump = self.dumps["ortho"]["plain"]
        u = tt.TrajectoryTest.universe(self, dump, "LAMMPSDUMP") if HAVE_MDA else None
        for norm in ("density", "none"):
            out = self.path(f"{norm}.h5")
            self.run_ok(hist_args(dump, out, "--frames", TAKE, "--types", "type", "--pairs", "1-2,2-2",
                                  "--norm", norm))
            d, _ = self.read(out)
            with h5py.File(out, "r") as f:
                self.assertEqual(f["rdf"].attrs["norm"], norm)
            shell = 4 / 3 * np.pi * np.diff(d["edges"] ** 3)
            F = len(self.taken())
            for g, ordered in ((0, 1), (1, 2)):
                expect = ordered * d["counts"][g] / (F * shell if norm == "density" else F)
                np.testing.assert_allclose(d["rdf"][g], expect, rtol=1e-14)
            if u is not None:
                r = self.interrdf(u, "2", "2", norm=norm)
                np.testing.assert_allclose(d["rdf"][1], r.results.rdf, rtol=3e-3, atol=2 / F)
        # without a box: density and none need none, rdf is refused
        xyz = self.dumps["ortho"]["xyz"]
        out = self.path("nobox.h5")
        self.run_ok(hist_args(xyz, out, "--frame", 2, "--norm", "none"))
        self.assertIn("rdf", self.read(out)[0])
        r = tdsolve(*hist_args(xyz, self.path("bad.h5"), "--frame", 2, "--norm", "rdf"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--norm rdf", r.stderr)
        self.assertFalse(os.path.exists(self.path("bad.h5")))

    def test_ranks_culling_and_resume_give_the_same_bytes(self):
        dump = self.dumps["tri"]["plain"]
        base = ["--frames", "1:30:2", "--types", "type", "--exclude-block", 4, "--per-frame"]
        outs = {}
        for name, extra, ranks in (("one", ["--cull", "off"], None), ("three", ["--cull", "off"], 3),
                                   ("culled", ["--cull", "on"], 3)):
            outs[name] = self.path(f"{name}.h5")
            self.run_ok(hist_args(dump, outs[name], *base, *extra), ranks)
        ref, _ = self.read(outs["one"])
        self.assertEqual(ref["frame_counts"].shape, (15, 3, BINS))
        np.testing.assert_array_equal(ref["frame_counts"].sum(0), ref["counts"])
        for name in ("three", "culled"):
            d, _ = self.read(outs[name])
            for k in ("counts", "underflow", "overflow", "rdf", "cumulative", "frame_counts"):
                self.assertEqual(d[k].tobytes(), ref[k].tobytes(), (name, k))

    def test_stopped_and_killed_runs_resume_to_the_same_bytes(self):
        """120 frames of 3000 points with types from an HDF5 dataset and
        molecules of 3: SIGTERM and SIGKILL after some frames, then
        --resume: the uninterrupted run's bytes (counts, rdf, cumulative,
        every frame's rows)."""
        rng = np.random.default_rng(4)
        path = self.path("stack.h5")
        with h5py.File(path, "w") as f:
            f["pos"] = rng.random((120, 3000, 3)) * 10
            f["types"] = rng.integers(1, 4, 3000)
        args = lambda out: ["hist", "--input", path + ":/pos", "--frames", "::", "--per-frame", "--types",
                            path + ":/types", "--pairs", "1-2,3-3", "--exclude-block", 3, "--bins", 50, "--range",
                            "0:4", "--box", "10,10,10", "--precision", "float64", "--output", out, "--progress",
                            "none", "--quiet"]
        whole = self.path("whole.h5")
        self.run_ok(args(whole))
        expect, _ = self.read(whole)
        keys = ("counts", "underflow", "overflow", "rdf", "cumulative", "frame_counts")
        for sig in (signal.SIGTERM, signal.SIGKILL):
            out = self.path(f"cut{int(sig)}.h5")
            rc, err = self.interrupted_run(args(out), out, sig, ready=chunk_done(out + ".partial"),
                                           TDSOLVE_TEST_CHECKPOINT_S="0.001", TDSOLVE_TEST_SLOW_MS="30")
            if sig == signal.SIGTERM:
                self.assertEqual(rc, 75, err)
                # the same job's .partial as a schema_version 2 tdsolve left it
                # (no /r, no /cumulative): refused as older, not as damaged
                old = self.path("older.h5")
                shutil.copy(out + ".partial", old + ".partial")
                with h5py.File(old + ".partial", "a") as f:
                    f.attrs["schema_version"] = np.uint64(2)
                    del f["cumulative"]
                r = tdsolve(*args(old), "--resume")
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn("older tdsolve (schema_version 2", r.stderr)
                self.assertNotIn("damaged", r.stderr)
            with self.subTest(signal=sig):
                with h5py.File(out + ".partial", "r") as f:
                    done = int(f["progress/done"][()].sum())
                self.assertTrue(0 < done < 120, f"{done} of 120 frames done: the stop came too early or late")
                self.run_ok(args(out) + ["--resume"])
                got, _ = self.read(out)
                for k in keys:
                    self.assertEqual(got[k].tobytes(), expect[k].tobytes(), k)

    def test_xarray_reads_the_coordinates(self):
        """xarray (h5netcdf) opens the file with r and pair as coordinates."""
        try:
            import xarray
        except ImportError:
            self.skipTest("needs xarray and h5netcdf (python3-xarray, python3-h5netcdf)")
        out = self.path("x.h5")
        self.run_ok(hist_args(self.dumps["ortho"]["plain"], out, "--frame", 0, "--types", "type"))
        with xarray.open_dataset(out, engine="h5netcdf") as ds:
            self.assertEqual(ds["rdf"].dims, ("pair", "r"))
            self.assertIn("r", ds.coords)
            self.assertEqual(list(ds["pair"].values), ["1-1", "1-2", "2-2"])
            d, _ = self.read(out)
            np.testing.assert_array_equal(ds["counts"].sel(pair="1-2").values, d["counts"][1])
            np.testing.assert_array_equal(ds["r"].values, d["r"])

    def test_bad_input(self):
        dump = self.dumps["ortho"]["plain"]
        short = self.path("short.txt")
        np.savetxt(short, np.ones(7, int), fmt="%d")
        cases = [
            (["--pairs", "1-2"], "--pairs goes with --types"),
            (["--types", "type", "--pairs", "1-3"], "'3' is not a type"),
            (["--types", "type", "--pairs", "1-2,2-1"], "twice"),
            (["--types", "type", "--pairs", "12"], "A-B"),
            (["--types", "nosuch"], "nosuch"),
            (["--types", short], "7"),
            (["--exclude", short, "--exclude-block", 3], "give one"),
            (["--exclude-block", 0], "--exclude-block"),
            (["--norm", "gr"], "--norm"),
        ]
        for extra, words in cases:
            out = self.path("bad.h5")
            r = tdsolve(*hist_args(dump, out, "--frame", 0, *extra))
            with self.subTest(extra=extra):
                self.assertNotEqual(r.returncode, 0)
                self.assertIn(words, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertFalse(os.path.exists(out) or os.path.exists(out + ".partial"))


class GroupsGpuTest(TempDirTest):
    """Partial histograms on the CUDA backend (skips without a GPU; fails
    instead under TDSOLVE_REQUIRE_GPU=1): the CPU's bytes, float32 and
    float64, culled and dense, with types and exclusions."""

    @classmethod
    def setUpClass(cls):
        require_gpu()

    def test_gpu_partials_are_the_cpus_bytes(self):
        rng = np.random.default_rng(12)
        n = 9000
        path = self.save_npy("x.npy", rng.random((n, 3)) * 20)
        types = self.path("types.txt")
        np.savetxt(types, rng.choice(["A", "B", "C"], n, p=[0.5, 0.3, 0.2]), fmt="%s")
        for precision in ("float32", "float64"):
            for cull in ("on", "off"):
                for v, extra in enumerate(([], ["--pairs", "A-B,C-C,B-B"], ["--exclude-block", 3])):
                    outs = []
                    for backend in ("cpu", "cuda"):
                        out = self.path(f"{precision}-{cull}-{backend}-{v}.h5")
                        r = tdsolve("hist", "--input", path, "--types", types, *extra, "--bins", 64, "--range",
                                    "0:3", "--box", "20,20,20", "--precision", precision, "--cull", cull,
                                    "--backend", backend, "--output", out, "--quiet")
                        self.assertEqual(r.returncode, 0, r.stderr)
                        with h5py.File(out, "r") as f:
                            outs.append({k: f[k][()].tobytes()
                                         for k in ("counts", "rdf", "underflow", "overflow", "cumulative")})
                    with self.subTest(precision=precision, cull=cull, extra=extra):
                        self.assertEqual(outs[0], outs[1])


if __name__ == "__main__":
    unittest.main()
