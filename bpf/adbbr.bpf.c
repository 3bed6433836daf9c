// SPDX-License-Identifier: GPL-2.0
/*
 * adbbr: Ad-BBR on the rttfair BBR core. M. Wang, X. Zhang, F. Jing, M. Gao,
 * "Ad-BBR: Enhancing Round-Trip Time Fairness and Transmission Stability in
 * TCP-BBR", Future Internet 17(5), 189, 2025, doi:10.3390/fi17050189;
 * equation and algorithm numbers below are the paper's.
 *
 * The model: BBR v1's 2 BDP in flight builds a shared queue, and a flow's
 * share of it grows with its RTT. Ad-BBR compares the RTT each ACK reports
 * (rRTT) with a reference RTT (nRTT), eta = rRTT - nRTT being the queueing:
 *
 *   nRTT = RTprop, re-read while rRTT <= alpha x RTprop, or once rRTT has
 *          stayed above it for hold_ms                          (Alg. 1)
 *   Y    = max(X x std(RTT history), Z_min)                     (Eq. 13)
 *
 * The law, per ACK, in ProbeBW (Alg. 2), on the core's pacing rate:
 *
 *   rRTT < 1.25 nRTT             pacing = BtlBw x gain
 *   1.25 <= rRTT/nRTT < 1.5      pacing = BtlBw x gain / beta,  beta = rRTT/nRTT  (Eq. 11)
 *   rRTT >= 1.5 nRTT             pacing = BtlBw x gain x gamma                    (Eq. 12)
 *     gamma, clamped to [1/16, 2/3], by gamma_mode: 1 nRTT/rRTT,
 *     2 nRTT/(3 eta), 3 gamma_ref/eta (Eq. 12 as printed is not
 *     dimensionless)
 *   both regimes also need eta >= eta_floor (2 eta_floor for gamma), and
 *   Alg. 1's threshold is at least RTprop + eta_floor
 *
 *   ProbeRTT when rRTT > RTprop + Y has held for probe_hold_ms (Alg. 3);
 *   RTprop is the min RTT since the last ProbeRTT: the core's 10 s window
 *   does not expire it (cca_min_rtt_expired), Alg. 3 does.
 *
 * cwnd is the core's. Everything else is bbr_core.h.
 *
 *   tunable (adbbr.*)  default  meaning
 *   alpha_ppm          1.25     Alg. 1's threshold on rRTT / RTprop
 *   hold_ms            300      Alg. 1: rRTT above it this long re-reads nRTT
 *   x_ppm              0.5      Eq. 13's X
 *   zmin_us            5000     Eq. 13's Z_min
 *   probe_hold_ms      10000    Alg. 3's hold before ProbeRTT
 *   gamma_mode         1        Eq. 12's reading (above)
 *   gamma_ref_us       1000     mode 3's reference
 *   eta_floor_us       1000     absolute floor under the ratio thresholds
 *                               (not in the paper; binds where nRTT < 4 ms)
 *   constant           value    meaning
 *   ADBBR_HIST         16       RTT history: one sample per round trip
 *
 * State: the core in icsk_ca_priv, and in its 16-byte cca_hot all an ACK
 * reads or writes (nRTT, the Alg. 1 and Alg. 3 timers, the RTT std, the
 * pacing factor); the RTT history in the adbbr_sk sk_storage, looked up
 * once per round. Tunables: ADBBR_TUNABLES_MAP (rttfairctl set
 * adbbr.<name>). Readings, defaults and deviations: docs/algorithms.md,
 * "Ad-BBR".
 *
 * GPL-2.0: struct_ops programs must be GPL-compatible.
 */
#define RTTFAIR_CCA RTTFAIR_CCA_ADBBR
#define RTTFAIR_HOOK_MIN_RTT_EXPIRED
#include "bbr_core.h"
#include "adbbr_math.h"

#define ADBBR_TUNABLES_MAP RTTFAIR_VERSIONED(adbbr_tunables)

