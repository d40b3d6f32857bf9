"""What a user sees: help that tells the truth, version, info, exit codes."""
import os
import re
import shutil
import subprocess
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

    def test_every_command_is_listed_and_has_help(self):
        # One registry drives the unknown-command message, the top help and the dispatch.
        bad = tdsolve("frobnicate")
        names = re.search(r"\(commands: ([a-z, ]+); see tdsolve --help\)", bad.stderr).group(1).split(", ")
        self.assertEqual(names, ["edm", "hist", "cross", "knn", "collide", "triplet", "adf", "fractal", "info", "bench"])
        commands = tdsolve("--help").stdout.split("Commands:\n")[1].split("\n\n")[0]
        self.assertEqual(re.findall(r"^  ([a-z]+) +\S", commands, re.M), names)
        for name in names:
            r = tdsolve(name, "--help")
            self.assertEqual(r.returncode, 0, name)
            self.assertTrue(r.stdout.startswith(f"Usage: tdsolve {name} "), r.stdout)
            # A user has no "seed 003": the project's own numbers for its papers stay in its docs.
            self.assertIsNone(re.search(r"seeds? \d{3}", r.stdout, re.I), f"{name} --help")
        self.assertIsNone(re.search(r"seeds? \d{3}", tdsolve("--help").stdout, re.I))

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

    def test_info_on_triplet_files(self):
        """Complete (0), stopped (3, with the resume hint) and damaged (3, one
        INCONSISTENT line, no crash) triplet files."""
        import h5py
        import numpy as np
        out = self.path("t.h5")
        tdsolve("triplet", "--generate", "uniform:40:3:5", "--output", out, "--store-triplets", "--cutoff", "0.9",
                "--quiet", check=True)
        r = tdsolve("info", out)
        self.assertEqual((r.returncode, r.stderr), (0, ""), r.stdout)
        with h5py.File(out, "r") as f:  # the sums keep a window of their limbs (output.md)
            limbs, first = f["progress/sums"].shape[1], int(f["progress/sums"].attrs["first_limb"])
        self.assertTrue(0 < limbs < 69)
        for line in ["triplets:  40 points in 3-D, 9880 triplets",
                     "potential: atm (nu 1, cutoff 0.9, cutoff_triple none), precision float32",
                     "/energy_per_point float64[40], /forces float64[40 x 3], "
                     f"/progress/sums int64[161 x {limbs}] (limbs {first}..{first + limbs - 1} of 69)",
                     "stored:    /triplet_energy float32[9880]", "progress:  complete ("]:
            self.assertIn(line, r.stdout)
        with h5py.File(out, "r") as f:
            energy = f["energy"][()]
        shown = re.search(r"^energy: +(\S+) \(the total", r.stdout, re.M)
        self.assertIsNotNone(shown, r.stdout)
        self.assertEqual(float(shown.group(1)), energy)
        sums = self.path("s.h5")
        tdsolve("triplet", "--generate", "uniform:40:3:5", "--output", sums, "--quiet", check=True)
        r = tdsolve("info", sums)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("stored:    no triplet energies", r.stdout)

        # A clean stop after the first chunk: FILE.h5.partial, 3, and how to resume.
        stopped = self.path("p.h5")
        r = tdsolve("triplet", "--generate", "uniform:100:3:1", "--output", stopped, "--max-hours", "0.0000001",
                    "--progress", "none", env={"TDSOLVE_TEST_SLOW_MS": "200"})
        self.assertNotEqual(r.returncode, 0)
        r = tdsolve("info", stopped)
        self.assertEqual((r.returncode, r.stderr), (3, ""), r.stdout)
        self.assertRegex(r.stdout, r"progress:  INCOMPLETE: [1-9]\d* of \d+ chunks written \(\d+\.\d% of triplets\)")
        self.assertIn("energy:    not yet", r.stdout)
        self.assertIn("writer:    none", r.stdout)
        self.assertIn("--resume", r.stdout)
        self.assertIn(stopped + ".partial", r.stdout)

        # Damaged copies of the complete file: INCONSISTENT, exit 3, one line saying what.
        def damaged(name, fn):
            p = self.path(name + ".h5")
            shutil.copy(out, p)
            with h5py.File(p, "a") as f:
                fn(f)
            return p

        def replace(f, name, data):
            attrs = dict(f[name].attrs)
            del f[name]
            f[name] = data
            for k, v in attrs.items():
                f[name].attrs[k] = v

        cases = [
            ("forces", lambda f: replace(f, "forces", f["forces"][:, :2]), "/forces is not n x 3"),
            ("sums", lambda f: replace(f, "progress/sums", f["progress/sums"][:-1]), "/progress/sums does not have 4n+1 rows"),
            ("stored", lambda f: replace(f, "triplet_energy", f["triplet_energy"][:-1]),
             "/triplet_energy length is not C(n,3)"),
            ("offsets", lambda f: f["progress/offsets"].__setitem__(-1, 9879),
             "/progress/offsets does not cover the C(n,3) triplets"),
            ("n", lambda f: f["energy"].attrs.__setitem__("n", np.full(64, 40, np.uint64)), "attribute 'n'"),
            ("nu", lambda f: f["energy"].attrs.__setitem__("nu", np.ones(64)), "attribute 'nu'"),
            ("potential", lambda f: f["energy"].attrs.__setitem__("potential", ["atm"] * 64), "attribute 'potential'"),
        ]
        for name, fn, why in cases:
            with self.subTest(damage=name):
                r = tdsolve("info", damaged(name, fn))
                self.assertEqual((r.returncode, r.stderr), (3, ""), r.stdout)
                lines = [l for l in r.stdout.splitlines() if l.startswith("progress:")]
                self.assertEqual(len(lines), 1, r.stdout)
                self.assertTrue(lines[0].startswith("progress:  INCONSISTENT: "), lines[0])
                self.assertIn(why, lines[0])

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
        # The set-up's phases, in order, within the run's total.
        phases = s["setup_s"]
        self.assertEqual(list(phases)[:3], ["input", "hash", "convert"])
        self.assertIn("file", phases)
        self.assertTrue(all(v >= 0 for v in phases.values()), phases)
        self.assertLessEqual(sum(phases.values()), s["total_s"])
        # A culled run names the culled domain's phases too.
        c = tdsolve("hist", "--generate", "uniform:20000:3", "--bins", "4", "--range", "0:0.05", "--cull", "on",
                    "--output", self.path("h.h5"), "--stats", stats, "--quiet", check=True)
        self.assertEqual(c.returncode, 0)
        culled = json.load(open(stats))
        phases = culled["setup_s"]
        for k in ["cull_order", "cull_boxes", "cull_tiles", "cull_list", "cull_reorder"]:
            self.assertIn(k, phases)
        # ... and its list: tiles, pairs tested, where built, its FNV-1a.
        self.assertNotIn("cull", s)
        cull = culled["cull"]
        self.assertEqual(cull["tested"], culled["pairs"])
        self.assertGreater(cull["tiles"], 0)
        self.assertIn(cull["built_on"], ("host", "gpu"))
        self.assertRegex(cull["list_fnv"], "^[0-9a-f]{16}$")
        q = tdsolve("edm", "--generate", "uniform:30:3", "--output", self.path("q.h5"), "--quiet")
        self.assertEqual((q.returncode, q.stdout, q.stderr), (0, "", ""))

    def test_stats_bytes_are_the_results_the_file_holds(self):
        # "bytes": packed values (edm), pairs and distances (collide,
        # knn --radius), neighbours' distances and indices (knn --k), 0 for
        # hist; each checked against the datasets in the file.
        import json
        import h5py

        def run(command, *args):
            out, stats = self.path(f"{command}.h5"), self.path(f"{command}.json")
            tdsolve(command, *args, "--output", out, "--stats", stats, "--overwrite", "--quiet", check=True)
            with h5py.File(out, "r") as f:
                held = sum(f[k].size * f[k].dtype.itemsize for k in ("distances", "pairs", "indices") if k in f)
            with open(stats) as f:
                return json.load(f)["bytes"], held

        for command, args in [("edm", ["--generate", "uniform:500:3"]),
                              ("edm", ["--generate", "uniform:500:3", "--precision", "float64"]),
                              ("collide", ["--generate", "spheres:3000:3:1"]),
                              ("knn", ["--generate", "uniform:2000:3", "--radius", "0.05"]),
                              ("knn", ["--generate", "uniform:2000:3", "--radius", "0.05", "--precision", "float64"]),
                              ("knn", ["--generate", "uniform:700:3", "--k", "5"])]:
            got, held = run(command, *args)
            self.assertGreater(held, 0, (command, args))
            self.assertEqual(got, held, (command, args))
        got, _ = run("hist", "--generate", "uniform:500:3", "--bins", "10", "--range", "0:2")
        self.assertEqual(got, 0)



