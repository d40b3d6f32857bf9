"""Is a tdsolve result file complete? The rules of `tdsolve info`.

This is a port of io/info.cpp (describe_result, describe_file,
describe_hist, describe_triplet, describe_knn, describe_radius (and collide), describe_fractal), check for check and in
the same order, so that for any file `tdsolve.check(path).exit_code` is the
exit status of `tdsolve info path`:

    0  complete
    3  incomplete, inconsistent (its records disagree), or not a tdsolve result
    1  unreadable (no such file, not HDF5, truncated, or a read that fails)

Where `tdsolve info` reads a record with HDF5's type conversion (an integer
attribute read as uint64, /progress/done as uint8, ...) so does this, through
h5py's low-level API and the same libhdf5, so conversions agree.

An attribute info.cpp reads as one number or string that holds an array
(or, for a number, no value at all), and a /progress dataset with more
values than its first dimension make the file inconsistent, in both.
"""
import os

import h5py
import numpy as np
from h5py import h5a, h5s, h5t

COMPLETE = "complete"
INCOMPLETE = "incomplete"
INCONSISTENT = "inconsistent"
NOT_A_RESULT = "not a result"
UNREADABLE = "unreadable"

EXIT_CODES = {COMPLETE: 0, INCOMPLETE: 3, INCONSISTENT: 3, NOT_A_RESULT: 3, UNREADABLE: 1}

_M64 = 1 << 64  # info.cpp counts in uint64 and wraps
TRIPLET_SUM_LIMBS = 69  # int64 limbs per exact sum in /progress/sums (io/info.hpp kTripletSumLimbs)


