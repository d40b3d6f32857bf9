#!/usr/bin/env python3
"""tdsolve triplet (culled) against LAMMPS on the same atoms, end to end.

  atm  LAMMPS `pair_style atm 2.5 2.5` (units lj, nu = 1) against
       `tdsolve triplet --nu 1 --cutoff 2.5 --cutoff-triple 2.5`, on a simple
       cubic lattice of spacing 1 (jittered by 0.05)
  sw   LAMMPS `pair_style sw` with A = 0 (the three-body term only; Si
       parameters) against `tdsolve triplet --potential sw`, on a simple cubic
       lattice of spacing 2.35 (jittered by 0.1)

Non-periodic, or with --periodic a periodic box the lattice fills (side ×
spacing a side; --tilt T shears it into a triclinic cell, xy = xz = yz = T ×
the side): LAMMPS `boundary p p p`, tdsolve `--box` (and `--tilt`). Times are of the whole
command (wall clock: LAMMPS reads its data file, builds its neighbour list and
computes the energy and forces once, `run 0`; tdsolve reads the .npy, culls,
computes and writes its file), the median of --repeat runs; tdsolve with
--cull on and, with --dense, --cull off. LAMMPS runs as `lmp` (1 process) and
under `mpirun -np RANKS`. The energies are compared (relative difference).

  python3 jobs/bench/triplet_vs_lammps.py --tdsolve build/tdsolve --side 32
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

SW_SI = dict(epsilon=2.1683, sigma=2.0951, a=1.80, **{"lambda": 21.0}, gamma=1.20, costheta0=-1.0 / 3.0)


def lattice(side, spacing, jitter, seed=1):
    g = np.arange(side) * spacing
    x = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    return x + np.random.default_rng(seed).uniform(-jitter, jitter, x.shape)


def timed(cmd, cwd, env=None):
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return dt, r.stdout


def lammps_inputs(d, x, kind, cell=None):
    """cell: None (an open box around x) or (L, tilt) of a periodic one."""
    lo, hi = x.min(0) - 5.0, x.max(0) + 5.0
    with open(os.path.join(d, "atoms.data"), "w") as f:
        f.write(f"tdsolve bench\n\n{len(x)} atoms\n1 atom types\n\n")
        if cell:
            L, t = cell
            for ax in "xyz":
                f.write(f"0 {L!r} {ax}lo {ax}hi\n")
            if t:
                f.write(f"{t!r} {t!r} {t!r} xy xz yz\n")
        else:
            for k, ax in enumerate("xyz"):
                f.write(f"{lo[k]!r} {hi[k]!r} {ax}lo {ax}hi\n")
        f.write("\nMasses\n\n1 1.0\n\nAtoms # atomic\n\n")
        for i, p in enumerate(x):
            f.write(f"{i + 1} 1 {p[0]!r} {p[1]!r} {p[2]!r}\n")
    if kind == "atm":
        head = "units lj\n"
        pair = "pair_style atm 2.5 2.5\npair_coeff * * * 1.0\nneighbor 0.3 bin\n"
    else:
        with open(os.path.join(d, "b.sw"), "w") as f:
            p = SW_SI
            f.write("Si Si Si " + " ".join(repr(float(p[k])) for k in
                                           ("epsilon", "sigma", "a", "lambda", "gamma", "costheta0")) +
                    " 0.0 0.6022245584 4.0 0.0 0.0\n")
        head = "units metal\n"
        pair = "pair_style sw\npair_coeff * * b.sw Si\nneighbor 1.0 bin\n"
    with open(os.path.join(d, "in.b"), "w") as f:
        f.write(head + """atom_style atomic
