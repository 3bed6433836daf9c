#!/usr/bin/env bash
# Every lab experiment behind docs/results.md.
# Usage: scripts/reproduce-papers.sh [rttfairctl binary] [output dir]
# About 80 minutes on the project's 2-core VM. Needs root.
# Then scripts/adbbr-gamma-modes.sh for the Eq. 12 comparison.
set -euo pipefail
CTL=${1:-target/release/rttfairctl}
OUT=${2:-lab-out/papers}
mkdir -p "$OUT"
run() { echo "+ $*" | tee -a "$OUT/commands.log"; "$@" 2>&1 | tee -a "$OUT/results.log"; }

run "$CTL" lab compare fairtt-paper --cca fairtt,bbr1,bbr --reps 2 --out "$OUT" --quiet
run "$CTL" lab compare two-flow-deep --cca bbr,cubic,bbr1,fairtt,adbbr --out "$OUT" --quiet
run "$CTL" lab compare adbbr-fairness --cca adbbr,bbr1,bbr,cubic --reps 1 --out "$OUT" --quiet
run "$CTL" lab compare adbbr-fairness-shallow --cca adbbr,bbr1,bbr,cubic --reps 1 --out "$OUT" --quiet
run "$CTL" lab sweep fairtt-rtt-sweep --cca fairtt,bbr1,bbr --duration 20 --out "$OUT" --quiet
run "$CTL" lab sweep fairtt-buffer-sweep --cca fairtt,bbr1 --duration 20 --out "$OUT" --quiet
run "$CTL" lab sweep adbbr-loss --cca adbbr,bbr1 --duration 25 --out "$OUT" --quiet
run "$CTL" lab sweep adbbr-flows --cca adbbr,bbr1 --duration 25 --out "$OUT" --quiet
# The native CCAs of the same two sweeps (run separately; a sweep's output
# folder is per scenario, so give it its own parent).
run "$CTL" lab sweep adbbr-loss --cca bbr,cubic --duration 25 --out "$OUT/native" --quiet
run "$CTL" lab sweep adbbr-flows --cca bbr,cubic --duration 25 --out "$OUT/native" --quiet
run "$CTL" lab sweep shallow-grid --cca bbr,cubic --duration 15 --out "$OUT" --quiet
# FaiRTT on the paper's topology (seed 001's 10 ms bottleneck delay on top of
# the flows' RTTs: 35 vs 25 ms), 120 s per run: the points docs/results.md
# ran (about 18 min). Without --shard the two sweeps are the whole of Fig.
# 3b/4c and 3c/4b on this topology (34 runs with these CCAs, about 75 min).
run "$CTL" lab compare scenarios/fairtt-paper-topology.toml --cca fairtt,bbr1,bbr --reps 1 --out "$OUT" --quiet
run "$CTL" lab sweep scenarios/fairtt-paper-topology-rtt-sweep.toml --cca fairtt,bbr1,bbr --shard 5/6 --out "$OUT" --quiet
run "$CTL" lab sweep scenarios/fairtt-paper-topology-buffer-sweep.toml --cca fairtt,bbr --shard 2/8 --out "$OUT" --quiet
