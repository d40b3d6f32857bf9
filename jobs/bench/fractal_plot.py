#!/usr/bin/env python3
"""Draws the fractal benchmark of jobs/device/fractal-gpu.sh: time per step
against the level for each strategy (the best rho of each), and the speedup
of the compact run over the bounding box, as the paper's figures 10-13.

usage: fractal_plot.py BENCH.csv OUT.png [--shape sierpinski-triangle] [--title TEXT]
"""
import argparse
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("png")
    ap.add_argument("--shape", default="sierpinski-triangle")
    ap.add_argument("--title", default="")
    a = ap.parse_args(argv)
    rows = [r for r in csv.DictReader(open(a.csv)) if r["shape"] == a.shape]
    if not rows:
        sys.exit(f"fractal_plot.py: no rows for shape {a.shape} in {a.csv}")
    # strategy -> level -> (ms per step, rho): the best rho of each.
    best = defaultdict(dict)
    for r in rows:
        name = r["map"] + (" + tensor cores" if r["tensor_cores"] == "1" else "")
        level, ms = int(r["level"]), float(r["median_ms_per_step"])
        if level not in best[name] or ms < best[name][level][0]:
            best[name][level] = (ms, int(r["rho"]))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    labels = {"bb": "BB (embedded)", "lambda": "λ (embedded, compact grid)", "nu": "ν (compact)",
              "nu + tensor cores": "ν (compact) + tensor cores"}
    colors = {"bb": "tab:red", "lambda": "tab:blue", "nu": "tab:green", "nu + tensor cores": "tab:purple"}
    for name in ("bb", "lambda", "nu", "nu + tensor cores"):
        if name not in best:
            continue
        levels = sorted(best[name])
        ax1.plot(levels, [best[name][l][0] for l in levels], "o-", label=labels[name],
                 color=colors[name])
    ax1.set_yscale("log")
    ax1.set_xlabel("level r (n = s^r)")
    ax1.set_ylabel("ms per step (best ρ)")
    ax1.legend()
    ax1.grid(alpha=0.3)
    for name in ("lambda", "nu", "nu + tensor cores"):
        common = sorted(set(best.get(name, {})) & set(best.get("bb", {})))
        if common:
            ax2.plot(common, [best["bb"][l][0] / best[name][l][0] for l in common], "o-",
                     label=labels[name], color=colors[name])
    ax2.axhline(1, color="grey", lw=0.8)
    ax2.set_yscale("log")
    ax2.set_xlabel("level r")
    ax2.set_ylabel("speedup over BB")
    ax2.legend()
    ax2.grid(alpha=0.3)
    device = rows[0]["device"]
    fig.suptitle(a.title or f"tdsolve fractal, {a.shape}, Game of Life: {device}")
    fig.tight_layout()
    fig.savefig(a.png, dpi=90)
    print(f"fractal_plot.py: wrote {a.png}")


if __name__ == "__main__":
    main()