atom_modify map array
boundary """ + ("p p p" if cell else "f f f") + """
read_data atoms.data
""" + pair + """neigh_modify one 10000 page 200000
thermo_style custom step pe
thermo_modify norm no
run 0
variable e equal pe
print "BENCH_PE $(v_e:%.17g)"
""")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--tdsolve", default=os.path.join(here, "../../build/tdsolve"))
    ap.add_argument("--lmp", default=shutil.which("lmp") or "",
                    help="LAMMPS's binary (default: lmp on PATH; none: tdsolve alone)")
    ap.add_argument("--launcher", default="", help='prefix of tdsolve, e.g. "bash .devrun/on-device.sh"')
    ap.add_argument("--side", type=int, default=32, help="lattice points a side (n = side^3)")
    ap.add_argument("--ranks", type=int, default=2, help="LAMMPS's mpirun -np (0: skip)")
    ap.add_argument("--backend", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dense", action="store_true", help="also tdsolve --cull off")
    ap.add_argument("--only", choices=["atm", "sw"])
    ap.add_argument("--periodic", action="store_true", help="a periodic box the lattice fills")
    ap.add_argument("--tilt", type=float, default=0.0, help="with --periodic: xy = xz = yz = TILT × the side")
    a = ap.parse_args()
    a.tdsolve = os.path.abspath(a.tdsolve)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               HDF5_USE_FILE_LOCKING="FALSE", OMPI_MCA_rmaps_base_oversubscribe="1")
    print(f"# {time.strftime('%Y-%m-%d %H:%M %Z')}, {os.cpu_count()} CPUs, n = {a.side ** 3}, "
          f"tdsolve --backend {a.backend}, median of {a.repeat}" +
          (f", periodic (tilt {a.tilt} of the side)" if a.periodic else ", open boundaries"))
    print("| potential | run | seconds | energy | rel. diff. to LAMMPS |")
    print("|---|---|---:|---:|---:|")
    for kind in ("atm", "sw"):
        if a.only and kind != a.only:
            continue
        spacing = 1.0 if kind == "atm" else 2.35
        x = lattice(a.side, spacing, 0.05 if kind == "atm" else 0.1)
        cell, box = None, []
        if a.periodic:
            L = a.side * spacing
            t = a.tilt * L
            H = np.array([[L, 0, 0], [t, L, 0], [t, t, L]])
            x = (x / L) @ H  # the lattice sheared into the cell
            cell = (L, t)
            box = ["--box", f"{L!r},{L!r},{L!r}"] + (["--tilt", f"{t!r},{t!r},{t!r}"] if t else [])
        with tempfile.TemporaryDirectory() as d:
            np.save(os.path.join(d, "x.npy"), x)
            lammps_inputs(d, x, kind, cell)
            runs = [("lammps, 1 process", [a.lmp, "-in", "in.b", "-log", "none", "-nocite"])] if a.lmp else []
            if a.ranks > 1 and a.lmp:
                runs.append((f"lammps, mpirun -np {a.ranks}",
                             ["mpirun", "-np", str(a.ranks), a.lmp, "-in", "in.b", "-log", "none", "-nocite"]))
            pot = (["--nu", "1", "--cutoff", "2.5", "--cutoff-triple", "2.5"] if kind == "atm" else
                   ["--potential", "sw"] + [x for k, v in SW_SI.items() for x in (f"--{k}", repr(v))])
            for cull in (["on", "off"] if a.dense else ["on"]):
                runs.append((f"tdsolve --cull {cull}",
                             [*a.launcher.split(), a.tdsolve, "triplet", "--input", "x.npy", *pot, *box,
                              "--precision", "float64",
                              "--backend", a.backend, "--cull", cull, "--output", "t.h5", "--overwrite",
                              "--progress", "none"]))
            ref = None
            for label, cmd in runs:
                times, out = [], ""
                for _ in range(a.repeat):
                    dt, out = timed(cmd, d, env)
                    times.append(dt)
                if label.startswith("lammps"):
                    e = float(next(l for l in out.splitlines() if l.startswith("BENCH_PE")).split()[1])
                    ref = e if ref is None else ref
                else:
                    with h5py.File(os.path.join(d, "t.h5"), "r") as f:
                        e = float(f["energy"][()])
                    note = next((l for l in out.splitlines() if "culled" in l or "dense" in l), "")
                    label += f" ({note.split(': ', 1)[-1]})" if note else ""
                diff = abs(e - ref) / abs(ref) if ref else float("nan")
                print(f"| {kind} | {label} | {statistics.median(times):.2f} | {e:.10g} | {diff:.1e} |", flush=True)


if __name__ == "__main__":
    main()
