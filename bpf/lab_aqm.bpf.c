// SPDX-License-Identifier: GPL-2.0
/*
 * Active queue management at the lab's bottleneck (issue 44): CoDel,
 * FQ-CoDel and ECN step marking, as two tc programs around the bottleneck
 * qdisc, because this kernel has no codel/fq_codel/red/sch_bpf qdisc
 * (shared/KERNEL.md) and tc-BPF is the only place a packet can be dropped
 * or CE-marked by a program.
 *
 * Where each piece runs, and why:
 *
 *  - lab_aqm_enqueue, tc egress (clsact) of the bottleneck interface r1.
 *    clsact egress runs in __dev_queue_xmit just before the root qdisc's
 *    enqueue, so bpf_ktime_get_ns() there is the enqueue time. It records
 *    the time in aqm_stamps under the packet's identity (below). For
 *    FQ-CoDel it also picks the packet's flow queue (RFC 8290's hash onto
 *    `flows` queues) and puts it in skb->priority as an HTB class id: HTB
 *    classifies by skb->priority before any filter (htb_classify), and
 *    the lab builds one leaf class per queue under the rate class, all with
 *    the same quantum, so HTB's deficit round robin among backlogged
 *    leaves is FQ-CoDel's DRR among flow queues (lab/src/aqm.rs).
 *
 *  - lab_aqm_dequeue, tc ingress of the receivers' interface c0, the other
 *    end of r1's veth. No hook runs at a qdisc's dequeue; the veth hands a
 *    packet to c0's ingress right after the qdisc released it and the
 *    veth transmitted it (same softirq, no queue in between at these
 *    rates), so now - stamp is the packet's sojourn in the bottleneck plus
 *    the hop's own cost: 8 us mean, 19 us max measured on an idle
 *    100 Mbit/s link (tests/aqm.rs; HTB sends an idle link's packet at
 *    once and the veth does not serialise). There CoDel (per queue for
 *    FQ-CoDel) or the step threshold decides: pass, CE-mark
 *    (bpf_skb_ecn_set_ce) or drop (TC_ACT_SHOT). It runs before the
 *    arrival counter (lower tc priority), so a dropped packet never
 *    counts as goodput.
 *
 * Carrying the stamp across the veth: the veth scrubs a packet that
 * changes namespace (skb_scrub_packet: mark cleared; tstamp cleared unless
 * it is a mono delivery time), and a delivery time on skb->tstamp would
 * also be one more thing that changes meaning across kernels. So the
 * stamp travels in a map keyed by what identifies a packet end to end
 * without help from the kernel: addresses, ports, IPv4 id and TCP
 * sequence number (a retransmission has a new IP id). The dequeue side
 * deletes the entry; packets the bfifo drops at its limit leave theirs,
 * which the LRU map evicts. A packet with no stamp passes and is counted.
 *
 * What the decision after the queue changes against a real dequeue-side
 * AQM: a dropped packet has already used its transmission time on the
 * link, and the next packet judged is the next one the link sent. The
 * CoDel state machine is otherwise the RFC's (aqm_math.h). The RFC's
 * "backlog at most one MTU" guard is not available (the backlog behind a
 * packet is not known here), so it is taken as always above: at the lab's
 * rates (>= 10 Mbit/s, 1.2 ms per packet) the target of 5 ms is several
 * packets.
 *
 * Statistics for the lab's sampler: per sender address (each lab flow
 * has its own) packets, drops, marks, unstamped packets, sum and max of the
 * sojourn; per queue the CoDel state and its drops and marks (the
 * self-check reads them live).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "aqm_math.h"
#include "lab_aqm.h"

#define TC_ACT_UNSPEC (-1)
#define TC_ACT_SHOT 2
#define ETH_P_IP 0x0800
#define ETH_HLEN_ 14
#define IP_MF_OFFSET 0x3fff

/* Largest number of flow queues (HTB leaf classes) the lab builds. */
#define AQM_MAX_QUEUES 64

/* See lab_aqm.h for the config, stats and key layouts. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rttfair_aqm_config);
} aqm_config SEC(".maps");

struct aqm_stamp {
	__u64 t_ns;
	__u32 queue;
	__u32 pad;
};

/* 64k packets: 780 ms of MTU packets at 1 Gbit/s, far more than the lab's
 * buffers hold. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct rttfair_aqm_key);
	__type(value, struct aqm_stamp);
} aqm_stamps SEC(".maps");

struct aqm_queue {
	struct bpf_spin_lock lock;
	__u32 pad;
	struct aqm_codel_vars v;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, AQM_MAX_QUEUES);
	__type(key, __u32);
	__type(value, struct aqm_queue);
} aqm_queues SEC(".maps");

/* Per queue: drops and marks and the state, for the self-check. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, AQM_MAX_QUEUES);
	__type(key, __u32);
	__type(value, struct rttfair_aqm_queue_stats);
} aqm_queue_stats SEC(".maps");

/* IPv4 source address (network byte order) -> counters. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct rttfair_aqm_flow_stats);
} aqm_flow_stats SEC(".maps");

/* Parse an IPv4 packet into its key; the TOS byte through *tos. */
static __always_inline int aqm_parse(struct __sk_buff *skb, struct rttfair_aqm_key *k, __u8 *tos)
{
	struct iphdr ip;
	struct tcphdr tcp;
	struct udphdr udp;

	if (skb->protocol != bpf_htons(ETH_P_IP))
		return -1;
	if (bpf_skb_load_bytes(skb, ETH_HLEN_, &ip, sizeof(ip)) || ip.ihl < 5)
		return -1;
	__builtin_memset(k, 0, sizeof(*k));
	k->saddr = ip.saddr;
	k->daddr = ip.daddr;
	k->ip_id = ip.id;
	k->proto = ip.protocol;
	*tos = ip.tos;
	if (ip.frag_off & bpf_htons(IP_MF_OFFSET))
		return 0;
	if (ip.protocol == IPPROTO_TCP) {
		if (bpf_skb_load_bytes(skb, ETH_HLEN_ + ip.ihl * 4, &tcp, sizeof(tcp)))
			return 0;
		k->sport = tcp.source;
		k->dport = tcp.dest;
		k->seq = tcp.seq;
	} else if (ip.protocol == IPPROTO_UDP) {
		if (bpf_skb_load_bytes(skb, ETH_HLEN_ + ip.ihl * 4, &udp, sizeof(udp)))
			return 0;
		k->sport = udp.source;
		k->dport = udp.dest;
	}
	return 0;
}

