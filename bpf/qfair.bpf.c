// SPDX-License-Identifier: GPL-2.0
/*
 * qfair: RTT-fair congestion control on the rttfair BBR core.
 *
 * The model. At a FIFO bottleneck a window-limited flow's rate is its own
 * backlog over the queueing delay all flows share (Little's law:
 * x_i = a_i / q). BBR keeps about a BDP queued, its own RTT's worth, so the
 * long flow takes the link. qfair keeps alpha packets of its own queued
 * (the equilibrium of Vegas, FAST and Copa): then x_i q = alpha(x_i) for
 * every flow, and as alpha(x)/x falls with x the shared q fixes one rate,
 * x_i = mu / N, whatever R_i; the queue is N alpha whatever the buffer.
 * Every estimate is chosen to read the same for every RTT: what is a level
 * is a mean per round, what accumulates does so per second of wall clock.
 *
 * The law, per round trip (at most once per ms), after BBR's Startup and
 * Drain ("cruise"); numbers are the equations of docs/algorithms.md:
 *
 *   x^  <- x^ + (x_rnd - x^)/4   x_rnd = (delivered + lost) / dt       (3)
 *   D    = mean of the round's 8.192 ms bucket minima of the RTT       (4)
 *   q^   = max(0, D - R^ - nu),  a^ = x^ q^  (the flow's own backlog)  (5)
 *   al_d = alpha_0 + k sqrt(x^ * 1 ms)                                 (6)
 *   al  <- al + a dt, halved per lost or CE-marked packet (at most once
 *          per 100 ms of wall clock), within [1, al_d]; competitive:
 *          [1, inf) and a = a packet per round R^, >= 20 pkt/s         (7)
 *   g    = 1 + clamp(e min(D / tau_g, 2^v al_b / (2 x^ P)), +-g_cap),
 *          e = (al_b - a^) / al_b, g = 1 inside al_b <= a^ <= 2 al_b       (8)
 *   o   <- o + clamp(al_b - a^, +-al_b/4) dt / tau_i, |o| <= o_cap al   (8b)
 *   w    = g x^ P + al + o,  P = R^ + nu + eps;  cwnd = max(4, w) + b  (1)
 *   pace = 1.1 (w + b) / D  ((w + b) / D below 6 packets)              (9)
 *
 * al_b = al + b, b the TSO burst room (three bursts where the pipe holds
 * under one, none from two); v counts rounds pushed the same way. A round
 * the application (or the send buffer) limited is measured too, but its
 * w may only fall: an unfilled window proves no larger one.
 *
 * Drains. Every flow halves its rate and holds half its pipe x^ P at UTC
 * multiples of the drain period (CLOCK_TAI less the host's TAI offset,
 * plus a phase), for 200 ms and a round. The queue qfair flows hold empties,
 * and what a flow reads in the drain's settled part (its last 64 ms, a round
 * or more after its inflight came down) sets its baselines:
 *   R^    a running minimum of the RTT (BBR's 10 s expiry disarmed);
 *   nu    its bucket minima's mean above R^: the path's own delay noise
 *         (jitter, ACK batching) as Eq. 4 reads it, which is no queue
 *         (Eq. 5) and which the window must carry (Eq. 1's pipe);
 *   eps   the RTT's mean, sampled in time (each bucket's first sample),
 *         above the bucket minima's mean: the rest of that noise, which
 *         Eq. 4's minima do not see and the window carries too (Little's
 *         law holds for the mean RTT). Read with the queue empty, so the
 *         queue's own ripple, which is backlog, stays out of the pipe.
 * The drain's lowest RTT m judges the queue. Within max(1 ms, q^'/2) plus
 * s of R^, it emptied (s: the drain's own spread, its settled bucket minima
 * above m, or nu if larger). Otherwise someone else holds a
 * queue (a loss-based flow, or a longer path): the flow turns competitive
 * (Eq. 7 without its ceiling, a packet a round) until a drain empties again.
 * A longer path moves R^ to m at the first drain after a held step of the
 * floor of at least 16 ms (10b), or after three drains above
 * R^ + s + 2 ms with the floor held between them (10).
 *
 * Constants (tunables: `rttfairctl set qfair.NAME`, read once per round):
 *   alpha0 3 pkt, k_alpha 1, tau_g_ms 1000, g_cap 1/8, o_cap 1/2,
 *   drain_period_ms 10000, drain_clock 1 (UTC) or 2 (a local timer),
 *   drain_phase_ms 0, tai_offset_s (written by load from adjtimex),
 *   competitive 1 (2: never), exit_drains 1.
 *   rules_off 0: ablation, a bit per rule; docs/algorithms.md.
 *   Fixed: a 4 pkt/s (competitive: 1 per round, >= 20), tau_i 2 s, EWMA gain 1/4, bucket
 *   8.192 ms, pacing gain 1.1, Startup exit on >= 6 lost or CE-marked, > 2 %.
 *
 * State: what every ACK touches (w, the open bucket, the next drain, flags)
 * in the core's cca_hot; the rest in the qfair_sk sk_storage, looked up at
 * bucket ends, round starts and drain edges. No map is shared between
 * flows. Why each estimator, what was measured and the law's history:
 * docs/algorithms.md, "qfair", and docs/results.md.
 *
 * GPL-2.0: struct_ops programs must be GPL-compatible.
 */
#define RTTFAIR_CCA RTTFAIR_CCA_QFAIR
#define RTTFAIR_HOOK_CWND_BUDGET
#define RTTFAIR_HOOK_PROBE_RTT_CWND
#define RTTFAIR_HOOK_LOSS_RECOVERY_CWND
#define RTTFAIR_HOOK_CWND_RESTORED
#define RTTFAIR_HOOK_ACK_AGGREGATION_CWND
#include "bbr_core.h"
#include "qfair_math.h"

/* qfair_math.h restates the core's fixed-point scales so that it compiles
 * alone on the host; this file mixes the two (xhat is bbr_btlbw(), gains
 * meet BBR_UNIT), so they must be the same numbers. */
_Static_assert(QF_BW_SCALE == BW_SCALE, "qfair_math.h's rate unit must be the core's");
_Static_assert(QF_GAIN_UNIT == BBR_UNIT, "qfair_math.h's gain unit must be the core's");

#define QFAIR_TUNABLES_MAP RTTFAIR_VERSIONED(qfair_tunables)

/* Defaults of the tunables (qfair_tunables in rttfair_abi.h). */
#define QFAIR_DEF_ALPHA0_X1024 3072
#define QFAIR_DEF_K_ALPHA_X1024 1024
#define QFAIR_DEF_TAU_G_MS 1000
#define QFAIR_DEF_G_CAP_X256 32
#define QFAIR_DEF_DRAIN_PERIOD_MS 10000
#define QFAIR_DEF_DRAIN_CLOCK QFAIR_CLOCK_WALL
#define QFAIR_DEF_COMPETITIVE QFAIR_COMPETITIVE_ON
#define QFAIR_DEF_O_CAP_X256 128 /* |o| <= alpha/2 (Eq. 8b) */
#define QFAIR_DEF_EXIT_DRAINS 1  /* the first emptied drain ends competitive mode */
#define QFAIR_DEF_DRAIN_PHASE_MS 0
#define QFAIR_DEF_TAI_OFFSET_S 0 /* CLOCK_TAI - UTC; the loader writes the host's */
#define QFAIR_DEF_RULES_OFF 0    /* the whole law (QF_RULE_* below) */

#define QFAIR_CLOCK_WALL 1
#define QFAIR_CLOCK_LOCAL 2
#define QFAIR_COMPETITIVE_ON 1
#define QFAIR_COMPETITIVE_OFF 2

/* Constants of the law (docs/algorithms.md, "qfair", has the why of each). */
#define QFAIR_AI_X1024 (4 * 1024)              /* alpha increase, pkt/s x1024 */
#define QFAIR_COMPETITIVE_ALPHA_MAX_X1024 (65535U * 1024) /* alpha_hi when competitive */
#define QFAIR_MIN_ROUND_US 1000                /* per-round work at most 1/ms */
#define QFAIR_FULL_LOSS_CNT 6                  /* Startup exit on loss or CE */
#define QFAIR_FULL_LOSS_PCT 2
#define QFAIR_FIRST_DRAIN_MS 2000              /* local clock: first drain */
#define QFAIR_NEAR_MIN_US 500                  /* local clock: near-min sample */
#define QFAIR_SETTLED_MS 64                    /* a drain's noise readings: its last 64 ms */

