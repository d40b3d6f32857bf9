"""A pytest plugin that runs SciPy's own tests of pdist and cdist
(scipy/spatial/tests/test_distance.py, TestPdist and TestCdist, with its
MATLAB fixtures) through tdsolve's in-process calls: test_distance's `pdist`
and `cdist` become these, which send every call of a metric tdsolve has to
tdsolve.pdist/cdist (float64) and the rest (callables, metrics tdsolve does
not have — kulczynski1, kulsinski — and parameters it does not take) to
SciPy. Nothing SciPy computes for a metric tdsolve has goes elsewhere:
hamming and jaccard on values, jensenshannon's inf rows, weights on the
boolean metrics and mahalanobis with or without VI all go to tdsolve. At the
end the plugin prints one line, `tdsolve-shim {...}`, the calls each way.

  PYTHONPATH=build/python:tests/e2e python3 -m pytest -p scipy_shim \\
      .../scipy/spatial/tests/test_distance.py -k "TestPdist or TestCdist"
"""
import json
import sys

import numpy as np
import scipy.spatial.distance as ssd

import tdsolve

_scipy_pdist, _scipy_cdist = ssd.pdist, ssd.cdist

# tdsolve's metrics by SciPy's names and aliases (docs/usage.md "Metrics").
_NAMES = {
    "euclidean": ["euclid", "eu", "e"], "sqeuclidean": ["sqe", "sqeuclid"],
    "cityblock": ["cblock", "cb", "c"], "chebyshev": ["chebychev", "cheby", "cheb", "ch"],
    "cosine": ["cos"], "minkowski": ["mi", "m", "pnorm"], "seuclidean": ["se", "s"],
    "correlation": ["co"], "braycurtis": [], "canberra": [], "jensenshannon": ["js"],
    "mahalanobis": ["mahal", "mah"],
    "hamming": ["matching", "hamm", "ha", "h"], "jaccard": ["jacc", "ja", "j"], "dice": [],
    "russellrao": [], "rogerstanimoto": [], "sokalmichener": [], "sokalsneath": [], "yule": [],
}
_CANONICAL = {alias: name for name, aliases in _NAMES.items() for alias in [name, *aliases]}
calls = {"tdsolve": 0, "scipy": 0}


def _call(ours, theirs, arrays, metric, out, args, kwargs):
    name = _CANONICAL.get(metric.lower()) if isinstance(metric, str) else None
    if name is None or args or set(kwargs) - {"p", "w", "V", "VI"}:
        calls["scipy"] += 1
        return theirs(*arrays, metric, *args, out=out, **kwargs)
    calls["tdsolve"] += 1
    try:
        r = ours(*arrays, name, precision="float64", **kwargs)
    except tdsolve.Error as e:  # the command line's one line, as SciPy's ValueError
        raise ValueError(str(e)) from None
    if out is None:
        return r
    # SciPy's `out`: a C-contiguous float64 array of the result's shape.
    if out.shape != r.shape:
        raise ValueError("Output array has incorrect shape.")
    if not out.flags.c_contiguous:
        raise ValueError("Output array must be C-contiguous.")
    if out.dtype != np.float64:
        raise ValueError("Output array must be double type.")
    out[...] = r
    return out


def pdist(X, metric="euclidean", *args, out=None, **kwargs):
    return _call(tdsolve.pdist, _scipy_pdist, (X,), metric, out, args, kwargs)


def cdist(XA, XB, metric="euclidean", *args, out=None, **kwargs):
    return _call(tdsolve.cdist, _scipy_cdist, (XA, XB), metric, out, args, kwargs)


def pytest_collection_finish(session):
    module = sys.modules.get("scipy.spatial.tests.test_distance")
    if module is None:
        raise RuntimeError("scipy_shim: scipy/spatial/tests/test_distance.py was not collected")
    module.pdist, module.cdist = pdist, cdist


def pytest_sessionfinish(session, exitstatus):
    print("\ntdsolve-shim " + json.dumps(calls))
