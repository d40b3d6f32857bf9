"""Result objects: EdmResult, CrossResult, HistResult, TripletResult, KnnResult, PairsResult."""
import numbers
import os

import numpy as np

from . import _schema, _verdict
from ._read import RunReader, Unwritten, id_ranges


class IncompleteResult(RuntimeError):
    """The file is not a complete tdsolve result: chunks missing, records
    that disagree, or not a tdsolve result at all (`tdsolve info` exit 3).
    .verdict says which."""

    def __init__(self, message, verdict=None):
        super().__init__(message)
        self.verdict = verdict


class UnreadableResult(OSError):
    """The file cannot be read (`tdsolve info` exit 1): missing, not HDF5,
    truncated, or a record that cannot be read. .verdict has the details."""

    def __init__(self, message, verdict=None):
        super().__init__(message)
        self.verdict = verdict


def pair_index(n, i, j):
    """Position of pair (i, j), i != j, in the condensed vector of n points."""
    i, j = int(i), int(j)
    if i == j or not (0 <= i < n and 0 <= j < n):
        raise IndexError(f"pair ({i}, {j}) is not a pair of distinct points of {n}")
    if i > j:
        i, j = j, i
    return n * i - i * (i + 1) // 2 + j - i - 1


# The largest n whose C(n,3) fits in int64: triplet_index is exact up to it.
_TRIPLET_N_MAX = 3810779


def _comb2(m):
    """C(m,2) of an int64 array m >= 0, exact (m < 2**31)."""
    return m * (m - 1) // 2


def _comb3(m):
    """C(m,3) of an int64 array 0 <= m <= _TRIPLET_N_MAX, exact in int64: C(m,2)
    or m-2 is divided by 3 (one of them is a multiple of it) before they multiply."""
    t = _comb2(m)
    third = t % 3 == 0
    return np.where(third, t // 3, t) * np.where(third, m - 2, (m - 2) // 3)


def _points(x, n, what):
    """An index argument as an int64 array of points of n (IndexError outside 0..n-1)."""
    a = np.asarray(x)
    if a.dtype == bool or a.dtype.kind not in "iuO":
        raise TypeError(f"{what} must be an integer or an integer array, not {a.dtype}")
    if a.dtype.kind == "O":  # Python ints beyond int64
        try:
            a = a.astype(np.int64)
        except (OverflowError, TypeError, ValueError):
            raise IndexError(f"{what} holds values that are not points of {n}") from None
    if a.size and (a.min() < 0 or a.max() >= n):
        raise IndexError(f"{what} holds values that are not points of {n}")
    return a.astype(np.int64, copy=False)


def triplet_index(n, i, j, k):
    """Position of triplet {i, j, k} (three distinct points of n, in any
    order) in the packed vector of C(n,3) triplets, which runs in
    itertools.combinations(range(n), 3) order: for i < j < k,

        C(n,3) - C(n-i,3) + C(n-1-i,2) - C(n-j,2) + (k - j - 1).

    i, j, k may be NumPy integer arrays (broadcast together): the result is
    then an int64 array, else an int. Exact in int64 for every n whose C(n,3)
    fits (n <= 3,810,779; tdsolve triplet stays below 2**62 triplets)."""
    n = _int(n)
    if n < 0:
        raise ValueError(f"n = {n} is not a number of points")
    if n > _TRIPLET_N_MAX:
        raise OverflowError(f"n = {n}: C(n,3) does not fit in int64 (n <= {_TRIPLET_N_MAX})")
    scalar = all(np.ndim(x) == 0 for x in (i, j, k))
    a, b, c = np.broadcast_arrays(_points(i, n, "i"), _points(j, n, "j"), _points(k, n, "k"))
    same = (a == b) | (b == c) | (a == c)
    if np.any(same):
        at = int(np.flatnonzero(same.reshape(-1))[0])
        t = tuple(int(x.reshape(-1)[at]) for x in (a, b, c))
        raise IndexError(f"{t} is not a triplet of distinct points of {n}")
    a, b, c = np.sort(np.stack((a, b, c)), axis=0)
    N = np.full(a.shape, n, dtype=np.int64)
    pos = _comb3(N) - _comb3(N - a) + _comb2(N - 1 - a) - _comb2(N - b) + (c - b - 1)
    return int(pos) if scalar else pos


def _row_start(n, i):
    """Condensed position of pair (i, i+1): i*(2n - i - 1)/2 (arrays too)."""
    return i * (2 * n - i - 1) // 2


def _text(v):
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


# HDF5 dimension scale bookkeeping (H5DS), not a property of the result.
_SCALE_ATTRS = ("DIMENSION_LIST", "REFERENCE_LIST", "CLASS", "NAME", "DIMENSION_LABELS")


def _attrs(obj):
    out = {}
    for k in obj.attrs:
        if k in _SCALE_ATTRS:
            continue
        try:
            v = obj.attrs[k]
        except Exception:  # a type h5py cannot read
            continue
        out[k] = _text(v) if isinstance(v, bytes) else v
    return out


def _one(v):
    """The value of a one-element attribute (scalar or [x]), else None."""
    if v is None:
        return None
    a = np.asarray(v)
    return a.reshape(-1)[0] if a.size == 1 else None


def _int(v):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Integral, np.integer)):
        raise TypeError
    return int(v)


def _range(r, size, what):
    """A range argument (slice with step 1, range, (start, stop), None) as (start, stop)."""
    if r is None:
        return 0, size
    if isinstance(r, range):
        if r.step != 1:
            raise ValueError(f"{what} must be a range with step 1, not {r}")
        r = slice(r.start, r.stop)
    elif isinstance(r, (tuple, list)) and len(r) == 2:
        r = slice(r[0], r[1])
    if not isinstance(r, slice):
        raise TypeError(f"{what} must be a range: a slice (a:b), range(a, b) or (a, b), not {r!r}")
    a, b, step = r.indices(size)
    if step != 1:
        raise ValueError(f"{what} must be a range with step 1 (use r[...] for steps)")
    return a, max(a, b)


def _axis(key, size):
    """One axis of an index: ("int", i) | ("slice", start, count, step) |
    ("array", positions (int64, any shape))."""
    if key is None:
        raise TypeError("None (numpy.newaxis) is not supported")
    try:
        i = _int(key)
    except TypeError:
        pass
    else:
        if not -size <= i < size:
            raise IndexError(f"index {i} is out of bounds for size {size}")
        return ("int", i % size)
    if isinstance(key, slice):
        start, stop, step = key.indices(size)
        return ("slice", start, len(range(start, stop, step)), step)
    a = np.asarray(key)
    if a.dtype == bool:
        if a.shape != (size,):
            raise IndexError(f"boolean index of shape {a.shape} does not match size {size}")
        return ("array", np.flatnonzero(a))
    if a.size == 0:
        return ("array", a.astype(np.int64))
    if a.dtype.kind not in "iu":
        raise IndexError(f"arrays used as indices must be of integer or boolean type, not {a.dtype}")
    a = a.astype(np.int64)
    if a.min() < -size or a.max() >= size:
        raise IndexError(f"index out of bounds for size {size}")
    return ("array", np.where(a < 0, a + size, a))


def _split_key(key, ndim):
    """A NumPy index as a list of ndim per-axis keys."""
    if not isinstance(key, tuple):
        key = (key,)
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if any(k is Ellipsis for k in key):
        e = next(i for i, k in enumerate(key) if k is Ellipsis)
        fill = ndim - (len(key) - 1)
        key = key[:e] + (slice(None),) * max(fill, 0) + key[e + 1:]
    if len(key) > ndim:
        raise IndexError(f"too many indices: the result is {ndim}-D")
    return list(key) + [slice(None)] * (ndim - len(key))


