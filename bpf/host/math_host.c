// SPDX-License-Identifier: GPL-2.0
/*
 * The BPF programs' fixed-point math, compiled for the host so that
 * loader/src/math.rs can test exactly that code against an f64 reference.
 * Each function forwards to the header's inline function of the same name.
 */
#include <stddef.h>
#include "fairtt_math.h"
#include "adbbr_math.h"

__u32 host_fairtt_wminrtt_us(__u64 s, __u32 n, __u32 c, __u32 b) { return fairtt_wminrtt_us(s, n, c, b); }
__u32 host_fairtt_alpha_us(__u32 wf, __u64 s, __u32 w) { return fairtt_alpha_us(wf, s, w); }
__u32 host_fairtt_coef_x1024(__u32 m, __u32 l, __u32 g) { return fairtt_coef_x1024(m, l, g); }
int host_fairtt_adjust_active(__u32 l, __u32 a) { return fairtt_adjust_active(l, a); }
__u64 host_fairtt_scaled_bdp(__u64 b, __u32 c) { return fairtt_scaled_bdp(b, c); }
int host_fairtt_same_class(__u32 a, __u32 b, __u32 t) { return fairtt_same_class(a, b, t); }
__u32 host_adbbr_regime(__u32 r, __u32 n, __u32 f) { return adbbr_regime(r, n, f); }
__u32 host_adbbr_beta_x1024(__u32 r, __u32 n) { return adbbr_beta_x1024(r, n); }
__u32 host_adbbr_gamma_x1024(__u32 r, __u32 n, __u32 m, __u32 ref) { return adbbr_gamma_x1024(r, n, m, ref); }
__u32 host_adbbr_pacing_factor_x1024(__u32 r, __u32 n, __u32 m, __u32 ref, __u32 f) { return adbbr_pacing_factor_x1024(r, n, m, ref, f); }
__u64 host_adbbr_alpha_threshold_us(__u32 rt, __u32 a, __u32 f) { return adbbr_alpha_threshold_us(rt, a, f); }
__u64 host_adbbr_apply_factor(__u64 r, __u32 f) { return adbbr_apply_factor(r, f); }
__u64 host_rf_isqrt(__u64 x) { return rf_isqrt(x); }
__u32 host_adbbr_std_us(__u64 s, __u64 q, __u32 n) { return adbbr_std_us(s, q, n); }
__u32 host_adbbr_y_us(__u32 s, __u32 x, __u32 z) { return adbbr_y_us(s, x, z); }
#include "qfair_math.h"
__u32 host_qf_alpha_d_x1024(__u64 bw, __u32 a0, __u32 k) { return qf_alpha_d_x1024(bw, a0, k); }
__u32 host_qf_alpha_step_x1024(__u32 a, __u64 dt, __u32 lost, __u32 ai, __u32 hi, __u64 since) { return qf_alpha_step_x1024(a, dt, lost, ai, hi, since); }
__u64 host_qf_alpha_after_halvings(__u64 a, __u64 t) { return qf_alpha_after_halvings(a, t); }
int host_qf_drain_saw_longer_path(__u32 m, __u32 r) { return qf_drain_saw_longer_path(m, r); }
int host_qf_minima_agree(__u32 a, __u32 b) { return qf_minima_agree(a, b); }
void host_qf_long_bucket(struct qf_long_track *t, __u32 b) { qf_long_bucket(t, b); }
void host_qf_long_reset(struct qf_long_track *t) { qf_long_reset(t); }
__u32 host_qf_long_drain(struct qf_long_track *t, __u32 m, __u32 r) { return qf_long_drain(t, m, r); }
__u32 host_qf_long_streak_next(__u32 s, __u32 *lm, __u32 m, __u32 low) { return qf_long_streak_next(s, lm, m, low); }
int host_qf_path_step_held(__u32 m, __u32 r, __u32 s, __u32 l) { return qf_path_step_held(m, r, s, l); }
void host_qf_path_step_forget(struct qf_path_track *t) { qf_path_step_forget(t); }
void host_qf_path_step_track(struct qf_path_track *t, __u32 p, __u32 b, __u32 g, int tr) { qf_path_step_track(t, p, b, g, tr); }
__u32 host_qf_gain_x256(__u32 d, __u32 tau, __u32 t, __u32 b, __u32 cap, __u64 pipe, __u32 v) { return qf_gain_x256(d, tau, t, b, cap, pipe, v); }
__u32 host_qf_push_dir(__u32 t, __u32 b) { return qf_push_dir(t, b); }
__u32 host_qf_push_rounds(__u32 pd, __u32 pr, __u32 d) { return qf_push_rounds(pd, pr, d); }
__u32 host_qf_velocity_shift(__u32 r) { return qf_velocity_shift(r); }
__u32 host_qf_burst_room_share_x64(__u64 pipe, __u32 segs) { return qf_burst_room_share_x64(pipe, segs); }
__u32 host_qf_burst_room(__u32 segs, __u32 s) { return qf_burst_room(segs, s); }
__u32 host_qf_target_cwnd(__u64 bw, __u32 r, __u32 g, __u32 a) { return qf_target_cwnd(bw, r, g, a); }
__u32 host_qf_round_cwnd(__u32 wb, __u32 wl, int al) { return qf_round_cwnd(wb, wl, al); }
__s32 host_qf_offset_step_x65536(__s32 o, __u32 t, __u32 b, __u64 dt, __u32 m) { return qf_offset_step_x65536(o, t, b, dt, m); }
__u32 host_qf_offset_max_x1024(__u32 a, __u32 c) { return qf_offset_max_x1024(a, c); }
__u64 host_qf_pacing_rate(__u32 w, __u32 d, __u32 mss) { return qf_pacing_rate(w, d, mss); }
__u64 host_qf_rate_ewma(__u64 x, __u64 s) { return qf_rate_ewma(x, s); }
int host_qf_drain_emptied_queue(__u32 m, __u32 r, __u32 q) { return qf_drain_emptied_queue(m, r, q); }
int host_qf_competitive_next(int was, int allowed, __u32 v) { return qf_competitive_next(was, allowed, v); }
__u32 host_qf_emptied_streak(__u32 s, int c, __u32 v) { return qf_emptied_streak(s, c, v); }
__u32 host_qf_exit_verdict(__u32 v, __u32 s, __u32 n) { return qf_exit_verdict(v, s, n); }
__u32 host_qf_default_backlog_delay_us(__u32 a, __u64 bw) { return qf_default_backlog_delay_us(a, bw); }
__u32 host_qf_verdict_queue_us(__u32 q, __u32 qd) { return qf_verdict_queue_us(q, qd); }
int host_qf_drain_emptied(__u32 m, __u32 e, __u32 r, __u32 q, __u32 sp, int c) { return qf_drain_emptied(m, e, r, q, sp, c); }
__u32 host_qf_drain_spread_us(__u64 s, __u32 n, __u32 m) { return qf_drain_spread_us(s, n, m); }
__u32 host_qf_noise_next_us(__u32 nu, __u64 s, __u32 n, __u32 r) { return qf_noise_next_us(nu, s, n, r); }
__u32 host_qf_competitive_ai_x1024(__u32 r) { return qf_competitive_ai_x1024(r); }
__u32 host_rf_cwnd_restored(__u32 c, __u32 p, __u32 t) { return rf_cwnd_restored(c, p, t); }
#include "bbr3_math.h"
__u32 host_bbr3_interpolate(__u32 x, __u32 x0, __u32 y0, __u32 x1, __u32 y1) { return bbr3_interpolate(x, x0, y0, x1, y1); }
__u32 host_bbr3_lost_at_send(__u32 p, __u32 d0, __u32 l0, __u32 d1, __u32 l1) { return bbr3_lost_at_send(p, d0, l0, d1, l1); }
__s64 host_bbr3_ring_tx(const struct bbr3_snap *ring, __u32 p, __u32 nd, __u32 nl) { return bbr3_ring_tx(ring, p, nd, nl); }
#include "fairtt_registry.h"
/* One flow's registry round, as fairtt_wfcount runs it (scan every slot, then
 * finish with the slot it chose and its old one), over a plain array. */
