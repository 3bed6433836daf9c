//! Sweeps: one scenario run over a grid of one or two parameters, for each
//! CCA, giving the papers' "metric vs buffer size" lines and heatmaps.
//!
//! ```toml
//! [sweep]
//! x = { param = "bottleneck.buffer.bdp", values = [0.5, 1, 2, 5, 10] }
//! y = { param = "flows[1].rtt_ms", values = [2, 10, 50, 200] }   # optional
//! ```
//! Parameters: `bottleneck.buffer.bdp`, `bottleneck.rate_mbit`,
//! `flows[N].rtt_ms`, `flows[N].loss_pct`, `flows[N].count`.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::run::{self, RunOptions, Summary};
use crate::scenario::Scenario;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Axis {
    pub param: String,
    pub values: Vec<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sweep {
    pub x: Axis,
    pub y: Option<Axis>,
}

/// A scenario file with a `[sweep]` table.
#[derive(Debug, Clone, Deserialize)]
struct WithSweep {
    sweep: Option<Sweep>,
}

/// The `[sweep]` table of a scenario's TOML text, if any. The rest of the
/// file is the base scenario (Scenario ignores nothing, so the table is
/// removed before it is parsed).
pub fn split(text: &str) -> Result<(String, Option<Sweep>)> {
    let mut value: toml::Table = toml::from_str(text)?;
    let sweep = value.remove("sweep");
    let sweep = match sweep {
        Some(v) => Some(
            WithSweep::deserialize(toml::Value::Table(toml::Table::from_iter([(
                "sweep".to_string(),
                v,
            )])))
            .map_err(|e| anyhow::anyhow!("sweep: {e}"))?
            .sweep
            .unwrap(),
        ),
        None => None,
    };
    Ok((toml::to_string(&value)?, sweep))
}

/// Set `param` to `v` in a copy of `s`.
pub fn apply(s: &Scenario, param: &str, v: f64) -> Result<Scenario> {
    let mut s = s.clone();
    match param {
        "bottleneck.buffer.bdp" => {
            if s.bottleneck.buffer.bdp.is_none() {
                bail!("sweep over bottleneck.buffer.bdp needs the base buffer given in bdp");
            }
            s.bottleneck.buffer.bdp = Some(v);
        }
        "bottleneck.rate_mbit" => s.bottleneck.rate_mbit = v,
        p if p.starts_with("flows[") => {
            let (idx, field) = p[6..]
                .split_once("].")
                .ok_or_else(|| anyhow::anyhow!("bad sweep param {p}"))?;
            let i: usize = idx.parse()?;
            let f = s
                .flows
                .get_mut(i)
                .ok_or_else(|| anyhow::anyhow!("sweep param {p}: no flows[{i}]"))?;
            match field {
                "rtt_ms" => {
                    f.rtt_ms = Some(v);
                    f.one_way_delay_ms = None;
                }
                "loss_pct" => f.loss_pct = v,
                "count" => f.count = v as u32,
                _ => bail!("sweep param {p}: unsupported field {field}"),
            }
        }
        _ => bail!("unsupported sweep param {param}"),
    }
    s.validate()
        .map_err(|e| anyhow::anyhow!("{param} = {v}: {e}"))?;
    Ok(s)
}

/// One grid point's result.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub cca: String,
    pub x: f64,
    pub y: Option<f64>,
    pub summary: Summary,
}

/// Run the grid for every CCA; writes sweep.csv and plots under out/<name>-sweep.
pub fn run(
    base: &Scenario,
    sweep: &Sweep,
    ccas: &[String],
    opts: &RunOptions,
) -> Result<(Vec<Point>, PathBuf)> {
    let dir = opts.out_dir.join(format!("{}-sweep", base.name));
    std::fs::create_dir_all(&dir)?;
    let ys: Vec<Option<f64>> = match &sweep.y {
        Some(a) => a.values.iter().map(|v| Some(*v)).collect(),
        None => vec![None],
    };
    let mut points = Vec::new();
    let inner = RunOptions {
        out_dir: dir.join("runs"),
        ..opts.clone()
    };
    for cca in ccas {
        for y in &ys {
            for x in &sweep.x.values {
                let mut s = apply(&base.with_cca(cca), &sweep.x.param, *x)?;
                if let (Some(a), Some(yv)) = (&sweep.y, y) {
                    s = apply(&s, &a.param, *yv)?;
                }
                s.name = match y {
                    Some(yv) => format!("{}-x{}-y{}", base.name, x, yv),
                    None => format!("{}-x{}", base.name, x),
                };
                let r = run::run(&s, &inner)?;
                if opts.verbose {
                    println!("{cca} x={x} y={y:?}: {}", run::one_line(&r.summary));
                }
                points.push(Point {
                    cca: cca.clone(),
                    x: *x,
                    y: *y,
                    summary: r.summary,
                });
            }
        }
    }
    write(&dir, base, sweep, ccas, &points)?;
    Ok((points, dir))
}

