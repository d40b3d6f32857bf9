"""`tdsolve triplet`: the Axilrod-Teller-Muto three-body sums (LAMMPS
pair_style atm) against a float64 NumPy brute force over
itertools.combinations(range(n), 3).

The reference (atm_reference below) is written from the formula alone:
per triplet, with p = r12^2, q = r23^2, s = r31^2,
    E = nu (1 + 3 cos g1 cos g2 cos g3) / (r12 r23 r31)^3
      = nu (P^(-3/2) + 3/8 N P^(-5/2)),  P = p q s,
      N = (p + s - q)(p + q - s)(q + s - p)      (law of cosines),
and its gradient by the chain rule through p, q, s (dp/da = 2 (a - b) ...);
the test checks that gradient against central differences of the reference
energy before trusting it. Cutoffs as LAMMPS: a triplet counts when each
squared distance is <= cutoff^2 and p q s <= cutoff_triple^6.

Random points lie in a box of density 1, no two closer than DMIN (so the
energies stay moderate), and are float32 numbers, so that float32 and
float64 runs see the same points. Tolerances: float64 1e-10, float32 1e-5,
relative to |E| (energy) or to max |reference| (per-point energies, forces).

The sums are exact (integer accumulators), so /energy, /energy_per_point and
/forces must be the same bytes for any rank count, block map, thread count
and chunk size; a stopped or killed run resumes to those bytes.

TypedAtmTest: --types/--nu-types (nu per unordered type triple, LAMMPS's
pair_coeff I J K nu) against the same brute force with nu per triplet.

LammpsTest runs LAMMPS's own pair_style atm, one nu and per type triple
(skips without `lmp` on PATH);
TripletGpuTest compares --backend cuda with cpu (skips without a GPU, fails
instead under TDSOLVE_REQUIRE_GPU=1).
"""
import concurrent.futures
import functools
import itertools
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import h5py
import numpy as np
from scipy.spatial.distance import pdist

from common import BIN, MPIEXEC, TempDirTest, killed_after_checkpoints, require_gpu, run_lammps, tdsolve

STOPPED = 75  # "stopped cleanly, resumable"
DMIN = 0.55
TOL = {"float64": 1e-10, "float32": 1e-5}


# --- the reference ------------------------------------------------------

@functools.lru_cache(maxsize=8)
def triplet_indices(n):
    """(C(n,3), 3) int64: itertools.combinations(range(n), 3), in that order."""
    c = n * (n - 1) * (n - 2) // 6
    flat = np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(n), 3)), dtype=np.int64,
                       count=3 * c)
    flat.setflags(write=False)
    return flat.reshape(c, 3)


def atm_terms(a, b, c, nu):
    """Per triplet (rows of a, b, c): E, dE/da, dE/db, dE/dc, and p, q, s."""
    ab, bc, ca = a - b, b - c, c - a
    p = np.einsum("ij,ij->i", ab, ab)  # r12^2
    q = np.einsum("ij,ij->i", bc, bc)  # r23^2
    s = np.einsum("ij,ij->i", ca, ca)  # r31^2
    A, B, C = p + s - q, p + q - s, q + s - p  # 2 r r cos g at a, b, c
    P = p * q * s
    N = A * B * C
    P32 = P * np.sqrt(P)  # P^(3/2)
    P52 = P32 * P
    e = nu * (1.0 / P32 + 0.375 * N / P52)
    # dE/dp = nu (-3/2 P^(-5/2) q s + 3/8 (N_p P^(-5/2) - 5/2 N P^(-7/2) q s)), q s = P / p
    BC, AC, AB = B * C, A * C, A * B
    Np, Nq, Ns = BC + AC - AB, -BC + AC + AB, BC - AC + AB
    Ep = nu * (-1.5 / (p * P32) + 0.375 * (Np - 2.5 * N / p) / P52)
    Eq = nu * (-1.5 / (q * P32) + 0.375 * (Nq - 2.5 * N / q) / P52)
    Es = nu * (-1.5 / (s * P32) + 0.375 * (Ns - 2.5 * N / s) / P52)
    ga = 2 * (Ep[:, None] * ab - Es[:, None] * ca)
    gb = 2 * (Eq[:, None] * bc - Ep[:, None] * ab)
    gc = 2 * (Es[:, None] * ca - Eq[:, None] * bc)
    return e, ga, gb, gc, p, q, s


def atm_reference(x, nu=1.0, cutoff=None, cutoff_triple=None, batch=1 << 19, types=None, table=None):
    """float64 brute force: dict(energy, per_point, forces, triplet (each
    triplet's E, 0 where a cutoff drops it), kept (mask), scale (a bound on
    each triplet's |E| before the cutoffs: 4 |nu| / P^(3/2))). With types
    (a code per point) and table (nu of each code triple, symmetric), nu is
    table[types[i], types[j], types[k]] per triplet (--nu-types)."""
    x = np.asarray(x, np.float64)
    n = len(x)
    idx = triplet_indices(n)
    e_all = np.empty(len(idx))
    kept = np.empty(len(idx), bool)
    scale = np.empty(len(idx))
    per = np.zeros(n)
    grad = np.zeros((n, 3))
    for lo in range(0, len(idx), batch):
        t = idx[lo:lo + batch]
        if types is not None:
            nu = np.asarray(table, np.float64)[types[t[:, 0]], types[t[:, 1]], types[t[:, 2]]]
        e, ga, gb, gc, p, q, s = atm_terms(x[t[:, 0]], x[t[:, 1]], x[t[:, 2]], nu)
        keep = np.ones(len(t), bool)
        if cutoff is not None:
            rc2 = cutoff * cutoff
            keep &= (p <= rc2) & (q <= rc2) & (s <= rc2)
        if cutoff_triple is not None:
            rt3 = cutoff_triple ** 3
            keep &= p * q * s <= rt3 * rt3
        P = p * q * s
        # (nu = 0, a type triple's: the bound of nu = 1, so 0 stays comparable)
        scale[lo:lo + len(t)] = 4 * np.where(np.asarray(nu) == 0, 1.0, np.abs(nu)) / (P * np.sqrt(P))
        e = np.where(keep, e, 0.0)
        ga, gb, gc = (np.where(keep[:, None], g, 0.0) for g in (ga, gb, gc))
        e_all[lo:lo + len(t)] = e
        kept[lo:lo + len(t)] = keep
        for col, g in zip(range(3), (ga, gb, gc)):
            per += np.bincount(t[:, col], weights=e / 3, minlength=n)
            for k in range(3):
                grad[:, k] += np.bincount(t[:, col], weights=g[:, k], minlength=n)
    return dict(energy=float(e_all.sum()), per_point=per, forces=-grad, triplet=e_all, kept=kept, scale=scale)


@functools.lru_cache(maxsize=4)
def reference(n, seed, nu):
    """atm_reference of random_points(n, seed), kept for the tests that share it."""
    return atm_reference(random_points(n, seed), nu)


def reference_energy(x, nu=1.0):
    """The total alone, for finite differences of the reference."""
    idx = triplet_indices(len(x))
    return float(atm_terms(x[idx[:, 0]], x[idx[:, 1]], x[idx[:, 2]], nu)[0].sum())


def random_points(n, seed, dmin=DMIN):
    """n float32-exact points uniform in [0, n^(1/3))^3, no two closer than
    dmin (random sequential addition)."""
    rng = np.random.default_rng(seed)
    side = max(n, 3) ** (1 / 3)
    pts = np.empty((n, 3))
    k = 0
    while k < n:
        c = (rng.random(3) * side).astype(np.float32).astype(np.float64)
        if k == 0 or np.min(np.sum((pts[:k] - c) ** 2, axis=1)) >= dmin * dmin:
            pts[k] = c
            k += 1
    return pts


