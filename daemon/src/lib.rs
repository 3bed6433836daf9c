//! rttfair-daemon: live per-flow estimates and fairness for Prometheus.
//!
//! The daemon owns no state the CCAs need: they keep working without it, and
//! it can be killed and restarted at any time. It
//! - loads the CCAs named in its config, adopting any already pinned;
//! - serves `/metrics` (OpenMetrics text, prometheus-client) and `/healthz`;
//! - reads the pinned maps at scrape time ([`collector`]), so a closed flow's
//!   series is gone at the next scrape and an idle daemon does no work, and
//!   exports what the table of metric families ([`families`]) lists;
//! - on SIGTERM/SIGINT stops serving and, unless configured otherwise,
//!   leaves the CCAs registered, so a restart never disturbs traffic.

pub mod collector;
pub mod config;
mod encode;
pub mod families;
mod labels;
pub mod peer;
pub mod server;
mod snapshot;

pub use config::Config;
pub use server::run;
