"""Shared helpers for the end-to-end tests: run the real tdsolve, under
mpiexec where a test needs ranks, and read what it wrote."""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import h5py
import numpy as np

BIN = os.environ.get("TDSOLVE_BIN", "tdsolve")
MPIEXEC = os.environ.get("TDSOLVE_MPIEXEC", "mpiexec")
sys.path.insert(0, os.environ.get("TDSOLVE_PYTHONPATH", os.path.join(os.path.dirname(__file__), "../../io/python")))

import tdsolve_h5  # noqa: E402


def tdsolve(*args, np_=None, check=False, timeout=600, env=None, cwd=None):
    """Runs tdsolve (as a singleton, or under mpiexec with np_ ranks), in cwd if given."""
    cmd = [BIN, *map(str, args)]
    if np_ is not None:
        cmd = [MPIEXEC, "-n", str(np_), "--oversubscribe", *cmd]
    e = dict(os.environ, **(env or {}))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e, cwd=cwd)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def killed_after_checkpoints(args, out, fault, np_=2, env=None):
    """Runs tdsolve *args --output out with a checkpoint after every round
    and TDSOLVE_TEST_FAULT=fault (a kill, e.g. "0:2:kill"; env adds or
    overrides knobs): (the run, chunks flagged in out.partial, chunks)."""
    r = tdsolve(*args, "--output", out, np_=np_,
                env={"TDSOLVE_TEST_CHECKPOINT_S": "0.001", "TDSOLVE_TEST_FAULT": fault, **(env or {})})
    with h5py.File(out + ".partial", "r") as f:
        done = f["progress/done"][:]
    return r, int(done.sum()), len(done)


def build_package():
    """The build's tdsolve package with its extension (TDSOLVE_PYTHON_BUILD =
    build/python, set by CTest), imported ahead of the source tree's (which
    this file puts on the path, without the extension): (BUILD, module,
    None), or (BUILD, None, why) where the build has none. Failing to import
    the extension of a build that has one fails."""
    build = os.environ.get("TDSOLVE_PYTHON_BUILD", "")
    if not build:
        return build, None, "this build has no Python extension (no pybind11 or Python headers at configure time)"
    sys.path.insert(0, build)
    for name in [m for m in sys.modules if m == "tdsolve" or m.startswith("tdsolve.")]:
        del sys.modules[name]
    import tdsolve as td
    from tdsolve import _core  # noqa: F401
    assert td.__file__.startswith(build), td.__file__
    return build, td, None


def gpu_available():
    """(True, "") when tdsolve can run --backend cuda here, else (False, why)."""
    with tempfile.TemporaryDirectory() as d:
        r = tdsolve("edm", "--generate", "uniform:10:2", "--output", os.path.join(d, "p.h5"), "--backend", "cuda",
                    "--quiet")
    return r.returncode == 0, r.stderr.strip()


def require_gpu(probe=gpu_available, what="tdsolve"):
    """A GPU class's setUpClass: SkipTest without a GPU (probe() is (ok,
    why)), AssertionError instead under TDSOLVE_REQUIRE_GPU=1."""
    ok, why = probe()
    if not ok:
        if os.environ.get("TDSOLVE_REQUIRE_GPU") == "1":
            raise AssertionError(f"TDSOLVE_REQUIRE_GPU=1 but {what} cannot use a GPU: {why}")
        raise unittest.SkipTest(f"no GPU: {why}")