class SetupScriptTest(TempDirTest):
    """jobs/lib/common.sh's build_tdsolve, as the README's two commands run
    it: the CUDA backend only where nvcc and a GPU are both there, unless
    TDSOLVE_CUDA says ON or OFF (cmake and the tools stubbed: nothing is
    built)."""

    REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

    def decide(self, cuda_env, nvcc, gpu):
        bin_ = self.path("bin")
        shutil.rmtree(bin_, ignore_errors=True)
        os.makedirs(bin_)
        tools = {"nvidia-smi": 'echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)"' if gpu else "exit 9"}
        if nvcc:
            tools["nvcc"] = "exit 0"
        for name, body in tools.items():
            with open(os.path.join(bin_, name), "w") as f:
                f.write(f"#!/bin/sh\n{body}\n")
            os.chmod(os.path.join(bin_, name), 0o755)
        script = ('source jobs/lib/common.sh; cmake() { [ "$1" = --build ] || echo "cmake $*"; }; '
                  'nproc() { echo 2; }; build_tdsolve -DX=1')
        env = {k: v for k, v in os.environ.items() if k != "TDSOLVE_CUDA"}
        env["PATH"] = bin_ + ":/usr/bin:/bin"  # no /usr/local/cuda: only the stubs' nvcc
        if cuda_env is not None:
            env["TDSOLVE_CUDA"] = cuda_env
        r = subprocess.run(["bash", "-c", script], cwd=self.REPO, env=env, capture_output=True, text=True,
                           timeout=60)
        flag = re.findall(r"-DTDSOLVE_CUDA=(ON|OFF)", r.stdout)
        return r.returncode, flag, r.stdout + r.stderr

    def test_cuda_only_where_it_can_run(self):
        # Where /usr/local/cuda/bin/nvcc exists build_tdsolve finds it itself:
        # the cases without nvcc cannot be staged there (they are skipped).
        real_nvcc = os.path.exists("/usr/local/cuda/bin/nvcc")
        for cuda_env, nvcc, gpu, want in ((None, True, True, ["ON"]), (None, True, False, ["OFF"]),
                                          (None, False, True, ["OFF"]), ("auto", True, False, ["OFF"]),
                                          ("ON", True, False, ["ON"]), ("OFF", True, True, ["OFF"])):
            with self.subTest(TDSOLVE_CUDA=cuda_env, nvcc=nvcc, gpu=gpu):
                if real_nvcc and not nvcc:
                    self.skipTest("/usr/local/cuda/bin/nvcc is installed here")
                rc, flag, out = self.decide(cuda_env, nvcc, gpu)
                self.assertEqual((rc, flag), (0, want), out)
                self.assertIn("-DX=1", out)  # the caller's arguments pass through
                if nvcc and not gpu and cuda_env in (None, "auto"):
                    self.assertIn("nvcc found but no GPU", out)
        for cuda_env, nvcc, words in (("ON", False, "TDSOLVE_CUDA=ON but no nvcc"),
                                      ("maybe", True, "TDSOLVE_CUDA must be ON, OFF or auto")):
            with self.subTest(TDSOLVE_CUDA=cuda_env, nvcc=nvcc):
                if real_nvcc and not nvcc:
                    self.skipTest("/usr/local/cuda/bin/nvcc is installed here")
                rc, flag, out = self.decide(cuda_env, nvcc, True)
                self.assertNotEqual(rc, 0, out)
                self.assertEqual(flag, [], out)
                self.assertIn(words, out)


if __name__ == "__main__":
    unittest.main()
