//! The host's other TCP connections: those on a kernel congestion control
//! (cubic, native bbr, reno), read so they can be shown next to rttfair's own
//! flows (before and after a migration, or a native bbr flow beside bbr1).
//!
//! A BPF iterator over one network namespace's TCP sockets
//! (`bpf/sockets.bpf.c`) writes one `struct rttfair_sock` per connection; the
//! reader loads and attaches it once and creates a fresh iterator per read.
//! It sees the namespace of the thread that opened it (for the daemon: the
//! host's).

use std::io::Read;

use libbpf_rs::{Link, Object, ObjectBuilder};

use crate::abi::{self, RawSock};
use crate::error::{Error, Result};
use crate::export::Flow;
use crate::objects;

/// One connection on a kernel CCA.
#[derive(Debug, Clone)]
pub struct NativeSocket {
    /// The socket cookie (unique per socket per boot).
    pub cookie: u64,
    /// Name of its congestion control.
    pub cca: String,
    /// Its state, in the shape of rttfair's per-flow export, with the cookie
    /// as id and `cca` None (see the field notes on `struct rttfair_sock` in
    /// rttfair_abi.h for what is filled).
    pub flow: Flow,
}

impl NativeSocket {
    /// Whether the CCA's own model filled BtlBw, mode and gains (native bbr).
    pub fn has_bbr_model(&self) -> bool {
        self.cca == "bbr"
    }
}

/// The loaded, attached iterator program.
pub struct SocketReader {
    link: Link,
    _object: Object,
}

impl SocketReader {
    /// Load and attach the iterator (needs CAP_BPF and CAP_PERFMON).
    pub fn open() -> Result<Self> {
        crate::preflight::require(
            "reading kernel-CCA sockets",
            crate::preflight::ITERATE_SOCKETS,
        )?;
        let object = ObjectBuilder::default()
            .open_memory(objects::SOCKETS)
            .map_err(|e| Error::bpf("open socket iterator", e))?
            .load()
            .map_err(|e| Error::bpf("load socket iterator", e))?;
        let link = object
            .progs_mut()
            .find(|p| p.name() == "rttfair_sockets")
            .ok_or_else(|| Error::io("socket iterator", std::io::Error::other("program missing")))?
            .attach()
            .map_err(|e| Error::bpf("attach socket iterator", e))?;
        Ok(SocketReader {
            link,
            _object: object,
        })
    }

    /// Every established connection on a kernel CCA, now.
    pub fn read(&self) -> Result<Vec<NativeSocket>> {
        let mut iter = libbpf_rs::Iter::new(&self.link)
            .map_err(|e| Error::bpf("create socket iterator", e))?;
        let mut bytes = Vec::new();
        iter.read_to_end(&mut bytes)
            .map_err(|e| Error::io("read socket iterator", e))?;
        Ok(parse(&bytes))
    }
}

/// Split the iterator's output into records. A trailing partial record
/// (never written by the program) is ignored.
fn parse(bytes: &[u8]) -> Vec<NativeSocket> {
    let size = std::mem::size_of::<RawSock>();
    bytes
        .chunks_exact(size)
        .filter_map(abi::from_bytes::<RawSock>)
        .filter(|r| r.flow.abi_version == abi::ABI_VERSION)
        .map(|r| {
            let name: Vec<u8> = r
                .cca_name
                .iter()
                .take_while(|c| **c != 0)
                .map(|c| *c as u8)
                .collect();
            NativeSocket {
                cookie: r.cookie,
                cca: String::from_utf8_lossy(&name).into_owned(),
                flow: Flow::decode(r.cookie, &r.flow),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_parse_and_partial_tails_are_ignored() {
        let mut r = RawSock::default();
        r.flow.abi_version = abi::ABI_VERSION;
        r.flow.sport = 5201;
        r.cookie = 42;
        for (d, s) in r.cca_name.iter_mut().zip(b"cubic") {
            *d = *s as _;
        }
        let mut bytes = abi::to_bytes(&r).to_vec();
        bytes.extend_from_slice(&abi::to_bytes(&r)[..10]);
        let v = parse(&bytes);
        assert_eq!(v.len(), 1);
        assert_eq!(
            (v[0].cookie, v[0].cca.as_str(), v[0].flow.local.port()),
            (42, "cubic", 5201)
        );
    }
}
