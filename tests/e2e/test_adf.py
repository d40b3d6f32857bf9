"""Bond-angle distributions: tdsolve adf against LAMMPS `compute adf`.

For each centre atom i of a type in I, LAMMPS takes its neighbours j ≠ i
(nearest image) with Rin² <= r² <= Rout² whose type is in J (the J list),
likewise the K list, and counts each unordered pair {j, k} once when it can
be ordered as (J member, K member), at the bin of cs = (d_ij · d_ik) (1/r_ij)
(1/r_ik): (int) ((cs + 1) bins / 2) for ordinate cosine, else
(int) (acos(cs clamped to [-1, 1]) bins / π); a bin >= bins (θ = π or
cos θ = 1 exactly) is dropped.

The trajectory is LAMMPS's (test_trajectory's two-type Lennard-Jones
liquid, orthorhombic and triclinic; 10 frames from frame 3 on, as frame 0
is the fcc lattice, whose exact 180° angles fall on the dropped bin's edge
by rounding), with cutoffs about the first shell (1.5 σ; half the box's
shortest width is 4.16 σ).

The reference is checked first, without tdsolve (AdfReferenceTest): a
float64 NumPy reference of every frame's counts is LAMMPS's own compute adf
run on the same dump (rerun; each frame's integer counts recovered from its
cumulative column), but for angles within rounding of a bin edge, and both
drop the exact 180° angles of a simple cubic lattice as predicted. LAMMPS's
compute adf is in its EXTRA-COMPUTE package, which Debian 12's lmp lacks:
TDSOLVE_LMP_ADF names a LAMMPS binary that has it, and without one the
LAMMPS checks skip.

tdsolve (AdfTest): float64 counts are the NumPy reference exactly (both
boxes, --cutoff and --triples, every ordinate), with /theta, /edges, /pdf,
/cumulative, /centres, /dropped and /triple as LAMMPS's columns pooled over
the frames; float32 and float64 counts against LAMMPS's summed per-frame
counts; the lattice's dropped angles; the cell list's edge cases (no box:
the points' bounding box; a cutoff near half the box, two cells a side; a
few points) against the reference; 1 rank, 3 ranks and other
block rows (chunks) give the same bytes, and so does a run stopped (SIGTERM)
or killed (SIGKILL) and resumed; bad input is one line each and writes
nothing. AdfGpuTest (skips without a GPU; fails instead under
TDSOLVE_REQUIRE_GPU=1): the CUDA backend's bytes are the CPU's, centres
with more neighbours than a warp holds (computed by the host) among them.
"""
import math
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import h5py
import numpy as np

from common import TempDirTest, chunk_done, require_gpu, tdsolve
from test_groups import dump_types
from test_periodic import LMP
import test_trajectory as tt  # its classes by their module: not run again here
from test_trajectory import FRAMES, dump_frames, npt_frames, write_dump

BINS = 25  # 7.2°: no edge at 60°, 90° or 120°, where a lattice's angles would sit
TAKE = "3::5"  # frames 3, 8, ..., 48
TAKEN = list(range(FRAMES))[3::5]
CUTOFF = 1.5
# (I, J, K, J's inner and outer, K's inner and outer), as LAMMPS's triples
TRIPLES = (("1", "1", "2", 0.0, 1.45, 0.0, 1.55),
           ("2", "*", "*", 0.9, 1.6, 1.0, 1.4),
           ("*", "2", "1", 0.0, 1.5, 1.1, 1.5))
ORDINATES = ("degree", "radian", "cosine")
# LAMMPS's bin width and first edge: deltax, x0 (compute_adf.cpp, init)
WIDTH = {"degree": lambda b: math.pi / b * (180.0 / math.pi), "radian": lambda b: math.pi / b,
         "cosine": lambda b: 2.0 / b}
START = {"degree": 0.0, "radian": 0.0, "cosine": -1.0}


def triples_arg(triples):
    return ",".join(f"{i}-{j}-{k}:{a!r}:{b!r}:{c!r}:{d!r}" for i, j, k, a, b, c, d in triples)


def every_type(rc):
    """--cutoff rc as a triple: every type, inner 0, outer rc."""
    return ("*", "*", "*", 0.0, rc, 0.0, rc)


