/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rttfair ABI: every layout that crosses the kernel/user boundary.
 *
 * This header is the single source of truth for the BPF maps the CCAs share
 * with user space. The Rust side never re-types these structs: the loader's
 * build script compiles the BPF objects with libbpf-cargo, which emits Rust
 * types from the objects' BTF (see loader/src/abi.rs), and the loader checks
 * at run time that a pinned map's value size matches the generated type.
 *
 * Compatibility rule: a change to any struct or enum below bumps
 * RTTFAIR_ABI_VERSION, and the version is part of every pinned map's name
 * (…_v<N>), so a new build never reuses a pinned map with an older layout by
 * accident. Enforced: loader/tests/data/abi-layout.txt records every layout
 * of this version, and a loader test (loader/src/abi/layout.rs) fails when
 * the compiled layout differs from it under the same version. A new type may
 * be added without a bump; a new struct or enum must also be referenced in
 * bpf/abi.bpf.c (the test checks that too).
 *
 * Units are in the field names: _us microseconds, _ns nanoseconds, _bps bytes
 * per second, _x256 fixed point with 8 fractional bits (BBR_UNIT),
 * _x1024 fixed point with 10 fractional bits.
 */
#ifndef RTTFAIR_ABI_H
#define RTTFAIR_ABI_H

#define RTTFAIR_ABI_VERSION 10

/*
 * A pinned map's name: its base name, "_v", the ABI version. BPF code names
 * a map only through the RTTFAIR_*_MAP / FAIRTT_*_MAP / ... macros built with
 * this, and the loader derives the same strings from the same version
 * (loader/src/abi.rs, map_name), so the version is written once, above.
 */
#define RTTFAIR_CAT3_(a, b, c) a##b##c
#define RTTFAIR_VERSIONED_(name, v) RTTFAIR_CAT3_(name, _v, v)
#define RTTFAIR_VERSIONED(name) RTTFAIR_VERSIONED_(name, RTTFAIR_ABI_VERSION)

/* Which of the project's congestion controls a flow or counter belongs to. */
enum rttfair_cca_id {
	RTTFAIR_CCA_NONE = 0,
	RTTFAIR_CCA_BBR1 = 1,
	RTTFAIR_CCA_FAIRTT = 2,
	RTTFAIR_CCA_ADBBR = 3,
	RTTFAIR_CCA_QFAIR = 4,
	RTTFAIR_CCA_BBR_NATIVE = 5, /* the kernel's bbr through kfuncs, exported */
	RTTFAIR_CCA_BBR3 = 6,       /* BBRv3 (bbr3.bpf.c) */
	RTTFAIR_CCA_MAX = 7,
};

/* The BBR state machine, as exported (matches enum bbr_mode in bbr_core.h). */
enum rttfair_mode {
	RTTFAIR_MODE_STARTUP = 0,
	RTTFAIR_MODE_DRAIN = 1,
	RTTFAIR_MODE_PROBE_BW = 2,
	RTTFAIR_MODE_PROBE_RTT = 3,
};

/* BBRv3's state-machine phase: the mode, with ProbeBW split in four. */
enum rttfair_bbr3_phase {
	RTTFAIR_BBR3_STARTUP = 0,
	RTTFAIR_BBR3_DRAIN = 1,
	RTTFAIR_BBR3_DOWN = 2,      /* ProbeBW DOWN: pacing gain 0.91 */
	RTTFAIR_BBR3_CRUISE = 3,    /* ProbeBW CRUISE: 1.0, headroom below inflight_hi */
	RTTFAIR_BBR3_REFILL = 4,    /* ProbeBW REFILL: 1.0, lower bounds reset */
	RTTFAIR_BBR3_UP = 5,        /* ProbeBW UP: 1.25, inflight_hi grows */
	RTTFAIR_BBR3_PROBE_RTT = 6,
};

