#!/usr/bin/env python3
r"""Byte-identity check of two tdsolve builds: every command's result files.

Runs a fixed matrix of cases (every command; edm with every metric; both
precisions; 1 and 3 ranks) with an old and a new tdsolve binary and compares
the two result files of each case: every dataset byte for byte (its dtype,
shape, maxshape and the raw bytes of ds[()]) and every attribute. Only these
may differ:
  - root `created` (the time of the run): ignored;
  - root `version`: reported as a note when it changed;
  - root `command`: compared without its first word (the binary's path);
  - root attributes that only the new file has (`kind`, `schema_version`,
    ...): reported as "added", not as a difference;
  - object references (the dimension scales' DIMENSION_LIST and
    REFERENCE_LIST) are compared by the name of the object they point to,
    not by its address in the file, and REFERENCE_LIST (the datasets
    attached to a scale) as a set, not in the order they were attached;
  - --ignore-attr NAME: an attribute of that name anywhere, reported as
    ignored.
A difference that the project accepts is listed in EXPECTED below (a case
regex and the reason); such a case is reported as "expected" and passes.

Every run of a case, whatever the build or rank count, runs under MPI in
the same working folder DIR/work/CASE (output `out.h5`, inputs
../../inputs/...), so that the command line and the `input` and `options`
attributes (which hold absolute paths) are the same strings for both builds;
its file is then moved to DIR/TAG/CASE@rR. So both phases must be given the
same --out DIR. The runs' environment adds, unless already set,
HDF5_USE_FILE_LOCKING=FALSE and OMPI_MCA_pml=ob1 (Open MPI without UCX's
start-up cost), and as root OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM)=1. Exit status:
0 when every case is identical (or an expected exception), 1 otherwise, 2
for a usage error.

  # both binaries here (CPU):
  jobs/compare-builds.py --old /path/to/old/tdsolve --new build/tdsolve --backend cpu
  # in two phases, when the binaries cannot both be at hand (the GPU machine):
  jobs/compare-builds.py --phase run --bin OLD --tag old --out DIR --backend cuda \
      --mpiexec 'bash .devrun/on-device.sh mpirun'
  jobs/compare-builds.py --phase run --bin NEW --tag new --out DIR --backend cuda \
      --mpiexec 'bash .devrun/on-device.sh mpirun'
  jobs/compare-builds.py --phase compare --out DIR --table DIR/table.md
  # one binary, 1 rank against 3 ranks (the design's rank invariance):
  jobs/compare-builds.py --old B --new B --pair-ranks 1:3 --quick
"""
import argparse
import concurrent.futures
import datetime
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

try:
    import h5py
    import numpy as np
except ImportError as e:  # a Python without them first on PATH (Debian's is /usr/bin/python3)
    sys.exit(f"compare-builds: {e}; run it with a Python that has h5py and NumPy (Debian: /usr/bin/python3 "
             "with python3-h5py)")

# Differences the project has accepted: (regex on the case id "NAME@rR",
# regex on a difference's line, why). A case whose every difference matches
# an entry of its own is reported as "expected" (with the reasons) and does
# not fail the comparison; any other difference still fails it. Keep each
# entry's reason honest and its regexes narrow.
EXPECTED = [
    # Core v2 (after 68463c1): selections cut their chunks by pairs tested,
    # unless --chunk-mb is given (then as before); their pairs, distances and
    # counts are compared byte for byte like everything else.
    (r"^(collide|knn\.radius)(?!.*chunks)",
     r"^/progress(/(offsets|done|chunk|chunk_edge): shape|/(chunk|chunk_edge) attribute NAME: | attribute chunks: )",
     "selections (collide, knn --radius) cut their chunks by the pairs tested (core v2): another plan"),
    # collide's --chunk-mb now defaults to 0 (automatic), which the file's
    # record of the effective options says.
    (r"^collide", r"^/ attribute options: ",
     "collide's --chunk-mb defaults to 0 (chunks by pairs tested) since core v2"),
    # schema_version 2 (1501136): triplet files keep a window of their sums'
    # limbs (/progress/sums narrower, its limb axis unlimited, first_limb and
    # limbs attributes); every kind's files say 2.
    (r".", r"^/ attribute schema_version: 1 \(old\) vs 2 \(new\)$",
     "schema_version 2: triplet's /progress/sums keeps a window of its limbs"),
    (r"^triplet", r"^/progress/(sums|limb)\b",
     "triplet's /progress/sums keeps the window of limbs its sums use (schema_version 2)"),
    # schema_version 3: hist's layout grows (/r, /cumulative, /rdf's norm,
    # exclusions, a --types run's type pairs); every kind's files say 3.
    (r".", r"^/ attribute schema_version: 2 \(old\) vs 3 \(new\)$",
     "schema_version 3: hist's bin centres, cumulative counts, norms, exclusions and type pairs"),
    # ... and in every hist file: the bins' axis is /r, the bin centres (a
    # coordinate variable, in place of the pure dimension /bin), /cumulative
    # and /counts' `convention`, /rdf's `norm`; counts, edges, under- and
    # overflow and rdf are compared byte for byte as before.
    (r"^hist", r"^/(bin: only in old|r: only in new|cumulative: only in new)$",
     "hist's bins' axis is /r, the bin centres, and /cumulative is new (schema_version 3)"),
    (r"^hist", r"^/(counts|rdf) attribute DIMENSION_LIST: ",
     "hist's counts and rdf are on the axis /r, no longer /bin (schema_version 3)"),
    (r"^hist", r"^/counts attribute convention: only in new |^/rdf attribute norm: only in new \('rdf'\)$",
     "hist's counts say their pair convention, its rdf its norm (schema_version 3)"),
]

MANIFEST = "manifest.json"
TAIL = 3000  # characters of stdout/stderr kept in the manifest

# ---- inputs --------------------------------------------------------------------


