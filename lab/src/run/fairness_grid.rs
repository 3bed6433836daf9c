//! The two-flow fairness grid of issue 14 (`cargo xtask bench fairness-grid`):
//! a 20 ms flow against a 2 / 10 / 50 / 200 ms flow, both on the same CCA,
//! at 0.1-10 BDP (of 20 ms) of drop-tail buffer, every CCA of the list run
//! back to back at each point, printed as side-by-side tables (Jain,
//! utilization, queueing delay, retransmissions) with ratios against qfair.
//!
//! Built on the lab's public API only: each point is an ordinary
//! [`Scenario`] (parsed and validated like a scenario file), varied with
//! [`Scenario::with_param`] and run with [`run::run`]. The CCAs alternate at each
//! point, rather than the sweep's one-CCA-after-another, so slow drift of the
//! shared host hits every CCA alike.

use std::fmt::Write as _;

use anyhow::{bail, Context, Result};

use crate::results::gridtable::{markdown, METRICS};
use crate::results::Worst;
use crate::run::{self, RunOptions, Summary};
use crate::scenario::Scenario;

/// The reference flow's RTT; buffers are in BDP at this RTT.
pub const REFERENCE_RTT_MS: f64 = 20.0;
/// The second flow's RTTs (the grid's rows).
pub const OTHER_RTTS_MS: [f64; 4] = [2.0, 10.0, 50.0, 200.0];
/// Buffers in BDP of the reference RTT (the grid's columns).
pub const BUFFERS_BDP: [f64; 6] = [0.1, 0.3, 0.5, 1.0, 5.0, 10.0];
/// Seconds per point and seconds left out at its start (issue 14: >= 60 s,
/// first 20 s out).
pub const DURATION_S: f64 = 60.0;
pub const WARMUP_S: f64 = 20.0;

/// The development subset: every RTT and every buffer depth at least once,
/// including the shallowest point with the shortest flow (3 packets at
/// 20 Mbit/s, where packet granularity decides).
pub const QUICK: [(f64, f64); 6] = [
    (2.0, 0.1),
    (200.0, 0.3),
    (10.0, 0.5),
    (50.0, 1.0),
    (200.0, 5.0),
    (10.0, 10.0),
];

/// One grid point: the second flow's RTT and the buffer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GridPoint {
    pub other_rtt_ms: f64,
    pub buffer_bdp: f64,
}

impl GridPoint {
    /// "20 vs 200 ms, 0.3 BDP".
    pub fn label(&self) -> String {
        format!(
            "{REFERENCE_RTT_MS} vs {} ms, {} BDP",
            self.other_rtt_ms, self.buffer_bdp
        )
    }
}

/// What to run, from the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct GridArgs {
    pub ccas: Vec<String>,
    pub rate_mbit: f64,
    pub quick: bool,
    pub reps: u32,
    /// The scenarios' `socket_buffer_mb` (`--socket-buffer-mb`): the max of
    /// the namespaces' TCP socket buffers, MiB; `None`, the kernel's
    /// defaults (every figure before the option was measured so).
    pub socket_buffer_mb: Option<i64>,
}

pub const USAGE: &str = "usage: fairness-grid --cca LIST [--rate MBIT] [--quick] [--reps N] [--socket-buffer-mb N] [--out DIR]";

/// Parse `--cca LIST [--rate R] [--quick] [--reps N] [--socket-buffer-mb
/// N]`. Every problem is one line naming the argument; nothing runs before
/// the whole line parsed.
/// `--out` is handled by the caller and passed through in the second value.
pub fn parse_args(args: &[String]) -> Result<(GridArgs, Option<String>)> {
    let mut ccas: Option<Vec<String>> = None;
    let mut rate_mbit = 20.0;
    let mut quick = false;
    let mut reps = 1;
    let mut socket_buffer_mb = None;
    let mut out = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .with_context(|| format!("{name} needs a value ({USAGE})"))
        };
        match a.as_str() {
            "--cca" => {
                let list: Vec<String> = value("--cca")?
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .collect();
                if list.iter().any(String::is_empty) {
                    bail!("--cca: empty name in the list (e.g. --cca qfair,bbr)");
                }
                for (i, c) in list.iter().enumerate() {
                    if list[..i].contains(c) {
                        bail!("--cca: '{c}' named twice");
                    }
                }
                ccas = Some(list);
            }
            "--rate" => {
                let v = value("--rate")?;
                rate_mbit = v
                    .parse::<f64>()
                    .ok()
                    .filter(|r| r.is_finite() && *r > 0.0 && *r <= 10_000.0)
                    .with_context(|| {
                        format!("--rate: '{v}' is not a rate in Mbit/s (0 < R <= 10000)")
                    })?;
            }
            "--reps" => {
                let v = value("--reps")?;
                reps = v
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=100).contains(n))
                    .with_context(|| format!("--reps: '{v}' is not a whole number 1..=100"))?;
            }
            "--socket-buffer-mb" => {
                let v = value("--socket-buffer-mb")?;
                let max = crate::scenario::MAX_SOCKET_BUFFER_MB;
                socket_buffer_mb = Some(
                    v.parse::<i64>()
                        .ok()
                        .filter(|n| (1..=max).contains(n))
                        .with_context(|| {
                            format!(
                                "--socket-buffer-mb: '{v}' is not a whole number of MiB 1..={max}"
                            )
                        })?,
                );
            }
            "--quick" => quick = true,
            "--out" => out = Some(value("--out")?),
            other => bail!("unknown argument '{other}' ({USAGE})"),
        }
    }
    let ccas = ccas.with_context(|| format!("--cca is required ({USAGE})"))?;
    Ok((
        GridArgs {
            ccas,
            rate_mbit,
            quick,
            reps,
            socket_buffer_mb,
        },
        out,
    ))
}

