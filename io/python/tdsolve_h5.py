#!/usr/bin/env python3
"""Read tdsolve result files (the old one-file reader, now a shim over `tdsolve`).

Everything is done by the `tdsolve` package (python/ in the repository;
install it with `pip install ./python`, see python/README.md), which new
code should import. What this module offered still works:

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
is complete, 3 when it is not, 1 when it cannot be read (as `tdsolve info`).

It finds the package in this repository (../../python next to this file)
first, else wherever it is installed.
"""
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_repo_package = os.path.normpath(os.path.join(_here, "..", "..", "python"))
if os.path.isfile(os.path.join(_repo_package, "tdsolve", "__init__.py")) and _repo_package not in sys.path:
    sys.path.insert(0, _repo_package)
try:
    import tdsolve as _tdsolve
    from tdsolve.__main__ import main as _main
except ImportError as e:  # pragma: no cover
    raise ImportError("tdsolve_h5 is a shim over the tdsolve package: install it with `pip install ./python` "
                      f"from the tdsolve repository ({e})") from e

IncompleteResult = _tdsolve.IncompleteResult
Result = _tdsolve.Result
pair_index = _tdsolve.pair_index

__all__ = ["open_result", "Result", "IncompleteResult", "pair_index"]


class _Edm(_tdsolve.EdmResult):
    def square(self, max_bytes=None):
        """The symmetric n x n matrix with a zero diagonal (no size limit, as before)."""
        return super().square(max_bytes=max_bytes)


class _Cross(_tdsolve.CrossResult):
    # The old reader's r.rows and r.cols were the matrix's dimensions.
    @property
    def rows(self):
        return self.shape[0]

    @property
    def cols(self):
        return self.shape[1]


_CLASSES = {"edm": _Edm, "cross": _Cross, "hist": _tdsolve.HistResult}


def open_result(path, require_complete=True):
    """Open a tdsolve result (edm, hist or cross); raises IncompleteResult
    unless it is complete (pass require_complete=False to inspect a partial file).

    A run writes FILE.h5.partial and renames it to FILE.h5 only when complete:
    with only the .partial there, this raises IncompleteResult (or, with
    require_complete=False, opens the .partial)."""
    return _tdsolve.open(path, require_complete=require_complete, _classes=_CLASSES)


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[0], "\nusage: tdsolve_h5.py FILE.h5", file=sys.stderr)
        return 2
    return _main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