/*
 * qfair.rules_off: a bit per rule of the law, each switching that rule off,
 * for ablation experiments (docs/algorithms.md, "Ablation switches"); 0, the
 * default, is the whole law. Read where a round, a drain or an event reads
 * the tunables anyway, never per ACK. The names are the loader's
 * (QFAIR_RULES in loader/src/tunables.rs, held to these by a test).
 */
#define QF_RULE_NOISE (1U << 0)         /* nu never learned: stays 0 */
#define QF_RULE_EXCESS (1U << 1)        /* eps never learned: stays 0 */
#define QF_RULE_VELOCITY (1U << 2)      /* Eq. 8: v = 0 */
#define QF_RULE_OFFSET (1U << 3)        /* Eq. 8b: o = 0 */
#define QF_RULE_BURST_ROOM (1U << 4)    /* Eq. 1: b = 0 */
#define QF_RULE_PATH_STEP (1U << 5)     /* Eq. 10b (P2) never raises R^ */
#define QF_RULE_LONG_STREAK (1U << 6)   /* Eq. 10's three-drain streak never raises R^ */
#define QF_RULE_DRAIN_SPREAD (1U << 7)  /* a drain's spread s is nu alone, not its own */
#define QF_RULE_CUT_SPACING (1U << 8)   /* Eq. 7: the cut not limited by the time since the last */
#define QF_RULE_LOSS_IN_RATE (1U << 9)  /* Eq. 3: the sample counts delivered packets only */
#define QF_RULE_APP_LIMITED (1U << 10)  /* an app-limited round is skipped whole (before e284b45) */
#define QF_RULE_STARTUP_EXIT (1U << 11) /* no Startup exit on loss or CE marks */
#define QF_RULE_RTO_RESTORE (1U << 12)  /* no cwnd restore on leaving Loss (after an RTO) */
#define QF_RULE_END_CHECK (1U << 13)    /* a competitive drain's verdict without the end test */
#define QF_RULE_SKIP_ROUND (1U << 14)   /* the first round after a drain is measured */
/* Eq. 7's cut with no spacing: a time since the last cut at which
 * min(L, t_cut / 100 ms) = L for every L (L is counted up to 100). */
#define QFAIR_CUT_UNSPACED_US (100 * QF_HALVING_US)

RTTFAIR_TUNABLES_ARRAY(QFAIR_TUNABLES_MAP, struct qfair_tunables);

/* What every ACK reads or writes: the core's cca_hot, 16 bytes. */
struct qfair_hot {
	__u32 w;               /* cwnd target of Eq. 1, packets; valid in cruise */
	__u32 bkt_min_us;      /* lowest RTT sample in the current bucket */
	__u32 next_drain_ms;   /* tcp ms clock of the next drain, 0 = none */
	__u16 bkt_idx;         /* tcp_mstamp >> 13 of the current bucket */
	__u8 flags;            /* QF_* below */
	__u8 burst_room_share_x64; /* share of the three-burst room, x64 (Eq. 1's b) */
};

_Static_assert(sizeof(struct qfair_hot) <= sizeof(((struct rf_bbr *)0)->cca_hot),
	       "qfair_hot must fit the core's cca_hot");

#define QF_CRUISE 0x01     /* past Startup/Drain: the law of Eq. 1 is in force */
#define QF_IN_DRAIN 0x02   /* in a drain (the core's ProbeRTT) */
#define QF_SKIP_ROUND 0x04 /* the round after a drain: not a rate sample */
#define QF_POST_DRAIN 0x08 /* until the second round start after a drain: the
			    * flow's own refill and its echo, no path step */
#define QF_REFILL 0x10     /* a refill that is no drain's (entering cruise,
			    * leaving Loss, restarting after idle), until the
			    * second counted round start: a floor rise voids P2 */
#define QF_REFILL_MORE 0x20 /* QF_REFILL has one more round start to go */

/* Everything else, per flow. */
struct qfair_flow {
	__u64 xhat;                /* Eq. 3, core rate unit */
	__u64 round_mstamp;        /* tcp_mstamp at the measurement interval's start */
	__u64 bkt_sum_us;          /* sum of bucket minima since that start */
	__u64 pacing_before_drain; /* sk_pacing_rate to restore after a drain */
	__u32 round_delivered;     /* tp->delivered at that start */
	__u32 round_lost;          /* tp->lost at that start */
	__u32 round_delivered_ce;  /* tp->delivered_ce at that start */
	__u32 bkt_cnt;
	__u32 last_bkt_min_us;     /* the last completed bucket's minimum */
	__u32 alpha_x1024;         /* Eq. 7 */
	__u32 alpha_d_x1024;       /* Eq. 6 */
	__u32 backlog_x1024;       /* Eq. 5 */
	__u32 d_us;                /* Eq. 4 */
	__u32 q_us;                /* Eq. 5 */
	__u32 drain_min_us;        /* lowest RTT during the current drain */
	__u32 drain_q_before_us;   /* the verdict's q^, set when the drain began */
	__u32 drains_ok;
	__u32 drains_failed;
	__u64 last_cut_mstamp;     /* tcp_mstamp of alpha's last loss cut (Eq. 7) */
	__u16 gain_x256;           /* Eq. 8 */
	__u8 competitive;
	__u8 push_dir;             /* Eq. 8: QF_PUSH_* of the last push */
	__u8 push_rounds;          /* Eq. 8: its velocity's memory */
	__u8 emptied_streak;       /* emptied drains in a row while competitive */
	__u16 last_bkt_idx;        /* P2: the bucket index of last_bkt_min_us */
	__s32 offset_x65536;       /* Eq. 8b: the integral term o, packets x65536 */
	__u32 last_drain_min_us;   /* m of the last drain with a verdict, 0 = none yet;
				    * exported only, the law never reads it */
	struct qf_path_track path; /* P2: the step since the last drain and the low
				    * since it (qf_path_step_track) */
	struct qf_long_track eq10; /* Eq. 10's streak and the floor since the last
				    * drain (qf_long_drain) */
	__u64 drain_bkt_sum_us;    /* bucket minima of the drain's settled part */
	__u32 drain_bkt_cnt;
	__u32 noise_us;            /* nu: the estimator's reading above R^ at an empty queue */
	__u32 excess_us;           /* eps: the drain's mean RTT above its bucket minima */
	__u32 drain_rtt_cnt;       /* the drain's settled part sampled in time: */
	__u64 drain_rtt_sum_us;    /* each of its buckets' successor's first sample */
	__u32 w_before_drain;      /* w, restored when the drain ends */
};

RTTFAIR_SK_STORAGE(qfair_sk, struct qfair_flow, qfair_flow_of);

static __always_inline struct qfair_hot *qfair_hot_of(struct rf_bbr *bbr)
{
	return (struct qfair_hot *)bbr->cca_hot;
}

/* Eq. 1's pipe P in us: the path's minimum, the flow's noise as Eq. 4 reads
 * it, and its mean RTT's excess over Eq. 4's reading (what the window must
 * carry besides the backlog: Little's law on the mean RTT). */
static __always_inline __u32 qfair_pipe_us(const struct rf_bbr *bbr, const struct qfair_flow *qf)
{
	return bbr->min_rtt_us + qf->noise_us + qf->excess_us;
}