/// The points to run, rows (RTT) outer, buffers inner.
pub fn points(quick: bool) -> Vec<GridPoint> {
    if quick {
        return QUICK
            .iter()
            .map(|&(other_rtt_ms, buffer_bdp)| GridPoint {
                other_rtt_ms,
                buffer_bdp,
            })
            .collect();
    }
    OTHER_RTTS_MS
        .iter()
        .flat_map(|&other_rtt_ms| {
            BUFFERS_BDP.iter().map(move |&buffer_bdp| GridPoint {
                other_rtt_ms,
                buffer_bdp,
            })
        })
        .collect()
}

/// The scenario of one point for one CCA: two flows, groups named by RTT.
/// With `socket_buffer_mb`, the scenario's key of that name (validated as
/// a file's), and the run's name says it (`-sockbuf64mb`), so its folder is
/// not the default buffers' one.
pub fn scenario(
    p: GridPoint,
    cca: &str,
    rate_mbit: f64,
    reps: u32,
    socket_buffer_mb: Option<i64>,
) -> Result<Scenario> {
    let sockbuf = socket_buffer_mb
        .map(|mb| format!("socket_buffer_mb = {mb}\n"))
        .unwrap_or_default();
    let base = Scenario::from_toml(&format!(
        r#"
name = "grid"
duration_s = {DURATION_S}
warmup_s = {WARMUP_S}
repetitions = {reps}
{sockbuf}[bottleneck]
rate_mbit = {rate_mbit}
buffer = {{ bdp = 1.0, rtt_ms = {REFERENCE_RTT_MS} }}
[[flows]]
group = "a-ref"
cca = "{cca}"
rtt_ms = {REFERENCE_RTT_MS}
[[flows]]
group = "b-other"
cca = "{cca}"
rtt_ms = {REFERENCE_RTT_MS}
"#
    ))
    .map_err(|e| anyhow::anyhow!("fairness-grid scenario: {e}"))?;
    let s = base
        .with_param("bottleneck.buffer.bdp", p.buffer_bdp)
        .map_err(|e| anyhow::anyhow!("fairness-grid scenario: {e}"))?;
    let mut s = s
        .with_param("flows[1].rtt_ms", p.other_rtt_ms)
        .map_err(|e| anyhow::anyhow!("fairness-grid scenario: {e}"))?;
    s.name = format!(
        "grid-{rate_mbit}mbit-20v{}-{}bdp",
        p.other_rtt_ms, p.buffer_bdp
    );
    s.description = format!("{}, {rate_mbit} Mbit/s", p.label());
    if let Some(mb) = socket_buffer_mb {
        s.name.push_str(&format!("-sockbuf{mb}mb"));
        s.description
            .push_str(&format!(", TCP socket buffers up to {mb} MiB"));
    }
    Ok(s)
}

/// One CCA at one point: the mean over repetitions and the worst of them
/// (the sweep's meaning of worst, [`crate::results::summary::worst_of`]).
#[derive(Debug, Clone)]
pub struct Cell {
    pub mean: Summary,
    pub worst: Worst,
}

/// The grid's results: `cells[point][cca]`, in the order of `points` and
/// `ccas`.
#[derive(Debug, Clone)]
pub struct GridResult {
    pub args: GridArgs,
    pub points: Vec<GridPoint>,
    pub cells: Vec<Vec<Cell>>,
}

