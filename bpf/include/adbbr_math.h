/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Ad-BBR's equations in fixed point, numbered as in
 * M. Wang, X. Zhang, F. Jing, M. Gao, "Ad-BBR: Enhancing Round-Trip Time
 * Fairness and Transmission Stability in TCP-BBR", Future Internet 17(5),
 * 189, 2025, doi:10.3390/fi17050189.
 * Pure functions, tested on the host against f64 (loader/src/math.rs).
 * Units: microseconds (_us), parts per million (_ppm), factors x1024.
 */
#ifndef RTTFAIR_ADBBR_MATH_H
#define RTTFAIR_ADBBR_MATH_H

#include "rf_math.h"

#define FACTOR_UNIT 1024U

/* Regimes of Alg. 2 (values match enum rttfair_adbbr_regime). */
#define ADBBR_REGIME_NORMAL 0
#define ADBBR_REGIME_BETA 1
#define ADBBR_REGIME_GAMMA 2

/* Interpretations of Eq. 12 (gamma = 1 / (rRTT - nRTT), not dimensionless
 * as printed). All are clamped to [1/16, 2/3]: never gentler than the beta
 * regime at its 1.5 x nRTT boundary, never stalling the flow. */
#define ADBBR_GAMMA_RATIO 1      /* gamma = nRTT / rRTT (beta regime continued) */
#define ADBBR_GAMMA_NORMALIZED 2 /* gamma = nRTT / (3 * eta), eta = rRTT - nRTT: 2/3 at the boundary, ~1/eta beyond */
#define ADBBR_GAMMA_REFERENCE 3  /* gamma = ref / eta: the printed formula with eta in units of ref (1 ms) */
#define ADBBR_GAMMA_MIN_X1024 (FACTOR_UNIT / 16)
#define ADBBR_GAMMA_MAX_X1024 (FACTOR_UNIT * 2 / 3)

/*
 * Alg. 2: which regime an RTT sample falls in. The paper's thresholds are
 * ratios (1.25 and 1.5 x nRTT), i.e. queueing delays eta = rRTT - nRTT of
 * nRTT/4 and nRTT/2. floor_us is the project's absolute floor on them
 * (adbbr.eta_floor_us): eta must also reach floor_us (beta) and 2 x floor_us
 * (gamma). At microsecond RTTs the ratios alone make host noise (a TSO
 * burst, the veth backlog: tens of us) look like "rRTT = 3 x nRTT"; on paths
 * with nRTT >= 4 x floor_us the floor never binds and the paper's rule holds
 * unchanged. floor_us = 1 (the smallest adbbr.eta_floor_us settable: 0 in
 * the map means the 1000 us default) is the paper's rule in effect; the
 * function itself, given 0, applies no floor.
 */
RF_INLINE __u32 adbbr_regime(__u32 rrtt_us, __u32 nrtt_us, __u32 floor_us)
{
	__u64 r4 = (__u64)rrtt_us * 4, n = nrtt_us;
	__u64 eta = rrtt_us > nrtt_us ? rrtt_us - nrtt_us : 0;

	if (nrtt_us == 0 || r4 < 5 * n || eta < floor_us) /* rRTT < 1.25 nRTT */
		return ADBBR_REGIME_NORMAL;
	if (r4 < 6 * n || eta < 2 * (__u64)floor_us)      /* rRTT < 1.5 nRTT */
		return ADBBR_REGIME_BETA;
	return ADBBR_REGIME_GAMMA;
}

/*
 * Alg. 1 line 1: the rRTT up to which nRTT follows RTprop at once:
 * alpha x RTprop, and at least RTprop + floor_us (the same absolute floor as
 * Alg. 2's thresholds, for the same reason).
 */
RF_INLINE __u64 adbbr_alpha_threshold_us(__u32 rtprop_us, __u32 alpha_ppm, __u32 floor_us)
{
	__u64 ratio = (__u64)rtprop_us * alpha_ppm / PPM;
	__u64 floor = (__u64)rtprop_us + floor_us;

	return ratio > floor ? ratio : floor;
}