/* Each tunable and its default (qfair_tun_*() below). */
#define QFAIR_TUNABLE_DEFAULTS(X)                                                \
	X(alpha0_x1024, QFAIR_DEF_ALPHA0_X1024)                                  \
	X(k_alpha_x1024, QFAIR_DEF_K_ALPHA_X1024)                                \
	X(tau_g_ms, QFAIR_DEF_TAU_G_MS)                                          \
	X(g_cap_x256, QFAIR_DEF_G_CAP_X256)                                      \
	X(drain_period_ms, QFAIR_DEF_DRAIN_PERIOD_MS)                            \
	X(drain_clock, QFAIR_DEF_DRAIN_CLOCK)                                    \
	X(competitive, QFAIR_DEF_COMPETITIVE)                                    \
	X(o_cap_x256, QFAIR_DEF_O_CAP_X256)                                      \
	X(exit_drains, QFAIR_DEF_EXIT_DRAINS)                                    \
	X(drain_phase_ms, QFAIR_DEF_DRAIN_PHASE_MS)                              \
	X(tai_offset_s, QFAIR_DEF_TAI_OFFSET_S)                                  \
	X(rules_off, QFAIR_DEF_RULES_OFF)

/*
 * The tunables in force, read field by field where each is used: `set` is
 * the map's entry (qfair_tunables_set(), once per round or event; NULL: all
 * defaults) and qfair_tun_<field>(set) the field where user space set it
 * (non-zero), else its default: rttfair_cca_maps.h's rule for one field
 * (RTTFAIR_TUNABLE_FIELD). Not a copy of the whole struct: nine
 * values copied up front stay live across the per-round update and cost
 * its stack frame a slot each (the verifier's 512-byte limit is for the
 * whole call chain, and qfair's was at it; docs/results.md, "Stack depth
 * of every CCA program").
 */
RTTFAIR_TUNABLES_SET(qfair_tunables_set, QFAIR_TUNABLES_MAP);
#define QFAIR_TUN(field, def) RTTFAIR_TUNABLE_FIELD(qfair_tun_##field, struct qfair_tunables, field, def)
QFAIR_TUNABLE_DEFAULTS(QFAIR_TUN)
RTTFAIR_TUNABLES_COMPLETE(struct qfair_tunables, QFAIR_TUNABLE_DEFAULTS);

/* Whether the rule of QF_RULE_* bit is in force: not switched off in
 * qfair.rules_off (`set` as above, NULL: all defaults, every rule on). */
static __always_inline bool qfair_rule_on(const struct qfair_tunables *set, __u32 bit)
{
	return !(qfair_tun_rules_off(set) & bit);
}

static __always_inline bool qfair_cruising(const struct rf_bbr *bbr)
{
	return (qfair_hot_of((struct rf_bbr *)bbr)->flags & QF_CRUISE) &&
	       bbr->mode == RTTFAIR_MODE_PROBE_BW;
}

/*
 * Room in cwnd for TSO/GSO bursts beyond w (Eq. 1's b): up to three bursts,
 * as Linux BBR's quantization budget, and only where bursts are bigger than
 * the kernel's minimum of 2 segments (3 segments or more: from ~36 Mbit/s
 * per flow, 3 x 1448 bytes per 1/1024 s, at MSS 1448). Below, a
 * 2-packet allowance per flow would be queue beyond alpha: two flows would
 * hold 6 packets in a 3-packet buffer (0.1 BDP at 20 Mbit/s) and lose 15% of
 * their packets (measured).
 *
 * Why three, not one: on a microsecond path (veth, a LAN) one burst is 64 KB,
 * 45 segments, far more than x^ R^ (6 packets at 6 us): the sender
 * must have the next burst ready while one is with the receiver and one is
 * being acknowledged. With one burst of room cwnd was 65-70 packets and one
 * flow reached 0.71x native bbr (docs/results.md).
 *
 * Only where the path is short against a burst: all three bursts while x^ R^
 * holds at most one, none once it holds two (qf_burst_room_share_x64, set
 * once per round in burst_room_share_x64). A window-limited flow's room is
 * standing queue; given by rate alone (as until issue 14's 100 Mbit/s runs),
 * it handed the flow above the 2-segment threshold 3 ms of queue that held
 * the other flow below it (20 vs 2 ms at 100 Mbit/s: Jain 0.679). g's
 * target includes the room (Eq. 8), so where it is given it is not
 * "corrected" away.
 *
 * The burst size is Linux BBR's estimate of the kernel's (bbr_tso_segs_goal:
 * 1 ms of data by sk_pacing_shift, at most 64 KB; the kernel's own
 * tcp_tso_autosize also adds gso_max_size >> (min RTT / 512 us), a segment
 * or more on paths under ~3 ms, which this leaves out) at the lower of the
 * pacing rate and BtlBw, the core's max-filtered *delivery* rate. Not the
 * pacing rate alone: the pacer runs on w plus this room (Eq. 9), so a room
 * sized by the pacer feeds itself. Measured: 20 vs 2 ms at 0.1 BDP,
 * the 2 ms flow paced at 720 Mbit/s with 130 packets of room and the 20 ms
 * flow starved (96% of its packets retransmitted). BtlBw is bounded by
 * what the path delivers, so at 20 Mbit/s the room stays 0. The share of
 * the room is judged at x^ instead (qfair_burst_segs_at_xhat), so that it
 * depends on the path, not on the max filter's lead over x^.
 */
static __always_inline __u32 qfair_burst_segs(struct sock *sk, const struct rf_bbr *bbr)
{
	__u64 rate = rf_min(bbr_btlbw_bytes_per_sec(sk, bbr), (__u64)sk->sk_pacing_rate);
	__u64 bytes = rf_min(rate >> sk->sk_pacing_shift,
			     (__u64)(GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER_EST));

	return (__u32)(bytes / (tcp_sk(sk)->mss_cache ?: 1));
}

/* Per ACK: Eq. 1's b, the burst room in cwnd in packets (three bursts times
 * this round's share of the room). */
static __always_inline __u32 qfair_burst_room_pkts(struct sock *sk, const struct rf_bbr *bbr)
{
	__u32 share_x64 = qfair_hot_of((struct rf_bbr *)bbr)->burst_room_share_x64;

	return share_x64 ? qf_burst_room(qfair_burst_segs(sk, bbr), share_x64) : 0;
}

/*
 * Segments in one of the kernel's bursts at the smoothed rate x^ (1 ms of
 * it by sk_pacing_shift, at most 64 KB): what the pipe x^ R^ is compared
 * with to decide the room's share. Not the size the room is counted in:
 * that is qfair_burst_segs'.
 *
 * Why x^ and not qfair_burst_segs' max-filtered BtlBw: with the same rate on
 * both sides, pipe / burst = R^ / (burst time), so the share depends on the
 * path alone (none for R^ >= ~2 ms below 500 Mbit/s) and not on how far the
 * max filter runs ahead of x^. Measured (issue 14, 20 vs 2 ms at 100 Mbit/s,
 * 0.5 BDP, commit df71f9f): with BtlBw in the ratio, the 2 ms flow, right at
 * the 2-burst edge, got room after a drain whenever BtlBw read above x^, its
 * rate rose, and the room with it: 20 vs 2 ms went from 48/47 to 13-17/72
 * Mbit/s at t = 40 s and stayed there (Jain 0.902).
 */
static __always_inline __u32 qfair_burst_segs_at_xhat(struct sock *sk, __u64 xhat)
{
	__u64 segs = qf_pkts_x1024(xhat, USEC_PER_SEC >> sk->sk_pacing_shift) / QF_UNIT;
	__u64 cap = (GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER_EST) / (tcp_sk(sk)->mss_cache ?: 1);

	return (__u32)rf_min(segs, cap);
}

/* Per round: the room's share (x64) for the flow's pipe x^ R^ against a burst at x^
 * (none with qfair.rules_off's burst_room: b = 0 until the next round). */
static __always_inline void qfair_set_burst_room_share(struct sock *sk, const struct rf_bbr *bbr,
						       struct qfair_hot *hot, __u64 xhat,
						       const struct qfair_tunables *set)
{
	__u64 pipe_x1024 = qf_pkts_x1024(xhat, bbr->min_rtt_us);

	if (!qfair_rule_on(set, QF_RULE_BURST_ROOM)) {
		hot->burst_room_share_x64 = 0;
		return;
	}
	hot->burst_room_share_x64 =
		(__u8)qf_burst_room_share_x64(pipe_x1024, qfair_burst_segs_at_xhat(sk, xhat));
}