/// Run every point, the CCAs back to back at each. `progress` gets one line
/// per finished run.
pub fn run(args: &GridArgs, opts: &RunOptions, progress: impl Fn(&str)) -> Result<GridResult> {
    // Register (or check) every CCA before the first run: an unknown name
    // fails here, not an hour into the grid.
    let _session = crate::net::ccas::CcaSession::ensure(&opts.bpffs, &args.ccas)?;
    let pts = points(args.quick);
    let mut cells = Vec::new();
    for p in &pts {
        let mut row = Vec::new();
        for cca in &args.ccas {
            let s = scenario(*p, cca, args.rate_mbit, args.reps, args.socket_buffer_mb)?;
            let r = run::run(&s, opts).with_context(|| format!("{cca} at {}", p.label()))?;
            let reps: Vec<Summary> = r.reps.iter().map(|rep| rep.summary.clone()).collect();
            let worst = run::worst_of(&reps)
                .with_context(|| format!("{cca} at {}: no repetitions", p.label()))?;
            progress(&format!(
                "{cca:<8} {}: {}",
                p.label(),
                run::one_line(&r.summary)
            ));
            row.push(Cell {
                mean: r.summary,
                worst,
            });
        }
        cells.push(row);
    }
    Ok(GridResult {
        args: args.clone(),
        points: pts,
        cells,
    })
}

/// The tables as Markdown: per metric ([`METRICS`], the sweep tables'
/// cells), one row per point, one column per CCA, then each other CCA's
/// value over qfair's (when qfair ran).
pub fn tables(g: &GridResult) -> String {
    let mut out = String::new();
    let qfair = g.args.ccas.iter().position(|c| c == "qfair");
    let others: Vec<usize> = (0..g.args.ccas.len())
        .filter(|i| Some(*i) != qfair)
        .collect();
    let mut head = vec!["point".to_string()];
    head.extend(g.args.ccas.iter().cloned());
    if qfair.is_some() {
        head.extend(
            others
                .iter()
                .map(|&i| format!("{} / qfair", g.args.ccas[i])),
        );
    }
    for m in &METRICS {
        let rows: Vec<Vec<String>> = g
            .points
            .iter()
            .zip(&g.cells)
            .map(|(p, row)| {
                let mut line = vec![p.label()];
                line.extend(row.iter().map(|c| (m.cell)(&c.mean, Some(&c.worst))));
                if let Some(q) = qfair {
                    let base = (m.value)(&row[q].mean);
                    line.extend(others.iter().map(|&i| ratio((m.value)(&row[i].mean), base)));
                }
                line
            })
            .collect();
        let _ = write!(out, "\n{}:\n\n{}", m.title, markdown(&head, &rows));
    }
    out
}

