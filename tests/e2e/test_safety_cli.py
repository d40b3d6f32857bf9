"""Findings of the second hostile review (issue 32) about what a run reads
and how it is asked for: each was accepted quietly (a wrong answer that looked
right, or an option that did nothing) and is now either right or refused
with one line. Each test failed on 68463c1.

- a CSV whose first line starts with a UTF-8 byte-order mark lost its first
  point (the mark made the line a "header");
- `--config DIR` read as an empty file; `config =` and `help =` lines in a
  config file were taken and did nothing;
- `--device N` with `--backend cpu` was ignored (edm and fractal);
- `uniform:5:3:` (an empty SEED) ran as seed 0;
- `fractal --threads 100000` crashed and left its lock (every other command
  capped --threads at 4096);
- `fractal --bench` ignored the first SIGTERM;
- `fractal --resume` compared the --input path, not the state in it: after
  the file was replaced, it continued the old run;
- docs/usage.md said a contiguous HDF5 input written in part is refused
  (it cannot be: it now says what is and is not detected);
- CPU `bench` with the default --chunk-mb 0 took half of the node's memory;
- `knn --k` with a metric that gives nan for some pairs ended those rows with
  index n (out of range) and distance inf.
"""
import os
import resource
import signal
import subprocess
import time
import unittest

import h5py
import numpy as np

from common import BIN, TempDirTest, tdsolve