def random_rotation(rng):
    q, r = np.linalg.qr(rng.standard_normal((3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


def gap_value(values, q, margin):
    """A value near quantile q of `values`, midway between two of them that
    lie more than `margin` (relative) apart: no value is that close to it."""
    v = np.unique(values)
    k = int(np.searchsorted(v, np.quantile(v, q)))
    while k + 1 < len(v) and v[k + 1] - v[k] <= margin * v[k]:
        k += 1
    return 0.5 * (v[k] + v[k + 1])


def triple_products(x):
    """r12 r23 r31 and the largest squared distance of each triplet, in combinations order."""
    idx = triplet_indices(len(x))
    d2 = np.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1)
    p, q, s = d2[idx[:, 0], idx[:, 1]], d2[idx[:, 1], idx[:, 2]], d2[idx[:, 2], idx[:, 0]]
    return np.sqrt(p * q * s), np.maximum(np.maximum(p, q), s)


def num(v):
    """v as text that parses back to the same float64."""
    return repr(float(v))


def rel(got, ref):
    """max |got - ref| / max |ref|."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    return float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))


def read_triplet(path):
    with h5py.File(path, "r") as f:
        e = f["energy"]
        return dict(energy=float(e[()]), energy_bytes=e[()].tobytes(), energy_dtype=e.dtype, energy_shape=e.shape,
                    per_point=f["energy_per_point"][:], per_dtype=f["energy_per_point"].dtype,
                    forces=f["forces"][:], forces_dtype=f["forces"].dtype,
                    triplet=f["triplet_energy"][:] if "triplet_energy" in f else None,
                    triplet_dtype=f["triplet_energy"].dtype if "triplet_energy" in f else None,
                    points=f["points"][:] if "points" in f else None,
                    attrs=dict(e.attrs), done=f["progress/done"][:], offsets=f["progress/offsets"][:])


def sums_bytes(h):
    return (h["energy_bytes"], h["per_point"].tobytes(), h["forces"].tobytes())


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


class TripletCase(TempDirTest):
    def triplet(self, src, out, precision="float64", extra=(), np_=None, env=None, backend="cpu"):
        """tdsolve triplet SRC (an .npy path or a list of arguments) -> read_triplet."""
        src = ["--input", src] if isinstance(src, str) else list(src)
        args = ["triplet", *src, "--output", out, "--precision", precision, "--backend", backend,
                "--progress", "none", "--quiet", "--overwrite", *map(str, extra)]
        tdsolve(*args, np_=np_, env=env, check=True)
        return read_triplet(out)

    def triplets(self, jobs, workers=4):
        """self.triplet(**job) for each job, a few at a time (most of a small
        run is MPI's start-up, spent waiting): the results in order."""
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(self.triplet, **job) for job in jobs]
            return [f.result() for f in futures]

    def check_against(self, h, ref, precision, what):
        """The sums of h against the reference: returns failures."""
        tol = TOL[precision]
        bad = []
        de = abs(h["energy"] - ref["energy"]) / abs(ref["energy"])
        if not de <= tol:
            bad.append(f"{what}: /energy {h['energy']!r}, reference {ref['energy']!r} (relative {de:.3g} > {tol})")
        for key, name in (("per_point", "/energy_per_point"), ("forces", "/forces")):
            d = rel(h[key], ref[key])
            if not d <= tol:
                k = np.unravel_index(np.argmax(np.abs(h[key] - ref[key])), ref[key].shape)
                bad.append(f"{what}: {name} max|diff|/max|ref| = {d:.3g} > {tol}, worst at {k}: "
                           f"{h[key][k]!r} vs {ref[key][k]!r}")
        return bad

    def check_triplets(self, h, ref, precision, what):
        """/triplet_energy against the reference, each value within tol of
        its triplet's magnitude bound, and max|diff|/max|ref| <= tol."""
        tol = TOL[precision]
        t = h["triplet"]
        self.assertIsNotNone(t, f"{what}: no /triplet_energy")
        self.assertEqual(t.shape, ref["triplet"].shape, what)
        self.assertEqual(h["triplet_dtype"], np.float32 if precision == "float32" else np.float64, what)
        got = t.astype(np.float64)
        d = np.abs(got - ref["triplet"])
        self.assertLessEqual(rel(got, ref["triplet"]), tol, what)
        worst = int(np.argmax(d / ref["scale"]))
        self.assertLessEqual(d[worst] / ref["scale"][worst], tol,
                             f"{what}: triplet {worst} {tuple(triplet_indices(len(ref['per_point']))[worst])}: "
                             f"{got[worst]!r} vs {ref['triplet'][worst]!r}")
        # Where a cutoff drops a triplet the value is 0.
        self.assertTrue(np.all(got[~ref["kept"]] == 0), f"{what}: dropped triplets are not 0")


class TripletReferenceTest(TripletCase):
    def test_reference_gradient_is_its_energy_derivative(self):
        # The test's own analytic gradient against central differences of the
        # test's own energy, before any comparison relies on it.
        for n, nu in [(3, 1.0), (7, -0.8)]:
            x = random_points(n, 100 + n)
            f = atm_reference(x, nu)["forces"]
            h = 1e-6
            fd = np.empty_like(f)
            for i, k in itertools.product(range(n), range(3)):
                xp, xm = x.copy(), x.copy()
                xp[i, k] += h
                xm[i, k] -= h
                fd[i, k] = -(reference_energy(xp, nu) - reference_energy(xm, nu)) / (xp[i, k] - xm[i, k])
            self.assertLess(rel(fd, f), 1e-7, f"n={n}: the reference's gradient is wrong")
            # And the reference energy against a plain loop over the angles.
            e = 0.0
            for i, j, k in itertools.combinations(range(n), 3):
                a, b, c = x[i], x[j], x[k]
                r12, r23, r31 = np.linalg.norm(a - b), np.linalg.norm(b - c), np.linalg.norm(c - a)
                g1 = np.dot(b - a, c - a) / (r12 * r31)
                g2 = np.dot(a - b, c - b) / (r12 * r23)
                g3 = np.dot(a - c, b - c) / (r31 * r23)
                e += nu * (1 + 3 * g1 * g2 * g3) / (r12 * r23 * r31) ** 3
            self.assertAlmostEqual(atm_reference(x, nu)["energy"] / e, 1.0, places=12)

    def test_sums_match_numpy_reference(self):
        failures = []
        cases = [(n, nu, precision) for n, nu in [(3, 1.0), (4, 0.37), (7, -1.25), (32, 1.0), (33, 2.5), (50, 1.0),
                                                  (301, 0.8)] for precision in ("float64", "float32")]
        jobs = [dict(src=self.save_npy(f"x{n}.npy", random_points(n, n)), out=self.path(f"t{n}{precision}.h5"),
                     precision=precision, extra=["--nu", num(nu)] + (["--store-points"] if n == 33 else []))
                for n, nu, precision in cases]
        for (n, nu, precision), h in zip(cases, self.triplets(jobs)):
            x = random_points(n, n)
            ref = reference(n, n, nu)
            what = f"n={n} nu={nu} {precision}"
            failures += self.check_against(h, ref, precision, what)
            # The layout.
            self.assertEqual((h["energy_dtype"], h["energy_shape"]), (np.float64, ()), what)
            self.assertEqual((h["per_dtype"], h["per_point"].shape), (np.float64, (n,)), what)
            self.assertEqual((h["forces_dtype"], h["forces"].shape), (np.float64, (n, 3)), what)
            self.assertIsNone(h["triplet"], f"{what}: /triplet_energy without --store-triplets")
            a = h["attrs"]
            self.assertEqual((int(a["n"]), int(a["k"]), int(a["triplets"]), int(a["block"])),
                             (n, 3, n * (n - 1) * (n - 2) // 6, 32), what)
            self.assertEqual((text(a["potential"]), text(a["precision"])), ("atm", precision), what)
            self.assertEqual(float(a["nu"]), nu, what)
            self.assertEqual((float(a["cutoff"]), float(a["cutoff_triple"])), (np.inf, np.inf), what)
            self.assertIsInstance(text(a["formula"]), str)
            self.assertTrue(np.all(h["done"] == 1), what)
            self.assertEqual((int(h["offsets"][0]), int(h["offsets"][-1])), (0, int(a["triplets"])), what)
            if n == 33:
                self.assertIsNotNone(h["points"], f"{what}: no /points with --store-points")
                np.testing.assert_array_equal(h["points"].astype(np.float64), x, what)
            else:
                self.assertIsNone(h["points"], f"{what}: /points without --store-points")
            # The program's own sums agree with each other.
            self.assertLessEqual(abs(h["per_point"].sum() - h["energy"]),
                                 1e-12 * np.abs(h["per_point"]).sum(), f"{what}: sum of per-point != energy")
            self.assertLessEqual(np.max(np.abs(h["forces"].sum(0))), 1e-11 * n * np.max(np.abs(h["forces"])),
                                 f"{what}: the forces do not sum to 0")
        self.assertEqual(failures, [], "\n".join(failures))

    def test_triplet_energies_match_reference(self):
        cases = [(50, 50, 1.5), (301, 301, 0.8)]  # n, seed, nu (n = 301: the points of the test above)
        jobs = [dict(src=self.save_npy(f"x{n}.npy", random_points(n, seed)), out=self.path(f"s{n}{precision}.h5"),
                     precision=precision, extra=["--nu", num(nu), "--store-triplets"])
                for n, seed, nu in cases for precision in ("float64", "float32")]
        results = iter(self.triplets(jobs, workers=2))
        for n, seed, nu in cases:
            ref = reference(n, seed, nu)
            for precision in ("float64", "float32"):
                what = f"--store-triplets n={n} {precision}"
                h = next(results)
                self.check_triplets(h, ref, precision, what)
                self.assertEqual(self.check_against(h, ref, precision, what), [])

    def test_small_scale_in_float32(self):
        # Distances ~1e-3: (abc)^(-5/2) alone would overflow float32, the
        # energies (~1e27) and forces do not (the GPU twin is in TripletGpuTest).
        x = (random_points(301, 17) * 1e-3).astype(np.float32).astype(np.float64)
        h = self.triplet(self.save_npy("small.npy", x), self.path("s.h5"), "float32")
        self.assertEqual(self.check_against(h, atm_reference(x, 1.0), "float32", "small scale"), [])

    def test_forces_are_finite_differences_of_the_energy(self):
        n = 20
        x = random_points(n, 2020)
        src = self.save_npy("x.npy", x)
        f = self.triplet(src, self.path("f.h5"))["forces"]
        side = n ** (1 / 3)
        step = 1e-5 * side
        rng = np.random.default_rng(3)
        strongest = np.unravel_index(np.argmax(np.abs(f)), f.shape)
        coords = [strongest] + [(int(rng.integers(n)), int(rng.integers(3))) for _ in range(3)]
        jobs, moved = [], []
        for i, k in coords:
            for sign in (1, -1):
                y = x.copy()
                y[i, k] += sign * step
                tag = f"{i}_{k}_{sign}"
                jobs.append(dict(src=self.save_npy(f"y{tag}.npy", y), out=self.path(f"y{tag}.h5")))
                moved.append(y[i, k])
        energies = [h["energy"] for h in self.triplets(jobs)]
        for c, (i, k) in enumerate(coords):
            fd = -(energies[2 * c] - energies[2 * c + 1]) / (moved[2 * c] - moved[2 * c + 1])
            self.assertLessEqual(abs(fd - f[i, k]), 1e-6 * np.max(np.abs(f)),
                                 f"point {i} axis {k}: /forces {f[i, k]!r}, -dE/dx by central differences {fd!r}")

    def test_translation_and_rotation(self):
        n = 60
        x = random_points(n, 606)
        rng = np.random.default_rng(60)
        R = random_rotation(rng)
        y = x @ R.T + np.array([3.25, -7.5, 11.0])
        a = self.triplet(self.save_npy("x.npy", x), self.path("a.h5"))
        b = self.triplet(self.save_npy("y.npy", y), self.path("b.h5"))
        self.assertLessEqual(abs(b["energy"] - a["energy"]), 1e-12 * abs(a["energy"]),
                             f"/energy {a['energy']!r} moves to {b['energy']!r}")
        self.assertLessEqual(rel(b["per_point"], a["per_point"]), 1e-10, "/energy_per_point changes")
        self.assertLessEqual(rel(b["forces"], a["forces"] @ R.T), 1e-10, "/forces do not rotate with the points")
        # The rotation is not the identity: the forces really turned.
        self.assertGreater(rel(b["forces"], a["forces"]), 1e-2)

    # --- cutoffs -----------------------------------------------------------

    def test_cutoffs_match_reference(self):
        n, nu = 60, 1.0
        x = random_points(n, 6060)
        src = self.save_npy("x.npy", x)
        prod, longest2 = triple_products(x)
        # Values away from every distance / triple product by 1e-4 relative,
        # so float32 arithmetic cannot move a triplet across them.
        rc = gap_value(pdist(x), 0.45, 1e-4)
        rt = float(np.cbrt(gap_value(prod, 0.4, 3e-4)))
        rc2 = gap_value(pdist(x), 0.6, 1e-4)  # with a triple cutoff that drops some of what it keeps
        rt2 = float(np.cbrt(gap_value(prod[longest2 <= rc2 * rc2], 0.5, 3e-4)))
        full = atm_reference(x, nu)
        for what, kw in [("--cutoff", dict(cutoff=rc)), ("--cutoff-triple", dict(cutoff_triple=rt)),
                         ("both", dict(cutoff=rc2, cutoff_triple=rt2))]:
            ref = atm_reference(x, nu, **kw)
            share = ref["kept"].mean()
            self.assertTrue(0.05 < share < 0.9, f"{what}: keeps {share:.2f} of the triplets")
            # The cutoff moves the energy by 10x the float32 tolerance at least.
            self.assertGreater(abs(ref["energy"] - full["energy"]), 1e-4 * abs(full["energy"]), what)
            extra = ["--store-triplets"]
            if "cutoff" in kw:
                extra += ["--cutoff", num(kw["cutoff"])]
            if "cutoff_triple" in kw:
                extra += ["--cutoff-triple", num(kw["cutoff_triple"])]
            for precision in ("float64", "float32"):
                h = self.triplet(src, self.path("c.h5"), precision, extra)
                self.assertEqual(self.check_against(h, ref, precision, f"{what} {precision}"), [])
                self.check_triplets(h, ref, precision, f"{what} {precision}")
                a = h["attrs"]
                self.assertEqual(float(a["cutoff"]), kw.get("cutoff", np.inf), what)
                self.assertEqual(float(a["cutoff_triple"]), kw.get("cutoff_triple", np.inf), what)

    def test_cutoff_is_inclusive_on_exact_distances(self):
        # Integer points: squared distances are exact integers, and many
        # distances are exactly 2 = the cutoff (LAMMPS: r^2 <= rc^2 counts).
        g = np.array(list(itertools.product(range(4), range(3), range(3))), dtype=np.float64)
        x = g[np.random.default_rng(5).permutation(len(g))]
        src = self.save_npy("grid.npy", x)
        incl = atm_reference(x, 1.0, cutoff=2.0)
        excl = atm_reference(x, 1.0, cutoff=float(np.nextafter(2.0, 0.0)))
        on_edge = incl["kept"] & ~excl["kept"]
        self.assertGreater(on_edge.sum(), 100, "no triplet has a distance of exactly the cutoff")
        self.assertGreater(abs(incl["energy"] - excl["energy"]), 1e-3 * abs(incl["energy"]))
        for precision in ("float64", "float32"):
            h = self.triplet(src, self.path("g.h5"), precision, ["--cutoff", "2.0", "--store-triplets"])
            self.assertEqual(self.check_against(h, incl, precision, f"grid cutoff 2.0 {precision}"), [])
            self.check_triplets(h, incl, precision, f"grid cutoff 2.0 {precision}")
            self.assertTrue(np.all(h["triplet"][on_edge] != 0), f"{precision}: triplets at r = cutoff dropped")
        # Just below 2 (float64): those triplets go.
        h = self.triplet(src, self.path("g.h5"), "float64",
                         ["--cutoff", num(np.nextafter(2.0, 0.0)), "--store-triplets"])
        self.assertEqual(self.check_against(h, excl, "float64", "grid cutoff 2 - 1 ulp"), [])
        self.assertTrue(np.all(h["triplet"][on_edge] == 0), "triplets beyond the cutoff by 1 ulp counted")
        # And a triple cutoff between the grid's products, with the cutoff.
        prod = triple_products(x)[0]
        self.assertGreater(len(np.unique(prod[incl["kept"]])), 3)
        rt = float(np.cbrt(gap_value(prod[incl["kept"]], 0.5, 1e-3)))
        ref = atm_reference(x, 1.0, cutoff=2.0, cutoff_triple=rt)
        self.assertTrue(0.1 < ref["kept"].sum() / incl["kept"].sum() < 0.9)
        for precision in ("float64", "float32"):
            h = self.triplet(src, self.path("g.h5"), precision, ["--cutoff", "2", "--cutoff-triple", num(rt)])
            self.assertEqual(self.check_against(h, ref, precision, f"grid cutoffs 2, {rt} {precision}"), [])

    # --- the same bytes for any split of the work --------------------------

    def test_same_bytes_for_ranks_maps_threads(self):
        n = 301
        src = self.save_npy("x.npy", random_points(n, 31))
        runs = [(f"{r} ranks", [], r) for r in (2, 3, 4)] + [
            ("--map bb", ["--map", "bb", "--threads", "2"], None),
            ("--map bb on 2 ranks", ["--map", "bb"], 2),
            ("--threads 1", ["--threads", "1"], None)]
        cases = [(p, label, extra, ranks) for p in ("float64", "float32")
                 for label, extra, ranks in [("1 rank", ["--threads", "2"], None)] + runs
                 if p == "float64" or label in ("1 rank", "2 ranks", "--map bb", "--map bb on 2 ranks")]
        jobs = [dict(src=src, out=self.path(f"r{k}.h5"), precision=p, extra=extra, np_=ranks)
                for k, (p, label, extra, ranks) in enumerate(cases)]
        results = self.triplets(jobs, workers=3)
        want = {}
        for (precision, label, _, _), h in zip(cases, results):
            if label == "1 rank":
                self.assertGreaterEqual(len(h["done"]), 3, "too few chunks to split the work")
                want[precision] = sums_bytes(h)
                continue
            for name, got, ref in zip(("/energy", "/energy_per_point", "/forces"), sums_bytes(h), want[precision]):
                self.assertEqual(got, ref, f"{precision} {label}: {name} differs from 1 rank, 2 threads")

    def test_same_bytes_for_any_chunk_size(self):
        n = 400  # C(400,3) float64 values: 85 MB, several chunks of 1 MiB
        src = self.save_npy("x.npy", random_points(n, 400))
        a = self.triplet(src, self.path("a.h5"), "float64", ["--store-triplets", "--chunk-mb", "64"])
        b = self.triplet(src, self.path("b.h5"), "float64", ["--store-triplets", "--chunk-mb", "1"], np_=2)
        self.assertGreater(len(b["done"]), len(a["done"]), "--chunk-mb 1 gives no more chunks than 64")
        self.assertGreaterEqual(len(b["done"]), 4)
        for name, x, y in zip(("/energy", "/energy_per_point", "/forces"), sums_bytes(a), sums_bytes(b)):
            self.assertEqual(x, y, f"{name} differs between --chunk-mb 64 (1 rank) and 1 (2 ranks)")
        self.assertLessEqual(rel(b["triplet"], a["triplet"]), 1e-14, "/triplet_energy depends on the chunks")
        # Storing the triplets does not change the sums either.
        c = self.triplet(src, self.path("c.h5"), "float64")
        self.assertEqual(sums_bytes(c), sums_bytes(a), "the sums differ with and without --store-triplets")

    # --- the file ----------------------------------------------------------

    def test_info_on_complete_file(self):
        out = self.path("i.h5")
        self.triplet(self.save_npy("x.npy", random_points(40, 40)), out, "float64", ["--store-triplets"])
        r = tdsolve("info", out)
        # Note: k=3 support in `tdsolve info` was being added when this was written.
        self.assertEqual(r.returncode, 0, f"tdsolve info on a complete triplet file:\n{r.stdout}{r.stderr}")

    # --- bad input ---------------------------------------------------------

    def test_bad_input(self):
        gen = ["--generate", "uniform:50:3:1"]
        rng = np.random.default_rng(9)
        dup = rng.random((10, 3))
        dup[7] = dup[2]

        def bad(args, expect=()):
            return self.run_bad_command("triplet", args, expect, casefold=True)

        bad(["--input", self.save_npy("two.npy", rng.random((2, 3)))], ["2 points"])
        bad(["--generate", "uniform:2:3:1"], ["2 points"])
        bad(["--input", self.save_npy("d2.npy", rng.random((10, 2)))], ["d = 2"])
        bad(["--generate", "uniform:10:4:1"], ["d = 4"])
        for precision in ("float64", "float32"):
            bad(["--input", self.save_npy("dup.npy", dup), "--precision", precision], ["2 and 7"])
        bad(["--input", self.save_h5("dup.h5", "/p", dup) + ":/p"], ["2 and 7"])
        for v in ("0", "-1", "-0.5"):
            bad([*gen, "--cutoff", v], ["--cutoff"])
        for v in ("0", "-2"):
            bad([*gen, "--cutoff-triple", v], ["--cutoff-triple"])
        for v in ("64", "128", "16"):
            bad([*gen, "--block", v], ["--block"])
        bad(["--generate", "uniform:300:3:1", "--store-triplets", "--store-limit-gb", "0.01",
             "--precision", "float64"], ["--store-limit-gb"])
        bad([*gen, "--potential", "lj"], ["--potential"])
        for v in ("nan", "inf", "-inf"):
            bad([*gen, "--nu", v], ["--nu"])
        # Above 2,000,000 points one chunk's exact sums could pass their carry
        # room; refused before the generator allocates anything.
        bad(["--generate", "uniform:2000001:3:1"], ["2000001", "2000000"])


# --- stopping and resuming ---------------------------------------------------

RESUME_N = 700  # 10 chunks of triplets


class TripletResumeTest(TripletCase):
    @classmethod
    def setUpClass(cls):
        cls.refdir = tempfile.mkdtemp(prefix="tdsolve_triplet_ref_")
        cls.src = os.path.join(cls.refdir, "x.npy")
        np.save(cls.src, random_points(RESUME_N, 77))
        cls.args = ["--input", cls.src, "--precision", "float64", "--backend", "cpu", "--nu", "0.9",
                    "--cutoff", "4.5", "--progress", "none"]
        ref = os.path.join(cls.refdir, "ref.h5")
        tdsolve("triplet", *cls.args, "--output", ref, "--quiet", check=True)
        cls.ref = read_triplet(ref)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.refdir, ignore_errors=True)

    def flagged(self, out):
        """(chunks flagged done, chunks) of the unfinished run; checks that
        it is one tdsolve info calls unfinished and the output is not there."""
        self.assertFalse(os.path.exists(out), "an unfinished run must not take the output's name")
        with h5py.File(out + ".partial", "r") as f:
            done = f["progress/done"][:]
        i = tdsolve("info", out)
        self.assertEqual(i.returncode, 3, i.stdout + i.stderr)
        self.assertNotIn("INCONSISTENT", i.stdout)
        return int(done.sum()), len(done)

    def killed(self, out):
        """Rank 1 of 2 killed at chunk 8, after checkpoints (slowed so that
        some come first): (the run, chunks flagged); some, not all."""
        r, _, _ = killed_after_checkpoints(["triplet", *self.args], out, "1:8:kill",
                                           env={"TDSOLVE_TEST_SLOW_MS": "300", "TDSOLVE_TEST_CHECKPOINT_S": "0.2"})
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        flagged, chunks = self.flagged(out)
        self.assertTrue(0 < flagged < chunks, f"{flagged} of {chunks} chunks flagged by the checkpoints")
        return r, flagged

    def resume_to_reference(self, out, ranks, flagged):
        r = tdsolve("triplet", *self.args, "--output", out, "--resume", np_=ranks)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("resuming", r.stdout)
        self.assertIn(f"{flagged} of", r.stdout)
        self.assertFalse(os.path.exists(out + ".partial"))
        h = read_triplet(out)
        self.assertTrue(np.all(h["done"] == 1))
        for name, got, want in zip(("/energy", "/energy_per_point", "/forces"), sums_bytes(h), sums_bytes(self.ref)):
            self.assertEqual(got, want, f"{name} after resuming on {ranks} ranks differs from an uninterrupted run")

    def test_max_hours_stop_on_2_ranks_resumes_on_3(self):
        out = self.path("t.h5")
        r = tdsolve("triplet", *self.args, "--output", out, "--max-hours", "0.0008", np_=2,  # 2.9 s
                    env={"TDSOLVE_TEST_SLOW_MS": "400", "TDSOLVE_TEST_CHECKPOINT_S": "0.2"})
        if r.returncode == 0:
            self.skipTest("the run finished within 2.9 s on this machine: nothing to stop")
        self.assertEqual(r.returncode, STOPPED, r.stdout + r.stderr)
        self.assertIn("--max-hours reached", r.stderr)
        flagged, chunks = self.flagged(out)
        self.assertTrue(0 < flagged < chunks, f"{flagged} of {chunks} chunks flagged at the clean stop")
        self.resume_to_reference(out, 3, flagged)

    def signalled(self, out, sig, ranks):
        """The job in the background (under mpiexec with `ranks`), sent `sig`
        a second after its .partial appears: (exit status, stderr)."""
        cmd = [BIN, "triplet", *self.args, "--output", out]
        if ranks:
            cmd = [MPIEXEC, "-n", str(ranks), "--oversubscribe", *cmd]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, TDSOLVE_TEST_SLOW_MS="300", TDSOLVE_TEST_CHECKPOINT_S="0.2"))
        self.wait_for(out + ".partial", p, ended_ok=True)
        time.sleep(1.0)
        p.send_signal(sig)
        _, err = p.communicate(timeout=120)
        if p.returncode == 0:
            self.skipTest("the run finished before the signal")
        return p.returncode, err

    def test_sigterm_stop_resumes_on_2_ranks(self):
        out = self.path("t.h5")
        rc, err = self.signalled(out, signal.SIGTERM, None)
        self.assertEqual(rc, STOPPED, err)
        self.assertIn("stopped cleanly (SIGTERM)", err)
        flagged, chunks = self.flagged(out)  # 0 only if the signal beat the first chunk: still resumable
        self.assertLess(flagged, chunks, "the clean stop flagged every chunk")
        self.resume_to_reference(out, 2, flagged)

    def test_sigusr1_to_mpiexec_stops_2_ranks_resumes_on_1(self):
        # Under mpiexec SIGUSR1 is the stop signal (docs/usage.md): Open MPI
        # 4.1's mpiexec forwards it to every rank; SIGTERM it does not.
        out = self.path("t.h5")
        rc, err = self.signalled(out, signal.SIGUSR1, 2)
        self.assertEqual(rc, STOPPED, err)
        self.assertIn("stopped cleanly (SIGUSR1)", err)
        flagged, chunks = self.flagged(out)
        self.assertLess(flagged, chunks, "the clean stop flagged every chunk")
        self.resume_to_reference(out, 1, flagged)

    def test_killed_rank_keeps_checkpoint_and_resumes(self):
        out = self.path("t.h5")
        r, flagged = self.killed(out)
        self.assertIn("injected SIGKILL", r.stderr)
        self.resume_to_reference(out, 1, flagged)

    def test_sums_keep_a_window_of_the_limbs(self):
        # /progress/sums keeps the window [first_limb, first_limb + W) of the
        # 69 limbs; each row, read as the integer the file says it is, is the
        # exact sum /energy and /forces round (Python's integers and
        # Fraction: an independent reading of the layout).
        from fractions import Fraction
        out = self.path("t.h5")
        tdsolve("triplet", *self.args, "--output", out, "--quiet", check=True)
        with h5py.File(out, "r") as f:
            sums = f["progress/sums"][()]
            first = int(f["progress/sums"].attrs["first_limb"])
            self.assertEqual(int(f["progress/sums"].attrs["limbs"]), f["progress/sums"].shape[1])
            energy, forces = f["energy"][()], f["forces"][()]
            self.assertEqual(f["progress/sums"].maxshape, (4 * RESUME_N + 1, None))
        self.assertEqual(sums.shape[0], 4 * RESUME_N + 1)
        self.assertLessEqual(sums.shape[1], 12, "the window is not compact")
        self.assertTrue(np.all(sums[:, :-1] >= 0) and np.all(sums[:, :-1] < 2 ** 32))

        def value(row):
            v = sum(int(x) << (32 * c) for c, x in enumerate(row))
            return float(Fraction(v) * Fraction(2) ** (32 * first - 1074))
        self.assertAlmostEqual(value(sums[4 * RESUME_N]), float(energy), delta=abs(float(energy)) * 1e-15)
        for p in (0, 7, RESUME_N - 1):
            for x in range(3):
                want = forces[p, x]
                self.assertAlmostEqual(value(sums[RESUME_N + 3 * p + x]), want, delta=abs(want) * 1e-15 + 1e-300)

    def test_earlier_versions_sums_resume(self):
        # A partial file of an earlier version kept all 69 limbs (no
        # first_limb): rewritten so, it resumes to the uninterrupted bytes
        # and keeps its 69 columns.
        out = self.path("t.h5")
        self.killed(out)
        with h5py.File(out + ".partial", "r+") as f:
            d = f["progress/sums"]
            first, packed, what = int(d.attrs["first_limb"]), d[()], d.attrs["what"]
            full = np.zeros((packed.shape[0], 69), np.int64)
            for r_, row in enumerate(packed):
                v = sum(int(x) << (32 * (first + c)) for c, x in enumerate(row))
                full[r_, :68] = [(v >> (32 * k)) & 0xFFFFFFFF for k in range(68)]
                full[r_, 68] = v >> (32 * 68)
            for a in range(2):  # the dimension scales stay attached to the new one
                d.dims[a].detach_scale(f["progress/sum_row" if a == 0 else "progress/limb"])
            del f["progress/sums"]
            old = f.create_dataset("progress/sums", data=full)
            old.attrs["what"] = what
        r = tdsolve("triplet", *self.args, "--output", out, "--resume", np_=2)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        h = read_triplet(out)
        for name, got, want in zip(("/energy", "/energy_per_point", "/forces"), sums_bytes(h), sums_bytes(self.ref)):
            self.assertEqual(got, want, f"{name} resumed from 69 limbs differs from an uninterrupted run")
        with h5py.File(out, "r") as f:
            self.assertEqual(f["progress/sums"].shape, (4 * RESUME_N + 1, 69))
            self.assertEqual(int(f["progress/sums"].attrs["first_limb"]), 0)
            self.assertEqual(int(f["progress/sums"].attrs["limbs"]), 69)

    def test_damaged_sums_refused(self):
        # A limb outside [0, 2^32), a window past the 69th limb: refused in
        # one line, the file left as it was.
        out = self.path("t.h5")
        self.killed(out)
        partial = out + ".partial"
        shutil.copy(partial, self.path("good.h5"))
        for damage, why in [("limb", "outside [0, 2^32)"), ("window", "limbs past the 69th")]:
            shutil.copy(self.path("good.h5"), partial)
            with h5py.File(partial, "r+") as f:
                d = f["progress/sums"]
                if damage == "limb":
                    x = d[0, 0]
                    d[0, 0] = -1 if d.shape[1] > 1 else x
                    self.assertGreater(d.shape[1], 1)
                else:
                    d.attrs["first_limb"] = np.uint64(69 - d.shape[1] + 1)
            with open(partial, "rb") as f:
                before = f.read()
            r = tdsolve("triplet", *self.args, "--output", out, "--resume")
            self.assertEqual(r.returncode, 1, damage + ": " + r.stdout + r.stderr)
            self.assertIn(why, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            with open(partial, "rb") as f:
                self.assertEqual(f.read(), before, damage + ": the refused resume changed the file")

    def test_changed_parameters_refused(self):
        out = self.path("t.h5")
        r = tdsolve("triplet", *self.args, "--output", out, env={"TDSOLVE_TEST_FAULT": "0:3:kill"})
        self.assertNotEqual(r.returncode, 0)
        self.assertTrue(os.path.exists(out + ".partial"))
        with open(out + ".partial", "rb") as f:
            before = f.read()
        for opt, value, named in [("--nu", "1.1", "nu"), ("--cutoff", "5", "cutoff"),
                                  ("--precision", "float32", "precision")]:
            args = list(self.args)
            args[args.index(opt) + 1] = value
            r = tdsolve("triplet", *args, "--output", out, "--resume")
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("different job", r.stderr)
            self.assertIn(named, r.stderr)
            with open(out + ".partial", "rb") as f:
                self.assertEqual(f.read(), before, f"a refused resume ({opt} {value}) changed the file")
        r = tdsolve("triplet", *self.args, "--cutoff-triple", "3", "--output", out, "--resume")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("cutoff_triple", r.stderr)
        with open(out + ".partial", "rb") as f:
            self.assertEqual(f.read(), before, "a refused resume (--cutoff-triple 3) changed the file")
        self.resume_to_reference(out, 2, self.flagged(out)[0])
        # Complete: --resume says so and leaves the file alone; another nu is refused.
        with open(out, "rb") as f:
            before = f.read()
        r = tdsolve("triplet", *self.args, "--output", out, "--resume")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("already complete", r.stdout)
        args = list(self.args)
        args[args.index("--nu") + 1] = "1.1"
        r = tdsolve("triplet", *args, "--output", out, "--resume")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("nu", r.stderr)
        with open(out, "rb") as f:
            self.assertEqual(f.read(), before, "--resume of a complete file changed it")


# --- nu per type triple (--types, --nu-types) ---------------------------------

# LAMMPS's pair_coeff I J K nu (I <= J <= K) of types 1, 2, 3: every triple,
# one of them 0.
TYPED_NU = {(1, 1, 1): 0.7, (1, 1, 2): -0.4, (1, 1, 3): 1.3, (1, 2, 2): 0.0, (1, 2, 3): 2.1,
            (1, 3, 3): 0.25, (2, 2, 2): 1.0, (2, 2, 3): -1.1, (2, 3, 3): 0.6, (3, 3, 3): 1.7}


def typed_table(nu=TYPED_NU, names=(1, 2, 3)):
    """TYPED_NU as the symmetric table of type codes 0, 1, 2."""
    code = {t: k for k, t in enumerate(names)}
    m = len(names)
    table = np.full((m, m, m), np.nan)
    for key, v in nu.items():
        for q in itertools.permutations(key):
            table[tuple(code[t] for t in q)] = v
    return table


def nu_types_arg(nu=TYPED_NU, names=None):
    """--nu-types text, each triple's types in a shuffled order (the option
    takes any order), named by `names` (a dict) or as numbers."""
    rng = np.random.default_rng(7)
    items = []
    for key, v in nu.items():
        key = [key[k] for k in rng.permutation(3)]
        items.append("-".join(str(names[t] if names else t) for t in key) + ":" + num(v))
    return ",".join(items)


class TypedAtmTest(TripletCase):
    """--nu-types against the NumPy brute force with nu per triplet (the
    types' table); the same bytes for any rank count, the culled run the same
    sums to rounding (it meets each triplet in another order) and the same
    bytes for any rank count; the table in the file and the identity."""

    N = 97  # not a multiple of the tile's 32

    def setUp(self):
        super().setUp()
        self.x = random_points(self.N, 9797)
        self.types = np.random.default_rng(97).integers(1, 4, self.N)
        self.src = self.save_npy("x.npy", self.x)
        self.tsrc = self.path("types.txt")
        np.savetxt(self.tsrc, self.types, fmt="%d")
        self.typed = ["--types", self.tsrc, "--nu-types", nu_types_arg()]

    def reference(self, cutoff=None):
        return atm_reference(self.x, cutoff=cutoff, types=self.types - 1, table=typed_table())

    def test_matches_numpy_reference(self):
        rc = gap_value(pdist(self.x), 0.4, 1e-4)
        for cutoff in (None, rc):
            ref = self.reference(cutoff)
            cut = ["--cutoff", num(cutoff)] if cutoff else []
            for precision in ("float64", "float32"):
                what = f"typed {precision} cutoff {cutoff}"
                h = self.triplet(self.src, self.path("t.h5"), precision, [*self.typed, *cut, "--store-triplets"])
                self.assertEqual(self.check_against(h, ref, precision, what), [])
                self.check_triplets(h, ref, precision, what)
                # The triples of nu = 0 (1-2-2) store 0.
                t = self.types - 1
                idx = triplet_indices(self.N)
                zero = np.sort(t[idx], axis=1).tolist()
                zero = np.array([z == [0, 1, 1] for z in zero])
                self.assertTrue(zero.any() and np.all(h["triplet"][zero] == 0), what)

    def test_file_records_the_table(self):
        out = self.path("t.h5")
        self.triplet(self.src, out, "float64", self.typed)
        with h5py.File(out, "r") as f:
            a = f["energy"].attrs
            self.assertNotIn("nu", a)
            self.assertEqual(text(a["type_names"]), "1,2,3")
            self.assertEqual(text(a["type_source"]), self.tsrc)
            got = {}
            for item in text(a["nu_types"]).split(","):
                key, v = item.split(":")
                got[tuple(int(t) for t in key.split("-"))] = float(v)
            self.assertEqual(got, TYPED_NU)
            self.assertIn("nu(type_i, type_j, type_k)", text(a["formula"]))
        r = tdsolve("info", out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # Another table (or no table) is another job: --resume refuses it.
        changed = {**TYPED_NU, (1, 2, 2): 0.5}
        for args, named in ((["--types", self.tsrc, "--nu-types", nu_types_arg(changed)], "nu_types"),
                            (["--nu", "1"], "nu")):
            r = tdsolve("triplet", "--input", self.src, "--precision", "float64", *args, "--output", out, "--resume",
                        "--progress", "none")
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn(named, r.stderr)
        r = tdsolve("triplet", "--input", self.src, "--precision", "float64", *self.typed, "--output", out,
                    "--resume")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("already complete", r.stdout)

    def test_same_bytes_for_ranks_and_culled_to_rounding(self):
        rc = 2.0
        ref = self.reference(rc)
        cut = ["--cutoff", num(rc)]
        jobs = [dict(src=self.src, out=self.path(f"r{k}.h5"), precision="float64", extra=[*self.typed, *cut, *extra],
                     np_=ranks)
                for k, (extra, ranks) in enumerate([(["--cull", "off"], None), (["--cull", "off"], 3),
                                                    (["--cull", "on"], None), (["--cull", "on"], 3)])]
        dense1, dense3, cull1, cull3 = self.triplets(jobs, workers=2)
        self.assertEqual(sums_bytes(dense3), sums_bytes(dense1), "dense: 3 ranks != 1 rank")
        self.assertEqual(sums_bytes(cull3), sums_bytes(cull1), "culled: 3 ranks != 1 rank")
        for h, what in ((dense1, "dense"), (cull1, "culled")):
            self.assertEqual(self.check_against(h, ref, "float64", what), [])
        self.assertLessEqual(abs(cull1["energy"] - dense1["energy"]), 1e-13 * abs(dense1["energy"]))
        self.assertLessEqual(rel(cull1["forces"], dense1["forces"]), 1e-13)
        self.assertLessEqual(rel(cull1["per_point"], dense1["per_point"]), 1e-13)

    def test_types_from_a_dump_column_and_text_labels(self):
        # A LAMMPS dump's `type` column (--types type), and labels that are
        # not numbers (an HDF5 dataset of strings; sorted as text).
        dump = self.path("x.dump")
        lo, hi = self.x.min(0) - 1, self.x.max(0) + 1
        with open(dump, "w") as f:
            f.write(f"ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n{self.N}\nITEM: BOX BOUNDS ff ff ff\n")
            for k in range(3):
                f.write(f"{lo[k]!r} {hi[k]!r}\n")
            f.write("ITEM: ATOMS id type x y z\n")
            for i, (t, p) in enumerate(zip(self.types, self.x)):
                f.write(f"{i + 1} {t} {p[0]!r} {p[1]!r} {p[2]!r}\n")
        want = sums_bytes(self.triplet(self.src, self.path("a.h5"), "float64", self.typed))
        h = self.triplet(["--input", dump], self.path("d.h5"), "float64",
                         ["--types", "type", "--nu-types", nu_types_arg()])
        self.assertEqual(sums_bytes(h), want, "--types type of a dump != the text file")
        names = {1: "Kr", 2: "Ar", 3: "Xe"}  # as text: Ar, Kr, Xe
        labels = self.save_h5("labels.h5", "/t", np.array([names[t].encode() for t in self.types]))
        out = self.path("s.h5")
        h = self.triplet(self.src, out, "float64", ["--types", labels + ":/t", "--nu-types", nu_types_arg(names=names)])
        self.assertEqual(sums_bytes(h), want, "text labels != numbers")
        with h5py.File(out, "r") as f:
            self.assertEqual(text(f["energy"].attrs["type_names"]), "Ar,Kr,Xe")

    def test_bad_input(self):
        def bad(args, expect=()):
            return self.run_bad_command("triplet", ["--input", self.src, *args], expect, casefold=True)

        table = nu_types_arg()
        missing = ",".join(i for i in table.split(",") if sorted(i.split(":")[0].split("-")) != ["1", "2", "3"])
        bad(["--types", self.tsrc, "--nu-types", missing], ["no nu", "1-2-3"])
        bad(["--types", self.tsrc, "--nu-types", table + ",1-1-4:0.5"], ["1-1-4", "'4' is not a type"])
        bad(["--types", self.tsrc, "--nu-types", table + ",1-2-1:0.5"], ["1-2-1", "twice"])
        bad(["--nu-types", table], ["--nu-types needs --types"])
        bad(["--types", self.tsrc], ["--types", "--nu-types"])
        bad(["--types", self.tsrc, "--nu-types", table, "--nu", "2"], ["--nu", "--nu-types", "exclusive"])
        bad(["--types", self.tsrc, "--nu-types", table, "--potential", "sw"], ["--types", "--potential atm"])
        bad(["--nu-types", table, "--potential", "sw"], ["--nu-types", "--potential atm"])
        bad(["--types", self.tsrc, "--nu-types", "1-1:0.5"], ["--nu-types", "1-1:0.5"])
        bad(["--types", self.tsrc, "--nu-types", table.replace(":0.7", ":nan")], ["--nu-types"])
        short = self.path("short.txt")
        np.savetxt(short, self.types[:-1], fmt="%d")
        bad(["--types", short, "--nu-types", table], ["--types", str(self.N - 1)])


# --- LAMMPS ------------------------------------------------------------------

LMP = shutil.which("lmp") or shutil.which("lmp_serial") or shutil.which("lmp_mpi")


@unittest.skipUnless(LMP, "LAMMPS (lmp or lmp_serial) is not on PATH")
class LammpsTest(TripletCase):
    def lammps(self, x, nu, cutoff, cutoff_triple, types=None):
        """LAMMPS pair_style atm on x (non-periodic box): (energy, forces).
        types: each atom's LAMMPS type (1, 2, ...), nu then a dict of
        (I, J, K) with I <= J <= K to nu (pair_coeff I J K nu)."""
        data, dump, script = self.path("atoms.data"), self.path("forces.dump"), self.path("in.atm")
        lo, hi = x.min(0) - 1.0, x.max(0) + 1.0
        types = np.ones(len(x), int) if types is None else np.asarray(types)
        ntypes = int(types.max())
        if isinstance(nu, dict):
            coeffs = "\n".join(f"pair_coeff {i} {j} {k} {num(v)}" for (i, j, k), v in sorted(nu.items()))
        else:
            coeffs = f"pair_coeff * * * {num(nu)}"
        with open(data, "w") as f:
            f.write(f"tdsolve triplet test\n\n{len(x)} atoms\n{ntypes} atom types\n\n")
            for k, ax in enumerate("xyz"):
                f.write(f"{lo[k]!r} {hi[k]!r} {ax}lo {ax}hi\n")
            f.write("\nMasses\n\n" + "".join(f"{t} 1.0\n" for t in range(1, ntypes + 1)) + "\nAtoms # atomic\n\n")
            for i, p in enumerate(x):
                f.write(f"{i + 1} {types[i]} {p[0]!r} {p[1]!r} {p[2]!r}\n")
        with open(script, "w") as f:
            f.write(f"""units lj
atom_style atomic
atom_modify map array
boundary f f f
read_data {data}
pair_style atm {num(cutoff)} {num(cutoff_triple)}
{coeffs}
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

    def test_same_as_lammps_pair_style_atm(self):
        n, nu = 30, 0.65
        x = random_points(n, 3030)
        src = self.save_npy("x.npy", x)
        diag = float(np.linalg.norm(x.max(0) - x.min(0)))
        d = pdist(x)
        rc = gap_value(d, 0.5, 1e-4)
        prod, longest2 = triple_products(x)
        rt = float(np.cbrt(gap_value(prod[longest2 <= rc * rc], 0.5, 3e-4)))
        for label, lmp_cut, extra in [("no cutoff", (2 * diag + 1, 2 * diag + 1), []),
                                      ("cutoff", (rc, 2 * diag + 1), ["--cutoff", num(rc)]),
                                      ("both cutoffs", (rc, rt), ["--cutoff", num(rc), "--cutoff-triple", num(rt)])]:
            e, f = self.lammps(x, nu, *lmp_cut)
            h = self.triplet(src, self.path("t.h5"), "float64", ["--nu", num(nu), *extra])
            self.assertLessEqual(abs(h["energy"] - e), 1e-8 * abs(e),
                                 f"{label}: tdsolve {h['energy']!r}, LAMMPS {e!r}")
            self.assertLessEqual(rel(h["forces"], f), 1e-8, f"{label}: forces differ from LAMMPS's")
            if extra:
                full = atm_reference(x, nu)["energy"]
                self.assertGreater(abs(e - full), 1e-6 * abs(full), f"{label}: the cutoff drops nothing")

    def test_typed_same_as_lammps_pair_coeff_i_j_k(self):
        # Three types, nu per unordered triple (one of them 0), given to
        # tdsolve in shuffled orders (2-1-1 for LAMMPS's 1 1 2): energy and
        # forces as LAMMPS's pair_coeff I J K, with and without a cutoff.
        n = 34
        x = random_points(n, 3434)
        types = np.random.default_rng(34).integers(1, 4, n)
        src = self.save_npy("x.npy", x)
        tsrc = self.path("types.txt")
        np.savetxt(tsrc, types, fmt="%d")
        diag = float(np.linalg.norm(x.max(0) - x.min(0)))
        rc = gap_value(pdist(x), 0.5, 1e-4)
        table = typed_table()
        for label, lmp_cut, extra in [("no cutoff", (2 * diag + 1, 2 * diag + 1), []),
                                      ("cutoff", (rc, 2 * diag + 1), ["--cutoff", num(rc)])]:
            e, f = self.lammps(x, TYPED_NU, *lmp_cut, types=types)
            h = self.triplet(src, self.path("t.h5"), "float64",
                             ["--types", tsrc, "--nu-types", nu_types_arg(), *extra])
            self.assertLessEqual(abs(h["energy"] - e), 1e-8 * abs(e), f"{label}: tdsolve {h['energy']!r}, LAMMPS {e!r}")
            self.assertLessEqual(rel(h["forces"], f), 1e-8, f"{label}: forces differ from LAMMPS's")
            print(f"typed ATM vs LAMMPS, {label}: energy rel {abs(h['energy'] - e) / abs(e):.3g}, "
                  f"forces max|diff|/max|f| {rel(h['forces'], f):.3g}")
            # The per-type nu matters: LAMMPS's energy is not the one-nu energy.
            one = atm_reference(x, 1.0, cutoff=rc if extra else None)["energy"]
            ref = atm_reference(x, cutoff=rc if extra else None, types=types - 1, table=table)
            self.assertLessEqual(abs(ref["energy"] - e), 1e-8 * abs(e), f"{label}: NumPy typed reference")
            self.assertGreater(abs(e - one), 1e-3 * abs(one), f"{label}: nu per type made no difference")


# --- GPU ---------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def gpu_probe():
    with tempfile.TemporaryDirectory() as d:
        r = tdsolve("triplet", "--generate", "uniform:10:3", "--output", os.path.join(d, "p.h5"), "--backend",
                    "cuda", "--quiet")
    return r.returncode == 0, r.stderr.strip()


class TripletGpuTest(TripletCase):
    @classmethod
    def setUpClass(cls):
        require_gpu(gpu_probe, "tdsolve triplet")

    GPU_TOL = {"float64": 1e-12, "float32": 1e-5}

    def test_cuda_matches_cpu(self):
        n_random = int(np.random.default_rng().integers(950, 1051))
        for n in (301, n_random):
            src = self.save_npy(f"x{n}.npy", random_points(n, n))
            for precision in ("float64", "float32"):
                what = f"n={n} {precision}"
                cpu = self.triplet(src, self.path("c.h5"), precision, backend="cpu")
                gpu = self.triplet(src, self.path("g.h5"), precision, backend="cuda")
                tol = self.GPU_TOL[precision]
                self.assertLessEqual(abs(gpu["energy"] - cpu["energy"]), tol * abs(cpu["energy"]), what)
                self.assertLessEqual(rel(gpu["per_point"], cpu["per_point"]), tol, what)
                self.assertLessEqual(rel(gpu["forces"], cpu["forces"]), tol, what)
                two = self.triplet(src, self.path("g2.h5"), precision, np_=2, backend="cuda")
                self.assertEqual(sums_bytes(two), sums_bytes(gpu), f"{what}: cuda 2 ranks != 1 rank")
                bb = self.triplet(src, self.path("bb.h5"), precision, ["--map", "bb"], backend="cuda")
                self.assertEqual(sums_bytes(bb), sums_bytes(gpu), f"{what}: cuda --map bb != lambda")

    def test_cuda_typed_matches_cpu(self):
        # --nu-types on the GPU: the types staged per tile, each triplet's
        # terms times its nu. CPU and CUDA within GPU_TOL (their arithmetic
        # differs, as untyped), each the same bytes on 1 and 2 ranks, culled too.
        n = 301
        x = random_points(n, 301)
        types = np.random.default_rng(301).integers(1, 4, n)
        src = self.save_npy("x.npy", x)
        tsrc = self.path("types.txt")
        np.savetxt(tsrc, types, fmt="%d")
        typed = ["--types", tsrc, "--nu-types", nu_types_arg()]
        for precision in ("float64", "float32"):
            for extra in ([], ["--cutoff", "1.5", "--cull", "on"]):
                what = f"typed {precision} {extra}"
                cpu = self.triplet(src, self.path("c.h5"), precision, [*typed, *extra], backend="cpu")
                gpu = self.triplet(src, self.path("g.h5"), precision, [*typed, *extra], backend="cuda")
                tol = self.GPU_TOL[precision]
                self.assertLessEqual(abs(gpu["energy"] - cpu["energy"]), tol * abs(cpu["energy"]), what)
                self.assertLessEqual(rel(gpu["per_point"], cpu["per_point"]), tol, what)
                self.assertLessEqual(rel(gpu["forces"], cpu["forces"]), tol, what)
                two = self.triplet(src, self.path("g2.h5"), precision, [*typed, *extra], np_=2, backend="cuda")
                self.assertEqual(sums_bytes(two), sums_bytes(gpu), f"{what}: cuda 2 ranks != 1 rank")
        # Stored triplet energies: those of nu = 0 are 0 on the GPU too.
        ref = atm_reference(x, types=types - 1, table=typed_table())
        gpu = self.triplet(src, self.path("s.h5"), "float64", [*typed, "--store-triplets"], backend="cuda")
        self.check_triplets(gpu, ref, "float64", "cuda typed stored")

    def test_cuda_stopped_runs_resume_to_the_same_bytes(self):
        # The GPU keeps each rank's running sums on the device and hands the
        # host a snapshot per chunk: a checkpoint (here after every round)
        # before a kill keeps exactly the flagged chunks' sums, on 1 and 2
        # ranks, culled or not.
        x = random_points(RESUME_N, 77)
        src = self.save_npy("x.npy", x)
        for extra in ([], ["--cutoff", "1.5", "--cull", "on"]):
            args = ["--input", src, "--precision", "float64", "--backend", "cuda", "--progress", "none", *extra]
            ref = self.path("ref.h5")
            tdsolve("triplet", *args, "--output", ref, "--overwrite", "--quiet", check=True)
            want = sums_bytes(read_triplet(ref))
            for ranks, fault in ((None, "0:4:kill"), (2, "1:7:kill")):
                what = f"{extra} ranks {ranks} {fault}"
                out = self.path("t.h5")
                for p in (out, out + ".partial"):
                    if os.path.exists(p):
                        os.remove(p)
                r, flagged, chunks = killed_after_checkpoints(["triplet", *args], out, fault, np_=ranks)
                self.assertNotEqual(r.returncode, 0, what)
                self.assertTrue(0 < flagged < chunks, f"{what}: {flagged} of {chunks} flagged")
                r = tdsolve("triplet", *args, "--output", out, "--resume", np_=3 - (ranks or 1))
                self.assertEqual(r.returncode, 0, what + r.stderr)
                self.assertEqual(sums_bytes(read_triplet(out)), want, f"{what}: resumed != unstopped")

    def test_cuda_matches_reference(self):
        n = 301
        x = random_points(n, 3)
        ref = atm_reference(x, 1.0)
        src = self.save_npy("x.npy", x)
        for precision in ("float64", "float32"):
            h = self.triplet(src, self.path("g.h5"), precision, backend="cuda")
            self.assertEqual(self.check_against(h, ref, precision, f"cuda {precision}"), [])

    def test_cuda_stored_triplets_match_cpu(self):
        n = 301
        x = random_points(n, 13)
        src = self.save_npy("x.npy", x)
        rc = gap_value(pdist(x), 0.4, 1e-4)  # no distance within float32 rounding of it
        ref = atm_reference(x, 1.0, cutoff=rc)
        for precision in ("float64", "float32"):
            extra = ["--store-triplets", "--cutoff", num(rc), "--chunk-mb", "1"]
            cpu = self.triplet(src, self.path("c.h5"), precision, extra, backend="cpu")
            gpu = self.triplet(src, self.path("g.h5"), precision, extra, backend="cuda")
            self.assertEqual(gpu["triplet_dtype"], cpu["triplet_dtype"])
            d = np.abs(gpu["triplet"].astype(np.float64) - cpu["triplet"].astype(np.float64))
            self.assertLessEqual(float(np.max(d / ref["scale"])), self.GPU_TOL[precision],
                                 f"{precision}: GPU triplet energies != CPU")
            self.assertTrue(np.all(gpu["triplet"][~ref["kept"]] == 0), f"{precision}: cutoff on the GPU")
            self.check_triplets(gpu, ref, precision, f"cuda {precision}")

    def test_small_scale_in_float32(self):
        # Distances ~1e-3: (abc)^(-5/2) alone would overflow float32; energies
        # (~1e27) and forces do not. Both backends match the reference.
        x = (random_points(301, 17) * 1e-3).astype(np.float32).astype(np.float64)
        ref = atm_reference(x, 1.0)
        src = self.save_npy("small.npy", x)
        for backend in ("cpu", "cuda"):
            h = self.triplet(src, self.path(f"{backend}.h5"), "float32", backend=backend)
            self.assertEqual(self.check_against(h, ref, "float32", f"{backend} small scale"), [])

    def test_far_points_overflow_alike(self):
        # Tiles whose squared distances could overflow a·b·c (float32: r² past
        # 1e12) take the kernel's checked path: triplets whose product
        # overflows are dropped there as on the CPU, the others still count.
        rng = np.random.default_rng()
        near = random_points(200, 5)
        far = rng.uniform(-1, 1, (70, 3)) * 3e13  # r² ~ 1e27: the product overflows float32
        mid = rng.uniform(-1, 1, (40, 3)) * 2e6   # r² ~ 1e13: past the no-check bound, no overflow
        x = np.concatenate([near, far, mid])[rng.permutation(310)].astype(np.float32).astype(np.float64)
        src = self.save_npy("far.npy", x)
        cpu = self.triplet(src, self.path("c.h5"), "float32", backend="cpu")
        gpu = self.triplet(src, self.path("g.h5"), "float32", backend="cuda")
        self.assertTrue(np.isfinite(gpu["energy"]) and np.all(np.isfinite(gpu["forces"])))
        self.assertLessEqual(abs(gpu["energy"] - cpu["energy"]), 1e-5 * abs(cpu["energy"]))
        self.assertLessEqual(rel(gpu["per_point"], cpu["per_point"]), 1e-5)
        self.assertLessEqual(rel(gpu["forces"], cpu["forces"]), 1e-5)


if __name__ == "__main__":
    unittest.main()