def _packed_getitem(rr, N, key):
    """NumPy indexing of a packed 1-D vector of N values (edm's condensed
    distances, the triplet energies), through contiguous reads of rr."""
    (k,) = _split_key(key, 1)
    ax = _axis(k, N)
    if ax[0] == "int":
        return rr.contiguous(ax[1], ax[1] + 1)[0]
    if ax[0] == "slice":
        _, start, count, step = ax
        if count == 0:
            return np.empty(0, dtype=rr.dtype)
        if step == 1:
            return rr.contiguous(start, start + count)
        if step > 0:
            return rr.strided(start, count, step)
        first = start + (count - 1) * step  # the lowest position
        return rr.strided(first, count, -step)[::-1].copy()
    idx = ax[1]
    if idx.size == 0:
        return np.empty(idx.shape, dtype=rr.dtype)
    u, inv = np.unique(idx.reshape(-1), return_inverse=True)
    starts, lengths = _runs_of(u)
    buf, offs = rr.runs(starts, lengths)  # disjoint sorted runs: buf holds u in order
    return buf[inv].reshape(idx.shape)


def _chunk_ranges(verdict, done_only):
    """(start, end) of each chunk of the file, in order, in flattened
    elements; with done_only only the chunks flagged done."""
    done, off = verdict._done, verdict._offsets
    for c in range(len(done)):
        if done_only and done[c] != 1:
            continue
        yield int(off[c]), int(off[c + 1])


def _runs_of(sorted_unique):
    """Runs of consecutive values of a sorted unique int64 array: (starts, lengths)."""
    if len(sorted_unique) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    brk = np.flatnonzero(np.diff(sorted_unique) != 1) + 1
    first = np.concatenate(([0], brk))
    last = np.concatenate((brk, [len(sorted_unique)]))
    return sorted_unique[first], last - first


def _key_positions(key, shape):
    """The row and column positions (output order, int64) that NumPy index
    `key` of a 2-D array of `shape` selects (h5py's rules: arrays per axis)."""
    kr, kc = _split_key(key, 2)
    return _positions(_axis(kr, int(shape[0])))[0], _positions(_axis(kc, int(shape[1])))[0]


def _check_rows(u, rows, width):
    """Raises u's error if any of `rows` (of `width` values each) is unwritten (integer results)."""
    rows = np.asarray(rows, dtype=np.int64).reshape(-1)
    u.check(rows * width, np.full(len(rows), width, dtype=np.int64))


def _mask_2d(u, out, rows, cols, width):
    """out: the values of a 2-D dataset of `width` columns at rows x cols
    (positions in output order; out flattens rows-major, as h5py and
    _getitem_2d return them; a scalar for one value): NaN where u says
    unwritten. Returns out so masked (a scalar stays one)."""
    rows = np.asarray(rows, dtype=np.int64).reshape(-1)
    cols = np.asarray(cols, dtype=np.int64).reshape(-1)
    scalar = np.ndim(out) == 0
    a = np.array(out, ndmin=1) if scalar or not out.flags.c_contiguous else out
    flat = a.reshape(-1)
    if len(rows) and len(cols):
        w = len(cols)
        if cols[-1] - cols[0] == w - 1 and np.array_equal(cols, cols[0] + np.arange(w)):  # a run per row
            if w == width and rows[-1] - rows[0] == len(rows) - 1 and np.array_equal(rows, rows[0] + np.arange(
                    len(rows))):  # whole rows in order: one run
                u.apply(flat, [rows[0] * width], [len(rows) * width], [0])
            else:
                u.apply(flat, rows * width + cols[0], np.full(len(rows), w, dtype=np.int64),
                        np.arange(len(rows), dtype=np.int64) * w)
        else:
            hit, chunks = u.hits((rows[:, None] * width + cols[None, :]).reshape(-1))
            if np.any(hit):
                if flat.dtype.kind not in "fc":
                    raise u.error(chunks)
                flat[hit] = np.nan
    return a.reshape(-1)[0] if scalar else a


class Result:
    """An open tdsolve result file; made by tdsolve.open().

    Common: kind ("edm", "cross", "hist", "triplet"), path (the file read), verdict
    (tdsolve.Verdict), complete, status(), chunks, chunks_done, metric,
    precision, features, dtype, attrs (the result dataset's attributes),
    file_attrs (the root's: command, version, input, ...), shape, len(),
    r[...], close() (or use `with`).

    An incomplete file (opened with require_complete=False) holds values
    only in the chunks it flags done; no accessor returns the others as if
    they were values: floating-point values of a chunk not flagged done read
    as NaN (edm, cross, knn's distances, triplet energies), integer ones
    raise IncompleteResult naming the chunks and rows missing (knn's
    indices, fractal states) while reads inside done chunks work, and what
    is written only when every chunk is done (hist counts, radius and
    collide pairs, triplet sums) raises IncompleteResult. A complete file
    reads as it is."""

    kind = None
    _dataset = None

    def __init__(self, f, verdict, access="auto"):
        if access not in ("auto", "mmap", "hdf5"):
            raise ValueError(f"access must be 'auto', 'mmap' or 'hdf5', not {access!r}")
        self._f = f
        self.verdict = verdict
        self.path = verdict.file
        self.access = access
        d = f[verdict.dataset]
        self._d = d
        self.attrs = _attrs(d)
        self.file_attrs = _attrs(f)
        a = self.attrs
        self.metric = _text(a["metric"]) if "metric" in a else None
        self.precision = _text(a["precision"]) if "precision" in a else None
        features = _one(a.get("features"))
        self.features = int(features) if features is not None else None
        self.dtype = d.dtype
        self.chunks, self.chunks_done = verdict.chunks, verdict.chunks_done
        self._reader = None
        # What an incomplete file has not written (None for a complete file: reads as they always were).
        self._unwritten = None if verdict.complete else self._find_unwritten()
        if access == "mmap" and self.kind not in ("hist", "triplet"):
            self._runs()  # says now if the file cannot be mapped

    # --- status ------------------------------------------------------------

    @property
    def complete(self):
        return self.verdict.status == _verdict.COMPLETE

    @property
    def problem(self):
        """Why the records disagree (inconsistent files), else None."""
        v = self.verdict
        return v.message.split(": ", 1)[1] if v.status == _verdict.INCONSISTENT else None

    def status(self):
        return self.verdict.message

    def done_chunks(self):
        """[(first, last) flat offsets of each chunk flagged done]."""
        return list(_chunk_ranges(self.verdict, True))

    # --- what an incomplete file has not written --------------------------------

    def _find_unwritten(self):
        """The flat ranges of the result dataset in chunks not flagged done
        (an Unwritten), None when there are none."""
        done, off = self.verdict._done, self.verdict._offsets
        if done is None or off is None:
            return None
        bad = np.flatnonzero(np.asarray(done) != 1)
        if len(bad) == 0:
            return None
        off = np.asarray(off).astype(np.int64)
        starts, ends = off[bad], off[bad + 1]
        keep = ends > starts
        if not np.any(keep):
            return None
        return Unwritten(starts[keep], ends[keep], bad[keep], self._unwritten_error)

    def _unwritten_what(self, chunks):
        off = self.verdict._offsets
        spans = ", ".join(f"{int(off[c])}..{int(off[c + 1]) - 1}" for c in chunks[:4])
        return f"flat positions {spans}{', ...' if len(chunks) > 4 else ''} of {self._d.name} are"

    def _unwritten_error(self, chunks):
        """The IncompleteResult for a read that meets chunks not flagged done."""
        chunks = np.unique(np.asarray(chunks, dtype=np.int64))
        return IncompleteResult(
            f"{self.path}: {self._unwritten_what(chunks)} not written yet: chunk{'s' if len(chunks) > 1 else ''} "
            f"{id_ranges(chunks)} of {self.chunks} not flagged done ({self.verdict.message}); reads inside the "
            "chunks flagged done (done_chunks()) work", self.verdict)

    def _all_done(self):
        """Every chunk flagged done (a complete file, or a .partial whose run
        stopped before its rename)."""
        done = self.verdict._done
        return self.complete or (done is not None and bool(np.all(np.asarray(done) == 1)))

    def _needs_all_done(self, what, why):
        if not self._all_done():
            raise IncompleteResult(f"{self.path}: {what} {why}, and this file is not complete: "
                                   f"{self.chunks - self.chunks_done} of {self.chunks} chunks are not flagged "
                                   f"done ({self.verdict.message})", self.verdict)

    # --- shape and [] --------------------------------------------------------

    @property
    def shape(self):
        return tuple(int(s) for s in self._d.shape)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self):
        return self.shape[0]

    def _runs(self):
        if self._reader is None:
            self._reader = RunReader(self._d, self.access, self._unwritten)
        return self._reader

    def __getitem__(self, key):
        return self._d[key]

    # --- wrong kind: a TypeError that says what to use -----------------------

    _hints = {"edm": "r[...], rows(), block(), square(), pair(), iter_chunks()",
              "cross": "r[...], rows(), block(), matrix(), iter_chunks()",
              "hist": "counts, edges, r, underflow, overflow, rdf, cumulative, pair, partial(), r[...] (the counts)",
              "adf": "counts, theta, edges, pdf, cumulative, centres, dropped, triple, adf(), r[...] (the counts)",
              "triplet": "energy, energy_per_point, forces; with --store-triplets also r[...], triplet(), "
                         "triplet_energies(), iter_chunks()",
              "fractal": "state(i), steps, live, image(i), save_png(), lambda_map(), nu_map(), iter_chunks()",
              "knn": "indices, distances, rows(), row(), r[...], iter_chunks()",
              "radius": "pairs, distances, count, r[...], to_sparse(), iter_chunks()",
              "collide": "pairs, distances, count, dim, r[...], to_sparse(), iter_chunks()"}

    def _wrong(self, what, kinds):
        raise TypeError(f"{self.path}: {what} is for tdsolve {' and '.join(kinds)} results; this is a {self.kind} "
                        f"result (use {self._hints[self.kind]})")

    def condensed(self):
        self._wrong("condensed()", ["edm"])

    def square(self, max_bytes=None):
        self._wrong("square()", ["edm"])

    def pair(self, i, j):
        self._wrong("pair()", ["edm"])

    def row(self, i):
        self._wrong("row()", ["edm", "knn"])

    def rows(self, i0, i1):
        self._wrong("rows()", ["edm", "cross", "knn"])

    def block(self, I, J):  # noqa: E741
        self._wrong("block()", ["edm", "cross"])

    def iter_chunks(self, done_only=True):
        self._wrong("iter_chunks()", ["edm", "cross", "triplet", "fractal", "knn", "radius", "collide"])

    def matrix(self):
        self._wrong("matrix()", ["cross"])

    # --- life ---------------------------------------------------------------

    def close(self):
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._f is not None:
            self._f.close()
            self._f = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            if self._reader is not None:
                self._reader.close()
        except Exception:
            pass

    def _describe(self):
        return ""

    def __repr__(self):
        state = "closed" if self._f is None else self.verdict.status
        return f"<tdsolve {self.kind} result {self.path!r}: {self._describe()}, {state}>"


