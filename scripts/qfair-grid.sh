#!/usr/bin/env bash
# The qfair tables of docs/results.md ("Two-flow grid, a subset" and
# "Against one cubic flow"): two-flow points written as scenario files and
# run with rttfairctl, one experiment at a time. Needs root and a release
# build (cargo build --release). Takes about 40 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
B=./target/release/rttfairctl
O=${OUT:-lab-out/results-qfair}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
two_flow() { # name rtt_a cca_a rtt_b cca_b bdp
  cat > "$T/$1.toml" <<EOT
name = "$1"
description = "$2 ms ($3) vs $4 ms ($5), $6 BDP(20 ms), 20 Mbit/s"
duration_s = 60
warmup_s = 20
repetitions = 1
[bottleneck]
rate_mbit = 20
buffer = { bdp = $6, rtt_ms = 20.0 }
[[flows]]
group = "${3}-${2}ms"
cca = "$3"
rtt_ms = $2
[[flows]]
group = "${5}-${4}ms"
cca = "$5"
rtt_ms = $4
EOT
  echo "$T/$1.toml"
}
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
