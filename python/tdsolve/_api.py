"""tdsolve's commands called from Python, in this process (the extension
tdsolve._core, built by the project's CMake): the command line's own code
runs on the arrays you give, writes the same HDF5 file the command line
writes, and the call returns its values as NumPy arrays (pdist and cdist
write them straight into the array, with no file; the others make the file
in a temporary folder and remove it) or, with out="f.h5", keeps the file
and returns the reader (tdsolve.open).

    import numpy as np, tdsolve
    X = np.random.default_rng(0).random((20000, 3))
    d = tdsolve.pdist(X)                          # as scipy.spatial.distance.pdist(X)
    D = tdsolve.cdist(X[:100], X, "cityblock")    # as cdist
    counts, edges = tdsolve.hist(X, 50, (0, 0.1))
    dist, ind = tdsolve.knn(X, 16)                # as NearestNeighbors(...).kneighbors(X) without self
    pairs, dist = tdsolve.knn(X, radius=0.01)     # as cKDTree(X).query_pairs(0.01), with distances

Inputs: any NumPy array of numbers or bools (any dtype NumPy converts to
float64 exactly: bool, integers up to 2^53, float16/32/64; Fortran order and
strided views), n points × d features. Precision: float64 unless you say
precision="float32" (the command line's default is float32). device:
"auto" (a GPU where the extension was built with CUDA and one is visible),
"cpu" or "cuda". The GIL is released while the command runs; Ctrl-C stops it
cleanly and raises KeyboardInterrupt (a file given as out= is then a
resumable FILE.h5.partial). An error is a tdsolve.Error with the command
line's message and exit code (also a RuntimeError). resume=True with out=
finishes that file's .partial (the same call: the same arrays and options).

The calls are for one process: for several ranks (mpirun, Slurm) run the
command line."""
import contextlib
import os
import shutil
import tempfile

import numpy as np

from ._result import open as _open

try:
    from . import _core
except ImportError as e:  # the package without its extension: files can still be read
    _core = None
    _why = str(e)


class Error(RuntimeError):
    """A tdsolve command's error: str() is the command line's one line (what
    it prints after "tdsolve: error: "), exit_code what it exits with."""

    def __init__(self, message, exit_code=1):
        super().__init__(message, exit_code)
        self.message, self.exit_code = message, exit_code

    def __str__(self):
        return self.message

STOPPED = 75  # the command line's exit code of a clean stop (resumable)


def _need_core():
    if _core is None:
        raise ImportError("tdsolve's extension (tdsolve._core) is not built or not installed here "
                          f"({_why}); the calls need it, reading files does not. Build it with the "
                          "project's CMake (pybind11-dev, python3-dev) and use build/python, or "
                          "install the package as the README says")


def _points(X, what="X"):
    """A C-contiguous float64 n x d array holding exactly X's values."""
    a = np.asarray(X)
    if a.dtype == object or a.dtype.kind not in "biuf":
        raise TypeError(f"{what}: an array of numbers or bools is needed, not dtype {a.dtype}")
    if a.ndim != 2:
        raise ValueError(f"{what} must be 2-D (n points x d features); it has shape {a.shape}")
    if a.dtype.kind in "iu" and a.size and int(np.abs(a).max()) > 2 ** 53:
        raise ValueError(f"{what}: integers above 2^53 have no exact float64 value")
    return np.ascontiguousarray(a, dtype=np.float64)


def _vector(v, d, what):
    a = np.asarray(v, dtype=np.float64).reshape(-1)
    if a.size != d:
        raise ValueError(f"{what} needs {d} values (one a feature), not {a.size}")
    return np.ascontiguousarray(a.reshape(1, d))


def _number(x):
    return repr(float(x))