/* The tcp ms clock of the next drain. Wall clock: the next UTC multiple of
 * the period plus the phase, the same instant for every qfair sender whose
 * clock agrees. UTC is CLOCK_TAI less the host's TAI offset (the loader
 * writes it from adjtimex: chrony sets 37 s, timesyncd leaves 0), so hosts
 * with different offsets still drain together. */
static __always_inline __u32 qfair_next_drain_ms(__u32 now_ms, const struct qfair_tunables *set,
						 __u32 local_delay_ms)
{
	__u64 period_ns, utc, to_next_ms;

	if (qfair_tun_drain_clock(set) == QFAIR_CLOCK_LOCAL)
		return (now_ms + local_delay_ms) ?: 1;
	period_ns = (__u64)qfair_tun_drain_period_ms(set) * NSEC_PER_MSEC;
	utc = bpf_ktime_get_tai_ns() - (__u64)qfair_tun_tai_offset_s(set) * 1000000000ULL -
	      (__u64)qfair_tun_drain_phase_ms(set) * NSEC_PER_MSEC;
	to_next_ms = (period_ns - utc % period_ns) / NSEC_PER_MSEC;
	return (now_ms + (__u32)to_next_ms) ?: 1;
}

/*
 * Start the interval the next per-round update measures: Eq. 3's sending
 * rate counts tp->delivered + tp->lost from here, Eq. 4's D averages the
 * bucket minima closed from here.
 */
static __always_inline void qfair_start_measurement_interval(struct tcp_sock *tp,
							      struct qfair_flow *qf)
{
	qf->round_mstamp = tp->tcp_mstamp;
	qf->round_delivered = tp->delivered;
	qf->round_lost = tp->lost;
	qf->round_delivered_ce = tp->delivered_ce;
	qf->bkt_sum_us = 0;
	qf->bkt_cnt = 0;
}

/* The interval the per-round update measures: its length, and the packets
 * delivered and lost in it. */
static __always_inline __u64 qfair_interval_us(const struct tcp_sock *tp,
					       const struct qfair_flow *qf)
{
	return tp->tcp_mstamp - qf->round_mstamp;
}

static __always_inline __u32 qfair_interval_delivered(const struct tcp_sock *tp,
						      const struct qfair_flow *qf)
{
	return tp->delivered - qf->round_delivered;
}

static __always_inline __u32 qfair_interval_lost(const struct tcp_sock *tp,
						 const struct qfair_flow *qf)
{
	return tp->lost - qf->round_lost;
}

/* The interval's congestion marks for Eq. 7 and 8b: lost packets and
 * CE-marked ones (tp->delivered_ce counts the packets an ECE-flagged ACK
 * delivered). A mark says what a loss says, a queue above what the
 * bottleneck keeps, without the loss. */
static __always_inline __u32 qfair_interval_marks(const struct tcp_sock *tp,
						  const struct qfair_flow *qf)
{
	return qfair_interval_lost(tp, qf) + (tp->delivered_ce - qf->round_delivered_ce);
}

/* Startup, per round: the exit on congestion marks (>= 6 packets lost or
 * CE-marked and > 2% of the round's lost + delivered), after BBRv3's
 * full-loss exit, counted in packets and against the round's sent
 * packets. A CE mark says what a loss says, as in Eq. 7: behind a marking
 * bottleneck nothing is lost, and Startup would otherwise hold its queue
 * until BBR's bandwidth plateau. */
static __always_inline void qfair_startup_round(struct tcp_sock *tp, struct rf_bbr *bbr,
						struct qfair_flow *qf)
{
	__u32 marks = qfair_interval_marks(tp, qf);
	__u32 sent = qfair_interval_delivered(tp, qf) + qfair_interval_lost(tp, qf);

	/* (the tunables read only when the exit is due: qfair.rules_off's
	 * startup_exit leaves Startup to BBR's bandwidth plateau) */
	if (marks >= QFAIR_FULL_LOSS_CNT &&
	    (__u64)marks * 100 > (__u64)sent * QFAIR_FULL_LOSS_PCT &&
	    qfair_rule_on(qfair_tunables_set(), QF_RULE_STARTUP_EXIT))
		bbr->full_bw_reached = 1;
	qfair_start_measurement_interval(tp, qf);
}

/* Leaving Drain for ProbeBW: the law takes over from BBR's gains. Once per
 * flow; a subprogram of its own so that its frame is not the per-round
 * update's (the stack the verifier counts is per chain of calls). */
static __noinline void qfair_enter_cruise(struct sock *sk, struct rf_bbr *bbr,
					  struct qfair_flow *qf)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct qfair_hot *hot = qfair_hot_of(bbr);
	const struct qfair_tunables *set = qfair_tunables_set();

	qf->xhat = bbr_btlbw(bbr);
	qf->alpha_d_x1024 = qf_alpha_d_x1024(qf->xhat, qfair_tun_alpha0_x1024(set),
					     qfair_tun_k_alpha_x1024(set));
	qf->alpha_x1024 = qf->alpha_d_x1024;
	qf->gain_x256 = QF_GAIN_UNIT;
	hot->w = qf_target_cwnd(qf->xhat, bbr->min_rtt_us, QF_GAIN_UNIT, qf->alpha_x1024);
	qfair_set_burst_room_share(sk, bbr, hot, qf->xhat, set);
	qf->push_dir = QF_PUSH_NONE;
	qf->push_rounds = 0;
	qf->offset_x65536 = 0;
	qf->noise_us = 0;
	qf->excess_us = 0;
	qf_path_step_forget(&qf->path); /* Startup's queue is not a path */
	/* BBR's Drain was a drain: the rise from it to the cruise window's
	 * refill is the flow's own */
	hot->flags |= QF_CRUISE | QF_REFILL | QF_REFILL_MORE;
	hot->next_drain_ms = qfair_next_drain_ms(tcp_now_ms(tp), set, QFAIR_FIRST_DRAIN_MS);
	qfair_start_measurement_interval(tp, qf);
}

/*
 * Leave competitive mode: alpha back within alpha_d at once (what it grew
 * above alpha_d was for a queue someone else held). The one exit, taken on a
 * drain that emptied the queue and on qfair.competitive = 2.
 */
static __always_inline void qfair_leave_competitive(struct qfair_flow *qf)
{
	qf->competitive = 0;
	qf->alpha_x1024 = rf_min(qf->alpha_x1024, qf->alpha_d_x1024);
}

/* Competitive mode after a drain's verdict (QF_VERDICT_*), or after a
 * per-round update (QF_VERDICT_NONE: only the setting, qfair.competitive,
 * can end it there). */
static __always_inline void qfair_update_competitive(struct qfair_flow *qf, __u32 competitive,
						     __u32 verdict)
{
	if (qf_competitive_next(qf->competitive, competitive == QFAIR_COMPETITIVE_ON, verdict))
		qf->competitive = 1;
	else if (qf->competitive)
		qfair_leave_competitive(qf);
}

/*
 * Eq. 8b's integral term o for this round. A round with a loss drops o to 0
 * and o stays 0 until the flow has gone QFAIR_INT_QUIET_US of wall clock
 * without a loss cut: in the loss regime (a shallow buffer, Eq. 7 cutting
 * alpha and growing it back) a^ below alpha means a buffer too small to
 * hold it, and o would add the very queue Eq. 7 is taking away. A
 * competitive flow (a queue someone else holds) has no o either: its alpha
 * grows on its own. |o| at most o_cap x alpha (qfair.o_cap, default 1/2).
 */
#define QFAIR_INT_QUIET_US 1000000ULL
static __always_inline __s32 qfair_offset(const struct qfair_flow *qf, __u32 target_x1024,
					  __u64 dt_us, __u32 lost, __u64 since_cut_us,
					  const struct qfair_tunables *set)
{
	if (lost || qf->competitive || since_cut_us < QFAIR_INT_QUIET_US ||
	    !qfair_rule_on(set, QF_RULE_OFFSET))
		return 0;
	return qf_offset_step_x65536(qf->offset_x65536, target_x1024, qf->backlog_x1024, dt_us,
				     qf_offset_max_x1024(qf->alpha_x1024, qfair_tun_o_cap_x256(set)));
}

/* alpha + o in packets x1024 (Eq. 1 with Eq. 8b), at least 0: with the
 * default o_cap of 1/2 it stays >= alpha/2; an o_cap above 1 lets o reach
 * below -alpha, where the window gets no backlog at all (w = g x^ R^). */
