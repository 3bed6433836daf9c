/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Small accessors for the parts of the kernel's TCP state a BPF congestion
 * control reads, named after the kernel's own inline helpers (which are not
 * callable from BPF). Everything here is a plain read of BTF-typed memory;
 * the verifier allows struct_ops tcp_congestion_ops programs to treat the
 * `struct sock *` argument as a `struct tcp_sock *`.
 */
#ifndef RTTFAIR_TCP_CA_H
#define RTTFAIR_TCP_CA_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#define USEC_PER_SEC 1000000ULL
#define USEC_PER_MSEC 1000ULL
#define NSEC_PER_USEC 1000ULL
#define NSEC_PER_MSEC 1000000ULL
#define TCP_INIT_CWND 10
#define AF_INET 2
#define AF_INET6 10
#define GSO_LEGACY_MAX_SIZE 65536u
#define MAX_TCP_HEADER_EST 320u /* MAX_TCP_HEADER on x86-64 with no extras */

#define rf_min(a, b) ((a) < (b) ? (a) : (b))
#define rf_max(a, b) ((a) > (b) ? (a) : (b))

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

/* The 104-byte per-socket private area of the congestion control. */
static __always_inline void *inet_csk_ca(const struct sock *sk)
{
	return (void *)inet_csk(sk)->icsk_ca_priv;
}

/* Segments in flight: sent, not yet (s)acked, not marked lost, plus rexmits. */
static __always_inline __u32 tcp_packets_in_flight(const struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

/* Kernel's windowed min RTT (tcp_min_rtt()): the first sample of rtt_min. */
static __always_inline __u32 tcp_min_rtt(const struct tcp_sock *tp)
{
	return tp->rtt_min.s[0].v;
}

/* Sequence-space comparisons that survive u32 wrap-around. */
static __always_inline bool rf_before(__u32 a, __u32 b)
{
	return (__s32)(a - b) < 0;
}

static __always_inline bool rf_after(__u32 a, __u32 b)
{
	return rf_before(b, a);
}

/*
 * t1 - t0 for the low 32 bits of two microsecond stamps, 0 if t1 is earlier
 * (the kernel's tcp_stamp_us_delta() on 64-bit stamps; exact for gaps under
 * 35 minutes).
 */
static __always_inline __u32 rf_stamp_us_delta(__u32 t1, __u32 t0)
{
	__s32 d = (__s32)(t1 - t0);

	return d > 0 ? (__u32)d : 0;
}

/* Monotonic millisecond clock derived from the TCP microsecond clock. */
static __always_inline __u32 tcp_now_ms(const struct tcp_sock *tp)
{
	return (__u32)(tp->tcp_mstamp / USEC_PER_MSEC);
}

static __always_inline __u32 rf_div_round_up(__u64 n, __u64 d)
{
	return d ? (__u32)((n + d - 1) / d) : 0;
}

#endif /* RTTFAIR_TCP_CA_H */
