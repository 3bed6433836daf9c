/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The lab's active queue management decisions (issue 44): CoDel (RFC 8289),
 * a DCTCP-style ECN step threshold, and the per-queue state FQ-CoDel
 * (RFC 8290) keeps. Pure functions over plain structs, compiled both into
 * bpf/lab_aqm.bpf.c and for the host, where loader/tests/aqm_math.rs runs
 * them (through bpf/host/math_host.c) against an independent f64 reference
 * of RFC 8289's pseudocode on synthetic packet traces.
 *
 * Units: times in nanoseconds (bpf_ktime_get_ns()), sizes in bytes.
 *
 * CoDel's dequeue() in the RFC drops packets in a loop and returns the first
 * one it keeps. Here the same algorithm is cut per packet: the data path
 * calls aqm_codel_packet() once per packet leaving the queue, in queue
 * order, and aqm_codel_empty() when a dequeue finds the queue empty. The
 * two places where the RFC's loop looks at the *next* packet inside the
 * same dequeue are carried in `pending`:
 *   - AQM_PENDING_ADVANCE: a packet was dropped in the drop state; the next
 *     packet decides whether the state goes on (then drop_next advances by
 *     the control law with the new count) or ends (sojourn below target);
 *   - AQM_PENDING_DELIVER: the drop state was just entered with a drop; the
 *     RFC delivers the next packet whatever its sojourn (only its
 *     first_above_time bookkeeping runs).
 * Driven that way (a dropped packet is followed at once by the next one,
 * at the same `now`) the decisions are the RFC's exactly; the host tests
 * check this on traces. In the lab the next packet is the next one the
 * bottleneck sends, one packet time later (121 us at 100 Mbit/s), because
 * the decision is taken after the queue (see lab_aqm.bpf.c).
 *
 * ECN (RFC 8289 section 5 mentions marking; the pseudocode only drops): as
 * Linux's codel does, when ECN is on and the packet is ECN-capable (ECT),
 * the packet that would be dropped is marked CE and sent instead; a mark
 * counts as a drop for `count` and the control law, and the packet after a
 * mark is judged as usual (nothing is pending).
 */
#ifndef RTTFAIR_AQM_MATH_H
#define RTTFAIR_AQM_MATH_H

#include "rf_math.h"

/* Verdicts, per packet. */
#define AQM_PASS 0
#define AQM_DROP 1
#define AQM_MARK 2 /* set CE and send */

/* RFC 8289's defaults: TARGET 5 ms, INTERVAL 100 ms. */
#define AQM_CODEL_TARGET_NS 5000000ULL
#define AQM_CODEL_INTERVAL_NS 100000000ULL
/* The control law squares the interval in 64 bits: intervals below 2^32 ns
 * (4.29 s) only (the lab refuses larger ones). */
#define AQM_CODEL_INTERVAL_MAX_NS 0xffffffffULL
/* RFC 8290's number of flow queues (the lab builds one HTB leaf class per
 * queue, so it caps them much lower; see lab/src/aqm.rs). */
#define AQM_FQ_FLOWS_DEFAULT 1024

#define AQM_PENDING_NONE 0
#define AQM_PENDING_ADVANCE 1
#define AQM_PENDING_DELIVER 2

struct aqm_codel_params {
	__u64 target_ns;
	__u64 interval_ns;  /* <= AQM_CODEL_INTERVAL_MAX_NS */
	__u32 maxpacket;    /* bytes: no drop while the backlog is at most this */
	__u32 ecn;          /* 1: mark ECT packets instead of dropping them */
};

/* One CoDel instance (one per FQ-CoDel flow queue). All zero at start. */
struct aqm_codel_vars {
	__u64 first_above_time; /* 0: sojourn not above target (RFC's 0) */
	__u64 drop_next;
	__u32 count;
	__u32 lastcount;
	__u32 dropping;
	__u32 pending;          /* AQM_PENDING_* */
};

/* control_law(t, count) = t + interval / sqrt(count), floored to the ns:
 * floor(sqrt(floor(I^2 / c))) = floor(I / sqrt(c)), exact in integers. */
RF_INLINE __u64 aqm_codel_control_law(__u64 t, __u64 interval_ns, __u32 count)
{
	if (!count)
		count = 1;
	return t + rf_isqrt(interval_ns * interval_ns / count);
}

/* a >= b for ns clocks that may wrap (as Linux's codel_time_after_eq). */
RF_INLINE int aqm_time_after_eq(__u64 a, __u64 b)
{
	return (__s64)(a - b) >= 0;
}

/*
 * The RFC's dodequeue() for a packet that left the queue: sojourn = now -
 * its enqueue time, backlog = bytes still queued behind it. Updates
 * first_above_time; returns ok_to_drop.
 */
