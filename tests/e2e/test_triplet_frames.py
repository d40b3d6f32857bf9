"""triplet --frames (issue 30): a three-body energy summed over the frames of
a trajectory in one run, each frame in its own periodic cell: /frame_energy
holds each frame's total, /energy, /energy_per_point and /forces the means
over the frames.

The trajectory is LAMMPS's (test_trajectory's two-type Lennard-Jones liquid,
orthorhombic and triclinic): each frame's ATM energy equals LAMMPS's own
pair_style atm rerun over the same dump (to 1e-10), and a float64 NumPy sum
over every triplet of its nearest-image triangles (to 1e-11, the lattice
frame 0 included). Each frame's energy is the bytes of a one-frame run
(--frame K); an NPT trajectory's frames are each taken in their own cell; 1
and 3 ranks and a culled run give the same file; a run stopped by SIGTERM or
killed by SIGKILL and resumed gives the uninterrupted run's bytes. A
single-frame periodic input now takes its cell (= --box given by hand), and
--box none sums without it. Bad input: one line each, nothing written.
TripletFramesGpuTest: the CUDA backend's energies are the CPU's to 1e-9
(skips without a GPU; fails instead under TDSOLVE_REQUIRE_GPU=1).
"""
import os
import shutil
import signal
import subprocess
import sys
import unittest

import h5py
import numpy as np

from common import TempDirTest, require_gpu, tdsolve
from test_periodic import LMP, nearest_image_pairs, num
from test_triplet import atm_terms
import test_trajectory as tt  # its classes by their module: not run again here
from test_trajectory import BOXES, FRAMES, dump_frames, npt_frames, write_dump

PACKAGE_SRC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../python"))
RC, NU = 2.5, 0.7
ATM = ["--potential", "atm", "--nu", num(NU), "--cutoff", num(RC), "--cutoff-triple", num(RC)]
TAKE = "5::5"  # frames 5, 10, ..., 45 (frame 0: see test_lattice_frame_against_numpy)

RERUN = """units lj
atom_style atomic
atom_modify map array
boundary p p p
lattice fcc 0.8442
region box {region}
create_box 2 box
mass * 1.0
pair_style atm {rc} {rc}
pair_coeff * * * {nu}
neighbor 0.3 bin
neigh_modify one 10000 page 200000
thermo_style custom step pe
thermo_modify norm no format float %.17g
thermo 10
rerun {dump} first 50 every 50 dump x y z box yes add yes
"""


def read(path):
    with h5py.File(path, "r") as f:
        return {k: f[k][()] for k in f if isinstance(f[k], h5py.Dataset)}


def lammps_rerun(case, dump, region):
    """LAMMPS pair_style atm over the dump's steps 50, 100, ..., 450 (frames
    5, 10, ..., 45): {step: energy}."""
    script = os.path.join(case.dir, "rerun.lmp")
    with open(script, "w") as f:
        f.write(RERUN.format(region=region, rc=RC, nu=NU, dump=dump))
    r = subprocess.run([LMP, "-in", script, "-log", "none", "-nocite"], capture_output=True, text=True,
                       timeout=300, cwd=case.dir)
    case.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
    lines = r.stdout.splitlines()
    start = next(i for i, l in enumerate(lines) if l.split()[:2] == ["Step", "PotEng"]) + 1
    out = {}
    for l in lines[start:]:
        w = l.split()
        if len(w) != 2 or not w[0].isdigit():
            break
        out[int(w[0])] = float(w[1])
    return out


def atm_reference(H, x):
    """The ATM energy (NU, cutoff and cutoff_triple RC) of points x in the
    periodic cell H (rows a, b, c), float64: each triangle of nearest-image
    differences within RC once (test_periodic's nearest images, test_triplet's
    ATM terms of the cluster they make)."""
    i, j, d, v = nearest_image_pairs(x, H, vectors=True)
    near = d <= RC
    image = {(a, b): -w for a, b, w in zip(i[near], j[near], v[near])}  # x_b's image less x_a
    neighbours = {}
    for a, b in image:
        neighbours.setdefault(a, []).append(b)
    rows = [(a, b, c) for a, nb in neighbours.items() for m, b in enumerate(nb) for c in nb[m + 1:]
            if (b, c) in image]
    if not rows:
        return 0.0
    a, b, c = (np.array(t) for t in zip(*rows))
    vb = np.array([image[k] for k in zip(a, b)])
    vc = np.array([image[k] for k in zip(a, c)])
    e, *_, p, q, s = atm_terms(np.zeros_like(vb), vb, vc, NU)  # the cluster x_a, its b, its c
    keep = p * q * s <= RC ** 6
    return float(e[keep].sum())