def pair_count(n):
    """C(n,2), modulo 2**64 as mapping::pair_count."""
    return 0 if n < 2 else (n * (n - 1) // 2) % _M64


def triplet_count(n):
    """C(n,3), modulo 2**64 as mapping::triplet_count."""
    return 0 if n < 3 else (n * (n - 1) * (n - 2) // 6) % _M64


class Verdict:
    """What `tdsolve info` would say of a file.

    status: "complete", "incomplete", "inconsistent", "not a result" or
    "unreadable"; exit_code: info's exit status (0, 3 or 1); message: one
    line; path: the path asked about; file: the file actually read (path, or
    path + ".partial" when only that exists); kind: "edm", "cross", "hist",
    "triplet", "fractal", "knn", "radius", "collide" or None; dataset: the dataset whose
    attributes describe the result ("distances", "counts", "energy" for
    triplets, "states" for fractals, "pairs" for radius and collide files); chunks, chunks_done: from /progress (None when
    not read; a fractal file's chunks are its snapshots)."""

    __slots__ = ("status", "message", "path", "file", "kind", "dataset", "chunks", "chunks_done", "_done",
                 "_offsets")

    def __init__(self, status, message, path, file, kind=None, dataset=None, done=None, offsets=None):
        self.status, self.message, self.path, self.file = status, message, path, file
        self.kind, self.dataset = kind, dataset
        self._done, self._offsets = done, offsets
        self.chunks = None if done is None else len(done)
        self.chunks_done = None if done is None else int(np.count_nonzero(done == 1))

    @property
    def exit_code(self):
        return EXIT_CODES[self.status]

    @property
    def complete(self):
        return self.status == COMPLETE

    def __str__(self):
        return self.message

    def __repr__(self):
        return f"Verdict({self.status!r}, {self.message!r}, file={self.file!r})"


class _Unreadable(Exception):
    """Where info.cpp throws (its exit status 1)."""


class _Inconsistent(Exception):
    """Where info.cpp has undefined behaviour; we call the file inconsistent."""


# --- HDF5 primitives, as io/h5.cpp and io/info.cpp use them ---------------


def _exists(f, name):
    """H5Lexists(file, name) > 0 (false also where H5Lexists fails)."""
    try:
        return bool(f.id.links.exists(name.encode()))
    except Exception:
        return False


def _member(f, name, kind, what):
    """f[name] if it opens and is a `kind`, as H5Dopen2/H5Gopen2 require
    (info: exit 1 on a dangling link or the wrong kind of object)."""
    try:
        obj = f[name]
    except Exception as e:
        raise _Unreadable(f"cannot open /{name}: {e}") from None
    if not isinstance(obj, kind):
        raise _Unreadable(f"/{name} is not a {what}")
    return obj


def _dataset(f, name):
    return _member(f, name, h5py.Dataset, "dataset")


def _group(f, name):
    return _member(f, name, h5py.Group, "group")


def _has_attr(obj, name):
    return bool(h5a.exists(obj.id, name.encode()))


def _elements(shape):
    """Number of elements of a dataspace (h5py: None for a null one)."""
    return 0 if shape is None else int(np.prod(shape, dtype=np.int64))


def _attr_number(obj, name, mtype, dtype):
    """read_attr_u64 / read_attr_f64: an attribute of exactly one element
    reads as that, HDF5 converting (or failing: exit 1); of none or of more,
    info.cpp refuses it (AttrShapeError: inconsistent)."""
    aid = h5a.open(obj.id, name.encode())
    count = _elements(aid.shape)
    if count != 1:
        raise _Inconsistent(f"attribute `{name}` of {obj.name} is not a single value")
    v = np.zeros(aid.shape if aid.shape is not None else (), dtype=dtype)
    try:
        aid.read(v, mtype=mtype)
    except Exception as e:
        raise _Unreadable(f"cannot read attribute `{name}` of {obj.name} as a number: {e}") from None
    return v.reshape(-1)[0]


def _attr_u64(obj, name):
    return int(_attr_number(obj, name, h5t.NATIVE_UINT64, np.uint64))


def _attr_f64(obj, name):
    return float(_attr_number(obj, name, h5t.NATIVE_DOUBLE, np.float64))


def _attr_string(obj, name):
    """read_attr_string: "(not a string)" for a number."""
    aid = h5a.open(obj.id, name.encode())
    if aid.get_type().get_class() != h5t.STRING:
        return "(not a string)"
    count = _elements(aid.shape)
    if count > 1:
        raise _Inconsistent(f"attribute `{name}` of {obj.name} is not a single value")
    if count == 0:
        return ""
    v = np.asarray(obj.attrs[name], dtype=object).reshape(-1)[0]
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _read_all(ds, mtype, dtype):
    """H5Dread(ds, mtype, H5S_ALL, ...) of every element, converted by HDF5."""
    shape = ds.shape
    if shape is None:  # a null dataspace: no element
        return np.zeros(0, dtype=dtype)
    out = np.empty(shape, dtype=dtype)
    if out.size:
        try:
            ds.id.read(h5s.ALL, h5s.ALL, out, mtype=mtype)
        except Exception as e:
            raise _Unreadable(f"reading {ds.name}: {e}") from None
    return out


def _dims(ds):
    """dataset_shape(): () for a scalar or null dataspace."""
    return tuple(ds.shape) if ds.shape is not None else ()


def _progress_length(ds):
    """/progress/done or /offsets as info.cpp reads it: every element into a
    vector of dims[0] values. A scalar has no buffer there (its H5Dread
    fails: exit 1); more elements than dims[0] (a 2-D array) overflow it
    (undefined: inconsistent here); trailing dimensions of 1 read as 1-D."""
    dims = _dims(ds)
    if len(dims) == 0 and ds.shape is not None:
        raise _Unreadable(f"reading {ds.name}: a scalar, not a list (no output buffer)")
    n0 = dims[0] if dims else 0
    if _elements(ds.shape) > n0:
        raise _Inconsistent(f"{ds.name} is not 1-D")
    return n0


def _progress_values(ds, n0, mtype, dtype):
    values = _read_all(ds, mtype, dtype).reshape(-1)
    out = np.zeros(n0, dtype=dtype)
    out[:len(values)] = values
    return out


# --- the checks -----------------------------------------------------------


def _missing_ranges(done):
    parts, c, shown = [], 0, 0
    while c < len(done):
        if done[c]:
            c += 1
            continue
        e = c
        while e + 1 < len(done) and not done[e + 1]:
            e += 1
        if shown == 8:
            parts.append("...")
            break
        shown += 1
        parts.append(f"{c}-{e}" if e > c else f"{c}")
        c = e + 1
    return ", ".join(parts)


def _scalar_i64(f, name):
    """read_scalar_i64: the value of scalar int64 dataset /name, None if it is not one."""
    if not _exists(f, name):
        return None
    ds = _dataset(f, name)
    if _dims(ds) != ():
        return None
    if ds.shape is None:  # a null dataspace reads nothing: info keeps its 0
        return 0
    return int(_read_all(ds, h5t.NATIVE_INT64, np.int64)[()])


def _describe_hist(f, counts, dims):
    """(problem, total, binned) as describe_hist."""
    n = _attr_u64(counts, "n") if _has_attr(counts, "n") else 0
    total = pair_count(n)
    if len(dims) != 1:
        return "/counts is not 1-D", total, 0
    bins = dims[0]
    if _has_attr(counts, "bins") and _attr_u64(counts, "bins") != bins:
        return "/counts does not have `bins` values", total, 0
    if _has_attr(counts, "pairs") and _attr_u64(counts, "pairs") != total:
        return "the `pairs` attribute is not C(n,2)", total, 0
    if _has_attr(counts, "range_lo") and _has_attr(counts, "range_hi"):
        _attr_f64(counts, "range_lo")
        _attr_f64(counts, "range_hi")
    if _has_attr(counts, "box"):
        _attr_string(counts, "box")
    edges = None
    if _exists(f, "edges"):
        e = _dataset(f, "edges")
        if _dims(e) == (bins + 1,):
            edges = _read_all(e, h5t.NATIVE_DOUBLE, np.float64)
    if edges is None:
        return "/edges does not hold bins+1 values", total, 0

    under = _scalar_i64(f, "underflow")
    over = _scalar_i64(f, "overflow") if under is not None else None
    if under is None or over is None:
        return "no scalar /underflow and /overflow", total, 0
    values = _read_all(counts, h5t.NATIVE_INT64, np.int64)
    binned = (int(values.view(np.uint64).sum(dtype=np.uint64)) + under + over) % _M64
    if _exists(f, "rdf"):
        _dataset(f, "rdf")
    return None, total, binned


# `tdsolve triplet --potential sw`: its parameters, as /energy's attributes name them
SW_PARAMETERS = ("epsilon", "sigma", "a", "lambda", "gamma", "costheta0")


def _describe_triplet(f, name):
    """(problem, total) as describe_triplet: name is what /progress names
    ("" or "triplet_energy")."""
    energy = _dataset(f, "energy")
    if not _has_attr(energy, "n"):
        return "/energy has no `n` attribute", 0
    n = _attr_u64(energy, "n")
    total = triplet_count(n)
    if _dims(energy) != ():
        return "/energy is not a scalar", total
    if _has_attr(energy, "k") and _attr_u64(energy, "k") != 3:
        return "the `k` attribute of /energy is not 3", total
    if _has_attr(energy, "triplets") and _attr_u64(energy, "triplets") != total:
        return "the `triplets` attribute is not C(n,3)", total
    # the potential, read in info's order (only what can fail matters): sw's
    # parameters (the columns of a LAMMPS .sw file) or atm's
    potential = _attr_string(energy, "potential") if _has_attr(energy, "potential") else None
    params = SW_PARAMETERS if potential == "sw" else ("nu", "cutoff", "cutoff_triple")
    for a, read in ([(p, _attr_f64) for p in params]
                    + [("precision", _attr_string), ("block", _attr_u64), ("formula", _attr_string)]):
        if _has_attr(energy, a):
            read(energy, a)
    beside = (("energy_per_point", (n,), "/energy_per_point does not hold n values"),
              ("forces", (n, 3), "/forces is not n x 3"),
              ("progress/sums", ((4 * n + 1) % _M64, TRIPLET_SUM_LIMBS),
               f"/progress/sums is not (4n+1) x {TRIPLET_SUM_LIMBS}"))
    shapes = [_dims(_dataset(f, b)) if _exists(f, b) else None for b, _, _ in beside]
    for (b, want, wrong), got in zip(beside, shapes):
        if got is None:
            return f"no /{b}", total
        if got != want:
            return wrong, total
    stored = _exists(f, "triplet_energy")
    if name == "":
        return ("/triplet_energy is there, but /progress does not name it" if stored else None), total
    if not stored:
        return "/progress names /triplet_energy, which is missing", total
    values = _dataset(f, "triplet_energy")
    dims = _dims(values)
    if len(dims) != 1 or dims[0] != total:
        return "/triplet_energy length is not C(n,3)", total
    if _has_attr(values, "n") and _attr_u64(values, "n") != n:
        return "the `n` attribute of /triplet_energy is not /energy's", total
    return None, total


def _is_knn(f, values):
    """is_knn: /indices beside /distances, or a `layout` attribute that is one string, "knn"."""
    if _exists(f, "indices"):
        return True
    if not _has_attr(values, "layout"):
        return False
    try:
        aid = h5a.open(values.id, b"layout")
        if aid.get_type().get_class() != h5t.STRING or _elements(aid.shape) != 1:
            return False
    except Exception:
        return False
    return _attr_string(values, "layout") == "knn"


def _describe_knn(f, values, dims):
    """(problem, total, row) as describe_knn: total n*K, row K."""
    if len(dims) != 2:
        return "/distances is not 2-D", 0, 0
    for a in ("n", "neighbors"):
        if not _has_attr(values, a):
            return f"/distances has no `{a}` attribute", 0, 0
    n, k = _attr_u64(values, "n"), _attr_u64(values, "neighbors")
    total = (n * k) % _M64
    for a in ("metric", "precision"):
        if _has_attr(values, a):
            _attr_string(values, a)
    if dims != (n, k):
        return "/distances is not n x K", total, k
    if k < 1 or k >= n:
        return "the `neighbors` attribute is not in 1..n-1", total, k
    if not _exists(f, "indices"):
        return "no /indices", total, k
    indices = _dataset(f, "indices")
    if _dims(indices) != dims:
        return "/indices is not n x K", total, k
    if ((_has_attr(indices, "n") and _attr_u64(indices, "n") != n)
            or (_has_attr(indices, "neighbors") and _attr_u64(indices, "neighbors") != k)):
        return "the `n` or `neighbors` attribute of /indices is not that of /distances", total, k
    return None, total, k


def _describe_radius(f, pairs, dims):
    """(problem, total) as describe_radius: total C(n,2). A collide file
    (/pairs with a `criterion`) also needs a scalar /count equal to m."""
    if not _has_attr(pairs, "n"):
        return "/pairs has no `n` attribute", 0
    n = _attr_u64(pairs, "n")
    total = pair_count(n)
    if _has_attr(pairs, "radius"):
        _attr_f64(pairs, "radius")
    for a in ("metric", "precision"):
        if _has_attr(pairs, a):
            _attr_string(pairs, a)
    if len(dims) != 2 or dims[1] != 2:
        return "/pairs is not m x 2", total
    m = dims[0]
    collide = _has_attr(pairs, "criterion")
    if collide:
        _attr_string(pairs, "criterion")
        if _has_attr(pairs, "dim"):
            _attr_u64(pairs, "dim")
    if m > total:
        return "/pairs holds more than C(n,2) pairs", total
    if not _exists(f, "distances"):
        return "no /distances", total
    if _dims(_dataset(f, "distances")) != (m,):
        return "/distances does not hold one value per row of /pairs", total
    if not collide:
        return None, total
    count = _scalar_i64(f, "count")  # written with the pairs: 0 until then, as m
    if count is None:
        return "no scalar /count", total
    if count < 0 or count != m:
        return "/count is not the number of rows of /pairs", total
    return None, total


def _check_fractal(f, path, file):
    """The verdict on a `tdsolve fractal` file, as describe_fractal: the
    records are checked in its order, stopping at the first that disagrees."""
    if not _exists(f, "progress") or not _exists(f, "progress/done"):
        return Verdict(NOT_A_RESULT, "not a tdsolve result (/states without /progress/done)", path, file)
    states = _dataset(f, "states")
    g = _group(f, "progress")
    dims = _dims(states)
    rows = 0

    def records():
        nonlocal rows
        if _has_attr(g, "dataset"):
            name = _attr_string(g, "dataset")
            if name.startswith("/"):
                name = name[1:]
            if name != "states":
                return "the `dataset` attribute of /progress does not name /states"
        for a in ("k", "s", "level", "steps"):
            if not _has_attr(states, a):
                return f"/states has no `{a}` attribute"
        k, s = _attr_u64(states, "k"), _attr_u64(states, "s")
        level, steps = _attr_u64(states, "level"), _attr_u64(states, "steps")
        if not 2 <= s <= 16:
            return "the `s` attribute of /states is not in 2..16"
        if not 1 <= k <= s * s:
            return "the `k` attribute of /states is not in 1..s^2"
        n = cells = 1
        for _ in range(level):
            n, cells = n * s, cells * k
            if n > 1 << 31:
                return "the embedding s^level is larger than 2^31"
        if _has_attr(states, "n") and _attr_u64(states, "n") != n:
            return "the `n` attribute of /states is not s^level"
        if _has_attr(states, "cells") and _attr_u64(states, "cells") != cells:
            return "the `cells` attribute of /states is not k^level"
        for a in ("shape", "table", "rule", "init", "layout", "map"):  # read as info prints them
            if _has_attr(states, a):
                _attr_string(states, a)
        if _has_attr(states, "rho"):
            _attr_u64(states, "rho")
        if len(dims) != 2:
            return "/states is not 2-D"
        if dims[1] != cells:
            return "/states does not hold k^level cells per row"
        rows = dims[0]
        if rows == 0:
            return "/states has no rows"
        if not _exists(f, "steps"):
            return "no /steps"
        steps_ds = _dataset(f, "steps")
        if _dims(steps_ds) != (rows,):
            return "/steps does not hold one value per row of /states"
        at = _read_all(steps_ds, h5t.NATIVE_INT64, np.int64)
        if at[0] != 0 or np.any(at[1:] <= at[:-1]) or int(at[-1]) % _M64 != steps:
            return "/steps does not run from 0 to the `steps` attribute, increasing"
        if not _exists(f, "live"):
            return "no /live"
        if _dims(_dataset(f, "live")) != ((steps + 1) % _M64,):
            return "/live does not hold steps+1 values"
        if not _exists(f, "replicas"):
            return "no /replicas"
        if _dims(_dataset(f, "replicas")) != (k, 2):
            return "/replicas is not k x 2"
        for a in ("chunks", "elements"):
            if _has_attr(g, a) and _attr_u64(g, a) != rows:
                return f"the `{a}` attribute of /progress is not the rows of /states"
        return None

    problem = records()
    done_ds = _dataset(f, "progress/done")
    ddims = _dims(done_ds)
    if len(ddims) == 0:
        raise _Unreadable("/progress/done is a scalar")
    if _elements(ddims) != ddims[0]:
        raise _Inconsistent("/progress/done is not 1-D")
    done = _read_all(done_ds, h5t.NATIVE_UINT8, np.uint8).reshape(-1)
    if problem is None and len(done) != rows:
        problem = "/progress/done does not hold one flag per row of /states"

    def verdict(status, message):
        return Verdict(status, message, path, file, "fractal", "states", done, None)

    if problem is not None:
        return verdict(INCONSISTENT, f"inconsistent: {problem}")
    complete = int(np.count_nonzero(done == 1))
    if complete == len(done):
        return verdict(COMPLETE, f"complete ({complete} of {len(done)} snapshots)")
    return verdict(INCOMPLETE, f"INCOMPLETE: {complete} of {len(done)} snapshots written; missing snapshots "
                               f"{_missing_ranges(done)}")


def _check_open(f, path, file):
    """The verdict on an open file, as describe_file."""
    if _exists(f, "states"):  # tdsolve fractal: its own records (no /progress/offsets)
        return _check_fractal(f, path, file)
    has_progress = _exists(f, "progress") and _exists(f, "progress/done") and _exists(f, "progress/offsets")
    name = "distances"
    if has_progress:
        g = _group(f, "progress")
        if _has_attr(g, "dataset"):
            name = _attr_string(g, "dataset")
        if name.startswith("/"):
            name = name[1:]
    radius = has_progress and name == "" and _exists(f, "pairs") and not _exists(f, "energy")
    triplet = has_progress and not radius and name in ("", "triplet_energy")
    if not has_progress or (False if radius else not _exists(f, "energy") if triplet
                            else name not in ("distances", "counts") or not _exists(f, name)):
        return Verdict(NOT_A_RESULT, "not a tdsolve result (no /distances, /counts, /pairs or /energy with "
                                     "/progress)", path, file)
    if radius:
        name = "pairs"
    if triplet:
        kind, values, dims = "triplet", None, ()
    else:
        values = _dataset(f, name)
        dims = _dims(values)
        kind = (("collide" if _has_attr(values, "criterion") else "radius") if radius else "hist" if name == "counts" else "knn" if _is_knn(f, values)
                else "cross" if len(dims) == 2 else "edm")
    if _exists(f, "points"):
        _dataset(f, "points")

    problem = None
    total = binned = row = 0
    unit = "pairs"
    if kind == "edm":
        n = _attr_u64(values, "n") if _has_attr(values, "n") else 0
        total = dims[0] if len(dims) == 1 else 0
        if len(dims) != 1:
            problem = "/distances is not 1-D"
        elif dims[0] != pair_count(n):
            problem = "/distances length is not C(n,2)"
    elif kind == "cross":
        unit = "values"
        total = (dims[0] * dims[1]) % _M64
        if ((_has_attr(values, "rows") and _attr_u64(values, "rows") != dims[0])
                or (_has_attr(values, "cols") and _attr_u64(values, "cols") != dims[1])):
            problem = "/distances is not rows x cols"
    elif kind == "hist":
        problem, total, binned = _describe_hist(f, values, dims)
    elif kind == "knn":
        unit = "values"
        problem, total, row = _describe_knn(f, values, dims)
    elif kind in ("radius", "collide"):
        problem, total = _describe_radius(f, values, dims)
    else:
        unit = "triplets"
        problem, total = _describe_triplet(f, name)
    g = f["progress"]
    if problem is None and _has_attr(g, "elements") and _attr_u64(g, "elements") != total:
        problem = f"the `elements` attribute of /progress is not the {unit} the chunks cover"

    done_ds = _dataset(f, "progress/done")
    off_ds = _dataset(f, "progress/offsets")
    n_done = _progress_length(done_ds)
    done = _progress_values(done_ds, n_done, h5t.NATIVE_UINT8, np.uint8)
    n_off = _progress_length(off_ds)
    offsets = _progress_values(off_ds, n_off, h5t.NATIVE_UINT64, np.uint64)
    off = [int(x) for x in offsets]

    if problem is None and (len(off) != len(done) + 1 or not off or off[-1] != total
                            or any(a > b for a, b in zip(off, off[1:]))):
        problem = "/progress/offsets does not cover " + {"hist": "the C(n,2) pairs", "radius": "the C(n,2) pairs",
                                                         "collide": "the C(n,2) pairs",
                                                         "triplet": "the C(n,3) triplets"}.get(kind, "/distances")
    if problem is None and kind == "knn" and any(o % row for o in off):
        problem = "/progress/offsets are not whole rows of /distances (multiples of K)"
    complete = int(np.count_nonzero(done == 1))
    pairs_done = 0
    for c in range(min(len(done), len(off) - 1)):
        if done[c]:
            pairs_done = (pairs_done + off[c + 1] - off[c]) % _M64
    if problem is None and kind == "hist" and complete == len(done) and binned != total:
        problem = "counts + underflow + overflow is not C(n,2)"

    def verdict(status, message):
        return Verdict(status, message, path, file, kind, "energy" if kind == "triplet" else name, done, offsets)

    if problem is not None:
        return verdict(INCONSISTENT, f"inconsistent: {problem}")
    if complete == len(done):
        return verdict(COMPLETE, f"complete ({complete} of {len(done)} chunks)")
    if kind == "hist" and complete > 0 and binned != pairs_done:
        return verdict(INCONSISTENT, "inconsistent: counts + underflow + overflow do not match the finished chunks")
    pct = 100.0 * pairs_done / total if total else 0.0
    return verdict(INCOMPLETE, f"INCOMPLETE: {complete} of {len(done)} chunks written ({pct:.1f}% of {unit}); "
                               f"missing chunks {_missing_ranges(done)}")


def _resolve(path):
    """(file to read, output name) as describe_result: FILE.h5.partial is
    read when FILE.h5 does not exist."""
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    suffix = ".partial"
    is_partial = len(path) > len(suffix) and path.endswith(suffix)
    output = path[:-len(suffix)] if is_partial else path
    file = path
    if not is_partial and not os.path.exists(path) and os.path.exists(output + suffix):
        file = output + suffix
    return path, file, output


def inspect(path, keep_open=False):
    """(Verdict, open h5py.File or None). With keep_open, the file stays open
    when it could be read (the caller closes it)."""
    path, file, output = _resolve(path)

    def unreadable(why):
        return Verdict(UNREADABLE, f"unreadable: {why}", path, file)

    if not os.path.exists(file):
        return unreadable(f"cannot open '{file}': No such file or directory"), None
    try:
        if not h5py.h5f.is_hdf5(file.encode()):
            return unreadable(f"'{file}' is not an HDF5 file"), None
    except Exception as e:
        return unreadable(f"'{file}' is not an HDF5 file ({e.__class__.__name__})"), None
    try:
        f = h5py.File(file, "r")
    except Exception as e:
        return unreadable(f"cannot open '{file}': {e}"), None
    try:
        try:
            v = _check_open(f, path, file)
        except _Inconsistent as e:
            v = Verdict(INCONSISTENT, f"inconsistent: {e}", path, file)
        except _Unreadable as e:
            v = unreadable(str(e))
        except (OSError, KeyError, RuntimeError, ValueError, TypeError) as e:
            v = unreadable(f"{e.__class__.__name__}: {e}")
        if file != output and v.status == COMPLETE:
            # Every chunk is flagged, but the run has not renamed it yet.
            v.status = INCOMPLETE
            v.message = (f"INCOMPLETE: every chunk is written, but the run has not renamed {file} to {output} "
                         "(still finishing, or stopped just before)")
        elif file != path and v.status != UNREADABLE:
            v.message += f" (read {file}: {path} does not exist yet, its run is unfinished)"
    except BaseException:
        f.close()
        raise
    if keep_open and v.status != UNREADABLE:
        return v, f
    f.close()
    return v, None


def check(path):
    """The verdict of `tdsolve info path` on a result file, as a Verdict
    (never raises for a bad file: an unreadable one is status "unreadable")."""
    return inspect(path)[0]
