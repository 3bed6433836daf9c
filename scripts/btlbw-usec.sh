#!/usr/bin/env bash
# docs/results.md, "BtlBw at microsecond RTTs through HTB": bbr1's and the
# kernel's BBR (bbr_native) BtlBw on the foundation test's path (veth,
# 50 Mbit/s HTB + 100 kB bfifo), read five times per 4 s flow. Needs root and
# a release build. Uses its own bpffs root and namespaces, removed at the end.
set -u
cd "$(dirname "$0")/.."
B=${B:-./target/release/rttfairctl}
export RTTFAIR_BPFFS=/sys/fs/bpf/rf-btlbw-$$
cleanup() {
  ip netns del bwc 2>/dev/null; ip netns del bws 2>/dev/null
  $B unload bbr1 bbr_native >/dev/null 2>&1
  rm -rf "$RTTFAIR_BPFFS" 2>/dev/null
}
trap cleanup EXIT
$B load bbr1 bbr_native >/dev/null
ip netns add bwc; ip netns add bws
ip link add v0 netns bwc type veth peer name v1 netns bws
ip -n bwc addr add 10.77.0.1/24 dev v0; ip -n bws addr add 10.77.0.2/24 dev v1
ip -n bwc link set v0 up; ip -n bws link set v1 up
ip netns exec bwc tc qdisc add dev v0 root handle 1: htb default 1
ip netns exec bwc tc class add dev v0 parent 1: classid 1:1 htb rate 50mbit
ip netns exec bwc tc qdisc add dev v0 parent 1:1 bfifo limit 100000
for cca in bbr1 bbr_native bbr1 bbr_native bbr1 bbr_native; do
  ip netns exec bws iperf3 -s -D -1 -p 5001 >/dev/null 2>&1; sleep 0.3
  ip netns exec bwc iperf3 -c 10.77.0.2 -p 5001 -t 4 -C "$cca" -J > "/tmp/bw-$cca.json" 2>&1 &
  sleep 1
  for _ in 1 2 3 4 5; do
    $B flows --json | python3 -c "
import json, sys
for f in json.load(sys.stdin):
    if f['cca'] == '$cca' and f['peer'].endswith(':5001'):
        print('$cca btlbw %7.1f Mbit/s  min_rtt %4.0f us  mode %s  cwnd %d' % (f['btlbw_bytes_per_second'] * 8e-6, f['min_rtt_seconds'] * 1e6, f['mode'], f['cwnd_segments']))
"
    sleep 0.5
  done
  wait
  python3 -c "import json; d = json.load(open('/tmp/bw-$cca.json')); print('$cca iperf3 %.1f Mbit/s' % (d['end']['sum_sent']['bits_per_second'] / 1e6))"
done
