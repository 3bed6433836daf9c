#!/usr/bin/env bash
# qfair against one cubic flow, the five points of issue 14's cubic target:
# same RTT (20 ms) at 0.5, 1, 5 BDP, and 10/50 ms both ways at 1 BDP
# (scripts/qfair-vs-others.sh without its bbr rows). 20 Mbit/s, 60 s
# points, one at a time; needs root and a release build; ~6.5 minutes.
# qfair's tunables are whatever is loaded: to run another setting,
#   rttfairctl load qfair; rttfairctl set qfair.exit_drains 2; scripts/qfair-vs-cubic.sh; rttfairctl unload qfair
set -euo pipefail
cd "$(dirname "$0")/.."
O=${OUT:-lab-out/qfair-vs-cubic}
. scripts/two-flow.sh
echo "binary $B, $(git rev-parse --short HEAD), start $(date -u +%T)"
for b in 0.5 1 5; do
  $B lab run "$(two_flow "qfair-vs-cubic-$b" 20 qfair 20 cubic $b)" --out "$O" --quiet
done
$B lab run "$(two_flow "qfair10-vs-cubic50" 10 qfair 50 cubic 1)" --out "$O" --quiet
$B lab run "$(two_flow "qfair50-vs-cubic10" 50 qfair 10 cubic 1)" --out "$O" --quiet
echo "end $(date -u +%T)"
