/* SPDX-License-Identifier: GPL-2.0 */
/*
 * qfair's control law in fixed point (docs/algorithms.md, "qfair").
 * Pure functions, compiled both into bpf/qfair.bpf.c and for the host, where
 * loader/src/math.rs tests them against an f64 reference.
 *
 * Units: rates in the BBR core's unit (packets per microsecond << 24,
 * QF_BW_SCALE), times in microseconds, packet counts x1024 (_x1024), gains
 * x256 (_x256, 256 = 1.0). Every product is bounded below 2^63 for rates
 * below 2^32 (core unit: ~280 Tbit/s) and times below 2^23 us (8 s), and no
 * division is signed (BPF ISA v3 has no signed division).
 */
#ifndef RTTFAIR_QFAIR_MATH_H
#define RTTFAIR_QFAIR_MATH_H

#include "rf_types.h"

#define QF_BW_SCALE 24
#define QF_UNIT 1024ULL         /* packets x1024 */
#define QF_GAIN_UNIT 256        /* gains x256 */
#define QF_USEC_PER_SEC 1000000ULL

/*
 * Integer square root of x < 2^62: a power-of-two guess at or above the root
 * from x's bit length, then Newton's iteration from above, which halves the
 * error every step and never overshoots below the root. Seven unrolled
 * steps are exact for every input in range (tested on the host).
 */
RF_INLINE __u64 qf_isqrt(__u64 x)
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
	r <<= (bits + 1) / 2; /* 2^ceil(bits/2) >= sqrt(x) */
#define QF_NEWTON() do { y = (r + x / r) / 2; if (y < r) r = y; } while (0)
	QF_NEWTON(); QF_NEWTON(); QF_NEWTON(); QF_NEWTON();
	QF_NEWTON(); QF_NEWTON(); QF_NEWTON();
#undef QF_NEWTON
	return r;
}

/* A rate in the core's unit as packets per millisecond, x1024. */
RF_INLINE __u64 qf_pkts_per_ms_x1024(__u64 bw)
{
	return (bw * 1000) >> (QF_BW_SCALE - 10);
}

/*
 * The default backlog target alpha_d(x) = alpha_0 + k sqrt(x * 1 ms), in
 * packets x1024. alpha(x)/x strictly decreasing is what makes the shared
 * equilibrium unique; the square root widens it at high rates.
 */
RF_INLINE __u32 qf_alpha_d_x1024(__u64 bw, __u32 alpha0_x1024, __u32 k_x1024)
{
	/* sqrt(p) x1024 = sqrt(p x1024 * 1024) */
	__u64 root_x1024 = qf_isqrt(qf_pkts_per_ms_x1024(bw) * QF_UNIT);
	__u64 a = alpha0_x1024 + ((root_x1024 * k_x1024) >> 10);

	return a > 0xffffffffULL ? 0xffffffffU : (__u32)a;
}

/* The rate x times a duration, in packets x1024 (x^ q^, x^ 100 ms, ...). */
RF_INLINE __u64 qf_pkts_x1024(__u64 bw, __u64 dur_us)
{
	return (bw * dur_us) >> (QF_BW_SCALE - 10);
}

/*
 * What remains of alpha after halvings worth eff_us of time, one halving per
 * 100 ms: alpha x 2^(-eff_us / 100 ms), eff_us capped at 10 s. Whole
 * halvings are a shift; the fraction f = (eff_us mod 100 ms) / 100 ms uses
 * 2^-f = e^(-f ln 2), four Taylor terms in 16-bit fixed point (error below
 * 0.2% for f < 1, tested on the host). Consecutive calls compose:
 * remaining(t1) then remaining(t2) = remaining(t1 + t2) to that error, so
 * the decrease per second of wall clock does not depend on how the time was
 * cut into rounds.
 */
