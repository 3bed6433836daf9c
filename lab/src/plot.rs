//! Plots of a run (plotters, PNG): goodput per flow over time, the
//! bottleneck queue over time, and heatmaps of sweeps.

use std::path::Path;
use std::sync::Once;

use anyhow::{Context, Result};
use plotters::prelude::*;

use crate::plan::Plan;
use crate::results::{RepResult, Summary, SweepPoint};
use crate::scenario::WIRE_PACKET;

static FONT: Once = Once::new();
const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

/// plotters draws text with a font we register from the system (package
/// fonts-dejavu-core); without one, plots are drawn without text.
fn ensure_font() -> bool {
    FONT.call_once(|| {
        for p in FONT_PATHS {
            if let Ok(bytes) = std::fs::read(p) {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, bytes);
                return;
            }
        }
    });
    FONT_PATHS.iter().any(|p| Path::new(p).exists())
}

fn color(i: usize) -> RGBColor {
    const P: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
    ];
    P[i % P.len()]
}

/// Goodput of every flow over time.
pub fn throughput(path: &Path, plan: &Plan, r: &RepResult) -> Result<()> {
    let text = ensure_font();
    let root = BitMapBackend::new(path, (1000, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let ymax = r
        .flows
        .iter()
        .flat_map(|f| f.goodput.iter().map(|p| p.1 / 1e6))
        .fold(plan.rate_bit as f64 / 1e6, f64::max)
        * 1.05;
    let mut b = ChartBuilder::on(&root);
    b.margin(10).x_label_area_size(40).y_label_area_size(60);
    if text {
        b.caption(
            format!("{}: goodput per flow", plan.scenario.name),
            ("sans-serif", 20),
        );
    }
    let mut chart = b.build_cartesian_2d(0f64..plan.duration_s, 0f64..ymax)?;
    if text {
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc("goodput (Mbit/s)")
            .draw()?;
    } else {
        chart.configure_mesh().disable_mesh().draw()?;
    }
    for (i, f) in r.flows.iter().enumerate() {
        let c = color(i);
        let series = chart.draw_series(LineSeries::new(
            f.goodput.iter().map(|(t, b)| (*t, b / 1e6)),
            c.stroke_width(2),
        ))?;
        if text {
            series
                .label(format!(
                    "{} {} {} ms",
                    f.spec.group, f.spec.cca, f.spec.rtt_ms
                ))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
        }
    }
    if text {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
    }
    root.present()
        .with_context(|| format!("write {}", path.display()))?;
    Ok(())
}

/// Bottleneck queue (packets) over time.
pub fn queue(path: &Path, plan: &Plan, r: &RepResult) -> Result<()> {
    let text = ensure_font();
    let root = BitMapBackend::new(path, (1000, 400)).into_drawing_area();
    root.fill(&WHITE)?;
    let limit_pkts = plan.buffer_bytes as f64 / WIRE_PACKET as f64;
    let ymax = r
        .queue
        .iter()
        .map(|q| q.stats.qlen as f64)
        .fold(limit_pkts, f64::max)
        * 1.05
        + 1.0;
    let mut b = ChartBuilder::on(&root);
    b.margin(10).x_label_area_size(40).y_label_area_size(60);
    if text {
        b.caption(
            format!("{}: bottleneck queue", plan.scenario.name),
            ("sans-serif", 20),
        );
    }
    let mut chart = b.build_cartesian_2d(0f64..plan.duration_s, 0f64..ymax)?;
    if text {
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc("queue (packets)")
            .draw()?;
    } else {
        chart.configure_mesh().disable_mesh().draw()?;
    }
    chart.draw_series(LineSeries::new(
        r.queue.iter().map(|q| (q.t, q.stats.qlen as f64)),
        color(0),
    ))?;
    chart.draw_series(LineSeries::new(
        vec![(0.0, limit_pkts), (plan.duration_s, limit_pkts)],
        RED.stroke_width(1),
    ))?;
    root.present()
        .with_context(|| format!("write {}", path.display()))?;
    Ok(())
}

/// A heatmap of `values[y][x]` (NaN = missing) with labelled axes, colour
/// from `lo` (blue) through the middle (white) to `hi` (red).
pub fn heatmap(
    path: &Path,
    title: &str,
    x_label: &str,
    xs: &[String],
    y_label: &str,
    ys: &[String],
    values: &[Vec<f64>],
    lo: f64,
    hi: f64,
) -> Result<()> {
    let text = ensure_font();
    let root = BitMapBackend::new(
        path,
        (140 + 70 * xs.len() as u32, 120 + 40 * ys.len() as u32),
    )
    .into_drawing_area();
    root.fill(&WHITE)?;
    let mut b = ChartBuilder::on(&root);
    b.margin(10).x_label_area_size(50).y_label_area_size(80);
    if text {
        b.caption(title, ("sans-serif", 18));
    }
    let mut chart = b.build_cartesian_2d(0..xs.len(), 0..ys.len())?;
    let (xs2, ys2) = (xs.to_vec(), ys.to_vec());
    if text {
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .x_labels(xs.len())
            .y_labels(ys.len())
            .x_label_formatter(&|i| xs2.get(*i).cloned().unwrap_or_default())
            .y_label_formatter(&|i| ys2.get(*i).cloned().unwrap_or_default())
            .draw()?;
    }
    let mid = (lo + hi) / 2.0;
    for (yi, row) in values.iter().enumerate() {
        for (xi, v) in row.iter().enumerate() {
            let c = if v.is_nan() {
                RGBColor(220, 220, 220)
            } else if *v >= mid {
                let f = ((v - mid) / (hi - mid)).clamp(0.0, 1.0);
                RGBColor(255, (255.0 * (1.0 - f)) as u8, (255.0 * (1.0 - f)) as u8)
            } else {
                let f = ((mid - v) / (mid - lo)).clamp(0.0, 1.0);
                RGBColor((255.0 * (1.0 - f)) as u8, (255.0 * (1.0 - f)) as u8, 255)
            };
            chart.draw_series(std::iter::once(Rectangle::new(
                [(xi, yi), (xi + 1, yi + 1)],
                c.filled(),
            )))?;
            if text && !v.is_nan() {
                chart.draw_series(std::iter::once(Text::new(
                    format!("{v:.2}"),
                    (xi, yi + 1),
                    ("sans-serif", 13).into_font(),
                )))?;
            }
        }
    }
    root.present()
        .with_context(|| format!("write {}", path.display()))?;
    Ok(())
}

/// A metric against a sweep's x values (evenly spaced, labelled), one line
/// per CCA.
pub fn sweep_lines(
    path: &Path,
    title: &str,
    x_label: &str,
    points: &[SweepPoint],
    metric: fn(&Summary) -> f64,
) -> Result<()> {
    let text = ensure_font();
    let mut xs: Vec<f64> = points.iter().map(|p| p.x).collect();
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    xs.dedup();
    let mut ccas: Vec<&str> = points.iter().map(|p| p.cca.as_str()).collect();
    ccas.dedup();
    let vals: Vec<f64> = points
        .iter()
        .map(|p| metric(&p.summary))
        .filter(|v| v.is_finite())
        .collect();
    let ymax = vals.iter().cloned().fold(1.0, f64::max) * 1.1;
    let root = BitMapBackend::new(path, (900, 450)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut b = ChartBuilder::on(&root);
    b.margin(10).x_label_area_size(45).y_label_area_size(60);
    if text {
        b.caption(title, ("sans-serif", 18));
    }
    let n = xs.len().max(1);
    let mut chart = b.build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..ymax)?;
    let xs2 = xs.clone();
    if text {
        chart
            .configure_mesh()
            .x_desc(x_label)
            .x_labels(n)
            .x_label_formatter(&|v| {
                let i = v.round();
                if (v - i).abs() < 0.01 && i >= 0.0 {
                    xs2.get(i as usize)
                        .map(|x| format!("{x}"))
                        .unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .draw()?;
    }
    for (ci, cca) in ccas.iter().enumerate() {
        let c = color(ci);
        let line: Vec<(f64, f64)> = points
            .iter()
            .filter(|p| p.cca == *cca && p.y.is_none())
            .filter_map(|p| {
                xs.iter()
                    .position(|x| *x == p.x)
                    .map(|i| (i as f64, metric(&p.summary)))
            })
            .filter(|(_, v)| v.is_finite())
            .collect();
        chart.draw_series(line.iter().map(|p| Circle::new(*p, 3, c.filled())))?;
        let s = chart.draw_series(LineSeries::new(line, c.stroke_width(2)))?;
        if text {
            s.label(cca.to_string()).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
            });
        }
    }
    if text {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
    }
    root.present()
        .with_context(|| format!("write {}", path.display()))?;
    Ok(())
}
