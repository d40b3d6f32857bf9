"""Issue 32's findings on resume, pair lists, full disks and stops, each a test:

- --resume checks every dataset of a .partial against the job before it
  writes anything: a done flag that is neither 0 nor 1, a result dataset
  longer, shorter or of another type than the job's are refused with one
  line naming the dataset, and the .partial is left as it was (every
  command);
- knn --radius and collide: a run that ended between flagging every chunk
  and the rename (a kill there, or a failed rename) is finished by --resume
  with every pair it found: the same datasets and attributes as an
  uninterrupted run (all but `created`, the time of the run, and HDF5's
  object times); flags that are not all set hold no pairs, and every chunk
  is computed again;
- a full disk at every write of every command, on 1, 2 and 3 ranks, on
  every rank at once or one alone: one line, no hang, nothing that reads
  complete;
- knn --k cuts its chunks by the work too: SIGTERM mid-run stops it within
  seconds (exit 75), and --resume gives the same datasets and attributes
  as an uninterrupted run.

Each of these failed on 68463c1."""
import concurrent.futures
import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import h5py
import numpy as np

from common import BIN, TempDirTest, tdsolve
from test_faults import FaultTestBase, build_shim, run_job

STOPPED = 75
QUIET = ["--progress", "none", "--quiet"]

# Small jobs of every command, a few chunks each.
JOBS = {
    "edm": ["edm", "--generate", "uniform:1500:3:1", "--chunk-mb", "1"],
    "cross": ["cross", "--generate", "uniform:900:3:1", "--with-generate", "uniform:700:3:2", "--chunk-mb", "1"],
    "hist": ["hist", "--generate", "uniform:1500:3:1", "--bins", "16", "--range", "0:1.5"],
    "knn": ["knn", "--generate", "uniform:1500:3:1", "--k", "5", "--chunk-mb", "1"],
    # --k dense: each chunk's rows written as they come (auto culls it on the CPU in 3-D)
    "knn-dense": ["knn", "--generate", "uniform:1500:3:1", "--k", "5", "--chunk-mb", "1", "--cull", "off"],
    "radius": ["knn", "--generate", "uniform:1500:3:1", "--radius", "0.1", "--chunk-mb", "1"],
    "collide": ["collide", "--generate", "spheres:1500:3:4:0.1", "--chunk-mb", "1"],
    "triplet": ["triplet", "--generate", "uniform:120:3:1"],
    "fractal": ["fractal", "--shape", "sierpinski-triangle", "--level", "6", "--steps", "20", "--snapshot-every", "5"],
}

def replace(f, name, data, maxshape=None):
    """Dataset `name` replaced by `data` (its attributes kept, but its axes')."""
    attrs = dict(f[name].attrs)
    del f[name]
    f.create_dataset(name, data=data, maxshape=maxshape)
    for k, v in attrs.items():
        if k not in ("DIMENSION_LIST", "REFERENCE_LIST"):
            f[name].attrs[k] = v


def longer(name, rows=1):
    def damage(f):
        x = f[name][()]
        replace(f, name, np.concatenate([x, np.zeros((rows,) + x.shape[1:], x.dtype)]))
    return (f"/{name} longer", f"/{name}", damage)


def shorter(name):
    def damage(f):
        replace(f, name, f[name][()][:-1])
    return (f"/{name} shorter", f"/{name}", damage)


def retyped(name, dtype, maxshape=None):
    def damage(f):
        replace(f, name, f[name][()].astype(dtype), maxshape=maxshape)
    return (f"/{name} as {np.dtype(dtype).name}", f"/{name}", damage)


def wider(name):
    def damage(f):
        x = f[name][()]
        replace(f, name, np.zeros((x.shape[0], x.shape[1] + 1), x.dtype), maxshape=(None, x.shape[1] + 1))
    return (f"/{name} wider", f"/{name}", damage)


