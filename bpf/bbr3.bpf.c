// SPDX-License-Identifier: GPL-2.0
/*
 * bbr3: BBR version 3 as a BPF struct_ops congestion control, on a stock
 * kernel. The model and the law are include/bbr3_core.h's:
 *
 *   bw          = min(bw_hi, bw_lo)
 *   pacing_rate = pacing_gain x bw
 *   cwnd        = min(cwnd_gain x BDP + extra_acked + budget,
 *                     inflight_hi [- 15 %], inflight_lo)
 *
 * This file is the glue: what each ACK reads from the kernel, where the
 * state lives, the export, the struct_ops programs. Per ACK it reads
 *
 *   tx_in_flight, tx.lost   v3's rate_sample fields where the kernel has
 *                           them (CO-RE), else the snapshot ring:
 *                           inflight and tp->lost when the ACKed packet left
 *   is_ece                  v3's rs->is_ece, else tcp_ack()'s FLAG_ECE
 *   TLP recovery            CWR entered without ECE (no such event here)
 *
 *   constant           value             meaning
 *   ring snapshots     8 per cwnd        of deliveries: the ring spans two
 *                                        windows (BBR3_RING in bbr3_math.h)
 *   BBR3_FLAG_ECE      0x40              tcp_ack()'s ECE flag
 *   BBR3_MIN_TSO_SEGS  2                 min_tso_segs (v3's floor)
 *   No tunables.
 *
 * State. struct bbr3 (icsk_ca_priv) is all the per-ACK path touches. struct
 * bbr3_cold (sk_storage) holds the flow id, the ECN alpha, the undo values,
 * the per-round loss rate and the ring; it is looked up at most once per
 * ACK, and only on ACKs that need it: a round start, a loss round start, an
 * ACK that marked or follows recent losses, an ECE, a CWR entry, or a due
 * ring snapshot. A lossless flow in steady state does one lookup per cwnd/8
 * packets delivered. The approximations and what they cost:
 * docs/algorithms.md, "bbr3".
 *
 * GPL-2.0: struct_ops programs must be GPL-compatible.
 */
#define RTTFAIR_CCA RTTFAIR_CCA_BBR3
#include "rttfair_maps.h"
#include "rttfair_cca_maps.h"
#include "bbr3_core.h"

/* The v3 kernel's rate_sample fields, when present (CO-RE flavour). */
struct rate_sample___v3 {
	__u32 tx_in_flight;
	__s32 lost;
	bool is_ece;
} __attribute__((preserve_access_index));

RTTFAIR_SK_STORAGE(bbr3_sk, struct bbr3_cold, bbr3_cold_of);

/* ECE on this ACK: v3's rs->is_ece where it exists, else tcp_ack()'s flag. */
static __always_inline bool bbr3_ack_is_ece(const struct rate_sample *rs, int flag)
{
	const struct rate_sample___v3 *v3 = (const void *)rs;

	if (bpf_core_field_exists(v3->is_ece))
		return v3->is_ece;
	return flag & BBR3_FLAG_ECE;
}

/* The ACKed packet's tx state: v3's fields where they exist, else the ring. */
static __always_inline void bbr3_tx_estimate(struct sock *sk, const struct rate_sample *rs,
					     struct bbr3_cold *cold, struct bbr3_tx *tx)
{
	const struct rate_sample___v3 *v3 = (const void *)rs;

	if (bpf_core_field_exists(v3->tx_in_flight) && bpf_core_field_exists(v3->lost)) {
		tx->in_flight = v3->tx_in_flight;
		tx->lost = (__u32)rf_max(v3->lost, 0);
		tx->valid = true;
		return;
	}
	if (cold)
		bbr3_ring_lookup(sk, cold, rs, tx);
}

/* ---- Export ------------------------------------------------------------------- */

