//! rttfair-daemon: live per-flow estimates and fairness for Prometheus.
//!
//! The daemon owns no state the CCAs need: they keep working without it, and
//! it can be killed and restarted at any time. It
//! - loads the CCAs named in its config, all or nothing, adopting any
//!   already registered ([`ownership`]);
//! - serves `/metrics` (OpenMetrics text, prometheus-client), `/healthz`
//!   (liveness: it serves) and `/readyz` (readiness: its maps are of this
//!   build's ABI and readable);
//! - reads the pinned maps while scraped ([`collector`]), at most every
//!   `refresh_ms` and off the scrape path, so a closed flow's series is gone
//!   within a refresh and an unscraped daemon does no work, and exports what
//!   the table of metric families ([`families`]) lists: per-CCA and
//!   per-group aggregates always, per-flow series as `per_flow` allows;
//! - on SIGTERM/SIGINT stops serving and leaves the CCAs registered, so a
//!   restart never disturbs traffic; with `unload_on_exit` it unloads the
//!   ones it loaded itself, never the operator's or a running lab's.

pub mod collector;
pub mod config;
mod encode;
mod exposition;
pub mod families;
mod labels;
mod ownership;
pub mod peer;
mod process;
pub mod server;
mod snapshot;

pub use config::Config;
pub use server::run;