class EdmResult(Result):
    """`tdsolve edm`: the C(n,2) distances of n points, condensed.

    n: the number of points; shape == (C(n,2),); r[...] indexes the condensed
    vector (ints, slices with any step, integer or boolean arrays; always
    through contiguous reads). rows(i0, i1), block(I, J), square() and
    pair(i, j) read the n x n matrix (zero diagonal); iter_chunks() walks the
    file's chunks.

    In an incomplete file every value of a chunk not flagged done reads as
    NaN, in every accessor: r[...], condensed(), pair(), row(), rows(),
    block() and square() (both D[i, j] and its mirror D[j, i]; the diagonal
    stays 0) and iter_chunks(done_only=False)."""

    kind = "edm"

    def __init__(self, f, verdict, access="auto"):
        super().__init__(f, verdict, access)
        n = _one(self.attrs.get("n"))
        if n is None:
            raise IncompleteResult(f"{self.path}: /distances has no single `n` attribute", verdict)
        self.n = int(n)

    def _describe(self):
        return f"n={self.n}, {self.metric} {self.precision}"

    @property
    def shape(self):
        return (int(self._d.shape[0]),) if self._d.ndim == 1 else tuple(self._d.shape)

    # --- the condensed vector -------------------------------------------------

    def __getitem__(self, key):
        return _packed_getitem(self._runs(), self.shape[0], key)

    def condensed(self):
        """All C(n,2) values in SciPy's condensed order (as pdist)."""
        return self[:]

    def pair(self, i, j):
        """Distance between points i and j (0 when i == j; NaN when its chunk is not written yet)."""
        i, j = int(i), int(j)
        if i == j:
            if not 0 <= i < self.n:
                raise IndexError(f"point {i} is not one of {self.n}")
            return self.dtype.type(0)
        return self[pair_index(self.n, i, j)]

    # --- the square matrix ------------------------------------------------------

    def block(self, I, J):  # noqa: E741
        """Rows I x columns J of the n x n matrix (zero diagonal); I and J are
        ranges: a:b slices, range(a, b) or (a, b). Reads each needed value once,
        in contiguous runs. In an incomplete file a pair whose chunk is not
        written yet is NaN at both (i, j) and (j, i)."""
        n = self.n
        i0, i1 = _range(I, n, "I")
        j0, j1 = _range(J, n, "J")
        h, w = i1 - i0, j1 - j0
        rr = self._runs()
        out = np.zeros((h, w), dtype=rr.dtype)
        if h == 0 or w == 0:
            return out
        # Upper part, j > i: row i's pairs (i, js..j1-1) are one run.
        ii = np.arange(i0, i1, dtype=np.int64)
        js = np.maximum(j0, ii + 1)
        ul = np.maximum(j1 - js, 0)
        us = _row_start(n, ii) + (js - ii - 1)
        # Lower part, j < i: D[i, j] = D[j, i], and pairs (j, is..i1-1) of row j are one run.
        jj = np.arange(j0, j1, dtype=np.int64)
        is_ = np.maximum(i0, jj + 1)
        ll = np.maximum(i1 - is_, 0)
        ls = _row_start(n, jj) + (is_ - jj - 1)
        buf, offs = rr.runs(np.concatenate((us, ls)), np.concatenate((ul, ll)))
        uo, lo = offs[:h], offs[h:]
        _scatter(out, buf, rows=ii - i0, first=js - j0, offs=uo, lengths=ul, along=1)
        _scatter(out.T, buf, rows=jj - j0, first=is_ - i0, offs=lo, lengths=ll, along=1)
        return out

    def rows(self, i0, i1):
        """Rows i0..i1-1 of the n x n matrix: an (i1-i0) x n array (zeros at (i, i))."""
        return self.block(slice(i0, i1), slice(0, self.n))

    def row(self, i):
        """Distances from point i to every point (n values, 0 at i)."""
        i = int(i)
        if not 0 <= i < self.n:
            raise IndexError(f"point {i} is not one of {self.n}")
        return self.rows(i, i + 1)[0]

    def square(self, max_bytes=1 << 30):
        """The n x n matrix, as scipy.spatial.distance.squareform(r[:]).

        Refused when it would take more than max_bytes (1 GiB unless you say
        otherwise; None: no limit): read parts with rows(), block() or
        iter_chunks() instead."""
        n = self.n
        need = n * n * np.dtype(self.dtype).itemsize
        if max_bytes is not None and need > max_bytes:
            raise ValueError(f"{self.path}: square() of n = {n} points would allocate {_size(need)} "
                             f"(n x n {np.dtype(self.dtype).name}), more than max_bytes = {_size(max_bytes)}; "
                             "pass square(max_bytes=None) (or a larger limit) if you mean it, or read parts "
                             "with rows(i0, i1), block(I, J) or iter_chunks()")
        try:
            from scipy.spatial.distance import squareform
        except ImportError:
            return self.block(slice(0, n), slice(0, n))
        return squareform(self[:], checks=False)

    # --- chunks -------------------------------------------------------------------

    def iter_chunks(self, done_only=True):
        """Yields (offset, values) for each chunk of the file, in order:
        values = r[offset:offset + len(values)] (condensed positions). With
        done_only (the default) only chunks flagged done (all, in a complete
        file); with done_only=False also the others, all NaN."""
        rr = self._runs()
        for a, b in _chunk_ranges(self.verdict, done_only):
            yield a, rr.contiguous(a, b)


