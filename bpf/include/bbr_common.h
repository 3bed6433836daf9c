/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What BBR v1 (bbr_core.h) and BBR v3 (bbr3_core.h) compute alike, written
 * once: the fixed point, the rate and BDP arithmetic, the bandwidth
 * delivered before the next departure, the cwnd saved for recovery, the
 * first pacing rate's bandwidth, and ACK aggregation (extra_acked).
 *
 *   rate [bytes/s]     = bw x mss x gain x (100 - margin) % x 10^6 >> 24
 *   BDP x gain [pkts]  = ceil(bw x RTprop x gain >> 24)
 *   delivered_by_edt   = bw x (EDT - now) >> 24
 *   init_bw            = cwnd / max(srtt, 1 us)       (1 ms before any RTT)
 *   extra_acked        = acked_in_epoch - bw x (now - epoch_start) >> 24,
 *                        its max over two buckets of 5 rounds each
 *   allowance          = min(extra_acked_gain x extra_acked, bw x 100 ms)
 *
 * Units: bw is packets per microsecond << BW_SCALE (24 bits of fraction);
 * gains are << BBR_SCALE (8 bits, BBR_UNIT = 1.0).
 *
 *   constant                   value     meaning
 *   BBR_EXTRA_ACKED_GAIN       1.0       allowance = gain x extra_acked
 *   BBR_EXTRA_ACKED_WIN_RTTS   5         rounds per extra_acked bucket
 *   BBR_ACK_EPOCH_ACKED_RESET  2^20      restart an epoch this many packets long
 *   BBR_EXTRA_ACKED_MAX_US     100 ms    allowance <= bw x this
 *
 * Not here, because the two versions differ: the gains and the state
 * machine, the TSO budget, the bandwidth filter, ProbeRTT.
 *
 * The including core defines, before including this header:
 *   BBR_STATE      its per-flow struct in icsk_ca_priv, with the fields used
 *                  below under these names (ack_epoch_mstamp,
 *                  ack_epoch_acked, extra_acked[2], extra_acked_win_rtts,
 *                  extra_acked_win_idx, round_start, full_bw_reached,
 *                  prev_ca_state, mode, prior_cwnd, has_seen_rtt);
 *   BBR_STATE_BW   the name of its function that returns the bandwidth its
 *                  model runs on (v1: bbr_bw, v3: bbr3_bw), which it may
 *                  define after the include.
 */
#ifndef RTTFAIR_BBR_COMMON_H
#define RTTFAIR_BBR_COMMON_H

#include "tcp_ca.h"
#include "rttfair_abi.h"

#if !defined(BBR_STATE) || !defined(BBR_STATE_BW)
#error "define BBR_STATE and BBR_STATE_BW before including bbr_common.h"
#endif

#define BW_SCALE 24
#define BW_UNIT (1ULL << BW_SCALE)
#define BBR_SCALE 8
#define BBR_UNIT (1U << BBR_SCALE)

#define BBR_EXTRA_ACKED_GAIN BBR_UNIT
#define BBR_EXTRA_ACKED_WIN_RTTS 5
#define BBR_ACK_EPOCH_ACKED_RESET (1U << 20)
#define BBR_EXTRA_ACKED_MAX_US (100 * 1000)

static __always_inline __u32 BBR_STATE_BW(const BBR_STATE *b);

/* ---- Rates and volumes ------------------------------------------------------ */

/* bytes/s for a rate in packets/us << BW_SCALE, times gain, less margin_pct. */
static __always_inline __u64 bbr_rate_bytes_per_sec(const struct sock *sk, __u64 bw,
						    __u32 gain, __u32 margin_pct)
{
	__u64 rate = bw * tcp_sk(sk)->mss_cache;

	/* native's order of operations: exact, and no overflow below ~2.9 Tbit/s */
	rate = (rate * gain) >> BBR_SCALE;
	rate *= USEC_PER_SEC / 100 * (100 - margin_pct);
	return rate >> BW_SCALE;
}

/* bytes/s of a bandwidth as the export reports it: no gain, no margin. */
static __always_inline __u64 bbr_bw_bytes_per_sec(const struct sock *sk, __u32 bw)
{
	return ((__u64)bw * tcp_sk(sk)->mss_cache * USEC_PER_SEC) >> BW_SCALE;
}

/* BDP x gain in packets, rounded up: bw x RTprop x gain. */
static __always_inline __u32 bbr_bdp_packets(__u64 bw, __u32 min_rtt_us, __u32 gain)
{
	__u64 w = bw * min_rtt_us;

	return (__u32)((((w * gain) >> BBR_SCALE) + BW_UNIT - 1) / BW_UNIT);
}

/*
 * Packets the bottleneck delivers, at the model's bandwidth, between now
 * and the earliest departure time (EDT) of the next paced packet.
 */
static __always_inline __u64 bbr_delivered_by_edt(const struct sock *sk, const BBR_STATE *b)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	__u64 now_ns = tp->tcp_clock_cache;
	__u64 edt_ns = rf_max(tp->tcp_wstamp_ns, now_ns);
	__u64 interval_us = (edt_ns - now_ns) / NSEC_PER_USEC;

	return ((__u64)BBR_STATE_BW(b) * interval_us) >> BW_SCALE;
}

