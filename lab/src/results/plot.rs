//! Plots of a run (plotters, PNG): goodput per flow over time, the
//! bottleneck queue over time, and heatmaps of sweeps.

use std::ops::Range;
use std::path::Path;
use std::sync::Once;

use anyhow::{Context, Result};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::results::{RepResult, SweepPoint};
use crate::scenario::plan::Plan;
use crate::scenario::WIRE_PACKET;

static FONT: Once = Once::new();
const FONT_PATHS: &[&str] = include!("font_paths.in");

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

/// A canvas of the PNG at `path` (written by [`save`]).
type Canvas<'a> = DrawingArea<BitMapBackend<'a>, Shift>;

/// A chart with both axes in f64.
type XyChart<'a, 'b> =
    ChartContext<'a, BitMapBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A white canvas of `size` pixels for the PNG at `path`.
fn canvas(path: &Path, size: (u32, u32)) -> Result<Canvas<'_>> {
    let root = BitMapBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE)?;
    Ok(root)
}

/// Write the canvas to its PNG at `path`.
fn save(root: &Canvas, path: &Path) -> Result<()> {
    root.present()
        .with_context(|| format!("write {}", path.display()))
}

/// A chart on `root` with the plots' margin, `label_area` (x, y) pixels for
/// the axis labels and, with `text`, `caption` at `caption_size` on top.
fn chart_on<'a, 'b>(
    root: &'a Canvas<'b>,
    text: bool,
    caption: &str,
    caption_size: u32,
    label_area: (u32, u32),
) -> ChartBuilder<'a, 'static, BitMapBackend<'b>> {
    let mut b = ChartBuilder::on(root);
    b.margin(10)
        .x_label_area_size(label_area.0)
        .y_label_area_size(label_area.1);
    if text {
        b.caption(caption, ("sans-serif", caption_size));
    }
    b
}

/// A chart of something over a run's time, `0..x_max` s by `0..y_max`,
/// its axes named when there is a font (`text`), a bare frame otherwise.
fn time_chart<'a, 'b>(
    root: &'a Canvas<'b>,
    text: bool,
    caption: &str,
    (x_max, y_max): (f64, f64),
    y_desc: &str,
) -> Result<XyChart<'a, 'b>> {
    let mut chart =
        chart_on(root, text, caption, 20, (40, 60)).build_cartesian_2d(0f64..x_max, 0f64..y_max)?;
    if text {
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc(y_desc)
            .draw()?;
    } else {
        chart.configure_mesh().disable_mesh().draw()?;
    }
    Ok(chart)
}

/// The legend mark of a series drawn as a 2-pixel line in `c`.
fn legend_line(c: RGBColor) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
}

/// The box of series labels (each series gives its own mark).
fn draw_legend<'a, 'b: 'a>(chart: &mut XyChart<'a, 'b>) -> Result<()> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// Goodput of every flow over time.
pub fn throughput(path: &Path, plan: &Plan, r: &RepResult) -> Result<()> {
    let ymax = r
        .flows
        .iter()
        .flat_map(|f| f.goodput.iter().map(|p| p.1 / 1e6))
        .fold(plan.rate_bit as f64 / 1e6, f64::max)
        * 1.05;
    let what = ("goodput per flow", Legend::Labels);
    let y = (ymax, "goodput (Mbit/s)");
    time_plot(path, (1000, 500), plan, what, y, |chart, text| {
        for (i, f) in r.flows.iter().enumerate() {
            let c = color(i);
            let series = chart.draw_series(LineSeries::new(
                f.goodput.iter().map(|(t, b)| (*t, b / 1e6)),
                c.stroke_width(2),
            ))?;
            if text {
                let label = format!("{} {} {} ms", f.spec.group, f.spec.cca, f.spec.rtt_ms);
                series.label(label).legend(legend_line(c));
            }
        }
        Ok(())
    })
}

