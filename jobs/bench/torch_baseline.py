#!/usr/bin/env python3
"""torch.cdist and torch.pdist on the GPU, on the very points tdsolve bench
reads (an .npy file), timed with CUDA events: median of --repeat runs after
a warm-up. Prints one CSV row per (function, precision).

torch.cdist writes the full n x n matrix; where it does not fit in GPU
memory it runs in row slabs and the slab times are summed (the same work).
"""
import argparse
import statistics
import sys

import numpy as np
import torch


def timed(fn, repeat):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(repeat):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        out.append(start.elapsed_time(stop))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("points", help=".npy file of n x d points")
    ap.add_argument("--precision", default="float32", choices=["float32", "float64"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-pdist", action="store_true")
    ap.add_argument("--header", action="store_true")
    a = ap.parse_args()
    dtype = torch.float32 if a.precision == "float32" else torch.float64
    x = torch.from_numpy(np.load(a.points)).to("cuda", dtype)
    n, d = x.shape
    item = x.element_size()
    if a.header:
        print("function,n,d,precision,slabs,median_ms,min_ms,values_written,gbytes_per_s")
    free, _ = torch.cuda.mem_get_info()
    slabs = 1
    while (n // slabs + 1) * n * item > 0.8 * free:
        slabs *= 2
    bounds = np.linspace(0, n, slabs + 1).astype(int)
    outs = [None]

    def cdist():
        for s in range(slabs):
            outs[0] = torch.cdist(x[bounds[s]:bounds[s + 1]], x)
            outs[0] = None if slabs > 1 else outs[0]

    ms = timed(cdist, a.repeat)
    outs[0] = None
    torch.cuda.empty_cache()
    med = statistics.median(ms)
    print(f"torch.cdist,{n},{d},{a.precision},{slabs},{med:.3f},{min(ms):.3f},{n * n},{n * n * item / med / 1e6:.1f}")
    sys.stdout.flush()
    if not a.skip_pdist:
        m = n * (n - 1) // 2
        if m * item < 0.8 * torch.cuda.mem_get_info()[0]:
            ms = timed(lambda: torch.pdist(x), a.repeat)
            med = statistics.median(ms)
            print(f"torch.pdist,{n},{d},{a.precision},1,{med:.3f},{min(ms):.3f},{m},{m * item / med / 1e6:.1f}")
        else:
            print(f"torch.pdist,{n},{d},{a.precision},0,nan,nan,{m},nan  # does not fit in GPU memory")
    torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
