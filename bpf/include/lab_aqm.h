/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The layouts bpf/lab_aqm.bpf.c shares with the lab (lab/src/aqm.rs mirrors
 * them with #[repr(C)] structs and checks their sizes against the object's
 * BTF when it loads it).
 */
#ifndef RTTFAIR_LAB_AQM_H
#define RTTFAIR_LAB_AQM_H

#include "rf_types.h"

/* rttfair_aqm_config.mode */
#define RTTFAIR_AQM_FIFO 0     /* stamp and measure sojourn only */
#define RTTFAIR_AQM_CODEL 1
#define RTTFAIR_AQM_FQ_CODEL 2
#define RTTFAIR_AQM_ECN_STEP 3

struct rttfair_aqm_config {
	__u64 target_ns;
	__u64 interval_ns;
	__u64 k_ns;             /* ECN step threshold on sojourn */
	__u32 mode;
	__u32 ecn;
	__u32 flows;            /* FQ-CoDel: flow queues (HTB leaves) */
	__u32 class_major;      /* HTB handle major of the bottleneck's root */
	__u32 class_minor_base; /* leaf of queue i: major:(base + i) */
	__u32 pad;
};

/* A packet's identity across the veth (all in network byte order). */
struct rttfair_aqm_key {
	__u32 saddr;
	__u32 daddr;
	__u16 sport;
	__u16 dport;
	__u16 ip_id;
	__u8 proto;
	__u8 pad;
	__u32 seq;
	__u32 pad2;
};

struct rttfair_aqm_flow_stats {
	__u64 packets;          /* judged or unstamped, at the dequeue side */
	__u64 drops;
	__u64 marks;
	__u64 unstamped;        /* no enqueue stamp found: passed unjudged */
	__u64 sojourn_sum_ns;   /* over stamped packets */
	__u64 sojourn_max_ns;
};

struct rttfair_aqm_queue_stats {
	__u64 packets;
	__u64 drops;
	__u64 marks;
};

#endif /* RTTFAIR_LAB_AQM_H */
