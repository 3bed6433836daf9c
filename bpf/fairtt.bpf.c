// SPDX-License-Identifier: GPL-2.0
/*
 * fairtt: FaiRTT on the rttfair BBR core. A. Abrol, P. Murali Mohan,
 * T. Truong-Huu, "FaiRTT: An Empirical Approach for Enhanced RTT Fairness
 * and Bottleneck Throughput in BBR", arXiv:2403.19973, 2024; equation,
 * algorithm and section numbers below are the paper's.
 *
 * The model: under BBR each flow keeps about 2 BDP in flight and its BDP is
 * BtlBw x its own RTprop, so in a deep buffer a long-RTT flow holds more of
 * the shared queue. FaiRTT judges a flow's RTT against what the flows on
 * the host take as normal:
 *
 *   Wfcount_t = distinct minRTTs among active flows        (Alg. 1 line 4)
 *   WminRTT_t = beta x mean(past minRTTs) + (1 - beta) x minRTT_t   (Eq. 6)
 *   W_t       = min(|Rx|, |Tx|) packets, at most 16 rounds          (Eq. 7)
 *   alpha_t   = Wfcount_t x mean(WminRTT over the last W_t rounds)  (Eq. 5)
 *
 * The law, per ACK, in ProbeBW only (Alg. 1 lines 6-11):
 *
 *   coef      = min(1, minRTT_t x gamma / lastRTT_t)  if lastRTT_t > alpha_t
 *             = 1                                     otherwise
 *   BDP_t     = BtlBw x RTprop x coef
 *   Inflight  = BDP_t x cwnd_gain                                   (Eq. 4)
 *
 * coef scales only the BDP that sizes the cwnd target (cca_inflight_bdp);
 * pacing and the phase decisions keep the core's model. Everything else is
 * bbr_core.h. A minRTT sample is the core's RTprop, once per round trip;
 * lastRTT is the RTT of the ACK's rate sample.
 *
 *   tunable (fairtt.*)  default  meaning
 *   beta_ppm            0.8      Eq. 6's weight of the past minRTTs
 *   gamma_ppm           0.99     Alg. 1's gamma
 *   window_ms           1000     a minRTT class is active this long after
 *                                a flow last refreshed it
 *   tolerance_pct       10       minRTTs within this % of the larger are
 *                                one class
 *   scope               1        whose classes count: 1 every flow on the
 *                                host, 2 its network namespace, 3 its local
 *                                address
 *   constant                 value  meaning
 *   FAIRTT_RING              16     WminRTTs kept: W_t's cap
 *   FAIRTT_REGISTRY_SLOTS    32     minRTT classes in the host registry
 *
 * State: what an ACK touches (alpha, gamma, coef, the exported Wfcount and
 * WminRTT) in the core's 16-byte cca_hot; the per-round history and
 * registry slot in the fairtt_sk sk_storage, looked up once per round trip;
 * Wfcount in FAIRTT_REGISTRY_MAP, a pinned array shared by every socket on
 * the host (fairtt_registry.h has its slot transitions). Tunables:
 * FAIRTT_TUNABLES_MAP (rttfairctl set fairtt.<name>). The paper's open
 * choices and the deviations: docs/algorithms.md, "FaiRTT".
 *
 * GPL-2.0: struct_ops programs must be GPL-compatible.
 */
#define RTTFAIR_CCA RTTFAIR_CCA_FAIRTT
#include "bbr_core.h"
#include "fairtt_math.h"
#include "fairtt_registry.h"

#define FAIRTT_REGISTRY_MAP RTTFAIR_VERSIONED(fairtt_registry)
#define FAIRTT_TUNABLES_MAP RTTFAIR_VERSIONED(fairtt_tunables)

