"""Run tdsolve's commands on NumPy arrays in this process, and read tdsolve
result files fast.

    d = tdsolve.pdist(X)                     # as scipy's pdist; cdist, hist, knn, collide, atm,
                                             # NearestNeighbors too (tdsolve._api)

    import tdsolve

    with tdsolve.open("d.h5") as r:          # tdsolve edm; IncompleteResult unless complete
        r.n, r.shape, len(r)                 # n points; (C(n,2),) condensed values
        v = r[1000:2000]                     # the condensed vector, NumPy-style
        band = r.rows(100, 200)              # rows 100..199 of the n x n matrix
        B = r.block((0, 50), (500, 600))     # rows 0..49 x columns 500..599
        for offset, values in r.iter_chunks():   # out of core, chunk by chunk
            ...

    with tdsolve.open("t.h5") as r:          # tdsolve triplet: three-body energies
        r.energy, r.energy_per_point, r.forces   # the total, float64[n], float64[n, 3]
        e = r[tdsolve.triplet_index(r.n, 0, 1, 2)]   # with --store-triplets: the packed C(n,3)
                                                     # energies, itertools.combinations order

    with tdsolve.open("f.h5") as r:          # tdsolve fractal: Game of Life on an NBB fractal
        r.steps, r.live                      # the step of each snapshot; live cells at every step
        v = r.state(-1)                      # the last snapshot, uint8[k^level], compact order
        x, y = r.lambda_map(range(r.cells))  # compact -> embedded; r.nu_map(x, y) back (-1 off it)
        img = r.image(-1)                    # n x n: 1 live, 0 dead, 255 off the fractal
        r.save_png("f.png")

    with tdsolve.open("k.h5") as r:          # tdsolve knn --k K: the K nearest of each point
        ind, dist = r.rows(0, 100)           # int64 and float [100, K], nearest first; r.indices, r.distances
        for first_row, ind, dist in r.iter_chunks():
            ...

    with tdsolve.open("p.h5") as r:          # tdsolve knn --radius R: all pairs within R
        r.count, r.pairs, r.distances        # m; int64[m, 2] (i < j, sorted); [m]
        S = r.to_sparse()                    # n x n upper-triangular scipy.sparse.coo_matrix

    with tdsolve.open("c.h5") as r:          # tdsolve collide: the spheres that overlap
        r.count, r.pairs, r.distances, r.dim # m; int64[m, 2] (i < j, sorted); centre distances [m]

    with tdsolve.open("d.h5", require_complete=False) as r:   # a stopped run's FILE.h5.partial too
        v = r[:]                             # NaN where a chunk is not flagged done; integer results
                                             # (knn indices, fractal states) raise IncompleteResult there

    tdsolve.check("d.h5").exit_code          # 0, 3 or 1: as `tdsolve info d.h5`
    tdsolve.validate("d.h5")                 # [] when the file is exactly what schema.json says of its kind

`python3 -m tdsolve FILE.h5` prints the verdict and exits as `tdsolve info`;
`python3 -m tdsolve png FILE.h5 OUT.png [--snapshot I]` draws a fractal's snapshot.
"""
from ._result import (AdfResult, CollideResult, CrossResult, EdmResult, HistResult, IncompleteResult, KnnResult, PairsResult,
                      Result, TripletResult, UnreadableResult, open, pair_index, triplet_index)
from ._fractal import FractalMaps, FractalResult, fractal_presets, parse_table
from ._verdict import (COMPLETE, INCOMPLETE, INCONSISTENT, NOT_A_RESULT, UNREADABLE, Verdict, check,
                       pair_count, triplet_count)
from ._validate import validate
from ._schema import SCHEMA, SCHEMA_VERSION
from ._api import Error, NearestNeighbors, atm, cdist, collide, hist, knn, pdist

__version__ = "0.1.0"

__all__ = ["pdist", "cdist", "hist", "knn", "collide", "atm", "NearestNeighbors", "Error", "open", "check", "validate", "SCHEMA", "SCHEMA_VERSION", "Verdict", "Result", "EdmResult", "CrossResult", "HistResult", "AdfResult", "TripletResult",
           "KnnResult", "PairsResult", "CollideResult", "FractalResult", "FractalMaps", "fractal_presets", "parse_table",
           "IncompleteResult", "UnreadableResult", "pair_index", "pair_count", "triplet_index", "triplet_count",
           "COMPLETE", "INCOMPLETE", "INCONSISTENT", "NOT_A_RESULT", "UNREADABLE"]