static __always_inline __u8 bbr3_phase(const struct bbr3 *b)
{
	switch (b->mode) {
	case RTTFAIR_MODE_STARTUP:
		return RTTFAIR_BBR3_STARTUP;
	case RTTFAIR_MODE_DRAIN:
		return RTTFAIR_BBR3_DRAIN;
	case RTTFAIR_MODE_PROBE_RTT:
		return RTTFAIR_BBR3_PROBE_RTT;
	default:
		break;
	}
	switch (b->cycle_idx) {
	case BBR3_UP:
		return RTTFAIR_BBR3_UP;
	case BBR3_DOWN:
		return RTTFAIR_BBR3_DOWN;
	case BBR3_CRUISE:
		return RTTFAIR_BBR3_CRUISE;
	default:
		return RTTFAIR_BBR3_REFILL;
	}
}

static __always_inline void bbr3_export_fill(struct sock *sk, struct bbr3 *b,
					     struct bbr3_cold *cold, struct rttfair_flow *f,
					     const struct rate_sample *rs)
{
	rttfair_fill_tcp(f, sk);
	f->mode = b->mode;
	f->cycle_idx = b->cycle_idx;
	f->btlbw_bps = bbr_bw_bytes_per_sec(sk, bbr3_bw(b));
	f->min_rtt_us = b->min_rtt_us;
	if (rs && rs->rtt_us > 0)
		f->last_rtt_us = (__u32)rs->rtt_us;
	f->pacing_gain_x256 = bbr3_pacing_gain(b);
	f->cwnd_gain_x256 = bbr3_cwnd_gain(b);
	f->probe_rtt_entries = cold->probe_rtt_entries;
	f->rounds = cold->rounds;
	f->bbr3_bw_hi_bps = bbr_bw_bytes_per_sec(sk, bbr3_max_bw(b));
	f->bbr3_bw_lo_bps = b->bw_lo == BBR3_UNSET ? ~0ULL : bbr_bw_bytes_per_sec(sk, b->bw_lo);
	f->bbr3_inflight_hi = b->inflight_hi;
	f->bbr3_inflight_lo = b->inflight_lo;
	f->bbr3_round_loss_ppm = cold->round_loss_ppm;
	f->bbr3_too_high_events = cold->too_high_events;
	f->bbr3_lo_cuts = cold->lo_cuts;
	f->bbr3_extra_acked = bbr_extra_acked(b);
	f->bbr3_ecn_alpha_x256 = cold->ecn_alpha;
	f->bbr3_phase = bbr3_phase(b);
	f->bbr3_ecn_eligible = b->ecn_eligible;
}

static __always_inline void bbr3_export_create(struct sock *sk, struct bbr3 *b,
					       struct bbr3_cold *cold,
					       const struct rate_sample *rs)
{
	struct rttfair_flow *f = rttfair_flow_insert(sk, cold->flow_id, bpf_ktime_get_ns());

	if (f)
		bbr3_export_fill(sk, b, cold, f, rs);
	cold->exported = rttfair_flow_publish(f, cold->exported);
}

/* Refresh in place, at most once per round and per export interval. */
static __always_inline void bbr3_export_if_due(struct sock *sk, struct bbr3 *b,
					       struct bbr3_cold *cold,
					       const struct rate_sample *rs)
{
	__u32 now_us = (__u32)tcp_sk(sk)->tcp_mstamp;
	__u64 id = cold->flow_id;
	struct rttfair_flow *f;

	if (now_us - cold->last_export_us < RTTFAIR_EXPORT_MIN_INTERVAL_US)
		return;
	cold->last_export_us = now_us;
	if (cold->exported == 1) {
		f = bpf_map_lookup_elem(&RTTFAIR_FLOWS_MAP, &id);
		if (f) {
			bbr3_export_fill(sk, b, cold, f, rs);
			return;
		}
	}
	bbr3_export_create(sk, b, cold, rs);
}

/* ---- Per round ------------------------------------------------------------------ */

/*
 * At a round start, first (as v3's bbr_main): ECN eligibility, alpha (Eq. 4)
 * and Startup's ECN exit, so that this ACK's ECE and the model already see
 * them. cold may be NULL (bbr3_update_ecn_alpha says what is left then). A
 * subprogram of its own so the verifier walks it once, not once per path of
 * the ACK handler.
 */
static __noinline void bbr3_on_round_start(struct sock *sk, struct bbr3 *b,
					   struct bbr3_cold *cold)
{
	if (!sk || !b)
		return;
	bbr3_update_ecn_alpha(sk, b, cold);
}

