#!/usr/bin/env python3
"""Time to fair of a late joiner, or of a flow whose path RTT changes, from
one lab run's folder (docs/results.md, qfair "late joiner" and "path RTT
change" tables).

Usage: scripts/qfair-time-to-fair.py RUN_DIR [RUN_DIR ...]
  RUN_DIR: a run folder written by `rttfairctl lab run/compare` (it holds
  scenario.toml and rep<N>/goodput.csv).

The flow and the event: the flow with an rtt_change and the time of the
change if there is one, else the flow that starts last and its start. Its
fair share is the link's goodput capacity (rate x 1448/1514) over the
number of flows running then. Time to fair is the first second k after the
event from which the flow's per-second goodput stays within 20 % of that
share for 5 s (the samples ending at event + k ... event + k + 4); "never"
if no such k before the run ends. Prints one line per repetition: folder, repetition, CCA, seconds.

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
    """(group, cca, start_s, stop_s, rtt change time or None) per flow,
    groups expanded by count."""
    out = []
    for g in scenario["flows"]:
        change = g.get("rtt_change")
        for _ in range(int(g.get("count", 1))):
            out.append(
                (
                    g.get("group", ""),
                    g["cca"],
                    float(g.get("start_s", 0.0)),
                    float(g.get("stop_s", scenario["duration_s"])),
                    float(change["at_s"]) if change else None,
                )
            )
    return out


def flow_and_event(flows):
    """The flow to follow and the time of its event (see the docstring)."""
    changed = [i for i, f in enumerate(flows) if f[4] is not None]
    if changed:
        return changed[0], flows[changed[0]][4]
    joiner = max(range(len(flows)), key=lambda i: flows[i][2])
    return joiner, flows[joiner][2]


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
        joiner, join_s = flow_and_event(flows)
        if join_s <= 0:
            sys.exit(
                f"qfair-time-to-fair: {d}: no flow starts after the others"
                " and no path changes its RTT"
            )
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
