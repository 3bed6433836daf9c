#!/usr/bin/env python3
"""A new run of a CCA's two-flow grid beside its earlier runs (issue 14's
"3 repetitions, mean and worst" for the baselines, whose first grids are
stored only as docs/results.md's tables).

Reads the new run from a merged sweep folder's sweep.csv (`rttfairctl lab
merge`); the first run from the "Jain's index" and "utilization" tables
in HEADING's section of docs/results.md (the first table after the line
that starts with the table's name; a `lab merge` compare.md pasted
there, one column per CCA); and any further earlier runs from sweep.csv
files given with --earlier (in the order given; the repository keeps the
baselines' repeated grids under docs/data/grids/, and a run there is
named by its folder, "97c8eaa" for cubic-97c8eaa/sweep.csv). Prints
one markdown row per point (each run's Jain, their mean and the worst,
the new run's utilization, queueing delay and goodputs), then a summary:
points meeting issue 14's target (Jain >= 0.95 and utilization >= 97 % at
>= 0.3 BDP; 0.1 BDP: Jain >= the rate's bound) in each run, on the mean of
the runs and in every one of them, the median and largest spread of Jain
per point (largest run minus smallest), and the points met in every run
and those whose Jain spread by more than 0.09 (a flipped split).

A run kept only as a pasted table ("Jain now" and "util now" columns,
sessions 17-19) is read with --earlier-table LABEL=PREFIX: the first such
table after the line starting with PREFIX, before any --earlier run.

usage: grid-repeat.py SWEEP_CSV CCA HEADING [--earlier-table LABEL=PREFIX]... [--earlier SWEEP_CSV]... [--shallow-bound 0.85]
"""
import argparse
import csv
import os
import statistics
import sys

X, Y = "bottleneck.buffer.bdp", "flows[1].rtt_ms"
# The first runs' tables left docs/results.md when it became the current
# state; they are in git: `git show 27a330e:docs/results.md > /tmp/r.md`
# and GRID_REPEAT_RESULTS=/tmp/r.md.
RESULTS = os.environ.get("GRID_REPEAT_RESULTS", "docs/results.md")


def results_lines():
    """docs/results.md, one string per line: where every earlier run kept
    only as a table is read from."""
    with open(RESULTS) as f:
        return f.read().splitlines()


def table_after(lines, at):
    """The first markdown table at or after line `at`: its header cells and
    its body rows' cells (the separator line skipped)."""
    i = next((j for j in range(at, len(lines)) if lines[j].startswith("|")), None)
    if i is None:
        return [], []
    cells = lambda l: [v.strip() for v in l.strip().strip("|").split("|")]
    body = []
    for row in lines[i + 2:]:
        if not row.startswith("|"):
            break
        body.append(cells(row))
    return cells(lines[i]), body


def section_end(lines, at):
    """The line after the section whose heading is line `at`: the next
    heading of the same level or higher, outside code blocks (whose shell
    comments start with "#" too). A table missing from a section must be an
    error, not a same-named table of a later section (another run)."""
    level = len(lines[at]) - len(lines[at].lstrip("#"))
    fenced = False
    for j in range(at + 1, len(lines)):
        if lines[j].startswith("```"):
            fenced = not fenced
        elif not fenced and lines[j].startswith("#"):
            hashes = len(lines[j]) - len(lines[j].lstrip("#"))
            if hashes <= level and lines[j][hashes:hashes + 1] == " ":
                return j
    return len(lines)


def point(cells):
    """A table row's grid point, (other RTT, BDP): its first two cells."""
    return float(cells[0]), float(cells[1])


def number(cell):
    """A cell's leading number: "0.939 (0.928)" -> 0.939, "97.4 %" -> 97.4."""
    return float(cell.split()[0])


def published(heading, cca):
    """{(rtt, bdp): (jain, utilization)} of `cca` in the tables under heading."""
    lines = results_lines()
    try:
        at = next(i for i, l in enumerate(lines) if l.strip().lstrip("#").strip() == heading)
    except StopIteration:
        sys.exit(f"grid-repeat: no heading {heading!r} in {RESULTS}")

    end = section_end(lines, at)

    def table(title):
        # The line that introduces the table starts with its name
        # ("Jain's index (mean; worst of the repetitions in brackets):").
        i = next((j for j in range(at, end) if lines[j].startswith(title)), None)
        if i is None:
            sys.exit(f"grid-repeat: no {title!r} table under {heading!r}")
        head, body = table_after(lines, i)
        if cca not in head:
            sys.exit(f"grid-repeat: no column {cca} in {title!r} under {heading!r}")
        col = head.index(cca)
        return {point(c): number(c[col]) for c in body}

    jain, util = table("Jain's index"), table("utilization")
    return {k: (jain[k], util[k] / 100) for k in jain}


def pasted(label_prefix):
    """{(rtt, bdp): (jain, utilization)} from the first table after the
    line of docs/results.md that starts with PREFIX whose columns include
    "Jain now" and "util now" (how sessions 17-19 pasted a second run)."""
    label, _, prefix = label_prefix.partition("=")
    if not prefix:
        sys.exit("grid-repeat: --earlier-table wants LABEL=PREFIX")
    lines = results_lines()
    try:
        at = next(i for i, l in enumerate(lines) if l.startswith(prefix))
    except StopIteration:
        sys.exit(f"grid-repeat: no line starting {prefix!r} in {RESULTS}")
    head, body = table_after(lines, at)
    if "Jain now" not in head or "util now" not in head:
        sys.exit(f"grid-repeat: the table after {prefix!r} has no \"Jain now\" and \"util now\" columns")
    jc, uc = head.index("Jain now"), head.index("util now")
    return label, {point(c): (number(c[jc]), number(c[uc]) / 100) for c in body}


