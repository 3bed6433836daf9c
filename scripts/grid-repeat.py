#!/usr/bin/env python3
"""A new run of a CCA's two-flow grid beside the run published in
docs/results.md (issue 14's "3 repetitions, mean and worst" for the
baselines, whose earlier grids are stored only as results.md's tables).

Reads the new run from a merged sweep folder's sweep.csv (`rttfairctl lab
merge`), and the published run from the first "Jain's index" and
"utilization" tables under HEADING in docs/results.md (a `lab merge`
compare.md pasted there, one column per CCA). Prints one markdown row per
point (published Jain, new Jain, their mean and the worst, the new run's
utilization, queueing delay and goodputs), then a summary: points meeting
issue 14's target (Jain >= 0.95 and utilization >= 97 % at >= 0.3 BDP; 0.1
BDP: Jain >= the rate's bound) in each run and on the mean of the two, the
median and largest change, and the points whose Jain moved by more than
0.09 (a flipped split).

usage: grid-repeat.py SWEEP_CSV CCA HEADING [--shallow-bound 0.85]
"""
import csv
import statistics
import sys

X, Y = "bottleneck.buffer.bdp", "flows[1].rtt_ms"
RESULTS = "docs/results.md"


def published(heading, cca):
    """{(rtt, bdp): (jain, utilization)} of `cca` in the tables under heading."""
    with open(RESULTS) as f:
        lines = f.read().splitlines()
    try:
        at = next(i for i, l in enumerate(lines) if l.strip().lstrip("#").strip() == heading)
    except StopIteration:
        sys.exit(f"grid-repeat: no heading {heading!r} in {RESULTS}")

    def table(title):
        i = next(j for j in range(at, len(lines)) if lines[j].startswith(title))
        i = next(j for j in range(i, len(lines)) if lines[j].startswith("|"))
        head = [c.strip() for c in lines[i].strip("|").split("|")]
        if cca not in head:
            sys.exit(f"grid-repeat: no column {cca} in {title!r} under {heading!r}")
        col, out = head.index(cca), {}
        for row in lines[i + 2:]:
            if not row.startswith("|"):
                break
            c = [v.strip() for v in row.strip("|").split("|")]
            value = float(c[col].split()[0])  # "0.939 (0.928)" or "97.4 %"
            out[(float(c[0]), float(c[1]))] = value
        return out

    jain, util = table("Jain's index"), table("utilization")
    return {k: (jain[k], util[k] / 100) for k in jain}


def fresh(path, cca):
    """{(rtt, bdp): row} of `cca` in sweep.csv."""
    with open(path, newline="") as f:
        return {(float(r[Y]), float(r[X])): r for r in csv.DictReader(f) if r["cca"] == cca}


def met(jain, util, bdp, shallow):
    return jain >= shallow if bdp < 0.3 else (jain >= 0.95 and util >= 0.97)


def main(argv):
    shallow = 0.85
    if "--shallow-bound" in argv:
        i = argv.index("--shallow-bound")
        shallow = float(argv[i + 1])
        del argv[i:i + 2]
    if len(argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    path, cca, heading = argv
    old, new = published(heading, cca), fresh(path, cca)
    if not new:
        sys.exit(f"grid-repeat: no {cca} rows in {path}")
    missing = sorted(set(new) ^ set(old))
    if missing:
        sys.exit(f"grid-repeat: the two runs' points differ: {missing}")
    groups = [c[len("goodput_mbit_"):] for c in next(iter(new.values())) if c.startswith("goodput_mbit_")]
    print(f"| other RTT | BDP | Jain published | Jain now | mean (worst) | util now | qdelay now | {' / '.join(groups)} now, Mbit/s |")
    print("|---|---|---|---|---|---|---|---|")
    deltas, flips = [], []
    count = {"published": [0, 0], "now": [0, 0], "mean": [0, 0]}  # [>= 0.3 BDP, 0.1 BDP]
    for k in sorted(new):
        r = new[k]
        rtt, bdp = k
        j0, u0 = old[k]
        j1, u1 = float(r["jain"]), float(r["utilization"])
        jm, um = (j0 + j1) / 2, (u0 + u1) / 2
        goodputs = " / ".join(f"{float(v):.1f}" for c, v in r.items() if c.startswith("goodput_mbit_"))
        print(f"| {rtt:g} | {bdp:g} | {j0:.3f} | {j1:.3f} | {jm:.3f} ({min(j0, j1):.3f}) "
              f"| {100 * u1:.1f} % | {float(r['qdelay_mean_ms']):.1f} ms | {goodputs} |")
        deltas.append(abs(j1 - j0))
        if abs(j1 - j0) > 0.09:
            flips.append(f"{rtt:g} ms at {bdp:g} BDP {j0:.3f} -> {j1:.3f}")
        slot = 1 if bdp < 0.3 else 0
        for name, (j, u) in {"published": (j0, u0), "now": (j1, u1), "mean": (jm, um)}.items():
            count[name][slot] += met(j, u, bdp, shallow)
    deep = sum(1 for k in new if k[1] >= 0.3)
    thin = len(new) - deep
    for name in ("published", "now", "mean"):
        print(f"{cca} {name}: met at {count[name][0]} of {deep} points at >= 0.3 BDP, "
              f"0.1 BDP >= {shallow} at {count[name][1]} of {thin}")
    print(f"{cca}: Jain change median {statistics.median(deltas):.3f}, largest {max(deltas):.3f}; "
          f"moved by more than 0.09 at {len(flips)}: {'; '.join(flips) or 'none'}")


if __name__ == "__main__":
    main(sys.argv[1:])