def cell(value):
    # A cell of the snapshot a resume continues from that is neither dead
    # nor alive (a changed byte of /states' values: the fuzz, test_fuzz.py).
    def damage(f):
        row = f["states"][-1]
        row[len(row) // 2] = value
        f["states"][-1] = row
    return (f"a cell of the last snapshot holding {value}", "/states row", damage)


def recount(f):
    f["count"][()] = f["count"][()] + 1


def list_shorter(name):
    # One list a row shorter than the other, still growable: only the two
    # lists' lengths disagree (jobs/mutate.py: resume.list-lengths-unchecked).
    def damage(f):
        x = f[name][()][:-1]
        replace(f, name, x, maxshape=(None,) + x.shape[1:])
    return (f"/{name} a row shorter than the other list", f"/{name}", damage)


def changed(name, at=1):
    # A value the job writes at creation (/edges, /weights) changed by one
    # ulp, shape and type kept (jobs/mutate.py: resume.extras-values-unchecked).
    def damage(f):
        x = f[name][()]
        x[at] = np.nextafter(x[at], np.inf)
        f[name][...] = x
    return (f"/{name} with one value changed", f"/{name}", damage)


# A damage of each command's .partial that --resume must refuse: (what,
# the dataset the line names, how). Every command also gets a done flag
# that holds 2, and one that holds 3.
DAMAGES = {
    "edm": [longer("distances"), shorter("distances"), retyped("distances", np.float64)],
    "cross": [longer("distances"), retyped("distances", np.float64)],
    "hist": [longer("counts"), retyped("counts", np.float64), shorter("edges"), changed("edges")],
    "knn": [longer("distances"), longer("indices"), retyped("indices", np.int32)],
    "knn-dense": [longer("distances"), longer("indices"), retyped("indices", np.int32)],
    "radius": [wider("pairs"), retyped("distances", np.float64, maxshape=(None,)), list_shorter("distances")],
    "collide": [wider("pairs"), ("/count off by one", "/count", recount)],
    "triplet": [longer("energy_per_point"), retyped("forces", np.float32), longer("progress/sums")],
    "fractal": [longer("live"), retyped("states", np.int16), shorter("steps"), cell(108)],
}


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def contents(path):
    """Every dataset (dtype, shape, maxshape, bytes) and every attribute but
    `created` (the time of the run) and the dimension scales' references."""
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                out[name] = (obj.dtype.str, obj.shape, obj.maxshape,
                             obj[()].tobytes() if obj.size else b"")
            for k, v in obj.attrs.items():
                if k not in ("created", "DIMENSION_LIST", "REFERENCE_LIST"):
                    out[f"{name}@{k}"] = repr(v)
        visit("/", f)
        f.visititems(visit)
    return out


def complete_file(test, job, out, np_=None, env=None):
    r = tdsolve(*job, "--output", out, *QUIET, np_=np_, env=env)
    test.assertEqual(r.returncode, 0, r.stderr)
    return out


class DamagedPartialTest(TempDirTest):
    """A .partial whose flags or datasets do not match the job: refused, one
    line naming the dataset, the file untouched, no result."""

    finished = {}  # name: a finished run's file, made once

    @classmethod
    def setUpClass(cls):
        cls.refdir = tempfile.mkdtemp(prefix="tdsolve_damaged_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.refdir, ignore_errors=True)

    def partial(self, name):
        """A finished run of JOBS[name] at the output's name as its .partial
        (a run that ended before the rename)."""
        out = os.path.join(self.refdir, f"{name}.h5")
        if name not in self.finished:
            complete_file(self, JOBS[name], out)
            os.rename(out, out + ".ref")
            self.finished[name] = out + ".ref"
        shutil.copyfile(self.finished[name], out + ".partial")
        return out

    def check_refused(self, name, out, damage_name, dataset):
        before = digest(out + ".partial")
        r = tdsolve(*JOBS[name], "--output", out, "--resume", *QUIET)
        what = f"{name}: {damage_name}"
        self.assertEqual(r.returncode, 1, f"{what}: {r.stdout}{r.stderr}")
        lines = [l for l in r.stderr.splitlines() if l.startswith("tdsolve")]
        self.assertEqual(len(lines), 1, f"{what}: {r.stderr}")
        self.assertIn(dataset, lines[0], what)
        self.assertIn("--overwrite", lines[0], what)
        self.assertEqual(digest(out + ".partial"), before, f"{what}: the refused resume changed the .partial")
        self.assertFalse(os.path.exists(out), f"{what}: a result took the output's name")

    def check_command(self, name):
        flags = "progress/done"
        for value in (2, 3):
            with self.subTest(damage=f"a flag holding {value}"):
                out = self.partial(name)
                with h5py.File(out + ".partial", "r+") as f:
                    done = f[flags][()]
                    done[len(done) // 2] = value
                    f[flags][...] = done
                self.check_refused(name, out, f"a done flag holding {value}", "/" + flags)
        for damage_name, dataset, damage in DAMAGES[name]:
            with self.subTest(damage=damage_name):
                out = self.partial(name)
                with h5py.File(out + ".partial", "r+") as f:
                    damage(f)
                self.check_refused(name, out, damage_name, dataset)
        # The same file undamaged is finished by --resume, as it is.
        out = self.partial(name)
        r = tdsolve(*JOBS[name], "--output", out, "--resume", *QUIET)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(tdsolve("info", out).returncode, 0)
        self.assertEqual(contents(out), contents(self.finished[name]))

    def test_edm(self):
        self.check_command("edm")

    def test_cross(self):
        self.check_command("cross")

    def test_hist(self):
        self.check_command("hist")

    def test_knn_k(self):
        self.check_command("knn")

    def test_knn_k_dense(self):
        self.check_command("knn-dense")

    def test_knn_radius(self):
        self.check_command("radius")

    def test_collide(self):
        self.check_command("collide")

    def test_triplet(self):
        self.check_command("triplet")

    def test_fractal(self):
        self.check_command("fractal")

    def test_killed_edm_with_a_damaged_flag(self):
        # A run killed mid-way (flags 1 then 0), one of its zeros turned to 2.
        out = self.path("k.h5")
        r = tdsolve(*JOBS["edm"], "--output", out, *QUIET, env={"TDSOLVE_TEST_FAULT": "0:3:kill"})
        self.assertNotEqual(r.returncode, 0)
        with h5py.File(out + ".partial", "r+") as f:
            done = f["progress/done"][()]
            self.assertEqual(list(done[:3]), [1, 1, 1])
            done[-1] = 2
            f["progress/done"][...] = done
        self.check_refused("edm", out, "a killed run's flag holding 2", "/progress/done")

    def test_damaged_result_is_not_reported_complete(self):
        # --resume of a finished FILE.h5 reports it complete only when its
        # datasets are the job's.
        out = complete_file(self, JOBS["edm"], self.path("c.h5"))
        with h5py.File(out, "r+") as f:
            replace(f, "distances", np.concatenate([f["distances"][()], np.zeros(3, np.float32)]))
        r = tdsolve(*JOBS["edm"], "--output", out, "--resume", *QUIET)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("/distances", r.stderr)
        self.assertNotIn("already complete", r.stdout)


class PairListRenameTest(TempDirTest):
    """knn --radius and collide between their last flag and the rename."""

    def reference(self, name, out):
        """An uninterrupted run of JOBS[name] at `out` (so that its command
        line is the same as the later runs'), moved aside; its contents."""
        complete_file(self, JOBS[name], out)
        ref = contents(out)
        os.rename(out, out + ".ref")
        with h5py.File(out + ".ref", "r") as f:
            self.assertGreater(len(f["pairs"]), 100, "too few pairs to tell")
        return ref

    def resume_to_reference(self, name, out, ref, np_):
        r = tdsolve(*JOBS[name], "--output", out, "--resume", *QUIET, np_=np_)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(out + ".partial"))
        self.assertEqual(tdsolve("info", out).returncode, 0)
        got = contents(out)
        self.assertEqual(sorted(got), sorted(ref))
        for k in ref:
            self.assertEqual(got[k], ref[k], f"{name}: {k} differs from an uninterrupted run")

    def check_kill_before_rename(self, name):
        out = self.path(f"{name}.h5")
        ref = self.reference(name, out)
        r = tdsolve(*JOBS[name], "--output", out, *QUIET, np_=2, env={"TDSOLVE_TEST_FAULT": "0:0:rename"})
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("injected SIGKILL at rename", r.stderr)
        self.assertFalse(os.path.exists(out))
        with h5py.File(out + ".partial", "r") as f:
            self.assertTrue(f["progress/done"][()].all(), "the kill came before every flag was set")
        self.resume_to_reference(name, out, ref, 3)

    def test_radius_killed_before_the_rename(self):
        self.check_kill_before_rename("radius")

    def test_collide_killed_before_the_rename(self):
        self.check_kill_before_rename("collide")

    def check_failed_rename(self, name):
        out = self.path(f"{name}.h5")
        ref = self.reference(name, out)
        p = subprocess.Popen([BIN, *JOBS[name], "--output", out, *QUIET], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=dict(os.environ, TDSOLVE_TEST_SLOW_MS="100"))
        self.wait_for(out + ".partial", p)
        os.mkdir(out)  # the rename of the .partial to this name fails
        open(os.path.join(out, "x"), "w").close()
        _, err = p.communicate(timeout=120)
        self.assertNotEqual(p.returncode, 0, err)
        self.assertIn("cannot rename", err)
        self.assertIn("--resume", err)
        shutil.rmtree(out)
        self.resume_to_reference(name, out, ref, 2)

    def test_radius_failed_rename(self):
        self.check_failed_rename("radius")

    def test_collide_failed_rename(self):
        self.check_failed_rename("collide")

    def test_flags_not_all_set_hold_no_pairs(self):
        # A list run sets every flag at once after its pairs: a file with
        # some flags 0 holds none a resume can use, so every chunk runs again.
        for name in ("radius", "collide"):
            out = self.path(f"{name}-mixed.h5")
            ref = self.reference(name, out)
            complete_file(self, JOBS[name], out)
            os.rename(out, out + ".partial")
            with h5py.File(out + ".partial", "r+") as f:
                done = f["progress/done"][()]
                done[1::2] = 0
                f["progress/done"][...] = done
            self.resume_to_reference(name, out, ref, 2)


class FullDiskTest(FaultTestBase):
    """A full disk at every write of every command to its result, on 1, 2
    and 3 ranks (fractal: 1): the K-th write fails, and every later one
    (the ENOSPC shim's TDSOLVE_ENOSPC_CALL), on every rank at once, or on
    one rank alone (TDSOLVE_ENOSPC_RANK) while the others write freely.
    Each run: one line, no hang, nothing that reads complete; a run that
    made no K-th write this time (the count moves a little from run to run)
    failed none and is complete. The side files (--stats, --csv) are
    test_faults.py's FullSideFileTest."""

    JOBS = {
        "edm": ["edm", "--generate", "uniform:1500:3:1", "--chunk-mb", "1"],
        "cross": ["cross", "--generate", "uniform:900:3:1", "--with-generate", "uniform:700:3:2", "--chunk-mb",
                  "1"],
        "hist": ["hist", "--generate", "uniform:1500:3:1", "--bins", "16", "--range", "0:1.5"],
        "knn": ["knn", "--generate", "uniform:1500:3:1", "--k", "5", "--chunk-mb", "1"],
        "knn-dense": ["knn", "--generate", "uniform:1500:3:1", "--k", "5", "--chunk-mb", "1", "--cull", "off"],
        "radius": ["knn", "--generate", "uniform:300:3:5", "--radius", "0.3"],
        "collide": ["collide", "--generate", "spheres:300:3:4:0.2"],
        "triplet": ["triplet", "--generate", "uniform:120:3:1"],
        "fractal": ["fractal", "--shape", "sierpinski-triangle", "--level", "6", "--steps", "20",
                    "--snapshot-every", "5"],
    }

    @classmethod
    def setUpClass(cls):
        cls.shim_dir = tempfile.mkdtemp(prefix="tdsolve_shim_")
        cls.shim = build_shim(cls.shim_dir)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.shim_dir, ignore_errors=True)

    def env(self, out, **more):
        names = "\n".join([out, out + ".creating", out + ".partial"])
        return {"LD_PRELOAD": self.shim, "TDSOLVE_ENOSPC_PATH": names, **more}

    def writes(self, job, ranks):
        """The writes each rank of a clean run makes to the output."""
        out = self.path(f"count-{ranks}.h5")
        count = self.path(f"count-{ranks}.txt")
        run = run_job([*job, "--output", out, "--progress", "none"], np_=None if ranks == 1 else ranks,
                      env=self.env(out, TDSOLVE_ENOSPC_CALL="0", TDSOLVE_ENOSPC_COUNT=count))
        self.assertEqual(run.returncode, 0, str(run))
        made = {}
        with open(count) as f:
            for line in f:
                if line.strip():
                    rank, n = line.split()[:2]
                    made[0 if rank == "-" else int(rank)] = int(n)
        self.assertEqual(sorted(made), list(range(ranks)), f"one count a rank: {made}")
        return made

    def check(self, name):
        job = self.JOBS[name]
        cases = []  # (ranks, the failing rank or None for all, K)
        for ranks in ((1,) if name == "fractal" else (1, 2, 3)):
            made = self.writes(job, ranks)
            cases += [(ranks, None, k) for k in range(1, max(made.values()) + 1)]
            writers = [r for r, n in made.items() if n > 0]
            if len(writers) > 1:  # with one writer, "that rank alone" is "every rank"
                cases += [(ranks, r, k) for r in writers for k in range(1, made[r] + 1)]
        self.assertGreater(len(cases), 8)

        def one(case):
            ranks, who, k = case
            tag = f"{name}-{ranks}-{'all' if who is None else who}-{k}"
            out, count = self.path(tag + ".h5"), self.path(tag + ".txt")
            more = {"TDSOLVE_ENOSPC_CALL": str(k), "TDSOLVE_ENOSPC_COUNT": count}
            if who is not None:
                more["TDSOLVE_ENOSPC_RANK"] = str(who)
            run = run_job([*job, "--output", out, "--progress", "none"], np_=None if ranks == 1 else ranks,
                          env=self.env(out, **more))
            return case, out, count, run

        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            for (ranks, who, k), out, count, run in pool.map(one, cases):
                where = "each rank" if who is None else f"rank {who} alone"
                what = f"{name}, {ranks} rank(s), write {k} of {where} fails"
                with self.subTest(ranks=ranks, rank=who, write=k):
                    if run.returncode == 0 and not run.hung:
                        with open(count) as f:
                            refused = [int(line.split()[2]) for line in f if line.strip()]
                        self.assertEqual(refused, [0] * ranks, f"{what}: a failed write was ignored\n{run}")
                        self.assertEqual(tdsolve("info", out).returncode, 0, what)
                        continue
                    self.assert_one_error(run, what)
                    self.assert_not_complete(out, what, strict=False, reader=False)

    def test_edm_every_write(self):
        self.check("edm")

    def test_cross_every_write(self):
        self.check("cross")

    def test_hist_every_write(self):
        self.check("hist")

    def test_knn_every_write(self):
        self.check("knn")

    def test_knn_dense_every_write(self):
        self.check("knn-dense")

    def test_radius_every_write(self):
        self.check("radius")

    def test_collide_every_write(self):
        self.check("collide")

    def test_triplet_every_write(self):
        self.check("triplet")

    def test_fractal_every_write(self):
        self.check("fractal")


class KnnStopTest(TempDirTest):
    """knn --k bounds its chunks by the work (comparisons), not only by the
    output, so a stop request is honoured within seconds."""

    # The CPU: a GPU's chunks are larger (solver/cuda/cuda_backend.cu) and
    # this job is one of them.
    # Dense (--cull off): its chunks are written as they come, so a stop
    # keeps the finished ones (a culled run keeps nothing: test_cull.py).
    JOB = ["knn", "--generate", "uniform:20000:3:9", "--k", "8", "--backend", "cpu", "--progress", "none",
           "--cull", "off"]

    def test_sigterm_mid_run_stops_soon_and_resumes_to_the_same_file(self):
        out = self.path("k.h5")
        stats = self.path("k.json")
        args = [*self.JOB, "--output", out, "--stats", stats]
        r = tdsolve(*args)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(stats) as f:
            chunks = json.load(f)["chunks"]
        # 4e8 comparisons at d = 3, about 2e8 a chunk (the default --chunk-mb
        # alone would make one chunk of them).
        self.assertGreaterEqual(chunks, 2, "knn --k made one chunk of 4e8 comparisons")
        ref = contents(out)
        os.rename(out, out + ".ref")
        # Every chunk's write waits 1 s: the first is surely still going.
        p = subprocess.Popen([BIN, *args], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=dict(os.environ, TDSOLVE_TEST_SLOW_MS="1000"))
        self.wait_for(out + ".partial", p)
        time.sleep(0.2)
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=120)
        waited = time.monotonic() - t0
        self.assertEqual(p.returncode, STOPPED, err)
        self.assertIn("stopped cleanly (SIGTERM)", err)
        self.assertLess(waited, 10, f"the stop took {waited:.1f} s")
        r = tdsolve(*args, "--resume", np_=2)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = contents(out)
        self.assertEqual(sorted(got), sorted(ref))
        for k in ref:
            self.assertEqual(got[k], ref[k], f"knn --k: {k} differs from an uninterrupted run")


if __name__ == "__main__":
    unittest.main()
