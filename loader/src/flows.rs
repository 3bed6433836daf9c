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
                Ok(Some(v)) => out.extend(decode_entry(id, &v)),
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
        // Each call moves the kernel's token on by at least one of the
        // map's buckets (its capacity rounded up to a power of two), so
        // this many calls reach the end; one that would not is refused and
        // the caller iterates key by key.
        let calls = u64::from(self.capacity()).next_power_of_two() + 1;
        for _ in 0..calls {
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
                out.extend(decode_entry(keys[i], &vals[i * vsize..(i + 1) * vsize]));
            }
            match errno {
                0 => {}
                libc::ENOENT => return Some(out),
                _ => return None,
            }
            first = false;
            in_tok = out_tok;
        }
        None
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

/// The flow in one entry of the per-flow map, or `None` when the entry is
/// not one yet (or not of this layout). A CCA inserts its flow's entry blank
/// and fills it in place, writing `abi_version` last (`rttfair_flow_insert`
/// and `rttfair_flow_publish` in bpf/include/rttfair_maps.h), so an entry
/// read in between, with abi_version 0 and no CCA or addresses, is skipped
/// here rather than listed as a flow of no CCA by every reader (the CLI, the
/// daemon, the lab's sampler).
fn decode_entry(id: u64, bytes: &[u8]) -> Option<Flow> {
    abi::from_bytes::<RawFlow>(bytes)
        .filter(|raw| raw.abi_version == abi::ABI_VERSION)
        .map(|raw| Flow::decode(id, &raw))
}

/// Sockets currently using `cca`: flows initialised minus flows released.
/// Exact even when the per-flow map is full (the counters do not depend on it).
/// Without this build's counters that is 0 only if `cca` is not loaded: a
/// `cca` registered by a build of another ABI has counters this build
/// cannot read, and that is an error ([`crate::installed`]), never zero.
pub fn live_sockets(fs: &BpfFs, cca: Cca) -> Result<u64> {
    if !fs.map_pin(maps::COUNTERS).exists() {
        if crate::loaded::is_loaded(cca, fs) {
            crate::installed::loaded_ccas_check(fs, &[cca])?;
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry a CCA has inserted but not yet filled is no flow; a filled
    /// one decodes as written; bytes of another size are no entry.
    #[test]
    fn entries_are_listed_only_once_published() {
        let flow = Flow {
            id: 9,
            cca: Some(Cca::Bbr1),
            netns: 4026531840,
            local: ([10, 0, 0, 1], 40000).into(),
            peer: ([10, 0, 0, 2], 5201).into(),
            cwnd: 10,
            ..Flow::default()
        };
        let filled = abi::to_bytes(&flow.encode());
        assert_eq!(decode_entry(9, &filled), Some(flow));

        let blank = vec![0u8; std::mem::size_of::<RawFlow>()];
        assert_eq!(decode_entry(9, &blank), None, "blank entry listed");

        // Filled but for the version, as a reader may copy it mid-create.
        let mut unpublished = flow.encode();
        unpublished.abi_version = 0;
        assert_eq!(decode_entry(9, &abi::to_bytes(&unpublished)), None);

        assert_eq!(decode_entry(9, &filled[1..]), None, "short entry decoded");
    }
}