class CrossResult(Result):
    """`tdsolve cross`: the M x K matrix of distances between two point sets.

    shape == (M, K); n is None; r[...] indexes the matrix (ints, slices with
    any step, integer or boolean arrays per axis); rows(i0, i1), block(I, J),
    matrix(), iter_chunks().

    In an incomplete file every value of a chunk not flagged done reads as
    NaN, in every accessor (r[...], rows(), block(), matrix(),
    iter_chunks(done_only=False))."""

    kind = "cross"
    n = None

    def _describe(self):
        return f"{self.shape[0]} x {self.shape[1]}, {self.metric} {self.precision}"

    def _masked(self, out, rows, cols):
        """out (rows x cols of the matrix) with NaN where the file has not written them."""
        if self._unwritten is None:
            return out
        return _mask_2d(self._unwritten, out, rows, cols, self.shape[1])

    def __getitem__(self, key):
        out = _getitem_2d(self._d, key)
        if self._unwritten is None:
            return out
        return self._masked(out, *_key_positions(key, self.shape))

    def rows(self, i0, i1):
        """Rows i0..i1-1: an (i1-i0) x K array."""
        a, b = _range(slice(i0, i1), self.shape[0], "rows")
        return self._masked(self._d[a:b], np.arange(a, b), np.arange(self.shape[1]))

    def block(self, I, J):  # noqa: E741
        """Rows I x columns J (ranges: a:b, range(a, b) or (a, b))."""
        i0, i1 = _range(I, self.shape[0], "I")
        j0, j1 = _range(J, self.shape[1], "J")
        return self._masked(self._d[i0:i1, j0:j1], np.arange(i0, i1), np.arange(j0, j1))

    def matrix(self):
        """The whole M x K matrix, as scipy.spatial.distance.cdist(A, B)."""
        return self._masked(self._d[()], np.arange(self.shape[0]), np.arange(self.shape[1]))

    def iter_chunks(self, done_only=True):
        """Yields (first_row, values) for each chunk of the file, in order:
        values = r[first_row:first_row + len(values)], whole rows. With
        done_only (the default) only chunks flagged done; with
        done_only=False also the others, all NaN."""
        K = self.shape[1]
        rr = self._runs()
        for a, b in _chunk_ranges(self.verdict, done_only):
            yield a // K, rr.contiguous(a, b).reshape(-1, K)


class _Histogram(Result):
    """What hist and adf files share: /counts, read only when every chunk
    is done (the counts of a stopped run cover the chunks it flags done),
    r[...] indexing them, label lists, the frames of a run over frames."""

    _unit = "pairs"  # what the chunks' offsets count

    def _find_unwritten(self):
        return None  # the offsets count the domain's elements, not bins: what is not written yet is the whole count

    def _counted(self, what):
        self._needs_all_done(what, f"covers only the {self._unit} of the chunks flagged done until every chunk is")

    def __getitem__(self, key):
        self._counted("/counts")
        return self._d[key]

    def _strings(self, name):
        if name not in self._f:
            return None
        return [_text(v) for v in np.asarray(self._f[name][()], dtype=object).reshape(-1)]

    @property
    def frames(self):
        """int64[F]: the trajectory frames a --frames run took, in order
        (its counts are their sum); None for a run of one point set."""
        return self._f["frames"][()] if "frames" in self._f else None


class HistResult(_Histogram):
    """`tdsolve hist`: pair counts per bin.

    n: the number of points (of --input); with_n: a `hist --with` run's
    points of the second set, else None; counts, edges (as numpy.histogram), r (the bin
    centres), underflow, overflow, rdf (None where the file has none),
    norm, volume, cumulative, bins, range, pairs, binning, box (its
    lengths), tilt (a triclinic cell's xy, xz, yz, else None), frames (a
    `hist --frames` run's frames, else None); shape == counts' shape, r[...]
    indexes the counts.

    Counts are of UNORDERED pairs: each pair i < j once, a pair of one type
    (or of a run without types) counted once. MDAnalysis InterRDF's `count`
    counts ordered pairs: 2 × counts for one group with itself (or a run
    without types), counts for two different types. /cumulative and /rdf are
    of the ordered counts (docs/output.md, "tdsolve hist").

    A run with --types (groups is then G, the type pairs) holds one
    histogram per type pair: counts, rdf and cumulative are G × bins,
    underflow and overflow int64[G]; pair names the rows ("A-B"), types,
    type_sizes, pair_total say what they count, partial("A-B") picks one.
    Without types pair, types, type_sizes and pair_total are None, groups 0.
    pairs = frames × (C(n,2) − excluded) without types, frames ×
    sum(pair_total) with them, n × with_n with --with (each pair of a point
    of --input and one of --with once, as InterRDF(A, B)'s count); excluded: the unordered pairs a frame that the
    run's exclusions (--exclude-block, --exclude) left out, exclude the rule.

    A stopped run's counts cover only the chunks it flags done: in an
    incomplete file counts, underflow, overflow, rdf, cumulative, partial()
    and r[...] raise IncompleteResult (edges, r, the type records and the
    attributes read as always)."""

    kind = "hist"

    def __init__(self, f, verdict, access="auto"):
        super().__init__(f, verdict, access)
        a = self.attrs

        def scalar(name, conv, default=None):
            v = _one(a.get(name))
            return conv(v) if v is not None else default

        self.n = scalar("n", int)
        self.with_n = scalar("with_n", int)
        self.groups = scalar("groups", int, 0)
        self.bins = scalar("bins", int, int(self._d.shape[-1]) if self._d.ndim in (1, 2) else None)
        lo, hi = scalar("range_lo", float), scalar("range_hi", float)
        self.range = (lo, hi) if lo is not None and hi is not None else None
        self.pairs = scalar("pairs", int)
        self.excluded = scalar("excluded", int, 0)
        self.exclude = _text(a["exclude"]) if "exclude" in a else None
        self.type_source = _text(a["type_source"]) if "type_source" in a else None
        self.binning = _text(a["binning"]) if "binning" in a else None
        self.box = tuple(float(s) for s in _text(a["box"]).split(",")) if "box" in a else None
        self.tilt = tuple(float(s) for s in _text(a["tilt"]).split(",")) if "tilt" in a else None

    def _describe(self):
        lo, hi = self.range or (None, None)
        grouped = f", {self.groups} type pairs" if self.groups else ""
        grouped += f", with {self.with_n} points" if self.with_n is not None else ""
        return f"n={self.n}, {self.bins} bins over [{lo}, {hi}]{grouped}, {self.metric} {self.precision}"

    @property
    def counts(self):
        """int64[bins] (with --types int64[groups, bins], a row per type pair
        of `pair`): unordered pairs per bin, as numpy.histogram(values, bins,
        range)[0] of the pairs' distances (of a trajectory's frames: their
        sum)."""
        self._counted("/counts")
        return self._d[()]

    @property
    def edges(self):
        """float64[bins+1] = numpy.linspace(lo, hi, bins+1)."""
        return self._f["edges"][()]

    @property
    def r(self):
        """float64[bins]: the bin centres 0.5·(edges[:-1] + edges[1:]): /r,
        the coordinate of the files' "r" axis, or computed from the edges in
        files written before /r was."""
        if "r" in self._f:
            return self._f["r"][()]
        e = self.edges
        return 0.5 * (e[:-1] + e[1:])

    def _flow(self, name):
        self._counted("/" + name)
        v = self._f[name][()]
        return int(v) if np.ndim(v) == 0 else v

    @property
    def underflow(self):
        """Pairs whose distance is below range[0] (with --types int64[groups], a value per type pair)."""
        return self._flow("underflow")

    @property
    def overflow(self):
        """Pairs whose distance is above range[1] (with --types int64[groups], a value per type pair)."""
        return self._flow("overflow")

    @property
    def rdf(self):
        """float64[bins] (with --types [groups, bins]): the radial
        distribution function of the ordered counts, normalised as `norm`
        says (with --box; without one with --norm density or none), else
        None."""
        if "rdf" not in self._f:
            return None
        self._counted("/rdf")
        return self._f["rdf"][()]

    @property
    def norm(self):
        """How /rdf is normalised (its `norm` attribute, MDAnalysis InterRDF's
        norm): "rdf" (also in files written before it was recorded),
        "density" or "none"; None where the file has no /rdf."""
        if "rdf" not in self._f:
            return None
        v = _one(self._f["rdf"].attrs.get("norm"))
        return _text(v) if v is not None else "rdf"

    @property
    def volume(self):
        """The box volume L1*...*Ld (a triclinic cell's lx*ly*lz) /rdf was normalised with (a --frames
        run whose cells differ, an NPT run's: their mean volume), else None."""
        if "rdf" not in self._f:
            return None
        v = _one(self._f["rdf"].attrs.get("volume"))
        return float(v) if v is not None else None

    @property
    def cumulative(self):
        """float64[bins] (with --types [groups, bins]): the cumulative sum
        over bins of the ORDERED pair counts, divided by the number of frames
        F (1 without --frames); ordered = 2 × counts for a pair of one type or
        a run without types, counts for two types. None in files without it
        (written by a complete run, files of schema_version 3 on)."""
        if "cumulative" not in self._f:
            return None
        self._counted("/cumulative")
        return self._f["cumulative"][()]

    # --- type pairs (hist --types) ---------------------------------------------

    @property
    def pair(self):
        """[str]: the names of the type pairs, "A-B", a name per row of
        counts (/pair, the coordinate of the "pair" axis); None without --types."""
        return self._strings("pair")

    @property
    def types(self):
        """[str]: the type labels of a --types run (/types); None without."""
        return self._strings("types")

    @property
    def type_sizes(self):
        """int64[types]: the atoms of each type (/type_sizes); None without --types."""
        return self._f["type_sizes"][()] if "type_sizes" in self._f else None

    @property
    def pair_total(self):
        """int64[groups]: the unordered pairs a frame of each type pair that
        were counted, C(nA,2) or nA·nB less the excluded (/pair_total): a row
        of counts + its underflow + overflow add up to frames × this; None
        without --types."""
        return self._f["pair_total"][()] if "pair_total" in self._f else None

    def _split(self, name, types):
        """The (A, B) types of pair name "A-B" (labels may hold "-": the split where both sides are types)."""
        for i, c in enumerate(name):
            if c == "-" and name[:i] in types and name[i + 1:] in types:
                return name[:i], name[i + 1:]
        return None

    def pair_index(self, name):
        """The row of counts of type pair `name`, "A-B" or "B-A"; KeyError
        naming the pairs when the file has no such pair, TypeError in a file
        without types."""
        names = self.pair
        if names is None:
            raise TypeError(f"{self.path}: partial() is for files of hist --types; this one holds one histogram "
                            "(use counts, rdf, cumulative)")
        if not isinstance(name, str):
            raise TypeError(f"a pair name is a string \"A-B\", not {type(name).__name__}")
        if name in names:
            return names.index(name)
        types = set(self.types or ())
        want = self._split(name, types)
        if want is not None:
            for g, p in enumerate(names):
                have = self._split(p, types)
                if have is not None and (have == want or have == want[::-1]):
                    return g
        raise KeyError(f"{self.path}: no type pair {name!r}; the file's pairs are {', '.join(names)}")

    def partial(self, name):
        """(counts, rdf, cumulative) of type pair `name` ("A-B" or "B-A"): its
        row of each (rdf and cumulative None where the file has none).
        counts are unordered pairs (for A = B each pair once; MDAnalysis
        InterRDF_s's count for a pair of one type is 2 × counts)."""
        g = self.pair_index(name)
        self._counted("/counts")
        rdf = self.rdf
        cumulative = self.cumulative
        return (self._d[g], None if rdf is None else rdf[g], None if cumulative is None else cumulative[g])


