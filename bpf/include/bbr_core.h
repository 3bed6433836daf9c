/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The shared BBR (v1) core of the rttfair congestion controls: BBR as Linux
 * net/ipv4/tcp_bbr.c runs it (ACM Queue 2016; draft-cardwell-iccrg-bbr),
 * as a struct_ops machine that bbr1 uses as is and FaiRTT, Ad-BBR and qfair
 * change through hooks.
 *
 * The model: the path is a pipe with a bottleneck bandwidth and a round-trip
 * propagation time, estimated from every ACK's delivery-rate sample.
 *
 *   BtlBw  = max(delivered / interval) over the last 10 packet-timed rounds
 *            (an app-limited sample only when it raises the max)
 *   RTprop = min(RTT) over the last 10 s
 *   BDP    = BtlBw x RTprop
 *
 * The law, per ACK (bw = BtlBw, or lt_bw while policed):
 *
 *   pacing_rate = pacing_gain x bw x (1 - 1 %), never lowered before the
 *                 pipe is full
 *   target      = cwnd_gain x BDP + extra_acked + 3 TSO bursts (+2 in 1.25)
 *   cwnd        = min(cwnd + acked, target)            once the pipe is full
 *               = cwnd + acked                         before
 *
 *   mode       pacing_gain           cwnd_gain  leaves when
 *   Startup    2/ln2 = 2.885         2.885      BtlBw grew < 25 % in 3 rounds
 *   Drain      ln2/2 = 0.347         2.885      in_net_at_edt <= inflight(1)
 *   ProbeBW    1.25, 0.75, 1 x 6     2          (phases of one RTprop each on
 *                                               the delivery clock, random
 *                                               start, never 0.75)
 *   ProbeRTT   1                     1          cwnd 4 for 200 ms and a round,
 *                                               entered when RTprop is 10 s old
 *
 *   inflight(g)   = g x BDP + TSO budget
 *   in_net_at_edt = inflight + [TSO burst if gain > 1] - bw x (EDT - now)
 *   The 1.25 phase ends after an RTprop once in_net_at_edt >= inflight(1.25)
 *   or on loss; the 0.75 phase after an RTprop or once in_net_at_edt <=
 *   inflight(1).
 *   Fast recovery: cwnd = inflight + acked in its first round (packet
 *   conservation); leaving recovery or Loss restores the cwnd before it.
 *   extra_acked: ACK aggregation, bbr_common.h.
 *   lt_bw (policer): two intervals of 4-16 rounds, each from a loss to a
 *   loss with lost/delivered >= 50/256, whose rates agree within 1/8 or
 *   4 kbit/s make bw = their mean and ProbeBW's gain 1, for 48 rounds.
 *
 *   constant                value          meaning
 *   BBR_HIGH_GAIN           2.885          Startup's gains
 *   BBR_DRAIN_GAIN          0.347          Drain's pacing gain
 *   BBR_CWND_GAIN           2              ProbeBW's cwnd gain
 *   BBR_CYCLE_LEN, _RAND    8, 7           ProbeBW phases, random start range
 *   BBR_BW_RTTS             10 rounds      BtlBw max filter window
 *   BBR_MIN_RTT_WIN_MS      10 s           RTprop expiry
 *   BBR_PROBE_RTT_MODE_MS   200 ms         ProbeRTT dwell
 *   BBR_CWND_MIN_TARGET     4 packets      cwnd floor, ProbeRTT's cwnd
 *   BBR_FULL_BW_THRESH, _CNT 1.25, 3       Startup's plateau test
 *   BBR_PACING_MARGIN_PCT   1 %            pacing below bw
 *   BBR_MIN_TSO_RATE        1.2 Mbit/s     below it, 1 segment per TSO burst
 *   BBR_LT_INTVL_MIN_RTTS   4 rounds       long-term interval, 4..16 rounds
 *   BBR_LT_LOSS_THRESH      50/256         lossy interval
 *   BBR_LT_BW_RATIO, _DIFF  1/8, 4 kbit/s  two intervals agree
 *   BBR_LT_BW_MAX_RTTS      48 rounds      policed mode's length
 *   No tunables: the core is native bbr's; the variants have theirs.
 *
 * Fixed point: bw in packets/us << 24, gains << 8 (BBR_UNIT = 1.0).
 *
 * Variants: each CCA's .bpf.c defines RTTFAIR_CCA and the cca_* hooks
 * declared below, then includes this header. Per-flow state: struct rf_bbr
 * in icsk_ca_priv (88 bytes of core, 16 for the variant's per-ACK state);
 * the start of a long-term interval in sk_storage (rf_bbr_lt). Differences
 * from native bbr: docs/algorithms.md, "The BBR core (bbr1)".
 */
#ifndef RTTFAIR_BBR_CORE_H
#define RTTFAIR_BBR_CORE_H

#include "tcp_ca.h"
#include "rttfair_maps.h"
#include "rttfair_cca_maps.h"
#include "rf_math.h"

#ifndef RTTFAIR_CCA
#error "define RTTFAIR_CCA (enum rttfair_cca_id) before including bbr_core.h"
#endif

/* Gains of the state machine. */
#define BBR_HIGH_GAIN (BBR_UNIT * 2885 / 1000 + 1) /* 2/ln(2) */
#define BBR_DRAIN_GAIN (BBR_UNIT * 1000 / 2885)    /* ln(2)/2 */
#define BBR_CWND_GAIN (BBR_UNIT * 2)
#define BBR_CYCLE_LEN 8
#define BBR_CYCLE_RAND 7 /* random start phase in [0, 7): never the 0.75 one */
/* Windows. */
#define BBR_BW_RTTS (BBR_CYCLE_LEN + 2)     /* max filter: 10 round trips */
#define BBR_MIN_RTT_WIN_MS 10000             /* RTprop expires after 10 s */
#define BBR_PROBE_RTT_MODE_MS 200
#define BBR_CWND_MIN_TARGET 4
/* Startup exit: bandwidth grew by < 25% in BBR_FULL_BW_CNT rounds. */
#define BBR_FULL_BW_THRESH (BBR_UNIT * 5 / 4)
#define BBR_FULL_BW_CNT 3
#define BBR_PACING_MARGIN_PCT 1
#define BBR_MIN_TSO_RATE 1200000 /* bit/s below which one segment per TSO */
#define TCP_INFINITE_SSTHRESH 0x7fffffff
/* Long-term (policer) bandwidth (tcp_bbr.c: bbr_lt_*). */
#define BBR_LT_INTVL_MIN_RTTS 4                /* an interval: 4..16 rounds */
#define BBR_LT_LOSS_THRESH 50                  /* lossy: lost/delivered >= 50/256 */
#define BBR_LT_BW_RATIO (BBR_UNIT / 8)         /* consistent: within 1/8 ... */
#define BBR_LT_BW_DIFF (4000 / 8)              /* ... or within 4 kbit/s (bytes/s) */
#define BBR_LT_BW_MAX_RTTS 48                  /* use lt_bw this many rounds */

/*
 * Per-flow BBR state: must fit icsk_ca_priv (13 x u64). The core uses 88
 * bytes; the last 16 (cca_hot) belong to the variant, for the few values it
 * needs on every ACK, so that no per-ACK map lookup is needed for them.
 *
 * Packed to hold all of native bbr's per-ACK state next to the project's own
 * (flow id, export bookkeeping): the max filter's round stamps are the low
 * 16 bits of rtt_cnt (a stamp aliases only after 65536 rounds without a
 * fresh sample, and then merely keeps a max up to one window longer); the
 * ProbeBW phase start and the ProbeRTT deadline share a word, since each is
 * read only in its own mode and set on entering it; flags are bitfields.
 */
struct rf_bbr {
	__u64 flow_id;              /* key in RTTFAIR_FLOWS_MAP */
	__u32 bw_v[3];              /* windowed max of delivery rate: best, 2nd, 3rd */
	__u16 bw_t[3];              /* round (low 16 bits of rtt_cnt) of each bw_v */
	__u16 probe_rtt_entries;    /* exported; wraps after 65535 */
	__u32 rtt_cnt;              /* packet-timed round trips */
	__u32 next_rtt_delivered;   /* tp->delivered that ends this round */
	__u32 min_rtt_us;           /* RTprop estimate */
	__u32 min_rtt_stamp_ms;     /* when min_rtt_us was last refreshed */
	union {
		__u32 cycle_mstamp;      /* ProbeBW: phase start, delivered_mstamp (low 32 bits) */
		__u32 probe_rtt_done_ms; /* ProbeRTT: end of the dwell, 0 = not set */
	};
	__u32 prior_cwnd;           /* cwnd before recovery or ProbeRTT */
	__u32 full_bw;              /* bandwidth at the last 25% growth */
	__u32 lt_bw;                /* long-term (policed) bandwidth, as bw_v */
	__u32 ack_epoch_mstamp;     /* start of the ACK epoch, us (low 32 bits) */
	__u16 extra_acked[2];       /* max extra_acked of this and the last bucket */
	__u32 ack_epoch_acked : 20,      /* packets (s)acked in the epoch */
	      extra_acked_win_rtts : 5,  /* age of the current bucket, rounds */
	      extra_acked_win_idx : 1,   /* the current bucket */
	      mode : 3,                  /* enum rttfair_mode */
	      prev_ca_state : 3;         /* TCP_CA_* at the previous ACK */
	__u32 last_export_us;       /* low 32 bits of tcp_mstamp at last export */
	__u32 last_rtt_us;          /* RTT of the latest valid rate sample */
	__u16 pacing_gain;
	__u16 cwnd_gain;
	__u32 ca_state : 3,              /* TCP_CA_* as last told by set_state */
	      cycle_idx : 3,
	      full_bw_cnt : 2,
	      lt_rtt_cnt : 7,            /* rounds in the long-term interval */
	      exported : 2,              /* 1: has an entry in RTTFAIR_FLOWS_MAP; 2: insert failed */
	      full_bw_reached : 1,
	      packet_conservation : 1,
	      round_start : 1,
	      idle_restart : 1,
	      probe_rtt_round_done : 1,
	      has_seen_rtt : 1,
	      lt_is_sampling : 1,        /* a long-term interval is running */
	      lt_use_bw : 1;             /* policed: lt_bw is the bandwidth */
	__u32 cca_hot[4];           /* the variant's per-ACK state (see above) */
};

_Static_assert(sizeof(struct rf_bbr) <= 104, "rf_bbr must fit icsk_ca_priv");
_Static_assert(__builtin_offsetof(struct rf_bbr, cca_hot) == 88, "core state is 88 bytes");

/* The parts v1 and v3 share (fixed point, rates, ACK aggregation). */
#define BBR_STATE struct rf_bbr
#define BBR_STATE_BW bbr_bw
#include "bbr_common.h"

/*
 * The start of a long-term sampling interval: read and written only when a
 * loss starts or ends an interval, so it lives in sk_storage, not in
 * icsk_ca_priv. Each CCA object has its own map (a socket has one CCA).
 */
struct rf_bbr_lt_start {
	__u32 delivered;            /* tp->delivered */
	__u32 lost;                 /* tp->lost */
	__u32 stamp_ms;             /* tp->delivered_mstamp in ms */
};

RTTFAIR_SK_STORAGE(rf_bbr_lt, struct rf_bbr_lt_start, bbr_lt_start_of);

/*
 * ProbeBW pacing gain of cycle phase idx: 1.25, 0.75, then six phases of 1.0.
 * (A function, not a table: a 16-byte constant array would land in
 * .rodata.cst16, which libbpf does not load.)
 */
static __always_inline __u32 bbr_pacing_gain_cycle(__u32 idx)
{
	if (idx == 0)
		return BBR_UNIT * 5 / 4;
	if (idx == 1)
		return BBR_UNIT * 3 / 4;
	return BBR_UNIT;
}

/* ---- Variant hooks: every CCA defines these. ------------------------------ */

/* A new flow starts (after the core state is initialised). */
static __always_inline void cca_init(struct sock *sk, struct rf_bbr *bbr);
/* The flow ends or switches CCA. */
static __always_inline void cca_release(struct sock *sk, struct rf_bbr *bbr);
/* Every ACK with a rate sample, before the core updates its model. */
static __always_inline void cca_on_rate_sample(struct sock *sk, struct rf_bbr *bbr,
					       const struct rate_sample *rs);
/* The BDP (segments, already times cwnd_gain) that sizes the cwnd target. */
static __always_inline __u64 cca_inflight_bdp(struct sock *sk, struct rf_bbr *bbr,
					      __u64 bdp);
/* The pacing rate (bytes/s) about to be applied. */
static __always_inline __u64 cca_pacing_rate(struct sock *sk, struct rf_bbr *bbr,
					     __u64 rate);
/* Whether to enter ProbeRTT now; min_rtt_expired is BBRv1's 10 s rule. */
static __always_inline bool cca_probe_rtt_due(struct sock *sk, struct rf_bbr *bbr,
					      bool min_rtt_expired);
/* Fill the variant's fields of the export entry. */
static __always_inline void cca_export(struct sock *sk, struct rf_bbr *bbr,
				       struct rttfair_flow *f);

/*
 * Optional hooks: a variant that defines RTTFAIR_HOOK_CWND_BUDGET,
 * RTTFAIR_HOOK_PROBE_RTT_CWND, RTTFAIR_HOOK_LOSS_RECOVERY_CWND,
 * RTTFAIR_HOOK_CWND_RESTORED or RTTFAIR_HOOK_MIN_RTT_EXPIRED before
 * including this header supplies its own;
 * otherwise the core's BBR v1 behaviour (defined further down) applies.
 *
 *   cca_cwnd_budget(sk, bbr, target)  the cwnd target plus its TSO budget
 *                                     (BBR v1: bbr_quantization_budget)
 *   cca_ack_aggregation_cwnd(sk, bbr) what the cwnd target gets for ACK
 *                                     aggregation (RTTFAIR_HOOK_ACK_AGGREGATION_CWND;
 *                                     BBR v1: bbr_ack_aggregation_cwnd)
 *   cca_probe_rtt_cwnd(sk, bbr)       the cwnd ProbeRTT drains to, and the
 *                                     inflight at which its dwell starts
 *                                     (BBR v1: 4 packets)
 *   cca_loss_recovery_cwnd(sk, bbr)   whether losses and fast recovery shape
 *                                     cwnd (packet conservation, restore);
 *                                     the bookkeeping runs either way, and
 *                                     when false the cwnd saved before Loss
 *                                     or Recovery is still restored on
 *                                     leaving it, up to the target
 *                                     (rf_cwnd_restored) (BBR v1: true)
 *   cca_cwnd_restored(sk, bbr, left, cwnd, restored)
 *                                     that restore is due, on the ACK
 *                                     leaving state left (TCP_CA_Loss or
 *                                     TCP_CA_Recovery): the cwnd to start
 *                                     from, restored (rf_cwnd_restored's)
 *                                     or cwnd as it is (BBR v1: restored)
 *   cca_min_rtt_expired(sk, bbr, win)  whether RTprop is stale, so that the
 *                                     next sample replaces it; win is the
 *                                     10 s window's verdict (BBR v1: win)
 */
static __always_inline bool cca_loss_recovery_cwnd(struct sock *sk, struct rf_bbr *bbr);
static __always_inline __u32 cca_cwnd_restored(struct sock *sk, struct rf_bbr *bbr, __u8 left,
					       __u32 cwnd, __u32 restored);
static __always_inline __u32 cca_cwnd_budget(struct sock *sk, struct rf_bbr *bbr,
					     __u32 target);
static __always_inline __u32 cca_probe_rtt_cwnd(struct sock *sk, struct rf_bbr *bbr);
static __always_inline __u32 cca_ack_aggregation_cwnd(struct sock *sk, struct rf_bbr *bbr);
static __always_inline bool cca_min_rtt_expired(struct sock *sk, struct rf_bbr *bbr,
					       bool window_expired);

/* ---- The windowed max filter of BtlBw ------------------------------------- */

/*
 * Keeps the best, second-best and third-best samples of the last `win`
 * rounds, each newer than the one before, so that when the best expires the
 * next one is still a max over a recent sub-window (Nichols' algorithm, as
 * in the kernel's lib/win_minmax.c that native bbr uses). Round stamps are
 * 16 bits (see struct rf_bbr); ages are taken modulo 2^16.
 */
static __always_inline void bbr_max_filter_reset(struct rf_bbr *bbr, __u16 t, __u32 v)
{
	bbr->bw_t[0] = bbr->bw_t[1] = bbr->bw_t[2] = t;
	bbr->bw_v[0] = bbr->bw_v[1] = bbr->bw_v[2] = v;
}

static __always_inline __u16 bbr_max_filter_age(__u16 now, __u16 then)
{
	return (__u16)(now - then);
}

static __always_inline void bbr_max_filter_update(struct rf_bbr *bbr, __u16 win, __u16 t,
						  __u32 v)
{
	__u16 age;

	if (v >= bbr->bw_v[0] || bbr_max_filter_age(t, bbr->bw_t[2]) > win) {
		bbr_max_filter_reset(bbr, t, v); /* new max, or whole window stale */
		return;
	}
	if (v >= bbr->bw_v[1]) {
		bbr->bw_t[1] = bbr->bw_t[2] = t;
		bbr->bw_v[1] = bbr->bw_v[2] = v;
	} else if (v >= bbr->bw_v[2]) {
		bbr->bw_t[2] = t;
		bbr->bw_v[2] = v;
	}
	/* Age out the best and promote the others as sub-windows pass. */
	age = bbr_max_filter_age(t, bbr->bw_t[0]);
	if (age > win) {
		bbr->bw_t[0] = bbr->bw_t[1];
		bbr->bw_v[0] = bbr->bw_v[1];
		bbr->bw_t[1] = bbr->bw_t[2];
		bbr->bw_v[1] = bbr->bw_v[2];
		bbr->bw_t[2] = t;
		bbr->bw_v[2] = v;
		if (bbr_max_filter_age(t, bbr->bw_t[0]) > win) {
			bbr->bw_t[0] = bbr->bw_t[1];
			bbr->bw_v[0] = bbr->bw_v[1];
			bbr->bw_t[1] = bbr->bw_t[2];
			bbr->bw_v[1] = bbr->bw_v[2];
		}
	} else if (bbr->bw_t[1] == bbr->bw_t[0] && age > win / 4) {
		bbr->bw_t[1] = bbr->bw_t[2] = t;
		bbr->bw_v[1] = bbr->bw_v[2] = v;
	} else if (bbr->bw_t[2] == bbr->bw_t[1] && age > win / 2) {
		bbr->bw_t[2] = t;
		bbr->bw_v[2] = v;
	}
}

/* ---- Estimates ------------------------------------------------------------- */

static __always_inline struct rf_bbr *bbr_of(const struct sock *sk)
{
	return (struct rf_bbr *)inet_csk_ca(sk);
}

/* The max filter's BtlBw: packets/us << BW_SCALE. */
static __always_inline __u32 bbr_max_bw(const struct rf_bbr *bbr)
{
	return bbr->bw_v[0];
}

/* The model's bandwidth: the policed rate when policed, else the max filter. */
static __always_inline __u32 bbr_bw(const struct rf_bbr *bbr)
{
	return bbr->lt_use_bw ? bbr->lt_bw : bbr_max_bw(bbr);
}

/* BtlBw as the controls and the export use it (= bbr_bw; the variants' name). */
static __always_inline __u32 bbr_btlbw(const struct rf_bbr *bbr)
{
	return bbr_bw(bbr);
}

static __always_inline bool bbr_full_bw_reached(const struct rf_bbr *bbr)
{
	return bbr->full_bw_reached;
}

/*
 * The export's BtlBw in bytes/s (no margin, no gain). This and the next are
 * bbr_bw_bytes_per_sec (bbr_common.h) written out: called through it, clang
 * computes mss x 10^6 once for both and the instructions change.
 */
static __always_inline __u64 bbr_btlbw_bytes_per_sec(const struct sock *sk,
						     const struct rf_bbr *bbr)
{
	return ((__u64)bbr_btlbw(bbr) * tcp_sk(sk)->mss_cache * USEC_PER_SEC) >> BW_SCALE;
}

/* The long-term (policed) bandwidth, bytes/s: 0 unless sampling or policed. */
static __always_inline __u64 bbr_lt_bw_bytes_per_sec(const struct sock *sk,
						     const struct rf_bbr *bbr)
{
	return ((__u64)bbr->lt_bw * tcp_sk(sk)->mss_cache * USEC_PER_SEC) >> BW_SCALE;
}

static __always_inline __u64 bbr_bw_to_pacing_rate(const struct sock *sk, __u64 bw,
						   __u32 gain)
{
	__u64 rate = bbr_rate_bytes_per_sec(sk, bw, gain, BBR_PACING_MARGIN_PCT);

	return rf_min(rate, (__u64)sk->sk_max_pacing_rate);
}

/*
 * BDP x gain in packets: BtlBw x RTprop x gain, rounded up. Before any RTT
 * sample the model has no BDP and returns the initial window.
 */
static __always_inline __u32 bbr_bdp(const struct rf_bbr *bbr, __u64 bw, __u32 gain)
{
	if (bbr->min_rtt_us == ~0U)
		return TCP_INIT_CWND;
	return bbr_bdp_packets(bw, bbr->min_rtt_us, gain);
}

/* Segments per TSO/GSO burst the stack will build at this pacing rate. */
static __always_inline __u32 bbr_min_tso_segs(const struct sock *sk)
{
	return sk->sk_pacing_rate < (BBR_MIN_TSO_RATE >> 3) ? 1 : 2;
}

static __always_inline __u32 bbr_tso_segs_goal(const struct sock *sk)
{
	__u32 mss = tcp_sk(sk)->mss_cache ?: 1;
	__u64 bytes = sk->sk_pacing_rate >> sk->sk_pacing_shift;
	__u32 segs;

	bytes = rf_min(bytes, (__u64)(GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER_EST));
	segs = rf_max((__u32)(bytes / mss), bbr_min_tso_segs(sk));
	return rf_min(segs, 0x7FU);
}

/* cwnd budget for TSO batching, even-rounded, +2 while probing in ProbeBW. */
static __always_inline __u32 bbr_quantization_budget(const struct sock *sk,
						     const struct rf_bbr *bbr, __u32 cwnd)
{
	cwnd += 3 * bbr_tso_segs_goal(sk);
	cwnd = (cwnd + 1) & ~1U;
	if (bbr->mode == RTTFAIR_MODE_PROBE_BW && bbr->cycle_idx == 0)
		cwnd += 2;
	return cwnd;
}

#ifndef RTTFAIR_HOOK_CWND_BUDGET
static __always_inline __u32 cca_cwnd_budget(struct sock *sk, struct rf_bbr *bbr,
					     __u32 target)
{
	return bbr_quantization_budget(sk, bbr, target);
}
#endif

#ifndef RTTFAIR_HOOK_LOSS_RECOVERY_CWND
static __always_inline bool cca_loss_recovery_cwnd(struct sock *sk, struct rf_bbr *bbr)
{
	return true;
}
#endif

#ifndef RTTFAIR_HOOK_CWND_RESTORED
static __always_inline __u32 cca_cwnd_restored(struct sock *sk, struct rf_bbr *bbr, __u8 left,
					       __u32 cwnd, __u32 restored)
{
	return restored;
}
#endif

#ifndef RTTFAIR_HOOK_MIN_RTT_EXPIRED
static __always_inline bool cca_min_rtt_expired(struct sock *sk, struct rf_bbr *bbr,
					       bool window_expired)
{
	return window_expired;
}
#endif

#ifndef RTTFAIR_HOOK_PROBE_RTT_CWND
static __always_inline __u32 cca_probe_rtt_cwnd(struct sock *sk, struct rf_bbr *bbr)
{
	return BBR_CWND_MIN_TARGET;
}
#endif

/* The inflight the model allows at this gain (used for phase decisions). */
static __always_inline __u32 bbr_inflight(const struct sock *sk, const struct rf_bbr *bbr,
					  __u64 bw, __u32 gain)
{
	return bbr_quantization_budget(sk, bbr, bbr_bdp(bbr, bw, gain));
}

/*
 * Packets of this flow in the network when the next packet may leave, at
 * its earliest departure time (EDT): with pacing, some of what is "in flight"
 * is still scheduled in the sender, and by the EDT the bottleneck will have
 * delivered BtlBw x (EDT - now) more. When probing upward the EDT packet's
 * TSO burst counts too (will sending it push inflight over the target?).
 *     in_net_at_edt = inflight + [tso_goal if gain > 1] - BtlBw x (EDT - now)
 */
static __always_inline __u32 bbr_packets_in_net_at_edt(const struct sock *sk,
						       const struct rf_bbr *bbr,
						       __u32 inflight_now)
{
	__u32 delivered_by_edt = (__u32)bbr_delivered_by_edt(sk, bbr);
	__u32 inflight_at_edt = inflight_now;

	if (bbr->pacing_gain > BBR_UNIT)
		inflight_at_edt += bbr_tso_segs_goal(sk);
	if (delivered_by_edt >= inflight_at_edt)
		return 0;
	return inflight_at_edt - delivered_by_edt;
}

/*
 * The cwnd allowance for ACK aggregation: the windowed max extra_acked,
 * once the pipe is full, at most what BtlBw delivers in 100 ms.
 */
static __always_inline __u32 bbr_ack_aggregation_cwnd(const struct rf_bbr *bbr)
{
	if (!bbr->full_bw_reached)
		return 0;
	return bbr_extra_acked_allowance(bbr);
}

#ifndef RTTFAIR_HOOK_ACK_AGGREGATION_CWND
static __always_inline __u32 cca_ack_aggregation_cwnd(struct sock *sk, struct rf_bbr *bbr)
{
	return bbr_ack_aggregation_cwnd(bbr);
}
#endif

/* ---- Controls -------------------------------------------------------------- */

static __always_inline void bbr_init_pacing_rate_from_rtt(struct sock *sk,
							  struct rf_bbr *bbr)
{
	sk->sk_pacing_rate = bbr_bw_to_pacing_rate(sk, bbr_init_bw(sk, bbr), BBR_HIGH_GAIN);
}

/* pacing_rate = pacing_gain x BtlBw, never lowered before the pipe is full. */
static __always_inline void bbr_set_pacing_rate(struct sock *sk, struct rf_bbr *bbr,
						__u64 bw, __u32 gain)
{
	__u64 rate = bbr_bw_to_pacing_rate(sk, bw, gain);

	if (!bbr->has_seen_rtt && tcp_sk(sk)->srtt_us)
		bbr_init_pacing_rate_from_rtt(sk, bbr);
	rate = cca_pacing_rate(sk, bbr, rate);
	if (bbr->full_bw_reached || rate > sk->sk_pacing_rate)
		sk->sk_pacing_rate = rate;
}

/*
 * Loss recovery: subtract newly lost packets; in the first round of fast
 * recovery send one packet per packet delivered (packet conservation); on
 * leaving recovery restore the cwnd saved before it. Returns true when the
 * conservation cwnd (in *cwnd) overrides the model.
 */
static __always_inline bool bbr_set_cwnd_to_recover_or_restore(struct sock *sk,
							       struct rf_bbr *bbr,
							       const struct rate_sample *rs,
							       __u32 acked, __u32 *cwnd_out)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u8 prev_state = bbr->prev_ca_state, state = bbr->ca_state;
	__u32 cwnd = tp->snd_cwnd;
	__u32 inflight = tcp_packets_in_flight(tp);

	if (rs->losses > 0)
		cwnd = (__s32)cwnd - rs->losses > 1 ? cwnd - rs->losses : 1;

	if (state == TCP_CA_Recovery && prev_state != TCP_CA_Recovery) {
		bbr->packet_conservation = 1;
		bbr->next_rtt_delivered = tp->delivered;
		cwnd = inflight + acked;
	} else if (prev_state >= TCP_CA_Recovery && state < TCP_CA_Recovery) {
		cwnd = rf_max(cwnd, bbr->prior_cwnd);
		bbr->packet_conservation = 0;
	}
	bbr->prev_ca_state = state;

	if (bbr->packet_conservation) {
		*cwnd_out = rf_max(cwnd, inflight + acked);
		return true;
	}
	*cwnd_out = cwnd;
	return false;
}

