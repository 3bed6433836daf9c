/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fixed-point helpers shared by the CCAs' math headers (fairtt_math.h,
 * adbbr_math.h, qfair_math.h): one definition each, compiled both into the
 * BPF programs and for the host tests (bpf/host/math_host.c).
 */
#ifndef RTTFAIR_RF_MATH_H
#define RTTFAIR_RF_MATH_H

#include "rf_types.h"

/* Parts per million: the unit of the ratio tunables (beta, gamma, alpha, X). */
#define PPM 1000000ULL

/*
 * Integer square root, floor(sqrt(x)), for every u64 x: a power-of-two
 * guess at or above the root from x's bit length (at most twice the root),
 * then Newton's iteration from above, which at least squares the relative
 * error every step and never goes below the root. Seven unrolled steps are
 * exact for every input (tested on the host, loader/src/math.rs): straight
 * code, no loop for the verifier to walk, seven divisions. qfair's Eq. 6
 * and Ad-BBR's RTT std (Alg. 3) both use it.
 */
RF_INLINE __u64 rf_isqrt(__u64 x)
{
	__u64 r = 1, y;
	__u32 bits = 0;

	if (x < 2)
		return x;
	/* bit length of x by binary search (no clz in BPF v3) */
	y = x;
	if (y >> 32) { bits += 32; y >>= 32; }
	if (y >> 16) { bits += 16; y >>= 16; }
	if (y >> 8) { bits += 8; y >>= 8; }
	if (y >> 4) { bits += 4; y >>= 4; }
	if (y >> 2) { bits += 2; y >>= 2; }
	if (y >> 1) { bits += 1; y >>= 1; }
	bits += 1;
	r <<= (bits + 1) / 2; /* 2^ceil(bits/2) >= sqrt(x); <= 2^32, so r + x/r fits */
#define RF_NEWTON() do { y = (r + x / r) / 2; if (y < r) r = y; } while (0)
	RF_NEWTON(); RF_NEWTON(); RF_NEWTON(); RF_NEWTON();
	RF_NEWTON(); RF_NEWTON(); RF_NEWTON();
#undef RF_NEWTON
	return r;
}

/*
 * The cwnd a variant whose law handles loss itself (the core's
 * cca_loss_recovery_cwnd() false: qfair in cruise) starts from on the ACK
 * that leaves Loss or Recovery: the cwnd saved before it (prior_cwnd), as
 * BBR restores it, but never above the law's own target (qfair: max(4, w)
 * + b) and never below the cwnd it has. An RTO sets cwnd to the packets in
 * flight + 1; without this the window would grow back by slow start, one
 * doubling per round trip, which costs a flow time in proportion to its RTT.
 */
RF_INLINE __u32 rf_cwnd_restored(__u32 cwnd, __u32 prior_cwnd, __u32 target)
{
	__u32 restored = prior_cwnd < target ? prior_cwnd : target;

	return restored > cwnd ? restored : cwnd;
}

#endif /* RTTFAIR_RF_MATH_H */
