"""SciPy's own tests of pdist and cdist, run through tdsolve (issue 31): the
installed SciPy's scipy/spatial/tests/test_distance.py, TestPdist and
TestCdist (every metric, its MATLAB fixtures, calling conventions, `out`,
dtypes), with pdist and cdist swapped for tdsolve's in-process calls by the
pytest plugin tests/e2e/scipy_shim.py (a metric tdsolve has goes to tdsolve;
a callable or a metric it does not have to SciPy). Every test must pass and
at least 800 calls must have gone to tdsolve.

The plugin sends three documented departures to SciPy (docs/usage.md,
"Metric parameters"); test_departures_are_as_documented checks that each
still departs as documented, so that the day one is closed the plugin's
rule for it fails here and is removed. Needs the extension (pybind11-dev)
and pytest (python3-pytest): skipped without them, saying which.
"""
import importlib.util
import json
import os
import subprocess
import sys
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("TDSOLVE_PYTHON_BUILD", "")


def suite_file():
    import scipy.spatial.tests
    return os.path.join(os.path.dirname(scipy.spatial.tests.__file__), "test_distance.py")


@unittest.skipUnless(BUILD, "the extension tdsolve._core is not in this build (pybind11-dev python3-dev)")
class ScipySuiteTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if importlib.util.find_spec("pytest") is None:
            raise unittest.SkipTest("pytest is not installed (python3-pytest): SciPy's suite runs under it")
        sys.path.insert(0, BUILD)

    def test_pdist_and_cdist_suites_pass_through_tdsolve(self):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([BUILD, HERE]))
        r = subprocess.run([sys.executable, "-m", "pytest", "-p", "scipy_shim", "-q", "--no-header", "-p",
                            "no:cacheprovider", suite_file(), "-k", "TestPdist or TestCdist"],
                           capture_output=True, text=True, env=env, timeout=850, cwd=HERE)
        tail = r.stdout[-6000:] + r.stderr[-2000:]
        self.assertEqual(r.returncode, 0, tail)
        line = next((l for l in r.stdout.splitlines() if l.startswith("tdsolve-shim ")), None)
        self.assertIsNotNone(line, tail)
        calls = json.loads(line.split(" ", 1)[1])
        print(f"\n{r.stdout.strip().splitlines()[-1]}\n{line}")
        self.assertGreaterEqual(calls["tdsolve"], 800, calls)

    def test_departures_are_as_documented(self):
        import scipy.spatial.distance as ssd
        import tdsolve
        a, b = np.array([[1.0, 2.0, 0.0]]), np.array([[1.0, 3.0, 0.0]])
        for metric, scipy_value in (("hamming", 1 / 3), ("jaccard", 1 / 2)):
            with self.subTest(metric=metric):
                self.assertAlmostEqual(float(ssd.cdist(a, b, metric)[0, 0]), scipy_value)
                self.assertEqual(float(tdsolve.cdist(a, b, metric)[0, 0]), 0.0,
                                 f"{metric} now compares values as SciPy does: drop its rule in scipy_shim.py")
        neg = np.array([[1.0, -1.0, 2.0], [0.5, 0.5, 0.0]])
        self.assertTrue(np.isinf(ssd.pdist(neg, "jensenshannon")[0]))
        with self.assertRaisesRegex(tdsolve.Error, "negative"):
            tdsolve.pdist(neg, "jensenshannon")
        bits = np.array([[1, 0, 1, 1], [0, 0, 1, 0]], dtype=bool)
        ssd.pdist(bits, "dice", w=[1, 2, 1, 1])
        with self.assertRaises(tdsolve.Error):
            tdsolve.pdist(bits, "dice", w=[1, 2, 1, 1])


if __name__ == "__main__":
    unittest.main()
