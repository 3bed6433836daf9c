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
