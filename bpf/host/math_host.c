// SPDX-License-Identifier: GPL-2.0
/*
 * The BPF programs' fixed-point math, compiled for the host so that
 * loader/src/math.rs can test exactly that code against an f64 reference.
 * Each function forwards to the header's inline function of the same name.
 */
#include "fairtt_math.h"
#include "adbbr_math.h"

__u32 host_fairtt_wminrtt_us(__u64 s, __u32 n, __u32 c, __u32 b) { return fairtt_wminrtt_us(s, n, c, b); }
__u32 host_fairtt_alpha_us(__u32 wf, __u64 s, __u32 w) { return fairtt_alpha_us(wf, s, w); }
__u32 host_fairtt_coef_x1024(__u32 m, __u32 l, __u32 g) { return fairtt_coef_x1024(m, l, g); }
int host_fairtt_adjust_active(__u32 l, __u32 a) { return fairtt_adjust_active(l, a); }
__u64 host_fairtt_scaled_bdp(__u64 b, __u32 c) { return fairtt_scaled_bdp(b, c); }
int host_fairtt_same_class(__u32 a, __u32 b, __u32 t) { return fairtt_same_class(a, b, t); }
__u32 host_adbbr_regime(__u32 r, __u32 n) { return adbbr_regime(r, n); }
__u32 host_adbbr_beta_x1024(__u32 r, __u32 n) { return adbbr_beta_x1024(r, n); }
__u32 host_adbbr_gamma_x1024(__u32 r, __u32 n, __u32 m, __u32 ref) { return adbbr_gamma_x1024(r, n, m, ref); }
__u32 host_adbbr_pacing_factor_x1024(__u32 r, __u32 n, __u32 m, __u32 ref) { return adbbr_pacing_factor_x1024(r, n, m, ref); }
__u64 host_adbbr_apply_factor(__u64 r, __u32 f) { return adbbr_apply_factor(r, f); }
__u32 host_rf_isqrt64(__u64 x) { return rf_isqrt64(x); }
__u32 host_adbbr_std_us(__u64 s, __u64 q, __u32 n) { return adbbr_std_us(s, q, n); }
__u32 host_adbbr_y_us(__u32 s, __u32 x, __u32 z) { return adbbr_y_us(s, x, z); }