static __always_inline __u32 qfair_alpha_plus_offset(const struct qfair_flow *qf)
{
	__s64 a = (__s64)qf->alpha_x1024 + ((__s64)qf->offset_x65536 >> QF_INT_FINE_SHIFT);

	return a > 0 ? (__u32)a : 0;
}

/*
 * The per-round update (qfair_update_round, below) calls three BPF
 * subprograms in turn, estimates (Eq. 3-7), window (Eq. 8, 8b and 1) and
 * pacing (Eq. 9): the verifier refuses a program whose frames along a chain
 * of calls sum to more than 512 bytes, cong_control's own frame was 384 (the
 * core's 288-byte export record, since moved off the stack: 96 now,
 * docs/results.md, "The export record off the stack"), and as one
 * subprogram the update's live values (x^, D, the tunables, the terms of
 * Eq. 7-9) took 128 bytes of spill slots: the chain was at exactly 512
 * (docs/results.md, "Stack depth of every CCA program"). Each part holds
 * only its own values. What a part
 * needs from the one before is in qf (x^, D, q^, a^, alpha) and hot (w),
 * or passed (b); the interval's dt, delivered and lost each reads from the
 * same fields, which no part writes before the last one starts the next
 * interval. Each tunable is still read once per round, by the part that
 * uses it.
 */

/* The per-round update's first part: Eq. 3-7, the estimates and alpha. */
static __noinline void qfair_round_estimates(struct sock *sk, struct rf_bbr *bbr,
					     struct qfair_flow *qf)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct qfair_hot *hot = qfair_hot_of(bbr);
	const struct qfair_tunables *set = qfair_tunables_set();
	__u64 dt_us = qfair_interval_us(tp, qf), sample, alpha_hi;
	__u32 delivered = qfair_interval_delivered(tp, qf), lost = qfair_interval_lost(tp, qf);
	__u32 marks = qfair_interval_marks(tp, qf), rtprop = bbr->min_rtt_us, d_us, ai;

	/* Eq. 3: the rate the flow sends at over the interval (delivered plus
	 * lost), smoothed. With the delivery rate alone, a loss rate p leaves
	 * the fixed point at x (q + p R) = alpha: random loss would take p R
	 * from the long flow's share (10 vs 50 ms at 1% loss: 11.9 vs 7.1). */
	sample = ((__u64)(delivered + (qfair_rule_on(set, QF_RULE_LOSS_IN_RATE) ? lost : 0))
		  << BW_SCALE) / dt_us;
	qf->xhat = qf_rate_ewma(qf->xhat, sample);

	/* Eq. 4-5: standing RTT, queueing delay, own backlog. */
	if (qf->bkt_cnt)
		d_us = (__u32)(qf->bkt_sum_us / qf->bkt_cnt);
	else
		d_us = qf->last_bkt_min_us ?: hot->bkt_min_us;
	if (d_us == ~0U || !d_us)
		d_us = rtprop;
	qf->d_us = d_us;
	rtprop += qf->noise_us; /* the flow's own noise is no queue */
	qf->q_us = d_us > rtprop ? d_us - rtprop : 0;
	qf->backlog_x1024 = (__u32)rf_min(qf_pkts_x1024(qf->xhat, qf->q_us), 0xffffffffULL);

	/* Eq. 6-7: the backlog target. Competitive mode ends here, before it
	 * widens alpha's range, if the operator has since set
	 * qfair.competitive = 2. */
	qf->alpha_d_x1024 = qf_alpha_d_x1024(qf->xhat, qfair_tun_alpha0_x1024(set),
					     qfair_tun_k_alpha_x1024(set));
	qfair_update_competitive(qf, qfair_tun_competitive(set), QF_VERDICT_NONE);
	alpha_hi = qf->alpha_d_x1024;
	ai = QFAIR_AI_X1024;
	if (qf->competitive) {
		alpha_hi = QFAIR_COMPETITIVE_ALPHA_MAX_X1024;
		ai = qf_competitive_ai_x1024(bbr->min_rtt_us);
	}
	/* Eq. 7's cut is limited by the time since the last cut, not by this
	 * round's length: the same for every RTT (qfair.rules_off's
	 * cut_spacing: not limited, L halvings whatever the time). */
	qf->alpha_x1024 = qf_alpha_step_x1024(qf->alpha_x1024, dt_us, marks, ai,
					      (__u32)rf_min(alpha_hi, 0xffffffffULL),
					      qfair_rule_on(set, QF_RULE_CUT_SPACING)
						      ? tp->tcp_mstamp - qf->last_cut_mstamp
						      : QFAIR_CUT_UNSPACED_US);
	if (marks)
		qf->last_cut_mstamp = tp->tcp_mstamp;
}

/*
 * The per-round update's second part: Eq. 8 and 8b from the first part's
 * estimates in qf, and Eq. 1's window. Returns this round's burst room b in
 * packets, which the pacing rate needs too.
 */
static __noinline __u32 qfair_round_window(struct sock *sk, struct rf_bbr *bbr,
					   struct qfair_flow *qf, bool app_limited)
{
	struct tcp_sock *tp = tcp_sk(sk);
	const struct qfair_tunables *set = qfair_tunables_set();
	__u32 rtprop = qfair_pipe_us(bbr, qf), room_pkts, target, dir;
	__u64 pipe;

	/* Eq. 8-9: correction, window, pacing. The backlog the window really
	 * holds is alpha plus the burst room in cwnd: g steers to that, so
	 * the burst room is never "corrected" in proportion to the RTT. g's
	 * step is at most half the error in packets, doubling while the error
	 * keeps its sign (velocity). The pacer runs at 1.1 x the whole window
	 * (w and its burst room) per D: paced on w alone it capped a
	 * microsecond flow below what its window allows (w = 24-34 packets
	 * beside 135 of burst room). */
	pipe = qf_pkts_x1024(qf->xhat, rtprop);
	qfair_set_burst_room_share(sk, bbr, qfair_hot_of(bbr), qf->xhat, set);
	room_pkts = qfair_burst_room_pkts(sk, bbr);
	target = qf->alpha_x1024 + room_pkts * (__u32)QF_UNIT; /* alpha* = alpha + b */
	dir = qf_push_dir(target, qf->backlog_x1024);
	qf->push_rounds = (__u8)qf_push_rounds(qf->push_dir, qf->push_rounds, dir);
	if (dir != QF_PUSH_NONE)
		qf->push_dir = (__u8)dir;
	qf->offset_x65536 = qfair_offset(qf, target, qfair_interval_us(tp, qf),
					 qfair_interval_marks(tp, qf),
					 tp->tcp_mstamp - qf->last_cut_mstamp, set);
	qf->gain_x256 = (__u16)qf_gain_x256(qf->d_us, qfair_tun_tau_g_ms(set) * 1000, target,
					    qf->backlog_x1024, qfair_tun_g_cap_x256(set), pipe,
					    qfair_rule_on(set, QF_RULE_VELOCITY)
						    ? qf_velocity_shift(qf->push_rounds)
						    : 0);
	/* an app-limited round lowers w, never raises it (qf_round_cwnd) */
	qfair_hot_of(bbr)->w = qf_round_cwnd(qfair_hot_of(bbr)->w,
					     qf_target_cwnd(qf->xhat, rtprop, qf->gain_x256,
							    qfair_alpha_plus_offset(qf)),
					     app_limited);
	return room_pkts;
}

/*
 * The per-round update's last part: Eq. 9's pacing rate for the window w
 * and burst room the parts before set, the local drain clock, and the next
 * interval's start.
 */