#define FAIRTT_RING 16
#define FAIRTT_DEF_BETA_PPM 800000
#define FAIRTT_DEF_GAMMA_PPM 990000
#define FAIRTT_DEF_WINDOW_MS 1000
#define FAIRTT_DEF_TOL_PCT 10
#define FAIRTT_DEF_SCOPE FAIRTT_SCOPE_HOST

/* Host-wide minRTT classes (Wfcount). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FAIRTT_REGISTRY_SLOTS);
	__type(key, __u32);
	__type(value, struct fairtt_slot);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} FAIRTT_REGISTRY_MAP SEC(".maps");

RTTFAIR_TUNABLES_ARRAY(FAIRTT_TUNABLES_MAP, struct fairtt_tunables);

/* What every ACK reads or writes: the core's cca_hot, 16 bytes. */
struct fairtt_hot {
	__u32 alpha_us;                /* latest alpha_t (Eq. 5) */
	__u32 gamma_ppm;               /* gamma in effect, refreshed per round */
	__u32 wminrtt_us;              /* latest WminRTT_t (Eq. 6), for the export */
	__u16 coef_x1024;              /* latest coefficient (1024 = none) */
	__u8 wfcount;                  /* latest Wfcount_t (<= FAIRTT_REGISTRY_SLOTS) */
	__u8 active;                   /* Alg. 1 line 7 held at the latest ACK */
};

_Static_assert(sizeof(struct fairtt_hot) <= sizeof(((struct rf_bbr *)0)->cca_hot),
	       "fairtt_hot must fit the core's cca_hot");
_Static_assert(FAIRTT_REGISTRY_SLOTS <= 255, "Wfcount must fit fairtt_hot.wfcount");

/* Per-round FaiRTT state, beyond icsk_ca_priv. */
struct fairtt_flow {
	__u64 minrtt_sum_us;           /* Eq. 6: sum of past minRTT samples */
	__u32 minrtt_n;                /* ... and their count */
	__u32 wminrtt_ring[FAIRTT_RING]; /* Eq. 5: WminRTT of the last rounds */
	__u32 ring_pos;
	__u32 ring_len;
	struct fairtt_member reg;      /* registry slot and the class joined there */
};

RTTFAIR_SK_STORAGE(fairtt_sk, struct fairtt_flow, fairtt_flow_of);

/*
 * The tunables in force, read field by field where each is used: `set` is
 * the map's entry (fairtt_tunables_set(); NULL: all defaults) and
 * fairtt_tun_<field>(set) the field where user space set it (non-zero),
 * else its default (rttfair_cca_maps.h's rule for one field). No copy of
 * the whole struct, which would hold a stack slot per field across the
 * per-round update (docs/algorithms.md, "FaiRTT", "State and cost").
 */
#define FAIRTT_TUNABLE_DEFAULTS(X)                                               \
	X(beta_ppm, FAIRTT_DEF_BETA_PPM)                                         \
	X(gamma_ppm, FAIRTT_DEF_GAMMA_PPM)                                       \
	X(window_ms, FAIRTT_DEF_WINDOW_MS)                                       \
	X(tolerance_pct, FAIRTT_DEF_TOL_PCT)                                     \
	X(scope, FAIRTT_DEF_SCOPE)

RTTFAIR_TUNABLES_SET(fairtt_tunables_set, FAIRTT_TUNABLES_MAP);
#define FAIRTT_TUN(field, def) RTTFAIR_TUNABLE_FIELD(fairtt_tun_##field, struct fairtt_tunables, field, def)
FAIRTT_TUNABLE_DEFAULTS(FAIRTT_TUN)
RTTFAIR_TUNABLES_COMPLETE(struct fairtt_tunables, FAIRTT_TUNABLE_DEFAULTS);

static __always_inline struct fairtt_hot *fairtt_hot_of(struct rf_bbr *bbr)
{
	return (struct fairtt_hot *)bbr->cca_hot;
}

