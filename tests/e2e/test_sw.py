"""`tdsolve triplet --potential sw`: the three-body term of the
Stillinger-Weber potential, as LAMMPS `pair_style sw` with A = 0 (no
two-body term), against LAMMPS itself and against a float64 NumPy reference.

The reference (sw_reference below) is written from LAMMPS's threebody()
(src/MANYBODY/pair_sw.cpp), not from tdsolve's form: for every point i and
every pair j < k of its neighbours with r_ij^2 and r_ik^2 < (a sigma)^2,
    phi3 = lambda epsilon (cos theta_jik - costheta0)^2
           exp(gamma sigma / (r_ij - a sigma)) exp(gamma sigma / (r_ik - a sigma)),
cos theta from the dot product of the two bond vectors, and its forces as
LAMMPS forms them (fj, fk; -(fj + fk) on i). The test checks those forces
against central differences of the reference energy, and the energy against
a plain loop over the triplets, before trusting them. tdsolve instead
evaluates each triplet from its three squared distances (law of cosines).

Per-point energies: LAMMPS (ev_tally3) gives a third of each phi3 term to
each of i, j, k, the three points of the triplet; tdsolve gives a third of
each triplet's energy (the sum of its up to three terms) to each of its
points. The splits agree, so /energy_per_point is compared with LAMMPS's
compute pe/atom too.

Points: random points at the density of silicon (0.05 / A^3, no two closer
than DMIN) and a diamond lattice (a0 = 5.431 A) with random displacements,
in A with LAMMPS's Si.sw parameters (and once with other parameters), all
float32 numbers so float32 and float64 runs see the same points; the
sums are exact, so 3 ranks write the same bytes as 1.

LammpsSwTest skips without `lmp` on PATH; SwGpuTest compares --backend cuda
with cpu (skips without a GPU, fails instead under TDSOLVE_REQUIRE_GPU=1).
"""
import itertools
import os
import shutil
import subprocess
import sys
import unittest

import h5py
import numpy as np

from common import require_gpu, run_lammps, tdsolve
from test_triplet import TripletCase, gpu_probe, read_triplet, rel, sums_bytes, text

SI = {"epsilon": 2.1683, "sigma": 2.0951, "a": 1.80, "lambda": 21.0, "gamma": 1.20, "costheta0": -0.333333333333}
OTHER = {"epsilon": 1.5, "sigma": 2.2, "a": 1.7, "lambda": 25.0, "gamma": 1.1, "costheta0": -0.25}
NAMES = ("epsilon", "sigma", "a", "lambda", "gamma", "costheta0")
DMIN = 1.8  # A
# As ATM's test: relative to |E| (energy) or to max |reference| (per-point
# energies, forces). float32 runs here are within ~7e-7: cos theta -
# costheta0 is formed from float32 squared distances, so it keeps fewer
# digits where the angles are near the ideal one (a lattice shaken less
# than this test's 0.15 A would need a looser bound).
TOL = {"float64": 1e-10, "float32": 1e-5}


def sw_args(p):
    """The options of parameter set p."""
    return ["--potential", "sw", *itertools.chain.from_iterable((f"--{k}", repr(float(p[k]))) for k in NAMES)]


def triplet_rank(n, i, j, k):
    """Position of i<j<k in itertools.combinations(range(n), 3) (arrays)."""
    def c3(m):
        return m * (m - 1) * (m - 2) // 6

    def c2(m):
        return m * (m - 1) // 2
    return c3(n) - c3(n - i) + c2(n - i - 1) - c2(n - j) + (k - j - 1)


