"""SciPy's own tests of pdist and cdist, run through tdsolve (issue 31): the
installed SciPy's scipy/spatial/tests/test_distance.py, TestPdist and
TestCdist (every metric, its MATLAB fixtures, calling conventions, `out`,
dtypes), with pdist and cdist swapped for tdsolve's in-process calls by the
pytest plugin tests/e2e/scipy_shim.py (a metric tdsolve has goes to tdsolve;
a callable or a metric it does not have to SciPy). Every test must pass and
at least 950 calls must have gone to tdsolve — hamming and jaccard on
values, jensenshannon on negative rows, weighted boolean metrics and
mahalanobis included (1071 with SciPy 1.10.1; the ~600 others are callables,
kulczynski1 and kulsinski, and calls with arguments tdsolve does not take).
test_the_old_departures_are_scipys checks what the plugin once routed to
SciPy as documented departures. Needs the extension (pybind11-dev) and pytest (python3-pytest):
skipped without them, saying which.
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
        self.assertGreaterEqual(calls["tdsolve"], 950, calls)

    def test_the_old_departures_are_scipys(self):
        """What the plugin once sent to SciPy (docs/usage.md said so), now
        tdsolve's, with SciPy's values."""
        import scipy.spatial.distance as ssd
        import tdsolve
        a, b = np.array([[1.0, 2.0, 0.0]]), np.array([[1.0, 3.0, 0.0]])
        for metric in ("hamming", "jaccard"):
            self.assertEqual(tdsolve.cdist(a, b, metric)[0, 0], ssd.cdist(a, b, metric)[0, 0], metric)
        neg = np.array([[1.0, -1.0, 2.0], [0.5, 0.5, 0.0], [0.0, 0.0, 0.0]])
        np.testing.assert_array_equal(tdsolve.pdist(neg, "jensenshannon"), ssd.pdist(neg, "jensenshannon"))
        bits = np.array([[1, 0, 1, 1], [0, 0, 1, 0], [1, 1, 0, 1]], dtype=bool)
        for metric in ("dice", "hamming", "yule", "russellrao"):
            w = np.array([1.0, 2, 1, 1])
            np.testing.assert_array_equal(tdsolve.pdist(bits, metric, w=w), ssd.pdist(bits, metric, w=w), metric)
        x = np.random.default_rng(5).random((20, 3))
        vi = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.1], [0.0, 0.1, 3.0]])
        np.testing.assert_allclose(tdsolve.pdist(x, "mahalanobis", VI=vi), ssd.pdist(x, "mahalanobis", VI=vi),
                                   rtol=1e-14)
        np.testing.assert_allclose(tdsolve.pdist(x, "mahalanobis"), ssd.pdist(x, "mahalanobis"), rtol=1e-13)


if __name__ == "__main__":
    unittest.main()
