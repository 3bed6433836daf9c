#!/usr/bin/env bash
# qfair against one cubic flow, the five points of issue 14's cubic target:
# same RTT (20 ms) at 0.5, 1, 5 BDP, and 10/50 ms both ways at 1 BDP
# (scripts/qfair-vs-others.sh without its bbr rows). 20 Mbit/s, 60 s
# points, one at a time; needs root and a release build; ~6.5 minutes.
# qfair's tunables are whatever is loaded: to run another setting,
#   rttfairctl load qfair; rttfairctl set qfair.exit_drains 2; scripts/qfair-vs-cubic.sh; rttfairctl unload qfair
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-lab-out/qfair-vs-cubic} CUBIC_ONLY=1 exec scripts/qfair-vs-others.sh
