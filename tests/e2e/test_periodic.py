"""Periodic boxes (issue 29): triclinic cells for hist, knn --radius and
collide, and periodic boxes (orthorhombic and triclinic) for triplet.

TriclinicTest: against MDAnalysis, whose minimum image in a triclinic cell is
its own (a search of the 27 neighbouring images) and which computes in
float64 from float32 coordinates and a float32 cell, so the points and the
cell here are float32 numbers: knn --radius's pairs and distances are
those of a float64 NumPy search of the 27 nearest images (exactly, and to
1e-13) and MDAnalysis self_capped_distance's (to its float32 differences);
hist's counts are numpy.histogram of the NumPy reference's distances
(exactly, float64) and /rdf is InterRDF's;
culled = dense byte for byte (hist, knn --radius, collide; float32 and
float64; 1 and 3 ranks; points outside the cell); --tilt and the cell's 9
numbers give the same bytes; tilts of 0 give the orthorhombic run's bytes.

PeriodicNeighboursTest: knn --k in an orthorhombic box against cKDTree
(boxsize=L).query, culled = dense bytes (a triclinic cell is refused for
--k: its reduction is certain only within half its width).

PeriodicTripletTest: ATM and SW in an orthorhombic and a triclinic periodic
box against LAMMPS (boundary p p p, its own ghost atoms and tilt factors):
energy and forces to 1e-8; culled = dense to rounding, culled runs on 1 and
3 ranks the same bytes; the points shifted by cell vectors give the same sums
to rounding.

BadBoxTest: every refusal is one line and writes nothing.

PeriodicGpuTest (skips without a GPU; fails instead under
TDSOLVE_REQUIRE_GPU=1): the CUDA backend's triclinic runs and knn --k in
a box are the CPU's bytes; its periodic triplets the CPU's sums to 1e-9.
"""
import os
import shutil
import sys
import unittest
import warnings

import h5py
import numpy as np

from common import TempDirTest, killed_after_checkpoints, require_gpu, run_lammps, tdsolve, tdsolve_h5
from test_cull import CullCase, datasets

SEED = int(os.environ.get("TDSOLVE_PERIODIC_SEED", np.random.SeedSequence().entropy % (1 << 32)))
LMP = shutil.which("lmp") or shutil.which("lmp_serial") or shutil.which("lmp_mpi")

try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import MDAnalysis
        from MDAnalysis.analysis.rdf import InterRDF
        from MDAnalysis.lib.distances import self_capped_distance
        from MDAnalysis.lib.mdamath import triclinic_vectors
    HAVE_MDA = True
except ImportError:  # the test packages install python3-mdanalysis
    HAVE_MDA = False


def num(v):
    return repr(float(v))


def cell_text(H):
    """The 9 numbers of --box: the cell's vectors a, b, c as rows."""
    return ",".join(num(v) for v in np.asarray(H, dtype=np.float64).ravel())


def random_dims(rng, lo=8.0, hi=12.0):
    """MDAnalysis dimensions [a, b, c, alpha, beta, gamma] (float32)."""
    return np.r_[rng.uniform(lo, hi, 3), rng.uniform(72, 108, 3)].astype(np.float32)


def points_in(rng, H, n, spread=(0.0, 1.0)):
    """n points of fractional coordinates in [spread), as float32 numbers."""
    s = rng.uniform(spread[0], spread[1], (n, 3))
    return (s @ np.asarray(H, dtype=np.float64)).astype(np.float32).astype(np.float64)


