/* SPDX-License-Identifier: GPL-2.0 */
/*
 * BBR version 3: the model and the state machine (bbr3.bpf.c is the glue).
 * Sources: google/bbr v3 net/ipv4/tcp_bbr.c; draft-ietf-ccwg-bbr.
 *
 * The model: as v1, bandwidth and propagation delay, plus an operating
 * range bounded by what loss and ECN said:
 *
 *   bw_hi        max delivery rate of the last 1-2 ProbeBW cycles
 *   bw_lo, inflight_lo   short-term lower bounds, cut only outside probes,
 *                forgotten when the next probe starts (REFILL)
 *   inflight_hi  long-term upper bound: where a probe's loss rate passed 2 %
 *                (or its CE rate 50 %); raised again by probes that stay below
 *   bw           = min(bw_hi, bw_lo)
 *   too_high    <=> lost / tx_in_flight > 2 % or delivered_ce / delivered > 50 %  (Eq. 1)
 *   bw_lo'       = max(bw_latest,       (1 - beta) bw_lo)      per loss round (Eq. 2)
 *   inflight_lo' = max(inflight_latest, (1 - beta) inflight_lo)
 *   inflight_lo' = (1 - ecn_alpha / 3) inflight_lo             per ECE round  (Eq. 3)
 *   ecn_alpha'   = (1 - 1/16) ecn_alpha + 1/16 ce_ratio        per round      (Eq. 4)
 *   inflight_hi  = inflight_prev + x, (lost_prev + x) / (inflight_prev + x) = 2 %  (Eq. 5)
 *
 * The law, per ACK:
 *
 *   pacing_rate = pacing_gain x bw x (1 - 1 %)
 *   cwnd        = min(cwnd + acked, cwnd_gain x BDP + extra_acked + budget),
 *                 then <= inflight_hi (less 15 % in CRUISE and ProbeRTT)
 *                 and <= inflight_lo; no packet conservation in recovery
 *
 *   mode/phase  pacing  cwnd   leaves when
 *   Startup     2.77    2      bw grew < 25 % in 3 rounds, or a recovery
 *                              round with >= 6 losses and Eq. 1, or 2 rounds
 *                              of CE > 50 % (these set inflight_hi = BDP)
 *   Drain       0.35    2      inflight <= BDP
 *   DOWN        0.91    2      inflight <= min(BDP, inflight_hi - 15 %)
 *   CRUISE      1       2      2-3 s (random) or min(63, target inflight)
 *                              rounds passed, or ECN marks cleared
 *   REFILL      1       2      one round, bounds reset
 *   UP          1.25    2.25   Eq. 1 holds, or bw plateaus; inflight_hi
 *                              grows 1, 2, 4, ... packets per round
 *   ProbeRTT    1       0.5 BDP   200 ms and a round; every 5 s without a
 *                              lower RTT (min_rtt keeps a 10 s window)
 *
 *   constant                    value    meaning
 *   BBR3_BETA                   0.3      loss cut of the lower bounds
 *   BBR3_LOSS_THRESH            2 %      Eq. 1's loss rate
 *   BBR3_ECN_THRESH, _FACTOR    50 %, 1/3  Eq. 1's CE rate; Eq. 3's factor
 *   BBR3_ECN_ALPHA_GAIN         1/16     Eq. 4
 *   BBR3_ECN_MAX_RTT_US         5 ms     ECN used only below this min_rtt
 *   BBR3_INFLIGHT_HEADROOM      15 %     CRUISE's room for other flows
 *   BBR3_FULL_LOSS_CNT, _ECN_CNT  6, 2   Startup's loss and ECN exits
 *   BBR3_PROBE_RTT_WIN_MS       5 s      ProbeRTT interval
 *   BBR3_BW_PROBE_BASE/RAND_US  2 s, 1 s wall clock between probes
 *   BBR3_BW_PROBE_MAX_ROUNDS    63       Reno-coexistence bound
 *   extra_acked, fixed point:   bbr_common.h (shared with v1)
 *   No tunables (v3's module parameters are its constants).
 *
 * A stock kernel lacks rs->tx_in_flight, the per-skb tx.lost, the
 * skb_marked_lost hook, the TLP-recovery event and the tso_segs hook:
 * bbr3.bpf.c approximates each (docs/algorithms.md, "bbr3") and, where a
 * kernel has v3's rate_sample fields, reads them through CO-RE.
 * Fixed point: bw packets/us << 24, gains << 8 (BBR3_UNIT = 1.0).
 */
#ifndef RTTFAIR_BBR3_CORE_H
#define RTTFAIR_BBR3_CORE_H

#include "tcp_ca.h"
#include "rttfair_abi.h"
#include "bbr3_math.h"

/* bbr_common.h's fixed point, under v3's names. */
#define BBR3_BW_SCALE BW_SCALE
#define BBR3_BW_UNIT BW_UNIT
#define BBR3_SCALE BBR_SCALE
#define BBR3_UNIT BBR_UNIT

/* Gains. */
#define BBR3_STARTUP_PACING_GAIN (BBR3_UNIT * 277 / 100 + 1) /* 4 ln 2 */
#define BBR3_STARTUP_CWND_GAIN (BBR3_UNIT * 2)
#define BBR3_DRAIN_GAIN (BBR3_UNIT * 1000 / 2885)
#define BBR3_CWND_GAIN (BBR3_UNIT * 2)
#define BBR3_UP_GAIN (BBR3_UNIT * 5 / 4)
#define BBR3_DOWN_GAIN (BBR3_UNIT * 91 / 100)
#define BBR3_UP_CWND_EXTRA (BBR3_UNIT / 4)          /* cwnd gain 2.25 in UP */
#define BBR3_PROBE_RTT_CWND_GAIN (BBR3_UNIT / 2)   /* 0.5 BDP */
/* Loss and ECN. */
#define BBR3_BETA (BBR3_UNIT * 30 / 100)            /* loss cut of the lower bounds */
#define BBR3_LOSS_THRESH (BBR3_UNIT * 2 / 100)      /* the 2 % loss-rate bound */
#define BBR3_ECN_THRESH (BBR3_UNIT / 2)
#define BBR3_ECN_FACTOR (BBR3_UNIT / 3)
#define BBR3_ECN_ALPHA_GAIN (BBR3_UNIT / 16)
#define BBR3_ECN_REPROBE_GAIN (BBR3_UNIT / 2)
#define BBR3_ECN_MAX_RTT_US 5000
#define BBR3_INFLIGHT_HEADROOM (BBR3_UNIT * 15 / 100)
#define BBR3_FULL_LOSS_CNT 6
#define BBR3_FULL_ECN_CNT 2
/* Startup plateau. */
#define BBR3_FULL_BW_THRESH (BBR3_UNIT * 5 / 4)
#define BBR3_FULL_BW_CNT 3
/* Timing. */
#define BBR3_MIN_RTT_WIN_MS 10000
#define BBR3_PROBE_RTT_WIN_MS 5000
#define BBR3_PROBE_RTT_MODE_MS 200
#define BBR3_BW_PROBE_MAX_ROUNDS 63
#define BBR3_BW_PROBE_RAND_ROUNDS 2
#define BBR3_BW_PROBE_BASE_US (2 * USEC_PER_SEC)
#define BBR3_BW_PROBE_RAND_US (1 * USEC_PER_SEC)
/* cwnd. */
#define BBR3_CWND_MIN_TARGET 4
#define BBR3_PACING_MARGIN_PCT 1
#define BBR3_TSO_RTT_SHIFT 9
#define BBR3_MIN_TSO_SEGS 2
#define BBR3_INFINITE_SSTHRESH 0x7fffffff
#define BBR3_UNSET 0xffffffffU
/* bw_probe_up_cnt / _acks are 24 bits (v3: u32): 2^24 - 1 packets, far
 * above any cwnd the kernel reaches, and what icsk_ca_priv has room for. */
