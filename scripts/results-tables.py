#!/usr/bin/env python3
"""Recompute the tables of docs/results.md and README.md from docs/data.

A table that is computed from data is marked in the Markdown by a line
`<!-- table: KIND ARG... -->` right before it (a Markdown table, or for
`demo` a fenced block that holds the demo's printed table). Kinds:

  grid-summary SCENARIO      every CCA's runs of a two-flow grid: points
                             met at >= 0.3 BDP in each run and in every
                             run, 0.1 BDP, lowest Jain, utilization, queue
  grid-points SCENARIO CCA   one CCA's grid per point, each run's Jain
  demo FILE                  the demo's table, docs/data/demo/FILE.txt
  sweep FOLDER               a sweep's points, one row each (its swept
                             parameters, then Jain, utilization, queue and
                             each group's goodput): FOLDER under docs/data
                             holds the sweep's sweep.csv
  runs FOLDER                single runs, one row per subfolder of FOLDER
                             (under docs/data) holding a run's summary.json:
                             Jain, utilization, queue, goodput per group
  pooled FOLDER              repeated single runs, one row per subfolder
                             (a point) of FOLDER: every run's summary.json
                             in it or in its subfolders (a first run and
                             later ones of the same scenario) pooled by
                             repetition: Jain mean (worst), utilization
                             and queue means, each group's goodput per
                             repetition, the runs' binaries
  versus FOLDER CCA REF      one flow's goodput, CCA against REF: FOLDER
                             (under docs/data) holds one sweep folder per
                             case, NAME-CCA and NAME-REF; one row per case
                             and sweep point: both goodputs, their ratio,
                             queue and retransmissions
  shares FOLDER              single runs as `runs`, with flows grouped by
                             CCA name (qfair and qfair_b: drain groups):
                             each CCA's goodput over an even split among
                             the CCAs, the lowest flow's over an even
                             split among the flows, and the qfair object's
                             sha256 (8 digits: the law the run measured)
  aqm FOLDER [CCA]           issue 44's AQM set: every run's summary.json
                             anywhere under FOLDER (under docs/data; what
                             scripts/aqm-set.sh writes, sweeps' runs/
                             included), one row per point (flows' RTTs,
                             rate) x discipline x CCA (only CCA's if
                             given): Jain, utilization, queue, and per
                             flow the discipline's drops, CE marks and
                             mean sojourn (per repetition)
  ablation FOLDER            qfair's ablation (scripts/ablation.sh): FOLDER
                             (under docs/data) holds one subfolder per
                             rule switched off, and `baseline` (the whole
                             law), each with the sweep's runs; one row per
                             point (its run folder's name, the CCA's suffix
                             dropped) and rule: Jain mean (worst) and each
                             repetition's, utilization, queue, the change
                             of Jain's mean against the whole law, and
                             whether it is worse or better beyond the whole
                             law's run-to-run spread there (the range of
                             its repetitions) or within it
  ablation-matrix FOLDER [queue]
                             the same runs as `ablation`, a row per rule
                             and a column per point: the whole law's Jain
                             (mean, with its spread), then per rule the
                             change of Jain's mean, in bold when worse
                             beyond the spread, marked + when better
                             beyond it; the last column counts the points
                             the rule carries (worse without it). With
                             `queue`: the mean queueing delay instead,
                             the whole law's as mean (lowest-highest run),
                             a rule's in bold when above the highest run
  readme                     README's one results table

The grids' runs are listed, oldest first, in docs/data/grids/runs.csv
(one folder per run, holding `rttfairctl lab merge`'s sweep.csv and
provenance.json). Issue 14's target at a point: Jain >= 0.95 and
utilization >= 97 % at >= 0.3 BDP; at 0.1 BDP Jain >= 0.85 at 20 Mbit/s,
>= 0.90 at 100 Mbit/s.

usage: results-tables.py            print every marked table, recomputed
       results-tables.py --write    put them into the Markdown files
       results-tables.py --check    exit 1 with one line if a data file the
                                    pages name is missing or a marked table
                                    differs from its recomputation
       results-tables.py --points SCENARIO CCA   print a grid per point
       results-tables.py --aqm FOLDER [CCA]      print an AQM table (no
                                    marker needed: to look before adding one)
"""
import csv
import json
import os
import re
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = ["docs/results.md", "README.md"]
DATA = "docs/data"
GRIDS = os.path.join(DATA, "grids")
X, Y = "bottleneck.buffer.bdp", "flows[1].rtt_ms"
SHALLOW = {"qfair-grid-20m": 0.85, "qfair-grid-100m": 0.90}
DEMO = "demo-18b91a2"  # the demo run README quotes
ORDER = ["qfair", "bbr", "bbr3", "cubic", "bbr1", "fairtt", "adbbr"]
MARK = re.compile(r"^<!-- table: (.+?) -->\s*$")


