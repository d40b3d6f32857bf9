"""Batch jobs that survive (docs/usage.md, "Stopping and resuming"): a rank
killed with SIGKILL, SIGTERM/SIGUSR1/--max-hours clean stops, --resume with
another rank count giving the same bytes, changed parameters refused, damaged
files named, --overwrite never losing the old result, a second writer
refused, colliding paths refused up front, and a kill at every step of
creating the file."""
import hashlib
import os
import random
import signal
import subprocess
import sys
import time
import unittest

import h5py

from common import BIN, MPIEXEC, TempDirTest, tdsolve, tdsolve_h5

STOPPED = 75  # "stopped cleanly, resumable"
# 47 chunks (one block row each, float64); runs started in the background
# sleep SLOW ms before each chunk so that they are surely still going when
# a test signals or races them.
JOB = ["--generate", "uniform:6000:3:7", "--precision", "float64", "--metric", "euclidean",
       "--chunk-mb", "1", "--threads", "1", "--progress", "none"]
SLOW = {"TDSOLVE_TEST_SLOW_MS": "100"}
HIST = ["--generate", "uniform:30000:3:5", "--bins", "40", "--range", "0:1.5", "--threads", "1",
        "--progress", "none"]


def dataset_bytes(path, name="distances"):
    with h5py.File(path, "r") as f:
        return f[name][()].tobytes()


def file_digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def info(path):
    return subprocess.run([BIN, "info", path], capture_output=True, text=True)