#define ADBBR_HIST 16
#define ADBBR_DEF_ALPHA_PPM 1250000
#define ADBBR_DEF_HOLD_MS 300
#define ADBBR_DEF_X_PPM 500000
#define ADBBR_DEF_ZMIN_US 5000
#define ADBBR_DEF_PROBE_HOLD_MS 10000
#define ADBBR_DEF_GAMMA_MODE ADBBR_GAMMA_RATIO
#define ADBBR_DEF_GAMMA_REF_US 1000
#define ADBBR_DEF_ETA_FLOOR_US 1000

RTTFAIR_TUNABLES_ARRAY(ADBBR_TUNABLES_MAP, struct adbbr_tunables);

/* What every ACK reads or writes: the core's cca_hot, 16 bytes. */
struct adbbr_hot {
	__u32 nrtt_us;             /* Alg. 1 */
	__u32 queue_since_ms;      /* Alg. 3: start of rRTT > RTprop + Y, 0 = not */
	__u32 std_us;              /* Alg. 3 lines 1-4, refreshed once per round */
	__u16 over_alpha_since_ms; /* Alg. 1: start of rRTT > alpha RTprop, low 16 bits
				    * of the ms clock (hold_ms <= 60 s < 2^16 ms) */
	__u16 factor_x1024 : 11,   /* Alg. 2 pacing factor, <= 1024 */
	      regime : 2,          /* Alg. 2 regime (ADBBR_REGIME_*) */
	      over_alpha : 1,      /* over_alpha_since_ms is running */
	      probe_due : 1;       /* Alg. 3 fired: RTprop is stale until re-read */
};

_Static_assert(sizeof(struct adbbr_hot) <= sizeof(((struct rf_bbr *)0)->cca_hot),
	       "adbbr_hot must fit the core's cca_hot");

/* The RTT history: touched once per round trip. */
struct adbbr_flow {
	__u32 hist[ADBBR_HIST];   /* rt_history: one RTT sample per round trip */
	__u32 hist_pos;
	__u32 hist_len;
};

RTTFAIR_SK_STORAGE(adbbr_sk, struct adbbr_flow, adbbr_flow_of);

/*
 * The tunables in force, read field by field where each is used, as in
 * fairtt and qfair: `set` is the map's entry (adbbr_tunables_set(); NULL:
 * all defaults) and adbbr_tun_<field>(set) the field where user space set it
 * (non-zero), else its default. Read per ACK, not per round: Alg. 1-3
 * compare each ACK's rRTT against values built from seven of the eight, and
 * icsk_ca_priv has no room to keep them (docs/algorithms.md, "Ad-BBR",
 * "State and cost"): one inlined array lookup and a load per field used.
 */
#define ADBBR_TUNABLE_DEFAULTS(X)                                                \
	X(alpha_ppm, ADBBR_DEF_ALPHA_PPM)                                        \
	X(hold_ms, ADBBR_DEF_HOLD_MS)                                            \
	X(x_ppm, ADBBR_DEF_X_PPM)                                                \
	X(zmin_us, ADBBR_DEF_ZMIN_US)                                            \
	X(probe_hold_ms, ADBBR_DEF_PROBE_HOLD_MS)                                \
	X(gamma_mode, ADBBR_DEF_GAMMA_MODE)                                      \
	X(gamma_ref_us, ADBBR_DEF_GAMMA_REF_US)                                  \
	X(eta_floor_us, ADBBR_DEF_ETA_FLOOR_US)

RTTFAIR_TUNABLES_SET(adbbr_tunables_set, ADBBR_TUNABLES_MAP);
#define ADBBR_TUN(field, def) RTTFAIR_TUNABLE_FIELD(adbbr_tun_##field, struct adbbr_tunables, field, def)
ADBBR_TUNABLE_DEFAULTS(ADBBR_TUN)
RTTFAIR_TUNABLES_COMPLETE(struct adbbr_tunables, ADBBR_TUNABLE_DEFAULTS);