/*
 * cwnd = cwnd_gain x BDP + ACK-aggregation allowance + budget, approached by
 * adding what was acked once
 * the pipe is full (so a cut never happens in one step), grown freely before.
 */
static __always_inline void bbr_set_cwnd(struct sock *sk, struct rf_bbr *bbr,
					 const struct rate_sample *rs, __u32 acked,
					 __u64 bw, __u32 gain)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 cwnd = tp->snd_cwnd, target;
	__u8 left = bbr->prev_ca_state;
	bool own_law, leaving;

	if (!acked)
		goto done;
	/* This ACK leaves Loss or Recovery (read before the call below
	 * records the state as seen). */
	leaving = left >= TCP_CA_Recovery && bbr->ca_state < TCP_CA_Recovery;
	own_law = !cca_loss_recovery_cwnd(sk, bbr);
	if (bbr_set_cwnd_to_recover_or_restore(sk, bbr, rs, acked, &cwnd) && !own_law)
		goto done;

	target = (__u32)cca_inflight_bdp(sk, bbr, bbr_bdp(bbr, bw, gain));
	target += cca_ack_aggregation_cwnd(sk, bbr);
	target = cca_cwnd_budget(sk, bbr, target);
	/* A variant that handles loss in its own law: no cut by the lost
	 * packets, no packet conservation, but the restore on leaving Loss or
	 * Recovery, within the law's target (an RTO collapsed cwnd to the
	 * packets in flight + 1; a spurious RTO's undo leaves Loss too). */
	if (own_law && leaving) {
		cwnd = cca_cwnd_restored(sk, bbr, left, tp->snd_cwnd,
					 rf_cwnd_restored(tp->snd_cwnd, bbr->prior_cwnd, target));
	} else if (own_law) {
		cwnd = tp->snd_cwnd;
	}
	if (bbr->full_bw_reached)
		cwnd = rf_min(cwnd + acked, target);
	else if (cwnd < target || tp->delivered < TCP_INIT_CWND)
		cwnd = cwnd + acked;
	cwnd = rf_max(cwnd, (__u32)BBR_CWND_MIN_TARGET);
