"""--config job.ini: every long option can live there; the command line wins."""
import unittest

import h5py

from common import TempDirTest, tdsolve


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


if __name__ == "__main__":
    unittest.main()
