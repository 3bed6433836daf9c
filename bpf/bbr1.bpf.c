// SPDX-License-Identifier: GPL-2.0
/*
 * bbr1: BBR version 1 as a BPF struct_ops congestion control.
 *
 * The baseline the other rttfair CCAs are measured against. The whole
 * algorithm is the shared core (include/bbr_core.h, which explains the model);
 * this file only says "no changes" to every variant hook. It exists so that
 * FaiRTT and Ad-BBR can be compared with a BBR built from exactly the same
 * code, and bbr1 itself with the kernel's native bbr (docs/results.md).
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