#define BBR3_UP_CNT_MAX 0xffffffU
#define BBR3_UP_CNT_NONE BBR3_UP_CNT_MAX

/* tcp_ack()'s flag bit for an ACK with ECE (include/net/tcp.h). */
#define BBR3_FLAG_ECE 0x40
/* tcp_sock.ecn_flags: ECN negotiated. */
#define BBR3_TCP_ECN_OK 1

/* ProbeBW phases, in v3's order (the export's cycle_idx). */
enum bbr3_cycle {
	BBR3_UP = 0,
	BBR3_DOWN = 1,
	BBR3_CRUISE = 2,
	BBR3_REFILL = 3,
};

/* What the ACK stream says about our probing. */
enum bbr3_ack_phase {
	BBR3_ACKS_INIT = 0,
	BBR3_ACKS_REFILLING = 1,
	BBR3_ACKS_PROBE_STARTING = 2,
	BBR3_ACKS_PROBE_FEEDBACK = 3,
	BBR3_ACKS_PROBE_STOPPING = 4,
};

/*
 * Per-ACK state: icsk_ca_priv (104 bytes). Everything the per-ACK path reads
 * or writes is here; what is touched once per round, on loss, or on ECE is
 * in struct bbr3_cold (sk_storage).
 */
struct bbr3 {
	__u32 min_rtt_us;             /* 10 s windowed min RTT */
	__u32 min_rtt_stamp_ms;
	__u32 probe_rtt_min_us;       /* 5 s windowed min RTT: schedules ProbeRTT */
	__u32 probe_rtt_min_stamp_ms;
	__u32 probe_rtt_done_ms;      /* end of the ProbeRTT dwell, 0 = not set */
	__u32 next_rtt_delivered;     /* tp->delivered that ends this round */
	__u32 cycle_mstamp;           /* ProbeBW phase start, tcp_mstamp low 32 bits */
	__u32 probe_wait_us;          /* wall clock from DOWN to the next probe */
	__u32 prior_cwnd;
	__u32 full_bw;                /* bw at the last 25 % growth */
	__u32 bw_hi[2];               /* max bw of this and the previous cycle */
	__u32 bw_lo;                  /* short-term lower bound, BBR3_UNSET = none */
	__u32 bw_latest;              /* max bw of the last round */
	__u32 inflight_hi;            /* long-term upper bound, packets */
	__u32 inflight_lo;            /* short-term lower bound, packets */
	__u32 inflight_latest;        /* max delivered per sample, last round */
	__u32 loss_round_delivered;   /* tp->delivered that ends the loss round */
	__u32 ack_epoch_mstamp;       /* extra_acked epoch start, delivered_mstamp low 32 */
	__u32 snap_next_delivered;    /* tp->delivered at which the ring takes a snapshot */
	__u32 ack_epoch_acked : 20,
	      extra_acked_win_rtts : 5,
	      extra_acked_win_idx : 1,
	      ack_phase : 3,
	      full_bw_cnt : 2,
	      full_bw_now : 1;
	__u16 extra_acked[2];
	__u32 bw_probe_up_cnt : 24,   /* packets ACKed per inflight_hi + 1 */
	      rounds_since_probe : 8;
	__u32 bw_probe_up_acks : 24,  /* packets ACKed since inflight_hi's last + 1 */
	      loss_events_in_round : 8;
	__u8 mode;                    /* enum rttfair_mode */
	__u8 cycle_idx;               /* enum bbr3_cycle */
	__u8 init_cwnd;
	__u8 prev_ca_state : 3,
	     ca_state : 3,
	     cwr_pending : 1,         /* set_state(CWR) seen, ACK not yet processed */
	     initialized : 1;
	__u8 round_start : 1,
	     full_bw_reached : 1,
	     idle_restart : 1,
	     probe_rtt_round_done : 1,
	     has_seen_rtt : 1,
	     prev_probe_too_high : 1,
	     stopped_risky_probe : 1,
	     bw_probe_samples : 1;
	__u8 loss_round_start : 1,
	     loss_in_round : 1,
	     ecn_in_round : 1,
	     loss_in_cycle : 1,
	     ecn_in_cycle : 1,
	     ecn_eligible : 1,
	     cold_ok : 1;             /* sk_storage exists (init could create it) */
	__u8 bw_probe_up_rounds : 5,
	     startup_ecn_rounds : 2;
};

_Static_assert(sizeof(struct bbr3) <= 104, "struct bbr3 must fit icsk_ca_priv");

/* The parts v1 and v3 share (fixed point, rates, ACK aggregation). */
#define BBR_STATE struct bbr3
#define BBR_STATE_BW bbr3_bw
#include "bbr_common.h"

/* The ring of send-time snapshots (struct bbr3_snap) is in bbr3_math.h. */

/* Per-flow state touched once per round, on loss or ECE (sk_storage). */
struct bbr3_cold {
	__u64 flow_id;               /* key in RTTFAIR_FLOWS_MAP */
	__u32 last_export_us;
	__u32 rounds;
	__u32 probe_rtt_entries;
	__u32 too_high_events;       /* probes the loss/ECN bound (Eq. 1) ended */
	__u32 lo_cuts;               /* loss rounds that cut bw_lo/inflight_lo (Eq. 2) */
	__u32 alpha_last_delivered;  /* tp->delivered at the ecn_alpha update */
	__u32 alpha_last_delivered_ce;
	__u32 undo_bw_lo;
	__u32 undo_inflight_lo;
	__u32 undo_inflight_hi;
	__u32 round_lost0;           /* tp->lost at this round's start */
	__u32 round_delivered0;      /* tp->delivered at this round's start */
	__u32 round_loss_ppm;        /* lost / (lost + delivered), last round */
	__u32 ring_head;             /* next slot to write */
	__u16 ecn_alpha;             /* Eq. 4, BBR3_UNIT = 1.0 */
	__u8 exported;               /* 1: has an entry; 2: insert failed (counted) */
	__u8 _pad;
	struct bbr3_snap ring[BBR3_RING];
};

