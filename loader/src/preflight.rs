//! What the host must offer before anything is loaded, checked up front so a
//! missing capability is one clear line instead of an obscure libbpf error.

use std::path::Path;

use crate::error::{Error, Result};

const CAP_NET_ADMIN: u32 = 12;
const CAP_SYS_ADMIN: u32 = 21;
const CAP_BPF: u32 = 39;

/// The kernel BTF that CO-RE relocations and struct_ops need.
pub const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

/// Effective capability set of this process (from /proc/self/status).
pub fn effective_caps() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .unwrap_or(0)
}

fn has(caps: u64, cap: u32) -> bool {
    caps & (1u64 << cap) != 0
}

/// Registering a CCA needs CAP_BPF (or CAP_SYS_ADMIN) and CAP_NET_ADMIN;
/// mounting bpffs needs CAP_SYS_ADMIN.
pub fn check_can_register(what: &str) -> Result<()> {
    let caps = effective_caps();
    let mut missing = Vec::new();
    if !has(caps, CAP_BPF) && !has(caps, CAP_SYS_ADMIN) {
        missing.push("CAP_BPF");
    }
    if !has(caps, CAP_NET_ADMIN) {
        missing.push("CAP_NET_ADMIN");
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Error::NotPrivileged {
            what: what.to_string(),
            missing: missing.join(" and "),
        })
    }
}

/// The kernel must expose its BTF. `RTTFAIR_KERNEL_BTF` overrides the path
/// (to test the failure on a host that has BTF).
pub fn check_btf() -> Result<()> {
    match std::env::var_os("RTTFAIR_KERNEL_BTF") {
        Some(p) => check_btf_at(Path::new(&p)),
        None => check_btf_at(Path::new(VMLINUX_BTF)),
    }
}

/// As [`check_btf`], for a given path (tests point it elsewhere).
pub fn check_btf_at(path: &Path) -> Result<()> {
    if path.exists() {
        Ok(())
    } else {
        Err(Error::NoBtf {
            path: path.to_path_buf(),
        })
    }
}