done:
	cwnd = rf_min(cwnd, tp->snd_cwnd_clamp);
	if (bbr->mode == RTTFAIR_MODE_PROBE_RTT)
		cwnd = rf_min(cwnd, cca_probe_rtt_cwnd(sk, bbr));
	tp->snd_cwnd = cwnd;
}

/* ---- The state machine ----------------------------------------------------- */

static __always_inline void bbr_reset_startup_mode(struct rf_bbr *bbr)
{
	bbr->mode = RTTFAIR_MODE_STARTUP;
}

/* A new gain-cycle phase starts now, on the delivery clock. */
static __always_inline void bbr_advance_cycle_phase(struct sock *sk, struct rf_bbr *bbr)
{
	bbr->cycle_idx = (bbr->cycle_idx + 1) & (BBR_CYCLE_LEN - 1);
	bbr->cycle_mstamp = (__u32)tcp_sk(sk)->delivered_mstamp;
}

static __always_inline void bbr_reset_probe_bw_mode(struct sock *sk, struct rf_bbr *bbr)
{
	bbr->mode = RTTFAIR_MODE_PROBE_BW;
	bbr->cycle_idx = BBR_CYCLE_LEN - 1 - bpf_get_prandom_u32() % BBR_CYCLE_RAND;
	bbr_advance_cycle_phase(sk, bbr);
}

