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
//! Around that: [`Cca`] names what can be loaded, [`BpfFs`] where state lives,
//! [`preflight`] what the host must offer, [`flows`] reads the per-flow
//! export, and [`abi`] holds the Rust mirror of `bpf/include/rttfair_abi.h`,
//! generated from BTF.

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
pub mod error;
pub mod flows;
pub mod kernel;
pub mod lifecycle;
pub mod math;
pub mod migrate;
pub mod preflight;
pub mod sockets;
pub mod tunables;

pub use bpffs::BpfFs;
pub use cca::Cca;
pub use error::{Error, Result};
