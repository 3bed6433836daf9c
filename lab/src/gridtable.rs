//! Markdown tables of grid results, one metric per table: the text beside
//! issue 14's heatmaps. One cell format per metric ([`METRICS`]) and one
//! table writer ([`markdown`]), shared by `cargo xtask bench
//! fairness-grid` (rows = points, columns = CCAs; see
//! [`crate::fairness_grid::tables`]) and `lab sweep` / `lab merge`
//! ([`sweep_tables`]: per CCA, rows = y, columns = x).

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
        cell: |s, w| match w {
            Some(w) if w.reps > 1 => format!("{:.3} ({:.3})", s.jain, w.jain),
            _ => format!("{:.3}", s.jain),
        },
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
        cell: |s, _| format!("{:.2} %", s.retrans_ratio * 100.0),
    },
];

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