/// Bottleneck queue (packets) over time.
pub fn queue(path: &Path, plan: &Plan, r: &RepResult) -> Result<()> {
    let limit_pkts = plan.buffer_bytes as f64 / WIRE_PACKET as f64;
    let ymax = r
        .queue
        .iter()
        .map(|q| q.stats.qlen as f64)
        .fold(limit_pkts, f64::max)
        * 1.05
        + 1.0;
    let what = ("bottleneck queue", Legend::None);
    let y = (ymax, "queue (packets)");
    time_plot(path, (1000, 400), plan, what, y, |chart, _| {
        chart.draw_series(LineSeries::new(
            r.queue.iter().map(|q| (q.t, q.stats.qlen as f64)),
            color(0),
        ))?;
        chart.draw_series(LineSeries::new(
            vec![(0.0, limit_pkts), (plan.duration_s, limit_pkts)],
            RED.stroke_width(1),
        ))?;
        Ok(())
    })
}

/// Whether a plot has a legend.
#[derive(PartialEq)]
enum Legend {
    None,
    /// The box of the series' labels, when there is text.
    Labels,
}

/// The PNG at `path` (`size` pixels) of something over `plan`'s run:
/// its [`time_chart`] (caption "<scenario>: `what`", 0 to the run's
/// duration by `0..y_max` named `y_desc`), on which `draw` draws (told
/// whether there is text), then the legend.
fn time_plot<'p>(
    path: &'p Path,
    size: (u32, u32),
    plan: &Plan,
    (what, legend): (&str, Legend),
    (y_max, y_desc): (f64, &str),
    draw: impl FnOnce(&mut XyChart<'_, 'p>, bool) -> Result<()>,
) -> Result<()> {
    let text = ensure_font();
    let root = canvas(path, size)?;
    let caption = format!("{}: {what}", plan.scenario.name);
    let mut chart = time_chart(&root, text, &caption, (plan.duration_s, y_max), y_desc)?;
    draw(&mut chart, text)?;
    if text && legend == Legend::Labels {
        draw_legend(&mut chart)?;
    }
    save(&root, path)
}

/// One categorical axis of a heatmap with `.0` cells: cell `i` spans
/// `[i, i + 1)` in chart coordinates whatever sweep value it names, so
/// cells are evenly spaced (a sweep's values are categories, not a numeric
/// scale), and the axis's only ticks are the cells' centres, so each label
/// names its cell. Our own `Ranged` because plotters' numeric axes choose
/// their ticks themselves (on round numbers, here the cells' edges) and
/// its `WithKeyPoints` over f64 loses the formatter the mesh needs.
#[derive(Clone, Copy, Debug)]
struct CellAxis(usize);

impl Ranged for CellAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        RangedCoordf64::from(self.range()).map(v, limit)
    }

    fn key_points<H: KeyPointHint>(&self, _hint: H) -> Vec<f64> {
        (0..self.0).map(cell_centre).collect()
    }

    fn range(&self) -> Range<f64> {
        0.0..self.0 as f64
    }
}

/// The chart coordinate of the centre of cell `i` (where its tick, its
/// label and its value are drawn).
fn cell_centre(i: usize) -> f64 {
    i as f64 + 0.5
}

/// The label of the cell whose centre is at `at`, or "" when `at` is no
/// cell's centre (plotters asks only at the axis's key points).
fn cell_label(labels: &[String], at: f64) -> String {
    let i = (at - 0.5).round();
    if i < 0.0 || (at - cell_centre(i as usize)).abs() > 1e-9 {
        return String::new();
    }
    labels.get(i as usize).cloned().unwrap_or_default()
}

/// What the heatmaps of one metric over one grid share: the axes, each
/// as (name, one label per column or row), the colour scale `range`
/// (`lo` blue through white in the middle to `hi` red), and how a value is
/// printed at its cell's centre (`label`: the metric's own precision and
/// unit, a Jain's index needs three decimals, a delay in ms one).
pub struct HeatmapGrid<'a> {
    pub x: (&'a str, &'a [String]),
    pub y: (&'a str, &'a [String]),
    pub range: (f64, f64),
    pub label: fn(f64) -> String,
}

