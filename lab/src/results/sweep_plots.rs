//! The plots of a sweep folder, one per metric of [`METRICS`]: for a 2-D
//! grid a heatmap per CCA (`<metric>-<cca>.png`) and every CCA's heatmap
//! side by side in one image (`<metric>.png`, one panel per CCA), for a
//! 1-D one a line plot with every CCA (`<metric>.png`, plus `ratio.png`,
//! the group goodput ratio). Either way `<metric>.png` holds every CCA. Issue 14 asks for the two-flow grid "as heatmaps of
//! Jain, utilization, queueing delay and retransmissions", mean and worst.
//!
//! The metrics are data (name, title, colour scale, value, cell label), so
//! a metric is one entry, not another copy of the drawing code.

use std::path::Path;

use anyhow::Result;

use crate::results::SweepPoint;
use crate::scenario::{Scenario, Sweep};

/// How a heatmap's colours map to values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    /// A metric with a natural range: blue at `.0`, white midway, red at
    /// `.1`; values outside take the end colour (the label still says).
    Fixed(f64, f64),
    /// A metric without one: 0 to the highest value of the whole sweep,
    /// every CCA's heatmap on that one scale so CCAs compare by colour.
    ZeroToMax,
}

/// One plotted metric.
pub struct Metric {
    /// File name stem, e.g. `jain-worst` (`jain-worst-qfair.png`).
    pub name: &'static str,
    /// What the plot shows, with its unit.
    pub title: &'static str,
    pub scale: Scale,
    /// The point's value in the plot's unit; `None` where the point lacks
    /// it (a missing cell, left grey).
    pub value: fn(&SweepPoint) -> Option<f64>,
    /// A cell's text: the metric's precision (Jain to three decimals, so
    /// 0.949 does not read as the 0.95 target).
    pub label: fn(f64) -> String,
}

/// The plotted metrics, in file order. Ranges: Jain's index of two flows
/// is at least 0.5 (one flow starved), so 0.5-1 is its whole range (with
/// more flows, lower values show at the blue end). Utilization's target
/// is 97 % and the losses worth seeing (shallow buffers) lie between 80
/// and 100 %: 80-100 % gives them the whole colour range, where 50-100 %
/// would paint 90 % and 99 % alike. STDR is in -1..1 by definition.
/// Queueing delay and retransmissions have no natural top.
pub const METRICS: [Metric; 6] = [
    Metric {
        name: "jain",
        title: "Jain's index, mean",
        scale: Scale::Fixed(0.5, 1.0),
        value: |p| Some(p.summary.jain),
        label: |v| format!("{v:.3}"),
    },
    Metric {
        name: "jain-worst",
        title: "Jain's index, worst repetition",
        scale: Scale::Fixed(0.5, 1.0),
        value: |p| p.worst.map(|w| w.jain),
        label: |v| format!("{v:.3}"),
    },
    Metric {
        name: "utilization",
        title: "utilization %, mean",
        scale: Scale::Fixed(80.0, 100.0),
        value: |p| Some(p.summary.utilization * 100.0),
        label: |v| format!("{v:.1}%"),
    },
    Metric {
        name: "qdelay",
        title: "queueing delay ms, mean",
        scale: Scale::ZeroToMax,
        value: |p| Some(p.summary.qdelay_mean_ms),
        label: |v| format!("{v:.1}"),
    },
    Metric {
        name: "retrans",
        title: "retransmissions %, mean",
        scale: Scale::ZeroToMax,
        // Not known (NaN) in a folder resummarized from files that lack
        // the per-interval retransmissions: a grey cell.
        value: |p| Some(p.summary.retrans_ratio * 100.0).filter(|v| !v.is_nan()),
        label: |v| format!("{v:.2}%"),
    },
    Metric {
        name: "stdr",
        title: "STDR first/second group, mean",
        scale: Scale::Fixed(-1.0, 1.0),
        value: |p| Some(p.summary.stdr),
        label: |v| format!("{v:.2}"),
    },
];

/// Every plot of the sweep's folder `dir`, from its points.
pub fn plot(
    dir: &Path,
    base: &Scenario,
    sweep: &Sweep,
    ccas: &[String],
    points: &[SweepPoint],
) -> Result<()> {
    let Some(ya) = &sweep.y else {
        for m in &METRICS {
            crate::results::plot::sweep_lines(
                &dir.join(format!("{}.png", m.name)),
                &format!("{}: {}", base.name, m.title),
                &sweep.x.param,
                points,
                &|p| (m.value)(p).unwrap_or(f64::NAN),
            )?;
        }
        return crate::results::plot::sweep_lines(
            &dir.join("ratio.png"),
            &format!("{}: first/second group goodput", base.name),
            &sweep.x.param,
            points,
            &|p| p.summary.group_ratio,
        );
    };
    let xs: Vec<String> = sweep.x.values.iter().map(|v| format!("{v}")).collect();
    let ys: Vec<String> = ya.values.iter().map(|v| format!("{v}")).collect();
    for m in &METRICS {
        let range = colour_range(m.scale, points, m.value);
        let panels: Vec<(String, Vec<Vec<f64>>)> = ccas
            .iter()
            .map(|cca| {
                (
                    panel_caption(cca, points),
                    grid_values(sweep, points, cca, m.value),
                )
            })
            .collect();
        let grid = crate::results::plot::HeatmapGrid {
            x: (&sweep.x.param, &xs),
            y: (&ya.param, &ys),
            range,
            label: m.label,
        };
        crate::results::plot::heatmap_panels(
            &dir.join(format!("{}.png", m.name)),
            &format!("{}: {}", base.name, m.title),
            &grid,
            &panels,
        )?;
        for cca in ccas {
            crate::results::plot::heatmap(
                &dir.join(format!("{}-{cca}.png", m.name)),
                &format!("{} {cca}: {}", base.name, m.title),
                &grid,
                &grid_values(sweep, points, cca, m.value),
            )?;
        }
    }
    Ok(())
}