#define QF_HALVING_US 100000ULL
#define QF_LN2_X65536 45426ULL
RF_INLINE __u64 qf_alpha_after_halvings(__u64 alpha_x1024, __u64 eff_us)
{
	__u64 n, x, x2, x3, x4, e;

	if (eff_us > 10 * QF_USEC_PER_SEC)
		eff_us = 10 * QF_USEC_PER_SEC;
	n = eff_us / QF_HALVING_US;
	if (n >= 32)
		return 0;
	x = (eff_us - n * QF_HALVING_US) * QF_LN2_X65536 / QF_HALVING_US; /* f ln2 */
	x2 = (x * x) >> 16;
	x3 = (x2 * x) >> 16;
	x4 = (x3 * x) >> 16;
	e = (65536 + x2 / 2 + x4 / 24) - (x + x3 / 6);          /* e^-x, x65536 */
	return ((alpha_x1024 >> n) * e) >> 16;
}

/*
 * One per-round step of alpha (Eq. 7): additive increase ai_x1024 packets per
 * second of wall clock; each lost packet halves alpha, but alpha falls by at
 * most half per 100 ms of wall clock since the flow's last cut
 * (since_cut_us): the cut is alpha (1 - 2^-min(lost, since_cut / 100 ms)).
 * Both terms are per unit of time or per packet, never per round, so a flow
 * loses the same fraction of alpha per overflow, and per second, whatever
 * its round-trip time. (Before issue 14's fix the cap was alpha/2 per round
 * once a round was >= 50 ms: a 67 ms flow was halved at every overflow, a
 * 20 ms flow cut by a fifth.) Clamped to [1 packet, alpha_hi].
 */
RF_INLINE __u32 qf_alpha_step_x1024(__u32 alpha_x1024, __u64 dt_us, __u32 lost,
				   __u32 ai_x1024, __u32 alpha_hi_x1024, __u64 since_cut_us)
{
	__u64 a = alpha_x1024, eff, dec;

	if (dt_us > 10 * QF_USEC_PER_SEC)
		dt_us = 10 * QF_USEC_PER_SEC;
	a += (dt_us * ai_x1024) / QF_USEC_PER_SEC;
	if (lost) {
		eff = lost >= 100 ? 100 * QF_HALVING_US : (__u64)lost * QF_HALVING_US;
		if (eff > since_cut_us)
			eff = since_cut_us;
		dec = alpha_x1024 - qf_alpha_after_halvings(alpha_x1024, eff);
		a = a > dec ? a - dec : 0;
	}
	if (a > alpha_hi_x1024)
		a = alpha_hi_x1024;
	if (a < QF_UNIT)
		a = QF_UNIT;
	return (__u32)a;
}

/*
 * The rate correction g = 1 + clamp((D / tau) (alpha - a^) / alpha, +-cap):
 * steer the own backlog a^ to alpha, moving the rate by the same fraction
 * per second of wall clock whatever the round-trip time (D / tau per round).
 *
 * Only outside the band alpha/2 <= a^ <= 2 alpha. Inside it g = 1 and the
 * fixed point of w = x^ R^ + alpha alone decides the rates. Why: g acts on
 * the window through (g - 1) x^ R^ packets, so any steady offset between
 * a^ and alpha (the cwnd's TSO budget, delayed ACKs, a bias of the standing
 * RTT) would be corrected by a window change proportional to the flow's own
 * RTT -- the proportional controller's steady-state error then differs per
 * RTT and hands the short flow more backlog. Measured: with g always on,
 * 20 vs 200 ms at 5 BDP settled at 11.3 vs 7.7 Mbit/s with g = 0.99 and
 * 0.98 and a^/alpha = 1.08 and 1.33 (docs/results.md). With g = 1 every
 * flow's excess is alpha plus the same few packets, which is fair; g is
 * kept for what it is good at: large transients (start, joins) converge in
 * wall-clock time, not in a number of rounds.
 */