/* The tx state of the ACKed packet: exact (v3 kernel) or from the ring. */
struct bbr3_tx {
	__u32 in_flight;
	__u32 lost;
	bool valid;
};

/* What one ACK carries between the steps of bbr3_main. */
struct bbr3_ctx {
	__u32 sample_bw;
	struct bbr3_tx tx;
};

static __always_inline struct bbr3 *bbr3_of(const struct sock *sk)
{
	return (struct bbr3 *)inet_csk_ca(sk);
}

/* ---- Estimates ------------------------------------------------------------- */

static __always_inline __u32 bbr3_max_bw(const struct bbr3 *b)
{
	return rf_max(b->bw_hi[0], b->bw_hi[1]);
}

/* The model's bw: the long-term max, capped by the short-term lower bound. */
static __always_inline __u32 bbr3_bw(const struct bbr3 *b)
{
	return rf_min(bbr3_max_bw(b), b->bw_lo);
}

/* Bytes per second for bw (packets/us << 24) x gain, less margin_pct. */
static __always_inline __u64 bbr3_rate_bytes_per_sec(const struct sock *sk, __u64 bw,
						     __u32 gain, __u32 margin_pct)
{
	return rf_max(bbr_rate_bytes_per_sec(sk, bw, gain, margin_pct), 1ULL);
}

static __always_inline __u64 bbr3_bw_to_pacing_rate(const struct sock *sk, __u32 bw,
						    __u32 gain)
{
	__u64 rate = bbr3_rate_bytes_per_sec(sk, bw, gain, BBR3_PACING_MARGIN_PCT);

	return rf_min(rate, (__u64)sk->sk_max_pacing_rate);
}

/* BDP x gain, packets, rounded up; the initial cwnd before any RTT sample. */
static __always_inline __u32 bbr3_bdp(const struct bbr3 *b, __u32 bw, __u32 gain)
{
	if (b->min_rtt_us == BBR3_UNSET)
		return b->init_cwnd;
	return bbr_bdp_packets(bw, b->min_rtt_us, gain);
}

/*
 * Segments per TSO/GSO burst, v3's goal: pacing_rate >> pacing_shift plus a
 * 64 KB allowance halved per 512 us of min_rtt, at least 2 segments.
 */
static __always_inline __u32 bbr3_tso_segs_goal(const struct sock *sk, const struct bbr3 *b)
{
	__u32 mss = tcp_sk(sk)->mss_cache ?: 1;
	__u64 bytes = sk->sk_pacing_rate >> sk->sk_pacing_shift;
	__u32 r = b->min_rtt_us >> BBR3_TSO_RTT_SHIFT;

	if (r < 32)
		bytes += GSO_LEGACY_MAX_SIZE >> r;
	bytes = rf_min(bytes, (__u64)(GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER_EST));
	return rf_max((__u32)(bytes / mss), (__u32)BBR3_MIN_TSO_SEGS);
}

/* cwnd floor for end-host batching: 3 bursts, 4 packets, +2 in UP. */
static __always_inline __u32 bbr3_quantization_budget(const struct sock *sk,
						      const struct bbr3 *b, __u32 cwnd)
{
	cwnd = rf_max(cwnd, 3 * bbr3_tso_segs_goal(sk, b));
	cwnd = rf_max(cwnd, (__u32)BBR3_CWND_MIN_TARGET);
	if (b->mode == RTTFAIR_MODE_PROBE_BW && b->cycle_idx == BBR3_UP)
		cwnd += 2;
	return cwnd;
}

static __always_inline __u32 bbr3_inflight(const struct sock *sk, const struct bbr3 *b,
					   __u32 bw, __u32 gain)
{
	return bbr3_quantization_budget(sk, b, bbr3_bdp(b, bw, gain));
}

/* The inflight we want: the BDP, unless congestion already cut cwnd. */
static __always_inline __u32 bbr3_target_inflight(const struct sock *sk, const struct bbr3 *b)
{
	return rf_min(bbr3_inflight(sk, b, bbr3_bw(b), BBR3_UNIT), tcp_sk(sk)->snd_cwnd);
}

/* Packets in the network when the next skb departs (pacing is EDT). */
static __always_inline __u32 bbr3_packets_in_net_at_edt(const struct sock *sk,
							const struct bbr3 *b,
							__u32 inflight_now)
{
	__u64 delivered = bbr_delivered_by_edt(sk, b);
	__u32 at_edt = inflight_now;

	if (b->cycle_idx == BBR3_UP && b->mode == RTTFAIR_MODE_PROBE_BW)
		at_edt += bbr3_tso_segs_goal(sk, b);
	if (delivered >= at_edt)
		return 0;
	return at_edt - (__u32)delivered;
}

/* inflight_hi less 15 % headroom for other flows (never below 4). */
static __always_inline __u32 bbr3_inflight_with_headroom(const struct bbr3 *b)
{
	__u32 headroom;

	if (b->inflight_hi == BBR3_UNSET)
		return BBR3_UNSET;
	headroom = (__u32)(((__u64)b->inflight_hi * BBR3_INFLIGHT_HEADROOM) >> BBR3_SCALE);
	headroom = rf_max(headroom, 1U);
	if (b->inflight_hi <= headroom + BBR3_CWND_MIN_TARGET)
		return BBR3_CWND_MIN_TARGET;
	return b->inflight_hi - headroom;
}

static __always_inline bool bbr3_is_probing_bandwidth(const struct bbr3 *b)
{
	return b->mode == RTTFAIR_MODE_STARTUP ||
	       (b->mode == RTTFAIR_MODE_PROBE_BW &&
		(b->cycle_idx == BBR3_REFILL || b->cycle_idx == BBR3_UP));
}

static __always_inline bool bbr3_has_elapsed_in_phase(const struct sock *sk,
						      const struct bbr3 *b, __u32 interval_us)
{
	return (__s32)((__u32)tcp_sk(sk)->tcp_mstamp - (b->cycle_mstamp + interval_us)) > 0;
}

/* ---- The inflight-too-high test (Eq. 1, Eq. 5) ------------------------------ */

static __always_inline bool bbr3_is_inflight_too_high(const struct bbr3 *b,
						      const struct bbr3_tx *tx,
						      __s32 delivered, __s32 delivered_ce)
{
	if (tx->valid && tx->lost > 0 && tx->in_flight &&
	    tx->lost > (__u32)(((__u64)tx->in_flight * BBR3_LOSS_THRESH) >> BBR3_SCALE))
		return true;
	if (delivered_ce > 0 && delivered > 0 && b->ecn_eligible &&
	    delivered_ce > (__s32)(((__u64)delivered * BBR3_ECN_THRESH) >> BBR3_SCALE))
		return true;
	return false;
}

