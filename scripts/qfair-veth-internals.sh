#!/usr/bin/env bash
# qfair's exported internals during one flow over a veth pair with offloads
# on (the single-flow bench's path), once a second: the evidence behind
# docs/results.md "One flow on veth after the burst-room change".
# Run as root under the kernel lock, after cargo build --release:
#   flock /run/rttfair-kernel-tests.lock scripts/qfair-veth-internals.sh [SECONDS]
# Loads qfair if it is not loaded (and unloads it again); leaves no namespace.
set -euo pipefail
cd "$(dirname "$0")/.."
B=./target/release/rttfairctl
SECS=${1:-8}
S=qfv-snd-$$ R=qfv-rcv-$$ OUT=$(mktemp -d)
LOADED=0
cleanup() {
  for ns in $S $R; do
    ip netns pids $ns 2>/dev/null | xargs -r kill 2>/dev/null || true
  done
  sleep 0.3
  ip netns del $S 2>/dev/null || true
  ip netns del $R 2>/dev/null || true
  [ $LOADED = 1 ] && $B unload qfair >/dev/null || true
  rm -rf "$OUT"
}
trap cleanup EXIT
if ! grep -qw qfair /proc/sys/net/ipv4/tcp_available_congestion_control; then
  $B load qfair >/dev/null
  LOADED=1
fi
ip netns add $S
ip netns add $R
ip link add v0 netns $S type veth peer name v1 netns $R
ip -n $S addr add 10.89.0.1/24 dev v0
ip -n $R addr add 10.89.0.2/24 dev v1
for ns in $S $R; do ip -n $ns link set lo up; done
ip -n $S link set v0 up
ip -n $R link set v1 up
ip netns exec $S ethtool -K v0 tso on gso on gro on >/dev/null
ip netns exec $R ethtool -K v1 tso on gso on gro on >/dev/null
ip netns exec $R iperf3 -s -1 -B 10.89.0.2 -p 5299 >/dev/null 2>&1 &
sleep 0.5
ip netns exec $S iperf3 -c 10.89.0.2 -p 5299 -C qfair -t "$SECS" -f g >"$OUT/iperf" 2>&1 &
IPERF=$!
for i in $(seq 1 $((SECS - 1))); do
  sleep 1
  # Outside the namespace: ip netns exec remounts /sys, hiding /sys/fs/bpf.
  $B flows --json --cca qfair >"$OUT/flows-$i.json"
done
wait $IPERF
python3 - "$OUT" "$SECS" <<'PY'
import json, sys
out, secs = sys.argv[1], int(sys.argv[2])
for i in range(1, secs):
    for f in json.load(open(f"{out}/flows-{i}.json")):
        if f["delivered_bytes"] < 1e6:
            continue  # the receiver's side of the connection
        q = f["qfair"]
        print(f"t={i}s x^ {q['rate_bytes_per_second']*8/1e9:.2f} Gbit/s"
              f" BtlBw {f['btlbw_bytes_per_second']*8/1e9:.2f} pacing {f['pacing_rate_bytes_per_second']*8/1e9:.2f}"
              f" R^ {f['min_rtt_seconds']*1e6:.0f} us srtt {f['srtt_seconds']*1e6:.0f} us"
              f" D {q['standing_rtt_seconds']*1e6:.0f} us alpha {q['alpha_packets']:.1f}"
              f" a^ {q['backlog_packets']:.1f} w {q['target_cwnd_segments']} cwnd {f['cwnd_segments']}")
PY
grep -E "sender|receiver" "$OUT/iperf"