/*
 * Once per packet-timed round, at the end of the ACK, with the cold state:
 * the round's loss rate for the export, the export itself. A subprogram of
 * its own, as above.
 */
static __noinline void bbr3_on_round(struct sock *sk, struct bbr3 *b, struct bbr3_cold *cold,
				     const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 lost, delivered;

	if (!sk || !b || !cold)
		return;
	cold->rounds++;
	lost = tp->lost - cold->round_lost0;
	delivered = tp->delivered - cold->round_delivered0;
	if (lost + delivered)
		cold->round_loss_ppm = (__u32)((__u64)lost * 1000000 / (lost + delivered));
	cold->round_lost0 = tp->lost;
	cold->round_delivered0 = tp->delivered;
	bbr3_export_if_due(sk, b, cold, rs);
}

/* ---- The ACK handler -------------------------------------------------------------- */

static __always_inline void bbr3_update_round(struct sock *sk, struct bbr3 *b,
					      const struct rate_sample *rs)
{
	b->round_start = 0;
	if (rs->interval_us > 0 && !rf_before(rs->prior_delivered, b->next_rtt_delivered)) {
		b->next_rtt_delivered = tcp_sk(sk)->delivered;
		b->round_start = 1;
	}
}

static __always_inline __u32 bbr3_sample_bw(const struct rate_sample *rs)
{
	__u64 bw;

	if (rs->interval_us <= 0 || rs->delivered < 0)
		return 0;
	bw = ((__u64)rs->delivered * BBR3_BW_UNIT + (__u64)rs->interval_us - 1) /
	     (__u64)rs->interval_us;
	return (__u32)rf_min(bw, 0xffffffffULL);
}

static __always_inline void bbr3_main(struct sock *sk, const struct rate_sample *rs, int flag)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr3 *b = bbr3_of(sk);
	struct bbr3_ctx ctx = {};
	struct bbr3_cold *cold = NULL;
	bool is_ece, tlp_recovery = false;
	__u32 bw;

	if (!b->initialized)
		return; /* cong_control before init (SYN-SENT's ACK) */
	bbr3_update_round(sk, b, rs);
	ctx.sample_bw = bbr3_sample_bw(rs);
	if (rs->losses > 0)
		bbr3_note_loss(sk, b); /* stands in for skb_marked_lost's note */
	bbr3_update_latest_delivery_signals(sk, b, rs, &ctx);
	is_ece = bbr3_ack_is_ece(rs, flag);
	if (b->cwr_pending) {
		b->cwr_pending = 0;
		tlp_recovery = !is_ece; /* CWR without ECE: a TLP repaired a loss */
	}

	if (b->cold_ok &&
	    (b->round_start || b->loss_round_start || rs->losses > 0 || b->loss_in_round ||
	     is_ece || tlp_recovery || !rf_before(tp->delivered, b->snap_next_delivered)))
		cold = bbr3_cold_of(sk, false);

	if (b->round_start) {
		b->rounds_since_probe = rf_min(b->rounds_since_probe + 1U, 0xFFU);
		bbr3_on_round_start(sk, b, cold);
	}
	b->ecn_in_round |= b->ecn_eligible && is_ece;
	bbr3_tx_estimate(sk, rs, cold, &ctx.tx);
	if (tlp_recovery)
		bbr3_loss_probe_recovery(sk, b, rs, cold);

	/* The model. */
	bbr3_update_congestion_signals(sk, b, rs, &ctx, cold);
	bbr_update_ack_aggregation(sk, b, rs, 1, false);
	bbr3_check_loss_too_high_in_startup(sk, b, rs, &ctx);
	bbr3_check_full_bw_reached(b, rs, &ctx);
	bbr3_check_drain(sk, b);
	bbr3_update_cycle_phase(sk, b, rs, &ctx, cold);
	if (bbr3_update_min_rtt(sk, b, rs)) {
		rttfair_count(RTTFAIR_CCA, probe_rtt_entries, 1);
		if (!cold && b->cold_ok)
			cold = bbr3_cold_of(sk, false); /* ProbeRTT entries: every 5 s at most */
		if (cold)
			cold->probe_rtt_entries++;
	}

	/* The controls. */
	bw = bbr3_bw(b);
	bbr3_set_pacing_rate(sk, b, bw, bbr3_pacing_gain(b));
	bbr3_set_cwnd(sk, b, rs, bw, bbr3_cwnd_gain(b));
	bbr3_bound_cwnd_for_inflight_model(sk, b);

	bbr3_advance_latest_delivery_signals(b, rs, &ctx);
	b->prev_ca_state = b->ca_state;
	b->loss_in_cycle |= ctx.tx.valid && ctx.tx.lost > 0;
	b->ecn_in_cycle |= rs->delivered_ce > 0;

	if (!cold)
		return;
	if (!rf_before(tp->delivered, b->snap_next_delivered))
		bbr3_ring_push(sk, b, cold, rs);
	if (b->round_start)
		bbr3_on_round(sk, b, cold, rs);
}

