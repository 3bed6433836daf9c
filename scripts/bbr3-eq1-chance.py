#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""How often random loss alone makes bbr3's 2 % test (Eq. 1) fire in a probe.

Issue 16. A Monte Carlo of one flow with W packets in flight and random loss
p: packet i is lost with probability p and marked lost when packet i + 3 is
delivered (tp->lost steps there); the ACK of packet j arrives when
tp->delivered = j and carries rs->prior_delivered = j - W. Eq. 1 holds for
that ACK when lost / tx_in_flight > 2 %, with tx_in_flight = W and lost =

  v3           tp->lost(j) - tp->lost(j - W): the losses marked during the
               packet's own flight (per-skb tx.lost, a v3 kernel);
  ring-before  tp->lost(j) - tp->lost(s0): from the ring snapshot s0 at or
               before the send (snapshots every W/8 deliveries), bbr3 before
               issue 16's change;
  ring-interp  tp->lost(j) minus tp->lost at the send interpolated between the
               snapshots either side of it (bpf/include/bbr3_math.h), bbr3
               after it.

Printed: the probability that Eq. 1 holds on at least one ACK of a probe
whose samples span k rounds (v3 evaluates it on every ACK while
bw_probe_samples is set). Standard library only:
  scripts/bbr3-eq1-chance.py [--loss 0.01] [--trials 3000]
"""
import argparse
import random


def trial(w, k, p):
    n = w * (k + 4)
    g = max(w // 8, 1)
    lost = [random.random() < p for _ in range(n)]
    marked = [0] * (n + 1)  # tp->lost when tp->delivered = d
    c = 0
    for d in range(n + 1):
        if 0 <= d - 3 < n:
            c += lost[d - 3]
        marked[d] = c
    hit = [False, False, False]
    for j in range(2 * w, 2 * w + k * w):
        q = j - w
        s0 = (q // g) * g
        s1 = min(s0 + g, j)
        at_send = marked[s0] + (marked[s1] - marked[s0]) * (q - s0) / max(s1 - s0, 1)
        for i, v in enumerate((marked[j] - marked[q], marked[j] - marked[s0],
                               marked[j] - int(at_send + 0.5))):
            hit[i] |= v > 0.02 * w
    return hit


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loss", type=float, default=0.01)
    ap.add_argument("--trials", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    random.seed(a.seed)
    print(f"P(Eq. 1 fires by chance in a probe), random loss {a.loss * 100:g} %, {a.trials} trials")
    print(f"{'W':>4} {'rounds':>6} {'v3':>6} {'ring-before':>12} {'ring-interp':>12}")
    for w in (140, 170, 210):
        for k in (1, 2, 3):
            acc = [0, 0, 0]
            for _ in range(a.trials):
                for i, h in enumerate(trial(w, k, a.loss)):
                    acc[i] += h
            print(f"{w:4} {k:6} {acc[0] / a.trials:6.2f} {acc[1] / a.trials:12.2f} "
                  f"{acc[2] / a.trials:12.2f}")


if __name__ == "__main__":
    main()
