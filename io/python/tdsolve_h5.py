#!/usr/bin/env python3
"""Read tdsolve result files with h5py.

    from tdsolve_h5 import open_result

    with open_result("d.h5") as r:      # raises IncompleteResult unless every chunk is written
        v = r.condensed()               # SciPy condensed vector, as scipy.spatial.distance.pdist
        D = r.square()                  # n x n matrix (squareform)
        x = r.pair(10, 3)               # one distance, read alone from the file

    with open_result("h.h5") as r:      # `tdsolve hist`: r.kind == "hist"
        c, e = r.counts, r.edges        # as numpy.histogram(pdist(X), bins, range)
        g = r.rdf                       # radial distribution function (None without --box)

    with open_result("c.h5") as r:      # `tdsolve cross`: r.kind == "cross"
        C = r.matrix()                  # rows x cols, as scipy.spatial.distance.cdist(A, B)

`python3 tdsolve_h5.py FILE.h5` prints the file's status and exits 0 when it
is complete, 3 when it is not (as `tdsolve info`).
"""
import sys

import h5py
import numpy as np

__all__ = ["open_result", "Result", "IncompleteResult", "pair_index"]


class IncompleteResult(RuntimeError):
    """The file's /progress does not record every chunk as written."""


def pair_index(n, i, j):
    """Position of pair (i, j), i != j, in the condensed vector of n points."""
    i, j = int(i), int(j)
    if i == j or not (0 <= i < n and 0 <= j < n):
        raise IndexError(f"pair ({i}, {j}) is not a pair of distinct points of {n}")
    if i > j:
        i, j = j, i
    return n * i - i * (i + 1) // 2 + j - i - 1


def _text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def _attrs(obj):
    return {k: (v.decode() if isinstance(v, bytes) else v) for k, v in obj.attrs.items()}


