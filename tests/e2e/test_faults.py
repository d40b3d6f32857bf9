"""Failures in the middle of a run: an injected fault (TDSOLVE_TEST_FAULT) at each
stage, a full disk (the ENOSPC preload shim of tests/fault, and a real tiny
tmpfs when we may mount one), an output that is a character device, and
absurd bench options. Each ends within seconds with exactly one `tdsolve:`
line on stderr, a non-zero exit, no crash, and no output file that reads as
complete; chunks recorded as done hold the values of a clean run.

A run that hangs is killed (its whole session: mpiexec's ranks sit in
process groups of their own) and reported as a failure."""
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest

import h5py
import numpy as np

from common import BIN, MPIEXEC, TempDirTest, tdsolve, tdsolve_h5

RANKS = 3
HANG_S = 30  # a faulted run that takes longer than this hangs
STAGES = ("compute", "copy", "write", "mark")
HERE = os.path.dirname(os.path.abspath(__file__))
SHIM_SOURCE = os.path.join(HERE, "..", "fault", "enospc_preload.c")

# The runs, on 3 ranks: each has several chunks per rank where the command
# takes --chunk-mb (edm: 16 chunks of <= 1.5 MB; cross: 6).
JOBS = {
    "edm": ["edm", "--backend", "cpu", "--generate", "uniform:3000:3:1", "--chunk-mb", "1"],
    "hist": ["hist", "--backend", "cpu", "--generate", "uniform:3000:3:1", "--bins", "64", "--range", "0:1.5"],
    "cross": ["cross", "--backend", "cpu", "--generate", "uniform:1500:3:1", "--with-generate", "uniform:1000:3:2",
              "--chunk-mb", "1"],
}


