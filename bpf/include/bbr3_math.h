/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bbr3's send-time estimate of tp->lost in fixed point (docs/algorithms.md,
 * "bbr3", approximation 2). Pure functions, compiled both into
 * bpf/bbr3.bpf.c (through bbr3_core.h) and for the host, where
 * loader/src/math.rs tests them against an f64 reference.
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

#endif /* RTTFAIR_BBR3_MATH_H */
