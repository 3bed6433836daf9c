#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Summarise a bbr3 flow's internals over a lab run (issue 16).

Reads the run's rep<N>/bpf.csv (one sample of the flow's export every 100 ms,
the export itself refreshed once per round) and prints, over the measurement
window [--from, --to) seconds:

  - the time share of each phase (startup, drain, down, cruise, refill, up,
    probe_rtt) and the mean pacing rate, cwnd and bounds in each;
  - how often the per-round loss rate (the real one: lost / (lost +
    delivered) over a round, from tp->lost and tp->delivered) exceeded v3's
    2 % bound, against the binomial expectation for the path's loss rate;
  - how many probes the loss bound ended (too_high_events) and how many loss
    rounds cut bw_lo / inflight_lo (lo_cuts), per second;
  - the inflight_hi values the flow went through (one line per change).

Standard library only, so it runs wherever the lab runs:
  scripts/bbr3-timeline.py lab-out/bbr3-loss/rep0/bpf.csv --from 10 --to 30
"""
import argparse
import csv
import math
import sys
from collections import OrderedDict


def binom_tail(n, p, k):
    """P(X >= k) for X ~ Binomial(n, p)."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--flow", type=int, default=0)
    ap.add_argument("--from", dest="t0", type=float, default=10.0)
    ap.add_argument("--to", dest="t1", type=float, default=1e9)
    ap.add_argument("--loss", type=float, default=0.01, help="the path's random loss rate")
    ap.add_argument("--round-pkts", type=int, default=0,
                    help="packets per round for the binomial line (0: mean cwnd in cruise)")
    a = ap.parse_args()

    rows = []
    with open(a.csv, newline="") as f:
        for r in csv.DictReader(f):
            if int(r["flow"]) != a.flow or not r.get("bbr3_phase"):
                continue
            t = float(r["t"])
            if a.t0 <= t < a.t1:
                rows.append(r)
    if len(rows) < 2:
        sys.exit(f"{a.csv}: fewer than 2 bbr3 samples of flow {a.flow} in [{a.t0}, {a.t1})")

    span = float(rows[-1]["t"]) - float(rows[0]["t"])
    dt = span / (len(rows) - 1)
    phases = OrderedDict()
    for r in rows:
        p = phases.setdefault(r["bbr3_phase"], {"n": 0, "pacing": 0.0, "cwnd": 0.0,
                                                "bw_lo": [], "ihi": [], "ilo": []})
        p["n"] += 1
        p["pacing"] += float(r["pacing_mbit"])
        p["cwnd"] += float(r["cwnd"])
        if float(r["bbr3_bw_lo_mbit"]) >= 0:
            p["bw_lo"].append(float(r["bbr3_bw_lo_mbit"]) / max(float(r["bbr3_bw_hi_mbit"]), 1e-9))
        if int(r["bbr3_inflight_hi"]) >= 0:
            p["ihi"].append(int(r["bbr3_inflight_hi"]))
        if int(r["bbr3_inflight_lo"]) >= 0:
            p["ilo"].append(int(r["bbr3_inflight_lo"]))

    mean = lambda v: sum(v) / len(v) if v else float("nan")
    print(f"window {rows[0]['t']}-{rows[-1]['t']} s, {len(rows)} samples (every {dt * 1e3:.0f} ms)")
    print(f"{'phase':10} {'share':>6} {'pacing':>8} {'cwnd':>6} {'bw_lo/bw_hi':>12} "
          f"{'lo set':>7} {'inflight_hi':>12} {'inflight_lo':>12}")
    for name, p in sorted(phases.items(), key=lambda kv: -kv[1]["n"]):
        print(f"{name:10} {p['n'] / len(rows) * 100:5.1f}% {p['pacing'] / p['n']:7.2f}M "
              f"{p['cwnd'] / p['n']:6.0f} {mean(p['bw_lo']):12.3f} "
              f"{len(p['bw_lo']) / p['n'] * 100:6.0f}% {mean(p['ihi']):12.0f} {mean(p['ilo']):12.0f}")

    # Per-round loss: the export refreshes once per round, so consecutive
    # distinct lo_cuts/round_loss pairs are distinct rounds (approximately:
    # a 100 ms sampler on a ~100 ms round sees most of them).
    losses = [float(r["bbr3_round_loss"]) for r in rows]
    above = sum(1 for x in losses if x > 0.02)
    cruise_cwnd = mean([float(r["cwnd"]) for r in rows if r["bbr3_phase"] == "cruise"])
    n = a.round_pkts or int(round(cruise_cwnd if not math.isnan(cruise_cwnd) else 170))
    k = math.floor(0.02 * n) + 1
    print(f"round loss rate: mean {mean(losses) * 100:.2f} %, > 2 % in {above}/{len(losses)} "
          f"samples ({above / len(losses) * 100:.0f} %); binomial({n}, {a.loss}): "
          f"P(> 2 %) = P(>= {k} lost) = {binom_tail(n, a.loss, k) * 100:.0f} %, "
          f"P(>= 1 lost) = {binom_tail(n, a.loss, 1) * 100:.0f} %")
    th = int(rows[-1]["bbr3_too_high_events"]) - int(rows[0]["bbr3_too_high_events"])
    lc = int(rows[-1]["bbr3_lo_cuts"]) - int(rows[0]["bbr3_lo_cuts"])
    print(f"too_high_events +{th} ({th / span:.2f}/s), lo_cuts +{lc} ({lc / span:.2f}/s) over {span:.1f} s")
    # Probes: entries into "up", and how each ended (the next phase's bounds).
    ups = sum(1 for x, y in zip(rows, rows[1:]) if x["bbr3_phase"] != "up" and y["bbr3_phase"] == "up")
    print(f"probes (entries into up): {ups}")
    last = None
    print("inflight_hi changes (t: value, phase):")
    line = []
    for r in rows:
        v = r["bbr3_inflight_hi"]
        if v != last:
            line.append(f"{float(r['t']):.1f}: {v} {r['bbr3_phase']}")
            last = v
    print("  " + "; ".join(line))


if __name__ == "__main__":
    main()
