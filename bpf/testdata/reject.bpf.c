// SPDX-License-Identifier: GPL-2.0
/*
 * A congestion control the verifier must reject: it writes tp->snd_nxt, which
 * a BPF CCA may not touch. Used by the integration tests to check that a
 * verifier rejection is reported with the verifier's own words and leaves
 * nothing registered.
 */
#include "tcp_ca.h"

SEC("struct_ops")
void BPF_PROG(reject_cong_control, struct sock *sk, __u32 ack, int flag,
	      const struct rate_sample *rs)
{
	tcp_sk(sk)->snd_nxt = 0;
}

SEC("struct_ops")
__u32 BPF_PROG(reject_ssthresh, struct sock *sk)
{
	return tcp_sk(sk)->snd_ssthresh;
}

SEC("struct_ops")
__u32 BPF_PROG(reject_undo_cwnd, struct sock *sk)
{
	return tcp_sk(sk)->snd_cwnd;
}

SEC(".struct_ops.link")
struct tcp_congestion_ops bbr1_ops = {
	.cong_control = (void *)reject_cong_control,
	.ssthresh = (void *)reject_ssthresh,
	.undo_cwnd = (void *)reject_undo_cwnd,
	.name = "bbr1",
};

char _license[] SEC("license") = "GPL";