def legs(x, H, rmax):
    """Every ordered pair (i, j), j ≠ i, with the image x_j + n·H (n over
    the 27 cells about the wrapped difference) within rmax of x_i, in
    float64, sorted by i: i, j, d = x_i − x_j − n·H, r² = dx² + dy² + dz²
    (rmax is below half the cell's width: one image at most)."""
    H = np.asarray(H, dtype=np.float64)
    p, q = np.triu_indices(len(x), 1)
    v = x[p] - x[q]
    v = v - np.rint(v @ np.linalg.inv(H)) @ H
    hits = []
    for n in np.array([[a, b, c] for a in (-1, 0, 1) for b in (-1, 0, 1) for c in (-1, 0, 1)], float):
        w = v + n @ H
        r2 = w[:, 0] * w[:, 0] + w[:, 1] * w[:, 1] + w[:, 2] * w[:, 2]
        k = np.flatnonzero(r2 <= rmax * rmax)
        hits.append((p[k], q[k], w[k], r2[k]))
    i = np.concatenate([np.r_[h[0], h[1]] for h in hits])
    j = np.concatenate([np.r_[h[1], h[0]] for h in hits])
    d = np.concatenate([np.r_[h[2], -h[2]] for h in hits])
    r2 = np.concatenate([np.r_[h[3], h[3]] for h in hits])
    o = np.argsort(i, kind="stable")
    assert len(np.unique(i[o] * len(x) + j[o])) == len(o), "two images of one atom within rmax"
    return i[o], j[o], d[o], r2[o]


def leg_pairs(centre):
    """Every unordered pair (a, b), a < b, of legs of one centre (legs
    sorted by centre)."""
    starts = np.flatnonzero(np.r_[True, centre[1:] != centre[:-1]])
    sizes = np.diff(np.r_[starts, len(centre)])
    a, b = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for s in np.unique(sizes[sizes > 1]):
        p, q = np.triu_indices(s, 1)
        base = starts[sizes == s][:, None]
        a.append((base + p).ravel())
        b.append((base + q).ravel())
    return np.concatenate(a), np.concatenate(b)


def members(types, label):
    return np.ones(len(types), bool) if label == "*" else types == label


def adf_frame(x, H, types, triples, bins, ordinate):
    """LAMMPS compute adf's counts of one frame in float64: counts [ADFs,
    bins], dropped (bin >= bins) [ADFs], centres [ADFs]."""
    i, j, d, r2 = legs(x, H, max(max(t[4], t[6]) for t in triples))
    a, b = leg_pairs(i)
    rinv = 1.0 / np.sqrt(r2)
    cs = (d[a, 0] * d[b, 0] + d[a, 1] * d[b, 1] + d[a, 2] * d[b, 2]) * (rinv[a] * rinv[b])
    if ordinate == "cosine":
        v = (cs + 1.0) * (1.0 / (2.0 / bins))
    else:
        v = np.arccos(np.clip(cs, -1.0, 1.0)) * (bins / math.pi)
    k = v.astype(np.int64)  # (int): towards zero, so (-1, 0) is bin 0
    assert (k >= 0).all()
    counts = np.zeros((len(triples), bins), np.int64)
    dropped = np.zeros(len(triples), np.int64)
    centres = np.zeros(len(triples), np.int64)
    for m, (I, J, K, jin, jout, kin, kout) in enumerate(triples):
        in_j = members(types, J)[j] & (r2 >= jin * jin) & (r2 <= jout * jout)
        in_k = members(types, K)[j] & (r2 >= kin * kin) & (r2 <= kout * kout)
        take = members(types, I)[i[a]] & ((in_j[a] & in_k[b]) | (in_j[b] & in_k[a]))
        counts[m] = np.bincount(k[take & (k < bins)], minlength=bins)
        dropped[m] = np.count_nonzero(take & (k >= bins))
        centres[m] = members(types, I).sum()
    return counts, dropped, centres


def adf_reference(frames, types, triples, bins, ordinate):
    """adf_frame of every frame: counts [frames, ADFs, bins], dropped
    [frames, ADFs], centres [frames, ADFs]."""
    got = [adf_frame(x, H, types, triples, bins, ordinate) for H, x in frames]
    return tuple(np.array([g[n] for g in got]) for n in range(3))


def lammps_with_adf():
    """A LAMMPS binary with compute adf: $TDSOLVE_LMP_ADF, else lmp if it
    has the style; (None, why) without one."""
    script = "units lj\nregion b block 0 1 0 1 0 1\ncreate_box 1 b\ncompute a all adf 10 * * * 0.0 0.5 0.0 0.5\n"
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "in.probe"), "w") as f:
            f.write(script)
        for exe in (os.environ.get("TDSOLVE_LMP_ADF"), LMP):
            if exe:
                r = subprocess.run([exe, "-in", "in.probe", "-log", "none", "-nocite", "-screen", "none"], cwd=d,
                                   capture_output=True, text=True, timeout=60)
                if r.returncode == 0:
                    return exe, ""
    return None, ("no LAMMPS with compute adf (package EXTRA-COMPUTE, which Debian 12's lmp lacks): "
                  "TDSOLVE_LMP_ADF names one")