def make_inputs():
    """The input arrays the matrix reads, by file name (a fixed seed each):
    0/1 data for the boolean metrics, points with duplicates and clusters,
    spheres with duplicates, a variance and a weights file."""
    rng = np.random.default_rng(20261122)
    x = {}
    x["bool5.npy"] = (rng.random((1000, 5)) < 0.5).astype(np.uint8)
    x["bool5b.npy"] = (rng.random((700, 5)) < 0.4).astype(np.uint8)
    # float 0/1 features past one 64-bit word, in an HDF5 file
    x["bool70.h5"] = (rng.random((1031, 70)) < 0.3).astype(np.float32)
    # clusters of near points, and exact duplicates (zero distances, ties)
    centres = rng.random((40, 3))
    dup = centres[rng.integers(0, 40, 1031)] + 0.01 * rng.standard_normal((1031, 3))
    dup[500:600] = dup[0:100]
    dup[700:710] = dup[3]
    x["dup.npy"] = dup.astype(np.float64)
    # spheres x, y, z, r with repeated rows and repeated centres
    sph = np.empty((1000, 4))
    sph[:, :3] = rng.random((1000, 3))
    sph[:, 3] = 0.04 * rng.random(1000)
    sph[800:900] = sph[0:100]
    sph[900:950, :3] = sph[100:150, :3]
    sph[950:960, 3] = 0.0
    x["spheres_dup.npy"] = sph
    x["variance17.npy"] = 0.05 + rng.random(17)
    x["weights17.npy"] = np.where(rng.random(17) < 0.2, 0.0, rng.random(17) * 3)
    return x


def array_sha(a):
    a = np.ascontiguousarray(a)
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes())
    return h.hexdigest()


def read_input(path):
    if path.endswith(".h5"):
        with h5py.File(path, "r") as f:
            return f["x"][()]
    return np.load(path)


def write_inputs(folder):
    """Writes the inputs under `folder` unless they are there already with
    the same values; returns {name: sha256 of the array}."""
    os.makedirs(folder, exist_ok=True)
    hashes = {}
    for name, a in make_inputs().items():
        path = os.path.join(folder, name)
        hashes[name] = array_sha(a)
        try:
            same = os.path.exists(path) and array_sha(read_input(path)) == hashes[name]
        except Exception:
            same = False
        if same:
            continue
        tmp = path + ".tmp"
        if name.endswith(".h5"):
            with h5py.File(tmp, "w") as f:
                f.create_dataset("x", data=a)
        else:
            with open(tmp, "wb") as f:
                np.save(f, a)
        os.replace(tmp, path)
    return hashes


# ---- the matrix ------------------------------------------------------------------


class Case:
    def __init__(self, name, argv, ranks=(1, 3), quick=False):
        self.name = name
        self.argv = [str(a) for a in argv]  # after `tdsolve`, without output and backend
        self.ranks = tuple(ranks)
        self.quick = quick


def inp(name):
    """An input file as the case's working directory DIR/TAG/CASE sees it."""
    return "../../inputs/" + name


PRECISIONS = (("f32", "float32"), ("f64", "float64"))


def edm_cases():
    cases = []

    def add(name, args, quick=(), precisions=PRECISIONS, chunked=True):
        # --chunk-mb 1: C(1000,2) values make 2 chunks (float32) or 4, so that 3 ranks share them
        chunks = ["--chunk-mb", "1"] if chunked else []
        for short, p in precisions:
            cases.append(Case(f"edm.{name}.{short}", ["edm", *args, *chunks, "--precision", p], quick=short in quick))

    # euclidean: every d with a kernel of its own on the GPU (d <= 8) and the general path
    for d in (1, 2, 3, 4, 5, 7, 8, 16, 33):
        add(f"euclidean.d{d}.n1031", ["--generate", f"uniform:1031:{d}:{d}"], quick=("f32", "f64") if d == 3 else (),
            chunked=False)
    for d in (3, 16):
        add(f"euclidean.d{d}.n1031.bb", ["--generate", f"uniform:1031:{d}:{d}", "--map", "bb"])
    add("euclidean.d3.n1031.block256", ["--generate", "uniform:1031:3:3", "--block", "256"], chunked=False)
    # many chunks (23 of 1 MiB in float32), split unevenly over the ranks
    add("euclidean.d3.n4099.chunks", ["--generate", "uniform:4099:3:11"], quick=("f32",))
    add("euclidean.d5.n1000.points", ["--generate", "uniform:1000:5:12", "--store-points"], precisions=PRECISIONS[1:])
    for metric in ("sqeuclidean", "cityblock", "chebyshev", "cosine", "correlation", "braycurtis", "canberra"):
        for d in (3, 17):
            add(f"{metric}.d{d}.n1000", ["--generate", f"uniform:1000:{d}:{d + 1}", "--metric", metric])
    for p in ("3", "1.5"):
        for d in (3, 17):
            add(f"minkowski.p{p}.d{d}.n1000", ["--generate", f"uniform:1000:{d}:{d + 2}", "--metric", "minkowski", "--p", p])
    add("minkowski.pinf.d4.n1000", ["--generate", "uniform:1000:4:5", "--metric", "minkowski", "--p", "inf"])
    for d in (3, 17):
        add(f"seuclidean.d{d}.n1000", ["--generate", f"uniform:1000:{d}:{d + 3}", "--metric", "seuclidean"])
    add("seuclidean.variance.d3.n1000",
        ["--generate", "uniform:1000:3:6", "--metric", "seuclidean", "--variance", "0.5,1,2"])
    add("seuclidean.variancefile.d17.n1000",
        ["--generate", "uniform:1000:17:20", "--metric", "seuclidean", "--variance", inp("variance17.npy")],
        precisions=PRECISIONS[1:])
    for d in (3, 17):
        add(f"jensenshannon.d{d}.n1000", ["--generate", f"uniform:1000:{d}:{d + 4}", "--metric", "jensenshannon"])
    add("jensenshannon.base2.d3.n1000", ["--generate", "uniform:1000:3:7", "--metric", "jensenshannon", "--base", "2"])
    # --weights on every metric that takes them (a weight 0 among them)
    for metric in ("euclidean", "sqeuclidean", "cityblock", "chebyshev", "cosine", "minkowski", "correlation",
                   "braycurtis", "canberra"):
        extra = ["--p", "3"] if metric == "minkowski" else []
        add(f"{metric}.weights.d5.n1000",
            ["--generate", "uniform:1000:5:13", "--metric", metric, *extra, "--weights", "1,0.5,2,0,1.5"],
            quick=("f64",) if metric == "cosine" else ())
    add("euclidean.weightsfile.d17.n1000",
        ["--generate", "uniform:1000:17:14", "--weights", inp("weights17.npy")], precisions=PRECISIONS[1:])
    # the boolean metrics on 0/1 data: 5 features (uint8 .npy) and 70 (float32 .h5, two words)
    for metric in ("hamming", "jaccard", "dice", "russellrao", "rogerstanimoto", "sokalmichener", "sokalsneath",
                   "yule"):
        add(f"{metric}.bool5", ["--input", inp("bool5.npy"), "--metric", metric],
            quick=("f32",) if metric == "jaccard" else ())
        add(f"{metric}.bool70", ["--input", inp("bool70.h5") + ":/x", "--metric", metric])
    # duplicates and clusters: zero distances
    for metric in ("euclidean", "cosine"):
        add(f"{metric}.dup", ["--input", inp("dup.npy"), "--metric", metric])
    return cases