/* The flow's registry slot (NULL: none). */
static __always_inline struct fairtt_slot *fairtt_member_slot(const struct fairtt_member *m)
{
	__u32 key = m->slot;

	if (key == FAIRTT_NO_SLOT)
		return NULL;
	return bpf_map_lookup_elem(&FAIRTT_REGISTRY_MAP, &key);
}

/*
 * The per-round update (fairtt_update_round, below) is BPF subprograms
 * called in turn, each holding only its own values, so that no chain of
 * frames nears the verifier's 512-byte stack limit: Eq. 6
 * (fairtt_round_wminrtt), Wfcount (fairtt_wfcount: fairtt_scan_start, the
 * bpf_loop over the registry, fairtt_scan_join) and Eq. 5
 * (fairtt_round_alpha). What a part needs from the one before is in ff (the
 * ring) and bbr (min_rtt_us, which no part writes) or passed (Wfcount);
 * each tunable is read once per round, by the part that uses it.
 */

/* One slot of the registry pass (bpf_loop callback; the scan's state,
 * struct fairtt_scan, is in fairtt_registry.h). */
static long fairtt_scan_slot(__u64 i, void *ctx)
{
	__u32 key = (__u32)i;
	const struct fairtt_slot *s = bpf_map_lookup_elem(&FAIRTT_REGISTRY_MAP, &key);

	if (s)
		fairtt_scan_visit(ctx, key, s);
	return 0;
}

/* Who this flow counts with under fairtt.scope: its namespace or address
 * (host scope ignores it). */
static __always_inline __u32 fairtt_scope_id(const struct sock *sk, __u32 scope)
{
	const struct sock_common *skc = &sk->__sk_common;

	__u32 netns = skc->skc_net.net->ns.inum, addr;

	if (scope != FAIRTT_SCOPE_ADDR)
		return netns;
	addr = skc->skc_family == AF_INET6 ? skc->skc_v6_rcv_saddr.in6_u.u6_addr32[3]
					   : skc->skc_rcv_saddr;
	return addr ^ (netns * 2654435761U); /* the address within its namespace */
}

/* Wfcount's first part: the scan's start state, from the tunables. A
 * subprogram of its own so that the tunables lookup's key is not a slot of
 * fairtt_wfcount's frame. */
static __noinline void fairtt_scan_start(struct sock *sk, struct fairtt_scan *sc,
					 __u32 min_rtt_us)
{
	const struct fairtt_tunables *set = fairtt_tunables_set();
	__u32 scope = fairtt_tun_scope(set);

	fairtt_scan_init(sc, bpf_ktime_get_ns(), (__u64)fairtt_tun_window_ms(set) * NSEC_PER_MSEC,
			 min_rtt_us, fairtt_tun_tolerance_pct(set), fairtt_scope_id(sk, scope),
			 scope != FAIRTT_SCOPE_HOST);
}

/* Wfcount's last part: look up the slots the scan chose (this flow's class,
 * else the free one) and the flow's old one, and let fairtt_scan_finish
 * (fairtt_registry.h) refresh the class and return the count. */
static __noinline __u32 fairtt_scan_join(struct fairtt_flow *ff, const struct fairtt_scan *sc)
{
	struct fairtt_slot *target = NULL, *old = NULL;
	__s32 pick = sc->mine >= 0 ? sc->mine : sc->free;
	__u32 key = (__u32)pick;

	if (pick >= 0) {
		target = bpf_map_lookup_elem(&FAIRTT_REGISTRY_MAP, &key);
		if (ff->reg.slot != key)
			old = fairtt_member_slot(&ff->reg);
	}
	return fairtt_scan_finish(sc, target, old, &ff->reg);
}

/*
 * Wfcount_t (Alg. 1 line 4): refresh this flow's minRTT class in the host
 * registry and count the classes active in the window. One pass over
 * FAIRTT_REGISTRY_SLOTS (bpf_loop, so the verifier checks one iteration),
 * once per round trip. Its frame is the scan's state alone.
 */