/* ---- struct_ops --------------------------------------------------------------------- */

SEC("struct_ops")
void BPF_PROG(rf_init, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr3 *b = bbr3_of(sk);
	struct bbr3_cold *cold;

	__builtin_memset(b, 0, sizeof(*b));
	b->initialized = 1;
	b->init_cwnd = rf_min(0x7FU, tp->snd_cwnd);
	b->prior_cwnd = tp->prior_cwnd;
	tp->snd_ssthresh = BBR3_INFINITE_SSTHRESH;
	b->next_rtt_delivered = tp->delivered;
	b->prev_ca_state = TCP_CA_Open;
	b->ca_state = TCP_CA_Open;
	b->probe_rtt_min_us = tcp_min_rtt(tp);
	b->probe_rtt_min_stamp_ms = tcp_now_ms(tp);
	b->min_rtt_us = tcp_min_rtt(tp);
	b->min_rtt_stamp_ms = tcp_now_ms(tp);
	bbr3_init_pacing_rate_from_rtt(sk, b);
	b->mode = RTTFAIR_MODE_STARTUP;
	b->ack_epoch_mstamp = (__u32)tp->tcp_mstamp;
	b->loss_round_delivered = tp->delivered + 1;
	b->bw_lo = BBR3_UNSET;
	b->inflight_lo = BBR3_UNSET;
	b->inflight_hi = BBR3_UNSET;
	b->bw_probe_up_cnt = BBR3_UP_CNT_NONE;
	b->ack_phase = BBR3_ACKS_INIT;
	b->snap_next_delivered = tp->delivered;
	if (sk->sk_pacing_status == SK_PACING_NONE)
		sk->sk_pacing_status = SK_PACING_NEEDED;

	rttfair_count(RTTFAIR_CCA, flows_started, 1);
	cold = bbr3_cold_of(sk, true);
	if (!cold) {
		/* No export (the flow id lives in cold), still controlled: no
		 * ring (so Eq. 1's loss test never fires), ECN with alpha at 1.
		 * Counted with the flows the export map could not take. */
		rttfair_count(RTTFAIR_CCA, export_failed, 1);
		return;
	}
	__builtin_memset(cold, 0, sizeof(*cold));
	b->cold_ok = 1;
	cold->flow_id = rttfair_next_flow_id();
	cold->ecn_alpha = BBR3_UNIT;
	cold->last_export_us = (__u32)tp->tcp_mstamp;
	cold->round_lost0 = tp->lost;
	cold->round_delivered0 = tp->delivered;
	bbr3_export_create(sk, b, cold, NULL);
}

SEC("struct_ops")
void BPF_PROG(rf_release, struct sock *sk)
{
	struct bbr3 *b = bbr3_of(sk);
	struct bbr3_cold *cold;
	__u64 id;

	if (!b->initialized)
		return;
	b->initialized = 0;
	rttfair_count(RTTFAIR_CCA, flows_released, 1);
	cold = bbr3_cold_of(sk, false);
	if (!cold)
		return;
	id = cold->flow_id;
	if (id && !bpf_map_delete_elem(&RTTFAIR_FLOWS_MAP, &id))
		rttfair_count(RTTFAIR_CCA, export_deleted, 1);
	bpf_sk_storage_delete(&bbr3_sk, sk);
}

SEC("struct_ops")
void BPF_PROG(rf_cong_control, struct sock *sk, __u32 ack, int flag,
	      const struct rate_sample *rs)
{
	bbr3_main(sk, rs, flag);
}