def session_pids(sid):
    """Processes of session `sid` (a job started with start_new_session)."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(d))
    return pids


def kill_session(sid):
    for pid in session_pids(sid):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


class Run:
    def __init__(self, cmd, returncode, stdout, stderr, hung, leftovers, seconds):
        self.cmd, self.returncode, self.stdout, self.stderr = cmd, returncode, stdout, stderr
        self.hung, self.leftovers, self.seconds = hung, leftovers, seconds

    def ours(self):
        # The line after an error that says how to resume is not a second error.
        return [line for line in self.stderr.splitlines()
                if line.startswith("tdsolve:") and not line.startswith("tdsolve: the finished chunks")]

    def __str__(self):
        return (f"$ {' '.join(self.cmd)}\nexit {self.returncode} after {self.seconds:.1f} s"
                f"{' (HUNG, killed)' if self.hung else ''}\n--- stdout\n{self.stdout[-3000:]}"
                f"\n--- stderr\n{self.stderr[-6000:]}")


def run_job(args, np_=None, env=None, timeout=HANG_S, address_space=None):
    """Runs tdsolve (singleton, or under mpiexec with np_ ranks) in a session of
    its own; on timeout kills the session. Ranks still alive 3 s after the
    launcher exited are killed and reported as leftovers."""
    cmd = [BIN, *map(str, args)]
    if np_ is not None:
        cmd = [MPIEXEC, "-n", str(np_), "--oversubscribe", *cmd]
    e = dict(os.environ, **(env or {}))

    def limits():
        if address_space:
            import resource
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e,
                         start_new_session=True, preexec_fn=limits if address_space else None)
    hung = False
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        hung = True
        kill_session(p.pid)
        out, err = p.communicate()
    seconds = time.monotonic() - t0
    leftovers = session_pids(p.pid)
    deadline = time.monotonic() + 3
    while leftovers and time.monotonic() < deadline:
        time.sleep(0.1)
        leftovers = session_pids(p.pid)
    if leftovers:
        kill_session(p.pid)
    return Run(cmd, p.returncode, out, err, hung, leftovers, seconds)


class FaultTestBase(TempDirTest):
    def assert_one_error(self, run, what, rank=None, words=()):
        """Ended in time, non-zero, no crash, exactly one `tdsolve: error` line
        (naming `rank` and containing `words`); returns that line."""
        self.assertFalse(run.hung, f"{what}: hung, killed after {HANG_S} s\n{run}")
        self.assertFalse(run.leftovers, f"{what}: processes {run.leftovers} outlived the launcher\n{run}")
        self.assertNotEqual(run.returncode, 0, f"{what}: exit 0\n{run}")
        self.assertNotIn(run.returncode, (-11, 139, -6, 134), f"{what}: crashed\n{run}")
        for crash in ("Segmentation fault", "signal 11", "Signal: Aborted", "terminate called"):
            self.assertNotIn(crash, run.stderr, f"{what}: crashed\n{run}")
        ours = run.ours()
        self.assertEqual(len(ours), 1, f"{what}: want exactly one 'tdsolve:' line\n{run}")
        self.assertTrue(ours[0].startswith("tdsolve: error"), f"{what}: not an error line\n{run}")
        # One line: a message with a newline inside (HDF5's sec2 errors embed
        # ctime(), "time = ...\n, filename = ..., errno = 28") is not.
        self.assertNotRegex(run.stderr, r"(?m)^tdsolve:.*\n[^\n]*\b(filename|errno|error message) = ",
                            f"{what}: the error message runs over more than one line\n{run}")
        if rank is not None:
            self.assertTrue(ours[0].startswith(f"tdsolve: error on rank {rank}:"),
                            f"{what}: the line does not name rank {rank}\n{run}")
        for w in words:
            self.assertIn(w, ours[0], f"{what}: the line does not say '{w}'\n{run}")
        return ours[0]

    def assert_not_complete(self, path, what, strict, reader=True):
        """No file (returns False), or one that tdsolve info and the Python
        reader do not call complete. strict: it must read as INCOMPLETE (info
        exit 3, the reader's IncompleteResult), not merely be unreadable.
        reader=False: the Python reader does not know this kind of file.
        An unfinished run's file is path.partial (path itself only ever holds
        a complete result): info and the reader look there when path is missing."""
        if not os.path.exists(path) and not os.path.exists(path + ".partial"):
            return False
        self.assertFalse(os.path.exists(path), f"{what}: an unfinished run took the output's name")
        info = tdsolve("info", path, timeout=HANG_S)
        if strict:
            self.assertEqual(info.returncode, 3, f"{what}: tdsolve info on the file left behind:\n"
                             f"{info.stdout}{info.stderr}")
        else:
            self.assertNotEqual(info.returncode, 0, f"{what}: tdsolve info calls the file complete:\n{info.stdout}")
        if reader:
            allowed = tdsolve_h5.IncompleteResult if strict else (tdsolve_h5.IncompleteResult, OSError, KeyError)
            with self.assertRaises(allowed, msg=f"{what}: the Python reader opens it as complete"):
                tdsolve_h5.open_result(path).close()
        return True


class InjectedFaultTest(FaultTestBase):
    """TDSOLVE_TEST_FAULT=RANK:CHUNK:STAGE on a 3-rank CPU job."""
    refs = {}
    ref_dir = None

    @classmethod
    def setUpClass(cls):
        cls.ref_dir = tempfile.mkdtemp(prefix="tdsolve_faults_ref_")
        cls.have = {"edm": True}
        for cmd in ("hist", "cross"):
            cls.have[cmd] = subprocess.run([BIN, cmd, "--help"], capture_output=True, timeout=60).returncode == 0

    @classmethod
    def tearDownClass(cls):

        shutil.rmtree(cls.ref_dir, ignore_errors=True)

    def reference(self, command):
        """A clean 3-rank run of JOBS[command]: its values, progress and K."""
        if not self.have[command]:
            self.skipTest(f"`tdsolve {command} --help` fails: this build has no {command} command yet")
        if command not in self.refs:
            out = os.path.join(self.ref_dir, f"{command}.h5")
            run = run_job([*JOBS[command], "--output", out, "--progress", "none", "--quiet"], np_=RANKS,
                          timeout=120)
            self.assertEqual(run.returncode, 0, f"clean {command} run failed\n{run}")
            info = tdsolve("info", out)
            self.assertEqual(info.returncode, 0, f"tdsolve info does not call a clean {command} file complete:\n"
                             f"{info.stdout}{info.stderr}")
            try:
                tdsolve_h5.open_result(out).close()
                reader = True
            except (tdsolve_h5.IncompleteResult, KeyError, OSError):
                reader = False  # the Python reader does not know this command's files
            with h5py.File(out, "r") as f:
                name = f["progress"].attrs["dataset"]
                name = name.decode() if isinstance(name, bytes) else str(name)
                ref = {"dataset": name, "values": f[name][...], "offsets": f["progress/offsets"][:],
                       "chunks": len(f["progress/done"]), "reader": reader}
                for extra in ("underflow", "overflow"):
                    if extra in f:
                        ref[extra] = f[extra][()]
            self.refs[command] = ref
        return self.refs[command]

    def check_done_chunks(self, path, ref, what):
        if not os.path.exists(path):
            path += ".partial"
        with h5py.File(path, "r") as f:
            done = f["progress/done"][:]
            np.testing.assert_array_equal(f["progress/offsets"][:], ref["offsets"], f"{what}: /progress/offsets")
            if not done.any():
                return 0
            values = f[ref["dataset"]][...]
            if ref["dataset"] == "/counts":
                # hist writes its counts once, before any done flag.
                self.assertEqual(values.tobytes(), ref["values"].tobytes(), f"{what}: /counts with chunks done")
                for extra in ("underflow", "overflow"):
                    self.assertEqual(f[extra][()], ref[extra], f"{what}: /{extra}")
                return int(done.sum())
            flat, want, off = values.reshape(-1), ref["values"].reshape(-1), ref["offsets"]
            for c in np.flatnonzero(done):
                a, b = int(off[c]), int(off[c + 1])
                self.assertEqual(flat[a:b].tobytes(), want[a:b].tobytes(),
                                 f"{what}: chunk {c} is marked done but its values differ from a clean run")
            return int(done.sum())

    def variants(self, command, ref):
        k = ref["chunks"]
        if command == "edm":
            # rank 1 at its first chunk; rank 0 and rank 2 after some of theirs are done.
            return [(1, "*"), (0, "2"), (2, str(max(k - 2, 1)))]
        # hist picks its own chunk count (no --chunk-mb): a rank without a chunk
        # never reaches a stage, so fault rank 1 only when every rank has one.
        return [(1 if k >= RANKS else 0, "*")]

    def check_stage(self, command, stage):
        ref = self.reference(command)
        for rank, chunk in self.variants(command, ref):
            fault = f"{rank}:{chunk}:{stage}"
            what = f"{command} TDSOLVE_TEST_FAULT={fault}"
            with self.subTest(fault=fault):
                out = self.path(f"{command}-{rank}-{stage}.h5")
                run = run_job([*JOBS[command], "--output", out, "--progress", "none"], np_=RANKS,
                              env={"TDSOLVE_TEST_FAULT": fault})
                self.assert_one_error(run, what, rank=rank, words=("injected fault", stage))
                self.assertNotIn("tdsolve: error", run.stdout, what)
                if self.assert_not_complete(out, what, strict=True, reader=ref["reader"]):
                    self.check_done_chunks(out, ref, what)

    def check_read(self, command):
        """The read fault is an input error: exit 1 on every rank (each records
        its own status, as in test_bad_input), one `tdsolve: error:` line, no
        MPI_Abort, no output file."""
        if not self.have[command]:
            self.skipTest(f"`tdsolve {command} --help` fails: this build has no {command} command yet")
        out = self.path(f"{command}-read.h5")
        script = 'exe="$1"; shift; "$exe" "$@"; echo $? > "%s/rc.$OMPI_COMM_WORLD_RANK"' % self.dir
        cmd = [MPIEXEC, "-n", str(RANKS), "--oversubscribe", "sh", "-c", script, "sh", BIN, *JOBS[command],
               "--output", out, "--progress", "none"]
        e = dict(os.environ, TDSOLVE_TEST_FAULT="1:*:read")
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e,
                             start_new_session=True)
        try:
            stdout, stderr = p.communicate(timeout=HANG_S)
        except subprocess.TimeoutExpired:
            kill_session(p.pid)
            stdout, stderr = p.communicate()
            self.fail(f"{command} TDSOLVE_TEST_FAULT=1:*:read hung, killed after {HANG_S} s\n{stderr}")
        run = Run(cmd, p.returncode, stdout, stderr, False, [], time.monotonic() - t0)
        codes = []
        for r in range(RANKS):
            try:
                with open(self.path(f"rc.{r}")) as f:
                    codes.append(int(f.read()))
            except (OSError, ValueError):
                codes.append(None)
        self.assertEqual(codes, [1] * RANKS, f"exit status per rank\n{run}")
        ours = run.ours()
        self.assertEqual(len(ours), 1, f"want one 'tdsolve:' line\n{run}")
        self.assertTrue(ours[0].startswith("tdsolve: error:"), f"not a collective error line\n{run}")
        self.assertIn("injected fault", ours[0], str(run))
        self.assertNotIn("MPI_ABORT", run.stderr, f"an error before the file exists must not abort\n{run}")
        self.assertFalse(os.path.exists(out), f"an output file was left behind\n{run}")

    def test_edm_read(self):
        self.check_read("edm")

    def test_edm_compute(self):
        self.check_stage("edm", "compute")

    def test_edm_copy(self):
        self.check_stage("edm", "copy")

    def test_edm_write(self):
        self.check_stage("edm", "write")

    def test_edm_mark(self):
        self.check_stage("edm", "mark")

    def test_hist_read(self):
        self.check_read("hist")

    def test_hist_stages(self):
        for stage in STAGES:
            self.check_stage("hist", stage)

    def test_cross_read(self):
        self.check_read("cross")

    def test_cross_stages(self):
        for stage in STAGES:
            self.check_stage("cross", stage)


def build_shim(directory):
    """The ENOSPC shim: $TDSOLVE_ENOSPC_PRELOAD (CMake builds it), else compiled
    here from tests/fault/enospc_preload.c."""
    lib = os.environ.get("TDSOLVE_ENOSPC_PRELOAD")
    if lib:
        if not os.path.exists(lib):
            raise unittest.SkipTest(f"TDSOLVE_ENOSPC_PRELOAD={lib} does not exist")
        return lib
    lib = os.path.join(directory, "libenospc_preload.so")
    for cc in ("cc", "gcc"):
        try:
            r = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", lib, SHIM_SOURCE, "-ldl"], capture_output=True,
                               text=True, timeout=120)
        except OSError:
            continue
        if r.returncode == 0:
            return lib
    raise unittest.SkipTest("no TDSOLVE_ENOSPC_PRELOAD and no C compiler to build tests/fault/enospc_preload.c")


class FullDiskTest(FaultTestBase):
    """Writes to the output fail with ENOSPC: from the first byte, or mid-data."""

    @classmethod
    def setUpClass(cls):
        cls.shim_dir = tempfile.mkdtemp(prefix="tdsolve_shim_")
        cls.shim = build_shim(cls.shim_dir)

    @classmethod
    def tearDownClass(cls):

        shutil.rmtree(cls.shim_dir, ignore_errors=True)

    def shim_env(self, out, after):
        pre = os.environ.get("LD_PRELOAD", "")
        # The run writes out.creating, renames it to out.partial, then to out.
        names = "\n".join([out, out + ".creating", out + ".partial"])
        return {"LD_PRELOAD": f"{self.shim} {pre}".strip(), "TDSOLVE_ENOSPC_PATH": names,
                "TDSOLVE_ENOSPC_AFTER": str(after)}

    def test_shim_itself(self):
        out = self.path("probe.bin")
        code = ("import errno, os, sys\n"
                "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT)\n"
                "assert os.write(fd, b'x' * 100) == 100\n"
                "try:\n    os.pwrite(fd, b'y' * 100, 100)\nexcept OSError as e:\n"
                "    sys.exit(0 if e.errno == errno.ENOSPC else 3)\n"
                "sys.exit(4)\n")
        r = subprocess.run([sys.executable, "-c", code, out], env=dict(os.environ, **self.shim_env(out, 150)),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, f"the shim does not fail the write past 150 bytes: {r.stderr}")
        self.assertEqual(os.path.getsize(out), 100)

    def check_full(self, np_, after):
        out = self.path(f"full-{np_}-{after}.h5")
        run = run_job(["edm", "--backend", "cpu", "--generate", "uniform:2000:3", "--chunk-mb", "1", "--output",
                       out, "--progress", "none"], np_=None if np_ == 1 else np_, env=self.shim_env(out, after))
        what = f"{np_} rank(s), ENOSPC after {after} bytes per rank"
        self.assert_one_error(run, what)
        self.assert_not_complete(out, what, strict=False)
        if after == 0:
            # Not even the superblock can be written: the file creation failed,
            # and a failed creation is cleaned up.
            for left in (out, out + ".creating", out + ".partial"):
                self.assertFalse(os.path.exists(left), f"{what}: the file of a failed creation was left "
                                 f"behind: {left}\n{run}")

    def test_full_from_the_first_byte_1_rank(self):
        self.check_full(1, 0)

    def test_full_from_the_first_byte_2_ranks(self):
        self.check_full(2, 0)

    def test_full_mid_data_1_rank(self):
        self.check_full(1, 3000000)  # of 8 MB of values

    def test_full_mid_data_2_ranks(self):
        self.check_full(2, 3000000)

    def test_fractal_full_disk(self):
        # From the first byte (the file image cannot be written: nothing is
        # left) and mid-run (a snapshot's write fails: one line, the .partial
        # reads as incomplete).
        for after in (0, 2000, 300000):
            with self.subTest(after=after):
                out = self.path(f"fractal-{after}.h5")
                run = run_job(["fractal", "--shape", "sierpinski-triangle", "--level", 11, "--steps", 40,
                               "--snapshot-every", 10, "--output", out, "--progress", "none"],
                              env=self.shim_env(out, after))
                what = f"fractal, ENOSPC after {after} bytes"
                self.assert_one_error(run, what)
                self.assert_not_complete(out, what, strict=after > 2000, reader=False)
                if after <= 2000:
                    for left in (out, out + ".creating", out + ".partial"):
                        self.assertFalse(os.path.exists(left), f"{what}: left {left}\n{run}")

    def test_knn_full_disk(self):
        # --k dense (--cull off) writes each chunk's rows as it goes; --k
        # culled (auto here, on the CPU in 3-D) and --radius write all
        # their rows or pairs at the end: ENOSPC from the first byte leaves
        # nothing, later one line and a .partial that reads as incomplete,
        # on 1 and 2 ranks.
        pts = self.path("knn_points.npy")
        np.save(pts, np.random.default_rng(4).random((3000, 3)))
        for mode in (["--k", "150", "--cull", "off"], ["--k", "150"], ["--radius", "0.2"]):
            for after, ranks in ((0, None), (2000, None), (300000, None), (300000, 2)):
                with self.subTest(mode=mode, after=after, ranks=ranks):
                    out = self.path(f"knn-{mode[0][2:]}-{len(mode)}-{after}-{ranks}.h5")
                    run = run_job(["knn", "--input", pts, *mode, "--chunk-mb", 1, "--block", 16, "--output", out,
                                   "--progress", "none"], np_=ranks, env=self.shim_env(out, after))
                    what = f"knn {mode}, ENOSPC after {after} bytes, ranks {ranks}"
                    self.assert_one_error(run, what)
                    self.assert_not_complete(out, what, strict=after > 2000, reader=False)
                    if after <= 2000:
                        for left in (out, out + ".creating", out + ".partial"):
                            self.assertFalse(os.path.exists(left), f"{what}: left {left}\n{run}")

    def test_collide_full_disk(self):
        # collide writes its pairs (and /count) at the end, as knn --radius:
        # ENOSPC from the first byte leaves nothing; later (in the pairs,
        # about 2 MB of them here) one line naming the rank that failed first,
        # the hint that a rerun starts over, and a .partial that reads as
        # incomplete, on 1 and 2 ranks.
        for after, ranks in ((0, None), (2000, None), (300000, None), (300000, 2)):
            with self.subTest(after=after, ranks=ranks):
                out = self.path(f"collide-{after}-{ranks}.h5")
                run = run_job(["collide", "--generate", "spheres:3000:3:4:0.15", "--chunk-mb", 1, "--block", 16,
                               "--output", out, "--progress", "none"], np_=ranks, env=self.shim_env(out, after))
                what = f"collide, ENOSPC after {after} bytes, ranks {ranks}"
                self.assert_one_error(run, what)
                self.assert_not_complete(out, what, strict=after > 2000, reader=False)
                if after <= 2000:
                    for left in (out, out + ".creating", out + ".partial"):
                        self.assertFalse(os.path.exists(left), f"{what}: left {left}\n{run}")
                else:
                    self.assertIn("the finished chunks of a collide run are not kept", run.stderr, what)


class TinyTmpfsTest(FaultTestBase):
    """A real file system that is too small: data that fits the up-front
    free-space check, but not with the file's metadata (4 KiB, 8 KiB), or
    whose last pages do not (256 KiB)."""

    def mount(self, size):
        if os.geteuid() != 0:
            self.skipTest("not root: cannot mount a tmpfs")
        mnt = tempfile.mkdtemp(prefix=f"tdsolve_tmpfs_{size}_")
        self.addCleanup(os.rmdir, mnt)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", mnt], capture_output=True,
                           text=True, timeout=60)
        if r.returncode != 0:
            self.skipTest(f"mount -t tmpfs failed here: {r.stderr.strip()}")
        self.addCleanup(self.unmount, mnt)
        return mnt

    @staticmethod
    def unmount(mnt):
        if subprocess.run(["umount", mnt], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", mnt], capture_output=True)

    def check_tmpfs(self, size, n):
        for np_ in (1, 2):
            with self.subTest(ranks=np_):
                mnt = self.mount(size)
                out = os.path.join(mnt, "t.h5")
                run = run_job(["edm", "--backend", "cpu", "--generate", f"uniform:{n}:3", "--output", out,
                               "--progress", "none"], np_=None if np_ == 1 else np_)
                what = f"{np_} rank(s), n = {n} on a {size} tmpfs"
                self.assert_one_error(run, what)
                self.assert_not_complete(out, what, strict=False)

    def test_metadata_does_not_fit_4k(self):
        self.check_tmpfs("4k", 30)  # 1.7 KB of values

    def test_metadata_does_not_fit_8k(self):
        self.check_tmpfs("8k", 60)  # 7.1 KB of values

    def test_data_does_not_fit_256k(self):
        self.check_tmpfs("256k", 361)  # 259920 bytes of values in 262144


def fill_up(path, piece):
    """Appends `piece` to path, unbuffered, until the file system is full."""
    with open(path, "ab", buffering=0) as f:
        try:
            while True:
                f.write(piece)
        except OSError:
            pass


class FullSideFileTest(FaultTestBase):
    """The files beside the result on a full file system: `--stats` (every
    command), bench's and `fractal --bench`'s `--csv`. The C library writes
    them (the shim cannot reach those writes), so a real full tmpfs."""

    mount = TinyTmpfsTest.mount
    unmount = staticmethod(TinyTmpfsTest.unmount)

    def full_mount(self):
        mnt = self.mount("64k")
        fill_up(os.path.join(mnt, "fill"), b"\0" * 4096)
        self.addCleanup(os.remove, os.path.join(mnt, "fill"))
        return mnt

    def test_stats_on_a_full_disk(self):
        # The result is complete; the stats file is left empty (never half
        # a JSON object), with one warning line that says why.
        mnt = self.full_mount()
        for job in (["edm", "--generate", "uniform:300:3:1"],
                    ["fractal", "--shape", "sierpinski-triangle", "--level", "5", "--steps", "4"]):
            with self.subTest(command=job[0]):
                out, stats = self.path(f"{job[0]}.h5"), os.path.join(mnt, f"{job[0]}.json")
                run = run_job([*job, "--output", out, "--stats", stats, "--progress", "none", "--quiet"])
                self.assertEqual(run.returncode, 0, str(run))
                ours = run.ours()
                self.assertEqual(len(ours), 1, str(run))
                self.assertIn("warning: writing --stats file", ours[0])
                self.assertIn("No space left on device", ours[0])
                self.assertEqual(os.path.getsize(stats), 0, "a stats file cut short")
                self.assertEqual(tdsolve("info", out).returncode, 0, "the result is not complete")
                self.addCleanup(os.remove, stats)

    def test_bench_csv_on_a_full_disk(self):
        # An error (the row is what bench was run for), and the file keeps
        # exactly its earlier rows: no half row for the next append to follow.
        mnt = self.mount("64k")
        csv = os.path.join(mnt, "b.csv")
        jobs = {"bench": ["bench", "--generate", "uniform:300:3:1", "--repeat", "1", "--csv", csv],
                "fractal": ["fractal", "--shape", "sierpinski-triangle", "--level", "5", "--steps", "4", "--bench",
                            "--repeat", "1", "--csv", csv]}
        for name, job in jobs.items():
            with self.subTest(command=name):
                if os.path.exists(csv):
                    os.remove(csv)
                self.assertEqual(run_job(job).returncode, 0)
                with open(csv, "rb") as f:
                    before = f.read()
                self.assertEqual(before.count(b"\n"), 2, before)
                # Fill the file system, then also the rest of the file's page.
                filler = os.path.join(mnt, "fill")
                fill_up(filler, b"\0" * 4096)
                fill_up(csv, b"#")
                with open(csv, "rb") as f:
                    padded = f.read()
                run = run_job(job)
                os.remove(filler)
                self.assert_one_error(run, f"{name} --csv on a full disk", words=("--csv", "No space left"))
                with open(csv, "rb") as f:
                    self.assertEqual(f.read(), padded, "the file changed: a half row stayed")


class CharacterDeviceOutputTest(FaultTestBase):
    """--output /dev/null --overwrite: the file cannot be created as HDF5
    needs. First a private null device in the test's directory, so that a
    binary that deletes its failed output cannot take the real /dev/null."""

    def check_device(self, dev, what):
        for np_ in (1, 2):
            with self.subTest(ranks=np_, output=dev):
                run = run_job(["edm", "--backend", "cpu", "--generate", "uniform:2000:3", "--output", dev,
                               "--overwrite", "--progress", "none"], np_=None if np_ == 1 else np_)
                st = os.stat(dev) if os.path.exists(dev) else None
                intact = st is not None and stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)
                if not intact and dev == "/dev/null":
                    if os.path.lexists(dev):
                        os.remove(dev)
                    os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
                    os.chmod(dev, 0o666)
                self.assertTrue(intact, f"{what}: tdsolve replaced or removed {dev}\n{run}")
                self.assert_one_error(run, f"{what}, {np_} rank(s)")

    def test_dev_null(self):
        private = self.path("null")
        try:
            os.mknod(private, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        except OSError as e:
            private = None
            reason = str(e)
        if private:
            self.check_device(private, "a private null device as output")
        elif os.geteuid() == 0:
            self.skipTest(f"cannot make a private null device to try first ({reason}); not risking /dev/null")
        self.check_device("/dev/null", "--output /dev/null --overwrite")


class BenchValidationTest(FaultTestBase):
    """Absurd bench options: one error line, exit 2 (usage) or 1 (data), within
    10 s, no OOM kill. The address space is capped at 8 GiB so that a missing
    check cannot take the machine down; an allocation failure (bad_alloc) is
    not a validation message and fails the test."""

    def check_bench(self, *args):
        run = run_job(["bench", "--backend", "cpu", *args], timeout=10, address_space=8 << 30)
        what = f"tdsolve bench {' '.join(args)}"
        self.assertNotIn(run.returncode, (-9, 137), f"{what}: killed (out of memory?)\n{run}")
        line = self.assert_one_error(run, what)
        self.assertIn(run.returncode, (1, 2), f"{what}\n{run}")
        for bad in ("bad_alloc", "std::", "Resource temporarily unavailable"):
            self.assertNotIn(bad, line, f"{what}: not a validation message\n{run}")
        self.assertLess(run.seconds, 10, what)

    def test_huge_n(self):
        self.check_bench("--generate", "uniform:10000000000:3")

    def test_huge_block(self):
        self.check_bench("--generate", "uniform:2000:3", "--block", "1000000000")

    def test_negative_threads(self):
        self.check_bench("--generate", "uniform:2000:3", "--threads", "-1")

    def test_absurd_threads(self):
        self.check_bench("--generate", "uniform:2000:3", "--threads", "100000")

    def test_negative_chunk(self):
        self.check_bench("--generate", "uniform:2000:3", "--chunk-mb", "-5")

    def test_absurd_chunk(self):
        self.check_bench("--generate", "uniform:2000:3", "--chunk-mb", "1e9")

    def test_zero_repeat(self):
        self.check_bench("--generate", "uniform:2000:3", "--repeat", "0")


if __name__ == "__main__":
    unittest.main()
