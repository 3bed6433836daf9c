//! Moving open connections between congestion controls.
//!
//! A BPF iterator over one namespace's TCP sockets (`bpf/migrate.bpf.c`)
//! calls bpf_setsockopt(TCP_CONGESTION) on each socket that runs `from` and
//! matches the filters. The connection keeps its state; only the CCA's
//! private state is released and re-initialised by the kernel.

use std::io::Read;
use std::mem::MaybeUninit;
use std::net::Ipv4Addr;
use std::os::fd::AsFd;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};

use crate::error::{Error, Result};
use crate::kernel;

skeleton!(skel, "migrate.skel.rs");

/// Which sockets to move.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Destination IPv4 prefix (address, prefix length).
    pub dst: Option<(Ipv4Addr, u8)>,
    /// A local or remote port.
    pub port: Option<u16>,
}

/// What a migration did in one namespace.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Report {
    pub moved: u64,
    /// Matched but refused by the kernel, with the errno and how many.
    pub failed: Vec<(i32, u64)>,
}

impl Report {
    pub fn failed_total(&self) -> u64 {
        self.failed.iter().map(|(_, n)| n).sum()
    }

    pub fn merge(&mut self, other: Report) {
        self.moved += other.moved;
        for (e, n) in other.failed {
            match self.failed.iter_mut().find(|(x, _)| *x == e) {
                Some(slot) => slot.1 += n,
                None => self.failed.push((e, n)),
            }
        }
    }
}

fn name16(name: &str) -> [i8; 16] {
    let mut out = [0i8; 16];
    for (o, b) in out.iter_mut().zip(name.bytes().take(15)) {
        *o = b as i8;
    }
    out
}

/// Parse "10.0.0.0/8" (a bare address means /32).
pub fn parse_prefix(s: &str) -> Result<(Ipv4Addr, u8)> {
    let bad = |r: &str| Error::InvalidValue {
        name: "--dst".into(),
        reason: format!("{r}: '{s}'"),
    };
    let (a, l) = s.split_once('/').unwrap_or((s, "32"));
    let addr: Ipv4Addr = a.parse().map_err(|_| bad("not an IPv4 address"))?;
    let len: u8 = l.parse().map_err(|_| bad("bad prefix length"))?;
    if len > 32 {
        return Err(bad("prefix length above 32"));
    }
    Ok((addr, len))
}

/// Move the sockets of the *calling thread's* network namespace that run
/// `from` (and match `filter`) to `to`. Both must be registered.
pub fn migrate_here(from: &str, to: &str, filter: &Filter) -> Result<Report> {
    if !kernel::is_registered(to)? {
        return Err(Error::NotLoaded {
            cca: format!("{to} (the target)"),
        });
    }
    iterate_here(from, to, filter, false)
}

/// How many sockets of the calling thread's network namespace run `from`
/// (and match `filter`): [`migrate_here`]'s match, moving nothing.
pub fn count_here(from: &str, filter: &Filter) -> Result<u64> {
    Ok(iterate_here(from, from, filter, true)?.moved)
}

/// Run the migrate iterator once here: move the matched sockets to `to`,
/// or with `count_only` report each as moved and move none.
fn iterate_here(from: &str, to: &str, filter: &Filter, count_only: bool) -> Result<Report> {
    for name in [from, to] {
        if name.is_empty() || name.len() > 15 {
            return Err(Error::InvalidValue {
                name: "cca".into(),
                reason: format!("'{name}' is not a CCA name"),
            });
        }
    }
    crate::preflight::require("migrating sockets", crate::preflight::ITERATE_SOCKETS)?;
    let mut storage = MaybeUninit::uninit();
    let mut open = skel::MigrateSkelBuilder::default()
        .open(&mut storage)
        .map_err(|e| Error::bpf("open migrate iterator", e))?;
    let ro = open.maps.rodata_data.as_deref_mut().expect("rodata");
    ro.from_cca = name16(from);
    ro.to_cca = name16(to);
    ro.to_len = to.len() as u32;
    if let Some((net, len)) = filter.dst {
        let mask = if len == 0 {
            0
        } else {
            u32::MAX << (32 - len as u32)
        };
        ro.dst_net = (u32::from(net) & mask).to_be();
        ro.dst_mask = mask.to_be();
        if len == 0 {
            ro.dst_mask = 0;
        }
    }
    ro.port = filter.port.unwrap_or(0);
    ro.count_only = count_only as u32;
    let skel = open
        .load()
        .map_err(|e| Error::bpf("load migrate iterator", e))?;
    let link = skel
        .progs
        .migrate_tcp
        .attach()
        .map_err(|e| Error::bpf("attach migrate iterator", e))?;
    let mut iter = libbpf_rs::Iter::new(&link).map_err(|e| Error::bpf("create iterator", e))?;
    let mut out = String::new();
    iter.read_to_string(&mut out)
        .map_err(|e| Error::io("read iterator", e))?;
    let _ = link.as_fd();
    let mut report = Report::default();
    for line in out.lines() {
        let err: i64 = line
            .split_whitespace()
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(-1);
        if err == 0 {
            report.moved += 1;
        } else {
            report.merge(Report {
                moved: 0,
                failed: vec![((-err) as i32, 1)],
            });
        }
    }
    Ok(report)
}

