"""`tdsolve hist` against numpy.histogram.

float64 runs: the counts equal numpy.histogram(pdist(X), B, (LO, HI))[0]
exactly (random data, so no value lies within rounding of an edge, plus
constructed data whose distances are exact and lie ON edges). float32 runs:
they equal numpy.histogram of what `tdsolve edm` writes for the same input.
/edges is numpy.linspace(LO, HI, B+1) bit for bit; /underflow and /overflow
count the values below LO and above HI; every pair is counted once.

--box: the reference applies the minimum image in NumPy (delta -= L *
np.rint(delta / L)) in the run precision. Its metric may round differently
from tdsolve's in the last bits, so a value within a few ulps of an edge may
land on either side: each bin must hold at least the values certainly in it
and at most those possibly in it, and such values must be rare. /rdf must
follow the spec's formula.

n covers 2, 3, 127, 129 (around the block of 128), 1000, 4099 and 5000.
"""
import concurrent.futures
import itertools
import os
import subprocess
import sys
import unittest

import h5py
import numpy as np
from scipy.spatial.distance import pdist

from common import BIN, MPIEXEC, TempDirTest, tdsolve, tdsolve_h5

METRICS = ["euclidean", "sqeuclidean", "cityblock", "chebyshev", "cosine"]
NS = [2, 3, 127, 129, 1000, 4099, 5000]
DS = [3, 1, 17, 4]


def read_hist(path):
    with h5py.File(path, "r") as f:
        c = f["counts"]
        return dict(counts=c[:], counts_dtype=c.dtype, edges=f["edges"][:], edges_dtype=f["edges"].dtype,
                    underflow=f["underflow"][()], underflow_shape=f["underflow"].shape,
                    overflow=f["overflow"][()], overflow_shape=f["overflow"].shape,
                    rdf=f["rdf"][:] if "rdf" in f else None,
                    rdf_attrs=dict(f["rdf"].attrs) if "rdf" in f else None,
                    attrs=dict(c.attrs), root=dict(f.attrs), progress=dict(f["progress"].attrs),
                    done=f["progress/done"][:], offsets=f["progress/offsets"][:])


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def num(x):
    """x as text that parses back to the same float64."""
    return repr(float(x))


def bins_of(values, edges):
    """numpy.histogram's bin of each value: -1 below edges[0], B above edges[-1]."""
    b = len(edges) - 1
    idx = np.searchsorted(edges, values, side="right") - 1
    idx[values == edges[-1]] = b - 1
    idx[values > edges[-1]] = b
    return idx


def min_image(x, box, precision):
    """All pair deltas x[i] - x[j], i < j, with the minimum image applied in the run precision."""
    t = np.float32 if precision == "float32" else np.float64
    x = x.astype(t)
    L = np.asarray(box, dtype=t)
    i, j = np.triu_indices(len(x), 1)
    delta = x[i] - x[j]
    delta -= L * np.rint(delta / L)
    return delta.astype(np.float64)


def metric_of_deltas(delta, metric):
    if metric == "euclidean":
        return np.sqrt((delta * delta).sum(1))
    if metric == "sqeuclidean":
        return (delta * delta).sum(1)
    if metric == "cityblock":
        return np.abs(delta).sum(1)
    if metric == "chebyshev":
        return np.abs(delta).max(1)
    raise ValueError(metric)


def rdf_reference(counts, edges, n, volume):
    shell = (4.0 / 3.0) * np.pi * (edges[1:] ** 3 - edges[:-1] ** 3)
    return counts / (shell * n * (n - 1) / (2 * volume))