fn write(
    dir: &std::path::Path,
    base: &Scenario,
    sweep: &Sweep,
    ccas: &[String],
    points: &[Point],
) -> Result<()> {
    let groups: Vec<String> = points
        .first()
        .map(|p| p.summary.goodput_mbit_by_group.keys().cloned().collect())
        .unwrap_or_default();
    let mut csv = format!(
        "cca,{},{}",
        sweep.x.param,
        sweep.y.as_ref().map(|a| a.param.as_str()).unwrap_or("-")
    );
    csv.push_str(",jain,stdr,group_ratio,utilization,qdelay_mean_ms,rtt_p95_ms,retrans_ratio");
    for g in &groups {
        let _ = write!(csv, ",goodput_mbit_{g}");
    }
    csv.push('\n');
    for p in points {
        let s = &p.summary;
        let _ = write!(
            csv,
            "{},{},{},{:.4},{:.4},{:.4},{:.4},{:.3},{:.3},{:.5}",
            p.cca,
            p.x,
            p.y.map(|v| v.to_string()).unwrap_or_default(),
            s.jain,
            s.stdr,
            s.group_ratio,
            s.utilization,
            s.qdelay_mean_ms,
            s.rtt_p95_ms,
            s.retrans_ratio
        );
        for g in &groups {
            let _ = write!(
                csv,
                ",{:.3}",
                s.goodput_mbit_by_group.get(g).copied().unwrap_or(0.0)
            );
        }
        csv.push('\n');
    }
    std::fs::write(dir.join("sweep.csv"), csv)?;
    std::fs::write(
        dir.join("sweep.json"),
        serde_json::to_string_pretty(points)?,
    )?;
    let xs: Vec<String> = sweep.x.values.iter().map(|v| format!("{v}")).collect();
    match &sweep.y {
        Some(ya) => {
            let ys: Vec<String> = ya.values.iter().map(|v| format!("{v}")).collect();
            for cca in ccas {
                for (metric, lo, hi, get) in [
                    (
                        "jain",
                        0.5,
                        1.0,
                        (|s: &Summary| s.jain) as fn(&Summary) -> f64,
                    ),
                    ("stdr", -1.0, 1.0, |s: &Summary| s.stdr),
                ] {
                    let values: Vec<Vec<f64>> = ya
                        .values
                        .iter()
                        .map(|y| {
                            sweep
                                .x
                                .values
                                .iter()
                                .map(|x| {
                                    points
                                        .iter()
                                        .find(|p| &p.cca == cca && p.x == *x && p.y == Some(*y))
                                        .map(|p| get(&p.summary))
                                        .unwrap_or(f64::NAN)
                                })
                                .collect()
                        })
                        .collect();
                    crate::plot::heatmap(
                        &dir.join(format!("{metric}-{cca}.png")),
                        &format!("{} {cca}: {metric}", base.name),
                        &sweep.x.param,
                        &xs,
                        &ya.param,
                        &ys,
                        &values,
                        lo,
                        hi,
                    )?;
                }
            }
        }
        None => {
            crate::plot::sweep_lines(
                &dir.join("jain.png"),
                &format!("{}: Jain's index", base.name),
                &sweep.x.param,
                points,
                |s| s.jain,
            )?;
            crate::plot::sweep_lines(
                &dir.join("ratio.png"),
                &format!("{}: first/second group goodput", base.name),
                &sweep.x.param,
                points,
                |s| s.group_ratio,
            )?;
        }
    }
    Ok(())
}
