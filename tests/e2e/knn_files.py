"""Synthetic `tdsolve knn` result files, written with h5py in the layout of
docs/output.md ("tdsolve knn --k" and "tdsolve knn --radius"), with the
attribute set of the files tdsolve writes (root: software, version,
command, options, created, input, job; the result dataset: n, layout,
metric, precision, features, block, ...) and their dimension scales
(netCDF-4 "pure dimensions", as io/result_file.cpp attach_dimensions makes
them; scales=False leaves them out, as in files of older versions). The readers (python/tdsolve,
`tdsolve info`) are tested against these until `tdsolve knn` writes real
ones. The reference values come from SciPy's cdist."""
import h5py
import numpy as np
from scipy.spatial.distance import cdist


def _root(f, command, x, metric, precision, k=None, radius=None):
    n, d = x.shape
    f.attrs["software"] = "tdsolve"
    f.attrs["version"] = "0.1.0"
    f.attrs["command"] = command
    f.attrs["options"] = f"metric = {metric}\nprecision = {precision}\n"
    f.attrs["created"] = "2026-11-22T00:00:00Z"
    f.attrs["input"] = "generate:synthetic"
    job = (f"command=knn\ninput_fnv1a64=0\nrows={n}\ncols={n}\nfeatures={d}\nmetric={metric}\n"
           f"precision={precision}\nblock=16\n")
    job += f"neighbors={k}\n" if k is not None else f"radius={radius!r}\n"
    f.attrs["job"] = job


def attach(f, ds, names):
    """Names the axes of ds as attach_dimensions does: a float32 scale
    dataset per name (a path from the root) that holds no values, of the
    axis' length (0 and unlimited for an unlimited axis)."""
    for axis, name in enumerate(names):
        unlimited = ds.maxshape[axis] is None
        length = 0 if unlimited else ds.shape[axis]
        if name not in f:
            kw = dict(maxshape=(None,), chunks=(1024,)) if unlimited else {}
            scale = f.create_dataset(name, shape=(length,), dtype=">f4", **kw)
            scale.make_scale(f"This is a netCDF dimension but not a netCDF variable.{length:10d}")
        ds.dims[axis].attach_scale(f[name])


def knn_reference(x, k, metric="euclidean", precision="float64"):
    """(indices int64[n, k], distances [n, k]): each point's k nearest other
    points, ascending, ties broken by the smaller index."""
    dt = np.float64 if precision == "float64" else np.float32
    D = cdist(x, x, metric).astype(dt)
    np.fill_diagonal(D, np.inf)
    order = np.argsort(D, axis=1, kind="stable")[:, :k]  # stable: equal distances keep index order
    return order.astype(np.int64), np.take_along_axis(D, order, axis=1)


def radius_reference(x, radius, metric="euclidean", precision="float64"):
    """(pairs int64[m, 2] lexicographic with i < j, distances [m]) within radius."""
    dt = np.float64 if precision == "float64" else np.float32
    D = cdist(x, x, metric).astype(dt)
    i, j = np.nonzero(np.triu(D <= radius, 1))  # row-major: lexicographic
    return np.stack([i, j], axis=1).astype(np.int64), D[i, j]


def row_offsets(n, chunks, per_row):
    """chunks+1 offsets of bands of whole rows: multiples of per_row."""
    rows = np.linspace(0, n, chunks + 1).round().astype(np.uint64)
    return rows * np.uint64(per_row)


def write_knn(path, x, k, chunks=4, metric="euclidean", precision="float64", done=None, scales=True):
    """A `tdsolve knn --k K` file of points x; done: the flags (all 1 by default)."""
    n, d = x.shape
    ind, dist = knn_reference(x, k, metric, precision)
    with h5py.File(path, "w") as f:
        _root(f, f"tdsolve knn --k {k} --output {path}", x, metric, precision, k=k)
        ds = f.create_dataset("distances", data=dist)
        for a, v in (("n", np.uint64(n)), ("neighbors", np.uint64(k)), ("layout", "knn"), ("metric", metric),
                     ("precision", precision), ("features", np.uint64(d)), ("block", np.uint64(16))):
            ds.attrs[a] = v
        di = f.create_dataset("indices", data=ind)
        for a, v in (("n", np.uint64(n)), ("neighbors", np.uint64(k)), ("layout", "knn")):
            di.attrs[a] = v
        g = f.create_group("progress")
        g.attrs["chunks"] = np.uint64(chunks)
        g.attrs["dataset"] = "/distances"
        g.attrs["elements"] = np.uint64(n * k)
        g["done"] = np.ones(chunks, np.uint8) if done is None else np.asarray(done, np.uint8)
        g["offsets"] = row_offsets(n, chunks, k)
        if scales:
            attach(f, ds, ("point", "neighbor"))
            attach(f, di, ("point", "neighbor"))
            attach(f, g["done"], ("progress/chunk",))
            attach(f, g["offsets"], ("progress/chunk_edge",))
    return ind, dist


def write_radius(path, x, radius, chunks=3, metric="euclidean", precision="float64", finished=True,
                 scales=True):
    """A `tdsolve knn --radius R` file of points x; finished=False: the file
    of a run stopped before its end (no pairs, every flag 0)."""
    n, d = x.shape
    pairs, dist = radius_reference(x, radius, metric, precision)
    if not finished:
        pairs, dist = pairs[:0], dist[:0]
    m = len(pairs)
    with h5py.File(path, "w") as f:
        _root(f, f"tdsolve knn --radius {radius!r} --output {path}", x, metric, precision, radius=radius)
        dp = f.create_dataset("pairs", shape=(0, 2), maxshape=(None, 2), chunks=(4096, 2), dtype="<i8")
        dd = f.create_dataset("distances", shape=(0,), maxshape=(None,), chunks=(8192,), dtype=dist.dtype)
        for a, v in (("n", np.uint64(n)), ("radius", float(radius)), ("layout", "pairs"), ("metric", metric),
                     ("precision", precision), ("features", np.uint64(d)), ("block", np.uint64(16))):
            dp.attrs[a] = v
        if scales:  # at creation, while /pairs has 0 rows
            attach(f, dp, ("pair", "pair_end"))
            attach(f, dd, ("pair",))
        dp.resize((m, 2))
        dd.resize((m,))
        if m:
            dp[...] = pairs
            dd[...] = dist
        g = f.create_group("progress")
        g.attrs["chunks"] = np.uint64(chunks)
        g.attrs["dataset"] = ""
        g.attrs["elements"] = np.uint64(n * (n - 1) // 2)
        g["done"] = np.full(chunks, 1 if finished else 0, np.uint8)
        rows = np.linspace(0, n, chunks + 1).round().astype(np.int64)
        g["offsets"] = np.array([r * n - r * (r + 1) // 2 for r in rows], np.uint64)  # condensed row starts
        if scales:
            attach(f, g["done"], ("progress/chunk",))
            attach(f, g["offsets"], ("progress/chunk_edge",))
    return pairs, dist
