// SPDX-License-Identifier: GPL-2.0
/*
 * bbr_native: the kernel's own BBR (net/ipv4/tcp_bbr.c), registered as a BPF
 * struct_ops congestion control that calls it through kfuncs, and exported
 * like the project's CCAs.
 *
 * The model and the law are native bbr's, unchanged: every decision is
 * bbr_main()'s (the same model as bbr_core.h's header writes out:
 * BtlBw = 10-round max, RTprop = 10 s min, pacing_rate = pacing_gain x
 * BtlBw, cwnd = cwnd_gain x BDP + extra_acked + budget). This file adds
 * one law of its own, the export:
 *
 *   export when native's round_start is set
 *          and now - last_export >= RTTFAIR_EXPORT_MIN_INTERVAL_US
 *   record = the TCP fields (rttfair_fill_tcp) + native's struct bbr read
 *            through CO-RE (native_bbr.h): BtlBw, RTprop, mode, gains,
 *            cycle, lt_bw
 *
 *   constant                        value     meaning
 *   RTTFAIR_EXPORT_MIN_INTERVAL_US  1 ms      export rate limit (rttfair_abi.h)
 *   NATIVE_BBR_BW_SCALE             24        native's bw unit (packets/us << 24)
 *   No tunables.
 *
 * Why: a kernel CCA has no per-flow export, and a BPF CCA cannot implement
 * get_info, so `ss -ti` shows nothing for the project's CCAs; this one
 * shows native bbr beside them in the lab and the daemon. Its cost per ACK
 * is the kernel's BBR plus the struct_ops trampoline: bbr1 vs bbr_native is
 * the cost of the BPF core, bbr_native vs bbr the cost of being BPF
 * (`cargo xtask bench single-flow`).
 *
 * State: native bbr fills all 104 bytes of icsk_ca_priv, so the flow id and
 * export bookkeeping live in sk_storage, touched at init, release and once
 * per packet-timed round.
 *
 * GPL-2.0: struct_ops programs must be GPL-compatible.
 */
#define RTTFAIR_CCA RTTFAIR_CCA_BBR_NATIVE
#include "rttfair_maps.h"
#include "rttfair_cca_maps.h"
#include "native_bbr.h"

extern void bbr_init(struct sock *sk) __ksym;
extern void bbr_main(struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs) __ksym;
extern __u32 bbr_sndbuf_expand(struct sock *sk) __ksym;
extern __u32 bbr_undo_cwnd(struct sock *sk) __ksym;
extern void bbr_cwnd_event(struct sock *sk, enum tcp_ca_event event) __ksym;
extern __u32 bbr_ssthresh(struct sock *sk) __ksym;
extern __u32 bbr_min_tso_segs(struct sock *sk) __ksym;
extern void bbr_set_state(struct sock *sk, __u8 new_state) __ksym;

struct bbr_native_flow {
	__u64 flow_id;        /* key in RTTFAIR_FLOWS_MAP, 0 = none */
	__u64 first_ns;
	__u32 last_export_us; /* low 32 bits of tcp_mstamp at the last export */
	__u8 exported;        /* 1: has an entry; 2: insert failed (counted once) */
	__u8 _pad[3];
};

RTTFAIR_SK_STORAGE(bbr_native_sk, struct bbr_native_flow, bbr_native_flow_of);

static __always_inline void bbr_native_fill(struct sock *sk, struct bbr_native_flow *nf,
					    struct rttfair_flow *f)
{
	rttfair_fill_tcp(f, sk);
	native_bbr_read_model(tcp_sk(sk), f);
}

static __always_inline void bbr_native_export_create(struct sock *sk, struct bbr_native_flow *nf)
{
	struct rttfair_flow *f = rttfair_flow_insert(sk, nf->flow_id, nf->first_ns);

	if (f)
		bbr_native_fill(sk, nf, f);
	nf->exported = rttfair_flow_publish(f, nf->exported);
}

