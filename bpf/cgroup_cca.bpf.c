// SPDX-License-Identifier: GPL-2.0
/*
 * Per-cgroup default congestion control: a cgroup sock_ops program that sets
 * `cca` on every TCP connection a process in the cgroup opens (before the
 * SYN, at BPF_SOCK_OPS_TCP_CONNECT_CB) or accepts (once established). Linked
 * to the cgroup and pinned, it outlives rttfairctl; removing the pin detaches.
 *
 * GPL-2.0.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#define SOL_TCP 6
#define TCP_CONGESTION 13
#define TCP_CA_NAME_MAX 16

const volatile char cca[TCP_CA_NAME_MAX] = {};
const volatile __u32 cca_len = 0;

SEC("sockops")
int cgroup_set_cca(struct bpf_sock_ops *skops)
{
	char name[TCP_CA_NAME_MAX] = {};
	int i;

	if (skops->op != BPF_SOCK_OPS_TCP_CONNECT_CB &&
	    skops->op != BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB)
		return 1;
	for (i = 0; i < TCP_CA_NAME_MAX; i++)
		name[i] = cca[i];
	bpf_setsockopt(skops, SOL_TCP, TCP_CONGESTION, name, cca_len);
	return 1;
}

char _license[] SEC("license") = "GPL";
