//! What the host must offer before anything is loaded, checked up front so a
//! missing capability is one clear line instead of an obscure libbpf error.
//!
//! Which capability each operation needs was measured on Linux 6.18 (with
//! `kernel.unprivileged_bpf_disabled = 2`, the Debian default) by running
//! each operation under `setpriv --bounding-set=-all,+<caps>`; the kernel's
//! rules behind the results (kernel/bpf/syscall.c):
//!
//! - every `bpf(2)` command needs CAP_BPF (reading a pinned map included);
//! - struct_ops programs (the CCAs) and tracing programs (`iter/tcp`: the
//!   socket reader and migrate) are "perfmon" program types: CAP_PERFMON;
//! - sock_ops programs (per-cgroup defaults) are "net_admin" program types:
//!   CAP_NET_ADMIN;
//! - registering a `tcp_congestion_ops` itself checks no capability, so
//!   loading a CCA does not need CAP_NET_ADMIN;
//! - CAP_SYS_ADMIN stands in for CAP_BPF and CAP_PERFMON (`bpf_capable()`,
//!   `perfmon_capable()`), never for CAP_NET_ADMIN; it is otherwise needed
//!   only to mount bpffs where none is mounted.

use std::path::Path;

use crate::error::{Error, Result};

/// A Linux capability this project may need, with its bit in `CapEff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    NetAdmin = 12,
    SysAdmin = 21,
    Perfmon = 38,
    Bpf = 39,
}

impl Cap {
    /// The name operators know it by (capabilities(7)).
    pub fn name(self) -> &'static str {
        match self {
            Cap::NetAdmin => "CAP_NET_ADMIN",
            Cap::SysAdmin => "CAP_SYS_ADMIN",
            Cap::Perfmon => "CAP_PERFMON",
            Cap::Bpf => "CAP_BPF",
        }
    }

    /// Is this capability (or the one the kernel accepts in its place) in
    /// the effective set `caps`?
    pub fn held_in(self, caps: u64) -> bool {
        let bit = |c: Cap| caps & (1u64 << c as u32) != 0;
        match self {
            Cap::Bpf | Cap::Perfmon => bit(self) || bit(Cap::SysAdmin),
            Cap::NetAdmin | Cap::SysAdmin => bit(self),
        }
    }
}

/// Reading pinned maps (`flows`, `get`, `list`'s details, the daemon).
pub const READ_MAPS: &[Cap] = &[Cap::Bpf];
/// Writing a tunable (`set`): a map update.
pub const WRITE_TUNABLES: &[Cap] = &[Cap::Bpf];
/// Loading or swapping a CCA: struct_ops programs and links.
pub const REGISTER: &[Cap] = &[Cap::Bpf, Cap::Perfmon];
/// Unloading a CCA: reading its socket count and removing the link's pin
/// (no program is loaded).
pub const UNREGISTER: &[Cap] = &[Cap::Bpf];
/// Running an `iter/tcp` program: kernel-CCA sockets (`flows --native`, the
/// daemon's `native_flows`) and `migrate`.
pub const ITERATE_SOCKETS: &[Cap] = &[Cap::Bpf, Cap::Perfmon];
/// Per-cgroup defaults: a sock_ops program attached to a cgroup.
pub const ATTACH_CGROUP: &[Cap] = &[Cap::Bpf, Cap::NetAdmin];

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

/// The capabilities of `needed` missing from the effective set `caps`.
pub fn missing_in(caps: u64, needed: &[Cap]) -> Vec<Cap> {
    needed
        .iter()
        .copied()
        .filter(|c| !c.held_in(caps))
        .collect()
}

/// Refuse `what` unless this process holds every capability in `needed`;
/// the error names each missing one.
pub fn require(what: &str, needed: &[Cap]) -> Result<()> {
    let missing = missing_in(effective_caps(), needed);
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::NotPrivileged {
        what: what.to_string(),
        missing: missing
            .iter()
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(" and "),
    })
}

/// Registering (or swapping) a CCA.
pub fn check_can_register(what: &str) -> Result<()> {
    require(what, REGISTER)
}

/// The kernel BTF that CO-RE relocations and struct_ops need.
pub const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

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

#[cfg(test)]
mod tests {
    use super::*;

    fn set(caps: &[Cap]) -> u64 {
        caps.iter().fold(0, |acc, c| acc | 1u64 << *c as u32)
    }

    #[test]
    fn names_exactly_the_missing_capability() {
        let bpf_only = set(&[Cap::Bpf]);
        assert_eq!(missing_in(bpf_only, REGISTER), vec![Cap::Perfmon]);
        assert_eq!(missing_in(bpf_only, READ_MAPS), vec![]);
        assert_eq!(missing_in(bpf_only, ATTACH_CGROUP), vec![Cap::NetAdmin]);
        assert_eq!(missing_in(0, REGISTER), vec![Cap::Bpf, Cap::Perfmon]);
        assert_eq!(missing_in(set(&[Cap::Bpf, Cap::Perfmon]), REGISTER), vec![]);
    }

    #[test]
    fn sys_admin_stands_in_for_bpf_and_perfmon_but_not_net_admin() {
        let sys_admin = set(&[Cap::SysAdmin]);
        assert!(missing_in(sys_admin, REGISTER).is_empty());
        assert!(missing_in(sys_admin, ITERATE_SOCKETS).is_empty());
        assert_eq!(missing_in(sys_admin, ATTACH_CGROUP), vec![Cap::NetAdmin]);
    }

    #[test]
    fn bits_match_capability_h() {
        // include/uapi/linux/capability.h
        assert_eq!(Cap::NetAdmin as u32, 12);
        assert_eq!(Cap::SysAdmin as u32, 21);
        assert_eq!(Cap::Perfmon as u32, 38);
        assert_eq!(Cap::Bpf as u32, 39);
    }
}