@unittest.skipUnless(LMP, "needs LAMMPS (lmp): the test packages install it")
class TripletFramesTest(TempDirTest):
    @classmethod
    def setUpClass(cls):
        tt.TrajectoryTest.setUpClass.__func__(cls)
        cls.frames = {box: dump_frames(d["plain"]) for box, d in cls.dumps.items()}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)

    def triplet(self, src, out, *extra, ranks=None):
        self.run_ok(["triplet", "--input", src, *ATM, "--precision", "float64", "--output", out, "--overwrite",
                     "--progress", "none", "--quiet", *extra], ranks=ranks)
        return read(out)

    def test_frames_against_lammps_and_one_frame_runs(self):
        """Each frame's energy: LAMMPS pair_style atm (rerun of the same
        dump, its own ghost atoms) to 1e-10, and the bytes of a --frame K
        run; /energy, /energy_per_point, /forces the means of those runs."""
        for box, dumps in self.dumps.items():
            with self.subTest(box=box):
                got = self.triplet(dumps["plain"], self.path(f"{box}.h5"), "--frames", TAKE)
                frames = list(range(FRAMES))[5::5]
                np.testing.assert_array_equal(got["frames"], frames)
                ref = lammps_rerun(self, dumps["plain"], BOXES[box])
                self.assertEqual(sorted(ref), [10 * k for k in frames])
                want = np.array([ref[10 * k] for k in frames])
                np.testing.assert_allclose(got["frame_energy"], want, rtol=1e-10)
                singles = [self.triplet(dumps["plain"], self.path("one.h5"), "--frame", str(k)) for k in frames]
                np.testing.assert_array_equal(got["frame_energy"], [s["energy"] for s in singles])
                for k in ("energy", "energy_per_point", "forces"):
                    mean = np.mean([s[k] for s in singles], axis=0)
                    np.testing.assert_allclose(got[k], mean, rtol=1e-12, atol=1e-12 * np.abs(mean).max())
                with h5py.File(self.path(f"{box}.h5"), "r") as f:
                    self.assertEqual(f["energy"].attrs["frames"], len(frames))
                    self.assertIn("tilt" in f["energy"].attrs, [box == "tri"])
                r = tdsolve("info", self.path(f"{box}.h5"))
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertIn(f"20708500 triplets i<j<k (C(n,3)) in each of {len(frames)} frames", r.stdout)
                self.assertIn("progress:  complete", r.stdout)

    def test_lattice_frame_against_numpy(self):
        """Frames 0 and 25: a float64 NumPy sum over the nearest-image
        triangles. (Frame 0 is the perfect fcc lattice, where LAMMPS's own
        atm, which orders a triplet's atoms by their coordinates, meets exact
        ties between images and sums 1326.65 where every triangle once gives
        1328.67: the reference here is NumPy's.)"""
        for box, dumps in self.dumps.items():
            got = self.triplet(dumps["plain"], self.path("l.h5"), "--frames", "0:26:25")
            for q, k in enumerate((0, 25)):
                with self.subTest(box=box, frame=k):
                    H, x = self.frames[box][k]
                    self.assertAlmostEqual(got["frame_energy"][q], atm_reference(H, x),
                                           delta=1e-11 * abs(got["frame_energy"][q]))

    def test_npt_frames_each_in_its_own_cell(self):
        """Frames whose cell changes (scaled by 1 + 0.03 sin q): each frame's
        energy is a --frame K run's, which takes that frame's cell."""
        frames = npt_frames(self.frames["tri"][:6])
        dump = self.path("npt.dump")
        write_dump(dump, frames, np.ones(len(frames[0][1]), int))
        got = self.triplet(dump, self.path("npt.h5"), "--frames", "::1")
        singles = [self.triplet(dump, self.path("one.h5"), "--frame", str(k))["energy"] for k in range(6)]
        np.testing.assert_array_equal(got["frame_energy"], singles)
        self.assertGreater(np.ptp(singles), 1.0)

    def test_ranks_and_culling_give_the_same_file(self):
        """1 rank = 3 ranks (bytes); culled = dense to rounding (a culled
        run meets a triplet's points in its Morton order, so each triplet's
        energy may round otherwise; test_triplet's bound, 1e-13)."""
        src = self.dumps["ortho"]["plain"]
        one = self.triplet(src, self.path("one.h5"), "--frames", "::7")
        three = self.triplet(src, self.path("three.h5"), "--frames", "::7", ranks=3)
        dense = self.triplet(src, self.path("dense.h5"), "--frames", "::7", "--cull", "off")
        culled = self.triplet(src, self.path("culled.h5"), "--frames", "::7", "--cull", "on")
        for k in ("frame_energy", "energy", "energy_per_point", "forces", "frames"):
            np.testing.assert_array_equal(one[k], three[k], k)
            np.testing.assert_allclose(culled[k], dense[k], rtol=1e-13, atol=1e-13 * np.abs(dense[k]).max(),
                                       err_msg=k)

    def test_stop_kill_and_resume(self):
        """A run stopped by SIGTERM (exit 75) or killed by SIGKILL, then
        --resume: the uninterrupted run's bytes; the stopped file reads as
        incomplete, its frames not summed NaN."""
        rng = np.random.default_rng(3)
        x = rng.random((8, 800, 3)) * 10  # frames x n x 3: ~0.5 s a frame on one thread
        src = self.save_h5("traj.h5", "/x", x)
        args = ["triplet", "--input", src + ":/x", "--frames", "::1", "--precision", "float64", "--backend", "cpu",
                "--progress", "none"]
        ref = self.path("ref.h5")
        self.run_ok([*args, "--output", ref])
        args += ["--threads", "1"]
        want = read(ref)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with self.subTest(signal=sig.name):
                out = self.path(f"{sig.name}.h5")
                rc, err = self.interrupted_run([*args, "--output", out], out, sig)
                self.assertEqual(rc, 75 if sig == signal.SIGTERM else -9, err)
                sys.path.insert(0, PACKAGE_SRC)
                import tdsolve as tdpkg
                with tdpkg.open(out + ".partial", require_complete=False) as r:
                    self.assertFalse(r.complete)
                    e = r.frame_energy  # NaN where the frame is not flagged done
                    self.assertTrue(np.isnan(e).any())
                    done = ~np.isnan(e)
                    np.testing.assert_array_equal(e[done], want["frame_energy"][done])
                self.run_ok([*args, "--output", out, "--resume"])
                got = read(out)
                for k in ("frame_energy", "energy", "energy_per_point", "forces"):
                    np.testing.assert_array_equal(got[k], want[k], k)

    def test_one_frame_takes_the_cell_and_box_none_drops_it(self):
        """--frame K of a periodic dump = --box/--tilt of its cell given by
        hand (bytes); --box none: the open cluster's energy (lower here)."""
        dumps = self.dumps["tri"]
        H, _ = self.frames["tri"][10]
        lx, ly, lz, xy, xz, yz = H[0, 0], H[1, 1], H[2, 2], H[1, 0], H[2, 0], H[2, 1]
        cell = self.triplet(dumps["plain"], self.path("c.h5"), "--frame", "10")
        given = self.triplet(dumps["plain"], self.path("g.h5"), "--frame", "10", "--box",
                             f"{num(lx)},{num(ly)},{num(lz)}", "--tilt", f"{num(xy)},{num(xz)},{num(yz)}")
        for k in ("energy", "energy_per_point", "forces"):
            np.testing.assert_array_equal(cell[k], given[k], k)
        open_cluster = self.triplet(dumps["plain"], self.path("o.h5"), "--frame", "10", "--box", "none")
        self.assertNotEqual(open_cluster["energy"], cell["energy"])

    def test_bad_input(self):
        dump = self.dumps["ortho"]["plain"]
        for args, expect in (
                (["--input", dump, "--frames", "::5", "--nu", "1"], ["--cutoff", "--box none"]),
                (["--input", dump, "--frames", "::5", *ATM, "--store-triplets"], ["--store-triplets", "--frames"]),
                (["--input", dump, "--frames", "::5", "--frame", "3", *ATM], ["--frame", "--frames"]),
                (["--input", dump, "--frames", "60:70", *ATM], ["frames"]),
                (["--generate", "uniform:50:3", "--frames", "::2", *ATM], ["--frames", "--generate"]),
                (["--input", dump, "--frame", "3", *ATM, "--box", "none", "--tilt", "0,0,0"], ["--tilt", "none"]),
                (["--input", dump, "--frames", "::5", "--nu", "1", "--cutoff", "3.5"], ["--cutoff", "third"]),
        ):
            with self.subTest(args=args):
                self.run_bad_command("triplet", args, expect)


class TripletFramesGpuTest(TempDirTest):
    @classmethod
    def setUpClass(cls):
        require_gpu()

    def test_cuda_equals_cpu(self):
        """A periodic trajectory (an H5MD-free frames x n x 3 dataset and a
        --box): CUDA's per-frame energies and means = the CPU's to 1e-9."""
        rng = np.random.default_rng(5)
        x = rng.random((4, 3000, 3)) * 14
        src = self.save_h5("traj.h5", "/x", x) + ":/x"
        outs = {}
        for backend in ("cpu", "cuda"):
            outs[backend] = self.path(f"{backend}.h5")
            r = tdsolve("triplet", "--input", src, "--frames", "::1", *ATM, "--box", "14,14,14", "--precision",
                        "float64", "--backend", backend, "--output", outs[backend], "--progress", "none", "--quiet")
            self.assertEqual(r.returncode, 0, r.stderr)
        cpu, gpu = read(outs["cpu"]), read(outs["cuda"])
        for k in ("frame_energy", "energy", "forces"):
            np.testing.assert_allclose(gpu[k], cpu[k], rtol=1e-9, atol=1e-9 * np.abs(cpu[k]).max(), err_msg=k)


if __name__ == "__main__":
    unittest.main()
