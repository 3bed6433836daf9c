#!/usr/bin/env bash
# qfair against one flow of another CCA (issue 14 item 3: "one qfair flow
# against one cubic flow (same RTT, and 10/50 ms both ways) at 0.5, 1, 5
# BDP, and against one native bbr flow"), with bbr against cubic as the
# reference; one experiment at a time, 20 Mbit/s, 60 s points. Needs root
# and a release build. About 15 minutes. With CUBIC_ONLY=1 only the five
# qfair-vs-cubic points run (scripts/qfair-vs-cubic.sh), ~6.5 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
O=${OUT:-lab-out/qfair-vs-others}
. scripts/two-flow.sh
echo "commit $(git rev-parse --short HEAD)"
for b in 0.5 1 5; do
  echo "== 20 vs 20 ms, $b BDP"
  $B lab run "$(two_flow "qfair-vs-cubic-$b" 20 qfair 20 cubic $b)" --out "$O" --quiet
  [ -n "${CUBIC_ONLY:-}" ] && continue
  $B lab run "$(two_flow "qfair-vs-bbr-$b" 20 qfair 20 bbr $b)" --out "$O" --quiet
  $B lab run "$(two_flow "bbr-vs-cubic-$b" 20 bbr 20 cubic $b)" --out "$O" --quiet
done
echo "== 10 vs 50 ms both ways, 1 BDP"
$B lab run "$(two_flow "qfair10-vs-cubic50" 10 qfair 50 cubic 1)" --out "$O" --quiet
$B lab run "$(two_flow "qfair50-vs-cubic10" 50 qfair 10 cubic 1)" --out "$O" --quiet
echo "end $(date -u +%T)"
