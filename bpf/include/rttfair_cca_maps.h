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
 * the socket's record; when it has none, a new zeroed one if `create`
 * (where a record starts: a CCA's init, the core's first long-term
 * interval), else NULL. NULL also when the kernel is out of memory, so
 * every caller checks. The kernel frees the record with the
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

/*
 * RTTFAIR_TUNABLES_ARRAY(map, tunables_type): the CCA's runtime tunables,
 * one ARRAY entry (key 0) of `tunables_type` (rttfair_abi.h) that user space
 * writes (rttfairctl set <cca>.<name>). Pinned by name, so a setting
 * survives reloading the CCA and the daemon and rttfairctl find the map.
 */
#define RTTFAIR_TUNABLES_ARRAY(map, tunables_type)                               \
	struct {                                                                 \
		__uint(type, BPF_MAP_TYPE_ARRAY);                                \
		__uint(max_entries, 1);                                          \
		__type(key, __u32);                                              \
		__type(value, tunables_type);                                    \
		__uint(pinning, LIBBPF_PIN_BY_NAME);                             \
	} map SEC(".maps")

/*
 * The tunables a CCA runs with, read one field at a time where each field
 * is used: each field user space has set (non-zero) in the map, the
 * built-in default for every other. 0 means "default" (rttfair_abi.h), so a
 * fresh map is a valid configuration and writing 0 restores a default. A
 * missing entry (an ARRAY always has key 0; the verifier still wants the
 * check) means all defaults. DEFAULTS(X) lists X(field, default) once for
 * every field: the one place a tunable is bound to its default; a field
 * left out would silently run at 0, so the build fails unless the listed
 * fields fill the struct.
 *
 *	RTTFAIR_TUNABLES_SET(set_fn, map)
 *		static const tunables_type *set_fn(void): the map's entry
 *		(NULL: every field at its default): one ARRAY lookup, which
 *		the verifier inlines. fairtt and qfair look it up once per
 *		round trip or event; adbbr per ACK (adbbr.bpf.c says why);
 *	RTTFAIR_TUNABLE_FIELD(fn, tunables_type, field, default)
 *		static __u32 fn(const tunables_type *set): `field` where user
 *		space set it (non-zero), else its default.
 *	RTTFAIR_TUNABLES_COMPLETE(tunables_type, DEFAULTS)
 *		the build fails unless DEFAULTS lists every field, as above.
 *
 * Not a copy of the whole struct: for a per-round update near the
 * verifier's stack limit, a struct copied up front kept every field live
 * across the update, a stack slot each (the 512 bytes are for the whole
 * call chain; docs/results.md, "Stack depth of every CCA program"). A CCA binds its accessor names once, e.g.
 * `#define X_TUN(field, def) RTTFAIR_TUNABLE_FIELD(x_tun_##field, struct
 * x_tunables, field, def)` and `X_TUNABLE_DEFAULTS(X_TUN)`.
 */
#define RTTFAIR_TUNABLES_SET(set_fn, map)                                         	static __always_inline const __typeof__(*(map).value) *set_fn(void)      	{                                                                        		__u32 zero = 0;                                                                                                                                   		return bpf_map_lookup_elem(&(map), &zero);                       	}
#define RTTFAIR_TUNABLE_FIELD(fn, tunables_type, field, def)                     	static __always_inline __u32 fn(const tunables_type *set)                	{                                                                        		__u32 v = set ? set->field : 0;                                                                                                                   		return v ?: (__u32)(def);                                        	}
#define RTTFAIR_TUNABLE_FIELD_SIZE(field, def) +sizeof(__u32)
#define RTTFAIR_TUNABLES_COMPLETE(tunables_type, DEFAULTS)                       	_Static_assert(sizeof(tunables_type) == 0 DEFAULTS(RTTFAIR_TUNABLE_FIELD_SIZE), 		       #DEFAULTS " must list every field of the tunables")

#endif /* RTTFAIR_CCA_MAPS_H */