def sw_terms(x, p):
    """Every term of LAMMPS's three-body sum on x: (i, j, k, energy, fj, fk)
    with i the centre, j < k its two neighbours within the cutoff."""
    x = np.asarray(x, np.float64)
    n = len(x)
    cut = p["sigma"] * p["a"]
    cutsq = cut * cut
    sg, le = p["sigma"] * p["gamma"], p["lambda"] * p["epsilon"]
    d = x[None, :, :] - x[:, None, :]  # d[i, j] = x_j - x_i
    rsq = d[:, :, 0] * d[:, :, 0] + d[:, :, 1] * d[:, :, 1] + d[:, :, 2] * d[:, :, 2]
    near = rsq < cutsq
    np.fill_diagonal(near, False)
    ii, jj, kk = [], [], []
    for i in range(n):
        nb = np.flatnonzero(near[i])
        a, b = np.triu_indices(len(nb), 1)
        ii.append(np.full(len(a), i))
        jj.append(nb[a])
        kk.append(nb[b])
    i, j, k = (np.concatenate(v).astype(np.int64) for v in (ii, jj, kk))
    d1, d2 = x[j] - x[i], x[k] - x[i]
    rsq1, rsq2 = np.einsum("ij,ij->i", d1, d1), np.einsum("ij,ij->i", d2, d2)
    r1, r2 = np.sqrt(rsq1), np.sqrt(rsq2)
    rainv1, rainv2 = 1 / (r1 - cut), 1 / (r2 - cut)
    gsrainv1, gsrainv2 = sg * rainv1, sg * rainv2
    gsrainvsq1, gsrainvsq2 = gsrainv1 * rainv1 / r1, gsrainv2 * rainv2 / r2
    rinv12 = 1 / (r1 * r2)
    cs = np.einsum("ij,ij->i", d1, d2) * rinv12
    delcs = cs - p["costheta0"]
    facexp = np.exp(gsrainv1) * np.exp(gsrainv2)
    facrad = le * facexp * delcs * delcs
    frad1, frad2 = facrad * gsrainvsq1, facrad * gsrainvsq2
    facang = 2 * le * facexp * delcs
    facang12 = rinv12 * facang
    csfacang = cs * facang
    csfac1, csfac2 = csfacang / rsq1, csfacang / rsq2
    fj = d1 * (frad1 + csfac1)[:, None] - d2 * facang12[:, None]
    fk = d2 * (frad2 + csfac2)[:, None] - d1 * facang12[:, None]
    return i, j, k, facrad, fj, fk