static __always_inline void bbr_reset_mode(struct sock *sk, struct rf_bbr *bbr)
{
	if (!bbr->full_bw_reached)
		bbr_reset_startup_mode(bbr);
	else
		bbr_reset_probe_bw_mode(sk, bbr);
}

/* A new packet-timed round starts when a packet sent after the last one ends. */
static __always_inline void bbr_update_round(struct sock *sk, struct rf_bbr *bbr,
					     const struct rate_sample *rs)
{
	bbr->round_start = 0;
	if (rs->delivered < 0 || rs->interval_us <= 0)
		return;
	if (!rf_before(rs->prior_delivered, bbr->next_rtt_delivered)) {
		bbr->next_rtt_delivered = tcp_sk(sk)->delivered;
		bbr->rtt_cnt++;
		bbr->round_start = 1;
		bbr->packet_conservation = 0;
	}
}

/* ---- Long-term bandwidth: policer detection ------------------------------- */

/* Start a new interval here (only a running interval has a start). */
static __always_inline void bbr_lt_start_interval(struct sock *sk, struct rf_bbr *bbr,
						  struct rf_bbr_lt_start *start)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	start->delivered = tp->delivered;
	start->lost = tp->lost;
	start->stamp_ms = (__u32)(tp->delivered_mstamp / USEC_PER_MSEC);
	bbr->lt_rtt_cnt = 0;
}

