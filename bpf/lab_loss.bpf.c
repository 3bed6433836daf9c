// SPDX-License-Identifier: GPL-2.0
/*
 * Random loss for the lab, at the bottleneck router's entry (tc ingress).
 *
 * netem is not available on this kernel, so the lab's random loss is this
 * program: each IPv4 packet whose source address has an entry in
 * loss_by_saddr is dropped with that probability (value / 2^32), drawn from
 * bpf_get_prandom_u32(). Packets of other sources pass untouched.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#define TC_ACT_OK 0
#define TC_ACT_SHOT 2
#define ETH_P_IP_BE 0x0008 /* htons(0x0800) on little-endian */

/* IPv4 source address (network byte order) -> drop probability x 2^32. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u32);
} loss_by_saddr SEC(".maps");

/* Slot 0: packets dropped. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} loss_dropped SEC(".maps");

SEC("tc")
int lab_random_loss(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	__u32 saddr, zero = 0, *p;
	__u64 *dropped;

	if ((void *)(eth + 1) > end || eth->h_proto != ETH_P_IP_BE)
		return TC_ACT_OK;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end)
		return TC_ACT_OK;
	saddr = ip->saddr;
	p = bpf_map_lookup_elem(&loss_by_saddr, &saddr);
	if (!p || bpf_get_prandom_u32() >= *p)
		return TC_ACT_OK;
	dropped = bpf_map_lookup_elem(&loss_dropped, &zero);
	if (dropped)
		__sync_fetch_and_add(dropped, 1);
	return TC_ACT_SHOT;
}

char _license[] SEC("license") = "GPL";