__u32 host_fairtt_registry_round(struct fairtt_slot *slots, struct fairtt_member *m, __u64 now,
				 __u64 window_ns, __u32 min_rtt_us, __u32 tol_pct, __u32 scope_id,
				 int scoped)
{
	struct fairtt_scan sc;
	__s32 pick;

	fairtt_scan_init(&sc, now, window_ns, min_rtt_us, tol_pct, scope_id, scoped);
	for (__u32 i = 0; i < FAIRTT_REGISTRY_SLOTS; i++)
		fairtt_scan_visit(&sc, i, &slots[i]);
	pick = sc.mine >= 0 ? sc.mine : sc.free;
	return fairtt_scan_finish(&sc, pick >= 0 ? &slots[pick] : NULL,
				  pick >= 0 && m->slot != (__u32)pick && m->slot != FAIRTT_NO_SLOT
					  ? &slots[m->slot] : NULL,
				  m);
}
int host_fairtt_leave_slot(struct fairtt_slot *slots, struct fairtt_member *m)
{
	return fairtt_leave_slot(m->slot == FAIRTT_NO_SLOT ? NULL : &slots[m->slot], m);
}
__u32 host_fairtt_registry_slots(void) { return FAIRTT_REGISTRY_SLOTS; }
__u32 host_fairtt_slot_size(void) { return sizeof(struct fairtt_slot); }
__u32 host_fairtt_member_size(void) { return sizeof(struct fairtt_member); }
#include "aqm_math.h"
__u32 host_aqm_codel_packet(struct aqm_codel_vars *v, const struct aqm_codel_params *p, __u64 now, __u64 soj, __u64 backlog, int ect) { return aqm_codel_packet(v, p, now, soj, backlog, ect); }
void host_aqm_codel_empty(struct aqm_codel_vars *v) { aqm_codel_empty(v); }
__u64 host_aqm_codel_control_law(__u64 t, __u64 i, __u32 c) { return aqm_codel_control_law(t, i, c); }
__u32 host_aqm_step_packet(__u64 soj, __u32 ahead, __u32 k, __u64 k_ns, int ect) { return aqm_step_packet(soj, ahead, k, k_ns, ect); }
__u64 host_aqm_pkts_to_ns(__u32 p, __u32 w, __u64 r) { return aqm_pkts_to_ns(p, w, r); }
__u32 host_aqm_fq_queue(__u32 h, __u32 n) { return aqm_fq_queue(h, n); }
__u32 host_aqm_codel_vars_size(void) { return sizeof(struct aqm_codel_vars); }
__u32 host_aqm_codel_params_size(void) { return sizeof(struct aqm_codel_params); }
