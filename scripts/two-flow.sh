# Sourced by the qfair scripts (from the repository's top): sets B, the
# rttfairctl to run ($RTTFAIRCTL or the release build), and T, a temporary
# folder removed on exit; two_flow NAME RTT_A CCA_A RTT_B CCA_B BDP writes a
# two-flow scenario file (20 Mbit/s, 60 s, first 20 s out, buffer in BDP of
# 20 ms) into $T and prints its path.
B=${RTTFAIRCTL:-./target/release/rttfairctl}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
two_flow() {
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