def nearest_image_pairs(x, H, vectors=False):
    """Every pair i < j (in packed order) and its distance to the nearest
    image, over the 27 neighbouring cells of the wrapped difference, in
    float64: an independent reference for the reduction tdsolve uses. With
    vectors, also that image's difference x_i - x_j (pairs x 3)."""
    H = np.asarray(H, dtype=np.float64)
    inv = np.linalg.inv(H)
    i, j = np.triu_indices(len(x), 1)
    shifts = np.array([[a, b, c] for a in (-1, 0, 1) for b in (-1, 0, 1) for c in (-1, 0, 1)], float) @ H
    best = np.full(len(i), np.inf)
    diff = np.empty((len(i), 3)) if vectors else None
    for lo in range(0, len(i), 1 << 18):
        hi = min(len(i), lo + (1 << 18))
        v = x[i[lo:hi]] - x[j[lo:hi]]
        s = v @ inv
        v = (s - np.rint(s)) @ H
        c = v[:, None, :] + shifts[None]
        d2 = (c ** 2).sum(-1)
        k = d2.argmin(1)
        best[lo:hi] = np.sqrt(d2[np.arange(hi - lo), k])
        if vectors:
            diff[lo:hi] = c[np.arange(hi - lo), k]
    return (i, j, best, diff) if vectors else (i, j, best)


def lammps_cell(H):
    """LAMMPS's (lx, ly, lz, xy, xz, yz) of a cell in its orientation."""
    H = np.asarray(H, dtype=np.float64)
    return H[0, 0], H[1, 1], H[2, 2], H[1, 0], H[2, 0], H[2, 1]