/*
 * Eq. 5: the inflight at which the loss rate crossed 2 %, for the packet
 * whose loss this ACK marked (pcount 1): the prefix x of it that solves
 * (lost_prev + x) / (inflight_prev + x) = loss_thresh.
 */
static __always_inline __u32 bbr3_inflight_hi_from_lost(const struct bbr3_tx *tx)
{
	__u64 budget, prefix = 0;
	__u32 inflight_prev, lost_prev;

	if (tx->in_flight < 1 || tx->lost < 1)
		return BBR3_UNSET;
	inflight_prev = tx->in_flight - 1;
	lost_prev = tx->lost - 1;
	budget = ((__u64)inflight_prev * BBR3_LOSS_THRESH + BBR3_UNIT - 1) >> BBR3_SCALE;
	if (lost_prev < budget)
		prefix = ((budget - lost_prev) << BBR3_SCALE) / (BBR3_UNIT - BBR3_LOSS_THRESH);
	return inflight_prev + (__u32)prefix;
}

/* ---- Bounds ---------------------------------------------------------------- */

static __always_inline void bbr3_reset_lower_bounds(struct bbr3 *b)
{
	b->bw_lo = BBR3_UNSET;
	b->inflight_lo = BBR3_UNSET;
}

static __always_inline void bbr3_reset_congestion_signals(struct bbr3 *b)
{
	b->loss_in_round = 0;
	b->ecn_in_round = 0;
	b->loss_in_cycle = 0;
	b->ecn_in_cycle = 0;
	b->bw_latest = 0;
	b->inflight_latest = 0;
}

static __always_inline void bbr3_reset_full_bw(struct bbr3 *b)
{
	b->full_bw = 0;
	b->full_bw_cnt = 0;
	b->full_bw_now = 0;
}

/* The first loss of a round starts a loss round (v3's bbr_note_loss). */
static __always_inline void bbr3_note_loss(struct sock *sk, struct bbr3 *b)
{
	if (!b->loss_in_round)
		b->loss_round_delivered = tcp_sk(sk)->delivered;
	b->loss_in_round = 1;
	b->loss_in_cycle = 1;
}

/* ecn_alpha (Eq. 4): the cold state's, or without it v3's initial 1. */
static __always_inline __u32 bbr3_ecn_alpha(const struct bbr3_cold *cold)
{
	return cold ? cold->ecn_alpha : BBR3_UNIT;
}

/*
 * Once per loss round, outside probes: cut the lower bounds for ECN (Eq. 3)
 * and loss (Eq. 2), not below what the last round delivered.
 */
static __always_inline void bbr3_adapt_lower_bounds(struct sock *sk, struct bbr3 *b,
						    struct bbr3_cold *cold)
{
	__u32 ecn_inflight_lo = BBR3_UNSET, cut;

	if (bbr3_is_probing_bandwidth(b))
		return;
	if (b->ecn_in_round) {
		if (b->inflight_lo == BBR3_UNSET)
			b->inflight_lo = tcp_sk(sk)->snd_cwnd;
		cut = BBR3_UNIT - ((bbr3_ecn_alpha(cold) * BBR3_ECN_FACTOR) >> BBR3_SCALE);
		ecn_inflight_lo = (__u32)(((__u64)b->inflight_lo * cut) >> BBR3_SCALE);
	}
	if (b->loss_in_round) {
		if (b->bw_lo == BBR3_UNSET)
			b->bw_lo = bbr3_max_bw(b);
		if (b->inflight_lo == BBR3_UNSET)
			b->inflight_lo = tcp_sk(sk)->snd_cwnd;
		cut = BBR3_UNIT - BBR3_BETA;
		b->bw_lo = rf_max(b->bw_latest, (__u32)(((__u64)b->bw_lo * cut) >> BBR3_SCALE));
		b->inflight_lo = rf_max(b->inflight_latest,
					(__u32)(((__u64)b->inflight_lo * cut) >> BBR3_SCALE));
		if (cold)
			cold->lo_cuts++;
	}
	b->inflight_lo = rf_min(b->inflight_lo, ecn_inflight_lo);
	b->bw_lo = rf_max(1U, b->bw_lo);
}

/* The rate and volume delivered in the latest round; the loss round. */
static __always_inline void bbr3_update_latest_delivery_signals(struct sock *sk,
								struct bbr3 *b,
								const struct rate_sample *rs,
								const struct bbr3_ctx *ctx)
{
	b->loss_round_start = 0;
	if (rs->interval_us <= 0 || !rs->acked_sacked)
		return;
	b->bw_latest = rf_max(b->bw_latest, ctx->sample_bw);
	b->inflight_latest = rf_max(b->inflight_latest, (__u32)rs->delivered);
	if (!rf_before(rs->prior_delivered, b->loss_round_delivered)) {
		b->loss_round_delivered = tcp_sk(sk)->delivered;
		b->loss_round_start = 1;
	}
}

static __always_inline void bbr3_advance_latest_delivery_signals(struct bbr3 *b,
								 const struct rate_sample *rs,
								 const struct bbr3_ctx *ctx)
{
	if (b->loss_round_start) {
		b->bw_latest = ctx->sample_bw;
		b->inflight_latest = rs->delivered > 0 ? (__u32)rs->delivered : 0;
	}
}

static __always_inline void bbr3_update_congestion_signals(struct sock *sk, struct bbr3 *b,
							   const struct rate_sample *rs,
							   const struct bbr3_ctx *ctx,
							   struct bbr3_cold *cold)
{
	if (rs->interval_us <= 0 || !rs->acked_sacked)
		return;
	if (!rs->is_app_limited || ctx->sample_bw >= bbr3_max_bw(b))
		b->bw_hi[1] = rf_max(ctx->sample_bw, b->bw_hi[1]);
	b->loss_in_round |= rs->losses > 0;
	if (!b->loss_round_start)
		return;
	bbr3_adapt_lower_bounds(sk, b, cold);
	b->loss_in_round = 0;
	b->ecn_in_round = 0;
}

/* ---- extra_acked (ACK aggregation) ------------------------------------------ */

/* v3 adds extra_acked in Startup too (extra_acked_in_startup). */
static __always_inline __u32 bbr3_ack_aggregation_cwnd(const struct bbr3 *b)
{
	return bbr_extra_acked_allowance(b);
}

/* ---- ProbeBW phases ---------------------------------------------------------- */

static __always_inline void bbr3_pick_probe_wait(struct bbr3 *b)
{
	b->rounds_since_probe = bpf_get_prandom_u32() % BBR3_BW_PROBE_RAND_ROUNDS;
	b->probe_wait_us = BBR3_BW_PROBE_BASE_US + bpf_get_prandom_u32() % BBR3_BW_PROBE_RAND_US;
}

