//! Reading what the CCAs export: per-flow entries and per-CCA counters.
//!
//! The maps are pinned, so any process with CAP_BPF can read them while the
//! CCAs run, without holding anything the CCAs need.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use libbpf_rs::{MapCore, MapFlags, MapHandle};

use crate::abi::{self, RawCounters, RawFlow};
use crate::bpffs::BpfFs;
use crate::cca::Cca;
use crate::error::{Error, Result};
use crate::lifecycle::{COUNTERS_MAP, FLOWS_MAP};

/// One flow as a CCA last exported it.
#[derive(Debug, Clone, Copy)]
pub struct Flow {
    /// Host-unique flow id (the map key).
    pub id: u64,
    pub raw: RawFlow,
}

impl Flow {
    pub fn cca(&self) -> Option<Cca> {
        Cca::from_abi_id(self.raw.cca as u32)
    }

    pub fn local(&self) -> SocketAddr {
        SocketAddr::new(addr(self.raw.family, &self.raw.saddr), self.raw.sport)
    }

    pub fn peer(&self) -> SocketAddr {
        SocketAddr::new(addr(self.raw.family, &self.raw.daddr), self.raw.dport)
    }

    /// BBR state name.
    pub fn mode(&self) -> &'static str {
        mode_name(self.raw.mode)
    }

    pub fn min_rtt_secs(&self) -> f64 {
        self.raw.min_rtt_us as f64 / 1e6
    }
}

/// Human name of an exported BBR mode.
pub fn mode_name(mode: u8) -> &'static str {
    match mode {
        abi::MODE_STARTUP => "startup",
        abi::MODE_DRAIN => "drain",
        abi::MODE_PROBE_BW => "probe_bw",
        abi::MODE_PROBE_RTT => "probe_rtt",
        _ => "unknown",
    }
}

/// Human name of an Ad-BBR regime.
pub fn regime_name(regime: u8) -> &'static str {
    match regime {
        abi::REGIME_NORMAL => "normal",
        abi::REGIME_BETA => "beta",
        abi::REGIME_GAMMA => "gamma",
        _ => "unknown",
    }
}

fn addr(family: u8, bytes: &[u8; 16]) -> IpAddr {
    if family == libc::AF_INET6 as u8 {
        IpAddr::V6(Ipv6Addr::from(*bytes))
    } else {
        IpAddr::V4(Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]))
    }
}

/// Open a shared map by name, with a clear error if nothing was ever loaded.
pub fn open_shared_map(fs: &BpfFs, name: &str) -> Result<MapHandle> {
    fs.check_access(&format!("reading {name}"))?;
    let path = fs.map_pin(name);
    if !path.exists() {
        return Err(Error::NothingLoaded { path });
    }
    MapHandle::from_pinned_path(&path).map_err(|e| match e.kind() {
        libbpf_rs::ErrorKind::PermissionDenied => Error::NotPrivileged {
            what: format!("reading {}", path.display()),
            missing: "CAP_BPF (or read access to bpffs)".into(),
        },
        _ => Error::bpf(format!("open {}", path.display()), e),
    })
}

/// A reader over the pinned export maps, kept open across reads (the daemon
/// holds one for its lifetime).
pub struct FlowReader {
    flows: MapHandle,
    counters: MapHandle,
}

impl FlowReader {
    pub fn open(fs: &BpfFs) -> Result<Self> {
        Ok(FlowReader {
            flows: open_shared_map(fs, FLOWS_MAP)?,
            counters: open_shared_map(fs, COUNTERS_MAP)?,
        })
    }

    /// Capacity of the per-flow map.
    pub fn capacity(&self) -> u32 {
        self.flows.max_entries()
    }

    /// Every exported flow. Entries deleted while iterating are skipped.
    /// Batched lookups (1024 entries a syscall) where the kernel has them.
    pub fn flows(&self) -> Result<Vec<Flow>> {
        if let Some(mut out) = self.flows_batched() {
            out.sort_by_key(|f| f.id);
            return Ok(out);
        }
        let mut out = Vec::new();
        for key in self.flows.keys() {
            let Ok(k) = <[u8; 8]>::try_from(key.as_slice()) else {
                continue;
            };
            let id = u64::from_ne_bytes(k);
            match self.flows.lookup(&key, MapFlags::ANY) {
                Ok(Some(v)) => {
                    if let Some(raw) = abi::from_bytes::<RawFlow>(&v) {
                        out.push(Flow { id, raw });
                    }
                }
                Ok(None) => {}
                Err(e) => return Err(Error::bpf("read flow entry", e)),
            }
        }
        out.sort_by_key(|f| f.id);
        Ok(out)
    }

    /// All entries through BPF_MAP_LOOKUP_BATCH, 1024 a syscall; `None` if
    /// the kernel refuses batching (then the caller iterates key by key).
    /// (libbpf-rs' batch iterator stops at the first short batch, and hash
    /// maps return short batches before the end, so this drives the syscall
    /// itself until ENOENT.)
    fn flows_batched(&self) -> Option<Vec<Flow>> {
        use std::os::fd::{AsFd, AsRawFd};
        const BATCH: usize = 1024;
        let vsize = std::mem::size_of::<RawFlow>();
        let mut keys = vec![0u64; BATCH];
        let mut vals = vec![0u8; BATCH * vsize];
        let (mut in_tok, mut out_tok) = (0u64, 0u64);
        let opts = libbpf_rs::libbpf_sys::bpf_map_batch_opts {
            sz: std::mem::size_of::<libbpf_rs::libbpf_sys::bpf_map_batch_opts>() as _,
            ..Default::default()
        };
        let mut out = Vec::new();
        let mut first = true;
        loop {
            let mut count = BATCH as u32;
            // SAFETY: buffers sized for `count` keys/values; tokens are u64.
            let rc = unsafe {
                libbpf_rs::libbpf_sys::bpf_map_lookup_batch(
                    self.flows.as_fd().as_raw_fd(),
                    if first {
                        std::ptr::null_mut()
                    } else {
                        (&mut in_tok as *mut u64).cast()
                    },
                    (&mut out_tok as *mut u64).cast(),
                    keys.as_mut_ptr().cast(),
                    vals.as_mut_ptr().cast(),
                    &mut count,
                    &opts,
                )
            };
            let errno = if rc < 0 {
                std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
            } else {
                0
            };
            for i in 0..(count as usize).min(BATCH) {
                if let Some(raw) = abi::from_bytes::<RawFlow>(&vals[i * vsize..(i + 1) * vsize]) {
                    out.push(Flow { id: keys[i], raw });
                }
            }
            match errno {
                0 => {}
                libc::ENOENT => return Some(out),
                _ => return None,
            }
            first = false;
            in_tok = out_tok;
        }
    }

    /// Counters of one CCA.
    pub fn counters(&self, cca: Cca) -> Result<RawCounters> {
        let key = cca.abi_id().to_ne_bytes();
        let v = self
            .counters
            .lookup(&key, MapFlags::ANY)
            .map_err(|e| Error::bpf("read counters", e))?
            .unwrap_or_default();
        Ok(abi::from_bytes::<RawCounters>(&v).unwrap_or_default())
    }
}

/// Sockets currently using `cca`: flows initialised minus flows released.
/// Exact even when the per-flow map is full (the counters do not depend on it).
pub fn live_sockets(fs: &BpfFs, cca: Cca) -> Result<u64> {
    if !fs.map_pin(COUNTERS_MAP).exists() {
        return Ok(0);
    }
    let c = FlowReader::open(fs)?.counters(cca)?;
    Ok(c.flows_started.saturating_sub(c.flows_released))
}
