#!/usr/bin/env python3
"""Every rise of qfair's R^ at a drain, from the lab's per-repetition
drains.csv (lab/src/results/drains.rs), named after the rule that most likely
made it (docs/algorithms.md, "Drains and R-hat"):

  P2      the first drain with the longer path: Eq. 10b, a step of the RTT
          floor since the previous drain that held;
  Eq10    the third of three drains that each saw a longer path
          (m > R^ + max(2 ms, R^/8)) and agree within 10 %.

drains.csv records the outcome (R^ before and after), not the rule, so the
name is read off the two drains before: a raise after two drains that
already saw a longer path is called Eq10, any other P2. Used to check that
P2 fires at path changes and nowhere else (docs/results.md, session 18).

For an Eq10 raise it also prints the lowest RTT the flow showed between
the streak's drains (bpf.csv's last_rtt_ms snapshots) and whether it
dipped so low that the streak's minima lie more than 10 % above it, which
since session 19 (qf_long_streak_next, "the floor held") restarts the
streak. A snapshot is
one sample, and a bucket's minimum is at most any of its samples, so
"dipped" is sound (the rule would have restarted the streak) while "held"
only means no snapshot shows the dip.

usage: qfair-drain-raises.py FOLDER...   (searched for */drains.csv)
"""
import csv
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qfair_drains import agree, raised, saw_longer_path  # noqa: E402


def floor_between(streak, flow, bpf_rows):
    """(lowest snapshot between the streak's drains, whether it dipped)."""
    lows, dipped = [], False
    mins = [float(r["drain_min_ms"]) for r in streak]
    for j in range(1, len(streak)):
        # after the drain and its refill, up to the next drain's start
        t0, t1 = float(streak[j - 1]["t"]) + 0.35, float(streak[j]["t"]) - 0.3
        low = min((float(r["last_rtt_ms"]) for r in bpf_rows
                   if r["flow"] == flow and t0 < float(r["t"]) < t1
                   and float(r["last_rtt_ms"]) > 0), default=None)
        if low is None:
            continue
        lows.append(low)
        floor = min(mins[:j + 1])
        dipped |= low < floor and not agree(floor, low)
    return (min(lows) if lows else None), dipped


def raises(rows):
    """(rule, row) for each drain of one flow, in order, that raised R^."""
    for i, row in enumerate(rows):
        if raised(row):
            prev = rows[max(0, i - 2):i]
            streak = len(prev) == 2 and all(saw_longer_path(p) for p in prev)
            yield ("Eq10" if streak else "P2"), row


def main(folders):
    if not folders:
        sys.exit(__doc__.strip().splitlines()[-1])
    totals = {"runs": 0, "drains": 0, "P2": 0, "Eq10": 0, "Eq10 dipped": 0}
    for folder in folders:
        for path in sorted(glob.glob(os.path.join(folder, "**", "drains.csv"), recursive=True)):
            totals["runs"] += 1
            by_flow = {}
            with open(path, newline="") as f:
                for row in csv.DictReader(f):
                    by_flow.setdefault(row["flow"], []).append(row)
            bpf_rows = None
            for flow, rows in sorted(by_flow.items()):
                totals["drains"] += len(rows)
                for rule, row in raises(rows):
                    totals[rule] += 1
                    floor = ""
                    if rule == "Eq10":
                        if bpf_rows is None:
                            with open(os.path.join(os.path.dirname(path), "bpf.csv"),
                                      newline="") as f:
                                bpf_rows = list(csv.DictReader(f))
                        i = rows.index(row)
                        low, dipped = floor_between(rows[i - 2:i + 1], flow, bpf_rows)
                        if dipped:
                            totals["Eq10 dipped"] += 1
                        floor = (f"\tlow between drains {low} ms "
                                 f"({'dipped' if dipped else 'held'})")
                    print(f"{rule}\t{path}\tt={row['t']}\tflow={flow}\t"
                          f"R^ {row['min_rtt_before_ms']} -> {row['min_rtt_after_ms']} ms\t"
                          f"m={row['drain_min_ms']}\tcompetitive "
                          f"{row['competitive_before']}->{row['competitive_after']}{floor}")
    print(" ".join(f"{k}={v}" for k, v in totals.items()))


if __name__ == "__main__":
    main(sys.argv[1:])