/// A heatmap of `values[y][x]` (NaN = missing) over `grid`. Columns and
/// rows are evenly spaced categories (see [`CellAxis`]).
pub fn heatmap(path: &Path, title: &str, grid: &HeatmapGrid, values: &[Vec<f64>]) -> Result<()> {
    let text = ensure_font();
    let root = canvas(path, heatmap_size(title, grid.x.1.len(), grid.y.1.len()))?;
    draw_heatmap(&root, text, title, grid, values)?;
    save(&root, path)
}

/// Several heatmaps of one metric side by side in one image, one panel
/// per `(caption, values[y][x])`, every panel on `grid`'s one colour
/// scale so panels compare by colour; `title` above them all. The
/// panels fill rows of ceil(sqrt(n)) (2 side by side, 7 as 3 + 3 + 1).
pub fn heatmap_panels(
    path: &Path,
    title: &str,
    grid: &HeatmapGrid,
    panels: &[(String, Vec<Vec<f64>>)],
) -> Result<()> {
    let text = ensure_font();
    let (cols, rows) = panel_layout(panels.len());
    let (w, h) = panels.iter().fold((0, 0), |(w, h), (caption, _)| {
        let (pw, ph) = heatmap_size(caption, grid.x.1.len(), grid.y.1.len());
        (w.max(pw), h.max(ph))
    });
    let width = (w * cols).max(40 + 9 * title.chars().count() as u32);
    let root = canvas(path, (width, h * rows + 40))?;
    let body = if text {
        root.titled(title, ("sans-serif", 20))?
    } else {
        root.margin(40, 0, 0, 0)
    };
    let areas = body.split_evenly((rows as usize, cols as usize));
    for ((caption, values), area) in panels.iter().zip(&areas) {
        draw_heatmap(area, text, caption, grid, values)?;
    }
    save(&root, path)
}

/// Columns and rows of `n` panels: ceil(sqrt(n)) columns, as many rows as
/// they need (at least one of each).
pub fn panel_layout(n: usize) -> (u32, u32) {
    let n = n.max(1) as u32;
    let cols = (1..=n).find(|c| c * c >= n).unwrap_or(1);
    (cols, n.div_ceil(cols))
}

/// One heatmap drawn on `area` (see [`heatmap`]).
fn draw_heatmap(
    area: &Canvas,
    text: bool,
    title: &str,
    grid: &HeatmapGrid,
    values: &[Vec<f64>],
) -> Result<()> {
    let HeatmapGrid {
        x: (x_label, xs),
        y: (y_label, ys),
        range: (lo, hi),
        label,
    } = *grid;
    let mut chart = chart_on(area, text, title, 18, (50, 80))
        .build_cartesian_2d(CellAxis(xs.len()), CellAxis(ys.len()))?;
    if text {
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .x_label_formatter(&|at| cell_label(xs, *at))
            .y_label_formatter(&|at| cell_label(ys, *at))
            .draw()?;
    }
    let value_style =
        TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Center, VPos::Center));
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
            let (x0, y0) = (xi as f64, yi as f64);
            chart.draw_series(std::iter::once(Rectangle::new(
                [(x0, y0), (x0 + 1.0, y0 + 1.0)],
                c.filled(),
            )))?;
            if text && !v.is_nan() {
                chart.draw_series(std::iter::once(Text::new(
                    label(*v),
                    (cell_centre(xi), cell_centre(yi)),
                    value_style.clone().color(&text_on(c)),
                )))?;
            }
        }
    }
    Ok(())
}

/// Text colour readable on `fill`: white on dark cells (the saturated ends
/// of the scale), black elsewhere; by perceived brightness (ITU-R BT.601
/// weights).
fn text_on(fill: RGBColor) -> RGBColor {
    let RGBColor(r, g, b) = fill;
    let luma = 0.299 * r as f64 + 0.587 * g as f64 + 0.114 * b as f64;
    if luma < 110.0 {
        WHITE
    } else {
        BLACK
    }
}

/// A heatmap's pixels: 70 x 40 per cell plus the axes' room, and wide
/// enough for the title (about 9 pixels a character at 18 points), so a
/// small grid does not cut it.
pub fn heatmap_size(title: &str, columns: usize, rows: usize) -> (u32, u32) {
    let cells = 140 + 70 * columns as u32;
    let caption = 40 + 9 * title.chars().count() as u32;
    (cells.max(caption), 120 + 40 * rows as u32)
}

