// SPDX-License-Identifier: GPL-2.0
/*
 * Moves open TCP connections from one congestion control to another.
 *
 * A BPF iterator over the TCP sockets of one network namespace (iter/tcp;
 * fentry-style hooks do not load on this kernel). For every full socket whose
 * congestion control is `from_cca` and that matches the optional filters
 * (destination IPv4 prefix, a local or remote port), it calls
 * bpf_setsockopt(TCP_CONGESTION, to_cca): the kernel releases the old CCA's
 * state and initialises the new one on the live connection, which keeps its
 * sequence space, buffers and timers. One line per matched socket tells user
 * space what happened: "<errno> <local port> <remote port> <state>". With
 * count_only set it moves nothing and prints "0 ..." per matched socket, so
 * user space can count before it moves (unload --migrate-to).
 *
 * GPL-2.0.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "iter_tcp.h"

#define SOL_TCP 6
#define TCP_CONGESTION 13
#define AF_INET 2
#define TCP_CA_NAME_MAX 16

const volatile char from_cca[TCP_CA_NAME_MAX] = {};
const volatile char to_cca[TCP_CA_NAME_MAX] = {};
const volatile __u32 to_len = 0;
const volatile __u32 dst_net = 0;   /* network byte order */
const volatile __u32 dst_mask = 0;  /* network byte order; 0 = any */
const volatile __u16 port = 0;      /* local or remote port; 0 = any */
const volatile __u32 count_only = 0; /* 1: match and report, move nothing */

static __always_inline bool same_name(const char *a)
{
	int i;

	for (i = 0; i < TCP_CA_NAME_MAX; i++) {
		if (a[i] != from_cca[i])
			return false;
		if (!a[i])
			return true;
	}
	return true;
}

SEC("iter/tcp")
int migrate_tcp(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct seq_file *seq = ctx->meta->seq;
	char name[TCP_CA_NAME_MAX] = {};
	struct tcp_sock *tp;
	__u16 lport, rport;
	long err;
	int i;

	tp = iter_tcp_connection(skc);
	if (!tp)
		return 0;
	if (!same_name(tp->inet_conn.icsk_ca_ops->name))
		return 0;
	lport = skc->skc_num;
	rport = __builtin_bswap16(skc->skc_dport);
	if (port && lport != port && rport != port)
		return 0;
	if (dst_mask && (skc->skc_family != AF_INET || (skc->skc_daddr & dst_mask) != dst_net))
		return 0;
	if (count_only) {
		BPF_SEQ_PRINTF(seq, "0 %u %u %u\n", lport, rport, skc->skc_state);
		return 0;
	}
	for (i = 0; i < TCP_CA_NAME_MAX; i++)
		name[i] = to_cca[i];
	err = bpf_setsockopt(tp, SOL_TCP, TCP_CONGESTION, name, to_len);
	BPF_SEQ_PRINTF(seq, "%ld %u %u %u\n", err, lport, rport, skc->skc_state);
	return 0;
}

char _license[] SEC("license") = "GPL";
