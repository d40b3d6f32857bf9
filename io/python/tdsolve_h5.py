#!/usr/bin/env python3
"""Read tdsolve result files with h5py.

    from tdsolve_h5 import open_result

    with open_result("d.h5") as r:      # raises IncompleteResult unless every chunk is written
        v = r.condensed()               # SciPy condensed vector, as scipy.spatial.distance.pdist
        D = r.square()                  # n x n matrix (squareform)
        x = r.pair(10, 3)               # one distance, read alone from the file

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


class Result:
    """An open tdsolve result; use open_result()."""

    def __init__(self, path, require_complete=True):
        self.path = path
        self._f = h5py.File(path, "r")
        try:
            if "distances" not in self._f or "progress" not in self._f:
                raise IncompleteResult(f"{path}: not a tdsolve result (no /distances with /progress)")
            self._d = self._f["distances"]
            a = self._d.attrs
            self.n = int(a["n"])
            self.metric = str(a["metric"])
            self.precision = str(a["precision"])
            self.features = int(a["features"])
            self.attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in a.items()}
            done, total, problem = self._progress()
            self.chunks_done, self.chunks = done, total
            self.problem = problem
            if require_complete and not self.complete:
                raise IncompleteResult(f"{path}: {self.status()}")
        except Exception:
            self._f.close()
            raise

    def _progress(self):
        done = self._f["progress/done"][:]
        offsets = self._f["progress/offsets"][:]
        length = self._d.shape[0] if self._d.ndim == 1 else -1
        problem = None
        if self._d.ndim != 1 or length != self.n * (self.n - 1) // 2:
            problem = "/distances is not C(n,2) values long"
        elif len(offsets) != len(done) + 1 or offsets[-1] != length or np.any(np.diff(offsets.astype(np.int64)) < 0):
            problem = "/progress/offsets does not cover /distances"
        return int(np.count_nonzero(done == 1)), len(done), problem

    @property
    def complete(self):
        return self.problem is None and self.chunks_done == self.chunks

    def status(self):
        if self.problem:
            return f"inconsistent: {self.problem}"
        if self.complete:
            return f"complete ({self.chunks} of {self.chunks} chunks)"
        return f"INCOMPLETE: {self.chunks_done} of {self.chunks} chunks written"

    def condensed(self):
        """All C(n,2) values in SciPy condensed order (loads them all)."""
        return self._d[:]

    def square(self):
        """The symmetric n x n matrix with a zero diagonal."""
        from scipy.spatial.distance import squareform

        return squareform(self.condensed(), checks=False)

    def pair(self, i, j):
        """Distance between points i and j (0 when i == j), read alone."""
        if int(i) == int(j):
            if not 0 <= int(i) < self.n:
                raise IndexError(f"point {i} is not one of {self.n}")
            return self._d.dtype.type(0)
        return self._d[pair_index(self.n, i, j)]

    def row(self, i):
        """Distances from point i to every point (n values, 0 at i)."""
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

    def close(self):
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open_result(path, require_complete=True):
    """Open a tdsolve result; raises IncompleteResult unless it is complete
    (pass require_complete=False to inspect a partial file)."""
    return Result(path, require_complete=require_complete)


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[0], "\nusage: tdsolve_h5.py FILE.h5", file=sys.stderr)
        return 2
    try:
        with open_result(argv[1], require_complete=False) as r:
            print(f"{r.path}: n={r.n} metric={r.metric} precision={r.precision}: {r.status()}")
            return 0 if r.complete else 3
    except (OSError, IncompleteResult, KeyError) as e:
        print(f"{argv[1]}: {e}", file=sys.stderr)
        return 3 if isinstance(e, IncompleteResult) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
