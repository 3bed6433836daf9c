#!/usr/bin/env bash
# The qfair tables of docs/results.md ("Two-flow grid, a subset" and
# "Against one cubic flow"): two-flow points written as scenario files and
# run with rttfairctl, one experiment at a time. Needs root and a release
# build (cargo build --release). Takes about 40 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
O=${OUT:-lab-out/results-qfair}
. scripts/two-flow.sh
echo "commit $(git rev-parse --short HEAD)"
for b in 0.5 1 5; do
  echo "== vs cubic, $b BDP"
  $B lab run "$(two_flow "qfair-vs-cubic-$b" 20 qfair 20 cubic $b)" --out "$O" --quiet
  $B lab run "$(two_flow "bbr-vs-cubic-$b" 20 bbr 20 cubic $b)" --out "$O" --quiet
done
for r in 10 200; do
  for b in 0.3 1 5; do
    echo "== grid 20 vs $r ms, $b BDP"
    $B lab compare "$(two_flow "grid-20v$r-$b" 20 bbr $r bbr $b)" --cca qfair,bbr,cubic,bbr1 --out "$O" --quiet
  done
done