/* Ad-BBR's rate-regulation regime (Ad-BBR Alg. 2). */
enum rttfair_adbbr_regime {
	RTTFAIR_ADBBR_NORMAL = 0, /* rRTT < 1.25 nRTT: rate unchanged */
	RTTFAIR_ADBBR_BETA = 1,   /* 1.25 <= rRTT/nRTT < 1.5: rate / beta */
	RTTFAIR_ADBBR_GAMMA = 2,  /* rRTT >= 1.5 nRTT: rate scaled by gamma */
};

/*
 * One entry per socket that uses a project CCA, keyed by a host-unique flow
 * id (u64, allocated from rttfair_ids at init). Inserted in init (blank,
 * then filled in place: rttfair_maps.h, rttfair_flow_insert), refreshed at
 * most once per packet-timed round trip (and not more often than every
 * RTTFAIR_EXPORT_MIN_INTERVAL_US), deleted in release.
 */
struct rttfair_flow {
	__u32 abi_version;     /* RTTFAIR_ABI_VERSION of the writer; 0 until filled */
	__u8 cca;              /* enum rttfair_cca_id */
	__u8 mode;             /* enum rttfair_mode */
	__u8 cycle_idx;        /* ProbeBW phase: the v1 gain cycle's 0..7 (bbr1,
				* fairtt, adbbr, qfair, native bbr); bbr3's
				* 0..3 = UP, DOWN, CRUISE, REFILL */
	__u8 family;           /* AF_INET (2) or AF_INET6 (10) */
	__u32 netns_ino;       /* inode number of the socket's network namespace */
	__u16 sport;           /* local port, host byte order */
	__u16 dport;           /* remote port, host byte order */
	__u8 saddr[16];        /* local address: IPv4 in the first 4 bytes */
	__u8 daddr[16];        /* remote address: IPv4 in the first 4 bytes */
	/* The model's bandwidth estimate, bytes/s: for the v1 core (bbr1,
	 * fairtt, adbbr, qfair) the windowed-max delivery rate, or lt_bw
	 * while policed (lt_use_bw); native bbr's windowed max; bbr3's
	 * min(bw_hi, bw_lo), a cut lower bound after a loss round (its max
	 * is bbr3_bw_hi_bps). */
	__u64 btlbw_bps;
	__u64 pacing_rate_bps; /* sk_pacing_rate, bytes/s */
	__u32 min_rtt_us;      /* the model's RTprop */
	__u32 last_rtt_us;     /* RTT of the latest rate sample */
	__u32 srtt_us;         /* kernel smoothed RTT */
	__u32 cwnd;            /* snd_cwnd, segments */
	__u32 mss;             /* mss_cache, bytes */
	/* The BBR gains in force, x256 (pacing: x BtlBw; cwnd: x BDP); 0 where
	 * no BBR gain sets the rate or the window: qfair in cruise (Eq. 9
	 * and Eq. 1 set them; its own g is qfair_gain_x256), kernel CCAs
	 * without a BBR model. */
	__u16 pacing_gain_x256;
	__u16 cwnd_gain_x256;
	__u64 delivered_bytes; /* tcp_sock.bytes_acked */
	__u64 retrans_bytes;   /* tcp_sock.bytes_retrans */
	__u32 total_retrans;   /* tcp_sock.total_retrans, segments */
	__u32 probe_rtt_entries;
	__u64 rounds;          /* packet-timed round trips so far */
	__u64 first_ns;        /* bpf_ktime_get_ns() at init */
	__u64 last_ns;         /* bpf_ktime_get_ns() at the latest refresh */