/// As [`migrate_here`], inside the named network namespace (`/run/netns/NAME`).
pub fn migrate_in_netns(netns: &str, from: &str, to: &str, filter: &Filter) -> Result<Report> {
    let (from, to, filter) = (from.to_string(), to.to_string(), filter.clone());
    in_named_netns(netns, move || migrate_here(&from, &to, &filter))
}

/// Where `ip netns` keeps the named network namespaces.
const NETNS_DIR: &str = "/run/netns";

/// Run `f` on a thread inside the named network namespace.
fn in_named_netns<T: Send + 'static>(
    netns: &str,
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    let path = std::path::Path::new(NETNS_DIR).join(netns);
    let file = std::fs::File::open(&path).map_err(|e| netns_error(&path, e))?;
    in_netns_of(file, &path, f)
}

/// As [`in_named_netns`] for a namespace [`named_netns`] listed: `None`
/// if it has vanished since (its entry is gone: ENOENT), the one case
/// a walk over every namespace skips. Any other failure (setns refused, a
/// failing `f`) is the caller's error, not a namespace silently left out.
fn in_listed_netns<T: Send + 'static>(
    path: &std::path::Path,
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<Option<T>> {
    match std::fs::File::open(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(netns_error(path, e)),
        Ok(file) => in_netns_of(file, path, f).map(Some),
    }
}

fn netns_error(path: &std::path::Path, e: std::io::Error) -> Error {
    Error::io(format!("network namespace {}", path.display()), e)
}

/// Run `f` on a thread that has entered the network namespace `file`
/// (opened from `path`, which errors name).
fn in_netns_of<T: Send + 'static>(
    file: std::fs::File,
    path: &std::path::Path,
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    let context = format!("enter network namespace {}", path.display());
    std::thread::spawn(move || -> Result<T> {
        nix::sched::setns(file.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET)
            .map_err(|e| Error::io(context, e.into()))?;
        f()
    })
    .join()
    .map_err(|_| Error::io("migrate thread", std::io::Error::other("panicked")))?
}

/// How many sockets run `from` in the namespaces [`migrate_all`] reaches
/// without a named one: the calling thread's and every one in /run/netns.
/// Sockets of other namespaces (a container runtime's, an `unshare`d one)
/// are not counted: compare with the CCA's live count to find them.
pub fn count_reachable(from: &str) -> Result<u64> {
    let mut n = count_here(from, &Filter::default())?;
    for ns in named_netns() {
        let from = from.to_string();
        let path = std::path::Path::new(NETNS_DIR).join(ns);
        n += in_listed_netns(&path, move || count_here(&from, &Filter::default()))?.unwrap_or(0);
    }
    Ok(n)
}

/// Move the sockets running `from` (and matching `filter`) to `to` in the
/// named namespace `netns`, or, without one, in the calling thread's
/// namespace and every named one, with the reports added up. A named
/// namespace that vanishes between listing and entering it is skipped;
/// any other failure in one is an error (those before it have moved).
pub fn migrate_all(from: &str, to: &str, netns: Option<&str>, filter: &Filter) -> Result<Report> {
    if !kernel::is_registered(from)? {
        return Err(Error::NotRegistered {
            name: from.to_string(),
        });
    }
    if let Some(ns) = netns {
        return migrate_in_netns(ns, from, to, filter);
    }
    let mut total = migrate_here(from, to, filter)?;
    for ns in named_netns() {
        let (from, to, filter) = (from.to_string(), to.to_string(), filter.clone());
        let path = std::path::Path::new(NETNS_DIR).join(ns);
        if let Some(r) = in_listed_netns(&path, move || migrate_here(&from, &to, &filter))? {
            total.merge(r);
        }
    }
    Ok(total)
}

/// Named network namespaces (/run/netns).
pub fn named_netns() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(NETNS_DIR)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Human text of an errno.
pub fn errno_text(e: i32) -> String {
    std::io::Error::from_raw_os_error(e).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A listed namespace whose entry is gone is skipped (`None`); one
    /// that cannot be entered is an error naming it (once both were
    /// skipped alike, so a namespace `migrate` could not reach went
    /// unsaid). A plain file is not a namespace: setns refuses it (EINVAL,
    /// with or without privileges).
    #[test]
    fn only_a_vanished_namespace_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("gone");
        assert!(in_listed_netns(&gone, || Ok(1)).unwrap().is_none());
        let not_ns = dir.path().join("plain-file");
        std::fs::write(&not_ns, "").unwrap();
        let e = in_listed_netns(&not_ns, || Ok(1)).unwrap_err();
        assert!(e.to_string().contains("plain-file"), "{e}");
    }
}
