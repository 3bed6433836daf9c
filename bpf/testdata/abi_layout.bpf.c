// SPDX-License-Identifier: GPL-2.0
/*
 * Not a program: a struct with the shapes rttfair_abi.h does not use (yet),
 * an anonymous union, bitfields, a signed enum, so the ABI layout test's
 * reading of BTF is checked on them too (loader/src/abi/layout.rs).
 * Compiled, never loaded.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

enum layout_probe_sign {
	LAYOUT_PROBE_NEG = -1,
	LAYOUT_PROBE_POS = 7,
};

struct layout_probe {
	__u32 a;
	union {
		__u32 b;
		__u16 c[2];
	};
	__u8 d : 3, e : 5;
	__u64 f;
	enum layout_probe_sign g;
};

struct layout_probe layout_probe SEC(".bss");

char _license[] SEC("license") = "GPL";
