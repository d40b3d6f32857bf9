"""Trajectories as input (issue 30): one frame (--frame) of a LAMMPS dump,
an extended XYZ file, an H5MD file or an HDF5 dataset frames × n × d; hist
taking the frame's periodic cell as its box; hist --frames binning many
frames in one run (--per-frame: each frame's counts too).

The files come from the tools a user has them from: LAMMPS writes the dumps
(a Lennard-Jones liquid of two types, 50 frames, orthorhombic and
triclinic, plain, scaled and its own `dump atom` and `dump xyz`; a
shuffled copy), MDAnalysis writes the H5MD file and a plain XYZ one; the
extended XYZ file is written here from the dump's own numbers. The counts
are checked exactly against a float64 NumPy nearest-image reference (over
the 27 neighbouring images), and against MDAnalysis's InterRDF on the same
frames to float32 agreement (MDAnalysis holds coordinates and the cell as
float32). Bad input: one error line each, nothing written.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import warnings

import h5py
import numpy as np

from common import TempDirTest, chunk_done, require_gpu, tdsolve
from test_periodic import HAVE_MDA, LMP, nearest_image_pairs

PACKAGE_SRC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../python"))
if PACKAGE_SRC not in sys.path:
    sys.path.insert(0, PACKAGE_SRC)
import tdsolve as tdsolve_package  # noqa: E402  the reader (python/)

if HAVE_MDA:  # test_periodic imported them (the test packages install python3-mdanalysis)
    import MDAnalysis
    from MDAnalysis.analysis.rdf import InterRDF

FRAMES = 50  # dumped every 10 steps from step 0

LAMMPS = """units lj
atom_style atomic
lattice fcc 0.8442
region box {region}
create_box 2 box
create_atoms 1 box
set type 1 type/fraction 2 0.3 12345
mass * 1.0
velocity all create 1.5 87287 loop geom
pair_style lj/cut 2.5
pair_coeff * * 1.0 1.0 2.5
neighbor 0.3 bin
fix 1 all nve
dump plain all custom 10 plain.dump id type x y z
dump_modify plain sort id format float %.17g
dump scaled all custom 10 scaled.dump id type xs ys zs
dump_modify scaled sort id format float %.17g
dump atom all atom 10 atom.dump
dump xyz all xyz 10 lammps.xyz
dump_modify xyz sort id
run {steps}
"""
BOXES = {"ortho": "block 0 5 0 5 0 5", "tri": "prism 0 5 0 5 0 5 0.6 0.3 -0.4"}


def dump_frames(path):
    """Every frame of a LAMMPS text dump as (cell H, rows a, b, c; points
    in id order), in float64, parsed here: the reference's own reading."""
    with open(path) as f:
        lines = f.read().splitlines()
    frames = []
    for s in (i for i, l in enumerate(lines) if l == "ITEM: TIMESTEP"):
        n = int(lines[s + 3])
        b = [list(map(float, lines[s + 5 + a].split())) for a in range(3)]
        xy, xz, yz = (b[0][2], b[1][2], b[2][2]) if len(b[0]) == 3 else (0.0, 0.0, 0.0)
        lx = (b[0][1] - max(0.0, xy, xz, xy + xz)) - (b[0][0] - min(0.0, xy, xz, xy + xz))
        ly = (b[1][1] - max(0.0, yz)) - (b[1][0] - min(0.0, yz))
        lz = b[2][1] - b[2][0]
        cols = lines[s + 8].split()[2:]
        rows = np.array([[float(v) for v in l.split()] for l in lines[s + 9:s + 9 + n]])
        x = rows[np.argsort(rows[:, cols.index("id")])][:, [cols.index(c) for c in ("x", "y", "z")]]
        frames.append((np.array([[lx, 0, 0], [xy, ly, 0], [xz, yz, lz]]), x))
    return frames


def write_dump(path, frames, types):
    """frames [(H, x)] as a LAMMPS text dump (`id type x y z`, %.17g; a
    tilted cell's bounds and tilts as LAMMPS writes them)."""
    with open(path, "w") as f:
        for step, (H, x) in enumerate(frames):
            (lx, _, _), (xy, ly, _), (xz, yz, lz) = H
            f.write(f"ITEM: TIMESTEP\n{step}\nITEM: NUMBER OF ATOMS\n{len(x)}\n")
            if xy or xz or yz:
                f.write("ITEM: BOX BOUNDS xy xz yz pp pp pp\n")
                f.write(f"{min(0.0, xy, xz, xy + xz)!r} {lx + max(0.0, xy, xz, xy + xz)!r} {xy!r}\n")
                f.write(f"{min(0.0, yz)!r} {ly + max(0.0, yz)!r} {xz!r}\n0.0 {lz!r} {yz!r}\n")
            else:
                f.write(f"ITEM: BOX BOUNDS pp pp pp\n0.0 {lx!r}\n0.0 {ly!r}\n0.0 {lz!r}\n")
            f.write("ITEM: ATOMS id type x y z\n")
            for i, (p, t) in enumerate(zip(x, types)):
                f.write(f"{i + 1} {t} {p[0]!r} {p[1]!r} {p[2]!r}\n")