/// A metric of the points against a sweep's x values (evenly spaced,
/// labelled), one line per CCA; NaN values (missing) are left out. The y
/// axis runs from 0 (or the lowest value, if negative) to the highest
/// value or 1, whichever is more, plus a margin.
pub fn sweep_lines(
    path: &Path,
    title: &str,
    x_label: &str,
    points: &[SweepPoint],
    metric: &dyn Fn(&SweepPoint) -> f64,
) -> Result<()> {
    let text = ensure_font();
    let mut xs: Vec<f64> = points.iter().map(|p| p.x).collect();
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    xs.dedup();
    let mut ccas: Vec<&str> = points.iter().map(|p| p.cca.as_str()).collect();
    ccas.dedup();
    let vals: Vec<f64> = points
        .iter()
        .map(metric)
        .filter(|v| v.is_finite())
        .collect();
    let ymax = vals.iter().cloned().fold(1.0, f64::max) * 1.1;
    let ymin = vals.iter().cloned().fold(0.0, f64::min) * 1.1;
    let root = canvas(path, (900, 450))?;
    let n = xs.len().max(1);
    let mut chart = chart_on(&root, text, title, 18, (45, 60))
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), ymin..ymax)?;
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
                    .map(|i| (i as f64, metric(p)))
            })
            .filter(|(_, v)| v.is_finite())
            .collect();
        chart.draw_series(line.iter().map(|p| Circle::new(*p, 3, c.filled())))?;
        let s = chart.draw_series(LineSeries::new(line, c.stroke_width(2)))?;
        if text {
            s.label(cca.to_string()).legend(legend_line(c));
        }
    }
    if text {
        draw_legend(&mut chart)?;
    }
    save(&root, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::qstats::{QdiscStats, QueueSample};
    use crate::results::{FlowResult, Summary};

    /// Width and height from a PNG's IHDR chunk.
    fn png_size(path: &Path) -> (u32, u32) {
        let b = std::fs::read(path).unwrap();
        assert!(
            b.starts_with(b"\x89PNG\r\n\x1a\n"),
            "{} is no PNG",
            path.display()
        );
        let be = |i: usize| u32::from_be_bytes(b[i..i + 4].try_into().unwrap());
        (be(16), be(20))
    }

    fn rep(plan: &Plan) -> RepResult {
        let flows = plan
            .flows
            .iter()
            .map(|spec| FlowResult {
                spec: spec.clone(),
                goodput: (1..=20)
                    .map(|t| (t as f64, 1e6 * (5 + spec.index * 3 + t % 4) as f64))
                    .collect(),
                rtt_ms: vec![],
                retransmits: 0,
                retransmits_by_interval: vec![],
                bytes_received: 0,
                mean_goodput: 0.0,
                congestion: spec.cca.clone(),
            })
            .collect();
        let queue = (0..200)
            .map(|i| QueueSample {
                t: i as f64 * 0.1,
                stats: QdiscStats {
                    qlen: (i * 7 % 60) as u32,
                    ..QdiscStats::default()
                },
            })
            .collect();
        RepResult {
            flows,
            queue,
            bpf: vec![],
            random_loss_at_edges: None,
            summary: Summary::default(),
            aqm: vec![],
        }
    }

    /// Every plot writes a PNG of its size, whatever the font situation
    /// (with text when fonts-dejavu-core is installed, bare otherwise).
    #[test]
    fn every_plot_writes_a_png_of_its_size() {
        let tmp = crate::testkit::temp_folder("plot-test");
        let dir = tmp.path();
        let plan =
            Plan::resolve(&crate::scenario::builtin::resolve("two-flow-deep").unwrap()).unwrap();
        let r = rep(&plan);
        throughput(&dir.join("throughput.png"), &plan, &r).unwrap();
        queue(&dir.join("queue.png"), &plan, &r).unwrap();
        let (xs, ys) = (
            vec!["0.5".to_string(), "2".to_string()],
            vec!["10".to_string(), "40".to_string(), "80".to_string()],
        );
        let values = vec![vec![0.9, f64::NAN], vec![0.5, 1.0], vec![0.7, 0.99]];
        let grid = HeatmapGrid {
            x: ("buffer (BDP)", &xs),
            y: ("RTT (ms)", &ys),
            range: (0.5, 1.0),
            label: |v| format!("{v:.3}"),
        };
        heatmap(&dir.join("heatmap.png"), "jain", &grid, &values).unwrap();
        let points: Vec<SweepPoint> = ["qfair", "bbr"]
            .iter()
            .flat_map(|cca| {
                [0.5, 2.0].map(|x| SweepPoint {
                    cca: cca.to_string(),
                    x,
                    y: None,
                    summary: Summary {
                        jain: x / 2.0,
                        ..Summary::default()
                    },
                    worst: None,
                })
            })
            .collect();
        sweep_lines(
            &dir.join("lines.png"),
            "jain",
            "buffer (BDP)",
            &points,
            &|p| p.summary.jain,
        )
        .unwrap();
        assert_eq!(png_size(&dir.join("throughput.png")), (1000, 500));
        assert_eq!(png_size(&dir.join("queue.png")), (1000, 400));
        assert_eq!(
            png_size(&dir.join("heatmap.png")),
            (140 + 70 * 2, 120 + 40 * 3)
        );
        assert_eq!(heatmap_size("jain", 2, 3), (140 + 70 * 2, 120 + 40 * 3));
        // Values stay readable at both saturated ends and in the middle.
        assert_eq!(text_on(RGBColor(0, 0, 255)), WHITE);
        assert_eq!(text_on(RGBColor(255, 0, 0)), WHITE);
        assert_eq!(text_on(RGBColor(255, 255, 255)), BLACK);
        assert_eq!(text_on(RGBColor(255, 128, 128)), BLACK);
        assert_eq!(
            heatmap_size(&"t".repeat(60), 2, 3),
            (40 + 9 * 60, 120 + 40 * 3)
        );
        assert_eq!(png_size(&dir.join("lines.png")), (900, 450));
    }

    /// A heatmap axis ticks exactly its cells' centres (none on a cell's
    /// edge, none past the last cell), each at the pixel midway between
    /// its cell's edges, and labels each centre with its own cell's value:
    /// "50" names the middle row. Cells are evenly spaced categories
    /// whatever the sweep values (2, 50, 200 take equal widths).
    #[test]
    fn heatmap_axes_label_each_cell_at_its_centre() {
        use plotters::coord::ranged1d::BoldPoints;
        let labels: Vec<String> = ["2", "50", "200"].map(String::from).to_vec();
        let n = labels.len();
        let axis = CellAxis(n);
        let ticks = axis.key_points(BoldPoints(10));
        assert_eq!(ticks, vec![0.5, 1.5, 2.5]);
        let pixels = (0, 600);
        let px = |v: f64| axis.map(&v, pixels);
        for (i, tick) in ticks.iter().enumerate() {
            let (left, right) = (px(i as f64), px(i as f64 + 1.0));
            assert_eq!(right - left, 200, "cell {i} is not one third of the axis");
            assert_eq!(px(*tick), (left + right) / 2, "tick {i} is off centre");
            assert_eq!(px(cell_centre(i)), px(*tick), "value {i} is off its tick");
            assert_eq!(cell_label(&labels, *tick), labels[i]);
        }
        for edge in 0..=n {
            assert_eq!(cell_label(&labels, edge as f64), "", "edge {edge}");
        }
        assert_eq!(cell_label(&labels, -0.5), "");
        assert_eq!(cell_label(&labels, n as f64 + 0.5), "");
    }

    #[test]
    fn panels_fill_rows_of_ceil_sqrt_n() {
        let layouts: Vec<(u32, u32)> = (0..=7).map(panel_layout).collect();
        assert_eq!(
            layouts,
            [
                (1, 1),
                (1, 1),
                (2, 1),
                (2, 2),
                (2, 2),
                (3, 2),
                (3, 2),
                (3, 3)
            ]
        );
    }
}
