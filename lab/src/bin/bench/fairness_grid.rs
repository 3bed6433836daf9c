//! `bench fairness-grid --cca LIST [...]`: the two-flow fairness grid.

use anyhow::Result;
use rttfair_lab::run::fairness_grid as grid;
use rttfair_lab::run::RunOptions;
use rttfair_loader::BpfFs;

/// The two-flow grid of issue 14 for each CCA of `--cca`, CCAs back to back
/// at each point; Markdown tables on stdout, one progress line per run on
/// stderr, every run's files under `--out` (default lab-out/fairness-grid).
pub fn run(args: &[String]) -> Result<()> {
    let (g, out) = grid::parse_args(args)?;
    let commit = head_commit();
    let pts = grid::points(g.quick);
    // Said only when set: the default's lines read as they always did.
    let sockbuf = g
        .socket_buffer_mb
        .map(|mb| format!(", TCP socket buffers up to {mb} MiB"))
        .unwrap_or_default();
    eprintln!(
        "fairness-grid: {} points x {} CCAs x {} rep(s) x {} s at {} Mbit/s{sockbuf} (about {:.0} min)",
        pts.len(),
        g.ccas.len(),
        g.reps,
        grid::DURATION_S,
        g.rate_mbit,
        (pts.len() * g.ccas.len()) as f64 * g.reps as f64 * (grid::DURATION_S + 8.0) / 60.0
    );
    let opts = RunOptions {
        out_dir: out.unwrap_or_else(|| "lab-out/fairness-grid".into()).into(),
        bpffs: BpfFs::from_env(),
        progress: false,
        verbose: false,
    };
    let res = grid::run(&g, &opts, |line| eprintln!("  {line}"))?;
    println!(
        "fairness-grid at commit {commit}: 20 ms vs the second flow's RTT, buffer in BDP of 20 ms, {} Mbit/s{sockbuf}, {} s per point ({} s left out), {} repetition(s), CCAs alternating per point",
        g.rate_mbit,
        grid::DURATION_S,
        grid::WARMUP_S,
        g.reps
    );
    print!("{}", grid::tables(&res));
    Ok(())
}

/// The short commit of the working directory's checkout, for the table's
/// heading ("unknown" outside a git checkout).
fn head_commit() -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}
