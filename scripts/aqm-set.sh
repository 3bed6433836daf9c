#!/usr/bin/env bash
# Issue 44's measurement for one CCA, every flow on it: two flows (20 vs
# 2 / 50 / 200 ms) and three flows (10 / 50 / 200 ms), at 20 and
# 100 Mbit/s, behind each discipline: FIFO of 1 BDP (the reference),
# CoDel, FQ-CoDel and the ECN step (ECN on). Eight sweeps
# (scenarios/aqm-*.toml), 32 points of 30 s: about 20 minutes. A CCA
# the ECN step refuses (one that does not answer CE marks; the lab's rule,
# lab/src/scenario/aqm.rs) skips its two files with the lab's line: 24
# points, about 15 minutes. Needs root and a release build.
#   scripts/aqm-set.sh CCA [lab sweep options, e.g. --reps 3 --duration 60 --quiet]
# Results under ${OUT:-lab-out/aqm}/<scenario>-sweep/: sweep.csv and
# runs/*/summary.json, what `scripts/results-tables.py`'s `aqm FOLDER`
# table reads (from a copy under docs/data; summary.json alone is enough).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ] || [ -z "$1" ] || [ "${1#-}" != "$1" ]; then
  echo "usage: scripts/aqm-set.sh CCA [lab sweep options]" >&2
  exit 2
fi
cca=$1
shift
B=${RTTFAIRCTL:-./target/release/rttfairctl}
O=${OUT:-lab-out/aqm}
ran=() skipped=()
for s in aqm-fifo aqm-codel aqm-fq-codel aqm-ecn-step \
  aqm-three-fifo aqm-three-codel aqm-three-fq-codel aqm-three-ecn-step; do
  # The dry run checks the points, the CCA and the options, and runs
  # nothing: only the ECN step's refusal is a skip, anything else stops.
  if ! why=$("$B" lab sweep "$s" --cca "$cca" --out "$O" --dry-run "$@" 2>&1 >/dev/null); then
    case $s in
      *ecn-step) echo "aqm-set: skipping $s: $why" >&2; skipped+=("$s"); continue ;;
      *) echo "aqm-set: $s: $why" >&2; exit 1 ;;
    esac
  fi
  echo "== $s ($cca) $(date -u +%T)"
  "$B" lab sweep "$s" --cca "$cca" --out "$O" "$@"
  ran+=("$s")
done
echo "aqm-set: $cca: ran ${ran[*]}; skipped ${skipped[*]:-none}; results under $O"
