"""--config job.ini: every long option can live there; the command line wins
(also over the file's input: --input or --generate there replaces both of the
file's); relative paths in the file are relative to its folder; [edm],
[hist], [cross], [bench] sections hold one command's options; the result
file's `options` attribute is the effective options, itself a config."""
import os
import unittest

import h5py
import numpy as np
from scipy.spatial.distance import cdist, pdist

from common import TempDirTest, tdsolve


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


class ConfigTest(TempDirTest):
    def test_options_from_ini_and_command_line_wins(self):
        ini = self.path("job.ini")
        out = self.path("d.h5")
        with open(ini, "w") as f:
            f.write("# a job\ngenerate = uniform:300:4:9\n"
                    f"output = {out}\noverwrite = true\nmetric = cityblock\nprecision = float64\n"
                    "block = 32\nchunk-mb = 2\nprogress = none\nquiet = true\nstore-points = true\n")
        tdsolve("edm", "--config", ini, check=True)
        with h5py.File(out, "r") as f:
            a = f["distances"].attrs
            self.assertEqual((a["metric"], a["precision"], a["block"], a["features"]),
                             ("cityblock", "float64", 32, 4))
            self.assertIn("points", f)
        tdsolve("edm", "--config", ini, "--metric", "chebyshev", check=True)
        with h5py.File(out, "r") as f:
            self.assertEqual(f["distances"].attrs["metric"], "chebyshev")

    def test_bad_config(self):
        r = tdsolve("edm", "--config", self.path("missing.ini"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("missing.ini", r.stderr)
        ini = self.path("bad.ini")
        with open(ini, "w") as f:
            f.write("generate = uniform:30:2\nmetrik = cosine\n")
        r = tdsolve("edm", "--config", ini, "--output", self.path("x.h5"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("metrik", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1)

    def write(self, name, body):
        p = self.path(name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(body)
        return p

    def test_command_line_input_replaces_the_configs(self):
        x = np.random.default_rng(3).random((37, 2))
        pts = self.save_npy("pts.npy", x)
        out = self.path("d.h5")
        common = f"output = {out}\noverwrite = true\nprogress = none\nprecision = float64\n"
        gen = self.write("gen.ini", "generate = uniform:300:4:9\n" + common)
        tdsolve("edm", "--config", gen, "--input", pts, check=True)
        with h5py.File(out, "r") as f:
            np.testing.assert_allclose(f["distances"][:], pdist(x), rtol=1e-12)
        inp = self.write("inp.ini", f"input = {pts}\n" + common)
        tdsolve("edm", "--config", inp, "--generate", "uniform:30:4:9", check=True)
        with h5py.File(out, "r") as f:
            self.assertEqual((f["distances"].attrs["n"], f["distances"].attrs["features"]), (30, 4))
        # The file's [edm] input replaces its common one the same way.
        self.write("sec.ini", "generate = uniform:300:4:9\n" + common + f"[edm]\ninput = {pts}\n")
        tdsolve("edm", "--config", self.path("sec.ini"), check=True)
        with h5py.File(out, "r") as f:
            self.assertEqual(f["distances"].attrs["n"], 37)
        # Two inputs in one place are still an error.
        r = tdsolve("edm", "--config", gen, "--input", pts, "--generate", "uniform:30:2")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("exactly one of --input", r.stderr)

    def test_command_line_with_replaces_the_configs(self):
        b = np.random.default_rng(4).random((6, 3))
        bp = self.save_npy("b.npy", b)
        out = self.path("c.h5")
        ini = self.write("c.ini", f"generate = uniform:20:3:1\nwith-generate = uniform:9:3:2\n"
                         f"output = {out}\noverwrite = true\nprogress = none\n")
        tdsolve("cross", "--config", ini, "--with", bp, check=True)
        with h5py.File(out, "r") as f:
            self.assertEqual(f["distances"].shape, (20, 6))
            self.assertIn("b.npy", text(f.attrs["with"]))
        ini2 = self.write("c2.ini", f"generate = uniform:20:3:1\nwith = {bp}\n"
                          f"output = {out}\noverwrite = true\nprogress = none\n")
        tdsolve("cross", "--config", ini2, "--with-generate", "uniform:11:3:2", check=True)
        with h5py.File(out, "r") as f:
            self.assertEqual(f["distances"].shape, (20, 11))
        # --input alone leaves the file's second set in place.
        tdsolve("cross", "--config", ini2, "--generate", "uniform:5:3:1", check=True)
        with h5py.File(out, "r") as f:
            self.assertEqual(f["distances"].shape, (5, 6))

    def test_relative_paths_are_relative_to_the_config(self):
        rng = np.random.default_rng(5)
        a, b = rng.random((25, 3)), rng.random((8, 3))
        jobs = self.path("jobs")
        os.makedirs(os.path.join(jobs, "data"))
        np.save(os.path.join(jobs, "data", "a.npy"), a)
        with h5py.File(os.path.join(jobs, "data", "b.h5"), "w") as f:
            f["set/b"] = b
        np.savetxt(os.path.join(jobs, "data", "b.csv"), b, delimiter=",")
        run = self.path("elsewhere")
        os.makedirs(run)
        self.write("jobs/edm.ini", "input = data/a.npy\noutput = out/d.h5\nstats = out/d.json\n"
                   "progress = none\nprecision = float64\n")
        os.makedirs(os.path.join(jobs, "out"))
        tdsolve("edm", "--config", "../jobs/edm.ini", check=True, cwd=run)
        with h5py.File(os.path.join(jobs, "out", "d.h5"), "r") as f:
            np.testing.assert_allclose(f["distances"][:], pdist(a), rtol=1e-12)
        self.assertTrue(os.path.exists(os.path.join(jobs, "out", "d.json")))
        # Paths on the command line stay relative to the working directory.
        tdsolve("edm", "--config", "../jobs/edm.ini", "--output", "here.h5", "--stats", "here.json",
                check=True, cwd=run)
        self.assertTrue(os.path.exists(os.path.join(run, "here.h5")))
        self.assertTrue(os.path.exists(os.path.join(run, "here.json")))
        for w in ["data/b.h5:/set/b", "data/b.csv"]:
            self.write("jobs/cross.ini", f"input = data/a.npy\nwith = {w}\noutput = out/c.h5\noverwrite = true\n"
                       "progress = none\nprecision = float64\n")
            tdsolve("cross", "--config", os.path.join("..", "jobs", "cross.ini"), check=True, cwd=run)
            with h5py.File(os.path.join(jobs, "out", "c.h5"), "r") as f:
                np.testing.assert_allclose(f["distances"][:], cdist(a, b), rtol=1e-12)
        self.write("jobs/bench.ini", "generate = uniform:200:3:1\nrepeat = 1\ncsv = out/bench.csv\n")
        tdsolve("bench", "--config", "../jobs/bench.ini", "--backend", "cpu", check=True, cwd=run)
        self.assertTrue(os.path.exists(os.path.join(jobs, "out", "bench.csv")))
        # Absolute paths stay as they are.
        absolute = self.path("abs.h5")
        tdsolve("edm", "--config", "../jobs/edm.ini", "--output", absolute, check=True, cwd=run)
        self.write("jobs/abs.ini", f"generate = uniform:20:2\noutput = {self.path('abs2.h5')}\nprogress = none\n")
        tdsolve("edm", "--config", "../jobs/abs.ini", check=True, cwd=run)
        self.assertTrue(os.path.exists(self.path("abs2.h5")))

    def test_sections_name_the_command(self):
        out, hout = self.path("d.h5"), self.path("h.h5")
        ini = self.write("job.ini", "# common to all\ngenerate = uniform:200:3:4\nprogress = none\n"
                         "overwrite = true\nmetric = cityblock\n"
                         f"[edm]\noutput = {out}\nmetric = chebyshev\nstore-points = true\n"
                         f"[hist]\noutput = {hout}\nbins = 7\nrange = 0:3\n"
                         "[cross]\nwith-generate = uniform:5:3\n"
                         "[bench]\nrepeat = 1\n")
        tdsolve("edm", "--config", ini, check=True)
        with h5py.File(out, "r") as f:
            self.assertEqual(f["distances"].attrs["metric"], "chebyshev")  # [edm] over the common part
            self.assertIn("points", f)
        tdsolve("hist", "--config", ini, check=True)
        with h5py.File(hout, "r") as f:
            self.assertEqual((f["counts"].shape, f["counts"].attrs["metric"]), ((7,), "cityblock"))
        tdsolve("edm", "--config", ini, "--metric", "sqeuclidean", check=True)  # the command line wins
        with h5py.File(out, "r") as f:
            self.assertEqual(f["distances"].attrs["metric"], "sqeuclidean")
        # An option of another command in the common part is still unknown.
        bad = self.write("bad.ini", f"generate = uniform:20:2\noutput = {out}\nbins = 3\n")
        r = tdsolve("edm", "--config", bad)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("bins", r.stderr)
        for section in ["edn", "info", ""]:
            bad = self.write("bad.ini", f"generate = uniform:20:2\noutput = {out}\n[{section}]\nmetric = cosine\n")
            r = tdsolve("edm", "--config", bad)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn(f"[{section}]", r.stderr)
            self.assertIn("bad.ini", r.stderr)
            # The sections a file may hold are the registry's commands that take options.
            self.assertIn("(sections name a command: edm, hist, cross, knn, collide, triplet, adf, fractal or bench)",
                          r.stderr)

    def test_options_attribute_is_the_effective_config(self):
        x = np.random.default_rng(6).random((40, 3))
        pts = self.save_npy("pts.npy", x)
        run = self.path("run")
        os.makedirs(run)
        ini = self.write("job.ini", "input = pts.npy\noverwrite = true\nprogress = none\n"
                         "[hist]\nbins = 9\nrange = 0.25:1.5\nmetric = cityblock\n")
        tdsolve("hist", "--config", "../job.ini", "--output", "h.h5", "--precision", "float64", "--block", "16",
                check=True, cwd=run)
        with h5py.File(os.path.join(run, "h.h5"), "r") as f:
            options = text(f.attrs["options"])
            counts = f["counts"][:]
        lines = options.splitlines()
        names = [l.split(" = ", 1)[0] for l in lines]
        self.assertTrue(all(" = " in l for l in lines), options)
        self.assertEqual(len(names), len(set(names)), options)
        self.assertNotIn("config", names)
        self.assertNotIn("help", names)
        got = dict(l.split(" = ", 1) for l in lines)
        self.assertEqual(got["input"], os.path.realpath(pts))
        self.assertEqual(got["output"], os.path.join(os.path.realpath(run), "h.h5"))
        for k, v in [("bins", "9"), ("range", "0.25:1.5"), ("metric", "cityblock"), ("precision", "float64"),
                     ("block", "16"), ("backend", "auto"), ("overwrite", "true"), ("quiet", "false")]:
            self.assertEqual(got.get(k), v, options)
        # Fed back as a config, from anywhere, it gives the same result.
        again = self.write("again/options.ini", options)
        tdsolve("hist", "--config", again, "--output", self.path("h2.h5"), check=True, cwd=self.dir)
        with h5py.File(self.path("h2.h5"), "r") as f:
            np.testing.assert_array_equal(f["counts"][:], counts)
            self.assertEqual(text(f.attrs["options"]),
                             options.replace(got["output"], self.path("h2.h5")))
        r = tdsolve("info", self.path("h2.h5"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("  bins = 9\n", r.stdout)
        self.assertIn("  range = 0.25:1.5\n", r.stdout)


if __name__ == "__main__":
    unittest.main()
