#!/usr/bin/env bash
# While a lab run goes on, sample what a stalled flow needs explained
# (docs/results.md, "Bottlenecks beyond drop-tail", "A stalled flow"):
# every second, in each lab namespace of the sender and the receiver,
# `ss -tinmo` (the sockets' state: unacked, retransmits, backoff, the
# peer's window) and the nonzero TCP counters that could hide an ACK
# (PAWS, skipped ACKs, receive-queue and zero-window drops, aborts,
# timeouts), and in the router the neighbour table and link counters.
# Writes OUTFILE (emptied first) until killed; needs root.
#   scripts/stall-capture.sh OUTFILE &  CAP=$!;  rttfairctl lab sweep ...;  kill $CAP
set -u
if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: scripts/stall-capture.sh OUTFILE" >&2
  exit 2
fi
out=$1
: > "$out"
while true; do
  for ns in $(ip netns list | awk '{print $1}' | grep -E '^rf-.*-(snd|rcv)$'); do
    {
      echo "=== $(date +%s.%N) $ns"
      ip netns exec "$ns" ss -tinmo 2>/dev/null | head -80
      ip netns exec "$ns" nstat -asz 2>/dev/null | grep -E "PAWS|Skipped|RcvQDrop|ZeroWindow|InErrs|TCPAbort|TCPTimeouts|OFODrop|TCPBacklogDrop|TCPMinTTLDrop|LostRetransmit|TCPSpuriousRTOs|DelayedACKLost|TCPACKSkipped|InCsumErrors|TCPRcvCollapsed|TCPMemoryPressures|TCPWqueueTooBig|PruneCalled|RcvPruned" | awk '$2!=0'
    } >> "$out"
  done
  for ns in $(ip netns list | awk '{print $1}' | grep -E '^rf-.*-rtr$'); do
    { echo "=== $(date +%s.%N) $ns"; ip netns exec "$ns" ip neigh show; ip netns exec "$ns" ip -s -o link show | awk '{print $2, $0}' | cut -c1-400; } >> "$out"
  done
  sleep 1
done