class AdfResult(_Histogram):
    """`tdsolve adf`: angle distributions, as LAMMPS compute adf.

    n: the number of points; counts (int64[bins], or [adfs, bins] with
    --triples: a row per ADF of `triple`), theta (the bin centres in the
    ordinate's unit, LAMMPS's first column), edges, pdf and cumulative
    (LAMMPS's two columns per ADF), centres (the centre atoms counted, over
    the frames), dropped (angles LAMMPS does not bin: theta = pi, cos = 1
    exactly), cutoffs (Rjinner, Rjouter, Rkinner, Rkouter per ADF),
    ordinate ("degree", "radian" or "cosine"), bins, delta (the bin width),
    triple (["I-J-K", ...] with --triples, else None), types, frames,
    frame_counts (--per-frame);
    adf("I-J-K") is (counts, pdf, cumulative) of one ADF.

    counts, pdf, cumulative, dropped and adf() raise IncompleteResult in an
    incomplete file (the counts cover the chunks flagged done only)."""

    kind = "adf"
    _unit = "centres"

    def __init__(self, f, verdict, access="auto"):
        super().__init__(f, verdict, access)
        a = self.attrs
        self.n = int(_one(a["n"]))
        self.bins = int(_one(a["bins"]))
        self.ordinate = _text(a["ordinate"])
        self.delta = float(_one(a["delta"]))
        self.adfs = int(_one(a["adfs"]))
        self.type_source = _text(a["type_source"]) if "type_source" in a else None
        self.box = tuple(float(s) for s in _text(a["box"]).split(",")) if "box" in a else None
        self.tilt = tuple(float(s) for s in _text(a["tilt"]).split(",")) if "tilt" in a else None

    def _describe(self):
        return f"n={self.n}, {self.adfs} ADF(s), {self.bins} bins in {self.ordinate}s, {self.precision}"

    @property
    def counts(self):
        """int64[bins] (with --triples [adfs, bins]): the angles per bin, summed over the frames."""
        self._counted("/counts")
        return self._d[()]

    @property
    def theta(self):
        """float64[bins]: the bin centres in the ordinate's unit (LAMMPS's first column)."""
        return self._f["theta"][()]

    @property
    def edges(self):
        """float64[bins+1]: the bin edges in the ordinate's unit."""
        return self._f["edges"][()]

    @property
    def pdf(self):
        """float64, counts' shape: counts / (delta × the ADF's binned angles) (LAMMPS's column 2m+1)."""
        self._counted("/pdf")
        return self._f["pdf"][()]

    @property
    def cumulative(self):
        """float64, counts' shape: the running sum of counts / centres (LAMMPS's column 2m+2)."""
        self._counted("/cumulative")
        return self._f["cumulative"][()]

    @property
    def centres(self):
        """The centre atoms counted (each frame's, summed): int, or int64[adfs] with --triples."""
        v = self._f["centres"][()]
        return int(v) if np.ndim(v) == 0 else v

    @property
    def dropped(self):
        """Angles not binned (theta = pi or cos = 1 exactly): int, or int64[adfs] with --triples."""
        self._counted("/dropped")
        v = self._f["dropped"][()]
        return int(v) if np.ndim(v) == 0 else v

    @property
    def cutoffs(self):
        """float64[4] (with --triples [adfs, 4]): Rjinner, Rjouter, Rkinner, Rkouter."""
        return self._f["cutoffs"][()]

    @property
    def triple(self):
        """["I-J-K", ...]: the ADFs' type triples (--triples), None for one ADF of --cutoff."""
        return self._strings("triple")

    @property
    def types(self):
        """[str]: the type labels of --types, None without."""
        return self._strings("types")

    @property
    def frame_counts(self):
        """int64[F, bins] (with --triples [F, adfs, bins]): each frame's counts (--per-frame), None without."""
        if "frame_counts" not in self._f:
            return None
        self._counted("/frame_counts")
        return self._f["frame_counts"][()]

    def adf(self, name):
        """(counts, pdf, cumulative) of the ADF named "I-J-K" (a --triples entry)."""
        names = self.triple
        if names is None:
            raise TypeError(f"{self.path}: adf() is for files of adf --triples; this one holds one ADF "
                            "(use counts, pdf, cumulative)")
        if name not in names:
            raise KeyError(f"{self.path}: no ADF {name!r}; the file's are {', '.join(names)}")
        m = names.index(name)
        return self.counts[m], self.pdf[m], self.cumulative[m]


