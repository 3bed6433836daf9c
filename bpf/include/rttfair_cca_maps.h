/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The maps a CCA keeps for itself, one definition for every CCA: each
 * object declares its own through the macros below, so the shape of the map
 * and the way it is read are written once. (The maps all CCAs share with
 * each other and with user space are in rttfair_maps.h.)
 *
 * Each macro expands to exactly the declarations and statements the CCAs
 * used to spell out by hand, so the generated code is unchanged
 * (docs/results.md, "Shared map helpers: instruction-level proof").
 */
#ifndef RTTFAIR_CCA_MAPS_H
#define RTTFAIR_CCA_MAPS_H

#include "tcp_ca.h"

/*
 * RTTFAIR_SK_STORAGE(map, value_type, record_of): a CCA's per-flow record
 * beyond icsk_ca_priv (which holds what every ACK touches, and is full): the
 * BPF_MAP_TYPE_SK_STORAGE map `map` of `value_type`, and its accessor
 *
 *	static value_type *record_of(struct sock *sk, bool create);
 *
 * the socket's record; when it has none, a new zeroed one if `create` (the
 * CCA's init asks for that), else NULL. NULL also when the kernel is out of
 * memory, so every caller checks. The kernel frees the record with the
 * socket. One map per object and not pinned: a socket runs one CCA at a
 * time and no one else reads the record. sk_storage maps require
 * BPF_F_NO_PREALLOC (records are allocated per socket).
 *
 * A macro because each CCA's record has its own type and the accessor is
 * typed (no casts at the callers); BPF C has no generics. `create` is a
 * constant at every call, so after inlining the flags are a constant too.
 */
#define RTTFAIR_SK_STORAGE(map, value_type, record_of)                           \
	struct {                                                                 \
		__uint(type, BPF_MAP_TYPE_SK_STORAGE);                           \
		__uint(map_flags, BPF_F_NO_PREALLOC);                            \
		__type(key, int);                                                \
		__type(value, value_type);                                       \
	} map SEC(".maps");                                                      \
                                                                                 \
	static __always_inline value_type *record_of(struct sock *sk, bool create) \
	{                                                                        \
		return bpf_sk_storage_get(&map, sk, 0,                           \
					  create ? BPF_SK_STORAGE_GET_F_CREATE : 0); \
	}

#endif /* RTTFAIR_CCA_MAPS_H */
