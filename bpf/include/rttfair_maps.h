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

#endif /* RTTFAIR_MAPS_H */
