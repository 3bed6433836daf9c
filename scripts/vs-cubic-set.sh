#!/usr/bin/env bash
# Issue 43's coexistence set: one flow of CCA against one cubic flow, both
# 20 ms, at 20 and 100 Mbit/s, behind 1 BDP, 5 BDP and 1000 packets of
# drop-tail buffer, in three start orders: together, CCA first (cubic
# joins at 20 s) and cubic first (the CCA joins a cubic flow that has held
# the link for 20 s); then two against two, together, behind 1000 packets.
# 120 s per run, the first 40 s left out (the joiner's first 20 s
# included), so every order is measured over the same window. 20 points of
# about 2 minutes each: 42 minutes per repetition. Target for qfair: at
# least 30 % of the link at every point, never at its minimum window while
# cubic holds a standing queue.
#   scripts/vs-cubic-set.sh [CCA] [lab run options, e.g. --reps 3 --quiet]
#   ONLY='cubic-first|2v2' scripts/vs-cubic-set.sh ...   # the points whose name matches
# CCA: default qfair. The scenario files are written under
# ${OUT:-lab-out/vs-cubic}/scenarios/ and every run's folder under
# ${OUT:-lab-out/vs-cubic}/, named <rate>m-<buffer>-<order> (together,
# cca-first, cubic-first; 2v2).
set -euo pipefail
cd "$(dirname "$0")/.."
cca=qfair
if [ $# -ge 1 ] && [ "${1#-}" = "$1" ]; then
  cca=$1
  shift
fi
B=${RTTFAIRCTL:-./target/release/rttfairctl}
O=${OUT:-lab-out/vs-cubic}
mkdir -p "$O/scenarios"

# flow GROUP CCA START_S COUNT: one [[flows]] entry
flow() {
  printf '\n[[flows]]\ngroup = "%s"\ncca = "%s"\nrtt_ms = 20\nstart_s = %s\ncount = %s\n' "$1" "$2" "$3" "$4"
}

# scenario NAME RATE BUFFER_TOML BUFFER_LABEL ORDER COUNT: the file's path on stdout
scenario() {
  local name=$1 rate=$2 buffer=$3 label=$4 order=$5 n=$6 f="$O/scenarios/$1.toml"
  local first=0 second=0
  case $order in
    together) ;;
    cca-first) second=20 ;;   # cubic joins at 20 s
    cubic-first) first=20 ;;  # the CCA joins at 20 s
    *) echo "vs-cubic-set: unknown order $order" >&2; exit 2 ;;
  esac
  {
    printf '# written by scripts/vs-cubic-set.sh\n'
    printf 'name = "vs-cubic-%s"\n' "$name"
    printf 'description = "%s vs cubic, 20 ms each, %s, %s Mbit/s, %s, %s against %s"\n' \
      "$cca" "$label" "$rate" "$order" "$n" "$n"
    printf 'duration_s = 120\nwarmup_s = 40\nrepetitions = 1\n\n[bottleneck]\n'
    printf 'rate_mbit = %s\nbuffer = %s\n' "$rate" "$buffer"
    flow "$cca" "$cca" "$first" "$n"
    flow cubic cubic "$second" "$n"
  } >"$f"
  echo "$f"
}

files=()
for rate in 20 100; do
  for buf in "1bdp:1 BDP:{ bdp = 1.0, rtt_ms = 20.0 }" "5bdp:5 BDP:{ bdp = 5.0, rtt_ms = 20.0 }" \
    "1000pkt:1000 packets:{ packets = 1000 }"; do
    key=${buf%%:*} rest=${buf#*:}
    label=${rest%%:*} toml=${rest#*:}
    for order in together cca-first cubic-first; do
      files+=("$(scenario "${rate}m-$key-$order" "$rate" "$toml" "$label" "$order" 1)")
    done
  done
  files+=("$(scenario "${rate}m-1000pkt-2v2" "$rate" "{ packets = 1000 }" "1000 packets" together 2)")
done

# The files are this script's own; the first run refuses a bad CCA or
# option in one line, before anything is built, and stops the set.
picked=()
for f in "${files[@]}"; do
  if [ -z "${ONLY:-}" ] || [[ $(basename "$f" .toml) =~ $ONLY ]]; then
    picked+=("$f")
  fi
done
if [ ${#picked[@]} -eq 0 ]; then
  echo "vs-cubic-set: no point matches ONLY='$ONLY'" >&2
  exit 2
fi
files=("${picked[@]}")
for f in "${files[@]}"; do
  echo "== $(basename "$f" .toml) ($cca) $(date -u +%T)"
  "$B" lab run "$f" --out "$O" "$@"
done
echo "vs-cubic-set: $cca: ${#files[@]} points; results under $O"