static __noinline __u32 fairtt_wfcount(struct sock *sk, struct fairtt_flow *ff,
				       __u32 min_rtt_us)
{
	struct fairtt_scan sc;

	fairtt_scan_start(sk, &sc, min_rtt_us);
	bpf_loop(FAIRTT_REGISTRY_SLOTS, fairtt_scan_slot, &sc, 0);
	return fairtt_scan_join(ff, &sc);
}

/* Eq. 7: W_t = min(|Rx|, |Tx|) in packets (the peer's receive window and
 * cwnd), capped at the ring size: the number of the latest WminRTTs Eq. 5
 * averages. In ProbeBW, where alpha is used, cwnd >= 2 BDP + 3 TSO bursts,
 * so the cap binds wherever the BDP is 5 packets or more. */
static __always_inline __u32 fairtt_window_len(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 mss = tp->mss_cache ?: 1;
	__u32 w = rf_min(tp->snd_wnd / mss, tp->snd_cwnd);

	return rf_max(rf_min(w, (__u32)FAIRTT_RING), 1U);
}

struct fairtt_ring_sum {
	const struct fairtt_flow *ff;
	__u64 sum;
};

/* Add the i-th most recent WminRTT (bpf_loop callback). */
static long fairtt_add_recent(__u64 i, void *ctx)
{
	struct fairtt_ring_sum *rs = ctx;
	const struct fairtt_flow *ff = rs->ff;

	rs->sum += ff->wminrtt_ring[(ff->ring_pos - 1 - (__u32)i) & (FAIRTT_RING - 1)];
	return 0;
}

/* The per-round update's first part: gamma for the per-ACK coefficient, and
 * this round's minRTT sample into WminRTT (Eq. 6) and the ring. Returns
 * false (the round ends here) when there is no sample yet. */
static __noinline bool fairtt_round_wminrtt(struct rf_bbr *bbr, struct fairtt_flow *ff)
{
	const struct fairtt_tunables *set = fairtt_tunables_set();
	struct fairtt_hot *h = fairtt_hot_of(bbr);
	__u32 min_rtt = bbr->min_rtt_us, wminrtt;

	h->gamma_ppm = fairtt_tun_gamma_ppm(set);
	if (min_rtt == ~0U || min_rtt == 0)
		return false;
	wminrtt = fairtt_wminrtt_us(ff->minrtt_sum_us, ff->minrtt_n, min_rtt,
				    fairtt_tun_beta_ppm(set));
	h->wminrtt_us = wminrtt;
	ff->minrtt_sum_us += min_rtt;
	ff->minrtt_n++;
	ff->wminrtt_ring[ff->ring_pos & (FAIRTT_RING - 1)] = wminrtt;
	ff->ring_pos = (ff->ring_pos + 1) & (FAIRTT_RING - 1);
	if (ff->ring_len < FAIRTT_RING)
		ff->ring_len++;
	return true;
}

/* The per-round update's last part: alpha_t (Eq. 5) from the WminRTTs of the
 * last W_t rounds in the ring and this round's Wfcount. */
static __noinline __u32 fairtt_round_alpha(struct sock *sk, const struct fairtt_flow *ff,
					   __u32 wfcount)
{
	struct fairtt_ring_sum rs = { .ff = ff };
	__u32 w = rf_min(fairtt_window_len(sk), ff->ring_len);

	/* The last W_t WminRTTs (bpf_loop: the verifier checks one iteration). */
	bpf_loop(w, fairtt_add_recent, &rs, 0);
	return fairtt_alpha_us(wfcount, rs.sum, w);
}

/*
 * Once per round trip: minRTT sample -> WminRTT (Eq. 6) -> Wfcount -> alpha
 * (Eq. 5). A separate BPF subprogram (__noinline), as are its parts: the
 * tunables' constant-or-loaded values stay inside them instead of
 * multiplying the verifier's states in the per-ACK path. The ring's sum for
 * alpha is taken after the registry pass, which writes only ff->reg and
 * the registry.
 */
