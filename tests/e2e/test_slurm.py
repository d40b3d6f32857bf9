"""The Slurm job script (jobs/slurm/tdsolve.sbatch, and edm.sbatch, the same
file) under a real Slurm: a one-node cluster on 127.0.0.1 that
tests/slurm/local-slurm.sh starts for this file and stops after it
(munged, slurmctld, slurmd; needs root). Skips when Slurm or munge is not
installed or we are not root; fails instead under TDSOLVE_REQUIRE_SLURM=1.

- 2-rank jobs through srun and through mpirun, and a 1-rank 2-thread job
  (sbatch -n 1 -c 2), submitted from another folder, complete: values as
  SciPy's, tdsolve info says complete;
- a job at a real time limit (--time=1) gets Slurm's warning
  (--signal=B:USR1), stops cleanly (exit 75), and the chain of resubmitted
  jobs (--dependency=singleton) resumes the file until it is complete, with
  the bytes of an uninterrupted run;
- the same with the warning sent by hand (scancel --batch --signal=USR1)
  under mpirun, the job continued by `scontrol requeue`;
- SIGTERM without the warning (scancel, preemption) ends the chain, the
  file resumable;
- a tdsolve error ends the chain; a GPU job without a GPU fails at once.

Runs are slowed with TDSOLVE_TEST_SLOW_MS (a sleep before each chunk) so that
they span the signal without using the CPU. Slurm checks time limits every
30 s and sends the warning up to 30 s early: with --time=1 it comes 0-30 s
after a job starts, so the first job of the time-limit chain must run longer
than that."""
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

import h5py
import numpy as np
from scipy.spatial.distance import pdist

from common import BIN, TempDirTest, tdsolve

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
HARNESS = os.path.join(ROOT, "tests", "slurm", "local-slurm.sh")
SCRIPT = os.path.join(ROOT, "jobs", "slurm", "tdsolve.sbatch")
EDM_SCRIPT = os.path.join(ROOT, "jobs", "slurm", "edm.sbatch")
REQUIRE = os.environ.get("TDSOLVE_REQUIRE_SLURM") == "1"
STOPPED = 75

# 47 chunks of one block row (about 24 per rank on 2 ranks), float64.
JOB = ["--generate", "uniform:6000:3:7", "--precision", "float64", "--chunk-mb", "1", "--threads", "1",
       "--progress", "none"]
FINAL = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
         "BOOT_FAIL", "DEADLINE")


