//! Markdown tables of grid results, one metric per table: the text beside
//! issue 14's heatmaps. One cell format per metric ([`METRICS`]) and one
//! table writer ([`markdown`]), shared by `cargo xtask bench
//! fairness-grid` (rows = points, columns = CCAs; see
//! [`crate::run::fairness_grid::tables`]), `lab sweep` ([`sweep_tables`]: per
//! CCA, rows = y, columns = x) and a sweep folder's compare.md, which
//! `lab merge` prints ([`compare_tables`]: rows = points, columns = CCAs).

use std::fmt::Write as _;

use crate::results::{Summary, SweepPoint, Worst};
use crate::scenario::Sweep;

/// One metric of the tables.
pub struct Metric {
    pub title: &'static str,
    /// The mean's value (what ratios between CCAs divide).
    pub value: fn(&Summary) -> f64,
    /// A cell's text from the mean and, where known, the worst of the
    /// repetitions.
    pub cell: fn(&Summary, Option<&Worst>) -> String,
}

/// The tabled metrics: Jain with its worst repetition in brackets (when
/// there were several), utilization, queueing delay and retransmissions
/// as means.
pub const METRICS: [Metric; 4] = [
    Metric {
        title: "Jain's index (mean; worst of the repetitions in brackets)",
        value: |s| s.jain,
        cell: jain_cell,
    },
    Metric {
        title: "utilization",
        value: |s| s.utilization,
        cell: |s, _| format!("{:.1} %", s.utilization * 100.0),
    },
    Metric {
        title: "mean queueing delay",
        value: |s| s.qdelay_mean_ms,
        cell: |s, _| format!("{:.1} ms", s.qdelay_mean_ms),
    },
    Metric {
        title: "retransmissions",
        value: |s| s.retrans_ratio,
        cell: |s, _| retrans_cell(s),
    },
];

/// Jain's index as a cell: the mean, and the worst repetition in
/// brackets when there were several ("0.981 (0.935)"). Every table of
/// the lab writes Jain this way (`lab table` and `lab compare` too).
pub fn jain_cell(s: &Summary, w: Option<&Worst>) -> String {
    match w {
        Some(w) if w.reps > 1 => format!("{:.3} ({:.3})", s.jain, w.jain),
        _ => format!("{:.3}", s.jain),
    }
}

/// The retransmission ratio as a cell, "n/a" where it is not known (a
/// folder resummarized from files without per-interval retransmissions).
pub fn retrans_cell(s: &Summary) -> String {
    if s.retrans_ratio.is_nan() {
        "n/a".to_string()
    } else {
        format!("{:.2} %", s.retrans_ratio * 100.0)
    }
}

/// A Markdown table: the header row, the rule, one line per row.
pub fn markdown(head: &[String], rows: &[Vec<String>]) -> String {
    let line = |cells: &[String]| {
        let mut l = String::from("|");
        for c in cells {
            let _ = write!(l, " {c} |");
        }
        l
    };
    let mut out = line(head);
    out.push('\n');
    out.push('|');
    out.push_str(&"---|".repeat(head.len()));
    out.push('\n');
    for r in rows {
        out.push_str(&line(r));
        out.push('\n');
    }
    out
}

/// A sweep's points as tables, one per metric: for a 2-D grid, per CCA,
/// rows = y, columns = x; for a 1-D one, rows = CCAs, columns = x. A
/// point missing from `points` is "-".
pub fn sweep_tables(sweep: &Sweep, ccas: &[String], points: &[SweepPoint]) -> String {
    let mut out = String::new();
    let xs = &sweep.x.values;
    let cell = |m: &Metric, cca: &str, x: f64, y: Option<f64>| {
        points
            .iter()
            .find(|p| p.cca == cca && p.x == x && p.y == y)
            .map_or("-".to_string(), |p| (m.cell)(&p.summary, p.worst.as_ref()))
    };
    let head = |corner: String| {
        let mut h = vec![corner];
        h.extend(xs.iter().map(|x| format!("{x}")));
        h
    };
    match &sweep.y {
        Some(ya) => {
            for cca in ccas {
                for m in &METRICS {
                    let rows: Vec<Vec<String>> = ya
                        .values
                        .iter()
                        .map(|&y| {
                            let mut r = vec![format!("{y}")];
                            r.extend(xs.iter().map(|&x| cell(m, cca, x, Some(y))));
                            r
                        })
                        .collect();
                    let corner = format!("{} \\ {}", ya.param, sweep.x.param);
                    let _ = write!(
                        out,
                        "\n{cca}, {}:\n\n{}",
                        m.title,
                        markdown(&head(corner), &rows)
                    );
                }
            }
        }
        None => {
            for m in &METRICS {
                let rows: Vec<Vec<String>> = ccas
                    .iter()
                    .map(|cca| {
                        let mut r = vec![cca.clone()];
                        r.extend(xs.iter().map(|&x| cell(m, cca, x, None)));
                        r
                    })
                    .collect();
                let corner = format!("cca \\ {}", sweep.x.param);
                let _ = write!(out, "\n{}:\n\n{}", m.title, markdown(&head(corner), &rows));
            }
        }
    }
    out
}