static __always_inline void bbr3_start_refill(struct sock *sk, struct bbr3 *b,
					      __u32 probe_up_rounds)
{
	bbr3_reset_lower_bounds(b);
	b->bw_probe_up_rounds = rf_min(probe_up_rounds, 30U);
	b->bw_probe_up_acks = 0;
	b->stopped_risky_probe = 0;
	b->ack_phase = BBR3_ACKS_REFILLING;
	b->next_rtt_delivered = tcp_sk(sk)->delivered;
	b->cycle_idx = BBR3_REFILL;
}

/* Each round of UP doubles the growth of inflight_hi: cwnd / 2^n acks per +1. */
static __always_inline void bbr3_raise_inflight_hi_slope(struct sock *sk, struct bbr3 *b)
{
	__u32 growth = 1U << (b->bw_probe_up_rounds & 31);
	__u32 cnt = rf_max(tcp_sk(sk)->snd_cwnd / growth, 1U);

	b->bw_probe_up_rounds = rf_min(b->bw_probe_up_rounds + 1U, 30U);
	b->bw_probe_up_cnt = rf_min(cnt, BBR3_UP_CNT_MAX - 1);
}

static __always_inline void bbr3_start_up(struct sock *sk, struct bbr3 *b,
					  const struct bbr3_ctx *ctx)
{
	struct tcp_sock *tp = tcp_sk(sk);

	b->ack_phase = BBR3_ACKS_PROBE_STARTING;
	b->next_rtt_delivered = tp->delivered;
	b->cycle_mstamp = (__u32)tp->tcp_mstamp;
	bbr3_reset_full_bw(b);
	b->full_bw = ctx->sample_bw;
	b->cycle_idx = BBR3_UP;
	bbr3_raise_inflight_hi_slope(sk, b);
}

static __always_inline void bbr3_start_down(struct sock *sk, struct bbr3 *b)
{
	struct tcp_sock *tp = tcp_sk(sk);

	bbr3_reset_congestion_signals(b);
	b->bw_probe_up_cnt = BBR3_UP_CNT_NONE;
	bbr3_pick_probe_wait(b);
	b->cycle_mstamp = (__u32)tp->tcp_mstamp;
	b->ack_phase = BBR3_ACKS_PROBE_STOPPING;
	b->next_rtt_delivered = tp->delivered;
	b->cycle_idx = BBR3_DOWN;
}

static __always_inline void bbr3_start_cruise(struct bbr3 *b)
{
	if (b->inflight_lo != BBR3_UNSET)
		b->inflight_lo = rf_min(b->inflight_lo, b->inflight_hi);
	b->cycle_idx = BBR3_CRUISE;
}

/*
 * Eq. 1 held for a sample of our probe: bound inflight_hi (once per probe)
 * at the level where loss began -- never below (1 - beta) of the target --
 * and stop probing.
 */
static __always_inline void bbr3_handle_inflight_too_high(struct sock *sk, struct bbr3 *b,
							  const struct rate_sample *rs,
							  __u32 tx_in_flight,
							  struct bbr3_cold *cold)
{
	__u32 floor;

	b->prev_probe_too_high = 1;
	b->bw_probe_samples = 0;
	if (!rs->is_app_limited) {
		floor = (__u32)(((__u64)bbr3_target_inflight(sk, b) * (BBR3_UNIT - BBR3_BETA)) >>
				BBR3_SCALE);
		b->inflight_hi = rf_max(tx_in_flight, floor);
	}
	if (cold)
		cold->too_high_events++;
	if (b->mode == RTTFAIR_MODE_PROBE_BW && b->cycle_idx == BBR3_UP)
		bbr3_start_down(sk, b);
}

/* In UP with no sign of excess: raise inflight_hi by 1 per bw_probe_up_cnt ACKed. */
static __always_inline void bbr3_probe_inflight_hi_upward(struct sock *sk, struct bbr3 *b,
							  const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 acks, cnt, delta;

	if (!tp->is_cwnd_limited || tp->snd_cwnd < b->inflight_hi)
		return;
	cnt = b->bw_probe_up_cnt ?: 1;
	acks = (__u32)b->bw_probe_up_acks + (__u32)(rs->acked_sacked > 0 ? rs->acked_sacked : 0);
	if (acks >= cnt) {
		delta = acks / cnt;
		acks -= delta * cnt;
		b->inflight_hi += delta;
	}
	b->bw_probe_up_acks = rf_min(acks, BBR3_UP_CNT_MAX);
	if (b->round_start)
		bbr3_raise_inflight_hi_slope(sk, b);
}

/*
 * Adapt the upper bounds to what the ACKs of a probe say; true when a phase
 * transition was decided here.
 */
static __always_inline bool bbr3_adapt_upper_bounds(struct sock *sk, struct bbr3 *b,
						    const struct rate_sample *rs,
						    const struct bbr3_ctx *ctx,
						    struct bbr3_cold *cold)
{
	__u32 hi;

	if (b->ack_phase == BBR3_ACKS_PROBE_STARTING && b->round_start)
		b->ack_phase = BBR3_ACKS_PROBE_FEEDBACK;
	if (b->ack_phase == BBR3_ACKS_PROBE_STOPPING && b->round_start) {
		b->bw_probe_samples = 0;
		b->ack_phase = BBR3_ACKS_INIT;
		/* Forget the previous cycle's bw now: advance the 2-cycle window. */
		if (b->mode == RTTFAIR_MODE_PROBE_BW && !rs->is_app_limited && b->bw_hi[1]) {
			b->bw_hi[0] = b->bw_hi[1];
			b->bw_hi[1] = 0;
		}
		if (b->mode == RTTFAIR_MODE_PROBE_BW && b->stopped_risky_probe &&
		    !b->prev_probe_too_high) {
			bbr3_start_refill(sk, b, 0);
			return true;
		}
	}
	if (bbr3_is_inflight_too_high(b, &ctx->tx, rs->delivered, rs->delivered_ce)) {
		if (b->bw_probe_samples) {
			/* The ACK that marked the loss stands in for v3's
			 * skb_marked_lost hook: bound at Eq. 5's level. */
			hi = ctx->tx.in_flight;
			if (rs->losses > 0 && ctx->tx.lost > 0)
				hi = rf_min(hi, bbr3_inflight_hi_from_lost(&ctx->tx));
			bbr3_handle_inflight_too_high(sk, b, rs, hi, cold);
		}
		return false;
	}
	if (b->inflight_hi == BBR3_UNSET)
		return false;
	/* Resilience to random loss: a higher level seen safe raises the bound. */
	if (ctx->tx.valid && ctx->tx.in_flight > b->inflight_hi)
		b->inflight_hi = ctx->tx.in_flight;
	if (b->mode == RTTFAIR_MODE_PROBE_BW && b->cycle_idx == BBR3_UP)
		bbr3_probe_inflight_hi_upward(sk, b, rs);
	return false;
}