static __noinline void qfair_round_pacing(struct sock *sk, struct rf_bbr *bbr,
					  struct qfair_flow *qf, __u32 room_pkts)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct qfair_hot *hot = qfair_hot_of(bbr);
	const struct qfair_tunables *set = qfair_tunables_set();
	__u32 rtprop = bbr->min_rtt_us;
	__u64 pace;

	pace = qf_pacing_rate(hot->w + room_pkts, qf->d_us, tp->mss_cache);
	if (pace)
		sk->sk_pacing_rate = rf_min(pace, (__u64)sk->sk_max_pacing_rate);

	/* Local drain clock: a near-minimum RTT in this bucket postpones it. */
	if (qfair_tun_drain_clock(set) == QFAIR_CLOCK_LOCAL &&
	    hot->bkt_min_us <= rtprop + rf_max((__u32)QFAIR_NEAR_MIN_US, rtprop / 16)) {
		__u32 period_ms = qfair_tun_drain_period_ms(set);

		hot->next_drain_ms = qfair_next_drain_ms(tcp_now_ms(tp), set, period_ms);
	}
	qfair_start_measurement_interval(tp, qf);
}

/*
 * Once per round trip (and at most once per millisecond): Eq. 3-9 and 8b,
 * and the local drain clock. A BPF subprogram of its own, so its arithmetic
 * is verified once, not per path of the per-ACK code; it decides whether
 * the round is measured and leaves the law to the three parts above.
 */
static __noinline void qfair_update_round(struct sock *sk, struct rf_bbr *bbr,
					  struct qfair_flow *qf, bool app_limited)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct qfair_hot *hot = qfair_hot_of(bbr);
	const struct qfair_tunables *set;
	__u32 rtprop = bbr->min_rtt_us;

	if (!(hot->flags & QF_CRUISE)) {
		if (bbr->mode == RTTFAIR_MODE_STARTUP) {
			qfair_startup_round(tp, bbr, qf);
		} else if (bbr->mode == RTTFAIR_MODE_PROBE_BW && bbr->full_bw_reached &&
			   rtprop != ~0U) {
			qfair_enter_cruise(sk, bbr, qf);
		}
		return;
	}
	if (bbr->mode != RTTFAIR_MODE_PROBE_BW)
		return; /* a drain: measured when it ends */
	set = qfair_tunables_set();
	if (hot->flags & QF_SKIP_ROUND) {
		hot->flags &= ~QF_SKIP_ROUND;
		/* qfair.rules_off's skip_round measures it; it still is no
		 * counted round start for the refill flags below */
		if (qfair_rule_on(set, QF_RULE_SKIP_ROUND)) {
			qfair_start_measurement_interval(tp, qf);
			return;
		}
	} else {
		hot->flags &= ~QF_POST_DRAIN; /* the second round start: steps count again */
		hot->flags &= ~(hot->flags & QF_REFILL_MORE ? QF_REFILL_MORE : QF_REFILL);
	}
	if (qfair_interval_us(tp, qf) < QFAIR_MIN_ROUND_US)
		return; /* let the interval grow past 1 ms */
	/* qfair.rules_off's app_limited: such a round is skipped whole, as
	 * until e284b45 */
	if (rtprop == ~0U || !rtprop ||
	    (app_limited && !qfair_rule_on(set, QF_RULE_APP_LIMITED))) {
		qfair_start_measurement_interval(tp, qf);
		return;
	}
	qfair_round_estimates(sk, bbr, qf);
	qfair_round_pacing(sk, bbr, qf, qfair_round_window(sk, bbr, qf, app_limited));
}

/*
 * Entering a drain: half the rate; cca_probe_rtt_cwnd (below) halves the
 * window. The verdict's margin is half of q^ now, at most half of
 * (alpha_d + b) / x^ (qf_verdict_queue_us): the queue qfair flows alone
 * would leave, not one someone else's queue, or the flow's own competitive
 * backlog, inflates. x^, alpha_d and b are the last round's (no round is
 * measured during a drain).
 *
 * The drain's minimum RTT is kept without a lookup per ACK: the current
 * bucket restarts here with this ACK's sample alone (rtt_us, 0: none), each
 * bucket that closes during the drain is folded into drain_min_us
 * (qfair_close_bucket), and the drain's end adds the bucket still open
 * (cca_on_rate_sample). The bucket's earlier, pre-drain samples are lost to
 * Eq. 4, but nothing reads them: the interval they belong to is discarded
 * (QF_SKIP_ROUND after the drain) and a drain outlasts a bucket (200 ms).
 */
static __always_inline void qfair_begin_drain(struct sock *sk, struct rf_bbr *bbr,
					      struct qfair_hot *hot, struct qfair_flow *qf,
					      __u32 rtt_us)
{
	__u32 alpha_star_d = qf->alpha_d_x1024 + qfair_burst_room_pkts(sk, bbr) * (__u32)QF_UNIT;

	hot->flags |= QF_IN_DRAIN;
	qf->drain_min_us = ~0U;
	qf->drain_bkt_sum_us = 0;
	qf->drain_bkt_cnt = 0;
	qf->drain_rtt_sum_us = 0;
	qf->drain_rtt_cnt = 0;
	/* the drain holds half the pipe, whatever alpha (cca_probe_rtt_cwnd) */
	qf->w_before_drain = hot->w;
	hot->w = (__u32)rf_min(qf_pkts_x1024(qf->xhat, qfair_pipe_us(bbr, qf)) / QF_UNIT,
			       0xffffffffULL);
	hot->bkt_min_us = rtt_us ?: ~0U;
	qf->drain_q_before_us =
		qf_verdict_queue_us(qf->q_us, qf_default_backlog_delay_us(alpha_star_d, qf->xhat));
	qf->pacing_before_drain = sk->sk_pacing_rate;
	sk->sk_pacing_rate = sk->sk_pacing_rate / 2;
}

/*
 * Eq. 10, at a drain's end with its minimum m: R^ raised to a longer path's
 * minimum. Returns whether this drain raised it. At the first drain by P2
 * (qf_path_step_held: a step of the floor since the previous drain, from
 * bucket minima, that explains the excess and held; never while competitive,
 * where the baseline is someone else's queue); otherwise from drain minima
 * alone: three drains in a row whose minimum sits above R^ by more than
 * the drain's spread and 2 ms, whose minima agree within 10% and with the floor held
 * between them (qf_long_streak_next) move R^ up to the lowest of them (the
 * streak is kept in qf->eq10, qf_long_drain). A
 * drain removes the flow's own backlog, so the test is on what is left; it
 * does not depend on the drain's verdict, whose margin (half the queue
 * estimate) a stale R^ inflates: with the verdict in the loop, a failed
 * drain made the flow competitive, its own queue then passed the next drain
 * and the streak never reached three (issue 14, path RTT change).
 */
static __always_inline bool qfair_raise_min_rtt_on_longer_path(struct rf_bbr *bbr,
								struct qfair_flow *qf, __u32 m,
								__u32 spread,
								const struct qfair_tunables *set)
{
	__u32 floor = bbr->min_rtt_us + spread, raise_us;

	if (!qf->competitive && qfair_rule_on(set, QF_RULE_PATH_STEP) &&
	    qf_path_step_held(m, floor, qf->path.step_us, qf->path.low_us)) {
		bbr->min_rtt_us = m; /* P2: the step that explains the excess held */
		qf_long_reset(&qf->eq10);
		return true;
	}
	if (!qfair_rule_on(set, QF_RULE_LONG_STREAK)) {
		/* qfair.rules_off's long_streak: no streak, a fresh floor window */
		qf_long_reset(&qf->eq10);
		return false;
	}
	raise_us = qf_long_drain(&qf->eq10, m, floor);
	if (!raise_us)
		return false;
	bbr->min_rtt_us = raise_us;
	return true;
}

/*
 * A drain's verdict as competitive mode takes it: with qfair.exit_drains = n
 * an emptied drain ends the mode only as the n-th in a row (cubic's queue,
 * shrunk while qfair was competitive, can pass one; qf_exit_verdict).
 * n = 1: as before.
 */
static __always_inline __u32 qfair_exit_verdict(struct qfair_flow *qf, __u32 exit_drains,
						 __u32 verdict)
{
	qf->emptied_streak = (__u8)qf_emptied_streak(qf->emptied_streak, qf->competitive, verdict);
	return qf_exit_verdict(verdict, qf->emptied_streak, exit_drains);
}

