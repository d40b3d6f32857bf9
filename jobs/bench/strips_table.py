#!/usr/bin/env python3
"""The strips-against-tiles table of docs/performance.md from lab-gpu.sh
part 7 (strips-<gpu>.csv and strips-which-<gpu>.csv, which says each row's
schedule: default, strips[:ROWS], lanes[:ROWS] or tiles:BLOCKS): per case
the λ2 and BB medians of every schedule, and the best share of cudaMemset
of each kind (strips, lanes, tiles).

    python3 jobs/bench/strips_table.py /tmp/tdsolve-lab/strips-h100.csv /tmp/tdsolve-lab/strips-which-h100.csv
    python3 jobs/bench/strips_table.py <(git show 68463c1:docs/figures/strips-h100.csv) \
        <(git show 68463c1:docs/figures/strips-which-h100.csv)  # as measured
"""
import csv
import sys
from collections import defaultdict


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    which = [line.strip().split(",") for line in open(sys.argv[2]) if line.strip()]
    if len(rows) != len(which):
        sys.exit(f"{len(rows)} rows against {len(which)} schedules")
    table, schedules = defaultdict(dict), []
    for r, w in zip(rows, which):
        sched, n, d, prec, map_, _ = w
        if (r["n"], r["d"], r["precision"]) != (n, d, prec):
            sys.exit(f"row {r['n']} {r['d']} {r['precision']} is not {w}")
        if sched not in schedules:
            schedules.append(sched)
        table[(prec, int(n), int(d))][(sched, map_)] = (float(r["median_ms"]), float(r["fraction_of_memset"]))
    print("| precision | n | d | " + " | ".join(f"{s} λ2 / BB ms" for s in schedules) +
          " | best strips % of memset | best lanes % | best tiles % |")
    print("|---|---:|---:|" + "---:|" * (len(schedules) + 3))
    for key in sorted(table):
        v = table[key]
        cells = []
        for s in schedules:
            a, b = v.get((s, "lambda")), v.get((s, "bb"))
            cells.append(f"{a[0]:.2f} / {b[0]:.2f}" if a and b else "")
        best = {}
        for kind in ("strips", "lanes", "tiles"):
            shares = [x[1] for k, x in v.items() if k[0].startswith(kind)]
            best[kind] = f"{100 * max(shares):.1f}" if shares else ""
        print(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(cells) + f" | {best['strips']} | {best['lanes']} | {best['tiles']} |")


if __name__ == "__main__":
    main()