SEC("struct_ops")
void BPF_PROG(bbrn_init, struct sock *sk)
{
	struct bbr_native_flow *nf;

	bbr_init(sk);
	nf = bbr_native_flow_of(sk, true);
	if (!nf)
		return;
	nf->flow_id = rttfair_next_flow_id();
	nf->first_ns = bpf_ktime_get_ns();
	nf->exported = 0;
	nf->last_export_us = (__u32)tcp_sk(sk)->tcp_mstamp;
	rttfair_count(RTTFAIR_CCA, flows_started, 1);
	bbr_native_export_create(sk, nf);
}

SEC("struct_ops")
void BPF_PROG(bbrn_release, struct sock *sk)
{
	struct bbr_native_flow *nf = bbr_native_flow_of(sk, false);
	__u64 id;

	if (!nf || !nf->flow_id)
		return;
	id = nf->flow_id;
	rttfair_count(RTTFAIR_CCA, flows_released, 1);
	if (!bpf_map_delete_elem(&RTTFAIR_FLOWS_MAP, &id))
		rttfair_count(RTTFAIR_CCA, export_deleted, 1);
	nf->flow_id = 0;
	bpf_sk_storage_delete(&bbr_native_sk, sk);
}

SEC("struct_ops")
void BPF_PROG(bbrn_cong_control, struct sock *sk, __u32 ack, int flag,
	      const struct rate_sample *rs)
{
	struct bbr___rf *b = (void *)tcp_sk(sk)->inet_conn.icsk_ca_priv;
	struct bbr_native_flow *nf;
	struct rttfair_flow *f;
	__u32 now_us;
	__u64 id;

	bbr_main(sk, ack, flag, rs);

	/* Export at most once per native round and per export interval. */
	if (!bpf_core_type_exists(struct bbr___rf) || !BPF_CORE_READ_BITFIELD_PROBED(b, round_start))
		return;
	nf = bbr_native_flow_of(sk, false);
	if (!nf || !nf->flow_id)
		return;
	now_us = (__u32)tcp_sk(sk)->tcp_mstamp;
	if (now_us - nf->last_export_us < RTTFAIR_EXPORT_MIN_INTERVAL_US)
		return;
	nf->last_export_us = now_us;
	id = nf->flow_id;
	if (nf->exported == 1) {
		f = bpf_map_lookup_elem(&RTTFAIR_FLOWS_MAP, &id);
		if (f) {
			bbr_native_fill(sk, nf, f);
			return;
		}
	}
	bbr_native_export_create(sk, nf);
}

/* bbrn_<op>: a struct_ops op of the form __u32 op(sk) that is the kernel's
 * own bbr_<op>, called through its kfunc (no export work of its own). */
#define BBRN_FORWARD_U32(op)                                                   \
	SEC("struct_ops")                                                      \
	__u32 BPF_PROG(bbrn_##op, struct sock *sk)                             \
	{                                                                      \
		return bbr_##op(sk);                                           \
	}

BBRN_FORWARD_U32(ssthresh)
BBRN_FORWARD_U32(undo_cwnd)

SEC("struct_ops")
void BPF_PROG(bbrn_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	bbr_cwnd_event(sk, event);
}

SEC("struct_ops")
void BPF_PROG(bbrn_set_state, struct sock *sk, __u8 new_state)
{
	bbr_set_state(sk, new_state);
}

BBRN_FORWARD_U32(sndbuf_expand)
BBRN_FORWARD_U32(min_tso_segs)

SEC(".struct_ops.link")
struct tcp_congestion_ops bbr_native_ops = {
	.init = (void *)bbrn_init,
	.release = (void *)bbrn_release,
	.cong_control = (void *)bbrn_cong_control,
	.ssthresh = (void *)bbrn_ssthresh,
	.undo_cwnd = (void *)bbrn_undo_cwnd,
	.cwnd_event = (void *)bbrn_cwnd_event,
	.set_state = (void *)bbrn_set_state,
	.sndbuf_expand = (void *)bbrn_sndbuf_expand,
	.min_tso_segs = (void *)bbrn_min_tso_segs,
	.name = "bbr_native",
};

char _license[] SEC("license") = "GPL";