/* Forget long-term sampling: not policed, not sampling. */
static __always_inline void bbr_lt_reset(struct rf_bbr *bbr)
{
	bbr->lt_bw = 0;
	bbr->lt_use_bw = 0;
	bbr->lt_is_sampling = 0;
	bbr->lt_rtt_cnt = 0;
}

/*
 * An interval ended lossy with delivery rate bw. If the previous interval's
 * rate agrees (within 1/8, or 4 kbit/s), the path is policed at their mean.
 */
static __always_inline void bbr_lt_interval_done(struct sock *sk, struct rf_bbr *bbr,
						 struct rf_bbr_lt_start *start, __u32 bw)
{
	__u32 diff;

	if (bbr->lt_bw) {
		diff = bw > bbr->lt_bw ? bw - bbr->lt_bw : bbr->lt_bw - bw;
		if ((__u64)diff * BBR_UNIT <= (__u64)BBR_LT_BW_RATIO * bbr->lt_bw ||
		    bbr_rate_bytes_per_sec(sk, diff, BBR_UNIT, BBR_PACING_MARGIN_PCT) <= BBR_LT_BW_DIFF) {
			bbr->lt_bw = (__u32)(((__u64)bw + bbr->lt_bw) >> 1);
			bbr->lt_use_bw = 1;
			bbr->pacing_gain = BBR_UNIT; /* stop probing into the policer */
			bbr->lt_rtt_cnt = 0;
			return;
		}
	}
	bbr->lt_bw = bw;
	bbr_lt_start_interval(sk, bbr, start);
}

/*
 * Long-term sampling, once per ACK with a valid rate sample (and on an RTO
 * with losses = 1). Intervals start at a loss (so a policer's bucket is
 * already empty), span 4-16 round trips, end at a loss once lost/delivered
 * >= 50/256 (BBR_LT_LOSS_THRESH, about 20 %), and are abandoned when the
 * flow runs out of data. Policed, the
 * flow uses lt_bw for 48 rounds of ProbeBW, then re-probes.
 */
