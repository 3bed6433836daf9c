#!/usr/bin/env bash
# Ad-BBR's Eq. 12 under its three interpretations (adbbr.gamma_mode 1, 2, 3),
# on the paper's 10 ms vs 50 ms pair at 5 BDP. docs/results.md.
# Usage: scripts/adbbr-gamma-modes.sh [rttfairctl binary] [output dir]
set -euo pipefail
CTL=${1:-target/release/rttfairctl}
OUT=${2:-lab-out/gamma}
mkdir -p "$OUT"
run() { echo "+ $*" | tee -a "$OUT/commands.log"; "$@" 2>&1 | tee -a "$OUT/results.log"; }
"$CTL" load adbbr
trap '"$CTL" unload adbbr --force >/dev/null 2>&1 || true' EXIT
for mode in 1 2 3; do
  run "$CTL" set adbbr.gamma_mode "$mode"
  run "$CTL" lab compare adbbr-fairness --cca adbbr --reps 1 --duration 40 --out "$OUT/mode$mode" --quiet
done