static __always_inline struct adbbr_hot *adbbr_hot_of(struct rf_bbr *bbr)
{
	return (struct adbbr_hot *)bbr->cca_hot;
}

/* ms timestamps with 0 reserved for "not running". */
static __always_inline __u32 adbbr_stamp(__u32 now_ms)
{
	return now_ms ?: 1;
}

/* Alg. 1: the reference RTT. */
static __always_inline void adbbr_update_nrtt(struct adbbr_hot *h, __u32 rrtt_us,
					      __u32 rtprop_us, __u32 now_ms,
					      const struct adbbr_tunables *set)
{
	__u64 threshold = adbbr_alpha_threshold_us(rtprop_us, adbbr_tun_alpha_ppm(set),
						   adbbr_tun_eta_floor_us(set));

	if (rtprop_us == ~0U)
		return;
	if (rrtt_us <= threshold || h->nrtt_us == 0) {
		h->nrtt_us = rtprop_us;
		h->over_alpha = 0;
		return;
	}
	if (!h->over_alpha) {
		h->over_alpha = 1;
		h->over_alpha_since_ms = (__u16)now_ms;
	} else if ((__u16)((__u16)now_ms - h->over_alpha_since_ms) >= adbbr_tun_hold_ms(set)) {
		h->nrtt_us = rtprop_us;
		h->over_alpha = 0;
	}
}

struct adbbr_sums {
	const struct adbbr_flow *af;
	__u64 sum, sum_sq;
};

static long adbbr_sum_sample(__u64 i, void *ctx)
{
	struct adbbr_sums *s = ctx;
	__u64 v = s->af->hist[i & (ADBBR_HIST - 1)];

	s->sum += v;
	s->sum_sq += v * v;
	return 0;
}

/* Alg. 3 lines 1-4: the standard deviation of the RTT history (the sum
 * through bpf_loop, so the verifier checks one iteration; the square root
 * is rf_isqrt's straight code). A subprogram of its own, once per round:
 * the square root's seven branches are walked here, not multiplied into
 * the per-ACK path. */
static __noinline __u32 adbbr_history_std(const struct adbbr_flow *af)
{
	struct adbbr_sums s = { .af = af };
	__u32 n = rf_min(af->hist_len, (__u32)ADBBR_HIST);

	if (n < 2)
		return 0;
	bpf_loop(n, adbbr_sum_sample, &s, 0);
	return adbbr_std_us(s.sum, s.sum_sq, n);
}

static __always_inline void cca_init(struct sock *sk, struct rf_bbr *bbr)
{
	struct adbbr_flow *af = adbbr_flow_of(sk, true);
	struct adbbr_hot *h = adbbr_hot_of(bbr);

	__builtin_memset(h, 0, sizeof(*h));
	h->factor_x1024 = FACTOR_UNIT;
	if (af)
		__builtin_memset(af, 0, sizeof(*af));
}

static __always_inline void cca_release(struct sock *sk, struct rf_bbr *bbr)
{
	bpf_sk_storage_delete(&adbbr_sk, sk);
}

/* Once per round trip: one RTT sample into the history, and the std over it
 * (the only sk_storage lookup on the ACK path). */
static __always_inline void adbbr_update_history(struct sock *sk, struct adbbr_hot *h,
						 __u32 rrtt_us)
{
	struct adbbr_flow *af = adbbr_flow_of(sk, false);

	if (!af)
		return;
	af->hist[af->hist_pos & (ADBBR_HIST - 1)] = rrtt_us;
	af->hist_pos = (af->hist_pos + 1) & (ADBBR_HIST - 1);
	if (af->hist_len < ADBBR_HIST)
		af->hist_len++;
	h->std_us = adbbr_history_std(af);
}