	/* The BBR v1 long-term (policer) model, bbr_core.h and native
	 * tcp_bbr.c's bbr_lt_* (zero for CCAs without it: bbr3, kernel CCAs
	 * other than bbr). lt_bw_bps is the policed rate while lt_use_bw, else
	 * the rate of the last lossy interval while lt_is_sampling, else 0. */
	__u64 lt_bw_bps;       /* long-term bandwidth, bytes/s */
	__u8 lt_use_bw;        /* 1 while policed: lt_bw_bps is the model's BtlBw */
	__u8 lt_is_sampling;   /* 1 while a long-term interval is being sampled */
	__u8 lt_rtt_cnt;       /* rounds in the interval, or of using lt_bw (<= 127) */
	__u8 _pad_lt[5];

	/* FaiRTT internals (zero for other CCAs); FaiRTT paper Eq. 4-7. */
	__u32 fairtt_alpha_us;      /* alpha_t, Eq. 5 */
	__u32 fairtt_wminrtt_us;    /* WminRTT_t, Eq. 6 */
	__u32 fairtt_coef_x1024;    /* minRTT*gamma/lastRTT applied to BDP (1024 = none) */
	__u16 fairtt_wfcount;       /* distinct minRTTs seen active in the window */
	__u8 fairtt_active;         /* 1 when the BDP reduction is applied */
	__u8 _pad0;

	/* Ad-BBR internals (zero for other CCAs); Ad-BBR paper Alg. 1-3. */
	__u32 adbbr_nrtt_us;        /* nRTT, Alg. 1 */
	__u32 adbbr_rtt_std_us;     /* std-dev of the RTT history, Alg. 3 */
	__u32 adbbr_factor_x1024;   /* pacing factor applied (1024 = none) */
	__u8 adbbr_regime;          /* enum rttfair_adbbr_regime */
	__u8 _pad1[3];

	/* qfair internals (zero for other CCAs); docs/algorithms.md, "qfair". */
	__u64 qfair_rate_bps;       /* x^: smoothed per-round sending rate (delivered + lost), bytes/s */
	__u32 qfair_alpha_x1024;    /* alpha: the flow's backlog target, packets x1024 */
	__u32 qfair_backlog_x1024;  /* a^ = x^ q^: its own backlog estimate, packets x1024 */
	__s32 qfair_offset_x1024;   /* o: Eq. 8b's integral term, packets x1024, |o| <= o_cap x alpha */
	__u32 qfair_qdelay_us;      /* q^ = D - R^: queueing delay estimate */
	__u32 qfair_standing_rtt_us;/* D: mean of 8 ms bucket minima of the RTT */
	__u32 qfair_target_cwnd;    /* w = g x^ R^ + alpha + o, packets */
	__u32 qfair_drains_ok;      /* synchronised drains that emptied the queue */
	__u32 qfair_drains_failed;  /* drains that did not (a non-qfair queue) */
	__u16 qfair_gain_x256;      /* g, the rate correction of the last round */
	__u8 qfair_competitive;     /* 1 while in competitive mode */
	__u8 qfair_pacing_floor;    /* 1 when w + burst room < 6 while cruising: pacing, not cwnd, limits */
	__u32 qfair_drain_min_us;   /* m: the lowest RTT of the last drain that had a sample
				     * (what its verdict and Eq. 10 judged), 0 = none yet */

	/* bbr3 internals (zero for other CCAs); docs/algorithms.md, "bbr3".
	 * Unset bounds are all ones (~0). */
	__u64 bbr3_bw_hi_bps;       /* long-term max bw (last 1-2 ProbeBW cycles), bytes/s */
	__u64 bbr3_bw_lo_bps;       /* short-term lower bound, bytes/s, ~0 = unset */
	__u32 bbr3_inflight_hi;     /* upper bound from the 2 % loss / ECN test, packets, ~0 = unset */
	__u32 bbr3_inflight_lo;     /* short-term lower bound, packets, ~0 = unset */
	__u32 bbr3_round_loss_ppm;  /* lost / (lost + delivered) of the last round, ppm */
	__u32 bbr3_too_high_events; /* probes ended by the loss/ECN bound */
	__u32 bbr3_lo_cuts;         /* loss rounds that cut bw_lo / inflight_lo */
	__u32 bbr3_extra_acked;     /* ACK-aggregation cwnd allowance, packets */
	__u16 bbr3_ecn_alpha_x256;  /* EWMA of the CE ratio (1.0 until ECN is used) */
	__u8 bbr3_phase;            /* enum rttfair_bbr3_phase */
	__u8 bbr3_ecn_eligible;     /* 1 when ECN drives the model (negotiated, min RTT <= 5 ms) */
	__u32 qfair_noise_us;       /* nu: the flow's own delay noise, its bucket estimator's
				     * reading above R^ at an empty queue (out of q^, into the pipe) */
	__u32 qfair_pipe_us;        /* P = R^ + nu + eps: the pipe Eq. 1's window carries (eps:
				     * the mean RTT above the bucket minima, read in drains) */
};