class Fail(Exception):
    """One line for the user; the run stops with exit 1."""


def path(rel):
    return os.path.join(ROOT, rel)


def data_dir(folder):
    """FOLDER under docs/data, which must exist."""
    base = os.path.join(DATA, folder)
    if not os.path.isdir(path(base)):
        raise Fail(f"{base} is missing")
    return base


def read_json(rel):
    """A JSON file of the repository, which must exist."""
    if not os.path.exists(path(rel)):
        raise Fail(f"{rel} is missing")
    with open(path(rel)) as f:
        return json.load(f)


def run_folders(base):
    """The subfolders of base that hold a run's summary.json, in natural
    order (20m before 100m, phase100 before phase1000)."""
    names = sorted((d for d in os.listdir(path(base))
                    if os.path.exists(path(os.path.join(base, d, "summary.json")))), key=natural)
    if not names:
        raise Fail(f"{base} holds no run's summary.json")
    return names


def run_cells(s):
    """A run summary's Jain, utilization, queue and goodput per group, as
    the `runs` table shows them."""
    groups = ", ".join(f"{g} {v:.2f}" for g, v in sorted(s["goodput_mbit_by_group"].items()))
    return (f"{s['jain']:.3f} | {100 * s['utilization']:.1f} % | "
            f"{s['qdelay_mean_ms']:.1f} ms | {groups}")


def runs_index():
    """[(scenario, cca, folder, binary commit)] from runs.csv, oldest first."""
    index = os.path.join(GRIDS, "runs.csv")
    if not os.path.exists(path(index)):
        raise Fail(f"{index} is missing")
    with open(path(index), newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        if not os.path.exists(path(os.path.join(GRIDS, r["scenario"], r["folder"], "sweep.csv"))):
            raise Fail(f"{GRIDS}/{r['scenario']}/{r['folder']}/sweep.csv is missing (named in {index})")
    return [(r["scenario"], r["cca"], r["folder"], r["binary_commit"]) for r in rows]


def grid_runs(scenario, cca):
    """[(folder, commit, {(rtt, bdp): row})] of one CCA's runs of a grid."""
    out = []
    for s, c, folder, commit in runs_index():
        if s != scenario or c != cca:
            continue
        with open(path(os.path.join(GRIDS, s, folder, "sweep.csv")), newline="") as f:
            points = {(float(r[Y]), float(r[X])): r for r in csv.DictReader(f) if r["cca"] == cca}
        if not points:
            raise Fail(f"{GRIDS}/{s}/{folder}/sweep.csv has no {cca} rows")
        if out and set(points) != set(out[0][2]):
            raise Fail(f"{GRIDS}/{s}/{folder}: its points differ from {out[0][0]}'s")
        out.append((folder, commit, points))
    return out


def ccas(scenario):
    present = {c for s, c, _, _ in runs_index() if s == scenario}
    if not present:
        raise Fail(f"no runs of {scenario} in {GRIDS}/runs.csv")
    return [c for c in ORDER if c in present] + sorted(present - set(ORDER))


def met(row, scenario):
    jain, util, bdp = float(row["jain"]), float(row["utilization"]), float(row[X])
    return jain >= SHALLOW[scenario] if bdp < 0.3 else (jain >= 0.95 and util >= 0.97)


def each(values, fmt="{}"):
    return " / ".join(fmt.format(v) for v in values)


def span(values, fmt):
    lo, hi = min(values), max(values)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}-{fmt.format(hi)}"


def grid_stats(scenario, cca):
    """Per run: points met at >= 0.3 BDP, at 0.1 BDP, lowest Jain at
    >= 0.3 BDP; and the points met in every run."""
    runs = grid_runs(scenario, cca)
    deep = [k for k in runs[0][2] if k[1] >= 0.3]
    thin = [k for k in runs[0][2] if k[1] < 0.3]
    count = lambda pts, keys: sum(met(pts[k], scenario) for k in keys)
    return {
        "runs": runs,
        "deep": len(deep),
        "thin": len(thin),
        "met": [count(p, deep) for _, _, p in runs],
        "met_thin": [count(p, thin) for _, _, p in runs],
        "every": sum(all(met(p[k], scenario) for _, _, p in runs) for k in deep),
        "lowest": [min(float(p[k]["jain"]) for k in deep) for _, _, p in runs],
        "util": [float(p[k]["utilization"]) * 100 for _, _, p in runs for k in deep],
        "qdelay": [float(p[k]["qdelay_mean_ms"]) for _, _, p in runs for k in deep],
    }


