//! rttfair-lab: real kernel TCP through emulated networks on one host.
//!
//! The pipeline, one direction only (each stage imports only the ones
//! before it):
//!
//! ```text
//!  TOML text --scenario--> Scenario --plan--> Plan --run--> RunResult --files/plot--> results folder
//!                  [sweep] --grid--> Vec<Plan> --sweep--> SweepPoint... --files/plot--> sweep.csv, heatmaps
//! ```
//!
//! Description and resolution:
//! - [`scenario`]: the file format; parsed and validated once (every sweep
//!   point included), errors name field and line; its `[tunables]` in
//!   [`scenario::tunables`].
//! - [`builtin`]: the embedded scenarios; resolves a name or a path.
//! - [`plan`]: a scenario resolved once: rate, buffer bytes, flows with
//!   their RTT/CCA/start/stop, the measurement window, repetitions.
//! - [`grid`]: a `[sweep]` table expanded to one plan per point.
//!
//! Results (the bottom of the result side; no network code):
//! - [`results`]: the result types (flow series, repetitions, summary,
//!   runs, sweep points).
//! - [`accounting`]: goodput and utilization over one window from
//!   counters that cannot exceed the link, with their measurement error.
//! - [`scoreboard`]: which bytes of a connection arrived, so each segment
//!   says how much goodput it adds (retransmissions and holes handled).
//! - [`summary`]: metrics of a repetition from its series, and their mean.
//! - [`time_to_fair`]: how long a late joiner (or a flow whose path RTT
//!   changes) takes to hold its fair share.
//! - [`drains`]: a row per judged qfair drain (R^ around it, its minimum m,
//!   the verdict, the mode), from the bpf samples: `drains.csv`.
//! - [`files`]: every CSV/JSON of the results folder.
//! - [`plot`]: PNG plots of a repetition and of a sweep.
//! - [`sweep_plots`]: which plots a sweep folder has: its metrics as data
//!   (title, colour scale, value, cell label), heatmaps or lines.
//! - [`gridtable`]: grid results as Markdown tables, one per metric (mean,
//!   Jain's worst repetition in brackets), for sweeps, fairness-grid and
//!   a sweep folder's compare.md (CCAs side by side).
//! - [`runtable`]: run folders of one scenario side by side in one
//!   Markdown table, repetitions pooled, mean and worst (`lab table`).
//! - [`provenance`]: provenance.json, what a folder was produced with.
//!
//! Execution:
//! - [`run`]: runs a plan: network, self-check, flows, sampling, summary.
//! - [`sweep`]: runs every point of a grid and writes the sweep's files.
//! - [`resume`]: which points of an interrupted sweep are done.
//! - [`resummarize`]: a stored run or sweep folder's summaries computed
//!   again from its files with this build's definitions.
//! - [`merge`]: shard folders joined into the folder one machine writes,
//!   and sweeps of one grid for different CCAs (other builds, other
//!   repetition counts) joined side by side, each CCA's source kept.
//! - [`fairness_grid`]: issue 14's two-flow grid, every CCA back to back at
//!   each point, printed side by side (`cargo xtask bench fairness-grid`).
//!
//! The emulated network and its instruments:
//! - [`netns`]: network namespaces (unique names, cleanup on drop, panic,
//!   Ctrl-C, and of leftovers of killed runs).
//! - [`link`]: veth links, the HTB rate limit and drop-tail buffer (or TBF,
//!   segmenting GSO packets, for [`topology::Options::segment_at_bottleneck`]).
//! - [`delay`]: the user-space delay element on the reverse path (reader).
//! - [`delay_writer`]: its writer threads, which pay the kernel work.
//! - [`pathprobe`]: the delay a loaded lab really adds (ICMP echo over
//!   the reverse path, kernel timestamps).
//! - [`pathsched`]: when the element releases a packet: base delay, jitter
//!   without reordering, ACK batching, a base-RTT change.
//! - [`topology`]: the dumbbell built from those, with per-flow delay/loss.
//! - [`selfcheck`]: measures base RTTs and rate before a run reports.
//! - [`rateload`]: the rate check's load, UDP paced above the rate.
//! - [`qstats`]: the bottleneck qdisc's counters, sampled over a run.
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
//!
//! Tests only:
//! - [`testkit`] (unit tests, and the `testkit` feature): run and sweep
//!   folders written by the lab's own writers from made-up results.

pub mod accounting;
pub mod aqm;
pub mod arrivals;
pub mod builtin;
pub mod ccas;
pub mod churn;
pub mod daemon_child;
pub mod delay;
pub mod delay_writer;
pub mod drains;
pub mod fairness_grid;
pub mod files;
pub mod grid;
pub mod gridtable;
pub mod iperf;
pub mod link;
pub mod merge;
pub mod netns;
pub mod pathprobe;
pub mod pathsched;
pub mod plan;
pub mod plot;
pub mod procfs;
pub mod provenance;
pub mod qstats;
pub mod rateload;
pub mod rcvbytes;
pub mod results;
pub mod resume;
pub mod resummarize;
pub mod run;
pub mod runtable;
pub mod scenario;
pub mod scoreboard;
pub mod selfcheck;
pub mod sock;
pub mod summary;
pub mod sweep;
pub mod sweep_plots;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod time_to_fair;
pub mod topology;