/// A sweep's CCAs side by side: per metric, one row per grid point (y,
/// then x, as the grid runs) and one column per CCA; then the lowest
/// Jain's index of each CCA per x value (over every y) and over the
/// points with x at least each value (e.g. "every point with a buffer of
/// at least 0.3 BDP"), mean and worst repetition. Which x values matter
/// is the reader's: the table has a row for each. A lowest figure over a
/// set with a point missing from `points` is "-", as is a missing cell.
pub fn compare_tables(sweep: &Sweep, ccas: &[String], points: &[SweepPoint]) -> String {
    let xs = &sweep.x.values;
    let ys: Vec<Option<f64>> = match &sweep.y {
        Some(a) => a.values.iter().map(|&y| Some(y)).collect(),
        None => vec![None],
    };
    let find = |cca: &str, x: f64, y: Option<f64>| {
        points.iter().find(|p| p.cca == cca && p.x == x && p.y == y)
    };
    let mut head: Vec<String> = sweep.y.iter().map(|a| a.param.clone()).collect();
    head.push(sweep.x.param.clone());
    head.extend(ccas.iter().cloned());
    let mut out = String::new();
    for m in &METRICS {
        let rows: Vec<Vec<String>> = ys
            .iter()
            .flat_map(|&y| xs.iter().map(move |&x| (y, x)))
            .map(|(y, x)| {
                let mut r: Vec<String> = y.iter().map(|y| format!("{y}")).collect();
                r.push(format!("{x}"));
                r.extend(ccas.iter().map(|c| {
                    find(c, x, y)
                        .map_or("-".to_string(), |p| (m.cell)(&p.summary, p.worst.as_ref()))
                }));
                r
            })
            .collect();
        let _ = write!(out, "\n{}:\n\n{}", m.title, markdown(&head, &rows));
    }
    // The lowest Jain of `cca` over the points (x, y) with `x_in(x)`.
    let lowest = |cca: &str, x_in: &dyn Fn(f64) -> bool| {
        let set: Vec<Option<&SweepPoint>> = ys
            .iter()
            .flat_map(|&y| xs.iter().filter(|&&x| x_in(x)).map(move |&x| (x, y)))
            .map(|(x, y)| find(cca, x, y))
            .collect();
        lowest_jain(&set)
    };
    let mut head = vec![sweep.x.param.clone()];
    head.extend(ccas.iter().cloned());
    if let Some(ya) = &sweep.y {
        let rows: Vec<Vec<String>> = xs
            .iter()
            .map(|&x| {
                let mut r = vec![format!("{x}")];
                r.extend(ccas.iter().map(|c| lowest(c, &|v| v == x)));
                r
            })
            .collect();
        let _ = write!(
            out,
            "\nlowest Jain's index per {}, over every {} (mean; worst repetition in brackets):\n\n{}",
            sweep.x.param,
            ya.param,
            markdown(&head, &rows)
        );
    }
    let rows: Vec<Vec<String>> = xs
        .iter()
        .map(|&x| {
            let mut r = vec![format!(">= {x}")];
            r.extend(ccas.iter().map(|c| lowest(c, &|v| v >= x)));
            r
        })
        .collect();
    let _ = write!(
        out,
        "\nlowest Jain's index over the points with {} at least the row's value (mean; worst repetition in brackets):\n\n{}",
        sweep.x.param,
        markdown(&head, &rows)
    );
    out
}