static __always_inline void bbr_lt_sample(struct sock *sk, struct rf_bbr *bbr,
					  __s32 losses, bool app_limited)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct rf_bbr_lt_start *start;
	__u32 lost, delivered, t_ms;
	__u64 bw;

	if (bbr->lt_use_bw) {
		if (bbr->mode == RTTFAIR_MODE_PROBE_BW && bbr->round_start &&
		    ++bbr->lt_rtt_cnt >= BBR_LT_BW_MAX_RTTS) {
			bbr_lt_reset(bbr);
			bbr_reset_probe_bw_mode(sk, bbr);
		}
		return;
	}
	if (!bbr->lt_is_sampling) {
		if (!losses)
			return;
		start = bbr_lt_start_of(sk, true);
		if (!start)
			return; /* no memory: no long-term model for this flow */
		bbr_lt_start_interval(sk, bbr, start);
		bbr->lt_is_sampling = 1;
	}
	if (app_limited) {
		bbr_lt_reset(bbr);
		return;
	}
	if (bbr->round_start)
		bbr->lt_rtt_cnt++;
	if (bbr->lt_rtt_cnt < BBR_LT_INTVL_MIN_RTTS)
		return;
	if (bbr->lt_rtt_cnt > 4 * BBR_LT_INTVL_MIN_RTTS) {
		bbr_lt_reset(bbr); /* too long to be a policer's rhythm */
		return;
	}
	if (!losses)
		return;
	start = bbr_lt_start_of(sk, true);
	if (!start) {
		bbr_lt_reset(bbr);
		return;
	}
	lost = tp->lost - start->lost;
	delivered = tp->delivered - start->delivered;
	if (!delivered || ((__u64)lost << BBR_SCALE) < (__u64)BBR_LT_LOSS_THRESH * delivered)
		return;
	t_ms = (__u32)(tp->delivered_mstamp / USEC_PER_MSEC) - start->stamp_ms;
	if ((__s32)t_ms < 1)
		return; /* under 1 ms: wait */
	if (t_ms >= ~0U / USEC_PER_MSEC) {
		bbr_lt_reset(bbr);
		return;
	}
	bw = (__u64)delivered * BW_UNIT / ((__u64)t_ms * USEC_PER_MSEC);
	bbr_lt_interval_done(sk, bbr, start, (__u32)rf_min(bw, 0xffffffffULL));
}

/* BtlBw: feed the delivery-rate sample to the max filter. */
static __always_inline void bbr_update_btlbw(struct sock *sk, struct rf_bbr *bbr,
					     const struct rate_sample *rs)
{
	__u64 bw;

	if (rs->delivered < 0 || rs->interval_us <= 0)
		return;
	bbr_lt_sample(sk, bbr, rs->losses, rs->is_app_limited);
	bw = (__u64)rs->delivered * BW_UNIT / (__u64)rs->interval_us;
	if (bw > 0xffffffffULL)
		bw = 0xffffffffULL;
	/* App-limited samples underestimate BtlBw: use them only if they raise it. */
	if (!rs->is_app_limited || bw >= bbr_max_bw(bbr))
		bbr_max_filter_update(bbr, BBR_BW_RTTS, (__u16)bbr->rtt_cnt, (__u32)bw);
}

/* ProbeBW: is it time to leave the current gain-cycle phase? */
static __always_inline bool bbr_is_next_cycle_phase(struct sock *sk, struct rf_bbr *bbr,
						    const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	bool is_full_length = rf_stamp_us_delta((__u32)tp->delivered_mstamp,
						bbr->cycle_mstamp) > bbr->min_rtt_us;
	__u32 gain = bbr->pacing_gain;
	__u32 inflight;
	__u64 bw;

	if (gain == BBR_UNIT)
		return is_full_length;
	inflight = bbr_packets_in_net_at_edt(sk, bbr, rs->prior_in_flight);
	bw = bbr_max_bw(bbr);
	/* Probing: stay until the queue the probe aims for has built (or loss). */
	if (gain > BBR_UNIT)
		return is_full_length &&
		       (rs->losses || inflight >= bbr_inflight(sk, bbr, bw, gain));
	/* Draining: leave early once inflight is back at one BDP. */
	return is_full_length || inflight <= bbr_inflight(sk, bbr, bw, BBR_UNIT);
}

static __always_inline void bbr_update_cycle_phase(struct sock *sk, struct rf_bbr *bbr,
						   const struct rate_sample *rs)
{
	if (bbr->mode == RTTFAIR_MODE_PROBE_BW && bbr_is_next_cycle_phase(sk, bbr, rs))
		bbr_advance_cycle_phase(sk, bbr);
}

/* Startup ends after BBR_FULL_BW_CNT rounds without 25% bandwidth growth. */
static __always_inline void bbr_check_full_bw_reached(struct rf_bbr *bbr,
						      const struct rate_sample *rs)
{
	__u32 thresh;

	if (bbr->full_bw_reached || !bbr->round_start || rs->is_app_limited)
		return;
	thresh = (__u32)(((__u64)bbr->full_bw * BBR_FULL_BW_THRESH) >> BBR_SCALE);
	if (bbr_max_bw(bbr) >= thresh) {
		bbr->full_bw = bbr_max_bw(bbr);
		bbr->full_bw_cnt = 0;
		return;
	}
	++bbr->full_bw_cnt;
	bbr->full_bw_reached = bbr->full_bw_cnt >= BBR_FULL_BW_CNT;
}

/* Startup -> Drain -> ProbeBW (Drain ends when what is in the net is one BDP). */
static __always_inline void bbr_check_drain(struct sock *sk, struct rf_bbr *bbr)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (bbr->mode == RTTFAIR_MODE_STARTUP && bbr->full_bw_reached) {
		bbr->mode = RTTFAIR_MODE_DRAIN;
		tp->snd_ssthresh = bbr_inflight(sk, bbr, bbr_max_bw(bbr), BBR_UNIT);
	}
	if (bbr->mode == RTTFAIR_MODE_DRAIN &&
	    bbr_packets_in_net_at_edt(sk, bbr, tcp_packets_in_flight(tp)) <=
		    bbr_inflight(sk, bbr, bbr_max_bw(bbr), BBR_UNIT))
		bbr_reset_probe_bw_mode(sk, bbr);
}

static __always_inline void bbr_check_probe_rtt_done(struct sock *sk, struct rf_bbr *bbr)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 now = tcp_now_ms(tp);

	if (!(bbr->probe_rtt_done_ms && rf_after(now, bbr->probe_rtt_done_ms)))
		return;
	bbr->min_rtt_stamp_ms = now; /* the dwell refreshed RTprop */
	tp->snd_cwnd = rf_max(tp->snd_cwnd, bbr->prior_cwnd);
	bbr_reset_mode(sk, bbr);
}

