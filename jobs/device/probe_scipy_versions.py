#!/usr/bin/env python3
"""Where the installed SciPy's boolean metrics on values differ from
tdsolve's (which follows SciPy 1.10.1, Debian 12's): jaccard and hamming on
a 0..3 matrix, weighted hamming, on the CPU and (where built) the GPU; how
many of the 44850 pairs differ, the largest relative difference, examples.
Run on the GPU machine (SciPy 1.18.1 there, 2026-11-28: jaccard differs on
every pair — SciPy 1.15 casts its values to bool —, weighted hamming in the
last bit, unweighted hamming not at all):

    PYTHONPATH=.devbin/python bash .devrun/on-device.sh python3 jobs/device/probe_scipy_versions.py
"""
import numpy as np
import scipy
from scipy.spatial.distance import pdist
import tdsolve
rng = np.random.default_rng(1)
v = rng.integers(0, 4, (300, 64)).astype(np.float64)
w = rng.random(64)
print("scipy", scipy.__version__)
for name, kw in [("jaccard", {}), ("hamming", {"w": w}), ("hamming", {})]:
    s = pdist(v, name, **kw)
    for dev in ("cpu", "cuda"):
        try:
            tdsolve.pdist(v[:2], device=dev)
        except tdsolve.Error:
            continue  # no GPU here
        t = tdsolve.pdist(v, name, device=dev, **kw)
        bad = np.flatnonzero(t != s)
        print(name, bool(kw), dev, "differ", bad.size, "of", s.size, "max rel", float(np.max(np.abs(t - s) / np.abs(s).clip(1e-300))) if bad.size else 0.0,
              [(repr(float(t[i])), repr(float(s[i]))) for i in bad[:3]])
# One pair by hand: SciPy 1.10's formula (values) and the bool cast's.
u, x = v[0], v[1]
nz = (u != 0) | (x != 0)
print("pair 0-1: values", np.sum(u != x) / np.sum(nz), "bools", np.sum((u != 0) != (x != 0)) / np.sum(nz),
      "scipy", pdist(v[:2], "jaccard")[0], "tdsolve", tdsolve.pdist(v[:2], "jaccard", device="cpu")[0])