/* Reno coexistence: probe after min(63, target inflight) rounds. */
static __always_inline bool bbr3_is_reno_coexistence_probe_time(struct sock *sk,
								const struct bbr3 *b)
{
	__u32 rounds = rf_min((__u32)BBR3_BW_PROBE_MAX_ROUNDS, bbr3_target_inflight(sk, b));

	return b->rounds_since_probe >= rounds;
}

static __always_inline __u32 bbr3_ilog2(__u32 v)
{
	__u32 n = 0;

	if (v >= 1U << 16) { v >>= 16; n += 16; }
	if (v >= 1U << 8) { v >>= 8; n += 8; }
	if (v >= 1U << 4) { v >>= 4; n += 4; }
	if (v >= 1U << 2) { v >>= 2; n += 2; }
	if (v >= 1U << 1) n += 1;
	return n;
}

/* Time to leave DOWN/CRUISE for REFILL? (ECN cleared, wall clock, Reno.) */
static __always_inline bool bbr3_check_time_to_probe_bw(struct sock *sk, struct bbr3 *b)
{
	/* As v3 (bbr_check_time_to_probe_bw): ECN marks without loss have
	 * cleared, so re-probe at once, whether or not a loss has set
	 * inflight_hi; unset (~0), n comes out at 30, the cap. */
	if (b->ecn_eligible && b->ecn_in_cycle && !b->loss_in_cycle &&
	    b->ca_state == TCP_CA_Open) {
		bbr3_start_refill(sk, b,
				  bbr3_ilog2((__u32)(((__u64)b->inflight_hi *
						      BBR3_ECN_REPROBE_GAIN) >> BBR3_SCALE)));
		return true;
	}
	if (bbr3_has_elapsed_in_phase(sk, b, b->probe_wait_us) ||
	    bbr3_is_reno_coexistence_probe_time(sk, b)) {
		bbr3_start_refill(sk, b, 0);
		return true;
	}
	return false;
}

static __always_inline bool bbr3_check_time_to_cruise(const struct sock *sk,
						      const struct bbr3 *b, __u32 inflight,
						      __u32 bw)
{
	if (inflight > bbr3_inflight_with_headroom(b))
		return false;
	return inflight <= bbr3_inflight(sk, b, bw, BBR3_UNIT);
}

static __always_inline void bbr3_update_cycle_phase(struct sock *sk, struct bbr3 *b,
						    const struct rate_sample *rs,
						    const struct bbr3_ctx *ctx,
						    struct bbr3_cold *cold)
{
	struct tcp_sock *tp = tcp_sk(sk);
	bool probe_done = false;
	__u32 inflight, bw;

	if (!b->full_bw_reached)
		return;
	if (bbr3_adapt_upper_bounds(sk, b, rs, ctx, cold))
		return;
	if (b->mode != RTTFAIR_MODE_PROBE_BW)
		return;
	inflight = bbr3_packets_in_net_at_edt(sk, b, rs->prior_in_flight);
	bw = bbr3_max_bw(b);

	switch (b->cycle_idx) {
	case BBR3_CRUISE:
		bbr3_check_time_to_probe_bw(sk, b);
		break;
	case BBR3_REFILL:
		if (b->round_start) {
			b->bw_probe_samples = 1;
			bbr3_start_up(sk, b, ctx);
		}
		break;
	case BBR3_UP:
		if (b->prev_probe_too_high && inflight >= b->inflight_hi) {
			b->stopped_risky_probe = 1;
			probe_done = true;
		} else if (tp->is_cwnd_limited && tp->snd_cwnd >= b->inflight_hi) {
			bbr3_reset_full_bw(b); /* inflight_hi, not the path, limits */
			b->full_bw = ctx->sample_bw;
		} else if (b->full_bw_now) {
			probe_done = true;     /* bw plateau: the pipe is full */
		}
		if (probe_done) {
			b->prev_probe_too_high = 0;
			bbr3_start_down(sk, b);
		}
		break;
	default: /* DOWN */
		if (bbr3_check_time_to_probe_bw(sk, b))
			break;
		if (bbr3_check_time_to_cruise(sk, b, inflight, bw))
			bbr3_start_cruise(b);
		break;
	}
}

/* ---- Startup, Drain, ProbeRTT ------------------------------------------------ */

/* Startup ended by loss or ECN: inflight_hi = max(BDP, last round's volume). */
static __always_inline void bbr3_handle_queue_too_high_in_startup(struct sock *sk,
								  struct bbr3 *b)
{
	b->full_bw_reached = 1;
	b->inflight_hi = rf_max(bbr3_inflight(sk, b, bbr3_max_bw(b), BBR3_UNIT),
				b->inflight_latest);
}

static __always_inline void bbr3_check_loss_too_high_in_startup(struct sock *sk,
								struct bbr3 *b,
								const struct rate_sample *rs,
								const struct bbr3_ctx *ctx)
{
	if (b->full_bw_reached)
		return;
	if (rs->losses > 0 && b->loss_events_in_round < 0xf)
		b->loss_events_in_round++;
	if (b->loss_round_start && b->ca_state == TCP_CA_Recovery &&
	    b->loss_events_in_round >= BBR3_FULL_LOSS_CNT &&
	    bbr3_is_inflight_too_high(b, &ctx->tx, rs->delivered, rs->delivered_ce)) {
		bbr3_handle_queue_too_high_in_startup(sk, b);
		return;
	}
	if (b->loss_round_start)
		b->loss_events_in_round = 0;
}

static __always_inline void bbr3_check_full_bw_reached(struct bbr3 *b,
						       const struct rate_sample *rs,
						       const struct bbr3_ctx *ctx)
{
	__u32 thresh;

	if (b->full_bw_now || rs->is_app_limited)
		return;
	thresh = (__u32)(((__u64)b->full_bw * BBR3_FULL_BW_THRESH) >> BBR3_SCALE);
	if (ctx->sample_bw >= thresh) {
		bbr3_reset_full_bw(b);
		b->full_bw = ctx->sample_bw;
		return;
	}
	if (!b->round_start)
		return;
	if (b->full_bw_cnt < 3)
		b->full_bw_cnt++;
	b->full_bw_now = b->full_bw_cnt >= BBR3_FULL_BW_CNT;
	b->full_bw_reached |= b->full_bw_now;
}

static __always_inline void bbr3_check_drain(struct sock *sk, struct bbr3 *b)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (b->mode == RTTFAIR_MODE_STARTUP && b->full_bw_reached) {
		b->mode = RTTFAIR_MODE_DRAIN;
		tp->snd_ssthresh = bbr3_inflight(sk, b, bbr3_max_bw(b), BBR3_UNIT);
		bbr3_reset_congestion_signals(b);
	}
	if (b->mode == RTTFAIR_MODE_DRAIN &&
	    bbr3_packets_in_net_at_edt(sk, b, tcp_packets_in_flight(tp)) <=
		    bbr3_inflight(sk, b, bbr3_max_bw(b), BBR3_UNIT)) {
		b->mode = RTTFAIR_MODE_PROBE_BW;
		bbr3_start_down(sk, b);
	}
}

