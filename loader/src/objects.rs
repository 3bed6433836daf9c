//! The compiled BPF objects, embedded at build time by build.rs.
//!
//! Kept apart from [`crate::lifecycle`] so that what a build carries (the
//! bytes) and what is done with it (load, register, pin) do not import each
//! other: the lifecycle, the lab and the tests all take objects from here.

use crate::cca::Cca;

static BBR1: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/bbr1.bpf.o"));
static FAIRTT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/fairtt.bpf.o"));
static ADBBR: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/adbbr.bpf.o"));
static QFAIR: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/qfair.bpf.o"));
static BBR_NATIVE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/bbr_native.bpf.o"));
static BBR3: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/bbr3.bpf.o"));

/// The socket iterator that reads connections on kernel CCAs
/// (`bpf/sockets.bpf.c`, used by [`crate::sockets`]).
pub(crate) static SOCKETS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/sockets.bpf.o"));

/// The embedded object of a CCA: what `load` registers unless the caller
/// brings its own build, and what size reports measure.
pub fn cca(cca: Cca) -> &'static [u8] {
    match cca {
        Cca::Bbr1 => BBR1,
        Cca::Fairtt => FAIRTT,
        Cca::Adbbr => ADBBR,
        Cca::Qfair | Cca::QfairAs(_) => QFAIR,
        Cca::BbrNative => BBR_NATIVE,
        Cca::Bbr3 => BBR3,
    }
}

/// BPF objects the lab uses (not congestion controls).
pub mod lab {
    /// tc ingress program dropping packets at random per source address.
    pub static RANDOM_LOSS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/lab_loss.bpf.o"));
    /// tc ingress program recording each data segment that reaches the
    /// receivers (records: [`crate::lab_arrival`]).
    pub static ARRIVALS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/lab_arrivals.bpf.o"));
    /// tc programs around the bottleneck: enqueue stamp (and flow queue)
    /// on its egress, CoDel / FQ-CoDel / ECN step decision on the next
    /// hop's ingress (`bpf/lab_aqm.bpf.c`).
    pub static AQM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/lab_aqm.bpf.o"));
}

/// Objects for tests of the failure paths (not CCAs anyone should load).
#[doc(hidden)]
pub mod testdata {
    /// Defines `bbr1_ops` with a write the verifier refuses.
    pub static REJECTED_BY_VERIFIER: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/testdata_reject.bpf.o"));
}

#[cfg(test)]
mod tests {
    use std::mem::size_of;

    use libbpf_rs::ObjectBuilder;

    use super::*;
    use crate::abi::{
        maps, RawAdbbrTunables, RawCounters, RawFairttSlot, RawFairttTunables, RawFlow,
        RawQfairTunables,
    };

    /// Each CCA object's maps must have the value sizes of the Rust mirror
    /// in [`crate::abi`], so a header change the objects and the generated
    /// types disagree on fails here rather than corrupting reads at run time.
    #[test]
    fn objects_agree_with_generated_layouts() {
        let expect = [
            (maps::FLOWS, size_of::<RawFlow>()),
            (maps::COUNTERS, size_of::<RawCounters>()),
            (maps::IDS, size_of::<u64>()),
            (maps::FAIRTT_REGISTRY, size_of::<RawFairttSlot>()),
            (maps::FAIRTT_TUNABLES, size_of::<RawFairttTunables>()),
            (maps::ADBBR_TUNABLES, size_of::<RawAdbbrTunables>()),
            (maps::QFAIR_TUNABLES, size_of::<RawQfairTunables>()),
        ];
        for c in Cca::ALL {
            let obj = ObjectBuilder::default()
                .open_memory(cca(c))
                .expect("open object");
            let mut seen = 0;
            for map in obj.maps() {
                let name = map.name().to_string_lossy().into_owned();
                if let Some((_, size)) = expect.iter().find(|(n, _)| *n == name) {
                    assert_eq!(map.value_size() as usize, *size, "{c}: {name}");
                    seen += 1;
                }
            }
            assert!(seen >= 3, "{c}: shared maps missing from the object");
        }
    }
}
