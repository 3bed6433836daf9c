//! The results folder: every CSV and JSON file the lab writes.
//!
//! CSV goes through the `csv` crate, so a field holding a comma or a quote
//! (a group name, say) is quoted and reads back as written; hand-joined
//! lines would split it.

use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;

use crate::atomic::{write_atomic, write_file};
use crate::results::{RepResult, RunResult, Summary, SweepPoint};
use crate::scenario::plan::Plan;
use crate::scenario::Sweep;

/// A CSV file from a header and rows of already formatted fields.
fn write_csv<R, I>(path: &Path, header: &[String], rows: R) -> Result<()>
where
    R: IntoIterator<Item = I>,
    I: IntoIterator<Item = String>,
{
    write_atomic(path, |f| {
        let mut w = csv::Writer::from_writer(f);
        w.write_record(header)?;
        for row in rows {
            w.write_record(row)?;
        }
        w.flush()?;
        Ok(())
    })
}

fn header(cols: &[&str]) -> Vec<String> {
    cols.iter().map(|c| c.to_string()).collect()
}

/// `rep<N>/`: goodput.csv, rtt.csv, queue.csv, bpf.csv and drains.csv (if
/// the flows exported samples) and the repetition's summary.json.
pub fn write_rep(dir: &Path, r: &RepResult) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    write_csv(
        &dir.join("goodput.csv"),
        &header(&["t", "flow", "group", "cca", "goodput_bps"]),
        r.flows.iter().flat_map(|f| {
            f.goodput.iter().map(move |(t, b)| {
                vec![
                    format!("{t:.3}"),
                    f.spec.index.to_string(),
                    f.spec.group.clone(),
                    f.spec.cca.clone(),
                    format!("{b:.0}"),
                ]
            })
        }),
    )?;
    write_csv(
        &dir.join("rtt.csv"),
        &header(&["t", "flow", "srtt_ms"]),
        r.flows.iter().flat_map(|f| {
            f.rtt_ms.iter().map(move |(t, v)| {
                vec![
                    format!("{t:.3}"),
                    f.spec.index.to_string(),
                    format!("{v:.3}"),
                ]
            })
        }),
    )?;
    write_csv(
        &dir.join("queue.csv"),
        &header(&[
            "t",
            "backlog_bytes",
            "qlen_packets",
            "drops",
            "sent_bytes",
            "sent_packets",
        ]),
        r.queue.iter().map(|q| {
            let st = &q.stats;
            vec![
                format!("{:.4}", q.t),
                st.backlog_bytes.to_string(),
                st.qlen.to_string(),
                st.drops.to_string(),
                st.bytes.to_string(),
                st.packets.to_string(),
            ]
        }),
    )?;
    if !r.bpf.is_empty() {
        write_atomic(&dir.join("bpf.csv"), |f| {
            crate::results::BpfSample::write_csv(f, &r.bpf)
        })?;
        crate::results::drains::write(&dir.join("drains.csv"), &r.bpf)?;
    }
    write_file(&dir.join("summary.json"), serde_json::to_string_pretty(r)?)
}

/// Remove what an earlier run left in the run folder `dir` as a run
/// starts: its summary.json (`--resume` and `lab merge` take a folder
/// with one as finished) and every `rep<N>/` (a rerun with fewer
/// repetitions would keep the others, which `lab merge` copies and a
/// reader globbing `rep*/` would mix in).
pub fn clear_run_outputs(dir: &Path) -> Result<()> {
    let summary = dir.join("summary.json");
    match std::fs::remove_file(&summary) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("remove {}", summary.display()));
        }
        _ => {}
    }
    for e in std::fs::read_dir(dir).with_context(|| format!("read {}", dir.display()))? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        let is_rep = name
            .strip_prefix("rep")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if is_rep && e.file_type()?.is_dir() {
            std::fs::remove_dir_all(e.path())
                .with_context(|| format!("remove {}", e.path().display()))?;
        }
    }
    Ok(())
}

