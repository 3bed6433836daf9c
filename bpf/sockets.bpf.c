// SPDX-License-Identifier: GPL-2.0
/*
 * sockets: the TCP connections of one network namespace that run a kernel
 * congestion control (cubic, native bbr, reno), in the shape of rttfair's
 * own per-flow export, so the daemon can show them side by side with bbr1,
 * fairtt and adbbr flows (e.g. before and after `rttfairctl migrate`).
 *
 * A BPF iterator (iter/tcp): user space creates an iterator from the
 * attached link and reads it; this program writes one struct rttfair_sock
 * (bpf/include/rttfair_abi.h) per established connection with
 * bpf_seq_write. Flows of the project's CCAs are skipped: their CCA exports
 * richer state through RTTFAIR_FLOWS_MAP.
 *
 * For native bbr the model's own estimates are read from its private state
 * (struct bbr in icsk_ca_priv, from the kernel's BTF, as `ss -ti` would show
 * them through get_info): BtlBw, RTprop, mode and gains. Other CCAs get the
 * generic TCP view: windowed min RTT, srtt, cwnd, pacing rate, bytes.
 *
 * GPL-2.0: iterator programs that call GPL-only helpers must be GPL.
 */
#include "rttfair_export.h"
#include "iter_tcp.h"
#include "native_bbr.h"

#define TCP_CA_NAME_MAX 16

/* Project CCAs export themselves; the iterator leaves them out. */
static __always_inline bool is_project_cca(const char *n)
{
	return (n[0] == 'b' && n[1] == 'b' && n[2] == 'r' && n[3] == '1' && !n[4]) ||
	       (n[0] == 'f' && n[1] == 'a' && n[2] == 'i' && n[3] == 'r' && n[4] == 't' &&
		n[5] == 't' && !n[6]) ||
	       (n[0] == 'a' && n[1] == 'd' && n[2] == 'b' && n[3] == 'b' && n[4] == 'r' && !n[5]) ||
	       (n[0] == 'q' && n[1] == 'f' && n[2] == 'a' && n[3] == 'i' && n[4] == 'r' && !n[5]) ||
	       (n[0] == 'b' && n[1] == 'b' && n[2] == 'r' && n[3] == '_' && n[4] == 'n');
}

static __always_inline bool is_native_bbr(const char *n)
{
	return n[0] == 'b' && n[1] == 'b' && n[2] == 'r' && !n[3];
}

SEC("iter/tcp")
int rttfair_sockets(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct seq_file *seq = ctx->meta->seq;
	struct rttfair_sock rec = {};
	struct rttfair_flow *f = &rec.flow;
	struct tcp_sock *tp;
	int i;

	tp = iter_tcp_connection(skc);
	if (!tp)
		return 0;
	for (i = 0; i < TCP_CA_NAME_MAX - 1; i++)
		rec.cca_name[i] = tp->inet_conn.icsk_ca_ops->name[i];
	if (is_project_cca(rec.cca_name))
		return 0;

	f->abi_version = RTTFAIR_ABI_VERSION;
	f->cca = RTTFAIR_CCA_NONE;
	rttfair_fill_identity(f, (struct sock *)tp);
	rttfair_fill_tcp(f, (struct sock *)tp);
	f->min_rtt_us = tcp_min_rtt(tp);
	if (is_native_bbr(rec.cca_name))
		native_bbr_read_model(tp, f);
	rec.cookie = bpf_get_socket_cookie(skc);
	bpf_seq_write(seq, &rec, sizeof(rec));
	return 0;
}

char _license[] SEC("license") = "GPL";
