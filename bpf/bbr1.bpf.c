// SPDX-License-Identifier: GPL-2.0
/*
 * bbr1: BBR version 1 as a BPF struct_ops congestion control, the shared
 * core (include/bbr_core.h) with every variant hook the identity.
 *
 * The model (bbr_core.h): a pipe of bottleneck bandwidth and propagation
 * delay,
 *
 *   BtlBw  = max delivery rate over 10 rounds
 *   RTprop = min RTT over 10 s
 *   BDP    = BtlBw x RTprop
 *
 * The law, unchanged from Linux tcp_bbr.c:
 *
 *   pacing_rate = pacing_gain x BtlBw                  (cca_pacing_rate: as is)
 *   cwnd target = cwnd_gain x BDP + extra_acked + budget (cca_inflight_bdp: as is)
 *   ProbeRTT    when RTprop is 10 s old               (cca_probe_rtt_due: as is)
 *
 * with the gains of Startup (2.885), Drain (0.347), ProbeBW (1.25, 0.75,
 * 1 x 6; cwnd 2) and ProbeRTT (cwnd 4, 200 ms).
 *
 *   constant / tunable   value   meaning
 *   (none of its own)            the core's constants: bbr_core.h
 *
 * It is the baseline: FaiRTT and Ad-BBR differ from it by their hooks
 * alone, and it differs from the kernel's own bbr only where
 * docs/algorithms.md, "The BBR core (bbr1)", says.
 *
 * GPL-2.0: struct_ops programs must be GPL-compatible.
 */
#define RTTFAIR_CCA RTTFAIR_CCA_BBR1
#include "bbr_core.h"

static __always_inline void cca_init(struct sock *sk, struct rf_bbr *bbr) {}
static __always_inline void cca_release(struct sock *sk, struct rf_bbr *bbr) {}
static __always_inline void cca_on_rate_sample(struct sock *sk, struct rf_bbr *bbr,
					       const struct rate_sample *rs) {}

static __always_inline __u64 cca_inflight_bdp(struct sock *sk, struct rf_bbr *bbr,
					      __u64 bdp)
{
	return bdp;
}

static __always_inline __u64 cca_pacing_rate(struct sock *sk, struct rf_bbr *bbr,
					     __u64 rate)
{
	return rate;
}

static __always_inline bool cca_probe_rtt_due(struct sock *sk, struct rf_bbr *bbr,
					      bool min_rtt_expired)
{
	return min_rtt_expired;
}

static __always_inline void cca_export(struct sock *sk, struct rf_bbr *bbr,
				       struct rttfair_flow *f) {}

RTTFAIR_DEFINE_STRUCT_OPS(bbr1_ops, "bbr1");
