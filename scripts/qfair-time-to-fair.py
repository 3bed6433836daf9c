#!/usr/bin/env python3
"""Time to fair of a late joiner, from one lab run's folder (docs/results.md,
qfair "late joiner" tables).

Usage: scripts/qfair-time-to-fair.py RUN_DIR [RUN_DIR ...]
  RUN_DIR: a run folder written by `rttfairctl lab run/compare` (it holds
  scenario.toml and rep<N>/goodput.csv).

The joiner is the flow that starts last. Its fair share is the link's
goodput capacity (rate x 1448/1514) over the number of flows running. Time
to fair is the first second k after the join from which the joiner's
per-second goodput stays within 20 % of that share for 5 s (the samples
ending at join + k ... join + k + 4); "never" if no such k before the run
ends. Prints one line per repetition: folder, repetition, CCA, seconds.

Only the standard library: the run folder is TOML + CSV, and the rule is
a few lines; a dependency would cost more than it saves.
"""

import csv
import sys
import tomllib
from pathlib import Path

MSS, WIRE = 1448, 1514
TOLERANCE = 0.20
HOLD_S = 5


def flows_of(scenario):
    """(group, cca, start_s, stop_s) per flow, groups expanded by count."""
    out = []
    for g in scenario["flows"]:
        for _ in range(int(g.get("count", 1))):
            out.append(
                (
                    g.get("group", ""),
                    g["cca"],
                    float(g.get("start_s", 0.0)),
                    float(g.get("stop_s", scenario["duration_s"])),
                )
            )
    return out


def time_to_fair(samples, join_s, share):
    """First k (s after the join) from which HOLD_S samples in a row are
    within TOLERANCE of share; None if never. samples: {t_end: bps}."""
    ends = sorted(t for t in samples if t > join_s + 0.5)
    ok = [abs(samples[t] - share) <= TOLERANCE * share for t in ends]
    for i in range(len(ends) - HOLD_S + 1):
        if all(ok[i : i + HOLD_S]):
            return round(ends[i] - join_s)
    return None


def main(dirs):
    if not dirs:
        sys.exit("usage: qfair-time-to-fair.py RUN_DIR [RUN_DIR ...]")
    for d in map(Path, dirs):
        try:
            scenario = tomllib.loads((d / "scenario.toml").read_text())
        except (OSError, tomllib.TOMLDecodeError) as e:
            sys.exit(f"qfair-time-to-fair: {d}: no readable scenario.toml: {e}")
        flows = flows_of(scenario)
        joiner = max(range(len(flows)), key=lambda i: flows[i][2])
        join_s = flows[joiner][2]
        if join_s <= 0:
            sys.exit(f"qfair-time-to-fair: {d}: no flow starts after the others")
        running = sum(1 for f in flows if f[2] <= join_s < f[3])
        capacity = scenario["bottleneck"]["rate_mbit"] * 1e6 * MSS / WIRE
        share = capacity / running
        reps = sorted(d.glob("rep*/goodput.csv"))
        if not reps:
            sys.exit(f"qfair-time-to-fair: {d}: no rep*/goodput.csv")
        for path in reps:
            samples = {}
            with path.open() as f:
                for row in csv.DictReader(f):
                    if int(row["flow"]) == joiner:
                        samples[float(row["t"])] = float(row["goodput_bps"])
            k = time_to_fair(samples, join_s, share)
            after = scenario["duration_s"] - join_s
            verdict = f"{k} s" if k is not None else f"never ({after:.0f} s)"
            print(f"{d}\t{path.parent.name}\t{flows[joiner][1]}\t{verdict}")


if __name__ == "__main__":
    main(sys.argv[1:])
