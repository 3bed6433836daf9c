/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The maps every rttfair CCA shares with the others and with user space.
 *
 * All of them are pinned by name (LIBBPF_PIN_BY_NAME); the loader points
 * libbpf at the pin root (/sys/fs/bpf/rttfair/maps by default), so the first
 * CCA loaded creates them and every later one -- and the daemon -- reuses the
 * same kernel objects. That is what makes the state host-wide: a socket in
 * any network namespace, under any of the project's CCAs, lands in the same
 * maps.
 *
 * Layouts: rttfair_abi.h. Map names carry the ABI version: code names each
 * map through its macro below (RTTFAIR_FLOWS_MAP is rttfair_flows_v<N>).
 */
#ifndef RTTFAIR_MAPS_H
#define RTTFAIR_MAPS_H

#include "rttfair_export.h"

#define RTTFAIR_FLOWS_MAP RTTFAIR_VERSIONED(rttfair_flows)
#define RTTFAIR_COUNTERS_MAP RTTFAIR_VERSIONED(rttfair_counters)
#define RTTFAIR_IDS_MAP RTTFAIR_VERSIONED(rttfair_ids)

#ifndef RTTFAIR_FLOWS_MAX
#define RTTFAIR_FLOWS_MAX 65536
#endif

/* Per-flow export: flow id -> struct rttfair_flow. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RTTFAIR_FLOWS_MAX);
	__type(key, __u64);
	__type(value, struct rttfair_flow);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RTTFAIR_FLOWS_MAP SEC(".maps");

/* Host-wide counters, indexed by enum rttfair_cca_id. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RTTFAIR_CCA_MAX);
	__type(key, __u32);
	__type(value, struct rttfair_counters);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RTTFAIR_COUNTERS_MAP SEC(".maps");

/* Slot 0: the next flow id. Shared so ids are unique across all CCAs. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} RTTFAIR_IDS_MAP SEC(".maps");

static __always_inline struct rttfair_counters *rttfair_counters_of(__u32 cca)
{
	return bpf_map_lookup_elem(&RTTFAIR_COUNTERS_MAP, &cca);
}

#define rttfair_count(cca, field, n)                                          \
	do {                                                                   \
		struct rttfair_counters *__c = rttfair_counters_of(cca);       \
		if (__c)                                                       \
			__sync_fetch_and_add(&__c->field, (n));                \
	} while (0)

/* A host-unique, never reused flow id (0 is never handed out). */
static __always_inline __u64 rttfair_next_flow_id(void)
{
	__u32 zero = 0;
	__u64 *next = bpf_map_lookup_elem(&RTTFAIR_IDS_MAP, &zero);

	if (!next)
		return 0;
	return __sync_fetch_and_add(next, 1) + 1;
}

/* ---- Creating a flow's entry in RTTFAIR_FLOWS_MAP ---------------------------
 *
 * Every exporter (bbr_core.h, bbr3.bpf.c, bbr_native.bpf.c) creates its
 * flow's entry the same way, once per flow (at init, and again after a
 * failed insert), never per ACK:
 *
 *	f = rttfair_flow_insert(sk, id, first_ns);
 *	if (f)
 *		fill f in place, as a refresh does;
 *	state = rttfair_flow_publish(f, state);
 *
 * Why not build the record on the stack and insert it whole: 288 bytes in
 * the exporter's deepest call chain (cong_control), of the verifier's 512.
 * The entry is inserted from a blank record in .rodata and filled through
 * the map's pointer, which costs no stack. Not from a per-CPU scratch record
 * either: a CCA's program can be interrupted on its CPU by a softirq that
 * runs another flow's program (a socket's backlog is processed with BHs
 * enabled), which would overwrite the scratch between fill and insert.
 *
 * What a reader sees: the entry exists from the insert on, blank until
 * filled. abi_version is written last (rttfair_flow_publish), and the one
 * reader of the map (loader/src/flows.rs, FlowReader::flows: the CLI, the
 * daemon, the lab's bpf.csv sampler) skips an entry whose abi_version is
 * not its own, so an entry being created is not listed, and one is listed
 * only once it is filled. (A refresh later writes a listed entry in place,
 * field by field, as it always has: a reader's copy is not atomic.)
 */

/* The blank record an entry starts from. const: in .rodata, not on the stack. */
static const struct rttfair_flow rttfair_flow_blank = {};

/*
 * Insert flow `id`'s entry (BPF_NOEXIST) and return it with what never
 * changes filled in: the CCA, the socket's identity, `first_ns`. NULL when
 * it could not be inserted: the map is full (or the id already has an
 * entry). The caller fills the rest in place, then rttfair_flow_publish().
 */
static __always_inline struct rttfair_flow *rttfair_flow_insert(const struct sock *sk, __u64 id,
								 __u64 first_ns)
{
	struct rttfair_flow *f;

	if (bpf_map_update_elem(&RTTFAIR_FLOWS_MAP, &id, &rttfair_flow_blank, BPF_NOEXIST))
		return NULL;
	/* Only this flow's release deletes it, and the socket is locked. */
	f = bpf_map_lookup_elem(&RTTFAIR_FLOWS_MAP, &id);
	if (!f)
		return NULL;
	f->cca = RTTFAIR_CCA;
	rttfair_fill_identity(f, sk);
	f->first_ns = first_ns;
	return f;
}

/*
 * After rttfair_flow_insert(): make the filled entry `f` visible to readers,
 * or, when there is none (NULL), count the flow in export_failed -- once:
 * `exported` is the flow's export state before (0 none, 1 has an entry,
 * 2 insert failed and counted), a retry that fails again is not counted.
 * Returns the new state (1 or 2). The CCA goes on controlling either way.
 */
static __always_inline __u8 rttfair_flow_publish(struct rttfair_flow *f, __u8 exported)
{
	if (f) {
		/* Every field's store before the version's, on every
		 * architecture: an atomic exchange (BPF_XCHG) is fully ordered,
		 * where a plain store after a compiler barrier is ordered only
		 * on x86. Once per flow, so its cost does not matter. */
		__sync_lock_test_and_set(&f->abi_version, RTTFAIR_ABI_VERSION);
		return 1;
	}
	if (exported != 2)
		rttfair_count(RTTFAIR_CCA, export_failed, 1);
	return 2;
}

#endif /* RTTFAIR_MAPS_H */
