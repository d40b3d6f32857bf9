"""Nothing lost through locks and paths (issue 32; docs/design.md, "Output
lifecycle"): the decision on what exists is made holding the output's lock,
the lock is taken atomically and only its holder removes it, it is never a
symbolic link, every file a run reads or writes is checked against the
others by path and inode, --stats is never a FIFO, fractal keeps a stopped
run's .partial as every command does, and the resume hint of an --overwrite
run is a command line that works.

Races are driven deterministically (TDSOLVE_TEST_LOCK_DELAY_MS, SIGSTOP,
and strace's delay injection where strace is installed) and hammered: 50
runs started at once on one output, in both lock modes."""
import hashlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
import unittest

import h5py
import numpy as np

from common import BIN, TempDirTest, tdsolve
from test_faults import run_job

STOPPED = 75
CPU = ["--backend", "cpu", "--threads", "1", "--progress", "none"]
# A run that is surely still going when a test races it: 18 chunks of 1 MiB,
# each written after TDSOLVE_TEST_SLOW_MS.
SLOW_JOB = ["edm", "--generate", "uniform:3000:3:1", "--chunk-mb", "1", *CPU]
SLOW = {"TDSOLVE_TEST_SLOW_MS": "60"}
HEARTBEAT = {"TDSOLVE_TEST_LOCK": "heartbeat"}
HAMMER_RUNS = 50


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def command_of(path):
    with h5py.File(path, "r") as f:
        c = f.attrs["command"]
    return c.decode() if isinstance(c, bytes) else str(c)


def our_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("tdsolve:")]