/// A panel's caption: the CCA and, when all its points agree, how many
/// repetitions each has (a merge may put a 1-repetition CCA beside a
/// 3-repetition one, whose "worst" panels mean different things).
fn panel_caption(cca: &str, points: &[SweepPoint]) -> String {
    let mut reps = points
        .iter()
        .filter(|p| p.cca == cca)
        .map(|p| p.worst.map(|w| w.reps));
    match reps.next() {
        Some(Some(n)) if reps.all(|r| r == Some(n)) => {
            format!("{cca} ({n} repetition{})", if n == 1 { "" } else { "s" })
        }
        _ => cca.to_string(),
    }
}

/// The file names [`plot`] writes for a sweep of `ccas` (what tests check
/// a merged folder against).
#[cfg(test)]
pub fn files(sweep: &Sweep, ccas: &[String]) -> Vec<String> {
    if sweep.y.is_none() {
        let mut f: Vec<String> = METRICS.iter().map(|m| format!("{}.png", m.name)).collect();
        f.push("ratio.png".into());
        return f;
    }
    METRICS
        .iter()
        .flat_map(|m| {
            std::iter::once(format!("{}.png", m.name))
                .chain(ccas.iter().map(move |c| format!("{}-{c}.png", m.name)))
        })
        .collect()
}

/// The colour range of a metric: its fixed one, or 0 to the highest value
/// among all `points` (1 when none is above 0, so colours stay defined).
fn colour_range(
    scale: Scale,
    points: &[SweepPoint],
    value: fn(&SweepPoint) -> Option<f64>,
) -> (f64, f64) {
    match scale {
        Scale::Fixed(lo, hi) => (lo, hi),
        Scale::ZeroToMax => {
            let max = points
                .iter()
                .filter_map(value)
                .filter(|v| v.is_finite())
                .fold(0.0, f64::max);
            (0.0, if max > 0.0 { max } else { 1.0 })
        }
    }
}

/// `values[y][x]` of one metric for one CCA (NaN where a point or its
/// value is missing).
fn grid_values(
    sweep: &Sweep,
    points: &[SweepPoint],
    cca: &str,
    value: fn(&SweepPoint) -> Option<f64>,
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
                        .and_then(value)
                        .unwrap_or(f64::NAN)
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Summary, Worst};

    fn point(cca: &str, qdelay: f64, retrans: f64) -> SweepPoint {
        SweepPoint {
            cca: cca.into(),
            x: 1.0,
            y: Some(10.0),
            summary: Summary {
                qdelay_mean_ms: qdelay,
                retrans_ratio: retrans,
                ..Summary::default()
            },
            worst: None,
        }
    }

    fn metric(name: &str) -> &'static Metric {
        METRICS.iter().find(|m| m.name == name).unwrap()
    }

    /// Delay and retransmissions share one scale over every CCA; a sweep
    /// without retransmissions still has a usable range.
    #[test]
    fn data_ranges_span_every_cca_of_the_sweep() {
        let pts = [point("qfair", 3.0, 0.0), point("cubic", 42.5, 0.0)];
        let q = metric("qdelay");
        assert_eq!(colour_range(q.scale, &pts, q.value), (0.0, 42.5));
        let r = metric("retrans");
        assert_eq!(colour_range(r.scale, &pts, r.value), (0.0, 1.0));
        let j = metric("jain");
        assert_eq!(colour_range(j.scale, &pts, j.value), (0.5, 1.0));
    }

    #[test]
    fn labels_carry_each_metrics_precision_and_unit() {
        let mut p = point("qfair", 12.345, 0.01234);
        p.summary.jain = 0.9494;
        p.summary.utilization = 0.97449;
        p.worst = Some(Worst {
            jain: 0.8817,
            utilization: 0.9,
            qdelay_mean_ms: 20.0,
            retrans_ratio: 0.02,
            reps: 3,
        });
        let text = |name: &str| {
            let m = metric(name);
            (m.label)((m.value)(&p).unwrap())
        };
        assert_eq!(text("jain"), "0.949");
        assert_eq!(text("jain-worst"), "0.882");
        assert_eq!(text("utilization"), "97.4%");
        assert_eq!(text("qdelay"), "12.3");
        assert_eq!(text("retrans"), "1.23%");
        // Without the worst figures the cell is missing, not zero.
        p.worst = None;
        assert_eq!((metric("jain-worst").value)(&p), None);
    }

    #[test]
    fn panels_name_the_ccas_repetitions_when_known() {
        let mut a = point("qfair", 1.0, 0.0);
        let w = Worst {
            jain: 0.9,
            utilization: 0.9,
            qdelay_mean_ms: 1.0,
            retrans_ratio: 0.0,
            reps: 3,
        };
        a.worst = Some(w);
        let mut b = a.clone();
        b.cca = "bbr".into();
        b.worst = Some(Worst { reps: 1, ..w });
        let pts = [a.clone(), b, a.clone()];
        assert_eq!(panel_caption("qfair", &pts), "qfair (3 repetitions)");
        assert_eq!(panel_caption("bbr", &pts), "bbr (1 repetition)");
        // Unknown or mixed: the name alone.
        let mut c = a.clone();
        c.worst = None;
        assert_eq!(panel_caption("qfair", &[a, c]), "qfair");
        assert_eq!(panel_caption("cubic", &pts), "cubic");
    }
}
