// SPDX-License-Identifier: GPL-2.0
/*
 * sockets: the TCP connections of one network namespace that run a kernel
 * congestion control (cubic, native bbr, reno), in the shape of rttfair's
 * own per-flow export, so the daemon can show them side by side with bbr1,
 * fairtt and adbbr flows (e.g. before and after `rttfairctl migrate`).
 *
 * A BPF iterator (iter/tcp): user space creates an iterator from the
 * attached link and reads it; this program writes one struct rttfair_sock
 * (bpf/include/rttfair_abi.h) per established connection with
 * bpf_seq_write. Flows of the project's CCAs are skipped: their CCA exports
 * richer state through RTTFAIR_FLOWS_MAP.
 *
 * For native bbr the model's own estimates are read from its private state
 * (struct bbr in icsk_ca_priv, from the kernel's BTF, as `ss -ti` would show
 * them through get_info): BtlBw, RTprop, mode and gains. Other CCAs get the
 * generic TCP view: windowed min RTT, srtt, cwnd, pacing rate, bytes.
 *
 * GPL-2.0: iterator programs that call GPL-only helpers must be GPL.
 */
#include "rttfair_export.h"
#include "iter_tcp.h"

#define TCP_CA_NAME_MAX 16
#define BW_SCALE 24 /* native bbr's bandwidth unit: packets per us << 24 */

/* Project CCAs export themselves; the iterator leaves them out. */
static __always_inline bool is_project_cca(const char *n)
{
	return (n[0] == 'b' && n[1] == 'b' && n[2] == 'r' && n[3] == '1' && !n[4]) ||
	       (n[0] == 'f' && n[1] == 'a' && n[2] == 'i' && n[3] == 'r' && n[4] == 't' &&
		n[5] == 't' && !n[6]) ||
	       (n[0] == 'a' && n[1] == 'd' && n[2] == 'b' && n[3] == 'b' && n[4] == 'r' && !n[5]) ||
	       (n[0] == 'q' && n[1] == 'f' && n[2] == 'a' && n[3] == 'i' && n[4] == 'r' && !n[5]);
}

static __always_inline bool is_native_bbr(const char *n)
{
	return n[0] == 'b' && n[1] == 'b' && n[2] == 'r' && !n[3];
}

/*
 * Native bbr's private state, as far as it is read here: a local CO-RE
 * flavour of tcp_bbr.c's struct bbr. libbpf relocates every access against
 * the running kernel's BTF, vmlinux's when bbr is built in or the tcp_bbr
 * module's when it is a module (Debian and Ubuntu build it as one), and
 * where the type is absent the guarded reads are dead code, so native bbr
 * flows then get the generic view instead of a load failure.
 */
struct minmax_sample___rf {
	__u32 t, v;
};

struct minmax___rf {
	struct minmax_sample___rf s[3];
};

struct bbr___rf {
	__u32 min_rtt_us;
	struct minmax___rf bw;
	__u32 rtt_cnt;
	__u32 mode : 3;
	__u32 pacing_gain : 10, cwnd_gain : 10, cycle_idx : 3;
} __attribute__((preserve_access_index));

/* Native bbr's model, as bbr_get_info would report it to `ss -ti`. */
static __always_inline void read_native_bbr(struct tcp_sock *tp, struct rttfair_flow *f)
{
	struct bbr___rf *b = (void *)tp->inet_conn.icsk_ca_priv;
	__u32 bw = 0, rounds = 0;

	if (!bpf_core_type_exists(struct bbr___rf))
		return;
	bpf_core_read(&bw, sizeof(bw), &b->bw.s[0].v);
	bpf_core_read(&f->min_rtt_us, sizeof(f->min_rtt_us), &b->min_rtt_us);
	bpf_core_read(&rounds, sizeof(rounds), &b->rtt_cnt);
	f->rounds = rounds;
	f->btlbw_bps = ((__u64)bw * f->mss * USEC_PER_SEC) >> BW_SCALE;
	f->mode = BPF_CORE_READ_BITFIELD_PROBED(b, mode);
	f->cycle_idx = BPF_CORE_READ_BITFIELD_PROBED(b, cycle_idx);
	f->pacing_gain_x256 = BPF_CORE_READ_BITFIELD_PROBED(b, pacing_gain);
	f->cwnd_gain_x256 = BPF_CORE_READ_BITFIELD_PROBED(b, cwnd_gain);
}

SEC("iter/tcp")
int rttfair_sockets(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct seq_file *seq = ctx->meta->seq;
	struct rttfair_sock rec = {};
	struct rttfair_flow *f = &rec.flow;
	struct tcp_sock *tp;
	int i;

	tp = iter_tcp_connection(skc);
	if (!tp)
		return 0;
	for (i = 0; i < TCP_CA_NAME_MAX - 1; i++)
		rec.cca_name[i] = tp->inet_conn.icsk_ca_ops->name[i];
	if (is_project_cca(rec.cca_name))
		return 0;

	f->abi_version = RTTFAIR_ABI_VERSION;
	f->cca = RTTFAIR_CCA_NONE;
	rttfair_fill_identity(f, (struct sock *)tp);
	rttfair_fill_tcp(f, (struct sock *)tp);
	f->min_rtt_us = tcp_min_rtt(tp);
	if (is_native_bbr(rec.cca_name))
		read_native_bbr(tp, f);
	rec.cookie = bpf_get_socket_cookie(skc);
	bpf_seq_write(seq, &rec, sizeof(rec));
	return 0;
}

char _license[] SEC("license") = "GPL";