@unittest.skipUnless(HAVE_MDA, "MDAnalysis is not installed (python3-mdanalysis)")
class TriclinicTest(CullCase):
    def cell(self, rng):
        dims = random_dims(rng)
        return dims, triclinic_vectors(dims)  # float32, LAMMPS's orientation

    def half_width(self, H):
        H = np.asarray(H, dtype=np.float64)
        V = abs(np.linalg.det(H))
        return min(V / np.linalg.norm(np.cross(H[1], H[2])), V / np.linalg.norm(np.cross(H[0], H[2])),
                   V / np.linalg.norm(np.cross(H[0], H[1]))) / 2

    def test_radius_pairs_are_the_nearest_images(self):
        rng = np.random.default_rng(SEED)
        for trial in range(3):
            dims, H = self.cell(rng)
            x = points_in(rng, H, 1500, (-0.3, 1.3) if trial == 2 else (0.0, 1.0))
            R = float(rng.uniform(0.1, 0.95) * self.half_width(H))
            np.save(self.path("x.npy"), x)
            with self.subTest(trial=trial, dims=dims, R=R):
                args = ["knn", "--input", self.path("x.npy"), "--radius", num(R), "--precision", "float64",
                        "--box", cell_text(H), "--block", "32"]
                on, _ = self.assert_same(args, np_=3 if trial == 1 else None)
                i, j, d = nearest_image_pairs(x, H)
                keep = d < R
                with h5py.File(on, "r") as f:
                    got, dist = f["pairs"][:], f["distances"][:]
                    np.testing.assert_array_equal(got, np.c_[i[keep], j[keep]])
                    np.testing.assert_allclose(dist, d[keep], rtol=1e-13, atol=0)
                    self.assertEqual(f["pairs"].attrs["box"], ",".join("%.17g" % v for v in np.diag(H)))
                    self.assertEqual(f["pairs"].attrs["tilt"],
                                     ",".join("%.17g" % v for v in (H[1, 0], H[2, 0], H[2, 1])))
                # MDAnalysis: its differences of float32 coordinates round to
                # float32 (relative to the coordinates), so pairs that close
                # to R may fall either way.
                tol = 1e-6 * (float(np.abs(x).max()) + R)
                pairs, dm = self_capped_distance(x.astype(np.float32), R, box=dims, method="bruteforce")
                pairs = np.sort(pairs, axis=1)
                sure = np.abs(dm - R) > tol
                want = {tuple(p) for p in pairs[sure & (dm < R)]}
                have = {tuple(p) for p in got}
                self.assertTrue(want <= have, "a pair MDAnalysis finds is missing")
                # (near R: pairs MDAnalysis returns within tol of R, and
                # pairs it leaves out whose distance is within tol of R)
                near = {tuple(p) for p in pairs[~sure]} | {tuple(p) for p, v in zip(got, dist) if R - v <= tol}
                self.assertTrue(have - want <= near, "a pair MDAnalysis does not find")
                ref = dict(zip(map(tuple, pairs), dm))
                self.assertLessEqual(max(abs(ref[tuple(p)] - v) for p, v in zip(got, dist) if tuple(p) in ref), tol)

    def test_histogram_and_rdf(self):
        rng = np.random.default_rng(SEED + 1)
        for trial, precision in enumerate(("float64", "float32")):
            dims, H = self.cell(rng)
            x = points_in(rng, H, 1200)
            hi = float(np.float32(0.9 * self.half_width(H)))
            np.save(self.path("x.npy"), x)
            with self.subTest(dims=dims, precision=precision):
                args = ["hist", "--input", self.path("x.npy"), "--bins", "60", "--range", f"0:{num(hi)}",
                        "--box", cell_text(H), "--precision", precision, "--block", "32"]
                on, _ = self.assert_same(args, np_=3 if trial else None)
                d = nearest_image_pairs(x, H)[2]
                if precision == "float32":  # the run's own distances round to float32
                    d = d.astype(np.float32)
                want = np.histogram(d, 60, (0.0, hi))[0]
                u = MDAnalysis.Universe.empty(len(x), trajectory=True)
                u.atoms.positions = x.astype(np.float32)
                u.dimensions = dims
                rdf = InterRDF(u.atoms, u.atoms, nbins=60, range=(0.0, hi), exclusion_block=(1, 1)).run()
                with h5py.File(on, "r") as f:
                    counts = f["counts"][:]
                    if precision == "float64":
                        np.testing.assert_array_equal(counts, want)
                    else:  # float32 distances within an ulp of an edge may bin either way
                        self.assertLessEqual(int(np.abs(counts - want).sum()), 4)
                    self.assertEqual(int(counts.sum() + f["overflow"][()]), len(x) * (len(x) - 1) // 2)
                    # MDAnalysis counts ordered pairs, from float32 differences: a
                    # pair within ~1e-6 of an edge may bin either way (a few of
                    # ~10^5), and where the counts agree so does the rdf.
                    moved = int(np.abs(2 * counts - rdf.results.count).sum())
                    self.assertLessEqual(moved, max(16, 2e-4 * 2 * int(counts.sum())))
                    full = counts == rdf.results.count / 2
                    self.assertGreater(int(full.sum()), 40)
                    np.testing.assert_allclose(f["rdf"][:][full], rdf.results.rdf[full], rtol=1e-6, atol=0)
                    volume = float(np.linalg.det(np.asarray(H, dtype=np.float64)))
                    self.assertAlmostEqual(float(f["rdf"].attrs["volume"]), volume, delta=1e-9)
                with tdsolve_h5.open_result(on) as r:  # the reader names the cell, and so does info
                    self.assertEqual(r.box, tuple(float(v) for v in np.diag(H)))
                    self.assertEqual(r.tilt, (float(H[1, 0]), float(H[2, 0]), float(H[2, 1])))
                info = tdsolve("info", on, check=True).stdout
                self.assertIn(", tilt " + ",".join("%.17g" % v for v in (H[1, 0], H[2, 0], H[2, 1])), info)

    def test_culled_equals_dense_and_spellings_agree(self):
        rng = np.random.default_rng(SEED + 2)
        dims, H = self.cell(rng)
        lx, ly, lz, xy, xz, yz = lammps_cell(H)
        x = points_in(rng, H, 2500, (-1.0, 2.0))  # outside the cell too
        r = rng.random(2500) * 0.08 * self.half_width(H)
        np.save(self.path("x.npy"), x)
        np.save(self.path("s.npy"), np.c_[x, r])
        tilt = ["--box", f"{num(lx)},{num(ly)},{num(lz)}", "--tilt", f"{num(xy)},{num(xz)},{num(yz)}"]
        cell = ["--box", cell_text(H)]
        hw = self.half_width(H)
        for base, np_ in ((["hist", "--input", self.path("x.npy"), "--bins", "33", "--range", f"0:{num(0.7 * hw)}"], None),
                          (["hist", "--input", self.path("x.npy"), "--bins", "33", "--range", f"0:{num(0.2 * hw ** 2)}",
                            "--metric", "sqeuclidean", "--precision", "float64"], 3),
                          (["knn", "--input", self.path("x.npy"), "--radius", num(0.3 * hw)], 3),
                          (["knn", "--input", self.path("x.npy"), "--radius", num(0.3 * hw), "--precision", "float64"], None),
                          (["collide", "--input", self.path("s.npy")], 3)):
            with self.subTest(args=base):
                on, _ = self.assert_same([*base, *tilt, "--block", "16"], np_=np_)
                a = datasets(on)
                on2, _ = self.run_pair([*base, *cell, "--block", "16"])
                b = datasets(on2)
                self.assertEqual(sorted(a), sorted(b))
                for k in a:
                    self.assertTrue(a[k][2] == b[k][2], f"/{k}: --tilt and the cell's 9 numbers differ")

    def test_zero_tilts_are_the_orthorhombic_run(self):
        rng = np.random.default_rng(SEED + 3)
        x = rng.random((2000, 3)) * 5
        np.save(self.path("x.npy"), x)
        for base in (["hist", "--input", self.path("x.npy"), "--bins", "20", "--range", "0:1.5"],
                     ["knn", "--input", self.path("x.npy"), "--radius", "0.7"]):
            a, b = self.path("a.h5"), self.path("b.h5")
            tdsolve(*base, "--box", "5,5,5", "--output", a, "--overwrite", check=True)
            tdsolve(*base, "--box", "5,5,5", "--tilt", "0,0,0", "--output", b, "--overwrite", check=True)
            with h5py.File(b, "r") as f:
                self.assertNotIn("tilt", dict(f["counts" if base[0] == "hist" else "pairs"].attrs))
            da, db = datasets(a), datasets(b)
            for k in da:
                self.assertEqual(da[k][2], db[k][2], k)


class PeriodicNeighboursTest(CullCase):
    """knn --k in an orthorhombic box: cKDTree(boxsize=L).query's lists
    (float64, points anywhere), culled = dense bytes on 1 and 3 ranks."""

    def test_neighbours_are_ckdtrees(self):
        from scipy.spatial import cKDTree
        rng = np.random.default_rng(SEED + 8)
        for trial, (k, metric) in enumerate(((8, "euclidean"), (5, "sqeuclidean"), (12, "euclidean"))):
            L = rng.uniform(0.6, 1.6, 3)
            x = rng.uniform(-0.4, 1.4, (6000, 3)) * L
            np.save(self.path("x.npy"), x)
            args = ["knn", "--input", self.path("x.npy"), "--k", str(k), "--metric", metric, "--precision",
                    "float64", "--box", ",".join(num(v) for v in L), "--block", "32"]
            with self.subTest(trial=trial, L=L, k=k, metric=metric):
                on, _ = self.assert_same(args, np_=3 if trial == 1 else None)
                w = x - L * np.floor(x / L)
                d, i = cKDTree(w, boxsize=L).query(w, k=k + 1)
                d, i = d[:, 1:], i[:, 1:]
                with h5py.File(on, "r") as f:
                    self.assertEqual(f["distances"].attrs["box"], ",".join("%.17g" % v for v in L))
                    np.testing.assert_array_equal(f["indices"][:], i)
                    got = f["distances"][:]
                    np.testing.assert_allclose(got, d * d if metric == "sqeuclidean" else d, rtol=1e-12)


class PeriodicTripletTest(CullCase):
    def sums(self, path):
        with h5py.File(path, "r") as f:
            return {k: f[k][()] for k in ("energy", "energy_per_point", "forces")}

    def lammps(self, x, H, pair, coeff, units="lj", extra_files=()):
        """LAMMPS on x in the periodic cell H (rows a, b, c; LAMMPS's
        orientation): (energy, forces)."""
        data, dump, script = self.path("atoms.data"), self.path("forces.dump"), self.path("in.lmp")
        lx, ly, lz, xy, xz, yz = lammps_cell(H)
        with open(data, "w") as f:
            f.write(f"tdsolve periodic triplet test\n\n{len(x)} atoms\n1 atom types\n\n")
            f.write(f"0 {num(lx)} xlo xhi\n0 {num(ly)} ylo yhi\n0 {num(lz)} zlo zhi\n")
            if (xy, xz, yz) != (0, 0, 0):
                f.write(f"{num(xy)} {num(xz)} {num(yz)} xy xz yz\n")
            f.write("\nMasses\n\n1 1.0\n\nAtoms # atomic\n\n")
            for i, p in enumerate(x):
                f.write(f"{i + 1} 1 {num(p[0])} {num(p[1])} {num(p[2])}\n")
        with open(script, "w") as f:
            f.write(f"""units {units}
atom_style atomic
atom_modify map array
boundary p p p
read_data {data}
pair_style {pair}
pair_coeff {coeff}
neighbor 0.3 bin
neigh_modify one 10000 page 200000
thermo_style custom step pe
thermo_modify norm no
run 0
variable e equal pe
print "TDSOLVE_PE $(v_e:%.17g)"
write_dump all custom {dump} id fx fy fz modify sort id format float %.17g
""")
        return run_lammps(self, LMP, script, dump, len(x), 3)

    def cells(self):
        ortho = np.diag([9.0, 8.5, 9.5])
        tri = np.array([[9.0, 0, 0], [1.5, 8.5, 0], [-1.0, 1.2, 9.5]])
        return (("orthorhombic", ortho), ("triclinic", tri))

    def box_args(self, H, spelling="tilt"):
        lx, ly, lz, xy, xz, yz = lammps_cell(H)
        if (xy, xz, yz) == (0, 0, 0):
            return ["--box", f"{num(lx)},{num(ly)},{num(lz)}"]
        if spelling == "tilt":
            return ["--box", f"{num(lx)},{num(ly)},{num(lz)}", "--tilt", f"{num(xy)},{num(xz)},{num(yz)}"]
        return ["--box", cell_text(H)]

    def check(self, got, e, f, tol, what):
        self.assertLessEqual(abs(float(got["energy"]) - e), tol * abs(e), f"{what}: {got['energy']!r} vs {e!r}")
        err = np.max(np.abs(got["forces"] - f)) / max(np.max(np.abs(f)), 1e-300)
        self.assertLessEqual(err, tol, f"{what}: forces")

    @unittest.skipUnless(LMP, "LAMMPS (lmp) is not on PATH")
    def test_atm_and_sw_are_lammps(self):
        rng = np.random.default_rng(SEED + 4)
        sw = ["--potential", "sw", "--sigma", "1", "--a", "1.8"]  # cutoff 1.8 <= a quarter of 8.2
        sw_file = self.path("one.sw")
        with open(sw_file, "w") as f:  # LAMMPS's Si.sw columns with sigma 1, a 1.8, A = 0
            f.write("X X X 2.1683 1.0 1.8 21.0 1.20 -0.333333333333 0.0 0.6022245584 4.0 0.0 0.0\n")
        for label, H in self.cells():
            x = points_in(rng, H, 600)
            shifted = x + rng.integers(-2, 3, (len(x), 1)) * H[0] + rng.integers(-2, 3, (len(x), 1)) * H[2]
            for name, pts in (("in the cell", x), ("shifted by cell vectors", shifted)):
                np.save(self.path("x.npy"), pts)
                for pot, args, pair, coeff in (
                        ("atm", ["--nu", "0.65", "--cutoff", "2.5", "--cutoff-triple", "2.4"], "atm 2.5 2.4",
                         "* * * 0.65"),
                        ("sw", sw, "sw", f"* * {sw_file} X")):
                    what = f"{pot} {label} {name}"
                    with self.subTest(what=what):
                        out = self.path("t.h5")
                        tdsolve("triplet", "--input", self.path("x.npy"), *args, *self.box_args(H),
                                "--precision", "float64", "--backend", "cpu", "--output", out, "--overwrite",
                                check=True)
                        e, f = self.lammps(x, H, pair, coeff)
                        self.check(self.sums(out), e, f, 1e-8, what)
                        with h5py.File(out, "r") as h:
                            self.assertEqual(h["energy"].attrs["box"], ",".join("%.17g" % v for v in np.diag(H)))

    def test_culled_equals_dense_and_ranks_agree(self):
        rng = np.random.default_rng(SEED + 5)
        for label, H in self.cells():
            x = points_in(rng, H, 900, (-0.5, 1.5))
            np.save(self.path("x.npy"), x)
            for extra, precision in ((["--nu", "0.8", "--cutoff", "2.5"], "float64"),
                                     (["--potential", "sw", "--sigma", "1", "--a", "2.0"], "float64"),
                                     (["--nu", "0.8", "--cutoff", "2.2"], "float32")):
                what = f"{label} {extra} {precision}"
                with self.subTest(what=what):
                    args = ["triplet", "--input", self.path("x.npy"), *extra, *self.box_args(H, "cell"),
                            "--precision", precision]
                    on, off = self.run_pair(args, np_=3)
                    a, b = self.sums(on), self.sums(off)
                    tol = 1e-9 if precision == "float64" else 2e-4
                    for k in a:
                        scale = max(float(np.max(np.abs(b[k]))), 1e-300)
                        self.assertLessEqual(float(np.max(np.abs(np.asarray(a[k]) - b[k]))), tol * scale, k)
                    self.assertNotEqual(float(a["energy"]), 0.0)
                    one = self.path("one.h5")
                    tdsolve(*args, "--cull", "on", "--backend", "cpu", "--output", one, "--overwrite", check=True)
                    for k, v in self.sums(one).items():
                        self.assertEqual(np.asarray(v).tobytes(), np.asarray(a[k]).tobytes(), k)


    def test_killed_periodic_triplets_resume_to_the_same_bytes(self):
        rng = np.random.default_rng(SEED + 10)
        H = np.array([[12.0, 0, 0], [1.0, 12.0, 0], [-1.5, 0.5, 12.0]])
        np.save(self.path("x.npy"), points_in(rng, H, 2500, (-0.2, 1.2)))
        args = ["triplet", "--input", self.path("x.npy"), "--nu", "1", "--cutoff", "2.5", "--box", cell_text(H),
                "--backend", "cpu", "--progress", "none", "--cull", "on"]
        ref, out = self.path("ref.h5"), self.path("t.h5")
        tdsolve(*args, "--output", ref, "--quiet", check=True)
        r, flagged, _ = killed_after_checkpoints(args, out, "0:2:kill")
        self.assertNotEqual(r.returncode, 0)
        self.assertGreater(flagged, 0)
        # Another cell is another job: refused, the partial file kept.
        other = [a if a != cell_text(H) else cell_text(H + np.array([[0, 0, 0], [0.5, 0, 0], [0, 0, 0]]))
                 for a in args]
        r = tdsolve(*other, "--output", out, "--resume")
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("tilt", r.stderr)
        self.assertTrue(os.path.exists(out + ".partial"))
        r = tdsolve(*args, "--output", out, "--resume", np_=3)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"{flagged} of", r.stdout)
        a, b = self.sums(ref), self.sums(out)
        for k in a:
            self.assertEqual(np.asarray(a[k]).tobytes(), np.asarray(b[k]).tobytes(), k)