static __noinline void fairtt_update_round(struct sock *sk, struct rf_bbr *bbr,
					   struct fairtt_flow *ff)
{
	struct fairtt_hot *h = fairtt_hot_of(bbr);

	if (!fairtt_round_wminrtt(bbr, ff))
		return;
	h->wfcount = fairtt_wfcount(sk, ff, bbr->min_rtt_us);
	h->alpha_us = fairtt_round_alpha(sk, ff, h->wfcount);
}

static __always_inline void cca_init(struct sock *sk, struct rf_bbr *bbr)
{
	struct fairtt_flow *ff = fairtt_flow_of(sk, true);
	struct fairtt_hot *h = fairtt_hot_of(bbr);

	__builtin_memset(h, 0, sizeof(*h));
	h->coef_x1024 = COEF_UNIT;
	if (ff) {
		__builtin_memset(ff, 0, sizeof(*ff));
		ff->reg.slot = FAIRTT_NO_SLOT;
	}
}

static __always_inline void cca_release(struct sock *sk, struct rf_bbr *bbr)
{
	struct fairtt_flow *ff = fairtt_flow_of(sk, false);

	if (ff) {
		fairtt_leave_slot(fairtt_member_slot(&ff->reg), &ff->reg);
		bpf_sk_storage_delete(&fairtt_sk, sk);
	}
}

static __always_inline void cca_on_rate_sample(struct sock *sk, struct rf_bbr *bbr,
					       const struct rate_sample *rs)
{
	struct fairtt_hot *h = fairtt_hot_of(bbr);

	/* The round boundary is decided by the core after this hook, so the
	 * per-round work keys off the previous ACK's round_start. Only then is
	 * the sk_storage looked up. */
	if (bbr->round_start) {
		struct fairtt_flow *ff = fairtt_flow_of(sk, false);

		if (ff)
			fairtt_update_round(sk, bbr, ff);
	}

	/* Alg. 1 lines 6-11, per ACK with the ACK's own RTT as lastRTT. */
	h->active = bbr->mode == RTTFAIR_MODE_PROBE_BW &&
		    fairtt_adjust_active(bbr->last_rtt_us, h->alpha_us);
	if (h->active) {
		h->coef_x1024 = fairtt_coef_x1024(bbr->min_rtt_us, bbr->last_rtt_us,
						  h->gamma_ppm ?: FAIRTT_DEF_GAMMA_PPM);
	} else {
		h->coef_x1024 = COEF_UNIT;
	}
}

/* Eq. 4 with Alg. 1 line 8: the cwnd target's BDP, scaled while active. */
static __always_inline __u64 cca_inflight_bdp(struct sock *sk, struct rf_bbr *bbr, __u64 bdp)
{
	const struct fairtt_hot *h = fairtt_hot_of(bbr);

	if (!h->active)
		return bdp;
	return fairtt_scaled_bdp(bdp, h->coef_x1024);
}

static __always_inline __u64 cca_pacing_rate(struct sock *sk, struct rf_bbr *bbr, __u64 rate)
{
	return rate;
}

static __always_inline bool cca_probe_rtt_due(struct sock *sk, struct rf_bbr *bbr,
					      bool min_rtt_expired)
{
	return min_rtt_expired;
}

static __always_inline void cca_export(struct sock *sk, struct rf_bbr *bbr,
				       struct rttfair_flow *f)
{
	const struct fairtt_hot *h = fairtt_hot_of(bbr);

	f->fairtt_alpha_us = h->alpha_us;
	f->fairtt_wminrtt_us = h->wminrtt_us;
	f->fairtt_coef_x1024 = h->coef_x1024;
	f->fairtt_wfcount = h->wfcount;
	f->fairtt_active = h->active;
}

RTTFAIR_DEFINE_STRUCT_OPS(fairtt_ops, "fairtt");
