#!/usr/bin/env python3
"""The general-path table of docs/performance.md from lab-gpu.sh part 6's
CSV (general-<gpu>.csv): per case λ2 and BB medians, I = BB / λ2, λ2's share
of cudaMemset over the same bytes and, for float32 edm, its share of the
FP32 roofline: pairs × d × 2 lane operations (subtract, fused multiply-add)
at SMs × 128 lanes × the maximum SM clock (H100 SXM and H200: 132 SMs at
1980 MHz, 3.35e13 a second; --peak for another GPU).

    python3 jobs/bench/general_table.py /tmp/tdsolve-lab/general-h100.csv
    python3 jobs/bench/general_table.py <(git show 68463c1:docs/figures/general-h100.csv)  # as measured
"""
import argparse
import csv
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--peak", type=float, default=132 * 128 * 1.98e9, help="FP32 lane operations a second")
    a = ap.parse_args()
    cases = {}
    for r in csv.DictReader(open(a.csv)):
        problem = "hist" if r["problem"] == "hist" else "edm"
        key = (problem, r["precision"], int(r["n"]), int(r["d"]))
        cases.setdefault(key, {})[r["map"]] = r
    print("| problem | precision | n | d | λ2 ms | BB ms | I = BB / λ2 | λ2 % of memset | λ2 % of FP32 roofline |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for key in sorted(cases):
        problem, precision, n, d = key
        c = cases[key]
        if "lambda" not in c or "bb" not in c:
            print(f"missing map for {key}", file=sys.stderr)
            continue
        lam, bb = float(c["lambda"]["median_ms"]), float(c["bb"]["median_ms"])
        memset = (f"{100 * float(c['lambda']['fraction_of_memset']):.1f}"
                  if problem == "edm" else "–")
        roof = "–"
        if precision == "float32" and d > 8:
            pairs = float(c["lambda"]["pairs"])
            roof = f"{100 * pairs * d * 2 / (lam * 1e-3) / a.peak:.1f}"
        best = "**" if lam <= bb else ""
        print(f"| {problem} | {precision} | {n} | {d} | {best}{lam:.2f}{best} | {bb:.2f} | {bb / lam:.3f} | "
              f"{memset} | {roof} |")


if __name__ == "__main__":
    main()