def sw_reference(x, p=SI):
    """float64: dict(energy, per_point (thirds of each term to its three
    points), forces, triplet (each triplet's energy, combinations order),
    terms (how many))."""
    n = len(x)
    i, j, k, e, fj, fk = sw_terms(x, p)
    per = (np.bincount(i, e, n) + np.bincount(j, e, n) + np.bincount(k, e, n)) / 3
    forces = np.zeros((n, 3))
    for c in range(3):
        forces[:, c] = np.bincount(j, fj[:, c], n) + np.bincount(k, fk[:, c], n) - np.bincount(
            i, fj[:, c] + fk[:, c], n)
    s = np.sort(np.stack([i, j, k]), axis=0)
    tri = np.zeros(n * (n - 1) * (n - 2) // 6)
    np.add.at(tri, triplet_rank(n, s[0], s[1], s[2]), e)
    return dict(energy=float(e.sum()), per_point=per, forces=forces, triplet=tri, terms=len(e))


def random_points(n, seed, density=0.05, dmin=DMIN):
    """n float32-exact points uniform in a cube of n / density A^3, no two
    closer than dmin (random sequential addition)."""
    rng = np.random.default_rng(seed)
    side = (n / density) ** (1 / 3)
    pts = np.empty((n, 3))
    k = 0
    while k < n:
        c = (rng.random(3) * side).astype(np.float32).astype(np.float64)
        if k == 0 or np.min(np.sum((pts[:k] - c) ** 2, axis=1)) >= dmin * dmin:
            pts[k] = c
            k += 1
    return pts


def diamond(cells, seed, shake=0.15, a0=5.431):
    """A cells^3 block of the diamond lattice (8 atoms a cell), each atom
    displaced by N(0, shake^2) per axis, in random order, float32-exact."""
    basis = np.array([[0, 0, 0], [0, .5, .5], [.5, 0, .5], [.5, .5, 0],
                      [.25, .25, .25], [.25, .75, .75], [.75, .25, .75], [.75, .75, .25]])
    cell = np.array(list(itertools.product(range(cells), repeat=3)), np.float64)
    x = ((cell[:, None, :] + basis[None, :, :]) * a0).reshape(-1, 3)
    rng = np.random.default_rng(seed)
    x = x + rng.normal(0, shake, x.shape)
    return x[rng.permutation(len(x))].astype(np.float32).astype(np.float64)


def loop_energy(x, p):
    """The total by a plain loop over the triplets and their three centres."""
    cut = p["sigma"] * p["a"]
    e = 0.0
    for t in itertools.combinations(range(len(x)), 3):
        for c in range(3):
            i, j, k = t[c], t[(c + 1) % 3], t[(c + 2) % 3]
            u, v = x[j] - x[i], x[k] - x[i]
            ru, rv = np.linalg.norm(u), np.linalg.norm(v)
            if ru < cut and rv < cut:
                cs = np.dot(u, v) / (ru * rv)
                e += (p["lambda"] * p["epsilon"] * (cs - p["costheta0"]) ** 2
                      * np.exp(p["gamma"] * p["sigma"] / (ru - cut)) * np.exp(p["gamma"] * p["sigma"] / (rv - cut)))
    return e


class SwCase(TripletCase):
    def check_sums(self, h, ref, tol, what):
        """/energy, /energy_per_point and /forces of h against ref: failures."""
        bad = []
        de = abs(h["energy"] - ref["energy"]) / abs(ref["energy"])
        if not de <= tol:
            bad.append(f"{what}: /energy {h['energy']!r}, reference {ref['energy']!r} (relative {de:.3g} > {tol})")
        for key, name in (("per_point", "/energy_per_point"), ("forces", "/forces")):
            d = rel(h[key], ref[key])
            if not d <= tol:
                bad.append(f"{what}: {name} max|diff|/max|ref| = {d:.3g} > {tol}")
        return bad


class SwReferenceTest(SwCase):
    def test_reference_gradient_is_its_energy_derivative(self):
        # The test's own forces against central differences of its own
        # energy, and that energy against a plain loop, before any comparison
        # relies on them.
        for p, seed in ((SI, 1), (OTHER, 2)):
            x = random_points(14, seed, density=0.08, dmin=1.5)
            ref = sw_reference(x, p)
            self.assertGreater(ref["terms"], 10)
            self.assertAlmostEqual(ref["energy"] / loop_energy(x, p), 1.0, places=12)
            h = 1e-6
            fd = np.empty_like(ref["forces"])
            for i, k in itertools.product(range(len(x)), range(3)):
                xp, xm = x.copy(), x.copy()
                xp[i, k] += h
                xm[i, k] -= h
                fd[i, k] = -(sw_reference(xp, p)["energy"] - sw_reference(xm, p)["energy"]) / (xp[i, k] - xm[i, k])
            self.assertLess(rel(fd, ref["forces"]), 1e-6, "the reference's forces are not -dE/dx")
            # the per-triplet energies are the same terms
            self.assertAlmostEqual(ref["triplet"].sum() / ref["energy"], 1.0, places=12)

    def test_sums_match_reference_on_1_and_3_ranks(self):
        sets = [("random 301", random_points(301, 301), SI), ("diamond 216", diamond(3, 216), SI),
                ("random 200, other parameters", random_points(200, 200), OTHER)]
        failures = []
        for label, x, p in sets:
            ref = sw_reference(x, p)
            # Many triplets hold a term: the test is about them.
            self.assertGreater(ref["terms"], 3 * len(x), label)
            src = self.save_npy("x.npy", x)
            for precision in ("float64", "float32"):
                what = f"{label} {precision}"
                jobs = [dict(src=src, out=self.path(f"r{r}.h5"), precision=precision, extra=sw_args(p), np_=r)
                        for r in (None, 3)]
                one, three = self.triplets(jobs, workers=2)
                failures += self.check_sums(one, ref, TOL[precision], what)
                self.assertEqual(sums_bytes(three), sums_bytes(one), f"{what}: 3 ranks != 1 rank")
                self.assertGreaterEqual(len(one["done"]), 1)
                self.assertLessEqual(abs(one["per_point"].sum() - one["energy"]),
                                     1e-12 * np.abs(one["per_point"]).sum(), f"{what}: sum of per-point != energy")
                self.assertLessEqual(np.max(np.abs(one["forces"].sum(0))), 1e-11 * len(x) * np.max(
                    np.abs(one["forces"])), f"{what}: the forces do not sum to 0")
        self.assertEqual(failures, [], "\n".join(failures))

    def test_stored_triplets_match_reference(self):
        x = random_points(120, 12)
        ref = sw_reference(x)
        held = ref["triplet"] != 0
        self.assertTrue(0.005 < held.mean() < 0.5, held.mean())
        src = self.save_npy("x.npy", x)
        for precision in ("float64", "float32"):
            h = self.triplet(src, self.path("s.h5"), precision, ["--potential", "sw", "--store-triplets"])
            t = h["triplet"].astype(np.float64)
            self.assertEqual(h["triplet_dtype"], np.float32 if precision == "float32" else np.float64)
            self.assertTrue(np.all(t[~held] == 0), f"{precision}: a triplet without a term is not 0")
            self.assertLessEqual(rel(t, ref["triplet"]), TOL[precision], precision)
            self.assertEqual(self.check_sums(h, ref, TOL[precision], f"stored {precision}"), [])

    def test_translation_and_rotation(self):
        x = random_points(150, 15)
        rng = np.random.default_rng(15)
        q, r = np.linalg.qr(rng.standard_normal((3, 3)))
        R = q * np.sign(np.diag(r))
        y = x @ R.T + np.array([30.25, -17.5, 11.0])
        a = self.triplet(self.save_npy("x.npy", x), self.path("a.h5"), extra=["--potential", "sw"])
        b = self.triplet(self.save_npy("y.npy", y), self.path("b.h5"), extra=["--potential", "sw"])
        self.assertLessEqual(abs(b["energy"] - a["energy"]), 1e-11 * abs(a["energy"]))
        self.assertLessEqual(rel(b["forces"], a["forces"] @ R.T), 1e-10)
        self.assertGreater(rel(b["forces"], a["forces"]), 1e-2)

    # --- the file, the options ----------------------------------------------

    def test_file_info_and_package_name_the_potential(self):
        x = random_points(60, 60)
        out = self.path("t.h5")
        r = tdsolve("triplet", "--input", self.save_npy("x.npy", x), "--output", out, "--progress", "none",
                    *sw_args(OTHER), check=True)
        # The summary line names the potential and its parameters.
        self.assertIn("sw (epsilon 1.5, sigma 2.2, a 1.7, lambda 25, gamma 1.1, costheta0 -0.25)", r.stdout)
        with h5py.File(out, "r") as f:
            a = dict(f["energy"].attrs)
            options = text(f.attrs["options"])
        self.assertEqual(text(a["potential"]), "sw")
        for k in NAMES:
            self.assertEqual(float(a[k]), OTHER[k], k)
        for k in ("nu", "cutoff", "cutoff_triple"):
            self.assertNotIn(k, a)
        self.assertIn("pair_style sw", text(a["formula"]))
        # The effective options hold sw's parameters and none of atm's.
        names = [l.split(" = ", 1)[0] for l in options.splitlines()]
        self.assertIn("potential = sw", options.splitlines())
        self.assertIn("lambda = 25", options.splitlines())
        for k in ("nu", "cutoff", "cutoff-triple"):
            self.assertNotIn(k, names)
        i = tdsolve("info", out)
        self.assertEqual(i.returncode, 0, i.stdout + i.stderr)
        self.assertIn("potential: sw (epsilon 1.5, sigma 2.2, a 1.7, lambda 25, gamma 1.1, costheta0 -0.25)",
                      i.stdout)
        # The Python package.
        env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), "../../python"))
        py = subprocess.run([sys.executable, "-c", f"""
import tdsolve
with tdsolve.open({out!r}) as r:
    print(r.potential, sorted(r.parameters.items()), r.nu, r.complete)
"""], capture_output=True, text=True, env=env)
        self.assertEqual(py.returncode, 0, py.stderr)
        self.assertEqual(py.stdout.strip(), f"sw {sorted(OTHER.items())} None True")
        m = subprocess.run([sys.executable, "-m", "tdsolve", out], capture_output=True, text=True, env=env)
        self.assertEqual(m.returncode, 0, m.stdout + m.stderr)
        self.assertIn("potential=sw epsilon=1.5 sigma=2.2 a=1.7 lambda=25.0 gamma=1.1 costheta0=-0.25", m.stdout)
        # Fed back as a config, the options give the same job and bytes.
        cfg = self.path("again.ini")
        with open(cfg, "w") as f:
            f.write(options)
        tdsolve("triplet", "--config", cfg, "--output", self.path("t2.h5"), check=True)
        self.assertEqual(sums_bytes(read_triplet(self.path("t2.h5"))), sums_bytes(read_triplet(out)))
        # An atm file names none of sw's parameters, its options neither.
        tdsolve("triplet", "--input", self.save_npy("x.npy", x), "--output", self.path("atm.h5"), "--progress",
                "none", check=True)
        with h5py.File(self.path("atm.h5"), "r") as f:
            self.assertEqual(text(f["energy"].attrs["potential"]), "atm")
            for k in NAMES:
                self.assertNotIn(k, f["energy"].attrs)
            names = [l.split(" = ", 1)[0] for l in text(f.attrs["options"]).splitlines()]
        self.assertIn("nu", names)
        for k in NAMES:
            self.assertNotIn(k, names)

    def test_bad_options_are_one_line(self):
        gen = ["--generate", "uniform:50:3:1"]

        def bad(args, expect=()):
            return self.run_bad_command("triplet", args, expect)

        # The other potential's options, either way.
        for opt in (["--nu", "2"], ["--cutoff", "3"], ["--cutoff-triple", "3"]):
            line = bad([*gen, "--potential", "sw", *opt], [opt[0], "--potential atm", "--epsilon"])
            self.assertIn("--costheta0", line)
        for k in NAMES:
            bad([*gen, f"--{k}", "1.5"], [f"--{k}", "--potential sw", "--nu"])
        bad([*gen, "--potential", "sw", "--nu", "1"], ["--nu"])  # even at atm's default
        # Values LAMMPS refuses, and those without a cutoff.
        for k in ("epsilon", "sigma", "a", "lambda", "gamma"):
            bad([*gen, "--potential", "sw", f"--{k}", "-1"], [f"--{k}"])
        for k in ("sigma", "a"):
            bad([*gen, "--potential", "sw", f"--{k}", "0"], [f"--{k}", "positive"])
        for k in NAMES:
            for v in ("nan", "inf"):
                bad([*gen, "--potential", "sw", f"--{k}", v], [f"--{k}"])
        bad([*gen, "--potential", "sw", "--sigma", "1e200"], ["sigma"])
        bad([*gen, "--potential", "sw", "--lambda", "x"], ["lambda"])
        bad([*gen, "--potential", "lj"], ["--potential", "atm, sw"])

    def test_help_names_the_options(self):
        r = tdsolve("triplet", "--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        for k in NAMES:
            self.assertIn(f"--{k} ", r.stdout)
        self.assertIn("--potential sw", r.stdout)
        self.assertIn("(=2.1683)", r.stdout)
        self.assertIn("(=-0.333333333333)", r.stdout)

    def test_bench_problem_sw(self):
        r = tdsolve("bench", "--problem", "sw", "--generate", "uniform:150:3:1", "--backend", "cpu", "--repeat",
                    "1", "--sigma", "0.2")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(" sw n=150 ", r.stdout)
        r = tdsolve("bench", "--problem", "sw", "--generate", "uniform:150:3:1", "--nu", "2")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--nu", r.stderr)
        r = tdsolve("bench", "--problem", "atm", "--generate", "uniform:150:3:1", "--backend", "cpu", "--repeat",
                    "1")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(" atm n=150 ", r.stdout)


class SwResumeTest(SwCase):
    def test_resume_refuses_other_parameters_and_finishes(self):
        x = random_points(700, 7)  # 10 chunks
        src = self.save_npy("x.npy", x)
        args = ["--input", src, "--precision", "float64", "--backend", "cpu", "--progress", "none",
                "--potential", "sw", "--lambda", "22"]
        ref = self.path("ref.h5")
        tdsolve("triplet", *args, "--output", ref, "--quiet", check=True)
        out = self.path("t.h5")
        r = tdsolve("triplet", *args, "--output", out, env={"TDSOLVE_TEST_FAULT": "0:3:kill"})
        self.assertNotEqual(r.returncode, 0)
        self.assertTrue(os.path.exists(out + ".partial"))
        with open(out + ".partial", "rb") as f:
            before = f.read()
        for change, named in [(["--lambda", "21"], "lambda: 22 in the file, 21 now"),
                              (["--costheta0", "-0.3"], "costheta0: -0.33333"), (["--a", "1.9"], "a: 1.8"),
                              (["--potential", "atm"], "potential: sw in the file, atm now")]:
            a = list(args)
            if change[0] in a:
                a[a.index(change[0]) + 1] = change[1]
            else:
                a += change
            if change[0] == "--potential":
                a.remove("--lambda")
                a.remove("22")
            r = tdsolve("triplet", *a, "--output", out, "--resume")
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("different job", r.stderr)
            self.assertIn(named, r.stderr)
            with open(out + ".partial", "rb") as f:
                self.assertEqual(f.read(), before, f"a refused resume ({change}) changed the file")
        r = tdsolve("triplet", *args, "--output", out, "--resume", np_=3)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("resuming", r.stdout)
        self.assertEqual(sums_bytes(read_triplet(out)), sums_bytes(read_triplet(ref)))


# --- LAMMPS ------------------------------------------------------------------

LMP = shutil.which("lmp") or shutil.which("lmp_serial") or shutil.which("lmp_mpi")


@unittest.skipUnless(LMP, "LAMMPS (lmp or lmp_serial) is not on PATH")
class LammpsSwTest(SwCase):
    def lammps(self, x, p):
        """LAMMPS pair_style sw with A = 0 on x (non-periodic box): (energy,
        forces, per-atom energies)."""
        data, dump = self.path("atoms.data"), self.path("forces.dump")
        script, pot = self.path("in.sw"), self.path("tdsolve.sw")
        lo, hi = x.min(0) - 5.0, x.max(0) + 5.0
        with open(data, "w") as f:
            f.write(f"tdsolve triplet sw test\n\n{len(x)} atoms\n1 atom types\n\n")
            for k, ax in enumerate("xyz"):
                f.write(f"{lo[k]!r} {hi[k]!r} {ax}lo {ax}hi\n")
            f.write("\nMasses\n\n1 28.0855\n\nAtoms # atomic\n\n")
            for i, q in enumerate(x):
                f.write(f"{i + 1} 1 {q[0]!r} {q[1]!r} {q[2]!r}\n")
        with open(pot, "w") as f:
            # element x3, epsilon sigma a lambda gamma costheta0 A B p q tol: A = 0
            f.write("Si Si Si " + " ".join(repr(float(p[k])) for k in NAMES) + " 0.0 0.6022245584 4.0 0.0 0.0\n")
        with open(script, "w") as f:
            f.write(f"""units metal
atom_style atomic
atom_modify map array
boundary f f f
read_data {data}
pair_style sw
pair_coeff * * {pot} Si
neighbor 1.0 bin
neigh_modify one 10000 page 200000
compute pea all pe/atom
dump d all custom 1 {dump} id fx fy fz c_pea
dump_modify d sort id format float %.17g
thermo_style custom step pe
thermo_modify norm no
run 0
variable e equal pe
print "TDSOLVE_PE $(v_e:%.17g)"
""")
        energy, values = run_lammps(self, LMP, script, dump, len(x), 4)
        return dict(energy=energy, forces=values[:, :3], per_point=values[:, 3])

    def test_same_as_lammps_pair_style_sw(self):
        failures = []
        for label, x, p in [("random 400", random_points(400, 4), SI), ("diamond 512", diamond(4, 512), SI),
                            ("random 300, other parameters", random_points(300, 3), OTHER)]:
            lmp = self.lammps(x, p)
            ref = sw_reference(x, p)
            # The test's reference is LAMMPS's sum (it is only the test's
            # means of finding triplets without LAMMPS).
            self.assertLessEqual(abs(ref["energy"] - lmp["energy"]), 1e-12 * abs(lmp["energy"]), label)
            self.assertLessEqual(rel(ref["forces"], lmp["forces"]), 1e-12, label)
            self.assertLessEqual(rel(ref["per_point"], lmp["per_point"]), 1e-12, label)
            src = self.save_npy("x.npy", x)
            for precision in ("float64", "float32"):
                jobs = [dict(src=src, out=self.path(f"l{r}.h5"), precision=precision, extra=sw_args(p), np_=r)
                        for r in (None, 3)]
                one, three = self.triplets(jobs, workers=2)
                failures += self.check_sums(one, lmp, TOL[precision], f"{label} {precision} vs LAMMPS")
                self.assertEqual(sums_bytes(three), sums_bytes(one), f"{label} {precision}: 3 ranks != 1")
        self.assertEqual(failures, [], "\n".join(failures))


# --- GPU ---------------------------------------------------------------------

class SwGpuTest(SwCase):
    @classmethod
    def setUpClass(cls):
        require_gpu(gpu_probe, "tdsolve triplet")

    # CPU and GPU round differently (the GPU fuses multiply-adds, its exp
    # and sqrt are its own), each within float32's error of the reference.
    GPU_TOL = {"float64": 1e-12, "float32": TOL["float32"]}

    def test_cuda_matches_cpu_and_reference(self):
        n_random = int(np.random.default_rng().integers(950, 1051))
        for label, x, p in [("random 301", random_points(301, 31), SI), ("diamond 512", diamond(4, 5), SI),
                            (f"random {n_random}", random_points(n_random, n_random), OTHER)]:
            src = self.save_npy("x.npy", x)
            ref = sw_reference(x, p)
            for precision in ("float64", "float32"):
                what = f"{label} {precision}"
                cpu = self.triplet(src, self.path("c.h5"), precision, sw_args(p), backend="cpu")
                gpu = self.triplet(src, self.path("g.h5"), precision, sw_args(p), backend="cuda")
                tol = self.GPU_TOL[precision]
                self.assertLessEqual(abs(gpu["energy"] - cpu["energy"]), tol * abs(cpu["energy"]), what)
                self.assertLessEqual(rel(gpu["per_point"], cpu["per_point"]), tol, what)
                self.assertLessEqual(rel(gpu["forces"], cpu["forces"]), tol, what)
                self.assertEqual(self.check_sums(gpu, ref, TOL[precision], f"cuda {what}"), [])
                two = self.triplet(src, self.path("g2.h5"), precision, sw_args(p), np_=2, backend="cuda")
                self.assertEqual(sums_bytes(two), sums_bytes(gpu), f"{what}: cuda 2 ranks != 1 rank")
                bb = self.triplet(src, self.path("bb.h5"), precision, [*sw_args(p), "--map", "bb"], backend="cuda")
                self.assertEqual(sums_bytes(bb), sums_bytes(gpu), f"{what}: cuda --map bb != lambda")

    def test_cuda_stored_triplets_match_cpu(self):
        x = random_points(301, 13)
        ref = sw_reference(x)
        held = ref["triplet"] != 0
        src = self.save_npy("x.npy", x)
        for precision in ("float64", "float32"):
            extra = ["--potential", "sw", "--store-triplets", "--chunk-mb", "1"]
            cpu = self.triplet(src, self.path("c.h5"), precision, extra, backend="cpu")
            gpu = self.triplet(src, self.path("g.h5"), precision, extra, backend="cuda")
            self.assertEqual(gpu["triplet_dtype"], cpu["triplet_dtype"])
            self.assertTrue(np.all(gpu["triplet"][~held] == 0), f"{precision}: a triplet without a term is not 0")
            self.assertLessEqual(rel(gpu["triplet"], cpu["triplet"]), self.GPU_TOL[precision], precision)
            self.assertLessEqual(rel(gpu["triplet"], ref["triplet"]), TOL[precision], precision)


if __name__ == "__main__":
    unittest.main()