class BadBoxTest(TempDirTest):
    def test_bad_boxes_are_one_line_and_write_nothing(self):
        rng = np.random.default_rng(7)
        np.save(self.path("x.npy"), rng.random((300, 3)) * 4)
        np.save(self.path("s.npy"), np.c_[rng.random((300, 3)) * 4, np.full(300, 0.9)])
        # point 7 again, a cell vector (c = (0.5, 0, 4)) away; multiples of
        # 1/64 so that its image is exactly point 7 (r = 0 in the tiles)
        twins = np.round(rng.random((300, 3)) * 3 * 64) / 64
        twins[200] = twins[7] + [0.5, 0.0, 4.0]
        np.save(self.path("twins.npy"), twins)
        x = ["--input", self.path("x.npy")]
        out = self.path("b.h5")
        for args, code, words in (
                (["knn", *x, "--radius", "0.5", "--box", "4,4,4", "--tilt", "0.1,0.1"], 2, "--tilt wants xy,xz,yz"),
                (["knn", *x, "--k", "3", "--box", "4,0,0,1,4,0,1,1,4"], 2, "knn --k takes an orthorhombic --box"),
                (["knn", *x, "--radius", "0.5", "--box", "4,4", "--tilt", "0,0,0"], 2, "--tilt xy,xz,yz wants --box"),
                (["knn", *x, "--radius", "0.5", "--tilt", "0.1,0,0"], 2, "--tilt needs --box"),
                (["knn", *x, "--radius", "0.5", "--box", "4,0.5,0,0,4,0,0,0,4"], 2, "wants a along x"),
                (["knn", *x, "--radius", "0.5", "--box", "4,0,0,1,4,0,1,1,0"], 2, "a degenerate cell"),
                (["knn", *x, "--radius", "0.5", "--box", "4,0,0,1,-4,0,1,1,4"], 2, "a degenerate cell"),
                (["knn", *x, "--radius", "0.5", "--box", "4,0,0,1,4,0,1,1,4", "--tilt", "1,1,1"], 2,
                 "--tilt goes with --box lx,ly,lz"),
                (["knn", *x, "--radius", "0.5", "--box", "4,4,4", "--tilt", "1,0,0", "--metric", "cityblock"], 2,
                 "a triclinic --box applies to --metric euclidean and sqeuclidean"),
                (["knn", *x, "--radius", "1.9", "--box", "4,4,4", "--tilt", "2,0,0"], 2,
                 "past half the shortest --box width"),
                (["knn", *x, "--radius", "0.5", "--box", "4,4,4", "--tilt", "nan,0,0"], 2, "--tilt"),
                (["hist", *x, "--bins", "5", "--range", "0:1.9", "--box", "4,4,4", "--tilt", "2,0,0"], 2,
                 "reaches past half the triclinic cell's shortest width"),
                (["collide", "--input", self.path("s.npy"), "--box", "4,4,4", "--tilt", "2,2,2"], 1,
                 "past half the shortest --box width"),
                (["triplet", *x, "--nu", "1", "--box", "4,4,4"], 2, "--box needs --cutoff for atm"),
                (["triplet", *x, "--nu", "1", "--cutoff", "1.5", "--box", "4,4,4"], 2, "more than a third"),
                (["triplet", *x, "--potential", "sw", "--sigma", "1", "--a", "1.1", "--box", "4,4,4"], 2,
                 "more than a quarter"),
                (["triplet", *x, "--nu", "1", "--cutoff", "1", "--box", "4,4"], 2, "--box wants lx,ly,lz for triplets"),
                (["triplet", *x, "--nu", "1", "--cutoff", "1", "--box", "4,4,4", "--tilt", "0,0"], 2,
                 "--tilt wants xy,xz,yz"),
                (["triplet", "--input", self.path("twins.npy"), "--nu", "1", "--cutoff", "1", "--box", "4,4,4",
                  "--tilt", "1,0.5,0"], 1, "in the periodic box: r = 0")):
            with self.subTest(args=args):
                r = tdsolve(*args, "--backend", "cpu", "--output", out)
                self.assertEqual(r.returncode, code, r.stdout + r.stderr)
                self.assertIn(words, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertFalse(os.path.exists(out) or os.path.exists(out + ".partial"))

    def test_help_names_the_tilt(self):
        for cmd in ("hist", "knn", "collide", "triplet"):
            r = tdsolve(cmd, "--help", check=True)
            self.assertIn("--tilt", r.stdout, cmd)


class PeriodicGpuTest(CullCase):
    @classmethod
    def setUpClass(cls):
        require_gpu()

    def test_gpu_triclinic_is_the_cpus_bytes(self):
        rng = np.random.default_rng(SEED + 6)
        H = np.array([[1.0, 0, 0], [0.3, 0.9, 0], [-0.2, 0.25, 1.1]])
        x = points_in(rng, H, 20000, (-0.5, 1.5))
        np.save(self.path("x.npy"), x)
        np.save(self.path("s.npy"), np.c_[x, rng.random(20000) * 0.01])
        box = ["--box", cell_text(H)]
        for args in (["hist", "--input", self.path("x.npy"), "--bins", "50", "--range", "0:0.2", *box],
                     ["hist", "--input", self.path("x.npy"), "--bins", "50", "--range", "0:0.2", "--precision",
                      "float64", *box],
                     ["knn", "--input", self.path("x.npy"), "--radius", "0.03", *box],
                     ["knn", "--input", self.path("x.npy"), "--radius", "0.0009", "--metric", "sqeuclidean",
                      "--precision", "float64", *box],
                     ["collide", "--input", self.path("s.npy"), *box]):
            with self.subTest(args=args):
                self.assert_same(args, backend_on="cuda", backend_off="cpu")
                # and the GPU's dense run (every tile) the same
                g = self.path("g.h5")
                tdsolve(*args, "--cull", "off", "--backend", "cuda", "--output", g, "--overwrite", check=True)
                a, b = datasets(g), datasets(self.path("off.h5"))
                for k in a:
                    self.assertEqual(a[k][2], b[k][2], k)

    def test_gpu_periodic_neighbours_are_the_cpus(self):
        # knn --k in a box runs dense on the GPU: the CPU's culled bytes.
        rng = np.random.default_rng(SEED + 9)
        x = rng.uniform(-0.2, 1.2, (30000, 3)) * [1.0, 0.8, 1.2]
        np.save(self.path("x.npy"), x)
        for precision in ("float32", "float64"):
            with self.subTest(precision=precision):
                args = ["knn", "--input", self.path("x.npy"), "--k", "10", "--box", "1,0.8,1.2", "--precision",
                        precision]
                g, c = self.path("g.h5"), self.path("c.h5")
                tdsolve(*args, "--backend", "cuda", "--output", g, "--overwrite", check=True)
                tdsolve(*args, "--backend", "cpu", "--cull", "on", "--output", c, "--overwrite", check=True)
                a, b = datasets(g), datasets(c)
                for key in a:
                    self.assertEqual(a[key][2], b[key][2], key)

    def test_gpu_periodic_triplets_are_the_cpus(self):
        rng = np.random.default_rng(SEED + 7)
        for H in (np.diag([14.0, 13.0, 15.0]), np.array([[14.0, 0, 0], [2.0, 13.0, 0], [-1.5, 1.0, 15.0]])):
            x = points_in(rng, H, 4000, (-0.5, 1.5))
            np.save(self.path("x.npy"), x)
            for extra in (["--nu", "0.8", "--cutoff", "2.5"], ["--potential", "sw", "--sigma", "1", "--a", "1.8"]):
                for cull in ("on", "off"):
                    with self.subTest(H=H.tolist(), extra=extra, cull=cull):
                        args = ["triplet", "--input", self.path("x.npy"), *extra, "--box", cell_text(H),
                                "--precision", "float64", "--block", "32"]
                        g, g2, c = self.path("g.h5"), self.path("g2.h5"), self.path("c.h5")
                        tdsolve(*args, "--cull", cull, "--backend", "cuda", "--output", g, "--overwrite", check=True)
                        tdsolve(*args, "--cull", cull, "--backend", "cuda", "--output", g2, "--overwrite", np_=2,
                                check=True)
                        # the CPU's culled run (its dense one takes minutes on a few cores)
                        tdsolve(*args, "--cull", "on", "--backend", "cpu", "--output", c, "--overwrite", check=True)
                        with h5py.File(g, "r") as a, h5py.File(g2, "r") as b, h5py.File(c, "r") as cc:
                            self.assertNotEqual(float(cc["energy"][()]), 0.0)
                            for k in ("energy", "energy_per_point", "forces"):
                                self.assertEqual(a[k][()].tobytes(), b[k][()].tobytes(), k)
                                ref = cc[k][()]
                                scale = max(float(np.max(np.abs(ref))), 1e-300)
                                self.assertLessEqual(float(np.max(np.abs(a[k][()] - ref))), 1e-9 * scale, k)


if __name__ == "__main__":
    print(f"test_periodic: seed {SEED} (TDSOLVE_PERIODIC_SEED repeats it)", file=sys.stderr)
    unittest.main()