/* Per-CCA host-wide counters (ARRAY indexed by enum rttfair_cca_id). */
struct rttfair_counters {
	__u64 flows_started;      /* init calls */
	__u64 flows_released;     /* release calls */
	__u64 export_failed;      /* flows left without a map entry: the map was full, or
				   * (bbr3) the sk_storage holding the flow id could not be
				   * allocated */
	__u64 export_deleted;     /* entries removed at release */
	__u64 probe_rtt_entries;  /* ProbeRTT entries, all flows */
};

/*
 * FaiRTT's host-shared minRTT registry (FaiRTT paper Alg. 1 line 4: Wfcount is
 * the number of unique minRTTs in window t). A fixed array of slots, each a
 * class of flows whose minRTTs lie within the distinct-minRTT tolerance of the
 * slot's value; a slot counts while some flow refreshed it within the window.
 * Under fairtt.scope = netns (or addr) a flow counts and joins only the slots
 * of its own network namespace (or local address): each acts as its own host.
 */
#define FAIRTT_REGISTRY_SLOTS 32

struct fairtt_slot {
	__u32 min_rtt_us;  /* representative minRTT of the class */
	__u32 flows;       /* best-effort count of flows that refreshed it */
	__u64 last_seen_ns;
	__u32 scope_id;    /* claimant's netns inode (scope netns), or a hash of that
			    * and its local address (scope addr) */
	__u32 _pad;
};

/*
 * Runtime tunables, one ARRAY entry per CCA, read by fairtt and qfair once
 * per round trip, by adbbr per ACK (adbbr.bpf.c says why). 0 in any field means "use the built-in default" (so a fresh map is a
 * valid configuration); user space validates ranges before writing.
 */
struct fairtt_tunables {
	__u32 beta_ppm;          /* Eq. 6 balance factor, default 800000 (0.8) */
	__u32 gamma_ppm;         /* Alg. 1 discount factor, default 990000 (0.99) */
	__u32 window_ms;         /* activity window for Wfcount, default 1000 */
	__u32 tolerance_pct;     /* distinct-minRTT tolerance, default 10 % */
	__u32 scope;             /* Wfcount counts the classes of: FAIRTT_SCOPE_*, default host */
};

#define FAIRTT_SCOPE_HOST 1  /* every flow on the host, all namespaces */
#define FAIRTT_SCOPE_NETNS 2 /* the flows of the same network namespace */
#define FAIRTT_SCOPE_ADDR 3  /* the flows of the same local address (in the same netns) */

