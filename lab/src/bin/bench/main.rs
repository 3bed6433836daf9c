//! `cargo xtask bench <name>`: benchmarks that print figures.
//!
//! Comparisons run side by side in one invocation, alternating the
//! contenders, and are reported as ratios. Nothing here asserts a time.
//! Each bench is a module of its own (`bench/<name>.rs`); this file only
//! picks one by name.

mod daemon;
mod fairness_grid;
mod lab_accuracy;
mod procfs;
mod single_flow;
mod soak;
mod synthetic_daemon;
mod verifier;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let res = match args.first().map(String::as_str) {
        Some("single-flow") => single_flow::run(&args[1..]),
        Some("verifier") => verifier::run(),
        Some("lab-accuracy") => lab_accuracy::run(&args[1..]),
        Some("daemon") => daemon::run(&args[1..]),
        Some("soak") => soak::run(&args[1..]),
        Some("fairness-grid") => fairness_grid::run(&args[1..]),
        Some(other) => Err(anyhow::anyhow!(
            "unknown benchmark '{other}' (single-flow, verifier, lab-accuracy, daemon, soak, fairness-grid)"
        )),
        None => Err(anyhow::anyhow!("which benchmark? single-flow, verifier")),
    };
    if let Err(e) = res {
        eprintln!("bench: error: {e:#}");
        std::process::exit(1);
    }
}