def run_lammps(case, lmp, script, dump, n, columns):
    """Runs LAMMPS binary lmp on `script` (which prints "TDSOLVE_PE <energy>"
    and dumps `id` and `columns` more values an atom, sorted, to `dump`) in
    case.dir: (the energy, float64[n, columns] in atom order)."""
    r = subprocess.run([lmp, "-in", script, "-log", "none", "-nocite"], capture_output=True, text=True,
                       timeout=300, cwd=case.dir)
    case.assertEqual(r.returncode, 0, f"LAMMPS failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    lines = [l for l in r.stdout.splitlines() if l.startswith("TDSOLVE_PE ")]
    case.assertEqual(len(lines), 1, r.stdout[-3000:])
    energy = float(lines[0].split()[1])
    with open(dump) as f:
        rows = f.read().splitlines()
    start = next(i for i, l in enumerate(rows) if l.startswith("ITEM: ATOMS")) + 1
    table = np.array([[float(v) for v in l.split()] for l in rows[start:start + n]])
    case.assertEqual(table.shape, (n, columns + 1))
    values = np.empty((n, columns))
    values[table[:, 0].astype(int) - 1] = table[:, 1:]
    return energy, values


def lab_built():
    """Whether this tdsolve has the map laboratory (CMake's TDSOLVE_LAB): as
    ctest says (TDSOLVE_LAB_BUILT), else as the program's bench help says."""
    built = os.environ.get("TDSOLVE_LAB_BUILT")
    if built is not None:
        return built == "1"
    return "built without the map laboratory" not in tdsolve("bench", "--help", check=True).stdout


def read_values(path):
    with h5py.File(path, "r") as f:
        return f["distances"][:]


def chunk_done(path):
    """A ready() for interrupted_run: whether the file at path (a run's
    .partial) has a chunk flagged done; False while it cannot be read (the
    writer may be mid-write)."""
    def ready():
        try:
            with h5py.File(path, "r") as f:
                return int(f["progress/done"][()].sum()) > 0
        except (OSError, KeyError):
            return False
    return ready


class TempDirTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tdsolve_e2e_")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def wait_for(self, path, proc, timeout=60, ended_ok=False):
        """Waits until `path` exists (a background run's .partial) and returns
        True. If `proc` ends first, fails with its stderr, or with ended_ok
        returns False (a run fast enough to finish before a signal); fails
        after `timeout` seconds."""
        t0 = time.time()
        while not os.path.exists(path):
            if proc.poll() is not None:
                if ended_ok:
                    return False
                self.fail(f"the run ended ({proc.returncode}) before {path} appeared:\n" + proc.stderr.read())
            if time.time() - t0 > timeout:
                self.fail(f"{path} did not appear in {timeout} s")
            time.sleep(0.02)
        return True

    def run_ok(self, args, ranks=None):
        """tdsolve with args (on `ranks` ranks), which must succeed."""
        r = tdsolve(*args, np_=ranks)
        self.assertEqual(r.returncode, 0, f"{args}:\n{r.stderr}")
        return r

    def interrupted_run(self, args, out, sig, ready=None, **env):
        """Runs tdsolve with args in the background (env added to the
        environment), waits for out's .partial, lets it run a second more
        (or, with ready, until ready() is true: a state the test needs, not
        a time a loaded machine may not keep), sends sig and returns
        (returncode, stderr)."""
        p = subprocess.Popen([os.environ.get("TDSOLVE_BIN", "tdsolve"), *map(str, args)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=dict(os.environ, **env))
        self.wait_for(out + ".partial", p)
        if ready is None:
            time.sleep(1.0)
        else:
            t0 = time.time()
            while not ready():
                if p.poll() is not None:
                    self.fail(f"the run ended ({p.returncode}) before it was ready for the signal:\n"
                              + p.stderr.read())
                if time.time() - t0 > 120:
                    self.fail("the run was not ready for the signal in 120 s")
                time.sleep(0.02)
        p.send_signal(sig)
        _, err = p.communicate(timeout=120)
        return p.returncode, err

    def save_npy(self, name, x):
        p = self.path(name)
        np.save(p, x)
        return p

    def run_bad_command(self, command, args, expect=(), ranks=2, casefold=False):
        """`tdsolve COMMAND` on `ranks` ranks, each recording its exit status:
        all 1 or 2, one `tdsolve: error` line naming every string of `expect`
        (compared in lower case with casefold), and no output file. Returns
        the error line."""
        out = self.path("bad.h5")
        script = 'exe="$1"; shift; "$exe" "$@"; echo $? > "%s/rc.$OMPI_COMM_WORLD_RANK"' % self.dir
        for r in range(ranks):
            if os.path.exists(self.path(f"rc.{r}")):
                os.remove(self.path(f"rc.{r}"))
        cmd = [MPIEXEC, "-n", str(ranks), "--oversubscribe", "sh", "-c", script, "sh", BIN, command, "--output",
               out, "--progress", "none", *map(str, args)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        codes = []
        for rank in range(ranks):
            with open(self.path(f"rc.{rank}")) as f:
                codes.append(int(f.read()))
        self.assertTrue(all(c in (1, 2) for c in codes), f"{args}: exit codes per rank {codes}, want 1 or 2")
        ours = [l for l in r.stderr.splitlines() if l.startswith("tdsolve:")]
        self.assertEqual(len(ours), 1, f"{args}: want one error line, got:\n{r.stderr}")
        self.assertTrue(ours[0].startswith("tdsolve: error"), ours[0])
        line = ours[0].lower() if casefold else ours[0]
        for e in expect:
            self.assertIn(e, line, f"{args}: message does not name the problem")
        self.assertFalse(os.path.exists(out), f"{args}: an output file was left behind")
        return ours[0]

    def save_h5(self, name, dataset, x):
        p = self.path(name)
        with h5py.File(p, "a") as f:
            f.create_dataset(dataset, data=x)
        return p


def set_value(name, index, value):
    """A damage for the file tests: element `index` of dataset `name` set
    to `value` (the function that does it to an open h5py.File)."""
    def fn(f):
        a = f[name][()]
        a[index] = value
        f[name][...] = a
    return fn