/* qfair (docs/algorithms.md, "qfair"): 0 in a field = the built-in default. */
struct qfair_tunables {
	__u32 alpha0_x1024;      /* alpha_0, packets x1024, default 3072 (3 packets) */
	__u32 k_alpha_x1024;     /* k in alpha_d = alpha_0 + k sqrt(x * 1 ms), x1024, default 1024 */
	__u32 tau_g_ms;          /* rate-correction time scale, default 1000 */
	__u32 g_cap_x256;        /* bound on |g - 1| per round, x256, default 32 (1/8) */
	__u32 drain_period_ms;   /* T_d between drains, default 10000 */
	__u32 drain_clock;       /* 1 wall clock (TAI multiples of T_d), 2 local timer; default 1 */
	__u32 competitive;       /* 1 competitive mode allowed, 2 never; default 1 */
	__u32 o_cap_x256;        /* Eq. 8b: bound on |o| as a fraction of alpha, x256, default 128 (1/2) */
	__u32 exit_drains;       /* drains in a row that must empty the queue to end competitive mode, default 1 */
	__u32 drain_phase_ms;    /* drains at UTC multiples of drain_period_ms plus this, default 0 */
	__u32 tai_offset_s;      /* the host's CLOCK_TAI - UTC (adjtimex), written by the loader, default 0 */
	__u32 rules_off;         /* ablation: a bit per rule of the law switched off (QF_RULE_* in qfair.bpf.c), default 0 */
};

struct adbbr_tunables {
	__u32 alpha_ppm;         /* Alg. 1 threshold alpha * RTprop, default 1250000 (1.25) */
	__u32 hold_ms;           /* Alg. 1 over-threshold duration, default 300 */
	__u32 x_ppm;             /* Eq. 13 noise sensitivity X, default 500000 (0.5) */
	__u32 zmin_us;           /* Eq. 13 protection threshold Z_min, default 5000 */
	__u32 probe_hold_ms;     /* Alg. 3 condition duration, default 10000 */
	__u32 gamma_mode;        /* interpretation of Eq. 12 (ADBBR_GAMMA_*), default 1 */
	__u32 gamma_ref_us;      /* reference delay of gamma mode 3, default 1000 */
	__u32 eta_floor_us;      /* absolute floor of the queueing delay Alg. 1/2 react to, default 1000 */
};

#define RTTFAIR_EXPORT_MIN_INTERVAL_US 1000

/*
 * One TCP connection that does NOT run a project CCA (cubic, native bbr,
 * reno), as the socket iterator bpf/sockets.bpf.c writes it with
 * bpf_seq_write, record after record; the daemon reads them at scrape time
 * to show those flows next to rttfair's own. No map holds it, so it is
 * versioned by flow.abi_version alone. In `flow`: cca is RTTFAIR_CCA_NONE;
 * min_rtt_us is the kernel's windowed min RTT (tcp_sock.rtt_min), except for
 * native bbr, whose own model (struct bbr) also fills btlbw_bps, min_rtt_us
 * (RTprop), mode, cycle_idx, the gains, rounds and the lt_* fields;
 * last_rtt_us, probe counts, first_ns and the variant fields stay zero;
 * last_ns is the time of the read.
 */
struct rttfair_sock {
	struct rttfair_flow flow;
	char cca_name[16];     /* tcp_congestion_ops.name, NUL-terminated */
	__u64 cookie;          /* socket cookie: unique per socket per boot */
};

/*
 * One data segment as it arrived at the lab's receivers (tc ingress on the
 * receiver namespace's interface, after the bottleneck), as
 * bpf/lab_arrivals.bpf.c writes it to its ring buffer. Lab-only: no pinned
 * map holds it (so adding it did not bump RTTFAIR_ABI_VERSION); the lab's
 * goodput counts the bytes of these records that its receivers had not
 * received before (lab/src/arrivals.rs).
 */
struct rttfair_lab_arrival {
	__u64 t_ns;     /* bpf_ktime_get_ns() at arrival (CLOCK_MONOTONIC) */
	__u32 saddr;    /* IPv4 source, network byte order */
	__u32 daddr;    /* IPv4 destination, network byte order */
	__u16 sport;    /* TCP source port, network byte order */
	__u16 dport;    /* TCP destination port, network byte order */
	__u32 seq;      /* sequence number of the first payload byte */
	__u32 len;      /* payload bytes (all segments of a GRO packet) */
	__u32 pad;
};

#endif /* RTTFAIR_ABI_H */
