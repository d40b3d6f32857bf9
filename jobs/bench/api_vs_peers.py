#!/usr/bin/env python3
"""tdsolve's in-process Python calls (tdsolve.pdist, knn, NearestNeighbors)
against what a notebook user would call instead, on the same arrays in the
same process: SciPy's pdist and cKDTree, scikit-learn's brute-force
NearestNeighbors and, where a GPU and PyTorch are there, torch.cdist/topk.
Each row is the median of --repeat calls after one untimed call, from the
array in memory to the result in NumPy (tdsolve's pdist and cdist write
into the array they return; knn writes its temporary file and reads it
back, included); every result is checked against the row's reference.

    PYTHONPATH=build/python python3 jobs/bench/api_vs_peers.py [--n 20000 1000000] [--d 3 32] \
        [--cases pdist cdist knn]

Cases: pdist (float64) for n <= --pdist-max; cdist of the first
--cdist-rows points against all n (float64; torch.cdist on the GPU too) for
the same n; knn k=16 (float64) for every n and d, the brute-force peers
only where n * n * d <= --brute-max; the first call of the process (MPI's
start) is reported on its own."""
import argparse
import statistics
import time

import numpy as np


def rel_diff(got, want):
    """The largest |got - want| / want (want 0: a difference is huge)."""
    return float(np.max(np.abs(got - want) / np.maximum(want, 1e-300)))


def timed(f, repeat):
    # One untimed call first: the first touch of a result's fresh memory
    # (1.6 GB for pdist at n = 20000) costs whichever tool comes first in
    # the process up to seconds more on a virtual machine.
    out, times = f(), []
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return out, statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[20000, 1000000])
    ap.add_argument("--d", type=int, nargs="+", default=[3, 32])
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--pdist-max", type=int, default=20000, help="largest n of the pdist rows")
    ap.add_argument("--brute-max", type=float, default=4e11, help="largest n*n*d of a brute-force peer")
    ap.add_argument("--cdist-rows", type=int, default=2000, help="cdist: the first ROWS points against all")
    ap.add_argument("--cases", nargs="+", choices=["pdist", "cdist", "knn"], default=["pdist", "cdist", "knn"])
    a = ap.parse_args()

    import tdsolve
    from scipy.spatial import cKDTree
    from scipy.spatial.distance import cdist, pdist
    try:
        from sklearn.neighbors import NearestNeighbors
    except ImportError:
        NearestNeighbors = None
    try:
        import torch
        cuda = torch.cuda.is_available()
    except ImportError:
        torch, cuda = None, False

    t = time.perf_counter()
    tdsolve.pdist(np.zeros((2, 1)), device=a.device)
    print(f"# first call of the process (MPI's start, the extension's libraries): {time.perf_counter() - t:.3f} s")
    print(f"# {time.strftime('%Y-%m-%d %H:%M')}; median of {a.repeat}; seconds from the array in memory to NumPy")
    print("| case | tool | seconds | vs tdsolve | check |")
    print("|---|---|---:|---:|---|")

    def row(case, tool, secs, ref_secs, check):
        print(f"| {case} | {tool} | {secs:.3f} | {ref_secs / secs if tool != 'tdsolve' else 1.0:.2f} | {check} |",
              flush=True)

    for d in a.d:
        for n in a.n:
            X = np.random.default_rng(n + d).random((n, d))
            if n <= a.pdist_max and "pdist" in a.cases:
                case = f"pdist n={n} d={d}"
                got, ts = timed(lambda: tdsolve.pdist(X, device=a.device), a.repeat)
                row(case, "tdsolve", ts, ts, "")
                want, s = timed(lambda: pdist(X), a.repeat)
                err = rel_diff(got, want)
                row(case, "scipy pdist", s, ts, f"max rel diff {err:.1e}")
                del got, want
            if n <= a.pdist_max and "cdist" in a.cases:
                A = X[:a.cdist_rows]
                case = f"cdist {len(A)} x {n} d={d}"
                got, ts = timed(lambda: tdsolve.cdist(A, X, device=a.device), a.repeat)
                row(case, "tdsolve", ts, ts, "")
                want, s = timed(lambda: cdist(A, X), a.repeat)
                err = rel_diff(got, want)
                row(case, "scipy cdist", s, ts, f"max rel diff {err:.1e}")
                if cuda:
                    At, Xt = torch.from_numpy(A).cuda(), torch.from_numpy(X).cuda()

                    def torch_cdist():
                        D = torch.cdist(At, Xt).cpu().numpy()
                        torch.cuda.synchronize()
                        return D
                    want, s = timed(torch_cdist, a.repeat)
                    err = rel_diff(got, want)
                    row(case, "torch cdist (GPU, to NumPy)", s, ts, f"max rel diff {err:.1e} (its "
                        "|x|^2 - 2x.y + |y|^2: a point's distance to itself is not 0)")
                del got, want
            if "knn" not in a.cases:
                continue
            case = f"knn k={a.k} n={n} d={d}"
            (dist, ind), ts = timed(lambda: tdsolve.knn(X, a.k, device=a.device), a.repeat)
            row(case, "tdsolve", ts, ts, "")
            if d <= 8:
                (wd, wi), s = timed(lambda: cKDTree(X).query(X, k=a.k + 1, workers=-1), a.repeat)
                row(case, "cKDTree workers=-1", s, ts, f"rows differing {int((wi[:, 1:] != ind).any(axis=1).sum())}")
            brute = n * n * d <= a.brute_max
            if NearestNeighbors is not None and brute:
                nn = NearestNeighbors(n_neighbors=a.k + 1, algorithm="brute")
                (wd, wi), s = timed(lambda: nn.fit(X).kneighbors(X), 1)
                row(case, "sklearn brute", s, ts, f"rows differing {int((wi[:, 1:] != ind).any(axis=1).sum())} "
                    "(its |x|^2 - 2x.y + |y|^2 breaks near-ties)")
            if cuda and brute:
                Xt = torch.from_numpy(X).cuda()

                def torch_knn():
                    out = []
                    for s0 in range(0, n, 4096):
                        D = torch.cdist(Xt[s0:s0 + 4096], Xt)
                        out.append(torch.topk(D, a.k + 1, largest=False).indices[:, 1:].cpu())
                    torch.cuda.synchronize()
                    return torch.cat(out).numpy()
                wi, s = timed(torch_knn, a.repeat)
                row(case, "torch cdist+topk (GPU)", s, ts, f"rows differing {int((wi != ind).any(axis=1).sum())}")
            del dist, ind


if __name__ == "__main__":
    main()