static __always_inline void bbr3_exit_probe_rtt(struct sock *sk, struct bbr3 *b)
{
	bbr3_reset_lower_bounds(b);
	if (b->full_bw_reached) {
		b->mode = RTTFAIR_MODE_PROBE_BW;
		bbr3_start_down(sk, b);
		bbr3_start_cruise(b);
	} else {
		b->mode = RTTFAIR_MODE_STARTUP;
	}
}

static __always_inline void bbr3_check_probe_rtt_done(struct sock *sk, struct bbr3 *b)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 now = tcp_now_ms(tp);

	if (!(b->probe_rtt_done_ms && rf_after(now, b->probe_rtt_done_ms)))
		return;
	b->probe_rtt_min_stamp_ms = now; /* the next ProbeRTT is 5 s away */
	tp->snd_cwnd = rf_max(tp->snd_cwnd, b->prior_cwnd);
	bbr3_exit_probe_rtt(sk, b);
}

/* ProbeRTT's cwnd: half the BDP, at least 4 packets. */
static __always_inline __u32 bbr3_probe_rtt_cwnd(const struct bbr3 *b)
{
	return rf_max((__u32)BBR3_CWND_MIN_TARGET,
		      bbr3_bdp(b, bbr3_bw(b), BBR3_PROBE_RTT_CWND_GAIN));
}

/* Returns true when ProbeRTT was entered on this ACK. */
static __always_inline bool bbr3_update_min_rtt(struct sock *sk, struct bbr3 *b,
						const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 now = tcp_now_ms(tp), inflight;
	bool probe_rtt_expired, min_rtt_expired, entered = false;

	probe_rtt_expired = rf_after(now, b->probe_rtt_min_stamp_ms + BBR3_PROBE_RTT_WIN_MS);
	if (rs->rtt_us >= 0 &&
	    ((__u64)rs->rtt_us < b->probe_rtt_min_us ||
	     (probe_rtt_expired && !rs->is_ack_delayed))) {
		b->probe_rtt_min_us = (__u32)rs->rtt_us;
		b->probe_rtt_min_stamp_ms = now;
	}
	min_rtt_expired = rf_after(now, b->min_rtt_stamp_ms + BBR3_MIN_RTT_WIN_MS);
	if (b->probe_rtt_min_us <= b->min_rtt_us || min_rtt_expired) {
		b->min_rtt_us = b->probe_rtt_min_us;
		b->min_rtt_stamp_ms = b->probe_rtt_min_stamp_ms;
	}

	if (probe_rtt_expired && !b->idle_restart && b->mode != RTTFAIR_MODE_PROBE_RTT) {
		b->mode = RTTFAIR_MODE_PROBE_RTT;
		bbr_save_cwnd(sk, b);
		b->probe_rtt_done_ms = 0;
		b->ack_phase = BBR3_ACKS_PROBE_STOPPING;
		b->next_rtt_delivered = tp->delivered;
		entered = true;
	}
	if (b->mode == RTTFAIR_MODE_PROBE_RTT) {
		inflight = tcp_packets_in_flight(tp);
		tp->app_limited = (tp->delivered + inflight) ?: 1;
		if (!b->probe_rtt_done_ms && inflight <= bbr3_probe_rtt_cwnd(b)) {
			b->probe_rtt_done_ms = (now + BBR3_PROBE_RTT_MODE_MS) ?: 1;
			b->probe_rtt_round_done = 0;
			b->next_rtt_delivered = tp->delivered;
		} else if (b->probe_rtt_done_ms) {
			if (b->round_start)
				b->probe_rtt_round_done = 1;
			if (b->probe_rtt_round_done)
				bbr3_check_probe_rtt_done(sk, b);
		}
	}
	if (rs->delivered > 0)
		b->idle_restart = 0;
	return entered;
}

/* ---- ECN ---------------------------------------------------------------------- */

/*
 * At a round start, before the model (as v3's bbr_main): eligibility, Eq. 4
 * (ecn_alpha) and Startup's ECN exit. Returns the round's CE ratio (x256) or
 * -1. Eligible: ECN negotiated and min_rtt <= 5 ms (v3 also asks for the
 * route's ecn_low feature; see docs/algorithms.md). Without the cold state
 * (its sk_storage could not be allocated) eligibility is still set, so ECE
 * still feeds Eq. 1 and Eq. 3, but alpha stays at its initial 1
 * (bbr3_ecn_alpha) and there is no per-round CE ratio, so no Startup ECN
 * exit.
 */
static __always_inline int bbr3_update_ecn_alpha(struct sock *sk, struct bbr3 *b,
						 struct bbr3_cold *cold)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 delivered, delivered_ce, alpha;
	__u64 ce_ratio;

	if (!b->ecn_eligible && (tp->ecn_flags & BBR3_TCP_ECN_OK) &&
	    b->min_rtt_us <= BBR3_ECN_MAX_RTT_US)
		b->ecn_eligible = 1;
	if (!b->ecn_eligible || !cold)
		return -1;
	delivered = tp->delivered - cold->alpha_last_delivered;
	delivered_ce = tp->delivered_ce - cold->alpha_last_delivered_ce;
	if (!delivered || (__s32)delivered < 0 || (__s32)delivered_ce < 0)
		return -1;
	ce_ratio = ((__u64)delivered_ce << BBR3_SCALE) / delivered;
	alpha = ((BBR3_UNIT - BBR3_ECN_ALPHA_GAIN) * (__u32)cold->ecn_alpha) >> BBR3_SCALE;
	alpha += (__u32)((BBR3_ECN_ALPHA_GAIN * ce_ratio) >> BBR3_SCALE);
	cold->ecn_alpha = rf_min(alpha, BBR3_UNIT);
	cold->alpha_last_delivered = tp->delivered;
	cold->alpha_last_delivered_ce = tp->delivered_ce;

	if (!b->full_bw_reached) {
		if (ce_ratio >= BBR3_ECN_THRESH) {
			if (b->startup_ecn_rounds < 3)
				b->startup_ecn_rounds++;
		} else {
			b->startup_ecn_rounds = 0;
		}
		if (b->startup_ecn_rounds >= BBR3_FULL_ECN_CNT)
			bbr3_handle_queue_too_high_in_startup(sk, b);
	}
	return (int)ce_ratio;
}

/* ---- TLP recovery ------------------------------------------------------------- */

/*
 * A TLP retransmission repaired one lost segment. The stock kernel has no
 * CA_EVENT_TLP_RECOVERY: the CCA sees CWR entered on an ACK without ECE and
 * calls this from cong_control (docs/algorithms.md, "bbr3").
 */