/* Entering recovery: save cwnd and, for undo, the loss-adapted bounds. */
SEC("struct_ops")
__u32 BPF_PROG(rf_ssthresh, struct sock *sk)
{
	struct bbr3 *b = bbr3_of(sk);
	struct bbr3_cold *cold;

	bbr_save_cwnd(sk, b);
	cold = b->cold_ok ? bbr3_cold_of(sk, false) : NULL;
	if (cold) {
		cold->undo_bw_lo = b->bw_lo;
		cold->undo_inflight_lo = b->inflight_lo;
		cold->undo_inflight_hi = b->inflight_hi;
	}
	return tcp_sk(sk)->snd_ssthresh;
}

/* A spurious loss episode: restore the bounds and cwnd from before it. */
SEC("struct_ops")
__u32 BPF_PROG(rf_undo_cwnd, struct sock *sk)
{
	struct bbr3 *b = bbr3_of(sk);
	struct bbr3_cold *cold;

	bbr3_reset_full_bw(b);
	b->loss_in_round = 0;
	cold = b->cold_ok ? bbr3_cold_of(sk, false) : NULL;
	if (cold) {
		b->bw_lo = rf_max(b->bw_lo, cold->undo_bw_lo);
		b->inflight_lo = rf_max(b->inflight_lo, cold->undo_inflight_lo);
		b->inflight_hi = rf_max(b->inflight_hi, cold->undo_inflight_hi);
	}
	return b->prior_cwnd;
}

SEC("struct_ops")
void BPF_PROG(rf_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr3 *b = bbr3_of(sk);

	if (event != CA_EVENT_TX_START || !tp->app_limited)
		return;
	b->idle_restart = 1;
	b->ack_epoch_mstamp = (__u32)tp->tcp_mstamp;
	b->ack_epoch_acked = 0;
	if (b->mode == RTTFAIR_MODE_PROBE_BW)
		bbr3_set_pacing_rate(sk, b, bbr3_bw(b), BBR3_UNIT);
	else if (b->mode == RTTFAIR_MODE_PROBE_RTT)
		bbr3_check_probe_rtt_done(sk, b);
}

SEC("struct_ops")
void BPF_PROG(rf_set_state, struct sock *sk, __u8 new_state)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr3 *b = bbr3_of(sk);

	if (new_state == TCP_CA_Loss) {
		b->prev_ca_state = TCP_CA_Loss;
		bbr3_reset_full_bw(b);
		if (!bbr3_is_probing_bandwidth(b) && b->inflight_lo == BBR3_UNSET)
			b->inflight_lo = rf_max(tp->snd_cwnd, b->prior_cwnd);
	} else if (b->prev_ca_state == TCP_CA_Loss) {
		tp->snd_cwnd = rf_max(tp->snd_cwnd, b->prior_cwnd);
	}
	/* CWR from Open: ECE or a TLP-repaired loss; the next ACK tells which. */
	if (new_state == TCP_CA_CWR && b->ca_state == TCP_CA_Open)
		b->cwr_pending = 1;
	b->ca_state = new_state & 7;
}

SEC("struct_ops")
__u32 BPF_PROG(rf_sndbuf_expand, struct sock *sk)
{
	return 3; /* BBR may slow-start even during recovery */
}

/* The floor of the kernel's TSO autosizing: v3's tso_segs minimum. */
SEC("struct_ops")
__u32 BPF_PROG(rf_min_tso_segs, struct sock *sk)
{
	return BBR3_MIN_TSO_SEGS;
}

SEC(".struct_ops.link")
struct tcp_congestion_ops bbr3_ops = {
	.init = (void *)rf_init,
	.release = (void *)rf_release,
	.cong_control = (void *)rf_cong_control,
	.ssthresh = (void *)rf_ssthresh,
	.undo_cwnd = (void *)rf_undo_cwnd,
	.cwnd_event = (void *)rf_cwnd_event,
	.set_state = (void *)rf_set_state,
	.sndbuf_expand = (void *)rf_sndbuf_expand,
	.min_tso_segs = (void *)rf_min_tso_segs,
	.name = "bbr3",
};

char _license[] SEC("license") = "GPL";