class HistTest(TempDirTest):
    def hist(self, src, bins, lo, hi, out, metric="euclidean", precision="float64", extra=(), np_=None):
        args = ["hist", *src, "--bins", bins, "--range", f"{num(lo)}:{num(hi)}", "--output", out,
                "--metric", metric, "--precision", precision, "--progress", "none", "--quiet", *extra]
        tdsolve(*args, np_=np_, check=True)
        return read_hist(out)

    def check_exact(self, h, values, bins, lo, hi, what):
        """h must be numpy.histogram(values, bins, (lo, hi)) exactly; returns failures."""
        ref, ref_edges = np.histogram(values, bins, (lo, hi))
        bad = []
        if h["counts_dtype"] != np.int64 or h["counts"].shape != (bins,):
            return [f"{what}: /counts is {h['counts_dtype']}{h['counts'].shape}, want int64[{bins}]"]
        if h["edges_dtype"] != np.float64 or h["edges"].tobytes() != ref_edges.tobytes():
            bad.append(f"{what}: /edges is not numpy.linspace({lo!r}, {hi!r}, {bins + 1})")
        if not np.array_equal(h["counts"], ref):
            k = np.flatnonzero(h["counts"] != ref)
            bad.append(f"{what}: {len(k)} bins differ from numpy.histogram, e.g. bin {k[0]}: "
                       f"{h['counts'][k[0]]} vs {ref[k[0]]} (edges {ref_edges[k[0]]!r}, {ref_edges[k[0] + 1]!r})")
        under, over = int(np.count_nonzero(values < lo)), int(np.count_nonzero(values > hi))
        if (int(h["underflow"]), int(h["overflow"])) != (under, over):
            bad.append(f"{what}: underflow/overflow {int(h['underflow'])}/{int(h['overflow'])}, want {under}/{over}")
        if h["underflow_shape"] != () or h["overflow_shape"] != ():
            bad.append(f"{what}: /underflow, /overflow are not scalars")
        if int(h["counts"].sum()) + int(h["underflow"]) + int(h["overflow"]) != len(values):
            bad.append(f"{what}: counts + underflow + overflow != C(n,2) = {len(values)}")
        return bad

    # --- float64: numpy.histogram(pdist(X)) exactly ----------------------

    def float64_case(self, n, d, metric, bins, fmt):
        rng = np.random.default_rng(10 * n + d)
        x = rng.random((n, d)) - (0.5 if metric == "cosine" else 0.0)
        name = f"x_{n}_{d}_{metric}"
        src = (["--input", self.save_npy(name + ".npy", x)] if fmt == "npy"
               else ["--input", self.save_h5(name + ".h5", "/pts", x) + ":/pts"])
        v = pdist(x, metric)
        if n >= 100:  # a range that cuts the data at both ends; LO and HI are no data value
            lo, hi = np.quantile(v, 0.07) * (1 + 2.0**-30), np.quantile(v, 0.93) * (1 - 2.0**-30)
        elif v.min() < v.max():
            lo, hi = v.min() * 0.999 + v.max() * 0.001, v.max() * 1.5
        else:
            lo, hi = v[0] * 0.5, v[0] * 2.0
        out = self.path(name + "_hist.h5")
        h = self.hist(src, bins, lo, hi, out, metric, "float64")
        os.remove(out)
        what = f"float64 {metric} n={n} d={d} bins={bins} range={lo!r}:{hi!r}"
        bad = self.check_exact(h, v, bins, lo, hi, what)
        if n >= 100 and not (h["underflow"] > 0 and h["overflow"] > 0):
            bad.append(f"{what}: the range was meant to cut the data at both ends")
        return bad

    def test_float64_equals_numpy_histogram_of_pdist(self):
        cases = [(n, DS[k % len(DS)] if m != "cosine" else 5, m, [64, 7, 1000, 1, 250][k % 5], ["npy", "h5"][k % 2])
                 for k, (n, m) in enumerate(itertools.product(NS, METRICS))]
        failures = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            for f in [pool.submit(self.float64_case, *c) for c in cases]:
                failures += f.result()
        self.assertEqual(failures, [], "\n".join(failures[:20]))

    # --- float32: numpy.histogram of `tdsolve edm` -----------------------

    def float32_case(self, n, d, metric, bins, generate):
        name = f"f32_{n}_{d}_{metric}"
        if generate:
            src = ["--generate", f"uniform:{n}:{d}:{n}"]
        else:
            x = np.random.default_rng(n + d).random((n, d)) * 3.0 - (1.5 if metric == "cosine" else 0.0)
            src = ["--input", self.save_npy(name + ".npy", x)]
        edm = self.path(name + "_edm.h5")
        tdsolve("edm", *src, "--output", edm, "--metric", metric, "--precision", "float32", "--progress", "none",
                "--quiet", check=True)
        with h5py.File(edm, "r") as f:
            e = f["distances"][:]
        os.remove(edm)
        if e.dtype != np.float32:
            return [f"edm float32 wrote {e.dtype}"]
        v = e.astype(np.float64)
        lo, hi = (np.quantile(v, 0.1), np.quantile(v, 0.95)) if n > 2 else (v[0] * 0.5, v[0] * 3)
        out = self.path(name + ".h5")
        h = self.hist(src, bins, lo, hi, out, metric, "float32")
        os.remove(out)
        what = f"float32 {metric} n={n} d={d} bins={bins} range={lo!r}:{hi!r}"
        bad = self.check_exact(h, v, bins, lo, hi, what)
        if text(h["attrs"].get("precision", "")) != "float32":
            bad.append(f"{what}: precision attribute {h['attrs'].get('precision')!r}")
        return bad

    def test_float32_equals_numpy_histogram_of_edm_output(self):
        cases = [(n, d, m, b, g) for (n, d, b, g) in [(2, 3, 5, False), (129, 4, 100, False), (4099, 3, 333, True)]
                 for m in METRICS]
        failures = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            for f in [pool.submit(self.float32_case, *c) for c in cases]:
                failures += f.result()
        self.assertEqual(failures, [], "\n".join(failures[:20]))

    # --- values exactly on edges ----------------------------------------

    def test_integer_grid_values_on_integer_edges(self):
        # Integer points: every distance but non-square euclidean ones is an
        # exact integer in both precisions, and sqrt(k) is never near an
        # integer or half-integer edge. Repeated points give zero distances.
        g = np.array(list(itertools.product(range(5), range(4), range(3))), dtype=np.float64)
        x = np.vstack([g, g[[0, 7, 30]]])
        src = ["--input", self.save_npy("grid.npy", x)]
        ranges = {"euclidean": [(4, 1.0, 5.0), (8, 1.0, 5.0), (2, 0.0, 4.0)],
                  "sqeuclidean": [(4, 1.0, 5.0), (8, 1.0, 5.0), (9, 2.0, 11.0)],
                  "cityblock": [(4, 1.0, 5.0), (8, 1.0, 5.0), (2, 0.0, 4.0)],
                  "chebyshev": [(2, 1.0, 3.0), (6, 1.0, 3.0), (2, 0.0, 2.0)]}
        failures = []
        for metric, precision in itertools.product(ranges, ["float64", "float32"]):
            for bins, lo, hi in ranges[metric]:
                v = pdist(x, metric)
                out = self.path(f"grid_{metric}_{precision}_{bins}_{lo}.h5")
                h = self.hist(src, bins, lo, hi, out, metric, precision)
                edges = np.linspace(lo, hi, bins + 1)
                self.assertGreater(np.count_nonzero(np.isin(v, edges[1:-1])), 0, "no value lies on an inner edge")
                self.assertGreater(np.count_nonzero(v == hi), 0, "no value lies on HI")
                self.assertGreater(np.count_nonzero(v == lo), 0, "no value lies on LO")
                failures += self.check_exact(h, v, bins, lo, hi, f"grid {metric} {precision} bins={bins}")
        self.assertEqual(failures, [], "\n".join(failures))

    def test_values_on_and_beside_linspace_edges(self):
        # 1-D points at 0, at each edge of numpy.linspace(LO, HI, B+1) and one
        # ulp either side: the distances to point 0 are those values exactly.
        # These (LO, HI, B) are ones where floor((v - LO) * B / (HI - LO))
        # puts some edge, or its neighbour, into the wrong bin.
        failures = []
        for k, (lo, hi, bins) in enumerate([(0.1, 0.7, 5), (0.3, 2.9, 4), (0.0, 0.3, 7)]):
            e = np.linspace(lo, hi, bins + 1)
            pts = np.unique(np.concatenate([[0.0], e, np.nextafter(e, -np.inf), np.nextafter(e, np.inf)]))
            # No subnormal values: this is about binning, not about gradual underflow.
            pts = np.concatenate([[0.0, 0.0], pts[pts >= 1e-300]])  # 0 twice: one distance 0
            x = pts[:, None]
            src = ["--input", self.save_npy(f"edges{k}.npy", x)]
            for metric in ["cityblock", "euclidean", "chebyshev"]:
                v = pdist(x, metric)
                self.assertTrue(np.all(np.isin(e, v)), "every edge is a distance")
                h = self.hist(src, bins, lo, hi, self.path(f"edges{k}_{metric}.h5"), metric, "float64")
                failures += self.check_exact(h, v, bins, lo, hi, f"edges {metric} {lo}:{hi} bins={bins}")
        self.assertEqual(failures, [], "\n".join(failures))

    def test_one_bin_and_a_million_bins(self):
        x = np.random.default_rng(4).random((300, 2))
        src = ["--input", self.save_npy("x.npy", x)]
        v = pdist(x)
        failures = []
        for bins, lo, hi in [(1, 0.25, 1.0), (1000000, 0.0, 1.5), (999983, 0.1, 0.9)]:
            h = self.hist(src, bins, lo, hi, self.path(f"b{bins}.h5"))
            failures += self.check_exact(h, v, bins, lo, hi, f"bins={bins}")
        self.assertEqual(failures, [], "\n".join(failures))

    # --- the file --------------------------------------------------------

    def test_file_layout_reader_and_info(self):
        x = np.random.default_rng(8).random((500, 3))
        src = self.save_npy("x.npy", x)
        out = self.path("h.h5")
        h = self.hist(["--input", src], 40, 0.125, 1.5, out, "cityblock", "float64")
        a = h["attrs"]
        self.assertEqual(text(h["root"]["software"]), "tdsolve")
        for key in ("version", "command", "created", "input"):
            self.assertIn(key, h["root"])
        self.assertIn("hist", text(h["root"]["command"]))
        self.assertIn("x.npy", text(h["root"]["input"]))
        self.assertEqual((int(a["n"]), int(a["k"]), int(a["features"]), int(a["bins"]), int(a["pairs"])),
                         (500, 2, 3, 40, 500 * 499 // 2))
        self.assertEqual((text(a["metric"]), text(a["precision"])), ("cityblock", "float64"))
        self.assertEqual((a["range_lo"], a["range_hi"]), (0.125, 1.5))
        self.assertEqual(np.asarray(a["range_lo"]).dtype, np.float64)
        self.assertEqual(np.asarray(a["range_hi"]).dtype, np.float64)
        self.assertIsInstance(text(a["binning"]), str)
        self.assertNotIn("box", a)
        self.assertIsNone(h["rdf"], "/rdf is written only with --box")
        self.assertEqual(text(h["progress"]["dataset"]), "/counts")
        self.assertEqual(int(h["progress"]["chunks"]), len(h["done"]))
        self.assertTrue(np.all(h["done"] == 1))
        self.assertEqual(len(h["offsets"]), len(h["done"]) + 1)
        self.assertEqual((int(h["offsets"][0]), int(h["offsets"][-1])), (0, 500 * 499 // 2))
        self.assertTrue(np.all(np.diff(h["offsets"].astype(np.int64)) >= 0))

        with tdsolve_h5.open_result(out) as r:
            self.assertEqual(r.kind, "hist")
            self.assertEqual((r.n, r.bins, r.range, r.metric, r.precision, r.features), (500, 40, (0.125, 1.5),
                                                                                        "cityblock", "float64", 3))
            np.testing.assert_array_equal(r.counts, h["counts"])
            np.testing.assert_array_equal(r.edges, h["edges"])
            self.assertEqual((r.underflow, r.overflow), (int(h["underflow"]), int(h["overflow"])))
            self.assertIsNone(r.rdf)
            self.assertIsNone(r.box)
            with self.assertRaises(TypeError):
                r.condensed()
        info = tdsolve("info", out)
        self.assertEqual(info.returncode, 0, info.stdout + info.stderr)
        self.assertIn("40 bins", info.stdout)

        # The done flags decide: one missing flag makes the file incomplete
        # (and info sees that the counts now cover more than the flagged chunks).
        with h5py.File(out, "a") as f:
            f["progress/done"][0] = 0
        with self.assertRaises(tdsolve_h5.IncompleteResult):
            tdsolve_h5.open_result(out)
        info = tdsolve("info", out)
        self.assertEqual(info.returncode, 3, info.stdout + info.stderr)
        self.assertIn("INCONSISTENT: counts + underflow + overflow do not match", info.stdout)
        helper = subprocess.run([sys.executable, tdsolve_h5.__file__, out], capture_output=True, text=True)
        self.assertEqual(helper.returncode, 3, helper.stdout + helper.stderr)

    # --- ranks and blocks ------------------------------------------------

    def test_same_counts_on_1_2_3_ranks_over_several_chunks(self):
        # Several chunks (design.md: about 1/256 of the pairs each), so the
        # ranks each count some and the partial counts are merged. With --box.
        n = 6000
        runs = {}
        for np_ in (1, 2, 3):
            h = self.hist(["--generate", f"uniform:{n}:2:4"], 100, 0.1, 0.6, self.path(f"r{np_}.h5"), "euclidean",
                          "float32", ["--box", "1,1"], np_=np_)
            runs[np_] = h
            self.assertGreaterEqual(len(h["done"]), 2, "one chunk: the ranks are not exercised")
            self.assertEqual(int(h["counts"].sum()) + int(h["underflow"]) + int(h["overflow"]), n * (n - 1) // 2)
            self.assertGreater(int(h["underflow"]), 0)
            self.assertGreater(int(h["overflow"]), 0)
        for r in (2, 3):
            for k in ("counts", "edges", "rdf", "offsets", "done"):
                self.assertEqual(runs[1][k].tobytes(), runs[r][k].tobytes(), f"/{k} differs between 1 and {r} ranks")
            self.assertEqual((runs[1]["underflow"], runs[1]["overflow"]), (runs[r]["underflow"], runs[r]["overflow"]))

    def test_same_counts_for_any_block(self):
        runs = {}
        for label, extra, np_ in [("1 rank", [], 1), ("2 ranks, block 64", ["--block", "64", "--backend", "cpu"], 2),
                                  ("singleton, block 300", ["--block", "300", "--backend", "cpu"], None)]:
            h = self.hist(["--generate", "uniform:5000:3:4"], 100, 0.2, 1.2, self.path("r.h5"), "euclidean",
                          "float32", extra, np_=np_)
            runs[label] = (h["counts"].tobytes(), int(h["underflow"]), int(h["overflow"]), h["edges"].tobytes())
            os.remove(self.path("r.h5"))
        first = runs["1 rank"]
        for label, r in runs.items():
            self.assertEqual(r, first, f"{label} differs from 1 rank")
        self.assertGreater(first[1], 0)
        self.assertGreater(first[2], 0)

    def test_same_counts_small_blocks_float64_cosine(self):
        x = np.random.default_rng(12).random((1000, 5)) - 0.5
        src = ["--input", self.save_npy("x.npy", x)]
        v = pdist(x, "cosine")
        ref = None
        for extra, np_ in [([], None), (["--block", "7", "--backend", "cpu"], 3),
                           (["--block", "1", "--backend", "cpu"], 2)]:
            h = self.hist(src, 37, 0.3, 1.7, self.path("b.h5"), "cosine", "float64", extra, np_=np_)
            os.remove(self.path("b.h5"))
            self.assertEqual(self.check_exact(h, v, 37, 0.3, 1.7, f"cosine {extra} on {np_} ranks"), [])
            got = (h["counts"].tobytes(), int(h["underflow"]), int(h["overflow"]))
            ref = ref or got
            self.assertEqual(got, ref, f"{extra} on {np_} ranks")

    # --- periodic box ----------------------------------------------------

    def check_bracketed(self, h, values, edges, rtol, what):
        """Each bin (and under/overflow) holds between the values certainly
        in it and those possibly in it, a value moving by up to rtol."""
        b = len(edges) - 1
        low = bins_of(values * (1 - rtol), edges) + 1
        high = bins_of(values * (1 + rtol), edges) + 1  # 0: underflow, b + 1: overflow
        sure = np.bincount(low[low == high], minlength=b + 2)
        maybe = np.zeros(b + 2, np.int64)
        for lo_, hi_ in zip(low[low != high], high[low != high]):
            maybe[lo_:hi_ + 1] += 1
        self.assertLess(np.count_nonzero(low != high), 2e-3 * len(values) + 2, f"{what}: too many values near edges")
        got = np.concatenate([[h["underflow"]], h["counts"], [h["overflow"]]]).astype(np.int64)
        bad = np.flatnonzero((got < sure) | (got > sure + maybe))
        self.assertEqual(len(bad), 0, f"{what}: bins {bad[:5] - 1} (-1: underflow, {b}: overflow) hold "
                         f"{got[bad[:5]]}, want between {sure[bad[:5]]} and {(sure + maybe)[bad[:5]]}")
        self.assertEqual(int(got.sum()), len(values), f"{what}: counts + underflow + overflow != C(n,2)")
        self.assertEqual(int(h["underflow"]) > 0 and int(h["overflow"]) > 0, True, f"{what}: range should cut")

    def test_box_minimum_image_and_rdf(self):
        rng = np.random.default_rng(21)
        cases = [(3, [1.0, 1.5, 2.0], 1500, 60), (2, [3.0, 0.75], 777, 25),
                 (8, [1.0, 2.0, 1.0, 1.5, 1.0, 1.0, 1.25, 1.0], 400, 30)]  # d, box, n, bins
        for d, box, n, bins in cases:
            L = np.array(box)
            # Points partly outside [0, L): the minimum image must wrap them.
            x = rng.random((n, d)) * 3 * L - L
            src = ["--input", self.save_npy(f"box{d}.npy", x)]
            deltas = {p: min_image(x, box, p) for p in ("float32", "float64")}
            for metric, precision in [("euclidean", "float64"), ("euclidean", "float32"),
                                      ("cityblock", "float64"), ("chebyshev", "float32"),
                                      ("sqeuclidean", "float64")]:
                what = f"box d={d} n={n} {metric} {precision}"
                v = metric_of_deltas(deltas[precision], metric)
                lo, hi = np.quantile(v, 0.05), np.quantile(v, 0.95)
                h = self.hist(src, bins, lo, hi, self.path("box.h5"), metric, precision,
                              ["--box", ",".join(map(num, box))])
                os.remove(self.path("box.h5"))
                np.testing.assert_array_equal(h["edges"], np.linspace(lo, hi, bins + 1), what)
                self.check_bracketed(h, v, h["edges"], 2e-6 if precision == "float32" else 1e-12, what)
                # Without the box the counts would differ: the reference is not vacuous.
                plain = np.histogram(pdist(x, metric), bins, (lo, hi))[0]
                self.assertFalse(np.array_equal(plain, h["counts"]), f"{what}: counts ignore the box")
                a = h["attrs"]
                self.assertEqual([float(s) for s in text(a["box"]).split(",")], box, what)
                self.assertIsNotNone(h["rdf"], f"{what}: no /rdf with --box")
                self.assertEqual(h["rdf"].shape, (bins,))
                self.assertEqual(h["rdf"].dtype, np.float64)
                volume = float(np.prod(L))
                self.assertAlmostEqual(float(h["rdf_attrs"]["volume"]) / volume, 1.0, places=14, msg=what)
                self.assertIsInstance(text(h["rdf_attrs"]["formula"]), str)
                np.testing.assert_allclose(h["rdf"], rdf_reference(h["counts"], h["edges"], n, volume),
                                           rtol=1e-12, atol=0, err_msg=what)
        # The reader exposes the same.
        out = self.path("r.h5")
        self.hist(["--generate", "uniform:300:3:1"], 10, 0.0, 0.5, out, extra=["--box", "1,1,1"])
        with tdsolve_h5.open_result(out) as r:
            self.assertEqual(r.box, (1.0, 1.0, 1.0))
            self.assertEqual(r.volume, 1.0)
            np.testing.assert_allclose(r.rdf, rdf_reference(r.counts, r.edges, 300, 1.0), rtol=1e-12)

    # --- bad input -------------------------------------------------------

    def run_bad(self, args, expect=()):
        return self.run_bad_command("hist", args, expect, casefold=True)
        return ours[0]

    def test_bad_input(self):
        gen = ["--generate", "uniform:50:3:1"]
        self.run_bad([*gen, "--bins", "0", "--range", "0:1"], ["bins"])
        self.run_bad([*gen, "--bins", "1000001", "--range", "0:1"], ["bins"])
        self.run_bad([*gen, "--bins", "10", "--range", "2:1"], ["range"])
        self.run_bad([*gen, "--bins", "10", "--range", "1:1"], ["range"])
        self.run_bad([*gen, "--bins", "10", "--range", "nan:1"], ["range"])
        self.run_bad([*gen, "--bins", "10", "--range", "0:nan"], ["range"])
        self.run_bad([*gen, "--bins", "10", "--range", "0:inf"], ["range"])
        self.run_bad([*gen, "--bins", "10", "--range", "0:1", "--box", "1,1"], ["box"])
        self.run_bad([*gen, "--bins", "10", "--range", "0:1", "--box", "1,1,1,1"], ["box"])
        self.run_bad([*gen, "--bins", "10", "--range", "0:1", "--box", "1,0,1"], ["box"])
        self.run_bad([*gen, "--bins", "10", "--range", "0:1", "--box", "1,1,1", "--metric", "cosine"])
        self.run_bad(["--generate", "uniform:50:9:1", "--bins", "10", "--range", "0:1", "--box",
                      ",".join(["1"] * 9)], ["box"])
        self.run_bad([*gen, "--range", "0:1"], ["bins"])
        self.run_bad([*gen, "--bins", "10"], ["range"])


if __name__ == "__main__":
    unittest.main()