/* A drain ended: did the queue empty? Then schedule the next one. */
static __always_inline void qfair_end_drain(struct sock *sk, struct rf_bbr *bbr,
					    struct qfair_hot *hot, struct qfair_flow *qf)
{
	const struct qfair_tunables *set = qfair_tunables_set();
	__u32 m = qf->drain_min_us, now = tcp_now_ms(tcp_sk(sk));
	__u32 competitive = qfair_tun_competitive(set), period_ms = qfair_tun_drain_period_ms(set);
	__u32 spread;
	bool raised;

	hot->flags &= ~QF_IN_DRAIN;
	if (qf->w_before_drain)
		hot->w = qf->w_before_drain;
	/* set whatever qfair.rules_off's skip_round: the first round start
	 * after the drain is not counted for QF_POST_DRAIN either way, and
	 * qfair_update_round reads the bit there, where it skips */
	hot->flags |= QF_SKIP_ROUND | QF_POST_DRAIN;
	if (qf->pacing_before_drain)
		sk->sk_pacing_rate = qf->pacing_before_drain;
	hot->next_drain_ms = qfair_next_drain_ms(now, set, period_ms);
	if (m == ~0U) {
		/* no RTT sample in the drain: no verdict */
		qf_path_step_forget(&qf->path);
		qfair_update_competitive(qf, competitive, QF_VERDICT_NONE);
		return;
	}
	qf->last_drain_min_us = m;
	/* what the drain may read above R^ with the queue empty: its own
	 * spread, or the noise earlier emptied drains measured (a drain's
	 * lowest sample on a noisy path lands anywhere in that noise) */
	spread = qfair_rule_on(set, QF_RULE_DRAIN_SPREAD)
			 ? rf_max(qf_drain_spread_us(qf->drain_bkt_sum_us, qf->drain_bkt_cnt, m),
				  qf->noise_us)
			 : qf->noise_us;
	raised = qfair_raise_min_rtt_on_longer_path(bbr, qf, m, spread, set);
	qf_path_step_forget(&qf->path); /* P2 looks at steps since the previous drain */

	/* A new, longer R^ is this drain's minimum: the queue did empty. A
	 * competitive flow's drain also needs the queue still empty at its end
	 * (the last 8-16 ms: this bucket and the last closed one; not with
	 * qfair.rules_off's end_check). */
	if (raised ||
	    qf_drain_emptied(m, rf_min(qf->last_bkt_min_us, hot->bkt_min_us), bbr->min_rtt_us,
			     qf->drain_q_before_us, spread,
			     qf->competitive && qfair_rule_on(set, QF_RULE_END_CHECK))) {
		qf->drains_ok++;
		if (qfair_rule_on(set, QF_RULE_NOISE))
			qf->noise_us = qf_noise_next_us(qf->noise_us, qf->drain_bkt_sum_us,
							qf->drain_bkt_cnt, bbr->min_rtt_us);
		if (qf->drain_bkt_cnt && qfair_rule_on(set, QF_RULE_EXCESS))
			qf->excess_us = qf_noise_next_us(qf->excess_us, qf->drain_rtt_sum_us,
							 qf->drain_rtt_cnt,
							 (__u32)(qf->drain_bkt_sum_us /
								 qf->drain_bkt_cnt));
		qfair_update_competitive(qf, competitive,
					 qfair_exit_verdict(qf, qfair_tun_exit_drains(set),
							    QF_VERDICT_EMPTIED));
		return;
	}
	qf->drains_failed++;
	qfair_update_competitive(qf, competitive,
				 qfair_exit_verdict(qf, qfair_tun_exit_drains(set),
						    QF_VERDICT_FOUND_QUEUE));
}

/* Fold the finished bucket's minimum into the round's sum (Eq. 4), into
 * Eq. 10's floor since the last drain (qf_long_bucket: the lowest closed
 * bucket, eq10.low_us, in drains too), during a drain into the drain's
 * minimum, and outside a drain and its refill into P2's step tracker
 * (qf_path_step_track, with the gap since the previous closed bucket).
 * Returns the flow's qfair_sk (NULL
 * when the bucket was empty or there is none), so that the same ACK need
 * not look it up again. */
static __always_inline struct qfair_flow *qfair_close_bucket(struct sock *sk,
							     const struct rf_bbr *bbr,
							     struct qfair_hot *hot, __u32 next_rtt_us)
{
	struct qfair_flow *qf;

	if (hot->bkt_min_us == ~0U || !hot->bkt_min_us)
		return NULL;
	qf = qfair_flow_of(sk, false);
	if (!qf)
		return NULL;
	qf->bkt_sum_us += hot->bkt_min_us;
	qf->bkt_cnt++;
	qf_long_bucket(&qf->eq10, hot->bkt_min_us);
	if (!(hot->flags & (QF_IN_DRAIN | QF_POST_DRAIN)))
		qf_path_step_track(&qf->path, qf->last_bkt_min_us, hot->bkt_min_us,
				   (__u32)(__u16)(hot->bkt_idx - qf->last_bkt_idx) << QF_BUCKET_SHIFT,
				   !(hot->flags & QF_REFILL));
	qf->last_bkt_min_us = hot->bkt_min_us;
	qf->last_bkt_idx = hot->bkt_idx;
	if (hot->flags & QF_IN_DRAIN) {
		qf->drain_min_us = rf_min(qf->drain_min_us, hot->bkt_min_us);
		/* settled: a round since the flow's inflight came down to the
		 * drain's window (samples of packets sent with its backlog gone),
		 * and the dwell's last QFAIR_SETTLED_MS (what every flow's backlog
		 * has had longest to leave); a long path may have none */
		if (bbr->probe_rtt_done_ms && bbr->probe_rtt_round_done &&
		    !rf_before(tcp_now_ms(tcp_sk(sk)), bbr->probe_rtt_done_ms - QFAIR_SETTLED_MS)) {
			qf->drain_bkt_sum_us += hot->bkt_min_us;
			qf->drain_bkt_cnt++;
			/* the next bucket's first sample: the RTT sampled in time (eps) */
			qf->drain_rtt_sum_us += next_rtt_us;
			qf->drain_rtt_cnt++;
		}
	}
	return qf;
}

static __always_inline void cca_init(struct sock *sk, struct rf_bbr *bbr)
{
	struct qfair_flow *qf = qfair_flow_of(sk, true);
	struct qfair_hot *hot = qfair_hot_of(bbr);

	hot->bkt_min_us = ~0U;
	hot->bkt_idx = (__u16)(tcp_sk(sk)->tcp_mstamp >> QF_BUCKET_SHIFT);
	if (qf) {
		__builtin_memset(qf, 0, sizeof(*qf));
		qf->gain_x256 = QF_GAIN_UNIT;
		qf_path_step_forget(&qf->path);
		qf_long_reset(&qf->eq10);
		qfair_start_measurement_interval(tcp_sk(sk), qf);
	}
}

static __always_inline void cca_release(struct sock *sk, struct rf_bbr *bbr)
{
	bpf_sk_storage_delete(&qfair_sk, sk);
}