static __always_inline void bbr_enter_probe_rtt(struct sock *sk, struct rf_bbr *bbr)
{
	bbr->mode = RTTFAIR_MODE_PROBE_RTT;
	bbr_save_cwnd(sk, bbr);
	bbr->probe_rtt_done_ms = 0;
	bbr->probe_rtt_entries++;
	rttfair_count(RTTFAIR_CCA, probe_rtt_entries, 1);
}

/*
 * RTprop: windowed min RTT over 10 s. When the window expires without a new
 * minimum (or the variant says so), spend >= 200 ms and one round in ProbeRTT.
 */
static __always_inline void bbr_update_min_rtt(struct sock *sk, struct rf_bbr *bbr,
					       const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 now = tcp_now_ms(tp);
	bool expired = cca_min_rtt_expired(sk, bbr,
					   rf_after(now, bbr->min_rtt_stamp_ms + BBR_MIN_RTT_WIN_MS));

	if (rs->rtt_us >= 0 &&
	    ((__u64)rs->rtt_us < bbr->min_rtt_us || (expired && !rs->is_ack_delayed))) {
		bbr->min_rtt_us = (__u32)rs->rtt_us;
		bbr->min_rtt_stamp_ms = now;
	}

	if (cca_probe_rtt_due(sk, bbr, expired) && !bbr->idle_restart &&
	    bbr->mode != RTTFAIR_MODE_PROBE_RTT)
		bbr_enter_probe_rtt(sk, bbr);

	if (bbr->mode == RTTFAIR_MODE_PROBE_RTT) {
		__u32 inflight = tcp_packets_in_flight(tp);

		/* Don't let the app-limited logic mistake the dwell for demand. */
		tp->app_limited = (tp->delivered + inflight) ?: 1;
		if (!bbr->probe_rtt_done_ms && inflight <= cca_probe_rtt_cwnd(sk, bbr)) {
			bbr->probe_rtt_done_ms = (now + BBR_PROBE_RTT_MODE_MS) ?: 1;
			bbr->probe_rtt_round_done = 0;
			bbr->next_rtt_delivered = tp->delivered;
		} else if (bbr->probe_rtt_done_ms) {
			if (bbr->round_start)
				bbr->probe_rtt_round_done = 1;
			if (bbr->probe_rtt_round_done)
				bbr_check_probe_rtt_done(sk, bbr);
		}
	}
	if (rs->delivered > 0)
		bbr->idle_restart = 0;
}

static __always_inline void bbr_update_gains(struct rf_bbr *bbr)
{
	switch (bbr->mode) {
	case RTTFAIR_MODE_STARTUP:
		bbr->pacing_gain = BBR_HIGH_GAIN;
		bbr->cwnd_gain = BBR_HIGH_GAIN;
		break;
	case RTTFAIR_MODE_DRAIN:
		bbr->pacing_gain = BBR_DRAIN_GAIN;
		bbr->cwnd_gain = BBR_HIGH_GAIN;
		break;
	case RTTFAIR_MODE_PROBE_BW:
		bbr->pacing_gain = bbr->lt_use_bw ? BBR_UNIT : bbr_pacing_gain_cycle(bbr->cycle_idx);
		bbr->cwnd_gain = BBR_CWND_GAIN;
		break;
	default: /* ProbeRTT */
		bbr->pacing_gain = BBR_UNIT;
		bbr->cwnd_gain = BBR_UNIT;
		break;
	}
}

static __always_inline void bbr_update_model(struct sock *sk, struct rf_bbr *bbr,
					     const struct rate_sample *rs)
{
	bbr_update_round(sk, bbr, rs);
	bbr_update_btlbw(sk, bbr, rs);
	bbr_update_ack_aggregation(sk, bbr, rs, BBR_EXTRA_ACKED_WIN_RTTS, true);
	bbr_update_cycle_phase(sk, bbr, rs);
	bbr_check_full_bw_reached(bbr, rs);
	bbr_check_drain(sk, bbr);
	bbr_update_min_rtt(sk, bbr, rs);
	bbr_update_gains(bbr);
}

/* ---- Export to RTTFAIR_FLOWS_MAP ---------------------------------------- */

static __always_inline void bbr_export_fill(struct sock *sk, struct rf_bbr *bbr,
					    struct rttfair_flow *f)
{
	rttfair_fill_tcp(f, sk);
	f->mode = bbr->mode;
	f->cycle_idx = bbr->cycle_idx;
	f->btlbw_bps = bbr_btlbw_bytes_per_sec(sk, bbr);
	f->min_rtt_us = bbr->min_rtt_us;
	f->last_rtt_us = bbr->last_rtt_us;
	f->pacing_gain_x256 = bbr->pacing_gain;
	f->cwnd_gain_x256 = bbr->cwnd_gain;
	f->probe_rtt_entries = bbr->probe_rtt_entries;
	f->rounds = bbr->rtt_cnt;
	f->lt_bw_bps = bbr_lt_bw_bytes_per_sec(sk, bbr);
	f->lt_use_bw = bbr->lt_use_bw;
	f->lt_is_sampling = bbr->lt_is_sampling;
	f->lt_rtt_cnt = bbr->lt_rtt_cnt;
	cca_export(sk, bbr, f);
}

/* Create the flow's entry, filled in place (rttfair_maps.h: no record on
 * the stack); on a full map count it (once), retry later and go on
 * controlling. */
static __always_inline void bbr_export_create(struct sock *sk, struct rf_bbr *bbr)
{
	struct rttfair_flow *f = rttfair_flow_insert(sk, bbr->flow_id, bpf_ktime_get_ns());

	if (f)
		bbr_export_fill(sk, bbr, f);
	bbr->exported = rttfair_flow_publish(f, bbr->exported);
}

/* Refresh in place, at most once per round trip and per export interval. */
static __always_inline void bbr_export_if_due(struct sock *sk, struct rf_bbr *bbr)
{
	__u32 now_us = (__u32)tcp_sk(sk)->tcp_mstamp;
	__u64 id = bbr->flow_id;
	struct rttfair_flow *f;

	if (!bbr->round_start ||
	    now_us - bbr->last_export_us < RTTFAIR_EXPORT_MIN_INTERVAL_US)
		return;
	bbr->last_export_us = now_us;
	if (bbr->exported != 1) {
		bbr_export_create(sk, bbr);
		return;
	}
	f = bpf_map_lookup_elem(&RTTFAIR_FLOWS_MAP, &id);
	if (f)
		bbr_export_fill(sk, bbr, f);
	else
		bbr_export_create(sk, bbr);
}

/* ---- tcp_congestion_ops entry points --------------------------------------- */