/* Eq. 11: beta = rRTT / nRTT, x1024 (the pacing rate is divided by it). */
RF_INLINE __u32 adbbr_beta_x1024(__u32 rrtt_us, __u32 nrtt_us)
{
	__u64 v;

	if (nrtt_us == 0)
		return FACTOR_UNIT;
	v = ((__u64)rrtt_us * FACTOR_UNIT) / nrtt_us;
	return v > 0xffffffffULL ? 0xffffffffU : (__u32)v;
}

/* Eq. 12 under the chosen interpretation, x1024 (the rate is multiplied by it). */
RF_INLINE __u32 adbbr_gamma_x1024(__u32 rrtt_us, __u32 nrtt_us, __u32 mode, __u32 ref_us)
{
	__u64 eta = rrtt_us > nrtt_us ? rrtt_us - nrtt_us : 0;
	__u64 v;

	if (mode == ADBBR_GAMMA_RATIO)
		v = rrtt_us ? ((__u64)nrtt_us * FACTOR_UNIT) / rrtt_us : FACTOR_UNIT;
	else if (mode == ADBBR_GAMMA_REFERENCE)
		v = eta ? ((__u64)ref_us * FACTOR_UNIT) / eta : FACTOR_UNIT;
	else /* ADBBR_GAMMA_NORMALIZED */
		v = eta ? ((__u64)nrtt_us * FACTOR_UNIT) / (3 * eta) : FACTOR_UNIT;
	if (v < ADBBR_GAMMA_MIN_X1024)
		v = ADBBR_GAMMA_MIN_X1024;
	if (v > ADBBR_GAMMA_MAX_X1024)
		v = ADBBR_GAMMA_MAX_X1024;
	return (__u32)v;
}

/* The pacing factor x1024 Alg. 2 applies for this sample. */
RF_INLINE __u32 adbbr_pacing_factor_x1024(__u32 rrtt_us, __u32 nrtt_us, __u32 mode, __u32 ref_us,
					   __u32 floor_us)
{
	switch (adbbr_regime(rrtt_us, nrtt_us, floor_us)) {
	case ADBBR_REGIME_BETA:
		return (__u32)(((__u64)FACTOR_UNIT * FACTOR_UNIT) / adbbr_beta_x1024(rrtt_us, nrtt_us));
	case ADBBR_REGIME_GAMMA:
		return adbbr_gamma_x1024(rrtt_us, nrtt_us, mode, ref_us);
	default:
		return FACTOR_UNIT;
	}
}

RF_INLINE __u64 adbbr_apply_factor(__u64 rate, __u32 factor_x1024)
{
	return (rate >> 10) * factor_x1024 + (((rate & 1023) * factor_x1024) >> 10);
}

/*
 * The variance (us^2) of n samples from their sum and sum of squares:
 * (sum_sq - sum^2 / n) / n, which keeps the mean's fraction (sum^2 fits u64
 * while sum < 2^32, i.e. 16 samples of RTTs below ~268 s); beyond that the
 * integer-mean form, slightly less exact.
 */
RF_INLINE __u64 adbbr_variance(__u64 sum, __u64 sum_sq, __u32 n)
{
	__u64 mean, var, sq;

	if (n < 2)
		return 0;
	if (sum < (1ULL << 32)) {
		sq = sum * sum / n;
		return sum_sq > sq ? (sum_sq - sq) / n : 0;
	}
	mean = sum / n;
	var = sum_sq / n;
	return var > mean * mean ? var - mean * mean : 0;
}

/* Population standard deviation of n samples from their sum and sum of
 * squares (us, us^2). */
RF_INLINE __u32 adbbr_std_us(__u64 sum, __u64 sum_sq, __u32 n)
{
	return (__u32)rf_isqrt(adbbr_variance(sum, sum_sq, n));
}

/* Eq. 13: Y = max(X * std, Z_min). */
RF_INLINE __u32 adbbr_y_us(__u32 std_us, __u32 x_ppm, __u32 zmin_us)
{
	__u64 v = ((__u64)std_us * x_ppm) / PPM;

	return v > zmin_us ? (__u32)v : zmin_us;
}

#endif /* RTTFAIR_ADBBR_MATH_H */