RF_INLINE int aqm_codel_ok_to_drop(struct aqm_codel_vars *v, const struct aqm_codel_params *p,
				   __u64 now, __u64 sojourn_ns, __u64 backlog_bytes)
{
	if (sojourn_ns < p->target_ns || backlog_bytes <= p->maxpacket) {
		v->first_above_time = 0;
		return 0;
	}
	if (v->first_above_time == 0) {
		v->first_above_time = now + p->interval_ns;
		return 0;
	}
	return aqm_time_after_eq(now, v->first_above_time);
}

/*
 * One packet leaving the queue at `now`: AQM_PASS, AQM_DROP, or AQM_MARK
 * (only if p->ecn and ect). See the file comment for how calls map onto the
 * RFC's dequeue().
 */
RF_INLINE __u32 aqm_codel_packet(struct aqm_codel_vars *v, const struct aqm_codel_params *p,
				 __u64 now, __u64 sojourn_ns, __u64 backlog_bytes, int ect)
{
	int ok = aqm_codel_ok_to_drop(v, p, now, sojourn_ns, backlog_bytes);
	__u32 pending = v->pending;
	__u32 delta;

	v->pending = AQM_PENDING_NONE;
	if (pending == AQM_PENDING_DELIVER)
		return AQM_PASS;
	if (v->dropping) {
		if (!ok) {
			v->dropping = 0;
			return AQM_PASS;
		}
		if (pending == AQM_PENDING_ADVANCE)
			v->drop_next = aqm_codel_control_law(v->drop_next, p->interval_ns, v->count);
		if (!aqm_time_after_eq(now, v->drop_next))
			return AQM_PASS;
		v->count++;
		if (p->ecn && ect) {
			v->drop_next = aqm_codel_control_law(v->drop_next, p->interval_ns, v->count);
			return AQM_MARK;
		}
		v->pending = AQM_PENDING_ADVANCE;
		return AQM_DROP;
	}
	if (!ok)
		return AQM_PASS;
	/* Enter the drop state; reuse the last cycle's count if it ended less
	 * than 16 intervals ago (the RFC's Linux variant). */
	v->dropping = 1;
	delta = v->count - v->lastcount;
	v->count = 1;
	if (delta > 1 && (__s64)(now - v->drop_next) < (__s64)(16 * p->interval_ns))
		v->count = delta;
	v->drop_next = aqm_codel_control_law(now, p->interval_ns, v->count);
	v->lastcount = v->count;
	if (p->ecn && ect)
		return AQM_MARK;
	v->pending = AQM_PENDING_DELIVER;
	return AQM_DROP;
}

/* A dequeue found the queue empty (the RFC's dodequeue() returning NULL). */
RF_INLINE void aqm_codel_empty(struct aqm_codel_vars *v)
{
	__u32 pending = v->pending;

	v->first_above_time = 0;
	v->pending = AQM_PENDING_NONE;
	/* Right after entering, the RFC stays in the drop state with nothing
	 * to deliver; anywhere else an empty queue is "not ok to drop". */
	if (pending != AQM_PENDING_DELIVER)
		v->dropping = 0;
}

/*
 * DCTCP-style step marking: an ECT packet is marked CE when more than
 * k_pkts packets were queued ahead of it, or its sojourn exceeds k_ns
 * (either threshold 0: not used). Packets that are not ECT pass (the
 * buffer's drop-tail limit still applies to them).
 */
RF_INLINE __u32 aqm_step_packet(__u64 sojourn_ns, __u32 pkts_ahead, __u32 k_pkts, __u64 k_ns,
				int ect)
{
	int over = (k_pkts && pkts_ahead > k_pkts) || (k_ns && sojourn_ns > k_ns);

	return over && ect ? AQM_MARK : AQM_PASS;
}

/*
 * The sojourn of a FIFO served at a constant rate is the backlog ahead of
 * the packet over the rate, so a threshold of K packets is one of
 * K x packet time on sojourn. What the lab's data path uses: it knows
 * sojourn, not the backlog (lab_aqm.bpf.c).
 */
RF_INLINE __u64 aqm_pkts_to_ns(__u32 pkts, __u32 wire_bytes, __u64 rate_bit)
{
	if (!rate_bit)
		return 0;
	return (__u64)pkts * wire_bytes * 8 * 1000000000ULL / rate_bit;
}

/*
 * FQ-CoDel's flow queue of a packet (RFC 8290 section 4.1.1): its 5-tuple
 * hash scaled onto [0, flows) (multiply-shift, as Linux's reciprocal_scale).
 * Each queue has its own struct aqm_codel_vars; the parameters are shared.
 */
RF_INLINE __u32 aqm_fq_queue(__u32 hash, __u32 flows)
{
	return (__u32)(((__u64)hash * flows) >> 32);
}

/* Is an IPv4 TOS byte ECN-capable (ECT(0), ECT(1) or already CE)? */
RF_INLINE int aqm_tos_ect(__u8 tos)
{
	return (tos & 3) != 0;
}

#endif /* RTTFAIR_AQM_MATH_H */