static __always_inline void bbr_core_init(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct rf_bbr *bbr = bbr_of(sk);

	__builtin_memset(bbr, 0, sizeof(*bbr));
	tp->snd_ssthresh = TCP_INFINITE_SSTHRESH;
	bbr->flow_id = rttfair_next_flow_id();
	bbr->next_rtt_delivered = tp->delivered;
	bbr->prev_ca_state = TCP_CA_Open;
	bbr->ca_state = TCP_CA_Open;
	bbr->min_rtt_us = tcp_min_rtt(tp);
	bbr->min_rtt_stamp_ms = tcp_now_ms(tp);
	bbr->last_export_us = (__u32)tp->tcp_mstamp;
	bbr->ack_epoch_mstamp = (__u32)tp->tcp_mstamp;
	bbr_init_pacing_rate_from_rtt(sk, bbr);
	bbr_reset_startup_mode(bbr);
	bbr_update_gains(bbr);
	if (sk->sk_pacing_status == SK_PACING_NONE)
		sk->sk_pacing_status = SK_PACING_NEEDED;

	rttfair_count(RTTFAIR_CCA, flows_started, 1);
	cca_init(sk, bbr);
	bbr_export_create(sk, bbr);
}

static __always_inline void bbr_core_release(struct sock *sk)
{
	struct rf_bbr *bbr = bbr_of(sk);
	__u64 id = bbr->flow_id;

	/* No id: init never ran (e.g. a listener, or a connection that never
	 * established), so there is nothing to count or delete. */
	if (!id)
		return;
	cca_release(sk, bbr);
	rttfair_count(RTTFAIR_CCA, flows_released, 1);
	if (!bpf_map_delete_elem(&RTTFAIR_FLOWS_MAP, &id))
		rttfair_count(RTTFAIR_CCA, export_deleted, 1);
	bbr->flow_id = 0;
	bbr->exported = 0;
}

static __always_inline void bbr_core_main(struct sock *sk, const struct rate_sample *rs)
{
	struct rf_bbr *bbr = bbr_of(sk);
	__u64 bw;

	if (rs->rtt_us > 0)
		bbr->last_rtt_us = (__u32)rs->rtt_us;
	cca_on_rate_sample(sk, bbr, rs);
	bbr_update_model(sk, bbr, rs);
	bw = bbr_btlbw(bbr);
	bbr_set_pacing_rate(sk, bbr, bw, bbr->pacing_gain);
	bbr_set_cwnd(sk, bbr, rs, rs->acked_sacked, bw, bbr->cwnd_gain);
	bbr_export_if_due(sk, bbr);
}

static __always_inline void bbr_core_cwnd_event(struct sock *sk, enum tcp_ca_event event)
{
	struct rf_bbr *bbr = bbr_of(sk);

	if (event == CA_EVENT_TX_START && tcp_sk(sk)->app_limited) {
		bbr->idle_restart = 1;
		/* The silence is not aggregation: start a new ACK epoch. */
		bbr->ack_epoch_mstamp = (__u32)tcp_sk(sk)->tcp_mstamp;
		bbr->ack_epoch_acked = 0;
		/* Resuming from idle: pace at BtlBw, not at the probing gain. */
		if (bbr->mode == RTTFAIR_MODE_PROBE_BW)
			bbr_set_pacing_rate(sk, bbr, bbr_btlbw(bbr), BBR_UNIT);
		else if (bbr->mode == RTTFAIR_MODE_PROBE_RTT)
			bbr_check_probe_rtt_done(sk, bbr);
	}
}

static __always_inline void bbr_core_set_state(struct sock *sk, __u8 new_state)
{
	struct rf_bbr *bbr = bbr_of(sk);

	if (new_state == TCP_CA_Loss) {
		/* An RTO: restart full-bandwidth detection; restore cwnd afterwards. */
		bbr->prev_ca_state = TCP_CA_Loss;
		bbr->full_bw = 0;
		bbr->round_start = 1; /* an RTO ends a round */
		bbr_lt_sample(sk, bbr, 1, false);
	}
	bbr->ca_state = new_state;
}

/*
 * The struct_ops programs. Each CCA's .bpf.c ends with
 * RTTFAIR_DEFINE_STRUCT_OPS(<cca>_ops, "<cca>"): the map the loader attaches
 * and the name the kernel registers.
 */
#define RTTFAIR_DEFINE_STRUCT_OPS(ops_var, ops_name)                             \
	SEC("struct_ops")                                                       \
	void BPF_PROG(rf_init, struct sock *sk)                                 \
	{                                                                       \
		bbr_core_init(sk);                                              \
	}                                                                       \
	SEC("struct_ops")                                                       \
	void BPF_PROG(rf_release, struct sock *sk)                              \
	{                                                                       \
		bbr_core_release(sk);                                           \
	}                                                                       \
	SEC("struct_ops")                                                       \
	void BPF_PROG(rf_cong_control, struct sock *sk, __u32 ack, int flag,    \
		      const struct rate_sample *rs)                             \
	{                                                                       \
		bbr_core_main(sk, rs);                                          \
	}                                                                       \
	SEC("struct_ops")                                                       \
	__u32 BPF_PROG(rf_ssthresh, struct sock *sk)                            \
	{                                                                       \
		bbr_save_cwnd(sk, bbr_of(sk));                                  \
		return tcp_sk(sk)->snd_ssthresh;                                \
	}                                                                       \
	SEC("struct_ops")                                                       \
	__u32 BPF_PROG(rf_undo_cwnd, struct sock *sk)                           \
	{                                                                       \
		struct rf_bbr *bbr = bbr_of(sk);                                \
		bbr->full_bw = 0; /* spurious loss: re-check for a full pipe */ \
		bbr->full_bw_cnt = 0;                                           \
		bbr_lt_reset(bbr); /* ... and for a policer */                  \
		return tcp_sk(sk)->snd_cwnd;                                    \
	}                                                                       \
	SEC("struct_ops")                                                       \
	void BPF_PROG(rf_cwnd_event, struct sock *sk, enum tcp_ca_event event)  \
	{                                                                       \
		bbr_core_cwnd_event(sk, event);                                 \
	}                                                                       \
	SEC("struct_ops")                                                       \
	void BPF_PROG(rf_set_state, struct sock *sk, __u8 new_state)            \
	{                                                                       \
		bbr_core_set_state(sk, new_state);                              \
	}                                                                       \
	SEC("struct_ops")                                                       \
	__u32 BPF_PROG(rf_sndbuf_expand, struct sock *sk)                       \
	{                                                                       \
		return 3; /* room for pacing_gain 1.25 and the startup ramp */  \
	}                                                                       \
	SEC("struct_ops")                                                       \
	__u32 BPF_PROG(rf_min_tso_segs, struct sock *sk)                        \
	{                                                                       \
		return bbr_min_tso_segs(sk);                                    \
	}                                                                       \
	SEC(".struct_ops.link")                                                 \
	struct tcp_congestion_ops ops_var = {                                   \
		.init = (void *)rf_init,                                        \
		.release = (void *)rf_release,                                  \
		.cong_control = (void *)rf_cong_control,                        \
		.ssthresh = (void *)rf_ssthresh,                                \
		.undo_cwnd = (void *)rf_undo_cwnd,                              \
		.cwnd_event = (void *)rf_cwnd_event,                            \
		.set_state = (void *)rf_set_state,                              \
		.sndbuf_expand = (void *)rf_sndbuf_expand,                      \
		.min_tso_segs = (void *)rf_min_tso_segs,                        \
		.name = ops_name,                                               \
	}

char _license[] SEC("license") = "GPL";

#endif /* RTTFAIR_BBR_CORE_H */