static __always_inline void bbr3_loss_probe_recovery(struct sock *sk, struct bbr3 *b,
						     const struct rate_sample *rs,
						     struct bbr3_cold *cold)
{
	struct bbr3_tx tx = { .lost = 1, .in_flight = b->inflight_latest + 1, .valid = true };

	bbr3_note_loss(sk, b);
	if (!b->bw_probe_samples)
		return;
	if (bbr3_is_inflight_too_high(b, &tx, 0, 0))
		bbr3_handle_inflight_too_high(sk, b, rs, tx.in_flight, cold);
}

/* ---- Controls ----------------------------------------------------------------- */

static __always_inline __u32 bbr3_pacing_gain(const struct bbr3 *b)
{
	switch (b->mode) {
	case RTTFAIR_MODE_STARTUP:
		return BBR3_STARTUP_PACING_GAIN;
	case RTTFAIR_MODE_DRAIN:
		return BBR3_DRAIN_GAIN;
	case RTTFAIR_MODE_PROBE_BW:
		if (b->cycle_idx == BBR3_UP)
			return BBR3_UP_GAIN;
		if (b->cycle_idx == BBR3_DOWN)
			return BBR3_DOWN_GAIN;
		return BBR3_UNIT;
	default:
		return BBR3_UNIT;
	}
}

static __always_inline __u32 bbr3_cwnd_gain(const struct bbr3 *b)
{
	switch (b->mode) {
	case RTTFAIR_MODE_STARTUP:
	case RTTFAIR_MODE_DRAIN:
		return BBR3_STARTUP_CWND_GAIN;
	case RTTFAIR_MODE_PROBE_BW:
		return BBR3_CWND_GAIN + (b->cycle_idx == BBR3_UP ? BBR3_UP_CWND_EXTRA : 0);
	default:
		return BBR3_UNIT;
	}
}

static __always_inline void bbr3_init_pacing_rate_from_rtt(struct sock *sk, struct bbr3 *b)
{
	__u64 bw = bbr_init_bw(sk, b);

	sk->sk_pacing_rate = bbr3_bw_to_pacing_rate(sk, (__u32)rf_min(bw, 0xffffffffULL),
						    BBR3_STARTUP_PACING_GAIN);
}

static __always_inline void bbr3_set_pacing_rate(struct sock *sk, struct bbr3 *b, __u32 bw,
						 __u32 gain)
{
	__u64 rate = bbr3_bw_to_pacing_rate(sk, bw, gain);

	if (!b->has_seen_rtt && tcp_sk(sk)->srtt_us)
		bbr3_init_pacing_rate_from_rtt(sk, b);
	if (b->full_bw_reached || rate > sk->sk_pacing_rate)
		sk->sk_pacing_rate = rate;
}

/* Grow toward target (slow start while the pipe is not full), snap down to it. */
static __always_inline void bbr3_set_cwnd(struct sock *sk, struct bbr3 *b,
					  const struct rate_sample *rs, __u32 bw, __u32 gain)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 cwnd = tp->snd_cwnd, target, acked = rs->acked_sacked > 0 ? rs->acked_sacked : 0;

	if (acked) {
		target = bbr3_bdp(b, bw, gain) + bbr3_ack_aggregation_cwnd(b);
		target = bbr3_quantization_budget(sk, b, target);
		if (b->full_bw_reached) {
			cwnd += acked;
			if (cwnd >= target)
				cwnd = target;
		} else if (cwnd < target || cwnd < 2U * b->init_cwnd) {
			cwnd += acked;
		}
		cwnd = rf_max(cwnd, (__u32)BBR3_CWND_MIN_TARGET);
	}
	tp->snd_cwnd = rf_min(cwnd, tp->snd_cwnd_clamp);
	if (b->mode == RTTFAIR_MODE_PROBE_RTT)
		tp->snd_cwnd = rf_min(tp->snd_cwnd, bbr3_probe_rtt_cwnd(b));
}

/* The bounds: inflight_hi while probing, less headroom in CRUISE/ProbeRTT; inflight_lo always. */
static __always_inline void bbr3_bound_cwnd_for_inflight_model(struct sock *sk,
							       struct bbr3 *b)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 cap = BBR3_UNSET;

	if (b->mode == RTTFAIR_MODE_PROBE_BW && b->cycle_idx != BBR3_CRUISE)
		cap = b->inflight_hi;
	else if (b->mode == RTTFAIR_MODE_PROBE_RTT ||
		 (b->mode == RTTFAIR_MODE_PROBE_BW && b->cycle_idx == BBR3_CRUISE))
		cap = bbr3_inflight_with_headroom(b);
	cap = rf_min(cap, b->inflight_lo);
	cap = rf_max(cap, (__u32)BBR3_CWND_MIN_TARGET);
	tp->snd_cwnd = rf_min(cap, tp->snd_cwnd);
}

/* ---- Snapshot ring (tx_in_flight, tx.lost) --------------------------------------- */

/* Record what a packet sent after this ACK will be sent with. */
static __always_inline void bbr3_ring_push(struct sock *sk, struct bbr3 *b,
					   struct bbr3_cold *cold,
					   const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 i = cold->ring_head & BBR3_RING_MASK;

	cold->ring[i].delivered = tp->delivered;
	cold->ring[i].lost = tp->lost;
	cold->ring[i].inflight = rf_max((__u32)rs->prior_in_flight, tcp_packets_in_flight(tp));
	cold->ring_head = i + 1;
	/* 8 snapshots per cwnd of deliveries: the ring spans two windows. */
	b->snap_next_delivered = tp->delivered + rf_max(tp->snd_cwnd / 8, 1U);
}

/*
 * bbr3_ring_tx (bbr3_math.h) over this flow's ring: one bounded pass. A
 * global function, so the verifier checks its loop once and the ACK path
 * sees one scalar (a static one would be re-walked after each of the
 * loop's exits).
 */
__noinline __s64 bbr3_ring_tx_of(struct bbr3_cold *cold, __u32 p, __u32 now_delivered,
				 __u32 now_lost)
{
	if (!cold)
		return BBR3_TX_NONE;
	return bbr3_ring_tx(cold->ring, p, now_delivered, now_lost);
}

/*
 * The ACKed packet's tx state: inflight from the snapshot before its send
 * (approximation 1); tp->lost at its send interpolated between that
 * snapshot and the next (approximation 2), so that losses marked before it
 * left are not counted as losses of its flight.
 */
static __always_inline void bbr3_ring_lookup(struct sock *sk, struct bbr3_cold *cold,
					     const struct rate_sample *rs, struct bbr3_tx *tx)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__s64 found = bbr3_ring_tx_of(cold, rs->prior_delivered, tp->delivered, tp->lost);

	if (found < 0)
		return;
	tx->in_flight = bbr3_tx_in_flight(found);
	tx->lost = bbr3_tx_lost(found);
	tx->valid = true;
}

#endif /* RTTFAIR_BBR3_CORE_H */