class TripletResult(Result):
    """`tdsolve triplet`: a three-body energy of n points in 3-D (the
    Axilrod-Teller-Muto potential, or the three-body term of Stillinger-Weber),
    summed over the C(n,3) triplets i<j<k.

    energy (float: the total), energy_per_point (float64[n]: each triplet's
    energy split equally among its 3 points) and forces (float64[n, 3], the
    analytic -dE/dx) are read from the file; they are written when every
    chunk is done, so reading them from an incomplete file (opened with
    require_complete=False) raises IncompleteResult.

    From /energy's attributes (all of them in attrs): n, k (3), potential
    ("atm" or "sw"), parameters (a dict of the potential's parameters as
    floats: atm's nu, cutoff and cutoff_triple, inf where there is none; sw's
    epsilon, sigma, a, lambda, gamma, costheta0, the columns of a LAMMPS .sw
    file; with `--nu-types`, atm's nu_types, type_names and type_source as
    text and no nu), nu, cutoff and cutoff_triple (atm's; None for sw, nu
    None with --nu-types), nu_types ({(A, B, C): nu} per unordered type
    triple, the types as text; None without --nu-types), triplets (C(n,3)),
    precision, block, formula.

    stored: True when the file holds each triplet's energy (`tdsolve triplet
    --store-triplets`): then shape == (C(n,3),) and r[...] indexes that
    packed vector, in itertools.combinations(range(n), 3) order, as the edm
    result's condensed vector (ints, slices with any step, integer or boolean
    arrays; the position of i<j<k is tdsolve.triplet_index(n, i, j, k));
    triplet(i, j, k) reads one, triplet_energies() all, iter_chunks() chunk
    by chunk; dtype is theirs (float32 or float64). Without them shape == (),
    dtype is None, and those raise TypeError. In an incomplete file each
    stored energy of a chunk not flagged done reads as NaN (r[...],
    triplet(), triplet_energies(), iter_chunks(done_only=False)).

    A run over the frames of a trajectory (`tdsolve triplet --frames`):
    frames (int[F], the trajectory's frames summed; None for one point set)
    and frame_energy (float64[F], each frame's total energy; in an incomplete
    file NaN for a frame not yet summed); energy, energy_per_point and forces
    are then the means over the frames."""

    kind = "triplet"

    def __init__(self, f, verdict, access="auto"):
        super().__init__(f, verdict, access)
        a = self.attrs

        def scalar(name, conv):
            v = _one(a.get(name))
            return conv(v) if v is not None else None

        self.n = scalar("n", int)
        if self.n is None:
            raise IncompleteResult(f"{self.path}: /energy has no single `n` attribute", verdict)
        self.k = scalar("k", int)
        self.potential = _text(a["potential"]) if "potential" in a else None
        # The potential's parameters: those the schema gives its variant of /energy (atm's when it names
        # none the schema knows, as readers always took it); another potential's are not read.
        # An optional one (atm's nu_types, type_names, type_source; nu, which a run with --nu-types leaves
        # out) only when the file has it; text ones as text.
        names = _schema.variant_attrs("triplet", "energy", _schema.variant("triplet", "energy", self.potential))
        self.parameters = {p: _text(_one(a[p])) if decl.startswith("string") else scalar(p, float)
                           for p, decl in names.items() if not decl.endswith("?") or p in a}
        self.nu = self.parameters.get("nu")
        # --nu-types: nu of each unordered type triple, {(A, B, C): nu} with the types as text (None: one nu).
        self.nu_types = None
        if "nu_types" in self.parameters:
            self.nu_types = {tuple(k.split("-")): float(v) for k, v in
                             (item.rsplit(":", 1) for item in self.parameters["nu_types"].split(","))}
        self.cutoff = self.parameters.get("cutoff")
        self.cutoff_triple = self.parameters.get("cutoff_triple")
        self.triplets = scalar("triplets", int)
        if self.triplets is None:
            self.triplets = _verdict.triplet_count(self.n)
        self.block = scalar("block", int)
        self.formula = _text(a["formula"]) if "formula" in a else None
        self.frames = [int(v) for v in f["frames"][()]] if "frames" in f else None
        self.features = 3
        self._values = f["triplet_energy"] if "triplet_energy" in f else None
        self.dtype = self._values.dtype if self._values is not None else None
        if access == "mmap" and self._values is not None:
            self._runs()  # says now if the file cannot be mapped

    def _describe(self):
        params = " ".join(f"{k}={v}" for k, v in self.parameters.items() if self.potential == "sw" or k == "nu")
        return (f"n={self.n}, {self.potential} {params}, {self.precision}"
                + (", triplet energies stored" if self.stored else ""))

    # --- the sums -------------------------------------------------------------

    def _final(self, name):
        if not self.complete:
            raise IncompleteResult(f"{self.path}: /{name} is written when every chunk is done, and this file is "
                                   f"not complete ({self.verdict.message})", self.verdict)
        return self._f[name][()]

    @property
    def energy(self):
        """The total energy (float64), summed exactly and rounded once."""
        return float(self._final("energy"))

    @property
    def frame_energy(self):
        """float64[F] (a --frames run's; None for one point set): each frame's
        total energy, /frames[q]'s at q; NaN for a frame an incomplete run
        has not summed."""
        if "frame_energy" not in self._f:
            return None
        e = np.asarray(self._f["frame_energy"][()], dtype=np.float64)
        done = self.verdict._done  # the frames are the file's chunks
        if not self.complete and done is not None and len(done) == len(e):
            e = np.where(np.asarray(done) == 1, e, np.nan)
        return e

    @property
    def energy_per_point(self):
        """float64[n]: each point's share (a third of every triplet's energy it is in); sums to energy."""
        return self._final("energy_per_point")

    @property
    def forces(self):
        """float64[n, 3]: the force on each point, -dE/dx (analytic)."""
        return self._final("forces")

    # --- the stored triplet energies --------------------------------------------

    @property
    def stored(self):
        """Whether the file holds each triplet's energy (--store-triplets)."""
        return self._values is not None

    def _not_stored(self, what):
        raise TypeError(f"{self.path}: {what} needs each triplet's energy, which this file does not hold "
                        "(tdsolve triplet --store-triplets writes them); energy, energy_per_point and forces "
                        "are always there")

    @property
    def shape(self):
        return (int(self._values.shape[0]),) if self.stored else ()

    def __len__(self):
        if not self.stored:
            self._not_stored("len()")
        return self.shape[0]

    def _runs(self):
        if not self.stored:
            self._not_stored("reading triplet energies")
        if self._reader is None:
            self._reader = RunReader(self._values, self.access, self._unwritten)
        return self._reader

    def __getitem__(self, key):
        if not self.stored:
            self._not_stored("r[...]")
        return _packed_getitem(self._runs(), self.shape[0], key)

    def triplet(self, i, j, k):
        """The energy of triplet {i, j, k} (three distinct points, in any order)."""
        if not self.stored:
            self._not_stored("triplet()")
        return self[triplet_index(self.n, int(i), int(j), int(k))]

    def triplet_energies(self):
        """All C(n,3) triplet energies, in itertools.combinations(range(n), 3) order."""
        if not self.stored:
            self._not_stored("triplet_energies()")
        return self[:]

    def iter_chunks(self, done_only=True):
        """Yields (offset, values) for each chunk of the file, in order:
        values = r[offset:offset + len(values)] (packed positions). With
        done_only (the default) only chunks flagged done (all, in a complete
        file); with done_only=False also the others, all NaN."""
        if not self.stored:
            self._not_stored("iter_chunks()")
        rr = self._runs()
        for a, b in _chunk_ranges(self.verdict, done_only):
            yield a, rr.contiguous(a, b)