LAMMPS_ADF = """units lj
atom_style atomic
boundary p p p
region box {region}
create_box 2 box
mass * 1.0
read_dump {dump} {step} x y z box yes add keep
pair_style lj/cut 2.5
pair_coeff * * 1.0 1.0
{computes}
rerun {dump} dump x y z box yes
"""


def lammps_adf(lmp, workdir, dump, types, triples, bins, ordinates=ORDINATES):
    """LAMMPS's compute adf (one per ordinate) on every frame of `dump`
    (rerun, the dump's cell; each frame's timestep must be above the last):
    {ordinate: (counts [frames, ADFs, bins], its column 0, timesteps)}; each
    frame's counts are its cumulative column's steps times its centres."""
    with open(dump) as f:
        head = f.read(4096).splitlines()
    tilted = "xy xz yz" in head[4]
    spec = " ".join(f"{i} {j} {k} {a!r} {b!r} {c!r} {d!r}" for i, j, k, a, b, c, d in triples)
    computes = "\n".join(f"compute {o} all adf {bins} {spec} ordinate {o}\n"
                         f"fix {o} all ave/time 1 1 1 c_{o}[*] mode vector file {o}.txt format \" %.17g\""
                         for o in ordinates)
    with open(os.path.join(workdir, "in.adf"), "w") as f:
        f.write(LAMMPS_ADF.format(region="prism 0 1 0 1 0 1 0 0 0" if tilted else "block 0 1 0 1 0 1",
                                  dump=dump, step=int(head[1]), computes=computes))
    r = subprocess.run([lmp, "-in", "in.adf", "-log", "none", "-nocite", "-screen", "none"], cwd=workdir,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"LAMMPS failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    centres = np.array([members(types, t[0]).sum() for t in triples])
    out = {}
    for o in ordinates:
        steps, counts = [], []
        with open(os.path.join(workdir, f"{o}.txt")) as f:
            lines = [l for l in f.read().splitlines() if not l.startswith("#")]
        while lines:
            step, rows = map(int, lines[0].split())
            table = np.array([[float(v) for v in l.split()] for l in lines[1:1 + rows]])
            lines = lines[1 + rows:]
            assert table.shape == (bins, 2 + 2 * len(triples)), table.shape
            cumulative = table[:, 3::2].T
            c = np.diff(cumulative, prepend=0.0, axis=1) * centres[:, None]
            assert np.abs(c - np.rint(c)).max() < 1e-6, "not a count: the cumulative column is not read exactly"
            c = np.rint(c).astype(np.int64)
            total = c.sum(1, keepdims=True)
            pdf = np.divide(c, WIDTH[o](bins) * total, out=np.zeros(c.shape), where=total > 0)
            np.testing.assert_allclose(table[:, 2::2].T, pdf, rtol=1e-14, atol=1e-300)
            steps.append(step)
            counts.append(c)
        out[o] = (np.array(counts), table[:, 1], steps)
    return out


def take_frames(src, frames, dst):
    """The listed frames of a LAMMPS text dump, as a dump of their own."""
    with open(src) as f:
        text = f.read()
    starts = [i for i in range(len(text)) if text.startswith("ITEM: TIMESTEP", i)] + [len(text)]
    with open(dst, "w") as f:
        f.write("".join(text[starts[k]:starts[k + 1]] for k in frames))
    return dst


def write_lattice(path, side):
    """A simple cubic lattice of spacing 1 (integer coordinates, exact in
    every reduction) in a cubic box of `side`, types alternating 1, 2, as
    one frame of a LAMMPS dump: each atom has 6 neighbours at 1, the other
    type; of their 15 pairs, 12 at 90° and 3 at 180° exactly."""
    x = np.array([[a, b, c] for a in range(side) for b in range(side) for c in range(side)])
    with open(path, "w") as f:
        f.write(f"ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n{len(x)}\nITEM: BOX BOUNDS pp pp pp\n"
                + f"0 {side}\n" * 3 + "ITEM: ATOMS id type x y z\n")
        for n, p in enumerate(x):
            f.write(f"{n + 1} {1 + p.sum() % 2} {p[0]} {p[1]} {p[2]}\n")
    return len(x)


def lattice_counts(n, bins, ordinate):
    """The lattice's counts and dropped angles (its 12 n right angles and
    3 n straight ones) as LAMMPS bins them, in float64."""
    counts = np.zeros(bins, np.int64)
    dropped = 0
    for cs, angles in ((0.0, 12 * n), (-1.0, 3 * n)):
        v = (cs + 1.0) * (1.0 / (2.0 / bins)) if ordinate == "cosine" else math.acos(cs) * (bins / math.pi)
        if int(v) >= bins:
            dropped += angles
        else:
            counts[int(v)] += angles
    return counts, dropped


LATTICE_SIDE, LATTICE_RC = 6, 1.2  # the second neighbours, at √2, out of reach
LATTICE_BINS = (12, 13, 26)  # 180° dropped at 12, kept in the last bin at 13 and 26; at 26, 90° is in bin 12


def set_up_trajectory(cls, lmp):
    """test_trajectory's dumps and their types; the float64 reference of
    every ADF (--cutoff's first, then TRIPLES) on the frames taken, for
    each box and ordinate; with lmp (a LAMMPS with compute adf) LAMMPS's
    on a dump of those frames, else cls.lammps is None."""
    tt.TrajectoryTest.setUpClass.__func__(cls)
    cls.adfs = (every_type(CUTOFF),) + TRIPLES
    cls.types, cls.reference, cls.lammps, cls.frames_of = {}, {}, {} if lmp else None, {}
    for box, dumps in cls.dumps.items():
        cls.types[box] = dump_types(dumps["plain"])
        frames = cls.frames_of[box] = dump_frames(dumps["plain"])
        cls.reference[box] = {o: adf_reference([frames[k] for k in TAKEN], cls.types[box], cls.adfs, BINS, o)
                              for o in ORDINATES}
        if lmp:
            work = os.path.join(cls.root, f"{box}-lammps")
            os.makedirs(work)
            taken = take_frames(dumps["plain"], TAKEN, os.path.join(work, "taken.dump"))
            cls.lammps[box] = lammps_adf(lmp, work, taken, cls.types[box], cls.adfs, BINS)


class AdfReferenceTest(TempDirTest):
    """The float64 NumPy reference against LAMMPS's compute adf (no tdsolve)."""

    @classmethod
    def setUpClass(cls):
        if not LMP:
            raise unittest.SkipTest("needs LAMMPS (lmp): the test packages install it")
        cls.lmp, why = lammps_with_adf()
        if not cls.lmp:
            raise unittest.SkipTest(why)
        t0 = time.time()
        set_up_trajectory(cls, cls.lmp)
        cls.seconds = time.time() - t0

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)

    def test_reference_is_lammps_compute_adf(self):
        """Every frame, ADF and ordinate: LAMMPS's counts are the
        reference's, but for angles within rounding of a bin edge (LAMMPS
        takes ghost atoms at x + L, the reference the wrapped difference):
        at most 2 angles a frame and ADF, each moved to the next bin (none
        on these frames); neither drops an angle; LAMMPS's column 0 is
        x0 + (b + 1/2) Δ."""
        print(f"\nreference and LAMMPS set up in {self.seconds:.1f} s")
        for box in self.dumps:
            for o in ORDINATES:
                ref, dropped, _ = self.reference[box][o]
                got, theta, steps = self.lammps[box][o]
                diff = got - ref
                moved = int(np.abs(diff).sum()) // 2
                print(f"{box:5} {o:6}: {ref.sum()} angles in {len(TAKEN)} frames, "
                      f"{np.count_nonzero(np.abs(diff).sum(2))} frame-ADFs differ, {moved} angles moved a bin")
                with self.subTest(box=box, ordinate=o):
                    self.assertEqual(steps, [10 * k for k in TAKEN])
                    self.assertEqual(dropped.sum(), 0)
                    self.assertGreater(ref[:, 0].sum(), 100000)
                    self.assertTrue((ref.sum(2) > 1000).all(), ref.sum(2))
                    np.testing.assert_array_equal(got.sum(2), ref.sum(2))
                    self.assertLessEqual(np.abs(diff).sum(2).max(), 4, diff)
                    # a move to the next bin changes the running sum at one bin
                    self.assertLessEqual(np.abs(np.cumsum(diff, 2)).max(), 1, diff)
                    np.testing.assert_allclose(theta, START[o] + (np.arange(BINS) + 0.5) * WIDTH[o](BINS),
                                               rtol=1e-15, atol=1e-15)

    def test_lattice_straight_angles_are_dropped_as_predicted(self):
        """A simple cubic lattice's exact angles: LAMMPS drops the 180°
        ones where acos(-1) bins / π >= bins (12 bins) and keeps them in
        the last bin where it rounds below (13, 26), and puts the 90° ones
        in bin 12 of 26, as the reference does."""
        dump = self.path("lattice.dump")
        n = write_lattice(dump, LATTICE_SIDE)
        types = dump_types(dump)
        H, x = dump_frames(dump)[0]
        for bins in LATTICE_BINS:
            got = lammps_adf(self.lmp, self.dir, dump, types, (every_type(LATTICE_RC),), bins)
            for o in ORDINATES:
                expect, dropped = lattice_counts(n, bins, o)
                ref = adf_frame(x, H, types, (every_type(LATTICE_RC),), bins, o)
                with self.subTest(bins=bins, ordinate=o):
                    np.testing.assert_array_equal(ref[0][0], expect)
                    self.assertEqual(ref[1][0], dropped)
                    np.testing.assert_array_equal(got[o][0][0, 0], expect)
                    self.assertEqual(dropped > 0, o != "cosine" and bins == 12)
                    if o != "cosine" and bins == 26:
                        self.assertEqual(expect[12], 12 * n)