def npt_frames(frames):
    """The frames as an NPT run's: frame q's cell and points scaled by
    1 + 0.03 sin(q) (every cell's shortest half-width stays above 3.5)."""
    return [(H * (1 + 0.03 * np.sin(q)), x * (1 + 0.03 * np.sin(q))) for q, (H, x) in enumerate(frames)]


def reference_counts(frames, bins=24, hi=3.5):
    """numpy.histogram of the float64 nearest-image distances, summed over frames."""
    return sum(np.histogram(nearest_image_pairs(x, H)[2], bins, (0, hi))[0] for H, x in frames)


def hist_args(path, out, *extra, bins=24, hi=3.5):
    return ["hist", "--input", path, "--bins", bins, "--range", f"0:{hi}", "--output", out, "--precision",
            "float64", "--progress", "none", "--quiet", *extra]


@unittest.skipUnless(LMP, "needs LAMMPS (lmp): the test packages install it")
class TrajectoryTest(TempDirTest):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="tdsolve_traj_")
        cls.dumps = {}
        for name, region in BOXES.items():
            d = os.path.join(cls.root, name)
            os.makedirs(d)
            with open(os.path.join(d, "in.lj"), "w") as f:
                f.write(LAMMPS.format(region=region, steps=10 * (FRAMES - 1)))
            r = subprocess.run([LMP, "-in", "in.lj", "-log", "none", "-nocite", "-screen", "none"], cwd=d,
                               capture_output=True, text=True, timeout=300)
            assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
            cls.dumps[name] = {k: os.path.join(d, f"{k}.dump") for k in ("plain", "scaled", "atom")}
            cls.dumps[name]["xyz"] = os.path.join(d, "lammps.xyz")
            # The atoms of each frame in another order (LAMMPS on one
            # process writes them in id order, unsorted or not).
            with open(cls.dumps[name]["plain"]) as f:
                lines = f.read().splitlines()
            rng = np.random.default_rng(7)
            for i, line in enumerate(lines):
                if line.startswith("ITEM: ATOMS"):
                    n = int(lines[i - 5])
                    lines[i + 1:i + 1 + n] = [lines[i + 1 + k] for k in rng.permutation(n)]
            cls.dumps[name]["unsorted"] = os.path.join(d, "unsorted.dump")
            with open(cls.dumps[name]["unsorted"], "w") as f:
                f.write("\n".join(lines) + "\n")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)

    def counts(self, out):
        with h5py.File(out, "r") as f:
            c = f["counts"]
            return c[()], f["rdf"][()] if "rdf" in f else None, dict(c.attrs), dict(f.attrs)

    def universe(self, path, fmt, **kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return MDAnalysis.Universe(path, format=fmt, **kw)

    def interrdf(self, u, frame, bins=24, hi=3.5):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = InterRDF(u.atoms, u.atoms, nbins=bins, range=(0, hi), exclusion_block=(1, 1))
            r.run(start=frame, stop=frame + 1)
        return r.results.count, r.results.rdf

    def assert_float32_agreement(self, counts, rdf, count, ref):
        """MDAnalysis reads coordinates and the cell as float32 (its cell as
        lengths and angles): a pair within float32 rounding of a bin edge
        may fall on the other side. Such pairs are rare: at most 2 a bin
        and 1 in 10^4 of the pairs move."""
        moved = np.abs(counts * 2 - count)
        self.assertLessEqual(moved.max(), 4, (counts * 2, count))
        self.assertLessEqual(moved.sum(), max(4, 2e-4 * count.sum()))
        np.testing.assert_allclose(rdf, ref, rtol=2e-3, atol=1e-9)

    @unittest.skipUnless(HAVE_MDA, "needs MDAnalysis (python3-mdanalysis)")
    def test_dump_frames_against_interrdf(self):
        """Frames 0, 3 and -1 of each dump, with the dump's cell as the box:
        counts = numpy.histogram of the float64 nearest-image distances
        exactly, and InterRDF's count / 2 and rdf to float32 agreement."""
        for box, dumps in self.dumps.items():
            u = self.universe(dumps["plain"], "LAMMPSDUMP")
            self.assertEqual(len(u.trajectory), FRAMES)
            frames = dump_frames(dumps["plain"])
            for frame in (0, 3, -1):
                out = self.path(f"{box}{frame}.h5")
                self.run_ok(hist_args(dumps["plain"], out, "--frame", frame))
                counts, rdf, attrs, root = self.counts(out)
                count, ref = self.interrdf(u, frame % FRAMES)
                with self.subTest(box=box, frame=frame):
                    self.assertGreater(counts.sum(), 1000)
                    np.testing.assert_array_equal(counts, reference_counts([frames[frame]]))
                    self.assert_float32_agreement(counts, rdf, count, ref)
                    self.assertEqual(root["input"], f"{dumps['plain']}, frame {frame % FRAMES}")
                    self.assertEqual("tilt" in attrs, box == "tri")

    def test_unsorted_dump_reads_in_id_order(self):
        """A dump not sorted by id reads as the sorted one: edm's bytes."""
        for box, dumps in self.dumps.items():
            outs = []
            for kind in ("plain", "unsorted"):
                out = self.path(f"{box}-{kind}.h5")
                self.run_ok(["edm", "--input", dumps[kind], "--frame", 5, "--output", out, "--precision",
                             "float64", "--quiet", "--store-points"])
                with h5py.File(out, "r") as f:
                    outs.append((f["distances"][()], f["points"][()]))
            with open(dumps["unsorted"]) as f:
                lines = f.read().splitlines()
            first = lines.index("ITEM: ATOMS id type x y z") + 1
            ids = [int(l.split()[0]) for l in lines[first:first + 20]]
            self.assertNotEqual(ids, sorted(ids), "LAMMPS wrote this dump in id order: the test shows nothing")
            np.testing.assert_array_equal(outs[0][0], outs[1][0])
            np.testing.assert_array_equal(outs[0][1], outs[1][1])

    def test_cross_with_a_frame(self):
        """cross: --frame picks --input's frame, and --with's when that is a
        trajectory too; a --with of one point set is read as it is."""
        from scipy.spatial.distance import cdist
        dump = self.dumps["ortho"]["plain"]
        x = dump_frames(dump)[2][1]
        ref = self.save_npy("ref.npy", np.random.default_rng(5).random((7, 3)) * 8)
        for with_, other in ((ref, np.load(ref)), (dump, x)):
            out = self.path("c.h5")
            self.run_ok(["cross", "--input", dump, "--frame", 2, "--with", with_, "--precision", "float64",
                         "--output", out, "--overwrite", "--quiet"])
            with h5py.File(out, "r") as f:
                np.testing.assert_array_equal(f["distances"][()], cdist(x, other))

    def test_lammps_dump_atom_and_xyz(self):
        """LAMMPS's own `dump atom` (scaled coordinates, 6 significant
        digits) and `dump xyz` (no cell, in the box's frame of reference):
        the plain dump's points to their printed precision, and the XYZ file
        has no cell (hist without a box)."""
        for box, dumps in self.dumps.items():
            pts = {}
            for kind in ("plain", "atom", "xyz"):
                out = self.path(f"{box}-{kind}.h5")
                self.run_ok(["edm", "--input", dumps[kind], "--frame", 4, "--output", out, "--precision",
                             "float64", "--quiet", "--store-points"])
                with h5py.File(out, "r") as f:
                    pts[kind] = f["points"][()]
            with self.subTest(box=box):
                np.testing.assert_allclose(pts["atom"], pts["plain"], atol=1e-4)
                np.testing.assert_allclose(pts["xyz"], pts["plain"], atol=1e-4)
                out = self.path(f"{box}-xyz-hist.h5")
                self.run_ok(hist_args(dumps["xyz"], out, "--frame", 4))
                self.assertIsNone(self.counts(out)[1])

    def test_scaled_coordinates(self):
        """xs ys zs are the cell's fractions: the points are the plain dump's
        to the scaled values' rounding (LAMMPS writes them from the same
        positions), and the counts agree but for pairs at a bin edge."""
        for box, dumps in self.dumps.items():
            pts = []
            for kind in ("plain", "scaled"):
                out = self.path(f"{box}-{kind}.h5")
                self.run_ok(["edm", "--input", dumps[kind], "--frame", 2, "--output", out, "--precision",
                             "float64", "--quiet", "--store-points"])
                with h5py.File(out, "r") as f:
                    pts.append(f["points"][()])
            np.testing.assert_allclose(pts[1], pts[0], atol=1e-12)

    @unittest.skipUnless(HAVE_MDA, "needs MDAnalysis (python3-mdanalysis)")
    def test_h5md_written_by_mdanalysis(self):
        """MDAnalysis's H5MD writer (box/edges/value per frame, boundary
        periodic): hist on it = InterRDF on it; the file and its particles
        group name the same frames."""
        for box, dumps in self.dumps.items():
            u = self.universe(dumps["plain"], "LAMMPSDUMP")
            h5md = self.path(f"{box}.h5md")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with MDAnalysis.Writer(h5md, n_atoms=u.atoms.n_atoms, convert_units=False) as w:
                    for _ in u.trajectory:
                        w.write(u.atoms)
                w.h5md_file.close()  # MDAnalysis 2.4's H5MDWriter leaves it open (to be flushed at exit)
            v = self.universe(dumps["plain"], "LAMMPSDUMP")
            v.load_new(h5md, format="H5MD", convert_units=False)
            for frame, spec in ((4, h5md), (-2, h5md + ":/particles/trajectory")):
                out = self.path(f"{box}-h5md{frame}.h5")
                self.run_ok(hist_args(spec, out, "--frame", frame))
                counts, rdf, attrs, _ = self.counts(out)
                count, ref = self.interrdf(v, frame % FRAMES)
                with self.subTest(box=box, frame=frame):
                    self.assert_float32_agreement(counts, rdf, count, ref)

    def test_extended_xyz_and_hdf5_frames(self):
        """The dump's numbers as extended XYZ (Lattice, Properties, pbc) and
        as an HDF5 dataset frames × n × 3 with the box given: the dump's
        counts, bit for bit; a plain XYZ (MDAnalysis writes one) has no
        cell, so the hist has no box and --box gives it."""
        dumps = self.dumps["tri"]
        frames = []
        with open(dumps["plain"]) as f:
            lines = f.read().splitlines()
        starts = [i for i, l in enumerate(lines) if l == "ITEM: TIMESTEP"]
        for s in starts:
            n = int(lines[s + 3])
            lo_hi = [list(map(float, lines[s + 5 + a].split())) for a in range(3)]
            x = np.array([[float(v) for v in l.split()[2:5]] for l in lines[s + 9:s + 9 + n]])
            frames.append((lo_hi, x))
        xyz = self.path("tri.extxyz")
        with open(xyz, "w") as f:
            for lo_hi, x in frames:
                xy, xz, yz = lo_hi[0][2], lo_hi[1][2], lo_hi[2][2]
                xlo = lo_hi[0][0] - min(0.0, xy, xz, xy + xz)
                xhi = lo_hi[0][1] - max(0.0, xy, xz, xy + xz)
                ylo, yhi = lo_hi[1][0] - min(0.0, yz), lo_hi[1][1] - max(0.0, yz)
                zlo, zhi = lo_hi[2][0], lo_hi[2][1]
                cell = [xhi - xlo, 0, 0, xy, yhi - ylo, 0, xz, yz, zhi - zlo]
                f.write(f"{len(x)}\nLattice=\"{' '.join(repr(float(v)) for v in cell)}\" "
                        "Properties=species:S:1:pos:R:3:id:I:1 pbc=\"T T T\" Time=1.5\n")
                for i, p in enumerate(x):
                    f.write(f"Ar {p[0]!r} {p[1]!r} {p[2]!r} {i + 1}\n")
        out_dump, out_xyz = self.path("d.h5"), self.path("x.h5")
        self.run_ok(hist_args(dumps["plain"], out_dump, "--frame", 6))
        self.run_ok(hist_args(xyz, out_xyz, "--frame", 6))
        a, b = self.counts(out_dump), self.counts(out_xyz)
        np.testing.assert_array_equal(a[0], b[0])
        self.assertEqual((a[2]["box"], a[2]["tilt"]), (b[2]["box"], b[2]["tilt"]))

        stack = self.path("stack.h5")
        with h5py.File(stack, "w") as f:
            f["pos"] = np.stack([x for _, x in frames])
        out_stack = self.path("s.h5")
        self.run_ok(hist_args(stack + ":/pos", out_stack, "--frame", 6, "--box", a[2]["box"], "--tilt",
                              a[2]["tilt"]))
        np.testing.assert_array_equal(self.counts(out_stack)[0], a[0])

        if HAVE_MDA:  # a plain XYZ: no cell, no box; its points are MDAnalysis's float32 positions
            u = self.universe(dumps["plain"], "LAMMPSDUMP")
            plain = self.path("plain.xyz")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with MDAnalysis.Writer(plain, n_atoms=u.atoms.n_atoms) as w:
                    for _ in u.trajectory:
                        w.write(u.atoms)
            out = self.path("p.h5")
            self.run_ok(hist_args(plain, out, "--frame", 1))
            counts, rdf, attrs, _ = self.counts(out)
            self.assertIsNone(rdf)
            self.assertNotIn("box", attrs)
            from scipy.spatial.distance import pdist
            u.trajectory[1]
            d = pdist(np.round(u.atoms.positions.astype(np.float64), 5))
            np.testing.assert_array_equal(counts, np.histogram(d, 24, (0, 3.5))[0])

    def test_box_none_and_notes(self):
        """--box none bins without the cell; a command that does not take
        the cell says so; a dump whose cell is not periodic everywhere is
        binned without a box, with a note."""
        dumps = self.dumps["ortho"]
        out = self.path("nobox.h5")
        self.run_ok(hist_args(dumps["plain"], out, "--frame", 0, "--box", "none"))
        self.assertIsNone(self.counts(out)[1])
        r = tdsolve("knn", "--input", dumps["plain"], "--frame", 0, "--k", 3, "--output", self.path("k.h5"),
                    "--progress", "none")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("has a periodic cell; tdsolve knn does not apply it", r.stderr)
        with open(dumps["plain"]) as f:
            text = f.read().replace("BOX BOUNDS pp pp pp", "BOX BOUNDS pp ff pp")
        ff = self.path("ff.dump")
        with open(ff, "w") as f:
            f.write(text)
        out = self.path("ff.h5")
        r = tdsolve(*[a for a in hist_args(ff, out, "--frame", 0) if a != "--quiet"])  # the note
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("not periodic on every axis (boundaries pp ff pp)", r.stderr)
        self.assertIsNone(self.counts(out)[1])

    def test_bad_input(self):
        dumps = self.dumps["ortho"]
        with open(dumps["plain"]) as f:
            text = f.read()
        first = text.index("ITEM: TIMESTEP", 1)

        def write(name, content):
            p = self.path(name)
            with open(p, "w") as f:
                f.write(content)
            return p

        no_xyz = write("nocoords.dump", text.replace("ITEM: ATOMS id type x y z", "ITEM: ATOMS id type vx vy vz"))
        # frame 1 loses its last atom: "changing atom counts"
        frame1 = text[first:text.index("ITEM: TIMESTEP", first + 1)]
        lines = frame1.splitlines()
        lines[3] = str(int(lines[3]) - 1)
        fewer = write("fewer.dump", text[:first] + "\n".join(lines[:-1]) + "\n" + text[first + len(frame1):])
        short = write("short.dump", text[:first] + "\n".join(frame1.splitlines()[:40]) + "\n")
        h5 = self.path("two.h5")
        with h5py.File(h5, "w") as f:
            f.create_group("h5md")
            for g in ("a", "b"):
                f[f"particles/{g}/position/value"] = np.zeros((2, 5, 3))
        skew = write("skew.extxyz", '2\nLattice="5 1 0 0 5 0 0 0 5" pbc="T T T"\nAr 0 0 0\nAr 1 1 1\n')
        cases = [
            (["--input", no_xyz, "--frame", 0], ["nocoords.dump", "no coordinates"]),
            (["--input", fewer, "--frame", 1], ["fewer.dump", "frame 1 has", "atoms where frame 0 has"]),
            (["--input", short, "--frame", 1], ["short.dump", "ends after"]),
            (["--input", dumps["plain"], "--frame", FRAMES], ["out of range", f"holds {FRAMES} frames"]),
            (["--input", dumps["plain"], "--frame", -FRAMES - 1], ["out of range"]),
            (["--input", dumps["plain"]], [f"holds {FRAMES} frames", "--frame K"]),
            (["--input", h5, "--frame", 0], ["2 particle groups", "/particles/a", "/particles/b"]),
            (["--input", skew], ["Lattice", "b in the xy plane"]),
            (["--input", dumps["plain"], "--frame", 0, "--metric", "cosine"], ["periodic cell", "--box none"]),
            (["--input", dumps["plain"], "--frame", 0, "--range", "0:3"], []),  # not an error: see below
        ]
        for args, expect in cases[:-1]:
            with self.subTest(args=args):
                base = ["--bins", 10] + (["--range", "0:2"] if "--range" not in args else [])
                self.run_bad_command("hist", [*args, *base], expect=expect)
        # --frame on a file of one point set, and with --generate
        pts = self.save_npy("p.npy", np.random.default_rng(1).random((20, 3)))
        self.run_bad_command("edm", ["--input", pts, "--frame", 0], expect=["--frame applies to a trajectory"])
        self.run_bad_command("edm", ["--generate", "uniform:20:3", "--frame", 0], expect=["--frame", "--generate"])
        # a triclinic frame's cell and a range past half its width
        self.run_bad_command("hist", ["--input", self.dumps["tri"]["plain"], "--frame", 0, "--bins", 10, "--range",
                                      "0:8"], expect=["triclinic cell", "half the shortest width"])


def shell_density(edges, n, volume, frames):
    """What /rdf divides the counts by (docs/usage.md): F (4/3)π(e[b+1]³ − e[b]³) n(n−1)/(2V)."""
    return frames * 4.0 / 3.0 * np.pi * np.diff(edges ** 3) * n * (n - 1) / (2 * volume)


@unittest.skipUnless(LMP, "needs LAMMPS (lmp): the test packages install it")
class FramesTest(TempDirTest):
    """hist --frames: the frames of a trajectory into one histogram in one
    run: the sum of the frames' float64 nearest-image histograms exactly,
    InterRDF over the same frames to float32 agreement, the same bytes on 1
    and 3 ranks and culled or not; stopped (SIGTERM) or killed (SIGKILL)
    and resumed: the uninterrupted run's counts."""

    @classmethod
    def setUpClass(cls):
        TrajectoryTest.setUpClass.__func__(cls)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)

    def counts(self, out):
        return TrajectoryTest.counts(self, out)

    def test_frames_against_reference_and_interrdf(self):
        for box, dumps in self.dumps.items():
            frames = dump_frames(dumps["plain"])
            u = TrajectoryTest.universe(self, dumps["plain"], "LAMMPSDUMP") if HAVE_MDA else None
            for sel, sl in ((f"0:{FRAMES}", slice(0, FRAMES)), ("::3", slice(None, None, 3)),
                            ("-4:", slice(-4, None)), ("5:1:-2", slice(5, 1, -2))):
                out = self.path(f"{box}-{sel.replace(':', '_')}.h5")
                r = tdsolve(*hist_args(dumps["plain"], out, "--frames", sel, "--per-frame"))
                self.assertEqual(r.returncode, 0, r.stderr)
                taken = list(range(FRAMES))[sl]
                counts, rdf, attrs, root = self.counts(out)
                with h5py.File(out, "r") as f:
                    edges, listed, rows = f["edges"][()], f["frames"][()], f["frame_counts"][()]
                with self.subTest(box=box, frames=sel):
                    # --per-frame: each frame's own histogram, in the run's order
                    np.testing.assert_array_equal(rows, [reference_counts([frames[k]]) for k in taken])
                    self.assertEqual(listed.tolist(), taken)
                    self.assertEqual(attrs["frames"], len(taken))
                    self.assertEqual(root["input"], f"{dumps['plain']}, frames {sel}")
                    np.testing.assert_array_equal(counts, reference_counts([frames[k] for k in taken]))
                    volume = abs(np.linalg.det(frames[0][0]))
                    np.testing.assert_allclose(rdf, counts / shell_density(edges, 500, volume, len(taken)),
                                               rtol=1e-12)
                    self.assertEqual(tdsolve("info", out).returncode, 0)
                    with tdsolve_package.open(out) as res:  # the Python reader
                        self.assertEqual(res.frames.tolist(), taken)
                        self.assertEqual(res.pairs, len(taken) * 500 * 499 // 2)
                        np.testing.assert_array_equal(res.counts, counts)
                    if u is not None and sl.step != -2:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            ref = InterRDF(u.atoms, u.atoms, nbins=24, range=(0, 3.5), exclusion_block=(1, 1))
                            ref.run(*sl.indices(FRAMES))
                        TrajectoryTest.assert_float32_agreement(self, counts, rdf, ref.results.count,
                                                                ref.results.rdf)

    def test_npt_frames_in_their_own_cells(self):
        """A cell a frame (an NPT run's, orthorhombic and triclinic): the
        counts are the sum of each frame's float64 nearest-image histogram
        in its own cell, /rdf divides by the frames' mean volume (its
        `volume` attribute), as InterRDF computes it over the same frames."""
        for box, dumps in self.dumps.items():
            frames = npt_frames(dump_frames(dumps["plain"])[::5])
            path = self.path(f"npt-{box}.dump")
            write_dump(path, frames, np.ones(500, int))
            out = self.path(f"npt-{box}.h5")
            self.run_ok(hist_args(path, out, "--frames", "::", "--per-frame"))
            counts, rdf, attrs, _ = self.counts(out)
            with h5py.File(out, "r") as f:
                edges, rows, volume = f["edges"][()], f["frame_counts"][()], f["rdf"].attrs["volume"]
            with self.subTest(box=box):
                volumes = [abs(np.linalg.det(H)) for H, _ in frames]
                self.assertGreater(max(volumes) / min(volumes), 1.1)
                np.testing.assert_array_equal(rows, [reference_counts([fr]) for fr in frames])
                np.testing.assert_array_equal(counts, reference_counts(frames))
                self.assertAlmostEqual(volume / np.mean(volumes), 1.0, places=13)
                np.testing.assert_allclose(rdf, counts / shell_density(edges, 500, volume, len(frames)), rtol=1e-12)
                if HAVE_MDA:
                    u = TrajectoryTest.universe(self, path, "LAMMPSDUMP")
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        ref = InterRDF(u.atoms, u.atoms, nbins=24, range=(0, 3.5), exclusion_block=(1, 1)).run()
                    TrajectoryTest.assert_float32_agreement(self, counts, rdf, ref.results.count, ref.results.rdf)

    def test_ranks_and_culling_give_the_same_bytes(self):
        dumps = self.dumps["tri"]
        runs = {}
        for name, extra, ranks in (("one", ["--cull", "off"], None), ("three", ["--cull", "off"], 3),
                                   ("culled", ["--cull", "on"], 3), ("float32", [], None)):
            out = self.path(f"{name}.h5")
            args = hist_args(dumps["plain"], out, "--frames", "1:8:2", *extra)
            if name == "float32":
                args[args.index("float64")] = "float32"
            r = tdsolve(*args, np_=ranks)
            self.assertEqual(r.returncode, 0, r.stderr)
            runs[name] = self.counts(out)
        for name in ("three", "culled"):
            np.testing.assert_array_equal(runs[name][0], runs["one"][0])
            self.assertEqual(runs[name][1].tobytes(), runs["one"][1].tobytes())
        # float32 coordinates differences: the counts of the same pairs, but
        # for those within float32 rounding of an edge
        self.assertLessEqual(np.abs(runs["float32"][0] - runs["one"][0]).sum(), 8)

    def stack(self, frames=120, n=3000, seed=3):
        path = self.path("stack.h5")
        with h5py.File(path, "w") as f:
            f["pos"] = np.random.default_rng(seed).random((frames, n, 3)) * 10
        return path + ":/pos"

    def stack_args(self, spec, out):
        return ["hist", "--input", spec, "--frames", "::", "--per-frame", "--bins", 50, "--range", "0:4", "--box",
                "10,10,10", "--cull", "off", "--precision", "float64", "--output", out, "--progress", "none",
                "--quiet"]

    def test_stopped_and_killed_runs_resume_to_the_same_counts(self):
        import signal
        spec = self.stack()
        whole = self.path("whole.h5")
        r = tdsolve(*self.stack_args(spec, whole))
        self.assertEqual(r.returncode, 0, r.stderr)
        expect = self.counts(whole)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            out = self.path(f"cut{int(sig)}.h5")
            rc, err = self.interrupted_run(self.stack_args(spec, out), out, sig,
                                           ready=chunk_done(out + ".partial"), TDSOLVE_TEST_CHECKPOINT_S="0.001")
            with self.subTest(signal=sig):
                if sig == signal.SIGTERM:
                    self.assertEqual(rc, 75, err)
                    self.assertIn("stopped cleanly (SIGTERM)", err)
                with h5py.File(out + ".partial", "r") as f:
                    done = int(f["progress/done"][()].sum())
                self.assertTrue(0 < done < 120, f"{done} of 120 frames done: the stop came too early or late")
                r = tdsolve(*self.stack_args(spec, out), "--resume")
                self.assertEqual(r.returncode, 0, r.stderr)
                got = self.counts(out)
                np.testing.assert_array_equal(got[0], expect[0])
                self.assertEqual(got[1].tobytes(), expect[1].tobytes())
                with h5py.File(out, "r") as f, h5py.File(whole, "r") as g:  # every frame's row, kept or new
                    np.testing.assert_array_equal(f["frame_counts"][()], g["frame_counts"][()])
        # another selection is another job: its .partial is not resumed into
        out = self.path("cut15.h5")
        r = tdsolve(*[a if a != "::" else "0:60" for a in self.stack_args(spec, out)], "--resume")
        self.assertNotEqual(r.returncode, 0)

    def test_bad_frames(self):
        dumps = self.dumps["ortho"]
        with open(dumps["plain"]) as f:
            text = f.read()
        # frame 2's cell is not periodic along y where frame 0's is
        starts = [i for i in range(len(text)) if text.startswith("ITEM: TIMESTEP", i)]
        head = text[starts[2]:starts[3]].splitlines()
        head[4] = head[4].replace("pp pp pp", "pp ff pp")
        open_y = self.path("open_y.dump")
        with open(open_y, "w") as f:
            f.write(text[:starts[2]] + "\n".join(head) + "\n" + text[starts[3]:])
        pts = self.path("p.npy")
        np.save(pts, np.random.default_rng(1).random((20, 3)))
        base = ["--bins", 10, "--range", "0:2"]
        self.run_bad_command("hist", ["--input", open_y, "--frames", "0:5", *base],
                             expect=["frame 2", "no periodic cell", "periodic cells throughout", "--box"])
        # a frame's cell too small for the range (NPT): refused before the run
        head = text[starts[3]:starts[4]].splitlines()
        head[5:8] = [f"0 {0.3 * float(l.split()[1])!r}" for l in head[5:8]]
        small = self.path("small.dump")
        with open(small, "w") as f:
            f.write(text[:starts[3]] + "\n".join(head) + "\n" + text[starts[4]:])
        self.run_bad_command("adf", ["--input", small, "--frames", "0:5", "--bins", 10, "--cutoff", 1.5],
                             expect=["frame 3", "half the shortest width"])
        # frame 3 loses its last atom: refused before the file exists
        head = text[starts[3]:starts[4]].splitlines()
        head[3] = str(int(head[3]) - 1)
        fewer = self.path("fewer.dump")
        with open(fewer, "w") as f:
            f.write(text[:starts[3]] + "\n".join(head[:-1]) + "\n" + text[starts[4]:])
        for sel in ("0:5", "::3"):  # ::3 takes frame 3 too (and the XYZ and HDF5 paths have one count)
            self.run_bad_command("hist", ["--input", fewer, "--frames", sel, *base],
                                 expect=["frame 3", "499 atoms where its frame 0 has 500", "one set of atoms"])
        self.run_bad_command("hist", ["--input", dumps["plain"], "--frames", f"{FRAMES}:{FRAMES + 10}", *base],
                             expect=["selects none", f"{FRAMES} frames"])
        self.run_bad_command("hist", ["--input", dumps["plain"], "--frames", "3", *base],
                             expect=["START:STOP"])
        self.run_bad_command("hist", ["--input", dumps["plain"], "--frames", "0:4:0", *base],
                             expect=["STEP must not be 0"])
        self.run_bad_command("hist", ["--input", dumps["plain"], "--frames", "0:4", "--frame", 1, *base],
                             expect=["--frame", "--frames"])
        self.run_bad_command("hist", ["--input", pts, "--frames", "0:4", *base],
                             expect=["--frames applies to a trajectory"])
        self.run_bad_command("hist", ["--generate", "uniform:20:3", "--frames", "0:4", *base],
                             expect=["--frames", "--generate"])
        self.run_bad_command("hist", ["--input", dumps["plain"], "--frame", 1, "--per-frame", *base],
                             expect=["--per-frame goes with --frames"])
        # a fixed --box bins the changing cells in one box
        out = self.path("boxed.h5")
        r = tdsolve(*hist_args(small, out, "--frames", "0:5", "--box", "5,5,5"))
        self.assertEqual(r.returncode, 0, r.stderr)


class FramesGpuTest(TempDirTest):
    """hist --frames on the CUDA backend (skips without a GPU; fails instead
    under TDSOLVE_REQUIRE_GPU=1): the CPU's bytes, float32 and float64,
    culled and dense, on H5MD files written here with h5py (the GPU machine
    has no LAMMPS): a fixed triclinic cell, and a cell a frame (NPT)."""

    @classmethod
    def setUpClass(cls):
        require_gpu()

    def test_gpu_frames_are_the_cpus_bytes(self):
        rng = np.random.default_rng(11)
        H = np.array([[12.0, 0, 0], [1.5, 11.0, 0], [-1.0, 0.8, 12.5]])
        frames, n = 12, 6000
        x = (rng.random((frames, n, 3)) @ H)
        scale = 1 + 0.03 * np.sin(np.arange(frames))  # NPT: frame q's cell and points scaled
        for cells in ("fixed", "npt"):
            path = self.path(f"t-{cells}.h5")
            with h5py.File(path, "w") as f:
                f.create_group("h5md").attrs["version"] = [1, 1]
                g = f.create_group("particles/all")
                if cells == "fixed":
                    g["position/value"] = x
                    g["box/edges"] = H
                else:
                    g["position/value"] = x * scale[:, None, None]
                    g["box/edges/value"] = H[None] * scale[:, None, None]
                    g["box/edges/step"] = np.arange(frames)
                g["box"].attrs["dimension"] = 3
                g["box"].attrs["boundary"] = np.array([b"periodic"] * 3)
            for precision in ("float32", "float64"):
                for cull in ("on", "off"):
                    outs = []
                    for backend in ("cpu", "cuda"):
                        out = self.path(f"{cells}-{precision}-{cull}-{backend}.h5")
                        r = tdsolve("hist", "--input", path, "--frames", "1::2", "--bins", 40, "--range", "0:5",
                                    "--precision", precision, "--cull", cull, "--backend", backend, "--output",
                                    out, "--quiet")
                        self.assertEqual(r.returncode, 0, r.stderr)
                        with h5py.File(out, "r") as f:
                            outs.append({k: f[k][()].tobytes() for k in ("counts", "rdf", "underflow", "overflow")})
                            self.assertEqual(f["frames"][()].tolist(), list(range(1, frames, 2)))
                    with self.subTest(cells=cells, precision=precision, cull=cull):
                        self.assertEqual(outs[0], outs[1])


if __name__ == "__main__":
    unittest.main()
