/* SPDX-License-Identifier: GPL-2.0 */
/*
 * qfair's control law in fixed point (docs/algorithms.md, "qfair").
 * Pure functions, compiled both into bpf/qfair.bpf.c and for the host, where
 * loader/tests/qfair_math.rs tests them against an f64 reference (through
 * the host build, bpf/host/math_host.c).
 *
 * Units: rates in the BBR core's unit (packets per microsecond << 24,
 * QF_BW_SCALE), times in microseconds, packet counts x1024 (_x1024), gains
 * x256 (_x256, 256 = 1.0). Every product is bounded below 2^63 for rates
 * below 2^32 (core unit: 256 packets per us, ~3 Tbit/s at 1448-byte
 * packets) and times below 2^23 us (8 s), and no
 * division is signed (BPF ISA v3 has no signed division).
 */
#ifndef RTTFAIR_QFAIR_MATH_H
#define RTTFAIR_QFAIR_MATH_H

#include "rf_math.h"

#define QF_BW_SCALE 24          /* = the core's BW_SCALE (asserted in qfair.bpf.c) */
#define QF_UNIT 1024ULL         /* packets x1024 */
#define QF_GAIN_UNIT 256        /* gains x256, = BBR_UNIT (asserted in qfair.bpf.c) */
#define QF_USEC_PER_SEC 1000000ULL

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
	__u64 root_x1024 = rf_isqrt(qf_pkts_per_ms_x1024(bw) * QF_UNIT);
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
 * 2^-f = e^(-f ln 2), its Taylor series to the 4th power in 16-bit fixed
 * point (error below 0.2% of alpha for f < 1, tested on the host).
 * Consecutive calls compose:
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
 * Competitive mode's increase of alpha, packets per second x1024: one packet
 * per round trip R^ (a round at least 1 ms, the per-round update's floor), as
 * a loss-based flow's window grows, and at least 20 pkt/s. What a flow
 * needs to hold against a standing queue q of someone else's is its share
 * times q, which grows with the link's rate and the buffer; one packet a
 * round reaches it in about as many rounds as the other flow's own
 * additive increase took to build q, whatever the link's rate. A fixed
 * 20 pkt/s took 5x as long at 100 as at 20 Mbit/s (qfair held 23 % of
 * 100 Mbit/s against cubic).
 */
#define QF_AI_COMPETITIVE_MIN_X1024 (20 * 1024)
#define QF_ROUND_MIN_US 1000
RF_INLINE __u32 qf_competitive_ai_x1024(__u32 rtprop_us)
{
	__u32 round_us = rtprop_us > QF_ROUND_MIN_US ? rtprop_us : QF_ROUND_MIN_US;
	__u32 ai = (__u32)(1024ULL * 1000000ULL / round_us);

	return ai > QF_AI_COMPETITIVE_MIN_X1024 ? ai : QF_AI_COMPETITIVE_MIN_X1024;
}

/*
 * One per-round step of alpha (Eq. 7): additive increase ai_x1024 packets per
 * second of wall clock; each lost packet halves alpha, but alpha falls by at
 * most half per 100 ms of wall clock since the flow's last cut
 * (since_cut_us): the cut is alpha (1 - 2^-min(lost, since_cut / 100 ms)),
 * lost counted up to 100 and since_cut up to 10 s.
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
 * Which way Eq. 8 pushes: 1 up (a^ < alpha*), 2 down (a^ > 2 alpha*), 0 inside
 * the band alpha* <= a^ <= 2 alpha*, where g = 1 (see qf_gain_x256).
 * target_x1024 is alpha*, the window's backlog target alpha + b (not alpha
 * alone: Eq. 8 steers to what the window holds, burst room included).
 */
#define QF_PUSH_NONE 0
#define QF_PUSH_UP 1
#define QF_PUSH_DOWN 2
RF_INLINE __u32 qf_push_dir(__u32 target_x1024, __u32 backlog_x1024)
{
	if (backlog_x1024 < target_x1024)
		return QF_PUSH_UP;
	if ((__u64)backlog_x1024 > 2ULL * target_x1024)
		return QF_PUSH_DOWN;
	return QF_PUSH_NONE;
}

/*
 * Rounds in a row that Eq. 8 has pushed the same way (its velocity's memory):
 * one more for a push the same way, 1 for a push the other way (the error
 * changed sign: start slow again), one fewer for a round inside the band, so
 * that a noisy backlog that dips into the band now and then does not lose
 * the speed a long, persistent error has built.
 */
#define QF_PUSH_ROUNDS_MAX 64
RF_INLINE __u32 qf_push_rounds(__u32 prev_dir, __u32 prev_rounds, __u32 dir)
{
	if (dir == QF_PUSH_NONE)
		return prev_rounds ? prev_rounds - 1 : 0;
	if (dir != prev_dir)
		return 1;
	return prev_rounds < QF_PUSH_ROUNDS_MAX ? prev_rounds + 1 : QF_PUSH_ROUNDS_MAX;
}

/*
 * Eq. 8's velocity: the per-round step may double once per round after the
 * error has kept its sign for two rounds (one round to act, one for the act
 * to show in the next round's measurement, as in Copa's velocity), at most
 * 2^12 times the base step; the step never exceeds the time-scaled one.
 */
#define QF_VEL_MAX_SHIFT 12
RF_INLINE __u32 qf_velocity_shift(__u32 push_rounds)
{
	if (push_rounds <= 2)
		return 0;
	return push_rounds - 2 < QF_VEL_MAX_SHIFT ? push_rounds - 2 : QF_VEL_MAX_SHIFT;
}

/*
 * The rate correction (Eq. 8)
 *
 *   g = 1 + clamp(e min(D/tau, 2^v alpha* / (2 x^ R^)), +-cap),
 *   e = (alpha* - a^)/alpha*,
 *
 * steers the own backlog a^ to alpha*. Its window step (g - 1) x^ R^ is
 * e x^ R^ D/tau packets per round -- the same fraction of the rate per
 * second whatever the RTT -- but at most 2^v (alpha* - a^)/2 packets.
 *
 * Why the bound: a window step goes into the queue at once, so the loop gain
 * in packets of backlog per packet of error is K = x^ R^ D / (tau alpha*);
 * with one round between acting and measuring, K above ~1 oscillates. K is
 * 0.3 for a 20 ms flow at 50 Mbit/s but 30-60 for a 200 ms flow at 50-80
 * Mbit/s: at 100 Mbit/s that flow's g sat at a +-1/8 clamp in 59% of its
 * rounds, its backlog swinging 0.5-84 packets against alpha = 5.6 (Jain
 * 0.682, docs/results.md). With the bound, K <= 1/2 for every flow at v = 0.
 * v (qf_velocity_shift) recovers the speed of a large, persistent error: the
 * step doubles each round the error keeps its sign, up to the time-scaled
 * step, and falls back when the sign flips. So the speed of a transient now
 * depends on the RTT (a long flow at a high rate needs a few more rounds to
 * reach its full step); the fixed point a^ = alpha* does not.
 *
 * Only outside the band alpha* <= a^ <= 2 alpha*. Inside it g = 1 and the
 * fixed point of w = x^ R^ + alpha alone decides the rates. Why: g acts on
 * the window through (g - 1) x^ R^ packets, so any steady offset between
 * a^ and alpha (the cwnd's TSO budget, delayed ACKs, a bias of the standing
 * RTT) would be corrected by a window change proportional to the flow's own
 * RTT -- the proportional controller's steady-state error then differs per
 * RTT and hands the short flow more backlog. Measured: with g always on,
 * 20 vs 200 ms at 5 BDP settled at 11.3 vs 7.7 Mbit/s with g = 0.99 and
 * 0.98 and a^/alpha = 1.08 and 1.33 (docs/results.md). With g = 1 every
 * flow's excess is alpha plus the same few packets, which is fair; g is
 * kept for what it is good at: large transients (start, joins).
 *
 * target_x1024 = alpha* (alpha + b, as for qf_push_dir), pipe_x1024 = x^ R^
 * (0: no bound), vel_shift = v. Fixed point: the factor min(D/tau, ...) in
 * 16 bits; the x256 result truncates, so a flow whose D/tau is below 1/256
 * (D < 4 ms at tau = 1 s) only moves on large errors.
 */
#define QF_GAIN_FRAC_SHIFT 16
RF_INLINE __u32 qf_gain_x256(__u32 d_us, __u32 tau_us, __u32 target_x1024,
			     __u32 backlog_x1024, __u32 cap_x256, __u64 pipe_x1024,
			     __u32 vel_shift)
{
	__u64 mag, ratio_x256, f_time, f_pkts;
	__u32 dir = qf_push_dir(target_x1024, backlog_x1024);

	if (!target_x1024 || !tau_us || dir == QF_PUSH_NONE)
		return QF_GAIN_UNIT;
	mag = dir == QF_PUSH_UP ? target_x1024 - backlog_x1024 : backlog_x1024 - target_x1024;
	ratio_x256 = mag * QF_GAIN_UNIT / target_x1024;  /* |alpha* - a^| / alpha* */
	if (ratio_x256 > (1ULL << 20))
		ratio_x256 = 1ULL << 20;
	/* the factor per unit of e, x65536: D / tau, at most 2^v alpha* / (2 x^ R^) */
	f_time = ((__u64)d_us << QF_GAIN_FRAC_SHIFT) / tau_us;
	if (vel_shift > QF_VEL_MAX_SHIFT)
		vel_shift = QF_VEL_MAX_SHIFT;
	if (pipe_x1024) {
		f_pkts = (((__u64)target_x1024 << vel_shift) << (QF_GAIN_FRAC_SHIFT - 1)) / pipe_x1024;
		if (f_pkts < f_time)
			f_time = f_pkts;
	}
	if (f_time > (1ULL << 20))
		f_time = 1ULL << 20;
	mag = (ratio_x256 * f_time) >> QF_GAIN_FRAC_SHIFT;
	if (mag > cap_x256)
		mag = cap_x256;
	if (dir == QF_PUSH_DOWN && mag > QF_GAIN_UNIT - 1)
		mag = QF_GAIN_UNIT - 1;
	return dir == QF_PUSH_UP ? QF_GAIN_UNIT + (__u32)mag : QF_GAIN_UNIT - (__u32)mag;
}

/*
 * How much of the three-burst room (Eq. 1's b) a flow's cwnd gets, x64: all
 * of it while its pipe x^ R^ holds at most one burst, none once it holds two,
 * linear between: 64 (2 - pipe/segs), clamped to [0, 64].
 *
 * Why: the room is for paths whose round trip is shorter than a burst (veth,
 * a LAN: x^ R^ = 6 packets beside 45-segment bursts, where the window must
 * hold the burst being sent, the one in flight and the one being
 * acknowledged; without it one flow reached 0.71x native bbr). Where the pipe
 * holds two bursts or more, x^ R^ already covers what is in flight and a
 * window-limited flow's room is standing queue: at 100 Mbit/s a 2 ms flow
 * (pipe 14, bursts of 7) held 20 packets of room as backlog beside
 * alpha = 5.6, and since the room (3 bursts, 3 ms of the flow's own rate)
 * came only above 2 segments per burst, the flow above that rate kept the
 * queue at >= 3 ms, which held the other flow below it: a bistable split,
 * Jain 0.679 (docs/results.md). Now a flow's room depends on its R^ against
 * the burst time (about 1 ms below 500 Mbit/s), not on its rate alone: no
 * room at all for R^ >= 2 burst times, so every flow on a path of a few ms
 * or more has the fixed point x q = alpha, whatever its rate.
 */
#define QF_ROOM_UNIT 64
RF_INLINE __u32 qf_burst_room_share_x64(__u64 pipe_x1024, __u32 segs)
{
	__u64 two = 2ULL * segs * QF_UNIT;

	if (!segs)
		return 0;
	if (pipe_x1024 >= two)
		return 0;
	if (pipe_x1024 <= (__u64)segs * QF_UNIT)
		return QF_ROOM_UNIT;
	return (__u32)((two - pipe_x1024) * QF_ROOM_UNIT / ((__u64)segs * QF_UNIT));
}

/* Eq. 1's b in packets: three bursts of segs, times share_x64 / 64 (from
 * qf_burst_room_share_x64); none where the stack's bursts are the minimum of
 * 2 segments (why: qfair_burst_segs in qfair.bpf.c). */
#define QF_BURSTS 3
RF_INLINE __u32 qf_burst_room(__u32 segs, __u32 share_x64)
{
	if (segs <= 2)
		return 0;
	return (QF_BURSTS * segs * share_x64) / QF_ROOM_UNIT;
}

/*
 * The integral term o of Eq. 1 (Eq. 8b), one step per round:
 *
 *   o <- clamp(o + clamp(alpha* - a^, +-alpha* x 1/4) dt / tau_i, -o_max, o_max)
 *
 * in packets (kept x65536, so that a 1 ms round's step of a fraction of a
 * packet x1024 is not truncated away), dt the round's wall-clock length
 * (capped at 1 s): o moves by
 * the same packets per second of error whatever the RTT, so it removes the
 * steady offset between a^ and alpha* (TSO deferral, delayed ACKs: about a
 * packet, the same for every flow) that g, a proportional term whose step in
 * packets is x^ R^ D / tau, leaves larger on the short flow. tau_i = 2 s is
 * slow against a round at every RTT: per round o moves by at most dt/tau_i
 * of the error, 1/10 at 200 ms, so the loop with one round of delay stays
 * far from oscillation. o_max (qf_offset_max_x1024: o_cap x alpha, by
 * default alpha/2) keeps it from becoming a standing queue of its own.
 * Signed: a flow whose a^ stays above alpha* (inside Eq. 8's band, where
 * g = 1) gives packets back at the same pace, so the long flow's excess need not wait for x^'s slow relaxation
 * (its window w = x^ R^ + alpha moves its rate by only q/R per round).
 * The error is saturated at a quarter of alpha* (anti-windup): a join's startup queue
 * (a^ ~ 3.5 alpha*) otherwise wound o to -alpha/2 in a second and it took
 * 5 s to unwind (late joiners' time to fair 1 -> 6 s, docs/results.md).
 */
#define QF_INT_TAU_US 2000000ULL
#define QF_INT_DT_MAX_US 1000000ULL
#define QF_INT_FINE_SHIFT 6      /* o is kept x65536: a 1 ms round's step is not lost */
RF_INLINE __s32 qf_offset_step_x65536(__s32 o_x65536, __u32 target_x1024, __u32 backlog_x1024,
				      __u64 dt_us, __u32 o_max_x1024)
{
	__s64 o = o_x65536, hi = (__s64)o_max_x1024 << QF_INT_FINE_SHIFT;
	__u64 err, step;

	if (dt_us > QF_INT_DT_MAX_US)
		dt_us = QF_INT_DT_MAX_US;
	err = target_x1024 >= backlog_x1024 ? target_x1024 - backlog_x1024
					    : backlog_x1024 - target_x1024;
	/* anti-windup: a transient's error (a startup queue, a^ ~ 3.5 alpha*)
	 * counts as at most a quarter of alpha*, the size of the offset o is for */
	if (err > target_x1024 / 4)
		err = target_x1024 / 4;
	step = (err << QF_INT_FINE_SHIFT) * dt_us / QF_INT_TAU_US; /* < 2^58 */
	if (step > (1ULL << 40))
		step = 1ULL << 40;
	o += target_x1024 >= backlog_x1024 ? (__s64)step : -(__s64)step;
	if (o > hi)
		o = hi;
	if (o < -hi)
		o = -hi;
	return (__s32)o;
}

/*
 * Eq. 8b's bound on |o|: o_max = o_cap x alpha, o_cap x256 (qfair.o_cap,
 * default 128 = 1/2, the windup cap of issue 14's session 6). With the
 * default this is alpha / 2 exactly ((alpha x 128) >> 8 = alpha >> 1) for
 * every alpha below 65536 packets, so the law is the one before the
 * tunable existed. Why a tunable: at 100 Mbit/s the 200 ms flow of 20 vs
 * 200 ms holds o at -alpha/2 and still ~1.1 packets above alpha*
 * (docs/results.md, "The 200 ms row"); a wider cap lets o remove that too,
 * at the price of more room for windup on transients (the error is
 * saturated at a quarter of alpha* whatever the cap). At most QF_OFFSET_MAX_X1024
 * (32767 packets), so that o x65536 fits the s32 it is kept in; alpha is
 * never that large outside competitive mode, where o is 0.
 */
#define QF_O_CAP_UNIT 256
#define QF_OFFSET_MAX_X1024 (0x7fffffffU >> QF_INT_FINE_SHIFT)
RF_INLINE __u32 qf_offset_max_x1024(__u32 alpha_x1024, __u32 o_cap_x256)
{
	__u64 m = ((__u64)alpha_x1024 * o_cap_x256) / QF_O_CAP_UNIT;

	return m > QF_OFFSET_MAX_X1024 ? QF_OFFSET_MAX_X1024 : (__u32)m;
}

/* The cwnd target w = g x^ R^ + alpha, in whole packets (rounded up, >= 1,
 * at most 2^24 - 1); the caller passes alpha + o (Eq. 1 with Eq. 8b). */
RF_INLINE __u32 qf_target_cwnd(__u64 bw, __u32 rtprop_us, __u32 g_x256, __u32 alpha_x1024)
{
	__u64 w = (qf_pkts_x1024(bw, rtprop_us) * g_x256) / QF_GAIN_UNIT + alpha_x1024;

	w = (w + QF_UNIT - 1) / QF_UNIT;
	if (w > 0xffffffULL)
		w = 0xffffffULL;
	return w ? (__u32)w : 1;
}

/*
 * Eq. 1 on an app-limited round (the round's closing rate sample was sent
 * while the socket had nothing more to send): the law's window w_law may
 * lower the window, never raise it above w_before. The round's rate and
 * queue are what the flow did, so its backlog x^ q^ holds whatever held
 * the sender back, and a flow its send buffer or its application limits
 * still yields what it holds above alpha; a window it did not fill is no
 * evidence that the path carries a larger one (RFC 7661's rule for cwnd).
 */
RF_INLINE __u32 qf_round_cwnd(__u32 w_before, __u32 w_law, int app_limited)
{
	return app_limited && w_law > w_before ? w_before : w_law;
}

/*
 * Pacing rate in bytes/s (Eq. 9): w per standing RTT D, times 1.1 so that
 * the window, not the pacer, binds -- except below 6 packets, where cwnd's
 * floor of 4 would hand a tiny-BDP flow more than alpha of queue; there the
 * pacer at exactly w / D is the limit. The caller passes w + b, the whole
 * window.
 */
/* Below this many packets of window (w plus its burst room) the pacer
 * runs at exactly the window per D, no 1.1 margin: pacing, not cwnd,
 * then limits the flow (Eq. 9's floor). */
#define QF_PACING_FLOOR_PKTS 6

/* Whether a window of w packets (burst room included) is at Eq. 9's
 * floor: the pacer's test and the export's flag, one predicate. */
RF_INLINE int qf_at_pacing_floor(__u32 w)
{
	return w < QF_PACING_FLOOR_PKTS;
}

RF_INLINE __u64 qf_pacing_rate(__u32 w, __u32 d_us, __u32 mss)
{
	__u64 bytes = (__u64)w * mss, rate;

	if (!d_us)
		return 0;
	if (bytes > (1ULL << 40))
		bytes = 1ULL << 40;
	rate = bytes * QF_USEC_PER_SEC / d_us;
	return qf_at_pacing_floor(w) ? rate : rate / 10 * 11;
}

/* Eq. 3's EWMA, gain 1/4 per update (unbiased, unlike a max); the caller's
 * sample is the sending rate, (delivered + lost) / dt. */
RF_INLINE __u64 qf_rate_ewma(__u64 xhat, __u64 sample)
{
	if (!xhat)
		return sample;
	return sample >= xhat ? xhat + (sample - xhat) / 4 : xhat - (xhat - sample) / 4;
}

/*
 * A drain succeeded when the lowest RTT seen during it came back to the path's
 * minimum: within max(1 ms, half the queueing delay q^ before the drain).
 */
RF_INLINE bool qf_drain_emptied_queue(__u32 drain_min_us, __u32 rtprop_us, __u32 q_before_us)
{
	__u64 slack = q_before_us / 2 > 1000 ? q_before_us / 2 : 1000;

	return (__u64)drain_min_us <= (__u64)rtprop_us + slack;
}

/*
 * The queueing delay of the flow's default backlog at its rate, alpha*_d / x^
 * in microseconds (u32-saturated; no rate: "no bound", 0xffffffff), the
 * caller passing alpha*_d = alpha_d + b (Eq. 1's alpha* with alpha at its
 * default, b the burst room): the q^ a qfair flow reads when qfair flows
 * alone share the queue (each holds alpha*, x q = alpha*, Eq. 2), whatever
 * its rate.
 */
RF_INLINE __u32 qf_default_backlog_delay_us(__u32 alpha_d_x1024, __u64 bw)
{
	__u64 q;

	if (!bw)
		return 0xffffffffU;
	/* packets x1024 << 14 = packets << 24, over packets/us << 24 */
	q = ((__u64)alpha_d_x1024 << (QF_BW_SCALE - 10)) / bw;
	return q > 0xffffffffULL ? 0xffffffffU : (__u32)q;
}

/*
 * The queue estimate a drain's verdict takes its margin from
 * (qf_drain_emptied_queue's q_before_us), chosen when the drain begins: q^,
 * at most alpha*_d / x^ (above). The verdict asks "is what remains once my
 * own backlog is gone more than qfair flows alone would leave?", and qfair
 * flows alone leave q^ = alpha* / x^ with alpha <= alpha_d, so between them
 * the bound only trims q^'s noise above its equilibrium (both grids re-run
 * on it: docs/results.md "The same bound at entry"). Someone else's queue
 * inflates q^ and with it a margin of half of q^:
 *  - at entry, cubic's standing queue made q^ 12-19 ms and drains that left
 *    5.8-7 ms of it passed, so a qfair flow beside cubic never turned
 *    competitive (issue 14, docs/results.md "A competitive exit that does not
 *    loosen with the flow's own backlog", three flows; and the 24 % run of
 *    its "Three runs of today's law against cubic");
 *  - at exit, q^ holds the flow's own competitive backlog (alpha up to
 *    x^ 100 ms), and cubic's remaining queue, shrunk by that very backlog,
 *    passed for an empty one ("Why the long qfair flow holds a quarter
 *    against cubic").
 * One bound for both, with or without competitive mode.
 */
RF_INLINE __u32 qf_verdict_queue_us(__u32 q_us, __u32 q_default_us)
{
	return q_default_us < q_us ? q_default_us : q_us;
}

/*
 * A drain's verdict, emptied or not: its lowest RTT within the margin of
 * qf_drain_emptied_queue (q_before_us from qf_verdict_queue_us) and, for a
 * competitive flow, the lowest RTT of the drain's last 8-16 ms (end_min_us:
 * the last closed 8 ms bucket's minimum and the current one's) within 1 ms of
 * R^ as well: the queue stayed empty to the end. For 200 ms and a round the
 * flow sends at half its rate; qfair flows are window-limited at their x^
 * and drain at the same instants, so a queue they alone hold stays empty to
 * the end of the drain (the flow's own residual backlog is gone by then, so
 * no q^/2 slack, only the 1 ms floor). A loss-based flow (cubic) grows into
 * the capacity the drain leaves free: the queue can touch zero while cubic
 * is squeezed (a competitive qfair flow halving its rate just after cubic's
 * back-off, measured at 1 BDP) but is refilled by the drain's end, so cubic
 * still there does not read as cubic gone. Outside competitive mode the
 * verdict is the minimum's alone, as before.
 */
RF_INLINE bool qf_drain_emptied(__u32 drain_min_us, __u32 end_min_us, __u32 rtprop_us,
				__u32 q_before_us, __u32 spread_us, bool competitive)
{
	__u32 floor_us = rtprop_us + spread_us;

	if (!qf_drain_emptied_queue(drain_min_us, floor_us, q_before_us))
		return false;
	return !competitive || qf_drain_emptied_queue(end_min_us, floor_us, 0);
}

/*
 * The drain's spread: how far the mean of the bucket minima of its settled
 * part (sum over cnt buckets) lies above its lowest RTT m. On a clean path
 * with the queue empty that is a few tens of microseconds; on a path with
 * delay noise of its own (jitter, ACK batching, a busy host) it is that
 * noise as the flow's bucket estimator reads it. The verdict above allows
 * it on top of R^: the lowest RTT a drain can be expected to meet on this
 * path. 0 without a settled bucket.
 */
RF_INLINE __u32 qf_drain_spread_us(__u64 sum_us, __u32 cnt, __u32 m_us)
{
	__u64 mean;

	if (!cnt)
		return 0;
	mean = sum_us / cnt;
	return mean > m_us ? (__u32)(mean - m_us < 0xffffffffULL ? mean - m_us : 0xffffffffULL) : 0;
}

/*
 * The flow's noise nu after an emptied drain: how far its bucket estimator
 * (Eq. 4's bucket minima, averaged over the drain's settled part: sum over
 * cnt buckets) reads above R^ with the queue empty. Eq. 5 takes it out of
 * the queue estimate (q^ = D - R^ - nu): the bias a path's own delay
 * variation gives the estimator is there whether the queue is empty or
 * not, so it is no backlog. The same reading of srtt (cnt = 1) is nu_p.
 * Unchanged without a settled bucket.
 */
RF_INLINE __u32 qf_noise_next_us(__u32 nu_us, __u64 sum_us, __u32 cnt, __u32 rtprop_us)
{
	__u64 mean, sample;

	if (!cnt)
		return nu_us;
	mean = sum_us / cnt;
	sample = mean > rtprop_us ? mean - rtprop_us : 0;
	if (sample > 0xffffffffULL)
		sample = 0xffffffffULL;
	return (__u32)sample;
}

/*
 * A drain whose lowest RTT sat more than 2 ms above its floor (R^ plus the
 * drain's own spread, which the caller passes as floor_us): the flow's own
 * backlog is gone (half rate, half window, 200 ms), so what is left is a
 * longer path or someone else's standing queue. Decided on the drain
 * minimum alone, not on the verdict above: that verdict's margin grows with
 * the flow's own queue estimate, which a wrong R^ inflates. The margin does
 * not scale with R^: a margin of R^/8 hid a path 5-10 % longer (10-20 ms at
 * 200 ms), whose flow then failed every drain and stayed competitive. The
 * streak and the floor held between drains (qf_long_streak_next) tell a
 * longer path from a loss-based flow's queue.
 */
#define QF_LONGER_PATH_MIN_US 2000
RF_INLINE bool qf_drain_saw_longer_path(__u32 drain_min_us, __u32 floor_us)
{
	return (__u64)drain_min_us > (__u64)floor_us + QF_LONGER_PATH_MIN_US;
}

/*
 * Whether a flow is in competitive mode after an event, from whether it was
 * (was), whether the operator allows the mode (allowed: qfair.competitive = 1;
 * 2 is "never") and the event: a drain's end with its verdict, or a
 * per-round update or a drain without an RTT sample (QF_VERDICT_NONE).
 *
 *   not allowed                 -> no, whatever it was: "never" holds for a
 *                                  flow already competitive too, from the
 *                                  first event after the setting changed
 *   drain emptied the queue     -> no (the successful drain's exit)
 *   drain found a queue         -> yes (someone else's: cubic, a longer path)
 *   no verdict                  -> as it was
 */
#define QF_VERDICT_NONE 0
#define QF_VERDICT_EMPTIED 1
#define QF_VERDICT_FOUND_QUEUE 2
RF_INLINE bool qf_competitive_next(bool was, bool allowed, __u32 verdict)
{
	if (!allowed || verdict == QF_VERDICT_EMPTIED)
		return false;
	if (verdict == QF_VERDICT_FOUND_QUEUE)
		return true;
	return was;
}

/*
 * Competitive mode's exit hysteresis (qfair.exit_drains = n, default 1).
 * A queue that only qfair flows hold is empty at every drain (they drain
 * together). Against cubic, a competitive qfair flow holds half the link
 * and more and cubic's window has shrunk with it: in qfair's drain cubic's
 * remaining queue can be below the verdict's margin max(1 ms, q^/2), q^
 * inflated by qfair's own backlog, so the drain passes although cubic
 * still holds a queue (measured at 1 BDP: the verdicts alternate found /
 * emptied drain after drain; issue 14, docs/results.md "Why the long qfair
 * flow holds a quarter against cubic"). With n > 1 the exit needs n drains
 * in a row that emptied the queue while the flow was competitive.
 *
 * qf_emptied_streak: that count after a drain's verdict. A drain that found
 * a queue resets it, and so does not being competitive (the count is only
 * of drains inside one competitive spell); a drain without a verdict
 * (QF_VERDICT_NONE) leaves it; it saturates at 255 (a __u8 in the state).
 */
RF_INLINE __u32 qf_emptied_streak(__u32 streak, bool competitive, __u32 verdict)
{
	if (!competitive || verdict == QF_VERDICT_FOUND_QUEUE)
		return 0;
	if (verdict != QF_VERDICT_EMPTIED)
		return streak;
	return streak < 255 ? streak + 1 : 255;
}

/*
 * The verdict competitive mode acts on (qf_competitive_next): an emptied
 * drain that is not yet the n-th in a row (streak < need) counts as no
 * verdict, so a competitive flow stays competitive; every other verdict
 * passes unchanged. need <= 1 is today's rule: the first emptied drain
 * ends the mode.
 */
RF_INLINE __u32 qf_exit_verdict(__u32 verdict, __u32 streak, __u32 need)
{
	if (verdict == QF_VERDICT_EMPTIED && streak < need)
		return QF_VERDICT_NONE;
	return verdict;
}

/* Two drain minima agree when each is within 10% of the other's scale. */
RF_INLINE bool qf_minima_agree(__u32 a_us, __u32 b_us)
{
	__u64 hi = a_us > b_us ? a_us : b_us, lo = a_us > b_us ? b_us : a_us;

	return (hi - lo) * 10 <= lo;
}

/*
 * Eq. 10, the three-drain streak: a drain whose minimum m lies above R^
 * (qf_drain_saw_longer_path) continues the streak when m agrees with the
 * streak's lowest minimum (qf_minima_agree) and the floor held since the
 * previous drain: the lower of the two, f, is within 10 % of the lowest
 * closed bucket's minimum in between (low; f <= 1.1 low, qf_minima_agree
 * again), else it starts a new streak of 1. Three in a row raise R^ to the
 * streak's lowest minimum.
 *
 * A longer path is a floor nothing gets under. A loss-based flow's standing
 * queue is not: its sawtooth shows lower RTTs between qfair's drains, and
 * bbr's ProbeRTT empties it, so minima that agree at three drains in a row
 * (drains at a similar phase of cubic's sawtooth) no longer raise R^ over
 * it when the queue dipped in between. Measured before the rule (session
 * 18, against cubic at 1 and 5 BDP): all three raises over cubic's queue
 * (20 -> 26 / 94 / 85 ms) had an RTT more than 10 % below the streak's
 * minima between two of its drains in 100 ms snapshots. A drain landing at
 * the same phase three times in a row with no dip between still passes;
 * the rule narrows Eq. 10, it does not prove a path. And it also stops a
 * real path change from being followed while someone else's queue dips
 * between the drains (cubic's, bbr's): R^ then stays at the old path and
 * the flow competitive until that flow leaves.
 */
#define QF_PATH_CHANGE_DRAINS 3

/* The streak's state: in struct qfair_flow, touched per closed bucket and
 * per drain, never per ACK. */
struct qf_long_track {
	__u32 streak; /* drains in a row above R^, minima agreeing, floor held */
	__u32 min_us; /* the lowest of those drains' minima */
	__u32 low_us; /* the lowest closed bucket since the last drain that had
		       * an RTT sample (a drain without one judges nothing and
		       * keeps it); ~0U none */
};

/* The streak's step at one drain: the new streak length; *long_min_us is
 * updated (restarted at m). low_us ~0U: no closed bucket in between. */
RF_INLINE __u32 qf_long_streak_next(__u32 streak, __u32 *long_min_us, __u32 drain_min_us,
				    __u32 low_us)
{
	__u32 floor_us;

	if (streak && qf_minima_agree(drain_min_us, *long_min_us)) {
		floor_us = drain_min_us < *long_min_us ? drain_min_us : *long_min_us;
		if (low_us >= floor_us || qf_minima_agree(floor_us, low_us)) {
			*long_min_us = floor_us;
			return streak + 1;
		}
	}
	*long_min_us = drain_min_us;
	return 1;
}

/* A closed bucket's minimum, outside drains or in them (a drain's own
 * buckets are at least its m, so they never break the floor). */
RF_INLINE void qf_long_bucket(struct qf_long_track *t, __u32 bkt_us)
{
	if (bkt_us < t->low_us)
		t->low_us = bkt_us;
}

/* No streak and a fresh window: at a flow's start and when P2 raised R^. */
RF_INLINE void qf_long_reset(struct qf_long_track *t)
{
	t->streak = 0;
	t->min_us = 0;
	t->low_us = ~0U;
}

/* Eq. 10 at the end of a drain with minimum m, R^ rtprop_us: the R^ to
 * raise to, 0 none. Opens the next window of the floor. */
RF_INLINE __u32 qf_long_drain(struct qf_long_track *t, __u32 drain_min_us, __u32 rtprop_us)
{
	__u32 raise_us = 0;

	if (!qf_drain_saw_longer_path(drain_min_us, rtprop_us)) {
		t->streak = 0;
	} else {
		t->streak = qf_long_streak_next(t->streak, &t->min_us, drain_min_us, t->low_us);
		if (t->streak >= QF_PATH_CHANGE_DRAINS) {
			raise_us = t->min_us;
			t->streak = 0;
		}
	}
	t->low_us = ~0U;
	return raise_us;
}

/*
 * P2, Eq. 10 at the first drain: a path change shows as one step and then a
 * floor that stays. At a drain's end with minimum m, R^ may jump to m at
 * once when
 *   1. m > R^ + spread + 2 ms                       (qf_drain_saw_longer_path)
 *   2. since the previous drain the RTT floor rose in one step (a closed 8 ms
 *      bucket's minimum minus the previous closed bucket's) of
 *      step >= max(16 ms, 3/4 (m - R^)): the step explains most of the
 *      excess the drain still sees;
 *   3. the excess held: the lowest bucket minimum since that step (low, the
 *      drain's own m included) is within 10% of m (qf_minima_agree).
 * step_us = 0 means no qualifying step was seen. A loss-based flow's queue
 * grows at most about 1 ms per ms with its sawtooth and its bursts, which
 * can step 20 ms and more, fall back: guard 3 carries the weight, guard 2's
 * 16 ms floor keeps jitter, ACK batching and bbr's ProbeRTT exit (10-15 ms
 * steps) out. Everything else is Eq. 10's three-drain streak.
 */
/* Above per-flow jitter, ACK batching and bbr's 10-15 ms ProbeRTT-exit steps
 * (a 10 ms floor fired on vs-bbr b20-1bdp's 10.9 ms step in the replay).
 * Bursts step 22 ms and more and pass it; guard 3 rejects them. */
#define QF_PATH_STEP_MIN_US 16000
/* The step is at least 3/4 of the excess m - R^: the replayed path changes
 * had step/excess 0.96-1.02, so 3/4 leaves room for a step split over two
 * buckets while rejecting steps that explain little of the excess. */
#define QF_PATH_STEP_NUM 3
#define QF_PATH_STEP_DEN 4
RF_INLINE bool qf_path_step_held(__u32 drain_min_us, __u32 rtprop_us, __u32 step_us,
				 __u32 low_since_step_us)
{
	__u64 excess;

	if (step_us < QF_PATH_STEP_MIN_US ||
	    !qf_drain_saw_longer_path(drain_min_us, rtprop_us))
		return false;
	excess = (__u64)drain_min_us - rtprop_us;
	if ((__u64)step_us * QF_PATH_STEP_DEN < excess * QF_PATH_STEP_NUM)
		return false;
	return qf_minima_agree(drain_min_us, low_since_step_us < drain_min_us ? low_since_step_us
									: drain_min_us);
}

/*
 * P2's witness for guards 2 and 3, per closed bucket (8.192 ms, 1 << 13 us,
 * QF_BUCKET_SHIFT): the largest rise of the RTT floor in one step since the
 * last drain (a closed bucket's minimum bkt minus the previous closed
 * bucket's, prev) and the lowest bucket minimum since it. A rise of 16 ms or
 * more is a step only when it can be trusted:
 *   - the two buckets are at most the step plus 4 buckets apart (gap_us, the
 *     time between their starts): a path change of dR stops the ACKs for
 *     about dR, while across a longer silence (idle, an RTO's backoff) the
 *     floor was simply not seen moving, and a queue that grew gradually
 *     meanwhile would read as one step;
 *   - trusted: the caller's word that the bucket is not the flow's own
 *     refill (entering cruise, leaving Loss) nor a restart after idle.
 * An untrusted rise voids the witness (low 0: guard 3 cannot pass) until the
 * next forget at a drain's end, rather than being skipped: skipping would drop
 * buckets from the low and could let a later, smaller step fire where
 * counting them did not, so every rule here only narrows when P2 fires.
 * A drain and its refill (the two round starts after it) are not passed here
 * at all. No loop; fixed point in us.
 */
struct qf_path_track {
	__u32 step_us; /* largest trusted rise >= 16 ms, 0 = none */
	__u32 low_us;  /* lowest bucket minimum since that step; ~0U none, 0 void */
};

#define QF_BUCKET_SHIFT 13 /* qfair's RTT buckets: tcp_mstamp >> 13, 8.192 ms */
#define QF_PATH_GAP_SLACK_US (4U << QF_BUCKET_SHIFT) /* 4 buckets, 32.8 ms */

RF_INLINE void qf_path_step_forget(struct qf_path_track *t)
{
	t->step_us = 0;
	t->low_us = ~0U;
}

RF_INLINE void qf_path_step_track(struct qf_path_track *t, __u32 prev_us, __u32 bkt_us,
				  __u32 gap_us, bool trusted)
{
	__u32 rise;

	if (!t->low_us)
		return; /* void until the next drain */
	rise = prev_us && bkt_us >= prev_us + QF_PATH_STEP_MIN_US ? bkt_us - prev_us : 0;
	if (rise && (!trusted || (__u64)gap_us > (__u64)rise + QF_PATH_GAP_SLACK_US)) {
		t->step_us = 0;
		t->low_us = 0;
		return;
	}
	if (rise && rise >= t->step_us) {
		t->step_us = rise;
		t->low_us = bkt_us;
		return;
	}
	t->low_us = t->low_us < bkt_us ? t->low_us : bkt_us;
}

#endif /* RTTFAIR_QFAIR_MATH_H */