/// a / b to two decimals, or "-" where b is zero (e.g. no retransmissions).
fn ratio(a: f64, b: f64) -> String {
    if b.abs() < 1e-12 || !a.is_finite() || !b.is_finite() {
        "-".into()
    } else {
        format!("{:.2}", a / b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn full_grid_is_every_rtt_times_every_buffer() {
        let p = points(false);
        assert_eq!(p.len(), 24);
        for r in OTHER_RTTS_MS {
            for b in BUFFERS_BDP {
                assert!(p.contains(&GridPoint {
                    other_rtt_ms: r,
                    buffer_bdp: b
                }));
            }
        }
    }

    #[test]
    fn quick_is_six_grid_points_covering_every_rtt_and_buffer() {
        let q = points(true);
        let full = points(false);
        assert_eq!(q.len(), 6);
        assert!(q.iter().all(|p| full.contains(p)));
        for r in OTHER_RTTS_MS {
            assert!(q.iter().any(|p| p.other_rtt_ms == r), "rtt {r} missing");
        }
        for b in BUFFERS_BDP {
            assert!(q.iter().any(|p| p.buffer_bdp == b), "buffer {b} missing");
        }
    }

    #[test]
    fn every_point_is_a_valid_two_flow_scenario() {
        for p in points(false) {
            let s = scenario(p, "qfair", 20.0, 3, None).unwrap();
            s.validate().unwrap();
            let f = s.flows();
            assert_eq!(f.len(), 2);
            assert_eq!(f[0].rtt_ms, REFERENCE_RTT_MS);
            assert_eq!(f[1].rtt_ms, p.other_rtt_ms);
            assert!(f.iter().all(|f| f.cca == "qfair"));
            assert_eq!(s.bottleneck.buffer.bdp, Some(p.buffer_bdp));
            assert_eq!(s.bottleneck.buffer.rtt_ms, Some(REFERENCE_RTT_MS));
            assert_eq!(s.duration_s, DURATION_S);
            assert_eq!(s.warmup_s, WARMUP_S);
            assert_eq!(s.repetitions, 3);
            assert_eq!(s.socket_buffer_mb, None);
        }
    }

    /// `--socket-buffer-mb` reaches every point's scenario (and its plan,
    /// in bytes), and names the run apart from the default buffers' one.
    #[test]
    fn the_socket_buffer_reaches_every_point() {
        for p in points(true) {
            let s = scenario(p, "qfair", 1000.0, 1, Some(64)).unwrap();
            assert_eq!(s.socket_buffer_mb, Some(64));
            let plan = crate::scenario::plan::Plan::resolve(&s).unwrap();
            assert_eq!(plan.socket_buffer_bytes, Some(64 << 20));
            let default = scenario(p, "qfair", 1000.0, 1, None).unwrap();
            assert_eq!(s.name, format!("{}-sockbuf64mb", default.name));
            assert_ne!(
                plan.dir_name(),
                crate::scenario::plan::Plan::resolve(&default)
                    .unwrap()
                    .dir_name()
            );
        }
    }

    #[test]
    fn parses_the_documented_arguments() {
        let (a, out) = parse_args(&args("--cca qfair,bbr --rate 100 --quick --reps 3")).unwrap();
        assert_eq!(
            a,
            GridArgs {
                ccas: vec!["qfair".into(), "bbr".into()],
                rate_mbit: 100.0,
                quick: true,
                reps: 3,
                socket_buffer_mb: None,
            }
        );
        assert_eq!(out, None);
        let (a, out) = parse_args(&args("--cca cubic --out /tmp/x")).unwrap();
        assert_eq!(
            (a.rate_mbit, a.quick, a.reps, a.socket_buffer_mb),
            (20.0, false, 1, None)
        );
        assert_eq!(out.as_deref(), Some("/tmp/x"));
        for (mb, want) in [("64", 64), ("1", 1), ("1024", 1024)] {
            let (a, _) = parse_args(&args(&format!(
                "--cca qfair --socket-buffer-mb {mb} --rate 1000"
            )))
            .unwrap();
            assert_eq!((a.socket_buffer_mb, a.rate_mbit), (Some(want), 1000.0));
        }
        assert!(USAGE.contains("[--socket-buffer-mb N]"), "{USAGE}");
    }

    #[test]
    fn bad_arguments_are_one_line_naming_the_argument() {
        for (line, says) in [
            ("", "--cca is required"),
            ("--rate 20", "--cca is required"),
            ("--cca", "--cca needs a value"),
            ("--cca qfair,,bbr", "--cca: empty name"),
            ("--cca qfair,qfair", "named twice"),
            ("--cca qfair --rate 0", "--rate: '0'"),
            ("--cca qfair --rate -5", "--rate: '-5'"),
            ("--cca qfair --rate fast", "--rate: 'fast'"),
            ("--cca qfair --reps 0", "--reps: '0'"),
            ("--cca qfair --reps 1.5", "--reps: '1.5'"),
            ("--cca qfair --fast", "unknown argument '--fast'"),
            (
                "--cca qfair --socket-buffer-mb",
                "--socket-buffer-mb needs a value",
            ),
            (
                "--cca qfair --socket-buffer-mb 0",
                "--socket-buffer-mb: '0'",
            ),
            (
                "--cca qfair --socket-buffer-mb -1",
                "--socket-buffer-mb: '-1'",
            ),
            (
                "--cca qfair --socket-buffer-mb 1025",
                "--socket-buffer-mb: '1025'",
            ),
            (
                "--cca qfair --socket-buffer-mb 64.5",
                "--socket-buffer-mb: '64.5'",
            ),
            (
                "--cca qfair --socket-buffer-mb big",
                "--socket-buffer-mb: 'big'",
            ),
        ] {
            let e = format!("{:#}", parse_args(&args(line)).unwrap_err());
            assert!(e.contains(says), "{line:?}: {e}");
            assert!(!e.contains('\n'), "{line:?}: not one line: {e}");
        }
    }

    #[test]
    fn tables_show_every_cca_and_ratios_against_qfair() {
        let cell = |jain: f64, retrans: f64| Cell {
            mean: Summary {
                jain,
                retrans_ratio: retrans,
                utilization: 0.99,
                qdelay_mean_ms: 5.0,
                ..Summary::default()
            },
            worst: Worst {
                jain: jain - 0.01,
                utilization: 0.98,
                qdelay_mean_ms: 6.0,
                retrans_ratio: retrans,
                reps: 3,
            },
        };
        let g = GridResult {
            args: GridArgs {
                ccas: vec!["bbr".into(), "qfair".into()],
                rate_mbit: 20.0,
                quick: true,
                reps: 3,
                socket_buffer_mb: None,
            },
            points: points(true)[..1].to_vec(),
            cells: vec![vec![cell(0.5, 0.1), cell(1.0, 0.0)]],
        };
        let t = tables(&g);
        assert!(t.contains("| point | bbr | qfair | bbr / qfair |"), "{t}");
        assert!(
            t.contains("| 20 vs 2 ms, 0.1 BDP | 0.500 (0.490) | 1.000 (0.990) | 0.50 |"),
            "{t}"
        );
        // qfair without retransmissions: no ratio, not infinity.
        assert!(
            t.contains("| 20 vs 2 ms, 0.1 BDP | 10.00 % | 0.00 % | - |"),
            "{t}"
        );
    }
}
