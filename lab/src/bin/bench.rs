//! `cargo xtask bench <name>`: benchmarks that print figures.
//!
//! Comparisons run side by side in one invocation, alternating the
//! contenders, and are reported as ratios. Nothing here asserts a time.
//! Each bench is a module of its own under `bench/`.

#[path = "bench/daemon.rs"]
mod daemon;
#[path = "bench/fairness_grid.rs"]
mod fairness_grid;
#[path = "bench/lab_accuracy.rs"]
mod lab_accuracy;
#[path = "bench/single_flow.rs"]
mod single_flow;
#[path = "bench/synthetic_daemon.rs"]
mod synthetic_daemon;
#[path = "bench/verifier.rs"]
mod verifier;

use anyhow::{bail, Context, Result};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = run(&args) {
        eprintln!("bench: error: {e:#}");
        std::process::exit(1);
    }
}

/// Every bench `run` knows, for the messages that list them.
const BENCHES: &str = "single-flow, verifier, lab-accuracy, daemon, soak, fairness-grid";

/// The bench the first argument names, given the rest.
fn run(args: &[String]) -> Result<()> {
    let name = args
        .first()
        .with_context(|| format!("which benchmark? {BENCHES}"))?;
    let rest = &args[1..];
    match name.as_str() {
        "single-flow" => single_flow::run(rest),
        "verifier" => verifier::run(),
        "lab-accuracy" => lab_accuracy::run(rest),
        "daemon" => daemon::run(rest),
        "soak" => soak::run(rest),
        "fairness-grid" => fairness_grid::run(rest),
        other => bail!("unknown benchmark '{other}' ({BENCHES})"),
    }
}

/// Long churn with every project CCA while the daemon is scraped: the
/// figures the reliability issue asks for.
#[path = "bench/soak.rs"]
mod soak;