def cross_cases():
    cases = []

    def add(name, args, quick=(), chunked=True):
        chunks = ["--chunk-mb", "1"] if chunked else []  # 700 x 1031 values: 3 chunks or 6
        for short, p in PRECISIONS:
            cases.append(Case(f"cross.{name}.{short}", ["cross", *args, *chunks, "--precision", p],
                              quick=short in quick))

    def gen(d, s):
        return ["--generate", f"uniform:700:{d}:{s}", "--with-generate", f"uniform:1031:{d}:{s + 100}"]

    add("euclidean.d3", gen(3, 1), chunked=False)
    add("euclidean.d16", gen(16, 2), chunked=False)
    add("euclidean.d3.chunks", gen(3, 3), quick=("f32",))
    add("cityblock.d3", [*gen(3, 4), "--metric", "cityblock"])
    add("cosine.d7", [*gen(7, 5), "--metric", "cosine"])
    add("minkowski.p3.d5", [*gen(5, 6), "--metric", "minkowski", "--p", "3"])
    add("seuclidean.d4", [*gen(4, 7), "--metric", "seuclidean"])
    add("canberra.d5.weights", [*gen(5, 8), "--metric", "canberra", "--weights", "1,0.5,2,0,1.5"])
    add("jaccard.bool5", ["--input", inp("bool5b.npy"), "--with", inp("bool5.npy"), "--metric", "jaccard"])
    return cases


def hist_cases():
    cases = []
    # (metric, range without --box, range with --box 1,1,1): the first leaves
    # distances on both sides, so /underflow and /overflow are not 0
    ranges = {"euclidean": ("0.05:1.5", "0:0.9"), "cityblock": ("0.1:2.5", "0:1.5")}
    for metric, (lohi, lohi_box) in ranges.items():
        for box in (False, True):
            for bins in (1, 100, 10000):
                for short, p in PRECISIONS:
                    args = ["hist", "--generate", "uniform:1500:3:21", "--metric", metric, "--bins", bins,
                            "--range", lohi_box if box else lohi, "--precision", p]
                    if box:
                        args += ["--box", "1,1,1"]
                    name = f"hist.{metric}{'.box' if box else ''}.bins{bins}.{short}"
                    cases.append(Case(name, args, quick=(metric == "euclidean" and box and bins == 100 and short == "f64")))
    for short, p in PRECISIONS:
        cases.append(Case(f"hist.euclidean.bins100.bb.{short}",
                          ["hist", "--generate", "uniform:1500:3:22", "--bins", 100, "--range", "0.05:1.5", "--map",
                           "bb", "--precision", p]))
    return cases


def knn_cases():
    cases = []

    def add(name, args, quick=()):
        for short, p in PRECISIONS:
            cases.append(Case(f"knn.{name}.{short}", ["knn", *args, "--precision", p], quick=short in quick))

    for k in (1, 5, 32):
        for d in (3, 32):
            add(f"k{k}.euclidean.d{d}", ["--generate", f"uniform:1031:{d}:{d + 30}", "--k", k])
    for metric in ("cityblock", "cosine", "chebyshev", "seuclidean"):
        for d in (3, 32):
            add(f"k5.{metric}.d{d}", ["--generate", f"uniform:1031:{d}:{d + 40}", "--metric", metric, "--k", 5])
    add("k32.euclidean.dup", ["--input", inp("dup.npy"), "--k", 32])  # ties, zeros
    add("k5.hamming.bool70", ["--input", inp("bool70.h5") + ":/x", "--metric", "hamming", "--k", 5])
    # --radius: about 30 neighbours a point (n (4/3) pi r^3 = 30), 0 (the
    # duplicates alone), and one larger than the set (every pair)
    add("radius.euclidean.d3", ["--generate", "uniform:2000:3:51", "--radius", "0.153"])
    add("radius.cityblock.d3.chunks", ["--generate", "uniform:2000:3:52", "--metric", "cityblock", "--radius", "0.19",
                                       "--chunk-mb", "1"], quick=("f64",))
    add("radius0.euclidean.dup", ["--input", inp("dup.npy"), "--radius", "0"])
    add("radius.euclidean.d3.all", ["--generate", "uniform:500:3:53", "--radius", "10"])
    add("radius.euclidean.d3.chunks.bb", ["--generate", "uniform:2000:3:54", "--radius", "0.153", "--chunk-mb", "1",
                                          "--map", "bb"])
    # 6000 x 32 neighbours: 3 chunks of 1 MiB
    add("k32.euclidean.d3.n6000.chunks.bb", ["--generate", "uniform:6000:3:55", "--k", 32, "--chunk-mb", "1", "--map",
                                             "bb"], quick=("f32",))
    return cases