def adf_args(src, out, *extra, bins=BINS, precision="float64"):
    return ["adf", "--input", src, "--bins", bins, "--output", out, "--precision", precision, "--progress", "none",
            "--quiet", *extra]


def read_all(out):
    with h5py.File(out, "r") as f:
        return {k: f[k][()] for k in f if isinstance(f[k], h5py.Dataset)}


class AdfTest(TempDirTest):
    @classmethod
    def setUpClass(cls):
        if not LMP:
            raise unittest.SkipTest("needs LAMMPS (lmp): the test packages install it")
        lmp, cls.no_lammps = lammps_with_adf()
        set_up_trajectory(cls, lmp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)

    def modes(self):
        """(name, tdsolve's arguments, the ADFs' rows of the reference)."""
        return (("cutoff", ["--cutoff", CUTOFF], slice(0, 1)),
                ("triples", ["--types", "type", "--triples", triples_arg(TRIPLES)], slice(1, None)))

    def assert_pooled(self, d, counts, centres, o):
        """/pdf and /cumulative from counts [ADFs, bins] and the centres
        summed over frames [ADFs], as LAMMPS's columns of the pooled counts."""
        total = counts.sum(1, keepdims=True)
        np.testing.assert_allclose(d["pdf"].reshape(counts.shape), counts / (WIDTH[o](BINS) * total), rtol=1e-13)
        np.testing.assert_allclose(d["cumulative"].reshape(counts.shape),
                                   np.cumsum(counts, 1) / centres[:, None], rtol=1e-14)

    def test_counts_are_the_float64_reference(self):
        """Both boxes, --cutoff and three typed triples with their own
        inner and outer cutoffs, every ordinate: /counts the reference's
        summed over the frames exactly, nothing dropped; /centres the
        centres counted over the frames; /cutoffs; /theta, /edges; /pdf and
        /cumulative as LAMMPS's columns of the pooled counts."""
        for box in self.dumps:
            for o in ORDINATES:
                ref, dropped, centres = (a.sum(0) for a in self.reference[box][o])
                for mode, extra, rows in self.modes():
                    out = self.path(f"{box}-{o}-{mode}.h5")
                    self.run_ok(adf_args(self.dumps[box]["plain"], out, "--frames", TAKE, "--ordinate", o, *extra))
                    d = read_all(out)
                    with self.subTest(box=box, ordinate=o, mode=mode):
                        shape = (BINS,) if mode == "cutoff" else (len(TRIPLES), BINS)
                        self.assertEqual(d["counts"].shape, shape)
                        self.assertEqual(d["counts"].dtype, np.int64)
                        np.testing.assert_array_equal(d["counts"].reshape(-1, BINS), ref[rows])
                        np.testing.assert_array_equal(np.reshape(d["centres"], -1), centres[rows])
                        np.testing.assert_array_equal(np.reshape(d["dropped"], -1), dropped[rows])
                        self.assertEqual(np.shape(d["centres"]), shape[:-1])
                        width, x0 = WIDTH[o](BINS), START[o]
                        np.testing.assert_allclose(d["edges"], x0 + np.arange(BINS + 1) * width, rtol=1e-14,
                                                   atol=1e-15)
                        np.testing.assert_allclose(d["theta"], x0 + (np.arange(BINS) + 0.5) * width, rtol=1e-14,
                                                   atol=1e-15)
                        self.assert_pooled(d, ref[rows], centres[rows], o)
                        np.testing.assert_array_equal(d["cutoffs"].reshape(-1, 4),
                                                      [t[3:] for t in self.adfs[rows]])
                        if mode == "triples":
                            self.assertEqual([t.decode() if isinstance(t, bytes) else t for t in d["triple"]],
                                             [f"{i}-{j}-{k}" for i, j, k, *_ in TRIPLES])
                        else:
                            self.assertNotIn("triple", d)
                            self.assertEqual(int(d["centres"]), 500 * len(TAKEN))

    def test_counts_against_lammps(self):
        """LAMMPS's counts summed over its frames: float64 counts to the
        angles within rounding of an edge (a few, each a bin), float32
        counts to 0.1% of the angles moved a bin and totals to 0.01%;
        /theta is LAMMPS's column 0, /pdf and /cumulative its columns of
        the summed counts."""
        if self.lammps is None:
            self.skipTest(self.no_lammps)
        for box in self.dumps:
            for o in ORDINATES:
                got, theta, _ = self.lammps[box][o]
                lammps = got.sum(0)
                centres = self.reference[box][o][2].sum(0)
                for precision in ("float64", "float32"):
                    for mode, extra, rows in self.modes():
                        out = self.path(f"{box}-{o}-{mode}-{precision}.h5")
                        self.run_ok(adf_args(self.dumps[box]["plain"], out, "--frames", TAKE, "--ordinate", o,
                                             *extra, precision=precision))
                        d = read_all(out)
                        counts = d["counts"].reshape(-1, BINS)
                        diff = counts - lammps[rows]
                        total = lammps[rows].sum(1)
                        print(f"{box} {o} {mode} {precision}: {int(np.abs(diff).sum())} of {total.sum()} "
                              "angles off LAMMPS's bins")
                        with self.subTest(box=box, ordinate=o, mode=mode, precision=precision):
                            np.testing.assert_allclose(d["theta"], theta, rtol=1e-14, atol=1e-15)
                            if precision == "float64":
                                np.testing.assert_array_equal(counts.sum(1), total)
                                self.assertLessEqual(np.abs(diff).sum(), 4 * len(TAKEN))
                                self.assertLessEqual(np.abs(np.cumsum(diff, 1)).max(), 2)
                            else:
                                # an angle moved is 2 in |diff|: at most 0.1% of the angles
                                self.assertLessEqual(np.abs(counts.sum(1) - total).max(), max(2, 1e-4 * total.max()))
                                self.assertLessEqual(np.abs(diff).sum(1).max(), 2e-3 * total.min())
                            self.assert_pooled(d, counts, centres[rows], o)
                            pooled = lammps[rows] / (WIDTH[o](BINS) * total[:, None])
                            np.testing.assert_allclose(d["pdf"].reshape(counts.shape), pooled, rtol=5e-3,
                                                       atol=1e-3 * pooled.max())
                            np.testing.assert_allclose(d["cumulative"].reshape(counts.shape),
                                                       np.cumsum(lammps[rows], 1) / centres[rows, None],
                                                       rtol=1e-3, atol=1e-3)

    def test_lattice_straight_angles_are_dropped(self):
        """A simple cubic lattice (integer coordinates): its 12 n right
        and 3 n straight angles exactly where LAMMPS bins them (float64),
        the straight ones in /dropped where acos(-1) bins / π >= bins, and
        /cumulative counting them out."""
        dump = self.path("lattice.dump")
        n = write_lattice(dump, LATTICE_SIDE)
        for bins in LATTICE_BINS:
            for o in ORDINATES:
                out = self.path(f"lattice-{bins}-{o}.h5")
                self.run_ok(adf_args(dump, out, "--cutoff", LATTICE_RC, "--ordinate", o, bins=bins))
                d = read_all(out)
                expect, dropped = lattice_counts(n, bins, o)
                with self.subTest(bins=bins, ordinate=o):
                    np.testing.assert_array_equal(d["counts"], expect)
                    self.assertEqual(int(d["dropped"]), dropped)
                    self.assertEqual(int(d["centres"]), n)
                    self.assertEqual(d["counts"].sum() + d["dropped"], 15 * n)
                    self.assertAlmostEqual(d["cumulative"][-1], (15 * n - dropped) / n, places=12)

    def test_cells_against_the_reference(self):
        """The cell list only narrows the candidates: without a box (cells
        over the points' bounding box), with a cutoff just under half the
        box (two cells along each axis) and with a few points, the counts
        are the reference's."""
        box, o = "ortho", "degree"
        H, x = self.frames_of[box][TAKEN[0]]
        types = self.types[box]
        free = np.eye(3) * 1e6  # no box: no image within reach
        cases = (("nobox", free, x, 2.0),
                 ("half", H, x, 0.5 * min(np.diag(H)) - 1e-3),
                 ("few", H, x[:40], 2.0))
        for name, h, pts, rc in cases:
            src = self.path(f"{name}.npy")
            np.save(src, pts)  # an .npy has no cell: the box is --box's
            out = self.path(f"cells-{name}.h5")
            extra = [] if name == "nobox" else ["--box", ",".join(repr(float(v)) for v in np.diag(h))]
            self.run_ok(adf_args(src, out, "--cutoff", rc, *extra))
            ref, dropped, _ = adf_frame(pts, h, types[:len(pts)], (every_type(rc),), BINS, o)
            with self.subTest(case=name):
                d = read_all(out)
                self.assertGreater(ref.sum(), 0)
                np.testing.assert_array_equal(d["counts"], ref[0])
                self.assertEqual(int(d["dropped"]), int(dropped[0]))

    def test_per_frame_counts(self):
        """--per-frame: /frame_counts holds each frame's counts, the
        reference's frame by frame (LAMMPS's per-step arrays), summing to
        /counts; tdsolve.open reads them; without --frames it is refused."""
        import tdsolve as tdpkg
        box, o = "tri", "degree"
        per_frame = self.reference[box][o][0]  # [frames, ADFs, bins]
        for mode, extra, rows in self.modes():
            out = self.path(f"per-frame-{mode}.h5")
            self.run_ok(adf_args(self.dumps[box]["plain"], out, "--frames", TAKE, "--per-frame", *extra))
            with self.subTest(mode=mode):
                d = read_all(out)
                want = per_frame[:, rows, :]
                self.assertEqual(d["frame_counts"].shape, (len(TAKEN),) + d["counts"].shape)
                np.testing.assert_array_equal(d["frame_counts"].reshape(want.shape), want)
                np.testing.assert_array_equal(d["frame_counts"].sum(0), d["counts"])
                with tdpkg.open(out) as r:
                    np.testing.assert_array_equal(r.frame_counts, d["frame_counts"])
        self.run_bad_command("adf", ["--input", self.dumps[box]["plain"], "--frame", 3, "--bins", BINS,
                                     "--cutoff", CUTOFF, "--per-frame"], expect=["--per-frame goes with --frames"])

    def test_npt_frames_in_their_own_cells(self):
        """A cell a frame (an NPT run's, both boxes): each frame's legs are
        minimum-image in its own cell, the counts the reference's of each
        frame in its cell, summed."""
        for box in self.dumps:
            frames = npt_frames([self.frames_of[box][k] for k in TAKEN])
            path = self.path(f"npt-{box}.dump")
            write_dump(path, frames, self.types[box])
            out = self.path(f"npt-{box}.h5")
            self.run_ok(adf_args(path, out, "--frames", "::", "--types", "type", "--triples",
                                 triples_arg(TRIPLES)))
            ref, dropped, centres = (a.sum(0) for a in adf_reference(frames, self.types[box], TRIPLES, BINS,
                                                                     "degree"))
            with self.subTest(box=box):
                d = read_all(out)
                self.assertGreater(ref.sum(), 0)
                np.testing.assert_array_equal(d["counts"], ref)
                np.testing.assert_array_equal(d["dropped"], dropped)
                np.testing.assert_array_equal(d["centres"], centres)

    def test_ranks_and_chunks_give_the_same_bytes(self):
        dump = self.dumps["tri"]["plain"]
        outs = {}
        for name, extra, ranks in (("one", [], None), ("three", [], 3), ("rows7x3", ["--block", "7"], 3),
                                   ("rows7", ["--block", "7"], None)):
            for mode, args, _ in self.modes():
                outs[name, mode] = self.path(f"{name}-{mode}.h5")
                self.run_ok(adf_args(dump, outs[name, mode], "--frames", "1:30:2", *args, *extra), ranks)
        for mode, _, _ in self.modes():
            ref = read_all(outs["one", mode])
            self.assertGreater(ref["counts"].sum(), 100000)
            for name in ("three", "rows7x3", "rows7"):
                d = read_all(outs[name, mode])
                for k in ("counts", "pdf", "cumulative", "centres", "dropped", "theta", "edges"):
                    with self.subTest(run=name, mode=mode, dataset=k):
                        self.assertEqual(d[k].tobytes(), ref[k].tobytes())

    def test_stopped_and_killed_runs_resume_to_the_same_bytes(self):
        """120 frames of 400 points with types from an HDF5 dataset:
        SIGTERM and SIGKILL after some frames, then --resume: the
        uninterrupted run's bytes."""
        rng = np.random.default_rng(5)
        path = self.path("stack.h5")
        with h5py.File(path, "w") as f:
            f["pos"] = rng.random((120, 400, 3)) * 7
            f["types"] = rng.integers(1, 4, 400)
        args = lambda out: adf_args(path + ":/pos", out, "--frames", "::", "--per-frame", "--types",
                                    path + ":/types", "--triples", "1-2-3:0:1.2:0.5:1.4,3-*-*:0:1.0:0:1.0", "--box",
                                    "7,7,7", bins=36)
        whole = self.path("whole.h5")
        self.run_ok(args(whole))
        expect = read_all(whole)
        with h5py.File(path, "r") as f:
            t = f["types"][()]
        self.assertEqual(expect["centres"].tolist(), [120 * int((t == 1).sum()), 120 * int((t == 3).sum())])
        for sig in (signal.SIGTERM, signal.SIGKILL):
            out = self.path(f"cut{int(sig)}.h5")
            rc, err = self.interrupted_run(args(out), out, sig, ready=chunk_done(out + ".partial"),
                                           TDSOLVE_TEST_CHECKPOINT_S="0.001", TDSOLVE_TEST_SLOW_MS="30")
            with self.subTest(signal=sig):
                if sig == signal.SIGTERM:
                    self.assertEqual(rc, 75, err)
                    self.assertIn("stopped cleanly (SIGTERM)", err)
                with h5py.File(out + ".partial", "r") as f:
                    done = int(f["progress/done"][()].sum())
                self.assertTrue(0 < done < 120, f"{done} of 120 frames done: the stop came too early or late")
                self.run_ok(args(out) + ["--resume"])
                got = read_all(out)
                for k in ("counts", "pdf", "cumulative", "centres", "dropped", "frame_counts"):
                    self.assertEqual(got[k].tobytes(), expect[k].tobytes(), k)

    def test_bad_input(self):
        dump = self.dumps["ortho"]["plain"]
        frame = ["--input", dump, "--frame", 3]
        cases = [
            ([*frame, "--bins", 0, "--cutoff", 1.5], ["--bins"]),
            ([*frame, "--bins", BINS, "--cutoff", -1], ["--cutoff"]),
            ([*frame, "--bins", BINS, "--cutoff", "nan"], ["--cutoff"]),
            ([*frame, "--bins", BINS], ["--cutoff", "--triples"]),
            ([*frame, "--bins", BINS, "--cutoff", 1.5, "--types", "type", "--triples", "1-1-1:0:1.5:0:1.5"],
             ["--cutoff", "--triples"]),
            ([*frame, "--bins", BINS, "--types", "type", "--triples", "1-1-2:1.5:1.2:0:1.5"], ["1-1-2"]),
            ([*frame, "--bins", BINS, "--types", "type", "--triples", "1-1-2:0:1.5:1.5:1.5"], ["1-1-2"]),
            ([*frame, "--bins", BINS, "--types", "type", "--triples", "1-3-1:0:1.5:0:1.5"], ["'3'"]),
            ([*frame, "--bins", BINS, "--triples", "1-1-2:0:1.5:0:1.5"], ["--types"]),
            # half the shortest width: ortho 4.199, tri 4.159
            ([*frame, "--bins", BINS, "--cutoff", 4.5], ["shortest width"]),
            (["--input", self.dumps["tri"]["plain"], "--frame", 3, "--bins", BINS, "--types", "type", "--triples",
              "1-1-2:0:1.5:0:4.18"], ["shortest width"]),
        ]
        for args, expect in cases:
            with self.subTest(args=args):
                self.run_bad_command("adf", args, expect=expect)


