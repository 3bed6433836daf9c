//! The emulated network and its instruments: what a run builds, drives and
//! measures on the host (the only part of the lab that touches the kernel).
//!
//! - [`netns`]: network namespaces (unique names, cleanup on drop, panic,
//!   Ctrl-C, and of leftovers of killed runs).
//! - [`link`]: veth links, the HTB rate limit and drop-tail buffer (or TBF,
//!   segmenting GSO packets, for [`topology::Options::segment_at_bottleneck`]).
//! - [`delay`]: the user-space delay element on the reverse path (reader).
//! - [`delay_writer`]: its writer threads, which pay the kernel work.
//! - [`clock`]: the element's clock (the lab's time base) and the
//!   real-time priority of its threads.
//! - [`pathprobe`]: the delay a loaded lab really adds (ICMP echo over
//!   the reverse path, kernel timestamps).
//! - [`pathsched`]: when the element releases a packet: base delay, jitter
//!   without reordering, ACK batching, a base-RTT change.
//! - [`topology`]: the dumbbell built from those, with per-flow delay/loss.
//! - [`selfcheck`]: measures base RTTs and rate before a run reports.
//! - [`rateload`]: the rate check's load, UDP paced above the rate.
//! - [`qstats`]: the bottleneck qdisc's counters, sampled over a run.
//! - [`aqm`]: CoDel, FQ-CoDel and ECN step marking at the bottleneck
//!   (the lab's tc-BPF programs), their parameters and counters.
//! - [`sockbuf`]: the max of the namespaces' TCP socket buffers
//!   (`tcp_wmem`, `tcp_rmem`), which caps a flow's data in flight.
//! - [`arrivals`]: the data segments arriving at the receivers (tc
//!   ingress BPF), tallied per sender between the window's edges.
//! - [`rcvbytes`]: the receivers' in-order byte counters (via `ss`).
//! - [`iperf`]: iperf3 servers and clients and their JSON.
//! - [`sock`]: TCP sockets with a chosen CCA; TCP_INFO.
//! - [`ccas`]: loads the project's CCAs for a run and leases them.
//! - [`churn`]: many short connections, for reliability tests and soak.
//! - [`procfs`]: a process's memory and CPU time, the kernel's warning
//!   count: what soak, benches and reliability tests watch.
//! - [`daemon_child`]: `rttfairctl daemon` as a child process (demo, soak
//!   and daemon benches, kernel tests): up on /healthz before the caller
//!   goes on, its stderr kept, stopped on drop.

pub mod aqm;
pub(crate) mod arrivals;
pub mod ccas;
pub mod churn;
pub mod clock;
pub mod daemon_child;
pub mod delay;
pub(crate) mod delay_writer;
pub mod iperf;
pub mod link;
pub mod netns;
pub mod pathprobe;
pub mod pathsched;
pub mod procfs;
pub(crate) mod qstats;
pub mod rateload;
pub(crate) mod rcvbytes;
pub mod selfcheck;
pub mod sock;
pub mod sockbuf;
pub mod topology;
