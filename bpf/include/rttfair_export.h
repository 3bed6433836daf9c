/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Filling a struct rttfair_flow from a socket: the parts every exporter
 * shares. The CCAs (bbr_core.h) add their model's fields on top; the socket
 * iterator (sockets.bpf.c) adds the kernel's windowed min RTT and, for native
 * bbr, that CCA's model. No maps here, so an object that only reads sockets
 * can include it without creating rttfair's pinned maps.
 */
#ifndef RTTFAIR_EXPORT_H
#define RTTFAIR_EXPORT_H

#include "tcp_ca.h"
#include "rttfair_abi.h"

/* The socket's identity: 4-tuple, family, network namespace. */
static __always_inline void rttfair_fill_identity(struct rttfair_flow *f,
						  const struct sock *sk)
{
	const struct sock_common *skc = &sk->__sk_common;

	f->family = skc->skc_family;
	f->sport = skc->skc_num;
	f->dport = __builtin_bswap16(skc->skc_dport);
	f->netns_ino = skc->skc_net.net->ns.inum;
	if (f->family == AF_INET6) {
		__builtin_memcpy(f->saddr, &skc->skc_v6_rcv_saddr, 16);
		__builtin_memcpy(f->daddr, &skc->skc_v6_daddr, 16);
	} else {
		__builtin_memcpy(f->saddr, &skc->skc_rcv_saddr, 4);
		__builtin_memcpy(f->daddr, &skc->skc_daddr, 4);
	}
}

/* What TCP itself knows of the connection, whatever its CCA, stamped now. */
static __always_inline void rttfair_fill_tcp(struct rttfair_flow *f, const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	f->pacing_rate_bps = sk->sk_pacing_rate;
	f->srtt_us = tp->srtt_us >> 3;
	f->cwnd = tp->snd_cwnd;
	f->mss = tp->mss_cache;
	f->delivered_bytes = tp->bytes_acked;
	f->retrans_bytes = tp->bytes_retrans;
	f->total_retrans = tp->total_retrans;
	f->last_ns = bpf_ktime_get_ns();
}

#endif /* RTTFAIR_EXPORT_H */