class Result:
    """An open tdsolve result; use open_result().

    kind is "edm" (tdsolve edm: /distances, condensed), "hist" (tdsolve hist:
    /counts, /edges, ...) or "cross" (tdsolve cross: /distances, a matrix)."""

    def __init__(self, path, require_complete=True):
        self.path = path
        self._f = h5py.File(path, "r")
        try:
            self.kind, name = self._kind()
            self._d = self._f[name]
            a = self._d.attrs
            self.metric = _text(a["metric"])
            self.precision = _text(a["precision"])
            self.features = int(a["features"])
            self.attrs = _attrs(self._d)
            if self.kind == "cross":
                self.rows, self.cols = int(a["rows"]), int(a["cols"])
                self.n = None
            else:
                self.n = int(a["n"])
            if self.kind == "hist":
                self.bins = int(a["bins"])
                self.range = (float(a["range_lo"]), float(a["range_hi"]))
                self.pairs = int(a["pairs"])
                self.binning = _text(a["binning"]) if "binning" in a else None
                self.box = tuple(float(s) for s in _text(a["box"]).split(",")) if "box" in a else None
            done, total, problem = self._progress()
            self.chunks_done, self.chunks = done, total
            self.problem = problem
            if require_complete and not self.complete:
                raise IncompleteResult(f"{path}: {self.status()}")
        except Exception:
            self._f.close()
            raise

    def _kind(self):
        """("edm" | "hist" | "cross", name of the result dataset)."""
        f = self._f
        name = None
        if "progress" in f and "dataset" in f["progress"].attrs:
            name = _text(f["progress"].attrs["dataset"]).lstrip("/")
        elif "distances" in f:
            name = "distances"
        if not name or name not in f or "progress" not in f or not isinstance(f[name], h5py.Dataset):
            raise IncompleteResult(f"{self.path}: not a tdsolve result (no /distances or /counts with /progress)")
        if name == "counts":
            return "hist", name
        if f[name].ndim == 2 or _text(f[name].attrs.get("layout", "")) == "matrix":
            return "cross", name
        return "edm", name

    def _progress(self):
        done = self._f["progress/done"][:]
        offsets = self._f["progress/offsets"][:]
        problem = None
        if self.kind == "edm":
            length = self._d.shape[0] if self._d.ndim == 1 else -1
            if self._d.ndim != 1 or length != self.n * (self.n - 1) // 2:
                problem = "/distances is not C(n,2) values long"
            what = "/distances"
        elif self.kind == "cross":
            length = self.rows * self.cols
            if self._d.shape != (self.rows, self.cols):
                problem = f"/distances is not rows x cols = {self.rows} x {self.cols}"
            what = "/distances"
        else:
            length = self.n * (self.n - 1) // 2
            if self._d.ndim != 1 or self._d.shape[0] != self.bins:
                problem = "/counts does not have `bins` values"
            elif any(k not in self._f for k in ("edges", "underflow", "overflow")):
                problem = "no /edges, /underflow or /overflow"
            elif self._f["edges"].shape != (self.bins + 1,):
                problem = "/edges does not have bins+1 values"
            elif self._f["underflow"].shape != () or self._f["overflow"].shape != ():
                problem = "/underflow and /overflow are not scalars"
            what = "the C(n,2) pairs"
            if problem is None and self.pairs != length:
                problem = f"pairs = {self.pairs}, not C(n,2) = {length}"
        if problem is None and (len(offsets) != len(done) + 1 or offsets[-1] != length
                                or np.any(np.diff(offsets.astype(np.int64)) < 0)):
            problem = f"/progress/offsets does not cover {what}"
        chunks_done = int(np.count_nonzero(done == 1))
        if problem is None and self.kind == "hist" and chunks_done == len(done):
            total = int(self._d[:].sum()) + int(self._f["underflow"][()]) + int(self._f["overflow"][()])
            if total != length:
                problem = f"counts + underflow + overflow = {total}, not C(n,2) = {length}"
        return chunks_done, len(done), problem

    @property
    def complete(self):
        return self.problem is None and self.chunks_done == self.chunks

    def status(self):
        if self.problem:
            return f"inconsistent: {self.problem}"
        if self.complete:
            return f"complete ({self.chunks} of {self.chunks} chunks)"
        return f"INCOMPLETE: {self.chunks_done} of {self.chunks} chunks written"

    def _need(self, kind, what):
        if self.kind != kind:
            hint = {"edm": "condensed(), square(), pair(), row()", "hist": "counts, edges, underflow, overflow, rdf",
                    "cross": "matrix()"}[self.kind]
            raise TypeError(f"{self.path}: {what} is for tdsolve {kind} results; this is a {self.kind} result "
                            f"(use {hint})")

    # --- tdsolve edm -----------------------------------------------------

    def condensed(self):
        """All C(n,2) values in SciPy condensed order (loads them all)."""
        self._need("edm", "condensed()")
        return self._d[:]

    def square(self):
        """The symmetric n x n matrix with a zero diagonal."""
        from scipy.spatial.distance import squareform

        self._need("edm", "square()")
        return squareform(self.condensed(), checks=False)

    def pair(self, i, j):
        """Distance between points i and j (0 when i == j), read alone."""
        self._need("edm", "pair()")
        if int(i) == int(j):
            if not 0 <= int(i) < self.n:
                raise IndexError(f"point {i} is not one of {self.n}")
            return self._d.dtype.type(0)
        return self._d[pair_index(self.n, i, j)]

    def row(self, i):
        """Distances from point i to every point (n values, 0 at i)."""
        self._need("edm", "row()")
        i = int(i)
        if not 0 <= i < self.n:
            raise IndexError(f"point {i} is not one of {self.n}")
        out = np.zeros(self.n, dtype=self._d.dtype)
        if i + 1 < self.n:  # pairs (i, j > i): one contiguous run
            s = pair_index(self.n, i, i + 1)
            out[i + 1:] = self._d[s:s + self.n - i - 1]
        if i > 0:  # pairs (k < i, i): one value in each earlier row, increasing positions
            k = np.arange(i, dtype=np.int64)
            out[:i] = self._d[self.n * k - k * (k + 1) // 2 + i - k - 1]
        return out

    # --- tdsolve cross ---------------------------------------------------

    def matrix(self):
        """The rows x cols matrix, as scipy.spatial.distance.cdist(A, B) (loads it all)."""
        self._need("cross", "matrix()")
        return self._d[:]

    # --- tdsolve hist ----------------------------------------------------

    @property
    def counts(self):
        """int64[bins]: pairs per bin, as numpy.histogram(values, bins, range)[0]."""
        self._need("hist", "counts")
        return self._d[:]

    @property
    def edges(self):
        """float64[bins+1] = numpy.linspace(lo, hi, bins+1)."""
        self._need("hist", "edges")
        return self._f["edges"][:]

    @property
    def underflow(self):
        """Pairs whose distance is below range[0]."""
        self._need("hist", "underflow")
        return int(self._f["underflow"][()])

    @property
    def overflow(self):
        """Pairs whose distance is above range[1]."""
        self._need("hist", "overflow")
        return int(self._f["overflow"][()])

    @property
    def rdf(self):
        """float64[bins]: the radial distribution function (written with --box), else None."""
        self._need("hist", "rdf")
        return self._f["rdf"][:] if "rdf" in self._f else None

    @property
    def volume(self):
        """The box volume L1*...*Ld (with --box), else None."""
        self._need("hist", "volume")
        return float(self._f["rdf"].attrs["volume"]) if "rdf" in self._f else None

    def close(self):
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open_result(path, require_complete=True):
    """Open a tdsolve result (edm, hist or cross); raises IncompleteResult
    unless it is complete (pass require_complete=False to inspect a partial file).

    A run writes FILE.h5.partial and renames it to FILE.h5 only when complete:
    with only the .partial there, this raises IncompleteResult (or, with
    require_complete=False, opens the .partial)."""
    import os
    partial = str(path) + ".partial"
    if not os.path.exists(path) and os.path.exists(partial):
        if require_complete:
            raise IncompleteResult(f"{path} is not finished yet: its run is in {partial} "
                                   "(resume it with tdsolve ... --resume)")
        path = partial
    return Result(path, require_complete=require_complete)


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[0], "\nusage: tdsolve_h5.py FILE.h5", file=sys.stderr)
        return 2
    try:
        with open_result(argv[1], require_complete=False) as r:
            if r.kind == "hist":
                what = (f"hist n={r.n} bins={r.bins} range={r.range[0]!r}:{r.range[1]!r} metric={r.metric} "
                        f"precision={r.precision}" + (f" box={','.join(map(repr, r.box))}" if r.box else ""))
            elif r.kind == "cross":
                what = f"cross {r.rows} x {r.cols} metric={r.metric} precision={r.precision}"
            else:
                what = f"n={r.n} metric={r.metric} precision={r.precision}"
            print(f"{r.path}: {what}: {r.status()}")
            return 0 if r.complete else 3
    except (OSError, IncompleteResult, KeyError) as e:
        print(f"{argv[1]}: {e}", file=sys.stderr)
        return 3 if isinstance(e, IncompleteResult) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