class SafetyTest(TempDirTest):
    def popen(self, args, env=None, prefix=()):
        return subprocess.Popen([*prefix, BIN, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=dict(os.environ, **(env or {})))

    def assert_refused(self, r, *words, code=None):
        """Non-zero (or `code`), and stderr is one `tdsolve: error` line saying `words`."""
        what = f"exit {r.returncode}\n--- stderr\n{r.stderr}"
        if code is None:
            self.assertNotIn(r.returncode, (0, STOPPED), what)
        else:
            self.assertEqual(r.returncode, code, what)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, f"want one line\n{what}")
        self.assertTrue(lines[0].startswith("tdsolve: error"), what)
        for w in words:
            self.assertIn(w, lines[0], what)
        return lines[0]

    def assert_complete(self, out, command_has):
        """`out` is a whole result (h5py opens it, tdsolve info says complete)
        of the job whose command line holds `command_has`; no companion is left."""
        with h5py.File(out, "r") as f:
            self.assertIn("distances", f)
        info = tdsolve("info", out, timeout=60)
        self.assertEqual(info.returncode, 0, info.stdout + info.stderr)
        self.assertIn(command_has, command_of(out))
        for suffix in (".partial", ".creating", ".lock"):
            self.assertFalse(os.path.exists(out + suffix), f"{out}{suffix} left behind")

    # ---- 1. the "exists" decision holds the lock ---------------------------------

    def finish_race(self, delayed):
        """Run A is stopped (SIGSTOP) holding the output; B, without
        --overwrite, passes its first look at the names (nothing there yet),
        then `delayed(seconds)` holds it back before the lock while A goes on
        and finishes. B must then be refused, and A's result stay. Setups in
        which B did not pass its first look before A finished (B ended before
        the delay) or took the lock before A finished are tried again wider."""
        for attempt, (delay, grace) in enumerate(((3, 0.8), (8, 3.0))):
            out = self.path(f"race{attempt}.h5")
            a = self.popen([*SLOW_JOB, "--output", out], env=SLOW)
            self.wait_for(out + ".partial", a)
            os.kill(a.pid, signal.SIGSTOP)
            prefix, env = delayed(out, delay)
            t0 = time.monotonic()
            b = self.popen(["edm", "--generate", "uniform:500:3:2", *CPU, "--output", out], env=env, prefix=prefix)
            time.sleep(grace)
            os.kill(a.pid, signal.SIGCONT)
            _, b_err = b.communicate(timeout=300)
            b_seconds = time.monotonic() - t0
            _, a_err = a.communicate(timeout=300)
            self.assertEqual(a.returncode, 0, a_err)
            if b.returncode != 0 and (b_seconds < delay or "being written" in b_err):
                continue  # the window was not hit: B looked after A's rename, or locked before it
            self.assertIn("uniform:3000:3:1", command_of(out), "run A's result was replaced by run B's")
            self.assert_refused(subprocess.CompletedProcess(b.args, b.returncode, "", b_err),
                                "exists; pass --overwrite", code=2)
            self.assert_complete(out, "uniform:3000:3:1")
            return
        self.fail("could not place run B between run A's rename and its lock release")

    def test_a_run_finishing_meanwhile_is_not_replaced(self):
        self.finish_race(lambda out, s: ((), {"TDSOLVE_TEST_LOCK_DELAY_MS": str(s * 1000)}))

    @unittest.skipUnless(shutil.which("strace"), "strace is not installed")
    def test_a_run_finishing_meanwhile_is_not_replaced_strace(self):
        # The same window widened from outside the program: the first openat
        # of the lock file waits (strace's delay injection), whatever the
        # build's hooks.
        def delayed(out, s):
            return (["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=openat", "-P", out + ".lock",
                     "-e", f"inject=openat:delay_enter={s * 1000000}:when=1"], {})
        self.finish_race(delayed)

    # ---- 2. the lock: atomic, only its holder removes it, never a link -------------

    def test_heartbeat_lock_being_made_counts_as_held_and_stays(self):
        # A lock file that exists but has no heartbeat yet is one another run
        # is making: taking it over would give two holders, and the loser
        # would later remove the winner's lock.
        out = self.path("h.h5")
        with open(out + ".lock", "w"):
            pass
        r = tdsolve("edm", "--generate", "uniform:300:2:1", *CPU, "--output", out, env=HEARTBEAT, timeout=60)
        self.assert_refused(r, "being written by another tdsolve run", code=1)
        self.assertTrue(os.path.exists(out + ".lock"), "a refused run removed a lock it did not hold")
        self.assertEqual(os.path.getsize(out + ".lock"), 0)
        self.assertFalse(os.path.exists(out) or os.path.exists(out + ".partial"))
        # A holder with a fresh heartbeat, alive on this host: refused, and
        # its lock file stays as it was.
        text = (f"tdsolve output lock\nhost={os.uname().nodename}\npid={os.getpid()}\njob=\n"
                f"started=2026-01-01T00:00:00Z\nheartbeat={int(time.time())}\ncommand=test\n")
        with open(out + ".lock", "w") as f:
            f.write(text)
        r = tdsolve("edm", "--generate", "uniform:300:2:1", *CPU, "--output", out, "--overwrite", env=HEARTBEAT,
                    timeout=60)
        self.assert_refused(r, f"pid {os.getpid()}", code=1)
        with open(out + ".lock") as f:
            self.assertEqual(f.read(), text)

    def test_lock_file_that_is_a_link_or_fifo_is_refused(self):
        victim = self.path("victim.txt")
        for mode, env in (("fcntl", {}), ("heartbeat", HEARTBEAT)):
            with self.subTest(mode=mode):
                with open(victim, "w") as f:
                    f.write("precious\n")
                out = self.path(f"l{mode}.h5")
                os.symlink(victim, out + ".lock")
                r = run_job(["edm", "--generate", "uniform:300:2:1", *CPU, "--output", out], env=env)
                self.assertFalse(r.hung, str(r))
                self.assert_refused(r, "symbolic link")
                with open(victim) as f:
                    self.assertEqual(f.read(), "precious\n", "the lock was written through the link")
                self.assertTrue(os.path.islink(out + ".lock"))
                self.assertFalse(os.path.exists(out) or os.path.exists(out + ".partial"))
                os.remove(out + ".lock")
                os.mkfifo(out + ".lock")
                r = run_job(["edm", "--generate", "uniform:300:2:1", *CPU, "--output", out], env=env)
                self.assertFalse(r.hung, str(r))
                self.assert_refused(r, "FIFO")
                os.remove(out + ".lock")

    def hammer(self, env):
        """HAMMER_RUNS runs started at once on one output, without --overwrite:
        exactly one writes it, each other is refused in one line, and the
        result is whole; no lock or temporary file is left."""
        out = self.path("hammer.h5")
        args = ["edm", "--generate", "uniform:1500:3:1", *CPU, "--quiet", "--output", out]
        procs = [self.popen(args, env=env) for _ in range(HAMMER_RUNS)]
        results = []
        for p in procs:
            o, e = p.communicate(timeout=300)
            results.append((p.returncode, o, e))
        winners = [k for k, (code, _, _) in enumerate(results) if code == 0]
        summary = "\n".join(f"run {k}: exit {c}: {e.strip()}" for k, (c, _, e) in enumerate(results))
        self.assertEqual(len(winners), 1, f"want exactly one run to write the output\n{summary}")
        for k, (code, _, err) in enumerate(results):
            if k in winners:
                continue
            line = self.assert_refused(subprocess.CompletedProcess(args, code, "", err))
            self.assertTrue("being written by another tdsolve run" in line or "exists; pass --overwrite" in line,
                            line)
        self.assert_complete(out, "uniform:1500:3:1")
        self.assertEqual(sorted(os.listdir(self.dir)), ["hammer.h5"], "files left beside the output")

    def test_fifty_starts_one_output_fcntl(self):
        self.hammer({})

    def test_fifty_starts_one_output_heartbeat(self):
        self.hammer(HEARTBEAT)

    # ---- 3. one registry of every file a run reads and writes ---------------------

    def test_stats_never_names_a_file_the_run_reads(self):
        pts = self.save_npy("p.npy", np.random.default_rng(1).random((40, 3)))
        w = self.save_npy("w.npy", np.array([1.0, 2.0, 0.5]))
        v = self.save_npy("v.npy", np.array([0.5, 1.0, 2.0]))
        os.link(w, self.path("w-link.json"))
        os.symlink(v, self.path("v-link.json"))
        ini = self.path("job.ini")
        with open(ini, "w") as f:
            f.write("progress = none\n")
        cases = [(["--metric", "minkowski", "--p", "3", "--weights", w], w, "--weights"),
                 (["--metric", "minkowski", "--p", "3", "--weights", w], self.path("w-link.json"), "--weights"),
                 (["--metric", "seuclidean", "--variance", v], v, "--variance"),
                 (["--metric", "seuclidean", "--variance", v], self.path("v-link.json"), "--variance"),
                 (["--config", ini], ini, "--config")]
        for k, (extra, stats, what) in enumerate(cases):
            with self.subTest(stats=os.path.basename(stats)):
                before = {p: digest(p) for p in (pts, w, v, ini)}
                out = self.path(f"d{k}.h5")
                r = tdsolve("edm", "--input", pts, *CPU, *extra, "--output", out, "--stats", stats, timeout=60)
                self.assert_refused(r, what, code=2)
                self.assertEqual(before, {p: digest(p) for p in before}, "an input file was changed")
                self.assertFalse(os.path.exists(out))

    def test_output_never_names_a_file_the_run_reads(self):
        pts = self.save_npy("p.npy", np.random.default_rng(2).random((40, 3)))
        wfile = self.save_h5("w.h5", "w", np.array([1.0, 2.0, 0.5]))
        ini = self.path("job.ini")
        with open(ini, "w") as f:
            f.write("progress = none\n")
        for extra, out, what in ((["--metric", "cityblock", "--weights", wfile + ":/w"], wfile, "--weights"),
                                 (["--config", ini], ini, "--config")):
            with self.subTest(out=os.path.basename(out)):
                before = digest(out)
                r = tdsolve("edm", "--input", pts, *CPU, *extra, "--output", out, "--overwrite", timeout=60)
                self.assert_refused(r, what, code=2)
                self.assertEqual(digest(out), before, f"{out} was replaced")

    def test_output_or_stats_that_is_another_runs_companion_refused(self):
        x = self.path("x.h5")
        a = self.popen([*SLOW_JOB, "--output", x], env=SLOW)
        self.wait_for(x + ".partial", a)
        for args in (["--output", x + ".partial", "--overwrite"], ["--output", x + ".lock", "--overwrite"],
                     ["--output", x + ".creating"], ["--output", self.path("y.h5"), "--stats", x + ".partial"]):
            with self.subTest(args=[os.path.basename(s) for s in args]):
                r = tdsolve("edm", "--generate", "uniform:300:2:2", *CPU, *args, timeout=60)
                self.assert_refused(r, "is the name tdsolve gives the", code=2)
        _, err = a.communicate(timeout=300)
        self.assertEqual(a.returncode, 0, err)
        self.assert_complete(x, "uniform:3000:3:1")
        self.assertFalse(os.path.exists(x + ".partial.partial"))

    # ---- 4. --stats: a regular file or nothing ----------------------------------

    def test_stats_fifo_refused_up_front(self):
        out, fifo = self.path("d.h5"), self.path("s.json")
        os.mkfifo(fifo)
        r = run_job(["edm", "--generate", "uniform:300:2:1", *CPU, "--output", out, "--stats", fifo], timeout=30)
        self.assertFalse(r.hung, f"blocked on the FIFO\n{r}")
        self.assert_refused(r, "FIFO", code=2)
        self.assertFalse(os.path.exists(out) or os.path.exists(out + ".partial"))

    def test_stats_link_to_the_result_never_writes_it(self):
        # --stats a link to nothing yet, which the run itself then makes:
        # the result. Refused up front; and a link made while the run goes
        # (after the checks) is not written through either.
        out, stats = self.path("d.h5"), self.path("s.json")
        os.symlink(os.path.basename(out), stats)
        r = run_job(["edm", "--generate", "uniform:300:2:1", *CPU, "--output", out, "--stats", stats])
        self.assert_refused(r, "--stats", "symbolic link", code=2)
        self.assertFalse(os.path.exists(out))
        os.remove(stats)
        job = [BIN, "hist", "--generate", "uniform:60000:3:1", "--bins", "8", "--range", "0:2", *CPU, "--output",
               out, "--stats", stats]
        p = subprocess.Popen(job, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not os.path.exists(out + ".partial") and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)  # the checks are behind it once the .partial exists
        os.symlink(os.path.basename(out), stats)
        _, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 0, err)
        self.assertIn("not written", err)
        self.assertEqual(tdsolve("info", out).returncode, 0, f"the result is gone\n{err}")

    def test_csv_is_never_a_file_the_run_reads(self):
        # bench's and fractal --bench's --csv append to their file: naming
        # the input (or a hard link to it) or the --config would add a row
        # to it. Refused in one line, the file unchanged.
        pts, link, ini = self.path("p.npy"), self.path("h.npy"), self.path("c.ini")
        np.save(pts, np.random.default_rng(1).random((100, 3)))
        os.link(pts, link)
        with open(ini, "w") as f:
            f.write("[fractal]\nshape = sierpinski-triangle\n")
        cases = [(["bench", "--input", pts, "--backend", "cpu", "--repeat", 1], pts, "the input"),
                 (["bench", "--input", pts, "--backend", "cpu", "--repeat", 1], link, "the input"),
                 (["fractal", "--config", ini, "--level", 4, "--steps", 2, "--backend", "cpu", "--bench",
                   "--repeat", 1], ini, "the --config")]
        for job, csv, which in cases:
            with self.subTest(command=job[0], csv=os.path.basename(csv)):
                before = digest(csv)
                r = run_job([*job, "--csv", csv], timeout=60)
                self.assert_refused(r, "--csv", which, code=2)
                self.assertEqual(digest(csv), before, "the file changed")

    def test_csv_fifo_refused_never_waited_on(self):
        # bench's and fractal --bench's --csv: a FIFO with no reader would
        # block the open forever; it is refused in one line instead.
        fifo = self.path("b.csv")
        os.mkfifo(fifo)
        for job in (["bench", "--generate", "uniform:300:2:1", "--backend", "cpu", "--repeat", 1],
                    ["fractal", "--shape", "sierpinski-triangle", "--level", 5, "--steps", 4, "--backend", "cpu",
                     "--bench", "--repeat", 1]):
            with self.subTest(command=job[0]):
                r = run_job([*job, "--csv", fifo], timeout=30)
                self.assertFalse(r.hung, f"blocked on the FIFO\n{r}")
                self.assert_refused(r, "--csv", "not a regular file")

    # ---- 5. fractal keeps a stopped run's .partial ---------------------------------

    def test_fractal_refuses_a_stopped_runs_partial_without_resume_or_overwrite(self):
        out = self.path("f.h5")
        args = ["fractal", "--shape", "sierpinski-triangle", "--level", 6, "--steps", 60, "--snapshot-every", 20,
                "--backend", "cpu", "--threads", 1, "--progress", "none", "--output", out]
        r = tdsolve(*args, "--max-hours", "0.0000001", timeout=60)
        self.assertEqual(r.returncode, STOPPED, r.stderr)
        before = digest(out + ".partial")
        r = tdsolve(*args, timeout=60)
        self.assert_refused(r, "pass --resume to continue it, or --overwrite to start over", code=2)
        self.assertEqual(digest(out + ".partial"), before, "the stopped run's .partial was replaced")
        self.assertFalse(os.path.exists(out))
        r = tdsolve(*args, "--resume", timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.exists(out))

    # ---- 6. the resume hint of an --overwrite run works ---------------------------

    def test_resume_hint_of_an_overwrite_run_is_a_command_that_works(self):
        # The hint the stopped run prints, and the one tdsolve info prints of
        # its .partial, each run as it stands: the first finishes the run,
        # the second finds it complete.
        ini = self.path("job.ini")
        with open(ini, "w") as f:
            f.write("overwrite = true\n")
        for k, (how, extra) in enumerate((("--overwrite", ["--overwrite"]),
                                          ("overwrite = true in --config", ["--config", ini]))):
            with self.subTest(how=how):
                out = self.path(f"d{k}.h5")
                tdsolve("edm", "--generate", "uniform:300:2:1", *CPU, "--output", out, check=True)
                p = self.popen(["edm", "--generate", "uniform:3000:3:3", "--chunk-mb", "1", *CPU, *extra,
                                "--output", out], env=SLOW)
                self.wait_for(out + ".partial", p)
                p.send_signal(signal.SIGTERM)
                _, err = p.communicate(timeout=120)
                self.assertEqual(p.returncode, STOPPED, err)
                hint = re.search(r"Resume with the same job and --resume \(any rank count\): (.*)$", err, re.M)
                self.assertIsNotNone(hint, err)
                info = tdsolve("info", out + ".partial", timeout=60)
                shown = re.search(r"^writer: +none: .*\n +(.*)$", info.stdout, re.M)
                self.assertIsNotNone(shown, info.stdout)
                for line in (hint.group(1), shown.group(1)):
                    self.assertNotIn("--overwrite", line)
                    r = subprocess.run(shlex.split(line), capture_output=True, text=True, timeout=120)
                    self.assertEqual(r.returncode, 0, f"$ {line}\n{r.stderr}")
                    self.assert_complete(out, "uniform:3000:3:3")

if __name__ == "__main__":
    unittest.main()
