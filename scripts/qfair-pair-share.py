#!/usr/bin/env python3
"""qfair's share of the link against one flow of another CCA (issue 14's
cubic target: >= 30 % at >= 1 BDP), per pair point and run, with the
share of the summary window qfair spent in competitive mode (bpf.csv), the
mean and the worst; optionally beside older runs of the same points.
A point is a run folder named NAME-<other>+qfair (scripts/two-flow.sh's
scenarios through `rttfairctl lab run`), one per run root.

usage: qfair-pair-share.py ROOT... [-- OLDER_ROOT...]
"""
import csv
import glob
import json
import os
import sys


def share_of(folder):
    """(qfair's % of the goodput, % of bpf samples competitive, utilization %),
    or None when the run is not a pair."""
    rep = os.path.join(folder, "rep0")
    with open(os.path.join(rep, "summary.json")) as f:
        s = json.load(f)
    S, flows = s["summary"], s["flows"]
    goodput = S["flow_goodput_mbit"]
    if len(goodput) != 2:
        return None  # not a pair (qfair-pair-cubic-leaves has three flows)
    q = next(i for i, fl in enumerate(flows) if fl["cca"] == "qfair")
    w0, w1 = S["window"]["start_s"], S["window"]["end_s"]
    with open(os.path.join(rep, "bpf.csv"), newline="") as f:
        rows = [r for r in csv.DictReader(f)
                if r["flow"] == str(flows[q]["index"]) and w0 <= float(r["t"]) <= w1]
    comp = sum(1 for r in rows if float(r["qfair_competitive"]) != 0) / max(1, len(rows))
    return 100 * goodput[q] / sum(goodput), 100 * comp, 100 * S["utilization"]


def runs(roots, point):
    found = [share_of(f"{r}/{point}") for r in roots if os.path.exists(f"{r}/{point}/rep0/summary.json")]
    return [f for f in found if f is not None]


def cells(rs):
    if not rs:
        return "-", "-"
    each = " / ".join(f"{r[0]:.0f} ({r[1]:.0f})" for r in rs)
    return each, f"{sum(r[0] for r in rs) / len(rs):.0f} % ({min(r[0] for r in rs):.0f})"


def main(args):
    if not args:
        sys.exit(__doc__.strip().splitlines()[-1])
    cut = args.index("--") if "--" in args else len(args)
    new, old = args[:cut], args[cut + 1:]
    points = sorted({os.path.basename(p) for r in new for p in glob.glob(f"{r}/*+qfair")})
    print("| point | runs: qfair % (competitive %) | mean (worst) | older runs | older mean (worst) | utilization |")
    print("|---|---|---|---|---|---|")
    for p in points:
        n, o = runs(new, p), runs(old, p)
        if not n:
            continue
        util = " / ".join(f"{r[2]:.1f} %" for r in n)
        print(f"| {p} | {' | '.join(cells(n))} | {' | '.join(cells(o))} | {util} |")


if __name__ == "__main__":
    main(sys.argv[1:])