RF_INLINE __u32 qf_gain_x256(__u32 d_us, __u32 tau_us, __u32 alpha_x1024,
			     __u32 backlog_x1024, __u32 cap_x256)
{
	__u64 mag, ratio_x256;
	bool up = backlog_x1024 < alpha_x1024;

	if (!alpha_x1024 || !tau_us)
		return QF_GAIN_UNIT;
	if (backlog_x1024 >= alpha_x1024 && backlog_x1024 <= 2ULL * alpha_x1024)
		return QF_GAIN_UNIT;
	mag = up ? alpha_x1024 - backlog_x1024 : backlog_x1024 - alpha_x1024;
	ratio_x256 = mag * QF_GAIN_UNIT / alpha_x1024;  /* |alpha - a^| / alpha */
	if (ratio_x256 > (1ULL << 20))
		ratio_x256 = 1ULL << 20;
	mag = ratio_x256 * d_us / tau_us;               /* times D / tau */
	if (mag > cap_x256)
		mag = cap_x256;
	if (!up && mag > QF_GAIN_UNIT - 1)
		mag = QF_GAIN_UNIT - 1;
	return up ? QF_GAIN_UNIT + (__u32)mag : QF_GAIN_UNIT - (__u32)mag;
}

/* The cwnd target w = g x^ R^ + alpha, in whole packets (rounded up, >= 1). */
RF_INLINE __u32 qf_target_cwnd(__u64 bw, __u32 rtprop_us, __u32 g_x256, __u32 alpha_x1024)
{
	__u64 w = (qf_pkts_x1024(bw, rtprop_us) * g_x256) / QF_GAIN_UNIT + alpha_x1024;

	w = (w + QF_UNIT - 1) / QF_UNIT;
	if (w > 0xffffffULL)
		w = 0xffffffULL;
	return w ? (__u32)w : 1;
}

/*
 * Pacing rate in bytes/s: w per standing RTT D, times 1.1 so that the window,
 * not the pacer, binds -- except below 6 packets, where cwnd's floor of 4
 * would hand a tiny-BDP flow more than alpha of queue; there the pacer at
 * exactly w / D is the limit.
 */
RF_INLINE __u64 qf_pacing_rate(__u32 w, __u32 d_us, __u32 mss)
{
	__u64 bytes = (__u64)w * mss, rate;

	if (!d_us)
		return 0;
	if (bytes > (1ULL << 40))
		bytes = 1ULL << 40;
	rate = bytes * QF_USEC_PER_SEC / d_us;
	return w >= 6 ? rate / 10 * 11 : rate;
}

/* The delivery-rate EWMA, gain 1/4 per update (unbiased, unlike a max). */
RF_INLINE __u64 qf_rate_ewma(__u64 xhat, __u64 sample)
{
	if (!xhat)
		return sample;
	return sample >= xhat ? xhat + (sample - xhat) / 4 : xhat - (xhat - sample) / 4;
}

/*
 * A drain succeeded when the lowest RTT seen during it came back to the path's
 * minimum: within max(1 ms, half the queueing delay before the drain).
 */
RF_INLINE bool qf_drain_emptied_queue(__u32 drain_min_us, __u32 rtprop_us, __u32 q_before_us)
{
	__u64 slack = q_before_us / 2 > 1000 ? q_before_us / 2 : 1000;

	return (__u64)drain_min_us <= (__u64)rtprop_us + slack;
}

/*
 * A drain whose lowest RTT sat above R^ by more than max(2 ms, R^/8): the
 * flow's own backlog is gone (half rate, half window, 200 ms), so what is
 * left is a longer path or someone else's standing queue. Decided on the
 * drain minimum alone, not on the verdict above: that verdict's margin
 * grows with the flow's own queue estimate, which a wrong R^ inflates.
 */
#define QF_LONGER_PATH_MIN_US 2000
RF_INLINE bool qf_drain_saw_longer_path(__u32 drain_min_us, __u32 rtprop_us)
{
	__u32 margin = rtprop_us / 8 > QF_LONGER_PATH_MIN_US ? rtprop_us / 8 : QF_LONGER_PATH_MIN_US;

	return (__u64)drain_min_us > (__u64)rtprop_us + margin;
}

/* Two drain minima agree when each is within 10% of the other's scale. */
RF_INLINE bool qf_minima_agree(__u32 a_us, __u32 b_us)
{
	__u64 hi = a_us > b_us ? a_us : b_us, lo = a_us > b_us ? b_us : a_us;

	return (hi - lo) * 10 <= lo;
}

#endif /* RTTFAIR_QFAIR_MATH_H */
