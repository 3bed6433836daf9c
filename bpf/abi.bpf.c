// SPDX-License-Identifier: GPL-2.0
/*
 * Not a program: the anchor from which libbpf-cargo generates the Rust mirror
 * of rttfair_abi.h (loader/src/abi.rs). Every ABI type is referenced here so
 * it lands in this object's BTF, and so in the generated `types` module and
 * in the layout record the version test checks (loader/src/abi/layout.rs).
 * This object is compiled, never loaded.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "rttfair_abi.h"

struct rttfair_abi_anchor {
	struct rttfair_flow flow;
	struct rttfair_sock sock;
	struct rttfair_counters counters;
	struct fairtt_slot fairtt_slot;
	struct fairtt_tunables fairtt_tunables;
	struct adbbr_tunables adbbr_tunables;
	struct qfair_tunables qfair_tunables;
	enum rttfair_cca_id cca;
	enum rttfair_mode mode;
	enum rttfair_adbbr_regime regime;
	enum rttfair_bbr3_phase bbr3_phase;
	struct rttfair_lab_arrival lab_arrival;
};

struct rttfair_abi_anchor rttfair_abi_anchor SEC(".bss");
const volatile __u32 rttfair_abi_version = RTTFAIR_ABI_VERSION;
const volatile __u32 rttfair_fairtt_registry_slots = FAIRTT_REGISTRY_SLOTS;

char _license[] SEC("license") = "GPL";
