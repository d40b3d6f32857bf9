"""tdsolve collide end to end: the pair set equals a float64 brute-force
reference (NumPy, with the exact fused arithmetic of the euclidean metric at
the boundary) for generated spheres and for .h5, .npy and .csv inputs, in
1-D and 3-D, on 1, 2 and 3 ranks (the same /pairs bytes), with touching
spheres (not a pair) and duplicates; the generator reproduced in NumPy; bad
input refused with one line and no file; a killed or signalled run resumed
to the same pairs; a second writer refused; info and the Python package
read the file. The GPU comparison lives in test_gpu.py."""
import math
import os
import signal
import subprocess
import sys
import time
import unittest
from fractions import Fraction

import h5py
import numpy as np

from common import BIN, TempDirTest, tdsolve

QUIET = ["--progress", "none", "--quiet"]
M64 = (1 << 64) - 1


def splitmix64(x):
    """io/random.hpp's splitmix64 on a uint64 array (wrapping arithmetic)."""
    x = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def unit_double(x):
    return (splitmix64(x) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def default_rmax(n, dim):
    # math.cbrt is the C library's, as the program's std::cbrt; NumPy's
    # cbrt (its own SIMD code on AVX-512 machines) can differ in the last bit.
    return 1.0 / (n - 1) if dim == 1 else math.cbrt(1.0 / (math.pi * (n - 1)))


def generate_spheres(n, dim, seed, rmax):
    """--generate spheres:N:DIM:SEED:RMAX, as io/input.cpp makes it."""
    base = int(splitmix64(np.uint64(seed)))
    with np.errstate(over="ignore"):
        centres = unit_double(np.uint64(base) + np.arange(n * dim, dtype=np.uint64)).reshape(n, dim)
        rbase = int(splitmix64(np.uint64(base ^ 0x7261646969)))
        radii = rmax * (1.0 - unit_double(np.uint64(rbase) + np.arange(n, dtype=np.uint64)))
    return np.hstack([centres, radii[:, None]])


def fma(a, b, c):
    """The correctly rounded a*b + c of IEEE fma (exact rationals, one rounding)."""
    return float(Fraction(a) * Fraction(b) + Fraction(c))


def exact_distance(p, q):
    """The euclidean metric's arithmetic: acc = fma(d, d, acc) from 0, then sqrt."""
    acc = 0.0
    for a, b in zip(p, q):
        d = float(a) - float(b)
        acc = fma(d, d, acc)
    return float(np.sqrt(acc))


def overlap_reference(s):
    """(i, j), i < j, with distance < r_i + r_j in float64, sorted: NumPy for
    every pair, and the exact fused sum (as tdsolve computes it) wherever the
    distance lies within 1e-12 (relative) of r_i + r_j."""
    x, r = s[:, :-1].astype(np.float64), s[:, -1].astype(np.float64)
    n = len(s)
    out = []
    for i in range(n - 1):
        d = x[i + 1:] - x[i]
        acc = d[:, 0] * d[:, 0]
        for k in range(1, d.shape[1]):
            acc = acc + d[:, k] * d[:, k]
        dist = np.sqrt(acc)
        limit = r[i] + r[i + 1:]
        keep = dist < limit
        close = np.flatnonzero(np.abs(dist - limit) <= 1e-12 * np.maximum(limit, 1e-300))
        for c in close.tolist():
            keep[c] = exact_distance(x[i], x[i + 1 + c]) < limit[c]
        js = np.flatnonzero(keep) + i + 1
        out.append(np.column_stack([np.full(len(js), i, dtype=np.int64), js]))
    return np.vstack(out) if out else np.zeros((0, 2), dtype=np.int64)


def read_collide(path):
    with h5py.File(path, "r") as f:
        return (f["pairs"][:], f["distances"][:], int(f["count"][()]), dict(f["pairs"].attrs), dict(f.attrs),
                f["progress/done"][:])


def touching_spheres():
    """Spheres whose distances equal r_i + r_j exactly (not pairs), a hair
    closer (pairs), duplicates (pairs when r > 0, not when both radii are 0),
    in 1-D and 3-D; every value exact in binary."""
    one = np.array([[0.0, 1.0], [3.0, 2.0],          # d 3 == 1 + 2: touching
                    [10.0, 0.5], [11.0, 0.5],        # d 1 == 0.5 + 0.5: touching
                    [20.0, 0.25], [20.0, 0.25],      # duplicates: d 0 < 0.5
                    [30.0, 0.0], [30.0, 0.0],        # points at one place: d 0 < 0 is false
                    [40.0, 1 + 2.0 ** -52], [42.0, 1 + 2.0 ** -52],  # d 2 < 2 + 2^-51
                    [50.0, 0.0], [50.0, 0.125]])     # a point inside a sphere: d 0 < 0.125
    three = np.array([[0.0, 0.0, 0.0, 2.0], [3.0, 4.0, 0.0, 3.0],      # d 5 == 2 + 3
                      [100.0, 0, 0, 6.5], [103.0, 4.0, 12.0, 6.5],     # d 13 == 6.5 + 6.5
                      [200.0, 0, 0, 1.5], [200.0, 0, 0, 1.5],          # duplicates
                      [300.0, 0, 0, 0.0], [300.0, 0, 0, 0.0],          # two points at one place
                      [400.0, 0, 0, 2 + 2.0 ** -51], [400.0, 3.0, 4.0, 3 + 2.0 ** -51]])  # d 5 < 5 + 2^-50
    return one, three


class CollideTest(TempDirTest):
    def run_collide(self, *args, np_=None, env=None):
        out = self.path(f"c{len(os.listdir(self.dir))}.h5")
        tdsolve("collide", *args, "--output", out, *QUIET, np_=np_, check=True, env=env)
        return out

    def check_against(self, s, args, what, ranks=(None, 2, 3), extra=()):
        """Runs collide on 1, 2, 3 ranks; every file's pairs equal the reference
        and each other's bytes. Returns the reference."""
        ref = overlap_reference(s)
        first = None
        for r in ranks:
            out = self.run_collide(*args, "--chunk-mb", 1, "--block", 64, *extra, np_=r)
            pairs, dist, count, attrs, root, done = read_collide(out)
            w = f"{what}, ranks {r or 1}"
            self.assertTrue(done.all(), w)
            self.assertEqual(pairs.dtype, np.int64, w)
            self.assertEqual(dist.dtype, np.float64, w)
            self.assertEqual(pairs.shape, (len(ref), 2), w)
            np.testing.assert_array_equal(pairs, ref, err_msg=w)
            self.assertEqual(count, len(ref), w)
            self.assertEqual((attrs["n"], attrs["dim"], attrs["criterion"]), (len(s), s.shape[1] - 1, "overlap"))
            self.assertEqual((root["n"], root["dim"]), (len(s), s.shape[1] - 1))
            if len(ref):
                x = s[:, :-1]
                exact = np.sqrt(((x[pairs[:, 0]] - x[pairs[:, 1]]) ** 2).sum(axis=1))
                np.testing.assert_allclose(dist, exact, rtol=1e-15, atol=0, err_msg=w)
                self.assertTrue((dist < s[pairs[:, 0], -1] + s[pairs[:, 1], -1]).all(), w)
            files = (pairs.tobytes(), dist.tobytes())
            if first is None:
                first = files
            self.assertEqual(files, first, f"{w}: differs from 1 rank")
        return ref

    def test_generated_equals_float64_reference_1d_and_3d_on_1_2_3_ranks(self):
        for n, dim, seed, rmax in [(5000, 3, 42, None), (4999, 1, 7, None), (3001, 3, 3, 0.08), (2000, 1, 1, 0.01)]:
            spec = f"spheres:{n}:{dim}:{seed}" + ("" if rmax is None else f":{rmax}")
            rm = default_rmax(n, dim) if rmax is None else rmax
            s = generate_spheres(n, dim, seed, rm)
            ref = self.check_against(s, ["--generate", spec], spec)
            self.assertGreater(len(ref), n // 4, f"{spec}: too few overlaps to test anything")
            out = self.run_collide("--generate", spec)
            with h5py.File(out, "r") as f:
                recorded = f.attrs["input"]
            self.assertTrue(recorded.startswith(f"spheres:{n}:{dim}:{seed}:"), recorded)
            self.assertEqual(float(recorded.rsplit(":", 1)[1]), rm, f"{spec}: RMAX recorded")
            if rmax is None:
                # The default: about 2 partners a sphere (fewer near the faces).
                partners = 2 * len(ref) / n
                self.assertTrue(1.2 < partners < 2.2, f"{spec}: {partners} partners a sphere on average")
            self.assertTrue((s[:, -1] > 0).all() and (s[:, -1] <= rm).all())

    def test_input_files_with_touching_spheres_and_duplicates(self):
        one, three = touching_spheres()
        rng = np.random.default_rng(5)
        for name, s in [("one", one), ("three", three)]:
            dim = s.shape[1] - 1
            # Random spheres around the constructed ones, and every one of them twice.
            noise = np.hstack([rng.random((400, dim)) * 500, rng.random((400, 1)) * 3])
            both = np.vstack([s, noise, noise[:50]])
            ref = overlap_reference(s)
            npy = self.save_npy(f"{name}.npy", s)
            got = read_collide(self.run_collide("--input", npy))[0]
            np.testing.assert_array_equal(got, ref, err_msg=name)
            self.assertGreater(len(ref), 0)
            h5 = self.path(f"{name}.h5")
            self.save_h5(f"{name}.h5", "/spheres", both)
            self.check_against(both, ["--input", h5 + ":/spheres"], f"{name} (h5)")
            csv = self.path(f"{name}.csv")
            np.savetxt(csv, both, delimiter=",", fmt="%.17g", header=",".join(["x", "y", "z"][:dim] + ["r"]),
                       comments="")
            self.check_against(both, ["--input", csv], f"{name} (csv)", ranks=(3,))
        # The constructed cases, one by one.
        pairs = {tuple(p) for p in read_collide(self.run_collide("--input", self.path("one.npy")))[0]}
        self.assertEqual(pairs, {(4, 5), (8, 9), (10, 11)})
        pairs = {tuple(p) for p in read_collide(self.run_collide("--input", self.path("three.npy")))[0]}
        self.assertEqual(pairs, {(4, 5), (8, 9)})

    def test_float32_and_integer_inputs_and_columns(self):
        # The spheres as stored are converted to float64 exactly; --columns
        # picks x, y, z, r out of a wider table.
        rng = np.random.default_rng(9)
        s = np.hstack([rng.random((1500, 3)), rng.random((1500, 1)) * 0.05]).astype(np.float32)
        self.save_h5("f32.h5", "/s", s)
        self.check_against(s.astype(np.float64), ["--input", self.path("f32.h5") + ":/s"], "float32", ranks=(None,))
        g = rng.integers(0, 40, size=(600, 4)).astype(np.int64)
        g[:, 3] = rng.integers(0, 3, size=600)
        self.save_h5("int.h5", "/g", g)
        self.check_against(g.astype(np.float64), ["--input", self.path("int.h5") + ":/g"], "int64", ranks=(2,))
        wide = np.hstack([np.arange(1500)[:, None], s.astype(np.float64), np.ones((1500, 1))])
        src = self.save_npy("wide.npy", wide)
        self.check_against(s.astype(np.float64), ["--input", src, "--columns", "1:5"], "columns", ranks=(None,))

    def test_bad_input(self):
        rng = np.random.default_rng(1)
        three = self.save_npy("three.npy", rng.random((10, 3)))
        neg = rng.random((10, 4))
        neg[3, 3] = -0.5
        nanr, infc = rng.random((10, 4)), rng.random((10, 4))
        nanr[2, 3] = np.nan
        infc[5, 1] = np.inf
        ok = self.save_npy("ok.npy", rng.random((10, 4)))
        for args, expect in [
            (["--input", three], ["3 columns", "n × 2", "n × 4"]),
            (["--input", self.save_npy("neg.npy", neg)], ["negative radius", "row 3"]),
            (["--input", self.save_npy("nanr.npy", nanr)], ["non-finite", "row 2, column 3"]),
            (["--input", self.save_npy("inf.npy", infc)], ["non-finite", "row 5, column 1"]),
            (["--input", self.save_npy("one.npy", rng.random((1, 4)))], ["1 point", "at least 2"]),
            (["--input", ok, "--metric", "cosine"], ["--metric"]),
            (["--input", ok, "--precision", "float32"], ["--precision"]),
            (["--input", ok, "--k", 3], ["--k"]),
            (["--input", ok, "--radius", 1], ["--radius"]),
            (["--generate", "uniform:10:3"], ["spheres:N:DIM:SEED"]),
            (["--generate", "spheres:10:2:1"], ["DIM must be 1 or 3"]),
            (["--generate", "spheres:10:3"], ["spheres:N:DIM:SEED[:RMAX]"]),
            (["--generate", "spheres:10:3:1:0"], ["RMAX must be"]),
            (["--generate", "spheres:10:3:1:-2"], ["RMAX must be"]),
            (["--generate", "spheres:10:3:1:nan"], ["RMAX must be"]),
            (["--generate", "spheres:10:3:1:inf"], ["RMAX must be"]),
            (["--generate", "spheres:1:3:1"], ["1 point"]),
            (["--generate", "spheres:4000000000:1:0"], ["C(n,2) must stay below 2^62"]),
            (["--input", ok, "--generate", "spheres:10:3:1"], ["exactly one of --input"]),
        ]:
            with self.subTest(args=args):
                self.run_bad_command("collide", args, expect)
        # The generator is collide's own.
        r = tdsolve("edm", "--generate", "spheres:10:3:1", "--output", self.path("e.h5"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("is for tdsolve collide", r.stderr)

    def test_killed_and_stopped_runs_resume_to_the_same_pairs(self):
        spec = "spheres:3000:3:5"
        job = ["--generate", spec, "--chunk-mb", 1, "--block", 16]
        clean = read_collide(self.run_collide(*job))
        self.assertGreater(len(clean[0]), 1000)
        out = self.path("killed.h5")
        r = tdsolve("collide", *job, "--output", out, *QUIET, np_=2, env={"TDSOLVE_TEST_FAULT": "1:4:kill"})
        self.assertNotEqual(r.returncode, 0)
        self.assertFalse(os.path.exists(out))
        with h5py.File(out + ".partial", "r") as f:
            self.assertEqual(f["progress/done"][:].sum(), 0, "a collide run keeps nothing before its end")
            self.assertEqual(f["pairs"].shape, (0, 2))
        info = tdsolve("info", out + ".partial")
        self.assertEqual(info.returncode, 3, info.stdout)
        self.assertIn("INCOMPLETE", info.stdout)
        r = tdsolve("collide", *job, "--output", out, "--resume", *QUIET, np_=3)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = read_collide(out)
        self.assertEqual((got[0].tobytes(), got[1].tobytes(), got[2]), (clean[0].tobytes(), clean[1].tobytes(),
                                                                         clean[2]))
        # A clean stop (SIGTERM: exit 75, resumable), then --resume on 1 rank.
        out = self.path("stopped.h5")
        p = subprocess.Popen([BIN, "collide", *map(str, job), "--output", out, "--progress", "none"],
                             env=dict(os.environ, TDSOLVE_TEST_SLOW_MS="200"), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            self.wait_for(out + ".partial", p)
            time.sleep(0.5)
            p.send_signal(signal.SIGTERM)
            _, err = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
        self.assertEqual(p.returncode, 75, err)
        self.assertIn("stopped cleanly", err)
        self.assertFalse(os.path.exists(out))
        r = tdsolve("collide", *job, "--output", out, "--resume", *QUIET)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(read_collide(out)[0].tobytes(), clean[0].tobytes())
        # Another job on the same output is refused on --resume.
        r = tdsolve("collide", "--generate", "spheres:3000:3:6", "--chunk-mb", 1, "--block", 16, "--output", out,
                    "--resume", *QUIET)
        self.assertNotEqual(r.returncode, 0)

    def test_a_second_writer_is_refused(self):
        out = self.path("busy.h5")
        job = ["collide", "--generate", "spheres:3000:3:2", "--chunk-mb", "1", "--block", "16", "--output", out]
        first = subprocess.Popen([BIN, *job, *QUIET], env=dict(os.environ, TDSOLVE_TEST_SLOW_MS="200"),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            self.wait_for(out + ".partial", first)
            second = tdsolve(*job, "--overwrite", *QUIET)
            self.assertNotEqual(second.returncode, 0)
            self.assertIn("being written by another tdsolve run", second.stderr)
        finally:
            first.communicate(timeout=300)
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertGreater(read_collide(out)[2], 1000)
        # A finished output is not replaced without --overwrite.
        r = tdsolve(*job, *QUIET)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--overwrite", r.stderr)

    def test_info_package_and_xarray_read_a_collide_file(self):
        pkg = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../python")
        if pkg not in sys.path:
            sys.path.insert(0, pkg)
        import tdsolve as tdpkg
        out = self.run_collide("--generate", "spheres:2000:3:8", np_=2)
        pairs, dist, count, _, _, _ = read_collide(out)
        info = tdsolve("info", out)
        self.assertEqual(info.returncode, 0, info.stdout + info.stderr)
        self.assertIn(f"collide:   {count} overlapping pairs", info.stdout)
        self.assertIn(f"/count = {count}", info.stdout)
        v = tdpkg.check(out)
        self.assertEqual((v.exit_code, v.kind), (0, "collide"))
        with tdpkg.open(out) as r:
            self.assertIsInstance(r, tdpkg.CollideResult)
            self.assertEqual((r.n, r.dim, r.count, len(r), r.criterion), (2000, 3, count, count, "overlap"))
            np.testing.assert_array_equal(r.pairs, pairs)
            np.testing.assert_array_equal(r.distances, dist)
            m = r.to_sparse().tocsr()
            self.assertEqual(m[pairs[0, 0], pairs[0, 1]], dist[0])
            self.assertEqual(sum(len(p) for _, p, _ in r.iter_chunks(100)), count)
            with self.assertRaises(TypeError):
                r.square()
        # A file whose /count disagrees with /pairs is inconsistent, to both readers.
        with h5py.File(out, "a") as f:
            f["count"][()] = count + 1
        info = tdsolve("info", out)
        self.assertEqual(info.returncode, 3, info.stdout)
        self.assertIn("/count is not the number of rows of /pairs", info.stdout)
        v = tdpkg.check(out)
        self.assertEqual(v.exit_code, 3)
        self.assertIn("/count is not the number of rows of /pairs", v.message)
        try:
            import xarray as xr
        except ImportError:
            return
        out = self.run_collide("--generate", "spheres:500:1:8")
        with xr.open_dataset(out, engine="h5netcdf") as ds:
            self.assertEqual(ds["pairs"].dims, ("pair", "pair_end"))
            self.assertEqual(ds["distances"].dims, ("pair",))
            self.assertEqual(int(ds["count"]), ds.sizes["pair"])

    def test_help_says_what_it_does(self):
        r = tdsolve("collide", "--help")
        self.assertEqual(r.returncode, 0)
        for s in ("spheres:N:DIM:SEED[:RMAX]", "< r_i + r_j", "/pairs", "/count", "--resume"):
            self.assertIn(s, r.stdout)
        for s in ("--metric", "--precision"):
            self.assertNotIn(s, r.stdout)
        self.assertIn("collide", tdsolve("--help").stdout)


if __name__ == "__main__":
    unittest.main()