class KnnResult(Result):
    """`tdsolve knn --k K`: the K nearest other points of each of n points.

    n, k (K); shape == (n, K); indices (int64[n, K]) and distances ([n, K],
    float32 or float64), whole: row i holds point i's K nearest other points,
    nearest first (ties: the smaller index first). rows(i0, i1) reads
    (indices, distances) of rows i0..i1-1, each as one contiguous read; row(i)
    those of one point; r[key] is (indices[key], distances[key]) (NumPy
    indexing of the n x K arrays: rows, and columns if given);
    iter_chunks() yields (first_row, indices, distances) chunk by chunk.

    In an incomplete file the rows of chunks not flagged done are not
    written: distances reads NaN there; indices, and every read of both
    (rows(), row(), r[...], iter_chunks(done_only=False)), raise
    IncompleteResult naming the chunks and rows missing when they touch
    such a row, and work on rows that are all in chunks flagged done."""

    kind = "knn"

    def __init__(self, f, verdict, access="auto"):
        super().__init__(f, verdict, access)
        n, k = _one(self.attrs.get("n")), _one(self.attrs.get("neighbors"))
        if n is None or k is None or "indices" not in f:
            raise IncompleteResult(f"{self.path}: not a readable kNN result (/distances needs single `n` and "
                                   f"`neighbors` attributes, /indices beside it)", verdict)
        self.n, self.k = int(n), int(k)
        self._i = f["indices"]
        self._ireader = None
        if access == "mmap":
            self._iruns()

    def _describe(self):
        return f"n={self.n}, K={self.k}, {self.metric} {self.precision}"

    def _iruns(self):
        if self._ireader is None:
            self._ireader = RunReader(self._i, self.access, self._unwritten)
        return self._ireader

    def _unwritten_what(self, chunks):
        off, K = self.verdict._offsets, self.k
        spans = ", ".join(f"{int(off[c]) // K}..{int(off[c + 1]) // K - 1}" for c in chunks[:4])
        return f"rows {spans}{', ...' if len(chunks) > 4 else ''} of /indices and /distances are"

    @property
    def indices(self):
        """int64[n, K]: the neighbours of each point, nearest first
        (IncompleteResult in an incomplete file: some rows are not written)."""
        if self._unwritten is not None:
            self._unwritten.check([0], [self.n * self.k])
        return self._i[()]

    @property
    def distances(self):
        """[n, K]: the distances to them, ascending along each row (NaN in
        rows not written yet, in an incomplete file)."""
        out = self._d[()]
        if self._unwritten is not None:
            out = _mask_2d(self._unwritten, out, np.arange(self.n), np.arange(self.k), self.k)
        return out

    def rows(self, i0, i1):
        """(indices, distances) of rows i0..i1-1: two (i1-i0) x K arrays, one contiguous read each."""
        a, b = _range(slice(i0, i1), self.n, "rows")
        K = self.k
        return (self._iruns().contiguous(a * K, b * K).reshape(-1, K),
                self._runs().contiguous(a * K, b * K).reshape(-1, K))

    def row(self, i):
        """(indices, distances) of point i's K nearest neighbours."""
        i = int(i)
        if not -self.n <= i < self.n:
            raise IndexError(f"point {i} is not one of {self.n}")
        i %= self.n
        ind, dist = self.rows(i, i + 1)
        return ind[0], dist[0]

    def __getitem__(self, key):
        if self._unwritten is not None:  # chunks are whole rows: rows all written, or IncompleteResult
            _check_rows(self._unwritten, _key_positions(key, self.shape)[0], self.k)
        return _getitem_2d(self._i, key), _getitem_2d(self._d, key)

    def iter_chunks(self, done_only=True):
        """Yields (first_row, indices, distances) for each chunk of the file,
        in order, whole rows. With done_only (the default) only chunks
        flagged done (all, in a complete file); with done_only=False a chunk
        not flagged done raises IncompleteResult when reached."""
        K = self.k
        ir, dr = self._iruns(), self._runs()
        for a, b in _chunk_ranges(self.verdict, done_only):
            yield a // K, ir.contiguous(a, b).reshape(-1, K), dr.contiguous(a, b).reshape(-1, K)

    def close(self):
        if self._ireader is not None:
            self._ireader.close()
            self._ireader = None
        super().close()


class PairsResult(Result):
    """`tdsolve knn --radius R`: every pair of the n points within distance R.

    n, radius, count (m, the pairs found); pairs (int64[m, 2]: (i, j), i < j,
    sorted) and distances ([m], float32 or float64: each pair's distance,
    <= radius), whole; len(r) == m, shape == (m,); r[key] is (pairs[key],
    distances[key]) (NumPy indexing of the m pairs); to_sparse() the n x n
    upper-triangular scipy.sparse.coo_matrix; iter_chunks(rows) yields
    (first, pairs, distances) in slices of `rows` pairs. The pairs are
    written when the run ends: a stopped run's file holds none, and in a
    file whose chunks are not all flagged done count, len(), shape, pairs,
    distances, r[...], to_sparse() and iter_chunks(done_only=False) raise
    IncompleteResult (iter_chunks() yields nothing)."""

    kind = "radius"

    def __init__(self, f, verdict, access="auto"):
        super().__init__(f, verdict, access)
        n = _one(self.attrs.get("n"))
        if n is None or "distances" not in f:
            raise IncompleteResult(f"{self.path}: not a readable radius result (/pairs needs a single `n` "
                                   f"attribute, /distances beside it)", verdict)
        self.n = int(n)
        radius = _one(self.attrs.get("radius"))
        self.radius = float(radius) if radius is not None else None
        self._dist = f["distances"]
        self.dtype = self._dist.dtype

    def _find_unwritten(self):
        return None  # the offsets count the pairs tested, not rows of /pairs: the list is whole or not there

    def _describe(self):
        return f"n={self.n}, {self._found()} within {self.radius}, {self.metric} {self.precision}"

    def _found(self):
        return f"{self.count} pairs" if self._all_done() else "pairs not written yet"

    def _listed(self, what):
        self._needs_all_done(what, "is written when every chunk is done")

    @property
    def count(self):
        """m: the number of pairs within the radius."""
        self._listed("the pair list")
        return int(self._d.shape[0])

    @property
    def shape(self):
        return (self.count,)

    @property
    def pairs(self):
        """int64[m, 2]: the pairs (i, j), i < j, in lexicographic order."""
        self._listed("/pairs")
        return self._d[()]

    @property
    def distances(self):
        """[m]: the distance of each pair."""
        self._listed("/distances")
        return self._dist[()]

    def __getitem__(self, key):
        self._listed("the pair list")
        return _getitem_rows(self._d, key), _getitem_rows(self._dist, key)

    def to_sparse(self):
        """The pairs as an n x n scipy.sparse.coo_matrix: D[i, j] = distance for
        each pair i < j (upper triangle only; D + D.T is the symmetric one).
        Needs SciPy."""
        try:
            from scipy.sparse import coo_matrix
        except ImportError as e:
            raise ImportError("to_sparse() needs SciPy (Debian: python3-scipy); pairs and distances are "
                              "NumPy arrays without it") from e
        p, d = self.pairs, self.distances
        return coo_matrix((d, (p[:, 0], p[:, 1])), shape=(self.n, self.n))

    def iter_chunks(self, rows=1 << 20, done_only=True):
        """Yields (first, pairs, distances) for slices of `rows` pairs, in
        order. The pairs are written all at once when the run ends: with
        done_only (the default) a file whose chunks are not all flagged done
        yields nothing, and with done_only=False it raises IncompleteResult."""
        rows = _int(rows)
        if rows < 1:
            raise ValueError(f"rows must be at least 1, not {rows}")
        if done_only and not self._all_done():
            return
        m = self.count
        for a in range(0, m, rows):
            b = min(a + rows, m)
            yield a, self._d[a:b], self._dist[a:b]