static __always_inline void cca_on_rate_sample(struct sock *sk, struct rf_bbr *bbr,
					       const struct rate_sample *rs)
{
	struct adbbr_hot *h = adbbr_hot_of(bbr);
	const struct adbbr_tunables *set;
	__u32 now = tcp_now_ms(tcp_sk(sk)), rrtt = bbr->last_rtt_us, y;

	if (rs->rtt_us <= 0)
		return;
	set = adbbr_tunables_set();
	adbbr_update_nrtt(h, rrtt, bbr->min_rtt_us, now, set);

	/* One history sample per round trip; the std over it once per round. */
	if (bbr->round_start)
		adbbr_update_history(sk, h, rrtt);

	/* Alg. 3 lines 5-14: a queue above RTprop + Y that persists for
	 * probe_hold_ms sends the flow to ProbeRTT (phase_timer = 0). */
	y = adbbr_y_us(h->std_us, adbbr_tun_x_ppm(set), adbbr_tun_zmin_us(set));
	if (bbr->mode != RTTFAIR_MODE_PROBE_RTT && bbr->min_rtt_us != ~0U &&
	    (__u64)rrtt > (__u64)bbr->min_rtt_us + y) {
		if (!h->queue_since_ms) {
			h->queue_since_ms = adbbr_stamp(now);
		} else if (now - h->queue_since_ms >= adbbr_tun_probe_hold_ms(set)) {
			h->probe_due = 1;
			h->queue_since_ms = 0;
		}
	} else {
		h->queue_since_ms = 0;
	}

	/* Alg. 2: the regime and its factor for this ACK (ProbeBW only). */
	if (bbr->mode == RTTFAIR_MODE_PROBE_BW && h->nrtt_us) {
		__u32 floor_us = adbbr_tun_eta_floor_us(set);

		h->regime = adbbr_regime(rrtt, h->nrtt_us, floor_us);
		h->factor_x1024 = adbbr_pacing_factor_x1024(rrtt, h->nrtt_us,
							    adbbr_tun_gamma_mode(set),
							    adbbr_tun_gamma_ref_us(set), floor_us);
	} else {
		h->regime = ADBBR_REGIME_NORMAL;
		h->factor_x1024 = FACTOR_UNIT;
	}
}

static __always_inline __u64 cca_inflight_bdp(struct sock *sk, struct rf_bbr *bbr, __u64 bdp)
{
	return bdp;
}

/* Alg. 2 lines 3-10: scale the pacing rate by 1, 1/beta or gamma. */
static __always_inline __u64 cca_pacing_rate(struct sock *sk, struct rf_bbr *bbr, __u64 rate)
{
	__u32 factor = adbbr_hot_of(bbr)->factor_x1024;

	if (factor == FACTOR_UNIT)
		return rate;
	return adbbr_apply_factor(rate, factor);
}

/* Alg. 3 owns RTprop's staleness: only a fired Alg. 3 makes the next
 * sample replace RTprop; the 10 s window is ignored. */
static __always_inline bool cca_min_rtt_expired(struct sock *sk, struct rf_bbr *bbr,
					       bool window_expired)
{
	return adbbr_hot_of(bbr)->probe_due;
}

/* Alg. 3 lines 8-10: ProbeRTT once the queue condition has held for
 * probe_hold_ms; the 10 s RTprop expiry alone never triggers it. The flag
 * stays up until RTprop has been re-read (the core stamps it now). */
static __always_inline bool cca_probe_rtt_due(struct sock *sk, struct rf_bbr *bbr,
					      bool min_rtt_expired)
{
	struct adbbr_hot *h = adbbr_hot_of(bbr);

	if (!h->probe_due)
		return false;
	if (bbr->min_rtt_stamp_ms == tcp_now_ms(tcp_sk(sk)))
		h->probe_due = 0;
	return true;
}

static __always_inline void cca_export(struct sock *sk, struct rf_bbr *bbr,
				       struct rttfair_flow *f)
{
	const struct adbbr_hot *h = adbbr_hot_of(bbr);

	f->adbbr_nrtt_us = h->nrtt_us;
	f->adbbr_rtt_std_us = h->std_us;
	f->adbbr_factor_x1024 = h->factor_x1024;
	f->adbbr_regime = h->regime;
}

RTTFAIR_DEFINE_STRUCT_OPS(adbbr_ops, "adbbr");
