#!/usr/bin/env python3
"""Naive PyTorch baseline for `tdsolve triplet`: the Axilrod-Teller-Muto
energy and forces of all triplets i<j<k, in slabs of i, as a user would
write it: for a slab of s values of i, the (s, n, n) tensors of the three
squared distances, the energy with the i<j<k mask, and the forces by
autograd. Every slab computes all n*n pairs (j, k) and masks 5/6 of them.

Timed with CUDA events after a warm-up slab. For large n only --sample
slabs are run (spread over i) and the total is their time scaled by
slabs/sampled: each slab costs the same (it computes all n*n pairs whatever
i is). Prints one CSV row: n, precision, slab, slabs, sampled, seconds
(measured), seconds_total (scaled), triplets_per_s, energy (of the slabs
run; the whole sum when not sampled).
"""
import argparse
import math

import numpy as np
import torch


def slab_energy(x, r2, i0, i1, nu):
    n = x.shape[0]
    xi = x[i0:i1]
    a = sum((xi[:, c, None] - x[None, :, c]) ** 2 for c in range(3))  # (s, n): r_ij^2 (and r_ik^2)
    A = a[:, :, None]
    C = a[:, None, :]
    B = r2[None, :, :]
    idx = torch.arange(n, device=x.device)
    gi = torch.arange(i0, i1, device=x.device)
    mask = (gi[:, None, None] < idx[None, :, None]) & (idx[None, :, None] < idx[None, None, :])
    abc = torch.where(mask, A * B * C, torch.ones_like(A))
    pa, pb, pc = A + C - B, A + B - C, B + C - A
    e = nu * abc.pow(-1.5) + 0.375 * nu * pa * pb * pc * abc.pow(-2.5)
    return torch.where(mask, e, torch.zeros_like(e)).sum()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("points", help=".npy file of n x 3 points")
    ap.add_argument("--precision", default="float32", choices=["float32", "float64"])
    ap.add_argument("--slab", type=int, default=0, help="values of i per slab (0: fit ~2 GB tensors)")
    ap.add_argument("--sample", type=int, default=0, help="run only this many slabs (0: all)")
    ap.add_argument("--nu", type=float, default=1.0)
    ap.add_argument("--header", action="store_true")
    a = ap.parse_args()
    dtype = torch.float32 if a.precision == "float32" else torch.float64
    x0 = torch.from_numpy(np.load(a.points)).to("cuda", dtype)
    n = x0.shape[0]
    esize = 4 if dtype == torch.float32 else 8
    slab = a.slab or max(1, int(2e9 / (n * n * esize)))
    slabs = math.ceil(n / slab)
    order = list(range(slabs))
    if a.sample and a.sample < slabs:
        order = [round(k * (slabs - 1) / (a.sample - 1)) for k in range(a.sample)] if a.sample > 1 else [0]
    x = x0.clone().requires_grad_(True)
    forces = torch.zeros_like(x0)

    def step(s):
        i0, i1 = s * slab, min(n, (s + 1) * slab)
        x.grad = None
        r2 = sum((x[:, c, None] - x[None, :, c]) ** 2 for c in range(3))  # (n, n)
        e = slab_energy(x, r2, i0, i1, a.nu)
        e.backward()
        return e.detach(), x.grad

    step(order[0])  # warm-up
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    total_e = torch.zeros((), device="cuda", dtype=torch.float64)
    start.record()
    for s in order:
        e, g = step(s)
        total_e += e.double()
        forces -= g
    stop.record()
    stop.synchronize()
    seconds = start.elapsed_time(stop) * 1e-3
    scaled = seconds * slabs / len(order)
    triplets = n * (n - 1) * (n - 2) // 6
    if a.header:
        print("n,precision,slab,slabs,sampled,seconds,seconds_total,triplets_per_s,energy")
    print(f"{n},{a.precision},{slab},{slabs},{len(order)},{seconds:.4f},{scaled:.4f},{triplets / scaled:.4g},"
          f"{total_e.item():.17g}")


if __name__ == "__main__":
    main()