class SafetyCliTest(TempDirTest):
    def refused(self, args, expect, code=2, np_=None):
        r = tdsolve(*args, np_=np_)
        ours = [line for line in r.stderr.splitlines() if line.startswith("tdsolve:")]
        self.assertEqual(len(ours), 1, f"{args}: want one error line, got ({r.returncode}):\n{r.stdout}{r.stderr}")
        self.assertIn(expect, ours[0], f"{args}: the message does not name the problem")
        self.assertEqual(r.returncode, code, f"{args}: {ours[0]}")
        return ours[0]

    def edm(self, *args, out="out.h5"):
        path = self.path(out)
        tdsolve("edm", *args, "--output", path, "--overwrite", "--quiet", "--backend", "cpu", check=True)
        with h5py.File(path, "r") as f:
            return f["distances"][()]

    # ---- inputs ------------------------------------------------------------
    def test_csv_with_a_byte_order_mark_keeps_its_first_point(self):
        values = [0.5, 1.5, 4.0, 7.25, 9.0]
        with open(self.path("bom.csv"), "w", encoding="utf-8-sig") as f:  # writes EF BB BF first
            f.write("\n".join(str(v) for v in values) + "\n")
        with open(self.path("bom.csv"), "rb") as f:
            self.assertEqual(f.read(3), b"\xef\xbb\xbf")
        d = self.edm("--input", self.path("bom.csv"))
        self.assertEqual(len(d), 10, "5 points make 10 pairs: the first point was lost")
        x = np.array(values)
        want = np.array([abs(x[i] - x[j]) for i in range(5) for j in range(i + 1, 5)])
        np.testing.assert_array_equal(d.astype(np.float64), want.astype(np.float32).astype(np.float64))
        # A mark before a header line: the header is still skipped, every row kept.
        with open(self.path("bomh.csv"), "w", encoding="utf-8-sig") as f:
            f.write("x,y\n" + "\n".join(f"{v},{2 * v}" for v in values) + "\n")
        self.assertEqual(len(self.edm("--input", self.path("bomh.csv"), out="h.h5")), 10)

    def test_unwritten_hdf5_inputs_as_usage_md_says(self):
        # docs/usage.md, "Inputs": never written (contiguous or chunked) and
        # chunked with chunks never written are refused; a contiguous one
        # written in part reads its fill value, so a NaN fill is refused as
        # non-finite and the default fill (0) cannot be told from data.
        src = self.path("in.h5")
        with h5py.File(src, "w") as f:
            f.create_dataset("never", (100, 3), dtype="f8")
            f.create_dataset("chunks", (100, 3), dtype="f8", chunks=(10, 3))[:10] = 1.0
            f.create_dataset("nanfill", (100, 3), dtype="f8", fillvalue=np.nan)[:10] = 1.0
            f.create_dataset("zerofill", (100, 3), dtype="f8")[:10] = 1.0
        for dset, expect in (("never", "none of them was ever written"),
                             ("chunks", "only part of them was ever written"),
                             ("nanfill", "non-finite")):
            self.refused(["edm", "--input", f"{src}:/{dset}", "--output", self.path("u.h5"), "--backend", "cpu"],
                         expect, code=1)
        self.assertEqual(len(self.edm("--input", f"{src}:/zerofill")), 100 * 99 // 2)

    def test_generate_with_an_empty_field_is_refused(self):
        for spec in ("uniform:5:3:", "spheres:10:3:1:"):
            cmd = "collide" if spec.startswith("spheres") else "edm"
            self.refused([cmd, "--generate", spec, "--output", self.path("g.h5")], "--generate expects")
        self.assertFalse(os.path.exists(self.path("g.h5")))

    def test_cpu_bench_buffers_are_bounded(self):
        # bench's --chunk-mb 0 ("as large as memory allows") made the CPU
        # backend's two buffers half of the node's memory (OOM-killed at
        # n = 200000 under a job's limit). Now each is at most 1 GiB: 40000
        # points (3.2 GB of float32 distances) stay near 2 GiB.
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        r = tdsolve("bench", "--backend", "cpu", "--generate", "uniform:40000:3", "--repeat", 1, "--threads", 2)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        self.assertGreaterEqual(peak_kib, before)
        self.assertLess(peak_kib * 1024, 2.5 * 2 ** 30, f"bench peaked at {peak_kib / 2 ** 20:.2f} GiB")

    # ---- the config file -------------------------------------------------------
    def test_config_that_is_a_folder_is_refused(self):
        os.mkdir(self.path("conf.d"))
        self.refused(["edm", "--config", self.path("conf.d"), "--generate", "uniform:10:2", "--output",
                      self.path("c.h5")], "is a folder")

    def test_config_cannot_set_config_or_help(self):
        for line in ("config = other.ini", "help = true"):
            with open(self.path("c.ini"), "w") as f:
                f.write(f"generate = uniform:10:2\n{line}\n")
            key = line.split()[0]
            msg = self.refused(["edm", "--config", self.path("c.ini"), "--output", self.path("c.h5")],
                               f"'{key}' cannot be set in a config file")
            self.assertIn("c.ini", msg)
            with open(self.path("c.ini"), "w") as f:  # also inside the command's section
                f.write(f"generate = uniform:10:2\n[edm]\n{line}\n")
            self.refused(["edm", "--config", self.path("c.ini"), "--output", self.path("c.h5")],
                         f"'{key}' cannot be set in a config file")

    # ---- threads and devices ----------------------------------------------------
    def test_device_with_the_cpu_backend_is_refused(self):
        self.refused(["edm", "--generate", "uniform:10:2", "--backend", "cpu", "--device", "0", "--output",
                      self.path("d.h5")], "--backend cpu uses none")
        self.refused(["fractal", "--shape", "sierpinski-triangle", "--level", 3, "--steps", 2, "--backend", "cpu",
                      "--device", "1", "--output", self.path("f.h5")], "--backend cpu uses none")
        # -1 (automatic) is the default and stays accepted.
        tdsolve("edm", "--generate", "uniform:10:2", "--backend", "cpu", "--device", "-1", "--output",
                self.path("ok.h5"), "--quiet", check=True)

    def test_fractal_threads_have_the_bound_of_every_command(self):
        out = self.path("t.h5")
        for cmd in (["fractal", "--shape", "sierpinski-triangle", "--level", 3, "--steps", 2],
                    ["edm", "--generate", "uniform:10:2"]):
            self.refused([*cmd, "--threads", 100000, "--output", out], "--threads must be between 0")
        self.assertEqual([p for p in os.listdir(self.dir) if p.startswith("t.h5")], [], "a lock or file was left")

    def test_fractal_bench_ends_on_the_first_sigterm(self):
        args = ["fractal", "--bench", "--shape", "sierpinski-carpet", "--level", 7, "--steps", 1000, "--repeat",
                1000, "--backend", "cpu", "--threads", 1]
        p = subprocess.Popen([BIN, *map(str, args)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(1.0)
            self.assertIsNone(p.poll(), "the bench ended before the signal: make it longer")
            p.send_signal(signal.SIGTERM)
            rc = p.wait(timeout=20)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(rc, -signal.SIGTERM, "the first SIGTERM must end a bench (it writes nothing)")

    # ---- fractal --resume compares the state, not its path -------------------------------
    def test_fractal_resume_refuses_a_replaced_input(self):
        def save(path, seed):
            with h5py.File(path, "w") as f:  # the level-7 triangle has 3^7 = 2187 cells
                f["s"] = (np.random.default_rng(seed).random(3 ** 7) < 0.4).astype(np.uint8)

        start, out = self.path("start.h5"), self.path("r.h5")
        save(start, 1)
        args = ["fractal", "--shape", "sierpinski-triangle", "--level", 7, "--steps", 100, "--snapshot-every", 20,
                "--threads", 1, "--input", f"{start}:/s", "--output", out, "--quiet"]
        r = tdsolve(*args, "--max-hours", "0.0000001")
        self.assertEqual(r.returncode, 75, r.stdout + r.stderr)
        self.assertTrue(os.path.exists(out + ".partial"))
        save(start, 2)  # the same path, another state
        msg = self.refused([*args, "--resume"], "written by another job", code=1)
        self.assertIn("--input", msg)
        save(start, 1)  # the state it started from: it continues
        tdsolve(*args, "--resume", check=True)
        self.assertTrue(os.path.exists(out))

    # ---- knn with nan distances ---------------------------------------------------------
    def test_knn_rows_with_nan_distances_list_real_points(self):
        # dice of two all-false points is 0/0: nan. Rows 0..35 are all false,
        # so each has 3 numbers (1.0, to the last four points) and 35 nan
        # among its candidates: its list of 8 ends with 5 nan.
        rng = np.random.default_rng(7)
        x = (rng.random((40, 6)) < 0.5).astype(np.float64)
        x[:36] = 0
        x[36:, 0] = 1  # none of the last four is all false
        np.save(self.path("b.npy"), x)
        n, k = len(x), 8
        for precision in ("float32", "float64"):
            full = self.path(f"full-{precision}.h5")
            tdsolve("cross", "--input", self.path("b.npy"), "--with", self.path("b.npy"), "--metric", "dice",
                    "--precision", precision, "--output", full, "--quiet", "--backend", "cpu", check=True)
            with h5py.File(full, "r") as f:
                dist = f["distances"][()].reshape(n, n)
            self.assertTrue(np.isnan(dist[0, 1]), "dice of two all-false points should be nan here")
            out = self.path(f"knn-{precision}.h5")
            tdsolve("knn", "--input", self.path("b.npy"), "--k", k, "--metric", "dice", "--precision", precision,
                    "--output", out, "--quiet", "--backend", "cpu", check=True)
            with h5py.File(out, "r") as f:
                got_d, got_i = f["distances"][()].reshape(n, k), f["indices"][()].reshape(n, k)
            self.assertTrue((got_i >= 0).all() and (got_i < n).all(), f"{precision}: an index out of range")
            for i in range(n):
                row = dist[i].astype(np.float64)
                order = [j for j in np.argsort(row, kind="stable") if j != i][:k]  # nan last, ties by index
                self.assertEqual(list(got_i[i]), order, f"{precision} row {i}")
                np.testing.assert_array_equal(got_d[i], dist[i][order], f"{precision} row {i}")


if __name__ == "__main__":
    unittest.main()
