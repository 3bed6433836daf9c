// SPDX-License-Identifier: GPL-2.0
/*
 * Data arrivals at the lab's receivers, for goodput that cannot run ahead of
 * the link.
 *
 * Model. A byte of goodput is a byte of a flow's data that reaches its
 * receiver for the first time. Counted when it arrives at the receivers'
 * interface (tc ingress on c0, right after the bottleneck), the bytes of a
 * window are bytes the bottleneck sent in that window, so their sum cannot
 * exceed the link. The receiver's in-order counter (tcpi_bytes_received)
 * cannot be used for this: it counts bytes held out of order behind a hole
 * when the hole fills, possibly in a later window than the one they crossed
 * the link in. Neither can the advance of the highest sequence number: it
 * credits a hole when the data after it arrives, before the retransmission
 * that fills it has crossed the link.
 *
 * Deciding "for the first time" needs the set of byte ranges each
 * connection has received (a receiver's scoreboard). Its size is the number
 * of holes, which is not bounded: a drop-tail queue at its limit drops about
 * every other packet of a flow in startup. So this program only stamps each
 * segment that carries data, (time, 4-tuple, seq, payload length), into a
 * ring buffer, and the lab keeps the scoreboards in user space
 * (lab/src/arrivals.rs). Per packet: two header loads and one ring-buffer
 * record; no map lookup.
 *
 * The payload length comes from the IP total length, so a GRO packet (several
 * segments merged before tc ingress) is one record covering all of them.
 * Sequence wrap is the reader's concern (serial-number arithmetic per
 * connection). A record the ring has no room for is counted in
 * lab_arrivals_lost; a lost record can only make the count smaller (its bytes
 * count when, and if, they arrive again), never larger.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "rttfair_abi.h"

#define TC_ACT_OK 0
#define ETH_P_IP 0x0800
#define ETH_HLEN_ 14
#define IP_MF_OFFSET 0x3fff /* more-fragments flag and fragment offset */

/* Records of struct rttfair_lab_arrival, 32 bytes each plus the ring's
 * 8-byte header: 4 MiB hold about 100000, 1.2 s of MTU packets at
 * 1 Gbit/s (the lab drains the ring every 250 ms or less). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} lab_arrivals SEC(".maps");

/* Slot 0: records dropped because the ring was full. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lab_arrivals_lost SEC(".maps");

/* Payload bytes of a TCP segment: IP total length less both headers. */
static __always_inline __u32 tcp_payload_bytes(const struct iphdr *ip,
					       const struct tcphdr *tcp)
{
	__u32 total = bpf_ntohs(ip->tot_len);
	__u32 headers = ip->ihl * 4 + tcp->doff * 4;

	return total > headers ? total - headers : 0;
}

SEC("tc")
int lab_count_arrivals(struct __sk_buff *skb)
{
	struct rttfair_lab_arrival *rec;
	struct tcphdr tcp;
	struct iphdr ip;
	__u32 zero = 0, len;
	__u64 *lost;

	if (skb->protocol != bpf_htons(ETH_P_IP))
		return TC_ACT_OK;
	if (bpf_skb_load_bytes(skb, ETH_HLEN_, &ip, sizeof(ip)))
		return TC_ACT_OK;
	if (ip.protocol != IPPROTO_TCP || ip.ihl < 5 ||
	    (ip.frag_off & bpf_htons(IP_MF_OFFSET)))
		return TC_ACT_OK;
	if (bpf_skb_load_bytes(skb, ETH_HLEN_ + ip.ihl * 4, &tcp, sizeof(tcp)))
		return TC_ACT_OK;
	len = tcp_payload_bytes(&ip, &tcp);
	if (!len)
		return TC_ACT_OK;

	rec = bpf_ringbuf_reserve(&lab_arrivals, sizeof(*rec), 0);
	if (!rec) {
		lost = bpf_map_lookup_elem(&lab_arrivals_lost, &zero);
		if (lost)
			__sync_fetch_and_add(lost, 1);
		return TC_ACT_OK;
	}
	rec->t_ns = bpf_ktime_get_ns();
	rec->saddr = ip.saddr;
	rec->daddr = ip.daddr;
	rec->sport = tcp.source;
	rec->dport = tcp.dest;
	rec->seq = bpf_ntohl(tcp.seq);
	rec->len = len;
	rec->pad = 0;
	/* The lab polls the ring; no wake-up per record. */
	bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