class CollideResult(PairsResult):
    """`tdsolve collide`: every pair of the n spheres that overlap (the
    distance of the centres < r_i + r_j, in float64; touching spheres do not).

    As PairsResult (pairs, distances: the centres' distances, float64;
    count, r[...], to_sparse(), iter_chunks()), with dim (1 or 3) and
    criterion ("overlap") instead of radius. count is m, the rows of /pairs;
    the file's /count holds the same number."""

    kind = "collide"

    def __init__(self, f, verdict, access="auto"):
        super().__init__(f, verdict, access)
        dim = _one(self.attrs.get("dim"))
        self.dim = int(dim) if dim is not None else None
        self.criterion = _text(self.attrs["criterion"]) if "criterion" in self.attrs else None

    def _describe(self):
        found = f"{self.count} overlapping pairs" if self._all_done() else "overlapping pairs not written yet"
        return f"n={self.n} spheres in {self.dim}-D, {found}"


def _getitem_rows(d, key):
    """NumPy indexing of the first axis of dataset d (1-D or 2-D): h5py
    hyperslabs for ints and positive-step slices, else runs of consecutive
    rows, each read once."""
    (k,) = _split_key(key, 1)
    ax = _axis(k, int(d.shape[0]))
    if ax[0] == "int" or (ax[0] == "slice" and ax[3] > 0):
        return d[_h5key(ax)]
    rows, shape = _positions(ax)
    tail = tuple(int(x) for x in d.shape[1:])
    out = np.empty((len(rows),) + tail, dtype=d.dtype.newbyteorder("="))
    if len(rows):
        u, inv = np.unique(rows, return_inverse=True)
        got = np.empty((len(u),) + tail, dtype=out.dtype)
        starts, lengths = _runs_of(u)
        k = 0
        for s, L in zip(starts.tolist(), lengths.tolist()):
            got[k:k + L] = d[s:s + L]
            k += L
        out = got[inv]
    return out.reshape(shape + tail)


def _getitem_2d(d, key):
    """NumPy indexing of a 2-D dataset d: h5py hyperslabs for ints and positive-step
    slices, else bands of whole rows read once (integer arrays select per axis, as h5py)."""
    kr, kc = _split_key(key, 2)
    M, K = (int(x) for x in d.shape)
    ar, ac = _axis(kr, M), _axis(kc, K)
    basic = all(a[0] == "int" or (a[0] == "slice" and a[3] > 0) for a in (ar, ac))
    if basic:  # h5py hyperslabs (regular, with strides)
        return d[_h5key(ar), _h5key(ac)]
    rows, rshape = _positions(ar)
    cols, cshape = _positions(ac)
    out = np.empty((len(rows), len(cols)), dtype=d.dtype.newbyteorder("="))
    if out.size:
        u, inv = np.unique(rows, return_inverse=True)
        c0, c1 = int(cols.min()), int(cols.max()) + 1
        pick = cols - c0
        whole = np.array_equal(pick, np.arange(len(cols)))
        got = np.empty((len(u), len(cols)), dtype=out.dtype)
        starts, lengths = _runs_of(u)
        per = max(1, (64 << 20) // max(1, (c1 - c0) * out.itemsize))  # rows per read: ~64 MB bands
        k = 0
        for s, L in zip(starts.tolist(), lengths.tolist()):
            for r0 in range(s, s + L, per):
                r1 = min(r0 + per, s + L)
                band = d[r0:r1, c0:c1]
                got[k:k + r1 - r0] = band if whole else band[:, pick]
                k += r1 - r0
        out = got[inv]
    return out.reshape(rshape + cshape)


def _positions(ax):
    """Per-axis positions (output order) and the output dims of that axis."""
    if ax[0] == "int":
        return np.array([ax[1]], dtype=np.int64), ()
    if ax[0] == "slice":
        _, start, count, step = ax
        return start + step * np.arange(count, dtype=np.int64), (count,)
    return ax[1].reshape(-1), ax[1].shape


def _h5key(ax):
    """An "int" or positive-step "slice" axis as h5py takes it."""
    if ax[0] == "int":
        return ax[1]
    _, start, count, step = ax
    return slice(start, start + (count - 1) * step + 1 if count else start, step)


def _scatter(out, buf, rows, first, offs, lengths, along):
    """out[rows[k], first[k]:first[k]+lengths[k]] = buf[offs[k]:...] for
    every run k (out may be a transposed view)."""
    keep = np.flatnonzero(lengths > 0)
    if len(keep) == 0:
        return
    rows, first, offs, lengths = rows[keep], first[keep], offs[keep], lengths[keep]
    # Runs of one common (first, length) with short length: one fancy assignment per batch.
    L0, f0 = int(lengths[0]), int(first[0])
    same = (lengths == L0) & (first == f0)
    if L0 < 512 and np.count_nonzero(same) > 8:
        sel = np.flatnonzero(same)
        ar = np.arange(L0, dtype=np.int64)
        per = max(1, (1 << 22) // max(L0, 1))
        for b in range(0, len(sel), per):
            s = sel[b:b + per]
            out[rows[s], f0:f0 + L0] = buf[offs[s][:, None] + ar]
        rest = np.flatnonzero(~same)
    else:
        rest = np.arange(len(rows))
    for k in rest.tolist():
        r, f, o, L = int(rows[k]), int(first[k]), int(offs[k]), int(lengths[k])
        out[r, f:f + L] = buf[o:o + L]


def _size(b):
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if b < 1024 or unit == "TiB":
            return f"{b:.0f} {unit}" if unit == "bytes" else f"{b:.1f} {unit}"
        b /= 1024


_CLASSES = {"edm": EdmResult, "cross": CrossResult, "hist": HistResult, "adf": AdfResult, "triplet": TripletResult,
            "knn": KnnResult, "radius": PairsResult, "collide": CollideResult}

from ._fractal import FractalResult  # noqa: E402 (it builds on Result, above)

_CLASSES["fractal"] = FractalResult


def open(path, require_complete=True, access="auto", _classes=None):  # noqa: A001
    """Opens a tdsolve result (edm, cross, hist, adf, triplet, fractal, knn, radius or collide) for reading.

    Raises IncompleteResult unless the file is complete by the rules of
    `tdsolve info` (pass require_complete=False to read a partial file; an
    inconsistent one, or one that is no result, raises it still; in a
    partial file, values not written yet read as NaN where they are
    floating-point, and raise IncompleteResult where they are integers or
    written only when every chunk is done: Result's docstring says which),
    and UnreadableResult (an OSError) when it cannot be read, a damaged file
    (one HDF5 cannot read whole, or crashes or loops on, in the child
    process that reads it first: _isolate.py) among them. A run writes
    FILE.h5.partial and renames it to FILE.h5 when it is complete: with only
    the .partial there, open("FILE.h5") raises IncompleteResult naming it,
    or, with require_complete=False, opens the .partial.

    access: "auto" (memory-map the values where the layout allows: fastest),
    "mmap" (insist) or "hdf5" (HDF5 reads only)."""
    path = os.fspath(path)
    verdict, f = _verdict.inspect(path, keep_open=True)
    if verdict.status == _verdict.UNREADABLE:
        raise UnreadableResult(f"{path}: {verdict.message}", verdict)
    try:
        if verdict.file != path and require_complete:
            raise IncompleteResult(f"{path} is not finished yet: its run is in {verdict.file} "
                                   f"({verdict.message}; resume it with tdsolve ... --resume)", verdict)
        # Inconsistent files (and those that are no result) are never opened: their
        # records disagree, and a damaged one may crash HDF5 (_verdict.inspect).
        if f is None or (require_complete and not verdict.complete):
            raise IncompleteResult(f"{verdict.file}: {verdict.message}", verdict)
        cls = (_classes or {}).get(verdict.kind) or _CLASSES[verdict.kind]
        return cls(f, verdict, access)
    except BaseException:
        if f is not None:
            f.close()
        raise
