#!/usr/bin/env python3
"""Draws the map laboratory's sweep (tdsolve bench --problem dummy|edm|collide
--csv, jobs/device/lab-gpu.sh) in the papers' style (seed 002, figure 5): the
improvement factor I = T_bb / T_map against n, one panel per test (dummy, EDM
with 1-4 features, collision in 1-D and 3-D), one line per map, I = 1 (the
bounding box) drawn solid. A map whose coverage check failed at a size is
marked with an x there. Also prints, per test, each map's median I over the
sizes and the first n at which its check failed.

usage: lab_plot.py LAB.csv OUT.png [--title TEXT]
"""
import argparse
import csv
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {"ltm": ("tab:red", "-"), "ltm-x": ("tab:orange", "--"), "ltm-n": ("tab:brown", "--"),
         "ltm-r": ("tab:pink", "--"), "rb": ("tab:blue", "-."), "rec": ("tab:green", "-."),
         "utm": ("tab:purple", ":"), "utm-exact": ("tab:gray", ":")}


def test_name(problem, features):
    if problem == "dummy":
        return "dummy"
    if problem == "edm":
        return f"EDM d={features}"
    return f"collision {features}-D"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("png")
    ap.add_argument("--title", default="")
    a = ap.parse_args(argv)
    rows = list(csv.DictReader(open(a.csv)))
    if not rows:
        sys.exit(f"lab_plot.py: no rows in {a.csv}")
    # test -> map -> [(n, I, checked)]
    data = defaultdict(lambda: defaultdict(list))
    for r in rows:
        data[test_name(r["problem"], r["features"])][r["map"]].append(
            (int(r["n"]), float(r["improvement"]), r["checked"]))
    tests = sorted(data, key=lambda t: (not t.startswith("dummy"), not t.startswith("EDM"), t))
    cols = min(3, len(tests))
    rws = (len(tests) + cols - 1) // cols
    fig, axes = plt.subplots(rws, cols, figsize=(5.2 * cols, 3.6 * rws), squeeze=False)
    for ax, t in zip(axes.flat, tests):
        ax.axhline(1.0, color="black", lw=1.5, label="bb")
        for m, pts in sorted(data[t].items()):
            if m == "bb":
                continue
            pts.sort()
            color, ls = STYLE.get(m, (None, "-"))
            ax.plot([p[0] for p in pts], [p[1] for p in pts], ls, color=color, lw=1.2, label=m)
            bad = [p for p in pts if p[2] == "wrong"]
            if bad:
                ax.plot([p[0] for p in bad], [p[1] for p in bad], "x", color=color or "black", ms=6)
        ax.set_title(t)
        ax.set_xlabel("n")
        ax.set_ylabel("I = T_bb / T_map")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(tests):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7, ncol=2)
    device = rows[0]["device"].replace("cuda: ", "")
    fig.suptitle(a.title or f"tdsolve map laboratory, {device}, B = {rows[0]['block']} (x: coverage check failed)")
    fig.tight_layout()
    fig.savefig(a.png, dpi=80)
    print(f"{'test':16s} {'map':14s} {'median I':>9s} {'min I':>7s} {'max I':>7s}  first wrong n")
    for t in tests:
        for m, pts in sorted(data[t].items()):
            if m == "bb":
                continue
            i = [p[1] for p in pts]
            wrong = [p[0] for p in sorted(pts) if p[2] == "wrong"]
            print(f"{t:16s} {m:14s} {statistics.median(i):9.3f} {min(i):7.3f} {max(i):7.3f}  "
                  f"{wrong[0] if wrong else '-'}")


if __name__ == "__main__":
    main()