@contextlib.contextmanager
def _output(out):
    """The path the command writes: out, or a file in a fresh temporary
    folder (TDSOLVE_TMPDIR, else /dev/shm where writable, else the system's)
    removed afterwards."""
    if out is not None:
        yield os.fspath(out), False
        return
    base = os.environ.get("TDSOLVE_TMPDIR")
    if not base and os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        base = "/dev/shm"
    folder = tempfile.mkdtemp(prefix="tdsolve_", dir=base)
    try:
        yield os.path.join(folder, "result.h5"), True
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _execute(args, inputs, outputs, stopped):
    """Runs the command (its output options given) in this process; raises
    Error, or KeyboardInterrupt saying `stopped` after a Ctrl-C."""
    _need_core()
    args = [*args, "--quiet", "--progress", "none"]
    try:
        code = _core.run(args, inputs, outputs)
    except _core.Error as e:
        raise Error(*e.args) from None
    if code == STOPPED:
        raise KeyboardInterrupt(f"tdsolve {args[0]} stopped ({stopped})")
    if code != 0:
        raise Error(f"tdsolve {args[0]} ended with exit code {code}", code)


def _run(args, inputs, path, overwrite, resume=False):
    extra = ["--resume"] if resume else ["--overwrite"] if overwrite else []
    _execute([*args, "--output", path, *extra], inputs, {}, f"resumable: {path}.partial")


def _call_memory(args, inputs, shape, precision):
    """Runs edm or cross with its values written straight into a new array
    (--output memory:result): no file at all."""
    result = np.empty(shape, dtype=np.float32 if precision == "float32" else np.float64)
    _execute([*args, "--output", "memory:result"], inputs, {"result": result},
             "an in-memory result keeps nothing")
    return result


def _call(args, inputs, out, overwrite, resume, read):
    """Runs the command into out (kept: its reader returned) or into a
    temporary file (read(reader) returned, the file removed)."""
    with _output(out) as (path, temporary):
        _run(args, inputs, path, overwrite or temporary, resume and not temporary)
        if not temporary:
            return _open(path)
        with _open(path) as r:
            return read(r)


def _common(device, precision, threads, block, chunk_mb=None):
    a = ["--backend", device]
    if precision is not None:
        a += ["--precision", precision]
    if chunk_mb is not None:
        a += ["--chunk-mb", _number(chunk_mb)]
    if threads is not None:
        a += ["--threads", str(int(threads))]
    if block is not None:
        a += ["--block", str(int(block))]
    return a


def _metric_args(metric, d, inputs, p=None, w=None, V=None, base=None, VI=None):
    if not isinstance(metric, str):
        raise TypeError("metric must be a name (a callable is not supported: tdsolve computes its own metrics)")
    a = ["--metric", metric]
    if p is not None:
        a += ["--p", "inf" if np.isinf(p) else _number(p)]
    if w is not None:
        inputs["w"] = _vector(w, d, "w")
        a += ["--weights", "memory:w"]
    if V is not None:
        inputs["V"] = _vector(V, d, "V")
        a += ["--variance", "memory:V"]
    if base is not None:
        a += ["--base", _number(base)]
    if VI is not None:
        m = np.ascontiguousarray(np.asarray(VI, dtype=np.float64))
        if m.shape != (d, d):
            raise ValueError(f"VI needs {d} x {d} values, not {m.shape}")
        inputs["VI"] = m
        a += ["--vi", "memory:VI"]
    return a