class AdfGpuTest(TempDirTest):
    """adf on the CUDA backend (skips without a GPU; fails instead under
    TDSOLVE_REQUIRE_GPU=1): the CPU's bytes, float32 and float64, --cutoff
    and --triples, in a triclinic box and without one, and with a cutoff
    whose centres have more neighbours than a warp holds (the host takes
    those); points and types written here (the GPU machine has no LAMMPS)."""

    @classmethod
    def setUpClass(cls):
        require_gpu()

    def test_gpu_counts_are_the_cpus_bytes(self):
        rng = np.random.default_rng(13)
        H = np.array([[10.0, 0, 0], [1.0, 9.5, 0], [-0.8, 0.6, 10.0]])
        frames, n = 4, 1500
        path = self.path("x.h5")
        types = self.path("types.txt")
        with h5py.File(path, "w") as f:
            f["pos"] = rng.random((frames, n, 3)) @ H
        np.savetxt(types, rng.choice(["A", "B", "C"], n, p=[0.5, 0.3, 0.2]), fmt="%s")
        box = ["--box", "10,9.5,10", "--tilt", "1.0,-0.8,0.6"]
        variants = (["--cutoff", 1.3, *box],
                    ["--types", types, "--triples", "A-B-C:0:1.2:0.3:1.4,*-A-*:0.5:1.3:0:1.1", *box],
                    ["--cutoff", 1.3, "--box", "none"],
                    ["--cutoff", 3.2, *box])  # about 200 neighbours a centre: beyond a warp's 128
        for precision in ("float32", "float64"):
            for v, extra in enumerate(variants):
                outs = []
                for backend in ("cpu", "cuda"):
                    out = self.path(f"{precision}-{backend}-{v}.h5")
                    r = tdsolve(*adf_args(path + ":/pos", out, "--frames", "::", *extra, "--backend", backend,
                                          bins=48, precision=precision))
                    self.assertEqual(r.returncode, 0, r.stderr)
                    with h5py.File(out, "r") as f:
                        outs.append({k: f[k][()].tobytes()
                                     for k in ("counts", "pdf", "cumulative", "centres", "dropped")})
                with self.subTest(precision=precision, extra=extra):
                    self.assertGreater(np.frombuffer(outs[0]["counts"], np.int64).sum(), 0)
                    self.assertEqual(outs[0], outs[1])


if __name__ == "__main__":
    unittest.main()