def collide_cases():
    specs = [
        ("collide.d1", "spheres:3000:1:61", False),
        ("collide.d1.rmax", "spheres:3000:1:62:0.005", False),
        ("collide.d3", "spheres:2000:3:63", False),
        ("collide.d3.rmax", "spheres:2000:3:64:0.1", False),
    ]
    cases = [Case(name, ["collide", "--generate", spec], quick=q) for name, spec, q in specs]
    cases.append(Case("collide.d3.dupfile", ["collide", "--input", inp("spheres_dup.npy")]))
    cases.append(Case("collide.d3.chunks.bb", ["collide", "--generate", "spheres:2000:3:65:0.1", "--chunk-mb", "1",
                                               "--map", "bb"], quick=True))
    return cases


def triplet_cases():
    cases = []
    variants = [
        ("plain", [], False),
        ("cutoff", ["--cutoff", "0.3", "--nu", "0.7"], False),
        ("cutoff.triple", ["--cutoff", "0.35", "--cutoff-triple", "0.25"], True),
        ("cutoff.store", ["--cutoff", "0.3", "--store-triplets", "--chunk-mb", "1"], False),
        ("points.bb", ["--store-points", "--map", "bb"], False),
    ]
    for name, extra, quick in variants:
        for short, p in PRECISIONS:
            cases.append(Case(f"triplet.{name}.n229.{short}",
                              ["triplet", "--generate", "uniform:229:3:71", *extra, "--precision", p],
                              quick=quick and short == "f64"))
    return cases


def fractal_cases():
    # one rank: the command refuses more
    specs = [
        ("fractal.sierpinski.nu", ["--shape", "sierpinski-triangle", "--level", 7, "--steps", 30, "--snapshot-every",
                                   10], True),
        ("fractal.vicsek.lambda", ["--shape", "vicsek", "--level", 4, "--steps", 20, "--map", "lambda"], False),
        ("fractal.carpet.bb", ["--shape", "sierpinski-carpet", "--level", 4, "--steps", 10, "--map", "bb"], False),
        ("fractal.table.rule", ["--shape", "3:0,0/2,0/1,1/0,2/2,2", "--level", 4, "--steps", 15, "--rule", "B36/S23",
                                "--init", "random:0.3:5", "--snapshot-every", 4], False),
    ]
    return [Case(name, ["fractal", *args], ranks=(1,), quick=q) for name, args, q in specs]


def matrix(quick):
    cases = edm_cases() + cross_cases() + hist_cases() + knn_cases() + collide_cases() + triplet_cases() + \
        fractal_cases()
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    return [c for c in cases if c.quick] if quick else cases


# ---- running -----------------------------------------------------------------------


def tail(text, n=TAIL):
    return text if len(text) <= n else "..." + text[-n:]


def file_sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def child_env():
    env = dict(os.environ)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    env.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")
    # Open MPI's ob1 messaging layer: UCX's start-up alone costs about 0.25 s
    # a run on the 2-core build machine, where most runs take under a second
    env.setdefault("OMPI_MCA_pml", "ob1")
    return env