def rows(path, cca):
    """{(rtt, bdp): row} of `cca` in sweep.csv."""
    with open(path, newline="") as f:
        out = {(float(r[Y]), float(r[X])): r for r in csv.DictReader(f) if r["cca"] == cca}
    if not out:
        sys.exit(f"grid-repeat: no {cca} rows in {path}")
    return out


def label(path, cca, fallback):
    """A run's column name: its folder under docs/data/grids ("97c8eaa"
    for cubic-97c8eaa/sweep.csv), else `fallback`."""
    folder = os.path.basename(os.path.dirname(os.path.abspath(path)))
    return folder[len(cca) + 1:] if folder.startswith(cca + "-") else fallback


def jain_util(sweep):
    return {k: (float(r["jain"]), float(r["utilization"])) for k, r in sweep.items()}


def met(jain, util, bdp, shallow):
    return jain >= shallow if bdp < 0.3 else (jain >= 0.95 and util >= 0.97)


def main(argv):
    # argparse (stdlib) for the repeated --earlier flags and one-line errors.
    p = argparse.ArgumentParser(prog="grid-repeat.py", description=__doc__.split("\n\n")[0])
    p.add_argument("sweep_csv")
    p.add_argument("cca")
    p.add_argument("heading")
    p.add_argument("--earlier-table", action="append", default=[], metavar="LABEL=PREFIX")
    p.add_argument("--earlier", action="append", default=[], metavar="SWEEP_CSV")
    p.add_argument("--shallow-bound", type=float, default=0.85)
    a = p.parse_args(argv)
    path, cca, heading, shallow = a.sweep_csv, a.cca, a.heading, a.shallow_bound
    earlier, tables = a.earlier, a.earlier_table
    new = rows(path, cca)
    runs = [("published", published(heading, cca))]
    runs += [pasted(t) for t in tables]
    runs += [(label(p, cca, f"earlier {n + 2}"), jain_util(rows(p, cca))) for n, p in enumerate(earlier)]
    runs.append((label(path, cca, "now"), jain_util(new)))
    for name, run in runs[:-1]:
        differ = sorted(set(new) ^ set(run))
        if differ:
            sys.exit(f"grid-repeat: the {name} run's points differ from the new run's: {differ}")
    groups = [c[len("goodput_mbit_"):] for c in next(iter(new.values())) if c.startswith("goodput_mbit_")]
    names = [n for n, _ in runs]
    print(f"| other RTT | BDP | {' | '.join('Jain ' + n for n in names)} | mean (worst) "
          f"| util {names[-1]} | qdelay {names[-1]} | {' / '.join(groups)} {names[-1]}, Mbit/s |")
    print("|---|---|" + "---|" * (len(runs) + 4))
    spreads, flips, every = [], [], []
    count = {n: [0, 0] for n in names + ["mean", "every"]}  # [>= 0.3 BDP, 0.1 BDP]
    for k in sorted(new):
        r = new[k]
        rtt, bdp = k
        js = [run[k][0] for _, run in runs]
        us = [run[k][1] for _, run in runs]
        jm, um = statistics.mean(js), statistics.mean(us)
        goodputs = " / ".join(f"{float(v):.1f}" for c, v in r.items() if c.startswith("goodput_mbit_"))
        print(f"| {rtt:g} | {bdp:g} | {' | '.join(f'{j:.3f}' for j in js)} | {jm:.3f} ({min(js):.3f}) "
              f"| {100 * us[-1]:.1f} % | {float(r['qdelay_mean_ms']):.1f} ms | {goodputs} |")
        spread = max(js) - min(js)
        spreads.append(spread)
        if spread > 0.09:
            flips.append(f"{rtt:g} ms at {bdp:g} BDP {' / '.join(f'{j:.3f}' for j in js)}")
        slot = 1 if bdp < 0.3 else 0
        for name, j, u in [*zip(names, js, us), ("mean", jm, um)]:
            count[name][slot] += met(j, u, bdp, shallow)
        if all(met(j, u, bdp, shallow) for j, u in zip(js, us)):
            count["every"][slot] += 1
            every.append(f"{rtt:g} ms at {bdp:g} BDP")
    deep = sum(1 for k in new if k[1] >= 0.3)
    thin = len(new) - deep
    for name in names + ["mean", "every"]:
        title = {"mean": f"mean of {len(runs)}", "every": f"in each of the {len(runs)}"}.get(name, name)
        print(f"{cca} {title}: met at {count[name][0]} of {deep} points at >= 0.3 BDP, "
              f"0.1 BDP >= {shallow} at {count[name][1]} of {thin}")
    print(f"{cca}: met in each of the {len(runs)} at: {'; '.join(every) or 'none'}")
    print(f"{cca}: Jain spread over {len(runs)} runs median {statistics.median(spreads):.3f}, "
          f"largest {max(spreads):.3f}; more than 0.09 at {len(flips)}: {'; '.join(flips) or 'none'}")


if __name__ == "__main__":
    main(sys.argv[1:])