/// The run's scenario.toml (the plan's scenario, as run).
pub fn write_scenario(dir: &Path, plan: &Plan) -> Result<()> {
    write_file(
        &dir.join("scenario.toml"),
        toml::to_string_pretty(&plan.scenario)?,
    )
}

/// The run's summary.json.
pub fn write_run_summary(r: &RunResult) -> Result<()> {
    write_file(
        &r.dir.join("summary.json"),
        serde_json::to_string_pretty(r)?,
    )
}

/// A run's summary.json as read back: the mean and each repetition's
/// summary (the rest of the file is not read).
#[derive(Debug, Clone, Deserialize)]
pub struct StoredRun {
    pub reps: Vec<StoredRep>,
    pub summary: Summary,
}

/// One repetition in a run's summary.json.
#[derive(Debug, Clone, Deserialize)]
pub struct StoredRep {
    pub summary: Summary,
}

impl StoredRun {
    /// Each repetition's summary, in order.
    pub fn rep_summaries(&self) -> Vec<Summary> {
        self.reps.iter().map(|r| r.summary.clone()).collect()
    }
}

/// The summary.json of the run folder `run_dir` (written last by a run:
/// present means complete), as [`write_run_summary`] wrote it.
pub fn read_run_summary(run_dir: &Path) -> Result<StoredRun> {
    let path = run_dir.join("summary.json");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parse {}", path.display()))
}

/// One row of a repetition's goodput.csv, as [`write_rep`] writes it
/// (the other columns are not read).
#[derive(Debug, Deserialize)]
struct GoodputRow {
    t: f64,
    flow: usize,
    goodput_bps: f64,
}

/// Flow `flow`'s goodput series from a repetition's goodput.csv:
/// (interval end, bit/s), in file order.
pub fn read_goodput_of(path: &Path, flow: usize) -> Result<Vec<(f64, f64)>> {
    let mut r = csv::Reader::from_path(path).with_context(|| format!("read {}", path.display()))?;
    let mut out = Vec::new();
    for row in r.deserialize() {
        let row: GoodputRow = row.with_context(|| format!("parse {}", path.display()))?;
        if row.flow == flow {
            out.push((row.t, row.goodput_bps));
        }
    }
    Ok(out)
}

/// The columns sweep.csv appends after the group goodputs: the worst of
/// each point's repetitions (see [`crate::results::Worst`]) and how many
/// there were. Last, so readers of the older columns keep working.
pub const SWEEP_WORST_COLUMNS: [&str; 5] = [
    "jain_worst",
    "utilization_worst",
    "qdelay_mean_ms_worst",
    "retrans_ratio_worst",
    "reps",
];

/// A sweep folder's table of its points (one row each).
pub const SWEEP_CSV: &str = "sweep.csv";
/// A sweep folder's points, as [`SweepPoint`]s in grid order.
pub const SWEEP_JSON: &str = "sweep.json";