def why_not_here():
    """Why this machine cannot run the harness (None: it can)."""
    missing = [b for b in ("munged", "slurmctld", "slurmd", "sbatch", "srun", "scontrol", "scancel")
               if not shutil.which(b, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")]
    if missing:
        return f"no Slurm here: {', '.join(missing)} not installed (Debian: slurmctld slurmd slurm-client munge)"
    if os.geteuid() != 0:
        return "no Slurm here: the test cluster's slurmd must run as root"
    return None


WHY = why_not_here()
if WHY and REQUIRE:
    raise SystemExit(f"TDSOLVE_REQUIRE_SLURM=1 but {WHY}")


def gpu_visible():
    if os.environ.get("CUDA_VISIBLE_DEVICES", "").strip() not in ("", "-1", "NoDevFiles"):
        return True
    if shutil.which("nvidia-smi"):
        r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
        return r.returncode == 0 and "GPU " in r.stdout
    return False


def distances(path):
    with h5py.File(path, "r") as f:
        return f["distances"][()]


@unittest.skipIf(WHY, WHY or "")
class SlurmJobTest(TempDirTest):
    cluster = None

    @classmethod
    def setUpClass(cls):
        cls.cluster = tempfile.mkdtemp(prefix="tdsolve_slurm_")
        env = dict(os.environ, PATH=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
        t0 = time.monotonic()
        r = subprocess.run([HARNESS, "start", cls.cluster], capture_output=True, text=True, env=env, timeout=120)
        if r.returncode == 2 and not REQUIRE:  # cannot run here: it says why
            shutil.rmtree(cls.cluster, ignore_errors=True)
            raise unittest.SkipTest(f"no Slurm here: {r.stderr.strip()}")
        if r.returncode != 0:
            cls.tearDownClass()
            raise RuntimeError(f"local-slurm.sh start failed ({r.returncode}):\n{r.stdout}{r.stderr}")
        try:
            cls.start_using(r.stdout, env, t0)
        except BaseException:
            cls.tearDownClass()  # unittest does not when setUpClass fails
            raise

    @classmethod
    def start_using(cls, started, env, t0):
        cls.conf = re.search(r"SLURM_CONF=(\S+)", started).group(1)
        print(f"\nlocal Slurm up in {time.monotonic() - t0:.1f} s ({cls.cluster})", flush=True)
        # Clients and jobs find the cluster through SLURM_CONF; sbatch hands
        # the environment on to the job.
        cls.env = dict(env, SLURM_CONF=cls.conf, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        for v in ("TDSOLVE", "TDSOLVE_BACKEND", "TDSOLVE_LAUNCHER", "TDSOLVE_CHAIN", "TDSOLVE_CHAIN_LINK",
                  "TDSOLVE_TEST_SLOW_MS"):
            cls.env.pop(v, None)
        # The script finds the checkout's build/tdsolve next to itself; any
        # other binary under test is named.
        binary = shutil.which(BIN) or BIN
        checkout_bin = os.path.join(ROOT, "build", "tdsolve")
        if not (os.path.exists(checkout_bin) and os.path.samefile(binary, checkout_bin)):
            cls.env["TDSOLVE"] = os.path.abspath(binary)
        # An uninterrupted run of JOB, for the bytes.
        cls.ref_dir = tempfile.mkdtemp(prefix="tdsolve_slurm_ref_")
        ref = os.path.join(cls.ref_dir, "ref.h5")
        tdsolve("edm", *JOB, "--output", ref, "--quiet", "--backend", "cpu", np_=2, check=True)
        cls.ref_bytes = distances(ref).tobytes()

    @classmethod
    def tearDownClass(cls):
        if cls.cluster:
            r = subprocess.run([HARNESS, "stop", cls.cluster], capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                print(f"local-slurm.sh stop failed ({r.returncode}):\n{r.stderr}")
            shutil.rmtree(cls.cluster, ignore_errors=True)
        shutil.rmtree(getattr(cls, "ref_dir", "/nonexistent"), ignore_errors=True)

    # ---- Slurm ---------------------------------------------------------------
    def slurm(self, *cmd, env=None):
        r = subprocess.run(list(cmd), capture_output=True, text=True, env=env or self.env, cwd=self.dir,
                           timeout=60)
        self.assertEqual(r.returncode, 0, f"{' '.join(cmd)}:\n{r.stdout}{r.stderr}")
        return r.stdout

    def sbatch(self, *args, **env):
        """sbatch ARGS from the test's folder (not the checkout), with env
        added to the environment; returns the job id."""
        return self.slurm("sbatch", "--parsable", *args, env=dict(self.env, **env)).strip().split(";")[0]

    def jobs(self, name):
        """Every job of this name: {id: {field: value}} from scontrol
        (finished jobs stay listed for MinJobAge = 300 s)."""
        out = self.slurm("scontrol", "-o", "show", "job")
        found = {}
        for line in out.splitlines():
            fields = dict(re.findall(r"(\S+?)=(\S*)", line))
            if fields.get("JobName") == name:
                found[int(fields["JobId"])] = fields
        return found

    def wait_chain(self, name, timeout):
        """Waits until every job of this name has finished; returns them by id."""
        t0 = time.monotonic()
        while True:
            jobs = self.jobs(name)
            if jobs and all(j["JobState"] in FINAL for j in jobs.values()):
                return jobs
            if time.monotonic() - t0 > timeout:
                self.slurm("scancel", "--name", name)
                self.fail(f"jobs {name} still running after {timeout} s:\n{jobs}\n{self.logs(name)}")
            time.sleep(0.5)

    def logs(self, name):
        text = ""
        for f in sorted(os.listdir(self.dir)):
            if f.startswith(name) and f.endswith(".out"):
                with open(self.path(f)) as fh:
                    text += f"--- {f}\n{fh.read()}"
        return text

    def assert_done(self, jobs, name, what):
        log = self.logs(name)
        for i, j in jobs.items():
            self.assertEqual((j["JobState"], j["ExitCode"]), ("COMPLETED", "0:0"), f"{what}: job {i}\n{log}")
        return log

    def assert_result(self, out, log, ref_bytes=None):
        i = tdsolve("info", out)
        self.assertEqual(i.returncode, 0, f"tdsolve info {out}:\n{i.stdout}{i.stderr}\n{log}")
        self.assertFalse(os.path.exists(out + ".partial"), log)
        if ref_bytes is not None:
            self.assertEqual(distances(out).tobytes(), ref_bytes, f"{out}: /distances differ from an "
                             f"uninterrupted run\n{log}")

    # ---- The cases -------------------------------------------------------------
    def test_jobs_complete_with_srun_and_mpirun(self):
        os.makedirs(self.path("cfg"))
        with open(self.path("cfg/job.ini"), "w") as f:  # output relative to the config's folder
            f.write("generate = uniform:2000:5:3\nprecision = float64\noutput = srun.h5\nstore-points = true\n"
                    "progress = none\n")
        # edm.sbatch CONFIG.ini, by a path relative to the folder sbatch runs in.
        rel = os.path.relpath(EDM_SCRIPT, self.dir)
        t0 = time.monotonic()
        self.sbatch("-J", "srun2", "-N1", "-n2", rel, "cfg/job.ini", TDSOLVE_BACKEND="cpu")
        self.sbatch("-J", "mpirun2", "-N1", "-n2", SCRIPT, "edm", "--config", "cfg/job.ini", "--output",
                    "mpirun.h5", TDSOLVE_BACKEND="cpu", TDSOLVE_LAUNCHER="mpirun")
        self.sbatch("-J", "threads2", "-n", "1", "-c", "2", SCRIPT, "edm", "--config", "cfg/job.ini",
                    "--output", "threads.h5", TDSOLVE_BACKEND="cpu")
        for name, out, ranks, threads in (("srun2", "cfg/srun.h5", 2, 1), ("mpirun2", "mpirun.h5", 2, 1),
                                          ("threads2", "threads.h5", 1, 2)):
            with self.subTest(name):
                log = self.assert_done(self.wait_chain(name, 120), name, name)
                self.assertIn(f"{ranks} rank{'s' if ranks > 1 else ''}, cpu", log)
                self.assertIn(f"{threads} thread{'s' if threads > 1 else ''} per rank", log)
                self.assertIn("is complete", log)
                self.assert_result(self.path(out), log)
                with h5py.File(self.path(out), "r") as f:
                    want = pdist(f["points"][()])
                    np.testing.assert_allclose(f["distances"][()], want, rtol=1e-12, err_msg=name)
        print(f"\n3 jobs in {time.monotonic() - t0:.1f} s", flush=True)

    def test_time_limit_chain_resumes_to_the_same_bytes(self):
        # 24 chunks per rank of 1.5 s: about 36 s, longer than the 0-30 s
        # after which the warning of a 1-minute job comes.
        name, out = "timelimit", self.path("tl.h5")
        t0 = time.monotonic()
        first = self.sbatch("-J", name, "--time=1", "--signal=B:USR1@50", "-N1", "-n2", SCRIPT, "edm", *JOB,
                            "--output", out, TDSOLVE_BACKEND="cpu", TDSOLVE_TEST_SLOW_MS="1500")
        jobs = self.wait_chain(name, 200)
        log = self.assert_done(jobs, name, "time-limit chain")
        print(f"\ntime-limit chain: {len(jobs)} jobs in {time.monotonic() - t0:.1f} s", flush=True)
        self.assertGreaterEqual(len(jobs), 2, f"the first job was not stopped by the warning\n{log}")
        self.assertIn("SIGUSR1: Slurm's time-limit warning", log)
        self.assertIn("stopped cleanly (SIGUSR1)", log)
        self.assertIn(f"Exited with exit code {STOPPED}", log)  # srun: every task stopped with 75
        self.assertIn("resuming", log)
        for i, j in jobs.items():
            self.assertEqual(j["TimeLimit"], "00:01:00", f"job {i} did not keep the time limit")
        self.assertEqual(min(jobs), int(first))
        self.assert_result(out, log, self.ref_bytes)

    def test_warning_by_hand_requeue_and_mpirun(self):
        # 24 chunks per rank of 0.7 s: about 17 s; the script passes the
        # warning on 10 s after the start at the earliest.
        name, out = "requeue", self.path("rq.h5")
        t0 = time.monotonic()
        job = self.sbatch("-J", name, "-N1", "-n2", SCRIPT, "edm", *JOB, "--output", out, TDSOLVE_BACKEND="cpu",
                          TDSOLVE_LAUNCHER="mpirun", TDSOLVE_CHAIN="requeue", TDSOLVE_TEST_SLOW_MS="700")
        while self.jobs(name)[int(job)]["JobState"] != "RUNNING":
            self.assertLess(time.monotonic() - t0, 60, "the job did not start")
            time.sleep(0.2)
        time.sleep(3)
        self.slurm("scancel", "--batch", "--signal=USR1", job)  # what --signal=B:USR1 does
        jobs = self.wait_chain(name, 150)
        log = self.assert_done(jobs, name, "requeued job")
        print(f"\nrequeued job in {time.monotonic() - t0:.1f} s", flush=True)
        self.assertEqual(len(jobs), 1, log)
        self.assertEqual(jobs[int(job)]["Restarts"], "1", log)
        self.assertIn("mpirun: Forwarding signal 10 to job", log)  # Open MPI passes SIGUSR1 on
        self.assertIn("stopped cleanly (SIGUSR1)", log)
        self.assertIn(f"requeued job {job}", log)
        self.assertIn("resuming", log)
        self.assert_result(out, log, self.ref_bytes)

    def test_step_that_ends_while_the_warning_trap_waits_keeps_its_status(self):
        # The warning comes 1 s into the step; the trap holds it back until
        # 10 s after the start (the launcher must have started the ranks),
        # and the step (24 chunks of 0.15 s a rank) ends complete meanwhile.
        # `wait` then returns the trap's 138, not the step's 0: the script
        # must take the step's own status (a second wait), or it reports a
        # complete run as failed and the chain stops.
        name, out = "trapend", self.path("te.h5")
        t0 = time.monotonic()
        job = self.sbatch("-J", name, "-N1", "-n2", SCRIPT, "edm", *JOB, "--output", out, TDSOLVE_BACKEND="cpu",
                          TDSOLVE_TEST_SLOW_MS="150")
        while not os.path.exists(out + ".partial"):
            self.assertLess(time.monotonic() - t0, 60, f"the job did not start\n{self.logs(name)}")
            time.sleep(0.1)
        time.sleep(1)
        self.slurm("scancel", "--batch", "--signal=USR1", job)
        jobs = self.wait_chain(name, 120)
        log = self.assert_done(jobs, name, "a step that ended while the trap waited")
        self.assertEqual(len(jobs), 1, log)
        self.assertIn("SIGUSR1: Slurm's time-limit warning", log)
        self.assertNotIn("stopped cleanly", log)  # the ranks ended before the warning reached them
        self.assert_result(out, log, self.ref_bytes)

    def test_sigterm_ends_the_chain(self):
        # scancel (and preemption, the same SIGTERM): Slurm signals every
        # process of the job, without the time-limit warning first; the ranks
        # under srun stop cleanly (75). No next job may be submitted (68463c1
        # submitted one), and the file stays resumable.
        name, out = "sigterm", self.path("st.h5")
        t0 = time.monotonic()
        job = self.sbatch("-J", name, "-N1", "-n2", SCRIPT, "edm", *JOB, "--output", out, TDSOLVE_BACKEND="cpu",
                          TDSOLVE_TEST_SLOW_MS="700")
        while not os.path.exists(out + ".partial"):
            self.assertLess(time.monotonic() - t0, 60, f"the job did not start\n{self.logs(name)}")
            time.sleep(0.2)
        time.sleep(3)
        self.slurm("scancel", job)
        jobs = self.wait_chain(name, 120)
        time.sleep(2)  # a next job submitted at the very end would show now
        jobs = self.jobs(name)
        log = self.logs(name)
        self.assertEqual(len(jobs), 1, f"SIGTERM must end the chain\n{log}")
        self.assertIn("SIGTERM: Slurm ends the job", log)
        self.assertIn("stopped cleanly (SIGTERM)", log)  # the ranks' clean stop: the path that went on
        self.assertIn("the chain stops here", log)
        self.assertFalse(os.path.exists(out), log)
        self.assertTrue(os.path.exists(out + ".partial"), log)
        i = tdsolve("info", out)
        self.assertEqual(i.returncode, 3, f"resumable, incomplete:\n{i.stdout}{i.stderr}\n{log}")

    def test_error_ends_the_chain(self):
        name, out = "broken", self.path("broken.h5")
        self.sbatch("-J", name, "-n1", SCRIPT, "edm", "--generate", "uniform:100:3", "--metric", "nonsense",
                    "--output", out, TDSOLVE_BACKEND="cpu")
        jobs = self.wait_chain(name, 60)
        log = self.logs(name)
        self.assertEqual(len(jobs), 1, f"a failed run must not be resubmitted\n{log}")
        (j,) = jobs.values()
        self.assertEqual(j["JobState"], "FAILED", log)
        self.assertIn("the chain stops here", log)
        self.assertFalse(os.path.exists(out), log)

    @unittest.skipIf(gpu_visible(), "a GPU is visible here")
    def test_gpu_job_without_gpu_fails_at_once(self):
        name, out = "nogpu", self.path("nogpu.h5")
        self.sbatch("-J", name, "-n1", SCRIPT, "edm", "--generate", "uniform:100:3", "--output", out)
        jobs = self.wait_chain(name, 60)
        log = self.logs(name)
        (j,) = jobs.values()
        self.assertEqual((j["JobState"], j["ExitCode"]), ("FAILED", "1:0"), log)
        self.assertIn("backend cuda, but", log)
        self.assertIn("TDSOLVE_BACKEND=cpu", log)
        self.assertFalse(os.path.exists(out), log)


if __name__ == "__main__":
    unittest.main()
