//! rttfair-loader: the lifecycle of the rttfair BPF congestion controls.
//!
//! A congestion control goes through the same steps every time, and this
//! crate is organised after them ([`lifecycle`]):
//!
//! 1. **open** the embedded BPF object, pointing libbpf at the pinned shared
//!    maps so every CCA and every process sees the same per-flow state;
//! 2. **load** it into the kernel (the verifier runs here);
//! 3. **register** its `struct_ops` `tcp_congestion_ops` through a BPF link,
//!    which makes the name selectable by any socket;
//! 4. **pin** the link under bpffs so the registration outlives this process;
//! 5. **update** the link in place with a newer build (swap);
//! 6. **unregister** by removing the pin.
//!
//! Below the lifecycle, small modules: [`cca`] names what can be loaded,
//! [`objects`] holds the embedded BPF objects, [`bpffs`] says where pins
//! live, [`abi`] mirrors `bpf/include/rttfair_abi.h` (generated from BTF;
//! raw records private) and names the shared maps, [`export`] gives the
//! exported records their meaning, once ([`Flow`]), [`fields`] names each
//! per-flow field for every output (JSON, metrics, CSV), [`flows`] reads them
//! from the pinned maps, and [`preflight`] checks what the host must offer
//! ([`doctor`]: all of it, kernel features included, one line per check);
//! [`installed`] whether the loaded CCAs are of this build's ABI; [`lease`]
//! the files by which labs, the daemon and the operator share a CCA. Beside
//! it: [`tunables`], [`migrate`], [`cgroup`], [`sockets`] (connections on
//! kernel CCAs) and [`fairness`] (Jain's index and friends, shared by the
//! daemon and the lab). Three of them ([`flows`], [`installed`],
//! [`tunables`]) ask whether a CCA is loaded, which a small module below
//! them answers (given out as [`lifecycle::is_loaded`]), so the modules
//! import each other one way only (docs/architecture.md, "Loader modules").

/// A libbpf-cargo skeleton that build.rs generated, as a private module
/// (generated code, so exempt from the crate's lints).
macro_rules! skeleton {
    ($module:ident, $file:literal) => {
        mod $module {
            #![allow(
                dead_code,
                non_camel_case_types,
                non_snake_case,
                unused_imports,
                clippy::all
            )]
            include!(concat!(env!("OUT_DIR"), "/", $file));
        }
    };
}

pub mod abi;
pub mod bpffs;
pub mod cca;
pub mod cgroup;
pub mod doctor;
pub mod error;
pub mod export;
pub mod fairness;
pub mod fields;
pub mod flows;
pub mod installed;
pub mod kernel;
pub mod lab_arrival;
pub mod lease;
pub mod lifecycle;
mod loaded;
#[cfg(test)]
mod math;
pub mod migrate;
pub mod objects;
pub mod preflight;
pub mod sockets;
pub mod stack_depth;
pub mod tunables;

pub use bpffs::BpfFs;
pub use cca::Cca;
pub use error::{Error, Result};
pub use export::Flow;