/*
 * The bandwidth the first pacing rate assumes: cwnd over the smoothed RTT
 * (1 ms before there is one); notes that an RTT has been seen.
 */
static __always_inline __u64 bbr_init_bw(struct sock *sk, BBR_STATE *b)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 rtt_us;

	if (tp->srtt_us) {
		rtt_us = rf_max(tp->srtt_us >> 3, 1U);
		b->has_seen_rtt = 1;
	} else {
		rtt_us = USEC_PER_MSEC;
	}
	return (__u64)tp->snd_cwnd * BW_UNIT / rtt_us;
}

/* The cwnd to restore after recovery or ProbeRTT: the larger seen before. */
static __always_inline void bbr_save_cwnd(struct sock *sk, BBR_STATE *b)
{
	__u32 cwnd = tcp_sk(sk)->snd_cwnd;

	if (b->prev_ca_state < TCP_CA_Recovery && b->mode != RTTFAIR_MODE_PROBE_RTT)
		b->prior_cwnd = cwnd;
	else
		b->prior_cwnd = rf_max(b->prior_cwnd, cwnd);
}

/* ---- ACK aggregation (extra_acked) ----------------------------------------- */

/*
 * The current extra_acked bucket. Branches, not an index: the verifier
 * refuses a variable offset into the socket (icsk_ca_priv is part of it).
 */
static __always_inline __u32 bbr_extra_acked_bucket(const BBR_STATE *b)
{
	return b->extra_acked_win_idx ? b->extra_acked[1] : b->extra_acked[0];
}

static __always_inline void bbr_set_extra_acked_bucket(BBR_STATE *b, __u16 v)
{
	if (b->extra_acked_win_idx)
		b->extra_acked[1] = v;
	else
		b->extra_acked[0] = v;
}

/* Max extra_acked of the last 5-10 round trips (two 5-round buckets). */
static __always_inline __u32 bbr_extra_acked(const BBR_STATE *b)
{
	return rf_max(b->extra_acked[0], b->extra_acked[1]);
}

/*
 * extra_acked = acked in this epoch - bw x epoch length, its max kept per
 * bucket. An epoch restarts when the ACKs are no faster than bw (or after
 * 2^20 packets), so extra_acked measures a burst above the model's rate.
 * Saturated to the 16-bit bucket (native wraps). Before the pipe is full a
 * bucket lasts startup_win_rtts rounds (v1: 5, v3: 1). clamp_epoch: an
 * epoch start after the delivery stamp counts as 0 us (v1, as
 * tcp_stamp_us_delta); otherwise the u32 difference is taken (v3). The two
 * agree in effect: only an idle restart sets such a start, with nothing
 * acked, and the next ACK restarts the epoch either way.
 */
static __always_inline void bbr_update_ack_aggregation(struct sock *sk, BBR_STATE *b,
						       const struct rate_sample *rs,
						       __u32 startup_win_rtts, bool clamp_epoch)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	__u32 now_us = (__u32)tp->delivered_mstamp, epoch_us, expected, extra, acked, win;

	if (rs->acked_sacked <= 0 || rs->delivered < 0 || rs->interval_us <= 0)
		return;
	if (b->round_start) {
		b->extra_acked_win_rtts = rf_min(0x1FU, b->extra_acked_win_rtts + 1U);
		win = b->full_bw_reached ? BBR_EXTRA_ACKED_WIN_RTTS : startup_win_rtts;
		if (b->extra_acked_win_rtts >= win) {
			b->extra_acked_win_rtts = 0;
			b->extra_acked_win_idx = !b->extra_acked_win_idx;
			bbr_set_extra_acked_bucket(b, 0);
		}
	}
	epoch_us = clamp_epoch ? rf_stamp_us_delta(now_us, b->ack_epoch_mstamp)
			       : now_us - b->ack_epoch_mstamp;
	expected = (__u32)(((__u64)BBR_STATE_BW(b) * epoch_us) >> BW_SCALE);
	acked = b->ack_epoch_acked;
	if (acked <= expected || acked + rs->acked_sacked >= BBR_ACK_EPOCH_ACKED_RESET) {
		acked = 0;
		b->ack_epoch_mstamp = now_us;
		expected = 0;
	}
	acked = rf_min(acked + (__u32)rs->acked_sacked, 0xFFFFFU);
	b->ack_epoch_acked = acked;
	extra = rf_min(rf_min(acked - expected, tp->snd_cwnd), 0xFFFFU);
	if (extra > bbr_extra_acked_bucket(b))
		bbr_set_extra_acked_bucket(b, (__u16)extra);
}

/* The cwnd allowance for ACK aggregation: gain x extra_acked, at most what
 * bw delivers in 100 ms. */
static __always_inline __u32 bbr_extra_acked_allowance(const BBR_STATE *b)
{
	__u32 cap = (__u32)(((__u64)BBR_STATE_BW(b) * BBR_EXTRA_ACKED_MAX_US) >> BW_SCALE);
	__u32 allowance = (BBR_EXTRA_ACKED_GAIN * bbr_extra_acked(b)) >> BBR_SCALE;

	return rf_min(allowance, cap);
}

#endif /* RTTFAIR_BBR_COMMON_H */
