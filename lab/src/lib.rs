//! rttfair-lab: real kernel TCP through emulated networks on one host.
//!
//! [`netns`] owns network namespaces (unique names, cleanup on drop, panic,
//! Ctrl-C, and of leftovers of killed runs); [`link`] builds veth links with
//! rate limits and drop-tail buffers; [`sock`] opens TCP sockets inside a
//! namespace with a chosen congestion control and reads TCP_INFO.

pub mod builtin;
pub mod ccas;
pub mod churn;
pub mod delay;
pub mod iperf;
pub mod link;
pub mod netns;
pub mod pathsched;
pub mod plot;
pub mod qstats;
pub mod run;
pub mod scenario;
pub mod selfcheck;
pub mod sock;
pub mod sweep;
pub mod topology;
