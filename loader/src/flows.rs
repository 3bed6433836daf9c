//! Reading what the CCAs export from the pinned maps: per-flow entries and
//! per-CCA counters, decoded by [`crate::export`].
//!
//! The maps are pinned, so any process with CAP_BPF can read them while the
//! CCAs run, without holding anything the CCAs need.

use libbpf_rs::{MapCore, MapFlags, MapHandle};

use crate::abi::{self, maps, RawCounters, RawFlow};
use crate::bpffs::BpfFs;
use crate::cca::Cca;
use crate::error::{Error, Result};
use crate::export::{Counters, Flow};

/// A reader over the pinned export maps, kept open across reads (the daemon
/// holds one for its lifetime).
pub struct FlowReader {
    flows: MapHandle,
    counters: MapHandle,
}

impl FlowReader {
    pub fn open(fs: &BpfFs) -> Result<Self> {
        Ok(FlowReader {
            flows: fs.open_map(maps::FLOWS)?,
            counters: fs.open_map(maps::COUNTERS)?,
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
                        out.push(Flow::decode(id, &raw));
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
                    out.push(Flow::decode(keys[i], &raw));
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
    pub fn counters(&self, cca: Cca) -> Result<Counters> {
        let key = cca.abi_id().to_ne_bytes();
        let v = self
            .counters
            .lookup(&key, MapFlags::ANY)
            .map_err(|e| Error::bpf("read counters", e))?
            .unwrap_or_default();
        Ok(abi::from_bytes::<RawCounters>(&v)
            .map(|r| Counters::decode(&r))
            .unwrap_or_default())
    }
}

/// Sockets currently using `cca`: flows initialised minus flows released.
/// Exact even when the per-flow map is full (the counters do not depend on it).
pub fn live_sockets(fs: &BpfFs, cca: Cca) -> Result<u64> {
    if !fs.map_pin(maps::COUNTERS).exists() {
        return Ok(0);
    }
    Ok(FlowReader::open(fs)?.counters(cca)?.sockets())
}

/// Write `flows` into the installation's per-flow map, each under its id, as
/// a CCA would export them: for benchmarks and tests that fill the map with
/// synthetic flows (see `lifecycle::create_shared_maps`).
#[doc(hidden)]
pub fn write_synthetic(fs: &BpfFs, flows: &[Flow]) -> Result<()> {
    let map = fs.open_map(maps::FLOWS)?;
    for f in flows {
        map.update(
            &f.id.to_ne_bytes(),
            &abi::to_bytes(&f.encode()),
            MapFlags::ANY,
        )
        .map_err(|e| Error::bpf("write synthetic flow", e))?;
    }
    Ok(())
}