def pdist(X, metric="euclidean", *, out=None, p=None, w=None, V=None, VI=None, base=None, device="auto",
          precision="float64", threads=None, block=None, chunk_mb=None, overwrite=False, resume=False):
    """The C(n,2) distances of the rows of X in SciPy's condensed order, as
    scipy.spatial.distance.pdist(X, metric, p=, w=, V=, VI=) (tdsolve edm); with
    out="f.h5" the file is kept and its reader (tdsolve.open) returned.
    jaccard on values other than 0/1 is SciPy's before 1.15 (it compares the
    values); SciPy 1.15 casts them to bool first: pass X != 0 for that."""
    X = _points(X)
    inputs = {"X": X}
    args = ["edm", "--input", "memory:X", *_metric_args(metric, X.shape[1], inputs, p, w, V, base, VI),
            *_common(device, precision, threads, block, chunk_mb)]
    if out is None:
        n = X.shape[0]
        return _call_memory(args, inputs, (n * (n - 1) // 2,), precision)
    return _call(args, inputs, out, overwrite, resume, lambda r: r[:])


def cdist(XA, XB, metric="euclidean", *, out=None, p=None, w=None, V=None, VI=None, base=None, device="auto",
          precision="float64", threads=None, block=None, chunk_mb=None, overwrite=False, resume=False):
    """The len(XA) x len(XB) distances, as scipy.spatial.distance.cdist
    (tdsolve cross); out="f.h5" keeps the file and returns its reader."""
    XA, XB = _points(XA, "XA"), _points(XB, "XB")
    if XA.shape[1] != XB.shape[1]:
        raise ValueError(f"XA and XB need the same number of columns ({XA.shape[1]} against {XB.shape[1]})")
    inputs = {"XA": XA, "XB": XB}
    args = ["cross", "--input", "memory:XA", "--with", "memory:XB",
            *_metric_args(metric, XA.shape[1], inputs, p, w, V, base, VI),
            *_common(device, precision, threads, block, chunk_mb)]
    if out is None:
        return _call_memory(args, inputs, (XA.shape[0], XB.shape[0]), precision)
    return _call(args, inputs, out, overwrite, resume, lambda r: r.matrix())


def _box_args(box, tilt):
    a = []
    if box is not None:
        a += ["--box", ",".join(_number(x) for x in np.atleast_1d(box))]
    if tilt is not None:
        a += ["--tilt", ",".join(_number(x) for x in np.atleast_1d(tilt))]
    return a


def hist(X, bins, range, *, with_=None, metric="euclidean", box=None, tilt=None, out=None, cull="auto",
         device="auto", precision="float64", threads=None, block=None, overwrite=False, resume=False):
    """The histogram of all C(n,2) pair distances over `bins` equal bins of
    range=(lo, hi): (counts, edges) as numpy.histogram(pdist(X), bins, range)
    (tdsolve hist; counts int64, each unordered pair once). with_=Y: the
    distances of every row of X to every row of Y instead, as
    numpy.histogram(cdist(X, Y), bins, range). With box (and tilt) the
    distances are minimum-image and the result is (counts, edges, rdf), rdf
    normalised as MDAnalysis InterRDF (InterRDF(X, Y) with with_). out="f.h5"
    keeps the file and returns its reader."""
    X = _points(X)
    inputs = {"X": X}
    lo, hi = range
    second = []
    if with_ is not None:
        Y = _points(with_, "with_")
        if Y.shape[1] != X.shape[1]:
            raise ValueError(f"X and with_ need the same number of columns ({X.shape[1]} against {Y.shape[1]})")
        inputs["Y"] = Y
        second = ["--with", "memory:Y"]
    args = ["hist", "--input", "memory:X", *second, "--bins", str(int(bins)), "--range",
            f"{_number(lo)}:{_number(hi)}", "--metric", metric, "--cull", cull, *_box_args(box, tilt),
            *_common(device, precision, threads, block)]
    read = (lambda r: (r.counts, r.edges, r.rdf)) if box is not None else (lambda r: (r.counts, r.edges))
    return _call(args, inputs, out, overwrite, resume, read)


def knn(X, k=None, *, radius=None, metric="euclidean", p=None, w=None, box=None, tilt=None, out=None, cull="auto",
        device="auto", precision="float64", threads=None, block=None, overwrite=False, resume=False):
    """k: the k nearest other points of each row of X, (distances, indices)
    (n x k, nearest first, ties to the smaller index), as scikit-learn's
    brute-force NearestNeighbors(n_neighbors=k).kneighbors() without the
    point itself. radius: every pair i < j within radius, (pairs, distances)
    (m x 2 int64 sorted, and m values), as cKDTree(X).query_pairs(radius).
    (tdsolve knn.) out="f.h5" keeps the file and returns its reader."""
    X = _points(X)
    if (k is None) == (radius is None):
        raise ValueError("give k or radius (one of them)")
    inputs = {"X": X}
    what = ["--k", str(int(k))] if k is not None else ["--radius", _number(radius)]
    args = ["knn", "--input", "memory:X", *what, *_metric_args(metric, X.shape[1], inputs, p, w),
            "--cull", cull, *_box_args(box, tilt), *_common(device, precision, threads, block)]
    read = (lambda r: (r.distances, r.indices)) if k is not None else (lambda r: (r.pairs, r.distances))
    return _call(args, inputs, out, overwrite, resume, read)


def collide(centres, radii, *, box=None, tilt=None, out=None, cull="auto", device="auto", threads=None, block=None,
            overwrite=False, resume=False):
    """Every pair i < j of spheres (centres n x 1 or n x 3, radii n, > 0)
    that overlap, |c_i - c_j| < r_i + r_j in float64: (pairs, distances)
    (m x 2 int64 sorted, the centres' distances) (tdsolve collide). out=
    keeps the file and returns its reader."""
    c = _points(centres, "centres")
    r = np.asarray(radii, dtype=np.float64).reshape(-1)
    if len(r) != len(c):
        raise ValueError(f"{len(c)} centres but {len(r)} radii")
    S = np.ascontiguousarray(np.column_stack([c, r]))
    # collide computes in float64 whatever: no --precision
    args = ["collide", "--input", "memory:S", "--cull", cull, *_box_args(box, tilt),
            *_common(device, None, threads, block)]
    return _call(args, {"S": S}, out, overwrite, resume, lambda r: (r.pairs, r.distances))


def atm(X, nu=1.0, *, cutoff=None, cutoff_triple=None, box=None, tilt=None, out=None, cull="auto", device="auto",
        precision="float64", threads=None, block=None, overwrite=False, resume=False):
    """The Axilrod-Teller-Muto energy of all triplets of the rows of X (n x
    3), as LAMMPS pair_style atm (cutoff, cutoff_triple: its two cutoffs):
    (energy, energy_per_point, forces), float64, the same bytes on any rank
    count (tdsolve triplet). out= keeps the file and returns its reader."""
    X = _points(X)
    args = ["triplet", "--input", "memory:X", "--potential", "atm", "--nu", _number(nu), "--cull", cull,
            *_box_args(box, tilt), *_common(device, precision, threads, block)]
    if cutoff is not None:
        args += ["--cutoff", _number(cutoff)]
    if cutoff_triple is not None:
        args += ["--cutoff-triple", _number(cutoff_triple)]
    return _call(args, {"X": X}, out, overwrite, resume, lambda r: (r.energy, r.energy_per_point, r.forces))


class NearestNeighbors:
    """scikit-learn's NearestNeighbors, brute force, on tdsolve knn:
    fit(X), kneighbors(n_neighbors=None, return_distance=True) and
    radius_neighbors(radius=None, return_distance=True, sort_results=False)
    for the fitted points themselves (X=None, the point itself left out, as
    scikit-learn does without X). Results are scikit-learn's: (distances,
    indices) arrays, or per-point arrays of objects for radius_neighbors.
    Keyword arguments (metric, p, device, precision, ...) go to knn()."""

    def __init__(self, n_neighbors=5, radius=1.0, *, metric="euclidean", p=None, **options):
        self.n_neighbors, self.radius, self.metric, self.p = n_neighbors, radius, metric, p
        self.options = options
        self._X = None

    def fit(self, X, y=None):
        self._X = _points(X)
        return self

    def _fitted(self, X):
        if self._X is None:
            raise ValueError("call fit(X) first")
        if X is not None:
            raise NotImplementedError("tdsolve answers for the fitted points themselves (X=None): "
                                      "for other query points use tdsolve.cdist")
        return self._X

    def kneighbors(self, X=None, n_neighbors=None, return_distance=True):
        pts = self._fitted(X)
        dist, ind = knn(pts, n_neighbors or self.n_neighbors, metric=self.metric, p=self.p, **self.options)
        return (dist, ind) if return_distance else ind

    def radius_neighbors(self, X=None, radius=None, return_distance=True, sort_results=False):
        pts = self._fitted(X)
        pairs, d = knn(pts, radius=self.radius if radius is None else radius, metric=self.metric, p=self.p,
                       **self.options)
        n = len(pts)
        rows = np.concatenate([pairs[:, 0], pairs[:, 1]])  # each unordered pair once: both points' lists
        cols = np.concatenate([pairs[:, 1], pairs[:, 0]])
        vals = np.concatenate([d, d])
        order = np.lexsort((vals, rows) if sort_results else (cols, rows))
        rows, cols, vals = rows[order], cols[order], vals[order]
        cuts = np.searchsorted(rows, np.arange(1, n))
        ind = np.empty(n, dtype=object)
        dist = np.empty(n, dtype=object)
        for i, (a, b) in enumerate(zip(np.split(cols, cuts), np.split(vals, cuts))):
            ind[i], dist[i] = a, b
        return (dist, ind) if return_distance else ind
