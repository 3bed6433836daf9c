/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the iter/tcp programs (migrate, sockets) have in common: the
 * connections worth looking at are full TCP sockets (not request or
 * time-wait minisocks, which have no congestion control) that are neither
 * listening nor closed.
 */
#ifndef RTTFAIR_ITER_TCP_H
#define RTTFAIR_ITER_TCP_H

#define RF_TCP_LISTEN 10
#define RF_TCP_CLOSE 7

/* The iterated socket as a tcp_sock if it is a connection, else NULL. */
static __always_inline struct tcp_sock *iter_tcp_connection(struct sock_common *skc)
{
	struct tcp_sock *tp;

	if (!skc)
		return NULL;
	tp = bpf_skc_to_tcp_sock(skc);
	if (!tp)
		return NULL;
	if (skc->skc_state == RF_TCP_LISTEN || skc->skc_state == RF_TCP_CLOSE)
		return NULL;
	return tp;
}

#endif /* RTTFAIR_ITER_TCP_H */