class ResumeTest(TempDirTest):
    @classmethod
    def setUpClass(cls):
        cls.refdir = __import__("tempfile").mkdtemp(prefix="tdsolve_ref_")
        cls.ref = os.path.join(cls.refdir, "ref.h5")
        tdsolve("edm", *JOB, "--output", cls.ref, "--quiet", check=True)
        cls.ref_bytes = dataset_bytes(cls.ref)

    @classmethod
    def tearDownClass(cls):
        __import__("shutil").rmtree(cls.refdir, ignore_errors=True)

    def start(self, out, *extra, np_=None, env=None):
        """tdsolve edm JOB in the background (under mpiexec with np_ ranks)."""
        cmd = [BIN, "edm", *JOB, "--output", out, *extra]
        if np_:
            cmd = [MPIEXEC, "-n", str(np_), "--oversubscribe", *cmd]
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=dict(os.environ, **SLOW, **(env or {})))

    def assert_resumes_to_reference(self, out, ranks):
        r = tdsolve("edm", *JOB, "--output", out, "--resume", np_=ranks)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("resuming", r.stdout)
        self.assertFalse(os.path.exists(out + ".partial"))
        self.assertEqual(info(out).returncode, 0)
        self.assertEqual(dataset_bytes(out), self.ref_bytes)

    def test_rank_killed_then_resumed_on_fewer_ranks(self):
        out = self.path("d.h5")
        chunk = random.Random().randrange(2, 20)
        r = tdsolve("edm", *JOB, "--output", out, np_=3, env={"TDSOLVE_TEST_FAULT": f"1:{chunk}:kill"})
        self.assertNotEqual(r.returncode, 0)
        self.assertFalse(os.path.exists(out), "an unfinished run must not take the output's name")
        i = info(out)
        self.assertEqual(i.returncode, 3, i.stdout + i.stderr)
        self.assertIn("INCOMPLETE", i.stdout)
        self.assertIn("writer:    none", i.stdout)
        self.assertIn("--resume", i.stdout)
        # The Python reader agrees: not finished, and says where the run is.
        with self.assertRaises(tdsolve_h5.IncompleteResult):
            tdsolve_h5.open_result(out)
        with tdsolve_h5.open_result(out, require_complete=False) as r:
            self.assertFalse(r.complete)
        helper = subprocess.run([sys.executable, tdsolve_h5.__file__, out], capture_output=True,
                                text=True)
        self.assertEqual(helper.returncode, 3, helper.stdout + helper.stderr)
        self.assert_resumes_to_reference(out, 2)

    def test_sigterm_stops_cleanly_and_resumes(self):
        out = self.path("d.h5")
        p = self.start(out)
        self.wait_for(out + ".partial", p)
        time.sleep(0.3)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, STOPPED, err)
        self.assertIn("stopped cleanly (SIGTERM)", err)
        self.assertIn("--resume", err)
        self.assertEqual(info(out + ".partial").returncode, 3)
        self.assertFalse(os.path.exists(out + ".lock"), "a clean stop releases the lock")
        self.assert_resumes_to_reference(out, 3)

    def test_sigusr1_to_mpiexec_reaches_every_rank(self):
        out = self.path("d.h5")
        p = self.start(out, np_=2)
        self.wait_for(out + ".partial", p)
        time.sleep(0.3)
        p.send_signal(signal.SIGUSR1)  # mpirun forwards SIGUSR1 to its ranks
        _, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, STOPPED, err)
        self.assertIn("stopped cleanly (SIGUSR1)", err)
        self.assert_resumes_to_reference(out, 1)

    def test_second_signal_stops_at_once_and_file_stays_resumable(self):
        out = self.path("d.h5")
        p = self.start(out)
        self.wait_for(out + ".partial", p)
        time.sleep(0.3)
        p.send_signal(signal.SIGINT)
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=120)
        self.assertIn(p.returncode, (-signal.SIGINT, STOPPED))
        self.assertEqual(info(out).returncode, 3)
        self.assert_resumes_to_reference(out, 2)

    def test_max_hours_stops_before_the_limit(self):
        # SLOW makes the 47 chunks take 4.7 s at least, so a run that
        # finishes did not honour the limit: it fails, never skips (a skip
        # here hid a --max-hours that was ignored: jobs/mutate.py,
        # checkpoints.max-hours-ignored).
        out = self.path("d.h5")
        r = tdsolve("edm", *JOB, "--output", out, "--max-hours", "0.0004", env=SLOW)  # 1.44 s
        self.assertEqual(r.returncode, STOPPED, r.stdout + r.stderr)
        self.assertIn("--max-hours reached", r.stderr)
        self.assert_resumes_to_reference(out, 2)

    def test_changed_parameters_refused_on_resume(self):
        out = self.path("d.h5")
        r = tdsolve("edm", *JOB, "--output", out, env={"TDSOLVE_TEST_FAULT": "0:3:kill"})
        self.assertNotEqual(r.returncode, 0)
        before = file_digest(out + ".partial")
        for change, named in [(["--metric", "cityblock"], "metric"),
                              (["--generate", "uniform:9000:3:8"], "input_fnv1a64"),
                              (["--precision", "float32"], "precision"),
                              (["--block", "64"], "block")]:
            args = list(JOB)
            if change[0] in args:
                args[args.index(change[0]) + 1] = change[1]
            else:
                args += change
            r = tdsolve("edm", *args, "--output", out, "--resume")
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("different job", r.stderr)
            self.assertIn(named, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertEqual(file_digest(out + ".partial"), before, "a refused resume changes nothing")
        # --resume continues or reports; --overwrite starts over: not both.
        r = tdsolve("edm", *JOB, "--output", out, "--resume", "--overwrite")
        self.assertEqual(r.returncode, 2)
        self.assertIn("do not go together", r.stderr)
        # Without --resume and without --overwrite the unfinished run is not discarded.
        r = tdsolve("edm", *JOB, "--output", out)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--resume", r.stderr)
        # Backend, chunk size and rank count may change: the file's plan is kept.
        args = list(JOB)
        args[args.index("--chunk-mb") + 1] = "16"
        r = tdsolve("edm", *args, "--output", out, "--resume", "--backend", "cpu", np_=2)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(dataset_bytes(out), self.ref_bytes)
        # Complete: --resume reports it and leaves it alone; another job is refused.
        before = file_digest(out)
        r = tdsolve("edm", *JOB, "--output", out, "--resume")
        self.assertEqual(r.returncode, 0)
        self.assertIn("already complete", r.stdout)
        self.assertEqual(file_digest(out), before)
        args = list(JOB)
        args[args.index("--metric") + 1] = "cosine"
        r = tdsolve("edm", *args, "--output", out, "--resume")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("different job", r.stderr)

    def test_damaged_files_are_named(self):
        out = self.path("d.h5")
        tdsolve("edm", *JOB, "--output", out, env={"TDSOLVE_TEST_FAULT": "0:5:kill"})
        partial = out + ".partial"
        size = os.path.getsize(partial)
        os.truncate(partial, size // 2)
        for r in (info(out), tdsolve("edm", *JOB, "--output", out, "--resume")):
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("truncated", r.stderr.lower())
        # Garbage over the superblock and metadata.
        with open(partial, "r+b") as f:
            f.write(os.urandom(4096))
        for r in (info(out), tdsolve("edm", *JOB, "--output", out, "--resume")):
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("partial", r.stderr)
        # The way out that the message names: start over.
        r = tdsolve("edm", *JOB, "--output", out, "--overwrite")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(dataset_bytes(out), self.ref_bytes)

    def test_failed_overwrite_keeps_the_old_result(self):
        out = self.path("d.h5")
        tdsolve("edm", "--generate", "uniform:500:2:1", "--output", out, check=True)
        before = file_digest(out)
        for fault in ("0:4:kill", "0:2:write"):
            r = tdsolve("edm", *JOB, "--output", out, "--overwrite", env={"TDSOLVE_TEST_FAULT": fault})
            self.assertNotEqual(r.returncode, 0)
            self.assertEqual(file_digest(out), before, f"old result changed by a failed run ({fault})")
            self.assertEqual(info(out).returncode, 0)
            self.assertTrue(os.path.exists(out + ".partial"))
        # Finishing the new run replaces the old result only then.
        self.assert_resumes_to_reference(out, 2)

    def test_second_writer_refused_while_first_runs(self):
        out = self.path("d.h5")
        p = self.start(out)
        self.wait_for(out + ".partial", p)
        i = info(out)
        self.assertEqual(i.returncode, 3)
        self.assertIn("RUNNING", i.stdout)
        self.assertIn(f"pid {p.pid}", i.stdout)
        for extra in ([], ["--overwrite"], ["--resume"]):
            r = tdsolve("edm", *JOB, "--output", out, *extra)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("being written by another tdsolve run", r.stderr)
            self.assertIn(f"pid {p.pid}", r.stderr)
        _, err = p.communicate(timeout=300)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(dataset_bytes(out), self.ref_bytes)

    def test_heartbeat_lock_where_the_file_system_cannot_lock(self):
        out = self.path("d.h5")
        env = {"TDSOLVE_TEST_LOCK": "heartbeat"}
        p = self.start(out, env=env)
        self.wait_for(out + ".partial", p)
        r = tdsolve("edm", *JOB, "--output", out, "--overwrite", env=env)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("cannot lock", r.stderr)
        self.assertIn("heartbeat", r.stderr)
        p.communicate(timeout=300)
        self.assertEqual(p.returncode, 0)
        # A lock file left by a process of this host that is gone is taken over.
        with open(out + ".lock", "w") as f:
            f.write(f"tdsolve output lock\nhost={os.uname().nodename}\npid=999999999\n"
                    f"heartbeat={int(time.time())}\n")
        r = tdsolve("edm", "--generate", "uniform:300:2", "--output", out, "--overwrite", env=env)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_stats_colliding_with_input_or_output_refused_up_front(self):
        pts = self.save_npy("p.npy", __import__("numpy").random.rand(50, 3))
        out = self.path("d.h5")
        for stats in (pts, out, out + ".partial", out + ".lock", self.path("missing/s.json")):
            r = tdsolve("edm", "--input", pts, "--output", out, "--stats", stats)
            self.assertEqual(r.returncode, 2, (stats, r.stderr))
            self.assertTrue(os.path.exists(pts))
            self.assertFalse(os.path.exists(out) or os.path.exists(out + ".partial"), stats)
        # An input named like one of the output's companions.
        for suffix in (".partial", ".lock", ".creating"):
            src = self.path("q.h5" + suffix)
            with h5py.File(src, "w") as f:
                f["x"] = __import__("numpy").random.rand(20, 2)
            r = tdsolve("edm", "--input", src + ":/x", "--output", self.path("q.h5"))
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("input file", r.stderr)
            self.assertTrue(os.path.exists(src))

    def test_kill_at_every_step_of_creating_the_file(self):
        for step in range(5):
            out = self.path(f"c{step}.h5")
            r = tdsolve("edm", "--generate", "uniform:2000:3:1", "--output", out, np_=2,
                        env={"TDSOLVE_TEST_FAULT": f"0:{step}:create"})
            self.assertNotEqual(r.returncode, 0, f"step {step}")
            self.assertIn("injected SIGKILL at create", r.stderr)
            self.assertFalse(os.path.exists(out), f"step {step}: no complete-looking output")
            if os.path.exists(out + ".partial"):
                i = info(out)
                self.assertEqual(i.returncode, 3, f"step {step}: {i.stdout}{i.stderr}")
            r = tdsolve("edm", "--generate", "uniform:2000:3:1", "--output", out, "--resume")
            self.assertEqual(r.returncode, 0, f"step {step}: {r.stderr}")
            self.assertFalse(os.path.exists(out + ".creating"), f"step {step}: leftover temp")
            self.assertEqual(info(out).returncode, 0)


class HistResumeTest(TempDirTest):
    def test_stopped_histogram_resumes_to_the_same_counts(self):
        ref, out = self.path("ref.h5"), self.path("h.h5")
        tdsolve("hist", *HIST, "--output", ref, "--quiet", check=True)
        p = subprocess.Popen([BIN, "hist", *HIST, "--output", out], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.wait_for(out + ".partial", p, ended_ok=True)
        time.sleep(0.5)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=120)
        if p.returncode == 0:
            self.skipTest("the histogram finished before the signal")
        self.assertEqual(p.returncode, STOPPED, err)
        i = info(out)
        self.assertEqual(i.returncode, 3, i.stdout)
        self.assertNotIn("INCONSISTENT", i.stdout)
        r = tdsolve("hist", *HIST, "--output", out, "--resume", np_=3)
        self.assertEqual(r.returncode, 0, r.stderr)
        with h5py.File(ref, "r") as a, h5py.File(out, "r") as b:
            for k in ("counts", "underflow", "overflow", "edges"):
                self.assertEqual(a[k][()].tobytes(), b[k][()].tobytes(), k)


    def test_killed_histogram_keeps_its_last_checkpoint(self):
        ref, out = self.path("ref.h5"), self.path("h.h5")
        tdsolve("hist", *HIST, "--output", ref, "--quiet", check=True)
        r = tdsolve("hist", *HIST, "--output", out, np_=2,
                    env={"TDSOLVE_TEST_CHECKPOINT_S": "0.001", "TDSOLVE_TEST_FAULT": "1:130:kill"})
        self.assertNotEqual(r.returncode, 0)
        with h5py.File(out + ".partial", "r") as f:
            flagged = int(f["progress/done"][:].sum())
        self.assertGreater(flagged, 0, "a checkpoint should have flagged chunks before the kill")
        i = info(out)
        self.assertEqual(i.returncode, 3, i.stdout)
        self.assertNotIn("INCONSISTENT", i.stdout)
        r = tdsolve("hist", *HIST, "--output", out, "--resume")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"{flagged} of", r.stdout)
        with h5py.File(ref, "r") as a, h5py.File(out, "r") as b:
            for k in ("counts", "underflow", "overflow"):
                self.assertEqual(a[k][()].tobytes(), b[k][()].tobytes(), k)


    def test_histogram_stopped_after_its_first_chunk_resumes_to_the_same_counts(self):
        # A limit already past stops the run after its first round: exactly
        # one chunk flagged, whose counts the resume must start from
        # (jobs/mutate.py: checkpoints.hist-one-chunk-forgotten).
        ref, out = self.path("ref.h5"), self.path("h.h5")
        tdsolve("hist", *HIST, "--output", ref, "--quiet", check=True)
        r = tdsolve("hist", *HIST, "--output", out, "--max-hours", "0.0000001")
        self.assertEqual(r.returncode, STOPPED, r.stderr)
        with h5py.File(out + ".partial", "r") as f:
            self.assertEqual(int(f["progress/done"][:].sum()), 1)
            self.assertGreater(int(f["counts"][:].sum()), 0)
        r = tdsolve("hist", *HIST, "--output", out, "--resume", np_=2)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("1 of", r.stdout)
        with h5py.File(ref, "r") as a, h5py.File(out, "r") as b:
            for k in ("counts", "underflow", "overflow"):
                self.assertEqual(a[k][()].tobytes(), b[k][()].tobytes(), k)


class CrossResumeTest(TempDirTest):
    def test_killed_cross_resumes_to_the_same_matrix(self):
        args = ["--generate", "uniform:3000:4:1", "--with-generate", "uniform:2500:4:2",
                "--chunk-mb", "1", "--progress", "none"]
        ref, out = self.path("ref.h5"), self.path("c.h5")
        tdsolve("cross", *args, "--output", ref, check=True)
        r = tdsolve("cross", *args, "--output", out, np_=2, env={"TDSOLVE_TEST_FAULT": "1:9:kill"})
        self.assertNotEqual(r.returncode, 0)
        r = tdsolve("cross", *args, "--output", out, "--resume", np_=3)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(dataset_bytes(ref), dataset_bytes(out))


if __name__ == "__main__":
    unittest.main()
