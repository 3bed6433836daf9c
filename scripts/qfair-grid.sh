#!/usr/bin/env bash
# The qfair table of docs/results.md "Two-flow grid, a subset": two-flow
# points written as scenario files and run with rttfairctl, one experiment
# at a time. Needs root and a release build (cargo build --release). Takes
# about 30 minutes. The "against one cubic flow" points it used to run are
# in scripts/qfair-vs-others.sh (with native bbr beside them).
set -euo pipefail
cd "$(dirname "$0")/.."
O=${OUT:-lab-out/results-qfair}
. scripts/two-flow.sh
echo "commit $(git rev-parse --short HEAD)"
for r in 10 200; do
  for b in 0.3 1 5; do
    echo "== grid 20 vs $r ms, $b BDP"
    $B lab compare "$(two_flow "grid-20v$r-$b" 20 bbr $r bbr $b)" --cca qfair,bbr,cubic,bbr1 --out "$O" --quiet
  done
done
