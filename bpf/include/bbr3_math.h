/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bbr3's send-time estimates of tx.in_flight and tx.lost in fixed point
 * (docs/algorithms.md, "bbr3", approximations 1 and 2). Pure functions,
 * compiled both into bpf/bbr3.bpf.c (through bbr3_core.h) and for the host
 * (bpf/host/math_host.c), where loader/tests/bbr3_math.rs tests them
 * against an f64 line and a reference of the ring search.
 *
 * The stock kernel does not record, per skb, tp->lost and the inflight at
 * send (v3's tx.lost, tx.in_flight). bbr3 keeps a ring of snapshots
 * (tp->delivered, tp->lost, inflight) taken every cwnd/8 deliveries; a
 * packet left when tp->delivered was p (its rs->prior_delivered), somewhere
 * between two snapshots. Taking the earlier snapshot as is would count the
 * losses marked between that snapshot and the send (up to cwnd/8 packets of
 * deliveries' worth) as losses of the packet's own flight, which makes the
 * 2 % test (Eq. 1) fire early on random loss. Instead tp->lost at p is
 * interpolated between the snapshots either side of it, by deliveries:
 *
 *   y(p) = y0 + (y1 - y0) (p - d0) / (d1 - d0),  rounded to the nearest packet
 *
 * which is exact when losses are marked evenly over the deliveries between
 * two snapshots, and unbiased for random loss.
 */
#ifndef RTTFAIR_BBR3_MATH_H
#define RTTFAIR_BBR3_MATH_H

#include "rf_types.h"

/*
 * y at x on the line through (x0, y0) and (x1, y1), for x0 <= x <= x1 in
 * wrapping u32 sequence space (tp->delivered wraps); y0 at or before x0, y1
 * at or after x1. Rounded to nearest; y may fall (inflight) or rise.
 * Exact for |y1 - y0| < 2^31 (span < 2^31 is checked): the product stays
 * below 2^63.
 */
RF_INLINE __u32 bbr3_interpolate(__u32 x, __u32 x0, __u32 y0, __u32 x1, __u32 y1)
{
	__u32 span = x1 - x0, into = x - x0;
	__u64 num, den, step;

	if ((__s32)span <= 0 || (__s32)into <= 0)
		return y0;
	if (into >= span)
		return y1;
	den = (__u64)span * 2;
	if (y1 >= y0) {
		num = (__u64)(y1 - y0) * into * 2 + span;
		step = num / den;
		return y0 + (__u32)step;
	}
	num = (__u64)(y0 - y1) * into * 2 + span;
	step = num / den;
	return y0 - (__u32)step;
}

/*
 * tp->lost when the packet left: the losses marked between the snapshot
 * before its send (d0, lost0) and the point after (d1, lost1: the next
 * snapshot, or the current ACK) are spread evenly over those deliveries.
 * Counts wrap, so only the difference lost1 - lost0 is interpolated.
 */
RF_INLINE __u32 bbr3_lost_at_send(__u32 p, __u32 d0, __u32 lost0, __u32 d1, __u32 lost1)
{
	return lost0 + bbr3_interpolate(p, d0, 0, d1, lost1 - lost0);
}

/*
 * The ring of send-time snapshots that stands in for the per-skb tx state
 * (tx.in_flight, tx.lost) the stock kernel does not give a BPF CCA. A packet
 * sent after the snapshot with delivered = D carries rs->prior_delivered >= D,
 * so the newest snapshot at or below rs->prior_delivered says what was in
 * flight when it left, and it and the snapshot after bound tp->lost then.
 * A slot never written is all zero.
 */
#define BBR3_RING 16
#define BBR3_RING_MASK (BBR3_RING - 1)

struct bbr3_snap {
	__u32 delivered; /* tp->delivered */
	__u32 lost;      /* tp->lost */
	__u32 inflight;  /* rs->prior_in_flight: inflight reached when sending */
};

/* bbr3_ring_tx's answer when no slot of the ring was written. */
#define BBR3_TX_NONE (-1LL)
/* The largest tx.in_flight bbr3_ring_tx carries (2^31 - 1 packets, beyond
 * any real flight): it keeps the packed answer non-negative. */
#define BBR3_TX_IN_FLIGHT_MAX 0x7fffffffU
/* "No snapshot found yet" for the distances bbr3_ring_tx minimises. */
#define BBR3_RING_FAR 0xffffffffU

/*
 * The ACKed packet's tx state from the ring, in one pass over it. The packet
 * left when tp->delivered was p (its rs->prior_delivered); now_delivered and
 * now_lost are tp->delivered and tp->lost at this ACK. Three snapshots matter:
 *
 *   before  the newest at or before p (least p - delivered, >= 0);
 *   after   the oldest after p (least delivered - p, > 0), or, if none
 *           follows, (now_delivered, now_lost);
 *   oldest  the oldest of all (greatest now_delivered - delivered).
 *
 *   tx.in_flight = before.inflight                      (approximation 1)
 *   tx.lost      = now_lost - lost_at_send(p, before, after)  (approx. 2)
 *
 * with bbr3_lost_at_send above. A packet sent before the ring's reach (no
 * snapshot at or before p) takes the oldest snapshot as is: it left before
 * that one, so there is nothing to interpolate.
 *
 * Returns BBR3_TX_NONE when no slot was written, else (tx.in_flight << 32)
 * | tx.lost (bbr3_tx_in_flight, bbr3_tx_lost), with tx.in_flight at most
 * BBR3_TX_IN_FLIGHT_MAX: one scalar, because in BPF this runs in a global
 * function (bbr3_core.h) and a scalar return is what keeps the ACK path's
 * verification cheap. The loop tracks values, never slot indices: an index
 * the caller dereferences is a precise scalar to the verifier, and two of
 * them multiplied its paths past the 1M-instruction limit.
 */
RF_INLINE __s64 bbr3_ring_tx(const struct bbr3_snap *ring, __u32 p, __u32 now_delivered,
			     __u32 now_lost)
{
	__u32 before_age = BBR3_RING_FAR, after_gap = BBR3_RING_FAR, oldest_age = 0;
	__u32 d0 = 0, lost0 = 0, inflight0 = 0;       /* before */
	__u32 d1 = now_delivered, lost1 = now_lost;   /* after */
	__u32 lost_oldest = 0, inflight_oldest = 0;   /* oldest */
	__u32 age, gap, now_age, lost_at_send, in_flight, i;
	bool written = false;

	for (i = 0; i < BBR3_RING; i++) {
		const struct bbr3_snap *s = &ring[i];

		if (!s->delivered && !s->inflight)
			continue;       /* never written */
		written = true;
		age = p - s->delivered; /* how far before the send */
		gap = s->delivered - p; /* how far after it */
		if ((__s32)age >= 0 && age < before_age) {
			before_age = age;
			d0 = s->delivered;
			lost0 = s->lost;
			inflight0 = s->inflight;
		}
		if ((__s32)gap > 0 && gap < after_gap) {
			after_gap = gap;
			d1 = s->delivered;
			lost1 = s->lost;
		}
		now_age = now_delivered - s->delivered;
		if (now_age >= oldest_age) {
			oldest_age = now_age;
			lost_oldest = s->lost;
			inflight_oldest = s->inflight;
		}
	}
	if (!written)
		return BBR3_TX_NONE;
	if (before_age == BBR3_RING_FAR) {
		lost_at_send = lost_oldest;
		in_flight = inflight_oldest;
	} else {
		lost_at_send = bbr3_lost_at_send(p, d0, lost0, d1, lost1);
		in_flight = inflight0;
	}
	if (in_flight > BBR3_TX_IN_FLIGHT_MAX)
		in_flight = BBR3_TX_IN_FLIGHT_MAX;
	return (__s64)(((__u64)in_flight << 32) | (now_lost - lost_at_send));
}

/* The two halves of bbr3_ring_tx's answer (not BBR3_TX_NONE). */
RF_INLINE __u32 bbr3_tx_in_flight(__s64 tx)
{
	return (__u32)((__u64)tx >> 32);
}

RF_INLINE __u32 bbr3_tx_lost(__s64 tx)
{
	return (__u32)tx;
}

#endif /* RTTFAIR_BBR3_MATH_H */
