#!/usr/bin/env bash
# qfair's ablation (docs/algorithms.md, "Ablation switches"): one lab sweep
# of SCENARIO with the whole law (qfair.rules_off = 0: "baseline"), then
# one per rule named (default: every rule), with that rule alone switched
# off (qfair.rules_off = its bit). Each sweep runs a copy of the scenario,
# $OUT/<rule>/<scenario>.toml: "qfair.rules_off" = <bit> added to its
# [tunables] (the table made if it has none) and every flow on qfair, as
# --cca qfair runs it anyway (the lab refuses a qfair tunable in a file
# where no flow runs qfair). Every copy is dry-run first (lab sweep
# --dry-run: the scenario, its points and the tunable checked, nothing
# run), so a bad scenario or rule stops before anything runs. The time is
# the scenario's sweep times the rules plus one. Needs root and a release
# build.
# A scenario without a [sweep] table (qfair beside another CCA, e.g.
# scenarios/real-vs-cubic/) runs with `lab run` instead, its flows' CCAs
# kept. `lab run` has no dry run: it checks the copy before it starts,
# the baseline's runs first, and the copies differ in the bit alone.
# BASELINE_REPS=N gives the baseline N repetitions (the spread a rule must
# exceed) while the rules run the scenario's or --reps's count; 0 runs no
# baseline (its runs are already under $OUT/baseline from an earlier call).
# A RULE of several names joined by "+" (noise+excess) switches them off
# together: the law without all of them, in one pass named so.
#   scripts/ablation.sh SCENARIO [RULE ...] [-- lab sweep/run options, e.g. --reps 3 --quiet]
# SCENARIO: a file, or the name of one in scenarios/ (scenarios/NAME.toml).
# Results under ${OUT:-lab-out/ablation}/<rule>/<name>-sweep/ (a single
# run: <rule>/<its run folder>/; <rule>: baseline or the rule's name; OUT
# and RTTFAIRCTL relative to the repository, as in scripts/aqm-set.sh).
set -euo pipefail
# A scenario file named relative to the caller's directory, before the cd.
given=
if [ $# -ge 1 ] && [ -f "$1" ]; then
  given=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fi
cd "$(dirname "$0")/.."
# The rules and their bits in qfair.rules_off: the loader's QFAIR_RULES
# (loader/src/tunables.rs), which a loader test holds this line to.
RULES="noise:1 excess:2 velocity:4 offset:8 burst_room:16 path_step:32 long_streak:64 drain_spread:128 cut_spacing:256 loss_in_rate:512 app_limited:1024 startup_exit:2048 rto_restore:4096 end_check:8192 skip_round:16384"
usage() {
  local r names=()
  for r in $RULES; do names+=("${r%%:*}"); done
  echo "usage: scripts/ablation.sh SCENARIO [RULE ...] [-- lab sweep options]" >&2
  echo "  RULE: ${names[*]}" >&2
  exit 2
}
if [ $# -lt 1 ] || [ -z "$1" ] || [ "${1#-}" != "$1" ]; then
  usage
fi
scenario=$1
shift
if [ -n "$given" ]; then
  src=$given
elif [ -f "scenarios/$scenario.toml" ]; then
  src=scenarios/$scenario.toml
else
  echo "ablation: no scenario file '$scenario' (nor scenarios/$scenario.toml)" >&2
  exit 2
fi
base=$(basename "$src" .toml)
# bit_of NAME[+NAME...]: the sum of the rules' bits; fails on an unknown
# name or one named twice.
bit_of() {
  local r name sum=0 seen=+
  for name in ${1//+/ }; do
    case $seen in *"+$name+"*) return 1 ;; esac
    seen=$seen$name+
    for r in $RULES; do
      if [ "${r%%:*}" = "$name" ]; then
        sum=$((sum | ${r#*:}))
        continue 2
      fi
    done
    return 1
  done
  [ "$sum" -gt 0 ] && echo "$sum"
}
# The rules up to "--" (or the first option); the rest is lab sweep's.
wanted=()
while [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; do
  if ! bit_of "$1" >/dev/null; then
    echo "ablation: '$1' is not a rule, nor rules joined by + (each once)" >&2
    usage
  fi
  for r in "${wanted[@]}"; do
    if [ "$r" = "$1" ]; then
      echo "ablation: rule '$1' named twice" >&2
      usage
    fi
  done
  wanted+=("$1")
  shift
done
if [ "${1:-}" = "--" ]; then
  shift
fi
if [ ${#wanted[@]} -eq 0 ]; then
  for r in $RULES; do wanted+=("${r%%:*}"); done
fi
# With --dry-run among the options every pass is a dry run: the check
# below must not give it twice.
check=(--dry-run)
for a in "$@"; do
  if [ "$a" = "--dry-run" ]; then
    check=()
  fi
done
B=${RTTFAIRCTL:-./target/release/rttfairctl}
O=${OUT:-lab-out/ablation}

# A sweep gives every flow qfair (`cca = "..."` lines rewritten, as
# --cca qfair runs it anyway); a single run keeps each flow's CCA.
if grep -q '^\[sweep\][[:space:]]*$' "$src"; then
  mode=sweep
  flows='every flow on qfair'
  on_qfair=(-e 's/^\([[:space:]]*cca[[:space:]]*=[[:space:]]*\)"[^"]*"/\1"qfair"/')
else
  mode=run
  flows="the flows' CCAs kept"
  on_qfair=(-e '')
fi
if [ -n "${BASELINE_REPS:-}" ]; then
  case $BASELINE_REPS in
    '' | *[!0-9]*)
      echo "ablation: BASELINE_REPS must be a count, not '$BASELINE_REPS'" >&2
      exit 2
      ;;
  esac
  for a in "$@"; do
    if [ "$BASELINE_REPS" != 0 ] && { [ "$a" = "--reps" ] || [ "${a#--reps=}" != "$a" ]; }; then
      echo "ablation: BASELINE_REPS and --reps both given: the baseline's count would be ambiguous" >&2
      exit 2
    fi
  done
fi
# copy RULE BIT: the scenario with qfair.rules_off = BIT, at $O/RULE/.
copy() {
  local dir=$O/$1 key="\"qfair.rules_off\" = $2"
  mkdir -p "$dir"
  {
    echo "# scripts/ablation.sh: $src with qfair.rules_off = $2 ($1), $flows"
    if grep -q '^\[tunables\][[:space:]]*$' "$src"; then
      sed "${on_qfair[@]}" -e "/^\\[tunables\\][[:space:]]*\$/a $key" "$src"
    else
      sed "${on_qfair[@]}" "$src"
      printf '\n[tunables]\n%s\n' "$key"
    fi
  } >"$dir/$base.toml"
  echo "$dir/$base.toml"
}
# The options of RULE's pass: the baseline's repetitions its own.
pass_opts() {
  opts=("$@")
  if [ "$rule" = baseline ] && [ -n "${BASELINE_REPS:-}" ]; then
    opts+=(--reps "$BASELINE_REPS")
  fi
}

runs=()
if [ "${BASELINE_REPS:-}" != 0 ]; then
  runs+=("baseline:0")
fi
for r in "${wanted[@]}"; do runs+=("$r:$(bit_of "$r")"); done
copies=()
for run in "${runs[@]}"; do
  rule=${run%%:*} bit=${run#*:}
  c=$(copy "$rule" "$bit")
  pass_opts "$@"
  # The dry run checks the copy, its points and the options, and runs
  # nothing: any refusal stops the whole ablation.
  if [ $mode = sweep ] &&
    ! why=$("$B" lab sweep "$c" --cca qfair --out "$O/$rule" "${check[@]}" "${opts[@]}" 2>&1 >/dev/null); then
    echo "ablation: $c: $why" >&2
    exit 1
  fi
  copies+=("$run:$c")
done
for entry in "${copies[@]}"; do
  rule=${entry%%:*} rest=${entry#*:}
  bit=${rest%%:*} c=${rest#*:}
  pass_opts "$@"
  echo "== $base, $rule (qfair.rules_off = $bit) $(date -u +%T)"
  if [ $mode = sweep ]; then
    "$B" lab sweep "$c" --cca qfair --out "$O/$rule" "${opts[@]}"
  else
    "$B" lab run "$c" --out "$O/$rule" "${opts[@]}"
  fi
done
echo "ablation: $base: swept ${runs[*]%%:*}; results under $O"