def is_open_mpi(mpiexec, env):
    try:
        r = subprocess.run([*mpiexec, "--version"], capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "Open MPI" in r.stdout + r.stderr or "OpenRTE" in r.stdout + r.stderr


def run_group(argv, cwd, env, timeout):
    """(exit status, stdout, stderr) of argv, run in a process group of its
    own so that a run past `timeout` is ended with the launcher's children
    (exit status 124 then)."""
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err
    except subprocess.TimeoutExpired:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                break
            try:
                out, err = p.communicate(timeout=10)
                break
            except subprocess.TimeoutExpired:
                out, err = "", ""
        return 124, out or "", (err or "") + f"\n(ended after {timeout} s)"


def case_id(name, ranks):
    return f"{name}@r{ranks}"


def run_one(case, ranks, binary, tag_dir, args, env, open_mpi):
    """One run of `case` at `ranks` ranks. It runs in OUT/work/NAME, the same
    folder for every tag and rank count (the file records the absolute paths
    of its output and inputs in `options`), and its out.h5 is then moved to
    OUT/TAG/NAME@rR."""
    cid = case_id(case.name, ranks)
    cwd = os.path.join(args.out, "work", case.name)
    shutil.rmtree(cwd, ignore_errors=True)
    os.makedirs(cwd)
    launch = [*args.mpiexec_argv, "-np", str(ranks)]
    if open_mpi and ranks > (os.cpu_count() or 1):
        launch.append("--oversubscribe")
    argv = [*launch, binary, *case.argv, "--backend", args.backend, "--progress", "none", "--output", "out.h5"]
    t0 = time.monotonic()
    rc, out, err = run_group(argv, cwd, env, args.timeout)
    entry = {"id": cid, "name": case.name, "ranks": ranks, "argv": argv, "cwd": os.path.relpath(cwd, args.out),
             "rc": rc, "seconds": round(time.monotonic() - t0, 3), "stdout_tail": tail(out),
             "stderr_tail": tail(err), "output": None}
    if rc == 0:
        if os.path.exists(os.path.join(cwd, "out.h5")):
            keep = os.path.join(tag_dir, cid)
            os.makedirs(keep)
            os.replace(os.path.join(cwd, "out.h5"), os.path.join(keep, "out.h5"))
            entry["output"] = os.path.join(os.path.relpath(keep, args.out), "out.h5")
        else:
            entry["stderr_tail"] += "\n(exit 0 but no out.h5)"
    shutil.rmtree(cwd, ignore_errors=True)
    return entry


def selected(cases, args):
    if args.filter:
        rx = re.compile(args.filter)
        cases = [c for c in cases if rx.search(c.name)]
    return cases


def run_phase(binary, tag, ranks_list, args):
    """Runs every selected case at each of `ranks_list` (where the case
    allows it) with `binary`; writes the outputs and the manifest under
    OUT/TAG."""
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        sys.exit(f"compare-builds: {binary} is not an executable file")
    binary = os.path.abspath(binary)
    tag_dir = os.path.join(args.out, tag)
    if os.path.exists(tag_dir):
        if os.listdir(tag_dir) and not os.path.exists(os.path.join(tag_dir, MANIFEST)):
            sys.exit(f"compare-builds: {tag_dir} exists and is not a folder this script wrote; "
                     "choose another --out")
        shutil.rmtree(tag_dir)
    os.makedirs(tag_dir)
    inputs = write_inputs(os.path.join(args.out, "inputs"))
    env = child_env()
    open_mpi = is_open_mpi(args.mpiexec_argv, env)
    # through the launcher: on the GPU machine only it finds the carried libraries
    rc, vout, verr = run_group([*args.mpiexec_argv, "-np", "1", binary, "--version"], args.out, env, 120)
    version = vout.strip() if rc == 0 else f"? (--version: exit {rc}: {tail(verr.strip(), 200)})"
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    # one job a case, its rank counts one after the other (they share a folder)
    jobs = []
    for c in selected(matrix(args.quick), args):
        ranks = [r for r in ranks_list if r in c.ranks]
        if not ranks and args.pair_ranks:
            ranks = [min(c.ranks)]  # fractal: one rank on both sides
        if ranks:
            jobs.append((c, ranks))
    print(f"[{tag}] {sum(len(r) for _, r in jobs)} runs of {binary} ({args.backend}) into {tag_dir}", flush=True)
    t0 = time.monotonic()

    def one(job):
        done = []
        for ranks in job[1]:
            e = run_one(job[0], ranks, binary, tag_dir, args, env, open_mpi)
            state = "ok" if e["output"] else f"FAILED (exit {e['rc']})"
            print(f"[{tag}] {e['id']:<48} {state} {e['seconds']:.1f} s", flush=True)
            done.append(e)
        return done

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        entries = [e for done in pool.map(one, jobs) for e in done]
    shutil.rmtree(os.path.join(args.out, "work"), ignore_errors=True)
    manifest = {
        "tag": tag, "binary": binary, "binary_sha256": file_sha(binary),
        "version": version, "backend": args.backend,
        "mpiexec": args.mpiexec_argv, "quick": args.quick, "filter": args.filter,
        "host": platform.node(), "started": started,
        "seconds": round(time.monotonic() - t0, 1), "inputs": inputs, "cases": entries,
    }
    with open(os.path.join(tag_dir, MANIFEST + ".tmp"), "w") as f:
        json.dump(manifest, f, indent=1)
    os.replace(os.path.join(tag_dir, MANIFEST + ".tmp"), os.path.join(tag_dir, MANIFEST))
    failed = sum(1 for e in entries if not e["output"])
    print(f"[{tag}] done in {manifest['seconds']} s: {len(entries) - failed} ran, {failed} failed", flush=True)
    return manifest


# ---- comparing -----------------------------------------------------------------------


def norm(f, v):
    """An attribute or dataset value in a form that compares by meaning where
    the file layout may legitimately differ (references by the name of their
    target) and by raw bytes everywhere else."""
    if isinstance(v, h5py.h5r.RegionReference):
        return ("regionref", f[v].name if v else None)
    if isinstance(v, h5py.h5r.Reference):
        return ("ref", f[v].name if v else None)
    if isinstance(v, np.ndarray):
        if v.dtype.hasobject:
            return ("array", v.dtype.names, v.shape, tuple(norm(f, x) for x in v.reshape(-1)))
        return ("array", v.dtype.str, v.dtype.descr, v.shape, np.ascontiguousarray(v).tobytes())
    if isinstance(v, np.void):
        return ("record", tuple(norm(f, x) for x in v.tolist()) if v.dtype.names else v.tobytes())
    if isinstance(v, np.generic):
        return ("scalar", v.dtype.str, v.tobytes())
    if isinstance(v, (str, bytes, int, float)):
        return (type(v).__name__, v)
    if isinstance(v, h5py.Empty):
        return ("empty", str(v.dtype))
    if isinstance(v, (list, tuple)):
        return ("seq", tuple(norm(f, x) for x in v))
    return ("other", repr(v))


def attr_type(obj, name):
    dt = obj.attrs.get_id(name).dtype
    s = h5py.check_string_dtype(dt)
    return ("string", s.encoding, s.length) if s else dt.str


def show(v, limit=160):
    s = repr(v)
    return s if len(s) <= limit else s[:limit] + "..."


def command_tail(cmd):
    """The root `command` without its first word (the binary's own path)."""
    try:
        words = shlex.split(cmd)
    except ValueError:
        words = cmd.split(" ")
    return words[1:]


def compare_attrs(fa, fb, path, oa, ob, ignore, diffs, notes):
    ka, kb = set(oa.attrs.keys()), set(ob.attrs.keys())
    root = path == "/"
    for name in sorted(ka | kb):
        where = f"{path} attribute {name}"
        if name in ignore or (root and name == "created"):
            continue
        if name not in kb:
            diffs.append(f"{where}: only in old ({show(oa.attrs[name])})")
            continue
        if name not in ka:
            if root:
                notes.append(f"added {where} = {show(ob.attrs[name])}")
            else:
                diffs.append(f"{where}: only in new ({show(ob.attrs[name])})")
            continue
        va, vb = oa.attrs[name], ob.attrs[name]
        ta, tb = attr_type(oa, name), attr_type(ob, name)
        if root and name == "version":
            if va != vb:
                notes.append(f"version {show(va)} -> {show(vb)}")
            continue
        if root and name == "command" and isinstance(va, str) and isinstance(vb, str):
            same = command_tail(va) == command_tail(vb)
        elif name == "REFERENCE_LIST" and isinstance(va, np.ndarray) and isinstance(vb, np.ndarray):
            same = sorted(map(repr, norm(fa, va)[3])) == sorted(map(repr, norm(fb, vb)[3]))
        else:
            same = norm(fa, va) == norm(fb, vb)
        if ta != tb:
            diffs.append(f"{where}: type {ta} (old) vs {tb} (new)")
        elif not same:
            diffs.append(f"{where}: {show(va)} (old) vs {show(vb)} (new)")


def first_difference(a, b):
    """(count, first flat index, old value, new value, max |new-old|) of the
    elements of two arrays of one dtype and shape whose bytes differ."""
    n = a.size
    if n == 0:
        return 0, None, None, None, None
    item = a.dtype.itemsize
    av = np.ascontiguousarray(a).reshape(-1).view(np.uint8).reshape(n, item)
    bv = np.ascontiguousarray(b).reshape(-1).view(np.uint8).reshape(n, item)
    where = np.flatnonzero(np.any(av != bv, axis=1))
    if where.size == 0:
        return 0, None, None, None, None
    i = int(where[0])
    fa, fb = a.reshape(-1), b.reshape(-1)
    worst = None
    if a.dtype.kind in "fiu":
        with np.errstate(invalid="ignore", over="ignore"):
            d = np.abs(fb[where].astype(np.float64) - fa[where].astype(np.float64))
        if np.any(np.isfinite(d)):
            worst = float(np.nanmax(np.where(np.isfinite(d), d, np.nan)))
    return int(where.size), i, fa[i], fb[i], worst


def compare_dataset(fa, fb, path, da, db, diffs):
    if da.dtype != db.dtype:
        diffs.append(f"{path}: dtype {da.dtype.str} (old) vs {db.dtype.str} (new)")
        return
    if da.shape != db.shape:
        diffs.append(f"{path}: shape {da.shape} (old) vs {db.shape} (new)")
        return
    if da.maxshape != db.maxshape:
        diffs.append(f"{path}: maxshape {da.maxshape} (old) vs {db.maxshape} (new)")
    a, b = np.asarray(da[()]), np.asarray(db[()])
    if da.dtype.hasobject:
        if norm(fa, a) != norm(fb, b):
            diffs.append(f"{path}: object values differ")
        return
    if a.tobytes() == b.tobytes():
        return
    count, i, va, vb, worst = first_difference(a, b)
    index = tuple(int(j) for j in np.unravel_index(i, a.shape)) if a.shape else ()
    more = f"; max |new - old| {worst:.6g}" if worst is not None else ""
    diffs.append(f"{path}: {count} of {a.size} values differ; first at {list(index)}: "
                 f"{show(va)} (old) vs {show(vb)} (new){more}")


def objects(f):
    found = {"/": f}
    f.visititems(lambda name, obj: found.setdefault("/" + name, obj) and None)
    return found


def compare_files(path_a, path_b, ignore=()):
    """(differences, notes) between two result files: every object, every
    dataset's dtype/shape/maxshape/bytes, every attribute (see the module's
    doc for what may differ)."""
    diffs, notes = [], []
    ignore = set(ignore)
    with h5py.File(path_a, "r") as fa, h5py.File(path_b, "r") as fb:
        oa, ob = objects(fa), objects(fb)
        for path in sorted(set(oa) | set(ob)):
            if path not in ob:
                diffs.append(f"{path}: only in old")
                continue
            if path not in oa:
                diffs.append(f"{path}: only in new")
                continue
            a, b = oa[path], ob[path]
            if isinstance(a, h5py.Dataset) != isinstance(b, h5py.Dataset):
                diffs.append(f"{path}: a {type(a).__name__} (old) vs a {type(b).__name__} (new)")
                continue
            if isinstance(a, h5py.Dataset):
                compare_dataset(fa, fb, path, a, b, diffs)
            compare_attrs(fa, fb, path, a, b, ignore, diffs, notes)
        for name in ignore:
            for path, o in oa.items():
                if name in o.attrs or name in ob.get(path, o).attrs:
                    notes.append(f"ignored {path} attribute {name}")
    return diffs, notes


def error_lines(stderr):
    """The lines of a failed run's stderr without Open MPI's banners (the
    blocks between lines of dashes), which would hide tdsolve's own line."""
    lines, inside = [], False
    for ln in stderr.strip().splitlines():
        if re.fullmatch(r"-{20,}", ln.strip()):
            inside = not inside
        elif not inside and ln.strip():
            lines.append(ln)
    return lines or stderr.strip().splitlines()


def load_manifest(out, tag):
    p = os.path.join(out, tag, MANIFEST)
    if not os.path.exists(p):
        sys.exit(f"compare-builds: no {p}: run --phase run --tag {tag} first")
    with open(p) as f:
        return json.load(f)


def compare_phase(args, tags=("old", "new")):
    """Compares OUT/old against OUT/new, case by case; returns the exit status."""
    ma, mb = (load_manifest(args.out, t) for t in tags)
    pair = args.pair_ranks
    header = [f"old: {ma['binary']} ({ma['version']}, sha256 {ma['binary_sha256'][:12]}, {ma['backend']}, "
              f"{ma['host']}, {ma['started']})",
              f"new: {mb['binary']} ({mb['version']}, sha256 {mb['binary_sha256'][:12]}, {mb['backend']}, "
              f"{mb['host']}, {mb['started']})"]
    if pair:
        header.append(f"old at {pair[0]} rank(s) against new at {pair[1]} rank(s)")
    for line in header:
        print(line)
    problems = []
    if ma["backend"] != mb["backend"]:
        problems.append(f"the old files are from --backend {ma['backend']}, the new from {mb['backend']}")
    for name in sorted(set(ma["inputs"]) | set(mb["inputs"])):
        if ma["inputs"].get(name) != mb["inputs"].get(name):
            problems.append(f"input {name} is not the same array in the two runs")
    for p in problems:
        print(f"WARNING: {p}")

    rx = re.compile(args.filter) if args.filter else None
    ea = {(e["name"], e["ranks"]): e for e in ma["cases"]}
    eb = {(e["name"], e["ranks"]): e for e in mb["cases"]}
    if pair:
        keys = sorted({(n, 0) for n, _ in ea} | {(n, 0) for n, _ in eb})
    else:
        keys = sorted(set(ea) | set(eb))
    rows = []
    for name, ranks in keys:
        if rx and not rx.search(name):
            continue
        if pair:
            ra = pair[0] if (name, pair[0]) in ea else 1
            rb = pair[1] if (name, pair[1]) in eb else 1
            a, b = ea.get((name, ra)), eb.get((name, rb))
            label = f"{name}@r{ra}:r{rb}"
        else:
            a, b = ea.get((name, ranks)), eb.get((name, ranks))
            label = case_id(name, ranks)
        row = {"id": label, "name": name, "old_s": a and a["seconds"], "new_s": b and b["seconds"], "notes": []}
        if a is None or b is None:
            row.update(result="missing", detail=[f"no run in {'old' if a is None else 'new'}"])
        elif not a["output"] or not b["output"]:
            detail = []
            for side, e in (("old", a), ("new", b)):
                if not e["output"]:
                    detail.append(f"{side} exit {e['rc']}: {' '.join(e['argv'])}")
                    detail += ["  " + ln for ln in error_lines(e["stderr_tail"])[-8:]]
            row.update(result="failed", detail=detail)
        else:
            try:
                diffs, notes = compare_files(os.path.join(args.out, a["output"]), os.path.join(args.out, b["output"]),
                                             args.ignore_attr)
            except Exception as exc:  # an unreadable file is a failure of that case, not of the script
                diffs, notes = [f"cannot compare: {type(exc).__name__}: {exc}"], []
            row["notes"] = notes
            if not diffs:
                row.update(result="identical", detail=[])
            else:
                mine = [(d, why) for pat, d, why in EXPECTED if re.search(pat, label)]
                explained = all(any(re.search(d, line) for d, _ in mine) for line in diffs)
                reasons = sorted({why for d, why in mine if any(re.search(d, line) for line in diffs)})
                row.update(result="expected" if explained else "differs",
                           detail=([f"expected: {r}" for r in reasons] if explained else []) + diffs)
        rows.append(row)
        mark = {"identical": "identical", "expected": "EXPECTED", "differs": "DIFFERS", "failed": "FAILED",
                "missing": "MISSING"}[row["result"]]
        print(f"{mark:<10} {label}")
        for line in row["detail"][:12]:
            print(f"           {line}")
        if len(row["detail"]) > 12:
            print(f"           ... {len(row['detail']) - 12} more")

    counts = {}
    for r in rows:
        counts[r["result"]] = counts.get(r["result"], 0) + 1
    notes = sorted({n for r in rows for n in r["notes"]})
    for n in notes:
        print(f"note (all cases): {n}" if all(n in r["notes"] for r in rows if r["result"] != "failed")
              else f"note: {n}")
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    ok = bool(rows) and all(r["result"] in ("identical", "expected") for r in rows) and not problems
    print(f"{len(rows)} cases: {summary}" + ("" if rows else "none") + (": OK" if ok else ": NOT IDENTICAL"))
    if args.table:
        write_table(args.table, header, problems, rows, summary, notes, ok)
    return 0 if ok else 1


def write_table(path, header, problems, rows, summary, notes, ok):
    def cell(s):
        return s.replace("|", "\\|").replace("\n", " ")

    lines = ["# tdsolve: byte-identity of two builds (jobs/compare-builds.py)", ""]
    lines += [f"- {cell(h)}" for h in header]
    lines += [f"- WARNING: {cell(p)}" for p in problems]
    lines += [f"- note: {cell(n)}" for n in notes]
    lines += [f"- **{len(rows)} cases: {summary} — {'all identical' if ok else 'NOT all identical'}**", ""]
    lines += ["| case | result | detail | old s | new s |", "|---|---|---|---|---|"]
    for r in rows:
        detail = "; ".join(r["detail"][:3]) + (" ..." if len(r["detail"]) > 3 else "")
        lines.append(f"| {cell(r['id'])} | {r['result']} | {cell(detail)} | {r['old_s'] if r['old_s'] is not None else ''} "
                     f"| {r['new_s'] if r['new_s'] is not None else ''} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


# ---- self-check: the comparison must see a difference -----------------------------------


def self_check(args):
    """Damages copies of a new output (one value's last byte, one attribute,
    one dataset removed) and checks that compare_files reports each at its
    place; returns a list of failures (empty: the comparison works)."""
    mb = load_manifest(args.out, "new")
    src = next((e for e in mb["cases"] if e["output"] and e["name"].startswith("edm.")), None)
    if src is None:
        return ["self-check: no edm output in new to damage"]
    good = os.path.join(args.out, src["output"])
    failures = []
    with tempfile.TemporaryDirectory(dir=args.out) as tmp:
        def damaged(how):
            p = os.path.join(tmp, f"{how}.h5")
            shutil.copyfile(good, p)
            with h5py.File(p, "r+") as f:
                if how == "value":
                    d = f["distances"]
                    v = d[7:8]
                    v.view(np.uint8)[0] ^= 1
                    d[7:8] = v
                elif how == "attribute":
                    f["distances"].attrs["n"] = f["distances"].attrs["n"] + 1
                elif how == "dataset":
                    del f["progress/offsets"]
                elif how == "added":
                    f.attrs["schema_version"] = np.uint64(1)
                elif how == "stripped":  # as an older build wrote it
                    for a in ("kind", "schema_version"):
                        if a in f.attrs:
                            del f.attrs[a]
            return p

        checks = [("value", "/distances: 1 of "), ("value", "first at [7]"),
                  ("attribute", "/distances attribute n:"), ("dataset", "/progress/offsets: only in old")]
        for how, expect in checks:
            diffs, _ = compare_files(good, damaged(how))
            if not any(expect in d for d in diffs):
                failures.append(f"self-check: damaging the {how} gave {diffs}, not '{expect}'")
        # A file that records its kind against one of an older build that did not.
        with h5py.File(good, "r") as f:
            recorded = "schema_version" in f.attrs
        pair = (damaged("stripped"), good) if recorded else (good, damaged("added"))
        diffs, notes = compare_files(*pair)
        if diffs or not any("added / attribute schema_version" in n for n in notes):
            failures.append(f"self-check: an added root attribute gave {diffs} and {notes}")
        diffs, _ = compare_files(good, good)
        if diffs:
            failures.append(f"self-check: a file against itself gave {diffs}")
    print("self-check: " + ("the comparison sees every damage" if not failures else "FAILED"))
    for f in failures:
        print(f)
    return failures


# ---- main --------------------------------------------------------------------------------


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description=__doc__[:__doc__.index("  # both")].rstrip(), formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n" + __doc__[__doc__.index("  # both"):])
    ap.add_argument("--phase", choices=("all", "run", "compare"), default="all",
                    help="all: run both binaries and compare (default); run: one binary (--bin, --tag); "
                    "compare: OUT/old against OUT/new")
    ap.add_argument("--old", help="the reference binary (--phase all)")
    ap.add_argument("--new", help="the binary under test (--phase all)")
    ap.add_argument("--bin", help="the binary to run (--phase run)")
    ap.add_argument("--tag", choices=("old", "new"), help="--phase run: which side these outputs are")
    ap.add_argument("--out", help="folder for the inputs, outputs and manifests (--phase all: a temporary "
                    "folder, removed when every case is identical)")
    ap.add_argument("--backend", choices=("cpu", "cuda"), default="cpu",
                    help="tdsolve's --backend for every run (default cpu)")
    ap.add_argument("--ranks", default="1,3", help="rank counts to run, comma-separated (default 1,3)")
    ap.add_argument("--pair-ranks", metavar="A:B",
                    help="compare old at A ranks with new at B ranks (e.g. 1:3 with one binary as both: rank "
                    "invariance); --phase all then runs old at A and new at B only")
    ap.add_argument("--mpiexec", default="mpirun",
                    help="the MPI launcher, split as a shell would (default mpirun; on the GPU machine "
                    "'bash .devrun/on-device.sh mpirun'); --oversubscribe is added for Open MPI when the "
                    "ranks outnumber the cores")
    ap.add_argument("--quick", action="store_true", help="a smaller matrix (a few cases of every command)")
    ap.add_argument("--filter", metavar="REGEX", help="only the cases whose name matches (re.search)")
    ap.add_argument("--jobs", type=int, default=1, help="cases run at once (default 1)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds one run may take (default 600)")
    ap.add_argument("--table", metavar="FILE", help="also write the result as a Markdown table")
    ap.add_argument("--ignore-attr", action="append", default=[], metavar="NAME",
                    help="an attribute name (anywhere in the files) not to compare; reported as ignored")
    ap.add_argument("--self-check", action="store_true",
                    help="after comparing, also check that the comparison reports damaged copies of an output")
    ap.add_argument("--list", action="store_true", help="print the selected cases and exit")
    args = ap.parse_args(argv)
    try:
        args.ranks_list = sorted({int(r) for r in args.ranks.split(",") if r.strip()})
        if not args.ranks_list or min(args.ranks_list) < 1:
            raise ValueError
    except ValueError:
        ap.error(f"--ranks must be positive integers separated by commas, not '{args.ranks}'")
    if args.pair_ranks:
        try:
            a, b = (int(x) for x in args.pair_ranks.split(":"))
            if a < 1 or b < 1:
                raise ValueError
        except ValueError:
            ap.error(f"--pair-ranks must be A:B, two positive integers, not '{args.pair_ranks}'")
        args.pair_ranks = (a, b)
    # runs start in OUT/work/CASE: a launcher given by a relative path
    # (bash .devrun/on-device.sh mpirun) is made absolute
    args.mpiexec_argv = [os.path.abspath(w) if "/" in w and not os.path.isabs(w) and os.path.exists(w) else w
                         for w in shlex.split(args.mpiexec)]
    if args.filter:
        try:
            re.compile(args.filter)
        except re.error as e:
            ap.error(f"--filter: {e}")
    if args.list:
        return args
    if args.phase == "all" and not (args.old and args.new):
        ap.error("--phase all needs --old and --new")
    if args.phase == "run" and not (args.bin and args.tag and args.out):
        ap.error("--phase run needs --bin, --tag and --out")
    if args.phase == "compare" and not args.out:
        ap.error("--phase compare needs --out")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.list:
        for c in selected(matrix(args.quick), args):
            print(f"{c.name:<48} ranks {','.join(str(r) for r in c.ranks)}  tdsolve {' '.join(c.argv)}")
        return 0
    if args.phase == "run":
        args.out = os.path.abspath(args.out)
        ranks = args.ranks_list
        if args.pair_ranks:
            ranks = [args.pair_ranks[0 if args.tag == "old" else 1]]
        manifest = run_phase(args.bin, args.tag, ranks, args)
        return 0 if all(e["output"] for e in manifest["cases"]) else 1
    temporary = args.phase == "all" and not args.out
    if temporary:
        args.out = tempfile.mkdtemp(prefix="tdsolve-compare-")
    args.out = os.path.abspath(args.out)
    if args.phase == "all":
        for tag, binary in (("old", args.old), ("new", args.new)):
            ranks = args.ranks_list if not args.pair_ranks else [args.pair_ranks[0 if tag == "old" else 1]]
            run_phase(binary, tag, ranks, args)
    status = compare_phase(args)
    if args.self_check and self_check(args):
        status = 1
    if temporary:
        if status == 0:
            shutil.rmtree(args.out, ignore_errors=True)
        else:
            print(f"outputs kept in {args.out}")
    return status


if __name__ == "__main__":
    sys.exit(main())