/// sweep.csv (one row per point: its coordinates, the headline metrics,
/// each group's goodput, then the worst of the repetitions) and sweep.json.
pub fn write_sweep(dir: &Path, sweep: &Sweep, points: &[SweepPoint]) -> Result<()> {
    let groups: Vec<String> = points
        .first()
        .map(|p| p.summary.groups())
        .unwrap_or_default();
    let mut head = vec![
        "cca".to_string(),
        sweep.x.param.clone(),
        sweep
            .y
            .as_ref()
            .map(|a| a.param.clone())
            .unwrap_or_else(|| "-".into()),
    ];
    head.extend(header(&[
        "jain",
        "stdr",
        "group_ratio",
        "utilization",
        "qdelay_mean_ms",
        "rtt_p95_ms",
        "retrans_ratio",
    ]));
    head.extend(groups.iter().map(|g| format!("goodput_mbit_{g}")));
    head.extend(header(&SWEEP_WORST_COLUMNS));
    let rows = points.iter().map(|p| {
        let s = &p.summary;
        let mut row = vec![
            p.cca.clone(),
            p.x.to_string(),
            p.y.map(|v| v.to_string()).unwrap_or_default(),
            format!("{:.4}", s.jain),
            format!("{:.4}", s.stdr),
            format!("{:.4}", s.group_ratio),
            format!("{:.4}", s.utilization),
            format!("{:.3}", s.qdelay_mean_ms),
            format!("{:.3}", s.rtt_p95_ms),
            format!("{:.5}", s.retrans_ratio),
        ];
        row.extend(groups.iter().map(|g| {
            format!(
                "{:.3}",
                s.goodput_mbit_by_group.get(g).copied().unwrap_or(0.0)
            )
        }));
        // Empty fields for a point without them (not in a folder this
        // build writes: a sweep computes them, a merge fills them).
        row.extend(match &p.worst {
            Some(w) => vec![
                format!("{:.4}", w.jain),
                format!("{:.4}", w.utilization),
                format!("{:.3}", w.qdelay_mean_ms),
                format!("{:.5}", w.retrans_ratio),
                w.reps.to_string(),
            ],
            None => vec![String::new(); SWEEP_WORST_COLUMNS.len()],
        });
        row
    });
    write_csv(&dir.join(SWEEP_CSV), &head, rows)?;
    write_file(&dir.join(SWEEP_JSON), serde_json::to_string_pretty(points)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{FlowResult, Summary};
    use crate::scenario::FlowSpec;

    fn flow(group: &str) -> FlowResult {
        FlowResult {
            spec: FlowSpec {
                index: 0,
                group: group.into(),
                cca: "cubic".into(),
                rtt_ms: 20.0,
                loss_pct: 0.0,
                start_s: 0.0,
                stop_s: 10.0,
                jitter_ms: 0.0,
                ack_batch_ms: 0.0,
                rtt_change: None,
            },
            goodput: vec![(1.0, 5e6), (2.0, 6e6)],
            rtt_ms: vec![(1.0, 21.5)],
            retransmits: 0,
            retransmits_by_interval: vec![],
            bytes_received: 0,
            mean_goodput: 5.5e6,
            congestion: "cubic".into(),
        }
    }

    fn read(path: &Path) -> Vec<Vec<String>> {
        csv::Reader::from_path(path)
            .unwrap()
            .records()
            .map(|r| r.unwrap().iter().map(String::from).collect())
            .collect()
    }

    /// A run folder reused by a run with fewer repetitions: the earlier
    /// run's summary and every rep<N>/ go, anything else stays.
    #[test]
    fn a_run_start_clears_the_earlier_runs_repetitions() {
        let tmp = crate::testkit::temp_folder("files-clear");
        let dir = tmp.path();
        for n in 0..3 {
            std::fs::create_dir_all(dir.join(format!("rep{n}"))).unwrap();
            std::fs::write(dir.join(format!("rep{n}/queue.csv")), "t\n").unwrap();
        }
        std::fs::create_dir_all(dir.join("report")).unwrap();
        std::fs::write(dir.join("summary.json"), "{}").unwrap();
        std::fs::write(dir.join("scenario.toml"), "").unwrap();
        clear_run_outputs(dir).unwrap();
        let mut left: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["report", "scenario.toml"]);
        // Nothing to clear is no error (a first run).
        clear_run_outputs(dir).unwrap();
    }

    #[test]
    fn a_group_name_with_a_comma_round_trips() {
        let tmp = crate::testkit::temp_folder("files");
        let dir = tmp.path();
        let group = "mice, \"short\" ones";
        let rep = RepResult {
            flows: vec![flow(group)],
            queue: vec![],
            bpf: vec![],
            random_loss_at_edges: None,
            summary: Summary::default(),
            aqm: vec![],
        };
        write_rep(dir, &rep).unwrap();
        let rows = read(&dir.join("goodput.csv"));
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0], ["1.000", "0", group, "cubic", "5000000"]);

        let mut summary = Summary::default();
        summary.goodput_mbit_by_group.insert(group.into(), 5.5);
        let sweep: Sweep =
            toml::from_str("x = { param = \"bottleneck.buffer.bdp\", values = [1.0] }").unwrap();
        let point = SweepPoint {
            cca: "cubic".into(),
            x: 1.0,
            y: None,
            summary,
            worst: None,
        };
        write_sweep(dir, &sweep, &[point]).unwrap();
        let mut r = csv::Reader::from_path(dir.join("sweep.csv")).unwrap();
        let head: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
        assert_eq!(head.len(), 16, "{head:?}");
        assert_eq!(head[10], format!("goodput_mbit_{group}"));
        let row = r.records().next().unwrap().unwrap();
        assert_eq!(row.len(), 16);
        assert_eq!(&row[10], "5.500");
    }

    /// The header as older readers know it, then the worst columns; a row
    /// gives each worst figure to the precision of its mean column.
    #[test]
    fn sweep_csv_appends_the_worst_of_the_repetitions() {
        use crate::results::Worst;
        let tmp = crate::testkit::temp_folder("files-worst");
        let dir = tmp.path();
        let mut summary = Summary {
            jain: 0.95,
            utilization: 0.975,
            qdelay_mean_ms: 4.5,
            retrans_ratio: 0.001,
            ..Summary::default()
        };
        summary.goodput_mbit_by_group = [("20ms".to_string(), 9.5), ("other".to_string(), 9.0)]
            .into_iter()
            .collect();
        let sweep: Sweep = toml::from_str(
            "x = { param = \"bottleneck.buffer.bdp\", values = [0.5] }\n\
             y = { param = \"flows[1].rtt_ms\", values = [50] }",
        )
        .unwrap();
        let point = SweepPoint {
            cca: "qfair".into(),
            x: 0.5,
            y: Some(50.0),
            summary,
            worst: Some(Worst {
                jain: 0.9123456,
                utilization: 0.96,
                qdelay_mean_ms: 7.25,
                retrans_ratio: 0.00234,
                reps: 3,
            }),
        };
        write_sweep(dir, &sweep, std::slice::from_ref(&point)).unwrap();
        let text = std::fs::read_to_string(dir.join("sweep.csv")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "cca,bottleneck.buffer.bdp,flows[1].rtt_ms,jain,stdr,group_ratio,utilization,\
                 qdelay_mean_ms,rtt_p95_ms,retrans_ratio,goodput_mbit_20ms,goodput_mbit_other,\
                 jain_worst,utilization_worst,qdelay_mean_ms_worst,retrans_ratio_worst,reps",
                "qfair,0.5,50,0.9500,0.0000,0.0000,0.9750,4.500,0.000,0.00100,9.500,9.000,\
                 0.9123,0.9600,7.250,0.00234,3",
            ]
        );
        // sweep.json carries the same point, worst included.
        let json = std::fs::read_to_string(dir.join("sweep.json")).unwrap();
        let back: Vec<SweepPoint> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, [point]);
    }

    /// A sweep.json of a build before the worst figures (commit 54cb120)
    /// parses, its points without them.
    #[test]
    fn an_older_sweep_json_without_worst_parses() {
        let summary = serde_json::to_value(Summary {
            jain: 0.8,
            ..Summary::default()
        })
        .unwrap();
        let old = serde_json::json!([{ "cca": "bbr", "x": 1.0, "y": 10.0, "summary": summary }]);
        let points: Vec<SweepPoint> = serde_json::from_value(old).unwrap();
        assert_eq!(points.len(), 1);
        assert_eq!(points[0].summary.jain, 0.8);
        assert_eq!(points[0].worst, None);
    }
}
