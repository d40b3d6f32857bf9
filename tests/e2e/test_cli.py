"""What a user sees: help that tells the truth, version, info, exit codes."""
import re
import unittest

from common import TempDirTest, tdsolve


class CliTest(TempDirTest):
    def test_top_level_help_and_version(self):
        r = tdsolve("--help")
        self.assertEqual(r.returncode, 0)
        for word in ["edm", "info", "--version", "mpirun"]:
            self.assertIn(word, r.stdout)
        v = tdsolve("--version")
        self.assertEqual(v.returncode, 0)
        self.assertRegex(v.stdout, r"^tdsolve \d+\.\d+\.\d+\n$")
        self.assertEqual(tdsolve().returncode, 2)
        bad = tdsolve("frobnicate")
        self.assertEqual(bad.returncode, 2)
        self.assertIn("unknown command 'frobnicate'", bad.stderr)

    def test_edm_help_lists_every_option_and_the_defaults_are_real(self):
        r = tdsolve("edm", "--help")
        self.assertEqual(r.returncode, 0)
        for opt in ["--input", "--generate", "--output", "--overwrite", "--metric", "--precision", "--backend",
                    "--block", "--chunk-mb", "--config", "--progress", "--threads", "--device", "--map",
                    "--store-points", "--stats", "--quiet"]:
            self.assertIn(opt, r.stdout)
        for metric in ["euclidean", "sqeuclidean", "cityblock", "chebyshev", "cosine"]:
            self.assertIn(metric, r.stdout)
        # The defaults the help shows are what a run records.
        defaults = dict(re.findall(r"--(metric|precision|block) \w+ \(=(\w+)\)", r.stdout))
        out = self.path("d.h5")
        tdsolve("edm", "--generate", "uniform:50:2", "--output", out, "--quiet", check=True)
        info = tdsolve("info", out)
        self.assertEqual(info.returncode, 0)
        for k, v in defaults.items():
            self.assertIn(f"{k}={v}", info.stdout)

    def test_help_under_mpirun_prints_once(self):
        r = tdsolve("edm", "--help", np_=3)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stdout.count("Usage: tdsolve edm"), 1)

    def test_threads_beyond_the_bound_cpus_get_a_note(self):
        # mpirun binds a lone rank to one core by default: 2 threads would share it.
        r = tdsolve("edm", "--generate", "uniform:300:2", "--output", self.path("t.h5"), "--threads", "2",
                    "--backend", "cpu", np_=1, check=True)
        self.assertIn("--map-by slot:PE=2", r.stderr)
        r = tdsolve("edm", "--generate", "uniform:300:2", "--output", self.path("t.h5"), "--overwrite",
                    "--backend", "cpu", np_=1, check=True)
        self.assertNotIn("note:", r.stderr)

    def test_info_on_missing_and_foreign_files(self):
        r = tdsolve("info", self.path("none.h5"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("No such file", r.stderr)
        p = self.path("plain.txt")
        open(p, "w").write("hello\n")
        r = tdsolve("info", p)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not an HDF5 file", r.stderr)
        import h5py
        import numpy as np
        q = self.path("foreign.h5")
        with h5py.File(q, "w") as f:
            f["x"] = np.ones(3)
        r = tdsolve("info", q)
        self.assertEqual(r.returncode, 3)
        self.assertIn("not a tdsolve result", r.stdout)

    def test_run_summary_and_stats(self):
        out, stats = self.path("d.h5"), self.path("s.json")
        r = tdsolve("edm", "--generate", "uniform:3000:3", "--output", out, "--stats", stats, "--progress", "log",
                    np_=2, check=True)
        self.assertIn("2 ranks", r.stdout)
        self.assertIn("wrote", r.stdout)
        self.assertIn("progress 100.0%", r.stderr)
        import json
        s = json.load(open(stats))
        self.assertEqual(s["pairs"], 3000 * 2999 // 2)
        self.assertEqual(s["ranks"], 2)
        for k in ["total_s", "compute_s", "write_s"]:
            self.assertGreater(s[k], 0)
        q = tdsolve("edm", "--generate", "uniform:30:3", "--output", self.path("q.h5"), "--quiet")
        self.assertEqual((q.returncode, q.stdout, q.stderr), (0, "", ""))


if __name__ == "__main__":
    unittest.main()
