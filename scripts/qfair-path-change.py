#!/usr/bin/env python3
"""A path RTT change run, one markdown row per run folder: the changed
flow's first three drains after the change (time, verdict, minimum m),
the drain that raised its R^, time to fair (summary.json, lab/src/
time_to_fair.rs), Jain over the summary window, and the mean of
per-second Jain (goodput.csv) after the change and after the change
+ 6 s. For scenarios/qfair-rtt-change*.toml (docs/results.md, session 18).

usage: qfair-path-change.py RUN_FOLDER...   (a folder holding summary.json and rep0/)
"""
import csv
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qfair_drains import raised  # noqa: E402


def per_second_jain(goodput_csv, after_s):
    """Mean over seconds t > after_s of Jain's index of the flows' goodput."""
    by_t = {}
    with open(goodput_csv, newline="") as f:
        for row in csv.DictReader(f):
            by_t.setdefault(float(row["t"]), []).append(float(row["goodput_bps"]))
    js = [sum(x) ** 2 / (len(x) * sum(v * v for v in x))
          for t, x in by_t.items() if t > after_s and len(x) > 1 and sum(x) > 0]
    return sum(js) / len(js)


def row_of(folder):
    with open(f"{folder}/summary.json") as f:
        s = json.load(f)["summary"]
    ttf = s["time_to_fair"]
    at, flow = ttf["event_s"], ttf["flow"]
    with open(f"{folder}/rep0/drains.csv", newline="") as f:
        drains = [r for r in csv.DictReader(f) if int(r["flow"]) == flow and float(r["t"]) > at]
    seq = "; ".join(f"{float(r['t']):.1f} {r['verdict']} {float(r['drain_min_ms']):.2f}" for r in drains[:3])
    raise_at = next((f"+{float(r['t']) - at:.1f} s (drain {i + 1})" for i, r in enumerate(drains)
                     if raised(r)),
                    "never")
    fair = f"{ttf['seconds']:.0f} s" if ttf.get("seconds") is not None else f"never ({ttf['watched_s']:.0f} s)"
    g = f"{folder}/rep0/goodput.csv"
    return (f"| {folder} | {seq} | {raise_at} | {fair} | {s['jain']:.3f} | "
            f"{per_second_jain(g, at):.3f} / {per_second_jain(g, at + 6):.3f} |")


def main(folders):
    if not folders:
        sys.exit(__doc__.strip().splitlines()[-1])
    print("| run | changed flow's drains after the change: t, verdict, m (ms) | R^ raised | time to fair | Jain | per-second Jain after the change / after +6 s |")
    print("|---|---|---|---|---|---|")
    for folder in folders:
        print(row_of(folder.rstrip("/")))


if __name__ == "__main__":
    main(sys.argv[1:])
