/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reading the kernel's own BBR (net/ipv4/tcp_bbr.c) from its private state,
 * for the two places that show native bbr beside the project's CCAs: the
 * socket iterator (sockets.bpf.c, connections on the kernel's "bbr") and the
 * kfunc-wrapped reference CCA (bbr_native.bpf.c).
 *
 * A local CO-RE flavour of struct bbr: libbpf relocates every access against
 * the running kernel's BTF, vmlinux's when bbr is built in or the tcp_bbr
 * module's when it is a module (Debian and Ubuntu build it as one), and where
 * the type is absent the guarded reads are dead code, so the caller gets the
 * generic TCP view instead of a load failure.
 */
#ifndef RTTFAIR_NATIVE_BBR_H
#define RTTFAIR_NATIVE_BBR_H

#include "rttfair_export.h"

#define NATIVE_BBR_BW_SCALE 24 /* native bbr's bandwidth unit: packets per us << 24 */

struct minmax_sample___rf {
	__u32 t, v;
};

struct minmax___rf {
	struct minmax_sample___rf s[3];
};

struct bbr___rf {
	__u32 min_rtt_us;
	struct minmax___rf bw;
	__u32 rtt_cnt;
	__u32 mode : 3, round_start : 1, lt_is_sampling : 1, lt_rtt_cnt : 7, lt_use_bw : 1;
	__u32 lt_bw;
	__u32 pacing_gain : 10, cwnd_gain : 10, cycle_idx : 3;
} __attribute__((preserve_access_index));

/* Native bbr's model, as bbr_get_info would report it to `ss -ti`. */
static __always_inline void native_bbr_read_model(struct tcp_sock *tp, struct rttfair_flow *f)
{
	struct bbr___rf *b = (void *)tp->inet_conn.icsk_ca_priv;
	__u32 bw = 0, rounds = 0, lt_bw = 0;

	if (!bpf_core_type_exists(struct bbr___rf))
		return;
	bpf_core_read(&bw, sizeof(bw), &b->bw.s[0].v);
	bpf_core_read(&f->min_rtt_us, sizeof(f->min_rtt_us), &b->min_rtt_us);
	bpf_core_read(&rounds, sizeof(rounds), &b->rtt_cnt);
	f->rounds = rounds;
	f->btlbw_bps = ((__u64)bw * f->mss * USEC_PER_SEC) >> NATIVE_BBR_BW_SCALE;
	f->mode = BPF_CORE_READ_BITFIELD_PROBED(b, mode);
	f->cycle_idx = BPF_CORE_READ_BITFIELD_PROBED(b, cycle_idx);
	f->pacing_gain_x256 = BPF_CORE_READ_BITFIELD_PROBED(b, pacing_gain);
	f->cwnd_gain_x256 = BPF_CORE_READ_BITFIELD_PROBED(b, cwnd_gain);
	/* The long-term (policer) model, bbr_lt_bw_sampling(). */
	bpf_core_read(&lt_bw, sizeof(lt_bw), &b->lt_bw);
	f->lt_bw_bps = ((__u64)lt_bw * f->mss * USEC_PER_SEC) >> NATIVE_BBR_BW_SCALE;
	f->lt_use_bw = BPF_CORE_READ_BITFIELD_PROBED(b, lt_use_bw);
	f->lt_is_sampling = BPF_CORE_READ_BITFIELD_PROBED(b, lt_is_sampling);
	f->lt_rtt_cnt = BPF_CORE_READ_BITFIELD_PROBED(b, lt_rtt_cnt);
}

#endif /* RTTFAIR_NATIVE_BBR_H */