static __always_inline void cca_on_rate_sample(struct sock *sk, struct rf_bbr *bbr,
					       const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct qfair_hot *hot = qfair_hot_of(bbr);
	struct qfair_flow *qf = NULL;
	__u32 rtt_us = rs->rtt_us > 0 ? (__u32)rs->rtt_us : 0;
	__u32 open_min_us = hot->bkt_min_us; /* the open bucket without this ACK */
	__u16 bkt;

	/* Eq. 4, per ACK: the minimum RTT of the current 8 ms bucket. */
	if (rtt_us) {
		bkt = (__u16)(tp->tcp_mstamp >> QF_BUCKET_SHIFT);
		if (bkt != hot->bkt_idx) {
			/* Back from idle (the core clears idle_restart later on
			 * this ACK): the next bucket is measured across the
			 * silence and the pipe refills at BtlBw. */
			if (bbr->idle_restart)
				hot->flags |= QF_REFILL | QF_REFILL_MORE;
			qf = qfair_close_bucket(sk, bbr, hot, rtt_us);
			open_min_us = ~0U;
			hot->bkt_idx = bkt;
			hot->bkt_min_us = rtt_us;
		} else if (rtt_us < hot->bkt_min_us) {
			hot->bkt_min_us = rtt_us;
		}
	}

	if (hot->flags & QF_CRUISE) {
		/* R^ is a running minimum; drains, not the 10 s expiry, refresh it. */
		bbr->min_rtt_stamp_ms = tcp_now_ms(tp);
		/* A drain's ACKs (the hook sees the mode of the ACK before): its
		 * samples go to the bucket, which qfair_close_bucket folds into
		 * the drain's minimum; only its first and the first after it
		 * look qfair_sk up. */
		if (bbr->mode == RTTFAIR_MODE_PROBE_RTT) {
			if (hot->flags & QF_IN_DRAIN)
				return;
			qf = qf ?: qfair_flow_of(sk, false);
			if (qf)
				qfair_begin_drain(sk, bbr, hot, qf, rtt_us);
			return;
		}
		if (hot->flags & QF_IN_DRAIN) {
			qf = qf ?: qfair_flow_of(sk, false);
			if (!qf)
				return;
			/* the drain's samples: the closed buckets', and the open
			 * one's before this ACK (the first ACK after the drain) */
			qf->drain_min_us = rf_min(qf->drain_min_us, open_min_us);
			qfair_end_drain(sk, bbr, hot, qf);
			return;
		}
	}

	/* The core decides round boundaries after this hook: the per-round work
	 * keys off the previous ACK's round_start. */
	if (bbr->round_start) {
		qf = qf ?: qfair_flow_of(sk, false);
		if (qf)
			qfair_update_round(sk, bbr, qf, rs->is_app_limited);
	}
}

/* Eq. 1: in cruise the cwnd target is w, not cwnd_gain x BDP. */
static __always_inline __u64 cca_inflight_bdp(struct sock *sk, struct rf_bbr *bbr, __u64 bdp)
{
	return qfair_cruising(bbr) ? qfair_hot_of(bbr)->w : bdp;
}

/* In cruise the window is w alone: no ACK-aggregation allowance on top. */
static __always_inline __u32 cca_ack_aggregation_cwnd(struct sock *sk, struct rf_bbr *bbr)
{
	return qfair_cruising(bbr) ? 0 : bbr_ack_aggregation_cwnd(bbr);
}

/* In cruise: w (at least the core's 4) plus the burst room above. */
static __always_inline __u32 cca_cwnd_budget(struct sock *sk, struct rf_bbr *bbr, __u32 target)
{
	if (!qfair_cruising(bbr))
		return bbr_quantization_budget(sk, bbr, target);
	return rf_max(target, (__u32)BBR_CWND_MIN_TARGET) + qfair_burst_room_pkts(sk, bbr);
}

/* Eq. 9: in cruise the per-round update sets the pacing rate, a drain halves
 * it (qfair_begin_drain) and restores it at its end; before cruise, BBR's. */
static __always_inline __u64 cca_pacing_rate(struct sock *sk, struct rf_bbr *bbr, __u64 rate)
{
	if (qfair_hot_of(bbr)->flags & QF_CRUISE)
		return sk->sk_pacing_rate;
	return rate;
}

/* Drains at the scheduled instant; before cruise, BBR's 10 s rule. */
static __always_inline bool cca_probe_rtt_due(struct sock *sk, struct rf_bbr *bbr,
					      bool min_rtt_expired)
{
	struct qfair_hot *hot = qfair_hot_of(bbr);

	if (!(hot->flags & QF_CRUISE))
		return min_rtt_expired;
	return hot->next_drain_ms && !rf_before(tcp_now_ms(tcp_sk(sk)), hot->next_drain_ms);
}

/*
 * In cruise, loss acts through alpha (Eq. 7), not through BBR's recovery
 * cwnd: packet conservation holds a flow for one round trip per loss event,
 * which costs a 200 ms flow ten times what it costs a 20 ms one. Measured:
 * 20 vs 200 ms at 0.3 BDP, 12.7 vs 6.2 Mbit/s with it (docs/results.md).
 * The one thing kept is BBR's restore on leaving Loss or Recovery, within
 * the window (max(cwnd, min(prior_cwnd, max(4, w) + b)), the core's
 * rf_cwnd_restored): an RTO sets cwnd to the packets in flight + 1, and
 * grown back by slow start, a doubling per round trip, the window would
 * cost a flow time in proportion to its RTT. A spurious RTO's undo leaves
 * Loss on the same ACK, so it is restored the same way.
 */
static __always_inline bool cca_loss_recovery_cwnd(struct sock *sk, struct rf_bbr *bbr)
{
	return !qfair_cruising(bbr);
}

/*
 * Leaving Loss after an RTO, the restore above puts cwnd back from the
 * packets in flight + 1 to up to w + b in one step: the flow's own refill,
 * so a floor rise in the next two rounds voids P2 (QF_REFILL). Leaving
 * Recovery restores nothing in cruise (no packet conservation cut it).
 * With qfair.rules_off's rto_restore cwnd stays where the RTO left it and
 * grows back by what is acked, up to w + b: still the flow's own refill.
 */
static __always_inline __u32 cca_cwnd_restored(struct sock *sk, struct rf_bbr *bbr, __u8 left,
					       __u32 cwnd, __u32 restored)
{
	if (left != TCP_CA_Loss)
		return restored;
	qfair_hot_of(bbr)->flags |= QF_REFILL | QF_REFILL_MORE;
	return qfair_rule_on(qfair_tunables_set(), QF_RULE_RTO_RESTORE) ? restored : cwnd;
}

/* A drain holds half the pipe x^ R^ (qfair_begin_drain puts it in w for the
 * drain), at least 4: below the pipe whatever the flow's backlog, so its own
 * queue empties also when competitive mode has grown alpha. */
static __always_inline __u32 cca_probe_rtt_cwnd(struct sock *sk, struct rf_bbr *bbr)
{
	struct qfair_hot *hot = qfair_hot_of(bbr);

	if (!(hot->flags & QF_CRUISE))
		return BBR_CWND_MIN_TARGET;
	return rf_max(hot->w / 2, (__u32)BBR_CWND_MIN_TARGET);
}

static __always_inline void cca_export(struct sock *sk, struct rf_bbr *bbr,
				       struct rttfair_flow *f)
{
	struct qfair_flow *qf = qfair_flow_of(sk, false);
	struct qfair_hot *hot = qfair_hot_of(bbr);

	/* In cruise BBR's gains act on nothing (the core's cycle still turns,
	 * mostly reading 1.25): Eq. 9 sets the pacing rate, Eq. 1 (a drain:
	 * max(w/2, 4)) the window. 0 is the record's "no BBR gain in force". */
	if (hot->flags & QF_CRUISE) {
		f->pacing_gain_x256 = 0;
		f->cwnd_gain_x256 = 0;
	}
	if (!qf)
		return;
	f->qfair_rate_bps = (((qf->xhat * tcp_sk(sk)->mss_cache) >> 12) * USEC_PER_SEC) >> (BW_SCALE - 12);
	f->qfair_alpha_x1024 = qf->alpha_x1024;
	f->qfair_backlog_x1024 = qf->backlog_x1024;
	/* o in the other fields' packets x1024 (arithmetic shift: rounds toward
	 * -inf, so |o| stays within o_cap x alpha as exported too) */
	f->qfair_offset_x1024 = qf->offset_x65536 >> QF_INT_FINE_SHIFT;
	f->qfair_qdelay_us = qf->q_us;
	f->qfair_standing_rtt_us = qf->d_us;
	f->qfair_target_cwnd = hot->w;
	f->qfair_drains_ok = qf->drains_ok;
	f->qfair_drains_failed = qf->drains_failed;
	f->qfair_drain_min_us = qf->last_drain_min_us;
	f->qfair_noise_us = qf->noise_us;
	f->qfair_pipe_us = qfair_pipe_us(bbr, qf);
	f->qfair_gain_x256 = qf->gain_x256;
	f->qfair_competitive = qf->competitive;
	/* the pacer's own test, on the window it paces (w and its room) */
	f->qfair_pacing_floor = (hot->flags & QF_CRUISE) &&
				qf_at_pacing_floor(hot->w + qfair_burst_room_pkts(sk, bbr));
}

RTTFAIR_DEFINE_STRUCT_OPS(qfair_ops, "qfair");
