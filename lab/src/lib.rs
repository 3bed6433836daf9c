//! rttfair-lab: real kernel TCP through emulated networks on one host.
//!
//! The pipeline, one direction only (no module imports one that imports
//! it back, directly or through others):
//!
//! ```text
//!  TOML text --scenario--> Scenario --plan--> Plan --run--> RunResult --files/plot--> results folder
//!                  [sweep] --grid--> Vec<Plan> --sweep--> SweepPoint... --files/plot--> sweep.csv, heatmaps
//! ```
//!
//! The crate is in four folders, one per part of that pipeline; each
//! folder's module doc lists its modules:
//! - [`scenario`] (description and resolution): the file format, parsed
//!   and validated once (every sweep point included), errors naming field
//!   and line; its `[tunables]`, the embedded scenarios ([`scenario::builtin`]),
//!   a scenario resolved to a [`scenario::plan::Plan`], a `[sweep]` expanded
//!   to one plan per point ([`scenario::grid`]).
//! - [`net`] (the emulated network and its instruments): namespaces,
//!   links, the delay element, the dumbbell, the self-check, counters and
//!   probes, iperf, sockets, the CCA sessions and their leases, the
//!   daemon as a child process.
//! - [`results`] (the result types and what is computed from them; no
//!   network code): accounting, summaries, time to fair, drains, every
//!   file of a results folder, plots, tables, provenance.
//! - [`run`] (execution): a plan run; sweeps, resuming, resummarizing,
//!   merging, the fairness grid.
//!
//! Below them, `atomic` writes a file whole or not at all.
//!
//! Tests only:
//! - [`testkit`] (unit tests, and the `testkit` feature): run and sweep
//!   folders written by the lab's own writers from made-up results.

// The module docs name the crate-private modules too: they are the map of
// the lab for whoever works on it (`cargo doc --document-private-items`).
#![allow(rustdoc::private_intra_doc_links)]

mod atomic;
pub mod net;
pub mod results;
pub mod run;
pub mod scenario;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