SEC("tc")
int lab_aqm_enqueue(struct __sk_buff *skb)
{
	struct rttfair_aqm_config *cfg;
	struct rttfair_aqm_key k;
	struct aqm_stamp st = {};
	__u32 zero = 0;
	__u8 tos;

	cfg = bpf_map_lookup_elem(&aqm_config, &zero);
	if (!cfg || aqm_parse(skb, &k, &tos))
		return TC_ACT_UNSPEC;
	if (cfg->mode == RTTFAIR_AQM_FQ_CODEL && cfg->flows) {
		st.queue = aqm_fq_queue(bpf_get_hash_recalc(skb), cfg->flows);
		if (st.queue >= AQM_MAX_QUEUES)
			st.queue = 0;
		skb->priority = cfg->class_major << 16 | (cfg->class_minor_base + st.queue);
	}
	st.t_ns = bpf_ktime_get_ns();
	bpf_map_update_elem(&aqm_stamps, &k, &st, BPF_ANY);
	return TC_ACT_UNSPEC;
}

static __always_inline void aqm_count(__u32 saddr, __u32 verdict, __u64 sojourn, int stamped)
{
	struct rttfair_aqm_flow_stats *fs, init = {};

	fs = bpf_map_lookup_elem(&aqm_flow_stats, &saddr);
	if (!fs) {
		bpf_map_update_elem(&aqm_flow_stats, &saddr, &init, BPF_NOEXIST);
		fs = bpf_map_lookup_elem(&aqm_flow_stats, &saddr);
		if (!fs)
			return;
	}
	__sync_fetch_and_add(&fs->packets, 1);
	if (!stamped) {
		__sync_fetch_and_add(&fs->unstamped, 1);
		return;
	}
	__sync_fetch_and_add(&fs->sojourn_sum_ns, sojourn);
	if (sojourn > fs->sojourn_max_ns)
		fs->sojourn_max_ns = sojourn; /* racy max: a sample may be lost */
	if (verdict == AQM_DROP)
		__sync_fetch_and_add(&fs->drops, 1);
	else if (verdict == AQM_MARK)
		__sync_fetch_and_add(&fs->marks, 1);
}

SEC("tc")
int lab_aqm_dequeue(struct __sk_buff *skb)
{
	struct rttfair_aqm_queue_stats *qs;
	struct rttfair_aqm_config *cfg;
	struct rttfair_aqm_key k;
	struct aqm_codel_params p;
	struct aqm_stamp *st;
	struct aqm_queue *q;
	__u64 now, sojourn;
	__u32 zero = 0, verdict = AQM_PASS, qi;
	__u8 tos;
	int ect;

	cfg = bpf_map_lookup_elem(&aqm_config, &zero);
	if (!cfg || aqm_parse(skb, &k, &tos))
		return TC_ACT_UNSPEC;
	st = bpf_map_lookup_elem(&aqm_stamps, &k);
	if (!st) {
		aqm_count(k.saddr, AQM_PASS, 0, 0);
		return TC_ACT_UNSPEC;
	}
	now = bpf_ktime_get_ns();
	sojourn = now > st->t_ns ? now - st->t_ns : 0;
	qi = st->queue < AQM_MAX_QUEUES ? st->queue : 0;
	bpf_map_delete_elem(&aqm_stamps, &k);
	ect = aqm_tos_ect(tos);

	if (cfg->mode == RTTFAIR_AQM_CODEL || cfg->mode == RTTFAIR_AQM_FQ_CODEL) {
		p.target_ns = cfg->target_ns;
		p.interval_ns = cfg->interval_ns;
		p.maxpacket = 0; /* backlog unknown: taken as above it (see above) */
		p.ecn = cfg->ecn;
		q = bpf_map_lookup_elem(&aqm_queues, &qi);
		if (!q)
			return TC_ACT_UNSPEC;
		bpf_spin_lock(&q->lock);
		verdict = aqm_codel_packet(&q->v, &p, now, sojourn, ~0ULL, ect);
		bpf_spin_unlock(&q->lock);
	} else if (cfg->mode == RTTFAIR_AQM_ECN_STEP) {
		verdict = aqm_step_packet(sojourn, 0, 0, cfg->k_ns, ect);
	}

	if (verdict == AQM_MARK && bpf_skb_ecn_set_ce(skb) != 1)
		verdict = AQM_DROP; /* cannot happen for an ECT packet; drop as CoDel would */
	aqm_count(k.saddr, verdict, sojourn, 1);
	qs = bpf_map_lookup_elem(&aqm_queue_stats, &qi);
	if (qs) {
		__sync_fetch_and_add(&qs->packets, 1);
		if (verdict == AQM_DROP)
			__sync_fetch_and_add(&qs->drops, 1);
		else if (verdict == AQM_MARK)
			__sync_fetch_and_add(&qs->marks, 1);
	}
	return verdict == AQM_DROP ? TC_ACT_SHOT : TC_ACT_UNSPEC;
}

char _license[] SEC("license") = "GPL";