/// The lowest mean Jain's index of `set` and, when every point has its
/// worst repetition, the lowest worst, in the Jain table's cell format;
/// "-" when `set` is empty or a point is missing.
fn lowest_jain(set: &[Option<&SweepPoint>]) -> String {
    let Some(pts) = set.iter().copied().collect::<Option<Vec<&SweepPoint>>>() else {
        return "-".into();
    };
    if pts.is_empty() {
        return "-".into();
    }
    let mean = Summary {
        jain: pts
            .iter()
            .map(|p| p.summary.jain)
            .fold(f64::INFINITY, f64::min),
        ..Summary::default()
    };
    let worst = pts
        .iter()
        .map(|p| p.worst)
        .collect::<Option<Vec<Worst>>>()
        .map(|ws| Worst {
            jain: ws.iter().map(|w| w.jain).fold(f64::INFINITY, f64::min),
            utilization: ws
                .iter()
                .map(|w| w.utilization)
                .fold(f64::INFINITY, f64::min),
            qdelay_mean_ms: ws.iter().map(|w| w.qdelay_mean_ms).fold(0.0, f64::max),
            retrans_ratio: ws.iter().map(|w| w.retrans_ratio).fold(0.0, f64::max),
            reps: ws.iter().map(|w| w.reps).max().unwrap_or(0),
        });
    (METRICS[0].cell)(&mean, worst.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ratio a resummarized older folder could not know reads "n/a",
    /// not "NaN %".
    #[test]
    fn an_unknown_retransmission_ratio_reads_n_a() {
        let s = |r| Summary {
            retrans_ratio: r,
            ..Summary::default()
        };
        assert_eq!(retrans_cell(&s(f64::NAN)), "n/a");
        assert_eq!(retrans_cell(&s(0.0123)), "1.23 %");
    }

    fn point(cca: &str, x: f64, y: Option<f64>, jain: f64, worst_jain: f64) -> SweepPoint {
        SweepPoint {
            cca: cca.into(),
            x,
            y,
            summary: Summary {
                jain,
                utilization: 0.9871,
                qdelay_mean_ms: 4.26,
                retrans_ratio: 0.00126,
                ..Summary::default()
            },
            worst: Some(Worst {
                jain: worst_jain,
                utilization: 0.95,
                qdelay_mean_ms: 6.0,
                retrans_ratio: 0.002,
                reps: 3,
            }),
        }
    }

    /// A 2 x 2 grid for one CCA, one point missing: every metric's table,
    /// rows y, columns x, Jain as "mean (worst)".
    #[test]
    fn a_two_d_sweep_is_a_table_per_metric_per_cca() {
        let sweep: Sweep = toml::from_str(
            "x = { param = \"bottleneck.buffer.bdp\", values = [0.5, 1] }\n\
             y = { param = \"flows[1].rtt_ms\", values = [10, 200] }",
        )
        .unwrap();
        let points = [
            point("qfair", 0.5, Some(10.0), 0.99, 0.985),
            point("qfair", 1.0, Some(10.0), 0.95, 0.9),
            point("qfair", 0.5, Some(200.0), 0.9, 0.75),
        ];
        let t = sweep_tables(&sweep, &["qfair".into()], &points);
        let corner = "| flows[1].rtt_ms \\ bottleneck.buffer.bdp | 0.5 | 1 |\n|---|---|---|\n";
        let expect = [
            format!(
                "\nqfair, Jain's index (mean; worst of the repetitions in brackets):\n\n{corner}\
                 | 10 | 0.990 (0.985) | 0.950 (0.900) |\n\
                 | 200 | 0.900 (0.750) | - |\n"
            ),
            format!(
                "\nqfair, utilization:\n\n{corner}\
                 | 10 | 98.7 % | 98.7 % |\n\
                 | 200 | 98.7 % | - |\n"
            ),
            format!(
                "\nqfair, mean queueing delay:\n\n{corner}\
                 | 10 | 4.3 ms | 4.3 ms |\n\
                 | 200 | 4.3 ms | - |\n"
            ),
            format!(
                "\nqfair, retransmissions:\n\n{corner}\
                 | 10 | 0.13 % | 0.13 % |\n\
                 | 200 | 0.13 % | - |\n"
            ),
        ]
        .concat();
        assert_eq!(t, expect);
    }

    /// A 1-D sweep: rows are the CCAs; one repetition (or unknown worst)
    /// shows the mean alone.
    #[test]
    fn a_one_d_sweep_has_a_row_per_cca() {
        let sweep: Sweep =
            toml::from_str("x = { param = \"bottleneck.buffer.bdp\", values = [1, 5] }").unwrap();
        let mut a = point("bbr", 1.0, None, 0.8, 0.7);
        a.worst.as_mut().unwrap().reps = 1;
        let mut b = point("bbr", 5.0, None, 0.75, 0.7);
        b.worst = None;
        let c = point("qfair", 1.0, None, 1.0, 0.999);
        let d = point("qfair", 5.0, None, 0.998, 0.99);
        let t = sweep_tables(&sweep, &["bbr".into(), "qfair".into()], &[a, b, c, d]);
        let jain = t.split("\n\n").nth(1).unwrap();
        assert_eq!(
            jain,
            "| cca \\ bottleneck.buffer.bdp | 1 | 5 |\n|---|---|---|\n\
             | bbr | 0.800 | 0.750 |\n\
             | qfair | 1.000 (0.999) | 0.998 (0.990) |"
        );
        assert_eq!(t.matches("| cca \\ bottleneck.buffer.bdp |").count(), 4);
    }

    /// Two CCAs side by side on a 2 x 2 grid, one repetition for bbr and
    /// one of its points missing: a row per point (y, then x), a column
    /// per CCA; the lowest Jain per x and over x at least each value,
    /// "-" where a point of the set is missing.
    #[test]
    fn compare_puts_the_ccas_side_by_side() {
        let sweep: Sweep = toml::from_str(
            "x = { param = \"bottleneck.buffer.bdp\", values = [0.1, 1] }\n\
             y = { param = \"flows[1].rtt_ms\", values = [10, 200] }",
        )
        .unwrap();
        let one = |mut p: SweepPoint| {
            let w = p.worst.as_mut().unwrap();
            (w.jain, w.reps) = (p.summary.jain, 1);
            p
        };
        let points = [
            point("qfair", 0.1, Some(10.0), 0.99, 0.985),
            point("qfair", 1.0, Some(10.0), 0.95, 0.9),
            point("qfair", 0.1, Some(200.0), 0.9, 0.75),
            point("qfair", 1.0, Some(200.0), 0.97, 0.96),
            one(point("bbr", 0.1, Some(10.0), 0.8, 0.0)),
            one(point("bbr", 1.0, Some(10.0), 0.6, 0.0)),
            one(point("bbr", 1.0, Some(200.0), 0.65, 0.0)),
        ];
        let t = compare_tables(&sweep, &["qfair".into(), "bbr".into()], &points);
        let head = "| flows[1].rtt_ms | bottleneck.buffer.bdp | qfair | bbr |\n|---|---|---|---|\n";
        let same = |v: &str| {
            format!(
                "{head}| 10 | 0.1 | {v} | {v} |\n| 10 | 1 | {v} | {v} |\n\
                 | 200 | 0.1 | {v} | - |\n| 200 | 1 | {v} | {v} |\n"
            )
        };
        let lowest = "| bottleneck.buffer.bdp | qfair | bbr |\n|---|---|---|\n";
        let expect = [
            format!(
                "\nJain's index (mean; worst of the repetitions in brackets):\n\n{head}\
                 | 10 | 0.1 | 0.990 (0.985) | 0.800 |\n\
                 | 10 | 1 | 0.950 (0.900) | 0.600 |\n\
                 | 200 | 0.1 | 0.900 (0.750) | - |\n\
                 | 200 | 1 | 0.970 (0.960) | 0.650 |\n"
            ),
            format!("\nutilization:\n\n{}", same("98.7 %")),
            format!("\nmean queueing delay:\n\n{}", same("4.3 ms")),
            format!("\nretransmissions:\n\n{}", same("0.13 %")),
            format!(
                "\nlowest Jain's index per bottleneck.buffer.bdp, over every flows[1].rtt_ms \
                 (mean; worst repetition in brackets):\n\n{lowest}\
                 | 0.1 | 0.900 (0.750) | - |\n\
                 | 1 | 0.950 (0.900) | 0.600 |\n"
            ),
            format!(
                "\nlowest Jain's index over the points with bottleneck.buffer.bdp at least \
                 the row's value (mean; worst repetition in brackets):\n\n{lowest}\
                 | >= 0.1 | 0.900 (0.750) | - |\n\
                 | >= 1 | 0.950 (0.900) | 0.600 |\n"
            ),
        ]
        .concat();
        assert_eq!(t, expect);
    }

    /// A 1-D sweep compared: a row per x, no per-x lowest table (each x
    /// is one point), the lowest over x at least each value.
    #[test]
    fn compare_of_a_one_d_sweep_has_a_row_per_x() {
        let sweep: Sweep =
            toml::from_str("x = { param = \"bottleneck.buffer.bdp\", values = [1, 5] }").unwrap();
        let points = [
            point("qfair", 1.0, None, 0.99, 0.98),
            point("qfair", 5.0, None, 0.97, 0.95),
        ];
        let t = compare_tables(&sweep, &["qfair".into()], &points);
        let head = "| bottleneck.buffer.bdp | qfair |\n|---|---|\n";
        assert!(
            t.starts_with(&format!(
                "\nJain's index (mean; worst of the repetitions in brackets):\n\n{head}\
             | 1 | 0.990 (0.980) |\n| 5 | 0.970 (0.950) |\n\nutilization:"
            )),
            "{t}"
        );
        assert!(!t.contains("per bottleneck.buffer.bdp"), "{t}");
        assert!(
            t.ends_with(&format!(
                "the row's value (mean; worst repetition in brackets):\n\n{head}\
             | >= 1 | 0.970 (0.950) |\n| >= 5 | 0.970 (0.950) |\n"
            )),
            "{t}"
        );
    }
}