def grid_summary(scenario):
    bound = SHALLOW[scenario]
    lines = [
        f"| CCA | runs (binary) | met at ≥ 0.3 BDP, each run | met in every run | 0.1 BDP ≥ {bound:.2f}, each run "
        "| lowest Jain at ≥ 0.3 BDP, each run | utilization at ≥ 0.3 BDP | mean queue at ≥ 0.3 BDP |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for cca in ccas(scenario):
        st = grid_stats(scenario, cca)
        lines.append(
            f"| {cca} | {each(c for _, c, _ in st['runs'])} | {each(m for m in st['met'])} of {st['deep']} "
            f"| {st['every']} | {each(st['met_thin'])} of {st['thin']} | {each(st['lowest'], '{:.3f}')} "
            f"| {span(st['util'], '{:.1f}')} % | {span(st['qdelay'], '{:.1f}')} ms |"
        )
    return lines


def grid_points(scenario, cca):
    runs = grid_runs(scenario, cca)
    last = runs[-1][2]
    groups = [c[len("goodput_mbit_"):] for c in next(iter(last.values())) if c.startswith("goodput_mbit_")]
    names = [f for f, _, _ in runs]
    lines = [
        f"| other RTT (ms) | BDP | {' | '.join('Jain ' + n for n in names)} | util {names[-1]} "
        f"| queue {names[-1]} | {' / '.join(groups)} {names[-1]}, Mbit/s | met in every run |",
        "|---|---|" + "---|" * (len(runs) + 4),
    ]
    for k in sorted(last):
        r = last[k]
        js = " | ".join(f"{float(p[k]['jain']):.3f}" for _, _, p in runs)
        goodputs = " / ".join(f"{float(v):.1f}" for c, v in r.items() if c.startswith("goodput_mbit_"))
        ok = "yes" if all(met(p[k], scenario) for _, _, p in runs) else "no"
        lines.append(
            f"| {k[0]:g} | {k[1]:g} | {js} | {float(r['utilization']) * 100:.1f} % "
            f"| {float(r['qdelay_mean_ms']):.1f} ms | {goodputs} | {ok} |"
        )
    return lines


def demo_rows(name):
    """The demo file's table lines and {cca: {column: cell}}."""
    rel = os.path.join(DATA, "demo", name + ".txt")
    if not os.path.exists(path(rel)):
        raise Fail(f"{rel} is missing")
    with open(path(rel)) as f:
        lines = [l.rstrip() for l in f if l.strip() and not l.startswith("#")]
    head = re.split(r"\s{2,}", lines[0].strip())
    table = {}
    for l in lines[1:]:
        cells = l.split()
        table[cells[0]] = dict(zip(head, cells))
    return lines, table


def readme():
    """One row per CCA: the demo and the two grids, from docs/data."""
    _, demo = demo_rows(DEMO)
    lines = [
        "| CCA | demo: 10 vs 50 ms, 5 BDP, Jain | demo: queue | 100 Mbit/s grid: points met (of 20), each run "
        "| 100 Mbit/s grid: lowest Jain | 20 Mbit/s grid: points met (of 20), each run | 20 Mbit/s grid: lowest Jain |",
        "|---|---|---|---|---|---|---|",
    ]
    for cca in ORDER:
        d = demo[cca]
        cells = [cca, d["jain"], d["qdelay"].replace("ms", " ms")]
        for scenario in ("qfair-grid-100m", "qfair-grid-20m"):
            if cca in ccas(scenario):
                st = grid_stats(scenario, cca)
                cells += [each(st["met"]), f"{min(st['lowest']):.3f}"]
            else:
                cells += ["to be remeasured", "–"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


FIXED = {"cca", "jain", "stdr", "group_ratio", "utilization", "qdelay_mean_ms",
         "rtt_p95_ms", "retrans_ratio", "jain_worst", "utilization_worst",
         "qdelay_mean_ms_worst", "retrans_ratio_worst", "reps"}


def jain_cell(mean, worst, reps):
    """Jain's index as a table cell: with several repetitions their mean,
    the worst one in brackets."""
    cell = f"{mean:.3f}"
    return cell + f" ({worst:.3f})" if reps > 1 else cell


def sweep_rows(folder):
    """A sweep.csv (lab sweep or merge) as one Markdown row per point: with
    several repetitions the means, and Jain's worst repetition in brackets."""
    rows = sweep_csv(os.path.join(DATA, folder, "sweep.csv"))
    cols = list(rows[0].keys())
    params = [c for c in cols if c not in FIXED and not c.startswith("goodput_mbit_")]
    groups = [c for c in cols if c.startswith("goodput_mbit_")]
    head = ["cca"] + params + ["jain", "util", "queue"] + [g[len("goodput_mbit_"):] + " Mb/s" for g in groups]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["cca"]] + [r[p] for p in params]
        jain = jain_cell(float(r["jain"]), float(r.get("jain_worst") or r["jain"]),
                         int(r.get("reps") or 1))
        cells += [jain, f"{100 * float(r['utilization']):.1f} %",
                  f"{float(r['qdelay_mean_ms']):.1f} ms"]
        cells += [f"{float(r[g]):.2f}" for g in groups]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def runs_rows(folder):
    """Each subfolder's summary.json (a lab run's) as one Markdown row."""
    base = data_dir(folder)
    lines = ["| run | jain | util | queue | goodput per group, Mb/s |", "|---|---|---|---|---|"]
    for n in run_folders(base):
        s = read_json(os.path.join(base, n, "summary.json"))["summary"]
        lines.append(f"| {n} | {run_cells(s)} |")
    return lines


def natural(name):
    """Sort key that puts 20m before 100m and phase100 before phase1000."""
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", name) if t]


def run_summaries(base):
    """[(relative folder, summary.json's document)] of every run (not
    repetition: a run's has its scenario and repetitions) summary.json in
    base or beneath it, sorted by folder."""
    out = []
    for top, dirs, files in sorted(os.walk(path(base))):
        dirs.sort()
        if "summary.json" not in files:
            continue
        rel = os.path.relpath(top, ROOT)
        doc = read_json(os.path.join(rel, "summary.json"))
        if {"scenario", "summary", "reps"} <= doc.keys():
            out.append((rel, doc))
    return out


def provenance(folder):
    """A run folder's provenance.json (relative to the repository)."""
    return read_json(os.path.join(folder, "provenance.json"))


def binary(folder):
    """The run's binary: rttfair_commit's 7 digits, ' dirty' if it was."""
    env = provenance(folder)["environment"]
    return env["rttfair_commit"][:7] + (" dirty" if env.get("rttfair_dirty") == "yes" else "")


def pooled_rows(folder):
    """Each point's runs pooled by repetition, one Markdown row per point."""
    base = data_dir(folder)
    points = sorted(d for d in os.listdir(path(base)) if os.path.isdir(path(os.path.join(base, d))))
    lines = ["| run | runs (binary) | reps | jain mean (worst) | util | queue "
             "| goodput per group, each repetition, Mb/s |", "|---|---|---|---|---|---|---|"]
    for p in points:
        runs = run_summaries(os.path.join(base, p))
        if not runs:
            raise Fail(f"{base}/{p} holds no run's summary.json")
        reps = [r["summary"] for _, doc in runs for r in doc["reps"]]
        jains = [r["jain"] for r in reps]
        groups = sorted(reps[0]["goodput_mbit_by_group"])
        goodputs = ", ".join(f"{g} {each((r['goodput_mbit_by_group'][g] for r in reps), '{:.2f}')}" for g in groups)
        lines.append(
            f"| {p} | {each(binary(f) for f, _ in runs)} | {' + '.join(str(len(d['reps'])) for _, d in runs)} "
            f"| {statistics.mean(jains):.3f} ({min(jains):.3f}) "
            f"| {100 * statistics.mean(r['utilization'] for r in reps):.1f} % "
            f"| {statistics.mean(r['qdelay_mean_ms'] for r in reps):.1f} ms | {goodputs} |")
    return lines


def sweep_csv(csv_path):
    """The rows of a sweep.csv (lab sweep or merge), at least one."""
    if not os.path.exists(path(csv_path)):
        raise Fail(f"{csv_path} is missing")
    with open(path(csv_path), newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise Fail(f"{csv_path} has no points")
    return rows


def sweep_points(csv_path):
    """{swept values: row} of a sweep.csv and the swept parameters' names
    (the ones with a value: a one-parameter sweep has an empty `-`)."""
    rows = sweep_csv(csv_path)
    params = [c for c in rows[0] if c not in FIXED and not c.startswith("goodput_mbit_")
              and any(r[c] for r in rows)]
    return params, {tuple(r[p] for p in params): r for r in rows}


def goodput(row):
    """A sweep.csv row's goodput over all its groups, Mbit/s."""
    return sum(float(v) for c, v in row.items() if c.startswith("goodput_mbit_"))


def versus_rows(folder, cca, ref):
    """Per case (NAME-CCA beside NAME-REF) and point: both goodputs and
    CCA's over REF's."""
    base = data_dir(folder)
    cases = sorted({d[:-len(cca) - 1] for d in os.listdir(path(base)) if d.endswith("-" + cca)}, key=natural)
    if not cases:
        raise Fail(f"{base} holds no NAME-{cca} folder")
    lines = []
    for case in cases:
        params, mine = sweep_points(os.path.join(base, f"{case}-{cca}", "sweep.csv"))
        ref_params, theirs = sweep_points(os.path.join(base, f"{case}-{ref}", "sweep.csv"))
        if ref_params != params or set(theirs) != set(mine):
            raise Fail(f"{base}/{case}-{ref}: its points differ from {case}-{cca}'s")
        if not lines:
            lines = [f"| case | {' | '.join(params)} | {cca} Mb/s | {ref} Mb/s | {cca} / {ref} "
                     f"| queue {cca} / {ref} | retrans {cca} / {ref} |",
                     "|---|" + "---|" * (len(params) + 5)]
        for k, r in mine.items():
            t = theirs[k]
            lines.append(
                f"| {case} | {' | '.join(k)} | {goodput(r):.2f} | {goodput(t):.2f} | {goodput(r) / goodput(t):.2f} "
                f"| {float(r['qdelay_mean_ms']):.1f} / {float(t['qdelay_mean_ms']):.1f} ms "
                f"| {100 * float(r['retrans_ratio']):.2f} / {100 * float(t['retrans_ratio']):.2f} % |")
    return lines


def shares_rows(folder):
    """Single runs with their flows grouped by CCA: each CCA's goodput over
    an even split among the CCAs, the lowest flow's over an even split
    among the flows, the qfair object's sha256."""
    base = data_dir(folder)
    lines = ["| run | qfair object | jain | util | queue | goodput per group, Mb/s "
             "| per CCA, of an even split | lowest flow, of an even split |", "|---|---|---|---|---|---|---|---|"]
    for n in run_folders(base):
        run = os.path.join(base, n)
        doc = read_json(os.path.join(run, "summary.json"))
        s = doc["summary"]
        flows = [g for g in doc["scenario"]["flows"] for _ in range(g.get("count", 1))]
        per_flow = s["flow_goodput_mbit"]
        if len(per_flow) != len(flows):
            raise Fail(f"{run}/summary.json: {len(per_flow)} flows' goodputs for {len(flows)} flows")
        by_cca = {}
        for g, v in zip(flows, per_flow):
            by_cca[g["cca"]] = by_cca.get(g["cca"], 0.0) + v
        total = sum(per_flow)
        shas = {c["object_sha256"][:8] for c in provenance(run)["ccas"]
                if c["name"].startswith("qfair") and c["object_sha256"]}
        cca_share = ", ".join(f"{c} {100 * v / (total / len(by_cca)):.0f} %" for c, v in sorted(by_cca.items()))
        lines.append(f"| {n} | {' / '.join(sorted(shas))}… | {run_cells(s)} | {cca_share} "
                     f"| {100 * min(per_flow) / (total / len(per_flow)):.0f} % |")
    return lines


AQM_ORDER = ["fifo", "codel", "fq_codel", "ecn_step"]


def aqm_label(b):
    """A run's discipline as the table names it, from its [bottleneck]."""
    kind = b.get("aqm") or "fifo"
    if kind == "fifo":
        buf = b.get("buffer", {})
        if buf.get("bdp") is not None:
            return f"FIFO {buf['bdp']:g} BDP"
        return "FIFO"
    ecn = " ECN" if b.get("ecn") else ""
    if kind == "codel":
        return "CoDel" + ecn
    if kind == "fq_codel":
        return "FQ-CoDel" + ecn
    if kind == "ecn_step":
        if b.get("k_packets") is not None:
            return f"ECN step K={b['k_packets']} pkt"
        return f"ECN step K={b['k_ms']:g} ms"
    raise Fail(f"unknown discipline {kind!r}")


def flow_rtts(scenario):
    """Each flow's RTT in flow order (groups expanded by their count)."""
    out = []
    for g in scenario["flows"]:
        rtt = g.get("rtt_ms")
        if rtt is None:
            rtt = 2 * g["one_way_delay_ms"]
        out += [rtt] * g.get("count", 1)
    return out


def aqm_runs(folder, only=None):
    """{(flows' RTTs, rate, discipline order, label, cca): run} of every
    run summary.json under FOLDER, each point once."""
    base = data_dir(folder)
    runs = {}
    for run, doc in run_summaries(base):
        rel = os.path.join(run, "summary.json")
        sc = doc["scenario"]
        cca = "+".join(sorted({g["cca"] for g in sc["flows"]}))
        if only is not None and cca != only:
            continue
        b = sc["bottleneck"]
        kind = b.get("aqm") or "fifo"
        key = (tuple(flow_rtts(sc)), b["rate_mbit"], AQM_ORDER.index(kind), aqm_label(b), cca)
        if key in runs:
            raise Fail(f"{rel}: a second run of {cca} at {aqm_label(b)}, "
                       f"{' / '.join(f'{r:g}' for r in key[0])} ms, {b['rate_mbit']:g} Mbit/s "
                       f"(first: {runs[key]['rel']})")
        runs[key] = {"rel": rel, "doc": doc}
    if not runs:
        raise Fail(f"{base} holds no run's summary.json" + (f" of {only}" if only else ""))
    return runs


def aqm_flows(doc, n):
    """Per flow: drops and marks per repetition and the mean sojourn
    (weighted by the packets judged); None when the run has no discipline
    counters (drop-tail)."""
    reps = doc["reps"]
    rows = [a for r in reps for a in r.get("aqm", [])]
    if not rows:
        return None
    out = []
    for i in range(n):
        mine = [a for a in rows if a["flow"] == i]
        judged = sum(a["packets"] - a["unstamped"] for a in mine)
        soj = sum(a["mean_sojourn_ms"] * (a["packets"] - a["unstamped"]) for a in mine)
        out.append((sum(a["drops"] for a in mine) / len(reps),
                    sum(a["marks"] for a in mine) / len(reps),
                    soj / judged if judged else None))
    return out


def aqm_rows(folder, only=None):
    """The AQM set as one Markdown row per point x discipline x CCA."""
    runs = aqm_runs(folder, only)
    lines = ["| flows, ms | Mbit/s | discipline | CCA | reps | jain | util | queue "
             "| drops per flow | marks per flow | sojourn per flow |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    cca_rank = lambda c: (ORDER.index(c), c) if c in ORDER else (len(ORDER), c)
    for key in sorted(runs, key=lambda k: (len(k[0]), k[0], k[1], k[2], k[3], cca_rank(k[4]))):
        rtts, rate, _, label, cca = key
        doc = runs[key]["doc"]
        s = doc["summary"]
        per = aqm_flows(doc, len(rtts))
        slash = lambda vals, fmt: " / ".join("–" if v is None else fmt.format(v) for v in vals)
        if per is None:
            drops = f"{s['queue_drops']:.0f} at the queue"
            marks = sojourn = "–"
        else:
            drops = slash([d for d, _, _ in per], "{:.0f}")
            marks = slash([m for _, m, _ in per], "{:.0f}")
            sojourn = slash([j for _, _, j in per], "{:.1f}") + " ms"
        jain = jain_cell(s["jain"], min(r["summary"]["jain"] for r in doc["reps"]),
                         len(doc["reps"]))
        lines.append(
            f"| {' / '.join(f'{r:g}' for r in rtts)} | {rate:g} | {label} | {cca} | {len(doc['reps'])} "
            f"| {jain} | {100 * s['utilization']:.1f} % | {s['qdelay_mean_ms']:.1f} ms "
            f"| {drops} | {marks} | {sojourn} |")
    return lines


def ablation_points(folder):
    """{(point name, rule): summary document} of an ablation FOLDER and its
    rules, baseline first (see ablation_rows)."""
    base = data_dir(folder)
    rules = sorted(d for d in os.listdir(path(base)) if os.path.isdir(path(os.path.join(base, d))))
    if "baseline" not in rules:
        raise Fail(f"{base} has no baseline/ (the whole law's runs)")
    rules.remove("baseline")
    points = {}
    for rule in ["baseline"] + rules:
        for run, doc in run_summaries(os.path.join(base, rule)):
            points[(os.path.basename(run), rule)] = doc
    for name in {n for n, _ in points}:
        if (name, "baseline") not in points:
            raise Fail(f"{base}: no baseline run of {name}")
    return points, ["baseline"] + rules


def ablation_change(points, name, rule):
    """(Δ of Jain's mean against the whole law, the whole law's spread) of
    rule at point name, or None if it did not run there."""
    doc = points.get((name, rule))
    if doc is None:
        return None
    wj = [r["summary"]["jain"] for r in points[(name, "baseline")]["reps"]]
    jains = [r["summary"]["jain"] for r in doc["reps"]]
    return statistics.mean(jains) - statistics.mean(wj), max(wj) - min(wj)


def ablation_matrix(folder, metric="jain"):
    """A row per rule, a column per point (see the kinds above): per metric
    the whole law's cell, and a rule's cell with whether the point is worse
    without the rule."""
    points, rules = ablation_points(folder)

    def values(n, rule, key):
        doc = points.get((n, rule))
        return None if doc is None else [r["summary"][key] for r in doc["reps"]]

    if metric == "jain":
        title = "Jain, ± half its spread"
        whole_cell = lambda w: f"{statistics.mean(w):.3f} ± {(max(w) - min(w)) / 2:.3f}"

        def rule_cell(n, rule):
            d, spread = ablation_change(points, n, rule)
            return f"{d:+.3f}" + (" +" if d > spread else ""), d < -spread
        key = "jain"
    elif metric == "queue":
        title = "queue, ms, mean (runs' range)"
        whole_cell = lambda w: f"{statistics.mean(w):.1f} ({min(w):.1f}-{max(w):.1f})"

        def rule_cell(n, rule):
            q = statistics.mean(values(n, rule, key))
            return f"{q:.1f}", q > max(values(n, "baseline", key))
        key = "qdelay_mean_ms"
    else:
        raise Fail(f"ablation-matrix: no metric {metric!r} (jain or queue)")
    names = sorted({n for n, _ in points}, key=natural)
    lines = ["| rule off | " + " | ".join(n.removesuffix("-qfair") for n in names) + " | carries |",
             "|" + "---|" * (len(names) + 2),
             f"| none (whole law: {title}) | "
             + " | ".join(whole_cell(values(n, "baseline", key)) for n in names) + " | – |"]
    for rule in rules[1:]:
        cells, carries = [], 0
        for n in names:
            if (n, rule) not in points:
                cells.append("–")
                continue
            cell, worse = rule_cell(n, rule)
            carries += worse
            cells.append(f"**{cell.removesuffix(' +')}**" if worse else cell)
        lines.append(f"| {rule} | " + " | ".join(cells) + f" | {carries} |")
    return lines


def ablation_rows(folder):
    """One row per point and rule of an ablation (see the kinds above). The
    spread a change must exceed is the whole law's: the noise of the law as
    it ships, which a rule switched off must move the point beyond (its own
    repetitions can scatter more, which is part of what it does)."""
    # A point is its run folder's name: scripts/ablation.sh runs the same
    # scenario under every rule, so the sweep names each point alike.
    points, rules = ablation_points(folder)
    lines = ["| point | flows, ms | Mbit/s | rule off | reps | jain | each repetition "
             "| util | queue | Δ jain | vs spread |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in sorted({n for n, _ in points}, key=natural):
        whole = points[(name, "baseline")]
        wj = [r["summary"]["jain"] for r in whole["reps"]]
        sc = whole["scenario"]
        rtts, rate = flow_rtts(sc), sc["bottleneck"]["rate_mbit"]
        point = name.removesuffix("-qfair")
        for rule in rules:
            doc = points.get((name, rule))
            if doc is None:
                continue
            reps = [r["summary"] for r in doc["reps"]]
            jains = [r["jain"] for r in reps]
            if rule == "baseline":
                delta = beyond = "–"
            else:
                d, spread = ablation_change(points, name, rule)
                delta = f"{d:+.3f}"
                beyond = "worse" if d < -spread else "better" if d > spread else "within"
            lines.append(
                f"| {point} | {' / '.join(f'{r:g}' for r in rtts)} | {rate:g} "
                f"| {'none (whole law)' if rule == 'baseline' else rule} | {len(reps)} "
                f"| {jain_cell(statistics.mean(jains), min(jains), len(reps))} "
                f"| {each(jains, '{:.3f}')} "
                f"| {100 * statistics.mean(r['utilization'] for r in reps):.1f} % "
                f"| {statistics.mean(r['qdelay_mean_ms'] for r in reps):.1f} ms | {delta} | {beyond} |")
    return lines


def generate(spec):
    kind, *args = spec.split()
    try:
        if kind == "grid-summary" and len(args) == 1:
            return grid_summary(args[0])
        if kind == "grid-points" and len(args) == 2:
            return grid_points(*args)
        if kind == "demo" and len(args) == 1:
            return demo_rows(args[0])[0]
        if kind == "readme" and not args:
            return readme()
        if kind == "sweep" and len(args) == 1:
            return sweep_rows(args[0])
        if kind == "runs" and len(args) == 1:
            return runs_rows(args[0])
        if kind == "pooled" and len(args) == 1:
            return pooled_rows(args[0])
        if kind == "versus" and len(args) == 3:
            return versus_rows(*args)
        if kind == "shares" and len(args) == 1:
            return shares_rows(args[0])
        if kind == "aqm" and len(args) in (1, 2):
            return aqm_rows(*args)
        if kind == "ablation" and len(args) == 1:
            return ablation_rows(args[0])
        if kind == "ablation-matrix" and len(args) in (1, 2):
            return ablation_matrix(*args)
    except KeyError as e:
        raise Fail(f"table {spec!r}: no {e} in its data")
    raise Fail(f"unknown table {spec!r}")


def marked(page):
    """[(line of the marker, spec, first line, end line)] of a page: the
    table after a marker, or the fenced block's body for `demo`."""
    with open(path(page)) as f:
        lines = f.read().splitlines()
    out = []
    for i, l in enumerate(lines):
        m = MARK.match(l)
        if not m:
            continue
        spec = m.group(1).strip()
        j = i + 1
        if spec.startswith("demo"):
            if j >= len(lines) or not lines[j].startswith("```"):
                raise Fail(f"{page}:{i + 1}: no fenced block after the marker of {spec!r}")
            end = next((k for k in range(j + 1, len(lines)) if lines[k].startswith("```")), None)
            if end is None:
                raise Fail(f"{page}:{i + 1}: the block after {spec!r} is not closed")
            out.append((i, spec, j + 1, end))
        else:
            if j >= len(lines) or not lines[j].startswith("|"):
                raise Fail(f"{page}:{i + 1}: no table right after the marker of {spec!r}")
            end = j
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            out.append((i, spec, j, end))
    return lines, out


def contains(block, rows):
    """Whether the demo's rows appear in the block in one piece."""
    block = [l.rstrip() for l in block]
    n = len(rows)
    return any(block[i:i + n] == rows for i in range(len(block) - n + 1))


def data_paths(text):
    """Every docs/data/... path a page names (in text or code)."""
    found = set()
    for m in re.finditer(r"docs/data/[A-Za-z0-9_.\-/]+", text):
        p = m.group(0).rstrip(".,;:)/")
        if "*" not in p and "$" not in p:
            found.add(p)
    return sorted(found)


def check():
    tables = 0
    for page in PAGES:
        with open(path(page)) as f:
            text = f.read()
        for p in data_paths(text):
            if not os.path.exists(path(p)):
                raise Fail(f"{page} names {p}, which is missing")
        lines, found = marked(page)
        for at, spec, start, end in found:
            want = generate(spec)
            have = [l.rstrip() for l in lines[start:end]]
            ok = contains(have, want) if spec.startswith("demo") else have == want
            if not ok:
                raise Fail(f"{page}:{at + 1}: table {spec!r} differs from its data "
                           "(python3 scripts/results-tables.py prints it recomputed)")
            tables += 1
    if tables == 0:
        raise Fail("no marked tables found in " + ", ".join(PAGES))
    print(f"results-tables: {tables} tables match docs/data")


def write():
    for page in PAGES:
        lines, found = marked(page)
        for at, spec, start, end in reversed(found):
            if spec.startswith("demo"):
                if not contains(lines[start:end], generate(spec)):
                    raise Fail(f"{page}:{at + 1}: the demo block differs from its data; edit it by hand")
                continue
            lines[start:end] = generate(spec)
        with open(path(page), "w") as f:
            f.write("\n".join(lines) + "\n")


def show():
    for page in PAGES:
        _, found = marked(page)
        for at, spec, _, _ in found:
            print(f"{page}:{at + 1}: <!-- table: {spec} -->")
            print("\n".join(generate(spec)))
            print()


def main(argv):
    try:
        if argv == ["--check"]:
            check()
        elif argv == ["--write"]:
            write()
        elif len(argv) == 3 and argv[0] == "--points":
            print("\n".join(grid_points(argv[1], argv[2])))
        elif len(argv) in (2, 3) and argv[0] == "--aqm":
            print("\n".join(aqm_rows(*argv[1:])))
        elif not argv:
            show()
        else:
            raise Fail("usage: results-tables.py [--check | --write | --points SCENARIO CCA | --aqm FOLDER [CCA]]")
    except Fail as e:
        print(f"results-tables: {e}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as e:
        print(f"results-tables: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
