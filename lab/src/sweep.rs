//! Sweeps: one scenario run over a grid of one or two parameters, for each
//! CCA, giving the papers' "metric vs buffer size" lines and heatmaps.
//! The grid comes from the scenario's `[sweep]` table (see
//! [`crate::scenario::Sweep`]), expanded to plans by [`crate::grid`].

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::grid;
use crate::results::{Summary, SweepPoint};
use crate::run::{self, RunOptions};
use crate::scenario::Scenario;

pub use crate::results::SweepPoint as Point;
pub use crate::scenario::{Axis, Sweep};

/// Run the grid for every CCA; writes sweep.csv, sweep.json and plots
/// under `out/<name>-sweep`, each point's run under its `runs/`.
pub fn run(
    base: &Scenario,
    sweep: &Sweep,
    ccas: &[String],
    opts: &RunOptions,
) -> Result<(Vec<SweepPoint>, PathBuf)> {
    run_shard(base, sweep, ccas, None, opts)
}

/// As [`run`], only the points of `shard` (all of them with `None`). A
/// shard's folder holds its own points only.
pub fn run_shard(
    base: &Scenario,
    sweep: &Sweep,
    ccas: &[String],
    shard: Option<grid::Shard>,
    opts: &RunOptions,
) -> Result<(Vec<SweepPoint>, PathBuf)> {
    let mut plans =
        grid::expand(base, sweep, ccas).map_err(|e| anyhow::anyhow!("{}: {e}", base.name))?;
    if let Some(sh) = shard {
        plans = sh.select(plans);
    }
    let dir = opts.out_dir.join(format!("{}-sweep", base.name));
    std::fs::create_dir_all(&dir)?;
    let inner = RunOptions {
        out_dir: dir.join("runs"),
        ..opts.clone()
    };
    let mut points = Vec::new();
    for p in &plans {
        let r = run::run_plan(&p.plan, &inner)?;
        if opts.verbose {
            println!(
                "{} x={} y={:?}: {}",
                p.key.cca,
                p.key.x,
                p.key.y,
                run::one_line(&r.summary)
            );
        }
        points.push(SweepPoint {
            cca: p.key.cca.clone(),
            x: p.key.x,
            y: p.key.y,
            summary: r.summary,
        });
    }
    crate::files::write_sweep(&dir, sweep, &points)?;
    plot_sweep(&dir, base, sweep, ccas, &points)?;
    Ok((points, dir))
}

/// Heatmaps of Jain and STDR per CCA for a 2-D grid; lines of Jain and
/// the group ratio against x for a 1-D one.
fn plot_sweep(
    dir: &Path,
    base: &Scenario,
    sweep: &Sweep,
    ccas: &[String],
    points: &[SweepPoint],
) -> Result<()> {
    let Some(ya) = &sweep.y else {
        crate::plot::sweep_lines(
            &dir.join("jain.png"),
            &format!("{}: Jain's index", base.name),
            &sweep.x.param,
            points,
            |s| s.jain,
        )?;
        return crate::plot::sweep_lines(
            &dir.join("ratio.png"),
            &format!("{}: first/second group goodput", base.name),
            &sweep.x.param,
            points,
            |s| s.group_ratio,
        );
    };
    let xs: Vec<String> = sweep.x.values.iter().map(|v| format!("{v}")).collect();
    let ys: Vec<String> = ya.values.iter().map(|v| format!("{v}")).collect();
    type Metric = fn(&Summary) -> f64;
    let metrics: [(&str, f64, f64, Metric); 2] = [
        ("jain", 0.5, 1.0, |s| s.jain),
        ("stdr", -1.0, 1.0, |s| s.stdr),
    ];
    for cca in ccas {
        for (metric, lo, hi, get) in metrics {
            crate::plot::heatmap(
                &dir.join(format!("{metric}-{cca}.png")),
                &format!("{} {cca}: {metric}", base.name),
                &sweep.x.param,
                &xs,
                &ya.param,
                &ys,
                &grid_values(sweep, points, cca, get),
                lo,
                hi,
            )?;
        }
    }
    Ok(())
}

/// `values[y][x]` of one metric for one CCA (NaN where a point is missing).
fn grid_values(
    sweep: &Sweep,
    points: &[SweepPoint],
    cca: &str,
    get: fn(&Summary) -> f64,
) -> Vec<Vec<f64>> {
    let ys = sweep.y.as_ref().map(|a| a.values.as_slice()).unwrap_or(&[]);
    ys.iter()
        .map(|y| {
            sweep
                .x
                .values
                .iter()
                .map(|x| {
                    points
                        .iter()
                        .find(|p| p.cca == cca && p.x == *x && p.y == Some(*y))
                        .map(|p| get(&p.summary))
                        .unwrap_or(f64::NAN)
                })
                .collect()
        })
        .collect()
}
