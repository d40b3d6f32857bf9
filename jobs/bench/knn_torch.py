#!/usr/bin/env python3
"""PyTorch baseline for `tdsolve knn --k K`: the K nearest other points of
every point, as a user would write it on a GPU: for a slab of s rows,
torch.cdist(x[slab], x) (s x n), the point itself set to +inf, then
torch.topk(K, largest=False) (values sorted). Exact ties are not broken by
index (topk does not promise an order among equal values).

Timed with CUDA events after a warm-up slab. Every slab costs the same, so
with --sample only that many slabs (spread over the rows) are run and the
total is their time scaled by slabs/sampled. Prints one CSV row: n, d, k,
precision, slab, slabs, sampled, seconds (measured), seconds_total (scaled),
distances_per_s. With --faiss it also times FAISS's GPU brute-force index
(IndexFlatL2 on one GPU, search of all n points for K+1 neighbours) when
the faiss module is importable, else prints why not.
"""
import argparse
import math

import numpy as np
import torch


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("points", help=".npy file of n x d points")
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--precision", default="float32", choices=["float32", "float64"])
    ap.add_argument("--slab", type=int, default=0, help="rows per slab (0: ~4 GB of distances)")
    ap.add_argument("--sample", type=int, default=0, help="run only this many slabs (0: all)")
    ap.add_argument("--faiss", action="store_true")
    ap.add_argument("--header", action="store_true")
    a = ap.parse_args()
    dtype = torch.float32 if a.precision == "float32" else torch.float64
    x = torch.from_numpy(np.load(a.points)).to("cuda", dtype)
    n, d = x.shape
    esize = 4 if dtype == torch.float32 else 8
    slab = a.slab or max(1, int(4e9 / (n * esize)))
    slabs = math.ceil(n / slab)
    order = list(range(slabs))
    if a.sample and a.sample < slabs:
        order = [round(s * (slabs - 1) / (a.sample - 1)) for s in range(a.sample)] if a.sample > 1 else [0]

    def step(s):
        i0, i1 = s * slab, min(n, (s + 1) * slab)
        dist = torch.cdist(x[i0:i1], x)
        rows = torch.arange(i1 - i0, device=x.device)
        dist[rows, rows + i0] = float("inf")
        return torch.topk(dist, a.k, dim=1, largest=False, sorted=True)

    step(order[0])  # warm-up
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for s in order:
        vals, idx = step(s)
    stop.record()
    torch.cuda.synchronize()
    seconds = start.elapsed_time(stop) * 1e-3
    total = seconds * slabs / len(order)
    if a.header:
        print("impl,n,d,k,precision,slab,slabs,sampled,seconds,seconds_total,distances_per_s")
    print(f"torch,{n},{d},{a.k},{a.precision},{slab},{slabs},{len(order)},{seconds:.6f},{total:.6f},"
          f"{n * n / total:.4g}")
    if a.faiss:
        try:
            import faiss
        except Exception as e:  # noqa: BLE001
            print(f"faiss,{n},{d},{a.k},{a.precision},,,,,,  # not available here: {e}")
            return
        xs = np.ascontiguousarray(np.load(a.points).astype(np.float32))
        res = faiss.StandardGpuResources()
        index = faiss.GpuIndexFlatL2(res, d)
        index.add(xs)
        index.search(xs[:1000], a.k + 1)  # warm-up
        torch.cuda.synchronize()
        import time
        t0 = time.perf_counter()
        index.search(xs, a.k + 1)
        t = time.perf_counter() - t0
        print(f"faiss,{n},{d},{a.k},float32,,,,{t:.6f},{t:.6f},{n * n / t:.4g}")


if __name__ == "__main__":
    main()
