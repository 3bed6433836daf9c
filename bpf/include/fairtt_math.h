/* SPDX-License-Identifier: GPL-2.0 */
/*
 * FaiRTT's equations in fixed point, numbered as in
 * A. Abrol, P. Murali Mohan, T. Truong-Huu, "FaiRTT: An Empirical Approach
 * for Enhanced RTT Fairness and Bottleneck Throughput in BBR", arXiv
 * preprint arXiv:2403.19973, 2024.
 *
 * Pure functions of integers: the BPF program calls them per round trip or
 * per ACK, and loader/src/math.rs tests the very same code, compiled for the
 * host, against an f64 reference. Units: microseconds (_us), parts per
 * million (_ppm), and the BDP coefficient with 10 fractional bits (_x1024).
 */
#ifndef RTTFAIR_FAIRTT_MATH_H
#define RTTFAIR_FAIRTT_MATH_H

#include "rf_math.h"

#define COEF_UNIT 1024U

/*
 * Eq. 6: WminRTT_t = beta * mean(minRTT_0 .. minRTT_{t-1}) + (1 - beta) * minRTT_t.
 * sum_us/n is the mean of the earlier samples (n = 0: no history, so the
 * current sample alone).
 */
RF_INLINE __u32 fairtt_wminrtt_us(__u64 sum_us, __u32 n, __u32 cur_us, __u32 beta_ppm)
{
	__u64 mean, v;

	if (n == 0)
		return cur_us;
	if (beta_ppm > PPM)
		beta_ppm = PPM;
	mean = sum_us / n;
	v = (mean * beta_ppm + (__u64)cur_us * (PPM - beta_ppm) + PPM / 2) / PPM;
	return v > 0xffffffffULL ? 0xffffffffU : (__u32)v;
}

/*
 * Eq. 5: alpha_t = Wfcount_t * (sum over the window of WminRTT_j) / W_t,
 * i.e. Wfcount times the mean WminRTT of the last W_t round trips.
 */
RF_INLINE __u32 fairtt_alpha_us(__u32 wfcount, __u64 window_sum_us, __u32 w)
{
	__u64 v;

	if (w == 0)
		return 0;
	v = (__u64)wfcount * (window_sum_us / w);
	return v > 0xffffffffULL ? 0xffffffffU : (__u32)v;
}

/*
 * Alg. 1 line 8: the BDP coefficient minRTT * gamma / lastRTT, x1024.
 * Never above 1: the algorithm only ever reduces the BDP (a lastRTT below
 * minRTT means a stale minRTT, not a reason to inflate).
 */
RF_INLINE __u32 fairtt_coef_x1024(__u32 min_rtt_us, __u32 last_rtt_us, __u32 gamma_ppm)
{
	__u64 num, v;

	if (last_rtt_us == 0)
		return COEF_UNIT;
	num = (__u64)min_rtt_us * gamma_ppm;          /* < 2^32 * 2^20 */
	v = (num * COEF_UNIT) / ((__u64)last_rtt_us * PPM);
	return v > COEF_UNIT ? COEF_UNIT : (__u32)v;
}

/* Alg. 1 line 7: is the adjustment due? (ProbeBW is checked by the caller.) */
RF_INLINE bool fairtt_adjust_active(__u32 last_rtt_us, __u32 alpha_us)
{
	return alpha_us > 0 && last_rtt_us > alpha_us;
}

/* Eq. 4 with line 8: the BDP (in packets, already x cwnd_gain) scaled by the
 * coefficient, rounded up, never below 1 packet. */
RF_INLINE __u64 fairtt_scaled_bdp(__u64 bdp, __u32 coef_x1024)
{
	__u64 v = (bdp * coef_x1024 + COEF_UNIT - 1) / COEF_UNIT;

	return v ? v : 1;
}

/* Two minRTTs belong to the same class when they differ by at most tol_pct
 * percent of the larger. */
RF_INLINE bool fairtt_same_class(__u32 a_us, __u32 b_us, __u32 tol_pct)
{
	__u32 hi = a_us > b_us ? a_us : b_us;
	__u32 lo = a_us > b_us ? b_us : a_us;

	return (__u64)(hi - lo) * 100 <= (__u64)hi * tol_pct;
}

#endif /* RTTFAIR_FAIRTT_MATH_H */
